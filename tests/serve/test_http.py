"""`sculpt serve` against bad HTTP: garbage, oversized headers (431), a
slowloris request (408), bad JSON and wrong field types (400), an oversized
body (413), unknown paths (404), wrong methods (405), pipelining, random
bytes, the connection cap (503), HTTP/1.0 keep-alive and streams, a client
that pipelines without reading -- and the server keeps serving after each."""
import json
import os
import random
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import (Server, body_of, check, finish, planted_model,  # noqa: E402
                      status_of, wait_until)

tmp, model = planted_model()
srv = Server(model, "--header-timeout", "1", "--idle-timeout", "30", "--max-body", "65536",
             "--max-connections", "16")


def still_serving(what):
    st, _, res = srv.complete({"prompt": "wx", "max_tokens": 4})
    check(srv.alive() and st == 200 and res["choices"][0]["text"] == "yz",
          f"serving after {what}: {st} {res}")


def error_json(raw, status, what):
    check(status_of(raw) == status, f"{what}: status {status_of(raw)} (want {status}): {raw[:200]!r}")
    try:
        e = json.loads(body_of(raw))["error"]
        check(isinstance(e["message"], str) and e["message"] and isinstance(e["type"], str),
              f"{what}: error body")
    except (ValueError, KeyError, TypeError):
        check(False, f"{what}: JSON error body: {body_of(raw)[:200]!r}")


# Garbage and broken request lines: 400, then the connection closes.
raw = srv.raw(b"GET /health HTTP/9.9\r\n\r\n", wait=3)
error_json(raw, 505, "HTTP/9.9")
# Versions other than 1.0 and 1.1 are refused as soon as the request line
# ends: an HTTP/0.9 line (no version) used to wait for headers until the
# request timeout (a 408), and HTTP/1.5 was served. The client sends no more
# and keeps its side open, so a 400 or 505 (not a 408) is the server's own.
for line, status in ((b"GET /health\r\n", 400), (b"GET /health HTTP/1.5\r\n", 505),
                     (b"GET /health HTTP/1.5\r\nHost: x\r\n\r\n", 505)):
    raw = srv.raw(line, wait=5)
    error_json(raw, status, repr(line))
# Duplicate Content-Length headers, conflicting or not: 400 at once.
for lengths in ((b"2", b"5"), (b"2", b"2")):
    raw = srv.raw(b"POST /v1/fim/completions HTTP/1.1\r\nContent-Length: %s\r\n"
                  b"Content-Length: %s\r\n\r\n{}" % lengths, wait=5)
    error_json(raw, 400, f"Content-Length {lengths}")
for junk in (b"HELLO\r\n\r\n", b"\x00\x01\x02\xff\r\n\r\n",
             b"POST /v1/fim/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
             b"POST /v1/fim/completions HTTP/1.1\r\nContent-Length: 5\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"):
    raw = srv.raw(junk, wait=3)
    error_json(raw, 400, repr(junk[:30]))
    check(b"connection: close" in raw.lower(), f"{junk[:20]!r}: closes")
still_serving("garbage")

# Headers over 16 KiB: 431.
raw = srv.raw(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
error_json(raw, 431, "huge header")
raw = srv.raw(b"GET /" + b"p" * 17000 + b" HTTP/1.1\r\n\r\n")
error_json(raw, 431, "huge URL")
still_serving("huge headers")

# Slowloris: a request not complete within --header-timeout (1 s) gets 408.
t0 = time.time()
raw = srv.raw(b"POST /v1/fim/completions HTTP/1.1\r\nHost: x\r\nContent-Len", wait=5)
error_json(raw, 408, "slowloris")
check(0.8 < time.time() - t0 < 4, f"408 after about a second ({time.time() - t0:.1f} s)")
raw = srv.raw(b"POST /v1/fim/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"pro", wait=5)
error_json(raw, 408, "slow body")
still_serving("slowloris")

# Bodies: too large (413) by Content-Length and by chunks; bad JSON and
# wrong types (400); unknown paths (404) and methods (405), all JSON.
raw = srv.raw(b"POST /v1/fim/completions HTTP/1.1\r\nContent-Length: 5000000\r\n\r\n{", wait=3)
error_json(raw, 413, "Content-Length too large")
chunks = b"".join(b"8000\r\n" + b" " * 0x8000 + b"\r\n" for _ in range(4))
raw = srv.raw(b"POST /v1/fim/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks,
              wait=3)
error_json(raw, 413, "chunked body too large")
bad_bodies = ["{", "", "[]", "null", '"x"', '{"suffix": "a"}', '{"prompt": 5}',
              '{"prompt": "a", "suffix": 3}', '{"prompt": "a", "max_tokens": "8"}',
              '{"prompt": "a", "max_tokens": 0}', '{"prompt": "a", "max_tokens": 1.5}',
              '{"prompt": "a", "temperature": -1}', '{"prompt": "a", "temperature": "hot"}',
              '{"prompt": "a", "stream": "yes"}', '{"prompt": "a", "stop": 5}',
              json.dumps({"prompt": "a", "stop": ["s%d" % i for i in range(17)]}),
              '{"prompt": "a", "stop": [""]}', '{"prompt": "a", "stream_drafts": 1}',
              '{"prompt": "a", "n": 2}', '{"prompt": "a", "top_p": 2}', '{"prompt": "a", "seed": "s"}',
              '{"prompt": "a", "prompt": "b"}', '{"prompt": ["a", "b"]}',
              "\xff\xfe", '{"prompt": "a"} trailing']
for b in bad_bodies:
    st, hd, data = srv.request("POST", "/v1/fim/completions", b.encode("latin-1"))
    try:
        e = json.loads(data)["error"]
        ok = e["type"] == "invalid_request_error" and e["message"]
    except (ValueError, KeyError, TypeError):
        ok = False
    check(st == 400 and ok, f"bad body {b!r}: {st} {data[:120]!r}")
# Text as the LSP reads it (issue 38): NUL is a character of the prompt,
# not "not allowed without JSON_ALLOW_NUL"; a lone UTF-16 surrogate (as
# JSON.stringify writes it) is U+FFFD. Both are answered.
for b, what in (('{"prompt": "a\\u0000bc", "max_tokens": 4}', "a NUL in the prompt"),
                ('{"prompt": "\\ud800abc", "max_tokens": 4}', "a lone surrogate in the prompt")):
    st, hd, data = srv.request("POST", "/v1/fim/completions", b.encode())
    check(st == 200 and json.loads(data)["choices"][0]["text"] == "defg",
          f"{what} is text: {st} {data[:160]!r}")
# A chunk size past 2^64 is named as what it is (http_parser reports it as
# an invalid content-length header, which the request never sent).
raw = srv.raw(b"POST /v1/fim/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
              b"1" * 20 + b"\r\n", wait=3)
error_json(raw, 400, "chunk size overflow")
check(b"chunk size" in body_of(raw) and b"content-length" not in body_of(raw).lower(),
      f"the chunk size is named: {body_of(raw)!r}")
st, _, data = srv.request("GET", "/nope")
check(st == 404 and json.loads(data)["error"]["message"], f"404: {st}")
st, hd, data = srv.request("GET", "/v1/fim/completions")
check(st == 405 and "POST" in hd.get("allow", "") and json.loads(data)["error"], f"405: {st}")
st, hd, data = srv.request("POST", "/health", "{}")
check(st == 405 and json.loads(data)["error"], f"POST /health: {st}")
st, _, _ = srv.request("GET", "/health?verbose=1")
check(st == 200, "a query string is ignored")
still_serving("bad bodies")

# Pipelining: two requests in one write are answered in order.
body = json.dumps({"prompt": "uvw", "max_tokens": 8}).encode()
one = (b"POST /v1/fim/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
       str(len(body)).encode() + b"\r\n\r\n" + body)
raw = srv.raw(one + b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", wait=10)
check(raw.count(b"HTTP/1.1 200 OK") == 2 and raw.index(b'"xyz"') < raw.index(b'"status"'),
      f"pipelined: {raw[:400]!r}")
# HTTP/1.0 without keep-alive closes after the answer.
raw = srv.raw(b"GET /health HTTP/1.0\r\n\r\n", wait=5)
check(status_of(raw) == 200 and b"connection: close" in raw.lower(), "HTTP/1.0")
# A request followed by the client's half-close is still answered.
raw = srv.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", wait=5, shut=True)
check(status_of(raw) == 200, f"half-close after a request: {raw[:80]!r}")


def responses(raw):
    """Splits raw bytes into (status, body) per final response (Content-Length
    framed; 1xx interim answers skipped); whatever does not parse as a whole
    response is left over."""
    out = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        st = status_of(head)
        if st is not None and 100 <= st < 200 and sep:
            raw = rest  # an interim answer (RFC 9110 15.2): the final one follows
            continue
        m = re.search(rb"\r\ncontent-length: *(\d+)", head.lower())
        if not sep or st is None or not m or len(rest) < int(m.group(1)):
            break
        n = int(m.group(1))
        out.append((st, rest[:n]))
        raw = rest[n:]
    return out, raw


def half_close(data, what):
    """Sends data, then shuts down the write side; (responses, leftover
    bytes, whether the server closed) -- the server must close by itself."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    # Corked, the data waits for the shutdown and goes out with the FIN in
    # one segment, so the server reads the requests and the EOF together
    # (the case that lost answers); uncorked, it could answer before the
    # FIN arrived, and the test would pass by luck.
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    got, closed = b"", False
    end = time.time() + 5
    try:
        while time.time() < end:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    rs, left = responses(got)
    check(closed, f"{what}: the server closes after answering")
    check(left == b"", f"{what}: nothing but whole responses: {left[:200]!r}")
    return rs


# Pipelined requests, then the client's half-close: every complete request is
# answered, in order, then the connection closes (RFC 9112 section 9.3).
# The second request differs from the first (405 vs 200, a different body),
# so that the order shows.
GET_HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
POST_HEALTH = b"POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
rs = half_close(GET_HEALTH + POST_HEALTH, "two pipelined, half-close")
check([st for st, _ in rs] == [200, 405], f"two pipelined, half-close: {rs}")
check(len(rs) == 2 and b'"status":"ok"' in rs[0][1] and b'"error"' in rs[1][1],
      f"two pipelined, half-close: bodies {rs}")
rs = half_close(GET_HEALTH + POST_HEALTH + GET_HEALTH + b"GET /nope HTTP/1.1\r\n\r\n",
                "four pipelined, half-close")
check([st for st, _ in rs] == [200, 405, 200, 404], f"four pipelined, half-close: {rs}")
# A truncated third request (the client closed inside it) is not answered,
# and does not cost the two before it theirs.
for cut in (b"GET /heal", b"GET /health HTTP/1.1\r\nHost: x\r\n",
            b"POST /v1/fim/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"pro"):
    rs = half_close(GET_HEALTH + POST_HEALTH + cut, f"truncated {cut[:24]!r}")
    check([st for st, _ in rs] == [200, 405], f"truncated {cut[:24]!r}: {rs}")
# A whole completion pipelined behind them, then the half-close: the client
# still reads, so the completion is answered too (issue 22: it used to be
# dropped as a 499), after the answers before it.
BODY = b'{"prompt": "abc", "max_tokens": 4}'
COMPLETION = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY
rs = half_close(GET_HEALTH + POST_HEALTH + COMPLETION, "a completion before the half-close")
check([st for st, _ in rs] == [200, 405, 200] and
      json.loads(rs[2][1])["choices"][0]["text"] == "defg",
      f"a completion before the half-close: {rs}")
# The case: one completion, then shutdown(SHUT_WR).
rs = half_close(COMPLETION, "a completion, then the half-close")
check([st for st, _ in rs] == [200] and json.loads(rs[0][1])["choices"][0]["text"] == "defg",
      f"a completion, then the half-close: {rs}")
h = srv.health()
check(h and h["queue_depth"] == 0 and h["active"] == 0, f"nothing left held: {h}")
# Many: more answers than the pipeline backlog lets out at once (64 KiB);
# all come, in order, once the client reads them.
rs = half_close((GET_HEALTH + POST_HEALTH) * 300, "600 pipelined, half-close")
check([st for st, _ in rs] == [200, 405] * 300,
      f"600 pipelined, half-close: {len(rs)} answers {[st for st, _ in rs][:8]}")

# HEAD gets the head of the answer (405 or 404 here) and no body: the
# answer to a request pipelined after it must come right after that head.
for path in (b"/health", b"/v1/fim/completions", b"/nope"):
    raw = srv.raw(b"HEAD " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", wait=5)
    head, _, rest = raw.partition(b"\r\n\r\n")
    check(status_of(head) in (404, 405) and rest.startswith(b"HTTP/1.1 200 OK"),
          f"HEAD {path!r} then GET: {raw[:300]!r}")
# A bad request after a HEAD still gets its error body.
raw = srv.raw(b"HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\nBAD\r\n\r\n", wait=5)
second = raw[raw.find(b"\r\n\r\n") + 4:]
error_json(second, 400, "a bad request after HEAD")

# HTTP/1.0 keep-alive is confirmed with "Connection: keep-alive" (a 1.0
# client closes otherwise), and a second request on it is answered.
s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
s.sendall(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
got = b""
while b"}" not in got:
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
check(status_of(got) == 200 and b"connection: keep-alive" in got.lower(),
      f"HTTP/1.0 keep-alive confirmed: {got[:200]!r}")
s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
got = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
except socket.timeout:
    pass
s.close()
check(status_of(got) == 200 and b"connection: close" in got.lower(),
      f"a second HTTP/1.0 request on it: {got[:200]!r}")
# A stream to an HTTP/1.0 client is not chunked (RFC 9112 7.1): the events
# as they are, ending with [DONE] and the connection.
sbody = json.dumps({"prompt": "uvw", "max_tokens": 8, "stream": True}).encode()
raw = srv.raw(b"POST /v1/fim/completions HTTP/1.0\r\nContent-Length: " +
              str(len(sbody)).encode() + b"\r\n\r\n" + sbody, wait=10)
head, _, sse = raw.partition(b"\r\n\r\n")
check(status_of(raw) == 200 and b"transfer-encoding" not in head.lower() and
      b"connection: close" in head.lower(), f"HTTP/1.0 stream head: {head!r}")
check(sse.startswith(b"data: {") and sse.endswith(b"data: [DONE]\n\n") and
      all(e.startswith(b"data: ") for e in sse.split(b"\n\n") if e),
      f"HTTP/1.0 stream body: {sse[-200:]!r}")

# Random bytes, and random cuts of a valid request: never a crash.
rng = random.Random(1234)
valid = one
for i in range(60):
    if i % 2:
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600)))
    else:
        blob = bytearray(valid)
        for _ in range(rng.randrange(1, 6)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
        blob = bytes(blob[:rng.randrange(1, len(blob) + 1)])
    srv.raw(blob, wait=0.2)
check(srv.alive(), "alive after random bytes")
still_serving("random bytes")

# The connection cap: beyond --max-connections, /health still answers (on a
# reserved connection, which then closes) and anything else is a 503 and a
# close (tests/serve/test_connections.py has the rest).
check(wait_until(lambda: srv.metrics().get("sculpt_connections", 99) <= 1, timeout=15),
      "earlier connections are gone")
time.sleep(0.5)  # the last /metrics connection itself closes after the server reads our FIN
held = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(16)]
raw = srv.raw(b"GET /health HTTP/1.1\r\n\r\n", wait=3)
check(status_of(raw) == 200 and b"connection: close" in raw.lower(), f"over the cap: {raw[:60]!r}")
raw = srv.raw(b"GET /nope HTTP/1.1\r\n\r\n", wait=3)
check(status_of(raw) == 503 and b"retry-after: 1" in raw.lower(), f"over the cap: {raw[:60]!r}")
for s in held:
    s.close()
check(wait_until(lambda: srv.health() is not None, timeout=5), "serving again after the cap")
still_serving("the cap")
m = srv.metrics()
for code in ("400", "404", "405", "408", "413", "431", "503", "505"):
    check(m.get(f'sculpt_http_requests_total{{code="{code}"}}', 0) >= 1, f"{code} counted")

# Expect: 100-continue: the interim answer comes at once, before the body
# (curl waits a second for it before sending a large body).
body = json.dumps({"prompt": "wx", "max_tokens": 4}).encode()
s = socket.create_connection(("127.0.0.1", srv.port))
s.settimeout(3)
s.sendall(b"POST /v1/fim/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
t0 = time.monotonic()
try:
    first = s.recv(64)
except socket.timeout:
    first = b""
check(first == b"HTTP/1.1 100 Continue\r\n\r\n" and time.monotonic() - t0 < 1.0,
      f"100 Continue before the body: {first!r}")
s.sendall(body)
got = b""
while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
check(status_of(got) == 200 and json.loads(body_of(got))["choices"][0]["text"] == "yz",
      f"then the answer: {got[:200]!r}")
s.close()
check(srv.stop() == 0, "SIGTERM: exit 0")

# A client that pipelines without reading: the server stops reading once
# some answers wait (TCP pushes back) instead of buffering them without
# bound, and closes the connection after --idle-timeout, even though the
# last request asked for a close that is never reached.
srv = Server(model, "--idle-timeout", "1")

flood = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 2000
total = 8 << 20
s = socket.create_connection(("127.0.0.1", srv.port))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.settimeout(3)
sent = 0
try:
    while sent < total:
        s.sendall(flood)
        sent += len(flood)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
except (socket.timeout, ConnectionResetError, BrokenPipeError):
    pass  # blocked, or already closed for not reading
# (Before, it read on and buffered every answer: 8 MiB of requests made
# about 50 MiB of unsent answers.)
check(sent < total, f"the server pushes back on an unread pipeline ({sent} bytes taken)")
check(wait_until(lambda: srv.metrics().get("sculpt_connections", 99) <= 1, timeout=10),
      "a client that reads none of its answers is closed after --idle-timeout")
s.close()
check(srv.alive() and srv.health() is not None, "serving after the flood")
check(srv.stop() == 0, "SIGTERM: exit 0 after the flood")
finish()

"""`sculpt serve` with request bodies near max_body (4 MiB): the loop keeps
serving while one is read and parsed.

jansson decodes about 75 MB/s, and a body is copied into fresh pages as it
arrives, so a 3.7 MB body held the loop (every other connection's answers,
/health included) 110-140 ms of CPU in one iteration when it was read to
the end at once and parsed on the loop. Now a connection is read in slices
and a long body is parsed on the intake thread (net/serve_intake.c).

What is asserted: every answer is the right one, in order (a long body
with a short request pipelined behind it; a long body that is not JSON; a
long /infill; a client that leaves while its body is parsed; a shutdown
with a parse in flight), and the loop's longest iteration, which the
server measures as its thread's CPU time and shows in /metrics
(sculpt_loop_iteration_cpu_seconds_max), stays under 50 ms. CPU time, unlike
a wall clock, is not inflated when the shared machine deschedules the loop,
so the bound means what it says under CI load. A /health probe's round
trips beside the long bodies are printed as the wall-clock view."""
import json
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import (Server, body_of, check, finish, planted_model,  # noqa: E402
                      recv_all, status_of)

LOOP_LIMIT_S = 0.050
tmp, model = planted_model()
srv = Server(model)


def filler(n_bytes):
    """Text that is costly to decode: escapes, non-ASCII, quotes, newlines."""
    line = 'x = foo("\\u00e9\\n", 1234)\t# ' + "\u00e9\u4e2d" * 8 + ' "q"\n'
    return line * (n_bytes // len(line.encode()))


def post(path, body, last=True):
    """A request; the last one on its connection asks to close after it."""
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (path.encode(), len(body),
                                               b"Connection: close\r\n" if last else b"")) + body


def responses(raw):
    """The (status, body bytes) of each response in raw, in order."""
    out = []
    while raw:
        head_end = raw.find(b"\r\n\r\n")
        if head_end < 0:
            break
        head = raw[:head_end].decode("latin-1")
        n = 0
        for h in head.split("\r\n")[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                n = int(v)
        out.append((status_of(raw), raw[head_end + 4:head_end + 4 + n]))
        raw = raw[head_end + 4 + n:]
    return out


probe_ms = []
probing = True


def probe():
    c = srv.conn(timeout=30)
    while probing:
        t = time.perf_counter()
        c.request("GET", "/health")
        c.getresponse().read()
        probe_ms.append((time.perf_counter() - t) * 1e3)
        time.sleep(0.002)
    c.close()


prober = threading.Thread(target=probe)
prober.start()

big = filler(2_000_000)
# A long prompt ending in "abc": the planted model answers "defg".
body = json.dumps({"prompt": big + "abc", "max_tokens": 4}).encode()
check(3_000_000 < len(body) < 4 << 20, f"the body is near max_body: {len(body)}")
short = json.dumps({"prompt": "wx", "max_tokens": 4}).encode()
raw = srv.raw(post("/v1/fim/completions", body, last=False) + post("/v1/fim/completions", short),
              wait=60)
got = responses(raw)
check(len(got) == 2, f"two answers to a long body and a short one pipelined: {len(got)}")
if len(got) == 2:
    texts = [json.loads(b)["choices"][0]["text"] if s == 200 else (s, b[:200])
             for s, b in got]
    check(texts == ["defg", "yz"], f"answers in order: {texts}")

# A long body that is not JSON: 400, and it names the JSON error.
raw = srv.raw(post("/v1/fim/completions", body[:-2] + b",}"), wait=30)
check(status_of(raw) == 400 and b"not valid JSON" in body_of(raw),
      f"a long malformed body: {raw[:300]!r}")
# A long JSON body of the wrong shape: 400 naming the field.
raw = srv.raw(post("/v1/fim/completions", json.dumps({"prompt": 7, "suffix": big}).encode()),
              wait=30)
check(status_of(raw) == 400 and b"'prompt' must be a string" in body_of(raw),
      f"a long body with a bad field: {raw[:300]!r}")
# llama.cpp's /infill, long input_extra chunks.
infill = json.dumps({"input_extra": [{"filename": "a.py", "text": big}],
                     "input_prefix": "", "prompt": "abc", "input_suffix": "",
                     "n_predict": 4}).encode()
raw = srv.raw(post("/infill", infill), wait=60)
check(status_of(raw) == 200 and json.loads(body_of(raw)).get("content") == "defg",
      f"a long /infill: {raw[:300]!r}")

# Clients that leave while their body is being read or parsed.
for _ in range(4):
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(post("/v1/fim/completions", body))
    s.close()
st, _, res = srv.complete({"prompt": "wx", "max_tokens": 4})
check(srv.alive() and st == 200 and res["choices"][0]["text"] == "yz",
      f"serving after clients left mid-parse: {st} {res}")

probing = False
prober.join()
m = srv.metrics()
loop_max = m.get("sculpt_loop_iteration_cpu_seconds_max")
p = sorted(probe_ms)
print(f"loop: longest iteration {loop_max * 1e3 if loop_max is not None else None:.2f} ms "
      f"of CPU; /health beside the long bodies: {len(p)} probes, p50 {p[len(p) // 2]:.1f} ms, "
      f"p99 {p[int(len(p) * 0.99)]:.1f} ms, max {p[-1]:.1f} ms (wall)")
check(loop_max is not None and loop_max < LOOP_LIMIT_S,
      f"the loop's longest iteration {loop_max} s of CPU (limit {LOOP_LIMIT_S})")

# A shutdown with a long body in flight: a clean exit; the client gets an
# answer or the close, never a hang.
s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
s.sendall(post("/v1/fim/completions", body))
srv.proc.send_signal(signal.SIGTERM)
raw = recv_all(s)
s.close()
check(raw == b"" or status_of(raw) in (200, 503), f"the answer at shutdown: {raw[:200]!r}")
check(srv.proc.wait(timeout=30) == 0, "a clean exit with a parse in flight")
finish()

"""`sculpt serve` under connection exhaustion (issue 22): one client holding
many slow connections takes at most --max-client-connections of the pool,
other clients are still served, and /health and /metrics answer on the
reserved connections while the pool is full; everything else there is a
503. Clients are told apart by address: 127.0.0.1, .2 and .3 are three
clients on the loopback."""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import (BIN, Server, body_of, check, finish, planted_model,  # noqa: E402
                      recv_all, status_of, wait_until)

tmp, model = planted_model()
srv = Server(model, "--max-connections", "16", "--max-client-connections", "8",
             "--header-timeout", "20")
SLOW = b"POST /v1/fim/completions HTTP/1.1\r\nHost: x\r\nContent-Len"  # never finished
BODY = json.dumps({"prompt": "wx", "max_tokens": 4}).encode()
COMPLETION = (b"POST /v1/fim/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)


def connect(src):
    return socket.create_connection(("127.0.0.1", srv.port), timeout=5,
                                    source_address=(src, 0))


def ask(src, data):
    """Sends data from address src; (status, body) of the answer."""
    k = connect(src)
    try:
        k.sendall(data)
    except OSError:
        pass
    got = recv_all(k)
    k.close()
    return status_of(got), body_of(got)


def health(src):
    return ask(src, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")


try:
    connect("127.0.0.2").close()
except OSError as e:
    print(f"skip: cannot connect from 127.0.0.2 ({e})")
    sys.exit(77)

# One client opens 40 slow connections and holds them (the case:
# 260 of them kept /health at 503 for 28 of 30 s).
held = []
for _ in range(40):
    k = connect("127.0.0.1")
    k.sendall(SLOW)
    held.append(k)
check(wait_until(lambda: srv.alive(), timeout=1), "alive")
time.sleep(0.3)
# Its own health checks and metrics still answer, every time.
answers = [health("127.0.0.1")[0] for _ in range(20)]
check(answers == [200] * 20, f"/health from the busy client, 20 tries: {answers}")
st, body = ask("127.0.0.1", b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
check(st == 200 and b"sculpt_connections" in body, f"/metrics from the busy client: {st}")
# Anything else from it is refused on the reserve, with Retry-After.
st, body = ask("127.0.0.1", COMPLETION)
check(st == 503 and b"too many connections" in body, f"a completion over its cap: {st} {body!r}")
# Another client is served as usual: the busy one holds only 8 of 16.
st, body = ask("127.0.0.2", COMPLETION)
check(st == 200 and json.loads(body)["choices"][0]["text"] == "yz",
      f"another client's completion: {st} {body!r}")
m = json.loads(health("127.0.0.2")[1] or b"{}")
check(m.get("status") == "ok", f"another client's /health: {m}")
# A second client fills the rest of the pool: a third is refused a
# completion but still gets /health. (First the second client's earlier
# connections must be gone: they close after the server reads its FIN.)


def pool():
    m = srv.metrics()  # from 127.0.0.1, so on the reserve itself
    return m.get("sculpt_connections", -1) - m.get("sculpt_connections_reserved", 0)


check(wait_until(lambda: pool() == 8, timeout=5), f"the pool holds the busy client's 8: {pool()}")
held2 = []
for _ in range(8):
    k = connect("127.0.0.2")
    k.sendall(SLOW)
    held2.append(k)
check(wait_until(lambda: pool() == 16, timeout=5), f"the pool is full: {pool()}")
st, _ = ask("127.0.0.3", COMPLETION)
check(st == 503, f"a completion with the pool full: {st}")
check(health("127.0.0.3")[0] == 200, "/health with the pool full")
# The slow connections that the reserve gave up were told so (a 503), and
# the ones in the pool are still open, waiting.
refused, framed = 0, 0
for k in held:
    k.settimeout(0.2)
    try:
        data = k.recv(4096)
    except OSError:
        continue
    if data.startswith(b"HTTP/1.1 503"):
        refused += 1
        head, _, body = data.partition(b"\r\n\r\n")
        length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:")]
        try:
            framed += (length == [len(body)] and b"retry-after: 1" in head.lower() and
                       json.loads(body)["error"]["message"] == "too many connections")
        except ValueError:
            pass
check(refused >= 40 - 8 - 8 and framed == refused,
      f"slow connections past the pool and reserve refused with a whole 503: "
      f"{refused} refused, {framed} well framed")
for k in held + held2:
    k.close()
check(wait_until(lambda: health("127.0.0.1")[0] == 200 and
                 ask("127.0.0.1", COMPLETION)[0] == 200, timeout=5),
      "served in full again once they close")
m = srv.metrics()
check(m.get('sculpt_http_requests_total{code="503"}', 0) >= 2, "503s counted")
check(srv.stop() == 0, "SIGTERM: exit 0")
p = subprocess.run([BIN, "serve", "--model", model, "--max-client-connections", "0"],
                   capture_output=True, timeout=30)
check(p.returncode == 2 and b"--max-client-connections" in p.stderr,
      f"--max-client-connections 0: exit {p.returncode}")
finish()

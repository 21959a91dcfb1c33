"""Two `sculpt serve` processes behind HAProxy (issue 25), with the committed
configuration tools/haproxy/sculpt.cfg, all on loopback ports picked free:
both servers are checked up and share the load; one is killed (SIGKILL)
mid-load; every request is answered (a client may retry once after a
250 ms back-off, as a client behind a balancer should), the dead server is
taken out of rotation, and requests after that succeed at the first try. Needs Debian's haproxy
(tools/bootstrap.sh installs it); skips without it."""
import atexit
import csv
import http.client
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import (SRC, Server, check, finish, planted_model, recv_all,  # noqa: E402
                      wait_until)

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy")
                                      else None)
if not HAPROXY:
    print("skip: haproxy is not installed (apt-get install haproxy)")
    sys.exit(77)

tmp, model = planted_model()
ALPHA = "defghijklmnopqrstuvwxyz"
# Each request takes about 23 steps of 15 ms, so the kill lands mid-request.
servers = [Server(model, env={"SCULPT_SERVE_STEP_DELAY_MS": "15"}) for _ in range(2)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


lb_port = free_port()
lb_dir = tempfile.mkdtemp(prefix="sculpt-lb-")
atexit.register(shutil.rmtree, lb_dir, True)
stats = os.path.join(lb_dir, "stats.sock")
env = dict(os.environ, SCULPT_LB_BIND=f"127.0.0.1:{lb_port}", SCULPT_LB_STATS=stats,
           SCULPT_S1=f"127.0.0.1:{servers[0].port}", SCULPT_S2=f"127.0.0.1:{servers[1].port}")
lb = subprocess.Popen([HAPROXY, "-db", "-f", os.path.join(SRC, "tools", "haproxy", "sculpt.cfg")],
                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def show_stat():
    """{server name: row} from HAProxy's `show stat` (CSV, header after '# ')."""
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(stats)
        s.sendall(b"show stat\n")
        data = recv_all(s)
        s.close()
    except OSError:
        return {}
    text = data.decode().lstrip("# ")
    return {r["svname"]: r for r in csv.DictReader(io.StringIO(text))
            if r["pxname"] == "sculpt_servers"}  # the servers and BACKEND


def status(name):
    return show_stat().get(name, {}).get("status", "")


def served(name):
    return int(show_stat().get(name, {}).get("stot", "0") or 0)


check(wait_until(lambda: status("s1") == "UP" and status("s2") == "UP", timeout=10),
      f"both servers checked up: {show_stat()}")

BODY = json.dumps({"prompt": "abc", "max_tokens": 30})
lock = threading.Lock()


failures = []  # why a try failed, printed when a request is not answered


def complete():
    """One completion through HAProxy: the text, or None on any failure."""
    t0 = time.time()
    try:
        c = http.client.HTTPConnection("127.0.0.1", lb_port, timeout=20)
        c.request("POST", "/v1/fim/completions", body=BODY,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status == 200:
            return json.loads(data)["choices"][0]["text"]
        why = f"HTTP {r.status}: {data[:200]!r}"
    except (OSError, ValueError, KeyError, http.client.HTTPException) as e:
        why = f"{type(e).__name__}: {e}"
    with lock:
        failures.append(f"after {time.time() - t0:.2f} s: {why}")
    return None


results = []  # (answered, tries)
PER_CLIENT = 4  # requests each; the kill comes once a few are done, whatever the speed


def client():
    for _ in range(PER_CLIENT):
        tries, text = 1, complete()
        if text is None:
            # The client's one retry, after a short back-off as clients
            # behind a balancer do: a try in the few milliseconds after
            # the kill, before the balancer has seen the death, can meet
            # the dead server again (HAProxy answers 502 or closes).
            time.sleep(0.25)
            tries, text = 2, complete()
        with lock:
            results.append((text == ALPHA, tries))


threads = [threading.Thread(target=client) for _ in range(6)]
for t in threads:
    t.start()
check(wait_until(lambda: len(results) >= 5, timeout=60), "the load is under way")
before_kill = (served("s1"), served("s2"))
os.kill(servers[0].proc.pid, signal.SIGKILL)
killed_at = time.time()
check(wait_until(lambda: status("s1").startswith("DOWN"), timeout=5),
      f"the killed server leaves rotation: {status('s1')!r}")
down_after = time.time() - killed_at
for t in threads:
    t.join()
answered = sum(ok for ok, _ in results)
retried = sum(tries == 2 for _, tries in results)
print(f"{len(results)} requests, {answered} answered, {retried} after a retry; "
      f"served before the kill {before_kill}; s1 down after {down_after:.2f} s")
check(len(results) == 6 * PER_CLIENT and answered == len(results),
      f"every request answered: {answered} of {len(results)}; failed tries: {failures}")
check(before_kill[0] > 0 and before_kill[1] > 0, f"both servers took load: {before_kill}")
# The kill cut requests short: HAProxy sent them again (its retries and
# redispatches), or the client did.
be = show_stat().get("BACKEND", {})
rescued = int(be.get("wretr") or 0) + int(be.get("wredis") or 0) + retried
print(f"HAProxy retries {be.get('wretr')}, redispatches {be.get('wredis')}")
check(rescued > 0, f"requests in flight on the killed server were sent again: {be}")
# Out of rotation: everything now goes to s2, at the first try.
s2_before = served("s2")
firsts = [complete() for _ in range(10)]
check(firsts == [ALPHA] * 10, f"after the kill, first tries: {firsts}")
check(served("s2") >= s2_before + 10 and status("s1").startswith("DOWN"),
      f"s2 serves them, s1 stays out: {show_stat()}")
lb.terminate()
try:
    lb.wait(timeout=10)
except subprocess.TimeoutExpired:
    lb.kill()
check(servers[1].stop() == 0, "the survivor exits 0 on SIGTERM")
finish()

"""`sculpt serve` admission: with --queue 1 --batch 1 at most two completions
are held at any time (one decoding, one waiting); every other request gets
429 at once. The bound must hold while the engine thread moves a request
from the queue into the batch: SCULPT_SERVE_STEP_DELAY_MS makes that move
(tokenizing, in real use) take DELAY_MS, and a burst of requests is sent in
that window. (Before the fix the request in transit counted neither as
queued nor as live, and the burst got one request too many admitted.)"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import Server, check, finish, planted_model, wait_until  # noqa: E402

DELAY_MS = 400
N = 8  # requests in a burst
tmp, model = planted_model()
srv = Server(model, "--batch", "1", "--queue", "1",
             env={"SCULPT_SERVE_STEP_DELAY_MS": str(DELAY_MS)})
REQ = {"prompt": "a", "max_tokens": 4}
WANT = "bcde"  # the planted model writes the successors of the prompt's last letter


def burst(n, results):
    """Starts n requests on n connections at once; each thread appends
    (status, JSON body or None) to results. Returns the threads."""
    gate = threading.Barrier(n)

    def one():
        c = srv.conn(timeout=60)
        c.connect()  # connected before the gate: the requests go out together
        gate.wait()
        c.request("POST", "/v1/fim/completions", body=json.dumps(REQ),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        results.append((r.status, obj))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def text_of(res):
    try:
        return res["choices"][0]["text"]
    except (TypeError, KeyError, IndexError):
        return None


def tally(results, what):
    ok = [r for r in results if r[0] == 200]
    busy = [r for r in results if r[0] == 429]
    check(len(ok) + len(busy) == len(results), f"{what}: only 200 and 429: {results}")
    check(len(ok) == 2, f"{what}: exactly queue + batch = 2 admitted, got {len(ok)}: "
          f"{[r[0] for r in results]}")
    check(all(text_of(r[1]) == WANT for r in ok), f"{what}: the admitted ones complete: {ok}")
    check(all(r[1] and r[1]["error"]["type"] == "rate_limit_error" for r in busy),
          f"{what}: 429 bodies")


# 1. A burst while the first request is on its way from the queue into the
# batch (the engine thread sleeps DELAY_MS there).
first = []
t_first = burst(1, first)
# The first request is in transit: read and counted (queue_depth counts it
# until the engine has moved it into the batch) but not yet active. An
# answered health request alone would not prove it was even sent.
check(wait_until(lambda: (h := srv.health()) is not None and h["queue_depth"] == 1 and
                 h["active"] == 0, timeout=2.0, step=0.01),
      "the first request is on its way into the batch")
t0 = time.monotonic()
rest = []
threads = burst(N - 1, rest)
# The 429s come at once, well inside the admission window; so the burst was
# answered while the first request was still in transit or decoding.
check(wait_until(lambda: len(rest) >= N - 2, timeout=DELAY_MS / 1000 * 4),
      f"the rejections come at once ({len(rest)} answers)")
h = srv.health()
check(h and h["queue_depth"] + h["active"] <= 2, f"never more than two held: {h}")
for t in t_first + threads:
    t.join()
check(time.monotonic() - t0 > DELAY_MS / 1000, "the admitted ones waited for the slow engine")
tally(first + rest, "burst during an admission")

# 2. A burst from idle: the same bound.
check(wait_until(lambda: srv.health()["queue_depth"] + srv.health()["active"] == 0),
      "idle again")
results = []
for t in burst(N, results):
    t.join()
tally(results, "burst from idle")

check(srv.alive(), "alive")
m = srv.metrics()
check(m.get('sculpt_http_requests_total{code="429"}', 0) == 2 * (N - 2), f"429s counted: {m}")
check(m.get("sculpt_queue_depth") == 0 and m.get("sculpt_batch_active") == 0, "idle at the end")
check(srv.stop() == 0, "SIGTERM: exit 0")
finish()

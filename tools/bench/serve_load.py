#!/usr/bin/env python3
"""Loopback load driver for `sculpt serve`: N client threads (http.client,
one keep-alive connection each) post FIM completions for a fixed time at
each concurrency level and report requests/s, generated tokens/s, p50/p99
latency, and the server's forward passes per request step (how much
continuous batching shared).

    tools/bench/serve_load.py --bin build/sculpt [--model DIR] [--levels 1,2,4,8]
                              [--seconds 10] [--max-tokens 32] [--url http://H:P]
                              [--batch N[,N...]]

--batch 1,8 runs the whole set of levels against a server started with each
(the same run, for the CPU default: docs/measurements-history.md).

--record appends req/s at each level to bench/results/ (tools/bench/results.py):
with --batch 1,N[,...] each batch size's mean over its rounds against
--batch 1's in the same run, else each level alone.

Without --url it starts `sculpt serve --listen 127.0.0.1:0` itself (on the
planted byte model from tools/planted_checkpoints.py when --model is not
given). `wrk` can load the same endpoint too, with a Lua script that sets
wrk.method = "POST", wrk.body and the Content-Type header; this driver is
used instead so that the numbers include token counts from `usage`."""
import argparse
import atexit
import shutil
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROMPTS = [
    ("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"),
    ("int abc", " = 1;\n"),
    ("for i in range(10):\n    ", "\n"),
    ("const x = ", ";\nconsole.log(x);\n"),
]


def metrics(host, port):
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", "/metrics")
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    c.close()
    return out


def run_level(host, port, n, seconds, max_tokens):
    lat, toks, errors = [], [], [0]
    lock = threading.Lock()
    stop_at = time.time() + seconds

    def worker(k):
        c = http.client.HTTPConnection(host, port, timeout=600)
        i = k
        while time.time() < stop_at:
            pre, suf = PROMPTS[i % len(PROMPTS)]
            i += 1
            body = json.dumps({"prompt": pre, "suffix": suf, "max_tokens": max_tokens})
            t0 = time.perf_counter()
            try:
                c.request("POST", "/v1/fim/completions", body=body,
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                c = http.client.HTTPConnection(host, port, timeout=600)
                with lock:
                    errors[0] += 1
                continue
            dt = time.perf_counter() - t0
            with lock:
                if r.status == 200:
                    lat.append(dt)
                    toks.append(json.loads(data)["usage"]["completion_tokens"])
                else:
                    errors[0] += 1
        c.close()

    m0 = metrics(host, port)
    t0 = time.time()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    m1 = metrics(host, port)
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")

    passes = m1.get("sculpt_forward_passes_total", 0) - m0.get("sculpt_forward_passes_total", 0)
    steps = m1.get("sculpt_request_steps_total", 0) - m0.get("sculpt_request_steps_total", 0)
    return {"clients": n, "requests": len(lat), "errors": errors[0], "req_s": len(lat) / wall,
            "tok_s": sum(toks) / wall, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "passes_per_step": passes / steps if steps else float("nan")}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--model")
    ap.add_argument("--url")
    ap.add_argument("--levels", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--batch", default="8", help="serve --batch values, one server each")
    results.add_flag(ap)
    a = ap.parse_args()
    batches = [int(b) for b in a.batch.split(",")]
    if len(batches) > 1:
        rounds = {}
        for b in batches:
            print(f"== sculpt serve --batch {b}", flush=True)
            args = [sys.argv[0]] + [x for x in sys.argv[1:]]
            i = args.index("--batch")
            args[i + 1] = str(b)
            if not a.record:
                subprocess.run([sys.executable] + args, check=True)
                continue
            # The rounds come back as the child's --json line.
            if "--record-config" in args:
                j = args.index("--record-config")
                del args[j:j + 2]
            args = [x for x in args if x != "--record" and not x.startswith("--record-config=")]
            out = subprocess.run([sys.executable] + args + ["--json"], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            print(out, end="", flush=True)
            for row in json.loads(out.strip().splitlines()[-1])["levels"]:
                rounds.setdefault((b, row["clients"]), []).append(row["req_s"])
        if a.record:
            record(a, rounds)
        return
    proc = None
    model = a.model
    if a.url:
        u = urlparse(a.url)
        host, port = u.hostname, u.port or 80
    else:
        if not model:
            tmp = tempfile.mkdtemp(prefix="sculpt-serve-bench-")
            atexit.register(shutil.rmtree, tmp, True)
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "planted_checkpoints.py"),
                            tmp], check=True, capture_output=True)
            model = os.path.join(tmp, "planted-successor-shifted-bytes")
        proc = subprocess.Popen([a.bin, "serve", "--model", model, "--listen", "127.0.0.1:0",
                                 "--batch", str(batches[0])], stderr=subprocess.PIPE)
        host, port = "127.0.0.1", None
        for line in proc.stderr:
            m = re.match(rb"sculpt serve: listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        if not port:
            sys.exit("the server did not start")
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    print(f"machine: {describe()}")
    print(f"model: {model or a.url}; max_tokens {a.max_tokens}; {a.seconds:g} s per level; "
          f"serve --batch {batches[0]}")
    print(f"{'clients':>7} {'requests':>8} {'err':>4} {'req/s':>8} {'tok/s':>9} "
          f"{'p50 ms':>8} {'p99 ms':>8} {'passes/step':>11}")
    rows = []
    try:
        for n in (int(x) for x in a.levels.split(",")):
            r = run_level(host, port, n, a.seconds, a.max_tokens)
            rows.append(r)
            print(f"{r['clients']:>7} {r['requests']:>8} {r['errors']:>4} {r['req_s']:>8.2f} "
                  f"{r['tok_s']:>9.1f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
                  f"{r['passes_per_step']:>11.2f}", flush=True)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    if a.json:
        print(json.dumps({"machine": describe(), "levels": rows}))
    if a.record:
        record(a, {(batches[0], r["clients"]): [r["req_s"]] for r in rows})


def record(a, rounds):
    """req/s per (batch, clients): the mean of its rounds, against --batch
    1's at the same clients where that ran too."""
    model = a.model or (a.url and "served at " + a.url) or "planted byte-level"
    rounds = {k: [results.sig(x, 3) for x in v] for k, v in rounds.items()}
    for (b, clients), xs in sorted(rounds.items()):
        if b == 1 and any(k[0] != 1 for k in rounds):
            continue
        base = rounds.get((1, clients)) if b != 1 else None
        results.record(
            group="serve", metric=f"sculpt serve --batch {b} throughput",
            value=results.sig(sum(xs) / len(xs), 3), unit="req/s", better="higher",
            config=dict({"batch": b, "clients": clients, "max_tokens": a.max_tokens,
                         "model": model, "seconds": a.seconds}, **a.record_config),
            peer={"name": "sculpt serve --batch 1, alternated in the same run",
                  "config": {"batch": 1}, "value": results.sig(sum(base) / len(base), 3)}
            if base else None,
            rounds=xs if len(xs) > 1 else None,
            note=f"the mean of {len(xs)} rounds" + (f" (--batch 1: {base})" if base else ""))
    results.done()


if __name__ == "__main__":
    main()

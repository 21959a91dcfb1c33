#!/usr/bin/env python3
"""Benchmark (not a test): the workspace index and retrieval on a generated
repository of 10,000 source files. Reports index speed (lines/s), retrieval
latency p50/p99 over many cursors, and peak memory, with the machine.

    tools/bench/context_index.py [--bin build/sculpt] [--files 10000] [--repeat 200]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=200)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sculpt-index-bench-")
    try:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        for i in range(a.files):
            d = os.path.join(tmp, "pkg%d" % (i // 100))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "mod%d.py" % i), "w") as f:
                f.write("from pkg%d.mod%d import helper_%d\n\n" % (max(i - 1, 0) // 100,
                                                                  max(i - 1, 0), max(i - 1, 0)))
                for k in range(5):
                    f.write("def helper_%d%s(x, y):\n    z = x + y * %d\n    return helper_%d(z)\n\n"
                            % (i, "" if k == 0 else "_%d" % k, k, max(i - 1, 0)))
                f.write("class Thing%d:\n    def run(self):\n        return helper_%d(1, 2)\n" % (i, i))
        target = os.path.join(tmp, "pkg%d" % ((a.files - 1) // 100), "mod%d.py" % (a.files - 1))
        t0 = time.time()
        p = subprocess.run([a.bin, "context", "%s:3:1" % target, "--json", "--root", tmp,
                            "--repeat", str(a.repeat)], capture_output=True, text=True)
        wall = time.time() - t0
        if p.returncode != 0:
            raise SystemExit("sculpt context failed: " + p.stderr)
        r = json.loads(p.stdout)
        ws, b = r["workspace"], r["bench"]
        print("sculpt context index benchmark: %d files, %d lines, %d definitions, %s chunks"
              % (ws["files"], ws["lines"], ws["definitions"], ws.get("chunks", "no")))
        print("machine: %s" % describe())
        print("index: %.0f ms -> %.0f lines/s (parse + queries, one thread)"
              % (ws["index_ms"], ws["lines"] / (ws["index_ms"] / 1000.0)))
        print("retrieval over %d cursors: p50 %.2f ms, p99 %.2f ms, max %.2f ms"
              % (b["retrievals"], b["p50_ms"], b["p99_ms"], b["max_ms"]))
        print("peak memory: %.1f MiB; whole command %.1f s" % (b["peak_rss_kb"] / 1024.0, wall))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

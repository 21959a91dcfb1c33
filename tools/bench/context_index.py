#!/usr/bin/env python3
"""Benchmark (not a test): the workspace index and retrieval on a real tree.

By default the tree is CPython's standard library (Lib/) as this machine
has it: Debian's /usr/lib/python3.X, else the running interpreter's, without
site-packages and without the test suites (Lib/test, idle_test, tests/):
about 300k lines for 3.11, copied to a temporary git work tree. Reports:
  - the index built cold (no index kept on disk) and warm (the one the cold
    run kept in the cache folder), in lines/s and ms;
  - retrieval latency over many cursors: --files files chosen with a seed,
    --repeat cursors spread over each, the file's syntax tree built once as
    an editor has it; wall-clock p50/p99 and the thread's CPU time p50/p99
    (on a shared machine the wall time also counts waiting for a core);
  - the drafts at the same cursors (context/draft.c: the prompt's text and
    the index's line table, tokenized as the engine takes them), timed
    apart, the same way;
  - peak memory, and the machine.

    tools/bench/context_index.py [--bin build/sculpt] [--tree DIR] [--files 20]
                                 [--repeat 50] [--seed 1] [--generated N] [--all]
                                 [--budget TOKENS] [--record]

--all copies every file of the tree (C, headers, Python, ...: a whole
checkout such as python/cpython's), not only its .py files without tests.

--generated N benchmarks a generated repository of N small Python files
instead (the previous benchmark's synthetic tree).
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402
import results  # noqa: E402


def stdlib_dir():
    debian = sorted(glob.glob("/usr/lib/python3.[0-9]*"))
    for d in reversed(debian):
        if os.path.exists(os.path.join(d, "argparse.py")):
            return d
    d = sysconfig.get_paths().get("stdlib")
    return d if d and os.path.isdir(d) else None


def copy_tree(src, dst, everything=False):
    """The .py files of src (no site-packages, no caches) into dst; with
    everything, every file but git's."""
    n = 0
    for path in glob.glob(os.path.join(src, "**", "*" if everything else "*.py"), recursive=True):
        rel = os.path.relpath(path, src)
        if everything:
            if ".git" in rel.split(os.sep) or not os.path.isfile(path):
                continue
        elif any(p in ("site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test")
                 for p in rel.split(os.sep)):
            continue
        out = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copyfile(path, out)
        n += 1
    return n


def generate(dst, files):
    for i in range(files):
        d = os.path.join(dst, "pkg%d" % (i // 100))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "mod%d.py" % i), "w") as f:
            f.write("from pkg%d.mod%d import helper_%d\n\n" % (max(i - 1, 0) // 100, max(i - 1, 0),
                                                              max(i - 1, 0)))
            for k in range(5):
                f.write("def helper_%d%s(x, y):\n    z = x + y * %d\n    return helper_%d(z)\n\n"
                        % (i, "" if k == 0 else "_%d" % k, k, max(i - 1, 0)))
            f.write("class Thing%d:\n    def run(self):\n        return helper_%d(1, 2)\n" % (i, i))


def context(binary, tree, target, cache, repeat=0, budget=0):
    args = [binary, "context", target, "--json", "--root", tree]
    if budget:
        args += ["--budget", str(budget)]
    if repeat:
        args += ["--repeat", str(repeat)]
    t0 = time.time()
    p = subprocess.run(args, capture_output=True, text=True,
                       env=dict(os.environ, XDG_CACHE_HOME=cache))
    if p.returncode != 0:
        raise SystemExit("sculpt context failed: " + p.stderr)
    return json.loads(p.stdout), time.time() - t0


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--tree", default=stdlib_dir())
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--generated", type=int, default=0)
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--budget", type=int, default=0,
                    help="prompt tokens (default: fitted to the model; the LSP's 1024 for a real one)")
    results.add_flag(ap)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sculpt-index-bench-")
    cache = tempfile.mkdtemp(prefix="sculpt-index-cache-")
    try:
        tree = os.path.join(tmp, "tree")
        os.makedirs(tree)
        if a.generated:
            generate(tree, a.generated)
            what = "a generated repository of %d Python files" % a.generated
        else:
            if not a.tree:
                raise SystemExit("no tree: pass --tree DIR (or --generated N)")
            n = copy_tree(a.tree, tree, a.all)
            what = "%s (%d %sfiles)" % (a.tree, n, "" if a.all else ".py ")
        subprocess.run(["git", "init", "-q", tree], check=True)
        files = sorted(os.path.relpath(p, tree)
                       for p in glob.glob(os.path.join(tree, "**", "*.py"), recursive=True))
        # The index: cold (nothing kept), then warm (what the cold run kept).
        first = os.path.join(tree, files[0])
        cold, cold_wall = context(a.bin, tree, first + ":1:1", cache)
        warm, warm_wall = context(a.bin, tree, first + ":1:1", cache)
        ws_cold, ws_warm = cold["workspace"], warm["workspace"]
        # Retrieval: cursors spread over files chosen with the seed, among
        # those of at least 200 lines (where a cursor has code around it).
        rng = random.Random(a.seed)
        big = [f for f in files if sum(1 for _ in open(os.path.join(tree, f), "rb")) >= 200]
        chosen = rng.sample(big, min(a.files, len(big)))
        wall, cpu, rss, dwall, dcpu, offered = [], [], 0, [], [], []
        for f in chosen:
            r, _ = context(a.bin, tree, os.path.join(tree, f) + ":1:1", cache, a.repeat, a.budget)
            wall += r["bench"]["ms"]
            cpu += r["bench"]["cpu_ms"]
            rss = max(rss, r["bench"]["peak_rss_kb"])
            d = r["bench"]["drafts"]
            dwall.append(d["p99_ms"])
            dcpu.append(d["cpu_p99_ms"])
            offered.append(d["offered_mean"])
        print("sculpt context index benchmark on %s" % what)
        print("machine: %s" % describe())
        print("tree: %d files, %d lines, %d definitions, %d chunks" % (
            ws_cold["files"], ws_cold["lines"], ws_cold["definitions"], ws_cold["chunks"]))
        print("index cold: %.0f ms (%.0f lines/s, parse + queries, one thread)" % (
            ws_cold["index_ms"], ws_cold["lines"] / (ws_cold["index_ms"] / 1000.0)))
        print("index warm: %.0f ms, %d of %d files taken from the index kept on disk "
              "(whole command %.2f s cold, %.2f s warm)" % (
                  ws_warm["index_ms"], ws_warm["cached"], ws_warm["files"], cold_wall, warm_wall))
        print("retrieval over %d cursors in %d files: wall p50 %.2f ms, p99 %.2f ms; "
              "CPU p50 %.2f ms, p99 %.2f ms" % (len(wall), len(chosen), pct(wall, 0.5),
                                               pct(wall, 0.99), pct(cpu, 0.5), pct(cpu, 0.99)))
        # Per file the command reports its p99; the worst file's is an upper
        # bound on the p99 over all cursors.
        print("drafts at the same cursors: p99 per file, worst %.3f ms wall, %.3f ms CPU "
              "(median file %.3f / %.3f ms); %.1f drafts offered a cursor" % (
                  max(dwall), max(dcpu), pct(dwall, 0.5), pct(dcpu, 0.5),
                  sum(offered) / len(offered)))
        load = os.getloadavg()
        print("load average during the run: %.1f %.1f %.1f on %d cores" % (
            load[0], load[1], load[2], os.cpu_count() or 0))
        print("peak memory: %.1f MiB" % (rss / 1024.0))
        if a.record:
            cfg = dict({"tree": what}, **a.record_config)
            rcfg = dict(cfg, cursors=len(wall), files=len(chosen), budget=a.budget or "fitted")
            note = "load average %.1f at the end" % load[0]
            rec = lambda metric, v, unit, c: results.record(  # noqa: E731
                group="context-latency", metric=metric, value=results.sig(v), unit=unit,
                better="lower", config=c, note=note)
            rec("index built cold, wall time", cold_wall, "s", cfg)
            rec("index built cold, index time (parse and queries, one thread)",
                ws_cold["index_ms"], "ms", cfg)
            rec("index warm (kept on disk), wall time", warm_wall, "s", cfg)
            for q in (0.5, 0.99):
                rec("retrieval CPU time p%d" % (q * 100), pct(cpu, q), "ms", rcfg)
                rec("retrieval wall time p%d" % (q * 100), pct(wall, q), "ms", rcfg)
            rec("drafts at the same cursors, CPU p99 (the worst file's)", max(dcpu), "ms", rcfg)
            results.done()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()

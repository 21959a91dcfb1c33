#!/usr/bin/env python3
"""Holes per minute of `sculpt batch --holes`, end to end (walk, parse,
decode, parse check, diff), on a generated repository.

Writes N files (C, Python and JavaScript in turn), each with H inline holes
right after "abc", into a temp folder, runs `sculpt batch --holes --json`
over it once, and prints the sites done, the wall time, holes per minute
(wall clock, model load included) and per minute of decoding (the sum of
the sites' own times). The model defaults to the planted byte-level one
(tools/planted_checkpoints.py), which measures sculpt's overhead on a tiny
network; pass --model DIR for a real checkpoint, --device cuda when a GPU is
there. Not a test.

    tools/bench/batch_holes.py --sculpt build/sculpt [--files 30] [--holes 4]
                               [--model DIR] [--device cpu|cuda|auto] [--record]

--record appends holes/min one site at a time against the batched sites to
bench/results/ (tools/bench/results.py).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from machine import describe  # noqa: E402
import results  # noqa: E402

TEMPLATES = {
    "c": ("c", 'static const char *s{i} = abcTODO(sculpt);\n'),
    "py": ("py", 's{i} = abcTODO(sculpt)\n'),
    "js": ("js", 'const s{i} = abcTODO(sculpt);\n'),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sculpt", required=True)
    ap.add_argument("--files", type=int, default=30)
    ap.add_argument("--holes", type=int, default=4)
    ap.add_argument("--model")
    ap.add_argument("--device", default="cpu")
    results.add_flag(ap)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sculpt-bench-batch-")
    try:
        model = a.model
        if not model:
            subprocess.run([sys.executable, os.path.join(TOOLS, "planted_checkpoints.py"), tmp],
                           check=True, capture_output=True)
            model = os.path.join(tmp, "planted-successor-shifted-bytes")
        repo = os.path.join(tmp, "repo")
        os.makedirs(repo)
        kinds = list(TEMPLATES.values())
        for n in range(a.files):
            ext, line = kinds[n % len(kinds)]
            with open(os.path.join(repo, f"f{n}.{ext}"), "w") as f:
                for i in range(a.holes):
                    f.write(line.format(i=i))
                    f.write("\n" * 3)
        print(f"machine: {describe()}; device {a.device}")
        print(f"model: {model}")
        # The same run two ways, side by side: the holes' greedy candidates
        # decoded together (shared packed passes, no cache), and each hole
        # alone (with the K/V cache).
        rate = {}
        for label, extra in (("batched sites", ["--batch-sites"]),
                             ("one site at a time", ["--no-batch-sites"])):
            t0 = time.time()
            p = subprocess.run([a.sculpt, "batch", "--holes", "--json", "--model", model,
                                "--device", a.device, *extra, repo], capture_output=True)
            wall = time.time() - t0
            if p.returncode not in (0, 1):
                sys.exit(f"sculpt batch failed ({p.returncode}): {p.stderr.decode()}")
            rep = json.loads(p.stdout)
            sites = rep["sites"]
            done = sum(s["status"] == "done" for s in sites)
            summ = rep["summary"]
            rate[label] = (len(sites) / wall * 60, len(sites), done)
            print(f"{label}: {len(sites)} sites in {a.files} files, done {done}; "
                  f"{wall:.2f} s -> {len(sites) / wall * 60:.0f} holes/min (load included); "
                  f"batched {summ.get('batched_sites', 0)} sites in "
                  f"{summ.get('batched_passes', 0)} passes")
        if a.record:
            one, both = rate["one site at a time"], rate["batched sites"]
            results.record(
                group="batch",
                metric="sculpt batch --holes, one hole at a time with the K/V cache"
                       + (" (the CPU default)" if a.device == "cpu" else ""),
                value=results.sig(one[0], 3), unit="holes/min", better="higher",
                config=dict({"device": a.device, "files": a.files, "holes": one[1],
                             "model": a.model or "planted byte-level"}, **a.record_config),
                peer={"name": "the same holes decoded together in shared packed passes "
                              "(--batch-sites, no cache)", "value": results.sig(both[0], 3)},
                note=f"wall clock, model load included; done {one[2]} and {both[2]} of "
                     f"{one[1]}")
            results.done()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The completion corpus: fixed cursor sites in the vendored real repositories
(tests/data/real: jq C, click Python, cobra Go, ky TypeScript), and the
agreement of `sculpt complete` under two settings on them.

Sites are chosen deterministically: the source files of each repository in
sorted order, every line whose stripped text is at least 12 characters long
taken in turn from a fixed stride, the cursor alternately at the end of the
line's indentation (complete the line) and in the middle of its text (finish
the line). The same sites every run, on every machine.

    tools/eval/completion_corpus.py [--sculpt build/sculpt] [--model DIR]
        [--sites N] --a "--weights f32" --b "--weights int8"

prints how many sites give the same text under A and B (byte for byte), and
exits 0. tests/model/test_int8.py uses sites() and complete() as a library.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REAL = os.path.join(ROOT, "tests", "data", "real")
EXTS = (".py", ".go", ".c", ".h", ".ts")


def sites(n=60, real=REAL):
    """n (path, line, col) sites, 1-based line and byte column, spread over
    the four repositories in turn."""
    per_repo = []
    for repo in sorted(os.listdir(real)):
        if not os.path.isdir(os.path.join(real, repo)):
            continue
        files = []
        for d, _, fs in os.walk(os.path.join(real, repo)):
            files += [os.path.join(d, f) for f in fs if f.endswith(EXTS)]
        cands = []
        for path in sorted(files):
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
            for i, raw in enumerate(lines):
                s = raw.strip()
                if len(s) < 12 or i + 1 >= len(lines):
                    continue
                indent = len(raw) - len(raw.lstrip())
                cands.append((path, i + 1, indent, len(raw.rstrip())))
        if cands:
            per_repo.append(cands)
    out, k = [], 0
    want = (n + len(per_repo) - 1) // len(per_repo)
    for cands in per_repo:
        stride = max(1, len(cands) // want)
        for j in range(want):
            if j * stride >= len(cands):
                break
            path, line, indent, end = cands[(j * stride + 7) % len(cands)]
            # Alternate: the whole line after its indentation, or its second half.
            col = indent + 1 if k % 2 == 0 else indent + 1 + (end - indent) // 2
            out.append((path, line, col))
            k += 1
    return out[:n]


def complete(sculpt, site, args, env=None):
    """The middle `sculpt complete` gives at site with extra args (a list)."""
    path, line, col = site
    r = subprocess.run([sculpt, "complete", f"{path}:{line}:{col}", "--json"] + list(args),
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"sculpt complete {path}:{line}:{col} {args}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sculpt", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--model", default=os.path.join(ROOT, "model", "default"))
    ap.add_argument("--sites", type=int, default=60)
    ap.add_argument("--a", default="--weights f32", help="arguments of setting A")
    ap.add_argument("--b", default="--weights int8", help="arguments of setting B")
    ap.add_argument("--show", action="store_true", help="print the sites that differ")
    args = ap.parse_args()
    a_args = ["--model", args.model] + shlex.split(args.a)
    b_args = ["--model", args.model] + shlex.split(args.b)
    same, ss = 0, sites(args.sites)
    for s in ss:
        ta, tb = complete(args.sculpt, s, a_args)["text"], complete(args.sculpt, s, b_args)["text"]
        same += ta == tb
        if args.show and ta != tb:
            print(f"{os.path.relpath(s[0], ROOT)}:{s[1]}:{s[2]}\n  A {ta!r}\n  B {tb!r}")
    print(f"completion corpus: {len(ss)} sites, model {os.path.relpath(args.model, ROOT)}: "
          f"same text under [{args.a}] and [{args.b}] at {same} ({100.0 * same / len(ss):.1f}%)")


if __name__ == "__main__":
    sys.exit(main())

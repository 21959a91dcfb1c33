#!/usr/bin/env python3
"""Context evaluation: identifier recall of the prompt `sculpt context` builds.

Over a git repository, it hides random spans (single lines and blocks of
3-8 lines) one at a time, builds the context at the hole with
`sculpt context --json`, and reports the fraction of identifiers in the
hidden span that are present in the assembled prompt (prefix, suffix and
snippets), at token budgets of 512, 1,024 and 2,048. A higher recall means
the model is shown more of the names the hidden code uses.

    tools/eval/context_recall.py REPO [--bin build/sculpt] [--samples 40] [--seed 1]
                                 [--open-neighbours N]

--open-neighbours N passes up to N other files of the hole's directory as
open editor buffers (`--open`), as an editor with neighbouring tabs would.

The repository is copied to a temporary folder; each hole is made there.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

EXTS = {".py", ".c", ".h", ".js", ".ts", ".go", ".rs", ".java", ".cpp", ".sh"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
KEYWORDS = set("""if else for while return def class import from not and None True False int
char void const static struct unsigned long float double function var let new this self
fn pub use mut func package public private print include define typedef enum switch case
break continue try catch with pass lambda yield async await export""".split())


def identifiers(text):
    return {w for w in IDENT.findall(text) if w not in KEYWORDS}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                  "build", "sculpt"))
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--open-neighbours", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # Its own stream, so that the holes are the same with and without it.
    open_rng = random.Random(args.seed + 1)
    work = tempfile.mkdtemp(prefix="sculpt-eval-")
    repo = os.path.join(work, "repo")
    shutil.copytree(args.repo, repo, symlinks=True)
    files = subprocess.run(["git", "-C", repo, "ls-files"], capture_output=True,
                           text=True).stdout.split()
    files = [f for f in files if os.path.splitext(f)[1] in EXTS]
    if not files:
        sys.exit("no source files in " + args.repo)
    results = {512: [], 1024: [], 2048: []}
    done = 0
    tries = 0
    while done < args.samples and tries < args.samples * 10:
        tries += 1
        rel = rng.choice(files)
        path = os.path.join(repo, rel)
        try:
            lines = open(path, encoding="utf-8").read().split("\n")
        except (UnicodeDecodeError, OSError):
            continue
        if len(lines) < 20:
            continue
        size = 1 if rng.random() < 0.5 else rng.randint(3, 8)
        start = rng.randint(5, len(lines) - size - 2)
        hidden = "\n".join(lines[start:start + size])
        want = identifiers(hidden)
        if len(want) < 2:
            continue
        original = "\n".join(lines)
        holed = "\n".join(lines[:start] + [""] + lines[start + size:])
        with open(path, "w", encoding="utf-8") as f:
            f.write(holed)
        extra = []
        if args.open_neighbours:
            d = os.path.dirname(rel)
            near = sorted(f for f in files if os.path.dirname(f) == d and f != rel)
            for f in open_rng.sample(near, min(args.open_neighbours, len(near))):
                extra += ["--open", f]
        for budget in results:
            p = subprocess.run([args.bin, "context", "%s:%d:1" % (rel, start + 1), "--json",
                                "--budget", str(budget)] + extra, cwd=repo, capture_output=True,
                               text=True)
            if p.returncode != 0:
                continue
            r = json.loads(p.stdout)
            prompt = r["prefix"] + r["suffix"] + "".join(s["text"] for s in r["snippets"])
            have = identifiers(prompt)
            results[budget].append(len(want & have) / len(want))
        with open(path, "w", encoding="utf-8") as f:
            f.write(original)
        done += 1
    shutil.rmtree(work, ignore_errors=True)
    print("identifier recall of the prompt over %d hidden spans in %s" % (done, args.repo))
    for budget, xs in results.items():
        if xs:
            print("  budget %5d tokens: mean %.3f, median %.3f" % (budget, statistics.mean(xs),
                                                                   statistics.median(xs)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How often sculpt's fast preset agrees with the family's upstream preset,
and at what speed ratio, on a completion corpus.

Tasks are model/train/evaluate.py's (the cursor at the start of a line; the
middle is that line, or the next three), drawn from the real repositories
vendored under tests/data/real (jq C, click Python, cobra Go, ky TypeScript)
unless --corpus names a heldout.jsonl. Each task is completed twice by
`sculpt complete --json`, with --preset fast and --preset upstream, greedy
(--temperature 0) so that a difference is the loop's, not sampling noise.

Reported per kind: agreement (the two middles identical after the family's
ending and cleaning), mean character similarity between them, exact match of
each against the real middle, and the speed ratio (sum of upstream model_ms
over sum of fast model_ms; both measured in this run, same machine).

    fast_vs_upstream.py [--model DIR] [--sculpt BIN] [--n 60] [--out FILE]
"""
import argparse
import atexit
import difflib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "model", "train"))
import evaluate  # noqa: E402  (make_tasks, norm, score)

LANGS = {".c": "c", ".h": "c", ".py": "python", ".go": "go", ".ts": "typescript"}


def real_corpus(root):
    """heldout.jsonl-style records for every source file under root."""
    out = []
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            lang = LANGS.get(os.path.splitext(name)[1])
            if not lang:
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            out.append(dict(path=os.path.relpath(path, SRC), lang=lang, text=text,
                            sha256=hashlib.sha256(text.encode()).hexdigest()))
    return out


def complete(bin_, model, pre, suf, canvas, preset, tmp):
    path = os.path.join(tmp, "task.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(pre + suf)
    line = pre.count("\n") + 1
    p = subprocess.run([bin_, "complete", f"{path}:{line}:1", "--model", model, "--device", "cpu",
                        "--max-tokens", str(canvas), "--preset", preset, "--temperature", "0",
                        "--json"], capture_output=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"sculpt complete --preset {preset}: {p.stderr.decode()[:300]}")
    r = json.loads(p.stdout)
    return r["text"], r["timings"]["model_ms"], r["steps"], r["loop"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(SRC, "model", "default"))
    ap.add_argument("--sculpt", default=os.environ.get("SCULPT_BIN",
                                                       os.path.join(SRC, "build", "sculpt")))
    ap.add_argument("--corpus", help="a heldout.jsonl (default: tests/data/real)")
    ap.add_argument("--n", type=int, default=60, help="tasks per kind")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.corpus:
        with open(a.corpus, encoding="utf-8") as f:
            records = [json.loads(l) for l in f if l.strip()]
    else:
        records = real_corpus(os.path.join(SRC, "tests", "data", "real"))
    tmp = tempfile.mkdtemp(prefix="sculpt-fast-up-")
    atexit.register(shutil.rmtree, tmp, True)
    result = dict(model=os.path.relpath(os.path.abspath(a.model), SRC), kinds={})
    for kind, k, canvas in (("single", 1, 32), ("multi", 3, 64)):
        tasks = evaluate.make_tasks(records, a.n, kind, k)
        preds = {"fast": [], "upstream": []}
        ms = {"fast": [], "upstream": []}
        steps = {"fast": [], "upstream": []}
        loops = {}
        for _, _, pre, _, suf in tasks:
            for preset in ("fast", "upstream"):
                text, t, st, loop = complete(a.sculpt, a.model, pre, suf, canvas, preset, tmp)
                preds[preset].append(text)
                ms[preset].append(t)
                steps[preset].append(st)
                loops[preset] = loop
        n = len(tasks)
        agree = sum(f == u for f, u in zip(preds["fast"], preds["upstream"]))
        sim = statistics.mean(difflib.SequenceMatcher(None, f, u).ratio()
                              for f, u in zip(preds["fast"], preds["upstream"])) if n else 0
        res = dict(n=n, canvas=canvas, languages={}, loops=loops,
                   agreement=round(agree / max(1, n), 4),
                   fast_upstream_char_similarity=round(sim, 4),
                   speed_ratio=round(sum(ms["upstream"]) / max(1e-9, sum(ms["fast"])), 2),
                   median_model_ms={p: round(statistics.median(v), 2) for p, v in ms.items()},
                   mean_steps={p: round(statistics.mean(v), 2) for p, v in steps.items()},
                   exact_match={p: evaluate.score(tasks, v)["exact_match"]
                                for p, v in preds.items()})
        for t in tasks:
            res["languages"][t[0]["lang"]] = res["languages"].get(t[0]["lang"], 0) + 1
        result["kinds"][kind] = res
        print(f"{kind}: {json.dumps(res)}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()

"""tools/ship_decision.py, the default model's ship rule (issue 41) over
`sculpt eval --json` summaries: significantly better than the shipped model
on one of humaneval-single and repo-single (McNemar p < 0.05), not worse on
the other, and a CPU p50 of at most 150 ms; the n-gram never gates. The
summaries here are made in sculpt eval's format (systems model,
shipped-model, line-ngram; mcnemar pairs). Standard library."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402

TOOL = os.path.join(SRC, "tools", "ship_decision.py")
t = tempfile.mkdtemp(prefix="sculpt-ship-")
atexit.register(shutil.rmtree, t, True)


def summary(bench, measure, cand, shipped, ngram, p, only_a, only_b, swap=False):
    m = dict(a="model", b="shipped-model", measure="x", p=p, only_a=only_a, only_b=only_b)
    if swap:
        m = dict(a="shipped-model", b="model", measure="x", p=p, only_a=only_b, only_b=only_a)
    return {"bench": bench, "systems": [{"name": "model", measure: cand},
                                        {"name": "shipped-model", measure: shipped},
                                        {"name": "line-ngram", measure: ngram}],
            "mcnemar": [m, dict(a="model", b="line-ngram", p=0.001, only_a=0, only_b=40)]}


def run(he, repo, lat):
    hp, rp = os.path.join(t, "he.json"), os.path.join(t, "repo.json")
    json.dump(he, open(hp, "w"))
    json.dump(repo, open(rp, "w"))
    args = [sys.executable, TOOL, "--humaneval", hp, "--repo", rp]
    if lat is not None:
        args += ["--latency-ms", str(lat)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=30)
    print(p.stdout, p.stderr)
    return p


# Better on repo (p 0.01), not worse on HumanEval, fast: ship, though the n-gram is far ahead.
he = summary("humaneval-single", "pass@1", 0.007, 0.006, 0.30, 0.8, 3, 2)
repo = summary("repo-single", "exact_match", 0.05, 0.0, 0.40, 0.01, 9, 1, swap=True)
p = run(he, repo, 120)
check(p.returncode == 0 and "SHIP" in p.stdout, "better on one, not worse on the other, fast: ship "
      "(the n-gram ahead does not gate; a pair given the other way round is read right)")
p = run(he, repo, 180)
check(p.returncode == 3 and "latency" in p.stdout, "too slow: not shipped, the reason named")
p = run(he, repo, None)
check(p.returncode == 3, "no latency measured: not shipped")
worse = summary("humaneval-single", "pass@1", 0.004, 0.006, 0.30, 0.5, 1, 3)
p = run(worse, repo, 120)
check(p.returncode == 3 and "humaneval-single worse" in p.stdout, "worse on the other: not shipped")
nsig = summary("repo-single", "exact_match", 0.02, 0.0, 0.4, 0.12, 3, 0)
p = run(he, nsig, 120)
check(p.returncode == 3 and "not worse" in p.stdout, "better but not significantly: not shipped")
p = run({"bench": "humaneval-single", "systems": [{"name": "model"}]}, repo, 100)
check(p.returncode == 2 and "shipped-model" in p.stderr, "no shipped baseline in a summary: exit 2")
finish()

"""pass@1 counts a middle the model really wrote: a planted byte-level
checkpoint (tools/planted_checkpoints.py) writes "defg...z" after "abc"
and then ends, so on a problem whose right middle is that chain the
decoded program passes its tests, and on one whose middle is something
else it fails; the summary, the per-task results and the harness's sample
format say so, and the shipped model runs beside it on the same tasks as
the baseline, paired by McNemar."""
import os
import subprocess

from evaltest import SRC, check, finish, read_jsonl, run_json, system, tempdir, write_jsonl

tmp = tempdir("sculpt-eval-planted-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), tmp],
               check=True, capture_output=True)
model = os.path.join(tmp, "planted-successor-shifted-bytes")

problems = os.path.join(tmp, "problems.jsonl")
write_jsonl(problems, [
    {"task_id": "planted/0", "prompt": "def f():\n    return 'abc", "suffix": "'\n",
     "canonical_solution": "defghijklmnopqrstuvwxyz",
     "test": "def check(candidate):\n    assert candidate() == 'abcdefghijklmnopqrstuvwxyz'\n",
     "entry_point": "f"},
    # The chain after "pqr" is "stuvwxyz"; the tests want "pqrs" only.
    {"task_id": "planted/1", "prompt": "def f():\n    return 'pqr", "suffix": "'\n",
     "canonical_solution": "s",
     "test": "def check(candidate):\n    assert candidate() == 'pqrs'\n",
     "entry_point": "f"},
])

res, out = os.path.join(tmp, "results.jsonl"), os.path.join(tmp, "samples.jsonl")
rc, s, err = run_json(problems, "--model", model, "--results", res, "--out", out)
check(rc == 0 and s, f"runs: {rc} {err[-400:]}")
if s:
    m = system(s, "model")
    check(m["pass@1"] == 0.5 and m["exact_match"] == 0.5 and m["empty"] == 0,
          f"pass@1 counts the planted middle: {m}")
    lines = [l for l in read_jsonl(res) if l["system"] == "model"]
    check([l["completion"] for l in lines] == ["defghijklmnopqrstuvwxyz", "stuvwxyz"],
          f"the middles: {[l['completion'] for l in lines]}")
    check([l["passed"] for l in lines] == [True, False] and
          lines[1]["result"] == "failed: AssertionError", f"verdicts: {lines}")
    check([(x["task_id"], x["passed"]) for x in read_jsonl(out)] ==
          [("planted/0", True), ("planted/1", False)], "--out")
    shipped = system(s, "shipped-model")
    check(shipped and shipped["tasks"] == 2, f"the shipped model is the baseline: {shipped}")
    pair = s["mcnemar"][0] if s["mcnemar"] else {}
    check(pair.get("a") == "model" and pair.get("b") == "shipped-model" and
          pair.get("pairs") == 2 and pair.get("only_a", 0) + pair.get("both", 0) == 1,
          f"McNemar against the shipped model: {pair}")

# A canvas too short for the chain cuts it: the same task fails.
rc, s, err = run_json(problems, "--model", model, "--max-tokens", "5", "--no-baselines",
                      "--limit", "1")
check(rc == 0 and s and system(s, "model")["pass@1"] == 0.0 and len(s["systems"]) == 1,
      f"a 5-token canvas: {s and s['systems']} {err[-300:]}")

finish()

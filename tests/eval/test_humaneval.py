"""`sculpt eval` on HumanEval-Infilling as a user runs it: a bounded run of
the shipped model on humaneval-single finishes with a summary (its own
pass@1 and the line n-gram's on the same tasks, McNemar between them), the
per-task results and the harness's sample format with passed/result; the
harness's own example samples score the 30% its README states, sample by
sample; the canonical middles of the first tasks of every benchmark all
pass (the full sets are checked by hand: docs/evaluation.md)."""
import os

from evaltest import DATA, MODEL, check, finish, read_jsonl, run_json, system, tempdir

tmp = tempdir("sculpt-eval-he-")

# The shipped model, three tasks, with its baseline.
res, out = os.path.join(tmp, "results.jsonl"), os.path.join(tmp, "samples.jsonl")
rc, s, err = run_json("humaneval-single", "--model", MODEL, "--limit", "3", "--results", res,
                      "--out", out)
check(rc == 0 and s, f"bounded run exits 0 with a JSON summary: {rc} {err[-400:]}")
if s:
    check(s["bench"] == "humaneval-single" and s["tasks"] == 3, f"summary: {s}")
    m, g = system(s, "model"), system(s, "line-ngram")
    check(m and 0 <= m["pass@1"] <= 1 and m["tasks"] == 3 and m["model"] == MODEL,
          f"the model's row: {m}")
    check(g and g["tasks"] == 3 and g["corpus_files"] > 1000,
          f"the n-gram, trained on the model's corpus manifest: {g}")
    check(len(s["mcnemar"]) == 1 and s["mcnemar"][0]["pairs"] == 3, f"paired: {s['mcnemar']}")
    check("namespaces" in s["settings"]["sandbox"] or "rlimits" in s["settings"]["sandbox"],
          f"the sandbox is named: {s['settings']}")
    lines = read_jsonl(res)
    check(len(lines) == 6 and {l["system"] for l in lines} == {"model", "line-ngram"},
          f"per-task results: {len(lines)} lines")
    check(all(l["result"] == "passed" or l["result"] == "timed out" or
              l["result"].startswith("failed: ") for l in lines), "results in the harness's words")
    check(all(l["passed"] == (l["result"] == "passed") for l in lines), "passed agrees")
    samples = read_jsonl(out)
    check([x["task_id"] for x in samples] == [f"SingleLineInfilling/HumanEval/0/L{i}"
                                              for i in range(3)] and
          all(set(x) == {"task_id", "completion", "passed", "result"} for x in samples),
          f"--out in the harness's sample format: {samples}")
    model_lines = [l for l in lines if l["system"] == "model"]
    check([x["completion"] for x in samples] == [l["completion"] for l in model_lines],
          "--out holds the model's completions")

# The harness's example: 10 samples of one problem, 3 pass (README: 30%).
rc, s, err = run_json("humaneval-test", "--score", os.path.join(DATA, "example_samples.jsonl"),
                      "--results", res)
check(rc == 0 and s and abs(system(s, "samples")["pass@1"] - 0.3) < 1e-9,
      f"example samples: {s and system(s, 'samples')} {err[-300:]}")
if rc == 0:
    got = [l["passed"] for l in read_jsonl(res)]
    # "    return " / "  return " / "\treturn " complete "return 1"; the rest
    # return 11, sleep past the timeout, read stdin or are not Python.
    check(got == [False] * 7 + [True] * 3, f"which samples pass: {got}")
    check([l["result"] for l in read_jsonl(res)][1] == "timed out", "time.sleep(10) times out")

# Canonical middles pass (the first 8 tasks of each benchmark here).
for bench in ("humaneval-single", "humaneval-multi", "humaneval-random",
              "humaneval-random-light"):
    rc, s, err = run_json(bench, "--score", "canonical", "--limit", "8", "--jobs", "4")
    c = s and system(s, "canonical")
    check(rc == 0 and c and c["pass@1"] == 1.0 and c["exact_match"] == 1.0 and c["tasks"] == 8,
          f"{bench} canonical: {c} {err[-300:]}")

finish()

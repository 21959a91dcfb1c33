"""Repository tasks on packages of the user's (--repos): lines taken out of
two packages' files, the shipped model prompted as the LSP prompts it
(repository snippets from the package's index), the line n-gram reading the
same prompt, scored by exact match, character similarity and, for Python,
whether the file still compiles. The packages repeat lines only the prompt
can know (`value = event.value` after `log.info("start")`), so the n-gram
gets the tasks whose previous line repeats in the prompt; then McNemar between two runs (--compare, and `sculpt eval
compare`)."""
import json
import os
import subprocess

from evaltest import BIN, MODEL, check, finish, read_jsonl, run_json, system, tempdir

tmp = tempdir("sculpt-eval-repo-")
repos = os.path.join(tmp, "repos")
for pkg in ("alpha", "beta"):
    os.makedirs(os.path.join(repos, pkg))
with open(os.path.join(repos, "alpha", "handlers.py"), "w") as f:
    f.write('"""Handlers."""\nimport logging\n\nlog = logging.getLogger(__name__)\n')
    for i in range(40):
        f.write(f'\n\ndef handler_{i}(event):\n    log.info("start")\n'
                f'    value = event.value\n    return value\n')
with open(os.path.join(repos, "beta", "table.c"), "w") as f:
    f.write("#include <stdio.h>\n\nstruct row { int id; const char *name; };\n\n")
    for i in range(40):
        f.write(f"static int get_{i}(struct row *r) {{\n  if (!r) return -1;\n"
                f"  log_row(r);\n  return r->id + {i};\n}}\n\n")
# An index as an editor's would be: the repositories in a git work tree.
subprocess.run(["git", "init", "-q", repos], check=True)
corpus = os.path.join(tmp, "corpus")
os.mkdir(corpus)
with open(os.path.join(corpus, "other.py"), "w") as f:
    f.write("import os\nprint(os.name)\n")
# The benchmark's own file in the n-gram's corpus, under another name (as
# Debian's python3-click is click's): it must be left out.
with open(os.path.join(repos, "alpha", "handlers.py")) as src, \
        open(os.path.join(corpus, "vendored_handlers.py"), "w") as f:
    f.write("# vendored\n" + src.read())

res = os.path.join(tmp, "results.jsonl")
rc, s, err = run_json("repo-single", "--model", MODEL, "--repos", repos, "--tasks", "40",
                      "--ngram-corpus", corpus, "--results", res)
check(rc == 0 and s, f"runs: {rc} {err[-400:]}")
lines = read_jsonl(res) if rc == 0 else []
if s:
    check(s["tasks"] == 40 and s["scoring"] == "match", f"summary: {s['tasks']}")
    check("index" not in s["settings"], f"each package indexed: {s['settings']}")
    g, m = system(s, "line-ngram"), system(s, "model")
    check(g["corpus_files"] == 1 and g["corpus_left_out"] == 1,
          f"the n-gram's corpus, less the benchmark's own file: {g}")
    ng = {l["task_id"]: l for l in lines if l["system"] == "line-ngram"}
    # The previous line repeats in the prompt: the n-gram writes the line
    # that follows it there, which is this one.
    knowable = [t for t, l in ng.items()
                if l["expected"].strip() in ("value = event.value", "return value", "log_row(r);")]
    check(len(knowable) >= 5 and all(ng[t]["exact"] for t in knowable),
          f"the n-gram reads the prompt: {[(t, ng[t]['completion']) for t in knowable]}")
    check(g["exact_match"] == sum(l["exact"] for l in ng.values()) / 40, "exact match is the mean")
    check({l["package"] for l in lines} == {"alpha", "beta"} and
          {l["lang"] for l in lines} == {"python", "c"}, "tasks from both packages")
    for l in lines:
        check(0 <= l["similarity"] <= 1 and (l["similarity"] == 1) >= l["exact"],
              f"similarity: {l}")
        check((l["compiles"] is None) == (l["lang"] != "python"), f"compiles only for Python: {l}")
        if l["exact"] and l["lang"] == "python":
            check(l["compiles"] is True, f"an exact Python middle compiles: {l}")
        if l["system"] == "model":
            check(isinstance(l.get("snippets"), int), f"the model's prompt is recorded: {l}")
        check(l["completion"].count("\n") <= 1, f"one line kept: {l['completion']!r}")
    py = [l for l in lines if l["system"] == "line-ngram" and l["lang"] == "python"]
    check(abs(g["python_compiles"] - sum(bool(l["compiles"]) for l in py) / len(py)) < 1e-9,
          f"python_compiles: {g['python_compiles']}")
    pair = s["mcnemar"][0]
    only_m = sum(1 for l in lines if l["system"] == "model" and l["exact"] and
                 not ng[l["task_id"]]["exact"])
    only_g = sum(1 for t, l in ng.items() if l["exact"] and
                 not next(x for x in lines if x["system"] == "model" and x["task_id"] == t)["exact"])
    check(pair["only_a"] == only_m and pair["only_b"] == only_g and pair["pairs"] == 40,
          f"McNemar's counts: {pair} against {only_m}, {only_g}")

# Two runs compared: the n-gram of this run against the model of the same.
p = subprocess.run([BIN, "eval", "compare", res, res, "--system", "line-ngram", "--against",
                    "model", "--json"], capture_output=True, timeout=60)
c = json.loads(p.stdout) if p.returncode == 0 else {}
check(c.get("pairs") == 40 and (s and c.get("only_a") == s["mcnemar"][0]["only_b"]),
      f"compare: {c} {p.stderr.decode()[-300:]}")
p = subprocess.run([BIN, "eval", "compare", res, res], capture_output=True, timeout=60)
check(p.returncode == 0 and b"p = 1" in p.stdout, f"a run against itself: {p.stdout!r}")
rc, s2, err = run_json("repo-single", "--model", MODEL, "--repos", repos, "--tasks", "40",
                       "--no-baselines", "--compare", res)
earlier = [x for x in (s2 or {}).get("mcnemar", []) if x.get("earlier") == res]
check(rc == 0 and earlier and earlier[0]["pairs"] == 40 and earlier[0]["p"] == 1.0,
      f"--compare with the same model's earlier run (greedy: the same answers): {earlier} {err}")

finish()

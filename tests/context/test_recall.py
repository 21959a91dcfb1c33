"""Repository-context recall on real repositories cannot silently fall.

Runs tools/eval/context_recall.py on the committed cases (tests/context/
recall_cases/*.tsv: cursors just before a use of a definition from another
file, in jq (C), click (Python), cobra (Go) and ky (TypeScript)) with the
built binary at the default budget, in both scenarios (the line intact,
the line cut at the cursor), and checks:
  - each language's share of cases whose definition is in the prompt is at
    least the figure pinned in recall_expected.json (measured when the
    retrieval last changed; raise it when it improves);
  - on every case and scenario, a larger budget (512 -> 1024 -> 2048)
    never drops a definition a smaller one included.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ["SCULPT_SOURCE_DIR"]
BIN = os.environ["SCULPT_BIN"]
HERE = os.path.join(SRC, "tests", "context")

if not shutil.which("git"):
    print("skip: git is needed to list the workspace")
    sys.exit(77)

cases = sorted(os.path.join(HERE, "recall_cases", f)
               for f in os.listdir(os.path.join(HERE, "recall_cases")) if f.endswith(".tsv"))
out = tempfile.mktemp(prefix="sculpt-recall-", suffix=".json")
p = subprocess.run([sys.executable, os.path.join(SRC, "tools", "eval", "context_recall.py"), "run",
                    *cases, "--bin", BIN, "--json", out, "--no-grep",
                    "--monotonic", "512,1024,2048"], capture_output=True, text=True, timeout=600)
print(p.stdout)
if p.returncode not in (0, 1) or not os.path.exists(out):
    print(p.stderr)
    sys.exit(1)
got = json.load(open(out))
os.unlink(out)
want = json.load(open(os.path.join(HERE, "recall_expected.json")))["sculpt"]
failures = []
for r in got["results"]:
    for scenario in ("intact", "cut"):
        pinned = want[r["lang"]][scenario]
        have = r[scenario]["sculpt"]
        if have + 1e-9 < pinned:
            failures.append("%s %s: %.3f, below the pinned %.3f" % (r["lang"], scenario, have,
                                                                   pinned))
for problem in got["problems"]:
    failures.append(problem)
for f in failures[:40]:
    print("FAIL:", f)
if len({r["lang"] for r in got["results"]}) != len(want):
    failures.append("languages measured: %s" % [r["lang"] for r in got["results"]])
sys.exit(1 if failures else 0)

"""The README's demo (tools/demo_session.py, run by `tools/bootstrap.sh
demo`): an LSP session with the shipped model and no settings on a real
file; it must exit 0, having sent completion requests and got answers to
them, not errors."""
import os
import subprocess
import sys

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
env = dict(os.environ)
env.pop("SCULPT_MODEL", None)
p = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "demo_session.py"), BIN],
                   capture_output=True, timeout=600, env=env, text=True)
out = p.stdout
failures = []
if p.returncode != 0:
    failures.append("the demo exits 0 (got %d)" % p.returncode)
if '"method": "textDocument/inlineCompletion"' not in out:
    failures.append("the demo asks for an inline completion")
if '"method": "textDocument/completion"' not in out:
    failures.append("the demo asks for completion items")
answers = [l for l in out.splitlines() if l.startswith('<< {"id"') and '"items"' in l]
if len(answers) < 2:
    failures.append("completion answers are printed (%d)" % len(answers))
if "0 completion requests failed" not in out:
    failures.append("no completion request failed")
for f in failures:
    print("FAIL:", f)
if failures:
    print(out[-4000:])
    print(p.stderr[-2000:])
    sys.exit(1)
print("ok")

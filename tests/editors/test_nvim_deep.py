"""Neovim with editors/nvim, default settings and the shipped model, on a copy
of jq holding one generated file nested 70,000 braces deep (issue 38). With
Debian's tree-sitter 0.20.7 the server aborted as soon as that file was
parsed and freed, and Neovim said "Client 1 quit with exit code 134"; the
ghost text in builtin.c went with it. Now the server answers in the deep
file and in builtin.c around it, without an error, and the user is told
nothing."""
import atexit
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402
from common import (TEMP_SETTINGS, exchanges, git_work_tree, read_tap,  # noqa: E402
                    real_workspace)

editor = clients.neovim()
import tempfile  # noqa: E402

tmp = tempfile.mkdtemp(prefix="sculpt-nvim-deep-")
atexit.register(shutil.rmtree, tmp, True)
ws = real_workspace(tmp, ("jq",))
deep = os.path.join(ws, "jq", "src", "deep.c")
with open(deep, "w") as f:
    f.write("int f(void) " + "{" * 70000 + "\n  int abc\n")
git_work_tree(os.path.join(ws, "jq"))
builtin = os.path.join(ws, "jq", "src", "builtin.c")
with open(builtin) as f:
    lines = f.read().split("\n")
deep_pos = {"repo": "jq", "file": "src/deep.c", "path": deep, "line": 1, "col": 9,
            "text": "  int abc"}
positions = [deep_pos]
for line in (1030, 259):
    positions.append({"repo": "jq", "file": "src/builtin.c", "path": builtin, "line": line,
                      "col": 0, "text": lines[line]})
positions.append(dict(deep_pos))
result, tap = clients.run(editor, {"mode": "positions", "positions": positions,
                                   "settings": TEMP_SETTINGS}, tmp, ws)
if result is None:
    sys.exit(1)
fails = []
got = result.get("positions", [])
if len(got) != len(positions):
    fails.append("only %d of %d positions were tried" % (len(got), len(positions)))
answers = [r for _, r in exchanges(read_tap(tap), "textDocument/inlineCompletion")]
errors = [r for r in answers if r and "error" in r]
print("%d inline completions answered, %d errors" % (len(answers), len(errors)))
if errors:
    fails.append("errors: %s" % errors[:2])
if len(answers) < len(positions):
    fails.append("%d answers for %d positions" % (len(answers), len(positions)))
told = editor.told(result)
if told:
    fails.append("the user was told: %s" % told)
clients.finish(fails, tmp)

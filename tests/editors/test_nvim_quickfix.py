"""Neovim's quick fix on real code, as a user meets it: the plugin set up
with no options, `sculpt` from PATH (the recording tap), the shipped model,
copies of the vendored jq and click (git work trees). In each, one file has
a syntax error a user makes (a `;` dropped in jq's src/jv.c, a `:` dropped
in click's src/click/formatting.py); its diagnostic is the compiler's own
(gcc -fsyntax-only, Python's compile), published under another namespace
as clangd or pyright would. The cursor is put on it and
vim.lsp.buf.code_action() run; the user picks sculpt's fix from the menu.
Each file must then be its original again, byte for byte, and every request
answered without an error."""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import clients  # noqa: E402
from common import exchanges, read_tap, real_workspace, skip  # noqa: E402

# (repository, file, 1-based line, what is dropped from the line's end)
CASES = [("jq", "src/jv.c", 941, ";"), ("click", "src/click/formatting.py", 102, ":")]


def diagnostic(ws, repo, rel, text):
    """The compiler's first error in text as (0-based line, 0-based column,
    message)."""
    path = os.path.join(ws, repo, rel)
    if rel.endswith(".py"):
        try:
            compile(text, path, "exec")
        except SyntaxError as e:
            return e.lineno - 1, max(0, e.offset - 1), e.msg
        return None
    gcc = shutil.which("gcc")
    if not gcc:
        skip("gcc is not installed")
    r = subprocess.run([gcc, "-fsyntax-only", "-I", os.path.dirname(path), "-x", "c", "-"],
                       input=text, capture_output=True, text=True, cwd=os.path.dirname(path),
                       env=dict(os.environ, LC_ALL="C"))
    m = re.search(r"^<stdin>:(\d+):(\d+): error: (.*)$", r.stderr, re.M)
    return (int(m.group(1)) - 1, int(m.group(2)) - 1, m.group(3)) if m else None


def main():
    editor = clients.neovim()
    tmp = tempfile.mkdtemp(prefix="sculpt-nvim-quickfix-")
    atexit.register(shutil.rmtree, tmp, True)
    ws = real_workspace(tmp, ("jq", "click"))
    cases, originals, fails = [], {}, []
    for repo, rel, line, drop in CASES:
        path = os.path.join(ws, repo, rel)
        with open(path) as f:
            lines = f.read().split("\n")
        original = "\n".join(lines)
        stripped = lines[line - 1].rstrip()
        if not stripped.endswith(drop):
            fails.append(f"{rel}:{line} does not end with {drop!r}: {stripped!r}")
            continue
        lines[line - 1] = stripped[:-1]
        broken = "\n".join(lines)
        with open(path, "w") as f:
            f.write(broken)
        d = diagnostic(ws, repo, rel, broken)
        if not d:
            fails.append(f"{rel}: the compiler found no error")
            continue
        print(f"{repo}/{rel}: {d[0] + 1}:{d[1] + 1}: {d[2]}")
        originals[rel] = original
        cases.append({"path": path, "file": rel, "line": d[0], "col": d[1], "message": d[2],
                      "source": "compiler"})
    result, tap = clients.run(editor, {"mode": "quickfix", "cases": cases, "settings": {}}, tmp, ws)
    if result is None:
        sys.exit(1)
    seen = {c["file"]: c for c in result.get("cases", [])}
    for q in cases:
        got = seen.get(q["file"])
        if not got:
            fails.append(f"{q['file']}: not tried")
            continue
        fixes = [t for t in got["offered"] if t.startswith("sculpt: fix")]
        print(f"{q['file']}: offered {got['offered']}")
        if not fixes:
            fails.append(f"{q['file']}: no fix offered (the menu: {got['offered']})")
        elif got["text"] != originals[q["file"]]:
            fails.append(f"{q['file']}: after the fix the file is not its original")
    asked = exchanges(read_tap(tap), "textDocument/codeAction")
    bad = [resp for _, resp in asked if resp is None or "error" in resp]
    if len(asked) < len(cases) or bad:
        fails.append(f"{len(asked)} code action requests, not answered or errors: "
                     f"{[json.dumps(b)[:200] for b in bad[:3]]}")
    told = editor.told(result)
    if told:
        fails.append(f"the user was told of errors: {told}")
    clients.finish(fails, tmp)


main()

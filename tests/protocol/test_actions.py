"""Code actions are the edit engine's (edit/), the one `sculpt batch` uses
(issues 18 and 21), through a real `sculpt lsp` over pipes:

- the same site and seed give the same edit as `sculpt batch`: for a hole
  and for a diagnostic, with the planted model (its fill is known: after
  "abc" it writes the rest of the alphabet), and with the shipped model
  (model/default, no settings) on real files from tests/data/real, copied
  to a temporary folder with a hole or an error put in;
- a Python `...` that is meant (an abstract method, a Protocol's method, an
  @overload) or that is docstring text is never offered as "Fill hole",
  listed lazily or decoded; a plain `...` body is;
- on the real files, an offered edit leaves the file compiling (Python's
  compile(); gcc: fewer errors than before the fix); and batch's site for
  a `;` missing at a line's end, reported (as gcc does) at the next line's
  first token, is that line (the remote tests, whose candidates are
  chosen, check the LSP's fix there: tests/remote/test_lsp_actions.py).
The settings that make the two front doors decode alike: the LSP's
maxTokens (64 by default) is batch's --max-tokens, the LSP tries 3 seeds
(batch --candidates 3); both use a 1,024-token prompt and sample at 0.8."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from lspclient import (apply_edit, check, eq, gcc_errors, planted_model, python_parses,
                       run_tests, sculpt_bin, spawn)

SRC = os.environ.get("SCULPT_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REAL = os.path.abspath(os.path.join(SRC, "tests", "data", "real"))
DEFAULT = os.path.abspath(os.path.join(SRC, "model", "default"))
TMP = tempfile.mkdtemp(prefix="sculpt-actions-")
ALPHABET = "defghijklmnopqrstuvwxyz"
TIMEOUT = 180  # a decoded code action with the shipped model, on 2 loaded cores, under ASan
LAZY_CAPS = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}}


def uri_of(path):
    return "file://" + path


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def start(model=None, caps=None, settings=None):
    opts = {"modelPath": model} if model else {}
    opts.update(settings or {})
    s = spawn()
    s.start(caps or {}, initializationOptions=opts)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", timeout=TIMEOUT, what="sculpt/status ready")
    return s


def open_file(s, path, lang):
    with open(path) as f:
        text = f.read()
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri_of(path), "languageId": lang,
                                                       "version": 1, "text": text}})
    return text


def actions(s, path, line, c0=0, c1=None, diagnostics=(), trigger=1):
    c1 = c0 if c1 is None else c1
    r = s.request("textDocument/codeAction", {
        "textDocument": {"uri": uri_of(path)},
        "range": {"start": {"line": line, "character": c0}, "end": {"line": line, "character": c1}},
        "context": {"diagnostics": list(diagnostics), "triggerKind": trigger}}, TIMEOUT)
    check("result" in r, "codeAction answers", r)
    return r["result"]


def stats(s):
    return s.result("sculpt/test/stats", {})


def the_edit(action, path):
    edits = action["edit"]["changes"][uri_of(path)]
    eq(len(edits), 1, "one text edit")
    return edits[0]


def batch(path, mode, model=None, max_tokens=64):
    """`sculpt batch --json` on one file with the LSP's defaults; its one site."""
    cmd = [sculpt_bin(), "batch", "--json", "--no-progress", "--max-tokens", str(max_tokens),
           "--candidates", "3"] + mode + (["--model", model] if model else []) + [path]
    env = dict(os.environ)
    env.pop("SCULPT_MODEL", None)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    check(p.returncode in (0, 1), "batch ran", p.stderr)
    sites = json.loads(p.stdout)["sites"]
    eq(len(sites), 1, "batch found one site")
    return sites[0]


def diagnostics_file(path, diag):
    out = os.path.join(os.path.dirname(path), "diags.json")
    with open(out, "w") as f:
        json.dump([diag], f)
    return out


def same_edit(s, path, site, acts, kind_prefix):
    """The LSP's action of that kind and batch's site agree: both done with
    the same range and text, or neither offered nor done."""
    mine = [a for a in acts if a["title"].startswith("sculpt: " + kind_prefix)]
    if site["status"] != "done":
        eq(mine, [], "batch did not do the site (%s): no action either" % site.get("reason"))
        return False
    eq(len(mine), 1, "one %s action, as batch did the site" % kind_prefix)
    e = the_edit(mine[0], path)
    want = {"start": site["range"]["start"], "end": site["range"]["end"]}
    eq(e["range"], want, "the same range as batch")
    eq(e["newText"], site["text"], "the same text as batch")
    return True


def test_planted_same_edit_as_batch():
    model = planted_model()
    s = start(model)
    # A hole after "abc": the planted model writes the alphabet. The site is
    # the marker alone (an inline hole), as batch finds it.
    hole = os.path.join(TMP, "planted", "hole.py")
    write(hole, "def f():\n    return abcTODO(sculpt)\n\n\nprint(f())\n")
    text = open_file(s, hole, "python")
    acts = actions(s, hole, 1, 4)
    check(same_edit(s, hole, batch(hole, ["--holes"], model), acts, "fill hole"),
          "the hole was filled", acts)
    eq(apply_edit(text, the_edit(acts[0], hole)),
       "def f():\n    return abc" + ALPHABET + "\n\n\nprint(f())\n", "the planted fill")
    # A diagnostic at a stray `@` (an error in JavaScript; `$` is a letter of
    # its names): the site runs from it to its statement's end.
    fix = os.path.join(TMP, "planted", "fix.js")
    write(fix, "let v = abc@;\nconsole.log(v);\n")
    text = open_file(s, fix, "javascript")
    diag = {"range": {"start": {"line": 0, "character": 11}, "end": {"line": 0, "character": 12}},
            "severity": 1, "message": "Invalid character"}
    acts = actions(s, fix, 0, 11, diagnostics=[diag])
    site = batch(fix, ["--diagnostics", diagnostics_file(fix, diag)], model)
    check(same_edit(s, fix, site, acts, "fix"), "the diagnostic was fixed", acts, site)
    # The statement's `;` is in the site: JavaScript needs none at a line's end.
    eq(apply_edit(text, the_edit(acts[0], fix)), "let v = abc" + ALPHABET + "\nconsole.log(v);\n",
       "the planted fix")
    s.shutdown_and_exit()


def copy_real(repo, rel, name):
    """A copy of a real repository's folder holding rel, under TMP/name."""
    dst = os.path.join(TMP, name)
    shutil.copytree(os.path.join(REAL, repo, os.path.dirname(rel)), dst)
    return os.path.join(dst, os.path.basename(rel))


def test_default_model_same_edit_on_real_files():
    # The shipped model; a 16-token canvas (maxTokens, --max-tokens) keeps
    # the test fast, the rest are the defaults.
    s = start(settings={"maxTokens": 16})
    # click: a `return` line of a function becomes a hole.
    py = copy_real("click", "src/click/utils.py", "click")
    with open(py) as f:
        lines = f.read().split("\n")
    at = next(i for i, l in enumerate(lines) if re.match(r"^        return \w", l) and i > 40)
    lines[at] = "        TODO(sculpt)"
    write(py, "\n".join(lines))
    text = open_file(s, py, "python")
    acts = actions(s, py, at, 8)
    if same_edit(s, py, batch(py, ["--holes"], max_tokens=16), acts, "fill hole"):
        check(python_parses(apply_edit(text, the_edit(acts[0], py))), "the fill compiles")
    # jq: a `;` at a line's end goes; the diagnostic is where gcc puts it,
    # at the next line's first token.
    c = copy_real("jq", "src/util.c", "jq")
    with open(c) as f:
        lines = f.read().split("\n")
    at = next(i for i, l in enumerate(lines) if re.match(r"^  \w[\w ]* = [^;()]{1,30};$", l) and
              re.match(r"^  \w[\w ]* \*?\w+ = ", lines[i + 1]))
    lines[at] = lines[at][:-1]
    write(c, "\n".join(lines))
    text = open_file(s, c, "c")
    col = len(lines[at + 1]) - len(lines[at + 1].lstrip())
    diag = {"range": {"start": {"line": at + 1, "character": col},
                      "end": {"line": at + 1, "character": col + 1}},
            "severity": 1, "message": "expected ',' or ';' before '%s'" % lines[at + 1].split()[0]}
    acts = actions(s, c, at + 1, col, diagnostics=[diag])
    site = batch(c, ["--diagnostics", diagnostics_file(c, diag)], max_tokens=16)
    eq(site["range"]["start"]["line"], at, "batch's site is the line missing its `;`")
    if same_edit(s, c, site, acts, "fix") and shutil.which("gcc"):
        fixed = apply_edit(text, the_edit(acts[0], c))
        check(gcc_errors(fixed, os.path.dirname(c)) < gcc_errors(text, os.path.dirname(c)), "the fix lowers gcc's errors")
    s.shutdown_and_exit()


def test_quick_fix_for_errors_only():
    """A warning (severity 2), an information or a hint gets no quick fix
    (issue 43); the error gets one: click's `def close(self) -> None`
    without its `:`, the right line (which recovery once made the engine
    refuse as "changes code outside its site")."""
    s = start(settings={"maxTokens": 16})
    py = copy_real("click", "src/click/testing.py", "click-errors")
    with open(py) as f:
        orig = f.read()
    lines = orig.split("\n")
    check(lines[183] == "    def close(self) -> None:", "testing.py:184 as vendored", lines[183])
    lines[183] = lines[183][:-1]
    write(py, "\n".join(lines))
    text = open_file(s, py, "python")
    calls = stats(s)["engineCalls"]
    for sev in (2, 3, 4):
        diag = {"range": {"start": {"line": 183, "character": 27},
                          "end": {"line": 183, "character": 28}},
                "severity": sev, "message": "expected ':'"}
        titles = [a["title"] for a in actions(s, py, 183, 27, diagnostics=[diag])]
        eq(titles, [], "severity %d: no quick fix" % sev)
    eq(stats(s)["engineCalls"], calls, "and no engine call for them")
    diag = {"range": {"start": {"line": 183, "character": 27}, "end": {"line": 183, "character": 28}},
            "severity": 1, "message": "expected ':'"}
    acts = [a for a in actions(s, py, 183, 27, diagnostics=[diag])
            if a["title"].startswith("sculpt: fix:")]
    check(len(acts) == 1, "the error gets its fix", acts)
    if acts:
        eq(apply_edit(text, the_edit(acts[0], py)), orig, "the fix restores the file")
    s.shutdown_and_exit()


def test_rust_analyzer_fixes():
    """rust-analyzer's syntax errors name a token by its kind ("Syntax
    Error: expected SEMICOLON", at the end of the token before): the quick
    fix inserts it (anyhow's error.rs, vendored: the next line, `drop(...)`,
    leaves tree-sitter's recovery no `;` to insert); before, the message
    named nothing sculpt read, and there was no fix."""
    s = start(settings={"maxTokens": 16})
    rs = copy_real("anyhow", "src/error.rs", "anyhow")
    with open(rs) as f:
        orig = f.read()
    lines = orig.split("\n")
    check(lines[738] == "    let unerased_own = e.cast::<ErrorImpl<E>>();",
          "error.rs:739 as vendored", lines[738])
    lines[738] = lines[738][:-1]
    write(rs, "\n".join(lines))
    text = open_file(s, rs, "rust")
    end = len(lines[738])
    diag = {"range": {"start": {"line": 738, "character": end},
                      "end": {"line": 738, "character": end}},
            "severity": 1, "source": "rust-analyzer", "code": "syntax-error",
            "message": "Syntax Error: expected SEMICOLON"}
    acts = [a for a in actions(s, rs, 738, end, diagnostics=[diag])
            if a["title"].startswith("sculpt: fix:")]
    check(len(acts) == 1, "the error gets its fix", acts)
    if acts:
        eq(apply_edit(text, the_edit(acts[0], rs)), orig, "the fix restores the file")
    s.shutdown_and_exit()


ELLIPSES = '''import abc
from typing import Protocol, overload


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...


class Greeter(Protocol):
    def greet(self) -> str:
        ...


@overload
def parse(x: int) -> int:
    ...


def documented():
    """Example.

    ...
    """
    return 1


def todo():
    ...
'''


def test_no_fill_hole_for_a_meant_ellipsis():
    s = start(planted_model(), caps=LAZY_CAPS)
    path = os.path.join(TMP, "ellipsis", "shapes.py")
    write(path, ELLIPSES)
    open_file(s, path, "python")
    lines = ELLIPSES.split("\n")
    dots = [i for i, l in enumerate(lines) if l.strip() == "..."]
    eq(len(dots), 5, "the fixture's `...` lines")
    calls = stats(s)["engineCalls"]
    for i in dots[:-1]:
        col = lines[i].index("...")
        titles = [a["title"] for a in actions(s, path, i, col, trigger=2)]
        eq(titles, [], "line %d (%s): nothing listed" % (i + 1, lines[i].strip()))
        titles = [a["title"] for a in actions(s, path, i, col, trigger=1)]
        eq(titles, [], "line %d: nothing decoded" % (i + 1))
    eq(stats(s)["engineCalls"], calls, "and no engine call for any of them")
    # A body that is only `...`, in a plain function: a hole.
    i = dots[-1]
    titles = [a["title"] for a in actions(s, path, i, 4, trigger=2)]
    eq(titles, ["sculpt: fill hole"], "the plain `...` body is listed")
    s.shutdown_and_exit()


if __name__ == "__main__":
    try:
        run_tests([test_planted_same_edit_as_batch, test_default_model_same_edit_on_real_files,
                   test_no_fill_hole_for_a_meant_ellipsis, test_quick_fix_for_errors_only,
                   test_rust_analyzer_fixes])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

"""Code actions with the remote backend (a mock FIM server, mockfim.py),
whose candidates the test chooses, checked by the edit engine (edit/) as
`sculpt batch` checks them (issue 21):

- the quick fix for a `;` missing at a line's end, reported (as gcc does)
  at the next line's first token, asks the backend for that line's
  statement and offers the fix there, leaving the next statement alone;
- a candidate that tree-sitter accepts but Python does not compile (an
  unexpected indent) is never offered, nor one that changes code outside
  its site; applied, every offered edit leaves the file compiling (or
  with no more compiler errors than before);
- $/cancelRequest and an edit of the document stop the job and close the
  backend's connection; a backend that fails is said once (the site stops
  at the first failure)."""
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "protocol"))
sys.path.insert(0, HERE)

from lspclient import (CONTENT_MODIFIED, REQUEST_CANCELLED, apply_edit, check, eq,  # noqa: E402
                       expect_error, gcc_errors, python_parses, run_tests)
from mockfim import Mock, closed_port  # noqa: E402
import remotehelp  # noqa: E402  (no proxy may sit between: the mock is on 127.0.0.1)
from remotehelp import open_doc  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sculpt-remote-actions-")
MODEL = remotehelp.planted_model(TMP)


def start(url, **extra):
    return remotehelp.start(MODEL, {"url": url, "model": "mock-model", "timeoutMs": 5000,
                                    "maxTries": 1}, **extra)


def actions(s, uri, line, col, diagnostics=()):
    return s.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": line, "character": col},
                  "end": {"line": line, "character": col}},
        "context": {"diagnostics": list(diagnostics)}}, 30)


def edits_of(r, uri):
    check("result" in r, "code actions", r)
    return [e for a in r["result"] for e in a["edit"]["changes"][uri]]


def quick_fix(text, name, line, col, message, backend_text):
    """The one quick fix offered for a diagnostic at line:col (0-based) of
    text, the backend answering backend_text; (mock, server, fixed text)."""
    mock = Mock()
    mock.default = {"text": backend_text}
    s = start(mock.url)
    uri = "file:///w/" + name
    open_doc(s, text, uri=uri)
    diag = {"range": {"start": {"line": line, "character": col},
                      "end": {"line": line, "character": col + 1}},
            "severity": 1, "message": message}
    edits = edits_of(actions(s, uri, line, col, [diag]), uri)
    eq(len(edits), 1, "one fix")
    return mock, s, edits[0]


MISSING_SEMI = "int main(void) {\n  int a = 1\n  int b = 2;\n  return a + b;\n}\n"


def test_missing_semicolon_fixed_on_its_line():
    mock, s, e = quick_fix(MISSING_SEMI, "semi.c", 2, 2, "expected ',' or ';' before 'int'",
                           "int a = 1;")
    eq(e["range"], {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 11}},
       "the site is line 2's statement, `int a = 1`, not the next one")
    fixed = apply_edit(MISSING_SEMI, e)
    eq(fixed, MISSING_SEMI.replace("int a = 1\n", "int a = 1;\n"), "the fix")
    if shutil.which("gcc"):
        eq(gcc_errors(fixed), 0, "gcc errors after the fix")
    eq(len(mock.requests), 0, "the missing `;` is inserted: the backend is not asked")
    s.shutdown_and_exit()
    mock.stop()


STRAY = "int main(void) {\n  int a = 1$;\n  int b = 2;\n  return a + b;\n}\n"


def test_model_fix_sees_the_site_windows():
    # No token to insert (a stray `$`): the backend writes the fix, from
    # the text before the site and after it.
    mock, s, e = quick_fix(STRAY, "stray.c", 1, 11, "stray '$' in program", ";")
    eq(apply_edit(STRAY, e), STRAY.replace("1$;", "1;"), "the fix")
    check(mock.requests, "the backend was asked")
    body = mock.requests[0]["body"]
    check(body["prompt"].endswith("int main(void) {\n  int a = 1"), "the prompt ends at the site",
          body)
    check(body["suffix"].startswith("\n  int b = 2;"), "the next statement is in the suffix", body)
    s.shutdown_and_exit()
    mock.stop()


HOLE_PY = "def f():\n    TODO(sculpt)\n    return 1\n"


def test_no_harmful_fill_is_offered():
    mock = Mock()
    # Seed 0: an unexpected indent (tree-sitter parses it, Python does
    # not); seed 1: code that swallows the `return` after the site into a
    # string; seed 2: a sound fill.
    mock.script = [{"text": "x = 1\n        y = 2"}, {"text": "x = '''"}, {"text": "x = 1"}]
    mock.default = {"text": "x = 1"}
    s = start(mock.url)
    uri = "file:///w/hole.py"
    open_doc(s, HOLE_PY, uri=uri, lang="python")
    edits = edits_of(actions(s, uri, 1, 4), uri)
    eq([e["newText"] for e in edits], ["x = 1"], "only the sound fill is offered")
    for e in edits:
        check(python_parses(apply_edit(HOLE_PY, e)), "applied, it compiles", e)
    eq(len(mock.requests), 3, "three seeds asked")
    s.shutdown_and_exit()
    mock.stop()


def test_cancel_and_edit_stop_the_job():
    # The code action's job waits on the backend on the network lane;
    # $/cancelRequest answers -32800 at once and closes the connection, and
    # an edit of the document answers -32801 (stale), as for completions.
    mock = Mock()
    mock.default = {"delay": 10, "text": "late"}
    s = start(mock.url)
    uri = "file:///w/slow.c"
    text = "int f(void) {\n  TODO(sculpt)\n}\n"
    open_doc(s, text, uri=uri)
    params = {"textDocument": {"uri": uri},
              "range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 2}},
              "context": {"diagnostics": []}}
    rid = s.send_request("textDocument/codeAction", params)
    mock.wait_requests(1)
    t0 = time.monotonic()
    s.notify("$/cancelRequest", {"id": rid})
    expect_error(s.wait_response(rid, 5), REQUEST_CANCELLED, id=rid)
    check(time.monotonic() - t0 < 3, "cancelled at once, not after the mock's delay")
    mock.wait_closed(1, 5)
    eq(len(mock.requests), 1, "no other seed asked after the cancel")
    rid = s.send_request("textDocument/codeAction", params)
    mock.wait_requests(2)
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": [{"text": text + "\n"}]})
    expect_error(s.wait_response(rid, 5), CONTENT_MODIFIED, id=rid)
    mock.wait_closed(2, 5)
    s.shutdown_and_exit()
    mock.stop()


def test_backend_failure_is_said():
    s = start("http://127.0.0.1:%d/v1" % closed_port())
    uri = "file:///w/hole.c"
    open_doc(s, "int f(void) {\n  TODO(sculpt)\n}\n", uri=uri)
    r = actions(s, uri, 1, 2)
    check("error" in r and r["error"]["code"] == -32803, "a request failure", r)
    s.shutdown_and_exit()


if __name__ == "__main__":
    try:
        run_tests([test_missing_semicolon_fixed_on_its_line, test_model_fix_sees_the_site_windows,
                   test_no_harmful_fill_is_offered,
                   test_cancel_and_edit_stop_the_job, test_backend_failure_is_said])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

"""What a broken request, setting or document leaves behind (issue 38):

  - a lone UTF-16 surrogate (\\ud800, as JSON.stringify writes one) in
    didOpen's text opens the document with U+FFFD in its place, with one
    warning, instead of a -32700 that left it "not open" for good;
  - didChangeConfiguration naming a modelPath that does not exist keeps the
    loaded model serving, and says why once (window/showMessage);
  - a document of 70,000 unclosed brackets (on one line, or one a line),
    where tree-sitter 0.20.7 corrupted its heap freeing the tree: a
    completion, an edit and another completion are answered, and the
    server still answers after;
  - NUL bytes (\u0000) in documents and in the model's own middles: every
    copy keeps the bytes after one (a strndup stopped at it, and the repair
    read past the shorter copy);
  - a 600-byte bash file of "((" and 100 lines of "<<EOF": tree-sitter-bash
    serialized its heredocs past the runtime's 1,024-byte buffer, over the
    parser's stack pointer, and the server died of SIGSEGV on opening it
    (grammars/scanner_guard.c.in); it is answered before and after an edit
    that adds more heredocs;
  - 200,000 unclosed '(' in TypeScript, parsed, then 'f":' typed among
    them: the reparse merges two GLR stack versions that run level by
    level down the parentheses, and tree-sitter recurses once a level
    (stack.c, stack_node_add_link), past the worker thread's 8 MB stack
    (fuzz_syntax found it at 28,000 in a sanitized build); the parse now
    runs on a stack sized to its text (context/syntax.c), and both
    completions are answered."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, frame, planted_model, run_tests, spawn  # noqa: E402

MODEL = planted_model()


def start():
    s = spawn()
    s.start({}, initializationOptions={"modelPath": MODEL, "lengthCandidates": 4})
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="the model ready")
    return s


def inline(s, uri, line, character):
    return s.request("textDocument/inlineCompletion",
                     {"textDocument": {"uri": uri},
                      "position": {"line": line, "character": character},
                      "context": {"triggerKind": 1}}, timeout=60)


def logged(s, start, needle):
    with s.cv:
        return (any(needle in m.get("params", {}).get("message", "") for m in s.messages[start:]
                    if m.get("method") == "window/logMessage") or
                any(needle in line for line in s.stderr_lines))


def test_lone_surrogate():
    s = start()
    uri = "file:///w/surrogate.py"
    n = len(s.messages)
    # json.dumps writes the lone half as the escape \ud800, as a client's
    # JSON.stringify does; the frame is ASCII.
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                       "params": {"textDocument": {"uri": uri, "languageId": "python",
                                                   "version": 1,
                                                   "text": "s = '\ud800'\nx = 'abc"}}})
    check("\\ud800" in body, "the message carries the escape")
    s.send_raw(frame(body))
    s.sync()
    errors = [m for m in s.messages[n:] if "error" in m]
    eq(errors, [], "no error answers the didOpen")
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": uri}})
    eq(doc["text"], "s = '\ufffd'\nx = 'abc", "the document is open, U+FFFD for the half")
    resp = inline(s, uri, 1, 8)
    check("error" not in resp, "a completion in it is answered", resp)
    s.wait_for(lambda: logged(s, n, "surrogate"), timeout=10, what="one warning")
    # A well-formed pair is a character, untouched.
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange",
                       "params": {"textDocument": {"uri": uri, "version": 2},
                                  "contentChanges": [{"text": "s = '\U0001F600'\n"}]}})
    s.send_raw(frame(body))
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": uri}})
    eq(doc["text"], "s = '\U0001F600'\n", "a surrogate pair is its character")
    s.shutdown_and_exit()


def test_missing_model_path_keeps_the_model():
    s = start()
    uri = "file:///w/main.c"
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "c",
                                                       "version": 1, "text": "int abc;\n"}})
    before = inline(s, uri, 0, 7)
    check([i["insertText"] for i in before["result"]["items"]] == ["defghijklmnopqrstuvwxyz"],
          "the planted middle before the change", before)
    n = len(s.messages)
    missing = "/nonexistent/sculpt-model"
    s.notify("workspace/didChangeConfiguration",
             {"settings": {"sculpt": {"modelPath": missing}}})
    shown = s.wait_message(lambda m: m.get("method") == "window/showMessage", start=n,
                           what="window/showMessage", timeout=30)
    check(shown["params"]["type"] == 1 and missing in shown["params"]["message"] and
          "go on" in shown["params"]["message"], "the user is told why, once", shown)
    status = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                            m["params"]["state"] in ("ready", "error"), start=n,
                            what="the status after the failed load")
    eq(status["params"]["state"], "ready", "the loaded model is still ready")
    after = inline(s, uri, 0, 7)
    check("error" not in after and [i["insertText"] for i in after["result"]["items"]] ==
          ["defghijklmnopqrstuvwxyz"], "completions go on with the loaded model", after)
    s.sync()
    eq(sum(1 for m in s.messages[n:] if m.get("method") == "window/showMessage"), 1,
       "window/showMessage once")
    s.shutdown_and_exit()


def test_deep_brackets():
    s = start()
    for name, text in (("one_line", "(" * 70000 + "\n"), ("lines", "(\n" * 70000),
                       ("c_braces", "int f() " + "{" * 70000 + "\n")):
        ext = "c" if name.startswith("c_") else "py"
        uri = f"file:///w/{name}.{ext}"
        s.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "c" if ext == "c" else "python", "version": 1,
            "text": text}})
        last = text.count("\n")
        first = inline(s, uri, last, 0)
        check("result" in first or first.get("error", {}).get("code") != -32603,
              f"{name}: a completion is answered", str(first)[:200])
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": last, "character": 0},
                                          "end": {"line": last, "character": 0}},
                                "text": "x = 1\n"}]})
        second = inline(s, uri, last + 1, 0)
        check("result" in second or second.get("error", {}).get("code") != -32603,
              f"{name}: after an edit, another is answered", str(second)[:200])
        s.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    stats = s.result("sculpt/test/stats", {})
    check(isinstance(stats, dict), "the server still answers")
    eq(s.shutdown_and_exit(), 0, "a clean exit")


def test_deep_parens_edited():
    s = start()
    uri = "file:///w/deep.ts"
    n = 200000
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "typescript", "version": 1, "text": "(" * n + "\n"}})
    first = inline(s, uri, 1, 0)
    check("result" in first, "a completion in the file is answered", str(first)[:200])
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": n // 8},
                                      "end": {"line": 0, "character": n // 8}},
                            "text": 'f":'}]})
    second = inline(s, uri, 1, 0)
    check("result" in second, "after the edit, another is answered", str(second)[:200])
    stats = s.result("sculpt/test/stats", {})
    check(isinstance(stats, dict), "the server still answers")
    eq(s.shutdown_and_exit(), 0, "a clean exit")


def test_nul_bytes():
    s = start()
    texts = {"file:///w/nul_a.py": "import os\x00\x00\ndef f(a):\n    s = 'x\x00y'\n    return (\n",
             "file:///w/nul_b.py": "\x00" * 300 + "\nclass B:\n    def g(self):\n        pass\n",
             "file:///w/nul_c.c": "int f() {\n  char s[] = \"\x00\";\n  return {{\n"}
    for uri, text in texts.items():
        s.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "c" if uri.endswith(".c") else "python", "version": 1,
            "text": text}})
    for uri, text in texts.items():
        doc = s.result("sculpt/test/document", {"textDocument": {"uri": uri}})
        eq(doc.get("text"), text, f"{uri}: the document keeps its NUL bytes")
        lines = text.split("\n")
        for line in range(len(lines)):
            for character in sorted({0, len(lines[line])}):
                r = inline(s, uri, line, character)
                check("result" in r, f"{uri} {line}:{character}: a completion is answered",
                      str(r)[:200])
                p = s.request("sculpt/test/prompt", {"textDocument": {"uri": uri},
                                                     "position": {"line": line,
                                                                  "character": character}})
                check("result" in p, f"{uri} {line}:{character}: the prompt is answered",
                      str(p)[:200])
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}},
                                "text": "\x00\n"}]})
        r = inline(s, uri, 1, 0)
        check("result" in r, f"{uri}: after an edit with a NUL, a completion", str(r)[:200])
    eq(s.shutdown_and_exit(), 0, "a clean exit")


def test_many_heredocs():
    s = start()
    uri = "file:///w/heredocs.sh"
    text = "((" + "<<EOF\n" * 100
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "shellscript", "version": 1, "text": text}})
    r = inline(s, uri, 100, 0)
    check("result" in r, "a completion in the file is answered", str(r)[:200])
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 50, "character": 0},
                                      "end": {"line": 50, "character": 0}},
                            "text": "<<EOF\n" * 50}]})
    r = inline(s, uri, 150, 0)
    check("result" in r, "after an edit, another is answered", str(r)[:200])
    eq(s.shutdown_and_exit(), 0, "a clean exit")


if __name__ == "__main__":
    run_tests([test_lone_surrogate, test_missing_model_path_keeps_the_model, test_deep_brackets,
               test_deep_parens_edited, test_nul_bytes, test_many_heredocs])

"""The LSP's K/V sessions (model.h, sessions; setting kvReuse): a
completion goes through its document's session, so that the next request
in the same document reuses the K/V of the tokens that did not change
(data.kvReused > 0) instead of a full pass. With the shipped model
(model/default, 256 positions), over pipes:

- two requests in one document with a line typed above the cursor between
  them: the first is a full pass (kvReused 0: a session's first infill),
  the second reuses;
- a request in another document in between: the engine ran another
  session, so the next one in the first document is a full pass (model.h:
  "a full pass ... after the engine ran anything else");
- kvReuse false: every request is a full pass (kvReused 0).
- in a real file much longer than the prompt (click's core.py): the prompt
  is pinned (lsp/prompt.c, sc_cpl__local_prompt): the requests after the
  first keep its window start, snippets and suffix end, so that characters
  typed on a line change only the tokens at the cursor and the session
  reuses the rest (without the pin the window slid with every keystroke:
  2 of 17 requests reused); text inserted above the window moves it, so
  the next request builds afresh, and the one after is pinned again.
No timing is asserted: the speed is in docs/measurements-history.md."""
import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, run_tests, spawn  # noqa: E402

SRC = os.environ.get("SCULPT_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODEL = os.path.join(SRC, "model", "default")
TMP = tempfile.mkdtemp(prefix="sculpt-kv-")
atexit.register(shutil.rmtree, TMP, True)
TIMEOUT = 120  # one request of the shipped model, on 2 loaded cores, under ASan

A = os.path.join(TMP, "a.py")
B = os.path.join(TMP, "b.py")
with open(A, "w", encoding="utf-8") as f:
    f.write("import os\n\n\ndef add(a, b):\n    return a + b\n\n\n"
            "def scale(x, k):\n    y = x * k\n    z = y + 1\n    return z\n\n\n"
            "def name(p):\n    return os.path.basename(p)\n")
with open(B, "w", encoding="utf-8") as f:
    f.write("import sys\n\n\ndef main(argv):\n    n = len(argv)\n    return n\n\n\n"
            "if __name__ == '__main__':\n    main(sys.argv)\n")
LINE, CHAR = 9, 13  # A: the end of "    z = y + 1"
B_LINE, B_CHAR = 4, 17  # B: the end of "    n = len(argv)"


def uri(path):
    return "file://" + path


def start(**options):
    s = spawn()
    s.start({}, initializationOptions={"modelPath": MODEL, **options})
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] in ("ready", "error"), timeout=TIMEOUT,
                   what="model loaded")
    for path in (A, B):
        s.notify("textDocument/didOpen",
                 {"textDocument": {"uri": uri(path), "languageId": "python", "version": 1,
                                   "text": open(path, encoding="utf-8").read()}})
    return s


def complete(s, path, line, char):
    """An invoked request (no debounce, nothing cached from the typing); its data."""
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri(path)}, "position": {"line": line, "character": char},
                   "context": {"triggerKind": 1}}, TIMEOUT)
    check("error" not in r, "an answer, not an error", r.get("error"))
    data = r["result"]["data"]
    check("skipped" not in data and not data.get("cached"), "the model ran", data)
    check(isinstance(data.get("kvReused"), int), "data carries kvReused", data)
    return data


def edit(s, path, version, line):
    """A small edit: a line typed at `line` (a few tokens), above the cursor."""
    s.notify("textDocument/didChange",
             {"textDocument": {"uri": uri(path), "version": version},
              "contentChanges": [{"range": {"start": {"line": line, "character": 0},
                                            "end": {"line": line, "character": 0}},
                                  "text": "    w = 3\n"}]})


def test_reuse_in_one_document():
    s = start()
    first = complete(s, A, LINE, CHAR)
    eq(first["kvReused"], 0, "a session's first infill is a full pass")
    edit(s, A, 2, LINE)
    second = complete(s, A, LINE + 1, CHAR)
    check(second["kvReused"] > 0, "the next request in the document reuses K/V", second)
    # Another document's request in between: the engine's cache then holds
    # that session's K/V, so the next one here is a full pass.
    other = complete(s, B, B_LINE, B_CHAR)
    eq(other["kvReused"], 0, "another document's first request is a full pass")
    edit(s, A, 3, LINE)
    back = complete(s, A, LINE + 2, CHAR)
    eq(back["kvReused"], 0, "after another document ran, a full pass")
    edit(s, A, 4, LINE)
    again = complete(s, A, LINE + 3, CHAR)
    check(again["kvReused"] > 0, "and then reuse again", again)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_kv_reuse_off():
    s = start(kvReuse=False)
    eq(complete(s, A, LINE, CHAR)["kvReused"], 0, "kvReuse false: a full pass")
    edit(s, A, 2, LINE)
    eq(complete(s, A, LINE + 1, CHAR)["kvReused"], 0, "kvReuse false: still a full pass")
    # On again through the settings: the session's first infill, then reuse.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"kvReuse": True}}})
    edit(s, A, 3, LINE)
    eq(complete(s, A, LINE + 2, CHAR)["kvReused"], 0, "the first with a session is full")
    edit(s, A, 4, LINE)
    check(complete(s, A, LINE + 3, CHAR)["kvReused"] > 0, "kvReuse true again: reuse")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_more_documents_than_sessions():
    # The server keeps a session for 8 documents (the least recently used
    # freed): a request in each of 10, then A again (its session was
    # evicted and is made anew), then A after an edit reuses. Under ASan the
    # evicted and the remaining sessions are freed, none leaked.
    s = start()
    paths = [A, B]
    for k in range(8):
        p = os.path.join(TMP, "more%d.py" % k)
        with open(p, "w", encoding="utf-8") as f:
            f.write(open(B, encoding="utf-8").read())
        s.notify("textDocument/didOpen",
                 {"textDocument": {"uri": uri(p), "languageId": "python", "version": 1,
                                   "text": open(p, encoding="utf-8").read()}})
        paths.append(p)
    for p in paths:
        line, char = (LINE, CHAR) if p == A else (B_LINE, B_CHAR)
        eq(complete(s, p, line, char)["kvReused"], 0, "each document's first request is full")
    edit(s, A, 2, LINE)
    eq(complete(s, A, LINE + 1, CHAR)["kvReused"], 0, "after nine other documents, a full pass")
    edit(s, A, 3, LINE)
    check(complete(s, A, LINE + 2, CHAR)["kvReused"] > 0, "then reuse in the document again")
    eq(s.shutdown_and_exit(), 0, "exit code")


CLICK = os.path.join(SRC, "tests", "data", "real", "click")
CORE = os.path.join(CLICK, "src", "click", "core.py")


def test_pinned_prompt_in_a_long_file():
    lines = open(CORE, encoding="utf-8").read().split("\n")
    at = 1542  # 0-based: the line "        if prog_name is None:" in Command.main
    check(lines[at].strip() == "if prog_name is None:", "the vendored file as expected", lines[at])
    text = "\n".join(lines[:at] + [""] + lines[at:])
    s = spawn(env={"XDG_CACHE_HOME": os.path.join(TMP, "cache")})
    s.start({}, rootUri=uri(CLICK), initializationOptions={"modelPath": MODEL})
    u = uri(CORE)
    s.notify("textDocument/didOpen", {"textDocument": {"uri": u, "languageId": "python",
                                                       "version": 1, "text": text}})
    # The model and the index in: a prompt built while the index is still
    # being built is rebuilt once it is in (its snippets may differ).
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready" and
                   m["params"].get("index", {}).get("state") == "ready", timeout=TIMEOUT,
                   what="the model and the index ready")
    typed, version, datas = "        x = ", 1, []
    for k, ch in enumerate(typed):
        version += 1
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": u, "version": version},
            "contentChanges": [{"range": {"start": {"line": at, "character": k},
                                          "end": {"line": at, "character": k}}, "text": ch}]})
        if k >= 7:  # from the first non-blank character on
            datas.append(complete_at(s, u, at, k + 1))
    check(len(datas) >= 4, "requests made", len(datas))
    eq(datas[0]["promptPinned"], False, "the first request builds the prompt afresh")
    pinned = [d for d in datas[1:] if d["promptPinned"]]
    reused = [d for d in datas[1:] if d["kvReused"] > 0]
    eq(len(pinned), len(datas) - 1, "every later request keeps the pinned prompt")
    # (a repair between two requests reuses too, and leaves its K/V where
    # the next request finds them: model/engine.c, session_window)
    eq(len(reused), len(datas) - 1, "and reuses K/V: %r" % [d["kvReused"] for d in datas])
    # A line inserted at the top of the file moves the window's text: the
    # pin no longer matches, so the prompt is built afresh, then pinned.
    version += 1
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": u, "version": version},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                      "end": {"line": 0, "character": 0}},
                            "text": "# a comment line, inserted\n"}]})
    moved = complete_at(s, u, at + 1, len(typed))
    eq(moved["promptPinned"], False, "text moved above the window: built afresh")
    version += 1
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": u, "version": version},
        "contentChanges": [{"range": {"start": {"line": at + 1, "character": len(typed)},
                                      "end": {"line": at + 1, "character": len(typed)}},
                            "text": "1"}]})
    again = complete_at(s, u, at + 1, len(typed) + 1)
    eq(again["promptPinned"], True, "then pinned again")
    eq(s.shutdown_and_exit(), 0, "exit code")


def complete_at(s, u, line, char):
    """An invoked request at a position of the document u names, with the
    suggestion cache emptied first (a decoding setting changed and changed
    back), so that the model runs; its data."""
    for mt in (63, 64):
        s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"maxTokens": mt}}})
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": u}, "position": {"line": line, "character": char},
                   "context": {"triggerKind": 1}}, TIMEOUT)
    check("error" not in r, "an answer, not an error", r.get("error"))
    data = r["result"]["data"]
    check("skipped" not in data, "the model ran", data)
    return data


if __name__ == "__main__":
    run_tests([test_reuse_in_one_document, test_kv_reuse_off, test_more_documents_than_sessions,
               test_pinned_prompt_in_a_long_file])

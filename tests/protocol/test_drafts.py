"""Drafts through the language server (settings drafts and draftThreshold;
context/draft.c, model.h sc_draft) with the planted byte-level model, which
after "...abc" writes "defghijklmnopqrstuvwxyz" one letter a pass. Every
answer's data says what drafting did: drafts.offered and .sources (best
first), drafted, accepted and rejected tokens, and tokensPerPass.

  - the document's own text gives a draft the model accepts, which here ends
    at the ';' after the cursor: the middle is the draft, in one pass;
  - typing that leaves a shown suggestion offers its rest first;
  - the workspace's line table drafts a line from another file;
  - drafts off, or a threshold of 1 with a draft the model rejects, give
    the model's own middle; a bad setting is ignored with a warning.
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, planted_model, run_tests, spawn  # noqa: E402

MODEL = planted_model()
ALPHABET = "defghijklmnopqrstuvwxyz"


def start(settings=None, root=None):
    # Every canvas length the plan offers, so that the planted middle fits.
    opts = {"modelPath": MODEL, "lengthCandidates": 4}
    opts.update(settings or {})
    s = spawn()
    extra = {"rootUri": "file://" + root} if root else {}
    s.start({}, initializationOptions=opts, **extra)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="ready")
    return s


def open_doc(s, uri, text, lang="c"):
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": lang,
                                                       "version": 1, "text": text}})


def change(s, uri, version, text):
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                        "contentChanges": [{"text": text}]})


def inline(s, uri, line, character):
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
                   "context": {"triggerKind": 1}}, 30)
    res = r["result"]
    items = res["items"]
    return (items[0]["insertText"] if items else ""), res["data"]


def test_document_draft_accepted():
    s = start()
    uri = "file:///w/a.c"
    open_doc(s, uri, "int abcdefghij;\nint abc;\n")
    text, data = inline(s, uri, 1, 7)
    d = data["drafts"]
    check(d["offered"] >= 1 and d["sources"][0] == "prompt", "a draft from the document", d)
    # "defghij" runs into the ';' after the cursor: accepted whole in the
    # first pass, it ends the middle there.
    eq(text, "defghij", "the drafted middle")
    # (Each of the plan's lengths takes the draft; the counts add up over
    # them, and so do the tokens a pass commits.)
    check(d["accepted"] == d["drafted"] and d["accepted"] % 7 == 0 and data["steps"] == 1 and
          data["canvas"] == 7, "one pass, the canvas set by the draft", data)
    check(data["tokensPerPass"] == d["accepted"], "every token in the one pass", data)
    s.shutdown_and_exit()
    # Off: the model's own middle, a letter a pass.
    s = start({"drafts": False})
    open_doc(s, uri, "int abcdefghij;\nint abc;\n")
    text, data = inline(s, uri, 1, 7)
    eq(text, ALPHABET, "drafts off")
    check(data["drafts"]["offered"] == 0 and data["drafts"]["drafted"] == 0 and
          data["steps"] > 20, "nothing drafted, a letter a pass", data)
    s.shutdown_and_exit()


def test_threshold_and_bad_settings():
    uri = "file:///w/b.c"
    doc = "int abcxyz;\nint abc;\n"
    # At 0 every drafted token passes, the wrong one too; the default
    # rejects it and the model writes its own letters.
    s = start({"draftThreshold": 0})
    open_doc(s, uri, doc)
    text, data = inline(s, uri, 1, 7)
    eq(text, "xyz", "threshold 0 keeps the wrong draft")
    s.shutdown_and_exit()
    s = start({"draftThreshold": 7, "drafts": "yes"})
    open_doc(s, uri, doc)
    text, data = inline(s, uri, 1, 7)
    eq(text, ALPHABET, "the model's middle")
    check(data["drafts"]["rejected"] >= 1 and data["drafts"]["accepted"] == 0,
          "the wrong draft rejected", data)
    logs = [m["params"]["message"] for m in s.messages if m.get("method") == "window/logMessage"]
    check(any("draftThreshold must be" in m for m in logs), "a bad threshold is warned about")
    check(any("drafts must be true or false" in m for m in logs), "a bad drafts value too")
    # Changed at run time through didChangeConfiguration.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"draftThreshold": 0}}})
    text, data = inline(s, uri, 1, 7)
    eq(text, "xyz", "the new threshold applies (and the cache was cleared)")
    s.shutdown_and_exit()


def test_previous_suggestion_first():
    s = start({"repair": False})
    uri = "file:///w/c.c"
    open_doc(s, uri, "int abc\n")
    text, _ = inline(s, uri, 0, 7)
    eq(text, ALPHABET, "shown")
    # The user types 'd' then 'd' again: the typing left the suggestion, its
    # rest ("fgh...") is offered first (the model, after "dd", rejects it).
    change(s, uri, 2, "int abcdd\n")
    text, data = inline(s, uri, 0, 9)
    d = data["drafts"]
    check(d["sources"] and d["sources"][0] == "previous", "the previous suggestion first", d)
    check(d["rejected"] >= 1 and text.startswith("efg"), "the model's letters", (text, d))
    s.shutdown_and_exit()


def test_workspace_line_table():
    root = tempfile.mkdtemp(prefix="sculpt-drafts-ws-")
    atexit.register(shutil.rmtree, root, True)
    subprocess.run(["git", "init", "-q", root], check=True)
    # Other names around it keep other.py's chunk out of the prompt's
    # snippets (below their similarity threshold): the draft must come from
    # the line table.
    filler = "".join("v%d = w%d + u%d\n" % (i, i, i) for i in range(30))
    with open(os.path.join(root, "other.py"), "w") as f:
        f.write(filler + "def load(path):\n    with open(path) as f:\n        x = abcdefghij\n"
                + filler.replace("v", "k"))
    with open(os.path.join(root, "main.py"), "w") as f:
        f.write("")
    s = start(root=root)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   (m["params"].get("index") or {}).get("state") == "ready", what="index ready")
    uri = "file://" + os.path.join(root, "main.py")
    open_doc(s, uri, "def other(p):\n    with open(path) as f:\n        x = abc\n", "python")
    text, data = inline(s, uri, 2, 15)
    d = data["drafts"]
    check("workspace" in d["sources"], "a line from another file", d)
    check(d["accepted"] >= 7, "accepted", d)
    check(text.startswith("defghij"), "the middle", text)
    s.shutdown_and_exit()
    subprocess.run(["rm", "-rf", root])


if __name__ == "__main__":
    run_tests([test_document_draft_accepted, test_threshold_and_bad_settings,
               test_previous_suggestion_first, test_workspace_line_table])

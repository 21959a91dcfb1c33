"""Review regressions for repository context through the LSP daemon, read
back with the sculpt/test/prompt hook:
(a) an open document's index entry follows its unsaved buffer, so its
    definitions are cut from the buffer (they were cut from the file on
    disk at the buffer's byte offsets: missing or another text);
(b) a buffer update made while the background index is still being built
    is not lost when the new index is installed;
(c) a recent-edit range that a later multi-line delete removes shrinks to
    the delete's line (it kept its old end, pointing at lines never
    edited)."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "protocol"))
from lspclient import check, run_tests, spawn  # noqa: E402

if not shutil.which("git"):
    print("skip: git is needed to list the workspace")
    sys.exit(77)

TMP = tempfile.mkdtemp(prefix="sculpt-lsp-review-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), TMP],
               check=True, capture_output=True)
MODEL = os.path.join(TMP, "planted-successor-shifted-bytes")
BUDGET = 16384

MAIN = ("def settle(ledger_entries):\n"
        "    total = buffered_helper(ledger_entries)\n"
        "    \n")
CURSOR = {"line": 2, "character": 4}
DISK_LIB = "def old_helper():\n    return 1\n"
# The unsaved buffer: the new definition sits past the end of the file on
# disk, so bytes taken from disk cannot hold it.
BUF_LIB = (DISK_LIB + "".join("pad_%d = %d\n" % (i, i) for i in range(30)) +
           "def buffered_helper(entries):\n    return sum(e.amount for e in entries)\n")


def make_repo(name):
    root = os.path.join(TMP, name)
    os.makedirs(root)
    subprocess.run(["git", "init", "-q", root], check=True)
    for rel, text in (("main.py", MAIN), ("lib.py", DISK_LIB)):
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    return root


def open_doc(s, u, text):
    s.notify("textDocument/didOpen", {"textDocument": {"uri": u, "languageId": "python",
                                                       "version": 1, "text": text}})


def buffer_edit(s, u):
    # Replaces the whole buffer (a full-text change) with BUF_LIB.
    s.notify("textDocument/didChange", {"textDocument": {"uri": u, "version": 2},
                                        "contentChanges": [{"text": BUF_LIB}]})


def prompt(s, u):
    return s.result("sculpt/test/prompt", {"textDocument": {"uri": u}, "position": CURSOR,
                                           "budget": BUDGET}, timeout=60)


def helper_snippet(p):
    return [x for x in p["snippets"] if x["name"] == "buffered_helper"]


def wait_index(s):
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"].get("index", {}).get("state") == "ready", what="the index",
                   timeout=60)


def test_definition_from_the_unsaved_buffer():
    root = make_repo("buffer")
    s = spawn()
    s.start({}, rootUri="file://" + root, initializationOptions={"modelPath": MODEL})
    wait_index(s)
    main, lib = "file://" + os.path.join(root, "main.py"), "file://" + os.path.join(root, "lib.py")
    open_doc(s, main, MAIN)
    open_doc(s, lib, DISK_LIB)
    buffer_edit(s, lib)  # the first edit refreshes lib.py's entry from the buffer
    sn = helper_snippet(prompt(s, main))
    check(sn and sn[0]["path"] == "lib.py" and "def buffered_helper(entries)" in sn[0]["text"],
          "the buffer's definition, cut from the buffer", sn)
    s.shutdown_and_exit()


def test_buffer_update_while_indexing():
    root = make_repo("slow")
    s = spawn(env={"SCULPT_TEST_INDEX_PAUSE_MS": "2500"})
    s.start({}, rootUri="file://" + root, initializationOptions={"modelPath": MODEL})
    main, lib = "file://" + os.path.join(root, "main.py"), "file://" + os.path.join(root, "lib.py")
    open_doc(s, main, MAIN)
    open_doc(s, lib, DISK_LIB)
    buffer_edit(s, lib)  # refreshed now, while the index is still held up
    s.sync()
    check(not any(m.get("method") == "sculpt/status" and
                  m["params"].get("index", {}).get("state") == "ready" for m in s.messages),
          "the edit came before the index was in")
    wait_index(s)
    sn = helper_snippet(prompt(s, main))
    check(sn and sn[0]["path"] == "lib.py" and "def buffered_helper(entries)" in sn[0]["text"],
          "the edit made while indexing is in the new index", sn)
    s.shutdown_and_exit()


def test_recent_edit_shrinks_on_delete():
    root = make_repo("edits")
    s = spawn()
    s.start({}, rootUri="file://" + root, initializationOptions={"modelPath": MODEL})
    wait_index(s)
    main, other = ("file://" + os.path.join(root, "main.py"),
                   "file://" + os.path.join(root, "scratch.py"))
    text = "".join("value_%d = compute(%d)\n" % (i, i) for i in range(60))
    open_doc(s, main, MAIN)
    open_doc(s, other, text)
    # Lines 20-22 edited, then lines 10..30 deleted (joined into line 10).
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": other, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 20, "character": 0},
                                      "end": {"line": 23, "character": 0}},
                            "text": "edited_a = 1\nedited_b = 2\nedited_c = 3\n"}]})
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": other, "version": 3},
        "contentChanges": [{"range": {"start": {"line": 10, "character": 0},
                                      "end": {"line": 31, "character": 0}},
                            "text": "joined = 0\n"}]})
    p = prompt(s, main)
    ed = [x for x in p["snippets"] if x["reason"] == "recent edit" and x["path"] == "scratch.py"]
    check(ed, "a recent edit in scratch.py", [(x["path"], x["reason"]) for x in p["snippets"]])
    # Lines 10-11 are what is left of the edits (the inserted line and the one
    # after it); 2 lines of context either side.
    check(ed[0]["startLine"] == 8 and ed[0]["endLine"] == 13 and "joined = 0" in ed[0]["text"],
          "the range shrank to the deleted lines' remains",
          (ed[0]["startLine"], ed[0]["endLine"], ed[0]["text"]))
    s.shutdown_and_exit()


try:
    run_tests([test_definition_from_the_unsaved_buffer, test_buffer_update_while_indexing,
               test_recent_edit_shrinks_on_delete])
finally:
    shutil.rmtree(TMP, ignore_errors=True)

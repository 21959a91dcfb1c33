"""Repository context through the LSP daemon, read back with the
sculpt/test/prompt hook (the prompt a completion would be built from):
(a) after didSave of a file changed on disk, its new definition is
retrieved; (b) workspace/didChangeWatchedFiles deleting a file removes its
definitions (and creating it adds them back), and a folder's events do the
same for every file under it; (c) a chunk of another open,
unsaved buffer appears as "similar chunk"; (d) an edit in another document
appears as "recent edit". Also: file watching is registered dynamically
when the client supports it."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "protocol"))
from lspclient import check, run_tests, spawn  # noqa: E402

if not shutil.which("git"):
    print("skip: git is needed to list the workspace")
    sys.exit(77)

TMP = tempfile.mkdtemp(prefix="sculpt-lsp-context-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), TMP],
               check=True, capture_output=True)
MODEL = os.path.join(TMP, "planted-successor-shifted-bytes")
ROOT = os.path.join(TMP, "repo")
# The planted model's tokenizer is byte-level: a large budget leaves room
# for snippets (a quarter of it).
BUDGET = 16384


def write(rel, text):
    p = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


def uri(rel):
    return "file://" + os.path.join(ROOT, rel)


MAIN = ("def settle(ledger_entries, audit_trail):\n"
        "    total = fresh_helper(ledger_entries) + gone_helper(audit_trail)\n"
        "    for entry in ledger_entries:\n"
        "        post_balance(entry.account, entry.amount, audit_trail)\n"
        "        \n")
CURSOR = {"line": 4, "character": 8}
NUMBERS = "".join("%d\n" % i for i in range(40))
OTHER = (NUMBERS + "def reconcile_unsaved(ledger_entries, audit_trail):\n"
         "    for entry in ledger_entries:\n"
         "        post_balance(entry.account, entry.amount, audit_trail)\n"
         "        audit_trail.append(entry.account)\n" + NUMBERS)


def prompt(s):
    return s.result("sculpt/test/prompt", {"textDocument": {"uri": uri("main.py")},
                                           "position": CURSOR, "budget": BUDGET}, timeout=60)


def names(p):
    return {x["name"]: x for x in p["snippets"] if x["name"]}


def test_context_follows_the_workspace():
    os.makedirs(ROOT)
    subprocess.run(["git", "init", "-q", ROOT], check=True)
    write("main.py", MAIN)
    write("lib.py", "def old_helper():\n    return 1\n")
    write("gone.py", "def gone_helper(x):\n    return x\n")
    s = spawn()
    caps = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
    s.start(caps, rootUri="file://" + ROOT,
            initializationOptions={"modelPath": MODEL, "lengthCandidates": 4})
    reg = s.wait_message(lambda m: m.get("method") == "client/registerCapability",
                         what="client/registerCapability")
    r0 = reg["params"]["registrations"][0]
    check(r0["method"] == "workspace/didChangeWatchedFiles" and
          r0["registerOptions"]["watchers"][0]["globPattern"] == "**/*",
          "file watching registered for **/*", reg)
    s.respond(reg["id"], None)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="the model", timeout=60)
    # The index is built in the background; sculpt/status says when it is in.
    st = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                        m["params"].get("index", {}).get("state") == "ready",
                        what="the index", timeout=60)
    check(st["params"]["index"]["files"] == 3, "three files indexed", st["params"])
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri("main.py"), "languageId":
                                                       "python", "version": 1, "text": MAIN}})
    p = prompt(s)
    check(p["workspace"], "the index is built", p)
    n = names(p)
    check("gone_helper" in n and n["gone_helper"]["path"] == "gone.py", "gone_helper indexed", n)
    check("fresh_helper" not in n, "fresh_helper not there yet", n)

    # (a) lib.py changes on disk; until it is saved (or watched) the index
    # does not know fresh_helper; after didSave it does.
    write("lib.py", "def old_helper():\n    return 1\n\ndef fresh_helper(xs):\n    return len(xs)\n")
    check("fresh_helper" not in names(prompt(s)), "a change on disk alone is not seen")
    s.notify("textDocument/didSave", {"textDocument": {"uri": uri("lib.py")}})
    n = names(prompt(s))
    check("fresh_helper" in n and n["fresh_helper"]["path"] == "lib.py" and
          "def fresh_helper" in n["fresh_helper"]["text"], "didSave: the new definition", n)

    # (b) gone.py is deleted: its definitions go. It is then written again
    # without an event (the snippet text is read from disk, so only the
    # index can keep it out), and a "created" event brings it back.
    os.remove(os.path.join(ROOT, "gone.py"))
    s.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri("gone.py"), "type": 3}]})
    write("gone.py", "def gone_helper(x):\n    return x\n")
    check("gone_helper" not in names(prompt(s)), "deleted: its definitions are gone")
    s.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri("gone.py"), "type": 1}]})
    check("gone_helper" in names(prompt(s)), "created: back again")
    # A created file that .gitignore covers is not indexed.
    write(".gitignore", "secret.py\n")
    write("secret.py", "def post_balance(a, b, c):\n    pass\n")
    s.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri("secret.py"), "type": 1}]})
    check("post_balance" not in names(prompt(s)), "an ignored new file is not indexed")
    # Folders: editors report a folder created, moved or deleted as one
    # event for the folder. gone.py moves into pkg/ (reported as the file
    # deleted and the folder created); then pkg is reported deleted while
    # its file stays on disk, so only the index can drop it.
    os.makedirs(os.path.join(ROOT, "pkg"))
    os.replace(os.path.join(ROOT, "gone.py"), os.path.join(ROOT, "pkg", "gone.py"))
    s.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri("gone.py"), "type": 3},
                                                             {"uri": uri("pkg"), "type": 1}]})
    n = names(prompt(s))
    check("gone_helper" in n and n["gone_helper"]["path"] == "pkg/gone.py",
          "a folder created: its files are indexed", n.get("gone_helper"))
    s.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri("pkg"), "type": 3}]})
    check("gone_helper" not in names(prompt(s)), "a folder deleted: its files' definitions go")
    s.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri("pkg"), "type": 1}]})
    check("gone_helper" in names(prompt(s)), "the folder back: its files are back")

    # (c) another open buffer, never saved, holds a near-duplicate block.
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri("scratch.py"), "languageId":
                                                       "python", "version": 1, "text": OTHER}})
    p = prompt(s)
    sim = [x for x in p["snippets"] if x["reason"] == "similar chunk"]
    check(sim and sim[0]["path"] == "scratch.py" and "reconcile_unsaved" in sim[0]["text"] and
          0.2 <= sim[0]["score"] <= 1.0, "the open buffer's similar chunk",
          [(x["path"], x["reason"], x["score"]) for x in p["snippets"]])

    # (d) an edit in scratch.py, far from that chunk, is a recent edit.
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": uri("scratch.py"), "version": 2},
        "contentChanges": [{"range": {"start": {"line": 80, "character": 0},
                                      "end": {"line": 80, "character": 0}},
                            "text": "edited_marker = compute(7)\n"}]})
    p = prompt(s)
    ed = [x for x in p["snippets"] if x["reason"] == "recent edit"]
    check(ed and ed[0]["path"] == "scratch.py" and "edited_marker = compute(7)" in ed[0]["text"] and
          ed[0]["startLine"] <= 80 <= ed[0]["endLine"], "the recent edit",
          [(x["path"], x["reason"], x["startLine"]) for x in p["snippets"]])
    reasons = [x["reason"] for x in p["snippets"]]
    check(reasons.index("recent edit") < reasons.index("similar chunk"),
          "recent edits come before similar chunks", reasons)
    s.shutdown_and_exit()


def test_requests_served_while_indexing():
    # The index runs on its own worker: with it held up (a test hook pauses
    # it 4 s), a completion is answered at once on the request worker, and
    # the context arrives when the index is in. Exit does not wait for it.
    root = os.path.join(TMP, "slow")
    os.makedirs(root)
    subprocess.run(["git", "init", "-q", root], check=True)
    with open(os.path.join(root, "lib.py"), "w") as f:
        f.write("def slow_helper(x):\n    return x\n")
    text = "y = slow_helper(2) + abc\n"
    with open(os.path.join(root, "app.py"), "w") as f:
        f.write(text)
    s = spawn(env={"SCULPT_TEST_INDEX_PAUSE_MS": "4000"})
    s.start({}, rootUri="file://" + root,
            initializationOptions={"modelPath": MODEL, "lengthCandidates": 4})
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="the model", timeout=60)
    t0 = time.monotonic()
    app = "file://" + os.path.join(root, "app.py")
    s.notify("textDocument/didOpen", {"textDocument": {"uri": app, "languageId": "python",
                                                       "version": 1, "text": text}})
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": app}, "position": {"line": 0, "character": 24},
                   "context": {"triggerKind": 1}}, 30)
    check("result" in r and r["result"]["items"], "answered while the index is built", r)
    check(time.monotonic() - t0 < 3.0, "without waiting for the index",
          time.monotonic() - t0)
    check(not any(m.get("method") == "sculpt/status" and
                  m["params"].get("index", {}).get("state") == "ready" for m in s.messages),
          "the index was indeed not in yet")
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"].get("index", {}).get("state") == "ready", what="the index",
                   timeout=30)
    p = s.result("sculpt/test/prompt", {"textDocument": {"uri": app},
                                        "position": {"line": 0, "character": 24},
                                        "budget": BUDGET}, timeout=60)
    check("slow_helper" in names(p), "then the context has it", names(p).keys())
    s.shutdown_and_exit()
    # Exit while a long index is still paused: prompt.
    s = spawn(env={"SCULPT_TEST_INDEX_PAUSE_MS": "60000"})
    s.start({}, rootUri="file://" + root, initializationOptions={"modelPath": MODEL})
    t0 = time.monotonic()
    s.shutdown_and_exit()
    check(time.monotonic() - t0 < 5.0, "exit does not wait for the index",
          time.monotonic() - t0)


try:
    run_tests([test_context_follows_the_workspace, test_requests_served_while_indexing])
finally:
    shutil.rmtree(TMP, ignore_errors=True)

"""What the LSP says about the workspace index behind repository context,
on a vendored real repository (tests/data/real/jq, copied to a temporary
git work tree), the shipped model, no settings unless a test needs one,
and the index kept on disk in a temporary XDG_CACHE_HOME (never the
user's cache):

- restart: a second server on the unchanged tree starts warm. Its
  sculpt/status says every file came from the index kept on disk
  (index.cached == index.files), the first server's did not; a file changed
  on disk and reported (didChangeWatchedFiles) during the first session is
  kept at its exit, so the second reuses it too and serves its new
  definition from the kept index; an unsaved edit in the second session
  does not cost a third start its file.
- partial: a bound that leaves files out (indexMaxFiles) shows in
  sculpt/status (index.partial) and in each completion's data
  (partialIndex: true); the whole tree shows neither.
- indexing: a completion asked while the index is still being built (held
  by the SCULPT_TEST_INDEX_PAUSE_MS hook) says so in its data (index:
  "indexing", partialIndex: true), so the user sees why it has no
  repository snippets; after the index is in, data says "ready"."""
import os
import shutil
import subprocess
import sys
import tempfile

from lspclient import check, eq, run_tests, spawn

SRC = os.environ.get("SCULPT_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REAL = os.path.abspath(os.path.join(SRC, "tests", "data", "real"))
TMP = tempfile.mkdtemp(prefix="sculpt-index-state-")
TIMEOUT = 120  # one request, on 2 loaded cores, under ASan

if not shutil.which("git"):
    print("skip: git is needed to list the workspace")
    sys.exit(77)


def repo(name):
    """A copy of jq as its own git work tree, and a cache folder of its own."""
    root = os.path.join(TMP, name, "jq")
    shutil.copytree(os.path.join(REAL, "jq"), root)
    subprocess.run(["git", "init", "-q", root], check=True, capture_output=True)
    return root, {"XDG_CACHE_HOME": os.path.join(TMP, name, "cache")}


def uri(path):
    return "file://" + path


def wait_status(s, pred, what, start=0):
    return s.wait_message(lambda m: m.get("method") == "sculpt/status" and pred(m["params"]),
                          timeout=TIMEOUT, what=what, start=start)["params"]


def index_ready(s):
    return wait_status(s, lambda p: p.get("index", {}).get("state") == "ready",
                       "the index ready")["index"]


def model_ready(s):
    wait_status(s, lambda p: p["state"] == "ready", "the model ready")


def open_file(s, root, rel, lang="c"):
    path = os.path.join(root, rel)
    text = open(path, encoding="utf-8").read()
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri(path), "languageId": lang,
                                                       "version": 1, "text": text}})
    return path, text


def completion_data(s, path, text):
    """The data of an inline completion the model ran for (a position the
    syntax plan completes: the end of a code line in the middle of the
    file)."""
    lines = text.split("\n")
    for i in range(len(lines) // 2, len(lines)):
        t = lines[i].strip()
        if not t.endswith(";") or t.startswith(("//", "*", "/*")):
            continue
        r = s.request("textDocument/inlineCompletion",
                      {"textDocument": {"uri": uri(path)},
                       "position": {"line": i, "character": len(lines[i])},
                       "context": {"triggerKind": 1}}, TIMEOUT)
        check("error" not in r, "a completion answer", r.get("error"))
        data = r["result"].get("data", {})
        if "skipped" not in data and not data.get("cached"):
            return data
    raise AssertionError("no position where the model ran")


PROBE = "\nint sculpt_probe_marker(int depth) { return depth + 1; }\n"
USE = "int probe_use(void) {\n  return sculpt_probe_marker(2);\n}\n"


def probe_prompt(s, root):
    """The prompt at a use of sculpt_probe_marker in an open buffer:
    whether its definition (from src/util.c, as indexed) is in it."""
    path = os.path.join(root, "src", "probe_use.c")
    p = s.result("sculpt/test/prompt", {"textDocument": {"uri": uri(path)},
                                        "position": {"line": 1, "character": 9},
                                        "budget": 1024}, timeout=TIMEOUT)
    return [x for x in p["snippets"] if x["name"] == "sculpt_probe_marker"]


def open_probe(s, root):
    s.notify("textDocument/didOpen",
             {"textDocument": {"uri": uri(os.path.join(root, "src", "probe_use.c")),
                               "languageId": "c", "version": 1, "text": USE}})


def test_restart_is_warm():
    root, env = repo("restart")
    s = spawn(env=env)
    s.start(rootUri=uri(root))
    first = index_ready(s)
    check(first["files"] > 30, "jq's files indexed", first)
    eq(first["cached"], 0, "a first start parses every file")
    eq(first["partial"], False, "the whole tree is in")
    model_ready(s)
    # A file changes on disk during the session; the watcher reports it.
    with open(os.path.join(root, "src", "util.c"), "a") as f:
        f.write(PROBE)
    s.notify("workspace/didChangeWatchedFiles",
             {"changes": [{"uri": uri(os.path.join(root, "src", "util.c")), "type": 2}]})
    open_probe(s, root)
    # (the prompt job runs after the update on the same worker)
    check(probe_prompt(s, root), "the changed file's new definition is indexed")
    eq(s.shutdown_and_exit(), 0, "exit code")

    s2 = spawn(env=env)
    s2.start(rootUri=uri(root))
    second = index_ready(s2)
    eq(second["files"], first["files"], "the same files")
    eq(second["cached"], second["files"],
       "every file from the index kept on disk, the one changed last session included")
    model_ready(s2)
    open_probe(s2, root)
    check(probe_prompt(s2, root), "the kept index has the changed file's definition")
    # An unsaved edit of util.c reaches the index from its buffer (a request
    # in that document refreshes it); the disk is unchanged, so the kept
    # index must still serve util.c to the next start.
    util, text = open_file(s2, root, "src/util.c")
    s2.notify("textDocument/didChange",
              {"textDocument": {"uri": uri(util), "version": 2},
               "contentChanges": [{"text": text + "\nint unsaved_edit(void);\n"}]})
    s2.result("sculpt/test/prompt", {"textDocument": {"uri": uri(util)},
                                     "position": {"line": 0, "character": 0}}, timeout=TIMEOUT)
    eq(s2.shutdown_and_exit(), 0, "exit code")

    s3 = spawn(env=env)
    s3.start(rootUri=uri(root))
    third = index_ready(s3)
    eq(third["cached"], third["files"],
       "an unsaved buffer's edit does not drop its file from the kept index")
    eq(s3.shutdown_and_exit(), 0, "exit code")


def test_partial_index_is_reported():
    root, env = repo("partial")
    s = spawn(env=env)
    s.start(rootUri=uri(root), initializationOptions={"indexMaxFiles": 10})
    ix = index_ready(s)
    eq(ix["files"], 10, "indexMaxFiles bounds the index")
    eq(ix["partial"], True, "the status says the index is partial")
    model_ready(s)
    path, text = open_file(s, root, "src/builtin.c")
    data = completion_data(s, path, text)
    eq(data.get("index"), "ready", "data: the index state")
    eq(data.get("partialIndex"), True, "data: the context came from a partial index")
    # The bound lifted: the index is built again, whole.
    n = len(s.messages)
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"indexMaxFiles": 0}}})
    ix = wait_status(s, lambda p: p.get("index", {}).get("state") == "ready" and
                     not p["index"]["partial"], "the whole index", start=n)["index"]
    check(ix["files"] > 30, "every file once the bound is lifted", ix)
    data = completion_data(s, path, text)
    eq(data.get("partialIndex"), False, "data: the whole index")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_indexing_state_in_data():
    root, env = repo("indexing")
    env["SCULPT_TEST_INDEX_PAUSE_MS"] = "60000"
    s = spawn(env=env)
    s.start(rootUri=uri(root))
    model_ready(s)
    st = wait_status(s, lambda p: "index" in p, "the index state")
    eq(st["index"]["state"], "indexing", "the status says the index is being built")
    path, text = open_file(s, root, "src/builtin.c")
    data = completion_data(s, path, text)
    eq(data.get("index"), "indexing", "data: asked while the index is built")
    eq(data.get("partialIndex"), True, "data: so the context may lack definitions")
    # Exit does not wait for the paused index.
    eq(s.shutdown_and_exit(), 0, "exit code")


if __name__ == "__main__":
    try:
        run_tests([test_restart_is_warm, test_partial_index_is_reported,
                   test_indexing_state_in_data])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

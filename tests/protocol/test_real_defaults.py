"""Out of the box on real code: the shipped model (model/default, a
256-position context) with NO settings at all, on the vendored real
repositories (tests/data/real: jq C, click Python, cobra Go, ky TypeScript),
each copied to a temporary folder that is a git work tree.

- Every completion request, at five or more positions per language (the
  first line, code lines spread through the file, a mid-line position, the
  last line and the very end of a 2,000-line file), gets a non-error
  answer; each answer carries its `data` timings (textDocument/completion's
  list and items too), and a request the model ran for fitted its prompt
  and canvas into the model's context.
- The client gives no workspace folder: the server indexes the opened
  file's git work tree, or the file's folder when it is in none. A folder
  above several repositories, or an unrelated one, gives way the same way.
- $/progress: every token goes begin -> report* -> end, each once, whether
  the client answers window/workDoneProgress/create at once, late (after
  the work is done) or refuses it.
- The server's ordinary info lines go out as window/logMessage type 3, never
  1; no request failed, so sculpt/status carries no lastError; a failure
  (a document that is not open, a model path that does not exist) shows up
  in sculpt/status's lastError with its method and time, and a later success
  of that method clears it.
- A contextBudget the user sets beyond the model is said once (one
  warning), not per request, and never fails a request.
- sculpt/status says what the last completion came to and counts the
  session's (lines of click retyped).
Before the fit, nearly every request here failed with -32602 "infill: 768
prefix + 8 canvas + 256 suffix tokens exceed the 256-token context"."""
import os
import shutil
import subprocess
import sys
import tempfile

from lspclient import INVALID_PARAMS, check, eq, expect_error, run_tests, spawn

SRC = os.environ.get("SCULPT_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REAL = os.path.abspath(os.path.join(SRC, "tests", "data", "real"))
TMP = tempfile.mkdtemp(prefix="sculpt-real-")
TIMEOUT = 120  # one request, on 2 loaded cores, under ASan
CONTEXT = 256  # model/default/config.json max_position_embeddings

# language id, repository, file (the largest of its language), comment marker
FILES = [
    ("c", "jq", "src/builtin.c", "//"),
    ("python", "click", "src/click/core.py", "#"),
    ("go", "cobra", "command.go", "//"),
    ("typescript", "ky", "source/core/Ky.ts", "//"),
]


def git_init(folder):
    subprocess.run(["git", "init", "-q", folder], check=True, capture_output=True)


def copy_repo(name, into):
    dst = os.path.join(into, name)
    shutil.copytree(os.path.join(REAL, name), dst)
    git_init(dst)
    return dst


def uri_of(path):
    return "file://" + path


def open_doc(s, path, lang):
    text = open(path, encoding="utf-8").read()
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri_of(path), "languageId": lang,
                                                       "version": 1, "text": text}})
    return text


def utf16_len(line):
    return len(line.encode("utf-16-le")) // 2


def is_code(line, comment):
    t = line.strip()
    return bool(t) and not t.startswith((comment, "*", "/*", '"""', "'")) and len(t) > 3


def positions(text, comment):
    """At least five positions: the first line's end, the ends of code lines
    at a quarter, half and three quarters of the file, a mid-line position
    (before the last word of a code line), the last non-empty line's end,
    and the very end of the text."""
    lines = text.split("\n")
    n = len(lines)
    out = [(0, utf16_len(lines[0]))]
    for frac in (0.25, 0.5, 0.75):
        i = int(n * frac)
        while i < n - 1 and not is_code(lines[i], comment):
            i += 1
        out.append((i, utf16_len(lines[i])))
    mid = int(n * 0.4)
    while mid < n - 1 and not (is_code(lines[mid], comment) and " " in lines[mid].strip()):
        mid += 1
    cut = lines[mid].rstrip().rfind(" ") + 1
    out.append((mid, utf16_len(lines[mid][:cut])))
    last = n - 1
    while last > 0 and not lines[last].strip():
        last -= 1
    out.append((last, utf16_len(lines[last])))
    out.append((n - 1, utf16_len(lines[n - 1])))
    return out


def answer_progress(s, mode, answered):
    """Answers the server's window/workDoneProgress/create requests not yet
    answered: "now" accepts, "refuse" answers an error."""
    with s.cv:
        pending = [m for m in s.requests_from_server
                   if m["method"] == "window/workDoneProgress/create" and m["id"] not in answered]
    for m in pending:
        answered.add(m["id"])
        if mode == "refuse":
            s.send({"jsonrpc": "2.0", "id": m["id"],
                    "error": {"code": -32603, "message": "no progress here"}})
        else:
            s.respond(m["id"], None)


def check_progress(s, refused=()):
    """Every created token: begin, report*, end, each once, nothing else,
    nothing before begin; a refused token: nothing at all."""
    with s.cv:
        created = [m["params"]["token"] for m in s.requests_from_server
                   if m["method"] == "window/workDoneProgress/create"]
        seq = {}
        for m in s.messages:
            if m.get("method") == "$/progress":
                seq.setdefault(m["params"]["token"], []).append(m["params"]["value"]["kind"])
    for tok in seq:
        check(tok in created, "progress on a token never created", tok)
    for tok in created:
        kinds = seq.get(tok, [])
        if tok in refused:
            eq(kinds, [], "a refused token says nothing: " + tok)
            continue
        check(len(kinds) >= 2 and kinds[0] == "begin" and kinds[-1] == "end" and
              all(k == "report" for k in kinds[1:-1]),
              "begin -> report* -> end, once each", tok, kinds)
    return created


def statuses(s):
    with s.cv:
        return [m["params"] for m in s.messages if m.get("method") == "sculpt/status"]


def wait_status(s, pred, what):
    return s.wait_message(lambda m: m.get("method") == "sculpt/status" and pred(m["params"]),
                          timeout=60, what=what)["params"]


def check_answer(r, kind, where):
    check("error" not in r, "an error answer at " + where, r.get("error"))
    res = r["result"]
    data = res.get("data")
    check(isinstance(data, dict) and isinstance(data.get("totalMs"), float),
          "the answer carries its data timings at " + where, res)
    if kind == "completion":
        for it in res["items"]:
            check(it.get("data") == data, "each item carries the data too", it)
    if "skipped" not in data and not data.get("cached"):
        # The model ran: its prompt and canvas fitted the context.
        for k in ("modelMs", "repairMs", "contextMs", "promptTokens", "contextTokens"):
            check(k in data, "data has " + k, data)
        eq(data["contextTokens"], CONTEXT, "the context the request was fitted to")
        # The shipped profile's frame: a BOS, and an EOS after a whole
        # suffix only (a suffix cut to fit is not the file's end).
        frame = 1 if data.get("suffixCut") else 2
        check(data["promptTokens"] + data["canvas"] + frame <= CONTEXT,
              "prompt + canvas fit the context", data)
        check(data["modelMs"] >= data["repairMs"] >= 0, "modelMs counts the repair", data)
        return data
    return None


def test_every_position_no_settings():
    # No workspace folder (rootUri null), no initializationOptions: what a
    # client that sends nothing gets. trace "messages" lets info lines out.
    root = os.path.join(TMP, "every")
    os.makedirs(root)
    s = spawn()
    s.start({"window": {"workDoneProgress": True}}, trace="messages")
    answered = set()
    ran = 0
    for lang, repo, rel, comment in FILES:
        path = os.path.join(copy_repo(repo, root), rel)
        text = open_doc(s, path, lang)
        answer_progress(s, "now", answered)
        st = wait_status(s, lambda p: p["state"] == "ready", "the model ready")
        check("lastError" not in st, "no error so far", st)
        where_all = positions(text, comment)
        check(len(where_all) >= 5, "five positions or more")
        check(lang != "c" or len(text.split("\n")) >= 2000, "a 2,000-line file")
        for i, (line, char) in enumerate(where_all):
            kind = "completion" if i == 2 else "inline"
            method = ("textDocument/completion" if kind == "completion"
                      else "textDocument/inlineCompletion")
            where = "%s %d:%d" % (rel, line, char)
            r = s.request(method, {"textDocument": {"uri": uri_of(path)},
                                   "position": {"line": line, "character": char},
                                   "context": {"triggerKind": 1}}, TIMEOUT)
            data = check_answer(r, kind, where)
            ran += data is not None
            if data is not None and i == len(where_all) - 1:
                # At the very end of the file the suffix is whole (its EOS
                # says the file ends); elsewhere in a long file it is cut.
                check(not data.get("suffixCut"), "a whole suffix at the end", where, data)
            elif data is not None and lang == "c" and 0 < i < 4:
                check(data.get("suffixCut") is True, "a cut suffix mid-file", where, data)
            answer_progress(s, "now", answered)
        # The workspace is the file's work tree, found without a client root.
        st = wait_status(s, lambda p, d=os.path.dirname(path.replace("/" + rel, "/x")):
                         p.get("index", {}).get("root") == d and
                         p["index"]["state"] == "ready", "the index of " + repo)
        check(st["index"]["files"] > 0, "files indexed", st)
    check(ran >= 12, "the model ran for most positions (%d)" % ran)
    # A file in no repository, opened after the repositories' files: the
    # workspace stays the last work tree (VS Code opens its own
    # settings.json so; the files still open there keep their context),
    # unless TMPDIR itself is in a repository, which is then the file's.
    # Completions in the loose file still answer.
    before = statuses(s)[-1].get("index", {}).get("root")
    loose = os.path.join(root, "loose")
    os.makedirs(loose)
    path = os.path.join(loose, "util.c")
    shutil.copy(os.path.join(REAL, "jq", "src", "util.c"), path)
    top = subprocess.run(["git", "-C", loose, "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True)
    in_repo = top.returncode == 0  # TMPDIR inside a repository: that one
    want = top.stdout.strip() if in_repo else before
    open_doc(s, path, "c")
    answer_progress(s, "now", answered)
    wait_status(s, lambda p: p.get("index", {}).get("root") == want and
                p["index"]["state"] == "ready",
                "the workspace stays the last work tree after a loose file")
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri_of(path)}, "position": {"line": 20, "character": 0},
                   "context": {"triggerKind": 1}}, TIMEOUT)
    check_answer(r, "inline", "loose util.c 20:0")
    sync2(s)
    answer_progress(s, "now", answered)
    st = statuses(s)[-1]
    eq(st.get("index", {}).get("root"), want, "the workspace after the loose file's completion")
    check("lastError" not in st, "no request failed, no lastError", st)
    eq(st.get("contextTokens"), CONTEXT, "the status names the context")
    with s.cv:
        logs = [m["params"] for m in s.messages if m.get("method") == "window/logMessage"]
    check(not [m for m in logs if m["type"] == 1], "no info line goes out as an error",
          [m for m in logs if m["type"] == 1])
    check(any(m["type"] == 3 and "loaded" in m["message"] for m in logs),
          "the model's load is an info line (type 3)", logs)
    eq(s.shutdown_and_exit(), 0, "exit code")
    created = check_progress(s)
    check(any("/load/" in t for t in created) and sum("/index/" in t for t in created) >= 4,
          "a load and four index progress tokens", created)


_shared = {}


def shared_repo(name):
    """A copy of a real repository, made a work tree once for the tests
    that only read it (so that the server indexes it, not this checkout)."""
    if name not in _shared:
        base = os.path.join(TMP, "shared")
        os.makedirs(base, exist_ok=True)
        _shared[name] = copy_repo(name, base)
    return _shared[name]


def sync2(s):
    """Log lines of a message are flushed after the answers of the same
    read: two round trips put them all in."""
    s.sync()
    s.sync()


def make_repos(name):
    """TMP/name/parent holding two repositories (jq's and click's) and an
    unrelated folder beside them."""
    base = os.path.join(TMP, name)
    parent = os.path.join(base, "parent")
    os.makedirs(parent)
    jq = copy_repo("jq", parent)
    click = copy_repo("click", parent)
    other = os.path.join(base, "unrelated")
    os.makedirs(other)
    return parent, jq, click, other


def test_root_in_a_parent_folder_and_late_progress():
    # Started in a folder above two repositories: each opened file's own
    # work tree is indexed. The client answers progress creation only at
    # the end, after the load and the indexing are over.
    parent, jq, click, _ = make_repos("parent")
    s = spawn()
    s.start({"window": {"workDoneProgress": True}}, rootUri=uri_of(parent))
    wait_status(s, lambda p: p["state"] == "ready", "the model ready")
    open_doc(s, os.path.join(jq, "src/jv.c"), "c")
    wait_status(s, lambda p: p.get("index", {}).get("root") == jq and
                p["index"]["state"] == "ready", "jq's work tree indexed")
    open_doc(s, os.path.join(click, "src/click/types.py"), "python")
    wait_status(s, lambda p: p.get("index", {}).get("root") == click and
                p["index"]["state"] == "ready", "click's work tree indexed")
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri_of(os.path.join(click, "src/click/types.py"))},
                   "position": {"line": 30, "character": 0}, "context": {"triggerKind": 1}},
                  TIMEOUT)
    check_answer(r, "inline", "types.py 30:0")
    s.sync()
    with s.cv:
        early = [m for m in s.messages if m.get("method") == "$/progress"]
    eq(early, [], "nothing on a token before the client answered create")
    answer_progress(s, "now", set())
    s.sync()
    eq(s.shutdown_and_exit(), 0, "exit code")
    check_progress(s)


def test_root_unrelated_folder_and_refused_progress():
    # Started in an unrelated folder: the file's work tree. The client
    # refuses every progress token: none is used.
    _, jq, _, other = make_repos("unrelated")
    s = spawn()
    s.start({"window": {"workDoneProgress": True}}, rootUri=uri_of(other))
    answered = set()
    answer_progress(s, "refuse", answered)
    open_doc(s, os.path.join(jq, "src/util.c"), "c")
    wait_status(s, lambda p: p.get("index", {}).get("root") == jq and
                p["index"]["state"] == "ready", "jq's work tree indexed")
    answer_progress(s, "refuse", answered)
    s.sync()
    with s.cv:
        created = {m["params"]["token"] for m in s.requests_from_server
                   if m["method"] == "window/workDoneProgress/create"}
    eq(s.shutdown_and_exit(), 0, "exit code")
    check_progress(s, refused=created)


def test_last_error_in_status():
    s = spawn()
    s.start()
    wait_status(s, lambda p: p["state"] == "ready", "the model ready")
    path = os.path.join(shared_repo("cobra"), "args.go")
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri_of(path)}, "position": {"line": 1, "character": 0},
                   "context": {"triggerKind": 1}})
    expect_error(r, INVALID_PARAMS, check_id=False)
    st = wait_status(s, lambda p: "lastError" in p, "the status with the last error")
    e = st["lastError"]
    eq(e["method"], "textDocument/inlineCompletion", "its method")
    eq(e["code"], INVALID_PARAMS, "its code")
    check("not open" in e["message"], "its message", e)
    check(e["time"].endswith("Z") and "T" in e["time"], "its time (ISO 8601, UTC)", e)
    # The same method working again clears it.
    open_doc(s, path, "go")
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri_of(path)}, "position": {"line": 20, "character": 0},
                   "context": {"triggerKind": 1}}, TIMEOUT)
    check_answer(r, "inline", "args.go 20:0")
    s.sync()
    check("lastError" not in statuses(s)[-1], "cleared by a success", statuses(s)[-1])
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_missing_model_is_in_status():
    s = spawn()
    s.start(initializationOptions={"modelPath": os.path.join(TMP, "no-such-model")})
    wait_status(s, lambda p: p["state"] == "error", "the model's error")
    path = os.path.join(shared_repo("ky"), "source", "core", "Ky.ts")
    open_doc(s, path, "typescript")
    r = s.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": uri_of(path)}, "position": {"line": 5, "character": 0},
                   "context": {"triggerKind": 1}})
    check("error" in r and "no-such-model" in r["error"]["message"], "an explicit request says why",
          r)
    st = wait_status(s, lambda p: "lastError" in p, "the status with the last error")
    check("no-such-model" in st["lastError"]["message"] and st["state"] == "error",
          "the status says the model is missing", st)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_budget_beyond_the_model_warns_once():
    s = spawn()
    s.start(initializationOptions={"contextBudget": 4096})
    wait_status(s, lambda p: p["state"] == "ready", "the model ready")
    path = os.path.join(shared_repo("jq"), "src", "builtin.c")
    text = open_doc(s, path, "c")
    ran = 0
    for line, char in positions(text, "//")[1:4]:
        r = s.request("textDocument/inlineCompletion",
                      {"textDocument": {"uri": uri_of(path)},
                       "position": {"line": line, "character": char},
                       "context": {"triggerKind": 1}}, TIMEOUT)
        ran += check_answer(r, "inline", "builtin.c %d:%d" % (line, char)) is not None
    check(ran >= 1, "the model ran with the clamped budget")
    # The same setting again: no second warning; another too large: one.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"contextBudget": 4096}}})
    sync2(s)

    def warnings():
        with s.cv:
            return [m["params"] for m in s.messages if m.get("method") == "window/logMessage" and
                    "contextBudget" in m["params"]["message"]]
    w = warnings()
    eq(len(w), 1, "one warning for the clamped budget")
    eq(w[0]["type"], 2, "a warning, not an error")
    check("4096" in w[0]["message"] and "256" in w[0]["message"], "it says both numbers", w)
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"contextBudget": 2048}}})
    sync2(s)
    eq(len(warnings()), 2, "a new value warns once more")
    # A budget that fits says nothing.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"contextBudget": 128}}})
    sync2(s)
    eq(len(warnings()), 2, "a budget that fits is quiet")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_outcomes_in_status():
    """Retyped lines of click's core.py, no settings (issue 43: about 40%
    got no suggestion, the reason only in data.discarded): sculpt/status
    says what the last completion came to ("offered", "dropped: would not
    parse", ...) and counts this session's: answered, offered, dropped."""
    s = spawn()
    s.start()
    wait_status(s, lambda p: p["state"] == "ready", "the model ready")
    path = os.path.join(shared_repo("click"), "src", "click", "core.py")
    text = open_doc(s, path, "python")
    lines = text.split("\n")
    # Code lines in method bodies, each cut after its first word as if the
    # user were retyping it.
    # At least 16, and on until one answer was dropped (the case to show;
    # drafts made it rarer), 64 at most.
    picks = [i for i, l in enumerate(lines) if l.startswith("        ") and
             is_code(l, "#") and " " in l.strip()][::40][:64]
    version, answered, offered, dropped, last, tried = 1, 0, 0, 0, None, 0
    for i in picks:
        if tried >= 16 and dropped >= 1:
            break
        tried += 1
        line = lines[i]
        cut = len(line) - len(line.lstrip()) + line.strip().index(" ") + 1
        version += 1
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": uri_of(path), "version": version},
            "contentChanges": [{"range": {"start": {"line": i, "character": cut},
                                          "end": {"line": i, "character": utf16_len(line)}},
                                "text": ""}]})
        r = s.request("textDocument/inlineCompletion",
                      {"textDocument": {"uri": uri_of(path)},
                       "position": {"line": i, "character": cut}, "context": {"triggerKind": 1}},
                      TIMEOUT)
        data = check_answer(r, "inline", "core.py %d" % (i + 1))
        if data is not None:
            answered += 1
            if r["result"]["items"]:
                offered, last = offered + 1, "offered"
            elif data.get("discarded"):
                dropped, last = dropped + 1, "dropped: would not parse"
            else:
                last = "nothing to offer"
        # Put the line back.
        version += 1
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": uri_of(path), "version": version},
            "contentChanges": [{"range": {"start": {"line": i, "character": cut},
                                          "end": {"line": i, "character": cut}},
                                "text": line[cut:]}]})
    sync2(s)
    st = statuses(s)[-1]
    print("retyped %d lines: %d answered by the model, %d offered, %d dropped"
          % (tried, answered, offered, dropped))
    check(dropped >= 1, "some answers were dropped as not parsing (the case to show)")
    eq(st.get("lastOutcome"), last, "sculpt/status says the last completion's outcome")
    eq(st.get("completions"), {"answered": answered, "offered": offered, "dropped": dropped},
       "and this session's counts")
    eq(s.shutdown_and_exit(), 0, "exit code")


if __name__ == "__main__":
    if not shutil.which("git"):
        print("SKIP: git is needed to make the test repositories")
        sys.exit(77)
    try:
        run_tests([test_every_position_no_settings, test_root_in_a_parent_folder_and_late_progress,
                   test_root_unrelated_folder_and_refused_progress, test_last_error_in_status,
                   test_missing_model_is_in_status, test_budget_beyond_the_model_warns_once,
                   test_outcomes_in_status])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

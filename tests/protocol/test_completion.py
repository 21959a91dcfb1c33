"""Completions through LSP with a planted byte-level model whose right answer
is known: after the letters "...abc" it writes "defghijklmnopqrstuvwxyz" and
ends (tools/planted_checkpoints.py). Covers textDocument/inlineCompletion,
textDocument/completion, the model load with $/progress and sculpt/status,
typing-through from the cache (no engine call), stale requests (-32801),
cancellation, accept/dismiss commands, settings, and the no-model errors."""
import os
import shutil
import subprocess
import sys
import tempfile

from lspclient import (CONTENT_MODIFIED, INVALID_PARAMS, REQUEST_CANCELLED, check, eq,
                       expect_error, run_tests, spawn)

SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TMP = tempfile.mkdtemp(prefix="sculpt-completion-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), TMP],
               check=True, capture_output=True)
MODEL = os.path.join(TMP, "planted-successor-shifted-bytes")
URI = "file:///w/main.c"
ALPHABET = "defghijklmnopqrstuvwxyz"


def start(settings=None, progress=False, model=MODEL):
    # Every canvas length the plan offers, so that the planted middle fits.
    opts = {"modelPath": model, "lengthCandidates": 4}
    opts.update(settings or {})
    s = spawn()
    caps = {"window": {"workDoneProgress": True}} if progress else {}
    init = s.start(caps, initializationOptions=opts)
    return s, init


def wait_ready(s, state="ready"):
    return s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                          m["params"]["state"] == state, what="sculpt/status " + state)


def open_doc(s, text, uri=URI, lang="c", version=1):
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": lang,
                                                       "version": version, "text": text}})


def inline(s, line, character, trigger=1, uri=URI, timeout=30):
    return s.request("textDocument/inlineCompletion",
                     {"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
                      "context": {"triggerKind": trigger}}, timeout)


def stats(s):
    return s.result("sculpt/test/stats", {})


def gcc_parses(text):
    if not shutil.which("gcc"):
        return True
    p = subprocess.run(["gcc", "-fsyntax-only", "-x", "c", "-"], input=text.encode(),
                       capture_output=True)
    return p.returncode == 0


def test_capabilities_and_load():
    s, init = start(progress=True)
    caps = init["capabilities"]
    check(caps.get("inlineCompletionProvider") is True, "inlineCompletionProvider")
    check("completionProvider" in caps, "completionProvider")
    eq(caps["executeCommandProvider"]["commands"], ["sculpt.accept", "sculpt.dismiss"],
       "commands")
    # The client said it takes work-done progress: create, begin, end.
    create = s.wait_for(lambda: next((m for m in s.messages
                                      if m.get("method") == "window/workDoneProgress/create"),
                                     None), what="progress create")
    s.respond(create["id"], None)
    token = create["params"]["token"]
    status = wait_ready(s)
    check(status["params"]["model"].startswith("planted-successor-shifted-bytes"), "model name")
    check(status["params"]["device"].startswith("cpu"), "device")
    s.wait_message(lambda m: m.get("method") == "$/progress" and
                   m["params"]["token"] == token and m["params"]["value"]["kind"] == "end",
                   what="$/progress end")
    begin = [m for m in s.messages if m.get("method") == "$/progress" and
             m["params"]["value"]["kind"] == "begin"]
    check(len(begin) == 1, "one $/progress begin")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_inline_completion_parses():
    s, _ = start()
    wait_ready(s)
    text = "int abc;\n"
    open_doc(s, text)
    r = inline(s, 0, 7)
    items = r["result"]["items"]
    eq(len(items), 1, "one item")
    it = items[0]
    eq(it["insertText"], ALPHABET, "the planted middle")
    eq(it["range"], {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 7}},
       "range")
    eq(it["command"]["command"], "sculpt.accept", "acceptance command")
    data = r["result"]["data"]
    check(data["cached"] is False and data["steps"] >= 1 and data["tokens"] == len(ALPHABET),
          "timings data", data)
    for k in ("contextMs", "modelMs", "totalMs"):
        check(isinstance(data[k], float), "timing " + k)
    # Inserted, the text still parses as C.
    check(gcc_parses(text[:7] + it["insertText"] + text[7:]), "parses once inserted")
    s.shutdown_and_exit()


def test_completion_items():
    s, _ = start()
    wait_ready(s)
    open_doc(s, "int abc;\n")
    r = s.request("textDocument/completion", {"textDocument": {"uri": URI},
                                              "position": {"line": 0, "character": 7},
                                              "context": {"triggerKind": 1}}, 30)
    res = r["result"]
    check(res["isIncomplete"] is True, "isIncomplete")
    it = res["items"][0]
    check(it["label"].startswith("defghij"), "recognisable label", it["label"])
    eq(it["textEdit"]["newText"], ALPHABET, "textEdit inserts the middle")
    eq(it["textEdit"]["range"]["start"], {"line": 0, "character": 7}, "textEdit range")
    check(ALPHABET in it["documentation"]["value"], "full text in the documentation")
    # The timings: on the list and on each item, as for inline completions.
    check(isinstance(res["data"]["modelMs"], float) and res["data"]["cached"] is False,
          "the list carries data", res)
    eq(it["data"], res["data"], "the item carries the same data")
    # An answer with no item still says why and how long it took.
    r = s.request("textDocument/completion", {"textDocument": {"uri": URI},
                                              "position": {"line": 0, "character": 1},
                                              "context": {"triggerKind": 1}}, 30)
    eq(r["result"]["items"], [], "nothing inside a word")
    check(r["result"]["data"]["skipped"] == "inside a word" and
          isinstance(r["result"]["data"]["totalMs"], float), "data on an empty list", r)
    s.shutdown_and_exit()


def test_typing_through_is_cached():
    # Repair off: after "X" the planted model writes noise that may not
    # parse, and a repair would be a second engine call to count.
    s, _ = start({"repair": False})
    wait_ready(s)
    open_doc(s, "int abc;\n")
    first = inline(s, 0, 7)["result"]
    calls = stats(s)["engineCalls"]
    # The user types "de", the start of the suggestion: served from the cache.
    for i, ch in enumerate("de"):
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": 2 + i},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 7 + i},
                                          "end": {"line": 0, "character": 7 + i}}, "text": ch}]})
        r = inline(s, 0, 8 + i, trigger=2)["result"]
        eq(r["items"][0]["insertText"], ALPHABET[i + 1:], "rest of the suggestion")
        check(r["data"]["cached"] is True, "served from the cache")
    st = stats(s)
    eq(st["engineCalls"], calls, "no engine call while typing through")
    eq(st["cacheHits"], 2, "two cache hits")
    check(first["data"]["cached"] is False, "the first was computed")
    # Diverging ("dX") is not served from the cache: the model runs again.
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": URI, "version": 9},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 9},
                                      "end": {"line": 0, "character": 9}}, "text": "X"}]})
    r = inline(s, 0, 10)["result"]
    check(r["data"]["cached"] is False, "divergence recomputes")
    eq(stats(s)["engineCalls"], calls + 1, "one more engine call")
    # ...with the typed text pinned in the prefix and the canvas sized to
    # what remained of the suggestion (bytes model: a token a byte).
    check(r["data"].get("reconditioned") is True, "re-conditioned on the typing", r["data"])
    eq(r["data"]["canvas"], len(ALPHABET) - 3, "only the rest of the canvas")
    s.shutdown_and_exit()


def test_typing_through_mid_line_is_cached():
    # Mid-line, before code: "f( |xyz)". The suggestion starts with a
    # letter, so the first typed character puts the cursor inside a word,
    # where the syntax plan suggests nothing; the cache must answer first.
    s, _ = start({"repair": False})
    wait_ready(s)
    text = "int f(int a);\nint g(void) { return f( xyz); }\n"
    open_doc(s, text)
    first = inline(s, 1, 24)["result"]
    shown = first["items"][0]["insertText"]
    check(len(shown) >= 2 and shown[0].isalpha(), "a suggestion that starts a word", shown)
    calls = stats(s)["engineCalls"]
    for i, ch in enumerate(shown[:2]):
        s.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": 2 + i},
            "contentChanges": [{"range": {"start": {"line": 1, "character": 24 + i},
                                          "end": {"line": 1, "character": 24 + i}}, "text": ch}]})
        r = inline(s, 1, 25 + i, trigger=2)["result"]
        check(r["data"].get("cached") is True, "served from the cache mid-line", r["data"])
        eq(r["items"][0]["insertText"] if r["items"] else "", shown[i + 1:],
           "the rest of the suggestion")
    eq(stats(s)["engineCalls"], calls, "no engine call while typing through")
    s.shutdown_and_exit()


def test_stale_and_cancelled():
    # A long debounce keeps the automatic request in flight long enough.
    s, _ = start({"debounceMs": 3000})
    wait_ready(s)
    open_doc(s, "int abc;\n")
    rid = s.send_request("textDocument/inlineCompletion",
                         {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 7},
                          "context": {"triggerKind": 2}})
    s.notify("textDocument/didChange", {
        "textDocument": {"uri": URI, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 7},
                                      "end": {"line": 0, "character": 7}}, "text": "q"}]})
    expect_error(s.wait_response(rid, 5), CONTENT_MODIFIED, rid)
    rid = s.send_request("textDocument/inlineCompletion",
                         {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 8},
                          "context": {"triggerKind": 2}})
    s.notify("$/cancelRequest", {"id": rid})
    expect_error(s.wait_response(rid, 5), REQUEST_CANCELLED, rid)
    # A newer request on the same document supersedes an older one.
    r1 = s.send_request("textDocument/inlineCompletion",
                        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 8},
                         "context": {"triggerKind": 2}})
    r2 = s.send_request("textDocument/inlineCompletion",
                        {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 8},
                         "context": {"triggerKind": 1}})
    expect_error(s.wait_response(r1, 5), REQUEST_CANCELLED, r1)
    res = s.wait_response(r2, 30)
    eq(res["result"]["items"][0]["insertText"], "rstuvwxyz", "the newer one is answered")
    s.shutdown_and_exit()


def test_commands_settings_and_languages():
    s, _ = start({"enabledLanguages": ["python"]})
    wait_ready(s)
    open_doc(s, "int abc;\n")
    r = inline(s, 0, 7)["result"]
    eq(r["items"], [], "a disabled language gets nothing")
    eq(stats(s)["engineCalls"], 0, "and costs no engine call")
    s.notify("workspace/didChangeConfiguration",
             {"settings": {"sculpt": {"enabledLanguages": None, "maxTokens": 5}}})
    r = inline(s, 0, 7)["result"]
    eq(r["items"][0]["insertText"], "defgh", "maxTokens bounds the canvas")
    eq(s.result("workspace/executeCommand", {"command": "sculpt.accept",
                                             "arguments": [{"length": 5}]}), None, "accept")
    s.result("workspace/executeCommand", {"command": "sculpt.dismiss", "arguments": []})
    st = stats(s)
    check(st["accepted"] == 1 and st["dismissed"] == 1, "accept/dismiss counted", st)
    expect_error(s.request("workspace/executeCommand", {"command": "sculpt.frobnicate"}),
                 INVALID_PARAMS, check_id=False)
    s.shutdown_and_exit()


def test_no_model():
    s, _ = start(model=os.path.join(TMP, "does-not-exist"))
    st = wait_ready(s, "error")
    check("does-not-exist" in st["params"]["message"], "the status names the problem",
          st["params"])
    open_doc(s, "int abc;\n")
    r = inline(s, 0, 7, trigger=1)
    check("error" in r and "no model" in r["error"]["message"], "invoked: a clear error", r)
    r = inline(s, 0, 7, trigger=2)
    eq(r["result"]["items"], [], "automatic: nothing")
    # Pointing the setting at a real model loads it.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"modelPath": MODEL}}})
    wait_ready(s)
    eq(inline(s, 0, 7)["result"]["items"][0]["insertText"], ALPHABET, "after the reload")
    s.shutdown_and_exit()


def python_parses(text):
    try:
        compile(text, "<fixture>", "exec")
        return True
    except SyntaxError:
        return False


def code_actions(s, uri, line, c0, c1, diagnostics=()):
    return s.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": line, "character": c0}, "end": {"line": line, "character": c1}},
        "context": {"diagnostics": list(diagnostics)}}, 60)


def apply_edit(text, edit):
    lines = text.split("\n")
    def off(p):
        return sum(len(l) + 1 for l in lines[:p["line"]]) + p["character"]
    r = edit["range"]
    return text[:off(r["start"])] + edit["newText"] + text[off(r["end"]):]


def test_quick_fix_repairs_a_syntax_error():
    s, init = start()
    check("codeActionProvider" in init["capabilities"], "codeActionProvider")
    wait_ready(s)
    uri = "file:///w/fix.py"
    text = "total = abc$\nprint(total)\n"
    check(not python_parses(text), "the fixture is broken")
    open_doc(s, text, uri=uri, lang="python")
    diag = {"range": {"start": {"line": 0, "character": 11}, "end": {"line": 0, "character": 12}},
            "severity": 1, "message": "invalid syntax"}
    acts = code_actions(s, uri, 0, 11, 11, [diag])["result"]
    check(len(acts) >= 1, "a quick fix is offered", acts)
    for a in acts:
        eq(a["kind"], "quickfix", "kind")
        eq(a["diagnostics"], [diag], "the diagnostic it fixes")
        edits = a["edit"]["changes"][uri]
        fixed = apply_edit(text, edits[0])
        check(python_parses(fixed), "the fix parses", fixed)
        check(fixed != text, "the fix changes something")
    fixed = apply_edit(text, acts[0]["edit"]["changes"][uri][0])
    eq(fixed, "total = abc" + ALPHABET + "\nprint(total)\n", "the planted model's repair")
    # No diagnostic, no hole, no empty block: nothing offered, no model call.
    calls = stats(s)["engineCalls"]
    eq(code_actions(s, uri, 1, 0, 0)["result"], [], "nothing to offer")
    eq(stats(s)["engineCalls"], calls, "and no engine call for it")
    s.shutdown_and_exit()


def test_lazy_quick_fix_through_resolve():
    # A client that resolves edits lazily, asking automatically (as editors
    # do on every cursor move): the actions come without edits and without
    # an engine call; resolving the one picked decodes it then.
    s = spawn()
    caps = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}}
    init = s.start(caps, initializationOptions={"modelPath": MODEL, "lengthCandidates": 4})
    eq(init["capabilities"]["codeActionProvider"].get("resolveProvider"), True, "resolveProvider")
    wait_ready(s)
    uri = "file:///w/lazy.py"
    text = "total = abc$\nprint(total)\n"
    open_doc(s, text, uri=uri, lang="python")
    diag = {"range": {"start": {"line": 0, "character": 11}, "end": {"line": 0, "character": 12}},
            "severity": 1, "message": "invalid syntax"}
    calls = stats(s)["engineCalls"]
    params = {"textDocument": {"uri": uri},
              "range": {"start": {"line": 0, "character": 11}, "end": {"line": 0, "character": 11}},
              "context": {"diagnostics": [diag], "triggerKind": 2}}
    acts = s.request("textDocument/codeAction", params, 60)["result"]
    eq(stats(s)["engineCalls"], calls, "listing decodes nothing")
    eq(len(acts), 1, "one lazy fix for the diagnostic (its two spans merge)")
    act = acts[0]
    check("edit" not in act and act["kind"] == "quickfix" and act["diagnostics"] == [diag] and
          "data" in act, "no edit yet, the diagnostic and data", act)
    r = s.request("codeAction/resolve", act, 60)
    check("result" in r, "resolved", r)
    res = r.get("result", {})
    check(stats(s)["engineCalls"] > calls, "resolving decodes")
    fixed = apply_edit(text, res["edit"]["changes"][uri][0]) if "edit" in res else text
    eq(fixed, "total = abc" + ALPHABET + "\nprint(total)\n", "the planted model's repair")
    eq(res.get("data"), act["data"], "the action comes back with its data")
    # Asked explicitly (triggerKind 1), the edits are computed and checked
    # up front, as for clients that do not resolve.
    params["context"]["triggerKind"] = 1
    acts = s.request("textDocument/codeAction", params, 60)["result"]
    check(acts and all("edit" in a for a in acts), "invoked: edits up front", acts)
    # The document changed since the listing: resolving says so.
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": [{"text": text + "x = 1\n"}]})
    r = s.request("codeAction/resolve", act, 60)
    check(r.get("error", {}).get("code") == -32801, "a stale action is refused", r)
    # Data that is not ours is a clear error, not a crash.
    r = s.request("codeAction/resolve", {"title": "x", "data": {"uri": 3}}, 60)
    check(r.get("error", {}).get("code") == -32602, "foreign data", r)
    s.shutdown_and_exit()


def test_hole_candidates_must_parse():
    # A hole the planted model cannot fill with valid code: its candidates
    # are tried, and none is offered, since none parses.
    s, _ = start()
    wait_ready(s)
    uri = "file:///w/hole.py"
    text = "def f():\n    ...\n"
    open_doc(s, text, uri=uri, lang="python")
    calls = stats(s)["engineCalls"]
    acts = code_actions(s, uri, 1, 4, 4)["result"]
    check(stats(s)["engineCalls"] > calls, "the hole was tried")
    for a in acts:
        fixed = apply_edit(text, a["edit"]["changes"][uri][0])
        check(python_parses(fixed), "every offered fill parses", fixed)
    s.shutdown_and_exit()


def test_workspace_context():
    # The workspace (rootUri) is indexed with $/progress; a completion then
    # carries the definition from another file in its prompt.
    repo = tempfile.mkdtemp(prefix="sculpt-ws-")
    subprocess.run(["git", "init", "-q", repo], check=True)
    os.makedirs(os.path.join(repo, "pkg"))
    with open(os.path.join(repo, "pkg", "calc.py"), "w") as f:
        f.write("def compute_total(items):\n    return sum(items)\n")
    text = "from pkg.calc import compute_total\n\nx = compute_total([1]) + abc\n"
    with open(os.path.join(repo, "app.py"), "w") as f:
        f.write(text)
    s = spawn()
    s.start({"window": {"workDoneProgress": True}},
            initializationOptions={"modelPath": MODEL, "lengthCandidates": 4},
            rootUri="file://" + repo)
    def progress_created(prefix):
        return s.wait_for(lambda: next((m for m in s.messages
                                        if m.get("method") == "window/workDoneProgress/create"
                                        and m["params"]["token"].startswith(prefix)), None),
                          what="progress create " + prefix)
    for prefix in ("sculpt/load", "sculpt/index"):
        create = progress_created(prefix)
        s.respond(create["id"], None)
    end = s.wait_message(lambda m: m.get("method") == "$/progress" and
                         m["params"]["token"].startswith("sculpt/index") and
                         m["params"]["value"]["kind"] == "end", what="index end")
    check("2 files" in end["params"]["value"].get("message", ""), "index summary",
          end["params"]["value"])
    wait_ready(s)
    uri = "file://" + os.path.join(repo, "app.py")
    open_doc(s, text, uri=uri, lang="python")
    r = inline(s, 2, len("x = compute_total([1]) + abc"), uri=uri)["result"]
    check(r["data"].get("snippets", 0) >= 1, "a snippet from pkg/calc.py in the prompt", r["data"])
    eq(r["items"][0]["insertText"], ALPHABET, "the completion itself is unchanged")
    s.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    s.shutdown_and_exit()
    shutil.rmtree(repo, ignore_errors=True)


def test_repair_once_on_the_local_engine():
    # "0xab" + the planted alphabet is a hex number glued to an identifier:
    # a new syntax error. The broken line is masked again and rewritten once (a second
    # engine call); the planted model writes the same letters, so it is then
    # discarded, and data says so. With repair off, one call only.
    s, _ = start({"lengthCandidates": 1})
    wait_ready(s)
    text = "int f(void) {\n  return 0;\n}\nint x = 0xab;\n"
    open_doc(s, text)
    calls = stats(s)["engineCalls"]
    r = inline(s, 3, 12)
    eq(r["result"]["items"], [], "nothing that breaks the parse is offered")
    eq(r["result"]["data"].get("discarded"), "new syntax errors, not repaired", "why")
    eq(stats(s)["engineCalls"], calls + 2, "the candidate and one repair")
    # modelMs counts both engine calls; the repair's alone is repairMs.
    data = r["result"]["data"]
    check(data["repairMs"] > 0 and data["modelMs"] > data["repairMs"],
          "modelMs includes the repair's call, shown alone as repairMs", data)
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"repair": False}}})
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                        "contentChanges": [{"text": text + "\n"}]})
    calls = stats(s)["engineCalls"]
    r = inline(s, 3, 12)
    eq(r["result"]["data"].get("discarded"), "new syntax errors", "no repair tried")
    eq(stats(s)["engineCalls"], calls + 1, "one engine call")
    eq(r["result"]["data"]["repairMs"], 0.0, "no repair, no repair time")
    s.shutdown_and_exit()


def test_eos_penalty_from_the_model_and_the_settings():
    # A checkpoint may carry its own EOS penalty (generation_config.json);
    # with 100 the planted model cannot end after "z": every candidate fills
    # its canvas (the shortest of the plan's lengths wins the ranking).
    # The eosPenalty setting overrides it, null gives it back, and a bad
    # value is ignored. Repair off: the filled canvas need not parse.
    model = os.path.join(TMP, "with-generation-config")
    shutil.copytree(MODEL, model)
    with open(os.path.join(model, "generation_config.json"), "w") as f:
        f.write('{"eos_penalty": 100, "temperature": 0.2}')
    s, _ = start({"repair": False}, model=model)
    wait_ready(s)
    open_doc(s, "int abc;\n")

    def suggestion():
        return inline(s, 0, 7)["result"]["items"][0]["insertText"]

    def configure(value):
        s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"eosPenalty": value}}})

    filled = suggestion()
    check(filled != ALPHABET and (filled.startswith(ALPHABET) or ALPHABET.startswith(filled)),
          "the model's own EOS penalty fills the canvas", filled)
    configure(0)
    eq(suggestion(), ALPHABET, "eosPenalty 0 overrides the model's default (not the cached one)")
    calls = stats(s)["engineCalls"]
    configure("high")
    eq(suggestion(), ALPHABET, "a bad eosPenalty is ignored")
    eq(stats(s)["engineCalls"], calls, "and keeps the cache: the same settings")
    configure(None)
    eq(suggestion(), filled, "null gives the model's default back")
    s.shutdown_and_exit()


if __name__ == "__main__":
    try:
        run_tests([test_capabilities_and_load, test_inline_completion_parses,
                   test_completion_items, test_typing_through_is_cached,
                   test_typing_through_mid_line_is_cached, test_stale_and_cancelled,
                   test_commands_settings_and_languages, test_no_model,
                   test_quick_fix_repairs_a_syntax_error, test_lazy_quick_fix_through_resolve,
                   test_hole_candidates_must_parse,
                   test_workspace_context, test_repair_once_on_the_local_engine,
                   test_eos_penalty_from_the_model_and_the_settings])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

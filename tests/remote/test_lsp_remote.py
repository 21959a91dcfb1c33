"""The language server with the remote FIM backend (setting "backend"),
against a mock OpenAI-compatible FIM server (mockfim.py): the request
carries the locally assembled prompt (with a cross-file snippet) and the
suffix, the key as a bearer token; the answer is shaped locally; 429 is
retried (Retry-After honoured), 503 gives up after maxTries with a clear
error, a dead backend gives a clear JSON-RPC error and sculpt/status says
unreachable; $/cancelRequest and superseding requests close the HTTP
connection and answer -32800; the loop answers other requests while one is
in flight, and while its answer is shaped (on the worker, test hook
SCULPT_TEST_SHAPE_DELAY_MS); the key never reaches the log or an error
message."""
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "protocol"))
sys.path.insert(0, HERE)

from lspclient import (CONTENT_MODIFIED, REQUEST_CANCELLED, check, eq, expect_error,  # noqa: E402
                       key, run_tests)
from mockfim import Mock, closed_port  # noqa: E402
import remotehelp  # noqa: E402  (no proxy may sit between: the mock is on 127.0.0.1)
from remotehelp import REQUEST_FAILED, URI, inline, open_doc, send_inline  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sculpt-remote-")
MODEL = remotehelp.planted_model(TMP)
KEY = "sk-test-" + "7f3a9c1e5b2d8f40"


def start(mock_url, backend=None, env=None, root=None, log_level=None, **extra):
    b = {"url": mock_url, "model": "mock-model", "timeoutMs": 5000}
    b.update(backend or {})
    return remotehelp.start(MODEL, b, env=env, root=root, log_level=log_level, **extra)


def test_completion_from_the_backend():
    # A workspace with a definition in another file: the prompt the mock
    # receives has it as a snippet, before the prefix window; the suffix is
    # the text after the cursor.
    repo = remotehelp.snippet_workspace("sculpt-remote-ws-")
    text = remotehelp.SNIPPET_APP
    mock = Mock()
    # Mid-line in C: one line, and what the suffix already has (");") goes.
    mock.default = {"text": "value\nprint(2)\n"}
    s = start(mock.url, env={"SCULPT_API_KEY": KEY}, root=repo)
    remotehelp.wait_index(s)
    uri = "file://" + os.path.join(repo, "app.py")
    open_doc(s, text, uri=uri, lang="python")
    line = "x = compute_total([1]) + abc"
    r = inline(s, 2, len(line), uri=uri)
    check("result" in r, "a completion", r)
    items = r["result"]["items"]
    eq([i["insertText"] for i in items], ["value"], "the mock's text, cut to the line")
    eq(r["result"]["data"].get("backend"), "remote", "data says where it came from")
    req = mock.wait_requests(1)[0]
    eq(req["path"], "/v1/fim/completions", "the FIM endpoint under the base URL")
    body = req["body"]
    eq(body["model"], "mock-model", "model")
    eq(body["stream"], True, "a streamed answer is asked for")
    check(isinstance(body["max_tokens"], int) and body["max_tokens"] > 0, "max_tokens", body)
    check("def compute_total" in body["prompt"], "the cross-file snippet is in the prompt",
          body["prompt"])
    check(body["prompt"].endswith(line), "the prompt ends at the cursor", body["prompt"][-80:])
    check(body["prompt"].index("def compute_total") < body["prompt"].index(line),
          "the snippet comes before the prefix window")
    check(body["suffix"].startswith("\nprint(x)"), "the suffix is the text after the cursor",
          body["suffix"])
    eq(req["headers"].get("Authorization"), "Bearer " + KEY, "the key as a bearer token")
    # Typing through the suggestion is served from the cache: no new request.
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": [{"range": {
                                            "start": {"line": 2, "character": len(line)},
                                            "end": {"line": 2, "character": len(line)}},
                                            "text": "va"}]})
    r2 = inline(s, 2, len(line) + 2, uri=uri)
    eq([i["insertText"] for i in r2["result"]["items"]], ["lue"], "the rest, from the cache")
    eq(len(mock.requests), 1, "no second HTTP request")
    s.shutdown_and_exit()
    mock.stop()
    shutil.rmtree(repo, ignore_errors=True)


def test_shaping_mid_line():
    mock = Mock()
    mock.default = {"text": "1, 2);\nint y = 3;\n"}
    s = start(mock.url, backend={"apiKey": "sk-from-settings"})
    open_doc(s, "int f(int a, int b);\nint main(void) {\n  int x = f();\n  return x;\n}\n")
    r = inline(s, 2, len("  int x = f("))
    eq([i["insertText"] for i in r["result"]["items"]], ["1, 2"],
       "one line, without the ');' the suffix has")
    body = mock.wait_requests(1)[0]["body"]
    check(body["suffix"].startswith(");\n  return x;"), "suffix", body["suffix"])
    eq(body.get("stop"), ["\n"], "a one-line completion asks the server to stop at a newline")
    eq(mock.requests[0]["headers"].get("Authorization"), "Bearer sk-from-settings",
       "the key from the settings")
    s.shutdown_and_exit()
    mock.stop()


def test_switch_between_remote_and_local():
    # backend: null goes back to the local engine (the planted model loads and
    # writes the alphabet after "abc"); a URL again goes remote.
    mock = Mock()
    mock.default = {"text": "_remote"}
    s = start(mock.url)
    text = "int abc;\n"
    open_doc(s, text)
    col = len("int abc")
    r = inline(s, 0, col)
    eq([i["insertText"] for i in r["result"]["items"]], ["_remote"], "remote first")
    n0 = len(s.messages)
    s.notify("workspace/didChangeConfiguration",
             {"settings": {"sculpt": {"backend": None, "lengthCandidates": 4}}})
    st = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                        m["params"]["state"] == "ready", start=n0, what="local model ready")
    check("backend" not in st["params"], "no backend in the status", st)
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                        "contentChanges": [{"text": text + "\n"}]})
    r = inline(s, 0, col)
    eq([i["insertText"] for i in r["result"]["items"]], ["defghijklmnopqrstuvwxyz"],
       "the local engine's answer")
    stats = s.request("sculpt/test/stats", {})["result"]
    eq((stats["engineCalls"], stats["remoteCalls"]), (1, 1), "one of each")
    eq(len(mock.requests), 1, "nothing more went to the backend")
    s.shutdown_and_exit()
    mock.stop()


def test_retry_after_429():
    mock = Mock()
    mock.script = [{"status": 429, "headers": {"Retry-After": "1"},
                    "body": '{"error": {"message": "slow down"}}'}]
    mock.default = {"text": "ok_value;"}
    s = start(mock.url)
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    r = inline(s, 1, len("  int x = "))
    check("result" in r, "succeeds after the retry", r)
    eq([i["insertText"] for i in r["result"]["items"]], ["ok_value;"], "text")
    reqs = mock.wait_requests(2)
    eq(len(reqs), 2, "one retry")
    gap = reqs[1]["t"] - reqs[0]["t"]
    check(gap >= 0.9, "Retry-After: 1 was honoured (%.2f s)" % gap)
    eq(r["result"]["data"].get("tries"), 2, "two tries")
    s.shutdown_and_exit()
    mock.stop()


def test_503_gives_up():
    mock = Mock()
    mock.default = {"status": 503, "body": '{"error": {"message": "overloaded"}}'}
    s = start(mock.url, backend={"maxTries": 3})
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    t0 = time.monotonic()
    r = inline(s, 1, len("  int x = "))
    expect_error(r, REQUEST_FAILED, id=r["id"])
    msg = r["error"]["message"]
    check("503" in msg and "overloaded" in msg, "a clear message", msg)
    eq(len(mock.requests), 3, "exactly maxTries tries")
    # Backoff: 200 ms, then 400 ms between the tries.
    check(time.monotonic() - t0 >= 0.55, "backoff between tries")
    st = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                        m["params"].get("backend", {}).get("state") == "error",
                        what="status: backend error")
    check("503" in st["params"]["backend"].get("message", ""), "status says why", st)
    s.shutdown_and_exit()
    mock.stop()


def test_backend_down():
    url = "http://127.0.0.1:%d" % closed_port()
    s = start(url)
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    r = inline(s, 1, len("  int x = "))
    expect_error(r, REQUEST_FAILED, id=r["id"])
    msg = r["error"]["message"]
    check("unreachable" in msg and "127.0.0.1" in msg, "a clear message", msg)
    st = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                        m["params"].get("backend", {}).get("state") == "unreachable",
                        what="status: backend unreachable")
    check("unreachable" in st["params"].get("message", ""), "the status message", st)
    # The session goes on.
    check("result" in s.request("sculpt/test/stats", {}), "still serving")
    s.shutdown_and_exit()


def test_cancel_closes_the_connection():
    mock = Mock()
    mock.script = [{"delay": 10, "text": "late"}]
    mock.default = {"text": "fresh_value;"}
    s = start(mock.url)
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(1)
    t0 = time.monotonic()
    s.notify("$/cancelRequest", {"id": rid})
    r = s.wait_response(rid, 5)
    expect_error(r, REQUEST_CANCELLED, id=rid)
    check(time.monotonic() - t0 < 2, "cancelled at once, not after the mock's delay")
    mock.wait_closed(1, 5)
    # The session goes on, and the next request gets an answer.
    r = inline(s, 1, len("  int x = "))
    eq([i["insertText"] for i in r["result"]["items"]], ["fresh_value;"], "next request")
    # A newer request on the same document supersedes (and disconnects) one
    # in flight. (Another document: the first answer is in the cache.)
    doc2 = "file:///w/two.c"
    open_doc(s, "int main(void) {\n  int y = \n}\n", uri=doc2)
    mock.script = [{"delay": 10, "text": "late"}]
    first = send_inline(s, 1, len("  int y = "), uri=doc2)
    mock.wait_requests(3)
    second = send_inline(s, 1, len("  int y"), uri=doc2)
    expect_error(s.wait_response(first, 5), REQUEST_CANCELLED, id=first)
    mock.wait_closed(2, 5)
    check("result" in s.wait_response(second, 10), "the newer request is answered")
    # Exit with a request in flight: it is answered once (-32800), the
    # connection closes.
    doc3 = "file:///w/three.c"
    open_doc(s, "int main(void) {\n  int z = \n}\n", uri=doc3)
    mock.script = [{"delay": 10, "text": "late"}]
    n = len(mock.requests)  # the second answer may have needed a repair request
    third = send_inline(s, 1, len("  int z = "), uri=doc3)
    mock.wait_requests(n + 1)
    s.shutdown_and_exit()
    expect_error(s.wait_response(third, 5), REQUEST_CANCELLED, id=third)
    mock.wait_closed(3, 5)
    mock.stop()


def test_timeout():
    mock = Mock()
    mock.default = {"delay": 5, "text": "never"}
    s = start(mock.url, backend={"timeoutMs": 300, "maxTries": 1})
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    t0 = time.monotonic()
    r = inline(s, 1, len("  int x = "))
    expect_error(r, REQUEST_FAILED, id=r["id"])
    check("timed out after 300 ms" in r["error"]["message"], "a clear message", r)
    check(time.monotonic() - t0 < 3, "the timeout, not the mock's delay")
    mock.wait_closed(1, 5)
    s.shutdown_and_exit()
    mock.stop()


def test_quick_fix_from_the_backend():
    # "Fill hole" on a hole marker: candidates come from the backend, and
    # only one that parses is offered.
    mock = Mock()
    mock.script = [{"text": "return a +;"}]  # does not parse: not offered
    mock.default = {"text": "return a + b;"}
    s = start(mock.url)
    text = "int sum(int a, int b) {\n  TODO(sculpt)\n}\n"
    open_doc(s, text)
    r = s.request("textDocument/codeAction",
                  {"textDocument": {"uri": URI},
                   "range": {"start": {"line": 1, "character": 2},
                             "end": {"line": 1, "character": 2}},
                   "context": {"diagnostics": []}}, 20)
    check("result" in r, "actions", r)
    edits = [e["newText"] for a in r["result"]
             for e in a.get("edit", {}).get("changes", {}).get(URI, [])]
    check("return a + b;" in edits, "the backend's fill is offered", r["result"])
    check("return a +;" not in edits, "a fill that does not parse is not", r["result"])
    body = mock.requests[0]["body"]
    check(body["prompt"].endswith("int sum(int a, int b) {\n  "), "prompt", body)
    check(body["suffix"].startswith("\n}"), "suffix", body)
    s.shutdown_and_exit()
    mock.stop()


def test_loop_does_not_block():
    mock = Mock()
    mock.default = {"delay": 2, "text": "slow_value;"}
    s = start(mock.url)
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(1)
    t0 = time.monotonic()
    st = s.request("sculpt/test/stats", {})["result"]
    dt = time.monotonic() - t0
    check(dt < 0.5, "stats answered in %.3f s while the HTTP request waits" % dt)
    eq(st["inflight"], 1, "the completion is still in flight")
    eq(st["remoteCalls"], 1, "one remote call")
    # Another document's edit and request are served meanwhile too.
    open_doc(s, "int y = \n", uri="file:///w/other.c")
    t0 = time.monotonic()
    check("result" in s.request("sculpt/test/document",
                                {"textDocument": {"uri": "file:///w/other.c"}}), "document")
    check(time.monotonic() - t0 < 0.5, "answered at once")
    r = s.wait_response(rid, 10)
    eq([i["insertText"] for i in r["result"]["items"]], ["slow_value;"], "then the answer")
    s.shutdown_and_exit()
    mock.stop()


def test_slow_quick_fix_does_not_hold_up_completions():
    # A code action with the remote backend waits on HTTP on its own worker
    # lane: a completion asked meanwhile is not queued behind it.
    mock = Mock()
    mock.script = [{"delay": 4, "text": "return a + b;"}]
    mock.default = {"text": "fast_value;"}
    s = start(mock.url)
    open_doc(s, "int sum(int a, int b) {\n  TODO(sculpt)\n}\n")
    other = "file:///w/other.c"
    open_doc(s, "int main(void) {\n  int x = \n}\n", uri=other)
    aid = s.send_request("textDocument/codeAction",
                         {"textDocument": {"uri": URI},
                          "range": {"start": {"line": 1, "character": 2},
                                    "end": {"line": 1, "character": 2}},
                          "context": {"diagnostics": []}})
    mock.wait_requests(1)
    t0 = time.monotonic()
    r = inline(s, 1, len("  int x = "), uri=other)
    dt = time.monotonic() - t0
    check(dt < 2.5, "the completion answered in %.2f s, not after the code action's 4 s" % dt)
    eq([i["insertText"] for i in r.get("result", {}).get("items", [])], ["fast_value;"],
       "the completion's text")
    ra = s.wait_response(aid, 20)
    edits = [e["newText"] for a in ra.get("result", [])
             for e in a.get("edit", {}).get("changes", {}).get(URI, [])]
    check("return a + b;" in edits, "then the code action's fill", ra)
    s.shutdown_and_exit()
    mock.stop()


def test_key_never_logged():
    mock = Mock()
    # A hostile server echoes the Authorization header in its error.
    mock.default = {"status": 401, "body": '{"error": {"message": "bad key Bearer %s"}}' % KEY}
    env = {"MY_FIM_KEY": KEY, "SCULPT_LOG": "debug"}
    s = start(mock.url, backend={"apiKeyEnv": "MY_FIM_KEY"}, env=env, log_level="debug",
              logLevel="debug")
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    r = inline(s, 1, len("  int x = "))
    expect_error(r, REQUEST_FAILED, id=r["id"])
    check("401" in r["error"]["message"], "the status is reported", r)
    check("bad key Bearer ***" in r["error"]["message"], "the echoed key is scrubbed", r)
    eq(mock.wait_requests(1)[0]["headers"].get("Authorization"), "Bearer " + KEY,
       "the key from apiKeyEnv is sent")
    # Unreachable too (another error path), at the most verbose level.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"backend": {
        "url": "http://127.0.0.1:%d" % closed_port(), "apiKeyEnv": "MY_FIM_KEY"}}}})
    r = inline(s, 1, len("  int x = "))
    check("error" in r, "an error", r)
    s.shutdown_and_exit()
    everything = s.stderr_text() + "\n" + "\n".join(repr(m) for m in s.messages)
    check("fim: backend" in s.stderr_text(), "the client's debug lines were logged",
          s.stderr_text()[-2000:])
    check(KEY not in everything, "the key appears nowhere in the log or the messages")
    mock.stop()


def test_repair_once():
    # The backend's candidate breaks the parse on its first line: that line
    # goes back as a canvas between the candidate's good tail and the
    # prompt, and the rewrite is kept when the whole then parses.
    doc = "int add(int a, int b) {\n    \n}\n"
    mock = Mock()
    mock.script = [{"text": "int s = a + ;\n    return s;"}, {"text": "int s = a + b;"}]
    s = start(mock.url, backend={"maxTries": 1})
    open_doc(s, doc)
    r = inline(s, 1, 4)
    eq([i["insertText"] for i in r["result"]["items"]], ["int s = a + b;\n    return s;"],
       "the broken line rewritten, the rest kept")
    eq(r["result"]["data"].get("repaired"), True, "data says it was repaired")
    reqs = mock.wait_requests(2)
    first, second = reqs[0]["body"], reqs[1]["body"]
    eq(second["prompt"], first["prompt"], "the span starts the candidate: the same prompt")
    check(second["suffix"].startswith("\n    return s;\n}"),
          "the candidate's good tail, then the document's suffix", second["suffix"])
    eq(second.get("stop"), ["\n"], "a one-line span is rewritten as one line")
    check(second["max_tokens"] < first["max_tokens"] or second["max_tokens"] <= 16,
          "the canvas is sized to the span", second)
    # A rewrite that still does not parse: nothing is offered.
    mock.script = [{"text": "int s = a + ;\n    return s;"}, {"text": "int s = a + ;"}]
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                        "contentChanges": [{"text": doc + "\n"}]})
    r = inline(s, 1, 4)
    eq(r["result"]["items"], [], "a failed repair offers nothing")
    eq(r["result"]["data"].get("discarded"), "new syntax errors, not repaired", "and says why")
    eq(len(mock.requests), 4, "one repair request per completion, no more")
    # The repair request fails (503; maxTries 1): only the repair is lost; the answer is an empty result, not an
    # error, and the status says what the backend did.
    mock.script = [{"text": "int s = a + ;\n    return s;"}] + [{"status": 503, "body": "{}"}] * 8
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3},
                                        "contentChanges": [{"text": doc.replace("add", "mul")}]})
    r = inline(s, 1, 4)
    check("result" in r, "not an error", r)
    eq(r["result"]["items"], [], "nothing offered")
    eq(r["result"]["data"].get("discarded"), "new syntax errors, the repair request failed",
       "and says why")
    mock.script = []
    n = len(mock.requests)
    # repair: false -- discarded at once, one request.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"repair": False}}})
    mock.script = [{"text": "int s = a + ;\n    return s;"}]
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 4},
                                        "contentChanges": [{"text": doc.replace("add", "sum")}]})
    r = inline(s, 1, 4)
    eq(r["result"]["items"], [], "discarded")
    eq(r["result"]["data"].get("discarded"), "new syntax errors", "no repair tried")
    eq(len(mock.requests), n + 1, "no repair request")
    s.shutdown_and_exit()
    mock.stop()


# The test hook SCULPT_TEST_SHAPE_DELAY_MS makes shaping the backend's answer
# (cut, trim, parse check, repair decision) take this long, inside the
# shaping step.
SHAPE_DELAY_MS = 5000  # long enough that a stalled ASan run still sees it shaping


def poll_shaping(s, rid, timeout=10):
    """Polls sculpt/test/stats until the completion rid is being shaped (a
    shaping job is running: "shaping") and it is not answered yet. Returns
    (seen, the slowest poll in seconds)."""
    deadline = time.monotonic() + timeout
    slowest = 0.0
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        st = s.request("sculpt/test/stats", {})["result"]
        slowest = max(slowest, time.monotonic() - t0)
        # The loop answers in order: were rid answered before this poll, its
        # response came first and is recorded by now.
        if key(rid) in s.responses:
            return False, slowest
        if st["shaping"] >= 1:
            return True, slowest
        time.sleep(0.02)
    return False, slowest


def test_shaping_off_the_loop():
    # The answer comes back at once, then is shaped for SHAPE_DELAY_MS. Requests sent
    # meanwhile are answered at once: shaping runs on the worker, not in the
    # HTTP callback on the loop (where these polls would wait that long and
    # only see the completion already answered).
    mock = Mock()
    mock.default = {"text": "value;"}
    s = start(mock.url, env={"SCULPT_TEST_SHAPE_DELAY_MS": str(SHAPE_DELAY_MS)})
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(1)
    seen, slowest = poll_shaping(s, rid)
    check(slowest < 0.5, "stats answered within %.3f s while the answer is shaped" % slowest)
    check(seen, "a stats request saw the completion being shaped before it was answered")
    t0 = time.monotonic()
    st = s.request("sculpt/test/stats", {})["result"]
    check(time.monotonic() - t0 < 0.5, "answered at once, again")
    check(key(rid) not in s.responses, "still shaping", st)
    eq(st["remoteCalls"], 1, "one remote call")
    r = s.wait_response(rid, 10)
    eq([i["insertText"] for i in r["result"]["items"]], ["value;"], "then the shaped answer")
    check(r["result"]["data"]["shapeMs"] >= 0.9 * SHAPE_DELAY_MS,
          "the hook's delay was inside the shaping", r["result"]["data"])
    eq(s.request("sculpt/test/stats", {})["result"]["inflight"], 0, "nothing left in flight")
    s.shutdown_and_exit()
    mock.stop()


def test_cancel_while_shaping():
    # A request answered while its answer is shaped (cancel, an edit, exit)
    # is answered at once, exactly once; the shaping job stops and frees
    # what it worked on (ASan would report otherwise).
    mock = Mock()
    mock.default = {"text": "value;"}
    s = start(mock.url, env={"SCULPT_TEST_SHAPE_DELAY_MS": "10000"})
    doc = "int main(void) {\n  int x = \n}\n"
    open_doc(s, doc)
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(1)
    check(poll_shaping(s, rid)[0], "shaping")
    t0 = time.monotonic()
    s.notify("$/cancelRequest", {"id": rid})
    expect_error(s.wait_response(rid, 5), REQUEST_CANCELLED, id=rid)
    check(time.monotonic() - t0 < 2, "cancelled at once, not after the shaping")
    # An edit: content modified.
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(2)
    check(poll_shaping(s, rid)[0], "shaping the second")
    t0 = time.monotonic()
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                        "contentChanges": [{"text": doc + "\n"}]})
    expect_error(s.wait_response(rid, 5), CONTENT_MODIFIED, id=rid)
    check(time.monotonic() - t0 < 2, "answered at once")
    # The shaping jobs end (they were told to stop, well before their 10 s):
    # nothing left in flight.
    deadline = time.monotonic() + 5
    while s.request("sculpt/test/stats", {})["result"]["inflight"] and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    eq(s.request("sculpt/test/stats", {})["result"]["inflight"], 0, "the shaping jobs ended")
    # Exit while one is shaped: answered -32800 once, a clean exit.
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(3)
    check(poll_shaping(s, rid)[0], "shaping the third")
    t0 = time.monotonic()
    eq(s.shutdown_and_exit(), 0, "exit code")
    expect_error(s.wait_response(rid, 5), REQUEST_CANCELLED, id=rid)
    check(time.monotonic() - t0 < 5, "exit does not wait for the shaping")
    mock.stop()


def test_settings_change_while_shaping():
    # A decoding setting changes while an answer is shaped: that answer is
    # still given, but not cached; the same request afterwards asks again.
    mock = Mock()
    mock.default = {"text": "value;"}
    s = start(mock.url, env={"SCULPT_TEST_SHAPE_DELAY_MS": "1500"})
    open_doc(s, "int main(void) {\n  int x = \n}\n")
    rid = send_inline(s, 1, len("  int x = "))
    mock.wait_requests(1)
    check(poll_shaping(s, rid)[0], "shaping")
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"maxTokens": 30}}})
    r = s.wait_response(rid, 10)
    eq([i["insertText"] for i in r["result"]["items"]], ["value;"], "the answer in flight")
    mock.default = {"text": "other;"}
    r = inline(s, 1, len("  int x = "))
    eq([i["insertText"] for i in r["result"]["items"]], ["other;"],
       "asked again under the new settings, not served from the cache")
    check(r["result"]["data"]["cached"] is False, "not cached", r["result"]["data"])
    eq(len(mock.requests), 2, "two remote requests")
    s.shutdown_and_exit()
    mock.stop()


def test_prompt_fits_the_backends_context():
    # The planted tokenizer is a token a byte. A long file: without a known
    # context the prompt is the budget (1024 tokens) at most; with
    # backend.contextTokens 300 (or learnt from a refusal that names it),
    # prompt and suffix fit what the canvas leaves.
    text = "int a;\n" * 1500 + "int main(void) {\n  int x = \n" + "int b;\n" * 600
    line = 1501
    mock = Mock()
    mock.default = {"text": "1;"}

    def sizes(i):
        body = mock.wait_requests(i + 1)[i]["body"]
        return len(body["prompt"].encode()), len(body["suffix"].encode()), body["max_tokens"]

    s = start(mock.url)
    open_doc(s, text)
    r = inline(s, line, len("  int x = "))
    check("error" not in r, "answered", r)
    pre, suf, _ = sizes(0)
    check(pre + suf <= 1024 and pre >= 512, "the budget bounds the prompt", pre, suf)
    s.shutdown_and_exit()

    s = start(mock.url, backend={"contextTokens": 300})
    open_doc(s, text)
    r = inline(s, line, len("  int x = "))
    check("error" not in r, "answered", r)
    eq(r["result"]["data"].get("contextTokens"), 300, "the data says the context")
    pre, suf, mt = sizes(1)
    # 300 - 8 (the FIM template) = 292; the canvas (64, and room for the
    # repair's request: 128) takes 128, the prompt 164, the prefix at least
    # half of it.
    check(pre + suf <= 164 and pre >= 82 and mt == 64, "fitted to 300 tokens", pre, suf, mt)
    s.shutdown_and_exit()

    # Learnt: the backend refuses with the OpenAI/vLLM message naming it.
    mock.script = [{"status": 400, "body": json.dumps({"error": {"message": (
        "This model's maximum context length is 300 tokens. However, you requested "
        "2048 tokens (1984 in the messages, 64 in the completion).")}})}]
    s = start(mock.url)
    open_doc(s, text)
    r = inline(s, line, len("  int x = "))
    expect_error(r, REQUEST_FAILED, check_id=False)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"].get("contextTokens") == 300, what="the learnt context")
    r = inline(s, line, len("  int x = "))
    check("error" not in r, "answered once the context is known", r)
    pre, suf, _ = sizes(3)
    check(pre + suf <= 164, "the next prompt fits what was learnt", pre, suf)
    s.shutdown_and_exit()
    mock.stop()


if __name__ == "__main__":
    try:
        run_tests([test_completion_from_the_backend, test_shaping_mid_line,
                   test_switch_between_remote_and_local, test_retry_after_429,
                   test_503_gives_up, test_backend_down, test_cancel_closes_the_connection,
                   test_timeout, test_quick_fix_from_the_backend,
                   test_slow_quick_fix_does_not_hold_up_completions, test_loop_does_not_block,
                   test_key_never_logged, test_repair_once, test_shaping_off_the_loop,
                   test_cancel_while_shaping, test_settings_change_while_shaping,
                   test_prompt_fits_the_backends_context])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

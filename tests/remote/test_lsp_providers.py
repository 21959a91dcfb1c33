"""The language server with the remote backend against a mock of each
provider (mockfim.py, written from the providers' docs and sources): the
request in the provider's shape (llama.cpp gets the repository snippets as
input_extra, with their paths), the answer read from its field, streamed and
whole; a one-line request ends the stream at the line's end (the rest is
never waited for); drafts as sculpt/draft notifications when asked for; a
cut-off answer is marked, or dropped with cutOff "drop"; a missing model or
template is an error naming the setting; a refusal carries its hint."""
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "protocol"))
sys.path.insert(0, HERE)

from lspclient import check, eq, expect_error, key, run_tests  # noqa: E402
from mockfim import Mock  # noqa: E402
import remotehelp  # noqa: E402
from remotehelp import REQUEST_FAILED, URI, send_inline  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sculpt-providers-lsp-")
MODEL = remotehelp.planted_model(TMP)
DOC = "int main(void) {\n  int x = \n}\n"
COL = len("  int x = ")


def start(backend, root=None, **extra):
    return remotehelp.start(MODEL, dict({"timeoutMs": 5000, "maxTries": 1}, **backend),
                            root=root, **extra)


def open_doc(s, text=DOC, uri=URI, lang="c"):
    remotehelp.open_doc(s, text, uri, lang)


def inline(s, line, character, uri=URI, timeout=20):
    return remotehelp.inline(s, line, character, uri, timeout)


def texts(r):
    return [i["insertText"] for i in r.get("result", {}).get("items", [])]


def edit(s, version, text, uri=URI):
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                        "contentChanges": [{"text": text}]})


def test_llamacpp_input_extra():
    # A definition in another file of the workspace is a snippet: llama.cpp
    # gets it apart from the prefix, as input_extra with its path.
    repo = remotehelp.snippet_workspace("sculpt-llama-ws-")
    text = remotehelp.SNIPPET_APP
    mock = Mock("llamacpp")
    mock.default = {"text": "value\nprint(2)\n"}
    s = start({"url": mock.url, "provider": "llama.cpp"}, root=repo)
    remotehelp.wait_index(s)
    uri = "file://" + os.path.join(repo, "app.py")
    open_doc(s, text, uri=uri, lang="python")
    line = "x = compute_total([1]) + abc"
    r = inline(s, 2, len(line), uri=uri)
    eq(texts(r), ["value"], "the answer from content, cut to the line")
    req = mock.wait_requests(1)[0]
    eq(req["path"], "/infill", "llama.cpp's endpoint")
    b = req["body"]
    extra = b.get("input_extra", [])
    check(any(c.get("filename") == "pkg/calc.py" and "def compute_total" in c["text"]
              for c in extra), "the snippet as input_extra, with its path", extra)
    check(b["input_prefix"].endswith(line) and "def compute_total" not in b["input_prefix"],
          "input_prefix is the window alone", b["input_prefix"][-200:])
    check(b["input_prefix"].startswith("from pkg.calc"), "from the document's start",
          b["input_prefix"][:80])
    check(b["input_suffix"].startswith("\nprint(x)"), "input_suffix", b["input_suffix"])
    check("prompt" not in b and b.get("n_predict", 0) > 0, "no prompt field; n_predict", b)
    s.shutdown_and_exit()
    mock.stop()
    shutil.rmtree(repo, ignore_errors=True)


def test_streamed_shapes():
    # Mistral (delta.content), Ollama (NDJSON), vLLM with a template: the
    # same shaped answer, streamed and whole.
    cases = [("mistral", {"provider": "mistral", "model": "codestral-latest"}, ""),
             ("ollama", {"provider": "ollama", "model": "mock-model"}, ""),
             ("vllm", {"fimTemplate": "starcoder"}, "/v1")]
    for name, backend, path in cases:
        for stream in (True, False):
            mock = Mock(name)
            mock.default = {"text": "ok_value;"}
            s = start(dict(backend, url=mock.url + path, stream=stream))
            open_doc(s)
            r = inline(s, 1, COL)
            eq(texts(r), ["ok_value;"], "%s (stream %s): the answer" % (name, stream))
            eq(r.get("result", {}).get("data", {}).get("streamed"), stream,
               "%s: data.streamed" % name)
            b = mock.wait_requests(1)[0]["body"]
            eq(b.get("stream"), stream, "%s: the stream field" % name)
            if name == "vllm":
                check("suffix" not in b and b["prompt"].startswith("<fim_prefix>"),
                      "vllm: StarCoder's tokens, no suffix", b)
            s.shutdown_and_exit()
            mock.stop()


def test_one_line_stops_at_the_line_end():
    # A one-line completion: the server streams the line, then dawdles over
    # more; the client closes the stream at the line's end and answers.
    mock = Mock("vllm")
    mock.default = {"pieces": ["1, 2", ");\n", "int y = 3;\n", "int z;\n"], "piece_delay": 4}
    s = start({"url": mock.url + "/v1", "fimTemplate": "qwen"})
    open_doc(s, "int f(int a, int b);\nint main(void) {\n  int x = f();\n  return x;\n}\n")
    t0 = time.monotonic()
    r = inline(s, 2, len("  int x = f("), timeout=30)
    dt = time.monotonic() - t0
    eq(texts(r), ["1, 2"], "the line, shaped")
    check(r["result"]["data"].get("stoppedEarly") is True, "data says it stopped early",
          r["result"]["data"])
    # Two pieces are needed (the newline is in the second, after one gap of 4 s);
    # the other two gaps are not waited for.
    check(dt < 7.5, "answered after the line, not the whole stream (%.1f s)" % dt)
    mock.wait_closed(1, 10)
    s.shutdown_and_exit()
    mock.stop()


def test_drafts():
    # drafts: true -- the text so far goes out as sculpt/draft (same request
    # id and position) before the answer, which then replaces it.
    mock = Mock("generic")
    mock.default = {"pieces": ["int s", " = a + b;\n", "  return s;"], "piece_delay": 0.4}
    doc = "int add(int a, int b) {\n  \n}\n"
    s = start({"url": mock.url, "drafts": True})
    open_doc(s, doc)
    rid = send_inline(s, 1, 2)
    r = s.wait_response(rid, 20)
    drafts = [m["params"] for m in s.messages if m.get("method") == "sculpt/draft"]
    check(len(drafts) >= 2, "drafts while the answer streams", drafts)
    check(all(d["requestId"] == rid and d["textDocument"]["uri"] == URI and
              d["position"] == {"line": 1, "character": 2} for d in drafts),
          "each names its request and position", drafts)
    check(drafts and drafts[0]["text"] == "int s", "the first draft: the first piece", drafts)
    check([d["text"] for d in drafts] == sorted((d["text"] for d in drafts), key=len),
          "drafts grow", drafts)
    resp_at = next(i for i, m in enumerate(s.messages) if m.get("id") == rid)
    last_draft = max(i for i, m in enumerate(s.messages) if m.get("method") == "sculpt/draft")
    check(last_draft < resp_at, "every draft comes before the answer")
    check(texts(r) and texts(r)[0].startswith("int s = a + b;"), "the shaped answer", r)
    check(r["result"]["data"].get("firstTextMs", 0) > 0, "data.firstTextMs", r["result"]["data"])
    s.shutdown_and_exit()
    # Off by default: no drafts.
    s = start({"url": mock.url})
    open_doc(s, doc)
    inline(s, 1, 2)
    check(not any(m.get("method") == "sculpt/draft" for m in s.messages), "no drafts by default")
    s.shutdown_and_exit()
    mock.stop()


def test_cut_off():
    # finish_reason "length": marked by default; dropped with cutOff "drop".
    mock = Mock("generic")
    mock.default = {"text": "value;", "finish": "length"}
    s = start({"url": mock.url})
    open_doc(s)
    r = inline(s, 1, COL)
    eq(texts(r), ["value;"], "offered")
    eq(r["result"]["data"].get("cutOff"), True, "marked cut off")
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"backend": {
        "url": mock.url, "cutOff": "drop", "timeoutMs": 5000}}}})
    edit(s, 2, DOC + "\n")
    r = inline(s, 1, COL)
    eq(texts(r), [], "dropped")
    eq(r["result"]["data"].get("discarded"), "cut off: the backend stopped at maxTokens",
       "and says why")
    mock.default = {"text": "whole;"}
    edit(s, 3, DOC + "\n\n")
    r = inline(s, 1, COL)
    eq(texts(r), ["whole;"], "a complete answer is kept")
    check("cutOff" not in r["result"]["data"], "and not marked", r["result"]["data"])
    s.shutdown_and_exit()
    mock.stop()


def test_configuration_errors():
    # A provider that needs a model, without one: the request fails with a
    # message naming the setting, and the status says so; a bad provider
    # name is a warning and the setting is ignored.
    mock = Mock("mistral")
    s = start({"url": mock.url, "provider": "mistral"})
    open_doc(s)
    r = inline(s, 1, COL)
    expect_error(r, REQUEST_FAILED, id=r["id"])
    check("\"model\"" in r["error"]["message"] and "mistral" in r["error"]["message"],
          "the error names the setting", r["error"])
    st = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                        m["params"].get("backend", {}).get("state") == "error", what="status")
    check("model" in st["params"]["backend"].get("message", ""), "the status says why", st)
    eq(len(mock.requests), 0, "nothing was sent")
    n0 = len(s.messages)
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"backend": {
        "url": mock.url, "provider": "codestral"}}}})
    s.wait_message(lambda m: m.get("method") == "window/logMessage" and
                   "backend.provider must be one of" in m["params"]["message"], start=n0,
                   what="a warning for the bad provider")
    # vLLM refusing the suffix: the error carries the hint.
    vllm = Mock("vllm")
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"backend": {
        "url": vllm.url + "/v1/completions", "maxTries": 1}}}})
    edit(s, 2, DOC + "\n")
    r = inline(s, 1, COL)
    expect_error(r, REQUEST_FAILED, id=r["id"])
    check("prompt-template" in r["error"]["message"], "the hint", r["error"])
    s.shutdown_and_exit()
    mock.stop()
    vllm.stop()


def test_cancel_mid_stream():
    # $/cancelRequest while the answer streams closes the connection.
    mock = Mock("generic")
    mock.default = {"pieces": ["int s", " = 1;", " more"], "piece_delay": 5}
    s = start({"url": mock.url})
    open_doc(s, "int add(int a, int b) {\n  \n}\n")
    rid = send_inline(s, 1, 2)
    mock.wait_requests(1)
    time.sleep(0.3)  # the first piece is in
    s.notify("$/cancelRequest", {"id": rid})
    expect_error(s.wait_response(rid, 5), -32800, id=rid)
    mock.wait_closed(1, 5)
    check(key(rid) in s.responses, "answered once")
    s.shutdown_and_exit()
    mock.stop()


if __name__ == "__main__":
    try:
        run_tests([test_llamacpp_input_extra, test_streamed_shapes,
                   test_one_line_stops_at_the_line_end, test_drafts, test_cut_off,
                   test_configuration_errors, test_cancel_mid_stream])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

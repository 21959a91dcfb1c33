"""`sculpt complete --backend` (and `sculpt batch --backend`) against a mock
of each provider (mockfim.py, written from the providers' docs and sources):
the request in the provider's shape at its endpoint (a base URL's path
prefix kept), the answer read from its field, whole and streamed; a model
the provider requires is asked for by name; refusals carry a hint; a
cut-off answer (finish_reason length) is reported; vLLM refuses the suffix
and prompt-template sends the model's FIM tokens instead; SGLang without a
completion template drops the suffix."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "protocol"))
from remotehelp import run_sculpt, sculpt_bin  # noqa: E402
from mockfim import Mock  # noqa: E402

BIN = sculpt_bin()
failures = []

TEXT = "int f(int a, int b);\nint main(void) {\n  int x = f();\n  return x;\n}\n"
BEFORE = TEXT[:TEXT.index("f()") + 2]
COL = len("  int x = f(") + 1
ANSWER = "1, 2);\nint y = 3;\n"


def check(cond, what, *detail):
    if not cond:
        failures.append(what)
        print("FAIL:", what, *[repr(d)[:600] for d in detail])


run = run_sculpt


def complete(path, url, *extra):
    p = run(["complete", "--backend", url, "--json", "--timeout", "5000", "--max-tries", "1"]
            + list(extra) + ["%s:3:%d" % (path, COL)])
    out = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {}
    return p, out


def last(mock):
    return mock.requests[-1] if mock.requests else {"path": "", "body": {}, "seen": {}}


def each_stream(fn):
    """Runs fn(stream_flag) with the answer streamed and whole."""
    for stream in ("on", "off"):
        fn(stream)


def test_openai_family(path):
    # sculpt serve / Mercury: /v1/fim/completions under any base path.
    mock = Mock("openai")
    mock.default = {"text": ANSWER}

    def one(stream):
        p, out = complete(path, mock.url + "/v1", "--backend-model", "mercury-coder",
                          "--stream", stream)
        check(p.returncode == 0 and out.get("text") == "1, 2", "mercury: shaped answer",
              stream, out, p.stderr)
        r = last(mock)
        check(r["path"] == "/v1/fim/completions", "mercury: endpoint under /v1", r["path"])
        check(r["body"].get("prompt") == BEFORE and r["body"]["suffix"].startswith(");"),
              "mercury: prompt and suffix", r["body"])
        check(r["body"].get("stream") is (stream == "on") and
              out.get("streamed") is (stream == "on"), "mercury: stream " + stream, r["body"], out)
        check(out.get("provider") == "openai-fim", "provider detected", out)
    each_stream(one)
    mock.stop()
    # A proxy's path prefix is kept.
    gen = Mock("generic")
    gen.default = {"text": ANSWER}
    p, out = complete(path, gen.url + "/proxy/team-a/v1")
    check(p.returncode == 0 and last(gen)["path"] == "/proxy/team-a/v1/fim/completions",
          "a base URL's path prefix is kept", last(gen)["path"], p.stderr)
    # finish_reason "length": reported, in JSON and on stderr.
    gen.default = {"text": "1, 2", "finish": "length"}
    p, out = complete(path, gen.url)
    check(out.get("truncated") is True and out.get("finish_reason") == "length",
          "a cut-off answer is marked", out)
    p = run(["complete", "--backend", gen.url, "%s:3:%d" % (path, COL)])
    check(p.returncode == 0 and "cut off" in p.stderr, "and said in plain mode", p.stderr)
    gen.stop()


def test_deepseek(path):
    mock = Mock("deepseek")
    mock.default = {"text": ANSWER}
    # The /beta base is posted to as /beta/completions, and a model is needed.
    p, out = complete(path, mock.url + "/beta")
    check(p.returncode == 2 and "--backend-model" in p.stderr and not mock.requests,
          "deepseek: a missing model is a clear error before any request", p.returncode,
          p.stderr)

    def one(stream):
        p, out = complete(path, mock.url + "/beta", "--backend-model", "deepseek-chat",
                          "--stream", stream)
        check(p.returncode == 0 and out.get("text") == "1, 2", "deepseek: answer", stream,
              out, p.stderr)
        check(last(mock)["path"] == "/beta/completions", "deepseek: endpoint",
              last(mock)["path"])
    each_stream(one)
    mock.stop()


def test_vllm(path):
    mock = Mock("vllm", served_model="Qwen/Qwen2.5-Coder-1.5B")
    mock.default = {"text": ANSWER}
    # As an OpenAI FIM endpoint: vLLM refuses the suffix; the hint says what to do.
    p, out = complete(path, mock.url + "/v1/completions")
    check(p.returncode == 1 and "suffix is not currently supported" in p.stderr and
          "prompt-template" in p.stderr, "vllm: the 400 with a hint", p.stderr)

    def one(stream):
        p, out = complete(path, mock.url + "/v1", "--fim-template", "qwen", "--stream", stream)
        check(p.returncode == 0 and out.get("text") == "1, 2", "vllm + qwen template: answer",
              stream, out, p.stderr)
        r = last(mock)
        check(r["path"] == "/v1/completions" and "suffix" not in r["body"],
              "vllm: /v1/completions, no suffix", r["path"], r["body"])
        want = "<|fim_prefix|>" + BEFORE + "<|fim_suffix|>"
        check(r["body"].get("prompt", "").startswith(want) and
              r["body"]["prompt"].endswith("<|fim_middle|>") and
              ");\n  return x;" in r["body"]["prompt"], "vllm: Qwen's FIM tokens", r["body"])
        check(out.get("provider") == "prompt-template", "fimTemplate chooses prompt-template",
              out)
    each_stream(one)
    # A model the server does not serve: 404 with a hint naming the model.
    p, out = complete(path, mock.url + "/v1", "--fim-template", "qwen", "--backend-model",
                      "other")
    check(p.returncode == 1 and "404" in p.stderr and "model (other)" in p.stderr,
          "vllm: unknown model, a hint", p.stderr)
    # prompt-template without a template: refused before any request.
    n = len(mock.requests)
    p, out = complete(path, mock.url, "--provider", "prompt-template")
    check(p.returncode == 2 and "--fim-template" in p.stderr and len(mock.requests) == n,
          "prompt-template needs a template", p.stderr)
    mock.stop()


def test_sglang(path):
    # Without --completion-template SGLang drops the suffix: the request
    # "works" but the model only sees the prefix (what sculpt cannot detect,
    # hence prompt-template).
    mock = Mock("sglang")
    mock.default = {"text": ANSWER}
    p, out = complete(path, mock.url + "/v1/completions")
    check(p.returncode == 0 and last(mock)["seen"].get("suffix_dropped") is True,
          "sglang: the suffix is dropped without a completion template", last(mock))
    for tmpl, tokens in (("deepseek", ("<\uff5cfim\u2581begin\uff5c>", "<\uff5cfim\u2581hole\uff5c>",
                                       "<\uff5cfim\u2581end\uff5c>")),
                         ("starcoder", ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"))):
        p, out = complete(path, mock.url, "--provider", "prompt-template", "--fim-template", tmpl)
        seen = last(mock)["seen"].get("prompt", "")
        check(p.returncode == 0 and out.get("text") == "1, 2", "sglang + %s: answer" % tmpl,
              out, p.stderr)
        check(seen == tokens[0] + BEFORE + tokens[1] + TEXT[len(BEFORE):] + tokens[2],
              "sglang: the %s template around the whole file" % tmpl, seen)
        check(not last(mock)["seen"].get("suffix_dropped"), "nothing dropped", last(mock))
    mock.stop()
    # Started with --completion-template qwen_coder, SGLang takes the suffix.
    mock = Mock("sglang", completion_template="qwen_coder")
    mock.default = {"text": ANSWER}
    p, out = complete(path, mock.url + "/v1/completions")
    check(p.returncode == 0 and last(mock)["seen"]["prompt"].startswith("<|fim_prefix|>"),
          "sglang with its completion template uses the suffix", last(mock)["seen"])
    mock.stop()


def test_mistral(path):
    mock = Mock("mistral")
    mock.default = {"text": ANSWER}
    p, out = complete(path, mock.url, "--provider", "mistral")
    check(p.returncode == 2 and "model" in p.stderr and not mock.requests,
          "mistral: a missing model is a clear error", p.stderr)

    def one(stream):
        p, out = complete(path, mock.url + "/v1", "--provider", "mistral", "--backend-model",
                          "codestral-latest", "--stream", stream)
        check(p.returncode == 0 and out.get("text") == "1, 2" and out.get("raw") == ANSWER,
              "mistral: the answer from message.content / delta.content", stream, out,
              p.stderr)
        check(last(mock)["path"] == "/v1/fim/completions", "mistral: endpoint",
              last(mock)["path"])
    each_stream(one)
    # The server's own 422 (here: the body is refused) is read from detail.
    mock.default = {"status": 422, "body": json.dumps({"detail": [
        {"type": "missing", "loc": ["body", "prompt"], "msg": "Field required"}]})}
    p, out = complete(path, mock.url, "--provider", "mistral", "--backend-model", "c")
    check(p.returncode == 1 and "prompt: Field required" in p.stderr and "hint" in p.stderr,
          "mistral: a 422 says which field, with a hint", p.stderr)
    mock.stop()


def test_llamacpp(path):
    mock = Mock("llamacpp")
    mock.default = {"text": ANSWER}

    def one(stream):
        p, out = complete(path, mock.url, "--provider", "llama.cpp", "--stream", stream)
        check(p.returncode == 0 and out.get("text") == "1, 2", "llama.cpp: answer from content",
              stream, out, p.stderr)
        b = last(mock)["body"]
        check(last(mock)["path"] == "/infill" and b.get("input_prefix") == BEFORE and
              b.get("input_suffix", "").startswith(");") and "prompt" not in b and
              b.get("n_predict", 0) > 0, "llama.cpp: /infill's fields", last(mock))
    each_stream(one)
    # Detected from the URL; stop_type "limit" is a cut-off answer.
    mock.default = {"text": "1, 2", "finish": "length"}
    p, out = complete(path, mock.url + "/infill")
    check(out.get("provider") == "llama.cpp" and out.get("truncated") is True,
          "llama.cpp: detected from /infill; limit marks it cut off", out, p.stderr)
    mock.stop()
    # A model without FIM tokens: 501, not retried, with a hint.
    mock = Mock("llamacpp", has_fim=False)
    p = run(["complete", "--backend", mock.url + "/infill", "--max-tries", "3",
             "%s:3:%d" % (path, COL)])
    check(p.returncode == 1 and "501" in p.stderr and "FIM tokens" in p.stderr and
          len(mock.requests) == 1, "llama.cpp: 501 once, with a hint", p.stderr,
          len(mock.requests))
    mock.stop()


def test_ollama(path):
    mock = Mock("ollama", served_model="qwen2.5-coder:1.5b")
    mock.default = {"text": ANSWER}
    p, out = complete(path, mock.url + "/api/generate")
    check(p.returncode == 2 and "model" in p.stderr, "ollama: a model is required", p.stderr)

    def one(stream):
        p, out = complete(path, mock.url + "/api/generate", "--backend-model",
                          "qwen2.5-coder:1.5b", "--stream", stream)
        check(p.returncode == 0 and out.get("text") == "1, 2", "ollama: answer from response",
              stream, out, p.stderr)
        b = last(mock)["body"]
        check(b.get("suffix", "").startswith(");") and b.get("options", {}).get("num_predict")
              and b.get("stream") is (stream == "on"), "ollama: native fields", b)
        check(out.get("streamed") is (stream == "on"), "ollama: NDJSON when streamed", out)
    each_stream(one)
    p, out = complete(path, mock.url, "--provider", "ollama", "--backend-model", "nope")
    check(p.returncode == 1 and "not found, try pulling it first" in p.stderr,
          "ollama: an unknown model is Ollama's 404", p.stderr)
    mock.stop()
    mock = Mock("ollama", served_model="llama3", insert=False)
    p, out = complete(path, mock.url, "--provider", "ollama", "--backend-model", "llama3")
    check(p.returncode == 1 and "does not support insert" in p.stderr and
          "insert capability" in p.stderr, "ollama: no insert capability, a hint", p.stderr)
    mock.stop()
    # Ollama's OpenAI layer: /v1/completions with a suffix; a model is needed.
    mock = Mock("ollama-v1", served_model="qwen2.5-coder:1.5b")
    mock.default = {"text": ANSWER}
    p, out = complete(path, mock.url + "/v1/completions")
    check(p.returncode == 1 and "model is required" in p.stderr, "ollama /v1: model required",
          p.stderr)
    p, out = complete(path, mock.url + "/v1/completions", "--backend-model", "qwen2.5-coder:1.5b")
    check(p.returncode == 0 and out.get("text") == "1, 2" and
          last(mock)["body"].get("suffix", "").startswith(");"), "ollama /v1: answer", out,
          p.stderr)
    mock.stop()


def test_flags(path):
    for args, says in ((["--provider", "llamacpp"], "--provider takes"),
                       (["--fim-template", "qwen2"], "--fim-template takes"),
                       (["--stream", "maybe"], "--stream takes")):
        p = run(["complete", "--backend", "http://127.0.0.1:1"] + args + ["%s:3:%d" % (path, COL)])
        check(p.returncode == 2 and says in p.stderr, "bad " + args[0], p.stderr)
    p = run(["complete", "--provider", "mistral", "%s:3:%d" % (path, COL)])
    check(p.returncode == 2 and "go with --backend" in p.stderr, "--provider needs --backend",
          p.stderr)
    p = run(["batch", "--holes", "--fim-template", "qwen", path])
    check(p.returncode == 2 and "go with --backend" in p.stderr, "batch too", p.stderr)
    for cmd in ("complete", "batch"):
        h = run(["help", cmd]).stdout
        check("--provider" in h and "--fim-template" in h and "--stream" in h,
              "sculpt help %s lists the flags" % cmd, h[-800:])


def test_batch_llamacpp():
    tmp = tempfile.mkdtemp(prefix="sculpt-remote-batch-")
    subprocess.run(["git", "init", "-q", tmp], check=True)
    with open(os.path.join(tmp, "sum.c"), "w") as f:
        f.write("int sum(int a, int b) {\n  TODO(sculpt)\n}\n")
    mock = Mock("llamacpp")
    mock.default = {"text": "return a + b;"}
    p = run(["batch", "--holes", "--backend", mock.url, "--provider", "llama.cpp", "--write", tmp])
    with open(os.path.join(tmp, "sum.c")) as f:
        got = f.read()
    check(p.returncode == 0 and got == "int sum(int a, int b) {\n  return a + b;\n}\n",
          "batch through llama.cpp's /infill", p.stderr, got)
    check(mock.requests and mock.requests[0]["path"] == "/infill", "batch: /infill")
    mock.stop()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    tmp = tempfile.mkdtemp(prefix="sculpt-providers-")
    path = os.path.join(tmp, "main.c")
    with open(path, "w") as f:
        f.write(TEXT)
    try:
        for t in (test_openai_family, test_deepseek, test_vllm, test_sglang, test_mistral,
                  test_llamacpp, test_ollama, test_flags):
            t(path)
        test_batch_llamacpp()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")

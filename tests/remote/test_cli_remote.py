"""`sculpt complete --backend URL` and `sculpt batch --backend URL` against a
mock OpenAI-compatible FIM server (mockfim.py): the request carries the text
before and after the position, the key from --api-key-env as a bearer token
and the --backend-model; the answer is shaped (one line mid-line); a dead
backend is a clear error; batch fills holes with the remote text, keeping
only what parses."""
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
from mockfim import Mock, closed_port  # noqa: E402

BIN = sculpt_bin()
KEY = "sk-cli-" + "0a1b2c3d4e5f6071"
failures = []


def check(cond, what, *detail):
    if not cond:
        failures.append(what)
        print("FAIL:", what, *[repr(d)[:500] for d in detail])


run = run_sculpt


def test_complete():
    tmp = tempfile.mkdtemp(prefix="sculpt-remote-cli-")
    path = os.path.join(tmp, "main.c")
    text = "int f(int a, int b);\nint main(void) {\n  int x = f();\n  return x;\n}\n"
    with open(path, "w") as f:
        f.write(text)
    mock = Mock()
    mock.default = {"text": "1, 2);\nint y = 3;\n"}
    col = len("  int x = f(") + 1
    p = run(["complete", "--backend", mock.url, "--backend-model", "m1", "--api-key-env",
             "CLI_KEY", "--timeout", "5000", "--json", "%s:3:%d" % (path, col)],
            env={"CLI_KEY": KEY})
    check(p.returncode == 0, "complete --backend succeeds", p.stderr)
    out = json.loads(p.stdout) if p.returncode == 0 else {}
    check(out.get("raw") == "1, 2);\nint y = 3;\n", "the raw answer", out)
    check(out.get("text") == "1, 2", "shaped: one line, without the ');' the line has", out)
    req = mock.requests[0] if mock.requests else {"body": {}, "headers": {}, "path": ""}
    check(req["path"] == "/v1/fim/completions", "endpoint", req["path"])
    body = req["body"]
    check(body.get("prompt") == text[:text.rindex("f(") + 2], "prompt: the text before", body)
    check(body.get("suffix", "").startswith(");\n  return x;"), "suffix: the text after", body)
    check(body.get("model") == "m1", "--backend-model", body)
    check(body.get("stream") is True, "a streamed answer is asked for", body)
    check(req["headers"].get("Authorization") == "Bearer " + KEY, "--api-key-env", req["headers"])
    check(KEY not in p.stderr + p.stdout, "the key is not printed")
    # Plain output: the shaped text alone.
    p = run(["complete", "--backend", mock.url + "/v1/fim/completions",
             "%s:3:%d" % (path, col)])
    check(p.returncode == 0 and p.stdout == out.get("text", "") + "\n", "plain output",
          p.stdout, p.stderr)
    check(mock.requests[-1]["path"] == "/v1/fim/completions", "a URL with a path is used as given")
    # A dead backend: exit 1 and a clear message.
    p = run(["complete", "--backend", "http://127.0.0.1:%d" % closed_port(),
             "%s:3:%d" % (path, col)])
    check(p.returncode == 1 and "unreachable" in p.stderr, "dead backend", p.returncode, p.stderr)
    # A bad URL is a usage error.
    p = run(["complete", "--backend", "ftp://x", "%s:3:%d" % (path, col)])
    check(p.returncode == 2, "--backend must be http(s)", p.stderr)
    mock.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def test_batch():
    tmp = tempfile.mkdtemp(prefix="sculpt-remote-batch-")
    subprocess.run(["git", "init", "-q", tmp], check=True)
    files = {"letters.py": 'LETTERS = abcTODO(sculpt)\n\n\ndef count():\n    return len(LETTERS)\n',
             "sum.c": "int sum(int a, int b) {\n  TODO(sculpt)\n}\n"}
    for name, t in files.items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(t)

    def fill(body):
        # Answers by what precedes the hole: the test sees the prompt is right.
        p = body["prompt"]
        if p.endswith('LETTERS = abc'):
            return "defg\nrest"  # an inline hole keeps one line
        if p.rstrip().endswith("int sum(int a, int b) {"):
            return "return a + b;"
        return "@@@ ("  # never parses

    mock = Mock()
    mock.default = {"text": fill}
    p = run(["batch", "--holes", "--backend", mock.url, "--write", "--json", tmp])
    check(p.returncode == 0, "batch --backend succeeds", p.returncode, p.stderr, p.stdout)
    with open(os.path.join(tmp, "sum.c")) as f:
        got = f.read()
    check(got == "int sum(int a, int b) {\n  return a + b;\n}\n", "sum.c filled", got)
    with open(os.path.join(tmp, "letters.py")) as f:
        got = f.read()
    check(got.startswith('LETTERS = abcdefg\n'), "letters.py filled on its line", got)
    check(len(mock.requests) >= 2, "one request per hole at least", len(mock.requests))
    for r in mock.requests:
        check(r["body"]["suffix"] != "" and "TODO(sculpt)" not in r["body"]["prompt"] +
              r["body"]["suffix"], "the hole marker is not sent", r["body"])
    # Down: every hole fails with the reason, nothing is written.
    with open(os.path.join(tmp, "new.c"), "w") as f:
        f.write("int one(void) {\n  TODO(sculpt)\n}\n")
    p = run(["batch", "--holes", "--backend", "http://127.0.0.1:%d" % closed_port(), "--write",
             os.path.join(tmp, "new.c")])
    check(p.returncode != 0 and "unreachable" in p.stderr, "dead backend", p.returncode, p.stderr)
    with open(os.path.join(tmp, "new.c")) as f:
        check("TODO(sculpt)" in f.read(), "nothing written")
    mock.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def test_complete_repairs_once():
    # The answer breaks the parse on its first line: one more request
    # rewrites that line between the prompt and the candidate's good tail.
    tmp = tempfile.mkdtemp(prefix="sculpt-remote-cli-")
    path = os.path.join(tmp, "add.c")
    with open(path, "w") as f:
        f.write("int add(int a, int b) {\n    \n}\n")
    mock = Mock()
    mock.script = [{"text": "int s = a + ;\n    return s;"}, {"text": "int s = a + b;"}]
    p = run(["complete", "--backend", mock.url, "--json", "%s:2:5" % path])
    out = json.loads(p.stdout) if p.returncode == 0 else {}
    check(out.get("text") == "int s = a + b;\n    return s;", "the broken line rewritten", out,
          p.stderr)
    check(out.get("repaired") is True and out.get("raw") == "int s = a + ;\n    return s;",
          "json says repaired and keeps the first answer", out)
    check(len(mock.requests) == 2, "one repair request", len(mock.requests))
    if len(mock.requests) == 2:
        second = mock.requests[1]["body"]
        check(second["suffix"].startswith("\n    return s;\n}"), "the repair's suffix", second)
    # Still broken after the repair: nothing is printed, and it says why.
    mock.script = [{"text": "int s = a + ;\n    return s;"}, {"text": "int s = ;"}]
    p = run(["complete", "--backend", mock.url, "%s:2:5" % path])
    check(p.returncode == 0 and p.stdout.strip() == "" and "new syntax errors" in p.stderr,
          "a failed repair keeps nothing", p.stdout, p.stderr)
    mock.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def test_max_tries():
    # --max-tries N: a backend that keeps answering 503 is asked N times.
    tmp = tempfile.mkdtemp(prefix="sculpt-remote-cli-")
    path = os.path.join(tmp, "a.py")
    with open(path, "w") as f:
        f.write("x = 1\n")
    mock = Mock()
    mock.default = {"status": 503, "body": "{}"}
    p = run(["complete", "--backend", mock.url, "--max-tries", "2", "%s:1:5" % path])
    check(p.returncode == 1 and "503" in p.stderr, "gives up with the status", p.stderr)
    check(len(mock.requests) == 2, "two tries", len(mock.requests))
    p = run(["complete", "--max-tries", "2", "%s:1:5" % path])
    check(p.returncode == 2, "--max-tries without --backend is a usage error", p.stderr)
    p = run(["complete", "--backend", mock.url, "--max-tries", "0", "%s:1:5" % path])
    check(p.returncode == 2, "--max-tries 0 is refused", p.stderr)
    mock.stop()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    test_complete()
    test_batch()
    test_complete_repairs_once()
    test_max_tries()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")

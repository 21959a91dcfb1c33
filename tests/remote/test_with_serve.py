"""End to end: `sculpt serve --listen 127.0.0.1:0` with the planted byte-level
model (after "...abc" it writes "defghijklmnopqrstuvwxyz" and ends), and a
`sculpt lsp` whose backend setting points at it: the completion crosses
HTTP and comes back shaped, with the key the server demands; then
`sculpt complete --backend` against the same server."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "protocol"))
sys.path.insert(0, HERE)
from lspclient import check, eq, run_tests, spawn  # noqa: E402
from mockfim import clean_env  # noqa: E402
import remotehelp  # noqa: E402,F401  (no proxy between: the server is on 127.0.0.1)

BIN = os.environ.get("SCULPT_BIN")
if not BIN:
    print("SKIP: SCULPT_BIN is not set")
    sys.exit(77)
if subprocess.run([BIN, "help", "serve"], capture_output=True).returncode != 0:
    print("SKIP: this sculpt has no serve subcommand")
    sys.exit(77)
SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
TMP = tempfile.mkdtemp(prefix="sculpt-remote-serve-")
subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), TMP],
               check=True, capture_output=True)
MODEL = os.path.join(TMP, "planted-successor-shifted-bytes")
ALPHABET = "defghijklmnopqrstuvwxyz"
KEY = "sk-serve-" + "5e6f7a8b9c0d"


def start_serve():
    p = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", "--model", MODEL,
                          "--api-key-env", "SERVE_KEY"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True,
                         env=clean_env({"SERVE_KEY": KEY}))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        m = re.search(r"listening on ([0-9.]+):(\d+)", line)
        if m:
            return p, "http://%s:%s" % (m.group(1), m.group(2))
    p.kill()
    raise AssertionError("sculpt serve did not start")


def test_lsp_through_serve():
    serve, url = start_serve()
    try:
        s = spawn(env={"SERVE_KEY": KEY})
        s.start({}, initializationOptions={
            "modelPath": MODEL, "debounceMs": 0,
            "backend": {"url": url, "apiKeyEnv": "SERVE_KEY", "timeoutMs": 60000}})
        s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                       m["params"]["state"] == "ready", what="ready")
        uri = "file:///w/app.py"
        text = "x = compute_total([1]) + abc\nprint(x)\n"
        s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                           "version": 1, "text": text}})
        r = s.request("textDocument/inlineCompletion",
                      {"textDocument": {"uri": uri},
                       "position": {"line": 0, "character": len("x = compute_total([1]) + abc")},
                       "context": {"triggerKind": 1}}, 120)
        check("result" in r, "a completion through sculpt serve", r)
        eq([i["insertText"] for i in r["result"]["items"]], [ALPHABET], "the planted middle")
        eq(r["result"]["data"].get("backend"), "remote", "it came over HTTP")
        st = s.request("sculpt/test/stats", {})["result"]
        eq(st["engineCalls"], 0, "no local engine call")
        eq(st["remoteCalls"], 1, "one remote call")
        s.shutdown_and_exit()
        # The CLI against the same server.
        tmp = tempfile.mkdtemp(prefix="sculpt-remote-serve-cli-")
        path = os.path.join(tmp, "app.py")
        with open(path, "w") as f:
            f.write(text)
        p = subprocess.run([BIN, "complete", "--backend", url, "--api-key-env", "SERVE_KEY",
                            "--max-tokens", "32", "--json",
                            "%s:1:%d" % (path, len("x = compute_total([1]) + abc") + 1)],
                           capture_output=True, text=True, timeout=120,
                           env=clean_env({"SERVE_KEY": KEY, "SCULPT_MODEL": MODEL}))
        check(p.returncode == 0, "sculpt complete --backend", p.stderr)
        if p.returncode == 0:
            eq(json.loads(p.stdout)["text"], ALPHABET, "the CLI gets it too")
        # Without the key the server refuses, and the message says so.
        p = subprocess.run([BIN, "complete", "--backend", url,
                            "%s:1:%d" % (path, len("x = compute_total([1]) + abc") + 1)],
                           capture_output=True, text=True, timeout=120,
                           env=clean_env({"SCULPT_MODEL": MODEL}))
        check(p.returncode == 1 and "401" in p.stderr, "no key: HTTP 401", p.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        serve.terminate()
        try:
            serve.wait(10)
        except subprocess.TimeoutExpired:
            serve.kill()


if __name__ == "__main__":
    try:
        run_tests([test_lsp_through_serve])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

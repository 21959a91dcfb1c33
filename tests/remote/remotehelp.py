"""remotehelp.py — what the remote-backend tests share: a process
environment without proxies or a stray key (the mocks are on 127.0.0.1), a
tokenizer for the language server's prompt assembly, a language server with
a backend setting, and `sculpt` runs for the CLI tests."""
import atexit
import os
import shutil
import subprocess
import sys

from lspclient import spawn
from mockfim import PROXY_VARS, clean_env

for _k in PROXY_VARS:
    os.environ.pop(_k, None)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
REQUEST_FAILED = -32803
URI = "file:///w/main.c"


def sculpt_bin():
    """$SCULPT_BIN (set by ctest), or a skip (exit 77) when it is not set."""
    b = os.environ.get("SCULPT_BIN")
    if not b:
        print("SKIP: SCULPT_BIN is not set")
        sys.exit(77)
    return b


def planted_model(tmp):
    """A byte-level tokenizer for the local prompt assembly (the planted
    checkpoints carry one); the model itself is never loaded in remote mode."""
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"),
                    tmp], check=True, capture_output=True)
    return os.path.join(tmp, "planted-successor-shifted-bytes")


def start(model, backend, env=None, root=None, log_level=None, **extra):
    """`sculpt lsp` with this backend setting, ready (its status says so)."""
    opts = {"modelPath": model, "backend": backend, "debounceMs": 0}
    opts.update(extra)
    s = spawn(env=env, log_level=log_level)
    init = {"initializationOptions": opts}
    if root:
        init["rootUri"] = "file://" + root
    s.start({}, **init)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="sculpt/status ready")
    return s


def open_doc(s, text, uri=URI, lang="c"):
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": lang,
                                                       "version": 1, "text": text}})


def send_inline(s, line, character, uri=URI, id=None):
    return s.send_request("textDocument/inlineCompletion",
                          {"textDocument": {"uri": uri},
                           "position": {"line": line, "character": character},
                           "context": {"triggerKind": 1}}, id=id)


def inline(s, line, character, uri=URI, timeout=20):
    return s.wait_response(send_inline(s, line, character, uri), timeout)


SNIPPET_APP = "from pkg.calc import compute_total\n\nx = compute_total([1]) + abc\nprint(x)\n"


def snippet_workspace(prefix):
    """A git work tree (the index lists files with git) whose app.py
    (SNIPPET_APP) uses a definition from another file, pkg/calc.py: a
    completion there gets that definition as a snippet. Returns its path."""
    import tempfile
    repo = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, repo, True)
    subprocess.run(["git", "init", "-q", repo], check=True)
    os.makedirs(os.path.join(repo, "pkg"))
    with open(os.path.join(repo, "pkg", "calc.py"), "w") as f:
        f.write("def compute_total(items):\n    return sum(items)\n")
    with open(os.path.join(repo, "app.py"), "w") as f:
        f.write(SNIPPET_APP)
    return repo


def wait_index(s):
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"].get("index", {}).get("state") == "ready", what="the index")


def run_sculpt(args, env=None, timeout=60):
    """`$SCULPT_BIN args` with no model (the prompt is cut by bytes, nothing
    is loaded) and the clean environment plus env."""
    e = clean_env({"SCULPT_MODEL": "/nonexistent"})
    e.update(env or {})
    return subprocess.run([os.environ["SCULPT_BIN"]] + args, capture_output=True, text=True,
                          timeout=timeout, env=e)

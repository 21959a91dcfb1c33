"""Neovim: errors reach the user, once. The plugin is set up with no
options, `sculpt` from PATH (the recording tap):
1. $SCULPT_MODEL names a folder that does not exist: the server's status is
   "error" and every request fails; the user gets one vim.notify at WARN
   naming the path (also in :messages), however many requests fail.
2. The setting `backend` names a port nothing listens on: the status stays
   "ready" while every request fails; again one warning, naming the backend.
And :LspLog (the LSP log) files none of the server's info lines as errors
(Neovim files a server's stderr as ERROR; the plugin has the server write
only errors there)."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, closed_port, exchanges, read_tap, real_workspace,  # noqa: E402
                    run_spec, sculpt_bin, skip, tap_env)

nvim = shutil.which("nvim")
if not nvim:
    skip("nvim is not installed (apt-get install neovim)")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-nvim-errors-")
ws = real_workspace(tmp, ("jq",))
path = os.path.join(ws, "jq", "src", "builtin.c")
REQUESTS = 3
fails = []


def run_case(name, settings, extra_env, expect_state, expect_text):
    case_tmp = os.path.join(tmp, name)
    os.makedirs(case_tmp)
    env, tap = tap_env(case_tmp, binary)
    env.update(extra_env)
    env.update(SCULPT_NVIM_PLUGIN=os.path.join(SRC, "editors", "nvim"), XDG_STATE_HOME=case_tmp,
               XDG_DATA_HOME=case_tmp, XDG_CACHE_HOME=case_tmp, XDG_CONFIG_HOME=case_tmp,
               HOME=case_tmp)
    rc, result = run_spec([nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "filetype on",
                           "-c", "luafile " + os.path.join(SRC, "tests", "editors", "nvim_real.lua")],
                          {"mode": "errors", "path": path, "line": 1030, "requests": REQUESTS,
                           "settings": settings}, env, case_tmp, cwd=ws)
    if rc != 0 or result is None:
        fails.append("%s: nvim exited with %d" % (name, rc))
        return None
    state = (result.get("status") or {}).get("state")
    if state != expect_state:
        fails.append("%s: status %r, expected %r" % (name, state, expect_state))
    errors = [r for _, r in exchanges(read_tap(tap), "textDocument/inlineCompletion")
              if r and "error" in r]
    print("%s: %d of %d requests failed, e.g. %s" % (name, len(errors), REQUESTS,
                                                     errors[0]["error"]["message"] if errors else "-"))
    if len(errors) != REQUESTS:
        fails.append("%s: %d requests failed, expected all %d" % (name, len(errors), REQUESTS))
    warned = [n["msg"] for n in result["notes"] if n["level"] == 3]
    print("%s: the user was warned %d time(s): %s" % (name, len(warned), warned))
    if len(warned) != 1 or expect_text not in warned[0]:
        fails.append("%s: expected one warning naming %r, got %r" % (name, expect_text, warned))
    elif warned[0] not in result["messages"]:
        fails.append("%s: the warning is not in :messages: %r" % (name, result["messages"]))
    return result


missing = os.path.join(tmp, "no-such-model")
result = run_case("model", {}, {"SCULPT_MODEL": missing}, "error", missing)
if result:
    # :LspLog: every ERROR entry must be an error; the server's info and
    # warn lines have no business there.
    log_path = result.get("lsp_log")
    text = open(log_path).read() if log_path and os.path.exists(log_path) else ""
    bad = [line for line in text.splitlines()
           if line.startswith("[ERROR]") and re.search(r"sculpt (info|warn|debug):", line)]
    print("lsp.log: %d line(s), %d ERROR" % (len(text.splitlines()),
                                            sum(1 for x in text.splitlines() if x.startswith("[ERROR]"))))
    if bad:
        fails.append("the LSP log files ordinary lines as errors: %s" % bad[:3])

port = closed_port()
run_case("backend", {"backend": {"url": "http://127.0.0.1:%d" % port, "maxTries": 1}}, {},
         "ready", "127.0.0.1:%d" % port)

for f in fails:
    print("FAIL: " + f)
if fails:
    sys.exit(1)
print("PASS")

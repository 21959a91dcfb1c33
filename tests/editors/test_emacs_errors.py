"""Emacs + eglot: errors reach the user, once. sculpt.el with no settings,
`sculpt` from PATH (the recording tap):
1. $SCULPT_MODEL names a folder that does not exist: the server's status is
   "error" and every request fails; *Messages* gets one "sculpt: ..." line
   naming the path, however many requests fail.
2. The setting `backend` names a port nothing listens on: the status stays
   "ready" while every request fails; again one line, naming the backend."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, closed_port, exchanges, read_tap, real_workspace,  # noqa: E402
                    run_spec, sculpt_bin, skip, tap_env)

emacs = shutil.which("emacs")
if not emacs:
    skip("emacs is not installed (apt-get install emacs-nox elpa-eglot)")
probe = subprocess.run([emacs, "--batch", "--eval",
                        "(progn (package-activate-all) (require 'eglot) (princ \"yes\"))"],
                       capture_output=True, text=True)
if probe.stdout.strip() != "yes":
    skip("eglot is not available to emacs (apt-get install elpa-eglot)")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-emacs-errors-")
ws = real_workspace(tmp, ("jq",))
path = os.path.join(ws, "jq", "src", "builtin.c")
REQUESTS = 3
fails = []


def run_case(name, settings, extra_env, expect_state, expect_text):
    case_tmp = os.path.join(tmp, name)
    os.makedirs(case_tmp)
    env, tap = tap_env(case_tmp, binary)
    env.update(extra_env)
    env.update(SCULPT_EMACS_PLUGIN=os.path.join(SRC, "editors", "emacs"), HOME=case_tmp)
    rc, result = run_spec([emacs, "--batch", "-l",
                           os.path.join(SRC, "tests", "editors", "emacs_real.el")],
                          {"mode": "errors", "path": path, "line": 1030, "requests": REQUESTS,
                           "settings": settings}, env, case_tmp, cwd=ws)
    if rc != 0 or result is None:
        fails.append("%s: emacs exited with %d" % (name, rc))
        return
    state = (result.get("status") or {}).get("state")
    if state != expect_state:
        fails.append("%s: status %r, expected %r" % (name, state, expect_state))
    errors = [r for _, r in exchanges(read_tap(tap), "textDocument/inlineCompletion")
              if r and "error" in r]
    print("%s: %d of %d requests failed" % (name, len(errors), REQUESTS))
    if len(errors) != REQUESTS:
        fails.append("%s: %d requests failed, expected all %d" % (name, len(errors), REQUESTS))
    told = [line for line in result["messages"].splitlines() if line.startswith("sculpt: ")]
    print("%s: *Messages* has %d sculpt line(s): %s" % (name, len(told), told))
    if len(told) != 1 or expect_text not in told[0]:
        fails.append("%s: expected one line naming %r, got %r" % (name, expect_text, told))


missing = os.path.join(tmp, "no-such-model")
run_case("model", None, {"SCULPT_MODEL": missing}, "error", missing)
port = closed_port()
run_case("backend", {"backend": {"url": "http://127.0.0.1:%d" % port, "maxTries": 1}}, {},
         "ready", "127.0.0.1:%d" % port)
for f in fails:
    print("FAIL: " + f)
if fails:
    sys.exit(1)
print("PASS")

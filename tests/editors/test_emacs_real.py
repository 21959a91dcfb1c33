"""Emacs 28 + eglot on real code, as a user meets it: sculpt.el set up as
its README says with no settings (only common.TEMP_SETTINGS, until the
server fits its budget to the model), `sculpt` from PATH, the shipped model,
files of the four vendored repositories (C in c-mode, Python in
python-mode, Go in go-mode from elpa-go-mode, TypeScript in sculpt's
fallback mode), each repository a git work tree, so eglot starts one server
per project. At each of common.POSITIONS (the last lines of two files of
over 2,000 lines among them) it asks as M-x sculpt-complete does. Every
request must get an answer that is not an error (read from the recorded
conversation), and the overlay must show for at least one position."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, TEMP_SETTINGS, check_answers, read_tap, real_workspace,  # noqa: E402
                    resolve_positions, run_spec, sculpt_bin, skip, tap_env)

emacs = shutil.which("emacs")
if not emacs:
    skip("emacs is not installed (apt-get install emacs-nox elpa-eglot elpa-go-mode)")
probe = subprocess.run([emacs, "--batch", "--eval",
                        "(progn (package-activate-all) (require 'eglot) (require 'go-mode)"
                        " (princ \"yes\"))"], capture_output=True, text=True)
if probe.stdout.strip() != "yes":
    skip("eglot or go-mode is not available to emacs (apt-get install elpa-eglot elpa-go-mode)")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-emacs-real-")
ws = real_workspace(tmp)
positions = resolve_positions(ws)
env, tap = tap_env(tmp, binary)
env.update(SCULPT_EMACS_PLUGIN=os.path.join(SRC, "editors", "emacs"), HOME=tmp)
rc, result = run_spec([emacs, "--batch", "-l", os.path.join(SRC, "tests", "editors", "emacs_real.el")],
                      {"mode": "positions", "positions": positions, "settings": TEMP_SETTINGS},
                      env, tmp, cwd=ws)
if rc != 0 or result is None:
    print("FAIL: emacs exited with %d" % rc)
    sys.exit(1)

print("What the server answered:")
fails = check_answers(read_tap(tap), positions)
got = result.get("positions", [])
shown = [p for p in got if p["shown"]]
print("Overlay shown at %d of %d positions:" % (len(shown), len(positions)))
for p in shown:
    print("  %s:%d:%d %r (%s)" % (p["file"], p["line"] + 1, p["col"] + 1, p["shown"], p["mode"]))
    if p["overlay"] is not True:
        fails.append("%s:%d: a suggestion without its overlay at point" % (p["file"], p["line"] + 1))
modes = {p["mode"] for p in got}
print("major modes: " + ", ".join(sorted(modes)))
if len(got) != len(positions):
    fails.append("only %d of %d positions were tried" % (len(got), len(positions)))
if not shown:
    fails.append("no overlay at any position")
told = [line for line in result["messages"].splitlines() if line.startswith("sculpt: ")]
if told:
    fails.append("the user was told of errors: %s" % told)
for f in fails:
    print("FAIL: " + f)
if fails:
    sys.exit(1)
print("PASS")

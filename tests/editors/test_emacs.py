"""Emacs in batch mode with editors/emacs/sculpt.el and Debian's elpa-eglot
(Emacs 28): eglot is started explicitly from our eglot-server-programs
entry, connects to the real server, and sculpt-mode receives the planted
completion for a C fixture as an overlay, accepts it (TAB's command),
asks automatically after an edit, dismisses on another edit, and
completion-at-point offers the same text."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SRC, planted, run, sculpt_bin, skip, workdir  # noqa: E402

emacs = shutil.which("emacs")
if not emacs:
    skip("emacs is not installed (apt-get install emacs-nox elpa-eglot)")
# Not -Q: Debian's elpa packages are on the path through site-start.
probe = subprocess.run([emacs, "--batch", "--eval", "(progn (require 'eglot) (princ \"yes\"))"],
                       capture_output=True, text=True)
if probe.stdout.strip() != "yes":
    skip("eglot is not available to emacs (apt-get install elpa-eglot)")
binary = sculpt_bin()
tmp, fixture = workdir("sculpt-emacs-")
env = dict(os.environ, SCULPT_BIN=binary, SCULPT_TEST_MODEL=planted(tmp), SCULPT_FIXTURE=fixture,
           SCULPT_EMACS_PLUGIN=os.path.join(SRC, "editors", "emacs"), HOME=tmp)
rc = run([emacs, "--batch", "-l", os.path.join(SRC, "tests", "editors", "emacs_test.el")],
         env, timeout=300, cwd=tmp)
if rc != 0:
    print("FAIL: emacs exited with %d" % rc)
    sys.exit(1)
print("PASS")

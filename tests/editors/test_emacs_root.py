"""Emacs started in a parent folder of a checkout (the parent is not a git
work tree; it holds the checkout and other files): opening a file of the
checkout, eglot starts sculpt and the server must index the checkout, the
same files as when the root is the checkout itself (compared with a direct
run of the server). eglot takes the root from project.el (the git work
tree)."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, indexed_files, parent_workspace, run_spec, sculpt_bin,  # noqa: E402
                    skip, tap_env)

emacs = shutil.which("emacs")
if not emacs:
    skip("emacs is not installed (apt-get install emacs-nox elpa-eglot)")
probe = subprocess.run([emacs, "--batch", "--eval",
                        "(progn (package-activate-all) (require 'eglot) (princ \"yes\"))"],
                       capture_output=True, text=True)
if probe.stdout.strip() != "yes":
    skip("eglot is not available to emacs (apt-get install elpa-eglot)")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-emacs-root-")
parent, checkout = parent_workspace(tmp)
expected = indexed_files(binary, checkout)
env, _ = tap_env(tmp, binary)
env.update(SCULPT_EMACS_PLUGIN=os.path.join(SRC, "editors", "emacs"), HOME=tmp)
rc, result = run_spec([emacs, "--batch", "-l", os.path.join(SRC, "tests", "editors", "emacs_real.el")],
                      {"mode": "root", "path": os.path.join(checkout, "src", "builtin.c")},
                      env, tmp, cwd=parent)
if rc != 0 or result is None:
    print("FAIL: emacs exited with %d" % rc)
    sys.exit(1)
print("started in %s; root %s; index %s; the checkout alone: %s files"
      % (parent, result.get("root"), result.get("index"), expected))
index = result.get("index") or {}
if not expected:
    print("FAIL: the server did not index the checkout itself")
    sys.exit(1)
if index.get("state") != "ready" or index.get("files") != expected:
    print("FAIL: the index is %s, expected %d files (the checkout)" % (index, expected))
    sys.exit(1)
print("PASS")

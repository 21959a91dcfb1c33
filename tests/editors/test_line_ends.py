"""Mixed line ends in the real clients. A file whose lines end in \\r\\n,
then \\n, then holding a lone \\r (a few Windows lines in a Unix file, as
real repositories have): Neovim and Emacs read it with unix line ends, where
each \\r is a character of its line, and count positions so. sculpt counted a
lone \\r as a line end and clamped a position after a \\r\\n line's \\r to
before it (the spec's reading), so Neovim's substitutions left a \\r\\r\\n in
sculpt's copy and everything after a lone \\r moved by one line. Each
editor edits the file (substitutions across it, lines split and deleted,
typing after a ^M) and checks after each edit that sculpt/test/document
equals its buffer (nvim_line_ends.lua, emacs_line_ends.el)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SRC, planted, run, sculpt_bin, skip, workdir  # noqa: E402

binary = sculpt_bin()
nvim, emacs = shutil.which("nvim"), shutil.which("emacs")
if not nvim and not emacs:
    skip("neither nvim nor emacs is installed")
tmp, _ = workdir("sculpt-line-ends-")
model = planted(tmp)
TEXT = ("int x = foo(bar) + 1;\r\n" * 300 + "int y = foo;\n" * 300 +
        "int z = 1;\rint w = foo(0);\n" * 30)
env = dict(os.environ, SCULPT_BIN=binary, SCULPT_TEST_MODEL=model, SCULPT_TEST_HOOKS="1",
           XDG_STATE_HOME=tmp, XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp, XDG_CONFIG_HOME=tmp,
           HOME=tmp)
failed = []


def fixture(name):
    path = os.path.join(tmp, name)
    with open(path, "w", newline="") as f:
        f.write(TEXT)
    return path


def edit_in(name, cmd, extra):
    """Runs one editor's script on a fixture of its own; a failure is kept."""
    rc = run(cmd, dict(env, SCULPT_FIXTURE=fixture(name + ".c"), **extra), 300, cwd=tmp)
    if rc != 0:
        failed.append("%s exited with %d" % (name, rc))


if nvim:
    script = os.path.join(SRC, "tests", "editors", "nvim_line_ends.lua")
    edit_in("nvim", [nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "filetype on",
                     "-c", "luafile " + script],
            {"SCULPT_NVIM_PLUGIN": os.path.join(SRC, "editors", "nvim")})
else:
    print("nvim is not installed: only Emacs is tried")
probe = emacs and subprocess.run(
    [emacs, "--batch", "--eval", "(progn (require 'eglot) (princ \"yes\"))"],
    capture_output=True, text=True, timeout=60)
if probe and probe.stdout == "yes":
    script = os.path.join(SRC, "tests", "editors", "emacs_line_ends.el")
    edit_in("emacs", [emacs, "--batch", "-l", script],
            {"SCULPT_EMACS_PLUGIN": os.path.join(SRC, "editors", "emacs")})
else:
    print("emacs with eglot is not installed: only Neovim is tried")
if failed:
    print("FAIL: " + "; ".join(failed))
    sys.exit(1)
print("PASS")

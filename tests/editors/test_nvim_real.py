"""Neovim 0.7.2+ on real code, as a user meets it: the plugin set up with no
options (only common.TEMP_SETTINGS, until the server fits its budget to the
model), `sculpt` from PATH, the shipped model, files of the four vendored
repositories (C, Python, Go, TypeScript) opened in a workspace that is a
git work tree. At each of common.POSITIONS (the last lines of two files of
over 2,000 lines among them) the plugin asks as <M-\\> does. Every request
must get an answer that is not an error (read from the recorded
conversation), and ghost text must show for at least one position."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, TEMP_SETTINGS, check_answers, read_tap, real_workspace,  # noqa: E402
                    resolve_positions, run_spec, sculpt_bin, skip, tap_env)
import tempfile  # noqa: E402

nvim = shutil.which("nvim")
if not nvim:
    skip("nvim is not installed (apt-get install neovim)")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-nvim-real-")
ws = real_workspace(tmp)
positions = resolve_positions(ws)
env, tap = tap_env(tmp, binary)
env.update(SCULPT_NVIM_PLUGIN=os.path.join(SRC, "editors", "nvim"), XDG_STATE_HOME=tmp,
           XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp, XDG_CONFIG_HOME=tmp, HOME=tmp)
rc, result = run_spec([nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "filetype on",
                       "-c", "luafile " + os.path.join(SRC, "tests", "editors", "nvim_real.lua")],
                      {"mode": "positions", "positions": positions, "settings": TEMP_SETTINGS},
                      env, tmp, cwd=ws)
if rc != 0 or result is None:
    print("FAIL: nvim exited with %d" % rc)
    sys.exit(1)

print("What the server answered:")
fails = check_answers(read_tap(tap), positions)
shown = [p for p in result["positions"] if p["shown"]]
print("Ghost text shown at %d of %d positions:" % (len(shown), len(positions)))
for p in shown:
    print("  %s:%d:%d %r (%d extmark)" % (p["file"], p["line"] + 1, p["col"] + 1, p["shown"],
                                          p["extmarks"]))
    if p["extmarks"] != 1:
        fails.append("%s:%d: a suggestion without its extmark" % (p["file"], p["line"] + 1))
if len(result["positions"]) != len(positions):
    fails.append("only %d of %d positions were tried" % (len(result["positions"]), len(positions)))
if not shown:
    fails.append("no ghost text at any position")
warnings = [n for n in result["notes"] if n["level"] >= 3]
if warnings:
    fails.append("the user was warned: %s" % json.dumps(warnings))
for f in fails:
    print("FAIL: " + f)
if fails:
    sys.exit(1)
print("PASS")

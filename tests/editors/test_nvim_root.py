"""Neovim started in a parent folder of a checkout (the parent is not a git
work tree; it holds the checkout and other files): opening a file of the
checkout, the server must index the checkout, the same files as when the
root is the checkout itself (compared with a direct run of the server). The
plugin gives the file's git work tree as the root."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, indexed_files, parent_workspace, run_spec, sculpt_bin,  # noqa: E402
                    skip, tap_env)

nvim = shutil.which("nvim")
if not nvim:
    skip("nvim is not installed (apt-get install neovim)")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-nvim-root-")
parent, checkout = parent_workspace(tmp)
expected = indexed_files(binary, checkout)
env, _ = tap_env(tmp, binary)
env.update(SCULPT_NVIM_PLUGIN=os.path.join(SRC, "editors", "nvim"), XDG_STATE_HOME=tmp,
           XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp, XDG_CONFIG_HOME=tmp, HOME=tmp)
rc, result = run_spec([nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "filetype on",
                       "-c", "luafile " + os.path.join(SRC, "tests", "editors", "nvim_real.lua")],
                      {"mode": "root", "path": os.path.join(checkout, "src", "builtin.c"),
                       "settings": {}}, env, tmp, cwd=parent)
if rc != 0 or result is None:
    print("FAIL: nvim exited with %d" % rc)
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

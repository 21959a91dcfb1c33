"""Neovim (headless) with editors/nvim against the real server: the plugin
attaches to a C fixture, waits for the model, asks for an inline completion
at "int abc|;", shows it as extmark ghost text, accepts it into the buffer,
dismisses a second one, and gets the same text as a completion item."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SRC, planted, run, sculpt_bin, skip, workdir  # noqa: E402

nvim = shutil.which("nvim")
if not nvim:
    skip("nvim is not installed (apt-get install neovim)")
binary = sculpt_bin()
tmp, fixture = workdir("sculpt-nvim-")
env = dict(os.environ, SCULPT_BIN=binary, SCULPT_TEST_MODEL=planted(tmp), SCULPT_FIXTURE=fixture,
           SCULPT_NVIM_PLUGIN=os.path.join(SRC, "editors", "nvim"), XDG_STATE_HOME=tmp,
           XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp, XDG_CONFIG_HOME=tmp)
script = os.path.join(SRC, "tests", "editors", "nvim_test.lua")
# -u NONE: no user config, but filetype detection is needed for the FileType event.
rc = run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "filetype on",
          "-c", "luafile " + script], env, timeout=300, cwd=tmp)
if rc != 0:
    print("FAIL: nvim exited with %d" % rc)
    sys.exit(1)
print("PASS")

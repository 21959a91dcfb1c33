"""Neovim in a real terminal (tmux) with real keys: in insert mode the user
types "abc" after "int ", the plugin asks by itself and draws the planted
completion as ghost text (checked on the captured screen), <Tab> accepts it,
and :wq writes it. The screen capture is kept in
$SCULPT_BUILD_DIR/nvim-ghost-text.txt (the README shows one)."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import ALPHABET, SRC, planted, sculpt_bin, skip, workdir  # noqa: E402

nvim, tmux = shutil.which("nvim"), shutil.which("tmux")
if not nvim or not tmux:
    skip("nvim and tmux are needed (apt-get install neovim tmux)")
binary = sculpt_bin()
tmp, fixture = workdir("sculpt-nvim-tmux-")
with open(fixture, "w") as f:
    f.write("int ;\n")
model = planted(tmp)
init = os.path.join(tmp, "init.lua")
with open(init, "w") as f:
    f.write("vim.opt.runtimepath:prepend(%r)\n" % os.path.join(SRC, "editors", "nvim"))
    f.write("vim.cmd('filetype on')\n")
    f.write("require('sculpt').setup({ cmd = { %r, 'lsp' }, settings = { modelPath = %r, "
            "lengthCandidates = 4 } })\n" % (binary, model))
sock = os.path.join(tmp, "tmux.sock")
session = "sculpt"


def t(*args, check=True):
    return subprocess.run([tmux, "-S", sock] + list(args), capture_output=True, text=True,
                          check=check)


def screen():
    return t("capture-pane", "-p", "-t", session).stdout


def wait_screen(pred, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        s = screen()
        if pred(s):
            return s
        time.sleep(0.1)
    return screen()


env = dict(os.environ, HOME=tmp, XDG_STATE_HOME=tmp, XDG_DATA_HOME=tmp, XDG_CONFIG_HOME=tmp,
           XDG_CACHE_HOME=tmp, TERM="xterm-256color")
subprocess.run([tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", session,
                "-x", "120", "-y", "8", "-c", tmp,
                "%s -u %s -i NONE %s" % (nvim, init, fixture)], env=env, check=True)
ok = True
try:
    s = wait_screen(lambda s: "int ;" in s, 10)
    if "int ;" not in s:
        print("FAIL: nvim did not show the fixture:\n" + s)
        sys.exit(1)
    # Wait for the model (:SculptStatus prints the plugin's sculpt/status).
    deadline = time.time() + 60
    while time.time() < deadline:
        t("send-keys", "-t", session, ":SculptStatus", "Enter")
        if "sculpt: ready" in wait_screen(lambda s: "sculpt: " in s, 2):
            break
        time.sleep(0.2)
    else:
        print("FAIL: the model did not become ready:\n" + screen())
        sys.exit(1)
    # Type in insert mode, as a user would.
    t("send-keys", "-t", session, "0f;i")
    time.sleep(0.3)
    t("send-keys", "-t", session, "-l", "abc")
    s = wait_screen(lambda s: ALPHABET in s, 30)
    capture = os.path.join(os.environ.get("SCULPT_BUILD_DIR", tmp), "nvim-ghost-text.txt")
    with open(capture, "w") as f:
        f.write(s)
    print(s)
    if ALPHABET not in s or "int abc" not in s:
        print("FAIL: no ghost text on the screen after typing")
        sys.exit(1)
    t("send-keys", "-t", session, "Tab")
    time.sleep(0.5)
    t("send-keys", "-t", session, "Escape", ":wq", "Enter")
    deadline = time.time() + 10
    while time.time() < deadline and t("has-session", "-t", session, check=False).returncode == 0:
        time.sleep(0.1)
    with open(fixture) as f:
        text = f.read()
    if text != "int abc" + ALPHABET + ";\n":
        print("FAIL: <Tab> did not accept the ghost text; the file is %r" % text)
        sys.exit(1)
finally:
    t("kill-server", check=False)
print("PASS")

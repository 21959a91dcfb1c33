"""The editors' set-up snippets, run as a new user runs them (issue 43: the
README's Neovim set-up failed on a fresh account, `~/.config/nvim` did not
exist for its `echo ... >> ~/.config/nvim/init.lua`). The snippets are read
from the README's "## Editors" (Neovim, Emacs, VS Code) and from
editors/{nvim,emacs,vscode}/README.md, not copied here, so that a snippet
changed there is the one tested, the way test_settings_lists.py reads the
settings tables.

Each runs in a fresh HOME (nothing under ~/.config or ~/.local, no XDG_*
variables) with `bash -e` from a copy of the checkout's editors/ (its
`$PWD`), `apt-get install` lines aside (their packages must be installed:
dpkg says so). The init files they name are written as a user would
(Emacs's `/path/to/sculpt` is the copy). Then each editor starts as the
user's would and must have loaded sculpt: Neovim reads ~/.config/nvim/
init.lua and has `require('sculpt')` set up (and `:help sculpt` with the
plugin README's helptags); Emacs loads init.el (packages activated, as at
startup) and has `sculpt` and its eglot hook; VS Code's `code
--install-extension` (here code-server, which takes the same command)
lists the extension. npm runs offline from the npm cache
tools/bootstrap.sh filled."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import SRC, code_server, node_env, skip  # noqa: E402

failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def read(*parts):
    with open(os.path.join(SRC, *parts), encoding="utf-8") as f:
        return f.read()


def readme_blocks():
    """{editor: (shell lines, init text)} from the README's "## Editors":
    the indented block after **Neovim**, **Emacs**, **VS Code**. Emacs's
    block is shell up to `# in init.el:`, init.el after it."""
    m = re.search(r"^## Editors\n(.*?)^## ", read("README.md"), re.S | re.M)
    if not m:
        sys.exit("FAIL: README has no '## Editors' section")
    out = {}
    for name in ("Neovim", "Emacs", "VS Code"):
        b = re.search(r"^\*\*%s\*\*.*?\n\n((?:    [^\n]*\n|\n)+)" % re.escape(name), m.group(1),
                      re.S | re.M)
        if not b:
            sys.exit("FAIL: README's Editors section has no set-up block for " + name)
        lines = [ln[4:] for ln in b.group(1).rstrip("\n").split("\n")]
        shell, init = lines, ""
        if "# in init.el:" in lines:
            k = lines.index("# in init.el:")
            shell, init = lines[:k], "\n".join(lines[k + 1:]) + "\n"
        out[name] = (shell, init)
    return out


def fenced(path, lang):
    """The first ```lang block of an editor's README, as lines."""
    b = re.search(r"^```%s\n(.*?)^```" % lang, read(*path), re.S | re.M)
    if not b:
        sys.exit("FAIL: %s has no ```%s block" % ("/".join(path), lang))
    return b.group(1).rstrip("\n").split("\n")


def apt_packages(lines):
    """The packages `apt-get install` lines name, and the other lines."""
    pkgs, rest = [], []
    for ln in lines:
        m = re.match(r"\s*(?:sudo\s+)?apt-get install\s+([^#]*)", ln)
        if m:
            pkgs += [p for p in m.group(1).split() if not p.startswith("-")]
        else:
            rest.append(ln)
    return pkgs, rest


def fresh(name):
    """A fresh HOME and a copy of the checkout's editors/: (home, checkout, env)."""
    base = os.path.join(TMP, name)
    home, checkout = os.path.join(base, "home"), os.path.join(base, "checkout")
    os.makedirs(home)
    shutil.copytree(os.path.join(SRC, "editors"), os.path.join(checkout, "editors"),
                    ignore=shutil.ignore_patterns("node_modules", "out", "*.vsix"))
    env = {k: v for k, v in BASE_ENV.items() if not k.startswith("XDG_")}
    env["HOME"] = home
    return home, checkout, env


def sh(lines, checkout, env, what):
    """Runs a snippet with bash -e from the checkout; true when it exits 0."""
    p = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=checkout, env=env,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail("%s: the snippet exits %d:\n%s\n%s" % (what, p.returncode, "\n".join(lines),
                                                    (p.stdout + p.stderr)[-1500:]))
    return p.returncode == 0


def nvim_loaded(env, what, helptags=False):
    """Neovim, started as the user's (their init.lua), has sculpt set up."""
    probe = ("lua io.stdout:write((package.loaded.sculpt and require('sculpt').config)"
             " and 'sculpt set up' or 'no sculpt')")
    args = ["nvim", "--headless", "-i", "NONE", "-c", probe]
    if helptags:
        args += ["-c", "help sculpt", "-c", "lua io.stdout:write(' ' .. vim.bo.filetype)"]
    p = subprocess.run(args + ["-c", "qa!"], env=env, capture_output=True, text=True, timeout=60)
    want = "sculpt set up" + (" help" if helptags else "")
    if p.stdout.strip() != want:
        fail("%s: Neovim says %r, want %r (%s)" % (what, p.stdout.strip(), want, p.stderr[-500:]))


def emacs_loaded(env, init, checkout, what):
    """Emacs with init.el written as the snippet says (packages activated
    first, as at startup) has sculpt and its eglot hook."""
    path = os.path.join(env["HOME"], ".emacs.d", "init.el")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(init.replace("/path/to/sculpt", checkout))
    probe = ("(progn (package-activate-all) (load-file \"%s\") (princ (if (and (featurep 'sculpt)"
             " (memq 'sculpt-mode-maybe eglot-managed-mode-hook)) \"sculpt loaded\" \"no\")))"
             % path)
    p = subprocess.run(["emacs", "--batch", "--eval", probe], env=env, capture_output=True,
                       text=True, timeout=120)
    if "sculpt loaded" not in p.stdout:
        fail("%s: Emacs did not load sculpt from init.el: %s %s" % (what, p.stdout, p.stderr[-800:]))


def vscode_installed(lines, what):
    """The snippet builds the .vsix and installs it with `code`: here
    code-server's, which takes the same command and installs into the fresh
    HOME; its extension list then has sculpt."""
    home, checkout, env = fresh(what.replace(" ", "-"))
    env.update(npm_config_cache=NPM_CACHE, npm_config_offline="true")
    bindir = os.path.join(home, "bin")
    os.makedirs(bindir)
    with open(os.path.join(bindir, "code"), "w") as f:
        f.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (shutil.which("node", path=env["PATH"]), ENTRY))
    os.chmod(os.path.join(bindir, "code"), 0o755)
    env["PATH"] = bindir + os.pathsep + env["PATH"]
    if not sh(lines, checkout, env, what):
        return
    p = subprocess.run(["code", "--list-extensions"], env=env, capture_output=True, text=True,
                       timeout=120)
    if "sculpt.sculpt" not in p.stdout.split():
        fail("%s: code --list-extensions does not list sculpt: %r" % (what, p.stdout))


blocks = readme_blocks()
nvim_sh, nvim_init = fenced(("editors", "nvim", "README.md"), "sh"), \
    "\n".join(fenced(("editors", "nvim", "README.md"), "lua")) + "\n"
emacs_sh, emacs_init = fenced(("editors", "emacs", "README.md"), "sh"), \
    "\n".join(fenced(("editors", "emacs", "README.md"), "elisp")) + "\n"
vscode_sh = fenced(("editors", "vscode", "README.md"), "sh")

# The packages the snippets install must be there (the test installs nothing).
pkgs = set()
for lines in [b[0] for b in blocks.values()] + [nvim_sh, emacs_sh, vscode_sh]:
    pkgs.update(apt_packages(lines)[0])
missing = [p for p in sorted(pkgs)
           if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
if missing:
    skip("the snippets' packages are not installed: %s" % " ".join(missing))
BASE_ENV, _ = node_env()
ENTRY = code_server()
if not ENTRY:
    skip("code-server is not installed (tools/editor_tools.sh)")
NPM_CACHE = subprocess.run(["npm", "config", "get", "cache"], env=BASE_ENV, capture_output=True,
                           text=True).stdout.strip()
TMP = tempfile.mkdtemp(prefix="sculpt-readme-setup-")

# Neovim: the README's lines (init.lua written by its echo).
home, checkout, env = fresh("readme-nvim")
if sh(apt_packages(blocks["Neovim"][0])[1], checkout, env, "README Neovim"):
    nvim_loaded(env, "README Neovim")
# ... and the plugin README's, with its init.lua.
home, checkout, env = fresh("plugin-nvim")
if sh(apt_packages(nvim_sh)[1], checkout, env, "editors/nvim/README.md"):
    # The user writes init.lua in their editor: its folder must exist.
    if not os.path.isdir(os.path.join(home, ".config", "nvim")):
        fail("editors/nvim/README.md: no ~/.config/nvim after the snippet for its init.lua")
    else:
        with open(os.path.join(home, ".config", "nvim", "init.lua"), "a") as f:
            f.write(nvim_init)
        nvim_loaded(env, "editors/nvim/README.md", helptags=True)

# Emacs: the README's and the plugin README's init.el.
emacs_cases = [("README Emacs", apt_packages(blocks["Emacs"][0])[1], blocks["Emacs"][1]),
               ("editors/emacs/README.md", apt_packages(emacs_sh)[1], emacs_init)]
for what, shell, init in emacs_cases:
    home, checkout, env = fresh(what.replace("/", "-").replace(" ", "-"))
    if sh(shell, checkout, env, what):
        emacs_loaded(env, init, checkout, what)

# VS Code: the two snippets are one sequence of commands; run once when so.
readme_vs = apt_packages(blocks["VS Code"][0])[1]


def steps(lines):
    """A snippet's commands, one per `&&` or line, comments dropped."""
    return [c.split("#")[0].strip() for ln in lines for c in ln.split("&&")
            if c.split("#")[0].strip()]


vscode_installed(readme_vs, "README VS Code")
if steps(readme_vs) != steps(vscode_sh):
    vscode_installed(vscode_sh, "editors/vscode/README.md")
else:
    print("editors/vscode/README.md: the same commands as the README's")

if failures:
    print("%d failure(s); kept for a look: %s" % (len(failures), TMP))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("PASS")

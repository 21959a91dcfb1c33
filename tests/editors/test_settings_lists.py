"""Every server setting reaches every client: the README's settings table
(the contract) against what the server parses (lsp/) and what each
editor lets its user set and documents -- VS Code's forwarded list
(src/logic.ts SERVER_SETTINGS) and its settings schema (package.json), the
Neovim plugin's settings comment, Emacs's `sculpt-settings` docstring and
its README. A setting added to the server and forgotten in a client (as
maxDocumentBytes once was: VS Code never sent it) fails here. So does a
default that differs between the README and package.json: VS Code sends
its schema's default as if the user had set it, so a server default
changed without package.json would never reach VS Code's users."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import SRC  # noqa: E402


def read(*parts):
    with open(os.path.join(SRC, *parts), encoding="utf-8") as f:
        return f.read()


def readme_settings():
    """(top-level names, dotted sub-settings) from the README's table."""
    text = read("README.md")
    m = re.search(r"^## Settings\n(.*?)^## ", text, re.S | re.M)
    if not m:
        sys.exit("FAIL: README has no '## Settings' section")
    top, sub = [], []
    for name in re.findall(r"^\| `([A-Za-z.]+)` \|", m.group(1), re.M):
        (sub if "." in name else top).append(name)
    return top, sub


def words(text):
    return set(re.findall(r"[A-Za-z][A-Za-z0-9]*", text))


top, sub = readme_settings()
if len(top) < 10:
    sys.exit("FAIL: only %d settings found in the README's table: %s" % (len(top), top))
failures = []

server = "".join(read("lsp", f) for f in sorted(os.listdir(os.path.join(SRC, "lsp")))
                 if f.endswith(".c"))
parsed = set(re.findall(r'"([A-Za-z]+)"', server))
for name in top + [s.split(".", 1)[1] for s in sub]:
    if name not in parsed:
        failures.append("no file in lsp/ reads %r (README lists it)" % name)

logic = read("editors", "vscode", "src", "logic.ts")
m = re.search(r"SERVER_SETTINGS = \[(.*?)\]", logic, re.S)
forwarded = set(re.findall(r"'([A-Za-z]+)'", m.group(1))) if m else set()
pkg = json.loads(read("editors", "vscode", "package.json"))
schema = pkg["contributes"]["configuration"]["properties"]
backend_doc = json.dumps(schema.get("sculpt.backend", {}))
for name in top:
    if name not in forwarded:
        failures.append("VS Code does not send %r (src/logic.ts SERVER_SETTINGS)" % name)
    if "sculpt." + name not in schema:
        failures.append("VS Code's package.json has no setting sculpt.%s" % name)
# The defaults: the README's first `literal` against the schema's, where
# the schema gives one that stands for a value ("" and null mean "the
# server's own", as for modelPath and enabledLanguages).
tm = re.search(r"^## Settings\n(.*?)^## ", read("README.md"), re.S | re.M)
readme_default = dict(re.findall(r"^\| `([A-Za-z]+)` \| `([^`]*)`", tm.group(1), re.M))
compared = 0
for name in top:
    want = schema.get("sculpt." + name, {}).get("default")
    if want in (None, "") or name not in readme_default:
        continue
    raw = readme_default[name]
    try:
        have = json.loads(raw)
    except ValueError:
        have = raw
    compared += 1
    if have != want:
        failures.append("default of %r: README %s, VS Code's package.json %s"
                        % (name, raw, json.dumps(want)))
if compared < 10:
    failures.append("only %d defaults compared between the README and package.json" % compared)
for name in sub:
    if name.split(".", 1)[1] not in backend_doc:
        failures.append("VS Code's sculpt.backend description does not name %r" % name)

nvim = read("editors", "nvim", "lua", "sculpt", "init.lua")
m = re.search(r"-- Server settings \(section \"sculpt\"\):(.*?)\n\s*settings =", nvim, re.S)
nvim_doc = words(m.group(1)) if m else set()
emacs = read("editors", "emacs", "sculpt.el")
m = re.search(r'\(defcustom sculpt-settings.*?"(.*?)"\n', emacs, re.S)
emacs_doc = set(re.findall(r":([A-Za-z]+)", m.group(1))) if m else set()
emacs_readme = set(re.findall(r":([A-Za-z]+)", read("editors", "emacs", "README.md")))
for name in top:
    for where, have in (("Neovim's settings comment (lua/sculpt/init.lua)", nvim_doc),
                        ("Emacs's sculpt-settings docstring", emacs_doc),
                        ("editors/emacs/README.md", emacs_readme)):
        if name not in have:
            failures.append("%s does not list %r" % (where, name))

print("README settings: %d (%s); sub-settings: %d; defaults compared with package.json: %d"
      % (len(top), " ".join(top), len(sub), compared))
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)

"""The VS Code extension (editors/vscode): `npm test` type-checks the
extension and runs its client-side logic with node's test runner, including
the real server driven with vscode-jsonrpc over stdio (initialize -> didOpen
-> inlineCompletion -> accept -> shutdown) with the planted model; then
`npm run package` must produce a small .vsix holding the extension bundled
by esbuild with its runtime dependencies (vsce warns of nothing)."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(__file__))
from common import SRC, node_env, planted, run, sculpt_bin, skip  # noqa: E402

ext = os.path.join(SRC, "editors", "vscode")
# The pinned node of tools/editor_tools.sh (bootstrap installs it) when
# there, else the system's.
env, node_major = node_env()
npm = shutil.which("npm", path=env["PATH"])
if node_major == 0:
    skip("node and npm are not installed")
if node_major < 20:
    skip("node %d is too old: vscode-languageclient 10 and @vscode/vsce 3.9 need node 20+ "
         "(tools/editor_tools.sh installs a pinned one)" % node_major)
if not os.path.isdir(os.path.join(ext, "node_modules", "vscode-languageclient")):
    skip("editors/vscode/node_modules is missing: run `npm ci` in editors/vscode")
binary = sculpt_bin()
tmp = tempfile.mkdtemp(prefix="sculpt-vscode-")
atexit.register(shutil.rmtree, tmp, True)
env.update(SCULPT_BIN=binary, SCULPT_REQUIRE_SERVER="1", SCULPT_TEST_MODEL=planted(tmp))

rc = run([npm, "test"], env, timeout=300, cwd=ext)
if rc != 0:
    print("FAIL: npm test exited with %d" % rc)
    sys.exit(1)

vsix = os.path.join(tmp, "sculpt.vsix")
log = os.path.join(tmp, "package.log")
with open(log, "w") as f:
    p = subprocess.run([npm, "run", "package", "--", "-o", vsix], env=env, cwd=ext,
                       stdout=f, stderr=subprocess.STDOUT, timeout=300)
with open(log) as f:
    packaged = f.read()
if p.returncode != 0 or not os.path.isfile(vsix):
    print(packaged[-3000:])
    print("FAIL: npm run package did not make a .vsix (exit %d)" % p.returncode)
    sys.exit(1)
# Bundled (esbuild, issue 43): one script holding the client and its
# dependencies; vsce's "you should bundle your extension" (360 files) is
# gone.
if "you should bundle" in packaged or "WARNING" in packaged:
    print(packaged[-3000:])
    print("FAIL: vsce warns while packaging")
    sys.exit(1)
with zipfile.ZipFile(vsix) as z:
    names = set(z.namelist())
    manifest = json.loads(z.read("extension/package.json"))
    bundle = z.read("extension/out/src/extension.js").decode("utf-8", "replace")
need = ["extension/out/src/extension.js", "extension.vsixmanifest"]
missing = [n for n in need if n not in names]
if missing:
    print("FAIL: the .vsix lacks", missing)
    sys.exit(1)
size = os.path.getsize(vsix)
print("the .vsix: %d files, %d KB" % (len(names), size // 1024))
if any("node_modules/" in n for n in names) or len(names) > 12 or size > 400 * 1024:
    print("FAIL: the .vsix is not one small bundle:", sorted(names)[:20])
    sys.exit(1)
# The language client is in the bundle, `vscode` is left to the host.
if "textDocument/inlineCompletion" not in bundle or 'require("vscode")' not in bundle:
    print("FAIL: the bundle lacks the language client, or bundles `vscode`")
    sys.exit(1)
if manifest["engines"]["vscode"] != "^1.91.0" or manifest["main"] != "./out/src/extension.js":
    print("FAIL: unexpected manifest", manifest["engines"], manifest["main"])
    sys.exit(1)
print("PASS")

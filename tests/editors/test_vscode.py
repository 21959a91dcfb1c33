"""The VS Code extension (editors/vscode): `npm test` type-checks the
extension and runs its client-side logic with node's test runner, including
the real server driven with vscode-jsonrpc over stdio (initialize -> didOpen
-> inlineCompletion -> accept -> shutdown) with the planted model; then
`npm run package` must produce a .vsix holding the compiled extension and
its runtime dependencies."""
import json
import os
import shutil
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
env.update(SCULPT_BIN=binary, SCULPT_REQUIRE_SERVER="1", SCULPT_TEST_MODEL=planted(tmp))

rc = run([npm, "test"], env, timeout=300, cwd=ext)
if rc != 0:
    print("FAIL: npm test exited with %d" % rc)
    sys.exit(1)

vsix = os.path.join(tmp, "sculpt.vsix")
rc = run([npm, "run", "package", "--", "-o", vsix], env, timeout=300, cwd=ext)
if rc != 0 or not os.path.isfile(vsix):
    print("FAIL: npm run package did not make a .vsix (exit %d)" % rc)
    sys.exit(1)
with zipfile.ZipFile(vsix) as z:
    names = set(z.namelist())
    manifest = json.loads(z.read("extension/package.json"))
need = ["extension/out/src/extension.js", "extension/out/src/logic.js",
        "extension/node_modules/vscode-languageclient/package.json", "extension.vsixmanifest"]
missing = [n for n in need if n not in names]
if missing:
    print("FAIL: the .vsix lacks", missing)
    sys.exit(1)
if manifest["engines"]["vscode"] != "^1.91.0" or manifest["main"] != "./out/src/extension.js":
    print("FAIL: unexpected manifest", manifest["engines"], manifest["main"])
    sys.exit(1)
print("PASS")

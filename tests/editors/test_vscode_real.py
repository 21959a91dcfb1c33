"""VS Code for real: code-server (VS Code 1.139 in a browser, pinned by
tools/editor_tools.sh) with the sculpt .vsix built from editors/vscode and
installed as a user installs one, driven by Debian's headless Chromium
through puppeteer-core (tests/editors/vscode_e2e.js). `sculpt` from PATH
(the recording tap), the shipped model, user settings with nothing of
sculpt's but common.TEMP_SETTINGS (until the server fits its budget to the
model). The repositories of tests/data/real, each opened as its own folder
(a git work tree), one browser window each:

1. common.POSITIONS, asked with Alt+\\ (which the extension binds to
   "Trigger Inline Suggestion"): every request gets an answer that is not
   an error (the recorded conversation), ghost text shows at one position
   at least.
2. click/src/click/core.py: typing on an empty line inside a method shows
   ghost text, and Tab puts exactly that text into the line. Screenshots:
   $SCULPT_BUILD_DIR/vscode-ghost-text.png (shown) and
   vscode-accepted.png (after Tab).
3. In the jq window, the folder's settings get a `sculpt.backend` on a
   port nothing listens on (the status stays ready; each request fails):
   the status bar item turns to a warning with the message in its tooltip,
   and the output channel ("sculpt: Show the log") has it once.
   Screenshot vscode-error-backend.png.
4. Then a `sculpt.modelPath` that does not exist: the item turns to an
   error naming the path, and the output channel has it once. Screenshot
   vscode-error-model.png.
5. The parent folder of a checkout opened: the server should index the
   checkout. Expected to fail until the server finds the root itself
   (issue 19): VS Code sends the parent as the root.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from common import (SRC, TEMP_SETTINGS, check_answers, closed_port, code_server,  # noqa: E402
                    exchanges,
                    indexed_files, node_env, parent_workspace, read_tap,
                    real_workspace, resolve_positions, run, sculpt_bin, skip, tap_env,
                    xfail_or_fail)

ext = os.path.join(SRC, "editors", "vscode")
env0, node_major = node_env()
if node_major < 20:
    skip("node >= 20 is needed (tools/editor_tools.sh installs the pinned one; found %d)"
         % node_major)
entry = code_server()
if not entry:
    skip("code-server is not installed: run tools/editor_tools.sh (tools/bootstrap.sh test does)")
chromium = shutil.which("chromium")
if not chromium:
    skip("chromium is not installed (apt-get install chromium)")
for mod in ("vscode-languageclient", "puppeteer-core", "@vscode/vsce"):
    if not os.path.isdir(os.path.join(ext, "node_modules", mod)):
        skip("editors/vscode/node_modules lacks %s: run `npm ci` in editors/vscode" % mod)
binary = sculpt_bin()
node = shutil.which("node", path=env0["PATH"])
build = os.environ.get("SCULPT_BUILD_DIR") or tempfile.mkdtemp(prefix="sculpt-vscode-shots-")
tmp = tempfile.mkdtemp(prefix="sculpt-vscode-real-")
home = os.path.join(tmp, "home")
os.makedirs(home)

# The .vsix, as a user builds it.
vsix = os.path.join(tmp, "sculpt.vsix")
rc = run([shutil.which("npm", path=env0["PATH"]), "run", "package", "--", "-o", vsix],
         env0, timeout=300, cwd=ext)
if rc != 0 or not os.path.exists(vsix):
    print("FAIL: npm run package did not make the .vsix (exit %d)" % rc)
    sys.exit(1)

# Workspaces.
ws = real_workspace(tmp)
positions = resolve_positions(ws)
port = closed_port()
missing_model = os.path.join(tmp, "no-such-model")
parent, checkout = parent_workspace(tmp)
expected_files = indexed_files(binary, checkout)

# code-server: its own HOME, user data and extensions; user settings that
# keep the workspace files untouched and the window quiet, and sculpt's
# temporary setting only.
user_data = os.path.join(tmp, "user-data")
extensions = os.path.join(tmp, "extensions")
os.makedirs(os.path.join(user_data, "User"))
user_settings = {
    "files.autoSave": "off",
    "files.hotExit": "off",
    "telemetry.telemetryLevel": "off",
    "workbench.startupEditor": "none",
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
}
user_settings.update({"sculpt." + k: v for k, v in TEMP_SETTINGS.items()})
with open(os.path.join(user_data, "User", "settings.json"), "w") as f:
    json.dump(user_settings, f, indent=1)
env, tap = tap_env(tmp, binary, env0)
env["HOME"] = home
cs_args = [node, entry, "--user-data-dir", user_data, "--extensions-dir", extensions]
rc = run(cs_args + ["--install-extension", vsix], env, timeout=120, cwd=tmp)
if rc != 0 or not any(d.startswith("sculpt.sculpt-") for d in os.listdir(extensions)):
    print("FAIL: code-server did not install the .vsix (exit %d)" % rc)
    sys.exit(1)

http_port = closed_port()
config = os.path.join(tmp, "code-server.yaml")
with open(config, "w") as f:
    f.write("bind-addr: 127.0.0.1:%d\nauth: none\ncert: false\n" % http_port)
cs_log = open(os.path.join(tmp, "code-server.log"), "w")
# force-disable-user-env: the extension host keeps this environment (PATH
# with the tap) instead of one read from a login shell.
server = subprocess.Popen(cs_args + ["--config", config, "--disable-telemetry",
                                     "--disable-update-check", "--disable-workspace-trust",
                                     "--disable-getting-started-override",
                                     "--reconnection-grace-time", "5",
                                     "--vscode-option", "force-disable-user-env"],
                          env=env, cwd=tmp, stdout=cs_log, stderr=subprocess.STDOUT,
                          start_new_session=True)
fails = []
results = []
try:
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/healthz" % http_port, timeout=2)
            break
        except OSError:
            if time.time() > deadline or server.poll() is not None:
                print("FAIL: code-server did not start")
                print(open(cs_log.name).read())
                sys.exit(1)
            time.sleep(0.3)

    shot = lambda name: os.path.join(build, name)  # noqa: E731

    def asks(repo):
        return {"kind": "positions", "positions": [
            {"file": p["file"], "line": p["line"], "col": p["col"], "text": p["text"]}
            for p in positions if p["repo"] == repo]}

    broken_at = {"file": "src/builtin.c", "line": 1030, "col": 0, "lineText": "", "text": "  x"}
    windows = [
        {"folder": os.path.join(ws, "click"), "steps": [
            asks("click"),
            {"kind": "type", "file": "src/click/core.py", "line": 1224, "col": 0, "lineText": "",
             "text": "        if", "shot": shot("vscode-ghost-text.png"),
             "shotAccepted": shot("vscode-accepted.png")}]},
        {"folder": os.path.join(ws, "jq"), "steps": [
            asks("jq"),
            {"kind": "settings", "settings": {"sculpt.backend": {
                "url": "http://127.0.0.1:%d" % port, "maxTries": 1}}},
            dict(broken_at, kind="status", name="backend", shot=shot("vscode-error-backend.png")),
            {"kind": "settings", "settings": {"sculpt.modelPath": missing_model}},
            dict(broken_at, kind="status", name="model", shot=shot("vscode-error-model.png")),
            {"kind": "settings", "settings": {}}]},
        {"folder": os.path.join(ws, "cobra"), "steps": [asks("cobra")]},
        {"folder": os.path.join(ws, "ky"), "steps": [asks("ky")]},
        {"folder": parent, "steps": [{"kind": "root", "file": "jq/src/builtin.c"}]},
    ]
    spec = {"base": "http://127.0.0.1:%d" % http_port, "chromium": chromium,
            "profile": os.path.join(tmp, "chromium", "profile"), "tap": tap,
            "extension": ext, "result": os.path.join(tmp, "e2e.json"), "windows": windows,
            "failShot": shot("vscode-failure.png")}
    os.makedirs(os.path.dirname(spec["profile"]))
    spec_path = os.path.join(tmp, "e2e-spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    rc = run([node, os.path.join(SRC, "tests", "editors", "vscode_e2e.js"), spec_path],
             dict(env0, HOME=home), timeout=600, cwd=tmp)
    if os.path.exists(spec["result"]):
        with open(spec["result"]) as f:
            results = json.load(f)
    if rc != 0:
        fails.append("the browser driver exited with %d" % rc)
finally:
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)

by_kind, by_name = {}, {}
for r in results:
    by_kind.setdefault(r["kind"], []).append(r)
    by_name[r.get("name")] = r
    if "failed" in r:
        fails.append("%s: %s" % (r.get("name", r["kind"]), r["failed"].splitlines()[0]))
    else:
        print("step %s: %.1f s" % (r["name"], r["seconds"]))


def channel_log(want):
    """The sculpt output channel of the window whose server met `want`: the
    file VS Code keeps for it (user-data/logs/*/exthost*/sculpt.sculpt)."""
    import glob
    for path in glob.glob(os.path.join(user_data, "logs", "*", "exthost*", "sculpt.sculpt",
                                       "*.log")):
        with open(path, errors="replace") as f:
            text = f.read()
        if want in text:
            return text
    return ""


def warning_item(item):
    return any("codicon-warning" in i for i in item["icons"])


def error_item(item):
    return any("codicon-error" in i for i in item["icons"])


# 1. Type, see, Tab.
for r in by_kind.get("type", []):
    if "failed" in r:
        continue
    ghost = r["ghost"]
    print("typed %r; ghost text %r; the line after Tab %r" % (r["lineBefore"], ghost, r["lineAfter"]))
    if not ghost:
        fails.append("no ghost text after typing")
    elif r["lineAfter"] != r["lineBefore"] + ghost.split("\n")[0]:
        fails.append("Tab did not insert the ghost text: %r + %r -> %r"
                     % (r["lineBefore"], ghost, r["lineAfter"]))
    cursor = r["cursorAfter"] or {}
    if r["lineAfter"] and cursor.get("col") != len(r["lineAfter"]):
        fails.append("after Tab the cursor is not at the end of the accepted text: %s" % cursor)
    if warning_item(r["status"]) or error_item(r["status"]):
        fails.append("the status bar item shows a problem: %s" % r["status"]["label"])
    print("status bar item: %r" % r["status"]["label"])

# 2. The positions.
records = read_tap(tap)
print("What the server answered at common.POSITIONS:")
# The requests asked for (Alt+\\, triggerKind 1) are those of the
# positions; typing sends automatic ones (2), which the client cancels as
# it goes.
fails += check_answers(records, positions, trigger=1)
# While typing in click (its window's server): every automatic request
# answered, and only those the client cancelled ($/cancelRequest) with
# "cancelled".
click_pids = {rec["pid"] for rec in records if rec["dir"] == "c2s"
              and rec["msg"].get("method") == "initialize"
              and (rec["msg"]["params"].get("rootUri") or "").endswith("/click")}
cancelled = {(rec["pid"], json.dumps(rec["msg"]["params"]["id"])) for rec in records
             if rec["dir"] == "c2s" and rec["msg"].get("method") == "$/cancelRequest"}
auto, bad = [], []
for pid in click_pids:
    mine = [rec for rec in records if rec["pid"] == pid]
    for params, resp in exchanges(mine, "textDocument/inlineCompletion"):
        if (params.get("context") or {}).get("triggerKind") != 2:
            continue
        auto.append(resp)
        if resp is None or ("error" in resp and not (
                resp["error"]["code"] == -32800 and (pid, json.dumps(resp["id"])) in cancelled)):
            bad.append((params["position"], resp))
print("typing: %d automatic requests, %d cancelled by the client"
      % (len(auto), sum(1 for resp in auto if resp and "error" in resp)))
for pos, resp in bad:
    fails.append("typing: a request at %s got %s" % (pos, json.dumps(resp)))
shown = [p for r in by_kind.get("positions", []) for p in r.get("positions", []) if p["ghost"]]
print("Ghost text shown at %d of %d positions:" % (len(shown), len(positions)))
for p in shown:
    print("  %s:%d:%d %r" % (p["file"], p["line"] + 1, p["col"] + 1, p["ghost"]))
if not shown:
    fails.append("no ghost text at any position")
for r in by_kind.get("positions", []):
    if "status" in r and (warning_item(r["status"]) or error_item(r["status"])):
        fails.append("the status bar item shows a problem: %s" % r["status"]["label"])

# 3, 4. Errors the user sees.
for name in ("backend", "model"):
    r = by_name.get(name)
    if not r:
        fails.append("the %s error step did not run" % name)
        continue
    if "failed" in r:
        continue
    item, output = r["status"], r["output"]
    want = missing_model if name == "model" else "127.0.0.1:%d" % port
    print("%s: status bar item %r, icons %s; server state %s"
          % (name, item["text"], item["icons"], (r["serverStatus"] or {}).get("state")))
    print("%s: its tooltip: %r" % (name, r["tooltip"]))
    if want not in r["tooltip"]:
        fails.append("%s: the status bar tooltip does not name %r: %r" % (name, want, r["tooltip"]))
    # The output channel: the panel shows its end; the channel's file (the
    # same text) has all of it.
    if want not in output:
        fails.append("%s: the output panel does not show %r:\n%s" % (name, want, output))
    # The extension's own line: the request failure (backend), the status
    # message (model); the server's window/logMessage lines come besides.
    mark = "[warning] completion request failed: " if name == "backend" else "[warning] "
    ours = [line for line in channel_log(want).splitlines() if mark in line and want in line]
    print("%s: the output channel has %d line(s) %r naming it" % (name, len(ours), mark))
    if name == "model" and not error_item(item):
        fails.append("model: the status bar item is not an error: %s" % item["icons"])
    if name == "backend" and not warning_item(item):
        fails.append("backend: the status bar item is not a warning: %s" % item["icons"])
    if len(ours) != 1:
        fails.append("%s: the output channel should have the message once as a warning, has %d"
                     % (name, len(ours)))
    info_as_error = [line for line in output.splitlines()
                     if "[error]" in line and " sculpt info: " in line]
    if info_as_error:
        fails.append("%s: the output channel files info lines as errors: %s"
                     % (name, info_as_error[:2]))

for f in fails:
    print("FAIL: " + f)
print("screenshots: " + ", ".join(shot(n) for n in ("vscode-ghost-text.png", "vscode-accepted.png",
                                                    "vscode-error-model.png",
                                                    "vscode-error-backend.png")))
if fails:
    sys.exit(1)

# 5. The root, from a parent folder: expected to fail for now.
root = (by_kind.get("root") or [{}])[0]
print("parent folder opened: rootUri %s; index %s; the checkout alone: %s files"
      % (root.get("rootUri"), root.get("index"), expected_files))
index = root.get("index") or {}
xfail_or_fail(bool(expected_files) and index.get("state") == "ready"
              and index.get("files") == expected_files,
              "the root from a parent folder in VS Code",
              "VS Code sends the opened folder (not a git work tree) as the root; the server "
              "does not yet index the file's git work tree instead (issue 19, server side)")
print("PASS")

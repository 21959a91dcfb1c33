"""VS Code for real (vscode_session.py): code-server, VS Code 1.139 in a
browser, with the sculpt .vsix installed as a user installs one, driven by
Debian's headless Chromium; `sculpt` from PATH, the shipped model, no
sculpt settings (common.TEMP_SETTINGS is empty). The repositories of
tests/data/real, each opened as its own folder (a git work tree), one
browser window each:

1. common.POSITIONS, asked with Alt+\\ (which the extension binds to
   "Trigger Inline Suggestion"): every request gets an answer that is not
   an error (the recorded conversation), ghost text shows at one position
   at least.
2. click/src/click/core.py: typing on an empty line inside a method shows
   ghost text (the first of a few such lines where the shipped model
   offers something), and Tab puts exactly that text into the line. Screenshots:
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
5. No settings: the extension sends contextBudget null (not its
   contributed 1024) and the server warns about none; the status bar
   tooltip says what the last completion came to, with the session's
   counts (cobra).
(The root from a parent folder: test_vscode_root.py.)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import (check_answers, closed_port, exchanges, read_tap,  # noqa: E402
                    real_workspace, resolve_positions)
from vscode_session import Session  # noqa: E402

session = Session("sculpt-vscode-real-")
tmp = session.tmp
ws = real_workspace(tmp)
positions = resolve_positions(ws)
port = closed_port()
missing_model = os.path.join(tmp, "no-such-model")
shot = session.shot


def asks(repo):
    return {"kind": "positions", "positions": [
        {"file": p["file"], "line": p["line"], "col": p["col"], "text": p["text"]}
        for p in positions if p["repo"] == repo]}


broken_at = {"file": "src/builtin.c", "line": 1030, "col": 0, "lineText": "", "text": "  x"}
windows = [
    {"folder": os.path.join(ws, "click"), "steps": [
        asks("click"),
        # Empty lines in method bodies; the first where the model offers
        # something is the one screenshotted. (The shipped model is weak:
        # what it writes after "if" on a line is often dropped as a new
        # syntax error, so there are several; the last four offered text with
        # no settings when they were added.)
        {"kind": "type", "tries": [
            {"file": "src/click/core.py", "line": 1224, "text": "        if"},
            {"file": "src/click/core.py", "line": 2519, "text": "            if"},
            {"file": "src/click/core.py", "line": 2433, "text": "        if"},
            {"file": "src/click/core.py", "line": 1462, "text": "        return"},
            {"file": "src/click/core.py", "line": 724, "text": "            if"},
            {"file": "src/click/core.py", "line": 1773, "text": "            if"},
            {"file": "src/click/core.py", "line": 3407, "text": "        if"},
            {"file": "src/click/core.py", "line": 3707, "text": "        if"}],
         "shot": shot("vscode-ghost-text.png"), "shotAccepted": shot("vscode-accepted.png")}]},
    {"folder": os.path.join(ws, "jq"), "steps": [
        asks("jq"),
        {"kind": "settings", "settings": {"sculpt.backend": {
            "url": "http://127.0.0.1:%d" % port, "maxTries": 1}}},
        dict(broken_at, kind="status", name="backend", shot=shot("vscode-error-backend.png")),
        {"kind": "settings", "settings": {"sculpt.modelPath": missing_model}},
        dict(broken_at, kind="status", name="model", shot=shot("vscode-error-model.png")),
        {"kind": "settings", "settings": {}}]},
    {"folder": os.path.join(ws, "cobra"), "steps": [
        asks("cobra"),
        {"kind": "status", "name": "outcome", "file": "command.go", "line": 324, "col": 0,
         "lineText": "", "text": "\tc."}]},
    {"folder": os.path.join(ws, "ky"), "steps": [asks("ky")]},
]
rc, results = session.run(windows)
fails = []
if rc != 0:
    fails.append("the browser driver exited with %d" % rc)

by_kind, by_name = {}, {}
for r in results:
    by_kind.setdefault(r["kind"], []).append(r)
    by_name[r.get("name")] = r
    if "failed" in r:
        fails.append("%s: %s" % (r.get("name", r["kind"]), r["failed"].splitlines()[0]))
    else:
        print("step %s: %.1f s" % (r["name"], r["seconds"]))


def warning_item(item):
    return any("codicon-warning" in i for i in item["icons"])


def error_item(item):
    return any("codicon-error" in i for i in item["icons"])


# 1. Type, see, Tab.
for r in by_kind.get("type", []):
    if "failed" in r:
        continue
    ghost = r["ghost"]
    if r["misses"]:
        print("typing: nothing offered at %s" % ", ".join(r["misses"]))
    if not ghost:
        fails.append("no ghost text after typing at any of the tries")
        continue
    print("typed %r at core.py:%d; ghost text %r; the line after Tab %r"
          % (r["lineBefore"], r["at"]["line"] + 1, ghost, r["lineAfter"]))
    if r["lineAfter"] != r["lineBefore"] + ghost.split("\n")[0]:
        fails.append("Tab did not insert the ghost text: %r + %r -> %r"
                     % (r["lineBefore"], ghost, r["lineAfter"]))
    cursor = r["cursorAfter"] or {}
    if r["lineAfter"] and cursor.get("col") != len(r["lineAfter"]):
        fails.append("after Tab the cursor is not at the end of the accepted text: %s" % cursor)
    if warning_item(r["status"]) or error_item(r["status"]):
        fails.append("the status bar item shows a problem: %s" % r["status"]["label"])
    print("status bar item: %r" % r["status"]["label"])

# 2. The positions.
records = read_tap(session.tap)
print("What the server answered at common.POSITIONS:")
# The requests asked for (Alt+\\, triggerKind 1) are those of the
# positions; typing sends automatic ones (2), which the client cancels as
# it goes.
fails += check_answers(records, positions, trigger=1)
# While typing in click (its window's server): every automatic request
# answered, and with "cancelled" only those the client cancelled
# ($/cancelRequest) or left by closing the window (after its shutdown).
click_pids = {rec["pid"] for rec in records if rec["dir"] == "c2s"
              and rec["msg"].get("method") == "initialize"
              and (rec["msg"]["params"].get("rootUri") or "").endswith("/click")}
auto, bad = [], []
for pid in click_pids:
    mine = [rec for rec in records if rec["pid"] == pid]
    cancelled = {json.dumps(rec["msg"]["params"]["id"]) for rec in mine
                 if rec["dir"] == "c2s" and rec["msg"].get("method") == "$/cancelRequest"}
    shutdown = min([rec["t"] for rec in mine if rec["dir"] == "c2s"
                    and rec["msg"].get("method") == "shutdown"] or [float("inf")])
    answered_at = {json.dumps(rec["msg"].get("id")): rec["t"] for rec in mine
                   if rec["dir"] == "s2c" and "method" not in rec["msg"]}
    for params, resp in exchanges(mine, "textDocument/inlineCompletion"):
        if (params.get("context") or {}).get("triggerKind") != 2:
            continue
        auto.append(resp)
        key = json.dumps(resp["id"]) if resp else None
        if resp is None or ("error" in resp and not (
                resp["error"]["code"] == -32800
                and (key in cancelled or answered_at.get(key, 0) > shutdown))):
            bad.append((params["position"], resp))
print("typing: %d automatic requests, %d cancelled"
      % (len(auto), sum(1 for resp in auto if resp and "error" in resp)))
for pos, resp in bad:
    fails.append("typing: a request at %s got %s" % (pos, json.dumps(resp)))
shown = [p for r in by_kind.get("positions", []) for p in r.get("positions", []) if p["ghost"]]
print("Ghost text shown at %d of %d positions:" % (len(shown), len(positions)))
for p in shown:
    print("  %s:%d:%d %r" % (p["file"], p["line"] + 1, p["col"] + 1, p["ghost"]))
if not shown:
    fails.append("no ghost text at any position")
# A press of Alt+\ that brought no request in 10 s was pressed again (the
# driver logs what the page showed); said here, so a pattern would show.
again = [p for r in by_kind.get("positions", []) for p in r.get("positions", []) if p.get("again")]
for p in again:
    print("Alt+\\ pressed twice before a request at %s:%d:%d" % (p["file"], p["line"] + 1, p["col"] + 1))
for r in by_kind.get("positions", []):
    if "status" in r and (warning_item(r["status"]) or error_item(r["status"])):
        fails.append("the status bar item shows a problem: %s" % r["status"]["label"])

# No settings: the extension sends no contextBudget of its own (null: the
# server fits its default to the model), so the server has nothing to warn
# about (issue 43: "contextBudget 1024 is more than the model's 256-token
# context" with no settings at all).
inits = [rec["msg"]["params"] for rec in records if rec["dir"] == "c2s"
         and rec["msg"].get("method") == "initialize"]
sent = [(p.get("initializationOptions") or {}).get("contextBudget", "absent") for p in inits]
print("contextBudget sent at initialize: %s" % sent)
if not inits or any(v is not None for v in sent):
    fails.append("the extension sent a contextBudget nobody set: %s" % sent)
budget_warnings = [rec["msg"]["params"]["message"] for rec in records if rec["dir"] == "s2c"
                   and rec["msg"].get("method") == "window/logMessage"
                   and rec["msg"]["params"]["type"] <= 2 and "contextBudget" in rec["msg"]["params"]["message"]]
if budget_warnings:
    fails.append("the server warned about a contextBudget nobody set: %s" % budget_warnings[:1])

# The status bar item's tooltip says what the last completion came to.
r = by_name.get("outcome")
if not r:
    fails.append("the outcome step did not run")
elif "failed" not in r:
    st = r.get("serverStatus") or {}
    print("outcome: its tooltip: %r" % r["tooltip"])
    if "last completion: " not in r["tooltip"] or "this session: " not in r["tooltip"]:
        fails.append("the tooltip does not say the last completion's outcome: %r" % r["tooltip"])
    elif st.get("lastOutcome") and "last completion: " + st["lastOutcome"] not in r["tooltip"]:
        fails.append("the tooltip's outcome is not the server's %r: %r"
                     % (st["lastOutcome"], r["tooltip"]))

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
    ours = [line for line in session.channel_log(want).splitlines() if mark in line and want in line]
    print("%s: the output channel has %d line(s) %r naming it" % (name, len(ours), mark))
    if name == "model" and not error_item(item):
        fails.append("model: the status bar item is not an error: %s" % item["icons"])
    if name == "backend" and not warning_item(item):
        fails.append("backend: the status bar item is not a warning: %s" % item["icons"])
    if len(ours) != 1:
        fails.append("%s: the output channel should have the message once as a warning, has %d"
                     % (name, len(ours)))
    info_as_error = [line for line in session.channel_log(want).splitlines()
                     if "[error]" in line and " sculpt info: " in line]
    if info_as_error:
        fails.append("%s: the output channel files info lines as errors: %s"
                     % (name, info_as_error[:2]))

print("screenshots: " + ", ".join(shot(n) for n in ("vscode-ghost-text.png", "vscode-accepted.png",
                                                    "vscode-error-model.png",
                                                    "vscode-error-backend.png")))
session.done(fails)

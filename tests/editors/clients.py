"""The Neovim and Emacs tests on real code, written once for both: each
editor runs its driver script (nvim_real.lua, emacs_real.el) with the client
set up as its README says and no settings (common.TEMP_SETTINGS is empty),
`sculpt` from PATH (the recording tap), and the shipped model; the script
writes what it saw, and these functions judge it with the recorded
conversation. test_{nvim,emacs}_{real,errors,root}.py each call one.

- real(editor): common.POSITIONS in the vendored repositories, every request
  answered without error, ghost text drawn for at least one, nothing told.
- errors(editor): a model folder that does not exist ($SCULPT_MODEL), and a
  backend nobody listens on (status ready, requests fail): each told once.
- root(editor): started in a parent folder of a checkout, the server indexes
  the checkout.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from common import (SRC, TEMP_SETTINGS, check_answers, closed_port, exchanges,  # noqa: E402
                    indexed_files, parent_workspace, read_tap, real_workspace,
                    resolve_positions, run_spec, sculpt_bin, skip, tap_env)


class Editor:
    """How to run one editor on a driver script and read what it told."""

    def __init__(self, name, command, env, told, extra_checks=None):
        self.name = name
        self.command = command            # argv running the driver script
        self.env = env                    # tmp -> extra environment
        self.told = told                  # result -> messages shown to the user
        self.extra_checks = extra_checks  # result -> failures (errors case only)


def neovim():
    nvim = shutil.which("nvim")
    if not nvim:
        skip("nvim is not installed (apt-get install neovim)")

    def env(tmp):
        return dict(SCULPT_NVIM_PLUGIN=os.path.join(SRC, "editors", "nvim"), XDG_STATE_HOME=tmp,
                    XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp, XDG_CONFIG_HOME=tmp, HOME=tmp)

    def told(result):
        # vim.notify at WARN or above, each also in :messages.
        shown = [n["msg"] for n in result["notes"] if n["level"] >= 3]
        return [m if m in result["messages"] else m + " (NOT in :messages)" for m in shown]

    def lsp_log(result):
        # :LspLog: every ERROR entry must be an error; the server's info and
        # warn lines have no business there.
        path = result.get("lsp_log")
        text = open(path).read() if path and os.path.exists(path) else ""
        errors = [line for line in text.splitlines() if line.startswith("[ERROR]")]
        print("lsp.log: %d line(s), %d ERROR" % (len(text.splitlines()), len(errors)))
        bad = [line for line in errors if re.search(r"sculpt (info|warn|debug):", line)]
        return ["the LSP log files ordinary lines as errors: %s" % bad[:3]] if bad else []

    return Editor("nvim", [nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", "filetype on",
                           "-c", "luafile " + os.path.join(SRC, "tests", "editors", "nvim_real.lua")],
                  env, told, lsp_log)


def emacs():
    program = shutil.which("emacs")
    if not program:
        skip("emacs is not installed (apt-get install emacs-nox elpa-eglot elpa-go-mode)")
    probe = subprocess.run([program, "--batch", "--eval",
                            "(progn (package-activate-all) (require 'eglot) (require 'go-mode)"
                            " (princ \"yes\"))"], capture_output=True, text=True)
    if probe.stdout.strip() != "yes":
        skip("eglot or go-mode is not available to emacs (apt-get install elpa-eglot elpa-go-mode)")

    def env(tmp):
        return dict(SCULPT_EMACS_PLUGIN=os.path.join(SRC, "editors", "emacs"), HOME=tmp)

    def told(result):
        return [line for line in result["messages"].splitlines() if line.startswith("sculpt: ")]

    return Editor("emacs", [program, "--batch", "-l",
                            os.path.join(SRC, "tests", "editors", "emacs_real.el")], env, told)


def run(editor, spec, tmp, cwd, extra_env=None):
    """Runs the editor's driver on `spec` with `sculpt` from PATH recording
    to tmp/tap.jsonl. Returns (result or None, tap path); a result of None
    has been reported."""
    env, tap = tap_env(tmp, sculpt_bin())
    env.update(editor.env(tmp))
    env.update(extra_env or {})
    rc, result = run_spec(editor.command, spec, env, tmp, cwd=cwd)
    if rc != 0 or result is None:
        print("FAIL: %s exited with %d" % (editor.name, rc))
        return None, tap
    return result, tap


def finish(fails, tmp=None):
    """Reports; on success removes the test's folder (kept on failure, to
    look into)."""
    for f in fails:
        print("FAIL: " + f)
    if fails:
        print("kept for a look: %s" % tmp)
        sys.exit(1)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    sys.exit(0)


def real(editor):
    tmp = tempfile.mkdtemp(prefix="sculpt-%s-real-" % editor.name)
    ws = real_workspace(tmp)
    positions = resolve_positions(ws)
    result, tap = run(editor, {"mode": "positions", "positions": positions,
                               "settings": TEMP_SETTINGS}, tmp, ws)
    if result is None:
        sys.exit(1)
    print("What the server answered:")
    fails = check_answers(read_tap(tap), positions)
    got = result.get("positions", [])
    shown = [p for p in got if p["shown"]]
    print("Ghost text shown at %d of %d positions:" % (len(shown), len(positions)))
    for p in shown:
        print("  %s:%d:%d %r (%s)" % (p["file"], p["line"] + 1, p["col"] + 1, p["shown"],
                                      p.get("mode", "drawn" if p["drawn"] else "NOT drawn")))
        if not p["drawn"]:
            fails.append("%s:%d: a suggestion not drawn at the cursor" % (p["file"], p["line"] + 1))
    if len(got) != len(positions):
        fails.append("only %d of %d positions were tried" % (len(got), len(positions)))
    if not shown:
        fails.append("no ghost text at any position")
    told = editor.told(result)
    if told:
        fails.append("the user was told of errors: %s" % told)
    fails += status_shown(result)
    finish(fails, tmp)


def status_shown(result):
    """The status command (:SculptStatus, sculpt-show-status) says what the
    last completion came to and this session's counts, as sculpt/status
    has them; Emacs's mode line says "dropped" when it was dropped."""
    st, text = result.get("status") or {}, result.get("status_text") or ""
    print("status command: %s" % text)
    if "mode_line" in result:
        print("mode line: %r" % result["mode_line"])
    outcome, n = st.get("lastOutcome"), st.get("completions") or {}
    if not outcome:
        return ["sculpt/status has no lastOutcome after the completions: %s" % st]
    fails = []
    want = "last completion: %s (this session: %d answered, %d offered, %d dropped)" % (
        outcome, n.get("answered", -1), n.get("offered", -1), n.get("dropped", -1))
    if want not in text:
        fails.append("the status command does not say %r: %r" % (want, text))
    if "mode_line" in result and outcome.startswith("dropped") and "dropped" not in result["mode_line"]:
        fails.append("the mode line does not say the last completion was dropped: %r"
                     % result["mode_line"])
    return fails


def errors(editor, requests=3):
    tmp = tempfile.mkdtemp(prefix="sculpt-%s-errors-" % editor.name)
    ws = real_workspace(tmp, ("jq",))
    path = os.path.join(ws, "jq", "src", "builtin.c")
    fails = []

    def case(name, settings, extra_env, expect_state, expect_text):
        case_tmp = os.path.join(tmp, name)
        os.makedirs(case_tmp)
        result, tap = run(editor, {"mode": "errors", "path": path, "line": 1030,
                                   "requests": requests, "settings": settings},
                          case_tmp, ws, extra_env)
        if result is None:
            fails.append("%s: the editor failed" % name)
            return
        state = (result.get("status") or {}).get("state")
        if state != expect_state:
            fails.append("%s: status %r, expected %r" % (name, state, expect_state))
        failed = [r for _, r in exchanges(read_tap(tap), "textDocument/inlineCompletion")
                  if r and "error" in r]
        print("%s: %d of %d requests failed, e.g. %s"
              % (name, len(failed), requests, failed[0]["error"]["message"] if failed else "-"))
        if len(failed) != requests:
            fails.append("%s: %d requests failed, expected all %d" % (name, len(failed), requests))
        told = editor.told(result)
        print("%s: the user was told %d time(s): %s" % (name, len(told), told))
        if len(told) != 1 or expect_text not in told[0] or "NOT in" in told[0]:
            fails.append("%s: expected to be told once, naming %r, got %r" % (name, expect_text, told))
        if editor.extra_checks:
            fails.extend(editor.extra_checks(result))

    missing = os.path.join(tmp, "no-such-model")
    case("model", {}, {"SCULPT_MODEL": missing}, "error", missing)
    port = closed_port()
    case("backend", {"backend": {"url": "http://127.0.0.1:%d" % port, "maxTries": 1}}, {},
         "ready", "127.0.0.1:%d" % port)
    finish(fails, tmp)


def root(editor):
    tmp = tempfile.mkdtemp(prefix="sculpt-%s-root-" % editor.name)
    parent, checkout = parent_workspace(tmp)
    expected = indexed_files(sculpt_bin(), checkout)
    result, _ = run(editor, {"mode": "root", "path": os.path.join(checkout, "src", "builtin.c"),
                             "settings": {}}, tmp, parent)
    if result is None:
        sys.exit(1)
    index = result.get("index") or {}
    print("started in %s; root %s; index %s; the checkout alone: %s files"
          % (parent, result.get("root"), index, expected))
    if not expected:
        finish(["the server did not index the checkout itself"], tmp)
    if index.get("state") != "ready" or index.get("files") != expected:
        finish(["the index is %s, expected %d files (the checkout)" % (index, expected)], tmp)
    finish([], tmp)

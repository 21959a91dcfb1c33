"""Shared by the editor tests: the planted model (after "abc" it answers
"defghijklmnopqrstuvwxyz", tools/planted_checkpoints.py), a fixture file,
skipping (exit 77) with a reason; and for the tests on real repositories
(tests/data/real) with the shipped model and no settings: the positions,
workspaces that are git work trees, `sculpt` on PATH through lsp_tap.py, and
the checks on what the server answered."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.environ.get("SCULPT_SOURCE_DIR",
                                     os.path.join(os.path.dirname(__file__), "..", "..")))
ALPHABET = "defghijklmnopqrstuvwxyz"
FIXTURE_TEXT = "int abc;\n"


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def sculpt_bin():
    b = os.environ.get("SCULPT_BIN")
    if not b or not os.access(b, os.X_OK):
        skip("SCULPT_BIN is not set to the sculpt binary (run through ctest)")
    return os.path.abspath(b)


def planted(tmp):
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), tmp],
                   check=True, capture_output=True)
    return os.path.join(tmp, "planted-successor-shifted-bytes")


def workdir(prefix):
    tmp = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, tmp, True)
    fixture = os.path.join(tmp, "main.c")
    with open(fixture, "w") as f:
        f.write(FIXTURE_TEXT)
    return tmp, fixture


def run(cmd, env, timeout, cwd=None):
    """Runs an editor; prints its output; returns the exit code."""
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        print("TIMEOUT after %d s" % timeout)
        for stream in (e.stdout, e.stderr):
            if stream:
                print(stream if isinstance(stream, str) else stream.decode(errors="replace"))
        return 124
    print(p.stdout)
    print(p.stderr)
    return p.returncode


# ---------------------------------------------------------------- real code

# The settings the real-repository tests give, the same in every client
# (Neovim: setup({settings}), Emacs: sculpt-settings, VS Code: user
# settings.json as "sculpt.KEY"). None: the server fits every request to the
# model's context (issue 19), so every client runs with no settings at all.
# (It was {"contextBudget": 160} while the shipped model's 256 positions
# overflowed with the default budget of 1024.)
TEMP_SETTINGS = {}

REAL = os.path.join(SRC, "tests", "data", "real")

# Where each client asks, in the vendored repositories: (repository, path in
# it, 0-based line, where on the line). "blank": column 0 of an empty line
# inside code; "end": the end of the line; any other string: just after its
# first occurrence on the line. Five per language, the last line of the two
# files over 2,000 lines among them, lines inside functions and mid-line.
POSITIONS = [
    ("jq", "src/builtin.c", 1030, "blank"),
    ("jq", "src/builtin.c", 259, "blank"),
    ("jq", "src/builtin.c", 1935, "blank"),
    ("jq", "src/builtin.c", 1031, "jv_free("),
    ("jq", "src/builtin.c", 2150, "end"),          # the last line of 2,151
    ("click", "src/click/core.py", 2519, "blank"),
    ("click", "src/click/core.py", 1224, "blank"),
    ("click", "src/click/core.py", 2433, "blank"),
    ("click", "src/click/core.py", 1223, "return "),
    ("click", "src/click/core.py", 3798, "end"),   # the last line of 3,799
    ("cobra", "command.go", 1110, "blank"),
    ("cobra", "command.go", 1092, "blank"),
    ("cobra", "command.go", 247, "blank"),
    ("cobra", "command.go", 1109, "c.initCompleteCmd("),
    ("cobra", "command.go", 2071, "end"),          # the last line of 2,072
    ("ky", "source/core/Ky.ts", 298, "blank"),
    ("ky", "source/core/Ky.ts", 560, "blank"),
    ("ky", "source/core/Ky.ts", 982, "blank"),
    ("ky", "source/core/Ky.ts", 983, "for (const hook of "),
    ("ky", "source/core/Ky.ts", 1139, "end"),      # the last line
]


def resolve_positions(workspace):
    """POSITIONS as dicts with the file's absolute path in `workspace` (the
    folder real_workspace made) and the 0-based column, checked against the
    file: {repo, file, path, line, col, text}."""
    out = []
    for repo, rel, line, where in POSITIONS:
        path = os.path.join(workspace, repo, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read().split("\n")[line]
        if where == "blank":
            if text.strip():
                raise ValueError("%s:%d is not blank: %r" % (rel, line + 1, text))
            col = 0
        elif where == "end":
            col = len(text)
        else:
            col = text.index(where) + len(where)
        if not text.isascii():
            raise ValueError("%s:%d: keep to ASCII lines (columns differ per client)" % (rel, line))
        out.append({"repo": repo, "file": rel, "path": path, "line": line, "col": col,
                    "text": text})
    return out


def git_work_tree(folder):
    """Makes `folder` a git work tree with everything committed, as a user's
    checkout is (the server indexes what git lists)."""
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-q", "-m", "snapshot"]):
        subprocess.run(cmd, cwd=folder, env=env, check=True, capture_output=True)


def real_workspace(tmp, repos=("jq", "click", "cobra", "ky")):
    """Copies the vendored repositories into tmp/ws/NAME, each its own git
    work tree (the tests never touch tests/data/real). Returns tmp/ws."""
    if not shutil.which("git"):
        skip("git is not installed")
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws, exist_ok=True)
    for name in repos:
        dst = os.path.join(ws, name)
        shutil.copytree(os.path.join(REAL, name), dst)
        git_work_tree(dst)
    return ws


def tap_env(tmp, binary, base=None):
    """An environment in which `sculpt` on PATH is lsp_tap.py running
    `binary` and recording to tmp/tap.jsonl; no SCULPT_MODEL (the shipped
    model) and no SCULPT_LOG (the clients choose). Returns (env, tap log)."""
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    link = os.path.join(bindir, "sculpt")
    if not os.path.exists(link):
        os.symlink(os.path.join(SRC, "tests", "editors", "lsp_tap.py"), link)
    log = os.path.join(tmp, "tap.jsonl")
    env = dict(base if base is not None else os.environ)
    for k in ("SCULPT_MODEL", "SCULPT_LOG", "SCULPT_TEST_HOOKS"):
        env.pop(k, None)
    env.update(PATH=bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
               SCULPT_TAP_BIN=binary, SCULPT_TAP_LOG=log)
    return env, log


def read_tap(log):
    """The recorded messages, in order: [{"dir", "t", "pid", "msg"}]."""
    out = []
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                if line.strip():
                    out.append(json.loads(line))
    return out


def exchanges(records, method):
    """[(request params, response or None)] for each `method` request the
    client sent, paired by server process and id."""
    pending, out = {}, []
    for r in records:
        m = r["msg"]
        key = (r.get("pid"), json.dumps(m.get("id")))
        if r["dir"] == "c2s" and m.get("method") == method and "id" in m:
            entry = [m.get("params"), None]
            pending[key] = entry
            out.append(entry)
        elif r["dir"] == "s2c" and "method" not in m and key in pending:
            pending.pop(key)[1] = m
    return [tuple(e) for e in out]


def check_answers(records, positions, method="textDocument/inlineCompletion", trigger=None):
    """Each position was asked for, and every request of `method` (only
    those of context.triggerKind `trigger` when given: 1 asked for, 2
    automatic) got an answer that is not an error. Prints one line per
    request. Returns the list of failures (strings)."""
    fails = []
    ex = [(p, r) for p, r in exchanges(records, method)
          if trigger is None or (p.get("context") or {}).get("triggerKind") == trigger]
    for params, resp in ex:
        pos = params["position"]
        where = "%s:%d:%d" % (params["textDocument"]["uri"].rsplit("/", 1)[-1],
                              pos["line"] + 1, pos["character"] + 1)
        if resp is None:
            fails.append("%s: no answer" % where)
            print("  %s: no answer" % where)
        elif "error" in resp:
            fails.append("%s: error %s" % (where, json.dumps(resp["error"])))
            print("  %s: ERROR %s" % (where, resp["error"].get("message")))
        else:
            res = resp.get("result") or {}
            items = res.get("items", res) if isinstance(res, dict) else res
            data = res.get("data", {}) if isinstance(res, dict) else {}
            first = items[0].get("insertText") if items else None
            if isinstance(first, dict):
                first = first.get("value")
            print("  %s: %s%s" % (where, repr(first) if first else "no item",
                                   " (%s)" % (data.get("skipped") or data.get("discarded"))
                                   if (data.get("skipped") or data.get("discarded")) else ""))
    asked = {(p["textDocument"]["uri"].rsplit("/", 1)[-1], p["position"]["line"],
              p["position"]["character"]) for p, _ in ex}
    for p in positions:
        if (os.path.basename(p["file"]), p["line"], p["col"]) not in asked:
            fails.append("%s:%d:%d was never asked for" % (p["file"], p["line"] + 1, p["col"] + 1))
    return fails


def statuses(records):
    """The params of every sculpt/status notification, in order."""
    return [r["msg"]["params"] for r in records
            if r["dir"] == "s2c" and r["msg"].get("method") == "sculpt/status"]


def indexed_files(binary, root, timeout=60):
    """How many files the server indexes with `root` as the workspace (read
    from sculpt/status), for comparing with what a client got. None if the
    index did not become ready."""
    env = dict(os.environ)
    env.pop("SCULPT_MODEL", None)
    p = subprocess.Popen([binary, "lsp", "--log-level", "error"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)

    def send(msg):
        body = json.dumps(msg).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        p.stdin.flush()

    def read():
        length = None
        while True:
            line = p.stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(p.stdout.read(length))

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": None, "rootUri": "file://" + root, "capabilities": {}}})
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = read()
            if m is None:
                return None
            idx = (m.get("params") or {}).get("index") if m.get("method") == "sculpt/status" else None
            if idx and idx.get("state") in ("ready", "failed"):
                return idx["files"] if idx["state"] == "ready" else None
        return None
    finally:
        p.kill()
        p.wait()


def settings_json(prefix=""):
    """TEMP_SETTINGS as JSON, keys prefixed (VS Code: "sculpt.")."""
    return json.dumps({prefix + k: v for k, v in TEMP_SETTINGS.items()})


def xfail_or_fail(ok, what, reason):
    """For a check known to fail until a later fix: passes when `ok`, and
    then says the marker can go; else prints the reason and exits 77 (ctest
    shows it as skipped, with the reason), so it is visible, never green."""
    if ok:
        print("XPASS: %s now works: drop its expected-failure marker (%s)" % (what, reason))
        return
    print("XFAIL: %s: %s" % (what, reason))
    sys.exit(77)


def run_spec(cmd, spec, env, tmp, timeout=600, cwd=None):
    """Runs an editor script (nvim_real.lua, emacs_real.el) that reads its
    task from $SCULPT_SPEC (JSON) and writes what it saw to $SCULPT_RESULT.
    Returns (exit code, result dict or None)."""
    spec_path = os.path.join(tmp, "spec-%d.json" % time.monotonic_ns())
    result_path = spec_path.replace("spec-", "result-")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    env = dict(env, SCULPT_SPEC=spec_path, SCULPT_RESULT=result_path)
    rc = run(cmd, env, timeout, cwd=cwd or tmp)
    result = None
    if os.path.exists(result_path):
        with open(result_path) as f:
            result = json.load(f)
    return rc, result


def closed_port():
    """A loopback port nothing listens on: the remote tests' helper."""
    sys.path.insert(0, os.path.join(SRC, "tests", "remote"))
    from mockfim import closed_port as remote_closed_port
    return remote_closed_port()


def parent_workspace(tmp):
    """A folder that is not a git work tree holding one that is (jq) and
    plain files besides (a copy of click): where a user starts an editor one
    level up from their checkout. Returns (parent, the checkout)."""
    parent = os.path.join(tmp, "parent")
    os.makedirs(parent)
    jq = os.path.join(parent, "jq")
    shutil.copytree(os.path.join(REAL, "jq"), jq)
    git_work_tree(jq)
    shutil.copytree(os.path.join(REAL, "click"), os.path.join(parent, "click"))
    return parent, jq


# ------------------------------------------------------------ VS Code tools

def tools_dir():
    """Where tools/editor_tools.sh installs the pinned node, npm and
    code-server: $SCULPT_TOOLS_DIR, default ~/.cache/sculpt-tools."""
    return os.environ.get("SCULPT_TOOLS_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "sculpt-tools")


def node_env(base=None):
    """An environment whose PATH starts with the pinned node and npm when
    tools/editor_tools.sh installed them (else the system's), and the node
    major version found there: (env, major)."""
    env = dict(base if base is not None else os.environ, npm_config_update_notifier="false")
    pinned = os.path.join(tools_dir(), "bin")
    if os.path.exists(os.path.join(pinned, "node")):
        env["PATH"] = pinned + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    node = shutil.which("node", path=env.get("PATH"))
    if not node or not shutil.which("npm", path=env.get("PATH")):
        return env, 0
    out = subprocess.run([node, "-p", "process.versions.node.split('.')[0]"],
                         capture_output=True, text=True, env=env).stdout.strip()
    return env, int(out or 0)


def code_server():
    """The code-server entry script tools/editor_tools.sh installed, or None."""
    d = tools_dir()
    if not os.path.isdir(d):
        return None
    for name in sorted(os.listdir(d), reverse=True):
        entry = os.path.join(d, name, "lib", "node_modules", "code-server", "out", "node",
                             "entry.js")
        if name.startswith("code-server-") and os.path.exists(entry):
            return entry
    return None

"""Opening a repository runs nothing its git configuration names.

One repository per command-running git option (core.fsmonitor, filter
drivers' clean/smudge/process, diff textconv, diff.external, the pager,
hooks in .git/hooks and under core.hooksPath, core.sshCommand, an ext::
remote, credential helpers, core.askPass, gpg.program, editors, merge
drivers, and the same options pulled in through include.path, includeIf
and a worktree config), each command writing its own canary file. Every
repository is opened the two ways a user opens one: `sculpt context
FILE:LINE:COL` (the work tree found from the file) and `sculpt lsp`
(initialize with the repository as rootUri, the index built, a document
opened and a completion asked for). No canary may appear.

The traps are checked to be armed: where a plain git command fires the
option, the test runs that command itself first (git on the test's own
repository, whose commands only create a canary) and requires its canary,
then removes it. Without that, a canary that never appears would prove
nothing."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "protocol"))
from lspclient import check, run_tests, sculpt_bin, spawn  # noqa: E402

if not shutil.which("git"):
    print("skip: git is needed to make the test repositories")
    sys.exit(77)

TMP = tempfile.mkdtemp(prefix="sculpt-repo-config-")
CANARIES = os.path.join(TMP, "canaries")
os.makedirs(CANARIES)
# The test's own git commands see no user or system configuration.
GIT_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=TMP, XDG_CONFIG_HOME=TMP,
               GIT_TERMINAL_PROMPT="0", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_SSH_COMMAND", "GIT_SSH",
          "GIT_PAGER", "PAGER", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "EDITOR",
          "GIT_EDITOR", "VISUAL"):
    GIT_ENV.pop(k, None)

A_PY = "def settle(entries):\n    return helper_total(entries)\n"
B_PY = "def helper_total(entries):\n    return sum(entries)\n"


def canary(name):
    return os.path.join(CANARIES, name)


def touch(name):
    """A shell command that creates the named canary."""
    return "touch '%s'" % canary(name)


def git(repo, *args, input=None, check_rc=True):
    r = subprocess.run(["git", "-C", repo] + list(args), env=GIT_ENV, input=input,
                       capture_output=True, text=True, timeout=60)
    if check_rc and r.returncode != 0:
        raise AssertionError("git %s: %s" % (" ".join(args), r.stderr))
    return r


def write(path, text, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if mode:
        os.chmod(path, mode)


def new_repo(name):
    repo = os.path.join(TMP, "repos", name)
    os.makedirs(repo)
    git(repo, "init", "-q")
    write(os.path.join(repo, "a.py"), A_PY)
    write(os.path.join(repo, "b.py"), B_PY)
    git(repo, "add", "a.py", "b.py")
    git(repo, "commit", "-qm", "init")
    return repo


def hook_script(name):
    return "#!/bin/sh\n%s\nexit 0\n" % touch(name)


HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-index-change",
         "reference-transaction", "fsmonitor-watchman", "post-merge", "pre-auto-gc",
         "post-rewrite", "prepare-commit-msg", "commit-msg", "pre-push", "push-to-checkout")


# ---- the cases: (name, setup(repo, name), trigger(repo) or None) -------------------
# A trigger is a git command of the test's own that fires the option, to
# prove the trap armed; None where no plain command does without a
# terminal or a network.

def set_config(*pairs):
    """CANARY in a value: a shell command creating the canary; SCRIPT: the
    path of an executable doing it (for options git runs without a shell)."""
    def setup(repo, name):
        script = os.path.join(repo, ".git", "evil.sh")
        write(script, hook_script(name), 0o755)
        for k, v in pairs:
            git(repo, "config", k, v.replace("CANARY", touch(name)).replace("SCRIPT", script))
    return setup


def with_attributes(line, *pairs):
    def setup(repo, name):
        write(os.path.join(repo, ".gitattributes"), line + "\n")
        set_config(*pairs)(repo, name)
    return setup


def hooks_in(rel):
    def setup(repo, name):
        d = os.path.join(repo, rel)
        for h in HOOKS:
            write(os.path.join(d, h), hook_script(name), 0o755)
        if rel != ".git/hooks":
            git(repo, "config", "core.hooksPath", d)
    return setup


def included(how):
    """core.fsmonitor set in a file the repository's config includes."""
    def setup(repo, name):
        inc = os.path.join(repo, ".git", "evil.inc")
        write(inc, "[core]\n\tfsmonitor = %s\n" % touch(name))
        if how == "include":
            git(repo, "config", "include.path", inc)
        elif how == "includeIf":
            git(repo, "config", "includeIf.gitdir:%s/.path" % repo, inc)
        else:  # a worktree config
            git(repo, "config", "extensions.worktreeConfig", "true")
            git(repo, "config", "--worktree", "core.fsmonitor", touch(name))
    return setup


def ext_remote(repo, name):
    # ext:: splits its command at spaces ("% " is a literal space).
    git(repo, "config", "protocol.ext.allow", "always")
    git(repo, "config", "remote.origin.url", "ext::sh -c touch% " + canary(name))


def modify_then(*args):
    def trigger(repo):
        with open(os.path.join(repo, "a.py"), "a") as f:
            f.write("# changed\n")
        git(repo, *args, check_rc=False)
        write(os.path.join(repo, "a.py"), A_PY)
    return trigger


def run_git(*args, input=None):
    return lambda repo: git(repo, *args, input=input, check_rc=False)


def checkout_fresh(repo):
    os.remove(os.path.join(repo, "a.py"))
    git(repo, "checkout", "-q", "--", "a.py", check_rc=False)


CASES = [
    ("core.fsmonitor", set_config(("core.fsmonitor", "CANARY; false")), run_git("status")),
    ("filter.clean", with_attributes("*.py filter=evil", ("filter.evil.clean", "CANARY; cat"),
                                     ("filter.evil.required", "true")),
     modify_then("add", "a.py")),
    ("filter.smudge", with_attributes("*.py filter=evil", ("filter.evil.smudge", "CANARY; cat")),
     checkout_fresh),
    ("filter.process", with_attributes("*.py filter=evil",
                                       ("filter.evil.process", "CANARY; exit 1")),
     modify_then("add", "a.py")),
    ("diff.textconv", with_attributes("*.py diff=evil", ("diff.evil.textconv", "CANARY; cat")),
     modify_then("diff")),
    ("diff.external", set_config(("diff.external", "CANARY; true")), modify_then("diff")),
    ("diff.command", with_attributes("*.py diff=evil", ("diff.evil.command", "CANARY; true")),
     modify_then("diff")),
    ("core.pager", set_config(("core.pager", "CANARY; cat"), ("pager.status", "CANARY; cat"),
                              ("pager.ls-files", "CANARY; cat")), None),
    ("hooks", hooks_in(".git/hooks"), run_git("commit", "-q", "--allow-empty", "-m", "x")),
    ("core.hooksPath", hooks_in("hooks-elsewhere"),
     run_git("commit", "-q", "--allow-empty", "-m", "x")),
    ("core.sshCommand", set_config(("core.sshCommand", "CANARY; false"),
                                   ("remote.origin.url", "ssh://example.invalid/x.git")),
     run_git("ls-remote", "origin")),
    ("ext-remote", ext_remote,
     run_git("ls-remote", "origin")),
    ("credential.helper", set_config(("credential.helper", "!CANARY; true"),
                                     ("core.askPass", "SCRIPT")),
     run_git("credential", "fill", input="protocol=https\nhost=example.invalid\n\n")),
    ("gpg.program", set_config(("commit.gpgSign", "true"), ("gpg.program", "SCRIPT")),
     run_git("commit", "-q", "--allow-empty", "-m", "x")),
    ("editors", set_config(("core.editor", "CANARY"), ("sequence.editor", "CANARY"),
                           ("merge.evil.driver", "CANARY"),
                           ("core.alternateRefsCommand", "CANARY"),
                           ("uploadpack.packObjectsHook", "CANARY")), None),
    ("include.path", included("include"), run_git("status")),
    ("includeIf", included("includeIf"), run_git("status")),
    ("config.worktree", included("worktree"), run_git("status")),
]


def arm(name, setup, trigger):
    """A repository with the option set; its trap proven live when a trigger
    exists."""
    repo = new_repo(name)
    setup(repo, name)
    if trigger:
        trigger(repo)
        check(os.path.exists(canary(name)),
              "%s: the trap is armed (git's own command created the canary)" % name)
        os.remove(canary(name))
    # Untracked and a changed tracked file too, so that listing both walks
    # the work tree and meets a stat mismatch.
    write(os.path.join(repo, "c.py"), "def untracked_one():\n    return 3\n")
    return repo


def no_canaries(what):
    left = sorted(os.listdir(CANARIES))
    check(not left, "nothing ran when %s" % what, left)


def open_with_context(name, repo):
    r = subprocess.run([sculpt_bin(), "context", "a.py:2:12"], cwd=repo, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, "%s: sculpt context succeeds" % name, r.stderr)
    out = json.loads(r.stdout)
    ws = out.get("workspace") or {}
    check(ws.get("files") == 3, "%s: the workspace was listed (3 files)" % name, ws)
    check(any(s.get("name") == "helper_total" for s in out["snippets"]),
          "%s: b.py's definition is in the prompt" % name, out["snippets"])
    no_canaries("sculpt context opened %s" % name)


def open_with_lsp(name, repo):
    s = spawn()
    try:
        s.start({}, rootUri="file://" + repo)
        st = s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                            m["params"].get("index", {}).get("state") in ("ready", "failed"),
                            what="the index", timeout=60)
        idx = st["params"]["index"]
        check(idx["state"] == "ready" and idx["files"] == 3,
              "%s: the LSP indexed the repository" % name, idx)
        uri = "file://" + os.path.join(repo, "a.py")
        s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                           "version": 1, "text": A_PY}})
        r = s.request("textDocument/completion",
                      {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11},
                       "context": {"triggerKind": 1}}, timeout=120)
        check("result" in r, "%s: the completion is answered" % name, r)
        # A file saved and a folder that appears: the per-file paths too.
        write(os.path.join(repo, "pkg", "d.py"), "def in_folder():\n    return 4\n")
        s.notify("workspace/didChangeWatchedFiles",
                 {"changes": [{"uri": "file://" + os.path.join(repo, "pkg"), "type": 1}]})
        s.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        s.sync()
        s.shutdown_and_exit()
    finally:
        problems = s.close()
    check(not problems, "%s: a clean session" % name, problems)
    no_canaries("sculpt lsp opened %s" % name)


def test_no_option_runs_anything():
    for name, setup, trigger in CASES:
        repo = arm(name, setup, trigger)
        no_canaries("the repository %s was made" % name)
        open_with_context(name, repo)
        open_with_lsp(name, repo)
        print("ok   %s" % name)


if __name__ == "__main__":
    try:
        run_tests([test_no_option_runs_anything])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

"""`sculpt complete` and `sculpt context` with default flags and the shipped
model (model/default: a 256-position context) on a real 2,000-line file
(jq's src/builtin.c, copied into a fresh git work tree): at its first line,
its middle and its very end they succeed, and what they put before the
model fits its context (a suffix cut to fit goes without its EOS).
`sculpt context` shows by default the prompt an editor would get with the
default settings (the budget fitted to the model); an explicit --budget is
shown as asked. `sculpt model info` describes that same model by default."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from clitest import check, failures

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
CONTEXT = 256


def run(*args):
    env = dict(os.environ)
    env.pop("SCULPT_MODEL", None)  # the shipped model
    p = subprocess.run([BIN, *args], capture_output=True, timeout=300, env=env)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


tmp = tempfile.mkdtemp(prefix="sculpt-real-cli-")
try:
    repo = os.path.join(tmp, "jq")
    shutil.copytree(os.path.join(SRC, "tests", "data", "real", "jq"), repo)
    have_git = shutil.which("git") is not None
    if have_git:
        subprocess.run(["git", "init", "-q", repo], check=True, capture_output=True)
    path = os.path.join(repo, "src", "builtin.c")
    lines = open(path, encoding="utf-8").read().split("\n")
    check(len(lines) >= 2000, "a 2,000-line file")
    # 1-based line:column: the first line's end, the middle, the last line's
    # end and the very end of the file (after the final line break).
    mid = len(lines) // 2
    where = [(1, len(lines[0]) + 1), (mid + 1, len(lines[mid]) + 1),
             (len(lines) - 1, len(lines[-2]) + 1), (len(lines), 1)]
    for line, col in where:
        target = "%s:%d:%d" % (path, line, col)
        rc, out, err = run("complete", target, "--json")
        check(rc == 0, f"complete {line}:{col}: exit {rc}: {err.strip()}")
        if rc == 0:
            res = json.loads(out)
            ctx = res["context"]
            check(ctx["model_tokens"] == CONTEXT, f"the model's context: {ctx}")
            # The shipped profile's frame: a BOS, and an EOS after a whole
            # suffix only; a suffix cut to fit (at the top and the middle of
            # a long file) is not the file's end.
            frame = 1 if ctx["suffix_cut"] else 2
            check(ctx["suffix_cut"] == (line <= mid + 1),
                  f"{line}:{col}: the suffix is cut before the end only: {ctx}")
            check(ctx["prefix_tokens"] + ctx["suffix_tokens"] + res["canvas"] + frame <= CONTEXT,
                  f"{line}:{col}: prompt and canvas fit: {ctx}, canvas {res['canvas']}")
        rc, out, err = run("context", target, "--json")
        check(rc == 0, f"context {line}:{col}: exit {rc}: {err.strip()}")
        if rc == 0:
            res = json.loads(out)
            t = res["tokens"]
            check(res.get("contextTokens") == CONTEXT, f"the model's context: {res.keys()}")
            # The editor's defaults: 1024 tokens wanted, a 64-token canvas.
            check(t["budget"] == CONTEXT - 2 - 64, f"the budget fitted to the model: {t}")
            check(t["prefix"] + t["suffix"] + t["snippets"] <= t["budget"],
                  f"{line}:{col}: the prompt within the budget: {t}")
            if have_git:
                check(res.get("workspace", {}).get("root") == os.path.realpath(repo),
                      f"the file's work tree: {res.get('workspace')}")
    # An explicit budget is shown as asked (to study budgets beyond the model).
    rc, out, err = run("context", "%s:%d:1" % (path, mid), "--budget", "2048", "--json")
    check(rc == 0 and json.loads(out)["tokens"]["budget"] == 2048, f"--budget 2048: {err}")
    # Several canvas lengths, one longer than the model allows: cut, not refused.
    rc, out, err = run("complete", "%s:%d:1" % (path, len(lines)), "--lengths", "8,500",
                       "--json")
    check(rc == 0 and json.loads(out)["canvas"] <= (CONTEXT - 2) // 2,
          f"--lengths 8,500 is cut to the model: {rc} {err.strip()}")
    # `model info` with no --model describes the model the other subcommands
    # load (issue 43: it demanded --model), and $SCULPT_MODEL when set.
    rc, out, err = run("model", "info", "--json")
    check(rc == 0 and json.loads(out).get("max_seq") == CONTEXT,
          f"model info: the shipped model by default: {rc} {err.strip()}")
    rc2, out2, err2 = run("model", "info", "--json", "--model", os.path.join(SRC, "model", "default"))
    check(rc2 == 0 and out2 == out, "the same as --model model/default")
    env = dict(os.environ, SCULPT_MODEL=os.path.join(tmp, "nowhere"))
    p = subprocess.run([BIN, "model", "info"], capture_output=True, timeout=60, env=env)
    check(p.returncode != 0 and b"nowhere" in p.stderr, f"$SCULPT_MODEL is the one asked for: "
          f"{p.returncode} {p.stderr.decode().strip()}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    sys.exit(1)
print("ok")

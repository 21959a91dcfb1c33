"""--weights and $SCULPT_WEIGHTS across the subcommands that load a model:
the kind is parsed, refused when unknown (exit 2, one line), reported by
`model info`, and the environment variable reaches loaders whose caller
leaves the kind to auto (how `sculpt lsp --weights` and `sculpt serve
--weights` pass it on); auto picks f32 for the small shipped model."""
import json
import os
import subprocess
import sys

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
MODEL = os.path.join(SRC, "model", "default")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("SCULPT_WEIGHTS", None)
    e.update(env or {})
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60, env=e,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def weights(*extra, env=None):
    rc, out, err = run("model", "info", "--model", MODEL, "--json", *extra, env=env)
    return json.loads(out).get("weights") if rc == 0 else f"exit {rc}: {err.strip()}"


check(weights() == "f32", "auto: f32 for the 1M-parameter shipped model")
for k in ("int8", "bf16", "f32"):
    check(weights("--weights", k) == k, f"model info --weights {k} computes in {k}")
check(weights(env={"SCULPT_WEIGHTS": "int8"}) == "int8", "$SCULPT_WEIGHTS=int8 is read")
check(weights("--weights", "f32", env={"SCULPT_WEIGHTS": "int8"}) == "f32",
      "an explicit --weights wins over $SCULPT_WEIGHTS")
rc, _, err = run("model", "info", "--model", MODEL, env={"SCULPT_WEIGHTS": "int4"})
check(rc == 2 and "SCULPT_WEIGHTS" in err and err.count("\n") == 1,
      f"a bad $SCULPT_WEIGHTS is one clear error ({err.strip()})")
for cmd in (["lsp"], ["serve"], ["complete", "x.py:1:1"], ["bench"],
            ["logits", "--model", MODEL, "--ids", "1", "--out", "/dev/null"],
            ["model", "info", "--model", MODEL]):
    rc, _, err = run(*cmd, "--weights", "int4")
    check(rc == 2 and "--weights" in err, f"sculpt {cmd[0]} --weights int4 is refused ({err.strip()})")
rc, out, _ = run("help", "lsp")
check("--weights" in out, "sculpt help lsp documents --weights")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)

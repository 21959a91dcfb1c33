"""What the tests/eval scripts share: `sculpt eval` run as a user runs it,
checks that are printed and kept in `failures` (the exit status at the
end), and files in HumanEval's formats."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
DATA = os.path.join(SRC, "tests", "data", "human-eval-infilling")
MODEL = os.path.join(SRC, "model", "default")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tempdir(prefix):
    """A temporary folder removed when the test ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def run(*args, timeout=600, env=None):
    """sculpt eval ARGS: (exit status, stdout, stderr)."""
    p = subprocess.run([BIN, "eval", *args], capture_output=True, timeout=timeout,
                       env=env)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def run_json(*args, **kw):
    rc, out, err = run(*args, "--json", **kw)
    try:
        return rc, json.loads(out) if rc == 0 else None, err
    except ValueError:
        return rc, None, err + "\n(stdout is not JSON: " + out[:300] + ")"


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def system(summary, name):
    return next((s for s in summary["systems"] if s["name"] == name), None)


def finish():
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")
    sys.exit(0)

"""Shared by tests/batch/test_*.py (this file is not a test itself): the
planted model, fixture repositories in C, Python and JavaScript, and a
runner for `sculpt batch`.

The planted byte-level model (tools/planted_checkpoints.py) writes
"defghijklmnopqrstuvwxyz" after the letters "...abc" and then ends, so a
hole placed right after "abc" has a known fill."""
import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
FILL = "defghijklmnopqrstuvwxyz"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def finish():
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")
    sys.exit(0)


_model = None


def model():
    """Generates the planted checkpoints once per test process."""
    global _model
    if _model is None:
        d = tempfile.mkdtemp(prefix="sculpt-batch-model-")
        atexit.register(shutil.rmtree, d, True)
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "planted_checkpoints.py"), d],
                       check=True, capture_output=True)
        _model = os.path.join(d, "planted-successor-shifted-bytes")
    return _model


# Fixture repositories: holes the planted model fills (inline markers in
# code right after "abc"), a marker in a string and a docstring (never a
# hole), and planted compile errors (`$` after "abc").
FIXTURE = {
    "c/alphabet.c": '#include <stdio.h>\n\nstatic const char *alphabet(void) {\n'
                    '  return abcTODO(sculpt);\n}\n\nint main(void) {\n'
                    '  puts(alphabet());\n  return 0;\n}\n',
    "c/other.c": "int twice(int x) {\n  return 2 * x;\n}\n",
    "py/letters.py": 'LETTERS = abcTODO(sculpt)\n\n\ndef count():\n    return len(LETTERS)\n',
    "py/clean.py": "def add(a, b):\n    return a + b\n",
    "py/strings.py": 'S = "abcTODO(sculpt)"\n\n\ndef f():\n'
                     '    """abcTODO(sculpt) in a docstring."""\n    return S\n',
    "js/letters.js": 'const letters = abcTODO(sculpt);\nconsole.log(letters);\n',
    "README.md": "Not code: TODO(sculpt) here is ignored.\n",
}
# What --write makes of each fixture file.
FILLED = {rel: (text if rel.endswith((".md", "strings.py")) else
                text.replace("abcTODO(sculpt)", "abc" + FILL)) for rel, text in FIXTURE.items()}
ERRORS = {
    "py/broken.py": "x = abc$\nprint(x)\n",
    "c/broken.c": "int abc;\nint f(void) {\n  return abc$;\n}\n",
    "js/broken.js": "let v = abc@;\nconsole.log(v);\n",
}


def make_repo(files=FIXTURE):
    root = tempfile.mkdtemp(prefix="sculpt-batch-repo-")
    atexit.register(shutil.rmtree, root, True)
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", newline="") as f:
            f.write(text)
    return root


def snapshot(root):
    """{relative path: (sha256, mode)} of every file, hidden ones included."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.islink(p):
                continue
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = (hashlib.sha256(f.read()).hexdigest(),
                                                 os.stat(p).st_mode)
    return out


def text(path):
    """A file's text as it is (no newline translation)."""
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def put(path, t):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(t)


def read(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        return f.read().decode("utf-8", "surrogateescape")


def batch(*args, cwd=None, stdin=None, env=None, timeout=300):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([BIN, "batch", *args], capture_output=True, cwd=cwd,
                       input=stdin.encode() if isinstance(stdin, str) else stdin, env=e,
                       timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def report(out):
    try:
        return json.loads(out)
    except ValueError:
        check(False, f"--json output is JSON: {out[:300]!r}")
        return {"sites": [], "summary": {}}


def cleanup(*dirs):
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)

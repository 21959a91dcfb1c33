"""Shared by the editor tests: the planted model (after "abc" it answers
"defghijklmnopqrstuvwxyz", tools/planted_checkpoints.py), a fixture file,
and skipping (exit 77) with a reason."""
import os
import subprocess
import sys
import tempfile

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

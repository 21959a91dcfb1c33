"""Shared helpers for the model tests: the binary, generated checkpoints."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRC, "tools"))
sys.path.insert(0, HERE)

import tiny_checkpoints  # noqa: E402


def sculpt_bin():
    b = os.environ.get("SCULPT_BIN")
    if not b or not os.path.exists(b):
        print("SCULPT_BIN is not set or missing; skipping")
        sys.exit(77)
    return b


def run(*args):
    return subprocess.run([sculpt_bin(), *args], capture_output=True, text=True, timeout=300)


def make_all(tmp):
    """Generates every tiny checkpoint into tmp; returns {name: dir}."""
    return {n: tiny_checkpoints.generate(n, s, tmp)
            for n, s in tiny_checkpoints.SPECS.items()}


def tempdir():
    return tempfile.TemporaryDirectory(prefix="sculpt-model-")

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


def skip_unless_cuda(probe):
    """For GPU tests: exits 77 (skip) with the reason when a `--device cuda`
    probe (a finished subprocess) fell back because there is no device or
    no CUDA backend. A CUDA path that fails on a device that is there (a
    crash, a cuBLAS error, out of memory, a driver too old) is a failure,
    not a skip: the caller checks the probe's exit and its log."""
    if any(w in probe.stderr for w in ("CUDA unavailable", "without CUDA", "no CUDA device",
                                       "no device")):
        print("no CUDA device (or no CUDA backend): " + probe.stderr.strip().replace("\n", " "))
        sys.exit(77)

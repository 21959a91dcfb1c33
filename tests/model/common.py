"""Shared helpers for the model tests: the binary, generated checkpoints,
weights poisoned with NaN or Inf."""
import json
import os
import struct
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


def run(*args, env=None):
    return subprocess.run([sculpt_bin(), *args], capture_output=True, text=True, timeout=300,
                          env=env)


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


# The bit patterns of NaN and +Inf per safetensors dtype (little-endian).
NAN_BITS = {"BF16": b"\xc0\x7f", "F16": b"\x00\x7e", "F32": b"\x00\x00\xc0\x7f"}
INF_BITS = {"BF16": b"\x80\x7f", "F16": b"\x00\x7c", "F32": b"\x00\x00\x80\x7f"}
DTYPE_SIZE = {"BF16": 2, "F16": 2, "F32": 4}


def poison_safetensors(path, fn):
    """Overwrites tensor bytes in place: fn(name, header entry) returns
    [(byte offset in the tensor, bytes)]. Returns how many writes were made.
    (The safetensors layout: u64 header length, JSON header, data.)"""
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        hits = 0
        for name, info in header.items():
            if name == "__metadata__":
                continue
            for off, data in fn(name, info):
                f.seek(8 + n + info["data_offsets"][0] + off)
                f.write(data)
                hits += 1
        return hits


def all_nan(name, info):
    """Every element of every tensor NaN."""
    count = (info["data_offsets"][1] - info["data_offsets"][0]) // DTYPE_SIZE[info["dtype"]]
    return [(0, NAN_BITS[info["dtype"]] * count)]


def inf_in_head(column):
    """+Inf at lm_head row 5, the given column: logit 5 = inf * x[column] + finite."""
    def fn(name, info):
        if name not in ("lm_head.weight", "model.transformer.ff_out.weight"):
            return []
        size = DTYPE_SIZE[info["dtype"]]
        return [((5 * info["shape"][1] + column) * size, INF_BITS[info["dtype"]])]
    return fn


failures = []


def check(cond, what):
    """One check's line; a failed one is counted for finish()."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def finish():
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all passed")

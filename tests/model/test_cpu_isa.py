"""The CPU paths below AVX-512, on real dispatch: `sculpt logits` run under
QEMU's user-mode emulation as a Haswell (AVX2, no AVX-512, no VNNI: most
laptops before 2020 and AMD's before Zen 4) and as a Nehalem (SSE4.2, no
AVX). There cpuid tells every layer what the CPU has: GCC's function
clones (model_impl.h, SC_VECTOR_CLONES), oneDNN's kernels and OpenBLAS's.
ONEDNN_MAX_CPU_ISA, which the other tests use, tells oneDNN alone.

  - Haswell, int8: our AVX2 clones with oneDNN's AVX2 kernels give bit for
    bit the logits of the native run with oneDNN told AVX2 (our x86-64-v4
    clones, the same oneDNN kernels): the clones compute the same bits, as
    model_impl.h says. One thread each, so that no split differs.
  - On both CPUs int8 loads (7-bit activation parts: oneDNN's int8 product
    saturates 8-bit ones there, model/dnnl.c int8_range), not f32 after a
    warning, and passes test_int8.py's gate against f32 computed natively:
    rms error <= 1.5% of the logits' rms, argmax on >= 95% of 128 rows.
  - bf16 falls back to f32 with one warning naming the reason (oneDNN 2.6
    has no bf16 matmul below AVX-512).

Skips without qemu-x86_64 (Debian's qemu-user; tools/bootstrap.sh installs
it with the test packages) or oneDNN, and in sanitizer builds (their
runtime's shadow memory is not QEMU's to map)."""
import ctypes.util
import os
import shutil
import subprocess
import sys

import numpy as np

from common import make_all, sculpt_bin, tempdir, tiny_checkpoints

QEMU = shutil.which("qemu-x86_64")
if not QEMU:
    print("qemu-x86_64 is not installed (apt-get install qemu-user): skipping")
    sys.exit(77)
if ctypes.util.find_library("dnnl") is None:
    print("oneDNN is not installed: no int8 to check: skipping")
    sys.exit(77)
if os.environ.get("SCULPT_SANITIZED") == "1":
    print("sanitizer build: its runtime does not run under QEMU: skipping")
    sys.exit(77)

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def logits(model, ids, weights, out, cpu=None, isa=None):
    """(process, [n][vocab] or None): natively, or under QEMU as cpu."""
    cmd = [sculpt_bin(), "logits", "--model", model, "--ids", ",".join(map(str, ids)),
           "--out", out, "--weights", weights, "--threads", "1"]
    if cpu:
        cmd = [QEMU, "-cpu", cpu] + cmd
    env = dict(os.environ, SCULPT_LOG="debug")
    env.pop("SCULPT_WEIGHTS", None)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    # QEMU notes the host features it cannot emulate (TSX and the like).
    r.stderr = "\n".join(l for l in r.stderr.splitlines() if not l.startswith("qemu-x86_64:"))
    got = np.fromfile(out, dtype="<f4").reshape(len(ids), -1) if r.returncode == 0 else None
    return r, got


with tempdir() as tmp:
    dirs = make_all(tmp)
    out = os.path.join(tmp, "logits.bin")
    rng = np.random.default_rng(11)
    for name in ("dream-bf16", "qwen3-tied-bf16", "llada-gqa-f32"):
        d = dirs[name]
        ids = rng.integers(0, tiny_checkpoints.SPECS[name]["vocab"], size=128)
        _, ref = logits(d, ids, "f32", out)
        native_r, native = logits(d, ids, "int8", out, isa="AVX2")
        for cpu in ("Haswell", "Nehalem"):
            r, got = logits(d, ids, "int8", out, cpu=cpu)
            check(got is not None and "7 bits a part" in r.stderr and "warn" not in r.stderr,
                  f"{name} on a {cpu}: int8 loads, with 7-bit activation parts "
                  f"({r.stderr.strip()[-200:]})")
            if got is None or ref is None:
                continue
            rms = float(np.sqrt(((got - ref) ** 2).mean()))
            rms_ref = float(np.sqrt((ref ** 2).mean()))
            agree = int((got.argmax(1) == ref.argmax(1)).sum())
            check(rms <= 0.015 * rms_ref and agree >= 0.95 * len(ids),
                  f"{name} on a {cpu}: int8 against native f32: rms error {rms:.4f} <= 1.5% "
                  f"of {rms_ref:.3f}, argmax on {agree} of {len(ids)} rows (>= 95%)")
            if cpu == "Haswell":
                check(native is not None and np.array_equal(got, native),
                      f"{name} on a Haswell: int8 logits bit for bit those of this CPU with "
                      f"oneDNN told AVX2 (our AVX2 clones = our x86-64-v4 ones) "
                      f"({native_r.stderr.strip()[-160:]})")
        r, _ = logits(d, ids[:8], "bf16", out, cpu="Haswell")
        warns = [l for l in r.stderr.splitlines() if " warn: " in l]
        check(r.returncode == 0 and len(warns) == 1 and "bf16" in warns[0] and
              "computing in f32" in warns[0],
              f"{name} on a Haswell: bf16 falls back to f32 with one warning ({warns})")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)

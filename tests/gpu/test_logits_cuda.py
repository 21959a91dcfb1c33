"""`sculpt logits --device cuda` against `--device cpu` on every tiny checkpoint.

Relative error max|cuda - cpu| / max|cpu| over the [n][vocab] logits must be
<= 5e-2 (bf16 weights and activations on the GPU against the f32 CPU
reference, over 1-2 layers); shifted rows must NOT match (the check can
fail). Skips (77) when the binary has no CUDA backend or no device answers,
i.e. when `--device cuda` falls back to the CPU."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "model"))

import numpy as np  # noqa: E402

from common import make_all, run, skip_unless_cuda, tempdir, tiny_checkpoints  # noqa: E402

TOL = 5e-2
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def rel_err(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


with tempdir() as tmp:
    dirs = make_all(tmp)
    out = os.path.join(tmp, "l.bin")
    rng = np.random.default_rng(77)
    probe = run("logits", "--model", dirs["dream-bf16"], "--ids", "1,2,3", "--out", out,
                "--device", "cuda")
    skip_unless_cuda(probe)
    check(probe.returncode == 0 and "falling back" not in probe.stderr,
          "the probe ran on the GPU: " + probe.stderr.strip().replace("\n", " ")[:400])
    for name, d in dirs.items():
        V = tiny_checkpoints.SPECS[name]["vocab"]
        ids = ",".join(map(str, rng.integers(0, V, size=23)))
        res = {}
        for dev in ("cpu", "cuda"):
            r = run("logits", "--model", d, "--ids", ids, "--out", out, "--device", dev)
            check(r.returncode == 0, f"{name} --device {dev}: exit 0 ({r.stderr.strip()})")
            check("falling back" not in r.stderr, f"{name} --device {dev}: no fallback")
            res[dev] = np.fromfile(out, dtype="<f4").reshape(23, V) if r.returncode == 0 else None
        if res["cpu"] is None or res["cuda"] is None:
            continue
        err = rel_err(res["cuda"], res["cpu"])
        check(err <= TOL, f"{name}: cuda vs cpu rel err {err:.2e} <= {TOL}")
        check(rel_err(res["cuda"][1:], res["cpu"][:-1]) > 4 * TOL,
              f"{name}: shifted rows do not match (the test discriminates)")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

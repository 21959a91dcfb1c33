"""The training recipe's parts that are not the model or the batches: the
optimizers (Muon for the hidden matrices, AdamW for the rest), the
wall-clock warmup-stable-decay schedule, the FLOP count and MFU, regional
torch.compile, and the preflight checks the GPU run makes before its timed
budget (each new path against its reference, on that machine's torch).
"""
import math
import os
import time

import torch

import model as M

# ---- optimizers ------------------------------------------------------------------------

# Muon's quintic Newton-Schulz coefficients (Keller Jordan, "Muon: An optimizer
# for hidden layers in neural networks", 2024; torch.optim.Muon's defaults).
NS_COEFFS = (3.4445, -4.7750, 2.0315)


def newton_schulz(G, steps=5, eps=1e-7, coeffs=NS_COEFFS):
    """An approximate orthogonalization of the 2-D matrix G (U V^T of its
    SVD, singular values pushed into about [0.7, 1.2]): X <- aX + (bA + cA^2)X
    with A = X X^T, from X = G / ||G||_F, on the wide orientation. bf16 on a
    GPU (as torch's and the paper's), float32 elsewhere."""
    a, b, c = coeffs
    X = G.to(torch.bfloat16 if G.is_cuda else torch.float32)
    tall = X.shape[0] > X.shape[1]
    if tall:
        X = X.t()
    X = X / (X.norm() + eps)
    for _ in range(steps):
        A = X @ X.t()
        X = a * X + (b * A + c * (A @ A)) @ X
    if tall:
        X = X.t()
    return X.to(G.dtype)


def muon_lr_scale(shape, adjust):
    A, B = shape[0], shape[1]
    if adjust == "match_rms_adamw":  # Moonshot, "Muon is Scalable for LLM Training" (2025)
        return 0.2 * math.sqrt(max(A, B))
    return math.sqrt(max(1.0, A / B))  # "original"


class MuonFallback(torch.optim.Optimizer):
    """Muon as torch.optim.Muon documents it (torch >= 2.9), for a torch
    without it: momentum buffer B <- mu B + g; the update's direction
    NS(g + mu B) (Nesterov) or NS(B); decoupled weight decay p <- p(1 - lr
    wd); p <- p - lr * scale(shape) * NS(.). 2-D parameters only."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_steps=5, eps=1e-7, adjust_lr_fn="match_rms_adamw"):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_steps=ns_steps, eps=eps,
                                      adjust_lr_fn=adjust_lr_fn))

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if p.dim() != 2:
                    raise ValueError("Muon takes 2-D parameters only")
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = torch.zeros_like(p.grad)
                buf = st["momentum_buffer"]
                buf.mul_(g["momentum"]).add_(p.grad)
                d = p.grad.add(buf, alpha=g["momentum"]) if g["nesterov"] else buf
                o = newton_schulz(d, g["ns_steps"], g["eps"])
                p.mul_(1 - g["lr"] * g["weight_decay"])
                p.add_(o, alpha=-g["lr"] * muon_lr_scale(p.shape, g["adjust_lr_fn"]))


def hidden_matrices(model):
    """The names of the 2-D hidden matrices (attention and MLP projections):
    Muon's; the embedding (also the tied head), norms and biases are AdamW's."""
    return [n for n, p in model.named_parameters()
            if p.dim() == 2 and ".layers." in n and n.endswith(".weight")]


def make_optimizers(model, lr, muon=True, muon_lr=None, weight_decay=0.05, log=print):
    """[optimizers], and which Muon ran ("torch", "fallback" or "none")."""
    names = set(hidden_matrices(model)) if muon else set()
    mats = [p for n, p in model.named_parameters() if n in names]
    rest_decay = [p for n, p in model.named_parameters() if n not in names and p.dim() >= 2]
    rest_nodecay = [p for n, p in model.named_parameters() if n not in names and p.dim() < 2]
    opts = [torch.optim.AdamW([{"params": rest_decay, "weight_decay": weight_decay},
                               {"params": rest_nodecay, "weight_decay": 0.0}],
                              lr=lr, betas=(0.9, 0.98), eps=1e-8)]
    kind = "none"
    if mats:
        mlr = muon_lr or lr
        kw = dict(lr=mlr, weight_decay=weight_decay, momentum=0.95, nesterov=True,
                  adjust_lr_fn="match_rms_adamw")
        if hasattr(torch.optim, "Muon") and os.environ.get("SCULPT_MUON") != "fallback":
            try:
                opts.append(torch.optim.Muon(mats, **kw))
                kind = "torch"
            except (TypeError, ValueError) as e:
                log(f"torch.optim.Muon refused ({e}); using the fallback")
        if kind == "none":
            opts.append(MuonFallback(mats, **kw))
            kind = "fallback"
    for o in opts:
        for gr in o.param_groups:
            gr["base_lr"] = gr["lr"]
    return opts, kind


# ---- schedule ----------------------------------------------------------------------------

def wsd(frac, warm=0.03, decay=0.25, floor=0.0):
    """Warmup-stable-decay on the fraction of the budget (wall clock) spent:
    linear warmup over `warm`, constant, then linear to `floor` over the last
    `decay` (Hu et al., MiniCPM, 2024: the stable phase can stop whenever
    the clock says, the decay is what lowers the loss)."""
    if frac < warm:
        return frac / warm
    if frac < 1 - decay:
        return 1.0
    return max(floor, floor + (1 - floor) * (1 - frac) / decay)


def set_lr(opts, mult):
    for o in opts:
        for g in o.param_groups:
            g["lr"] = g["base_lr"] * mult


# ---- FLOPs and MFU ---------------------------------------------------------------------------

def body_flops_per_token(c, T, causal=False):
    """Forward + backward FLOPs of the transformer body for one token of a
    T-token sequence: 6 x the matmul parameters, plus attention's QK^T and
    AV (2 x T x d each, forward; half the pairs when causal, as flash
    attention skips the masked ones)."""
    H, L, I = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = H // nh
    mat = L * (H * (nh + 2 * nkv) * hd + nh * hd * H + 3 * H * I)
    attn = 4 * T * nh * hd * L * (0.5 if causal else 1.0)
    return 6 * mat + 3 * attn


def head_flops_per_row(c):
    """The tied head on one gathered row: logits (2HV), and the gradients
    with respect to the row and the embedding (2HV each)."""
    return 6 * c["hidden_size"] * c["vocab_size"]


def step_flops(c, T, n_bidir, n_causal, K):
    return (n_bidir * T * body_flops_per_token(c, T) + n_bidir * K * head_flops_per_row(c)
            + n_causal * T * body_flops_per_token(c, T, causal=True)
            + n_causal * (T - 1) * head_flops_per_row(c))


# Dense bf16 tensor-core peaks (NVIDIA data sheets, without sparsity).
PEAKS = [("H200", 989.4e12), ("GH200", 989.4e12), ("H100 NVL", 835e12), ("H100 PCIe", 756e12),
         ("H100", 989.4e12), ("H800", 989.4e12), ("B200", 2250e12), ("A100", 312e12),
         ("L40S", 362e12), ("A10", 125e12)]


def peak_flops(device_name):
    """(peak bf16 FLOP/s, its source) for a device name; $SCULPT_PEAK_TFLOPS
    overrides; None when unknown (a CPU)."""
    if os.environ.get("SCULPT_PEAK_TFLOPS"):
        return float(os.environ["SCULPT_PEAK_TFLOPS"]) * 1e12, "SCULPT_PEAK_TFLOPS"
    for key, v in PEAKS:
        if key.lower() in (device_name or "").lower():
            return v, f"{key} bf16 dense"
    return None, "unknown device"


# ---- compile -----------------------------------------------------------------------------------

def compile_layers(model, log=print):
    """Regional torch.compile: each transformer layer (one graph, reused by
    every layer of the same shape), not the whole model: seconds instead of
    minutes, and the loss and optimizer stay eager. Returns what was done."""
    if not hasattr(torch, "compile") or os.environ.get("SCULPT_COMPILE") == "0":
        return "eager (no torch.compile)" if not hasattr(torch, "compile") else "eager (SCULPT_COMPILE=0)"
    for layer in model.model.layers:
        if hasattr(layer, "compile"):
            layer.compile(dynamic=False)
        else:
            layer.forward = torch.compile(layer.forward, dynamic=False)
    return "regional torch.compile (each layer)"


def uncompile_layers(model):
    for layer in model.model.layers:
        if getattr(layer, "_compiled_call_impl", None) is not None:
            layer._compiled_call_impl = None
        if "forward" in layer.__dict__:
            del layer.forward


# ---- preflight: each new path against its reference, on this machine --------------------------

def _rel(a, b):
    return float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp(min=1e-12))


def preflight(model, batches, device, amp, log=print):
    """Checks run before the timed budget (seconds): the static-shape loss
    against diffusion_loss on a real batch; SDPA's attention against the
    hand-written one; the compiled layer against the eager one; our Muon
    against torch.optim.Muon where it exists. Returns {name: figure}."""
    out = {}
    b = batches.batch()
    if b["inp"] is not None:
        with torch.no_grad(), amp():
            masked, maskable, t_tok = b["masked"], b["maskable"], b["t_tok"]
            B, T = masked.shape
            ref, _ = M.diffusion_loss(model, b["inp"], b["tgt"], masked, t_tok, maskable)
            idx, w = M.static_rows(masked, t_tok, maskable, T, B)
            new, _, _ = M.rows_loss(model, model.hidden(b["inp"]), b["tgt"], idx, w)
        out["static_loss_vs_reference_rel"] = _rel(new, ref)
    x = torch.randn(2, 64, model.config["hidden_size"], device=device)
    layer = model.model.layers[0]
    cos, sin = model.rope(64, device)
    saved = M.ATTENTION
    try:
        with torch.no_grad(), amp():
            ys = {}
            for kind in ("math", saved):
                M.ATTENTION = kind
                ys[kind] = layer.self_attn(x, cos, sin)
        out[f"attention_{saved}_vs_math_rel"] = _rel(ys[saved], ys["math"])
    finally:
        M.ATTENTION = saved
    if hasattr(torch.optim, "Muon"):
        p1 = torch.nn.Parameter(torch.randn(96, 64, device=device))
        p2 = torch.nn.Parameter(p1.detach().clone())
        p0 = p1.detach().clone()
        g = torch.randn(96, 64, device=device)
        kw = dict(lr=0.02, weight_decay=0.1, momentum=0.95, nesterov=True,
                  adjust_lr_fn="match_rms_adamw")
        try:
            o1, o2 = torch.optim.Muon([p1], **kw), MuonFallback([p2], **kw)
            for _ in range(2):
                p1.grad, p2.grad = g.clone(), g.clone()
                o1.step(), o2.step()
            # The two updates compared (not the parameters, which hide them).
            out["muon_fallback_vs_torch_update_rel"] = _rel(p2.detach() - p0, p1.detach() - p0)
        except Exception as e:  # noqa: BLE001 - a report, not a failure
            out["muon_fallback_vs_torch"] = f"error: {e}"
    for k, v in out.items():
        log(f"preflight {k}: {v:.2e}" if isinstance(v, float) else f"preflight {k}: {v}")
    return out


def timer():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.time()

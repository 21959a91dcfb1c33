"""A bidirectional Qwen2-family transformer in PyTorch, laid out under the
Hugging Face tensor names so its state_dict is the checkpoint.

Architecture (HF transformers modeling_qwen2.py, read for the conventions;
Dream/Open-dCoder drop the causal mask): RMSNorm computed in float32, RoPE
with rotate_half and inv_freq = theta^(-2i/hd), GQA where query head h reads
KV head h // (heads / kv_heads), q/k/v projections with bias and o_proj
without, SwiGLU MLP without bias, tied embeddings (Open-dCoder style).
No attention mask at all: every position sees every position.

Logits are "shifted" as in Dream / Open-dCoder: the output row i-1 predicts
token i (row 0 predicts token 0 itself; position 0 is BOS and never masked).
"""
import inspect
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from presets import default_config  # noqa: F401 (model.default_config for callers)


def _attention_kind():
    """How attention runs on this torch: "gqa" (SDPA reads the KV heads in
    place: enable_gqa, torch >= 2.5), "sdpa" (SDPA after repeat_interleave,
    torch 2.0-2.4), "math" (softmax(QK^T)V by hand: torch 1.x, Debian's
    1.13 on the build machines). model.ATTENTION overrides it (tests)."""
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is None:
        return "math"
    try:
        if "enable_gqa" in inspect.signature(sdpa).parameters:
            return "gqa"
    except (TypeError, ValueError):  # a builtin without a Python signature
        pass
    try:
        q = torch.zeros(1, 2, 1, 4)
        sdpa(q, q[:, :1], q[:, :1], enable_gqa=True)
        return "gqa"
    except (TypeError, RuntimeError):
        return "sdpa"


ATTENTION = _attention_kind()


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        # Computed in float32, returned in the input's dtype: a bf16 residual
        # stream stays bf16 (HF casts the weight to the model's dtype too).
        dt = x.dtype
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight.to(dt) * y.to(dt)


def rope_tables(n, hd, theta, device):
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64, device=device) / hd)
    ang = torch.arange(n, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().float(), emb.sin().float()


def apply_rope(x, cos, sin):
    """rotate_half RoPE, the reference (HF's form): x [..., T, hd]."""
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


def rope_signed_tables(n, hd, theta, device, dtype):
    """(cos, sin with its first half negated) [n, 1, hd]: rotate_half(x) * sin
    == roll(x, hd/2) * signed sin, exactly (the two halves of sin are equal
    and a sign flip is exact), so RoPE is one multiply-add of x and its roll,
    one fused kernel under torch.compile."""
    cos, sin = rope_tables(n, hd, theta, device)
    half = hd // 2
    sin = torch.cat([-sin[:, :half], sin[:, half:]], dim=-1)
    return cos.to(dtype)[:, None, :], sin.to(dtype)[:, None, :]


def rope_fused(x, cos, sin):
    """RoPE on x [B, T, heads, hd] (q and k heads side by side) in one pass."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * sin


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.nh, self.nkv, self.hd = nh, nkv, H // nh
        self.q_proj = nn.Linear(H, nh * self.hd, bias=True)
        self.k_proj = nn.Linear(H, nkv * self.hd, bias=True)
        self.v_proj = nn.Linear(H, nkv * self.hd, bias=True)
        self.o_proj = nn.Linear(nh * self.hd, H, bias=False)

    def forward(self, x, cos, sin, causal=False):
        B, T, _ = x.shape
        nh, nkv, hd = self.nh, self.nkv, self.hd
        # One projection for q, k and v (the weights concatenated: the HF
        # tensors stay as they are), RoPE once over the q and k heads.
        w = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
        b = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        qkv = F.linear(x, w, b).view(B, T, nh + 2 * nkv, hd)
        qk = rope_fused(qkv[:, :, :nh + nkv], cos.to(qkv.dtype), sin.to(qkv.dtype))
        q = qk[:, :, :nh].transpose(1, 2)
        k = qk[:, :, nh:].transpose(1, 2)
        v = qkv[:, :, nh + nkv:].transpose(1, 2)
        kind = ATTENTION
        if kind == "gqa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=nh != nkv)
        else:
            rep = nh // nkv
            if rep > 1:
                k = k.repeat_interleave(rep, dim=1)
                v = v.repeat_interleave(rep, dim=1)
            if kind == "sdpa":
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            else:
                a = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
                if causal:
                    a = a.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device)
                                      .triu(1), float("-inf"))
                o = torch.softmax(a.float(), dim=-1).to(v.dtype) @ v
        return self.o_proj(o.transpose(1, 2).reshape(B, T, nh * hd))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, I = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, causal=False):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, causal)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class DiffusionLM(nn.Module):
    """state_dict keys are the checkpoint's tensor names (model.*; tied head).

    act_dtype: the dtype of the residual stream (train.py sets bfloat16 on a
    GPU, under bf16 autocast; float32 otherwise)."""

    def __init__(self, c, seed=0):
        super().__init__()
        self.config = dict(c)
        self.model = Backbone(c)
        self.act_dtype = torch.float32
        self._rope = {}
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            else:
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        # Residual projections scaled down by depth (GPT-2 style) for stability.
        L = c["num_hidden_layers"]
        with torch.no_grad():
            for layer in self.model.layers:
                layer.self_attn.o_proj.weight.mul_(1 / math.sqrt(2 * L))
                layer.mlp.down_proj.weight.mul_(1 / math.sqrt(2 * L))

    def n_params(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids, causal=False):
        """ids [B, T] -> logits [B, T, V] (unshifted rows, as the checkpoint's)."""
        return self.head(self.hidden(ids, causal))

    def head(self, h):
        return h @ self.model.embed_tokens.weight.t().to(h.dtype)

    def rope(self, T, device):
        """The signed RoPE tables for T positions, made once per length and
        device (not a buffer: the state_dict is the checkpoint's)."""
        key = (T, str(device), self.act_dtype)
        if key not in self._rope:
            hd = self.config["hidden_size"] // self.config["num_attention_heads"]
            self._rope[key] = rope_signed_tables(T, hd, self.config["rope_theta"], device,
                                                 torch.float32)
        return self._rope[key]

    def hidden(self, ids, causal=False):
        """ids [B, T] -> final-norm hidden states [B, T, H], in act_dtype.
        causal: each position sees only itself and those before it (the
        next-token share of training; sculpt always runs bidirectionally)."""
        cos, sin = self.rope(ids.shape[1], ids.device)
        x = self.model.embed_tokens(ids).to(self.act_dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin, causal)
        return self.model.norm(x)


def shifted(logits):
    """Row i of the result is the distribution for token i (Dream's shift)."""
    return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)


def diffusion_loss(model, inp, targets, masked, t, maskable):
    """Masked-diffusion ELBO estimate (LLaDA / MDLM objective): per sequence,
    cross-entropy summed over its masked tokens, weighted by 1/t, divided by
    the number of positions that could have been masked; then the batch mean.
    Shifted: hidden row i-1 predicts token i, so position 0 (BOS) is never a
    target. The head runs only on the rows that predict a masked token.
    inp, targets [B,T]; masked, maskable bool [B,T]; t [B] (or [B,T]: each
    token's own rate, as multi-hole sequences have).
    Returns (loss, mean cross-entropy per masked token).

    The reference form (boolean indexing: its shapes follow the data, and
    the host waits for the count); training uses static_rows() +
    rows_loss(), which equal it (tests/train/test_recipe.py)."""
    h = model.hidden(inp)
    sel = masked[:, 1:]
    rows = h[:, :-1][sel]
    lg = model.head(rows).float()
    ce = F.cross_entropy(lg, targets[:, 1:][sel], reduction="none")
    B, T = targets.shape
    tt = t[:, None].expand(B, T) if t.dim() == 1 else t
    w = 1.0 / (tt[:, 1:] * maskable.float().sum(1, keepdim=True).clamp(min=1) * B)
    w = w[sel]
    return (ce * w).sum(), ce.mean()


# ---- the static-shape loss ------------------------------------------------------------

def static_rows(masked, t_tok, maskable, K, n_batch, gen=None):
    """A fixed K target positions per sequence, for a loss whose shapes never
    depend on the data (no boolean indexing, no host sync).

    masked, maskable bool [B, T]; t_tok [B, T] each token's masking rate;
    n_batch: the whole step's sequence count (the loss is a batch mean).
    Returns (idx [B, K] long: target positions, masked ones first in random
    order, padded with position 1; w [B, K] float: each row's weight in the
    loss, 0 for padding). Weight of a masked token: 1 / (t * maskable count
    * n_batch), as diffusion_loss. A sequence with more than K masked tokens
    gives a uniform sample of K of them, each weighted up by count / K, so
    the loss is still an unbiased estimate of diffusion_loss's; with K at
    least every sequence's count it is diffusion_loss's exactly."""
    B, T = masked.shape
    m = masked.clone()
    m[:, 0] = False  # BOS: never a target (row -1 does not exist)
    u = torch.rand(B, T, device=masked.device, generator=gen)
    key = torch.where(m, u, u + 2.0)
    idx = key.topk(K, dim=1, largest=False).indices
    valid = m.gather(1, idx)
    idx = torch.where(valid, idx, torch.ones_like(idx))
    n = m.sum(1, keepdim=True).float()
    scale = (n / K).clamp(min=1.0)
    cnt = maskable.float().sum(1, keepdim=True).clamp(min=1)
    w = valid.float() * scale / (t_tok.gather(1, idx) * cnt * n_batch)
    return idx, w


def causal_rows(B, T, n_batch, device):
    """Every next-token target of a causal sequence: positions 1..T-1, each
    weighted 1 / ((T-1) * n_batch) (a sequence's mean cross-entropy)."""
    idx = torch.arange(1, T, device=device).expand(B, T - 1)
    w = torch.full((B, T - 1), 1.0 / ((T - 1) * n_batch), device=device)
    return idx, w


class _ChunkedCE(torch.autograd.Function):
    """sum_i w_i * CE(h_i @ W^T, y_i) over row chunks: the logits exist one
    chunk at a time, in float32, and never for the backward pass: each
    chunk's gradients with respect to h and W are made in the forward pass
    and scaled by the incoming gradient in the backward (the fused
    linear-cross-entropy of Liger-Kernel, arXiv 2410.10989, written here
    with plain torch ops)."""

    @staticmethod
    def forward(ctx, h, W, y, w, chunk):
        N = h.shape[0]
        Wc = W.to(h.dtype)
        gh = torch.empty_like(h)
        gW = torch.zeros(W.shape, dtype=torch.float32, device=W.device)
        loss = torch.zeros((), dtype=torch.float32, device=h.device)
        ce_sum = torch.zeros((), dtype=torch.float32, device=h.device)
        for s in range(0, N, chunk):
            e = min(N, s + chunk)
            hc, yc, wc = h[s:e], y[s:e], w[s:e].float()
            lg = (hc @ Wc.t()).float()
            lse = torch.logsumexp(lg, dim=-1)
            ce = lse - lg.gather(1, yc[:, None]).squeeze(1)
            loss += (ce * wc).sum()
            ce_sum += (ce * (wc > 0)).sum()
            p = torch.exp(lg - lse[:, None])
            p.scatter_add_(1, yc[:, None], torch.full_like(lse[:, None], -1.0))
            g = (p * wc[:, None]).to(h.dtype)
            gh[s:e] = g @ Wc
            gW += (g.t() @ hc).float()
        ctx.save_for_backward(gh, gW)
        ctx.w_dtype = W.dtype
        return loss, ce_sum

    @staticmethod
    def backward(ctx, g_loss, g_ce):
        gh, gW = ctx.saved_tensors
        return (gh * g_loss.to(gh.dtype), (gW * g_loss).to(ctx.w_dtype), None, None, None)


def rows_loss(model, h, targets, idx, w, chunk=8192):
    """The loss on gathered rows: hidden row p-1 predicts token p for each
    p in idx [B, K] (static_rows / causal_rows), weighted by w [B, K].
    h [B, T, H] (model.hidden). Returns (loss, sum of cross-entropy over the
    rows with weight > 0, their count): all device tensors, no host sync."""
    H = h.shape[-1]
    rows = h.gather(1, (idx - 1)[:, :, None].expand(-1, -1, H)).reshape(-1, H)
    y = targets.gather(1, idx).reshape(-1)
    wf = w.reshape(-1)
    loss, ce_sum = _ChunkedCE.apply(rows, model.model.embed_tokens.weight, y, wf, chunk)
    return loss, ce_sum, (wf > 0).sum()

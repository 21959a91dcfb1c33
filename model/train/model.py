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
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from presets import default_config  # noqa: F401 (model.default_config for callers)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


def rope_tables(n, hd, theta, device):
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64, device=device) / hd)
    ang = torch.arange(n, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().float(), emb.sin().float()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.nh, self.nkv, self.hd = nh, nkv, H // nh
        self.q_proj = nn.Linear(H, nh * self.hd, bias=True)
        self.k_proj = nn.Linear(H, nkv * self.hd, bias=True)
        self.v_proj = nn.Linear(H, nkv * self.hd, bias=True)
        self.o_proj = nn.Linear(nh * self.hd, H, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = apply_rope(q, cos.to(q.dtype), sin.to(q.dtype))
        k = apply_rope(k, cos.to(k.dtype), sin.to(k.dtype))
        rep = self.nh // self.nkv
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        else:  # torch 1.x
            a = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(self.hd), dim=-1)
            o = a @ v
        return self.o_proj(o.transpose(1, 2).reshape(B, T, self.nh * self.hd))


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

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class DiffusionLM(nn.Module):
    """state_dict keys are the checkpoint's tensor names (model.*; tied head)."""

    def __init__(self, c, seed=0):
        super().__init__()
        self.config = dict(c)
        self.model = Backbone(c)
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

    def forward(self, ids):
        """ids [B, T] -> logits [B, T, V] (unshifted rows, as the checkpoint's)."""
        return self.head(self.hidden(ids))

    def head(self, h):
        return h @ self.model.embed_tokens.weight.t().to(h.dtype)

    def hidden(self, ids):
        """ids [B, T] -> final-norm hidden states [B, T, H]."""
        T = ids.shape[1]
        hd = self.config["hidden_size"] // self.config["num_attention_heads"]
        cos, sin = rope_tables(T, hd, self.config["rope_theta"], ids.device)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
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
    inp, targets [B,T]; masked, maskable bool [B,T]; t [B].
    Returns (loss, mean cross-entropy per masked token)."""
    h = model.hidden(inp)
    sel = masked[:, 1:]
    rows = h[:, :-1][sel]
    lg = model.head(rows).float()
    ce = F.cross_entropy(lg, targets[:, 1:][sel], reduction="none")
    B = targets.shape[0]
    w = 1.0 / (t[:, None] * maskable.float().sum(1, keepdim=True).clamp(min=1) * B)
    w = w.expand(-1, sel.shape[1])[sel]
    return (ce * w).sum(), ce.mean()

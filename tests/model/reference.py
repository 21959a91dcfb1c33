"""A numpy reference of the diffusion LMs' forward pass, written from the
published architectures and independent of sculpt's C code.

Sources: HF transformers modeling_qwen2.py / modeling_qwen3.py (Qwen2RMSNorm,
rotate_half / apply_rotary_pos_emb, Qwen2MLP, q_norm/k_norm before RoPE in
Qwen3Attention), Dream's modeling_dream.py (is_causal=False), LLaDA's
modeling_llada.py (LLaDALlamaBlock: ff_proj -> act, times up_proj, ff_out;
weight names under model.transformer). Everything is computed in float64.

Public: load(dir) -> (config, tensors); forward(config, tensors, ids,
family=None, causal=False) -> logits [n][vocab] (float64, before any shift).
"""
import json
import os
import struct

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    base = 8 + hlen
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        buf = raw[base + b:base + end]
        shape = e["shape"]
        if e["dtype"] == "F32":
            a = np.frombuffer(buf, dtype="<f4")
        elif e["dtype"] == "F16":
            a = np.frombuffer(buf, dtype="<f2")
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: {name}: dtype {e['dtype']}")
        out[name] = a.astype(np.float64).reshape(shape)
    return out


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        for fn in files:
            tensors.update(read_safetensors(os.path.join(model_dir, fn)))
    else:
        tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return cfg, tensors


def family_of(cfg):
    arch = " ".join(cfg.get("architectures") or []).lower()
    mt = str(cfg.get("model_type", "")).lower()
    if "dream" in arch or mt == "dream":
        return "dream"
    if "llada" in arch or mt == "llada":
        return "llada"
    if "qwen3" in arch or "coda" in arch or mt == "qwen3":
        return "qwen3"
    if "qwen2" in arch or mt == "qwen2":
        return "qwen2"
    raise ValueError("unknown family")


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, theta):
    """x: [heads, n, hd]; HF rotate_half convention, positions 0..n-1."""
    hd = x.shape[-1]
    inv = theta ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    half = hd // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rot * sin


def silu(x):
    return x / (1.0 + np.exp(-x))


def forward(cfg, t, ids, family=None, causal=False):
    fam = family or family_of(cfg)
    ids = np.asarray(ids)
    if fam == "llada":
        H, L, nh = cfg["d_model"], cfg["n_layers"], cfg["n_heads"]
        nkv = cfg.get("n_kv_heads") or nh
        hd = H // nh
        eps = cfg.get("rms_norm_eps", 1e-5)
        theta = cfg.get("rope_theta", 10000.0)
        p = "model.transformer"
        emb = t[f"{p}.wte.weight"]
        names = lambda l: dict(
            an=f"{p}.blocks.{l}.attn_norm.weight", q=f"{p}.blocks.{l}.q_proj.weight",
            k=f"{p}.blocks.{l}.k_proj.weight", v=f"{p}.blocks.{l}.v_proj.weight",
            o=f"{p}.blocks.{l}.attn_out.weight", mn=f"{p}.blocks.{l}.ff_norm.weight",
            g=f"{p}.blocks.{l}.ff_proj.weight", u=f"{p}.blocks.{l}.up_proj.weight",
            d=f"{p}.blocks.{l}.ff_out.weight")
        final = t[f"{p}.ln_f.weight"]
        tied = cfg.get("weight_tying", False)
        head = emb if tied else t[f"{p}.ff_out.weight"]
    else:
        H, L, nh = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        hd = cfg.get("head_dim") or H // nh
        eps = cfg.get("rms_norm_eps", 1e-6)
        theta = cfg.get("rope_theta", 10000.0)
        emb = t["model.embed_tokens.weight"]
        names = lambda l: dict(
            an=f"model.layers.{l}.input_layernorm.weight",
            q=f"model.layers.{l}.self_attn.q_proj.weight",
            k=f"model.layers.{l}.self_attn.k_proj.weight",
            v=f"model.layers.{l}.self_attn.v_proj.weight",
            o=f"model.layers.{l}.self_attn.o_proj.weight",
            mn=f"model.layers.{l}.post_attention_layernorm.weight",
            g=f"model.layers.{l}.mlp.gate_proj.weight",
            u=f"model.layers.{l}.mlp.up_proj.weight",
            d=f"model.layers.{l}.mlp.down_proj.weight")
        final = t["model.norm.weight"]
        tie = cfg.get("tie_word_embeddings")
        if tie is True or "lm_head.weight" not in t:
            head = emb  # Qwen3/CoDA with no head saved: tied (CoDA default)
        else:
            head = t["lm_head.weight"]

    n = len(ids)
    x = emb[ids]
    for l in range(L):
        w = names(l)
        h = rms_norm(x, t[w["an"]], eps)
        q = h @ t[w["q"]].T
        k = h @ t[w["k"]].T
        v = h @ t[w["v"]].T
        bq = w["q"].replace(".weight", ".bias")
        if bq in t:
            q = q + t[bq]
            k = k + t[w["k"].replace(".weight", ".bias")]
            v = v + t[w["v"].replace(".weight", ".bias")]
        q = q.reshape(n, nh, hd).transpose(1, 0, 2)
        k = k.reshape(n, nkv, hd).transpose(1, 0, 2)
        v = v.reshape(n, nkv, hd).transpose(1, 0, 2)
        qn = w["q"].replace("q_proj.weight", "q_norm.weight")
        if fam == "qwen3" and qn in t:
            q = rms_norm(q, t[qn], eps)
            k = rms_norm(k, t[w["k"].replace("k_proj.weight", "k_norm.weight")], eps)
        q, k = rope(q, theta), rope(k, theta)
        rep = nh // nkv
        k = np.repeat(k, rep, axis=0)
        v = np.repeat(v, rep, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        if causal:
            s = s + np.triu(np.full((n, n), -np.inf), 1)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s = s / s.sum(axis=-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, nh * hd)
        x = x + a @ t[w["o"]].T
        h = rms_norm(x, t[w["mn"]], eps)
        x = x + (silu(h @ t[w["g"]].T) * (h @ t[w["u"]].T)) @ t[w["d"]].T
    return rms_norm(x, final, eps) @ head.T

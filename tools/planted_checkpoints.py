#!/usr/bin/env python3
"""Planted checkpoints: tiny diffusion models built by hand, not trained, so
that the right middle of an infill is known in advance.

Each is one transformer layer whose attention is wired, through RoPE, to look
at exactly one relative position, and whose lm_head maps what it sees to a
chosen token:

  successor  token i is predicted as (token i-1) + 1, and token 59 as EOS.
             From a prefix ending in token a, the middle is a+1, a+2, ..., 59,
             EOS: only the leftmost masked position is ever confident, so a
             correct sampler fills the canvas strictly left to right and stops
             at the EOS.
  predecessor token i is predicted as (token i+1) - 1, and token 0 as EOS.
             Confidence now flows from the suffix: the canvas fills right to left.

A position whose source is still a mask gets a flat distribution (p = 1/63),
so it is never confident. Both come in a shifted (Dream: row i-1 predicts
token i) and an unshifted (LLaDA) variant; the attention offset differs
between them, so a sampler that gets the shift wrong gets the wrong middle.

    tools/planted_checkpoints.py OUTDIR     # writes OUTDIR/<name>/ for all four

Vocabulary (64): 0..59 ordinary tokens, 60 EOS (= pad), 61 BOS, 62 MASK, 63 unused.
Hidden layout (160): dims 0..63 the token's own one-hot, dim 64 a constant 1
(gives every token the same norm, so RMSNorm is a fixed scale and q/k are
position-only), dims 96..159 the one-hot of the token attention copied.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_checkpoints as tc  # noqa: E402  (safetensors writer, config, names)

V, EOS, BOS, MASK, Z = 64, 60, 61, 62, 59
H = 160
BIAS, COPY = 64, 96
PAIRS = 8       # rotary pairs used by q and k
THETA = 1e4
LM_SCALE = 5.0


def spec_for(family):
    return dict(family=family, dtype="F32", hidden=H, layers=1, heads=1, kv_heads=1,
                head_dim=H, inter=8, vocab=V, theta=THETA, eps=1e-6, tie=False,
                save_head=True, shards=1,
                config_ids=dict(mask_token_id=MASK, eos_token_id=EOS, pad_token_id=EOS,
                                bos_token_id=BOS),
                added={"<|endoftext|>": EOS, "<|beginoftext|>": BOS, "<|mask|>": MASK})


def omegas():
    # HF rotate-half RoPE: pair k is dims (k, k + hd/2), frequency theta^(-2k/hd).
    return [THETA ** (-2.0 * k / H) for k in range(PAIRS)]


def attention_scale():
    """q/k magnitude so that any position other than the planted one scores
    at least 40 nats lower, for offsets up to 2048 (checked, not assumed)."""
    om = omegas()
    worst = max(sum(math.cos(w * dlt) for w in om) / PAIRS
                for dlt in range(1, 2048))
    gap = 1.0 - worst
    # score = A^2 * mean(cos) / sqrt(head_dim); want A^2 * gap / sqrt(H) >= 40.
    return math.sqrt(40.0 * math.sqrt(H) / gap)


def planted_weights(direction, shift):
    # The relative offset d (source = i - d, in rows) that attention looks at.
    d = {("successor", True): 0, ("successor", False): 1,
         ("predecessor", True): -2, ("predecessor", False): -1}[(direction, shift)]
    xn = math.sqrt(H / 2.0)  # RMSNorm of an embedding (two unit entries)
    A = attention_scale()
    w = {}
    emb = np.zeros((V, H), np.float32)
    emb[np.arange(V), np.arange(V)] = 1.0
    emb[:, BIAS] = 1.0
    w["embed"] = emb
    q = np.zeros((H, H), np.float32)
    k = np.zeros((H, H), np.float32)
    a = A / math.sqrt(PAIRS)
    for p, om in enumerate(omegas()):
        q[p, BIAS] = a / xn
        k[p, BIAS] = a * math.cos(om * d) / xn
        k[p + H // 2, BIAS] = a * math.sin(om * d) / xn
    w["q"], w["k"] = q, k
    v = np.zeros((H, H), np.float32)
    v[np.arange(V), np.arange(V)] = 1.0 / xn
    w["v"] = v
    o = np.zeros((H, H), np.float32)
    o[COPY + np.arange(V), np.arange(V)] = 1.0
    w["o"] = o
    head = np.zeros((V, H), np.float32)
    if direction == "successor":
        for t in range(0, Z):
            head[t + 1, COPY + t] = LM_SCALE
        head[EOS, COPY + Z] = LM_SCALE
    else:
        for t in range(1, Z + 1):
            head[t - 1, COPY + t] = LM_SCALE
        head[EOS, COPY + 0] = LM_SCALE
    w["head"] = head
    return w


def role(name):
    """Our role for a tensor name, in either naming scheme."""
    for suffix, r in ((".q_proj.weight", "q"), (".k_proj.weight", "k"),
                      (".v_proj.weight", "v"), (".o_proj.weight", "o"),
                      (".attn_out.weight", "o"), ("embed_tokens.weight", "embed"),
                      ("wte.weight", "embed"), ("lm_head.weight", "head"),
                      ("transformer.ff_out.weight", "head")):
        if name.endswith(suffix):
            return r
    if name.endswith("norm.weight") or name.endswith("layernorm.weight") or \
            name.endswith("ln_f.weight"):
        return "one"
    return "zero"  # MLP weights and QKV biases: switched off


def generate(outdir, family, direction):
    spec = spec_for(family)
    shift = family != "llada"
    w = planted_weights(direction, shift)
    tensors = []
    for name, arr in tc.tensor_list(spec, np.random.default_rng(0)):
        r = role(name)
        if r == "one":
            val = np.ones(arr.shape, np.float32)
        elif r == "zero":
            val = np.zeros(arr.shape, np.float32)
        else:
            val = w[r]
        assert val.shape == arr.shape, (name, val.shape, arr.shape)
        tensors.append((name, val))
    name = f"planted-{direction}-{'shifted' if shift else 'unshifted'}"
    out = os.path.join(outdir, name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(tc.config_json(spec), f, indent=2)
    tc.write_tokenizer(spec, out)
    tc.write_safetensors(os.path.join(out, "model.safetensors"), tensors, "F32")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: planted_checkpoints.py OUTDIR")
    for family in ("dream", "llada"):
        for direction in ("successor", "predecessor"):
            print(generate(sys.argv[1], family, direction))


if __name__ == "__main__":
    main()

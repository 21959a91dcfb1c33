#!/usr/bin/env python3
"""Model presets of train.py and their tensors, without torch: the GPU
session's rehearsal (tools/gpu_rehearse.sh, in a chroot with no torch) and
the size checks read them.

The tensor list is model.py's state_dict (Qwen2 names, tied embeddings):
tests/train/test_pipeline.py checks the two agree.
"""

PRESETS = {
    # hidden, layers, heads, kv_heads, inter, seq, batch, lr. "gpu" is the
    # default model: context 1024 (the LSP's default prompt budget), 14.9M
    # parameters, 128 x 1024 tokens a step. Its size (issue 41; the card and
    # model/train/README.md say more): 420 s at the 30% MFU aimed at buy
    # ~1.2e17 FLOPs, whose compute-optimal size is ~30M parameters (60 MB in
    # bf16); the 32 MB the project ships binds first: 9 layers (bf16 29.9
    # MB) instead of the first visit's 8. The CPU latency does not decide
    # between them: with random weights at 8 steps a request, `sculpt bench
    # --replay` (click, 60 characters, context 880) gave p50 168 / 215 ms for
    # 9 layers against 189 / 218 ms for 8, in turn (a loaded 2-core VM).
    "toy": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=128, seq=128, batch=8, lr=3e-3),
    "cpu": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=384, seq=256, batch=8, lr=3e-3),
    "gpu": dict(hidden_size=320, num_hidden_layers=9, num_attention_heads=5,
                num_key_value_heads=1, intermediate_size=864, seq=1024, batch=128, lr=1.5e-3),
}

# The largest weights file the project ships (model/default, bf16).
MAX_SHIPPED_BYTES = 32 * 1000 * 1000


def default_config(**kw):
    c = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=128, rope_theta=10000.0,
             rms_norm_eps=1e-6, max_position_embeddings=256)
    c.update(kw)
    return c


def preset_config(name, vocab_size):
    """The model config train.py builds for a preset (context = its seq)."""
    p = dict(PRESETS[name])
    seq = p.pop("seq")
    p.pop("batch"), p.pop("lr")
    return default_config(vocab_size=vocab_size, max_position_embeddings=seq, **p)


def tensor_shapes(c):
    """[(name, shape)] in model.py's state_dict order."""
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = H // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    out = [("model.embed_tokens.weight", (V, H))]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}."
        out += [(b + "input_layernorm.weight", (H,)),
                (b + "self_attn.q_proj.weight", (q, H)), (b + "self_attn.q_proj.bias", (q,)),
                (b + "self_attn.k_proj.weight", (kv, H)), (b + "self_attn.k_proj.bias", (kv,)),
                (b + "self_attn.v_proj.weight", (kv, H)), (b + "self_attn.v_proj.bias", (kv,)),
                (b + "self_attn.o_proj.weight", (H, q)),
                (b + "post_attention_layernorm.weight", (H,)),
                (b + "mlp.gate_proj.weight", (I, H)), (b + "mlp.up_proj.weight", (I, H)),
                (b + "mlp.down_proj.weight", (H, I))]
    out.append(("model.norm.weight", (H,)))
    return out


def n_params(c):
    n = 0
    for _, shape in tensor_shapes(c):
        k = 1
        for d in shape:
            k *= d
        n += k
    return n

"""A small GGUF writer for the tests: turns a checkpoint folder (its
safetensors weights, config.json and tokenizer.json) into a llama.cpp-style
GGUF file of the dream or llada architecture, with the matrices in Q8_0,
Q4_0, F32 or BF16, the vectors in F32, the tokenizer in tokenizer.ggml.*,
and (for llada) the q/k rows permuted as llama.cpp's converter does.

Written from the format's description (ggml docs/gguf.md; gguf-py
constants.py and convert_hf_to_gguf.py for the key names and the LLaDA
permutation), not from ggml's code. Returns, beside the file, the weights as
the reader must see them (blocks dequantized, rows back in order), so that a
test can run the numpy reference on exactly those values.
"""
import json
import os
import struct

import numpy as np

GT_U32, GT_I32, GT_F32, GT_BOOL, GT_STR, GT_ARR = 4, 5, 6, 7, 8, 9
TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 8, "BF16": 30}


def q8_0(a):
    """rows of a (cols % 32 == 0) -> (bytes, dequantized)."""
    b = a.reshape(-1, 32).astype(np.float32)
    d = (np.abs(b).max(1) / 127.0).astype(np.float16)
    df = d.astype(np.float32)
    q = np.where(df[:, None] > 0, np.round(b / np.where(df > 0, df, 1)[:, None]), 0)
    q = np.clip(q, -127, 127).astype(np.int8)
    raw = np.empty((b.shape[0], 34), np.uint8)
    raw[:, :2] = d.view(np.uint8).reshape(-1, 2)
    raw[:, 2:] = q.view(np.uint8)
    return raw.tobytes(), (q.astype(np.float64) * df[:, None]).reshape(a.shape)


def q4_0(a):
    b = a.reshape(-1, 32).astype(np.float32)
    # The value of largest magnitude maps to -8 (as ggml's reference does).
    idx = np.abs(b).argmax(1)
    mx = b[np.arange(b.shape[0]), idx]
    d = (mx / -8.0).astype(np.float16)
    df = d.astype(np.float32)
    inv = np.where(df != 0, 1.0 / np.where(df != 0, df, 1), 0)
    q = np.clip(np.floor(b * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    raw = np.empty((b.shape[0], 18), np.uint8)
    raw[:, :2] = d.view(np.uint8).reshape(-1, 2)
    raw[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return raw.tobytes(), ((q.astype(np.float64) - 8) * df[:, None]).reshape(a.shape)


def bf16(a):
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
    return u.tobytes(), (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def encode(a, kind):
    if kind == "Q8_0":
        return q8_0(a)
    if kind == "Q4_0":
        return q4_0(a)
    if kind == "BF16":
        return bf16(a)
    f = np.ascontiguousarray(a, dtype="<f4")
    return f.tobytes(), f.astype(np.float64)


def permute(w, heads):
    """convert_hf_to_gguf LLaDAModel.permute: per head, rows (2, hd/2) -> (hd/2, 2)."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def s(b):
    return struct.pack("<Q", len(b)) + b


def kv(key, t, v):
    out = s(key.encode()) + struct.pack("<I", t)
    if t == GT_U32:
        return out + struct.pack("<I", v)
    if t == GT_F32:
        return out + struct.pack("<f", v)
    if t == GT_BOOL:
        return out + struct.pack("<B", 1 if v else 0)
    if t == GT_STR:
        return out + s(v.encode())
    raise ValueError(t)


def arr(key, et, vals):
    out = s(key.encode()) + struct.pack("<IIQ", GT_ARR, et, len(vals))
    if et == GT_STR:
        return out + b"".join(s(x.encode() if isinstance(x, str) else x) for x in vals)
    return out + struct.pack("<%di" % len(vals), *vals)


def hf_to_gguf(name, family):
    llada = family == "llada"
    top = {("model.transformer.wte.weight" if llada else "model.embed_tokens.weight"): "token_embd.weight",
           ("model.transformer.ln_f.weight" if llada else "model.norm.weight"): "output_norm.weight",
           ("model.transformer.ff_out.weight" if llada else "lm_head.weight"): "output.weight"}
    if name in top:
        return top[name]
    parts = name.split(".")
    if llada:
        blk, rest = parts[3], ".".join(parts[4:])
        m = {"attn_norm.weight": "attn_norm.weight", "ff_norm.weight": "ffn_norm.weight",
             "q_proj.weight": "attn_q.weight", "k_proj.weight": "attn_k.weight",
             "v_proj.weight": "attn_v.weight", "attn_out.weight": "attn_output.weight",
             "ff_proj.weight": "ffn_gate.weight", "up_proj.weight": "ffn_up.weight",
             "ff_out.weight": "ffn_down.weight"}
    else:
        blk, rest = parts[2], ".".join(parts[3:])
        m = {"input_layernorm.weight": "attn_norm.weight",
             "post_attention_layernorm.weight": "ffn_norm.weight",
             "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
             "self_attn.v_proj.weight": "attn_v.weight", "self_attn.q_proj.bias": "attn_q.bias",
             "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
             "self_attn.o_proj.weight": "attn_output.weight",
             "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
             "mlp.down_proj.weight": "ffn_down.weight"}
    return f"blk.{blk}.{m[rest]}"


def write(model_dir, out_path, matrix_type, tensors, cfg, family, pre="gpt2", alignment=32):
    """tensors: {hf name: float64 array} (reference.load). Returns {hf name:
    the values the reader sees}."""
    llada = family == "llada"
    arch = family
    H = cfg.get("hidden_size", cfg.get("d_model"))
    L = cfg.get("num_hidden_layers", cfg.get("n_layers"))
    nh = cfg.get("num_attention_heads", cfg.get("n_heads"))
    nkv = cfg.get("num_key_value_heads", cfg.get("n_kv_heads")) or nh
    ff = cfg.get("intermediate_size", cfg.get("mlp_hidden_size"))
    V = tensors["model.transformer.wte.weight" if llada else "model.embed_tokens.weight"].shape[0]
    seen, infos, blobs, off = {}, [], [], 0
    for name, a in sorted(tensors.items()):
        gname = hf_to_gguf(name, family)
        w = a
        if llada and gname.endswith(("attn_q.weight", "attn_k.weight")):
            w = permute(a, nh if "attn_q" in gname else nkv)
        # As llama.cpp's converter: rows that are not whole blocks stay F32.
        kind = matrix_type if a.ndim == 2 and (a.shape[1] % 32 == 0 or
                                               matrix_type not in ("Q8_0", "Q4_0")) else "F32"
        raw, deq = encode(w, kind)
        if llada and gname.endswith(("attn_q.weight", "attn_k.weight")):
            # What the reader must recover: the permutation undone.
            heads = nh if "attn_q" in gname else nkv
            hd = a.shape[0] // heads
            deq = deq.reshape(heads, hd // 2, 2, -1).swapaxes(1, 2).reshape(a.shape)
        seen[name] = deq
        dims = list(reversed(a.shape))
        infos.append(s(gname.encode()) + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) + struct.pack("<IQ", TYPES[kind], off))
        pad = (-len(raw)) % alignment
        blobs.append(raw + b"\0" * pad)
        off += len(raw) + pad
    with open(os.path.join(model_dir, "tokenizer.json")) as f:
        tj = json.load(f)
    vocab = {v: k for k, v in tj["model"]["vocab"].items()}
    added = {t["id"]: t for t in tj.get("added_tokens", [])}
    toks, types = [], []
    for i in range(V):
        if i in added:
            toks.append(added[i]["content"])
            types.append(3 if added[i].get("special") else 4)
        elif i in vocab:
            toks.append(vocab[i])
            types.append(1)
        else:
            toks.append(f"[PAD{i}]")
            types.append(5)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"].get("merges", [])]
    meta = [kv("general.architecture", GT_STR, arch), kv("general.alignment", GT_U32, alignment),
            kv(f"{arch}.block_count", GT_U32, L), kv(f"{arch}.embedding_length", GT_U32, H),
            kv(f"{arch}.feed_forward_length", GT_U32, ff),
            kv(f"{arch}.attention.head_count", GT_U32, nh),
            kv(f"{arch}.attention.head_count_kv", GT_U32, nkv),
            kv(f"{arch}.attention.layer_norm_rms_epsilon", GT_F32, cfg["rms_norm_eps"]),
            kv(f"{arch}.rope.freq_base", GT_F32, cfg["rope_theta"]),
            kv(f"{arch}.context_length", GT_U32,
               cfg.get("max_position_embeddings", cfg.get("max_sequence_length", 4096))),
            kv("tokenizer.ggml.model", GT_STR, "gpt2"), kv("tokenizer.ggml.pre", GT_STR, pre),
            arr("tokenizer.ggml.tokens", GT_STR, toks), arr("tokenizer.ggml.token_type", GT_I32, types),
            arr("tokenizer.ggml.merges", GT_STR, merges)]
    # The special ids as gguf-py's SpecialVocab takes them: the tokenizer
    # files' "<x>_token" first (resolved through the added tokens), then
    # config.json's "<x>_token_id"; add_bos_token from tokenizer_config.json,
    # or a TemplateProcessing post-processor that starts with a special token.
    tc = {}
    tc_path = os.path.join(model_dir, "tokenizer_config.json")
    if os.path.exists(tc_path):
        with open(tc_path) as f:
            tc = json.load(f)
    by_text = {t["content"]: i for i, t in added.items()}
    for key, what in (("eos_token_id", "eos"), ("padding_token_id", "pad"),
                      ("bos_token_id", "bos"), ("mask_token_id", "mask")):
        text = tc.get(f"{what}_token")
        text = text.get("content") if isinstance(text, dict) else text
        tid = by_text.get(text) if text is not None else None
        if tid is None:
            tid = cfg.get(f"{what}_token_id")
        if tid is not None:
            meta.append(kv(f"tokenizer.ggml.{key}", GT_U32, tid))
    pp = tj.get("post_processor") or {}
    single = pp.get("single") or [{}] if pp.get("type") == "TemplateProcessing" else [{}]
    add_bos = tc.get("add_bos_token")
    if add_bos is None and "SpecialToken" in single[0]:
        add_bos = True
    if add_bos is not None:
        meta.append(kv("tokenizer.ggml.add_bos_token", GT_BOOL, bool(add_bos)))
    if llada:
        meta.append(kv("diffusion.shift_logits", GT_BOOL, False))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(meta)) + b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % alignment)
    with open(out_path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)
    return seen

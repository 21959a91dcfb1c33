#!/usr/bin/env python3
"""Generate tiny, seeded checkpoints for every model family sculpt runs.

Each checkpoint is a folder shaped like the real thing: config.json with the
family's own keys, tokenizer.json / tokenizer_config.json /
special_tokens_map.json carrying the special tokens, and safetensors weights
under the real tensor names (one file, or shards plus
model.safetensors.index.json). Weights are random but seeded, so a run is
reproducible. Only the standard library and numpy are used.

    tools/tiny_checkpoints.py OUTDIR            # every tiny checkpoint
    tools/tiny_checkpoints.py OUTDIR --only dream-bf16
    tools/tiny_checkpoints.py OUTDIR --bench    # also the ~20M-parameter one

safetensors layout (huggingface/safetensors README): u64 little-endian header
length, JSON header {name: {dtype, shape, data_offsets}}, then the data.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

# Geometry and quirks per checkpoint. "expect" is what `sculpt model info`
# should report for the special ids (where they come from is noted).
SPECS = {
    # Dream lineage: QKV bias, GQA 4/2, untied lm_head, ids from config.json.
    "dream-bf16": dict(
        family="dream", dtype="BF16", hidden=64, layers=2, heads=4, kv_heads=2,
        inter=128, vocab=384, theta=1e6, eps=1e-6, tie=False, shards=1,
        config_ids=dict(mask_token_id=380, eos_token_id=376, pad_token_id=376,
                        bos_token_id=377),
        added={"<|endoftext|>": 376, "<|beginoftext|>": 377, "<|mask|>": 380},
        expect=dict(mask_id=380, eos_id=376, pad_id=376, bos_id=377, shift_logits=True)),
    # Open-dCoder: Qwen2 with tied embeddings; the mask is an added "<M>"
    # token that config.json does not name; pad comes from the tokenizer.
    "opendcoder-f16": dict(
        family="qwen2", dtype="F16", hidden=64, layers=2, heads=4, kv_heads=1,
        inter=96, vocab=384, theta=1e6, eps=1e-6, tie=True, shards=1,
        config_ids=dict(eos_token_id=376, bos_token_id=376),
        added={"<|endoftext|>": 376, "<M>": 383},
        tokenizer_config_extra={"pad_token": "<|endoftext|>"},
        expect=dict(mask_id=383, eos_id=376, pad_id=376, bos_id=376, shift_logits=True)),
    # CoDA: Qwen3 q/k-norm, head_dim (24) unlike hidden/heads (16), no bias,
    # a saved lm_head and no tie_word_embeddings key; three shards.
    "coda-f32-sharded": dict(
        family="qwen3", dtype="F32", hidden=64, layers=2, heads=4, kv_heads=2,
        head_dim=24, inter=128, vocab=384, theta=1e6, eps=1e-6, tie=None,
        save_head=True, shards=3,
        config_ids=dict(mask_token_id=381, eos_token_id=377, pad_token_id=376,
                        bos_token_id=376),
        added={"<|endoftext|>": 376, "<|im_end|>": 377, "<|mask|>": 381},
        expect=dict(mask_id=381, eos_id=377, pad_id=376, bos_id=376, shift_logits=True)),
    # Qwen3 with no lm_head saved and no tie key: tied by the family default;
    # mask found among the added tokens, eos from special_tokens_map.json.
    "qwen3-tied-bf16": dict(
        family="qwen3", dtype="BF16", hidden=32, layers=1, heads=2, kv_heads=1,
        head_dim=16, inter=64, vocab=256, theta=1e4, eps=1e-6, tie=None,
        save_head=False, shards=1, config_ids={},
        added={"<|endoftext|>": 250, "<|mask|>": 251},
        special_map={"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
        expect=dict(mask_id=251, eos_id=250, pad_id=250, bos_id=-1, shift_logits=True)),
    # LLaDA: OLMo-style names/keys, MHA, untied ff_out, not shifted; no
    # mask_token_id in config, so the family default 126336 applies.
    "llada-bf16": dict(
        family="llada", dtype="BF16", hidden=64, layers=2, heads=4, kv_heads=None,
        inter=160, vocab=320, theta=5e5, eps=1e-5, tie=False, shards=1,
        config_ids=dict(eos_token_id=300, pad_token_id=300),
        added={"<|endoftext|>": 300, "<|startoftext|>": 301},
        expect=dict(mask_id=126336, eos_id=300, pad_id=300, bos_id=-1, shift_logits=False)),
    # LLaDA in f32 with GQA, to cover n_kv_heads on the OLMo naming too.
    "llada-gqa-f32": dict(
        family="llada", dtype="F32", hidden=48, layers=2, heads=4, kv_heads=2,
        inter=96, vocab=256, theta=5e5, eps=1e-5, tie=False, shards=2,
        config_ids=dict(mask_token_id=255, eos_token_id=254, pad_token_id=254),
        added={"<|endoftext|>": 254, "<|mdm_mask|>": 255},
        expect=dict(mask_id=255, eos_id=254, pad_id=254, bos_id=-1, shift_logits=False)),
}

# One checkpoint per family profile (model/family.c), each laid out and
# tokenized as the real release: a byte-level tokenizer (id = byte value, so
# `sculpt complete` can run on text) with the family's added tokens at the
# family's ids relative to it, and the tokenizer files naming them as the
# release does. "boost" scales lm_head rows so that a random model still
# writes those tokens now and then (end tokens, DreamOn's expand), and the
# parity test (tests/model/test_upstream_parity.py) sees every rule act.
# "profile" is what `sculpt model info` must report.
_BYTES = dict(dtype="F32", hidden=64, layers=2, heads=4, kv_heads=2, inter=128, vocab=320,
              theta=1e6, eps=1e-6, shards=1, tokenizer="bytes")
FAMILY_SPECS = {
    # Dream-Coder: config.json's bos (300) is not the tokenizer's (301):
    # the trainer overwrites it with the tokenizer's, so 301 frames.
    "dream-bytes": dict(
        _BYTES, family="dream", tie=False,
        config_ids=dict(mask_token_id=302, eos_token_id=300, pad_token_id=300,
                        bos_token_id=300),
        added={"<|endoftext|>": 300, "<|beginoftext|>": 301, "<|mask|>": 302},
        tokenizer_config_extra={"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>",
                                "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
        boost={300: 2.0}, seed=3,
        expect=dict(mask_id=302, eos_id=300, pad_id=300, bos_id=300, shift_logits=True),
        profile=dict(name="dream", bos_id=301, eos_after_suffix=True, eos_id=300,
                     end_ids=[300], eos_fill=False, expand_id=-1, upstream_loop="one-per-step",
                     upstream_pad_after=64)),
    # DiffuCoder-Instruct: <|dlm_pad|> pads its answers and ends the middle.
    "diffucoder-instruct-bytes": dict(
        _BYTES, family="dream", tie=False,
        config_ids=dict(mask_token_id=302, eos_token_id=300, pad_token_id=300,
                        bos_token_id=300),
        added={"<|endoftext|>": 300, "<|beginoftext|>": 301, "<|mask|>": 302,
               "<|dlm_pad|>": 303, "<|im_start|>": 304, "<|im_end|>": 305},
        tokenizer_config_extra={"bos_token": "<|beginoftext|>", "eos_token": "<|im_end|>",
                                "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
        boost={303: 2.5},
        expect=dict(mask_id=302, eos_id=300, pad_id=300, bos_id=300, shift_logits=True),
        profile=dict(name="diffucoder-instruct", bos_id=301, eos_after_suffix=True, eos_id=305,
                     end_ids=[305, 300, 303], eos_fill=False, expand_id=-1)),
    # DreamOn: the expand token; max_gen_len lowered to 16 (the harness's
    # own parameter) to keep the parity test short.
    "dreamon-bytes": dict(
        _BYTES, family="dream", tie=False,
        config_ids=dict(mask_token_id=302, eos_token_id=300, pad_token_id=300,
                        bos_token_id=301),
        added={"<|endoftext|>": 300, "<|beginoftext|>": 301, "<|mask|>": 302,
               "<|expand|>": 303},
        tokenizer_config_extra={"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>",
                                "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
        config_extra={"sculpt_max_infill": 16},
        boost={300: 2.5, 303: 3.5},
        expect=dict(mask_id=302, eos_id=300, pad_id=300, bos_id=301, shift_logits=True),
        profile=dict(name="dreamon", bos_id=301, eos_after_suffix=True, eos_id=300,
                     end_ids=[300], eos_fill=True, expand_id=303, max_infill=16,
                     upstream_loop="dreamon", overridden=True)),
    # Open-dCoder: Qwen2, tied; configs carry a bos_token_id but the
    # tokenizer has no BOS; the eval adds the mask as [MASK].
    "opendcoder-bytes": dict(
        _BYTES, family="qwen2", tie=True,
        config_ids=dict(eos_token_id=300, bos_token_id=300),
        added={"<|endoftext|>": 300, "[MASK]": 301},
        tokenizer_config_extra={"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                                "mask_token": "[MASK]"},
        # (and this seed's random weights favour " " and the mask itself:
        # turned down, so that the middle is not all blanks)
        boost={300: 4.0, 301: 0.0, 32: 0.3},
        expect=dict(mask_id=301, eos_id=300, pad_id=300, bos_id=300, shift_logits=True),
        profile=dict(name="open-dcoder", bos_id=-1, eos_after_suffix=False, end_ids=[300],
                     eos_fill=False, upstream_loop="p2", upstream_steps=64)),
    # CoDA: bos = eos = <|im_end|> in tokenizer_config (add_bos_token false),
    # pad <|endoftext|>; config.json names neither bos nor eos.
    "coda-bytes": dict(
        _BYTES, family="qwen3", head_dim=16, tie=None, save_head=True,
        config_ids=dict(mask_token_id=303, pad_token_id=300),
        added={"<|endoftext|>": 300, "<|im_start|>": 301, "<|im_end|>": 302, "<|mask|>": 303},
        tokenizer_config_extra={"add_bos_token": False, "bos_token": "<|im_end|>",
                                "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                                "mask_token": "<|mask|>"},
        boost={302: 4.0},
        expect=dict(mask_id=303, eos_id=302, pad_id=300, bos_id=302, shift_logits=True),
        profile=dict(name="coda", bos_id=-1, eos_after_suffix=False, eos_id=302,
                     end_ids=[302, 300], upstream_loop="dream-schedule")),
    # LLaDA: its tokenizer adds <|startoftext|> by a template post-processor.
    "llada-bytes": dict(
        _BYTES, family="llada", kv_heads=None, tie=False, theta=5e5, eps=1e-5,
        config_ids=dict(mask_token_id=303, eos_token_id=301, pad_token_id=301),
        added={"<|startoftext|>": 300, "<|endoftext|>": 301, "<|eot_id|>": 302,
               "<|mdm_mask|>": 303},
        tokenizer_config_extra={"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>"},
        post_processor={"type": "TemplateProcessing",
                        "single": [{"SpecialToken": {"id": "<|startoftext|>", "type_id": 0}},
                                   {"Sequence": {"id": "A", "type_id": 0}}],
                        "pair": [], "special_tokens": {
                            "<|startoftext|>": {"id": "<|startoftext|>", "ids": [300],
                                                "tokens": ["<|startoftext|>"]}}},
        boost={301: 1.7},
        expect=dict(mask_id=303, eos_id=301, pad_id=301, bos_id=300, shift_logits=False),
        profile=dict(name="llada", bos_id=300, eos_after_suffix=False, end_ids=[301],
                     upstream_loop="llada", upstream_plain_confidence=True)),
    # LLaDA at its real vocabulary size, so that the real ids apply: EoT
    # 126348 is an end token (generate.py L98); no template: no BOS.
    "llada-vocab": dict(
        family="llada", dtype="BF16", hidden=16, layers=1, heads=2, kv_heads=None, inter=32,
        vocab=126464, theta=5e5, eps=1e-5, tie=False, shards=1,
        config_ids=dict(eos_token_id=126081, pad_token_id=126081),
        added={"<|endoftext|>": 126081, "<|eot_id|>": 126348, "<|mdm_mask|>": 126336},
        expect=dict(mask_id=126336, eos_id=126081, pad_id=126081, bos_id=-1,
                    shift_logits=False),
        profile=dict(name="llada", bos_id=-1, end_ids=[126081, 126348])),
    # sculpt's own layout, by the key its export writes.
    "sculpt-bytes": dict(
        _BYTES, family="qwen2", tie=True,
        config_ids=dict(mask_token_id=302, eos_token_id=300, pad_token_id=300,
                        bos_token_id=301),
        config_extra={"sculpt_profile": "sculpt"},
        added={"<|endoftext|>": 300, "<|beginoftext|>": 301, "<|mask|>": 302},
        tokenizer_config_extra={"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>",
                                "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
        boost={300: 3.0},
        expect=dict(mask_id=302, eos_id=300, pad_id=300, bos_id=301, shift_logits=True),
        profile=dict(name="sculpt", bos_id=301, eos_after_suffix=True, end_ids=[300],
                     eos_fill=True, upstream_loop="blocks")),
}
SPECS.update(FAMILY_SPECS)

# The benchmark checkpoint: Dream-shaped, f32, about 22M parameters.
BENCH = {
    "bench-20m": dict(
        family="dream", dtype="F32", hidden=512, layers=6, heads=8, kv_heads=4,
        inter=1024, vocab=8192, theta=1e6, eps=1e-6, tie=False, shards=1,
        config_ids=dict(mask_token_id=8190, eos_token_id=8188, pad_token_id=8188,
                        bos_token_id=8188),
        added={"<|endoftext|>": 8188, "<|mask|>": 8190},
        expect=dict(mask_id=8190, eos_id=8188, pad_id=8188, bos_id=8188,
                    shift_logits=True)),
    # Qwen2.5-0.5B's shape (its config.json: 24 layers, hidden 896, 14/2
    # heads, ffn 4864, vocab 151936, QKV bias, tied) as an Open-dCoder-style
    # diffusion checkpoint in bf16, random weights: for the CPU benchmarks
    # and the int8 accuracy check (tools/bench/cpu_int8.py), never in ctest.
    # With --qwen-tokenizer the real Qwen BPE comes along (the mask is
    # Dream's id 151666 there).
    "qwen2.5-0.5b": dict(
        family="qwen2", dtype="BF16", hidden=896, layers=24, heads=14, kv_heads=2,
        inter=4864, vocab=151936, theta=1e6, eps=1e-6, tie=True, shards=1,
        config_ids=dict(mask_token_id=151666, eos_token_id=151643, pad_token_id=151643,
                        bos_token_id=151643),
        added={"<|endoftext|>": 151643, "<|mask|>": 151666},
        expect=dict(mask_id=151666, eos_id=151643, pad_id=151643, bos_id=151643,
                    shift_logits=True)),
}


def bf16_bits(a):
    """f32 -> bf16 bit patterns, round to nearest even (finite inputs)."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2")


def encode(a, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(a, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(a, dtype="<f2").tobytes()
    if dtype == "BF16":
        return bf16_bits(a).tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype):
    """tensors: list of (name, float32 array). Data starts 8-byte aligned."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors:
        b = encode(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def tensor_list(spec, rng):
    """(name, f32 array) in checkpoint order, under the family's real names."""
    H, L, V, F = spec["hidden"], spec["layers"], spec["vocab"], spec["inter"]
    nh = spec["heads"]
    nkv = spec["kv_heads"] or nh
    hd = spec.get("head_dim") or H // nh
    fam = spec["family"]

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    def bias(n):
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    out = []
    if fam == "llada":
        p = "model.transformer"
        out.append((f"{p}.wte.weight", rng.standard_normal((V, H)).astype(np.float32)))
        for l in range(L):
            b = f"{p}.blocks.{l}"
            out += [(f"{b}.attn_norm.weight", norm(H)),
                    (f"{b}.q_proj.weight", mat(nh * hd, H)),
                    (f"{b}.k_proj.weight", mat(nkv * hd, H)),
                    (f"{b}.v_proj.weight", mat(nkv * hd, H)),
                    (f"{b}.attn_out.weight", mat(H, nh * hd)),
                    (f"{b}.ff_norm.weight", norm(H)),
                    (f"{b}.ff_proj.weight", mat(F, H)),
                    (f"{b}.up_proj.weight", mat(F, H)),
                    (f"{b}.ff_out.weight", mat(H, F))]
        out.append((f"{p}.ln_f.weight", norm(H)))
        out.append((f"{p}.ff_out.weight", mat(V, H)))
        return boost(spec, out)
    out.append(("model.embed_tokens.weight", rng.standard_normal((V, H)).astype(np.float32)))
    for l in range(L):
        b = f"model.layers.{l}"
        out += [(f"{b}.input_layernorm.weight", norm(H)),
                (f"{b}.self_attn.q_proj.weight", mat(nh * hd, H)),
                (f"{b}.self_attn.k_proj.weight", mat(nkv * hd, H)),
                (f"{b}.self_attn.v_proj.weight", mat(nkv * hd, H)),
                (f"{b}.self_attn.o_proj.weight", mat(H, nh * hd))]
        if fam in ("dream", "qwen2"):
            out += [(f"{b}.self_attn.q_proj.bias", bias(nh * hd)),
                    (f"{b}.self_attn.k_proj.bias", bias(nkv * hd)),
                    (f"{b}.self_attn.v_proj.bias", bias(nkv * hd))]
        if fam == "qwen3":
            out += [(f"{b}.self_attn.q_norm.weight", norm(hd)),
                    (f"{b}.self_attn.k_norm.weight", norm(hd))]
        out += [(f"{b}.post_attention_layernorm.weight", norm(H)),
                (f"{b}.mlp.gate_proj.weight", mat(F, H)),
                (f"{b}.mlp.up_proj.weight", mat(F, H)),
                (f"{b}.mlp.down_proj.weight", mat(H, F))]
    out.append(("model.norm.weight", norm(H)))
    if spec.get("save_head", spec["tie"] is False):
        out.append(("lm_head.weight", mat(V, H)))
    return boost(spec, out)


def boost(spec, tensors):
    """Scales the output rows of spec["boost"]'s ids (lm_head, or the
    embedding when tied) so that those tokens win at some positions."""
    b = spec.get("boost")
    if not b:
        return tensors
    names = ("lm_head.weight", "model.transformer.ff_out.weight")
    head = [n for n, _ in tensors if n in names] or ["model.embed_tokens.weight"]
    out = []
    for n, a in tensors:
        if n == head[0]:
            a = a.copy()
            for i, f in b.items():
                a[i] *= f
        out.append((n, a))
    return out


def config_json(spec):
    fam = spec["family"]
    if fam == "llada":
        c = {"architectures": ["LLaDAModelLM"], "model_type": "llada",
             "d_model": spec["hidden"], "n_layers": spec["layers"],
             "n_heads": spec["heads"], "n_kv_heads": spec["kv_heads"],
             "mlp_hidden_size": spec["inter"], "mlp_ratio": 4,
             "vocab_size": spec["vocab"], "embedding_size": spec["vocab"],
             "rope_theta": spec["theta"], "rms_norm_eps": spec["eps"],
             "include_bias": False, "weight_tying": spec["tie"],
             "block_type": "llama", "activation_type": "silu",
             "layer_norm_type": "rms", "rope": True, "alibi": False,
             "max_sequence_length": 4096}
    else:
        arch = {"dream": ["DreamModel"], "qwen2": ["Qwen2ForCausalLM"],
                "qwen3": ["CoDALanguageModel"]}[fam]
        mtype = {"dream": "Dream", "qwen2": "qwen2", "qwen3": "qwen3"}[fam]
        c = {"architectures": arch, "model_type": mtype,
             "hidden_size": spec["hidden"], "num_hidden_layers": spec["layers"],
             "num_attention_heads": spec["heads"],
             "num_key_value_heads": spec["kv_heads"],
             "intermediate_size": spec["inter"], "vocab_size": spec["vocab"],
             "rope_theta": spec["theta"], "rms_norm_eps": spec["eps"],
             "hidden_act": "silu", "max_position_embeddings": 4096,
             "rope_scaling": None, "torch_dtype": {"F32": "float32", "F16": "float16",
                                                   "BF16": "bfloat16"}[spec["dtype"]]}
        if "head_dim" in spec:
            c["head_dim"] = spec["head_dim"]
        if fam == "qwen3":
            c["attention_bias"] = False
        if spec["tie"] is not None:
            c["tie_word_embeddings"] = spec["tie"]
    c.update(spec["config_ids"])
    c.update(spec.get("config_extra", {}))
    return c


def byte_vocab():
    """GPT-2's byte-level alphabet: the 256 bytes as ids 0..255."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "model", "train"))
    from bpe import bytes_to_unicode
    b2u = bytes_to_unicode()
    return {b2u[b]: b for b in range(256)}


def write_tokenizer(spec, out):
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for t, i in sorted(spec["added"].items(), key=lambda kv: kv[1])]
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "vocab": {}, "merges": []}}
    if spec.get("tokenizer") == "bytes":
        tok["model"] = {"type": "BPE", "dropout": None, "unk_token": None,
                        "continuing_subword_prefix": "", "end_of_word_suffix": "",
                        "fuse_unk": False, "byte_fallback": False, "vocab": byte_vocab(),
                        "merges": []}
        tok["decoder"] = {"type": "ByteLevel", "add_prefix_space": True,
                          "trim_offsets": True, "use_regex": True}
        tok["post_processor"] = spec.get("post_processor")
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=1)
    tc = {"added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                   for a in added}}
    tc.update(spec.get("tokenizer_config_extra", {}))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1)
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump(spec.get("special_map", {}), f, indent=1)


def generate(name, spec, outdir, seed=None):
    """Writes checkpoint `name` into outdir/name and returns that path."""
    out = os.path.join(outdir, name)
    os.makedirs(out, exist_ok=True)
    if seed is None:
        seed = spec.get("seed", sum(name.encode()) * 7919)
    rng = np.random.default_rng(seed)
    tensors = tensor_list(spec, rng)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(spec), f, indent=2)
    write_tokenizer(spec, out)
    n = spec["shards"]
    if n == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors, spec["dtype"])
    else:
        weight_map, total = {}, 0
        for s in range(n):
            fname = f"model-{s + 1:05d}-of-{n:05d}.safetensors"
            part = tensors[s::n]
            write_safetensors(os.path.join(out, fname), part, spec["dtype"])
            for t, a in part:
                weight_map[t] = fname
                total += a.size * (4 if spec["dtype"] == "F32" else 2)
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f,
                      indent=2)
    return out


def n_params(name, spec):
    """Element count of every tensor written (all of them are used)."""
    rng = np.random.default_rng(0)
    return sum(a.size for _, a in tensor_list(spec, rng))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--only", action="append", help="generate only this one (repeatable)")
    ap.add_argument("--bench", action="store_true", help="also the ~20M benchmark checkpoint")
    args = ap.parse_args()
    specs = dict(SPECS)
    if args.bench or (args.only and any(o in BENCH for o in args.only)):
        specs.update(BENCH)
    names = args.only or list(specs)
    for n in names:
        if n not in specs:
            sys.exit(f"unknown checkpoint '{n}' (known: {', '.join(list(SPECS) + list(BENCH))})")
        print(generate(n, specs[n], args.outdir))


if __name__ == "__main__":
    main()

"""Export a trained DiffusionLM as a Hugging Face style checkpoint sculpt loads:
config.json (Qwen2 family, tied embeddings, special ids), tokenizer.json,
tokenizer_config.json, and model.safetensors in bf16 (sharded with
model.safetensors.index.json when a file would pass 16 MiB).

safetensors layout (huggingface/safetensors README): u64 little-endian header
length, JSON header {name: {dtype, shape, data_offsets}}, the data after it;
we pad the header with spaces so the data starts 8-byte aligned.
"""
import json
import os
import shutil
import struct

import numpy as np

MAX_SHARD = 16 * 1024 * 1024


def bf16_bytes(t):
    """float tensor -> bf16 little-endian bytes (torch rounds to nearest even)."""
    import torch
    return t.detach().to(torch.bfloat16).contiguous().view(torch.int16).cpu().numpy() \
        .astype("<i2").tobytes()


def write_safetensors(path, items):
    """items: [(name, shape, bytes)] all BF16."""
    header, off = {}, 0
    for name, shape, b in items:
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, b in items:
            f.write(b)


def read_safetensors(path):
    """-> {name: float32 numpy array} (BF16/F16/F32)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        buf = raw[8 + n + a:8 + n + b]
        if e["dtype"] == "BF16":
            arr = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif e["dtype"] == "F16":
            arr = np.frombuffer(buf, "<f2").astype(np.float32)
        else:
            arr = np.frombuffer(buf, "<f4").astype(np.float32)
        out[name] = arr.reshape(e["shape"])
    return out


def config_json(c, tok_ids):
    return {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "hidden_size": c["hidden_size"], "num_hidden_layers": c["num_hidden_layers"],
        "num_attention_heads": c["num_attention_heads"],
        "num_key_value_heads": c["num_key_value_heads"],
        "intermediate_size": c["intermediate_size"], "vocab_size": c["vocab_size"],
        "rope_theta": c["rope_theta"], "rms_norm_eps": c["rms_norm_eps"],
        "max_position_embeddings": c["max_position_embeddings"], "hidden_act": "silu",
        "rope_scaling": None, "tie_word_embeddings": True, "use_sliding_window": False,
        "attention_dropout": 0.0, "torch_dtype": "bfloat16",
        "bos_token_id": tok_ids["bos"], "eos_token_id": tok_ids["eos"],
        "pad_token_id": tok_ids["eos"], "mask_token_id": tok_ids["mask"],
        # sculpt's family profile for its own layout (model/family.c): BOS,
        # EOS after the suffix, and masks after an end token become EOS, as
        # train.py pads the middle.
        "sculpt_profile": "sculpt",
    }


def special_ids(tokenizer_path):
    with open(tokenizer_path, encoding="utf-8") as f:
        added = {a["content"]: a["id"] for a in json.load(f)["added_tokens"]}
    return {"eos": added["<|endoftext|>"], "bos": added["<|beginoftext|>"],
            "mask": added["<|mask|>"]}


def export(model, tokenizer_path, out_dir, extra_meta=None):
    """Writes the checkpoint into out_dir; returns the list of files written."""
    items = [(k, tuple(v.shape), bf16_bytes(v)) for k, v in model.state_dict().items()]
    return write_checkpoint(model.config, items, tokenizer_path, out_dir, extra_meta)


def write_checkpoint(c, items, tokenizer_path, out_dir, extra_meta=None):
    """The checkpoint files for config c and items [(name, shape, bf16
    bytes)]: config.json, tokenizer files, model.safetensors (or shards of
    at most MAX_SHARD with an index), training.json. No torch: the GPU
    session's rehearsal writes its stand-in weights through it."""
    os.makedirs(out_dir, exist_ok=True)
    for stale in os.listdir(out_dir):  # an earlier export's shards
        if stale.startswith("model") and stale.endswith((".safetensors", ".json")):
            os.remove(os.path.join(out_dir, stale))
    ids = special_ids(tokenizer_path)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config_json(c, ids), f, indent=2)
    if os.path.abspath(tokenizer_path) != os.path.abspath(os.path.join(out_dir, "tokenizer.json")):
        shutil.copyfile(tokenizer_path, os.path.join(out_dir, "tokenizer.json"))
    tc = {"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>",
          "pad_token": "<|endoftext|>", "mask_token": "<|mask|>",
          "model_max_length": c["max_position_embeddings"]}
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1)
    shards, cur, size = [], [], 0
    for it in items:
        if cur and size + len(it[2]) > MAX_SHARD - 4096:
            shards.append(cur)
            cur, size = [], 0
        cur.append(it)
        size += len(it[2])
    shards.append(cur)
    files = ["config.json", "tokenizer.json", "tokenizer_config.json"]
    if len(shards) == 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), shards[0])
        files.append("model.safetensors")
    else:
        wm, total = {}, 0
        for i, sh in enumerate(shards):
            fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            write_safetensors(os.path.join(out_dir, fn), sh)
            files.append(fn)
            for name, _, b in sh:
                wm[name] = fn
                total += len(b)
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=1)
        files.append("model.safetensors.index.json")
    if extra_meta is not None:
        with open(os.path.join(out_dir, "training.json"), "w") as f:
            json.dump(extra_meta, f, indent=1)
        files.append("training.json")
    return files


def load(out_dir):
    """The exported checkpoint back as a float32 DiffusionLM (bf16-rounded weights)."""
    import torch
    from model import DiffusionLM
    with open(os.path.join(out_dir, "config.json")) as f:
        cfg = json.load(f)
    keys = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "intermediate_size", "rope_theta", "rms_norm_eps",
            "max_position_embeddings"]
    m = DiffusionLM({k: cfg[k] for k in keys})
    idx = os.path.join(out_dir, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(idx):
        with open(idx) as f:
            for fn in sorted(set(json.load(f)["weight_map"].values())):
                tensors.update(read_safetensors(os.path.join(out_dir, fn)))
    else:
        tensors = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()})
    return m.eval(), cfg

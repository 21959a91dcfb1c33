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

    tools/planted_checkpoints.py OUTDIR     # writes OUTDIR/<name>/ for all seven

Vocabulary of the id-level models (64): 0..59 ordinary tokens, 60 EOS (= pad),
61 BOS, 62 MASK, 63 unused. A fifth, planted-successor-shifted-bytes, has a
real byte-level tokenizer (id = byte; 256 EOS, 257 BOS, 258 MASK) and chains
the letters a..z, so `sculpt complete` on "abc" answers "defg...z". A sixth,
planted-successor-shifted-bytes-expand, adds DreamOn's <|expand|> (259) and
predicts it after "q" instead of "r".
Hidden layout (2V + 32): the token's own one-hot, then a constant 1 (gives
every token the same norm, so RMSNorm is a fixed scale and q/k are
position-only), then from V + 32 the one-hot of the token attention copied.
The models have one head (160 or 552 wide), but a seventh,
planted-successor-shifted-bytes-3heads, is the byte-level successor with
three heads of 184, each wired to the same offset and carrying every third
token's value (so the chain's letters pass through all three). The CUDA
backend takes head_dim <= 256, so the GPU tests run that one: a second
model rather than a changed one, since the CPU tests' expectations off the
chain, such as what follows a space, are the single head's.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_checkpoints as tc  # noqa: E402  (safetensors writer, config, names)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "model", "train"))
from bpe import bytes_to_unicode  # noqa: E402  (GPT-2's byte-level alphabet)

PAIRS = 8       # rotary pairs used by q and k
THETA = 1e4
LM_SCALE = 5.0


class Geometry:
    """Token ids and hidden layout of one planted model."""

    def __init__(self, vocab, eos, bos, mask, first, last, heads=1):
        self.V, self.EOS, self.BOS, self.MASK = vocab, eos, bos, mask
        self.FIRST, self.Z = first, last      # the ordinary tokens that chain
        self.BIAS = vocab                     # constant-1 dimension
        self.COPY = vocab + 32                # one-hot of the copied token
        self.H = self.COPY + vocab
        self.BYTE_LEVEL = vocab >= 256        # ids are bytes: a real tokenizer
        # Every head attends to the same planted offset; their outputs, side
        # by side, are the single head's.
        assert self.H % heads == 0 and (self.H // heads) % 2 == 0
        self.NH, self.HD = heads, self.H // heads


# The id-level models: 0..59 ordinary, 60 EOS, 61 BOS, 62 MASK, 63 unused.
IDS = Geometry(64, 60, 61, 62, 0, 59)
# The byte-level model: ids are bytes (0..255), so any text tokenizes; the
# chain runs over the letters, successor('y') = 'z', successor('z') = EOS.
BYTES = Geometry(260, 256, 257, 258, ord("a"), ord("z"))
BYTES.EXPAND = 259
BYTES3 = Geometry(260, 256, 257, 258, ord("a"), ord("z"), heads=3)


def spec_for(family, g):
    return dict(family=family, dtype="F32", hidden=g.H, layers=1, heads=g.NH, kv_heads=g.NH,
                head_dim=g.HD, inter=8, vocab=g.V, theta=THETA, eps=1e-6, tie=False,
                save_head=True, shards=1,
                config_ids=dict(mask_token_id=g.MASK, eos_token_id=g.EOS,
                                pad_token_id=g.EOS, bos_token_id=g.BOS),
                added={"<|endoftext|>": g.EOS, "<|beginoftext|>": g.BOS,
                       "<|mask|>": g.MASK})


# Pair indices spread over the spectrum so that the summed cosines peak at
# one offset only, whatever the head size.
PAIR_INDEX = [0, 1, 2, 3, 5, 8, 13, 21]


def omegas(H):
    # HF rotate-half RoPE: pair k is dims (k, k + hd/2), frequency theta^(-2k/hd).
    return [THETA ** (-2.0 * k / H) for k in PAIR_INDEX]


def attention_scale(H):
    """q/k magnitude so that any position other than the planted one scores
    at least 40 nats lower, for offsets up to 2048 (checked, not assumed)."""
    om = omegas(H)
    worst = max(sum(math.cos(w * dlt) for w in om) / PAIRS
                for dlt in range(1, 2048))
    gap = 1.0 - worst
    # score = A^2 * mean(cos) / sqrt(head_dim); want A^2 * gap / sqrt(H) >= 40.
    return math.sqrt(40.0 * math.sqrt(H) / gap)


def planted_weights(direction, shift, g, expand_on=None):
    V, H, HD, BIAS, COPY, EOS, Z, FIRST = g.V, g.H, g.HD, g.BIAS, g.COPY, g.EOS, g.Z, g.FIRST
    # The relative offset d (source = i - d, in rows) that attention looks at.
    d = {("successor", True): 0, ("successor", False): 1,
         ("predecessor", True): -2, ("predecessor", False): -1}[(direction, shift)]
    xn = math.sqrt(H / 2.0)  # RMSNorm of an embedding (two unit entries)
    A = attention_scale(HD)
    w = {}
    emb = np.zeros((V, H), np.float32)
    emb[np.arange(V), np.arange(V)] = 1.0
    emb[:, BIAS] = 1.0
    w["embed"] = emb
    q = np.zeros((H, H), np.float32)
    k = np.zeros((H, H), np.float32)
    a = A / math.sqrt(PAIRS)
    for h0 in range(0, H, HD):  # each head's q/k rows: the same positional pattern
        for p, om in zip(PAIR_INDEX, omegas(HD)):
            q[h0 + p, BIAS] = a / xn
            k[h0 + p, BIAS] = a * math.cos(om * d) / xn
            k[h0 + p + HD // 2, BIAS] = a * math.sin(om * d) / xn
    w["q"], w["k"] = q, k
    v = np.zeros((H, H), np.float32)
    # Token t's value goes to head t % NH (at t // NH within it), so with
    # several heads neighbouring tokens (the letters of the chain) go
    # through different heads, and a backend that mixes heads up writes
    # the wrong middle. One head: the identity, as before.
    slot = (np.arange(V) % g.NH) * HD + np.arange(V) // g.NH
    v[slot, np.arange(V)] = 1.0 / xn
    w["v"] = v
    o = np.zeros((H, H), np.float32)
    o[COPY + np.arange(V), slot] = 1.0
    w["o"] = o
    head = np.zeros((V, H), np.float32)
    if direction == "successor":
        for t in range(FIRST, Z):
            head[t + 1, COPY + t] = LM_SCALE
        head[EOS, COPY + Z] = LM_SCALE
        if expand_on is not None:
            # DreamOn's expand: after this token the model asks for more room.
            head[expand_on + 1, COPY + expand_on] = 0.0
            head[g.EXPAND, COPY + expand_on] = LM_SCALE
    else:
        for t in range(FIRST + 1, Z + 1):
            head[t - 1, COPY + t] = LM_SCALE
        head[EOS, COPY + FIRST] = LM_SCALE
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


def write_byte_tokenizer(out, g, expand=False):
    """A real byte-level BPE tokenizer.json with no merges: id = byte value."""
    b2u = bytes_to_unicode()
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for t, i in (("<|endoftext|>", g.EOS), ("<|beginoftext|>", g.BOS),
                          ("<|mask|>", g.MASK))]
    if expand:
        added.append({"id": g.EXPAND, "content": "<|expand|>", "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": False,
                      "special": True})
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": True, "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                       "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": "", "end_of_word_suffix": "",
                     "fuse_unk": False, "byte_fallback": False,
                     "vocab": {b2u[b]: b for b in range(256)}, "merges": []}}
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=1)


def generate(outdir, family, direction, g=IDS, expand_on=None):
    spec = spec_for(family, g)
    shift = family != "llada"
    w = planted_weights(direction, shift, g, expand_on)
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
    if g.BYTE_LEVEL:
        name += "-bytes"
    if g.NH > 1:
        name += f"-{g.NH}heads"
    if expand_on is not None:
        name += "-expand"
    out = os.path.join(outdir, name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(tc.config_json(spec), f, indent=2)
    if g.BYTE_LEVEL:
        write_byte_tokenizer(out, g, expand=expand_on is not None)
    else:
        tc.write_tokenizer(spec, out)
    tc.write_safetensors(os.path.join(out, "model.safetensors"), tensors, "F32")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: planted_checkpoints.py OUTDIR")
    for family in ("dream", "llada"):
        for direction in ("successor", "predecessor"):
            print(generate(sys.argv[1], family, direction))
    print(generate(sys.argv[1], "dream", "successor", BYTES))
    print(generate(sys.argv[1], "dream", "successor", BYTES, expand_on=ord("q")))
    print(generate(sys.argv[1], "dream", "successor", BYTES3))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A small qwen2 checkpoint grown to a bigger model's shape, computing the
same function: the shipped model's answers at a 0.5B model's cost.

    tools/grow_checkpoint.py [--src model/default] [--shape qwen2.5-0.5b]
                             [--positions N] OUT_DIR

Why: the CPU latency targets (issue 45: pause to ghost text within 300 ms
with the 0.5B shape on 2 cores) were measured with random weights, whose
lines never parse, so every answer ran the repair's second pass and was
dropped. A grown checkpoint costs what the bigger shape costs per pass
(every product is dense: zeros are multiplied like any number) while its
lines are the small model's, so the pipeline runs as it would for a model
whose answers are shown.

How the small model sits inside the big one (qwen2 as transformers runs
it; rotate_half RoPE, tied embeddings, q/k/v biases):
- hidden: the small model's channels are the first h_s of the big
  residual; the rest stay zero, since nothing writes them (o_proj and
  down_proj rows past h_s are zero). RMSNorm averages over all h_b
  channels, so every norm weight is scaled by sqrt(h_s / h_b) and eps by
  h_s / h_b: the normalised values come out as the small model's.
- heads: small query head q of group g maps to big head g * group_b +
  (q mod group_s); small K/V head g to big K/V head g. The other big query
  heads have zero weights: they attend uniformly and o_proj drops them.
- head dims: rotate_half pairs (i, i + d/2) at frequency theta^(-2i/d).
  With theta_b = theta_s^(d_b / d_s), big pair i turns at small pair i's
  frequency, so small dim i < d_s/2 goes to big dim i and dim d_s/2 + i to
  d_b/2 + i. The softmax scale 1/sqrt(d) differs: q and its bias are
  multiplied by sqrt(d_b / d_s) (the one place bf16 rounds anew).
- layers: the small model's layers first, then identity layers (all their
  weights present, o_proj and down_proj zero).
- vocabulary: rows past the small vocabulary are never input; as lm_head
  rows they must never win. Channel h_s carries a constant c in every real
  token's embedding (no layer reads or writes it); the padding rows hold
  -B there, so their logits are about -B c / rms, and the real tokens all
  gain the same c^2 / rms (softmax does not move). c is small against the
  residual's norm, so the RMSNorm scales hardly move (at c = 1e-2 the
  softmax moved by 1.4e-4, at 1e-3 by 1.3e-6: f32 rounding).
tests/model/test_grow.py checks the function at a smaller shape; the
figures measured with it are in docs/performance.md and
docs/evaluation.md (drafts).
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_checkpoints  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_CHANNEL = 1e-3   # the constant channel's value in every real embedding
B_PAD = 1e6        # its weight, negated, in every padding row


def read_safetensors(path):
    """name -> float32 array (BF16, F16 or F32 tensors)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b]
        if t["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u.view("<f4")
        elif t["dtype"] == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype("<f4")
        elif t["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4").copy()
        else:
            raise SystemExit(f"{path}: {name}: dtype {t['dtype']} not handled")
        out[name] = arr.reshape(t["shape"])
    return out


def grow(src, shape, positions=None):
    """(config dict, [(name, f32 array)]) of `src` grown to `shape`."""
    with open(os.path.join(src, "config.json")) as f:
        cs = json.load(f)
    if cs.get("model_type") != "qwen2":
        raise SystemExit(f"{src}: model_type {cs.get('model_type')}: only qwen2 grows")
    w = read_safetensors(os.path.join(src, "model.safetensors"))
    hs, ls_, nh_s, kv_s = (cs["hidden_size"], cs["num_hidden_layers"],
                           cs["num_attention_heads"], cs["num_key_value_heads"])
    is_, vs = cs["intermediate_size"], cs["vocab_size"]
    hb, lb, nh_b, kv_b = shape["hidden"], shape["layers"], shape["heads"], shape["kv_heads"]
    ib, vb = shape["inter"], shape["vocab"]
    ds, db = hs // nh_s, hb // nh_b
    gs, gb = nh_s // kv_s, nh_b // kv_b
    if not (hb > hs and lb >= ls_ and kv_b == kv_s and gb >= gs and db >= ds and ib >= is_
            and vb >= vs and ds % 2 == 0 and db % 2 == 0):
        raise SystemExit(f"{src} does not fit inside the shape {shape}")

    dim = np.concatenate([np.arange(ds // 2), db // 2 + np.arange(ds // 2)])  # small -> big dim
    qhead = np.array([(q // gs) * gb + q % gs for q in range(nh_s)])
    qrows = (qhead[:, None] * db + dim[None, :]).reshape(-1)            # big q rows, small order
    krows = (np.arange(kv_s)[:, None] * db + dim[None, :]).reshape(-1)
    vrows = (np.arange(kv_s)[:, None] * db + np.arange(ds)[None, :]).reshape(-1)
    vdims = np.arange(ds)  # V is not rotated: its first ds dims
    orows_in = (qhead[:, None] * db + vdims[None, :]).reshape(-1)       # o_proj input columns
    norm_scale = np.sqrt(hs / hb)
    q_scale = np.sqrt(db / ds)

    def z(*s):
        return np.zeros(s, dtype=np.float32)

    out = []
    emb = z(vb, hb)
    emb[:vs, :hs] = w["model.embed_tokens.weight"]
    emb[:vs, hs] = C_CHANNEL
    emb[vs:, hs] = -B_PAD
    out.append(("model.embed_tokens.weight", emb))
    for li in range(lb):
        p = f"model.layers.{li}."
        real = li < ls_
        g = (lambda n: w[p + n]) if real else None
        t = {}
        for n in ("input_layernorm.weight", "post_attention_layernorm.weight"):
            a = z(hb) + norm_scale  # identity layers: any norm; keep it the same scale
            if real:
                a[:hs] = g(n) * norm_scale
            t[n] = a
        q, qb = z(nh_b * db, hb), z(nh_b * db)
        k, kb = z(kv_b * db, hb), z(kv_b * db)
        v, vbias = z(kv_b * db, hb), z(kv_b * db)
        o = z(hb, nh_b * db)
        gate, up, down = z(ib, hb), z(ib, hb), z(hb, ib)
        if real:
            q[qrows, :hs] = g("self_attn.q_proj.weight") * q_scale
            qb[qrows] = g("self_attn.q_proj.bias") * q_scale
            k[krows, :hs] = g("self_attn.k_proj.weight")
            kb[krows] = g("self_attn.k_proj.bias")
            v[vrows, :hs] = g("self_attn.v_proj.weight")
            vbias[vrows] = g("self_attn.v_proj.bias")
            o[:hs, orows_in] = g("self_attn.o_proj.weight")
            gate[:is_, :hs] = g("mlp.gate_proj.weight")
            up[:is_, :hs] = g("mlp.up_proj.weight")
            down[:hs, :is_] = g("mlp.down_proj.weight")
        else:
            # weights that read the residual, so the identity layers' products are
            # of real numbers (their outputs are dropped by o_proj and down_proj)
            rng = np.random.default_rng(li)
            for a in (q, k, v, gate, up):
                a[:, :hs] = rng.normal(0, 0.02, (a.shape[0], hs))
        t.update({"self_attn.q_proj.weight": q, "self_attn.q_proj.bias": qb,
                  "self_attn.k_proj.weight": k, "self_attn.k_proj.bias": kb,
                  "self_attn.v_proj.weight": v, "self_attn.v_proj.bias": vbias,
                  "self_attn.o_proj.weight": o, "mlp.gate_proj.weight": gate,
                  "mlp.up_proj.weight": up, "mlp.down_proj.weight": down})
        for n in sorted(t):
            out.append((p + n, t[n]))
    fn = z(hb)
    fn[:hs] = w["model.norm.weight"] * norm_scale
    fn[hs] = 1.0
    out.append(("model.norm.weight", fn))

    cb = dict(cs)
    cb.update(hidden_size=hb, num_hidden_layers=lb, num_attention_heads=nh_b,
              num_key_value_heads=kv_b, intermediate_size=ib, vocab_size=vb,
              rope_theta=float(cs.get("rope_theta", 10000.0)) ** (db / ds),
              rms_norm_eps=cs.get("rms_norm_eps", 1e-6) * hs / hb)
    if positions:
        cb["max_position_embeddings"] = positions
    return cb, out


def write(src, out, cfg, tensors, dtype="BF16"):
    """The grown checkpoint into folder out: its config, tensors (as dtype)
    and src's tokenizer and generation files."""
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(src):
        if f.startswith("tokenizer") or f in ("generation_config.json", "special_tokens_map.json"):
            shutil.copy(os.path.join(src, f), out)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tiny_checkpoints.write_safetensors(os.path.join(out, "model.safetensors"), tensors, dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--src", default=os.path.join(ROOT, "model", "default"))
    ap.add_argument("--shape", default="qwen2.5-0.5b", choices=sorted(tiny_checkpoints.BENCH))
    ap.add_argument("--positions", type=int,
                    help="max_position_embeddings (default: the small model's)")
    args = ap.parse_args()
    cfg, tensors = grow(args.src, tiny_checkpoints.BENCH[args.shape], args.positions)
    write(args.src, args.out, cfg, tensors)
    n = sum(a.size for _, a in tensors)  # tied: the embeddings are the lm_head
    print(f"{args.out}: {args.src} grown to {args.shape} ({n / 1e6:.0f}M parameters), "
          f"rope_theta {cfg['rope_theta']:g}, {cfg['max_position_embeddings']} positions")


if __name__ == "__main__":
    main()

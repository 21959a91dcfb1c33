"""The GPU training recipe's parts (issue 41), each against its reference,
at toy size on the CPU:
  * the static-shape loss (K gathered rows, chunked fused linear-CE) equals
    diffusion_loss (boolean indexing) and its gradients, when K covers the
    masked rows; with fewer rows the sample is weighted up by count / K;
  * RoPE as one roll-multiply-add equals rotate_half; the one-projection
    attention equals per-head attention written out; causal attention does
    not see the future, bidirectional does;
  * multi-hole batches: 4-16 canvases per infill sequence, each its text
    then EOS padding, one masking rate per canvas, the rest of the window the
    stream's tokens in order; repo records holed after their snippets only;
    the same shapes every step;
  * Muon's Newton-Schulz orthogonalizes; the WSD schedule; the FLOP count.
Needs torch (Debian python3-torch); skips without it."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish, need_torch  # noqa: E402

need_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "model", "train"))
import batches  # noqa: E402
import bpe  # noqa: E402
import model as M  # noqa: E402
import presets  # noqa: E402
import recipe  # noqa: E402

torch.set_num_threads(2)
torch.manual_seed(0)
cfg = M.default_config(vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=128)
m = M.DiffusionLM(cfg, seed=3)

# --- static-shape loss ------------------------------------------------------------------
B, T = 6, 48
x = torch.randint(0, 297, (B, T))
maskable = torch.rand(B, T) < 0.8
maskable[:, 0] = False
t_tok = 0.05 + 0.9 * torch.rand(B, T)  # per-token rates, as multi-hole sequences have
masked = (torch.rand(B, T) < t_tok) & maskable
inp = torch.where(masked, torch.full_like(x, 299), x)
ref, ref_ce = M.diffusion_loss(m, inp, x, masked, t_tok, maskable)
g_ref = torch.autograd.grad(ref, list(m.parameters()))
idx, w = M.static_rows(masked, t_tok, maskable, T, B)
new, ce_sum, n = M.rows_loss(m, m.hidden(inp), x, idx, w, chunk=7)
g_new = torch.autograd.grad(new, list(m.parameters()))
check(abs(float(new) - float(ref)) <= 1e-5 * abs(float(ref)),
      f"static-shape loss {float(new):.6f} == diffusion_loss {float(ref):.6f}")
check(int(n) == int(masked[:, 1:].sum()) and abs(float(ce_sum) / int(n) - float(ref_ce)) < 1e-4,
      "its rows are the masked ones, their mean CE the same")
gd = max(float((a - b).abs().max()) for a, b in zip(g_ref, g_new))
check(gd < 1e-5, f"gradients equal (max abs diff {gd:.1e})")
K = 4
idx4, w4 = M.static_rows(masked, t_tok, maskable, K, B)
cnt = masked[:, 1:].sum(1)
rows_ok = all(bool(masked[b, idx4[b][w4[b] > 0]].all()) for b in range(B))
scale_ok = all(abs(float((w4[b] * t_tok[b, idx4[b]]).max()) * float(maskable[b].sum()) * B
                   - max(1.0, int(cnt[b]) / K)) < 1e-4 for b in range(B) if int(cnt[b]) > 0)
check(idx4.shape == (B, K) and rows_ok and scale_ok,
      "K < count: K masked rows, each weighted up by count / K")

# --- RoPE, attention, causality ------------------------------------------------------------
q = torch.randn(2, 10, 6, 16)
cos, sin = M.rope_tables(10, 16, 10000.0, "cpu")
want = M.apply_rope(q.transpose(1, 2), cos, sin).transpose(1, 2)
sc, ss = M.rope_signed_tables(10, 16, 10000.0, "cpu", torch.float32)
check(torch.equal(M.rope_fused(q, sc, ss), want), "RoPE by roll-multiply-add == rotate_half, exactly")
att = m.model.layers[0].self_attn
h = torch.randn(2, 12, 64)
with torch.no_grad():
    got = att(h, *m.rope(12, "cpu"))
    nh, nkv, hd = 4, 2, 16
    qq = M.apply_rope(att.q_proj(h).view(2, 12, nh, hd).transpose(1, 2), *M.rope_tables(12, hd, 1e4, "cpu"))
    kk = M.apply_rope(att.k_proj(h).view(2, 12, nkv, hd).transpose(1, 2), *M.rope_tables(12, hd, 1e4, "cpu"))
    vv = att.v_proj(h).view(2, 12, nkv, hd).transpose(1, 2)
    kk, vv = kk.repeat_interleave(2, 1), vv.repeat_interleave(2, 1)
    o = torch.softmax(qq @ kk.transpose(-1, -2) / math.sqrt(hd), -1) @ vv
    ref_o = att.o_proj(o.transpose(1, 2).reshape(2, 12, 64))
check(float((got - ref_o).abs().max()) < 1e-5, f"attention ({M.ATTENTION}) == per-head reference")
ids = torch.randint(0, 300, (1, 20))
ids2 = ids.clone()
ids2[0, 15:] = (ids2[0, 15:] + 1) % 300
with torch.no_grad():
    c1, c2 = m.hidden(ids, causal=True), m.hidden(ids2, causal=True)
    b1, b2 = m.hidden(ids), m.hidden(ids2)
check(float((c1[0, :15] - c2[0, :15]).abs().max()) < 1e-6, "causal: the future does not change the past")
check(float((b1[0, :15] - b2[0, :15]).abs().max()) > 1e-3, "bidirectional: it does")

# --- batches ----------------------------------------------------------------------------------
tok = bpe.Tokenizer(os.path.join(SRC, "model", "default", "tokenizer.json"))
EOS, BOS, MASK = (tok.id_of(s) for s in ("<|endoftext|>", "<|beginoftext|>", "<|mask|>"))
text = open(os.path.join(SRC, "tests", "data", "real", "click", "src", "click", "core.py")).read()
stream = np.array(tok.encode(text) + [EOS], dtype=np.int64)
nl = batches.newline_table(tok)
T = 384
S = batches.Streams(stream, nl, "cpu", 4 * T)
db = batches.DeviceBatches(S, tok, T, "cpu", 5, dict(plain=1, infill=6, causal=1), K=96)
bt = db.batch()
shapes = {k: tuple(v.shape) for k, v in bt.items() if v is not None}
ok_runs = ok_text = ok_rate = ok_pad = 0
nruns = []
for r in range(1, 7):  # the infill rows
    xs, mk, tt = bt["tgt"][r], bt["maskable"][r], bt["t_tok"][r]
    runs, p = [], 0
    while p < T:
        if mk[p]:
            e = p
            while e < T and mk[e]:
                e += 1
            runs.append((p, e))
            p = e
        else:
            p += 1
    ok_runs += 4 <= len(runs) <= 16
    nruns.append(len(runs))
    # each canvas: its text, then only EOS; one rate per canvas
    pad_ok = True
    for a, e in runs:
        seg = xs[a:e].tolist()
        k = next((i for i, v in enumerate(seg) if v == EOS), len(seg))
        pad_ok &= all(v == EOS for v in seg[k:])
        ok_rate += len(set(tt[a:e].tolist())) == 1
    ok_pad += pad_ok
    # outside the pads, the stream's tokens in order
    keep = [int(v) for i, v in enumerate(xs[1:T - 1].tolist(), 1)
            if not (mk[i] and v == EOS and any(a <= i < e for a, e in runs))]
    s = stream.tolist()
    starts = [i for i in range(len(s)) if s[i:i + 8] == keep[:8]]
    ok_text += any(s[i:i + len(keep)] == keep for i in starts)
check(ok_runs == 6, f"4-16 canvases in each infill sequence ({nruns})")
check(ok_pad == 6, "each canvas is its text then EOS padding")
check(ok_text == 6, "the rest of the window is the stream's tokens, in order")
rates = {round(float(v), 6) for v in bt["t_tok"][1][bt["maskable"][1]]}
check(len(rates) >= 4, f"each canvas has its own masking rate ({len(rates)} rates in a sequence)")
check(bool((bt["inp"][bt["masked"]] == MASK).all()) and bool((bt["inp"][~bt["masked"]] ==
      bt["tgt"][~bt["masked"]]).all()), "masked positions are <|mask|>, the rest the text")
check(bt["cx"] is not None and tuple(bt["cidx"].shape) == (1, T - 1), "a causal row, every target")
shapes2 = {k: tuple(v.shape) for k, v in db.batch().items() if v is not None}
check(shapes == shapes2, f"the same shapes every step: {shapes}")

# repo records: holes only after the snippets
rec_text = "# click/utils.py:1\ndef echo(message):\n    pass\n"
window = "\n".join(text.split("\n")[101:140]) + "\n"  # starts at a non-blank line
ids_r = tok.encode(rec_text + window) + [EOS]
tl = np.array([len(tok.token_bytes(i)) for i in range(tok.n_vocab)])
blank = tok.encode(rec_text + "\n" + window) + [EOS]  # a blank first line joins the newline
check(len(batches.record_bounds(np.array(blank), EOS, [len(rec_text.encode())], tl)[0]) == 0,
      "record_bounds drops a record whose window starts with a blank line (no token boundary)")
rec = batches.record_bounds(np.array(ids_r * 3), EOS, [len(rec_text.encode())] * 3, tl)
check(len(rec[0]) == 3 and rec[2][0] == len(tok.encode(rec_text)),
      f"record_bounds: the window's first token found by byte counts ({rec[2][:1]})")
R = batches.Streams(np.array(ids_r * 3), nl, "cpu", 0, records=rec)
db2 = batches.DeviceBatches(S, tok, T, "cpu", 6, dict(repo=4), K=64, repo=R)
br = db2.batch()
first = int(rec[2][0]) + 1  # + BOS
check(not bool(br["maskable"][:, :first].any()) and bool(br["maskable"].any()),
      "repo records: canvases only after the snippets")
check(br["tgt"][0, 1:first].tolist() == ids_r[:first - 1], "the snippets come first, unmasked")

# --- Muon, schedule, FLOPs ----------------------------------------------------------------------
G = torch.randn(96, 64)
O = recipe.newton_schulz(G)
sv = torch.linalg.svdvals(O) if hasattr(torch, "linalg") else torch.svd(O)[1]
U, _, V = torch.svd(G)
cos_uv = float((O * (U @ V.t())).sum() / (O.norm() * (U @ V.t()).norm()))
check(float(sv.min()) > 0.5 and float(sv.max()) < 1.3 and cos_uv > 0.95,
      f"Newton-Schulz: singular values {float(sv.min()):.2f}..{float(sv.max()):.2f}, "
      f"cosine to U V^T {cos_uv:.3f}")
opts, kind = recipe.make_optimizers(m, 1e-3)
muon_params = {id(p) for p in opts[1].param_groups[0]["params"]}
names = [n for n, p in m.named_parameters() if id(p) in muon_params]
check(kind in ("torch", "fallback") and names == recipe.hidden_matrices(m) and
      all(p.dim() == 2 for p in opts[1].param_groups[0]["params"]) and
      "model.embed_tokens.weight" not in names, f"Muon ({kind}) on the {len(names)} hidden matrices, "
      "AdamW on embeddings, norms and biases")
sched = [recipe.wsd(f) for f in (0.0, 0.015, 0.03, 0.5, 0.75, 0.875, 1.0)]
check(sched == [0.0, 0.5, 1.0, 1.0, 1.0, 0.5, 0.0], f"warmup-stable-decay {sched}")
gc = presets.preset_config("gpu", 16384)
H, L, I = gc["hidden_size"], gc["num_hidden_layers"], gc["intermediate_size"]
mat = sum(k * (1 if len(s) == 1 else s[1]) for n, s in presets.tensor_shapes(gc)
          for k in [s[0]] if len(s) == 2 and ".layers." in n)
check(recipe.body_flops_per_token(gc, 1024) == 6 * mat + 12 * 1024 * H * L,
      "FLOPs a token: 6 x the layers' matrices + 12 x T x H x layers for attention")
check(recipe.peak_flops("NVIDIA H100 80GB HBM3")[0] == 989.4e12 and
      recipe.peak_flops("NVIDIA H100 PCIe")[0] == 756e12 and recipe.peak_flops("cpu")[0] is None,
      "bf16 dense peaks by device name")
finish()

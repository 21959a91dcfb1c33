"""The model authors' infill decode loops, re-implemented in numpy from their
sources (not from sculpt's C), for the parity test of `sculpt complete
--preset upstream` (test_upstream_parity.py).

Each loop takes `forward(ids) -> logits [n][V]` (raw lm_head rows, before any
shift) and the token ids, and returns the decoded canvas. torch's semantics
are kept where they decide a token: the shift, sample_tokens() (logits / T,
top-p, top-k, softmax, the confidence kinds), the transfer counts in float32,
topk/argsort choices (ties go to the lower position, where torch leaves them
unspecified). Only greedy decoding (T = 0) is reproduced: at T > 0 torch's
random generator is not sculpt's.

Sources (commit, file, lines):
  DreamOn  DreamLM/DreamOn@8a0a549 eval/generator.py
           L16-34 top_p_logits/top_k_logits, L36-68 sample_tokens,
           L126-174 batch_generate, L179-203 infilling (the fixed canvas),
           L205-316 batch_generate_with_expand_as_token,
           L320-341 infilling_with_expansion; eval/evaluate.py L52 (expand id)
  CoDA     SalesforceAIResearch/CoDA@fa1d505 CoDALanguageModel/generation_utils.py
           L61-100 sample_tokens, L412-540 _sample
  Open-dLLM pengzhangzhi/Open-dLLM@8b38787
           veomni/models/transformers/qwen2/generation_utils.py
           L36-64 sample_tokens, L166-277 _mdm_sample (p2);
           eval/eval_infill/eval_infill.py L71-80 (prefix masks suffix)
  LLaDA    ML-GSAI/LLaDA@b7e6c35 generate.py L8-40 (noise, transfer counts),
           L43-120 generate
"""
import json
import os

import numpy as np


# ---- the tokenizer files, as transformers reads them --------------------------------

def _json(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f)


def special_ids(model_dir):
    """{bos, eos, pad, mask} as AutoTokenizer's *_token_id would give them
    (tokenizer_config.json, then special_tokens_map.json), and "adds_bos":
    the id encode(add_special_tokens=True) puts first, or None."""
    tok = _json(model_dir, "tokenizer.json")
    tc = _json(model_dir, "tokenizer_config.json")
    sm = _json(model_dir, "special_tokens_map.json")
    added = {a["content"]: a["id"] for a in tok.get("added_tokens", [])}
    out = {}
    for what in ("bos", "eos", "pad", "mask"):
        v = tc.get(f"{what}_token", sm.get(f"{what}_token"))
        if isinstance(v, dict):
            v = v.get("content")
        out[what] = added.get(v) if v else None
    pp = tok.get("post_processor") or {}
    out["adds_bos"] = None
    if tc.get("add_bos_token"):
        out["adds_bos"] = out["bos"]
    elif pp.get("type") == "TemplateProcessing":
        first = (pp.get("single") or [{}])[0]
        if "SpecialToken" in first:
            out["adds_bos"] = pp["special_tokens"][first["SpecialToken"]["id"]]["ids"][0]
    out["added"] = added
    return out


# ---- sample_tokens ----------------------------------------------------------------------

def softmax(z):
    z = np.asarray(z, dtype=np.float64)
    m = np.max(z, axis=-1, keepdims=True)
    e = np.exp(z - m)
    return e / e.sum(axis=-1, keepdims=True)


def top_p_logits(z, top_p):
    """DreamOn generator.py L16-27 (the same in CoDA and Open-dLLM): sort
    descending, drop a token once the cumulative mass before it passes top_p."""
    z = z.copy()
    for r in range(z.shape[0]):
        order = np.argsort(-z[r], kind="stable")
        cum = np.cumsum(softmax(z[r][order]))
        remove = cum > top_p
        remove[1:] = remove[:-1].copy()
        remove[0] = False
        z[r][order[remove]] = -np.inf  # torch.finfo.min: probability 0 either way
    return z


def sample_tokens(logits, temperature=0.0, top_p=None, top_k=None, alg="confidence"):
    """Greedy sample_tokens (DreamOn L36-68, CoDA L61-100, Open-dLLM L36-64):
    confidence p(x0), "margin" p1 - p2, or "entropy" sum p log(p + 1e-10)."""
    assert temperature == 0, "only greedy decoding is reproduced"
    z = np.asarray(logits, dtype=np.float64)
    if top_p is not None and top_p < 1:
        z = top_p_logits(z, top_p)
    if top_k:
        kth = np.sort(z, axis=-1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    p = softmax(z)
    x0 = np.argmax(p, axis=-1)
    conf = p[np.arange(len(x0)), x0]
    if alg == "margin":
        s = -np.sort(-p, axis=-1)
        conf = s[:, 0] - s[:, 1]
    elif alg == "entropy":
        conf = np.sum(p * np.log(p + 1e-10), axis=-1)
    return conf, x0


def shifted(logits):
    """torch.cat([logits[:, :1], logits[:, :-1]], dim=1): row i-1 predicts i."""
    return np.concatenate([logits[:1], logits[:-1]], axis=0)


def best(conf, k):
    """torch.topk(conf, k) indices; ties to the lower index."""
    return np.argsort(-np.asarray(conf), kind="stable")[:k]


# ---- DreamOn's harness on a fixed canvas (Dream, Dream-Coder, DiffuCoder) -------------

def dreamon_fixed(forward, ids, prefix, suffix, m, steps=256, max_gen_len=64,
                  temperature=0.0, top_p=0.9, alg="entropy", expand_id=None, suffix_eos=True):
    """infilling() L179-203 with batch_generate() L126-174 (alg_temp 0,
    number_transfer_tokens = 1). Returns the canvas x[pl:pl+m]. suffix_eos
    False (with max_gen_len 0): sculpt's rule for a suffix cut to fit, which
    upstream never meets (it cuts the prompt from the left, L190)."""
    p = [ids["bos"]] + list(prefix)                        # encode(add_bos=True)
    x = p + [ids["mask"]] * m + list(suffix) + [ids["eos"]] * suffix_eos  # add_eos=True
    x = x + [ids["eos"]] * max_gen_len                     # L199-200, pad_to_max_len false
    x = np.array(x)
    pl = len(p)
    for _ in range(steps):
        mask_index = x == ids["mask"]
        logits = shifted(forward(x))[mask_index]
        if expand_id is not None:
            logits[:, expand_id] -= 1e9                    # L134
        if not mask_index.any():
            break
        conf, x0 = sample_tokens(logits, temperature, top_p, None, alg)
        j = best(conf, 1)                                  # L161
        x0_ = np.full(len(x0), ids["mask"])
        x0_[j] = x0[j]
        x[mask_index] = x0_                                # L167-169
    return [int(t) for t in x[pl:pl + m]]


# ---- DreamOn: expand and delete --------------------------------------------------------

def dreamon_expand(forward, ids, prefix, suffix, min_gen_len, expand_id, max_gen_len=64,
                   steps=256, max_tokens=2048, temperature=0.0, top_p=0.9, alg="entropy",
                   trace=None):
    """infilling_with_expansion() L320-341 around
    batch_generate_with_expand_as_token() L205-316 (pad_eos_to_right and
    delete_eos_token on, batch 1). The 2-D attention mask over the live
    window with positions cumsum - 1 (L211-227) is the forward of the window
    alone. Returns the middle x[pl:pl+num_gen]."""
    p = [ids["bos"]] + list(prefix)
    inp = p + [ids["mask"]] * min_gen_len + list(suffix) + [ids["eos"]]
    pl = len(p)
    L0 = len(inp)
    max_tokens = min(max_tokens, L0 + max_gen_len - min_gen_len)         # L206
    x = np.array(inp + [ids["mask"]] * (max_tokens - L0))               # L207
    num_gen = min_gen_len
    budget = max_gen_len                                                 # L119
    eos, mask = ids["eos"], ids["mask"]
    for _ in range(steps):
        window = L0 - min_gen_len + num_gen                              # L211
        attn = np.zeros(len(x), bool)
        attn[:window] = True
        mask_index = (x == mask) & attn                                  # L215
        if not mask_index[:window].any():                                # L216
            break
        logits = shifted(forward(x[:window]))                           # L227-229
        logits = logits[mask_index[:window]]
        if window == max_tokens or budget == 0:                          # L233-234
            logits[:, expand_id] -= 1e9
        conf, x0 = sample_tokens(logits, temperature, top_p, None, alg)
        j = best(conf, 1)
        x0_ = np.full(len(x0), mask)
        x0_[j] = x0[j]
        x[mask_index] = x0_                                              # L256-258
        eos_idx = np.nonzero(x == eos)[0]                                # L266
        if len(eos_idx):
            first = eos_idx[0]
            replace = (np.arange(len(x)) >= first) & mask_index          # L273-276
            x[replace] = eos
        exp_idx = np.nonzero(x == expand_id)[0]                          # L288
        for idx in sorted(exp_idx.tolist(), reverse=True):
            x = np.concatenate([x[:idx], [mask, mask], x[idx + 1:]])     # L292-296
            num_gen += 1
            budget -= 1
            if trace is not None:
                trace["expand"] = trace.get("expand", 0) + 1
            if len(x) > max_tokens:
                x = x[:max_tokens]
        # x keeps max_tokens positions (L300-301, L312), so the step's
        # mask_index still lines up with it, as upstream uses it.
        del_idx = np.nonzero((x == eos) & mask_index)[0]
        for idx in sorted(del_idx.tolist(), reverse=True):               # L305-314
            x = np.concatenate([x[:idx], x[idx + 1:], [mask]])
            num_gen -= 1
            if trace is not None:
                trace["delete"] = trace.get("delete", 0) + 1
    return [int(t) for t in x[pl:pl + num_gen]]


# ---- Dream's schedule (CoDA) -------------------------------------------------------------

def torch_linspace_f32(start, end, n):
    """torch.linspace(start, end, n) in float32 as ATen computes it
    (RangeFactoriesKernel: start + step*i for the first half, end -
    step*(n-1-i) for the second)."""
    start, end = np.float32(start), np.float32(end)
    step = (end - start) / np.float32(n - 1)
    half = n // 2
    out = np.empty(n, np.float32)
    for i in range(n):
        out[i] = start + step * np.float32(i) if i < half else end - step * np.float32(n - i - 1)
    return out


def dream_schedule(forward, ids, prefix, suffix, m, steps=None, eps=1e-3, temperature=0.0,
                   top_p=0.9, alg="entropy", bos=None):
    """CoDA _sample() L412-540 with steps = canvas (the evals set
    diffusion_steps = max_new_tokens), alg_temp 0, on prefix masks suffix."""
    x = np.array(([bos] if bos is not None else []) + list(prefix) + [ids["mask"]] * m +
                 list(suffix))
    c0 = len(x) - m - len(suffix)
    S = steps or m
    ts = torch_linspace_f32(1.0, eps, S + 1)                              # L450
    for i in range(S):
        mask_index = x == ids["mask"]
        if not mask_index.any():
            continue  # upstream runs the pass and transfers nothing
        logits = shifted(forward(x))                                     # L455-457
        mask_logits = logits[mask_index]
        t, s = ts[i], ts[i + 1]
        conf, x0 = sample_tokens(mask_logits, temperature, top_p, None, alg)
        num_mask = np.float32(mask_index.sum()) / np.float32(1)          # L507
        k = int(num_mask * (np.float32(1) - s / t)) if i < S - 1 else int(num_mask)
        full = np.full(len(x), -np.inf)
        full[mask_index] = conf
        if k > 0:
            sel = best(full, k)                                          # L519-521
            x_ = np.full(len(x), ids["mask"])
            x_[mask_index] = x0
            x[sel] = x_[sel]
    return [int(t) for t in x[c0:c0 + m]]


# ---- Open-dLLM p2 -------------------------------------------------------------------------

def p2(forward, ids, prefix, suffix, m, steps=64, temperature=0.0, top_p=0.95, bos=None):
    """_mdm_sample() with alg p2, L166-277, on eval_infill.py's
    prefix + masks + suffix (L71-80)."""
    mask = ids["mask"]
    x = np.array(([bos] if bos is not None else []) + list(prefix) + [mask] * m +
                 list(suffix))
    c0 = len(x) - m - len(suffix)
    fix = x != mask                                                       # L195
    for i in range(steps):
        mask_index = x == mask
        if not mask_index.any():                                         # L205
            break
        logits = shifted(forward(x))
        kappa = (i + 1) / steps                                          # L230
        conf, x0 = sample_tokens(logits, temperature, top_p, None, "p2")
        full = conf.copy()
        full[fix] = np.inf                                               # L242
        npos = int((~fix).sum())
        nt = int(np.floor(np.float32(npos) * np.float32(1.0 - kappa)))   # L251
        nt = max(0, min(nt, npos))
        order = np.argsort(full, kind="stable")                          # L257
        to_mask = np.zeros(len(x), bool)
        to_mask[order[:nt]] = True
        x[to_mask] = mask                                                # L272
        keep = mask_index & ~to_mask
        x[keep] = x0[keep]                                               # L275-276
    return [int(t) for t in x[c0:c0 + m]]


# ---- LLaDA --------------------------------------------------------------------------------

def llada(forward, ids, prefix, suffix, m, steps=None, block_length=32, bos=None):
    """generate() L43-120 (temperature 0, cfg 0, low_confidence), with the
    canvas between prefix and suffix instead of at the end; steps = canvas
    (chat.py). The logits are not shifted."""
    mask = ids["mask"]
    x = np.array(([bos] if bos is not None else []) + list(prefix) + [mask] * m +
                 list(suffix))
    c0 = len(x) - m - len(suffix)
    assert m % block_length == 0                                          # L68
    nb = m // block_length
    steps = steps or m
    assert steps % nb == 0                                                # L71
    s_b = steps // nb
    for b in range(nb):
        bm = x[c0 + b * block_length:c0 + (b + 1) * block_length] == mask
        n = int(bm.sum())
        k_all = [n // s_b + (1 if j < n % s_b else 0) for j in range(s_b)]  # L22-40
        for j in range(s_b):
            mask_index = x == mask
            logits = forward(x)
            x0 = np.argmax(logits, axis=-1)                              # L94-95 (T = 0)
            p = softmax(logits)                                          # L101
            x0_p = p[np.arange(len(x)), x0]
            x0_p[c0 + (b + 1) * block_length:] = -np.inf                 # L109
            x0 = np.where(mask_index, x0, x)
            conf = np.where(mask_index, x0_p, -np.inf)
            sel = best(conf, k_all[j])                                   # L116
            x[sel] = x0[sel]
    return [int(t) for t in x[c0:c0 + m]]


# ---- ending and cleaning (sculpt's rule, model/family.c) -----------------------------------

def middle(canvas, end_ids, drop):
    """The canvas up to its first end token, without the ids in drop."""
    out = []
    for t in canvas:
        if t in end_ids:
            break
        if t not in drop:
            out.append(t)
    return out

#!/usr/bin/env python3
"""Train the bidirectional Qwen2-family diffusion LM on the corpus, then export.

Objective (LLaDA / MDLM masked diffusion; Dream/Open-dCoder shift): mask
tokens with probability t ~ U(t_min, 1), cross-entropy on the masked tokens
weighted by 1/t; the logits row i-1 predicts token i. Each step has fixed
counts of four kinds of sequence (batches.py, built on the device):
plain windows masked at one rate, multi-hole infill (4-16 holes: whole
lines, 1-3 lines or the rest of a line, each padded with EOS to its canvas
as sculpt lays it out and masked at its own rate), the same on records of
repository snippets in the LSP's prompt format followed by a window of the
file (holes in the window only), and causal next-token sequences on the
same weights. The loss is static-shape (K target rows per bidirectional
sequence, gathered; the logits made chunk by chunk: model.rows_loss).
Optimizers: Muon for the hidden matrices, AdamW for embeddings, norms and
biases (recipe.py). The learning rate follows the wall clock
(warmup-stable-decay), so a fixed time budget gives a complete schedule on
any hardware. On a GPU: bf16 activations, regional torch.compile and the
preflight checks before the budget starts; MFU in the log and in
training.json.

    train.py --corpus DIR --tokenizer tokenizer.json --out CKPT_DIR \
             --preset cpu --time-budget 900
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import batches  # noqa: E402
import bpe  # noqa: E402
import export  # noqa: E402
import recipe  # noqa: E402
import tokcache  # noqa: E402
from model import DiffusionLM, default_config  # noqa: E402

from presets import PRESETS  # noqa: E402


def tokenize_corpus(corpus_dir, split, tok, cache_dir, log=print):
    """Token stream of a split: files joined by EOS, from the cache
    (tokcache.py: keyed by the corpus manifest and the tokenizer file's
    bytes, so one prepared elsewhere is found; the GPU box gets it made by
    `sculpt tokenize --jsonl`), else encoded here and cached."""
    return tokcache.stream_python(corpus_dir, split, tok, cache_dir, log)


def repo_split(corpus_dir, tok, cache_dir, log=print):
    """The repo split's stream and its records' (start, length, prompt
    tokens), or None when the corpus has none (corpus.py --repo-records 0,
    or an older corpus)."""
    path = os.path.join(corpus_dir, "repo.jsonl")
    if not os.path.exists(path):
        return None
    pb = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                pb.append(len(r["text"][:r["prompt_chars"]].encode()))
    s = tokcache.stream_python(corpus_dir, "repo", tok, cache_dir, log)
    tl = np.array([len(tok.token_bytes(i)) for i in range(tok.n_vocab)], dtype=np.int64)
    rec = batches.record_bounds(s, tok.id_of("<|endoftext|>"), pb, tl)
    log(f"repo split: {len(rec[0])} of {len(pb)} records usable, {len(s)} tokens")
    return s, rec


def parse_mix(text, B):
    """'plain=24,infill=56,repo=24,causal=24' (counts, or shares scaled to B)."""
    kv = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        if k.strip() not in ("plain", "infill", "repo", "causal"):
            raise SystemExit(f"--mix: unknown kind {k!r}")
        kv[k.strip()] = float(v)
    tot = sum(kv.values())
    out = {k: int(round(v * B / tot)) for k, v in kv.items()}
    out[max(out, key=out.get)] += B - sum(out.values())
    return out


def eval_loss(model, hb, seed, n_batches, amp):
    """Held-out (masked CE per masked token, causal CE per token), the same
    batches every time (the generator reseeded)."""
    model.eval()
    hb.g.manual_seed(seed)
    ce = n = cce = cn = 0.0
    with torch.no_grad():
        for _ in range(n_batches):
            b = hb.batch()
            with amp():
                _, c1, n1, c2, n2 = batches.step_loss(model, b)
            ce, n, cce, cn = ce + float(c1), n + float(n1), cce + float(c2), cn + float(n2)
    model.train()
    return ce / max(n, 1), (cce / cn if cn else None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True, help="checkpoint folder to export to")
    ap.add_argument("--cache", default=None, help="folder for tokenized streams")
    ap.add_argument("--preset", default="cpu", choices=sorted(PRESETS))
    ap.add_argument("--time-budget", type=float, default=900, help="seconds of training")
    ap.add_argument("--deadline", type=float, default=0,
                    help="a Unix time by which the checkpoint must be written: the budget "
                         "shrinks to fit what compiling and loading took")
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seq", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0)
    ap.add_argument("--mix", default=None,
                    help="sequences a step by kind, e.g. plain=24,infill=56,repo=24,causal=24")
    ap.add_argument("--rows", type=int, default=0,
                    help="loss rows per bidirectional sequence (K; default seq/4)")
    ap.add_argument("--no-muon", action="store_true", help="AdamW for every parameter")
    ap.add_argument("--muon-lr-mult", type=float, default=1.0)
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto",
                    help="regional torch.compile (auto: on a GPU)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--eval-every", type=float, default=60, help="seconds between held-out evals")
    ap.add_argument("--init-from", default=None,
                    help="start from an exported checkpoint (same tokenizer and preset)")
    ap.add_argument("--log", default=None, help="also append log lines to this file")
    a = ap.parse_args(argv)

    log = tokcache.make_log(a.log)
    t_start = time.time()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(dev)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    p = dict(PRESETS[a.preset])
    seq, B, lr = a.seq or p.pop("seq"), a.batch or p.pop("batch"), a.lr or p.pop("lr")
    mix_default = p.pop("mix", "plain=20,infill=45,repo=15,causal=20")
    for k in ("seq", "batch", "lr"):
        p.pop(k, None)
    K = a.rows or max(1, seq // 4)
    mix = parse_mix(a.mix or mix_default, B)
    tok = bpe.Tokenizer(a.tokenizer)
    tok.path = a.tokenizer
    cfg = default_config(vocab_size=tok.n_vocab, max_position_embeddings=seq, **p)
    train_s = tokenize_corpus(a.corpus, "train", tok, a.cache, log)
    held_s = tokenize_corpus(a.corpus, "heldout", tok, a.cache, log)
    if len(held_s) < 2 * seq:
        log("held-out split too small; evaluating on the tail of the training stream")
        held_s = train_s[-max(4 * seq, len(train_s) // 20):]
    repo = repo_split(a.corpus, tok, a.cache, log)
    model = DiffusionLM(cfg, seed=a.seed)
    if a.init_from:
        prev, _ = export.load(a.init_from)
        model.load_state_dict(prev.state_dict())
        log(f"initialized from {a.init_from}")
    model = model.to(device)
    if cuda:
        model.act_dtype = torch.bfloat16

    def amp():
        if cuda:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return torch.autocast("cpu", enabled=False)

    nl = batches.newline_table(tok)
    minlen = 4 * seq + 4 + batches.MAX_LINES * 4
    train_S = batches.Streams(train_s, nl, device, minlen)
    held_S = batches.Streams(held_s, nl, device, minlen)
    repo_S = batches.Streams(repo[0], nl, device, 0, records=repo[1]) if repo else None
    tb = batches.DeviceBatches(train_S, tok, seq, device, a.seed, mix, K, repo=repo_S)
    hmix = dict(tb.mix)
    hmix["infill"] += hmix.pop("repo", 0)
    hb = batches.DeviceBatches(held_S, tok, seq, device, a.seed + 1, hmix, K)
    opts, muon_kind = recipe.make_optimizers(model, lr, muon=not a.no_muon,
                                             muon_lr=lr * a.muon_lr_mult, log=log)
    n_bidir = tb.mix["plain"] + tb.mix["infill"] + tb.mix["repo"]
    flops_step = recipe.step_flops(cfg, seq, n_bidir, tb.mix["causal"], K)
    dname = torch.cuda.get_device_name(0) if cuda else f"cpu x{torch.get_num_threads()} threads"
    peak, peak_src = recipe.peak_flops(dname if cuda else "")
    log(f"model {model.n_params() / 1e6:.2f}M params, config {cfg}, device {dname}, "
        f"seq {seq} batch {B} {tb.mix} rows {K} lr {lr}; optimizers AdamW + Muon ({muon_kind}); "
        f"attention {batches.M.ATTENTION}; train {len(train_s)} tokens, heldout {len(held_s)}; "
        f"{flops_step / 1e12:.3f} TFLOP a step")

    # Before the clock: compile (and check it against eager), preflight.
    preflight = {}
    compiled = "eager"
    if a.compile == "on" or (a.compile == "auto" and cuda):
        b0 = tb.batch()
        probe = b0["inp"] if b0["inp"] is not None else b0["cx"]
        with torch.no_grad(), amp():
            ref = model.hidden(probe[:2]).float()
        compiled = recipe.compile_layers(model, log)
        tc = time.time()
        try:
            with amp():  # both graphs: bidirectional and causal, forward and backward
                loss = batches.step_loss(model, b0)[0]
            loss.backward()
            for o in opts:
                o.zero_grad(set_to_none=True)
            with torch.no_grad(), amp():
                got = model.hidden(probe[:2]).float()
                preflight["compiled_vs_eager_rel"] = recipe._rel(got, ref)
            log(f"{compiled}: compiled in {time.time() - tc:.1f}s (before the budget); "
                f"hidden states vs eager rel {preflight['compiled_vs_eager_rel']:.2e}")
        except Exception as e:  # noqa: BLE001 - eager is the safe way on
            recipe.uncompile_layers(model)
            for o in opts:
                o.zero_grad(set_to_none=True)
            compiled = f"eager (compile failed: {type(e).__name__}: {str(e)[:200]})"
            log(compiled)
    if cuda or os.environ.get("SCULPT_PREFLIGHT") == "1":
        try:
            preflight.update(recipe.preflight(model, tb, device, amp, log))
        except Exception as e:  # noqa: BLE001 - reported; training goes on
            preflight["error"] = f"{type(e).__name__}: {e}"
            log(f"preflight failed: {preflight['error']}")
    history = []
    t0 = recipe.timer()
    budget = a.time_budget
    if a.deadline:
        # Left for the final evaluation and the export.
        budget = max(10.0, min(budget, a.deadline - t0 - 20))
        if budget < a.time_budget:
            log(f"budget {a.time_budget:.0f}s cut to {budget:.0f}s by the deadline")
    log(f"setup took {t0 - t_start:.1f}s; training for {budget:.0f}s")
    last_eval = t0
    step = 0
    ema = None
    acc = torch.zeros(4, device=device)  # masked CE sum, rows, causal CE sum, rows
    while True:
        el = time.time() - t0
        frac = max(el / budget, step / a.max_steps if a.max_steps else 0)
        if frac >= 1 or (a.deadline and time.time() > a.deadline - 20):
            break
        recipe.set_lr(opts, recipe.wsd(frac))
        b = tb.batch()
        with amp():
            loss, ce, n, cce, cn = batches.step_loss(model, b)
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for o in opts:
            o.step()
        step += 1
        # Kept on the device: a float() here would make the host wait.
        # Detached: ce is an output of the loss's graph, and acc += ce
        # chained every step's graph onto acc for good (on the CPU preset the
        # process grew by 13 MB a second and slowed by a third until the
        # machine ran out of memory at 35 minutes).
        acc += torch.stack([ce.float(), n.float(), cce.float(), cn.float()]).detach()
        pt = loss.detach().float()
        ema = pt if ema is None else 0.98 * ema + 0.02 * pt
        if time.time() - last_eval >= a.eval_every:
            s = acc.tolist()
            acc.zero_()
            hl, hc = eval_loss(model, hb, a.seed + 1, 4, amp)
            now = recipe.timer()
            el = now - t0
            tps = step * B * seq / max(el, 1e-9)
            mfu = step * flops_step / el / peak if peak else None
            history.append(dict(step=step, seconds=round(el, 1), train_loss=round(float(ema), 4),
                                train_masked_ce=round(s[0] / max(s[1], 1), 4),
                                train_causal_ce=round(s[2] / s[3], 4) if s[3] else None,
                                heldout_masked_ce=round(hl, 4),
                                heldout_causal_ce=round(hc, 4) if hc else None,
                                tokens_per_s=round(tps), mfu=round(mfu, 4) if mfu else None))
            log(f"step {step} {el:.0f}s lr x{recipe.wsd(frac):.2f} loss {float(ema):.3f} "
                f"masked ce {s[0] / max(s[1], 1):.3f} heldout {hl:.3f}"
                + (f" causal {hc:.3f}" if hc else "")
                + f" ({tps:.0f} tok/s" + (f", MFU {100 * mfu:.1f}%)" if mfu else ")"))
            last_eval = recipe.timer()
            t0 += last_eval - now  # the evaluation is not training time
    if acc.requires_grad:  # the smoke run (tests/train/test_smoke.py) fails on it
        raise RuntimeError("train: the loss statistics hold an autograd graph that grows "
                           "every step (detach what is accumulated)")
    el = recipe.timer() - t0
    tokens = step * B * seq
    hl, hc = eval_loss(model, hb, a.seed + 1, 8, amp)
    mfu = step * flops_step / el / peak if peak and el > 0 else None
    log(f"done: {step} steps, {el:.0f}s, {tokens} tokens ({tokens / max(el, 1e-9):.0f} tok/s"
        + (f", MFU {100 * mfu:.1f}% of {peak / 1e12:.0f} TFLOP/s {peak_src}" if mfu else "")
        + f"), heldout masked ce {hl:.3f}" + (f", causal ce {hc:.3f}" if hc else ""))
    meta = dict(preset=a.preset, init_from=a.init_from, config=cfg, params=model.n_params(),
                steps=step, seconds=round(el, 1), tokens=tokens, batch=B, seq=seq, lr=lr,
                mix=tb.mix, loss_rows=K, optimizers=f"AdamW + Muon ({muon_kind})"
                if muon_kind != "none" else "AdamW",
                muon_lr_mult=a.muon_lr_mult, schedule="warmup-stable-decay on the wall clock "
                "(3% warmup, 25% linear decay to 0)",
                compile=compiled, attention=batches.M.ATTENTION,
                activations="bf16" if cuda else "float32",
                device=dev, device_name=dname, torch=torch.__version__,
                flops_per_step=flops_step, tokens_per_s=round(tokens / max(el, 1e-9)),
                mfu=round(mfu, 4) if mfu else None, peak_flops=peak, peak_source=peak_src,
                preflight=preflight, setup_seconds=round(t0 - t_start, 1),
                heldout_masked_ce=round(hl, 4), heldout_causal_ce=round(hc, 4) if hc else None,
                history=history, train_tokens_available=int(len(train_s)),
                repo_records=int(len(repo[1][0])) if repo else 0, seed=a.seed)
    model = model.float().cpu()
    model.act_dtype = torch.float32
    files = export.export(model, a.tokenizer, a.out, extra_meta=meta)
    log(f"exported {files} -> {a.out}")
    return meta


if __name__ == "__main__":
    main()

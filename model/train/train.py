#!/usr/bin/env python3
"""Train the bidirectional Qwen2-family diffusion LM on the corpus, then export.

Objective (LLaDA / MDLM masked diffusion; Dream/Open-dCoder shift): per
sequence draw t ~ U(t_min, 1), mask each maskable token with probability t,
cross-entropy on the masked tokens weighted by 1/t; the logits row i-1
predicts token i. Two kinds of sequences, all of length --seq:
  * plain:  [BOS] window of the token stream (files joined by EOS); every
    token but BOS may be masked.
  * infill: [BOS] prefix  span EOS..EOS  suffix [EOS] — exactly the canvas
    sculpt builds for `complete` ([BOS] prefix [MASK]*m suffix [EOS]), with
    the middle padded by EOS to the canvas length m, so the model learns
    where a middle ends. Only canvas positions are masked. Spans are whole
    lines (1..8), the rest of a line, or random token runs.
The learning rate follows the wall clock (warmup, then cosine to 10%), so a
fixed time budget gives a complete schedule on any hardware.

    train.py --corpus DIR --tokenizer tokenizer.json --out CKPT_DIR \
             --preset cpu --time-budget 900
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import export  # noqa: E402
import tokcache  # noqa: E402
from model import DiffusionLM, default_config, diffusion_loss  # noqa: E402

from presets import PRESETS  # noqa: E402


def tokenize_corpus(corpus_dir, split, tok, cache_dir, log=print):
    """Token stream of a split: files joined by EOS, from the cache
    (tokcache.py: keyed by the corpus manifest and the tokenizer file's
    bytes, so one prepared elsewhere is found; the GPU box gets it made by
    `sculpt tokenize --jsonl`), else encoded here and cached."""
    return tokcache.stream_python(corpus_dir, split, tok, cache_dir, log)


class Batcher:
    def __init__(self, stream, tok, seq, seed, infill_frac=0.5, max_canvas=64):
        if len(stream) < 4 * seq + 4:  # a tiny held-out split: repeat it
            stream = np.tile(stream, (4 * seq + 4) // max(1, len(stream)) + 1)
        self.s = stream
        self.seq = seq
        self.rng = np.random.default_rng(seed)
        self.bos = tok.id_of("<|beginoftext|>")
        self.eos = tok.id_of("<|endoftext|>")
        self.mask = tok.id_of("<|mask|>")
        self.infill_frac = infill_frac
        self.max_canvas = max_canvas
        nl = np.zeros(tok.n_vocab, dtype=bool)
        for i in range(tok.n_vocab):
            nl[i] = tok.token_bytes(i).endswith(b"\n")
        nl[self.eos] = True
        # Starts of lines: the token after one that ends with a newline.
        self.line_starts = np.nonzero(nl[stream])[0] + 1
        self.line_starts = self.line_starts[self.line_starts < len(stream)]

    def _span(self):
        """(A, s): absolute start and length of the middle."""
        r, n, M = self.rng, len(self.s), self.max_canvas
        mode = r.random()
        ls = self.line_starts
        if mode < 0.55 and len(ls) > 10:  # whole lines: 1 (half the time) .. 8
            k = 1 if r.random() < 0.5 else int(r.integers(2, 9))
            j = int(r.integers(0, len(ls) - k - 1))
            A, E = ls[j], ls[j + k]
            if 0 < E - A <= M:
                return int(A), int(E - A)
        if mode < 0.8 and len(ls) > 10:  # from inside a line to its end
            j = int(r.integers(1, len(ls) - 1))
            E = ls[j]
            A = int(r.integers(ls[j - 1], E)) if E > ls[j - 1] else E - 1
            if 0 < E - A <= M:
                return int(A), int(E - A)
        s = int(r.integers(1, 33))
        return int(r.integers(1, n - s - 1)), s

    def example(self):
        T, r = self.seq, self.rng
        x = np.empty(T, dtype=np.int64)
        maskable = np.zeros(T, dtype=bool)
        if r.random() >= self.infill_frac:
            o = int(r.integers(0, len(self.s) - T))
            x[0] = self.bos
            x[1:] = self.s[o:o + T - 1]
            maskable[1:] = True
            return x, maskable
        while True:
            A, s = self._span()
            m = max(s, int(r.choice([s + int(r.integers(0, 9)), 16, 32, 32, 48, 64])))
            m = min(m, self.max_canvas)
            if m < s:
                continue
            C = T - 2 - (m - s)  # prefix + span + suffix tokens
            room = C - s
            sfx = room // 4 if r.random() < 0.4 else int(r.integers(0, room + 1))
            pre = room - sfx
            if A - pre < 0 or A + s + sfx > len(self.s):
                continue
            x[0] = self.bos
            x[1:1 + pre] = self.s[A - pre:A]
            c0 = 1 + pre
            x[c0:c0 + s] = self.s[A:A + s]
            x[c0 + s:c0 + m] = self.eos
            x[c0 + m:c0 + m + sfx] = self.s[A + s:A + s + sfx]
            x[T - 1] = self.eos
            maskable[c0:c0 + m] = True
            return x, maskable

    def batch(self, B, t_min=0.02):
        xs, ms = zip(*(self.example() for _ in range(B)))
        x = torch.from_numpy(np.stack(xs))
        maskable = torch.from_numpy(np.stack(ms))
        t = torch.from_numpy(self.rng.uniform(t_min, 1.0, size=B).astype(np.float32))
        u = torch.from_numpy(self.rng.random(x.shape).astype(np.float32))
        masked = (u < t[:, None]) & maskable
        # At least one masked position per sequence: the first maskable one.
        none = ~masked.any(1)
        if none.any():
            first = maskable.float().argmax(1)
            masked[none, first[none]] = True
        inp = torch.where(masked, torch.full_like(x, self.mask), x)
        return inp, x, masked, maskable, t


def lr_at(frac, base, warm=0.03):
    if frac < warm:
        return base * frac / warm
    p = min(1.0, (frac - warm) / (1 - warm))
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


@torch.no_grad()
def eval_loss(model, batcher, device, n_batches, B, amp):
    model.eval()
    tot = tot_tok = 0.0
    for _ in range(n_batches):
        inp, x, masked, maskable, t = (v.to(device) for v in batcher.batch(B))
        with amp():
            _, per_tok = diffusion_loss(model, inp, x, masked, t, maskable)
        tot += float(per_tok)
        tot_tok += 1
    model.train()
    return tot / max(1, tot_tok)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True, help="checkpoint folder to export to")
    ap.add_argument("--cache", default=None, help="folder for tokenized streams")
    ap.add_argument("--preset", default="cpu", choices=sorted(PRESETS))
    ap.add_argument("--time-budget", type=float, default=900, help="seconds of training")
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seq", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--eval-every", type=float, default=60, help="seconds between held-out evals")
    ap.add_argument("--init-from", default=None,
                    help="start from an exported checkpoint (same tokenizer and preset)")
    ap.add_argument("--log", default=None, help="also append log lines to this file")
    a = ap.parse_args(argv)

    log = tokcache.make_log(a.log)

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(dev)
    p = dict(PRESETS[a.preset])
    seq, B, lr = a.seq or p.pop("seq"), a.batch or p.pop("batch"), a.lr or p.pop("lr")
    p.pop("seq", None), p.pop("batch", None), p.pop("lr", None)
    tok = bpe.Tokenizer(a.tokenizer)
    tok.path = a.tokenizer
    cfg = default_config(vocab_size=tok.n_vocab, max_position_embeddings=seq, **p)
    train_s = tokenize_corpus(a.corpus, "train", tok, a.cache, log)
    held_s = tokenize_corpus(a.corpus, "heldout", tok, a.cache, log)
    if len(held_s) < 2 * seq:
        log("held-out split too small; evaluating on the tail of the training stream")
        held_s = train_s[-max(4 * seq, len(train_s) // 20):]
    model = DiffusionLM(cfg, seed=a.seed)
    if a.init_from:
        prev, _ = export.load(a.init_from)
        model.load_state_dict(prev.state_dict())
        log(f"initialized from {a.init_from}")
    model = model.to(device)
    log(f"model {model.n_params() / 1e6:.2f}M params, config {cfg}, device {dev}, "
        f"seq {seq} batch {B} lr {lr}; train {len(train_s)} tokens, heldout {len(held_s)}")
    decay = [q for n, q in model.named_parameters() if q.dim() >= 2]
    no_decay = [q for n, q in model.named_parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.98), eps=1e-8)
    use_amp = dev == "cuda"

    def amp():
        if use_amp:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return torch.autocast("cpu", enabled=False)

    tb = Batcher(train_s, tok, seq, a.seed)
    hb_seed = a.seed + 1
    history = []
    t0 = time.time()
    last_eval = t0
    step = 0
    tokens = 0
    ema = None
    while True:
        el = time.time() - t0
        frac = el / a.time_budget
        if frac >= 1 or (a.max_steps and step >= a.max_steps):
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(max(frac, step / a.max_steps if a.max_steps else 0), lr)
        inp, x, masked, maskable, t = (v.to(device, non_blocking=True) for v in tb.batch(B))
        with amp():
            loss, per_tok = diffusion_loss(model, inp, x, masked, t, maskable)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += B * seq
        # Kept on the device: a float() here would make the host wait for every
        # step, and the next batch is built on the host while the GPU works.
        pt = per_tok.detach().float()
        ema = pt if ema is None else 0.98 * ema + 0.02 * pt
        if time.time() - last_eval >= a.eval_every:
            ema = float(ema)
            hl = eval_loss(model, Batcher(held_s, tok, seq, hb_seed), device, 4, B, amp)
            last_eval = time.time()
            history.append(dict(step=step, seconds=round(last_eval - t0, 1),
                                train_masked_ce=round(ema, 4), heldout_masked_ce=round(hl, 4)))
            log(f"step {step} {el:.0f}s lr {opt.param_groups[0]['lr']:.2e} "
                f"train ce {ema:.3f} heldout ce {hl:.3f} ({tokens / max(el, 1e-9):.0f} tok/s)")
    el = time.time() - t0
    hl = eval_loss(model, Batcher(held_s, tok, seq, hb_seed), device, 8, B, amp)
    log(f"done: {step} steps, {el:.0f}s, {tokens} tokens, heldout masked ce {hl:.3f}")
    meta = dict(preset=a.preset, init_from=a.init_from, config=cfg, params=model.n_params(), steps=step,
                seconds=round(el, 1), tokens=tokens, batch=B, seq=seq, lr=lr, device=dev,
                device_name=(torch.cuda.get_device_name(0) if dev == "cuda" else
                             f"cpu x{torch.get_num_threads()} threads"),
                torch=torch.__version__, heldout_masked_ce=round(hl, 4), history=history,
                train_tokens_available=int(len(train_s)), seed=a.seed)
    model = model.float().cpu()
    files = export.export(model, a.tokenizer, a.out, extra_meta=meta)
    log(f"exported {files} -> {a.out}")
    return meta


if __name__ == "__main__":
    main()

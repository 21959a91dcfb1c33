#!/usr/bin/env python3
"""Stand-in for model/train/train.py in tools/gpu_rehearse.sh's chroot,
which has no torch (the GPU machine has it; this machine's Debian torch
cannot run without Debian's libraries). NOT a trainer: the weights are
random. It checks what train.py would meet there and writes what train.py
would leave behind, so everything around the training is rehearsed:

  * the corpus and tokenizer train.py is given, and the token cache under
    the name train.py looks up (tokcache.stream_python, the very function
    train.py calls): a cache miss fails, since on the GPU machine it would
    mean a Python BPE pass on device time;
  * the checkpoint at the preset's real size (presets.py: for "gpu", 14.9M
    parameters in bf16, two shards), written by export.write_checkpoint,
    the writer train.py uses, with a training.json saying it is a stand-in;
  * the time budget (cut by --deadline as train.py cuts it), slept, so the
    session's timing is rehearsed; the repo split's cache when the corpus
    has one.

Same command line as train.py (the flags run_gpu.sh passes).
"""
import argparse
import os
import sys
import time

import numpy as np

TRAIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "model", "train")
sys.path.insert(0, os.environ.get("SCULPT_TRAIN_DIR", TRAIN))

import bpe  # noqa: E402
import export  # noqa: E402
import presets  # noqa: E402
import tokcache  # noqa: E402


def bf16(a):
    """float32 -> bf16 little-endian bytes, rounded to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()


def main():
    ap = argparse.ArgumentParser()
    for f in ("--corpus", "--tokenizer", "--out"):
        ap.add_argument(f, required=True)
    for f in ("--cache", "--preset", "--device", "--log", "--init-from"):
        ap.add_argument(f)
    for f in ("--time-budget", "--eval-every", "--lr", "--deadline", "--muon-lr-mult"):
        ap.add_argument(f, type=float, default=0)
    for f in ("--max-steps", "--batch", "--seq", "--threads", "--seed", "--rows"):
        ap.add_argument(f, type=int, default=0)
    ap.add_argument("--mix")
    ap.add_argument("--compile")
    ap.add_argument("--no-muon", action="store_true")
    a = ap.parse_args()
    log = tokcache.make_log(a.log, "[stand-in] ")

    tok = bpe.Tokenizer(a.tokenizer)
    tok.path = a.tokenizer
    streams = {}
    splits = ("train", "heldout") + (("repo",) if os.path.exists(os.path.join(a.corpus, "repo.jsonl"))
                                     else ())
    for split in splits:
        def miss(m, split=split):
            log(f"CACHE MISS for {split} ({m}): train.py would tokenize in Python on device time")
            sys.exit(1)
        streams[split] = tokcache.stream_python(a.corpus, split, tok, a.cache, log=miss)
        log(f"{split}: {len(streams[split])} tokens from the cache "
            f"{tokcache.cache_name(a.corpus, split, a.tokenizer)}")
    cfg = presets.preset_config(a.preset or "cpu", tok.n_vocab)
    if int(streams["train"].max()) >= tok.n_vocab:
        log(f"token id {int(streams['train'].max())} outside the vocabulary ({tok.n_vocab})")
        sys.exit(1)
    log(f"preset {a.preset}: {presets.n_params(cfg) / 1e6:.2f}M params, context "
        f"{cfg['max_position_embeddings']}; sleeping the {a.time_budget:.0f}s budget")
    budget = a.time_budget
    if a.deadline:  # as train.py: the checkpoint written by the deadline
        budget = max(0.0, min(budget, a.deadline - time.time() - 20))
    time.sleep(budget)
    rng = np.random.default_rng(a.seed or 1234)
    items = [(n, s, bf16(rng.standard_normal(s).astype(np.float32) * 0.02))
             for n, s in presets.tensor_shapes(cfg)]
    meta = dict(standin="tools/rehearse/train_standin.py: random weights, NOT trained "
                        "(the CPU rehearsal has no torch)",
                preset=a.preset, config=cfg, params=presets.n_params(cfg), steps=0,
                seconds=a.time_budget, train_tokens_available=int(len(streams["train"])),
                heldout_tokens=int(len(streams["heldout"])))
    files = export.write_checkpoint(cfg, items, a.tokenizer, a.out, extra_meta=meta)
    log(f"exported {files} -> {a.out}")


if __name__ == "__main__":
    main()

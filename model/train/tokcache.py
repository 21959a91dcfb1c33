#!/usr/bin/env python3
"""The token cache train.py reads: one .npy stream per corpus split (every
file's tokens followed by <|endoftext|>, uint16 when the vocabulary fits),
named by the corpus manifest's hash and a hash of the tokenizer file's
bytes, so a cache made on one machine is found on another.

No torch here: the GPU session's unpacking (carry.py) and the CPU rehearsal
use it where torch is absent or not yet needed. Three ways to fill it:
  * stream_python(): bpe.py's encoder, one process (train.py's fallback);
  * sculpt():        `sculpt tokenize --jsonl`, every core (the GPU box:
                     a few seconds for 300 MB);
  * python_pool():   bpe.py's encoder in a process pool, for a box where the
                     sculpt binary does not run.
All three give the same stream (tests/cli/test_tokenize_jsonl.py,
tests/train/test_carry.py).
"""
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402

EOS = "<|endoftext|>"


def make_log(path=None, tag=""):
    """A log function: '[HH:MM:SS] TAG message' printed and, with a path,
    appended to that file (train.py's log, and its rehearsal stand-in's)."""
    f = open(path, "a") if path else None

    def log(msg):
        line = f"[{time.strftime('%H:%M:%S')}] {tag}{msg}"
        print(line, flush=True)
        if f:
            f.write(line + "\n")
            f.flush()
    return log


def cache_name(corpus_dir, split, tokenizer_path):
    """'<split>-<corpus sha16>-<tokenizer sha16>.npy'."""
    with open(os.path.join(corpus_dir, "manifest.json")) as f:
        chash = json.load(f)["corpus_sha256"][:16]
    with open(tokenizer_path, "rb") as f:
        thash = hashlib.sha256(f.read()).hexdigest()[:16]
    return f"{split}-{chash}-{thash}.npy"


def save_atomic(path, arr):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + f".tmp{os.getpid()}.npy"
    np.save(tmp, arr)
    os.replace(tmp, path)


def as_stream(ids):
    return np.asarray(ids, dtype=np.uint16 if max(ids, default=0) < 65536 else np.int32)


def encode_jsonl(tok, path):
    """The ids of one JSON Lines file's texts, each followed by EOS."""
    eos = tok.id_of(EOS)
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.extend(tok.encode(json.loads(line)["text"]))
                out.append(eos)
    return out


def stream_python(corpus_dir, split, tok, cache_dir, log=print):
    """The split's stream from the cache, else encoded here (and cached)."""
    path = os.path.join(cache_dir, cache_name(corpus_dir, split, tok.path)) if cache_dir else None
    if path and os.path.exists(path):
        return np.load(path)
    t0 = time.time()
    arr = as_stream(encode_jsonl(tok, os.path.join(corpus_dir, f"{split}.jsonl")))
    log(f"tokenized {split}: {len(arr)} tokens in {time.time() - t0:.1f}s")
    if path:
        save_atomic(path, arr)
    return arr


def sculpt(bin_path, tokenizer_path, jsonl_files, out_npy, threads=0, env=None, log=print):
    """`sculpt tokenize --jsonl` over the files in order -> out_npy. Returns
    (ok, its stderr)."""
    cmd = [bin_path, "tokenize", "--tokenizer", tokenizer_path, "--jsonl", "--out", out_npy]
    if threads:
        cmd += ["--threads", str(threads)]
    try:
        p = subprocess.run(cmd + list(jsonl_files), capture_output=True, text=True, env=env,
                           timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    log(p.stderr.strip())
    return p.returncode == 0, p.stderr


def _pool_one(args):
    tok_path, path = args
    return as_stream(encode_jsonl(bpe.Tokenizer(tok_path), path)).astype(np.int32)


def python_pool(tokenizer_path, jsonl_files, out_npy, procs=0, log=print):
    """bpe.py's encoder over the files in a process pool, one file a task,
    concatenated in order -> out_npy."""
    from multiprocessing import Pool
    t0 = time.time()
    with Pool(procs or os.cpu_count() or 1) as pool:
        parts = pool.map(_pool_one, [(tokenizer_path, f) for f in jsonl_files])
    arr = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    arr = arr.astype(np.uint16 if arr.size == 0 or arr.max() < 65536 else np.int32)
    save_atomic(out_npy, arr)
    log(f"python pool: {len(arr)} tokens from {len(jsonl_files)} files in {time.time() - t0:.1f}s")
    return arr

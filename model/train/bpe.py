#!/usr/bin/env python3
"""Byte-level BPE: trainer, encoder/decoder, and tokenizer.json writer.

Written from the published descriptions, not copied:
  * GPT-2 byte-level alphabet (bytes_to_unicode: printable bytes map to
    themselves, the rest to U+0100.. in order) — openai/gpt-2 encoder.py.
  * Pre-tokenization by Qwen2's split regex (Qwen2 tokenizer.json
    pre_tokenizer, HF tokenizers Split behavior "Isolated").
  * Merges learned greedily by pair frequency (Sennrich et al. 2016), applied
    at encode time lowest rank first, as HF tokenizers' BPE model does.
  * tokenizer.json layout: HF tokenizers serialization (model BPE with vocab
    and "a b" merges, pre_tokenizer Sequence[Split, ByteLevel], decoder
    ByteLevel, added_tokens).

Python's `re` has no \\p{L}; we spell the Unicode classes out as explicit
code point ranges built from unicodedata, and \\s as PCRE2's UCP \\s set
(\\p{Z} plus \\h and \\v, PCRE2 pcre2pattern(3)), so the Python encoder
splits text exactly like PCRE2 (UTF+UCP) does with the pattern written into
tokenizer.json, up to Unicode-version differences.

    bpe.py train CORPUS_DIR OUT_DIR --vocab 4096 [--max-mb 8]
"""
import argparse
import heapq
import json
import os
import re
import sys
import unicodedata
from collections import Counter, defaultdict

# The pattern written into tokenizer.json (PCRE2 syntax), from Qwen2.
PCRE_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIALS = ["<|endoftext|>", "<|beginoftext|>", "<|mask|>"]


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_ENC = bytes_to_unicode()
BYTE_DEC = {c: b for b, c in BYTE_ENC.items()}


def _ranges(pred):
    out, start = [], None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            ok = False
        else:
            ok = pred(chr(cp))
        if ok and start is None:
            start = cp
        if not ok and start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                   for a, b in out)


_PY_RE = None


def py_pattern():
    """The PCRE pattern translated for Python's re (compiled once)."""
    global _PY_RE
    if _PY_RE is None:
        L = _ranges(lambda c: unicodedata.category(c)[0] == "L")
        N = _ranges(lambda c: unicodedata.category(c)[0] == "N")
        S = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u180e\u2000-\u200a\u2028\u2029"
             "\u202f\u205f\u3000")
        pat = (rf"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n{L}{N}]?[{L}]+|[{N}]"
               rf"| ?[^{S}{L}{N}]+[\r\n]*|[{S}]*[\r\n]+|[{S}]+(?![^{S}])|[{S}]+")
        _PY_RE = re.compile(pat)
    return _PY_RE


def pretokenize(text):
    return py_pattern().findall(text)


def to_byte_chars(piece):
    return "".join(BYTE_ENC[b] for b in piece.encode("utf-8"))


# ---- training ------------------------------------------------------------------


def train(texts, vocab_size, specials=SPECIALS, min_freq=2, log=print):
    """Returns (vocab {token: id}, merges [(a, b)]). Ids: 256 bytes (by byte
    value), then merges in order, then the special tokens."""
    words = Counter()
    for t in texts:
        words.update(pretokenize(t))
    wlist = [(list(to_byte_chars(w)), c) for w, c in words.items()]
    wlist.sort(key=lambda x: ("".join(x[0]), x[1]))  # deterministic order
    pair_count = defaultdict(int)
    where = defaultdict(set)
    for i, (sym, c) in enumerate(wlist):
        for a, b in zip(sym, sym[1:]):
            pair_count[(a, b)] += c
            where[(a, b)].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    n_merges = vocab_size - 256 - len(specials)
    merges = []
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        cur = pair_count.get(pair, 0)
        if cur != -negc:
            if cur > 0:
                heapq.heappush(heap, (-cur, pair))
            continue
        if cur < min_freq:
            break
        merges.append(pair)
        a, b = pair
        new = a + b
        touched = {}
        for i in sorted(where.pop(pair, ())):
            sym, c = wlist[i]
            j, out = 0, []
            changed = False
            while j < len(sym):
                if j + 1 < len(sym) and sym[j] == a and sym[j + 1] == b:
                    out.append(new)
                    j += 2
                    changed = True
                else:
                    out.append(sym[j])
                    j += 1
            if not changed:
                continue
            for p in zip(sym, sym[1:]):
                pair_count[p] -= c
                touched[p] = True
            for p in zip(out, out[1:]):
                pair_count[p] += c
                where[p].add(i)
                touched[p] = True
            wlist[i] = (out, c)
        pair_count.pop(pair, None)
        for p in touched:
            c = pair_count.get(p, 0)
            if c > 0 and p != pair:
                heapq.heappush(heap, (-c, p))
            elif c <= 0:
                pair_count.pop(p, None)
        if log and len(merges) % 1000 == 0:
            log(f"bpe: {len(merges)} merges")
    vocab = {BYTE_ENC[b]: b for b in range(256)}
    for a, b in merges:
        vocab[a + b] = len(vocab)
    for s in specials:
        vocab[s] = len(vocab)
    return vocab, merges


# ---- tokenizer.json ----------------------------------------------------------------


def tokenizer_json(vocab, merges, specials=SPECIALS):
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True} for s in specials]
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
          "use_regex": False}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PCRE_PATTERN}, "behavior": "Isolated",
             "invert": False}, bl]},
        "post_processor": None,
        "decoder": dict(bl),
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def save(path, vocab, merges, specials=SPECIALS):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges, specials), f, ensure_ascii=False)


class Tokenizer:
    """Encoder/decoder for a tokenizer.json written by save()."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        m = tj["model"]
        self.vocab = m["vocab"]
        self.inv = {i: t for t, i in self.vocab.items()}
        self.ranks = {tuple(s.split(" ")): r for r, s in enumerate(m["merges"])}
        self.added = {a["content"]: a["id"] for a in tj.get("added_tokens", [])}
        for t, i in self.added.items():
            self.inv[i] = t
        self.n_vocab = max(self.inv) + 1
        self._split = (re.compile("(" + "|".join(re.escape(t) for t in
                                                 sorted(self.added, key=len, reverse=True)) + ")")
                       if self.added else None)
        self._cache = {}

    def id_of(self, tok):
        return self.added.get(tok, self.vocab.get(tok))

    def _bpe(self, piece):
        ids = self._cache.get(piece)
        if ids is not None:
            return ids
        sym = list(to_byte_chars(piece))
        while len(sym) > 1:
            best, bi = None, -1
            for i in range(len(sym) - 1):
                r = self.ranks.get((sym[i], sym[i + 1]))
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            a, b = sym[bi], sym[bi + 1]
            out, j = [], 0
            while j < len(sym):  # merge every occurrence of this pair
                if j + 1 < len(sym) and sym[j] == a and sym[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(sym[j])
                    j += 1
            sym = out
        ids = [self.vocab[s] for s in sym]
        if len(self._cache) < 500_000:
            self._cache[piece] = ids
        return ids

    def encode(self, text):
        out = []
        parts = self._split.split(text) if self._split else [text]
        for k, part in enumerate(parts):
            if not part:
                continue
            if k % 2 == 1:
                out.append(self.added[part])
                continue
            for piece in pretokenize(part):
                out.extend(self._bpe(piece))
        return out

    def token_bytes(self, i):
        t = self.inv.get(i, "")
        if i in self.added.values():
            return t.encode()
        return bytes(BYTE_DEC[c] for c in t)

    def decode(self, ids, skip_special=True):
        specials = set(self.added.values())
        b = b"".join(self.token_bytes(i) for i in ids if not (skip_special and i in specials))
        return b.decode("utf-8", errors="replace")


def corpus_texts(corpus_dir, max_mb):
    """Deterministic training sample: train.jsonl in file order up to max_mb,
    taking files round-robin by language so each language is represented."""
    by_lang = defaultdict(list)
    with open(os.path.join(corpus_dir, "train.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_lang[r["lang"]].append(r["text"])
    texts, total, cap = [], 0, int(max_mb * 1e6)
    langs = sorted(by_lang)
    idx = {l: 0 for l in langs}
    while total < cap and any(idx[l] < len(by_lang[l]) for l in langs):
        for l in langs:
            if idx[l] < len(by_lang[l]):
                t = by_lang[l][idx[l]]
                idx[l] += 1
                texts.append(t)
                total += len(t)
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("corpus_dir")
    t.add_argument("out_dir")
    t.add_argument("--vocab", type=int, default=4096)
    t.add_argument("--max-mb", type=float, default=8.0)
    e = sub.add_parser("encode", help="encode stdin, print ids")
    e.add_argument("tokenizer_json")
    a = ap.parse_args()
    if a.cmd == "train":
        texts = corpus_texts(a.corpus_dir, a.max_mb)
        vocab, merges = train(texts, a.vocab)
        os.makedirs(a.out_dir, exist_ok=True)
        save(os.path.join(a.out_dir, "tokenizer.json"), vocab, merges)
        print(f"bpe: vocab {len(vocab)} ({len(merges)} merges) -> {a.out_dir}/tokenizer.json")
    else:
        tok = Tokenizer(a.tokenizer_json)
        print(" ".join(map(str, tok.encode(sys.stdin.read()))))


if __name__ == "__main__":
    main()

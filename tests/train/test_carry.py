"""model/train/carry.py: the GPU session's compressed corpus. pack cuts
train.jsonl into xz shards (in order, at line ends) and records the token
streams sculpt makes here; unpack decompresses them and tokenizes with
`sculpt tokenize --jsonl` into train.py's cache names, and the stream must
equal the Python encoder's on the original corpus. Without a working sculpt
it falls back to bpe.py in a process pool (same stream); a stream that
differs from the packed record is reported and fails. Needs numpy."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish, need_bin  # noqa: E402

BIN = need_bin()
try:
    import numpy as np
except ImportError:
    print("needs numpy (Debian python3-numpy); skipping")
    sys.exit(77)
sys.path.insert(0, os.path.join(SRC, "model", "train"))
import bpe  # noqa: E402
import tokcache  # noqa: E402

CARRY = os.path.join(SRC, "model", "train", "carry.py")
TOK = os.path.join(SRC, "model", "default", "tokenizer.json")


def carry(*args):
    p = subprocess.run([sys.executable, CARRY, *args], capture_output=True, text=True, timeout=300)
    print(p.stdout[-2000:], p.stderr[-2000:])
    return p


t = tempfile.mkdtemp(prefix="sculpt-carry-")
inp = os.path.join(t, "in")
os.makedirs(os.path.join(inp, "corpus"))
recs = []
for p in sorted(glob.glob(os.path.join(SRC, "tests", "data", "real", "*", "**", "*.*"), recursive=True)):
    if p.endswith((".py", ".c", ".h", ".go", ".ts")):
        recs.append({"path": p, "text": open(p, encoding="utf-8", errors="replace").read()})
recs = recs[:60]
with open(os.path.join(inp, "corpus", "train.jsonl"), "w", encoding="utf-8") as f:
    for r in recs[:-5]:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
with open(os.path.join(inp, "corpus", "heldout.jsonl"), "w", encoding="utf-8") as f:
    for r in recs[-5:]:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
with open(os.path.join(inp, "corpus", "repo.jsonl"), "w", encoding="utf-8") as f:
    for r in recs[:3]:  # repository records (corpus.py --repo-records): a third split
        f.write(json.dumps(dict(r, text="# a.py:1\nx = 1\n" + r["text"], prompt_chars=15),
                           ensure_ascii=False) + "\n")
json.dump({"corpus_sha256": "ab" * 32, "files": [[r["path"], "x", "train"] for r in recs]},
          open(os.path.join(inp, "corpus", "manifest.json"), "w"))
with open(TOK, "rb") as a, open(os.path.join(inp, "tokenizer.json"), "wb") as b:
    b.write(a.read())

cdir = os.path.join(t, "carry")
p = carry("pack", inp, cdir, "--shards", "3", "--level", "1", "--jobs", "2", "--sculpt", BIN)
check(p.returncode == 0, "pack exits 0")
shards = sorted(os.listdir(os.path.join(cdir, "corpus")))
check(shards == ["heldout.jsonl.xz", "manifest.json", "repo.jsonl.xz", "train-00.jsonl.xz",
                 "train-01.jsonl.xz", "train-02.jsonl.xz"],
      f"three train shards, the held-out and repo splits, the manifest: {shards}")
info = json.load(open(os.path.join(cdir, "carry.json")))
check(set(info.get("expect", {})) == {"train", "heldout", "repo"}, "the streams made here are recorded")
slim = json.load(open(os.path.join(cdir, "corpus", "manifest.json")))
check("files" not in slim and slim["files_omitted"] == len(recs) and
      slim["corpus_sha256"] == "ab" * 32, "the carried manifest keeps the hash, not the file list")

# A second pack of the same corpus copies the shards of the first.
c2 = os.path.join(t, "carry2")
p = carry("pack", inp, c2, "--shards", "3", "--level", "1", "--reuse", cdir)
same = all(open(os.path.join(cdir, "corpus", f), "rb").read() ==
           open(os.path.join(c2, "corpus", f), "rb").read() for f in shards if f.endswith(".xz"))
check(p.returncode == 0 and "reused the shards" in p.stdout and same, "--reuse copies the same shards")
p = carry("pack", inp, os.path.join(t, "carry3"), "--shards", "3", "--level", "2", "--reuse", cdir)
check(p.returncode == 0 and "reused" not in p.stdout and "compressed" in p.stdout,
      "another xz level is compressed afresh")

tok = bpe.Tokenizer(os.path.join(inp, "tokenizer.json"))
tok.path = os.path.join(inp, "tokenizer.json")
want = {s: tokcache.stream_python(os.path.join(inp, "corpus"), s, tok, None)
        for s in ("train", "heldout", "repo")}


def check_dest(dest, how):
    for split in ("train", "heldout", "repo"):
        name = tokcache.cache_name(os.path.join(dest, "corpus"), split,
                                   os.path.join(dest, "tokenizer.json"))
        path = os.path.join(dest, "cache", name)
        got = np.load(path) if os.path.exists(path) else None
        check(got is not None and got.dtype == np.uint16 and np.array_equal(got, want[split]),
              f"{how}: {split} cache under train.py's name equals bpe.py's stream")
    check(not os.path.exists(os.path.join(dest, "jsonl")), f"{how}: the decompressed shards are removed")
    check(os.path.exists(os.path.join(dest, "corpus", "heldout.jsonl")) and
          os.path.exists(os.path.join(dest, "corpus", "repo.jsonl")),
          f"{how}: heldout.jsonl and repo.jsonl are there")


p = carry("unpack", cdir, os.path.join(t, "d1"), "--sculpt", BIN, "--threads", "2")
check(p.returncode == 0 and "(as packed)" in p.stdout, "unpack with sculpt exits 0, streams as packed")
check_dest(os.path.join(t, "d1"), "sculpt")

p = carry("unpack", cdir, os.path.join(t, "d2"), "--sculpt", os.path.join(t, "no-such-sculpt"),
          "--threads", "2")
check(p.returncode == 0 and "process pool" in p.stdout, "a missing sculpt falls back to the pool")
check_dest(os.path.join(t, "d2"), "pool")

info["expect"]["train"]["tokens"] += 1
json.dump(info, open(os.path.join(cdir, "carry.json"), "w"))
p = carry("unpack", cdir, os.path.join(t, "d3"), "--sculpt", BIN)
check(p.returncode == 1 and "MISMATCH" in p.stdout, "a stream unlike the packed one is reported, exit 1")

os.remove(os.path.join(cdir, "corpus", "train-01.jsonl.xz"))
p = carry("unpack", cdir, os.path.join(t, "d4"), "--sculpt", BIN)
check(p.returncode == 1 and "shards" in p.stderr, "a missing shard is an error naming it")
shutil.rmtree(t)
finish()

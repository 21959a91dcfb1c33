"""The training pipeline end to end at toy scale on the CPU, checked against
the real binary: corpus (reproducible, licensed, de-duplicated, split by
file), BPE tokenizer (sculpt tokenize gives our ids and decodes them back),
a few seconds of masked-diffusion training, export, then `sculpt model info`
accepts the checkpoint, `sculpt logits` equals our PyTorch forward on the
exported (bf16) weights within 1e-3 relative, and `sculpt complete` runs.
Needs torch (Debian python3-torch); skips without it."""
import atexit
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish, need_bin, need_torch  # noqa: E402

BIN = need_bin()
need_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "model", "train"))
import bpe  # noqa: E402
import corpus  # noqa: E402
import export  # noqa: E402
import train  # noqa: E402

T0 = time.time()


def sculpt(*args, input=None):
    return subprocess.run([BIN, *args], input=input, capture_output=True, timeout=120)


torch.set_num_threads(2)
tmp = tempfile.mkdtemp(prefix="sculpt-train-test-")
atexit.register(shutil.rmtree, tmp, True)
quiet = lambda *a: None  # noqa: E731

# --- corpus --------------------------------------------------------------------------
c1, c2 = os.path.join(tmp, "c1"), os.path.join(tmp, "c2")
m1 = corpus.build(c1, ["/usr/lib/node_modules"], 0.06, 20, log=quiet)
m2 = corpus.build(c2, ["/usr/lib/node_modules"], 0.06, 20, log=quiet)
if not m1["files"]:
    print("no permissively licensed sources on this machine; skipping")
    sys.exit(77)
check(m1["corpus_sha256"] == m2["corpus_sha256"], "corpus is reproducible (same sha256)")
with open(os.path.join(c1, "train.jsonl"), "rb") as f, open(os.path.join(c2, "train.jsonl"), "rb") as g:
    check(f.read() == g.read(), "train.jsonl identical across two builds")
langs = set(m1["counts"]["train"]) | set(m1["counts"]["heldout"])
check({"python", "c", "javascript"} <= langs, f"languages python, c, javascript present: {langs}")
check(all(s["license"] and corpus.license_ok(s["license"]) for s in m1["sources"]),
      "every source has a permissive license recorded")
check(all(s["license_evidence"] for s in m1["sources"]), "license evidence recorded")
shas = [f[1] for f in m1["files"]]
check(len(shas) == len(set(shas)), "no duplicate files")
splits = {f[2] for f in m1["files"]}
check(splits == {"train", "heldout"}, f"both splits present: {splits}")
check(corpus.license_ok("MIT") and corpus.license_ok("BSD-3-Clause OR Apache-2.0")
      and not corpus.license_ok("GPL-2+") and not corpus.license_ok("MIT AND GPL-3"),
      "license filter accepts permissive, rejects copyleft")
heldout = corpus.read_jsonl(os.path.join(c1, "heldout.jsonl"))

# --- tokenizer --------------------------------------------------------------------------
V = 400
vocab, merges = bpe.train(bpe.corpus_texts(c1, 0.3), V, log=None)
tokdir = os.path.join(tmp, "tok")
os.makedirs(tokdir)
tok_path = os.path.join(tokdir, "tokenizer.json")
bpe.save(tok_path, vocab, merges)
check(len(vocab) == V, f"vocab size {len(vocab)} == {V}")
tok = bpe.Tokenizer(tok_path)
samples = [r["text"][:3000] for r in heldout[:6]]
samples.append("naïve café ½ ² ſ's 'S'LL  \n\n\t x = 1\r\n  \u3000日本語 <|mask|>x<|endoftext|>\n")
agree = roundtrip = 0
for s in samples:
    ids = tok.encode(s)
    p = sculpt("tokenize", "--tokenizer", tok_path, input=s.encode())
    got = [int(x) for x in p.stdout.split()] if p.returncode == 0 else None
    agree += got == ids
    if got != ids:
        print("  mismatch on", repr(s[:80]), p.stderr.decode()[:200])
    d = sculpt("tokenize", "--tokenizer", tok_path, "--decode",
               input=" ".join(map(str, ids)).encode())
    roundtrip += d.returncode == 0 and d.stdout == s.encode() and tok.decode(ids, False) == s
check(agree == len(samples), f"sculpt tokenize == Python encoder on {agree}/{len(samples)} texts")
check(roundtrip == len(samples), f"decode round-trips (sculpt and Python) {roundtrip}/{len(samples)}")
check(max(len(tok.encode(s)) for s in samples[:-1]) < max(len(s.encode()) for s in samples[:-1]),
      "merges compress text below one token per byte")

# --- training + export ---------------------------------------------------------------
ck = os.path.join(tmp, "ckpt")
meta = train.main(["--corpus", c1, "--tokenizer", tok_path, "--out", ck,
                   "--cache", os.path.join(tmp, "cache"), "--preset", "toy", "--seq", "128",
                   # Steps, not seconds, end it: a loaded machine gets the same
                   # 60 steps, only later (the schedule follows the steps).
                   "--time-budget", "600", "--max-steps", "60", "--threads", "2",
                   "--eval-every", "1000"])
ce0 = math.log(V)
check(meta["heldout_masked_ce"] < ce0 - 0.5,
      f"training lowers held-out masked CE below uniform: {meta['heldout_masked_ce']} < {ce0 - 0.5:.3f}")
files = sorted(os.listdir(ck))
check({"config.json", "tokenizer.json", "model.safetensors"} <= set(files), f"export files {files}")
with open(os.path.join(ck, "model.safetensors"), "rb") as f:
    n = int.from_bytes(f.read(8), "little")
    hdr = json.loads(f.read(n))
check(all(v["dtype"] == "BF16" for k, v in hdr.items() if k != "__metadata__"), "weights are bf16")
check("lm_head.weight" not in hdr, "tied embeddings: no lm_head tensor")

# --- sculpt model info ---------------------------------------------------------------
p = sculpt("model", "info", "--model", ck)
check(p.returncode == 0, f"sculpt model info accepts the checkpoint ({p.stderr.decode()[:200]})")
info = dict(l.split(": ", 1) for l in p.stdout.decode().splitlines() if ": " in l)
mdl, cfg = export.load(ck)
want = {"family": "qwen2", "tied_embeddings": "true", "shift_logits": "true",
        "qkv_bias": "true", "vocab": str(V), "max_seq": "128",
        "mask_id": str(tok.id_of("<|mask|>")), "eos_id": str(tok.id_of("<|endoftext|>")),
        "bos_id": str(tok.id_of("<|beginoftext|>")), "params": str(mdl.n_params()),
        "layers": str(cfg["num_hidden_layers"]), "kv_heads": str(cfg["num_key_value_heads"])}
for k, v in want.items():
    check(info.get(k) == v, f"model info {k}: {info.get(k)} == {v}")

# --- sculpt logits == PyTorch forward --------------------------------------------------
text = heldout[0]["text"]
ids = [tok.id_of("<|beginoftext|>")] + tok.encode(text)[:70]
ids[20:30] = [tok.id_of("<|mask|>")] * 10  # a masked stretch, as in decoding
out = os.path.join(tmp, "logits.f32")
p = sculpt("logits", "--model", ck, "--ids", ",".join(map(str, ids)), "--out", out,
           "--device", "cpu")
check(p.returncode == 0, f"sculpt logits runs ({p.stderr.decode()[:200]})")
if p.returncode == 0:
    got = np.fromfile(out, dtype="<f4").reshape(len(ids), -1)
    with torch.no_grad():
        ref = mdl(torch.tensor([ids]))[0].double().numpy()
    rel = float(np.abs(got - ref).max() / np.abs(ref).max())
    check(got.shape == ref.shape, f"logits shape {got.shape}")
    check(rel <= 1e-3, f"sculpt logits vs PyTorch: max rel error {rel:.2e} <= 1e-3")
    # The comparison can tell architectures apart: a causal forward differs.
    with torch.no_grad():
        ref_c = mdl(torch.tensor([ids[:40]]))[0].double().numpy()
    check(np.abs(ref_c[:39] - ref[:39]).max() / np.abs(ref).max() > 1e-2,
          "bidirectional: truncating the right context changes earlier rows")

# --- sculpt complete ----------------------------------------------------------------------
py = next((r for r in heldout if r["text"].count("\n") > 8), heldout[0])
src = os.path.join(tmp, "task" + os.path.splitext(py["path"])[1])
with open(src, "w") as f:
    f.write(py["text"])
p = sculpt("complete", f"{src}:5:1", "--model", ck, "--max-tokens", "16", "--json")
check(p.returncode == 0, f"sculpt complete runs ({p.stderr.decode()[:200]})")
if p.returncode == 0:
    res = json.loads(p.stdout)
    check(res["canvas"] == 16 and res["model"]["family"] == "qwen2" and isinstance(res["text"], str),
          f"complete result: canvas {res['canvas']}, {len(res['ids'])} ids")
    check(all(0 <= i < V for i in res["ids"]), "completion ids are in the vocabulary")

print(f"elapsed {time.time() - T0:.1f}s")
finish()

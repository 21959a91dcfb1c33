"""tools/grow_checkpoint.py: the shipped model grown to a bigger shape
computes the same function (the CPU latency figures of the 0.5B shape rest
on it, docs/performance.md). The shape here is small, for time, but takes
every path the 0.5B one does: wider hidden, wider heads (the RoPE base
raised), bigger groups of query heads, identity layers after the real
ones, a padded vocabulary.

  - `sculpt logits` over real code and masks: the grown model's softmax over
    the shipped vocabulary within 1e-4 of the shipped model's in f32 with
    the same argmax on every row (1e-2 and 95% of the rows computing in
    bf16), and no probability on the padding rows;
  - the grown folder loads with the shipped tokenizer (its config's vocabulary
    larger than the tokenizer's)."""
import json
import os
import subprocess
import sys

import numpy as np

from common import SRC, check, finish, run, sculpt_bin, tempdir

sys.path.insert(0, os.path.join(SRC, "tools"))
import grow_checkpoint  # noqa: E402

SHAPE = dict(hidden=384, layers=6, heads=6, kv_heads=2, inter=768, vocab=4096)

def softmax(x):
    x = x - x.max(axis=1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


shipped = os.path.join(SRC, "model", "default")
with tempdir() as tmp:
    out = os.path.join(tmp, "grown")
    cfg, tensors = grow_checkpoint.grow(shipped, SHAPE)
    # F32 here, so that only the construction is measured (the tool writes
    # BF16, as the 0.5B checkpoint is: scaled weights round anew there)
    grow_checkpoint.write(shipped, out, cfg, tensors, "F32")
    check(cfg["rope_theta"] == 10000.0 ** 2, f"the RoPE base raised with the head: {cfg['rope_theta']}")

    with open(os.path.join(shipped, "config.json")) as f:
        small = json.load(f)
    vs = small["vocab_size"]
    # Real code through the shipped tokenizer, then masks: rows a completion reads.
    with open(os.path.join(SRC, "tests", "data", "real", "click", "src", "click", "core.py")) as f:
        text = f.read()[20000:21500]
    p = subprocess.run([sculpt_bin(), "tokenize", "--model", shipped], input=text,
                       capture_output=True, text=True, timeout=60)
    ids = [int(t) for t in p.stdout.split()][:120] if p.returncode == 0 else None
    check(ids is not None and len(ids) >= 60, f"tokenized real code: {p.stderr[-300:]}")
    ids = (ids or list(range(100, 160))) + [small["mask_token_id"]] * 8
    arg = ",".join(map(str, ids))
    got = {}
    for name, model, w in (("shipped", shipped, "f32"), ("f32", out, "f32"), ("bf16", out, "bf16")):
        path = os.path.join(tmp, f"logits-{name}.bin")
        r = run("logits", "--model", model, "--ids", arg, "--out", path, "--weights", w,
                "--threads", "2")
        check(r.returncode == 0, f"logits {name}: {r.stderr[-300:]}")
        if r.returncode == 0:
            got[name] = np.fromfile(path, dtype="<f4").reshape(len(ids), -1)
    if len(got) == 3:
        ref = softmax(got["shipped"])
        check(got["f32"].shape[1] == SHAPE["vocab"], f"the grown vocabulary: {got['f32'].shape}")
        for w, tol, rows in (("f32", 1e-4, 1.0), ("bf16", 1e-2, 0.95)):
            # f32: the same function up to rounding; bf16 compute rounds the
            # activations, and real code has near-ties (as tests/model/test_int8.py)
            p = softmax(got[w])
            d = np.abs(p[:, :vs] - ref).max()
            check(d < tol, f"{w}: softmax within {tol:g} of the shipped model's ({d:.2e})")
            agree = (p[:, :vs].argmax(1) == ref.argmax(1)).mean()
            check(agree >= rows, f"{w}: the same argmax on {rows:.0%} of the rows ({agree:.3f})")
            check(p[:, vs:].sum(1).max() < 1e-30,
                  f"{w}: no probability on the padding rows ({p[:, vs:].sum(1).max():.1e})")

finish()

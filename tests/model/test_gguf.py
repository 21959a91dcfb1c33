"""llama.cpp GGUF files (dream and llada architectures, Q8_0 / Q4_0 / BF16
tensors), generated here from the tiny checkpoints and the shipped model by
our own writer (gguf_writer.py):

  - `sculpt logits` on a Q8_0 or Q4_0 file matches the numpy reference run
    on the dequantized blocks (rel err <= 1e-4, f32 compute), for Dream
    (QKV bias) and LLaDA (q/k rows permuted by the converter: a reader that
    did not put them back is far off), GQA included; int8 compute runs too;
  - the shipped model written as a BF16 GGUF (its tokenizer in the
    metadata) computes the same logits, tokenizes the same and completes
    the same text as its safetensors folder, whether named as the file or
    as a folder holding it;
  - broken files (wrong magic, truncated, a tensor past the end, an unknown
    architecture, a missing tensor) fail with one clear message."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

from common import SRC, run, tempdir, tiny_checkpoints
import gguf_writer
import reference

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def logits(model, ids, out, *extra):
    r = run("logits", "--model", model, "--ids", ",".join(map(str, ids)), "--out", out, *extra)
    if r.returncode != 0:
        check(False, f"sculpt logits --model {os.path.basename(model)} exits 0 ({r.stderr.strip()})")
        return None
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1)


with tempdir() as tmp:
    out = os.path.join(tmp, "logits.bin")
    rng = np.random.default_rng(11)
    for name, family in (("dream-bf16", "dream"), ("llada-gqa-f32", "llada"),
                         ("llada-bf16", "llada")):
        d = tiny_checkpoints.generate(name, tiny_checkpoints.SPECS[name], tmp)
        cfg, t = reference.load(d)
        V = tiny_checkpoints.SPECS[name]["vocab"]
        ids = rng.integers(0, V, size=24)
        for kind in ("Q8_0", "Q4_0"):
            g = os.path.join(tmp, f"{name}-{kind}.gguf")
            seen = gguf_writer.write(d, g, kind, t, cfg, family)
            ref = reference.forward(cfg, seen, ids)
            got = logits(g, ids, out, "--weights", "f32")
            if got is None:
                continue
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            check(err <= 1e-4, f"{name} {kind}: logits match the reference on the dequantized "
                               f"blocks (rel err {err:.1e})")
            orig = reference.forward(cfg, t, ids)
            qerr = float(np.abs(ref - orig).max() / np.abs(orig).max())
            check(qerr > 10 * max(err, 1e-6), f"{name} {kind}: (and the check can tell: the "
                                              f"quantization itself moves them {qerr:.1e})")
            i8 = logits(g, ids, out, "--weights", "int8")
            if i8 is not None:
                rel = float(np.sqrt(((i8 - ref) ** 2).mean() / (ref ** 2).mean()))
                check(rel <= 0.03, f"{name} {kind}: int8 compute from it, rms rel err {rel:.3f}")
            r = run("model", "info", "--model", g, "--json")
            info = json.loads(r.stdout) if r.returncode == 0 else {}
            want = kind.lower() if cfg.get("hidden_size", cfg.get("d_model")) % 32 == 0 else "mixed"
            check(info.get("family") == family and info.get("dtype") == want,
                  f"{name} {kind}: model info says {info.get('family')}, {info.get('dtype')}")
        if family == "llada":
            # The converter's q/k permutation is undone: reading the rows as
            # stored would give other logits.
            cfg2 = dict(cfg)
            wrong = dict(seen)
            nh = cfg["n_heads"]
            nkv = cfg.get("n_kv_heads") or nh
            for k in list(wrong):
                if k.endswith("q_proj.weight"):
                    wrong[k] = gguf_writer.permute(wrong[k], nh)
                if k.endswith("k_proj.weight"):
                    wrong[k] = gguf_writer.permute(wrong[k], nkv)
            bad = reference.forward(cfg2, wrong, ids)
            check(float(np.abs(bad - ref).max() / np.abs(ref).max()) > 1e-2,
                  f"{name}: rows left permuted would give other logits")

    # The family profile comes from the file as from a folder: the
    # architecture gives the family, the tokenizer's added tokens (control
    # and user-defined types) the row (dream, DiffuCoder-Instruct's
    # <|dlm_pad|>, DreamOn's <|expand|>), the named tokens the BOS, EOS and
    # end ids, add_bos_token LLaDA's BOS. (No config.json: DreamOn's
    # sculpt_max_infill override stays with the folder.)
    fields = ("name", "bos_id", "eos_after_suffix", "eos_id", "end_ids", "eos_fill",
              "expand_id", "upstream_loop", "framing")
    for name, family in (("dream-bytes", "dream"), ("diffucoder-instruct-bytes", "dream"),
                         ("dreamon-bytes", "dream"), ("llada-bytes", "llada")):
        d = tiny_checkpoints.generate(name, tiny_checkpoints.SPECS[name], tmp)
        cfg, t = reference.load(d)
        g = os.path.join(tmp, f"{name}.gguf")
        gguf_writer.write(d, g, "F32", t, cfg, family)
        infos = []
        for m in (d, g):
            r = run("model", "info", "--model", m, "--json")
            infos.append(json.loads(r.stdout).get("profile", {}) if r.returncode == 0 else {})
        want = {k: infos[0].get(k) for k in fields}
        got = {k: infos[1].get(k) for k in fields}
        check(want["name"] is not None and got == want,
              f"{name}: the GGUF's family profile is the folder's ({got})")

    # The shipped model as a BF16 GGUF with its tokenizer: same everything.
    default = os.path.join(SRC, "model", "default")
    cfg, t = reference.load(default)
    gdir = os.path.join(tmp, "default-gguf")
    os.makedirs(gdir)
    g = os.path.join(gdir, "sculpt-default-bf16.gguf")
    gguf_writer.write(default, g, "BF16", t, cfg, "dream", pre="qwen2")
    # The shipped model is a Qwen2 checkpoint; as a GGUF it is read as
    # Dream, whose graph is Qwen2's (QKV bias, shifted logits).
    ids = list(range(100, 160))
    a = logits(default, ids, out, "--weights", "f32")
    b = logits(g, ids, out, "--weights", "f32")
    check(a is not None and b is not None and np.array_equal(a, b),
          "shipped model: the BF16 GGUF gives the folder's logits bit for bit")
    text = open(os.path.join(SRC, "tests", "data", "real", "click", "src", "click",
                             "core.py"), "rb").read()[:4000]
    bin_ = os.environ["SCULPT_BIN"]
    ta = subprocess.run([bin_, "tokenize", "--model", default], input=text, capture_output=True)
    tb = subprocess.run([bin_, "tokenize", "--model", g], input=text, capture_output=True)
    check(ta.returncode == 0 and tb.returncode == 0 and ta.stdout == tb.stdout,
          f"shipped model: the GGUF's tokenizer gives the same ids on real code "
          f"({tb.stderr.decode().strip()})")
    # `sculpt context` fits its default budget to the model's context read
    # without the weights: from a GGUF's metadata as from a folder's config.
    cut = os.path.join(SRC, "tests", "data", "real", "jq", "src", "builtin.c") + ":100:1"
    budgets = []
    for m in (default, g, gdir):
        r = run("context", cut, "--model", m, "--json")
        budgets.append(json.loads(r.stdout).get("contextTokens") if r.returncode == 0 else None)
    check(budgets[0] is not None and budgets[0] < 1024 and budgets[1:] == budgets[:1] * 2,
          f"sculpt context: a GGUF's default budget is the folder's ({budgets})")
    site = os.path.join(SRC, "tools", "demo", "fib.py") + ":4:5"
    for m in (g, gdir):
        # A GGUF file has no generation_config.json: the EOS penalty is given.
        ra = run("complete", site, "--model", default, "--json", "--max-tokens", "16")
        rb = run("complete", site, "--model", m, "--json", "--max-tokens", "16",
                 "--eos-penalty", "3")
        ja = json.loads(ra.stdout) if ra.returncode == 0 else {}
        jb = json.loads(rb.stdout) if rb.returncode == 0 else {}
        check(ja.get("text") is not None and ja.get("text") == jb.get("text"),
              f"shipped model: complete gives the same text from {os.path.relpath(m, tmp)} "
              f"({rb.stderr.strip()})")

    r = run("model", "quantize", g, "--out", os.path.join(tmp, "q-of-gguf"))
    check(r.returncode == 1 and "GGUF" in r.stderr, f"quantize refuses a GGUF file ({r.stderr.strip()})")

    # Broken files fail clearly.
    good = open(os.path.join(tmp, "dream-bf16-Q8_0.gguf"), "rb").read()

    def broken(label, data, want):
        p = os.path.join(tmp, "broken.gguf")
        with open(p, "wb") as f:
            f.write(data)
        r = run("logits", "--model", p, "--ids", "1,2", "--out", out)
        check(r.returncode in (1, 2) and want in r.stderr and "broken.gguf" in r.stderr
              and r.stderr.count("\n") <= 1,
              f"{label}: one clear error ({r.stderr.strip()})")

    # Only a regular file is opened: a FIFO named .gguf (as the file, or the
    # one .gguf of a folder) is an error naming it, not a blocked open.
    fifo_dir = os.path.join(tmp, "fifo-model")
    os.makedirs(fifo_dir)
    fifo = os.path.join(fifo_dir, "model.gguf")
    os.mkfifo(fifo)
    for m in (fifo, fifo_dir):
        try:
            r = run("model", "info", "--model", m)
            ok = r.returncode == 1 and "model.gguf: a FIFO" in r.stderr
        except subprocess.TimeoutExpired:
            ok, r = False, None
        check(ok, f"a FIFO .gguf ({os.path.relpath(m, tmp)}) is refused by name "
                  f"({r.stderr.strip() if r else 'timed out'})")

    broken("wrong magic", b"GGUX" + good[4:], "no GGUF magic")
    broken("truncated metadata", good[:200], "")
    broken("tensor data cut off", good[: len(good) - 1000], "past the end")
    broken("unknown architecture", good.replace(b"dream", b"gemma", 1), "not supported")
    broken("a tensor missing", good.replace(b"blk.1.ffn_up.weight", b"blk.1.ffn_XX.weight", 1),
           "missing tensor")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)

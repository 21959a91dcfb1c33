"""sculpt against Hugging Face transformers and tokenizers, the canonical
implementations, where they are installed (the GPU machine has them;
tests/gpu/run.sh runs this there). Elsewhere it skips (77).

Forward pass: every tiny checkpoint of a Qwen2 or Qwen3 layout (Dream's and
CoDA's weights are named as in Qwen2/Qwen3) and the shipped model/default
are loaded into transformers' Qwen2ForCausalLM / Qwen3ForCausalLM in float32,
from their own tensors, and run bidirectionally: a 4D additive mask of
zeros, which transformers passes through unchanged (masking_utils returns a
4D mask as-is; older releases did the same in _update_causal_mask) and adds
to the scores. Checked, not assumed: the causal mask written out the same
way must give the plain causal run, and the zero mask must differ from it
on every row but the last. `sculpt logits --device cpu` must then
match within 1e-4 relative (as tests/model/test_logits.py against numpy),
and `--device cuda`, when there is a device, within 5e-2 (bf16 activations,
as tests/gpu/test_cuda_forward.c).

Tokenizer: `sculpt tokenize` against tokenizers.Tokenizer.from_file on the
same tokenizer.json (model/default's and the tiny ones), over a few of this
repository's files and a Unicode stress text.

SCULPT_HF_PY names an interpreter with torch and transformers; without it,
the first of python3, /usr/local/bin/python3, /opt/conda/bin/python and
/usr/bin/python3 that has them runs the test (this one re-executes itself there)."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
FAILS = []


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def has_hf(py):
    return subprocess.run([py, "-c", "import torch, transformers"], capture_output=True,
                          timeout=120).returncode == 0


try:
    import torch
    import transformers
except Exception:
    if os.environ.get("SCULPT_HF_REEXEC"):
        skip("the re-executed interpreter has no torch/transformers")
    for py in (os.environ.get("SCULPT_HF_PY"), "python3", "/usr/local/bin/python3",
               "/opt/conda/bin/python", "/usr/bin/python3"):
        py = py and shutil.which(py)
        if py and os.path.realpath(py) != os.path.realpath(sys.executable) and has_hf(py):
            os.execve(py, [py, os.path.abspath(__file__)] + sys.argv[1:],
                      dict(os.environ, SCULPT_HF_REEXEC="1"))
    skip("no Python with torch and transformers here (set SCULPT_HF_PY)")


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


BIN = os.environ.get("SCULPT_BIN")
if not BIN or not os.path.exists(BIN):
    skip("SCULPT_BIN is not set or missing")

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_tensors(folder):
    """Every tensor of the folder's safetensors files, as float32."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(folder, name), "rb") as f:
            raw = f.read()
        (hlen,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + hlen])
        buf = bytearray(raw[8 + hlen:])
        for key, e in header.items():
            if key == "__metadata__":
                continue
            b, end = e["data_offsets"]
            dt = DTYPES[e["dtype"]]
            n = (end - b) // torch.tensor([], dtype=dt).element_size()
            t = torch.frombuffer(buf, dtype=dt, count=n, offset=b) if n else torch.empty(0, dtype=dt)
            out[key] = t.reshape(e["shape"]).float().clone()
    return out


def hf_model(folder):
    """transformers' model for the folder, float32, with its own weights."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    sd = read_tensors(folder)
    qwen3 = cfg.get("model_type") == "qwen3"
    heads = cfg["num_attention_heads"]
    d = dict(vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
             intermediate_size=cfg["intermediate_size"],
             num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=heads,
             num_key_value_heads=cfg.get("num_key_value_heads", heads),
             rope_theta=cfg.get("rope_theta", 10000.0), rms_norm_eps=cfg.get("rms_norm_eps", 1e-6),
             max_position_embeddings=cfg.get("max_position_embeddings") or 4096,
             hidden_act="silu", use_sliding_window=False,
             tie_word_embeddings="lm_head.weight" not in sd)
    if qwen3:
        d["head_dim"] = cfg.get("head_dim") or cfg["hidden_size"] // heads
        d["attention_bias"] = bool(cfg.get("attention_bias", False))
        conf = transformers.Qwen3Config.from_dict(d)
        model = transformers.Qwen3ForCausalLM(conf)
    else:
        conf = transformers.Qwen2Config.from_dict(d)
        model = transformers.Qwen2ForCausalLM(conf)
    model = model.float().eval()
    # RoPE's base: a release that reads it under another key than
    # rope_theta would fall back to its default; set it, and say so.
    hd = d.get("head_dim") or d["hidden_size"] // heads
    want = 1.0 / (d["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    for rot in [m for m in model.modules() if isinstance(getattr(m, "inv_freq", None), torch.Tensor)]:
        if rot.inv_freq.shape == want.shape and not torch.allclose(rot.inv_freq.float(), want,
                                                                   rtol=1e-5):
            print("note: %s: transformers did not take rope_theta %g from the config; set"
                  % (os.path.basename(folder), d["rope_theta"]))
            rot.inv_freq.copy_(want)
            if hasattr(rot, "original_inv_freq"):
                rot.original_inv_freq = want.clone()
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not k.endswith("rotary_emb.inv_freq")]
    if d["tie_word_embeddings"]:
        missing = [k for k in missing if k != "lm_head.weight"]
        model.lm_head.weight = model.model.embed_tokens.weight
    check(not missing and not unexpected,
          "%s: every tensor maps onto transformers' model (missing %s, unexpected %s)"
          % (os.path.basename(folder), missing[:3], unexpected[:3]))
    return model


def ours(folder, ids, device):
    with tempfile.NamedTemporaryFile(suffix=".f32") as out:
        p = subprocess.run([BIN, "logits", "--model", folder, "--ids", ",".join(map(str, ids)),
                            "--out", out.name, "--device", device],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            return None, p.stderr.strip()[-300:]
        raw = bytearray(open(out.name, "rb").read())
    return torch.frombuffer(raw, dtype=torch.float32).double().reshape(len(ids), -1), p.stderr


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def check_forward(folder, cuda):
    name = os.path.basename(folder.rstrip("/"))
    model = hf_model(folder)
    V = model.config.vocab_size
    ids = [(i * 131 + 7) % V for i in range(13)]
    n = len(ids)
    x = torch.tensor([ids])
    with torch.no_grad():
        bi = model(input_ids=x, attention_mask=torch.zeros(1, 1, n, n)).logits[0].double()
        causal = model(input_ids=x).logits[0].double()
        added = torch.full((n, n), float("-inf")).triu(1)[None, None]
        causal_4d = model(input_ids=x, attention_mask=added).logits[0].double()
    # A 4D float mask is added to the scores: the causal one written out
    # gives the causal run (a release reading 0 as "masked" would not), and
    # the zero mask makes every row but the last differ from it.
    check(rel(causal_4d, causal) < 1e-5, "%s: transformers adds a 4D float mask (rel diff %.2g)"
          % (name, rel(causal_4d, causal)))
    early = min(rel(bi[i], causal[i]) for i in range(n - 1))
    check(early > 1e-3, "%s: transformers ran bidirectionally (min row difference from causal "
          "%.2g)" % (name, early))
    got, log = ours(folder, ids, "cpu")
    if got is None:
        check(False, "%s: sculpt logits --device cpu failed: %s" % (name, log))
        return
    e = rel(got, bi)
    check(e <= 1e-4, "%s: sculpt cpu vs transformers, rel err %.2e <= 1e-4" % (name, e))
    check(rel(got[:, :V // 2], bi[:, V // 2:V // 2 * 2]) > 1e-2,
          "%s: the comparison discriminates (shifted columns differ)" % name)
    if cuda:
        got, log = ours(folder, ids, "cuda")
        if got is None or "falling back" in log:
            check(False, "%s: sculpt logits --device cuda did not run on the GPU: %s" % (name, log))
            return
        e = rel(got, bi)
        check(e <= 5e-2, "%s: sculpt cuda vs transformers, rel err %.2e <= 5e-2" % (name, e))


STRESS = ("def f(x):\n\treturn x  # ünïcödé, 日本語, emoji 🦀🚀, e\u0301\r\n"
          "    \u00a0nbsp   trailing   \n\n\n<|endoftext|> int main(void) { return 0; }\n")


def check_tokenizer(path, texts):
    try:
        import tokenizers
    except Exception:
        print("note: no tokenizers module; tokenizer parity not checked")
        return
    label = os.path.relpath(path, SRC) if path.startswith(SRC) else os.path.basename(
        os.path.dirname(path))
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
        if not spec.get("model", {}).get("vocab"):
            # The id-level fixtures name their special tokens and nothing
            # else. tokenizers encodes text with them to (almost) nothing;
            # sculpt refuses them, which is what is checked.
            p = subprocess.run([BIN, "tokenize", "--tokenizer", path], input=b"x",
                               capture_output=True, timeout=120)
            check(p.returncode != 0 and b"empty vocabulary" in p.stderr,
                  "%s: sculpt refuses a tokenizer with no vocabulary" % label)
            return
    try:
        tok = tokenizers.Tokenizer.from_file(path)
        wants = [tok.encode(text, add_special_tokens=False).ids for _, text in texts]
        # tokenizers (0.23.2, seen on the GPU machine) renumbers added tokens
        # whose ids leave a gap after the vocabulary (the byte fixtures: 256
        # bytes, then <|endoftext|> at 300) to 256, 257, ...; sculpt keeps
        # the ids the file states, which config.json's ids refer to. Real
        # releases have no gap. The segmentation is what is compared here.
        renum = {}
        for a in spec.get("added_tokens", []):
            hf = tok.token_to_id(a["content"])
            if hf is not None and hf != a["id"]:
                renum[hf] = a["id"]
        if renum:
            print("note: %s: tokenizers renumbers %d added token(s) (%s); compared by content"
                  % (label, len(renum), ", ".join("%d->%d" % kv for kv in sorted(renum.items()))))
            wants = [[renum.get(i, i) for i in w] for w in wants]
    except Exception as e:  # the tiny fixtures' files are minimal; the shipped one must work
        if path.startswith(SRC):
            check(False, "%s: tokenizers cannot use it: %r" % (label, e))
        else:
            print("note: %s: tokenizers cannot use this test fixture: %r" % (label, e))
        return
    bad = []
    for (what, text), want in zip(texts, wants):
        p = subprocess.run([BIN, "tokenize", "--tokenizer", path], input=text.encode(),
                           capture_output=True, timeout=120)
        got = [int(t) for t in p.stdout.split()] if p.returncode == 0 else None
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got or [], want)) if a != b),
                     min(len(got or []), len(want)))
            bad.append("%s (first difference at token %d of %d)" % (what, k, len(want)))
    check(not bad, "%s: sculpt tokenize == tokenizers, %d texts%s"
          % (label, len(texts), "; differ: " + ", ".join(bad[:3]) if bad else ""))


def main():
    tmp = tempfile.mkdtemp(prefix="sculpt-hf-")
    try:
        # This interpreter (it has torch, and numpy with it): a GPU machine's
        # /usr/bin/python3 may have no numpy. stderr goes to the log.
        subprocess.run([sys.executable, os.path.join(SRC, "tools", "tiny_checkpoints.py"), tmp,
                        "--only", "dream-bf16", "--only", "opendcoder-f16",
                        "--only", "coda-f32-sharded", "--only", "qwen3-tied-bf16",
                        "--only", "dream-bytes"],
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        folders = [os.path.join(tmp, n) for n in sorted(os.listdir(tmp))]
        folders.append(os.path.join(SRC, "model", "default"))
        probe = subprocess.run([BIN, "--version"], capture_output=True, text=True)
        cuda = torch.cuda.is_available() and "cuda" in probe.stdout
        print("transformers %s, torch %s, CUDA check: %s" % (transformers.__version__,
                                                             torch.__version__, cuda))
        for folder in folders:
            check_forward(folder, cuda)
        texts = [("stress", STRESS)]
        for rel_path in ("README.md", "model/engine.c", "model/train/train.py",
                         "editors/vscode/src/logic.ts"):
            with open(os.path.join(SRC, rel_path), encoding="utf-8") as f:
                texts.append((rel_path, f.read()))
        for folder in folders:
            check_tokenizer(os.path.join(folder, "tokenizer.json"), texts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        sys.exit(1)
    print("all checks passed")


main()

"""NaN or infinite logits are an error naming the checkpoint, not a blank
completion with exit 0.

The planted byte-level checkpoints (tools/planted_checkpoints.py; they
complete "abc" with "defg...", so a clean run is known to work) are
poisoned in place: one with every weight NaN, one with a single +Inf in
lm_head on the hidden dimension that is constant 1 (the logit becomes
+Inf, not NaN: `sculpt logits` shows it), one with a single NaN in one
layer matrix (o_proj; the int8 path used to quantize that row to finite
garbage). `sculpt complete` must exit
non-zero with a message naming the checkpoint folder, through every way
the engine picks: model/pick.c's pass (greedy, sampled), the host's top-k
path, several candidate lengths in one packed batch, no cache, and
DreamOn's expand/delete loop (the -expand checkpoint), the int8 and bf16
compute (--weights), and a session's requests (`sculpt bench --replay`,
with and without reuse). `sculpt model info`
still reads the poisoned ones: loading does not scan the weights."""
import json
import math
import os
import shutil
import struct
import subprocess
import sys

from common import NAN_BITS, SRC, all_nan, inf_in_head, poison_safetensors as poison, run, tempdir

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def complete(model, src, *extra):
    return subprocess.run([os.environ["SCULPT_BIN"], "complete", src + ":1:9", "--model", model,
                           *extra], capture_output=True, text=True, timeout=300)


def logits(model, tmp):
    """The raw logits of one pass over "abc" (ids = bytes, BOS 257)."""
    out = os.path.join(tmp, "logits.f32")
    r = run("logits", "--model", model, "--ids", "257,97,98,99", "--out", out)
    if r.returncode != 0:
        return []
    with open(out, "rb") as f:
        data = f.read()
    return list(struct.unpack("<%df" % (len(data) // 4), data))


WAYS = [("greedy", []), ("sampled", ["--temperature", "0.8", "--seed", "2"]),
        ("top-k on the host", ["--top-k", "5", "--temperature", "0.8"]),
        ("two lengths in one batch", ["--lengths", "8,16"]),
        ("no cache", ["--no-cache"]), ("int8", ["--weights", "int8"]),
        ("bf16", ["--weights", "bf16"])]


def nan_in_layer(name, info):
    """One NaN in layer 0's attention output matrix (row 0, column 0)."""
    if name != "model.layers.0.self_attn.o_proj.weight":
        return []
    return [(0, NAN_BITS[info["dtype"]])]


def replay(model, src, *extra):
    """A session's requests: the file's last characters typed back."""
    return subprocess.run([os.environ["SCULPT_BIN"], "bench", "--replay", src, "--model", model,
                           "--type", "4", "--canvas", "8", *extra], capture_output=True,
                          text=True, timeout=300)

with tempdir() as tmp:
    subprocess.run([sys.executable, os.path.join(SRC, "tools", "planted_checkpoints.py"),
                    os.path.join(tmp, "clean")], check=True, capture_output=True)
    src = os.path.join(tmp, "letters.py")
    with open(src, "w") as f:
        f.write('S = "abc"\n')
    for name in ("planted-successor-shifted-bytes", "planted-successor-shifted-bytes-expand"):
        clean = os.path.join(tmp, "clean", name)
        r = complete(clean, src)
        check(r.returncode == 0 and r.stdout.startswith("def"),
              f"{name}: the clean checkpoint completes ({r.stdout[:20]!r} {r.stderr.strip()})")
        with open(os.path.join(clean, "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        # The planted hidden layout: the constant-1 dimension is at index vocab.
        for what, fn in (("NaN weights", all_nan), ("an Inf in lm_head", inf_in_head(vocab)),
                         ("a NaN in o_proj", nan_in_layer)):
            d = os.path.join(tmp, what.replace(" ", "-"), name)
            shutil.copytree(clean, d)
            hits = sum(poison(os.path.join(d, f), fn) for f in os.listdir(d)
                       if f.endswith(".safetensors"))
            check(hits > 0, f"{name}, {what}: poisoned")
            lg = logits(d, tmp)
            if what == "an Inf in lm_head":
                check(any(math.isinf(x) for x in lg) and not any(math.isnan(x) for x in lg),
                      f"{name}, {what}: the logits hold +Inf and no NaN")
            else:
                check(lg and all(math.isnan(x) for x in lg), f"{name}, {what}: the logits are NaN")
            ways = WAYS
            if what == "a NaN in o_proj":
                ways = [w for w in WAYS if w[0] in ("greedy", "int8", "bf16")]
            info = run("model", "info", "--model", d)
            check(info.returncode == 0, f"{name}, {what}: model info still reads it")
            for way, extra in ways:
                r = complete(d, src, *extra)
                check(r.returncode != 0 and d in r.stderr and "NaN or infinite" in r.stderr,
                      f"{name}, {what}, {way}: an error naming the checkpoint "
                      f"({r.returncode}: {r.stderr.strip()[-240:]})")
            if name.endswith("-expand"):
                continue
            for way, extra in (("a session", []), ("a session in int8", ["--weights", "int8"]),
                               ("no session", ["--no-session"])):
                r = replay(d, src, *extra)
                check(r.returncode != 0 and d in r.stderr and "NaN or infinite" in r.stderr,
                      f"{name}, {what}, bench --replay, {way}: an error naming the checkpoint "
                      f"({r.returncode}: {r.stderr.strip()[-240:]})")
        if not name.endswith("-expand"):
            r = replay(clean, src)
            check(r.returncode == 0, f"{name}: bench --replay runs on the clean checkpoint "
                                     f"({r.stderr.strip()[-240:]})")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

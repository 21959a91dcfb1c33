"""`--weights fp8` on the GPU (every matrix e4m3 with one scale an output
row, made on the device at load; kernels/narrow.cu computes every product)
against bf16 on the same GPU and the f32 CPU reference.

  - logits, every tiny checkpoint (23 random ids): rms(fp8 - cpu) <= 6% of
    rms(cpu) (e4m3 keeps 3 mantissa bits: a weight's rounding error is up
    to 1/16 of itself, about 2% rms; the int8 CPU gate is 1.5%), and every
    |fp8 - cpu| <= 30% of rms(cpu); shifted rows do not match (the check
    can fail); the argmax agrees with bf16's on >= 80% of the rows (random
    tiny weights have near-ties that any rounding flips: int8's gate there
    is 95% at a quarter of the error).
  - text: on the planted checkpoint (hand-built weights, known middle)
    `sculpt complete` gives the known middle in fp8 as in bf16, greedy and
    sampled (the gate int8 passes on the CPU).
  - the CPU refuses fp8 in one line.
Skips (77) without a CUDA device."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "model"))

import numpy as np  # noqa: E402

from common import make_all, run, sculpt_bin, skip_unless_cuda, tempdir, tiny_checkpoints  # noqa: E402,E501

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def rms(a):
    return float(np.sqrt(np.mean(np.square(a, dtype=np.float64))))


with tempdir() as tmp:
    dirs = make_all(tmp)
    out = os.path.join(tmp, "l.bin")
    probe = run("logits", "--model", dirs["dream-bf16"], "--ids", "1,2,3", "--out", out,
                "--device", "cuda", "--weights", "fp8")
    skip_unless_cuda(probe)
    check(probe.returncode == 0 and "falling back" not in probe.stderr,
          "the probe ran on the GPU: " + probe.stderr.strip().replace("\n", " ")[:400])
    rng = np.random.default_rng(8)
    for name, d in dirs.items():
        V = tiny_checkpoints.SPECS[name]["vocab"]
        ids = ",".join(map(str, rng.integers(0, V, size=23)))
        res = {}
        for key, args in (("cpu", ("--device", "cpu")), ("bf16", ("--device", "cuda")),
                          ("fp8", ("--device", "cuda", "--weights", "fp8"))):
            r = run("logits", "--model", d, "--ids", ids, "--out", out, *args)
            ok = r.returncode == 0 and "falling back" not in r.stderr
            check(ok, f"{name} {key}: exit 0 on its device ({r.stderr.strip()[-300:]})")
            res[key] = np.fromfile(out, dtype="<f4").reshape(23, V) if ok else None
        if any(v is None for v in res.values()):
            continue
        ref, f8 = res["cpu"], res["fp8"]
        e = rms(f8 - ref) / rms(ref)
        worst = float(np.abs(f8 - ref).max()) / rms(ref)
        check(e <= 0.06, f"{name}: rms(fp8 - cpu) {100 * e:.2f}% of rms(cpu) <= 6%")
        check(worst <= 0.30, f"{name}: max |fp8 - cpu| {100 * worst:.1f}% of rms(cpu) <= 30%")
        check(rms(f8[1:] - ref[:-1]) / rms(ref) > 0.3, f"{name}: shifted rows do not match")
        agree = float(np.mean(f8.argmax(1) == res["bf16"].argmax(1)))
        check(agree >= 0.8, f"{name}: argmax agrees with bf16 on {100 * agree:.0f}% of rows")

    # The planted checkpoint: the known middle in fp8 as in bf16.
    with tempfile.TemporaryDirectory() as ptmp:
        subprocess.run([sys.executable, os.path.join(SRC, "tools", "planted_checkpoints.py"), ptmp],
                       check=True, stdout=subprocess.DEVNULL)
        model = os.path.join(ptmp, "planted-successor-shifted-bytes-3heads")
        src = os.path.join(ptmp, "letters.py")
        with open(src, "w") as f:
            f.write('S = "abc"\n')
        want = "defghijklmnopqrstuvwxyz"
        for extra in ((), ("--temperature", "0.7", "--seed", "5")):
            texts = {}
            for w in ("bf16", "fp8"):
                args = [sculpt_bin(), "complete", f"{src}:1:9", "--model", model, "--json",
                        "--device", "cuda", *extra] + (["--weights", "fp8"] if w == "fp8" else [])
                p = subprocess.run(args, capture_output=True, text=True, timeout=300)
                o = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {}
                texts[w] = o.get("text", o.get("completion", ""))
                check(p.returncode == 0, f"planted {w} {' '.join(extra)}: exit 0 "
                      f"({p.stderr.strip()[-300:]})")
            check(texts["bf16"].startswith(want) and texts["fp8"] == texts["bf16"],
                  f"planted {' '.join(extra) or 'greedy'}: fp8 {texts['fp8']!r} == bf16 "
                  f"{texts['bf16']!r} (want {want!r})")

    r = run("logits", "--model", dirs["dream-bf16"], "--ids", "1,2,3", "--out", out,
            "--device", "cpu", "--weights", "fp8")
    check(r.returncode != 0 and "fp8 weights run on a GPU" in r.stderr
          and r.stderr.strip().count("\n") == 0,
          f"the CPU refuses fp8 in one line ({r.returncode}: {r.stderr.strip()})")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

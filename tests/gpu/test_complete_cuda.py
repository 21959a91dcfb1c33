"""`sculpt complete --device cuda` against `--device cpu`: the whole engine
on the GPU, where each row's token is picked in the lm_head epilogue (no
logits reach the host) under the same rules as the CPU's model/pick.c.

On the planted checkpoints (hand-built weights whose right middle is known,
with probabilities near 1) the middle must be the same token for token,
greedy and sampled (the sampling noise is keyed by position, so both
devices draw the same), with and without the dual cache, and with an EOS
penalty (given, or the checkpoint's own), over a canvas wider than one
lm_head chunk, and for holes decoded
together in packed passes (`sculpt batch`). The CPU middle is checked
against the known answer first, so the comparison cannot pass on two empty
strings. Checkpoints with NaN or Inf weights are refused on both with
the same error. Drafts give the CPU's middles and passes. Skips (77) when
the binary has no CUDA backend or no device answers."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "model"))

from common import all_nan, inf_in_head, poison_safetensors, sculpt_bin, skip_unless_cuda  # noqa: E402,E501

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def complete(model, path, pos, *extra):
    p = subprocess.run([sculpt_bin(), "complete", f"{path}:{pos}", "--model", model, "--json",
                        *extra], capture_output=True, text=True, timeout=300)
    out = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None
    return p, out


with tempfile.TemporaryDirectory() as tmp:
    # This interpreter: a GPU machine's /usr/bin/python3 may have no numpy.
    # stderr is left to the log, so a failure says why.
    subprocess.run([sys.executable, os.path.join(SRC, "tools", "planted_checkpoints.py"), tmp],
                   check=True, stdout=subprocess.DEVNULL)
    # Three heads of 184: the CUDA backend takes head_dim <= 256 (the
    # single-head byte model is 552 wide and would run on the CPU).
    model = os.path.join(tmp, "planted-successor-shifted-bytes-3heads")
    src = os.path.join(tmp, "letters.py")
    with open(src, "w") as f:
        f.write('S = "abc"\n')
    pos = "1:9"  # after "abc": the planted model writes d..z, then ends
    want = "defghijklmnopqrstuvwxyz"

    probe, _ = complete(model, src, pos, "--device", "cuda")
    skip_unless_cuda(probe)
    check(probe.returncode == 0 and "falling back" not in probe.stderr,
          "the probe ran on the GPU: " + probe.stderr.strip().replace("\n", " ")[:400])

    cases = [("greedy", []), ("greedy, no cache", ["--no-cache"]),
             ("sampled", ["--temperature", "0.8", "--seed", "3"]),
             ("EOS penalty", ["--eos-penalty", "2"]),
             ("margin ranking", ["--algorithm", "margin", "--steps", "32"]),
             # Two candidate lengths decode as one packed batch; top-k rows are
             # picked on the host, so the pass returns logits with the picks.
             ("top-k, two lengths in one batch",
              ["--top-k", "40", "--temperature", "0.8", "--seed", "5", "--lengths", "24,32"]),
             # 200 masked rows in the first pass: more than one lm_head chunk
             # (kernels/model.cu ROW_CHUNK = 128) of per-row pick parameters.
             ("canvas of 200, one block", ["--max-tokens", "200", "--block-len", "0"]),
             ("entropy ranking", ["--algorithm", "entropy", "--steps", "32"])]
    for name, extra in cases:
        res = {}
        for dev in ("cpu", "cuda"):
            p, out = complete(model, src, pos, "--device", dev, *extra)
            check(out is not None, f"{name}, {dev}: exit 0 ({p.stderr.strip()[:300]})")
            check("falling back" not in p.stderr, f"{name}, {dev}: no fallback")
            res[dev] = out
        cpu, cuda = res["cpu"], res["cuda"]
        if not cpu or not cuda:
            continue
        check(cpu["text"] == want, f"{name}: the CPU writes the planted middle ({cpu['text']!r})")
        check("cuda" in cuda["model"]["device"], f"{name}: ran on {cuda['model']['device']}")
        check(cuda["ids"] == cpu["ids"], f"{name}: cuda {cuda['text']!r} == cpu {cpu['text']!r}")
        conf_err = max((abs(a - b) for a, b in zip(cuda["confidence"], cpu["confidence"])),
                       default=0.0)
        check(conf_err <= 2e-2, f"{name}: confidences within 2e-2 (max diff {conf_err:.2e})")

    # Drafts (model.h, sc_draft): the acceptance test reads the drafted rows'
    # logits, which the device hands back for a drafting step
    # (keep_logits). A right draft (accepted in one pass), a wrong one
    # (rejected, the model's letters written) and one that ends the middle
    # must give the CPU's middle, passes and counts, with and without the
    # dual cache.
    drafts = os.path.join(tmp, "drafts.py")
    for name, text, dwant in (("right draft", "x = abcdefghij\nx = abc\n", want),
                              ("wrong draft", "x = abcxyz\nx = abc\n", want),
                              ("ending draft", "x = abcdefghij\nx = abchij\n", "defg")):
        with open(drafts, "w") as f:
            f.write(text)
        for extra in ([], ["--no-cache"]):
            res = {dev: complete(model, drafts, "2:8", "--device", dev, "--max-tokens", "40",
                                 *extra)[1] for dev in ("cpu", "cuda")}
            cpu, cuda = res["cpu"], res["cuda"]
            if not cpu or not cuda:
                check(False, f"{name} {extra}: both devices answer")
                continue
            check(cpu["text"] == dwant and cpu["drafts"]["drafted"] > 0,
                  f"{name} {extra}: the CPU's middle {cpu['text']!r}, {cpu['drafts']}")
            check(cuda["ids"] == cpu["ids"] and cuda["steps"] == cpu["steps"] and
                  cuda["drafts"]["accepted"] == cpu["drafts"]["accepted"],
                  f"{name} {extra}: cuda {cuda['text']!r} {cuda['steps']} passes "
                  f"{cuda['drafts']} == cpu {cpu['steps']} passes {cpu['drafts']}")

    # The checkpoint's own EOS penalty (generation_config.json), with no flag:
    # it reaches the device's per-row pick parameters as on the CPU. At 100
    # the planted model cannot end after "z" and fills the canvas.
    gen = os.path.join(tmp, "with-generation-config")
    shutil.copytree(model, gen)
    with open(os.path.join(gen, "generation_config.json"), "w") as f:
        f.write('{"eos_penalty": 100}')
    res = {dev: complete(gen, src, pos, "--device", dev)[1] for dev in ("cpu", "cuda")}
    if res["cpu"] and res["cuda"]:
        check(res["cpu"]["text"].startswith(want) and len(res["cpu"]["text"]) > len(want),
              f"model's EOS penalty: the CPU fills the canvas ({res['cpu']['text']!r})")
        check(res["cuda"]["ids"] == res["cpu"]["ids"],
              f"model's EOS penalty: cuda {res['cuda']['text']!r} == cpu {res['cpu']['text']!r}")
    else:
        check(False, "model's EOS penalty: both devices answer")

    # Holes decoded together (sculpt batch --batch-sites): packed passes,
    # each request's rows picked on the device, against the CPU.
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    for i, lead in enumerate(("abc", "ghi", "mno")):
        with open(os.path.join(repo, f"h{i}.py"), "w") as f:
            f.write(f'S{i} = {lead}TODO(sculpt)\n')  # a hole in code, not in a string
    subprocess.run(["git", "init", "-q", repo], check=True)
    subprocess.run(["git", "-C", repo, "add", "."], check=True)
    texts = {}
    for dev in ("cpu", "cuda"):
        p = subprocess.run([sculpt_bin(), "batch", "--holes", "--batch-sites", "--json", "--model",
                            model, "--device", dev, repo], capture_output=True, text=True,
                           timeout=300)
        check(p.returncode == 0 and "falling back" not in p.stderr,
              f"batch on {dev}: exit {p.returncode} ({p.stderr.strip()[:300]})")
        try:
            sites = json.loads(p.stdout)["sites"]
        except (ValueError, KeyError):
            sites = []
        texts[dev] = sorted((os.path.basename(x["file"]), x.get("text")) for x in sites)
    check(len(texts["cpu"]) == 3 and texts["cpu"][0][1] == want,
          f"batch on the CPU fills the planted middles: {texts['cpu']}")
    check(texts["cuda"] == texts["cpu"], f"batch: cuda {texts['cuda']} == cpu {texts['cpu']}")

    # NaN or infinite logits (broken weights): the lm_head epilogue flags
    # them as model/pick.c does, so the GPU refuses with the CPU's error
    # (naming the checkpoint), greedy and sampled, never a blank middle.
    with open(os.path.join(model, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    for what, fn in (("NaN weights", all_nan), ("an Inf in lm_head", inf_in_head(vocab))):
        bad = os.path.join(tmp, what.replace(" ", "-"))
        shutil.copytree(model, bad)
        poison_safetensors(os.path.join(bad, "model.safetensors"), fn)
        for extra in ([], ["--temperature", "0.8", "--seed", "4"]):
            errs = {}
            for dev in ("cpu", "cuda"):
                p, _ = complete(bad, src, pos, "--device", dev, *extra)
                check(p.returncode != 0 and bad in p.stderr and "NaN or infinite" in p.stderr
                      and "falling back" not in p.stderr,
                      f"{what} {extra}, {dev}: refused naming the checkpoint "
                      f"({p.returncode}: {p.stderr.strip()[-200:]})")
                errs[dev] = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
            check(errs["cpu"] == errs["cuda"], f"{what} {extra}: the same error on both devices")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

"""`sculpt complete --preset upstream` against the model authors' decode loops,
re-implemented in numpy from their sources (upstream_loops.py), on a tiny
checkpoint of each family's layout (tools/tiny_checkpoints.py FAMILY_SPECS),
greedy: the decoded canvas must be the same ids, and the middle must be that
canvas ended and cleaned by the family's rule (no special token in it).

The numpy loops get their logits from `sculpt logits` (the forward pass, which
test_logits.py checks against an independent numpy forward), so the loops are
compared on identical numbers; the framing, the ranking, the transfer counts,
the remasking and DreamOn's edits are all the loops' own.

sculpt's own profile is not here: its `upstream` is sculpt's fixed-k loop
(model/train/evaluate.py runs `sculpt complete --steps canvas`)."""
import json
import os
import sys

import numpy as np

from common import run, sculpt_bin, tempdir, tiny_checkpoints
import upstream_loops as up

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class Forward:
    """forward(ids) -> raw logits [n][V] from `sculpt logits` (cached)."""

    def __init__(self, model_dir, vocab, out):
        self.d, self.V, self.out, self.cache, self.calls = model_dir, vocab, out, {}, 0

    def __call__(self, ids):
        key = tuple(int(t) for t in ids)
        if key not in self.cache:
            r = run("logits", "--model", self.d, "--device", "cpu", "--ids",
                    ",".join(map(str, key)), "--out", self.out)
            assert r.returncode == 0, r.stderr
            self.cache[key] = np.fromfile(self.out, dtype="<f4").reshape(len(key), self.V)
            self.calls += 1
        return self.cache[key].astype(np.float64)


PREFIX = "def area(w, h):\n    return "
SUFFIX = "\n\nprint(area(2, 3))\n"

sculpt_bin()
with tempdir() as tmp:
    src = os.path.join(tmp, "a.py")
    with open(src, "w") as f:
        f.write(PREFIX + SUFFIX)
    target = f"{src}:2:{len('    return ') + 1}"
    pre, suf = list(PREFIX.encode()), list(SUFFIX.encode())  # the byte tokenizer: id = byte

    def sculpt(d, m, *extra):
        r = run("complete", target, "--model", d, "--preset", "upstream", "--temperature", "0",
                "--max-tokens", str(m), "--device", "cpu", "--json", *extra)
        check(r.returncode == 0, f"{os.path.basename(d)}: sculpt complete exits 0 "
                                 f"({r.stderr.strip()})")
        return json.loads(r.stdout) if r.returncode == 0 else None

    for name, spec in tiny_checkpoints.FAMILY_SPECS.items():
        if name in ("sculpt-bytes", "llada-vocab"):
            continue
        d = tiny_checkpoints.generate(name, spec, tmp)
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        ids = up.special_ids(d)
        if cfg.get("mask_token_id") is not None:
            ids["mask"] = cfg["mask_token_id"]
        fwd = Forward(d, spec["vocab"], os.path.join(tmp, "logits.bin"))
        prof = spec["profile"]
        trace = {}
        if prof["name"] in ("dream", "diffucoder-instruct"):
            m = 12
            want = up.dreamon_fixed(fwd, ids, pre, suf, m)
        elif prof["name"] == "dreamon":
            m = 4  # min_gen_len
            want = up.dreamon_expand(fwd, ids, pre, suf, m, expand_id=prof["expand_id"],
                                     max_gen_len=cfg["sculpt_max_infill"], trace=trace)
        elif prof["name"] == "coda":
            m = 12
            want = up.dream_schedule(fwd, ids, pre, suf, m, bos=ids["adds_bos"])
        elif prof["name"] == "open-dcoder":
            m = 12
            want = up.p2(fwd, ids, pre, suf, m, bos=ids["adds_bos"])
        elif prof["name"] == "llada":
            m = 64
            want = up.llada(fwd, ids, pre, suf, m, bos=ids["adds_bos"])
        else:
            check(False, f"{name}: no upstream loop for profile {prof['name']}")
            continue
        got = sculpt(d, m)
        if got is None:
            continue
        check(got["model"]["profile"] == prof["name"] and got["preset"] == "upstream",
              f"{name}: profile {got['model']['profile']}, preset {got['preset']}")
        check(got["canvas_ids"] == want,
              f"{name}: {got['loop']} canvas matches upstream "
              f"({fwd.calls} numpy steps)\n  sculpt {got['canvas_ids']}\n  numpy  {want}")
        ends = set(prof["end_ids"])
        drop = set(range(256, spec["vocab"]))  # every added token is special here
        check(got["ids"] == up.middle(want, ends, drop),
              f"{name}: the middle is the canvas up to its first end token, cleaned "
              f"{got['ids']}")
        check("<|" not in got["text"] and "[MASK]" not in got["text"],
              f"{name}: no special token text in {got['text']!r}")
        # The checkpoint makes the rules act: an end token in the canvas (and
        # for DreamOn, expands and deletes), else this test would not see them.
        if prof["name"] == "dreamon":
            check(trace.get("expand", 0) > 0 and trace.get("delete", 0) > 0,
                  f"{name}: the run expands and deletes ({trace})")
        else:
            check(any(t in ends for t in want) and want[0] not in ends,
                  f"{name}: the canvas holds an end token, after a token")

        # The comparison discriminates: another ranking gives another canvas.
        if prof["name"] in ("dream", "coda"):
            other = (up.dreamon_fixed(fwd, ids, pre, suf, m, alg="confidence")
                     if prof["name"] == "dream" else
                     up.dream_schedule(fwd, ids, pre, suf, m, bos=ids["adds_bos"],
                                       alg="confidence"))
            check(other != want, f"{name}: ranking by confidence instead of entropy differs")

    # A suffix too long for the context is cut from its end, and then no EOS
    # (nor the harness's EOS padding) follows it: the model must not be told
    # the file ends there. The prefix stays whole (it fits in half the room).
    spec = dict(tiny_checkpoints.FAMILY_SPECS["dream-bytes"], seed=3)
    d = tiny_checkpoints.generate("dream-bytes-256", spec, tmp)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    cfg["max_position_embeddings"] = 256  # a short context keeps this quick
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    long_suffix = SUFFIX + "".join(f"x{i} = area({i}, {i})\n" for i in range(40))
    with open(src, "w") as f:
        f.write(PREFIX + long_suffix)
    got = sculpt(d, 12)
    if got:
        ctx = got["context"]
        max_seq = 256
        room = max_seq - 1 - 12  # the BOS and the canvas: no EOS, no padding
        check(ctx["suffix_cut"] and ctx["prefix_tokens"] == len(pre) and
              ctx["suffix_tokens"] == room - len(pre),
              f"long suffix: cut to {ctx['suffix_tokens']} tokens, prefix whole ({ctx})")
        ids = up.special_ids(d)
        ids["mask"] = 302
        fwd = Forward(d, spec["vocab"], os.path.join(tmp, "logits.bin"))
        cut = list(long_suffix.encode())[:ctx["suffix_tokens"]]
        want = up.dreamon_fixed(fwd, ids, pre, cut, 12, max_gen_len=0, suffix_eos=False)
        check(got["canvas_ids"] == want, f"long suffix: the canvas matches upstream's loop "
                                         f"without an EOS after the cut suffix")
        with_eos = up.dreamon_fixed(fwd, ids, pre, cut, 12, max_gen_len=64)
        check(with_eos != want, "long suffix: the EOS would have changed the middle")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

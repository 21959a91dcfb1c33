"""`sculpt model info` (text and --json) against what tools/tiny_checkpoints.py
wrote: family, sizes, dtype, special ids and their sources, shift, tying."""
import json
import sys

from common import make_all, run, tempdir, tiny_checkpoints

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


with tempdir() as tmp:
    for name, d in make_all(tmp).items():
        spec = tiny_checkpoints.SPECS[name]
        r = run("model", "info", "--model", d)
        check(r.returncode == 0, f"{name}: exit 0 ({r.stderr.strip()})")
        text = dict(l.split(": ", 1) for l in r.stdout.splitlines() if ": " in l)
        r = run("model", "info", "--model", d, "--json")
        info = json.loads(r.stdout)
        check(set(text) == set(info) and all(text[k] == (str(v).lower() if isinstance(v, bool)
                                                          else str(v)) for k, v in info.items()
                                             if not isinstance(v, float)),
              f"{name}: text and --json agree")
        hd = spec.get("head_dim") or spec["hidden"] // spec["heads"]
        want = dict(family=spec["family"], layers=spec["layers"], hidden=spec["hidden"],
                    heads=spec["heads"], kv_heads=spec["kv_heads"] or spec["heads"],
                    head_dim=hd, intermediate=spec["inter"], vocab=spec["vocab"],
                    params=tiny_checkpoints.n_params(name, spec),
                    dtype=spec["dtype"].lower(), **spec["expect"])
        want["tied_embeddings"] = not any(
            n in ("lm_head.weight", "model.transformer.ff_out.weight")
            for n, _ in tiny_checkpoints.tensor_list(spec, __import__("numpy").random.default_rng(0)))
        bad = {k: (info.get(k), v) for k, v in want.items() if info.get(k) != v}
        check(not bad, f"{name}: fields match {bad if bad else ''}")
        check(info["memory_bytes"] == info["weight_bytes"] + info["context_bytes"] and
              info["weight_bytes"] > 0, f"{name}: memory = weights + context")
        small = json.loads(run("model", "info", "--model", d, "--json", "--max-seq", "64").stdout)
        check(small["max_seq"] == 64 and small["context_bytes"] < info["context_bytes"],
              f"{name}: --max-seq sizes the context arena")
    r = run("model", "info")
    check(r.returncode == 2, "no --model: exit 2")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

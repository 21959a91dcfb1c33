"""`sculpt model info` (text and --json) against what tools/tiny_checkpoints.py
wrote: family, sizes, dtype, special ids and their sources, shift, tying, and
the family profile (framing, end tokens, presets; model/family.c), including
its config.json overrides and their errors."""
import json
import os
import sys

from common import make_all, run, tempdir, tiny_checkpoints

failures = []


def flatten(o, prefix=""):
    out = {}
    for k, v in o.items():
        if isinstance(v, dict):
            out.update(flatten(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def as_text(v):
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)


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
        flat = flatten(info)
        check(set(text) == set(flat) and all(text[k] == as_text(v) for k, v in flat.items()
                                             if not isinstance(v, float)),
              f"{name}: text and --json agree")
        prof = info["profile"]
        want_prof = spec.get("profile", {})
        bad = {k: (prof.get(k), v) for k, v in want_prof.items() if prof.get(k) != v}
        check(not bad, f"{name}: profile {prof['name']} {bad if bad else ''}")
        check(prof["source"] and prof["preset"] in ("fast", "upstream"),
              f"{name}: the profile cites its source")
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
        # Resident weights: the converted copy where there is one (f32
        # through oneDNN), else the mapped checkpoint.
        check(info["memory_bytes"] == (info["packed_bytes"] or info["weight_bytes"]) +
              info["context_bytes"] and info["weight_bytes"] > 0,
              f"{name}: memory = resident weights + context")
        small = json.loads(run("model", "info", "--model", d, "--json", "--max-seq", "64").stdout)
        check(small["max_seq"] == 64 and small["context_bytes"] < info["context_bytes"],
              f"{name}: --max-seq sizes the context arena")
    # No --model: the model the other subcommands load, $SCULPT_MODEL first,
    # else the shipped one (issue 43); a $SCULPT_MODEL that is not there is
    # one error line, not the shipped model behind the user's back.
    d = os.path.join(tmp, "sculpt-bytes")
    named = json.loads(run("model", "info", "--model", d, "--json").stdout)
    r = run("model", "info", "--json", env={**os.environ, "SCULPT_MODEL": d})
    check(r.returncode == 0 and json.loads(r.stdout) == named,
          "no --model: $SCULPT_MODEL is described")
    env = {k: v for k, v in os.environ.items() if k != "SCULPT_MODEL"}
    r = run("model", "info", "--json", env=env)
    shipped = os.path.join(os.environ.get("SCULPT_SOURCE_DIR", ""), "model", "default")
    if os.path.isfile(os.path.join(shipped, "config.json")):
        check(r.returncode == 0 and json.loads(r.stdout)["layers"] > 0,
              f"no --model, no $SCULPT_MODEL: the shipped model ({r.returncode} {r.stderr.strip()})")
    r = run("model", "info", env={**env, "SCULPT_MODEL": os.path.join(tmp, "absent")})
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0 and len(lines) == 1 and "absent" in lines[0],
          f"$SCULPT_MODEL absent: one error line naming it ({r.returncode} {lines})")

    # Overrides: each sculpt_* key changes the profile; a bad value is one
    # error line naming the key (exit 1, the checkpoint is at fault).
    import shutil
    base = os.path.join(tmp, "dream-bytes")
    cases = [({"sculpt_profile": "dreamon"}, dict(name="dreamon", eos_fill=True)),
             ({"sculpt_bos_token_id": -1}, dict(bos_id=-1, overridden=True)),
             ({"sculpt_eos_after_suffix": False}, dict(eos_after_suffix=False)),
             ({"sculpt_end_token_ids": [300, 65]}, dict(end_ids=[300, 65])),
             ({"sculpt_eos_fill": True}, dict(eos_fill=True)),
             ({"sculpt_expand_token_id": 303}, dict(expand_id=303)),
             ({"sculpt_max_infill": 48}, dict(max_infill=48)),
             ({"sculpt_preset": "upstream"}, dict(preset="upstream"))]

    def with_keys(name, keys):
        """A copy of base whose config.json has keys added."""
        d = os.path.join(tmp, name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        cfg.update(keys)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        return d

    for i, (keys, want) in enumerate(cases):
        d = with_keys(f"override{i}", keys)
        r = run("model", "info", "--model", d, "--json")
        prof = json.loads(r.stdout)["profile"] if r.returncode == 0 else {}
        bad = {k: (prof.get(k), v) for k, v in want.items() if prof.get(k) != v}
        check(r.returncode == 0 and not bad, f"override {keys}: {bad or r.stderr.strip()}")
    for keys, key in [({"sculpt_profile": "gpt"}, "sculpt_profile"),
                      ({"sculpt_end_token_ids": [99999]}, "sculpt_end_token_ids"),
                      ({"sculpt_bos_token_id": "x"}, "sculpt_bos_token_id"),
                      ({"sculpt_eos_fill": 1}, "sculpt_eos_fill"),
                      ({"sculpt_preset": "slow"}, "sculpt_preset")]:
        d = with_keys("bad-override", keys)
        r = run("model", "info", "--model", d)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 1 and len(lines) == 1 and key in lines[0],
              f"bad {keys}: exit 1, one line naming {key} ({r.returncode}: {r.stderr.strip()})")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)

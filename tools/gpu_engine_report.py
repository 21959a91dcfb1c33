#!/usr/bin/env python3
"""The engine section of a GPU results file (issue 40), from the logs
tools/gpu_engine.sh leaves in one folder:

  check-kernels.log       tests/gpu/test_cuda_kernels (ok/FAIL per test)
  check-forward-*.log     tests/gpu/test_cuda_forward, one per set of paths
  switches.env            the switches the measurements ran under
  *.log                   everything `sculpt bench --synthetic` and
                          tests/gpu/bench_torch.py printed: PROFILE, AB,
                          CHUNKS, INFILL and RESULT lines

    tools/gpu_engine_report.py LOGS [--device NAME] > engine-results.md
    tools/gpu_engine_report.py LOGS --switches > LOGS/switches.env

Markdown tables, then the issue's targets, each met or NOT met. Only what
the logs hold is reported: a missing measurement is a '-' and a target
without its figures says so."""
import argparse
import glob
import os
import re
import sys

KINDS = ["upload", "embed", "norm", "gemm_qkv", "qkv_post", "attention", "attn_combine",
         "gemm_o", "gemm_gate_up", "swiglu", "gemm_down", "head_gather", "head_gemm",
         "head_stats", "download", "total"]


def kv(line):
    return dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)


def read_lines(folder):
    out = {"PROFILE": [], "AB": [], "CHUNKS": [], "INFILL": [], "RESULT": []}
    for f in sorted(glob.glob(os.path.join(folder, "*.log"))):
        for line in open(f, errors="replace"):
            tag = line.split(" ", 1)[0]
            if tag in out:
                out[tag].append(kv(line))
    return out


def fnum(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


# The switches each set of paths turns (tools/gpu_engine.sh's check phase).
PATH_SWITCHES = {"attn-simt": ["SCULPT_CUDA_ATTN=simt"], "head-host": ["SCULPT_CUDA_HEAD=host"],
                 "fuse-off": ["SCULPT_CUDA_FUSE=0"], "graphs-off": ["SCULPT_CUDA_GRAPH=0"]}
OLD = ["SCULPT_CUDA_ATTN=simt", "SCULPT_CUDA_HEAD=host", "SCULPT_CUDA_FUSE=0"]
# `sculpt bench --variants` names and the environment they stand for.
VARIANT_ENV = {"graphs=off": "SCULPT_CUDA_GRAPH=0", "attn=simt": "SCULPT_CUDA_ATTN=simt",
               "attn=mma": "SCULPT_CUDA_ATTN=mma", "head=host": "SCULPT_CUDA_HEAD=host",
               "fuse=off": "SCULPT_CUDA_FUSE=0", "gemm=narrow": "SCULPT_CUDA_GEMM=narrow",
               "gemm=cublas": "SCULPT_CUDA_GEMM=cublas"}


def verdict(path):
    """True: passed, False: failed, None: skipped or absent (no verdict)."""
    if not os.path.exists(path):
        return None
    txt = open(path, errors="replace").read()
    if "skipping" in txt:
        return None
    m = re.search(r"(\d+) checks, (\d+) failures", txt)
    return bool(m) and m.group(2) == "0"


def switches(folder):
    """What the measurements run under: a kernel whose own parity failed is
    off; when the defaults fail the forward parity, each path whose turning
    off alone passes is off, and when none does, every new path is."""
    out = []
    k = os.path.join(folder, "check-kernels.log")
    if os.path.exists(k) and re.search(r"^FAIL test_attention_mma", open(k).read(), re.M):
        out.append("SCULPT_CUDA_ATTN=simt")
    if os.path.exists(k) and re.search(r"^FAIL test_gemm_narrow", open(k).read(), re.M):
        out.append("SCULPT_CUDA_GEMM=cublas")
    if verdict(os.path.join(folder, "check-forward-defaults.log")) is False:
        alone = [sw for name, sws in PATH_SWITCHES.items()
                 if verdict(os.path.join(folder, f"check-forward-{name}.log")) for sw in sws]
        out += alone if alone else OLD
    return sorted(set(out))


def pivot(rows, col, key, title, heads):
    """Prints a table of ms: a row per key(r), a column per r[col] (in order
    of appearance); returns {key: {col value: ms}}."""
    table, cols = {}, []
    for r in rows:
        table.setdefault(key(r), {})[r[col]] = float(r["ms"])
        if r[col] not in cols:
            cols.append(r[col])
    if table:
        print(f"### {title}")
        print()
        print("| " + " | ".join(heads + cols) + " |")
        print("|" + "---|" * (len(heads) + len(cols)))
        for k in sorted(table):
            print("| " + " | ".join([str(x) for x in k] + [fnum(table[k].get(c)) for c in cols])
                  + " |")
        print()
    return table


def prefer(log, forced):
    """The switches whose variant beat the defaults by 3% or more at every
    point of a profile's log (AB lines), unless parity forced that switch."""
    ab = {}
    for line in open(log, errors="replace"):
        if line.startswith("AB "):
            r = kv(line)
            ab.setdefault((r["context"], r["canvas"]), {})[r["variant"]] = float(r["ms"])
    out = []
    names = {v for pts in ab.values() for v in pts} - {"default"}
    for v in sorted(names):
        env = VARIANT_ENV.get(v)
        if not env or any(f.split("=")[0] == env.split("=")[0] for f in forced):
            continue
        pts = [p for p in ab.values() if "default" in p]
        if pts and all(v in p and p[v] <= 0.97 * p["default"] for p in pts):
            out.append(env)
    return out


def parity(folder):
    lines = []
    k = os.path.join(folder, "check-kernels.log")
    if os.path.exists(k):
        txt = open(k, errors="replace").read()
        res = re.findall(r"^(ok  |FAIL) (test_\w+)", txt, re.M)
        bad = [n for s, n in res if s == "FAIL"]
        lines.append(f"- per-kernel parity (tests/gpu/test_cuda_kernels): {len(res)} tests, "
                     + (f"FAILED: {', '.join(bad)}" if bad else "all passed"))
        errs = [m for m in re.findall(r"EXPECT failed: .*", txt)][:6]
        for e in errs:
            lines.append(f"  - `{e[:160]}`")
    else:
        lines.append("- per-kernel parity: not run")
    for f in sorted(glob.glob(os.path.join(folder, "check-forward-*.log"))):
        name = os.path.basename(f)[len("check-forward-"):-4]
        txt = open(f, errors="replace").read()
        m = re.search(r"(\d+) checks, (\d+) failures", txt)
        skipped = "skipping" in txt
        state = ("skipped" if skipped else f"{m.group(2)} failures of {m.group(1)} checks"
                 if m else "did not finish")
        lines.append(f"- forward parity against the CPU, paths `{name}`: {state}")
        for e in re.findall(r"EXPECT failed: .*", txt)[:3]:
            lines.append(f"  - `{e[:160]}`")
    s = os.path.join(folder, "switches.env")
    if os.path.exists(s):
        sw = [l.strip().replace("export ", "") for l in open(s) if l.startswith("export ")]
        lines.append("- switches parity turned: "
                     + (", ".join(f"`{x}`" for x in sw) if sw else "none (every new path on)"))
    s = os.path.join(folder, "preferred.env")
    if os.path.exists(s):
        sw = [l.strip().replace("export ", "") for l in open(s) if l.startswith("export ")]
        lines.append("- switches the first model's A/B found faster, for the infills and step "
                     "tables after it: " + (", ".join(f"`{x}`" for x in sw) if sw else "none"))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs")
    ap.add_argument("--device", default="")
    ap.add_argument("--switches", action="store_true",
                    help="print the switches the parity logs call for, as export lines")
    ap.add_argument("--prefer", metavar="PROFILE_LOG",
                    help="print the switches whose variant was faster in this log")
    a = ap.parse_args()
    if a.switches:
        for sw in switches(a.logs):
            print(f"export {sw}")
        return 0
    if a.prefer:
        forced = switches(a.logs)
        for sw in prefer(a.prefer, forced):
            print(f"export {sw}")
        return 0
    L = read_lines(a.logs)
    print(f"## Engine (issue 40): parity, profile, switches, whole infills, peers"
          f"{' on ' + a.device if a.device else ''}")
    print()
    print("Made by tools/gpu_engine.sh (logs: PROFILE/AB/CHUNKS/INFILL/RESULT lines).")
    print()
    for l in parity(a.logs):
        print(l)
    print()

    # Profile by kind.
    prof = {}
    modes = {}
    for r in L["PROFILE"]:
        key = (r["model"], int(r["context"]), int(r["canvas"]))
        modes.setdefault(key, set()).add(r["mode"])
        prof.setdefault(key, {}).setdefault(r["kind"], {})[r["mode"]] = (
            float(r["ms"]), int(r.get("groups", 0) or 0))
    if prof:
        print("### One step by kernel kind (canvas rows over the cached context)")
        print()
        print("CUDA events around each group of launches, summed over the layers; 'graph': "
              "event nodes inside a graph of the step (what a replay spends), 'eager': launched "
              "one by one. Median of the run's repeats.")
        print()
        for key in sorted(prof):
            g = "graph" if "graph" in modes[key] else "eager"
            tot = prof[key].get("total", {}).get(g, (None, 0))[0]
            print(f"{key[0]}, context {key[1]}, canvas {key[2]}:")
            print()
            print(f"| kind | groups | {g} ms | share | eager ms |")
            print("|---|---|---|---|---|")
            for k in KINDS:
                if k not in prof[key]:
                    continue
                gv, gr = prof[key][k].get(g, (None, 0))
                ev = prof[key][k].get("eager", (None, 0))[0] if g == "graph" else None
                share = f"{100 * gv / tot:.1f}%" if (gv is not None and tot and k != "total") else ""
                print(f"| {k} | {gr or ''} | {fnum(gv, 4)} | {share} | {fnum(ev, 4)} |")
            print()

    # A/B switches, then the key splits: one row per point, a column per value.
    ab = pivot(L["AB"], "variant", lambda r: (r["model"], int(r["context"]), int(r["canvas"])),
               "The step under each switch (ms per step, median; each against the defaults)",
               ["model", "context", "canvas"])
    pivot(L["CHUNKS"], "chunks",
          lambda r: (r["model"], int(r["context"]), int(r["canvas"]), r.get("attn", "")),
          "Attention key splits (ms per step; auto = the planner's)",
          ["model", "context", "canvas", "attention"])

    inf = {}
    for r in L["INFILL"]:
        inf[(r["model"], r.get("device", "cuda"), int(r["context"]), int(r["canvas"]))] = r
    if inf:
        print("### Whole infills through the engine (k tokens a step)")
        print()
        print("| model | device | context | canvas | per step | ms | tok/s | passes | "
              "steps alone ms | overhead | captures | waits/pass |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for key in sorted(inf):
            r = inf[key]
            print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {r['per_step']} | "
                  f"{float(r['ms']):.3f} | {float(r['tok_s']):.0f} | {r['passes']} | "
                  f"{float(r['steps_sum_ms']):.3f} | {float(r['overhead_pct']):.1f}% | "
                  f"{r['captures']} | {r.get('syncs_per_pass', '-')} |")
        print()

    res = {}
    for r in L["RESULT"]:
        res.setdefault((r["model"], int(r["context"]), int(r["canvas"])), {})[r["impl"]] = r
    # sculpt's step: the step table, else the A/B run's defaults.
    def sculpt_ms(key):
        s = res.get(key, {}).get("sculpt")
        if s:
            return float(s["ms"]), float(s["roofline_ms"])
        d = ab.get(key, {}).get("default")
        return (d, None) if d is not None else (None, None)

    keys = sorted(set(res) | set(ab))
    if keys:
        print("### Against PyTorch (same shapes, same GPU, same run)")
        print()
        print("| model | context | canvas | sculpt ms | x roofline | torch eager ms | "
              "torch.compile ms | eager / sculpt | compile / sculpt |")
        print("|---|---|---|---|---|---|---|---|---|")
        for key in keys:
            sm, roof = sculpt_ms(key)
            te = res.get(key, {}).get("torch")
            tc = res.get(key, {}).get("torch_compile")
            te = float(te["ms"]) if te else None
            tc = float(tc["ms"]) if tc else None
            print(f"| {key[0]} | {key[1]} | {key[2]} | {fnum(sm)} | "
                  f"{fnum(sm / roof if sm and roof else None, 2)} | {fnum(te)} | {fnum(tc)} | "
                  f"{fnum(te / sm if te and sm else None, 2)} | "
                  f"{fnum(tc / sm if tc and sm else None, 2)} |")
        print()

    # The targets (H200).
    print("### Targets (issue 40, H200)")
    print()

    def step_target(model, ctx, limit, goal):
        key = (model, ctx, 32)
        sm, roof = sculpt_ms(key)
        if sm is None or roof is None:
            return f"- {model} canvas 32 context {ctx} step <= {limit}x roofline: no figures"
        r = sm / roof
        return (f"- {model} canvas 32 context {ctx}: {sm:.3f} ms, {r:.2f}x the roofline "
                f"(target {limit}x: {'met' if r <= limit else 'NOT met'}; goal {goal}x: "
                f"{'met' if r <= goal else 'not yet'})")
    print(step_target("dream-7b", 512, 1.5, 1.25))
    print(step_target("open-dcoder-0.5b", 512, 3.0, 1.5))
    peers = [k for k in keys if k[1] == 4096]
    for key in peers:
        sm, _ = sculpt_ms(key)
        te = res.get(key, {}).get("torch")
        tc = res.get(key, {}).get("torch_compile")
        if sm is None:
            continue
        parts = []
        if te:
            x = float(te["ms"]) / sm
            parts.append(f"{x:.2f}x faster than eager (target 2x: {'met' if x >= 2 else 'NOT met'})")
        if tc:
            x = float(tc["ms"]) / sm
            parts.append(f"{x:.2f}x torch.compile (target > 1x: {'met' if x > 1 else 'NOT met'})")
        if parts:
            print(f"- {key[0]} context 4096 canvas {key[2]}: " + ", ".join(parts))
    for model, want in (("dream-7b", 1000), ("dream-7b:fp8", 1000), ("open-dcoder-0.5b", 3000)):
        rows = [r for k, r in inf.items() if k[0] == model and k[1] == "cuda" and k[3] == 32
                and r["per_step"] == "4"]
        if not rows and not model.endswith(":fp8"):
            print(f"- {model} whole 32-token infill at 4 a step: no figures")
        for r in sorted(rows, key=lambda r: int(r["context"])):
            tps, ov = float(r["tok_s"]), float(r["overhead_pct"])
            print(f"- {model} whole 32-token infill, context {r['context']}: {tps:.0f} tok/s "
                  f"(target {want}: {'met' if tps >= want else 'NOT met'}), loop overhead "
                  f"{ov:.1f}% over its steps alone (target <= 10%: "
                  f"{'met' if ov <= 10 else 'NOT met'}), {r['captures']} graph captures")
    f8 = [(k, r["sculpt"]) for k, r in res.items() if k[0] == "dream-7b:fp8" and k[2] == 32
          and "sculpt" in r]
    if not f8:
        print("- FP8 7B step <= 2.3 ms: no figures")
    for k, r in sorted(f8):
        ms = float(r["ms"])
        print(f"- FP8 7B step, context {k[1]} canvas 32: {ms:.3f} ms (target 2.3 ms: "
              f"{'met' if ms <= 2.3 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

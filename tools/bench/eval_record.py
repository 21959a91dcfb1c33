#!/usr/bin/env python3
"""The figures of one `sculpt eval --results FILE` run, per system, and with
--record the model's into bench/results/ (group "eval", beside its peer in
the same run: the line n-gram), for tools/bench/perf_tables.py.

    tools/bench/eval_record.py RESULTS.jsonl [RESULTS.jsonl ...] --label LABEL
        [--drafts TEXT] [--system model] [--peer line-ngram] [--command CMD] [--record]

LABEL names the model in the tables (a folder alone says nothing once its
weights change: "model/default (shipped 2026-12-07)"). --drafts says how
drafts were set in the run ("on (0.0003, the default)", "off"); the tasks'
own counts say whether any were drafted.

Per benchmark: repository tasks give exact match, character similarity,
the share of Python answers whose file still compiles, and tokens a pass
(committed tokens over forward passes); HumanEval-Infilling gives pass@1 and
exact match. Figures come from the per-task lines alone, so what is
recorded is what anyone can recompute from the file.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import results  # noqa: E402


def load(path):
    """{system: [task lines]} of one results file, and its benchmark."""
    by, bench = {}, None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            if bench not in (None, r["bench"]):
                raise SystemExit(f"{path}:{n}: a second benchmark ({r['bench']} after {bench})")
            bench = r["bench"]
            by.setdefault(r["system"], []).append(r)
    if not by:
        raise SystemExit(f"{path}: no tasks")
    return bench, by


def figures(rows):
    """[(metric, value, unit)] of one system's tasks."""
    n = len(rows)
    out = []
    if any("passed" in r for r in rows):
        out.append(("pass@1", 100.0 * sum(bool(r.get("passed")) for r in rows) / n, "%"))
    out.append(("exact match", 100.0 * sum(bool(r.get("exact")) for r in rows) / n, "%"))
    if any("similarity" in r for r in rows):
        out.append(("character similarity", sum(r.get("similarity", 0.0) for r in rows) / n,
                    "share"))
    py = [r for r in rows if r.get("lang") == "python" and r.get("compiles") is not None]
    if py:
        out.append(("Python that compiles",
                    100.0 * sum(bool(r["compiles"]) for r in py) / len(py), "%"))
    steps = sum(r.get("steps", 0) for r in rows)
    if steps:
        out.append(("tokens a pass", sum(r.get("committed", 0) for r in rows) / steps, "tokens"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="RESULTS.jsonl")
    ap.add_argument("--label", required=True, help="the model's name in the tables")
    ap.add_argument("--drafts", default=None, help="how drafts were set in the run")
    ap.add_argument("--system", default="model", help="the system recorded (default model)")
    ap.add_argument("--peer", default="line-ngram", help="its peer in the run (default line-ngram)")
    ap.add_argument("--command", default=None,
                    help="the `sculpt eval` command line that made the file, for the records")
    results.add_flag(ap)
    a = ap.parse_args()
    for path in a.files:
        bench, by = load(path)
        if a.system not in by:
            raise SystemExit(f"{path}: no system {a.system!r} (has {', '.join(sorted(by))})")
        mine = figures(by[a.system])
        peer = dict((m, v) for m, v, _ in figures(by[a.peer])) if a.peer in by else {}
        n = len(by[a.system])
        print(f"{bench}, {n} tasks ({os.path.basename(path)})")
        for system, rows in sorted(by.items()):
            print(f"  {system:16s} " + ", ".join(f"{m} {results.sig(v, 3)}"
                                                 for m, v, _ in figures(rows)))
        if not a.record:
            continue
        config = dict(a.record_config, benchmark=bench, model=a.label, tasks=n)
        if a.drafts:
            config["drafts"] = a.drafts
        cmd = a.command or f"sculpt eval {bench} --results {os.path.basename(path)}"
        for metric, value, unit in mine:
            p = None
            if metric in peer and metric != "tokens a pass":
                p = {"name": f"{a.peer}, same run", "value": results.sig(peer[metric])}
            results.record(group="eval", metric=metric, value=results.sig(value), unit=unit,
                           better="higher", config=config, peer=p, command=cmd)
    results.done()


if __name__ == "__main__":
    main()

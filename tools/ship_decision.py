#!/usr/bin/env python3
"""The default model's ship rule (issue 41; model/train/README.md), applied
to `sculpt eval --json` summaries of a candidate (run with --model
CANDIDATE, so the shipped model is the baseline "shipped-model") and to
its CPU latency:

  ship when the candidate beats the shipped model on one of
  humaneval-single (pass@1) and repo-single (exact match) by McNemar's
  exact test at p < 0.05, is not worse on the other (its rate at least the
  shipped model's), and `sculpt bench --replay` at default settings gives
  a p50 of at most 150 ms on this 2-core machine.

The line n-gram's figures are reported beside it, the goal, never a gate.

    ship_decision.py --humaneval HE.json --repo REPO.json --latency-ms P50 [--json OUT]

Exit 0: ship; 3: do not ship (the reasons printed); 2: bad input.
"""
import argparse
import json
import sys

P_MAX = 0.05
LATENCY_MS = 150.0


def system(summary, name):
    for s in summary.get("systems", []):
        if s.get("name") == name:
            return s
    return None


def pair(summary, a, b):
    for m in summary.get("mcnemar", []):
        if m.get("a") == a and m.get("b") == b:
            return m
        if m.get("a") == b and m.get("b") == a:  # the same test, sides swapped
            return dict(m, a=a, b=b, only_a=m.get("only_b"), only_b=m.get("only_a"))
    return None


def judge(summary, measure):
    """(candidate rate, shipped rate, n-gram rate or None, McNemar pair, verdict)
    with verdict 'better' (significant), 'not worse', or 'worse'."""
    cand, ship = system(summary, "model"), system(summary, "shipped-model")
    if cand is None or ship is None:
        raise ValueError(f"{summary.get('bench')}: needs the systems 'model' and 'shipped-model' "
                         "(run sculpt eval with --model CANDIDATE and the baselines)")
    ng = system(summary, "line-ngram")
    m = pair(summary, "model", "shipped-model")
    if m is None:
        raise ValueError(f"{summary.get('bench')}: no McNemar pair of model and shipped-model")
    c, s = cand.get(measure, 0.0), ship.get(measure, 0.0)
    if c > s and m.get("p", 1.0) < P_MAX:
        v = "better"
    elif c >= s:
        v = "not worse"
    else:
        v = "worse"
    return c, s, (ng.get(measure) if ng else None), m, v


def decide(he, repo, latency_ms):
    rows, reasons = [], []
    verdicts = {}
    for name, summary, measure in (("humaneval-single", he, "pass@1"),
                                   ("repo-single", repo, "exact_match")):
        c, s, ng, m, v = judge(summary, measure)
        verdicts[name] = v
        rows.append(dict(bench=name, measure=measure, candidate=c, shipped=s, line_ngram=ng,
                         p=m.get("p"), only_candidate=m.get("only_a"), only_shipped=m.get("only_b"),
                         verdict=v))
    vs = list(verdicts.values())
    quality = "better" in vs and "worse" not in vs
    if not quality:
        reasons.append("not significantly better on one benchmark and not worse on the other: "
                       + ", ".join(f"{k} {v}" for k, v in verdicts.items()))
    fast = latency_ms is not None and latency_ms <= LATENCY_MS
    if not fast:
        reasons.append(f"CPU latency p50 {latency_ms} ms (at most {LATENCY_MS:.0f})")
    return dict(ship=quality and fast, rows=rows, latency_p50_ms=latency_ms, reasons=reasons,
                rule=f"McNemar p < {P_MAX} better on one, not worse on the other; p50 <= "
                     f"{LATENCY_MS:.0f} ms; the n-gram is reported, not a gate")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--humaneval", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--latency-ms", type=float, default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    try:
        with open(a.humaneval) as f:
            he = json.load(f)
        with open(a.repo) as f:
            repo = json.load(f)
        d = decide(he, repo, a.latency_ms)
    except (OSError, ValueError) as e:
        print(f"ship_decision: {e}", file=sys.stderr)
        return 2
    for r in d["rows"]:
        ng = "-" if r["line_ngram"] is None else f"{100 * r['line_ngram']:.1f}%"
        print(f"{r['bench']:17s} {r['measure']:12s} candidate {100 * r['candidate']:.1f}%  shipped "
              f"{100 * r['shipped']:.1f}%  (n-gram {ng})  McNemar p {r['p']:.3g} "
              f"({r['only_candidate']} only the candidate, {r['only_shipped']} only the shipped): "
              f"{r['verdict']}")
    print(f"CPU latency p50: {d['latency_p50_ms']} ms")
    print("SHIP" if d["ship"] else "DO NOT SHIP: " + "; ".join(d["reasons"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(d, f, indent=1)
    return 0 if d["ship"] else 3


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The training section of a GPU session's results file, from the
checkpoint's training.json (model/train/train.py): the recipe, MFU,
throughput, the preflight checks and the held-out losses. Standard library.

    gpu_report.py TRAINING_JSON [TRAIN_LOG]
"""
import json
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gpu_report.py TRAINING_JSON [TRAIN_LOG]")
    try:
        with open(sys.argv[1]) as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        print("## Training (model/train/train.py)\n")
        print(f"- no training.json ({e}): the training did not finish; see logs.tar.gz")
        return 0
    c = t.get("config", {})
    print("## Training (model/train/train.py, the issue 41 recipe)\n")
    print(f"- device: {t.get('device_name')}, torch {t.get('torch')}")
    print(f"- model: {t.get('params', 0) / 1e6:.2f}M parameters (hidden {c.get('hidden_size')}, "
          f"{c.get('num_hidden_layers')} layers, {c.get('num_attention_heads')} heads / "
          f"{c.get('num_key_value_heads')} KV, FFN {c.get('intermediate_size')}, vocab "
          f"{c.get('vocab_size')}), context {t.get('seq')}")
    print(f"- recipe: batch {t.get('batch')} x {t.get('seq')} {t.get('mix')}, {t.get('loss_rows')} "
          f"loss rows a bidirectional sequence; {t.get('optimizers')}, lr {t.get('lr')}; "
          f"{t.get('schedule')}; {t.get('compile')}; attention {t.get('attention')}; "
          f"activations {t.get('activations')}; {t.get('repo_records', 0)} repository records")
    mfu = t.get("mfu")
    print(f"- **MFU: {100 * mfu:.1f}%**" if mfu else "- MFU: not measured (no known peak)",
          f"({t.get('tokens_per_s', 0):,} tokens/s x {t.get('flops_per_step', 0) / 1e12:.3f} "
          f"TFLOP a step / {t.get('batch')} x {t.get('seq')} tokens, against "
          f"{(t.get('peak_flops') or 0) / 1e12:.0f} TFLOP/s: {t.get('peak_source')})")
    print(f"- {t.get('steps')} steps in {t.get('seconds')} s (setup before the clock: "
          f"{t.get('setup_seconds')} s), {t.get('tokens', 0):,} tokens, "
          f"{t.get('tokens', 0) / max(1, t.get('train_tokens_available', 1)):.1f} passes over "
          f"{t.get('train_tokens_available', 0):,} training tokens")
    pre = t.get("preflight") or {}
    if pre:
        print("- preflight (before the clock): " + "; ".join(
            f"{k} {v:.2e}" if isinstance(v, float) else f"{k} {v}" for k, v in pre.items()))
    print(f"- held-out masked CE {t.get('heldout_masked_ce')}, causal CE {t.get('heldout_causal_ce')}")
    h = t.get("history") or []
    if h:
        print("\n| s | step | train loss | masked CE | held-out masked CE | held-out causal CE | tok/s | MFU |")
        print("|---|---|---|---|---|---|---|---|")
        for r in h:
            m = "" if r.get("mfu") is None else "%.1f%%" % (100 * r["mfu"])
            print(f"| {r['seconds']} | {r['step']} | {r['train_loss']} | {r['train_masked_ce']} | "
                  f"{r['heldout_masked_ce']} | {r.get('heldout_causal_ce')} | {r['tokens_per_s']:,} | "
                  f"{m} |")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`sculpt bench --synthetic tiny --infill --device cpu`: the real engine's
loop on random weights at a tiny shape, k tokens committed per step. Its
INFILL lines are there for every point, count the passes the schedule
implies (one full pass per block, the rest window steps), commit the whole
canvas, and put the end-to-end time beside the sum of the same passes
timed alone. The GPU-only modes (the step table, --profile) say why they
cannot run here, and bad arguments get one line and exit 2. Not a speed
test: nothing depends on how fast the machine is."""
import math
import os
import re
import subprocess
import sys

from clitest import check, failures

BIN = os.environ["SCULPT_BIN"]


def run(*args):
    return subprocess.run([BIN, "bench", *args], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


p = run("--synthetic", "tiny", "--infill", "--device", "cpu", "--context", "40,100",
        "--canvas", "32,64", "--tokens-per-step", "4", "--repeat", "2", "--threads", "1")
check(p.returncode == 0, f"--infill: exit 0 ({p.returncode}: {p.stderr.strip()[-300:]})")
rows = [dict(kv.split("=", 1) for kv in m.group(1).split())
        for m in re.finditer(r"^INFILL (.*)$", p.stdout, re.M)]
check(len(rows) == 4, f"one INFILL line per context x canvas ({len(rows)})")
for r in rows:
    C, m = int(r["context"]), int(r["canvas"])
    what = f"context {C} canvas {m}"
    blocks = (m + 31) // 32
    check(int(r["committed"]) == m, f"{what}: the whole canvas committed ({r['committed']})")
    check(int(r["passes"]) == m // 4, f"{what}: {m // 4} passes at 4 a step ({r['passes']})")
    check(int(r["full_passes"]) == blocks and int(r["window_steps"]) == m // 4 - blocks,
          f"{what}: a full pass per block, the rest windows ({r['full_passes']}, "
          f"{r['window_steps']})")
    nums = {k: float(r[k]) for k in ("ms", "tok_s", "full_ms", "window_ms", "steps_sum_ms",
                                     "fwd_ms")}
    check(all(math.isfinite(v) and v > 0 for v in nums.values()),
          f"{what}: every time positive and finite {nums}")
    want = int(r["full_passes"]) * nums["full_ms"] + int(r["window_steps"]) * nums["window_ms"]
    check(abs(nums["steps_sum_ms"] - want) <= 1e-3 + 1e-3 * want,
          f"{what}: steps sum = full x t_full + windows x t_window ({nums['steps_sum_ms']} vs {want})")
    check(abs(nums["tok_s"] - m / nums["ms"] * 1000) <= 0.01 * nums["tok_s"] + 0.1,
          f"{what}: tok/s is the canvas over the infill's time")
    check(r["device"] == "cpu" and r["captures"] == "0", f"{what}: the CPU captures no graph")

# The GPU-only modes and bad arguments: one line, exit 2 (usage) or 1 (no GPU).
for args, code, words in (
        (("--synthetic", "tiny", "--device", "cpu"), 2, "--device cuda"),
        (("--synthetic", "nope", "--infill", "--device", "cpu"), 2, "tiny"),
        (("--synthetic", "tiny", "--profile", "--infill"), 2, "exclude"),
        (("--profile",), 2, "--synthetic"),
        (("--synthetic", "tiny", "--infill", "--device", "tpu"), 2, "cpu")):
    q = run(*args)
    check(q.returncode == code and words in q.stderr and q.stderr.count("\n") == 1,
          f"{' '.join(args)}: exit {code} with one line naming {words!r} "
          f"({q.returncode}: {q.stderr.strip()})")
sys.exit(1 if failures else 0)

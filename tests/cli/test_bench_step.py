"""`sculpt bench --step` on the shipped model, f32 and int8: its report's
figures (full pass, cached step, the bandwidth and compute floors, the
roofline) are there, finite and consistent with each other; the int8 copy
reads fewer bytes than the f32 weights. Not a speed test: nothing here
depends on how fast the machine is."""
import math
import os
import re
import subprocess
import sys

from clitest import check, failures

BIN = os.environ["SCULPT_BIN"]
MODEL = os.path.join(os.environ["SCULPT_SOURCE_DIR"], "model", "default")

res = {}
for w in ("f32", "int8"):
    p = subprocess.run([BIN, "bench", "--step", "--model", MODEL, "--weights", w, "--context",
                        "64", "--canvas", "8", "--repeat", "1", "--threads", "1"],
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    check(p.returncode == 0, f"--weights {w}: exit 0 ({p.returncode}: {p.stderr.strip()[-200:]})")
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    check(m is not None, f"--weights {w}: a RESULT line")
    if not m:
        continue
    r = dict(kv.split("=", 1) for kv in m.group(1).split())
    res[w] = r
    check(r.get("weights") == w, f"--weights {w}: computes in {w} ({r.get('weights')})")
    keys = ("full_ms", "full_gflops", "step_ms", "step_gflops", "step_bytes", "bandwidth_gbs",
            "floor_ms", "compute_floor_ms", "roofline_ms")
    nums = {k: float(r.get(k, "nan")) for k in keys}
    check(all(math.isfinite(v) and v > 0 for v in nums.values()),
          f"--weights {w}: every figure positive and finite {nums}")
    check(abs(nums["roofline_ms"] - max(nums["floor_ms"], nums["compute_floor_ms"])) < 0.01,
          f"--weights {w}: the roofline is the larger floor")
    # The compute floor is the step's arithmetic at the full pass's rate.
    want = nums["step_gflops"] * nums["step_ms"] / nums["full_gflops"]
    check(abs(nums["compute_floor_ms"] - want) <= 0.02 + 0.01 * want,
          f"--weights {w}: compute floor {nums['compute_floor_ms']} = step work / full rate {want:.2f}")
    check("step / roofline" in p.stdout, f"--weights {w}: the report says step / roofline")
if len(res) == 2:
    check(float(res["int8"]["step_bytes"]) < float(res["f32"]["step_bytes"]),
          "int8 reads fewer bytes a step than f32")
sys.exit(1 if failures else 0)

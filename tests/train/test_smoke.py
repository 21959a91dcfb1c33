"""model/train/run_gpu.sh --smoke: the GPU training script, run end to end
on the CPU for a few seconds (corpus, tokenizer, training, export,
evaluation with baselines through sculpt, metrics file), so the script the
GPU run depends on is exercised in CI. Needs torch; skips without it."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish, need_bin, need_torch  # noqa: E402

BIN = need_bin()
need_torch()


out = tempfile.mkdtemp(prefix="sculpt-smoke-")
atexit.register(shutil.rmtree, out, True)
env = dict(os.environ, OUT=out, PY=sys.executable, SCULPT_BIN=BIN)
env.pop("INPUT", None)
t0 = time.time()
p = subprocess.run(["bash", os.path.join(SRC, "model", "train", "run_gpu.sh"), "--smoke"],
                   env=env, capture_output=True, timeout=600)
print(p.stdout.decode()[-3000:], p.stderr.decode()[-3000:])
check(p.returncode == 0, f"run_gpu.sh --smoke exits 0 (got {p.returncode})")
mpath = os.path.join(out, "metrics.json")
check(os.path.exists(mpath), "metrics.json written")
if os.path.exists(mpath):
    m = json.load(open(mpath))
    tr, ev = m["training"], m["evaluation"]
    check(tr["steps"] >= 1 and tr["preset"] == "toy" and tr["device"] == "cpu",
          f"trained {tr['steps']} steps on the CPU")
    for kind in ("single", "multi"):
        t = ev["tasks"].get(kind, {})
        check(t.get("n", 0) >= 1, f"{kind}: {t.get('n')} tasks")
        for sysname in ("model", "random_weights", "line_ngram"):
            check(0 <= t.get(sysname, {}).get("exact_match", -1) <= 1,
                  f"{kind}: {sysname} exact match reported")
    lat = ev.get("sculpt_cpu_latency_single_line", {})
    check(lat.get("median_model_ms", 0) > 0, f"sculpt latency measured: {lat}")
    ck = os.path.join(out, "checkpoint")
    q = subprocess.run([BIN, "model", "info", "--model", ck], capture_output=True)
    check(q.returncode == 0 and b"family: qwen2" in q.stdout, "sculpt model info accepts it")
print(f"elapsed {time.time() - t0:.1f}s")
finish()

"""tools/gpu_session.sh --smoke: the one-call GPU session script, at toy
scale on the CPU. A lent GPU session has no time for a second try, so CI
checks what can fail without a GPU: the training runs beside the GPU steps
(which report "no GPU" here), and what comes back obeys the device tool's
limits (at most 8 flat files, each under 16 MiB), the results file has
the training's section (MFU) and the machine's inventory; --unpack
rebuilds a checkpoint sculpt loads. Needs torch; skips without it."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish, need_bin, need_torch  # noqa: E402

BIN = need_bin()
need_torch()


tmp = tempfile.mkdtemp(prefix="sculpt-session-")
atexit.register(shutil.rmtree, tmp, True)
out = os.path.join(tmp, "out")
# Issue 40's hook: a stand-in that follows the contract gpu_session.sh states.
hook = os.path.join(tmp, "hook.sh")
with open(hook, "w") as f:
    f.write('#!/bin/sh\necho "engine stand-in: deadline $SCULPT_GPU_DEADLINE" >> "$HOOK_MD"\n'
            'echo measured > "$HOOK_DIR/raw.txt"\n')
os.chmod(hook, 0o755)
env = dict(os.environ, OUT=out, PY=sys.executable, TMPDIR=tmp, GPU_ENGINE_HOOK=hook,
           RESULT_DIR=os.path.join(tmp, "result"), GPU_RESULTS_DIR=os.path.join(tmp, "results"))
script = os.path.join(SRC, "tools", "gpu_session.sh")
p = subprocess.run(["bash", script, "--smoke"], env=env, capture_output=True, timeout=600)
print(p.stdout.decode()[-3000:], p.stderr.decode()[-3000:])
check(p.returncode == 0, f"--smoke exits 0 (got {p.returncode})")
files = sorted(os.listdir(out)) if os.path.isdir(out) else []
check(0 < len(files) <= 8, f"{len(files)} files come back: {files}")
check(all(os.path.isfile(os.path.join(out, f)) for f in files), "all plain files, none nested")
check(all(os.path.getsize(os.path.join(out, f)) < 16 * 1024 * 1024 for f in files), "each under 16 MiB")
for want in ("gpu-results.md", "metrics.json", "checkpoint-meta.tar.gz", "logs.tar.gz"):
    check(want in files, f"{want} comes back")
check(any(f.endswith(".safetensors") for f in files), "the weights come back")
res = open(os.path.join(out, "gpu-results.md")).read() if "gpu-results.md" in files else ""
check("no GPU" in res, "the results file says there was no GPU")
check("## Training (model/train/train.py" in res and "MFU" in res and "steps in" in res,
      "the results file has the training's section, MFU line included")
check("## GPU engine (issue 40, its hook)" in res and "engine stand-in: deadline " in res,
      "issue 40's hook ran and its Markdown is in the results file")
import tarfile  # noqa: E402
names = tarfile.open(os.path.join(out, "logs.tar.gz")).getnames() if "logs.tar.gz" in files else []
check("logs/issue40/raw.txt" in names, "the hook's folder comes back in logs.tar.gz")
check("## Machine inventory" in res and "weight files over 10 MB" in res and "pip list" in res,
      "the results file has the machine's inventory (weights, pip list)")
check(not [d for d in os.listdir(tmp) if d.startswith("sculpt-session.")], "its work folder is removed")

p = subprocess.run(["bash", script, "--unpack", out], env=env, capture_output=True, timeout=60)
print(p.stdout.decode(), p.stderr.decode())
check(p.returncode == 0, "--unpack exits 0")
ck = os.path.join(tmp, "result", "checkpoint")
q = subprocess.run([BIN, "model", "info", "--model", ck], capture_output=True)
check(q.returncode == 0 and b"family: qwen2" in q.stdout, "sculpt model info accepts the unpacked checkpoint")
check(not os.path.exists(os.path.join(tmp, "results")), "no GPU results file is filed without a GPU")
finish()

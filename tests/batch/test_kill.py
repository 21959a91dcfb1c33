"""kill -9 at random points of `sculpt batch --holes --write` over 50 files,
20 times: every file is whole afterwards, its old text or its new, never a
mix or a torn one; the next run removes the temp files the killed one left
(and none is left after it); that run completes the rest.

The candidates come from a mock FIM endpoint (tests/remote/mockfim.py), so
that a run takes about a second and its write phase is a large part of it;
half the kills are timed uniformly over a whole run, half just after the
first file is replaced (inside the write phase)."""
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "remote"))
from batchlib import BIN, FILL, check, cleanup, finish, make_repo, read  # noqa: E402
from mockfim import Mock, clean_env  # noqa: E402

N_FILES, N_KILLS = 50, 20
TEMPLATES = [("c", "int f{i}(void) {{\n  return abcTODO(sculpt);\n}}\n"),
             ("py", "def f{i}():\n    return abcTODO(sculpt)\n"),
             ("js", "function f{i}() {{\n  return abcTODO(sculpt);\n}}\n")]
FILES = {}
for i in range(N_FILES):
    ext, t = TEMPLATES[i % 3]
    FILES[f"f{i:02d}.{ext}"] = t.format(i=i)

mock = Mock()
mock.default = {"text": FILL}
mock.httpd.handle_error = lambda request, address: None  # a killed client resets its connection
# The test is about writing: the compiler's check of each C candidate
# (cc -fsyntax-only, a process per candidate) is left out to keep it fast.
ENV = clean_env({"SCULPT_CC": ""})
ARGS = [BIN, "batch", "--holes", "--write", "--no-progress", "--backend", mock.url]


def temps(root):
    return [n for n in os.listdir(root) if ".sculpt-" in n]


def reset(root):
    for rel, text in FILES.items():
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)


root = make_repo(FILES)
t0 = time.monotonic()
p = subprocess.run(ARGS + [root], capture_output=True, env=ENV, timeout=300)
full = time.monotonic() - t0
check(p.returncode == 0, f"an uninterrupted run completes ({p.returncode}: {p.stderr[-300:]})")
check(all(read(root, r) == t.replace("TODO(sculpt)", FILL) for r, t in FILES.items()),
      "an uninterrupted run fills every file")
print(f"one run over {N_FILES} files: {full:.2f} s")

rng = random.Random(21)
mixed = left_temps = 0
for k in range(N_KILLS):
    reset(root)
    proc = subprocess.Popen(ARGS + [root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ENV)
    if k % 2 == 0:
        time.sleep(rng.uniform(0, full))
    else:  # into the write phase: just after the first file is replaced
        # (a temp file has no name until just before its rename, O_TMPFILE,
        # so the first replaced file is the first sign of the write phase)
        deadline = time.monotonic() + 3 * full + 5
        while (proc.poll() is None and time.monotonic() < deadline and
               all(read(root, r) == t for r, t in FILES.items())):
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, full / 40))
    proc.kill()
    proc.wait()
    states = []
    for rel, text in FILES.items():
        now = read(root, rel)
        new = text.replace("TODO(sculpt)", FILL)
        check(now in (text, new), f"kill {k}: {rel} is its old or its new text: {now!r}")
        states.append(now == new)
    mixed += 0 < sum(states) < len(states)
    left_temps += bool(temps(root))
    # The next run removes what the killed one left, and finishes the job.
    p = subprocess.run(ARGS + [root], capture_output=True, env=ENV, timeout=300)
    check(p.returncode == 0,
          f"kill {k}: the next run completes ({p.returncode}: {p.stderr[-300:]})")
    check(not temps(root), f"kill {k}: no temp file after the next run: {temps(root)}")
    check(all(read(root, r) == t.replace("TODO(sculpt)", FILL) for r, t in FILES.items()),
          f"kill {k}: the next run fills every file")

print(f"{N_KILLS} kills: {mixed} in the middle of the write phase, {left_temps} left temp files")
check(mixed >= 1, f"some kills landed while files were being written ({mixed})")
mock.stop()
cleanup(root)
finish()

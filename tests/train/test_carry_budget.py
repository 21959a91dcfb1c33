"""The next GPU visit's carry still fits: the repository travels with the
corpus and the binaries (64 MiB in all), and it grows between visits (two
committed candidates took it from 6.3 to 14.2 MB, which left the caps of
2026-12-03 about 6 MB past the limit, found only by a --prepare). With what
the last --prepare measured (model/train/carry_sizes.json) and the caps
tools/gpu_session.sh would build with, `carry.py budget` estimates the
carry against the repository as it is now; a change that grows the
repository past what the caps leave fails here, not on the GPU day.
A repository with one file too many must fail the same check."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402

CARRY = os.path.join(SRC, "model", "train", "carry.py")
RECORD = os.path.join(SRC, "model", "train", "carry_sizes.json")
if not shutil.which("git") or not os.path.isdir(os.path.join(SRC, ".git")):
    print("needs git and the source's work tree; skipping")
    sys.exit(77)

session = open(os.path.join(SRC, "tools", "gpu_session.sh")).read()
caps = re.search(r'^CORPUS_CAPS=\$\{CORPUS_CAPS:-"([^"]+)"\}', session, re.M)
records = re.search(r'^REPO_RECORDS=\$\{REPO_RECORDS:-(\d+)\}', session, re.M)
check(caps is not None and records is not None, "tools/gpu_session.sh names its caps and records")
check("--record \"$SRC/model/train/carry_sizes.json\"" in session,
      "--prepare records what it measured in model/train/carry_sizes.json")


def budget(repo, extra=()):
    p = subprocess.run([sys.executable, CARRY, "budget", "--record", RECORD, "--caps", caps.group(1),
                        "--repo-records", records.group(1), "--repo", repo, *extra],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout + p.stderr)
    return p


p = budget(SRC)
check(p.returncode == 0, "the next carry fits with 1 MB to spare at today's caps and repository")

# The same check on a repository 60 MB larger (a file git does not ignore,
# as the device tool would send it) must fail and say what to lower.
t = tempfile.mkdtemp(prefix="sculpt-budget-")
try:
    subprocess.run(["git", "init", "-q", t], check=True)
    with open(os.path.join(t, "weights.bin"), "wb") as f:
        f.truncate(60 * 1000 * 1000)
    p = budget(t)
    check(p.returncode == 1 and "lower CORPUS_CAPS" in p.stderr,
          "a repository 60 MB larger fails the budget, naming the caps")
    # A file git ignores does not travel.
    with open(os.path.join(t, ".gitignore"), "w") as f:
        f.write("weights.bin\n")
    check(budget(t).returncode == 0, "an ignored file does not count")
finally:
    shutil.rmtree(t, ignore_errors=True)
finish()

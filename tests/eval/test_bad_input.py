"""Bad input to `sculpt eval` gets one clear line on stderr, a non-zero exit
status and nothing written (neither --out nor --results, nor a temp file
beside them): an unknown benchmark, a missing benchmark file, a corrupt
.gz, a malformed problems file, a samples file naming a task the benchmark
lacks, a model that fails to load or a model id that is not pulled, flags
that exclude each other; and a
run interrupted with Ctrl-C writes nothing either."""
import gzip
import os
import shutil
import signal
import subprocess
import time

from evaltest import BIN, DATA, MODEL, check, finish, run, tempdir, write_jsonl

tmp = tempdir("sculpt-eval-bad-")
outdir = os.path.join(tmp, "out")
os.mkdir(outdir)
out, res = os.path.join(outdir, "samples.jsonl"), os.path.join(outdir, "results.jsonl")


def bad(args, want_rc, words, what):
    rc, stdout, err = run(*args, "--out", out, "--results", res, "--no-progress")
    lines = err.strip().splitlines()
    check(rc == want_rc, f"{what}: exit {rc}, want {want_rc} ({err.strip()[:300]})")
    check(len(lines) == 1 and lines[0].startswith("sculpt eval: ") and words in lines[0],
          f"{what}: one line naming the problem ({words!r}): {err.strip()[:300]!r}")
    check(stdout == "", f"{what}: nothing on stdout: {stdout[:200]!r}")
    check(os.listdir(outdir) == [], f"{what}: written: {os.listdir(outdir)}")


bad(["humaneval-everything", "--model", MODEL], 2, "unknown benchmark 'humaneval-everything'",
    "unknown benchmark")
bad(["humaneval-single", "--model", MODEL, "--data", os.path.join(tmp, "nowhere")], 2,
    "cannot read", "missing benchmark file")

# A .gz cut in half, in a data folder of its own.
cut = os.path.join(tmp, "cut")
os.mkdir(cut)
with open(os.path.join(DATA, "HumanEval-SingleLineInfilling.jsonl.gz"), "rb") as f:
    blob = f.read()
with open(os.path.join(cut, "HumanEval-SingleLineInfilling.jsonl.gz"), "wb") as f:
    f.write(blob[: len(blob) // 2])
bad(["humaneval-single", "--model", MODEL, "--data", cut], 2, "not a readable gzip file",
    "truncated .gz")
# Bytes that are no gzip at all under the .gz name.
with open(os.path.join(cut, "HumanEval-SingleLineInfilling.jsonl.gz"), "wb") as f:
    f.write(b"\x1f\x8b\x08\x00garbage" * 50)
bad(["humaneval-single", "--model", MODEL, "--data", cut], 2, "not a readable gzip file",
    "garbage .gz")

# Problems files: a line that is not JSON, a problem without a suffix.
good = {"task_id": "t/0", "prompt": "def f():\n", "suffix": "", "canonical_solution": "    return 1\n",
        "test": "def check(c):\n    assert c() == 1\n", "entry_point": "f"}
p = os.path.join(tmp, "problems.jsonl")
with open(p, "w") as f:
    f.write(__import__("json").dumps(good) + "\n{not json\n")
bad([p, "--score", "canonical"], 2, "problems.jsonl:2: not a JSON object", "broken JSON line")
with gzip.open(p + ".gz", "wt") as f:
    f.write(__import__("json").dumps({k: v for k, v in good.items() if k != "suffix"}) + "\n")
bad([p + ".gz", "--score", "canonical"], 2, 'problems.jsonl.gz:1: no string "suffix"',
    "problem without a suffix")

# Samples naming a task the benchmark does not have.
s = os.path.join(tmp, "samples.jsonl")
write_jsonl(s, [{"task_id": "test/0", "completion": "    return "},
                {"task_id": "test/7", "completion": "    return "}])
bad(["humaneval-test", "--score", s], 2, "samples.jsonl:2: task_id 'test/7' is not in",
    "unknown task_id")

# A model that does not load: a config.json that is not JSON.
broken = os.path.join(tmp, "broken-model")
shutil.copytree(MODEL, broken)
with open(os.path.join(broken, "config.json"), "w") as f:
    f.write("{broken")
rc, _, err = run("humaneval-single", "--model", broken, "--limit", "2", "--out", out,
                 "--results", res, "--no-progress")
check(rc != 0 and len(err.strip().splitlines()) == 1 and err.startswith("sculpt eval: ") and
      "config.json" in err, f"broken model: {rc} {err.strip()[:300]!r}")
check(os.listdir(outdir) == [], f"broken model: written: {os.listdir(outdir)}")

# A model id the Hugging Face cache does not hold (HF_HOME: an empty folder).
rc, stdout, err = run("humaneval-test", "--model", "someorg/not-here", "--out", out,
                      "--no-progress", env=dict(os.environ, HF_HOME=os.path.join(tmp, "hf")))
check(rc == 2 and len(err.strip().splitlines()) == 1 and "sculpt model pull someorg/not-here" in err,
      f"a model id not pulled: {rc} {err.strip()[:300]!r}")
check(os.listdir(outdir) == [], f"a model id not pulled: written: {os.listdir(outdir)}")

bad(["humaneval-single", "--model", MODEL, "--score", "canonical"], 2, "exclude each other",
    "--score with --model")
bad(["humaneval-single", "--limit", "0"], 2, "--limit", "--limit 0")

# Ctrl-C during a run: it stops, says so, writes nothing.
proc = subprocess.Popen([BIN, "eval", "humaneval-multi", "--model", MODEL, "--out", out,
                         "--results", res, "--no-progress"], stderr=subprocess.PIPE,
                        stdout=subprocess.PIPE)
time.sleep(2.0)
proc.send_signal(signal.SIGINT)
try:
    _, err = proc.communicate(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    _, err = proc.communicate()
check(proc.returncode == 1 and b"interrupted: nothing written" in err,
      f"Ctrl-C: {proc.returncode} {err[-300:]!r}")
check(os.listdir(outdir) == [], f"Ctrl-C: written: {os.listdir(outdir)}")

finish()

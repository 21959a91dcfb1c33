"""The `sculpt` front door: --help, --version, help SUBCOMMAND, usage errors,
and the one-line CPU fallback of a CUDA build on a machine without a GPU."""
import os
import re
import shutil
import subprocess
import sys

from clitest import check, failures

BIN = os.environ["SCULPT_BIN"]
SRC = os.environ["SCULPT_SOURCE_DIR"]


def run(*args, stdin=b""):
    p = subprocess.run([BIN, *args], input=stdin, capture_output=True, timeout=30)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


# --version matches the project version in CMakeLists.txt.
cmake = open(os.path.join(SRC, "CMakeLists.txt")).read()
want = re.search(r"project\(sculpt VERSION ([0-9.]+)", cmake).group(1)
rc, out, _ = run("--version")
check(rc == 0 and out.splitlines()[0] == "sculpt " + want, "--version prints the version")
backends = out.splitlines()[1] if len(out.splitlines()) > 1 else ""
check(backends.startswith("backends: cpu"), "--version lists backends")
has_cuda = "cuda" in backends

# --help lists every subcommand, each of which has its own help.
rc, out, _ = run("--help")
check(rc == 0 and "usage: sculpt" in out, "--help prints usage")
subs = re.findall(r"^  (\w+)\s", out, re.M)
for sub in ("lsp", "tokenize", "logits", "model", "help"):
    check(sub in subs, f"--help lists {sub}")
for sub in subs:
    rc, out, _ = run("help", sub)
    check(rc == 0 and out.startswith("usage: sculpt " + sub), f"help {sub}")
    rc2, out2, _ = run(sub, "--help")
    check(rc2 == 0 and out2 == out, f"{sub} --help equals help {sub}")

# Usage errors exit 2 with one line on stderr and nothing on stdout.
for args in (["frobnicate"], ["help", "frobnicate"], ["lsp", "--bogus"],
             ["lsp", "--log-level", "loud"], ["lsp", "--max-message-size", "-5"],
             ["lsp", "--device", "tpu"], []):
    rc, out, err = run(*args)
    check(rc == 2, f"{args}: exit 2 (got {rc})")
    if args:
        check(out == "" and len(err.strip().splitlines()) == 1,
              f"{args}: one line on stderr, nothing on stdout")

# Device choice: the log says where model work runs. Asked for nothing
# (auto), a machine with no CUDA driver is simply a CPU machine: the probe's
# answer is a debug line, not a line on every command. Asked for CUDA, the
# user is told, once, why it falls back (a warning).
rc, out, err = run("lsp")
check(rc == 1 and out == "", "lsp with empty stdin exits 1, writes nothing")
fallback = [l for l in err.splitlines() if "falling back to the CPU" in l]
gpu_present = os.path.exists("/dev/nvidia0")
no_driver = not gpu_present and not os.path.exists("/proc/driver/nvidia")
if no_driver:
    check(len(fallback) == 0, f"auto on a machine without a driver is quiet: {fallback}")
check(any("device cpu" in l or "device cuda" in l for l in err.splitlines()),
      "the device is logged")
if has_cuda and no_driver:
    rc, out, err = run("lsp", "--log-level", "debug")
    fallback = [l for l in err.splitlines() if "falling back to the CPU" in l]
    check(len(fallback) == 1 and " debug:" in fallback[0] and "no CUDA driver" in fallback[0],
          f"the probe's answer is one debug line: {fallback}")
if not gpu_present:
    rc, out, err = run("lsp", "--device", "cuda")
    fallback = [l for l in err.splitlines() if "falling back to the CPU" in l]
    check(len(fallback) == 1 and " warn:" in fallback[0] and "asked for" in fallback[0],
          f"--device cuda says once why it falls back: {fallback}")
# cuBLAS is opened at run time, so a CUDA build starts (and falls back)
# on a host without it: no libcublas among the libraries the loader needs.
if has_cuda and shutil.which("readelf"):
    dyn = subprocess.run(["readelf", "-d", BIN], capture_output=True, text=True).stdout
    check("NEEDED" in dyn and "libcublas" not in dyn,
          "a CUDA build does not link libcublas")
rc, out, err = run("lsp", "--device", "cpu")
check(not any("falling back" in l for l in err.splitlines()), "--device cpu never probes")

if failures:
    sys.exit(1)
print("ok (cuda build: %s, gpu: %s)" % (has_cuda, gpu_present))

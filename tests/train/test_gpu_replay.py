"""tests/gpu/replay.py, which runs the GPU tests of binaries built on
another machine (tools/gpu_bundle.sh records ctest's list with @BUILD@,
@SRC@ and @PY@ for its paths): the placeholders are filled in, in commands,
environments and working folders; a test's skip code is a skip and not a
failure, any other exit a failure (exit 8, as ctest), a missing command is
"Not Run", a test past the deadline is not started; the output carries the
lines tests/gpu/run.sh summarises. Standard library only."""
import json
import shutil
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainlib import SRC, check, finish  # noqa: E402

REPLAY = os.path.join(SRC, "tests", "gpu", "replay.py")
t = tempfile.mkdtemp(prefix="sculpt-replay-")
build, src = os.path.join(t, "build"), os.path.join(t, "src")
os.makedirs(os.path.join(build, "tests"))
os.makedirs(src)
probe = os.path.join(src, "probe.py")
open(probe, "w").write(
    "import os, sys\n"
    "print('cwd', os.getcwd()); print('bin', os.environ['SCULPT_BIN'])\n"
    "print('src', os.environ['SCULPT_SOURCE_DIR'], 'py', os.environ['SCULPT_PYTHON'])\n"
    "sys.exit(int(sys.argv[1]))\n")


def test(name, code, wd="@BUILD@/tests"):
    return {"name": name, "command": ["@PY@", "@SRC@/probe.py", str(code)],
            "properties": [{"name": "ENVIRONMENT", "value": ["SCULPT_BIN=@BUILD@/sculpt"]},
                           {"name": "SKIP_RETURN_CODE", "value": 77},
                           {"name": "TIMEOUT", "value": 60.0},
                           {"name": "WORKING_DIRECTORY", "value": wd}]}


def replay(tests, *extra):
    path = os.path.join(t, "tests.json")
    json.dump({"tests": tests}, open(path, "w"))
    return subprocess.run([sys.executable, REPLAY, path, "--build", build, "--src", src,
                           "--python", sys.executable, *extra], capture_output=True, text=True,
                          timeout=120)


p = replay([test("gpu.pass", 0), test("gpu.skip", 77, "@BUILD@/tests/gpu")])
print(p.stdout, p.stderr)
check(p.returncode == 0, f"a pass and a skip: exit 0 ({p.returncode})")
check(f"1: cwd {build}/tests" in p.stdout and f"1: bin {build}/sculpt" in p.stdout,
      "@BUILD@ filled in the working folder and the environment")
check(f"1: src {src} py {sys.executable}" in p.stdout, "SCULPT_SOURCE_DIR and SCULPT_PYTHON are set")
check("Test #1: gpu.pass" in p.stdout and "Passed" in p.stdout, "the pass is reported as ctest does")
check("***Skipped" in p.stdout and os.path.isdir(os.path.join(build, "tests", "gpu")),
      "the skip code is a skip; a missing working folder is made")
check("100% tests passed, 0 tests failed out of 2" in p.stdout, "the summary line")

p = replay([test("gpu.fail", 3), test("gpu.pass", 0),
            {"name": "gpu.missing", "command": ["@BUILD@/no-such-test"], "properties": []}])
print(p.stdout)
check(p.returncode == 8, f"a failure: exit 8 ({p.returncode})")
check("***Failed (exit 3)" in p.stdout and "***Not Run" in p.stdout, "a failure and a missing command")
check("33% tests passed, 2 tests failed out of 3" in p.stdout, "the summary counts them")

p = replay([test("gpu.late", 0)], "--deadline", str(time.time() - 1))
check(p.returncode == 8 and "Not Run (deadline)" in p.stdout, "nothing starts past the deadline")
p = subprocess.run([sys.executable, REPLAY, os.path.join(t, "none.json"), "--build", build,
                    "--src", src], capture_output=True, text=True)
check(p.returncode == 2 and "cannot read" in p.stderr, "an unreadable list: exit 2")
shutil.rmtree(t)
finish()

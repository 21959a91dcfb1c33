#!/usr/bin/env python3
"""Runs the GPU tests of a build made on another machine, the way ctest
would: tools/gpu_bundle.sh records `ctest -L gpu --show-only=json-v1` with
the build folder, the source folder and the Python interpreter written as
@BUILD@, @SRC@ and @PY@; this puts this machine's in their place. The GPU
box has no Debian libraries, so tests/gpu/run.sh runs the carried binaries
(LD_LIBRARY_PATH set by the caller) instead of configuring a build there.

    replay.py TESTS.json --build DIR --src DIR --python PY [--deadline EPOCH]

Each test also gets SCULPT_SOURCE_DIR, SCULPT_BUILD_DIR and SCULPT_PYTHON
(tests/gpu/test_cuda_forward.c reads them instead of the paths it was built
with). Output as `ctest -V`: each test's own output, then a line
"N/T Test #N: NAME ...  Passed|***Failed|***Skipped|***Timeout  S sec", then
"P% tests passed, F tests failed out of T". Exit 0 when none failed (a skip
is not a failure, as in ctest), 8 otherwise (ctest's code), 2 on bad input.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def subst(s, m):
    for k, v in m.items():
        s = s.replace(k, v)
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests")
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--deadline", type=float, default=0, help="epoch seconds: no test runs past it")
    a = ap.parse_args(argv)
    try:
        with open(a.tests) as f:
            tests = json.load(f)["tests"]
    except (OSError, ValueError, KeyError) as e:
        print(f"replay.py: cannot read {a.tests}: {e}", file=sys.stderr)
        return 2
    m = {"@BUILD@": os.path.abspath(a.build), "@SRC@": os.path.abspath(a.src), "@PY@": a.python}
    n, failed, skipped = len(tests), [], []
    for i, t in enumerate(tests, 1):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ, SCULPT_SOURCE_DIR=m["@SRC@"], SCULPT_BUILD_DIR=m["@BUILD@"],
                   SCULPT_PYTHON=a.python)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = subst(kv, m).partition("=")
            env[k] = v
        cwd = subst(props.get("WORKING_DIRECTORY", m["@BUILD@"]), m)
        os.makedirs(cwd, exist_ok=True)
        limit = float(props.get("TIMEOUT", 1500))
        if a.deadline:
            limit = min(limit, a.deadline - time.time())
        cmd = [subst(c, m) for c in t["command"]]
        print(f"      Start {i:2d}: {t['name']}\n{i}: Test command: {' '.join(cmd)}", flush=True)
        t0 = time.time()
        if limit <= 1:
            rc, out, why = None, "", "***Not Run (deadline)"
        else:
            try:
                p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=limit)
                rc, out = p.returncode, p.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                rc, out = None, (e.stdout or b"").decode(errors="replace")
                why = "***Timeout"
            except OSError as e:
                rc, out, why = None, str(e) + "\n", "***Not Run"
        for line in out.splitlines():
            print(f"{i}: {line}")
        skip = props.get("SKIP_RETURN_CODE")
        if rc == 0:
            why = "Passed"
        elif rc is not None and skip is not None and rc == int(skip):
            why = "***Skipped"
            skipped.append(t["name"])
        elif rc is not None:
            why = f"***Failed (exit {rc})"
        if why != "Passed" and why != "***Skipped":
            failed.append(t["name"])
        dots = "." * max(3, 40 - len(t["name"]))
        print(f"{i}/{n} Test #{i}: {t['name']} {dots} {why:>10}  {time.time() - t0:6.2f} sec",
              flush=True)
    passed = n - len(failed)
    print(f"\n{100 * passed // max(n, 1)}% tests passed, {len(failed)} tests failed out of {n}")
    if skipped:
        print("\nThe following tests did not run:")
        for s in skipped:
            print(f"\t{s} (Skipped)")
    if failed:
        print("\nThe following tests FAILED:")
        for s in failed:
            print(f"\t{s} (Failed)")
    return 8 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

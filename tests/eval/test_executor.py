"""The executor on programs that misbehave, through `sculpt eval FILE
--score SAMPLES` as a user would feed it another tool's samples: one
problem (return 1), and middles that loop forever, fork without end, leave
a child behind, allocate without bound, fill their folder, write outside it
(/tmp, the source tree), reach for the network, exit early with status 0
(raise SystemExit(0), sys.exit(), os._exit(0)), print what a naive runner
looks for, or write a fake pass on the harness's pipe. Each is stopped and
scored a failure, the good middles around them pass (the run goes on),
nothing is left outside, no process survives and the temporary folders are
gone."""
import glob
import json
import os
import time

from evaltest import SRC, check, finish, read_jsonl, run_json, system, tempdir, write_jsonl

tmp = tempdir("sculpt-eval-exec-")
scratch = os.path.join(tmp, "tmpdir")  # the executor's TMPDIR: its folders go here
os.mkdir(scratch)
token = os.path.basename(tmp)
outside = [f"/tmp/{token}-escaped", os.path.join(SRC, f"{token}-escaped"),
           os.path.join(tmp, "escaped")]

problems = os.path.join(tmp, "problems.jsonl")
write_jsonl(problems, [{"task_id": "t/0", "prompt": "def f():\n", "suffix": "",
                        "canonical_solution": "    return 1\n",
                        "test": "def check(candidate):\n    assert candidate() == 1\n",
                        "entry_point": "f"}])

body = {
    "good": "    return 1\n",
    "loops": "    while True:\n        pass\n",
    "fork_bomb": "    import os\n    while True:\n        os.fork()\n",
    "leaves_child": ("    import os, time\n    if os.fork() == 0:\n        time.sleep(600)\n"
                     "    return 2\n"),
    "allocates": "    x = []\n    while True:\n        x.append(' ' * 10**7)\n",
    "fills_folder": ("    with open('big', 'wb') as f:\n        while True:\n"
                     "            f.write(b'x' * (1 << 20))\n"),
    "writes_tmp": f"    open({outside[0]!r}, 'w').write('x')\n    return 1\n",
    "writes_source": f"    open({outside[1]!r}, 'w').write('x')\n    return 1\n",
    "writes_elsewhere": f"    open({outside[2]!r}, 'w').write('x')\n    return 1\n",
    "network": ("    import socket\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
                "    return 1\n"),
    "system_exit": "    raise SystemExit(0)\n",
    "sys_exit": "    import sys\n    sys.exit()\n",
    "os_exit": "    import os\n    os._exit(0)\n",
    "prints": ("    import os\n    print('passed')\n    print(json_line)\n"
               "    os._exit(0)\n").replace("json_line", repr(json.dumps(
                   {"task_id": "t/0", "passed": True, "result": "passed"}))),
    "fakes_pass": "    import os\n    os.write(3, b'SP' + b'0' * 32)\n    os._exit(0)\n",
    "own_folder": "    open('mine.txt', 'w').write('x')\n    return int(open('mine.txt').read() == 'x')\n",
    "good_again": "\treturn 1\n",
}
names = list(body)
samples = os.path.join(tmp, "samples.jsonl")
write_jsonl(samples, [{"task_id": "t/0", "completion": body[n]} for n in names])

res = os.path.join(tmp, "results.jsonl")
env = dict(os.environ, TMPDIR=scratch)
rc, s, err = run_json(problems, "--score", samples, "--results", res, "--timeout", "1",
                      "--jobs", "4", env=env)
check(rc == 0 and s, f"the run finishes: {rc} {err[-500:]}")
sandbox = s["settings"]["sandbox"] if s else ""
isolated = sandbox.startswith("namespaces")
if not isolated:
    print(f"note: no namespaces here ({sandbox}): the file system and network checks are skipped")
got = {n: l for n, l in zip(names, read_jsonl(res))} if rc == 0 else {}
passes = {"good", "own_folder", "good_again"}
for n in names:
    line = got.get(n, {})
    if not isolated and n in ("writes_tmp", "writes_source", "writes_elsewhere", "network"):
        continue
    want = n in passes
    check(line.get("passed") is want, f"{n}: passed {line.get('passed')}, want {want}: "
                                      f"{line.get('result')}")
if got:
    check(got["loops"]["result"] == "timed out", f"loops: {got['loops']['result']}")
    check(got["system_exit"]["result"] == "failed: SystemExit: 0",
          f"system_exit: {got['system_exit']['result']}")
    check("before its tests ran to the end" in got["os_exit"]["result"],
          f"os_exit: {got['os_exit']['result']}")
    check("before its tests ran to the end" in got["prints"]["result"],
          f"prints: {got['prints']['result']}")
    check(got["allocates"]["result"].startswith("failed: MemoryError") or
          got["allocates"]["result"] == "timed out", f"allocates: {got['allocates']['result']}")
if s:
    c = system(s, "samples")
    check(abs(c["pass@1"] - len(passes) / len(names)) < 1e-9, f"pass@1 {c['pass@1']}")

# Without namespaces (a kernel or container that refuses them): the same
# verdicts where the rlimits and the harness decide.
core = ["good", "loops", "fork_bomb", "allocates", "fills_folder", "system_exit", "sys_exit",
        "os_exit", "prints", "fakes_pass", "own_folder"]
plain = os.path.join(tmp, "plain.jsonl")
write_jsonl(plain, [{"task_id": "t/0", "completion": body[n]} for n in core])
res2 = os.path.join(tmp, "results-plain.jsonl")
rc, s2, err = run_json(problems, "--score", plain, "--results", res2, "--timeout", "1",
                       "--jobs", "4", env=dict(env, SCULPT_EVAL_NO_NAMESPACES="1"))
check(rc == 0 and s2 and s2["settings"]["sandbox"].startswith("rlimits and a process group only"),
      f"without namespaces: {rc} {s2 and s2['settings']} {err[-300:]}")
for n, line in zip(core, read_jsonl(res2) if rc == 0 else []):
    check(line["passed"] is (n in passes), f"without namespaces, {n}: {line['result']}")

# Nothing written outside, no folder left, no process left (as root each
# job slot's programs run as a uid of their own, 4000000000 + slot).
for p in outside:
    check(not os.path.exists(p), f"{p} was written")
    if os.path.exists(p):
        os.unlink(p)
check(os.listdir(scratch) == [], f"folders left in TMPDIR: {os.listdir(scratch)}")
# A process of this run's programs would still be in one of its folders
# (killed ones may take a moment to be reaped).
for _ in range(30):
    left = []
    for cwd in glob.glob("/proc/[0-9]*/cwd"):
        try:
            if os.readlink(cwd).startswith(scratch):
                left.append(cwd)
        except OSError:
            pass
    if not left:
        break
    time.sleep(0.1)
check(not left, f"processes left: {left}")

finish()

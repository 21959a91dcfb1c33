"""The loop never blocks on a parse (issue 22), of a document or of a
message.

In a C buffer that random
characters keep full of syntax errors, where one tree-sitter parse takes
tens to hundreds of milliseconds, 3,000 random-character edits are sent
with a completion request after every 10 and a cheap request
(sculpt/test/stats) after each batch, whose answer the client waits for.

Parsing used to happen on the loop, inside the completion handler: the
loop then spent ~150 ms per completion in ts_parser_parse, so every message
behind it waited. Now the request's job parses a snapshot on its worker.

What is asserted is the loop's own time in each call into the server
(feed or drain), measured by the server as the thread's CPU time and
reported by sculpt/test/stats: its maximum must stay under 50 ms. CPU time,
unlike a wall clock, is not inflated when the shared 2-core machine
deschedules the loop, so the assertion means what it says under CI load.
The wall time of those calls and the client's round trips are printed,
with their p50/p99, as the measurement behind that choice. Every request
is answered exactly once, and the document ends equal to the client's.

A long message is parsed off the loop too: jansson decodes about 75 MB/s,
and an 8 MB didOpen held the loop about 135 ms of CPU (12 MB: 165 ms, 60 MB:
0.9 s) when it was parsed there; its copies (the body, the document and its
line index) took 38-53 ms on a VM with costly page faults until they moved
to the parse thread too (2-4 ms). Sent in one write with an edit, a long
malformed message and a request behind it, each is handled in order."""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import (apply_change, check, eq, frame, planted_model, run_tests,  # noqa: E402
                       spawn)

SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = planted_model()
URI = "file:///w/noisy.c"
N_EDITS = 3000
EVERY = 10
LOOP_LIMIT_MS = 50.0
# Characters that break C the most: brackets, quotes, comment starts.
NOISE = "{}()[];\"'/*#<>=+-,.\\ \n\tabcxyz019"
# Under AddressSanitizer freed memory sits in a quarantine; keep it small.
ASAN_ENV = {"ASAN_OPTIONS": ":".join(filter(None, [
    os.environ.get("ASAN_OPTIONS", ""), "quarantine_size_mb=16"]))}


def initial_text():
    """About 60 KB of real C (jq's sources), made error-heavy from the start:
    one parse of it on the loop costs 50-150 ms of CPU here."""
    text = ""
    for name in ("execute.c", "jv.c", "builtin.c"):
        path = os.path.join(SRC, "tests", "data", "real", "jq", "src", name)
        text += open(path, encoding="utf-8", errors="replace").read()
    text = text[:60000]
    rnd = random.Random(7)
    chars = list(text)
    for _ in range(600):
        chars.insert(rnd.randrange(len(chars) + 1), rnd.choice(NOISE))
    return "".join(chars)


def position(data, off):
    """(line, utf-16 character) of byte offset off; the text is ASCII plus
    whatever jq's source has, so this counts code points of the line."""
    line = data.count(b"\n", 0, off)
    start = data.rfind(b"\n", 0, off) + 1
    return line, len(data[start:off].decode("utf-8", "replace").encode("utf-16-le")) // 2


def random_edit(rnd, data):
    """A random-character insert, delete or replace, on character boundaries."""
    def boundary(off):
        while 0 < off < len(data) and (data[off] & 0xC0) == 0x80:
            off -= 1
        return off
    a = boundary(rnd.randrange(len(data) + 1))
    b = a if rnd.random() < 0.6 else boundary(min(len(data), a + rnd.randrange(1, 4)))
    text = "".join(rnd.choice(NOISE) for _ in range(rnd.randrange(0 if b > a else 1, 3)))
    (l0, c0), (l1, c1) = position(data, a), position(data, b)
    return {"range": {"start": {"line": l0, "character": c0},
                      "end": {"line": l1, "character": c1}}, "text": text}


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def histogram_quantile(hist, p):
    """The bucket bound under which a share p of the calls fall."""
    total = sum(n for _, n in hist)
    seen = 0
    for le, n in hist:
        seen += n
        if seen >= p * total:
            return le
    return -1


def test_loop_never_blocks_on_a_parse():
    s = spawn(env=ASAN_ENV)
    s.start({}, initializationOptions={"modelPath": MODEL, "debounceMs": 0})
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="model ready", timeout=60)
    text = initial_text()
    data = text.encode("utf-8")
    s.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "c",
                                                       "version": 1, "text": text}})
    rnd = random.Random(22)
    version = 1
    completions = []
    rtts = []
    s.result("sculpt/test/stats", {"resetLoop": True})
    t0 = time.monotonic()
    for batch in range(N_EDITS // EVERY):
        msgs = []
        for _ in range(EVERY):
            change = random_edit(rnd, data)
            data = apply_change(data, change, "utf-16")
            version += 1
            msgs.append({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": URI, "version": version}, "contentChanges": [change]}})
        line, ch = position(data, rnd.randrange(len(data) + 1))
        i = s.new_id()
        completions.append(i)
        # Explicit and automatic triggers, so that some jobs parse at once
        # and some wait out a debounce first.
        msgs.append({"jsonrpc": "2.0", "id": i, "method": "textDocument/inlineCompletion",
                     "params": {"textDocument": {"uri": URI},
                                "position": {"line": line, "character": ch},
                                "context": {"triggerKind": 1 if batch % 2 else 2}}})
        for m in msgs:
            s.send(m)
        t = time.monotonic()
        s.result("sculpt/test/stats", {}, timeout=30)
        rtts.append((time.monotonic() - t) * 1000)
    elapsed = time.monotonic() - t0
    answered = {"result": 0, "error": 0}
    for i in completions:
        r = s.wait_response(i, 60)
        answered["result" if "result" in r else "error"] += 1
        if "error" in r:  # superseded, or the document changed: nothing else
            check(r["error"]["code"] in (-32800, -32801), "completion error", r)
    loop = s.result("sculpt/test/stats", {})["loop"]
    # Left alone, a request's job parses the noisy buffer and answers.
    line, ch = position(data, len(data) // 2)
    r = s.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": line, "character": ch},
        "context": {"triggerKind": 1}}, timeout=120)
    check("result" in r, "a completion in the noisy buffer, left alone, is answered", r)
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": URI}})
    eq(doc["text"].encode("utf-8"), data, "the document after %d edits" % N_EDITS)
    print("%d edits, %d completions (%d answered, %d cancelled or stale) in %.1f s"
          % (N_EDITS, len(completions), answered["result"], answered["error"], elapsed))
    print("client round trips of sculpt/test/stats: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
          % (percentile(rtts, 0.5), percentile(rtts, 0.99), max(rtts)))
    print("loop calls into the server: %d; CPU max %.1f ms (p99 <= %s ms); wall max %.1f ms "
          "(p99 <= %s ms)" % (loop["calls"], loop["maxCpuMs"],
                              histogram_quantile(loop["cpuHistogramMs"], 0.99),
                              loop["maxWallMs"],
                              histogram_quantile(loop["wallHistogramMs"], 0.99)))
    check(loop["calls"] >= N_EDITS // EVERY, "the loop's calls were counted", loop)
    check(loop["maxCpuMs"] <= LOOP_LIMIT_MS,
          "the loop spent %.1f ms of CPU in one call (limit %.0f ms)"
          % (loop["maxCpuMs"], LOOP_LIMIT_MS), loop)
    eq(s.shutdown_and_exit(60), 0, "exit code")


BIG_BYTES = 8 << 20
# The release run holds the loop's time in the two tests below: under ASan
# its copies and frees cost several times as much, and swing with the
# allocator's quarantine (test_draft_bounds.py does the same).
SANITIZED = os.environ.get("SCULPT_SANITIZED", "").upper() in ("1", "ON", "TRUE", "YES")


def test_a_long_message_is_parsed_off_the_loop():
    s = spawn(env=ASAN_ENV)
    s.start({}, initializationOptions={"modelPath": MODEL, "debounceMs": 0})
    line = "x = foo(bar, baz) + 12345  # a comment\n"
    n = BIG_BYTES // len(line)
    text = line * n
    uri = "file:///w/big.py"
    s.result("sculpt/test/stats", {"resetLoop": True})
    before = len(s.messages)
    # One write: the open, an edit at its end, a long message that is not
    # JSON, and a request for the text. Each must be handled in order.
    data = frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}})
    data += frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{
            "range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 0}},
            "text": "y = 1\n"}]}})
    data += frame(b'{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": "'
                  + b"a" * (1 << 20))
    data += frame({"jsonrpc": "2.0", "id": 6, "method": "sculpt/test/stats", "params": {}})
    s.send_raw(data)
    stats = s.wait_response(6, timeout=120)
    # The loop's call that answered 6 counts only in the next answer.
    loop = s.result("sculpt/test/stats", {})["loop"]
    # (Asked after the loop's figures: its 8 MB answer is written on the loop.)
    doc = s.request("sculpt/test/document", {"textDocument": {"uri": uri}})
    check("result" in doc, "the document request behind the long messages is answered", doc)
    check(doc.get("result", {}).get("version") == 2 and
          doc["result"]["text"] == text + "y = 1\n",
          "the document is the open text with the edit that followed it")
    with s.cv:
        errors = [i for i, m in enumerate(s.messages[before:])
                  if m.get("id") is None and m.get("error", {}).get("code") == -32700]
        answer = next(i for i, m in enumerate(s.messages[before:]) if m is stats)
    check(len(errors) == 1 and errors[0] < answer,
          "the malformed long message gets one parse error, before the answer behind it",
          errors, answer)
    print("a %d MB didOpen: the loop's CPU max %.1f ms, wall max %.1f ms"
          % (BIG_BYTES >> 20, loop["maxCpuMs"], loop["maxWallMs"]))
    check(SANITIZED or loop["maxCpuMs"] <= LOOP_LIMIT_MS,
          "the loop spent %.1f ms of CPU in one call (limit %.0f ms)"
          % (loop["maxCpuMs"], LOOP_LIMIT_MS), loop)
    # The end of the input behind a long message: it is still handled first.
    s.send_raw(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": "file:///w/big2.py", "languageId": "python", "version": 1,
                         "text": text}}}) +
               frame({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}))
    s.close_stdin()
    r = s.wait_response(8, timeout=120)
    check("error" not in r, "shutdown behind a long message and the input's end is answered", r)
    eq(s.wait_exit(60), 0, "exit code (shutdown came before the end of the input)")


def test_many_changes_in_one_message():
    """A replace-all arrives as one didChange with a change per occurrence
    (VS Code's in reverse document order, eglot's and Neovim's in the
    order made). Each change rebuilt the document's line index, so 3,000
    in a 100 KB file held the loop about 200 ms (20,000 in 120 KB: 1.7 s);
    the index now follows each edit."""
    s = spawn(env=ASAN_ENV)
    s.start({}, initializationOptions={"modelPath": MODEL, "debounceMs": 0})
    uri = "file:///w/replace.py"
    line = "x = foo(bar) + 1\n"
    n = 6000
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                       "version": 1, "text": line * n}})
    want = line * n
    for version, order in ((2, "descending"), (3, "ascending")):
        old, new = ("foo", "quux") if version == 2 else ("quux", "q\nz")
        lines = list(range(0, n, 2))
        if order == "descending":
            lines.reverse()
        changes = []
        for k, i in enumerate(lines):
            at = i + (k if "\n" in new and order == "ascending" else 0)
            changes.append({"range": {"start": {"line": at, "character": 4},
                                      "end": {"line": at, "character": 4 + len(old)}},
                            "text": new})
        s.result("sculpt/test/stats", {"resetLoop": True})
        s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                            "contentChanges": changes})
        s.result("sculpt/test/stats", {})
        loop = s.result("sculpt/test/stats", {})["loop"]
        rows = want.split("\n")
        for i in lines:
            rows[i] = rows[i].replace(old, new, 1)
        want = "\n".join(rows)
        doc = s.result("sculpt/test/document", {"textDocument": {"uri": uri}})
        check(doc["text"] == want and doc["version"] == version,
              "%d changes in %s order give the text they describe" % (len(changes), order))
        print("%d changes in one didChange (%s): the loop's CPU max %.1f ms"
              % (len(changes), order, loop["maxCpuMs"]))
        check(SANITIZED or loop["maxCpuMs"] <= LOOP_LIMIT_MS,
              "the loop spent %.1f ms of CPU in one call (limit %.0f ms)"
              % (loop["maxCpuMs"], LOOP_LIMIT_MS), loop)
    # In no order (a client that sends its edits as it likes): one by one,
    # each moved the text after it, 5,000 in a 1 MB file 111-124 ms of the
    # loop (20,000 in 10 MB: 4.5 s); now the text is cut into blocks for the
    # batch (25 ms).
    uri = "file:///w/shuffled.py"
    n = 60000
    rows = (line * n).split("\n")
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                       "version": 1, "text": line * n}})
    changes = []
    for i in random.Random(5).sample(range(n), 5000):
        changes.append({"range": {"start": {"line": i, "character": 4},
                                  "end": {"line": i, "character": 7}}, "text": "quux"})
        rows[i] = rows[i].replace("foo", "quux", 1)
    s.result("sculpt/test/stats", {"resetLoop": True})
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": changes})
    s.result("sculpt/test/stats", {})
    loop = s.result("sculpt/test/stats", {})["loop"]
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": uri}})
    check(doc["text"] == "\n".join(rows) and doc["version"] == 2,
          "5,000 changes in no order give the text they describe")
    print("5,000 changes in no order in a 1 MB file: the loop's CPU max %.1f ms"
          % loop["maxCpuMs"])
    check(SANITIZED or loop["maxCpuMs"] <= LOOP_LIMIT_MS,
          "the loop spent %.1f ms of CPU in one call (limit %.0f ms)"
          % (loop["maxCpuMs"], LOOP_LIMIT_MS), loop)
    eq(s.shutdown_and_exit(60), 0, "exit code")


if __name__ == "__main__":
    run_tests([test_loop_never_blocks_on_a_parse, test_a_long_message_is_parsed_off_the_loop,
               test_many_changes_in_one_message])

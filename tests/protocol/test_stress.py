"""Stress: 10,000 incremental didChange notifications (random ranges,
multi-byte text, LF, CRLF and lone CRs, a few full replacements) interleaved with
sculpt/test/document every 100 changes and sculpt/test/stats, all pipelined.
Every request is answered, every snapshot and the final text equal the
Python model, and memory stays bounded: rssKb at the end is within 20 MB of
rssKb after the first 1,000 changes."""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import apply_change, check, eq, frame, rng, run_tests, spawn  # noqa: E402

N_CHANGES = 10000
SNAPSHOT_EVERY = 100
RSS_SLACK_KB = 20 * 1024
URI = "file:///stress.txt"
PIECES = ["a", "bc", "def ", "\u00e9", "\u4e2d\u6587", "\U0001F600", "\n", "\r\n", "\r",
          "x\U0001F601y", "\t", ""]

# Under AddressSanitizer freed memory sits in a quarantine (256 MB by
# default), which would read as growth; a small one keeps RSS meaningful.
# Other builds ignore the variable.
ASAN_ENV = {"ASAN_OPTIONS": ":".join(filter(None, [
    os.environ.get("ASAN_OPTIONS", ""), "quarantine_size_mb=8",
    "thread_local_quarantine_size_kb=64"]))}


# About 40 KB: large enough that leaking a copy of the text per change
# (or per message) would show far above the bound.
INITIAL = "".join("line %d: caf\u00e9 \u4e2d \U0001F600%s" % (i, ("\n", "\r\n", "\r")[i % 3])
                  for i in range(1600))


def line_of(data, off):
    """(line, line start) of byte offset off; lines end at \n or \r\n (a lone
    \r is a character). Uses bytes.count/rfind so that a 40 KB document
    stays cheap."""
    return data.count(b"\n", 0, off), data.rfind(b"\n", 0, off) + 1


def cols(b, enc):
    t = b.decode("utf-8")
    if enc == "utf-8":
        return len(b)
    if enc == "utf-32":
        return len(t)
    return len(t) + sum(1 for c in t if ord(c) > 0xFFFF)


def pick(rnd, data, enc, near=None):
    """A random position as (line, character, expected byte offset): a
    character boundary, sometimes past its line's end (clamps to the line
    end) or the line after the last at character 0 (the end of the text;
    anything further is refused, tests/protocol/test_sync_errors.py)."""
    n = len(data)
    if near is None and rnd.random() < 0.01:
        last, _ = line_of(data, n)
        return last + 1, 0, n  # just after the last line: its end, as clients write it
    if near is None:
        off = rnd.randrange(n + 1)
    else:
        off = min(n, near + rnd.randrange(0, 12 if rnd.random() < 0.9 else 200))
    while 0 < off < n and (data[off] & 0xC0) == 0x80:
        off -= 1  # back to the start of a character
    if 0 < off < n and data[off - 1] == 0x0D and data[off] == 0x0A:
        off -= 1  # not between \r and \n
    line, start = line_of(data, off)
    ch = cols(data[start:off], enc)
    if rnd.random() < 0.03:  # past the end of the line: clamps to its end
        end = data.find(b"\n", off)
        end = n if end < 0 else end
        crlf = start < end < n and data[end - 1] == 0x0D
        end -= crlf
        past = 1 + rnd.randrange(3)
        # One past a line ending in \r\n is after the \r (Neovim's end of it).
        return line, cols(data[start:end], enc) + past, end + (crlf and past == 1)
    return line, ch, off


def make_change(rnd, data, enc):
    """(change, new data). The expected result is computed from byte
    offsets directly, independently of the server's position code."""
    a = pick(rnd, data, enc)
    b = a if rnd.random() < 0.4 else pick(rnd, data, enc, near=a[2])
    if (b[0], b[1]) < (a[0], a[1]):
        a, b = b, a
    size = len(data)
    n = rnd.randrange(1, 5) if size < 30000 else (rnd.randrange(3) if size < 60000 else 0)
    text = "".join(rnd.choice(PIECES) for _ in range(n))
    new = data[:a[2]] + text.encode("utf-8") + data[b[2]:]
    return {"range": rng(a[0], a[1], b[0], b[1]), "text": text}, new


def test_ten_thousand_changes():
    enc = "utf-16"
    s = spawn(env=ASAN_ENV)
    s.start()
    rnd = random.Random(20240601)
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "plaintext", "version": 0, "text": INITIAL}})
    data = INITIAL.encode("utf-8")
    snapshots = {}   # request id -> (version, expected bytes)
    stats_ids = []
    pending = []
    rss_first = None
    sizes = []
    t0 = time.monotonic()
    for v in range(1, N_CHANGES + 1):
        if rnd.random() < 0.002:
            change = {"text": INITIAL[rnd.randrange(len(INITIAL) // 2):]}
            data = change["text"].encode("utf-8")
        else:
            prev = data
            change, data = make_change(rnd, data, enc)
            if v % 97 == 0:  # the two Python models must agree (a test self-check)
                check(apply_change(prev, change, enc) == data, "stress model disagrees with "
                      "lspclient.apply_change", change)
        sizes.append(len(data))
        pending.append(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": v}, "contentChanges": [change]}}))
        if v % SNAPSHOT_EVERY == 0:
            i = s.new_id()
            snapshots[i] = (v, data)
            pending.append(frame({"jsonrpc": "2.0", "id": i, "method": "sculpt/test/document",
                                  "params": {"textDocument": {"uri": URI}}}))
        if v % 250 == 0:
            i = s.new_id()
            stats_ids.append(i)
            pending.append(frame({"jsonrpc": "2.0", "id": i, "method": "sculpt/test/stats",
                                  "params": {}}))
        if len(pending) >= 64 or v == N_CHANGES:
            s.send_raw(b"".join(pending))
            pending = []
        if v == 1000:
            st = s.result("sculpt/test/stats", {}, timeout=60)
            rss_first = st.get("rssKb")
            check(isinstance(rss_first, int) and rss_first > 0, "rssKb after 1000", st)
    t_send = time.monotonic() - t0
    bad = []
    for i, (v, want) in sorted(snapshots.items()):
        r = s.wait_response(i, 60)
        if "error" in r:
            bad.append((v, r["error"]))
        elif r["result"].get("text", "").encode("utf-8") != want or r["result"].get("version") != v:
            bad.append((v, "text/version differs from the model"))
            if len(bad) == 1:
                print("first mismatch at version %d:\n got  %r\n want %r" % (
                    v, r["result"].get("text", "")[:400], want.decode("utf-8")[:400]))
    check(not bad, "%d of %d snapshots differ" % (len(bad), len(snapshots)), bad[:5])
    for i in stats_ids:
        st = s.wait_response(i, 60)
        check("result" in st and st["result"].get("openDocuments") == 1,
              "stats during the stress", st)
    final = s.result("sculpt/test/document", {"textDocument": {"uri": URI}})
    eq(final["version"], N_CHANGES, "final version")
    check(final["text"].encode("utf-8") == data, "final text equals the model")
    st = s.result("sculpt/test/stats", {})
    rss_end = st["rssKb"]
    print("text size: min %d, max %d bytes" % (min(sizes), max(sizes)))
    print("sent %d changes in %.2f s; rssKb %d after 1000, %d at the end; %d bytes of text"
          % (N_CHANGES, t_send, rss_first, rss_end, len(data)))
    check(rss_end - rss_first < RSS_SLACK_KB, "memory bounded: rssKb grew by %d KB"
          % (rss_end - rss_first))
    eq(st["pendingJobs"], 0, "pendingJobs at the end")
    eq(s.shutdown_and_exit(60), 0, "exit code")


if __name__ == "__main__":
    run_tests([test_ten_thousand_changes])

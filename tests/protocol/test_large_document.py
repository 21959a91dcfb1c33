"""Memory bounded by the document's size (issue 22). One didOpen of a 10 MB
C file and one completion used to peak at 1.6 GB: the completion parsed the
whole file with tree-sitter, whose tree costs 25-60 times the text for real
code and about 100 times for garbage (and took seconds, on the loop).

A document larger than maxDocumentBytes (2 MiB by default) stays in sync
but gets no syntax tree and no completions or code actions; the user is
told once, with window/showMessage. The test opens a 10 MB document, asks
for completions (explicit: -32803 with the reason; automatic: empty, with
data.skipped) and code actions, edits it, and requires the server's peak
resident memory (VmHWM in /proc/PID/status) to grow by at most 10 times
the text. The setting is honoured both ways: a small limit refuses a small
document, raising it brings completions back."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, planted_model, rng, run_tests, spawn  # noqa: E402

SRC = os.environ.get("SCULPT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = planted_model()
BIG = "file:///w/big.c"
SIZE = 10 * 1000 * 1000
REQUEST_FAILED = -32803
# Under AddressSanitizer freed memory sits in a quarantine (256 MB by
# default), which would read as growth; a small one keeps VmHWM meaningful.
ASAN_ENV = {"ASAN_OPTIONS": ":".join(filter(None, [
    os.environ.get("ASAN_OPTIONS", ""), "quarantine_size_mb=8",
    "thread_local_quarantine_size_kb=64"]))}


def big_text():
    """10 MB of real C: jq's sources, over and over."""
    src = os.path.join(SRC, "tests", "data", "real", "jq", "src")
    files = sorted(f for f in os.listdir(src) if f.endswith(".c"))
    parts, n = [], 0
    while n < SIZE:
        for f in files:
            t = open(os.path.join(src, f), encoding="utf-8", errors="replace").read()
            parts.append(t)
            n += len(t)
            if n >= SIZE:
                break
    text = "".join(parts)[:SIZE]
    return text[:text.rfind("\n") + 1]


def vm_hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/%d/status" % pid)


def start(**settings):
    s = spawn(env=ASAN_ENV)
    opts = {"modelPath": MODEL, "lengthCandidates": 4}
    opts.update(settings)
    s.start({}, initializationOptions=opts)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="model ready", timeout=60)
    return s


def inline(s, uri, line, ch, trigger):
    return s.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": ch},
        "context": {"triggerKind": trigger}}, 60)


def show_messages(s):
    with s.cv:
        return [m["params"] for m in s.messages if m.get("method") == "window/showMessage"]


def test_ten_megabytes():
    text = big_text()
    lines = text.split("\n")
    mid = len(lines) // 2
    s = start()
    s.sync()
    base = vm_hwm_kb(s.proc.pid)
    s.notify("textDocument/didOpen", {"textDocument": {"uri": BIG, "languageId": "c",
                                                       "version": 1, "text": text}})
    r = inline(s, BIG, mid, 0, 1)
    check("error" in r and r["error"]["code"] == REQUEST_FAILED and
          "maxDocumentBytes" in r["error"]["message"], "an explicit completion is refused", r)
    r = inline(s, BIG, mid + 1, 0, 2)
    eq(r["result"]["items"], [], "an automatic completion: no items")
    eq(r["result"]["data"]["skipped"], "too large", "an automatic completion: the reason")
    r = s.result("textDocument/completion", {"textDocument": {"uri": BIG},
                                             "position": {"line": mid, "character": 0},
                                             "context": {"triggerKind": 2}})
    eq(r["items"], [], "completion items")
    eq(s.result("textDocument/codeAction", {"textDocument": {"uri": BIG},
                                            "range": rng(mid, 0, mid, 0),
                                            "context": {"diagnostics": []}}),
       [], "code actions")
    # Still in sync: edits apply.
    for v in range(2, 12):
        s.notify("textDocument/didChange", {"textDocument": {"uri": BIG, "version": v},
                                            "contentChanges": [{"range": rng(mid, 0, mid, 0),
                                                                "text": "x"}]})
    r = s.result("sculpt/test/offset", {"textDocument": {"uri": BIG},
                                        "position": {"line": mid, "character": 10}})
    eq(r["clamped"], False, "positions in the edited document")
    s.sync()
    peak = vm_hwm_kb(s.proc.pid) - base
    msgs = show_messages(s)
    eq(len(msgs), 1, "one window/showMessage")
    check(msgs[0]["type"] == 2 and BIG in msgs[0]["message"] and
          "maxDocumentBytes" in msgs[0]["message"], "the message says which and why", msgs[0])
    print("a %.1f MB document: peak RSS grew by %.1f MB (%.1fx the text)"
          % (len(text) / 1e6, peak / 1024, peak * 1024 / len(text)))
    check(peak * 1024 <= 10 * len(text), "peak RSS grew by %d KB, over 10x the %d-byte text"
          % (peak, len(text)))
    d = s.result("sculpt/test/document", {"textDocument": {"uri": BIG}})
    check(d["synced"] and d["text"] == "\n".join(lines[:mid] + ["x" * 10 + lines[mid]] +
                                                 lines[mid + 1:]), "the text after the edits")
    eq(s.shutdown_and_exit(60), 0, "exit code")


def test_setting():
    s = start(maxDocumentBytes=100)
    uri = "file:///w/small.c"
    text = "int x;\n" * 20 + "int abc;\n"  # 149 bytes
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "c",
                                                       "version": 1, "text": text}})
    r = inline(s, uri, 20, 7, 1)
    check("error" in r and "maxDocumentBytes" in r["error"]["message"], "over the setting", r)
    s.notify("workspace/didChangeConfiguration",
             {"settings": {"sculpt": {"maxDocumentBytes": 1 << 20}}})
    r = inline(s, uri, 20, 7, 1)
    eq(r["result"]["items"][0]["insertText"], "defghijklmnopqrstuvwxyz",
       "completions under the raised setting")
    eq(len(show_messages(s)), 1, "told once")
    s.shutdown_and_exit()


if __name__ == "__main__":
    run_tests([test_ten_megabytes, test_setting])

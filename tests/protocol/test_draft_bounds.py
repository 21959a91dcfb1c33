"""Drafts in a pathological repository (issue 45): a huge generated file (a
million identical lines, 6 MB: over the index's 1 MiB file bound, skipped),
a file of identical lines just under that bound (indexed: 170,000 places
under one key, of which the line table keeps 64), and an open document of a
million identical lines (2 MB, under maxDocumentBytes, so it is completed
in). Completions at its end and in the middle must come back, the loop
must not stall (its CPU time per call, sculpt/test/stats, as
test_loop_latency.py measures it, no worse than without drafts), the
drafts' own time stays small, and the server's peak memory (VmHWM) grows
no more than without drafts: the line table keeps its bound. Closing the
document costs the loop next to nothing: its tree (1.7 million nodes, 75-170
ms of CPU to free) goes to the reaper's thread, which then gives the heap's
free pages back (437 MB stayed resident before). The loop and memory
comparisons hold in the release build; under ASan the scenario runs for its
memory errors."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, planted_model, run_tests, spawn  # noqa: E402

MODEL = planted_model()
LOOP_LIMIT_MS = 20.0
# What the server may keep resident after the document is closed: the
# model's scratch arenas, touched by the completions (29 MB here), not the
# tree's 400 MB.
RSS_KEPT_MB = 128
ASAN_ENV = {"ASAN_OPTIONS": ":".join(filter(None, [
    os.environ.get("ASAN_OPTIONS", ""), "quarantine_size_mb=8",
    "thread_local_quarantine_size_kb=64"]))}


def vm_kb(pid, field="VmHWM"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no " + field)


def vm_hwm_kb(pid):
    return vm_kb(pid, "VmHWM")


def rss_after_close_mb(s, base_kb, want_mb):
    """Resident memory above base_kb once the closed document's tree is
    freed and the heap trimmed (the reaper trims after a second idle): the
    first reading at or under want_mb, else the last of 10 s."""
    deadline = time.monotonic() + 10
    while True:
        grew = (vm_kb(s.proc.pid, "VmRSS") - base_kb) / 1024
        if grew <= want_mb or time.monotonic() > deadline:
            return grew
        time.sleep(0.2)


def make_repo():
    root = tempfile.mkdtemp(prefix="sculpt-draft-bounds-")
    atexit.register(shutil.rmtree, root, True)
    subprocess.run(["git", "init", "-q", root], check=True)
    os.makedirs(os.path.join(root, "gen"))
    with open(os.path.join(root, "gen", "huge.py"), "w") as f:
        f.write("x = abc\n" * 1000000)
    with open(os.path.join(root, "gen", "lines.py"), "w") as f:
        f.write("x = abc\n" * 130000)
    with open(os.path.join(root, "main.py"), "w") as f:
        f.write("def f():\n    return 1\n")
    return root


def session(root, drafts):
    """Opens the document and completes in it; (answers' data, the loop's
    CPU maximum after the open, peak memory growth in MB)."""
    s = spawn(env=ASAN_ENV)
    s.start({}, rootUri="file://" + root,
            initializationOptions={"modelPath": MODEL, "drafts": drafts})
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   (m["params"].get("index") or {}).get("state") == "ready", what="index ready",
                   timeout=120)
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="model ready")
    base_kb = vm_hwm_kb(s.proc.pid)
    base_rss_kb = vm_kb(s.proc.pid, "VmRSS")
    text = "x = abc\n" * 250000  # 2 MB: under maxDocumentBytes
    uri = "file://" + os.path.join(root, "big.py")
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                       "version": 1, "text": text}})
    # The open itself (copying 2 MB, its line index) is not what is measured.
    s.result("sculpt/test/stats", {"resetLoop": True})
    results = []
    for line, ch in ((249999, 7), (125000, 7), (250000, 0), (3, 4)):
        r = s.request("textDocument/inlineCompletion",
                      {"textDocument": {"uri": uri}, "position": {"line": line, "character": ch},
                       "context": {"triggerKind": 1}}, 60)
        check("result" in r, "an answer at %d:%d" % (line, ch), r)
        results.append(r["result"]["data"])
    loop = s.result("sculpt/test/stats", {"resetLoop": True})["loop"]
    grew_mb = (vm_hwm_kb(s.proc.pid) - base_kb) / 1024
    # Closing it lets go of its tree (1.7 million nodes): freed off the
    # loop. The second stats call counts the close even when the first was
    # read with it in one call.
    s.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    s.result("sculpt/test/stats", {})
    close = s.result("sculpt/test/stats", {})["loop"]
    close["rssGrewMb"] = rss_after_close_mb(s, base_rss_kb, RSS_KEPT_MB)
    s.shutdown_and_exit()
    return results, loop, grew_mb, close


def test_pathological_repository():
    root = make_repo()
    off, loop_off, grew_off, close_off = session(root, False)
    on, loop_on, grew_on, close_on = session(root, True)
    subprocess.run(["rm", "-rf", root])
    drafted = [d for d in on if d.get("drafts", {}).get("offered")]
    print("drafts ms: %s; loop CPU max %.1f ms (off: %.1f); peak RSS grew %.0f MB (off: %.0f MB)"
          " for a 2 MB document" % ([round(d["drafts"]["ms"], 2) for d in drafted],
                                    loop_on["maxCpuMs"], loop_off["maxCpuMs"], grew_on, grew_off))
    print("closing it: loop CPU max %.1f ms (off: %.1f); resident memory then %.0f MB over the"
          " start (off: %.0f MB)" % (close_on["maxCpuMs"], close_off["maxCpuMs"],
                                     close_on["rssGrewMb"], close_off["rssGrewMb"]))
    check(drafted, "drafts were offered", on)
    for d in drafted:
        # A pathological place count would show here first.
        check(d["drafts"]["ms"] < 50, "drafts took %.1f ms" % d["drafts"]["ms"], d)
    # Drafts run on the request's job, never on the loop: the loop's worst
    # call is what it is without them (3-5 ms here: the loop copies the
    # document's tree to adopt it; freeing the one it replaces is the
    # reaper's). It once was 60-70 ms, the loop freeing trees itself, and
    # CI saw 53.3 against 7.7 ms when the reset of sculpt/test/stats came
    # in one read with the 2 MB didOpen: that call's clock now restarts at
    # the reset. The release run holds this check; under ASan the loop's
    # own frees go through the quarantine, whose cost swings from run to
    # run by more than the call itself.
    sanitized = os.environ.get("SCULPT_SANITIZED", "").upper() in ("1", "ON", "TRUE", "YES")
    if not sanitized:
        check(loop_on["maxCpuMs"] <= max(LOOP_LIMIT_MS, loop_off["maxCpuMs"] + 10),
              "the loop spent %.1f ms of CPU in one call (%.1f without drafts)"
              % (loop_on["maxCpuMs"], loop_off["maxCpuMs"]), loop_on)
        for close in (close_off, close_on):
            check(close["maxCpuMs"] <= LOOP_LIMIT_MS,
                  "closing the document took the loop %.1f ms of CPU" % close["maxCpuMs"], close)
            # The allocator keeps freed pages unless trimmed: 437 MB stayed.
            check(close["rssGrewMb"] <= RSS_KEPT_MB,
                  "after closing the document the server kept %.0f MB" % close["rssGrewMb"], close)
    # The document's tree is most of it (docs/reliability.md); drafts add
    # the prompt's lexemes and 64 places.
    # Under ASan the allocator's quarantine keeps freed blocks, so the peak
    # measures what was allocated, not what lived (CI's sanitized run: +158
    # MB, the release build's +7): the release run holds this check.
    if not sanitized:
        check(grew_on <= grew_off + 32,
              "drafts grew peak memory by %.0f MB" % (grew_on - grew_off))


if __name__ == "__main__":
    run_tests([test_pathological_repository])

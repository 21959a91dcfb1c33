"""Cancellation and the worker thread, through sculpt/test/sleep (it runs on
the worker in 1 ms steps and checks for cancellation each step):
$/cancelRequest of a running and of a queued job (-32800), didChange of the
bound document (-32801), uncancelled jobs return their result after really
sleeping, jobs run one at a time in order, the loop keeps answering while a
job runs, and shutdown/exit/EOF with jobs in flight answer every request
exactly once (duplicates are caught by lspclient.Server.close)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import (CONTENT_MODIFIED, REQUEST_CANCELLED, check, eq,  # noqa: E402
                       expect_error, frame, run_tests, spawn)

U = "file:///u.txt"
V = "file:///v.txt"
# "well before": a cancelled 3 s sleep must answer within 1.5 s of the cancel.
PROMPT = 1.5


def started():
    s = spawn()
    s.start()
    for uri in (U, V):
        s.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": "text\n"}})
    s.sync()
    return s


def arrival(s, id, timeout=20):
    """Waits for a response; returns (response, monotonic arrival time)."""
    r = s.wait_response(id, timeout)
    return r, time.monotonic()


def test_cancel_running():
    s = started()
    i = s.send_request("sculpt/test/sleep", {"ms": 3000})
    time.sleep(0.2)  # let it start on the worker
    t_cancel = time.monotonic()
    s.notify("$/cancelRequest", {"id": i})
    r, t = arrival(s, i)
    expect_error(r, REQUEST_CANCELLED, i)
    check(t - t_cancel < PROMPT, "cancelled sleep answered %.2f s after the cancel"
          % (t - t_cancel))
    # A string id works the same.
    s.send_request("sculpt/test/sleep", {"ms": 3000}, id="sleep-A")
    time.sleep(0.1)
    t_cancel = time.monotonic()
    s.notify("$/cancelRequest", {"id": "sleep-A"})
    r, t = arrival(s, "sleep-A")
    expect_error(r, REQUEST_CANCELLED, "sleep-A")
    check(t - t_cancel < PROMPT, "string-id cancel took %.2f s" % (t - t_cancel))
    # Cancelling a finished request does nothing (no second answer).
    s.notify("$/cancelRequest", {"id": i})
    s.sync()
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_uncancelled_sleep_returns_result():
    s = started()
    t0 = time.monotonic()
    r = s.result("sculpt/test/sleep", {"ms": 300})
    dt = time.monotonic() - t0
    eq(r, {"sleptMs": 300}, "sleep result")
    check(dt >= 0.29, "a 300 ms sleep answered after only %.3f s" % dt)
    r = s.result("sculpt/test/sleep", {"ms": 0})
    eq(r, {"sleptMs": 0}, "zero sleep")
    r = s.result("sculpt/test/sleep", {"ms": 50, "textDocument": {"uri": U}})
    eq(r, {"sleptMs": 50}, "sleep bound to a document, not edited")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_cancel_queued():
    s = started()
    t0 = time.monotonic()
    a = s.send_request("sculpt/test/sleep", {"ms": 1500})
    b = s.send_request("sculpt/test/sleep", {"ms": 1500})
    c = s.send_request("sculpt/test/sleep", {"ms": 100})
    time.sleep(0.1)
    t_cancel = time.monotonic()
    s.notify("$/cancelRequest", {"id": b})
    rb, tb = arrival(s, b)
    expect_error(rb, REQUEST_CANCELLED, b)
    ra, ta = arrival(s, a)
    rc, tc = arrival(s, c)
    eq(ra.get("result"), {"sleptMs": 1500}, "the running sleep's result")
    eq(rc.get("result"), {"sleptMs": 100}, "the sleep queued after the cancelled one")
    check(tb < ta, "the queued cancelled job was answered before the running one ended "
          "(%.2f s vs %.2f s)" % (tb - t0, ta - t0))
    check(tb - t_cancel < PROMPT, "queued cancel took %.2f s" % (tb - t_cancel))
    check(ta - t0 >= 1.49, "the first sleep took only %.2f s" % (ta - t0))
    # c ran after a, and b's 1500 ms were never slept.
    check(tc - t0 >= 1.59, "c answered at %.2f s, before a+c could run" % (tc - t0))
    check(tc - t0 < 1.6 + 1.4, "c answered at %.2f s: did b run?" % (tc - t0))
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_jobs_run_in_order_one_at_a_time():
    s = started()
    t0 = time.monotonic()
    ids = [s.send_request("sculpt/test/sleep", {"ms": 120}) for _ in range(5)]
    times = [arrival(s, i)[1] for i in ids]
    with s.cv:
        order = [m["id"] for m in s.messages if m.get("id") in ids]
    eq(order, ids, "answers in submission order")
    check(times[-1] - t0 >= 0.59, "five 120 ms jobs finished in %.2f s: not one at a time"
          % (times[-1] - t0))
    for i in ids:
        eq(s.wait_response(i).get("result"), {"sleptMs": 120}, "result of %d" % i)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_did_change_makes_content_modified():
    s = started()
    t0 = time.monotonic()
    running = s.send_request("sculpt/test/sleep", {"ms": 3000, "textDocument": {"uri": U}})
    queued = s.send_request("sculpt/test/sleep", {"ms": 3000, "textDocument": {"uri": U}})
    other = s.send_request("sculpt/test/sleep", {"ms": 200, "textDocument": {"uri": V}})
    unbound = s.send_request("sculpt/test/sleep", {"ms": 100})
    time.sleep(0.2)
    t_change = time.monotonic()
    s.notify("textDocument/didChange", {"textDocument": {"uri": U, "version": 2},
                                        "contentChanges": [{"text": "new text\n"}]})
    after = s.send_request("sculpt/test/sleep", {"ms": 50, "textDocument": {"uri": U}})
    for i in (running, queued):
        r, t = arrival(s, i)
        expect_error(r, CONTENT_MODIFIED, i)
        check(t - t_change < PROMPT, "content-modified answer took %.2f s" % (t - t_change))
    eq(arrival(s, other)[0].get("result"), {"sleptMs": 200}, "a sleep bound to another uri")
    eq(arrival(s, unbound)[0].get("result"), {"sleptMs": 100}, "an unbound sleep")
    ra, ta = arrival(s, after)
    eq(ra.get("result"), {"sleptMs": 50}, "a sleep sent after the change")
    check(ta - t0 < 3.0, "the 3 s sleeps were not cut short (%.2f s)" % (ta - t0))
    eq(s.result("sculpt/test/document", {"textDocument": {"uri": U}})["text"], "new text\n",
       "the change was applied")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_loop_answers_while_job_runs():
    s = started()
    long = s.send_request("sculpt/test/sleep", {"ms": 4000})
    time.sleep(0.1)
    for k in range(5):
        t = time.monotonic()
        d = s.result("sculpt/test/document", {"textDocument": {"uri": U}})
        dt = time.monotonic() - t
        eq(d["text"], "text\n", "document while a job runs")
        check(dt < 0.75, "sculpt/test/document took %.2f s while a job ran" % dt)
        st = s.result("sculpt/test/stats", {})
        check(st.get("pendingJobs", 0) >= 1, "pendingJobs counts the running job", st)
        s.notify("textDocument/didChange", {"textDocument": {"uri": V, "version": 2 + k},
                                            "contentChanges": [{"text": "v%d" % k}]})
    check(long not in [m.get("id") for m in list(s.messages)], "the long job ended early")
    s.notify("$/cancelRequest", {"id": long})
    expect_error(s.wait_response(long, 5), REQUEST_CANCELLED, long)
    # The didChanges above may have queued index updates behind the sleep;
    # they run once it is cancelled, so the count reaches 0 soon, not at once.
    deadline = time.monotonic() + 10
    while (pending := s.result("sculpt/test/stats", {}).get("pendingJobs")) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    eq(pending, 0, "pendingJobs afterwards")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_shutdown_with_jobs_in_flight():
    s = started()
    ids = [s.send_request("sculpt/test/sleep", {"ms": 1500}),
           s.send_request("sculpt/test/sleep", {"ms": 1500, "textDocument": {"uri": U}}),
           s.send_request("sculpt/test/sleep", {"ms": 10})]
    time.sleep(0.1)
    sd = s.send_request("shutdown")
    r = s.wait_response(sd, 10)
    eq(r.get("result", "missing"), None, "shutdown result with jobs in flight")
    for i in ids:
        r = s.wait_response(i, 10)
        if "error" in r:
            eq(r["error"]["code"], REQUEST_CANCELLED, "code of a job ended by shutdown")
        else:
            check(r["result"].get("sleptMs") in (1500, 10), "job result", r)
    s.notify("exit")
    eq(s.wait_exit(10), 0, "exit code after shutdown with jobs")


def all_answered_cancelled(s, ids, what):
    """After the process ended: each id answered once, -32800 (or a result)."""
    s._t_out.join(10)  # stdout is closed: everything the server wrote is in
    missing = [i for i in ids if s.responses.get('%d' % i) is None]
    check(not missing, "%s: requests never answered (every request gets exactly one "
          "response)" % what, missing)
    for i in ids:
        r = s.responses['%d' % i][0]
        if "error" in r:
            eq(r["error"]["code"], REQUEST_CANCELLED, "%s: code for %d" % (what, i))


def test_exit_and_eof_with_jobs_in_flight():
    # exit without shutdown while a job runs and one waits: code 1, promptly,
    # and both requests still get their one answer.
    s = started()
    ids = [s.send_request("sculpt/test/sleep", {"ms": 10000}),
           s.send_request("sculpt/test/sleep", {"ms": 10000})]
    time.sleep(0.2)
    t = time.monotonic()
    s.notify("exit")
    eq(s.wait_exit(10), 1, "exit code of exit with jobs running")
    check(time.monotonic() - t < 5, "exit waited for the 10 s jobs")
    all_answered_cancelled(s, ids, "exit with jobs in flight")
    # EOF while a job runs: the same, as EOF counts as exit.
    s2 = started()
    ids = [s2.send_request("sculpt/test/sleep", {"ms": 10000}),
           s2.send_request("sculpt/test/sleep", {"ms": 10000})]
    time.sleep(0.2)
    t = time.monotonic()
    s2.close_stdin()
    eq(s2.wait_exit(10), 1, "exit code at EOF with a job running")
    check(time.monotonic() - t < 5, "EOF waited for the 10 s job")
    all_answered_cancelled(s2, ids, "EOF with jobs in flight")


def test_shutdown_and_exit_in_one_write():
    # A client that does not wait for the shutdown answer before exit.
    s = started()
    ids = [s.send_request("sculpt/test/sleep", {"ms": 10000}),
           s.send_request("sculpt/test/sleep", {"ms": 10000})]
    time.sleep(0.2)
    s.send_raw(frame({"jsonrpc": "2.0", "id": 777, "method": "shutdown"})
               + frame({"jsonrpc": "2.0", "method": "exit"}))
    eq(s.wait_exit(10), 0, "exit code")
    all_answered_cancelled(s, ids + [777], "shutdown+exit in one write")
    eq(s.responses["777"][0].get("result", "missing"), None, "shutdown result")


if __name__ == "__main__":
    run_tests([test_cancel_running, test_uncancelled_sleep_returns_result, test_cancel_queued,
               test_jobs_run_in_order_one_at_a_time, test_did_change_makes_content_modified,
               test_loop_answers_while_job_runs, test_shutdown_with_jobs_in_flight,
               test_exit_and_eof_with_jobs_in_flight, test_shutdown_and_exit_in_one_write])

"""The server exits when it can no longer write to the client (issue 22).
It used to keep running after the client closed its stdout: a write failed
with EPIPE, was logged, and the loop went on reading stdin for nobody.

Three ways the client goes: it closes the pipe it reads our stdout from
while the server is idle (noticed without a write), while a request is in
flight on a worker (sculpt/test/sleep, cancelled at shutdown), and a socket
as stdout, closed, after which the next answer fails with EPIPE. Each time
the server must exit within a few seconds with status 1 (no shutdown came)
and write exactly one line about it on stderr, and nothing else above info."""

import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, frame, run_tests, sculpt_bin  # noqa: E402

EXIT_WITHIN = 10.0


def env():
    e = dict(os.environ)
    e["SCULPT_TEST_HOOKS"] = "1"
    e.pop("SCULPT_LOG", None)
    return e


def request(i, method, params=None):
    msg = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        msg["params"] = params
    return frame(msg)


def initialize():
    # No "initialized": the model does not load, so nothing else is logged.
    return request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})


def read_answer(f, want_id):
    """Reads frames from a binary file until the response with want_id."""
    while True:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            c = f.read(1)
            check(c, "the server closed stdout early")
            header += c
        n = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        msg = json.loads(f.read(n))
        if msg.get("id") == want_id:
            return msg


def wait_exit(p):
    t = time.monotonic()
    try:
        rc = p.wait(EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("the server still ran %.0f s after its stdout closed" % EXIT_WITHIN)
    return rc, time.monotonic() - t


def check_stderr(p):
    """Exactly one line about stdout, and no other warning or error."""
    lines = p.stderr.read().decode("utf-8", "replace").splitlines()
    about = [x for x in lines if "stdout" in x]
    eq(len(about), 1, "lines about stdout on stderr: %r" % (lines,))
    check("closed" in about[0] and "shutting down" in about[0], "the line says what", about[0])
    noisy = [x for x in lines if (" warn" in x or " error" in x) and x not in about]
    eq(noisy, [], "other warnings or errors")


def pipe_case(in_flight):
    p = subprocess.Popen([sculpt_bin(), "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env())
    p.stdin.write(initialize())
    p.stdin.flush()
    eq(read_answer(p.stdout, 1)["id"], 1, "initialize answered")
    if in_flight:
        p.stdin.write(request(2, "sculpt/test/sleep", {"ms": 60000}))
        p.stdin.flush()
        time.sleep(0.2)
    p.stdout.close()  # the client stops reading; stdin stays open
    rc, took = wait_exit(p)
    eq(rc, 1, "exit status")
    print("pipe closed (%s): exited in %.2f s" % ("a request in flight" if in_flight else "idle",
                                                  took))
    check_stderr(p)
    p.stdin.close()


def test_pipe_closed_while_idle():
    pipe_case(False)


def test_pipe_closed_with_a_request_in_flight():
    pipe_case(True)


def test_socket_closed_then_written():
    ours, theirs = socket.socketpair()
    p = subprocess.Popen([sculpt_bin(), "lsp"], stdin=subprocess.PIPE, stdout=theirs.fileno(),
                         stderr=subprocess.PIPE, env=env())
    theirs.close()
    p.stdin.write(initialize())
    p.stdin.flush()
    f = ours.makefile("rb")
    eq(read_answer(f, 1)["id"], 1, "initialize answered")
    f.close()
    ours.close()
    time.sleep(0.2)
    check(p.poll() is None, "the server notices a closed socket only when it writes")
    p.stdin.write(request(2, "sculpt/test/stats", {}))  # its answer hits EPIPE
    p.stdin.flush()
    rc, took = wait_exit(p)
    eq(rc, 1, "exit status")
    print("socket closed, then an answer written: exited in %.2f s" % took)
    check_stderr(p)
    p.stdin.close()


if __name__ == "__main__":
    run_tests([test_pipe_closed_while_idle, test_pipe_closed_with_a_request_in_flight,
               test_socket_closed_then_written])

#!/usr/bin/python3
"""lsp_tap.py — stands in for `sculpt` on PATH in the editor tests.

The editor clients start `sculpt lsp` from PATH when they are given no
settings; the tests put this script there under the name `sculpt`, so the
clients run exactly as a user's would. It runs the real binary
($SCULPT_TAP_BIN) with the same arguments, passes every byte through
unchanged both ways, and appends each LSP message it sees to
$SCULPT_TAP_LOG as one JSON line: {"dir": "c2s" | "s2c", "t": seconds,
"msg": {...}}. The tests read that transcript to check what the server
answered (every request a non-error answer) whatever the client shows.
Other subcommands are handed to the real binary as they are.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

real = os.environ.get("SCULPT_TAP_BIN")
log_path = os.environ.get("SCULPT_TAP_LOG")
if not real:
    sys.stderr.write("lsp_tap: SCULPT_TAP_BIN is not set\n")
    sys.exit(2)
if len(sys.argv) < 2 or sys.argv[1] != "lsp" or not log_path:
    os.execv(real, [real] + sys.argv[1:])

log_lock = threading.Lock()
log = open(log_path, "a", buffering=1)


def record(direction, body):
    try:
        msg = json.loads(body)
    except ValueError:
        msg = {"unparsed": body.decode("utf-8", "replace")}
    line = json.dumps({"dir": direction, "t": time.time(), "pid": os.getpid(), "msg": msg})
    with log_lock:
        log.write(line + "\n")


class Framer:
    """Splits a byte stream into Content-Length frames (for recording only;
    the bytes themselves are forwarded as they come)."""

    def __init__(self, direction):
        self.direction = direction
        self.buf = b""

    def feed(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            length = None
            for line in self.buf[:end].split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    try:
                        length = int(value.strip())
                    except ValueError:
                        pass
            if length is None:  # not a frame we understand: stop recording
                self.buf = b""
                return
            if len(self.buf) < end + 4 + length:
                return
            record(self.direction, self.buf[end + 4:end + 4 + length])
            self.buf = self.buf[end + 4 + length:]


child = subprocess.Popen([real] + sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         bufsize=0)


def forward_signal(signum, _frame):
    if child.poll() is None:
        child.send_signal(signum)


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward_signal)


def pump_in():
    framer = Framer("c2s")
    while True:
        try:
            data = os.read(0, 65536)
        except OSError:
            data = b""
        if not data:
            break
        framer.feed(data)
        try:
            child.stdin.write(data)
            child.stdin.flush()
        except (BrokenPipeError, OSError):
            break
    try:
        child.stdin.close()
    except OSError:
        pass


def pump_out():
    framer = Framer("s2c")
    while True:
        data = os.read(child.stdout.fileno(), 65536)
        if not data:
            break
        framer.feed(data)
        try:
            while data:
                data = data[os.write(1, data):]
        except OSError:
            break


threading.Thread(target=pump_in, daemon=True).start()
out = threading.Thread(target=pump_out)
out.start()
rc = child.wait()
out.join(5)
sys.exit(rc if rc >= 0 else 128 - rc)

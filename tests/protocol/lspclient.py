"""lspclient.py — a small LSP client for the protocol tests (stdlib only).

Spawns `$SCULPT_BIN lsp ...` with pipes. A reader thread parses frames from
the server's stdout *strictly* (any byte that is not part of a well-formed
`Content-Length` frame carrying a JSON-RPC 2.0 object is recorded as a
protocol violation), another drains stderr into a list of lines. Tests use
request()/notify()/send_raw() and wait_*() helpers; Server.close() always
kills the process and reports violations and sanitizer reports.

Framing and message shapes follow the LSP 3.17 specification, "Base Protocol"
(https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/)
and JSON-RPC 2.0 (https://www.jsonrpc.org/specification).
"""

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# Generous for 2 slow cores under ASan, yet far below ctest's timeout.
DEFAULT_TIMEOUT = 15.0

# JSON-RPC / LSP error codes, from the specifications above.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
CONTENT_MODIFIED = -32801

SKIP = 77


class ProtocolError(AssertionError):
    pass


def sculpt_bin():
    """The binary under test: $SCULPT_BIN, else ../../build*/sculpt (manual
    runs). Exits 77 when none can be found (a manual run without a build)."""
    b = os.environ.get("SCULPT_BIN")
    if b:
        return b
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for d in ("build-proto", "build"):
        cand = os.path.join(src, d, "sculpt")
        if os.path.exists(cand):
            return cand
    print("SKIP: SCULPT_BIN is not set and no built sculpt was found")
    sys.exit(SKIP)


def frame(body):
    """bytes of one frame around a body (str, bytes or a JSON value)."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + bytes(body)


class Server:
    """One `sculpt lsp` process. Messages from it are kept in arrival order
    in self.messages; responses are indexed by id (json-encoded key)."""

    def __init__(self, args=(), hooks=True, env=None, log_level=None):
        self.argv = [sculpt_bin(), "lsp"] + list(args)
        if log_level:
            self.argv += ["--log-level", log_level]
        e = dict(os.environ)
        e.pop("SCULPT_LOG", None)  # the tests choose levels explicitly
        e.pop("SCULPT_TEST_HOOKS", None)
        if hooks:
            e["SCULPT_TEST_HOOKS"] = "1"
        # A sanitizer report must fail the test even if the exit code is lost.
        e.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        if env:
            e.update(env)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=e, bufsize=0)
        self.cv = threading.Condition()
        self.messages = []        # every parsed message, in order
        self.responses = {}       # id key -> [response, ...]
        self.null_responses = []  # responses with "id": null
        self.requests_from_server = []
        self.violations = []      # stdout protocol violations
        self.stdout_eof = False
        self.stderr_lines = []
        self.next_id = 1000000  # far from the explicit ids tests choose
        self._t_out = threading.Thread(target=self._read_stdout, daemon=True)
        self._t_err = threading.Thread(target=self._read_stderr, daemon=True)
        self._t_out.start()
        self._t_err.start()

    # ---- reader threads -----------------------------------------------------

    def _violation(self, what):
        with self.cv:
            self.violations.append(what)
            self.cv.notify_all()

    def _read_stdout(self):
        buf = bytearray()
        fd = self.proc.stdout.fileno()
        magic = b"Content-Length: "
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while buf:
                # Strict: every byte on stdout belongs to a frame.
                if not (buf.startswith(magic) or magic.startswith(bytes(buf))):
                    nxt = buf.find(magic, 1)
                    cut = nxt if nxt > 0 else len(buf)
                    self._violation("stdout: non-frame bytes %r" % bytes(buf[:min(cut, 200)]))
                    del buf[:cut]
                    continue
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                header = bytes(buf[:end]).decode("ascii", "replace")
                length = None
                ok = True
                for i, line in enumerate(header.split("\r\n")):
                    m = re.fullmatch(r"Content-Length: (\d+)", line)
                    if m and i == 0:
                        length = int(m.group(1))
                    elif not (i > 0 and re.fullmatch(r"Content-Type: [^\r\n]+", line)):
                        ok = False
                if not ok or length is None:
                    self._violation("stdout: bad header %r" % header[:200])
                    del buf[:end + 4]
                    continue
                if len(buf) < end + 4 + length:
                    break
                body = bytes(buf[end + 4:end + 4 + length])
                del buf[:end + 4 + length]
                try:
                    msg = json.loads(body.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as ex:
                    self._violation("stdout: body is not UTF-8 JSON (%s): %r" % (ex, body[:200]))
                    continue
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    self._violation("stdout: not a JSON-RPC 2.0 object: %r" % body[:200])
                    continue
                self._deliver(msg)
        if buf:
            self._violation("stdout: %d trailing bytes after the last frame: %r"
                            % (len(buf), bytes(buf[:80])))
        with self.cv:
            self.stdout_eof = True
            self.cv.notify_all()

    def _deliver(self, msg):
        with self.cv:
            self.messages.append(msg)
            if "method" in msg:
                if "id" in msg:
                    self.requests_from_server.append(msg)
            elif "id" in msg:
                if msg["id"] is None:
                    self.null_responses.append(msg)
                else:
                    self.responses.setdefault(key(msg["id"]), []).append(msg)
                has_r, has_e = "result" in msg, "error" in msg
                if has_r == has_e:
                    self.violations.append("response needs exactly one of result/error: %r"
                                           % (msg,))
                if has_e:
                    e = msg["error"]
                    if not (isinstance(e, dict) and isinstance(e.get("code"), int)
                            and isinstance(e.get("message"), str)):
                        self.violations.append("malformed error object: %r" % (msg,))
            else:
                self.violations.append("message with neither method nor id: %r" % (msg,))
            self.cv.notify_all()

    def _read_stderr(self):
        fd = self.proc.stderr.fileno()
        pending = b""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if lines:
                with self.cv:
                    self.stderr_lines.extend(x.decode("utf-8", "replace") for x in lines)
                    self.cv.notify_all()
        if pending:
            with self.cv:
                self.stderr_lines.append(pending.decode("utf-8", "replace"))

    # ---- sending ------------------------------------------------------------

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(frame(msg))

    def new_id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def send_request(self, method, params=None, id=None):
        """Sends a request and returns its id without waiting."""
        if id is None:
            id = self.new_id()
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return id

    def request(self, method, params=None, timeout=DEFAULT_TIMEOUT):
        """Sends a request and returns its response (the whole message)."""
        return self.wait_response(self.send_request(method, params), timeout)

    def result(self, method, params=None, timeout=DEFAULT_TIMEOUT):
        """request() that must succeed; returns the result."""
        r = self.request(method, params, timeout)
        if "error" in r:
            raise ProtocolError("%s failed: %r" % (method, r["error"]))
        return r["result"]

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def respond(self, id, result):
        self.send({"jsonrpc": "2.0", "id": id, "result": result})

    def close_stdin(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    # ---- waiting ------------------------------------------------------------

    def wait_for(self, pred, timeout=DEFAULT_TIMEOUT, what="condition"):
        """Waits until pred() (called under the lock) is truthy; returns it."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                v = pred()
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProtocolError("timed out after %.1f s waiting for %s" % (timeout, what))
                self.cv.wait(min(left, 0.5))

    def wait_response(self, id, timeout=DEFAULT_TIMEOUT):
        k = key(id)

        def got():
            lst = self.responses.get(k)
            if lst:
                return lst[0]
            if self.stdout_eof:
                raise ProtocolError("server closed stdout before answering id %s" % k)
            return None
        return self.wait_for(got, timeout, "the response to id %s" % k)

    def wait_null_responses(self, n, timeout=DEFAULT_TIMEOUT):
        """Waits until at least n responses with id null arrived; returns them."""
        return self.wait_for(lambda: self.null_responses[:n] if len(self.null_responses) >= n
                             else None, timeout, "%d responses with id null" % n)

    def wait_message(self, pred, timeout=DEFAULT_TIMEOUT, what="a message", start=0):
        """Waits for the first message at index >= start that satisfies pred."""
        def find():
            for m in self.messages[start:]:
                if pred(m):
                    return m
            return None
        return self.wait_for(find, timeout, what)

    def sync(self, timeout=DEFAULT_TIMEOUT):
        """A round trip: everything the server sent while handling earlier
        messages on its loop arrived before this returns. Returns the index
        in self.messages of the sync response."""
        r = self.request("sculpt/test/stats", {}, timeout)
        with self.cv:
            return next(i for i, m in enumerate(self.messages) if m is r)

    def wait_exit(self, timeout=DEFAULT_TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise ProtocolError("the server did not exit within %.1f s" % timeout)

    def stderr_text(self):
        with self.cv:
            return "\n".join(self.stderr_lines)

    # ---- lifecycle helpers --------------------------------------------------

    def initialize(self, capabilities=None, **extra):
        params = {"processId": os.getpid(), "rootUri": None,
                  "capabilities": capabilities if capabilities is not None else {}}
        params.update(extra)
        return self.result("initialize", params)

    def start(self, capabilities=None, **extra):
        """initialize + initialized; returns the initialize result."""
        r = self.initialize(capabilities, **extra)
        self.notify("initialized", {})
        return r

    def shutdown_and_exit(self, timeout=DEFAULT_TIMEOUT):
        r = self.request("shutdown")
        if "error" in r or r.get("result", 0) is not None:
            raise ProtocolError("shutdown should return result null, got %r" % (r,))
        self.notify("exit")
        return self.wait_exit(timeout)

    def close(self):
        """Kills the process (if still running) and returns a list of
        problems: stdout violations, duplicate responses, sanitizer reports."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self._t_out.join(5)
        self._t_err.join(5)
        self.close_stdin()
        problems = list(self.violations)
        for k, lst in self.responses.items():
            if len(lst) > 1:
                problems.append("id %s answered %d times: %r" % (k, len(lst), lst))
        text = self.stderr_text()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                       "WARNING: ThreadSanitizer"):
            if marker in text:
                i = text.index(marker)
                problems.append("sanitizer report on stderr:\n" + text[max(0, i - 200):i + 3000])
        return problems


def key(id):
    return json.dumps(id, sort_keys=True)


def expect_error(resp, code, id=None, check_id=True):
    """Checks that resp is an error response with this code (and id)."""
    if "error" not in resp:
        raise ProtocolError("expected error %d, got %r" % (code, resp))
    if resp["error"].get("code") != code:
        raise ProtocolError("expected error code %d, got %r" % (code, resp))
    if check_id and resp.get("id", "missing") != id:
        raise ProtocolError("expected id %r in %r" % (id, resp))


def check(cond, what, *detail):
    if not cond:
        raise ProtocolError(what + ("" if not detail else ": " + " ".join(repr(d) for d in detail)))


def eq(got, want, what):
    if got != want:
        raise ProtocolError("%s: got %r, want %r" % (what, got, want))


# ---- position model -----------------------------------------------------------
# An independent Python model of the LSP position rules in the contract:
# lines end at \n or \r\n, and a lone \r is a character of its line (as
# Neovim and Emacs count it; lsp/position.c); `character` counts UTF-8 bytes,
# UTF-16 code units or code points; one past the end of a line that ends in
# \r\n is after the \r, further clamps to the line end (before its
# terminator), past the last line clamps to the end of the text; inside a
# character rounds down.

_EOL = re.compile(rb"\r?\n")


def line_starts(data):
    """Byte offsets of line starts in UTF-8 bytes `data`."""
    return [0] + [m.end() for m in _EOL.finditer(data)]


def line_end(data, start):
    """Offset of the terminator (or end of text) of the line at start."""
    m = _EOL.search(data, start)
    return m.start() if m else len(data)


def units(ch, enc):
    cp = ord(ch)
    if enc == "utf-8":
        return len(ch.encode("utf-8"))
    if enc == "utf-16":
        return 2 if cp > 0xFFFF else 1
    return 1


def offset_of(data, line, character, enc, starts=None):
    """(byte offset, clamped) for an LSP position in UTF-8 bytes `data`."""
    if starts is None:
        starts = line_starts(data)
    if line >= len(starts):
        return len(data), True
    s = starts[line]
    e = line_end(data, s)
    col = 0
    off = s
    for ch in data[s:e].decode("utf-8"):
        u = units(ch, enc)
        if character < col + u:
            return off, False  # at (or inside) this character: its start
        col += u
        off += len(ch.encode("utf-8"))
    if character == col + 1 and data[e:e + 2] == b"\r\n":
        return e + 1, False  # after the \r: where Neovim ends such a line
    return e, character > col


def inside_char(data, line, character, enc, starts=None):
    """True when the position points inside a multi-unit character (it then
    rounds down to the character's start)."""
    if starts is None:
        starts = line_starts(data)
    if line >= len(starts):
        return False
    s = starts[line]
    col = 0
    for ch in data[s:line_end(data, s)].decode("utf-8"):
        u = units(ch, enc)
        if character < col + u:
            return character > col
        col += u
    return False


def line_length(data, line, enc, starts=None):
    """Length of a line in units of enc (without its terminator)."""
    if starts is None:
        starts = line_starts(data)
    s = starts[line]
    return sum(units(ch, enc) for ch in data[s:line_end(data, s)].decode("utf-8"))


def apply_change(data, change, enc):
    """Applies one contentChanges entry to bytes `data`; returns new bytes."""
    new = change["text"].encode("utf-8")
    if "range" not in change:
        return new
    st = line_starts(data)
    r = change["range"]
    a, _ = offset_of(data, r["start"]["line"], r["start"]["character"], enc, st)
    b, _ = offset_of(data, r["end"]["line"], r["end"]["character"], enc, st)
    return data[:a] + new + data[b:]


def rng(l1, c1, l2, c2):
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


# ---- test models --------------------------------------------------------------

def apply_edit(text, edit):
    """text with one LSP TextEdit applied (ASCII positions: UTF-16 units
    are characters)."""
    lines = text.split("\n")

    def off(p):
        return sum(len(l) + 1 for l in lines[:p["line"]]) + p["character"]
    r = edit["range"]
    return text[:off(r["start"])] + edit["newText"] + text[off(r["end"]):]


def python_parses(text):
    """Python's own judgement: text compiles (never run)."""
    try:
        compile(text, "<fixture>", "exec")
        return True
    except SyntaxError:
        return False


def gcc_errors(text, folder=None):
    """How many errors `gcc -fsyntax-only` finds in C text (its includes
    searched in folder, as for a file compiled in place)."""
    inc = ["-iquote", folder, "-I", folder] if folder else []
    p = subprocess.run(["gcc", "-fsyntax-only", "-w", "-x", "c"] + inc + ["-"],
                       input=text.encode(), capture_output=True)
    return p.stderr.decode().count("error:")


def planted_model(name="planted-successor-shifted-bytes"):
    """The path of a planted checkpoint (tools/planted_checkpoints.py: after
    "...abc" it writes "defghijklmnopqrstuvwxyz"), made in a temporary
    folder the first time a test script asks."""
    global _planted_dir
    if _planted_dir is None:
        src = os.environ.get("SCULPT_SOURCE_DIR",
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
        _planted_dir = tempfile.mkdtemp(prefix="sculpt-planted-")
        atexit.register(shutil.rmtree, _planted_dir, True)
        subprocess.run(["/usr/bin/python3", os.path.join(src, "tools", "planted_checkpoints.py"),
                        _planted_dir], check=True, capture_output=True)
    return os.path.join(_planted_dir, name)


_planted_dir = None


# ---- a tiny test runner -------------------------------------------------------

def run_tests(tests):
    """Runs each test function (no arguments; it starts servers with spawn()).
    After each test every server it spawned is killed and checked (stdout
    violations, duplicate answers, sanitizer reports). Prints one line per
    test, with the failure and the server's stderr tail; exits 0 when all
    pass, else 1."""
    failed = 0
    for fn in tests:
        t0 = time.monotonic()
        _live.clear()
        err = None
        try:
            fn()
        except Exception:  # noqa: BLE001 - report every failure the same way
            err = traceback.format_exc()
        problems = []
        for s in list(_live):
            for p in s.close():
                problems.append(p)
        _live.clear()
        dt = time.monotonic() - t0
        if err or problems:
            failed += 1
            print("FAIL %s (%.2f s)" % (fn.__name__, dt))
            if err:
                print(err.rstrip())
            for p in problems:
                print("  problem: %s" % p)
            for s in _last:
                tail = s.stderr_lines[-30:]
                if tail:
                    print("  server stderr (last %d lines):" % len(tail))
                    for line in tail:
                        print("    " + line)
        else:
            print("ok   %s (%.2f s)" % (fn.__name__, dt))
        _last.clear()
        sys.stdout.flush()
    if failed:
        print("%d of %d tests failed" % (failed, len(tests)))
        sys.exit(1)
    print("all %d tests passed" % len(tests))
    sys.exit(0)


_live = []
_last = []


def spawn(*args, **kw):
    """Starts a server that run_tests() closes (and checks) after the test."""
    s = Server(*args, **kw)
    _live.append(s)
    _last.append(s)
    return s


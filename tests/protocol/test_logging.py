"""Logging and configuration: the window/logMessage level (MessageType 1
error, 2 warning, 3 info, 4 log) set by initializationOptions.logLevel, by
initialize's trace (off->warn, messages->info, verbose->debug), by
$/setTrace, by the workspace/configuration round trip and by
workspace/didChangeConfiguration. stdout stays pure protocol, logs go to
stderr one line each (LSP 3.17 "window/logMessage", "$/setTrace",
"workspace/configuration", "workspace/didChangeConfiguration").

The method: a fixed burst of events that make the server log at several
levels (an oversized message is an error by contract; invalid notification
params, clamped ranges, unknown notifications, didSave are logged at levels
the server chooses). The burst's window/logMessage types are counted. A level
L must only filter: count[t] is 0 for t > L and equals the debug run's
count[t] for t <= L. So the test does not depend on which level the server
picked for each event, only on the filter."""

import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, frame, run_tests, spawn  # noqa: E402

LIMIT = 2048  # --max-message-size for these tests
LEVELS = {"error": 1, "warn": 2, "info": 3, "debug": 4}
URI = "file:///log.txt"


def burst(s):
    """Sends the event burst; returns Counter of logMessage types it caused."""
    # Logs of earlier messages are flushed after the answers of the same
    # read, so two round trips first put them all before the window.
    s.sync()
    s.sync()
    with s.cv:
        mark = len(s.messages)
    n = s.next_id
    s.next_id += 1
    msgs = [
        frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": URI, "languageId": "plaintext", "version": 1, "text": "ab\ncd\n"}}}),
        frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 50},
                                          "end": {"line": 40, "character": 0}},
                                "text": "X"}]}}),
        frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": "file:///bad.txt", "version": 1}}}),
        frame({"jsonrpc": "2.0", "method": "custom/unknownNotification", "params": {}}),
        frame({"jsonrpc": "2.0", "method": "textDocument/didSave",
               "params": {"textDocument": {"uri": URI}}}),
        frame({"jsonrpc": "2.0", "id": n, "method": "sculpt/test/stats",
               "params": {"pad": "z" * (2 * LIMIT)}}),   # oversized: an error
        frame({"jsonrpc": "2.0", "method": "textDocument/didClose",
               "params": {"textDocument": {"uri": "file:///never-opened.txt"}}}),
        frame({"jsonrpc": "2.0", "method": "textDocument/didClose",
               "params": {"textDocument": {"uri": URI}}}),
    ]
    s.send_raw(b"".join(msgs))
    s.sync()
    # Logs may be flushed after the responses of the same read; a second
    # round trip, sent after the first answer came, bounds them all.
    end = s.sync()
    check(s.responses.get(str(n)) is None, "the oversized request was answered")
    counts = Counter()
    with s.cv:
        window = s.messages[mark:end]
    for m in window:
        if m.get("method") == "window/logMessage":
            p = m.get("params", {})
            check(isinstance(p.get("type"), int) and isinstance(p.get("message"), str),
                  "logMessage params", m)
            counts[p["type"]] += 1
    return counts


def model_settled(s):
    # The model loads in the background after initialized and logs when it
    # is done (or failed); waiting for that keeps it out of the bursts.
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] in ("ready", "error"), what="the model load")


def server(init_options=None, trace=None, caps=None, stderr_level=None):
    s = spawn(["--max-message-size", str(LIMIT)], log_level=stderr_level)
    extra = {}
    if init_options is not None:
        extra["initializationOptions"] = init_options
    if trace is not None:
        extra["trace"] = trace
    s.start(caps or {}, **extra)
    model_settled(s)
    return s


def check_level(counts, level, reference, what):
    """counts must be reference filtered at level."""
    want = Counter({t: c for t, c in reference.items() if t <= LEVELS[level]})
    eq(dict(counts), dict(want), "logMessage types per MessageType for %s (level %s)"
       % (what, level))


_reference = []


def reference():
    """The burst at debug level: every event's log line."""
    if not _reference:
        s = server({"logLevel": "debug"})
        c = burst(s)
        check(c[1] >= 1, "the oversized message logs an error", dict(c))
        check(c[4] >= 1, "debug level shows MessageType 4 (log) lines", dict(c))
        check(sum(c.values()) >= 4, "the burst logs several lines at debug", dict(c))
        # Deterministic: the same burst again gives the same counts.
        eq(dict(burst(s)), dict(c), "a second burst at debug")
        eq(s.shutdown_and_exit(), 0, "exit code")
        _reference.append(c)
    return _reference[0]


def test_initialization_options_level():
    ref = reference()
    for level in ("error", "warn", "info", "debug"):
        s = server({"logLevel": level})
        check_level(burst(s), level, ref, "initializationOptions.logLevel")
        eq(s.shutdown_and_exit(), 0, "exit code")


def test_trace_level_and_default():
    ref = reference()
    for trace, level in (("off", "warn"), ("messages", "info"), ("verbose", "debug")):
        s = server(trace=trace)
        check_level(burst(s), level, ref, "trace %s" % trace)
        eq(s.shutdown_and_exit(), 0, "exit code")
    s = server()
    check_level(burst(s), "warn", ref, "no trace and no options")
    eq(s.shutdown_and_exit(), 0, "exit code")
    # initializationOptions win over trace.
    s = server({"logLevel": "error"}, trace="verbose")
    check_level(burst(s), "error", ref, "logLevel error with trace verbose")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_set_trace():
    ref = reference()
    s = server({"logLevel": "error"})
    check_level(burst(s), "error", ref, "before $/setTrace")
    s.notify("$/setTrace", {"value": "verbose"})
    check_level(burst(s), "debug", ref, "$/setTrace verbose")
    s.notify("$/setTrace", {"value": "messages"})
    check_level(burst(s), "info", ref, "$/setTrace messages")
    s.notify("$/setTrace", {"value": "off"})
    check_level(burst(s), "warn", ref, "$/setTrace off")
    eq(s.shutdown_and_exit(), 0, "exit code")


def config_request(s, start):
    return s.wait_message(lambda m: m.get("method") == "workspace/configuration",
                          what="a workspace/configuration request", start=start)


def test_workspace_configuration_round_trip():
    ref = reference()
    s = spawn(["--max-message-size", str(LIMIT)])
    s.initialize({"workspace": {"configuration": True}},
                 initializationOptions={"logLevel": "error"})
    s.sync()
    with s.cv:
        mark = len(s.messages)
    check(not any(m.get("method") == "workspace/configuration" for m in s.messages),
          "workspace/configuration must wait for initialized")
    s.notify("initialized", {})
    req = config_request(s, mark)
    check("id" in req, "workspace/configuration is a request", req)
    eq(req.get("params"), {"items": [{"section": "sculpt"}]}, "workspace/configuration params")
    model_settled(s)
    check_level(burst(s), "error", ref, "before the configuration answer")
    s.respond(req["id"], [{"logLevel": "debug"}])
    check_level(burst(s), "debug", ref, "after workspace/configuration logLevel debug")
    eq(s.shutdown_and_exit(), 0, "exit code")
    # An error answer leaves the level alone and the server keeps working.
    s = spawn(["--max-message-size", str(LIMIT)])
    s.start({"workspace": {"configuration": True}}, initializationOptions={"logLevel": "info"})
    req = config_request(s, 0)
    model_settled(s)
    s.send({"jsonrpc": "2.0", "id": req["id"],
            "error": {"code": -32601, "message": "no configuration here"}})
    check_level(burst(s), "info", ref, "after an error answer to workspace/configuration")
    eq(s.shutdown_and_exit(), 0, "exit code")
    # A null section (no settings) leaves it alone too.
    s = spawn(["--max-message-size", str(LIMIT)])
    s.start({"workspace": {"configuration": True}}, initializationOptions={"logLevel": "warn"})
    req = config_request(s, 0)
    model_settled(s)
    s.respond(req["id"], [None])
    check_level(burst(s), "warn", ref, "after a null configuration")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_no_configuration_request_without_capability():
    s = server({"logLevel": "warn"}, caps={"workspace": {"configuration": False}})
    s.sync()
    s.sync()
    check(not s.requests_from_server, "server requests without the capability",
          s.requests_from_server)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_did_change_configuration():
    ref = reference()
    s = server({"logLevel": "error"})
    for level in ("debug", "warn", "info", "error"):
        s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"logLevel": level}}})
        check_level(burst(s), level, ref, "didChangeConfiguration %s" % level)
    # An unknown value or other sections do not change the level.
    s.notify("workspace/didChangeConfiguration", {"settings": {"sculpt": {"logLevel": "loud"}}})
    s.notify("workspace/didChangeConfiguration", {"settings": {"other": {"logLevel": "debug"}}})
    check_level(burst(s), "error", ref, "after an invalid logLevel")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_stderr_lines():
    # Logs go to stderr, one line each, even at debug with the client at
    # error; the client level does not silence stderr.
    s = server({"logLevel": "error"}, stderr_level="debug")
    with s.cv:
        before = len(s.stderr_lines)
    burst(s)
    eq(s.shutdown_and_exit(), 0, "exit code")
    s.close()
    lines = s.stderr_lines[before:]
    check(len(lines) >= 4, "stderr lines for the burst at --log-level debug", lines)
    check(all(line.strip() for line in lines), "empty stderr lines", lines)
    check(any("error" in line.lower() for line in lines), "an error line for the oversize", lines)


if __name__ == "__main__":
    run_tests([test_initialization_options_level, test_trace_level_and_default, test_set_trace,
               test_workspace_configuration_round_trip,
               test_no_configuration_request_without_capability,
               test_did_change_configuration, test_stderr_lines])

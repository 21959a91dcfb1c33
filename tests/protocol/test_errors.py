"""JSON-RPC 2.0 / LSP error codes with exact codes and ids: -32700, -32600
(batches, non-objects, bad jsonrpc/method/id), -32601 (requests only;
unknown and $/ notifications are ignored), -32602, -32002, -32800, -32801.
After every kind of error the server must still answer.
Codes: https://www.jsonrpc.org/specification#error_object and LSP 3.17
"ErrorCodes"/"LSPErrorCodes"."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import (CONTENT_MODIFIED, INVALID_PARAMS, INVALID_REQUEST,  # noqa: E402
                       METHOD_NOT_FOUND, PARSE_ERROR, REQUEST_CANCELLED, check, eq,
                       expect_error, frame, run_tests, spawn)

URI = "file:///errors.txt"


def responses_between(s, start, end):
    """Responses (not notifications or server requests) in messages[start:end]."""
    with s.cv:
        return [m for m in s.messages[start:end] if "method" not in m]


def started(**kw):
    s = spawn(**kw)
    s.start()
    return s


def test_parse_errors():
    s = started()
    bodies = [
        b'{"jsonrpc":"2.0","id":9001,',                       # truncated
        b'{"jsonrpc":"2.0","id":9002,"method":"sculpt/test/stats" "params":{}}',  # no comma
        b'{"jsonrpc":"2.0","id":9003,"method":"sculpt/test/stats","params":{"s":"\xff"}}',
        b'{"jsonrpc":"2.0","id":9004,"method":"sculpt/test/stats","params":{"s":"\xc3"}}',
        b'{"jsonrpc":"2.0","id":9005,"method":"sculpt/test/stats","params":{"s":"\xed\xa0\x80"}}',
        b'',                                                # empty body
        b'nonsense',
    ]
    for n, body in enumerate(bodies, 1):
        mark = len(s.messages)
        s.send_raw(frame(body))
        got = s.wait_null_responses(n)
        expect_error(got[n - 1], PARSE_ERROR, None)
        end = s.sync()
        # Exactly one answer (id null), and none for the id inside the bad JSON.
        eq(len(responses_between(s, mark, end)), 1, "responses to %r" % body)
    for i in range(9001, 9006):
        check(str(i) not in s.responses, "no response for id %d" % i, "inside invalid JSON")
    eq(s.shutdown_and_exit(), 0, "exit code after parse errors")


def test_invalid_requests_without_id():
    s = started()
    bodies = [
        b'[{"jsonrpc":"2.0","id":901,"method":"sculpt/test/stats","params":{}}]',  # batch
        b'[]',
        b'[{"jsonrpc":"2.0","method":"initialized","params":{}}, 1]',
        b'42',
        b'"a string"',
        b'null',
        b'true',
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"sculpt/test/stats","params":{}}',
        b'{"jsonrpc":"2.0","id":[1],"method":"sculpt/test/stats","params":{}}',
        b'{"jsonrpc":"2.0","id":true,"method":"sculpt/test/stats","params":{}}',
    ]
    for n, body in enumerate(bodies, 1):
        mark = len(s.messages)
        s.send_raw(frame(body))
        got = s.wait_null_responses(n)
        r = got[n - 1]
        try:
            expect_error(r, INVALID_REQUEST, None)
        except AssertionError as ex:
            raise AssertionError("for %r: %s" % (body, ex))
        end = s.sync()
        eq(len(responses_between(s, mark, end)), 1, "responses to %r" % body)
    check(s.responses.get("901") is None, "the request inside a batch must not run")
    eq(s.shutdown_and_exit(), 0, "exit code after invalid requests")


def test_invalid_requests_with_id():
    s = started()
    cases = [
        (10, {"id": 10, "method": "sculpt/test/stats", "params": {}}),             # no jsonrpc
        (11, {"jsonrpc": "1.0", "id": 11, "method": "sculpt/test/stats", "params": {}}),
        (12, {"jsonrpc": 2.0, "id": 12, "method": "sculpt/test/stats", "params": {}}),
        (13, {"jsonrpc": "2.0", "id": 13, "method": 42, "params": {}}),
        (14, {"jsonrpc": "2.0", "id": 14, "method": None, "params": {}}),
        ("s15", {"jsonrpc": "2.0", "id": "s15", "method": ["x"], "params": {}}),
    ]
    for id, msg in cases:
        s.send(msg)
        try:
            expect_error(s.wait_response(id), INVALID_REQUEST, id)
        except AssertionError as ex:
            raise AssertionError("for %r: %s" % (msg, ex))
    check(not s.null_responses, "no id-null responses expected here", s.null_responses)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_method_not_found():
    s = started()
    for method in ("sculpt/noSuchMethod", "textDocument/noSuchThing", "$/noSuchRequest"):
        i = s.send_request(method, {})
        expect_error(s.wait_response(i), METHOD_NOT_FOUND, i)
    i = s.send_request("no/params")  # no params member at all
    expect_error(s.wait_response(i), METHOD_NOT_FOUND, i)
    # Unknown notifications, $/ notifications and a response to a request
    # the server never sent: no answer at all.
    mark = len(s.messages)
    s.notify("custom/unknownNotification", {"x": 1})
    s.notify("$/progress", {"token": 1, "value": {"kind": "end"}})
    s.notify("$/somethingNew", {})
    s.send({"jsonrpc": "2.0", "id": 424242, "result": None})
    end = s.sync()
    eq(responses_between(s, mark, end), [], "answers to notifications")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_method_not_found_without_hooks():
    # The test methods exist only with SCULPT_TEST_HOOKS=1.
    s = spawn(hooks=False)
    s.start()
    for method, params in (("sculpt/test/stats", {}),
                           ("sculpt/test/document", {"textDocument": {"uri": URI}}),
                           ("sculpt/test/sleep", {"ms": 1})):
        i = s.send_request(method, params)
        expect_error(s.wait_response(i), METHOD_NOT_FOUND, i)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_invalid_params():
    s = started()
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "plaintext", "version": 1, "text": "hello\n"}})
    bad = [
        ("sculpt/test/document", None),
        ("sculpt/test/document", {}),
        ("sculpt/test/document", []),
        ("sculpt/test/document", {"textDocument": 5}),
        ("sculpt/test/document", {"textDocument": {}}),
        ("sculpt/test/document", {"textDocument": {"uri": 7}}),
        ("sculpt/test/document", {"textDocument": {"uri": "file:///not-open.txt"}}),
        ("sculpt/test/offset", {"textDocument": {"uri": URI}}),
        ("sculpt/test/offset", {"textDocument": {"uri": URI}, "position": {"line": 0}}),
        ("sculpt/test/offset", {"textDocument": {"uri": URI},
                                "position": {"line": "0", "character": 0}}),
        ("sculpt/test/offset", {"textDocument": {"uri": "file:///not-open.txt"},
                                "position": {"line": 0, "character": 0}}),
        ("sculpt/test/sleep", {}),
        ("sculpt/test/sleep", {"ms": "10"}),
        ("sculpt/test/sleep", {"ms": 1, "textDocument": {"uri": 3}}),
    ]
    for method, params in bad:
        i = s.send_request(method, params)
        try:
            expect_error(s.wait_response(i), INVALID_PARAMS, i)
        except AssertionError as ex:
            raise AssertionError("%s %r: %s" % (method, params, ex))
    # The open document is untouched and valid requests still work.
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": URI}})
    eq(doc.get("text"), "hello\n", "text after invalid requests")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_invalid_notifications_are_logged():
    s = started(log_level="warn")
    s.sync()
    cases = [
        ("textDocument/didOpen", {"textDocument": {"uri": "file:///b.txt",
                                                   "languageId": "plaintext", "version": 1}}),
        ("textDocument/didOpen", {"textDocument": {"uri": 5, "languageId": "plaintext",
                                                   "version": 1, "text": ""}}),
        ("textDocument/didChange", {"textDocument": {"uri": "file:///b.txt", "version": 2}}),
        ("textDocument/didClose", {}),
    ]
    # At --log-level warn nothing else is logged here, so each invalid
    # notification (a warning at least) must add a line.
    with s.cv:
        before = len(s.stderr_lines)
    for method, params in cases:
        mark = len(s.messages)
        s.notify(method, params)
        end = s.sync()
        eq(responses_between(s, mark, end), [], "answers to bad %s" % method)
    s.wait_for(lambda: len(s.stderr_lines) >= before + len(cases), 10,
               "%d stderr log lines for %d invalid notifications" % (len(cases), len(cases)))
    stats = s.result("sculpt/test/stats", {})
    eq(stats.get("openDocuments"), 0, "documents opened by invalid didOpen")
    i = s.send_request("sculpt/test/document", {"textDocument": {"uri": "file:///b.txt"}})
    expect_error(s.wait_response(i), INVALID_PARAMS, i)
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_cancelled_and_content_modified():
    s = started()
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "plaintext", "version": 1, "text": "abc"}})
    i = s.send_request("sculpt/test/sleep", {"ms": 5000})
    time.sleep(0.1)
    s.notify("$/cancelRequest", {"id": i})
    expect_error(s.wait_response(i, 4), REQUEST_CANCELLED, i)
    j = s.send_request("sculpt/test/sleep", {"ms": 5000, "textDocument": {"uri": URI}},
                       id="str-id")
    time.sleep(0.1)
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                        "contentChanges": [{"text": "abcd"}]})
    expect_error(s.wait_response(j, 4), CONTENT_MODIFIED, "str-id")
    # Cancelling an id that is unknown or already answered is harmless.
    s.notify("$/cancelRequest", {"id": i})
    s.notify("$/cancelRequest", {"id": 987654})
    eq(s.result("sculpt/test/sleep", {"ms": 1}), {"sleptMs": 1}, "a later sleep")
    eq(s.shutdown_and_exit(), 0, "exit code")


if __name__ == "__main__":
    run_tests([test_parse_errors, test_invalid_requests_without_id,
               test_invalid_requests_with_id, test_method_not_found,
               test_method_not_found_without_hooks, test_invalid_params,
               test_invalid_notifications_are_logged, test_cancelled_and_content_modified])

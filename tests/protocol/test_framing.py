"""Framing (LSP 3.17 "Base Protocol": header part, content part): messages
split byte by byte, many in one write, a Content-Type header, garbage between
messages, messages over --max-message-size, a large message under the limit.
The client library fails the test if stdout holds anything but frames."""

import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, frame, run_tests, spawn  # noqa: E402


def req(id, method="sculpt/test/stats", params=None):
    return {"jsonrpc": "2.0", "id": id, "method": method,
            "params": {} if params is None else params}


def errors_in(lines):
    """stderr lines at error level (the level's name is in each log line)."""
    return [x for x in lines if re.search(r"\berror\b", x, re.I)]


def started(*a, **kw):
    s = spawn(*a, **kw)
    s.start()
    return s


def test_byte_by_byte():
    s = spawn()
    data = frame({"jsonrpc": "2.0", "id": 1001, "method": "initialize",
                  "params": {"processId": None, "rootUri": None, "capabilities": {},
                             "clientInfo": {"name": "byte-by-byte \u00e9\u4e2d\U0001F600"}}})
    for k in range(len(data)):
        s.send_raw(data[k:k + 1])
        if k % 8 == 0:
            time.sleep(0.001)  # let the server see separate reads
    r = s.wait_response(1001)
    check("result" in r and "capabilities" in r["result"], "initialize result", r)
    s.notify("initialized", {})
    # A request whose header and body are split at every boundary kind.
    data = frame(req(1002))
    parts = [data[:5], data[5:16], data[16:17], data[17:-1], data[-1:]]
    for p in parts:
        s.send_raw(p)
        time.sleep(0.02)
    check("result" in s.wait_response(1002), "stats answered after a split write")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_many_in_one_write():
    s = started()
    ids = list(range(100, 110))
    s.send_raw(b"".join(frame(req(i)) for i in ids))
    for i in ids:
        check("result" in s.wait_response(i), "response %d" % i)
    # Answers to in-order loop requests come in order.
    with s.cv:
        order = [m["id"] for m in s.messages if m.get("id") in ids]
    eq(order, ids, "order of the ten responses")
    # Notifications and requests mixed in one write, plus the tail of one
    # message and the head of the next in a second write.
    text = "one\ntwo\n"
    blob = (frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": "file:///m.txt", "languageId": "plaintext", "version": 1,
                         "text": text}}})
        + frame(req(200, "sculpt/test/document", {"textDocument": {"uri": "file:///m.txt"}}))
        + frame(req(201)))
    s.send_raw(blob[:-7])
    time.sleep(0.05)
    s.send_raw(blob[-7:])
    eq(s.wait_response(200)["result"]["text"], text, "document from a combined write")
    check("result" in s.wait_response(201), "the last request of a combined write")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_content_type_header():
    s = started()
    body = b'{"jsonrpc":"2.0","id":7,"method":"sculpt/test/stats","params":{}}'
    s.send_raw(b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; "
               b"charset=utf-8\r\n\r\n" % len(body) + body)
    check("result" in s.wait_response(7), "answer with Content-Type")
    s.send_raw(b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; "
               b"charset=utf8\r\n\r\n" % len(body.replace(b"7", b"8"))
               + body.replace(b"7", b"8"))
    check("result" in s.wait_response(8), "answer with charset=utf8")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_garbage_between_messages():
    s = started()
    rnd = random.Random(1234)
    junk = [
        bytes(rnd.randrange(256) for _ in range(300)),
        b"Content-Len",                          # a partial header
        b"Content-Length: abc\r\n\r\n",          # a non-numeric length
        b"Content-Length: \r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Type: text/plain\r\n\r\n",     # no length at all
        b"\r\n\r\n\r\n",
        b"hello world\n",
        b"Content",
        bytes(rnd.randrange(256) for _ in range(1000)) + b"\x00\xff\r\n",
    ]
    id = 300
    for j in junk:
        s.send_raw(j)
        time.sleep(0.01)
        s.send_raw(frame(req(id)))
        r = s.wait_response(id)
        check("result" in r, "request after garbage %r answered" % j[:40], r)
        id += 1
    # Garbage and a request in the same write.
    s.send_raw(b"\x01\x02garbage\r\n" + frame(req(id)) + b"more junk" + frame(req(id + 1)))
    check("result" in s.wait_response(id), "request right after garbage")
    check("result" in s.wait_response(id + 1), "request between garbage")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_oversized_message():
    limit = 4096
    s = started(["--max-message-size", str(limit)])
    big = {"jsonrpc": "2.0", "id": 500, "method": "sculpt/test/stats",
           "params": {"pad": "x" * (limit * 4)}}
    s.sync()
    with s.cv:
        n_err = len(s.stderr_lines)
    check(not errors_in(s.stderr_lines[:n_err]), "error lines before the test",
          s.stderr_lines[:n_err])
    s.send(big)
    s.send_request("sculpt/test/stats", {}, id=501)
    check("result" in s.wait_response(501), "request after an oversized one")
    check(s.responses.get("500") is None, "no answer to the oversized message")
    # The contract: "skipped with an error logged on stderr".
    s.wait_for(lambda: errors_in(s.stderr_lines[n_err:]), 10,
               "an error line on stderr for the oversized message")
    # Oversized, split into pieces, then a message in the same write as its tail.
    data = frame(dict(big, id=502))
    s.send_raw(data[:100])
    time.sleep(0.02)
    s.send_raw(data[100:9000])
    time.sleep(0.02)
    s.send_raw(data[9000:] + frame(req(503)))
    check("result" in s.wait_response(503), "request after a split oversized one")
    check(s.responses.get("502") is None, "no answer to the split oversized message")
    # A message exactly at the limit is accepted.
    body = b'{"jsonrpc":"2.0","id":504,"method":"sculpt/test/stats","params":{"p":"'
    tail = b'"}}'
    exact = body + b"y" * (limit - len(body) - len(tail)) + tail
    eq(len(exact), limit, "exact-size body length")
    s.send_raw(frame(exact))
    check("result" in s.wait_response(504), "a message of exactly the limit")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_large_message_under_default_limit():
    s = started()
    text = "".join("line %d \u00e9\u4e2d\U0001F600\n" % i for i in range(60000))  # ~1.5 MB
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": "file:///big.txt", "languageId": "plaintext", "version": 1, "text": text}})
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": "file:///big.txt"}},
                   timeout=30)
    eq(len(doc["text"]), len(text), "length of a large document")
    check(doc["text"] == text, "large document text round trip")
    eq(s.shutdown_and_exit(), 0, "exit code")


if __name__ == "__main__":
    run_tests([test_byte_by_byte, test_many_in_one_write, test_content_type_header,
               test_garbage_between_messages, test_oversized_message,
               test_large_message_under_default_limit])

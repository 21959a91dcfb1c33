"""Lifecycle: initialize / initialized / shutdown / exit, exit codes, EOF,
a second initialize, requests before initialize and after shutdown,
serverInfo, and positionEncoding negotiation (LSP 3.17 "Lifecycle Messages",
"positionEncoding" in "General Client Capabilities")."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import (INVALID_REQUEST, SERVER_NOT_INITIALIZED, check, eq,  # noqa: E402
                       expect_error, run_tests, sculpt_bin, spawn)


def version_from_cli():
    out = subprocess.run([sculpt_bin(), "--version"], capture_output=True, text=True,
                         timeout=30)
    eq(out.returncode, 0, "sculpt --version exit code")
    # The first line is "sculpt X.Y.Z"; later lines (backends) may follow.
    m = re.fullmatch(r"sculpt (\S+)", out.stdout.split("\n", 1)[0])
    check(m is not None, "sculpt --version output", out.stdout)
    return m.group(1)


def test_initialize_result():
    s = spawn()
    r = s.initialize()
    caps = r.get("capabilities")
    check(isinstance(caps, dict), "capabilities object", r)
    eq(caps.get("positionEncoding"), "utf-16", "default positionEncoding")
    eq(caps.get("textDocumentSync"),
       {"openClose": True, "change": 2, "save": {"includeText": False}}, "textDocumentSync")
    info = r.get("serverInfo")
    check(isinstance(info, dict), "serverInfo object", r)
    eq(info.get("name"), "sculpt", "serverInfo.name")
    check(re.fullmatch(r"\d+\.\d+\.\d+", str(info.get("version"))) is not None,
          "serverInfo.version is x.y.z", info)
    eq(info.get("version"), version_from_cli(), "serverInfo.version vs sculpt --version")
    s.notify("initialized", {})
    eq(s.shutdown_and_exit(), 0, "exit code after shutdown+exit")


def test_flags_accepted():
    # --stdio, --log-level, --max-message-size are all accepted.
    s = spawn(["--stdio", "--max-message-size", "100000"], log_level="debug")
    s.start()
    eq(s.shutdown_and_exit(), 0, "exit code with flags")


def test_exit_without_shutdown():
    s = spawn()
    s.start()
    s.notify("exit")
    eq(s.wait_exit(), 1, "exit code of exit without shutdown")


def test_exit_before_initialize():
    s = spawn()
    s.notify("exit")
    eq(s.wait_exit(), 1, "exit code of exit before initialize")


def test_eof_without_shutdown():
    s = spawn()
    s.start()
    s.sync()
    s.close_stdin()
    eq(s.wait_exit(), 1, "exit code at EOF without shutdown")


def test_eof_before_initialize():
    s = spawn()
    s.close_stdin()
    eq(s.wait_exit(), 1, "exit code at EOF before initialize")


def test_eof_after_shutdown():
    s = spawn()
    s.start()
    r = s.request("shutdown")
    eq(r.get("result", "missing"), None, "shutdown result")
    s.close_stdin()
    eq(s.wait_exit(), 0, "exit code at EOF after shutdown")


def test_second_initialize():
    s = spawn()
    s.initialize()
    i = s.send_request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    expect_error(s.wait_response(i), INVALID_REQUEST, i)
    s.notify("initialized", {})
    # Still serving.
    s.sync()
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_requests_before_initialize():
    s = spawn()
    for method, params in (("sculpt/test/stats", {}), ("shutdown", None),
                           ("textDocument/hover", {"textDocument": {"uri": "file:///x"},
                                                   "position": {"line": 0, "character": 0}})):
        i = s.send_request(method, params)
        expect_error(s.wait_response(i), SERVER_NOT_INITIALIZED, i)
    # A string id is echoed as a string.
    i = s.send_request("sculpt/test/stats", {}, id="before-init")
    expect_error(s.wait_response(i), SERVER_NOT_INITIALIZED, "before-init")
    # Notifications before initialize are ignored: this didOpen must not open.
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": "file:///early.txt", "languageId": "plaintext", "version": 1, "text": "x"}})
    s.start()
    stats = s.result("sculpt/test/stats", {})
    eq(stats.get("openDocuments"), 0, "documents opened by a notification before initialize")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_requests_after_shutdown():
    s = spawn()
    s.start()
    eq(s.request("shutdown").get("result", "missing"), None, "shutdown result")
    for method, params in (("sculpt/test/stats", {}), ("shutdown", None),
                           ("initialize", {"processId": None, "rootUri": None,
                                           "capabilities": {}}),
                           ("no/such/method", {})):
        i = s.send_request(method, params)
        expect_error(s.wait_response(i), INVALID_REQUEST, i)
    s.notify("exit")
    eq(s.wait_exit(), 0, "exit code after shutdown")


def test_initialized_then_work_then_exit():
    # A full session with a document keeps exit code 0.
    s = spawn()
    s.start()
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": "file:///a.c", "languageId": "c", "version": 1, "text": "int x;\n"}})
    doc = s.result("sculpt/test/document", {"textDocument": {"uri": "file:///a.c"}})
    eq(doc.get("text"), "int x;\n", "document text")
    eq(s.shutdown_and_exit(), 0, "exit code")


def negotiate(offered):
    s = spawn()
    caps = {} if offered is None else {"general": {"positionEncodings": offered}}
    r = s.start(caps)
    enc = r["capabilities"].get("positionEncoding")
    s.shutdown_and_exit()
    return enc


def test_position_encoding_negotiation():
    eq(negotiate(None), "utf-16", "no positionEncodings offered")
    eq(negotiate([]), "utf-16", "empty positionEncodings")
    eq(negotiate(["utf-16"]), "utf-16", "only utf-16 offered")
    eq(negotiate(["utf-32", "utf-8"]), "utf-8", "utf-8 preferred over utf-32")
    eq(negotiate(["utf-8", "utf-32", "utf-16"]), "utf-8", "utf-8 offered first")
    eq(negotiate(["utf-16", "utf-32"]), "utf-32", "utf-32 without utf-8")
    eq(negotiate(["utf-32"]), "utf-32", "only utf-32 offered")


if __name__ == "__main__":
    run_tests([test_initialize_result, test_flags_accepted, test_exit_without_shutdown,
               test_exit_before_initialize, test_eof_without_shutdown,
               test_eof_before_initialize, test_eof_after_shutdown, test_second_initialize,
               test_requests_before_initialize, test_requests_after_shutdown,
               test_initialized_then_work_then_exit, test_position_encoding_negotiation])

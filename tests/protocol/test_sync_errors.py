"""An incremental change that cannot apply (issue 22). A reversed range used
to be swapped, deleting text the client never meant to touch; a line past
the end was clamped to the end of the text. Now such a change is refused:
the document keeps its text, is marked out of sync (sculpt/test/document's
"synced"), one error is logged (window/logMessage), the incremental changes
after it are not applied (they would edit the wrong text), and completions
and code actions in it answer with the reason, until the client sends the
full text (a change without a range) or reopens the document.

Still accepted: a character past the end of its line (LSP 3.17 "Position":
it defaults back to the line's length), and the line just after the last
one at character 0, which is the end of the text as clients write it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import check, eq, planted_model, rng, run_tests, spawn  # noqa: E402

MODEL = planted_model()
URI = "file:///w/sync.c"
TEXT = "int a;\nint b;\nint abc;\n"  # three lines and an empty fourth
REQUEST_FAILED = -32803


def start():
    s = spawn()
    s.start({}, initializationOptions={"modelPath": MODEL, "lengthCandidates": 4})
    s.wait_message(lambda m: m.get("method") == "sculpt/status" and
                   m["params"]["state"] == "ready", what="model ready")
    s.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "c",
                                                       "version": 1, "text": TEXT}})
    return s


def change(s, version, *changes):
    s.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version},
                                        "contentChanges": list(changes)})


def doc(s):
    return s.result("sculpt/test/document", {"textDocument": {"uri": URI}})


def sync_errors(s):
    """window/logMessage errors (type 1) about this document's sync so far."""
    s.sync()
    s.sync()  # logs of a read are flushed after its answers
    with s.cv:
        return [m["params"]["message"] for m in s.messages
                if m.get("method") == "window/logMessage" and m["params"]["type"] == 1 and
                "out of sync" in m["params"]["message"]]


def inline(s, trigger):
    return s.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 2, "character": 7},
        "context": {"triggerKind": trigger}}, 30)


def check_refused(s):
    """Completions and code actions say why nothing is offered."""
    r = inline(s, 1)
    check("error" in r and r["error"]["code"] == REQUEST_FAILED and
          "out of sync" in r["error"]["message"], "an explicit completion is refused", r)
    r = inline(s, 2)
    eq(r["result"]["items"], [], "an automatic completion: no items")
    eq(r["result"]["data"]["skipped"], "out of sync", "an automatic completion: the reason")
    r = s.result("textDocument/codeAction", {"textDocument": {"uri": URI},
                                             "range": rng(2, 0, 2, 7),
                                             "context": {"diagnostics": []}})
    eq(r, [], "code actions")


def test_reversed_range_unsyncs_until_full_text():
    s = start()
    change(s, 2, {"range": rng(1, 4, 0, 4), "text": "X"})  # end before start
    d = doc(s)
    eq(d["text"], TEXT, "a reversed range deletes nothing")
    eq(d["synced"], False, "out of sync")
    errors = sync_errors(s)
    eq(len(errors), 1, "one error logged")
    check("reversed" in errors[0] and URI in errors[0], "the error says what and where",
          errors[0])
    # Later incremental changes are not applied, and not logged again.
    change(s, 3, {"range": rng(0, 0, 0, 0), "text": "// x\n"})
    change(s, 4, {"range": rng(2, 0, 1, 0), "text": ""})
    eq(doc(s)["text"], TEXT, "changes after it are not applied")
    eq(len(sync_errors(s)), 1, "still one error logged")
    check_refused(s)
    # A full text brings it back; incremental changes apply again.
    change(s, 5, {"text": "int abc;\n"})
    d = doc(s)
    eq((d["text"], d["synced"], d["version"]), ("int abc;\n", True, 5), "resynced")
    change(s, 6, {"range": rng(0, 0, 0, 0), "text": "int a;\n"})
    eq(doc(s)["text"], "int a;\nint abc;\n", "incremental changes apply again")
    r = inline(s, 1)
    check("result" in r, "completions again once in sync", r)
    s.shutdown_and_exit()


def test_past_the_end():
    s = start()
    # Accepted: a character past a line's end (clamped, as LSP says), and
    # (line count, 0), the end of the text as clients write it.
    change(s, 2, {"range": rng(0, 40, 1, 0), "text": " // a\n"})
    change(s, 3, {"range": rng(4, 0, 4, 0), "text": "int z;\n"})
    d = doc(s)
    eq((d["text"], d["synced"]), ("int a; // a\nint b;\nint abc;\nint z;\n", True),
       "clamped character and the end of the text")
    # Refused: a line further on, or that line at a character past 0.
    for version, bad in ((4, rng(9, 0, 9, 0)), (5, rng(5, 3, 5, 3))):
        s.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "c",
                                                           "version": 1, "text": TEXT}})
        eq(doc(s)["synced"], True, "a reopen is in sync")
        change(s, version, {"range": bad, "text": "lost"})
        d = doc(s)
        eq((d["text"], d["synced"]), (TEXT, False), "refused: %r" % (bad,))
    errors = sync_errors(s)
    eq(len(errors), 2, "one error per desync")
    check(all("past the end" in e for e in errors), "the errors say past the end", errors)
    s.shutdown_and_exit()


def test_batch_stops_at_the_bad_change():
    s = start()
    # Changes in one notification apply in order: the first applies, the
    # second is refused, the third (which would edit the wrong text) not.
    change(s, 2, {"range": rng(0, 0, 0, 3), "text": "long"},
           {"range": rng(2, 5, 2, 1), "text": ""},
           {"range": rng(1, 0, 1, 3), "text": "char"})
    d = doc(s)
    eq((d["text"], d["synced"]), ("long a;\nint b;\nint abc;\n", False), "applied up to it")
    check_refused(s)
    # A full text in the same batch as later increments resyncs first.
    change(s, 3, {"range": rng(0, 0, 0, 0), "text": "ignored"}, {"text": TEXT},
           {"range": rng(0, 0, 0, 3), "text": "long"})
    d = doc(s)
    eq((d["text"], d["synced"]), ("long a;\nint b;\nint abc;\n", True), "resynced in a batch")
    s.shutdown_and_exit()


def warnings(s, what):
    """window/logMessage warnings (type 2) so far that say `what`."""
    s.sync()
    s.sync()
    with s.cv:
        return [m["params"]["message"] for m in s.messages
                if m.get("method") == "window/logMessage" and m["params"]["type"] == 2 and
                what in m["params"]["message"]]


def test_repeated_version_of_an_empty_change():
    """Neovim 0.7 sends a change that changes nothing under the version it
    sent last (issue 43: `:LspLog` filled with "version 18 does not follow
    18"). The change is what its runtime's vim.lsp.sync.compute_diff makes
    of unchanged lines: an empty range, rangeLength 0, no text. It is not
    a warning; a stale version that changes text still is."""
    s = start()
    change(s, 2, {"range": rng(0, 6, 0, 6), "text": " "})
    change(s, 2, {"range": rng(0, 6, 0, 6), "rangeLength": 0, "text": ""})
    change(s, 2, {"range": rng(1, 6, 1, 6), "rangeLength": 0, "text": ""},
           {"range": rng(0, 7, 0, 7), "rangeLength": 0, "text": ""})
    eq(warnings(s, "does not follow"), [], "an empty change under the same version")
    eq(doc(s)["text"], "int a; \nint b;\nint abc;\n", "nothing changed by it")
    change(s, 2, {"range": rng(0, 0, 0, 0), "text": "x"})
    change(s, 1, {"range": rng(0, 6, 0, 6), "text": ""})
    eq(len(warnings(s, "does not follow")), 2, "a stale version with text, an older version")
    s.shutdown_and_exit()


if __name__ == "__main__":
    run_tests([test_reversed_range_unsyncs_until_full_text, test_past_the_end,
               test_batch_stops_at_the_bad_change, test_repeated_version_of_an_empty_change])

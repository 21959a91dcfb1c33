"""Documents and positions: didOpen/didChange (incremental and full, applied
in order)/didClose/didSave, in all three position encodings, against an
independent Python model (lspclient.offset_of/apply_change). Multi-byte
text (é, 中, 😀 = a UTF-16 surrogate pair), CRLF line ends, a lone CR
(a character of its line, as Neovim and Emacs count it),
clamping past line/file ends, rounding down inside characters.
Rules: LSP 3.17 "Position", "PositionEncodingKind", "Text Documents"."""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import (INVALID_PARAMS, apply_change, check, eq, expect_error,  # noqa: E402
                       inside_char, line_length, line_starts, offset_of, rng, run_tests, spawn)

TEXT = ("caf\u00e9 \u4e2d\u6587!\r\n"             # 2-byte and 3-byte UTF-8, CRLF
        "emoji \U0001F600x\U0001F601\r"           # surrogate pairs, a lone CR inside
        "the line\n"
        "\n"                                      # an empty line
        "\t\u00e9\u00e9\U0001F600\U0001F600\u4e2d\r\n"
        "last line \u00e9")                       # no final newline
ENCODINGS = ("utf-8", "utf-16", "utf-32")
OFFERS = {"utf-8": ["utf-8"], "utf-16": None, "utf-32": ["utf-32", "utf-16"]}


def start(enc, **kw):
    s = spawn(**kw)
    offer = OFFERS[enc]
    caps = {} if offer is None else {"general": {"positionEncodings": offer}}
    r = s.start(caps)
    eq(r["capabilities"]["positionEncoding"], enc, "negotiated encoding")
    return s


def open_doc(s, uri, text, version=1, lang="plaintext"):
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": lang, "version": version, "text": text}})


def get_doc(s, uri):
    return s.result("sculpt/test/document", {"textDocument": {"uri": uri}})


def check_offsets(s, uri, data, enc):
    """Asks for every position in and around the text; compares with the model."""
    starts = line_starts(data)
    queries = []
    for line in range(len(starts) + 2):
        width = line_length(data, line, enc, starts) if line < len(starts) else 0
        for ch in range(width + 3):
            queries.append((line, ch))
    queries += [(0, 10 ** 6), (10 ** 6, 0), (2 ** 31 - 1, 2 ** 31 - 1)]
    ids = []
    for line, ch in queries:
        ids.append(s.send_request("sculpt/test/offset", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": ch}}))
    mismatches = []
    for (line, ch), i in zip(queries, ids):
        r = s.wait_response(i)
        if "error" in r:
            mismatches.append(((line, ch), r["error"]))
            continue
        got = r["result"]
        want_off, want_clamped = offset_of(data, line, ch, enc, starts)
        if got.get("offset") != want_off:
            mismatches.append(((line, ch), "offset %r want %r" % (got.get("offset"), want_off)))
        # Inside a character is rounding, not clamping: the contract does not
        # say what `clamped` is then, so only the offset is compared there.
        elif not inside_char(data, line, ch, enc, starts) and \
                got.get("clamped") is not want_clamped:
            mismatches.append(((line, ch), "clamped %r want %r" % (got.get("clamped"),
                                                                    want_clamped)))
    check(not mismatches, "%s offsets (%d of %d wrong)" % (enc, len(mismatches), len(queries)),
          mismatches[:15])
    return len(queries)


def offset(s, uri, line, ch):
    """{offset, clamped} of a position (other members are ignored)."""
    r = s.result("sculpt/test/offset", {"textDocument": {"uri": uri},
                                        "position": {"line": line, "character": ch}})
    return {"offset": r.get("offset"), "clamped": r.get("clamped")}


def test_offsets_all_encodings():
    for enc in ENCODINGS:
        s = start(enc)
        uri = "file:///pos-%s.txt" % enc
        open_doc(s, uri, TEXT)
        eq(get_doc(s, uri)["text"], TEXT, "text after didOpen")
        check_offsets(s, uri, TEXT.encode("utf-8"), enc)
        # An empty document.
        open_doc(s, "file:///empty.txt", "")
        check_offsets(s, "file:///empty.txt", b"", enc)
        # Known values, written out by hand (not from the model), so the
        # model itself is checked: line 1 is "emoji \U0001F600x\U0001F601".
        base = len("caf\u00e9 \u4e2d\u6587!\r\n".encode("utf-8"))
        eq(base, 15, "hand-computed line 1 start")
        hand = {  # character index of 'x' on line 1
            "utf-8": 10, "utf-16": 8, "utf-32": 7}[enc]
        eq(offset(s, uri, 1, hand), {"offset": base + 10, "clamped": False},
           "offset of 'x' (%s)" % enc)
        # Inside the emoji: rounds down to its start (byte 6 of the line).
        inside = {"utf-8": 8, "utf-16": 7, "utf-32": None}[enc]
        if inside is not None:
            eq(offset(s, uri, 1, inside)["offset"], base + 6,
               "offset inside the emoji (%s)" % enc)
        # Past the end of line 0 clamps before the CRLF; past the last line
        # clamps to the end of the file.
        eq(offset(s, uri, 0, 99), {"offset": 13, "clamped": True},
           "clamp past the end of line 0 (%s)" % enc)
        eq(offset(s, uri, 99, 0), {"offset": len(TEXT.encode("utf-8")), "clamped": True},
           "clamp past the last line (%s)" % enc)
        eq(s.shutdown_and_exit(), 0, "exit code")


FIXED_EDITS = [
    # (start line, start char (utf-16), end line, end char, text) — applied
    # through the model so each encoding gets its own character numbers.
    (0, 0, 0, 0, "\u00ab"),                 # insert at the very start
    (0, 4, 0, 5, "E"),                      # replace é
    (1, 6, 1, 8, "\U0001F680"),             # replace a whole surrogate pair
    (1, 11, 1, 12, "\n"),                   # line 1's lone CR becomes LF
    (0, 99, 1, 0, " joined "),              # past the line end: joins lines
    (2, 0, 3, 0, ""),                       # delete a line
    (-1, 0, -1, 0, "\nappended \u4e2d"),    # the line after the last (-1 here): appends
    (4, 2, 4, 3, "\r"),                     # insert a lone CR mid-line
]


def to_enc(data, line, ch16, enc):
    """Converts a UTF-16 column on a line of data into enc's column."""
    starts = line_starts(data)
    if line >= len(starts):
        return ch16
    off, _ = offset_of(data, line, ch16, "utf-16", starts)
    s = starts[line]
    prefix = data[s:off].decode("utf-8")
    extra = max(0, ch16 - line_length(data, line, "utf-16", starts))
    return sum(len(c.encode("utf-8")) if enc == "utf-8" else
               (1 if enc == "utf-32" else (2 if ord(c) > 0xFFFF else 1))
               for c in prefix) + extra


PIECES = ["a", "xyz", "\u00e9", "\u4e2d", "\U0001F600", "\n", "\r\n", "\r", "", "  ",
          "\U0001F680\u00e9\n"]


def random_change(rnd, data, enc):
    starts = line_starts(data)
    nl = len(starts)

    def pos():
        line = rnd.randrange(nl + 1) if rnd.random() < 0.1 else rnd.randrange(nl)
        if line == nl:  # the line after the last: only its start, the end of the text
            return line, 0
        width = line_length(data, line, enc, starts)
        ch = rnd.randrange(width + 3) if rnd.random() < 0.1 else rnd.randrange(width + 1)
        return line, ch
    a, b = sorted([pos(), pos()])
    text = "".join(rnd.choice(PIECES) for _ in range(rnd.randrange(3)))
    if len(data) > 3000:  # keep the document small: delete more
        text = ""
    return {"range": rng(a[0], a[1], b[0], b[1]), "text": text}


def test_edits_all_encodings():
    for enc in ENCODINGS:
        s = start(enc)
        uri = "file:///edit-%s.txt" % enc
        open_doc(s, uri, TEXT, version=3)
        data = TEXT.encode("utf-8")
        version = 3
        for l1, c1, l2, c2, text in FIXED_EDITS:
            l1, l2 = (len(line_starts(data)) if x == -1 else x for x in (l1, l2))
            ch = {"range": rng(l1, to_enc(data, l1, c1, enc), l2, to_enc(data, l2, c2, enc)),
                  "text": text}
            data = apply_change(data, ch, enc)
            version += 1
            s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                "contentChanges": [ch]})
            doc = get_doc(s, uri)
            eq(doc["text"].encode("utf-8"), data, "%s text after edit %r" % (enc, ch))
            eq(doc["version"], version, "version")
        rnd = random.Random("edits-" + enc)
        for step in range(300):
            changes = []
            for _ in range(rnd.randrange(1, 4)):
                if rnd.random() < 0.03:
                    c = {"text": "".join(rnd.choice(PIECES) for _ in range(8))}
                else:
                    c = random_change(rnd, data, enc)
                data = apply_change(data, c, enc)
                changes.append(c)
            version += 1
            s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                "contentChanges": changes})
            if step % 25 == 24:
                doc = get_doc(s, uri)
                eq(doc["text"].encode("utf-8"), data, "%s text after random step %d" %
                   (enc, step))
        doc = get_doc(s, uri)
        eq(doc, {"uri": uri, "version": version, "languageId": "plaintext",
                 "text": data.decode("utf-8"), "synced": True}, "%s final document" % enc)
        check_offsets(s, uri, data, enc)
        eq(s.shutdown_and_exit(), 0, "exit code")


def test_mixed_full_and_incremental():
    s = start("utf-16")
    uri = "file:///mixed.txt"
    open_doc(s, uri, "first\n")
    changes = [{"range": rng(0, 0, 0, 5), "text": "FIRST"},
               {"text": "replaced \U0001F600\nsecond\n"},
               {"range": rng(0, 9, 0, 11), "text": "!"},       # the emoji (2 units)
               {"range": rng(1, 0, 1, 6), "text": "2nd"}]
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": changes})
    eq(get_doc(s, uri)["text"], "replaced !\n2nd\n", "changes applied in order")
    eq(s.shutdown_and_exit(), 0, "exit code")


def test_open_close_save_many():
    s = start("utf-16")
    uris = ["file:///doc%d.py" % i for i in range(5)]
    for i, u in enumerate(uris):
        open_doc(s, u, "doc %d\n" % i, version=i, lang="python")
    eq(s.result("sculpt/test/stats", {})["openDocuments"], 5, "openDocuments")
    s.notify("textDocument/didChange", {"textDocument": {"uri": uris[2], "version": 9},
                                        "contentChanges": [{"range": rng(0, 4, 0, 5),
                                                            "text": "two"}]})
    s.notify("textDocument/didSave", {"textDocument": {"uri": uris[2]}})
    for i, u in enumerate(uris):
        d = get_doc(s, u)
        want = "doc two\n" if i == 2 else "doc %d\n" % i
        eq(d, {"uri": u, "version": 9 if i == 2 else i, "languageId": "python", "text": want,
               "synced": True},
           "document %d" % i)
    s.notify("textDocument/didClose", {"textDocument": {"uri": uris[1]}})
    eq(s.result("sculpt/test/stats", {})["openDocuments"], 4, "openDocuments after close")
    i = s.send_request("sculpt/test/document", {"textDocument": {"uri": uris[1]}})
    expect_error(s.wait_response(i), INVALID_PARAMS, i)
    # A change to a closed document is ignored (and must not reopen it).
    s.notify("textDocument/didChange", {"textDocument": {"uri": uris[1], "version": 10},
                                        "contentChanges": [{"text": "zombie"}]})
    eq(s.result("sculpt/test/stats", {})["openDocuments"], 4, "closed stays closed")
    open_doc(s, uris[1], "reopened", version=11)
    eq(get_doc(s, uris[1])["text"], "reopened", "reopened document")
    for u in uris:
        s.notify("textDocument/didClose", {"textDocument": {"uri": u}})
    eq(s.result("sculpt/test/stats", {})["openDocuments"], 0, "all closed")
    eq(s.shutdown_and_exit(), 0, "exit code")


if __name__ == "__main__":
    run_tests([test_offsets_all_encodings, test_edits_all_encodings,
               test_mixed_full_and_incremental, test_open_close_save_many])

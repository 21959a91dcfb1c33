#!/usr/bin/env python3
"""A scripted LSP session against `sculpt lsp`, printed as it happens.

Usage: tools/demo_session.py [PATH/TO/sculpt]

It plays what an editor does, with no settings at all and the model sculpt
ships (model/default): initialize with a workspace folder (jq's sources,
vendored under tests/data/real), open a real 2,000-line C file, wait for the
model, ask for inline completions (ghost text) at a few places in it and
for completion items at its last line, type the first character of a
suggestion (answered from the cache), send a request the server does not
know, shut down and exit. Each message and each answer is printed, so you
can see the server at work. Exits 1 if any completion request fails.
"""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(os.path.dirname(HERE), "tests", "data", "real", "jq")
FILE = os.path.join(REPO, "src", "builtin.c")


def frame(obj):
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def reader(stream, out, cv):
    while True:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            c = stream.read(1)
            if not c:
                return
            header += c
        n = int([l for l in header.split(b"\r\n")
                 if l.lower().startswith(b"content-length")][0].split(b":")[1])
        msg = json.loads(stream.read(n))
        with cv:
            out.append(msg)
            cv.notify_all()


def short(obj, n=400):
    s = json.dumps(obj)
    return s if len(s) <= n else s[:n] + " ..."


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/sculpt"
    env = dict(os.environ)
    env.pop("SCULPT_MODEL", None)  # the model sculpt ships
    proc = subprocess.Popen([binary, "lsp", "--stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    got, cv = [], threading.Condition()
    t = threading.Thread(target=reader, args=(proc.stdout, got, cv), daemon=True)
    t.start()
    seen = [0]  # messages printed so far

    def show_new():
        """Prints what the server sent on its own (notifications, its
        requests), answering its progress requests as an editor does."""
        with cv:
            new = got[seen[0]:]
            seen[0] = len(got)
        for m in new:
            if "method" in m:
                print("<<", short(m, 300))
                if m["method"] == "window/workDoneProgress/create":
                    send({"jsonrpc": "2.0", "id": m["id"], "result": None}, quiet=True)

    def send(obj, wait_for=None, quiet=False, timeout=120):
        if not quiet:
            print(">>", short(obj, 200))
        proc.stdin.write(frame(obj))
        proc.stdin.flush()
        if wait_for is None:
            return None
        deadline = time.time() + timeout
        while time.time() < deadline:
            show_new()
            with cv:
                for m in got:
                    if m.get("id") == wait_for and "method" not in m:
                        print("<<", short(m, 1200))
                        return m
                cv.wait(0.05)
        raise SystemExit("demo: no answer to request %r" % wait_for)

    def wait_status(state, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            show_new()
            with cv:
                for m in got:
                    if m.get("method") == "sculpt/status" and m["params"]["state"] == state:
                        return m
                cv.wait(0.05)
        raise SystemExit("demo: the model never became %s" % state)

    text = open(FILE, encoding="utf-8").read()
    lines = text.split("\n")
    uri = "file://" + FILE
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"processId": None, "rootUri": "file://" + REPO,
                     "clientInfo": {"name": "demo"},
                     "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                                      "window": {"workDoneProgress": True}}}}, 1)
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
          "params": {"textDocument": {"uri": uri, "languageId": "c", "version": 1,
                                      "text": text}}})
    print("   (the text of %s: %d lines)" % (os.path.relpath(FILE), len(lines)))
    wait_status("ready")

    failed = 0
    shown = None  # (line, character, suggestion) of the first non-empty one
    next_id = 2
    # Ghost text through the file, at the end of code lines and just after
    # an opening parenthesis (mid-line), until one gives a suggestion. The
    # shipped model is a small stand-in: most of what it writes is dropped
    # because it would break the parse, and what is kept is rarely right.
    n = len(lines)
    places = []
    for frac in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        line = int(n * frac)
        while line < n - 2 and not lines[line].rstrip().endswith((";", "{", ")")):
            line += 1
        if "(" in lines[line]:
            places.append((line, lines[line].index("(") + 1))
        places.append((line, len(lines[line])))
    places.append((n - 2, len(lines[n - 2])))  # the last line
    for line, char in places:
        print("\n-- inline completion at %s:%d:%d in: %s" % (
            os.path.basename(FILE), line + 1, char + 1, lines[line].strip()))
        r = send({"jsonrpc": "2.0", "id": next_id, "method": "textDocument/inlineCompletion",
                  "params": {"textDocument": {"uri": uri},
                             "position": {"line": line, "character": char},
                             "context": {"triggerKind": 1}}}, next_id)
        next_id += 1
        if "error" in r:
            failed += 1
        elif r["result"]["items"]:
            shown = (line, char, r["result"]["items"][0]["insertText"])
            print("   ghost text: %r" % shown[2])
            break
        else:
            print("   nothing shown: %s" % r["result"]["data"].get(
                "discarded", r["result"]["data"].get("skipped", "an empty middle")))
    # Completion items (for clients without inline completion) at the end.
    print("\n-- completion items at the end of the file")
    r = send({"jsonrpc": "2.0", "id": next_id, "method": "textDocument/completion",
              "params": {"textDocument": {"uri": uri},
                         "position": {"line": n - 2, "character": len(lines[n - 2])},
                         "context": {"triggerKind": 1}}}, next_id)
    next_id += 1
    failed += "error" in r
    if shown:
        # The user types the suggestion's first character: the rest comes
        # from the cache, with no model call.
        line, char, sugg = shown
        print("\n-- typing %r, the start of the suggestion" % sugg[0])
        send({"jsonrpc": "2.0", "method": "textDocument/didChange",
              "params": {"textDocument": {"uri": uri, "version": 2},
                         "contentChanges": [{"range": {"start": {"line": line, "character": char},
                                                       "end": {"line": line, "character": char}},
                                             "text": sugg[0]}]}})
        r = send({"jsonrpc": "2.0", "id": next_id, "method": "textDocument/inlineCompletion",
                  "params": {"textDocument": {"uri": uri},
                             "position": {"line": line, "character": char + 1},
                             "context": {"triggerKind": 2}}}, next_id)
        next_id += 1
        failed += "error" in r
    print()
    send({"jsonrpc": "2.0", "id": next_id, "method": "workspace/unknownThing", "params": {}},
         next_id)
    send({"jsonrpc": "2.0", "id": next_id + 1, "method": "shutdown"}, next_id + 1)
    send({"jsonrpc": "2.0", "method": "exit"})
    code = proc.wait(timeout=30)
    t.join(timeout=2)
    show_new()
    print("-- server log (stderr) --")
    print(proc.stderr.read().decode().rstrip())
    print("-- sculpt lsp exited with %d (0 = clean shutdown); %d completion requests failed"
          % (code, failed))
    sys.exit(0 if code == 0 and not failed else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A scripted LSP session against `sculpt lsp`, printed as it happens.

Usage: tools/demo_session.py PATH/TO/sculpt

It plays what an editor does: initialize, open a file, type into it,
send a request the server does not know, shut down and exit. Each message
and each answer is printed, so you can see the server at work.
"""
import json
import subprocess
import sys
import threading
import time

SAMPLE = """#include <stdio.h>

int main(void) {
  printf("hello\\n");
  return 0;
}
"""


def frame(obj):
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def reader(stream, out):
    while True:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            c = stream.read(1)
            if not c:
                return
            header += c
        n = int([l for l in header.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        out.append(json.loads(stream.read(n)))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/sculpt"
    proc = subprocess.Popen([binary, "lsp", "--stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = []
    t = threading.Thread(target=reader, args=(proc.stdout, got), daemon=True)
    t.start()

    def send(obj, wait_for=None):
        print(">>", json.dumps(obj)[:160])
        proc.stdin.write(frame(obj))
        proc.stdin.flush()
        if wait_for is not None:
            deadline = time.time() + 10
            while time.time() < deadline:
                for m in got:
                    if m.get("id") == wait_for and ("result" in m or "error" in m):
                        got.remove(m)
                        print("<<", json.dumps(m)[:300])
                        return m
                time.sleep(0.01)
            raise SystemExit("demo: no answer to request %r" % wait_for)

    uri = "file:///demo/main.c"
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"processId": None, "rootUri": None, "clientInfo": {"name": "demo"},
                     "capabilities": {"general": {"positionEncodings": ["utf-16"]}}}}, 1)
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
          "params": {"textDocument": {"uri": uri, "languageId": "c", "version": 1, "text": SAMPLE}}})
    send({"jsonrpc": "2.0", "method": "textDocument/didChange",
          "params": {"textDocument": {"uri": uri, "version": 2},
                     "contentChanges": [{"range": {"start": {"line": 3, "character": 10},
                                                   "end": {"line": 3, "character": 15}},
                                         "text": "sculpt"}]}})
    send({"jsonrpc": "2.0", "id": 2, "method": "workspace/unknownThing", "params": {}}, 2)
    send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}, 3)
    send({"jsonrpc": "2.0", "method": "exit"})
    code = proc.wait(timeout=10)
    t.join(timeout=2)
    for m in got:
        print("<<", json.dumps(m)[:300])
    print("-- server log (stderr) --")
    print(proc.stderr.read().decode().rstrip())
    print("-- sculpt lsp exited with %d (0 = clean shutdown)" % code)
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()

"""mockfim.py — a small OpenAI-compatible FIM server for the remote-backend
tests (stdlib only: http.server, threaded).

POST /v1/fim/completions (any path, recorded) with a JSON body answers
{"choices": [{"text": ...}]}. Each request takes the next scripted reply
(Mock.script, a list of dicts) or, when the script is empty, Mock.default:

  status   HTTP status (200)
  text     the completion text, or a function of the request body
  body     a raw body instead (bytes or str), e.g. an error document
  headers  extra response headers, e.g. {"Retry-After": "1"}
  delay    seconds to wait before answering; if the client closes the
           connection meanwhile, that is recorded (Mock.closed) and nothing
           is sent

The shape of the request and the answer follows the OpenAI legacy
completions API with `suffix` (what Mercury Coder, vLLM and SGLang accept).
"""

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Mock:
    def __init__(self):
        self.requests = []  # {"path", "headers", "body", "raw", "t"}
        self.closed = []    # request indexes whose client went away early
        self.script = []
        self.default = {"status": 200, "text": "mock"}
        self.cv = threading.Condition()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with mock.cv:
                    idx = len(mock.requests)
                    mock.requests.append({"path": self.path, "headers": dict(self.headers),
                                          "body": body, "raw": raw, "t": time.monotonic()})
                    reply = mock.script.pop(0) if mock.script else mock.default
                    mock.cv.notify_all()
                delay = reply.get("delay", 0)
                if delay and mock._wait_or_closed(self.connection, delay):
                    with mock.cv:
                        mock.closed.append(idx)
                        mock.cv.notify_all()
                    self.close_connection = True
                    return
                status = reply.get("status", 200)
                if "body" in reply:
                    out = reply["body"]
                    out = out.encode() if isinstance(out, str) else out
                else:
                    text = reply.get("text", "")
                    if callable(text):
                        text = text(body)
                    out = json.dumps({"id": "cmpl-mock", "object": "text_completion",
                                      "choices": [{"index": 0, "text": text,
                                                   "finish_reason": "stop"}]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                for k, v in reply.get("headers", {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(out)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def _wait_or_closed(conn, seconds):
        """Sleeps up to seconds; True as soon as the peer closed the socket."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([conn], [], [], min(left, 0.05))
            if r:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
                time.sleep(min(left, 0.05))  # pipelined bytes: not a close

    def wait_requests(self, n, timeout=15.0):
        deadline = time.monotonic() + timeout
        with self.cv:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("mock: %d requests after %.1f s, wanted %d"
                                         % (len(self.requests), timeout, n))
                self.cv.wait(min(left, 0.2))
            return list(self.requests)

    def wait_closed(self, n=1, timeout=15.0):
        deadline = time.monotonic() + timeout
        with self.cv:
            while len(self.closed) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("mock: the client did not close its connection "
                                         "within %.1f s" % timeout)
                self.cv.wait(min(left, 0.2))
            return list(self.closed)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port():
    """A local port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def clean_env(extra=None):
    """The environment for sculpt: no proxy (the mock is on 127.0.0.1), no
    stray API key; plus extra."""
    import os
    e = dict(os.environ)
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
              "all_proxy", "SCULPT_API_KEY"):
        e.pop(k, None)
    e.update(extra or {})
    return e

"""mockfim.py — small FIM servers for the remote-backend tests (stdlib only:
http.server, threaded), one profile per provider sculpt speaks to, each
refusing what the provider's own code refuses and answering in its shapes,
whole or streamed.

These mocks are written from the providers' documentation and source code,
cited per profile below; none was checked against a running server.

  generic    any POST path; OpenAI legacy completions with suffix (what
             sculpt serve answers): choices[0].text, SSE increments ending
             with `data: [DONE]` when stream is true.
  openai     Mercury Coder: POST /v1/fim/completions, the same shapes
             (https://docs.inceptionlabs.ai; LiteLLM's "inception" provider
             page: base https://api.inceptionlabs.ai/v1, /fim/completions).
  deepseek   POST /beta/completions only (FIM is a beta feature), model
             required, at most 16 stop strings, max_tokens at most 4096
             (https://api-docs.deepseek.com/api/create-completion; its error
             codes page: 422 for invalid parameters).
  vllm       POST /v1/completions; any non-null suffix is refused with 400
             "suffix is not currently supported" (vllm-project/vllm
             vllm/entrypoints/openai/completion/serving.py and its renderer;
             the error body {"error": {"message", "type": "BadRequestError",
             "param", "code"}} from entrypoints/openai/engine/protocol.py
             ErrorResponse); a model other than the served one is 404
             "The model `x` does not exist."; SSE with finish_reason on the
             last chunk, then [DONE].
  sglang     POST /v1/completions; without --completion-template the suffix
             is silently dropped and the prompt continued; with one
             (deepseek_coder, star_coder, qwen_coder) prompt and suffix are
             wrapped in the template's FIM tokens
             (sgl-project/sglang python/sglang/srt/parser/
             code_completion_parser.py, entrypoints/openai/
             serving_completions.py); an empty prompt is refused (400).
  mistral    POST /v1/fim/completions, model required (422 with FastAPI's
             {"detail": [{"type": "missing", "loc": ["body", "model"],
             "msg": "Field required"}]}); the answer in
             choices[0].message.content ("object": "chat.completion"),
             streamed as choices[0].delta.content, then [DONE]
             (mistralai/client-python docs/models/fimcompletionrequest.md,
             fimcompletionresponse.md, completionresponsestreamchoice.md,
             httpvalidationerror.md).
  llamacpp   POST /infill: input_prefix and input_suffix required,
             input_extra an array of {filename?, text} (400
             invalid_request_error otherwise); a model without FIM tokens is
             501 "Infill is not supported by this model: ..."; the answer in
             content with stop/stop_type ("limit": n_predict reached);
             streamed as SSE with no [DONE] (ggml-org/llama.cpp
             tools/server/README.md "POST /infill", server-context.cpp's
             infill handler and format_error_response).
  ollama     POST /api/generate {model, prompt, suffix, stream (default
             true), options: {num_predict, temperature, stop}}; an empty
             model is 404 "model '' not found", an unknown one 404 "model
             \"x\" not found, try pulling it first", a suffix for a model
             without the insert capability 400 "<model> does not support
             insert"; NDJSON lines {model, created_at, response, done}, the
             last with done_reason (ollama/ollama server/routes.go
             GenerateHandler and handleScheduleError, server/images.go
             CheckCapabilities, api/types.go GenerateRequest/Response).
  ollama-v1  Ollama's OpenAI layer: POST /v1/completions with suffix, model
             required; choices[0].text, SSE with [DONE] (ollama/ollama
             openai/openai.go FromCompleteRequest, ToCompleteChunk, NewError).

Each request takes the next scripted reply (Mock.script, a list of dicts) or,
when the script is empty, Mock.default:

  status       HTTP status (200); with body, a raw error or answer
  text         the completion text, or a function of the request body
  body         a raw body instead (bytes or str), e.g. an error document
  headers      extra response headers, e.g. {"Retry-After": "1"}
  delay        seconds to wait before answering; if the client closes the
               connection meanwhile, that is recorded (Mock.closed) and
               nothing is sent
  finish       "stop" (default) or "length": the server hit max_tokens
  pieces       a streamed answer is sent in this many pieces (3), or these
               pieces (a list of strings; text is then ignored)
  piece_delay  seconds between pieces; a client that closes meanwhile is
               recorded in Mock.closed and the rest is not sent
"""

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# SGLang's completion templates (code_completion_parser.py).
SGLANG_TEMPLATES = {
    "deepseek_coder": ("<\uff5cfim\u2581begin\uff5c>", "<\uff5cfim\u2581hole\uff5c>",
                       "<\uff5cfim\u2581end\uff5c>"),
    "star_coder": ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
    "qwen_coder": ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
}


class Refuse(Exception):
    def __init__(self, status, body):
        super().__init__(status)
        self.status = status
        self.body = body


def _openai_error(status, message, etype="invalid_request_error"):
    return Refuse(status, {"error": {"message": message, "type": etype, "param": None,
                                     "code": None}})


class Mock:
    def __init__(self, provider="generic", served_model="mock-model", has_fim=True,
                 insert=True, completion_template=None):
        self.provider = provider
        self.served_model = served_model
        self.has_fim = has_fim          # llama.cpp: the GGUF has FIM tokens
        self.insert = insert            # Ollama: the model has the insert capability
        self.completion_template = completion_template  # SGLang's flag
        self.requests = []  # {"path", "headers", "body", "raw", "t", "seen"}
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
                rec = {"path": self.path, "headers": dict(self.headers), "body": body,
                       "raw": raw, "t": time.monotonic(), "seen": {}}
                with mock.cv:
                    idx = len(mock.requests)
                    mock.requests.append(rec)
                    reply = mock.script.pop(0) if mock.script else mock.default
                    mock.cv.notify_all()
                delay = reply.get("delay", 0)
                if delay and mock._wait_or_closed(self.connection, delay):
                    mock._closed(idx)
                    self.close_connection = True
                    return
                if "body" in reply:
                    out = reply["body"]
                    self._send(reply.get("status", 200), out.encode() if isinstance(out, str)
                               else out, reply)
                    return
                try:
                    stream = mock._check(self.path, body, rec["seen"])
                except Refuse as r:
                    self._send(r.status, json.dumps(r.body).encode(), {})
                    return
                text = reply.get("text", "")
                if callable(text):
                    text = text(body)
                finish = reply.get("finish", "stop")
                status = reply.get("status", 200)
                if not stream:
                    self._send(status, json.dumps(mock._whole(body, text, finish)).encode(),
                               reply)
                    return
                self._stream(idx, body, text, finish, reply)

            def _send(self, status, out, reply):
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

            def _chunk(self, data):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _stream(self, idx, body, text, finish, reply):
                ndjson = mock.provider == "ollama"
                self.send_response(reply.get("status", 200))
                self.send_header("Content-Type", "application/x-ndjson" if ndjson
                                 else "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                for k, v in reply.get("headers", {}).items():
                    self.send_header(k, v)
                self.end_headers()
                pieces = reply.get("pieces", 3)
                if isinstance(pieces, int):
                    step = max(1, -(-len(text) // max(1, pieces))) if text else 1
                    pieces = [text[i:i + step] for i in range(0, len(text), step)] or [""]
                events = [mock._event(body, p, None) for p in pieces]
                events.append(mock._event(body, "", finish))
                try:
                    for i, ev in enumerate(events):
                        line = json.dumps(ev)
                        self._chunk((line + "\n").encode() if ndjson
                                    else ("data: " + line + "\n\n").encode())
                        gap = reply.get("piece_delay", 0)
                        if gap and i + 1 < len(events) and \
                                mock._wait_or_closed(self.connection, gap):
                            mock._closed(idx)
                            self.close_connection = True
                            return
                    if mock.provider not in ("llamacpp", "ollama"):
                        self._chunk(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    mock._closed(idx)
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    # ---- each provider's validation ------------------------------------------------

    def _check(self, path, body, seen):
        """Refuses what the provider refuses; fills seen with what it took
        from the request; returns whether the answer streams."""
        p = self.provider
        if not isinstance(body, dict):
            raise _openai_error(400, "the body is not a JSON object")
        if p == "generic":
            return bool(body.get("stream"))
        if p == "openai":
            if path != "/v1/fim/completions":
                raise _openai_error(404, "Not Found", "not_found_error")
            return bool(body.get("stream"))
        if p == "deepseek":
            if path != "/beta/completions":
                raise _openai_error(404, "Not Found", "not_found_error")
            if not body.get("model"):
                raise _openai_error(422, "Missing required parameter: 'model'")
            stop = body.get("stop")
            if isinstance(stop, list) and len(stop) > 16:
                raise _openai_error(422, "stop: at most 16 strings")
            if body.get("max_tokens", 0) > 4096:
                raise _openai_error(422, "max_tokens: at most 4096")
            return bool(body.get("stream"))
        if p == "vllm":
            if path != "/v1/completions":
                raise Refuse(404, {"detail": "Not Found"})
            if body.get("model") not in (None, self.served_model):
                raise Refuse(404, {"error": {"message": "The model `%s` does not exist."
                                             % body["model"], "type": "NotFoundError",
                                             "param": "model", "code": 404}})
            if body.get("suffix") is not None:
                raise Refuse(400, {"error": {"message": "suffix is not currently supported",
                                             "type": "BadRequestError", "param": None,
                                             "code": 400}})
            seen["prompt"] = body.get("prompt")
            return bool(body.get("stream"))
        if p == "sglang":
            if path != "/v1/completions":
                raise Refuse(404, {"detail": "Not Found"})
            prompt = body.get("prompt")
            if not prompt:
                raise _openai_error(400, "The prompt must not be empty")
            suffix = body.get("suffix")
            if self.completion_template and suffix:
                pre, suf, mid = SGLANG_TEMPLATES[self.completion_template]
                prompt = pre + prompt + suf + suffix + mid
            seen["prompt"] = prompt  # what the model is given
            seen["suffix_dropped"] = bool(suffix) and not self.completion_template
            return bool(body.get("stream"))
        if p == "mistral":
            if path != "/v1/fim/completions":
                raise Refuse(404, {"detail": "Not Found"})
            for field in ("model", "prompt"):
                if not isinstance(body.get(field), str) or (field == "model" and
                                                             not body[field]):
                    raise Refuse(422, {"detail": [{"type": "missing", "loc": ["body", field],
                                                   "msg": "Field required", "input": body}]})
            return bool(body.get("stream"))
        if p == "llamacpp":
            if path != "/infill":
                raise Refuse(404, {"error": {"code": 404, "message": "File Not Found",
                                             "type": "not_found_error"}})
            if not self.has_fim:
                raise Refuse(501, {"error": {"code": 501, "message":
                                             "Infill is not supported by this model: prefix "
                                             "token is missing. ",
                                             "type": "not_supported_error"}})
            for field in ("input_prefix", "input_suffix"):
                if field not in body:
                    raise Refuse(400, {"error": {"code": 400, "message": '"%s" is required'
                                                 % field, "type": "invalid_request_error"}})
            extra = body.get("input_extra", [])
            if not isinstance(extra, list):
                raise Refuse(400, {"error": {"code": 400, "message":
                                             '"input_extra" must be an array of '
                                             '{"filename": string, "text": string}',
                                             "type": "invalid_request_error"}})
            for ch in extra:
                if not isinstance(ch, dict) or not isinstance(ch.get("text"), str):
                    raise Refuse(400, {"error": {"code": 400, "message":
                                                 'extra_context chunk must contain a "text" '
                                                 'field with a string value',
                                                 "type": "invalid_request_error"}})
                if "filename" in ch and not isinstance(ch["filename"], str):
                    raise Refuse(400, {"error": {"code": 400, "message":
                                                 "extra_context chunk's \"filename\" field "
                                                 "must be a string",
                                                 "type": "invalid_request_error"}})
            seen["input_extra"] = extra
            return bool(body.get("stream"))
        if p == "ollama":
            if path != "/api/generate":
                raise Refuse(404, {"error": "404 page not found"})
            model = body.get("model") or ""
            if not model:
                raise Refuse(404, {"error": "model '' not found"})
            if model != self.served_model:
                raise Refuse(404, {"error": 'model "%s" not found, try pulling it first'
                                   % model})
            if body.get("suffix") and not self.insert:
                raise Refuse(400, {"error": "%s does not support insert" % model})
            return body.get("stream", True) is not False
        if p == "ollama-v1":
            if path != "/v1/completions":
                raise Refuse(404, {"error": "404 page not found"})
            model = body.get("model") or ""
            if not model:
                raise _openai_error(400, "model is required")
            if model != self.served_model:
                raise _openai_error(404, 'model "%s" not found, try pulling it first' % model,
                                    "not_found_error")
            if body.get("suffix") and not self.insert:
                raise _openai_error(400, "%s does not support insert" % model)
            return bool(body.get("stream"))
        raise AssertionError("unknown mock provider " + p)

    # ---- each provider's answers ----------------------------------------------------

    def _whole(self, body, text, finish):
        p = self.provider
        model = body.get("model") or self.served_model
        if p == "mistral":
            return {"id": "cmpl-mock", "object": "chat.completion", "model": model,
                    "created": int(time.time()),
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
                                                         "tool_calls": None},
                                 "finish_reason": finish}]}
        if p == "llamacpp":
            return {"index": 0, "content": text, "tokens": [], "id_slot": 0, "stop": True,
                    "model": model, "tokens_predicted": len(text), "tokens_evaluated": 1,
                    "truncated": False, "stop_type": "limit" if finish == "length" else "eos",
                    "stopping_word": ""}
        if p == "ollama":
            return {"model": model, "created_at": "2024-01-01T00:00:00Z", "response": text,
                    "done": True, "done_reason": finish}
        return {"id": "cmpl-mock", "object": "text_completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "text": text, "logprobs": None,
                                             "finish_reason": finish}]}

    def _event(self, body, piece, finish):
        """One streamed event: a piece of text, or (finish set) the last."""
        p = self.provider
        model = body.get("model") or self.served_model
        if p == "mistral":
            return {"id": "cmpl-mock", "object": "chat.completion.chunk", "model": model,
                    "created": int(time.time()),
                    "choices": [{"index": 0, "delta": {"content": piece},
                                 "finish_reason": finish}]}
        if p == "llamacpp":
            ev = {"index": 0, "content": piece, "tokens": [], "stop": finish is not None,
                  "id_slot": 0, "tokens_predicted": 1, "tokens_evaluated": 1}
            if finish:
                ev["stop_type"] = "limit" if finish == "length" else "eos"
            return ev
        if p == "ollama":
            ev = {"model": model, "created_at": "2024-01-01T00:00:00Z", "response": piece,
                  "done": finish is not None}
            if finish:
                ev["done_reason"] = finish
            return ev
        return {"id": "cmpl-mock", "object": "text_completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "text": piece, "logprobs": None,
                                             "finish_reason": finish}]}

    # ---- plumbing ---------------------------------------------------------------------

    def _closed(self, idx):
        with self.cv:
            if idx not in self.closed:
                self.closed.append(idx)
            self.cv.notify_all()

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


PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
              "all_proxy", "SCULPT_API_KEY")


def clean_env(extra=None):
    """The environment for sculpt: no proxy (the mock is on 127.0.0.1), no
    stray API key; plus extra."""
    import os
    e = dict(os.environ)
    for k in PROXY_VARS:
        e.pop(k, None)
    e.update(extra or {})
    return e

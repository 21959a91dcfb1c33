"""Real clients' FIM requests against `sculpt serve` (issue 25), each
reproduced from the client's source and read the way that client reads it;
the text a client ends up with from a stream must equal the answer to the
same request not streamed.

- Continue, core/llm/llms/OpenAI.ts `_streamFim` (continuedev/continue):
  POST new URL("fim/completions", apiBase) with {model, prompt, suffix,
  max_tokens, temperature, top_p, frequency_penalty, presence_penalty,
  stop, stream: true}, headers Content-Type, Accept, x-api-key and a
  bearer token; each event parsed by core/llm/stream.ts `streamSse` (lines
  split on "\\n", "data:" with or without a space, "data: [DONE]" ends, an
  "error" field throws) and `chunk.choices[0].delta.content` appended. The
  stop list is what core/autocomplete/templating/getStopTokens.ts builds
  for a model without a FIM template of its own (AutocompleteTemplate.ts,
  stableCodeFimTemplate: 7 tokens) plus its multiline and common stops: 12.
- Tabby, crates/http-api-bindings/src/completion/openai.rs
  (TabbyML/tabby), kind openai/completion: POST {api_endpoint}/completions
  with {model, prompt, suffix, max_tokens, temperature, stream: true,
  presence_penalty} and a bearer token; each event deserialized as
  {choices: [{text: String, finish_reason: Option<String>}]} (a missing or
  null text fails the request), choices[0].text appended, and the stream
  left at the first finish_reason.
- llama.vscode, src/llama-server.ts (ggml-org/llama.vscode): POST
  {endpoint}/infill with {input_prefix, input_suffix, input_extra, prompt,
  n_predict, top_k: 40, top_p: 0.99, stream: false, n_indent, samplers,
  cache_prompt, t_max_prompt_ms, t_max_predict_ms}, reading `content`; and
  the same request streamed, read as llama.cpp's stream is (`content`
  appended until `stop` is true).
"""
import glob
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import SRC, Server, check, finish, planted_model  # noqa: E402

KEY = "interop-key"
tmp, planted = planted_model()


def post(srv, path, body, headers):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    c.request("POST", path, body=json.dumps(body), headers=headers)
    r = c.getresponse()
    return c, r


def continue_stream(srv, prefix, suffix, model):
    body = {"model": model, "prompt": prefix, "suffix": suffix, "max_tokens": 24,
            "temperature": 0.01, "stop": CONTINUE_STOPS, "stream": True}
    # frequency_penalty / presence_penalty / top_p are undefined in a default
    # config, and JSON.stringify drops undefined fields.
    c, r = post(srv, "/v1/fim/completions", body,
                {"Content-Type": "application/json", "Accept": "application/json",
                 "x-api-key": KEY, "Authorization": f"Bearer {KEY}"})
    check(r.status == 200, f"Continue: status {r.status}")
    buffer, out, done = r.read().decode("utf-8"), [], False
    c.close()
    for line in buffer.split("\n"):
        if done:
            break
        if line.startswith("data: [DONE]"):
            done = True
            continue
        if not line.startswith("data:"):
            continue
        data = json.loads(line[6:] if line.startswith("data: ") else line[5:])
        check("error" not in data, f"Continue: an error event {data}")
        out.append(data["choices"][0]["delta"]["content"])
    check(done, "Continue: the stream ends with [DONE]")
    return "".join(out), body


def tabby_stream(srv, prefix, suffix, model):
    body = {"model": model, "prompt": prefix, "suffix": suffix, "max_tokens": 24,
            "temperature": 0.1, "stream": True, "presence_penalty": 0.0}
    c, r = post(srv, "/v1/completions", body,
                {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    check(r.status == 200 and r.getheader("Content-Type") == "text/event-stream",
          f"Tabby: status {r.status}")
    out, finished, data_lines = [], False, []
    for raw in r:  # the event-stream framing: data lines, then a blank line
        line = raw.decode("utf-8").rstrip("\n")
        if line.startswith("data:"):
            data_lines.append(line[5:].lstrip(" ") if line.startswith("data: ") else line[5:])
            continue
        if line or not data_lines:
            continue
        chunk = json.loads("\n".join(data_lines))  # serde: a non-JSON event fails
        data_lines = []
        choice = chunk["choices"][0]
        check(isinstance(choice["text"], str) and
              (choice["finish_reason"] is None or isinstance(choice["finish_reason"], str)),
              f"Tabby: a chunk serde would refuse: {chunk}")
        out.append(choice["text"])
        if choice["finish_reason"] is not None:
            finished = True
            break
    c.close()
    check(finished, "Tabby: a finish_reason ends the stream")
    return "".join(out), body


def plain(srv, path, body):
    c, r = post(srv, path, dict(body, stream=False),
                {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    data = json.loads(r.read())
    c.close()
    check(r.status == 200, f"{path}: {r.status} {data}")
    return data


def vscode(srv, prefix, suffix, line, chunks, n_indent):
    body = {"input_prefix": prefix, "input_suffix": suffix, "input_extra": chunks,
            "prompt": line, "n_predict": 24, "top_k": 40, "top_p": 0.99, "stream": False,
            "n_indent": n_indent, "samplers": ["top_k", "top_p", "infill"],
            "cache_prompt": True, "t_max_prompt_ms": 500, "t_max_predict_ms": 2500}
    want = plain(srv, "/infill", body)["content"]
    c, r = post(srv, "/infill", dict(body, stream=True),
                {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
    got, stopped = [], False
    for raw in r:
        text = raw.decode("utf-8").rstrip("\n")
        if text.startswith("data: "):
            ev = json.loads(text[6:])
            got.append(ev["content"])
            if ev["stop"]:
                stopped = True
                break
    c.close()
    check(stopped, "llama.vscode: the stream ends with stop: true")
    return "".join(got), want


# core/autocomplete/templating: stableCodeFimTemplate's stops, then
# getStopTokens' multilineStops and commonStops.
CONTINUE_STOPS = ["<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>", "<|endoftext|>",
                  "</fim_middle>", "</code>", "\n\n", "\r\n\r\n", "/src/", "#- coding: utf-8",
                  "```"]

# The planted model ("abc" -> "defg...z"), with a stop that cuts it, and the
# shipped default model on real code.
cases = [(planted, "planted", "int abc", " = 1;\n"), (planted, "planted", "xy = pqr", "")]
real = os.path.join(SRC, "model", "default")
for path in sorted(glob.glob(os.path.join(SRC, "tests", "data", "real", "*", "**", "*.py"),
                             recursive=True))[:40:10]:
    src = open(path, encoding="utf-8").read()
    cut = len(src) // 2
    cases.append((real, "default", src[max(0, cut - 1500):cut], src[cut:cut + 600]))

servers = {m: Server(m, "--api-key-env", "SCULPT_INTEROP_KEY", env={"SCULPT_INTEROP_KEY": KEY})
           for m in (planted, real)}
for m, name, prefix, suffix in cases:
    srv = servers[m]
    got, body = continue_stream(srv, prefix, suffix, name)
    want = plain(srv, "/v1/fim/completions", body)["choices"][0]["text"]
    check(got == want, f"Continue on {name}: streamed {got!r}, not streamed {want!r}")
    got, body = tabby_stream(srv, prefix, suffix, name)
    want = plain(srv, "/v1/completions", body)["choices"][0]["text"]
    check(got == want, f"Tabby on {name}: streamed {got!r}, not streamed {want!r}")
    head, _, line = prefix.rpartition("\n")
    got, want = vscode(srv, head + "\n" if _ else "", suffix, line,
                       [{"text": "x = 1\n", "time": 0, "filename": "a.py"}], 0)
    check(got == want, f"llama.vscode on {name}: streamed {got!r}, not streamed {want!r}")
# The planted answers are known: the clients' texts are right, not just equal.
got, _ = continue_stream(servers[planted], "int abc", " = 1;\n", "planted")
check(got == "defghijklmnopqrstuvwxyz", f"Continue's text: {got!r}")
got, _ = tabby_stream(servers[planted], "int abc", "", "planted")
check(got == "defghijklmnopqrstuvwxyz", f"Tabby's text: {got!r}")
for srv in servers.values():
    check(srv.stop() == 0, "SIGTERM: exit 0")
finish()

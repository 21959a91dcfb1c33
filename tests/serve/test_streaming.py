"""`sculpt serve`'s streams and shapes (issue 25): increments by default (the
stable left-to-right prefix, stop strings held back until they cannot
begin), whole drafts on request, up to 16 stop strings, GET /v1/models, and
llama.cpp's /infill (input_extra, n_predict 0, response_fields, its
streaming shape). Three models: the planted byte model that fills left to
right ("abc" -> "defg...z"), its mirror that fills right to left (so a
stream can send nothing before the end), and the shipped default model on
real code (tests/data/real), whose order is its own."""
import atexit
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servelib import SRC, Server, check, finish, planted_model  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tools"))
import planted_checkpoints  # noqa: E402

tmp, model = planted_model()
ALPHA = "defghijklmnopqrstuvwxyz"
srv = Server(model)


def pieces_of(events):
    return [json.loads(e)["choices"][0]["text"] for e in events if e != "[DONE]"]


def sse(path, body, server=None):
    """(status, [event payloads]) of a streamed POST, parsed line by line."""
    c = (server or srv).conn()
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    events = []
    for raw in r:
        line = raw.decode().rstrip("\n")
        if line.startswith("data: "):
            events.append(line[6:])
    c.close()
    return r.status, events


# ---- /v1/models ----------------------------------------------------------------
st, _, data = srv.request("GET", "/v1/models")
m = json.loads(data)
check(st == 200 and m["object"] == "list" and len(m["data"]) == 1 and
      m["data"][0]["id"] == "planted-successor-shifted-bytes" and
      m["data"][0]["object"] == "model" and isinstance(m["data"][0]["created"], int),
      f"/v1/models: {st} {m}")
st, hd, _ = srv.request("POST", "/v1/models", "{}")
check(st == 405 and hd.get("allow") == "GET", f"POST /v1/models: {st} {hd}")

# ---- stop strings: up to 16, held back until they cannot begin ------------------
stops = ["s%d" % i for i in range(15)] + ["jkl"]
req = {"prompt": "abc", "max_tokens": 40, "stop": stops}
st, _, res = srv.complete(req)
check(st == 200 and res["choices"][0]["text"] == "defghi" and
      res["choices"][0]["finish_reason"] == "stop", f"16 stops: {st} {res}")
st, events = sse("/v1/fim/completions", dict(req, stream=True))
pieces = pieces_of(events)
check("".join(pieces) == "defghi", f"streamed with a stop: {pieces}")
# "j" (then "jk") could begin "jkl": never sent, though the model wrote them
# one step before the stop was whole.
check(not any("j" in p for p in pieces), f"a stop's start is held back: {pieces}")
# A stop that never completes costs only a delay: "jkx" holds "j", "jk", then
# lets them go.
st, events = sse("/v1/fim/completions", {"prompt": "abc", "max_tokens": 40, "stop": ["jkx"],
                                         "stream": True})
check("".join(pieces_of(events)) == ALPHA, f"an incomplete stop: {pieces_of(events)}")

# ---- right to left: nothing is stable before the end ---------------------------
rtl_dir = tempfile.mkdtemp(prefix="sculpt-rtl-")
atexit.register(shutil.rmtree, rtl_dir, True)
rtl = planted_checkpoints.generate(rtl_dir, "dream",
                                   "predecessor", planted_checkpoints.BYTES)
back = Server(rtl)
req = {"prompt": "", "suffix": "xyz", "max_tokens": 8}
st, _, res = back.complete(req)
check(st == 200 and res["choices"][0]["text"] == "pqrstuvw", f"right to left: {res}")
st, events = sse("/v1/completions", dict(req, stream=True), back)
objs = [json.loads(e) for e in events[:-1]]
check(events[-1] == "[DONE]" and len(objs) == 1 and objs[0]["choices"][0]["text"] == "pqrstuvw" and
      objs[0]["choices"][0]["finish_reason"] == "length",
      f"filled right to left, the stream sends it all at the end: {events}")
st, events = sse("/v1/completions", dict(req, stream=True, stream_drafts=True), back)
drafts = pieces_of(events)
# A draft the loop has not sent yet is replaced by the next (serve_sched.c:
# a slow reader gets fewer events), so a loaded machine skips some (CI sent
# w, vw, tuvw): each one a suffix of the next, longer, the last the answer
# (which the final event repeats).
grown = [d for k, d in enumerate(drafts) if k == 0 or d != drafts[k - 1]]
check(len(grown) >= 2 and grown[-1] == "pqrstuvw" and
      all(len(a) < len(b) and b.endswith(a) for a, b in zip(grown, grown[1:])),
      f"while the drafts show it grow from the right: {drafts}")
back.stop()

# ---- the default model on real code: the increments add up ---------------------
real = Server(os.path.join(SRC, "model", "default"))
files = [p for p in sorted(glob.glob(os.path.join(SRC, "tests", "data", "real", "click", "**",
                                              "*.py"), recursive=True))
         if os.path.getsize(p) > 20000][:3]
cases = 0
for path in files:
    src = open(path, encoding="utf-8").read()
    for cut in (3000,):
        for temp in (0, 0.8):
            body = {"prompt": src[:cut], "suffix": src[cut + 30:], "max_tokens": 16,
                    "temperature": temp, "seed": 11, "stop": ["\n\n\n"]}
            st, _, res = real.complete(body)
            want = res["choices"][0]["text"] if st == 200 else None
            st, events = sse("/v1/fim/completions", dict(body, stream=True), real)
            got = "".join(pieces_of(events))
            check(got == want, f"{os.path.basename(path)}@{cut} t={temp}: {got!r} vs {want!r}")
            cases += 1
check(cases == 6, f"{cases} real cases")

# ---- /infill: llama.cpp's shape ----------------------------------------------------
# llama.vim's request (autoload/llama.vim, llama#fim): the lines before the
# cursor, the current line up to it as `prompt`, the rest as the suffix, and
# ring-buffer chunks as input_extra.
extra = [{"text": "def helper():\n    return 1\n", "time": 0, "filename": "a.py"},
         {"text": "x = 2", "filename": "b.py"}]
infill = {"input_prefix": "int ", "input_suffix": " = 1;\n", "input_extra": extra,
          "prompt": "abc", "n_predict": 40, "stop": [], "n_indent": 0, "top_k": 40,
          "top_p": 0.9, "stream": False, "samplers": ["top_k", "top_p", "infill"],
          "cache_prompt": True, "t_max_prompt_ms": 500, "t_max_predict_ms": 250}
st, _, data = srv.request("POST", "/infill", infill)
r = json.loads(data)
check(st == 200 and r["content"] == ALPHA and r["stop"] is True and r["stop_type"] == "eos" and
      r["stopping_word"] == "" and r["tokens_predicted"] == len(ALPHA) and
      r["model"] == "planted-successor-shifted-bytes" and r["truncated"] is False and
      r["timings"]["predicted_n"] == len(ALPHA) and r["timings"]["predicted_ms"] >= 0,
      f"/infill: {st} {r}")
# The prompt is the chunks (each ending in a newline), the prefix, then the
# current line: the same middle as that prompt through /v1/fim/completions.
joined = extra[0]["text"] + extra[1]["text"] + "\n" + "int " + "abc"
st, _, res = srv.complete({"prompt": joined, "suffix": " = 1;\n", "max_tokens": 40})
check(r["tokens_evaluated"] == res["usage"]["prompt_tokens"] and
      r["content"] == res["choices"][0]["text"], f"/infill = fim: {r} {res}")
# response_fields, as llama.vim asks: each under its whole path.
fields = ["content", "timings/prompt_n", "timings/predicted_ms", "truncated", "tokens_cached",
          "no/such"]
st, _, data = srv.request("POST", "/infill", dict(infill, response_fields=fields))
r = json.loads(data)
check(st == 200 and sorted(r) == sorted(fields[:-1]) and r["content"] == ALPHA and
      isinstance(r["timings/prompt_n"], int), f"response_fields: {r}")
# n_predict 0 (llama.vim's cache warming): an empty answer at once.
st, _, data = srv.request("POST", "/infill", {"input_prefix": "", "input_suffix": "",
                                              "input_extra": extra, "prompt": "",
                                              "n_predict": 0, "response_fields": [""]})
check(st == 200 and json.loads(data) == {}, f"n_predict 0: {st} {data[:200]!r}")
st, _, data = srv.request("POST", "/infill", {"input_prefix": "abc", "n_predict": 0})
r = json.loads(data)
check(st == 200 and r["content"] == "" and r["tokens_predicted"] == 0, f"n_predict 0: {r}")
# A stop string: stop_type "word", the word named.
st, _, data = srv.request("POST", "/infill", {"input_prefix": "abc", "n_predict": 40,
                                              "stop": ["mno"]})
r = json.loads(data)
check(r["content"] == "defghijkl" and r["stop_type"] == "word" and r["stopping_word"] == "mno",
      f"/infill stop: {r}")
# Streamed: increments in `content` with stop false, then stop true with no
# content and no [DONE] (llama.cpp's non-OAI stream).
st, events = sse("/infill", dict(infill, stream=True))
objs = [json.loads(e) for e in events]
check(st == 200 and objs and all(not o["stop"] for o in objs[:-1]) and objs[-1]["stop"] and
      objs[-1]["content"] == "" and "[DONE]" not in events and
      "".join(o["content"] for o in objs) == ALPHA and len(objs) >= 4,
      f"/infill stream: {events[:3]} ... {events[-1:]}")
st, events = sse("/infill", dict(infill, stream=True, stream_drafts=True))
objs = [json.loads(e) for e in events]
check(objs[-1]["stop"] and objs[-1]["content"] == ALPHA and
      all(ALPHA.startswith(o["content"]) for o in objs), f"/infill drafts: {events[-2:]}")
# Bad shapes: 400 with the field named.
for bad, field in ((dict(infill, input_extra="x"), "input_extra"),
                   (dict(infill, input_extra=[{"filename": "a"}]), "input_extra"),
                   (dict(infill, input_prefix=3), "input_prefix"),
                   (dict(infill, n_indent=-1), "n_indent"),
                   (dict(infill, n_predict="8"), "n_predict"),
                   (dict(infill, response_fields="content"), "response_fields"),
                   (dict(infill, stream_drafts=1), "stream_drafts")):
    st, _, data = srv.request("POST", "/infill", bad)
    check(st == 400 and field in json.loads(data)["error"]["message"], f"bad {field}: {st} {data!r}")
st, hd, _ = srv.request("GET", "/infill")
check(st == 405 and hd.get("allow") == "POST", f"GET /infill: {st}")
# The default model through /infill on real code, streamed and not.
src = open(files[0], encoding="utf-8").read()
body = {"input_prefix": src[:900], "input_suffix": src[930:], "prompt": "", "n_predict": 16}
st, _, data = real.request("POST", "/infill", body)
want = json.loads(data)["content"]
st, events = sse("/infill", dict(body, stream=True), real)
check("".join(json.loads(e)["content"] for e in events) == want, "/infill default model stream")
real.stop()
check(srv.stop() == 0, "SIGTERM: exit 0")
finish()

/* fim_shape.c — the remote FIM backend's wire shapes: which provider a
 * URL is, the endpoint path, the request body in that provider's shape, and
 * the answer read back, whole or streamed (SSE, NDJSON), with a refused
 * request's reason and a hint. No I/O here: fim_client.c moves the bytes.
 *
 * The providers' shapes, and where each was read (the mocks in tests/remote
 * reproduce them from the same sources; no real server was run):
 *  - openai-fim: OpenAI's legacy completions (prompt, suffix, max_tokens,
 *    temperature, stop, stream; choices[0].text, finish_reason; streamed as
 *    SSE `data:` events ending with `data: [DONE]`),
 *    https://platform.openai.com/docs/api-reference/completions. Mercury
 *    Coder: POST https://api.inceptionlabs.ai/v1/fim/completions
 *    (https://docs.inceptionlabs.ai, LiteLLM's "inception" provider page).
 *    DeepSeek: POST https://api.deepseek.com/beta/completions, model
 *    required, at most 16 stop strings
 *    (https://api-docs.deepseek.com/api/create-completion). Ollama's OpenAI
 *    layer: POST /v1/completions with suffix, model required
 *    (ollama/ollama openai/openai.go FromCompleteRequest, ToCompleteChunk).
 *  - mistral: POST /v1/fim/completions, model required, the answer in
 *    choices[0].message.content, streamed as choices[0].delta.content
 *    (mistralai/client-python docs/models/fimcompletionrequest.md,
 *    fimcompletionresponse.md, completionresponsestreamchoice.md; 422 is
 *    {"detail": [{"loc", "msg", "type"}]}, httpvalidationerror.md).
 *  - llama.cpp: POST /infill with input_prefix, input_suffix, input_extra
 *    [{filename, text}] and /completion's options (n_predict, stop, stream);
 *    the answer in content, the end in stop/stop_type ("limit" = n_predict
 *    reached); streamed as SSE without [DONE] (ggml-org/llama.cpp
 *    tools/server/README.md "POST /infill", server-context.cpp's infill
 *    handler, server-common.cpp format_prompt_infill).
 *  - ollama: POST /api/generate {model, prompt, suffix, stream, options:
 *    {num_predict, temperature, stop}}; NDJSON lines with response, the last
 *    with done: true and done_reason; a model without the insert capability
 *    is refused with 400 (ollama/ollama api/types.go GenerateRequest,
 *    server/routes.go GenerateHandler, server/images.go CheckCapabilities).
 *  - prompt-template: vLLM refuses any non-null suffix on /v1/completions
 *    with 400 "suffix is not currently supported" (vllm-project/vllm
 *    vllm/entrypoints/openai/completion/serving.py and its renderer); SGLang
 *    uses suffix only with --completion-template and otherwise drops it
 *    (sgl-project/sglang python/sglang/srt/parser/code_completion_parser.py,
 *    serving_completions.py). So the model's own FIM tokens go into the
 *    prompt: Qwen2.5-Coder `<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>`
 *    (QwenLM/Qwen2.5-Coder README, "Code infilling"); DeepSeek-Coder
 *    `<｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜>` (deepseek-ai/DeepSeek-Coder
 *    README, "Code Insertion"); StarCoder `<fim_prefix>P<fim_suffix>S
 *    <fim_middle>` (bigcode-project/starcoder README, "Fill-in-the-middle");
 *    Codestral `[SUFFIX]S[PREFIX]P`, suffix first (mistralai/mistral-common
 *    tokens/tokenizers/instruct.py InstructTokenizerV2.encode_fim).
 */
#define _POSIX_C_SOURCE 200809L
#include "fim_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A JSON string of text; bytes that are not UTF-8 become U+FFFD (a file can
 * hold anything, JSON cannot) and NUL bytes spaces (JSON can carry \u0000,
 * but servers refuse it: sculpt serve answers 400). NULL on OOM. */
static json_t *json_text(const char *text, size_t len) {
  json_t *j = memchr(text, '\0', len) ? NULL : json_stringn(text, len);
  if (j) return j;
  char *out = malloc(len * 3 + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    int lead = sc_utf8_lead((const unsigned char *)text + i, len - i);
    size_t k = (size_t)lead <= len - i ? (size_t)lead : 0;
    if (k == 0 || (k == 1 && text[i] == '\0')) {
      memcpy(out + o, k ? " " : "\xEF\xBF\xBD", k ? 1 : 3);
      o += k ? 1 : 3;
      i++;
      continue;
    }
    memcpy(out + o, text + i, k);
    o += k;
    i += k;
  }
  j = json_stringn(out, o);
  free(out);
  return j;
}


/* ---- providers and templates --------------------------------------------------- */

static const char *const g_provider_names[] = {"auto", "openai-fim", "mistral", "llama.cpp",
                                               "ollama", "prompt-template"};
static const char *const g_template_names[] = {"none", "qwen", "deepseek", "starcoder",
                                               "codestral"};
const char SC_FIM_PROVIDER_NAMES[] =
    "auto, openai-fim, mistral, llama.cpp, ollama, prompt-template";
const char SC_FIM_TEMPLATE_NAMES[] = "qwen, deepseek, starcoder, codestral";

#define N_OF(a) (sizeof a / sizeof a[0])

/* The index of name in names[from, n), or -1. */
static int name_index(const char *const *names, size_t n, size_t from, const char *name) {
  for (size_t i = from; name && i < n; i++)
    if (strcmp(name, names[i]) == 0) return (int)i;
  return -1;
}

bool sc_fim_provider_parse(const char *name, sc_fim_provider *out) {
  int i = name_index(g_provider_names, N_OF(g_provider_names), 0, name);
  if (i >= 0) *out = (sc_fim_provider)i;
  return i >= 0;
}

const char *sc_fim_provider_name(sc_fim_provider p) {
  return (unsigned)p < N_OF(g_provider_names) ? g_provider_names[p] : "?";
}

/* "none" is not a name one can give: no template is no setting. */
bool sc_fim_template_parse(const char *name, sc_fim_template *out) {
  int i = name_index(g_template_names, N_OF(g_template_names), 1, name);
  if (i >= 0) *out = (sc_fim_template)i;
  return i >= 0;
}

const char *sc_fim_template_name(sc_fim_template t) {
  return (unsigned)t < N_OF(g_template_names) ? g_template_names[t] : "?";
}

/* The FIM tokens around the prefix and the suffix, in the order the model
 * was trained on (sources in the file comment). Codestral puts the suffix
 * first: [SUFFIX] suffix [PREFIX] prefix, and writes the middle after it. */
typedef struct fim_tokens {
  const char *pre, *suf, *mid;
  bool suffix_first;
} fim_tokens;

static fim_tokens template_tokens(sc_fim_template t) {
  switch (t) {
  case SC_FIM_TEMPLATE_QWEN: return (fim_tokens){"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", false};
  case SC_FIM_TEMPLATE_DEEPSEEK:
    /* The bars are U+FF5C, the blanks U+2581, as in DeepSeek-Coder's vocabulary. */
    return (fim_tokens){"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
                        "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>",
                        "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", false};
  case SC_FIM_TEMPLATE_STARCODER: return (fim_tokens){"<fim_prefix>", "<fim_suffix>", "<fim_middle>", false};
  case SC_FIM_TEMPLATE_CODESTRAL: return (fim_tokens){"[PREFIX]", "[SUFFIX]", "", true};
  default: return (fim_tokens){"", "", "", false};
  }
}

/* ---- URLs --------------------------------------------------------------------- */
/* URLs are taken apart and put together by libcurl's URL API (CURLU), so
 * that queries, fragments, user:password@ and IPv6 hosts are handled as
 * curl itself will read them. */

typedef struct url_info {
  char *host, *path; /* curl_free'd by url_info_free; path without its query */
  long port;         /* explicit or the scheme's */
} url_info;

static bool url_info_get(const char *url, url_info *u) {
  memset(u, 0, sizeof *u);
  CURLU *h = curl_url();
  char *port = NULL;
  bool ok = h && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
            curl_url_get(h, CURLUPART_HOST, &u->host, 0) == CURLUE_OK &&
            curl_url_get(h, CURLUPART_PATH, &u->path, 0) == CURLUE_OK &&
            curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;
  if (ok) u->port = strtol(port, NULL, 10);
  curl_free(port);
  curl_url_cleanup(h);
  return ok;
}

static void url_info_free(url_info *u) {
  curl_free(u->host);
  curl_free(u->path);
  memset(u, 0, sizeof *u);
}

/* The path's length without trailing slashes. */
static size_t path_trim(const char *p) {
  size_t n = strlen(p);
  while (n > 0 && p[n - 1] == '/') n--;
  return n;
}

/* Whether p[0, n) ends with s (a whole last segment or more). */
static bool path_ends(const char *p, size_t n, const char *s) {
  size_t k = strlen(s);
  return n >= k && memcmp(p + n - k, s, k) == 0 && (n == k || s[0] == '/' || p[n - k - 1] == '/');
}

static bool host_is(const url_info *u, const char *h) {
  return u->host && strcasecmp(u->host, h) == 0;
}

/* Ollama (its default port, or a host named so): its OpenAI layer has
 * /v1/completions, not /v1/fim/completions, and wants a model. */
static bool is_ollama(const url_info *u) {
  return u->port == 11434 || (u->host && strstr(u->host, "ollama"));
}

static bool is_deepseek(const url_info *u, size_t n) {
  return host_is(u, "api.deepseek.com") || path_ends(u->path, n, "/beta") ||
         path_ends(u->path, n, "/beta/completions");
}

static sc_fim_provider detect_provider(const url_info *u, sc_fim_template tmpl) {
  size_t n = path_trim(u->path);
  if (tmpl != SC_FIM_TEMPLATE_NONE) return SC_FIM_PROVIDER_TEMPLATE;
  if (path_ends(u->path, n, "/infill")) return SC_FIM_PROVIDER_LLAMACPP;
  if (path_ends(u->path, n, "/api/generate") || path_ends(u->path, n, "/api"))
    return SC_FIM_PROVIDER_OLLAMA;
  if (host_is(u, "api.mistral.ai") || host_is(u, "codestral.mistral.ai"))
    return SC_FIM_PROVIDER_MISTRAL;
  if (u->port == 11434 && !strstr(u->path, "/v1")) return SC_FIM_PROVIDER_OLLAMA;
  return SC_FIM_PROVIDER_OPENAI;
}

/* The endpoint's path for a URL's path: as given when it already names the
 * endpoint, else the base with the provider's endpoint appended (a trailing
 * /v1 or /beta is the base's own). malloc'd. */
static char *endpoint_path(const url_info *u, sc_fim_provider p) {
  const char *path = u->path;
  size_t n = path_trim(path);
  const char *tail = NULL;
  size_t keep = n;
  switch (p) {
  case SC_FIM_PROVIDER_LLAMACPP:
    if (path_ends(path, n, "/infill")) return strndup(path, n);
    if (path_ends(path, n, "/v1")) keep = n - 3; /* an OpenAI-style base: /infill is beside it */
    tail = "/infill";
    break;
  case SC_FIM_PROVIDER_OLLAMA:
    if (path_ends(path, n, "/api/generate")) return strndup(path, n);
    if (path_ends(path, n, "/v1") || path_ends(path, n, "/api")) keep = n - (path_ends(path, n, "/v1") ? 3 : 4);
    tail = "/api/generate";
    break;
  default: {
    if (path_ends(path, n, "/completions")) return strndup(path, n);
    bool v1 = path_ends(path, n, "/v1");
    if (p == SC_FIM_PROVIDER_TEMPLATE || (p == SC_FIM_PROVIDER_OPENAI && is_ollama(u)))
      tail = v1 ? "/completions" : "/v1/completions";
    else if (p == SC_FIM_PROVIDER_OPENAI && path_ends(path, n, "/beta"))
      tail = "/completions";
    else if (p == SC_FIM_PROVIDER_OPENAI && n == 0 && host_is(u, "api.deepseek.com"))
      tail = "/beta/completions"; /* DeepSeek's FIM is only on its beta base */
    else
      tail = v1 ? "/fim/completions" : "/v1/fim/completions";
  }
  }
  size_t tl = strlen(tail);
  char *out = malloc(keep + tl + 1);
  if (!out) return NULL;
  memcpy(out, path, keep);
  memcpy(out + keep, tail, tl + 1);
  return out;
}

/* The URL with its path replaced (endpoint) or its user:password@ removed
 * (for messages). malloc'd, or NULL. */
static char *url_edit(const char *url, const char *path) {
  CURLU *u = curl_url();
  char *got = NULL, *out = NULL;
  if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) goto done;
  if (path) {
    if (curl_url_set(u, CURLUPART_PATH, path, 0) != CURLUE_OK) goto done;
  } else if (curl_url_set(u, CURLUPART_USER, NULL, 0) != CURLUE_OK ||
             curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK) {
    goto done;
  }
  if (curl_url_get(u, CURLUPART_URL, &got, 0) == CURLUE_OK) out = strdup(got);
done:
  curl_free(got);
  curl_url_cleanup(u);
  return out;
}

char *sc_fim__url_shown(const char *url) { return url_edit(url, NULL); }

sc_status sc_fim__endpoint(const sc_fim_client_options *o, sc_fim_provider *provider,
                           char **endpoint, sc_error *err) {
  *endpoint = NULL;
  url_info u;
  SC_CHECK(url_info_get(o->url, &u), err, SC_ERR_INVALID, "fim: the backend URL cannot be read");
  sc_fim_provider prov = o->provider != SC_FIM_PROVIDER_AUTO ? o->provider
                                                             : detect_provider(&u, o->fim_template);
  size_t pn = path_trim(u.path);
  bool has_model = o->model && o->model[0];
  const char *needs = NULL;
  if (prov == SC_FIM_PROVIDER_MISTRAL) needs = "mistral (Codestral's /v1/fim/completions)";
  else if (prov == SC_FIM_PROVIDER_OLLAMA) needs = "ollama";
  else if (prov == SC_FIM_PROVIDER_OPENAI && is_deepseek(&u, pn)) needs = "openai-fim at DeepSeek";
  else if (prov == SC_FIM_PROVIDER_OPENAI && is_ollama(&u)) needs = "openai-fim at Ollama";
  char *path = needs && !has_model ? NULL : endpoint_path(&u, prov);
  url_info_free(&u);
  if (needs && !has_model)
    return sc_error_set(err, SC_ERR_INVALID,
                        "backend: the %s provider needs a model: set the backend's \"model\" "
                        "(CLI: --backend-model)", needs);
  if (prov == SC_FIM_PROVIDER_TEMPLATE && o->fim_template == SC_FIM_TEMPLATE_NONE) {
    free(path);
    return sc_error_set(err, SC_ERR_INVALID,
                        "backend: the prompt-template provider needs the model's FIM tokens: set "
                        "the backend's \"fimTemplate\" (CLI: --fim-template) to one of %s",
                        SC_FIM_TEMPLATE_NAMES);
  }
  SC_CHECK(path, err, SC_ERR_NOMEM, "out of memory");
  *endpoint = url_edit(o->url, path);
  free(path);
  SC_CHECK(*endpoint, err, SC_ERR_NOMEM, "out of memory");
  *provider = prov;
  return SC_OK;
}

/* ---- the answer ---------------------------------------------------------------- */

/* One answer object (a whole JSON answer, an SSE event or an NDJSON line) in
 * any of the providers' shapes: the text it carries (whole or a piece), and
 * whether it is the last and why it ended. The shapes do not overlap, so one
 * reader serves them all: choices[0].text (OpenAI), choices[0].delta.content
 * and choices[0].message.content (Mistral), content (llama.cpp), response
 * (Ollama). */
typedef struct answer_part {
  const char *text; /* borrowed from the JSON; NULL: none */
  size_t len;
  bool last;
  const char *finish; /* "stop", "length", ...; NULL: not said */
  const char *error;  /* an error the server reported; NULL: none */
  bool draft;         /* a whole refining draft (sculpt serve's `step`), not a piece */
} answer_part;

static void answer_read(json_t *j, answer_part *a) {
  memset(a, 0, sizeof *a);
  json_t *e = json_object_get(j, "error"), *t = NULL;
  if (e) {
    const char *m = json_string_value(json_object_get(e, "message"));
    a->error = m ? m : json_is_string(e) ? json_string_value(e) : "(no message)";
    return;
  }
  json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
  if (ch) {
    t = json_object_get(ch, "text");
    if (!json_is_string(t)) t = json_object_get(json_object_get(ch, "delta"), "content");
    if (!json_is_string(t)) t = json_object_get(json_object_get(ch, "message"), "content");
    const char *f = json_string_value(json_object_get(ch, "finish_reason"));
    if (f) {
      a->last = true;
      a->finish = f;
    }
    a->draft = json_object_get(j, "step") != NULL;
  } else if ((t = json_object_get(j, "content")) && json_is_string(t)) {
    /* llama.cpp: stop is true on the last; stop_type "limit" is n_predict. */
    if (json_is_true(json_object_get(j, "stop"))) {
      const char *st = json_string_value(json_object_get(j, "stop_type"));
      a->last = true;
      a->finish = st && strcmp(st, "limit") == 0 ? "length" : "stop";
    }
  } else if ((t = json_object_get(j, "response")) && json_is_string(t)) {
    if (json_is_true(json_object_get(j, "done"))) {
      const char *dr = json_string_value(json_object_get(j, "done_reason"));
      a->last = true;
      a->finish = dr ? dr : "stop";
    }
  }
  if (json_is_string(t)) {
    a->text = json_string_value(t);
    a->len = json_string_length(t);
  }
}

/* Where the answer is, for messages when it is not. */
static const char *answer_field(sc_fim_provider p) {
  switch (p) {
  case SC_FIM_PROVIDER_MISTRAL: return "choices[0].message.content";
  case SC_FIM_PROVIDER_LLAMACPP: return "content";
  case SC_FIM_PROVIDER_OLLAMA: return "response";
  default: return "choices[0].text";
  }
}

static void stream_fail(sc_fim_call *call, const char *why) {
  if (call->stream_failed) return;
  call->stream_failed = true;
  size_t o = 0;
  for (size_t i = 0; why[i] && o + 1 < sizeof call->stream_err && i < 200; i++)
    call->stream_err[o++] = isprint((unsigned char)why[i]) ? why[i] : ' ';
  call->stream_err[o] = '\0';
}

/* One streamed object (an SSE event's data, an NDJSON line). */
static void stream_object(sc_fim_call *call, const char *data, size_t len) {
  if (call->stream_failed) return;
  json_t *j = json_loadb(data, len, 0, NULL);
  if (!j) {
    stream_fail(call, "an event that is not JSON");
    return;
  }
  answer_part a;
  answer_read(j, &a);
  if (a.error) {
    stream_fail(call, a.error);
  } else {
    if (a.draft) call->drafts = true;
    if (a.text && (a.len || call->drafts)) {
      /* Increments are appended; sculpt serve's refining drafts (an event
       * with `step`, and the final event after them) replace the text. */
      if (call->drafts) call->text_len = 0;
      if (!sc_buf_append(&call->text, &call->text_len, &call->text_cap, 256, a.text, a.len))
        stream_fail(call, "out of memory");
      if (call->first_ms == 0 && call->text_len) call->first_ms = sc_now_ms() - call->t0;
      call->partial_pending = call->partial != NULL;
    }
    if (a.last) {
      call->finished = true;
      snprintf(call->finish, sizeof call->finish, "%s", a.finish ? a.finish : "");
    }
  }
  json_decref(j);
}

/* Dispatches the SSE event gathered so far (HTML's server-sent events:
 * data lines joined by newlines, a blank line ends the event). */
static void sse_dispatch(sc_fim_call *call) {
  if (!call->event_open) return;
  call->event_open = false;
  const char *d = call->event ? call->event : "";
  size_t n = call->event_len;
  call->event_len = 0;
  if (n == 6 && memcmp(d, "[DONE]", 6) == 0) call->finished = true;
  else stream_object(call, d, n);
}

/* One line of the body (no line break). */
static void stream_line(sc_fim_call *call, const char *l, size_t n) {
  if (n && l[n - 1] == '\r') n--;
  if (call->mode == BODY_NDJSON) {
    while (n && isspace((unsigned char)*l)) l++, n--;
    if (n) stream_object(call, l, n);
    return;
  }
  if (n == 0) {
    sse_dispatch(call);
    return;
  }
  if (n >= 5 && memcmp(l, "data:", 5) == 0) {
    l += 5, n -= 5;
    if (n && *l == ' ') l++, n--;
    bool ok = true;
    if (call->event_open) ok = sc_buf_append(&call->event, &call->event_len, &call->event_cap, 256, "\n", 1);
    if (ok) ok = sc_buf_append(&call->event, &call->event_len, &call->event_cap, 256, l, n);
    if (!ok) stream_fail(call, "out of memory");
    call->event_open = true;
  }
  /* Comments (":"), event:, id: and retry: lines carry nothing for us. */
}

/* Feeds the stream reader (fim_impl.h). */
void sc_fim__stream_feed(sc_fim_call *call, bool eof) {
  while (call->parsed < call->resp_len) {
    const char *p = call->resp + call->parsed;
    size_t left = call->resp_len - call->parsed;
    const char *nl = memchr(p, '\n', left);
    if (!nl && !eof) break;
    size_t n = nl ? (size_t)(nl - p) : left;
    stream_line(call, p, n);
    call->parsed += nl ? n + 1 : n;
  }
  if (eof && call->mode == BODY_SSE) sse_dispatch(call);
}

/* The body's first bytes of a 2xx answer decide how it is read: the
 * Content-Type, else what it starts with. Ollama streams NDJSON. */
body_mode sc_fim__body_mode(const sc_fim_call *call) {
  const char *ct = call->content_type;
  if (strstr(ct, "text/event-stream")) return BODY_SSE;
  if (strstr(ct, "ndjson")) return BODY_NDJSON;
  size_t i = 0;
  while (i < call->resp_len && isspace((unsigned char)call->resp[i])) i++;
  if (call->resp_len - i >= 5 && memcmp(call->resp + i, "data:", 5) == 0) return BODY_SSE;
  if (call->c->provider == SC_FIM_PROVIDER_OLLAMA && call->c->stream) return BODY_NDJSON;
  return BODY_JSON;
}

/* The error message a server put in its body: {"error": {"message": ...}}
 * (OpenAI, vLLM, llama.cpp), {"error": "..."} (Ollama), {"detail": "..."} or
 * {"detail": [{"msg": ..., "loc": [...]}]} (FastAPI's 422: Mistral, SGLang),
 * {"message": ...}, or the start of the text. */
static void body_reason(const sc_fim_call *call, char *out, size_t cap) {
  out[0] = '\0';
  if (!call->resp_len) return;
  json_t *j = json_loadb(call->resp, call->resp_len, 0, NULL);
  const char *m = NULL;
  char detail[200];
  if (j) {
    json_t *e = json_object_get(j, "error");
    m = json_string_value(json_object_get(e, "message"));
    if (!m) m = json_string_value(e);
    if (!m) m = json_string_value(json_object_get(j, "detail"));
    json_t *d0 = json_array_get(json_object_get(j, "detail"), 0);
    if (!m && d0) {
      json_t *loc = json_object_get(d0, "loc");
      const char *last = json_string_value(json_array_get(loc, json_array_size(loc) - 1));
      snprintf(detail, sizeof detail, "%s%s%s", last ? last : "", last ? ": " : "",
               json_string_value(json_object_get(d0, "msg")) ? json_string_value(json_object_get(d0, "msg")) : "invalid");
      m = detail;
    }
    if (!m) m = json_string_value(json_object_get(j, "message"));
  }
  const char *src = m ? m : call->resp;
  size_t o = 0;
  for (size_t i = 0; src[i] && o + 1 < cap && i < 200; i++)
    out[o++] = isprint((unsigned char)src[i]) ? src[i] : ' ';
  out[o] = '\0';
  json_decref(j);
}

/* What to check when a server refuses the request (400, 404, 422, 501):
 * the messages providers give for the usual mistakes, else the three
 * things the shape depends on. */
static void refusal_hint(const sc_fim_client *c, long code, const char *reason, char *out,
                         size_t cap) {
  const char *p = sc_fim_provider_name(c->provider);
  if (strstr(reason, "suffix") && strstr(reason, "not") && strstr(reason, "support"))
    snprintf(out, cap, "this server takes no suffix (vLLM): use provider prompt-template with the "
                       "model's fimTemplate (%s)", SC_FIM_TEMPLATE_NAMES);
  else if (strstr(reason, "does not support insert"))
    snprintf(out, cap, "the model cannot fill in the middle (Ollama's insert capability): "
                       "choose a code model whose template has a suffix");
  else if (strstr(reason, "Infill is not supported") || strstr(reason, "infill is not supported"))
    snprintf(out, cap, "the model has no FIM tokens (llama.cpp /infill): load a code model with "
                       "infill support");
  else if (code == 404)
    snprintf(out, cap, "check the URL's path (requests go to %s), the provider (%s) and the "
                       "model (%s)", c->shown, p, c->model ? c->model : "none set");
  else
    snprintf(out, cap, "the request's shape is the %s provider's; check the provider, the "
                       "model (%s) and the endpoint (%s)", p, c->model ? c->model : "none set",
             c->shown);
}

void sc_fim__refusal(const sc_fim_call *call, long code, char *reason, size_t reason_cap,
                     char *hint, size_t hint_cap) {
  body_reason(call, reason, reason_cap);
  hint[0] = '\0';
  if (code == 400 || code == 404 || code == 422 || code == 501)
    refusal_hint(call->c, code, reason, hint, hint_cap);
}

/* A 2xx answer into res (fim_impl.h). */
void sc_fim__answer_result(sc_fim_call *call, sc_fim_result *res, json_t **j) {
  sc_fim_client *c = call->c;
  *j = NULL;
  if (call->mode == BODY_SSE || call->mode == BODY_NDJSON) {
    sc_fim__stream_feed(call, true);
    res->streamed = true;
    res->status = SC_ERR_IO;
    if (call->stream_failed) {
      sc_error_set(&res->err, SC_ERR_IO, "backend %s: the stream reported an error: %s",
                   c->shown, call->stream_err);
    } else if (!call->finished) {
      sc_error_set(&res->err, SC_ERR_IO, "backend %s: the stream ended before its last event",
                   c->shown);
    } else {
      res->status = SC_OK;
      res->text = call->text ? call->text : "";
      res->text_len = call->text_len;
      snprintf(res->finish_reason, sizeof res->finish_reason, "%s", call->finish);
    }
    return;
  }
  json_error_t jerr;
  *j = json_loadb(call->resp ? call->resp : "", call->resp_len, 0, &jerr);
  answer_part a;
  answer_read(*j, &a);
  if (a.error) {
    res->status = SC_ERR_IO;
    sc_error_set(&res->err, SC_ERR_IO, "backend %s answered an error: %.200s", c->shown, a.error);
  } else if (!a.text) {
    res->status = SC_ERR_FORMAT;
    sc_error_set(&res->err, SC_ERR_FORMAT, "backend %s: the answer has no %s%s%s", c->shown,
                 answer_field(c->provider), *j ? "" : ": ", *j ? "" : jerr.text);
  } else {
    res->status = SC_OK;
    res->text = a.text;
    res->text_len = a.len;
    snprintf(res->finish_reason, sizeof res->finish_reason, "%s", a.finish ? a.finish : "");
  }
}

/* ---- requests ---------------------------------------------------------------------- */

/* The text before the hole as one string: the extra chunks, then the
 * prompt; with a template, wrapped in the model's FIM tokens with the suffix
 * (prompt-template sends no suffix field). NULL on OOM. */
static json_t *joined_prompt(const sc_fim_client *c, const sc_fim_request *req, bool with_extra) {
  size_t n = req->prompt_len;
  if (with_extra)
    for (int i = 0; i < req->n_extra; i++) n += req->extra[i].text_len;
  fim_tokens t = template_tokens(c->provider == SC_FIM_PROVIDER_TEMPLATE ? c->tmpl
                                                                        : SC_FIM_TEMPLATE_NONE);
  size_t tl = strlen(t.pre) + strlen(t.suf) + strlen(t.mid);
  if (c->provider == SC_FIM_PROVIDER_TEMPLATE) n += tl + req->suffix_len;
  char *buf = malloc(n + 1);
  if (!buf) return NULL;
  size_t o = 0;
#define PUT(p, l) (memcpy(buf + o, (p), (l)), o += (l))
  if (c->provider == SC_FIM_PROVIDER_TEMPLATE && t.suffix_first) {
    PUT(t.suf, strlen(t.suf));
    if (req->suffix_len) PUT(req->suffix, req->suffix_len);
  }
  PUT(t.pre, strlen(t.pre));
  for (int i = 0; with_extra && i < req->n_extra; i++)
    if (req->extra[i].text_len) PUT(req->extra[i].text, req->extra[i].text_len);
  if (req->prompt_len) PUT(req->prompt, req->prompt_len);
  if (c->provider == SC_FIM_PROVIDER_TEMPLATE && !t.suffix_first) {
    PUT(t.suf, strlen(t.suf));
    if (req->suffix_len) PUT(req->suffix, req->suffix_len);
  }
  PUT(t.mid, strlen(t.mid));
#undef PUT
  json_t *j = json_text(buf, o);
  free(buf);
  return j;
}

/* Sets key to a new value, failing on a NULL value (out of memory). */
static bool put(json_t *o, const char *key, json_t *v) {
  return v && json_object_set_new(o, key, v) == 0;
}

/* The request body in the provider's shape (see the file comment). */
char *sc_fim__request_body(const sc_fim_client *c, const sc_fim_request *req) {
  json_t *body = json_object(), *stop = json_array();
  bool ok = body && stop;
  for (int i = 0; ok && i < req->n_stop; i++)
    if (req->stop[i]) ok = json_array_append_new(stop, json_text(req->stop[i], strlen(req->stop[i]))) == 0;
  const char *sfx = req->suffix ? req->suffix : "";
  switch (c->provider) {
  case SC_FIM_PROVIDER_LLAMACPP: {
    /* The snippets go apart (input_extra): llama.cpp places them before the
     * FIM prefix, in its repo-level pattern when the model has one. */
    json_t *extra = json_array();
    ok = ok && extra;
    for (int i = 0; ok && i < req->n_extra; i++) {
      const sc_fim_chunk *x = &req->extra[i];
      json_t *ch = json_object();
      if (!(ch && put(ch, "text", json_text(x->text ? x->text : "", x->text_len)) &&
            (!x->filename_len || put(ch, "filename", json_text(x->filename, x->filename_len))))) {
        json_decref(ch);
        ok = false;
      } else {
        ok = json_array_append_new(extra, ch) == 0; /* taken even on failure */
      }
    }
    if (ok && c->model) ok = put(body, "model", json_string(c->model)); /* router mode */
    ok = ok && put(body, "input_prefix", json_text(req->prompt ? req->prompt : "", req->prompt_len)) &&
         put(body, "input_suffix", json_text(sfx, req->suffix_len));
    if (ok && req->n_extra) ok = json_object_set(body, "input_extra", extra) == 0;
    json_decref(extra);
    if (ok && req->max_tokens > 0) ok = put(body, "n_predict", json_integer(req->max_tokens));
    if (ok) ok = put(body, "temperature", json_real(req->temperature));
    if (ok && req->n_stop > 0) ok = json_object_set(body, "stop", stop) == 0;
    if (ok) ok = put(body, "stream", json_boolean(c->stream));
    break;
  }
  case SC_FIM_PROVIDER_OLLAMA: {
    json_t *opt = json_object();
    ok = ok && opt && put(body, "model", json_string(c->model)) &&
         put(body, "prompt", joined_prompt(c, req, true)) &&
         put(body, "suffix", json_text(sfx, req->suffix_len)) &&
         put(body, "stream", json_boolean(c->stream));
    if (ok && req->max_tokens > 0) ok = put(opt, "num_predict", json_integer(req->max_tokens));
    if (ok) ok = put(opt, "temperature", json_real(req->temperature));
    if (ok && req->n_stop > 0) ok = json_object_set(opt, "stop", stop) == 0;
    if (ok) ok = json_object_set(body, "options", opt) == 0;
    json_decref(opt);
    break;
  }
  default:
    /* openai-fim, mistral, prompt-template: the completions shape; the
     * template carries the suffix inside the prompt instead. */
    if (ok && c->model) ok = put(body, "model", json_string(c->model));
    if (ok) ok = put(body, "prompt", joined_prompt(c, req, true));
    if (ok && c->provider != SC_FIM_PROVIDER_TEMPLATE)
      ok = put(body, "suffix", json_text(sfx, req->suffix_len));
    if (ok && req->max_tokens > 0) ok = put(body, "max_tokens", json_integer(req->max_tokens));
    if (ok) ok = put(body, "temperature", json_real(req->temperature));
    if (ok && req->n_stop > 0) ok = json_object_set(body, "stop", stop) == 0;
    if (ok) ok = put(body, "stream", json_boolean(c->stream));
  }
  char *text = ok ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  json_decref(stop);
  return text;
}


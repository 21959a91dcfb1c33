/* fim_client.c — the remote FIM backend: fill-in-the-middle requests in
 * the shape of the provider behind the URL, over HTTP through libcurl's multi
 * interface, driven by a libev loop, with streamed answers read as they
 * arrive.
 *
 * How the two meet (libcurl's "multi_socket" API, see curl's
 * docs/libcurl/curl_multi_socket_action.3 and the CURLMOPT_SOCKETFUNCTION /
 * CURLMOPT_TIMERFUNCTION pages): curl tells us which sockets to watch for
 * what (sock_cb -> one ev_io each) and when it next needs a call (timer_cb ->
 * one ev_timer); when either fires we hand it back with
 * curl_multi_socket_action, then collect finished transfers and hand the
 * streamed drafts out. Nothing here ever waits, so the loop never blocks.
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
 *
 * The API key only ever goes into the Authorization header. Error texts are
 * scrubbed of it (a server could echo a header back), and the endpoint in
 * messages has any user:password@ removed. */
#define _POSIX_C_SOURCE 200809L
#include "net.h"

#include <ctype.h>
#include <curl/curl.h>
#include <ev.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_ANSWER (16u << 20) /* bytes; a FIM answer is small, refuse floods */

typedef struct sock_w {
  ev_io io;
  curl_socket_t fd;
  sc_fim_client *c;
  struct sock_w *prev, *next;
} sock_w;

/* How the body of a 2xx answer is read. */
typedef enum body_mode { BODY_UNKNOWN, BODY_JSON, BODY_SSE, BODY_NDJSON } body_mode;

struct sc_fim_call {
  sc_fim_client *c;
  CURL *easy;
  char *body;
  char *resp; /* every byte of the answer (bounded by MAX_ANSWER) */
  size_t resp_len, resp_cap;
  bool resp_overflow;
  long retry_after_ms; /* from the last answer's Retry-After, -1: none */
  char content_type[64];
  int tries;
  double t0;
  bool in_multi;
  ev_timer retry; /* waiting to try again */
  sc_fim_done_fn done;
  sc_fim_partial_fn partial;
  void *user;
  char errbuf[CURL_ERROR_SIZE];
  /* The streamed answer, read as it arrives (write_cb). */
  body_mode mode;
  size_t parsed;       /* bytes of resp the stream reader has consumed */
  char *event;         /* an SSE event's data lines so far */
  size_t event_len, event_cap;
  bool event_open;     /* a data: line came since the last dispatch */
  char *text;          /* the answer so far */
  size_t text_len, text_cap;
  bool finished;       /* the stream's last event ([DONE], a finish_reason,
                          llama.cpp's stop, Ollama's done) was seen */
  bool drafts;         /* events carry whole drafts (sculpt serve's `step`) */
  bool stream_failed;  /* an error inside the stream, or out of memory */
  char stream_err[256];
  char finish[16];
  double first_ms;
  bool partial_pending; /* the text changed: partial runs after the socket action */
  sc_fim_call *prev, *next;
};

struct sc_fim_client {
  struct ev_loop *loop;
  CURLM *multi;
  ev_timer timer;
  char *endpoint; /* where requests go */
  char *shown;    /* the endpoint for messages, without user:password@ */
  char *model;
  char *key;      /* NULL: no Authorization header */
  struct curl_slist *headers;
  int timeout_ms, max_tries, backoff_ms, max_backoff_ms;
  sc_fim_provider provider;
  sc_fim_template tmpl;
  bool stream;
  sc_fim_call *calls;
  sock_w *socks;
};

/* ---- small helpers ------------------------------------------------------------ */

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init = CURLE_OK;
static void curl_init_once(void) { g_curl_init = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* Masks the key in msg, in place: each occurrence becomes "***" (fewer
 * stars for a shorter key, so that msg never grows past its buffer, and the
 * search goes on after the mask, which may itself match a key like "*");
 * then a tail of msg that begins the key (a message cut inside it, e.g. a
 * server's echo truncated) is masked too, from 4 bytes on. */
static void scrub(const sc_fim_client *c, char *msg) {
  if (!c->key || !c->key[0]) return;
  size_t kl = strlen(c->key), ml = kl < 3 ? kl : 3;
  char *from = msg, *p;
  while ((p = strstr(from, c->key))) {
    memset(p, '*', ml);
    memmove(p + ml, p + kl, strlen(p + kl) + 1);
    from = p + ml;
  }
  size_t n = strlen(msg);
  for (size_t l = kl - 1 < n ? kl - 1 : n; l >= 4; l--) {
    if (memcmp(msg + n - l, c->key, l) == 0) {
      memcpy(msg + n - l, "***", 4);
      break;
    }
  }
}

/* The length of a valid UTF-8 sequence at s[i], or 0 (RFC 3629 table 3-7). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t i) {
  unsigned char b = s[i];
  if (b < 0x80) return 1;
  size_t k;
  unsigned lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) k = 2;
  else if (b >= 0xE0 && b <= 0xEF) {
    k = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    k = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + k > n) return 0;
  if (s[i + 1] < lo || s[i + 1] > hi) return 0;
  for (size_t j = 2; j < k; j++)
    if (s[i + j] < 0x80 || s[i + j] > 0xBF) return 0;
  return k;
}

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
    size_t k = utf8_seq((const unsigned char *)text, len, i);
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

/* Reads the complete lines of a streamed body that arrived; at the end
 * (eof), the rest too. */
static void stream_feed(sc_fim_call *call, bool eof) {
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
static body_mode body_mode_of(const sc_fim_call *call) {
  const char *ct = call->content_type;
  if (strstr(ct, "text/event-stream")) return BODY_SSE;
  if (strstr(ct, "ndjson")) return BODY_NDJSON;
  size_t i = 0;
  while (i < call->resp_len && isspace((unsigned char)call->resp[i])) i++;
  if (call->resp_len - i >= 5 && memcmp(call->resp + i, "data:", 5) == 0) return BODY_SSE;
  if (call->c->provider == SC_FIM_PROVIDER_OLLAMA && call->c->stream) return BODY_NDJSON;
  return BODY_JSON;
}

/* ---- curl <-> libev -------------------------------------------------------------- */

static void collect(sc_fim_client *c);
static void run_partials(sc_fim_client *c);

static void io_cb(struct ev_loop *loop, ev_io *w, int revents) {
  sock_w *s = w->data;
  sc_fim_client *c = s->c;
  curl_socket_t fd = s->fd; /* s may be freed inside socket_action */
  int action = (revents & EV_READ ? CURL_CSELECT_IN : 0) | (revents & EV_WRITE ? CURL_CSELECT_OUT : 0);
  int running = 0;
  curl_multi_socket_action(c->multi, fd, action, &running);
  collect(c);
  run_partials(c);
}

static void timer_fire(struct ev_loop *loop, ev_timer *w, int revents) {
  sc_fim_client *c = w->data;
  int running = 0;
  curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  collect(c);
  run_partials(c);
}

static int sock_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  sc_fim_client *c = userp;
  sock_w *s = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (s) {
      ev_io_stop(c->loop, &s->io);
      if (s->prev) s->prev->next = s->next;
      else c->socks = s->next;
      if (s->next) s->next->prev = s->prev;
      free(s);
    }
    return 0;
  }
  int events = (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s) return -1; /* curl fails the transfer */
    s->c = c;
    s->fd = fd;
    ev_io_init(&s->io, io_cb, fd, events);
    s->io.data = s;
    s->next = c->socks;
    if (c->socks) c->socks->prev = s;
    c->socks = s;
    curl_multi_assign(c->multi, fd, s);
  } else {
    ev_io_stop(c->loop, &s->io);
    ev_io_set(&s->io, fd, events);
  }
  ev_io_start(c->loop, &s->io);
  return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp) {
  sc_fim_client *c = userp;
  ev_timer_stop(c->loop, &c->timer);
  if (timeout_ms >= 0) {
    /* 0 means "as soon as possible": curl asks not to be called from here. */
    ev_timer_set(&c->timer, (double)timeout_ms / 1000.0, 0.0);
    ev_timer_start(c->loop, &c->timer);
  }
  return 0;
}

static size_t write_cb(char *data, size_t size, size_t n, void *user) {
  sc_fim_call *call = user;
  size_t len = size * n;
  if (call->resp_len + len > MAX_ANSWER) {
    call->resp_overflow = true;
    return 0; /* curl stops with CURLE_WRITE_ERROR */
  }
  if (!sc_buf_append(&call->resp, &call->resp_len, &call->resp_cap, 4096, data, len)) return 0;
  /* A 2xx answer that streams is read as it arrives; anything else whole,
   * at the end. (No user code runs here: curl forbids removing a transfer
   * from inside its own callback, so drafts go out after the socket action,
   * run_partials.) */
  if (call->mode == BODY_UNKNOWN) {
    long code = 0;
    char *ct = NULL;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(call->easy, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(call->content_type, sizeof call->content_type, "%s", ct ? ct : "");
    call->mode = code >= 200 && code <= 299 ? body_mode_of(call) : BODY_JSON;
  }
  if (call->mode == BODY_SSE || call->mode == BODY_NDJSON) stream_feed(call, false);
  return len;
}

/* Retry-After: delta-seconds or an HTTP-date (RFC 9110 section 10.2.3). */
static size_t header_cb(char *data, size_t size, size_t n, void *user) {
  sc_fim_call *call = user;
  size_t len = size * n;
  static const char name[] = "retry-after:";
  if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
    char v[128];
    size_t vl = len - (sizeof name - 1);
    if (vl >= sizeof v) vl = sizeof v - 1;
    memcpy(v, data + sizeof name - 1, vl);
    v[vl] = '\0';
    char *p = v;
    while (*p == ' ' || *p == '\t') p++;
    size_t e = strlen(p);
    while (e > 0 && isspace((unsigned char)p[e - 1])) p[--e] = '\0';
    if (*p && strspn(p, "0123456789") == e) {
      long s = e > 6 ? 999999 : strtol(p, NULL, 10);
      call->retry_after_ms = s * 1000;
    } else if (*p) {
      time_t when = curl_getdate(p, NULL);
      if (when != (time_t)-1) {
        double d = difftime(when, time(NULL));
        call->retry_after_ms = d > 0 ? (long)(d > 999999 ? 999999000.0 : d * 1000) : 0;
      }
    }
  } else if (len > 5 && strncmp(data, "HTTP/", 5) == 0) {
    call->retry_after_ms = -1; /* a new response (after a redirect or 100) */
  }
  return len;
}

/* ---- calls ------------------------------------------------------------------------ */

static void call_free(sc_fim_call *call) {
  if (call->easy) curl_easy_cleanup(call->easy);
  free(call->body);
  free(call->resp);
  free(call->event);
  free(call->text);
  free(call);
}

/* Unlinks the call, runs its callback once, frees it. */
static void call_finish(sc_fim_call *call, sc_fim_result *res) {
  sc_fim_client *c = call->c;
  if (call->in_multi) {
    /* An unfinished transfer's connection is closed, not kept for reuse. */
    curl_multi_remove_handle(c->multi, call->easy);
    call->in_multi = false;
  }
  ev_timer_stop(c->loop, &call->retry);
  if (call->prev) call->prev->next = call->next;
  else c->calls = call->next;
  if (call->next) call->next->prev = call->prev;
  res->tries = call->tries;
  res->ms = sc_now_ms() - call->t0;
  res->first_ms = call->first_ms;
  res->provider = c->provider;
  if (res->status != SC_OK) scrub(c, res->err.msg);
  if (res->status == SC_OK)
    SC_LOG_DEBUG("fim: %s answered %zu bytes in %.0f ms (%d tr%s)%s%s", c->shown, res->text_len,
                 res->ms, res->tries, res->tries == 1 ? "y" : "ies",
                 res->streamed ? ", streamed" : "", res->truncated ? ", cut off" : "");
  else if (res->status != SC_ERR_CANCELLED)
    SC_LOG_DEBUG("fim: %s", res->err.msg);
  call->done(call->user, res);
  call_free(call);
}

static bool call_start(sc_fim_call *call, sc_error *err) {
  sc_fim_client *c = call->c;
  call->resp_len = 0;
  call->resp_overflow = false;
  call->retry_after_ms = -1;
  call->errbuf[0] = '\0';
  call->mode = BODY_UNKNOWN;
  call->parsed = call->event_len = call->text_len = 0;
  call->event_open = call->finished = call->drafts = call->stream_failed = false;
  call->partial_pending = false;
  call->finish[0] = call->stream_err[0] = call->content_type[0] = '\0';
  call->tries++;
  CURLMcode mc = curl_multi_add_handle(c->multi, call->easy);
  if (mc != CURLM_OK) {
    sc_error_set(err, SC_ERR_INTERNAL, "fim: cannot start a transfer: %s", curl_multi_strerror(mc));
    return false;
  }
  call->in_multi = true;
  return true;
}

static void retry_fire(struct ev_loop *loop, ev_timer *w, int revents) {
  sc_fim_call *call = w->data;
  sc_fim_result res = {0};
  if (!call_start(call, &res.err)) {
    res.status = res.err.status;
    call_finish(call, &res);
  }
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

/* A 2xx answer, whole or streamed, into res (its text borrowed from call or
 * from *j, which the caller frees after the callback). */
static void answer_result(sc_fim_call *call, sc_fim_result *res, json_t **j) {
  sc_fim_client *c = call->c;
  *j = NULL;
  if (call->mode == BODY_SSE || call->mode == BODY_NDJSON) {
    stream_feed(call, true);
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

/* A transfer ended: answer, retry, or fail. */
static void call_ended(sc_fim_call *call, CURLcode rc) {
  sc_fim_client *c = call->c;
  curl_multi_remove_handle(c->multi, call->easy);
  call->in_multi = false;
  sc_fim_result res = {0};
  long code = 0;
  curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &code);
  res.http_status = (int)code;
  if (rc != CURLE_OK) {
    res.status = SC_ERR_IO;
    res.unreachable = code == 0;
    const char *why = call->errbuf[0] ? call->errbuf : curl_easy_strerror(rc);
    if (call->resp_overflow)
      sc_error_set(&res.err, SC_ERR_IO, "backend %s: the answer is over %u bytes", c->shown,
                   MAX_ANSWER);
    else if (rc == CURLE_OPERATION_TIMEDOUT)
      sc_error_set(&res.err, SC_ERR_IO, "backend %s timed out after %d ms", c->shown,
                   c->timeout_ms);
    else if (code != 0)
      sc_error_set(&res.err, SC_ERR_IO, "backend %s: the answer broke off: %s", c->shown, why);
    else
      sc_error_set(&res.err, SC_ERR_IO, "backend %s is unreachable: %s", c->shown, why);
    call_finish(call, &res);
    return;
  }
  /* 501 (llama.cpp: a model without FIM tokens) and 505 will not change. */
  if ((code == 429 || code >= 500) && code != 501 && code != 505) {
    if (call->tries < c->max_tries) {
      long delay = c->backoff_ms;
      for (int i = 1; i < call->tries && delay < c->max_backoff_ms; i++) delay *= 2;
      if (call->retry_after_ms >= 0) delay = call->retry_after_ms;
      if (delay > c->max_backoff_ms) delay = c->max_backoff_ms;
      SC_LOG_DEBUG("fim: %s: HTTP %ld; try %d of %d in %ld ms", c->shown, code,
                   call->tries + 1, c->max_tries, delay);
      ev_timer_set(&call->retry, (double)delay / 1000.0, 0.0);
      ev_timer_start(c->loop, &call->retry);
      return;
    }
  }
  if (code < 200 || code > 299) {
    char reason[256], hint[320] = "";
    body_reason(call, reason, sizeof reason);
    if (code == 400 || code == 404 || code == 422 || code == 501)
      refusal_hint(c, code, reason, hint, sizeof hint);
    res.status = SC_ERR_IO;
    sc_error_set(&res.err, SC_ERR_IO, "backend %s answered HTTP %ld%s%s%s%s%s%s", c->shown, code,
                 call->tries > 1 ? " (after retries)" : "", reason[0] ? ": " : "", reason,
                 hint[0] ? " (hint: " : "", hint, hint[0] ? ")" : "");
    call_finish(call, &res);
    return;
  }
  json_t *j = NULL;
  answer_result(call, &res, &j);
  res.truncated = res.status == SC_OK && strcmp(res.finish_reason, "length") == 0;
  call_finish(call, &res); /* the text lives until the callback returns */
  json_decref(j);
}

static void collect(sc_fim_client *c) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(c->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    sc_fim_call *call = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&call);
    CURLcode rc = m->data.result;
    if (call) call_ended(call, rc);
  }
}

/* The drafts that changed during the socket action, one call at a time: a
 * callback may finish or cancel any call, so the list is walked afresh. */
static void run_partials(sc_fim_client *c) {
  for (;;) {
    sc_fim_call *p = c->calls;
    while (p && !p->partial_pending) p = p->next;
    if (!p) return;
    p->partial_pending = false;
    if (!p->stream_failed) p->partial(p->user, p, p->text ? p->text : "", p->text_len);
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
static char *request_body(const sc_fim_client *c, const sc_fim_request *req) {
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

/* ---- public ------------------------------------------------------------------------ */

sc_status sc_fim_client_new(struct ev_loop *loop, const sc_fim_client_options *o,
                            sc_fim_client **out, sc_error *err) {
  *out = NULL;
  SC_CHECK(loop && o && o->url && o->url[0], err, SC_ERR_INVALID, "fim: a backend URL is needed");
  SC_CHECK(strncmp(o->url, "http://", 7) == 0 || strncmp(o->url, "https://", 8) == 0, err,
           SC_ERR_INVALID, "fim: the backend URL must start with http:// or https://");
  pthread_once(&g_curl_once, curl_init_once);
  SC_CHECK(g_curl_init == CURLE_OK, err, SC_ERR_INTERNAL, "fim: libcurl failed to start: %s",
           curl_easy_strerror(g_curl_init));
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
  bool no_template = prov == SC_FIM_PROVIDER_TEMPLATE && o->fim_template == SC_FIM_TEMPLATE_NONE;
  char *path = needs && !has_model ? NULL : endpoint_path(&u, prov);
  url_info_free(&u);
  if (needs && !has_model)
    return sc_error_set(err, SC_ERR_INVALID,
                        "backend: the %s provider needs a model: set the backend's \"model\" "
                        "(CLI: --backend-model)", needs);
  if (no_template) {
    free(path);
    return sc_error_set(err, SC_ERR_INVALID,
                        "backend: the prompt-template provider needs the model's FIM tokens: set "
                        "the backend's \"fimTemplate\" (CLI: --fim-template) to one of %s",
                        SC_FIM_TEMPLATE_NAMES);
  }
  SC_CHECK(path, err, SC_ERR_NOMEM, "out of memory");
  sc_fim_client *c = calloc(1, sizeof *c);
  if (!c) {
    free(path);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  c->loop = loop;
  c->provider = prov;
  c->tmpl = o->fim_template;
  c->stream = !o->no_stream;
  c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
  c->max_tries = o->max_tries > 0 ? o->max_tries : 4;
  c->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : 200;
  c->max_backoff_ms = o->max_backoff_ms > 0 ? o->max_backoff_ms : 10000;
  const char *env = o->api_key_env && o->api_key_env[0] ? o->api_key_env : SC_FIM_DEFAULT_KEY_ENV;
  const char *key = o->api_key && o->api_key[0] ? o->api_key : getenv(env);
  bool ok = (c->endpoint = url_edit(o->url, path)) && (c->shown = url_edit(c->endpoint, NULL));
  free(path);
  if (ok && has_model) ok = (c->model = strdup(o->model)) != NULL;
  if (ok && key && key[0]) ok = (c->key = strdup(key)) != NULL;
  struct curl_slist *h = NULL;
  if (ok) {
    /* What the answer may be: a stream in the provider's framing, or JSON
     * (a server may answer an error as JSON to a streamed request). */
    const char *accept = !c->stream ? "Accept: application/json"
                         : prov == SC_FIM_PROVIDER_OLLAMA
                             ? "Accept: application/x-ndjson, application/json"
                             : "Accept: text/event-stream, application/json";
    const char *fixed[] = {"Content-Type: application/json", accept,
                           "Expect:" /* no 100-continue round trip */};
    for (size_t i = 0; ok && i < sizeof fixed / sizeof fixed[0]; i++) {
      struct curl_slist *n = curl_slist_append(h, fixed[i]);
      if (n) h = n;
      else ok = false;
    }
  }
  if (ok && c->key) {
    /* A key with a line break would inject headers: refuse it. */
    if (strpbrk(c->key, "\r\n")) {
      curl_slist_free_all(h);
      c->headers = NULL;
      sc_fim_client_free(c);
      return sc_error_set(err, SC_ERR_INVALID, "fim: the API key contains a line break");
    }
    size_t n = strlen(c->key) + sizeof "Authorization: Bearer ";
    char *line = malloc(n);
    if (line) {
      snprintf(line, n, "Authorization: Bearer %s", c->key);
      struct curl_slist *nl = curl_slist_append(h, line);
      memset(line, 0, n);
      free(line);
      if (nl) h = nl;
      else ok = false;
    } else {
      ok = false;
    }
  }
  c->headers = h;
  if (ok) ok = (c->multi = curl_multi_init()) != NULL;
  if (!ok) {
    sc_fim_client_free(c);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
  ev_timer_init(&c->timer, timer_fire, 0.0, 0.0);
  c->timer.data = c;
  *out = c;
  return SC_OK;
}

void sc_fim_client_free(sc_fim_client *c) {
  if (!c) return;
  while (c->calls) {
    sc_fim_result res = {0};
    res.status = SC_ERR_CANCELLED;
    sc_error_set(&res.err, SC_ERR_CANCELLED, "cancelled: the backend client was closed");
    call_finish(c->calls, &res);
  }
  if (c->multi) curl_multi_cleanup(c->multi);
  /* Sockets curl did not hand back on cleanup. */
  while (c->socks) {
    sock_w *s = c->socks;
    c->socks = s->next;
    ev_io_stop(c->loop, &s->io);
    free(s);
  }
  if (c->loop) ev_timer_stop(c->loop, &c->timer);
  curl_slist_free_all(c->headers);
  if (c->key) memset(c->key, 0, strlen(c->key));
  free(c->key);
  free(c->endpoint);
  free(c->shown);
  free(c->model);
  free(c);
}

const char *sc_fim_client_endpoint(const sc_fim_client *c) { return c->shown; }

sc_fim_provider sc_fim_client_provider(const sc_fim_client *c) { return c->provider; }

sc_fim_call *sc_fim_client_submit(sc_fim_client *c, const sc_fim_request *req,
                                  sc_fim_done_fn done, void *user, sc_error *err) {
  if (!c || !req || !done || (!req->prompt && req->prompt_len) ||
      (!req->suffix && req->suffix_len) || (req->n_extra > 0 && !req->extra)) {
    sc_error_set(err, SC_ERR_INVALID, "fim: bad arguments");
    return NULL;
  }
  char *text = request_body(c, req);
  sc_fim_call *call = text ? calloc(1, sizeof *call) : NULL;
  if (call) call->easy = curl_easy_init();
  if (!call || !call->easy) {
    if (call) call_free(call);
    free(text);
    sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  call->c = c;
  call->body = text;
  call->done = done;
  call->partial = req->partial;
  call->user = user;
  call->t0 = sc_now_ms();
  ev_timer_init(&call->retry, retry_fire, 0.0, 0.0);
  call->retry.data = call;
  CURL *e = call->easy;
  curl_easy_setopt(e, CURLOPT_URL, c->endpoint);
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(call->body));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, call);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)call);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->timeout_ms < 10000 ? c->timeout_ms : 10000));
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_USERAGENT, "sculpt");
  /* Redirects would resend the key elsewhere; FIM endpoints do not redirect. */
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  call->next = c->calls;
  if (c->calls) c->calls->prev = call;
  c->calls = call;
  if (!call_start(call, err)) {
    if (call->next) call->next->prev = NULL;
    c->calls = call->next;
    call_free(call);
    return NULL;
  }
  return call;
}

void sc_fim_call_cancel(sc_fim_call *call) {
  if (!call) return;
  sc_fim_result res = {0};
  res.status = SC_ERR_CANCELLED;
  sc_error_set(&res.err, SC_ERR_CANCELLED, "cancelled");
  call_finish(call, &res);
}

void sc_fim_call_finish(sc_fim_call *call) {
  if (!call) return;
  sc_fim_result res = {0};
  long code = 0;
  curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &code);
  res.http_status = (int)code;
  res.status = SC_OK;
  res.streamed = call->mode == BODY_SSE || call->mode == BODY_NDJSON;
  res.finished_early = true;
  res.text = call->text ? call->text : "";
  res.text_len = call->text_len;
  call_finish(call, &res);
}

/* ---- synchronous form --------------------------------------------------------------- */

typedef struct sync_state {
  bool done;
  sc_fim_result res;
  char *text;
  bool nomem;
  const _Atomic int *cancel;
  sc_fim_call *call;
} sync_state;

static void sync_done(void *user, const sc_fim_result *res) {
  sync_state *st = user;
  st->done = true;
  st->call = NULL;
  st->res = *res;
  st->res.text = NULL;
  if (res->status == SC_OK) {
    st->text = malloc(res->text_len + 1);
    if (st->text) {
      memcpy(st->text, res->text, res->text_len);
      st->text[res->text_len] = '\0';
    } else {
      st->nomem = true;
    }
  }
}

static void sync_poll(struct ev_loop *loop, ev_timer *w, int revents) {
  sync_state *st = w->data;
  if (st->cancel && atomic_load(st->cancel) && st->call) sc_fim_call_cancel(st->call);
}

sc_status sc_fim_complete_sync(const sc_fim_client_options *o, const sc_fim_request *req,
                               const _Atomic int *cancel, char **text, size_t *text_len,
                               sc_fim_result *res_out, sc_error *err) {
  *text = NULL;
  *text_len = 0;
  if (res_out) memset(res_out, 0, sizeof *res_out);
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  SC_CHECK(loop, err, SC_ERR_NOMEM, "fim: cannot create an event loop");
  sc_fim_client *c = NULL;
  sc_status s = sc_fim_client_new(loop, o, &c, err);
  if (s != SC_OK) {
    ev_loop_destroy(loop);
    return s;
  }
  sync_state st = {0};
  st.cancel = cancel;
  st.call = sc_fim_client_submit(c, req, sync_done, &st, err);
  if (!st.call) {
    s = err ? err->status : SC_ERR_INTERNAL;
    sc_fim_client_free(c);
    ev_loop_destroy(loop);
    return s;
  }
  ev_timer poll;
  ev_timer_init(&poll, sync_poll, 0.02, 0.02);
  poll.data = &st;
  ev_timer_start(loop, &poll);
  while (!st.done) ev_run(loop, EVRUN_ONCE);
  ev_timer_stop(loop, &poll);
  sc_fim_client_free(c);
  ev_loop_destroy(loop);
  if (res_out) *res_out = st.res;
  if (st.nomem) return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (st.res.status != SC_OK) {
    if (err) *err = st.res.err;
    return st.res.status;
  }
  *text = st.text;
  *text_len = st.res.text_len;
  return SC_OK;
}

/*
 * net.h — sculpt over HTTP.
 *
 * The server side serves the diffusion engine (`sculpt serve`): HTTP/1.1 on
 * a libev loop, OpenAI-compatible FIM completions and llama.cpp's /infill,
 * with continuous batching.
 * The client side is the remote backend: it sends an assembled prompt and
 * suffix to a FIM endpoint in its provider's shape (see "client" below)
 * through libcurl's multi interface on a libev loop, so the loop never
 * blocks.
 *
 * net/ depends on model/ (the engine, for the server) and common/; it knows
 * no LSP and no syntax.
 */
#ifndef SCULPT_NET_H
#define SCULPT_NET_H

#include "model.h"
#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== server: sculpt serve ================================================ */
/* (net/http.c the request reader; net/serve*.c the server, by layer: see
 * net/serve_impl.h) */

/* The HTTP/1.1 request reader: Debian's http-parser underneath, with our
 * limits. One request at a time: after SC_HTTP_REQUEST the reader holds that
 * request until sc_http_reader_next, and consumes nothing more (pipelined
 * bytes stay with the caller). Any input never crashes it. */
typedef struct sc_http_reader sc_http_reader;

typedef enum sc_http_feed {
  SC_HTTP_MORE = 0, /* everything consumed; the request is not complete yet */
  SC_HTTP_REQUEST,  /* a whole request is ready (*used bytes consumed) */
  SC_HTTP_ERROR,    /* bad input: answer sc_http_reader_error() and close */
} sc_http_feed;

typedef struct sc_http_request {
  const char *method;        /* "GET", "POST", ... (static) */
  const char *path;          /* the URL without its query, NUL-terminated */
  const char *authorization; /* the Authorization header's value, or NULL */
  const char *body;          /* NUL-terminated for convenience; body_len bytes */
  size_t body_len;
  bool keep_alive;           /* the connection may carry another request */
  bool http10;               /* an HTTP/1.0 request: a persistent connection
                                must be confirmed with Connection: keep-alive,
                                and no chunked encoding (RFC 9112 7.1, C.2.2) */
  bool started;              /* some bytes of this request have arrived */
  /* The headers are in and asked for "Expect: 100-continue": the client
   * waits for a 100 (Continue) before it sends the body (RFC 9110 10.1.1).
   * Set while the request is still partial (SC_HTTP_MORE). */
  bool expect_continue;
} sc_http_request;

/* max_header: bytes of URL and header names and values (over -> 431);
 * max_body: body bytes (over -> 413). NULL on OOM. Owned by the caller. */
sc_http_reader *sc_http_reader_new(size_t max_header, size_t max_body);
void sc_http_reader_free(sc_http_reader *r); /* NULL is fine */

/* Feeds data[0..len); *used gets the bytes consumed. len 0 means the peer
 * closed its side. */
sc_http_feed sc_http_reader_feed(sc_http_reader *r, const char *data, size_t len, size_t *used);

/* The request after SC_HTTP_REQUEST (borrowed, valid until _next), or the
 * current partial one (started says whether it began). */
const sc_http_request *sc_http_reader_request(const sc_http_reader *r);

/* After SC_HTTP_REQUEST: the body, handed over (owned by the caller,
 * NUL-terminated, *len bytes; NULL when it is empty); the request's body is
 * empty afterwards, and the reader starts a new buffer for the next one. */
char *sc_http_reader_take_body(sc_http_reader *r, size_t *len);

/* After SC_HTTP_ERROR: the status to answer (400, 413, 431 or 505) and why. */
int sc_http_reader_error(const sc_http_reader *r, const char **why);

/* Forgets the current request and reads the next one. */
void sc_http_reader_next(sc_http_reader *r);

/* `sculpt serve`: see cli/main.c's usage text for what the server answers. */
typedef struct sc_serve_options {
  const char *model_dir;  /* required */
  const char *model_name; /* what /v1/models and the answers call the model;
                             NULL: the folder's name */
  const char *listen;     /* "HOST:PORT", PORT 0 = any free one; default
                             127.0.0.1:8080 */
  const char *api_key;    /* borrowed; NULL = no authentication */
  sc_device_kind device;
  sc_weights_kind weights; /* what the CPU computes in; AUTO: $SCULPT_WEIGHTS,
                              else by the checkpoint's size (model.h) */
  int queue;              /* requests waiting beyond the live batch (64) */
  int batch;              /* requests decoded together, at most
                             SC_INFILL_MAX_BATCH; 0: the default, 8 */
  int context;            /* positions per request (0 = min(model, 1024)) */
  int max_tokens;         /* cap on max_tokens, the canvas (256) */
  int max_connections;    /* the pool; past it only /health and /metrics are
                             answered, on a few reserved connections, and
                             beyond those 503 (256) */
  int max_client_connections; /* of the pool from one client address (an
                                 IPv6 client by its /64); past it as past
                                 max_connections (64) */
  size_t max_body;        /* bytes (4 MiB) */
  double header_timeout_s; /* a request must be complete this soon after its
                              first byte, else 408 (10) */
  double idle_timeout_s;  /* an idle keep-alive connection is closed (60) */
  int step_delay_ms;      /* test hook: sleep after each batch step, and
                             when taking a request from the queue into the
                             batch (0) */
} sc_serve_options;

void sc_serve_options_default(sc_serve_options *o);

/* Loads the model, listens, prints "sculpt serve: listening on HOST:PORT"
 * on stderr, and serves until SIGINT or SIGTERM. SC_OK after a clean
 * shutdown; otherwise err says why it could not start. */
sc_status sc_serve_run(const sc_serve_options *o, sc_error *err);

/* ==== client: the remote FIM backend ====================================== */
/* One request is one POST to the provider's FIM endpoint, in its own shape
 * (net/fim_client.c cites each provider's source):
 *
 *   openai-fim       {model, prompt, suffix, max_tokens, temperature, stop,
 *                    stream} to .../v1/fim/completions (sculpt serve, Mercury
 *                    Coder), .../beta/completions (DeepSeek) or .../v1/completions
 *                    (Ollama's OpenAI layer); the answer in choices[0].text
 *   mistral          the same to .../v1/fim/completions (Codestral), model
 *                    required; the answer in choices[0].message.content
 *                    (streamed: choices[0].delta.content)
 *   llama.cpp        {input_prefix, input_suffix, input_extra, n_predict, ...}
 *                    to .../infill; the answer in content
 *   ollama           {model, prompt, suffix, options} to .../api/generate;
 *                    NDJSON, the answer in response
 *   prompt-template  {prompt, max_tokens, ...} to .../v1/completions with the
 *                    prompt wrapped in the target model's FIM tokens and no
 *                    suffix (vLLM refuses one; SGLang drops it unless started
 *                    with --completion-template)
 *
 * A URL whose path ends in the endpoint (/completions, /infill,
 * /api/generate) is used as given; any other path is a base the endpoint is
 * appended to (a trailing /v1 or /beta is kept: http://h/x/v1 ->
 * http://h/x/v1/fim/completions). Answers are streamed where the provider
 * can (SSE or NDJSON, read as they arrive); finish_reason "length" (llama.cpp
 * stop_type "limit", Ollama done_reason "length") marks the result cut off.
 * 429 and 5xx (but 501 and 505) are retried with exponential backoff
 * (Retry-After honoured); a connection that fails or times out is not. */

struct ev_loop;

#define SC_FIM_DEFAULT_KEY_ENV "SCULPT_API_KEY"

/* Which request and answer shapes the endpoint speaks. */
typedef enum sc_fim_provider {
  SC_FIM_PROVIDER_AUTO = 0,  /* from the URL (see sc_fim_client_new) */
  SC_FIM_PROVIDER_OPENAI,    /* "openai-fim" */
  SC_FIM_PROVIDER_MISTRAL,   /* "mistral" */
  SC_FIM_PROVIDER_LLAMACPP,  /* "llama.cpp" */
  SC_FIM_PROVIDER_OLLAMA,    /* "ollama" (native /api/generate) */
  SC_FIM_PROVIDER_TEMPLATE,  /* "prompt-template" */
} sc_fim_provider;

/* The target model's FIM tokens, for prompt-template. */
typedef enum sc_fim_template {
  SC_FIM_TEMPLATE_NONE = 0,
  SC_FIM_TEMPLATE_QWEN,      /* "qwen": Qwen2.5-Coder */
  SC_FIM_TEMPLATE_DEEPSEEK,  /* "deepseek": DeepSeek-Coder */
  SC_FIM_TEMPLATE_STARCODER, /* "starcoder": StarCoder, StarCoder2 */
  SC_FIM_TEMPLATE_CODESTRAL, /* "codestral": Codestral (suffix first) */
} sc_fim_template;

/* Names <-> values; parse returns false for an unknown name. */
bool sc_fim_provider_parse(const char *name, sc_fim_provider *out);
const char *sc_fim_provider_name(sc_fim_provider p);
bool sc_fim_template_parse(const char *name, sc_fim_template *out);
const char *sc_fim_template_name(sc_fim_template t);
/* For messages: "auto, openai-fim, mistral, llama.cpp, ollama, prompt-template". */
extern const char SC_FIM_PROVIDER_NAMES[];
extern const char SC_FIM_TEMPLATE_NAMES[];

typedef struct sc_fim_client_options {
  const char *url;         /* base URL or full endpoint (borrowed; copied) */
  const char *model;       /* NULL or "": the field is left out (an error for
                              providers that require it) */
  const char *api_key;     /* NULL: read from the environment variable below */
  const char *api_key_env; /* NULL: SC_FIM_DEFAULT_KEY_ENV; no key: no header */
  int timeout_ms;          /* per try, connection included; 0: 30000 */
  int max_tries;           /* 0: 4 */
  int backoff_ms;          /* the first retry's delay, doubled per try; 0: 200 */
  int max_backoff_ms;      /* cap on one delay, Retry-After included; 0: 10000 */
  sc_fim_provider provider; /* AUTO: detected from the URL */
  sc_fim_template fim_template; /* required by prompt-template; setting it
                                   with provider AUTO chooses prompt-template */
  bool no_stream;          /* ask for the whole answer at once */
} sc_fim_client_options;

/* A piece of repository context (a snippet headed by its path): llama.cpp
 * takes these apart from the prefix (input_extra); every other provider gets
 * their texts in order before the prompt. */
typedef struct sc_fim_chunk {
  const char *filename; /* borrowed; filename_len bytes (0: none) */
  size_t filename_len;
  const char *text;     /* borrowed; text_len bytes */
  size_t text_len;
} sc_fim_chunk;

typedef struct sc_fim_call sc_fim_call;

/* Runs on the loop thread while a streamed answer arrives, with the whole
 * text so far (borrowed for the call), after each event that changed it;
 * never after done. It may call sc_fim_call_finish or sc_fim_call_cancel on
 * this call (or any other), but must not free the client. */
typedef void (*sc_fim_partial_fn)(void *user, sc_fim_call *call, const char *text, size_t len);

typedef struct sc_fim_request {
  const char *prompt; /* the text before the hole (borrowed), after extra */
  size_t prompt_len;
  const char *suffix; /* the text after it (borrowed) */
  size_t suffix_len;
  int max_tokens;     /* <= 0: left out */
  double temperature;
  const char *const *stop; /* n_stop strings (borrowed), or NULL */
  int n_stop;
  const sc_fim_chunk *extra; /* n_extra chunks before the prompt (borrowed), or NULL */
  int n_extra;
  sc_fim_partial_fn partial; /* NULL: no drafts; called with submit's user */
} sc_fim_request;

typedef struct sc_fim_result {
  /* SC_OK; SC_ERR_CANCELLED; SC_ERR_IO (unreachable, timed out, an HTTP
   * error after the last try, an error reported inside the stream, or a
   * stream that ended before its last event); SC_ERR_FORMAT (an answer
   * without text). */
  sc_status status;
  bool unreachable;  /* no HTTP answer at all: connect failed or timed out */
  int http_status;   /* of the last try; 0 when none came */
  int tries;
  double ms;         /* from submit to the end */
  double first_ms;   /* from submit to the first streamed text; 0: none */
  const char *text;  /* the answer on SC_OK (borrowed for the callback) */
  size_t text_len;
  bool streamed;     /* the answer arrived as a stream of events */
  bool truncated;    /* the server stopped at max_tokens: the text is cut off */
  bool finished_early; /* sc_fim_call_finish ended it before the server did */
  char finish_reason[16]; /* as the server said it ("stop", "length"), or "" */
  sc_fim_provider provider; /* the shapes the client spoke */
  sc_error err;      /* why, when status is not SC_OK; never holds the key */
} sc_fim_result;

typedef struct sc_fim_client sc_fim_client;

/* Runs on the loop thread, once per submitted request, also when it is
 * cancelled (status SC_ERR_CANCELLED), even from inside sc_fim_call_cancel
 * and sc_fim_client_free. The call handle is invalid once it returns. It
 * may submit or cancel other calls, but must not free the client. */
typedef void (*sc_fim_done_fn)(void *user, const sc_fim_result *res);

/* A client whose transfers are driven by loop (borrowed; must outlive the
 * client). Used from the loop's thread only. *out owned by the caller.
 * Provider AUTO is detected from the URL: a path ending in /infill is
 * llama.cpp, in /api/generate (or /api) ollama, a Mistral host
 * (api.mistral.ai, codestral.mistral.ai) mistral, port 11434 without /v1
 * Ollama's native API; a fim_template chooses prompt-template; anything else
 * is openai-fim. SC_ERR_INVALID when a provider that needs a model (mistral,
 * ollama, DeepSeek's /beta, Ollama's /v1) has none, or prompt-template has
 * no template. */
sc_status sc_fim_client_new(struct ev_loop *loop, const sc_fim_client_options *o,
                            sc_fim_client **out, sc_error *err);
/* Cancels what is in flight (callbacks run, cancelled) and frees. */
void sc_fim_client_free(sc_fim_client *c);
/* The endpoint requests go to (owned by the client), for messages. */
const char *sc_fim_client_endpoint(const sc_fim_client *c);
/* The provider the client speaks (AUTO resolved). */
sc_fim_provider sc_fim_client_provider(const sc_fim_client *c);

/* Starts a request; its body is built now, so req is only borrowed for the
 * call. Returns the call (owned by the client; valid until done runs) or
 * NULL with *err filled, in which case done never runs. */
sc_fim_call *sc_fim_client_submit(sc_fim_client *c, const sc_fim_request *req,
                                  sc_fim_done_fn done, void *user, sc_error *err);
/* Stops the request and closes its connection (the server sees it go);
 * done runs before this returns, with SC_ERR_CANCELLED. */
void sc_fim_call_cancel(sc_fim_call *call);
/* Ends a streamed answer now, with the text so far (SC_OK, finished_early):
 * for a caller that has what it needs (a line) before the server stops.
 * Closes the connection; done runs before this returns. */
void sc_fim_call_finish(sc_fim_call *call);

/* The synchronous form, for the CLI and the worker thread: a private loop
 * and client for one request. cancel (may be NULL) is polled every 20 ms;
 * non-zero stops the request (SC_ERR_CANCELLED). *text (NUL-terminated,
 * owned by the caller) is set on SC_OK. *res_out (may be NULL) gets the
 * result's counters (its text pointer is cleared). */
sc_status sc_fim_complete_sync(const sc_fim_client_options *o, const sc_fim_request *req,
                               const _Atomic int *cancel, char **text, size_t *text_len,
                               sc_fim_result *res_out, sc_error *err);

/* ==== the Hugging Face hub: `sculpt model pull` (net/hub.c) =============== */
/* Downloads what sculpt loads of a model on the hub into huggingface_hub's
 * own cache (model.h, "model names"), so that Python tools and sculpt share
 * every file in both directions: the revision's file list with sizes and
 * hashes (GET /api/models/ID/revision/REV?blobs=true), then each file from
 * /ID/resolve/COMMIT/FILE, following the redirect to the storage host,
 * resumed from blobs/ETAG.incomplete with a Range request, checked against
 * its hash (LFS: sha256; else the git blob id) before it is renamed into
 * blobs/, under a lock per blob shared with huggingface_hub
 * (.locks/models--ORG--NAME/ETAG.lock, flock). The snapshot's links and
 * refs/REV are written last, each atomically: a failure leaves no link to a
 * missing blob and no ref to an unfinished snapshot. Blocking: run it off
 * any event loop. Environment, as huggingface_hub reads it: HF_ENDPOINT,
 * HF_TOKEN (else HF_TOKEN_PATH or HF_HOME/token), HF_HUB_OFFLINE, and the
 * cache's (model.h). */

typedef struct sc_hub_progress {
  const char *file;     /* the file in transfer (borrowed), or NULL at the end */
  uint64_t done, total; /* bytes of this pull's downloads: done of total */
  int index, count;     /* the file is index (1-based) of count to download */
} sc_hub_progress;

/* Called on the puller's thread, at most about ten times a second and once
 * when the transfers are over. */
typedef void (*sc_hub_progress_fn)(void *user, const sc_hub_progress *p);

typedef struct sc_hub_options {
  const char *const *include; /* --include: patterns (fnmatch) on the repository's
                                 paths; NULL: config, tokenizer and safetensors */
  int n_include;
  const char *endpoint;       /* NULL: $HF_ENDPOINT, else https://huggingface.co */
  const char *cache;          /* NULL: sc_model_cache_dir() */
  const _Atomic int *cancel;  /* non-zero stops within a second (SC_ERR_CANCELLED;
                                 a partial blob stays, to be resumed) */
  sc_hub_progress_fn progress; /* may be NULL */
  void *user;
} sc_hub_options;

typedef struct sc_hub_result {
  char dir[4400];      /* the snapshot folder: what --model ID resolves to */
  char commit[41];
  int files;           /* files of the snapshot this pull wanted */
  int downloaded;      /* of them, transferred now */
  uint64_t bytes;      /* their size */
  uint64_t transferred; /* bytes received now (a resumed file: its rest) */
  bool offline;        /* HF_HUB_OFFLINE: taken from the cache, nothing asked */
} sc_hub_result;

/* Pulls ORG/NAME[@REVISION] (sc_model_id_parse). Every failure is one line:
 * a gated or private model (its page and HF_TOKEN), no such model or
 * revision, no network, a full disk (checked before the first byte and on
 * every write; the partial blob is removed), an interrupted transfer (its
 * partial blob is kept, and the next pull resumes it after three tries of
 * its own), a hash that does not match (the file is removed). o may be
 * NULL. */
sc_status sc_hub_pull(const char *id, const sc_hub_options *o, sc_hub_result *out,
                      sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_NET_H */

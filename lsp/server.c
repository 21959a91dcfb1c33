/* server.c — the JSON-RPC core: lifecycle, dispatch, documents, jobs.
 * Spec: JSON-RPC 2.0 (error codes -32700..-32600) and LSP 3.17 (lifecycle,
 * text synchronisation, $/cancelRequest, -32002, -32800, -32801). */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


typedef enum lifecycle {
  LC_UNINITIALIZED, /* waiting for initialize */
  LC_INITIALIZING,  /* initialize answered, initialized not yet seen */
  LC_RUNNING,
  LC_SHUTDOWN,      /* shutdown answered; only exit is welcome */
  LC_EXITED,
} lifecycle;

/* A server->client request we are waiting on. */
typedef struct outgoing {
  json_int_t id;
  void (*on_response)(sc_lsp_server *s, json_t *result, json_t *error);
  struct outgoing *next;
} outgoing;

/* Log lines bound for window/logMessage, queued because they may come from
 * any thread and because nothing may be sent before initialize is answered. */
typedef struct log_entry {
  sc_log_level level;
  struct log_entry *next;
  char text[];
} log_entry;
#define MAX_QUEUED_LOGS 1000

struct sc_lsp_server {
  sc_lsp_options opts;
  sc_lsp_write_fn write;
  sc_lsp_wake_fn wake;
  void *user;

  sc_frame_reader reader;
  size_t garbage_run; /* garbage bytes since the last message, for one log line */
  lifecycle state;
  bool shutdown_requested;
  int exit_code;
  sc_pos_encoding enc;

  sc_document_store *docs;
  sc_worker *workers[SC_LANE_COUNT]; /* one thread per sc_job_lane */
  sc_job **inflight; /* posted jobs not yet answered (loop thread only) */
  size_t n_inflight, cap_inflight;

  outgoing *outgoing;
  json_int_t next_out_id;
  bool client_config_pull; /* client supports workspace/configuration */
  bool client_progress;    /* client supports window/workDoneProgress */
  bool client_action_resolve; /* client resolves a code action's edit lazily */
  bool client_watch_dynamic; /* client registers file watchers on request */
  const sc_lsp_feature *feature; /* completions, code actions, commands */
  void *feature_state;           /* its state (owned) */
  struct ev_loop *loop; /* the transport's, or NULL */

  pthread_mutex_t log_mu;
  log_entry *log_head, *log_tail;
  size_t log_count, log_dropped;
  _Atomic int client_log_level; /* window/logMessage threshold */
};

/* ======================= output ============================================ */

/* json_string() refuses invalid UTF-8; log text and error messages may carry
 * bytes from the client's files, so replace bad bytes with U+FFFD. */
static json_t *json_string_lossy(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  size_t n = strlen(s);
  char *out = malloc(n * 3 + 1);
  if (!out) return json_string("");
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t k = sc_utf8_decode(s, n, i, &cp);
    if (cp == 0xFFFD && k == 1) {
      memcpy(out + o, "\xEF\xBF\xBD", 3);
      o += 3;
    } else {
      memcpy(out + o, s + i, k);
      o += k;
    }
    i += k;
  }
  out[o] = '\0';
  j = json_string(out);
  free(out);
  return j ? j : json_string("");
}

/* Takes ownership of msg. */
static void send_message(sc_lsp_server *s, json_t *msg) {
  if (!msg) return;
  json_object_set_new(msg, "jsonrpc", json_string("2.0"));
  char *body = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  if (!body) {
    fprintf(stderr, "sculpt: out of memory serialising a message\n");
    return;
  }
  size_t blen = strlen(body);
  char header[64];
  int hlen = snprintf(header, sizeof header, "Content-Length: %zu\r\n\r\n", blen);
  char *frame = malloc((size_t)hlen + blen);
  if (frame) {
    memcpy(frame, header, (size_t)hlen);
    memcpy(frame + hlen, body, blen);
    s->write(s->user, frame, (size_t)hlen + blen);
    free(frame);
  }
  free(body);
}

void sc_lsp__send_result(sc_lsp_server *s, json_t *id, json_t *result) {
  json_t *msg = json_object();
  json_object_set(msg, "id", id ? id : json_null());
  json_object_set_new(msg, "result", result ? result : json_null());
  send_message(s, msg);
}

void sc_lsp__send_error(sc_lsp_server *s, json_t *id, int code, const char *fmt, ...) {
  char text[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  json_t *err = json_object();
  json_object_set_new(err, "code", json_integer(code));
  json_object_set_new(err, "message", json_string_lossy(text));
  json_t *msg = json_object();
  json_object_set(msg, "id", id ? id : json_null());
  json_object_set_new(msg, "error", err);
  send_message(s, msg);
}

void sc_lsp__send_notification(sc_lsp_server *s, const char *method, json_t *params) {
  json_t *msg = json_object();
  json_object_set_new(msg, "method", json_string(method));
  json_object_set_new(msg, "params", params ? params : json_object());
  send_message(s, msg);
}

void sc_lsp__send_request(sc_lsp_server *s, const char *method, json_t *params,
                         void (*on_response)(sc_lsp_server *, json_t *, json_t *)) {
  outgoing *o = calloc(1, sizeof *o);
  if (!o) {
    json_decref(params);
    SC_LOG_ERROR("out of memory sending %s", method);
    return;
  }
  o->id = ++s->next_out_id;
  o->on_response = on_response;
  o->next = s->outgoing;
  s->outgoing = o;
  json_t *msg = json_object();
  json_object_set_new(msg, "id", json_integer(o->id));
  json_object_set_new(msg, "method", json_string(method));
  json_object_set_new(msg, "params", params ? params : json_object());
  send_message(s, msg);
}

/* ======================= logging to the client ============================= */

static void log_sink(void *user, sc_log_level level, const char *text) {
  sc_lsp_server *s = user;
  if ((int)level > atomic_load(&s->client_log_level)) return;
  size_t n = strlen(text);
  log_entry *e = malloc(sizeof *e + n + 1);
  if (!e) return;
  e->level = level;
  e->next = NULL;
  memcpy(e->text, text, n + 1);
  pthread_mutex_lock(&s->log_mu);
  if (s->log_count >= MAX_QUEUED_LOGS) {
    log_entry *old = s->log_head; /* drop the oldest */
    s->log_head = old->next;
    if (!s->log_head) s->log_tail = NULL;
    free(old);
    s->log_count--;
    s->log_dropped++;
  }
  if (s->log_tail) s->log_tail->next = e;
  else s->log_head = e;
  s->log_tail = e;
  s->log_count++;
  pthread_mutex_unlock(&s->log_mu);
}

static void flush_logs(sc_lsp_server *s) {
  if (s->state == LC_UNINITIALIZED || s->state == LC_EXITED) return;
  pthread_mutex_lock(&s->log_mu);
  log_entry *e = s->log_head;
  size_t dropped = s->log_dropped;
  s->log_head = s->log_tail = NULL;
  s->log_count = 0;
  s->log_dropped = 0;
  pthread_mutex_unlock(&s->log_mu);
  if (dropped) {
    char text[96];
    snprintf(text, sizeof text, "%zu log lines were dropped", dropped);
    json_t *p = json_object();
    json_object_set_new(p, "type", json_integer(2));
    json_object_set_new(p, "message", json_string(text));
    sc_lsp__send_notification(s, "window/logMessage", p);
  }
  while (e) {
    log_entry *next = e->next;
    /* MessageType: 1 error, 2 warning, 3 info, 4 log. */
    json_t *p = json_object();
    json_object_set_new(p, "type", json_integer((int)e->level));
    json_object_set_new(p, "message", json_string_lossy(e->text));
    sc_lsp__send_notification(s, "window/logMessage", p);
    free(e);
    e = next;
  }
}

static void set_client_log_level(sc_lsp_server *s, sc_log_level level) {
  atomic_store(&s->client_log_level, (int)level);
}

static bool level_from_trace(const char *trace, sc_log_level *out) {
  if (!trace) return false;
  if (strcmp(trace, "off") == 0) *out = SC_LOG_WARN;
  else if (strcmp(trace, "messages") == 0) *out = SC_LOG_INFO;
  else if (strcmp(trace, "verbose") == 0) *out = SC_LOG_DEBUG;
  else return false;
  return true;
}

/* ======================= configuration ===================================== */

/* Applies a "sculpt" settings object. Unknown keys are ignored so that newer
 * clients work with older servers. */
static void apply_settings(sc_lsp_server *s, json_t *settings) {
  if (!json_is_object(settings)) return;
  s->feature->settings(s, settings);
  json_t *lvl = json_object_get(settings, "logLevel");
  if (lvl) {
    sc_log_level level;
    if (json_is_string(lvl) && sc_log_level_parse(json_string_value(lvl), &level)) {
      set_client_log_level(s, level);
      SC_LOG_DEBUG("settings: logLevel %s", sc_log_level_name(level));
    } else {
      SC_LOG_WARN("settings: logLevel must be one of error, warn, info, debug");
    }
  }
}

static void on_configuration(sc_lsp_server *s, json_t *result, json_t *error) {
  if (error) {
    const char *why = json_string_value(json_object_get(error, "message"));
    SC_LOG_WARN("workspace/configuration failed: %s", why ? why : "no message");
    return;
  }
  if (json_is_array(result) && json_array_size(result) > 0)
    apply_settings(s, json_array_get(result, 0));
}

/* ======================= jobs ============================================== */

static bool inflight_add(sc_lsp_server *s, sc_job *job) {
  if (s->n_inflight == s->cap_inflight) {
    size_t cap = s->cap_inflight ? s->cap_inflight * 2 : 16;
    sc_job **n = realloc(s->inflight, cap * sizeof *n);
    if (!n) return false;
    s->inflight = n;
    s->cap_inflight = cap;
  }
  s->inflight[s->n_inflight++] = job;
  return true;
}

static void inflight_remove(sc_lsp_server *s, sc_job *job) {
  for (size_t i = 0; i < s->n_inflight; i++)
    if (s->inflight[i] == job) {
      s->inflight[i] = s->inflight[--s->n_inflight];
      return;
    }
}

/* The one place a job's response is sent; frees the job. */
static void answer_job(sc_lsp_server *s, sc_job *job) {
  inflight_remove(s, job);
  if (job->on_done) job->on_done(s, job);
  job->on_done = NULL; /* once: a deferred job comes back here */
  if (job->deferred) {
    /* Still in flight until sc_lsp__answer_deferred (or a cancel). */
    if (sc_job_cancelled(job) == SC_JOB_LIVE && inflight_add(s, job)) return;
    job->deferred = false;
    if (sc_job_cancelled(job) == SC_JOB_LIVE) sc_error_set(&job->err, SC_ERR_NOMEM, "out of memory");
    if (job->on_cancel) job->on_cancel(s, job);
  }
  sc_job_cancel c = sc_job_cancelled(job);
  if (!job->id) {
    /* An internal job: on_done was its whole answer. */
  } else if (c == SC_JOB_STALE) {
    sc_lsp__send_error(s, job->id, SC_RPC_CONTENT_MODIFIED, "%s: the document changed", job->method);
  } else if (c == SC_JOB_CANCELLED || c == SC_JOB_SHUTDOWN) {
    sc_lsp__send_error(s, job->id, SC_RPC_REQUEST_CANCELLED, "%s: cancelled", job->method);
  } else if (job->result) {
    sc_lsp__send_result(s, job->id, json_incref(job->result));
  } else {
    int code = job->err.status == SC_ERR_INVALID ? SC_RPC_INVALID_PARAMS
               : job->err.status == SC_ERR_CANCELLED ? SC_RPC_REQUEST_CANCELLED
                                                     : SC_RPC_REQUEST_FAILED;
    sc_lsp__send_error(s, job->id, code, "%s: %s", job->method, job->err.msg);
  }
  SC_LOG_DEBUG("%s answered after %.1f ms", job->method, sc_now_ms() - job->queued_ms);
  sc_job_free(job);
}

/* Cancels one in-flight job: answered now when still queued, else flagged so
 * that the worker stops at its next step. */
static void cancel_job(sc_lsp_server *s, sc_job *job, sc_job_cancel why) {
  int expected = SC_JOB_LIVE;
  atomic_compare_exchange_strong(&job->cancel, &expected, (int)why);
  if (job->deferred) {
    /* Waiting on the loop, not on the worker: release and answer now. */
    answer_job(s, job);
    return;
  }
  sc_job *q = sc_worker_unqueue(s->workers[job->lane], job);
  if (q) answer_job(s, q);
}

static void cancel_jobs_for_uri(sc_lsp_server *s, const char *uri) {
  for (size_t i = 0; i < s->n_inflight;) {
    sc_job *job = s->inflight[i];
    size_t before = s->n_inflight;
    if (job->uri && strcmp(job->uri, uri) == 0) cancel_job(s, job, SC_JOB_STALE);
    if (s->n_inflight == before) i++; /* not removed: move on */
  }
}

static void cancel_all_jobs(sc_lsp_server *s, sc_job_cancel why) {
  while (s->n_inflight > 0) {
    size_t before = s->n_inflight;
    for (size_t i = 0; i < s->n_inflight; i++) {
      cancel_job(s, s->inflight[i], why);
      if (s->n_inflight != before) break;
    }
    if (s->n_inflight == before) break; /* the rest are running: flagged */
  }
}

static sc_job *post_job(sc_lsp_server *s, sc_job_lane lane, json_t *id, const char *method,
                        const char *uri, sc_job_fn fn, void *arg, void (*free_arg)(void *),
                        void (*on_done)(sc_lsp_server *s, sc_job *job)) {
  sc_job *job = calloc(1, sizeof *job);
  if (job) {
    job->id = id ? json_incref(id) : NULL;
    job->method = strdup(method);
    job->uri = uri ? strdup(uri) : NULL;
  }
  if (!job || !job->method || (uri && !job->uri) || !inflight_add(s, job)) {
    if (job) {
      job->free_arg = free_arg;
      job->arg = arg;
      sc_job_free(job);
    } else if (free_arg) {
      free_arg(arg);
    }
    if (id) sc_lsp__send_error(s, id, SC_RPC_INTERNAL_ERROR, "%s: out of memory", method);
    else SC_LOG_ERROR("%s: out of memory", method);
    return NULL;
  }
  job->fn = fn;
  job->arg = arg;
  job->free_arg = free_arg;
  job->on_done = on_done;
  job->lane = lane;
  sc_worker_post(s->workers[lane], job);
  return job;
}

sc_job *sc_lsp__post_job(sc_lsp_server *s, json_t *id, const char *method, const char *uri,
                         sc_job_fn fn, void *arg, void (*free_arg)(void *),
                         void (*on_done)(sc_lsp_server *s, sc_job *job)) {
  return post_job(s, SC_LANE_MODEL, id, method, uri, fn, arg, free_arg, on_done);
}

sc_job *sc_lsp__post_job_on(sc_lsp_server *s, sc_job_lane lane, json_t *id, const char *method,
                            const char *uri, sc_job_fn fn, void *arg, void (*free_arg)(void *),
                            void (*on_done)(sc_lsp_server *s, sc_job *job)) {
  return post_job(s, lane, id, method, uri, fn, arg, free_arg, on_done);
}

sc_job *sc_lsp__post_background_job(sc_lsp_server *s, const char *method, sc_job_fn fn,
                                    void *arg, void (*free_arg)(void *),
                                    void (*on_done)(sc_lsp_server *s, sc_job *job)) {
  return post_job(s, SC_LANE_BACKGROUND, NULL, method, NULL, fn, arg, free_arg, on_done);
}

void sc_lsp__cancel_method(sc_lsp_server *s, const char *method, const char *uri) {
  for (size_t i = 0; i < s->n_inflight;) {
    sc_job *job = s->inflight[i];
    size_t before = s->n_inflight;
    if (job->id && job->uri && uri && strcmp(job->uri, uri) == 0 &&
        strcmp(job->method, method) == 0)
      cancel_job(s, job, SC_JOB_CANCELLED);
    if (s->n_inflight == before) i++;
  }
}

void sc_lsp__answer_deferred(sc_lsp_server *s, sc_job *job) {
  job->deferred = false;
  answer_job(s, job);
  flush_logs(s);
}

void sc_lsp__set_loop(sc_lsp_server *s, struct ev_loop *loop) { s->loop = loop; }
struct ev_loop *sc_lsp__loop(sc_lsp_server *s) { return s->loop; }

sc_pos_encoding sc_lsp__encoding(const sc_lsp_server *s) { return s->enc; }
const sc_lsp_options *sc_lsp__options(const sc_lsp_server *s) { return &s->opts; }
bool sc_lsp__client_progress(const sc_lsp_server *s) { return s->client_progress; }
bool sc_lsp__client_action_resolve(const sc_lsp_server *s) { return s->client_action_resolve; }
void *sc_lsp__feature(sc_lsp_server *s) { return s->feature_state; }
sc_document_store *sc_lsp__documents(sc_lsp_server *s) { return s->docs; }

void sc_lsp_server_drain(sc_lsp_server *s) {
  sc_job *job;
  for (int l = 0; l < SC_LANE_COUNT; l++)
    while ((job = sc_worker_take_done(s->workers[l]))) answer_job(s, job);
  flush_logs(s);
}

/* ======================= parameter helpers ================================= */

typedef sc_lsp_req req;

/* Reports invalid params: an error response for requests, a log line for
 * notifications (which cannot be answered). Returns false for chaining. */
bool sc_lsp__bad_params(req *r, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (r->id) sc_lsp__send_error(r->s, r->id, SC_RPC_INVALID_PARAMS, "%s: %s", r->method, text);
  else SC_LOG_WARN("%s: invalid params: %s", r->method, text);
  return false;
}

static bool get_uint32(json_t *v, uint32_t *out) {
  if (!json_is_integer(v)) return false;
  json_int_t x = json_integer_value(v);
  if (x < 0) return false;
  *out = x > (json_int_t)UINT32_MAX ? UINT32_MAX : (uint32_t)x;
  return true;
}

bool sc_lsp__get_position(json_t *pos, uint32_t *line, uint32_t *character) {
  return json_is_object(pos) && get_uint32(json_object_get(pos, "line"), line) &&
         get_uint32(json_object_get(pos, "character"), character);
}

/* params.textDocument.uri, or NULL after reporting the error. */
static const char *get_uri(req *r) {
  json_t *td = json_object_get(r->params, "textDocument");
  const char *uri = json_string_value(json_object_get(td, "uri"));
  if (!uri) sc_lsp__bad_params(r, "textDocument.uri must be a string");
  return uri;
}

sc_document *sc_lsp__find_document(sc_lsp_server *s, const char *uri) {
  return uri ? sc_document_store_get(s->docs, uri) : NULL;
}

sc_document *sc_lsp__get_open_document(req *r) {
  const char *uri = get_uri(r);
  if (!uri) return NULL;
  sc_document *d = sc_document_store_get(r->s->docs, uri);
  if (!d) sc_lsp__bad_params(r, "document not open: %s", uri);
  return d;
}

/* ======================= lifecycle ========================================= */

static void handle_initialize(req *r) {
  sc_lsp_server *s = r->s;
  if (s->state != LC_UNINITIALIZED) {
    sc_lsp__send_error(s, r->id, SC_RPC_INVALID_REQUEST, "initialize: already initialized");
    return;
  }
  if (!json_is_object(r->params)) {
    sc_lsp__send_error(s, r->id, SC_RPC_INVALID_PARAMS, "initialize: params must be an object");
    return;
  }
  json_t *caps = json_object_get(r->params, "capabilities");
  if (caps && !json_is_object(caps)) {
    sc_lsp__send_error(s, r->id, SC_RPC_INVALID_PARAMS, "initialize: capabilities must be an object");
    return;
  }
  /* Prefer utf-8 (our native form, no conversion), then utf-32, else the
   * mandatory default utf-16. */
  json_t *encs = json_object_get(json_object_get(caps, "general"), "positionEncodings");
  bool utf8 = false, utf32 = false;
  size_t i;
  json_t *e;
  json_array_foreach(encs, i, e) {
    const char *name = json_string_value(e);
    if (!name) continue;
    if (strcmp(name, "utf-8") == 0) utf8 = true;
    else if (strcmp(name, "utf-32") == 0) utf32 = true;
  }
  s->enc = utf8 ? SC_POS_UTF8 : utf32 ? SC_POS_UTF32 : SC_POS_UTF16;
  s->client_config_pull =
      json_is_true(json_object_get(json_object_get(caps, "workspace"), "configuration"));
  s->client_progress =
      json_is_true(json_object_get(json_object_get(caps, "window"), "workDoneProgress"));
  /* codeAction/resolve may fill in "edit" (LSP 3.16 resolveSupport). */
  json_t *props = json_object_get(
      json_object_get(json_object_get(json_object_get(caps, "textDocument"), "codeAction"),
                      "resolveSupport"),
      "properties");
  json_t *prop;
  size_t pi;
  json_array_foreach(props, pi, prop) {
    const char *name = json_string_value(prop);
    if (name && strcmp(name, "edit") == 0) s->client_action_resolve = true;
  }
  s->client_watch_dynamic = json_is_true(json_object_get(
      json_object_get(json_object_get(caps, "workspace"), "didChangeWatchedFiles"),
      "dynamicRegistration"));

  sc_log_level level;
  if (level_from_trace(json_string_value(json_object_get(r->params, "trace")), &level))
    set_client_log_level(s, level);
  /* The workspace: the first workspace folder, else rootUri. */
  json_t *folders = json_object_get(r->params, "workspaceFolders");
  const char *root_uri = json_string_value(json_object_get(json_array_get(folders, 0), "uri"));
  if (!root_uri) root_uri = json_string_value(json_object_get(r->params, "rootUri"));
  if (root_uri) s->feature->set_root(s, root_uri);
  json_t *init_opts = json_object_get(r->params, "initializationOptions");
  apply_settings(s, init_opts);

  json_t *client = json_object_get(r->params, "clientInfo");
  const char *cname = json_string_value(json_object_get(client, "name"));
  const char *cver = json_string_value(json_object_get(client, "version"));
  SC_LOG_INFO("initialize from %s%s%s; position encoding %s", cname ? cname : "a client",
              cver ? " " : "", cver ? cver : "", sc_pos_encoding_name(s->enc));

  json_t *sync = json_pack("{s:b, s:i, s:{s:b}}", "openClose", 1, "change", 2, "save",
                           "includeText", 0);
  json_t *capabilities = json_object();
  json_object_set_new(capabilities, "positionEncoding",
                      json_string(sc_pos_encoding_name(s->enc)));
  json_object_set_new(capabilities, "textDocumentSync", sync);
  s->feature->capabilities(capabilities);
  json_t *result = json_object();
  json_object_set_new(result, "capabilities", capabilities);
  json_object_set_new(result, "serverInfo",
                      json_pack("{s:s, s:s}", "name", "sculpt", "version", sc_version()));
  sc_lsp__send_result(s, r->id, result);
  s->state = LC_INITIALIZING;
}

static void on_register_watchers(sc_lsp_server *s, json_t *result, json_t *error) {
  if (error) {
    const char *why = json_string_value(json_object_get(error, "message"));
    SC_LOG_WARN("client/registerCapability (file watching) failed: %s", why ? why : "no message");
  }
}

static void handle_initialized(req *r) {
  sc_lsp_server *s = r->s;
  if (s->state != LC_INITIALIZING) return;
  s->state = LC_RUNNING;
  s->feature->start(s);
  /* Files changed outside the editor (git checkout, generators) keep the
   * index current: ask the client to watch the whole tree for us. */
  if (s->client_watch_dynamic)
    sc_lsp__send_request(
        s, "client/registerCapability",
        json_pack("{s:[{s:s, s:s, s:{s:[{s:s}]}}]}", "registrations", "id",
                  "sculpt-watch-files", "method", "workspace/didChangeWatchedFiles",
                  "registerOptions", "watchers", "globPattern", "**/*"),
        on_register_watchers);
  if (s->client_config_pull)
    sc_lsp__send_request(s, "workspace/configuration",
                 json_pack("{s:[{s:s}]}", "items", "section", "sculpt"), on_configuration);
}

static void handle_shutdown(req *r) {
  sc_lsp_server *s = r->s;
  s->shutdown_requested = true;
  s->state = LC_SHUTDOWN;
  cancel_all_jobs(s, SC_JOB_CANCELLED);
  sc_lsp__send_result(s, r->id, json_null());
}

static void handle_exit(req *r) {
  sc_lsp_server *s = r->s;
  s->exit_code = s->shutdown_requested ? 0 : 1;
  cancel_all_jobs(s, SC_JOB_SHUTDOWN);
  s->state = LC_EXITED;
}

/* ======================= text synchronisation ============================== */

static void handle_did_open(req *r) {
  json_t *td = json_object_get(r->params, "textDocument");
  const char *uri = json_string_value(json_object_get(td, "uri"));
  json_t *text = json_object_get(td, "text");
  json_t *version = json_object_get(td, "version");
  const char *lang = json_string_value(json_object_get(td, "languageId"));
  if (!uri || !json_is_string(text) || !json_is_integer(version)) {
    sc_lsp__bad_params(r, "textDocument needs uri, version (integer) and text");
    return;
  }
  if (sc_document_store_get(r->s->docs, uri))
    SC_LOG_WARN("didOpen: %s was already open; replacing it", uri);
  sc_error err = {0};
  if (sc_document_store_open(r->s->docs, uri, lang, json_integer_value(version),
                             json_string_value(text), json_string_length(text),
                             &err) != SC_OK)
    SC_LOG_ERROR("didOpen: %s", err.msg);
  cancel_jobs_for_uri(r->s, uri);
}

/* One parsed content change. */
typedef struct change {
  bool full;
  uint32_t sl, sc, el, ec;
  const char *text;
  size_t len;
} change;

static void handle_did_change(req *r) {
  sc_lsp_server *s = r->s;
  json_t *td = json_object_get(r->params, "textDocument");
  const char *uri = json_string_value(json_object_get(td, "uri"));
  json_t *version = json_object_get(td, "version");
  json_t *changes = json_object_get(r->params, "contentChanges");
  if (!uri || !json_is_array(changes)) {
    sc_lsp__bad_params(r, "needs textDocument.uri and a contentChanges array");
    return;
  }
  sc_document *d = sc_document_store_get(s->docs, uri);
  if (!d) {
    SC_LOG_WARN("didChange: document not open: %s", uri);
    return;
  }
  /* Validate every change before applying any: a half-applied batch would
   * leave us out of sync with the client for good. */
  size_t n = json_array_size(changes);
  change *cs = calloc(n ? n : 1, sizeof *cs);
  if (!cs) {
    SC_LOG_ERROR("didChange: out of memory");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(changes, i);
    json_t *text = json_object_get(c, "text");
    if (!json_is_string(text)) {
      free(cs);
      sc_lsp__bad_params(r, "contentChanges[%zu].text must be a string", i);
      return;
    }
    cs[i].text = json_string_value(text);
    cs[i].len = json_string_length(text);
    json_t *range = json_object_get(c, "range");
    if (!range) {
      cs[i].full = true;
      continue;
    }
    if (!sc_lsp__get_position(json_object_get(range, "start"), &cs[i].sl, &cs[i].sc) ||
        !sc_lsp__get_position(json_object_get(range, "end"), &cs[i].el, &cs[i].ec)) {
      free(cs);
      sc_lsp__bad_params(r, "contentChanges[%zu].range needs start and end positions", i);
      return;
    }
  }
  if (json_is_integer(version)) {
    json_int_t v = json_integer_value(version);
    if (v <= d->version)
      SC_LOG_WARN("didChange: %s version %lld does not follow %lld", uri, (long long)v,
                  (long long)d->version);
    d->version = v;
  }
  for (size_t i = 0; i < n; i++) {
    sc_error err = {0};
    bool clamped = false;
    sc_status st = cs[i].full
                       ? sc_document_set_text(d, cs[i].text, cs[i].len, &err)
                       : sc_document_apply_edit(d, cs[i].sl, cs[i].sc, cs[i].el, cs[i].ec,
                                                s->enc, cs[i].text, cs[i].len, &clamped,
                                                &err);
    if (st != SC_OK) SC_LOG_ERROR("didChange: %s", err.msg);
    if (clamped)
      SC_LOG_WARN("didChange: %s: range %u:%u-%u:%u is past the end; clamped", uri,
                  cs[i].sl, cs[i].sc, cs[i].el, cs[i].ec);
  }
  free(cs);
  cancel_jobs_for_uri(s, uri);
  s->feature->on_change(s, d);
}

static void handle_did_close(req *r) {
  const char *uri = get_uri(r);
  if (!uri) return;
  cancel_jobs_for_uri(r->s, uri);
  if (!sc_document_store_close(r->s->docs, uri))
    SC_LOG_WARN("didClose: document not open: %s", uri);
}

static void handle_did_save(req *r) {
  const char *uri = get_uri(r);
  if (!uri) return;
  SC_LOG_DEBUG("didSave: %s", uri);
  /* Incremental reparses can, rarely, recover from an error differently
   * than a fresh parse (tree-sitter #1645, #4001); a save is a good moment
   * to start afresh. Lazily: the next request that needs the tree parses. */
  sc_document *d = sc_document_store_get(r->s->docs, uri);
  if (d && d->tree) d->tree_stale = true;
  r->s->feature->on_save(r->s, uri);
}

/* ======================= notifications ===================================== */

static void handle_cancel(req *r) {
  json_t *id = json_object_get(r->params, "id");
  if (!json_is_integer(id) && !json_is_string(id)) return;
  for (size_t i = 0; i < r->s->n_inflight; i++)
    if (json_equal(r->s->inflight[i]->id, id)) {
      cancel_job(r->s, r->s->inflight[i], SC_JOB_CANCELLED);
      return;
    }
}

static void handle_set_trace(req *r) {
  sc_log_level level;
  if (level_from_trace(json_string_value(json_object_get(r->params, "value")), &level))
    set_client_log_level(r->s, level);
}

static void handle_did_change_configuration(req *r) {
  json_t *settings = json_object_get(r->params, "settings");
  apply_settings(r->s, json_object_get(settings, "sculpt"));
  if (r->s->client_config_pull && !json_object_get(settings, "sculpt"))
    sc_lsp__send_request(r->s, "workspace/configuration",
                 json_pack("{s:[{s:s}]}", "items", "section", "sculpt"), on_configuration);
}

static void handle_did_change_watched_files(req *r) {
  /* Files changed on disk: each one's index entry is updated or removed. */
  json_t *changes = json_object_get(r->params, "changes");
  if (!json_is_array(changes)) {
    sc_lsp__bad_params(r, "changes must be an array");
    return;
  }
  size_t i;
  json_t *ch;
  json_array_foreach(changes, i, ch) {
    const char *uri = json_string_value(json_object_get(ch, "uri"));
    json_int_t type = json_integer_value(json_object_get(ch, "type"));
    if (!uri || type < 1 || type > 3) {
      SC_LOG_WARN("didChangeWatchedFiles: changes[%zu] needs a uri and a type 1-3", i);
      continue;
    }
    r->s->feature->on_file_changed(r->s, uri, (int)type);
  }
}

/* ======================= test hooks ======================================== */

static void handle_test_document(req *r) {
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  json_t *text = json_stringn(d->text, d->len);
  sc_lsp__send_result(r->s, r->id,
              json_pack("{s:s, s:I, s:s, s:o}", "uri", d->uri, "version",
                        (json_int_t)d->version, "languageId", d->language_id, "text",
                        text ? text : json_null()));
}

static void handle_test_offset(req *r) {
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  uint32_t line, character;
  if (!sc_lsp__get_position(json_object_get(r->params, "position"), &line, &character)) {
    sc_lsp__bad_params(r, "position needs line and character");
    return;
  }
  const sc_line_index *idx = sc_document_lines(d);
  if (!idx) {
    sc_lsp__send_error(r->s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  bool clamped = false;
  size_t off = sc_pos_to_offset(d->text, d->len, idx, line, character, r->s->enc, &clamped);
  uint32_t bl, bc;
  sc_offset_to_pos(d->text, d->len, idx, off, r->s->enc, &bl, &bc);
  sc_lsp__send_result(r->s, r->id,
              json_pack("{s:I, s:b, s:{s:i, s:i}}", "offset", (json_int_t)off, "clamped",
                        clamped, "position", "line", (int)bl, "character", (int)bc));
}

static json_t *sleep_job(sc_job *job, void *arg, sc_error *err) {
  json_int_t ms = *(json_int_t *)arg;
  double t0 = sc_now_ms();
  if (!sc_job_wait(job, (double)ms)) {
    sc_error_set(err, SC_ERR_CANCELLED, "cancelled after %.0f ms", sc_now_ms() - t0);
    return NULL;
  }
  return json_pack("{s:I}", "sleptMs", ms);
}

static void handle_test_sleep(req *r) {
  json_t *ms = json_object_get(r->params, "ms");
  if (!json_is_integer(ms) || json_integer_value(ms) < 0 ||
      json_integer_value(ms) > 600000) {
    sc_lsp__bad_params(r, "ms must be an integer from 0 to 600000");
    return;
  }
  const char *uri = NULL;
  if (json_object_get(r->params, "textDocument") && !(uri = get_uri(r))) return;
  json_int_t *arg = malloc(sizeof *arg);
  if (!arg) {
    sc_lsp__send_error(r->s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  /* Inline jobs (fuzzing) must not stall the caller: they do not sleep. */
  *arg = r->s->opts.synchronous_jobs ? 0 : json_integer_value(ms);
  sc_lsp__post_job(r->s, r->id, r->method, uri, sleep_job, arg, free, NULL);
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long pages_total = 0, pages_rss = 0;
  int got = fscanf(f, "%ld %ld", &pages_total, &pages_rss);
  fclose(f);
  return got == 2 ? pages_rss * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static void handle_test_stats(req *r) {
  json_t *stats = json_pack("{s:I, s:I, s:I, s:I, s:I}", "openDocuments",
                        (json_int_t)sc_document_store_count(r->s->docs), "pendingJobs",
                        (json_int_t)(sc_worker_pending(r->s->workers[SC_LANE_MODEL]) +
                                     sc_worker_pending(r->s->workers[SC_LANE_NETWORK])),
                        "inflight",
                        (json_int_t)r->s->n_inflight, "rssKb", (json_int_t)rss_kb(),
                        "garbageBytes", (json_int_t)r->s->reader.garbage_bytes);
  json_t *cstats = r->s->feature->stats(r->s);
  json_object_update(stats, cstats);
  json_decref(cstats);
  sc_lsp__send_result(r->s, r->id, stats);
}

/* ======================= dispatch ========================================== */

/* The core's methods; the feature's come from its own table. */
static const sc_lsp_method k_methods[] = {
    {"initialize", handle_initialize, SC_METHOD_REQUEST},
    {"initialized", handle_initialized, 0},
    {"shutdown", handle_shutdown, SC_METHOD_REQUEST},
    {"exit", handle_exit, 0},
    {"textDocument/didOpen", handle_did_open, 0},
    {"textDocument/didChange", handle_did_change, 0},
    {"textDocument/didClose", handle_did_close, 0},
    {"textDocument/didSave", handle_did_save, 0},
    {"$/cancelRequest", handle_cancel, 0},
    {"$/setTrace", handle_set_trace, 0},
    {"workspace/didChangeConfiguration", handle_did_change_configuration, 0},
    {"workspace/didChangeWatchedFiles", handle_did_change_watched_files, 0},
    {"sculpt/test/document", handle_test_document, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
    {"sculpt/test/offset", handle_test_offset, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
    {"sculpt/test/sleep", handle_test_sleep, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
    {"sculpt/test/stats", handle_test_stats, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
};

static const sc_lsp_method *find_in(const sc_lsp_method *table, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

/* The method's row, or NULL when there is none (or it is a test hook and
 * test hooks are off). */
static const sc_lsp_method *find_method(const sc_lsp_server *s, const char *name) {
  const sc_lsp_method *m = find_in(k_methods, sizeof k_methods / sizeof k_methods[0], name);
  if (!m) m = find_in(s->feature->methods, s->feature->n_methods, name);
  return m && (m->flags & SC_METHOD_TEST_HOOK) && !s->opts.test_hooks ? NULL : m;
}

static void handle_response(sc_lsp_server *s, json_t *msg) {
  json_t *id = json_object_get(msg, "id");
  if (!json_is_integer(id)) {
    SC_LOG_WARN("a response with an id we never sent; ignored");
    return;
  }
  for (outgoing **p = &s->outgoing; *p; p = &(*p)->next) {
    if ((*p)->id != json_integer_value(id)) continue;
    outgoing *o = *p;
    *p = o->next;
    json_t *error = json_object_get(msg, "error");
    o->on_response(s, error ? NULL : json_object_get(msg, "result"), error);
    free(o);
    return;
  }
  SC_LOG_WARN("a response to unknown request %lld; ignored",
              (long long)json_integer_value(id));
}

static void dispatch(sc_lsp_server *s, json_t *msg) {
  if (json_is_array(msg)) {
    sc_lsp__send_error(s, NULL, SC_RPC_INVALID_REQUEST, "batch requests are not supported");
    return;
  }
  if (!json_is_object(msg)) {
    sc_lsp__send_error(s, NULL, SC_RPC_INVALID_REQUEST, "a message must be a JSON object");
    return;
  }
  json_t *id = json_object_get(msg, "id");
  bool has_id = id != NULL;
  bool id_ok = json_is_integer(id) || json_is_string(id);
  json_t *reply_id = id_ok ? id : NULL;
  const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
  if (!version || strcmp(version, "2.0") != 0) {
    sc_lsp__send_error(s, reply_id, SC_RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
    return;
  }
  json_t *jmethod = json_object_get(msg, "method");
  if (!jmethod) {
    if (has_id && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
      handle_response(s, msg);
      return;
    }
    sc_lsp__send_error(s, reply_id, SC_RPC_INVALID_REQUEST, "a message needs a method");
    return;
  }
  if (!json_is_string(jmethod)) {
    sc_lsp__send_error(s, reply_id, SC_RPC_INVALID_REQUEST, "method must be a string");
    return;
  }
  if (has_id && !id_ok) {
    sc_lsp__send_error(s, NULL, SC_RPC_INVALID_REQUEST, "id must be an integer or a string");
    return;
  }
  json_t *params = json_object_get(msg, "params");
  /* "params": null is what some clients send for void; treat it as absent. */
  if (json_is_null(params)) params = NULL;
  if (params && !json_is_object(params) && !json_is_array(params)) {
    if (has_id) sc_lsp__send_error(s, id, SC_RPC_INVALID_PARAMS, "params must be an object or an array");
    else SC_LOG_WARN("%s: params must be an object or an array", json_string_value(jmethod));
    return;
  }
  const char *name = json_string_value(jmethod);
  req r = {s, has_id ? id : NULL, name, params};

  if (!has_id) {
    /* Notifications: never answered. */
    if (strcmp(name, "exit") == 0) {
      handle_exit(&r);
      return;
    }
    if (s->state == LC_UNINITIALIZED || s->state == LC_EXITED) return;
    const sc_lsp_method *m = find_method(s, name);
    if (!m || (m->flags & SC_METHOD_REQUEST)) {
      if (strncmp(name, "$/", 2) != 0) SC_LOG_DEBUG("ignoring notification %s", name);
      return;
    }
    m->fn(&r);
    return;
  }

  if (s->state == LC_UNINITIALIZED && strcmp(name, "initialize") != 0) {
    sc_lsp__send_error(s, id, SC_RPC_SERVER_NOT_INITIALIZED, "%s: the server is not initialized", name);
    return;
  }
  if (s->state == LC_SHUTDOWN || s->state == LC_EXITED) {
    sc_lsp__send_error(s, id, SC_RPC_INVALID_REQUEST, "%s: the server is shutting down", name);
    return;
  }
  const sc_lsp_method *m = find_method(s, name);
  if (!m || !(m->flags & SC_METHOD_REQUEST)) {
    sc_lsp__send_error(s, id, SC_RPC_METHOD_NOT_FOUND, "method not found: %s", name);
    return;
  }
  m->fn(&r);
}

static void on_frame(void *user, sc_frame_event ev, const char *body, size_t len) {
  sc_lsp_server *s = user;
  switch (ev) {
  case SC_FRAME_GARBAGE:
    s->garbage_run += len;
    return;
  case SC_FRAME_OVERSIZED:
    SC_LOG_ERROR("skipping a %zu-byte message: over the %zu-byte limit", len,
                 s->opts.max_message_size);
    return;
  case SC_FRAME_MESSAGE:
    break;
  }
  if (s->garbage_run) {
    SC_LOG_WARN("skipped %zu bytes that were not a message header", s->garbage_run);
    s->garbage_run = 0;
  }
  if (s->state == LC_EXITED) return;
  json_error_t jerr;
  json_t *msg = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  if (!msg) {
    sc_lsp__send_error(s, NULL, SC_RPC_PARSE_ERROR, "parse error at line %d column %d: %s",
               jerr.line, jerr.column, jerr.text);
    return;
  }
  dispatch(s, msg);
  json_decref(msg);
}

/* ======================= public API ======================================== */

void sc_lsp_options_default(sc_lsp_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->max_message_size = SC_LSP_DEFAULT_MAX_MESSAGE;
  const char *hooks = getenv("SCULPT_TEST_HOOKS");
  opts->test_hooks = hooks && strcmp(hooks, "1") == 0;
  opts->device = SC_DEVICE_AUTO;
}

static void on_worker_done(void *user) {
  sc_lsp_server *s = user;
  if (s->wake) s->wake(s->user);
}

sc_lsp_server *sc_lsp_server_new(const sc_lsp_options *opts, sc_lsp_write_fn write,
                                 sc_lsp_wake_fn wake, void *user) {
  sc_lsp_server *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->opts = *opts;
  s->write = write;
  s->wake = wake;
  s->user = user;
  s->enc = SC_POS_UTF16;
  s->exit_code = 1;
  atomic_store(&s->client_log_level, (int)SC_LOG_WARN);
  pthread_mutex_init(&s->log_mu, NULL);
  sc_frame_reader_init(&s->reader, opts->max_message_size);
  s->docs = sc_document_store_new();
  s->feature = &sc_completion_feature;
  s->feature_state = s->feature->create();
  /* Inline jobs complete inside post; their answers wait for the next drain. */
  bool workers = true;
  for (int l = 0; l < SC_LANE_COUNT; l++)
    workers &= (s->workers[l] = sc_worker_new(!opts->synchronous_jobs, on_worker_done, s)) != NULL;
  if (!s->docs || !workers || !s->feature_state) {
    sc_lsp_server_free(s);
    return NULL;
  }
  sc_log_set_sink(log_sink, s);
  return s;
}

void sc_lsp_server_free(sc_lsp_server *s) {
  if (!s) return;
  sc_log_set_sink(NULL, NULL);
  for (int l = 0; l < SC_LANE_COUNT; l++)
    if (s->workers[l]) sc_worker_free(s->workers[l]);
  if (s->feature_state) s->feature->destroy(s->feature_state);
  free(s->inflight);
  sc_document_store_free(s->docs);
  sc_frame_reader_free(&s->reader);
  while (s->outgoing) {
    outgoing *o = s->outgoing;
    s->outgoing = o->next;
    free(o);
  }
  log_entry *e = s->log_head;
  while (e) {
    log_entry *next = e->next;
    free(e);
    e = next;
  }
  pthread_mutex_destroy(&s->log_mu);
  free(s);
}

void sc_lsp_server_feed(sc_lsp_server *s, const char *data, size_t len) {
  if (sc_frame_reader_feed(&s->reader, data, len, on_frame, s) != SC_OK)
    SC_LOG_ERROR("out of memory buffering input; %zu bytes dropped", len);
  /* Garbage is reported once per run, when the next message arrives (or at
   * the end), not once per read. */
  sc_lsp_server_drain(s);
}

void sc_lsp_server_eof(sc_lsp_server *s) {
  if (s->state == LC_EXITED) return;
  if (!s->shutdown_requested) SC_LOG_INFO("input closed without shutdown and exit");
  req r = {s, NULL, "exit", NULL};
  handle_exit(&r);
}

void sc_lsp_server_finish(sc_lsp_server *s) {
  cancel_all_jobs(s, SC_JOB_SHUTDOWN);
  for (int l = 0; l < SC_LANE_COUNT; l++) sc_worker_stop(s->workers[l]);
  sc_job *job;
  for (int l = 0; l < SC_LANE_COUNT; l++)
    while ((job = sc_worker_take_done(s->workers[l]))) answer_job(s, job);
  /* Queued jobs were answered by cancel_all_jobs; nothing may be left. */
  if (s->n_inflight) SC_LOG_ERROR("%zu requests left unanswered at exit", s->n_inflight);
  if (s->garbage_run) {
    SC_LOG_WARN("skipped %zu bytes that were not a message header", s->garbage_run);
    s->garbage_run = 0;
  }
  flush_logs(s);
}

bool sc_lsp_server_done(const sc_lsp_server *s, int *code) {
  if (s->state != LC_EXITED) return false;
  if (code) *code = s->exit_code;
  return true;
}

/* server.c — the JSON-RPC core's front: the server's life (new, feed,
 * drain, EOF, finish, free), the lifecycle methods (initialize,
 * initialized, shutdown, exit), configuration and tracing, and dispatch:
 * each message is checked and its method looked up by name in the core's
 * table, then in the feature's (sc_lsp_feature). The rest of the core:
 * core.c (the server as its parts see it: accessors, parameter helpers,
 * the loop's timing), rpc.c (messages out, responses back, logs to the
 * client), jobs.c (requests in flight), sync.c (text synchronisation),
 * test_hooks.c. server.c is the top of lsp/ below stdio.c: nothing under it
 * calls into it (lsp_impl.h, "Layers").
 * Spec: JSON-RPC 2.0 (error codes -32700..-32600) and LSP 3.17 (lifecycle,
 * text synchronisation, $/cancelRequest, -32002, -32800, -32801). */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
      sc_server__set_client_log_level(s, level);
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

static void handle_set_trace(sc_lsp_req *r) {
  sc_log_level level;
  if (sc_server__level_from_trace(json_string_value(json_object_get(r->params, "value")), &level))
    sc_server__set_client_log_level(r->s, level);
}

static void handle_did_change_configuration(sc_lsp_req *r) {
  json_t *settings = json_object_get(r->params, "settings");
  apply_settings(r->s, json_object_get(settings, "sculpt"));
  if (r->s->client_config_pull && !json_object_get(settings, "sculpt"))
    sc_lsp__send_request(r->s, "workspace/configuration",
                 json_pack("{s:[{s:s}]}", "items", "section", "sculpt"), on_configuration);
}

/* ======================= lifecycle ========================================= */

static void handle_initialize(sc_lsp_req *r) {
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
  if (sc_server__level_from_trace(json_string_value(json_object_get(r->params, "trace")), &level))
    sc_server__set_client_log_level(s, level);
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

static void handle_initialized(sc_lsp_req *r) {
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

static void handle_shutdown(sc_lsp_req *r) {
  sc_lsp_server *s = r->s;
  s->shutdown_requested = true;
  s->state = LC_SHUTDOWN;
  sc_server__cancel_all_jobs(s, SC_JOB_CANCELLED);
  sc_lsp__send_result(s, r->id, json_null());
}

static void handle_exit(sc_lsp_req *r) {
  sc_lsp_server *s = r->s;
  s->exit_code = s->shutdown_requested ? 0 : 1;
  sc_server__cancel_all_jobs(s, SC_JOB_SHUTDOWN);
  s->state = LC_EXITED;
}

/* ======================= dispatch ========================================== */

/* The core's methods; the feature's come from its own table. */
static const sc_lsp_method k_methods[] = {
    {"initialize", handle_initialize, SC_METHOD_REQUEST},
    {"initialized", handle_initialized, 0},
    {"shutdown", handle_shutdown, SC_METHOD_REQUEST},
    {"exit", handle_exit, 0},
    {"textDocument/didOpen", sc_server__handle_did_open, 0},
    {"textDocument/didChange", sc_server__handle_did_change, 0},
    {"textDocument/didClose", sc_server__handle_did_close, 0},
    {"textDocument/didSave", sc_server__handle_did_save, 0},
    {"$/cancelRequest", sc_server__handle_cancel, 0},
    {"$/setTrace", handle_set_trace, 0},
    {"workspace/didChangeConfiguration", handle_did_change_configuration, 0},
    {"workspace/didChangeWatchedFiles", sc_server__handle_did_change_watched_files, 0},
    {"sculpt/test/document", sc_server__handle_test_document,
     SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
    {"sculpt/test/offset", sc_server__handle_test_offset, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
    {"sculpt/test/sleep", sc_server__handle_test_sleep, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
    {"sculpt/test/stats", sc_server__handle_test_stats, SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
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

static void dispatch_request(sc_lsp_server *s, sc_lsp_req *r);

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
      sc_server__handle_response(s, msg);
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
  sc_lsp_req r = {s, has_id ? id : NULL, name, params};

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
    const char *outer = s->answering;
    s->answering = name;
    m->fn(&r);
    s->answering = outer;
    return;
  }

  /* Errors sent from here on are this method's (sculpt/status's last error). */
  const char *outer = s->answering;
  s->answering = name;
  dispatch_request(s, &r);
  s->answering = outer;
}

/* A request, with s->answering set: checked against the lifecycle, then
 * handled by its row. */
static void dispatch_request(sc_lsp_server *s, sc_lsp_req *rp) {
  sc_lsp_req r = *rp;
  json_t *id = r.id;
  const char *name = r.method;
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

/* A message that parsed (msg, owned: released here), or did not (msg NULL,
 * jerr says why). */
static void dispatch_parsed(sc_lsp_server *s, json_t *msg, const json_error_t *jerr,
                            size_t replaced) {
  if (!msg) {
    sc_lsp__send_error(s, NULL, SC_RPC_PARSE_ERROR, "parse error at line %d column %d: %s",
                       jerr->line, jerr->column, jerr->text);
    return;
  }
  /* A lone UTF-16 surrogate (\ud800) is text an editor sent, not a broken
   * message: U+FFFD stands in (as Go's decoder, gopls's, does), and the
   * request goes on. */
  if (replaced)
    SC_LOG_WARN("%s: %zu lone UTF-16 surrogate escape%s replaced by U+FFFD",
                json_is_object(msg) && json_is_string(json_object_get(msg, "method"))
                    ? json_string_value(json_object_get(msg, "method"))
                    : "a message",
                replaced, replaced == 1 ? "" : "s");
  dispatch(s, msg);
  json_decref(msg);
}

/* A body this long is parsed on a thread of its own, so that the loop goes
 * on writing answers and taking finished jobs meanwhile: jansson decodes
 * about 75 MB/s here (13 ms a MB, measured: a 2 MB didOpen held the loop
 * 30 ms of CPU, an 8 MB one 135 ms, 60 MB 0.9 s, almost all of it the
 * parse). Messages stay in order: the reader pauses behind it, and the
 * stdio runner stops reading until it is done (sc_lsp_server_wants_input),
 * so what the client sends meanwhile waits in the pipe, not in our memory. */
#define SC_LSP_PARSE_ELSEWHERE_BYTES ((size_t)256 << 10)

struct sc_big_parse {
  sc_lsp_server *s;
  pthread_t thread;
  char *buf; /* owned: the reader's buffer, taken (sc_frame_reader_take) */
  const char *body; /* in buf */
  size_t len;
  json_t *msg; /* the result (owned), or NULL with jerr */
  json_error_t jerr;
  size_t replaced;
  /* A didOpen's text, made here too (its copy and line index cost the loop
   * as much as the parse did), for the string made_src of msg. */
  sc_document_text made;
  const char *made_src;
  atomic_bool done;
};

static void *parse_thread(void *arg) {
  sc_big_parse *p = arg;
  p->msg = sc_json_load_text(p->body, p->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &p->jerr,
                             &p->replaced);
  json_t *m = p->msg, *td = json_object_get(json_object_get(m, "params"), "textDocument");
  json_t *text = json_object_get(td, "text");
  const char *method = json_string_value(json_object_get(m, "method"));
  if (method && strcmp(method, "textDocument/didOpen") == 0 && json_is_string(text) &&
      sc_document_text_make(json_string_value(text), json_string_length(text), &p->made) ==
          SC_OK)
    p->made_src = json_string_value(text);
  atomic_store(&p->done, true);
  if (p->s->wake) p->s->wake(p->s->user);
  return NULL;
}

/* Starts the parse of body elsewhere and pauses the reader; false (nothing
 * started) when there is no memory or thread for it: the caller parses. */
static bool parse_elsewhere(sc_lsp_server *s, const char *body, size_t len) {
  if (!s->wake || s->parsing) return false;
  sc_big_parse *p = calloc(1, sizeof *p);
  if (!p) return false;
  p->s = s;
  p->body = body;
  p->len = len;
  atomic_init(&p->done, false);
  /* The reader's buffer goes with the body: an 8 MB copy into fresh pages
   * cost the loop 10-20 ms here. */
  if (!(p->buf = sc_frame_reader_take(&s->reader))) {
    free(p);
    return false;
  }
  if (pthread_create(&p->thread, NULL, parse_thread, p) != 0) {
    /* The body stays readable in the buffer taken: parsed here, then. */
    s->parsing = NULL;
    json_error_t jerr;
    size_t replaced;
    json_t *msg =
        sc_json_load_text(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr, &replaced);
    dispatch_parsed(s, msg, &jerr, replaced);
    free(p->buf);
    free(p);
    return true;
  }
  s->parsing = p;
  s->reader.paused = true;
  return true;
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
  if (len >= SC_LSP_PARSE_ELSEWHERE_BYTES && !s->opts.synchronous_jobs &&
      parse_elsewhere(s, body, len))
    return;
  json_error_t jerr;
  size_t replaced;
  json_t *msg = sc_json_load_text(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr, &replaced);
  dispatch_parsed(s, msg, &jerr, replaced);
}

/* The parse off the loop is done: its message goes first, then the frames
 * that waited behind it (which may pause the reader again), then the end
 * of the input if it came meanwhile. */
static void finish_parse(sc_lsp_server *s) {
  sc_big_parse *p = s->parsing;
  if (!p || !atomic_load(&p->done)) return;
  pthread_join(p->thread, NULL);
  s->parsing = NULL;
  if (s->state == LC_EXITED) {
    json_decref(p->msg);
  } else {
    s->made = p->made.text ? &p->made : NULL;
    s->made_src = p->made_src;
    dispatch_parsed(s, p->msg, &p->jerr, p->replaced);
    s->made = NULL;
    s->made_src = NULL;
  }
  sc_document_text_free(&p->made); /* when nothing took it */
  free(p->buf);
  free(p);
  s->reader.paused = false;
  if (sc_frame_reader_feed(&s->reader, NULL, 0, on_frame, s) != SC_OK)
    SC_LOG_ERROR("out of memory buffering input");
  if (!s->parsing && s->eof_pending) {
    s->eof_pending = false;
    sc_lsp_server_eof(s);
  }
}

/* At the end: a parse still running is waited for, and its message dropped. */
static void drop_parse(sc_lsp_server *s) {
  sc_big_parse *p = s->parsing;
  if (!p) return;
  pthread_join(p->thread, NULL);
  json_decref(p->msg);
  sc_document_text_free(&p->made);
  free(p->buf);
  free(p);
  s->parsing = NULL;
}

/* ======================= public API ======================================== */

void sc_lsp_options_default(sc_lsp_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->max_message_size = SC_LSP_DEFAULT_MAX_MESSAGE;
  const char *hooks = getenv("SCULPT_TEST_HOOKS");
  opts->test_hooks = hooks && strcmp(hooks, "1") == 0;
  opts->device = SC_DEVICE_AUTO;
  opts->weights = SC_WEIGHTS_AUTO;
}

static void on_worker_done(void *user) {
  sc_lsp_server *s = user;
  if (s->wake) s->wake(s->user);
}

/* The longest text each lane's jobs parse on the worker's own stack: the
 * model lane's completions and code actions parse documents up to
 * maxDocumentBytes' default (2 MB), the background lane's index files up to
 * its bound (1 MiB); the network lane's code actions for a remote backend
 * parse on a thread of their own past the default stack. A stack is
 * reserved, not used: 1 GB for the model lane's. */
static const size_t k_lane_parse_bytes[SC_LANE_COUNT] = {
    [SC_LANE_MODEL] = (size_t)2 << 20, [SC_LANE_BACKGROUND] = (size_t)1 << 20,
    [SC_LANE_NETWORK] = 0};

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
    workers &= (s->workers[l] = sc_worker_new(!opts->synchronous_jobs, k_lane_parse_bytes[l],
                                              on_worker_done, s)) != NULL;
  if (!s->docs || !workers || !s->feature_state) {
    sc_lsp_server_free(s);
    return NULL;
  }
  sc_log_set_sink(sc_server__log_sink, s);
  return s;
}

void sc_lsp_server_free(sc_lsp_server *s) {
  if (!s) return;
  drop_parse(s);
  sc_log_set_sink(NULL, NULL);
  for (int l = 0; l < SC_LANE_COUNT; l++)
    if (s->workers[l]) sc_worker_free(s->workers[l]);
  sc_server__progress_free_all(s);
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
  sc_server__loop_enter(s);
  if (sc_frame_reader_feed(&s->reader, data, len, on_frame, s) != SC_OK)
    SC_LOG_ERROR("out of memory buffering input; %zu bytes dropped", len);
  /* Garbage is reported once per run, when the next message arrives (or at
   * the end), not once per read. */
  sc_lsp_server_drain(s);
  sc_server__loop_leave(s);
}

bool sc_lsp_server_wants_input(const sc_lsp_server *s) { return !s->parsing; }

void sc_lsp_server_drain(sc_lsp_server *s) {
  sc_server__loop_enter(s);
  finish_parse(s);
  sc_server__drain_jobs(s);
  sc_server__loop_leave(s);
}

void sc_lsp_server_eof(sc_lsp_server *s) {
  if (s->state == LC_EXITED) return;
  if (s->parsing) { /* the messages before the end go first */
    s->eof_pending = true;
    return;
  }
  if (!s->shutdown_requested) SC_LOG_INFO("input closed without shutdown and exit");
  sc_lsp_req r = {s, NULL, "exit", NULL};
  handle_exit(&r);
}

void sc_lsp_server_finish(sc_lsp_server *s) {
  drop_parse(s);
  sc_server__cancel_all_jobs(s, SC_JOB_SHUTDOWN);
  for (int l = 0; l < SC_LANE_COUNT; l++) sc_worker_stop(s->workers[l]);
  sc_job *job;
  for (int l = 0; l < SC_LANE_COUNT; l++)
    while ((job = sc_worker_take_done(s->workers[l]))) sc_server__answer_job(s, job);
  /* Queued jobs were answered by sc_server__cancel_all_jobs; nothing may be left. */
  if (s->n_inflight) SC_LOG_ERROR("%zu requests left unanswered at exit", s->n_inflight);
  if (s->garbage_run) {
    SC_LOG_WARN("skipped %zu bytes that were not a message header", s->garbage_run);
    s->garbage_run = 0;
  }
  sc_server__flush_logs(s);
}

bool sc_lsp_server_done(const sc_lsp_server *s, int *code) {
  if (s->state != LC_EXITED) return false;
  if (code) *code = s->exit_code;
  return true;
}

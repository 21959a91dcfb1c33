/* rpc.c — the server's messages: framing and sending results, errors,
 * notifications and server->client requests (each JSON-RPC message with its
 * Content-Length header), matching the client's responses to those
 * requests, and the log lines bound for window/logMessage, queued from any
 * thread and flushed on the loop once initialize is answered. */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Requests that fail in the normal course of editing (cancelled,
 * superseded, the document changed) and methods a client probes for are
 * not errors a user needs to see; the rest become sculpt/status's last
 * error. */
static bool worth_reporting(int code) {
  return code != SC_RPC_REQUEST_CANCELLED && code != SC_RPC_CONTENT_MODIFIED &&
         code != SC_RPC_METHOD_NOT_FOUND;
}

/* The feature's status carries the last error; nothing but the initialize
 * answer may go out before initialize is answered. */
static void notify_error_changed(sc_lsp_server *s) {
  if (s->feature->on_error && s->state != LC_UNINITIALIZED && s->state != LC_EXITED)
    s->feature->on_error(s);
}

static void record_error(sc_lsp_server *s, int code, const char *text) {
  last_error *e = &s->last_error;
  e->set = true;
  e->code = code;
  snprintf(e->method, sizeof e->method, "%s", s->answering ? s->answering : "");
  snprintf(e->message, sizeof e->message, "%s", text);
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char day[24];
  strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(e->time, sizeof e->time, "%s.%03ldZ", day, ts.tv_nsec / 1000000);
  notify_error_changed(s);
}

void sc_lsp__send_result(sc_lsp_server *s, json_t *id, json_t *result) {
  json_t *msg = json_object();
  json_object_set(msg, "id", id ? id : json_null());
  json_object_set_new(msg, "result", result ? result : json_null());
  send_message(s, msg);
  /* The method that failed last works again: the error is history. */
  last_error *e = &s->last_error;
  if (e->set && s->answering && strcmp(e->method, s->answering) == 0) {
    e->set = false;
    notify_error_changed(s);
  }
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
  if (worth_reporting(code)) record_error(s, code, text);
}

const char *sc_lsp__last_error(const sc_lsp_server *s, int *code, const char **method,
                               const char **time) {
  const last_error *e = &s->last_error;
  if (!e->set) return NULL;
  if (code) *code = e->code;
  if (method) *method = e->method;
  if (time) *time = e->time;
  return e->message;
}

void sc_lsp__send_notification(sc_lsp_server *s, const char *method, json_t *params) {
  json_t *msg = json_object();
  json_object_set_new(msg, "method", json_string(method));
  json_object_set_new(msg, "params", params ? params : json_object());
  send_message(s, msg);
}

static void send_request(sc_lsp_server *s, const char *method, json_t *params,
                         void (*on_response)(sc_lsp_server *, json_t *, json_t *),
                         void (*on_response_with)(sc_lsp_server *, json_t *, json_t *, void *),
                         void *user) {
  outgoing *o = calloc(1, sizeof *o);
  if (!o) {
    json_decref(params);
    SC_LOG_ERROR("out of memory sending %s", method);
    return;
  }
  o->id = ++s->next_out_id;
  o->on_response = on_response;
  o->on_response_with = on_response_with;
  o->user = user;
  o->next = s->outgoing;
  s->outgoing = o;
  json_t *msg = json_object();
  json_object_set_new(msg, "id", json_integer(o->id));
  json_object_set_new(msg, "method", json_string(method));
  json_object_set_new(msg, "params", params ? params : json_object());
  send_message(s, msg);
}

void sc_lsp__send_request(sc_lsp_server *s, const char *method, json_t *params,
                          void (*on_response)(sc_lsp_server *, json_t *, json_t *)) {
  send_request(s, method, params, on_response, NULL, NULL);
}

void sc_server__send_request_with(sc_lsp_server *s, const char *method, json_t *params,
                                  void (*on_response)(sc_lsp_server *, json_t *, json_t *,
                                                      void *),
                                  void *user) {
  send_request(s, method, params, NULL, on_response, user);
}

void sc_server__handle_response(sc_lsp_server *s, json_t *msg) {
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
    json_t *result = error ? NULL : json_object_get(msg, "result");
    if (o->on_response_with) o->on_response_with(s, result, error, o->user);
    else o->on_response(s, result, error);
    free(o);
    return;
  }
  SC_LOG_WARN("a response to unknown request %lld; ignored",
              (long long)json_integer_value(id));
}

void sc_server__log_sink(void *user, sc_log_level level, const char *text) {
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

void sc_server__flush_logs(sc_lsp_server *s) {
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

void sc_server__set_client_log_level(sc_lsp_server *s, sc_log_level level) {
  atomic_store(&s->client_log_level, (int)level);
}

bool sc_server__level_from_trace(const char *trace, sc_log_level *out) {
  if (!trace) return false;
  if (strcmp(trace, "off") == 0) *out = SC_LOG_WARN;
  else if (strcmp(trace, "messages") == 0) *out = SC_LOG_INFO;
  else if (strcmp(trace, "verbose") == 0) *out = SC_LOG_DEBUG;
  else return false;
  return true;
}

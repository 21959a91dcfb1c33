/* core.c — the server as its parts see it: the accessors the feature and
 * the core's files use (the loop, the encoding, the options, the client's
 * capabilities, the feature's state, the documents), the parameter helpers
 * (invalid params as a JSON-RPC error or a log line, positions, the
 * document a request names) and the loop's own timing (sculpt/test/stats).
 * It sits under everything that handles a message, so that the feature and
 * jobs.c need not call up into server.c (lsp_impl.h, "Layers"). */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* ======================= accessors for the feature ========================= */

void sc_lsp__set_loop(sc_lsp_server *s, struct ev_loop *loop) { s->loop = loop; }
struct ev_loop *sc_lsp__loop(sc_lsp_server *s) { return s->loop; }

sc_pos_encoding sc_lsp__encoding(const sc_lsp_server *s) { return s->enc; }
const sc_lsp_options *sc_lsp__options(const sc_lsp_server *s) { return &s->opts; }
bool sc_lsp__client_progress(const sc_lsp_server *s) { return s->client_progress; }
bool sc_lsp__client_action_resolve(const sc_lsp_server *s) { return s->client_action_resolve; }
void *sc_lsp__feature(sc_lsp_server *s) { return s->feature_state; }
sc_document_store *sc_lsp__documents(sc_lsp_server *s) { return s->docs; }

/* ======================= parameter helpers ================================= */

/* Reports invalid params: an error response for requests, a log line for
 * notifications (which cannot be answered). Returns false for chaining. */
bool sc_lsp__bad_params(sc_lsp_req *r, const char *fmt, ...) {
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
const char *sc_server__get_uri(sc_lsp_req *r) {
  json_t *td = json_object_get(r->params, "textDocument");
  const char *uri = json_string_value(json_object_get(td, "uri"));
  if (!uri) sc_lsp__bad_params(r, "textDocument.uri must be a string");
  return uri;
}

sc_document *sc_lsp__find_document(sc_lsp_server *s, const char *uri) {
  return uri ? sc_document_store_get(s->docs, uri) : NULL;
}

sc_document *sc_lsp__get_open_document(sc_lsp_req *r) {
  const char *uri = sc_server__get_uri(r);
  if (!uri) return NULL;
  sc_document *d = sc_document_store_get(r->s->docs, uri);
  if (!d) sc_lsp__bad_params(r, "document not open: %s", uri);
  return d;
}

/* ======================= the loop's timing ================================= */

const double k_loop_bucket_ms[LOOP_BUCKETS] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 1e300};

void sc_server__loop_restart(sc_lsp_server *s) {
  s->timing.t0_wall = sc_now_ms();
  s->timing.t0_cpu = sc_thread_cpu_ms();
}

void sc_server__loop_enter(sc_lsp_server *s) {
  if (s->timing.depth++ == 0) sc_server__loop_restart(s);
}

void sc_server__loop_leave(sc_lsp_server *s) {
  loop_timing *t = &s->timing;
  if (--t->depth > 0) return;
  double wall = sc_now_ms() - t->t0_wall, cpu = sc_thread_cpu_ms() - t->t0_cpu;
  t->calls++;
  if (wall > t->max_wall_ms) t->max_wall_ms = wall;
  if (cpu > t->max_cpu_ms) t->max_cpu_ms = cpu;
  int i = 0, k = 0;
  while (wall > k_loop_bucket_ms[i]) i++;
  while (cpu > k_loop_bucket_ms[k]) k++;
  t->wall_le[i]++;
  t->cpu_le[k]++;
}

bool sc_server__take_made_text(sc_lsp_server *s, const char *src, sc_document_text *out) {
  if (!s->made || !s->made->text || s->made_src != src) return false;
  *out = *s->made;
  *s->made = (sc_document_text){0};
  return true;
}

/* serve_api.c — the routes of `sculpt serve`: each complete request from
 * the connection layer is authorized and answered here. GET /health,
 * GET /metrics (Prometheus text exposition format 0.0.4,
 * https://prometheus.io/docs/instrumenting/exposition_formats/) and
 * GET /v1/models are answered at once; a completion (POST
 * /v1/fim/completions, /v1/completions, or llama.cpp's /infill) is parsed
 * into a job (serve_shape.c) and queued (serve_sched.c), and what the
 * engine posts back is delivered here: while streaming, increments of the
 * stable prefix or whole drafts (serve_shape.c says which and why), then
 * the answer. */
#define _POSIX_C_SOURCE 200809L
#include "serve_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- what the engine posted ----------------------------------------------------- */

/* The end of a request whose job is over: its answer, or the stream's
 * last events. (j stays the caller's.) */
static void send_answer(conn *c, job *j) {
  server *s = c->s;
  if (!j->stream) {
    sc_serve__conn_respond_json(c, 200, sc_serve__answer(s, j), NULL, true);
    return;
  }
  const char *t = j->text ? j->text : "";
  size_t len = j->text ? j->text_len : 0;
  if (!j->stream_drafts) {
    /* The increments sent so far are a prefix of the answer (serve_shape.c,
     * "Streaming"); the rest goes now. */
    if (c->sent <= len) {
      t += c->sent;
      len -= c->sent;
    } else {
      SC_LOG_ERROR("serve: %s: streamed %zu bytes of a %zu-byte answer", j->id, c->sent, len);
      len = 0;
    }
  }
  sc_serve__sse_start(c);
  if (j->api == API_INFILL && !j->stream_drafts) {
    /* llama.cpp's last event carries no content: the rest is one more
     * increment before it. */
    if (len) sc_serve__sse_event(c, sc_serve__stream_event(s, j, t, len, 0, false));
    len = 0;
  }
  sc_serve__sse_event(c, sc_serve__stream_event(s, j, t, len, 0, true));
  sc_serve__sse_end(c, j->api == API_OPENAI);
  sc_serve__conn_request_done(c, 200, true);
}

/* What the engine posted for this connection's job. */
static void deliver(server *s, job *j, char *draft, size_t draft_len, int step,
                    enum job_state state) {
  conn *c = j->conn;
  if (!c) return;
  /* A slow reader gets fewer events, never fewer bytes: an increment is
   * counted from what was sent, a draft replaces the last. */
  if (j->stream && draft && state != JOB_FAILED &&
      c->out_len - c->out_start < MAX_OUTPUT_BACKLOG) {
    if (j->stream_drafts && step > c->last_step_sent) {
      sc_serve__sse_start(c);
      sc_serve__sse_event(c, sc_serve__stream_event(s, j, draft, draft_len, step, false));
      c->last_step_sent = step;
    } else if (!j->stream_drafts && state != JOB_DONE) {
      size_t n = sc_serve__sendable(j, draft, draft_len);
      if (n > c->sent) {
        sc_serve__sse_start(c);
        sc_serve__sse_event(
            c, sc_serve__stream_event(s, j, draft + c->sent, n - c->sent, step, false));
        c->sent = n;
      }
    }
  }
  if (state != JOB_DONE && state != JOB_FAILED) {
    sc_serve__conn_flush(c);
    return;
  }
  /* The job is over for this connection. */
  c->job = NULL;
  j->conn = NULL;
  sc_serve__job_release(s, j); /* the connection's reference (the outbox's holds j) */
  if (state == JOB_DONE) {
    send_answer(c, j);
  } else if (c->sse_started) {
    json_t *e = sc_serve__error_body(
        j->err_msg, j->err_status >= 500 ? "server_error" : "invalid_request_error");
    sc_serve__sse_event(c, e);
    sc_serve__sse_end(c, j->api == API_OPENAI);
    sc_serve__conn_request_done(c, j->err_status, true);
  } else {
    sc_serve__conn_error(c, j->err_status, j->err_msg, false);
  }
}

static void completion_parsed(conn *c, job *j, const char *msg);

void sc_serve__wake_cb(struct ev_loop *loop, ev_async *w, int revents) {
  sc_serve__intake_drain(w->data, completion_parsed);
  sc_serve__sched_drain(w->data, deliver);
}

void sc_serve__last_words(server *s) {
  /* Requests still open get a last word before their connections close: a
   * stream its error event and end, a plain request a 503. Best effort:
   * what the sockets take now. */
  for (conn *c = s->conns, *next; c; c = next) {
    next = c->next; /* conn_flush may close c */
    /* A request whose body is still being parsed has a job to come. */
    if ((!c->job && !c->intake) || c->fd < 0 || c->closing) continue;
    if (c->job && c->sse_started) {
      sc_serve__sse_event(c, sc_serve__error_body("the server is shutting down", "server_error"));
      sc_serve__sse_end(c, c->job->api == API_OPENAI);
    } else {
      static const char body[] = "{\"error\":{\"message\":\"the server is shutting down\","
                                 "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
      char head[192];
      int n = snprintf(head, sizeof head,
                       "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                       sizeof body - 1);
      if (sc_serve__conn_send(c, head, (size_t)n)) sc_serve__conn_send(c, body, sizeof body - 1);
    }
    sc_serve__conn_flush(c);
  }
}

/* ---- routes --------------------------------------------------------------------- */

/* Whether the request carries the API key. Constant time in the key: every
 * byte of the key is compared whatever the header holds. */
static bool authorized(const server *s, const sc_http_request *q) {
  if (!s->api_key) return true;
  const char *h = q->authorization;
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
  const char *tok = h + 7;
  size_t len = strlen(tok);
  unsigned char diff = len != s->api_key_len;
  for (size_t i = 0; i < s->api_key_len; i++)
    diff |= (unsigned char)(s->api_key[i] ^ (i < len ? tok[i] : 0));
  return diff == 0;
}

/* A completion in either shape: validated, then queued (or, with nothing
 * to decode, answered at once). */
static void completion_parsed(conn *c, job *j, const char *msg) {
  server *s = c->s;
  if (!j) {
    sc_serve__conn_error(c, 400, msg, false);
    return;
  }
  s->next_id++;
  snprintf(j->id, sizeof j->id, "cmpl-%016llx%08llx",
           (unsigned long long)sc_hash64(&s->next_id, sizeof s->next_id, (uint64_t)time(NULL)),
           s->next_id);
  j->created = (long long)time(NULL);
  j->t_start = sc_now_ms();
  j->refs = 2; /* the connection and the engine */
  j->state = JOB_QUEUED;
  j->slot = -1;
  c->last_step_sent = 0;
  c->sent = 0;
  if (j->max_tokens == 0) {
    /* /infill with n_predict 0: llama.cpp only evaluates the prompt (for
     * its cache); there is no cache here, so nothing to do. */
    j->finish_reason = "length";
    j->t_admit = j->t_done = j->t_start;
    send_answer(c, j);
    sc_serve__job_free(j);
    return;
  }
  if (!sc_serve__sched_submit(s, j)) {
    sc_serve__job_free(j); /* never shared */
    sc_serve__conn_error(c, 429, "the server is busy: the queue is full", false);
    return;
  }
  /* j->conn is the loop thread's alone: setting it after the submit is fine. */
  j->conn = c;
  c->job = j;
}

/* A long body is parsed on the intake thread (serve_intake.c), and
 * completion_parsed runs when it is back. */
static void handle_completion(conn *c, const sc_http_request *q, enum job_api api) {
  if (q->body_len >= SC_SERVE_INTAKE_BYTES && sc_serve__intake_submit(c, api)) return;
  char msg[512];
  job *j = api == API_INFILL
               ? sc_serve__parse_infill(c->s, q->body, q->body_len, msg, sizeof msg)
               : sc_serve__parse_completion(c->s, q->body, q->body_len, msg, sizeof msg);
  completion_parsed(c, j, msg);
}

static void handle_openai(conn *c, const sc_http_request *q) {
  handle_completion(c, q, API_OPENAI);
}

static void handle_infill(conn *c, const sc_http_request *q) {
  handle_completion(c, q, API_INFILL);
}

/* OpenAI's model list (https://platform.openai.com/docs/api-reference/models/list):
 * the one model this server decodes with. */
static void handle_models(conn *c, const sc_http_request *q) {
  server *s = c->s;
  json_t *o = json_pack("{s:s, s:[{s:s, s:s, s:I, s:s}]}", "object", "list", "data", "id",
                        s->model_name, "object", "model", "created", (json_int_t)s->started,
                        "owned_by", "sculpt");
  sc_serve__conn_respond_json(c, 200, o, NULL, false);
}

static void handle_health(conn *c, const sc_http_request *q) {
  server *s = c->s;
  sched_counts k;
  sc_serve__sched_counts(s, &k);
  json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:s}", "status", "ok", "model",
                        s->model_name, "queue_depth", k.pending, "active", k.live,
                        "queue_capacity", s->o.queue, "batch_capacity", s->o.batch, "weights",
                        sc_weights_kind_name(s->info->weights));
  sc_serve__conn_respond_json(c, 200, o, NULL, false);
}

/* Appends printf output to a growing string; false on OOM. */
static bool appendf(char **p, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool appendf(char **p, size_t *len, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*p ? *p + *len : NULL, *p ? *cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if (*p && *len + (size_t)n < *cap) {
      *len += (size_t)n;
      return true;
    }
    size_t nc = *cap ? *cap * 2 : 4096;
    while (nc < *len + (size_t)n + 1) nc *= 2;
    char *np = realloc(*p, nc);
    if (!np) return false;
    *p = np;
    *cap = nc;
  }
}

static void handle_metrics(conn *c, const sc_http_request *q) {
  server *s = c->s;
  sched_counts sc;
  sc_serve__sched_counts(s, &sc);
  char *b = NULL;
  size_t len = 0, cap = 0;
  bool ok = appendf(&b, &len, &cap,
                    "# HELP sculpt_http_requests_total HTTP requests answered, by status.\n"
                    "# TYPE sculpt_http_requests_total counter\n");
  for (int code = 100; code < 600 && ok; code++)
    if (s->by_status[code])
      ok = appendf(&b, &len, &cap, "sculpt_http_requests_total{code=\"%d\"} %llu\n", code,
                   s->by_status[code]);
  ok = ok && appendf(&b, &len, &cap,
                     "# HELP sculpt_completion_duration_seconds Time from a completion "
                     "request to its answer.\n"
                     "# TYPE sculpt_completion_duration_seconds histogram\n");
  unsigned long long cum = 0;
  for (int k = 0; k < N_BUCKETS && ok; k++) {
    cum += s->lat_buckets[k];
    ok = appendf(&b, &len, &cap, "sculpt_completion_duration_seconds_bucket{le=\"%g\"} %llu\n",
                 sc_serve__buckets[k], cum);
  }
  ok = ok &&
       appendf(&b, &len, &cap,
               "sculpt_completion_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
               "sculpt_completion_duration_seconds_sum %.6f\n"
               "sculpt_completion_duration_seconds_count %llu\n"
               "# HELP sculpt_queue_depth Completion requests waiting for a batch slot.\n"
               "# TYPE sculpt_queue_depth gauge\nsculpt_queue_depth %d\n"
               "# HELP sculpt_batch_active Requests in the batch being decoded.\n"
               "# TYPE sculpt_batch_active gauge\nsculpt_batch_active %d\n"
               "# HELP sculpt_batch_active_max Most requests ever decoded together.\n"
               "# TYPE sculpt_batch_active_max gauge\nsculpt_batch_active_max %d\n"
               "# HELP sculpt_forward_passes_total Packed forward passes run.\n"
               "# TYPE sculpt_forward_passes_total counter\nsculpt_forward_passes_total %llu\n"
               "# HELP sculpt_request_steps_total Denoising steps of finished requests "
               "(each would be one pass alone).\n"
               "# TYPE sculpt_request_steps_total counter\nsculpt_request_steps_total %llu\n"
               "# HELP sculpt_generated_tokens_total Middle tokens generated.\n"
               "# TYPE sculpt_generated_tokens_total counter\n"
               "sculpt_generated_tokens_total %llu\n"
               "# HELP sculpt_prompt_tokens_total Prompt and suffix tokens decoded against.\n"
               "# TYPE sculpt_prompt_tokens_total counter\nsculpt_prompt_tokens_total %llu\n"
               "# HELP sculpt_cancelled_total Requests dropped because the client left.\n"
               "# TYPE sculpt_cancelled_total counter\nsculpt_cancelled_total %llu\n"
               "# HELP sculpt_connections Open client connections.\n"
               "# TYPE sculpt_connections gauge\nsculpt_connections %d\n"
               "# HELP sculpt_connections_reserved Of those, the ones past the pool's "
               "or a client's bound, for /health and /metrics only.\n"
               "# TYPE sculpt_connections_reserved gauge\nsculpt_connections_reserved %d\n"
               "# HELP sculpt_loop_iteration_cpu_seconds_max The most CPU time the event "
               "loop spent in one iteration (every connection waits meanwhile).\n"
               "# TYPE sculpt_loop_iteration_cpu_seconds_max gauge\n"
               "sculpt_loop_iteration_cpu_seconds_max %.6f\n",
               cum + s->lat_buckets[N_BUCKETS], s->lat_sum, s->lat_count, sc.pending, sc.live,
               sc.max_live, sc.passes, sc.steps, sc.gen_tokens, sc.prompt_tokens, sc.cancelled,
               s->n_conns, s->n_reserved, s->iter_cpu_max_ms / 1e3);
  if (!ok) {
    free(b);
    sc_serve__conn_error(c, 500, "out of memory", false);
    return;
  }
  sc_serve__conn_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b, len, NULL, false);
  free(b);
}

/* The routes. auth: needs the bearer token when there is one; reserve:
 * answered on a reserved connection too (see RESERVED_CONNS). */
typedef struct route_def {
  const char *path, *method;
  bool auth, reserve;
  void (*fn)(conn *c, const sc_http_request *q);
} route_def;

static const route_def k_routes[] = {
    {"/health", "GET", false, true, handle_health},
    {"/metrics", "GET", true, true, handle_metrics},
    {"/v1/models", "GET", true, false, handle_models},
    {"/v1/fim/completions", "POST", true, false, handle_openai},
    {"/v1/completions", "POST", true, false, handle_openai},
    {"/infill", "POST", true, false, handle_infill},
};

void sc_serve__route(conn *c, const sc_http_request *q) {
  server *s = c->s;
  c->busy = true;
  /* A reserved connection (see RESERVED_CONNS) serves one request. */
  c->keep_alive = q->keep_alive && !c->reserved;
  c->http10 = q->http10;
  c->head = strcmp(q->method, "HEAD") == 0;
  c->t_request = sc_now_ms();
  ev_timer_stop(s->loop, &c->timer);
  const route_def *r = NULL;
  for (size_t i = 0; i < sizeof k_routes / sizeof *k_routes && !r; i++)
    if (strcmp(q->path, k_routes[i].path) == 0) r = &k_routes[i];
  if (c->reserved && (!r || !r->reserve)) {
    sc_serve__conn_error(c, 503, "too many connections: only /health and /metrics are answered",
                         true);
    return;
  }
  if (!r) {
    sc_serve__conn_error(c, 404, "no such path", false);
    return;
  }
  if (r->auth && !authorized(s, q)) {
    sc_serve__conn_error(c, 401, "a valid bearer token is required", false);
    return;
  }
  if (strcmp(q->method, r->method) != 0) {
    char msg[32], allow[32];
    snprintf(msg, sizeof msg, "use %s", r->method);
    snprintf(allow, sizeof allow, "Allow: %s\r\n", r->method);
    sc_serve__conn_respond_json(c, 405, sc_serve__error_body(msg, "invalid_request_error"),
                                allow, false);
    return;
  }
  r->fn(c, q);
}

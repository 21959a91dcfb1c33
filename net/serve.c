/* serve.c — `sculpt serve`: the engine over HTTP/1.1 with continuous
 * batching.
 *
 * Two threads. The libev loop thread does all I/O: it accepts, reads and
 * parses requests (net/http.c), validates them, answers what needs no model
 * (/health, /metrics, errors) and queues completions. The engine thread owns
 * the engine and one sc_engine_batch: between steps it admits queued
 * requests (tokenizing them) into free slots, drops cancelled ones, runs one
 * packed forward pass over all live requests, and posts drafts and results
 * back through an outbox and an ev_async. The loop never waits on the model.
 *
 * A job is shared by the two threads; its mutable fields and the queue are
 * guarded by the server's mutex and it is freed when its last reference
 * (the connection's, the engine's, the outbox's) goes.
 *
 * The completion API follows OpenAI's legacy completions
 * (https://platform.openai.com/docs/api-reference/completions): prompt,
 * suffix, max_tokens, temperature, top_p, stop, stream, seed; the answer's
 * id/object/created/model/choices/usage. Streaming is server-sent events
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html), but each
 * event carries the whole refining draft (diffusion rewrites the middle, it
 * does not append), then a final event and `data: [DONE]`. Metrics use the
 * Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/). */
#define _GNU_SOURCE /* accept4, memmem */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADER_BYTES (16 * 1024)
#define MAX_STOPS 4
#define MAX_INPUT_BUFFER (64 * 1024) /* unparsed (pipelined) bytes held per connection */
#define MAX_OUTPUT_BACKLOG (1 << 20) /* drafts are skipped while more is unsent */
/* No further pipelined request is parsed while more than this is unsent: a
 * client that pipelines without reading would otherwise make us buffer
 * answers without bound. */
#define MAX_PIPELINE_BACKLOG (64 * 1024)
#define LINGER_S 2.0

typedef struct server server;
typedef struct conn conn;

enum job_state { JOB_QUEUED, JOB_LIVE, JOB_DONE, JOB_FAILED };

typedef struct job {
  /* Set by the loop thread before the job is queued; read-only after. */
  char *prompt, *suffix;
  size_t prompt_len, suffix_len;
  int max_tokens;
  sc_infill_params params;
  bool stream;
  char *stop[MAX_STOPS];
  int n_stop;
  char id[48];
  long long created;
  double t_start;
  /* Guarded by server.mu. */
  int refs;
  enum job_state state;
  bool cancelled;
  bool in_outbox;
  struct job *next_q;   /* the pending queue */
  struct job *next_out; /* the outbox */
  char *draft;          /* newest draft not yet sent (owned), or NULL */
  size_t draft_len;
  int draft_step;
  /* Written by the engine thread before the state turns DONE or FAILED;
   * read-only afterwards. */
  char *text;
  size_t text_len;
  const char *finish_reason;
  int prompt_tokens, completion_tokens, steps;
  int err_status;
  char err_msg[256];
  /* Engine thread only. */
  int slot;
  /* Loop thread only. */
  conn *conn;
} job;

struct conn {
  server *s;
  int fd;
  ev_io rw, ww;
  ev_timer timer;
  sc_http_reader *rd;
  char *in;
  size_t in_len, in_cap;
  char *out;
  size_t out_start, out_len, out_cap;
  bool busy;        /* a request is being answered */
  bool closing;     /* answered with close: draining until EOF or LINGER_S */
  bool close_after; /* close once the output is flushed */
  bool keep_alive;
  bool http10;      /* the current request is HTTP/1.0 */
  bool head;        /* the current request is HEAD: answers carry no body */
  bool sse_started;
  bool chunked;     /* the streamed body is chunked (not for HTTP/1.0) */
  bool req_timer;  /* the timer times the current request, not idleness */
  bool continued;  /* a 100 (Continue) went out for the current request */
  bool eof;        /* the client closed its side */
  bool in_process; /* inside conn_process: answers do not recurse into it */
  int last_step_sent;
  job *job;
  double t_request;
  conn *prev, *next;
};

#define N_BUCKETS 12
static const double k_buckets[N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                            0.5,   1,    2.5,   5,    10,  30};

struct server {
  sc_serve_options o;
  struct ev_loop *loop;
  ev_io listen_w;
  ev_async wake_w;
  ev_signal sigint_w, sigterm_w;
  ev_check reap_w;
  int listen_fd;
  conn *conns;
  conn *dead; /* closed, freed after the callbacks of this iteration */
  int n_conns;
  char model_name[128];
  const char *api_key;
  size_t api_key_len;
  sc_model *model;
  sc_tokenizer *tok;
  sc_engine *engine;
  sc_engine_batch *batch;
  const sc_model_info *info;
  int context;
  unsigned long long next_id;

  pthread_t thread;
  bool thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Guarded by mu. */
  bool stop;
  job *q_head, *q_tail;
  int n_pending; /* the queue's jobs and the one admit() is moving into the
                    batch; n_pending + n_live <= queue + batch always */
  job *out_head, *out_tail;
  job *live[SC_INFILL_MAX_BATCH]; /* by batch slot */
  int n_live, max_live;
  unsigned long long passes, request_steps, gen_tokens, prompt_tokens, cancelled;
  /* Loop thread only. */
  unsigned long long by_status[600];
  unsigned long long lat_buckets[N_BUCKETS + 1];
  double lat_sum;
  unsigned long long lat_count;
};

/* ---- jobs -------------------------------------------------------------------- */

static void job_free(job *j) {
  free(j->prompt);
  free(j->suffix);
  for (int i = 0; i < j->n_stop; i++) free(j->stop[i]);
  free(j->draft);
  free(j->text);
  free(j);
}

/* Drops one reference; mu held. */
static void job_release_locked(job *j) {
  if (--j->refs == 0) job_free(j);
}

static void job_release(server *s, job *j) {
  pthread_mutex_lock(&s->mu);
  job_release_locked(j);
  pthread_mutex_unlock(&s->mu);
}

/* Puts j in the outbox for the loop thread (once until drained); mu held. */
static void post_locked(server *s, job *j) {
  if (j->in_outbox) return;
  j->in_outbox = true;
  j->refs++;
  j->next_out = NULL;
  if (s->out_tail) s->out_tail->next_out = j;
  else s->out_head = j;
  s->out_tail = j;
}

/* ---- text helpers -------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0. RFC 3629 section 4. */
static int utf8_seq(const unsigned char *p, size_t left) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if ((size_t)n > left) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

/* A JSON string of text; bytes that are not valid UTF-8 (a middle cut inside
 * a character) become U+FFFD, since JSON text must be Unicode. */
static json_t *json_text(const char *text, size_t len) {
  const unsigned char *p = (const unsigned char *)text;
  bool valid = true;
  for (size_t i = 0; i < len;) {
    int n = utf8_seq(p + i, len - i);
    if (!n) {
      valid = false;
      break;
    }
    i += (size_t)n;
  }
  if (valid) return json_stringn(len ? text : "", len);
  char *fixed = malloc(len * 3 + 1);
  if (!fixed) return NULL;
  size_t w = 0;
  for (size_t i = 0; i < len;) {
    int n = utf8_seq(p + i, len - i);
    if (n) {
      memcpy(fixed + w, p + i, (size_t)n);
      w += (size_t)n;
      i += (size_t)n;
    } else {
      memcpy(fixed + w, "\xEF\xBF\xBD", 3);
      w += 3;
      i++;
    }
  }
  json_t *j = json_stringn(fixed, w);
  free(fixed);
  return j;
}

/* Cuts text at the first stop string; true when one was found. */
static bool cut_at_stop(const job *j, size_t *len, const char *text) {
  size_t best = *len;
  bool found = false;
  for (int i = 0; i < j->n_stop; i++) {
    const char *hit = memmem(text, *len, j->stop[i], strlen(j->stop[i]));
    if (hit && (size_t)(hit - text) < best) {
      best = (size_t)(hit - text);
      found = true;
    }
  }
  *len = best;
  return found;
}

/* ---- the engine thread ------------------------------------------------------ */

static void fail_job_locked(server *s, job *j, int status, const char *msg) {
  j->err_status = status;
  snprintf(j->err_msg, sizeof j->err_msg, "%s", msg);
  j->state = JOB_FAILED;
  post_locked(s, j);
}

/* Tokenizes j, taken off the queue but still counted in n_pending, and adds
 * it to the batch. Returns SC_ERR_UNSUPPORTED when it does not fit the batch
 * now (the caller requeues it, still counted); otherwise it leaves
 * n_pending, and any failure has been posted. Called without mu. */
static sc_status admit(server *s, job *j) {
  sc_error err = {0};
  int32_t *pre = NULL, *suf = NULL;
  size_t n_pre = 0, n_suf = 0;
  sc_status st = sc_tokenizer_encode(s->tok, j->prompt, j->prompt_len, &pre, &n_pre, &err);
  if (st == SC_OK) st = sc_tokenizer_encode(s->tok, j->suffix, j->suffix_len, &suf, &n_suf, &err);
  if (st != SC_OK) {
    pthread_mutex_lock(&s->mu);
    s->n_pending--;
    fail_job_locked(s, j, 500, err.msg);
    job_release_locked(j);
    pthread_mutex_unlock(&s->mu);
    free(pre);
    free(suf);
    return st;
  }
  /* As `sculpt complete` lays it out: keep the tokens nearest the middle;
   * when they do not fit, the suffix gets at most a quarter of the room. */
  int m = j->max_tokens;
  size_t room = (size_t)(s->context - m - 2);
  size_t keep_pre = n_pre, keep_suf = n_suf;
  if (n_pre + n_suf > room) {
    keep_suf = n_suf < room / 4 ? n_suf : room / 4;
    keep_pre = n_pre < room - keep_suf ? n_pre : room - keep_suf;
    keep_suf = room - keep_pre < n_suf ? room - keep_pre : n_suf;
  }
  /* (An empty text may come back as NULL: no offset on that.) */
  sc_infill_request q = {pre ? pre + (n_pre - keep_pre) : NULL, (int)keep_pre, suf,
                         (int)keep_suf, m, j->params.seed};
  int slot = -1;
  st = sc_engine_batch_add(s->batch, &q, &j->params, &slot, &err);
  free(pre);
  free(suf);
  pthread_mutex_lock(&s->mu);
  /* Out of the queue's count and into the batch's in one critical section
   * (engine_main keeps it counted while it is in transit). */
  if (st != SC_ERR_UNSUPPORTED) s->n_pending--;
  if (st == SC_OK) {
    j->slot = slot;
    j->state = JOB_LIVE;
    j->prompt_tokens = (int)(keep_pre + keep_suf);
    s->live[slot] = j;
    s->n_live++;
    if (s->n_live > s->max_live) s->max_live = s->n_live;
    s->prompt_tokens += keep_pre + keep_suf;
  } else if (st != SC_ERR_UNSUPPORTED) {
    fail_job_locked(s, j, st == SC_ERR_INVALID ? 400 : 500, err.msg);
    job_release_locked(j);
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

/* The draft of a canvas: committed tokens up to the first end token. */
static void on_progress(void *user, int slot, const int32_t *canvas, int m, int step,
                        int committed) {
  server *s = user;
  job *j = s->live[slot]; /* the engine thread writes live[]; reading it here is safe */
  if (!j || !j->stream) return;
  int32_t *ids = malloc((size_t)m * sizeof *ids);
  if (!ids) return;
  int n = 0;
  for (int i = 0; i < m; i++) {
    int32_t t = canvas[i];
    if ((s->info->eos_id >= 0 && t == s->info->eos_id) ||
        (s->info->pad_id >= 0 && t == s->info->pad_id))
      break;
    if (t != s->info->mask_id) ids[n++] = t;
  }
  char *text = NULL;
  size_t len = 0;
  sc_error err = {0};
  sc_status st = sc_tokenizer_decode(s->tok, ids, (size_t)n, &text, &len, &err);
  free(ids);
  if (st != SC_OK) return;
  cut_at_stop(j, &len, text);
  pthread_mutex_lock(&s->mu);
  free(j->draft);
  j->draft = text;
  j->draft_len = len;
  j->draft_step = step;
  post_locked(s, j);
  pthread_mutex_unlock(&s->mu);
}

/* A finished request: its result posted, its slot and reference given up. */
static void finish(server *s, job *j) {
  sc_infill_result r;
  sc_error err = {0};
  sc_status st = sc_engine_batch_take(s->batch, j->slot, &r, &err);
  pthread_mutex_lock(&s->mu);
  s->live[j->slot] = NULL;
  s->n_live--;
  if (st != SC_OK) {
    fail_job_locked(s, j, 500, err.msg);
  } else {
    size_t len = r.text_len;
    bool stopped = r.text && cut_at_stop(j, &len, r.text);
    j->text = r.text;
    j->text_len = r.text ? len : 0;
    r.text = NULL;
    j->finish_reason = stopped || r.ended ? "stop" : "length";
    j->completion_tokens = r.n_ids;
    j->steps = r.steps;
    s->request_steps += (unsigned long long)r.steps;
    s->gen_tokens += (unsigned long long)r.n_ids;
    j->state = JOB_DONE;
    post_locked(s, j);
  }
  job_release_locked(j);
  pthread_mutex_unlock(&s->mu);
  sc_infill_result_free(&r);
}

/* Test hook (step_delay_ms): a slow admission, as tokenizing a long prompt
 * is, so that tests can send requests while one is between the queue and
 * the batch. */
static void admit_delay(const server *s) {
  if (s->o.step_delay_ms <= 0) return;
  struct timespec ts = {s->o.step_delay_ms / 1000, (long)(s->o.step_delay_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void *engine_main(void *arg) {
  server *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->stop && !s->q_head && s->n_live == 0) pthread_cond_wait(&s->cv, &s->mu);
    if (s->stop) break;
    /* Admit from the queue into free slots: they join the next step. */
    while (s->q_head && s->n_live < s->o.batch) {
      job *j = s->q_head;
      s->q_head = j->next_q;
      if (!s->q_head) s->q_tail = NULL;
      /* j stays counted in n_pending until admit() has put it in the batch
       * or failed it: uncounted in between, it would let the loop thread
       * admit one request more than queue + batch. */
      pthread_mutex_unlock(&s->mu);
      admit_delay(s);
      sc_status st = admit(s, j);
      pthread_mutex_lock(&s->mu);
      if (st == SC_ERR_UNSUPPORTED) {
        /* No room in the packed pass now: first in line again. */
        j->next_q = s->q_head;
        s->q_head = j;
        if (!s->q_tail) s->q_tail = j;
        break;
      }
    }
    /* Drop the requests whose clients went away. */
    for (int k = 0; k < SC_INFILL_MAX_BATCH; k++) {
      job *j = s->live[k];
      if (!j || !j->cancelled) continue;
      sc_engine_batch_remove(s->batch, k);
      s->live[k] = NULL;
      s->n_live--;
      s->cancelled++;
      job_release_locked(j);
    }
    bool wake = s->out_head != NULL;
    pthread_mutex_unlock(&s->mu);
    if (wake) ev_async_send(s->loop, &s->wake_w);

    sc_error err = {0};
    int stepped = 0;
    sc_status st = sc_engine_batch_step(s->batch, on_progress, s, &stepped, &err);
    if (s->o.step_delay_ms > 0 && stepped > 0) {
      struct timespec ts = {s->o.step_delay_ms / 1000, (long)(s->o.step_delay_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&s->mu);
    if (stepped > 0) s->passes++;
    if (st != SC_OK) {
      SC_LOG_ERROR("serve: a batch step failed: %s", err.msg);
      for (int k = 0; k < SC_INFILL_MAX_BATCH; k++) {
        job *j = s->live[k];
        if (!j) continue;
        sc_engine_batch_remove(s->batch, k);
        s->live[k] = NULL;
        s->n_live--;
        fail_job_locked(s, j, 500, err.msg);
        job_release_locked(j);
      }
    }
    for (int k = 0; k < SC_INFILL_MAX_BATCH; k++) {
      job *j = s->live[k];
      if (j && sc_engine_batch_done(s->batch, k)) {
        pthread_mutex_unlock(&s->mu);
        finish(s, j);
        pthread_mutex_lock(&s->mu);
      }
    }
    wake = s->out_head != NULL;
    pthread_mutex_unlock(&s->mu);
    if (wake) ev_async_send(s->loop, &s->wake_w);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- connections: output ----------------------------------------------------- */

static void conn_close(conn *c);
static void conn_process(conn *c);
static void conn_eof(conn *c);

/* Whether the next pipelined request may be parsed and answered now. */
static bool conn_can_parse(const conn *c) {
  return c->fd >= 0 && !c->busy && !c->close_after && !c->closing &&
         c->out_len - c->out_start < MAX_PIPELINE_BACKLOG;
}

static void conn_update_watchers(conn *c) {
  bool pending = c->out_start < c->out_len;
  if (pending && !ev_is_active(&c->ww)) ev_io_start(c->s->loop, &c->ww);
  if (!pending && ev_is_active(&c->ww)) ev_io_stop(c->s->loop, &c->ww);
}

/* Writes what it can. False when the connection was closed. */
static bool conn_flush(conn *c) {
  if (c->fd < 0) return false;
  while (c->out_start < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_start, c->out_len - c->out_start, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_start += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    conn_close(c);
    return false;
  }
  if (c->out_start == c->out_len) c->out_start = c->out_len = 0;
  conn_update_watchers(c);
  if (c->out_len == 0 && c->close_after && !c->closing) {
    /* Lingering close: stop sending, drain what the client still sends, so
     * that our answer is not lost to a reset (RFC 9112 section 9.6). */
    c->closing = true;
    shutdown(c->fd, SHUT_WR);
    ev_timer_stop(c->s->loop, &c->timer);
    ev_timer_set(&c->timer, LINGER_S, 0);
    ev_timer_start(c->s->loop, &c->timer);
    if (!ev_is_active(&c->rw)) ev_io_start(c->s->loop, &c->rw);
  }
  return true;
}

/* Closes once what is queued is sent (a lingering close, see conn_flush). */
static void conn_close_when_sent(conn *c) {
  c->close_after = true;
  if (!conn_flush(c) || c->closing) return;
  /* Not all sent yet: bound the wait for a client that does not take it. */
  ev_timer_stop(c->s->loop, &c->timer);
  ev_timer_set(&c->timer, c->s->o.idle_timeout_s, 0);
  ev_timer_start(c->s->loop, &c->timer);
}

static bool conn_send(conn *c, const char *data, size_t len) {
  if (c->fd < 0) return false;
  if (c->closing) return true;
  if (!sc_queue_append(&c->out, &c->out_start, &c->out_len, &c->out_cap, 4096, data, len)) {
    conn_close(c);
    return false;
  }
  return true;
}

static const char *reason_phrase(int status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 413: return "Content Too Large";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

static void record_latency(server *s, double seconds) {
  int b = 0;
  while (b < N_BUCKETS && seconds > k_buckets[b]) b++;
  s->lat_buckets[b]++;
  s->lat_sum += seconds;
  s->lat_count++;
}

/* The request is answered: count it, and read the next one (or close). */
static void conn_request_done(conn *c, int status, bool completion) {
  server *s = c->s;
  if (status >= 100 && status < 600) s->by_status[status]++;
  if (completion && status == 200) record_latency(s, (sc_now_ms() - c->t_request) / 1000.0);
  c->busy = false;
  c->sse_started = false;
  /* An error or 408 before the next request is routed is no HEAD answer. */
  c->head = c->http10 = false;
  /* After the client's EOF the connection still answers the requests that
   * came whole before it (conn_process, then conn_eof closes). */
  if (!c->keep_alive) c->close_after = true;
  if (c->close_after) {
    conn_close_when_sent(c);
    return;
  }
  if (!conn_flush(c)) return;
  sc_http_reader_next(c->rd);
  c->req_timer = c->continued = false;
  ev_timer_stop(s->loop, &c->timer);
  ev_timer_set(&c->timer, s->o.idle_timeout_s, 0);
  ev_timer_start(s->loop, &c->timer);
  if (!c->eof && !ev_is_active(&c->rw)) ev_io_start(s->loop, &c->rw);
  if (!c->in_process) conn_process(c); /* pipelined requests already here */
}

/* A whole response; extra is more header lines, each ending in CRLF. */
static void conn_respond(conn *c, int status, const char *ctype, const char *body, size_t len,
                         const char *extra, bool completion) {
  char head[512];
  /* An HTTP/1.0 client keeps the connection only when told so (RFC 9112
   * appendix C.2.2). */
  bool keep = c->keep_alive && !c->close_after;
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
                   status, reason_phrase(status), ctype, len, extra ? extra : "",
                   !keep ? "Connection: close\r\n"
                   : c->http10 ? "Connection: keep-alive\r\n"
                               : "");
  if (!conn_send(c, head, (size_t)n)) return;
  /* A response to HEAD has no content (RFC 9110 section 9.3.2); bytes sent
   * anyway would be read as the next response. */
  if (len && !c->head && !conn_send(c, body, len)) return;
  conn_request_done(c, status, completion);
}

static void conn_respond_json(conn *c, int status, json_t *o, const char *extra,
                              bool completion) {
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!s) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
    conn_respond(c, 500, "application/json", oom, sizeof oom - 1, NULL, completion);
    return;
  }
  conn_respond(c, status, "application/json", s, strlen(s), extra, completion);
  free(s);
}

static json_t *error_body(const char *msg, const char *type) {
  json_t *m = json_text(msg, strlen(msg));
  return json_pack("{s:{s:o, s:s, s:n, s:n}}", "error", "message", m ? m : json_string("?"),
                   "type", type, "param", "code");
}

static void conn_error(conn *c, int status, const char *msg, bool close) {
  const char *type = status == 401   ? "authentication_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  if (close) c->close_after = true;
  conn_respond_json(c, status, error_body(msg, type),
                    status == 429 ? "Retry-After: 1\r\n"
                    : status == 401 ? "WWW-Authenticate: Bearer\r\n"
                    : status == 405 ? "Allow: POST\r\n"
                                    : NULL,
                    false);
}

/* ---- completions ----------------------------------------------------------- */

static json_t *completion_object(const server *s, const job *j, const char *text, size_t len,
                                 const char *finish_reason, bool usage) {
  json_t *t = json_text(text ? text : "", text ? len : 0);
  json_t *choice = json_pack("{s:o, s:i, s:n, s:o}", "text", t ? t : json_string(""), "index",
                             0, "logprobs", "finish_reason",
                             finish_reason ? json_string(finish_reason) : json_null());
  json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", j->id, "object",
                        "text_completion", "created", (json_int_t)j->created, "model",
                        s->model_name, "choices", choice);
  if (o && usage)
    json_object_set_new(o, "usage",
                        json_pack("{s:i, s:i, s:i}", "prompt_tokens", j->prompt_tokens,
                                  "completion_tokens", j->completion_tokens, "total_tokens",
                                  j->prompt_tokens + j->completion_tokens));
  return o;
}

/* One chunk of the chunked body (RFC 9112 section 7.1); the bytes as they
 * are when the body is not chunked (HTTP/1.0: it ends with the connection). */
static void send_chunk(conn *c, const char *data, size_t len) {
  if (!c->chunked) {
    conn_send(c, data, len);
    return;
  }
  char head[32];
  int n = snprintf(head, sizeof head, "%zx\r\n", len);
  if (conn_send(c, head, (size_t)n) && conn_send(c, data, len)) conn_send(c, "\r\n", 2);
}

static void send_event(conn *c, json_t *o) {
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!s) return;
  size_t len = strlen(s);
  char *ev = malloc(len + 9);
  if (ev) {
    memcpy(ev, "data: ", 6);
    memcpy(ev + 6, s, len);
    memcpy(ev + 6 + len, "\n\n", 2);
    send_chunk(c, ev, len + 8);
    free(ev);
  }
  free(s);
}

static void sse_start(conn *c) {
  if (c->sse_started) return;
  c->sse_started = true;
  /* HTTP/1.0 has no chunked encoding (RFC 9112 section 7.1: not to be sent
   * to a 1.0 request): the stream then ends with the connection. */
  c->chunked = !c->http10;
  if (!c->chunked) c->keep_alive = false;
  char head[256];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                   "Cache-Control: no-cache\r\n%s%s\r\n",
                   c->chunked ? "Transfer-Encoding: chunked\r\n" : "",
                   c->keep_alive ? "" : "Connection: close\r\n");
  conn_send(c, head, (size_t)n);
}

/* The end of a stream: [DONE], then the last chunk when chunked. */
static void sse_end(conn *c) {
  send_chunk(c, "data: [DONE]\n\n", 14);
  if (c->chunked) conn_send(c, "0\r\n\r\n", 5);
}

/* What the engine posted for this connection's job. */
static void conn_job_update(conn *c, job *j, char *draft, size_t draft_len, int step,
                            enum job_state state) {
  server *s = c->s;
  if (j->stream && draft && state != JOB_FAILED && step > c->last_step_sent &&
      c->out_len - c->out_start < MAX_OUTPUT_BACKLOG) {
    sse_start(c);
    json_t *o = completion_object(s, j, draft, draft_len, NULL, false);
    if (o) json_object_set_new(o, "step", json_integer(step));
    send_event(c, o);
    c->last_step_sent = step;
  }
  if (state != JOB_DONE && state != JOB_FAILED) {
    conn_flush(c);
    return;
  }
  /* The job is over for this connection. */
  c->job = NULL;
  j->conn = NULL;
  job_release(s, j); /* the connection's reference */
  if (state == JOB_FAILED) {
    if (c->sse_started) {
      json_t *e = error_body(j->err_msg, j->err_status >= 500 ? "server_error"
                                                              : "invalid_request_error");
      send_event(c, e);
      sse_end(c);
      conn_request_done(c, j->err_status, true);
    } else {
      conn_error(c, j->err_status, j->err_msg, false);
    }
    return;
  }
  json_t *o = completion_object(s, j, j->text, j->text_len, j->finish_reason, true);
  if (j->stream) {
    sse_start(c);
    send_event(c, o);
    sse_end(c);
    conn_request_done(c, 200, true);
  } else {
    conn_respond_json(c, 200, o, NULL, true);
  }
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents) {
  server *s = w->data;
  pthread_mutex_lock(&s->mu);
  job *list = s->out_head;
  s->out_head = s->out_tail = NULL;
  pthread_mutex_unlock(&s->mu);
  while (list) {
    job *j = list;
    pthread_mutex_lock(&s->mu);
    list = j->next_out;
    j->in_outbox = false;
    char *draft = j->draft;
    size_t draft_len = j->draft_len;
    int step = j->draft_step;
    j->draft = NULL;
    enum job_state state = j->state;
    pthread_mutex_unlock(&s->mu);
    if (j->conn) conn_job_update(j->conn, j, draft, draft_len, step, state);
    free(draft);
    job_release(s, j); /* the outbox's reference */
  }
}

static bool get_number(json_t *root, const char *key, double lo, double hi, double *out,
                       char *msg, size_t msg_len) {
  json_t *v = json_object_get(root, key);
  if (!v || json_is_null(v)) return true;
  if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi)) {
    snprintf(msg, msg_len, "'%s' must be a number from %g to %g", key, lo, hi);
    return false;
  }
  *out = json_number_value(v);
  return true;
}

/* Validates the body into a job; NULL with msg filled on a bad request. */
static job *parse_completion(server *s, const char *body, size_t len, char *msg,
                             size_t msg_len) {
  json_error_t jerr;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    snprintf(msg, msg_len, "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
             jerr.line, jerr.column);
    return NULL;
  }
  job *j = calloc(1, sizeof *j);
  if (!j) {
    snprintf(msg, msg_len, "out of memory");
    json_decref(root);
    return NULL;
  }
  sc_infill_params_default(&j->params);
  j->params.block_len = 32;
  j->max_tokens = 32;
  bool ok = false;
  if (!json_is_object(root)) {
    snprintf(msg, msg_len, "the body must be a JSON object");
    goto out;
  }
  json_t *prompt = json_object_get(root, "prompt");
  /* OpenAI also takes a list of prompts; one is what a FIM request has. */
  if (json_is_array(prompt) && json_array_size(prompt) == 1)
    prompt = json_array_get(prompt, 0);
  if (!json_is_string(prompt)) {
    snprintf(msg, msg_len, "'prompt' must be a string");
    goto out;
  }
  json_t *suffix = json_object_get(root, "suffix");
  if (suffix && !json_is_null(suffix) && !json_is_string(suffix)) {
    snprintf(msg, msg_len, "'suffix' must be a string");
    goto out;
  }
  j->prompt_len = json_string_length(prompt);
  j->prompt = malloc(j->prompt_len + 1);
  j->suffix_len = json_is_string(suffix) ? json_string_length(suffix) : 0;
  j->suffix = malloc(j->suffix_len + 1);
  if (!j->prompt || !j->suffix) {
    snprintf(msg, msg_len, "out of memory");
    goto out;
  }
  memcpy(j->prompt, json_string_value(prompt), j->prompt_len + 1);
  if (json_is_string(suffix)) memcpy(j->suffix, json_string_value(suffix), j->suffix_len + 1);
  else j->suffix[0] = '\0';

  json_t *mt = json_object_get(root, "max_tokens");
  if (mt && !json_is_null(mt)) {
    if (!json_is_integer(mt) || json_integer_value(mt) < 1) {
      snprintf(msg, msg_len, "'max_tokens' must be a positive integer");
      goto out;
    }
    json_int_t v = json_integer_value(mt);
    j->max_tokens = v > s->o.max_tokens ? s->o.max_tokens : (int)v;
  }
  /* At least half the context stays for the prompt and suffix: a canvas
   * with nothing to condition on would be noise. */
  if (j->max_tokens > (s->context - 2) / 2) j->max_tokens = (s->context - 2) / 2;
  if (!get_number(root, "temperature", 0, 2, &j->params.temperature, msg, msg_len) ||
      !get_number(root, "top_p", 0, 1, &j->params.top_p, msg, msg_len))
    goto out;
  if (j->params.top_p <= 0) j->params.top_p = 1.0;
  json_t *seed = json_object_get(root, "seed");
  if (seed && !json_is_null(seed)) {
    if (!json_is_integer(seed)) {
      snprintf(msg, msg_len, "'seed' must be an integer");
      goto out;
    }
    j->params.seed = (uint64_t)json_integer_value(seed);
  }
  json_t *n = json_object_get(root, "n");
  if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1)) {
    snprintf(msg, msg_len, "'n' must be 1");
    goto out;
  }
  json_t *stream = json_object_get(root, "stream");
  if (stream && !json_is_null(stream)) {
    if (!json_is_boolean(stream)) {
      snprintf(msg, msg_len, "'stream' must be a boolean");
      goto out;
    }
    j->stream = json_is_true(stream);
  }
  json_t *model = json_object_get(root, "model");
  if (model && !json_is_null(model) && !json_is_string(model)) {
    snprintf(msg, msg_len, "'model' must be a string");
    goto out;
  }
  json_t *stop = json_object_get(root, "stop");
  if (stop && !json_is_null(stop)) {
    json_t *list = stop;
    if (json_is_string(stop)) {
      list = json_array();
      json_array_append(list, stop);
    } else if (!json_is_array(stop) || json_array_size(stop) > MAX_STOPS) {
      snprintf(msg, msg_len, "'stop' must be a string or a list of up to %d strings",
               MAX_STOPS);
      goto out;
    } else {
      json_incref(list);
    }
    size_t i;
    json_t *v;
    bool bad = false;
    json_array_foreach(list, i, v) {
      if (!json_is_string(v) || json_string_length(v) == 0 ||
          strlen(json_string_value(v)) != json_string_length(v)) {
        bad = true;
        break;
      }
      j->stop[j->n_stop] = strdup(json_string_value(v));
      if (j->stop[j->n_stop]) j->n_stop++;
    }
    json_decref(list);
    if (bad) {
      snprintf(msg, msg_len, "each 'stop' must be a non-empty string");
      goto out;
    }
  }
  ok = true;
out:
  json_decref(root);
  if (!ok) {
    job_free(j);
    return NULL;
  }
  return j;
}

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

static void handle_completion(conn *c, const sc_http_request *q) {
  server *s = c->s;
  char msg[512];
  if (c->eof) {
    /* The client half-closed behind this completion, which conn_eof would
     * cancel at once: it takes no slot (no 429 for others meanwhile). The
     * answers before it still go out, then the connection closes. */
    s->by_status[499]++; /* nginx's "client closed request" */
    c->busy = false;
    conn_close_when_sent(c);
    return;
  }
  job *j = parse_completion(s, q->body, q->body_len, msg, sizeof msg);
  if (!j) {
    conn_error(c, 400, msg, false);
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
  /* The bound is checked and the place taken in one critical section, so
   * that nothing the engine thread does in between can admit one more. */
  pthread_mutex_lock(&s->mu);
  bool full = s->n_pending + s->n_live >= s->o.queue + s->o.batch;
  if (!full) {
    if (s->q_tail) s->q_tail->next_q = j;
    else s->q_head = j;
    s->q_tail = j;
    s->n_pending++;
    pthread_cond_signal(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  if (full) {
    job_free(j); /* never shared */
    conn_error(c, 429, "the server is busy: the queue is full", false);
    return;
  }
  /* j->conn is the loop thread's alone: setting it after the unlock is fine. */
  j->conn = c;
  c->job = j;
  c->last_step_sent = 0;
}

static void handle_health(conn *c) {
  server *s = c->s;
  pthread_mutex_lock(&s->mu);
  int pending = s->n_pending, live = s->n_live;
  pthread_mutex_unlock(&s->mu);
  conn_respond_json(c, 200,
                    json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "status", "ok", "model",
                              s->model_name, "queue_depth", pending, "active", live,
                              "queue_capacity", s->o.queue, "batch_capacity", s->o.batch),
                    NULL, false);
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

static void handle_metrics(conn *c) {
  server *s = c->s;
  pthread_mutex_lock(&s->mu);
  int pending = s->n_pending, live = s->n_live, max_live = s->max_live;
  unsigned long long passes = s->passes, steps = s->request_steps, gen = s->gen_tokens,
                     ptok = s->prompt_tokens, cancelled = s->cancelled;
  pthread_mutex_unlock(&s->mu);
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
                 k_buckets[k], cum);
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
               "# TYPE sculpt_connections gauge\nsculpt_connections %d\n",
               cum + s->lat_buckets[N_BUCKETS], s->lat_sum, s->lat_count, pending, live,
               max_live, passes, steps, gen, ptok, cancelled, s->n_conns);
  if (!ok) {
    free(b);
    conn_error(c, 500, "out of memory", false);
    return;
  }
  conn_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b, len, NULL, false);
  free(b);
}

static void route(conn *c, const sc_http_request *q) {
  server *s = c->s;
  c->busy = true;
  c->keep_alive = q->keep_alive;
  c->http10 = q->http10;
  c->head = strcmp(q->method, "HEAD") == 0;
  c->t_request = sc_now_ms();
  ev_timer_stop(s->loop, &c->timer);
  const char *p = q->path;
  bool is_post = strcmp(q->method, "POST") == 0, is_get = strcmp(q->method, "GET") == 0;
  if (strcmp(p, "/health") == 0) {
    if (!is_get) {
      conn_respond_json(c, 405, error_body("use GET", "invalid_request_error"),
                        "Allow: GET\r\n", false);
      return;
    }
    handle_health(c);
    return;
  }
  bool completions = strcmp(p, "/v1/fim/completions") == 0 || strcmp(p, "/v1/completions") == 0;
  bool metrics = strcmp(p, "/metrics") == 0;
  if (!completions && !metrics) {
    conn_error(c, 404, "no such path", false);
    return;
  }
  if (!authorized(s, q)) {
    conn_error(c, 401, "a valid bearer token is required", false);
    return;
  }
  if (metrics) {
    if (!is_get) {
      conn_respond_json(c, 405, error_body("use GET", "invalid_request_error"),
                        "Allow: GET\r\n", false);
      return;
    }
    handle_metrics(c);
    return;
  }
  if (!is_post) {
    conn_error(c, 405, "use POST", false);
    return;
  }
  handle_completion(c, q);
}

/* ---- connections: input ------------------------------------------------------- */

/* After the client's EOF (a close or a half-close, which look the same):
 * every request that arrived whole is answered, in order, then the
 * connection closes once the answers are sent (RFC 9112 section 9.6).
 * Called whenever input was processed; does nothing before EOF or while
 * an answer is under way. */
static void conn_eof(conn *c) {
  if (c->fd < 0 || !c->eof || c->closing || c->close_after || c->in_process) return;
  if (c->job) {
    /* A completion still pending: the client is taken as gone and the
     * request cancelled, to free its place in the batch at once (a client
     * that closed and one that half-closed cannot be told apart, and HTTP
     * clients do not half-close while they wait). */
    conn_close(c);
    return;
  }
  /* Busy: answering now (conn_request_done comes back here). Can't parse:
   * too many answers unsent, and the pipelined requests behind them wait
   * (conn_resume comes back here once they are sent). */
  if (c->busy || !conn_can_parse(c)) return;
  /* Everything whole is answered; what is left in c->in is a request the
   * client cut off, which gets no answer. */
  if (c->out_start == c->out_len) conn_close(c);
  else conn_close_when_sent(c);
}

/* Parses what has arrived and answers complete requests, one at a time. */
static void conn_process(conn *c) {
  c->in_process = true;
  while (conn_can_parse(c)) {
    size_t used = 0;
    sc_http_feed f = sc_http_reader_feed(c->rd, c->in, c->in_len, &used);
    if (used) {
      memmove(c->in, c->in + used, c->in_len - used);
      c->in_len -= used;
    }
    if (f == SC_HTTP_MORE) {
      /* curl and others wait (1 s) for a 100 before a large body. */
      if (sc_http_reader_request(c->rd)->expect_continue && !c->continued && !c->eof) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        c->continued = true;
        if (!conn_send(c, cont, sizeof cont - 1) || !conn_flush(c)) break;
      }
      /* The request timer starts at its first byte. */
      if (sc_http_reader_request(c->rd)->started && !c->req_timer) {
        ev_timer_stop(c->s->loop, &c->timer);
        ev_timer_set(&c->timer, c->s->o.header_timeout_s, 0);
        ev_timer_start(c->s->loop, &c->timer);
        c->req_timer = true;
      }
      break;
    }
    if (f == SC_HTTP_ERROR) {
      const char *why;
      int status = sc_http_reader_error(c->rd, &why);
      c->busy = true;
      c->keep_alive = false;
      conn_error(c, status, why, true);
      break;
    }
    route(c, sc_http_reader_request(c->rd));
  }
  c->in_process = false;
  conn_eof(c);
}

static void conn_close(conn *c) {
  server *s = c->s;
  if (c->fd < 0) return;
  ev_io_stop(s->loop, &c->rw);
  ev_io_stop(s->loop, &c->ww);
  ev_timer_stop(s->loop, &c->timer);
  close(c->fd);
  c->fd = -1;
  if (c->job) {
    /* Cancel: a queued job leaves the queue now, a live one at the next
     * step boundary (the engine thread drops it). */
    job *j = c->job;
    c->job = NULL;
    j->conn = NULL;
    s->by_status[499]++; /* nginx's "client closed request" */
    pthread_mutex_lock(&s->mu);
    j->cancelled = true;
    if (j->state == JOB_QUEUED) {
      job **pp = &s->q_head;
      job *prev = NULL;
      while (*pp && *pp != j) prev = *pp, pp = &(*pp)->next_q;
      if (*pp) {
        *pp = j->next_q;
        if (s->q_tail == j) s->q_tail = prev;
        s->n_pending--;
        s->cancelled++;
        job_release_locked(j); /* the engine's reference: it never saw it */
      }
    }
    pthread_cond_signal(&s->cv);
    job_release_locked(j);
    pthread_mutex_unlock(&s->mu);
  }
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->n_conns--;
  /* Freed later: callers up the stack may still look at c (fd < 0). */
  c->next = s->dead;
  s->dead = c;
}

static void reap(server *s) {
  while (s->dead) {
    conn *c = s->dead;
    s->dead = c->next;
    sc_http_reader_free(c->rd);
    free(c->in);
    free(c->out);
    free(c);
  }
}

static void reap_cb(struct ev_loop *loop, ev_check *w, int revents) { reap(w->data); }

static void read_cb(struct ev_loop *loop, ev_io *w, int revents) {
  conn *c = w->data;
  if (c->closing) {
    /* Answered with close: discard until the client closes too. */
    char sink[4096];
    for (;;) {
      ssize_t n = recv(c->fd, sink, sizeof sink, 0);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      conn_close(c);
      return;
    }
  }
  for (;;) {
    if (c->in_len >= MAX_INPUT_BUFFER) {
      /* Enough unparsed input held: parse it if we may (keeping the buffer
       * small), else read on once the answer is done or sent
       * (conn_request_done, conn_resume). */
      if (conn_can_parse(c)) conn_process(c);
      if (c->fd < 0 || c->closing) return;
      if (c->in_len >= MAX_INPUT_BUFFER) {
        ev_io_stop(loop, &c->rw);
        break;
      }
    }
    if (c->in_len + 4096 > c->in_cap) {
      size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
      char *nb = realloc(c->in, cap);
      if (!nb) {
        conn_close(c);
        return;
      }
      c->in = nb;
      c->in_cap = cap;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n > 0) {
      c->in_len += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      conn_close(c);
      return;
    }
    /* EOF: see conn_eof. */
    c->eof = true;
    ev_io_stop(loop, &c->rw);
    break;
  }
  if (c->in_len > 0 && conn_can_parse(c)) conn_process(c);
  else conn_eof(c);
}

/* After output drained: parse what pipelined input waits, read on. */
static void conn_resume(conn *c) {
  if (!conn_can_parse(c)) return;
  if (c->in_len > 0 && !c->in_process) conn_process(c);
  else if (!c->in_process) conn_eof(c);
  if (c->fd >= 0 && !c->eof && !c->close_after && !c->closing && !ev_is_active(&c->rw))
    ev_io_start(c->s->loop, &c->rw);
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents) {
  conn *c = w->data;
  if (conn_flush(c)) conn_resume(c);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  conn *c = w->data;
  if (c->closing || c->close_after) {
    conn_close(c); /* lingered enough, or the client never took its answer */
    return;
  }
  if (c->busy) return;
  if (c->out_start < c->out_len) {
    conn_close(c); /* a client that reads none of its answers for so long */
    return;
  }
  if (sc_http_reader_request(c->rd)->started || c->in_len > 0) {
    c->busy = true;
    c->keep_alive = false;
    conn_error(c, 408, "the request was not complete in time", true);
    return;
  }
  conn_close(c); /* idle keep-alive connection */
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents) {
  server *s = w->data;
  for (;;) {
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        SC_LOG_WARN("serve: accept: %s", strerror(errno));
      return;
    }
    if (s->n_conns >= s->o.max_connections) {
      static const char body[] =
          "{\"error\":{\"message\":\"too many connections\",\"type\":\"server_error\"}}";
      char busy[512];
      int len = snprintf(busy, sizeof busy,
                         "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                         sizeof body - 1, body);
      ssize_t n = send(fd, busy, (size_t)len, MSG_NOSIGNAL);
      (void)n;
      s->by_status[503]++;
      close(fd);
      continue;
    }
    conn *c = calloc(1, sizeof *c);
    if (c) c->rd = sc_http_reader_new(MAX_HEADER_BYTES, s->o.max_body);
    if (!c || !c->rd) {
      if (c) free(c);
      close(fd);
      continue;
    }
    c->s = s;
    c->fd = fd;
    c->keep_alive = true;
    ev_io_init(&c->rw, read_cb, fd, EV_READ);
    ev_io_init(&c->ww, write_cb, fd, EV_WRITE);
    ev_timer_init(&c->timer, timer_cb, s->o.idle_timeout_s, 0);
    c->rw.data = c->ww.data = c->timer.data = c;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    ev_io_start(loop, &c->rw);
    ev_timer_start(loop, &c->timer);
  }
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents) {
  SC_LOG_INFO("serve: signal %d: shutting down", w->signum);
  ev_break(loop, EVBREAK_ALL);
}

/* ---- start and stop ------------------------------------------------------------ */

void sc_serve_options_default(sc_serve_options *o) {
  memset(o, 0, sizeof *o);
  o->listen = "127.0.0.1:8080";
  o->device = SC_DEVICE_AUTO;
  o->queue = 64;
  o->batch = 0; /* by device */
  o->max_tokens = 256;
  o->max_connections = 256;
  o->max_body = 4u << 20;
  o->header_timeout_s = 10;
  o->idle_timeout_s = 60;
}

static sc_status listen_on(server *s, sc_error *err) {
  const char *spec = s->o.listen;
  char host[256];
  const char *colon = strrchr(spec, ':');
  SC_CHECK(colon && colon != spec && (size_t)(colon - spec) < sizeof host && colon[1], err,
           SC_ERR_INVALID, "--listen '%s' is not HOST:PORT", spec);
  const char *h = spec;
  size_t hl = (size_t)(colon - spec);
  if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') h++, hl -= 2; /* [v6]:port */
  memcpy(host, h, hl);
  host[hl] = '\0';
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int gai = getaddrinfo(host, colon + 1, &hints, &res);
  SC_CHECK(gai == 0, err, SC_ERR_INVALID, "--listen '%s': %s", spec, gai_strerror(gai));
  int fd = -1, saved = 0;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) break;
    saved = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  SC_CHECK(fd >= 0, err, SC_ERR_IO, "cannot listen on %s: %s", spec, strerror(saved));
  s->listen_fd = fd;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char addr[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET) {
      struct sockaddr_in *in = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr);
      port = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr);
      port = ntohs(in6->sin6_port);
    }
  }
  bool v6 = ss.ss_family == AF_INET6;
  fprintf(stderr, "sculpt serve: listening on %s%s%s:%d\n", v6 ? "[" : "", addr, v6 ? "]" : "",
          port);
  fflush(stderr);
  return SC_OK;
}

static void server_teardown(server *s) {
  if (s->thread_started) {
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
  }
  /* Requests still open get a last word before their connections close: a
   * stream its error event and end, a plain request a 503. Best effort:
   * what the sockets take now. */
  for (conn *c = s->conns, *next; c; c = next) {
    next = c->next; /* conn_flush may close c */
    if (!c->job || c->fd < 0 || c->closing) continue;
    if (c->sse_started) {
      send_event(c, error_body("the server is shutting down", "server_error"));
      sse_end(c);
    } else {
      static const char body[] = "{\"error\":{\"message\":\"the server is shutting down\","
                                 "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
      char head[192];
      int n = snprintf(head, sizeof head,
                       "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                       sizeof body - 1);
      if (conn_send(c, head, (size_t)n)) conn_send(c, body, sizeof body - 1);
    }
    conn_flush(c);
  }
  while (s->conns) conn_close(s->conns);
  reap(s);
  /* What the engine thread left: queued jobs, live ones, the outbox. */
  pthread_mutex_lock(&s->mu);
  for (job *j = s->q_head, *next; j; j = next) {
    next = j->next_q;
    job_release_locked(j);
  }
  s->q_head = s->q_tail = NULL;
  for (int k = 0; k < SC_INFILL_MAX_BATCH; k++)
    if (s->live[k]) job_release_locked(s->live[k]), s->live[k] = NULL;
  for (job *j = s->out_head, *next; j; j = next) {
    next = j->next_out;
    job_release_locked(j);
  }
  s->out_head = s->out_tail = NULL;
  pthread_mutex_unlock(&s->mu);
  if (s->loop) {
    if (ev_is_active(&s->listen_w)) ev_io_stop(s->loop, &s->listen_w);
    ev_async_stop(s->loop, &s->wake_w);
    ev_signal_stop(s->loop, &s->sigint_w);
    ev_signal_stop(s->loop, &s->sigterm_w);
    ev_check_stop(s->loop, &s->reap_w);
    ev_loop_destroy(s->loop);
  }
  if (s->listen_fd >= 0) close(s->listen_fd);
  sc_engine_batch_free(s->batch);
  sc_engine_free(s->engine);
  sc_tokenizer_free(s->tok);
  sc_model_free(s->model);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
}

sc_status sc_serve_run(const sc_serve_options *opts, sc_error *err) {
  server srv, *s = &srv;
  memset(s, 0, sizeof *s);
  s->o = *opts;
  s->listen_fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  sc_status st = SC_OK;
#define FAIL(...)                                                                           \
  do {                                                                                      \
    st = sc_error_set(err, __VA_ARGS__);                                                     \
    goto done;                                                                              \
  } while (0)
  if (!s->o.model_dir) FAIL(SC_ERR_INVALID, "no model");
  if (!s->o.listen) s->o.listen = "127.0.0.1:8080";
  if (s->o.batch < 0 || s->o.batch > SC_INFILL_MAX_BATCH)
    FAIL(SC_ERR_INVALID, "--batch must be 1 to %d", SC_INFILL_MAX_BATCH);
  if (s->o.queue < 0) FAIL(SC_ERR_INVALID, "--queue must not be negative");
  if (s->o.max_tokens < 1) s->o.max_tokens = 256;
  if (s->o.max_connections < 1) s->o.max_connections = 256;
  if (s->o.header_timeout_s <= 0) s->o.header_timeout_s = 10;
  if (s->o.idle_timeout_s <= 0) s->o.idle_timeout_s = 60;
  if (s->o.api_key && !s->o.api_key[0]) FAIL(SC_ERR_INVALID, "the API key is empty");
  s->api_key = s->o.api_key;
  s->api_key_len = s->api_key ? strlen(s->api_key) : 0;
  {
    const char *base = strrchr(s->o.model_dir, '/');
    base = base && base[1] ? base + 1 : s->o.model_dir;
    snprintf(s->model_name, sizeof s->model_name, "%s", base);
    size_t l = strlen(s->model_name);
    while (l > 1 && s->model_name[l - 1] == '/') s->model_name[--l] = '\0';
  }
  sc_device_choice dev;
  sc_device_select(s->o.device, &dev);
  /* Measured on 2 CPU cores (tools/bench/serve_load.py): a packed pass costs
   * about what the passes it replaces cost, so batching lowered throughput
   * (7.9 vs 9.3 req/s at 8 clients); a GPU pass is bound by reading the
   * weights, which batching shares. */
  if (s->o.batch == 0) s->o.batch = dev.kind == SC_DEVICE_CUDA ? 8 : 1;
  sc_model_options mo = {0};
  mo.device = dev.kind;
  if ((st = sc_model_load(s->o.model_dir, &mo, &s->model, err)) != SC_OK) goto done;
  if ((st = sc_tokenizer_load_dir(s->o.model_dir, &s->tok, err)) != SC_OK) goto done;
  s->info = sc_model_get_info(s->model);
  s->context = s->o.context > 0 ? s->o.context : (s->info->max_seq < 1024 ? s->info->max_seq : 1024);
  if (s->context > s->info->max_seq) s->context = s->info->max_seq;
  if (s->context < 8) FAIL(SC_ERR_INVALID, "a %d-token context is too small", s->context);
  if (s->o.max_tokens > (s->context - 2) / 2) s->o.max_tokens = (s->context - 2) / 2;
  if ((st = sc_engine_new(s->model, s->tok, s->context, &s->engine, err)) != SC_OK) goto done;
  {
    int budget = s->context * s->o.batch;
    if (budget > 4096) budget = s->context > 4096 ? s->context : 4096;
    if ((st = sc_engine_batch_new(s->engine, budget, &s->batch, err)) != SC_OK) goto done;
  }
  /* A client that goes away mid-write must not kill us: EPIPE is handled
   * (send uses MSG_NOSIGNAL too). */
  signal(SIGPIPE, SIG_IGN);
  s->loop = ev_loop_new(EVFLAG_AUTO);
  if (!s->loop) FAIL(SC_ERR_INTERNAL, "cannot create the event loop");
  if ((st = listen_on(s, err)) != SC_OK) goto done;
  ev_io_init(&s->listen_w, accept_cb, s->listen_fd, EV_READ);
  ev_async_init(&s->wake_w, wake_cb);
  ev_signal_init(&s->sigint_w, signal_cb, SIGINT);
  ev_signal_init(&s->sigterm_w, signal_cb, SIGTERM);
  ev_check_init(&s->reap_w, reap_cb);
  s->listen_w.data = s->wake_w.data = s->sigint_w.data = s->sigterm_w.data = s->reap_w.data = s;
  ev_check_start(s->loop, &s->reap_w);
  ev_io_start(s->loop, &s->listen_w);
  ev_async_start(s->loop, &s->wake_w);
  ev_signal_start(s->loop, &s->sigint_w);
  ev_signal_start(s->loop, &s->sigterm_w);
  if (pthread_create(&s->thread, NULL, engine_main, s) != 0)
    FAIL(SC_ERR_INTERNAL, "cannot start the engine thread");
  s->thread_started = true;
  SC_LOG_INFO("serve: model %s (%s) on %s; batch %d, queue %d, %d-token context%s",
              s->model_name, sc_model_family_name(s->info->family), dev.description,
              s->o.batch, s->o.queue, s->context, s->api_key ? ", bearer token required" : "");
  ev_run(s->loop, 0);
done:
#undef FAIL
  server_teardown(s);
  return st;
}

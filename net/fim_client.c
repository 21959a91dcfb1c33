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
 * The API key only ever goes into the Authorization header. Error texts are
 * scrubbed of it (a server could echo a header back), and the endpoint in
 * messages has any user:password@ removed. */
#define _POSIX_C_SOURCE 200809L
#include "fim_impl.h"
#include "net_impl.h"

#include <ctype.h>
#include <curl/curl.h>
#include <ev.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
/* ---- small helpers ------------------------------------------------------------ */

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
    call->mode = code >= 200 && code <= 299 ? sc_fim__body_mode(call) : BODY_JSON;
  }
  if (call->mode == BODY_SSE || call->mode == BODY_NDJSON) sc_fim__stream_feed(call, false);
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
    char reason[256], hint[320];
    sc_fim__refusal(call, code, reason, sizeof reason, hint, sizeof hint);
    res.status = SC_ERR_IO;
    sc_error_set(&res.err, SC_ERR_IO, "backend %s answered HTTP %ld%s%s%s%s%s%s", c->shown, code,
                 call->tries > 1 ? " (after retries)" : "", reason[0] ? ": " : "", reason,
                 hint[0] ? " (hint: " : "", hint, hint[0] ? ")" : "");
    call_finish(call, &res);
    return;
  }
  json_t *j = NULL;
  sc_fim__answer_result(call, &res, &j);
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

/* ---- public ------------------------------------------------------------------------ */

sc_status sc_fim_client_new(struct ev_loop *loop, const sc_fim_client_options *o,
                            sc_fim_client **out, sc_error *err) {
  *out = NULL;
  SC_CHECK(loop && o && o->url && o->url[0], err, SC_ERR_INVALID, "fim: a backend URL is needed");
  SC_CHECK(strncmp(o->url, "http://", 7) == 0 || strncmp(o->url, "https://", 8) == 0, err,
           SC_ERR_INVALID, "fim: the backend URL must start with http:// or https://");
  SC_TRY(sc_net__curl_start(err));
  sc_fim_provider prov;
  char *endpoint = NULL;
  if (sc_fim__endpoint(o, &prov, &endpoint, err) != SC_OK) return err->status;
  bool has_model = o->model && o->model[0];
  sc_fim_client *c = calloc(1, sizeof *c);
  if (!c) {
    free(endpoint);
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
  c->endpoint = endpoint;
  bool ok = (c->shown = sc_fim__url_shown(endpoint)) != NULL;
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
  char *text = sc_fim__request_body(c, req);
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

/* serve_conn.c — the HTTP connection layer of `sculpt serve`, on the libev
 * loop thread: accepting (with the connection cap), reading and parsing
 * requests (net/http.c) one at a time, in order (pipelining), answering
 * them through the response primitives below, keep-alive and idle timers,
 * the request timeout (408), 100 (Continue), the client's EOF, and a
 * lingering close. Each complete request goes to sc_serve__route
 * (serve_api.c); a connection that closes with a completion pending
 * cancels it (serve_sched.c).
 *
 * Streaming is server-sent events
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html) in a
 * chunked body (RFC 9112 section 7.1), or as they are until the close for
 * HTTP/1.0. */
#define _GNU_SOURCE /* accept4 */
#include "serve_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const double sc_serve__buckets[N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,    2.5,   5,    10,  30};

static void conn_process(conn *c);
static void conn_eof(conn *c);

/* ---- clients -------------------------------------------------------------------- */

/* A client's key: its IPv4 address (as IPv4-mapped IPv6), or the /64 of
 * its IPv6 address (one host commonly holds a whole /64). */
static void client_key(const struct sockaddr_storage *ss, unsigned char key[16]) {
  memset(key, 0, 16);
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    key[10] = key[11] = 0xff;
    memcpy(key + 12, &in->sin_addr, 4);
  } else if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) memcpy(key, &in6->sin6_addr, 16);
    else memcpy(key, &in6->sin6_addr, 8);
  }
}

static size_t client_home(const server *s, const unsigned char key[16]) {
  return (size_t)sc_hash64(key, 16, 0x5c01) & (s->n_clients_cap - 1);
}

/* The slot holding key, or the empty one where it would go. */
static client_slot *client_find(server *s, const unsigned char key[16]) {
  size_t mask = s->n_clients_cap - 1;
  for (size_t i = client_home(s, key);; i = (i + 1) & mask) {
    client_slot *e = &s->clients[i];
    if (e->count == 0 || memcmp(e->key, key, 16) == 0) return e;
  }
}

static int client_count(server *s, const unsigned char key[16]) {
  return client_find(s, key)->count;
}

/* The table has room for every pool connection twice over, so it never
 * fills. */
static void client_add(server *s, const unsigned char key[16]) {
  client_slot *e = client_find(s, key);
  if (e->count == 0) memcpy(e->key, key, 16);
  e->count++;
}

static void client_remove(server *s, const unsigned char key[16]) {
  client_slot *e = client_find(s, key);
  if (e->count == 0 || --e->count > 0) return;
  /* Deleted: move up later entries whose probe passed this slot, so that
   * lookups never stop at the hole (Knuth 6.4, algorithm R). */
  size_t mask = s->n_clients_cap - 1, hole = (size_t)(e - s->clients);
  for (size_t j = (hole + 1) & mask; s->clients[j].count; j = (j + 1) & mask) {
    size_t home = client_home(s, s->clients[j].key);
    bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      s->clients[hole] = s->clients[j];
      s->clients[j].count = 0;
      hole = j;
    }
  }
}

/* ---- output -------------------------------------------------------------------- */

/* A timeout for c: a reserved connection gets at most RESERVED_TIMEOUT_S. */
static double conn_timeout(const conn *c, double t) {
  return c->reserved && t > RESERVED_TIMEOUT_S ? RESERVED_TIMEOUT_S : t;
}

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
bool sc_serve__conn_flush(conn *c) {
  if (c->fd < 0) return false;
  while (c->out_start < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_start, c->out_len - c->out_start, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_start += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    sc_serve__conn_close(c);
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
void sc_serve__conn_close_when_sent(conn *c) {
  c->close_after = true;
  if (!sc_serve__conn_flush(c) || c->closing) return;
  /* Not all sent yet: bound the wait for a client that does not take it. */
  ev_timer_stop(c->s->loop, &c->timer);
  ev_timer_set(&c->timer, conn_timeout(c, c->s->o.idle_timeout_s), 0);
  ev_timer_start(c->s->loop, &c->timer);
}

bool sc_serve__conn_send(conn *c, const char *data, size_t len) {
  if (c->fd < 0) return false;
  if (c->closing) return true;
  if (!sc_queue_append(&c->out, &c->out_start, &c->out_len, &c->out_cap, 4096, data, len)) {
    sc_serve__conn_close(c);
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
  while (b < N_BUCKETS && seconds > sc_serve__buckets[b]) b++;
  s->lat_buckets[b]++;
  s->lat_sum += seconds;
  s->lat_count++;
}

/* The request is answered: count it, and read the next one (or close). */
void sc_serve__conn_request_done(conn *c, int status, bool completion) {
  server *s = c->s;
  if (status >= 100 && status < 600) s->by_status[status]++;
  if (completion && status == 200) record_latency(s, (sc_now_ms() - c->t_request) / 1000.0);
  c->busy = false;
  c->sse_started = c->probed = false;
  ev_timer_stop(s->loop, &c->gone_w);
  /* An error or 408 before the next request is routed is no HEAD answer. */
  c->head = c->http10 = false;
  /* After the client's EOF the connection still answers the requests that
   * came whole before it (conn_process, then conn_eof closes). */
  if (!c->keep_alive) c->close_after = true;
  if (c->close_after) {
    sc_serve__conn_close_when_sent(c);
    return;
  }
  if (!sc_serve__conn_flush(c)) return;
  sc_http_reader_next(c->rd);
  c->req_timer = c->continued = false;
  ev_timer_stop(s->loop, &c->timer);
  ev_timer_set(&c->timer, conn_timeout(c, s->o.idle_timeout_s), 0);
  ev_timer_start(s->loop, &c->timer);
  if (!c->eof && !ev_is_active(&c->rw)) ev_io_start(s->loop, &c->rw);
  if (!c->in_process) conn_process(c); /* pipelined requests already here */
}

/* A whole response; extra is more header lines, each ending in CRLF. */
void sc_serve__conn_respond(conn *c, int status, const char *ctype, const char *body,
                            size_t len, const char *extra, bool completion) {
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
  if (!sc_serve__conn_send(c, head, (size_t)n)) return;
  /* A response to HEAD has no content (RFC 9110 section 9.3.2); bytes sent
   * anyway would be read as the next response. */
  if (len && !c->head && !sc_serve__conn_send(c, body, len)) return;
  sc_serve__conn_request_done(c, status, completion);
}

void sc_serve__conn_respond_json(conn *c, int status, json_t *o, const char *extra,
                                 bool completion) {
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!s) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
    sc_serve__conn_respond(c, 500, "application/json", oom, sizeof oom - 1, NULL, completion);
    return;
  }
  sc_serve__conn_respond(c, status, "application/json", s, strlen(s), extra, completion);
  free(s);
}

void sc_serve__conn_error(conn *c, int status, const char *msg, bool close) {
  const char *type = status == 401   ? "authentication_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  if (close) c->close_after = true;
  const char *extra = status == 429 || status == 503 ? "Retry-After: 1\r\n"
                      : status == 401 ? "WWW-Authenticate: Bearer\r\n"
                                      : NULL;
  sc_serve__conn_respond_json(c, status, sc_serve__error_body(msg, type), extra, false);
}

/* One chunk of the chunked body (RFC 9112 section 7.1); the bytes as they
 * are when the body is not chunked (HTTP/1.0: it ends with the connection). */
static void send_chunk(conn *c, const char *data, size_t len) {
  if (!c->chunked) {
    sc_serve__conn_send(c, data, len);
    return;
  }
  char head[32];
  int n = snprintf(head, sizeof head, "%zx\r\n", len);
  if (sc_serve__conn_send(c, head, (size_t)n) && sc_serve__conn_send(c, data, len))
    sc_serve__conn_send(c, "\r\n", 2);
}

void sc_serve__sse_event(conn *c, json_t *o) {
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

void sc_serve__sse_start(conn *c) {
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
  sc_serve__conn_send(c, head, (size_t)n);
}

/* The end of a stream: [DONE] (OpenAI's marker; llama.cpp's own endpoints
 * end without it), then the last chunk when chunked. */
void sc_serve__sse_end(conn *c, bool done_marker) {
  if (done_marker) send_chunk(c, "data: [DONE]\n\n", 14);
  if (c->chunked) sc_serve__conn_send(c, "0\r\n\r\n", 5);
}

/* ---- connections: input ------------------------------------------------------- */

/* Whether the client is gone altogether: after its FIN, a close and a
 * half-close look the same until we send something, which a closed socket
 * answers with a reset (RFC 9293 section 3.6.1): then the socket reports
 * POLLHUP (and POLLERR), while a half-closed one only reads EOF. */
static bool conn_peer_gone(const conn *c) {
  struct pollfd p = {c->fd, 0, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void gone_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  conn *c = w->data;
  if (c->fd >= 0 && conn_peer_gone(c)) sc_serve__conn_close(c); /* cancels its job */
}

/* A completion is pending and the client sent its FIN: it may have
 * half-closed and wait for the answer (answered, issue 22) or have gone (the
 * request is cancelled, to free its place in the batch). To tell them
 * apart, an HTTP/1.1 client gets an interim 100 (Continue), which every
 * client must accept before a final answer (RFC 9110 section 15.2); a
 * closed one resets the connection, and gone_cb sees it within a tick. A
 * stream already started probes by itself with its events; an HTTP/1.0
 * client may not be sent a 1xx, so a gone 1.0 client keeps its place until
 * its answer is written (its request is bounded by max_tokens). */
static void conn_watch_gone(conn *c) {
  if (!c->probed && !c->sse_started && !c->http10) {
    static const char probe[] = "HTTP/1.1 100 Continue\r\n\r\n";
    c->probed = true;
    if (!sc_serve__conn_send(c, probe, sizeof probe - 1) || !sc_serve__conn_flush(c)) return;
  }
  if (!ev_is_active(&c->gone_w)) ev_timer_again(c->s->loop, &c->gone_w);
}

/* After the client's EOF (a close or a half-close, which look the same):
 * every request that arrived whole is answered, in order, then the
 * connection closes once the answers are sent (RFC 9112 section 9.6).
 * Called whenever input was processed; does nothing before EOF or while
 * an answer is under way. */
static void conn_eof(conn *c) {
  if (c->fd < 0 || !c->eof || c->closing || c->close_after || c->in_process) return;
  if (c->job || c->intake) {
    /* A completion still pending (or its body still being parsed):
     * answered, unless the client turns out to be gone (conn_watch_gone). */
    conn_watch_gone(c);
    return;
  }
  /* Busy: answering now (conn_request_done comes back here). Can't parse:
   * too many answers unsent, and the pipelined requests behind them wait
   * (conn_resume comes back here once they are sent). */
  if (c->busy || !conn_can_parse(c)) return;
  /* Everything whole is answered; what is left in c->in is a request the
   * client cut off, which gets no answer. */
  if (c->out_start == c->out_len) sc_serve__conn_close(c);
  else sc_serve__conn_close_when_sent(c);
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
        if (!sc_serve__conn_send(c, cont, sizeof cont - 1) || !sc_serve__conn_flush(c)) break;
      }
      /* The request timer starts at its first byte. */
      if (sc_http_reader_request(c->rd)->started && !c->req_timer) {
        ev_timer_stop(c->s->loop, &c->timer);
        ev_timer_set(&c->timer, conn_timeout(c, c->s->o.header_timeout_s), 0);
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
      sc_serve__conn_error(c, status, why, true);
      break;
    }
    sc_serve__route(c, sc_http_reader_request(c->rd));
  }
  c->in_process = false;
  conn_eof(c);
}

void sc_serve__conn_close(conn *c) {
  server *s = c->s;
  if (c->fd < 0) return;
  ev_io_stop(s->loop, &c->rw);
  ev_io_stop(s->loop, &c->ww);
  ev_timer_stop(s->loop, &c->timer);
  ev_timer_stop(s->loop, &c->gone_w);
  close(c->fd);
  c->fd = -1;
  if (c->intake) {
    /* Its body is being parsed: the result will be dropped. */
    sc_serve__intake_forget(c);
    s->by_status[499]++;
  }
  if (c->job) {
    /* Cancel: a queued job leaves the queue now, a live one at the next
     * step boundary (the engine thread drops it). */
    job *j = c->job;
    c->job = NULL;
    j->conn = NULL;
    s->by_status[499]++; /* nginx's "client closed request" */
    sc_serve__sched_cancel(s, j);
  }
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->n_conns--;
  if (c->reserved) {
    int k = 0;
    while (k < s->n_reserved && s->reserved[k] != c) k++;
    if (k < s->n_reserved) {
      memmove(s->reserved + k, s->reserved + k + 1,
              (size_t)(s->n_reserved - k - 1) * sizeof *s->reserved);
      s->n_reserved--;
    }
  } else {
    client_remove(s, c->client);
  }
  /* Freed later: callers up the stack may still look at c (fd < 0). */
  c->next = s->dead;
  s->dead = c;
}

void sc_serve__reap(server *s) {
  while (s->dead) {
    conn *c = s->dead;
    s->dead = c->next;
    sc_http_reader_free(c->rd);
    free(c->in);
    free(c->out);
    free(c);
  }
}

void sc_serve__reap_cb(struct ev_loop *loop, ev_check *w, int revents) { sc_serve__reap(w->data); }

static void read_cb(struct ev_loop *loop, ev_io *w, int revents) {
  conn *c = w->data;
  if (c->closing) {
    /* Answered with close: discard until the client closes too. */
    char sink[4096];
    for (;;) {
      ssize_t n = recv(c->fd, sink, sizeof sink, 0);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      sc_serve__conn_close(c);
      return;
    }
  }
  /* One connection's bytes per callback are bounded, so that a client
   * sending a long body over a fast link (4 MiB over loopback arrives as
   * fast as it is read) yields the loop to the others between slices: the
   * copies into fresh pages cost about 5 ms a MiB here, and read to the
   * end at once they held the loop 19 ms. The watcher is level-triggered:
   * what is left is read in the next iteration. */
  size_t budget = READ_SLICE_BYTES;
  for (;;) {
    if (budget == 0) break;
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
        sc_serve__conn_close(c);
        return;
      }
      c->in = nb;
      c->in_cap = cap;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n > 0) {
      c->in_len += (size_t)n;
      budget = (size_t)n < budget ? budget - (size_t)n : 0;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      sc_serve__conn_close(c);
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
  if (sc_serve__conn_flush(c)) conn_resume(c);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  conn *c = w->data;
  if (c->closing || c->close_after) {
    sc_serve__conn_close(c); /* lingered enough, or the client never took its answer */
    return;
  }
  if (c->busy) return;
  if (c->out_start < c->out_len) {
    sc_serve__conn_close(c); /* a client that reads none of its answers for so long */
    return;
  }
  if (sc_http_reader_request(c->rd)->started || c->in_len > 0) {
    c->busy = true;
    c->keep_alive = false;
    sc_serve__conn_error(c, 408, "the request was not complete in time", true);
    return;
  }
  sc_serve__conn_close(c); /* idle keep-alive connection */
}

/* A 503 straight on the socket, then the close: for a connection we do not
 * keep (best effort: what the socket takes now). */
static void refuse(server *s, int fd) {
  static const char body[] = "{\"error\":{\"message\":\"too many connections\","
                             "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
  char busy[512];
  int len = snprintf(busy, sizeof busy,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                     sizeof body - 1, body);
  ssize_t n = send(fd, busy, (size_t)len, MSG_NOSIGNAL);
  (void)n;
  s->by_status[503]++;
}

/* Makes room in the reserve: the oldest reserved connection still waiting
 * for its request is refused (a 503) and closed. False when every one is
 * answering. */
static bool reserve_evict(server *s) {
  for (int k = 0; k < s->n_reserved; k++) {
    conn *c = s->reserved[k];
    if (c->busy || c->closing || c->close_after) continue;
    refuse(s, c->fd);
    sc_serve__conn_close(c);
    return true;
  }
  return false;
}

void sc_serve__accept_cb(struct ev_loop *loop, ev_io *w, int revents) {
  server *s = w->data;
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    memset(&ss, 0, sizeof ss);
    int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        SC_LOG_WARN("serve: accept: %s", strerror(errno));
      return;
    }
    unsigned char key[16];
    client_key(&ss, key);
    /* Past the pool's bound or the client's: the reserve, else a 503. */
    bool reserved = s->n_conns - s->n_reserved >= s->o.max_connections ||
                    client_count(s, key) >= s->o.max_client_connections;
    if (reserved && s->n_reserved == RESERVED_CONNS && !reserve_evict(s)) {
      refuse(s, fd);
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
    c->reserved = reserved;
    memcpy(c->client, key, sizeof c->client);
    if (reserved) s->reserved[s->n_reserved++] = c;
    else client_add(s, key);
    ev_io_init(&c->rw, read_cb, fd, EV_READ);
    ev_io_init(&c->ww, write_cb, fd, EV_WRITE);
    ev_timer_init(&c->timer, timer_cb, conn_timeout(c, s->o.idle_timeout_s), 0);
    ev_init(&c->gone_w, gone_cb);
    c->gone_w.repeat = GONE_CHECK_S;
    c->rw.data = c->ww.data = c->timer.data = c->gone_w.data = c;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    ev_io_start(loop, &c->rw);
    ev_timer_start(loop, &c->timer);
  }
}

/* ---- listening ---------------------------------------------------------------- */

sc_status sc_serve__listen(server *s, sc_error *err) {
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
  s->n_clients_cap = 16;
  while (s->n_clients_cap < 2 * (size_t)s->o.max_connections) s->n_clients_cap *= 2;
  s->clients = calloc(s->n_clients_cap, sizeof *s->clients);
  if (!s->clients) {
    close(fd);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
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


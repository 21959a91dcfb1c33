/* serve_intake.c — long request bodies parsed off the loop (serve_impl.h
 * says why). One thread, started with the first long body, takes the
 * waiting bodies in arrival order, parses each into a job as the loop would
 * (sc_serve__parse_completion or _infill: pure functions of the body and
 * the server's fixed options), and hands the results back through the
 * engine's wake-up (wake_w), whose callback drains them.
 *
 * Memory stays within what the connections already hold: the body is
 * taken from the connection's HTTP reader, not copied, and a connection has
 * one request in intake at most (it is busy until that request is
 * answered), so the bound is still max_connections bodies.
 *
 * Ownership: an intake is the thread's while waiting or parsing, then the
 * loop's. Its conn pointer is read and written on the loop thread only: a
 * connection that closes sets it to NULL (sc_serve__intake_forget), and the
 * drain drops that result. */
#define _POSIX_C_SOURCE 200809L
#include "serve_impl.h"

#include <stdlib.h>
#include <string.h>

struct intake {
  intake *next;
  conn *conn; /* loop thread only; NULL once the connection closed */
  enum job_api api;
  char *body; /* owned, NUL-terminated */
  size_t len;
  job *job;   /* the result (owned), or NULL with msg */
  char msg[512];
};

static void intake_free(intake *in) {
  if (!in) return;
  free(in->body);
  sc_serve__job_free(in->job);
  free(in);
}

static void *intake_main(void *arg) {
  server *s = arg;
  pthread_mutex_lock(&s->intake_mu);
  for (;;) {
    while (!s->intake_stop && !s->intake_head) pthread_cond_wait(&s->intake_cv, &s->intake_mu);
    if (s->intake_stop) break;
    intake *in = s->intake_head;
    s->intake_head = in->next;
    if (!s->intake_head) s->intake_tail = NULL;
    in->next = NULL;
    pthread_mutex_unlock(&s->intake_mu);

    in->job = in->api == API_INFILL
                  ? sc_serve__parse_infill(s, in->body, in->len, in->msg, sizeof in->msg)
                  : sc_serve__parse_completion(s, in->body, in->len, in->msg, sizeof in->msg);
    /* The job holds its own copies of the text; the body is done with. */
    free(in->body);
    in->body = NULL;

    pthread_mutex_lock(&s->intake_mu);
    if (s->parsed_tail) s->parsed_tail->next = in;
    else s->parsed_head = in;
    s->parsed_tail = in;
    ev_async_send(s->loop, &s->wake_w);
  }
  pthread_mutex_unlock(&s->intake_mu);
  return NULL;
}

bool sc_serve__intake_submit(conn *c, enum job_api api) {
  server *s = c->s;
  intake *in = calloc(1, sizeof *in);
  if (!in) return false;
  if (!s->intake_started) {
    if (pthread_mutex_init(&s->intake_mu, NULL) != 0) {
      free(in);
      return false;
    }
    if (pthread_cond_init(&s->intake_cv, NULL) != 0) {
      pthread_mutex_destroy(&s->intake_mu);
      free(in);
      return false;
    }
    /* A parse needs little stack: jansson's decoder is bounded by its
     * depth limit (2,048), about 100 bytes a level. */
    if (sc_thread_start(&s->intake_thread, (size_t)1 << 20, intake_main, s) != 0) {
      pthread_cond_destroy(&s->intake_cv);
      pthread_mutex_destroy(&s->intake_mu);
      free(in);
      return false;
    }
    s->intake_started = true;
  }
  in->api = api;
  in->body = sc_http_reader_take_body(c->rd, &in->len);
  if (!in->body) {
    /* Only a long body is sent here; an empty one has nothing to wait for. */
    free(in);
    return false;
  }
  in->conn = c;
  c->intake = in;
  pthread_mutex_lock(&s->intake_mu);
  if (s->intake_tail) s->intake_tail->next = in;
  else s->intake_head = in;
  s->intake_tail = in;
  pthread_cond_signal(&s->intake_cv);
  pthread_mutex_unlock(&s->intake_mu);
  return true;
}

void sc_serve__intake_drain(server *s, intake_done_fn done) {
  if (!s->intake_started) return;
  pthread_mutex_lock(&s->intake_mu);
  intake *list = s->parsed_head;
  s->parsed_head = s->parsed_tail = NULL;
  pthread_mutex_unlock(&s->intake_mu);
  while (list) {
    intake *in = list;
    list = in->next;
    conn *c = in->conn;
    if (c) {
      c->intake = NULL;
      job *j = in->job;
      in->job = NULL;
      done(c, j, in->msg);
    }
    intake_free(in);
  }
}

void sc_serve__intake_forget(conn *c) {
  if (!c->intake) return;
  c->intake->conn = NULL;
  c->intake = NULL;
}

void sc_serve__intake_stop(server *s) {
  if (!s->intake_started) return;
  pthread_mutex_lock(&s->intake_mu);
  s->intake_stop = true;
  pthread_cond_signal(&s->intake_cv);
  pthread_mutex_unlock(&s->intake_mu);
  pthread_join(s->intake_thread, NULL);
  s->intake_started = false;
  intake *lists[2] = {s->intake_head, s->parsed_head};
  for (int k = 0; k < 2; k++)
    while (lists[k]) {
      intake *in = lists[k];
      lists[k] = in->next;
      if (in->conn) in->conn->intake = NULL;
      intake_free(in);
    }
  s->intake_head = s->intake_tail = s->parsed_head = s->parsed_tail = NULL;
  pthread_cond_destroy(&s->intake_cv);
  pthread_mutex_destroy(&s->intake_mu);
}

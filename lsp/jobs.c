/* jobs.c — the requests in flight: posting jobs to the worker lanes,
 * answering each exactly once when it is done (or deferred to the loop),
 * and cancelling them: $/cancelRequest (-32800), an edit of their document
 * (-32801), a newer request of the same method, shutdown and exit. */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <stdlib.h>
#include <string.h>

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
void sc_server__answer_job(sc_lsp_server *s, sc_job *job) {
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
  const char *outer = s->answering; /* for sculpt/status's last error */
  s->answering = job->method;
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
  s->answering = outer;
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
    sc_server__answer_job(s, job);
    return;
  }
  sc_job *q = sc_worker_unqueue(s->workers[job->lane], job);
  if (q) sc_server__answer_job(s, q);
}

void sc_lsp__cancel_job(sc_lsp_server *s, sc_job *job) { cancel_job(s, job, SC_JOB_CANCELLED); }

void sc_server__cancel_jobs_for_uri(sc_lsp_server *s, const char *uri) {
  for (size_t i = 0; i < s->n_inflight;) {
    sc_job *job = s->inflight[i];
    size_t before = s->n_inflight;
    if (job->uri && strcmp(job->uri, uri) == 0) cancel_job(s, job, SC_JOB_STALE);
    if (s->n_inflight == before) i++; /* not removed: move on */
  }
}

void sc_server__cancel_all_jobs(sc_lsp_server *s, sc_job_cancel why) {
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
  job->worker = s->workers[lane];
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
  sc_server__answer_job(s, job);
  sc_server__flush_logs(s);
}

void sc_server__drain_jobs(sc_lsp_server *s) {
  sc_server__loop_enter(s);
  sc_job *job;
  /* Reports of running jobs first: a job that finished since has its
   * last report delivered before its end. */
  for (size_t i = 0; i < s->n_inflight; i++) {
    job = s->inflight[i];
    if (!atomic_exchange(&job->progress_pending, false) || !job->on_progress) continue;
    job->on_progress(s, job, atomic_load(&job->progress_done), atomic_load(&job->progress_total));
  }
  for (int l = 0; l < SC_LANE_COUNT; l++)
    while ((job = sc_worker_take_done(s->workers[l]))) sc_server__answer_job(s, job);
  sc_server__flush_logs(s);
  sc_server__loop_leave(s);
}

void sc_server__handle_cancel(sc_lsp_req *r) {
  json_t *id = json_object_get(r->params, "id");
  if (!json_is_integer(id) && !json_is_string(id)) return;
  for (size_t i = 0; i < r->s->n_inflight; i++)
    if (json_equal(r->s->inflight[i]->id, id)) {
      cancel_job(r->s, r->s->inflight[i], SC_JOB_CANCELLED);
      return;
    }
}

/* worker.c — one thread that runs model jobs in order, off the loop thread.
 * The loop posts jobs and is woken (on_done) when a finished one waits.
 * Only the loop thread frees jobs, so pointers it holds stay valid until it
 * takes them back with sc_worker_take_done or sc_worker_unqueue. */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"
#include "context.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct sc_worker {
  bool threaded;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sc_job *queue_head, *queue_tail; /* waiting */
  sc_job *running;
  sc_job *done_head, *done_tail;   /* finished, not yet taken */
  size_t pending;                  /* queued + running */
  bool stop;
  sc_worker_done_fn on_done;
  void *user;
};

bool sc_job_wait(sc_job *job, double ms) {
  double deadline = sc_now_ms() + ms;
  for (double now = sc_now_ms(); now < deadline; now = sc_now_ms()) {
    if (sc_job_cancelled(job) != SC_JOB_LIVE) return false;
    double left = deadline - now;
    struct timespec ts = {0, (long)((left < 1.0 ? left : 1.0) * 1e6)};
    nanosleep(&ts, NULL);
  }
  return sc_job_cancelled(job) == SC_JOB_LIVE;
}

void sc_worker_wake(sc_worker *w) { w->on_done(w->user); }

void sc_job_report(sc_job *job, uint64_t done, uint64_t total) {
  atomic_store(&job->progress_done, done);
  atomic_store(&job->progress_total, total);
  /* One wake per report the loop has not taken yet. */
  if (!atomic_exchange(&job->progress_pending, true) && job->worker) sc_worker_wake(job->worker);
}

void sc_job_free(sc_job *job) {
  if (!job) return;
  json_decref(job->id);
  json_decref(job->result);
  free(job->method);
  free(job->uri);
  if (job->free_arg) job->free_arg(job->arg);
  free(job);
}

static void run_job(sc_job *job) {
  job->ran = true;
  if (sc_job_cancelled(job) != SC_JOB_LIVE) {
    sc_error_set(&job->err, SC_ERR_CANCELLED, "cancelled before it started");
    return;
  }
  job->result = job->fn(job, job->arg, &job->err);
  if (!job->result && job->err.status == SC_OK)
    sc_error_set(&job->err, SC_ERR_INTERNAL, "%s returned no result", job->method);
}

static void push_done_locked(sc_worker *w, sc_job *job) {
  job->next = NULL;
  if (w->done_tail) w->done_tail->next = job;
  else w->done_head = job;
  w->done_tail = job;
}

static void *worker_main(void *arg) {
  sc_worker *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->queue_head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (w->stop) break;
    sc_job *job = w->queue_head;
    w->queue_head = job->next;
    if (!w->queue_head) w->queue_tail = NULL;
    w->running = job;
    pthread_mutex_unlock(&w->mu);

    run_job(job);

    pthread_mutex_lock(&w->mu);
    w->running = NULL;
    w->pending--;
    push_done_locked(w, job);
    pthread_mutex_unlock(&w->mu);
    w->on_done(w->user);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

sc_worker *sc_worker_new(bool threaded, size_t parse_bytes, sc_worker_done_fn on_done,
                         void *user) {
  sc_worker *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->threaded = threaded;
  w->on_done = on_done;
  w->user = user;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  /* A worker parses documents (and the index its files), in place only
   * while its stack has room for the text (context/syntax.c), else on a
   * thread of its own per parse, whose allocations then land in another
   * malloc arena (a 2 MB document's peak memory swung by 110 MB). So a
   * worker gets the stack for the texts its jobs parse, reserved and
   * touched only as used, within what the process may reserve
   * (sc_thread_stack_budget: under ulimit -v or strict overcommit, less,
   * and the bigger parses move); where even that cannot be had, the
   * default stack. */
  size_t stack = parse_bytes ? sc_syntax_parse_stack_size(parse_bytes) + ((size_t)1 << 20) : 0;
  if (stack > sc_thread_stack_budget()) stack = sc_thread_stack_budget();
  if (threaded && (!stack || sc_thread_start(&w->thread, stack, worker_main, w) != 0) &&
      pthread_create(&w->thread, NULL, worker_main, w) != 0) {
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    return NULL;
  }
  return w;
}

static void free_list(sc_job *j) {
  while (j) {
    sc_job *next = j->next;
    sc_job_free(j);
    j = next;
  }
}

void sc_worker_stop(sc_worker *w) {
  pthread_mutex_lock(&w->mu);
  bool was_stopped = w->stop;
  w->stop = true;
  for (sc_job *j = w->queue_head; j; j = j->next)
    atomic_store(&j->cancel, SC_JOB_SHUTDOWN);
  if (w->running) atomic_store(&w->running->cancel, SC_JOB_SHUTDOWN);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  /* The running job sees the flag at its next step and lands in done. */
  if (w->threaded && !was_stopped) pthread_join(w->thread, NULL);
}

void sc_worker_free(sc_worker *w) {
  if (!w) return;
  sc_worker_stop(w);
  free_list(w->queue_head);
  free_list(w->done_head);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}

void sc_worker_post(sc_worker *w, sc_job *job) {
  job->next = NULL;
  job->queued_ms = sc_now_ms();
  if (!w->threaded) {
    run_job(job);
    pthread_mutex_lock(&w->mu);
    push_done_locked(w, job);
    pthread_mutex_unlock(&w->mu);
    w->on_done(w->user);
    return;
  }
  pthread_mutex_lock(&w->mu);
  if (w->queue_tail) w->queue_tail->next = job;
  else w->queue_head = job;
  w->queue_tail = job;
  w->pending++;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

sc_job *sc_worker_take_done(sc_worker *w) {
  pthread_mutex_lock(&w->mu);
  sc_job *job = w->done_head;
  if (job) {
    w->done_head = job->next;
    if (!w->done_head) w->done_tail = NULL;
    job->next = NULL;
  }
  pthread_mutex_unlock(&w->mu);
  return job;
}

sc_job *sc_worker_unqueue(sc_worker *w, sc_job *job) {
  pthread_mutex_lock(&w->mu);
  sc_job *prev = NULL, *found = NULL;
  for (sc_job *j = w->queue_head; j; prev = j, j = j->next) {
    if (j != job) continue;
    if (prev) prev->next = j->next;
    else w->queue_head = j->next;
    if (w->queue_tail == j) w->queue_tail = prev;
    j->next = NULL;
    w->pending--;
    found = j;
    break;
  }
  pthread_mutex_unlock(&w->mu);
  return found;
}

void sc_worker_each(sc_worker *w, void (*fn)(sc_job *job, void *arg), void *arg) {
  pthread_mutex_lock(&w->mu);
  for (sc_job *j = w->queue_head; j; j = j->next) fn(j, arg);
  if (w->running) fn(w->running, arg);
  pthread_mutex_unlock(&w->mu);
}

size_t sc_worker_pending(sc_worker *w) {
  pthread_mutex_lock(&w->mu);
  size_t n = w->pending;
  pthread_mutex_unlock(&w->mu);
  return n;
}

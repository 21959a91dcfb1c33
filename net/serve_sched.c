/* serve_sched.c — the scheduler of `sculpt serve`: the engine thread that
 * owns the engine and one sc_engine_batch (continuous batching), the
 * bounded queue in front of it, and the outbox through which drafts and
 * results go back to the loop thread.
 *
 * Between steps the engine thread admits queued requests (tokenizing them)
 * into free slots, drops cancelled ones, runs one packed forward pass over
 * all live requests, and posts drafts and results to the outbox, waking the
 * loop with an ev_async. The loop never waits on the model. It knows no
 * HTTP: jobs come in through sc_serve__sched_submit and go out through
 * sc_serve__sched_drain. */
#define _POSIX_C_SOURCE 200809L
#include "serve_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- jobs -------------------------------------------------------------------- */

void sc_serve__job_free(job *j) {
  if (!j) return;
  free(j->prompt);
  free(j->suffix);
  for (int i = 0; i < j->n_stop; i++) free(j->stop[i]);
  for (int i = 0; i < j->n_fields; i++) free(j->fields[i]);
  free(j->fields);
  free(j->draft);
  free(j->text);
  free(j);
}

/* Drops one reference; mu held. */
static void job_release_locked(job *j) {
  if (--j->refs == 0) sc_serve__job_free(j);
}

void sc_serve__job_release(server *s, job *j) {
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
  /* As every caller fits a request (model.h, sc_infill_fit_plan and
   * sc_infill_tokens_encode): the family's frame, the canvas (already
   * within half the room: serve.c), and the tokens nearest the middle, the
   * prefix cut first down to half, then the suffix, which then ends without
   * EOS. A prompt of megabytes is encoded through a window at its end, so
   * that it does not hold up the batch (whole, 3.7 MB took about 200 ms). */
  sc_infill_plan plan = {1, {j->max_tokens}};
  sc_infill_budget fit;
  sc_infill_tokens t = {0};
  sc_status st = sc_infill_fit_plan(s->model, s->context, 0, &plan, &j->params, &fit, &err);
  if (st == SC_OK)
    st = sc_infill_tokens_encode(s->tok, &fit, j->prompt, j->prompt_len, j->suffix,
                                 j->suffix_len, false, &t, &err);
  if (st != SC_OK) {
    pthread_mutex_lock(&s->mu);
    s->n_pending--;
    fail_job_locked(s, j, st == SC_ERR_INVALID ? 400 : 500, err.msg);
    job_release_locked(j);
    pthread_mutex_unlock(&s->mu);
    return st;
  }
  size_t keep_pre = t.keep_pre, keep_suf = t.keep_suf;
  /* (An empty text may come back as NULL: no offset on that.) */
  sc_infill_request q = {t.pre ? t.pre + (t.n_pre - keep_pre) : NULL, (int)keep_pre, t.suf,
                         (int)keep_suf, plan.lengths[0], j->params.seed, t.suffix_cut};
  int slot = -1;
  st = sc_engine_batch_add(s->batch, &q, &j->params, &slot, &err);
  size_t n_pre = t.n_pre, n_suf = t.n_suf;
  sc_infill_tokens_free(&t);
  pthread_mutex_lock(&s->mu);
  /* Out of the queue's count and into the batch's in one critical section
   * (engine_main keeps it counted while it is in transit). */
  if (st != SC_ERR_UNSUPPORTED) s->n_pending--;
  if (st == SC_OK) {
    j->slot = slot;
    j->state = JOB_LIVE;
    j->prompt_tokens = (int)(keep_pre + keep_suf);
    j->truncated = keep_pre < n_pre || keep_suf < n_suf;
    j->t_admit = sc_now_ms();
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

/* What a streamed request is sent after a step (see serve_shape.c, "Streaming"):
 * with stream_drafts the whole draft, its committed tokens up to the first
 * end token, holes left out; else its stable prefix, the tokens committed
 * left to right up to the first hole or end token, posted only when it
 * grew. */
static void on_progress(void *user, int slot, const int32_t *canvas, int m, int step,
                        int committed) {
  server *s = user;
  job *j = s->live[slot]; /* the engine thread writes live[]; reading it here is safe */
  if (!j || !j->stream) return;
  int32_t *ids = malloc((size_t)m * sizeof *ids);
  if (!ids) return;
  int n = 0, stable = 0;
  for (; stable < m; stable++) {
    int32_t t = canvas[stable];
    if (t == s->info->mask_id || (s->info->eos_id >= 0 && t == s->info->eos_id) ||
        (s->info->pad_id >= 0 && t == s->info->pad_id))
      break;
  }
  if (j->stream_drafts) {
    for (int i = 0; i < m; i++) {
      int32_t t = canvas[i];
      if ((s->info->eos_id >= 0 && t == s->info->eos_id) ||
          (s->info->pad_id >= 0 && t == s->info->pad_id))
        break;
      if (t != s->info->mask_id) ids[n++] = t;
    }
  } else if (stable > j->stable_posted) {
    memcpy(ids, canvas, (size_t)stable * sizeof *ids);
    n = stable;
    j->stable_posted = stable;
  } else {
    free(ids);
    return;
  }
  char *text = NULL;
  size_t len = 0;
  sc_error err = {0};
  sc_status st = sc_tokenizer_decode(s->tok, ids, (size_t)n, &text, &len, &err);
  free(ids);
  if (st != SC_OK) return;
  int hit;
  bool indent_cut;
  /* A draft is shown as the answer would end; a stable prefix is cut by
   * the loop, which also holds back what may begin a stop string. */
  if (j->stream_drafts) len = sc_serve__answer_end(j, text, len, &hit, &indent_cut);
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
    size_t len = r.text ? sc_serve__answer_end(j, r.text, r.text_len, &j->stop_hit,
                                               &j->indent_cut)
                        : 0;
    j->text = r.text;
    j->text_len = len;
    r.text = NULL;
    j->ended = r.ended;
    j->finish_reason = j->stop_hit >= 0 || r.ended ? "stop" : "length";
    j->t_done = sc_now_ms();
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


/* ---- the loop thread's side ------------------------------------------------- */

bool sc_serve__sched_submit(server *s, job *j) {
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
  return !full;
}

void sc_serve__sched_cancel(server *s, job *j) {
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

void sc_serve__sched_drain(server *s, sched_deliver_fn deliver) {
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
    deliver(s, j, draft, draft_len, step, state);
    free(draft);
    sc_serve__job_release(s, j); /* the outbox's reference */
  }
}

void sc_serve__sched_counts(server *s, sched_counts *out) {
  pthread_mutex_lock(&s->mu);
  out->pending = s->n_pending;
  out->live = s->n_live;
  out->max_live = s->max_live;
  out->passes = s->passes;
  out->steps = s->request_steps;
  out->gen_tokens = s->gen_tokens;
  out->prompt_tokens = s->prompt_tokens;
  out->cancelled = s->cancelled;
  pthread_mutex_unlock(&s->mu);
}

sc_status sc_serve__sched_start(server *s, sc_error *err) {
  if (pthread_create(&s->thread, NULL, engine_main, s) != 0)
    return sc_error_set(err, SC_ERR_INTERNAL, "cannot start the engine thread");
  s->thread_started = true;
  return SC_OK;
}

void sc_serve__sched_stop(server *s) {
  if (!s->thread_started) return;
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  s->thread_started = false;
}

void sc_serve__sched_release_all(server *s) {
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
}

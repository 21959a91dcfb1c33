/* serve.c — `sculpt serve`: the engine over HTTP/1.1 with continuous
 * batching. This file starts and stops it: options, the model and engine,
 * the libev loop and its watchers, the engine thread, and an orderly
 * shutdown on SIGINT/SIGTERM. The layers are in serve_conn.c (HTTP
 * connections), serve_api.c (routes), serve_shape.c (request and response
 * shaping) and serve_sched.c (the scheduler); serve_impl.h says what each
 * owns. */
#define _POSIX_C_SOURCE 200809L
#include "serve_impl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
  o->batch = 0; /* the default (8) */
  o->max_tokens = 256;
  o->max_connections = 256;
  o->max_client_connections = 64;
  o->max_body = 4u << 20;
  o->header_timeout_s = 10;
  o->idle_timeout_s = 60;
}

/* The loop's CPU per iteration (serve_impl.h): from the first watcher
 * after the poll to the last before the next. */
static void awake_cb(struct ev_loop *loop, ev_check *w, int revents) {
  server *s = w->data;
  s->iter_cpu0_ms = sc_thread_cpu_ms();
}

static void asleep_cb(struct ev_loop *loop, ev_prepare *w, int revents) {
  server *s = w->data;
  if (s->iter_cpu0_ms <= 0) return;
  double ms = sc_thread_cpu_ms() - s->iter_cpu0_ms;
  if (ms > s->iter_cpu_max_ms) s->iter_cpu_max_ms = ms;
}

static void server_teardown(server *s) {
  sc_serve__sched_stop(s);
  sc_serve__last_words(s);
  while (s->conns) sc_serve__conn_close(s->conns);
  sc_serve__reap(s);
  sc_serve__intake_stop(s);
  sc_serve__sched_release_all(s);
  if (s->loop) {
    if (ev_is_active(&s->listen_w)) ev_io_stop(s->loop, &s->listen_w);
    ev_check_stop(s->loop, &s->awake_w);
    ev_prepare_stop(s->loop, &s->asleep_w);
    ev_async_stop(s->loop, &s->wake_w);
    ev_signal_stop(s->loop, &s->sigint_w);
    ev_signal_stop(s->loop, &s->sigterm_w);
    ev_check_stop(s->loop, &s->reap_w);
    ev_loop_destroy(s->loop);
  }
  if (s->listen_fd >= 0) close(s->listen_fd);
  free(s->clients);
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
  s->started = (long long)time(NULL);
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
  if (s->o.max_client_connections < 1) s->o.max_client_connections = 64;
  if (s->o.header_timeout_s <= 0) s->o.header_timeout_s = 10;
  if (s->o.idle_timeout_s <= 0) s->o.idle_timeout_s = 60;
  if (s->o.api_key && !s->o.api_key[0]) FAIL(SC_ERR_INVALID, "the API key is empty");
  s->api_key = s->o.api_key;
  s->api_key_len = s->api_key ? strlen(s->api_key) : 0;
  {
    const char *base = strrchr(s->o.model_dir, '/');
    base = base && base[1] ? base + 1 : s->o.model_dir;
    if (s->o.model_name && *s->o.model_name) base = s->o.model_name;
    snprintf(s->model_name, sizeof s->model_name, "%s", base);
    size_t l = strlen(s->model_name);
    while (l > 1 && s->model_name[l - 1] == '/') s->model_name[--l] = '\0';
  }
  sc_device_choice dev;
  sc_device_select(s->o.device, &dev);
  /* 8 on every device. A GPU pass is bound by reading the weights, which
   * batching shares; on the CPU, measured on 2 cores with
   * tools/bench/serve_load.py --batch 1,8,1,8 (docs/measurements-history.md), 8
   * served 1.2x to 2.3x the requests of 1 at 4 and 8 clients, on the
   * planted and the shipped model (an earlier build measured 0.85x). */
  if (s->o.batch == 0) s->o.batch = 8;
  sc_model_options mo = {0};
  mo.device = dev.kind;
  mo.weights = s->o.weights;
  if ((st = sc_model_load(s->o.model_dir, &mo, &s->model, err)) != SC_OK) goto done;
  if ((st = sc_tokenizer_load_dir(s->o.model_dir, &s->tok, err)) != SC_OK) goto done;
  s->info = sc_model_get_info(s->model);
  s->context = s->o.context > 0 ? s->o.context : (s->info->max_seq < 1024 ? s->info->max_seq : 1024);
  if (s->context > s->info->max_seq) s->context = s->info->max_seq;
  if (s->context < 8) FAIL(SC_ERR_INVALID, "a %d-token context is too small", s->context);
  {
    /* The longest canvas a request may have: at most half of what the
     * context leaves after the family's frame, as every request is fitted
     * (model.h, sc_infill_budget; the split is in serve_sched.c). */
    sc_infill_params p;
    sc_serve__job_params(&p);
    sc_infill_frame frame;
    sc_infill_frame_for(s->model, &p, &frame);
    sc_infill_budget fit;
    if ((st = sc_infill_budget_compute(s->context, &frame, 0, s->o.max_tokens, &fit, err)) !=
        SC_OK)
      goto done;
    s->o.max_tokens = fit.canvas;
  }
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
  if ((st = sc_serve__listen(s, err)) != SC_OK) goto done;
  ev_io_init(&s->listen_w, sc_serve__accept_cb, s->listen_fd, EV_READ);
  ev_async_init(&s->wake_w, sc_serve__wake_cb);
  ev_signal_init(&s->sigint_w, signal_cb, SIGINT);
  ev_signal_init(&s->sigterm_w, signal_cb, SIGTERM);
  ev_check_init(&s->reap_w, sc_serve__reap_cb);
  s->listen_w.data = s->wake_w.data = s->sigint_w.data = s->sigterm_w.data = s->reap_w.data = s;
  ev_check_start(s->loop, &s->reap_w);
  ev_check_init(&s->awake_w, awake_cb);
  ev_set_priority(&s->awake_w, EV_MAXPRI);
  ev_prepare_init(&s->asleep_w, asleep_cb);
  ev_set_priority(&s->asleep_w, EV_MINPRI);
  s->awake_w.data = s->asleep_w.data = s;
  ev_check_start(s->loop, &s->awake_w);
  ev_prepare_start(s->loop, &s->asleep_w);
  ev_io_start(s->loop, &s->listen_w);
  ev_async_start(s->loop, &s->wake_w);
  ev_signal_start(s->loop, &s->sigint_w);
  ev_signal_start(s->loop, &s->sigterm_w);
  if ((st = sc_serve__sched_start(s, err)) != SC_OK) goto done;
  SC_LOG_INFO("serve: model %s (%s) on %s, %s weights; batch %d, queue %d, %d-token context%s",
              s->model_name, sc_model_family_name(s->info->family), dev.description,
              sc_weights_kind_name(s->info->weights), s->o.batch, s->o.queue, s->context, s->api_key ? ", bearer token required" : "");
  ev_run(s->loop, 0);
done:
#undef FAIL
  server_teardown(s);
  return st;
}

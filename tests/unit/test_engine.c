/* test_engine.c — the diffusion sampler on planted checkpoints, whose right
 * middle is known (tools/planted_checkpoints.py), and on a random tiny one.
 * Checks: confidence order (left to right, right to left), the logit shift,
 * EOS ending the middle, schedules (threshold, fixed-k), block order,
 * candidate lengths, seeded determinism, cancellation, and edge cases. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "sc_test.h"
#include "sc_test_models.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Progress recorder: the order in which canvas positions were committed. */
typedef struct trace {
  int mask;
  int m;
  int order[1024]; /* order[k] = position committed k-th */
  int n;
  int32_t prev[1024];
  int steps;
  int cancel_after;
  _Atomic int *cancel;
  bool monotone_left, monotone_right;
  int block;           /* when > 0: check block order */
  bool blocks_in_order;
} trace;

static void on_progress(void *user, int cand, const int32_t *canvas, int m, int step,
                        int committed) {
  trace *t = user;
  if (t->n == 0 && t->steps == 0) {
    for (int i = 0; i < m; i++) t->prev[i] = t->mask;
    t->monotone_left = t->monotone_right = t->blocks_in_order = true;
  }
  t->steps++;
  for (int i = 0; i < m; i++) {
    if (t->prev[i] == t->mask && canvas[i] != t->mask) {
      if (t->n < 1024) t->order[t->n++] = i;
      /* A block is entered only when every earlier block is full. */
      if (t->block > 0)
        for (int j = 0; j < (i / t->block) * t->block; j++)
          if (canvas[j] == t->mask) t->blocks_in_order = false;
    }
    t->prev[i] = canvas[i];
  }
  if (t->cancel && t->steps >= t->cancel_after) atomic_store(t->cancel, 1);
}

static bool order_is_monotone(const trace *t, int count, bool left_to_right) {
  for (int k = 1; k < count && k < t->n; k++)
    if (left_to_right ? t->order[k] <= t->order[k - 1] : t->order[k] >= t->order[k - 1])
      return false;
  return true;
}

static void check_successor(const char *name) {
  sc_model *m = load(name);
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 256, &e, NULL) == SC_OK);
  int32_t prefix[] = {5, 7, 50}, suffix[] = {3, 4};
  sc_infill_plan plan = {1, {16}};
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.block_len = 0;
  trace t = {.mask = 62};
  sc_infill_result r;
  sc_error err = {0};
  REQUIRE(sc_engine_infill(e, prefix, 3, suffix, 2, &plan, &p, NULL, on_progress, &t, &r,
                           &err) == SC_OK);
  /* 51..59 then EOS: the middle is nine tokens and the model ended it. */
  EXPECTF(r.n_ids == 9, "%s: %d tokens", name, r.n_ids);
  for (int i = 0; i < r.n_ids && i < 9; i++) EXPECT(r.ids[i] == 51 + i);
  for (int i = 0; i < r.n_ids; i++) EXPECT(r.confidence[i] > 0.99f);
  EXPECT(r.ended);
  /* Only one position is ever confident: one commit per step, left to right;
   * once no mask is left before the EOS the run stops (nothing after it can
   * change the middle), and a Dream-family canvas is not EOS-filled: the
   * six positions after it are never written. */
  EXPECTF(r.steps == 10, "%s: %d steps", name, r.steps);
  EXPECT(order_is_monotone(&t, 10, true));
  EXPECTF(t.n == 10, "%s: %d positions written", name, t.n);
  EXPECT(r.canvas_len == 16 && r.canvas_ids[9] == 60 && r.canvas_ids[10] == 62);
  sc_infill_result_free(&r);

  /* Fixed-k at one token per step gives the same middle and order. */
  sc_infill_algorithm_parse("confidence", &p);
  p.steps = 16;
  memset(&t, 0, sizeof t);
  t.mask = 62;
  REQUIRE(sc_engine_infill(e, prefix, 3, suffix, 2, &plan, &p, NULL, on_progress, &t, &r,
                           &err) == SC_OK);
  EXPECT(r.n_ids == 9);
  EXPECT(order_is_monotone(&t, 10, true));
  sc_infill_result_free(&r);

  /* Blocks of 4 with fixed-k: block b is entered only once b-1 is full. */
  p.block_len = 4;
  p.steps = 0;
  memset(&t, 0, sizeof t);
  t.mask = 62;
  t.block = 4;
  plan.lengths[0] = 8;
  int32_t low[] = {20};
  REQUIRE(sc_engine_infill(e, low, 1, suffix, 2, &plan, &p, NULL, on_progress, &t, &r,
                           &err) == SC_OK);
  EXPECT(t.blocks_in_order);
  EXPECT(r.n_ids == 8 && r.ids[0] == 21 && r.ids[7] == 28);
  EXPECT(r.committed == 8); /* commits add up to the canvas */
  sc_infill_result_free(&r);
  sc_engine_free(e);
  sc_model_free(m);
}

static void check_predecessor(const char *name) {
  sc_model *m = load(name);
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 256, &e, NULL) == SC_OK);
  int32_t prefix[] = {1, 2}, suffix[] = {30, 9};
  sc_infill_plan plan = {1, {8}};
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.block_len = 0;
  trace t = {.mask = 62};
  sc_infill_result r;
  REQUIRE(sc_engine_infill(e, prefix, 2, suffix, 2, &plan, &p, NULL, on_progress, &t, &r,
                           NULL) == SC_OK);
  /* 22..29, committed right to left. */
  EXPECTF(r.n_ids == 8, "%s: %d tokens", name, r.n_ids);
  for (int i = 0; i < r.n_ids && i < 8; i++) EXPECT(r.ids[i] == 22 + i);
  EXPECT(order_is_monotone(&t, 8, false));
  EXPECT(!r.ended);
  EXPECT(r.steps == 8);
  sc_infill_result_free(&r);

  /* Two candidate lengths: 40 runs past token 0 into unconfident guesses,
   * 8 fits exactly; mean log-confidence picks 8. */
  sc_infill_plan two = {2, {40, 8}};
  REQUIRE(sc_engine_infill(e, prefix, 2, suffix, 2, &two, &p, NULL, NULL, NULL, &r, NULL) ==
          SC_OK);
  EXPECT(r.candidate == 1 && r.canvas_len == 8 && r.n_ids == 8);
  sc_infill_result_free(&r);
  sc_engine_free(e);
  sc_model_free(m);
}

static void test_planted(void) {
  check_successor("planted-successor-shifted");
  check_successor("planted-successor-unshifted");
  check_predecessor("planted-predecessor-shifted");
  check_predecessor("planted-predecessor-unshifted");
}

static void test_cancel_and_edges(void) {
  sc_model *m = load("planted-successor-shifted");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 600, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  sc_infill_result r;
  sc_error err = {0};
  int32_t prefix[] = {10}, suffix[] = {1};

  /* Cancelled from the progress callback after 3 steps: stops there. */
  _Atomic int cancel = 0;
  trace t = {.mask = 62, .cancel = &cancel, .cancel_after = 3};
  sc_infill_plan plan = {1, {32}};
  EXPECT(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, &cancel, on_progress, &t, &r,
                          &err) == SC_ERR_CANCELLED);
  EXPECT(t.steps == 3);

  /* Canvas of 1; empty prefix; empty suffix; canvas of 512. */
  plan.lengths[0] = 1;
  EXPECT(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
         SC_OK);
  EXPECT(r.n_ids == 1 && r.ids[0] == 11 && r.steps == 1);
  sc_infill_result_free(&r);
  plan.lengths[0] = 4;
  EXPECT(sc_engine_infill(e, NULL, 0, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
         SC_OK);
  EXPECT(r.committed == 4 || r.ended);
  sc_infill_result_free(&r);
  EXPECT(sc_engine_infill(e, prefix, 1, NULL, 0, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
         SC_OK);
  EXPECT(r.n_ids == 4 && r.ids[3] == 14);
  sc_infill_result_free(&r);
  plan.lengths[0] = 512;
  p.block_len = 64;
  int32_t start[] = {0};
  EXPECT(sc_engine_infill(e, start, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
         SC_OK);
  /* 1..59 then EOS: the long canvas ends where the model says. */
  EXPECTF(r.n_ids == 59 && r.ended, "512: %d ids", r.n_ids);
  sc_infill_result_free(&r);

  /* Bad input is an error, not a crash. */
  int32_t bad[] = {9999};
  plan.lengths[0] = 4;
  EXPECT(sc_engine_infill(e, bad, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, &err) ==
         SC_ERR_INVALID);
  plan.lengths[0] = 0;
  EXPECT(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, &err) ==
         SC_ERR_INVALID);
  plan.lengths[0] = 700;
  EXPECT(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, &err) ==
         SC_ERR_INVALID);
  sc_engine_free(e);
  sc_model_free(m);
}

static void test_seeded_sampling(void) {
  sc_model *m = load("dream-bf16");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 128, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.temperature = 1.0;
  p.top_p = 0.95;
  p.top_k = 50;
  p.block_len = 8;
  int32_t prefix[] = {1, 2, 3}, suffix[] = {4, 5};
  sc_infill_plan plan = {1, {24}};
  sc_infill_result a, b, c;
  p.seed = 7;
  REQUIRE(sc_engine_infill(e, prefix, 3, suffix, 2, &plan, &p, NULL, NULL, NULL, &a, NULL) ==
          SC_OK);
  REQUIRE(sc_engine_infill(e, prefix, 3, suffix, 2, &plan, &p, NULL, NULL, NULL, &b, NULL) ==
          SC_OK);
  p.seed = 8;
  REQUIRE(sc_engine_infill(e, prefix, 3, suffix, 2, &plan, &p, NULL, NULL, NULL, &c, NULL) ==
          SC_OK);
  EXPECT(a.n_ids == b.n_ids && memcmp(a.ids, b.ids, (size_t)a.n_ids * 4) == 0);
  EXPECT(a.n_ids != c.n_ids || memcmp(a.ids, c.ids, (size_t)a.n_ids * 4) != 0);
  /* Threshold decoding commits at least one token per step. */
  EXPECT(a.steps >= 1 && a.steps <= a.committed);
  sc_infill_result_free(&a);
  sc_infill_result_free(&b);
  sc_infill_result_free(&c);
  sc_engine_free(e);
  sc_model_free(m);
}

/* Candidate lengths decoded as one batch give what each gives alone, in
 * fewer forward passes. */
static void test_batch(void) {
  const char *names[] = {"planted-successor-shifted", "planted-predecessor-unshifted",
                         "dream-bf16"};
  for (int k = 0; k < 3; k++) {
    sc_model *m = load(names[k]);
    REQUIRE(m);
    sc_engine *e = NULL;
    REQUIRE(sc_engine_new(m, NULL, 128, &e, NULL) == SC_OK);
    sc_infill_params p;
    sc_infill_params_default(&p);
    p.block_len = 8;
    p.use_cache = false; /* the batch recomputes fully; compare like with like */
    int32_t prefix[] = {3, 40}, suffix[] = {30, 8};
    sc_infill_plan plan = {3, {6, 12, 24}};
    sc_infill_result a, b;
    REQUIRE(sc_engine_infill(e, prefix, 2, suffix, 2, &plan, &p, NULL, NULL, NULL, &a, NULL) ==
            SC_OK);
    p.no_batch = true;
    REQUIRE(sc_engine_infill(e, prefix, 2, suffix, 2, &plan, &p, NULL, NULL, NULL, &b, NULL) ==
            SC_OK);
    EXPECTF(a.candidate == b.candidate && a.n_ids == b.n_ids &&
                memcmp(a.ids, b.ids, (size_t)a.n_ids * 4) == 0,
            "%s: batch %d/%d vs alone %d/%d", names[k], a.candidate, a.n_ids, b.candidate,
            b.n_ids);
    EXPECT(a.committed == b.committed);
    EXPECTF(a.steps < b.steps, "%s: %d batched passes vs %d", names[k], a.steps, b.steps);
    sc_infill_result_free(&a);
    sc_infill_result_free(&b);
    sc_engine_free(e);
    sc_model_free(m);
  }
}

/* Independent prompts decoded together give what each gives alone, in
 * fewer forward passes than one after another. */
static void test_many(void) {
  sc_model *m = load("planted-successor-shifted");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 96, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.block_len = 0;
  int32_t p0[] = {10}, p1[] = {20, 21}, p2[] = {50}, p3[] = {5, 7, 30}, suf[] = {1, 2};
  sc_infill_request reqs[4] = {{p0, 1, suf, 2, 16, 0, false}, {p1, 2, suf, 1, 8, 0, false},
                               {p2, 1, NULL, 0, 16, 0, false}, {p3, 3, suf, 2, 4, 0, false}};
  sc_infill_result many[4];
  int passes = 0;
  REQUIRE(sc_engine_infill_many(e, reqs, 4, &p, NULL, many, &passes, NULL) == SC_OK);
  int alone_steps = 0;
  for (int i = 0; i < 4; i++) {
    sc_infill_plan plan = {1, {reqs[i].canvas}};
    sc_infill_result one;
    REQUIRE(sc_engine_infill(e, reqs[i].prefix, reqs[i].n_prefix, reqs[i].suffix,
                             reqs[i].n_suffix, &plan, &p, NULL, NULL, NULL, &one, NULL) == SC_OK);
    EXPECTF(one.n_ids == many[i].n_ids &&
                memcmp(one.ids, many[i].ids, (size_t)one.n_ids * sizeof *one.ids) == 0,
            "request %d: %d ids batched vs %d alone", i, many[i].n_ids, one.n_ids);
    alone_steps += one.steps;
    sc_infill_result_free(&one);
    sc_infill_result_free(&many[i]);
  }
  EXPECT(many[2].n_ids == 0); /* freed: fields zeroed */
  EXPECTF(passes < alone_steps, "%d batched passes vs %d alone", passes, alone_steps);
  /* A bad request fails the call cleanly. */
  sc_infill_request bad = {p0, 1, suf, 2, 0, 0, false};
  EXPECT(sc_engine_infill_many(e, &bad, 1, &p, NULL, many, NULL, NULL) == SC_ERR_INVALID);
  sc_engine_free(e);
  sc_model_free(m);
}

static void test_eos_penalty(void) {
  sc_model *m = load("planted-successor-shifted");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 64, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  int32_t prefix[] = {57}, suffix[] = {1};
  sc_infill_plan plan = {1, {6}};
  sc_infill_result r;
  /* 58, 59, EOS: the middle ends after two tokens... */
  REQUIRE(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
          SC_OK);
  EXPECT(r.n_ids == 2 && r.ended);
  sc_infill_result_free(&r);
  /* ...unless EOS is penalised out of reach: then the canvas is filled. */
  p.eos_penalty = 1000.0f;
  REQUIRE(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
          SC_OK);
  EXPECT(r.n_ids == 6 && !r.ended && r.ids[0] == 58 && r.ids[1] == 59);
  sc_infill_result_free(&r);
  sc_engine_free(e);
  sc_model_free(m);

  /* The checkpoint's own default, generation_config.json "eos_penalty",
   * applies while the caller leaves eos_penalty at NAN; a value overrides
   * it. A broken file fails the load, naming the file. */
  char gpath[512];
  snprintf(gpath, sizeof gpath, "%s/planted-successor-shifted/generation_config.json",
           sc_test_model_dir);
  static const char *const files[] = {"{\"eos_penalty\": 100, \"temperature\": 0.2}",
                                      "{\"eos_penalty\": \"high\"}",
                                      "{\"eos_penalty\": 1e9}", "{"};
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    FILE *f = fopen(gpath, "w"); /* also replaces one a crashed run left */
    REQUIRE(f);
    fputs(files[k], f);
    fclose(f);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/planted-successor-shifted", sc_test_model_dir);
    sc_error err = {0};
    m = NULL;
    sc_status st = sc_model_load(dir, NULL, &m, &err);
    remove(gpath); /* before any REQUIRE: the other tests load this folder */
    if (k > 0) {
      EXPECTF(st == SC_ERR_FORMAT && strstr(err.msg, "generation_config.json"),
              "file %zu: status %d, '%s'", k, st, err.msg);
      sc_model_free(m);
      continue;
    }
    REQUIRE(st == SC_OK);
    EXPECT(sc_model_get_info(m)->eos_penalty == 100.0f);
    REQUIRE(sc_engine_new(m, NULL, 64, &e, NULL) == SC_OK);
    sc_infill_params_default(&p);
    REQUIRE(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
            SC_OK);
    EXPECT(r.n_ids == 6 && !r.ended);
    sc_infill_result_free(&r);
    p.eos_penalty = 0.0f;
    REQUIRE(sc_engine_infill(e, prefix, 1, suffix, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) ==
            SC_OK);
    EXPECT(r.n_ids == 2 && r.ended);
    sc_infill_result_free(&r);
    sc_engine_free(e);
    sc_model_free(m);
  }
}

/* Several engines share one model, each on its own thread. */
typedef struct worker_arg {
  sc_model *m;
  int32_t start;
  int32_t ids[64];
  int n;
  sc_status st;
} worker_arg;

static void *engine_thread(void *p) {
  worker_arg *a = p;
  sc_engine *e = NULL;
  a->st = sc_engine_new(a->m, NULL, 96, &e, NULL);
  if (a->st != SC_OK) return NULL;
  sc_infill_params prm;
  sc_infill_params_default(&prm);
  prm.block_len = 8;
  int32_t suffix[] = {2};
  sc_infill_plan plan = {1, {40}};
  for (int rep = 0; rep < 5 && a->st == SC_OK; rep++) {
    sc_infill_result r;
    a->st = sc_engine_infill(e, &a->start, 1, suffix, 1, &plan, &prm, NULL, NULL, NULL, &r, NULL);
    if (a->st == SC_OK) {
      a->n = r.n_ids;
      memcpy(a->ids, r.ids, (size_t)r.n_ids * sizeof *r.ids);
      sc_infill_result_free(&r);
    }
  }
  sc_engine_free(e);
  return NULL;
}

static void test_shared_model_threads(void) {
  sc_model *m = load("planted-successor-unshifted");
  REQUIRE(m);
  pthread_t t[3];
  worker_arg a[3] = {{.m = m, .start = 10}, {.m = m, .start = 30}, {.m = m, .start = 50}};
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, engine_thread, &a[i]);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) {
    EXPECT(a[i].st == SC_OK);
    /* start+1 .. 59, then the model's EOS, or the 40-token canvas is full. */
    int want = 59 - a[i].start < 40 ? 59 - a[i].start : 40;
    EXPECTF(a[i].n == want, "thread %d: %d ids", i, a[i].n);
    for (int k = 0; k < a[i].n; k++) EXPECT(a[i].ids[k] == a[i].start + 1 + k);
  }
  sc_model_free(m);
}

int main(void) {
  if (sc_test_make_models("engine-checkpoints", "--only dream-bf16") != 0) return 1;
  { /* test_eos_penalty writes one; a crashed run may have left it */
    char stale[512];
    snprintf(stale, sizeof stale, "%s/planted-successor-shifted/generation_config.json",
             sc_test_model_dir);
    remove(stale);
  }
  sc_log_set_stderr_level(SC_LOG_WARN);
  RUN(test_planted);
  RUN(test_cancel_and_edges);
  RUN(test_seeded_sampling);
  RUN(test_eos_penalty);
  RUN(test_batch);
  RUN(test_many);
  RUN(test_shared_model_threads);
  TEST_MAIN_END();
}

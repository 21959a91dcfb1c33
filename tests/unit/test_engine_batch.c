/* test_engine_batch.c — the stepwise batch API (continuous batching) on a
 * planted checkpoint: requests joining between steps and leaving early get
 * what each gets alone, in fewer passes than one after another; slots are
 * reused; the token budget and bad requests are refused cleanly. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "sc_test.h"
#include "sc_test_models.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct progress_log {
  int calls[SC_INFILL_MAX_BATCH];
  int last_committed[SC_INFILL_MAX_BATCH];
  bool monotone;
} progress_log;

static void on_progress(void *user, int slot, const int32_t *canvas, int m, int step,
                        int committed) {
  progress_log *l = user;
  if (slot < 0 || slot >= SC_INFILL_MAX_BATCH || !canvas || m < 1) {
    l->monotone = false;
    return;
  }
  if (committed < l->last_committed[slot]) l->monotone = false;
  l->last_committed[slot] = committed;
  l->calls[slot]++;
}

static void alone(sc_engine *e, const sc_infill_request *q, const sc_infill_params *p,
                  sc_infill_result *out) {
  sc_infill_plan plan = {1, {q->canvas}};
  sc_infill_params pp = *p;
  pp.use_cache = false;
  pp.seed = q->seed;
  if (sc_engine_infill(e, q->prefix, q->n_prefix, q->suffix, q->n_suffix, &plan, &pp, NULL,
                       NULL, NULL, out, NULL) != SC_OK)
    memset(out, 0, sizeof *out);
}

static void test_join_and_leave(void) {
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
  sc_engine_batch *b = NULL;
  REQUIRE(sc_engine_batch_new(e, 0, &b, NULL) == SC_OK);
  progress_log log;
  memset(&log, 0, sizeof log);
  log.monotone = true;
  int slot[4] = {-1, -1, -1, -1};
  /* Two start; the others join after one step (continuous batching). */
  REQUIRE(sc_engine_batch_add(b, &reqs[0], &p, &slot[0], NULL) == SC_OK);
  REQUIRE(sc_engine_batch_add(b, &reqs[1], &p, &slot[1], NULL) == SC_OK);
  EXPECT(slot[0] != slot[1]);
  int stepped = 0, max_stepped = 0;
  REQUIRE(sc_engine_batch_step(b, on_progress, &log, &stepped, NULL) == SC_OK);
  EXPECT(stepped == 2);
  REQUIRE(sc_engine_batch_add(b, &reqs[2], &p, &slot[2], NULL) == SC_OK);
  REQUIRE(sc_engine_batch_add(b, &reqs[3], &p, &slot[3], NULL) == SC_OK);
  EXPECT(sc_engine_batch_count(b) == 4);
  sc_infill_result got[4];
  memset(got, 0, sizeof got);
  bool taken[4] = {false, false, false, false};
  int guard = 0;
  while (sc_engine_batch_count(b) > 0 && guard++ < 200) {
    REQUIRE(sc_engine_batch_step(b, on_progress, &log, &stepped, NULL) == SC_OK);
    if (stepped > max_stepped) max_stepped = stepped;
    for (int i = 0; i < 4; i++)
      if (!taken[i] && sc_engine_batch_done(b, slot[i])) {
        REQUIRE(sc_engine_batch_take(b, slot[i], &got[i], NULL) == SC_OK);
        taken[i] = true;
      }
  }
  EXPECT(max_stepped >= 3);
  EXPECT(log.monotone);
  int alone_steps = 0;
  for (int i = 0; i < 4; i++) {
    EXPECT(taken[i]);
    EXPECT(log.calls[slot[i]] >= 1);
    sc_infill_result one;
    alone(e, &reqs[i], &p, &one);
    EXPECTF(one.n_ids == got[i].n_ids && one.ids && got[i].ids &&
                memcmp(one.ids, got[i].ids, (size_t)one.n_ids * sizeof *one.ids) == 0,
            "request %d: %d ids batched vs %d alone", i, got[i].n_ids, one.n_ids);
    EXPECT(got[i].steps == one.steps);
    alone_steps += one.steps;
    sc_infill_result_free(&one);
    sc_infill_result_free(&got[i]);
  }
  EXPECTF(sc_engine_batch_passes(b) < alone_steps, "%d passes vs %d alone",
          sc_engine_batch_passes(b), alone_steps);
  /* Empty batch: a step runs no pass. */
  int before = sc_engine_batch_passes(b);
  REQUIRE(sc_engine_batch_step(b, NULL, NULL, &stepped, NULL) == SC_OK);
  EXPECT(stepped == 0 && sc_engine_batch_passes(b) == before);
  sc_engine_batch_free(b);
  sc_engine_free(e);
  sc_model_free(m);
}

static void test_remove_and_limits(void) {
  sc_model *m = load("planted-successor-shifted");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 64, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.block_len = 0;
  int32_t pre[] = {10}, suf[] = {1};
  sc_infill_request q = {pre, 1, suf, 1, 20, 0, false}; /* 24 positions */
  sc_engine_batch *b = NULL;
  REQUIRE(sc_engine_batch_new(e, 50, &b, NULL) == SC_OK);
  int s0 = -1, s1 = -1, s2 = -1;
  REQUIRE(sc_engine_batch_add(b, &q, &p, &s0, NULL) == SC_OK);
  REQUIRE(sc_engine_batch_add(b, &q, &p, &s1, NULL) == SC_OK);
  /* 72 positions pass the 50-token budget: refused, retry later. */
  sc_error err = {0};
  EXPECT(sc_engine_batch_add(b, &q, &p, &s2, &err) == SC_ERR_UNSUPPORTED);
  REQUIRE(sc_engine_batch_step(b, NULL, NULL, NULL, NULL) == SC_OK);
  /* A request removed mid-decode frees its slot; the other goes on. */
  sc_engine_batch_remove(b, s0);
  sc_engine_batch_remove(b, 99); /* ignored */
  EXPECT(sc_engine_batch_count(b) == 1 && sc_engine_batch_live(b) == 1);
  REQUIRE(sc_engine_batch_add(b, &q, &p, &s2, NULL) == SC_OK);
  EXPECT(s2 == s0); /* the freed slot is reused */
  sc_infill_result r;
  EXPECT(sc_engine_batch_take(b, s1, &r, NULL) == SC_ERR_INVALID); /* not finished */
  int guard = 0;
  while (sc_engine_batch_live(b) > 0 && guard++ < 100)
    REQUIRE(sc_engine_batch_step(b, NULL, NULL, NULL, NULL) == SC_OK);
  REQUIRE(sc_engine_batch_take(b, s1, &r, NULL) == SC_OK);
  sc_infill_result one;
  alone(e, &q, &p, &one);
  EXPECT(r.n_ids == one.n_ids && r.n_ids > 0 &&
         memcmp(r.ids, one.ids, (size_t)r.n_ids * sizeof *r.ids) == 0);
  sc_infill_result_free(&r);
  sc_infill_result_free(&one);
  /* Bad requests: empty canvas, too long for the engine, ids out of range. */
  sc_infill_request bad = {pre, 1, suf, 1, 0, 0, false};
  EXPECT(sc_engine_batch_add(b, &bad, &p, &s0, NULL) == SC_ERR_INVALID);
  bad.canvas = 100;
  EXPECT(sc_engine_batch_add(b, &bad, &p, &s0, NULL) == SC_ERR_INVALID);
  int32_t big[] = {1 << 20};
  sc_infill_request oov = {big, 1, NULL, 0, 4, 0, false};
  EXPECT(sc_engine_batch_add(b, &oov, &p, &s0, NULL) == SC_ERR_INVALID);
  /* Freeing a batch with a request still in it frees that request too. */
  REQUIRE(sc_engine_batch_add(b, &q, NULL, &s0, NULL) == SC_OK);
  sc_engine_batch_free(b);
  sc_engine_free(e);
  sc_model_free(m);
}

int main(void) {
  if (sc_test_make_models("engine-batch-checkpoints", "--only dream-bf16") != 0) return 1;
  RUN(test_join_and_leave);
  RUN(test_remove_and_limits);
  TEST_MAIN_END();
}

/* test_session.c — K/V reused across requests: sc_forward_ctx_shift (moved
 * rows turned to their new RoPE positions) and the engine's sessions
 * (sc_engine_infill_session).
 *
 * The shift is checked exactly on a one-layer model, where layer 0's K/V of
 * a token depend only on the token and its position: after inserting or
 * deleting tokens and moving the tail's K/V, a window pass over the changed
 * rows (and one over a moved row) must give the full pass's logits. The
 * sessions are checked on the planted predecessor model, whose canvas is
 * read from the suffix through a RoPE-wired attention head: a reused,
 * moved suffix whose K was not turned gives a wrong middle. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "sc_test.h"
#include "sc_test_models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float max_diff(const float *a, const float *b, size_t n, float *scale) {
  float d = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    d = fmaxf(d, fabsf(a[i] - b[i]));
    s = fmaxf(s, fabsf(b[i]));
  }
  *scale = s;
  return d;
}

/* seq B = A with `ins` tokens inserted (ins > 0) or -ins removed at p. */
static void check_shift(sc_model *m, int ins, const char *weights) {
  const sc_model_info *info = sc_model_get_info(m);
  const int V = info->vocab, n = 40, p = 17;
  int32_t a[64], b[64];
  for (int i = 0; i < n; i++) a[i] = (i * 37 + 11) % (V - 8);
  int nb = 0;
  for (int i = 0; i < p; i++) b[nb++] = a[i];
  for (int i = 0; i < ins; i++) b[nb++] = (i * 13 + 5) % (V - 8);
  for (int i = ins < 0 ? p - ins : p; i < n; i++) b[nb++] = a[i];
  sc_forward_ctx *c = NULL, *ref = NULL;
  sc_error err = {0};
  REQUIRE(sc_forward_ctx_new(m, 64, &c, &err) == SC_OK);
  REQUIRE(sc_forward_ctx_new(m, 64, &ref, &err) == SC_OK);
  float *want = malloc((size_t)64 * V * sizeof *want), *got = malloc((size_t)64 * V * sizeof *got);
  REQUIRE(want && got);
  REQUIRE(sc_forward_ctx_run(ref, b, nb, NULL, nb, want, &err) == SC_OK);
  int32_t none = 0;
  REQUIRE(sc_forward_ctx_run(c, a, n, &none, 0, NULL, &err) == SC_OK);
  /* The tail a[p + max(0, -ins) ..] moves by ins. */
  const int src0 = ins < 0 ? p - ins : p, dst0 = ins < 0 ? p : p + ins;
  REQUIRE(sc_forward_ctx_shift(c, nb, src0, n, dst0, &err) == SC_OK);
  /* The changed rows (at least one), then a moved row near the end. */
  const int w1 = ins > 0 ? p + ins : p + 1;
  REQUIRE(sc_forward_ctx_run_window(c, b, nb, p, w1, NULL, w1 - p, got, &err) == SC_OK);
  float scale, d = max_diff(got, want + (size_t)p * V, (size_t)(w1 - p) * V, &scale);
  EXPECTF(d <= 2e-4f * scale, "%s, %+d tokens: changed rows differ by %g (of %g)", weights, ins,
          d, scale);
  int32_t last = nb - 2;
  REQUIRE(sc_forward_ctx_run_window(c, b, nb, last, last + 1, NULL, 1, got, &err) == SC_OK);
  d = max_diff(got, want + (size_t)last * V, (size_t)V, &scale);
  EXPECTF(d <= 2e-4f * scale, "%s, %+d tokens: a moved row differs by %g (of %g)", weights, ins,
          d, scale);
  /* Bad arguments are refused, not run. */
  EXPECT(sc_forward_ctx_shift(c, nb, 0, nb + 1, 0, &err) == SC_ERR_INVALID);
  EXPECT(sc_forward_ctx_shift(c, 65, 0, 1, 0, &err) == SC_ERR_INVALID);
  free(want);
  free(got);
  sc_forward_ctx_free(c);
  sc_forward_ctx_free(ref);
}

static void test_shift_exact(void) {
  /* qwen3-tied-bf16: one layer, q/k RMSNorm before RoPE. */
  const char *kinds[] = {"f32", "int8"};
  for (int k = 0; k < 2; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3-tied-bf16", sc_test_model_dir);
    sc_model_options o = {0};
    REQUIRE(sc_weights_kind_parse(kinds[k], &o.weights));
    sc_model *m = NULL;
    sc_error err = {0};
    REQUIRE(sc_model_load(path, &o, &m, &err) == SC_OK);
    check_shift(m, 2, kinds[k]);
    check_shift(m, -3, kinds[k]);
    sc_model_free(m);
  }
  sc_forward_ctx *c = NULL;
  sc_model *m = load("qwen3-tied-bf16");
  REQUIRE(m);
  REQUIRE(sc_forward_ctx_new(m, 16, &c, NULL) == SC_OK);
  sc_error err = {0};
  EXPECT(sc_forward_ctx_shift(c, 4, 0, 1, 1, &err) == SC_ERR_INVALID); /* no cache yet */
  sc_forward_ctx_free(c);
  sc_model_free(m);
}

/* The planted model whose middle is read from the suffix, an engine and
 * a session with no margin (the sequences here are short enough for any
 * margin to cover them), plus a one-canvas plan of 8 without blocks. */
typedef struct planted_session {
  sc_model *m;
  sc_engine *e;
  sc_infill_session *s;
  sc_infill_plan plan;
  sc_infill_params p;
} planted_session;

static bool planted_session_new(planted_session *ps) {
  *ps = (planted_session){.plan = {1, {8}}};
  ps->m = load("planted-predecessor-shifted");
  if (!ps->m || sc_engine_new(ps->m, NULL, 256, &ps->e, NULL) != SC_OK) return false;
  sc_session_options so;
  sc_session_options_default(&so);
  so.margin = 0;
  if (sc_infill_session_new(&so, &ps->s, NULL) != SC_OK) return false;
  sc_infill_params_default(&ps->p);
  ps->p.block_len = 0;
  return true;
}

static void planted_session_free(planted_session *ps) {
  sc_infill_session_free(ps->s);
  sc_engine_free(ps->e);
  sc_model_free(ps->m);
}

static void test_sessions(void) {
  planted_session ps;
  REQUIRE(planted_session_new(&ps));
  sc_engine *e = ps.e;
  sc_infill_session *s = ps.s;
  sc_infill_plan plan = ps.plan;
  sc_infill_params p = ps.p;
  /* The middle is read from the suffix: 22..29 before "30 9", whatever the
   * prefix; the prefix grows, shrinks and changes between requests, so the
   * suffix's K/V move by +1, -2, +3. */
  int32_t prefixes[][6] = {{1, 2}, {1, 2, 3}, {1}, {1, 5, 6, 7}, {1, 5, 6, 7}};
  int lens[] = {2, 3, 1, 4, 4};
  int32_t suffix[] = {30, 9};
  for (int r = 0; r < 5; r++) {
    sc_infill_result res, ref;
    sc_error err = {0};
    REQUIRE(sc_engine_infill_session(e, s, prefixes[r], lens[r], suffix, 2, &plan, &p, NULL,
                                     NULL, NULL, &res, &err) == SC_OK);
    EXPECTF(res.n_ids == 8, "request %d: %d tokens", r, res.n_ids);
    for (int i = 0; i < res.n_ids && i < 8; i++)
      EXPECTF(res.ids[i] == 22 + i, "request %d: token %d is %d", r, i, res.ids[i]);
    if (r == 0) EXPECTF(res.kv_reused == 0, "the first request runs in full (%d)", res.kv_reused);
    else EXPECTF(res.kv_reused > 0, "request %d reuses the previous K/V (%d)", r, res.kv_reused);
    /* Without a session: the same middle, nothing reused. */
    REQUIRE(sc_engine_infill(e, prefixes[r], lens[r], suffix, 2, &plan, &p, NULL, NULL, NULL,
                             &ref, &err) == SC_OK);
    EXPECT(ref.kv_reused == 0 && ref.n_ids == res.n_ids);
    sc_infill_result_free(&ref);
    sc_infill_result_free(&res);
    /* The session-less infill took the cache: the next request must see
     * that and... reuse only after one more session request. Run the
     * session again at once to get back into reuse. */
    REQUIRE(sc_engine_infill_session(e, s, prefixes[r], lens[r], suffix, 2, &plan, &p, NULL,
                                     NULL, NULL, &res, &err) == SC_OK);
    EXPECTF(res.kv_reused == 0, "after an infill without the session: a full pass (%d)",
            res.kv_reused);
    sc_infill_result_free(&res);
  }

  /* max_reuses 0: never reuse; max_edit bounds the recomputed span. */
  sc_session_options o;
  sc_session_options_default(&o);
  o.margin = 0;
  o.max_reuses = 0;
  sc_infill_session *never = NULL;
  REQUIRE(sc_infill_session_new(&o, &never, NULL) == SC_OK);
  sc_infill_result res;
  for (int r = 0; r < 2; r++) {
    REQUIRE(sc_engine_infill_session(e, never, prefixes[r], lens[r], suffix, 2, &plan, &p, NULL,
                                     NULL, NULL, &res, NULL) == SC_OK);
    EXPECT(res.kv_reused == 0);
    sc_infill_result_free(&res);
  }
  o.max_reuses = 16;
  o.max_edit = 0;
  sc_infill_session *tight = NULL;
  REQUIRE(sc_infill_session_new(&o, &tight, NULL) == SC_OK);
  REQUIRE(sc_engine_infill_session(e, tight, prefixes[0], 2, suffix, 2, &plan, &p, NULL, NULL,
                                   NULL, &res, NULL) == SC_OK);
  sc_infill_result_free(&res);
  /* One token more before the canvas: one position beyond the block. */
  REQUIRE(sc_engine_infill_session(e, tight, prefixes[3], 4, suffix, 2, &plan, &p, NULL, NULL,
                                   NULL, &res, NULL) == SC_OK);
  EXPECTF(res.kv_reused == 0, "an edit longer than max_edit runs in full (%d)", res.kv_reused);
  EXPECT(res.n_ids == 8 && res.ids[0] == 22);
  sc_infill_result_free(&res);
  o.max_edit = -1;
  sc_infill_session *bad = NULL;
  EXPECT(sc_infill_session_new(&o, &bad, NULL) == SC_ERR_INVALID && !bad);

  sc_infill_session_free(never);
  sc_infill_session_free(tight);
  planted_session_free(&ps);
}

/* Reuses in a row, each request's length different from the last's (the
 * LSP's typing, and a repair between two completions): each moves the K/V
 * the one before left, so the engine must know where that one left them.
 * A move from where a full pass put them instead gives a wrong middle, or
 * a refused move and a full pass. */
static void test_reuses_in_a_row(void) {
  planted_session ps;
  REQUIRE(planted_session_new(&ps));
  int32_t prefixes[][6] = {{1, 2}, {1, 2, 3}, {1, 2, 3, 4}, {1}, {1, 5, 6}, {1, 5}, {1, 5, 6, 7, 8}};
  int lens[] = {2, 3, 4, 1, 3, 2, 5};
  int32_t suffix[] = {30, 9};
  for (int r = 0; r < 7; r++) {
    sc_infill_result res;
    sc_error err = {0};
    REQUIRE(sc_engine_infill_session(ps.e, ps.s, prefixes[r], lens[r], suffix, 2, &ps.plan,
                                     &ps.p, NULL, NULL, NULL, &res, &err) == SC_OK);
    EXPECTF(res.n_ids == 8, "request %d: %d tokens", r, res.n_ids);
    for (int i = 0; i < res.n_ids && i < 8; i++)
      EXPECTF(res.ids[i] == 22 + i, "request %d: token %d is %d", r, i, res.ids[i]);
    if (r > 0) EXPECTF(res.kv_reused > 0, "request %d reuses (%d)", r, res.kv_reused);
    sc_infill_result_free(&res);
  }
  planted_session_free(&ps);
}

/* The same request twice: the reused K/V are exactly what a full pass
 * computes (the previous request's first pass saw the same tokens and an
 * all-mask canvas), so the result is the full recompute's, bit for bit. */
static void test_same_request(void) {
  sc_model *m = load("dream-bf16");
  REQUIRE(m);
  sc_engine *e = NULL, *ref = NULL;
  REQUIRE(sc_engine_new(m, NULL, 256, &e, NULL) == SC_OK);
  REQUIRE(sc_engine_new(m, NULL, 256, &ref, NULL) == SC_OK);
  sc_infill_session *s = NULL;
  REQUIRE(sc_infill_session_new(NULL, &s, NULL) == SC_OK);
  int32_t pre[40], suf[20];
  for (int i = 0; i < 40; i++) pre[i] = (i * 7 + 3) % 300;
  for (int i = 0; i < 20; i++) suf[i] = (i * 11 + 5) % 300;
  sc_infill_plan plan = {1, {16}};
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.eos_penalty = 50; /* a random model: keep the canvas in play */
  sc_infill_result a, b, full;
  REQUIRE(sc_engine_infill_session(e, s, pre, 40, suf, 20, &plan, &p, NULL, NULL, NULL, &a,
                                   NULL) == SC_OK);
  REQUIRE(sc_engine_infill_session(e, s, pre, 40, suf, 20, &plan, &p, NULL, NULL, NULL, &b,
                                   NULL) == SC_OK);
  REQUIRE(sc_engine_infill(ref, pre, 40, suf, 20, &plan, &p, NULL, NULL, NULL, &full, NULL) ==
          SC_OK);
  EXPECTF(b.kv_reused > 0, "the repeat reuses (%d)", b.kv_reused);
  EXPECT(a.n_ids == full.n_ids && b.n_ids == full.n_ids);
  EXPECT(a.n_ids > 0 && memcmp(a.ids, full.ids, (size_t)a.n_ids * sizeof *a.ids) == 0);
  EXPECT(b.n_ids > 0 && memcmp(b.ids, full.ids, (size_t)b.n_ids * sizeof *b.ids) == 0);
  sc_infill_result_free(&a);
  sc_infill_result_free(&b);
  sc_infill_result_free(&full);
  sc_infill_session_free(s);
  sc_engine_free(e);
  sc_engine_free(ref);
  sc_model_free(m);
}

int main(void) {
  if (sc_test_make_models("session-models", "--only qwen3-tied-bf16 --only dream-bf16") != 0) return 1;
  RUN(test_shift_exact);
  RUN(test_sessions);
  RUN(test_reuses_in_a_row);
  RUN(test_same_request);
  fprintf(stderr, "%d checks, %d failures\n", sc_test_checks, sc_test_failures);
  return sc_test_failures != 0;
}

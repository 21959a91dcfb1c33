/* test_pick.c — the picking rules of model.h (model/pick.c, the reference
 * the GPU's lm_head epilogue is held to): greedy with banned ids and the
 * EOS penalty, the statistics against formulas written out here, the
 * keyed Gumbel-max sampler against softmax(z) over many keys, and
 * sc_forward_ctx_pick (full, window and packed passes) against the logits
 * path. Then the engine: a sampled request gives in a batch what it gives
 * alone (the noise is keyed by position, not drawn in pass order). */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "model.h"
#include "sc_test.h"
#include "sc_test_models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* softmax(z) of the rules, written out independently of pick.c. */
static void expected_probs(const float *l, int V, float T, float pen, int eos, int pad,
                           const uint8_t *banned, double *p) {
  double inv_t = T > 0 ? 1.0 / T : 1.0, m = -INFINITY;
  for (int t = 0; t < V; t++) {
    p[t] = banned && banned[t] ? -INFINITY
                               : l[t] * inv_t - ((t == eos || t == pad) ? pen * inv_t : 0.0);
    if (p[t] > m) m = p[t];
  }
  double s = 0;
  for (int t = 0; t < V; t++) s += p[t] == -INFINITY ? 0 : exp(p[t] - m);
  for (int t = 0; t < V; t++) p[t] = p[t] == -INFINITY ? 0 : exp(p[t] - m) / s;
}

static void test_greedy_and_stats(void) {
  const int V = 6;
  /* id 1 is the largest but banned; eos 4 is next but penalised; 0 and 5
   * then tie: the lower index wins. */
  const float l[6] = {2.0f, 9.0f, -1.0f, 0.5f, 2.9f, 2.0f};
  const uint8_t banned[6] = {0, 1, 0, 0, 0, 0};
  sc_pick_row_params rp = {0.0f, 1.0f, 99};
  sc_pick_params pp = {&rp, banned, 4, -1, NULL, 0};
  double z[6], p[6];
  sc_row_pick r;
  sc_pick_rows(l, 1, V, &pp, z, &r);
  EXPECTF(r.token == 0, "greedy picked %d", r.token);
  expected_probs(l, V, 0.0f, 1.0f, 4, -1, banned, p);
  double h = 0;
  for (int t = 0; t < V; t++) h -= p[t] > 0 ? p[t] * log(p[t]) : 0;
  EXPECTF(fabs(r.p - p[0]) < 1e-6 && fabs(r.max_prob - p[0]) < 1e-6, "p %g vs %g", r.p, p[0]);
  EXPECTF(fabs(r.margin) < 1e-7, "a tie has margin 0, got %g", r.margin);
  EXPECTF(fabs(r.entropy - h) < 1e-5, "entropy %g vs %g", r.entropy, h);
  /* Without the penalty the eos id wins, with its probability and margin. */
  rp.eos_penalty = 0.0f;
  sc_pick_rows(l, 1, V, &pp, z, &r);
  expected_probs(l, V, 0.0f, 0.0f, 4, -1, banned, p);
  EXPECT(r.token == 4);
  EXPECTF(fabs(r.margin - (p[4] - p[0])) < 1e-6, "margin %g vs %g", r.margin, p[4] - p[0]);
  /* Without the ban, the banned id. A pad id equal to eos is penalised once. */
  pp.banned = NULL;
  pp.pad_id = 4;
  rp.eos_penalty = 0.5f;
  sc_pick_rows(l, 1, V, &pp, z, &r);
  expected_probs(l, V, 0.0f, 0.5f, 4, 4, NULL, p);
  EXPECT(r.token == 1);
  EXPECTF(fabs(r.max_prob - p[1]) < 1e-6, "p %g vs %g", r.max_prob, p[1]);
}

static void test_sampling_distribution(void) {
  const int V = 5, N = 40000;
  const float l[5] = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  const uint8_t banned[5] = {0, 0, 1, 0, 0};
  const float T = 0.7f, pen = 0.4f;
  double want[5], z[5];
  expected_probs(l, V, T, pen, 1, -1, banned, want);
  int count[5] = {0};
  bool p_ok = true;
  for (int i = 0; i < N; i++) {
    sc_pick_row_params rp = {T, pen, 0x5eed0000ULL + (uint64_t)i * 7919u};
    sc_pick_params pp = {&rp, banned, 1, -1, NULL, 0};
    sc_row_pick r;
    sc_pick_rows(l, 1, V, &pp, z, &r);
    if (r.token < 0 || r.token >= V) {
      p_ok = false;
      continue;
    }
    count[r.token]++;
    if (fabs(r.p - want[r.token]) > 1e-5) p_ok = false;
  }
  EXPECT(p_ok);
  EXPECT(count[2] == 0); /* banned */
  for (int t = 0; t < V; t++) {
    double f = (double)count[t] / N, sd = sqrt(want[t] * (1 - want[t]) / N);
    EXPECTF(fabs(f - want[t]) <= 4 * sd + 1e-9, "token %d: %.4f sampled vs %.4f", t, f, want[t]);
  }
  /* Same key, same token; the uniform stays inside (0, 1). */
  sc_pick_row_params rp = {T, pen, 42};
  sc_pick_params pp = {&rp, banned, 1, -1, NULL, 0};
  sc_row_pick a, b;
  sc_pick_rows(l, 1, V, &pp, z, &a);
  sc_pick_rows(l, 1, V, &pp, z, &b);
  EXPECT(a.token == b.token);
  float umin = 1, umax = 0;
  for (uint64_t t = 0; t < 100000; t++) {
    float u = sc_pick_uniform(t * 0x9e3779b97f4a7c15ULL, t);
    if (u < umin) umin = u;
    if (u > umax) umax = u;
  }
  EXPECT(umin > 0.0f && umax < 1.0f && umin < 1e-3f && umax > 1 - 1e-3f);
}

/* The noise's edges: the largest 64-bit input stays below 1 (with 24
 * bits it rounded to exactly 1, whose Gumbel noise is +inf), the smallest
 * above 0. Degenerate rows give a zero record, not NaN. */
static void test_edges(void) {
  EXPECTF(sc_kernels_u01(~0ULL) < 1.0f, "u01(max) = %.9g", sc_kernels_u01(~0ULL));
  EXPECT(sc_kernels_u01(0) > 0.0f);
  EXPECT(isfinite(-log(-log((double)sc_kernels_u01(~0ULL)))));
  const float l[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const uint8_t all[4] = {1, 1, 1, 1};
  double z[4];
  sc_row_pick r;
  sc_pick_row_params rp = {0.9f, 0.0f, 3};
  sc_pick_params pp = {&rp, all, -1, -1, NULL, 0};
  sc_pick_rows(l, 1, 4, &pp, z, &r);
  EXPECT(r.token == 0 && r.p == 0 && r.max_prob == 0 && r.entropy == 0);
  EXPECT(!r.nonfinite);
  const float nan_row[4] = {NAN, NAN, NAN, NAN};
  pp.banned = NULL;
  sc_pick_rows(nan_row, 1, 4, &pp, z, &r);
  EXPECT(r.token == 0 && r.p == 0 && isfinite(r.entropy) && r.nonfinite);
}

/* Broken weights show as NaN or infinite logits: each such row is flagged
 * (kernels/ops.cu's k_lm_stats flags the same rows; tests/gpu checks it),
 * banned ids included, greedy or sampled; a finite row is not. */
static void test_nonfinite(void) {
  const float rows[][5] = {{1, 2, 3, 4, 5},
                           {1, NAN, 3, 4, 5},
                           {1, 2, INFINITY, 4, 5},
                           {1, 2, 3, 4, -INFINITY},
                           {NAN, 2, 3, 4, 5}}; /* id 0 banned below */
  const bool want[] = {false, true, true, true, true};
  const uint8_t banned[5] = {1, 0, 0, 0, 0};
  double z[5];
  for (int temp = 0; temp < 2; temp++)
    for (int i = 0; i < 5; i++) {
      sc_pick_row_params rp = {temp ? 0.8f : 0.0f, 0.0f, 11};
      sc_pick_params pp = {&rp, banned, -1, -1, NULL, 0};
      sc_row_pick r;
      sc_pick_rows(rows[i], 1, 5, &pp, z, &r);
      EXPECTF(r.nonfinite == want[i], "row %d (T %d): nonfinite %d", i, temp, r.nonfinite);
      if (want[i]) EXPECT(r.token == 0 && r.p == 0 && r.max_prob == 0);
      else EXPECT(r.token == 4 || temp);
    }
}

static bool same_picks(const sc_row_pick *a, const sc_row_pick *b, int n) {
  for (int k = 0; k < n; k++)
    if (a[k].token != b[k].token || a[k].p != b[k].p || a[k].margin != b[k].margin ||
        a[k].entropy != b[k].entropy)
      return false;
  return true;
}

/* The backend path against forward + sc_pick_rows, for the three passes. */
static void test_ctx_pick(void) {
  sc_model *m = load("dream-bf16");
  REQUIRE(m);
  const sc_model_info *info = sc_model_get_info(m);
  const int V = info->vocab, n = 12;
  sc_forward_ctx *c = NULL;
  REQUIRE(sc_forward_ctx_new(m, 32, &c, NULL) == SC_OK);
  EXPECT(!sc_forward_ctx_picks_on_device(c));
  int32_t ids[24];
  for (int i = 0; i < 24; i++) ids[i] = (i * 37 + 5) % (V - 4);
  int32_t rows[3] = {2, 7, 9};
  sc_pick_row_params rp[6];
  for (int k = 0; k < 6; k++) rp[k] = (sc_pick_row_params){k % 2 ? 0.9f : 0.0f, 1.5f, 1000u + k};
  uint8_t *banned = calloc((size_t)V, 1);
  REQUIRE(banned);
  banned[info->mask_id] = 1;
  sc_pick_params pp = {rp, banned, info->eos_id, info->pad_id, NULL, 0};
  float *logits = malloc((size_t)6 * V * sizeof *logits);
  double *z = malloc((size_t)V * sizeof *z);
  REQUIRE(logits && z);
  sc_row_pick got[6], want[6];
  sc_error err = {0};

  /* A window before any full pass is refused. */
  EXPECT(sc_forward_ctx_pick(c, ids, n, 6, 10, NULL, 0, rows + 1, 2, &pp, logits, false, got, &err) ==
         SC_ERR_INVALID);
  /* Full. */
  REQUIRE(sc_forward_ctx_pick(c, ids, n, 0, n, NULL, 0, rows, 3, &pp, logits, false, got, &err) ==
          SC_OK);
  REQUIRE(sc_forward_ctx_run(c, ids, n, rows, 3, logits, NULL) == SC_OK);
  sc_pick_rows(logits, 3, V, &pp, z, want);
  EXPECT(same_picks(got, want, 3));
  /* Window over the cache of that full pass, after an edit inside it. */
  const int32_t orig = ids[8];
  ids[8] = 3;
  REQUIRE(sc_forward_ctx_pick(c, ids, n, 6, 10, NULL, 0, rows + 1, 2, &pp, logits, false, got, &err) ==
          SC_OK);
  ids[8] = orig; /* the same cache again, then the same window by the logits path */
  int32_t none = 0;
  REQUIRE(sc_forward_ctx_run(c, ids, n, &none, 0, NULL, NULL) == SC_OK);
  ids[8] = 3;
  REQUIRE(sc_forward_ctx_run_window(c, ids, n, 6, 10, rows + 1, 2, logits, NULL) == SC_OK);
  sc_pick_rows(logits, 2, V, &pp, z, want);
  EXPECT(same_picks(got, want, 2));
  /* Packed: two sequences, rows in both. */
  int32_t offsets[3] = {0, 10, 22};
  int32_t prow[4] = {1, 8, 12, 20};
  REQUIRE(sc_forward_ctx_pick(c, ids, 22, 0, 22, offsets, 2, prow, 4, &pp, logits, false, got, &err) ==
          SC_OK);
  REQUIRE(sc_forward_ctx_run_packed(c, ids, offsets, 2, prow, 4, logits, NULL) == SC_OK);
  sc_pick_rows(logits, 4, V, &pp, z, want);
  EXPECT(same_picks(got, want, 4));
  /* Bad packing is refused, not read past. */
  int32_t bad[3] = {0, 10, 30};
  EXPECT(sc_forward_ctx_pick(c, ids, 22, 0, 22, bad, 2, prow, 4, &pp, logits, false, got, &err) ==
         SC_ERR_INVALID);
  free(banned);
  free(logits);
  free(z);
  sc_forward_ctx_free(c);
  sc_model_free(m);
}

static bool same_result(const sc_infill_result *a, const sc_infill_result *b) {
  return a->n_ids == b->n_ids && a->ids && b->ids &&
         memcmp(a->ids, b->ids, (size_t)a->n_ids * sizeof *a->ids) == 0;
}

/* Sampled requests, one of them top-k: batched == alone; seeds matter. */
static void test_engine_keyed_noise(void) {
  sc_model *m = load("dream-bf16");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 96, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.schedule = SC_SCHEDULE_FIXED_K;
  p.steps = 8;
  p.block_len = 0;
  p.use_cache = false;
  p.temperature = 1.0;
  int32_t p0[] = {10, 11, 12}, p1[] = {20, 21}, p2[] = {30, 31, 32, 33}, suf[] = {1, 2};
  /* The third request samples from its top 40 (picked on the host, from
   * logits the shared pass brings back); the others from everything. */
  sc_infill_request reqs[3] = {{p0, 3, suf, 2, 12, 7, false}, {p1, 2, suf, 1, 8, 9, false},
                               {p2, 4, suf, 2, 10, 11, false}};
  sc_infill_params ps[3] = {p, p, p};
  ps[2].top_k = 40;
  sc_infill_result alone[3], batched[3];
  memset(alone, 0, sizeof alone);
  memset(batched, 0, sizeof batched);
  for (int i = 0; i < 3; i++) {
    sc_infill_plan plan = {1, {reqs[i].canvas}};
    sc_infill_params q = ps[i];
    q.seed = reqs[i].seed;
    REQUIRE(sc_engine_infill(e, reqs[i].prefix, reqs[i].n_prefix, reqs[i].suffix,
                             reqs[i].n_suffix, &plan, &q, NULL, NULL, NULL, &alone[i],
                             NULL) == SC_OK);
  }
  sc_engine_batch *b = NULL;
  REQUIRE(sc_engine_batch_new(e, 0, &b, NULL) == SC_OK);
  int slot[3];
  for (int i = 0; i < 3; i++)
    REQUIRE(sc_engine_batch_add(b, &reqs[i], &ps[i], &slot[i], NULL) == SC_OK);
  for (int guard = 0; sc_engine_batch_live(b) > 0 && guard < 100; guard++)
    REQUIRE(sc_engine_batch_step(b, NULL, NULL, NULL, NULL) == SC_OK);
  for (int i = 0; i < 3; i++) {
    REQUIRE(sc_engine_batch_take(b, slot[i], &batched[i], NULL) == SC_OK);
    EXPECTF(same_result(&alone[i], &batched[i]), "request %d: sampled batch != alone", i);
  }
  sc_engine_batch_free(b);
  /* Another seed gives another draw on this flat random model. */
  sc_infill_plan plan = {1, {12}};
  sc_infill_params q = p;
  q.seed = 8;
  sc_infill_result other;
  REQUIRE(sc_engine_infill(e, p0, 3, suf, 2, &plan, &q, NULL, NULL, NULL, &other, NULL) ==
          SC_OK);
  EXPECT(!same_result(&other, &alone[0]));
  sc_infill_result_free(&other);
  for (int i = 0; i < 3; i++) {
    sc_infill_result_free(&alone[i]);
    sc_infill_result_free(&batched[i]);
  }
  sc_engine_free(e);
  sc_model_free(m);
}

int main(void) {
  if (sc_test_make_models("pick-checkpoints", "--only dream-bf16") != 0) return 1;
  RUN(test_greedy_and_stats);
  RUN(test_sampling_distribution);
  RUN(test_edges);
  RUN(test_nonfinite);
  RUN(test_ctx_pick);
  RUN(test_engine_keyed_noise);
  TEST_MAIN_END();
}

/* test_forward.c — the forward-context API on a tiny f32 checkpoint: row
 * subsets, determinism, contexts shared across threads, bidirectionality
 * and argument errors. Numerical agreement with an independent reference
 * is tests/model/test_logits.py. */
#include "test_checkpoint_fixture.h"

#include <pthread.h>

#include "model.h"
#include "sc_test.h"

#define V 32
static char g_dir[256];
static sc_model *g_model;

static double max_rel(const float *a, const float *b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0 ? d / m : d;
}

static const int32_t ids[] = {3, 17, 31, 31, 31, 8, 0, 30};
#define N ((int)(sizeof ids / sizeof ids[0]))

static void test_rows_and_determinism(void) {
  sc_forward_ctx *c = NULL;
  sc_error err = {0};
  REQUIRE(sc_forward_ctx_new(g_model, 16, &c, &err) == SC_OK);
  EXPECT(sc_forward_ctx_bytes(c) > 0);
  float all[N * V], again[N * V], sub[3 * V];
  EXPECTF(sc_forward_ctx_run(c, ids, N, NULL, N, all, &err) == SC_OK, "%s", err.msg);
  bool finite = true, nonzero = false;
  for (int i = 0; i < N * V; i++) {
    finite = finite && isfinite(all[i]);
    nonzero = nonzero || all[i] != 0.0f;
  }
  EXPECT(finite && nonzero);
  EXPECT(sc_forward_ctx_run(c, ids, N, NULL, N, again, &err) == SC_OK);
  EXPECT(memcmp(all, again, sizeof all) == 0);
  const int32_t rows[3] = {4, 0, 4};
  EXPECT(sc_forward_ctx_run(c, ids, N, rows, 3, sub, &err) == SC_OK);
  for (int j = 0; j < 3; j++)
    EXPECTF(max_rel(sub + j * V, all + rows[j] * V, V) < 1e-6, "row %d", rows[j]);
  EXPECT(sc_forward_ctx_run(c, ids, N, rows, 0, NULL, &err) == SC_OK); /* K/V only */
  sc_forward_ctx_free(c);
}

static void test_bidirectional(void) {
  /* Changing the last token must change row 0: no causal mask. */
  sc_forward_ctx *c = NULL;
  sc_error err = {0};
  REQUIRE(sc_forward_ctx_new(g_model, 0, &c, &err) == SC_OK);
  int32_t other[N];
  memcpy(other, ids, sizeof other);
  other[N - 1] = 5;
  float a[V], b[V];
  const int32_t row0 = 0;
  EXPECT(sc_forward_ctx_run(c, ids, N, &row0, 1, a, &err) == SC_OK);
  EXPECT(sc_forward_ctx_run(c, other, N, &row0, 1, b, &err) == SC_OK);
  EXPECT(max_rel(a, b, V) > 1e-4);
  sc_forward_ctx_free(c);
}

typedef struct job {
  sc_forward_ctx *ctx;
  float out[N * V];
  sc_status st;
} job;

static void *run_job(void *p) {
  job *j = p;
  sc_error err = {0};
  for (int k = 0; k < 20 && j->st == SC_OK; k++)
    j->st = sc_forward_ctx_run(j->ctx, ids, N, NULL, N, j->out, &err);
  return NULL;
}

static void test_threads(void) {
  job jobs[3] = {0};
  float want[N * V];
  sc_error err = {0};
  for (int i = 0; i < 3; i++) REQUIRE(sc_forward_ctx_new(g_model, 8, &jobs[i].ctx, &err) == SC_OK);
  REQUIRE(sc_forward_ctx_run(jobs[0].ctx, ids, N, NULL, N, want, &err) == SC_OK);
  pthread_t th[3];
  for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, run_job, &jobs[i]);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++) {
    EXPECT(jobs[i].st == SC_OK);
    EXPECTF(max_rel(jobs[i].out, want, N * V) < 1e-6, "context %d", i);
    sc_forward_ctx_free(jobs[i].ctx);
  }
}

static void test_errors(void) {
  sc_forward_ctx *c = NULL;
  sc_error err = {0};
  REQUIRE(sc_forward_ctx_new(g_model, 4, &c, &err) == SC_OK);
  float out[N * V];
  EXPECT(sc_forward_ctx_run(c, ids, N, NULL, N, out, &err) == SC_ERR_INVALID); /* > max_seq */
  const int32_t bad_id[2] = {1, V};
  EXPECT(sc_forward_ctx_run(c, bad_id, 2, NULL, 2, out, &err) == SC_ERR_INVALID);
  EXPECTF(strstr(err.msg, "vocabulary"), "%s", err.msg);
  const int32_t neg[1] = {-1};
  EXPECT(sc_forward_ctx_run(c, neg, 1, NULL, 1, out, &err) == SC_ERR_INVALID);
  const int32_t row = 3;
  EXPECT(sc_forward_ctx_run(c, ids, 2, &row, 1, out, &err) == SC_ERR_INVALID);
  EXPECT(sc_forward_ctx_run(c, ids, 2, NULL, 1, out, &err) == SC_ERR_INVALID);
  EXPECT(sc_forward_ctx_run(c, ids, 0, NULL, 0, out, &err) == SC_ERR_INVALID);
  EXPECT(sc_forward_ctx_run(c, ids, 2, NULL, 2, NULL, &err) == SC_ERR_INVALID);
  sc_forward_ctx_free(c);
  EXPECT(sc_forward_ctx_new(g_model, -1, &c, &err) == SC_ERR_INVALID && c == NULL);
  sc_forward_ctx_free(NULL);
  sc_model_free(NULL);
}

int main(void) {
  if (fx_mkdtemp(g_dir, sizeof g_dir) != 0 || fx_write_valid(g_dir) != 0) {
    fprintf(stderr, "cannot write the fixture\n");
    return 1;
  }
  sc_error err = {0};
  sc_model_options o = {.max_seq = 16};
  if (sc_model_load(g_dir, &o, &g_model, &err) != SC_OK) {
    fprintf(stderr, "load: %s\n", err.msg);
    fx_cleanup(g_dir);
    return 1;
  }
  RUN(test_rows_and_determinism);
  RUN(test_bidirectional);
  RUN(test_threads);
  RUN(test_errors);
  sc_model_free(g_model);
  fx_cleanup(g_dir);
  TEST_MAIN_END();
}

/* test_graph_keys.c — the passes the real engine issues during an infill,
 * keyed as the CUDA backend keys them (kernels/plan.c) and run through its
 * graph cache's policy, on the CPU: a recording backend stands in for the
 * device (it forwards to the CPU backend and picks on the "device" side, as
 * model/cuda.c does), under a synthetic tiny model.
 *
 * What a GPU would see: an infill of two blocks has two shape classes (the
 * full pass at each block's start, the window steps) whatever the window's
 * place; each is captured once, on its second use, never again inside the
 * infill; a second infill of the same shape captures nothing and replays
 * every pass; the lm_head's rows never change a window's class. */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "model.h"
#include "model_impl.h"
#include "sc_test.h"

#include <stdlib.h>
#include <string.h>

/* The passes seen, with what the device would be asked. */
typedef struct pass_rec {
  int n, w0, w1, n_rows, n_segs;
  bool sample, banned;
} pass_rec;

static pass_rec g_passes[4096];
static int g_n;

typedef struct rec_state {
  void *cpu;
  const sc_model *m;
  float *logits; /* [max_seq][vocab] */
  double *z;
} rec_state;

static void record(int n, int w0, int w1, int n_rows, int n_segs, bool sample, bool banned) {
  if (g_n < (int)(sizeof g_passes / sizeof g_passes[0]))
    g_passes[g_n++] = (pass_rec){n, w0, w1, n_rows, n_segs, sample, banned};
}

static uint64_t rec_bytes(const sc_model *m, int max_seq) {
  return sc_cpu_backend.ctx_bytes(m, max_seq);
}

static sc_status rec_init(const sc_model *m, int max_seq, void **out, sc_error *err) {
  rec_state *s = calloc(1, sizeof *s);
  SC_CHECK(s, err, SC_ERR_NOMEM, "out of memory");
  s->m = m;
  s->logits = malloc((size_t)max_seq * (size_t)m->info.vocab * sizeof *s->logits);
  s->z = malloc((size_t)m->info.vocab * sizeof *s->z);
  sc_status st = s->logits && s->z ? sc_cpu_backend.ctx_init(m, max_seq, &s->cpu, err)
                                   : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (st != SC_OK) {
    free(s->logits);
    free(s->z);
    free(s);
    return st;
  }
  *out = s;
  return SC_OK;
}

static void rec_free(void *p) {
  rec_state *s = p;
  sc_cpu_backend.ctx_free(s->cpu);
  free(s->logits);
  free(s->z);
  free(s);
}

static sc_status rec_forward(void *p, const int32_t *ids, int n, int w0, int w1,
                             const int32_t *rows, int n_rows, float *logits, sc_error *err) {
  rec_state *s = p;
  record(n, w0, w1, n_rows, 0, false, false);
  return sc_cpu_backend.forward(s->cpu, ids, n, w0, w1, rows, n_rows, logits, err);
}

static sc_status rec_packed(void *p, const int32_t *ids, const int32_t *offsets, int n_seqs,
                            const int32_t *rows, int n_rows, float *logits, sc_error *err) {
  rec_state *s = p;
  record(offsets[n_seqs], 0, offsets[n_seqs], n_rows, n_seqs, false, false);
  return sc_cpu_backend.forward_packed(s->cpu, ids, offsets, n_seqs, rows, n_rows, logits, err);
}

/* As model/cuda.c: the pass and its picks in one call. */
static sc_status rec_pick(void *p, const int32_t *ids, int n, int w0, int w1,
                          const int32_t *offsets, int n_seqs, const int32_t *rows, int n_rows,
                          const sc_pick_params *pick, float *logits, sc_row_pick *out,
                          sc_error *err) {
  rec_state *s = p;
  record(n, w0, w1, n_rows, offsets ? n_seqs : 0, true, pick->banned != NULL);
  float *lg = logits ? logits : s->logits;
  if (offsets)
    SC_TRY(sc_cpu_backend.forward_packed(s->cpu, ids, offsets, n_seqs, rows, n_rows, lg, err));
  else
    SC_TRY(sc_cpu_backend.forward(s->cpu, ids, n, w0, w1, rows, n_rows, lg, err));
  sc_pick_rows(lg, n_rows, s->m->info.vocab, pick, s->z, out);
  return SC_OK;
}

static bool rec_on_device(const void *p) {
  (void)p;
  return true;
}

static const sc_backend_ops rec_backend = {
    .name = "recording",
    .ctx_bytes = rec_bytes,
    .ctx_init = rec_init,
    .ctx_free = rec_free,
    .forward = rec_forward,
    .forward_packed = rec_packed,
    .pick = rec_pick,
    .picks_on_device = rec_on_device,
};

/* The key a GPU would give pass k (the tiny shape: head size 16 -> the
 * 64-vector instance, group 2 -> tiles of 32 rows; an H200's 132 SMs). */
static uint64_t key_of(const pass_rec *r, int max_seq, const sc_model_info *info) {
  sc_kernels_step_in in = {0};
  in.n = r->n, in.w0 = r->w0, in.w1 = r->w1, in.n_rows = r->n_rows;
  in.tq = 64 / (info->n_heads / info->n_kv_heads);
  in.n_kv_heads = info->n_kv_heads, in.sm_count = 132, in.part_blocks = 1024;
  in.head_cap = max_seq < 128 ? max_seq : 128;
  in.head_in_graph = true, in.sample = r->sample, in.banned = r->banned;
  sc_kernels_step_plan pl;
  if (!sc_kernels_plan_step(&in, NULL, &pl)) return 0;
  return pl.key;
}

typedef struct tally {
  int passes, classes, captures, replays, eager;
} tally;

/* Passes [from, g_n) through the cache; classes counts distinct keys. */
static tally run_cache(sc_kernels_graph_cache *g, int from, int max_seq,
                       const sc_model_info *info) {
  tally t = {0};
  uint64_t seen[64];
  int ns = 0;
  for (int k = from; k < g_n; k++) {
    const uint64_t key = key_of(&g_passes[k], max_seq, info);
    bool known = false;
    for (int i = 0; i < ns; i++) known |= seen[i] == key;
    if (!known && ns < 64) seen[ns++] = key;
    int slot;
    switch (sc_kernels_graph_cache_decide(g, key, &slot)) {
    case SC_KERNELS_GRAPH_CAPTURE: t.captures++; break;
    case SC_KERNELS_GRAPH_REPLAY: t.replays++; break;
    case SC_KERNELS_GRAPH_EAGER: t.eager++; break;
    }
    t.passes++;
  }
  t.classes = ns;
  return t;
}

static void test_infill_classes(void) {
  sc_model *m = NULL;
  sc_error err = {0};
  REQUIRE(sc_model_new_synthetic("tiny", NULL, 7, &m, &err) == SC_OK);
  m->backend = &rec_backend; /* before any context is made */
  const sc_model_info *info = sc_model_get_info(m);
  const int C = 96, canvas = 64, max_seq = C + canvas;
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, max_seq, &e, &err) == SC_OK);
  int32_t ids[96];
  for (int i = 0; i < C; i++) ids[i] = (i * 37 + 11) % (info->vocab - 1);
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.schedule = SC_SCHEDULE_FIXED_K;
  p.block_len = 32;
  p.steps = canvas / 4; /* 4 tokens a step: 8 steps a block */
  p.eos_penalty = 0;
  sc_infill_plan plan = {1, {canvas}};
  sc_kernels_graph_cache g;
  sc_kernels_graph_cache_init(&g);

  sc_infill_result r;
  g_n = 0;
  REQUIRE(sc_engine_infill(e, ids, 72, ids + 72, 24, &plan, &p, NULL, NULL, NULL, &r, &err) ==
          SC_OK);
  EXPECTF(r.committed == canvas && r.steps == 16, "committed %d in %d steps", r.committed,
          r.steps);
  sc_infill_result_free(&r);
  /* The window moved (block 0, then block 1), the rows asked shrank. */
  int full = 0, win = 0, w0s[2] = {-1, -1};
  for (int k = 0; k < g_n; k++) {
    const pass_rec *q = &g_passes[k];
    if (q->w0 == 0 && q->w1 == q->n) full++;
    else {
      win++;
      if (w0s[0] < 0) w0s[0] = q->w0;
      else if (q->w0 != w0s[0]) w0s[1] = q->w0;
    }
    EXPECT(q->sample && q->banned);
  }
  EXPECTF(full == 2 && win == 14 && w0s[0] == 72 && w0s[1] == 104,
          "full %d, windows %d at %d and %d", full, win, w0s[0], w0s[1]);
  tally t = run_cache(&g, 0, max_seq, info);
  EXPECTF(t.classes == 2, "%d classes in one infill", t.classes);
  EXPECTF(t.captures == 2 && t.eager == 2 && t.replays == 12,
          "first infill: %d captures, %d eager, %d replays", t.captures, t.eager, t.replays);

  /* The same shape again (another prompt): nothing captured. */
  for (int i = 0; i < C; i++) ids[i] = (i * 53 + 5) % (info->vocab - 1);
  const int from = g_n;
  REQUIRE(sc_engine_infill(e, ids, 72, ids + 72, 24, &plan, &p, NULL, NULL, NULL, &r, &err) ==
          SC_OK);
  sc_infill_result_free(&r);
  t = run_cache(&g, from, max_seq, info);
  EXPECTF(t.captures == 0 && t.replays == 16 && t.classes == 2,
          "second infill: %d captures, %d replays, %d classes", t.captures, t.replays,
          t.classes);
  sc_engine_free(e);
  sc_model_free(m);
}

/* Without the plan's care, the window's place would key its graph: the
 * check above must be able to fail. Keys that include w0 give more
 * classes for the same passes. */
static void test_keys_discriminate(void) {
  pass_rec a = {160, 72, 104, 32, 0, true, true}, b = {160, 104, 136, 32, 0, true, true};
  sc_model *m = NULL;
  sc_error err = {0};
  REQUIRE(sc_model_new_synthetic("tiny", NULL, 7, &m, &err) == SC_OK);
  const sc_model_info *info = sc_model_get_info(m);
  EXPECT(key_of(&a, 160, info) == key_of(&b, 160, info));
  b.w1 = 135; /* one row fewer: another class */
  EXPECT(key_of(&a, 160, info) != key_of(&b, 160, info));
  b = a;
  b.sample = false;
  EXPECT(key_of(&a, 160, info) != key_of(&b, 160, info));
  sc_model_free(m);
}

int main(void) {
  RUN(test_infill_classes);
  RUN(test_keys_discriminate);
  TEST_MAIN_END();
}

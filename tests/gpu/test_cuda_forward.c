/* test_cuda_forward.c — the CUDA backend against the CPU reference through the
 * public forward API (model.h), on every tiny checkpoint
 * (tools/tiny_checkpoints.py, generated into a temporary folder): a full
 * pass, a window pass reusing cached K/V after tokens in the window changed,
 * a packed pass of three sequences, and a second identical window pass (the
 * CUDA-graph replay), plus device-side picking under a banned-id bitmap
 * edited in place between calls; on the default paths and again on the
 * older ones (SCULPT_CUDA_ATTN=simt, _HEAD=host, _FUSE=0); then the
 * engine's graphs per shape class (check_engine_graphs). Relative error max|cuda - cpu| / max|cpu| over the
 * logits must be <= 5e-2: bf16 weights (f32 checkpoints are rounded on
 * upload) and bf16 activations over 1-2 layers, against f32 throughout.
 * The test also checks that the CUDA backend really ran (no fallback line)
 * and that a wrong model (the CPU's logits for other ids) is rejected.
 * Without a usable device it prints why and exits 77. */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "model.h"
#include "sc_test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOL 5e-2

static int fallback_lines;
static void sink(void *user, sc_log_level level, const char *text) {
  (void)user, (void)level;
  if (strstr(text, "falling back")) __atomic_fetch_add(&fallback_lines, 1, __ATOMIC_SEQ_CST);
}

static double rel_err(const float *a, const float *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num = fmax(num, fabs((double)a[i] - b[i]));
    den = fmax(den, fabs((double)b[i]));
  }
  return den > 0 ? num / den : num;
}

static const char *NAMES[] = {"dream-bf16",      "opendcoder-f16", "coda-f32-sharded",
                              "qwen3-tied-bf16", "llada-bf16",     "llada-gqa-f32"};

static void check_model(const char *dir, const char *name) {
  sc_error err = {0};
  sc_model *cpu = NULL, *gpu = NULL;
  sc_model_options o = {0};
  o.device = SC_DEVICE_CPU;
  o.max_seq = 128;
  REQUIRE(sc_model_load(dir, &o, &cpu, &err) == SC_OK);
  o.device = SC_DEVICE_CUDA;
  int before = fallback_lines;
  if (sc_model_load(dir, &o, &gpu, &err) != SC_OK) {
    sc_model_free(cpu);
    EXPECTF(0, "%s: load on cuda: %s", name, err.msg);
    return;
  }
  const sc_model_info *info = sc_model_get_info(cpu);
  const int V = info->vocab, n = 19;
  sc_forward_ctx *cc = NULL, *gc = NULL;
  EXPECT(sc_forward_ctx_new(cpu, 0, &cc, &err) == SC_OK);
  EXPECT(sc_forward_ctx_new(gpu, 0, &gc, &err) == SC_OK);
  EXPECTF(fallback_lines == before, "%s: the CUDA backend fell back to the CPU", name);
  int32_t ids[19];
  uint64_t x = 99;
  for (int i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    ids[i] = (int32_t)((x >> 33) % (uint64_t)V);
  }
  float *a = malloc((size_t)n * V * sizeof *a), *b = malloc((size_t)n * V * sizeof *b);
  if (!cc || !gc || !a || !b) goto done;

  /* Full pass, every row. */
  EXPECT(sc_forward_ctx_run(cc, ids, n, NULL, n, a, &err) == SC_OK);
  EXPECT(sc_forward_ctx_run(gc, ids, n, NULL, n, b, &err) == SC_OK);
  double e = rel_err(b, a, (size_t)n * V);
  EXPECTF(e <= TOL, "%s: full pass rel err %.3g > %g", name, e, TOL);
  /* The comparison discriminates: shifted rows are far off. */
  EXPECTF(rel_err(b, a + V, (size_t)(n - 1) * V) > 4 * TOL, "%s: shifted rows also match",
          name);

  /* Window [5, 11) after changing two ids inside it; rows out of order
   * with a repeat. Twice, so the second run replays the captured graph. */
  {
    int32_t w_ids[19];
    memcpy(w_ids, ids, sizeof w_ids);
    w_ids[6] = (w_ids[6] + 1) % V;
    w_ids[9] = (w_ids[9] + 7) % V;
    const int32_t rows[4] = {10, 5, 7, 7};
    for (int rep = 0; rep < 3; rep++) {
      EXPECT(sc_forward_ctx_run_window(cc, w_ids, n, 5, 11, rows, 4, a, &err) == SC_OK);
      EXPECT(sc_forward_ctx_run_window(gc, w_ids, n, 5, 11, rows, 4, b, &err) == SC_OK);
      e = rel_err(b, a, (size_t)4 * V);
      EXPECTF(e <= TOL, "%s: window pass %d rel err %.3g > %g", name, rep, e, TOL);
    }
  }

  /* Packed: three sequences of 7, 4 and 8 tokens, a few rows of each. */
  {
    const int32_t offs[4] = {0, 7, 11, 19};
    const int32_t rows[5] = {0, 6, 7, 12, 18};
    EXPECT(sc_forward_ctx_run_packed(cc, ids, offs, 3, rows, 5, a, &err) == SC_OK);
    EXPECT(sc_forward_ctx_run_packed(gc, ids, offs, 3, rows, 5, b, &err) == SC_OK);
    e = rel_err(b, a, (size_t)5 * V);
    EXPECTF(e <= TOL, "%s: packed pass rel err %.3g > %g", name, e, TOL);
  }
  /* A single token (the smallest shape). */
  EXPECT(sc_forward_ctx_run(cc, ids, 1, NULL, 1, a, &err) == SC_OK);
  EXPECT(sc_forward_ctx_run(gc, ids, 1, NULL, 1, b, &err) == SC_OK);
  e = rel_err(b, a, (size_t)V);
  EXPECTF(e <= TOL, "%s: one-token pass rel err %.3g > %g", name, e, TOL);
  /* Split keys, the path a small canvas over a long context takes (on a
   * large GPU it is chosen only then): 80 keys forced into 3 chunks, whose
   * partial softmaxes the combine kernel merges. */
  {
    enum { N2 = 80 };
    int32_t ids2[N2];
    for (int i = 0; i < N2; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      ids2[i] = (int32_t)((x >> 33) % (uint64_t)V);
    }
    const int32_t rows2[3] = {0, 41, 79};
    setenv("SCULPT_CUDA_ATTN_CHUNKS", "3", 1);
    EXPECT(sc_forward_ctx_run(cc, ids2, N2, rows2, 3, a, &err) == SC_OK);
    EXPECT(sc_forward_ctx_run(gc, ids2, N2, rows2, 3, b, &err) == SC_OK);
    unsetenv("SCULPT_CUDA_ATTN_CHUNKS");
    e = rel_err(b, a, (size_t)3 * V);
    EXPECTF(e <= TOL, "%s: split-key pass rel err %.3g > %g", name, e, TOL);
  }
  /* Device-side picking with a banned-id bitmap edited in place between
   * calls (the engine keeps one bitmap and the device a copy): the second
   * pick must see the edit. Greedy rows, so the GPU's pick is its argmax. */
  {
    uint8_t *banned = calloc((size_t)V, 1);
    const int32_t rows[2] = {3, 11};
    sc_pick_row_params rp[2] = {{0.0f, 0.0f, 1}, {0.0f, 0.0f, 2}};
    sc_pick_params pp = {rp, banned, info->eos_id, info->pad_id, NULL, 0};
    sc_row_pick first[2], second[2];
    EXPECTF(sc_forward_ctx_picks_on_device(gc), "%s: the CUDA context picks on the host", name);
    if (banned && sc_forward_ctx_pick(gc, ids, n, 0, n, NULL, 0, rows, 2, &pp, NULL, false, first,
                                      &err) == SC_OK) {
      EXPECTF(first[0].token >= 0 && first[0].token < V && first[1].token >= 0 &&
                  first[1].token < V,
              "%s: picks %d, %d outside the vocabulary", name, first[0].token, first[1].token);
      if (first[0].token >= 0 && first[0].token < V) banned[first[0].token] = 1;
      if (first[1].token >= 0 && first[1].token < V) banned[first[1].token] = 1;
      EXPECT(sc_forward_ctx_pick(gc, ids, n, 0, n, NULL, 0, rows, 2, &pp, NULL, false, second,
                                 &err) == SC_OK);
      EXPECTF(!banned[second[0].token] && !banned[second[1].token],
              "%s: a bitmap edited in place was not uploaded again (picked %d, %d)", name,
              second[0].token, second[1].token);
      memset(banned, 0, (size_t)V);
      EXPECT(sc_forward_ctx_pick(gc, ids, n, 0, n, NULL, 0, rows, 2, &pp, NULL, false, second,
                                 &err) == SC_OK);
      EXPECTF(second[0].token == first[0].token && second[1].token == first[1].token,
              "%s: clearing the bitmap did not restore the first picks", name);
    } else {
      EXPECTF(0, "%s: pick on cuda: %s", name, err.msg);
    }
    free(banned);
  }
  fprintf(stderr, "%s: ok\n", name);
done:
  free(a);
  free(b);
  sc_forward_ctx_free(cc);
  sc_forward_ctx_free(gc);
  sc_model_free(cpu);
  sc_model_free(gpu);
}

/* The engine's infill on the GPU (a synthetic tiny model: no end token, so
 * the pass count is the schedule's): two classes, each captured once on
 * its second use; the same shape again captures nothing and replays every
 * pass; one wait on the device a pass; and the graphs change nothing: the
 * same prompt without them decodes the same canvas. */
static void check_engine_graphs(void) {
  sc_error err = {0};
  sc_model_options o = {0};
  o.device = SC_DEVICE_CUDA;
  sc_model *m = NULL;
  REQUIRE(sc_model_new_synthetic("tiny", &o, 7, &m, &err) == SC_OK);
  const sc_model_info *info = sc_model_get_info(m);
  sc_engine *e = NULL, *plain = NULL;
  const char *was = getenv("SCULPT_CUDA_GRAPH");
  char saved[16] = "";
  if (was) snprintf(saved, sizeof saved, "%s", was);
  setenv("SCULPT_CUDA_GRAPH", "1", 1); /* this engine's contexts: graphs on */
  if (sc_engine_new(m, NULL, 160, &e, &err) != SC_OK) {
    EXPECTF(0, "engine: %s", err.msg);
    sc_model_free(m);
    return;
  }
  int32_t ids[96];
  for (int i = 0; i < 96; i++) ids[i] = (i * 37 + 11) % (info->vocab - 1);
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.schedule = SC_SCHEDULE_FIXED_K;
  p.block_len = 32;
  p.steps = 16; /* 64 tokens, 4 a step */
  p.eos_penalty = 0;
  sc_infill_plan plan = {1, {64}};
  sc_forward_counters c0, c1, c2;
  sc_infill_result r1, r2, r3;
  sc_engine_counters(e, &c0);
  REQUIRE(sc_engine_infill(e, ids, 72, ids + 72, 24, &plan, &p, NULL, NULL, NULL, &r1, &err) ==
          SC_OK);
  sc_engine_counters(e, &c1);
  EXPECTF(r1.committed == 64 && c1.passes - c0.passes == 16, "committed %d in %llu passes",
          r1.committed, (unsigned long long)(c1.passes - c0.passes));
  EXPECTF(c1.graph_captures - c0.graph_captures == 2 && c1.eager_passes - c0.eager_passes == 2 &&
              c1.graph_replays - c0.graph_replays == 12,
          "first infill: %llu captures, %llu eager, %llu replays",
          (unsigned long long)(c1.graph_captures - c0.graph_captures),
          (unsigned long long)(c1.eager_passes - c0.eager_passes),
          (unsigned long long)(c1.graph_replays - c0.graph_replays));
  EXPECTF(c1.host_syncs - c0.host_syncs == 16, "%llu waits for 16 passes",
          (unsigned long long)(c1.host_syncs - c0.host_syncs));
  REQUIRE(sc_engine_infill(e, ids, 72, ids + 72, 24, &plan, &p, NULL, NULL, NULL, &r2, &err) ==
          SC_OK);
  sc_engine_counters(e, &c2);
  EXPECTF(c2.graph_captures == c1.graph_captures && c2.graph_replays - c1.graph_replays == 16,
          "second infill: %llu captures, %llu replays",
          (unsigned long long)(c2.graph_captures - c1.graph_captures),
          (unsigned long long)(c2.graph_replays - c1.graph_replays));
  EXPECT(r2.canvas_len == r1.canvas_len &&
         memcmp(r1.canvas_ids, r2.canvas_ids, (size_t)r1.canvas_len * sizeof(int32_t)) == 0);
  setenv("SCULPT_CUDA_GRAPH", "0", 1);
  if (sc_engine_new(m, NULL, 160, &plain, &err) == SC_OK &&
      sc_engine_infill(plain, ids, 72, ids + 72, 24, &plan, &p, NULL, NULL, NULL, &r3, &err) ==
          SC_OK) {
    EXPECTF(r3.canvas_len == r1.canvas_len &&
                memcmp(r1.canvas_ids, r3.canvas_ids, (size_t)r1.canvas_len * sizeof(int32_t)) == 0,
            "graphs on and off decode different canvases");
    sc_forward_counters c3;
    sc_engine_counters(plain, &c3);
    EXPECT(c3.graph_captures == 0 && c3.eager_passes == 16);
    sc_infill_result_free(&r3);
  } else {
    EXPECTF(0, "an engine without graphs: %s", err.msg);
  }
  if (saved[0]) setenv("SCULPT_CUDA_GRAPH", saved, 1);
  else unsetenv("SCULPT_CUDA_GRAPH");
  sc_infill_result_free(&r1);
  sc_infill_result_free(&r2);
  sc_engine_free(plain);
  sc_engine_free(e);
  sc_model_free(m);
}

int main(void) {
  sc_kernels_device_info info;
  sc_error err = {0};
  if (sc_kernels_probe(&info, &err) != SC_OK) {
    printf("no CUDA device: %s; skipping the CUDA forward parity test\n", err.msg);
    return 77;
  }
  char tmp[] = "/tmp/sculpt-gpu-XXXXXX";
  if (!mkdtemp(tmp)) {
    printf("cannot make a temporary folder\n");
    return 1;
  }
  /* A prepared binary run on another machine (tools/gpu_session.sh carries
   * it to the GPU box) finds the sources and a Python with numpy there
   * through the environment, not the paths of the machine that built it. */
  const char *src = getenv("SCULPT_SOURCE_DIR"), *py = getenv("SCULPT_PYTHON");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s %s%s/tools/tiny_checkpoints.py %s >/dev/null",
           py && *py ? py : SC_PYTHON, src && *src ? src : SC_TEST_DATA_DIR,
           src && *src ? "" : "/..", tmp);
  if (system(cmd) != 0) {
    printf("tools/tiny_checkpoints.py failed (needs python3-numpy)\n");
    return 1;
  }
  sc_log_set_sink(sink, NULL);
  /* The default paths, then the older ones behind their switches (simt
   * attention, the lm_head after the graph, unfused residuals): each
   * against the CPU. A run that prints FAIL only under one of them tells
   * tools/gpu_engine.sh which switch to turn off. */
  /* SCULPT_TEST_PATHS=env: the paths the environment chose, alone
   * (tools/gpu_engine.sh runs one set per call to tell which fails). */
  const char *only = getenv("SCULPT_TEST_PATHS");
  const bool env_paths = only && strcmp(only, "env") == 0;
  for (int variant = 0; variant < (env_paths ? 1 : 2); variant++) {
    if (variant) {
      setenv("SCULPT_CUDA_ATTN", "simt", 1);
      setenv("SCULPT_CUDA_HEAD", "host", 1);
      setenv("SCULPT_CUDA_FUSE", "0", 1);
    }
    fprintf(stderr, "paths: %s\n", variant ? "simt attention, lm_head after the graph, unfused"
                                           : env_paths ? "as the environment says" : "defaults");
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
      char dir[512];
      snprintf(dir, sizeof dir, "%s/%s", tmp, NAMES[i]);
      check_model(dir, NAMES[i]);
    }
  }
  if (!env_paths) {
    unsetenv("SCULPT_CUDA_ATTN");
    unsetenv("SCULPT_CUDA_HEAD");
    unsetenv("SCULPT_CUDA_FUSE");
  }
  RUN(check_engine_graphs);
  sc_log_set_sink(NULL, NULL);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  TEST_MAIN_END();
}

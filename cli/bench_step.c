/* bench_step.c — `sculpt bench --step`: the two costs a completion is made
 * of, on a checkpoint, against this machine's measured limits:
 *
 *   - a full forward pass over context + canvas tokens (what a request
 *     without reusable K/V starts with), as GFLOP/s: 2 x tokens x the
 *     layers' matrix parameters, plus the attention's 4 x tokens^2 x
 *     heads x head_dim per layer, plus the lm_head for the canvas rows;
 *   - a decoding step with the K/V cache: the canvas rows (and the row
 *     before them, the shift) recomputed over the cached context, the
 *     lm_head for the canvas rows; against the memory-bandwidth floor for
 *     the bytes it must read: every matrix once (the int8/bf16 copy, or the
 *     mapped checkpoint in f32) and the context's K/V.
 *
 * The bandwidth is measured here, in the same run: T threads (the cores)
 * each sum their share of a 1 GiB buffer, best of 5.
 *
 * A step is not always bound by its bytes: its canvas rows multiply every
 * weight (33 rows over int8 weights, twice as the activations come in two
 * parts, are 66 multiply-adds per weight byte; two cores stream bytes
 * faster than they do that many). So it is also set against a compute
 * floor: its arithmetic at the rate the full pass reached in the same run
 * (large matrices, so as near this machine's peak for the weights' kind
 * as sculpt's kernels get). The roofline is the larger floor. */
#define _POSIX_C_SOURCE 200809L
#include "bench_impl.h"
#include "cli.h"
#include "model.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "bench"

typedef struct bw_job {
  const uint64_t *p;
  size_t n;
  uint64_t sum;
} bw_job;

static void *bw_read(void *arg) {
  bw_job *j = arg;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= j->n; i += 4) {
    a += j->p[i];
    b += j->p[i + 1];
    c += j->p[i + 2];
    d += j->p[i + 3];
  }
  for (; i < j->n; i++) a += j->p[i];
  j->sum = a + b + c + d;
  return NULL;
}

double sc_bench_read_bandwidth(int threads) {
  const size_t bytes = (size_t)1 << 30, n = bytes / sizeof(uint64_t);
  uint64_t *buf = malloc(bytes);
  if (!buf) return 0;
  for (size_t i = 0; i < n; i++) buf[i] = i;
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  double best = 0;
  for (int r = 0; r < 5; r++) {
    pthread_t th[64];
    bw_job jobs[64];
    double t0 = sc_now_ms();
    int made = 0;
    for (int t = 0; t < threads; t++) {
      jobs[t] = (bw_job){buf + n * t / threads, n * (t + 1) / threads - n * t / threads, 0};
      if (t == threads - 1 || pthread_create(&th[t], NULL, bw_read, &jobs[t]) != 0)
        bw_read(&jobs[t]);
      else
        made |= 1 << t;
    }
    for (int t = 0; t < threads; t++)
      if (made & (1 << t)) pthread_join(th[t], NULL);
    double ms = sc_now_ms() - t0;
    volatile uint64_t sink = jobs[0].sum;
    (void)sink;
    double gbs = (double)bytes / (ms * 1e6);
    if (gbs > best) best = gbs;
  }
  free(buf);
  return best;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int sc_bench_step(sc_model *model, const char *model_dir, int context, int canvas, int repeat,
                  int threads) {
  const sc_model_info *info = sc_model_get_info(model);
  const int n = context + canvas, c0 = context / 2 + 1, V = info->vocab;
  sc_forward_ctx *ctx = NULL;
  sc_error err = {0};
  int32_t *ids = malloc((size_t)n * sizeof *ids), *rows = malloc((size_t)canvas * sizeof *rows);
  float *logits = malloc((size_t)canvas * (size_t)V * sizeof *logits);
  double *t_full = malloc((size_t)repeat * sizeof *t_full),
         *t_step = malloc((size_t)repeat * sizeof *t_step);
  int rc = 1;
  if (!ids || !rows || !logits || !t_full || !t_step) {
    sc_cli_fail(CMD, "out of memory");
    goto out;
  }
  if (sc_forward_ctx_new(model, n, &ctx, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto out;
  }
  uint64_t x = 12345;
  for (int i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    ids[i] = (int32_t)((x >> 33) % (uint64_t)(V > 64 ? V - 64 : 1));
  }
  for (int i = 0; i < canvas; i++) {
    ids[c0 + i] = info->mask_id >= 0 && info->mask_id < V ? info->mask_id : ids[c0 + i];
    rows[i] = c0 + i - (info->shift_logits ? 1 : 0);
  }
  const int w0 = info->shift_logits ? c0 - 1 : c0, w1 = c0 + canvas;
  /* One warm-up of each (oneDNN makes its primitives on first use). */
  for (int r = -1; r < repeat; r++) {
    double t = sc_now_ms();
    if (sc_forward_ctx_run(ctx, ids, n, rows, canvas, logits, &err) != SC_OK) goto fail;
    double t1 = sc_now_ms();
    if (sc_forward_ctx_run_window(ctx, ids, n, w0, w1, rows, canvas, logits, &err) != SC_OK)
      goto fail;
    double t2 = sc_now_ms();
    if (r >= 0) {
      t_full[r] = t1 - t;
      t_step[r] = t2 - t1;
    }
  }
  qsort(t_full, (size_t)repeat, sizeof *t_full, cmp_d);
  qsort(t_step, (size_t)repeat, sizeof *t_step, cmp_d);
  const double full = t_full[repeat / 2], step = t_step[repeat / 2];
  /* Work and bytes. */
  const double H = info->hidden, L = info->n_layers, QD = (double)info->n_heads * info->head_dim,
               KD = (double)info->n_kv_heads * info->head_dim, FF = info->intermediate;
  const double layer_params = L * (H * QD + 2 * H * KD + QD * H + 3 * H * FF);
  const double head_params = (double)V * H;
  const double att = L * 4.0 * info->n_heads * info->head_dim;
  const double flop_full = 2.0 * n * layer_params + att * (double)n * n + 2.0 * canvas * head_params;
  const int nw = w1 - w0;
  const double flop_step = 2.0 * nw * layer_params + att * (double)nw * n + 2.0 * canvas * head_params;
  const double kv_bytes = L * n * KD * 2 * 4;
  const double w_bytes =
      info->packed_bytes ? (double)info->packed_bytes
                         : (double)info->weight_bytes -
                               (info->tied_embeddings ? 0.0 : head_params * (double)info->weight_bytes /
                                                                  (double)info->n_params);
  const double bytes = w_bytes + kv_bytes;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const double bw = sc_bench_read_bandwidth(threads > 0 ? threads : (int)cpus);
  const double floor_ms = bw > 0 ? bytes / (bw * 1e6) : 0;
  const double compute_floor_ms = full > 0 ? flop_step / (flop_full / full) : 0;
  const double roof_ms = floor_ms > compute_floor_ms ? floor_ms : compute_floor_ms;
  char cpu[256];
  sc_bench_cpu_name(cpu, sizeof cpu);
  printf("sculpt bench --step: %s (%d layers, hidden %d, vocab %d, %s weights computing in %s)\n",
         model_dir, info->n_layers, info->hidden, V, sc_dtype_name(info->dtype),
         sc_weights_kind_name(info->weights));
  printf("machine: %s, %ld CPUs; median of %d\n", cpu, cpus, repeat);
  printf("full pass: %d tokens (lm_head for %d rows) %.1f ms = %.1f GFLOP/s\n", n, canvas, full,
         flop_full / (full * 1e6));
  printf("cached step: %d rows over %d positions (lm_head for %d) %.1f ms = %.1f GFLOP/s\n", nw,
         n, canvas, step, flop_step / (step * 1e6));
  printf("step reads %.1f MB (weights %.1f + K/V %.1f); measured read bandwidth %.1f GB/s "
         "(%d threads) -> floor %.1f ms; step / floor = %.2fx\n",
         bytes / 1e6, w_bytes / 1e6, kv_bytes / 1e6, bw, threads > 0 ? threads : (int)cpus,
         floor_ms, floor_ms > 0 ? step / floor_ms : 0);
  printf("step's arithmetic at the full pass's rate -> compute floor %.1f ms; the roofline "
         "(the larger floor) %.1f ms; step / roofline = %.2fx\n",
         compute_floor_ms, roof_ms, roof_ms > 0 ? step / roof_ms : 0);
  printf("RESULT weights=%s full_ms=%.2f full_gflops=%.2f step_ms=%.2f step_gflops=%.2f "
         "step_bytes=%.0f bandwidth_gbs=%.2f floor_ms=%.2f compute_floor_ms=%.2f "
         "roofline_ms=%.2f\n",
         sc_weights_kind_name(info->weights), full, flop_full / (full * 1e6), step,
         flop_step / (step * 1e6), bytes, bw, floor_ms, compute_floor_ms, roof_ms);
  rc = 0;
  goto out;
fail:
  sc_cli_fail(CMD, "%s", err.msg);
out:
  sc_forward_ctx_free(ctx);
  free(ids);
  free(rows);
  free(logits);
  free(t_full);
  free(t_step);
  return rc;
}

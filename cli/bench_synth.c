/* bench_synth.c — `sculpt bench --synthetic SHAPE`: random weights at a real
 * model's shape (model.h, sc_model_new_synthetic), nothing to download.
 *
 *   (default)  one denoising step of the CUDA backend per context and
 *              canvas, against the step's HBM roofline (bytes of weights
 *              and K/V read / peak bandwidth).
 *   --profile  the step's device time by kernel kind (CUDA events: inside
 *              a graph, and eagerly), then the step under each of the
 *              backend's switches (--variants) and key-chunk counts
 *              (--chunks): the A/B a GPU run needs to choose.
 *   --infill   whole infills through the real engine (full pass, window
 *              steps, block moves, the host's decisions), k tokens
 *              committed per step (fixed-k: random weights cannot decide),
 *              end to end, beside the sum of the same steps timed alone.
 *              Runs on the CPU too (the tiny shape, for tests).
 * Every figure also goes out as one line `KIND key=value ...` for
 * tests/gpu/run.sh and tools/gpu_engine.sh to collect. */
#define _POSIX_C_SOURCE 200809L
#include "bench_impl.h"
#include "cli.h"
#include "kernels.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "bench"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n ? v[n / 2] : 0;
}

static int max_of(const int *v, int n) {
  int m = 0;
  for (int i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
  return m;
}

/* Random ordinary ids (never the mask, the last id), the same every run. */
static void random_ids(int32_t *ids, int n, int vocab, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    ids[i] = (int32_t)((x >> 33) % (uint64_t)(vocab > 2 ? vocab - 1 : 1));
  }
}

static sc_kernels_dims dims_of(const sc_synthetic_shape *sh) {
  sc_kernels_dims d = {sh->n_layers, sh->hidden,       sh->n_heads, sh->n_kv_heads,
                       sh->head_dim, sh->intermediate, sh->vocab};
  return d;
}

/* ---- the CUDA step (default and --profile) ---------------------------------- */

typedef struct step_rig {
  const sc_synthetic_shape *sh;
  sc_kernels_model *km;
  sc_kernels_ctx *kc;
  double bw, w_bytes;
  int S;
} step_rig;

static int rig_open(step_rig *r, const sc_synthetic_shape *sh, int S, bool fp8, bool quiet) {
  memset(r, 0, sizeof *r);
  r->sh = sh;
  r->S = S;
  sc_error err = {0};
  sc_kernels_device_info dev;
  if (sc_kernels_probe(&dev, &err) != SC_OK) {
    sc_cli_fail(CMD, "--synthetic needs a CUDA GPU for this, and there is none: %s", err.msg);
    return 1;
  }
  int sms = 0;
  if (sc_kernels_device_bandwidth(&sms, &r->bw, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
  }
  sc_kernels_model_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.dims = dims_of(sh);
  desc.rope_theta = sh->rope_theta;
  desc.rms_eps = 1e-6f;
  desc.synthetic = true;
  desc.synthetic_bias = sh->qkv_bias;
  desc.synthetic_qk_norm = sh->qk_norm;
  desc.synthetic_tied = sh->tied;
  desc.seed = 42;
  desc.fp8 = fp8;
  double t0 = sc_now_ms();
  if (sc_kernels_model_new(&desc, &r->km, &err) != SC_OK ||
      sc_kernels_ctx_new(r->km, S, &r->kc, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    sc_kernels_model_free(r->km);
    r->km = NULL;
    return 1;
  }
  const sc_kernels_dims d = dims_of(sh);
  /* Bytes a step must read: every weight once, except the embedding table,
   * of which only the window's rows are gathered (unless it is the head). */
  r->w_bytes = (double)sc_kernels_model_step_bytes(r->km);
  if (!quiet) {
    printf("sculpt bench --synthetic %s: %d layers, hidden %d, heads %d/%d x %d, ffn %d, "
           "vocab %d, %s weights %.2f GiB (random, generated on the GPU in %.0f ms)\n",
           sh->name, d.n_layers, d.hidden, d.n_heads, d.n_kv_heads, d.head_dim, d.intermediate,
           d.vocab, fp8 ? "fp8 (e4m3, bf16 embedding table)" : "bf16",
           sc_kernels_model_bytes(r->km) / 1073741824.0, sc_now_ms() - t0);
    printf("device: %s, %d SMs, peak HBM bandwidth %.0f GB/s (2 x memory clock x bus width), "
           "driver %d, runtime %d\n",
           dev.name, sms, r->bw / 1e9, dev.driver_version, dev.runtime_version);
  }
  return 0;
}

static void rig_close(step_rig *r) {
  sc_kernels_ctx_free(r->kc);
  sc_kernels_model_free(r->km);
  memset(r, 0, sizeof *r);
}

static double roofline_ms(const step_rig *r, int n) {
  const double kv = (double)r->sh->n_layers * n * r->sh->n_kv_heads * r->sh->head_dim * 4.0;
  return (r->w_bytes + kv) / r->bw * 1000.0;
}

/* One (context, canvas) point: the step's inputs and the full pass that
 * fills the cache. */
typedef struct step_point {
  int C, m, n, w0;
  int32_t *ids;
  sc_kernels_pick_row *pr;
  sc_kernels_row_stats *st;
  sc_kernels_pass step;
  sc_kernels_sample smp;
} step_point;

static sc_status point_open(step_rig *r, step_point *p, int C, int m, sc_error *err) {
  memset(p, 0, sizeof *p);
  p->C = C, p->m = m, p->n = C + m, p->w0 = C / 2;
  p->ids = malloc((size_t)p->n * sizeof *p->ids);
  p->pr = calloc((size_t)m, sizeof *p->pr); /* greedy, no penalty */
  p->st = malloc((size_t)m * sizeof *p->st);
  SC_CHECK(p->ids && p->pr && p->st, err, SC_ERR_NOMEM, "out of memory");
  random_ids(p->ids, p->n, r->sh->vocab, 12345);
  p->step = (sc_kernels_pass){p->ids, p->n, p->w0, p->w0 + m, NULL, 0, NULL, m};
  p->smp = (sc_kernels_sample){p->pr, NULL, -1, -1, NULL};
  int32_t none = 0;
  sc_kernels_pass full = {p->ids, p->n, 0, p->n, NULL, 0, &none, 0};
  return sc_kernels_forward(r->kc, &full, NULL, err);
}

static void point_close(step_point *p) {
  free(p->ids);
  free(p->pr);
  free(p->st);
}

/* Median ms of `repeat` steps after 3 warm-ups (cuBLAS's heuristics, the
 * graph's capture on its second use), committing per_step argmax tokens
 * a step as a decoder would. times: room for repeat. */
static sc_status time_steps(step_rig *r, step_point *p, int per_step, int repeat, double *times,
                            double *mean, sc_error *err) {
  double sum = 0;
  for (int i = -3; i < repeat; i++) {
    double t = sc_now_ms();
    SC_TRY(sc_kernels_forward_stats(r->kc, &p->step, &p->smp, p->st, err));
    t = sc_now_ms() - t;
    if (i >= 0) times[i] = t, sum += t;
    for (int k = 0; k < per_step && k < p->m; k++) {
      int j = (((i + 3) * per_step) + k) % p->m;
      p->ids[p->w0 + j] = p->st[j].argmax;
    }
  }
  if (mean) *mean = sum / repeat;
  return SC_OK;
}

/* The model's name in the machine lines: FP8 runs are another row. */
static const char *run_label(const sc_synthetic_shape *sh, bool fp8, char *buf, size_t n) {
  if (!fp8) return sh->name;
  snprintf(buf, n, "%s:fp8", sh->name);
  return buf;
}

static int bench_steps(const sc_bench_synth_args *a, const sc_synthetic_shape *sh) {
  char lb[96];
  const char *label = run_label(sh, a->weights == SC_WEIGHTS_FP8, lb, sizeof lb);
  const int max_canvas = max_of(a->canvases, a->n_canvas), max_context = max_of(a->contexts, a->n_context);
  step_rig r;
  if (rig_open(&r, sh, max_context + max_canvas, a->weights == SC_WEIGHTS_FP8, false)) return 1;
  printf("step: the canvas rows recomputed over the cached context K/V (window pass), "
         "lm_head + softmax stats on the device for every canvas row; %d tokens committed per "
         "step; median of %d steps\n\n",
         a->per_step, a->repeat);
  printf("%8s %7s | %9s %9s | %10s %8s | %9s\n", "context", "canvas", "ms/step", "mean ms",
         "roofline", "ratio", "tok/s");
  int status = 0;
  sc_error err = {0};
  double *times = malloc((size_t)a->repeat * sizeof *times);
  for (int ci = 0; times && status == 0 && ci < a->n_context; ci++)
    for (int mi = 0; status == 0 && mi < a->n_canvas; mi++) {
      step_point p;
      double mean = 0;
      if (point_open(&r, &p, a->contexts[ci], a->canvases[mi], &err) != SC_OK ||
          time_steps(&r, &p, a->per_step, a->repeat, times, &mean, &err) != SC_OK) {
        status = 1;
      } else {
        const double med = median(times, a->repeat), roof = roofline_ms(&r, p.n);
        const double tps = a->per_step / med * 1000.0;
        printf("%8d %7d | %9.3f %9.3f | %8.3fms %7.2fx | %9.0f\n", p.C, p.m, med, mean, roof,
               med / roof, tps);
        printf("RESULT impl=sculpt model=%s context=%d canvas=%d ms=%.4f roofline_ms=%.4f "
               "tok_s=%.1f\n",
               label, p.C, p.m, med, roof, tps);
        fflush(stdout);
      }
      point_close(&p);
    }
  if (!times) sc_cli_fail(CMD, "out of memory");
  else if (status) sc_cli_fail(CMD, "%s", err.msg);
  uint64_t used = 0, total = 0;
  if (status == 0 && sc_kernels_device_memory(&used, &total, &err) == SC_OK)
    printf("\nmemory: weights %.2f GiB + context arena %.2f GiB (max_seq %d, planned up front, "
           "so also the peak); device in use %.2f of %.2f GiB\n",
           sc_kernels_model_bytes(r.km) / 1073741824.0, sc_kernels_ctx_bytes(r.kc) / 1073741824.0,
           r.S, used / 1073741824.0, total / 1073741824.0);
  free(times);
  rig_close(&r);
  return status || !times;
}

/* --variants: comma-separated switches, each "default" or NAME=VALUE with
 * NAME graphs|attn|head|fuse (kernels.h, sc_kernels_options). */
static bool variant_apply(const char *v, const sc_kernels_options *base, sc_kernels_options *o) {
  *o = *base;
  if (!strcmp(v, "default")) return true;
  const char *eq = strchr(v, '=');
  if (!eq) return false;
  const size_t nl = (size_t)(eq - v);
  const char *val = eq + 1;
  const bool on = !strcmp(val, "1") || !strcmp(val, "on"), off = !strcmp(val, "0") || !strcmp(val, "off");
  if (nl == 6 && !strncmp(v, "graphs", nl) && (on || off)) o->graphs = on;
  else if (nl == 4 && !strncmp(v, "fuse", nl) && (on || off)) o->fuse = on;
  else if (nl == 4 && !strncmp(v, "attn", nl) && !strcmp(val, "simt")) o->attn = SC_KERNELS_ATTN_SIMT;
  else if (nl == 4 && !strncmp(v, "attn", nl) && !strcmp(val, "mma")) o->attn = SC_KERNELS_ATTN_MMA;
  else if (nl == 4 && !strncmp(v, "gemm", nl) && !strcmp(val, "narrow")) o->gemm = SC_KERNELS_GEMM_NARROW;
  else if (nl == 4 && !strncmp(v, "gemm", nl) && !strcmp(val, "cublas")) o->gemm = SC_KERNELS_GEMM_CUBLAS;
  else if (nl == 4 && !strncmp(v, "head", nl) && !strcmp(val, "graph")) o->head_in_graph = true;
  else if (nl == 4 && !strncmp(v, "head", nl) && !strcmp(val, "host")) o->head_in_graph = false;
  else return false;
  return true;
}

static int bench_profile(const sc_bench_synth_args *a, const sc_synthetic_shape *sh) {
  char lb[96];
  const char *label = run_label(sh, a->weights == SC_WEIGHTS_FP8, lb, sizeof lb);
  const int max_canvas = max_of(a->canvases, a->n_canvas), max_context = max_of(a->contexts, a->n_context);
  step_rig r;
  if (rig_open(&r, sh, max_context + max_canvas, a->weights == SC_WEIGHTS_FP8, false)) return 1;
  sc_kernels_options base;
  sc_kernels_ctx_get_options(r.kc, &base);
  const int R = a->repeat;
  double *times = malloc((size_t)R * sizeof *times);
  sc_kernels_profile *prof = malloc((size_t)R * 2 * sizeof *prof);
  int status = !times || !prof;
  sc_error err = {0};
  if (status) sc_cli_fail(CMD, "out of memory");
  printf("profile: one step's device time by kernel kind (CUDA events; 'graph': event nodes "
         "in a graph of the step, what a replay spends; 'eager': launched one by one), median "
         "of %d; then the step under each switch and key split (median of %d)\n",
         R, R);
  for (int ci = 0; status == 0 && ci < a->n_context; ci++)
    for (int mi = 0; status == 0 && mi < a->n_canvas; mi++) {
      step_point p;
      if (point_open(&r, &p, a->contexts[ci], a->canvases[mi], &err) != SC_OK ||
          time_steps(&r, &p, a->per_step, 3, times, NULL, &err) != SC_OK) {
        status = 1;
        point_close(&p);
        break;
      }
      /* By kind: graph then eager. */
      bool in_graph[2] = {false, false};
      for (int mode = 0; status == 0 && mode < 2; mode++)
        for (int i = 0; i < R; i++) {
          if (sc_kernels_profile_step(r.kc, &p.step, &p.smp, p.st, mode == 0, &prof[mode * R + i],
                                      &err) != SC_OK) {
            status = 1;
            break;
          }
          in_graph[mode] = prof[mode * R + i].graph;
        }
      if (status) {
        point_close(&p);
        break;
      }
      printf("\n%s context %d canvas %d (roofline %.3f ms)\n", label, p.C, p.m,
             roofline_ms(&r, p.n));
      printf("%-14s %7s | %10s %7s | %10s\n", "kind", "groups", in_graph[0] ? "graph ms" : "eager* ms",
             "share", "eager ms");
      double tot[2];
      for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < R; i++) times[i] = prof[mode * R + i].total_ms;
        tot[mode] = median(times, R);
      }
      for (int k = 0; k < SC_KK_COUNT; k++) {
        double med[2];
        for (int mode = 0; mode < 2; mode++) {
          for (int i = 0; i < R; i++) times[i] = prof[mode * R + i].ms[k];
          med[mode] = median(times, R);
        }
        const int groups = prof[0].groups[k];
        if (!groups && !prof[R].groups[k]) continue;
        printf("%-14s %7d | %10.4f %6.1f%% | %10.4f\n", sc_kernels_kind_name((sc_kernels_kind)k),
               groups, med[0], tot[0] > 0 ? 100.0 * med[0] / tot[0] : 0.0, med[1]);
        for (int mode = 0; mode < 2; mode++)
          printf("PROFILE model=%s context=%d canvas=%d mode=%s kind=%s groups=%d ms=%.4f\n",
                 label, p.C, p.m, mode == 0 ? (in_graph[0] ? "graph" : "eager") : "eager",
                 sc_kernels_kind_name((sc_kernels_kind)k), prof[mode * R].groups[k], med[mode]);
      }
      printf("%-14s %7s | %10.4f %6s  | %10.4f\n", "total", "", tot[0], "", tot[1]);
      printf("PROFILE model=%s context=%d canvas=%d mode=%s kind=total ms=%.4f\n", label,
             p.C, p.m, in_graph[0] ? "graph" : "eager", tot[0]);
      printf("PROFILE model=%s context=%d canvas=%d mode=eager kind=total ms=%.4f\n", label,
             p.C, p.m, tot[1]);
      /* The switches, one at a time against the defaults. */
      char list[512];
      snprintf(list, sizeof list, "%s", a->variants);
      char *save = NULL;
      for (char *v = strtok_r(list, ",", &save); status == 0 && v; v = strtok_r(NULL, ",", &save)) {
        sc_kernels_options o;
        if (!variant_apply(v, &base, &o)) {
          sc_cli_fail(CMD, "--variants: '%s' is not default or graphs|fuse=on|off, "
                      "attn=simt|mma, head=graph|host, gemm=cublas|narrow", v);
          status = 2;
          break;
        }
        double mean = 0;
        if (sc_kernels_ctx_set_options(r.kc, &o, &err) != SC_OK ||
            time_steps(&r, &p, a->per_step, R, times, &mean, &err) != SC_OK) {
          status = 1;
          break;
        }
        sc_kernels_options got;
        sc_kernels_ctx_get_options(r.kc, &got);
        const double med = median(times, R);
        printf("variant %-12s %9.4f ms/step%s\n", v, med,
               got.attn != o.attn ? " (attn=mma has no instance for this head size: simt)" : "");
        printf("AB model=%s context=%d canvas=%d variant=%s ms=%.4f mean_ms=%.4f\n", label,
               p.C, p.m, v, med, mean);
        fflush(stdout);
      }
      /* The key split, forced (0 = planned). */
      snprintf(list, sizeof list, "%s", a->chunks);
      save = NULL;
      for (char *v = strtok_r(list, ",", &save); status == 0 && v; v = strtok_r(NULL, ",", &save)) {
        sc_kernels_options o = base;
        long nc = 0;
        if (strcmp(v, "auto") != 0 && !sc_cli_parse_long(v, 1, 1024, &nc)) {
          sc_cli_fail(CMD, "--chunks takes auto or counts 1..1024, not '%s'", v);
          status = 2;
          break;
        }
        o.attn_chunks = (int)nc;
        double mean = 0;
        if (sc_kernels_ctx_set_options(r.kc, &o, &err) != SC_OK ||
            time_steps(&r, &p, a->per_step, R, times, &mean, &err) != SC_OK) {
          status = 1;
          break;
        }
        const double med = median(times, R);
        printf("chunks %-6s %9.4f ms/step\n", v, med);
        printf("CHUNKS model=%s context=%d canvas=%d chunks=%s attn=%s ms=%.4f\n", label, p.C,
               p.m, v, base.attn == SC_KERNELS_ATTN_MMA ? "mma" : "simt", med);
        fflush(stdout);
      }
      if (status == 0 && sc_kernels_ctx_set_options(r.kc, &base, &err) != SC_OK) status = 1;
      point_close(&p);
    }
  if (status == 1 && err.msg[0]) sc_cli_fail(CMD, "%s", err.msg);
  free(times);
  free(prof);
  rig_close(&r);
  return status;
}

/* ---- --infill: the real engine ------------------------------------------------ */

static int bench_infill(const sc_bench_synth_args *a, const sc_synthetic_shape *sh) {
  sc_error err = {0};
  const bool cuda = strcmp(a->device, "cpu") != 0;
  sc_model_options mo = {0};
  mo.device = cuda ? SC_DEVICE_CUDA : SC_DEVICE_CPU;
  mo.weights = a->weights;
  mo.n_threads = a->threads;
  if (cuda) {
    sc_kernels_device_info dev;
    if (sc_kernels_probe(&dev, &err) != SC_OK) {
      sc_cli_fail(CMD, "--device cuda needs a CUDA GPU, and there is none: %s", err.msg);
      return 1;
    }
  }
  const int max_canvas = max_of(a->canvases, a->n_canvas), max_context = max_of(a->contexts, a->n_context);
  mo.max_seq = max_context + max_canvas;
  sc_model *model = NULL;
  double t0 = sc_now_ms();
  if (sc_model_new_synthetic(sh->name, &mo, 42, &model, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
  }
  const sc_model_info *info = sc_model_get_info(model);
  char lb[96];
  const char *label = run_label(sh, info->weights == SC_WEIGHTS_FP8, lb, sizeof lb);
  sc_engine *e = NULL;
  if (sc_engine_new(model, NULL, mo.max_seq, &e, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    sc_model_free(model);
    return 1;
  }
  printf("sculpt bench --synthetic %s --infill: %d layers, hidden %d, heads %d/%d x %d, ffn %d, "
         "vocab %d; random %s weights on the %s (ready in %.0f ms)\n",
         sh->name, info->n_layers, info->hidden, info->n_heads, info->n_kv_heads, info->head_dim,
         info->intermediate, info->vocab, sc_dtype_name(info->dtype), cuda ? "GPU" : "CPU",
         sc_now_ms() - t0);
  printf("infill: the engine's loop (a full pass at each block's start, window steps over the "
         "cached K/V, picks and commits on the host), fixed %d tokens a step, blocks of %d; "
         "median of %d after 2 warm-ups; 'steps alone': the same passes timed one by one\n\n",
         a->per_step, a->block, a->repeat);
  printf("%8s %7s | %9s %8s %6s | %9s %9s | %10s %8s | %8s\n", "context", "canvas", "ms", "tok/s",
         "passes", "fwd ms", "host ms", "steps sum", "overhead", "captures");
  int status = 0;
  const int R = a->repeat;
  double *times = malloc((size_t)R * sizeof *times), *fwd = malloc((size_t)R * sizeof *fwd);
  int32_t *ids = malloc((size_t)mo.max_seq * sizeof *ids);
  uint8_t *banned = calloc((size_t)info->vocab, 1);
  if (!times || !fwd || !ids || !banned) {
    sc_cli_fail(CMD, "out of memory");
    status = 1;
  }
  for (int ci = 0; status == 0 && ci < a->n_context; ci++)
    for (int mi = 0; status == 0 && mi < a->n_canvas; mi++) {
      const int C = a->contexts[ci], m = a->canvases[mi], n_pre = C * 3 / 4, n_suf = C - n_pre;
      random_ids(ids, C, info->vocab, 777 + (uint64_t)C);
      sc_infill_params p;
      sc_infill_params_default(&p);
      p.schedule = SC_SCHEDULE_FIXED_K;
      p.block_len = a->block;
      p.steps = (m + a->per_step - 1) / a->per_step;
      p.use_cache = true;
      p.eos_penalty = 0.0f;
      sc_infill_plan plan = {1, {m}};
      sc_forward_counters c0 = {0}, c1;
      int passes = 0, committed = 0;
      for (int i = -2; status == 0 && i < R; i++) {
        if (i == 0) sc_engine_counters(e, &c0);
        sc_infill_result res;
        double t = sc_now_ms();
        if (sc_engine_infill(e, ids, n_pre, ids + n_pre, n_suf, &plan, &p, NULL, NULL, NULL, &res,
                             &err) != SC_OK) {
          status = 1;
          break;
        }
        t = sc_now_ms() - t;
        if (i >= 0) times[i] = t, fwd[i] = res.ms_forward;
        passes = res.steps;
        committed = res.committed;
        sc_infill_result_free(&res);
      }
      if (status) break;
      sc_engine_counters(e, &c1);
      const double ms = median(times, R), fwd_ms = median(fwd, R);
      /* The same passes alone: the full pass that starts each block (its
       * rows: the block's) and a window step (the block's rows over the
       * cache), each the median of R, on a context of their own. */
      const int block = a->block > 0 && a->block < m ? a->block : m;
      const int n_blocks = (m + block - 1) / block, n = C + m, c0p = n_pre;
      const int full_n = n_blocks, win_n = passes - n_blocks;
      sc_forward_ctx *fc = NULL;
      int32_t *seq = malloc((size_t)n * sizeof *seq), rows[4096];
      sc_pick_row_params *rp = calloc((size_t)block, sizeof *rp);
      sc_row_pick *out = malloc((size_t)block * sizeof *out);
      float *logits = malloc((size_t)block * (size_t)info->vocab * sizeof *logits);
      double t_full = 0, t_win = 0;
      if (!seq || !rp || !out || !logits || block > 4096 ||
          sc_forward_ctx_new(model, n, &fc, &err) != SC_OK) {
        if (!err.msg[0]) sc_error_set(&err, SC_ERR_NOMEM, "out of memory");
        status = 1;
      } else {
        memcpy(seq, ids, (size_t)n_pre * sizeof *seq);
        for (int k = 0; k < m; k++) seq[n_pre + k] = info->mask_id;
        memcpy(seq + n_pre + m, ids + n_pre, (size_t)n_suf * sizeof *seq);
        banned[info->mask_id] = 1;
        for (int k = 0; k < block; k++) rows[k] = c0p + k;
        sc_pick_params pp = {rp, banned, -1, -1, NULL, 0};
        for (int kind = 0; kind < 2 && status == 0; kind++) {
          for (int i = -2; i < R; i++) {
            double t = sc_now_ms();
            sc_status st = kind == 0 ? sc_forward_ctx_pick(fc, seq, n, 0, n, NULL, 0, rows, block,
                                                           &pp, logits, false, out, &err)
                                     : sc_forward_ctx_pick(fc, seq, n, c0p, c0p + block, NULL, 0,
                                                           rows, block, &pp, logits, false, out,
                                                           &err);
            if (st != SC_OK) {
              status = 1;
              break;
            }
            if (i >= 0) times[i] = sc_now_ms() - t;
          }
          if (status == 0) *(kind == 0 ? &t_full : &t_win) = median(times, R);
        }
      }
      sc_forward_ctx_free(fc);
      free(seq);
      free(rp);
      free(out);
      free(logits);
      if (status) break;
      const double sum = full_n * t_full + win_n * t_win;
      const double tps = committed / ms * 1000.0;
      const uint64_t captures = c1.graph_captures - c0.graph_captures;
      printf("%8d %7d | %9.3f %8.0f %6d | %9.3f %9.3f | %10.3f %7.1f%% | %8llu\n", C, m, ms, tps,
             passes, fwd_ms, ms - fwd_ms, sum, sum > 0 ? 100.0 * (ms - sum) / sum : 0.0,
             (unsigned long long)captures);
      printf("INFILL impl=sculpt model=%s device=%s context=%d canvas=%d per_step=%d ms=%.4f "
             "tok_s=%.1f passes=%d committed=%d full_passes=%d window_steps=%d full_ms=%.4f "
             "window_ms=%.4f steps_sum_ms=%.4f fwd_ms=%.4f host_ms=%.4f overhead_pct=%.2f "
             "captures=%llu replays=%llu syncs_per_pass=%.2f\n",
             label, cuda ? "cuda" : "cpu", C, m, a->per_step, ms, tps, passes, committed,
             full_n, win_n, t_full, t_win, sum, fwd_ms, ms - fwd_ms,
             sum > 0 ? 100.0 * (ms - sum) / sum : 0.0, (unsigned long long)captures,
             (unsigned long long)(c1.graph_replays - c0.graph_replays),
             c1.passes > c0.passes
                 ? (double)(c1.host_syncs - c0.host_syncs) / (double)(c1.passes - c0.passes)
                 : 0.0);
      fflush(stdout);
    }
  if (status == 1 && err.msg[0]) sc_cli_fail(CMD, "%s", err.msg);
  free(times);
  free(fwd);
  free(ids);
  free(banned);
  sc_engine_free(e);
  sc_model_free(model);
  return status;
}

int sc_bench_synthetic(const sc_bench_synth_args *a) {
  const sc_synthetic_shape *sh = sc_synthetic_shape_find(a->shape);
  if (!sh) {
    char names[256];
    sc_synthetic_shape_names(names, sizeof names);
    sc_cli_fail(CMD, "--synthetic takes %s, not '%s'", names, a->shape);
    return 2;
  }
  if (a->infill) {
    if (strcmp(a->device, "cuda") && strcmp(a->device, "gpu") && strcmp(a->device, "cpu")) {
      sc_cli_fail(CMD, "--synthetic --infill runs on --device cuda or cpu, not '%s'", a->device);
      return 2;
    }
    return bench_infill(a, sh);
  }
  if (strcmp(a->device, "cuda") != 0 && strcmp(a->device, "gpu") != 0) {
    sc_cli_fail(CMD, "--synthetic times the CUDA backend: use --device cuda, not '%s' "
                "(--infill runs on the CPU too)", a->device);
    return 2;
  }
  return a->profile ? bench_profile(a, sh) : bench_steps(a, sh);
}

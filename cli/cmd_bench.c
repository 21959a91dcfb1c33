/* cmd_bench.c — `sculpt bench`: the infill engine's speed on a checkpoint.
 * For each canvas size it times whole infills, with and without the K/V
 * cache, under a stated schedule (fixed tokens per step), on random context
 * ids. A benchmark, not a test: it prints numbers and the machine.
 *
 * `sculpt bench --synthetic SHAPE` times one denoising step of the CUDA
 * backend instead, with random weights generated on the GPU at a real
 * model's shapes (nothing to download): ms per step for each canvas and
 * cached context, tokens/s at K tokens committed per step, peak memory, and
 * the step's HBM roofline (bytes of weights and K/V read / peak bandwidth). */
#define _POSIX_C_SOURCE 200809L
#include "bench_impl.h"
#include "cli.h"
#include "kernels.h"
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "bench"

void sc_bench_cpu_name(char *out, size_t n) {
  snprintf(out, n, "unknown cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *c = strchr(line, ':');
      if (c) {
        c += 2;
        c[strcspn(c, "\n")] = '\0';
        snprintf(out, n, "%s", c);
      }
      break;
    }
  }
  fclose(f);
}

static bool parse_list(const char *s, int *out, int max, int *n) {
  *n = 0;
  char *copy = strdup(s), *save = NULL;
  bool ok = copy != NULL;
  for (char *t = ok ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
    char *end;
    long v = strtol(t, &end, 10);
    if (*end || v < 1 || v > 4096 || *n == max) {
      ok = false;
      break;
    }
    out[(*n)++] = (int)v;
  }
  free(copy);
  return ok && *n > 0;
}

/* ---- --synthetic: one denoising step on the GPU ---------------------------- */

/* Real shapes (config.json of each model; ../shared/notes/diffusion-models.md). */
typedef struct synth_shape {
  const char *name;
  sc_kernels_dims d;
  float theta;
  bool bias, qk_norm, tied;
} synth_shape;

static const synth_shape SHAPES[] = {
    /* Qwen2.5-Coder-0.5B: 24 layers, 14/2 heads, QKV bias, tied. */
    {"open-dcoder-0.5b", {24, 896, 14, 2, 64, 4864, 151936}, 1e6f, true, false, true},
    /* Qwen3-1.7B: 28 layers, 16/8 heads, hd 128, q/k-norm, own lm_head. */
    {"coda-1.7b", {28, 2048, 16, 8, 128, 6144, 151936}, 1e6f, false, true, false},
    /* Qwen2.5-7B: 28 layers, 28/4 heads, hd 128, QKV bias, untied. */
    {"dream-7b", {28, 3584, 28, 4, 128, 18944, 152064}, 1e6f, true, false, false},
};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int bench_synthetic(const char *shape_name, const char *device, const int *canvases,
                           int n_canvas, const int *contexts, int n_context, int per_step,
                           int repeat) {
  const synth_shape *sh = NULL;
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
    if (strcmp(SHAPES[i].name, shape_name) == 0) sh = &SHAPES[i];
  if (!sh) {
    sc_cli_fail(CMD, "--synthetic takes open-dcoder-0.5b, coda-1.7b or dream-7b, not '%s'",
                shape_name);
    return 2;
  }
  if (strcmp(device, "cuda") != 0 && strcmp(device, "gpu") != 0) {
    sc_cli_fail(CMD, "--synthetic times the CUDA backend: use --device cuda, not '%s'", device);
    return 2;
  }
  sc_error err = {0};
  sc_kernels_device_info dev;
  if (sc_kernels_probe(&dev, &err) != SC_OK) {
    sc_cli_fail(CMD, "--synthetic needs a CUDA GPU, and there is none: %s", err.msg);
    return 1;
  }
  int sms = 0;
  double bw = 0;
  if (sc_kernels_device_bandwidth(&sms, &bw, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
  }
  int max_canvas = 0, max_context = 0;
  for (int i = 0; i < n_canvas; i++) max_canvas = canvases[i] > max_canvas ? canvases[i] : max_canvas;
  for (int i = 0; i < n_context; i++)
    max_context = contexts[i] > max_context ? contexts[i] : max_context;
  const int S = max_context + max_canvas;

  sc_kernels_model_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.dims = sh->d;
  desc.rope_theta = sh->theta;
  desc.rms_eps = 1e-6f;
  desc.synthetic = true;
  desc.synthetic_bias = sh->bias;
  desc.synthetic_qk_norm = sh->qk_norm;
  desc.synthetic_tied = sh->tied;
  desc.seed = 42;
  sc_kernels_model *km = NULL;
  sc_kernels_ctx *kc = NULL;
  double t0 = sc_now_ms();
  if (sc_kernels_model_new(&desc, &km, &err) != SC_OK ||
      sc_kernels_ctx_new(km, S, &kc, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    sc_kernels_model_free(km);
    return 1;
  }
  double setup_ms = sc_now_ms() - t0;
  const sc_kernels_dims *d = &sh->d;
  const double H = d->hidden, V = d->vocab, KD = (double)d->n_kv_heads * d->head_dim;
  /* Bytes a step must read: every weight once, except the embedding table,
   * of which only the window's rows are gathered (unless it is the head). */
  const double w_bytes = (double)sc_kernels_model_bytes(km) - (sh->tied ? 0.0 : V * H * 2.0);
  printf("sculpt bench --synthetic %s: %d layers, hidden %d, heads %d/%d x %d, ffn %d, "
         "vocab %d, bf16 weights %.2f GiB (random, generated on the GPU in %.0f ms)\n",
         sh->name, d->n_layers, d->hidden, d->n_heads, d->n_kv_heads, d->head_dim,
         d->intermediate, d->vocab, sc_kernels_model_bytes(km) / 1073741824.0, setup_ms);
  printf("device: %s, %d SMs, peak HBM bandwidth %.0f GB/s (2 x memory clock x bus width), "
         "driver %d, runtime %d\n",
         dev.name, sms, bw / 1e9, dev.driver_version, dev.runtime_version);
  printf("step: the canvas rows recomputed over the cached context K/V (window pass), "
         "lm_head + softmax stats on the device for every canvas row; %d tokens committed per "
         "step; median of %d steps\n\n",
         per_step, repeat);
  printf("%8s %7s | %9s %9s | %10s %8s | %9s\n", "context", "canvas", "ms/step", "mean ms",
         "roofline", "ratio", "tok/s");

  int status = 0;
  const int vocab_ok = d->vocab - 1000; /* ordinary ids */
  int32_t *ids = malloc((size_t)S * sizeof *ids);
  double *times = malloc((size_t)repeat * sizeof *times);
  sc_kernels_row_stats *st = malloc((size_t)max_canvas * sizeof *st);
  sc_kernels_pick_row *pr = calloc((size_t)max_canvas, sizeof *pr); /* greedy, no penalty */
  if (!ids || !times || !st || !pr) {
    sc_cli_fail(CMD, "out of memory");
    status = 1;
  }
  uint64_t x = 12345;
  for (int i = 0; status == 0 && i < S; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    ids[i] = (int32_t)((x >> 33) % (uint64_t)vocab_ok);
  }
  for (int ci = 0; status == 0 && ci < n_context; ci++) {
    for (int mi = 0; status == 0 && mi < n_canvas; mi++) {
      const int C = contexts[ci], m = canvases[mi], n = C + m, w0 = C / 2;
      int32_t none = 0;
      sc_kernels_pass full = {ids, n, 0, n, NULL, 0, &none, 0};
      sc_kernels_pass step = {ids, n, w0, w0 + m, NULL, 0, NULL, m};
      sc_kernels_sample smp = {pr, NULL, -1, -1, NULL};
      if (sc_kernels_forward(kc, &full, NULL, &err) != SC_OK) {
        status = 1;
        break;
      }
      for (int r = -3; r < repeat; r++) { /* 3 warm-up steps: cuBLAS heuristics, graph capture */
        double t = sc_now_ms();
        if (sc_kernels_forward_stats(kc, &step, &smp, st, &err) != SC_OK) {
          status = 1;
          break;
        }
        t = sc_now_ms() - t;
        if (r >= 0) times[r] = t;
        /* Commit per_step tokens (the argmax), as a decoder would. */
        for (int k = 0; k < per_step && k < m; k++) {
          int j = (((r + 3) * per_step) + k) % m;
          ids[w0 + j] = st[j].argmax;
        }
      }
      if (status) break;
      double mean = 0;
      for (int r = 0; r < repeat; r++) mean += times[r];
      mean /= repeat;
      qsort(times, (size_t)repeat, sizeof *times, cmp_double);
      const double med = times[repeat / 2];
      const double kv_bytes = (double)d->n_layers * n * KD * 2.0 * 2.0;
      const double roof = (w_bytes + kv_bytes) / bw * 1000.0;
      const double tps = per_step / med * 1000.0;
      printf("%8d %7d | %9.3f %9.3f | %8.3fms %7.2fx | %9.0f\n", C, m, med, mean, roof,
             med / roof, tps);
      printf("RESULT impl=sculpt model=%s context=%d canvas=%d ms=%.4f roofline_ms=%.4f "
             "tok_s=%.1f\n",
             sh->name, C, m, med, roof, tps);
      fflush(stdout);
    }
  }
  if (status) sc_cli_fail(CMD, "%s", err.msg);
  uint64_t used = 0, total = 0;
  if (status == 0 && sc_kernels_device_memory(&used, &total, &err) == SC_OK)
    printf("\nmemory: weights %.2f GiB + context arena %.2f GiB (max_seq %d, planned up front, "
           "so also the peak); device in use %.2f of %.2f GiB\n",
           sc_kernels_model_bytes(km) / 1073741824.0, sc_kernels_ctx_bytes(kc) / 1073741824.0,
           S, used / 1073741824.0, total / 1073741824.0);
  free(ids);
  free(times);
  free(st);
  free(pr);
  sc_kernels_ctx_free(kc);
  sc_kernels_model_free(km);
  return status;
}

/* The folder --model names (sc_cli_model_dir), kept for the rest of the
 * process: a bench is one command. */
static const char *bench_model_dir(const char *given, int *rc) {
  static char dir[4400];
  char *d = sc_cli_model_dir(CMD, given, rc);
  if (!d) return NULL;
  snprintf(dir, sizeof dir, "%s", d);
  free(d);
  return dir;
}

int sc_cli_bench(int argc, char **argv) {
  const char *model_dir = NULL;
  const char *synthetic = NULL, *device = NULL;
  sc_weights_kind weights = SC_WEIGHTS_AUTO;
  int canvases[16] = {16, 32, 64, 128}, n_canvas = 4;
  int contexts[16] = {512, 4096}, n_context = 0;
  int context = 512, per_step = 4, repeat = 3, block = 32;
  bool repeat_set = false, context_set = false, canvas_set = false, step_only = false;
  sc_bench_replay_args ra = {0};
  ra.type_chars = 400;
  ra.eos_penalty = NAN;
  sc_session_options_default(&ra.session);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    /* Flags without a value (--replay's). */
    if (strcmp(o, "--compare") == 0 || strcmp(o, "--no-session") == 0 ||
        strcmp(o, "--json") == 0 || strcmp(o, "--verbose") == 0 || strcmp(o, "--step") == 0) {
      if (strcmp(o, "--step") == 0) step_only = true;
      else if (strcmp(o, "--compare") == 0) ra.compare = true;
      else if (strcmp(o, "--no-session") == 0) ra.no_session = true;
      else if (strcmp(o, "--json") == 0) ra.json = true;
      else ra.verbose = true;
      continue;
    }
    if (!v) {
      sc_cli_fail(CMD, "%s needs a value (see sculpt help bench)", o);
      return 2;
    }
    i++;
    char *end = NULL;
    long x = strtol(v, &end, 10);
    bool num = end && *end == '\0' && x >= 0;
    if (strcmp(o, "--model") == 0) model_dir = v;
    else if (strcmp(o, "--synthetic") == 0) synthetic = v;
    else if (strcmp(o, "--replay") == 0) ra.target = v;
    else if (strcmp(o, "--type") == 0 && num && x >= 1 && x <= 100000) ra.type_chars = (int)x;
    else if (strcmp(o, "--threads") == 0 && num && x <= 1024) ra.threads = (int)x;
    else if (strcmp(o, "--max-reuses") == 0 && num && x <= 1000000) ra.session.max_reuses = (int)x;
    else if (strcmp(o, "--max-edit") == 0 && num && x <= 1000000) ra.session.max_edit = (int)x;
    else if (strcmp(o, "--margin") == 0 && num && x <= 1000000) ra.session.margin = (int)x;
    else if (strcmp(o, "--steps") == 0 && num && x >= 1 && x <= 4096) ra.steps = (int)x;
    else if (strcmp(o, "--eos-penalty") == 0) {
      char *e2 = NULL;
      double ep = strtod(v, &e2);
      if (!e2 || *e2 || !(ep >= -SC_EOS_PENALTY_MAX && ep <= SC_EOS_PENALTY_MAX)) {
        sc_cli_fail(CMD, "--eos-penalty takes -%g to %g", SC_EOS_PENALTY_MAX, SC_EOS_PENALTY_MAX);
        return 2;
      }
      ra.eos_penalty = ep;
    }
    else if (strcmp(o, "--device") == 0) device = v;
    else if (strcmp(o, "--weights") == 0) {
      if (!sc_weights_kind_parse(v, &weights)) {
        sc_cli_fail(CMD, "--weights takes auto, f32, bf16 or int8");
        return 2;
      }
    }
    else if (strcmp(o, "--canvas") == 0) {
      canvas_set = true;
      if (!parse_list(v, canvases, 16, &n_canvas)) {
        sc_cli_fail(CMD, "--canvas takes sizes like 16,32,64,128");
        return 2;
      }
    } else if (strcmp(o, "--context") == 0) {
      /* One size for a checkpoint; a list (512,4096) with --synthetic. */
      if (!parse_list(v, contexts, 16, &n_context) || contexts[0] < 2) {
        sc_cli_fail(CMD, "--context takes a size like 512 (a list with --synthetic)");
        return 2;
      }
      context = contexts[0];
      context_set = true;
    } else if (strcmp(o, "--tokens-per-step") == 0 && num && x >= 1) per_step = (int)x;
    else if (strcmp(o, "--repeat") == 0 && num && x >= 1 && x <= 100000) {
      repeat = (int)x;
      repeat_set = true;
    } else if (strcmp(o, "--block-len") == 0 && num) block = (int)x;
    else {
      sc_cli_fail(CMD, "bad option '%s %s' (see sculpt help bench)", o, v);
      return 2;
    }
  }
  if (ra.target) {
    if (synthetic) {
      sc_cli_fail(CMD, "--replay and --synthetic exclude each other");
      return 2;
    }
    int rc = 0;
    if (!(ra.model_dir = bench_model_dir(model_dir, &rc))) return rc;
    ra.weights = weights;
    ra.context = context_set ? context : 1024;
    ra.canvas = canvas_set ? canvases[0] : 32;
    if ((canvas_set && n_canvas > 1) || n_context > 1) {
      sc_cli_fail(CMD, "--replay takes one --canvas and one --context");
      return 2;
    }
    return sc_bench_replay(&ra);
  }
  if (ra.compare || ra.no_session || ra.json || ra.verbose) {
    sc_cli_fail(CMD, "--compare, --no-session, --json and --verbose go with --replay");
    return 2;
  }
  if (synthetic) {
    if (model_dir) {
      sc_cli_fail(CMD, "--synthetic and --model exclude each other");
      return 2;
    }
    if (n_context == 0) n_context = 2;
    return bench_synthetic(synthetic, device ? device : "cuda", canvases, n_canvas, contexts,
                           n_context, per_step, repeat_set ? repeat : 20);
  }
  if (n_context > 1) {
    sc_cli_fail(CMD, "--context takes one size without --synthetic");
    return 2;
  }
  if (device && strcmp(device, "cpu") != 0) {
    sc_cli_fail(CMD, "a checkpoint is timed on the CPU engine; --device cuda needs --synthetic");
    return 2;
  }
  int resolve_rc = 0;
  if (!(model_dir = bench_model_dir(model_dir, &resolve_rc))) return resolve_rc;
  sc_error err = {0};
  sc_model *model = NULL;
  sc_model_options mo = {0};
  mo.weights = weights;
  mo.n_threads = ra.threads;
  sc_device_choice dev;
  sc_device_select(SC_DEVICE_CPU, &dev);
  mo.device = dev.kind;
  if (sc_model_load(model_dir, &mo, &model, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
  }
  if (step_only) {
    int cv = canvas_set ? canvases[0] : 32, ctxn = context_set ? context : 1024;
    int rc = 2;
    if (ctxn + cv > sc_model_get_info(model)->max_seq)
      sc_cli_fail(CMD, "context %d + canvas %d exceed the model's %d positions", ctxn, cv,
                  sc_model_get_info(model)->max_seq);
    else
      rc = sc_bench_step(model, model_dir, ctxn, cv, repeat_set ? repeat : 5, ra.threads);
    sc_model_free(model);
    return rc;
  }
  const sc_model_info *info = sc_model_get_info(model);
  int max_canvas = 0;
  for (int i = 0; i < n_canvas; i++)
    if (canvases[i] > max_canvas) max_canvas = canvases[i];
  int max_seq = context + max_canvas + 2;
  if (max_seq > info->max_seq) {
    sc_cli_fail(CMD, "context %d + canvas %d exceed the model's %d positions", context,
                max_canvas, info->max_seq);
    sc_model_free(model);
    return 2;
  }
  sc_engine *engine = NULL;
  if (sc_engine_new(model, NULL, max_seq, &engine, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    sc_model_free(model);
    return 1;
  }
  /* Random ordinary ids, the same every run; special ids avoided. */
  int n_pre = context / 2, n_suf = context - n_pre;
  int32_t *ids = malloc((size_t)context * sizeof *ids);
  uint64_t x = 12345;
  for (int i = 0; i < context; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int32_t t = (int32_t)((x >> 33) % (uint64_t)(info->vocab > 64 ? info->vocab - 64 : 1));
    ids[i] = t;
  }
  char cpu[256];
  sc_bench_cpu_name(cpu, sizeof cpu);
  printf("sculpt bench: %s (%s, %d layers, hidden %d, vocab %d, %s; computing in %s)\n",
         model_dir, sc_model_family_name(info->family), info->n_layers, info->hidden,
         info->vocab, sc_dtype_name(info->dtype), sc_weights_kind_name(info->weights));
  printf("machine: %s, %ld threads; device %s\n", cpu, sysconf(_SC_NPROCESSORS_ONLN),
         dev.description);
  printf("schedule: fixed %d tokens per step, blocks of %d, greedy; context %d tokens "
         "(%d before, %d after); best of %d\n\n",
         per_step, block, context, n_pre, n_suf, repeat);
  printf("%7s %6s | %12s %10s %9s | %12s %10s | %8s\n", "canvas", "steps", "cached ms",
         "ms/step", "tok/s", "uncached ms", "ms/step", "speedup");
  int status = 0;
  for (int c = 0; c < n_canvas && status == 0; c++) {
    double best[2] = {0, 0};
    int steps[2] = {0, 0};
    for (int cache = 1; cache >= 0; cache--) {
      sc_infill_params p;
      sc_infill_params_default(&p);
      p.schedule = SC_SCHEDULE_FIXED_K;
      p.block_len = block;
      p.steps = (canvases[c] + per_step - 1) / per_step;
      p.use_cache = cache;
      p.eos_penalty = 1e9f; /* random weights: keep the whole canvas in play */
      sc_infill_plan plan = {1, {canvases[c]}};
      for (int r = 0; r < repeat; r++) {
        sc_infill_result res;
        if (sc_engine_infill(engine, ids, n_pre, ids + n_pre, n_suf, &plan, &p, NULL, NULL,
                             NULL, &res, &err) != SC_OK) {
          sc_cli_fail(CMD, "%s", err.msg);
          status = 1;
          break;
        }
        if (r == 0 || res.ms_total < best[cache]) best[cache] = res.ms_total;
        steps[cache] = res.steps;
        sc_infill_result_free(&res);
      }
    }
    if (status) break;
    printf("%7d %6d | %12.1f %10.2f %9.1f | %12.1f %10.2f | %7.2fx\n", canvases[c],
           steps[1], best[1], best[1] / steps[1], canvases[c] / best[1] * 1000.0, best[0],
           best[0] / steps[0], best[0] / best[1]);
    fflush(stdout);
  }
  free(ids);
  sc_engine_free(engine);
  sc_model_free(model);
  return status;
}

/* cmd_bench.c — `sculpt bench`: the infill engine's speed on a checkpoint.
 * For each canvas size it times whole infills, with and without the K/V
 * cache, under a stated schedule (fixed tokens per step), on random context
 * ids. A benchmark, not a test: it prints numbers and the machine.
 *
 * `sculpt bench --synthetic SHAPE` times random weights at a real model's
 * shapes instead (bench_synth.c): the CUDA step against its roofline, its
 * profile by kernel kind, or whole infills through the engine. */
#define _POSIX_C_SOURCE 200809L
#include "bench_impl.h"
#include "cli.h"
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
  bool profile = false, infill = false;
  const char *variants = "default,graphs=off,attn=simt,head=host,fuse=off";
  const char *chunks = "auto,1,2,4,8,16,32";
  sc_bench_replay_args ra = {0};
  ra.type_chars = 400;
  ra.eos_penalty = NAN;
  sc_session_options_default(&ra.session);
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    /* Flags without a value (--replay's). */
    if (strcmp(o, "--compare") == 0 || strcmp(o, "--no-session") == 0 ||
        strcmp(o, "--json") == 0 || strcmp(o, "--verbose") == 0 || strcmp(o, "--step") == 0 ||
        strcmp(o, "--profile") == 0 || strcmp(o, "--infill") == 0) {
      if (strcmp(o, "--step") == 0) step_only = true;
      else if (strcmp(o, "--profile") == 0) profile = true;
      else if (strcmp(o, "--infill") == 0) infill = true;
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
    else if (strcmp(o, "--variants") == 0) variants = v;
    else if (strcmp(o, "--chunks") == 0) chunks = v;
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
        sc_cli_fail(CMD, "--weights takes " SC_WEIGHTS_KINDS);
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
    if (profile && infill) {
      sc_cli_fail(CMD, "--profile and --infill exclude each other");
      return 2;
    }
    if (n_context == 0) n_context = 2;
    /* --profile and --infill: one canvas (32) unless asked. */
    if ((profile || infill) && !canvas_set) canvases[0] = 32, n_canvas = 1;
    sc_bench_synth_args sa = {synthetic, device ? device : "cuda", canvases, contexts,
                              n_canvas, n_context, per_step, repeat_set ? repeat : 20,
                              block, profile, infill, variants, chunks, weights, ra.threads};
    return sc_bench_synthetic(&sa);
  }
  if (profile || infill) {
    sc_cli_fail(CMD, "--profile and --infill go with --synthetic");
    return 2;
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

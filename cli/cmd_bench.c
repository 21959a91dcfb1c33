/* cmd_bench.c — `sculpt bench`: the infill engine's speed on a checkpoint.
 * For each canvas size it times whole infills, with and without the K/V
 * cache, under a stated schedule (fixed tokens per step), on random context
 * ids. A benchmark, not a test: it prints numbers and the machine. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "bench"

static void cpu_name(char *out, size_t n) {
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

int sc_cli_bench(int argc, char **argv) {
  const char *model_dir = NULL;
  int canvases[16] = {16, 32, 64, 128}, n_canvas = 4;
  int context = 512, per_step = 4, repeat = 3, block = 32;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      sc_cli_fail(CMD, "%s needs a value (see sculpt help bench)", o);
      return 2;
    }
    i++;
    char *end = NULL;
    long x = strtol(v, &end, 10);
    bool num = end && *end == '\0' && x >= 0;
    if (strcmp(o, "--model") == 0) model_dir = v;
    else if (strcmp(o, "--canvas") == 0) {
      if (!parse_list(v, canvases, 16, &n_canvas)) {
        sc_cli_fail(CMD, "--canvas takes sizes like 16,32,64,128");
        return 2;
      }
    } else if (strcmp(o, "--context") == 0 && num && x >= 2) context = (int)x;
    else if (strcmp(o, "--tokens-per-step") == 0 && num && x >= 1) per_step = (int)x;
    else if (strcmp(o, "--repeat") == 0 && num && x >= 1) repeat = (int)x;
    else if (strcmp(o, "--block-len") == 0 && num) block = (int)x;
    else {
      sc_cli_fail(CMD, "bad option '%s %s' (see sculpt help bench)", o, v);
      return 2;
    }
  }
  if (!model_dir) model_dir = sc_model_default_dir();
  if (!model_dir) {
    sc_cli_fail(CMD, "no model: pass --model DIR or set SCULPT_MODEL");
    return 2;
  }
  sc_error err = {0};
  sc_model *model = NULL;
  sc_model_options mo = {0};
  sc_device_choice dev;
  sc_device_select(SC_DEVICE_CPU, &dev);
  mo.device = dev.kind;
  if (sc_model_load(model_dir, &mo, &model, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
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
  cpu_name(cpu, sizeof cpu);
  printf("sculpt bench: %s (%s, %d layers, hidden %d, vocab %d, %s)\n", model_dir,
         sc_model_family_name(info->family), info->n_layers, info->hidden, info->vocab,
         sc_dtype_name(info->dtype));
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

/* cmd_logits.c — `sculpt logits`: one forward pass over a list of ids, the
 * raw lm_head outputs (before any logit shift) written as little-endian f32,
 * row-major [n_ids][vocab]. Exit 2 on usage or input errors, 1 on failures. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "12,345,6" (commas or blanks) -> ids; false with a reason on bad input. */
static bool parse_ids(const char *s, int32_t **out, int *n_out, char *why, size_t why_len) {
  size_t cap = 16, n = 0;
  int32_t *ids = malloc(cap * sizeof *ids);
  if (!ids) return snprintf(why, why_len, "out of memory"), false;
  const char *p = s;
  for (;;) {
    while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || v > INT32_MAX ||
        (*end && *end != ',' && *end != ' ' && *end != '\t' && *end != '\n')) {
      snprintf(why, why_len, "--ids: '%.20s' is not a non-negative integer", p);
      free(ids);
      return false;
    }
    if (n == cap) {
      int32_t *grown = realloc(ids, 2 * cap * sizeof *ids);
      if (!grown) {
        free(ids);
        return snprintf(why, why_len, "out of memory"), false;
      }
      ids = grown, cap *= 2;
    }
    ids[n++] = (int32_t)v;
    p = end;
  }
  if (n == 0 || n > (1u << 20)) {
    snprintf(why, why_len, "--ids: give 1 to 1048576 ids");
    free(ids);
    return false;
  }
  *out = ids;
  *n_out = (int)n;
  return true;
}

static bool write_le_f32(const char *path, const float *x, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = true;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  for (size_t i = 0; ok && i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], 4);
    u = __builtin_bswap32(u);
    ok = fwrite(&u, 4, 1, f) == 1;
  }
#else
  ok = fwrite(x, sizeof(float), n, f) == n;
#endif
  if (fclose(f) != 0) ok = false;
  if (!ok) unlink(path);
  return ok;
}

int sc_cli_logits(int argc, char **argv) {
  const char *dir = NULL, *ids_arg = NULL, *out_path = NULL, *dev_arg = "cpu",
             *family_arg = NULL, *weights_arg = NULL;
  int threads = 0, repeat = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_val = i + 1 < argc;
    if (strcmp(a, "--model") == 0 && has_val) dir = argv[++i];
    else if (strcmp(a, "--ids") == 0 && has_val) ids_arg = argv[++i];
    else if (strcmp(a, "--out") == 0 && has_val) out_path = argv[++i];
    else if (strcmp(a, "--device") == 0 && has_val) dev_arg = argv[++i];
    else if (strcmp(a, "--family") == 0 && has_val) family_arg = argv[++i];
    else if (strcmp(a, "--threads") == 0 && has_val) threads = atoi(argv[++i]);
    else if (strcmp(a, "--weights") == 0 && has_val) weights_arg = argv[++i];
    /* Benchmarking aid: run the forward pass N more times and log the time. */
    else if (strcmp(a, "--repeat") == 0 && has_val) repeat = atoi(argv[++i]);
    else {
      sc_cli_fail("logits", "unexpected argument '%s' (see sculpt help logits)", a);
      return 2;
    }
  }
  if (!dir || !ids_arg || !out_path) {
    sc_cli_fail("logits", "--model, --ids and --out are required (see sculpt help logits)");
    return 2;
  }
  sc_device_kind dev;
  if (!sc_device_kind_parse(dev_arg, &dev)) {
    sc_cli_fail("logits", "--device: '%s' is not auto, cpu or cuda", dev_arg);
    return 2;
  }
  sc_model_options opts = {0};
  if (family_arg && !sc_model_family_parse(family_arg, &opts.family)) {
    sc_cli_fail("logits", "--family: '%s' is not dream, qwen2, qwen3 or llada", family_arg);
    return 2;
  }
  if (weights_arg && !sc_weights_kind_parse(weights_arg, &opts.weights)) {
    sc_cli_fail("logits", "--weights: '%s' is not " SC_WEIGHTS_KINDS, weights_arg);
    return 2;
  }
  if (threads < 0 || repeat < 0) {
    sc_cli_fail("logits", "--threads and --repeat must not be negative");
    return 2;
  }
  int32_t *ids = NULL;
  int n = 0;
  char why[160];
  if (!parse_ids(ids_arg, &ids, &n, why, sizeof why)) {
    sc_cli_fail("logits", "%s", why);
    return 2;
  }
  sc_device_choice choice;
  sc_device_select(dev, &choice);
  opts.device = choice.kind;
  opts.max_seq = n;
  opts.n_threads = threads;

  int rc = 1;
  sc_error err = {0};
  sc_model *model = NULL;
  sc_forward_ctx *ctx = NULL;
  float *logits = NULL;
  char *resolved = NULL;
  if (sc_model_resolve(dir, &resolved, &err) != SC_OK) goto fail;
  sc_status loaded = sc_model_load(resolved, &opts, &model, &err);
  free(resolved);
  if (loaded != SC_OK) goto fail;
  const sc_model_info *info = sc_model_get_info(model);
  if (sc_forward_ctx_new(model, n, &ctx, &err) != SC_OK) goto fail;
  logits = malloc((size_t)n * (size_t)info->vocab * sizeof *logits);
  if (!logits) {
    sc_error_set(&err, SC_ERR_NOMEM, "cannot allocate %d x %d logits", n, info->vocab);
    goto fail;
  }
  if (sc_forward_ctx_run(ctx, ids, n, NULL, n, logits, &err) != SC_OK) goto fail;
  if (repeat > 0) {
    double best = 1e300, t0 = sc_now_ms();
    for (int r = 0; r < repeat; r++) {
      double t = sc_now_ms();
      if (sc_forward_ctx_run(ctx, ids, n, NULL, n, logits, &err) != SC_OK) goto fail;
      t = sc_now_ms() - t;
      best = t < best ? t : best;
    }
    SC_LOG_INFO("logits: %d forward passes of %d tokens: mean %.3f ms, best %.3f ms", repeat,
                n, (sc_now_ms() - t0) / repeat, best);
  }
  if (!write_le_f32(out_path, logits, (size_t)n * (size_t)info->vocab)) {
    sc_error_set(&err, SC_ERR_IO, "%s: cannot write: %s", out_path, strerror(errno));
    goto fail;
  }
  rc = 0;
  goto done;
fail:
  sc_cli_fail("logits", "%s", err.msg);
  rc = err.status == SC_ERR_INVALID ? 2 : 1;
done:
  free(logits);
  sc_forward_ctx_free(ctx);
  sc_model_free(model);
  free(ids);
  return rc;
}

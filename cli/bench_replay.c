/* bench_replay.c — `sculpt bench --replay FILE[:LINE:COL]`: the keystroke
 * latency of the engine, as an editor drives it, without the LSP around it.
 *
 * The N characters before LINE:COL (default: the N after the start of the
 * file's middle line) are removed from the file and typed back one at a
 * time; at every pause (after a character that ends a word: a space, a
 * newline, punctuation) and at the end, one infill is asked at the cursor,
 * as the LSP's automatic trigger does: the prompt is fitted to --context
 * tokens as every caller fits it (model.h, sc_infill_fit_plan and
 * sc_infill_fit: the prefix cut from the left first, down to half the
 * room, then the suffix from its end, a cut suffix framed without its
 * EOS), the canvas --canvas tokens, the
 * family's default preset (sc_infill_params_for; the upstream preset
 * recomputes in full, so its requests reuse nothing). Requests go through one
 * session (model.h, "sessions"), so each reuses the K/V of the one before;
 * --no-session runs each in full instead. With --compare, a second engine
 * runs every request in full too, and the texts are compared.
 *
 * The prompt window's start is kept where it was while the prefix still
 * fits (with --context / 8 positions of slack beyond the fit), and moved in
 * one jump to the fit's start when it does not: a window that slides by a token at every keystroke
 * would move every cached position (the LSP's context assembly should do
 * the same for sessions to pay off).
 *
 * Prints the first request (a full pass), then p50 / p90 / max of the rest,
 * the reuse, the steps, and the agreement; --json prints one object. */
#define _POSIX_C_SOURCE 200809L
#include "bench_impl.h"
#include "cli.h"
#include "model.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "bench"

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *xs, int n, double q) {
  if (n <= 0) return 0;
  qsort(xs, (size_t)n, sizeof *xs, cmp_dbl);
  int i = (int)(q / 100.0 * (n - 1) + 0.5);
  return xs[i < n ? i : n - 1];
}

/* A pause follows a character that ends a word. */
static bool ends_word(char c) {
  return c == ' ' || c == '\n' || c == '\t' || (ispunct((unsigned char)c) && c != '_');
}

typedef struct replay_req {
  double ms, ms_full;
  int kv_reused, steps, n_ctx;
  bool same;
} replay_req;

int sc_bench_replay(const sc_bench_replay_args *a) {
  char *path = NULL, *text = NULL;
  size_t len = 0, offset = 0;
  long line = 0, col = 0;
  int rc = 2;
  bool at = strchr(a->target, ':') != NULL &&
            sc_cli_locate(a->target, &path, NULL, 0, NULL, true, &line, &col) == 0;
  if (!at) path = strdup(a->target);
  if (!path || !sc_cli_read_file(path, &text, &len)) {
    sc_cli_fail(CMD, "--replay: cannot read %s", path ? path : a->target);
    free(path);
    return 2;
  }
  if (at) {
    if (sc_cli_locate(a->target, &path, text, len, &offset, false, &line, &col) != 0) {
      sc_cli_fail(CMD, "--replay: %s is not a position in the file", a->target);
      goto out;
    }
  } else {
    /* The start of the middle line, plus what will be typed. */
    size_t mid = len / 2;
    while (mid > 0 && text[mid - 1] != '\n') mid--;
    offset = mid + (size_t)a->type_chars < len ? mid + (size_t)a->type_chars : len;
  }
  size_t start = offset > (size_t)a->type_chars ? offset - (size_t)a->type_chars : 0;
  if (offset - start < 1) {
    sc_cli_fail(CMD, "--replay: nothing to type before that position");
    goto out;
  }
  rc = 1;
  sc_error err = {0};
  sc_model *model = NULL;
  sc_tokenizer *tok = NULL;
  sc_engine *e = NULL, *ref = NULL;
  sc_infill_session *session = NULL;
  replay_req *reqs = NULL;
  int32_t *pre = NULL, *suf = NULL;
  char *doc = NULL; /* the document being typed */
  double *lat = NULL, *latf = NULL;
  sc_model_options mo = {0};
  mo.weights = a->weights;
  mo.n_threads = a->threads;
  mo.device = SC_DEVICE_CPU;
  const int m = a->canvas;
  int budget = a->context;
  if (sc_model_load(a->model_dir, &mo, &model, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  /* The family's own decoding (its default preset), then the flags. */
  sc_infill_params p;
  sc_infill_params_for(model, SC_PRESET_AUTO, &p);
  if (a->steps > 0) {
    p.schedule = SC_SCHEDULE_FIXED_K;
    p.steps = a->steps;
  }
  if (!isnan(a->eos_penalty)) p.eos_penalty = (float)a->eos_penalty;
  /* Fitted as every caller fits (model.h, sc_infill_fit_plan): the
   * family's frame, the canvas, then the prompt. --context is held to 8/9
   * of the prompt's room so that the window's slack (1/8 of it, below)
   * stays within the model's positions too. */
  sc_infill_plan plan = {1, {m}};
  sc_infill_budget fit;
  const int ctx = sc_model_get_info(model)->max_seq;
  if (sc_infill_fit_plan(model, ctx, 0, &plan, &p, &fit, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  if (budget > fit.prompt * 8 / 9) budget = fit.prompt * 8 / 9;
  if (budget < 16) {
    sc_cli_fail(CMD, "a %d-token canvas leaves no room in the model's %d positions", m, ctx);
    goto done;
  }
  const int slack = budget / 8;
  if (sc_infill_fit_plan(model, ctx, budget, &plan, &p, &fit, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  const int max_seq = sc_infill_positions(&fit, (size_t)fit.prompt_cut + (size_t)slack, 0, false);
  if (sc_tokenizer_load_dir(a->model_dir, &tok, &err) != SC_OK ||
      sc_engine_new(model, tok, max_seq, &e, &err) != SC_OK ||
      (a->compare && sc_engine_new(model, tok, max_seq, &ref, &err) != SC_OK) ||
      sc_infill_session_new(&a->session, &session, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  const sc_model_info *info = sc_model_get_info(model);
  /* The document being typed: text without [start, offset), then grows. */
  doc = malloc(len + 1);
  reqs = calloc(offset - start + 1, sizeof *reqs);
  if (!doc || !reqs) {
    sc_cli_fail(CMD, "out of memory");
    goto done;
  }
  memcpy(doc, text, start);
  size_t cur = start;
  const char *after = text + offset;
  const size_t after_len = len - offset;
  int nreq = 0;
  size_t anchor = 0; /* prefix tokens dropped from the left (kept stable) */
  bool anchored = false;
  for (size_t k = start; k <= offset; k++) {
    if (k > start) doc[cur++] = text[k - 1];
    bool pause = k == offset || (k > start && ends_word(text[k - 1]));
    if (!pause) continue;
    size_t n_pre = 0, n_suf = 0;
    free(pre);
    free(suf);
    pre = suf = NULL;
    if (sc_tokenizer_encode(tok, doc, cur, &pre, &n_pre, &err) != SC_OK ||
        sc_tokenizer_encode(tok, after, after_len, &suf, &n_suf, &err) != SC_OK) {
      sc_cli_fail(CMD, "%s", err.msg);
      goto done;
    }
    size_t keep_pre = 0, keep_suf = 0;
    sc_infill_fit(&fit, n_pre, n_suf, &keep_pre, &keep_suf, &p.suffix_cut);
    /* The window's left edge moves only when the prefix outgrows the fit
     * plus the slack, and then to the fit's start (the slack free again). */
    if (!anchored || n_pre - anchor > keep_pre + (size_t)slack || anchor > n_pre) {
      anchor = n_pre - keep_pre;
      anchored = true;
    }
    const int np = (int)(n_pre - anchor);
    replay_req *r = &reqs[nreq];
    sc_infill_result res = {0}, full = {0};
    if (sc_engine_infill_session(e, a->no_session ? NULL : session, pre + anchor, np, suf,
                                 (int)keep_suf, &plan, &p, NULL, NULL, NULL, &res,
                                 &err) != SC_OK) {
      sc_cli_fail(CMD, "%s", err.msg);
      goto done;
    }
    r->ms = res.ms_total;
    r->kv_reused = res.kv_reused;
    r->steps = res.steps;
    r->n_ctx = np + (int)keep_suf;
    if (ref) {
      if (sc_engine_infill(ref, pre + anchor, np, suf, (int)keep_suf, &plan, &p, NULL, NULL,
                           NULL, &full, &err) != SC_OK) {
        sc_infill_result_free(&res);
        sc_cli_fail(CMD, "%s", err.msg);
        goto done;
      }
      r->ms_full = full.ms_total;
      r->same = res.text_len == full.text_len &&
                memcmp(res.text ? res.text : "", full.text ? full.text : "", res.text_len) == 0;
    }
    if (a->verbose)
      fprintf(stderr, "request %3d: %5d context tokens, %8.1f ms, %2d steps, %5d reused%s\n",
              nreq, r->n_ctx, r->ms, r->steps, r->kv_reused,
              ref ? (r->same ? ", same text" : ", different text") : "");
    sc_infill_result_free(&res);
    sc_infill_result_free(&full);
    nreq++;
  }
  lat = malloc((size_t)nreq * sizeof *lat);
  latf = malloc((size_t)nreq * sizeof *latf);
  if (!lat || !latf) {
    sc_cli_fail(CMD, "out of memory");
    goto done;
  }
  int reused = 0, same = 0, steps = 0, rest = nreq - 1;
  for (int i = 1; i < nreq; i++) {
    lat[i - 1] = reqs[i].ms;
    latf[i - 1] = reqs[i].ms_full;
    reused += reqs[i].kv_reused > 0;
  }
  for (int i = 0; i < nreq; i++) {
    same += reqs[i].same;
    steps += reqs[i].steps;
  }
  double p50 = pct(lat, rest, 50), p90 = pct(lat, rest, 90), mx = pct(lat, rest, 100);
  double f50 = ref ? pct(latf, rest, 50) : 0;
  char cpu[256];
  sc_bench_cpu_name(cpu, sizeof cpu);
  if (a->json) {
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:i, s:f, s:b, s:i, s:i, "
        "s:i}",
        "model", a->model_dir, "weights", sc_weights_kind_name(info->weights), "machine", cpu,
        "requests", nreq, "context", budget, "canvas", plan.lengths[0], "typed", (int)(offset - start),
        "first_ms", nreq ? reqs[0].ms : 0.0, "p50_ms", p50, "p90_ms", p90, "max_ms", mx,
        "reused_requests", reused, "mean_steps", nreq ? (double)steps / nreq : 0.0,
        "session", !a->no_session, "max_reuses", a->session.max_reuses, "max_edit",
        a->session.max_edit, "margin", a->session.margin);
    if (o && ref) {
      json_object_set_new(o, "same_text", json_integer(same));
      json_object_set_new(o, "full_p50_ms", json_real(f50));
    }
    char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    if (s) puts(s);
    free(s);
    json_decref(o);
  } else {
    printf("sculpt bench --replay %s: %d characters typed, %d requests (one per pause)\n",
           a->target, (int)(offset - start), nreq);
    printf("model %s (%d layers, hidden %d, %s weights computing in %s), context %d tokens "
           "(fitted as sculpt complete fits it), canvas %d, %s preset (%s), %s decoding\n",
           a->model_dir, info->n_layers, info->hidden, sc_dtype_name(info->dtype),
           sc_weights_kind_name(info->weights), budget, plan.lengths[0], sc_preset_name(p.preset),
           sc_model_get_profile(model)->name,
           p.schedule == SC_SCHEDULE_THRESHOLD ? "threshold 0.9" : "fixed-k");
    if (a->steps > 0) printf("schedule: fixed-k, %d steps for the canvas\n", a->steps);
    printf("machine: %s; %s\n", cpu,
           a->no_session ? "no session: every request in full"
                         : "one session: K/V reused across requests");
    printf("first request: %.1f ms\n", nreq ? reqs[0].ms : 0.0);
    printf("pause -> result after the first: p50 %.1f ms, p90 %.1f ms, max %.1f ms "
           "(engine time; %.1f steps per request)\n",
           p50, p90, mx, nreq ? (double)steps / nreq : 0.0);
    if (!a->no_session)
      printf("reused the previous request's K/V in %d of %d requests (max_reuses %d, "
             "max_edit %d, margin %d)\n",
             reused, rest, a->session.max_reuses, a->session.max_edit, a->session.margin);
    if (ref)
      printf("same text as a full recompute: %d of %d requests (%.1f%%); full recompute "
             "p50 %.1f ms\n",
             same, nreq, nreq ? 100.0 * same / nreq : 0.0, f50);
  }
  rc = 0;
done:
  free(lat);
  free(latf);
  free(doc);
  free(pre);
  free(suf);
  free(reqs);
  sc_infill_session_free(session);
  sc_engine_free(ref);
  sc_engine_free(e);
  sc_tokenizer_free(tok);
  sc_model_free(model);
out:
  free(path);
  free(text);
  return rc;
}

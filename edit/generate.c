/* generate.c — candidates from the local diffusion engine: the prompt
 * around a site (token windows, canvas lengths by site kind), one candidate
 * per seed, and the greedy candidates of many holes in shared forward
 * passes (sc_engine_infill_many). */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */
#include "edit_impl.h"

#include <stdlib.h>
#include <string.h>

#define BYTES_PER_TOKEN 8 /* text window = tokens x this, then trimmed by tokens */

struct sc_edit_local {
  sc_engine *engine;
  const sc_tokenizer *tok;
  const sc_model *model;
  int max_tokens, context_tokens;
  double temperature;
  sc_infill_params params;
  const _Atomic int *cancel;
};

void sc_edit_request_window(const sc_edit_request *req, size_t context_tokens,
                            size_t *prefix_start, size_t *suffix_end) {
  size_t pw = context_tokens * BYTES_PER_TOKEN, sw = pw / 4 + 256;
  size_t a = req->site.start, b = req->site.end;
  *prefix_start = a > pw ? a - pw : 0;
  *suffix_end = req->len - b > sw ? b + sw : req->len;
}

/* A hole or a block gets one canvas of max_tokens; a re-infill (diagnostic,
 * query) is usually close to its span's own size, so it tries lengths near
 * that, at most twice max_tokens. */
static void plan_for(const sc_edit_local *l, const sc_edit_request *req, sc_infill_plan *plan) {
  memset(plan, 0, sizeof *plan);
  if (req->site.kind == SC_EDIT_HOLE || req->site.kind == SC_EDIT_BLOCK) {
    plan->n_lengths = 1;
    plan->lengths[0] = l->max_tokens;
    return;
  }
  int32_t *old = NULL;
  size_t n_old = 0;
  sc_tokenizer_encode(l->tok, req->text + req->site.start, req->site.end - req->site.start, &old,
                      &n_old, NULL);
  free(old);
  int base = (int)n_old;
  int want[3] = {base + 8, 2 * base + 16, l->max_tokens};
  for (int i = 0; i < 3; i++) {
    int len = want[i] > 2 * l->max_tokens ? 2 * l->max_tokens : want[i];
    bool dup = false;
    for (int k = 0; k < plan->n_lengths; k++) dup |= plan->lengths[k] == len;
    if (!dup) plan->lengths[plan->n_lengths++] = len;
  }
}

/* The request's prompt, plan and parameters (from p), fitted as every
 * caller fits (model.h, sc_infill_prepare): the family's frame, the canvas
 * and a DreamOn canvas's growth within half the engine's context,
 * context_tokens of prompt at most, the prefix cut first down to half, then
 * the suffix, which then ends without EOS; a suffix window that stops
 * before the file's end is cut too. *out owned by the caller. */
static sc_status prompt_for(const sc_edit_local *l, const sc_edit_request *req,
                            const sc_infill_params *p, sc_infill_prepared *out, sc_error *err) {
  size_t p0, s1, a = req->site.start, b = req->site.end;
  sc_edit_request_window(req, (size_t)l->context_tokens, &p0, &s1);
  sc_infill_plan plan;
  plan_for(l, req, &plan);
  return sc_infill_prepare(l->model, l->tok, sc_engine_context(l->engine), l->context_tokens,
                           req->text + p0, a - p0, req->text + b, s1 - b, s1 < req->len, &plan,
                           p, out, err);
}

/* The infill's text and its mean per-token confidence into out (the text
 * is moved out of res). */
static void take_result(sc_infill_result *res, sc_edit_candidate *out) {
  double conf = 0;
  for (int i = 0; i < res->n_ids; i++) conf += res->confidence[i];
  out->confidence = res->n_ids ? conf / res->n_ids : 0;
  if (res->text) {
    out->text = res->text;
    out->len = res->text_len;
    res->text = NULL;
  } else {
    out->text = sc_edit__dupn("", 0);
    out->len = 0;
  }
  sc_infill_result_free(res);
}

static sc_status local_generate(void *user, const sc_edit_request *req, sc_edit_candidate *out,
                                sc_error *err) {
  sc_edit_local *l = user;
  memset(out, 0, sizeof *out);
  sc_infill_params p = l->params;
  p.seed = req->seed;
  p.temperature = req->seed ? l->temperature : 0.0;
  sc_infill_prepared prep;
  SC_TRY(prompt_for(l, req, &p, &prep, err));
  sc_infill_result res;
  memset(&res, 0, sizeof res);
  sc_status st = sc_engine_infill_prepared(l->engine, &prep, l->cancel, NULL, NULL, &res, err);
  sc_infill_prepared_free(&prep);
  if (st != SC_OK) {
    sc_infill_result_free(&res);
    return st;
  }
  take_result(&res, out);
  SC_CHECK(out->text, err, SC_ERR_NOMEM, "out of memory");
  return SC_OK;
}

/* The greedy candidates of the requests with one canvas length (holes and
 * blocks) decoded together: each forward pass serves up to
 * SC_INFILL_MAX_BATCH of them. One length each, so the batch gives what
 * decoding each alone would. Fewer than two such requests: nothing. */
static sc_status local_generate_many(void *user, const sc_edit_request *reqs, size_t n,
                                     sc_edit_candidate *outs, int *passes_out, sc_error *err) {
  sc_edit_local *l = user;
  for (size_t i = 0; i < n; i++) memset(&outs[i], 0, sizeof outs[i]);
  if (passes_out) *passes_out = 0;
  sc_infill_request *ereqs = calloc(n ? n : 1, sizeof *ereqs);
  sc_infill_result *res = calloc(n ? n : 1, sizeof *res);
  int32_t **bufs = calloc(2 * (n ? n : 1), sizeof *bufs);
  size_t *idx = calloc(n ? n : 1, sizeof *idx);
  size_t m = 0;
  sc_status st = SC_OK;
  if (!ereqs || !res || !bufs || !idx) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == SC_OK && i < n; i++) {
    if (reqs[i].site.kind != SC_EDIT_HOLE && reqs[i].site.kind != SC_EDIT_BLOCK) continue;
    /* Fitted with the batch's parameters (fixed-length canvases); whether
     * each suffix was cut goes with its request. */
    sc_infill_params fp = l->params;
    fp.no_expand = true;
    sc_infill_prepared prep;
    if (prompt_for(l, &reqs[i], &fp, &prep, NULL) != SC_OK) continue;
    sc_infill_tokens *t = &prep.tokens;
    bufs[2 * m] = t->pre;
    bufs[2 * m + 1] = t->suf;
    ereqs[m] = (sc_infill_request){t->pre + (t->n_pre - t->keep_pre), (int)t->keep_pre, t->suf,
                                   (int)t->keep_suf, prep.plan.lengths[0], 0, t->suffix_cut};
    idx[m++] = i;
  }
  sc_infill_params p = l->params;
  p.seed = 0;
  p.temperature = 0.0;
  int passes = 0;
  if (st == SC_OK && m > 1) {
    st = sc_engine_infill_many(l->engine, ereqs, (int)m, &p, l->cancel, res, &passes, err);
    if (st == SC_OK) {
      for (size_t i = 0; i < m; i++) take_result(&res[i], &outs[idx[i]]);
      if (passes_out) *passes_out = passes;
    }
  }
  for (size_t i = 0; bufs && i < 2 * m; i++) free(bufs[i]);
  free(bufs);
  free(ereqs);
  free(res);
  free(idx);
  return st;
}

sc_status sc_edit_local_new(sc_engine *engine, const sc_tokenizer *tok, const sc_model *model,
                            const sc_edit_local_options *o, sc_edit_local **out, sc_error *err) {
  *out = NULL;
  sc_edit_local *l = calloc(1, sizeof *l);
  SC_CHECK(l, err, SC_ERR_NOMEM, "out of memory");
  l->engine = engine;
  l->tok = tok;
  l->model = model;
  l->max_tokens = o && o->max_tokens > 0 ? o->max_tokens : 32;
  l->context_tokens = o && o->context_tokens > 0 ? o->context_tokens : 1024;
  l->temperature = o && o->temperature > 0 ? o->temperature : 0.8;
  if (o && o->params) l->params = *o->params;
  else sc_infill_params_default(&l->params);
  l->cancel = o ? o->cancel : NULL;
  *out = l;
  return SC_OK;
}

void sc_edit_local_free(sc_edit_local *l) { free(l); }

sc_edit_generator sc_edit_local_generator(sc_edit_local *l) {
  return (sc_edit_generator){local_generate, local_generate_many, l, false};
}

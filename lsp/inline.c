/* inline.c — the completion requests: textDocument/inlineCompletion (LSP
 * 3.18 ghost text) and textDocument/completion for clients without it. The
 * handler, on the loop, answers at once what needs no model (a language
 * that is off, a document out of sync or too large, no model, text the
 * cache serves) and otherwise copies what the job needs: the windows around
 * the cursor, the settings, a syntax snapshot, the prompt extras. The job,
 * on the model lane, waits out the debounce of an automatic trigger, parses
 * the snapshot (the loop never parses: in a buffer full of errors a parse
 * takes up to seconds) and plans by it (nothing inside a comment or a
 * string), builds the prompt and decodes on the local engine (or hands the
 * prompt to the remote backend), and shapes the answer. The
 * debounce adapts to the user's typing rhythm, which document changes
 * feed.
 *
 * Threads: handlers and complete_done run on the loop and only copy; the
 * job touches the model, tokenizer and engine on the model lane. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The repair's model call on the local engine (sc_repair_fill_fn): the
 * prompt and the candidate's good head before a canvas the size of the
 * broken span (plus room), its tail and the suffix after, fitted to the
 * model's context as the first call was. Its time and steps are added up
 * for the request's data. */
typedef struct local_fill_ctx {
  complete_arg *a;
  sc_job *job;
  const char *before, *after; /* snippets + prefix window; the suffix window */
  size_t before_len, after_len;
  bool after_cut;
  const sc_infill_params *params;
  int prompt; /* the first call's fitted prompt tokens */
  int canvas; /* and its longest canvas */
  double repair_ms;
  int repair_steps;
} local_fill_ctx;

static sc_status local_fill(void *user, const char *head, size_t head_len, const char *span,
                            size_t span_len, const char *tail, size_t tail_len, char **out,
                            size_t *out_len, sc_error *err) {
  local_fill_ctx *f = user;
  complete_arg *a = f->a;
  sc_completer *c = a->c;
  int32_t *old = NULL;
  size_t n_old = 0;
  sc_tokenizer_encode(c->tok, span, span_len, &old, &n_old, NULL);
  free(old);
  int m = (int)n_old + 4;
  if (m > a->set.max_tokens) m = a->set.max_tokens;
  sc_infill_plan plan = {1, {m}};
  sc_infill_params p = *f->params;
  p.drafts = NULL; /* the drafts were for the first call's canvas */
  p.n_drafts = 0;
  sc_infill_budget fit;
  /* The positions of the first call: its prompt and the canvas this one's
   * head, span and tail came from. So the prompt is not cut (it starts and
   * ends where the first call's did) and the K/V session, which this call
   * leaves in the engine, still matches the next request's prompt. */
  int budget = f->prompt + (f->canvas > m ? f->canvas - m : 0);
  SC_TRY(sc_infill_fit_plan(c->model, sc_engine_context(c->engine), budget, &plan, &p, &fit,
                            err));
  char *b = malloc(f->before_len + head_len + 1);
  char *e = malloc(tail_len + f->after_len + 1);
  if (!b || !e) {
    free(b);
    free(e);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  memcpy(b, f->before, f->before_len);
  memcpy(b + f->before_len, head, head_len);
  memcpy(e, tail, tail_len);
  memcpy(e + tail_len, f->after, f->after_len);
  int32_t *pre = NULL, *suf = NULL;
  size_t n_pre = 0, keep_pre = 0, keep_suf = 0;
  sc_status st = sc_cpl__encode_context(c, b, f->before_len + head_len, e,
                                        tail_len + f->after_len, f->after_cut, &fit, &pre,
                                        &n_pre, &keep_pre, &suf, &keep_suf, NULL, &p.suffix_cut,
                                        err);
  free(b);
  free(e);
  if (st != SC_OK) return st;
  sc_infill_result res;
  atomic_fetch_add(&c->engine_calls, 1);
  /* The repair's prompt is the same document: its session reuses too. */
  st = sc_engine_infill_session(c->engine, sc_cpl__session_for(c, f->job->uri, a->set.kv_reuse),
                                pre + (n_pre - keep_pre), (int)keep_pre, suf, (int)keep_suf,
                                &plan, &p, &f->job->cancel, NULL, NULL, &res, err);
  free(pre);
  free(suf);
  if (st != SC_OK) return st;
  f->repair_ms += res.ms_total;
  f->repair_steps += res.steps;
  *out = res.text ? sc_memdup(res.text, res.text_len) : strdup("");
  *out_len = res.text ? res.text_len : 0;
  sc_infill_result_free(&res);
  return *out ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
}

/* The canvas lengths for the request: what remained of a suggestion the
 * typing left, else the syntax plan's (within maxTokens, no repeats; each
 * extra length is a whole extra decode, so by default only the plan's
 * middle one runs: setting lengthCandidates), else maxTokens (24 at most
 * for one line). *reconditioned: the first case. On the model lane (the
 * tokenizer is its). */
static sc_infill_plan canvas_plan(const complete_arg *a, int *reconditioned) {
  sc_completer *c = a->c;
  sc_infill_plan plan = {0};
  *reconditioned = 0;
  if (a->rest && c->tok) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (sc_tokenizer_encode(c->tok, a->rest, strlen(a->rest), &ids, &n, NULL) == SC_OK && n) {
      *reconditioned = (int)(n < (size_t)a->set.max_tokens ? n : (size_t)a->set.max_tokens);
      plan.n_lengths = 1;
      plan.lengths[0] = *reconditioned;
    }
    free(ids);
  }
  if (a->tree && plan.n_lengths == 0) {
    sc_infill_plan from;
    sc_completion_plan_to_infill(&a->plan, &from);
    int want = a->set.length_candidates < from.n_lengths ? a->set.length_candidates
                                                          : from.n_lengths;
    int first = (from.n_lengths - want) / 2;
    for (int i = first; i < first + want; i++) {
      int m = from.lengths[i] < a->set.max_tokens ? from.lengths[i] : a->set.max_tokens;
      bool seen = false;
      for (int k = 0; k < plan.n_lengths; k++) seen |= plan.lengths[k] == m;
      if (!seen && m > 0) plan.lengths[plan.n_lengths++] = m;
    }
  }
  if (plan.n_lengths == 0) {
    int m = a->set.max_tokens;
    if (a->single_line && m > 24) m = 24;
    plan.n_lengths = 1;
    plan.lengths[0] = m;
  }
  return plan;
}

/* The remote backend's part of the job: the prompt (snippets and the
 * prefix window) and the suffix, fitted to the backend's context when it is
 * known; the request goes out on the loop (complete_done). */
static json_t *remote_prompt_job(complete_arg *a, double t0, sc_error *err) {
  sc_infill_budget fit = sc_cpl__remote_fit(&a->set, a->remote_context, a->set.max_tokens);
  const char *before;
  size_t before_len, n_snippets;
  char *joined =
      sc_cpl__prompt_before(a, fit.prompt, &before, &before_len, &n_snippets, NULL);
  sc_status st = sc_cpl__remote_cut(a, &fit, before, before_len, err);
  free(joined);
  if (st != SC_OK) return NULL;
  a->n_snippets = n_snippets;
  a->r_canvas = fit.canvas;
  a->ctx_ms = sc_now_ms() - t0;
  return json_null();
}

/* The data of an answer that needed no model: why, and how long it took. */
static json_t *skipped_data(double t_request, const char *why) {
  return json_pack("{s:b, s:s, s:f}", "cached", 0, "skipped", why, "totalMs",
                   sc_now_ms() - t_request);
}

static json_t *complete_job(sc_job *job, void *argp, sc_error *err) {
  complete_arg *a = argp;
  sc_completer *c = a->c;
  /* Debounce (automatic triggers only), in steps so a newer edit or request
   * cancels it at once. */
  if (!sc_job_wait(job, a->debounce_ms)) {
    sc_error_set(err, SC_ERR_CANCELLED, "cancelled while waiting");
    return NULL;
  }
  /* What belongs at the cursor, from the syntax tree: nothing inside a
   * comment or a string, one line mid-line, a body for an empty block. */
  if (a->syn) {
    sc_error perr = {0};
    sc_syntax_tree *tree = sc_syntax_snapshot_parse(a->syn, job, &perr);
    if (!tree && sc_job_cancelled(job) != SC_JOB_LIVE) {
      sc_error_set(err, SC_ERR_CANCELLED, "cancelled while parsing");
      return NULL;
    }
    sc_completion_plan plan;
    if (!tree) {
      SC_LOG_WARN("syntax: %s", perr.msg);
    } else if (sc_completion_plan_at(tree, a->cursor, &plan, &perr) != SC_OK) {
      SC_LOG_WARN("planning: %s", perr.msg);
    } else if (plan.kind == SC_COMPLETION_NONE) {
      a->settled = true;
      json_t *data = skipped_data(a->t_request, plan.reason ? plan.reason : "");
      json_object_set_new(data, "kind", json_string("none"));
      return sc_cpl__build_items(a, "", 0, data);
    } else {
      a->tree = tree;
      a->plan = plan;
      a->single_line = plan.single_line;
    }
  }
  if (!c->engine && !a->remote) {
    sc_error_set(err, SC_ERR_UNSUPPORTED, "no model is loaded (see sculpt/status)");
    return NULL;
  }
  double t0 = sc_now_ms();
  if (a->remote) return remote_prompt_job(a, t0, err);
  /* The canvas and the prompt are fitted to the model's context first
   * (model.h, sc_infill_fit_plan): after the family's frame, the plan's
   * lengths are cut to at most half of it, and the prompt budget to what
   * the canvas leaves. */
  int reconditioned = 0;
  sc_infill_plan plan = canvas_plan(a, &reconditioned);
  sc_infill_params p;
  sc_cpl__params_from_settings(&a->set, &p);
  sc_infill_budget fit;
  if (sc_infill_fit_plan(c->model, sc_engine_context(c->engine), a->set.context_budget, &plan,
                         &p, &fit, err) != SC_OK)
    return NULL;
  /* Repository context: definitions of what is used around the cursor,
   * from this file, its imports and the workspace, each headed by its path,
   * go before the prefix window; with kvReuse the prompt is the document's
   * pinned one while it fits, so that the session reuses K/V. */
  doc_session *ds = sc_cpl__doc_session(c, job->uri, a->set.kv_reuse);
  local_prompt lp;
  if (sc_cpl__local_prompt(a, &fit, ds, &lp, err) != SC_OK) return NULL;
  p.suffix_cut = lp.suffix_cut;
  /* Drafts (setting drafts): the rest of a suggestion the typing left, the
   * prompt's own text and the workspace's line table (context.h), verified
   * by the engine in the passes it runs anyway. */
  sc_drafts found = {0};
  sc_draft_runs runs = {0};
  if (a->set.drafts) {
    int longest = 0;
    for (int i = 0; i < plan.n_lengths; i++)
      if (plan.lengths[i] > longest) longest = plan.lengths[i];
    sc_draft_query dq = {.before = lp.before, .before_len = lp.before_len, .after = lp.after,
                         .after_len = lp.after_len, .ws = c->ws, .previous = a->rest,
                         .previous_len = a->rest ? strlen(a->rest) : 0,
                         .single_line = a->single_line};
    if (sc_drafts_attach(&dq, c->tok, longest, &found, &runs, &p, err) != SC_OK) {
      sc_cpl__local_prompt_free(&lp);
      return NULL;
    }
  }
  double t_ctx = sc_now_ms();
  sc_infill_result res;
  atomic_fetch_add(&c->engine_calls, 1);
  /* Through the document's K/V session (kvReuse): what the previous
   * request in it left in the engine's cache is reused where the tokens did
   * not change (model.h, sessions). */
  sc_status st = sc_engine_infill_session(c->engine, ds ? ds->session : NULL,
                                          lp.pre + (lp.n_pre - lp.keep_pre), (int)lp.keep_pre,
                                          lp.suf, (int)lp.keep_suf, &plan, &p, &job->cancel,
                                          NULL, NULL, &res, err);
  sc_draft_runs_free(&runs);
  p.drafts = NULL;
  p.n_drafts = 0;
  if (st != SC_OK) {
    sc_drafts_free(&found);
    sc_cpl__local_prompt_free(&lp);
    return NULL;
  }
  double t_shape0 = sc_now_ms();
  const char *discarded = NULL;
  local_fill_ctx fc = {.a = a,
                       .job = job,
                       .before = lp.before,
                       .after = lp.after,
                       .before_len = lp.before_len,
                       .after_len = lp.after_len,
                       .after_cut = lp.suffix_cut,
                       .params = &p,
                       .prompt = fit.prompt,
                       .canvas = fit.canvas};
  size_t len = sc_cpl__shape_middle(a, res.text ? res.text : "", res.text_len, &discarded,
                                    local_fill, &fc, false);
  double t_end = sc_now_ms();
  /* modelMs is every engine call the request made: the infill and the
   * repair's, which is also shown alone (repairMs). */
  a->model_ms = res.ms_total + fc.repair_ms;
  double shape_ms = t_end - t_shape0;
  json_t *data = json_pack("{s:b, s:f, s:i, s:f, s:i, s:i, s:f, s:s, s:i}", "cached", 0,
                           "contextMs", t_ctx - t0, "steps", res.steps + fc.repair_steps,
                           "modelMs", a->model_ms, "tokens", res.n_ids, "debounceMs",
                           a->debounce_ms, "totalMs", t_end - a->t_request, "kind",
                           a->tree ? sc_completion_kind_name(a->plan.kind) : "unplanned",
                           "canvas", res.canvas_len);
  if (discarded) json_object_set_new(data, "discarded", json_string(discarded));
  json_object_set_new(data, "shapeMs", json_real(shape_ms));
  json_object_set_new(data, "repairMs", json_real(fc.repair_ms));
  /* Positions whose K/V the infill took from the previous request in this
   * document (0: a full pass). */
  json_object_set_new(data, "kvReused", json_integer(res.kv_reused));
  /* What drafting did: the drafts found (and where, best first) and the
   * tokens drafted, accepted and rejected; tokensPerPass is the infill's
   * committed tokens a forward pass. */
  json_t *src = json_array();
  for (size_t i = 0; i < found.n; i++) json_array_append_new(src, json_string(found.d[i].source));
  json_object_set_new(data, "drafts",
                      json_pack("{s:i, s:o, s:i, s:i, s:i, s:f}", "offered", (int)found.n,
                                "sources", src, "drafted", res.drafted, "accepted", res.accepted,
                                "rejected", res.rejected, "ms", found.ms));
  sc_drafts_free(&found);
  json_object_set_new(data, "tokensPerPass",
                      json_real(res.steps ? (double)res.committed / res.steps : 0.0));
  json_object_set_new(data, "snippets", json_integer((json_int_t)lp.n_snippets));
  /* The prompt was the document's pinned one (its snippets and window
   * start kept from an earlier request). */
  json_object_set_new(data, "promptPinned", json_boolean(lp.pinned));
  sc_cpl__index_data(a, data);
  json_object_set_new(data, "promptTokens", json_integer((json_int_t)(lp.keep_pre + lp.keep_suf)));
  sc_cpl__local_prompt_free(&lp);
  json_object_set_new(data, "contextTokens", json_integer(fit.context));
  if (reconditioned) json_object_set_new(data, "reconditioned", json_true());
  if (p.suffix_cut) json_object_set_new(data, "suffixCut", json_true());
  if (a->repaired) json_object_set_new(data, "repaired", json_true());
  json_object_set_new(data, "prepareMs", json_real(a->prepare_ms));
  SC_LOG_DEBUG("completion: %d tokens in %d steps; context %.1f ms, model %.1f ms, total %.1f ms; "
               "K/V of %d positions reused",
               res.n_ids, res.steps, t_ctx - t0, a->model_ms, t_end - a->t_request, res.kv_reused);
  json_t *out = sc_cpl__build_items(a, a->middle ? a->middle : "", a->middle ? len : 0, data);
  sc_infill_result_free(&res);
  return out;
}

static void complete_done(sc_lsp_server *s, sc_job *job) {
  sc_completer *c = sc_lsp__feature(s);
  complete_arg *a = job->arg;
  /* The tree the job parsed serves the next request, answered or not. */
  sc_document_syntax_adopt(sc_lsp__documents(s), job->uri, a->syn);
  if (!job->result || sc_job_cancelled(job) != SC_JOB_LIVE || a->settled) return;
  if (a->remote) {
    sc_cpl__remote_submit(s, c, job);
    return;
  }
  if (a->middle && a->cache_epoch == c->cache_epoch)
    sc_cpl__cache_put(c, a->uri_hash, a->prefix_hash, a->doc_prefix_len, a->suffix_hash,
                      a->middle, a->middle_len);
  c->last_latency_ms = sc_now_ms() - a->t_request;
  sc_cpl__note_outcome(c, job->result);
  sc_cpl__send_status(s, c);
}

/* The debounce for an automatic trigger: the configured base, stretched to
 * the user's typing rhythm so that fast typing does not start a model call
 * per keystroke (Tabby's adaptive debounce, simplified). */
static int debounce_for(const sc_completer *c) {
  int base = c->set.debounce_ms;
  if (c->avg_interval_ms <= 0 || base == 0) return base; /* 0: the user wants none */
  double d = 0.5 * base + 0.75 * c->avg_interval_ms;
  if (d < base * 0.5) d = base * 0.5;
  if (d > 400) d = 400;
  return (int)d;
}


static void handle_request(sc_lsp_req *r, request_kind kind) {
  sc_lsp_server *s = r->s;
  sc_completer *c = sc_lsp__feature(s);
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  json_t *pos = json_object_get(r->params, "position");
  uint32_t line, character;
  if (!sc_lsp__get_position(pos, &line, &character)) {
    sc_lsp__bad_params(r, "position needs line and character");
    return;
  }
  json_t *context = json_object_get(r->params, "context");
  json_t *trig = json_object_get(context, "triggerKind");
  /* InlineCompletionTriggerKind: 1 Invoked, 2 Automatic. CompletionTriggerKind:
   * 1 Invoked, 2 TriggerCharacter, 3 TriggerForIncompleteCompletions. */
  bool automatic = kind == RK_INLINE ? json_integer_value(trig) == 2
                                     : json_integer_value(trig) != 1 && trig != NULL;
  c->requests++;
  double t_request = sc_now_ms();
  const char *lang = sc_context_language_for(d->language_id, d->uri);
  complete_arg probe = {.kind = kind, .position = pos};
  if (lang) snprintf(probe.language, sizeof probe.language, "%s", lang);
  if (!sc_cpl__language_enabled(c, lang)) {
    sc_lsp__send_result(s, r->id, sc_cpl__build_items(&probe, "", 0,
                                                      skipped_data(t_request, "language")));
    return;
  }
  char why[512];
  const char *refused = sc_cpl__document_refused(s, c, d, why, sizeof why);
  if (refused) {
    if (automatic) {
      json_t *data = skipped_data(t_request, refused);
      json_object_set_new(data, "reason", json_string(why));
      sc_lsp__send_result(s, r->id, sc_cpl__build_items(&probe, "", 0, data));
    } else {
      sc_lsp__send_error(s, r->id, SC_RPC_REQUEST_FAILED, "%s: %s", r->method, why);
    }
    return;
  }
  if (c->state == MS_ERROR || c->state == MS_NONE) {
    if (automatic) {
      sc_lsp__send_result(s, r->id, sc_cpl__build_items(&probe, "", 0,
                                                        skipped_data(t_request, "model")));
    } else {
      sc_lsp__send_error(s, r->id, SC_RPC_REQUEST_FAILED, "%s: no model: %s", r->method,
                         c->error[0] ? c->error : "not loaded");
    }
    return;
  }
  const sc_line_index *idx = sc_document_lines(d);
  if (!idx) {
    sc_lsp__send_error(s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  size_t off = sc_pos_to_offset(d->text, d->len, idx, line, character, sc_lsp__encoding(s), NULL);
  uint64_t uri_hash = sc_hash64(d->uri, strlen(d->uri), 3);

  /* A newer request on this document supersedes the older ones. */
  sc_lsp__cancel_method(s, r->method, d->uri);

  /* Typing-through: the user typed the start of what we showed. The cache
   * is asked before the syntax plan (the job's): mid-line, the first typed
   * character puts the cursor inside a word, where the plan would suggest
   * nothing. */
  size_t typed = 0;
  bool diverged = false;
  uint64_t suffix_hash = sc_hash64_long(d->text + off, d->len - off, 1);
  cache_entry *hit = sc_cpl__cache_find(c, uri_hash, suffix_hash, d->text, off, &typed, &diverged);
  char *rest = NULL; /* what remained of a suggestion the typing left */
  if (hit && diverged) {
    rest = sc_memdup(hit->middle + typed, hit->middle_len - typed);
    hit = NULL;
  }
  if (hit) {
    c->cache_hits++;
    json_t *data = json_pack("{s:b, s:i, s:f}", "cached", 1, "typed", (int)typed, "totalMs",
                             sc_now_ms() - t_request);
    sc_lsp__send_result(s, r->id, sc_cpl__build_items(&probe, hit->middle + typed,
                                                      hit->middle_len - typed, data));
    return;
  }

  complete_arg *a = calloc(1, sizeof *a);
  size_t pw = (size_t)c->set.context_budget * WINDOW_BYTES_PER_TOKEN, sw = pw / 4 + 256;
  size_t p0 = off > pw ? off - pw : 0;
  size_t s1 = d->len - off > sw ? off + sw : d->len;
  if (a) {
    a->c = c;
    a->kind = kind;
    a->prefix_len = off - p0;
    a->suffix_len = s1 - off;
    a->suffix_window_cut = s1 < d->len;
    a->prefix = malloc(a->prefix_len + 1);
    a->suffix = malloc(a->suffix_len + 1);
  }
  if (a) a->rest = rest;
  else free(rest);
  if (!a || !a->prefix || !a->suffix || !sc_cpl__settings_copy(&a->set, &c->set)) {
    if (a) sc_cpl__complete_arg_free(a);
    sc_lsp__send_error(s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  a->cache_epoch = c->cache_epoch;
  memcpy(a->prefix, d->text + p0, a->prefix_len);
  memcpy(a->suffix, d->text + off, a->suffix_len);
  a->position = json_incref(pos);
  snprintf(a->language, sizeof a->language, "%s", lang);
  a->lang_known = true;
  a->rel_path = sc_cpl__rel_path_of(c, d->uri);
  a->index_state = c->index_state;
  sc_document_touch(d);
  sc_cpl__maybe_refresh_index(s, c, d);
  a->extras = sc_cpl__gather_extras(s, c, d, sc_line_index_line_of(idx, p0));
  a->cursor = off;
  sc_error serr = {0};
  if (!(a->syn = sc_document_syntax_snapshot(d, &serr)) && serr.status != SC_OK)
    SC_LOG_WARN("syntax: %s: %s", d->uri, serr.msg);
  /* Without a tree (no grammar, or its parse fails): mid-line (code after
   * the cursor) completes that line only. */
  const char *eol = memchr(d->text + off, '\n', d->len - off);
  size_t rest_end = eol ? (size_t)(eol - d->text) : d->len;
  a->single_line = false;
  for (size_t i = off; i < rest_end; i++)
    if (d->text[i] != ' ' && d->text[i] != '\t' && d->text[i] != '\r') a->single_line = true;
  a->debounce_ms = automatic ? debounce_for(c) : 0;
  a->uri_hash = uri_hash;
  a->prefix_hash = sc_hash64_long(d->text, off, 2);
  a->suffix_hash = suffix_hash;
  a->doc_prefix_len = off;
  a->doc_len = d->len;
  a->t_request = t_request;
  a->prepare_ms = sc_now_ms() - t_request;
  a->remote = a->set.backend_url != NULL;
  a->remote_context = sc_cpl__remote_context(c);
  sc_lsp__post_job(s, r->id, r->method, d->uri, complete_job, a, sc_cpl__complete_arg_free,
                   complete_done);
}

void sc_cpl__handle_inline(sc_lsp_req *r) { handle_request(r, RK_INLINE); }
void sc_cpl__handle_completion(sc_lsp_req *r) { handle_request(r, RK_ITEMS); }

void sc_cpl__on_change(sc_lsp_server *s, sc_document *d) {
  sc_completer *c = sc_lsp__feature(s);
  const char *uri = d->uri;
  sc_cpl__maybe_refresh_index(s, c, d);
  double now = sc_now_ms();
  uint64_t h = sc_hash64(uri, strlen(uri), 3);
  if (h == c->typing_uri && now - c->last_change_ms < 2000) {
    double dt = now - c->last_change_ms;
    c->avg_interval_ms = c->avg_interval_ms > 0 ? 0.7 * c->avg_interval_ms + 0.3 * dt : dt;
  }
  c->typing_uri = h;
  c->last_change_ms = now;
}

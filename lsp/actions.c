/* actions.c — code actions: textDocument/codeAction and codeAction/resolve,
 * the editor's front door to the edit engine (edit/), the one `sculpt
 * batch` uses. The engine finds the sites: a quick fix for each error
 * among the request's diagnostics (the statement that holds its position), "Fill hole" on
 * the holes of the range's lines (the holeMarker setting; a Python body
 * that is only `...`, never where the engine says it is meant: an
 * @overload, an abstract method, a Protocol, a stub), "Complete block" on
 * an empty body at the cursor. Candidates come through the engine's
 * generator from the local model or the remote backend, and the engine's
 * checks decide what is offered: an action is listed only when the whole
 * document then has no new syntax error and no more than before, nothing
 * outside its site changed, its brackets balance, a fix keeps the
 * statement it fixes and the language's own judgement (Python's compile,
 * the C compiler's) finds nothing new; a fix that is one missing token
 * (`;`, `)`, `:`) is that token inserted, the model not asked. So
 * the same site and seed give the same edit here and in `sculpt batch`.
 *
 * Everything runs in one cancellable job, on the model lane, or on the
 * network lane with the remote backend; the job parses (the loop never
 * does). Clients that resolve edits lazily get the automatic list with no
 * decoding, and the picked action's edit through codeAction/resolve. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"
#include "edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TARGETS 6
/* Seeds tried per site: greedy, then two samples (sc_edit_fill keeps the
 * first that passes the checks). */
#define CANDIDATES 3
/* What later seeds sample at (batch's default --temperature). */
#define SAMPLE_TEMPERATURE 0.8

typedef struct action_target {
  sc_edit_site site; /* the engine's */
  char title[48];    /* "fix", "fill hole", "complete block" */
  const char *kind;  /* CodeActionKind */
  json_t *diagnostic; /* the diagnostic it fixes, or NULL (owned) */
} action_target;

/* What the job returns: the decoded actions, the lazy list (no decoding),
 * or the edit of the one action being resolved. */
typedef enum action_mode { AM_DECODE, AM_LAZY, AM_RESOLVE } action_mode;

typedef struct action_arg {
  sc_completer *c;
  settings set;
  char *uri;
  char *path; /* the file the uri names (for the engine: stubs, includes), or NULL */
  int64_t version;
  sc_syntax_snapshot *syn; /* the document's syntax (owned) */
  sc_pos_encoding enc;
  uint32_t l0, c0, l1, c1; /* the request's range */
  json_t *range;           /* the same, as the client sent it (owned) */
  json_t *diags;           /* the client's diagnostics (owned; may be NULL) */
  action_mode mode;
  action_target t[MAX_TARGETS];
  int n;
  json_t *resolving; /* codeAction/resolve: the action to fill in (owned), else NULL */
  int remote_context; /* the backend's context in tokens; 0: unknown */
  /* The job's, while it runs. */
  sc_job *job;
  sc_edit_generator local; /* the engine's local generator, wrapped to count calls */
  sc_error gen_err;        /* the generator's last failure */
} action_arg;

static void action_arg_free(void *p) {
  action_arg *a = p;
  sc_cpl__settings_free(&a->set);
  free(a->uri);
  free(a->path);
  sc_syntax_snapshot_free(a->syn);
  json_decref(a->range);
  json_decref(a->diags);
  for (int i = 0; i < a->n; i++) json_decref(a->t[i].diagnostic);
  json_decref(a->resolving);
  free(a);
}

static void add_target(action_arg *a, const sc_edit_site *site, const char *title,
                       const char *kind, json_t *diag) {
  if (a->n == MAX_TARGETS) return;
  for (int i = 0; i < a->n; i++)
    if (a->t[i].site.start == site->start && a->t[i].site.end == site->end) return;
  action_target *t = &a->t[a->n++];
  t->site = *site;
  snprintf(t->title, sizeof t->title, "%s", title);
  t->kind = kind;
  t->diagnostic = diag ? json_incref(diag) : NULL;
}

/* ---- candidates ------------------------------------------------------------- */

/* The local engine (sc_edit_local), each call counted for sculpt/status and
 * the test hooks. */
static sc_status local_generate(void *user, const sc_edit_request *req, sc_edit_candidate *out,
                                sc_error *err) {
  action_arg *a = user;
  atomic_fetch_add(&a->c->engine_calls, 1);
  sc_status st = a->local.generate(a->local.user, req, out, err);
  if (st != SC_OK) a->gen_err = *err;
  return st;
}

/* The remote backend: the byte windows around the site go to the endpoint
 * from this (worker) thread through a private loop; the job's cancel flag
 * stops it. The windows are the engine's (contextBudget tokens), fitted to
 * the backend's context when it is known (3 bytes a token); the canvas is
 * maxTokens for a hole or a block, twice that for a re-infill, as batch's. */
static sc_status remote_generate(void *user, const sc_edit_request *req, sc_edit_candidate *out,
                                 sc_error *err) {
  action_arg *a = user;
  memset(out, 0, sizeof *out);
  size_t s0 = req->site.start, s1 = req->site.end, p0, e1;
  bool fill = req->site.kind == SC_EDIT_HOLE || req->site.kind == SC_EDIT_BLOCK;
  sc_infill_budget fit =
      sc_cpl__remote_fit(&a->set, a->remote_context, (fill ? 1 : 2) * a->set.max_tokens);
  sc_edit_request_window(req, (size_t)a->set.context_budget, &p0, &e1);
  if (fit.context > 0) {
    size_t keep_before, keep_after;
    sc_cpl__remote_byte_windows(&fit, s0, req->len - s1, &keep_before, &keep_after);
    p0 = s0 - keep_before;
    e1 = s1 + keep_after;
  }
  static const char *const nl_stop[] = {"\n"};
  sc_fim_client_options o;
  sc_cpl__fim_options(&a->set, &o);
  sc_fim_request fr = {.prompt = req->text + p0, .prompt_len = s0 - p0,
                       .suffix = req->text + s1, .suffix_len = e1 - s1,
                       .max_tokens = fit.canvas,
                       .temperature = req->seed ? SAMPLE_TEMPERATURE : 0.0,
                       .stop = req->site.single_line ? nl_stop : NULL,
                       .n_stop = req->site.single_line ? 1 : 0};
  sc_status st = sc_fim_complete_sync(&o, &fr, &a->job->cancel, &out->text, &out->len, NULL, err);
  if (st != SC_OK) a->gen_err = *err;
  return st;
}

/* ---- sites -------------------------------------------------------------------- */

/* The targets for the request's range and diagnostics, from the engine's
 * sites in doc (on the job's thread; idx indexes doc's text). */
static sc_status find_targets(action_arg *a, const sc_edit_doc *doc, const sc_line_index *idx,
                              sc_error *err) {
  size_t len;
  const char *text = sc_edit_doc_text(doc, &len);
  /* Each error: the statement that holds its position. A warning, an
   * information or a hint is about code that compiles: no fix is offered
   * (a missing severity is an error, as batch reads it). */
  size_t i;
  json_t *dg;
  json_array_foreach(a->diags, i, dg) {
    json_t *sev = json_object_get(dg, "severity");
    if (json_is_integer(sev) && json_integer_value(sev) > 1) continue;
    json_t *dr = json_object_get(dg, "range");
    uint32_t dl, dc;
    if (!sc_lsp__get_position(json_object_get(dr, "start"), &dl, &dc)) continue;
    size_t x = sc_pos_to_offset(text, len, idx, dl, dc, a->enc, NULL);
    sc_edit_site site;
    if (sc_edit_site_for_diagnostic(doc, x, json_string_value(json_object_get(dg, "message")),
                                    &site, NULL) == SC_OK)
      add_target(a, &site, "fix", "quickfix", dg);
  }
  /* The holes on the lines of the range. A `...` body is offered too (a
   * code action is a suggestion the user picks, not a rewrite of the
   * file), within the engine's rules for it. */
  size_t ra = sc_pos_to_offset(text, len, idx, a->l0, a->c0, a->enc, NULL);
  size_t rb = sc_pos_to_offset(text, len, idx, a->l1, a->c1, a->enc, NULL);
  sc_edit_hole_options ho = {a->set.hole_marker, true};
  sc_edit_site *holes = NULL;
  size_t n_holes = 0;
  SC_TRY(sc_edit_find_holes(doc, &ho, ra < rb ? ra : rb, ra < rb ? rb : ra, &holes, &n_holes,
                            err));
  for (size_t k = 0; k < n_holes; k++) add_target(a, &holes[k], "fill hole", "refactor.rewrite", NULL);
  free(holes);
  /* An empty body at the cursor. */
  sc_edit_site block;
  if (ra == rb && sc_edit_site_block_at(doc, ra, &block))
    add_target(a, &block, "complete block", "refactor.rewrite", NULL);
  if (a->mode == AM_RESOLVE) {
    /* Only the picked kind (and diagnostic) is decoded. */
    const char *target = json_string_value(
        json_object_get(json_object_get(a->resolving, "data"), "target"));
    int n = 0;
    for (int k = 0; k < a->n; k++) {
      if (target && strcmp(a->t[k].title, target) == 0 &&
          (a->diags != NULL) == (a->t[k].diagnostic != NULL)) {
        a->t[n++] = a->t[k];
      } else {
        json_decref(a->t[k].diagnostic);
      }
    }
    a->n = n;
  }
  return SC_OK;
}

/* ---- answers ------------------------------------------------------------------ */

/* The lazy list (clients that resolve edits, asked automatically, as on
 * every cursor move): one action per target kind and diagnostic, with no
 * edit; the model runs only for the one the user picks (codeAction/resolve).
 * Nothing is decoded for a lightbulb nobody opens. */
static json_t *lazy_actions(const action_arg *a) {
  json_t *out = json_array();
  for (int i = 0; out && i < a->n; i++) {
    const action_target *t = &a->t[i];
    bool seen = false;
    for (int k = 0; k < i; k++)
      seen |= strcmp(a->t[k].title, t->title) == 0 && a->t[k].diagnostic == t->diagnostic;
    if (seen) continue;
    json_t *data = json_pack("{s:s, s:I, s:O, s:s}", "uri", a->uri, "version",
                             (json_int_t)a->version, "range", a->range, "target", t->title);
    if (data && t->diagnostic) json_object_set(data, "diagnostic", t->diagnostic);
    char title[64];
    snprintf(title, sizeof title, "sculpt: %s", t->title);
    json_t *action = data ? json_pack("{s:s, s:s, s:o}", "title", title, "kind", t->kind,
                                      "data", data)
                          : NULL;
    if (action && t->diagnostic)
      json_object_set_new(action, "diagnostics", json_pack("[O]", t->diagnostic));
    if (action) json_array_append_new(out, action);
  }
  return out;
}

/* The action for a target's edit: replace [r->start, r->end) of text with
 * r->text, titled with the edit's first line (48 bytes at most). */
static json_t *edit_action(const action_arg *a, const action_target *t, const char *text,
                           size_t len, const sc_line_index *idx, const sc_edit_result *r) {
  const char *nl = memchr(r->text, '\n', r->len);
  size_t shown = nl ? (size_t)(nl - r->text) : r->len;
  bool more = nl || shown > 48;
  if (shown > 48) shown = 48;
  char title[128];
  snprintf(title, sizeof title, "sculpt: %s: %.*s%s", t->title, (int)shown, r->text,
           more ? " …" : "");
  uint32_t l0, c0, l1, c1;
  sc_offset_to_pos(text, len, idx, r->start, a->enc, &l0, &c0);
  sc_offset_to_pos(text, len, idx, r->end, a->enc, &l1, &c1);
  json_t *edit = json_pack("{s:{s:[{s:{s:{s:i, s:i}, s:{s:i, s:i}}, s:s%}]}}", "changes",
                           a->uri, "range", "start", "line", (int)l0, "character", (int)c0,
                           "end", "line", (int)l1, "character", (int)c1, "newText", r->text,
                           r->len);
  json_t *action = edit ? json_pack("{s:s, s:s, s:o}", "title", title, "kind", t->kind, "edit",
                                    edit)
                        : NULL;
  if (action && t->diagnostic) {
    json_object_set_new(action, "diagnostics", json_pack("[O]", t->diagnostic));
    json_object_set_new(action, "isPreferred", json_true());
  }
  return action;
}

/* Decodes each target through the engine: its first candidate that passes
 * the checks becomes an action. NULL with *err when the backend fails
 * (said, rather than tried on) or the job is cancelled. */
static json_t *decode_actions(action_arg *a, const sc_edit_doc *doc, const sc_line_index *idx,
                              sc_error *err) {
  sc_completer *c = a->c;
  sc_edit_local *local = NULL;
  sc_edit_generator gen = {remote_generate, NULL, a, true};
  if (!a->set.backend_url) {
    /* The settings' decoding, fitted to the loaded model by the engine's
     * generator (sc_infill_fit_plan, as every caller is). */
    sc_infill_params p;
    sc_cpl__params_from_settings(&a->set, &p);
    sc_edit_local_options lo = {a->set.max_tokens, a->set.context_budget, SAMPLE_TEMPERATURE, &p,
                                &a->job->cancel};
    if (sc_edit_local_new(c->engine, c->tok, c->model, &lo, &local, err) != SC_OK) return NULL;
    a->local = sc_edit_local_generator(local);
    gen = (sc_edit_generator){local_generate, NULL, a, false};
  }
  size_t len;
  const char *text = sc_edit_doc_text(doc, &len);
  json_t *out = json_array();
  sc_status st = out ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  for (int i = 0; st == SC_OK && i < a->n; i++) {
    const action_target *t = &a->t[i];
    sc_edit_fill_options fo = {gen, CANDIDATES, NULL, NULL, NULL, &a->job->cancel};
    sc_edit_result r;
    memset(&a->gen_err, 0, sizeof a->gen_err);
    st = sc_edit_fill(doc, &t->site, &fo, &r, err);
    if (st == SC_OK && r.status == SC_EDIT_DONE) {
      json_t *action = edit_action(a, t, text, len, idx, &r);
      if (!action) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
      else json_array_append_new(out, action);
    } else if (st == SC_OK && gen.remote && a->gen_err.status == SC_ERR_IO) {
      /* The backend is down or failing: say so instead of trying on. */
      *err = a->gen_err;
      st = err->status;
    }
    sc_edit_result_free(&r);
    if (st == SC_OK && sc_job_cancelled(a->job) != SC_JOB_LIVE)
      st = sc_error_set(err, SC_ERR_CANCELLED, "cancelled");
  }
  sc_edit_local_free(local);
  if (st != SC_OK) {
    json_decref(out);
    return NULL;
  }
  return out;
}

static json_t *actions_job(sc_job *job, void *argp, sc_error *err) {
  action_arg *a = argp;
  a->job = job;
  /* The remote backend's jobs run on the network lane: c->engine belongs to
   * the model lane, so it is read only when there is no backend. */
  if (a->mode != AM_LAZY && !a->set.backend_url && !a->c->engine) {
    sc_error_set(err, SC_ERR_UNSUPPORTED, "no model is loaded (see sculpt/status)");
    return NULL;
  }
  sc_error perr = {0};
  const sc_syntax_tree *tree = sc_syntax_snapshot_parse(a->syn, job, &perr);
  if (!tree) {
    if (sc_job_cancelled(job) != SC_JOB_LIVE) {
      sc_error_set(err, SC_ERR_CANCELLED, "cancelled while parsing");
      return NULL;
    }
    SC_LOG_WARN("syntax: %s: %s", a->uri, perr.msg);
  }
  /* The engine's document over the tree just parsed (not parsed again). */
  sc_edit_doc *doc = NULL;
  if (tree && sc_edit_doc_from_tree(tree, a->path, &doc, err) != SC_OK) return NULL;
  size_t len = 0;
  const char *text = doc ? sc_edit_doc_text(doc, &len) : "";
  sc_line_index idx = {0};
  json_t *out = NULL;
  sc_status st = sc_line_index_build(&idx, text, len) == SC_OK
                     ? SC_OK
                     : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  /* No tree (a parse that failed): no site, nothing offered. */
  if (st == SC_OK && doc) st = find_targets(a, doc, &idx, err);
  if (st != SC_OK) {
    /* err says why */
  } else if (a->mode == AM_RESOLVE && a->n == 0) {
    sc_error_set(err, SC_ERR_UNSUPPORTED, "nothing to resolve here now");
  } else if (a->mode == AM_LAZY || a->n == 0) {
    if (!(out = lazy_actions(a))) sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  } else {
    out = decode_actions(a, doc, &idx, err);
  }
  sc_line_index_free(&idx);
  sc_edit_doc_free(doc);
  return out;
}

/* ---- requests (the loop) ---------------------------------------------------- */

/* The request's part on the loop: what the job needs, copied. NULL: out of
 * memory, or *nothing when there is nothing to offer (no grammar, language
 * off, no model, a document out of sync or too large). */
static action_arg *action_prepare(sc_lsp_server *s, sc_completer *c, sc_document *d,
                                  json_t *range, json_t *diags, action_mode mode, bool *nothing) {
  *nothing = false;
  char why[512];
  uint32_t l0, c0, l1, c1;
  if (!d->lang || !sc_cpl__language_enabled(c, d->lang) || c->state != MS_READY ||
      sc_cpl__document_refused(s, c, d, why, sizeof why) ||
      !sc_lsp__get_position(json_object_get(range, "start"), &l0, &c0) ||
      !sc_lsp__get_position(json_object_get(range, "end"), &l1, &c1)) {
    *nothing = true; /* nothing we can offer here */
    return NULL;
  }
  action_arg *a = calloc(1, sizeof *a);
  sc_error serr = {0};
  if (!a || !sc_cpl__settings_copy(&a->set, &c->set) || !(a->uri = strdup(d->uri)) ||
      !(a->syn = sc_document_syntax_snapshot(d, &serr))) {
    if (a && !a->syn && a->uri && serr.status != SC_ERR_NOMEM) *nothing = true;
    if (a) action_arg_free(a);
    return NULL;
  }
  a->path = sc_path_from_file_uri(d->uri); /* NULL for another scheme: no path */
  a->remote_context = sc_cpl__remote_context(c);
  a->c = c;
  a->version = d->version;
  a->enc = sc_lsp__encoding(s);
  a->l0 = l0, a->c0 = c0, a->l1 = l1, a->c1 = c1;
  a->range = json_incref(range);
  a->diags = diags ? json_incref(diags) : NULL;
  a->mode = mode;
  return a;
}

/* With the remote backend a code action waits on HTTP (several requests:
 * up to three per target), not on the engine: it runs on its own lane so
 * that completions, whose shaping runs on the model lane, are not queued
 * behind it. */
static sc_job_lane action_lane(const action_arg *a) {
  return a->set.backend_url ? SC_LANE_NETWORK : SC_LANE_MODEL;
}

/* codeAction/resolve's answer: the edit of a lazy action, decoded for its
 * target alone, in the action the client sent. */
static void resolve_result(sc_job *job) {
  action_arg *a = job->arg;
  json_t *first = json_array_get(job->result, 0);
  json_t *edit = json_object_get(first, "edit");
  if (!edit) {
    json_decref(job->result);
    job->result = NULL;
    sc_error_set(&job->err, SC_ERR_IO, "no %s passed the engine's checks", a->t[0].title);
    return;
  }
  json_t *resolved = json_deep_copy(a->resolving);
  if (resolved) {
    json_object_set(resolved, "edit", edit);
    json_object_set(resolved, "title", json_object_get(first, "title"));
  }
  json_decref(job->result);
  job->result = resolved;
  if (!resolved) sc_error_set(&job->err, SC_ERR_NOMEM, "out of memory");
}

static void action_done(sc_lsp_server *s, sc_job *job) {
  action_arg *a = job->arg;
  /* The tree the job parsed serves the next request, answered or not. */
  sc_document_syntax_adopt(sc_lsp__documents(s), job->uri, a->syn);
  if (!job->result || sc_job_cancelled(job) != SC_JOB_LIVE) return;
  if (a->mode == AM_RESOLVE) resolve_result(job);
}

void sc_cpl__handle_action(sc_lsp_req *r) {
  sc_lsp_server *s = r->s;
  sc_completer *c = sc_lsp__feature(s);
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  json_t *range = json_object_get(r->params, "range");
  uint32_t l0, c0, l1, c1;
  if (!sc_lsp__get_position(json_object_get(range, "start"), &l0, &c0) ||
      !sc_lsp__get_position(json_object_get(range, "end"), &l1, &c1)) {
    sc_lsp__bad_params(r, "range needs start and end positions");
    return;
  }
  json_t *diags = json_object_get(json_object_get(r->params, "context"), "diagnostics");
  if (diags && !json_is_array(diags)) {
    sc_lsp__bad_params(r, "context.diagnostics must be an array");
    return;
  }
  /* Clients that resolve edits lazily get the automatic list with no
   * decoding; the rest, and an explicit request, get decoded actions. */
  json_t *trigger = json_object_get(json_object_get(r->params, "context"), "triggerKind");
  bool lazy = sc_lsp__client_action_resolve(s) && json_integer_value(trigger) == 2;
  bool nothing = false;
  action_arg *a = action_prepare(s, c, d, range, diags, lazy ? AM_LAZY : AM_DECODE, &nothing);
  if (!a) {
    if (nothing) sc_lsp__send_result(s, r->id, json_array());
    else sc_lsp__send_error(s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  sc_lsp__cancel_method(s, r->method, d->uri);
  sc_lsp__post_job_on(s, action_lane(a), r->id, r->method, d->uri, actions_job, a,
                      action_arg_free, action_done);
}

/* codeAction/resolve: the edit of a lazy action, decoded now for its target
 * alone. The document must still be the version the action was listed for. */
void sc_cpl__handle_action_resolve(sc_lsp_req *r) {
  sc_lsp_server *s = r->s;
  sc_completer *c = sc_lsp__feature(s);
  json_t *data = json_object_get(r->params, "data");
  const char *uri = json_string_value(json_object_get(data, "uri"));
  const char *target = json_string_value(json_object_get(data, "target"));
  json_t *range = json_object_get(data, "range"), *diag = json_object_get(data, "diagnostic");
  uint32_t l0, c0, l1, c1;
  if (!uri || !target || !json_is_integer(json_object_get(data, "version")) ||
      !sc_lsp__get_position(json_object_get(range, "start"), &l0, &c0) ||
      !sc_lsp__get_position(json_object_get(range, "end"), &l1, &c1)) {
    sc_lsp__bad_params(r, "data is not a sculpt code action's");
    return;
  }
  sc_document *d = sc_lsp__find_document(s, uri);
  if (!d) {
    sc_lsp__bad_params(r, "document not open: %s", uri);
    return;
  }
  if (d->version != json_integer_value(json_object_get(data, "version"))) {
    sc_lsp__send_error(s, r->id, SC_RPC_CONTENT_MODIFIED, "%s: the document changed", r->method);
    return;
  }
  json_t *diags = diag ? json_pack("[O]", diag) : NULL;
  bool nothing = false;
  action_arg *a = action_prepare(s, c, d, range, diags, AM_RESOLVE, &nothing);
  json_decref(diags);
  if (!a) {
    if (nothing) sc_lsp__send_error(s, r->id, SC_RPC_REQUEST_FAILED,
                                    "%s: nothing to resolve here now", r->method);
    else sc_lsp__send_error(s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  a->resolving = json_incref(r->params);
  sc_lsp__cancel_method(s, r->method, d->uri);
  sc_lsp__post_job_on(s, action_lane(a), r->id, r->method, d->uri, actions_job, a,
                      action_arg_free, action_done);
}

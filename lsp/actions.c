/* actions.c — code actions: textDocument/codeAction and codeAction/resolve.
 * Quick fixes by re-infilling: for each diagnostic, the span from the
 * diagnostic to the end of its statement, and the whole statement, are
 * masked and infilled; a candidate is offered when the document then has
 * fewer syntax errors, none of them new, and it differs from what was there.
 * Also "Fill hole" on a hole marker (setting holeMarker, default
 * TODO(sculpt); and a Python body that is only `...`) and "Complete block"
 * on an empty body. Everything runs in one cancellable job, on the model
 * lane, or on the network lane with the remote backend: the targets come
 * from the syntax tree, which the job parses (the loop never parses). Clients
 * that resolve edits lazily get the automatic list with no decoding, and the
 * picked action's edit through codeAction/resolve. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TARGETS 6

typedef struct action_target {
  size_t a, b;       /* the span to replace */
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
  int64_t version;
  const char *lang; /* static */
  char *text; /* the whole document (owned) */
  size_t len;
  sc_syntax_snapshot *syn; /* the document's syntax (owned) */
  const sc_syntax_tree *tree; /* syn's, once the job parsed it (borrowed) */
  sc_pos_encoding enc;
  uint32_t l0, c0, l1, c1; /* the request's range */
  json_t *range;           /* the same, as the client sent it (owned) */
  json_t *diags;           /* the client's diagnostics (owned; may be NULL) */
  action_mode mode;
  action_target t[MAX_TARGETS];
  int n;
  json_t *resolving; /* codeAction/resolve: the action to fill in (owned), else NULL */
  int remote_context; /* the backend's context in tokens; 0: unknown */
} action_arg;

static void action_arg_free(void *p) {
  action_arg *a = p;
  sc_cpl__settings_free(&a->set);
  free(a->uri);
  free(a->text);
  sc_syntax_snapshot_free(a->syn);
  json_decref(a->range);
  json_decref(a->diags);
  for (int i = 0; i < a->n; i++) json_decref(a->t[i].diagnostic);
  json_decref(a->resolving);
  free(a);
}

static void add_target(action_arg *a, size_t x, size_t y, const char *title, const char *kind,
                       json_t *diag) {
  if (a->n == MAX_TARGETS || y < x) return;
  for (int i = 0; i < a->n; i++)
    if (a->t[i].a == x && a->t[i].b == y) return;
  action_target *t = &a->t[a->n++];
  t->a = x;
  t->b = y;
  snprintf(t->title, sizeof t->title, "%s", title);
  t->kind = kind;
  t->diagnostic = diag ? json_incref(diag) : NULL;
}

static json_t *range_json(const char *text, size_t len, const sc_line_index *idx, size_t a,
                          size_t b, sc_pos_encoding enc) {
  uint32_t l0, c0, l1, c1;
  sc_offset_to_pos(text, len, idx, a, enc, &l0, &c0);
  sc_offset_to_pos(text, len, idx, b, enc, &l1, &c1);
  return json_pack("{s:{s:i, s:i}, s:{s:i, s:i}}", "start", "line", (int)l0, "character",
                   (int)c0, "end", "line", (int)l1, "character", (int)c1);
}

/* One candidate for a target: greedy, or sampled with a seed. Returns a
 * malloc'd text (or NULL) that passed the checks. */
static char *check_candidate(action_arg *a, const action_target *t, const char *cand,
                             size_t len);

/* The remote backend's candidate: the byte windows around the span go to
 * the endpoint from this (worker) thread, through a private loop; the job's
 * cancel flag stops it. The same checks as the engine's follow. */
static char *remote_candidate(action_arg *a, const action_target *t, uint64_t seed,
                              sc_job *job, size_t *len_out, sc_error *err) {
  /* Byte windows: the tokenizer is the model lane's. With the backend's
   * context known, they are fitted to it (3 bytes a token). */
  sc_infill_budget fit = sc_cpl__remote_fit(&a->set, a->remote_context, a->set.max_tokens * 2);
  size_t pw = (size_t)a->set.context_budget * WINDOW_BYTES_PER_TOKEN, sw = pw / 4 + 256;
  if (fit.context > 0) sc_cpl__remote_byte_windows(&fit, t->a, a->len - t->b, &pw, &sw);
  size_t p0 = t->a > pw ? t->a - pw : 0;
  size_t s1 = a->len - t->b > sw ? t->b + sw : a->len;
  sc_fim_client_options o;
  sc_cpl__fim_options(&a->set, &o);
  sc_fim_request req = {.prompt = a->text + p0, .prompt_len = t->a - p0,
                        .suffix = a->text + t->b, .suffix_len = s1 - t->b,
                        .max_tokens = fit.canvas, .temperature = seed ? 0.8 : 0.0};
  char *text = NULL;
  if (sc_fim_complete_sync(&o, &req, &job->cancel, &text, len_out, NULL, err) != SC_OK)
    return NULL;
  return text;
}

static char *candidate_for(sc_completer *c, action_arg *a, const action_target *t,
                           uint64_t seed, sc_job *job, sc_error *err) {
  if (a->set.backend_url) {
    size_t len = 0;
    char *cand = remote_candidate(a, t, seed, job, &len, err);
    if (!cand) return NULL;
    char *out = check_candidate(a, t, cand, len);
    free(cand);
    return out;
  }
  /* Canvas lengths around the span's own size: a fix is usually close to
   * it. They and the prompt are fitted to the model's context. */
  int32_t *old = NULL;
  size_t n_old = 0;
  sc_tokenizer_encode(c->tok, a->text + t->a, t->b - t->a, &old, &n_old, NULL);
  free(old);
  int base = (int)n_old;
  sc_infill_plan plan = {3, {base + 8, 2 * base + 16, 4 * base + 32}};
  for (int i = 0; i < 3; i++)
    if (plan.lengths[i] > a->set.max_tokens * 2) plan.lengths[i] = a->set.max_tokens * 2;
  sc_infill_params p;
  sc_cpl__params_from_settings(&a->set, &p);
  p.seed = seed;
  p.temperature = seed ? 0.8 : 0.0;
  sc_infill_budget fit;
  if (sc_infill_fit_plan(c->model, sc_engine_context(c->engine), a->set.context_budget, &plan,
                         &p, &fit, err) != SC_OK)
    return NULL;
  int32_t *pre = NULL, *suf = NULL;
  size_t n_pre = 0, keep_pre = 0, keep_suf = 0;
  size_t pw = (size_t)fit.prompt * WINDOW_BYTES_PER_TOKEN, sw = pw / 4 + 256;
  size_t p0 = t->a > pw ? t->a - pw : 0;
  size_t s1 = a->len - t->b > sw ? t->b + sw : a->len;
  if (sc_cpl__encode_context(c, a->text + p0, t->a - p0, a->text + t->b, s1 - t->b,
                             s1 < a->len, &fit, &pre, &n_pre, &keep_pre, &suf, &keep_suf,
                             &p.suffix_cut, err) != SC_OK)
    return NULL;
  sc_infill_result res;
  atomic_fetch_add(&c->engine_calls, 1);
  sc_status st = sc_engine_infill(c->engine, pre + (n_pre - keep_pre), (int)keep_pre, suf,
                                  (int)keep_suf, &plan, &p, &job->cancel, NULL, NULL, &res, err);
  free(pre);
  free(suf);
  if (st != SC_OK) return NULL;
  char *out = check_candidate(a, t, res.text ? res.text : "", res.text_len);
  sc_infill_result_free(&res);
  return out;
}

/* A copy of the candidate (trailing line breaks dropped) when it differs
 * from the span and the document then parses no worse; else NULL. */
static char *check_candidate(action_arg *a, const action_target *t, const char *cand, size_t len) {
  while (len > 0 && (cand[len - 1] == '\n' || cand[len - 1] == '\r')) len--;
  char *out = NULL;
  bool same = len == t->b - t->a && memcmp(cand, a->text + t->a, len) == 0;
  if (!same) {
    /* Parse check: the span replaced by the candidate. */
    sc_syntax_tree *copy = NULL;
    sc_completion_check chk;
    size_t before = sc_syntax_tree_error_count(a->tree);
    if (sc_syntax_tree_copy(a->tree, &copy, NULL) == SC_OK &&
        sc_syntax_tree_edit(copy, t->a, t->b, "", 0, NULL) == SC_OK &&
        sc_completion_check_insert(copy, t->a, cand, len, &chk, NULL) == SC_OK &&
        chk.new_errors == 0 && (t->diagnostic == NULL || chk.errors_after < before ||
                                before == 0)) {
      out = malloc(len + 1);
      if (out) {
        memcpy(out, cand, len);
        out[len] = '\0';
      }
    }
    sc_syntax_tree_free(copy);
  }
  return out;
}

/* The targets in the document for the request's range and diagnostics,
 * from the parsed tree (on the job's thread; idx indexes a->text). */
static void find_targets(action_arg *a, const sc_line_index *idx) {
  const sc_syntax_tree *tree = a->tree;
  const char *text = a->text;
  size_t len = a->len;
  /* Diagnostics: from the error to its statement's end, then the statement. */
  size_t i;
  json_t *dg;
  json_array_foreach(a->diags, i, dg) {
    json_t *dr = json_object_get(dg, "range");
    uint32_t dl, dc;
    if (!sc_lsp__get_position(json_object_get(dr, "start"), &dl, &dc)) continue;
    size_t x = sc_pos_to_offset(text, len, idx, dl, dc, a->enc, NULL), s0, s1;
    sc_statement_span(tree, x, &s0, &s1);
    if (x > s0 && x < s1) add_target(a, x, s1, "fix", "quickfix", dg);
    add_target(a, s0, s1, "fix", "quickfix", dg);
  }
  /* Hole markers on the lines of the range. */
  size_t ra = sc_pos_to_offset(text, len, idx, a->l0, a->c0, a->enc, NULL);
  size_t rb = sc_pos_to_offset(text, len, idx, a->l1, a->c1, a->enc, NULL);
  size_t ls = ra, le = rb;
  while (ls > 0 && text[ls - 1] != '\n') ls--;
  while (le < len && text[le] != '\n') le++;
  const char *marker = a->set.hole_marker ? a->set.hole_marker : "TODO(sculpt)";
  for (size_t p = ls; p < le;) {
    const char *nl = memchr(text + p, '\n', le - p);
    size_t e = nl ? (size_t)(nl - text) : le;
    size_t x = p, y = e;
    while (x < y && (text[x] == ' ' || text[x] == '\t')) x++;
    while (y > x && (text[y - 1] == ' ' || text[y - 1] == '\t' || text[y - 1] == '\r')) y--;
    bool python_hole = a->lang && strcmp(a->lang, "python") == 0 && y - x == 3 &&
                       memcmp(text + x, "...", 3) == 0;
    char *line = strndup(text + x, y - x);
    if (line && (strstr(line, marker) || python_hole))
      add_target(a, x, y, "fill hole", "refactor.rewrite", NULL);
    free(line);
    p = e + 1;
  }
  /* An empty body at the cursor. */
  if (ra == rb) {
    sc_completion_plan plan;
    if (sc_completion_plan_at(tree, ra, &plan, NULL) == SC_OK &&
        (plan.kind == SC_COMPLETION_BLOCK || plan.kind == SC_COMPLETION_FUNCTION_BODY))
      add_target(a, ra, ra, "complete block", "refactor.rewrite", NULL);
  }
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
}

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

static json_t *actions_job(sc_job *job, void *argp, sc_error *err) {
  action_arg *a = argp;
  sc_completer *c = a->c;
  /* The remote backend's jobs run on the network lane: c->engine belongs to
   * the model lane, so it is read only when there is no backend. */
  if (a->mode != AM_LAZY && !a->set.backend_url && !c->engine) {
    sc_error_set(err, SC_ERR_UNSUPPORTED, "no model is loaded (see sculpt/status)");
    return NULL;
  }
  sc_error perr = {0};
  if (!(a->tree = sc_syntax_snapshot_parse(a->syn, job, &perr))) {
    if (sc_job_cancelled(job) != SC_JOB_LIVE) {
      sc_error_set(err, SC_ERR_CANCELLED, "cancelled while parsing");
      return NULL;
    }
    SC_LOG_WARN("syntax: %s: %s", a->uri, perr.msg);
  }
  sc_line_index idx = {0};
  if (sc_line_index_build(&idx, a->text, a->len) != SC_OK) {
    sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (a->tree) find_targets(a, &idx);
  if (a->mode == AM_RESOLVE && a->n == 0) {
    sc_line_index_free(&idx);
    sc_error_set(err, SC_ERR_UNSUPPORTED, "nothing to resolve here now");
    return NULL;
  }
  if (a->mode == AM_LAZY) {
    sc_line_index_free(&idx);
    json_t *out = lazy_actions(a);
    if (!out) sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    return out;
  }
  json_t *out = json_array();
  for (int i = 0; i < a->n; i++) {
    const action_target *t = &a->t[i];
    /* Greedy first; if it does not pass, two seeded samples. */
    char *seen[3] = {0};
    int n_seen = 0;
    for (uint64_t seed = 0; seed < 3 && n_seen < 1; seed++) {
      if (sc_job_cancelled(job) != SC_JOB_LIVE) break;
      sc_error cerr = {0};
      char *cand = candidate_for(c, a, t, seed, job, &cerr);
      if (!cand && a->set.backend_url && cerr.status == SC_ERR_IO) {
        /* The backend is down or failing: say so instead of trying on. */
        for (int k = 0; k < n_seen; k++) free(seen[k]);
        sc_line_index_free(&idx);
        json_decref(out);
        *err = cerr;
        return NULL;
      }
      if (!cand) continue;
      bool dup = false;
      for (int k = 0; k < n_seen; k++) dup |= strcmp(seen[k], cand) == 0;
      if (dup) {
        free(cand);
        continue;
      }
      seen[n_seen++] = cand;
      const char *nl = strchr(cand, '\n');
      char title[128];
      snprintf(title, sizeof title, "sculpt: %s: %.*s%s", t->title,
               (int)(nl ? (nl - cand > 48 ? 48 : nl - cand) : (strlen(cand) > 48 ? 48 : (int)strlen(cand))),
               cand, nl || strlen(cand) > 48 ? " …" : "");
      json_t *edit = json_pack("{s:{s:[{s:o, s:s}]}}", "changes", a->uri, "range",
                               range_json(a->text, a->len, &idx, t->a, t->b, a->enc),
                               "newText", cand);
      json_t *action = json_pack("{s:s, s:s, s:o}", "title", title, "kind", t->kind, "edit",
                                 edit);
      if (t->diagnostic) {
        json_object_set_new(action, "diagnostics", json_pack("[O]", t->diagnostic));
        json_object_set_new(action, "isPreferred", json_true());
      }
      if (action) json_array_append_new(out, action);
    }
    for (int k = 0; k < n_seen; k++) free(seen[k]);
  }
  sc_line_index_free(&idx);
  if (sc_job_cancelled(job) != SC_JOB_LIVE) {
    json_decref(out);
    sc_error_set(err, SC_ERR_CANCELLED, "cancelled");
    return NULL;
  }
  return out;
}

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
      !(a->text = malloc(d->len + 1)) || !(a->syn = sc_document_syntax_snapshot(d, &serr))) {
    if (a && !a->syn && a->text && serr.status != SC_ERR_NOMEM) *nothing = true;
    if (a) action_arg_free(a);
    return NULL;
  }
  memcpy(a->text, d->text, d->len);
  a->text[d->len] = '\0';
  a->len = d->len;
  a->remote_context = sc_cpl__remote_context(c);
  a->c = c;
  a->version = d->version;
  a->lang = d->lang;
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
    sc_error_set(&job->err, SC_ERR_IO, "no %s passed the parse check", a->t[0].title);
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

/* run.c — one `sculpt eval` run (eval.h, sc_eval_run): the systems'
 * completions on every task, their scores, and the paired comparisons.
 *
 * A model's completion is decoded exactly as `sculpt complete` decodes
 * (model.h: the preset's parameters, sc_infill_prepare, one engine of the
 * model's context). HumanEval-Infilling gives the prompt and the suffix
 * as they are. A repository task gives the file without its middle, and the
 * prompt is built as the LSP builds it for a completion at that cursor with
 * default settings: the byte windows around the cursor (sc_edit_request_window,
 * the LSP's formula), the repository snippets and the prefix window within
 * contextBudget (1024) less the eighth the LSP leaves for typing
 * (kvReuse), then the suffix's whole lines that fit the rest
 * (sc_prompt_suffix_fit), from an index of the task's package in which the
 * task's file is the edited buffer (sc_workspace_update_file), as an
 * editor's is. The middle a line task keeps is its first k lines: the unit
 * asked for. */
#define _GNU_SOURCE /* strndup, realpath */
#include "eval_impl.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_CONTEXT_BUDGET 1024 /* the LSP's contextBudget default */

typedef struct entry {
  size_t task;
  int snippets; /* repository tasks, a model's: the prompt's snippets */
  char *text;  /* what is scored (a line task: its first lines) */
  size_t len;
  char *raw;   /* what the system wrote, when that was cut */
  size_t raw_len;
  bool passed, exact, empty;
  char result[200];
  int steps, committed, drafted, accepted; /* a model's: passes, tokens, drafts */
  double sim;
  int compiles; /* 1, 0; -1 not judged (not Python, or no interpreter) */
} entry;

typedef struct sysres {
  char name[32];
  entry *e;
  size_t n, cap;
  double ms;             /* generating, all tasks */
  json_t *info;          /* what describes it in the summary (owned) */
} sysres;

typedef struct run {
  const sc_eval_options *o;
  sc_eval_bench *b;
  sysres *sys;
  size_t n_sys;
  /* repository tasks: one index per package */
  char **pkgs;
  sc_workspace **ws;
  size_t n_pkgs;
  char *index_note; /* why a package has no index, or NULL */
  /* the first model's prompts, for the n-gram */
  char **before, **after;
  size_t *before_len, *after_len;
} run;

static bool cancelled(const run *r) { return r->o->cancel && atomic_load(r->o->cancel); }

static void progress(const run *r, const char *phase, size_t done, size_t total) {
  if (r->o->progress) r->o->progress(r->o->user, phase, done, total);
}

static sc_status add_entry(sysres *s, size_t task, char *text, size_t len, sc_error *err) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    entry *g = realloc(s->e, cap * sizeof *g);
    if (!g) {
      free(text);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    s->e = g;
    s->cap = cap;
  }
  s->e[s->n++] = (entry){.task = task, .text = text, .len = len, .compiles = -1, .snippets = -1,
                         .steps = -1};
  return SC_OK;
}

static sysres *new_system(run *r, const char *name, sc_error *err) {
  sysres *g = realloc(r->sys, (r->n_sys + 1) * sizeof *g);
  if (!g) {
    sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  r->sys = g;
  sysres *s = &r->sys[r->n_sys++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->info = json_object();
  return s;
}

static void run_free(run *r) {
  for (size_t i = 0; i < r->n_sys; i++) {
    for (size_t k = 0; k < r->sys[i].n; k++) {
      free(r->sys[i].e[k].text);
      free(r->sys[i].e[k].raw);
    }
    free(r->sys[i].e);
    json_decref(r->sys[i].info);
  }
  free(r->sys);
  for (size_t i = 0; i < r->n_pkgs; i++) {
    free(r->pkgs[i]);
    sc_workspace_free(r->ws[i]);
  }
  free(r->pkgs);
  free(r->ws);
  free(r->index_note);
  size_t n = r->b ? sc_eval_bench_count(r->b) : 0;
  for (size_t i = 0; i < n && r->before; i++) {
    free(r->before[i]);
    free(r->after[i]);
  }
  free(r->before);
  free(r->after);
  free(r->before_len);
  free(r->after_len);
  sc_eval_bench_free(r->b);
}

/* ---- the repository's index ------------------------------------------------------------- */

static sc_workspace *package_index(run *r, const char *pkg) {
  for (size_t i = 0; i < r->n_pkgs; i++)
    if (strcmp(r->pkgs[i], pkg) == 0) return r->ws[i];
  char **p = realloc(r->pkgs, (r->n_pkgs + 1) * sizeof *p);
  if (p) r->pkgs = p;
  sc_workspace **w = realloc(r->ws, (r->n_pkgs + 1) * sizeof *w);
  if (w) r->ws = w;
  if (!p || !w) return NULL;
  char root[PATH_MAX];
  snprintf(root, sizeof root, "%s/%s", sc_eval__bench_repos(r->b), pkg);
  /* Kept nowhere: an evaluation leaves no index in the user's cache. */
  sc_workspace_options wo = {.cache_dir = ""};
  sc_workspace *ws = NULL;
  sc_error e = {0};
  if (sc_workspace_index(root, &wo, &ws, &e) != SC_OK) {
    /* The file alone, as the LSP has it where nothing can be indexed. */
    ws = NULL;
    if (!r->index_note && asprintf(&r->index_note, "%s: %s", pkg, e.msg) < 0) r->index_note = NULL;
  }
  r->pkgs[r->n_pkgs] = strdup(pkg);
  r->ws[r->n_pkgs++] = ws;
  return ws;
}

/* ---- a model as a system ----------------------------------------------------------------- */

typedef struct model_sys {
  sc_model *model;
  sc_tokenizer *tok;
  sc_engine *engine;
  sc_infill_params params;
  sc_device_choice dev;
  bool drafts; /* the run drafts (sc_eval_options.drafts, resolved for the preset) */
} model_sys;

/* One completion's counters, for its entry. */
typedef struct decode_stats {
  int snippets, steps, committed, drafted, accepted;
} decode_stats;

static void model_close(model_sys *m) {
  sc_engine_free(m->engine);
  sc_tokenizer_free(m->tok);
  sc_model_free(m->model);
  memset(m, 0, sizeof *m);
}

static sc_status model_open(const char *dir, const sc_eval_options *o, model_sys *m,
                            sc_error *err) {
  memset(m, 0, sizeof *m);
  sc_model_options mo = {0};
  mo.weights = o->weights;
  sc_device_select(o->device, &m->dev);
  mo.device = m->dev.kind;
  sc_status st = sc_model_load(dir, &mo, &m->model, err);
  if (st == SC_OK) st = sc_tokenizer_load_dir(dir, &m->tok, err);
  /* One engine of the model's context serves every task. */
  if (st == SC_OK) st = sc_engine_new(m->model, m->tok, 0, &m->engine, err);
  if (st != SC_OK) {
    model_close(m);
    return st;
  }
  sc_infill_params_for(m->model, o->preset, &m->params);
  m->drafts = o->drafts >= 0 ? o->drafts == 1 : m->params.preset != SC_PRESET_UPSTREAM;
  if (o->draft_threshold >= 0) m->params.draft_threshold = (float)o->draft_threshold;
  if (o->block_len > 0) m->params.block_len = o->block_len;
  sc_device_choice ran;
  sc_engine_device(m->engine, &m->dev, &ran);
  m->dev = ran;
  return SC_OK;
}

static int canvas_for(const run *r, const model_sys *m, const sc_eval_task *t) {
  if (r->o->oracle_length) {
    int32_t *ids = NULL;
    size_t n = 0;
    sc_tokenizer_encode(m->tok, t->middle, t->middle_len, &ids, &n, NULL);
    free(ids);
    return n > 0 ? (int)n : 1;
  }
  return r->o->max_tokens > 0 ? r->o->max_tokens : sc_eval_bench_canvas(r->b);
}

/* A repository task's prompt, as the LSP builds it (the header comment):
 * *before (owned) and the suffix's length after the cursor. */
static sc_status repo_prompt(run *r, const model_sys *m, const sc_eval_task *t,
                             const sc_infill_budget *fit, char **before, size_t *before_len,
                             char **after, size_t *after_len, bool *after_cut, int *snippets,
                             sc_drafts *drafts, sc_error *err) {
  size_t len = t->before_len + t->after_len, cursor = t->before_len;
  char *text = malloc(len + 1);
  SC_CHECK(text, err, SC_ERR_NOMEM, "out of memory");
  memcpy(text, t->before, t->before_len);
  memcpy(text + t->before_len, t->after, t->after_len);
  text[len] = '\0';
  int budget = r->o->context_budget > 0 ? r->o->context_budget : DEFAULT_CONTEXT_BUDGET;
  sc_edit_request req = {.text = text, .len = len, .lang = t->lang,
                         .site = {.kind = SC_EDIT_HOLE, .start = cursor, .end = cursor,
                                  .anchor = cursor}};
  size_t p0, s1;
  sc_edit_request_window(&req, (size_t)budget, &p0, &s1);
  sc_workspace *ws = package_index(r, t->package);
  /* The task's file as the editor's buffer: without its middle. */
  if (ws) sc_workspace_update_file(ws, t->path, text, len, NULL, NULL);
  int prompt_budget = fit->prompt - fit->prompt / 8;
  sc_prompt pr;
  sc_status st = sc_prompt_build(ws, t->path, t->lang, text + p0, s1 - p0, cursor - p0, m->tok,
                                 (size_t)(prompt_budget >= 16 ? prompt_budget : 16), &pr, err);
  if (st != SC_OK) {
    if (ws) sc_workspace_update_file(ws, t->path, NULL, 0, NULL, NULL); /* back to the disk's */
    free(text);
    return st;
  }
  *before = sc_prompt_text(&pr, before_len);
  *snippets = (int)pr.n_snippets;
  sc_prompt_free(&pr);
  if (!*before) {
    free(text);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  size_t win_after = s1 - cursor;
  *after_len = sc_prompt_suffix_fit(m->tok, *before, *before_len, text + cursor, win_after,
                                    (size_t)prompt_budget);
  *after_cut = s1 < len || *after_len < win_after;
  *after = sc_memdup(text + cursor, *after_len);
  /* Drafts while the index holds the buffer: the disk's copy of the task's
   * file holds the middle, which no draft may see. */
  if (*after && drafts) {
    sc_draft_query q = {.before = *before, .before_len = *before_len, .after = *after,
                        .after_len = *after_len, .ws = ws};
    sc_drafts_find(&q, drafts);
  }
  if (ws) sc_workspace_update_file(ws, t->path, NULL, 0, NULL, NULL); /* back to the disk's */
  free(text);
  SC_CHECK(*after, err, SC_ERR_NOMEM, "out of memory");
  return SC_OK;
}

/* One completion from the model for task i. keep_prompt: the prompt is
 * kept for the n-gram (the first model's). */
static sc_status model_complete(run *r, model_sys *m, size_t i, bool keep_prompt, char **text,
                                size_t *len, decode_stats *ds, sc_error *err) {
  const sc_eval_task *t = sc_eval_bench_task(r->b, i);
  sc_infill_plan plan = {1, {canvas_for(r, m, t)}};
  int ctx = sc_engine_context(m->engine);
  char *before = NULL, *after = NULL;
  size_t bl = 0, al = 0;
  bool after_cut = false;
  int budget = 0;
  sc_drafts found = {0};
  sc_draft_runs runs = {0};
  if (sc_eval_bench_scoring(r->b) == SC_EVAL_MATCH) {
    budget = r->o->context_budget > 0 ? r->o->context_budget : DEFAULT_CONTEXT_BUDGET;
    sc_infill_budget fit;
    sc_infill_plan p2 = plan;
    sc_infill_params q = m->params;
    SC_TRY(sc_infill_fit_plan(m->model, ctx, budget, &p2, &q, &fit, err));
    SC_TRY(repo_prompt(r, m, t, &fit, &before, &bl, &after, &al, &after_cut, &ds->snippets,
                       m->drafts ? &found : NULL, err));
  } else {
    before = sc_memdup(t->before, t->before_len);
    after = sc_memdup(t->after, t->after_len);
    bl = t->before_len;
    al = t->after_len;
    if (!before || !after) {
      free(before);
      free(after);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    if (m->drafts) {
      sc_draft_query q = {.before = before, .before_len = bl, .after = after, .after_len = al};
      sc_drafts_find(&q, &found);
    }
  }
  sc_infill_prepared prep;
  sc_infill_result res = {0};
  sc_status st = sc_infill_prepare(m->model, m->tok, ctx, budget, before, bl, after, al,
                                   after_cut, &plan, &m->params, &prep, err);
  if (st == SC_OK && found.n) {
    st = sc_drafts_encode(&found, m->tok, prep.plan.lengths[0], &runs, err);
    prep.params.drafts = runs.d;
    prep.params.n_drafts = runs.n;
  }
  if (st == SC_OK) {
    st = sc_engine_infill_prepared(m->engine, &prep, r->o->cancel, NULL, NULL, &res, err);
    sc_infill_prepared_free(&prep);
  }
  sc_draft_runs_free(&runs);
  sc_drafts_free(&found);
  ds->steps = res.steps;
  ds->committed = res.committed;
  ds->drafted = res.drafted;
  ds->accepted = res.accepted;
  if (st == SC_OK) {
    *len = res.text_len;
    *text = res.text ? res.text : strdup("");
    res.text = NULL;
    if (!*text) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  sc_infill_result_free(&res);
  if (st == SC_OK && keep_prompt) {
    r->before[i] = before;
    r->after[i] = after;
    r->before_len[i] = bl;
    r->after_len[i] = al;
  } else {
    free(before);
    free(after);
  }
  return st;
}

static sc_status run_model(run *r, const char *name, const char *dir, bool keep_prompts,
                           sc_error *err) {
  model_sys m;
  SC_TRY(model_open(dir, r->o, &m, err));
  sysres *s = new_system(r, name, err);
  if (!s) {
    model_close(&m);
    return SC_ERR_NOMEM;
  }
  const sc_model_info *info = sc_model_get_info(m.model);
  json_object_set_new(s->info, "model", json_string(dir));
  json_object_set_new(s->info, "family", json_string(sc_model_family_name(info->family)));
  json_object_set_new(s->info, "preset", json_string(sc_preset_name(m.params.preset)));
  json_object_set_new(s->info, "loop", json_string(sc_decode_loop_name(m.params.loop)));
  json_object_set_new(s->info, "device", json_string(m.dev.description));
  json_object_set_new(s->info, "weights", json_string(sc_weights_kind_name(info->weights)));
  json_object_set_new(s->info, "context", json_integer(sc_engine_context(m.engine)));
  json_object_set_new(s->info, "drafts", json_boolean(m.drafts));
  json_object_set_new(s->info, "draft_threshold", json_real(m.params.draft_threshold));
  json_object_set_new(s->info, "block_len", json_integer(m.params.block_len));
  size_t n = sc_eval_bench_count(r->b);
  sc_status st = SC_OK;
  double t0 = sc_now_ms();
  for (size_t i = 0; i < n && st == SC_OK; i++) {
    if (cancelled(r)) {
      st = sc_error_set(err, SC_ERR_CANCELLED, "cancelled");
      break;
    }
    char *text = NULL;
    size_t len = 0;
    decode_stats ds = {.snippets = -1};
    st = model_complete(r, &m, i, keep_prompts, &text, &len, &ds, err);
    if (st == SC_OK) st = add_entry(s, i, text, len, err);
    if (st == SC_OK) {
      entry *e = &s->e[s->n - 1];
      e->snippets = ds.snippets;
      e->steps = ds.steps;
      e->committed = ds.committed;
      e->drafted = ds.drafted;
      e->accepted = ds.accepted;
    }
    progress(r, name, i + 1, n);
  }
  s->ms = sc_now_ms() - t0;
  json_object_set_new(s->info, "ms_per_task", json_real(n ? s->ms / (double)n : 0));
  model_close(&m);
  return st;
}

/* ---- the n-gram and the samples ---------------------------------------------------------- */

/* Whether the benchmark's middles are whole lines (the n-gram predicts lines). */
static bool line_tasks(const sc_eval_bench *b) {
  const char *n = sc_eval_bench_name(b);
  return strcmp(n, "humaneval-single") == 0 || strcmp(n, "humaneval-multi") == 0 ||
         strcmp(n, "repo-single") == 0 || strcmp(n, "repo-multi") == 0;
}

/* The benchmark's documents, which the n-gram must not learn from: each
 * task's whole text (a repository file once, however many tasks it gives). */
static sc_eval_protect *protect_tasks(const run *r) {
  sc_eval_protect *p = sc_eval_protect_new();
  size_t n = sc_eval_bench_count(r->b);
  for (size_t i = 0; p && i < n; i++) {
    const sc_eval_task *t = sc_eval_bench_task(r->b, i);
    bool seen = false;
    for (size_t k = 0; t->path && k < i && !seen; k++) {
      const sc_eval_task *u = sc_eval_bench_task(r->b, k);
      seen = u->path && strcmp(u->path, t->path) == 0 && u->package && t->package &&
             strcmp(u->package, t->package) == 0;
    }
    if (seen) continue;
    size_t ml = t->middle ? t->middle_len : 0, tl = t->test ? strlen(t->test) : 0;
    size_t len = t->before_len + ml + t->after_len + 1 + tl;
    char *doc = malloc(len ? len : 1);
    bool ok = doc != NULL;
    if (ok) {
      char *q = doc;
      memcpy(q, t->before, t->before_len), q += t->before_len;
      if (ml) memcpy(q, t->middle, ml), q += ml;
      memcpy(q, t->after, t->after_len), q += t->after_len;
      *q++ = '\n';
      if (tl) memcpy(q, t->test, tl);
      ok = sc_eval_protect_add(p, doc, len);
    }
    free(doc);
    if (!ok) {
      sc_eval_protect_free(p);
      p = NULL;
    }
  }
  return p;
}

static sc_status run_ngram(run *r, const char *corpus, sc_error *err) {
  sc_eval_ngram *g = NULL;
  size_t files = 0, left_out = 0;
  double t0 = sc_now_ms();
  progress(r, "line-ngram (training)", 0, 1);
  sc_eval_protect *protect = protect_tasks(r);
  SC_CHECK(protect, err, SC_ERR_NOMEM, "out of memory");
  sc_status ts = sc_eval_ngram_train(corpus, protect, &g, &files, &left_out, err);
  sc_eval_protect_free(protect);
  SC_TRY(ts);
  sysres *s = new_system(r, "line-ngram", err);
  if (!s) {
    sc_eval_ngram_free(g);
    return SC_ERR_NOMEM;
  }
  json_object_set_new(s->info, "corpus", json_string(corpus));
  json_object_set_new(s->info, "corpus_files", json_integer((json_int_t)files));
  json_object_set_new(s->info, "corpus_left_out", json_integer((json_int_t)left_out));
  json_object_set_new(s->info, "train_ms", json_real(sc_now_ms() - t0));
  size_t n = sc_eval_bench_count(r->b);
  sc_status st = SC_OK;
  t0 = sc_now_ms();
  for (size_t i = 0; i < n && st == SC_OK; i++) {
    const sc_eval_task *t = sc_eval_bench_task(r->b, i);
    /* The prompt the model got (snippets, windows) where it was kept; the
     * task's own text otherwise. */
    const char *b = r->before && r->before[i] ? r->before[i] : t->before;
    size_t bl = r->before && r->before[i] ? r->before_len[i] : t->before_len;
    const char *a = r->after && r->after[i] ? r->after[i] : t->after;
    size_t al = r->after && r->after[i] ? r->after_len[i] : t->after_len;
    size_t len = 0;
    char *text = sc_eval_ngram_predict(g, t->lang, b, bl, a, al, t->lines, &len);
    st = text ? add_entry(s, i, text, len, err) : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    progress(r, "line-ngram", i + 1, n);
  }
  s->ms = sc_now_ms() - t0;
  sc_eval_ngram_free(g);
  return st;
}

typedef struct samples_load {
  run *r;
  sysres *s;
  const char *path;
} samples_load;

static sc_status sample_line(void *user, json_t *o, size_t line, sc_error *err) {
  samples_load *l = user;
  const char *id = json_string_value(json_object_get(o, "task_id"));
  json_t *c = json_object_get(o, "completion");
  SC_CHECK(id && json_is_string(c), err, SC_ERR_FORMAT,
           "%s:%zu: a sample needs string task_id and completion", l->path, line);
  size_t n = sc_eval_bench_count(l->r->b), k = n;
  /* Samples come in task order in the harness's files: look near the last. */
  for (size_t i = 0; i < n && k == n; i++)
    if (strcmp(sc_eval_bench_task(l->r->b, i)->id, id) == 0) k = i;
  SC_CHECK(k < n, err, SC_ERR_FORMAT, "%s:%zu: task_id '%s' is not in %s", l->path, line, id,
           sc_eval_bench_name(l->r->b));
  char *text = sc_memdup(json_string_value(c), json_string_length(c));
  SC_CHECK(text, err, SC_ERR_NOMEM, "out of memory");
  return add_entry(l->s, k, text, json_string_length(c), err);
}

static sc_status load_samples(run *r, const char *samples, sc_error *err) {
  bool canonical = strcmp(samples, "canonical") == 0;
  sysres *s = new_system(r, canonical ? "canonical" : "samples", err);
  if (!s) return SC_ERR_NOMEM;
  json_object_set_new(s->info, "samples", json_string(samples));
  size_t n = sc_eval_bench_count(r->b);
  if (canonical) {
    for (size_t i = 0; i < n; i++) {
      const sc_eval_task *t = sc_eval_bench_task(r->b, i);
      char *text = sc_memdup(t->middle, t->middle_len);
      SC_CHECK(text, err, SC_ERR_NOMEM, "out of memory");
      SC_TRY(add_entry(s, i, text, t->middle_len, err));
    }
    return SC_OK;
  }
  char *text = NULL;
  size_t len = 0;
  SC_TRY(sc_eval__read_file(samples, &text, &len, err));
  samples_load l = {r, s, samples};
  sc_status st = sc_eval__each_json_line(samples, text, len, sample_line, &l, err);
  free(text);
  SC_TRY(st);
  SC_CHECK(s->n > 0, err, SC_ERR_FORMAT, "%s: no samples", samples);
  return SC_OK;
}

/* ---- scoring ---------------------------------------------------------------------------- */

static bool all_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return false;
  return true;
}

static void exec_progress(void *user, size_t done, size_t total) {
  const run *r = user;
  progress(r, "tests", done, total);
}

static sc_status score_execute(run *r, sc_error *err) {
  size_t total = 0;
  for (size_t s = 0; s < r->n_sys; s++) total += r->sys[s].n;
  char **progs = calloc(total ? total : 1, sizeof *progs);
  size_t *lens = calloc(total ? total : 1, sizeof *lens);
  sc_eval_verdict *v = calloc(total ? total : 1, sizeof *v);
  sc_status st = progs && lens && v ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  size_t k = 0;
  for (size_t s = 0; st == SC_OK && s < r->n_sys; s++)
    for (size_t i = 0; st == SC_OK && i < r->sys[s].n; i++, k++) {
      entry *e = &r->sys[s].e[i];
      progs[k] = sc_eval_program(sc_eval_bench_task(r->b, e->task), e->text, e->len, &lens[k]);
      if (!progs[k]) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
  if (st == SC_OK) {
    sc_eval_exec_options eo = r->o->exec;
    eo.progress = exec_progress;
    eo.user = r;
    eo.cancel = r->o->cancel;
    st = sc_eval_execute(&eo, (const char *const *)progs, lens, total, v, err);
  }
  k = 0;
  for (size_t s = 0; st == SC_OK && s < r->n_sys; s++)
    for (size_t i = 0; i < r->sys[s].n; i++, k++) {
      entry *e = &r->sys[s].e[i];
      const sc_eval_task *t = sc_eval_bench_task(r->b, e->task);
      e->passed = v[k].passed;
      memcpy(e->result, v[k].result, sizeof e->result);
      e->exact = sc_eval_exact(e->text, e->len, t->middle, t->middle_len);
      e->empty = all_blank(e->text, e->len);
    }
  for (size_t i = 0; progs && i < total; i++) free(progs[i]);
  free(progs);
  free(lens);
  free(v);
  return st;
}

static sc_status score_match(run *r, sc_error *err) {
  size_t total = 0, done = 0;
  for (size_t s = 0; s < r->n_sys; s++) total += r->sys[s].n;
  for (size_t s = 0; s < r->n_sys; s++)
    for (size_t i = 0; i < r->sys[s].n; i++) {
      if (cancelled(r)) return sc_error_set(err, SC_ERR_CANCELLED, "cancelled");
      entry *e = &r->sys[s].e[i];
      const sc_eval_task *t = sc_eval_bench_task(r->b, e->task);
      /* The unit asked for: the first k lines; the rest is kept as raw. */
      size_t keep = sc_eval__first_lines(e->text, e->len, t->lines);
      if (keep < e->len) {
        e->raw = e->text;
        e->raw_len = e->len;
        e->text = strndup(e->raw, keep);
        e->len = keep;
        SC_CHECK(e->text, err, SC_ERR_NOMEM, "out of memory");
      }
      e->exact = sc_eval_exact(e->text, e->len, t->middle, t->middle_len);
      e->sim = sc_eval_similarity(e->text, e->len, t->middle, t->middle_len);
      e->empty = all_blank(e->text, e->len);
      if (strcmp(t->lang, "python") == 0) {
        /* The whole file with the middle in place, ending its line. */
        bool nl = e->len > 0 && e->text[e->len - 1] != '\n';
        size_t n = t->before_len + e->len + nl + t->after_len;
        char *file = malloc(n + 1);
        SC_CHECK(file, err, SC_ERR_NOMEM, "out of memory");
        memcpy(file, t->before, t->before_len);
        memcpy(file + t->before_len, e->text, e->len);
        if (nl) file[t->before_len + e->len] = '\n';
        memcpy(file + t->before_len + e->len + nl, t->after, t->after_len);
        int c = sc_edit_python_compiles(file, n);
        free(file);
        /* An empty middle is not a completion, even where the file compiles. */
        e->compiles = c < 0 ? -1 : (c == 1 && !e->empty);
      }
      progress(r, "scoring", ++done, total);
    }
  return SC_OK;
}

/* ---- results ----------------------------------------------------------------------------- */

/* The binary measure paired tests compare: passed, or exact. */
static bool success(const run *r, const entry *e) {
  return sc_eval_bench_scoring(r->b) == SC_EVAL_EXECUTE ? e->passed : e->exact;
}

static json_t *system_summary(const run *r, const sysres *s) {
  size_t n_tasks = sc_eval_bench_count(r->b);
  /* pass@1 per task: its passed samples over its samples (the harness's
   * unbiased estimator for k = 1), averaged over the tasks with samples. */
  size_t *cnt = calloc(n_tasks ? n_tasks : 1, sizeof *cnt);
  size_t *ok = calloc(n_tasks ? n_tasks : 1, sizeof *ok);
  double exact = 0, empty = 0, sim = 0;
  size_t py = 0, py_ok = 0, py_judged = 0;
  for (size_t i = 0; cnt && ok && i < s->n; i++) {
    const entry *e = &s->e[i];
    cnt[e->task]++;
    ok[e->task] += e->passed;
    exact += e->exact;
    empty += e->empty;
    sim += e->sim;
    const sc_eval_task *t = sc_eval_bench_task(r->b, e->task);
    if (strcmp(t->lang, "python") == 0) {
      py++;
      if (e->compiles >= 0) py_judged++, py_ok += e->compiles;
    }
  }
  size_t covered = 0;
  double pass = 0;
  for (size_t t = 0; cnt && ok && t < n_tasks; t++)
    if (cnt[t]) covered++, pass += (double)ok[t] / (double)cnt[t];
  free(cnt);
  free(ok);
  json_t *o = json_deep_copy(s->info);
  json_object_set_new(o, "name", json_string(s->name));
  json_object_set_new(o, "completions", json_integer((json_int_t)s->n));
  json_object_set_new(o, "tasks", json_integer((json_int_t)covered));
  double n = s->n ? (double)s->n : 1;
  if (sc_eval_bench_scoring(r->b) == SC_EVAL_EXECUTE)
    json_object_set_new(o, "pass@1", json_real(covered ? pass / (double)covered : 0));
  json_object_set_new(o, "exact_match", json_real(exact / n));
  json_object_set_new(o, "empty", json_integer((json_int_t)empty));
  /* A model's passes: the tokens a forward pass committed over the run,
   * and what drafting did. */
  long steps = 0, committed = 0, drafted = 0, accepted = 0, with = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->e[i].steps < 0) continue;
    steps += s->e[i].steps;
    committed += s->e[i].committed;
    drafted += s->e[i].drafted;
    accepted += s->e[i].accepted;
    with += s->e[i].drafted > 0;
  }
  if (steps > 0) {
    json_object_set_new(o, "tokens_per_pass", json_real((double)committed / (double)steps));
    json_object_set_new(o, "passes", json_integer(steps));
    json_object_set_new(o, "draft_tokens",
                        json_pack("{s:I, s:I, s:I, s:I}", "drafted", (json_int_t)drafted,
                                  "accepted", (json_int_t)accepted, "rejected",
                                  (json_int_t)(drafted - accepted), "tasks", (json_int_t)with));
  }
  if (sc_eval_bench_scoring(r->b) == SC_EVAL_MATCH) {
    /* Per package: a package the model was trained on (contamination) or
     * a language it never saw shows apart. */
    json_t *by = json_object();
    for (size_t i = 0; i < s->n; i++) {
      const sc_eval_task *t = sc_eval_bench_task(r->b, s->e[i].task);
      if (json_object_get(by, t->package)) continue;
      size_t tn = 0;
      double ex = 0, si = 0;
      for (size_t k = i; k < s->n; k++) {
        const sc_eval_task *u = sc_eval_bench_task(r->b, s->e[k].task);
        if (strcmp(u->package, t->package) != 0) continue;
        tn++;
        ex += s->e[k].exact;
        si += s->e[k].sim;
      }
      json_object_set_new(by, t->package,
                          json_pack("{s:s, s:I, s:f, s:f}", "lang", t->lang, "tasks",
                                    (json_int_t)tn, "exact_match", ex / (double)tn,
                                    "char_similarity", si / (double)tn));
    }
    json_object_set_new(o, "by_package", by);
    json_object_set_new(o, "char_similarity", json_real(sim / n));
    json_object_set_new(o, "python_tasks", json_integer((json_int_t)py));
    json_object_set_new(o, "python_compiles",
                        py_judged ? json_real((double)py_ok / (double)py_judged) : json_null());
  }
  return o;
}

/* McNemar on the first completion of each task both systems did. */
static json_t *paired(const run *r, const sysres *a, const sysres *b) {
  size_t n_tasks = sc_eval_bench_count(r->b);
  signed char *x = calloc(n_tasks ? n_tasks : 1, 1), *y = calloc(n_tasks ? n_tasks : 1, 1);
  json_t *o = NULL;
  if (x && y) {
    for (size_t i = a->n; i-- > 0;) x[a->e[i].task] = 1 + success(r, &a->e[i]);
    for (size_t i = b->n; i-- > 0;) y[b->e[i].task] = 1 + success(r, &b->e[i]);
    long only_a = 0, only_b = 0, both = 0, pairs = 0;
    for (size_t t = 0; t < n_tasks; t++) {
      if (!x[t] || !y[t]) continue;
      pairs++;
      only_a += x[t] == 2 && y[t] == 1;
      only_b += x[t] == 1 && y[t] == 2;
      both += x[t] == 2 && y[t] == 2;
    }
    o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f}", "a", a->name, "b", b->name,
                  "measure", sc_eval_bench_scoring(r->b) == SC_EVAL_EXECUTE ? "passed" : "exact",
                  "pairs", (json_int_t)pairs, "both", (json_int_t)both, "only_a",
                  (json_int_t)only_a, "only_b", (json_int_t)only_b, "p",
                  sc_eval_mcnemar_p(only_a, only_b));
  }
  free(x);
  free(y);
  return o;
}

static json_t *task_line(const run *r, const sysres *s, const entry *e) {
  const sc_eval_task *t = sc_eval_bench_task(r->b, e->task);
  json_t *o = json_object();
  json_object_set_new(o, "bench", json_string(sc_eval_bench_name(r->b)));
  json_object_set_new(o, "task_id", json_string(t->id));
  json_object_set_new(o, "system", json_string(s->name));
  json_object_set_new(o, "completion", json_stringn(e->text, e->len));
  if (e->raw) json_object_set_new(o, "raw", json_stringn(e->raw, e->raw_len));
  if (sc_eval_bench_scoring(r->b) == SC_EVAL_EXECUTE) {
    json_object_set_new(o, "passed", json_boolean(e->passed));
    json_object_set_new(o, "result", json_string(e->result));
  } else {
    json_object_set_new(o, "expected", json_stringn(t->middle, t->middle_len));
    json_object_set_new(o, "similarity", json_real(e->sim));
    json_object_set_new(o, "compiles", e->compiles < 0 ? json_null() : json_boolean(e->compiles));
    json_object_set_new(o, "lang", json_string(t->lang));
    json_object_set_new(o, "package", json_string(t->package));
    if (e->snippets >= 0) json_object_set_new(o, "snippets", json_integer(e->snippets));
  }
  json_object_set_new(o, "exact", json_boolean(e->exact));
  json_object_set_new(o, "empty", json_boolean(e->empty));
  if (e->steps >= 0) {
    json_object_set_new(o, "steps", json_integer(e->steps));
    json_object_set_new(o, "committed", json_integer(e->committed));
    json_object_set_new(o, "drafted", json_integer(e->drafted));
    json_object_set_new(o, "accepted", json_integer(e->accepted));
  }
  return o;
}

static const char *ngram_corpus_for(const char *model_dir, char *buf, size_t cap) {
  struct stat st;
  const char *dirs[2] = {model_dir, sc_model_shipped_dir()};
  for (int i = 0; i < 2; i++) {
    if (!dirs[i]) continue;
    snprintf(buf, cap, "%s/corpus_manifest.json", dirs[i]);
    if (stat(buf, &st) == 0) return buf;
  }
  return NULL;
}

sc_status sc_eval_run(const sc_eval_options *o, json_t **summary, json_t **tasks,
                      json_t **samples, sc_error *err) {
  *summary = *tasks = NULL;
  if (samples) *samples = NULL;
  run r = {.o = o};
  SC_TRY(sc_eval_bench_load(o->bench, &o->data, &r.b, err));
  size_t n = sc_eval_bench_count(r.b);
  sc_status st = SC_OK;
  const char *ngram_note = NULL;
  char corpus_buf[PATH_MAX];
  char *dir = NULL; /* the model's folder (a name resolved: model.h, sc_model_resolve) */
  if (o->samples) {
    st = load_samples(&r, o->samples, err);
  } else {
    st = sc_model_resolve(o->model_dir, &dir, err);
    if (st == SC_OK && !dir)
      st = sc_error_set(err, SC_ERR_INVALID,
                        "no model: pass --model DIR or ORG/NAME, or set SCULPT_MODEL");
    bool keep = o->baselines && line_tasks(r.b);
    if (st == SC_OK && keep) {
      r.before = calloc(n, sizeof *r.before);
      r.after = calloc(n, sizeof *r.after);
      r.before_len = calloc(n, sizeof *r.before_len);
      r.after_len = calloc(n, sizeof *r.after_len);
      if (!r.before || !r.after || !r.before_len || !r.after_len)
        st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    if (st == SC_OK) st = run_model(&r, "model", dir, keep, err);
    const char *shipped = sc_model_shipped_dir();
    if (st == SC_OK && o->baselines && shipped && !sc_model_is_builtin(dir))
      st = run_model(&r, "shipped-model", shipped, false, err);
    if (st == SC_OK && o->baselines && line_tasks(r.b)) {
      const char *corpus = o->ngram_corpus ? o->ngram_corpus
                                           : ngram_corpus_for(dir, corpus_buf, sizeof corpus_buf);
      if (corpus) st = run_ngram(&r, corpus, err);
      else ngram_note = "no corpus: the model has no corpus_manifest.json (--ngram-corpus)";
    }
  }
  if (st == SC_OK)
    st = sc_eval_bench_scoring(r.b) == SC_EVAL_EXECUTE ? score_execute(&r, err)
                                                        : score_match(&r, err);
  free(dir); /* the systems' summaries hold copies */
  if (st != SC_OK) {
    run_free(&r);
    return st;
  }
  json_t *sum = json_object(), *systems = json_array(), *pairs = json_array();
  json_t *lines = json_array(), *official = samples ? json_array() : NULL;
  for (size_t s = 0; s < r.n_sys; s++) {
    json_array_append_new(systems, system_summary(&r, &r.sys[s]));
    if (s > 0) json_array_append_new(pairs, paired(&r, &r.sys[0], &r.sys[s]));
    for (size_t i = 0; i < r.sys[s].n; i++) {
      const entry *e = &r.sys[s].e[i];
      json_array_append_new(lines, task_line(&r, &r.sys[s], e));
      if (official && s == 0) {
        json_t *x = json_pack("{s:s, s:s%}", "task_id", sc_eval_bench_task(r.b, e->task)->id,
                              "completion", e->text, e->len);
        if (x && sc_eval_bench_scoring(r.b) == SC_EVAL_EXECUTE) {
          json_object_set_new(x, "passed", json_boolean(e->passed));
          json_object_set_new(x, "result", json_string(e->result));
        }
        json_array_append_new(official, x);
      }
    }
  }
  json_object_set_new(sum, "bench", json_string(sc_eval_bench_name(r.b)));
  json_object_set_new(sum, "scoring", json_string(sc_eval_bench_scoring(r.b) == SC_EVAL_EXECUTE
                                                      ? "execute" : "match"));
  json_object_set_new(sum, "tasks", json_integer((json_int_t)n));
  json_object_set_new(sum, "systems", systems);
  json_object_set_new(sum, "mcnemar", pairs);
  json_t *set = json_object();
  int canvas = o->max_tokens > 0 ? o->max_tokens : sc_eval_bench_canvas(r.b);
  if (!o->samples)
    json_object_set_new(set, "canvas",
                        o->oracle_length ? json_string("oracle") : json_integer(canvas));
  if (sc_eval_bench_scoring(r.b) == SC_EVAL_EXECUTE) {
    const sc_eval_exec_options *x = &o->exec;
    json_object_set_new(set, "timeout_s", json_real(x->timeout_s > 0 ? x->timeout_s : 3.0));
    json_object_set_new(set, "sandbox", json_string(sc_eval_sandbox()));
  } else {
    json_object_set_new(set, "context_budget",
                        json_integer(o->context_budget > 0 ? o->context_budget
                                                           : DEFAULT_CONTEXT_BUDGET));
    json_object_set_new(set, "repos", json_string(sc_eval__bench_repos(r.b)));
    if (r.index_note) json_object_set_new(set, "index", json_string(r.index_note));
  }
  if (ngram_note) json_object_set_new(set, "line_ngram", json_string(ngram_note));
  json_object_set_new(sum, "settings", set);
  run_free(&r);
  *summary = sum;
  *tasks = lines;
  if (samples) *samples = official;
  return SC_OK;
}

/* ---- comparing two runs -------------------------------------------------------------------- */

typedef struct res_load {
  const char *path;
  json_t *lines;
} res_load;

static sc_status res_line(void *user, json_t *o, size_t line, sc_error *err) {
  res_load *l = user;
  json_t *v = json_object_get(o, "passed");
  if (!json_is_boolean(v)) v = json_object_get(o, "exact");
  SC_CHECK(json_is_string(json_object_get(o, "bench")) &&
               json_is_string(json_object_get(o, "task_id")) &&
               json_is_string(json_object_get(o, "system")) && json_is_boolean(v),
           err, SC_ERR_FORMAT,
           "%s:%zu: not a line of sculpt eval's per-task results (bench, task_id, system, "
           "passed or exact)",
           l->path, line);
  json_array_append(l->lines, o);
  return SC_OK;
}

sc_status sc_eval_results_read(const char *path, json_t **lines, sc_error *err) {
  *lines = NULL;
  char *text = NULL;
  size_t len = 0;
  SC_TRY(sc_eval__read_file(path, &text, &len, err));
  res_load l = {path, json_array()};
  sc_status st = sc_eval__each_json_line(path, text, len, res_line, &l, err);
  free(text);
  if (st == SC_OK && json_array_size(l.lines) == 0)
    st = sc_error_set(err, SC_ERR_FORMAT, "%s: no results", path);
  if (st != SC_OK) {
    json_decref(l.lines);
    return st;
  }
  *lines = l.lines;
  return SC_OK;
}

/* "bench\ttask_id" -> its success, for one system's first line per task. */
static json_t *outcomes(const json_t *lines, const char *sys_name) {
  json_t *map = json_object();
  size_t i;
  json_t *o;
  json_array_foreach(lines, i, o) {
    const char *sys = json_string_value(json_object_get(o, "system"));
    if (!sys || strcmp(sys, sys_name) != 0) continue;
    json_t *v = json_object_get(o, "passed");
    if (!json_is_boolean(v)) v = json_object_get(o, "exact");
    char key[4096];
    snprintf(key, sizeof key, "%s\t%s", json_string_value(json_object_get(o, "bench")),
             json_string_value(json_object_get(o, "task_id")));
    if (json_is_boolean(v) && !json_object_get(map, key)) json_object_set(map, key, v);
  }
  return map;
}

sc_status sc_eval_compare(const json_t *a_lines, const json_t *b_lines, const char *sys_a,
                          const char *sys_b, json_t **out, sc_error *err) {
  *out = NULL;
  if (!sys_a) sys_a = "model";
  if (!sys_b) sys_b = "model";
  json_t *a = outcomes(a_lines, sys_a), *b = outcomes(b_lines, sys_b);
  long pairs = 0, ra = 0, rb = 0, only_a = 0, only_b = 0;
  const char *key;
  json_t *va;
  json_object_foreach(a, key, va) {
    json_t *vb = json_object_get(b, key);
    if (!vb) continue;
    bool x = json_is_true(va), y = json_is_true(vb);
    pairs++;
    ra += x;
    rb += y;
    only_a += x && !y;
    only_b += !x && y;
  }
  json_decref(a);
  json_decref(b);
  SC_CHECK(pairs > 0, err, SC_ERR_INVALID,
           "no task pairs up (system '%s' against '%s': the same benchmark and task_ids?)",
           sys_a, sys_b);
  *out = json_pack("{s:s, s:s, s:I, s:f, s:f, s:I, s:I, s:f}", "a", sys_a, "b", sys_b, "pairs",
                   (json_int_t)pairs, "a_rate", (double)ra / (double)pairs, "b_rate",
                   (double)rb / (double)pairs, "only_a", (json_int_t)only_a, "only_b",
                   (json_int_t)only_b, "p", sc_eval_mcnemar_p(only_a, only_b));
  return SC_OK;
}

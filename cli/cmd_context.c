/* cmd_context.c — `sculpt context FILE:LINE:COL`: the prompt sculpt would
 * build at a position, as JSON: the windows, and each snippet with its
 * source, the reason it was chosen, what it defines, its token count and,
 * for similar chunks, its Jaccard score. --open PATH treats a file as an
 * open editor buffer (repeatable; the first is the most recently used);
 * --edited PATH:LINE[-LINE] is a recently edited range (1-based,
 * repeatable; the first is the most recent). --positions FILE builds the
 * prompt at every FILE:LINE:COL listed there, one JSON object a line, on
 * one index; --cut builds it as if the rest of the cursor's line were not
 * typed yet (both evaluation aids: tools/eval/context_recall.py). */
#define _DEFAULT_SOURCE /* realpath */
#include "cli.h"
#include "context.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "context"

/* path as the prompt names it: relative to root when inside it, else
 * absolute (owned by the caller). */
static char *rel_to_root(const char *root, const char *path) {
  char abs_path[PATH_MAX];
  if (!realpath(path, abs_path)) snprintf(abs_path, sizeof abs_path, "%s", path);
  size_t rl = root ? strlen(root) : 0;
  if (root && strncmp(abs_path, root, rl) == 0 && abs_path[rl] == '/')
    return strdup(abs_path + rl + 1);
  return strdup(abs_path);
}

/* "PATH:LINE" or "PATH:LINE-LINE" (1-based) into *path (owned) and 0-based
 * lines. */
static bool parse_edited(const char *v, char **path, uint32_t *a, uint32_t *b) {
  const char *colon = strrchr(v, ':');
  if (!colon || colon == v) return false;
  char *end;
  errno = 0;
  long x = strtol(colon + 1, &end, 10), y = x;
  if (errno || end == colon + 1 || x < 1 || x > 100000000) return false;
  if (*end == '-') {
    const char *s2 = end + 1;
    y = strtol(s2, &end, 10);
    if (errno || end == s2 || y < x || y > 100000000) return false;
  }
  if (*end) return false;
  *path = strndup(v, (size_t)(colon - v));
  *a = (uint32_t)(x - 1);
  *b = (uint32_t)(y - 1);
  return *path != NULL;
}

/* The prompt as JSON (a new reference). */
static json_t *prompt_json(const sc_prompt *p, const char *rel, const char *lang, long line,
                           long col, size_t offset, long budget) {
  json_t *snips = json_array();
  for (size_t i = 0; i < p->n_snippets; i++) {
    const sc_context_snippet *s = &p->snippets[i];
    json_t *js = json_pack("{s:s, s:{s:i, s:i}, s:s, s:s, s:s, s:b, s:I, s:s%}", "path", s->path,
                           "range", "start_line", (int)s->start_line + 1, "end_line",
                           (int)s->end_line + 1, "reason", s->reason, "name", s->name, "kind",
                           s->kind, "body", s->body, "tokens", (json_int_t)s->tokens, "text",
                           s->text, s->len);
    if (js && strcmp(s->reason, "similar chunk") == 0)
      json_object_set_new(js, "score", json_real((double)s->score));
    json_array_append_new(snips, js);
  }
  return json_pack(
      "{s:s, s:{s:i, s:i, s:I}, s:s?, s:s%, s:s%, s:o, s:{s:I, s:I, s:I, s:I}, s:b}", "file", rel,
      "cursor", "line", (int)line, "column", (int)col, "offset", (json_int_t)offset, "language",
      lang, "prefix", p->prefix, strlen(p->prefix), "suffix", p->suffix, strlen(p->suffix),
      "snippets", snips, "tokens", "prefix", (json_int_t)p->prefix_tokens, "suffix",
      (json_int_t)p->suffix_tokens, "snippets", (json_int_t)p->snippet_tokens, "budget",
      (json_int_t)budget, "partial_index", p->partial_index);
}

static json_t *workspace_json(const sc_workspace *ws) {
  sc_workspace_stats st = sc_workspace_get_stats(ws);
  return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:{s:I, s:I, s:I, s:I}, s:f}", "root",
                   sc_workspace_root(ws), "files", (json_int_t)st.files, "definitions",
                   (json_int_t)st.definitions, "lines", (json_int_t)st.lines, "chunks",
                   (json_int_t)st.chunks, "cached", (json_int_t)st.cached, "partial", st.partial,
                   "skipped", "binary", (json_int_t)st.skipped_binary, "huge",
                   (json_int_t)st.skipped_huge, "generated", (json_int_t)st.skipped_generated,
                   "outside", (json_int_t)st.skipped_outside, "index_ms", st.ms);
}

static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sort_ms(double *v, long n) {
  for (long i = 1; i < n; i++) /* insertion sort: small n */
    for (long k = i; k > 0 && v[k - 1] > v[k]; k--) {
      double tmp = v[k];
      v[k] = v[k - 1];
      v[k - 1] = tmp;
    }
}

/* Cuts text's line at offset (the rest of the line goes, its newline
 * stays): the text as it is while that line is being typed. */
static void cut_line(char *text, size_t *len, size_t offset) {
  char *nl = memchr(text + offset, '\n', *len - offset);
  size_t end = nl ? (size_t)(nl - text) : *len;
  memmove(text + offset, text + end, *len - end + 1);
  *len -= end - offset;
}

#define TREE_CACHE 8

typedef struct ctx_run {
  const sc_tokenizer *tok;
  sc_workspace *ws;
  long budget;
  int context; /* the model's context (contextTokens), 0 when unknown */
  bool cut;
  const sc_prompt_inputs *inputs;
  /* --positions: the last files' trees, so that one parse serves every
   * position in a file (a cut line is an incremental edit of a copy). */
  struct {
    char *path;
    uint64_t hash;
    size_t len;
    sc_syntax_tree *tree;
  } trees[TREE_CACHE];
  size_t next_tree;
} ctx_run;

/* The tree of text (path, lang), parsed once per run; owned by run. */
static const sc_syntax_tree *cached_tree(ctx_run *run, const char *path, const char *lang,
                                         const char *text, size_t len) {
  uint64_t h = sc_hash64(text, len, 0);
  for (size_t i = 0; i < TREE_CACHE; i++)
    if (run->trees[i].path && run->trees[i].hash == h && run->trees[i].len == len &&
        strcmp(run->trees[i].path, path) == 0)
      return run->trees[i].tree;
  sc_syntax_tree *t = NULL;
  if (!lang || !sc_context_ts_language(lang) ||
      sc_syntax_tree_new(lang, text, len, &t, NULL) != SC_OK)
    return NULL;
  size_t k = run->next_tree++ % TREE_CACHE;
  free(run->trees[k].path);
  sc_syntax_tree_free(run->trees[k].tree);
  run->trees[k].path = strdup(path);
  run->trees[k].hash = h;
  run->trees[k].len = len;
  run->trees[k].tree = t;
  return t;
}

static void ctx_run_clear(ctx_run *run) {
  for (size_t i = 0; i < TREE_CACHE; i++) {
    free(run->trees[i].path);
    sc_syntax_tree_free(run->trees[i].tree);
  }
}

/* The prompt at target (FILE:LINE:COL) as JSON, or NULL with *msg (static
 * or in msgbuf) saying why. With repeat > 0, the retrieval again at that
 * many cursors spread over the file, timed. */
static json_t *context_at(ctx_run *run, const char *target, long repeat, char *msgbuf,
                          size_t msgcap) {
  char *path = NULL, *text = NULL;
  long line = 0, col = 0;
  size_t len = 0, offset = 0;
  json_t *out = NULL;
  sc_syntax_tree *tree = NULL;
  sc_prompt prompt = {0};
  sc_error err = {0};
  if (sc_cli_locate(target, &path, NULL, 0, NULL, true, &line, &col) != 0 || !path) {
    snprintf(msgbuf, msgcap, "'%s' is not FILE:LINE:COL with 1-based numbers", target);
    goto done;
  }
  if (!sc_cli_read_file(path, &text, &len)) {
    snprintf(msgbuf, msgcap, "cannot read %s: %s", path, strerror(errno));
    goto done;
  }
  int where = sc_cli_locate(target, NULL, text, len, &offset, false, &line, &col);
  if (where != 0) {
    snprintf(msgbuf, msgcap, "%s has no %s %ld", path, where == -2 ? "line" : "column",
             where == -2 ? line : col);
    goto done;
  }
  char abs_path[PATH_MAX];
  if (!realpath(path, abs_path)) snprintf(abs_path, sizeof abs_path, "%s", path);
  const char *rel = abs_path;
  if (run->ws) {
    const char *r = sc_workspace_root(run->ws);
    size_t rl = strlen(r);
    if (strncmp(abs_path, r, rl) == 0 && abs_path[rl] == '/') rel = abs_path + rl + 1;
  }
  const char *lang = sc_context_language_for(NULL, path);
  /* One parse serves every retrieval in this file, as an editor's tree does. */
  const sc_syntax_tree *whole = cached_tree(run, abs_path, lang, text, len);
  if (run->cut) {
    size_t before = len;
    cut_line(text, &len, offset);
    if (whole && sc_syntax_tree_copy(whole, &tree, NULL) == SC_OK &&
        sc_syntax_tree_edit(tree, offset, offset + (before - len), "", 0, NULL) != SC_OK) {
      sc_syntax_tree_free(tree);
      tree = NULL;
    }
  }
  sc_prompt_inputs in = *run->inputs;
  in.tree = run->cut ? tree : whole;
  if (sc_prompt_build_with(run->ws, rel, lang, text, len, offset, run->tok, (size_t)run->budget,
                           &in, &prompt, &err) != SC_OK) {
    snprintf(msgbuf, msgcap, "%s", err.msg);
    goto done;
  }
  out = prompt_json(&prompt, rel, lang, line, col, offset, run->budget);
  if (out && run->context > 0)
    json_object_set_new(out, "contextTokens", json_integer(run->context));
  if (out && repeat > 0) {
    /* Wall time, and the thread's CPU time: on a shared machine the wall
     * time also counts the waits for a core. */
    double *ms = malloc((size_t)repeat * sizeof *ms), *cpu = malloc((size_t)repeat * sizeof *cpu);
    /* And the drafts at the same cursors (context.h, sc_drafts_find and the
     * tokenizing the engine needs), timed apart: every request pays them. */
    double *dms = malloc((size_t)repeat * sizeof *dms), *dcpu = malloc((size_t)repeat * sizeof *dcpu);
    long offered = 0;
    for (long i = 0; ms && cpu && dms && dcpu && i < repeat; i++) {
      size_t cur = (size_t)((double)len * (double)(i + 1) / (double)(repeat + 1));
      sc_prompt pr;
      double t = sc_now_ms(), c = thread_cpu_ms();
      bool built = sc_prompt_build_with(run->ws, rel, lang, text, len, cur, run->tok,
                                        (size_t)run->budget, &in, &pr, NULL) == SC_OK;
      ms[i] = sc_now_ms() - t;
      cpu[i] = thread_cpu_ms() - c;
      dms[i] = dcpu[i] = 0;
      size_t blen = 0;
      char *before = built ? sc_prompt_text(&pr, &blen) : NULL;
      if (before) {
        t = sc_now_ms();
        c = thread_cpu_ms();
        sc_draft_query q = {.before = before, .before_len = blen, .after = pr.suffix,
                            .after_len = strlen(pr.suffix), .ws = run->ws};
        sc_drafts found;
        sc_draft_runs runs;
        sc_drafts_find(&q, &found);
        if (sc_drafts_encode(&found, run->tok, 64, &runs, NULL) == SC_OK) sc_draft_runs_free(&runs);
        offered += (long)found.n;
        sc_drafts_free(&found);
        dms[i] = sc_now_ms() - t;
        dcpu[i] = thread_cpu_ms() - c;
      }
      free(before);
      if (built) sc_prompt_free(&pr);
    }
    if (ms && cpu && dms && dcpu) {
      json_t *samples = json_array(), *cpu_samples = json_array();
      for (long i = 0; i < repeat; i++) {
        json_array_append_new(samples, json_real(ms[i]));
        json_array_append_new(cpu_samples, json_real(cpu[i]));
      }
      sort_ms(ms, repeat);
      sort_ms(cpu, repeat);
      long kb = 0;
      FILE *st = fopen("/proc/self/status", "r");
      char row[256];
      while (st && fgets(row, sizeof row, st))
        if (strncmp(row, "VmHWM:", 6) == 0) kb = strtol(row + 6, NULL, 10);
      if (st) fclose(st);
      long p99 = (long)((double)(repeat - 1) * 0.99);
      json_object_set_new(
          out, "bench",
          json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:I, s:o, s:o}", "retrievals", (int)repeat,
                    "p50_ms", ms[repeat / 2], "p99_ms", ms[p99], "max_ms", ms[repeat - 1],
                    "cpu_p50_ms", cpu[repeat / 2], "cpu_p99_ms", cpu[p99], "peak_rss_kb",
                    (json_int_t)kb, "ms", samples, "cpu_ms", cpu_samples));
      sort_ms(dms, repeat);
      sort_ms(dcpu, repeat);
      json_object_set_new(json_object_get(out, "bench"), "drafts",
                          json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "p50_ms", dms[repeat / 2],
                                    "p99_ms", dms[p99], "max_ms", dms[repeat - 1], "cpu_p50_ms",
                                    dcpu[repeat / 2], "cpu_p99_ms", dcpu[p99], "offered_mean",
                                    (double)offered / (double)repeat));
    }
    free(ms);
    free(cpu);
    free(dms);
    free(dcpu);
  }
done:
  sc_prompt_free(&prompt);
  sc_syntax_tree_free(tree);
  free(path);
  free(text);
  return out;
}

#define MAX_EXTRAS 64
/* The editor's defaults (lsp/settings.c: contextBudget, maxTokens). */
#define DEFAULT_BUDGET 1024
#define DEFAULT_CANVAS 64

int sc_cli_context(int argc, char **argv) {
  const char *target = NULL, *root_arg = NULL, *model_dir = NULL, *positions = NULL;
  const char *open_args[MAX_EXTRAS], *edited_args[MAX_EXTRAS];
  size_t n_open = 0, n_edited = 0;
  long budget = 0, repeat = 0; /* 0: fitted to the model (below) */
  bool cut = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(o, "--json") == 0) continue; /* the only output form */
    if (strcmp(o, "--cut") == 0) {
      cut = true;
      continue;
    }
    if (o[0] != '-') {
      if (target) { sc_cli_fail(CMD, "one FILE:LINE:COL only"); return 2; }
      target = o;
      continue;
    }
    if (!v) { sc_cli_fail(CMD, "%s needs a value", o); return 2; }
    i++;
    if (strcmp(o, "--root") == 0) root_arg = v;
    else if (strcmp(o, "--positions") == 0) positions = v;
    else if (strcmp(o, "--repeat") == 0) {
      /* A benchmark aid: the retrieval again at N cursors spread over the
       * file, with its latency percentiles in "bench". */
      char *end;
      errno = 0;
      repeat = strtol(v, &end, 10);
      if (errno || *end || repeat < 0 || repeat > 100000) {
        sc_cli_fail(CMD, "--repeat takes 0 to 100000");
        return 2;
      }
    }
    else if (strcmp(o, "--model") == 0) model_dir = v;
    else if (strcmp(o, "--open") == 0 || strcmp(o, "--edited") == 0) {
      bool is_open = o[2] == 'o';
      size_t *n = is_open ? &n_open : &n_edited;
      if (*n == MAX_EXTRAS) {
        sc_cli_fail(CMD, "at most %d %s options", MAX_EXTRAS, o);
        return 2;
      }
      (is_open ? open_args : edited_args)[(*n)++] = v;
    }
    else if (strcmp(o, "--budget") == 0) {
      char *end;
      errno = 0;
      budget = strtol(v, &end, 10);
      if (errno || *end || budget < 16 || budget > 1 << 20) {
        sc_cli_fail(CMD, "--budget takes 16 to 1048576 tokens");
        return 2;
      }
    } else {
      sc_cli_fail(CMD, "unknown option '%s' (see sculpt help context)", o);
      return 2;
    }
  }
  if (!target == !positions) {
    sc_cli_fail(CMD, positions ? "FILE:LINE:COL or --positions, not both"
                               : "needs FILE:LINE:COL (or --positions FILE)");
    return 2;
  }
  int rc = 1;
  sc_tokenizer *tok = NULL;
  sc_workspace *ws = NULL;
  sc_error err = {0};
  char *root = NULL, *list = NULL, *first = NULL, *resolved = NULL;
  size_t list_len = 0;
  sc_open_document docs[MAX_EXTRAS];
  char *doc_paths[MAX_EXTRAS] = {0}, *doc_texts[MAX_EXTRAS] = {0};
  sc_edited_range edits[MAX_EXTRAS];
  char *edit_paths[MAX_EXTRAS] = {0};
  sc_prompt_inputs inputs = {0};
  ctx_run run = {0}; /* cleared at done: set before any jump there */
  if (positions && !sc_cli_read_file(positions, &list, &list_len)) {
    sc_cli_fail(CMD, "cannot read %s: %s", positions, strerror(errno));
    return 2;
  }
  /* The file that decides the work tree: the target, or the first position. */
  char *anchor_path = NULL;
  {
    const char *t = target;
    if (positions) {
      size_t n = strcspn(list, "\n");
      first = strndup(list, n);
      t = first;
    }
    long l, c;
    if (!t || !*t || sc_cli_locate(t, &anchor_path, NULL, 0, NULL, true, &l, &c) != 0 ||
        !anchor_path) {
      sc_cli_fail(CMD, "'%s' is not FILE:LINE:COL with 1-based numbers", t ? t : "");
      rc = 2;
      goto done;
    }
  }
  if (!(resolved = sc_cli_model_dir(CMD, model_dir, &rc))) goto done;
  model_dir = resolved;
  if (sc_tokenizer_load_dir(model_dir, &tok, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  /* Without --budget, the prompt an editor would get by default: 1024
   * tokens, or what the model's context leaves after the editor's default
   * 64-token canvas and the family's frame (model.h, sc_infill_budget). An
   * explicit --budget is shown as asked, to study budgets beyond the model. */
  int context = 0;
  sc_infill_frame frame;
  if (sc_model_context_read(model_dir, SC_FAMILY_AUTO, &context, &frame, NULL) != SC_OK)
    context = 0;
  if (budget == 0) {
    sc_infill_budget fit;
    budget = DEFAULT_BUDGET;
    if (context > 0 && sc_infill_budget_compute(context, &frame, DEFAULT_BUDGET, DEFAULT_CANVAS,
                                                &fit, NULL) == SC_OK)
      budget = fit.prompt < 16 ? 16 : fit.prompt;
  }
  if (root_arg) {
    root = strdup(root_arg);
  } else {
    char abs_path[PATH_MAX], dir[PATH_MAX];
    if (!realpath(anchor_path, abs_path)) snprintf(abs_path, sizeof abs_path, "%s", anchor_path);
    snprintf(dir, sizeof dir, "%s", abs_path);
    root = sc_workspace_find_root(dirname(dir));
  }
  if (root && sc_workspace_index(root, NULL, &ws, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    rc = 2;
    goto done;
  }
  const char *ws_root = ws ? sc_workspace_root(ws) : NULL;
  for (size_t i = 0; i < n_open; i++) {
    size_t dl = 0;
    if (!sc_cli_read_file(open_args[i], &doc_texts[i], &dl)) {
      sc_cli_fail(CMD, "--open %s: %s", open_args[i], strerror(errno));
      rc = 2;
      goto done;
    }
    doc_paths[i] = rel_to_root(ws_root, open_args[i]);
    docs[i] = (sc_open_document){doc_paths[i], NULL, doc_texts[i], dl};
  }
  for (size_t i = 0; i < n_edited; i++) {
    char *ep = NULL;
    uint32_t ea = 0, eb = 0;
    if (!parse_edited(edited_args[i], &ep, &ea, &eb)) {
      sc_cli_fail(CMD, "--edited takes PATH:LINE or PATH:LINE-LINE, not '%s'", edited_args[i]);
      rc = 2;
      goto done;
    }
    edit_paths[i] = rel_to_root(ws_root, ep);
    free(ep);
    /* The first given is the most recent. */
    edits[i] = (sc_edited_range){edit_paths[i], ea, eb, (double)(n_edited - i)};
  }
  inputs = (sc_prompt_inputs){.docs = docs, .n_docs = n_open, .edits = edits,
                              .n_edits = n_edited};
  run = (ctx_run){.tok = tok, .ws = ws, .budget = budget, .context = context, .cut = cut,
                  .inputs = &inputs};
  char msg[PATH_MAX + 128];
  if (!positions) {
    json_t *out = context_at(&run, target, repeat, msg, sizeof msg);
    if (!out) {
      sc_cli_fail(CMD, "%s", msg);
      rc = 2;
      goto done;
    }
    if (ws) json_object_set_new(out, "workspace", workspace_json(ws));
    char *s = json_dumps(out, JSON_INDENT(2));
    json_decref(out);
    if (!s) {
      sc_cli_fail(CMD, "cannot format the result (is the file valid UTF-8?)");
      goto done;
    }
    puts(s);
    free(s);
    rc = 0;
    goto done;
  }
  /* --positions: one compact JSON object a line; a position that fails is
   * {"target", "error"} in its place, and the exit status is 1. */
  rc = 0;
  for (char *p = list, *end = list + list_len; p < end;) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    char *t = strndup(p, n);
    p += n + 1;
    if (!t) break;
    if (!*t) {
      free(t);
      continue;
    }
    json_t *out = context_at(&run, t, 0, msg, sizeof msg);
    if (!out) {
      out = json_pack("{s:s, s:s}", "target", t, "error", msg);
      rc = 1;
    }
    char *s = out ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    if (!s) {
      s = strdup("{\"error\": \"cannot format the result\"}");
      rc = 1;
    }
    if (s) puts(s);
    free(s);
    free(t);
  }
done:
  ctx_run_clear(&run);
  for (size_t i = 0; i < MAX_EXTRAS; i++) {
    free(doc_paths[i]);
    free(doc_texts[i]);
    free(edit_paths[i]);
  }
  sc_workspace_free(ws);
  sc_tokenizer_free(tok);
  free(root);
  free(anchor_path);
  free(first);
  free(list);
  free(resolved);
  return rc;
}

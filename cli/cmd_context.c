/* cmd_context.c — `sculpt context FILE:LINE:COL`: the prompt sculpt would
 * build at a position, as JSON: the windows, and each snippet with its
 * source, the reason it was chosen, its token count and, for similar
 * chunks, its Jaccard score. --open PATH treats a file as an open editor
 * buffer (repeatable; the first is the most recently used); --edited
 * PATH:LINE[-LINE] is a recently edited range (1-based, repeatable; the
 * first is the most recent). */
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

#define CMD "context"

/* The git work tree holding dir, or NULL. */
static char *git_toplevel(const char *dir) {
  if (strchr(dir, '\'')) return NULL;
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --show-toplevel 2>/dev/null", dir);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  char buf[PATH_MAX];
  char *r = fgets(buf, sizeof buf, p) ? strdup(buf) : NULL;
  pclose(p);
  if (r) r[strcspn(r, "\n")] = '\0';
  return r;
}

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

#define MAX_EXTRAS 64
/* The editor's defaults (lsp/settings.c: contextBudget, maxTokens). */
#define DEFAULT_BUDGET 1024
#define DEFAULT_CANVAS 64

int sc_cli_context(int argc, char **argv) {
  const char *target = NULL, *root_arg = NULL, *model_dir = NULL;
  const char *open_args[MAX_EXTRAS], *edited_args[MAX_EXTRAS];
  size_t n_open = 0, n_edited = 0;
  long budget = 0, repeat = 0; /* 0: fitted to the model (below) */
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(o, "--json") == 0) continue; /* the only output form */
    if (o[0] != '-') {
      if (target) { sc_cli_fail(CMD, "one FILE:LINE:COL only"); return 2; }
      target = o;
      continue;
    }
    if (!v) { sc_cli_fail(CMD, "%s needs a value", o); return 2; }
    i++;
    if (strcmp(o, "--root") == 0) root_arg = v;
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
  if (!target) { sc_cli_fail(CMD, "needs FILE:LINE:COL"); return 2; }
  char *path = NULL, *text = NULL;
  long line = 0, col = 0;
  size_t len = 0, offset = 0;
  if (sc_cli_locate(target, &path, NULL, 0, NULL, true, &line, &col) != 0 || !path) {
    sc_cli_fail(CMD, "'%s' is not FILE:LINE:COL with 1-based numbers", target);
    free(path);
    return 2;
  }
  if (!sc_cli_read_file(path, &text, &len)) {
    sc_cli_fail(CMD, "cannot read %s: %s", path, strerror(errno));
    free(path);
    return 2;
  }
  int where = sc_cli_locate(target, NULL, text, len, &offset, false, &line, &col);
  int rc = 1;
  sc_tokenizer *tok = NULL;
  sc_workspace *ws = NULL;
  sc_prompt prompt = {0};
  sc_error err = {0};
  char *root = NULL;
  char abs_path[PATH_MAX];
  sc_open_document docs[MAX_EXTRAS];
  char *doc_paths[MAX_EXTRAS] = {0}, *doc_texts[MAX_EXTRAS] = {0};
  sc_edited_range edits[MAX_EXTRAS];
  char *edit_paths[MAX_EXTRAS] = {0};
  sc_prompt_inputs inputs = {0};
  if (where != 0) {
    sc_cli_fail(CMD, "%s has no %s %ld", path, where == -2 ? "line" : "column",
                where == -2 ? line : col);
    rc = 2;
    goto done;
  }
  if (!model_dir) model_dir = sc_model_default_dir();
  if (!model_dir) {
    sc_cli_fail(CMD, "no tokenizer: pass --model DIR (budgets are counted with its tokenizer)");
    rc = 2;
    goto done;
  }
  if (sc_tokenizer_load_dir(model_dir, &tok, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  /* Without --budget, the prompt an editor would get by default: 1024
   * tokens, or what the model's context leaves after the editor's default
   * 64-token canvas (model.h, sc_infill_budget). An explicit --budget is
   * shown as asked, to study budgets beyond the model. */
  int context = 0;
  if (sc_model_context_read(model_dir, SC_FAMILY_AUTO, &context, NULL) != SC_OK) context = 0;
  if (budget == 0) {
    sc_infill_budget fit;
    budget = DEFAULT_BUDGET;
    if (context > 0 &&
        sc_infill_budget_compute(context, 2, DEFAULT_BUDGET, DEFAULT_CANVAS, 0, &fit, NULL) == SC_OK)
      budget = fit.prompt < 16 ? 16 : fit.prompt;
  }
  if (!realpath(path, abs_path)) snprintf(abs_path, sizeof abs_path, "%s", path);
  if (root_arg) {
    root = strdup(root_arg);
  } else {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", abs_path);
    root = git_toplevel(dirname(dir));
  }
  const char *rel = abs_path;
  if (root) {
    if (sc_workspace_index(root, NULL, &ws, &err) != SC_OK) {
      sc_cli_fail(CMD, "%s", err.msg);
      rc = 2;
      goto done;
    }
    const char *r = sc_workspace_root(ws);
    size_t rl = strlen(r);
    if (strncmp(abs_path, r, rl) == 0 && abs_path[rl] == '/') rel = abs_path + rl + 1;
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
  const char *lang = sc_context_language_for(NULL, path);
  if (sc_prompt_build_with(ws, rel, lang, text, len, offset, tok, (size_t)budget, &inputs,
                           &prompt, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  json_t *snips = json_array();
  for (size_t i = 0; i < prompt.n_snippets; i++) {
    sc_context_snippet *s = &prompt.snippets[i];
    json_t *js =
        json_pack("{s:s, s:{s:i, s:i}, s:s, s:s, s:I, s:s%}", "path", s->path, "range",
                  "start_line", (int)s->start_line + 1, "end_line", (int)s->end_line + 1,
                  "reason", s->reason, "name", s->name, "tokens", (json_int_t)s->tokens,
                  "text", s->text, s->len);
    if (js && strcmp(s->reason, "similar chunk") == 0)
      json_object_set_new(js, "score", json_real((double)s->score));
    json_array_append_new(snips, js);
  }
  json_t *out = json_pack(
      "{s:s, s:{s:i, s:i, s:I}, s:s?, s:s%, s:s%, s:o, s:{s:I, s:I, s:I, s:I}}", "file", rel,
      "cursor", "line", (int)line, "column", (int)col, "offset", (json_int_t)offset, "language",
      lang, "prefix", prompt.prefix, strlen(prompt.prefix), "suffix", prompt.suffix,
      strlen(prompt.suffix), "snippets", snips, "tokens", "prefix",
      (json_int_t)prompt.prefix_tokens, "suffix", (json_int_t)prompt.suffix_tokens, "snippets",
      (json_int_t)prompt.snippet_tokens, "budget", (json_int_t)budget);
  if (out && context > 0) json_object_set_new(out, "contextTokens", json_integer(context));
  if (out && ws) {
    sc_workspace_stats st = sc_workspace_get_stats(ws);
    json_object_set_new(
        out, "workspace",
        json_pack("{s:s, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:f}", "root",
                  sc_workspace_root(ws), "files", (json_int_t)st.files, "definitions",
                  (json_int_t)st.definitions, "lines", (json_int_t)st.lines, "chunks",
                  (json_int_t)st.chunks, "skipped", "binary", (json_int_t)st.skipped_binary,
                  "huge", (json_int_t)st.skipped_huge, "generated",
                  (json_int_t)st.skipped_generated, "outside", (json_int_t)st.skipped_outside,
                  "index_ms", st.ms));
  }
  if (out && repeat > 0) {
    double *ms = malloc((size_t)repeat * sizeof *ms);
    for (long i = 0; ms && i < repeat; i++) {
      size_t cur = (size_t)((double)len * (double)(i + 1) / (double)(repeat + 1));
      sc_prompt pr;
      double t = sc_now_ms();
      if (sc_prompt_build_with(ws, rel, lang, text, len, cur, tok, (size_t)budget, &inputs, &pr,
                               NULL) == SC_OK)
        sc_prompt_free(&pr);
      ms[i] = sc_now_ms() - t;
    }
    if (ms) {
      for (long i = 1; i < repeat; i++) /* insertion sort: small n */
        for (long k = i; k > 0 && ms[k - 1] > ms[k]; k--) {
          double tmp = ms[k];
          ms[k] = ms[k - 1];
          ms[k - 1] = tmp;
        }
      long kb = 0;
      FILE *st = fopen("/proc/self/status", "r");
      char row[256];
      while (st && fgets(row, sizeof row, st))
        if (strncmp(row, "VmHWM:", 6) == 0) kb = strtol(row + 6, NULL, 10);
      if (st) fclose(st);
      json_object_set_new(out, "bench",
                          json_pack("{s:i, s:f, s:f, s:f, s:I}", "retrievals", (int)repeat,
                                    "p50_ms", ms[repeat / 2], "p99_ms",
                                    ms[(long)((double)(repeat - 1) * 0.99)], "max_ms",
                                    ms[repeat - 1], "peak_rss_kb", (json_int_t)kb));
      free(ms);
    }
  }
  char *s = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
  json_decref(out);
  if (!s) {
    sc_cli_fail(CMD, "cannot format the result (is the file valid UTF-8?)");
    goto done;
  }
  puts(s);
  free(s);
  rc = 0;
done:
  for (size_t i = 0; i < MAX_EXTRAS; i++) {
    free(doc_paths[i]);
    free(doc_texts[i]);
    free(edit_paths[i]);
  }
  sc_prompt_free(&prompt);
  sc_workspace_free(ws);
  sc_tokenizer_free(tok);
  free(root);
  free(path);
  free(text);
  return rc;
}

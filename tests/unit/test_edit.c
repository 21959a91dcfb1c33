#define _GNU_SOURCE /* mkdtemp, strdup */
/* test_edit.c — the edit engine (edit/): one site, one seed, one edit,
 * whichever front door asks. sc_edit_fill (the single-site entry the LSP's
 * code actions call) and `sculpt batch` must choose the same candidate and
 * produce the same text edit for the same site, with the planted model (a
 * known fill) and the shipped default model (several sampled candidates).
 * The LSP end of this comparison reuses engine_edit() below. */
#include "edit.h"
#include "sc_test.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILL "defghijklmnopqrstuvwxyz"

static char g_tmp[256];
static char g_planted[512];
static char g_default[512];

/* The edit the engine's single-site entry gives: the site found the way
 * the code actions find it, candidates from the local generator with
 * `sculpt batch`'s defaults (32-token canvas, 1024 context tokens,
 * temperature 0.8). The caller frees res. */
typedef struct engine_case {
  const char *model_dir, *lang, *text;
  sc_edit_kind kind;  /* SC_EDIT_HOLE: the first hole; SC_EDIT_DIAGNOSTIC: at diag_at */
  const char *diag_at; /* the diagnostic is at the first occurrence of this */
  int candidates;
} engine_case;

static bool engine_edit(const engine_case *c, sc_edit_site *site, sc_edit_result *res) {
  sc_model *model = NULL;
  sc_tokenizer *tok = NULL;
  sc_engine *engine = NULL;
  sc_edit_local *local = NULL;
  sc_edit_doc *doc = NULL;
  sc_error err = {0};
  bool ok = sc_model_load(c->model_dir, NULL, &model, &err) == SC_OK &&
            sc_tokenizer_load_dir(c->model_dir, &tok, &err) == SC_OK &&
            sc_engine_new(model, tok, 0, &engine, &err) == SC_OK;
  sc_edit_local_options lo = {32, 1024, 0.8, NULL, NULL};
  ok = ok && sc_edit_local_new(engine, tok, model, &lo, &local, &err) == SC_OK &&
       sc_edit_doc_new(c->lang, NULL, c->text, strlen(c->text), &doc, &err) == SC_OK;
  if (ok && c->kind == SC_EDIT_HOLE) {
    sc_edit_site *v = NULL;
    size_t n = 0;
    sc_edit_hole_options ho = {NULL, false};
    ok = sc_edit_find_holes(doc, &ho, 0, SIZE_MAX, &v, &n, &err) == SC_OK && n > 0;
    if (ok) *site = v[0];
    free(v);
  } else if (ok) {
    size_t at = (size_t)(strstr(c->text, c->diag_at) - c->text);
    ok = sc_edit_site_for_diagnostic(doc, at, "error", site, &err) == SC_OK;
  }
  if (ok) {
    sc_edit_fill_options fo = {sc_edit_local_generator(local), c->candidates, NULL, NULL, NULL,
                               NULL};
    ok = sc_edit_fill(doc, site, &fo, res, &err) == SC_OK;
  }
  if (!ok) fprintf(stderr, "engine_edit: %s\n", err.msg);
  sc_edit_doc_free(doc);
  sc_edit_local_free(local);
  sc_engine_free(engine);
  sc_tokenizer_free(tok);
  sc_model_free(model);
  return ok;
}

/* Byte offset of 0-based (line, col) in text. */
static size_t offset_of(const char *text, long line, long col) {
  size_t off = 0;
  for (long l = 0; l < line; l++) off = (size_t)(strchr(text + off, '\n') - text) + 1;
  return off + (size_t)col;
}

/* `sculpt batch --json` on the same text; the report's first site. */
static json_t *batch_report(const engine_case *c, const char *ext) {
  char path[512], diags[600], cmd[2048];
  snprintf(path, sizeof path, "%s/case.%s", g_tmp, ext);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(c->text, f);
  fclose(f);
  char mode[700] = "--holes";
  if (c->kind == SC_EDIT_DIAGNOSTIC) {
    size_t at = (size_t)(strstr(c->text, c->diag_at) - c->text);
    long line = 0, col = 0;
    for (size_t i = 0; i < at; i++) {
      col++;
      if (c->text[i] == '\n') line++, col = 0;
    }
    snprintf(diags, sizeof diags, "%s/diags.txt", g_tmp);
    f = fopen(diags, "w");
    if (!f) return NULL;
    fprintf(f, "%s:%ld:%ld: error: error\n", path, line + 1, col + 1);
    fclose(f);
    snprintf(mode, sizeof mode, "--diagnostics %s", diags);
  }
  snprintf(cmd, sizeof cmd, "%s/sculpt batch %s --json --no-progress --candidates %d --model %s %s",
           SC_TEST_BUILD_DIR, mode, c->candidates, c->model_dir, path);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  json_error_t je;
  json_t *rep = json_loadf(p, 0, &je);
  pclose(p);
  json_t *site = json_incref(json_array_get(json_object_get(rep, "sites"), 0));
  json_decref(rep);
  return site;
}

/* The engine's edit and batch's agree: same status, candidates, seed, span
 * and text. Returns whether the site was done. */
static bool same_edit(const engine_case *c, const char *ext) {
  sc_edit_site site;
  sc_edit_result res = {0};
  bool ok = engine_edit(c, &site, &res);
  EXPECTF(ok, "the engine's edit for %s", ext);
  json_t *s = batch_report(c, ext);
  EXPECTF(s != NULL, "batch's report for %s", ext);
  bool done = false;
  if (ok && s) {
    json_t *start = json_object_get(json_object_get(s, "range"), "start");
    json_t *end = json_object_get(json_object_get(s, "range"), "end");
    size_t a = offset_of(c->text, json_integer_value(json_object_get(start, "line")),
                         json_integer_value(json_object_get(start, "character")));
    size_t b = offset_of(c->text, json_integer_value(json_object_get(end, "line")),
                         json_integer_value(json_object_get(end, "character")));
    EXPECTF(a == site.start && b == site.end, "%s: same site: batch [%zu, %zu), engine [%zu, %zu)",
            ext, a, b, site.start, site.end);
    const char *status = json_string_value(json_object_get(s, "status"));
    EXPECTF(status && strcmp(status, sc_edit_status_name(res.status)) == 0,
            "%s: same status: batch %s, engine %s", ext, status ? status : "?",
            sc_edit_status_name(res.status));
    json_t *cands = json_object_get(s, "candidates");
    EXPECTF(json_array_size(cands) == res.n_tries, "%s: same candidates tried (%zu, %zu)", ext,
            json_array_size(cands), res.n_tries);
    for (size_t i = 0; i < res.n_tries && i < json_array_size(cands); i++) {
      const char *t = json_string_value(json_object_get(json_array_get(cands, i), "text"));
      EXPECTF(t && res.tries[i].text && strcmp(t, res.tries[i].text) == 0,
              "%s: candidate %zu: batch '%s', engine '%s'", ext, i, t ? t : "(null)",
              res.tries[i].text ? res.tries[i].text : "(null)");
    }
    done = res.status == SC_EDIT_DONE;
    if (done) {
      const char *t = json_string_value(json_object_get(s, "text"));
      EXPECTF(t && strlen(t) == res.len && memcmp(t, res.text, res.len) == 0,
              "%s: same edit text: batch '%s', engine '%.*s'", ext, t ? t : "(null)",
              (int)res.len, res.text);
      EXPECTF(json_integer_value(json_object_get(s, "seed")) == res.seed, "%s: same seed", ext);
      EXPECT(res.start == site.start && res.end == site.end);
    }
  }
  json_decref(s);
  sc_edit_result_free(&res);
  return done;
}

static void test_planted_same_edit(void) {
  engine_case hole = {g_planted, "python", "def f():\n    return abcTODO(sculpt)\n",
                      SC_EDIT_HOLE, NULL, 1};
  EXPECT(same_edit(&hole, "py"));
  engine_case diag = {g_planted, "javascript", "let v = abc$;\nconsole.log(v);\n",
                      SC_EDIT_DIAGNOSTIC, "$", 1};
  EXPECT(same_edit(&diag, "js"));
}

/* The shipped model with sampled candidates: whatever it writes, both
 * doors pick the same one. */
static void test_default_model_same_edit(void) {
  engine_case hole = {g_default, "python",
                      "def mean(xs):\n    # TODO(sculpt)\n\n\nprint(mean([1, 2]))\n",
                      SC_EDIT_HOLE, NULL, 4};
  same_edit(&hole, "py");
  engine_case diag = {g_default, "c",
                      "int main(void) {\n  int a = 1\n  int b = 2;\n  return a + b;\n}\n",
                      SC_EDIT_DIAGNOSTIC, "int b", 6};
  same_edit(&diag, "c");
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s/test-edit-XXXXXX", SC_TEST_BUILD_DIR);
  if (!mkdtemp(g_tmp)) return 1;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/../tools/planted_checkpoints.py %s/models >/dev/null",
           SC_TEST_DATA_DIR, g_tmp);
  if (system(cmd) != 0) return 1;
  snprintf(g_planted, sizeof g_planted, "%s/models/planted-successor-shifted-bytes", g_tmp);
  snprintf(g_default, sizeof g_default, "%s/../model/default", SC_TEST_DATA_DIR);
  RUN(test_planted_same_edit);
  RUN(test_default_model_same_edit);
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_tmp);
  TEST_MAIN_END();
}

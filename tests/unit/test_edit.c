#define _GNU_SOURCE /* mkdtemp, strdup, setenv */
/* test_edit.c — the edit engine (edit/).
 *
 * One site, one seed, one edit, whichever front door asks: sc_edit_fill
 * (the single-site entry the LSP's code actions call) and `sculpt batch`
 * must choose the same candidate and produce the same text edit for the same
 * site, with the planted model (a known fill) and the shipped default model
 * (several sampled candidates). The LSP end of this comparison reuses
 * engine_edit() below.
 *
 * Do no harm (issue 21): what a hole is (never in a string or docstring;
 * Python `...` only when asked and never where it is meant); where the site
 * of a diagnostic is, for each shape (missing `;`, `)`, `}`, `:`, bad
 * indentation); and that the checks refuse a candidate that adds a syntax
 * error, changes code outside its site, unbalances brackets or breaks
 * Python's compile. */
#include "edit.h"
#include "edit_impl.h" /* our Python indentation check */
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
  engine_case diag = {g_planted, "javascript", "let v = abc@;\nconsole.log(v);\n",
                      SC_EDIT_DIAGNOSTIC, "@", 1};
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

/* ---- holes -------------------------------------------------------------------- */

static sc_edit_doc *doc_of(const char *lang, const char *path, const char *text) {
  sc_edit_doc *d = NULL;
  sc_edit_doc_new(lang, path, text, strlen(text), &d, NULL);
  return d;
}

/* The holes of text as "span|span|..." (the replaced text, in order), with
 * '^' after a one-line hole. */
static void holes_of(const char *lang, const char *path, const char *text, bool ellipsis,
                     char *out, size_t cap) {
  out[0] = '\0';
  sc_edit_doc *d = doc_of(lang, path, text);
  if (!d) return;
  sc_edit_hole_options o = {NULL, ellipsis};
  sc_edit_site *v = NULL;
  size_t n = 0;
  sc_edit_find_holes(d, &o, 0, SIZE_MAX, &v, &n, NULL);
  size_t w = 0;
  for (size_t i = 0; i < n && w < cap; i++)
    w += (size_t)snprintf(out + w, cap - w, "%s%.*s%s", i ? "|" : "",
                          (int)(v[i].end - v[i].start), text + v[i].start,
                          v[i].single_line ? "^" : "");
  free(v);
  sc_edit_doc_free(d);
}

static void expect_holes(const char *lang, const char *path, const char *text, bool ellipsis,
                         const char *want) {
  char got[1024];
  holes_of(lang, path, text, ellipsis, got, sizeof got);
  EXPECTF(strcmp(got, want) == 0, "%s holes: got '%s', want '%s'", lang, got, want);
}

static void test_holes(void) {
  /* A marker in a string or a docstring is text, not a hole. */
  expect_holes("python", NULL,
               "S = \"TODO(sculpt)\"\n\ndef f():\n    \"\"\"TODO(sculpt) later.\"\"\"\n"
               "    return S\n",
               false, "");
  expect_holes("c", NULL, "char *s = \"TODO(sculpt)\";\nchar c = 'T';\n", false, "");
  expect_holes("javascript", NULL, "const r = /TODO(sculpt)/;\nconst s = 'TODO(sculpt)';\n",
               false, "");
  /* A comment holding it is the hole: whole when alone on its line, one
   * line when it follows code; code interpolated into a string is code. */
  expect_holes("python", NULL,
               "def f(x):\n    # TODO(sculpt)\n\n"
               "y = 1  # TODO(sculpt): later\nz = abcTODO(sculpt)\n",
               false, "# TODO(sculpt)|# TODO(sculpt): later^|TODO(sculpt)^");
  expect_holes("c", NULL,
               "int f(void) {\n  /* TODO(sculpt) */\n"
               "  return abcTODO(sculpt); // TODO(sculpt)\n}\n",
               false, "/* TODO(sculpt) */|TODO(sculpt)^|// TODO(sculpt)^");
  expect_holes("javascript", NULL, "const a = `x ${TODO(sculpt)}`;\nTODO(sculpt)\n", false,
               "TODO(sculpt)^|TODO(sculpt)");
  /* Prose over several comment lines that mentions the marker is not one. */
  expect_holes("c", NULL, "/* Holes are marked\n * TODO(sculpt) in code. */\nint x;\n", false,
               "");
  expect_holes("c", NULL, "/*\n * TODO(sculpt)\n */\nint x;\n", false,
               "/*\n * TODO(sculpt)\n */");
  /* Python `...` bodies: legitimate code unless asked, and never where
   * `...` is meant (the two cases of issue 21 among them). */
  const char *py =
      "import abc\nimport typing as t\n\n"
      "class P(t.Protocol):\n    def f(self) -> int:\n        ...\n\n"
      "@t.overload\ndef g(x: int) -> int:\n    ...\n\n"
      "class A(abc.ABC):\n    @abc.abstractmethod\n    def h(self):\n        \"\"\"Doc.\n\n"
      "        ...\n        \"\"\"\n        ...\n\n"
      "class M(metaclass=abc.ABCMeta):\n    def m(self):\n        ...\n\n"
      "class C:\n    def todo(self):\n        \"\"\"Doc.\"\"\"\n        ...\n\n"
      "def k():\n    ...\n\nX = [\n    ...\n]\n";
  expect_holes("python", NULL, py, false, "");
  expect_holes("python", NULL, py, true, "...|...");
  expect_holes("python", "stub.pyi", "def k():\n    ...\n", true, "");
  /* --marker replaces the default. */
  sc_edit_doc *d = doc_of("python", NULL, "a = 1  # @@\nb = 2  # TODO(sculpt)\n");
  sc_edit_hole_options o = {"@@", false};
  sc_edit_site *v = NULL;
  size_t n = 0;
  EXPECT(d && sc_edit_find_holes(d, &o, 0, SIZE_MAX, &v, &n, NULL) == SC_OK && n == 1);
  free(v);
  /* A range: only the holes on its lines (what "Fill hole" asks). */
  sc_edit_doc *d2 = doc_of("python", NULL, "# TODO(sculpt)\nx = 1\n# TODO(sculpt)\n");
  v = NULL;
  EXPECT(d2 && sc_edit_find_holes(d2, NULL, 22, 22, &v, &n, NULL) == SC_OK && n == 1 &&
         v[0].start == 21);
  free(v);
  sc_edit_doc_free(d);
  sc_edit_doc_free(d2);
}

/* ---- diagnostics ----------------------------------------------------------------- */

/* The site of a diagnostic at 1-based line:col with message: its text must
 * be want, on one line, holding the (attributed) position. */
static void expect_site(const char *lang, const char *text, long line, long col,
                        const char *message, const char *want) {
  sc_edit_doc *d = doc_of(lang, NULL, text);
  REQUIRE(d);
  size_t off = 0;
  for (long l = 1; l < line; l++) off = (size_t)(strchr(text + off, '\n') - text) + 1;
  off += (size_t)(col - 1);
  sc_edit_site s;
  EXPECT(sc_edit_site_for_diagnostic(d, off, message, &s, NULL) == SC_OK);
  EXPECTF(s.end - s.start == strlen(want) && memcmp(text + s.start, want, strlen(want)) == 0,
          "%s %ld:%ld (%s): site '%.*s', want '%s'", lang, line, col, message,
          (int)(s.end - s.start), text + s.start, want);
  EXPECTF(s.start <= s.anchor && s.anchor <= s.end, "the site holds its position");
  EXPECT(s.kind == SC_EDIT_DIAGNOSTIC && !memchr(text + s.start, '\n', s.end - s.start));
  sc_edit_doc_free(d);
}

static void test_diagnostic_sites(void) {
  /* Missing `;`: gcc reports it at the next line's first token; it belongs
   * to the line before, and the next statement is not the site. */
  expect_site("c", "int main(void) {\n  int a = 1\n  int b = 2;\n  return a + b;\n}\n", 3, 3,
              "expected ',' or ';' before 'int'", "int a = 1");
  /* ... also when tree-sitter reads the next line as part of it (the
   * next line's type name an ERROR; jq's src/util.c): the site stops at
   * the line's end. */
  expect_site("c",
              "void f(void) {\n  size_t sz = sizeof(int) * g(1, 0)\n  wchar_t *w = alloca(sz + 2);\n"
              "  h(w);\n}\n",
              3, 3, "expected ',' or ';' before 'wchar_t'", "size_t sz = sizeof(int) * g(1, 0)");
  /* ... and reported at the end of its own line. */
  expect_site("c", "int f(void) {\n  g(1)\n  return 0;\n}\n", 2, 7, "expected ';'", "g(1)");
  /* Missing `)`: at the `;` gcc names; the rest of that statement only. */
  expect_site("c", "int f(int x) {\n  return g(x;\n}\n", 2, 13, "expected ')' before ';'", ";");
  /* Missing `}`: the line gcc names, not the block around it. */
  expect_site("c", "int f(int x) {\n  if (x) {\n    return 1;\n  return 2;\n}\n", 5, 1,
              "expected declaration or statement at end of input", "}");
  /* Missing `:`: the header line, not the body under it. */
  expect_site("python", "def f(x)\n    return x\n", 1, 9, "expected ':'", "def f(x)");
  expect_site("python", "if x\n    y = 1\nz = 2\n", 1, 5, "expected ':'", "if x");
  /* Indentation: the whole line, indentation included. */
  expect_site("python", "def f(x):\n    y = 1\n      return x\n", 3, 7,
              "IndentationError: unexpected indent", "      return x");
  expect_site("python", "def f(x):\nreturn x\n", 2, 1, "expected an indented block", "return x");
  /* Inside a statement: from the position to its end (the planted `$`). */
  expect_site("python", "x = abc$\nprint(x)\n", 1, 8, "invalid syntax", "$");
}

/* ---- checks ---------------------------------------------------------------------- */

/* sc_edit_check of cand for a site spanning the first `span` of text;
 * want_why NULL: it passes. */
static void expect_verdict(const char *lang, const char *text, const char *span,
                           sc_edit_kind kind, const char *cand, const char *want_why) {
  sc_edit_doc *d = doc_of(lang, NULL, text);
  REQUIRE(d);
  size_t a = (size_t)(strstr(text, span) - text);
  sc_edit_site s = {.kind = kind, .start = a, .end = a + strlen(span), .anchor = a};
  sc_edit_verdict v;
  EXPECT(sc_edit_check(d, &s, cand, strlen(cand), &v, NULL) == SC_OK);
  bool ok = want_why == NULL ? v.ok : (!v.ok && v.why && strcmp(v.why, want_why) == 0);
  EXPECTF(ok, "%s: '%s' for '%s': got %s (%s), want %s", lang, cand, span,
          v.ok ? "ok" : "refused", v.why ? v.why : "-", want_why ? want_why : "ok");
  sc_edit_doc_free(d);
}

static void test_checks(void) {
  const char *semi = "int main(void) {\n  int a = 1\n  int b = 2;\n  return a + b;\n}\n";
  expect_verdict("c", semi, "int a = 1", SC_EDIT_DIAGNOSTIC, "int a = 1;", NULL);
  /* Opening a comment swallows the next statement: refused. */
  expect_verdict("c", semi, "int a = 1", SC_EDIT_DIAGNOSTIC, "int a = 1; /*",
                 "does not parse");
  expect_verdict("c", semi, "int a = 1", SC_EDIT_DIAGNOSTIC, "int a = 1; }", "does not parse");
  /* The "Fill hole" of issue 21 (gcc's errors went 1 -> 43): refused. */
  const char *hole = "int f(void) {\n  // TODO(sculpt)\n}\n\nint g(void) { return 2; }\n";
  expect_verdict("c", hole, "// TODO(sculpt)", SC_EDIT_HOLE, " }\n \n    }", "does not parse");
  expect_verdict("c", hole, "// TODO(sculpt)", SC_EDIT_HOLE, "return 1;", NULL);
  expect_verdict("c", hole, "// TODO(sculpt)", SC_EDIT_HOLE, "if (1) { return 1;",
                 "does not parse");
  /* A string opened in the site runs over the code after it. */
  const char *py = "def f(x):\n    # TODO(sculpt)\n    return x\n\n\ndef g():\n    return 2\n";
  expect_verdict("python", py, "# TODO(sculpt)", SC_EDIT_HOLE, "s = \"\"\"", "does not parse");
  /* The candidates of issue 21 for an abstract method's `...`: Python
   * rejects them. */
  const char *abs =
      "class A:\n    def h(self):\n        ...\n\n    def k(self):\n        return 1\n";
  expect_verdict("python", abs, "...", SC_EDIT_HOLE, " if None:", "does not compile");
  expect_verdict("python", abs, "...", SC_EDIT_HOLE, "return 0", NULL);
  /* Indentation tree-sitter accepts and Python does not. */
  expect_verdict("python", py, "# TODO(sculpt)", SC_EDIT_HOLE, "y = x\n      return y",
                 "does not compile");
  /* Without an interpreter, our indentation check says the same. */
  setenv("SCULPT_PYTHON", "", 1);
  expect_verdict("python", py, "# TODO(sculpt)", SC_EDIT_HOLE, "y = x\n      return y",
                 "bad indentation");
  expect_verdict("python", abs, "...", SC_EDIT_HOLE, "return 0", NULL);
  unsetenv("SCULPT_PYTHON");
  /* Code after the site that a candidate turns into a comment, though the
   * file still parses. */
  expect_verdict("python", "x = TODO(sculpt) + 2\ny = 2\n", "TODO(sculpt)", SC_EDIT_HOLE,
                 "1  #", "changes code outside its site");
  expect_verdict("c", "int x = TODO(sculpt) + 2;\nint y;\n", "TODO(sculpt)", SC_EDIT_HOLE,
                 "1; //", "changes code outside its site");
  /* Brackets balanced within the site, even where the file would parse. */
  expect_verdict("python", "x = f(TODO(sculpt))\ny = 2\n", "TODO(sculpt)", SC_EDIT_HOLE,
                 "a) + (b", "unbalanced brackets");
  expect_verdict("c", "int x = TODO(sculpt);\nint y;\n", "TODO(sculpt)", SC_EDIT_HOLE,
                 "1; int z", NULL);
  expect_verdict("javascript", "let a = TODO(sculpt);\nlet b = 2;\n", "TODO(sculpt)",
                 SC_EDIT_HOLE, "`", "does not parse");
  /* The C compiler's judgement: a "fix" that deletes a declaration leaves
   * its use undeclared (tree-sitter sees nothing wrong); a line turned into
   * a directive hides the code it replaced; a hole's fill may not add an
   * error either. Without a compiler, or when it cannot get past the
   * file's includes, tree-sitter judges alone. */
  expect_verdict("c", semi, "int a = 1", SC_EDIT_DIAGNOSTIC, "int aa = 1;", "does not compile");
  expect_verdict("c", semi, "int a = 1", SC_EDIT_DIAGNOSTIC, " #   0x0005:  0x00, 0000000000001",
                 "hides code in a comment or directive");
  expect_verdict("c", hole, "// TODO(sculpt)", SC_EDIT_HOLE, "return zz;", "does not compile");
  setenv("SCULPT_CC", "", 1);
  expect_verdict("c", hole, "// TODO(sculpt)", SC_EDIT_HOLE, "return zz;", NULL);
  unsetenv("SCULPT_CC");
  const char *missing = "#include \"not_here.h\"\nint f(void) {\n  // TODO(sculpt)\n}\n";
  expect_verdict("c", missing, "// TODO(sculpt)", SC_EDIT_HOLE, "return zz;", NULL);
  /* A fix keeps the code it fixes: at most a quarter of the site's
   * non-blank bytes (at least 2) may go. The shipped model's "fix" of
   * click's missing `:` parsed and compiled, and dropped the condition. */
  const char *colon = "class A:\n    def f(self):\n        if self._force_readable\n"
                      "            return 1\n        return 2\n";
  expect_verdict("python", colon, "if self._force_readable", SC_EDIT_DIAGNOSTIC, " if None:",
                 "drops the code it fixes");
  expect_verdict("python", colon, "if self._force_readable", SC_EDIT_DIAGNOSTIC,
                 "if self._force_readable:", NULL);
  expect_verdict("python", colon, "if self._force_readable", SC_EDIT_DIAGNOSTIC,
                 "if  self . _force_readable :", NULL);
  expect_verdict("c", semi, "int a = 1", SC_EDIT_DIAGNOSTIC, "0000000000;",
                 "drops the code it fixes");
  const char *typo = "int main(void) {\n  int n = 0;\n  retrun n + 1 2;\n}\n";
  expect_verdict("c", typo, "retrun n + 1 2;", SC_EDIT_DIAGNOSTIC, "return n + 12;", NULL);
  expect_verdict("c", typo, "retrun n + 1 2;", SC_EDIT_DIAGNOSTIC, "return 0;",
                 "drops the code it fixes");
  /* A query's re-infill may rewrite its node: the rule is a fix's alone. */
  expect_verdict("c", semi, "int a = 1", SC_EDIT_QUERY, "int a = 7;", NULL);
  /* Brackets: a fix may add the `}` its file lacks. */
  const char *brace = "int f(int x) {\n  if (x) {\n    return 1;\n  return 2;\n}\n";
  expect_verdict("c", brace, "}\n", SC_EDIT_DIAGNOSTIC, "}\n}", NULL);
  /* A statement with no effect where there was none: an `=` lost, and the
   * `;` gcc asks for makes two statements that do nothing; a hole's fill
   * too. One the code had before is no reason. */
  const char *lost = "struct s { int *child; };\nvoid f(struct s *a, int *n) {\n  a->child n;\n}\n";
  expect_verdict("c", hole, "// TODO(sculpt)", SC_EDIT_HOLE, "1; return 1;",
                 "leaves a statement with no effect");
  const char *had = "void f(int x) {\n  x;\n  x = 2;\n}\n";
  expect_verdict("c", had, "x;\n  x = 2;", SC_EDIT_QUERY, "x;\n  x = 3;", NULL);
  /* The same under gcc, under clang (which warns on the broken line
   * already, reading it as two statements with the `;` it expects: a line
   * with an error is no evidence), and with no compiler, where tree-sitter
   * sees them: a statement that is only a name, a member, an element or a
   * literal (Go has no compiler here). */
  const char *ccs[] = {NULL, "clang", ""};
  for (size_t i = 0; i < sizeof ccs / sizeof ccs[0]; i++) {
    if (ccs[i] && *ccs[i] && system("command -v clang >/dev/null 2>&1") != 0) continue;
    if (ccs[i]) setenv("SCULPT_CC", ccs[i], 1);
    expect_verdict("c", lost, "a->child n;", SC_EDIT_DIAGNOSTIC, "a->child; n;",
                   "leaves a statement with no effect");
    expect_verdict("c", lost, "a->child n;", SC_EDIT_DIAGNOSTIC, "a->child = n;", NULL);
    unsetenv("SCULPT_CC");
  }
  const char *go = "package p\n\nfunc f(c *C, cmds []*C, i int) {\n\tif c.flags  nil {\n"
                   "\t\treturn\n\t}\n\tif cmds[i]  c {\n\t\treturn\n\t}\n}\n";
  expect_verdict("go", go, "nil {", SC_EDIT_DIAGNOSTIC, ";nil {",
                 "leaves a statement with no effect");
  expect_verdict("go", go, "nil {", SC_EDIT_DIAGNOSTIC, "== nil {", NULL);
  expect_verdict("go", go, "  c {", SC_EDIT_DIAGNOSTIC, "  ;c {",
                 "leaves a statement with no effect");
  /* Such a statement on another line, outside the site's lines, is no
   * reason to refuse a right fix. */
  const char *had_go = "package p\n\nfunc f(c *C) {\n\tc.flags\n\tx := 1 +\n}\n";
  expect_verdict("go", had_go, "x := 1 +", SC_EDIT_DIAGNOSTIC, "x := 1 + 2", NULL);
  const char *both = "package p\n\nfunc f(a, b *C) {\n\tif !a.e  !b.e {\n\t\treturn\n\t}\n}\n";
  expect_verdict("go", both, "!b.e {", SC_EDIT_DIAGNOSTIC, ";!b.e {",
                 "leaves a statement with no effect");
  expect_verdict("go", both, "!b.e {", SC_EDIT_DIAGNOSTIC, "&& !b.e {", NULL);
  /* Operators that do something make no such statement. */
  const char *js = "let o = {a: 1};\nfunction f(x) {\n  x.a +\n}\n";
  expect_verdict("javascript", js, "x.a +", SC_EDIT_DIAGNOSTIC, "x.a; delete x.a",
                 "leaves a statement with no effect");
  expect_verdict("javascript", js, "x.a +", SC_EDIT_DIAGNOSTIC, "delete x.a", NULL);
  expect_verdict("python", "def f(a):\n    x = a.b +\n    return x\n", "x = a.b +",
                 SC_EDIT_DIAGNOSTIC, "x; a.b", "leaves a statement with no effect");
}

/* A generator that always offers the same text (the stand-in model's
 * harmful "fix" of a missing `:`), counting its calls. */
static int g_stub_calls;
static sc_status stub_generate(void *user, const sc_edit_request *req, sc_edit_candidate *out,
                               sc_error *err) {
  (void)req;
  (void)err;
  g_stub_calls++;
  out->text = strdup(user);
  out->len = strlen(user);
  return SC_OK;
}

/* An accept test that passes a text holding user's string. */
static sc_status accept_holding(void *user, const char *text, size_t len, bool *passed,
                                sc_error *err) {
  (void)err;
  *passed = memmem(text, len, user, strlen(user)) != NULL;
  return SC_OK;
}

/* The diagnostic's site filled with the stub behind it, and with want the
 * caller's own test (accept) that passes only texts holding it: the
 * edit's text, or NULL when not done; *source as the result says. The
 * caller frees. */
static char *fill_with(const char *lang, const char *text, const char *at, const char *message,
                       const char *model_text, const char *want, const char **source,
                       char expect[8]) {
  sc_edit_doc *d = doc_of(lang, NULL, text);
  *source = NULL;
  expect[0] = '\0';
  EXPECT(d);
  if (!d) return NULL;
  sc_edit_site s;
  size_t off = (size_t)(strstr(text, at) - text);
  EXPECT(sc_edit_site_for_diagnostic(d, off, message, &s, NULL) == SC_OK);
  memcpy(expect, s.expect, 8);
  sc_edit_generator gen = {stub_generate, NULL, (void *)model_text, false};
  sc_edit_fill_options fo = {gen, 2, NULL, want ? accept_holding : NULL, (void *)want, NULL};
  sc_edit_result r;
  EXPECT(sc_edit_fill(d, &s, &fo, &r, NULL) == SC_OK);
  char *out = r.status == SC_EDIT_DONE ? strndup(r.text, r.len) : NULL;
  *source = r.status == SC_EDIT_DONE ? sc_edit_source_name(r.seed) : NULL;
  sc_edit_result_free(&r);
  sc_edit_doc_free(d);
  return out;
}

static char *fill_diagnostic(const char *lang, const char *text, const char *at,
                             const char *message, const char *model_text, const char **source,
                             char expect[8]) {
  return fill_with(lang, text, at, message, model_text, NULL, source, expect);
}

/* A Rust diagnostic's choice decided by the caller's test (want), the
 * model's text "0". */
static char *fill_choice_accepting(const char *text, const char *at, const char *message,
                                   const char *want) {
  const char *source;
  char expect[8];
  return fill_with("rust", text, at, message, "0", want, &source, expect);
}

/* A missing token is inserted, not guessed: tree-sitter's MISSING node, or
 * the token the message says is expected, at the diagnostic's position,
 * before the model is asked; and the model's rewrite of the statement is
 * refused. */
static void test_insertions(void) {
  const char *source = NULL;
  char expect[8];
  /* The token each tool's message names, or none. */
  static const struct {
    const char *message, *want;
  } msgs[] = {
      {"expected ';' before 'int'", ";"},
      {"expected \xe2\x80\x98)\xe2\x80\x99 before \xe2\x80\x98;\xe2\x80\x99 token", ")"},
      {"Expected ';' after expression", ";"},               /* clangd */
      {"expected ':'", ":"},                                /* Python */
      {"expected `;`, found `let`", ";"},                   /* rustc */
      {"Expected \":\"", ":"},                              /* pyright */
      {"';' expected.", ";"},                               /* TypeScript */
      {"Syntax Error: expected SEMICOLON", ";"},            /* rust-analyzer */
      {"Syntax Error: expected R_PAREN", ")"},
      {"Syntax Error: expected SEMI", ";"},                 /* before 2021 */
      {"Syntax Error: expected SEMICOLONS", ""},
      {"Syntax Error: expected field name or number", ""},
      {"expected \xe2\x80\x9c)\xe2\x80\x9d", ")"},
      {"expected ',' or ';' before 'int'", ""},             /* a choice */
      {"expected identifier or '(' before 'int'", ""},      /* a kind of thing */
      {"unexpected ';'", ""},
      {"syntax error: unexpected newline, expected comma or }", ""},
      {"expected 'something_long'", ""},
      {"expected ''", ""},
      {"expected '", ""},
      {"'", ""},
      {"", ""},
  };
  const char *one = "int f(void) {\n  return 1\n}\n";
  sc_edit_doc *d = doc_of("c", NULL, one);
  REQUIRE(d);
  for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
    sc_edit_site s;
    EXPECT(sc_edit_site_for_diagnostic(d, 10, msgs[i].message, &s, NULL) == SC_OK);
    EXPECTF(strcmp(s.expect, msgs[i].want) == 0, "'%s': expect '%s', want '%s'",
            msgs[i].message, s.expect, msgs[i].want);
  }
  /* The tokens each tool's message offers as a choice, in its order, and
   * whether it also allows a kind of thing no token stands for. */
  static const struct {
    const char *message, *want; /* the choices, space-separated */
    bool open;
  } choices[] = {
      {"expected one of `!`, `,`, `.`, `::`, `?`, `{`, `}`, or an operator, found `#`",
       "! , . :: ? { } + - * / % == != < > <= >= && || & | ^ << >>", false}, /* rustc */
      {"expected one of `->`, `where`, or `{`, found keyword `Self`", "-> where {", false},
      {"expected one of `!`, `(`, `,`, `?`, `for`, lifetime, or path, found `+`", "! ( , ? for",
       true},
      {"expected ',' or ';' before 'int'", ", ;", false}, /* gcc */
      {"expected \xe2\x80\x98,\xe2\x80\x99 or \xe2\x80\x98)\xe2\x80\x99 before", ", )",
       false},
      {"expected ';', identifier or '(' before 'int'", "; (", true},
      {"expected identifier or '(' before 'int'", "", false},
      {"',', '}', or ';' expected", ", } ;", false}, /* javac */
      {"')' or ',' expected", ") ,", false},
      {"expected one of 8 possible tokens", "", false},
      {"expected `;`, found `let`", "", false}, /* one token: expect */
  };
  for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
    sc_edit_site s;
    EXPECT(sc_edit_site_for_diagnostic(d, 10, choices[i].message, &s, NULL) == SC_OK);
    char got[256] = "";
    for (int c = 0; c < s.n_choices; c++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", c ? " " : "", s.choices[c]);
    EXPECTF(strcmp(got, choices[i].want) == 0 && s.choices_open == choices[i].open &&
                (s.n_choices == 0 || s.expect[0] == 0),
            "'%s': choices '%s'%s, want '%s'", choices[i].message, got,
            s.choices_open ? " (open)" : "", choices[i].want);
  }
  sc_edit_doc_free(d);
  /* gcc's missing `;` (UTF-8 quotes), reported at the next line's token:
   * tree-sitter reads `break` as an identifier and inserts nothing. */
  const char *semi = "int f(int ri) {\n  int r = 0;\n  for (;;) {\n    if (ri <= 0) {\n"
                     "      r = ri\n      break;\n    }\n  }\n  return r;\n}\n";
  char *got = fill_diagnostic("c", semi, "break", "expected \xe2\x80\x98;\xe2\x80\x99 before "
                              "\xe2\x80\x98" "break\xe2\x80\x99", "0;", &source, expect);
  EXPECTF(strcmp(expect, ";") == 0, "gcc's expected token: '%s'", expect);
  EXPECTF(got && strcmp(got, "r = ri;") == 0 && source && strcmp(source, "insertion") == 0,
          "missing `;`: '%s' from %s", got ? got : "(none)", source ? source : "-");
  free(got);
  /* gcc's missing `;` where an `=` was lost (the site: after `a->child`
   * to the statement's end): the insertion is refused (two statements with
   * no effect), and the model's fix is taken. */
  const char *lost = "struct s { int *child; };\nvoid f(struct s *a, int *n) {\n"
                     "  a->child n;\n}\n";
  got = fill_diagnostic("c", lost, "n;\n}", "expected \xe2\x80\x98;\xe2\x80\x99 before "
                        "\xe2\x80\x98n\xe2\x80\x99", " = n;", &source, expect);
  EXPECTF(got && strcmp(got, " = n;") == 0 && source && strcmp(source, "model") == 0,
          "a lost `=`: '%s' from %s", got ? got : "(none)", source ? source : "-");
  free(got);
  /* Python's missing `:`: the stand-in model's `if None:` compiles, and
   * is refused; the insertion is taken. */
  const char *colon = "def f(self):\n    if self.ready\n        return 1\n    return 2\n";
  g_stub_calls = 0;
  got = fill_diagnostic("python", colon, "\n        return", "expected ':'", " if None:", &source,
                        expect);
  EXPECTF(got && strcmp(got, "if self.ready:") == 0 && g_stub_calls == 0,
          "missing `:`: '%s', the model asked %d times", got ? got : "(none)", g_stub_calls);
  free(got);
  /* tree-sitter's MISSING `)`, the message saying nothing of it. */
  const char *paren = "int g(int);\nint f(void) {\n  return g(1;\n}\n";
  got = fill_diagnostic("c", paren, ";\n}", "error", "0", &source, expect);
  EXPECTF(got && strcmp(got, ");") == 0, "missing `)`: '%s'", got ? got : "(none)");
  free(got);
  /* A choice: each token inserted and judged; the one that alone passes
   * (`r = ri, break;` does not parse) is the fix, the model not asked. */
  got = fill_diagnostic("c", semi, "break", "expected ',' or ';' before 'break'", "0;", &source,
                        expect);
  EXPECTF(expect[0] == 0 && got && strcmp(got, "r = ri;") == 0 && source &&
              strcmp(source, "insertion") == 0 && g_stub_calls == 0,
          "a choice: expect '%s', edit '%s'", expect, got ? got : "(none)");
  free(got);
  /* A choice two of whose tokens pass (rustc: `f(a, b)`, `f(a. b)`, no
   * compiler judging Rust here): nothing says which, so neither is
   * inserted, and the model's rewrite of the statement is refused. */
  const char *call = "fn g(a: S, b: i32) -> i32 {\n    f(a b)\n}\n";
  const char *found_b = "expected one of `)`, `,`, `.`, `?`, or an operator, found `b`";
  got = fill_diagnostic("rust", call, "b)", found_b, "0", &source, expect);
  EXPECTF(got == NULL, "an open choice: edit '%s'", got ? got : "(none)");
  free(got);
  /* ... unless the caller's own test (batch --check: the build) decides:
   * then each is tried in the message's order (the edit: from the token
   * before `b` to the statement's end). */
  got = fill_choice_accepting(call, "b)", found_b, "f(a, b)");
  EXPECTF(got && strcmp(got, ", b)") == 0, "a choice the test decides: '%s'",
          got ? got : "(none)");
  free(got);
  got = fill_choice_accepting(call, "b)", found_b, "f(a. b)");
  EXPECTF(got && strcmp(got, ". b)") == 0, "the test's other pick: '%s'",
          got ? got : "(none)");
  free(got);
  /* rustc's list, a token lost between two blanks put back between them. */
  const char *let = "fn f(e: &E) {\n    let own  e.cast();\n}\n";
  got = fill_diagnostic("rust", let, "e.cast",
                        "expected one of `:`, `;`, `=`, `@`, or `|`, found `e`", "0", &source,
                        expect);
  EXPECTF(got == NULL, "rustc's open choice (`;` and `=` parse): '%s'", got ? got : "(none)");
  free(got);
  /* An open choice (rustc's "lifetime, or path": a bound was lost) where
   * one token alone parses (`Display + !+ Send`): with no compiler to
   * judge, it is not inserted. */
  const char *bound = "impl X {\n    fn f<E>(e: E)\n    where\n        E: Display +  + Send,\n"
                      "    {\n    }\n}\n";
  got = fill_diagnostic("rust", bound, "+ Send",
                        "expected one of `!`, `(`, `,`, `?`, `[`, `async`, `const`, `for`, `use`, "
                        "`{`, `~`, lifetime, or path, found `+`",
                        "0", &source, expect);
  EXPECTF(got == NULL, "an open choice: '%s'", got ? got : "(none)");
  free(got);
  got = fill_choice_accepting(let, "e.cast",
                              "expected one of `:`, `;`, `=`, `@`, or `|`, found `e`", "own = e");
  EXPECTF(got && strcmp(got, "= e.cast();") == 0, "rustc's choice, the test's pick: '%s'",
          got ? got : "(none)");
  free(got);
  got = fill_diagnostic("python", colon, "\n        return", "invalid syntax", " if None:",
                        &source, expect);
  EXPECTF(expect[0] == 0 && got == NULL, "no token named: expect '%s', edit '%s'", expect,
          got ? got : "(none)");
  free(got);
  /* The model's own fix, when it keeps the statement, is still taken. */
  got = fill_diagnostic("python", colon, "\n        return", "invalid syntax", "if self.ready:",
                        &source, expect);
  EXPECTF(got && strcmp(got, "if self.ready:") == 0 && source && strcmp(source, "model") == 0,
          "the model's fix: '%s' from %s", got ? got : "(none)", source ? source : "-");
  free(got);
}

/* ---- real code (issue 43) ------------------------------------------------------- */

/* A vendored file (under tests/data/real) read whole into a malloc'd text;
 * NULL when it cannot be read. */
static char *read_real(const char *rel, char *path, size_t cap) {
  snprintf(path, cap, "%s/data/real/%s", SC_TEST_DATA_DIR, rel);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strdup(buf);
}

/* text with the first `old` on its 1-based line replaced by `rep`
 * (malloc'd), NULL when the line does not hold it. */
static char *break_line(const char *text, int line, const char *old, const char *rep) {
  size_t ls = offset_of(text, line - 1, 0);
  const char *nl = strchr(text + ls, '\n');
  const char *at = strstr(text + ls, old);
  if (!at || (nl && at > nl)) return NULL;
  size_t a = (size_t)(at - text), ol = strlen(old), rl = strlen(rep), n = strlen(text);
  char *out = malloc(n - ol + rl + 1);
  if (!out) return NULL;
  memcpy(out, text, a);
  memcpy(out + a, rep, rl);
  memcpy(out + a + rl, text + a + ol, n - a - ol + 1);
  return out;
}

/* The document after the engine's fix of a diagnostic at 1-based (line,
 * byte column) of text (the file at path, for its folder's includes),
 * the stub model offering model_text; NULL when not done. *source as the
 * result says. */
static char *fixed_text(const char *lang, const char *path, const char *text, int line, int col,
                        const char *message, const char *model_text, const char **source) {
  sc_edit_doc *d = doc_of(lang, path, text);
  *source = NULL;
  if (!d) return NULL;
  sc_edit_site s;
  char *out = NULL;
  sc_edit_generator gen = {stub_generate, NULL, (void *)model_text, false};
  sc_edit_fill_options fo = {gen, 1, NULL, NULL, NULL, NULL};
  sc_edit_result r = {0};
  if (sc_edit_site_for_diagnostic(d, offset_of(text, line - 1, col - 1), message, &s, NULL) ==
          SC_OK &&
      sc_edit_fill(d, &s, &fo, &r, NULL) == SC_OK && r.status == SC_EDIT_DONE &&
      sc_edit_doc_apply(d, r.start, r.end, r.text, r.len, NULL) == SC_OK) {
    out = strdup(sc_edit_doc_text(d, NULL));
    *source = sc_edit_source_name(r.seed);
  }
  sc_edit_result_free(&r);
  sc_edit_doc_free(d);
  return out;
}

/* The fixes issue 43 found refused or unseen, on the vendored code, each
 * with its tool's own message at its tool's position: the file is its
 * original again. */
static void test_real_fixes(void) {
  static const struct {
    const char *file, *lang;
    int line;
    const char *old, *rep;
    int at_line, col; /* where the tool reports it: 1-based line, byte column */
    const char *message, *model; /* the stub model's text */
    const char *source;         /* which candidate is kept */
  } cases[] = {
      /* A `def` without its `:` (annotations, a docstring below): recovery
       * split a later method's `->` into `-` and an ERROR `>`, and the
       * right line was refused as changing code outside its site. */
      {"click/src/click/testing.py", "python", 184, "-> None:", "-> None", 184, 28, "expected ':'",
       "x", "insertion"},
      {"click/src/click/testing.py", "python", 184, "-> None:", "-> None", 184, 28,
       "invalid syntax", "def close(self) -> None:", "model"},
      /* ... `-`, a MISSING operand and `>` (decorators.py) */
      {"click/src/click/decorators.py", "python", 28, "R]:", "R]", 28, 85, "expected ':'", "x",
       "insertion"},
      /* ... a raw docstring whose `r` the error had cut off: its `\s`
       * read as escapes until the fix (core.py). */
      {"click/src/click/core.py", "python", 2187, "(ABC):", "(ABC)", 2187, 21, "expected ':'", "x",
       "insertion"},
      /* A statement-like macro call without its `;`: tree-sitter reads it
       * and the next line as one declaration and sees no error; gcc
       * reports it at the next line's first token. */
      {"jq/src/util.c", "c", 84, "JV_KIND_STRING);", "JV_KIND_STRING)", 85, 3,
       "expected \xe2\x80\x98;\xe2\x80\x99 before \xe2\x80\x98" "const\xe2\x80\x99", "x",
       "insertion"},
      /* ... and where tree-sitter puts a MISSING `;` after the next line's
       * `return`, gcc's word wins (jq's jv_file.c). */
      {"jq/src/jv_file.c", "c", 21, "close(fd);", "close(fd)", 21, 14,
       "expected \xe2\x80\x98;\xe2\x80\x99 before \xe2\x80\x98return\xe2\x80\x99", "x",
       "insertion"},
      /* An `=` lost: gcc asks for a `;` before `b`, and `a->next; b;`
       * compiles; the compiler's -Wunused-value refuses it, the model's
       * ` = b;` is kept (cJSON had 4 such "fixes" in 30 random deletions). */
      {"jq/src/compile.c", "c", 244, "a->next = b;", "a->next b;", 244, 10,
       "expected \xe2\x80\x98;\xe2\x80\x99 before \xe2\x80\x98" "b\xe2\x80\x99", " = b;",
       "model"},
      /* ... and Go's `!=`, which no compiler here judges: gofmt asks for a
       * `;`, and `if c.globNormFunc ;nil {` parses (tree-sitter's statement
       * with no effect refuses it). */
      {"cobra/command.go", "go", 1914, "!= nil {", "nil {", 1914, 20,
       "expected ';', found nil", " != nil {", "model"},
      /* tsc reports a lost `)` or `,` at the next token: it goes against
       * the token before, as written (was `prefix ){`, which tsc passes). */
      {"ky/source/core/Ky.ts", "typescript", 373, "prefix) {", "prefix {", 373, 29,
       "')' expected.", "x", "insertion"},
      {"ky/source/core/Ky.ts", "typescript", 964, "Timeout, delay", "Timeout delay", 964, 34,
       "',' expected.", "x", "insertion"},
      /* javac's column, from its caret (gson). */
      {"gson/Gson.java", "java", 1225, "(e);", "(e;", 1225, 38, "')' expected", "x",
       "insertion"},
      /* rustc's choices (anyhow): the one token of the list that parses. */
      {"anyhow/src/error.rs", "rust", 1024, "Error) -> Self", "Error)  Self", 1024, 28,
       "expected one of `->`, `where`, or `{`, found keyword `Self`", "x", "insertion"},
      {"anyhow/src/error.rs", "rust", 231, ">>,", ">>", 232, 13,
       "expected one of `!`, `,`, `.`, `::`, `?`, `{`, `}`, or an operator, found `#`", "x",
       "insertion"},
      /* Python's unclosed bracket, reported at the opener. */
      {"click/src/click/core.py", "python", 392, "get(info_name)", "get(info_name", 392, 49,
       "'(' was never closed", "x", "insertion"},
      {"click/src/click/core.py", "python", 392, "get(info_name)", "get(info_name", 392, 49,
       "\"(\" was not closed", "x", "insertion"}, /* pyright */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[1024];
    char *orig = read_real(cases[i].file, path, sizeof path);
    REQUIRE(orig);
    char *bad = break_line(orig, cases[i].line, cases[i].old, cases[i].rep);
    EXPECTF(bad != NULL, "%s:%d holds '%s'", cases[i].file, cases[i].line, cases[i].old);
    const char *source = NULL;
    char *got = bad ? fixed_text(cases[i].lang, path, bad, cases[i].at_line, cases[i].col,
                                 cases[i].message, cases[i].model, &source)
                    : NULL;
    EXPECTF(got && strcmp(got, orig) == 0 && source && strcmp(source, cases[i].source) == 0,
            "%s:%d (%s): %s, from %s", cases[i].file, cases[i].line, cases[i].message,
            !got ? "not fixed" : strcmp(got, orig) == 0 ? "restored" : "changed otherwise",
            source ? source : "-");
    free(got);
    free(bad);
    free(orig);
  }
}

/* The formats tools print (documented ones; tests/batch/tools holds real
 * output of the rest) and each one's columns as byte offsets. */
static void test_diagnostic_formats(void) {
  static const char k_text[] =
      "\x1b[01m\x1b[Kx.c:2:5:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[Kexpected ';'\n"
      "In file included from x.h:3,\n"
      "                 from x.c:1:\n"
      "x.c:9:1: note: declared here\n"
      "    9 | int f(void): 1: 2: x\n"
      "a.py:3:9: SyntaxError: Expected ':', found newline\n"        /* ruff */
      "a.py:4:9: invalid-syntax: Expected ':', found newline\n"     /* ruff, later */
      "a.py:1:80: E501 line too long (88 > 79 characters)\n"         /* flake8 */
      "b.py:3:5:3:9: error: Name \"y\" is not defined  [name-defined]\n" /* mypy */
      "b.py:3: note: See https://mypy.readthedocs.io\n"
      "src/main.rs:4:11: error: expected `;`, found keyword `let`\n" /* cargo --message-format short */
      "  /w/c.py:1:1 - information: Import cycle\n"                 /* pyright */
      "a.ts(1,5): error TS1005: ';' expected.\n"                      /* tsc */
      "vet: ./d.go:7:2: undefined: x\n"
      "error[E0425]: cannot find value `y` in this scope\n"
      " --> src/lib.rs:3:5\n"
      "  |\n"
      "note: a note with its own arrow\n"
      "  --> src/other.rs:1:1\n"
      "Traceback (most recent call last):\n"
      "  File \"e.py\", line 2, in <module>\n"
      "    f()\n"
      "  File \"e.py\", line 1, in f\n"
      "    def f(): return x\n"
      "NameError: name 'x' is not defined\n";
  static const struct {
    const char *path;
    long line, col;
    sc_edit_col_unit unit;
    int severity;
    const char *message;
  } want[] = {
      {"x.c", 1, 4, SC_EDIT_COL_DISPLAY, SC_EDIT_ERROR, "expected ';'"},
      {"a.py", 2, 8, SC_EDIT_COL_CHARS, SC_EDIT_ERROR, "SyntaxError: Expected ':', found newline"},
      {"a.py", 3, 8, SC_EDIT_COL_CHARS, SC_EDIT_ERROR, "invalid-syntax: Expected ':', found newline"},
      {"a.py", 0, 79, SC_EDIT_COL_CHARS, SC_EDIT_WARNING, "line too long (88 > 79 characters)"},
      {"b.py", 2, 4, SC_EDIT_COL_CHARS, SC_EDIT_ERROR, "Name \"y\" is not defined"},
      {"src/main.rs", 3, 10, SC_EDIT_COL_CHARS, SC_EDIT_ERROR, "expected `;`, found keyword `let`"},
      {"/w/c.py", 0, 0, SC_EDIT_COL_UTF16, SC_EDIT_INFORMATION, "Import cycle"},
      {"a.ts", 0, 4, SC_EDIT_COL_UTF16, SC_EDIT_ERROR, "';' expected."},
      {"./d.go", 6, 1, SC_EDIT_COL_BYTES, SC_EDIT_ERROR, "undefined: x"},
      {"src/lib.rs", 2, 4, SC_EDIT_COL_CHARS, SC_EDIT_ERROR, "cannot find value `y` in this scope"},
      {"e.py", 0, -1, SC_EDIT_COL_CHARS, SC_EDIT_ERROR, "NameError: name 'x' is not defined"},
  };
  sc_edit_diagnostic *d = NULL;
  size_t n = 0;
  REQUIRE(sc_edit_diagnostics_parse(k_text, strlen(k_text), NULL, &d, &n, NULL) == SC_OK);
  EXPECTF(n == sizeof want / sizeof want[0], "%zu diagnostics, want %zu", n,
          sizeof want / sizeof want[0]);
  for (size_t i = 0; i < n && i < sizeof want / sizeof want[0]; i++)
    EXPECTF(strcmp(d[i].path, want[i].path) == 0 && d[i].line == want[i].line &&
                d[i].col == want[i].col && d[i].unit == want[i].unit &&
                d[i].severity == want[i].severity && strcmp(d[i].message, want[i].message) == 0,
            "%zu: %s:%ld:%ld unit %d severity %d '%s'", i, d[i].path, d[i].line, d[i].col,
            (int)d[i].unit, d[i].severity, d[i].message);
  sc_edit_diagnostics_free(d, n);
  /* clang says "N errors generated.": its columns are bytes. */
  const char *clang = "x.c:2:5: error: expected ';'\n1 error generated.\n";
  REQUIRE(sc_edit_diagnostics_parse(clang, strlen(clang), NULL, &d, &n, NULL) == SC_OK);
  EXPECT(n == 1 && d[0].unit == SC_EDIT_COL_BYTES);
  sc_edit_diagnostics_free(d, n);
  /* Columns as offsets: "\tx = \"é😀\" + y" */
  const char *line = "a\n\tx = \"\xc3\xa9\xf0\x9f\x98\x80\" + y  # c\n";
  static const struct {
    sc_edit_col_unit unit;
    long col;
    bool in_content;
    const char *at; /* what the offset points at */
  } cols[] = {
      {SC_EDIT_COL_DISPLAY, 8, false, "x = "},   /* the tab counts to 8 */
      {SC_EDIT_COL_BYTES, 1, false, "x = "},
      {SC_EDIT_COL_CHARS, 7, false, "\xf0"},     /* é is one character */
      {SC_EDIT_COL_UTF16, 9, false, "\" +"},      /* 😀 is two units */
      {SC_EDIT_COL_CHARS, 2, true, "= "},         /* Python's caret, after the indentation */
      {SC_EDIT_COL_CHARS, -1, false, "\n"},       /* no column (mypy): the line's end */
      {SC_EDIT_COL_CHARS, 99, false, "\n"},       /* past the end (flake8's E999): the end */
  };
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
    sc_edit_diagnostic dg = {"f", "m", 1, cols[i].col, cols[i].unit, cols[i].in_content, 1};
    size_t off = 0;
    EXPECT(sc_edit__diag_offset(line, strlen(line), &dg, &off));
    EXPECTF(strncmp(line + off, cols[i].at, strlen(cols[i].at)) == 0 ||
                (cols[i].at[0] == '\n' && line[off] == '\n'),
            "unit %d col %ld: at '%s', want '%s'", (int)cols[i].unit, cols[i].col, line + off,
            cols[i].at);
  }
  sc_edit_diagnostic past = {"f", "m", 5, 0, SC_EDIT_COL_BYTES, false, 1};
  size_t off;
  EXPECT(!sc_edit__diag_offset(line, strlen(line), &past, &off));
}

/* Our indentation check against Python's verdict on small cases, and no
 * complaint about any file of the vendored click (all of which compile). */
static void test_python_indentation(void) {
  static const struct {
    const char *src;
    long line;
  } cases[] = {
      {"def f(x):\n    return x\n", 0},
      {"def f(x):\n    y = 1\n      return x\n", 3},
      {"def f(x):\nreturn x\n", 2},
      {"if x:\n        a = 1\n    b = 2\n", 3},
      {"x = (1,\n  2)\ny = 3\n", 0},
      {"s = '''a:\n  b'''\nt = 1\n", 0},
      {"d = {'a':\n   1}\n", 0},
      {"x = 1 + \\\n      2\n", 0},
      {"class A:\n    # c\n\n    def f(self): pass\n", 0},
      {"def f():\n", 1},
      {"if a:  # c:\n    pass\nelse:\n\tpass\n", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    long got = sc_edit__python_indent_error(cases[i].src, strlen(cases[i].src));
    EXPECTF(got == cases[i].line, "case %zu: line %ld, want %ld", i, got, cases[i].line);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "find %s/data/real/click -name '*.py'", SC_TEST_DATA_DIR);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  char path[1024];
  int files = 0;
  static char buf[1 << 20];
  while (fgets(path, sizeof path, p)) {
    path[strcspn(path, "\n")] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    long line = sc_edit__python_indent_error(buf, n);
    EXPECTF(line == 0, "%s: our check says line %ld", path, line);
    files++;
  }
  pclose(p);
  EXPECTF(files >= 20, "click's files were read (%d)", files);
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s/test-edit-XXXXXX", SC_TEST_BUILD_DIR);
  if (!mkdtemp(g_tmp)) return 1;
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 %s/../tools/planted_checkpoints.py %s/models >/dev/null",
           SC_TEST_DATA_DIR, g_tmp);
  if (system(cmd) != 0) return 1;
  snprintf(g_planted, sizeof g_planted, "%s/models/planted-successor-shifted-bytes", g_tmp);
  snprintf(g_default, sizeof g_default, "%s/../model/default", SC_TEST_DATA_DIR);
  RUN(test_holes);
  RUN(test_diagnostic_sites);
  RUN(test_checks);
  RUN(test_insertions);
  RUN(test_python_indentation);
  RUN(test_real_fixes);
  RUN(test_diagnostic_formats);
  RUN(test_planted_same_edit);
  RUN(test_default_model_same_edit);
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_tmp);
  TEST_MAIN_END();
}

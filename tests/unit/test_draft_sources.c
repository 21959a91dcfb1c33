/* test_draft_sources.c — where drafts come from (context/draft.c,
 * context/lines.c): the prompt's own text (a partial word, blanks before
 * the cursor, longer matches first, the cursor's indentation on later
 * lines, one line when asked), the end of the middle found in the suffix,
 * the previous suggestion first, the workspace's line table (what follows
 * the previous line elsewhere, filtered by the cursor's line, indented for
 * it; kept current by buffer updates and removals; kept on disk with the
 * index), its memory bound, a file of a million identical lines, and the
 * token runs the engine gets. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include "context.h"
#include "sc_test.h"
#include "sc_test_tmp.h"
#include "workspace_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char root[256];

static void write_file(const char *rel, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  FILE *f = fopen(p, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static int git(const char *args) {
  char cmd[768];
  snprintf(cmd, sizeof cmd, "git -C '%s' %s >/dev/null 2>&1", root, args);
  return system(cmd);
}

/* The drafts at the cursor between before and after. */
static void find(const char *before, const char *after, const sc_workspace *ws, bool single,
                 sc_drafts *out) {
  sc_draft_query q = {before, strlen(before), after, strlen(after), ws, NULL, 0, single, 0, 0};
  sc_drafts_find(&q, out);
}

static bool has(const sc_drafts *d, const char *text, const char *source) {
  for (size_t i = 0; i < d->n; i++)
    if (d->d[i].len == strlen(text) && memcmp(d->d[i].text, text, d->d[i].len) == 0 &&
        strcmp(d->d[i].source, source) == 0)
      return true;
  return false;
}

static void dump(const char *what, const sc_drafts *d) {
  fprintf(stderr, "%s: %zu drafts\n", what, d->n);
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "  [%s %.2f%s] %.*s\n", d->d[i].source, d->d[i].score,
            d->d[i].ends_middle ? " ends" : "", (int)d->d[i].len, d->d[i].text);
}

static void test_prompt(void) {
  sc_drafts d;
  /* A word the cursor touches is partial: the place's word must begin with
   * it, and the draft goes on inside it. */
  find("x = foo(1, 2)\ny = bar\nx = fo", "\n", NULL, true, &d);
  EXPECTF(d.n >= 1 && has(&d, "o(1, 2)", "prompt"), "partial word");
  if (d.n < 1) dump("partial", &d);
  sc_drafts_free(&d);
  /* Blanks before the cursor: the draft starts at the place's next lexeme
   * (not with its blank). One lexeme matched ("=" after "b") is too little. */
  find("a = compute(x)\nb = other(y)\na = ", "\n", NULL, true, &d);
  EXPECTF(d.n >= 1 && !strcmp(d.d[0].text, "compute(x)"), "after a blank");
  EXPECT(!has(&d, "other(y)", "prompt"));
  if (d.n < 1) dump("spaced", &d);
  sc_drafts_free(&d);
  /* The longer match ranks first. */
  find("k = 1\nq = g(a)\np = q = g(b)\np = q = ", "", NULL, true, &d);
  EXPECTF(d.n >= 2 && !strcmp(d.d[0].text, "g(b)") && has(&d, "g(a)", "prompt"),
          "longer match first");
  if (d.n < 2) dump("ranking", &d);
  sc_drafts_free(&d);
  /* Several lines when allowed, later lines in the cursor's indentation:
   * the source block is four columns deeper. */
  find("class A:\n    def g(self):\n        if x:\n            run(1)\n            stop()\n"
       "def h():\n    if x:\n        ",
       "\n", NULL, false, &d);
  EXPECTF(d.n >= 1 && !strncmp(d.d[0].text, "run(1)\n        stop()\n", 22),
          "later lines re-indented");
  if (d.n < 1 || strncmp(d.d[0].text, "run(1)\n", 7)) dump("indent", &d);
  sc_drafts_free(&d);
  find("class A:\n    def g(self):\n        if x:\n            run(1)\n            stop()\n"
       "def h():\n    if x:\n        ",
       "\n", NULL, true, &d);
  EXPECT(d.n >= 1 && !strcmp(d.d[0].text, "run(1)")); /* one line */
  sc_drafts_free(&d);
  /* Places after the cursor count too. */
  find("v = load(\"a\")\nw = ", "\nv = load(\"b\")\nw = save(1)\n", NULL, true, &d);
  EXPECT(has(&d, "save(1)", "prompt"));
  sc_drafts_free(&d);
  /* Nothing repeats: no draft. */
  find("alpha beta\ngamma", "\n", NULL, true, &d);
  EXPECT(d.n == 0);
  sc_drafts_free(&d);
  find("", "", NULL, true, &d);
  EXPECT(d.n == 0);
  sc_drafts_free(&d);
}

static void test_ends(void) {
  sc_drafts d;
  /* The suffix "b)" follows "a, " at the place: the draft is cut there, its
   * blank kept, and ends the middle. */
  find("g(a, b)\ng(", "b)\n", NULL, true, &d);
  EXPECTF(d.n >= 1 && !strcmp(d.d[0].text, "a, ") && d.d[0].ends_middle, "ends at b)");
  if (d.n < 1 || !d.d[0].ends_middle) dump("ends", &d);
  sc_drafts_free(&d);
  /* At the end of a line: the next line of the suffix, matched with blank
   * runs as blank runs (its indentation differs from the place's). */
  find("def f():\n    x = 1\n  return x\ndef g():\n    x = ", "\n    return x\n", NULL, false,
       &d);
  EXPECTF(d.n >= 1 && !strcmp(d.d[0].text, "1") && d.d[0].ends_middle, "ends at the next line");
  if (d.n < 1) dump("ends2", &d);
  sc_drafts_free(&d);
  /* A suffix that is not what followed: the draft does not end. */
  find("g(a, b)\ng(", "c)\n", NULL, true, &d);
  EXPECT(d.n >= 1 && !d.d[0].ends_middle && !strcmp(d.d[0].text, "a, b)"));
  sc_drafts_free(&d);
  /* The caller's previous suggestion ranks first, and ends the same way. */
  sc_draft_query q = {"g(a, b)\ng(", 10, "zz)\n", 4, NULL, "yy, zz)", 7, true, 0, 0};
  sc_drafts_find(&q, &d);
  EXPECTF(d.n >= 2 && !strcmp(d.d[0].text, "yy, ") && d.d[0].ends_middle &&
              !strcmp(d.d[0].source, "previous"),
          "previous first");
  sc_drafts_free(&d);
}

static void test_workspace(void) {
  write_file("a.py", "import os\n\ndef load(path):\n    with open(path) as f:\n"
                     "        return f.read()\n    pass\n");
  write_file("b.py", "def save(path, data):\n  with open(path) as f:\n      return f.read()\n");
  write_file("c.py", "def keep(path):\n    with open(path) as f:\n        data = f.read()\n");
  sc_workspace *ws = NULL;
  sc_error err = {0};
  sc_workspace_options o = {.cache_dir = ""};
  REQUIRE(sc_workspace_index(root, &o, &ws, &err) == SC_OK);
  sc_drafts d;
  /* What follows "with open(path) as f:" elsewhere, most frequent first
   * (twice against once), indented as the cursor's line is. */
  find("def other(p):\n    with open(path) as f:\n        ", "\n", ws, true, &d);
  EXPECTF(d.n >= 2 && !strcmp(d.d[0].text, "return f.read()") &&
              !strcmp(d.d[0].source, "workspace") && has(&d, "data = f.read()", "workspace"),
          "successor lines");
  if (d.n < 2) dump("workspace", &d);
  sc_drafts_free(&d);
  /* Several lines when allowed: "pass" came after it in a.py. */
  find("def other(p):\n    with open(path) as f:\n        ", "\n", ws, false, &d);
  EXPECTF(d.n >= 1 && !strcmp(d.d[0].text, "return f.read()\n    pass"), "two lines");
  if (d.n < 1 || strcmp(d.d[0].text, "return f.read()\n    pass")) dump("two lines", &d);
  sc_drafts_free(&d);
  /* What the line holds filters them. */
  find("def other(p):\n    with open(path) as f:\n        da", "\n", ws, true, &d);
  EXPECT(d.n == 1 && !strcmp(d.d[0].text, "ta = f.read()"));
  sc_drafts_free(&d);
  find("def other(p):\n    with open(path) as f:\n        zz", "\n", ws, true, &d);
  EXPECT(d.n == 0);
  sc_drafts_free(&d);
  /* A line with no indentation typed yet gets what it needs. */
  find("def other(p):\n    with open(path) as f:\n", "", ws, true, &d);
  EXPECTF(d.n >= 1 && !strcmp(d.d[0].text, "        return f.read()"), "indentation added");
  if (d.n < 1) dump("indent", &d);
  sc_drafts_free(&d);
  /* An editor's buffer replaces the file's lines (no line from the disk's
   * copy stays), and a removed file takes its lines away. */
  const char *buf = "def load(path):\n    with open(path) as f:\n        return f.readlines()\n";
  EXPECT(sc_workspace_update_file(ws, "a.py", buf, strlen(buf), NULL, &err) == SC_OK);
  find("def other(p):\n    with open(path) as f:\n        ret", "\n", ws, true, &d);
  EXPECTF(d.n == 2 && has(&d, "urn f.readlines()", "workspace") &&
              has(&d, "urn f.read()", "workspace"),
          "after the buffer update");
  if (d.n != 2) dump("buffer", &d);
  sc_drafts_free(&d);
  EXPECT(sc_workspace_remove_file(ws, "b.py"));
  EXPECT(sc_workspace_remove_file(ws, "a.py"));
  find("def other(p):\n    with open(path) as f:\n        ret", "\n", ws, true, &d);
  EXPECT(d.n == 0);
  sc_drafts_free(&d);
  sc_workspace_stats st = sc_workspace_get_stats(ws);
  EXPECT(st.line_bytes > 0 && !st.line_partial);
  sc_workspace_free(ws);

  /* Kept on disk with the index: a warm start finds the same lines. */
  char cache[300];
  snprintf(cache, sizeof cache, "%s/.cache-test", root);
  mkdir(cache, 0755);
  sc_workspace_options keep = {.cache_dir = cache};
  REQUIRE(sc_workspace_index(root, &keep, &ws, &err) == SC_OK);
  sc_workspace_free(ws);
  REQUIRE(sc_workspace_index(root, &keep, &ws, &err) == SC_OK);
  EXPECTF(sc_workspace_get_stats(ws).cached == 3, "warm: %zu cached",
          sc_workspace_get_stats(ws).cached);
  find("def other(p):\n    with open(path) as f:\n        ", "\n", ws, true, &d);
  EXPECT(d.n >= 2 && !strcmp(d.d[0].text, "return f.read()"));
  sc_drafts_free(&d);
  sc_workspace_free(ws);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  EXPECT(system(cmd) == 0);
}

/* The line tables' memory stays within max_line_bytes: files past it get
 * none and the index says so; identical lines (a generated file just
 * under the index's 1 MiB file bound, 170,000 of them: the parse, not the
 * table, is what a million would cost here) cost their text and one
 * short list, and a lookup reads at most WS_LINE_PER_KEY places. */
static void test_bounds(void) {
  size_t n = 170000;
  char *big = malloc(n * 6 + 1);
  REQUIRE(big);
  for (size_t i = 0; i < n; i++) memcpy(big + 6 * i, "x = 1\n", 6);
  big[6 * n] = '\0';
  write_file("gen.py", big);
  free(big);
  sc_workspace *ws = NULL;
  sc_error err = {0};
  sc_workspace_options o = {.cache_dir = ""};
  REQUIRE(sc_workspace_index(root, &o, &ws, &err) == SC_OK);
  sc_workspace_stats st = sc_workspace_get_stats(ws);
  /* 1 MB of text: its lines (6 bytes each with the NUL) and offsets (4). */
  EXPECTF(st.line_bytes < 2u << 20 && !st.line_partial, "identical lines: %zu bytes",
          st.line_bytes);
  uint32_t np = 0;
  pthread_rwlock_rdlock(&ws->lock);
  ws_lines_next(&ws->lines, ws_line_key("x = 1", 5), &np);
  pthread_rwlock_unlock(&ws->lock);
  EXPECTF(np == WS_LINE_PER_KEY, "%u places", np);
  sc_drafts d;
  find("y = 2\nx = 1\n", "", ws, false, &d);
  EXPECTF(d.n >= 1 && !strncmp(d.d[0].text, "x = 1\nx = 1", 11), "the generated line");
  sc_drafts_free(&d);
  sc_workspace_free(ws);

  /* A bound of 1 MiB leaves that file out. */
  o.max_line_bytes = 1u << 20;
  EXPECT(st.line_bytes > o.max_line_bytes);
  REQUIRE(sc_workspace_index(root, &o, &ws, &err) == SC_OK);
  st = sc_workspace_get_stats(ws);
  EXPECTF(st.line_bytes <= o.max_line_bytes && st.line_partial, "bounded: %zu bytes, partial %d",
          st.line_bytes, st.line_partial);
  find("def other(p):\n    with open(path) as f:\n        ", "\n", ws, false, &d);
  EXPECT(has(&d, "data = f.read()", "workspace")); /* the small files still have theirs */
  sc_drafts_free(&d);
  sc_workspace_free(ws);
  char p[400];
  snprintf(p, sizeof p, "%s/gen.py", root);
  remove(p);
}

static void test_encode(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/../model/default", SC_TEST_DATA_DIR);
  sc_tokenizer *tok = NULL;
  sc_error err = {0};
  REQUIRE(sc_tokenizer_load_dir(dir, &tok, &err) == SC_OK);
  sc_drafts d;
  find("g(alpha_beta, b)\ng(", "b)\n", NULL, true, &d);
  REQUIRE(d.n >= 1 && d.d[0].ends_middle);
  sc_draft_runs r;
  REQUIRE(sc_drafts_encode(&d, tok, 64, &r, &err) == SC_OK);
  EXPECT(r.n == (int)d.n && r.d[0].ends_middle && r.d[0].offset == 0 && r.d[0].n >= 1);
  char *text = NULL;
  size_t len = 0;
  REQUIRE(sc_tokenizer_decode(tok, r.d[0].ids, (size_t)r.d[0].n, &text, &len, &err) == SC_OK);
  EXPECT(len == d.d[0].len && !memcmp(text, d.d[0].text, len));
  free(text);
  sc_draft_runs_free(&r);
  /* Cut to one token, it no longer ends anything. */
  REQUIRE(sc_drafts_encode(&d, tok, 1, &r, &err) == SC_OK);
  EXPECT(r.d[0].n == 1 && !r.d[0].ends_middle);
  sc_draft_runs_free(&r);
  /* attach sets the params. */
  sc_infill_params p;
  sc_infill_params_default(&p);
  sc_drafts found;
  sc_draft_query q = {"g(alpha_beta, b)\ng(", 19, "b)\n", 3, NULL, NULL, 0, true, 0, 0};
  REQUIRE(sc_drafts_attach(&q, tok, 32, &found, &r, &p, &err) == SC_OK);
  EXPECT(p.n_drafts == r.n && p.drafts == r.d && r.n >= 1);
  sc_draft_runs_free(&r);
  sc_drafts_free(&found);
  sc_drafts_free(&d);
  sc_tokenizer_free(tok);
}

int main(void) {
  RUN(test_prompt);
  RUN(test_ends);
  RUN(test_encode);
  if (!sc_test_mkdtemp(root, sizeof root, "sculpt-drafts-test") || git("init -q") != 0) {
    fprintf(stderr, "skip the workspace tests: no temporary git repository\n");
    TEST_MAIN_END();
  }
  RUN(test_workspace);
  RUN(test_bounds);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  TEST_MAIN_END();
}

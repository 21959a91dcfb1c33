/* test_plan_shape.c — cutting engine candidates to the planned unit and
 * checking them by reparsing. Table-driven: a snippet with the cursor █, a
 * raw candidate as a model might write it (running past the unit), the text
 * that must be kept, and whether the kept text must pass the reparse check. */
#include "context.h"
#include "sc_test.h"

#include <stdlib.h>
#include <string.h>

#define CURSOR "\xe2\x96\x88"

typedef struct {
  const char *lang, *snippet, *kind, *candidate, *kept;
  bool ok; /* the kept text inserted at the cursor adds no syntax errors */
} shape_case;

static const shape_case k_cases[] = {
    /* one line: cut at the line break */
    {"c", "int main(void) {\n  int total = " CURSOR "\n  return 0;\n}\n", "line",
     "count(xs, n);\n  total += 1;\n", "count(xs, n);", true},
    {"python", "def f(xs):\n    n = " CURSOR "\n", "line", "len(xs)  \nreturn n\n", "len(xs)",
     true},
    /* a half-written line fails the check */
    {"c", "int main(void) {\n  int total = " CURSOR "\n  return 0;\n}\n", "line",
     "count(xs, \n", "count(xs,", false},
    /* statement: one statement, continuation lines kept */
    {"c", "void f(int n) {\n  int a = n;\n  " CURSOR "\n  return;\n}\n", "statement",
     "if (a > 1) {\n    a--;\n  }\n  a++;\n  a++;\n", "if (a > 1) {\n    a--;\n  }", true},
    {"python", "def f(xs):\n    total = 0\n    " CURSOR "\n    return total\n", "statement",
     "for x in xs:\n        total += x\n    print(total)\n", "for x in xs:\n        total += x",
     true},
    {"javascript", "function f(a) {\n  const b = 1;\n  " CURSOR "\n}\n", "statement",
     "const c = compute(a,\n    b);\n  return c;\n", "const c = compute(a,\n    b);", true},
    /* block and body: cut where the candidate closes the block itself */
    {"c", "static int clamp(int v, int lo, int hi) {\n  " CURSOR "\n}\n", "function_body",
     "if (v < lo) return lo;\n  return v > hi ? hi : v;\n}\n\nint other(void) { return 1; }\n",
     "if (v < lo) return lo;\n  return v > hi ? hi : v;", true},
    {"go", "package main\n\nfunc main() {\n\t" CURSOR "\n}\n", "function_body",
     "x := map[string]int{\"a\": 1}\n\t_ = x\n}\n", "x := map[string]int{\"a\": 1}\n\t_ = x", true},
    {"rust", "fn f(x: u8) -> u8 {\n    " CURSOR "\n}\n", "function_body",
     "let s = \"}\"; // a } in a string and a comment\n    x + 1\n}\nfn g() {}\n",
     "let s = \"}\"; // a } in a string and a comment\n    x + 1", true},
    {"python", "def parse(argv):\n    " CURSOR "\n", "function_body",
     "args = list(argv)\n    return args\n\ndef other():\n    pass\n",
     "args = list(argv)\n    return args", true},
    {"bash", "for f in \"$@\"; do\n  " CURSOR "\ndone\n", "block",
     "echo \"$f\"\n  wc -l \"$f\"\ndone\necho end\n", "echo \"$f\"\n  wc -l \"$f\"", true},
    /* a body that never closes its own bracket fails the check */
    {"java", "class A {\n  int f() {\n    " CURSOR "\n  }\n}\n", "function_body",
     "return compute(1,\n", "return compute(1,", false},
};

static void test_cut_and_check(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    const shape_case *c = &k_cases[i];
    const char *m = strstr(c->snippet, CURSOR);
    REQUIRE(m);
    size_t cursor = (size_t)(m - c->snippet), n = strlen(c->snippet) - 3;
    char *text = malloc(n + 1);
    REQUIRE(text);
    memcpy(text, c->snippet, cursor);
    strcpy(text + cursor, m + 3);
    sc_error err = {0};
    sc_syntax_tree *t = NULL;
    if (sc_syntax_tree_new(c->lang, text, n, &t, &err) != SC_OK) {
      EXPECTF(0, "case %zu: %s", i, err.msg);
      free(text);
      continue;
    }
    sc_completion_plan plan;
    EXPECT(sc_completion_plan_at(t, cursor, &plan, &err) == SC_OK);
    EXPECTF(strcmp(sc_completion_kind_name(plan.kind), c->kind) == 0,
            "case %zu (%s): planned %s, want %s", i, c->lang, sc_completion_kind_name(plan.kind),
            c->kind);
    size_t keep = sc_completion_cut(t, &plan, cursor, c->candidate, strlen(c->candidate));
    EXPECTF(keep == strlen(c->kept) && memcmp(c->candidate, c->kept, keep) == 0,
            "case %zu (%s): kept \"%.*s\", want \"%s\"", i, c->lang, (int)keep, c->candidate,
            c->kept);
    sc_completion_check chk;
    EXPECT(sc_completion_check_insert(t, cursor, c->candidate, keep, &chk, &err) == SC_OK);
    EXPECTF(chk.ok == c->ok, "case %zu (%s): check ok=%d (errors %zu -> %zu, %zu new), want %d",
            i, c->lang, chk.ok, chk.errors_before, chk.errors_after, chk.new_errors, c->ok);
    EXPECT(chk.ok == (chk.new_errors == 0) && chk.new_errors <= chk.errors_after);
    /* The check works on a copy: the document is unchanged. */
    size_t len_after = 0;
    EXPECT(strcmp(sc_syntax_tree_text(t, &len_after), text) == 0 && len_after == n);
    sc_syntax_tree_free(t);
    free(text);
  }
}

static void test_uncut_candidate_fails_check(void) {
  /* The whole raw candidate, not cut, duplicates the closing brace: the
   * reparse must see it, or the check proves nothing. */
  const char *doc = "static int f(int v) {\n  \n}\n";
  sc_syntax_tree *t = NULL;
  REQUIRE(sc_syntax_tree_new("c", doc, strlen(doc), &t, NULL) == SC_OK);
  const char *raw = "return v;\n}\n}\n";
  sc_completion_check chk;
  EXPECT(sc_completion_check_insert(t, 24, raw, strlen(raw), &chk, NULL) == SC_OK);
  EXPECT(!chk.ok && chk.errors_after > chk.errors_before && chk.new_errors > 0);
  /* An error elsewhere in the document, untouched by the insertion, is not
   * new: a good candidate still passes. */
  const char *doc2 = "int broken = ;\nstatic int f(int v) {\n  \n}\n";
  sc_syntax_tree *t2 = NULL;
  REQUIRE(sc_syntax_tree_new("c", doc2, strlen(doc2), &t2, NULL) == SC_OK);
  EXPECT(sc_syntax_tree_error_count(t2) > 0);
  EXPECT(sc_completion_check_insert(t2, 39, "return v;", 9, &chk, NULL) == SC_OK);
  EXPECTF(chk.ok && chk.errors_after == chk.errors_before && chk.errors_before > 0,
          "ok=%d %zu -> %zu", chk.ok, chk.errors_before, chk.errors_after);
  sc_syntax_tree_free(t2);
  EXPECT(sc_completion_check_insert(t, 99, raw, 1, &chk, NULL) == SC_ERR_INVALID);
  /* Nothing is kept when the plan says suggest nothing. */
  sc_completion_plan none = {.kind = SC_COMPLETION_NONE};
  EXPECT(sc_completion_cut(t, &none, 24, raw, strlen(raw)) == 0);
  sc_syntax_tree_free(t);
}

static void test_check_among_many_errors(void) {
  /* 3,000 broken statements before a function: every one of their errors
   * is the file's own (found in the old tree at its shifted place, the
   * errors sorted once and looked up), so a good candidate passes and a
   * bad one has exactly its own new error. */
  size_t n = 3000, len = 0;
  const char *bad = "int x = ;\n", *tail = "static int f(int v) {\n  \n}\n";
  char *doc = malloc(n * strlen(bad) + strlen(tail) + 1);
  REQUIRE(doc);
  for (size_t i = 0; i < n; i++, len += strlen(bad)) memcpy(doc + len, bad, strlen(bad));
  memcpy(doc + len, tail, strlen(tail) + 1);
  size_t cursor = len + strlen("static int f(int v) {\n  ");
  len += strlen(tail);
  sc_syntax_tree *t = NULL;
  REQUIRE(sc_syntax_tree_new("c", doc, len, &t, NULL) == SC_OK);
  EXPECT(sc_syntax_tree_error_count(t) >= n);
  sc_completion_check chk;
  EXPECT(sc_completion_check_insert(t, cursor, "return v;", 9, &chk, NULL) == SC_OK);
  EXPECTF(chk.ok && chk.new_errors == 0 && chk.errors_before >= n,
          "ok=%d new %zu (%zu -> %zu)", chk.ok, chk.new_errors, chk.errors_before,
          chk.errors_after);
  EXPECT(sc_completion_check_insert(t, cursor, "return = ;", 10, &chk, NULL) == SC_OK);
  EXPECTF(!chk.ok && chk.new_errors == 1, "ok=%d new %zu", chk.ok, chk.new_errors);
  sc_syntax_tree_free(t);
  free(doc);
}

int main(void) {
  RUN(test_cut_and_check);
  RUN(test_check_among_many_errors);
  RUN(test_uncut_candidate_fails_check);
  TEST_MAIN_END();
}

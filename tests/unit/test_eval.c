/* test_eval.c — sculpt eval's measures (eval/metrics.c) and line n-gram
 * (eval/ngram.c): exact match ignores each line's trailing blanks and the
 * trailing newlines and nothing else; character similarity is the indel
 * ratio (rapidfuzz's fuzz.ratio / 100, computed by hand below); McNemar's
 * exact p-values against the binomial sums; the n-gram takes the line the
 * prompt itself repeats after the previous line before the corpus's, the
 * corpus's before the language's most frequent line, chains k lines, and
 * reads a corpus manifest's train split only. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "eval.h"
#include "sc_test.h"
#include "sc_test_tmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmp[256];

#define S(x) x, strlen(x)

static void test_exact(void) {
  EXPECT(sc_eval_exact(S("  x = 1\n"), S("  x = 1")));
  EXPECT(sc_eval_exact(S("a  \nb\t\n\n"), S("a\nb")));
  EXPECT(sc_eval_exact(S(""), S("\n\n")));
  EXPECT(!sc_eval_exact(S("x = 1\n"), S("  x = 1\n")));   /* indentation counts */
  EXPECT(!sc_eval_exact(S("a\n\nb\n"), S("a\nb\n")));     /* an inner blank line counts */
  EXPECT(!sc_eval_exact(S("x=1"), S("x = 1")));
}

static void test_similarity(void) {
  EXPECT(sc_eval_similarity(S(""), S("")) == 1.0);
  EXPECT(sc_eval_similarity(S("abc"), S("")) == 0.0);
  EXPECT(sc_eval_similarity(S("return x\n"), S("return x")) == 1.0);
  /* LCS("kitten", "sitting") = "ittn", 4: 2 * 4 / 13. */
  double s = sc_eval_similarity(S("kitten"), S("sitting"));
  EXPECTF(fabs(s - 8.0 / 13.0) < 1e-12, "%g", s);
  /* LCS("abcd", "bdca") = 2 ("bd" or "bc"): 4 / 8. */
  s = sc_eval_similarity(S("abcd"), S("bdca"));
  EXPECTF(fabs(s - 0.5) < 1e-12, "%g", s);
}

static void test_mcnemar(void) {
  EXPECT(sc_eval_mcnemar_p(0, 0) == 1.0);
  /* 2 * P(X <= 0), X ~ B(6, 1/2) = 2 / 64. */
  double p = sc_eval_mcnemar_p(0, 6);
  EXPECTF(fabs(p - 2.0 / 64.0) < 1e-12, "%g", p);
  /* 2 * (1 + 10) / 1024, either way round. */
  p = sc_eval_mcnemar_p(9, 1);
  EXPECTF(fabs(p - 22.0 / 1024.0) < 1e-12, "%g", p);
  EXPECT(sc_eval_mcnemar_p(1, 9) == p);
  EXPECT(sc_eval_mcnemar_p(5, 5) == 1.0); /* capped */
  /* Large counts stay finite: 2 * P(X <= 400), X ~ B(1000, 1/2), ~1.6e-10. */
  p = sc_eval_mcnemar_p(400, 600);
  EXPECTF(p > 1e-11 && p < 1e-9, "%g", p);
}

static void test_ngram(void) {
  REQUIRE(sc_test_write_at(tmp, "a.py", "import os\nx = 1\ny = 2\nimport os\nx = 1\n"));
  REQUIRE(sc_test_write_at(tmp, "b.py", "import os\nx = 3\nz = 9\nz = 9\nz = 9\nz = 9\n"));
  REQUIRE(sc_test_write_at(tmp, "held.py", "import os\nnever = 0\n"));
  char manifest[600];
  snprintf(manifest, sizeof manifest,
           "{\"files\": [[\"%s/a.py\", \"h\", \"train\"], [\"%s/b.py\", \"h\", \"train\"], "
           "[\"%s/held.py\", \"h\", \"heldout\"], [\"%s/gone.py\", \"h\", \"train\"]]}",
           tmp, tmp, tmp, tmp);
  REQUIRE(sc_test_write_at(tmp, "manifest.json", manifest));
  char path[512];
  snprintf(path, sizeof path, "%s/manifest.json", tmp);
  sc_eval_ngram *g = NULL;
  size_t files = 0;
  sc_error err = {0};
  REQUIRE(sc_eval_ngram_train(path, NULL, &g, &files, NULL, &err) == SC_OK);
  EXPECTF(files == 2, "%zu files (the train split that exists)", files);
  size_t len = 0;
  /* The corpus: after "import os", "x = 1" (twice) beats "x = 3" and the
   * held-out "never = 0"; then "y = 2" follows "x = 1". */
  char *out = sc_eval_ngram_predict(g, "python", S("import os\n"), S(""), 2, &len);
  EXPECTF(out && strcmp(out, "x = 1\ny = 2\n") == 0, "%s", out);
  free(out);
  /* The prompt first: its own text follows "import os" with "x = 7". */
  const char *before = "import os\nx = 7\n\ndef f():\n    import os\n";
  out = sc_eval_ngram_predict(g, "python", S(before), S("\n"), 1, &len);
  EXPECTF(out && strcmp(out, "x = 7\n") == 0, "%s", out);
  free(out);
  /* ... and the suffix too, where it repeats more often. */
  out = sc_eval_ngram_predict(g, "python", S(before), S("import os\nw = 0\nimport os\nw = 0\n"), 1,
                              &len);
  EXPECTF(out && strcmp(out, "w = 0\n") == 0, "%s", out);
  free(out);
  /* A previous line nobody continues: the language's most frequent line. */
  out = sc_eval_ngram_predict(g, "python", S("unheard_of()\n"), S(""), 1, &len);
  EXPECTF(out && strcmp(out, "z = 9\n") == 0, "%s", out);
  free(out);
  /* A language the corpus lacks: an empty line each. */
  out = sc_eval_ngram_predict(g, "go", S("unheard_of()\n"), S(""), 2, &len);
  EXPECTF(out && strcmp(out, "\n\n") == 0, "%s", out);
  free(out);
  sc_eval_ngram_free(g);
  /* A missing corpus is an error, not an empty model. */
  snprintf(path, sizeof path, "%s/none.json", tmp);
  EXPECT(sc_eval_ngram_train(path, NULL, &g, &files, NULL, &err) == SC_ERR_IO && g == NULL);
}

/* The benchmark's own code never trains the n-gram: a corpus file sharing
 * 5 distinctive lines and 30% with a protected document is left out (a
 * manifest's paths may name the benchmark's package on this machine), one
 * sharing 4 is kept, and so is the same file when nothing is protected. */
static void test_ngram_protect(void) {
  const char *own = "def alpha_function(argument_one):\n"
                    "    first_result = compute_something(argument_one)\n"
                    "    second_result = transform_the_value(first_result)\n"
                    "    third_result = another_transformation(second_result)\n"
                    "    fourth_result = yet_another_step_here(third_result)\n"
                    "    return finish_with_result(fourth_result)\n";
  char dir[512];
  snprintf(dir, sizeof dir, "%s/p", tmp);
  REQUIRE(mkdir(dir, 0700) == 0);
  char copy[1024];
  snprintf(copy, sizeof copy, "# a vendored copy\n%s", own);
  REQUIRE(sc_test_write_at(tmp, "p/copy.py", copy));
  /* four of its distinctive lines, then lines of its own */
  REQUIRE(sc_test_write_at(tmp, "p/near.py",
                           "def alpha_function(argument_one):\n"
                           "    first_result = compute_something(argument_one)\n"
                           "    second_result = transform_the_value(first_result)\n"
                           "    third_result = another_transformation(second_result)\n"
                           "    different_line = nothing_like_the_protected_one(3)\n"));
  char manifest[600];
  snprintf(manifest, sizeof manifest,
           "{\"files\": [[\"%s/p/copy.py\", \"h\", \"train\"], "
           "[\"%s/p/near.py\", \"h\", \"train\"]]}",
           tmp, tmp);
  REQUIRE(sc_test_write_at(tmp, "p/manifest.json", manifest));
  char path[512];
  snprintf(path, sizeof path, "%s/p/manifest.json", tmp);
  sc_eval_protect *p = sc_eval_protect_new();
  REQUIRE(p && sc_eval_protect_add(p, own, strlen(own)));
  REQUIRE(sc_eval_protect_add(p, "", 0)); /* nothing distinctive: protects nothing */
  sc_eval_ngram *g = NULL;
  size_t files = 0, left_out = 0;
  sc_error err = {0};
  REQUIRE(sc_eval_ngram_train(path, p, &g, &files, &left_out, &err) == SC_OK);
  EXPECTF(files == 1 && left_out == 1, "%zu files, %zu left out", files, left_out);
  /* near.py continues the third line; copy.py's fourth line is not learnt */
  const char *before = "    third_result = another_transformation(second_result)\n";
  size_t len = 0;
  char *out = sc_eval_ngram_predict(g, "python", S(before), S(""), 1, &len);
  EXPECTF(out && strstr(out, "different_line"), "%s", out);
  free(out);
  sc_eval_ngram_free(g);
  /* unprotected, both files train */
  REQUIRE(sc_eval_ngram_train(path, NULL, &g, &files, &left_out, &err) == SC_OK);
  EXPECTF(files == 2 && left_out == 0, "%zu files, %zu left out", files, left_out);
  sc_eval_ngram_free(g);
  sc_eval_protect_free(p);
}

int main(void) {
  if (!sc_test_mkdtemp(tmp, sizeof tmp, "sculpt-test-eval")) return 1;
  RUN(test_exact);
  RUN(test_similarity);
  RUN(test_mcnemar);
  RUN(test_ngram);
  RUN(test_ngram_protect);
  sc_test_remove_tree(tmp);
  TEST_MAIN_END();
}

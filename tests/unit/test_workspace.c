/* test_workspace.c — the workspace index (context/workspace.c) and prompt
 * retrieval (context/retrieve.c): identifier sets and the MinHash estimate
 * against exact Jaccard, per-file updates and removals (with .gitignore for
 * new files), open documents and recent edits in the prompt, and updates
 * racing prompt builds on two threads (meant for the ASan build). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "context.h"
#include "sc_test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char root[256];
static sc_tokenizer *tok;

static void write_file(const char *rel, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  FILE *f = fopen(p, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* A deterministic generator, so that failures reproduce. */
static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void test_ident_set(void) {
  uint64_t a[16], b[16];
  size_t na = sc_ident_set("foo bar foo if 9x _a b", 22, a, 16);
  EXPECTF(na == 3, "foo, bar, _a (not the keyword, the number or the 1-letter b): %zu", na);
  for (size_t i = 1; i < na; i++) EXPECT(a[i - 1] < a[i]); /* sorted, unique */
  size_t nb = sc_ident_set("bar baz _a", 10, b, 16);
  EXPECT(nb == 3);
  /* {foo, bar, _a} and {bar, baz, _a}: 2 shared of 4. */
  float j = sc_ident_jaccard(a, na, b, nb);
  EXPECTF(j > 0.499f && j < 0.501f, "%f", (double)j);
  EXPECT(sc_ident_jaccard(a, na, a, na) == 1.0f);
  EXPECT(sc_ident_jaccard(a, 0, b, 0) == 0.0f);
}

/* Sets with a chosen overlap: the estimate tracks exact Jaccard within the
 * standard error sqrt(J(1-J)/K) the header documents. */
static void test_minhash_estimate(void) {
  enum { PAIRS = 300, N = 60 };
  double sum_err = 0, worst = 0;
  int beyond_3sigma = 0;
  for (int t = 0; t < PAIRS; t++) {
    uint64_t a[N], b[N];
    size_t shared = (size_t)(next_rand() % (N + 1));
    for (size_t i = 0; i < N; i++) {
      a[i] = next_rand();
      b[i] = i < shared ? a[i] : next_rand();
    }
    /* Sets are sorted for sc_ident_jaccard. */
    for (size_t i = 1; i < N; i++)
      for (size_t k = i; k > 0 && a[k - 1] > a[k]; k--) {
        uint64_t x = a[k];
        a[k] = a[k - 1];
        a[k - 1] = x;
      }
    for (size_t i = 1; i < N; i++)
      for (size_t k = i; k > 0 && b[k - 1] > b[k]; k--) {
        uint64_t x = b[k];
        b[k] = b[k - 1];
        b[k - 1] = x;
      }
    float exact = sc_ident_jaccard(a, N, b, N);
    EXPECT(exact > (float)shared / (2 * N - shared) - 1e-4f &&
           exact < (float)shared / (2 * N - shared) + 1e-4f);
    uint16_t sa[SC_MINHASH_K], sb[SC_MINHASH_K];
    sc_minhash_sketch(a, N, sa);
    sc_minhash_sketch(b, N, sb);
    double est = sc_minhash_estimate(sa, sb);
    double err = est > exact ? est - exact : exact - est;
    double sigma = sqrt(exact * (1 - exact) / SC_MINHASH_K);
    if (err > 3 * sigma + 1.0 / SC_MINHASH_K) beyond_3sigma++;
    sum_err += err;
    if (err > worst) worst = err;
    if (shared == N) EXPECT(est == 1.0);
  }
  double mean = sum_err / PAIRS;
  fprintf(stderr, "minhash K=%d: mean |est-exact| %.3f, worst %.3f, %d of %d beyond 3 sigma\n",
          SC_MINHASH_K, mean, worst, beyond_3sigma, PAIRS);
  EXPECTF(mean < 0.1, "mean error %.3f", mean);
  EXPECTF(beyond_3sigma <= PAIRS / 50, "%d beyond 3 sigma", beyond_3sigma);
}

static int git(const char *args) {
  char cmd[768];
  snprintf(cmd, sizeof cmd, "git -C '%s' %s >/dev/null 2>&1", root, args);
  return system(cmd);
}

static void test_update_remove(void) {
  write_file("a.py", "def alpha(x):\n    return x\n");
  write_file(".gitignore", "ign.py\n");
  sc_workspace *ws = NULL;
  sc_error err = {0};
  REQUIRE(sc_workspace_index(root, NULL, &ws, &err) == SC_OK);
  EXPECT(sc_workspace_count_definitions(ws, "alpha") == 1);
  EXPECT(sc_workspace_get_stats(ws).files == 1);
  EXPECT(sc_workspace_get_stats(ws).chunks >= 1);
  bool indexed = false;
  /* From a buffer: alpha goes, beta comes. */
  const char *buf = "def beta(y):\n    return y\n";
  EXPECT(sc_workspace_update_file(ws, "a.py", buf, strlen(buf), &indexed, &err) == SC_OK);
  EXPECT(indexed);
  EXPECT(sc_workspace_count_definitions(ws, "alpha") == 0);
  EXPECT(sc_workspace_count_definitions(ws, "beta") == 1);
  EXPECT(sc_workspace_get_stats(ws).files == 1);
  /* A new file from disk. */
  write_file("b.py", "def gamma():\n    pass\n\ndef beta():\n    pass\n");
  EXPECT(sc_workspace_update_file(ws, "b.py", NULL, 0, &indexed, &err) == SC_OK && indexed);
  EXPECT(sc_workspace_count_definitions(ws, "gamma") == 1);
  EXPECT(sc_workspace_count_definitions(ws, "beta") == 2);
  EXPECT(sc_workspace_get_stats(ws).files == 2);
  /* A new file git ignores is not indexed. */
  write_file("ign.py", "def delta():\n    pass\n");
  EXPECT(sc_workspace_update_file(ws, "ign.py", NULL, 0, &indexed, &err) == SC_OK && !indexed);
  EXPECT(sc_workspace_count_definitions(ws, "delta") == 0);
  /* Removal, and a file deleted from disk. */
  EXPECT(sc_workspace_remove_file(ws, "b.py"));
  EXPECT(!sc_workspace_remove_file(ws, "b.py"));
  EXPECT(sc_workspace_count_definitions(ws, "gamma") == 0);
  EXPECT(sc_workspace_count_definitions(ws, "beta") == 1);
  char p[512];
  snprintf(p, sizeof p, "%s/a.py", root);
  remove(p);
  EXPECT(sc_workspace_update_file(ws, "a.py", NULL, 0, &indexed, &err) == SC_OK && !indexed);
  EXPECT(sc_workspace_count_definitions(ws, "beta") == 0);
  EXPECT(sc_workspace_get_stats(ws).files == 0);
  /* Bad paths are refused, not crashed on. */
  EXPECT(sc_workspace_update_file(ws, "../x.py", NULL, 0, NULL, &err) == SC_ERR_INVALID);
  EXPECT(sc_workspace_update_file(ws, "/etc/passwd", NULL, 0, NULL, &err) == SC_ERR_INVALID);
  EXPECT(sc_workspace_update_file(ws, "sub/../../x.py", NULL, 0, NULL, &err) == SC_ERR_INVALID);
  EXPECT(sc_workspace_update_file(ws, "sub/..", NULL, 0, NULL, &err) == SC_ERR_INVALID);
  /* Two dots inside a name are just a name. */
  const char *dotted = "def dotted(x):\n    return x\n";
  EXPECT(sc_workspace_update_file(ws, "a..b.py", dotted, strlen(dotted), &indexed, &err) ==
             SC_OK &&
         indexed);
  EXPECT(sc_workspace_count_definitions(ws, "dotted") == 1);
  EXPECT(sc_workspace_remove_file(ws, "a..b.py"));
  /* The slot freed by removals is reused: a re-added file is found again. */
  write_file("a.py", "def alpha(x):\n    return x\n");
  EXPECT(sc_workspace_update_file(ws, "a.py", NULL, 0, &indexed, &err) == SC_OK && indexed);
  EXPECT(sc_workspace_count_definitions(ws, "alpha") == 1);
  sc_workspace_free(ws);
}

/* Editors report a folder deleted, moved or created as one event for the
 * folder: its files go, or come, with it. */
static void test_folders(void) {
  git("rm -rq --cached . ");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf ./* && mkdir -p pkg/sub pkg-other keep", root);
  REQUIRE(system(cmd) == 0);
  write_file(".gitignore", "ign.py\n");
  write_file("pkg/one.py", "def one_fn():\n    pass\n");
  write_file("pkg/sub/two.py", "def two_fn():\n    pass\n");
  write_file("pkgx.py", "def pkgx_fn():\n    pass\n");
  write_file("pkg-other/three.py", "def three_fn():\n    pass\n");
  sc_workspace *ws = NULL;
  sc_error err = {0};
  REQUIRE(sc_workspace_index(root, NULL, &ws, &err) == SC_OK);
  EXPECT(sc_workspace_get_stats(ws).files == 4);
  /* Deleted: pkg's files go; names that only share its prefix stay. */
  EXPECT(sc_workspace_remove_file(ws, "pkg"));
  EXPECT(sc_workspace_count_definitions(ws, "one_fn") == 0);
  EXPECT(sc_workspace_count_definitions(ws, "two_fn") == 0);
  EXPECT(sc_workspace_count_definitions(ws, "pkgx_fn") == 1);
  EXPECT(sc_workspace_count_definitions(ws, "three_fn") == 1);
  EXPECT(sc_workspace_get_stats(ws).files == 2);
  EXPECT(!sc_workspace_remove_file(ws, "pkg"));
  /* Moved in: the folder's files come, ignored ones do not. */
  snprintf(cmd, sizeof cmd, "cd '%s' && mv pkg moved", root);
  REQUIRE(system(cmd) == 0);
  write_file("moved/ign.py", "def ignored_fn():\n    pass\n");
  bool indexed = false;
  EXPECT(sc_workspace_update_file(ws, "moved", NULL, 0, &indexed, &err) == SC_OK && indexed);
  EXPECT(sc_workspace_count_definitions(ws, "one_fn") == 1);
  EXPECT(sc_workspace_count_definitions(ws, "two_fn") == 1);
  EXPECT(sc_workspace_count_definitions(ws, "ignored_fn") == 0);
  EXPECT(sc_workspace_get_stats(ws).files == 4);
  /* A second report of the same folder changes nothing. */
  EXPECT(sc_workspace_update_file(ws, "moved", NULL, 0, &indexed, &err) == SC_OK);
  EXPECT(sc_workspace_count_definitions(ws, "one_fn") == 1);
  EXPECT(sc_workspace_get_stats(ws).files == 4);
  /* An empty folder brings nothing; a trailing slash names the folder too. */
  EXPECT(sc_workspace_update_file(ws, "keep", NULL, 0, &indexed, &err) == SC_OK && !indexed);
  EXPECT(sc_workspace_remove_file(ws, "moved/"));
  EXPECT(sc_workspace_count_definitions(ws, "two_fn") == 0);
  EXPECT(sc_workspace_get_stats(ws).files == 2);
  sc_workspace_free(ws);
}

static const sc_context_snippet *find_reason(const sc_prompt *p, const char *reason) {
  for (size_t i = 0; i < p->n_snippets; i++)
    if (strcmp(p->snippets[i].reason, reason) == 0) return &p->snippets[i];
  return NULL;
}

static void test_open_docs_and_edits(void) {
  /* The cursor's lines use a set of names; another open document has a
   * chunk with most of them, far from the rest of its text. */
  const char *cur = "def report(orders):\n"
                    "    totals = summarize_orders(orders, currency_table)\n"
                    "    for region, amount in totals.items():\n"
                    "        emit_line(region, amount, currency_table)\n"
                    "    \n";
  char other[4096];
  int n = 0;
  for (int i = 0; i < 30; i++) n += snprintf(other + n, sizeof other - (size_t)n, "%d + %d\n", i, i);
  int chunk_line = 30;
  n += snprintf(other + n, sizeof other - (size_t)n,
                "def old_report(orders):\n"
                "    totals = summarize_orders(orders, currency_table)\n"
                "    for region, amount in totals.items():\n"
                "        emit_line(region, amount, currency_table)\n");
  for (int i = 0; i < 30; i++) n += snprintf(other + n, sizeof other - (size_t)n, "%d - %d\n", i, i);
  const char *edited = "line0\nline1\nline2\nline3\nedited_here = 1\nline5\nline6\nline7\nline8\n";
  sc_open_document docs[2] = {{"other.py", NULL, other, (size_t)n},
                              {"edited.py", "python", edited, strlen(edited)}};
  sc_edited_range edits[1] = {{"edited.py", 4, 4, 1.0}};
  sc_prompt_inputs in = {.docs = docs, .n_docs = 2, .edits = edits, .n_edits = 1};
  sc_prompt p;
  sc_error err = {0};
  size_t cursor = strlen(cur) - 1;
  REQUIRE(sc_prompt_build_with(NULL, "cur.py", "python", cur, strlen(cur), cursor, tok, 2048, &in,
                               &p, &err) == SC_OK);
  const sc_context_snippet *sim = find_reason(&p, "similar chunk");
  EXPECT(sim && strcmp(sim->path, "other.py") == 0);
  if (sim) {
    EXPECTF(sim->score >= 0.5f && sim->score <= 1.0f, "score %f", (double)sim->score);
    EXPECT(strstr(sim->text, "def old_report(orders):") != NULL);
    EXPECT((int)sim->start_line <= chunk_line && (int)sim->end_line >= chunk_line + 3);
  }
  const sc_context_snippet *ed = find_reason(&p, "recent edit");
  EXPECT(ed && strcmp(ed->path, "edited.py") == 0);
  if (ed) {
    EXPECT(strstr(ed->text, "edited_here = 1") != NULL);
    EXPECT(ed->start_line == 2 && ed->end_line == 6); /* two lines around it */
  }
  /* Order: the recent edit comes before the similar chunk. */
  EXPECT(ed && sim && ed < sim);
  sc_prompt_free(&p);
  /* Zeroed inputs: none of it. */
  sc_prompt_inputs zero = {0};
  REQUIRE(sc_prompt_build_with(NULL, "cur.py", "python", cur, strlen(cur), cursor, tok, 2048,
                               &zero, &p, &err) == SC_OK);
  EXPECT(!find_reason(&p, "similar chunk") && !find_reason(&p, "recent edit"));
  sc_prompt_free(&p);
}

typedef struct race {
  sc_workspace *ws;
  int rounds;
  int failures;
} race;

static void *updater(void *arg) {
  race *r = arg;
  char buf[256];
  for (int i = 0; i < r->rounds; i++) {
    int n = snprintf(buf, sizeof buf, "def helper_%d(v):\n    return v + %d\n\ndef shared():\n    pass\n", i % 3, i);
    if (sc_workspace_update_file(r->ws, "moving.py", buf, (size_t)n, NULL, NULL) != SC_OK)
      r->failures++;
    if (i % 7 == 0) sc_workspace_remove_file(r->ws, "moving.py");
  }
  return NULL;
}

static void test_concurrent_update_and_prompt(void) {
  write_file("moving.py", "def shared():\n    pass\n");
  write_file("user.py", "import moving\n\ndef use():\n    return shared() + helper_1(2)\n");
  sc_workspace *ws = NULL;
  sc_error err = {0};
  REQUIRE(sc_workspace_index(root, NULL, &ws, &err) == SC_OK);
  race r = {ws, 150, 0};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, updater, &r) == 0);
  const char *text = "import moving\n\ndef use():\n    return shared() + helper_1(2)\n";
  int built = 0;
  for (int i = 0; i < 150; i++) {
    sc_prompt p;
    if (sc_prompt_build(ws, "user.py", "python", text, strlen(text), strlen(text) - 2, tok, 512,
                        &p, &err) == SC_OK) {
      built++;
      for (size_t k = 0; k < p.n_snippets; k++) EXPECT(p.snippets[k].text && p.snippets[k].path);
      sc_prompt_free(&p);
    }
  }
  pthread_join(th, NULL);
  EXPECT(built == 150);
  EXPECT(r.failures == 0);
  sc_workspace_free(ws);
}

int main(void) {
  RUN(test_ident_set);
  RUN(test_minhash_estimate);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/../model/default", SC_TEST_DATA_DIR);
  sc_error err = {0};
  if (sc_tokenizer_load_dir(dir, &tok, &err) != SC_OK) {
    fprintf(stderr, "skip the prompt tests: no tokenizer in %s: %s\n", dir, err.msg);
    TEST_MAIN_END();
  }
  snprintf(root, sizeof root, "/tmp/sculpt-ws-test-XXXXXX");
  if (!mkdtemp(root) || git("init -q") != 0) {
    fprintf(stderr, "skip: no temporary git repository\n");
    sc_tokenizer_free(tok);
    return 77;
  }
  RUN(test_update_remove);
  RUN(test_folders);
  RUN(test_open_docs_and_edits);
  RUN(test_concurrent_update_and_prompt);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  sc_tokenizer_free(tok);
  TEST_MAIN_END();
}

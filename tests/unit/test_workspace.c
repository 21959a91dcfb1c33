/* test_workspace.c — the workspace index (context/workspace.c) and prompt
 * retrieval (context/retrieve.c): identifier sets and the MinHash estimate
 * against exact Jaccard, per-file updates and removals (with .gitignore for
 * new files), open documents and recent edits in the prompt, updates racing
 * prompt builds on two threads (meant for the ASan build); the index kept
 * on disk (warm start, validation by mtime, size and hash, a corrupt or
 * mutated file rejected without a crash, the cache folder's bounds); and
 * what retrieval finds: prototypes and fields through a receiver's type,
 * imports resolved by path (Python relative, TS ".js" naming ".ts", Go
 * module paths, C includes), a Go type's method set, the partial-index
 * flag. */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include "context.h"
#include "sc_test.h"
#include "sc_test_tmp.h"
#include "workspace_impl.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

static char root[256];
static sc_tokenizer *tok;

static void write_file(const char *rel, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  /* Make the parent folders. */
  for (char *q = p + strlen(root) + 1; (q = strchr(q, '/')); q++) {
    *q = '\0';
    mkdir(p, 0755);
    *q = '/';
  }
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


/* ---- the index kept on disk ----------------------------------------------------- */

static char cache_dir[256];

static sc_workspace *index_cached(void) {
  sc_workspace_options o = {0};
  o.cache_dir = cache_dir;
  sc_workspace *ws = NULL;
  sc_error err = {0};
  if (sc_workspace_index(root, &o, &ws, &err) != SC_OK) {
    fprintf(stderr, "index: %s\n", err.msg);
    return NULL;
  }
  return ws;
}

static char *read_bytes(const char *path, size_t *len) {
  bool big = false;
  return ws_read_all(path, 1u << 28, len, &big);
}

static void write_bytes(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (len) fwrite(data, 1, len, f);
  fclose(f);
}

static char *cache_file(sc_workspace *ws) { return ws_store_path(cache_dir, sc_workspace_root(ws)); }

static void test_persistent_index(void) {
  git("rm -rq --cached . ");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf ./*", root);
  REQUIRE(system(cmd) == 0);
  write_file("lib/geo.h", "int geo_area(int w, int h);\nstruct shape { int width; };\n");
  write_file("lib/geo.c", "#include \"geo.h\"\nint geo_area(int w, int h) { return w * h; }\n");
  write_file("app.py", "def main_entry():\n    return 1\n");
  char blob[600];
  snprintf(blob, sizeof blob, "%s/blob.py", root);
  write_bytes(blob, "x = 1\n\0\0\0binary\n", 16); /* NULs: binary, skipped (and remembered) */
  sc_workspace *ws = index_cached();
  REQUIRE(ws);
  sc_workspace_stats st = sc_workspace_get_stats(ws);
  size_t n_files = st.files; /* ours and what earlier tests left untracked */
  EXPECTF(n_files >= 3 && st.cached == 0 && st.skipped_binary == 1, "cold: %zu files, %zu cached",
          st.files, st.cached);
  char *path = cache_file(ws);
  REQUIRE(path);
  struct stat sb;
  EXPECT(stat(path, &sb) == 0 && sb.st_size > 0);
  sc_workspace_free(ws);

  /* Warm: every entry reused, the same definitions. */
  ws = index_cached();
  REQUIRE(ws);
  st = sc_workspace_get_stats(ws);
  EXPECTF(st.files == n_files && st.cached == n_files, "warm: %zu files, %zu cached", st.files,
          st.cached);
  EXPECT(sc_workspace_count_definitions(ws, "geo_area") == 2);
  EXPECT(sc_workspace_count_definitions(ws, "width") == 1);
  sc_workspace_free(ws);

  /* A changed file is parsed again; only it. */
  write_file("app.py", "def main_entry():\n    return 2\n\ndef added_later():\n    pass\n");
  ws = index_cached();
  REQUIRE(ws);
  st = sc_workspace_get_stats(ws);
  EXPECTF(st.cached == n_files - 1, "one file changed: %zu cached", st.cached);
  EXPECT(sc_workspace_count_definitions(ws, "added_later") == 1);
  sc_workspace_free(ws);

  /* Touched, same bytes: the mtime moved, the hash says it is the same. */
  char full[600];
  snprintf(full, sizeof full, "%s/lib/geo.h", root);
  struct timeval tv[2] = {{2000000000, 0}, {2000000000, 0}};
  EXPECT(utimes(full, tv) == 0);
  ws = index_cached();
  REQUIRE(ws);
  st = sc_workspace_get_stats(ws);
  EXPECTF(st.cached == n_files, "touched only: %zu cached", st.cached);
  sc_workspace_free(ws);
  /* Same size, other bytes, same mtime as before the write: the hash catches it
   * (the mtime is too close to the index's write to be trusted). */
  write_file("lib/geo.h", "int geo_aera(int w, int h);\nstruct shape { int width; };\n");
  EXPECT(utimes(full, tv) == 0);
  ws = index_cached();
  REQUIRE(ws);
  EXPECT(sc_workspace_count_definitions(ws, "geo_aera") == 1);
  sc_workspace_free(ws);

  /* Corrupt: one byte flipped, truncated, garbage. Each is rejected (one
   * log line), the index is built from scratch and written back. */
  size_t len = 0;
  char *good = read_bytes(path, &len);
  REQUIRE(good && len > 64);
  for (int kind = 0; kind < 4; kind++) {
    char *bad = malloc(len);
    REQUIRE(bad);
    memcpy(bad, good, len);
    size_t blen = len;
    if (kind == 0) bad[len / 2] ^= 0x40;
    else if (kind == 1) blen = len / 3;
    else if (kind == 2) for (size_t i = 0; i < len; i++) bad[i] = (char)next_rand();
    else blen = 0;
    write_bytes(path, bad, blen);
    free(bad);
    ws = index_cached();
    REQUIRE(ws);
    st = sc_workspace_get_stats(ws);
    EXPECTF(st.files == n_files && st.cached == 0, "corrupt (%d): %zu files, %zu cached", kind,
            st.files, st.cached);
    EXPECT(sc_workspace_count_definitions(ws, "geo_aera") == 1);
    sc_workspace_free(ws);
    ws = index_cached();
    REQUIRE(ws);
    EXPECTF(sc_workspace_get_stats(ws).cached == n_files, "rewritten after corrupt (%d)", kind);
    sc_workspace_free(ws);
  }
  /* Another root's file in this root's place is not used. */
  free(good);
  good = read_bytes(path, &len);
  ws_store *other = ws_store_load(path, "/some/other/root", NULL);
  EXPECT(other == NULL);
  ws_store_free(other);
  /* "" keeps nothing on disk. */
  sc_workspace_options none = {0};
  none.cache_dir = "";
  sc_error err = {0};
  REQUIRE(sc_workspace_index(root, &none, &ws, &err) == SC_OK);
  EXPECT(sc_workspace_get_stats(ws).cached == 0);
  EXPECT(sc_workspace_save(ws, &err) == SC_OK);
  sc_workspace_free(ws);
  free(good);
  free(path);
}

/* The on-disk index is untrusted input: mutated files (with the checksum
 * recomputed, so the parser itself is exercised) load or are refused, and
 * never crash or read out of bounds (run under ASan in CI). */
static void test_store_mutations(void) {
  sc_workspace *ws = index_cached();
  REQUIRE(ws);
  char *path = cache_file(ws);
  char real[600];
  snprintf(real, sizeof real, "%s", sc_workspace_root(ws));
  sc_workspace_free(ws);
  size_t len = 0;
  char *good = read_bytes(path, &len);
  REQUIRE(good && len > 64);
  char *bad = malloc(len + 64);
  REQUIRE(bad);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 400; round++) {
    memcpy(bad, good, len);
    size_t blen = len;
    int edits = 1 + (int)(next_rand() % 6);
    for (int e = 0; e < edits && blen > 32; e++) {
      size_t at = 8 + (size_t)(next_rand() % (blen - 16));
      switch (next_rand() % 4) {
      case 0: bad[at] ^= (char)(1u << (next_rand() % 8)); break;
      case 1: { uint32_t v = (uint32_t)next_rand(); memcpy(bad + at, &v, 4 <= blen - at ? 4 : 1); } break;
      case 2: { uint32_t v = 0xffffffffu; memcpy(bad + at, &v, 4 <= blen - at ? 4 : 1); } break;
      default: blen = at + 8; break;
      }
    }
    /* A valid checksum over the mutated bytes. */
    uint64_t sum = sc_hash64(bad, blen - 8, 0);
    memcpy(bad + blen - 8, &sum, 8);
    write_bytes(path, bad, blen);
    sc_error e = {0};
    ws_store *s = ws_store_load(path, real, &e);
    if (!s) {
      refused++;
      continue;
    }
    accepted++;
    /* Whatever loaded is usable: take each entry and read its strings. */
    ws_store_free(s);
  }
  fprintf(stderr, "store mutations: %d accepted, %d refused\n", accepted, refused);
  EXPECT(refused > 100);
  free(bad);
  free(good);
  free(path);
}

/* The folder keeps at most 64 index files, the least recently used going
 * first, and no temporary files. */
static void test_store_bounds(void) {
  for (int i = 0; i < 70; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%016x-old.idx", cache_dir, i);
    write_bytes(p, "x", 1);
    struct timeval tv[2] = {{1000000 + i, 0}, {1000000 + i, 0}};
    utimes(p, tv);
  }
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s/stale.idx.tmp.1", cache_dir);
  write_bytes(tmp, "x", 1);
  struct timeval old[2] = {{1000, 0}, {1000, 0}};
  utimes(tmp, old);
  write_file("app.py", "def main_entry():\n    return 3\n"); /* so the index is written */
  sc_workspace *ws = index_cached();
  REQUIRE(ws);
  char *mine = cache_file(ws);
  sc_workspace_free(ws);
  int n = 0, tmps = 0;
  bool have_mine = false;
  DIR *d = opendir(cache_dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (strstr(de->d_name, ".idx.tmp.")) tmps++;
    else if (strstr(de->d_name, ".idx")) n++;
    if (mine && strstr(mine, de->d_name) && de->d_name[0] != '.') have_mine = true;
  }
  if (d) closedir(d);
  EXPECTF(n <= 64 && have_mine && tmps == 0, "%d index files, ours %d, %d temporary", n,
          have_mine, tmps);
  free(mine);
}

/* ---- what retrieval finds ------------------------------------------------------- */

static const sc_context_snippet *snippet_named(const sc_prompt *p, const char *name) {
  for (size_t i = 0; i < p->n_snippets; i++)
    if (strcmp(p->snippets[i].name, name) == 0) return &p->snippets[i];
  return NULL;
}

static bool any_snippet_has(const sc_prompt *p, const char *path, const char *text) {
  for (size_t i = 0; i < p->n_snippets; i++)
    if (strcmp(p->snippets[i].path, path) == 0 && strstr(p->snippets[i].text, text)) return true;
  return false;
}

/* Builds the prompt at the first "@" in text (removed), as path. */
static bool prompt_at(sc_workspace *ws, const char *path, const char *marked, size_t budget,
                      const sc_prompt_inputs *in, sc_prompt *p) {
  char *text = strdup(marked);
  char *at = strchr(text, '@');
  if (!at) {
    free(text);
    return false;
  }
  size_t cursor = (size_t)(at - text);
  memmove(at, at + 1, strlen(at + 1) + 1);
  sc_error err = {0};
  sc_status st = sc_prompt_build_with(ws, path, sc_context_language_for(NULL, path), text,
                                      strlen(text), cursor, tok, budget, in, p, &err);
  if (st != SC_OK) fprintf(stderr, "prompt: %s\n", err.msg);
  free(text);
  return st == SC_OK;
}

static void test_retrieval_finds(void) {
  git("rm -rq --cached . ");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf ./*", root);
  REQUIRE(system(cmd) == 0);
  /* C: a prototype in the header, the body in the .c file; a struct. */
  write_file("src/geo.h", "struct locfile {\n  int refct;\n  const char *data;\n};\n"
                          "int locfile_count(struct locfile *l);\n"
                          "#define GEO_MAX 32\n#define GEO_MIN 1\n");
  char body[4096] = "#include \"geo.h\"\nint locfile_count(struct locfile *l) {\n";
  for (int i = 0; i < 60; i++) strcat(body, "  l->refct += 1;\n");
  strcat(body, "  return l->refct;\n}\n");
  write_file("src/geo.c", body);
  /* Python: the same name in the package and in an example of the same
   * module name; the relative import means the package's. */
  write_file("pkg/__init__.py", "");
  write_file("pkg/termui.py", "def echo_x(message):\n    return message\n");
  write_file("examples/termui/termui.py", "def echo_x(other):\n    return other\n");
  write_file("pkg/sub/__init__.py", "");
  write_file("pkg/sub/decoy.py", "def echo_x(decoy):\n    return decoy\n");
  write_file("pkg/ctx.py", "class Context:\n    obj: object\n\n    def abort(self) -> None:\n"
                           "        pass\n\n    def invoke(self, cb):\n        return cb()\n\n"
                           "def get_ctx() -> Context:\n    return Context()\n");
  /* TypeScript: "./util.js" names util.ts. */
  write_file("web/util.ts", "export function fmtPrice(cents: number): string {\n  return '';\n}\n");
  write_file("web/other/util.ts", "export function fmtPrice(x: string): string {\n  return x;\n}\n");
  /* Go: a module, a package imported by path, a method set across files. */
  write_file("go.mod", "module example.com/m\n\ngo 1.21\n");
  write_file("lib/lib.go", "package lib\n\nfunc Helper() int { return 1 }\n");
  write_file("other/lib.go", "package other\n\nfunc Helper() int { return 2 }\n");
  write_file("srv/server.go", "package srv\n\ntype Server struct {\n\taddr string\n}\n");
  write_file("srv/start.go", "package srv\n\nfunc (s *Server) Start() error { return nil }\n"
                             "func (s *Server) Stop() error { return nil }\n"
                             "func NewServer() (*Server, error) { return &Server{}, nil }\n");
  sc_workspace *ws = NULL;
  sc_error err = {0};
  sc_workspace_options o = {0};
  o.cache_dir = "";
  REQUIRE(sc_workspace_index(root, &o, &ws, &err) == SC_OK);
  sc_prompt p;

  /* The member at l-> with the rest of the line not typed: the struct's fields. */
  REQUIRE(prompt_at(ws, "src/use.c", "#include \"geo.h\"\nint f(struct locfile *l) {\n  return l->@\n}\n",
                    1024, NULL, &p));
  EXPECTF(any_snippet_has(&p, "src/geo.h", "int refct;"), "l->: the fields of struct locfile");
  sc_prompt_free(&p);
  /* A call: the prototype from the header (compact), not the 60-line body. */
  REQUIRE(prompt_at(ws, "src/use.c", "#include \"geo.h\"\nint f(struct locfile *l) {\n  return @locfile_count(l);\n}\n",
                    256, NULL, &p));
  const sc_context_snippet *s = snippet_named(&p, "locfile_count");
  EXPECTF(s && strcmp(s->path, "src/geo.h") == 0 && !s->body && strcmp(s->kind, "function") == 0 &&
              strstr(s->text, "int locfile_count(struct locfile *l);"),
          "the prototype: %s", s ? s->text : "(none)");
  EXPECT(s && strcmp(s->reason, "imported file") == 0);
  sc_prompt_free(&p);
  /* An object-like macro comes with its neighbours. */
  REQUIRE(prompt_at(ws, "src/use.c", "#include \"geo.h\"\nint g(void) { return @GEO_MAX; }\n", 1024,
                    NULL, &p));
  EXPECT(any_snippet_has(&p, "src/geo.h", "#define GEO_MAX 32") &&
         any_snippet_has(&p, "src/geo.h", "#define GEO_MIN 1"));
  sc_prompt_free(&p);

  /* Python: the relative import's module, not examples/termui. */
  REQUIRE(prompt_at(ws, "pkg/cli.py", "from .termui import echo_x\n\ndef main():\n    return @echo_x(1)\n",
                    1024, NULL, &p));
  s = snippet_named(&p, "echo_x");
  EXPECTF(s && strcmp(s->path, "pkg/termui.py") == 0, "from .termui: %s", s ? s->path : "(none)");
  sc_prompt_free(&p);
  /* "from .. import termui": the parent package's module, as a receiver (not
   * the same name in the file's own folder). */
  REQUIRE(prompt_at(ws, "pkg/sub/cli.py", "from .. import termui\n\ndef main():\n    return termui.@echo_x(1)\n",
                    1024, NULL, &p));
  s = snippet_named(&p, "echo_x");
  EXPECTF(s && strcmp(s->path, "pkg/termui.py") == 0, "from . import termui: %s",
          s ? s->path : "(none)");
  sc_prompt_free(&p);
  /* The type of ctx from the function that returns it: its members. */
  REQUIRE(prompt_at(ws, "pkg/cli.py", "from .ctx import get_ctx\n\ndef run():\n    ctx = get_ctx()\n    ctx.@\n",
                    1024, NULL, &p));
  EXPECTF(any_snippet_has(&p, "pkg/ctx.py", "def abort(self) -> None:"),
          "ctx = get_ctx() -> Context: its methods");
  sc_prompt_free(&p);

  /* TypeScript: "./util.js" is web/util.ts, not web/other/util.ts. */
  REQUIRE(prompt_at(ws, "web/app.ts", "import {fmtPrice} from './util.js';\nconst s = @fmtPrice(3);\n",
                    1024, NULL, &p));
  s = snippet_named(&p, "fmtPrice");
  EXPECTF(s && strcmp(s->path, "web/util.ts") == 0, ".js names .ts: %s", s ? s->path : "(none)");
  sc_prompt_free(&p);

  /* Go: the import path inside the module. */
  REQUIRE(prompt_at(ws, "main.go", "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() {\n\t_ = lib.@Helper()\n}\n",
                    1024, NULL, &p));
  s = snippet_named(&p, "Helper");
  EXPECTF(s && strcmp(s->path, "lib/lib.go") == 0, "Go import path: %s", s ? s->path : "(none)");
  sc_prompt_free(&p);
  /* A Go type with its method set from the package's other files. */
  REQUIRE(prompt_at(ws, "srv/main.go", "package srv\n\nfunc run() {\n\ts := &Server{}\n\ts.@\n}\n",
                    1024, NULL, &p));
  s = snippet_named(&p, "Server");
  EXPECTF(s && strstr(s->text, "type Server struct {") && strstr(s->text, "addr string") &&
              strstr(s->text, "func (s *Server) Start() error"),
          "type and method set: %s", s ? s->text : "(none)");
  sc_prompt_free(&p);

  /* x, err := f(): x has f's first result type. */
  REQUIRE(prompt_at(ws, "srv/main.go", "package srv\n\nfunc run() {\n\tsv, err := NewServer()\n\t_ = err\n\tsv.@\n}\n",
                    1024, NULL, &p));
  s = snippet_named(&p, "Server");
  EXPECTF(s && strstr(s->text, "func (s *Server) Stop() error"), "sv, err := NewServer(): %s",
          s ? s->text : "(none)");
  sc_prompt_free(&p);

  /* The caller's tree gives the same prompt as a parse here. */
  const char *src = "#include \"geo.h\"\nint f(struct locfile *l) {\n  return locfile_count(l);\n}\n";
  sc_syntax_tree *tree = NULL;
  REQUIRE(sc_syntax_tree_new("c", src, strlen(src), &tree, &err) == SC_OK);
  sc_prompt a, b;
  sc_prompt_inputs with_tree = {.tree = tree};
  size_t cur = (size_t)(strstr(src, "locfile_count(l)") - src);
  REQUIRE(sc_prompt_build_with(ws, "src/use.c", "c", src, strlen(src), cur, tok, 512, NULL, &a,
                               &err) == SC_OK);
  REQUIRE(sc_prompt_build_with(ws, "src/use.c", "c", src, strlen(src), cur, tok, 512, &with_tree,
                               &b, &err) == SC_OK);
  EXPECT(a.n_snippets == b.n_snippets && a.n_snippets > 0);
  for (size_t i = 0; i < a.n_snippets && i < b.n_snippets; i++)
    EXPECT(strcmp(a.snippets[i].text, b.snippets[i].text) == 0);
  EXPECT(!a.partial_index);
  sc_prompt_free(&a);
  sc_prompt_free(&b);
  /* The caller says the index is still being built: the prompt says so. */
  sc_prompt_inputs pending = {.index_pending = true};
  REQUIRE(sc_prompt_build_with(NULL, "src/use.c", "c", src, strlen(src), cur, tok, 512, &pending,
                               &a, &err) == SC_OK);
  EXPECT(a.partial_index);
  sc_prompt_free(&a);
  sc_syntax_tree_free(tree);
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
  if (!sc_test_mkdtemp(root, sizeof root, "sculpt-ws-test") || git("init -q") != 0) {
    fprintf(stderr, "skip: no temporary git repository\n");
    sc_tokenizer_free(tok);
    return 77;
  }
  /* The index kept between runs goes to a folder of this test's own. */
  if (!sc_test_mkdtemp(cache_dir, sizeof cache_dir, "sculpt-ws-cache")) {
    fprintf(stderr, "skip: no temporary folder\n");
    return 77;
  }
  setenv("XDG_CACHE_HOME", cache_dir, 1);
  RUN(test_update_remove);
  RUN(test_folders);
  RUN(test_open_docs_and_edits);
  RUN(test_concurrent_update_and_prompt);
  RUN(test_persistent_index);
  RUN(test_store_mutations);
  RUN(test_store_bounds);
  RUN(test_retrieval_finds);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", root, cache_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  sc_tokenizer_free(tok);
  TEST_MAIN_END();
}

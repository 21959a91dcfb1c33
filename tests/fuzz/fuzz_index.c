/* fuzz_index.c — the workspace index kept on disk (context/index_store.c)
 * under fuzzing, and everything that then reads what it loaded: each
 * start of sculpt in a repository reads this file back, so a truncated
 * write, a disk error, another version's file or anyone who can write the
 * cache folder must meet a clear rejection or a correct index, never a
 * crash or a read out of bounds.
 *
 * The file's checksum would reject nearly every mutation before the
 * parser saw it, so the input is the file's body (what follows the root
 * in the header, before the checksum): the harness writes the header for
 * its own work tree and the current schema, then the input, then the
 * checksum of it all, and indexes the tree from it. The tree's files keep
 * an old mtime, so an entry whose path, mtime and size still match is
 * taken as it is (its definitions, chunks, line table) and then used: a
 * definition count, prompts with snippets at several cursors, drafts from
 * the line table, a file updated and one removed.
 *
 * SC_FUZZ_INDEX_SEED=FILE writes the body of a good index of the tree to
 * FILE and exits (how tests/fuzz/index_corpus was made). */
#define _GNU_SOURCE
#include "context.h"
#include "sculpt.h"
#include "fuzz_tmp.h"
#include "workspace_impl.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The work tree: a few files in three languages, with definitions,
 * imports, repeated lines (the line table) and a subfolder. */
static const struct {
  const char *path, *text;
} k_files[] = {
    {"app.py", "import util\nfrom lib import shapes\n\n\ndef area(w, h):\n    return w * h\n\n\n"
               "class Box:\n    def __init__(self, w, h):\n        self.w = w\n        self.h = h\n\n"
               "    def size(self):\n        return area(self.w, self.h)\n"},
    {"util.py", "import os\n\nLIMIT = 10\n\n\ndef join(a, b):\n    return os.path.join(a, b)\n\n\n"
                "def split(p):\n    return os.path.split(p)\n"},
    {"lib/shapes.c", "#include <stdio.h>\n\nstruct point { int x, y; };\n\n"
                     "static int dot(struct point a, struct point b) {\n  return a.x * b.x + a.y * b.y;\n}\n\n"
                     "int norm(struct point a) {\n  return dot(a, a);\n}\n"},
    {"lib/main.go", "package main\n\nimport \"fmt\"\n\ntype Shape interface {\n\tArea() float64\n}\n\n"
                    "func main() {\n\tfmt.Println(\"hi\")\n\tfmt.Println(\"hi\")\n}\n"},
};
#define N_FILES (sizeof k_files / sizeof k_files[0])

static char g_root[1024], g_cache[1100], *g_store;
static sc_tokenizer *g_tok;
static unsigned char *g_head; /* the header up to and with the root */
static size_t g_head_len;

static bool write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = b ? (size_t)n : 0;
  return b;
}

static sc_workspace *index_tree(void) {
  sc_workspace_options o = {.cache_dir = g_cache};
  sc_workspace *ws = NULL;
  if (sc_workspace_index(g_root, &o, &ws, NULL) != SC_OK) return NULL;
  return ws;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  sc_log_set_stderr_level(SC_LOG_ERROR);
  if (sc_tokenizer_load_dir(SC_FUZZ_MODEL_DIR, &g_tok, NULL) != SC_OK) return 1;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_root, sizeof g_root, "%s/sculpt-fuzz-index-XXXXXX",
           tmp && *tmp && strlen(tmp) < 900 ? tmp : "/tmp");
  if (!mkdtemp(g_root)) return 1;
  fuzz_tmp_remove_at_exit(g_root);
  char p[2048];
  static const char *const dirs[] = {".git", ".git/objects", ".git/refs", "lib"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", g_root, dirs[i]);
    mkdir(p, 0700);
  }
  snprintf(p, sizeof p, "%s/.git/HEAD", g_root);
  write_file(p, "ref: refs/heads/main\n", 21);
  /* An mtime well before the index's write: entries are taken unhashed. */
  struct timespec old[2] = {{1577836800, 0}, {1577836800, 0}};
  for (size_t i = 0; i < N_FILES; i++) {
    snprintf(p, sizeof p, "%s/%s", g_root, k_files[i].path);
    write_file(p, k_files[i].text, strlen(k_files[i].text));
    utimensat(AT_FDCWD, p, old, 0);
  }
  /* The root as the workspace spells it, and the header for it: index the
   * tree once and keep what precedes the file count. */
  char *resolved = realpath(g_root, NULL);
  if (!resolved) return 1;
  snprintf(g_root, sizeof g_root, "%s", resolved);
  free(resolved);
  snprintf(g_cache, sizeof g_cache, "%s/.cache", g_root);
  sc_workspace *ws = index_tree();
  if (!ws) return 1;
  sc_workspace_free(ws);
  g_store = ws_store_path(g_cache, g_root);
  size_t len = 0;
  unsigned char *good = g_store ? read_file(g_store, &len) : NULL;
  size_t rl = strlen(g_root);
  g_head_len = 8 + 4 + 4 + 8 + 8 + 4 + rl;
  if (!good || len < g_head_len + 8) {
    fprintf(stderr, "fuzz_index: no index was written under %s\n", g_cache);
    return 1;
  }
  g_head = malloc(g_head_len);
  memcpy(g_head, good, g_head_len);
  const char *seed = getenv("SC_FUZZ_INDEX_SEED");
  if (seed) {
    bool ok = write_file(seed, good + g_head_len, len - g_head_len - 8);
    fprintf(stderr, "fuzz_index: %s %s (%zu bytes)\n", ok ? "wrote" : "cannot write", seed,
            len - g_head_len - 8);
    exit(ok ? 0 : 1);
  }
  free(good);
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (!g_head) return 0;
  /* The header (its write time now), the body, the checksum. */
  size_t n = g_head_len + size;
  unsigned char *f = malloc(n + 8);
  if (!f) return 0;
  memcpy(f, g_head, g_head_len);
  int64_t now = (int64_t)time(NULL) * 1000000000LL;
  memcpy(f + 24, &now, 8);
  if (size) memcpy(f + g_head_len, data, size);
  uint64_t sum = sc_hash64(f, n, 0);
  memcpy(f + n, &sum, 8);
  bool ok = write_file(g_store, f, n + 8);
  free(f);
  if (!ok) return 0;
  sc_workspace *ws = index_tree();
  if (!ws) return 0;
  /* What the index holds, used as a completion uses it. */
  sc_workspace_stats st = sc_workspace_get_stats(ws);
  if (st.files > N_FILES) __builtin_trap(); /* an entry for a file the tree lacks */
  sc_workspace_count_definitions(ws, "area");
  sc_workspace_count_definitions(ws, size ? (const char *)"norm" : "join");
  const char *app = k_files[0].text;
  size_t app_len = strlen(app);
  for (size_t c = 0; c < 3; c++) {
    size_t cursor = (size_t)(size ? data[c % size] : 0) * app_len / 255;
    sc_prompt pr;
    if (sc_prompt_build(ws, k_files[0].path, "python", app, app_len, cursor, g_tok, 256, &pr,
                        NULL) == SC_OK) {
      for (size_t i = 0; i < pr.n_snippets; i++)
        if (!pr.snippets[i].text || !pr.snippets[i].path) __builtin_trap();
      sc_prompt_free(&pr);
    }
    sc_draft_query q = {.before = app, .before_len = cursor, .after = app + cursor,
                        .after_len = app_len - cursor, .ws = ws, .single_line = c == 1};
    sc_drafts d;
    sc_drafts_find(&q, &d);
    for (size_t i = 0; i < d.n; i++)
      if (!d.d[i].text || d.d[i].len == 0 || d.d[i].len > 240) __builtin_trap();
    sc_drafts_free(&d);
  }
  sc_workspace_update_file(ws, "util.py", "def join(a):\n    return a\n", 26, NULL, NULL);
  sc_workspace_remove_file(ws, "lib");
  sc_workspace_free(ws);
  return 0;
}

/* test_git_listing.c — the workspace's file list (context/git.c, libgit2)
 * is the set `git ls-files --cached --others --exclude-standard` prints,
 * on copies of the vendored real repositories (tests/data/real) with a
 * mix of tracked, untracked and ignored files and the awkward cases
 * (an ignored folder holding a tracked file, negated rules,
 * .git/info/exclude, core.excludesFile, a tracked file deleted from disk,
 * a nested repository, a submodule-like gitlink, odd names, a symlink, an
 * empty folder, a merge conflict); from the top, from a folder inside the
 * work tree, and for one folder (a folder that appeared). The ignore check
 * for new files agrees with `git check-ignore`. A FIFO in a tracked file's
 * place does not hang the indexing.
 *
 * The git commands here are the test's own, on repositories it made
 * without any command-running configuration: running git is safe here. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "context.h"
#include "git_impl.h"
#include "sc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[256];

static int sh(const char *fmt, const char *arg) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, arg, arg, arg, arg);
  return system(cmd);
}

static void write_file(const char *rel, const char *text) { sc_test_write_at(top, rel, text); }

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and drops repeats (git prints a conflicted path once per stage). */
static void sort_unique(ws_names *n) {
  if (!n->n) return;
  qsort(n->v, n->n, sizeof *n->v, cmp_str);
  size_t k = 1;
  for (size_t i = 1; i < n->n; i++) {
    if (strcmp(n->v[i], n->v[k - 1]) == 0) free(n->v[i]);
    else n->v[k++] = n->v[i];
  }
  n->n = k;
}

/* What git itself lists in dir (optionally for one folder), NUL-separated. */
static bool git_ls_files(const char *dir, const char *folder, ws_names *out) {
  memset(out, 0, sizeof *out);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "git -C '%s' ls-files -z --cached --others --exclude-standard%s%s%s", dir,
           folder ? " -- '" : "", folder ? folder : "", folder ? "'" : "");
  FILE *p = popen(cmd, "r");
  if (!p) return false;
  char name[4096];
  size_t nl = 0;
  int ch;
  while ((ch = fgetc(p)) != EOF) {
    if (ch) {
      if (nl + 1 < sizeof name) name[nl++] = (char)ch;
      continue;
    }
    name[nl] = '\0';
    nl = 0;
    char **v = realloc(out->v, (out->n + 1) * sizeof *v);
    if (!v) break;
    out->v = v;
    out->v[out->n++] = strdup(name);
  }
  return pclose(p) == 0;
}

/* Compares the two lists of dir (a folder's when folder != NULL). */
static void compare(const char *dir, const char *folder, size_t at_least) {
  ws_names want, got;
  sc_error err = {0};
  REQUIRE(git_ls_files(dir, folder, &want));
  sc_status st = ws_git_list(dir, folder, &got, &err);
  EXPECTF(st == SC_OK, "%s", err.msg);
  if (st != SC_OK) {
    ws_names_free(&want);
    return;
  }
  sort_unique(&want);
  sort_unique(&got);
  EXPECTF(want.n >= at_least, "%s: git lists only %zu", dir, want.n);
  size_t i = 0, j = 0, missing = 0, extra = 0;
  while (i < want.n || j < got.n) {
    int c = i == want.n ? 1 : j == got.n ? -1 : strcmp(want.v[i], got.v[j]);
    if (c < 0) {
      if (missing++ < 10) fprintf(stderr, "  missing (git lists it): %s\n", want.v[i]);
      i++;
    } else if (c > 0) {
      if (extra++ < 10) fprintf(stderr, "  extra (git does not list it): %s\n", got.v[j]);
      j++;
    } else {
      i++, j++;
    }
  }
  EXPECTF(missing == 0 && extra == 0, "%s%s%s: %zu missing, %zu extra of %zu", dir,
          folder ? " -- " : "", folder ? folder : "", missing, extra, want.n);
  fprintf(stderr, "%s%s%s: %zu files, as git lists them\n", dir, folder ? " -- " : "",
          folder ? folder : "", got.n);
  ws_names_free(&want);
  ws_names_free(&got);
}

static bool git_check_ignore(const char *rel) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "git -C '%s' check-ignore -q -- '%s'", top, rel);
  return system(cmd) == 0;
}

static void test_real_repositories(void) {
  /* Half the files tracked, the rest untracked, plus ignore rules of every
   * source. */
  REQUIRE(sh("cd '%s' && git init -q && git config user.email t@t && git config user.name t && "
             "git add jq cobra click/src && git commit -qm base",
             top) == 0);
  REQUIRE(sh("mkdir -p '%s/build/out' '%s/empty' '%s/ky/node_modules/x' '%s/odd'", top) == 0);
  write_file(".gitignore", "build/\n*.md\n!ky/readme.md\nnode_modules\n/cobra/doc/*.go\n"
                           "!/cobra/doc/man_docs.go\n");
  write_file("build/out/gen.py", "x = 1\n");
  write_file("ky/readme.md", "# kept by a negated rule\n");
  write_file("ky/notes.md", "# ignored\n");
  write_file("ky/node_modules/x/index.js", "module.exports = 1;\n");
  write_file("odd/with space.py", "a = 1\n");
  write_file("odd/ünïcode.py", "b = 2\n");
  write_file("odd/glob[1]*.py", "c = 3\n");
  REQUIRE(sh("cd '%s' && printf 'click/examples/*/README\\n' >> .git/info/exclude && "
             "printf '*.tmp\\n' > '%s/../git_listing_excludes' && "
             "git config core.excludesFile \"$(cd .. && pwd)/git_listing_excludes\" && "
             "echo t > scratch.tmp && "
             /* tracked though a rule ignores it, and tracked but deleted */
             "git add -f build/out/gen.py && git rm -q --cached jq/AUTHORS && "
             "rm jq/COPYING && "
             /* a nested repository and a gitlink (a submodule without .gitmodules) */
             "mkdir -p nested && git -C nested init -q && echo n > nested/n.py && "
             "git update-index --add --cacheinfo 160000,"
             "1111111111111111111111111111111111111111,vendored && "
             "ln -s ../jq/src jqsrc",
             top) == 0);
  compare(top, NULL, 100);
  /* From a folder inside the work tree, and for one folder. */
  char sub[512];
  snprintf(sub, sizeof sub, "%s/cobra", top);
  compare(sub, NULL, 10);
  compare(top, "click", 10);
  compare(top, "ky/", 3);
  compare(sub, "doc", 1);
  /* New files: the ignore check agrees with git check-ignore. */
  const char *probes[] = {"build/out/new.py", "ky/other.md", "ky/readme.md", "scratch.tmp",
                          "cobra/doc/new.go", "cobra/doc/man_docs.go", "build/out/gen.py",
                          "odd/with space.py", "click/examples/x/README", "fresh.py"};
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
    bool g = git_check_ignore(probes[i]), w = ws_git_ignores(top, probes[i]);
    EXPECTF(g == w, "%s: git check-ignore %d, ours %d", probes[i], g, w);
  }
  /* A conflicted path (three stages in the index) is listed once. */
  REQUIRE(sh("cd '%s' && git add odd && git commit -qm all && "
             "git checkout -qb side && echo 'side = 1' > odd/c.py && git add odd/c.py && "
             "git commit -qm side && git checkout -q - && echo 'main = 1' > odd/c.py && "
             "git add odd/c.py && git commit -qm main && "
             "(git merge -q side >/dev/null 2>&1 || true)",
             top) == 0);
  compare(top, NULL, 100);
}

/* A FIFO in a tracked file's place (or a symlink to one) is skipped, not
 * opened: opening a FIFO with no writer blocks, and indexing would hang.
 * alarm() turns a hang into a failure. */
static void test_fifo_in_place(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/../fifo_repo", top);
  REQUIRE(sh("mkdir -p '%s' && cd '%s' && git init -q && "
             "printf 'def kept_fn():\\n    return 1\\n' > a.py && "
             "echo 'x = 1' > b.py && echo 'y = 2' > c.py && git add . && "
             "rm b.py c.py && mkfifo b.py && mkfifo .f && ln -s .f c.py",
             dir) == 0);
  alarm(60);
  sc_workspace *ws = NULL;
  sc_error err = {0};
  EXPECTF(sc_workspace_index(dir, NULL, &ws, &err) == SC_OK, "%s", err.msg);
  alarm(0);
  if (!ws) return;
  EXPECT(sc_workspace_count_definitions(ws, "kept_fn") == 1);
  EXPECTF(sc_workspace_get_stats(ws).files == 1, "%zu files", sc_workspace_get_stats(ws).files);
  bool indexed = true;
  alarm(60);
  EXPECT(sc_workspace_update_file(ws, "b.py", NULL, 0, &indexed, &err) == SC_OK && !indexed);
  alarm(0);
  sc_workspace_free(ws);
}

/* Outside any work tree: an error, not an empty list. */
static void test_not_a_repository(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/../git_listing_plain_XXXXXX", top);
  REQUIRE(mkdtemp(dir));
  ws_names got;
  sc_error err = {0};
  /* GIT_CEILING_DIRECTORIES keeps the search from finding a repository
   * above the temporary folder. */
  char parent[512];
  snprintf(parent, sizeof parent, "%s/..", top);
  char *real_parent = realpath(parent, NULL);
  setenv("GIT_CEILING_DIRECTORIES", real_parent ? real_parent : parent, 1);
  EXPECT(ws_git_list(dir, NULL, &got, &err) == SC_ERR_IO);
  EXPECTF(strstr(err.msg, "not a git repository") != NULL, "%s", err.msg);
  EXPECT(sc_workspace_find_root(dir) == NULL);
  unsetenv("GIT_CEILING_DIRECTORIES");
  free(real_parent);
  rmdir(dir);
  char *found = sc_workspace_find_root(top);
  char *real_top = realpath(top, NULL);
  EXPECTF(found && real_top && strcmp(found, real_top) == 0, "%s", found ? found : "(null)");
  free(found);
  free(real_top);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  char base[256];
  snprintf(base, sizeof base, "%s/sc_git_listing_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(base)) {
    fprintf(stderr, "skip: no temporary folder\n");
    return 77;
  }
  snprintf(top, sizeof top, "%s/repo", base);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "mkdir '%s' && cp -R '%s/data/real/.' '%s/'", top, SC_TEST_DATA_DIR,
           top);
  if (system(cmd) != 0 || system("git --version >/dev/null 2>&1") != 0) {
    fprintf(stderr, "skip: cannot copy the real repositories or no git\n");
    return 77;
  }
  RUN(test_real_repositories);
  RUN(test_fifo_in_place);
  RUN(test_not_a_repository);
  sc_test_remove_tree(base);
  TEST_MAIN_END();
}

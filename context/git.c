/* git.c — which files a workspace holds, as git would list them, read
 * with libgit2: no git subprocess, so nothing a repository's configuration
 * names ever runs.
 *
 * Why not `git ls-files`: git runs commands that the repository's own
 * .git/config names (core.fsmonitor on every index read, filter drivers,
 * textconv, the pager, hooks, core.sshCommand, and include.path can pull
 * these in from another file), so opening a cloned repository would run
 * code as the user. libgit2 implements none of these (Debian's libgit2 1.5
 * imports no fork, exec*, posix_spawn, popen or system at all; check with
 * `nm -D`): it reads the index and the ignore files and executes nothing.
 *
 * The set listed is that of `git ls-files --cached --others
 * --exclude-standard`: every index entry (tracked files, even ones that
 * match an ignore rule or are missing from disk, and submodule paths),
 * then every untracked file no ignore rule excludes (.gitignore files,
 * .git/info/exclude, core.excludesFile), recursing into untracked folders;
 * an untracked nested repository is one "dir/" entry, as git prints it.
 * Paths are relative to the workspace root, which may be a folder inside
 * the work tree (git -C root lists the files under it). tests/unit/
 * test_git_listing.c compares the two on the vendored real repositories.
 *
 * A repository owned by another user is refused, as git refuses it
 * (libgit2's owner validation, git's safe.directory). */
#define _DEFAULT_SOURCE /* realpath, strndup */
#include "git_impl.h"

#include <git2.h>

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* libgit2 is started once per process and never shut down. Starting and
 * stopping it around every call, from the LSP's worker threads at once,
 * let one thread's git_libgit2_shutdown take the count to zero while
 * another thread still held its per-thread error state, which then leaked
 * (LeakSanitizer, about 1 run in 5 of the demo session). Its global state
 * stays reachable to the end, so it is no leak. */
static pthread_once_t g_git_once = PTHREAD_ONCE_INIT;
static void git_start_once(void) { git_libgit2_init(); }
static void git_start(void) { pthread_once(&g_git_once, git_start_once); }

void ws_names_free(ws_names *n) {
  for (size_t i = 0; i < n->n; i++) free(n->v[i]);
  free(n->v);
  memset(n, 0, sizeof *n);
}

static bool names_push(ws_names *n, const char *s) {
  if (n->n == n->cap) {
    size_t cap = n->cap ? n->cap * 2 : 256;
    char **v = realloc(n->v, cap * sizeof *v);
    if (!v) return false;
    n->v = v;
    n->cap = cap;
  }
  if (!(n->v[n->n] = strdup(s))) return false;
  n->n++;
  return true;
}

static const char *git_msg(void) {
  const git_error *e = git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

/* The repository whose work tree holds root, and root's path inside that
 * work tree ("" at its top, else "a/b/" with the slash). *prefix is owned
 * by the caller. Needs git_start. */
static sc_status open_repo(const char *root, git_repository **repo, char **prefix,
                           sc_error *err) {
  *repo = NULL;
  *prefix = NULL;
  char real_root[PATH_MAX], real_wd[PATH_MAX];
  SC_CHECK(realpath(root, real_root), err, SC_ERR_IO, "workspace %s: cannot resolve", root);
  /* Searching upwards as git does: not across file systems, not above
   * $GIT_CEILING_DIRECTORIES. */
  if (git_repository_open_ext(repo, real_root, 0, getenv("GIT_CEILING_DIRECTORIES")) != 0) {
    sc_status st = sc_error_set(err, SC_ERR_IO, "workspace %s: not a git repository (%s)",
                                root, git_msg());
    *repo = NULL;
    return st;
  }
  const char *wd = git_repository_workdir(*repo);
  if (!wd || !realpath(wd, real_wd)) {
    git_repository_free(*repo);
    *repo = NULL;
    return sc_error_set(err, SC_ERR_IO, "workspace %s: the git repository has no work tree",
                        root);
  }
  size_t wl = strlen(real_wd);
  if (strcmp(real_root, real_wd) == 0) {
    *prefix = strdup("");
  } else if (strncmp(real_root, real_wd, wl) == 0 && (real_root[wl] == '/' || wl == 1)) {
    const char *rest = real_root + wl + (wl == 1 ? 0 : 1);
    size_t rl = strlen(rest);
    *prefix = malloc(rl + 2);
    if (*prefix) {
      memcpy(*prefix, rest, rl);
      memcpy(*prefix + rl, "/", 2);
    }
  } else {
    git_repository_free(*repo);
    *repo = NULL;
    return sc_error_set(err, SC_ERR_IO, "workspace %s: not inside the work tree %s", root,
                        real_wd);
  }
  if (!*prefix) {
    git_repository_free(*repo);
    *repo = NULL;
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  return SC_OK;
}

static bool has_prefix(const char *s, const char *p, size_t pl) {
  return strncmp(s, p, pl) == 0;
}

/* The index entries under want (a work-tree path ending in '/', or ""),
 * relative to the root (prefix stripped). Entries are sorted by path and
 * stage, so a conflict's stages are consecutive: each path once. */
static sc_status list_index(git_repository *repo, const char *root, const char *want,
                            size_t prefix_len, ws_names *out, sc_error *err) {
  git_index *idx = NULL;
  if (git_repository_index(&idx, repo) != 0)
    return sc_error_set(err, SC_ERR_IO, "workspace %s: cannot read the git index (%s)", root,
                        git_msg());
  size_t wl = strlen(want), n = git_index_entrycount(idx);
  const char *last = NULL;
  sc_status st = SC_OK;
  for (size_t i = 0; i < n; i++) {
    const git_index_entry *e = git_index_get_byindex(idx, i);
    if (!e || !has_prefix(e->path, want, wl)) continue;
    if (last && strcmp(last, e->path) == 0) continue;
    last = e->path;
    if (!names_push(out, e->path + prefix_len)) {
      st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
      break;
    }
  }
  git_index_free(idx);
  return st;
}

/* The untracked files under want that no ignore rule excludes. libgit2's
 * status compares the index with the work tree (stat data; the content
 * only where the stat data disagree, with libgit2's built-in filters
 * alone) and walks untracked folders. Submodules are not looked into. */
static sc_status list_untracked(git_repository *repo, const char *root, const char *want,
                                size_t prefix_len, ws_names *out, sc_error *err) {
  git_status_options so;
  git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
  so.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
  so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
             GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  size_t wl = strlen(want);
  char *spec = NULL;
  if (wl) {
    /* Limits the walk to the folder; literal, so that names holding glob
     * characters match only themselves. */
    spec = strndup(want, wl - 1);
    SC_CHECK(spec, err, SC_ERR_NOMEM, "out of memory");
    so.flags |= GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
    so.pathspec.strings = &spec;
    so.pathspec.count = 1;
  }
  git_status_list *sl = NULL;
  int rc = git_status_list_new(&sl, repo, &so);
  free(spec);
  if (rc != 0)
    return sc_error_set(err, SC_ERR_IO, "workspace %s: cannot list untracked files (%s)", root,
                        git_msg());
  size_t n = git_status_list_entrycount(sl);
  sc_status st = SC_OK;
  for (size_t i = 0; i < n; i++) {
    const git_status_entry *e = git_status_byindex(sl, i);
    if (!e || !(e->status & GIT_STATUS_WT_NEW) || !e->index_to_workdir) continue;
    const char *p = e->index_to_workdir->new_file.path;
    if (!p || !has_prefix(p, want, wl)) continue; /* the walk's limit, made exact */
    if (!names_push(out, p + prefix_len)) {
      st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
      break;
    }
  }
  git_status_list_free(sl);
  return st;
}

/* want = prefix + folder + "/" (folder's trailing slashes dropped), or
 * the prefix alone. */
static char *join_want(const char *prefix, const char *folder) {
  size_t pl = strlen(prefix), fl = folder ? strlen(folder) : 0;
  while (fl > 0 && folder[fl - 1] == '/') fl--;
  char *w = malloc(pl + fl + 2);
  if (!w) return NULL;
  memcpy(w, prefix, pl);
  if (fl) {
    memcpy(w + pl, folder, fl);
    w[pl + fl] = '/';
    w[pl + fl + 1] = '\0';
  } else {
    w[pl] = '\0';
  }
  return w;
}

sc_status ws_git_list(const char *root, const char *folder, ws_names *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  git_start();
  git_repository *repo = NULL;
  char *prefix = NULL, *want = NULL;
  sc_status st = open_repo(root, &repo, &prefix, err);
  if (st == SC_OK && !(want = join_want(prefix, folder)))
    st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  /* Tracked first: when the file limit cuts the list, tracked files stay. */
  if (st == SC_OK) st = list_index(repo, root, want, strlen(prefix), out, err);
  if (st == SC_OK) st = list_untracked(repo, root, want, strlen(prefix), out, err);
  if (st != SC_OK) ws_names_free(out);
  free(want);
  free(prefix);
  git_repository_free(repo);
  return st;
}

bool ws_git_ignores(const char *root, const char *rel) {
  git_start();
  git_repository *repo = NULL;
  char *prefix = NULL, *path = NULL;
  int ignored = 0;
  if (open_repo(root, &repo, &prefix, NULL) == SC_OK &&
      (path = join_want(prefix, rel)) != NULL) {
    path[strlen(path) - 1] = '\0'; /* join_want's slash: rel is a file */
    /* A tracked file is never ignored (git check-ignore says the same). */
    git_index *idx = NULL;
    size_t at;
    bool tracked = git_repository_index(&idx, repo) == 0 && git_index_find(&at, idx, path) == 0;
    git_index_free(idx);
    if (!tracked && git_ignore_path_is_ignored(&ignored, repo, path) != 0) ignored = 0;
  }
  free(path);
  free(prefix);
  git_repository_free(repo);
  return ignored == 1;
}

char *sc_workspace_find_root(const char *path) {
  git_start();
  char *out = NULL;
  git_repository *repo = NULL;
  char real[PATH_MAX];
  if (realpath(path, real) &&
      git_repository_open_ext(&repo, real, 0, getenv("GIT_CEILING_DIRECTORIES")) == 0) {
    const char *wd = git_repository_workdir(repo);
    char real_wd[PATH_MAX];
    if (wd && realpath(wd, real_wd)) out = strdup(real_wd);
  }
  git_repository_free(repo);
  return out;
}

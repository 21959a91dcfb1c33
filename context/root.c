/* root.c — which folder a file's repository context comes from: the git
 * work tree holding it, found by walking up for a `.git` entry (a folder,
 * or a file in a linked work tree or a submodule) without running git, and
 * the rule the LSP and `sculpt context` share for choosing between the
 * folder the editor names and the file's own work tree. */
#define _DEFAULT_SOURCE /* realpath */
#include "context.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* dir (a writable absolute path) cut back to its parent; false at "/". */
static bool up(char *dir) {
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) {
    if (dir[1] == '\0') return false;
    dir[1] = '\0';
    return true;
  }
  *slash = '\0';
  return true;
}

char *sc_context_work_tree(const char *path) {
  char dir[PATH_MAX];
  if (!path || !realpath(path, dir)) return NULL;
  struct stat st;
  if (stat(dir, &st) != 0) return NULL;
  if (!S_ISDIR(st.st_mode) && !up(dir)) return NULL;
  for (;;) {
    char probe[PATH_MAX + 8];
    size_t n = strlen(dir);
    int k = snprintf(probe, sizeof probe, "%s%s.git", dir, dir[n - 1] == '/' ? "" : "/");
    if (k < 0 || (size_t)k >= sizeof probe) return NULL;
    if (lstat(probe, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
      return strdup(dir);
    if (!up(dir)) return NULL;
  }
}

/* Whether path is folder or below it (both absolute, no trailing slash). */
static bool inside(const char *path, const char *folder) {
  size_t n = strlen(folder);
  if (n == 1 && folder[0] == '/') return path[0] == '/';
  return strncmp(path, folder, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

char *sc_context_index_root(const char *file, const char *editor_root) {
  char real_file[PATH_MAX], real_root[PATH_MAX];
  if (!file || !realpath(file, real_file)) return NULL;
  char *tree = sc_context_work_tree(real_file);
  if (editor_root && realpath(editor_root, real_root) && inside(real_file, real_root)) {
    /* The editor's folder holds the file: it is the user's choice when it
     * is a repository or lies in one. A folder above several repositories
     * (or none) gives way to the file's own work tree. */
    char *root_tree = sc_context_work_tree(real_root);
    bool keep = root_tree != NULL || tree == NULL;
    free(root_tree);
    if (keep) {
      free(tree);
      return strdup(real_root);
    }
  }
  if (tree) return tree;
  /* No repository: the file's own folder. */
  char *slash = strrchr(real_file, '/');
  if (slash == real_file) slash[1] = '\0';
  else if (slash) *slash = '\0';
  return strdup(real_file);
}

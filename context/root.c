/* root.c — which folder a file's repository context comes from: the rule
 * the LSP shares for choosing between the folder the editor names and the
 * file's own git work tree (found with libgit2: sc_workspace_find_root,
 * context/git.c), or the file's folder when it is in no repository. */
#define _DEFAULT_SOURCE /* realpath */
#include "context.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Whether path is folder or below it (both absolute, no trailing slash). */
static bool inside(const char *path, const char *folder) {
  size_t n = strlen(folder);
  if (n == 1 && folder[0] == '/') return path[0] == '/';
  return strncmp(path, folder, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

char *sc_context_index_root(const char *file, const char *editor_root) {
  char real_file[PATH_MAX], real_root[PATH_MAX];
  if (!file || !realpath(file, real_file)) return NULL;
  /* The file's folder: where the search for its work tree starts, and the
   * answer when there is none. */
  char folder[PATH_MAX];
  strcpy(folder, real_file); /* both PATH_MAX */
  char *slash = strrchr(folder, '/');
  if (slash == folder) slash[1] = '\0';
  else if (slash) *slash = '\0';
  char *tree = sc_workspace_find_root(folder);
  if (editor_root && realpath(editor_root, real_root) && inside(real_file, real_root)) {
    /* The editor's folder holds the file: it is the user's choice when it
     * is a repository or lies in one. A folder above several repositories
     * (or none) gives way to the file's own work tree. */
    char *root_tree = sc_workspace_find_root(real_root);
    bool keep = root_tree != NULL || tree == NULL;
    free(root_tree);
    if (keep) {
      free(tree);
      return strdup(real_root);
    }
  }
  return tree ? tree : strdup(folder);
}

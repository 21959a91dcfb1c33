/* git_impl.h — private to context/: the workspace's file list read from git
 * with libgit2 (git.c), for workspace.c. */
#ifndef SC_GIT_IMPL_H
#define SC_GIT_IMPL_H

#include "context.h"

/* A list of paths, each owned by the list. */
typedef struct ws_names {
  char **v;
  size_t n, cap;
} ws_names;

void ws_names_free(ws_names *n);

/* The files `git ls-files --cached --others --exclude-standard` lists
 * under root (or under root/folder when folder is not NULL), relative to
 * root, each once: tracked ones first. Runs no subprocess and nothing the
 * repository configures. An error (naming root) when root is in no git work
 * tree or the index cannot be read. *out is emptied first; the caller frees
 * it with ws_names_free. */
sc_status ws_git_list(const char *root, const char *folder, ws_names *out, sc_error *err);

/* Whether git's ignore rules exclude rel (a path relative to root) from the
 * listing above: false for a tracked file, and outside a work tree. */
bool ws_git_ignores(const char *root, const char *rel);

#endif

/* edit_impl.h — what the files of edit/ share and nobody else sees: the
 * document's insides, small text helpers, and the file reading and writing
 * the run uses (edit/write.c). */
#ifndef SCULPT_EDIT_IMPL_H
#define SCULPT_EDIT_IMPL_H

#include "edit.h"

#include <sys/types.h>

struct sc_edit_doc {
  const char *lang; /* static */
  char *path;       /* may be NULL */
  sc_syntax_tree *tree; /* holds the current text; parsed afresh after each apply */
};

/* A malloc'd NUL-terminated copy of n bytes of s; NULL when out of memory. */
char *sc_edit__dupn(const char *s, size_t n);

/* text with [a, b) replaced by rep: a new malloc'd text (NULL: out of memory). */
char *sc_edit__splice(const char *text, size_t len, size_t a, size_t b, const char *rep,
                      size_t rep_len, size_t *out_len);

/* 0-based line and byte column of off in text. */
void sc_edit__line_col(const char *text, size_t off, uint32_t *line, uint32_t *col);

/* ---- files (edit/write.c) ------------------------------------------------------ */

/* Reads a whole file; *data (NUL-terminated) owned by the caller. On
 * failure errno says why. */
bool sc_edit__read_file(const char *path, char **data, size_t *len);

/* Writes data atomically over path: a temp file .NAME.sculpt-XXXXXX in the
 * same folder with mode perm, fsync, rename, fsync of the folder. */
sc_status sc_edit__write_atomic(const char *path, const char *data, size_t len, mode_t perm,
                                sc_error *err);

#endif

/* edit_impl.h — what the files of edit/ share and nobody else sees: the
 * document's insides, small text helpers, and the file reading and writing
 * the run uses (edit/write.c). */
#ifndef SCULPT_EDIT_IMPL_H
#define SCULPT_EDIT_IMPL_H

#include "edit.h"

#include <sys/types.h>
#include <time.h>

struct sc_edit_doc {
  const char *lang; /* static */
  char *path;       /* may be NULL */
  sc_syntax_tree *tree; /* holds the current text; parsed afresh after each apply */
  /* Python's verdict on the current text (python.c), computed on first use:
   * py_before 1 compiles, 0 not (py_line: the first error's line, 1-based;
   * 0 unknown); py_ours: from our indentation check (no interpreter). */
  bool py_known, py_ours;
  int py_before;
  long py_line;
  /* The C compiler's errors on the current text (cc.c), on first use;
   * cc_usable: it ran and got past every include (no fatal error);
   * cc_noeffect: the lines of its statements with no effect. */
  bool cc_known, cc_usable;
  struct sc_edit__cc_error *cc_errors;
  size_t cc_n;
  long *cc_noeffect;
  size_t cc_noeffect_n;
};

/* A malloc'd NUL-terminated copy of n bytes of s; NULL when out of memory. */
char *sc_edit__dupn(const char *s, size_t n);

/* text with [a, b) replaced by rep: a new malloc'd text (NULL: out of memory). */
char *sc_edit__splice(const char *text, size_t len, size_t a, size_t b, const char *rep,
                      size_t rep_len, size_t *out_len);

/* Calls visit(user, node) on every node of tree that overlaps [from, to]
 * (both ends included), a parent before its children, once each. */
void sc_edit__visit(const sc_syntax_tree *tree, size_t from, size_t to,
                    void (*visit)(void *user, TSNode node), void *user);
/* The same under top (top included). A cursor's walk, not a recursion: the
 * depth of a tree is the input's to choose. */
void sc_edit__visit_node(TSNode top, size_t from, size_t to,
                         void (*visit)(void *user, TSNode node), void *user);

/* An identifier's byte: ASCII letter, digit or `_` (not the locale's). */
static inline bool sc_edit__word_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* 0-based line and byte column of off in text. */
void sc_edit__line_col(const char *text, size_t off, uint32_t *line, uint32_t *col);

/* Does a judge see an error on the lines of a diagnostic's site [a, b)
 * or the line after: tree-sitter, the C compiler, Python (check.c)? A
 * diagnostic no judge sees (a type checker's `"Command" is not defined`,
 * a warning) is no syntax error: a fix for it could not be told from
 * harm. */
bool sc_edit__error_seen(const sc_edit_doc *doc, size_t a, size_t b);

/* ---- diagnostics (edit/diag.c) ------------------------------------------------ */

/* The byte offset in text of d's position, its column read in d's unit (a
 * column past the line's end is its end; none: the line's end, blanks
 * dropped). False when the line is past the end of text. */
bool sc_edit__diag_offset(const char *text, size_t len, const sc_edit_diagnostic *d,
                          size_t *off);

/* ---- Python (edit/python.c) ------------------------------------------------- */

/* NULL when the document with cand in place of the site compiles no worse
 * than before; else why not ("does not compile", or "bad indentation" from
 * our own check when no interpreter is at hand). */
const char *sc_edit__python_verdict(const sc_edit_doc *doc, const char *text, size_t len,
                                    const sc_edit_site *site, const char *cand, size_t cand_len);

/* Does Python (or our indentation check) find the document's own text's
 * first error on a line in [l0, l1] (1-based)? */
bool sc_edit__python_error_on(const sc_edit_doc *doc, const char *text, size_t len, long l0,
                              long l1);

/* Our indentation check of Python source: 0 when the block structure is
 * sound, else the 1-based line of the first error. */
long sc_edit__python_indent_error(const char *text, size_t len);

/* ---- C and C++ (edit/cc.c) --------------------------------------------------- */

/* NULL when the document with cand in place of the site gets no compiler
 * error it did not have (cc -fsyntax-only), or when no compiler can judge
 * it; else "does not compile". */
const char *sc_edit__cc_verdict(const sc_edit_doc *doc, const char *text, size_t len,
                                const sc_edit_site *site, const char *cand, size_t cand_len);

/* Does the compiler report an error in the document's own text on a line
 * in [l0, l1] (1-based)? False when no compiler can judge it. */
bool sc_edit__cc_error_on(const sc_edit_doc *doc, const char *text, size_t len, long l0, long l1);

/* Drops the cached compiler errors (the text changed, or the doc goes). */
void sc_edit__cc_forget(sc_edit_doc *doc);

/* ---- files (edit/write.c) ------------------------------------------------------ */

/* What a file was when it was read: compared again before it is replaced. */
typedef struct sc_edit__stamp {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  nlink_t nlink;
  mode_t mode;
  uid_t uid;
  gid_t gid;
  uint64_t hash; /* sc_hash64 of the bytes read */
} sc_edit__stamp;

/* Reads the file at path (a real path: a symlink there is refused) whole,
 * with the stamp of exactly those bytes. SC_ERR_IO (errno says why) or
 * SC_ERR_STALE (it kept changing while read); no message. */
sc_status sc_edit__file_read(const char *path, char **data, size_t *len, sc_edit__stamp *st);

/* Replaces the file at path (a real path; shown names it in messages) with
 * data when it still holds *disk (*disk_len bytes, malloc'd) as stamped by
 * *st. On SC_OK *disk becomes what is on disk now (data, plus any bytes
 * another writer appended meanwhile, carried over) and *st its stamp.
 * SC_ERR_STALE when it changed (nothing written, or the other writer's text
 * restored), SC_ERR_UNSUPPORTED for a read-only file (unless force) or one
 * with hard links, SC_ERR_IO. See write.c for the steps. */
sc_status sc_edit__file_replace(const char *path, const char *shown, char **disk,
                                size_t *disk_len, sc_edit__stamp *st, const char *data,
                                size_t len, bool force, sc_error *err);

/* Removes the temp files a killed writer left in dir (our exact naming,
 * unlocked). removed (may be NULL) gets each one's path. Returns how many. */
size_t sc_edit__clean_temps(const char *dir, void (*removed)(void *user, const char *path),
                            void *user);

#endif

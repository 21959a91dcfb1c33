/* retrieve_impl.h — what prompt assembly (retrieve.c) takes from resolve.c:
 * the names around the cursor worth looking up, the types of member
 * receivers, and the files an import names. Private to context/. */
#ifndef SC_RETRIEVE_IMPL_H
#define SC_RETRIEVE_IMPL_H

#include "workspace_impl.h"

/* A name to look up, in priority order. */
typedef struct rv_cand {
  char *name;      /* the identifier (owned) */
  char *recv_type; /* a member access whose receiver's type is known (owned), else NULL */
  bool member;     /* used after '.', '->' or '::' */
  bool type_only;  /* the receiver's type itself: a member is about to be typed */
  bool at_cursor;  /* the member access at the cursor (its member, or its type) */
  bool known;      /* type_only at the cursor: the member's name is visible after it */
  char *typed;     /* type_only at the cursor: the start of the member typed (owned), or NULL */
} rv_cand;

/* The receiver-type oracle: the declared type of field in type (owned), or
 * NULL; retrieve.c answers from the index. */
typedef char *(*rv_field_type_fn)(void *user, const char *type, const char *field);

typedef struct rv_scan {
  const char *text;
  size_t len, cursor;
  const char *lang;
  const sc_syntax_tree *tree; /* of text; may be NULL (comments and strings are then not skipped) */
  rv_field_type_fn field_type;
  /* The type method (of type; type NULL: the function) returns, owned, or NULL. */
  rv_field_type_fn return_type;
  void *user;
  /* Set by rv_candidates: declarations of receivers are looked for from
   * here on (the outermost function around the cursor; file scope is the
   * index's). */
  size_t decl_floor;
} rv_scan;

/* The names around the cursor, in this order: the member access at the
 * cursor (its member when the line shows it, then the receiver's type);
 * the names on the cursor's line after it, then before it; then the lines
 * of the function around the cursor (RV_SUFFIX_LINES after it, then
 * RV_PREFIX_LINES before), nearest first, a line after before a line
 * before at the same distance; then the rest of those lines; then the
 * names the rest of the file uses most (RV_FILE_NAMES of them, within
 * RV_FILE_BYTES of the cursor). The region is fixed in lines, not in
 * tokens, so that a larger budget never changes the list. Keywords,
 * numbers and names inside comments and strings (in the region) are left
 * out; each name once (per receiver type). Returns how many were written. */
#define RV_SUFFIX_LINES 12
#define RV_PREFIX_LINES 60
#define RV_FILE_NAMES 16
#define RV_FILE_BYTES (32u << 10)
size_t rv_candidates(const rv_scan *sc, rv_cand *out, size_t cap);
void rv_cands_free(rv_cand *c, size_t n);

/* The type a declaration gives name (at s[at, at + n)) in s[0, len): the
 * C type before it, or the annotation, composite literal or constructor
 * after it (Python, TypeScript, Go). NULL when there is none. Owned. */
char *rv_decl_type(const char *s, size_t len, size_t at, size_t n, const char *lang);
/* The type a function's head says it returns (its name at s[at, at + n)),
 * or NULL. Owned. */
char *rv_return_type(const char *s, size_t len, size_t at, size_t n, const char *lang);
/* Up to max names of types in s[0, len) that are not wrappers (List,
 * Optional, Required, ...), into out (owned); how many. For a container's
 * bases: "class A(B, C):", "interface A extends B", "type A = Required<B>". */
size_t rv_type_names(const char *s, size_t len, char **out, size_t max);

/* The files (ids in ws) that the file at path (lang, its imports in self)
 * imports, resolved by path: C includes relative to the file, then any
 * header of that name in the repository (and those headers' own includes,
 * one level); Python relative and absolute imports through the package
 * tree; JS/TS relative specifiers with extension resolution (a ".js"
 * specifier may name a ".ts" file); Go import paths inside the module
 * (go.mod), and the file's own package (its folder). Called under ws's
 * read lock. Returns how many ids were written. */
size_t rv_resolve_imports(const sc_workspace *ws, const char *path, const char *lang,
                          const ws_file *self, uint32_t *ids, size_t cap);

#endif

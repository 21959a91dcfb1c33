/* resolve_impl.h — resolve.c's languages: each one resolver (resolve_c.c,
 * resolve_python.c, resolve_go.c, resolve_ts.c) behind a table of
 * operations, as grammars/ gives each language its queries; resolve.c and
 * resolve_names.c hold what they share and call through the table. A new
 * language is one file and one row of rv_langs (resolve.c). A language
 * without a row gets the defaults (annotations and assignments for
 * declared types, imports by file stem). Private to context/. */
#ifndef SC_RESOLVE_IMPL_H
#define SC_RESOLVE_IMPL_H

#include "retrieve_impl.h"

#include <ctype.h>
#include <string.h>

static inline bool rv_is_id(char c) { return isalnum((unsigned char)c) || c == '_'; }
static inline bool rv_is_id_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static inline bool rv_word_is(const char *s, size_t n, const char *w) {
  return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* ---- shared by the resolvers (resolve.c) ---- */

/* Whether s[0, n) is one of list's words (NULL-ended). */
bool rv_in_list(const char *s, size_t n, const char *const *list);
/* Skips a balanced (...) starting at s[i] == '('; the offset after it, or
 * SIZE_MAX when it does not close within e. */
size_t rv_skip_parens(const char *s, size_t i, size_t e);
/* C's own types and statement words: never the type we want. */
extern const char *const rv_not_c_type[];
/* The first identifier of an annotation at s[i] that is not a wrapper
 * (`t.Optional[Context]` is Context), or NULL. Owned. */
char *rv_annotation_type(const char *s, size_t len, size_t i);
/* The right-hand side at s[k] when it is a chain of names, fields and
 * calls ending the expression, as "=" and the chain (for the chain's type
 * to be followed), or NULL. Owned. */
char *rv_rhs_chain(const char *s, size_t len, size_t k);
/* The declared type of name s[at, at + n) from what follows it: an
 * annotation ("x: T"), a constructor ("x = T(...)", with new_kw also
 * "new T(...)") or a chain ("x = f()", returned as rv_rhs_chain does).
 * Languages with annotations, and the default. Owned, or NULL. */
char *rv_decl_after(const char *s, size_t len, size_t at, size_t n, bool new_kw);
/* The offset after the parameter list of the function head whose name is
 * s[at, at + n), spaces skipped, or SIZE_MAX; arrow: a '=' may come
 * between (TypeScript's `name = (...) =>`). */
size_t rv_after_params(const char *s, size_t len, size_t at, size_t n, bool arrow);
/* Copies s[a, b) without spaces, tabs and newlines into out (cap bytes). */
void rv_squeeze(const char *s, size_t a, size_t b, char *out, size_t cap);
/* Top-level commas of s (results text) + 1, or 0 for "". */
int rv_count_parts(const char *s);
/* Python (ts false) and TypeScript: the results of a member head from its
 * annotation, as rv_member_results says. */
int rv_annotated_results(const char *s, size_t len, size_t at, size_t n, bool ts, char *out,
                         size_t cap);
/* After a ':' at offset at: an annotation rather than a value, from the
 * syntax tree's nodes around it. */
bool rv_annotation_colon(const sc_syntax_tree *tree, size_t at);
/* Whether t[a, b) ends with word w (a whole word). */
bool rv_ends_with_word(const char *t, size_t a, size_t b, const char *w);
/* C and TypeScript: t[a, b) ends with `if (` or `while (`: a condition. */
bool rv_cond_paren(const char *t, size_t a, size_t b);
/* A comment's or a string's node type. */
bool rv_masked_type(const char *t);
/* The type of the receiver chain sc->text[a, b) ("ctx", "self.ctx",
 * "p->path", "c.Root()"), owned, or NULL. */
char *rv_receiver_type(const rv_scan *sc, size_t a, size_t b);

/* Import resolution: the ids found, each once, at most cap. */
typedef struct rv_idset {
  uint32_t *ids;
  size_t n, cap;
} rv_idset;
void rv_id_add(rv_idset *s, uint32_t id);
/* The id of the file at rel (a path of the workspace), if indexed. */
bool rv_lookup(const sc_workspace *ws, const char *rel, uint32_t *id);
/* dir[0, dl) + "/" + rel with "." and ".." folded; false when it leaves the root. */
bool rv_join(char *out, size_t cap, const char *dir, size_t dl, const char *rel);
/* Every file whose path is name or ends in "/" + name. */
void rv_by_suffix(const sc_workspace *ws, const char *name, rv_idset *out);

/* The code before the cursor on its line, for type_position: t[ls, e) with
 * trailing blanks dropped (e > ls), its last word t[w, e) (maybe empty), and
 * the word before that, t[q, p). */
typedef struct rv_line_end {
  const char *t;
  size_t ls, cur, e, w, p, q;
} rv_line_end;

/* ---- a language's resolver ---- */
typedef struct rv_lang_ops {
  /* The type a declaration gives name s[at, at + n) (rv_decl_type). */
  char *(*decl_type)(const char *s, size_t len, size_t at, size_t n);
  /* The type a function head says it returns (rv_return_type). */
  char *(*return_type)(const char *s, size_t len, size_t at, size_t n);
  /* A member head's results (rv_member_results). */
  int (*member_results)(const char *s, size_t len, size_t at, size_t n, char *out, size_t cap);
  /* Whether w[0, wl) names the enclosing class's instance (self, this). */
  bool (*self_word)(const char *w, size_t wl);
  /* Whether the line's end is where a type goes; *err: an error's type. */
  bool (*type_position)(const rv_line_end *l, const sc_syntax_tree *tree, bool *err);
  /* What a member access must give (rv_expect), from the code t[a, b)
   * before its receiver: `await` is looked through; cond: a condition's
   * forms beyond !, && and ||; seq: where a sequence is ranged over. */
  bool await;
  bool (*cond)(const char *t, size_t a, size_t b);
  bool (*seq)(const char *t, size_t a, size_t b);
  /* `return x.`: the results of the function head at t[fs, e) into ret;
   * NULL: its name's results through member_results. */
  void (*head_results)(const char *t, size_t fs, size_t e, char *ret, size_t cap);
  /* An assignment's names t[a, l): where they start (after a keyword). */
  size_t (*assign_start)(const char *t, size_t a, size_t l);
  /* One name assigned, t[a, l) with the '=' at l: the declared type into x->ret. */
  void (*assign_type)(const char *t, size_t a, size_t l, rv_expect *x);
  /* The files the file at path imports, into out (rv_resolve_imports). */
  void (*imports)(const sc_workspace *ws, const char *path, const ws_file *f, rv_idset *out);
} rv_lang_ops;

extern const rv_lang_ops rv_lang_c, rv_lang_cpp, rv_lang_python, rv_lang_go, rv_lang_ts;

/* lang's resolver, or NULL (the defaults). */
const rv_lang_ops *rv_lang(const char *lang);

#endif

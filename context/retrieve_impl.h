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
  bool guess;      /* not written near the cursor: predicted by its words (retrieve.c) */
} rv_cand;

/* What the code around the cursor talks about, as words: the names the user
 * just wrote on the cursor's line, the enclosing function's name and the
 * names of the lines nearby, split into lower-cased words ("parentPath":
 * parent, path; "f_json_parse": json, parse; "HTTPError": http, error) and
 * weighted (RV_W_*: the cursor's line most, then the comment right above
 * it, the function's name, then the lines by distance; comments and
 * strings less than code). A definition whose name shares rare words with
 * these is likely the one about to be used: `parentPath := cmd.` is
 * Parent(), `static jv f_keys(...) { return ` is jv_keys, `request: ` is
 * KyRequest (the "expected name" of IDE completion rankers). */
#define RV_BAG 128
#define RV_W_LINE 3.0f
#define RV_W_FUNC 2.0f
#define RV_W_PROSE 0.5f /* a word of a comment or string, against one of code */
#define RV_W_NOTE 2.5f  /* a word of the comment right above the cursor's line */
#define RV_BAG_BEFORE 16 /* lines before the cursor's ... */
#define RV_BAG_AFTER 4  /* ... and after it, weighted 1 / (1 + distance / 3) */
typedef struct rv_bag {
  uint64_t word[RV_BAG]; /* sc_hash64 of the lower-cased word */
  float weight[RV_BAG];  /* the largest weight it was seen with */
  size_t n;
} rv_bag;

/* The lower-cased words of identifier s[0, n), hashed, into out (at most
 * cap, each once); how many. Words of one letter and digits are left out;
 * a name of several words also gives its letters joined ("ProgressBar":
 * progress, bar, progressbar). */
size_t rv_words(const char *s, size_t n, uint64_t *out, size_t cap);
/* The weight of word in the bag, 0 when absent. */
float rv_bag_weight(const rv_bag *b, uint64_t word);

/* What the member access at the cursor must give, from the code before it
 * on its line (Go; Python and TypeScript where annotations say): a
 * statement (a call whose results, if any, are dropped), a condition (a
 * bool), a range (a slice or map; `for x in`, `for (x of`), n results
 * (`a, b, err := x.`), or what the enclosing function returns (`return x.`).
 * A member that cannot give it is an unlikely next member; one that gives
 * it exactly a likely one. */
typedef struct rv_expect {
  bool known;      /* the fields below say something */
  bool stmt;       /* the access starts a statement */
  bool want_bool;  /* in a condition */
  bool want_seq;   /* ranged over */
  int results;     /* values assigned from it, -1: not an assignment */
  char ret[96];    /* `return x.`: the enclosing function's results, spaces removed ("error",
                      "*Command,[]string,error"); "" otherwise */
} rv_expect;

/* The results of member head s (its name at s[at, at + n)) in lang, as
 * rv_go_results does for Go; Python and TypeScript from annotations
 * ("-> tuple[A, B]" is 2; "-> None", ": void" are 0); -1 when not told. */
int rv_member_results(const char *s, size_t len, size_t at, size_t n, const char *lang,
                      char *out, size_t cap);
/* The results of Go function or method head s (its name at s[at, at + n)),
 * spaces removed and outer parentheses dropped, into out (cap bytes); how
 * many (0: none; -1: not a function head). A field's head ("Name Type")
 * gives its type and 1. */
int rv_go_results(const char *s, size_t len, size_t at, size_t n, char *out, size_t cap);

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
  /* Set by rv_candidates when not NULL: the words around the cursor. */
  rv_bag *bag;
  /* Set by rv_candidates: how many candidates come from the member access
   * at the cursor and the cursor's line (the rest are the region's). */
  size_t n_line;
  /* Set by rv_candidates: what the member access at the cursor must give. */
  rv_expect expect;
  /* Set by rv_candidates: the cursor is where a type goes (after `raise`,
   * `except`, `new`, `instanceof`, `->`, `isinstance(x, `, `<`). */
  bool want_type;
  /* Set by rv_candidates: the name of the function around the cursor,
   * text[fn_at, fn_at + fn_len) (fn_len 0: none). */
  size_t fn_at, fn_len;
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
size_t rv_candidates(rv_scan *sc, rv_cand *out, size_t cap);
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

/* The length of path's folder ("a/b/c.py": 3; "c.py": 0). */
size_t rv_dir_len(const char *path);

#endif

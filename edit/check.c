/* check.c — the checks a candidate must pass before it may replace its
 * site in a file or be offered in the editor. The rule is "do no harm":
 *   1. the whole file parses no worse: no syntax error that was not there,
 *      no more errors in all than before (tree-sitter, the whole file, not
 *      the site); a fix for a diagnostic must lower the count when the file
 *      had errors and leave none at or right after its text;
 *   2. nothing outside the site changes: every token outside it that parsed
 *      as code before is still the same token after (a candidate that opens
 *      a comment or a string, or swallows the next statement, fails);
 *   3. brackets stay balanced: the file's unmatched brackets do not grow,
 *      and the site's own do not either unless the file's shrink (the fix
 *      of a missing `}` adds one to its site);
 *   4. a diagnostic's fix keeps the code it fixes: a syntax error is
 *      local, so its fix adds, removes or changes a few characters; one
 *      that drops most of the statement rewrites it (seen on click with
 *      the shipped model: `if self._force_readable` "fixed" to `if None:`,
 *      which parses and compiles);
 *   5. Python compiles (python.c), C compiles no worse (cc.c): the
 *      language's own judgement, which sees what tree-sitter does not.
 * `sculpt batch --check CMD` adds the caller's own test after these. */
#define _POSIX_C_SOURCE 200809L
#include "edit_impl.h"

#include <stdlib.h>
#include <string.h>

/* No ERROR or MISSING node within [a, b] of tree. With old (may be NULL),
 * the tree before an edit at a, an ERROR around [a, b] is left out when
 * old had one around a: the file's own trouble, not the edit's (in jq's
 * util.c, `#ifdef`s leave nearly the whole file in one ERROR). */
static bool clean_around(const sc_syntax_tree *tree, const sc_syntax_tree *old, size_t a,
                         size_t b) {
  sc_syntax_error *errs = NULL, *was = NULL;
  size_t n = 0, n_was = 0;
  if (sc_syntax_tree_errors(tree, &errs, &n, NULL) != SC_OK ||
      (old && sc_syntax_tree_errors(old, &was, &n_was, NULL) != SC_OK)) {
    free(errs);
    return false;
  }
  bool clean = true, around_before = false;
  for (size_t k = 0; k < n_was; k++)
    around_before |= !was[k].missing && was[k].start_byte < a && was[k].end_byte > a;
  for (size_t i = 0; i < n && clean; i++) {
    if (errs[i].start_byte > b || errs[i].end_byte < a) continue;
    clean = around_before && !errs[i].missing && errs[i].start_byte < a && errs[i].end_byte > b;
  }
  free(errs);
  free(was);
  return clean;
}

/* Does tree-sitter see an error on the lines of [a, b) or the line after
 * (where gcc reports a missing `;`)? Where it does not, it cannot tell a
 * fix from no fix: a statement-like macro call without its `;`
 * (`lua_lock(L)` before `old = G(L)->panic;`, jq's `jv_free(bad1)`) reads
 * as a declaration. The compiler judges such a fix (cc.c). */
static bool broken_near(const sc_edit_doc *doc, size_t a, size_t b) {
  size_t len;
  const char *t = sc_edit_doc_text(doc, &len);
  while (a > 0 && t[a - 1] != '\n') a--;
  for (int nl = 0; b < len && nl < 2; b++) nl += t[b] == '\n';
  return !clean_around(doc->tree, NULL, a, b);
}

bool sc_edit__error_seen(const sc_edit_doc *doc, size_t a, size_t b) {
  size_t tl;
  const char *text = sc_edit_doc_text(doc, &tl);
  if (broken_near(doc, a, b)) return true;
  long l0 = 1, l1;
  for (size_t i = 0; i < a; i++) l0 += text[i] == '\n';
  l1 = l0;
  for (size_t i = a; i < b && i < tl; i++) l1 += text[i] == '\n';
  if (strcmp(doc->lang, "python") == 0) return sc_edit__python_error_on(doc, text, tl, l0, l1 + 1);
  if (strcmp(doc->lang, "c") == 0 || strcmp(doc->lang, "cpp") == 0)
    return sc_edit__cc_error_on(doc, text, tl, l0, l1 + 1);
  return false;
}

/* A token of a parse: a leaf with its bytes, kind, whether it lies in an
 * ERROR (text the parser could not place) and whether it is a piece of a
 * string literal (its text, quotes or escapes; not code interpolated in
 * it). */
typedef struct leaf {
  uint32_t start, end;
  TSSymbol symbol;
  bool named, extra, in_error, in_string;
  char bracket; /* one of ( ) [ ] { }, or 0 */
} leaf;

typedef struct leaves {
  leaf *v;
  size_t n, cap;
} leaves;

static char bracket_of(const char *type) {
  if (strcmp(type, "${") == 0 || strcmp(type, "#{") == 0) return '{';
  return type[0] && !type[1] && strchr("()[]{}", type[0]) ? type[0] : 0;
}

/* Every leaf of tree with bytes (MISSING ones are inserted, not text). */
static bool collect_leaves(const sc_syntax_tree *tree, leaves *out) {
  memset(out, 0, sizeof *out);
  TSTreeCursor c = ts_tree_cursor_new(sc_syntax_tree_root(tree));
  uint32_t depth = 0, error_depth = UINT32_MAX; /* depth of the outermost ERROR we are in */
  bool string_parent[256] = {false}; /* at each depth: is the parent a string literal? */
  bool ok = true;
  for (bool down = true; ok;) {
    TSNode n = ts_tree_cursor_current_node(&c);
    if (down && error_depth == UINT32_MAX && strcmp(ts_node_type(n), "ERROR") == 0)
      error_depth = depth;
    if (down && ts_node_child_count(n) == 0 && !ts_node_is_missing(n) &&
        ts_node_end_byte(n) > ts_node_start_byte(n)) {
      if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 1024;
        leaf *nv = realloc(out->v, cap * sizeof *nv);
        if (!nv) {
          ok = false;
          break;
        }
        out->v = nv;
        out->cap = cap;
      }
      out->v[out->n++] = (leaf){ts_node_start_byte(n), ts_node_end_byte(n), ts_node_symbol(n),
                                ts_node_is_named(n), ts_node_is_extra(n),
                                error_depth != UINT32_MAX,
                                depth < 256 && string_parent[depth], bracket_of(ts_node_type(n))};
    }
    if (down && ts_tree_cursor_goto_first_child(&c)) {
      depth++;
      if (depth < 256)
        string_parent[depth] = strstr(ts_node_type(n), "string") &&
                               !strstr(ts_node_type(n), "concatenated");
      continue;
    }
    if (error_depth == depth) error_depth = UINT32_MAX; /* leaving it */
    if (ts_tree_cursor_goto_next_sibling(&c)) {
      down = true;
      continue;
    }
    down = false;
    if (!ts_tree_cursor_goto_parent(&c)) break;
    depth--;
  }
  ts_tree_cursor_delete(&c);
  if (!ok) free(out->v);
  return ok;
}

/* The last leaf of l starting at or before x, or NULL. */
static const leaf *leaf_at(const leaves *l, size_t x) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (l->v[mid].start <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo ? &l->v[lo - 1] : NULL;
}

static bool is_word(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!sc_edit__word_byte(s[i])) return false;
  return n > 0;
}

/* A token outside the site that is longer after (R) than before (L):
 * only when it is the before's tokens run together, back to back, where
 * the parser's recovery broke them up (an ERROR or MISSING node inside).
 * Recovery splits tokens far from the error: in click's testing.py, a
 * `def` line without its `:` threw the class off, and a later method's
 * `->` was read as `-` and an ERROR `>` (in decorators.py, `-`, a MISSING
 * operand and `>`); the fix makes it `->` again. Offsets as for
 * outside_kept. */
static bool grew_over_error(const sc_syntax_tree *tree, const leaves *before, const leaf *L,
                            const leaf *R, size_t a, size_t b, size_t new_len) {
  size_t rs = R->start, re = R->end;
  if (rs >= a + new_len) {
    rs = rs - (a + new_len) + b;
    re = re - (a + new_len) + b;
  } else if (re > a) {
    return false; /* it runs into the site */
  }
  const leaf *K = leaf_at(before, rs);
  if (!K || K->start != rs || re - rs < 2) return false;
  size_t at = rs;
  for (; K < before->v + before->n && K->start < re; K++) {
    if (K->start != at) return false; /* a gap: not one token split */
    at = K->end;
  }
  return at == re && K - leaf_at(before, rs) > 1 && L->start >= rs && L->end <= re &&
         !clean_around(tree, NULL, rs + 1, re - 1);
}

/* Is every code token of before outside [a, b) the same token in after,
 * where the site became [a, a + new_len)? A token in an ERROR before is
 * not held to it (the fix may well re-place it). A token touching the site
 * may run on into the new text (`abc` before an inline hole, string text):
 * its bytes must still lie in one sound token. A token may grow over text
 * that lay in an ERROR (grew_over_error). A word may change kind with
 * the same bytes: recovering from `r = ri` with no `;`, tree-sitter read
 * the next line's `break` as an identifier, and the fix makes it the
 * keyword again. text is before's. */
static bool outside_kept(const sc_syntax_tree *tree, const leaves *before, const leaves *after,
                         const char *text, size_t a, size_t b, size_t new_len) {
  for (size_t i = 0; i < before->n; i++) {
    const leaf *L = &before->v[i];
    if (L->in_error || (L->start < b && L->end > a) || (a == b && L->start < a && L->end > a))
      continue;
    size_t s = L->start, e = L->end;
    if (s >= b) {
      s = s - b + a + new_len;
      e = e - b + a + new_len;
    }
    const leaf *R = leaf_at(after, s);
    if (!R || R->in_error || R->end < e) return false;
    if (L->end == a || L->start == b) continue; /* touching: covered is enough */
    /* Text of a string, still in one: how it is split is the lexer's (a
     * docstring whose `r` prefix the error had cut off, in click's core.py,
     * has its `\s` read as an escape until the fix). */
    if (L->in_string && R->in_string) continue;
    if (R->start != s || R->end != e) {
      if (!grew_over_error(tree, before, L, R, a, b, new_len)) return false;
      continue;
    }
    if (R->extra != L->extra ||
        (R->symbol != L->symbol && !(R->named && L->named) &&
         !is_word(text + L->start, L->end - L->start)))
      return false;
  }
  return true;
}

/* Unmatched brackets among the leaves in [a, b). */
static size_t unmatched(const leaves *l, size_t a, size_t b) {
  char stack[256];
  size_t depth = 0, over = 0, bad = 0;
  for (size_t i = 0; i < l->n; i++) {
    const leaf *L = &l->v[i];
    if (!L->bracket || L->start < a || L->end > b) continue;
    char c = L->bracket;
    if (c == '(' || c == '[' || c == '{') {
      if (depth < sizeof stack) stack[depth] = c;
      else over++;
      depth++;
      continue;
    }
    char want = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (depth > 0 && (depth > sizeof stack || stack[depth - 1] == want)) depth--;
    else bad++;
  }
  (void)over;
  return bad + depth;
}

typedef struct hiding_walk {
  size_t a, b, n;
} hiding_walk;

static void visit_hiding(void *user, TSNode node) {
  hiding_walk *w = user;
  size_t s = ts_node_start_byte(node), e = ts_node_end_byte(node);
  const char *type = ts_node_type(node);
  if (s >= w->a && e <= w->b && e > s &&
      (strstr(type, "comment") || strncmp(type, "preproc", 7) == 0))
    w->n++;
}

/* Comments and preprocessor directives among the nodes in [a, b) of tree. */
static size_t hiding(const sc_syntax_tree *tree, size_t a, size_t b) {
  hiding_walk w = {a, b, 0};
  if (b > a) sc_edit__visit(tree, a, b, visit_hiding, &w);
  return w.n;
}

/* An expression with no effect: a name, a member or an element of one, a
 * literal, or one of those under `!`, `-`, `+`, `~`, `not`, parentheses or
 * a binary operator (`!c.flags`, `a == b`). Not JavaScript's `delete`, nor
 * Go's `<-ch`: their operators do something. Depth bounded: a tree's depth
 * is the input's to choose. */
static bool inert_expression(TSNode node, int depth) {
  static const char *const kinds[] = {
      "identifier",      "field_expression", "selector_expression", "member_expression",
      "attribute",       "scoped_identifier", "index_expression",   "subscript_expression",
      "subscript",       "number_literal",   "number",              "integer",
      "float",           "int_literal",      "float_literal",       "integer_literal",
      "nil",             "null",             "none",                "true",
      "false",           "undefined",
  };
  const char *type = ts_node_type(node);
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(type, kinds[i]) == 0) return true;
  if (depth >= 6) return false;
  if (strcmp(type, "unary_expression") == 0 || strcmp(type, "not_operator") == 0) {
    const char *op = ts_node_child_count(node) ? ts_node_type(ts_node_child(node, 0)) : "";
    if (strcmp(op, "!") != 0 && strcmp(op, "-") != 0 && strcmp(op, "+") != 0 &&
        strcmp(op, "~") != 0 && strcmp(op, "not") != 0)
      return false;
  } else if (strcmp(type, "binary_expression") != 0 && strcmp(type, "comparison_operator") != 0 &&
             strcmp(type, "boolean_operator") != 0 &&
             strcmp(type, "parenthesized_expression") != 0) {
    return false;
  }
  uint32_t n = ts_node_named_child_count(node);
  for (uint32_t i = 0; i < n; i++)
    if (!inert_expression(ts_node_named_child(node, i), depth + 1)) return false;
  return n > 0;
}

/* A statement with no effect: an expression statement whose expression has
 * none (above), with no error in it. Where an `=` or `==` was lost
 * (`a->child n;`, Go's `if c.flags nil {`) the `;` a tool or tree-sitter
 * asks for makes one, and the text parses: on cobra 19 of 70 random
 * deletions were "fixed" so. Where the C compiler can judge, cc.c says the
 * same of more. */
static bool inert_statement(TSNode node) {
  return strcmp(ts_node_type(node), "expression_statement") == 0 && !ts_node_has_error(node) &&
         ts_node_named_child_count(node) == 1 && inert_expression(ts_node_named_child(node, 0), 0);
}

typedef struct inert_walk {
  size_t a, b, n;
  bool guesses; /* count those whose parent holds an error too */
} inert_walk;

static void visit_inert(void *user, TSNode node) {
  inert_walk *w = user;
  if (ts_node_end_byte(node) > w->a && ts_node_start_byte(node) < w->b && inert_statement(node) && (w->guesses || !ts_node_has_error(ts_node_parent(node))))
    w->n++;
}

/* Statements with no effect that overlap [a, b) of tree. Without
 * guesses, not those beside an error in their parent: in broken text
 * they are the recovery's reading (`if c.flags nil {` read as the
 * statement `c.flags`, a MISSING `;`, then `nil`), not the code's. */
static size_t inert(const sc_syntax_tree *tree, size_t a, size_t b, bool guesses) {
  inert_walk w = {a, b, 0, guesses};
  if (b > a) sc_edit__visit(tree, a, b, visit_inert, &w);
  return w.n;
}

/* The non-blank bytes of s[0, n) into out (room for n); their count. */
static size_t non_blank(const char *s, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != '\f' &&
        s[i] != '\v')
      out[k++] = s[i];
  return k;
}

/* Rule 4: does cand keep the site's code? It may drop at most a quarter of
 * the site's non-blank bytes (at least 2: a stray `$`, a doubled `;`),
 * counted as the site's bytes less the longest common subsequence of the
 * two over non-blank bytes (blank space is the formatter's). Bytes rather
 * than tokens: in a broken statement tree-sitter's tokens are guesses, and
 * a typo's fix (`retrun` -> `return`) should cost a byte, not a token. Two
 * rows of the classic dynamic programme, O(n m) time: a site is a statement
 * of at most five lines or one line, a candidate one canvas; past LCS_CELLS
 * a candidate is refused (a canvas cannot hold such a site anyway).
 * *nomem is set when an allocation fails. */
#define LCS_CELLS ((size_t)1 << 24)
static bool keeps_code(const char *site, size_t site_len, const char *cand, size_t cand_len,
                       bool *nomem) {
  char *x = malloc(site_len + 1), *y = malloc(cand_len + 1);
  size_t n = x ? non_blank(site, site_len, x) : 0, m = y ? non_blank(cand, cand_len, y) : 0;
  size_t allowed = n / 4 > 2 ? n / 4 : 2;
  bool fits = m == 0 || n <= LCS_CELLS / m, keeps = false;
  size_t *row = x && y && fits ? calloc(m + 1, sizeof *row) : NULL;
  *nomem = !x || !y || (fits && !row);
  if (row) {
    for (size_t i = 0; i < n; i++) {
      size_t diag = 0; /* the previous row's row[j - 1] */
      for (size_t j = 1; j <= m; j++) {
        size_t up = row[j];
        row[j] = x[i] == y[j - 1] ? diag + 1 : (row[j - 1] > up ? row[j - 1] : up);
        diag = up;
      }
    }
    keeps = n - row[m] <= allowed;
  }
  free(row);
  free(x);
  free(y);
  return keeps;
}

sc_status sc_edit_check(const sc_edit_doc *doc, const sc_edit_site *site, const char *cand,
                        size_t len, sc_edit_verdict *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  size_t a = site->start, b = site->end, before = sc_syntax_tree_error_count(doc->tree);
  out->errors_before = before;
  sc_syntax_tree *copy = NULL, *after = NULL;
  sc_completion_check chk;
  sc_status st = sc_syntax_tree_copy(doc->tree, &copy, err);
  if (st == SC_OK) st = sc_syntax_tree_edit(copy, a, b, "", 0, err);
  if (st == SC_OK) st = sc_completion_check_insert(copy, a, cand, len, &chk, err);
  if (st == SC_OK) st = sc_syntax_tree_copy(doc->tree, &after, err);
  if (st == SC_OK) st = sc_syntax_tree_edit(after, a, b, cand, len, err);
  sc_syntax_tree_free(copy);
  if (st != SC_OK) {
    sc_syntax_tree_free(after);
    out->why = "parse check failed";
    return st;
  }
  out->errors_after = chk.errors_after;
  /* 1. No new error, never more in all; a fix lowers the count where
   * tree-sitter sees the error (see broken_near). */
  const char *why = NULL;
  size_t tl;
  const char *text = sc_edit_doc_text(doc, &tl);
  if (site->kind == SC_EDIT_DIAGNOSTIC && !sc_edit__error_seen(doc, a, b))
    why = "no error to fix there";
  else if (chk.new_errors > 0 || chk.errors_after > before ||
      (site->kind == SC_EDIT_DIAGNOSTIC && before > 0 && chk.errors_after >= before &&
       broken_near(doc, a, b)) ||
      (site->kind == SC_EDIT_DIAGNOSTIC && !clean_around(after, doc->tree, a, a + len)))
    why = "does not parse";
  /* 2 and 3: tokens outside the site, brackets. */
  leaves lb = {0}, la = {0};
  if (!why && (!collect_leaves(doc->tree, &lb) || !collect_leaves(after, &la))) {
    st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    why = "parse check failed";
  }
  if (!why && !outside_kept(doc->tree, &lb, &la, text, a, b, len))
    why = "changes code outside its site";
  if (!why) {
    size_t file_before = unmatched(&lb, 0, SIZE_MAX), file_after = unmatched(&la, 0, SIZE_MAX);
    size_t site_before = unmatched(&lb, a, b), site_after = unmatched(&la, a, a + len);
    if (file_after > file_before || (site_after > site_before && file_after == file_before))
      why = "unbalanced brackets";
  }
  free(lb.v);
  free(la.v);
  /* A fix hides nothing: no comment or directive where there was code. */
  if (!why && site->kind != SC_EDIT_HOLE && site->kind != SC_EDIT_BLOCK &&
      hiding(after, a, a + len) > hiding(doc->tree, a, b))
    why = "hides code in a comment or directive";
  /* 4. A fix keeps most of what it fixes. */
  bool nomem = false;
  if (!why && site->kind == SC_EDIT_DIAGNOSTIC && !keeps_code(text + a, b - a, cand, len, &nomem))
    why = nomem ? "parse check failed" : "drops the code it fixes";
  if (nomem) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  /* No statement that does nothing where there was none. */
  size_t ls = a; /* from the line's start: Go's `;` ends no statement, it parts them */
  while (ls > 0 && text[ls - 1] != '\n') ls--;
  if (!why && inert(after, ls, a + len, true) > inert(doc->tree, ls, b, false))
    why = "leaves a statement with no effect";
  /* 5. The language's own judgement. */
  if (!why && strcmp(doc->lang, "python") == 0)
    why = sc_edit__python_verdict(doc, text, tl, site, cand, len);
  if (!why && (strcmp(doc->lang, "c") == 0 || strcmp(doc->lang, "cpp") == 0))
    why = sc_edit__cc_verdict(doc, text, tl, site, cand, len);
  sc_syntax_tree_free(after);
  out->ok = why == NULL;
  out->why = why;
  return st;
}

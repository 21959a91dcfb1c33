/* site.c — where an edit goes: holes, the statement around a diagnostic,
 * query captures and empty blocks, found in an sc_edit_doc. */
#define _GNU_SOURCE /* memmem, strcasestr */
#include "edit_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

/* A growable array of sites. */
typedef struct site_list {
  sc_edit_site *v;
  size_t n, cap;
} site_list;

static bool push(site_list *l, sc_edit_kind kind, size_t a, size_t b, bool single_line) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    sc_edit_site *nv = realloc(l->v, cap * sizeof *nv);
    if (!nv) return false;
    l->v = nv;
    l->cap = cap;
  }
  l->v[l->n++] = (sc_edit_site){
      .kind = kind, .start = a, .end = b, .anchor = a, .single_line = single_line};
  return true;
}

/* Is [x, y) nothing but the marker and comment punctuation? */
static bool comment_only(const char *t, size_t x, size_t y, const char *marker) {
  size_t ml = strlen(marker);
  const char *m = memmem(t + x, y - x, marker, ml);
  if (!m) return false;
  for (const char *p = t + x; p < t + y; p++) {
    if (p >= m && p < m + ml) continue;
    if (!strchr("/#*- \t\r\n;<>!", *p)) return false;
  }
  return true;
}

static bool has(const char *type, const char *part) { return strstr(type, part) != NULL; }

/* The kind of text a byte range lies in: a string (or a character, regex,
 * heredoc literal: text, not code), a comment (*comment set to it), or code
 * (which includes the code interpolated into a string: f"{x}", `${x}`). */
typedef enum region { REGION_CODE, REGION_COMMENT, REGION_STRING } region;

static region region_of(const sc_syntax_tree *tree, size_t a, size_t b, TSNode *comment) {
  TSNode *up;
  size_t k = sc_syntax_ancestry_at(tree, a, b, &up);
  region r = REGION_CODE;
  for (size_t i = 0; i < k; i++) {
    const char *type = ts_node_type(up[i]);
    if (has(type, "comment")) {
      *comment = up[i];
      r = REGION_COMMENT;
      break;
    }
    if (has(type, "interpolation") || has(type, "substitution")) break;
    if (has(type, "string") || has(type, "char") || has(type, "heredoc") ||
        has(type, "regex") || strcmp(type, "raw_string_literal") == 0) {
      r = REGION_STRING;
      break;
    }
  }
  free(up);
  return r;
}

/* The line around offset x: [*ls, *le) without its line break, and its
 * content [*cs, *ce) without indentation and trailing blanks. */
static void line_around(const char *t, size_t len, size_t x, size_t *ls, size_t *le, size_t *cs,
                        size_t *ce) {
  size_t a = x, b = x;
  while (a > 0 && t[a - 1] != '\n') a--;
  while (b < len && t[b] != '\n') b++;
  *ls = a;
  *le = b;
  while (a < b && (t[a] == ' ' || t[a] == '\t')) a++;
  while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t' || t[b - 1] == '\r')) b--;
  *cs = a;
  *ce = b;
}

/* Only blanks between the line's start and a, and between b and its end? */
static bool alone_on_lines(const char *t, size_t len, size_t a, size_t b) {
  size_t ls, le, cs, ce;
  line_around(t, len, a, &ls, &le, &cs, &ce);
  if (cs != a) return false;
  line_around(t, len, b > a ? b - 1 : b, &ls, &le, &cs, &ce);
  return ce <= b;
}

/* ---- Python `...` bodies ---------------------------------------------------
 * Legitimate code, not a hole, unless the user asks (--python-ellipsis), and
 * even then never where `...` is the body on purpose: a Protocol or an
 * abstract class (ABC, ABCMeta), an @overload or an @abstractmethod, or a
 * stub file (.pyi). */

/* Does any identifier under n read one of names (NULL-terminated)? (A
 * cursor's walk: a decorator nested 10^5 levels deep would overflow the
 * stack of a recursive one.) */
typedef struct names_walk {
  const char *text;
  const char *const *names;
  bool found;
} names_walk;

static void visit_identifier(void *user, TSNode n) {
  names_walk *w = user;
  if (w->found || strcmp(ts_node_type(n), "identifier") != 0) return;
  size_t a = ts_node_start_byte(n), l = ts_node_end_byte(n) - a;
  for (int i = 0; w->names[i]; i++)
    if (strlen(w->names[i]) == l && memcmp(w->text + a, w->names[i], l) == 0) w->found = true;
}

static bool names_any(const char *t, TSNode n, const char *const *names) {
  names_walk w = {t, names, false};
  sc_edit__visit_node(n, ts_node_start_byte(n), ts_node_end_byte(n), visit_identifier, &w);
  return w.found;
}

static bool ellipsis_is_hole(const char *t, TSNode e) {
  static const char *const k_decorators[] = {"overload", "abstractmethod", "abstractproperty",
                                             "abstractclassmethod", "abstractstaticmethod",
                                             NULL};
  static const char *const k_bases[] = {"Protocol", "ABC", "ABCMeta", NULL};
  TSNode stmt = sc_syntax_parent(e);
  if (ts_node_is_null(stmt) || strcmp(ts_node_type(stmt), "expression_statement") != 0 ||
      ts_node_named_child_count(stmt) != 1)
    return false;
  TSNode block = sc_syntax_parent(stmt);
  TSNode fn = ts_node_is_null(block) ? block : sc_syntax_parent(block);
  if (ts_node_is_null(fn) || strcmp(ts_node_type(block), "block") != 0 ||
      strcmp(ts_node_type(fn), "function_definition") != 0)
    return false;
  /* The body is `...`, after at most a docstring (comments aside). */
  for (uint32_t i = 0; i < ts_node_named_child_count(block); i++) {
    TSNode c = ts_node_named_child(block, i);
    const char *type = ts_node_type(c);
    if (ts_node_eq(c, stmt) || strcmp(type, "comment") == 0) continue;
    if (!(i == 0 && strcmp(type, "expression_statement") == 0 &&
          ts_node_named_child_count(c) == 1 &&
          strcmp(ts_node_type(ts_node_named_child(c, 0)), "string") == 0))
      return false;
  }
  TSNode *up;
  size_t k = sc_syntax_ancestry(fn, &up);
  bool hole = k > 0;
  for (size_t u = 0; u < k && hole; u++) {
    TSNode n = up[u];
    const char *type = ts_node_type(n);
    if (strcmp(type, "decorated_definition") == 0) {
      for (uint32_t i = 0; i < ts_node_named_child_count(n) && hole; i++) {
        TSNode d = ts_node_named_child(n, i);
        if (strcmp(ts_node_type(d), "decorator") == 0 && names_any(t, d, k_decorators))
          hole = false;
      }
    } else if (strcmp(type, "class_definition") == 0) {
      TSNode bases = ts_node_child_by_field_name(n, "superclasses", 12);
      if (!ts_node_is_null(bases) && names_any(t, bases, k_bases)) hole = false;
    }
  }
  free(up);
  return hole;
}

static bool is_stub(const sc_edit_doc *doc) {
  size_t n = doc->path ? strlen(doc->path) : 0;
  return n >= 4 && strcmp(doc->path + n - 4, ".pyi") == 0;
}

typedef struct ellipsis_walk {
  const char *t;
  size_t len;
  site_list *l;
  bool ok;
} ellipsis_walk;

static void visit_ellipsis(void *user, TSNode n) {
  ellipsis_walk *w = user;
  size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
  if (strcmp(ts_node_type(n), "ellipsis") == 0 && alone_on_lines(w->t, w->len, a, b) &&
      ellipsis_is_hole(w->t, n))
    w->ok = w->ok && push(w->l, SC_EDIT_HOLE, a, b, false);
}

/* Python `...` lines in [from, to] that are holes, onto l. */
static bool find_ellipses(const sc_edit_doc *doc, size_t from, size_t to, site_list *l) {
  ellipsis_walk w = {NULL, 0, l, true};
  w.t = sc_edit_doc_text(doc, &w.len);
  sc_edit__visit(doc->tree, from, to, visit_ellipsis, &w);
  return w.ok;
}

static int cmp_start(const void *x, const void *y) {
  const sc_edit_site *a = x, *b = y;
  return a->start < b->start ? -1 : a->start > b->start;
}

/* Holes: the marker in code or in a comment, never in a string. A comment
 * holding it is the hole (when it is alone on its line(s), a fill may run
 * over several lines; a comment after code on its line takes one line; a
 * comment over several lines is a hole only when it holds nothing but the
 * marker, so that prose that mentions it is left alone). In code, a line
 * that is nothing but the marker is replaced whole; elsewhere the marker
 * itself is an inline hole. */
sc_status sc_edit_find_holes(const sc_edit_doc *doc, const sc_edit_hole_options *o, size_t from,
                             size_t to, sc_edit_site **out, size_t *n, sc_error *err) {
  *out = NULL;
  *n = 0;
  size_t len;
  const char *t = sc_edit_doc_text(doc, &len);
  const char *marker = o && o->marker ? o->marker : SC_EDIT_DEFAULT_MARKER;
  size_t ml = strlen(marker);
  SC_CHECK(ml > 0, err, SC_ERR_INVALID, "the hole marker is empty");
  if (from > len) from = len;
  if (to > len) to = len;
  size_t ls, le, cs, ce;
  line_around(t, len, from, &ls, &le, &cs, &ce);
  from = ls;
  line_around(t, len, to, &ls, &le, &cs, &ce);
  to = le;
  site_list l = {0};
  bool ok = true;
  size_t covered = 0; /* the end of the last hole: a marker before it is in it */
  for (size_t q = from; ok && q + ml <= to;) {
    const char *m = memmem(t + q, to - q, marker, ml);
    if (!m) break;
    size_t ma = (size_t)(m - t), mb = ma + ml;
    q = mb;
    if (ma < covered) continue;
    TSNode cm;
    region rg = region_of(doc->tree, ma, mb, &cm);
    if (rg == REGION_STRING) continue;
    line_around(t, len, ma, &ls, &le, &cs, &ce);
    if (rg == REGION_COMMENT) {
      size_t a = ts_node_start_byte(cm), b = ts_node_end_byte(cm);
      while (b > a && strchr(" \t\r\n", t[b - 1])) b--;
      bool multi = memchr(t + a, '\n', b - a) != NULL;
      if (multi && !comment_only(t, a, b, marker)) continue;
      ok = push(&l, SC_EDIT_HOLE, a, b, !multi && !alone_on_lines(t, len, a, b));
      covered = b;
    } else if (comment_only(t, cs, ce, marker)) {
      ok = push(&l, SC_EDIT_HOLE, cs, ce, false);
      covered = ce;
    } else {
      ok = push(&l, SC_EDIT_HOLE, ma, mb, true);
      covered = mb;
    }
  }
  if (ok && o && o->python_ellipsis && strcmp(doc->lang, "python") == 0 && !is_stub(doc)) {
    ok = find_ellipses(doc, from, to, &l);
    if (l.n > 1) qsort(l.v, l.n, sizeof *l.v, cmp_start);
  }
  if (!ok) {
    free(l.v);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  *out = l.v;
  *n = l.n;
  return SC_OK;
}

/* ---- diagnostics ------------------------------------------------------------- */

/* Statement-like node types across the grammars: *_statement,
 * *_declaration, *_definition; ERROR is handled apart. */
static bool is_statement(const char *type) {
  size_t n = strlen(type);
  return (n >= 9 && strcmp(type + n - 9, "statement") == 0) ||
         (n >= 11 && strcmp(type + n - 11, "declaration") == 0) ||
         (n >= 10 && strcmp(type + n - 10, "definition") == 0);
}

/* Does n hold a statement-like node below it? Then it is compound: its
 * inner statements are not the diagnostic's business. */
typedef struct inner_walk {
  TSNode top;
  bool found;
} inner_walk;

static void visit_statement(void *user, TSNode n) {
  inner_walk *w = user;
  if (!ts_node_eq(n, w->top) && ts_node_is_named(n) && is_statement(ts_node_type(n)))
    w->found = true;
}

static bool has_inner_statement(TSNode n) {
  inner_walk w = {n, false};
  sc_edit__visit_node(n, ts_node_start_byte(n), ts_node_end_byte(n), visit_statement, &w);
  return w.found;
}

static bool is_statement(const char *type);

/* Does the ERROR [a, b) of tree lie in a statement that began before ls
 * (the start of its line)? Then the line before ran on into this one:
 * tree-sitter read `f(x)\n  int *p = ...` as one declaration with the
 * type name an ERROR. */
static bool runs_on_into(const sc_syntax_tree *tree, size_t a, size_t b, size_t ls) {
  TSNode *up;
  size_t k = sc_syntax_ancestry_at(tree, a, b, &up);
  bool runs_on = false;
  for (size_t i = 0; i < k; i++) {
    const char *type = ts_node_type(up[i]);
    if (is_statement(type)) {
      runs_on = ts_node_start_byte(up[i]) < ls;
      break;
    }
    if (has(type, "compound") || has(type, "block")) break;
  }
  free(up);
  return runs_on;
}

/* Where the error a diagnostic at x reports really is. A compiler reports
 * a missing token at the token after it (gcc: "expected ';' before 'int'"
 * at the start of the next line); when x is at the start of its line and
 * tree-sitter finds the previous line's end broken (a MISSING node at it,
 * an ERROR that runs through it, or one at x in a statement that began on
 * an earlier line), the diagnostic belongs to that line. */
static size_t anchor_of(const sc_edit_doc *doc, size_t x) {
  size_t len, ls, le, cs, ce;
  const char *t = sc_edit_doc_text(doc, &len);
  line_around(t, len, x, &ls, &le, &cs, &ce);
  if (x > cs || ls == 0) return x;
  /* The previous non-blank line's content [pcs, pce). */
  size_t p = ls - 1, pls, ple, pcs, pce;
  for (;;) {
    line_around(t, len, p, &pls, &ple, &pcs, &pce);
    if (pce > pcs || pls == 0) break;
    p = pls - 1;
  }
  if (pce == pcs) return x;
  sc_syntax_error *errs = NULL;
  size_t n = 0;
  if (sc_syntax_tree_errors(doc->tree, &errs, &n, NULL) != SC_OK) return x;
  bool broken = false;
  for (size_t i = 0; i < n && !broken; i++) {
    size_t a = errs[i].start_byte, b = errs[i].end_byte;
    broken = errs[i].missing ? a >= pce && a <= cs
                             : (a < pce && b >= pce && a >= pcs) ||
                                   (a == cs && runs_on_into(doc->tree, a, b, ls));
  }
  free(errs);
  return broken ? pce : x;
}

/* The length of the quote at p: ' ` " (1), or UTF-8 ‘ “ opening and ’ ”
 * closing (3); 0 when p holds none. */
static size_t quote_at(const char *p, bool closing) {
  if (*p == '\'' || *p == '`' || *p == '"') return 1;
  const char *single = closing ? "\xe2\x80\x99" : "\xe2\x80\x98";
  const char *twice = closing ? "\xe2\x80\x9d" : "\xe2\x80\x9c";
  return strncmp(p, single, 3) == 0 || strncmp(p, twice, 3) == 0 ? 3 : 0;
}

/* A quoted token at p, 1-7 printable bytes, no blank. Its length, *tok
 * and *end (past the closing quote) set; 0 when there is none. */
static size_t quoted_token(const char *p, const char **tok, const char **end) {
  size_t ol = quote_at(p, false);
  if (!ol) return 0;
  const char *t = p + ol;
  size_t n = 0;
  while (n < 8 && t[n] > ' ' && t[n] < 0x7f && !(n > 0 && quote_at(t + n, true))) n++;
  size_t cl = quote_at(t + n, true);
  if (n == 0 || n > 7 || !cl) return 0;
  *tok = t;
  *end = t + n + cl;
  return n;
}

/* Where a message puts its expected token. */
typedef enum expect_where {
  EXPECT_AT,          /* at the diagnostic's position */
  EXPECT_AFTER_PREV,  /* gcc's "expected ';' before 'old'": after the token before it */
  EXPECT_UNCLOSED,    /* Python's "'(' was never closed": where the opener's line ends */
} expect_where;

/* What a message says is expected: one token, or a choice of them (n > 1),
 * and where it goes; open when the choice also names a kind of thing
 * (rustc's "lifetime, or path", gcc's "identifier"), so that what was
 * lost may be none of the tokens. */
typedef struct expectation {
  expect_where where;
  int n;
  bool open;
  char tok[SC_EDIT_MAX_CHOICES][8];
} expectation;

static void add_token(expectation *e, const char *tok, size_t n) {
  for (int i = 0; i < e->n; i++)
    if (strlen(e->tok[i]) == n && memcmp(e->tok[i], tok, n) == 0) return;
  if (e->n == SC_EDIT_MAX_CHOICES || n >= sizeof e->tok[0]) {
    e->open = true; /* more than a site holds: the list is not all tried */
    return;
  }
  memcpy(e->tok[e->n], tok, n);
  e->tok[e->n++][n] = '\0';
}

/* A list of alternatives at p appended to e: `A`, `B`, or `C` (rustc,
 * after "one of "), 'A' or 'B' (gcc, javac). Quoted tokens are tokens;
 * rustc's "an operator" stands for its binary operators; any other
 * unquoted item ("identifier", "path") makes the list open. Returns the
 * end of the list (before ", found"); p when it starts with no token. */
static const char *token_list(const char *p, expectation *e) {
  static const char *const k_operators[] = {"+",  "-",  "*",  "/",  "%",  "==", "!=",
                                            "<",  ">",  "<=", ">=", "&&", "||", "&",
                                            "|",  "^",  "<<", ">>"};
  const char *at = p;
  for (bool first = true;; first = false) {
    const char *tok, *end;
    size_t n = quoted_token(at, &tok, &end);
    if (n) {
      add_token(e, tok, n);
      at = end;
    } else if (first) {
      return p;
    } else {
      end = at;
      while (*end && *end != ',' && strncmp(end, " or ", 4) != 0) end++;
      if (end - at == 11 && strncmp(at, "an operator", 11) == 0)
        for (size_t i = 0; i < sizeof k_operators / sizeof k_operators[0]; i++)
          add_token(e, k_operators[i], strlen(k_operators[i]));
      else
        e->open = true;
      at = end;
    }
    if (strncmp(at, ", or ", 5) == 0) at += 5;
    else if (strncmp(at, " or ", 4) == 0) at += 4;
    else if (strncmp(at, ", ", 2) == 0 && strncmp(at + 2, "found ", 6) != 0) at += 2;
    else return at;
  }
}

/* rust-analyzer names a token by its syntax kind ("Syntax Error: expected
 * SEMICOLON", "expected R_PAREN"; SEMI before 2021): the token at p, its
 * text into e; the name's length, 0 when p holds none of these. */
static size_t kind_name(const char *p, expectation *e) {
  static const struct {
    const char *kind, *tok;
  } k_kinds[] = {{"SEMICOLON", ";"}, {"SEMI", ";"},        {"COMMA", ","},      {"R_PAREN", ")"},
                 {"R_BRACK", "]"},   {"R_CURLY", "}"},     {"L_PAREN", "("},    {"L_BRACK", "["},
                 {"L_CURLY", "{"},   {"COLON2", "::"},     {"COLON", ":"},      {"EQ", "="},
                 {"FAT_ARROW", "=>"}, {"THIN_ARROW", "->"}, {"R_ANGLE", ">"},   {"L_ANGLE", "<"}};
  for (size_t i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++) {
    size_t n = strlen(k_kinds[i].kind);
    if (strncmp(p, k_kinds[i].kind, n) == 0 && !sc_edit__word_byte(p[n])) {
      add_token(e, k_kinds[i].tok, strlen(k_kinds[i].tok));
      return n;
    }
  }
  return 0;
}

/* The token msg says is expected, or the tokens it offers as a choice:
 * `expected ';'` (gcc in the C locale, clang, clangd's `Expected ';' after
 * expression`, Python's `expected ':'`, rustc's `expected `;``, pyright's
 * `Expected ":"`), gcc's `expected ‘;’` (UTF-8 quotes), TypeScript's and
 * javac's `';' expected`, the closer of Python's `'(' was never closed`;
 * as a choice rustc's `expected one of `)`, `,`, or an operator, found
 * `x``, gcc's `expected ‘,’ or ‘;’ before ‘x’`, javac's `')' or ','
 * expected`; rust-analyzer's `expected SEMICOLON`. Nothing when the
 * message names a kind of thing (`expected identifier`) or says the token
 * is unexpected: the fix is then the model's to find. A token expected
 * "before" another, or where another was "found", goes after the token
 * before that one. */
static expectation expected_tokens(const char *msg) {
  expectation e = {EXPECT_AT, 0, false, {{0}}};
  if (!msg) return e;
  const char *end = NULL;
  for (const char *p = msg; !e.n && (p = strcasestr(p, "expected ")) != NULL; p++) {
    if (p == msg || !sc_edit__word_byte(p[-1])) { /* not "unexpected" */
      const char *q = p + strlen("expected ");
      if (strncmp(q, "one of ", 7) == 0) q += 7;
      end = token_list(q, &e);
      if (!e.n && kind_name(q, &e)) end = ""; /* rust-analyzer: one token, where it says */
    }
  }
  /* Python's "'(' was never closed" (also after "SyntaxError: ", as flake8
   * and ruff quote it), pyright's "\"(\" was not closed". */
  for (const char *p = msg; !e.n && (p = strpbrk(p, "'\"`")) != NULL; p++) {
    const char *t2, *e2;
    if (quoted_token(p, &t2, &e2) == 1 && strchr("([{", *t2) && *t2 &&
        (strncmp(e2, " was never closed", 17) == 0 || strncmp(e2, " was not closed", 15) == 0)) {
      e.tok[0][0] = *t2 == '(' ? ')' : *t2 == '[' ? ']' : '}';
      e.n = 1;
      e.where = EXPECT_UNCLOSED;
      return e;
    }
  }
  if (!e.n) {
    end = token_list(msg, &e); /* TypeScript, javac: "';' expected." */
    if (e.n && strncasecmp(end, " expected", 9) != 0) e.n = 0;
  }
  if (!e.n)
    e.open = false;
  else if (strncmp(end, " before ", 8) == 0 || strncmp(end, ", found ", 8) == 0)
    e.where = EXPECT_AFTER_PREV;
  return e;
}

/* The expectation into a site: one token as expect, a choice as choices. */
static void put_expectation(sc_edit_site *s, const expectation *e) {
  if (e->n == 1 && !e->open) {
    memcpy(s->expect, e->tok[0], sizeof s->expect);
    return;
  }
  s->n_choices = e->n;
  s->choices_open = e->open;
  memcpy(s->choices, e->tok, sizeof s->choices);
}

/* The end of the last token before x: blank space and comments skipped.
 * A compiler's fix-it puts a missing `;` there (clang's "insert ';'"
 * goes right after the previous token), while gcc reports it at the next
 * token, which may be on the next line: `lua_lock(L)` then `old = ...`. */
static size_t token_end_before(const sc_edit_doc *doc, size_t x) {
  size_t len;
  const char *t = sc_edit_doc_text(doc, &len);
  for (int guard = 0; guard < 64; guard++) {
    while (x > 0 && strchr(" \t\r\n\f\v", t[x - 1])) x--;
    if (x == 0) return x;
    TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(doc->tree),
                                                 (uint32_t)(x - 1), (uint32_t)(x - 1));
    if (ts_node_is_null(n) || !has(ts_node_type(n), "comment") || ts_node_end_byte(n) != x)
      return x;
    x = ts_node_start_byte(n);
  }
  return x;
}

/* Where an unclosed bracket at x should be closed: after the last token
 * of its line, or of the lines after it that are indented deeper (its
 * continuation), at most 5 lines in all. */
static size_t unclosed_end(const sc_edit_doc *doc, size_t x) {
  size_t len, ls, le, cs, ce;
  const char *t = sc_edit_doc_text(doc, &len);
  line_around(t, len, x, &ls, &le, &cs, &ce);
  size_t indent = cs - ls, end = ce;
  for (int lines = 1; lines < 5 && le < len;) {
    size_t nls, nle, ncs, nce;
    line_around(t, len, le + 1, &nls, &nle, &ncs, &nce);
    if (nce > ncs) {
      if (ncs - nls <= indent) break;
      end = nce;
      lines++;
    }
    le = nle;
  }
  return token_end_before(doc, end);
}

/* The site of a diagnostic: the statement at its position (the line's,
 * when the position is at the line's end) when that statement is simple (no
 * statements inside it) and at most 5 lines; else the position's line. From
 * the position to the end when the position is inside. A message about
 * indentation takes the whole line, indentation included, since the fix is
 * there. Never a trailing line break; always holding the position. */
sc_status sc_edit_site_for_diagnostic(const sc_edit_doc *doc, size_t offset, const char *message,
                                      sc_edit_site *out, sc_error *err) {
  size_t len;
  const char *t = sc_edit_doc_text(doc, &len);
  SC_CHECK(offset <= len, err, SC_ERR_INVALID, "offset %zu is past the end (%zu bytes)", offset,
           len);
  bool indent = message && strcasestr(message, "indent") != NULL;
  expectation ex = expected_tokens(message);
  expect_where where = ex.where;
  size_t x = indent                          ? offset
             : where == EXPECT_AFTER_PREV    ? token_end_before(doc, offset)
                                             : anchor_of(doc, offset),
         ls, le, cs, ce;
  /* A closer or separator reported at the next token on its line (tsc's
   * "')' expected" at the `{` of `if (a {`, "',' expected" at `b` in
   * `f(a b)`) goes against the token before it, as it is written:
   * `if (a) {`, not `if (a ){`. */
  if (where == EXPECT_AT && ex.n == 1 && !ex.open && strchr(");],", ex.tok[0][0]) &&
      !ex.tok[0][1] && x == offset && x < len && !strchr(" \t\r\n", t[x])) {
    size_t b = x;
    while (b > 0 && (t[b - 1] == ' ' || t[b - 1] == '\t')) b--;
    if (b < x && b > 0 && t[b - 1] != '\n') x = b;
  }
  /* A token lost between two blanks left both ("own  e"): it goes between
   * them, as it was. */
  if (where == EXPECT_AFTER_PREV && x + 1 < len && x < offset &&
      (t[x] == ' ' || t[x] == '\t') && (t[x + 1] == ' ' || t[x + 1] == '\t'))
    x++;
  bool moved = x != offset; /* attributed to the end of the line before */
  line_around(t, len, x, &ls, &le, &cs, &ce);
  size_t s0 = x < cs ? x : cs, s1 = x > ce ? x : ce;
  if (indent) {
    *out = (sc_edit_site){.kind = SC_EDIT_DIAGNOSTIC, .start = ls, .end = s1, .anchor = offset};
    return SC_OK;
  }
  if (where == EXPECT_UNCLOSED) {
    /* From the opener to where its closer goes, the site's anchor. */
    size_t close = unclosed_end(doc, x);
    if (close < x) close = x;
    line_around(t, len, close, &ls, &le, &cs, &ce);
    *out = (sc_edit_site){
        .kind = SC_EDIT_DIAGNOSTIC, .start = x, .end = ce > close ? ce : close, .anchor = close};
    put_expectation(out, &ex);
    return SC_OK;
  }
  /* The node at x; at the end of the line, the line's last token. */
  size_t at = x >= ce && ce > cs ? ce - 1 : x;
  TSNode *up;
  size_t k = sc_syntax_ancestry_at(doc->tree, at, at, &up);
  for (size_t u = 0; u < k; u++) {
    TSNode n = up[u];
    const char *type = ts_node_type(n);
    /* Broken, or a block of statements: the line is all we can trust. */
    if (strcmp(type, "ERROR") == 0 || has(type, "compound") || has(type, "block")) break;
    if (!is_statement(type)) continue;
    size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    while (b > a && strchr(" \t\r\n", t[b - 1])) b--;
    int lines = 0;
    for (size_t i = a; i < b; i++) lines += t[i] == '\n';
    if (lines <= 4 && a <= x && x <= b && !has_inner_statement(n)) {
      s0 = a;
      /* A statement the broken line ran on into ends at that line: the
       * next line's code is another statement, not the diagnostic's. */
      s1 = moved && b > le ? x : b;
    }
    break;
  }
  free(up);
  /* From the diagnostic to the end of its statement when it is inside it
   * (the part most likely wrong), else the whole statement. */
  if (x > s0 && x < s1) s0 = x;
  *out = (sc_edit_site){.kind = SC_EDIT_DIAGNOSTIC, .start = s0, .end = s1, .anchor = x};
  put_expectation(out, &ex);
  return SC_OK;
}

sc_status sc_edit_find_query(const sc_edit_doc *doc, const char *query, const char *capture,
                             sc_edit_site **out, size_t *n, sc_error *err) {
  *out = NULL;
  *n = 0;
  uint32_t off;
  TSQueryError qe;
  TSQuery *q = ts_query_new(sc_context_ts_language(doc->lang), query, (uint32_t)strlen(query),
                            &off, &qe);
  SC_CHECK(q, err, SC_ERR_INVALID, "the query does not compile for %s (error %d at byte %u)",
           doc->lang, (int)qe, off);
  uint32_t cap_idx = UINT32_MAX;
  for (uint32_t i = 0; i < ts_query_capture_count(q); i++) {
    uint32_t nl;
    const char *nm = ts_query_capture_name_for_id(q, i, &nl);
    if (strlen(capture) == nl && memcmp(nm, capture, nl) == 0) cap_idx = i;
  }
  if (cap_idx == UINT32_MAX) {
    ts_query_delete(q);
    return sc_error_set(err, SC_ERR_INVALID, "the query has no capture @%s", capture);
  }
  site_list l = {0};
  bool ok = true;
  TSQueryCursor *cur = sc_syntax_query_cursor_new();
  sc_syntax_budget budget = {0};
  sc_syntax_query_exec(cur, q, sc_syntax_tree_root(doc->tree), &budget);
  TSQueryMatch m;
  uint32_t ci;
  while (ok && ts_query_cursor_next_capture(cur, &m, &ci)) {
    const TSQueryCapture *c = &m.captures[ci];
    if (c->index == cap_idx)
      ok = push(&l, SC_EDIT_QUERY, ts_node_start_byte(c->node), ts_node_end_byte(c->node), false);
  }
  ts_query_cursor_delete(cur);
  ts_query_delete(q);
  if (!ok || budget.halted) {
    free(l.v);
    if (!ok) return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    return sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "the query ran past its time budget on this file (%zu sites found so "
                        "far); none are used",
                        l.n);
  }
  *out = l.v;
  *n = l.n;
  return SC_OK;
}

bool sc_edit_site_block_at(const sc_edit_doc *doc, size_t cursor, sc_edit_site *out) {
  sc_completion_plan plan;
  if (sc_completion_plan_at(doc->tree, cursor, &plan, NULL) != SC_OK ||
      (plan.kind != SC_COMPLETION_BLOCK && plan.kind != SC_COMPLETION_FUNCTION_BODY))
    return false;
  *out = (sc_edit_site){.kind = SC_EDIT_BLOCK, .start = cursor, .end = cursor, .anchor = cursor};
  return true;
}

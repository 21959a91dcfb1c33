/* definitions.c — what a file defines and imports, from its syntax tree:
 * the definitions our queries find (grammars/queries/<lang>/definitions.scm),
 * each with its kind, its container (@scope) and a compact form (its head:
 * a function's signature, a declaration's lines, a container's opening
 * line), and the modules it imports as written.
 *
 * The compact form is what retrieval offers first: the one-line API a
 * caller needs (a prototype, a field, a method signature) costs a few
 * tokens, where a body costs hundreds. Heads are whole lines, so that they
 * read like the source. */
#define _DEFAULT_SOURCE /* strndup */
#include "workspace_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_kind_names[WK_KIND_COUNT] = {
    "function", "method", "class", "type", "interface",
    "field",    "macro",  "constant", "variable", "module"};

/* Preference when two patterns find the same name on the same line (a
 * TypeScript arrow is both a function and a constant): the higher wins. */
static const int k_kind_rank[WK_KIND_COUNT] = {
    [WK_FUNCTION] = 8, [WK_METHOD] = 9, [WK_CLASS] = 7, [WK_TYPE] = 5, [WK_INTERFACE] = 6,
    [WK_FIELD] = 4,    [WK_MACRO] = 3,  [WK_CONSTANT] = 2, [WK_VARIABLE] = 1, [WK_MODULE] = 0};

const char *ws_kind_name(int kind) {
  return kind >= 0 && kind < WK_KIND_COUNT ? k_kind_names[kind] : "";
}

static int kind_from_capture(const char *cn, uint32_t cl) {
  if (cl <= 11 || strncmp(cn, "definition.", 11) != 0) return -1;
  for (int k = 0; k < WK_KIND_COUNT; k++)
    if (strlen(k_kind_names[k]) == cl - 11 && memcmp(cn + 11, k_kind_names[k], cl - 11) == 0)
      return k;
  return -1;
}

uint32_t ws_pool_add(ws_file *f, const char *s, size_t n) {
  if (f->pool_len + n + 1 > UINT32_MAX - 1) return WS_NONE;
  if (f->pool_len + n + 1 > f->pool_cap) {
    size_t cap = f->pool_cap ? f->pool_cap * 2 : 256;
    while (cap < f->pool_len + n + 1) cap *= 2;
    char *np = realloc(f->pool, cap);
    if (!np) return WS_NONE;
    f->pool = np;
    f->pool_cap = cap;
  }
  uint32_t off = (uint32_t)f->pool_len;
  memcpy(f->pool + off, s, n);
  f->pool[off + n] = '\0';
  f->pool_len += n + 1;
  return off;
}

/* ---- names ------------------------------------------------------------------ */

/* The identifier a C/C++ declarator declares: down the chain of pointer,
 * array, parenthesized, init, attributed and function declarators.
 * *is_func: a function declarator was met with no pointer below it (a
 * prototype, not a function pointer). */
static TSNode declarator_name(TSNode n, bool *is_func) {
  bool func = false, pointer_below = false;
  for (int guard = 0; guard < 32 && !ts_node_is_null(n); guard++) {
    const char *t = ts_node_type(n);
    if (strcmp(t, "identifier") == 0 || strcmp(t, "field_identifier") == 0 ||
        strcmp(t, "type_identifier") == 0 || strcmp(t, "operator_name") == 0 ||
        strcmp(t, "destructor_name") == 0 || strcmp(t, "primitive_type") == 0) {
      *is_func = func && !pointer_below;
      return n;
    }
    if (strcmp(t, "qualified_identifier") == 0) {
      n = ts_node_child_by_field_name(n, "name", 4);
      continue;
    }
    if (strcmp(t, "function_declarator") == 0) func = true, pointer_below = false;
    else if (func && (strcmp(t, "pointer_declarator") == 0 ||
                      strcmp(t, "parenthesized_declarator") == 0))
      pointer_below = true;
    TSNode d = ts_node_child_by_field_name(n, "declarator", 10);
    if (ts_node_is_null(d)) d = ts_node_named_child(n, 0);
    n = d;
  }
  TSNode none;
  memset(&none, 0, sizeof none);
  return none;
}

/* A declaration inside a function body is a local, not an API. */
static bool inside_function(TSNode n) {
  TSNode *up;
  size_t k = sc_syntax_ancestry(n, &up);
  bool inside = false;
  for (size_t i = 1; i < k && !inside; i++) {
    const char *t = ts_node_type(up[i]);
    inside = strcmp(t, "compound_statement") == 0 || strcmp(t, "function_definition") == 0;
  }
  free(up);
  return inside;
}

/* Text predicates (#eq?, #not-eq?) are the caller's job in tree-sitter:
 * checked here against the match's captures. */
static bool predicates_hold(const TSQuery *q, const TSQueryMatch *m, const char *text) {
  uint32_t steps = 0;
  const TSQueryPredicateStep *s = ts_query_predicates_for_pattern(q, m->pattern_index, &steps);
  for (uint32_t i = 0; i < steps;) {
    uint32_t end = i;
    while (end < steps && s[end].type != TSQueryPredicateStepTypeDone) end++;
    if (end - i == 3 && s[i].type == TSQueryPredicateStepTypeString &&
        s[i + 1].type == TSQueryPredicateStepTypeCapture) {
      uint32_t ol;
      const char *op = ts_query_string_value_for_id(q, s[i].value_id, &ol);
      bool neg = ol == 7 && memcmp(op, "not-eq?", 7) == 0;
      bool eq = ol == 3 && memcmp(op, "eq?", 3) == 0;
      if (eq || neg) {
        const char *want = NULL;
        uint32_t wl = 0;
        TSNode other;
        bool have_other = false;
        if (s[i + 2].type == TSQueryPredicateStepTypeString)
          want = ts_query_string_value_for_id(q, s[i + 2].value_id, &wl);
        for (uint16_t c = 0; c < m->capture_count; c++)
          if (s[i + 2].type == TSQueryPredicateStepTypeCapture &&
              m->captures[c].index == s[i + 2].value_id)
            other = m->captures[c].node, have_other = true;
        for (uint16_t c = 0; c < m->capture_count; c++) {
          if (m->captures[c].index != s[i + 1].value_id) continue;
          TSNode n = m->captures[c].node;
          uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
          bool same;
          if (have_other) {
            uint32_t x = ts_node_start_byte(other), y = ts_node_end_byte(other);
            same = b - a == y - x && memcmp(text + a, text + x, b - a) == 0;
          } else {
            same = want && b - a == wl && memcmp(text + a, want, wl) == 0;
          }
          if (same == neg) return false;
        }
      }
    }
    i = end + 1;
  }
  return true;
}

/* ---- heads ------------------------------------------------------------------ */

/* Where a definition's body begins, or a null node: a function's block, a
 * class's or struct's member list (through a decorated definition, a
 * typedef, a Go type spec, an arrow bound to a name). */
static TSNode body_of(TSNode n) {
  static const char *const through[] = {"definition", "type", "value"};
  for (int depth = 0; depth < 4 && !ts_node_is_null(n); depth++) {
    const char *t = ts_node_type(n);
    if (strcmp(t, "struct_type") == 0 || strcmp(t, "interface_type") == 0 ||
        strcmp(t, "object_type") == 0)
      return n;
    TSNode b = ts_node_child_by_field_name(n, "body", 4);
    if (!ts_node_is_null(b)) return b;
    TSNode next;
    memset(&next, 0, sizeof next);
    for (size_t k = 0; k < sizeof through / sizeof through[0] && ts_node_is_null(next); k++)
      next = ts_node_child_by_field_name(n, through[k], (uint32_t)strlen(through[k]));
    n = next;
  }
  TSNode none;
  memset(&none, 0, sizeof none);
  return none;
}

static size_t line_begin(const char *text, size_t off) {
  while (off > 0 && text[off - 1] != '\n') off--;
  return off;
}

static size_t line_end(const char *text, size_t len, size_t off) {
  const char *nl = memchr(text + off, '\n', len - off);
  return nl ? (size_t)(nl - text) : len;
}

/* Lines [first, last] (0-based rows, first given by its byte offset a)
 * into the pool, at most WS_HEAD_LINES lines and WS_HEAD_BYTES bytes
 * (cut at a line end; the first line alone may be cut mid-line). */
static uint32_t add_lines(ws_file *f, const char *text, size_t len, size_t a, uint32_t first,
                          uint32_t last, uint32_t *n_lines) {
  size_t s = line_begin(text, a), e = s;
  uint32_t n = 0;
  for (uint32_t row = first; row <= last && n < WS_HEAD_LINES; row++) {
    size_t le = line_end(text, len, e);
    if (n > 0 && le - s > WS_HEAD_BYTES) break;
    e = le;
    n++;
    if (e >= len) break;
    if (row < last) e++; /* past the newline, onto the next line */
  }
  if (e > s && text[e - 1] == '\n') e--;
  if (e - s > WS_HEAD_BYTES) e = s + WS_HEAD_BYTES;
  while (e > s && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r')) e--;
  *n_lines = n ? n : 1;
  return ws_pool_add(f, text + s, e - s);
}

/* The head of def d (node n): a function's lines before its body (with the
 * body's first line when the body starts on the signature's line), a
 * container's lines up to its member list, anything else whole. */
static void set_head(ws_file *f, ws_def *d, TSNode n, const char *text, size_t len,
                     bool container) {
  uint32_t last = d->end_line;
  bool has_body = d->kind == WK_FUNCTION || d->kind == WK_METHOD || container;
  if (has_body && !(d->flags & WD_DECL)) {
    TSNode b = body_of(n);
    if (!ts_node_is_null(b) && ts_node_start_byte(b) > d->start_byte) {
      size_t bs = ts_node_start_byte(b);
      uint32_t brow = ts_node_start_point(b).row;
      size_t ls = line_begin(text, bs);
      bool first_on_line = true;
      for (size_t i = ls; i < bs; i++)
        if (text[i] != ' ' && text[i] != '\t') first_on_line = false;
      last = first_on_line && brow > d->start_line ? brow - 1 : brow;
    } else if (container) {
      last = d->start_line;
    }
  }
  if (last < d->start_line) last = d->start_line;
  if (last > d->end_line) last = d->end_line;
  d->head = add_lines(f, text, len, d->start_byte, d->start_line, last, &d->head_lines);
  d->tail = WS_NONE;
  if (container && d->end_line > last) {
    /* The closing line ("}", "} jv;", "};") when short. */
    size_t e = d->end_byte, s = line_begin(text, e > 0 ? e - 1 : 0);
    size_t le = line_end(text, len, s);
    size_t k = s;
    while (k < le && (text[k] == ' ' || text[k] == '\t')) k++;
    if (k < le && (text[k] == '}' || text[k] == ')') && le - s <= 40)
      d->tail = ws_pool_add(f, text + s, le - s);
  }
}

/* ---- the index of one file ---------------------------------------------------------- */

typedef struct pending {
  ws_def d;
  TSNode node;
} pending;

static int cmp_pending(const void *a, const void *b) {
  const pending *x = a, *y = b;
  if (x->d.start_byte != y->d.start_byte) return x->d.start_byte < y->d.start_byte ? -1 : 1;
  return x->d.end_byte > y->d.end_byte ? -1 : x->d.end_byte < y->d.end_byte; /* outer first */
}

static bool is_container_kind(int k) { return k == WK_CLASS || k == WK_TYPE || k == WK_INTERFACE; }
static bool is_member_kind(int k) { return k == WK_FIELD || k == WK_METHOD || k == WK_CONSTANT; }

static void index_defs(ws_file *f, TSNode root, const char *text, size_t len, TSQueryCursor *qc) {
  const TSQuery *q = NULL;
  if (sc_query_get(f->lang, SC_QUERY_DEFINITIONS, &q, NULL) != SC_OK) return;
  bool c_like = strcmp(f->lang, "c") == 0 || strcmp(f->lang, "cpp") == 0;
  pending *ps = NULL;
  size_t n = 0, cap = 0;
  sc_syntax_budget budget = {0};
  sc_syntax_query_exec(qc, q, root, &budget);
  TSQueryMatch m;
  while (ts_query_cursor_next_match(qc, &m)) {
    TSNode def, name, scope;
    memset(&def, 0, sizeof def);
    name = scope = def;
    int kind = -1;
    bool via_declarator = false;
    for (uint16_t i = 0; i < m.capture_count; i++) {
      uint32_t cl;
      const char *cn = ts_query_capture_name_for_id(q, m.captures[i].index, &cl);
      TSNode node = m.captures[i].node;
      int k = kind_from_capture(cn, cl);
      if (k >= 0) def = node, kind = k;
      if (cl == 4 && memcmp(cn, "name", 4) == 0) name = node;
      else if (cl == 5 && memcmp(cn, "scope", 5) == 0) scope = node;
      else if (cl == 10 && memcmp(cn, "declarator", 10) == 0) name = node, via_declarator = true;
    }
    if (kind < 0 || ts_node_is_null(name) || !predicates_hold(q, &m, text)) continue;
    uint8_t flags = 0;
    if (via_declarator) {
      bool is_func = false;
      name = declarator_name(name, &is_func);
      if (ts_node_is_null(name)) continue;
      if (kind == WK_VARIABLE && is_func) kind = WK_FUNCTION, flags |= WD_DECL;
      else if (kind == WK_FUNCTION && is_func) flags = 0;
    }
    if (c_like && strcmp(ts_node_type(def), "declaration") == 0 && inside_function(def))
      continue;
    uint32_t a = ts_node_start_byte(name), b = ts_node_end_byte(name);
    if (b > len || a >= b) continue;
    if (text[a] == '#' && b - a > 1) a++; /* a private member: #options is used as .#options */
    uint32_t start_line = ts_node_start_point(def).row;
    /* The same name on the same line from another pattern: keep one. */
    pending *dup = NULL;
    for (size_t k = n; k > 0 && k + 8 > n && !dup; k--) {
      pending *p = &ps[k - 1];
      const char *pn = f->pool + p->d.name;
      if (p->d.start_line == start_line && strlen(pn) == b - a && memcmp(pn, text + a, b - a) == 0)
        dup = p;
    }
    uint32_t scope_off = WS_NONE;
    if (!ts_node_is_null(scope)) {
      uint32_t x = ts_node_start_byte(scope), y = ts_node_end_byte(scope);
      if (y <= len && x < y && y - x < 256) scope_off = ws_pool_add(f, text + x, y - x);
    }
    if (dup) {
      if (dup->d.scope == WS_NONE) dup->d.scope = scope_off;
      if (k_kind_rank[kind] > k_kind_rank[dup->d.kind]) {
        dup->d.kind = (uint8_t)kind;
        dup->d.flags = flags;
        dup->node = def;
        dup->d.start_byte = ts_node_start_byte(def);
        dup->d.end_byte = ts_node_end_byte(def);
        dup->d.end_line = ts_node_end_point(def).row;
      }
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      pending *np = realloc(ps, nc * sizeof *np);
      if (!np) break;
      ps = np;
      cap = nc;
    }
    uint32_t name_off = ws_pool_add(f, text + a, b - a);
    if (name_off == WS_NONE) break;
    pending *p = &ps[n++];
    memset(p, 0, sizeof *p);
    p->node = def;
    p->d.name = name_off;
    p->d.scope = scope_off;
    p->d.kind = (uint8_t)kind;
    p->d.flags = flags;
    p->d.start_byte = ts_node_start_byte(def);
    p->d.end_byte = ts_node_end_byte(def);
    p->d.start_line = start_line;
    p->d.end_line = ts_node_end_point(def).row;
    p->d.parent = UINT16_MAX;
  }
  /* Constants declared together without a named container (a Go const
   * block, an anonymous C enum) get an unnamed one, so that a constant
   * comes with its siblings, as an enum's members do. */
  size_t n_named = n;
  for (size_t i = 0; i < n_named; i++) {
    if (ps[i].d.kind != WK_CONSTANT) continue;
    TSNode g = sc_syntax_parent(ps[i].node);
    if (!ts_node_is_null(g) && strcmp(ts_node_type(g), "enumerator_list") == 0)
      g = sc_syntax_parent(g);
    if (ts_node_is_null(g) || (strcmp(ts_node_type(g), "const_declaration") != 0 &&
                               strcmp(ts_node_type(g), "enum_specifier") != 0))
      continue;
    if (ts_node_named_child_count(g) < 2) continue;
    uint32_t gs = ts_node_start_byte(g), ge = ts_node_end_byte(g);
    bool held = false; /* a container already spans it (a named enum, a typedef) */
    for (size_t k = 0; k < n && !held; k++)
      held = k != i && is_container_kind(ps[k].d.kind) && ps[k].d.start_byte <= gs &&
             ps[k].d.end_byte >= ge;
    if (held) continue;
    if (n == cap) {
      size_t nc = cap * 2;
      pending *np = realloc(ps, nc * sizeof *np);
      if (!np) break;
      ps = np;
      cap = nc;
    }
    uint32_t empty = ws_pool_add(f, "", 0);
    if (empty == WS_NONE) break;
    pending *p = &ps[n++];
    memset(p, 0, sizeof *p);
    p->node = g;
    p->d.name = empty;
    p->d.scope = WS_NONE;
    p->d.kind = WK_TYPE;
    p->d.start_byte = gs;
    p->d.end_byte = ge;
    p->d.start_line = ts_node_start_point(g).row;
    p->d.end_line = ts_node_end_point(g).row;
    p->d.parent = UINT16_MAX;
  }
  if (n > 1) qsort(ps, n, sizeof *ps, cmp_pending);
  /* Patterns that found the same name on the same line, not next to each
   * other in match order: merged now that they are in document order. */
  size_t u = 0;
  for (size_t i = 0; i < n; i++) {
    pending *dup = NULL;
    for (size_t k = u; k > 0 && k + 16 > u && !dup; k--) {
      pending *p = &ps[k - 1];
      if (p->d.start_line == ps[i].d.start_line &&
          strcmp(f->pool + p->d.name, f->pool + ps[i].d.name) == 0)
        dup = p;
    }
    if (!dup) {
      ps[u++] = ps[i];
      continue;
    }
    if (dup->d.scope == WS_NONE) dup->d.scope = ps[i].d.scope;
    if (k_kind_rank[ps[i].d.kind] > k_kind_rank[dup->d.kind]) {
      uint32_t scope = dup->d.scope;
      *dup = ps[i];
      dup->d.scope = scope;
    }
  }
  n = u;
  if (n > UINT16_MAX) n = UINT16_MAX; /* parents are 16-bit indices */
  /* A node ending at column 0 (a macro with its newline) ends on the line before. */
  for (size_t i = 0; i < n; i++) {
    TSPoint e = ts_node_end_point(ps[i].node);
    if (e.column == 0 && ps[i].d.end_line > ps[i].d.start_line) ps[i].d.end_line--;
  }
  /* Members: the innermost container that holds each field, method or
   * constant (a stack of open containers, in document order). */
  size_t stack[64];
  int sp = 0;
  for (size_t i = 0; i < n; i++) {
    ws_def *d = &ps[i].d;
    while (sp > 0 && ps[stack[sp - 1]].d.end_byte <= d->start_byte) sp--;
    if (is_member_kind(d->kind) && sp > 0) {
      size_t c = stack[sp - 1];
      d->parent = (uint16_t)c;
      ps[c].d.flags |= WD_CONTAINER;
      if (d->scope == WS_NONE && f->pool[ps[c].d.name]) d->scope = ps[c].d.name;
    }
    if (is_container_kind(d->kind) && sp < 64) stack[sp++] = i;
  }
  ws_def *defs = n ? malloc(n * sizeof *defs) : NULL;
  if (n && !defs) n = 0;
  for (size_t i = 0; i < n; i++) {
    ws_def *d = &ps[i].d;
    set_head(f, d, ps[i].node, text, len, (d->flags & WD_CONTAINER) != 0);
    defs[i] = *d;
  }
  free(ps);
  f->defs = defs;
  f->n_defs = n;
}

static void add_import(ws_file *f, const char *s, size_t n) {
  uint32_t *ni = realloc(f->imports, (f->n_imports + 1) * sizeof *ni);
  if (!ni) return;
  f->imports = ni;
  uint32_t off = ws_pool_add(f, s, n);
  if (off != WS_NONE) f->imports[f->n_imports++] = off;
}

/* Imports as written, quotes stripped; a C system header keeps its '<'.
 * Python's `from M import a, b` adds M, M.a and M.b: a name may be a
 * module of the package. */
static void index_imports(ws_file *f, TSNode root, const char *text, size_t len,
                          TSQueryCursor *qc) {
  const TSQuery *q = NULL;
  if (sc_query_get(f->lang, SC_QUERY_IMPORTS, &q, NULL) != SC_OK) return;
  sc_syntax_budget budget = {0};
  sc_syntax_query_exec(qc, q, root, &budget);
  TSQueryMatch m;
  while (ts_query_cursor_next_match(qc, &m)) {
    if (!predicates_hold(q, &m, text)) continue;
    TSNode path, name;
    memset(&path, 0, sizeof path);
    name = path;
    for (uint16_t i = 0; i < m.capture_count; i++) {
      uint32_t cl;
      const char *cn = ts_query_capture_name_for_id(q, m.captures[i].index, &cl);
      if (cl == 11 && memcmp(cn, "import.path", 11) == 0) path = m.captures[i].node;
      else if (cl == 11 && memcmp(cn, "import.name", 11) == 0) name = m.captures[i].node;
    }
    if (ts_node_is_null(path)) continue;
    uint32_t a = ts_node_start_byte(path), b = ts_node_end_byte(path);
    if (b > len || b <= a) continue;
    bool sys = text[a] == '<';
    while (a < b && strchr("\"'<>` ", text[a])) a++;
    while (b > a && strchr("\"'<>` ;", text[b - 1])) b--;
    if (b <= a || b - a > 512) continue;
    char buf[1100];
    size_t k = 0;
    if (sys) buf[k++] = '<';
    memcpy(buf + k, text + a, b - a);
    k += b - a;
    if (ts_node_is_null(name)) {
      add_import(f, buf, k);
      continue;
    }
    uint32_t x = ts_node_start_byte(name), y = ts_node_end_byte(name);
    if (y > len || y <= x || y - x > 256) continue;
    bool dots_only = true;
    for (size_t i = 0; i < k; i++) dots_only &= buf[i] == '.';
    if (!dots_only) buf[k++] = '.';
    memcpy(buf + k, text + x, y - x);
    add_import(f, buf, k + (y - x));
  }
}

/* Member names used in text and how often (a lexical scan: '.', '->' or
 * '?.' then a name), deduplicated through a small open-addressing table. */
static void index_uses(ws_file *f, const char *text, size_t len) {
  enum { CAP = 4096 };
  uint32_t *slot = calloc(CAP, sizeof *slot); /* 1 + index into f->uses; 0: free */
  if (!slot) return;
  size_t cap = 0;
  for (size_t i = 1; i < len; i++) {
    bool dot = text[i - 1] == '.' && !(i >= 2 && text[i - 2] == '.');
    bool arrow = i >= 2 && text[i - 1] == '>' && text[i - 2] == '-';
    if (!(dot || arrow) || !(isalpha((unsigned char)text[i]) || text[i] == '_')) continue;
    size_t a = i;
    while (i < len && (isalnum((unsigned char)text[i]) || text[i] == '_')) i++;
    size_t n = i - a;
    if (n < 2 || n > 64) continue;
    uint64_t h = sc_hash64(text + a, n, 3);
    size_t s = (size_t)h & (CAP - 1), probes = 0;
    for (; slot[s] && probes < CAP; s = (s + 1) & (CAP - 1), probes++) {
      const char *x = f->pool + f->uses[slot[s] - 1].name;
      if (strlen(x) == n && memcmp(x, text + a, n) == 0) break;
    }
    if (probes == CAP) break;
    if (slot[s]) {
      f->uses[slot[s] - 1].count++;
      continue;
    }
    if (f->n_uses * 4 >= CAP * 3) continue; /* full enough: the rest is rare */
    if (f->n_uses == cap) {
      size_t nc = cap ? cap * 2 : 64;
      struct ws_use *nu = realloc(f->uses, nc * sizeof *nu);
      if (!nu) break;
      f->uses = nu;
      cap = nc;
    }
    uint32_t off = ws_pool_add(f, text + a, n);
    if (off == WS_NONE) break;
    f->uses[f->n_uses] = (struct ws_use){off, 1};
    slot[s] = (uint32_t)++f->n_uses;
  }
  free(slot);
}

void ws_index_tree(ws_file *f, const sc_syntax_tree *tree, const char *text, size_t len) {
  TSNode root = sc_syntax_tree_root(tree);
  TSQueryCursor *qc = sc_syntax_query_cursor_new();
  index_defs(f, root, text, len, qc);
  index_imports(f, root, text, len, qc);
  ts_query_cursor_delete(qc);
  index_uses(f, text, len);
}

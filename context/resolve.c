/* resolve.c — what retrieval looks up: the names on both sides of the
 * cursor, nearest first; the type of a member access's receiver (a C
 * variable's declared type, a Python or TypeScript annotation, self/this,
 * a Go receiver or composite literal), followed through fields the index
 * knows; and the files an import names, resolved by path the way each
 * language's tools do (not by file name: `from .termui import x` must not
 * find examples/termui.py). All lexical: no type checker, no build
 * configuration; what cannot be resolved simply is not. */
#define _DEFAULT_SOURCE /* strndup */
#include "retrieve_impl.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_id(char c) { return isalnum((unsigned char)c) || c == '_'; }
static bool is_id_start(char c) { return isalpha((unsigned char)c) || c == '_'; }

static bool lang_is(const char *lang, const char *a) { return lang && strcmp(lang, a) == 0; }
static bool c_like(const char *lang) { return lang_is(lang, "c") || lang_is(lang, "cpp"); }
static bool ts_like(const char *lang) {
  return lang_is(lang, "typescript") || lang_is(lang, "tsx") || lang_is(lang, "javascript");
}

static bool word_is(const char *s, size_t n, const char *w) {
  return strlen(w) == n && memcmp(s, w, n) == 0;
}

static bool in_list(const char *s, size_t n, const char *const *list) {
  for (size_t i = 0; list[i]; i++)
    if (word_is(s, n, list[i])) return true;
  return false;
}

/* Skips a balanced (...) starting at s[i] == '('; the offset after it, or
 * SIZE_MAX when it does not close within the chain's end e. */
static size_t skip_parens(const char *s, size_t i, size_t e) {
  int depth = 0;
  for (; i < e; i++) {
    if (s[i] == '(') depth++;
    else if (s[i] == ')' && --depth == 0) return i + 1;
  }
  return SIZE_MAX;
}

/* ---- declared types ----------------------------------------------------------- */

/* Names that are not the type we want: C's own types and statement words;
 * generic wrappers and builtins of annotations (the type is inside them). */
static const char *const k_not_c_type[] = {
    "return", "sizeof", "case", "goto", "else", "if", "while", "for", "switch", "do",
    "int", "char", "void", "double", "float", "long", "short", "unsigned", "signed", "bool",
    "size_t", "ssize_t", "const", "static", "extern", "register", "volatile", "inline",
    "restrict", "typedef", "struct", "union", "enum", "auto", "uint8_t", "uint16_t",
    "uint32_t", "uint64_t", "int8_t", "int16_t", "int32_t", "int64_t", "uintptr_t",
    "intptr_t", "new", "delete", "throw", "typename", "template", "using", "namespace",
    NULL};
static const char *const k_wrappers[] = {
    "Optional", "Union", "List", "Dict", "Set", "FrozenSet", "Tuple", "Sequence",
    "Iterable", "Iterator", "Mapping", "MutableMapping", "Callable", "Type", "ClassVar",
    "Final", "Literal", "Any", "None", "list", "dict", "set", "tuple", "type", "Awaitable",
    "Coroutine", "Generator", "AsyncIterator", "t", "typing", "cabc", "abc", "te",
    "Readonly", "Partial", "Required", "Record", "Omit", "Pick", "Array", "Promise",
    "ReadonlyArray", "Map", "undefined", "null", "string", "number", "boolean", "any",
    "unknown", "never", "void", "object", "str", "int", "float", "bool", "bytes", "self",
    "typeof", "keyof", "readonly", "NonNullable", "Exclude", "Extract", NULL};

/* The first identifier of an annotation that is not a wrapper: `Context`,
 * `t.Optional[Context]`, `"Context"`, `Context | None`. */
static char *annotation_type(const char *s, size_t len, size_t i) {
  for (int guard = 0; guard < 16 && i < len; guard++) {
    while (i < len && strchr(" \t\"'[(|,?<", s[i])) i++;
    if (i >= len || !is_id_start(s[i])) return NULL;
    size_t a = i;
    while (i < len && is_id(s[i])) i++;
    size_t b = i;
    if (i < len && s[i] == '.') { /* module.Type: the last component */
      i++;
      continue;
    }
    if (!in_list(s + a, b - a, k_wrappers)) return strndup(s + a, b - a);
    while (i < len && s[i] == ' ') i++;
    if (i < len && !strchr("[<|.", s[i])) return NULL; /* a bare builtin: no class */
  }
  return NULL;
}

/* The right-hand side at s[k] when it is a chain of names, fields and
 * calls ("f(x)", "c.Root()", "other.attr") ending the expression: returned
 * as "=" and the chain, for chain_type to follow; else NULL. */
static char *rhs_chain(const char *s, size_t len, size_t k) {
  size_t a = k;
  for (int parts = 0; parts < 8 && k < len; parts++) {
    size_t x = k;
    while (k < len && is_id(s[k])) k++;
    if (k == x) return NULL;
    if (k < len && s[k] == '(') {
      k = skip_parens(s, k, len < k + 2000 ? len : k + 2000);
      if (k == SIZE_MAX) return NULL;
    }
    if (k + 1 < len && s[k] == '.' && is_id_start(s[k + 1])) {
      k++;
      continue;
    }
    break;
  }
  size_t e = k;
  while (k < len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) k++;
  if (k < len && !strchr("\n;)", s[k])) return NULL; /* more expression follows */
  if (e <= a || e - a > 1500) return NULL;
  char *out = malloc(e - a + 2);
  if (!out) return NULL;
  out[0] = '=';
  memcpy(out + 1, s + a, e - a);
  out[e - a + 1] = '\0';
  return out;
}

/* A narrowing test naming the type of s[at, at + n): Python
 * `isinstance(x, T)` (a tuple: its first), TypeScript `x instanceof T`.
 * NULL when there is none. Owned. */
static char *narrowed_type(const char *s, size_t len, size_t at, size_t n, const char *lang) {
  size_t k = at + n;
  if (lang_is(lang, "python")) {
    size_t p = at;
    while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
    if (p < 11 || memcmp(s + p - 11, "isinstance(", 11) != 0) return NULL;
    while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k >= len || s[k] != ',') return NULL;
    return annotation_type(s, len, k + 1);
  }
  if (ts_like(lang)) {
    while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
    if (len - k < 11 || memcmp(s + k, "instanceof", 10) != 0 || is_id(s[k + 10])) return NULL;
    return annotation_type(s, len, k + 10);
  }
  return NULL;
}

/* TypeScript/JavaScript: name s[at, at + n) taken apart from an object,
 * `const {a, name, b} = x.y;`: "=x.y.name" (for chain_type to follow), or
 * NULL. Not a renamed one (`{name: other}` declares other). */
static char *destructured(const char *s, size_t len, size_t at, size_t n) {
  size_t b = at;
  while (b > 0 && (is_id(s[b - 1]) || strchr(" \t\n,", s[b - 1]))) b--;
  if (b == 0 || s[b - 1] != '{') return NULL;
  size_t q = b - 1;
  while (q > 0 && (s[q - 1] == ' ' || s[q - 1] == '\t')) q--;
  size_t w = q;
  while (w > 0 && is_id(s[w - 1])) w--;
  if (!(word_is(s + w, q - w, "const") || word_is(s + w, q - w, "let") ||
        word_is(s + w, q - w, "var")))
    return NULL;
  size_t e = at + n;
  while (e < len && (s[e] == ' ' || s[e] == '\t')) e++;
  if (e < len && s[e] == ':') return NULL; /* renamed */
  while (e < len && (is_id(s[e]) || strchr(" \t\n,", s[e]))) e++;
  if (e >= len || s[e] != '}') return NULL;
  e++;
  while (e < len && (s[e] == ' ' || s[e] == '\t')) e++;
  if (e + 1 >= len || s[e] != '=' || s[e + 1] == '=') return NULL;
  e++;
  while (e < len && (s[e] == ' ' || s[e] == '\t')) e++;
  char *rhs = rhs_chain(s, len, e);
  if (!rhs) return NULL;
  size_t rl = strlen(rhs);
  char *out = malloc(rl + n + 2);
  if (out) {
    memcpy(out, rhs, rl);
    out[rl] = '.';
    memcpy(out + rl + 1, s + at, n);
    out[rl + n + 1] = '\0';
  }
  free(rhs);
  return out;
}

char *rv_decl_type(const char *s, size_t len, size_t at, size_t n, const char *lang) {
  size_t e = at + n;
  char *narrow = narrowed_type(s, len, at, n, lang);
  if (narrow) return narrow;
  if (c_like(lang)) {
    size_t k = e;
    while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k >= len || !strchr(";,=)[:", s[k])) return NULL;
    size_t j = at;
    while (j > 0 && strchr(" \t*&", s[j - 1])) j--;
    for (int guard = 0; guard < 3; guard++) {
      size_t b = j;
      while (j > 0 && is_id(s[j - 1])) j--;
      if (j == b) return NULL;
      if (word_is(s + j, b - j, "const") || word_is(s + j, b - j, "volatile")) {
        while (j > 0 && strchr(" \t*&", s[j - 1])) j--;
        continue;
      }
      if (isdigit((unsigned char)s[j]) || in_list(s + j, b - j, k_not_c_type)) return NULL;
      /* What comes before the type: a statement or parameter boundary, or a
       * tag keyword; not an operator (x = y * z). */
      size_t p = j;
      while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
      bool ok = p == 0 || strchr("\n(,;{}", s[p - 1]);
      if (!ok && p >= 6) {
        size_t q = p;
        while (q > 0 && is_id(s[q - 1])) q--;
        ok = word_is(s + q, p - q, "struct") || word_is(s + q, p - q, "union") ||
             word_is(s + q, p - q, "enum") || word_is(s + q, p - q, "const") ||
             word_is(s + q, p - q, "static") || word_is(s + q, p - q, "class");
      }
      return ok ? strndup(s + j, b - j) : NULL;
    }
    return NULL;
  }
  size_t k = e;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (k >= len) return NULL;
  if (lang_is(lang, "go")) {
    if (s[k] == ',') { /* x, err := f(): x is f's first result */
      size_t p = at;
      while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
      if (!(p == 0 || s[p - 1] == '\n')) return NULL; /* only the first name */
      while (k < len && (s[k] == ',' || s[k] == ' ' || is_id(s[k]))) k++;
    }
    if (s[k] == ':' && k + 1 < len && s[k + 1] == '=') { /* x := &T{, pkg.T{ or f() */
      k += 2;
      while (k < len && strchr(" \t&", s[k])) k++;
      size_t rhs = k, a = k, b = k;
      while (k < len && (is_id(s[k]) || s[k] == '.')) {
        if (s[k] == '.') a = k + 1;
        k++;
      }
      b = k;
      if (b > a && k < len && s[k] == '{') return strndup(s + a, b - a);
      return rhs_chain(s, len, rhs);
    }
    /* A declaration: the name, then its type (params, var, fields, receivers). */
    size_t p = at;
    while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
    bool decl_start = p == 0 || strchr("\n(,", s[p - 1]) || (p >= 3 && word_is(s + p - 3, 3, "var"));
    if (!decl_start || k == e) return NULL; /* "name Type": a space between (not name.field) */
    while (k < len && strchr("*&[]", s[k])) k++;
    size_t a = k;
    while (k < len && (is_id(s[k]) || s[k] == '.')) {
      if (s[k] == '.') a = k + 1;
      k++;
    }
    if (k == a || !is_id_start(s[a]) || word_is(s + a, k - a, "func") ||
        word_is(s + a, k - a, "map") || word_is(s + a, k - a, "chan"))
      return NULL;
    return strndup(s + a, k - a);
  }
  if (ts_like(lang)) { /* const {a, b} = x: a is x.a */
    char *d = destructured(s, len, at, n);
    if (d) return d;
  }
  if (s[k] == '?' || s[k] == '!') k++;
  if (k < len && s[k] == ':' && !(k + 1 < len && s[k + 1] == '=')) {
    char *t = annotation_type(s, len, k + 1);
    return t;
  }
  if (s[k] == '=' && !(k + 1 < len && s[k + 1] == '=')) { /* x = Type(...), new Type(...), f() */
    k++;
    while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
    size_t rhs = k;
    if (ts_like(lang) && k + 4 < len && memcmp(s + k, "new ", 4) == 0) k += 4;
    size_t a = k;
    while (k < len && (is_id(s[k]) || s[k] == '.')) {
      if (s[k] == '.') a = k + 1;
      k++;
    }
    if (k > a && k < len && s[k] == '(' && isupper((unsigned char)s[a]))
      return strndup(s + a, k - a); /* a class's constructor */
    return rhs_chain(s, len, rhs);
  }
  return NULL;
}

static bool masked_type(const char *t);

/* Whether offset at of the tree's text is inside a comment or a string. */
static bool in_comment(const sc_syntax_tree *tree, size_t at) {
  if (!tree) return false;
  TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)at,
                                               (uint32_t)at);
  for (int up = 0; !ts_node_is_null(n) && up < 4; up++, n = ts_node_parent(n))
    if (masked_type(ts_node_type(n))) return true;
  return false;
}

/* The nearest declaration of recv before offset end in text: its type.
 * Not in a comment or a string (a docstring's ":param ctx: Invocation
 * context" declares nothing). */
static char *declared_before(const char *text, const sc_syntax_tree *tree, size_t floor,
                             size_t end, const char *recv, size_t rn, const char *lang) {
  size_t lo = end > (64u << 10) ? end - (64u << 10) : 0;
  if (floor > lo && floor < end) lo = floor;
  for (size_t i = end; i > lo + rn - 1 && i >= rn;) {
    i--;
    if (text[i - rn + 1] != recv[0] || memcmp(text + i - rn + 1, recv, rn) != 0) continue;
    size_t a = i - rn + 1;
    if ((a > 0 && (is_id(text[a - 1]) || text[a - 1] == '.' || text[a - 1] == '>')) ||
        (a + rn < end && is_id(text[a + rn])))
      continue;
    char *t = rv_decl_type(text, end, a, rn, lang);
    if (t && in_comment(tree, a)) {
      free(t);
      t = NULL;
    }
    if (t) return t;
    i = a;
  }
  return NULL;
}

/* The class (or struct) enclosing offset, from the tree: for self and this. */
static char *enclosing_class(const rv_scan *sc, size_t at) {
  if (!sc->tree) return NULL;
  TSNode *up;
  size_t k = sc_syntax_ancestry_at(sc->tree, at, at, &up);
  char *name = NULL;
  for (size_t i = 0; i < k; i++) {
    const char *t = ts_node_type(up[i]);
    if (strcmp(t, "class_definition") != 0 && strcmp(t, "class_declaration") != 0 &&
        strcmp(t, "abstract_class_declaration") != 0 && strcmp(t, "class_specifier") != 0 &&
        strcmp(t, "struct_specifier") != 0 && strcmp(t, "class") != 0)
      continue;
    TSNode nm = ts_node_child_by_field_name(up[i], "name", 4);
    if (ts_node_is_null(nm)) continue;
    uint32_t a = ts_node_start_byte(nm), b = ts_node_end_byte(nm);
    if (b <= sc->len && a < b) name = strndup(sc->text + a, b - a);
    break;
  }
  free(up);
  return name;
}

/* A member-access chain split into its parts: "ctx.command.get_params()"
 * is ctx, command, get_params (a call). */
typedef struct seg {
  size_t a, b; /* the name */
  bool call;   /* followed by (...) */
} seg;

static size_t split_chain(const char *s, size_t a, size_t e, seg *out, size_t cap) {
  size_t n = 0, i = a;
  while (i < e && n < cap) {
    if (s[i] == '#') i++;
    size_t x = i;
    while (i < e && is_id(s[i])) i++;
    if (i == x) return 0;
    out[n] = (seg){x, i, false};
    if (i < e && s[i] == '(') {
      i = skip_parens(s, i, e);
      if (i == SIZE_MAX) return 0;
      out[n].call = true;
    }
    n++;
    if (i >= e) break;
    if (s[i] == '.') i++;
    else if (i + 1 < e && s[i] == '-' && s[i + 1] == '>') i += 2;
    else if (i + 1 < e && s[i] == '?' && s[i + 1] == '.') i += 2;
    else return 0;
  }
  return i >= e ? n : 0;
}

/* The type of chain s[a, b) (in sc->text when s is it, used at offset at):
 * its first part declared before at (or self/this, or a function's return
 * type, or a global variable), then each field's declared type and each
 * method's return type, from the index. depth bounds the recursion through
 * declarations like `x = f()`. */
static char *chain_type(const rv_scan *sc, const char *s, size_t a, size_t b, size_t at,
                        int depth) {
  seg sg[8];
  size_t n = split_chain(s, a, b, sg, 8);
  if (n == 0 || depth > 2) return NULL;
  const char *w = s + sg[0].a;
  size_t wl = sg[0].b - sg[0].a;
  char *name = strndup(w, wl);
  if (!name) return NULL;
  char *type = NULL;
  if (sg[0].call) {
    type = sc->return_type ? sc->return_type(sc->user, NULL, name) : NULL;
  } else if ((word_is(w, wl, "self") || word_is(w, wl, "cls")) && lang_is(sc->lang, "python")) {
    type = enclosing_class(sc, at);
  } else if (word_is(w, wl, "this") && (ts_like(sc->lang) || lang_is(sc->lang, "cpp"))) {
    type = enclosing_class(sc, at);
  } else {
    type = declared_before(sc->text, sc->tree, sc->decl_floor, at, w, wl, sc->lang);
    if (type && type[0] == '=') { /* x = f(...), x = y.z: that expression's type */
      char *rhs = type;
      type = chain_type(sc, rhs, 1, strlen(rhs), at, depth + 1);
      free(rhs);
    }
    if (!type && sc->field_type) type = sc->field_type(sc->user, NULL, name); /* a global */
  }
  free(name);
  for (size_t k = 1; type && k < n; k++) {
    char *part = strndup(s + sg[k].a, sg[k].b - sg[k].a);
    char *next = NULL;
    if (part && sg[k].call && sc->return_type) next = sc->return_type(sc->user, type, part);
    else if (part && !sg[k].call && sc->field_type) next = sc->field_type(sc->user, type, part);
    free(part);
    free(type);
    type = next;
  }
  return type;
}

/* The type of the receiver chain text[a, b) ("ctx", "self.ctx", "p->path",
 * "c.Root()"). */
static char *receiver_type(const rv_scan *sc, size_t a, size_t b) {
  return chain_type(sc, sc->text, a, b, a, 0);
}

/* The type a function's head (s[0, len), its name at s[at, at + n))
 * says it returns: Python "-> T", TypeScript "): T", Go ") T" or
 * ") (T, error)", C the type before the name. NULL when it says none. */
char *rv_return_type(const char *s, size_t len, size_t at, size_t n, const char *lang) {
  if (c_like(lang)) {
    size_t j = at;
    while (j > 0 && strchr(" \t*&\n", s[j - 1])) j--;
    size_t b = j;
    while (j > 0 && is_id(s[j - 1])) j--;
    if (j == b || in_list(s + j, b - j, k_not_c_type)) return NULL;
    return strndup(s + j, b - j);
  }
  size_t k = at + n;
  while (k < len && s[k] != '(') {
    if (s[k] == '=' && ts_like(lang)) { /* an arrow bound to a name: its parameters */
      k++;
      continue;
    }
    if (!strchr(" \t<>,:=", s[k]) && !is_id(s[k])) return NULL;
    k++;
  }
  if (k >= len) return NULL;
  k = skip_parens(s, k, len);
  if (k == SIZE_MAX) return NULL;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (lang_is(lang, "python")) {
    if (k + 1 < len && s[k] == '-' && s[k + 1] == '>') return annotation_type(s, len, k + 2);
    return NULL;
  }
  if (ts_like(lang)) return k < len && s[k] == ':' ? annotation_type(s, len, k + 1) : NULL;
  if (lang_is(lang, "go")) {
    if (k < len && s[k] == '(') k++;
    while (k < len && strchr(" \t*&[]", s[k])) k++;
    size_t a = k;
    while (k < len && (is_id(s[k]) || s[k] == '.')) {
      if (s[k] == '.') a = k + 1;
      k++;
    }
    if (k == a || word_is(s + a, k - a, "error") || word_is(s + a, k - a, "string") ||
        word_is(s + a, k - a, "bool") || word_is(s + a, k - a, "int"))
      return NULL;
    return strndup(s + a, k - a);
  }
  return NULL;
}

/* ---- candidates ------------------------------------------------------------------- */

typedef struct span {
  uint32_t a, b;
} span;

typedef struct masks {
  span *s;
  size_t n, cap;
} masks;

static bool masked_type(const char *t) {
  return strstr(t, "comment") || strstr(t, "string") || strcmp(t, "char_literal") == 0 ||
         strcmp(t, "rune_literal") == 0 || strcmp(t, "regex") == 0;
}

/* Comments and strings that intersect [a, b), in order, from the tree. */
static void mask_walk(TSTreeCursor *c, uint32_t a, uint32_t b, masks *m, int depth) {
  do {
    TSNode n = ts_tree_cursor_current_node(c);
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (e <= a) continue;
    if (s >= b) break;
    if (masked_type(ts_node_type(n))) {
      if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 32;
        span *ns = realloc(m->s, nc * sizeof *ns);
        if (!ns) return;
        m->s = ns;
        m->cap = nc;
      }
      m->s[m->n++] = (span){s, e};
      continue;
    }
    if (depth < 200 && ts_tree_cursor_goto_first_child(c)) {
      mask_walk(c, a, b, m, depth + 1);
      ts_tree_cursor_goto_parent(c);
    }
  } while (ts_tree_cursor_goto_next_sibling(c));
}

static bool is_masked(const masks *m, size_t a) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->s[mid].b <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo < m->n && m->s[lo].a <= a;
}

typedef struct collector {
  const rv_scan *sc;
  const masks *mk;
  rv_cand *out;
  size_t n, cap;
  /* receivers already resolved, so each chain is resolved once */
  struct {
    char *chain;
    char *type;
  } recv[32];
  size_t n_recv;
} collector;

/* Words of the languages that ws_is_keyword (which the index's sketches
 * use, so it stays as it is) does not list: never a name to look up. */
/* By length (called for every identifier scanned: a length, then a few
 * words of it). */
static const char *const k_more_keywords[][16] = {
    {NULL},
    {NULL},
    {"of", "go", NULL},
    {"any", "nil", "map", "del", NULL},
    {"type", "null", "void", "true", "chan", "goto", "elif", "None", "True", NULL},
    {"keyof", "infer", "never", "throw", "super", "false", "range", "defer", "const", "raise",
     "False", "await", NULL},
    {"typeof", "string", "number", "symbol", "bigint", "delete", "static", "struct", "select",
     "sizeof", "except", "global", "assert", NULL},
    {"extends", "declare", "boolean", "unknown", "default", "finally", NULL},
    {"readonly", "abstract", "override", "nonlocal", NULL},
    {"interface", "namespace", "satisfies", "undefined", "protected", NULL},
    {"implements", "instanceof", NULL},
    {"fallthrough", NULL},
};

static bool more_keyword(const char *s, size_t n) {
  if (n >= sizeof k_more_keywords / sizeof k_more_keywords[0]) return false;
  for (const char *const *k = k_more_keywords[n]; *k; k++)
    if ((*k)[0] == s[0] && memcmp(*k, s, n) == 0) return true;
  return false;
}

static bool skip_word(const char *s, size_t n) {
  return n < 2 || isdigit((unsigned char)s[0]) || ws_is_keyword(s, n) || more_keyword(s, n);
}

static void add(collector *co, const char *name, size_t n, const char *recv_type, bool member,
                bool type_only) {
  if (co->n >= co->cap || skip_word(name, n)) return;
  for (size_t i = 0; i < co->n; i++) {
    const rv_cand *c = &co->out[i];
    if (c->type_only == type_only && strlen(c->name) == n && memcmp(c->name, name, n) == 0 &&
        ((!c->recv_type && !recv_type) ||
         (c->recv_type && recv_type && strcmp(c->recv_type, recv_type) == 0)))
      return;
  }
  rv_cand c = {strndup(name, n), recv_type ? strdup(recv_type) : NULL, member, type_only,
               false, false, NULL, false};
  if (!c.name || (recv_type && !c.recv_type)) {
    free(c.name);
    free(c.recv_type);
    return;
  }
  co->out[co->n++] = c;
}

/* The receiver chain ending just before offset dot (the '.' or '->' of a
 * member access): [*ra, dot). False when it is not a plain chain. */
static bool chain_before(const char *t, size_t dot, size_t *ra) {
  size_t i = dot;
  for (int parts = 0; parts < 6; parts++) {
    if (i > 0 && t[i - 1] == ')') { /* a call: back over its arguments */
      int depth = 0;
      size_t lim = i > 400 ? i - 400 : 0;
      for (; i > lim; i--) {
        if (t[i - 1] == ')') depth++;
        else if (t[i - 1] == '(' && --depth == 0) break;
      }
      if (depth != 0 || i == lim) return false;
      i--;
    }
    size_t e = i;
    while (i > 0 && is_id(t[i - 1])) i--;
    if (i > 0 && t[i - 1] == '#') i--; /* a TS private field */
    if (i == e) return false;
    if (i >= 1 && t[i - 1] == '.' && !(i >= 2 && t[i - 2] == '?')) {
      i--;
      continue;
    }
    if (i >= 2 && t[i - 1] == '>' && t[i - 2] == '-') {
      i -= 2;
      continue;
    }
    if (i >= 2 && t[i - 1] == '.' && t[i - 2] == '?') {
      i -= 2;
      continue;
    }
    *ra = i;
    return is_id_start(t[i]) || t[i] == '#';
  }
  return false;
}

/* The member-access operator ending at offset a (the name's start): its
 * first byte, or SIZE_MAX. */
static size_t access_before(const char *t, size_t a) {
  if (a >= 1 && t[a - 1] == '.') return a >= 2 && t[a - 2] == '?' ? a - 2 : a - 1;
  if (a >= 2 && t[a - 1] == '>' && t[a - 2] == '-') return a - 2;
  if (a >= 2 && t[a - 1] == ':' && t[a - 2] == ':') return a - 2;
  if (a >= 2 && t[a - 1] == '#' && t[a - 2] == '.') return a - 2;
  return SIZE_MAX;
}

static const char *resolve_recv(collector *co, size_t ra, size_t dot) {
  const char *t = co->sc->text;
  for (size_t i = 0; i < co->n_recv; i++)
    if (strlen(co->recv[i].chain) == dot - ra && memcmp(co->recv[i].chain, t + ra, dot - ra) == 0)
      return co->recv[i].type;
  char *type = receiver_type(co->sc, ra, dot);
  if (co->n_recv < sizeof co->recv / sizeof co->recv[0]) {
    char *chain = strndup(t + ra, dot - ra);
    if (chain) {
      co->recv[co->n_recv].chain = chain;
      co->recv[co->n_recv].type = type;
      co->n_recv++;
      return type;
    }
  }
  free(type);
  return NULL;
}

/* One occurrence text[a, b). */
static void occurrence(collector *co, size_t a, size_t b) {
  const char *t = co->sc->text;
  if (is_masked(co->mk, a)) return;
  size_t op = access_before(t, a);
  const char *type = NULL;
  size_t ra;
  if (op != SIZE_MAX && chain_before(t, op, &ra)) type = resolve_recv(co, ra, op);
  add(co, t + a, b - a, type, op != SIZE_MAX, false);
}

/* The next identifier of t at or after *i and starting before e (not the
 * tail of a longer word): false when there is none; else [*a, *i), *i
 * left at its end (at most e). */
static bool next_id(const char *t, size_t *i, size_t e, size_t *a) {
  while (*i < e) {
    if (!is_id_start(t[*i]) || (*i > 0 && is_id(t[*i - 1]))) {
      (*i)++;
      continue;
    }
    *a = *i;
    while (*i < e && is_id(t[*i])) (*i)++;
    return true;
  }
  return false;
}

/* Identifiers in text[s, e), left to right or right to left. */
static void scan_range(collector *co, size_t s, size_t e, bool backwards) {
  const char *t = co->sc->text;
  if (!backwards) {
    size_t i = s, a;
    while (next_id(t, &i, e, &a)) occurrence(co, a, i);
    return;
  }
  for (size_t i = e; i > s;) {
    if (!is_id(t[i - 1])) {
      i--;
      continue;
    }
    size_t b = i;
    while (i > s && is_id(t[i - 1])) i--;
    if (is_id_start(t[i])) occurrence(co, i, b);
  }
}

/* The names the rest of the file (within RV_FILE_BYTES of the cursor,
 * outside the region [ra, rb)) uses most, RV_FILE_NAMES of them, the most
 * used first (the nearer first on a tie). */
static void file_names(collector *co, size_t ra, size_t rb) {
  enum { SLOTS = 2048 };
  const char *t = co->sc->text;
  size_t len = co->sc->len, cur = co->sc->cursor;
  size_t lo = cur > RV_FILE_BYTES ? cur - RV_FILE_BYTES : 0;
  size_t hi = len - cur > RV_FILE_BYTES ? cur + RV_FILE_BYTES : len;
  struct fname {
    uint32_t at, n, count, dist;
  } *slot = calloc(SLOTS, sizeof *slot);
  if (!slot) return;
  size_t used = 0;
  for (size_t i = lo; i < hi;) {
    if (i == ra) i = rb; /* the region was scanned already */
    if (i >= hi) break;
    if (!is_id_start(t[i]) || (i > 0 && is_id(t[i - 1]))) {
      i++;
      continue;
    }
    size_t a = i;
    while (i < hi && is_id(t[i])) i++;
    size_t n = i - a;
    if (skip_word(t + a, n) || n > 64) continue;
    uint64_t h = sc_hash64(t + a, n, 11);
    size_t s = (size_t)h & (SLOTS - 1), probes = 0;
    while (slot[s].n && !(slot[s].n == n && memcmp(t + slot[s].at, t + a, n) == 0) &&
           probes++ < SLOTS)
      s = (s + 1) & (SLOTS - 1);
    if (probes >= SLOTS) break;
    uint32_t dist = (uint32_t)(a > cur ? a - cur : cur - a);
    if (slot[s].n) {
      slot[s].count++;
      if (dist < slot[s].dist) slot[s].dist = dist;
    } else if (used * 4 < SLOTS * 3) {
      slot[s] = (struct fname){(uint32_t)a, (uint32_t)n, 1, dist};
      used++;
    }
  }
  for (int k = 0; k < RV_FILE_NAMES; k++) {
    size_t best = SIZE_MAX;
    for (size_t s = 0; s < SLOTS; s++) {
      if (!slot[s].n || slot[s].count < 2) continue;
      if (best == SIZE_MAX || slot[s].count > slot[best].count ||
          (slot[s].count == slot[best].count && slot[s].dist < slot[best].dist))
        best = s;
    }
    if (best == SIZE_MAX) break;
    add(co, t + slot[best].at, slot[best].n, NULL, false, false);
    slot[best].n = 0;
  }
  free(slot);
}

/* ---- words ------------------------------------------------------------------------ */

/* The word a common abbreviation (lower case, s[0, n)) stands for, or NULL. */
static const char *abbreviation(const char *s, size_t n) {
  static const char *const pairs[][2] = {
      {"err", "error"}, {"ctx", "context"}, {"cfg", "config"}, {"conf", "config"},
      {"msg", "message"}, {"req", "request"}, {"res", "response"}, {"resp", "response"},
      {"opt", "option"}, {"arg", "argument"}, {"cmd", "command"}, {"str", "string"},
      {"val", "value"}, {"fn", "function"}, {"func", "function"}, {"num", "number"},
      {"idx", "index"}, {"buf", "buffer"}, {"src", "source"}, {"dst", "destination"},
      {"env", "environment"}, {"dir", "directory"}, {"prev", "previous"}, {"tmp", "temporary"},
      {"param", "parameter"}, {"attr", "attribute"}, {"addr", "address"}, {"conn", "connection"},
      {NULL, NULL}};
  for (size_t i = 0; pairs[i][0]; i++)
    if (strlen(pairs[i][0]) == n && memcmp(pairs[i][0], s, n) == 0) return pairs[i][1];
  return NULL;
}

size_t rv_words(const char *s, size_t n, uint64_t *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap;) {
    if (!isalpha((unsigned char)s[i])) {
      i++;
      continue;
    }
    /* A word: an upper-case run (an acronym, which ends before an
     * upper-case letter that starts a lower-case word: "HTTPError"), or an
     * optional capital and lower-case letters. */
    size_t a = i;
    if (isupper((unsigned char)s[i])) {
      while (i < n && isupper((unsigned char)s[i])) i++;
      if (i < n && islower((unsigned char)s[i]) && i - a > 1) i--;
      else if (i - a == 1)
        while (i < n && islower((unsigned char)s[i])) i++;
    } else {
      while (i < n && islower((unsigned char)s[i])) i++;
    }
    if (i - a < 2 || i - a > 32) continue;
    char low[32];
    size_t wl = i - a;
    for (size_t j = a; j < i; j++) low[j - a] = (char)tolower((unsigned char)s[j]);
    /* A plural is its singular: keys, key; params, param (not "class"). */
    if (wl >= 4 && low[wl - 1] == 's' && low[wl - 2] != 's') wl--;
    /* The abbreviations code writes everywhere are their words: err is
     * error, ctx context, cmd command. */
    const char *full = abbreviation(low, wl);
    if (full) {
      wl = strlen(full);
      memcpy(low, full, wl);
    }
    uint64_t h = sc_hash64(low, wl, 0x77);
    bool dup = false;
    for (size_t j = 0; j < k && !dup; j++) dup = out[j] == h;
    if (!dup) out[k++] = h;
  }
  /* The whole name as one word too, without case or underscores: a
   * lower-case compound ("progressbar") is the name ProgressBar. */
  char all[64];
  size_t m = 0, parts = k;
  for (size_t i = 0; i < n && m < sizeof all; i++)
    if (isalpha((unsigned char)s[i])) all[m++] = (char)tolower((unsigned char)s[i]);
  if (parts > 1 && k < cap && m >= 4 && m < sizeof all) out[k++] = sc_hash64(all, m, 0x77);
  return k;
}

float rv_bag_weight(const rv_bag *b, uint64_t word) {
  for (size_t i = 0; i < b->n; i++)
    if (b->word[i] == word) return b->weight[i];
  return 0.0f;
}

static void bag_add(rv_bag *b, const char *s, size_t n, float w) {
  if (skip_word(s, n)) return;
  uint64_t ws[8];
  size_t k = rv_words(s, n, ws, 8);
  for (size_t i = 0; i < k; i++) {
    size_t j = 0;
    while (j < b->n && b->word[j] != ws[i]) j++;
    if (j == b->n) {
      if (b->n == RV_BAG) continue;
      b->word[b->n] = ws[i];
      b->weight[b->n++] = w;
    } else if (b->weight[j] < w) {
      b->weight[j] = w;
    }
  }
}

/* Every identifier of text[a, b) into the bag, but not those in [xa, xb);
 * the words of comments and strings weigh RV_W_PROSE as much (a comment
 * says what the next line does: "we remove it" before RemoveCommand; a
 * string names the case: "fish" where GenFishCompletion is called). */
static void bag_range(rv_bag *bag, const char *t, const masks *mk, size_t a, size_t b, size_t xa,
                      size_t xb, float w) {
  size_t i = a, s;
  while (next_id(t, &i, b, &s)) {
    if (s >= xa && s < xb) continue;
    bag_add(bag, t + s, i - s, is_masked(mk, s) ? w * RV_W_PROSE : w);
  }
}

/* The name of a function whose head starts at s[a] (the identifier right
 * before its parameter list, not a keyword: "func (c *Command) Find(",
 * "static jv f_keys(", "def progressbar(", "async #retry<T>("): [*na, *nb). */
static bool function_name(const char *s, size_t a, size_t e, size_t *na, size_t *nb) {
  for (size_t i = a; i < e && s[i] != '{' && s[i] != '\n';) {
    if (!is_id_start(s[i])) {
      i++;
      continue;
    }
    size_t x = i;
    while (i < e && is_id(s[i])) i++;
    size_t y = i, k = i;
    while (k < e && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k < e && s[k] == '<') { /* type parameters */
      int depth = 0;
      for (; k < e && s[k] != '\n'; k++) {
        if (s[k] == '<') depth++;
        else if (s[k] == '>' && --depth == 0) break;
      }
      k++;
    }
    if (k < e && s[k] == '(' && !ws_is_keyword(s + x, y - x)) {
      *na = x, *nb = y;
      return true;
    }
  }
  return false;
}

/* ---- what the member at the cursor must give (Go) ---------------------------------- */

/* Copies s[a, b) without spaces and tabs into out (cap bytes). */
static void squeeze(const char *s, size_t a, size_t b, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = a; i < b && o + 1 < cap; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') out[o++] = s[i];
  out[o] = '\0';
}

/* Top-level commas of s (results text) + 1, or 0 for "". */
static int count_parts(const char *s) {
  if (!*s) return 0;
  int n = 1, depth = 0;
  for (; *s; s++) {
    if (strchr("([{", *s)) depth++;
    else if (strchr(")]}", *s)) depth--;
    else if (*s == ',' && depth == 0) n++;
  }
  return n;
}

int rv_go_results(const char *s, size_t len, size_t at, size_t n, char *out, size_t cap) {
  out[0] = '\0';
  size_t k = at + n;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  size_t e = k;
  while (e < len && s[e] != '\n') e++;
  if (k < len && s[k] != '(') { /* a field: its type, up to a tag or comment */
    size_t b = k;
    while (b < e && s[b] != '`' && !(s[b] == '/' && b + 1 < e && s[b + 1] == '/')) b++;
    squeeze(s, k, b, out, cap);
    return *out ? 1 : -1;
  }
  size_t p = skip_parens(s, k, e);
  if (p == SIZE_MAX) return -1;
  size_t b = e;
  while (b > p && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '{')) b--;
  while (p < b && (s[p] == ' ' || s[p] == '\t')) p++;
  if (p < b && s[p] == '(' && s[b - 1] == ')') p++, b--;
  squeeze(s, p, b, out, cap);
  return count_parts(out);
}

/* Python and TypeScript: the result annotation of a method head (its name
 * at s[at, at + n)): Python "-> T" (a tuple[...]: its parts), TypeScript
 * "): T"; a field's annotation ("name: T", "name?: T"). */
static int annotated_results(const char *s, size_t len, size_t at, size_t n, const char *lang,
                             char *out, size_t cap) {
  out[0] = '\0';
  size_t k = at + n;
  bool ts = ts_like(lang);
  while (k < len && (s[k] == '?' || s[k] == '!' || s[k] == ' ')) k++;
  if (ts && k < len && s[k] == '<') { /* type parameters */
    int depth = 0;
    for (; k < len; k++) {
      if (s[k] == '<') depth++;
      else if (s[k] == '>' && --depth == 0) break;
    }
    k++;
  }
  bool method = k < len && s[k] == '(';
  if (method) {
    k = skip_parens(s, k, len);
    if (k == SIZE_MAX) return -1;
    while (k < len && strchr(" \t\r\n", s[k])) k++;
    if (lang_is(lang, "python")) {
      if (k + 1 >= len || s[k] != '-' || s[k + 1] != '>') return -1;
      k += 2;
    } else if (k >= len || s[k] != ':') {
      return -1;
    } else {
      k++;
    }
  } else if (k >= len || s[k] != ':') {
    return -1;
  } else {
    k++;
  }
  /* The annotation: to the end of the head's line, a '=' or ';' or '{' at
   * depth 0, or (Python) the last ':' of a method head. */
  size_t e = k;
  int depth = 0;
  for (; e < len && s[e] != '\n'; e++) {
    if (strchr("([<", s[e])) depth++;
    else if (strchr(")]>", s[e])) depth--;
    else if (depth == 0 && (s[e] == ';' || s[e] == '{' || (s[e] == '=' && s[e + 1] != '>') ||
                            (s[e] == ':' && !ts)))
      break;
  }
  squeeze(s, k, e, out, cap);
  if (!*out) return -1;
  if (strcmp(out, "None") == 0 || strcmp(out, "void") == 0 || strcmp(out, "t.NoReturn") == 0 ||
      strcmp(out, "NoReturn") == 0 || strcmp(out, "never") == 0)
    return 0;
  const char *tup = strncmp(out, "tuple[", 6) == 0 ? out + 6
                    : strncmp(out, "t.Tuple[", 8) == 0 ? out + 8
                    : strncmp(out, "Tuple[", 6) == 0 ? out + 6 : NULL;
  if (tup && !strstr(tup, "...")) {
    char inner[128];
    size_t il = strlen(tup);
    if (il && il < sizeof inner && tup[il - 1] == ']') {
      memcpy(inner, tup, il - 1);
      inner[il - 1] = '\0';
      return count_parts(inner);
    }
  }
  return 1;
}

/* C: a function head's return type, the words before its name on its line
 * without storage classes ("static jv f(" is jv; "void x(" gives 0). */
static int c_results(const char *s, size_t len, size_t at, size_t n, char *out, size_t cap) {
  out[0] = '\0';
  size_t k = at + n;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (k >= len || s[k] != '(') return -1; /* not a function */
  size_t a = at;
  while (a > 0 && s[a - 1] != '\n' && s[a - 1] != ';' && s[a - 1] != '}') a--;
  static const char *const drop[] = {"static", "extern", "inline", "const", "register",
                                     "__attribute__", NULL};
  size_t o = 0;
  for (size_t i = a; i < at && o + 1 < cap;) {
    if (is_id_start(s[i])) {
      size_t x = i;
      while (i < at && is_id(s[i])) i++;
      if (in_list(s + x, i - x, drop)) continue;
      for (size_t j = x; j < i && o + 1 < cap; j++) out[o++] = s[j];
    } else {
      if (s[i] == '*' && o + 1 < cap) out[o++] = '*';
      i++;
    }
  }
  out[o] = '\0';
  if (!o) return -1;
  return strcmp(out, "void") == 0 ? 0 : 1;
}

int rv_member_results(const char *s, size_t len, size_t at, size_t n, const char *lang,
                      char *out, size_t cap) {
  if (lang_is(lang, "go")) return rv_go_results(s, len, at, n, out, cap);
  if (lang_is(lang, "python") || ts_like(lang))
    return annotated_results(s, len, at, n, lang, out, cap);
  if (c_like(lang)) return c_results(s, len, at, n, out, cap);
  out[0] = '\0';
  return -1;
}

/* Whether t[a, b) ends with word w (a whole word). */
static bool ends_with_word(const char *t, size_t a, size_t b, const char *w) {
  size_t n = strlen(w);
  return b - a >= n && memcmp(t + b - n, w, n) == 0 && (b - a == n || !is_id(t[b - n - 1]));
}

/* What the member access whose receiver chain starts at ra (on the line
 * starting at ls) must give; fs: the start of the innermost function. */
static void expect_at(const rv_scan *sc, size_t ls, size_t ra, size_t fs, bool in_func,
                      rv_expect *x) {
  const char *t = sc->text;
  memset(x, 0, sizeof *x);
  x->results = -1;
  bool go = lang_is(sc->lang, "go"), py = lang_is(sc->lang, "python"), ts = ts_like(sc->lang);
  bool c = c_like(sc->lang);
  if (!go && !py && !ts && !c) return;
  size_t a = ls;
  while (a < ra && (t[a] == ' ' || t[a] == '\t')) a++;
  size_t b = ra; /* the code before the chain: t[a, b) */
  while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t' || t[b - 1] == '&' || t[b - 1] == '*'))
    b--;
  if ((py || ts) && ends_with_word(t, a, b, "await")) { /* what it resolves to */
    b -= 5;
    while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t')) b--;
  }
  x->known = true;
  if (a == b) {
    x->stmt = true;
    return;
  }
  bool cond = t[b - 1] == '!' || (b - a >= 2 && (memcmp(t + b - 2, "&&", 2) == 0 ||
                                                 memcmp(t + b - 2, "||", 2) == 0));
  if (go) cond = cond || (b - a == 2 && memcmp(t + a, "if", 2) == 0);
  if (py)
    cond = cond || ends_with_word(t, a, b, "if") || ends_with_word(t, a, b, "elif") ||
           ends_with_word(t, a, b, "while") || ends_with_word(t, a, b, "not") ||
           ends_with_word(t, a, b, "and") || ends_with_word(t, a, b, "or") ||
           ends_with_word(t, a, b, "assert");
  if ((ts || c) && t[b - 1] == '(') {
    size_t q = b - 1;
    while (q > a && t[q - 1] == ' ') q--;
    cond = cond || ends_with_word(t, a, q, "if") || ends_with_word(t, a, q, "while");
  }
  if (cond) {
    x->want_bool = true;
    return;
  }
  if ((go && ends_with_word(t, a, b, "range")) || (py && ends_with_word(t, a, b, "in") &&
                                                   b - a >= 3 && memcmp(t + a, "for", 3) == 0) ||
      (ts && ends_with_word(t, a, b, "of"))) {
    x->want_seq = true;
    return;
  }
  if (b - a == 6 && memcmp(t + a, "return", 6) == 0) {
    x->known = false;
    if (!in_func) return;
    /* The enclosing function's head: its results. */
    size_t e = fs;
    while (e < sc->len && t[e] != '{' && t[e] != '\n') e++;
    if (go) {
      size_t p = fs;
      while (p < e && t[p] != '(') p++;
      size_t q = p < e ? skip_parens(t, p, e) : SIZE_MAX;
      if (q != SIZE_MAX) { /* a method's receiver comes first: then the name, the parameters */
        size_t r = q;
        while (r < e && (t[r] == ' ' || is_id(t[r]))) r++;
        if (r < e && t[r] == '(' && r > q && is_id(t[r - 1])) q = skip_parens(t, r, e);
      }
      if (q == SIZE_MAX) return;
      size_t rb = e;
      while (rb > q && (t[rb - 1] == ' ' || t[rb - 1] == '\t')) rb--;
      while (q < rb && (t[q] == ' ' || t[q] == '\t')) q++;
      if (q < rb && t[q] == '(' && t[rb - 1] == ')') q++, rb--;
      squeeze(t, q, rb, x->ret, sizeof x->ret);
    } else {
      size_t na, nb;
      size_t he = fs + 2000 < sc->len ? fs + 2000 : sc->len;
      if (!function_name(t, fs, he, &na, &nb)) return;
      if (rv_member_results(t, he, na, nb - na, sc->lang, x->ret, sizeof x->ret) < 1) {
        x->ret[0] = '\0';
        return;
      }
    }
    x->known = x->ret[0] != '\0';
    return;
  }
  /* An assignment: the names before ":=" or "=" (a declaration's keyword
   * left out). */
  size_t eq = b;
  if (eq > a && t[eq - 1] == '=' && !(eq - a >= 2 && strchr("=!<>+-*/%|&^:", t[eq - 2]) &&
                                      t[eq - 2] != ':')) {
    size_t l = eq - 1;
    if (l > a && t[l - 1] == ':') l--;
    size_t s0 = a;
    if (ts && (ends_with_word(t, a, a + 5 < l ? a + 5 : l, "const") ||
               ends_with_word(t, a, a + 3 < l ? a + 3 : l, "let") ||
               ends_with_word(t, a, a + 3 < l ? a + 3 : l, "var")))
      while (s0 < l && is_id(t[s0])) s0++;
    int names = 1;
    for (size_t i = s0; i < l; i++) {
      if (t[i] == ',') names++;
      else if (!is_id(t[i]) && t[i] != ' ' && t[i] != '.' && t[i] != '\t') {
        x->known = false;
        return;
      }
    }
    x->results = names;
    /* C: "T x = ": the value is a T. */
    if (c && names == 1) {
      size_t e = l;
      while (e > a && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
      size_t v = e;
      while (v > a && is_id(t[v - 1])) v--;
      size_t te = v;
      while (te > a && (t[te - 1] == ' ' || t[te - 1] == '\t' || t[te - 1] == '*')) te--;
      if (te > a && v > a) {
        char decl[96];
        squeeze(t, a, v, decl, sizeof decl);
        if (decl[0] && is_id_start(decl[0])) snprintf(x->ret, sizeof x->ret, "%s", decl);
      }
    }
    return;
  }
  x->known = false;
}

/* After a ':' at offset at: an annotation (a parameter's, a property's in
 * an interface or type literal, a class attribute's) rather than an object
 * literal's value or a dict's; from the syntax tree's nodes around it. */
static bool annotation_colon(const sc_syntax_tree *tree, size_t at) {
  static const char *const typed[] = {
      "type_annotation", "property_signature", "object_type", "interface_body",
      "required_parameter", "optional_parameter", "public_field_definition", "formal_parameters",
      "type_alias_declaration", "parameters", "typed_parameter", "typed_default_parameter",
      "class_body", "abstract_class_declaration", NULL};
  static const char *const valued[] = {"pair", "object", "dictionary", "arguments", "switch_case",
                                       "ternary_expression", "conditional_expression", "lambda",
                                       "slice", "subscript", "labeled_statement", "statement_block",
                                       NULL};
  if (!tree) return false;
  TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)at,
                                               (uint32_t)at + 1);
  for (int up = 0; !ts_node_is_null(n) && up < 8; up++, n = ts_node_parent(n)) {
    const char *ty = ts_node_type(n);
    for (size_t i = 0; typed[i]; i++)
      if (strcmp(ty, typed[i]) == 0) return true;
    for (size_t i = 0; valued[i]; i++)
      if (strcmp(ty, valued[i]) == 0) return false;
  }
  return false;
}

/* Whether the code before the cursor on its line, t[ls, cur), ends where
 * a type goes; *err: where an exception or error class goes (`raise`,
 * `except`, `throw new`), whose names say so. */
static bool type_position(const char *t, size_t ls, size_t cur, const char *lang,
                          const sc_syntax_tree *tree, bool *err) {
  *err = false;
  size_t e = cur;
  while (e > ls && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
  if (e == ls) return false;
  size_t w = e;
  while (w > ls && is_id(t[w - 1])) w--;
  const char *word = t + w;
  size_t wl = e - w;
  size_t p = w; /* the word before it */
  while (p > ls && (t[p - 1] == ' ' || t[p - 1] == '\t')) p--;
  size_t q = p;
  while (q > ls && is_id(t[q - 1])) q--;
  if (wl == 0 && t[e - 1] == ':' && (lang_is(lang, "python") || ts_like(lang)))
    return annotation_colon(tree, e - 1);
  if (lang_is(lang, "python")) {
    if (word_is(word, wl, "raise") || word_is(word, wl, "except")) return *err = true;
    if (e - ls >= 2 && t[e - 1] == '>' && t[e - 2] == '-') return true;
    if (t[e - 1] == '(' && p - q == 6 && memcmp(t + q, "except", 6) == 0) return *err = true;
    if (t[e - 1] == ',') { /* isinstance(x, */
      size_t o = e - 1;
      while (o > ls && t[o - 1] != '(') o--;
      return o >= ls + 11 && memcmp(t + o - 11, "isinstance(", 11) == 0;
    }
    return false;
  }
  if (c_like(lang)) {
    if (word_is(word, wl, "struct") || word_is(word, wl, "union") || word_is(word, wl, "enum"))
      return true;
    /* A parameter of a declaration (not an argument of a call). */
    if (wl == 0 && (t[e - 1] == '(' || t[e - 1] == ',') && tree) {
      TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)e - 1,
                                                   (uint32_t)e);
      for (int up = 0; !ts_node_is_null(n) && up < 4; up++, n = ts_node_parent(n)) {
        const char *ty = ts_node_type(n);
        if (strcmp(ty, "parameter_list") == 0) return true;
        if (strcmp(ty, "argument_list") == 0) return false;
      }
    }
    return false;
  }
  if (lang_is(lang, "go")) {
    /* []T, map[K]V, *T (not a product: nothing to multiply before it). */
    if (e - ls >= 2 && t[e - 1] == ']' && t[e - 2] == '[') return true;
    if (e - ls >= 4 && memcmp(t + e - 4, "map[", 4) == 0) return true;
    if ((t[e - 1] == '*' || t[e - 1] == '&') && (e - 1 == ls || strchr(" \t([,=", t[e - 2])))
      return true; /* *T; &T{...}, a composite literal's address */
    if (wl > 0 && (word_is(word, wl, "chan") || word_is(word, wl, "struct"))) return false;
    /* "Name " in a struct or a parameter list: the type comes next. */
    if (wl > 0 && e < cur && (p == ls || t[p - 1] == '(' || t[p - 1] == ',') && tree) {
      TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)w,
                                                   (uint32_t)e);
      for (int up = 0; !ts_node_is_null(n) && up < 6; up++, n = ts_node_parent(n)) {
        const char *ty = ts_node_type(n);
        if (strcmp(ty, "field_declaration_list") == 0 || strcmp(ty, "parameter_list") == 0 ||
            strcmp(ty, "field_declaration") == 0 || strcmp(ty, "parameter_declaration") == 0)
          return true;
        if (strcmp(ty, "block") == 0 || strcmp(ty, "literal_value") == 0) return false;
      }
    }
    return false;
  }
  if (ts_like(lang)) {
    if (word_is(word, wl, "new")) {
      *err = p - q == 5 && memcmp(t + q, "throw", 5) == 0;
      return true;
    }
    return word_is(word, wl, "instanceof") || word_is(word, wl, "extends") ||
           word_is(word, wl, "implements") || word_is(word, wl, "as") ||
           (wl == 0 && t[e - 1] == '<');
  }
  return false;
}

size_t rv_candidates(rv_scan *scan, rv_cand *out, size_t cap) {
  rv_scan local = *scan;
  const rv_scan *sc = &local;
  const char *t = sc->text;
  size_t len = sc->len, cur = sc->cursor;
  /* Line boundaries of the region: RV_PREFIX_LINES before, RV_SUFFIX_LINES after. */
  size_t ls = cur;
  while (ls > 0 && t[ls - 1] != '\n') ls--;
  size_t le = cur;
  while (le < len && t[le] != '\n') le++;
  size_t pre[RV_PREFIX_LINES + 1], suf[RV_SUFFIX_LINES + 1];
  size_t npre = 0, nsuf = 0;
  pre[npre++] = ls;
  for (size_t p = ls; p > 0 && npre <= RV_PREFIX_LINES;) {
    size_t q = p - 1; /* the newline ending the previous line */
    while (q > 0 && t[q - 1] != '\n') q--;
    pre[npre++] = q;
    p = q;
  }
  suf[nsuf++] = le;
  for (size_t p = le; p < len && nsuf <= RV_SUFFIX_LINES;) {
    size_t q = p + 1;
    while (q < len && t[q] != '\n') q++;
    suf[nsuf++] = q;
    p = q;
  }
  /* The function around the cursor (its lines come first), and the
   * outermost one (receivers are declared in it, or at file scope). */
  size_t fs = 0, fe = len, name_a = 0, name_b = 0;
  local.decl_floor = cur > (32u << 10) ? cur - (32u << 10) : 0;
  if (sc->tree) {
    bool inner = false;
    TSNode *up;
    size_t k = sc_syntax_ancestry_at(sc->tree, cur, cur, &up);
    for (size_t i = 0; i < k; i++) {
      TSNode n = up[i];
      const char *ty = ts_node_type(n);
      if (!(strstr(ty, "function") || strstr(ty, "method") || strcmp(ty, "func_literal") == 0) ||
          strstr(ty, "call") ||
          strstr(ty, "type") || ts_node_end_byte(n) <= ts_node_start_byte(n) + 1)
        continue;
      if (!inner) {
        fs = ts_node_start_byte(n);
        fe = ts_node_end_byte(n);
        inner = true;
      }
      /* The innermost function with a name (a closure has none: its
       * enclosing one's). */
      if (name_b == 0) function_name(t, ts_node_start_byte(n), len, &name_a, &name_b);
      local.decl_floor = ts_node_start_byte(n);
    }
    free(up);
  }
  masks mk = {0};
  if (sc->tree) {
    TSTreeCursor c = ts_tree_cursor_new(sc_syntax_tree_root(sc->tree));
    if (ts_tree_cursor_goto_first_child(&c))
      mask_walk(&c, (uint32_t)pre[npre - 1], (uint32_t)suf[nsuf - 1], &mk, 0);
    ts_tree_cursor_delete(&c);
  }
  collector co = {sc, &mk, out, 0, cap, {{0}}, 0};
  /* The member access at the cursor: "recv." or "recv->", maybe with the
   * start of the member typed. */
  size_t w = cur;
  while (w > ls && is_id(t[w - 1])) w--;
  size_t op = access_before(t, w), ra;
  bool access = op != SIZE_MAX && op >= ls && chain_before(t, op, &ra);
  if (scan->bag) {
    /* The receiver's own name is the type's, not the member's: left out. */
    rv_bag *bag = scan->bag;
    bag->n = 0;
    bag_range(bag, t, &mk, ls, cur, access ? ra : cur, access ? cur : cur, RV_W_LINE);
    bool err = false;
    scan->want_type = !access && type_position(t, ls, cur, sc->lang, sc->tree, &err);
    if (err) { /* what `raise` and `throw new` take is named so */
      bag_add(bag, "error", 5, RV_W_LINE);
      bag_add(bag, "exception", 9, RV_W_LINE);
    }
    if (name_b > name_a) bag_add(bag, t + name_a, name_b - name_a, RV_W_FUNC);
    scan->fn_at = name_a;
    scan->fn_len = name_b - name_a;
    /* The comment right above the cursor's line says what it does. */
    for (size_t k = 1; k < npre && k <= RV_BAG_BEFORE; k++) {
      size_t a = pre[k], b = pre[k - 1];
      while (a < b && (t[a] == ' ' || t[a] == '\t')) a++;
      if (a >= b || t[a] == '\n' || !is_masked(&mk, a)) break;
      bag_range(bag, t, &mk, a, b, 0, 0, RV_W_NOTE / RV_W_PROSE);
    }
    for (size_t k = 1; k <= RV_BAG_BEFORE || k <= RV_BAG_AFTER; k++) {
      float wk = 1.0f / (1.0f + (float)k / 3.0f);
      if (k <= RV_BAG_AFTER && k < nsuf) bag_range(bag, t, &mk, suf[k - 1], suf[k], 0, 0, wk);
      if (k <= RV_BAG_BEFORE && k < npre) bag_range(bag, t, &mk, pre[k], pre[k - 1], 0, 0, wk);
    }
  }
  memset(&scan->expect, 0, sizeof scan->expect);
  /* What the member at the cursor, or (no member access) the name being
   * typed there, must give. */
  expect_at(sc, ls, access ? ra : w, fs, fs > 0 || fe < len, &scan->expect);
  if (access) {
    const char *type = resolve_recv(&co, ra, op);
    size_t we = cur;
    while (we < len && is_id(t[we])) we++;
    if (we > w) {
      add(&co, t + w, we - w, type, true, false);
      if (co.n) co.out[co.n - 1].at_cursor = true;
    }
    size_t before = co.n;
    if (type) add(&co, type, strlen(type), NULL, false, true);
    if (co.n > before) {
      rv_cand *c = &co.out[co.n - 1];
      c->at_cursor = true;
      c->known = we > cur;
      c->typed = cur > w ? strndup(t + w, cur - w) : NULL;
    }
  }
  scan_range(&co, cur, le, false);
  scan_range(&co, ls, cur, true);
  scan->n_line = co.n;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t k = 1; k < (nsuf > npre ? nsuf : npre); k++) {
      if (k < nsuf && (suf[k - 1] < fe) == (pass == 0)) scan_range(&co, suf[k - 1], suf[k], false);
      if (k < npre && (pre[k - 1] > fs) == (pass == 0)) scan_range(&co, pre[k], pre[k - 1], true);
    }
  }
  file_names(&co, pre[npre - 1], suf[nsuf - 1]);
  for (size_t i = 0; i < co.n_recv; i++) {
    free(co.recv[i].chain);
    free(co.recv[i].type);
  }
  free(mk.s);
  return co.n;
}

void rv_cands_free(rv_cand *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(c[i].name);
    free(c[i].recv_type);
    free(c[i].typed);
  }
}

/* ---- imports ------------------------------------------------------------------ */

typedef struct idset {
  uint32_t *ids;
  size_t n, cap;
} idset;

static void id_add(idset *s, uint32_t id) {
  for (size_t i = 0; i < s->n; i++)
    if (s->ids[i] == id) return;
  if (s->n < s->cap) s->ids[s->n++] = id;
}

static bool lookup(const sc_workspace *ws, const char *rel, uint32_t *id) {
  const ws_map_entry *e = ws_map_get(&ws->by_path, rel);
  if (!e || e->n == 0) return false;
  *id = (uint32_t)(e->vals[0] >> 32);
  return *id < ws->n_slots && ws->files[*id];
}

/* dir + "/" + rel with "." and ".." folded; false when it leaves the root. */
static bool join(char *out, size_t cap, const char *dir, size_t dl, const char *rel) {
  char tmp[PATH_MAX];
  int n = dl ? snprintf(tmp, sizeof tmp, "%.*s/%s", (int)dl, dir, rel)
             : snprintf(tmp, sizeof tmp, "%s", rel);
  if (n < 0 || (size_t)n >= sizeof tmp) return false;
  size_t o = 0;
  const char *p = tmp;
  while (*p) {
    const char *q = strchr(p, '/');
    size_t sl = q ? (size_t)(q - p) : strlen(p);
    if (sl == 0 || (sl == 1 && p[0] == '.')) {
      /* nothing */
    } else if (sl == 2 && p[0] == '.' && p[1] == '.') {
      if (o == 0) return false;
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
    } else {
      if (o + sl + 2 > cap) return false;
      if (o) out[o++] = '/';
      memcpy(out + o, p, sl);
      o += sl;
    }
    p = q ? q + 1 : p + sl;
  }
  out[o] = '\0';
  return o > 0;
}

static size_t dir_len(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? (size_t)(s - path) : 0;
}

/* Every file whose path is name or ends in "/" + name. */
static void by_suffix(const sc_workspace *ws, const char *name, idset *out) {
  size_t nl = strlen(name);
  for (size_t i = 0; i < ws->n_slots; i++) {
    const ws_file *f = ws->files[i];
    if (!f) continue;
    size_t pl = strlen(f->path);
    if ((pl == nl && strcmp(f->path, name) == 0) ||
        (pl > nl && f->path[pl - nl - 1] == '/' && strcmp(f->path + pl - nl, name) == 0))
      id_add(out, (uint32_t)i);
  }
}

static void resolve_c(const sc_workspace *ws, const char *path, const ws_file *f, idset *out,
                      int depth) {
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp) continue;
    bool sys = imp[0] == '<';
    const char *name = sys ? imp + 1 : imp;
    char rel[PATH_MAX];
    uint32_t id;
    size_t before = out->n;
    if (!sys && join(rel, sizeof rel, path, dir_len(path), name) && lookup(ws, rel, &id))
      id_add(out, id);
    else
      by_suffix(ws, name, out);
    /* The included headers' own includes, one level down. */
    for (size_t i = before; depth == 0 && i < out->n; i++) {
      const ws_file *h = ws->files[out->ids[i]];
      if (h) resolve_c(ws, h->path, h, out, depth + 1);
    }
  }
}

/* The folder holding the outermost package that contains path's folder
 * (where `import pkg.mod` starts), as a length of path. */
static size_t python_root(const sc_workspace *ws, const char *path) {
  size_t d = dir_len(path);
  char p[PATH_MAX];
  uint32_t id;
  while (d > 0) {
    snprintf(p, sizeof p, "%.*s/__init__.py", (int)d, path);
    if (!lookup(ws, p, &id)) break;
    size_t up = d;
    while (up > 0 && path[up - 1] != '/') up--;
    d = up ? up - 1 : 0;
  }
  return d;
}

static bool python_module(const sc_workspace *ws, const char *base, size_t bl, const char *mod,
                          idset *out) {
  char rel[PATH_MAX], p[PATH_MAX];
  size_t k = 0;
  for (size_t i = 0; mod[i] && k + 1 < sizeof rel; i++) rel[k++] = mod[i] == '.' ? '/' : mod[i];
  rel[k] = '\0';
  uint32_t id;
  char try1[PATH_MAX + 16];
  snprintf(try1, sizeof try1, "%s%s", rel, k ? ".py" : "__init__.py");
  if (join(p, sizeof p, base, bl, try1) && lookup(ws, p, &id)) {
    id_add(out, id);
    return true;
  }
  snprintf(try1, sizeof try1, "%s/__init__.py", rel);
  if (k && join(p, sizeof p, base, bl, try1) && lookup(ws, p, &id)) {
    id_add(out, id);
    return true;
  }
  return false;
}

static void resolve_python(const sc_workspace *ws, const char *path, const ws_file *f,
                           idset *out) {
  size_t root = python_root(ws, path);
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp || strcmp(imp, "__future__") == 0) continue;
    size_t dots = 0;
    while (imp[dots] == '.') dots++;
    if (dots) {
      size_t d = dir_len(path);
      for (size_t up = 1; up < dots && d > 0; up++) {
        while (d > 0 && path[d - 1] != '/') d--;
        if (d > 0) d--;
      }
      python_module(ws, path, d, imp + dots, out);
      continue;
    }
    if (python_module(ws, path, root, imp, out) || python_module(ws, "", 0, imp, out)) continue;
    /* A package elsewhere in the tree (src/ layouts, examples importing it). */
    char rel[PATH_MAX], p[PATH_MAX + 16];
    size_t n = 0;
    for (size_t i = 0; imp[i] && n + 1 < sizeof rel; i++) rel[n++] = imp[i] == '.' ? '/' : imp[i];
    rel[n] = '\0';
    size_t before = out->n;
    snprintf(p, sizeof p, "%s.py", rel);
    by_suffix(ws, p, out);
    if (out->n == before) {
      snprintf(p, sizeof p, "%s/__init__.py", rel);
      by_suffix(ws, p, out);
    }
  }
}

static void resolve_js(const sc_workspace *ws, const char *path, const ws_file *f, idset *out) {
  static const char *const exts[] = {"", ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs",
                                     "/index.ts", "/index.tsx", "/index.js", NULL};
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp || imp[0] != '.') continue; /* a package: not in the work tree */
    char base[PATH_MAX], p[PATH_MAX + 16];
    if (!join(base, sizeof base, path, dir_len(path), imp)) continue;
    uint32_t id;
    bool found = false;
    /* "./x.js" written for TypeScript's output names ./x.ts. */
    size_t bl = strlen(base);
    static const char *const js_ext[] = {".js", ".jsx", ".mjs", ".cjs", NULL};
    for (int e = 0; js_ext[e] && !found; e++) {
      size_t el = strlen(js_ext[e]);
      if (bl > el && strcmp(base + bl - el, js_ext[e]) == 0) {
        static const char *const ts_ext[] = {".ts", ".tsx", ".mts", ".cts", NULL};
        for (int t = 0; ts_ext[t] && !found; t++) {
          snprintf(p, sizeof p, "%.*s%s", (int)(bl - el), base, ts_ext[t]);
          if (lookup(ws, p, &id)) id_add(out, id), found = true;
        }
      }
    }
    for (int e = 0; exts[e] && !found; e++) {
      snprintf(p, sizeof p, "%s%s", base, exts[e]);
      if (lookup(ws, p, &id)) id_add(out, id), found = true;
    }
  }
}

/* Every .go file directly in folder (length dl of dir). */
static void go_package(const sc_workspace *ws, const char *dir, size_t dl, idset *out) {
  for (size_t i = 0; i < ws->n_slots; i++) {
    const ws_file *f = ws->files[i];
    if (!f || !lang_is(f->lang, "go") || dir_len(f->path) != dl ||
        (dl && strncmp(f->path, dir, dl) != 0))
      continue;
    id_add(out, (uint32_t)i);
  }
}

static void resolve_go(const sc_workspace *ws, const char *path, const ws_file *f, idset *out) {
  size_t dl = dir_len(path);
  go_package(ws, path, dl, out);
  /* The module's path, from the nearest go.mod above the file. */
  char mod[512] = "", modfile[PATH_MAX * 2];
  size_t mod_dir = 0;
  for (size_t d = dl;; ) {
    snprintf(modfile, sizeof modfile, "%s/%.*s%sgo.mod", ws->root, (int)d, path, d ? "/" : "");
    size_t ml = 0;
    bool big = false;
    char *gm = ws_read_all(modfile, 1 << 16, &ml, &big);
    if (gm) {
      const char *m = strstr(gm, "module ");
      if (m && (m == gm || m[-1] == '\n')) {
        m += 7;
        while (*m == ' ' || *m == '\t') m++;
        size_t n = strcspn(m, " \t\r\n");
        if (n < sizeof mod) memcpy(mod, m, n), mod[n] = '\0';
      }
      free(gm);
      mod_dir = d;
      break;
    }
    if (d == 0) break;
    while (d > 0 && path[d - 1] != '/') d--;
    if (d > 0) d--;
  }
  size_t ml = strlen(mod);
  if (!ml) return;
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp || strncmp(imp, mod, ml) != 0 || (imp[ml] != '/' && imp[ml] != '\0')) continue;
    char rel[PATH_MAX];
    const char *sub = imp[ml] ? imp + ml + 1 : "";
    if (*sub) {
      if (!join(rel, sizeof rel, path, mod_dir, sub)) continue;
    } else {
      snprintf(rel, sizeof rel, "%.*s", (int)mod_dir, path);
    }
    go_package(ws, rel, strlen(rel), out);
  }
}

/* Other languages: an import's last component names a file stem. */
static void resolve_stem(const sc_workspace *ws, const ws_file *f, idset *out) {
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp) continue;
    const char *s = imp;
    for (const char *p = imp; *p; p++)
      if (*p == '/' || *p == '.' || *p == ':') s = p + 1;
    size_t sl = strlen(s);
    if (!sl) continue;
    for (size_t i = 0; i < ws->n_slots; i++) {
      const ws_file *g = ws->files[i];
      if (!g) continue;
      const char *base = strrchr(g->path, '/');
      base = base ? base + 1 : g->path;
      if (strncmp(base, s, sl) == 0 && base[sl] == '.') id_add(out, (uint32_t)i);
    }
  }
}

size_t rv_resolve_imports(const sc_workspace *ws, const char *path, const char *lang,
                          const ws_file *self, uint32_t *ids, size_t cap) {
  idset out = {ids, 0, cap};
  if (!ws || !path || !lang) return 0;
  if (c_like(lang)) resolve_c(ws, path, self, &out, 0);
  else if (lang_is(lang, "python")) resolve_python(ws, path, self, &out);
  else if (ts_like(lang)) resolve_js(ws, path, self, &out);
  else if (lang_is(lang, "go")) resolve_go(ws, path, self, &out);
  else resolve_stem(ws, self, &out);
  /* Not the file itself. */
  uint32_t me;
  if (lookup(ws, path, &me))
    for (size_t i = 0; i < out.n; i++)
      if (out.ids[i] == me) out.ids[i--] = out.ids[--out.n];
  return out.n;
}

size_t rv_type_names(const char *s, size_t len, char **out, size_t max) {
  static const char *const skip[] = {"class", "interface", "extends", "implements", "type",
                                     "export", "abstract", "declare", "metaclass", "struct",
                                     "Generic", "ABC", "Protocol", "object", "Exception",
                                     "enum", "IntEnum", "Enum", NULL};
  size_t n = 0;
  for (size_t i = 0; i < len && n < max;) {
    if (!is_id_start(s[i]) || (i > 0 && (is_id(s[i - 1]) || s[i - 1] == '.' || s[i - 1] == '\''))) {
      i++;
      continue;
    }
    size_t a = i;
    while (i < len && is_id(s[i])) i++;
    if (i < len && s[i] == '.') continue; /* a module prefix: the name follows */
    if (in_list(s + a, i - a, k_wrappers) || in_list(s + a, i - a, skip) ||
        in_list(s + a, i - a, k_not_c_type))
      continue;
    char *w = strndup(s + a, i - a);
    if (w) out[n++] = w;
  }
  return n;
}

/* resolve.c — what retrieval looks up: the names on both sides of the
 * cursor, nearest first (resolve_names.c); the type of a member access's
 * receiver (a C variable's declared type, a Python or TypeScript
 * annotation, self/this, a Go receiver or composite literal), followed
 * through fields the index knows; and the files an import names, resolved
 * by path the way each language's tools do (not by file name: `from
 * .termui import x` must not find examples/termui.py). All lexical: no
 * type checker, no build configuration; what cannot be resolved simply is
 * not.
 *
 * What differs by language lives in its resolver (resolve_impl.h:
 * resolve_c.c, resolve_python.c, resolve_go.c, resolve_ts.c); this file
 * holds the table that names them, what they share, and the entry points
 * that call through the table. */
#define _DEFAULT_SOURCE /* strndup */
#include "resolve_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the resolvers, by language name ---------------------------------------------- */

static const struct {
  const char *name;
  const rv_lang_ops *ops;
} rv_langs[] = {
    {"c", &rv_lang_c},          {"cpp", &rv_lang_cpp},        {"python", &rv_lang_python},
    {"go", &rv_lang_go},        {"javascript", &rv_lang_ts},  {"typescript", &rv_lang_ts},
    {"tsx", &rv_lang_ts},
};

const rv_lang_ops *rv_lang(const char *lang) {
  if (!lang) return NULL;
  for (size_t i = 0; i < sizeof rv_langs / sizeof rv_langs[0]; i++)
    if (strcmp(rv_langs[i].name, lang) == 0) return rv_langs[i].ops;
  return NULL;
}

/* ---- shared --------------------------------------------------------------------- */

bool rv_in_list(const char *s, size_t n, const char *const *list) {
  for (size_t i = 0; list[i]; i++)
    if (rv_word_is(s, n, list[i])) return true;
  return false;
}

/* Skips a balanced (...) starting at s[i] == '('; the offset after it, or
 * SIZE_MAX when it does not close within the chain's end e. */
size_t rv_skip_parens(const char *s, size_t i, size_t e) {
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
const char *const rv_not_c_type[] = {
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
char *rv_annotation_type(const char *s, size_t len, size_t i) {
  for (int guard = 0; guard < 16 && i < len; guard++) {
    while (i < len && strchr(" \t\"'[(|,?<", s[i])) i++;
    if (i >= len || !rv_is_id_start(s[i])) return NULL;
    size_t a = i;
    while (i < len && rv_is_id(s[i])) i++;
    size_t b = i;
    if (i < len && s[i] == '.') { /* module.Type: the last component */
      i++;
      continue;
    }
    if (!rv_in_list(s + a, b - a, k_wrappers)) return strndup(s + a, b - a);
    while (i < len && s[i] == ' ') i++;
    if (i < len && !strchr("[<|.", s[i])) return NULL; /* a bare builtin: no class */
  }
  return NULL;
}

/* The right-hand side at s[k] when it is a chain of names, fields and
 * calls ("f(x)", "c.Root()", "other.attr") ending the expression: returned
 * as "=" and the chain, for chain_type to follow; else NULL. */
char *rv_rhs_chain(const char *s, size_t len, size_t k) {
  size_t a = k;
  for (int parts = 0; parts < 8 && k < len; parts++) {
    size_t x = k;
    while (k < len && rv_is_id(s[k])) k++;
    if (k == x) return NULL;
    if (k < len && s[k] == '(') {
      k = rv_skip_parens(s, k, len < k + 2000 ? len : k + 2000);
      if (k == SIZE_MAX) return NULL;
    }
    if (k + 1 < len && s[k] == '.' && rv_is_id_start(s[k + 1])) {
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


char *rv_decl_after(const char *s, size_t len, size_t at, size_t n, bool new_kw) {
  size_t k = at + n;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (k >= len) return NULL;
  if (s[k] == '?' || s[k] == '!') k++;
  if (k < len && s[k] == ':' && !(k + 1 < len && s[k + 1] == '=')) {
    char *t = rv_annotation_type(s, len, k + 1);
    return t;
  }
  if (s[k] == '=' && !(k + 1 < len && s[k + 1] == '=')) { /* x = Type(...), new Type(...), f() */
    k++;
    while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
    size_t rhs = k;
    if (new_kw && k + 4 < len && memcmp(s + k, "new ", 4) == 0) k += 4;
    size_t a = k;
    while (k < len && (rv_is_id(s[k]) || s[k] == '.')) {
      if (s[k] == '.') a = k + 1;
      k++;
    }
    if (k > a && k < len && s[k] == '(' && isupper((unsigned char)s[a]))
      return strndup(s + a, k - a); /* a class's constructor */
    return rv_rhs_chain(s, len, rhs);
  }
  return NULL;
}

char *rv_decl_type(const char *s, size_t len, size_t at, size_t n, const char *lang) {
  const rv_lang_ops *ops = rv_lang(lang);
  if (ops && ops->decl_type) return ops->decl_type(s, len, at, n);
  return rv_decl_after(s, len, at, n, false);
}

/* Whether offset at of the tree's text is inside a comment or a string. */
static bool in_comment(const sc_syntax_tree *tree, size_t at) {
  if (!tree) return false;
  TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)at,
                                               (uint32_t)at);
  for (int up = 0; !ts_node_is_null(n) && up < 4; up++, n = sc_syntax_parent(n))
    if (rv_masked_type(ts_node_type(n))) return true;
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
    if ((a > 0 && (rv_is_id(text[a - 1]) || text[a - 1] == '.' || text[a - 1] == '>')) ||
        (a + rn < end && rv_is_id(text[a + rn])))
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
    while (i < e && rv_is_id(s[i])) i++;
    if (i == x) return 0;
    out[n] = (seg){x, i, false};
    if (i < e && s[i] == '(') {
      i = rv_skip_parens(s, i, e);
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
  const rv_lang_ops *ops = rv_lang(sc->lang);
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
  } else if (ops && ops->self_word && ops->self_word(w, wl)) {
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
char *rv_receiver_type(const rv_scan *sc, size_t a, size_t b) {
  return chain_type(sc, sc->text, a, b, a, 0);
}

size_t rv_after_params(const char *s, size_t len, size_t at, size_t n, bool arrow) {
  size_t k = at + n;
  while (k < len && s[k] != '(') {
    if (s[k] == '=' && arrow) { /* an arrow bound to a name: its parameters */
      k++;
      continue;
    }
    if (!strchr(" \t<>,:=", s[k]) && !rv_is_id(s[k])) return SIZE_MAX;
    k++;
  }
  if (k >= len) return SIZE_MAX;
  k = rv_skip_parens(s, k, len);
  if (k == SIZE_MAX) return SIZE_MAX;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  return k;
}

/* The type a function's head (s[0, len), its name at s[at, at + n))
 * says it returns: Python "-> T", TypeScript "): T", Go ") T" or
 * ") (T, error)", C the type before the name. NULL when it says none. */
char *rv_return_type(const char *s, size_t len, size_t at, size_t n, const char *lang) {
  const rv_lang_ops *ops = rv_lang(lang);
  return ops && ops->return_type ? ops->return_type(s, len, at, n) : NULL;
}

void rv_squeeze(const char *s, size_t a, size_t b, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = a; i < b && o + 1 < cap; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') out[o++] = s[i];
  out[o] = '\0';
}

/* Top-level commas of s (results text) + 1, or 0 for "". */
int rv_count_parts(const char *s) {
  if (!*s) return 0;
  int n = 1, depth = 0;
  for (; *s; s++) {
    if (strchr("([{", *s)) depth++;
    else if (strchr(")]}", *s)) depth--;
    else if (*s == ',' && depth == 0) n++;
  }
  return n;
}

/* Python and TypeScript: the result annotation of a method head (its name
 * at s[at, at + n)): Python "-> T" (a tuple[...]: its parts), TypeScript
 * "): T"; a field's annotation ("name: T", "name?: T"). */
int rv_annotated_results(const char *s, size_t len, size_t at, size_t n, bool ts, char *out,
                         size_t cap) {
  out[0] = '\0';
  size_t k = at + n;
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
    k = rv_skip_parens(s, k, len);
    if (k == SIZE_MAX) return -1;
    while (k < len && strchr(" \t\r\n", s[k])) k++;
    if (!ts) {
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
  rv_squeeze(s, k, e, out, cap);
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
      return rv_count_parts(inner);
    }
  }
  return 1;
}

int rv_member_results(const char *s, size_t len, size_t at, size_t n, const char *lang, char *out,
                      size_t cap) {
  const rv_lang_ops *ops = rv_lang(lang);
  if (ops && ops->member_results) return ops->member_results(s, len, at, n, out, cap);
  out[0] = '\0';
  return -1;
}

/* Whether t[a, b) ends with word w (a whole word). */
bool rv_ends_with_word(const char *t, size_t a, size_t b, const char *w) {
  size_t n = strlen(w);
  return b - a >= n && memcmp(t + b - n, w, n) == 0 && (b - a == n || !rv_is_id(t[b - n - 1]));
}

/* C and TypeScript: `if (x.` and `while (x.` are conditions. */
bool rv_cond_paren(const char *t, size_t a, size_t b) {
  if (t[b - 1] != '(') return false;
  size_t q = b - 1;
  while (q > a && t[q - 1] == ' ') q--;
  return rv_ends_with_word(t, a, q, "if") || rv_ends_with_word(t, a, q, "while");
}

/* After a ':' at offset at: an annotation (a parameter's, a property's in
 * an interface or type literal, a class attribute's) rather than an object
 * literal's value or a dict's; from the syntax tree's nodes around it. */
bool rv_annotation_colon(const sc_syntax_tree *tree, size_t at) {
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
  for (int up = 0; !ts_node_is_null(n) && up < 8; up++, n = sc_syntax_parent(n)) {
    const char *ty = ts_node_type(n);
    for (size_t i = 0; typed[i]; i++)
      if (strcmp(ty, typed[i]) == 0) return true;
    for (size_t i = 0; valued[i]; i++)
      if (strcmp(ty, valued[i]) == 0) return false;
  }
  return false;
}


/* ---- imports ------------------------------------------------------------------ */

void rv_id_add(rv_idset *s, uint32_t id) {
  for (size_t i = 0; i < s->n; i++)
    if (s->ids[i] == id) return;
  if (s->n < s->cap) s->ids[s->n++] = id;
}

bool rv_lookup(const sc_workspace *ws, const char *rel, uint32_t *id) {
  const ws_map_entry *e = ws_map_get(&ws->by_path, rel);
  if (!e || e->n == 0) return false;
  *id = (uint32_t)(e->vals[0] >> 32);
  return *id < ws->n_slots && ws->files[*id];
}

/* dir + "/" + rel with "." and ".." folded; false when it leaves the root. */
bool rv_join(char *out, size_t cap, const char *dir, size_t dl, const char *rel) {
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

size_t rv_dir_len(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? (size_t)(s - path) : 0;
}

/* Every file whose path is name or ends in "/" + name. */
void rv_by_suffix(const sc_workspace *ws, const char *name, rv_idset *out) {
  size_t nl = strlen(name);
  for (size_t i = 0; i < ws->n_slots; i++) {
    const ws_file *f = ws->files[i];
    if (!f) continue;
    size_t pl = strlen(f->path);
    if ((pl == nl && strcmp(f->path, name) == 0) ||
        (pl > nl && f->path[pl - nl - 1] == '/' && strcmp(f->path + pl - nl, name) == 0))
      rv_id_add(out, (uint32_t)i);
  }
}

/* Other languages: an import's last component names a file stem. */
static void resolve_stem(const sc_workspace *ws, const ws_file *f, rv_idset *out) {
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
      if (strncmp(base, s, sl) == 0 && base[sl] == '.') rv_id_add(out, (uint32_t)i);
    }
  }
}

size_t rv_resolve_imports(const sc_workspace *ws, const char *path, const char *lang,
                          const ws_file *self, uint32_t *ids, size_t cap) {
  rv_idset out = {ids, 0, cap};
  if (!ws || !path || !lang) return 0;
  const rv_lang_ops *ops = rv_lang(lang);
  if (ops && ops->imports) ops->imports(ws, path, self, &out);
  else resolve_stem(ws, self, &out);
  /* Not the file itself. */
  uint32_t me;
  if (rv_lookup(ws, path, &me))
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
    if (!rv_is_id_start(s[i]) ||
        (i > 0 && (rv_is_id(s[i - 1]) || s[i - 1] == '.' || s[i - 1] == '\''))) {
      i++;
      continue;
    }
    size_t a = i;
    while (i < len && rv_is_id(s[i])) i++;
    if (i < len && s[i] == '.') continue; /* a module prefix: the name follows */
    if (rv_in_list(s + a, i - a, k_wrappers) || rv_in_list(s + a, i - a, skip) ||
        rv_in_list(s + a, i - a, rv_not_c_type))
      continue;
    char *w = strndup(s + a, i - a);
    if (w) out[n++] = w;
  }
  return n;
}


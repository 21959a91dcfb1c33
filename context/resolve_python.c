/* resolve_python.c — the resolver of Python (resolve_impl.h): types from
 * annotations, constructors and isinstance(); results from "-> T"; self
 * and cls are the enclosing class; imports through the package tree. */
#define _DEFAULT_SOURCE /* strndup */
#include "resolve_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* The type `isinstance(x, T)` narrows s[at, at + n) to (a tuple: its
 * first), else the annotation or the assignment's. Owned, or NULL. */
static char *py_decl_type(const char *s, size_t len, size_t at, size_t n) {
  size_t k = at + n;
  size_t p = at;
  while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
  if (p >= 11 && memcmp(s + p - 11, "isinstance(", 11) == 0) {
    while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k < len && s[k] == ',') {
      char *t = rv_annotation_type(s, len, k + 1);
      if (t) return t;
    }
  }
  return rv_decl_after(s, len, at, n, false);
}

static char *py_return_type(const char *s, size_t len, size_t at, size_t n) {
  size_t k = rv_after_params(s, len, at, n, false);
  if (k == SIZE_MAX) return NULL;
  if (k + 1 < len && s[k] == '-' && s[k + 1] == '>') return rv_annotation_type(s, len, k + 2);
  return NULL;
}

static int py_results(const char *s, size_t len, size_t at, size_t n, char *out, size_t cap) {
  return rv_annotated_results(s, len, at, n, false, out, cap);
}

static bool py_self(const char *w, size_t wl) {
  return rv_word_is(w, wl, "self") || rv_word_is(w, wl, "cls");
}

static bool py_type_position(const rv_line_end *l, const sc_syntax_tree *tree, bool *err) {
  const char *t = l->t, *word = l->t + l->w;
  size_t ls = l->ls, e = l->e, p = l->p, q = l->q, wl = l->e - l->w;
  if (wl == 0 && t[e - 1] == ':') return rv_annotation_colon(tree, e - 1);
  if (rv_word_is(word, wl, "raise") || rv_word_is(word, wl, "except")) return *err = true;
  if (e - ls >= 2 && t[e - 1] == '>' && t[e - 2] == '-') return true;
  if (t[e - 1] == '(' && p - q == 6 && memcmp(t + q, "except", 6) == 0) return *err = true;
  if (t[e - 1] == ',') { /* isinstance(x, */
    size_t o = e - 1;
    while (o > ls && t[o - 1] != '(') o--;
    return o >= ls + 11 && memcmp(t + o - 11, "isinstance(", 11) == 0;
  }
  return false;
}

static bool py_cond(const char *t, size_t a, size_t b) {
  return rv_ends_with_word(t, a, b, "if") || rv_ends_with_word(t, a, b, "elif") ||
         rv_ends_with_word(t, a, b, "while") || rv_ends_with_word(t, a, b, "not") ||
         rv_ends_with_word(t, a, b, "and") || rv_ends_with_word(t, a, b, "or") ||
         rv_ends_with_word(t, a, b, "assert");
}

/* `for x in y.` */
static bool py_seq(const char *t, size_t a, size_t b) {
  return rv_ends_with_word(t, a, b, "in") && b - a >= 3 && memcmp(t + a, "for", 3) == 0;
}

/* The folder holding the outermost package that contains path's folder
 * (where `import pkg.mod` starts), as a length of path. */
static size_t python_root(const sc_workspace *ws, const char *path) {
  size_t d = rv_dir_len(path);
  char p[PATH_MAX];
  uint32_t id;
  while (d > 0) {
    snprintf(p, sizeof p, "%.*s/__init__.py", (int)d, path);
    if (!rv_lookup(ws, p, &id)) break;
    size_t up = d;
    while (up > 0 && path[up - 1] != '/') up--;
    d = up ? up - 1 : 0;
  }
  return d;
}

static bool python_module(const sc_workspace *ws, const char *base, size_t bl, const char *mod,
                          rv_idset *out) {
  char rel[PATH_MAX], p[PATH_MAX];
  size_t k = 0;
  for (size_t i = 0; mod[i] && k + 1 < sizeof rel; i++) rel[k++] = mod[i] == '.' ? '/' : mod[i];
  rel[k] = '\0';
  uint32_t id;
  char try1[PATH_MAX + 16];
  snprintf(try1, sizeof try1, "%s%s", rel, k ? ".py" : "__init__.py");
  if (rv_join(p, sizeof p, base, bl, try1) && rv_lookup(ws, p, &id)) {
    rv_id_add(out, id);
    return true;
  }
  snprintf(try1, sizeof try1, "%s/__init__.py", rel);
  if (k && rv_join(p, sizeof p, base, bl, try1) && rv_lookup(ws, p, &id)) {
    rv_id_add(out, id);
    return true;
  }
  return false;
}

static void resolve_python(const sc_workspace *ws, const char *path, const ws_file *f,
                           rv_idset *out) {
  size_t root = python_root(ws, path);
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp || strcmp(imp, "__future__") == 0) continue;
    size_t dots = 0;
    while (imp[dots] == '.') dots++;
    if (dots) {
      size_t d = rv_dir_len(path);
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
    rv_by_suffix(ws, p, out);
    if (out->n == before) {
      snprintf(p, sizeof p, "%s/__init__.py", rel);
      rv_by_suffix(ws, p, out);
    }
  }
}

const rv_lang_ops rv_lang_python = {
    .decl_type = py_decl_type,
    .return_type = py_return_type,
    .member_results = py_results,
    .self_word = py_self,
    .type_position = py_type_position,
    .await = true,
    .cond = py_cond,
    .seq = py_seq,
    .imports = resolve_python,
};

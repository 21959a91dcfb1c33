/* resolve_c.c — the resolver of C and C++ (resolve_impl.h): a variable's
 * type is the type written before it; a function's the words before its
 * name; imports are #includes, relative to the file, then any header of
 * that name in the repository. */
#define _DEFAULT_SOURCE /* strndup */
#include "resolve_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* The C type before name s[at, at + n) in a declaration, or NULL. */
static char *c_decl_type(const char *s, size_t len, size_t at, size_t n) {
  size_t e = at + n;
  size_t k = e;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (k >= len || !strchr(";,=)[:", s[k])) return NULL;
  size_t j = at;
  while (j > 0 && strchr(" \t*&", s[j - 1])) j--;
  for (int guard = 0; guard < 3; guard++) {
    size_t b = j;
    while (j > 0 && rv_is_id(s[j - 1])) j--;
    if (j == b) return NULL;
    if (rv_word_is(s + j, b - j, "const") || rv_word_is(s + j, b - j, "volatile")) {
      while (j > 0 && strchr(" \t*&", s[j - 1])) j--;
      continue;
    }
    if (isdigit((unsigned char)s[j]) || rv_in_list(s + j, b - j, rv_not_c_type)) return NULL;
    /* What comes before the type: a statement or parameter boundary, or a
     * tag keyword; not an operator (x = y * z). */
    size_t p = j;
    while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
    bool ok = p == 0 || strchr("\n(,;{}", s[p - 1]);
    if (!ok && p >= 6) {
      size_t q = p;
      while (q > 0 && rv_is_id(s[q - 1])) q--;
      ok = rv_word_is(s + q, p - q, "struct") || rv_word_is(s + q, p - q, "union") ||
           rv_word_is(s + q, p - q, "enum") || rv_word_is(s + q, p - q, "const") ||
           rv_word_is(s + q, p - q, "static") || rv_word_is(s + q, p - q, "class");
    }
    return ok ? strndup(s + j, b - j) : NULL;
  }
  return NULL;
}

static char *c_return_type(const char *s, size_t len, size_t at, size_t n) {
  (void)len, (void)n;
  size_t j = at;
  while (j > 0 && strchr(" \t*&\n", s[j - 1])) j--;
  size_t b = j;
  while (j > 0 && rv_is_id(s[j - 1])) j--;
  if (j == b || rv_in_list(s + j, b - j, rv_not_c_type)) return NULL;
  return strndup(s + j, b - j);
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
    if (rv_is_id_start(s[i])) {
      size_t x = i;
      while (i < at && rv_is_id(s[i])) i++;
      if (rv_in_list(s + x, i - x, drop)) continue;
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

static bool cpp_self(const char *w, size_t wl) { return rv_word_is(w, wl, "this"); }

static bool c_type_position(const rv_line_end *l, const sc_syntax_tree *tree, bool *err) {
  (void)err;
  const char *t = l->t, *word = l->t + l->w;
  size_t e = l->e, wl = l->e - l->w;
  if (rv_word_is(word, wl, "struct") || rv_word_is(word, wl, "union") ||
      rv_word_is(word, wl, "enum"))
    return true;
  /* A parameter of a declaration (not an argument of a call). */
  if (wl == 0 && (t[e - 1] == '(' || t[e - 1] == ',') && tree) {
    TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)e - 1,
                                                 (uint32_t)e);
    for (int up = 0; !ts_node_is_null(n) && up < 4; up++, n = sc_syntax_parent(n)) {
      const char *ty = ts_node_type(n);
      if (strcmp(ty, "parameter_list") == 0) return true;
      if (strcmp(ty, "argument_list") == 0) return false;
    }
  }
  return false;
}

/* "T x = ": the value is a T. */
static void c_assign_type(const char *t, size_t a, size_t l, rv_expect *x) {
  size_t e = l;
  while (e > a && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
  size_t v = e;
  while (v > a && rv_is_id(t[v - 1])) v--;
  size_t te = v;
  while (te > a && (t[te - 1] == ' ' || t[te - 1] == '\t' || t[te - 1] == '*')) te--;
  if (te > a && v > a) {
    char decl[96];
    rv_squeeze(t, a, v, decl, sizeof decl);
    if (decl[0] && rv_is_id_start(decl[0])) snprintf(x->ret, sizeof x->ret, "%s", decl);
  }
}

static void resolve_c(const sc_workspace *ws, const char *path, const ws_file *f, rv_idset *out,
                      int depth) {
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp) continue;
    bool sys = imp[0] == '<';
    const char *name = sys ? imp + 1 : imp;
    char rel[PATH_MAX];
    uint32_t id;
    size_t before = out->n;
    if (!sys && rv_join(rel, sizeof rel, path, rv_dir_len(path), name) && rv_lookup(ws, rel, &id))
      rv_id_add(out, id);
    else
      rv_by_suffix(ws, name, out);
    /* The included headers' own includes, one level down. */
    for (size_t i = before; depth == 0 && i < out->n; i++) {
      const ws_file *h = ws->files[out->ids[i]];
      if (h) resolve_c(ws, h->path, h, out, depth + 1);
    }
  }
}


static void c_imports(const sc_workspace *ws, const char *path, const ws_file *f, rv_idset *out) {
  resolve_c(ws, path, f, out, 0);
}

const rv_lang_ops rv_lang_c = {
    .decl_type = c_decl_type,
    .return_type = c_return_type,
    .member_results = c_results,
    .type_position = c_type_position,
    .cond = rv_cond_paren,
    .assign_type = c_assign_type,
    .imports = c_imports,
};

/* C++: C, and `this` is the enclosing class. */
const rv_lang_ops rv_lang_cpp = {
    .decl_type = c_decl_type,
    .return_type = c_return_type,
    .member_results = c_results,
    .self_word = cpp_self,
    .type_position = c_type_position,
    .cond = rv_cond_paren,
    .assign_type = c_assign_type,
    .imports = c_imports,
};

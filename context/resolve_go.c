/* resolve_go.c — the resolver of Go (resolve_impl.h): a name's type from
 * its declaration ("name Type"), a composite literal (`x := &T{`) or a
 * call's first result; results from the head's result list; imports are
 * the module's packages (go.mod) and the file's own. */
#define _DEFAULT_SOURCE /* strndup */
#include "resolve_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static char *go_decl_type(const char *s, size_t len, size_t at, size_t n) {
  size_t e = at + n;
  size_t k = e;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (k >= len) return NULL;
  if (s[k] == ',') { /* x, err := f(): x is f's first result */
    size_t p = at;
    while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
    if (!(p == 0 || s[p - 1] == '\n')) return NULL; /* only the first name */
    while (k < len && (s[k] == ',' || s[k] == ' ' || rv_is_id(s[k]))) k++;
  }
  if (s[k] == ':' && k + 1 < len && s[k + 1] == '=') { /* x := &T{, pkg.T{ or f() */
    k += 2;
    while (k < len && strchr(" \t&", s[k])) k++;
    size_t rhs = k, a = k, b = k;
    while (k < len && (rv_is_id(s[k]) || s[k] == '.')) {
      if (s[k] == '.') a = k + 1;
      k++;
    }
    b = k;
    if (b > a && k < len && s[k] == '{') return strndup(s + a, b - a);
    return rv_rhs_chain(s, len, rhs);
  }
  /* A declaration: the name, then its type (params, var, fields, receivers). */
  size_t p = at;
  while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) p--;
  bool decl_start =
      p == 0 || strchr("\n(,", s[p - 1]) || (p >= 3 && rv_word_is(s + p - 3, 3, "var"));
  if (!decl_start || k == e) return NULL; /* "name Type": a space between (not name.field) */
  while (k < len && strchr("*&[]", s[k])) k++;
  size_t a = k;
  while (k < len && (rv_is_id(s[k]) || s[k] == '.')) {
    if (s[k] == '.') a = k + 1;
    k++;
  }
  if (k == a || !rv_is_id_start(s[a]) || rv_word_is(s + a, k - a, "func") ||
      rv_word_is(s + a, k - a, "map") || rv_word_is(s + a, k - a, "chan"))
    return NULL;
  return strndup(s + a, k - a);
}

static char *go_return_type(const char *s, size_t len, size_t at, size_t n) {
  size_t k = rv_after_params(s, len, at, n, false);
  if (k == SIZE_MAX) return NULL;
  if (k < len && s[k] == '(') k++;
  while (k < len && strchr(" \t*&[]", s[k])) k++;
  size_t a = k;
  while (k < len && (rv_is_id(s[k]) || s[k] == '.')) {
    if (s[k] == '.') a = k + 1;
    k++;
  }
  if (k == a || rv_word_is(s + a, k - a, "error") || rv_word_is(s + a, k - a, "string") ||
      rv_word_is(s + a, k - a, "bool") || rv_word_is(s + a, k - a, "int"))
    return NULL;
  return strndup(s + a, k - a);
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
    rv_squeeze(s, k, b, out, cap);
    return *out ? 1 : -1;
  }
  size_t p = rv_skip_parens(s, k, e);
  if (p == SIZE_MAX) return -1;
  size_t b = e;
  while (b > p && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '{')) b--;
  while (p < b && (s[p] == ' ' || s[p] == '\t')) p++;
  if (p < b && s[p] == '(' && s[b - 1] == ')') p++, b--;
  rv_squeeze(s, p, b, out, cap);
  return rv_count_parts(out);
}


static bool go_type_position(const rv_line_end *l, const sc_syntax_tree *tree, bool *err) {
  (void)err;
  const char *t = l->t, *word = l->t + l->w;
  size_t ls = l->ls, cur = l->cur, e = l->e, w = l->w, p = l->p, wl = l->e - l->w;
  /* []T, map[K]V, *T (not a product: nothing to multiply before it). */
  if (e - ls >= 2 && t[e - 1] == ']' && t[e - 2] == '[') return true;
  if (e - ls >= 4 && memcmp(t + e - 4, "map[", 4) == 0) return true;
  if ((t[e - 1] == '*' || t[e - 1] == '&') && (e - 1 == ls || strchr(" \t([,=", t[e - 2])))
    return true; /* *T; &T{...}, a composite literal's address */
  if (wl > 0 && (rv_word_is(word, wl, "chan") || rv_word_is(word, wl, "struct"))) return false;
  /* "Name " in a struct or a parameter list: the type comes next. */
  if (wl > 0 && e < cur && (p == ls || t[p - 1] == '(' || t[p - 1] == ',') && tree) {
    TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)w,
                                                 (uint32_t)e);
    for (int up = 0; !ts_node_is_null(n) && up < 6; up++, n = sc_syntax_parent(n)) {
      const char *ty = ts_node_type(n);
      if (strcmp(ty, "field_declaration_list") == 0 || strcmp(ty, "parameter_list") == 0 ||
          strcmp(ty, "field_declaration") == 0 || strcmp(ty, "parameter_declaration") == 0)
        return true;
      if (strcmp(ty, "block") == 0 || strcmp(ty, "literal_value") == 0) return false;
    }
  }
  return false;
}

static bool go_cond(const char *t, size_t a, size_t b) {
  return b - a == 2 && memcmp(t + a, "if", 2) == 0;
}

static bool go_seq(const char *t, size_t a, size_t b) {
  return rv_ends_with_word(t, a, b, "range");
}

/* The results of the function head t[fs, e): after its parameters (a
 * method's receiver comes first), outer parentheses dropped. */
static void go_head_results(const char *t, size_t fs, size_t e, char *ret, size_t cap) {
  size_t p = fs;
  while (p < e && t[p] != '(') p++;
  size_t q = p < e ? rv_skip_parens(t, p, e) : SIZE_MAX;
  if (q != SIZE_MAX) { /* a method's receiver comes first: then the name, the parameters */
    size_t r = q;
    while (r < e && (t[r] == ' ' || rv_is_id(t[r]))) r++;
    if (r < e && t[r] == '(' && r > q && rv_is_id(t[r - 1])) q = rv_skip_parens(t, r, e);
  }
  if (q == SIZE_MAX) return;
  size_t rb = e;
  while (rb > q && (t[rb - 1] == ' ' || t[rb - 1] == '\t')) rb--;
  while (q < rb && (t[q] == ' ' || t[q] == '\t')) q++;
  if (q < rb && t[q] == '(' && t[rb - 1] == ')') q++, rb--;
  rv_squeeze(t, q, rb, ret, cap);
}

/* Every .go file directly in folder (length dl of dir). */
static void go_package(const sc_workspace *ws, const char *dir, size_t dl, rv_idset *out) {
  for (size_t i = 0; i < ws->n_slots; i++) {
    const ws_file *f = ws->files[i];
    if (!f || !f->lang || strcmp(f->lang, "go") != 0 || rv_dir_len(f->path) != dl ||
        (dl && strncmp(f->path, dir, dl) != 0))
      continue;
    rv_id_add(out, (uint32_t)i);
  }
}

static void resolve_go(const sc_workspace *ws, const char *path, const ws_file *f, rv_idset *out) {
  size_t dl = rv_dir_len(path);
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
      if (!rv_join(rel, sizeof rel, path, mod_dir, sub)) continue;
    } else {
      snprintf(rel, sizeof rel, "%.*s", (int)mod_dir, path);
    }
    go_package(ws, rel, strlen(rel), out);
  }
}

const rv_lang_ops rv_lang_go = {
    .decl_type = go_decl_type,
    .return_type = go_return_type,
    .member_results = rv_go_results,
    .type_position = go_type_position,
    .cond = go_cond,
    .seq = go_seq,
    .head_results = go_head_results,
    .imports = resolve_go,
};

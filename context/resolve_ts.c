/* resolve_ts.c — the resolver of JavaScript, TypeScript and TSX
 * (resolve_impl.h): types from annotations, `new T(...)`, instanceof and
 * destructuring; results from "): T"; this is the enclosing class;
 * imports are relative specifiers with extension resolution. */
#define _DEFAULT_SOURCE /* strndup */
#include "resolve_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* Name s[at, at + n) taken apart from an object, `const {a, name, b} =
 * x.y;`: "=x.y.name" (for the chain to be followed), or NULL. Not a
 * renamed one (`{name: other}` declares other). */
static char *destructured(const char *s, size_t len, size_t at, size_t n) {
  size_t b = at;
  while (b > 0 && (rv_is_id(s[b - 1]) || strchr(" \t\n,", s[b - 1]))) b--;
  if (b == 0 || s[b - 1] != '{') return NULL;
  size_t q = b - 1;
  while (q > 0 && (s[q - 1] == ' ' || s[q - 1] == '\t')) q--;
  size_t w = q;
  while (w > 0 && rv_is_id(s[w - 1])) w--;
  if (!(rv_word_is(s + w, q - w, "const") || rv_word_is(s + w, q - w, "let") ||
        rv_word_is(s + w, q - w, "var")))
    return NULL;
  size_t e = at + n;
  while (e < len && (s[e] == ' ' || s[e] == '\t')) e++;
  if (e < len && s[e] == ':') return NULL; /* renamed */
  while (e < len && (rv_is_id(s[e]) || strchr(" \t\n,", s[e]))) e++;
  if (e >= len || s[e] != '}') return NULL;
  e++;
  while (e < len && (s[e] == ' ' || s[e] == '\t')) e++;
  if (e + 1 >= len || s[e] != '=' || s[e + 1] == '=') return NULL;
  e++;
  while (e < len && (s[e] == ' ' || s[e] == '\t')) e++;
  char *rhs = rv_rhs_chain(s, len, e);
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

/* The type `x instanceof T` narrows s[at, at + n) to; else a destructured
 * field's, the annotation's or the assignment's. Owned, or NULL. */
static char *ts_decl_type(const char *s, size_t len, size_t at, size_t n) {
  size_t k = at + n;
  while (k < len && (s[k] == ' ' || s[k] == '\t')) k++;
  if (!(len - k < 11 || memcmp(s + k, "instanceof", 10) != 0 || rv_is_id(s[k + 10]))) {
    char *t = rv_annotation_type(s, len, k + 10);
    if (t) return t;
  }
  if (k >= len) return NULL;
  char *d = destructured(s, len, at, n); /* const {a, b} = x: a is x.a */
  if (d) return d;
  return rv_decl_after(s, len, at, n, true);
}

static char *ts_return_type(const char *s, size_t len, size_t at, size_t n) {
  size_t k = rv_after_params(s, len, at, n, true);
  if (k == SIZE_MAX) return NULL;
  return k < len && s[k] == ':' ? rv_annotation_type(s, len, k + 1) : NULL;
}

static int ts_results(const char *s, size_t len, size_t at, size_t n, char *out, size_t cap) {
  return rv_annotated_results(s, len, at, n, true, out, cap);
}

static bool ts_self(const char *w, size_t wl) { return rv_word_is(w, wl, "this"); }

static bool ts_type_position(const rv_line_end *l, const sc_syntax_tree *tree, bool *err) {
  const char *t = l->t, *word = l->t + l->w;
  size_t e = l->e, p = l->p, q = l->q, wl = l->e - l->w;
  if (wl == 0 && t[e - 1] == ':') return rv_annotation_colon(tree, e - 1);
  if (rv_word_is(word, wl, "new")) {
    *err = p - q == 5 && memcmp(t + q, "throw", 5) == 0;
    return true;
  }
  return rv_word_is(word, wl, "instanceof") || rv_word_is(word, wl, "extends") ||
         rv_word_is(word, wl, "implements") || rv_word_is(word, wl, "as") ||
         (wl == 0 && t[e - 1] == '<');
}

/* `for (x of y.` */
static bool ts_seq(const char *t, size_t a, size_t b) { return rv_ends_with_word(t, a, b, "of"); }

/* `const x = y.`: the names after the keyword. */
static size_t ts_assign_start(const char *t, size_t a, size_t l) {
  size_t s0 = a;
  if (rv_ends_with_word(t, a, a + 5 < l ? a + 5 : l, "const") ||
      rv_ends_with_word(t, a, a + 3 < l ? a + 3 : l, "let") ||
      rv_ends_with_word(t, a, a + 3 < l ? a + 3 : l, "var"))
    while (s0 < l && rv_is_id(t[s0])) s0++;
  return s0;
}

static void resolve_js(const sc_workspace *ws, const char *path, const ws_file *f, rv_idset *out) {
  static const char *const exts[] = {"", ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs",
                                     "/index.ts", "/index.tsx", "/index.js", NULL};
  for (size_t k = 0; k < f->n_imports; k++) {
    const char *imp = ws_str(f, f->imports[k]);
    if (!imp || imp[0] != '.') continue; /* a package: not in the work tree */
    char base[PATH_MAX], p[PATH_MAX + 16];
    if (!rv_join(base, sizeof base, path, rv_dir_len(path), imp)) continue;
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
          if (rv_lookup(ws, p, &id)) rv_id_add(out, id), found = true;
        }
      }
    }
    for (int e = 0; exts[e] && !found; e++) {
      snprintf(p, sizeof p, "%s%s", base, exts[e]);
      if (rv_lookup(ws, p, &id)) rv_id_add(out, id), found = true;
    }
  }
}

const rv_lang_ops rv_lang_ts = {
    .decl_type = ts_decl_type,
    .return_type = ts_return_type,
    .member_results = ts_results,
    .self_word = ts_self,
    .type_position = ts_type_position,
    .await = true,
    .cond = rv_cond_paren,
    .seq = ts_seq,
    .assign_start = ts_assign_start,
    .imports = resolve_js,
};

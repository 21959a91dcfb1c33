/* doc.c — the edit engine's document (a language, a path and a parsed text
 * that edits are applied to), the names of kinds and statuses, and the
 * small text helpers the other files of edit/ share. */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */
#include "edit_impl.h"

#include <stdlib.h>
#include <string.h>

char *sc_edit__dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

char *sc_edit__splice(const char *text, size_t len, size_t a, size_t b, const char *rep,
                      size_t rep_len, size_t *out_len) {
  size_t n = len - (b - a) + rep_len;
  char *o = malloc(n + 1);
  if (!o) return NULL;
  memcpy(o, text, a);
  memcpy(o + a, rep, rep_len);
  memcpy(o + a + rep_len, text + b, len - b);
  o[n] = '\0';
  *out_len = n;
  return o;
}

void sc_edit__line_col(const char *text, size_t off, uint32_t *line, uint32_t *col) {
  uint32_t l = 0;
  size_t ls = 0;
  for (size_t i = 0; i < off; i++)
    if (text[i] == '\n') {
      l++;
      ls = i + 1;
    }
  *line = l;
  *col = (uint32_t)(off - ls);
}

void sc_edit__visit(const sc_syntax_tree *tree, size_t from, size_t to,
                    void (*visit)(void *user, TSNode node), void *user) {
  sc_edit__visit_node(sc_syntax_tree_root(tree), from, to, visit, user);
}

void sc_edit__visit_node(TSNode top, size_t from, size_t to,
                         void (*visit)(void *user, TSNode node), void *user) {
  TSTreeCursor c = ts_tree_cursor_new(top);
  for (bool down = true;;) {
    TSNode n = ts_tree_cursor_current_node(&c);
    bool inside = ts_node_end_byte(n) >= from && ts_node_start_byte(n) <= to;
    if (down && inside) visit(user, n);
    if (down && inside && ts_tree_cursor_goto_first_child(&c)) continue;
    if (ts_tree_cursor_goto_next_sibling(&c)) {
      down = true;
      continue;
    }
    down = false;
    if (!ts_tree_cursor_goto_parent(&c)) break;
  }
  ts_tree_cursor_delete(&c);
}

const char *sc_edit_kind_name(sc_edit_kind kind) {
  switch (kind) {
  case SC_EDIT_HOLE: return "hole";
  case SC_EDIT_DIAGNOSTIC: return "diagnostic";
  case SC_EDIT_QUERY: return "query";
  case SC_EDIT_BLOCK: return "block";
  }
  return "none";
}

const char *sc_edit_status_name(sc_edit_status s) {
  static const char *k_names[] = {"pending", "done", "failed", "skipped"};
  return (unsigned)s < 4 ? k_names[s] : "?";
}

const char *sc_edit_source_name(int seed) { return seed < 0 ? "insertion" : "model"; }

/* The rest of a document around its tree (taken over): path and language. */
static sc_status doc_finish(sc_edit_doc *d, const char *path, sc_status st, sc_edit_doc **out,
                            sc_error *err) {
  if (st == SC_OK && path && !(d->path = strdup(path)))
    st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (st != SC_OK) {
    sc_edit_doc_free(d);
    return st;
  }
  d->lang = sc_syntax_tree_language(d->tree);
  *out = d;
  return SC_OK;
}

sc_status sc_edit_doc_new(const char *lang, const char *path, const char *text, size_t len,
                          sc_edit_doc **out, sc_error *err) {
  *out = NULL;
  sc_edit_doc *d = calloc(1, sizeof *d);
  SC_CHECK(d, err, SC_ERR_NOMEM, "out of memory");
  return doc_finish(d, path, sc_syntax_tree_new(lang, text, len, &d->tree, err), out, err);
}

sc_status sc_edit_doc_from_tree(const sc_syntax_tree *tree, const char *path, sc_edit_doc **out,
                                sc_error *err) {
  *out = NULL;
  sc_edit_doc *d = calloc(1, sizeof *d);
  SC_CHECK(d, err, SC_ERR_NOMEM, "out of memory");
  sc_status st = sc_syntax_tree_copy(tree, &d->tree, err);
  if (st == SC_OK && sc_syntax_tree_pending(d->tree))
    st = sc_syntax_tree_parse(d->tree, NULL, NULL, err);
  return doc_finish(d, path, st, out, err);
}

void sc_edit_doc_free(sc_edit_doc *doc) {
  if (!doc) return;
  sc_edit__cc_forget(doc);
  sc_syntax_tree_free(doc->tree);
  free(doc->path);
  free(doc);
}

const char *sc_edit_doc_text(const sc_edit_doc *doc, size_t *len) {
  return sc_syntax_tree_text(doc->tree, len);
}

const char *sc_edit_doc_language(const sc_edit_doc *doc) { return doc->lang; }

sc_status sc_edit_doc_apply(sc_edit_doc *doc, size_t start, size_t end, const char *text,
                            size_t len, sc_error *err) {
  size_t cur_len;
  const char *cur = sc_syntax_tree_text(doc->tree, &cur_len);
  SC_CHECK(start <= end && end <= cur_len, err, SC_ERR_INVALID,
           "edit [%zu, %zu) is outside the text (%zu bytes)", start, end, cur_len);
  size_t n;
  char *next = sc_edit__splice(cur, cur_len, start, end, text, len, &n);
  SC_CHECK(next, err, SC_ERR_NOMEM, "out of memory");
  /* A fresh parse, not an incremental one: the next site's checks compare
   * against this tree, and a fresh parse is what a reader of the file gets. */
  sc_status st = sc_syntax_tree_set_text(doc->tree, next, n, err);
  free(next);
  doc->py_known = false;
  sc_edit__cc_forget(doc);
  return st;
}

void sc_edit_candidate_free(sc_edit_candidate *c) {
  if (!c) return;
  free(c->text);
  c->text = NULL;
  c->len = 0;
}

void sc_edit_result_free(sc_edit_result *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_tries; i++) {
    free(r->tries[i].text);
    free(r->tries[i].error);
  }
  free(r->tries);
  free(r->text);
  r->tries = NULL;
  r->n_tries = 0;
  r->text = NULL;
}

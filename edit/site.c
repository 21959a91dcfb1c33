/* site.c — where an edit goes: holes, the statement around a diagnostic,
 * query captures and empty blocks, found in an sc_edit_doc. */
#define _GNU_SOURCE /* memmem */
#include "edit_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  l->v[l->n++] = (sc_edit_site){kind, a, b, a, single_line};
  return true;
}

/* Is [x, y) a comment holding nothing but the marker? */
static bool comment_only(const char *t, size_t x, size_t y, const char *marker) {
  size_t ml = strlen(marker);
  const char *m = memmem(t + x, y - x, marker, ml);
  if (!m) return false;
  for (const char *p = t + x; p < t + y; p++) {
    if (p >= m && p < m + ml) continue;
    if (!strchr("/#*- \t;<>!", *p)) return false;
  }
  return true;
}

sc_status sc_edit_find_holes(const sc_edit_doc *doc, const sc_edit_hole_options *o, size_t from,
                             size_t to, sc_edit_site **out, size_t *n, sc_error *err) {
  *out = NULL;
  *n = 0;
  size_t len;
  const char *t = sc_edit_doc_text(doc, &len);
  const char *marker = o && o->marker ? o->marker : SC_EDIT_DEFAULT_MARKER;
  size_t ml = strlen(marker);
  SC_CHECK(ml > 0, err, SC_ERR_INVALID, "the hole marker is empty");
  bool ellipsis = o && o->python_ellipsis && strcmp(doc->lang, "python") == 0;
  if (from > len) from = len;
  if (to > len) to = len;
  while (from > 0 && t[from - 1] != '\n') from--;
  site_list l = {0};
  for (size_t p = from; p < len && p <= to;) {
    const char *nl = memchr(t + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - t) : len, x = p, y = e;
    while (x < y && (t[x] == ' ' || t[x] == '\t')) x++;
    while (y > x && (t[y - 1] == ' ' || t[y - 1] == '\t' || t[y - 1] == '\r')) y--;
    bool ok = true;
    if ((ellipsis && y - x == 3 && memcmp(t + x, "...", 3) == 0) ||
        comment_only(t, x, y, marker)) {
      ok = push(&l, SC_EDIT_HOLE, x, y, false);
    } else {
      for (size_t q = x; ok && q + ml <= y;) {
        const char *m = memmem(t + q, y - q, marker, ml);
        if (!m) break;
        size_t ma = (size_t)(m - t);
        ok = push(&l, SC_EDIT_HOLE, ma, ma + ml, true);
        q = ma + ml;
      }
    }
    if (!ok) {
      free(l.v);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    p = e + 1;
  }
  *out = l.v;
  *n = l.n;
  return SC_OK;
}

sc_status sc_edit_site_for_diagnostic(const sc_edit_doc *doc, size_t offset, const char *message,
                                      sc_edit_site *out, sc_error *err) {
  (void)message;
  size_t len;
  sc_edit_doc_text(doc, &len);
  SC_CHECK(offset <= len, err, SC_ERR_INVALID, "offset %zu is past the end (%zu bytes)", offset,
           len);
  size_t s0, s1;
  sc_statement_span(doc->tree, offset, &s0, &s1);
  /* From the diagnostic to the end of its statement when it is inside it
   * (the part most likely wrong), else the whole statement. */
  if (offset > s0 && offset < s1) s0 = offset;
  *out = (sc_edit_site){SC_EDIT_DIAGNOSTIC, s0, s1, offset, false};
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
  TSQueryCursor *cur = ts_query_cursor_new();
  ts_query_cursor_exec(cur, q, sc_syntax_tree_root(doc->tree));
  TSQueryMatch m;
  uint32_t ci;
  while (ok && ts_query_cursor_next_capture(cur, &m, &ci)) {
    const TSQueryCapture *c = &m.captures[ci];
    if (c->index == cap_idx)
      ok = push(&l, SC_EDIT_QUERY, ts_node_start_byte(c->node), ts_node_end_byte(c->node), false);
  }
  ts_query_cursor_delete(cur);
  ts_query_delete(q);
  if (!ok) {
    free(l.v);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
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
  *out = (sc_edit_site){SC_EDIT_BLOCK, cursor, cursor, cursor, false};
  return true;
}

/* document.c — open documents: text, version, line index; keyed by URI.
 * The store also remembers which documents were used most recently and the
 * line ranges edited most recently, for repository context. Each document's
 * syntax tree is kept here but parsed only on workers: a request takes a
 * snapshot (the last tree and the edits queued since), its job parses it,
 * and the parsed tree comes back to the document for the next request.
 * A tree the loop lets go of goes to the store's reaper: freeing a big one
 * walks every node, too long for the loop (reaper.c). */
#define _POSIX_C_SOURCE 200809L
#include "context.h"
#include "lsp_impl.h"

#include <stdlib.h>
#include <string.h>

/* Open addressing with linear probing; tombstones keep probe chains intact. */
struct sc_document_store {
  sc_document **slots;
  size_t cap;   /* power of two */
  size_t count; /* live documents */
  size_t used;  /* live + tombstones */
  sc_recent_edit recent[SC_RECENT_EDITS]; /* most recent first */
  size_t n_recent;
  uint64_t next_tree_gen; /* for sc_document.tree_gen: unique across documents */
  sc_reaper *reaper;      /* frees released trees; NULL: freed in place (owned) */
};

static sc_document k_tombstone;

static uint64_t uri_hash(const char *uri) { return sc_hash64(uri, strlen(uri), 0); }

sc_document_store *sc_document_store_new(void) {
  sc_document_store *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cap = 64;
  s->slots = calloc(s->cap, sizeof *s->slots);
  if (!s->slots) {
    free(s);
    return NULL;
  }
  /* Without a thread of its own, trees are freed where they are let go. */
  s->reaper = sc_reaper_new();
  return s;
}

static void clear_edits(sc_document *d) {
  for (size_t i = 0; i < d->n_edits; i++) free(d->edits[i].text);
  d->n_edits = 0;
}

static void free_tree(void *t) { sc_syntax_tree_free(t); }

/* A tree costs about 25 times its text for real code (docs/reliability.md). */
#define TREE_BYTES_PER_TEXT_BYTE 25

/* Lets go of a tree: the reaper frees it (or, without one, this call).
 * last: no other tree is likely to share its nodes (the document closed or
 * its text replaced), so freeing it gives its memory back. */
static void release_tree(sc_reaper *r, sc_syntax_tree *t, bool last) {
  size_t len = 0;
  if (t && last) sc_syntax_tree_text(t, &len);
  sc_reaper_put(r, free_tree, t, len * TREE_BYTES_PER_TEXT_BYTE);
}

static sc_reaper *doc_reaper(const sc_document *d) { return d->store ? d->store->reaper : NULL; }

static void bump_tree_gen(sc_document *d) {
  d->tree_gen = d->store ? ++d->store->next_tree_gen : d->tree_gen + 1;
}

void sc_document_drop_syntax(sc_document *d) {
  clear_edits(d);
  release_tree(doc_reaper(d), d->tree, true);
  d->tree = NULL;
  bump_tree_gen(d);
}

static void document_free(sc_document *d) {
  if (!d || d == &k_tombstone) return;
  clear_edits(d);
  free(d->edits);
  release_tree(doc_reaper(d), d->tree, true);
  free(d->uri);
  free(d->language_id);
  free(d->text);
  sc_line_index_free(&d->lines);
  free(d);
}

void sc_document_store_free(sc_document_store *s) {
  if (!s) return;
  for (size_t i = 0; i < s->cap; i++) document_free(s->slots[i]);
  for (size_t i = 0; i < s->n_recent; i++) free(s->recent[i].uri);
  free(s->slots);
  sc_reaper_free(s->reaper); /* after the documents: it frees their trees */
  free(s);
}

size_t sc_document_store_count(const sc_document_store *s) { return s->count; }

static size_t find_slot(const sc_document_store *s, const char *uri, bool *found) {
  size_t mask = s->cap - 1;
  size_t i = (size_t)uri_hash(uri) & mask;
  size_t first_free = SIZE_MAX;
  for (;;) {
    sc_document *d = s->slots[i];
    if (!d) {
      *found = false;
      return first_free != SIZE_MAX ? first_free : i;
    }
    if (d == &k_tombstone) {
      if (first_free == SIZE_MAX) first_free = i;
    } else if (strcmp(d->uri, uri) == 0) {
      *found = true;
      return i;
    }
    i = (i + 1) & mask;
  }
}

static sc_status grow(sc_document_store *s) {
  size_t cap = s->cap * 2;
  sc_document **slots = calloc(cap, sizeof *slots);
  if (!slots) return SC_ERR_NOMEM;
  for (size_t i = 0; i < s->cap; i++) {
    sc_document *d = s->slots[i];
    if (!d || d == &k_tombstone) continue;
    size_t j = (size_t)uri_hash(d->uri) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = d;
  }
  free(s->slots);
  s->slots = slots;
  s->cap = cap;
  s->used = s->count;
  return SC_OK;
}

sc_document *sc_document_store_get(sc_document_store *s, const char *uri) {
  bool found;
  size_t i = find_slot(s, uri, &found);
  return found ? s->slots[i] : NULL;
}

/* Records that lines [first, old_last] of doc became [first, new_last]:
 * ranges below shift, a range it touches or adjoins merges into it, and the
 * result moves to the front. */
static void note_edit(sc_document *doc, uint32_t first, uint32_t old_last, uint32_t new_last) {
  sc_document_store *s = doc->store;
  doc->last_used_ms = sc_now_ms();
  doc->index_dirty = true;
  if (!s) return;
  int64_t delta = (int64_t)new_last - (int64_t)old_last;
  uint32_t lo = first, hi = new_last;
  size_t k = 0;
  char *uri = NULL;
  for (size_t i = 0; i < s->n_recent; i++) {
    sc_recent_edit *e = &s->recent[i];
    if (strcmp(e->uri, doc->uri) == 0) {
      if (e->start_line > old_last + 1) {
        e->start_line = (uint32_t)((int64_t)e->start_line + delta);
        e->end_line = (uint32_t)((int64_t)e->end_line + delta);
      } else if (e->end_line + 1 >= first) {
        if (e->start_line < lo) lo = e->start_line;
        /* An end inside the replaced lines now lies within [first,
         * new_last]: a delete must not leave it pointing past them. */
        uint32_t end = e->end_line > old_last ? (uint32_t)((int64_t)e->end_line + delta)
                                              : e->end_line < first ? e->end_line : new_last;
        if (end > hi) hi = end;
        if (uri) free(e->uri);
        else uri = e->uri; /* reused for the merged range */
        continue;
      }
    }
    s->recent[k++] = *e;
  }
  s->n_recent = k;
  if (!uri && !(uri = strdup(doc->uri))) return;
  if (s->n_recent == SC_RECENT_EDITS) free(s->recent[--s->n_recent].uri);
  memmove(s->recent + 1, s->recent, s->n_recent * sizeof *s->recent);
  s->recent[0] = (sc_recent_edit){uri, lo, hi, sc_now_ms()};
  s->n_recent++;
}

static uint32_t count_lines(const char *t, size_t a, size_t b) {
  uint32_t n = 0;
  for (size_t i = a; i < b; i++) n += t[i] == '\n';
  return n;
}

/* The room a document's text of len bytes gets: a quarter more, so that
 * typing grows it without a realloc each time. */
static size_t text_cap(size_t len) { return len + 1 + len / 4 + 64; }

static sc_status replace_text(sc_document *doc, const char *text, size_t len, sc_error *err) {
  if (len + 1 > doc->cap) {
    size_t cap = text_cap(len);
    char *nt = realloc(doc->text, cap);
    SC_CHECK(nt, err, SC_ERR_NOMEM, "out of memory for a %zu-byte document", len);
    doc->text = nt;
    doc->cap = cap;
  }
  memcpy(doc->text, text, len);
  doc->text[len] = '\0';
  doc->len = len;
  doc->lines_valid = false;
  doc->edit_seq++;
  /* The old tree would only be replaced by a fresh parse: free it now. */
  sc_document_drop_syntax(doc);
  return SC_OK;
}

sc_status sc_document_text_make(const char *src, size_t len, sc_document_text *out) {
  *out = (sc_document_text){0};
  out->cap = text_cap(len);
  if (!(out->text = malloc(out->cap))) return SC_ERR_NOMEM;
  memcpy(out->text, src, len);
  out->text[len] = '\0';
  out->len = len;
  out->lines_valid = sc_line_index_build(&out->lines, out->text, len) == SC_OK;
  return SC_OK;
}

void sc_document_text_free(sc_document_text *t) {
  free(t->text);
  sc_line_index_free(&t->lines);
  *t = (sc_document_text){0};
}

/* replace_text with a text made elsewhere: adopted, not copied. */
static void adopt_text(sc_document *doc, sc_document_text *made) {
  free(doc->text);
  doc->text = made->text;
  doc->len = made->len;
  doc->cap = made->cap;
  sc_line_index_free(&doc->lines);
  doc->lines = made->lines;
  doc->lines_valid = made->lines_valid;
  doc->edit_seq++;
  sc_document_drop_syntax(doc);
  *made = (sc_document_text){0};
}

sc_status sc_document_set_text(sc_document *doc, const char *text, size_t len,
                               sc_error *err) {
  /* What changed: the span between the common prefix and suffix. */
  size_t p = 0, n = doc->len < len ? doc->len : len;
  while (p < n && doc->text[p] == text[p]) p++;
  size_t q = 0;
  while (q < n - p && doc->text[doc->len - 1 - q] == text[len - 1 - q]) q++;
  uint32_t first = count_lines(text, 0, p);
  uint32_t old_last = first + count_lines(doc->text, p, doc->len - q);
  uint32_t new_last = first + count_lines(text, p, len - q);
  bool same = p == doc->len && p == len;
  SC_TRY(replace_text(doc, text, len, err));
  if (!same) note_edit(doc, first, old_last, new_last);
  return SC_OK;
}

static sc_status store_open(sc_document_store *s, const char *uri, const char *language_id,
                            int64_t version, const char *text, size_t len,
                            sc_document_text *made, sc_error *err) {
  if ((s->used + 1) * 4 > s->cap * 3)
    SC_CHECK(grow(s) == SC_OK, err, SC_ERR_NOMEM, "out of memory opening %s", uri);
  bool found;
  size_t i = find_slot(s, uri, &found);
  sc_document *d = found ? s->slots[i] : calloc(1, sizeof *d);
  SC_CHECK(d, err, SC_ERR_NOMEM, "out of memory opening %s", uri);
  if (!found) {
    d->store = s;
    d->uri = strdup(uri);
    if (!d->uri) {
      free(d);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory opening %s", uri);
    }
  }
  char *lang = strdup(language_id ? language_id : "");
  if (lang && made) adopt_text(d, made);
  if (!lang || (!made && replace_text(d, text, len, err) != SC_OK)) {
    free(lang);
    if (!found) document_free(d);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory opening %s", uri);
  }
  free(d->language_id);
  d->language_id = lang;
  d->version = version;
  d->last_used_ms = sc_now_ms();
  d->index_dirty = false;
  d->lang = sc_context_language_for(lang, uri);
  d->unsynced = false; /* the client's own text */
  bump_tree_gen(d);
  if (!found) {
    if (s->slots[i] != &k_tombstone) s->used++;
    s->slots[i] = d;
    s->count++;
  }
  return SC_OK;
}

sc_status sc_document_store_open(sc_document_store *s, const char *uri,
                                 const char *language_id, int64_t version,
                                 const char *text, size_t len, sc_error *err) {
  return store_open(s, uri, language_id, version, text, len, NULL, err);
}

sc_status sc_document_store_open_made(sc_document_store *s, const char *uri,
                                      const char *language_id, int64_t version,
                                      sc_document_text *made, sc_error *err) {
  return store_open(s, uri, language_id, version, NULL, 0, made, err);
}

bool sc_document_store_close(sc_document_store *s, const char *uri) {
  bool found;
  size_t i = find_slot(s, uri, &found);
  if (!found) return false;
  document_free(s->slots[i]);
  s->slots[i] = &k_tombstone;
  s->count--;
  return true;
}

const sc_line_index *sc_document_lines(sc_document *doc) {
  if (!doc->lines_valid) {
    if (sc_line_index_build(&doc->lines, doc->text, doc->len) != SC_OK) return NULL;
    doc->lines_valid = true;
  }
  return &doc->lines;
}

/* Queues an edit for the tree; past a few hundred, a fresh parse is
 * cheaper than replaying them. Without a tree too: a snapshot of the text
 * may be parsing, and its tree will need the edits made since. */
static void queue_edit(sc_document *doc, size_t a, size_t b, const char *text, size_t len) {
  if (!doc->lang) return;
  if (doc->n_edits == doc->cap_edits) {
    size_t cap = doc->cap_edits ? doc->cap_edits * 2 : 16;
    sc_pending_edit *ne = cap <= 512 ? realloc(doc->edits, cap * sizeof *ne) : NULL;
    if (ne) {
      doc->edits = ne;
      doc->cap_edits = cap;
    }
  }
  char *copy = doc->n_edits < doc->cap_edits ? malloc(len + 1) : NULL;
  if (copy) {
    memcpy(copy, text, len);
    doc->edits[doc->n_edits++] = (sc_pending_edit){a, b, copy, len};
  } else {
    sc_document_drop_syntax(doc);
  }
}

sc_status sc_document_apply_edit(sc_document *doc, uint32_t start_line,
                                 uint32_t start_char, uint32_t end_line,
                                 uint32_t end_char, sc_pos_encoding enc,
                                 const char *text, size_t len, bool *clamped,
                                 sc_error *err) {
  const sc_line_index *idx = sc_document_lines(doc);
  SC_CHECK(idx, err, SC_ERR_NOMEM, "out of memory indexing %s", doc->uri);
  /* A reversed range used to be swapped, which deleted text the client
   * never meant to touch; one past the last line can only be its end. */
  uint32_t n_lines = (uint32_t)idx->n;
  SC_CHECK(start_line < end_line || (start_line == end_line && start_char <= end_char), err,
           SC_ERR_INVALID, "range %u:%u-%u:%u is reversed", start_line, start_char, end_line,
           end_char);
  SC_CHECK(end_line < n_lines || (end_line == n_lines && end_char == 0), err, SC_ERR_INVALID,
           "range %u:%u-%u:%u is past the end of the document (%u lines)", start_line,
           start_char, end_line, end_char, n_lines);
  bool c1 = false, c2 = false;
  size_t a = sc_pos_to_offset(doc->text, doc->len, idx, start_line, start_char, enc, &c1);
  size_t b = sc_pos_to_offset(doc->text, doc->len, idx, end_line, end_char, enc, &c2);
  if (clamped) *clamped = (c1 && start_line < n_lines) || (c2 && end_line < n_lines);
  SC_CHECK(a <= b, err, SC_ERR_INTERNAL, "range %u:%u-%u:%u maps to bytes %zu-%zu", start_line,
           start_char, end_line, end_char, a, b);
  size_t new_len = doc->len - (b - a) + len;
  if (new_len + 1 > doc->cap) {
    size_t cap = text_cap(new_len);
    char *nt = realloc(doc->text, cap);
    SC_CHECK(nt, err, SC_ERR_NOMEM, "out of memory editing %s", doc->uri);
    doc->text = nt;
    doc->cap = cap;
  }
  uint32_t first = sc_line_index_line_of(idx, a);
  uint32_t old_last = first + count_lines(doc->text, a, b);
  uint32_t new_last = first + count_lines(text, 0, len);
  note_edit(doc, first, old_last, new_last);
  memmove(doc->text + a + len, doc->text + b, doc->len - b);
  memcpy(doc->text + a, text, len);
  doc->len = new_len;
  doc->text[new_len] = '\0';
  /* The index follows the edit: rebuilt for each change of a didChange
   * that carries many (a replace-all: 20,000 in a 120 KB file held the
   * loop 1.7 s, nine tenths of it rebuilding), it made them quadratic. */
  doc->lines_valid =
      sc_line_index_splice(&doc->lines, doc->text, doc->len, a, b, len) == SC_OK;
  doc->edit_seq++;
  queue_edit(doc, a, b, text, len);
  return SC_OK;
}

/* A batch's new text nt (len bytes in cap, owned) replaces the old. */
static void install_text(sc_document *doc, char *nt, size_t len, size_t cap) {
  free(doc->text);
  doc->text = nt;
  doc->cap = cap;
  doc->len = len;
  doc->lines_valid = false; /* built once, when next asked for */
  doc->edit_seq++;
}

/* Makes the text with changes ch[0..n) whose bytes in the text as it is
 * are [ab[2i], ab[2i+1]), first[i] the line each starts on when it is made:
 * the recent-edit lines and the tree's edit queue as one by one, in the
 * order given (ascending: the changes lie in that order in the text, so each
 * one's bytes move by what the ones before it added; else in reverse, and
 * none moves). Owns ab and first. */
static sc_status splice_all(sc_document *doc, const sc_text_change *ch, size_t n, size_t *ab,
                            uint32_t *first, bool ascending, sc_error *err) {
  size_t new_len = doc->len;
  for (size_t i = 0; i < n; i++) new_len = new_len - (ab[2 * i + 1] - ab[2 * i]) + ch[i].len;
  size_t cap = text_cap(new_len);
  char *nt = malloc(cap);
  if (!nt) {
    free(ab);
    free(first);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory editing %s", doc->uri);
  }
  for (size_t i = 0; i < n; i++)
    note_edit(doc, first[i], first[i] + count_lines(doc->text, ab[2 * i], ab[2 * i + 1]),
              first[i] + count_lines(ch[i].text, 0, ch[i].len));
  size_t o = 0, from = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = ascending ? k : n - 1 - k;
    memcpy(nt + o, doc->text + from, ab[2 * i] - from);
    o += ab[2 * i] - from;
    memcpy(nt + o, ch[i].text, ch[i].len);
    o += ch[i].len;
    from = ab[2 * i + 1];
  }
  memcpy(nt + o, doc->text + from, doc->len - from);
  nt[new_len] = '\0';
  long long moved = 0;
  for (size_t i = 0; i < n; i++) {
    size_t a = ab[2 * i] + (size_t)moved, b = ab[2 * i + 1] + (size_t)moved;
    queue_edit(doc, a, b, ch[i].text, ch[i].len);
    if (ascending) moved += (long long)ch[i].len - (long long)(ab[2 * i + 1] - ab[2 * i]);
  }
  free(ab);
  free(first);
  install_text(doc, nt, new_len, cap);
  return SC_OK;
}

/* A batch of n changes starts: the text's line index (borrowed), and the
 * changes' bytes (two a change) and first lines, owned by the caller
 * (splice_all or refuse frees them). */
static sc_status batch_start(sc_document *doc, size_t n, const sc_line_index **idx, size_t **ab,
                             uint32_t **first, sc_error *err) {
  *idx = sc_document_lines(doc);
  *ab = malloc(n * 2 * sizeof **ab + 1);
  *first = malloc(n * sizeof **first + 1);
  if (*idx && *ab && *first) return SC_OK;
  free(*ab);
  free(*first);
  return sc_error_set(err, SC_ERR_NOMEM, "out of memory editing %s", doc->uri);
}

static sc_status refuse(size_t *ab, uint32_t *first, sc_error *err) {
  free(ab);
  free(first);
  return sc_error_set(err, SC_ERR_UNSUPPORTED, "not a batch for one pass");
}

sc_status sc_document_apply_reversed(sc_document *doc, const sc_text_change *ch, size_t n,
                                     sc_pos_encoding enc, sc_error *err) {
  const sc_line_index *idx;
  size_t *ab;
  uint32_t *first;
  SC_TRY(batch_start(doc, n, &idx, &ab, &first, err));
  for (size_t i = 0; i < n; i++) {
    const sc_text_change *c = &ch[i];
    bool c1 = true, c2 = true;
    if (c->sl >= idx->n || c->el >= idx->n || c->sl > c->el ||
        (c->sl == c->el && c->sc > c->ec))
      return refuse(ab, first, err);
    ab[2 * i] = sc_pos_to_offset(doc->text, doc->len, idx, c->sl, c->sc, enc, &c1);
    ab[2 * i + 1] = sc_pos_to_offset(doc->text, doc->len, idx, c->el, c->ec, enc, &c2);
    /* Clamped, a position depends on where its line ends, which a change
     * ahead of it may have moved. */
    if (c1 || c2 || ab[2 * i] > ab[2 * i + 1] || (i > 0 && ab[2 * i + 1] > ab[2 * i - 2]))
      return refuse(ab, first, err);
    first[i] = sc_line_index_line_of(idx, ab[2 * i]);
  }
  return splice_all(doc, ch, n, ab, first, false, err);
}

/* Whether a \r is at off - 1 or off: a change there could join or split a
 * \r\n, which moves lines in a way the mapping below does not follow. */
static bool near_cr(const char *t, size_t len, size_t off) {
  return (off > 0 && t[off - 1] == '\r') || (off < len && t[off] == '\r');
}

sc_status sc_document_apply_in_order(sc_document *doc, const sc_text_change *ch, size_t n,
                                     sc_pos_encoding enc, sc_error *err) {
  const sc_line_index *idx;
  size_t *ab;
  uint32_t *first;
  SC_TRY(batch_start(doc, n, &idx, &ab, &first, err));
  /* The text as the changes so far left it is the text made so far, then
   * the text as it is from byte `from` on. (lp, cp) is where `from` is now,
   * (lf, cf) where it is in the text as it is: a position on a later line
   * is on line l - lp + lf here, one on line lp at cp or after it is
   * c - cp + cf on line lf. */
  size_t from = 0;
  uint32_t lp = 0, cp = 0, lf = 0, cf = 0;
  for (size_t i = 0; i < n; i++) {
    const sc_text_change *c = &ch[i];
    uint32_t pl[2] = {c->sl, c->el}, pc[2] = {c->sc, c->ec};
    for (int k = 0; k < 2; k++) {
      uint64_t line, col;
      if (pl[k] > lp) line = (uint64_t)pl[k] - lp + lf, col = pc[k];
      else if (pl[k] == lp && pc[k] >= cp) line = lf, col = (uint64_t)pc[k] - cp + cf;
      else return refuse(ab, first, err); /* before where the last one ended */
      bool clamped = true;
      if (line >= idx->n || col > UINT32_MAX) return refuse(ab, first, err);
      ab[2 * i + k] = sc_pos_to_offset(doc->text, doc->len, idx, (uint32_t)line, (uint32_t)col,
                                       enc, &clamped);
      if (clamped || near_cr(doc->text, doc->len, ab[2 * i + k])) return refuse(ab, first, err);
    }
    if (ab[2 * i] > ab[2 * i + 1] || memchr(c->text, '\r', c->len))
      return refuse(ab, first, err);
    first[i] = c->sl;
    /* Where this change's end is now, and in the text as it is. */
    const char *nl = NULL;
    for (size_t k = c->len; k-- > 0 && !nl;)
      if (c->text[k] == '\n') nl = c->text + k;
    uint32_t lines = count_lines(c->text, 0, c->len);
    lp = c->sl + lines;
    cp = nl ? sc_text_units(nl + 1, c->len - (size_t)(nl + 1 - c->text), enc)
            : c->sc + sc_text_units(c->text, c->len, enc);
    from = ab[2 * i + 1];
    sc_offset_to_pos(doc->text, doc->len, idx, from, enc, &lf, &cf);
  }
  return splice_all(doc, ch, n, ab, first, true, err);
}

/* ---- a batch in any order: the text in blocks for the batch ----------------
 * Every block but the last ends with a \n, so each line lies in one block
 * and line l is found by counting the blocks' line breaks; a change whose
 * range spans blocks merges them first, and a block grown past BLOCK_MAX
 * is cut again at line breaks. A change costs the blocks' count plus its
 * block's bytes: blocks of 4-16 KB balance the two (20,000 changes in a
 * 1 MB file: 80 ms of the loop; with 32-128 KB blocks 287 ms, finding a
 * line in a block of 2,000 short ones). */
#define BLOCK_TARGET ((size_t)4 << 10)
#define BLOCK_MAX ((size_t)16 << 10)

typedef struct block {
  char *p;
  size_t len, cap;
  uint32_t nl; /* line breaks in p */
} block;

typedef struct blocks {
  block *v;
  size_t n, cap;
} blocks;

static void blocks_free(blocks *bs) {
  for (size_t i = 0; i < bs->n; i++) free(bs->v[i].p);
  free(bs->v);
}

/* Cuts t[0..len) into blocks at line breaks about BLOCK_TARGET apart and
 * inserts them at bs->v[at]. */
static bool blocks_insert(blocks *bs, size_t at, const char *t, size_t len) {
  size_t from = 0;
  do {
    size_t to = len;
    if (len - from > BLOCK_TARGET) {
      const char *nl = memchr(t + from + BLOCK_TARGET, '\n', len - from - BLOCK_TARGET);
      if (nl) to = (size_t)(nl - t) + 1;
    }
    if (bs->n == bs->cap) {
      size_t cap = bs->cap ? bs->cap * 2 : 64;
      block *nv = realloc(bs->v, cap * sizeof *nv);
      if (!nv) return false;
      bs->v = nv;
      bs->cap = cap;
    }
    block b = {malloc(to - from + 64), to - from, to - from + 64, count_lines(t, from, to)};
    if (!b.p) return false;
    memcpy(b.p, t + from, to - from);
    memmove(bs->v + at + 1, bs->v + at, (bs->n - at) * sizeof *bs->v);
    bs->v[at++] = b;
    bs->n++;
    from = to;
  } while (from < len);
  return true;
}

/* Where (line, character) is: block *k, byte *off in it, and the bytes of
 * the blocks before it in *before. False where it is past the text, past
 * its line's end, or next to a \r. */
static bool blocks_find(const blocks *bs, uint32_t line, uint32_t character, sc_pos_encoding enc,
                        size_t *k, size_t *off, size_t *before) {
  size_t i = 0, bytes = 0;
  uint64_t first = 0; /* the line block i starts with */
  while (i + 1 < bs->n && line >= first + bs->v[i].nl) {
    first += bs->v[i].nl;
    bytes += bs->v[i].len;
    i++;
  }
  const block *b = &bs->v[i];
  if (line > first + b->nl) return false; /* past the last line */
  size_t ls = 0;
  for (uint64_t l = first; l < line; l++) ls = (size_t)((char *)memchr(b->p + ls, '\n', b->len - ls) - b->p) + 1;
  const char *nl = memchr(b->p + ls, '\n', b->len - ls);
  size_t starts[2] = {ls, nl ? (size_t)(nl - b->p) + 1 : b->len};
  sc_line_index one = {starts, nl ? 2 : 1, 2};
  bool clamped = true;
  size_t o = sc_pos_to_offset(b->p, b->len, &one, 0, character, enc, &clamped);
  if (clamped || near_cr(b->p, b->len, o)) return false;
  *k = i;
  *off = o;
  *before = bytes;
  return true;
}

/* Merges blocks k..j into k. */
static bool blocks_merge(blocks *bs, size_t k, size_t j) {
  size_t len = 0;
  for (size_t i = k; i <= j; i++) len += bs->v[i].len;
  block *b = &bs->v[k];
  if (len + 64 > b->cap) {
    char *np = realloc(b->p, len + 64);
    if (!np) return false;
    b->p = np;
    b->cap = len + 64;
  }
  for (size_t i = k + 1; i <= j; i++) {
    memcpy(b->p + b->len, bs->v[i].p, bs->v[i].len);
    b->len += bs->v[i].len;
    b->nl += bs->v[i].nl;
    free(bs->v[i].p);
  }
  memmove(bs->v + k + 1, bs->v + j + 1, (bs->n - j - 1) * sizeof *bs->v);
  bs->n -= j - k;
  return true;
}

sc_status sc_document_apply_any_order(sc_document *doc, const sc_text_change *ch, size_t n,
                                      sc_pos_encoding enc, sc_error *err) {
  blocks bs = {0};
  /* Each change's bytes and lines as it was made: the recent-edit lines and
   * the tree's edit queue follow once the whole batch is in. */
  size_t *ab = malloc(n * 2 * sizeof *ab + 1);
  uint32_t *lines = malloc(n * 2 * sizeof *lines + 1);
  bool ok = ab && lines && blocks_insert(&bs, 0, doc->text, doc->len);
  bool refused = false;
  for (size_t i = 0; ok && !refused && i < n; i++) {
    const sc_text_change *c = &ch[i];
    size_t ka, oa, kb, ob, before_a, before_b;
    if (c->sl > c->el || (c->sl == c->el && c->sc > c->ec) || memchr(c->text, '\r', c->len) ||
        !blocks_find(&bs, c->sl, c->sc, enc, &ka, &oa, &before_a) ||
        !blocks_find(&bs, c->el, c->ec, enc, &kb, &ob, &before_b) || before_a + oa > before_b + ob) {
      refused = true;
      break;
    }
    if (kb > ka) {
      ob += before_b - before_a;
      if (!(ok = blocks_merge(&bs, ka, kb))) break;
    }
    block *b = &bs.v[ka];
    uint32_t old_nl = count_lines(b->p, oa, ob), new_nl = count_lines(c->text, 0, c->len);
    size_t len = b->len - (ob - oa) + c->len;
    if (len + 1 > b->cap) {
      size_t cap = len + len / 4 + 64;
      char *np = realloc(b->p, cap);
      if (!(ok = np != NULL)) break;
      b->p = np;
      b->cap = cap;
    }
    memmove(b->p + oa + c->len, b->p + ob, b->len - ob);
    memcpy(b->p + oa, c->text, c->len);
    b->len = len;
    b->nl = b->nl - old_nl + new_nl;
    ab[2 * i] = before_a + oa;
    ab[2 * i + 1] = before_a + ob;
    lines[2 * i] = old_nl;
    lines[2 * i + 1] = new_nl;
    if (b->len > BLOCK_MAX) {
      /* Cut again: the bytes move into new blocks after it. */
      block big = *b;
      memmove(bs.v + ka, bs.v + ka + 1, (bs.n - ka - 1) * sizeof *bs.v);
      bs.n--;
      ok = blocks_insert(&bs, ka, big.p, big.len);
      free(big.p);
    }
  }
  if (!ok || refused) {
    blocks_free(&bs);
    free(ab);
    free(lines);
    return refused ? sc_error_set(err, SC_ERR_UNSUPPORTED, "not a batch for one pass")
                   : sc_error_set(err, SC_ERR_NOMEM, "out of memory editing %s", doc->uri);
  }
  size_t len = 0;
  for (size_t i = 0; i < bs.n; i++) len += bs.v[i].len;
  size_t cap = text_cap(len);
  char *nt = malloc(cap);
  if (!nt) {
    blocks_free(&bs);
    free(ab);
    free(lines);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory editing %s", doc->uri);
  }
  size_t o = 0;
  for (size_t i = 0; i < bs.n; i++) {
    memcpy(nt + o, bs.v[i].p, bs.v[i].len);
    o += bs.v[i].len;
  }
  nt[len] = '\0';
  blocks_free(&bs);
  for (size_t i = 0; i < n; i++) {
    note_edit(doc, ch[i].sl, ch[i].sl + lines[2 * i], ch[i].sl + lines[2 * i + 1]);
    queue_edit(doc, ab[2 * i], ab[2 * i + 1], ch[i].text, ch[i].len);
  }
  free(ab);
  free(lines);
  install_text(doc, nt, len, cap);
  return SC_OK;
}

struct sc_syntax_snapshot {
  sc_syntax_tree *tree; /* the old tree's copy, or the text's unparsed tree (owned) */
  sc_pending_edit *edits; /* copies, applied on the worker (owned) */
  size_t n_edits;
  size_t n_covered; /* the document's queued edits its tree includes once parsed */
  uint64_t tree_gen; /* the document's, when the snapshot was made */
  bool parsed;
  sc_reaper *reaper; /* the store's (borrowed): the store outlives its snapshots */
};

void sc_syntax_snapshot_free(sc_syntax_snapshot *snap) {
  if (!snap) return;
  for (size_t i = 0; i < snap->n_edits; i++) free(snap->edits[i].text);
  free(snap->edits);
  /* Often the last reference to a tree nobody adopted, let go on the loop. */
  release_tree(snap->reaper, snap->tree, false);
  free(snap);
}

sc_syntax_snapshot *sc_document_syntax_snapshot(sc_document *doc, sc_error *err) {
  if (!doc->lang) return NULL;
  sc_syntax_snapshot *snap = calloc(1, sizeof *snap);
  if (!snap) {
    sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  snap->tree_gen = doc->tree_gen;
  snap->reaper = doc_reaper(doc);
  sc_status st;
  if (doc->tree) {
    st = sc_syntax_tree_copy(doc->tree, &snap->tree, err);
    if (st == SC_OK && doc->n_edits &&
        !(snap->edits = calloc(doc->n_edits, sizeof *snap->edits)))
      st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == SC_OK && i < doc->n_edits; i++) {
      const sc_pending_edit *e = &doc->edits[i];
      char *t = malloc(e->len + 1);
      if (!t) {
        st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
        break;
      }
      memcpy(t, e->text, e->len);
      snap->edits[snap->n_edits++] = (sc_pending_edit){e->start, e->old_end, t, e->len};
    }
  } else {
    st = sc_syntax_tree_new_unparsed(doc->lang, doc->text, doc->len, &snap->tree, err);
  }
  snap->n_covered = doc->n_edits; /* replayed, or already in the text */
  if (st != SC_OK) {
    if (st == SC_ERR_UNSUPPORTED) doc->lang = NULL; /* do not retry on every request */
    sc_syntax_snapshot_free(snap);
    return NULL;
  }
  return snap;
}

static bool job_stopped(void *job) { return sc_job_cancelled(job) != SC_JOB_LIVE; }

sc_syntax_tree *sc_syntax_snapshot_parse(sc_syntax_snapshot *snap, sc_job *job, sc_error *err) {
  if (snap->parsed) return snap->tree;
  /* The queued edits, replayed on the old tree without parsing, then one
   * incremental parse for all of them. */
  for (size_t i = 0; i < snap->n_edits; i++) {
    sc_pending_edit *e = &snap->edits[i];
    if (sc_syntax_tree_edit_unparsed(snap->tree, e->start, e->old_end, e->text, e->len, err) !=
        SC_OK)
      return NULL;
    free(e->text);
    e->text = NULL;
    e->len = 0;
  }
  if (sc_syntax_tree_parse(snap->tree, job ? job_stopped : NULL, job, err) != SC_OK) return NULL;
  snap->parsed = true;
  return snap->tree;
}

void sc_document_syntax_adopt(sc_document_store *store, const char *uri,
                              const sc_syntax_snapshot *snap) {
  sc_document *d = snap && snap->parsed && uri ? sc_document_store_get(store, uri) : NULL;
  if (!d || d->tree_gen != snap->tree_gen || d->n_edits < snap->n_covered) return;
  sc_syntax_tree *copy = NULL;
  if (sc_syntax_tree_copy(snap->tree, &copy, NULL) != SC_OK) return;
  release_tree(doc_reaper(d), d->tree, false); /* mostly shared with the copy */
  d->tree = copy;
  /* The edits made after the snapshot stay queued on the newer tree. */
  size_t k = snap->n_covered;
  for (size_t i = 0; i < k; i++) free(d->edits[i].text);
  if (d->n_edits > k) memmove(d->edits, d->edits + k, (d->n_edits - k) * sizeof *d->edits);
  d->n_edits -= k;
  bump_tree_gen(d);
}

const sc_recent_edit *sc_document_store_recent_edits(const sc_document_store *s, size_t *n) {
  *n = s->n_recent;
  return s->recent;
}

size_t sc_document_store_recent_docs(sc_document_store *s, const sc_document *except,
                                     sc_document **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < s->cap && max; i++) {
    sc_document *d = s->slots[i];
    /* An unsynced document's text is not what the user sees. */
    if (!d || d == &k_tombstone || d == except || d->unsynced) continue;
    /* Insertion into the top max by last use: few documents, small max. */
    size_t at = n < max ? n++ : max;
    while (at > 0 && out[at - 1]->last_used_ms < d->last_used_ms) {
      if (at < max) out[at] = out[at - 1];
      at--;
    }
    if (at < max) out[at] = d;
  }
  return n;
}

void sc_document_touch(sc_document *doc) { doc->last_used_ms = sc_now_ms(); }

/* lines.c — the workspace's line table (workspace_impl.h): each file's
 * non-blank lines, and which lines follow which across the workspace, for
 * the drafts (draft.c) that propose the next lines at a cursor. It is the
 * line n-gram of model/train/evaluate.py (and eval/ngram.c: the line that
 * follows the previous non-blank line, stripped) over the repository being
 * edited instead of a training corpus, kept current file by file with the
 * rest of the index.
 *
 * Memory: a file's table is its non-blank lines' text (no line breaks) and
 * one offset a line; the workspace's table one 24-byte slot per distinct
 * line and 8 bytes per place, at most WS_LINE_PER_KEY places per key, so a
 * file of a million identical lines costs its text and one short list. The
 * whole is bounded by the workspace's max_line_bytes. */
#define _POSIX_C_SOURCE 200809L
#include "workspace_impl.h"

#include <stdlib.h>
#include <string.h>

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

uint64_t ws_line_key(const char *s, size_t n) {
  size_t a = 0;
  while (a < n && blank(s[a])) a++;
  while (n > a && blank(s[n - 1])) n--;
  if (n == a) return 0;
  uint64_t h = sc_hash64(s + a, n - a, 0x11e5);
  return h ? h : 1;
}

size_t ws_lines_file_bytes(const ws_file *f) {
  return (size_t)f->ltext_len + (size_t)f->n_ltab * sizeof *f->ltab;
}

bool ws_lines_build(ws_file *f, const char *text, size_t len, size_t room) {
  size_t n = 0, bytes = 0;
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len;
    if (ws_line_key(text + p, e - p)) {
      n++;
      bytes += e - p <= WS_LINE_MAX ? e - p + 1 : 0;
    }
    p = e + 1;
  }
  if (n == 0) return true;
  if (n > UINT32_MAX || bytes >= UINT32_MAX || bytes + n * sizeof *f->ltab > room) return false;
  f->ltext = malloc(bytes ? bytes : 1);
  f->ltab = malloc(n * sizeof *f->ltab);
  if (!f->ltext || !f->ltab) {
    free(f->ltext);
    free(f->ltab);
    f->ltext = NULL;
    f->ltab = NULL;
    return false;
  }
  size_t w = 0, k = 0;
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len;
    if (ws_line_key(text + p, e - p)) {
      size_t m = e - p;
      if (m <= WS_LINE_MAX) {
        while (m > 0 && (text[p + m - 1] == '\r' || text[p + m - 1] == ' ' ||
                         text[p + m - 1] == '\t'))
          m--;
        f->ltab[k++] = (uint32_t)w;
        memcpy(f->ltext + w, text + p, m);
        f->ltext[w + m] = '\0';
        w += m + 1;
      } else {
        f->ltab[k++] = WS_NONE;
      }
    }
    p = e + 1;
  }
  char *fit = realloc(f->ltext, w ? w : 1); /* trailing blanks went */
  if (fit) f->ltext = fit;
  f->ltext_len = (uint32_t)w;
  f->n_ltab = (uint32_t)k;
  return true;
}

/* ---- the table: key -> places -------------------------------------------------- */

static ws_lkey *slot_of(const ws_lines *t, uint64_t key) {
  if (!t->cap) return NULL;
  size_t mask = t->cap - 1;
  for (size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull >> 17) & mask;; i = (i + 1) & mask)
    if (!t->slots[i].key || t->slots[i].key == key) return &t->slots[i];
}

static bool grow(ws_lines *t) {
  size_t cap = t->cap ? t->cap * 2 : 1024;
  if (t->bytes + (cap - t->cap) * sizeof(ws_lkey) > t->max_bytes) return false;
  ws_lkey *ns = calloc(cap, sizeof *ns);
  if (!ns) return false;
  ws_lkey *old = t->slots;
  size_t old_cap = t->cap;
  t->slots = ns;
  t->cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].key) *slot_of(t, old[i].key) = old[i];
  free(old);
  t->bytes += (cap - old_cap) * sizeof *ns;
  return true;
}

/* The key under which f's line k is a place: its previous non-blank line's;
 * 0 when either is a line too long to keep. */
static uint64_t pair_key(const ws_file *f, uint32_t k) {
  if (k == 0 || f->ltab[k - 1] == WS_NONE || f->ltab[k] == WS_NONE) return 0;
  const char *prev = f->ltext + f->ltab[k - 1];
  return ws_line_key(prev, strlen(prev));
}

void ws_lines_insert(ws_lines *t, uint32_t id, const ws_file *f) {
  t->bytes += ws_lines_file_bytes(f);
  for (uint32_t k = 1; k < f->n_ltab; k++) {
    uint64_t key = pair_key(f, k);
    if (!key) continue;
    /* At the bound the table stops growing: lines already known still
     * gain places, new ones are left out. */
    if ((t->used + 1) * 4 > t->cap * 3 && !grow(t)) {
      ws_lkey *e = slot_of(t, key);
      if (!e || !e->key) continue;
    }
    ws_lkey *e = slot_of(t, key);
    if (!e->key) {
      e->key = key;
      t->used++;
    }
    if (e->n >= WS_LINE_PER_KEY) continue;
    if (e->n == e->cap) {
      uint32_t cap = e->cap ? e->cap * 2 : 2;
      if (t->bytes + (cap - e->cap) * sizeof(uint64_t) > t->max_bytes) continue;
      uint64_t *nv = realloc(e->vals, cap * sizeof *nv);
      if (!nv) continue;
      e->vals = nv;
      t->bytes += (cap - e->cap) * sizeof *nv;
      e->cap = cap;
    }
    e->vals[e->n++] = (uint64_t)id << 32 | k;
  }
}

void ws_lines_remove(ws_lines *t, uint32_t id, const ws_file *f) {
  t->bytes -= ws_lines_file_bytes(f);
  for (uint32_t k = 1; k < f->n_ltab; k++) {
    uint64_t key = pair_key(f, k);
    ws_lkey *e = key ? slot_of(t, key) : NULL;
    if (!e || !e->key || e->n == 0) continue;
    /* All of the file's places under this key at once; the key stays (a
     * line that comes back reuses its slot: no tombstones). */
    uint32_t w = 0;
    for (uint32_t i = 0; i < e->n; i++)
      if ((uint32_t)(e->vals[i] >> 32) != id) e->vals[w++] = e->vals[i];
    e->n = w;
  }
}

const uint64_t *ws_lines_next(const ws_lines *t, uint64_t key, uint32_t *n) {
  *n = 0;
  const ws_lkey *e = key ? slot_of(t, key) : NULL;
  if (!e || !e->key || e->n == 0) return NULL;
  *n = e->n;
  return e->vals;
}

void ws_lines_free(ws_lines *t) {
  for (size_t i = 0; i < t->cap; i++) free(t->slots[i].vals);
  free(t->slots);
  memset(t, 0, sizeof *t);
}

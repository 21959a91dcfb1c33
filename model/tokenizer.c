/*
 * tokenizer.c — byte-level BPE: the tables, encoding and decoding.
 * Loading (JSON, merges.txt) is in tokenizer_load.c.
 *
 * Behaviour follows Hugging Face `tokenizers` (src/tokenizer/
 * added_vocabulary.rs for added tokens, src/models/bpe/ for merges,
 * src/pre_tokenizers/byte_level.rs for the byte alphabet); the code is our
 * own. The encoder keeps all mutable state in a per-call context, so a loaded
 * tokenizer is shared read-only between threads.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_impl.h"

/* ---- tables -------------------------------------------------------------- */

/* GPT-2's bytes_to_unicode (openai/gpt-2 src/encoder.py): printable bytes
 * '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68
 * bytes map, in increasing byte order, to U+0100, U+0101, ... so that every
 * byte has a visible, non-space character. */
static uint32_t byte_to_cp(unsigned b) {
  if (b <= 0x20) return 256 + b;                 /* 33 control/space bytes */
  if (b >= 0x7F && b <= 0xA0) return 289 + (b - 0x7F); /* 34 more */
  if (b == 0xAD) return 323;                     /* the soft hyphen, last */
  return b;
}

static size_t cp_utf8(uint32_t cp, char *out) {
  return (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, (utf8proc_uint8_t *)out);
}

sc_tokenizer *sc_tok__new(void) {
  sc_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->unk_id = -1;
  for (int i = 0; i < 256; i++) t->byte_id[i] = -1;
  for (int i = 0; i < 324; i++) t->cp_to_byte[i] = -1;
  for (unsigned b = 0; b < 256; b++) t->cp_to_byte[byte_to_cp(b)] = (int16_t)b;
  return t;
}

void sc_tokenizer_free(sc_tokenizer *t) {
  if (!t) return;
  if (t->vocab)
    for (size_t i = 0; i < t->ids_cap; i++) free(t->vocab[i]);
  free(t->vocab);
  free(t->vocab_len);
  free(t->vmap);
  free(t->merges);
  for (size_t i = 0; i < t->n_added; i++) {
    if (t->added[i].pattern != t->added[i].content) free(t->added[i].pattern);
    free(t->added[i].content);
  }
  free(t->added);
  free(t->added_of_id);
  free(t->raw_set.idx);
  free(t->norm_set.idx);
  for (size_t i = 0; i < t->n_split; i++) pcre2_code_free(t->split[i]);
  pcre2_code_free(t->bl_regex);
  free(t);
}

/* Ids are bounded so that a hostile file cannot make us allocate gigabytes. */
#define SC_TOK_MAX_ID (1 << 24)

static sc_status grow_ids(sc_tokenizer *t, int32_t id, sc_error *err) {
  SC_CHECK(id >= 0 && id < SC_TOK_MAX_ID, err, SC_ERR_FORMAT,
           "token id %ld out of range", (long)id);
  SC_CHECK(!t->id_limit || (size_t)id < t->id_limit, err, SC_ERR_FORMAT,
           "token id %ld is far beyond the %zu the vocabulary's size allows", (long)id,
           t->id_limit);
  if ((size_t)id < t->n_ids) return SC_OK;
  size_t n = (size_t)id + 1;
  if (n > t->ids_cap) {
    size_t cap = t->ids_cap ? t->ids_cap : 1024;
    while (cap < n) cap *= 2;
    char **v = realloc(t->vocab, cap * sizeof *v);
    if (v) t->vocab = v;
    uint32_t *l = realloc(t->vocab_len, cap * sizeof *l);
    if (l) t->vocab_len = l;
    int32_t *a = realloc(t->added_of_id, cap * sizeof *a);
    if (a) t->added_of_id = a;
    SC_CHECK(v && l && a, err, SC_ERR_NOMEM, "out of memory (vocabulary)");
    for (size_t i = t->ids_cap; i < cap; i++) {
      v[i] = NULL;
      l[i] = 0;
      a[i] = -1;
    }
    t->ids_cap = cap;
  }
  t->n_ids = n;
  return SC_OK;
}

sc_status sc_tok__add_vocab(sc_tokenizer *t, const char *token, size_t len,
                            int32_t id, sc_error *err) {
  SC_TRY(grow_ids(t, id, err));
  char *s = malloc(len + 1);
  SC_CHECK(s, err, SC_ERR_NOMEM, "out of memory (vocabulary)");
  memcpy(s, token, len);
  s[len] = '\0';
  free(t->vocab[id]);
  t->vocab[id] = s;
  t->vocab_len[id] = (uint32_t)len;
  return SC_OK;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

sc_status sc_tok__index_vocab(sc_tokenizer *t, sc_error *err) {
  size_t cap = 16;
  while (cap < t->n_ids * 2) cap *= 2;
  free(t->vmap);
  t->vmap = malloc(cap * sizeof *t->vmap);
  SC_CHECK(t->vmap, err, SC_ERR_NOMEM, "out of memory (vocabulary index)");
  memset(t->vmap, 0xff, cap * sizeof *t->vmap); /* all -1 */
  t->vmap_cap = cap;
  for (size_t id = 0; id < t->n_ids; id++) {
    if (!t->vocab[id]) continue;
    size_t h = sc_hash64(t->vocab[id], t->vocab_len[id], 0) & (cap - 1);
    while (t->vmap[h] >= 0) {
      int32_t o = t->vmap[h];
      if (t->vocab_len[o] == t->vocab_len[id] &&
          memcmp(t->vocab[o], t->vocab[id], t->vocab_len[id]) == 0)
        break; /* duplicate token string: the higher id wins, as it came later */
      h = (h + 1) & (cap - 1);
    }
    t->vmap[h] = (int32_t)id;
  }
  for (unsigned b = 0; b < 256; b++) {
    char buf[4];
    size_t n = cp_utf8(byte_to_cp(b), buf);
    t->byte_id[b] = sc_tok__vocab_find(t, buf, n);
  }
  return SC_OK;
}

int32_t sc_tok__vocab_find(const sc_tokenizer *t, const char *s, size_t len) {
  if (!t->vmap) return -1;
  size_t h = sc_hash64(s, len, 0) & (t->vmap_cap - 1);
  for (;;) {
    int32_t id = t->vmap[h];
    if (id < 0) return -1;
    if (t->vocab_len[id] == len && memcmp(t->vocab[id], s, len) == 0) return id;
    h = (h + 1) & (t->vmap_cap - 1);
  }
}

static uint64_t merge_key(int32_t a, int32_t b) {
  return (1ULL << 63) | ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

sc_status sc_tok__reserve_merges(sc_tokenizer *t, size_t n, sc_error *err) {
  size_t cap = 16;
  while (cap < n * 2 + 2) cap *= 2;
  SC_CHECK(!t->merges, err, SC_ERR_INTERNAL, "merges reserved twice");
  t->merges = calloc(cap, sizeof *t->merges);
  SC_CHECK(t->merges, err, SC_ERR_NOMEM, "out of memory (merges)");
  t->merges_cap = cap;
  return SC_OK;
}

static const sc_tok_merge *merge_find(const sc_tokenizer *t, int32_t a, int32_t b) {
  uint64_t key = merge_key(a, b);
  size_t h = mix64(key) & (t->merges_cap - 1);
  for (;;) {
    const sc_tok_merge *m = &t->merges[h];
    if (m->key == key) return m;
    if (m->key == 0) return NULL;
    h = (h + 1) & (t->merges_cap - 1);
  }
}

sc_status sc_tok__add_merge(sc_tokenizer *t, const char *a, size_t alen,
                            const char *b, size_t blen, int32_t rank,
                            const char *where, sc_error *err) {
  SC_CHECK(t->merges && t->n_merges * 2 + 2 <= t->merges_cap, err,
           SC_ERR_INTERNAL, "merge table not reserved");
  int32_t ia = sc_tok__vocab_find(t, a, alen), ib = sc_tok__vocab_find(t, b, blen);
  SC_CHECK(ia >= 0 && ib >= 0, err, SC_ERR_FORMAT,
           "%s: merge of a token that is not in the vocabulary", where);
  char stack[256];
  char *cat = alen + blen <= sizeof stack ? stack : malloc(alen + blen);
  SC_CHECK(cat, err, SC_ERR_NOMEM, "out of memory (merges)");
  memcpy(cat, a, alen);
  memcpy(cat + alen, b, blen);
  int32_t im = sc_tok__vocab_find(t, cat, alen + blen);
  if (cat != stack) free(cat);
  SC_CHECK(im >= 0, err, SC_ERR_FORMAT,
           "%s: merged token is not in the vocabulary", where);
  uint64_t key = merge_key(ia, ib);
  size_t h = mix64(key) & (t->merges_cap - 1);
  while (t->merges[h].key != 0 && t->merges[h].key != key)
    h = (h + 1) & (t->merges_cap - 1);
  /* A repeated pair takes its later rank, as HF's HashMap collect does. */
  if (t->merges[h].key == 0) t->n_merges++;
  t->merges[h].key = key;
  t->merges[h].rank = rank;
  t->merges[h].merged = im;
  return SC_OK;
}

/* ---- regexes ------------------------------------------------------------- */

sc_status sc_tok__compile(const char *pattern, size_t len, bool literal,
                          pcre2_code **out, sc_error *err) {
  int code = 0;
  PCRE2_SIZE off = 0;
  /* PCRE2_LITERAL refuses PCRE2_UCP, which a literal does not need. */
  uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &off, NULL);
  if (!re) {
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(code, msg, sizeof msg);
    return sc_error_set(err, SC_ERR_FORMAT,
                        "pre-tokenizer regex does not compile at offset %zu: %s",
                        (size_t)off, (const char *)msg);
  }
  /* JIT is an optimisation: without it (e.g. an unsupported CPU) the
   * interpreter gives the same matches. */
  (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
  *out = re;
  return SC_OK;
}

/* ---- added tokens -------------------------------------------------------- */

int32_t sc_tok__added_find(const sc_tokenizer *t, const char *s, size_t len) {
  for (size_t i = 0; i < t->n_added; i++)
    if (t->added[i].content_len == len && memcmp(t->added[i].content, s, len) == 0)
      return (int32_t)i;
  return -1;
}

sc_status sc_tok__add_added(sc_tokenizer *t, const char *content, size_t len,
                            int32_t id, bool special, bool single_word,
                            bool lstrip, bool rstrip, bool normalized,
                            bool replace, sc_error *err) {
  SC_CHECK(len > 0, err, SC_ERR_FORMAT, "added token %ld has empty content",
           (long)id);
  SC_TRY(grow_ids(t, id, err));
  int32_t at = t->added_of_id[id];
  if (at >= 0 && !replace) return SC_OK;
  if (at < 0) {
    if (t->n_added == t->cap_added) {
      size_t cap = t->cap_added ? t->cap_added * 2 : 32;
      sc_tok_added *a = realloc(t->added, cap * sizeof *a);
      SC_CHECK(a, err, SC_ERR_NOMEM, "out of memory (added tokens)");
      t->added = a;
      t->cap_added = cap;
    }
    at = (int32_t)t->n_added;
    memset(&t->added[at], 0, sizeof t->added[at]);
  }
  sc_tok_added *a = &t->added[at];
  char *c = malloc(len + 1);
  SC_CHECK(c, err, SC_ERR_NOMEM, "out of memory (added tokens)");
  memcpy(c, content, len);
  c[len] = '\0';
  if (a->pattern != a->content) free(a->pattern);
  free(a->content);
  *a = (sc_tok_added){.content = c, .content_len = len, .pattern = c,
                      .pattern_len = len, .id = id, .special = special,
                      .single_word = single_word, .lstrip = lstrip,
                      .rstrip = rstrip, .normalized = normalized};
  if ((size_t)at == t->n_added) t->n_added++;
  t->added_of_id[id] = at;
  return SC_OK;
}

/* Order within a matching set: by first byte, then longest first, so the
 * first hit at a position is the leftmost-longest match HF's Aho-Corasick
 * (MatchKind::LeftmostLongest) reports. The key is copied out so that qsort
 * needs no context pointer. */
typedef struct added_key {
  unsigned first;
  size_t len;
  int32_t id, idx;
} added_key;

static int added_key_cmp(const void *pa, const void *pb) {
  const added_key *a = pa, *b = pb;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  if (a->len != b->len) return a->len > b->len ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static sc_status build_set(sc_tokenizer *t, sc_tok_addset *set, bool normalized,
                           sc_error *err) {
  size_t cap = t->n_added ? t->n_added : 1;
  set->idx = malloc(cap * sizeof *set->idx);
  added_key *keys = malloc(cap * sizeof *keys);
  if (!set->idx || !keys) {
    free(keys);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory (added tokens)");
  }
  set->n = 0;
  for (size_t i = 0; i < t->n_added; i++) {
    const sc_tok_added *a = &t->added[i];
    if (a->normalized != normalized) continue;
    keys[set->n++] = (added_key){(unsigned char)a->pattern[0], a->pattern_len,
                                 a->id, (int32_t)i};
  }
  qsort(keys, set->n, sizeof *keys, added_key_cmp);
  for (size_t i = 0; i < set->n; i++) set->idx[i] = keys[i].idx;
  free(keys);
  size_t k = 0;
  for (unsigned b = 0; b <= 256; b++) {
    while (k < set->n && (unsigned char)t->added[set->idx[k]].pattern[0] < b) k++;
    set->start[b] = (uint32_t)k;
  }
  return SC_OK;
}

sc_status sc_tok__finish(sc_tokenizer *t, sc_error *err) {
  /* Normalized added tokens are matched against normalized text, so their
   * pattern is their normalized content (HF refresh_added_tokens). */
  for (size_t i = 0; i < t->n_added; i++) {
    sc_tok_added *a = &t->added[i];
    if (!a->normalized || !t->nfc) continue;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)a->content,
                                      (utf8proc_ssize_t)a->content_len, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n <= 0) {
      free(dst);
      continue; /* not valid UTF-8: match it as written */
    }
    a->pattern = (char *)dst;
    a->pattern_len = (size_t)n;
  }
  SC_TRY(build_set(t, &t->raw_set, false, err));
  SC_TRY(build_set(t, &t->norm_set, true, err));
  return SC_OK;
}

/* ---- encoding: per-call state -------------------------------------------- */

typedef struct heap_item {
  int32_t rank, pos;   /* ordered by rank, then position (HF's tie-break) */
  int32_t left, right; /* the pair's ids when queued: detects stale items */
} heap_item;

typedef struct wc_entry {
  uint64_t hash;
  uint32_t koff, klen; /* klen == 0: empty slot (pieces are never empty) */
  uint32_t voff, vlen;
} wc_entry;

/* Cache bounds: enough for the distinct words of a large source file, small
 * enough that one call never holds more than a few MB. */
#define WC_MAX_ENTRIES (1u << 17)
#define WC_MAX_KEY 64

typedef struct enc {
  const sc_tokenizer *t;
  sc_error *err;
  int32_t *ids;
  size_t n, cap;
  pcre2_match_data *md;
  pcre2_match_context *mctx;
  pcre2_jit_stack *jit;
  /* BPE scratch: a doubly linked list of symbols plus a binary heap */
  int32_t *sid, *sprev, *snext; /* one allocation, at sid */
  size_t scap;
  heap_item *heap;
  size_t hn, hcap;
  char *pbuf; /* piece with the ByteLevel prefix space */
  size_t pcap;
  /* word cache: piece bytes -> ids, valid for this call only */
  wc_entry *wc;
  size_t wc_cap, wc_n;
  char *wk;
  size_t wk_n, wk_cap;
  int32_t *wv;
  size_t wv_n, wv_cap;
} enc;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static sc_status push_ids(enc *e, const int32_t *v, size_t n) {
  if (!grow((void **)&e->ids, &e->cap, e->n + n, sizeof *e->ids))
    return sc_error_set(e->err, SC_ERR_NOMEM, "out of memory (token ids)");
  memcpy(e->ids + e->n, v, n * sizeof *v);
  e->n += n;
  return SC_OK;
}

static const int32_t *wc_get(const enc *e, const char *s, size_t len, uint64_t h,
                             size_t *n) {
  if (!e->wc) return NULL;
  for (size_t i = h & (e->wc_cap - 1);; i = (i + 1) & (e->wc_cap - 1)) {
    const wc_entry *w = &e->wc[i];
    if (w->klen == 0) return NULL;
    if (w->hash == h && w->klen == len && memcmp(e->wk + w->koff, s, len) == 0) {
      *n = w->vlen;
      return e->wv + w->voff;
    }
  }
}

/* Best effort: a cache that cannot grow just stops caching. */
static void wc_put(enc *e, const char *s, size_t len, uint64_t h,
                   const int32_t *v, size_t n) {
  if (e->wc_n >= WC_MAX_ENTRIES) return;
  if ((e->wc_n + 1) * 2 > e->wc_cap) {
    size_t cap = e->wc_cap ? e->wc_cap * 2 : 1024;
    wc_entry *w = calloc(cap, sizeof *w);
    if (!w) return;
    for (size_t i = 0; i < e->wc_cap; i++) {
      if (e->wc[i].klen == 0) continue;
      size_t j = e->wc[i].hash & (cap - 1);
      while (w[j].klen) j = (j + 1) & (cap - 1);
      w[j] = e->wc[i];
    }
    free(e->wc);
    e->wc = w;
    e->wc_cap = cap;
  }
  if (!grow((void **)&e->wk, &e->wk_cap, e->wk_n + len, 1) ||
      !grow((void **)&e->wv, &e->wv_cap, e->wv_n + n, sizeof *e->wv))
    return;
  size_t j = h & (e->wc_cap - 1);
  while (e->wc[j].klen) j = (j + 1) & (e->wc_cap - 1);
  e->wc[j] = (wc_entry){h, (uint32_t)e->wk_n, (uint32_t)len, (uint32_t)e->wv_n,
                        (uint32_t)n};
  memcpy(e->wk + e->wk_n, s, len);
  e->wk_n += len;
  memcpy(e->wv + e->wv_n, v, n * sizeof *v);
  e->wv_n += n;
  e->wc_n++;
}

/* ---- BPE ------------------------------------------------------------------ */

static bool hi_less(const heap_item *a, const heap_item *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static sc_status heap_push(enc *e, heap_item it) {
  if (!grow((void **)&e->heap, &e->hcap, e->hn + 1, sizeof *e->heap))
    return sc_error_set(e->err, SC_ERR_NOMEM, "out of memory (bpe)");
  size_t i = e->hn++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!hi_less(&it, &e->heap[p])) break;
    e->heap[i] = e->heap[p];
    i = p;
  }
  e->heap[i] = it;
  return SC_OK;
}

static heap_item heap_pop(enc *e) {
  heap_item top = e->heap[0], last = e->heap[--e->hn];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= e->hn) break;
    if (c + 1 < e->hn && hi_less(&e->heap[c + 1], &e->heap[c])) c++;
    if (!hi_less(&e->heap[c], &last)) break;
    e->heap[i] = e->heap[c];
    i = c;
  }
  if (e->hn) e->heap[i] = last;
  return top;
}

static sc_status queue_pair(enc *e, int32_t pos) {
  int32_t r = e->snext[pos];
  if (r < 0) return SC_OK;
  const sc_tok_merge *m = merge_find(e->t, e->sid[pos], e->sid[r]);
  if (!m) return SC_OK;
  return heap_push(e, (heap_item){m->rank, pos, e->sid[pos], e->sid[r]});
}

/* Merges one pre-tokenized piece (raw bytes) and appends its ids. The
 * lowest-rank pair anywhere in the word merges first, leftmost on ties, as
 * HF's BPE::merge_word does; a heap keeps that O(n log n) in the word
 * length, so a megabyte of spaces is no worse than a megabyte of words. */
static sc_status bpe_piece(enc *e, const char *s, size_t len) {
  const sc_tokenizer *t = e->t;
  uint64_t h = 0;
  bool cacheable = len <= WC_MAX_KEY;
  if (cacheable) {
    size_t cn;
    h = sc_hash64(s, len, 0x5eed);
    const int32_t *hit = wc_get(e, s, len, h, &cn);
    if (hit) return push_ids(e, hit, cn);
  }
  if (t->ignore_merges) {
    char stack[WC_MAX_KEY * 2];
    if (len <= WC_MAX_KEY) {
      size_t k = 0;
      for (size_t i = 0; i < len; i++)
        k += cp_utf8(byte_to_cp((unsigned char)s[i]), stack + k);
      int32_t id = sc_tok__vocab_find(t, stack, k);
      if (id >= 0) {
        if (cacheable) wc_put(e, s, len, h, &id, 1);
        return push_ids(e, &id, 1);
      }
    }
  }
  if (len > e->scap) {
    /* one block holds the three symbol arrays */
    size_t cap = e->scap ? e->scap : 64;
    while (cap < len) cap *= 2;
    int32_t *blk = realloc(e->sid, 3 * cap * sizeof *blk);
    if (!blk) return sc_error_set(e->err, SC_ERR_NOMEM, "out of memory (bpe)");
    e->sid = blk;
    e->sprev = blk + cap;
    e->snext = blk + 2 * cap;
    e->scap = cap;
  }
  int32_t n = 0;
  for (size_t i = 0; i < len; i++) {
    int32_t id = t->byte_id[(unsigned char)s[i]];
    if (id < 0) id = t->unk_id;
    if (id < 0) continue; /* no token and no unk: dropped, as HF does */
    e->sid[n] = id;
    e->sprev[n] = n - 1;
    e->snext[n] = n + 1;
    n++;
  }
  if (n == 0) return SC_OK;
  e->snext[n - 1] = -1;
  e->hn = 0;
  for (int32_t i = 0; i + 1 < n; i++) SC_TRY(queue_pair(e, i));
  while (e->hn) {
    heap_item it = heap_pop(e);
    int32_t r = e->snext[it.pos];
    if (e->sid[it.pos] != it.left || r < 0 || e->sid[r] != it.right) continue;
    const sc_tok_merge *m = merge_find(t, it.left, it.right);
    e->sid[it.pos] = m->merged;
    e->snext[it.pos] = e->snext[r];
    if (e->snext[r] >= 0) e->sprev[e->snext[r]] = it.pos;
    e->sid[r] = -1;
    if (e->sprev[it.pos] >= 0) SC_TRY(queue_pair(e, e->sprev[it.pos]));
    SC_TRY(queue_pair(e, it.pos));
  }
  /* compact the survivors in order, in place (the write index trails) */
  size_t k = 0;
  for (int32_t i = 0; i >= 0; i = e->snext[i]) e->sid[k++] = e->sid[i];
  if (cacheable) wc_put(e, s, len, h, e->sid, k);
  return push_ids(e, e->sid, k);
}

/* ---- pre-tokenization ------------------------------------------------------ */

static sc_status run_stage(enc *e, size_t stage, const char *s, size_t len);

static size_t utf8_len_at(const char *s, size_t len, size_t i) {
  utf8proc_int32_t cp;
  utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                        (utf8proc_ssize_t)(len - i), &cp);
  return n > 0 ? (size_t)n : 1;
}

/* Split with behavior "Isolated": every match and every stretch between
 * matches becomes its own piece (HF SplitDelimiterBehavior::Isolated). */
static sc_status split_isolated(enc *e, const pcre2_code *re, size_t next,
                                const char *s, size_t len) {
  size_t prev = 0, off = 0;
  while (off < len) {
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, off, PCRE2_NO_UTF_CHECK, e->md,
                         e->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[160];
      pcre2_get_error_message(rc, msg, sizeof msg);
      return sc_error_set(e->err, SC_ERR_UNSUPPORTED,
                          "pre-tokenizer regex failed on a %zu-byte piece: %s",
                          len, (const char *)msg);
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
    size_t ms = ov[0], me = ov[1];
    if (me <= ms) { /* empty match: it makes no piece; step one character */
      off = ms + utf8_len_at(s, len, ms);
      continue;
    }
    if (ms > prev) SC_TRY(run_stage(e, next, s + prev, ms - prev));
    SC_TRY(run_stage(e, next, s + ms, me - ms));
    prev = off = me;
  }
  if (prev < len) SC_TRY(run_stage(e, next, s + prev, len - prev));
  return SC_OK;
}

/* Stages 0..n_split-1 are the Split regexes, stage n_split is ByteLevel
 * (prefix space, then its own regex when use_regex), the last is BPE. */
static sc_status run_stage(enc *e, size_t stage, const char *s, size_t len) {
  const sc_tokenizer *t = e->t;
  if (len == 0) return SC_OK;
  if (stage < t->n_split) return split_isolated(e, t->split[stage], stage + 1, s, len);
  if (stage > t->n_split) return bpe_piece(e, s, len);
  if (t->prefix_space && s[0] != ' ') {
    /* HF ByteLevel: a piece not starting with a space gets one. */
    if (!grow((void **)&e->pbuf, &e->pcap, len + 1, 1))
      return sc_error_set(e->err, SC_ERR_NOMEM, "out of memory (pre-tokenizer)");
    e->pbuf[0] = ' ';
    memcpy(e->pbuf + 1, s, len);
    s = e->pbuf;
    len++;
  }
  if (t->bl_regex) return split_isolated(e, t->bl_regex, stage + 1, s, len);
  return bpe_piece(e, s, len);
}

/* ---- added tokens in the text ---------------------------------------------- */

/* Unicode White_Space (PropList.txt), what Rust's \s matches in HF's
 * lstrip/rstrip handling. */
static bool is_ws(utf8proc_int32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Rust regex \w (HF single_word): letters, marks, decimal digits, connector
 * punctuation and the joiners; approximated with the general category. */
static bool is_word(utf8proc_int32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z') || c == '_';
  switch (utf8proc_category(c)) {
  case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
  case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
    return true;
  default:
    return c == 0x200C || c == 0x200D;
  }
}

/* The character ending at s[end) (start offset in *start), or -1. */
static utf8proc_int32_t cp_before(const char *s, size_t end, size_t *start) {
  size_t i = end;
  while (i > 0 && end - i < 4) {
    i--;
    if (((unsigned char)s[i] & 0xC0) != 0x80) break;
  }
  utf8proc_int32_t cp = -1;
  utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                        (utf8proc_ssize_t)(end - i), &cp);
  if (n <= 0 || (size_t)n != end - i) return -1;
  *start = i;
  return cp;
}

static utf8proc_int32_t cp_at(const char *s, size_t len, size_t i, size_t *n) {
  utf8proc_int32_t cp = -1;
  utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                        (utf8proc_ssize_t)(len - i), &cp);
  *n = k > 0 ? (size_t)k : 0;
  return k > 0 ? cp : -1;
}

typedef sc_status (*gap_fn)(enc *e, const char *s, size_t len);

/* Cuts the added tokens of `set` out of s, emitting their ids, and hands the
 * text between them to `gap`. Mirrors HF AddedVocabulary::find_matches:
 * leftmost-longest matches; a single_word token next to a word character is
 * skipped (the search resumes after it); lstrip/rstrip swallow the
 * whitespace on that side. */
static sc_status split_added(enc *e, const sc_tok_addset *set, const char *s,
                             size_t len, gap_fn gap) {
  const sc_tokenizer *t = e->t;
  size_t done = 0, pos = 0;
  while (set->n && pos < len) {
    const sc_tok_added *hit = NULL;
    size_t ms = 0;
    for (size_t p = pos; p < len && !hit; p++) {
      unsigned b = (unsigned char)s[p];
      for (uint32_t k = set->start[b]; k < set->start[b + 1]; k++) {
        const sc_tok_added *a = &t->added[set->idx[k]];
        if (a->pattern_len <= len - p && memcmp(s + p, a->pattern, a->pattern_len) == 0) {
          hit = a;
          ms = p;
          break;
        }
      }
    }
    if (!hit) break;
    size_t me = ms + hit->pattern_len, st;
    pos = me;
    if (hit->single_word) {
      utf8proc_int32_t before = ms > 0 ? cp_before(s, ms, &st) : -1;
      size_t n;
      utf8proc_int32_t after = me < len ? cp_at(s, len, me, &n) : -1;
      if ((before >= 0 && is_word(before)) || (after >= 0 && is_word(after))) continue;
    }
    if (hit->lstrip) {
      size_t ns = ms;
      utf8proc_int32_t c;
      while (ns > done && (c = cp_before(s, ns, &st)) >= 0 && is_ws(c) && st >= done)
        ns = st;
      ms = ns;
    }
    if (hit->rstrip) {
      size_t n;
      utf8proc_int32_t c;
      while (me < len && (c = cp_at(s, len, me, &n)) >= 0 && is_ws(c)) me += n;
      pos = me;
    }
    if (ms > done) SC_TRY(gap(e, s + done, ms - done));
    SC_TRY(push_ids(e, &hit->id, 1));
    done = me;
  }
  if (done < len) SC_TRY(gap(e, s + done, len - done));
  return SC_OK;
}

static sc_status pretokenize(enc *e, const char *s, size_t len) {
  return run_stage(e, 0, s, len);
}

/* NFC can change text only from U+0300 up: every code point below it has
 * NFC_Quick_Check=Yes and combining class 0 (Unicode DerivedNormalization-
 * Props.txt), and its UTF-8 lead bytes are below 0xCC. */
static bool may_need_nfc(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] >= 0xCC) return true;
  return false;
}

/* A run of valid UTF-8 between raw added tokens: normalize, cut out the
 * normalized added tokens, pre-tokenize the rest. */
static sc_status encode_valid(enc *e, const char *s, size_t len) {
  const sc_tokenizer *t = e->t;
  utf8proc_uint8_t *dst = NULL;
  if (t->nfc && may_need_nfc(s, len)) {
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s,
                                      (utf8proc_ssize_t)len, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0) {
      free(dst);
      return sc_error_set(e->err, n == UTF8PROC_ERROR_NOMEM ? SC_ERR_NOMEM
                                                            : SC_ERR_INTERNAL,
                          "NFC failed: %s", utf8proc_errmsg(n));
    }
    s = (const char *)dst;
    len = (size_t)n;
  }
  sc_status st = split_added(e, &t->norm_set, s, len, pretokenize);
  free(dst);
  return st;
}

/* Text between raw added tokens, possibly not UTF-8. Each byte that does not
 * start a valid UTF-8 sequence (bad lead, truncated, overlong, surrogate)
 * becomes its own byte-level token; the valid runs around it are encoded
 * normally. */
static sc_status encode_gap(enc *e, const char *s, size_t len) {
  size_t p = 0;
  while (p < len) {
    size_t q = p;
    while (q < len) {
      if ((unsigned char)s[q] < 0x80) {
        q++;
        continue;
      }
      size_t n;
      if (cp_at(s, len, q, &n) < 0) break;
      q += n;
    }
    if (q > p) SC_TRY(encode_valid(e, s + p, q - p));
    if (q < len) {
      int32_t id = e->t->byte_id[(unsigned char)s[q]];
      if (id < 0) id = e->t->unk_id;
      if (id >= 0) SC_TRY(push_ids(e, &id, 1));
      q++;
    }
    p = q;
  }
  return SC_OK;
}

/* The regex engine's per-call objects, kept per thread: making them (the
 * JIT stack's mapping above all) cost about 0.1 ms a call, which short
 * texts (the drafts of every completion, context/draft.c) pay each time. */
typedef struct regex_scratch {
  pcre2_match_data *md;
  pcre2_match_context *mctx;
  pcre2_jit_stack *jit;
} regex_scratch;

static pthread_key_t g_regex_key;
static pthread_once_t g_regex_once = PTHREAD_ONCE_INIT;

static void regex_scratch_free(void *p) {
  regex_scratch *r = p;
  if (!r) return;
  pcre2_jit_stack_free(r->jit);
  pcre2_match_context_free(r->mctx);
  pcre2_match_data_free(r->md);
  free(r);
}

static void regex_key_make(void) { pthread_key_create(&g_regex_key, regex_scratch_free); }

static regex_scratch *thread_regex(void) {
  pthread_once(&g_regex_once, regex_key_make);
  regex_scratch *r = pthread_getspecific(g_regex_key);
  if (r) return r;
  r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->md = pcre2_match_data_create(16, NULL);
  r->mctx = pcre2_match_context_create(NULL);
  /* A JIT stack larger than the 32 KiB default: lookahead after a long run
   * of spaces needs it. Without JIT support this is NULL and unused. */
  r->jit = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
  if (r->jit && r->mctx) pcre2_jit_stack_assign(r->mctx, NULL, r->jit);
  if (!r->md || !r->mctx || pthread_setspecific(g_regex_key, r) != 0) {
    regex_scratch_free(r);
    return NULL;
  }
  return r;
}

sc_status sc_tokenizer_encode(const sc_tokenizer *t, const char *text, size_t len,
                              int32_t **ids, size_t *n, sc_error *err) {
  SC_CHECK(t && ids && n && (text || len == 0), err, SC_ERR_INVALID,
           "sc_tokenizer_encode: NULL argument");
  *ids = NULL;
  *n = 0;
  if (len == 0) return SC_OK;
  SC_CHECK(len < (size_t)INT32_MAX, err, SC_ERR_INVALID,
           "text too long to tokenize (%zu bytes)", len);
  enc e = {.t = t, .err = err};
  sc_status st = SC_OK;
  regex_scratch *rx = thread_regex();
  if (!rx) {
    st = sc_error_set(err, SC_ERR_NOMEM, "out of memory (regex)");
    goto done;
  }
  e.md = rx->md;
  e.mctx = rx->mctx;
  e.jit = rx->jit;
  st = split_added(&e, &t->raw_set, text, len, encode_gap);
done:
  free(e.sid);
  free(e.heap);
  free(e.pbuf);
  free(e.wc);
  free(e.wk);
  free(e.wv);
  if (st != SC_OK) {
    free(e.ids);
    return st;
  }
  *ids = e.ids;
  *n = e.n;
  return SC_OK;
}

/* ---- decoding and lookups ---------------------------------------------------- */

sc_status sc_tokenizer_decode(const sc_tokenizer *t, const int32_t *ids, size_t n,
                              char **text, size_t *len, sc_error *err) {
  SC_CHECK(t && text && len && (ids || n == 0), err, SC_ERR_INVALID,
           "sc_tokenizer_decode: NULL argument");
  *text = NULL;
  *len = 0;
  char *out = NULL;
  size_t on = 0, ocap = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    bool known = id >= 0 && (size_t)id < t->n_ids &&
                 (t->added_of_id[id] >= 0 || t->vocab[id]);
    if (!known) {
      free(out);
      return sc_error_set(err, SC_ERR_INVALID, "token id %ld is not in the vocabulary",
                          (long)id);
    }
    const char *s;
    size_t sl;
    bool raw = t->added_of_id[id] >= 0;
    if (raw) {
      s = t->added[t->added_of_id[id]].content;
      sl = t->added[t->added_of_id[id]].content_len;
    } else {
      s = t->vocab[id];
      sl = t->vocab_len[id];
    }
    /* a byte-level token never decodes to more bytes than it has */
    if (!grow((void **)&out, &ocap, on + sl + 1, 1)) {
      free(out);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory (decode)");
    }
    if (raw) {
      memcpy(out + on, s, sl);
      on += sl;
      continue;
    }
    for (size_t k = 0; k < sl;) {
      size_t cn;
      utf8proc_int32_t cp = cp_at(s, sl, k, &cn);
      if (cp >= 0 && cp < 324 && t->cp_to_byte[cp] >= 0) {
        out[on++] = (char)t->cp_to_byte[cp];
      } else {
        /* not a byte-level character: keep it as written */
        if (cn == 0) cn = 1;
        memcpy(out + on, s + k, cn);
        on += cn;
      }
      k += cn ? cn : 1;
    }
  }
  if (!grow((void **)&out, &ocap, on + 1, 1)) {
    free(out);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory (decode)");
  }
  out[on] = '\0';
  *text = out;
  *len = on;
  return SC_OK;
}

int32_t sc_tokenizer_token_to_id(const sc_tokenizer *t, const char *token) {
  if (!t || !token) return -1;
  size_t len = strlen(token);
  int32_t a = sc_tok__added_find(t, token, len);
  if (a >= 0) return t->added[a].id;
  return sc_tok__vocab_find(t, token, len);
}

const char *sc_tokenizer_id_to_token(const sc_tokenizer *t, int32_t id) {
  if (!t || id < 0 || (size_t)id >= t->n_ids) return NULL;
  if (t->added_of_id[id] >= 0) return t->added[t->added_of_id[id]].content;
  return t->vocab[id];
}

size_t sc_tokenizer_vocab_size(const sc_tokenizer *t) { return t ? t->n_ids : 0; }

unsigned sc_tokenizer_token_flags(const sc_tokenizer *t, int32_t id) {
  if (!t || id < 0 || (size_t)id >= t->n_ids || t->added_of_id[id] < 0) return 0;
  return SC_TOKEN_ADDED | (t->added[t->added_of_id[id]].special ? SC_TOKEN_SPECIAL : 0u);
}

/* ngram.c — the line n-gram baseline (eval.h): the line that most often
 * follows the previous non-blank line, as model/train/evaluate.py's
 * LineNgram predicts (keyed by language and the previous line stripped;
 * the predicted line keeps its indentation), read first from the prompt's
 * own text and then from the corpus.
 *
 * The corpus's pairs are kept as 64-bit hashes, sorted once, so that a
 * lookup is a binary search and the lines themselves are stored once. */
#define _GNU_SOURCE /* strndup */
#include "eval_impl.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE (1u << 20)
#define MAX_FILES 200000

typedef struct pair {
  uint64_t key;  /* language and previous line */
  uint64_t line; /* the line's hash */
} pair;

typedef struct best {
  uint64_t key, line;
} best;

/* An open-addressed map from a non-zero 64-bit hash to a size_t (the
 * line table's pool offsets, the protected lines' documents). */
typedef struct hmap {
  uint64_t *hash; /* 0: empty */
  size_t *val;
  size_t slots, used; /* slots: a power of two */
} hmap;

static bool hmap_grow(hmap *m) {
  size_t slots = m->slots ? 2 * m->slots : 1 << 12;
  uint64_t *h = calloc(slots, sizeof *h);
  size_t *v = malloc(slots * sizeof *v);
  if (!h || !v) {
    free(h);
    free(v);
    return false;
  }
  for (size_t i = 0; i < m->slots; i++) {
    if (!m->hash[i]) continue;
    size_t j = m->hash[i] & (slots - 1);
    while (h[j]) j = (j + 1) & (slots - 1);
    h[j] = m->hash[i];
    v[j] = m->val[i];
  }
  free(m->hash);
  free(m->val);
  m->hash = h;
  m->val = v;
  m->slots = slots;
  return true;
}

/* The slot of key h: where it is, or the empty one where it would go. */
static size_t hmap_slot(const hmap *m, uint64_t h) {
  size_t j = h & (m->slots - 1);
  while (m->hash[j] && m->hash[j] != h) j = (j + 1) & (m->slots - 1);
  return j;
}

/* The value of key h, or NULL. */
static const size_t *hmap_get(const hmap *m, uint64_t h) {
  if (!m->slots) return NULL;
  size_t j = hmap_slot(m, h);
  return m->hash[j] ? &m->val[j] : NULL;
}

/* Key h's value, its slot taken when new (*fresh: the caller sets the
 * value); NULL when out of memory. */
static size_t *hmap_put(hmap *m, uint64_t h, bool *fresh) {
  if ((m->used + 1) * 2 > m->slots && !hmap_grow(m)) return NULL;
  size_t j = hmap_slot(m, h);
  *fresh = !m->hash[j];
  if (*fresh) {
    m->hash[j] = h;
    m->used++;
  }
  return &m->val[j];
}

static void hmap_free(hmap *m) {
  free(m->hash);
  free(m->val);
}

struct sc_eval_ngram {
  /* the lines, each once: hash -> offset in pool */
  char *pool;
  size_t pool_len, pool_cap;
  hmap lines;
  pair *pairs, *freq; /* while training */
  size_t n_pairs, cap_pairs, n_freq, cap_freq;
  best *next, *top; /* after training: sorted by key */
  size_t n_next, n_top;
};

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}
#define HASH0 1469598103934665603ull

static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static void strip(const char *s, size_t n, size_t *a, size_t *b) {
  size_t x = 0, y = n;
  while (x < y && is_blank(s[x])) x++;
  while (y > x && is_blank(s[y - 1])) y--;
  *a = x;
  *b = y;
}

static uint64_t key_of(const char *lang, const char *prev, size_t n) {
  uint64_t h = hash_bytes(HASH0, lang, strlen(lang));
  h = hash_bytes(h ^ 0xff, prev, n);
  return h ? h : 1;
}

/* The key of a language's most frequent line (the fallback). */
static uint64_t top_key(const char *lang) { return key_of(lang, "", 0) ^ 0x9e3779b97f4a7c15ull; }

static uint64_t line_hash(const char *s, size_t n) {
  uint64_t h = hash_bytes(HASH0 ^ 0x5a5a, s, n);
  return h ? h : 1;
}

/* The line's text stored once; its hash. 0 when out of memory. */
static uint64_t intern(sc_eval_ngram *g, const char *s, size_t n) {
  uint64_t h = line_hash(s, n);
  if (hmap_get(&g->lines, h)) return h;
  if (g->pool_len + n + 1 > g->pool_cap) {
    size_t cap = g->pool_cap ? g->pool_cap : 1 << 20;
    while (g->pool_len + n + 1 > cap) cap *= 2;
    char *p = realloc(g->pool, cap);
    if (!p) return 0;
    g->pool = p;
    g->pool_cap = cap;
  }
  bool fresh = false;
  size_t *off = hmap_put(&g->lines, h, &fresh);
  if (!off) return 0;
  memcpy(g->pool + g->pool_len, s, n);
  g->pool[g->pool_len + n] = '\0';
  *off = g->pool_len;
  g->pool_len += n + 1;
  return h;
}

static const char *line_text(const sc_eval_ngram *g, uint64_t h) {
  const size_t *off = hmap_get(&g->lines, h);
  return off ? g->pool + *off : NULL;
}

static bool push(pair **v, size_t *n, size_t *cap, pair p) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 1 << 16;
    pair *g = realloc(*v, c * sizeof *g);
    if (!g) return false;
    *v = g;
    *cap = c;
  }
  (*v)[(*n)++] = p;
  return true;
}

/* One document's pairs (previous line stripped -> line) and line counts. */
static bool learn(sc_eval_ngram *g, const char *lang, const char *text, size_t len) {
  uint64_t lang_key = top_key(lang);
  const char *prev = "";
  size_t prev_len = 0;
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len, a, b;
    size_t end = e;
    if (end > p && text[end - 1] == '\r') end--;
    strip(text + p, end - p, &a, &b);
    if (b > a) {
      uint64_t h = intern(g, text + p, end - p);
      if (!h || !push(&g->pairs, &g->n_pairs, &g->cap_pairs,
                      (pair){key_of(lang, prev, prev_len), h}) ||
          !push(&g->freq, &g->n_freq, &g->cap_freq, (pair){lang_key, h}))
        return false;
      prev = text + p + a;
      prev_len = b - a;
    }
    p = e + 1;
  }
  return true;
}

static int pair_cmp(const void *x, const void *y) {
  const pair *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->line < b->line ? -1 : a->line > b->line;
}

/* The most frequent line per key (ties: the smallest hash, so the same
 * corpus always gives the same table); v is consumed. */
static best *reduce(pair *v, size_t n, size_t *n_out) {
  qsort(v, n, sizeof *v, pair_cmp);
  best *out = malloc((n ? n : 1) * sizeof *out);
  size_t m = 0;
  if (!out) return NULL;
  for (size_t i = 0; i < n;) {
    size_t j = i, top_count = 0;
    uint64_t top_line = 0;
    while (j < n && v[j].key == v[i].key) {
      size_t k = j;
      while (k < n && v[k].key == v[j].key && v[k].line == v[j].line) k++;
      if (k - j > top_count) top_count = k - j, top_line = v[j].line;
      j = k;
    }
    out[m++] = (best){v[i].key, top_line};
    i = j;
  }
  *n_out = m;
  return out;
}

static const best *lookup(const best *v, size_t n, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo].key == key ? &v[lo] : NULL;
}

void sc_eval_ngram_free(sc_eval_ngram *g) {
  if (!g) return;
  free(g->pool);
  hmap_free(&g->lines);
  free(g->pairs);
  free(g->freq);
  free(g->next);
  free(g->top);
  free(g);
}

/* ---- the benchmark's own documents ------------------------------------------------------ */

#define PROTECT_MIN_CHARS 20 /* a distinctive line: this many characters, whitespace aside */
#define PROTECT_MIN_SHARED 5 /* lines shared with one document ... */
#define PROTECT_FRAC 0.3     /* ... and this share of the smaller of the two */

struct sc_eval_protect {
  hmap lines;          /* a distinctive line's hash -> the first document that has it */
  uint32_t *doc_lines; /* each document's distinctive lines */
  size_t n_docs, cap_docs;
};

static int u64_cmp(const void *x, const void *y) {
  const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* The distinctive lines of a text: hashes of each line without its
 * whitespace, when that leaves PROTECT_MIN_CHARS or more; sorted, each once,
 * into *out (malloc'd; NULL when there are none) and *n. false when out of
 * memory. */
static bool distinctive(const char *text, size_t len, uint64_t **out, size_t *n) {
  size_t cap = 0, m = 0;
  uint64_t *v = NULL;
  *out = NULL;
  *n = 0;
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len, chars = 0;
    uint64_t h = HASH0 ^ 0x3c3c;
    for (size_t i = p; i < e; i++) {
      if (is_blank(text[i])) continue;
      h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
      chars++;
    }
    if (chars >= PROTECT_MIN_CHARS) {
      if (m == cap) {
        size_t c = cap ? 2 * cap : 256;
        uint64_t *w = realloc(v, c * sizeof *w);
        if (!w) {
          free(v);
          return false;
        }
        v = w;
        cap = c;
      }
      v[m++] = h ? h : 1;
    }
    p = e + 1;
  }
  if (!m) return true;
  qsort(v, m, sizeof *v, u64_cmp);
  size_t k = 1;
  for (size_t i = 1; i < m; i++)
    if (v[i] != v[k - 1]) v[k++] = v[i];
  *out = v;
  *n = k;
  return true;
}

sc_eval_protect *sc_eval_protect_new(void) { return calloc(1, sizeof(sc_eval_protect)); }

void sc_eval_protect_free(sc_eval_protect *p) {
  if (!p) return;
  hmap_free(&p->lines);
  free(p->doc_lines);
  free(p);
}

bool sc_eval_protect_add(sc_eval_protect *p, const char *text, size_t len) {
  size_t n = 0;
  uint64_t *v = NULL;
  if (!distinctive(text, len, &v, &n)) return false;
  if (!n) return true;
  if (p->n_docs == p->cap_docs) {
    size_t c = p->cap_docs ? 2 * p->cap_docs : 64;
    uint32_t *w = realloc(p->doc_lines, c * sizeof *w);
    if (!w) {
      free(v);
      return false;
    }
    p->doc_lines = w;
    p->cap_docs = c;
  }
  const uint32_t doc = (uint32_t)p->n_docs++;
  p->doc_lines[doc] = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    bool fresh = false;
    size_t *d = hmap_put(&p->lines, v[i], &fresh);
    if (!d) {
      free(v);
      return false;
    }
    if (fresh) *d = doc;
  }
  free(v);
  return true;
}

/* Whether a corpus text shares too much with one protected document. The
 * lines are counted against the first document that has each (a line two
 * documents share counts for the first). */
static bool protected_text(const sc_eval_protect *p, const char *text, size_t len) {
  if (!p || !p->n_docs) return false;
  size_t n = 0;
  uint64_t *v = NULL;
  if (!distinctive(text, len, &v, &n) || !n) return false; /* (out of memory: learnt) */
  /* the documents hit: a short list, most files share nothing */
  uint32_t docs[64], counts[64];
  size_t nd = 0;
  bool hit = false;
  for (size_t i = 0; i < n && !hit; i++) {
    const size_t *doc = hmap_get(&p->lines, v[i]);
    if (!doc) continue;
    size_t k = 0;
    while (k < nd && docs[k] != *doc) k++;
    if (k == nd) {
      if (nd == 64) continue; /* past 64 documents: lines spread that thin are boilerplate */
      docs[nd] = (uint32_t)*doc, counts[nd++] = 0;
    }
    counts[k]++;
    double smaller = (double)(n < p->doc_lines[docs[k]] ? n : p->doc_lines[docs[k]]);
    hit = counts[k] >= PROTECT_MIN_SHARED && counts[k] >= PROTECT_FRAC * smaller;
  }
  free(v);
  return hit;
}

/* ---- the corpus ---------------------------------------------------------------------- */

typedef struct trainer {
  sc_eval_ngram *g;
  const sc_eval_protect *protect;
  size_t files, left_out;
  bool oom;
} trainer;

/* Learns one corpus document unless it is the benchmark's own. */
static void learn_doc(trainer *t, const char *lang, const char *text, size_t len) {
  if (protected_text(t->protect, text, len)) {
    t->left_out++;
    return;
  }
  if (!learn(t->g, lang, text, len)) t->oom = true;
  t->files++;
}

static void learn_file(trainer *t, const char *path) {
  if (t->files >= MAX_FILES) return;
  const char *lang = sc_context_language_for(NULL, path);
  if (!lang) return;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) return;
  char *text = NULL;
  size_t len = 0;
  if (sc_eval__read_file(path, &text, &len, NULL) != SC_OK) return;
  if (!memchr(text, '\0', len)) learn_doc(t, lang, text, len);
  free(text);
}

static sc_status manifest_file(trainer *t, json_t *root, const char *path, sc_error *err) {
  json_t *files = json_object_get(root, "files");
  SC_CHECK(json_is_array(files), err, SC_ERR_FORMAT, "%s: no \"files\" list (a corpus manifest)",
           path);
  size_t i;
  json_t *f;
  json_array_foreach(files, i, f) {
    /* [path, hash, split] (model/train/corpus.py) */
    const char *p = json_string_value(json_array_get(f, 0));
    const char *split = json_string_value(json_array_get(f, 2));
    if (p && split && strcmp(split, "train") == 0) learn_file(t, p);
  }
  return SC_OK;
}

static sc_status jsonl_record(void *user, json_t *o, size_t line, sc_error *err) {
  (void)line;
  (void)err;
  trainer *t = user;
  json_t *text = json_object_get(o, "text");
  const char *lang = json_string_value(json_object_get(o, "lang"));
  const char *path = json_string_value(json_object_get(o, "path"));
  if (!lang && path) lang = sc_context_language_for(NULL, path);
  if (!json_is_string(text) || !lang || t->files >= MAX_FILES) return SC_OK;
  learn_doc(t, lang, json_string_value(text), json_string_length(text));
  return SC_OK;
}

static void walk_dir(trainer *t, const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && !t->oom) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < 32) walk_dir(t, p, depth + 1);
    else if (S_ISREG(st.st_mode)) learn_file(t, p);
  }
  closedir(d);
}

static bool ends_with(const char *s, const char *tail) {
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

sc_status sc_eval_ngram_train(const char *corpus, const sc_eval_protect *protect,
                              sc_eval_ngram **out, size_t *files, size_t *left_out,
                              sc_error *err) {
  *out = NULL;
  if (files) *files = 0;
  if (left_out) *left_out = 0;
  struct stat st;
  SC_CHECK(stat(corpus, &st) == 0, err, SC_ERR_IO, "cannot read the n-gram's corpus %s", corpus);
  sc_eval_ngram *g = calloc(1, sizeof *g);
  SC_CHECK(g, err, SC_ERR_NOMEM, "out of memory");
  trainer t = {g, protect, 0, 0, false};
  sc_status s = SC_OK;
  if (S_ISDIR(st.st_mode)) {
    walk_dir(&t, corpus, 0);
  } else {
    char *text = NULL;
    size_t len = 0;
    s = sc_eval__read_file(corpus, &text, &len, err);
    if (s == SC_OK && (ends_with(corpus, ".jsonl") || ends_with(corpus, ".jsonl.gz"))) {
      s = sc_eval__each_json_line(corpus, text, len, jsonl_record, &t, err);
    } else if (s == SC_OK) {
      json_error_t je;
      json_t *root = json_loadb(text, len, 0, &je);
      s = root ? manifest_file(&t, root, corpus, err)
               : sc_error_set(err, SC_ERR_FORMAT, "%s:%d: %s", corpus, je.line, je.text);
      json_decref(root);
    }
    free(text);
  }
  if (s == SC_OK && t.oom) s = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (s == SC_OK) {
    g->next = reduce(g->pairs, g->n_pairs, &g->n_next);
    g->top = reduce(g->freq, g->n_freq, &g->n_top);
    if (!g->next || !g->top) s = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  free(g->pairs);
  free(g->freq);
  g->pairs = g->freq = NULL;
  if (s != SC_OK) {
    sc_eval_ngram_free(g);
    return s;
  }
  if (files) *files = t.files;
  if (left_out) *left_out = t.left_out;
  *out = g;
  return SC_OK;
}

/* ---- predicting ---------------------------------------------------------------------- */

/* Among the lines of the local texts that follow a line whose stripped
 * form is prev (the next non-blank line), the most frequent (ties: the
 * last seen); *n its length. NULL when prev is nowhere followed. */
typedef struct seen {
  const char *s;
  size_t n;
} seen;

static const char *local_next(const char *const *texts, const size_t *lens, int n_texts,
                              const char *prev, size_t prev_len, size_t *n) {
  seen found[256];
  size_t n_found = 0;
  for (int t = 0; t < n_texts; t++) {
    const char *s = texts[t];
    bool after_prev = false;
    for (size_t p = 0; p < lens[t];) {
      const char *nl = memchr(s + p, '\n', lens[t] - p);
      size_t e = nl ? (size_t)(nl - s) : lens[t], end = e, a, b;
      if (end > p && s[end - 1] == '\r') end--;
      strip(s + p, end - p, &a, &b);
      if (b > a) {
        if (after_prev) {
          if (n_found == sizeof found / sizeof found[0]) n_found--; /* keep the latest */
          found[n_found++] = (seen){s + p, end - p};
        }
        after_prev = b - a == prev_len && memcmp(s + p + a, prev, prev_len) == 0;
      }
      p = e + 1;
    }
  }
  size_t pick = 0, pick_count = 0;
  for (size_t i = 0; i < n_found; i++) {
    size_t count = 0;
    for (size_t j = 0; j < n_found; j++)
      count += found[j].n == found[i].n && memcmp(found[j].s, found[i].s, found[i].n) == 0;
    if (count >= pick_count) pick_count = count, pick = i;
  }
  if (!n_found) return NULL;
  *n = found[pick].n;
  return found[pick].s;
}

char *sc_eval_ngram_predict(const sc_eval_ngram *g, const char *lang, const char *before,
                            size_t before_len, const char *after, size_t after_len, int k,
                            size_t *len) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  if (!f) return NULL;
  /* The previous non-blank line, stripped. */
  char *prev = NULL;
  size_t prev_len = 0;
  for (size_t e = before_len; e > 0 && !prev;) {
    size_t s = e;
    while (s > 0 && before[s - 1] != '\n') s--;
    size_t a, b;
    strip(before + s, e - s, &a, &b);
    if (b > a) prev = strndup(before + s + a, b - a), prev_len = b - a;
    e = s > 0 ? s - 1 : 0;
    if (s == 0) break;
  }
  if (!prev) prev = strdup("");
  const char *texts[2] = {before, after};
  size_t lens[2] = {before_len, after_len};
  for (int i = 0; i < k && prev; i++) {
    size_t ln = 0;
    const char *line = prev_len ? local_next(texts, lens, 2, prev, prev_len, &ln) : NULL;
    if (!line && g) {
      const best *hit = lookup(g->next, g->n_next, key_of(lang, prev, prev_len));
      if (!hit) hit = lookup(g->top, g->n_top, top_key(lang));
      line = hit ? line_text(g, hit->line) : NULL;
      ln = line ? strlen(line) : 0;
    }
    if (!line) line = "", ln = 0;
    fwrite(line, 1, ln, f);
    fputc('\n', f);
    size_t a, b;
    strip(line, ln, &a, &b);
    char *next = strndup(line + a, b - a);
    free(prev);
    prev = next;
    prev_len = b - a;
  }
  bool ok = prev != NULL;
  free(prev);
  if (fclose(f) != 0 || !ok) {
    free(out);
    return NULL;
  }
  *len = n;
  return out;
}

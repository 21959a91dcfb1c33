/* workspace.c — the workspace index: listing, per-file indexing, the
 * name, scope and path maps, MinHash sketches of chunks, per-file updates,
 * and the on-disk copy that makes a second run start warm.
 *
 * The index lists the repository's files as git does (git.c, with libgit2,
 * so .gitignore is honoured and nothing the repository configures runs),
 * skips binary, generated and huge files and symlinks that lead out of the
 * root, and keeps each file's definitions with their compact forms (definitions.c, from our tree-sitter queries),
 * imports and chunk sketches. Bodies are read back from disk when a prompt
 * has room for them, so memory stays at the definitions' and sketches' size.
 * A file whose mtime and size (or, when only its mtime moved, its hash)
 * match the entry kept on disk (index_store.c) is not read or parsed again.
 *
 * Memory for chunks: a sketch is SC_MINHASH_K = 16 minima of 16 bits (the
 * low bits of each 64-bit minimum: the high bits of a minimum are biased
 * towards zero, the low ones are not), 40 bytes a chunk with its line, one
 * chunk per 12 lines: ~3.3 bytes per source line, and at most max_chunks
 * (2M, 80 MB) in all. The estimate's standard error is sqrt(J(1-J)/16),
 * at most 0.125 (at J = 0.5); two unrelated minima collide with probability
 * 2^-16, a negligible bias. Retrieval only uses the estimate to pick
 * candidates and re-scores them exactly from the file (retrieve.c). Source:
 * Broder, "On the resemblance and containment of documents" (1997); Li and
 * Koenig, "b-Bit Minwise Hashing" (WWW 2010) for keeping low bits only. */
#define _DEFAULT_SOURCE /* realpath, strndup */
#include "workspace_impl.h"
#include "git_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- listing ------------------------------------------------------------ */

static bool looks_binary(const char *data, size_t n) {
  return memchr(data, '\0', n < 8192 ? n : 8192) != NULL;
}

/* Minified or generated: a very long line, or a name that says so. */
static bool looks_generated(const char *path, const char *data, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strstr(base, ".min.") || strcmp(base, "package-lock.json") == 0 ||
      strstr(base, ".pb.") || strstr(base, "_pb2."))
    return true;
  size_t line = 0;
  for (size_t i = 0; i < n && i < 65536; i++) {
    if (data[i] == '\n') line = 0;
    else if (++line > 1000) return true;
  }
  return false;
}

char *ws_read_all(const char *path, size_t max, size_t *len, bool *too_big) {
  /* A FIFO or device in a tracked file's place is refused, not opened: a
   * FIFO's open would block the indexing for good. */
  char *buf = NULL;
  sc_status st = sc_file_read_regular(path, max, &buf, len, NULL);
  *too_big = st == SC_ERR_FORMAT;
  return st == SC_OK ? buf : NULL;
}

/* ---- identifier sets and MinHash ------------------------------------------------ */

bool ws_is_keyword(const char *w, size_t n) {
  static const char *const k[] = {
      "if", "else", "for", "while", "return", "def", "class", "import", "from", "in", "not",
      "and", "or", "is", "None", "True", "False", "int", "char", "void", "const", "static",
      "struct", "unsigned", "long", "float", "double", "function", "var", "let", "new", "this",
      "self", "fn", "pub", "use", "mut", "func", "package", "public", "private", "print",
      "include", "define", "typedef", "enum", "switch", "case", "break", "continue", "do",
      "try", "catch", "with", "as", "pass", "lambda", "yield", "async", "await", "export"};
  /* Called for every identifier retrieval scans: the words are bucketed by
   * length once, so a word is compared with the few of its length only. */
  enum { MAXLEN = 9, PER = 24 };
  static unsigned char by_len[MAXLEN][PER], n_by_len[MAXLEN];
  static _Atomic int ready;
  if (!atomic_load_explicit(&ready, memory_order_acquire)) {
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once);
    if (!atomic_load_explicit(&ready, memory_order_relaxed)) {
      for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        size_t l = strlen(k[i]);
        if (l < MAXLEN && n_by_len[l] < PER) by_len[l][n_by_len[l]++] = (unsigned char)i;
      }
      atomic_store_explicit(&ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&once);
  }
  if (n >= MAXLEN) return false;
  for (size_t j = 0; j < n_by_len[n]; j++) {
    const char *x = k[by_len[n][j]];
    if (x[0] == w[0] && memcmp(w, x, n) == 0) return true;
  }
  return false;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

size_t sc_ident_set(const char *text, size_t len, uint64_t *buf, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < len && n < cap;) {
    if (!is_word(text[i])) {
      i++;
      continue;
    }
    size_t s = i;
    while (i < len && is_word(text[i])) i++;
    if (i - s < 2 || isdigit((unsigned char)text[s]) || ws_is_keyword(text + s, i - s)) continue;
    buf[n++] = sc_hash64(text + s, i - s, 0x5c);
  }
  if (n == 0) return 0;
  qsort(buf, n, sizeof *buf, cmp_u64);
  size_t u = 1;
  for (size_t i = 1; i < n; i++)
    if (buf[i] != buf[u - 1]) buf[u++] = buf[i];
  return u;
}

float sc_ident_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb) {
  size_t i = 0, j = 0, both = 0;
  while (i < na && j < nb) {
    if (a[i] == b[j]) both++, i++, j++;
    else if (a[i] < b[j]) i++;
    else j++;
  }
  size_t uni = na + nb - both;
  return uni ? (float)both / (float)uni : 0.0f;
}

/* splitmix64's finaliser: the K hash functions are mix(x ^ seed_k). */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void sc_minhash_sketch(const uint64_t *set, size_t n, uint16_t sig[SC_MINHASH_K]) {
  for (int k = 0; k < SC_MINHASH_K; k++) {
    uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1), m = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
      uint64_t h = mix64(set[i] ^ seed);
      if (h < m) m = h;
    }
    sig[k] = (uint16_t)(m & 0xffff);
  }
}

float sc_minhash_estimate(const uint16_t a[SC_MINHASH_K], const uint16_t b[SC_MINHASH_K]) {
  int eq = 0;
  for (int k = 0; k < SC_MINHASH_K; k++) eq += a[k] == b[k];
  return (float)eq / (float)SC_MINHASH_K;
}

/* Sketches of the file's chunks: windows of WS_CHUNK_LINES lines every
 * WS_CHUNK_STEP, the last one ending at the end of the file. */
static void index_chunks(ws_file *f, const char *text, size_t len, size_t room) {
  size_t n_lines = 0;
  size_t *starts = NULL, cap = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == 0 || (text[i - 1] == '\n' && i < len)) {
      if (n_lines == cap) {
        size_t nc = cap ? cap * 2 : 256;
        size_t *ns = realloc(starts, nc * sizeof *ns);
        if (!ns) {
          free(starts);
          return;
        }
        starts = ns;
        cap = nc;
      }
      starts[n_lines++] = i;
    }
  }
  f->lines = (uint32_t)n_lines;
  size_t want = n_lines <= WS_CHUNK_LINES ? 1 : (n_lines - WS_CHUNK_LINES + WS_CHUNK_STEP - 1) / WS_CHUNK_STEP + 1;
  if (want > room) want = room;
  f->chunks = want ? malloc(want * sizeof *f->chunks) : NULL;
  uint64_t set[1024];
  for (size_t c = 0; f->chunks && c < want; c++) {
    size_t a = c * WS_CHUNK_STEP, b = a + WS_CHUNK_LINES;
    if (b > n_lines) b = n_lines;
    size_t x = starts[a], y = b < n_lines ? starts[b] : len;
    size_t n = sc_ident_set(text + x, y - x, set, sizeof set / sizeof set[0]);
    ws_chunk *ch = &f->chunks[f->n_chunks++];
    ch->start_line = (uint32_t)a;
    ch->n_idents = (uint16_t)(n > UINT16_MAX ? UINT16_MAX : n);
    sc_minhash_sketch(set, n, ch->sig);
  }
  free(starts);
}

/* ---- maps ------------------------------------------------------------------------ */

static ws_map_entry *map_slot(const ws_map *m, const char *key, uint64_t h) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    ws_map_entry *e = &m->slots[i];
    if (!e->key || (e->hash == h && strcmp(e->key, key) == 0)) return e;
  }
}

const ws_map_entry *ws_map_get(const ws_map *m, const char *key) {
  ws_map_entry *e = map_slot(m, key, sc_hash64(key, strlen(key), 7));
  return e && e->key ? e : NULL;
}

static bool map_grow(ws_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  ws_map_entry *slots = calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < m->cap; i++) {
    ws_map_entry *e = &m->slots[i];
    if (!e->key) continue;
    size_t j = (size_t)e->hash & (cap - 1);
    while (slots[j].key) j = (j + 1) & (cap - 1);
    slots[j] = *e;
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return true;
}

static bool map_add(ws_map *m, const char *key, uint64_t val) {
  if ((m->used + 1) * 4 > m->cap * 3 && !map_grow(m)) return false;
  uint64_t h = sc_hash64(key, strlen(key), 7);
  ws_map_entry *e = map_slot(m, key, h);
  if (!e->key) {
    if (!(e->key = strdup(key))) return false;
    e->hash = h;
    m->used++;
  }
  if (e->n == e->cap) {
    uint32_t cap = e->cap ? e->cap * 2 : 1;
    uint64_t *nv = realloc(e->vals, cap * sizeof *nv);
    if (!nv) return false;
    e->vals = nv;
    e->cap = cap;
  }
  e->vals[e->n++] = val;
  return true;
}

/* Removes the values of key whose high 32 bits are id (order kept). */
static void map_remove_id(ws_map *m, const char *key, uint32_t id) {
  ws_map_entry *e = map_slot(m, key, sc_hash64(key, strlen(key), 7));
  if (!e || !e->key) return;
  uint32_t k = 0;
  for (uint32_t i = 0; i < e->n; i++)
    if ((uint32_t)(e->vals[i] >> 32) != id) e->vals[k++] = e->vals[i];
  e->n = k;
  if (k == 0) {
    free(e->vals); /* the key stays (see ws_map) */
    e->vals = NULL;
    e->cap = 0;
  }
}

/* Adds delta to key's single value (a count), creating it at 0. */
static void map_bump(ws_map *m, const char *key, int64_t delta) {
  const ws_map_entry *e = ws_map_get(m, key);
  if (!e || e->n == 0) {
    if (delta > 0) map_add(m, key, (uint64_t)delta);
    return;
  }
  ws_map_entry *w = (ws_map_entry *)e;
  int64_t v = (int64_t)w->vals[0] + delta;
  w->vals[0] = v > 0 ? (uint64_t)v : 0;
}

uint32_t ws_member_uses(const sc_workspace *ws, const char *name) {
  const ws_map_entry *e = ws_map_get(&ws->uses, name);
  return e && e->n ? (uint32_t)(e->vals[0] > UINT32_MAX ? UINT32_MAX : e->vals[0]) : 0;
}

static void map_free(ws_map *m) {
  for (size_t i = 0; i < m->cap; i++) {
    free(m->slots[i].key);
    free(m->slots[i].vals);
  }
  free(m->slots);
  memset(m, 0, sizeof *m);
}

/* ---- files ---------------------------------------------------------------------- */

void ws_file_clear(ws_file *f) {
  free(f->defs);
  free(f->uses);
  free(f->imports);
  free(f->pool);
  free(f->chunks);
  free(f->path);
  free(f->ltext);
  free(f->ltab);
  memset(f, 0, sizeof *f);
}

void ws_file_free(ws_file *f) {
  if (!f) return;
  ws_file_clear(f);
  free(f);
}

typedef enum skip_kind { SK_NONE, SK_LANG, SK_OUTSIDE, SK_UNREADABLE, SK_HUGE, SK_BINARY, SK_GENERATED } skip_kind;

/* The entry the on-disk index kept for rel, when the file has not changed
 * since (mtime and size, else its hash: text, may be NULL until read). */
static ws_file *from_store(const sc_workspace *ws, const char *rel, const char *lang,
                           int64_t mtime, uint64_t size, const char *text, size_t len,
                           size_t room, size_t line_room, bool *need_text) {
  *need_text = false;
  if (!ws->store) return NULL;
  ws_file *c = ws_store_take(ws->store, rel, mtime, size, text, len, need_text);
  if (c && c->n_chunks > room) { /* the chunk budget shrank meanwhile */
    ws_file_free(c);
    c = NULL;
  }
  if (c && ws_lines_file_bytes(c) > line_room) { /* the line tables' bound was reached */
    free(c->ltext);
    free(c->ltab);
    c->ltext = NULL;
    c->ltab = NULL;
    c->ltext_len = c->n_ltab = 0;
    c->lines_cut = true;
  }
  if (c) {
    c->lang = lang;
    c->mtime_ns = mtime;
  }
  return c;
}

/* Builds the index entry for rel (text given, or read from disk). Runs
 * without the lock: it only reads ws's constant fields (and, during
 * sc_workspace_index only, the on-disk index it takes entries from). *out
 * NULL when the file is skipped (*why says why). room: chunks it may sketch. */
static sc_status build_file(const sc_workspace *ws, const char *rel, const char *given,
                            size_t given_len, size_t room, size_t line_room, ws_file **out,
                            skip_kind *why) {
  *out = NULL;
  *why = SK_NONE;
  const char *lang = sc_context_language_for(NULL, rel);
  if (!lang || !sc_context_ts_language(lang)) {
    *why = SK_LANG;
    return SC_OK;
  }
  char full[PATH_MAX * 2];
  snprintf(full, sizeof full, "%s/%s", ws->root, rel);
  const char *text = given;
  size_t len = given_len;
  char *owned = NULL;
  int64_t mtime = 0;
  if (!text) {
    /* A symlink may lead out of the root: follow it and check. */
    char target[PATH_MAX];
    size_t rl = strlen(ws->root);
    if (!realpath(full, target)) {
      *why = SK_UNREADABLE;
      return SC_OK;
    }
    if (strncmp(target, ws->root, rl) != 0 || (target[rl] != '/' && target[rl] != '\0')) {
      *why = SK_OUTSIDE;
      return SC_OK;
    }
    struct stat sb;
    if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      *why = SK_UNREADABLE;
      return SC_OK;
    }
    if ((uint64_t)sb.st_size > ws->max_bytes) {
      *why = SK_HUGE;
      return SC_OK;
    }
    mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    if (ws->store) {
      int sk = ws_store_skipped(ws->store, rel, mtime, (uint64_t)sb.st_size);
      if (sk == SK_BINARY || sk == SK_GENERATED) {
        *why = (skip_kind)sk;
        return SC_OK;
      }
    }
    bool need_text = false;
    *out = from_store(ws, rel, lang, mtime, (uint64_t)sb.st_size, NULL, 0, room, line_room,
                      &need_text);
    if (*out) return SC_OK;
    bool too_big = false;
    owned = ws_read_all(full, ws->max_bytes, &len, &too_big);
    if (!owned) {
      *why = too_big ? SK_HUGE : SK_UNREADABLE;
      return SC_OK;
    }
    text = owned;
    if (need_text) {
      *out = from_store(ws, rel, lang, mtime, len, text, len, room, line_room, &need_text);
      if (*out) {
        free(owned);
        return SC_OK;
      }
    }
  } else if (len > ws->max_bytes) {
    *why = SK_HUGE;
    return SC_OK;
  }
  if (looks_binary(text, len)) *why = SK_BINARY;
  else if (looks_generated(rel, text, len)) *why = SK_GENERATED;
  if (*why != SK_NONE) {
    if (ws->store && !given) ws_store_note_skip(ws->store, rel, mtime, len, (int)*why);
    free(owned);
    return SC_OK;
  }
  ws_file *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(rel))) {
    free(f);
    free(owned);
    return SC_ERR_NOMEM;
  }
  f->lang = lang;
  f->mtime_ns = mtime;
  f->size = len;
  f->hash = sc_hash64(text, len, 0);
  f->from_buffer = given != NULL;
  sc_syntax_tree *tree = NULL;
  if (sc_syntax_tree_new(lang, text, len, &tree, NULL) == SC_OK) {
    ws_index_tree(f, tree, text, len);
    sc_syntax_tree_free(tree);
  }
  index_chunks(f, text, len, room);
  f->lines_cut = !ws_lines_build(f, text, len, line_room);
  free(owned);
  *out = f;
  return SC_OK;
}

/* Under the write lock: puts f in the index (replacing rel's entry, if
 * any). Takes ownership of f. */
static bool insert_file(sc_workspace *ws, ws_file *f);

/* Under the write lock: drops file id and its map entries. */
static void drop_file(sc_workspace *ws, uint32_t id) {
  ws_file *f = ws->files[id];
  if (!f) return;
  for (size_t k = 0; k < f->n_defs; k++) {
    if (!*ws_str(f, f->defs[k].name)) continue; /* an unnamed group of constants */
    map_remove_id(&ws->by_name, ws_str(f, f->defs[k].name), id);
    if (f->defs[k].scope != WS_NONE) map_remove_id(&ws->by_scope, ws_str(f, f->defs[k].scope), id);
  }
  for (size_t k = 0; k < f->n_uses; k++)
    map_bump(&ws->uses, ws_str(f, f->uses[k].name), -(int64_t)f->uses[k].count);
  map_remove_id(&ws->by_path, f->path, id);
  ws_lines_remove(&ws->lines, id, f);
  ws->stats.definitions -= f->n_defs;
  ws->stats.lines -= f->lines;
  ws->n_chunks -= f->n_chunks;
  ws_file_free(f);
  ws->files[id] = NULL;
  ws->n_live--;
}

static bool find_id(const sc_workspace *ws, const char *rel, uint32_t *id) {
  const ws_map_entry *e = ws_map_get(&ws->by_path, rel);
  if (!e || e->n == 0) return false;
  *id = (uint32_t)(e->vals[0] >> 32);
  return true;
}

static bool insert_file(sc_workspace *ws, ws_file *f) {
  uint32_t id;
  if (find_id(ws, f->path, &id)) drop_file(ws, id);
  /* The lowest free slot keeps ids dense; a scan is fine next to a parse. */
  size_t slot = ws->n_slots;
  if (ws->n_live < ws->n_slots)
    for (size_t i = 0; i < ws->n_slots; i++)
      if (!ws->files[i]) {
        slot = i;
        break;
      }
  if (slot == ws->n_slots) {
    if (ws->n_slots == ws->cap_slots) {
      size_t cap = ws->cap_slots ? ws->cap_slots * 2 : 64;
      ws_file **nf = realloc(ws->files, cap * sizeof *nf);
      if (!nf) {
        ws_file_free(f);
        return false;
      }
      ws->files = nf;
      ws->cap_slots = cap;
    }
    ws->files[ws->n_slots++] = NULL;
  }
  id = (uint32_t)slot;
  if (!map_add(&ws->by_path, f->path, (uint64_t)id << 32)) {
    ws_file_free(f);
    return false;
  }
  for (size_t k = 0; k < f->n_defs; k++) {
    const ws_def *d = &f->defs[k];
    if (!*ws_str(f, d->name)) continue; /* an unnamed group of constants: found through them */
    map_add(&ws->by_name, ws_str(f, d->name), (uint64_t)id << 32 | (uint32_t)k);
    if (d->scope != WS_NONE)
      map_add(&ws->by_scope, ws_str(f, d->scope), (uint64_t)id << 32 | (uint32_t)k);
  }
  for (size_t k = 0; k < f->n_uses; k++)
    map_bump(&ws->uses, ws_str(f, f->uses[k].name), (int64_t)f->uses[k].count);
  ws_lines_insert(&ws->lines, id, f);
  if (f->lines_cut) ws->line_partial = true;
  ws->files[id] = f;
  ws->n_live++;
  ws->stats.definitions += f->n_defs;
  ws->stats.lines += f->lines;
  ws->n_chunks += f->n_chunks;
  return true;
}

/* Under a lock: what the line tables' bound leaves for a file (its old
 * entry's table counts as free: it is replaced). */
static size_t line_room_for(const sc_workspace *ws, const ws_file *old) {
  size_t used = ws->lines.bytes - (old ? ws_lines_file_bytes(old) : 0);
  return used < ws->max_line_bytes ? ws->max_line_bytes - used : 0;
}

static void count_skip(sc_workspace_stats *st, skip_kind why) {
  if (why == SK_BINARY) st->skipped_binary++;
  else if (why == SK_HUGE) st->skipped_huge++;
  else if (why == SK_GENERATED) st->skipped_generated++;
  else if (why == SK_OUTSIDE) st->skipped_outside++;
}

/* Indexes the files git lists under folder (relative; NULL: the whole
 * root), honouring .gitignore (git.c, libgit2: no git subprocess). Each
 * file is parsed outside the lock and inserted under the write lock, so
 * readers may run meanwhile (a folder that appears while serving). *added
 * counts the files indexed. An error when git cannot list anything at all. */
static sc_status index_listed(sc_workspace *ws, const char *folder, const _Atomic int *cancel,
                              size_t *added, sc_error *err) {
  ws_names names;
  sc_status st = ws_git_list(ws->root, folder, &names, err);
  /* A folder that is in no work tree any more lists nothing, as git did. */
  if (st != SC_OK) return folder ? SC_OK : st;
  for (size_t i = 0; i < names.n; i++) {
    const char *name = names.v[i];
    if (cancel && atomic_load(cancel)) {
      ws_names_free(&names);
      return sc_error_set(err, SC_ERR_CANCELLED, "workspace %s: indexing cancelled", ws->root);
    }
    pthread_rwlock_rdlock(&ws->lock);
    uint32_t id;
    bool known = find_id(ws, name, &id);
    bool full = !known && ws->n_live >= ws->max_files;
    size_t room = ws->max_chunks - ws->n_chunks + (known ? ws->files[id]->n_chunks : 0);
    size_t line_room = line_room_for(ws, known ? ws->files[id] : NULL);
    pthread_rwlock_unlock(&ws->lock);
    ws_file *f = NULL;
    skip_kind why = SK_NONE;
    if (!full && build_file(ws, name, NULL, 0, room, line_room, &f, &why) != SC_OK) {
      st = sc_error_set(err, SC_ERR_NOMEM, "workspace %s: out of memory", ws->root);
      break;
    }
    pthread_rwlock_wrlock(&ws->lock);
    if (full) ws->stats.skipped_limit++;
    else if (!f) count_skip(&ws->stats, why);
    bool ok = !f || insert_file(ws, f);
    pthread_rwlock_unlock(&ws->lock);
    if (!ok) {
      st = sc_error_set(err, SC_ERR_NOMEM, "workspace %s: out of memory", ws->root);
      break;
    }
    if (f) (*added)++;
  }
  ws_names_free(&names);
  return st;
}

/* Reads the on-disk index kept for ws (when there is one) into ws->store;
 * a file that does not hold up is one log line and a full build. */
static void store_open(sc_workspace *ws, const sc_workspace_options *opts) {
  const char *dir = opts ? opts->cache_dir : NULL;
  if (dir && !*dir) return; /* "" keeps no index on disk */
  ws->cache_path = ws_store_path(dir, ws->root);
  if (!ws->cache_path) return;
  sc_error e = {0};
  ws->store = ws_store_load(ws->cache_path, ws->root, &e);
  if (!ws->store && e.status != SC_OK)
    SC_LOG_WARN("workspace %s: the index kept in %s was not used (%s); indexing from scratch",
                ws->root, ws->cache_path, e.msg);
}

/* After a full build: writes the index back when it differs from the kept
 * one, and lets the kept entries go. */
static void store_close(sc_workspace *ws) {
  if (ws->cache_path && !ws_store_unchanged(ws->store, ws->n_live)) {
    sc_error e = {0};
    if (ws_store_save(ws, ws->store, ws->cache_path, &e) != SC_OK)
      SC_LOG_WARN("workspace %s: %s", ws->root, e.msg);
  }
  ws->stats.cached = ws_store_reused(ws->store);
  ws_store_free(ws->store);
  ws->store = NULL;
}

sc_status sc_workspace_index(const char *root, const sc_workspace_options *opts,
                             sc_workspace **out, sc_error *err) {
  *out = NULL;
  char real[PATH_MAX];
  SC_CHECK(realpath(root, real), err, SC_ERR_IO, "workspace %s: %s", root, strerror(errno));
  sc_workspace *ws = calloc(1, sizeof *ws);
  SC_CHECK(ws, err, SC_ERR_NOMEM, "out of memory");
  ws->max_files = opts && opts->max_files ? opts->max_files : 100000;
  ws->max_bytes = opts && opts->max_file_bytes ? opts->max_file_bytes : (1u << 20);
  ws->max_chunks = opts && opts->max_chunks ? opts->max_chunks : 2000000;
  ws->max_line_bytes = opts && opts->max_line_bytes ? opts->max_line_bytes : SC_WS_MAX_LINE_BYTES;
  ws->lines.max_bytes = ws->max_line_bytes;
  pthread_rwlock_init(&ws->lock, NULL);
  ws->root = strdup(real);
  if (!ws->root) {
    sc_workspace_free(ws);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  double t0 = sc_now_ms();
  store_open(ws, opts);
  size_t added = 0;
  sc_status st = index_listed(ws, NULL, opts ? opts->cancel : NULL, &added, err);
  if (st != SC_OK) {
    sc_workspace_free(ws);
    return st;
  }
  store_close(ws);
  ws->stats.files = ws->n_live;
  ws->stats.chunks = ws->n_chunks;
  ws->stats.ms = sc_now_ms() - t0;
  *out = ws;
  return SC_OK;
}

sc_status sc_workspace_save(sc_workspace *ws, sc_error *err) {
  SC_CHECK(ws, err, SC_ERR_INVALID, "workspace save: no workspace");
  if (!ws->cache_path) return SC_OK;
  pthread_rwlock_rdlock(&ws->lock);
  sc_status st = ws_store_save(ws, NULL, ws->cache_path, err);
  pthread_rwlock_unlock(&ws->lock);
  return st;
}

/* A ".." path component would lead out of the root; "a..b.py" is a name. */
static bool has_dotdot(const char *rel) {
  for (const char *p = rel; (p = strstr(p, "..")); p += 2)
    if ((p == rel || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return true;
  return false;
}

sc_status sc_workspace_update_file(sc_workspace *ws, const char *rel_path, const char *text,
                                   size_t len, bool *indexed, sc_error *err) {
  if (indexed) *indexed = false;
  SC_CHECK(ws && rel_path && *rel_path && rel_path[0] != '/' && !has_dotdot(rel_path), err,
           SC_ERR_INVALID, "workspace update: '%s' is not a path inside the root",
           rel_path ? rel_path : "(null)");
  if (!text) {
    /* A folder that appeared (created, or moved in: editors report only the
     * folder) brings the files git lists under it. */
    char abs[PATH_MAX];
    struct stat sb;
    if (snprintf(abs, sizeof abs, "%s/%s", ws->root, rel_path) < (int)sizeof abs &&
        stat(abs, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      size_t added = 0;
      sc_status st = index_listed(ws, rel_path, NULL, &added, err);
      pthread_rwlock_wrlock(&ws->lock);
      ws->stats.updates += added;
      ws->stats.files = ws->n_live;
      ws->stats.chunks = ws->n_chunks;
      pthread_rwlock_unlock(&ws->lock);
      if (indexed) *indexed = added > 0;
      return st;
    }
  }
  pthread_rwlock_rdlock(&ws->lock);
  uint32_t id;
  bool known = find_id(ws, rel_path, &id);
  size_t room = ws->max_chunks - ws->n_chunks + (known ? ws->files[id]->n_chunks : 0);
  size_t line_room = line_room_for(ws, known ? ws->files[id] : NULL);
  bool full = !known && ws->n_live >= ws->max_files;
  pthread_rwlock_unlock(&ws->lock);
  if (full || (!known && ws_git_ignores(ws->root, rel_path))) {
    if (full) {
      pthread_rwlock_wrlock(&ws->lock);
      ws->stats.skipped_limit++;
      pthread_rwlock_unlock(&ws->lock);
    }
    return SC_OK;
  }
  ws_file *f = NULL;
  skip_kind why;
  sc_status st = build_file(ws, rel_path, text, len, room, line_room, &f, &why);
  SC_CHECK(st == SC_OK, err, st, "workspace update %s: out of memory", rel_path);
  pthread_rwlock_wrlock(&ws->lock);
  bool ok = true;
  if (f) {
    ok = insert_file(ws, f);
    ws->stats.updates++;
  } else {
    if (find_id(ws, rel_path, &id)) {
      drop_file(ws, id);
      ws->stats.removals++;
    }
    count_skip(&ws->stats, why);
  }
  ws->stats.files = ws->n_live;
  ws->stats.chunks = ws->n_chunks;
  pthread_rwlock_unlock(&ws->lock);
  SC_CHECK(ok, err, SC_ERR_NOMEM, "workspace update %s: out of memory", rel_path);
  if (indexed) *indexed = f != NULL;
  return SC_OK;
}

bool sc_workspace_remove_file(sc_workspace *ws, const char *rel_path) {
  if (!ws || !rel_path) return false;
  pthread_rwlock_wrlock(&ws->lock);
  uint32_t id;
  bool found = find_id(ws, rel_path, &id);
  if (found) {
    drop_file(ws, id);
    ws->stats.removals++;
  } else {
    /* Not a file: a deleted folder takes every file under it (editors
     * report only the folder). A scan of the slots, as rare as the event. */
    size_t n = strlen(rel_path);
    while (n > 0 && rel_path[n - 1] == '/') n--;
    for (size_t i = 0; n > 0 && i < ws->n_slots; i++) {
      ws_file *f = ws->files[i];
      if (f && strncmp(f->path, rel_path, n) == 0 && f->path[n] == '/') {
        drop_file(ws, (uint32_t)i);
        ws->stats.removals++;
        found = true;
      }
    }
  }
  ws->stats.files = ws->n_live;
  ws->stats.chunks = ws->n_chunks;
  pthread_rwlock_unlock(&ws->lock);
  return found;
}

size_t sc_workspace_count_definitions(const sc_workspace *ws, const char *name) {
  pthread_rwlock_t *lock = (pthread_rwlock_t *)&ws->lock; /* readers do not change ws */
  pthread_rwlock_rdlock(lock);
  const ws_map_entry *e = ws_map_get(&ws->by_name, name);
  size_t n = e ? e->n : 0;
  pthread_rwlock_unlock(lock);
  return n;
}

void sc_workspace_free(sc_workspace *ws) {
  if (!ws) return;
  for (size_t i = 0; i < ws->n_slots; i++) ws_file_free(ws->files[i]);
  free(ws->files);
  map_free(&ws->by_path);
  map_free(&ws->by_name);
  map_free(&ws->by_scope);
  map_free(&ws->uses);
  ws_lines_free(&ws->lines);
  ws_store_free(ws->store);
  free(ws->cache_path);
  pthread_rwlock_destroy(&ws->lock);
  free(ws->root);
  free(ws);
}

sc_workspace_stats sc_workspace_get_stats(const sc_workspace *ws) {
  pthread_rwlock_t *lock = (pthread_rwlock_t *)&ws->lock;
  pthread_rwlock_rdlock(lock);
  sc_workspace_stats st = ws->stats;
  /* Some files or chunks are missing when a bound was reached. */
  st.partial = st.skipped_limit > 0 || ws->n_chunks >= ws->max_chunks;
  st.line_bytes = ws->lines.bytes;
  st.line_partial = ws->line_partial;
  pthread_rwlock_unlock(lock);
  return st;
}

const char *sc_workspace_root(const sc_workspace *ws) { return ws->root; }

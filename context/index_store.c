/* index_store.c — the workspace index kept on disk between runs, one file
 * per work tree under the user's cache directory, so that a second CLI
 * call or a server restart on an unchanged repository starts warm.
 *
 * The file is untrusted input (another version of sculpt, a truncated
 * write, a disk error, anyone who can write the cache folder): the whole is
 * covered by a checksum, every count, length and offset is checked against
 * what is left before it is used, and anything that does not hold rejects
 * the file as a whole (the caller logs one line and indexes from scratch).
 * A schema hash over the queries and the record layout invalidates files
 * written by a build that indexes differently.
 *
 * An entry is reused when its file's mtime (ns) and size still match and
 * the mtime is older than the write of the index by a margin (a file
 * changed within the same clock tick as the write could keep its mtime:
 * git's "racily clean" case); otherwise, when the size matches, the file is
 * read and its hash compared. Writes go to a temporary file in the same
 * folder, fsync'd, then renamed over the old one. The folder is bounded:
 * at most 64 index files and 512 MiB, the least recently used removed
 * first; one index over 256 MiB is not kept. */
#define _DEFAULT_SOURCE /* strndup, fsync */
#include "workspace_impl.h"
#include "query_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define STORE_MAGIC "sculptIX"
#define STORE_VERSION 3u /* 3: the line tables (lines.c) */
#define STORE_BOM 0x01020304u
#define STORE_MAX_BYTES (256u << 20)
#define STORE_DIR_MAX_FILES 64
#define STORE_DIR_MAX_BYTES (512ull << 20)
#define RACY_NS 2000000000LL /* mtimes this close to the write are verified by hash */

typedef struct store_entry {
  char *path;
  int64_t mtime_ns;
  uint64_t size;
  ws_file *file; /* NULL for a skip record, or once taken */
  int skip;      /* the skip kind of a skipped file, else 0 */
  bool used;     /* taken, or a skip confirmed */
} store_entry;

struct ws_store {
  store_entry *e; /* sorted by path */
  size_t n, cap;
  size_t n_files, reused, skips_confirmed;
  int64_t written_ns;
  bool changed; /* a kept entry proved stale, or a new skip was noted */
  /* New skips noted during this run, appended unsorted after e[0, n_sorted). */
  size_t n_sorted;
};

/* ---- helpers -------------------------------------------------------------------- */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Hash of everything that decides what an index holds: the queries and the
 * record layout. A different build writes a different value. */
static uint64_t schema_hash(void) {
  static uint64_t h;
  if (h) return h;
  uint64_t x = sc_hash64(STORE_MAGIC, 8, STORE_VERSION);
  size_t sizes[] = {sizeof(ws_def), sizeof(ws_chunk), WS_HEAD_LINES, WS_HEAD_BYTES,
                    WS_CHUNK_LINES, WS_CHUNK_STEP, SC_MINHASH_K};
  x = sc_hash64(sizes, sizeof sizes, x);
  for (size_t i = 0; i < sc_query_blob_count; i++) {
    const sc_query_blob *b = &sc_query_blobs[i];
    if (strcmp(b->kind, "definitions") != 0 && strcmp(b->kind, "imports") != 0) continue;
    x = sc_hash64(b->lang, strlen(b->lang), x);
    x = sc_hash64(b->text, b->len, x);
  }
  h = x ? x : 1;
  return h;
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const store_entry *)a)->path, ((const store_entry *)b)->path);
}

static store_entry *find(ws_store *s, const char *rel) {
  store_entry key = {.path = (char *)rel};
  store_entry *e = s->n_sorted ? bsearch(&key, s->e, s->n_sorted, sizeof *s->e, cmp_entry) : NULL;
  return e;
}

/* ---- reading ------------------------------------------------------------------ */

typedef struct reader {
  const unsigned char *p;
  size_t left;
  bool bad;
} reader;

static bool get(reader *r, void *dst, size_t n) {
  if (n == 0) return !r->bad; /* dst may be NULL then */
  if (r->bad || n > r->left) {
    r->bad = true;
    return false;
  }
  memcpy(dst, r->p, n);
  r->p += n;
  r->left -= n;
  return true;
}

static uint32_t get_u32(reader *r) {
  uint32_t v = 0;
  get(r, &v, sizeof v);
  return v;
}

static uint64_t get_u64(reader *r) {
  uint64_t v = 0;
  get(r, &v, sizeof v);
  return v;
}

/* A path: relative, no NUL, no ".." component, not empty. */
static char *get_path(reader *r) {
  uint32_t n = get_u32(r);
  if (r->bad || n == 0 || n >= PATH_MAX || n > r->left) {
    r->bad = true;
    return NULL;
  }
  const char *s = (const char *)r->p;
  if (memchr(s, '\0', n) || s[0] == '/') {
    r->bad = true;
    return NULL;
  }
  for (uint32_t i = 0; i + 1 < n; i++)
    if (s[i] == '.' && s[i + 1] == '.' && (i == 0 || s[i - 1] == '/') &&
        (i + 2 == n || s[i + 2] == '/')) {
      r->bad = true;
      return NULL;
    }
  char *out = strndup(s, n);
  r->p += n;
  r->left -= n;
  if (!out) r->bad = true;
  return out;
}

static bool off_ok(uint32_t off, size_t pool_len, bool allow_none) {
  return (allow_none && off == WS_NONE) || off < pool_len;
}

/* One file's entry; NULL (and r->bad) when anything does not hold. */
static ws_file *get_file(reader *r) {
  ws_file *f = calloc(1, sizeof *f);
  if (!f) {
    r->bad = true;
    return NULL;
  }
  f->path = get_path(r);
  f->mtime_ns = (int64_t)get_u64(r);
  f->size = get_u64(r);
  f->hash = get_u64(r);
  f->lines = get_u32(r);
  uint32_t n_defs = get_u32(r), n_imports = get_u32(r), n_chunks = get_u32(r);
  uint32_t n_uses = get_u32(r), pool_len = get_u32(r);
  uint32_t ltext_len = get_u32(r), n_ltab = get_u32(r);
  /* Counts are checked against the bytes left before anything is allocated. */
  uint64_t need = (uint64_t)pool_len + (uint64_t)n_defs * sizeof(ws_def) +
                  (uint64_t)n_imports * 4 + (uint64_t)n_chunks * sizeof(ws_chunk) +
                  (uint64_t)n_uses * sizeof(struct ws_use) + (uint64_t)ltext_len +
                  (uint64_t)n_ltab * 4;
  if (r->bad || !f->path || n_defs > UINT16_MAX || need > r->left ||
      (pool_len > 0 && r->p[pool_len - 1] != '\0') ||
      (pool_len == 0 && (n_defs || n_imports || n_uses)) ||
      (ltext_len && r->p[need - (uint64_t)n_ltab * 4 - 1] != '\0'))
    goto bad;
  f->pool = pool_len ? malloc(pool_len) : NULL;
  f->defs = n_defs ? malloc(n_defs * sizeof *f->defs) : NULL;
  f->imports = n_imports ? malloc(n_imports * sizeof *f->imports) : NULL;
  f->chunks = n_chunks ? malloc(n_chunks * sizeof *f->chunks) : NULL;
  f->uses = n_uses ? malloc(n_uses * sizeof *f->uses) : NULL;
  f->ltext = ltext_len ? malloc(ltext_len) : NULL;
  f->ltab = n_ltab ? malloc(n_ltab * sizeof *f->ltab) : NULL;
  if ((pool_len && !f->pool) || (n_defs && !f->defs) || (n_imports && !f->imports) ||
      (n_chunks && !f->chunks) || (n_uses && !f->uses) || (ltext_len && !f->ltext) ||
      (n_ltab && !f->ltab))
    goto bad;
  get(r, f->pool, pool_len);
  f->pool_len = f->pool_cap = pool_len;
  get(r, f->defs, n_defs * sizeof *f->defs);
  f->n_defs = n_defs;
  get(r, f->imports, n_imports * sizeof *f->imports);
  f->n_imports = n_imports;
  get(r, f->chunks, n_chunks * sizeof *f->chunks);
  f->n_chunks = n_chunks;
  get(r, f->uses, n_uses * sizeof *f->uses);
  f->n_uses = n_uses;
  get(r, f->ltext, ltext_len);
  f->ltext_len = ltext_len;
  get(r, f->ltab, n_ltab * sizeof *f->ltab);
  f->n_ltab = n_ltab;
  if (r->bad) goto bad;
  /* Each line starts inside the text, which ends in a NUL: strlen stays in it. */
  for (uint32_t i = 0; i < n_ltab; i++)
    if (f->ltab[i] != WS_NONE && f->ltab[i] >= ltext_len) goto bad;
  for (uint32_t i = 0; i < n_defs; i++) {
    const ws_def *d = &f->defs[i];
    if (!off_ok(d->name, pool_len, false) || !off_ok(d->scope, pool_len, true) ||
        !off_ok(d->head, pool_len, true) || !off_ok(d->tail, pool_len, true) ||
        d->start_byte > d->end_byte || d->start_line > d->end_line ||
        d->kind >= WK_KIND_COUNT || (d->parent != UINT16_MAX && d->parent >= n_defs) ||
        d->head_lines > WS_HEAD_LINES || d->end_byte > f->size)
      goto bad;
  }
  for (uint32_t i = 0; i < n_imports; i++)
    if (!off_ok(f->imports[i], pool_len, false)) goto bad;
  for (uint32_t i = 0; i < n_uses; i++)
    if (!off_ok(f->uses[i].name, pool_len, false)) goto bad;
  return f;
bad:
  r->bad = true;
  ws_file_free(f);
  return NULL;
}

static bool push(ws_store *s, store_entry e) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    store_entry *ne = realloc(s->e, cap * sizeof *ne);
    if (!ne) return false;
    s->e = ne;
    s->cap = cap;
  }
  s->e[s->n++] = e;
  return true;
}

ws_store *ws_store_load(const char *path, const char *root, sc_error *err) {
  size_t len = 0;
  bool big = false;
  char *data = ws_read_all(path, STORE_MAX_BYTES, &len, &big);
  if (!data) {
    if (big) sc_error_set(err, SC_ERR_FORMAT, "larger than %u MiB", STORE_MAX_BYTES >> 20);
    return NULL; /* absent: nothing to say */
  }
  ws_store *s = calloc(1, sizeof *s);
  reader r = {(const unsigned char *)data, len, false};
  char magic[8] = {0};
  uint64_t sum = 0;
  const char *why = "truncated or malformed";
  if (!s) goto fail;
  if (len < 8 + 8) {
    why = "truncated";
    goto fail;
  }
  memcpy(&sum, data + len - 8, 8);
  if (sum != sc_hash64(data, len - 8, 0)) {
    why = "checksum mismatch";
    goto fail;
  }
  r.left = len - 8;
  get(&r, magic, 8);
  if (memcmp(magic, STORE_MAGIC, 8) != 0 || get_u32(&r) != STORE_VERSION ||
      get_u32(&r) != STORE_BOM) {
    why = "not a sculpt index of this version";
    goto fail;
  }
  if (get_u64(&r) != schema_hash()) {
    why = "written by a build that indexes differently";
    goto fail;
  }
  s->written_ns = (int64_t)get_u64(&r);
  uint32_t rl = get_u32(&r); /* the root, compared byte for byte */
  if (r.bad || rl != strlen(root) || rl > r.left || memcmp(r.p, root, rl) != 0) {
    why = "kept for another root";
    goto fail;
  }
  r.p += rl;
  r.left -= rl;
  uint32_t n_files = get_u32(&r), n_skips = get_u32(&r);
  if (r.bad || n_files > r.left / 52 || n_skips > r.left / 21) goto fail;
  for (uint32_t i = 0; i < n_files && !r.bad; i++) {
    ws_file *f = get_file(&r);
    if (!f) break;
    if (!push(s, (store_entry){f->path, f->mtime_ns, f->size, f, 0, false})) {
      ws_file_free(f);
      r.bad = true;
    }
  }
  for (uint32_t i = 0; i < n_skips && !r.bad; i++) {
    char *p = get_path(&r);
    int64_t mt = (int64_t)get_u64(&r);
    uint64_t sz = get_u64(&r);
    unsigned char kind = 0;
    get(&r, &kind, 1);
    if (r.bad || kind == 0) {
      free(p);
      r.bad = true;
      break;
    }
    if (!push(s, (store_entry){p, mt, sz, NULL, kind, false})) {
      free(p);
      r.bad = true;
    }
  }
  if (r.bad || r.left != 0) goto fail;
  s->n_files = n_files;
  qsort(s->e, s->n, sizeof *s->e, cmp_entry);
  for (size_t i = 1; i < s->n; i++)
    if (strcmp(s->e[i - 1].path, s->e[i].path) == 0) {
      why = "a path listed twice";
      goto fail;
    }
  s->n_sorted = s->n;
  free(data);
  utimes(path, NULL); /* recently used: trimmed last */
  return s;
fail:
  free(data);
  ws_store_free(s);
  sc_error_set(err, SC_ERR_FORMAT, "%s", why);
  return NULL;
}

void ws_store_free(ws_store *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    if (s->e[i].file) ws_file_free(s->e[i].file); /* frees the path it shares */
    else free(s->e[i].path);
  }
  free(s->e);
  free(s);
}

ws_file *ws_store_take(ws_store *s, const char *rel, int64_t mtime_ns, uint64_t size,
                       const char *text, size_t len, bool *need_text) {
  *need_text = false;
  if (!s) return NULL;
  store_entry *e = find(s, rel);
  if (!e || !e->file || e->used) return NULL;
  if (e->size != size) {
    s->changed = true;
    return NULL;
  }
  bool trusted = e->mtime_ns == mtime_ns && mtime_ns < s->written_ns - RACY_NS;
  if (!trusted) {
    if (!text) {
      *need_text = true;
      return NULL;
    }
    if (len != size || sc_hash64(text, len, 0) != e->file->hash) {
      s->changed = true;
      return NULL;
    }
    if (e->mtime_ns != mtime_ns) s->changed = true; /* keep the new mtime */
  }
  ws_file *f = e->file;
  /* The entry's path belongs to the file now; keep a copy for lookups. */
  e->path = strdup(f->path);
  if (!e->path) {
    e->path = f->path;
    return NULL;
  }
  e->file = NULL;
  e->used = true;
  s->reused++;
  return f;
}

int ws_store_skipped(ws_store *s, const char *rel, int64_t mtime_ns, uint64_t size) {
  if (!s) return 0;
  store_entry *e = find(s, rel);
  if (!e || e->file || !e->skip || e->size != size || e->mtime_ns != mtime_ns ||
      mtime_ns >= s->written_ns - RACY_NS)
    return 0;
  if (!e->used) s->skips_confirmed++;
  e->used = true;
  return e->skip;
}

void ws_store_note_skip(ws_store *s, const char *rel, int64_t mtime_ns, uint64_t size, int why) {
  if (!s) return;
  char *p = strdup(rel);
  if (!p || !push(s, (store_entry){p, mtime_ns, size, NULL, why, true})) {
    free(p);
    return;
  }
  s->changed = true;
}

size_t ws_store_reused(const ws_store *s) { return s ? s->reused : 0; }

bool ws_store_unchanged(const ws_store *s, size_t n_live) {
  if (!s || s->changed || s->reused != s->n_files || n_live != s->reused) return false;
  size_t skips = 0;
  for (size_t i = 0; i < s->n_sorted; i++) skips += s->e[i].skip != 0;
  return skips == s->skips_confirmed;
}

/* ---- writing ------------------------------------------------------------------ */

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
  bool bad;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->bad || n == 0) return; /* src may be NULL then */
  if (b->n + n > STORE_MAX_BYTES) {
    b->bad = true;
    return;
  }
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1 << 16;
    while (cap < b->n + n) cap *= 2;
    unsigned char *np = realloc(b->p, cap);
    if (!np) {
      b->bad = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void put_u32(buf *b, uint32_t v) { put(b, &v, sizeof v); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, sizeof v); }

static void put_str(buf *b, const char *s) {
  size_t n = strlen(s);
  put_u32(b, (uint32_t)n);
  put(b, s, n);
}

/* mkdir -p for the cache folder (private: it lists the user's repositories). */
static bool make_dirs(const char *dir) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) return false;
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
    *p = '/';
  }
  return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

typedef struct idx_file {
  char name[NAME_MAX + 1];
  time_t mtime;
  off_t size;
} idx_file;

static int cmp_newest(const void *a, const void *b) {
  time_t x = ((const idx_file *)a)->mtime, y = ((const idx_file *)b)->mtime;
  return x > y ? -1 : x < y;
}

/* Keeps the folder within its bounds: the least recently used index files
 * go first; keep (the one just written) stays. Stale temporary files of
 * interrupted writes older than a minute go too. */
static void trim_dir(const char *dir, const char *keep) {
  DIR *d = opendir(dir);
  if (!d) return;
  idx_file *fs = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  time_t now = time(NULL);
  while ((de = readdir(d))) {
    size_t nl = strlen(de->d_name);
    bool idx = nl > 4 && strcmp(de->d_name + nl - 4, ".idx") == 0;
    bool tmp = strstr(de->d_name, ".idx.tmp.") != NULL;
    if (!idx && !tmp) continue;
    char p[PATH_MAX];
    struct stat sb;
    if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p ||
        lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
      continue;
    if (tmp) {
      if (now - sb.st_mtime > 60) unlink(p);
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 32;
      idx_file *nf = realloc(fs, nc * sizeof *nf);
      if (!nf) break;
      fs = nf;
      cap = nc;
    }
    snprintf(fs[n].name, sizeof fs[n].name, "%s", de->d_name);
    fs[n].mtime = sb.st_mtime;
    fs[n].size = sb.st_size;
    n++;
  }
  closedir(d);
  if (n > 1) qsort(fs, n, sizeof *fs, cmp_newest);
  const char *keep_base = strrchr(keep, '/');
  keep_base = keep_base ? keep_base + 1 : keep;
  unsigned long long total = 0;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    bool mine = strcmp(fs[i].name, keep_base) == 0;
    if (mine || (kept < STORE_DIR_MAX_FILES && total + (unsigned long long)fs[i].size <=
                                                   STORE_DIR_MAX_BYTES)) {
      kept++;
      total += (unsigned long long)fs[i].size;
      continue;
    }
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, fs[i].name) < (int)sizeof p) unlink(p);
  }
  free(fs);
}

sc_status ws_store_save(const sc_workspace *ws, const ws_store *s, const char *path,
                        sc_error *err) {
  buf b = {0};
  put(&b, STORE_MAGIC, 8);
  put_u32(&b, STORE_VERSION);
  put_u32(&b, STORE_BOM);
  put_u64(&b, schema_hash());
  put_u64(&b, (uint64_t)now_ns());
  put_str(&b, ws->root);
  uint32_t n_files = 0, n_skips = 0;
  for (size_t i = 0; i < ws->n_slots; i++) {
    const ws_file *f = ws->files[i];
    n_files += f && !f->from_buffer && f->mtime_ns != 0;
  }
  for (size_t i = 0; s && i < s->n; i++) n_skips += s->e[i].skip && s->e[i].used;
  put_u32(&b, n_files);
  put_u32(&b, n_skips);
  for (size_t i = 0; i < ws->n_slots; i++) {
    const ws_file *f = ws->files[i];
    if (!f || f->from_buffer || f->mtime_ns == 0) continue;
    put_str(&b, f->path);
    put_u64(&b, (uint64_t)f->mtime_ns);
    put_u64(&b, f->size);
    put_u64(&b, f->hash);
    put_u32(&b, f->lines);
    put_u32(&b, (uint32_t)f->n_defs);
    put_u32(&b, (uint32_t)f->n_imports);
    put_u32(&b, (uint32_t)f->n_chunks);
    put_u32(&b, (uint32_t)f->n_uses);
    put_u32(&b, (uint32_t)f->pool_len);
    put_u32(&b, f->ltext_len);
    put_u32(&b, f->n_ltab);
    put(&b, f->pool, f->pool_len);
    put(&b, f->defs, f->n_defs * sizeof *f->defs);
    put(&b, f->imports, f->n_imports * sizeof *f->imports);
    put(&b, f->chunks, f->n_chunks * sizeof *f->chunks);
    put(&b, f->uses, f->n_uses * sizeof *f->uses);
    put(&b, f->ltext, f->ltext_len);
    put(&b, f->ltab, (size_t)f->n_ltab * sizeof *f->ltab);
  }
  for (size_t i = 0; s && i < s->n; i++) {
    const store_entry *e = &s->e[i];
    if (!e->skip || !e->used) continue;
    put_str(&b, e->path);
    put_u64(&b, (uint64_t)e->mtime_ns);
    put_u64(&b, e->size);
    unsigned char k = (unsigned char)e->skip;
    put(&b, &k, 1);
  }
  if (!b.bad) put_u64(&b, sc_hash64(b.p, b.n, 0));
  if (b.bad) {
    free(b.p);
    return sc_error_set(err, SC_ERR_NOMEM,
                        "the index is over %u MiB or out of memory: not kept on disk",
                        STORE_MAX_BYTES >> 20);
  }
  char dir[PATH_MAX], tmp[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  sc_status st = SC_OK;
  int fd = -1;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (!slash || !make_dirs(dir) ||
      (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
    st = sc_error_set(err, SC_ERR_IO, "cannot write the index to %s: %s", path, strerror(errno));
  } else {
    bool ok = sc_file_write_all(fd, b.p, b.n);
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
      st = sc_error_set(err, SC_ERR_IO, "cannot write the index to %s: %s", path,
                        strerror(errno));
      unlink(tmp);
    } else {
      trim_dir(dir, path);
    }
  }
  free(b.p);
  return st;
}

char *ws_store_path(const char *dir, const char *root) {
  char base[PATH_MAX];
  if (dir) {
    snprintf(base, sizeof base, "%s", dir);
  } else {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') snprintf(base, sizeof base, "%s/sculpt/index", xdg);
    else if (home && home[0] == '/') snprintf(base, sizeof base, "%s/.cache/sculpt/index", home);
    else return NULL;
  }
  /* hash of the root, then its last component for people looking. */
  const char *name = strrchr(root, '/');
  name = name && name[1] ? name + 1 : "root";
  char safe[48];
  size_t k = 0;
  for (size_t i = 0; name[i] && k + 1 < sizeof safe; i++) {
    char c = name[i];
    safe[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '-' || c == '_'
                    ? c
                    : '_';
  }
  safe[k] = '\0';
  char *out = malloc(strlen(base) + 64 + k);
  if (out)
    sprintf(out, "%s/%016llx-%s.idx", base,
            (unsigned long long)sc_hash64(root, strlen(root), 0x1d), safe);
  return out;
}

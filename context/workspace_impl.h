/* workspace_impl.h — the workspace index's private layout, shared by
 * workspace.c (building and updating it), index_store.c (keeping it on
 * disk between runs) and retrieve.c (reading it). */
#ifndef SC_WORKSPACE_IMPL_H
#define SC_WORKSPACE_IMPL_H

#include "context.h"

#include <pthread.h>

#define WS_CHUNK_LINES 24 /* a chunk: this many lines ... */
#define WS_CHUNK_STEP 12  /* ... every this many (windows overlap by half) */
#define WS_NONE UINT32_MAX /* no string (an offset into a file's pool) */
#define WS_HEAD_LINES 8   /* a definition's head: at most this many lines ... */
#define WS_HEAD_BYTES 600 /* ... and bytes */

/* What a definition defines; the query's @definition.<kind> suffix. */
typedef enum ws_kind {
  WK_FUNCTION = 0,
  WK_METHOD,
  WK_CLASS, /* a class, struct or union */
  WK_TYPE,  /* a typedef, alias, enum or other named type */
  WK_INTERFACE,
  WK_FIELD,
  WK_MACRO,
  WK_CONSTANT, /* an enum member, a Go or TS constant */
  WK_VARIABLE,
  WK_MODULE,
  WK_KIND_COUNT
} ws_kind;

enum {
  WD_DECL = 1,      /* a declaration without a body (a C prototype) */
  WD_CONTAINER = 2, /* it has members (defined inside its range) */
};

/* 44 bytes; strings live in the file's pool. */
typedef struct ws_def {
  uint32_t name;  /* pool offset of the identifier */
  uint32_t scope; /* pool offset of the container's name (class, struct, receiver type), or WS_NONE */
  uint32_t head;  /* pool offset of the compact form: the signature or declaration, whole lines */
  uint32_t tail;  /* pool offset of a container's closing line ("}", "} jv;"), or WS_NONE */
  uint32_t start_byte, end_byte, start_line, end_line;
  uint32_t head_lines; /* lines in head */
  uint8_t kind;        /* ws_kind */
  uint8_t flags;       /* WD_* */
  uint16_t parent;     /* index of the container it is a member of, or UINT16_MAX */
} ws_def;

/* 40 bytes per chunk: a file of L lines has about L/12 of them. */
typedef struct ws_chunk {
  uint32_t start_line;
  uint16_t n_idents; /* the set's size, capped; tiny sets are not compared */
  uint16_t sig[SC_MINHASH_K];
} ws_chunk;

typedef struct ws_file {
  char *path; /* relative to the root */
  const char *lang;
  ws_def *defs; /* in document order */
  size_t n_defs;
  /* NUL-terminated strings the definitions and imports point into. */
  char *pool;
  size_t pool_len, pool_cap;
  uint32_t *imports; /* pool offsets: what each import names, as written (quotes stripped;
                        C system headers keep their '<') */
  size_t n_imports;
  ws_chunk *chunks;
  size_t n_chunks;
  /* Names used as members (after '.', '->', '?.') and how often: how
   * popular a member is across the workspace orders a type's members when
   * the one at the cursor is not typed yet. */
  struct ws_use {
    uint32_t name; /* pool offset */
    uint32_t count;
  } *uses;
  size_t n_uses;
  uint32_t lines;
  /* What the entry was built from, to validate it against the disk later:
   * mtime in ns, size, and sc_hash64 of the bytes. from_buffer: an editor
   * buffer (the disk may differ; never kept on disk). */
  int64_t mtime_ns;
  uint64_t size, hash;
  bool from_buffer;
  /* The line table (lines.c): the file's non-blank lines in order, each
   * NUL-terminated in ltext with its indentation (no line break), at
   * ltab[i]. Lines past WS_LINE_MAX bytes are WS_NONE (they end a run). Empty
   * when the workspace's bound on line tables was reached. */
  char *ltext;
  uint32_t ltext_len;
  uint32_t *ltab;
  uint32_t n_ltab;
  bool lines_cut; /* the bound left its table out (not kept on disk) */
} ws_file;

static inline const char *ws_str(const ws_file *f, uint32_t off) {
  return off == WS_NONE || off >= f->pool_len ? NULL : f->pool + off;
}

/* A string-keyed hash map (open addressing, linear probing) to lists of
 * 64-bit values. Keys stay when their list empties (a name that comes back
 * reuses its slot), so there are no tombstones. */
typedef struct ws_map_entry {
  char *key; /* NULL: free slot */
  uint64_t hash;
  uint64_t *vals;
  uint32_t n, cap;
} ws_map_entry;

typedef struct ws_map {
  ws_map_entry *slots;
  size_t cap, used; /* cap is a power of two */
} ws_map;

typedef struct ws_store ws_store;

/* ---- the line table (lines.c) ---------------------------------------------------
 * Which lines follow which across the workspace, for drafts (draft.c): the
 * stripped text of a non-blank line, hashed, maps to the places (file id,
 * line-table index) of the lines that follow it. Each key keeps its first
 * WS_LINE_PER_KEY places (a generated file repeating one line a million
 * times costs one short list), and the tables' memory, the files' texts
 * included, is bounded by max_line_bytes: past it files get no table and
 * the index says it is partial for drafts (line_partial). */
#define WS_LINE_MAX 400     /* longer lines (minified, generated) are not kept */
#define WS_LINE_PER_KEY 64  /* places kept per previous line */

typedef struct ws_lkey {
  uint64_t key;    /* 0: free slot */
  uint64_t *vals;  /* file id << 32 | line-table index of the following line */
  uint32_t n, cap;
} ws_lkey;

typedef struct ws_lines {
  ws_lkey *slots;
  size_t cap, used; /* cap a power of two */
  size_t bytes;     /* the tables' memory: slots, places and the files' line tables */
  size_t max_bytes; /* the bound: past it no slot or place is added */
} ws_lines;

/* The key of a line: the hash of its text without leading and trailing
 * blanks; 0 for a blank line (never a key). */
uint64_t ws_line_key(const char *s, size_t n);
/* Builds f's line table from text when it fits in room bytes; false when
 * it did not (or memory ran out): the table is then empty. */
bool ws_lines_build(ws_file *f, const char *text, size_t len, size_t room);
/* A file's line-table bytes (what the bound counts for it). */
size_t ws_lines_file_bytes(const ws_file *f);
/* Under the write lock: adds (removes) file id's lines to (from) the table. */
void ws_lines_insert(ws_lines *t, uint32_t id, const ws_file *f);
void ws_lines_remove(ws_lines *t, uint32_t id, const ws_file *f);
/* Under a read lock: the places of the lines that follow a line whose key
 * is key; NULL (and *n 0) for none. Borrowed until the next write. */
const uint64_t *ws_lines_next(const ws_lines *t, uint64_t key, uint32_t *n);
void ws_lines_free(ws_lines *t);

struct sc_workspace {
  char *root; /* absolute, resolved */
  size_t max_files, max_bytes, max_chunks;
  /* Files by id; a removed file leaves a NULL slot, reused by the next new
   * one, so ids in the maps stay valid. */
  ws_file **files;
  size_t n_slots, cap_slots, n_live;
  ws_map by_path;  /* path -> file id */
  ws_map by_name;  /* definition name -> (file id << 32 | definition index) */
  ws_map by_scope; /* container name -> its members, same values */
  ws_map uses;     /* member name -> {uses across the workspace} (one value) */
  ws_lines lines;  /* previous line -> the lines after it (drafts) */
  size_t max_line_bytes; /* the bound on lines.bytes */
  bool line_partial;     /* a file got no line table: the bound was reached */
  size_t n_chunks; /* over all files, against max_chunks */
  sc_workspace_stats stats;
  /* The on-disk index, while sc_workspace_index runs (NULL otherwise): the
   * entries of the last run, taken by build_file when still valid. */
  ws_store *store;
  char *cache_path; /* where the index is kept, or NULL (no cache) */
  /* Readers: prompt builds. Writers: per-file updates and removals. */
  pthread_rwlock_t lock;
};

/* The map's list for key, or NULL. */
const ws_map_entry *ws_map_get(const ws_map *m, const char *key);

/* Reads a regular file of at most max bytes (NUL-terminated; owned by the
 * caller). NULL when unreadable or too big (*too_big then). */
char *ws_read_all(const char *path, size_t max, size_t *len, bool *too_big);

/* Definitions and imports of a parsed file (tree's text is text, len
 * bytes), appended to f (whose lang is set). */
void ws_index_tree(ws_file *f, const sc_syntax_tree *tree, const char *text, size_t len);
/* How often name is used as a member across the workspace (under the
 * read lock). */
uint32_t ws_member_uses(const sc_workspace *ws, const char *name);

/* The name of a ws_kind ("function", "field", ...; static). */
const char *ws_kind_name(int kind);
/* Appends s[0, n) and a NUL to f's pool; the offset, or WS_NONE when out
 * of memory. */
uint32_t ws_pool_add(ws_file *f, const char *s, size_t n);
void ws_file_clear(ws_file *f);
void ws_file_free(ws_file *f);

bool ws_is_keyword(const char *w, size_t n);

/* ---- the on-disk index (index_store.c) ----------------------------------------
 * One file per work tree in the user's cache directory. Loading it is
 * untrusted input: every count, offset and length is checked, a checksum
 * covers the whole, and anything that does not hold rejects the file (one
 * log line; the index is then built from scratch). */

/* The cache file for root under dir ($XDG_CACHE_HOME/sculpt/index, else
 * ~/.cache/sculpt/index, when dir is NULL); malloc'd, or NULL when there
 * is no cache directory. */
char *ws_store_path(const char *dir, const char *root);
/* Reads path; NULL when absent or rejected (err says why, for the log). */
ws_store *ws_store_load(const char *path, const char *root, sc_error *err);
void ws_store_free(ws_store *s);
/* The entry kept for rel, if its file still has this mtime and size (or,
 * when only the mtime moved or the mtime is too recent to trust, the same
 * hash of text, which the caller then passes; text NULL: not read yet).
 * The entry moves to the caller (ws_file_free); NULL when there is none or
 * it is stale. *need_text: compare the hash first (read the file, call again). */
ws_file *ws_store_take(ws_store *s, const char *rel, int64_t mtime_ns, uint64_t size,
                       const char *text, size_t len, bool *need_text);
/* A skipped file (binary, generated) remembered with its mtime and size;
 * returns the skip kind, or 0 when unknown or changed. */
int ws_store_skipped(ws_store *s, const char *rel, int64_t mtime_ns, uint64_t size);
void ws_store_note_skip(ws_store *s, const char *rel, int64_t mtime_ns, uint64_t size, int why);
/* Writes the live files of ws (and the skips noted in s, may be NULL) to
 * path atomically (a temporary file renamed over it), then trims the cache
 * directory to its bounds. Entries from editor buffers are left out. */
sc_status ws_store_save(const sc_workspace *ws, const ws_store *s, const char *path,
                        sc_error *err);
/* How many entries the load reused (for the stats); 0 for NULL. */
size_t ws_store_reused(const ws_store *s);
/* Whether writing the index back would change nothing: every kept entry
 * was reused and n_live files are indexed (false for NULL). */
bool ws_store_unchanged(const ws_store *s, size_t n_live);

#endif

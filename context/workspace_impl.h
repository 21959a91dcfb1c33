/* workspace_impl.h — the workspace index's private layout, shared by
 * workspace.c (building and updating it) and retrieve.c (reading it). */
#ifndef SC_WORKSPACE_IMPL_H
#define SC_WORKSPACE_IMPL_H

#include "context.h"

#include <pthread.h>

#define WS_CHUNK_LINES 24 /* a chunk: this many lines ... */
#define WS_CHUNK_STEP 12  /* ... every this many (windows overlap by half) */

typedef struct ws_def {
  char *name;
  uint32_t start_byte, end_byte, start_line, end_line;
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
  ws_def *defs;
  size_t n_defs;
  char **imports; /* the last path component of each import, without extension */
  size_t n_imports;
  ws_chunk *chunks;
  size_t n_chunks;
  uint32_t lines;
} ws_file;

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

struct sc_workspace {
  char *root; /* absolute, resolved */
  size_t max_files, max_bytes, max_chunks;
  /* Files by id; a removed file leaves a NULL slot, reused by the next new
   * one, so ids in the maps stay valid. */
  ws_file **files;
  size_t n_slots, cap_slots, n_live;
  ws_map by_path; /* path -> file id */
  ws_map by_name; /* definition name -> (file id << 32 | definition index) */
  size_t n_chunks; /* over all files, against max_chunks */
  sc_workspace_stats stats;
  /* Readers: prompt builds. Writers: per-file updates and removals. */
  pthread_rwlock_t lock;
};

/* The map's list for key, or NULL. */
const ws_map_entry *ws_map_get(const ws_map *m, const char *key);

/* Reads a regular file of at most max bytes (NUL-terminated; owned by the
 * caller). NULL when unreadable or too big (*too_big then). */
char *ws_read_all(const char *path, size_t max, size_t *len, bool *too_big);

/* The module an import names, as a file stem (owned by the caller). */
char *ws_stem_of(const char *s, size_t n);

/* Definitions and imports of a parsed file (tree's text is text). */
void ws_index_tree(ws_file *f, const sc_syntax_tree *tree, const char *text);
void ws_file_clear(ws_file *f);

bool ws_is_keyword(const char *w, size_t n);

#endif

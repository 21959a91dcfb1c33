/* query_impl.h — the embedded query sources (generated table) shared between
 * the generated data file and query.c. Private to context/. */
#ifndef SC_QUERY_IMPL_H
#define SC_QUERY_IMPL_H

#include <stddef.h>

typedef struct sc_query_blob {
  const char *lang;  /* sculpt language name, e.g. "cpp" */
  const char *kind;  /* "definitions", "identifiers", "imports", "blocks" */
  const char *text;  /* NUL-terminated .scm source */
  size_t len;        /* bytes, without the NUL */
} sc_query_blob;

extern const sc_query_blob sc_query_blobs[];
extern const size_t sc_query_blob_count;

#endif

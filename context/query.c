/* query.c — sculpt's embedded tree-sitter queries, compiled once per process. */
#define _POSIX_C_SOURCE 200809L
#include "context.h"
#include "query_impl.h"

#include <pthread.h>
#include <string.h>

static const char *const k_kind_names[SC_QUERY_KIND_COUNT] = {
    "definitions", "identifiers", "imports", "blocks"};

/* 11 languages x 4 kinds today; the check in sc_query_get keeps this honest. */
#define SC_QUERY_CACHE_MAX 64
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static TSQuery *g_cache[SC_QUERY_CACHE_MAX]; /* by blob index; never freed */

const char *sc_query_kind_name(sc_query_kind kind) {
  return (unsigned)kind < SC_QUERY_KIND_COUNT ? k_kind_names[kind] : "?";
}

static long find_blob(const char *lang, sc_query_kind kind) {
  if (!lang || (unsigned)kind >= SC_QUERY_KIND_COUNT) return -1;
  for (size_t i = 0; i < sc_query_blob_count; i++)
    if (strcmp(sc_query_blobs[i].lang, lang) == 0 &&
        strcmp(sc_query_blobs[i].kind, k_kind_names[kind]) == 0)
      return (long)i;
  return -1;
}

const char *sc_query_source(const char *lang, sc_query_kind kind, size_t *len) {
  long i = find_blob(lang, kind);
  if (i < 0) return NULL;
  if (len) *len = sc_query_blobs[i].len;
  return sc_query_blobs[i].text;
}

static const char *query_error_name(TSQueryError e) {
  switch (e) {
  case TSQueryErrorNone: return "none";
  case TSQueryErrorSyntax: return "syntax";
  case TSQueryErrorNodeType: return "unknown node type";
  case TSQueryErrorField: return "unknown field";
  case TSQueryErrorCapture: return "unknown capture";
  case TSQueryErrorStructure: return "impossible structure";
  case TSQueryErrorLanguage: return "language";
  }
  return "unknown";
}

sc_status sc_query_get(const char *lang, sc_query_kind kind, const TSQuery **out,
                       sc_error *err) {
  SC_CHECK(out, err, SC_ERR_INVALID, "sc_query_get: out is NULL");
  *out = NULL;
  SC_CHECK(sc_query_blob_count <= SC_QUERY_CACHE_MAX, err, SC_ERR_INTERNAL,
           "query cache too small for %zu queries", sc_query_blob_count);
  long i = find_blob(lang, kind);
  SC_CHECK(i >= 0, err, SC_ERR_UNSUPPORTED, "no %s query for language '%s'",
           sc_query_kind_name(kind), lang ? lang : "(null)");
  const TSLanguage *ts_lang = sc_context_ts_language(lang);
  SC_CHECK(ts_lang, err, SC_ERR_UNSUPPORTED, "no grammar for language '%s'", lang);

  pthread_mutex_lock(&g_lock);
  TSQuery *q = g_cache[i];
  uint32_t offset = 0;
  TSQueryError qerr = TSQueryErrorNone;
  if (!q) {
    const sc_query_blob *b = &sc_query_blobs[i];
    q = ts_query_new(ts_lang, b->text, (uint32_t)b->len, &offset, &qerr);
    g_cache[i] = q;
  }
  pthread_mutex_unlock(&g_lock);
  if (!q) {
    /* Show where: the line of the .scm file around the offset. */
    const sc_query_blob *b = &sc_query_blobs[i];
    size_t line = 1, ls = 0;
    for (size_t k = 0; k < offset && k < b->len; k++)
      if (b->text[k] == '\n') line++, ls = k + 1;
    size_t le = ls;
    while (le < b->len && b->text[le] != '\n') le++;
    return sc_error_set(err, SC_ERR_FORMAT,
                        "grammars/queries/%s/%s.scm: %s error at byte %u (line %zu: %.*s)",
                        lang, b->kind, query_error_name(qerr), offset, line,
                        (int)(le - ls), b->text + ls);
  }
  *out = q;
  return SC_OK;
}

/* cache.c — the suggestion cache and typing-through: the last shown
 * suggestions (shaped text, keyed by document, the text before them and the
 * text after the cursor), so that typing the start of one is answered from
 * here with no model call, and typing that leaves one re-conditions the
 * model on what was typed, with a canvas the size of what remained. Cleared
 * when the settings, backend or model change.
 *
 * Threads: the loop's only. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdlib.h>
#include <string.h>

/* Suggestions made under other settings or another model are not reused. */
void sc_cpl__cache_clear(sc_completer *c) {
  c->cache_clock++;
  c->cache_epoch++;
  for (int i = 0; i < CACHE_ENTRIES; i++) {
    free(c->cache[i].middle);
    c->cache[i] = (cache_entry){0};
  }
}

/* A shown suggestion the user is typing into. With *diverged false, what
 * was typed is the start of the suggestion (serve the rest). With *diverged
 * true, the typing left it: the typed bytes become part of the prefix, and
 * the canvas is sized to what remained of the suggestion, so only the rest
 * is denoised again, conditioned on what the user actually typed. */
cache_entry *sc_cpl__cache_find(sc_completer *c, uint64_t uri_hash, uint64_t suffix_hash,
                                const char *text, size_t offset, size_t *typed, bool *diverged) {
  for (int i = 0; i < CACHE_ENTRIES; i++) {
    cache_entry *e = &c->cache[i];
    if (!e->used || e->uri_hash != uri_hash || e->suffix_hash != suffix_hash) continue;
    if (offset < e->prefix_len || offset - e->prefix_len >= e->middle_len) continue;
    size_t t = offset - e->prefix_len;
    if (sc_hash64_long(text, e->prefix_len, 2) != e->prefix_hash) continue;
    *typed = t;
    *diverged = memcmp(text + e->prefix_len, e->middle, t) != 0;
    e->stamp = ++c->cache_clock;
    return e;
  }
  return NULL;
}

void sc_cpl__cache_put(sc_completer *c, uint64_t uri_hash, uint64_t prefix_hash,
                       size_t prefix_len, uint64_t suffix_hash, const char *middle,
                       size_t middle_len) {
  if (middle_len == 0) return;
  cache_entry *slot = &c->cache[0];
  for (int i = 0; i < CACHE_ENTRIES; i++) {
    if (!c->cache[i].used) {
      slot = &c->cache[i];
      break;
    }
    if (c->cache[i].stamp < slot->stamp) slot = &c->cache[i];
  }
  char *copy = malloc(middle_len + 1);
  if (!copy) return;
  memcpy(copy, middle, middle_len);
  copy[middle_len] = '\0';
  free(slot->middle);
  *slot = (cache_entry){true, uri_hash, prefix_hash, suffix_hash, prefix_len, copy,
                        middle_len, ++c->cache_clock};
}

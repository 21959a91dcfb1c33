/* sync.c — text synchronisation: didOpen, didChange (incremental and full,
 * every change's shape validated before any is applied), didClose, didSave
 * and workspace/didChangeWatchedFiles. An edit cancels its document's jobs;
 * the feature hears of opened documents, changes, saves and files changed
 * on disk. A change whose range cannot apply leaves the document unsynced
 * (logged once): the incremental changes after it are not applied, since
 * they would edit the wrong text, until a full-text change brings it back
 * (a reopen does too). */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <stdlib.h>
#include <string.h>

void sc_server__handle_did_open(sc_lsp_req *r) {
  json_t *td = json_object_get(r->params, "textDocument");
  const char *uri = json_string_value(json_object_get(td, "uri"));
  json_t *text = json_object_get(td, "text");
  json_t *version = json_object_get(td, "version");
  const char *lang = json_string_value(json_object_get(td, "languageId"));
  if (!uri || !json_is_string(text) || !json_is_integer(version)) {
    sc_lsp__bad_params(r, "textDocument needs uri, version (integer) and text");
    return;
  }
  if (sc_document_store_get(r->s->docs, uri))
    SC_LOG_WARN("didOpen: %s was already open; replacing it", uri);
  sc_error err = {0};
  /* A long message's text was made off the loop with its parse. */
  sc_document_text made;
  sc_status st;
  if (sc_server__take_made_text(r->s, json_string_value(text), &made)) {
    st = sc_document_store_open_made(r->s->docs, uri, lang, json_integer_value(version), &made,
                                     &err);
    sc_document_text_free(&made);
  } else {
    st = sc_document_store_open(r->s->docs, uri, lang, json_integer_value(version),
                                json_string_value(text), json_string_length(text), &err);
  }
  sc_server__cancel_jobs_for_uri(r->s, uri);
  if (st != SC_OK) {
    SC_LOG_ERROR("didOpen: %s", err.msg);
    return;
  }
  sc_document *d = sc_document_store_get(r->s->docs, uri);
  if (d && r->s->feature->on_open) r->s->feature->on_open(r->s, d);
}

/* One parsed content change. */
typedef struct change {
  bool full;
  uint32_t sl, sc, el, ec;
  const char *text;
  size_t len;
} change;

/* From this many changes in one didChange, a batch in reverse order is
 * applied in one pass (sc_document_apply_reversed). */
static const size_t k_batch_changes = 16;
/* A text shorter than this is quicker one change at a time than cut into
 * blocks and joined again. */
static const size_t k_blocks_bytes = (size_t)64 << 10;

void sc_server__handle_did_change(sc_lsp_req *r) {
  sc_lsp_server *s = r->s;
  json_t *td = json_object_get(r->params, "textDocument");
  const char *uri = json_string_value(json_object_get(td, "uri"));
  json_t *version = json_object_get(td, "version");
  json_t *changes = json_object_get(r->params, "contentChanges");
  if (!uri || !json_is_array(changes)) {
    sc_lsp__bad_params(r, "needs textDocument.uri and a contentChanges array");
    return;
  }
  sc_document *d = sc_document_store_get(s->docs, uri);
  if (!d) {
    SC_LOG_WARN("didChange: document not open: %s", uri);
    return;
  }
  /* Validate every change before applying any: a half-applied batch would
   * leave us out of sync with the client for good. */
  size_t n = json_array_size(changes);
  change *cs = calloc(n ? n : 1, sizeof *cs);
  if (!cs) {
    SC_LOG_ERROR("didChange: out of memory");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(changes, i);
    json_t *text = json_object_get(c, "text");
    if (!json_is_string(text)) {
      free(cs);
      sc_lsp__bad_params(r, "contentChanges[%zu].text must be a string", i);
      return;
    }
    cs[i].text = json_string_value(text);
    cs[i].len = json_string_length(text);
    json_t *range = json_object_get(c, "range");
    if (!range) {
      cs[i].full = true;
      continue;
    }
    if (!sc_lsp__get_position(json_object_get(range, "start"), &cs[i].sl, &cs[i].sc) ||
        !sc_lsp__get_position(json_object_get(range, "end"), &cs[i].el, &cs[i].ec)) {
      free(cs);
      sc_lsp__bad_params(r, "contentChanges[%zu].range needs start and end positions", i);
      return;
    }
  }
  if (json_is_integer(version)) {
    json_int_t v = json_integer_value(version);
    /* Neovim 0.7 sends a change that changes nothing under the version it
     * last sent (an empty range, no text): harmless, so not a warning. */
    bool nothing = true;
    for (size_t i = 0; i < n && nothing; i++)
      nothing = !cs[i].full && cs[i].len == 0 && cs[i].sl == cs[i].el && cs[i].sc == cs[i].ec;
    if (v == d->version && nothing)
      SC_LOG_DEBUG("didChange: %s: an empty change under the same version %lld", uri,
                   (long long)v);
    else if (v <= d->version)
      SC_LOG_WARN("didChange: %s version %lld does not follow %lld", uri, (long long)v,
                  (long long)d->version);
    d->version = v;
  }
  /* Many changes in reverse document order (VS Code's replace-all or
   * format), or in the order made (eglot's, Neovim's), go in one pass; one
   * by one, each moved the text after it. */
  size_t done = 0;
  bool all_ranges = n >= k_batch_changes && !d->unsynced;
  for (size_t i = 0; i < n && all_ranges; i++) all_ranges = !cs[i].full;
  sc_text_change *tc = all_ranges ? malloc(n * sizeof *tc) : NULL;
  if (tc) {
    for (size_t i = 0; i < n; i++)
      tc[i] = (sc_text_change){cs[i].sl, cs[i].sc, cs[i].el, cs[i].ec, cs[i].text, cs[i].len};
    sc_error err = {0};
    sc_status st = sc_document_apply_reversed(d, tc, n, s->enc, &err);
    if (st == SC_ERR_UNSUPPORTED) st = sc_document_apply_in_order(d, tc, n, s->enc, &err);
    /* In no order: in blocks, where one by one would move much of a long
     * text for each change. */
    if (st == SC_ERR_UNSUPPORTED && d->len >= k_blocks_bytes)
      st = sc_document_apply_any_order(d, tc, n, s->enc, &err);
    if (st == SC_OK) done = n;
    free(tc);
  }
  for (size_t i = done; i < n; i++) {
    sc_error err = {0};
    bool clamped = false;
    if (d->unsynced && !cs[i].full) continue; /* it would edit the wrong text */
    sc_status st = cs[i].full
                       ? sc_document_set_text(d, cs[i].text, cs[i].len, &err)
                       : sc_document_apply_edit(d, cs[i].sl, cs[i].sc, cs[i].el, cs[i].ec,
                                                s->enc, cs[i].text, cs[i].len, &clamped,
                                                &err);
    if (st == SC_OK && cs[i].full && d->unsynced) {
      d->unsynced = false;
      SC_LOG_INFO("didChange: %s: in sync again (the client sent its full text)", uri);
    } else if (st != SC_OK) {
      /* Once out of step with the client, every later incremental change
       * would land in the wrong place: stop applying them. */
      d->unsynced = true;
      SC_LOG_ERROR("didChange: %s: %s; the document is out of sync: its changes are not "
                   "applied and nothing is offered in it until the client sends its full "
                   "text (close and reopen it)",
                   uri, err.msg);
    }
    if (clamped)
      SC_LOG_WARN("didChange: %s: range %u:%u-%u:%u is past the end of a line; clamped", uri,
                  cs[i].sl, cs[i].sc, cs[i].el, cs[i].ec);
  }
  free(cs);
  sc_server__cancel_jobs_for_uri(s, uri);
  if (!d->unsynced) s->feature->on_change(s, d);
}

void sc_server__handle_did_close(sc_lsp_req *r) {
  const char *uri = sc_server__get_uri(r);
  if (!uri) return;
  sc_server__cancel_jobs_for_uri(r->s, uri);
  if (!sc_document_store_close(r->s->docs, uri))
    SC_LOG_WARN("didClose: document not open: %s", uri);
}

void sc_server__handle_did_save(sc_lsp_req *r) {
  const char *uri = sc_server__get_uri(r);
  if (!uri) return;
  SC_LOG_DEBUG("didSave: %s", uri);
  /* Incremental reparses can, rarely, recover from an error differently
   * than a fresh parse (tree-sitter #1645, #4001); a save is a good moment
   * to start afresh. Lazily: the next request that needs the tree parses. */
  sc_document *d = sc_document_store_get(r->s->docs, uri);
  if (d && d->tree) sc_document_drop_syntax(d);
  r->s->feature->on_save(r->s, uri);
}

void sc_server__handle_did_change_watched_files(sc_lsp_req *r) {
  /* Files changed on disk: each one's index entry is updated or removed. */
  json_t *changes = json_object_get(r->params, "changes");
  if (!json_is_array(changes)) {
    sc_lsp__bad_params(r, "changes must be an array");
    return;
  }
  size_t i;
  json_t *ch;
  json_array_foreach(changes, i, ch) {
    const char *uri = json_string_value(json_object_get(ch, "uri"));
    json_int_t type = json_integer_value(json_object_get(ch, "type"));
    if (!uri || type < 1 || type > 3) {
      SC_LOG_WARN("didChangeWatchedFiles: changes[%zu] needs a uri and a type 1-3", i);
      continue;
    }
    r->s->feature->on_file_changed(r->s, uri, (int)type);
  }
}

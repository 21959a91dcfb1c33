/* shape.c — from a model's text to the client's answer, for the local
 * engine's text and the remote backend's alike: the cut at the end of the
 * syntactic unit the plan asked for, the trim of what the suffix already
 * has, the parse check and the one repair of a candidate that breaks the
 * parse, then the items: InlineCompletionList or CompletionList.
 *
 * Threads: any; it reads and writes only the request's complete_arg. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each answer carries data (the timings, and why nothing was suggested):
 * InlineCompletionList.data and CompletionList.data (fields of ours beside
 * the protocol's), and each CompletionItem.data. */
json_t *sc_cpl__build_items(const complete_arg *a, const char *text, size_t len, json_t *data) {
  json_t *range = json_pack("{s:O, s:O}", "start", a->position, "end", a->position);
  json_t *t = json_stringn(text, len);
  if (!t) t = json_string("");
  if (a->kind == RK_INLINE) {
    json_t *cmd = json_pack("{s:s, s:s, s:[{s:I}]}", "title", "sculpt: accepted", "command",
                            "sculpt.accept", "arguments", "length", (json_int_t)len);
    json_t *items = json_array();
    if (len > 0)
      json_array_append_new(items, json_pack("{s:o, s:o, s:o}", "insertText", t, "range",
                                             range, "command", cmd));
    else
      json_decref(t), json_decref(range), json_decref(cmd);
    return json_pack("{s:o, s:o}", "items", items, "data", data);
  }
  /* CompletionItem: a label recognisable in a menu, the whole text in the
   * documentation, and a textEdit that inserts it at the cursor. */
  json_t *items = json_array();
  if (len > 0) {
    size_t a0 = 0;
    while (a0 < len && (text[a0] == ' ' || text[a0] == '\t' || text[a0] == '\n')) a0++;
    const char *nl = memchr(text + a0, '\n', len - a0);
    size_t l1 = nl ? (size_t)(nl - (text + a0)) : len - a0;
    if (l1 > 60) l1 = 60;
    char label[96];
    snprintf(label, sizeof label, "%.*s%s", (int)l1, text + a0, nl || l1 == 60 ? " …" : "");
    char *doc = malloc(len + 64);
    if (doc) snprintf(doc, len + 64, "```%s\n%.*s\n```", a->language, (int)len, text);
    json_t *item = json_pack(
        "{s:s, s:i, s:i, s:{s:o, s:o}, s:s, s:{s:s, s:s}, s:s, s:s, s:O}", "label", label,
        "kind", 1, "insertTextFormat", 1, "textEdit", "range", range, "newText", t,
        "filterText", label, "documentation", "kind", "markdown", "value", doc ? doc : "",
        "detail", "sculpt", "sortText", "0", "data", data);
    free(doc);
    if (item) json_array_append_new(items, item);
  } else {
    json_decref(range);
    json_decref(t);
  }
  /* The timings go on the list too (beside the items, as on the inline
   * list), so that an answer with no item still says what happened. */
  return json_pack("{s:b, s:o, s:o}", "isIncomplete", 1, "items", items, "data", data);
}

/* Shaping, for the local engine's and the remote backend's text alike: the
 * syntactic unit the plan asked for, nothing the suffix already has, and no
 * new syntax error once inserted. A candidate that fails the check is
 * repaired once when fill is given (the model rewrites the broken lines,
 * the rest fixed around them), else, or when the repair fails too,
 * discarded. With keep_failed, a failing candidate (cut) and its check are
 * kept in a->r_cand and a->r_chk, for a caller that repairs
 * asynchronously. Sets a->middle; returns its length. */
size_t sc_cpl__shape_middle(complete_arg *a, const char *raw, size_t len, const char **discarded,
                            sc_repair_fill_fn fill, void *user, bool keep_failed) {
  if (a->tree) len = sc_completion_cut(a->tree, &a->plan, a->cursor, raw, len);
  len = sc_completion_trim(raw, len, a->suffix, a->suffix_len, a->single_line);
  char *fixed = NULL;
  if (a->tree && len > 0) {
    sc_completion_check chk;
    sc_error cerr = {0};
    if (sc_completion_check_insert(a->tree, a->cursor, raw, len, &chk, &cerr) == SC_OK &&
        !chk.ok) {
      if (keep_failed && (a->r_cand = sc_memdup(raw, len))) {
        a->r_cand_len = len;
        a->r_chk = chk;
      }
      sc_completion_check after;
      size_t fixed_len = 0;
      if (fill && a->set.repair &&
          sc_completion_repair(a->tree, a->cursor, raw, len, &chk, fill, user, &fixed,
                               &fixed_len, &after, &cerr) == SC_OK &&
          after.ok) {
        a->repaired = true;
        raw = fixed;
        len = fixed_len;
      } else {
        *discarded = fill && a->set.repair ? "new syntax errors, not repaired"
                                           : "new syntax errors";
        SC_LOG_DEBUG("completion discarded: %zu new syntax errors", chk.new_errors);
        len = 0;
      }
    }
  }
  free(a->middle);
  a->middle = malloc(len + 1);
  a->middle_len = 0;
  if (a->middle) {
    memcpy(a->middle, raw, len);
    a->middle[len] = '\0';
    a->middle_len = len;
  }
  free(fixed);
  return len;
}

/* check.c — the checks a candidate must pass before it may replace its
 * site in a file or be offered in the editor. */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */
#include "edit_impl.h"

#include <stdlib.h>
#include <string.h>

/* No ERROR or MISSING node within [a, b] of tree. */
static bool clean_around(const sc_syntax_tree *tree, size_t a, size_t b) {
  sc_syntax_error *errs = NULL;
  size_t n = 0;
  if (sc_syntax_tree_errors(tree, &errs, &n, NULL) != SC_OK) return false;
  bool clean = true;
  for (size_t i = 0; i < n; i++)
    if (errs[i].start_byte <= b && errs[i].end_byte >= a) clean = false;
  free(errs);
  return clean;
}

sc_status sc_edit_check(const sc_edit_doc *doc, const sc_edit_site *site, const char *cand,
                        size_t len, sc_edit_verdict *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  size_t a = site->start, b = site->end, before = sc_syntax_tree_error_count(doc->tree);
  out->errors_before = before;
  sc_syntax_tree *copy = NULL;
  sc_completion_check chk;
  sc_status st = sc_syntax_tree_copy(doc->tree, &copy, err);
  if (st == SC_OK) st = sc_syntax_tree_edit(copy, a, b, "", 0, err);
  if (st == SC_OK) st = sc_completion_check_insert(copy, a, cand, len, &chk, err);
  if (st != SC_OK) {
    sc_syntax_tree_free(copy);
    out->why = "parse check failed";
    return st;
  }
  out->errors_after = chk.errors_after;
  /* A fix must also lower the error count when the file had errors. */
  bool ok = chk.new_errors == 0 &&
            (site->kind != SC_EDIT_DIAGNOSTIC || before == 0 || chk.errors_after < before);
  /* ... and leave no error at or right after the new text (a MISSING `;`
   * there would count as the old error moved). */
  if (ok && site->kind == SC_EDIT_DIAGNOSTIC)
    ok = sc_syntax_tree_edit(copy, a, a, cand, len, NULL) == SC_OK &&
         clean_around(copy, a, a + len);
  sc_syntax_tree_free(copy);
  out->ok = ok;
  out->why = ok ? NULL : "does not parse";
  return SC_OK;
}

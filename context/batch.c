/* batch.c — syntax helpers shared by the editor's quick fixes and headless
 * batch mode: the statement around a diagnostic. */
#include "context.h"

#include <string.h>

/* Statement-like node types across the grammars: *_statement,
 * *_declaration, and ERROR (a broken statement is often only an ERROR). */
static bool is_statement(const char *type) {
  size_t n = strlen(type);
  return (n >= 9 && strcmp(type + n - 9, "statement") == 0) ||
         (n >= 11 && strcmp(type + n - 11, "declaration") == 0) || strcmp(type, "ERROR") == 0;
}

void sc_statement_span(const sc_syntax_tree *tree, size_t offset, size_t *start, size_t *end) {
  size_t len = 0;
  const char *text = sc_syntax_tree_text(tree, &len);
  if (offset > len) offset = len;
  size_t ls = offset, le = offset;
  while (ls > 0 && text[ls - 1] != '\n') ls--;
  while (le < len && text[le] != '\n') le++;
  /* The line without its indentation, unless a small statement covers it. */
  while (ls < le && (text[ls] == ' ' || text[ls] == '\t')) ls++;
  *start = ls;
  *end = le;
  TSNode *up;
  size_t k = sc_syntax_ancestry_at(tree, offset, offset, &up);
  for (size_t u = 0; u < k; u++) {
    TSNode n = up[u];
    if (!is_statement(ts_node_type(n))) continue;
    size_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    int lines = 0;
    for (size_t i = a; i < b && i < len; i++) lines += text[i] == '\n';
    /* Only the nearest statement-like node is considered: a larger one
     * (a whole function) is too much to re-infill for one diagnostic. */
    if (lines <= 4 && a <= offset && b >= offset && b <= len) {
      *start = a;
      *end = b;
    }
    break;
  }
  free(up);
  /* A trailing newline separates statements; it is not part of one. */
  while (*end > *start && (text[*end - 1] == '\n' || text[*end - 1] == '\r')) (*end)--;
}

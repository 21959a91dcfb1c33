/* fuzz_syntax.c — the syntax layer under fuzzing (issue 38): parse, edit,
 * reparse, query, sculpt's own walks, free, in every language compiled in.
 * A document comes from whoever wrote it, and a generated one can nest
 * brackets, blocks, strings or comments tens of thousands of levels deep
 * (Debian's tree-sitter 0.20.7 corrupted its heap freeing such a tree), so
 * the input is a program for a nesting-aware generator rather than the
 * text itself: a mutation of two bytes turns 10 levels into 40,000.
 *
 * Input: byte 0 picks the language, byte 1 the cursor, then ops:
 *   op & 7 == 0..3  literal: the next (op >> 3) + 1 bytes as they are
 *   op & 7 == 4     nest: opener = next byte, count = the byte after (up to
 *                   255), or with op & 16 the two bytes after (up to
 *                   65,535); closed (the closers after) when op & 8
 *   op & 7 == 5     indent: count (next byte) lines each one level deeper
 *                   ("if x:" or "{", by op & 8), as Python and C blocks nest
 *   op & 7 == 6     edit: at a fraction of the text (next byte), delete up
 *                   to the next byte's count, insert the next (op >> 3) + 1
 *                   bytes; applied after the first parse, one by one
 *   op & 7 == 7     repeat the text made so far (next byte % 16) times
 * The text is capped at SMALL_TEXT bytes, or MAX_TEXT once a two-byte nest
 * asked for depth: most inputs stay small and quick, and the deep ones are
 * a mutation away. (At 8 KB the repeat op filled most small texts to the
 * cap and the sanitized target ran 12 inputs a second here; at 1 KB, 19.
 * The deep inputs, a tenth of the corpus, took four fifths of the time:
 * tools/fuzz_long.sh weighs inputs by their speed, 33 a second.) After
 * each parse and edit the
 * tree's invariants are checked (its text, its error list, the ancestry of
 * the node at the cursor); after the first parse and the last reparse the
 * queries, the completion plan, the statement span and an insertion check
 * run on it too. Any crash, leak, sanitizer report
 * or broken invariant is a finding. */
#define _POSIX_C_SOURCE 200809L
#include "context.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define MAX_TEXT (128u << 10)
#define SMALL_TEXT (1u << 10)
/* A query or a parse halts after this here (the default budgets are 200 ms
 * and 2 s, and more for long texts): inputs are many, and one that
 * tree-sitter finds quadratic would spend the whole budget each time. A
 * parse past its budget is an answer (the text has no tree), not a finding. */
#define QUERY_LIMIT_NS 20000000ll
#define PARSE_LIMIT_NS 300000000ll
#define MAX_EDITS 8

static const char *const k_langs[] = {"c",  "cpp",  "python", "javascript", "typescript", "tsx",
                                      "go", "rust", "java",   "bash",       "json"};
#define N_LANGS (sizeof k_langs / sizeof k_langs[0])

/* What nests, in some language or other; any parser must survive all. */
static const struct {
  const char *open, *close;
} k_nest[] = {
    {"(", ")"},        {"[", "]"},          {"{", "}"},          {"/*", "*/"},
    {"\"", "\""},      {"'", "'"},          {"`${", "}`"},       {"$(", ")"},
    {"<", ">"},        {"f(", ")"},         {"a[", "]"},         {"#if X\n", "#endif\n"},
    {"\"\"\"", "\"\"\""}, {"r#\"", "\"#"},  {"x = (", ")\n"},    {"lambda: (", ")"},
    {"${", "}"},       {"<<EOF\n", "EOF\n"}, {"[[", "]]"},       {"f\"{", "}\""},
    {"if (x) {", "}"}, {"\\(", "\\)"},      {"(*", "*)"},        {"<!--", "-->"},
};
#define N_NEST (sizeof k_nest / sizeof k_nest[0])

typedef struct {
  char *s;
  size_t n;
} buf;

static size_t g_cap; /* SMALL_TEXT or MAX_TEXT, for the input at hand */
/* The text made and the text edited: kept between inputs (a 128 KB malloc
 * each time cost the sanitizer's page faults, a sixth of the run). */
static char g_made[MAX_TEXT], g_edited[MAX_TEXT + 256 * MAX_EDITS];

static void put(buf *b, const char *p, size_t n) {
  if (n > g_cap - b->n) n = g_cap - b->n;
  memcpy(b->s + b->n, p, n);
  b->n += n;
}

static void put_str(buf *b, const char *p) { put(b, p, strlen(p)); }

typedef struct {
  size_t at_frac, del;
  const char *ins;
  size_t ins_len;
} edit;

static void check_tree(const sc_syntax_tree *t, const char *want, size_t want_len,
                       size_t cursor, bool full) {
  size_t len = 0;
  const char *text = sc_syntax_tree_text(t, &len);
  if (len != want_len || memcmp(text, want, len) != 0) __builtin_trap();
  /* Its errors: counted and listed alike, each inside the text. */
  sc_syntax_error *errs = NULL;
  size_t n = 0;
  if (sc_syntax_tree_errors(t, &errs, &n, NULL) == SC_OK) {
    if (n != sc_syntax_tree_error_count(t)) __builtin_trap();
    for (size_t i = 0; i < n; i++)
      if (errs[i].start_byte > errs[i].end_byte || errs[i].end_byte > len) __builtin_trap();
    free(errs);
  }
  if (cursor > len) cursor = len;
  /* The ancestry of the node at the cursor: the node first, then ever
   * wider nodes up to the root. */
  TSNode node = ts_node_descendant_for_byte_range(sc_syntax_tree_root(t), (uint32_t)cursor,
                                                  (uint32_t)cursor);
  TSNode *up = NULL;
  size_t k = sc_syntax_ancestry(node, &up);
  if (k == 0 || !ts_node_eq(up[0], node)) __builtin_trap();
  for (size_t i = 1; i < k; i++)
    if (ts_node_start_byte(up[i]) > ts_node_start_byte(up[i - 1]) ||
        ts_node_end_byte(up[i]) < ts_node_end_byte(up[i - 1]))
      __builtin_trap();
  if (k < SC_SYNTAX_ANCESTRY_MAX && !ts_node_eq(up[k - 1], sc_syntax_tree_root(t)))
    __builtin_trap();
  free(up);
  if (!full) return;
  /* The queries, under their budget. */
  for (int q = 0; q < SC_QUERY_KIND_COUNT; q++) {
    const TSQuery *query = NULL;
    if (sc_query_get(sc_syntax_tree_language(t), (sc_query_kind)q, &query, NULL) != SC_OK)
      continue;
    TSQueryCursor *qc = sc_syntax_query_cursor_new();
    sc_syntax_budget budget = {.limit_ns = QUERY_LIMIT_NS};
    sc_syntax_query_exec(qc, query, sc_syntax_tree_root(t), &budget);
    TSQueryMatch m;
    while (ts_query_cursor_next_match(qc, &m))
      for (uint16_t c = 0; c < m.capture_count; c++)
        if (ts_node_end_byte(m.captures[c].node) > len) __builtin_trap();
    ts_query_cursor_delete(qc);
  }
  /* The walks a completion and a quick fix take. */
  sc_completion_plan plan;
  if (sc_completion_plan_at(t, cursor, &plan, NULL) == SC_OK &&
      (plan.line_start > cursor || plan.line_end < cursor || plan.line_end > len))
    __builtin_trap();
  size_t a, b;
  sc_statement_span(t, cursor, &a, &b);
  if (a > b || b > len) __builtin_trap();
  sc_completion_check chk;
  sc_completion_check_insert(t, cursor, ")]}\n", 4, &chk, NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 2) return 0;
  const char *lang = k_langs[data[0] % N_LANGS];
  const unsigned char cursor_sel = data[1];
  buf b = {g_made, 0};
  g_cap = SMALL_TEXT;
  edit edits[MAX_EDITS];
  size_t n_edits = 0;
  for (size_t i = 2; i < size && b.n < g_cap;) {
    unsigned op = data[i++];
    switch (op & 7) {
    case 4: { /* nest */
      size_t wide = op & 16 ? 1 : 0;
      if (i + 2 + wide > size) break;
      if (wide) g_cap = MAX_TEXT;
      size_t which = data[i] % N_NEST,
             count = wide ? (size_t)data[i + 1] << 8 | data[i + 2] : data[i + 1];
      i += 2 + wide;
      for (size_t k = 0; k < count && b.n < g_cap; k++) put_str(&b, k_nest[which].open);
      if (op & 8)
        for (size_t k = 0; k < count && b.n < g_cap; k++) put_str(&b, k_nest[which].close);
      break;
    }
    case 5: { /* indent: one level deeper a line */
      if (i + 1 > size) break;
      size_t count = data[i++];
      for (size_t k = 0; k < count && b.n < g_cap; k++) {
        for (size_t d = 0; d < k && b.n < g_cap; d++) put(&b, " ", 1);
        put_str(&b, op & 8 ? "{\n" : "if x:\n");
      }
      break;
    }
    case 6: { /* edit, after the first parse */
      size_t n = (op >> 3) + 1;
      if (i + 2 + n > size) {
        i = size;
        break;
      }
      if (n_edits < MAX_EDITS)
        edits[n_edits++] = (edit){data[i], data[i + 1], (const char *)data + i + 2, n};
      i += 2 + n;
      break;
    }
    case 7: { /* repeat what is there */
      if (i + 1 > size) break;
      size_t times = data[i++] % 16, n = b.n;
      for (size_t k = 0; k < times && b.n < g_cap && n; k++) put(&b, b.s, n);
      break;
    }
    default: { /* literal */
      size_t n = (op >> 3) + 1;
      if (n > size - i) n = size - i;
      put(&b, (const char *)data + i, n);
      i += n;
      break;
    }
    }
  }
  size_t cursor = b.n ? (size_t)cursor_sel * b.n / 255 : 0;
  sc_syntax_tree *t = NULL;
  if (sc_syntax_tree_new_unparsed(lang, b.s, b.n, &t, NULL) != SC_OK) return 0;
  sc_syntax_tree_set_parse_limit(t, PARSE_LIMIT_NS);
  if (sc_syntax_tree_parse(t, NULL, NULL, NULL) != SC_OK) {
    sc_syntax_tree_free(t);
    return 0;
  }
  check_tree(t, b.s, b.n, cursor, true);
  /* Edits, incremental, the text kept alongside for the check. */
  char *text = g_edited;
  size_t len = b.n;
  memcpy(text, b.s, len);
  for (size_t e = 0; e < n_edits; e++) {
    size_t at = edits[e].at_frac * len / 255, del = edits[e].del;
    if (del > len - at) del = len - at;
    /* An edit whose parse runs past the budget leaves the tree pending:
     * nothing more is asked of it. */
    if (sc_syntax_tree_edit(t, at, at + del, edits[e].ins, edits[e].ins_len, NULL) != SC_OK) {
      n_edits = 0;
      break;
    }
    memmove(text + at + edits[e].ins_len, text + at + del, len - at - del);
    memcpy(text + at, edits[e].ins, edits[e].ins_len);
    len = len - del + edits[e].ins_len;
    check_tree(t, text, len, at, false);
  }
  if (n_edits && sc_syntax_tree_reparse(t, NULL) == SC_OK)
    check_tree(t, text, len, cursor > len ? len : cursor, true);
  sc_syntax_tree_free(t);
  return 0;
}

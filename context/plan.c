/* plan.c — what to complete at a cursor: the kind of text, the canvas
 * lengths to offer the diffusion model, or nothing at all.
 *
 * The tree answers "is the cursor in a comment or a string" and "is this
 * block a function body" (the blocks query). Whether a block is empty is
 * read from the neighbouring lines instead, because an empty body is often
 * a parse error (Python's `def f():` with nothing under it) while the lines
 * around it still say plainly what the user is writing. */
#define _POSIX_C_SOURCE 200809L
#include "context.h"
#include "syntax_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_kind_names[] = {"none",      "expression", "line",
                                           "statement", "block",      "function_body"};

const char *sc_completion_kind_name(sc_completion_kind kind) {
  return (unsigned)kind < sizeof k_kind_names / sizeof k_kind_names[0] ? k_kind_names[kind] : "?";
}

/* Canvas lengths in tokens. A line of code is 8-20 tokens in the BPE
 * vocabularies of the supported models (Qwen2.5 for Dream/DiffuCoder/CoDA,
 * LLaDA's own), a statement one to three lines, a block or body a screenful
 * at most. Diffusion models pad a too-long canvas with end tokens and the
 * engine can grow one that is too short (DreamOn), so a few sizes per kind,
 * not one exact guess. */
static const uint32_t k_canvas[][3] = {
    [SC_COMPLETION_EXPRESSION] = {4, 8, 16},     [SC_COMPLETION_LINE] = {8, 16, 32},
    [SC_COMPLETION_STATEMENT] = {16, 32, 64},    [SC_COMPLETION_BLOCK] = {32, 64, 128},
    [SC_COMPLETION_FUNCTION_BODY] = {64, 128, 256},
};

static bool in_set(const char *s, const char *const *set) {
  for (; *set; set++)
    if (strcmp(s, *set) == 0) return true;
  return false;
}

/* Node types, from the grammars' node-types.json. Innermost wins, so an f-string
 * interpolation or a template substitution inside a string is code again. */
static const char *const k_comment_types[] = {"comment", "line_comment", "block_comment",
                                              "html_comment", NULL};
static const char *const k_string_types[] = {
    "string_literal", "raw_string_literal", "char_literal", "character_literal", "string",
    "template_string", "interpreted_string_literal", "rune_literal", "raw_string",
    "ansi_c_string", "translated_string", "heredoc_body", "system_lib_string",
    "string_content", "string_fragment", NULL};
static const char *const k_code_in_string[] = {
    "interpolation", "template_substitution", "command_substitution", "expansion",
    "simple_expansion", "arithmetic_expansion", "process_substitution", NULL};

typedef enum { CTX_CODE, CTX_COMMENT, CTX_STRING } lexical_ctx;

static bool is_line_comment(const char *s, size_t n) {
  /* Block comments end with their closer; a line comment runs to the end
   * of the line, so a cursor right after it is still inside it. */
  if (n >= 2 && s[n - 2] == '*' && s[n - 1] == '/') return false;
  if (n >= 3 && memcmp(s + n - 3, "-->", 3) == 0) return false;
  return true;
}

static bool ends_with_missing(TSNode n) {
  uint32_t k = ts_node_child_count(n);
  return k > 0 && ts_node_is_missing(ts_node_child(n, k - 1));
}

static lexical_ctx lexical_context(TSNode root, const char *text, size_t c) {
  if (c == 0) return CTX_CODE;
  TSNode *up;
  size_t k = sc_syntax_ancestry(ts_node_descendant_for_byte_range(root, (uint32_t)c - 1,
                                                                  (uint32_t)c),
                                &up);
  lexical_ctx ctx = CTX_CODE;
  for (size_t i = 0; i < k; i++) {
    TSNode n = up[i];
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    const char *type = ts_node_type(n);
    bool strict = s < c && c < e;
    if (strict && in_set(type, k_code_in_string)) break;
    if (in_set(type, k_comment_types)) {
      if (strict || (e == c && s < c && is_line_comment(text + s, e - s))) {
        ctx = CTX_COMMENT;
        break;
      }
    } else if (in_set(type, k_string_types)) {
      if (strict || (e == c && s < c && ends_with_missing(n))) {
        ctx = CTX_STRING;
        break;
      }
    }
  }
  free(up);
  return ctx;
}

/* An unterminated string on the cursor's line: tree-sitter often turns it
 * into an ERROR holding a lone quote rather than a string node. When a
 * syntax error touches the line, counts the unescaped double quotes before
 * the cursor. */
static bool open_quote_before(const sc_syntax_tree *tree, const char *text, size_t ls,
                              size_t c, size_t le) {
  if (c == ls || !ts_node_has_error(sc_syntax_tree_root(tree))) return false;
  sc_syntax_error *errs = NULL;
  size_t n = 0;
  if (sc_syntax_tree_errors(tree, &errs, &n, NULL) != SC_OK) return false;
  bool touches = false;
  for (size_t i = 0; i < n && !touches; i++)
    touches = errs[i].start_byte <= le && errs[i].end_byte >= ls;
  free(errs);
  if (!touches) return false;
  int quotes = 0;
  for (size_t i = ls; i < c; i++) {
    if (text[i] == '\\') i++;
    else if (text[i] == '"') quotes++;
  }
  return quotes % 2 == 1;
}

/* ---- lines ------------------------------------------------------------------ */

typedef struct {
  size_t s, e; /* [s, e) without the line break; s == e + 1 means "none" */
  bool ok;
} line;

static bool is_hspace(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v'; }
static bool is_word(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

static line line_at(const char *t, size_t len, size_t c) {
  size_t s = c, e = c;
  while (s > 0 && t[s - 1] != '\n') s--;
  while (e < len && t[e] != '\n') e++;
  return (line){s, e, true};
}

static bool blank(const char *t, size_t s, size_t e) {
  for (size_t i = s; i < e; i++)
    if (!is_hspace(t[i])) return false;
  return true;
}

/* Trims horizontal space on both sides of [*s, *e). */
static void trim(const char *t, size_t *s, size_t *e) {
  while (*s < *e && is_hspace(t[*s])) (*s)++;
  while (*e > *s && is_hspace(t[*e - 1])) (*e)--;
}

static line prev_nonblank(const char *t, size_t len, size_t line_start) {
  while (line_start > 0) {
    line l = line_at(t, len, line_start - 1);
    if (!blank(t, l.s, l.e)) return l;
    line_start = l.s;
  }
  return (line){0, 0, false};
}

static line next_nonblank(const char *t, size_t len, size_t line_end) {
  while (line_end < len) {
    line l = line_at(t, len, line_end + 1);
    if (!blank(t, l.s, l.e)) return l;
    line_end = l.e;
  }
  return (line){0, 0, false};
}

static size_t indent_of(const char *t, line l) {
  size_t n = 0;
  for (size_t i = l.s; i < l.e && (t[i] == ' ' || t[i] == '\t'); i++) n += t[i] == '\t' ? 8 : 1;
  return n;
}

/* Does [s, e) (trimmed) start with word w followed by a non-word character? */
static bool starts_with_word(const char *t, size_t s, size_t e, const char *w) {
  size_t n = strlen(w);
  return e - s >= n && memcmp(t + s, w, n) == 0 && (e - s == n || !is_word(t[s + n]));
}

static bool ends_with_word(const char *t, size_t s, size_t e, const char *w) {
  size_t n = strlen(w);
  return e - s >= n && memcmp(t + e - n, w, n) == 0 && (e - s == n || !is_word(t[e - n - 1]));
}

/* ---- blocks ------------------------------------------------------------------- */

typedef enum { LANG_BRACES, LANG_PYTHON, LANG_BASH } block_style;

static block_style style_of(const char *lang) {
  if (strcmp(lang, "python") == 0) return LANG_PYTHON;
  if (strcmp(lang, "bash") == 0) return LANG_BASH;
  return LANG_BRACES;
}

static const char *const k_python_headers[] = {"def", "async", "class", "if", "elif", "else",
                                               "for", "while", "with", "try", "except",
                                               "finally", "match", "case", NULL};

/* Does the header line [s, e) (trimmed) open a block at its end? */
static bool opens_block(block_style st, const char *t, size_t s, size_t e) {
  if (s == e) return false;
  switch (st) {
  case LANG_BRACES:
    return t[e - 1] == '{';
  case LANG_PYTHON:
    if (t[e - 1] != ':') return false;
    for (const char *const *k = k_python_headers; *k; k++)
      if (starts_with_word(t, s, e, *k)) return true;
    return false;
  case LANG_BASH:
    return t[e - 1] == '{' || ends_with_word(t, s, e, "then") || ends_with_word(t, s, e, "do") ||
           ends_with_word(t, s, e, "else");
  }
  return false;
}

/* Is the block opened by header line h empty, judging by the next non-blank
 * line after `after` (the header's line, or the cursor's blank line)? */
static bool block_is_empty(block_style st, const char *t, size_t len, line h, size_t after) {
  line n = next_nonblank(t, len, after);
  if (!n.ok) return true; /* nothing follows: the body is still to be written */
  size_t s = n.s, e = n.e;
  trim(t, &s, &e);
  switch (st) {
  case LANG_BRACES:
    return t[s] == '}';
  case LANG_PYTHON:
    return indent_of(t, n) <= indent_of(t, h);
  case LANG_BASH:
    return t[s] == '}' || starts_with_word(t, s, e, "fi") || starts_with_word(t, s, e, "done") ||
           starts_with_word(t, s, e, "esac") || starts_with_word(t, s, e, "else") ||
           starts_with_word(t, s, e, "elif");
  }
  return false;
}

static const char *const k_control_words[] = {
    "if", "else", "for", "while", "do", "switch", "catch", "try", "finally", "synchronized",
    "match", "loop", "select", "unsafe", "async", "static", "case", "default", "return", NULL};

/* Is the block opened at the end of header line h a function body? */
static bool is_function_block(block_style st, const sc_syntax_tree *tree, const char *t, line h) {
  size_t s = h.s, e = h.e;
  trim(t, &s, &e);
  if (st == LANG_PYTHON)
    return starts_with_word(t, s, e, "def") ||
           (starts_with_word(t, s, e, "async") && strstr(t + s, "def") && strstr(t + s, "def") < t + e);
  if (st == LANG_BASH)
    return starts_with_word(t, s, e, "function") ||
           (memchr(t + s, '(', e - s) && memchr(t + s, ')', e - s) && t[e - 1] == '{');

  /* Braces: ask the blocks query about the node the '{' opens. */
  const char *lang = sc_syntax_tree_language(tree);
  const TSQuery *q = NULL;
  if (sc_query_get(lang, SC_QUERY_BLOCKS, &q, NULL) == SC_OK) {
    uint32_t brace = (uint32_t)(e - 1);
    TSNode tok = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), brace, brace + 1);
    TSNode block = sc_syntax_parent(tok);
    if (!ts_node_is_null(block) && ts_node_start_byte(block) == brace &&
        !ts_node_is_error(block)) {
      TSQueryCursor *cur = sc_syntax_query_cursor_new();
      ts_query_cursor_set_byte_range(cur, brace, brace + 1);
      TSNode top = sc_syntax_parent(block);
      sc_syntax_budget budget = {0};
      sc_syntax_query_exec(cur, q, ts_node_is_null(top) ? block : top, &budget);
      TSQueryMatch m;
      uint32_t idx;
      int found = -1; /* 1 function body, 0 another block */
      while (found != 1 && ts_query_cursor_next_capture(cur, &m, &idx)) {
        const TSQueryCapture *cap = &m.captures[idx];
        if (!ts_node_eq(cap->node, block)) continue;
        uint32_t nlen;
        const char *name = ts_query_capture_name_for_id(q, cap->index, &nlen);
        found = nlen == 14 && memcmp(name, "block.function", 14) == 0;
      }
      ts_query_cursor_delete(cur);
      if (found >= 0) return found == 1;
    }
  }
  /* The tree does not know (the header is inside an ERROR): a parameter list
   * before the brace and no control keyword in front means a function. */
  while (s < e && (t[s] == '}' || is_hspace(t[s]))) s++;
  for (const char *const *k = k_control_words; *k; k++)
    if (starts_with_word(t, s, e, *k)) return false;
  const char *close = NULL;
  for (size_t i = s; i < e; i++)
    if (t[i] == ')') close = t + i;
  return close != NULL && memchr(t + s, '(', (size_t)(close - (t + s))) != NULL;
}

/* ---- the plan ----------------------------------------------------------------- */

static void finish(sc_completion_plan *p, sc_completion_kind kind, const char *reason) {
  p->kind = kind;
  p->reason = reason;
  p->n_canvas = 0;
  if (kind != SC_COMPLETION_NONE) {
    for (size_t i = 0; i < 3; i++) p->canvas[p->n_canvas++] = k_canvas[kind][i];
  }
  p->single_line = kind == SC_COMPLETION_LINE || kind == SC_COMPLETION_EXPRESSION;
}

sc_status sc_completion_plan_at(const sc_syntax_tree *tree, size_t c, sc_completion_plan *out,
                            sc_error *err) {
  SC_CHECK(tree && out, err, SC_ERR_INVALID, "sc_completion_plan_at: NULL argument");
  size_t len = 0;
  const char *t = sc_syntax_tree_text(tree, &len);
  SC_CHECK(c <= len, err, SC_ERR_INVALID, "cursor %zu is past the end (%zu bytes)", c, len);
  memset(out, 0, sizeof *out);
  line cur = line_at(t, len, c);
  out->line_start = cur.s;
  /* A CRLF's CR is not the line's, unless the cursor is after it (a lone CR
   * ends the text): the line holds the cursor. Found by fuzz_syntax. */
  out->line_end = cur.e > cur.s && t[cur.e - 1] == '\r' && c < cur.e ? cur.e - 1 : cur.e;

  const char *lang = sc_syntax_tree_language(tree);
  if (strcmp(lang, "json") == 0) {
    /* JSON is data: a model can only invent keys and values. */
    finish(out, SC_COMPLETION_NONE, "JSON data");
    return SC_OK;
  }
  TSNode root = sc_syntax_tree_root(tree);
  switch (lexical_context(root, t, c)) {
  case CTX_COMMENT: finish(out, SC_COMPLETION_NONE, "inside a comment"); return SC_OK;
  case CTX_STRING: finish(out, SC_COMPLETION_NONE, "inside a string"); return SC_OK;
  case CTX_CODE: break;
  }
  if (open_quote_before(tree, t, cur.s, c, cur.e)) {
    finish(out, SC_COMPLETION_NONE, "inside an unterminated string");
    return SC_OK;
  }

  size_t bs = cur.s, be = c, as = c, ae = cur.e;
  trim(t, &bs, &be);
  trim(t, &as, &ae);
  block_style st = style_of(lang);

  if (as < ae) { /* text follows the cursor on its line; closing brackets and quotes alone
                    * still leave the rest of the line to fill */
    if (bs == be) {
      finish(out, SC_COMPLETION_NONE, "before the code on this line");
      return SC_OK;
    }
    if (c > 0 && c < len && is_word(t[c - 1]) && is_word(t[c])) {
      finish(out, SC_COMPLETION_NONE, "inside a word");
      return SC_OK;
    }
    bool closers_only = true;
    for (size_t i = as; i < ae && closers_only; i++)
      closers_only = strchr(")]};,\"'`", t[i]) != NULL || is_hspace(t[i]);
    finish(out, closers_only ? SC_COMPLETION_LINE : SC_COMPLETION_EXPRESSION,
           closers_only ? "end of line before closing brackets" : "between code on this line");
    return SC_OK;
  }

  /* Nothing after the cursor. Which line opens the block the cursor is in? */
  line header = {0, 0, false};
  size_t after = cur.e;
  if (bs < be) { /* code before the cursor */
    if (!opens_block(st, t, bs, be)) {
      finish(out, SC_COMPLETION_LINE, "end of a line of code");
      return SC_OK;
    }
    header = cur;
  } else {
    header = prev_nonblank(t, len, cur.s);
    if (header.ok) {
      size_t hs = header.s, he = header.e;
      trim(t, &hs, &he);
      if (!opens_block(st, t, hs, he)) header.ok = false;
    }
  }
  if (header.ok && block_is_empty(st, t, len, header, after)) {
    if (is_function_block(st, tree, t, header))
      finish(out, SC_COMPLETION_FUNCTION_BODY, "empty function body");
    else
      finish(out, SC_COMPLETION_BLOCK, "empty block");
    return SC_OK;
  }
  finish(out, SC_COMPLETION_STATEMENT,
         bs < be ? "after a block opener" : "empty line");
  return SC_OK;
}

void sc_completion_plan_to_infill(const sc_completion_plan *p, sc_infill_plan *out) {
  out->n_lengths = 0;
  for (size_t i = 0; i < p->n_canvas && i < SC_INFILL_MAX_CANDIDATES; i++)
    out->lengths[out->n_lengths++] = (int)p->canvas[i];
}

/* shape.c — cutting an engine candidate to the unit the plan asked for, and
 * checking it by reparsing. */
#define _POSIX_C_SOURCE 200809L
#include "context.h"
#include "syntax_impl.h"

#include <stdlib.h>
#include <string.h>

/* An error of the old tree, in the new tree's coordinates. */
typedef struct {
  size_t s, e;
  bool missing;
} shifted_error;

static int shifted_cmp(const void *a, const void *b) {
  const shifted_error *x = a, *y = b;
  if (x->s != y->s) return x->s < y->s ? -1 : 1;
  if (x->e != y->e) return x->e < y->e ? -1 : 1;
  return (int)x->missing - (int)y->missing;
}

/* An error in the new tree is "new" unless the old tree had one of the same
 * kind at the same place (shifted by the insertion when it lay after it),
 * or it is an ERROR around the insertion where one was around it before:
 * the file's own trouble, whose ends recovery may place elsewhere (jq's
 * util.c: `#ifdef`s leave nearly the whole file in one ERROR).
 * [*lo, *hi) gets the union of the new errors' bytes (new coordinates);
 * *lo > *hi when there are none. The old errors are sorted once and each
 * new one looked up: comparing every pair cost about 0.4 s a candidate in
 * a JSON text of 54,560 nested comments, 21 s under the sanitizers
 * (fuzz_syntax).
 * shifted: scratch for n_old entries. */
static size_t count_new_errors(const sc_syntax_error *old, size_t n_old,
                               const sc_syntax_error *cur, size_t n_cur, size_t offset,
                               size_t ins, shifted_error *shifted, size_t *lo, size_t *hi) {
  bool old_around = false; /* an old ERROR (not MISSING) spans the insertion */
  for (size_t j = 0; j < n_old; j++) {
    size_t s = old[j].start_byte, e = old[j].end_byte;
    if (s >= offset) s += ins;
    if (e >= offset && !(e == offset && s < offset)) e += ins;
    shifted[j] = (shifted_error){s, e, old[j].missing};
    old_around |= !old[j].missing && s < offset && e > offset + ins;
  }
  if (n_old > 1) qsort(shifted, n_old, sizeof *shifted, shifted_cmp);
  size_t fresh = 0;
  *lo = (size_t)-1;
  *hi = 0;
  for (size_t i = 0; i < n_cur; i++) {
    shifted_error key = {cur[i].start_byte, cur[i].end_byte, cur[i].missing};
    bool seen = (n_old && bsearch(&key, shifted, n_old, sizeof *shifted, shifted_cmp)) ||
                (!cur[i].missing && old_around && cur[i].start_byte < offset &&
                 cur[i].end_byte > offset + ins);
    if (seen) continue;
    fresh++;
    if (cur[i].start_byte < *lo) *lo = cur[i].start_byte;
    if (cur[i].end_byte > *hi) *hi = cur[i].end_byte;
  }
  return fresh;
}

/* The whole lines of cand (len bytes) that [lo, hi) (document bytes, the
 * candidate inserted at offset) touches, without the final line break: the
 * span a repair re-masks. An error outside the candidate touches its
 * nearest line: a bracket the candidate left open shows up as a MISSING
 * node just after it. */
static void error_span(const char *cand, size_t len, size_t offset, size_t lo, size_t hi,
                       size_t *start, size_t *end) {
  *start = *end = 0;
  if (len == 0 || lo > hi) return;
  size_t a = lo > offset ? lo - offset : 0, b = hi > offset ? hi - offset : 0;
  if (a > len) a = len;
  if (b > len) b = len;
  if (b > a) b--; /* the last byte inside, to find its line */
  if (a == len) a = len - 1;
  if (b >= len) b = len - 1;
  while (a > 0 && cand[a - 1] != '\n') a--;
  /* A parser notices a line left unfinished only at the next token: when
   * the error starts a line, the line before it is suspect too. */
  size_t first = a;
  while (first < len && (cand[first] == ' ' || cand[first] == '\t')) first++;
  if (a > 0 && lo >= offset && lo - offset <= first) {
    a--;
    while (a > 0 && cand[a - 1] != '\n') a--;
  }
  while (b < len && cand[b] != '\n') b++;
  /* CRLF text: the \r belongs to the line break, which stays in the tail
   * (a one-line rewrite would otherwise drop it). */
  if (b > a && cand[b - 1] == '\r') b--;
  *start = a;
  *end = b;
}

sc_status sc_completion_check_insert(const sc_syntax_tree *tree, size_t offset, const char *cand,
                                     size_t len, sc_completion_check *out, sc_error *err) {
  SC_CHECK(tree && out && (cand || len == 0), err, SC_ERR_INVALID,
           "sc_completion_check_insert: NULL argument");
  size_t doc_len = 0;
  sc_syntax_tree_text(tree, &doc_len);
  SC_CHECK(offset <= doc_len, err, SC_ERR_INVALID, "offset %zu is past the end (%zu bytes)",
           offset, doc_len);
  sc_syntax_tree *copy = NULL;
  SC_TRY(sc_syntax_tree_copy(tree, &copy, err));
  sc_syntax_error *old = NULL, *cur = NULL;
  size_t n_old = 0, n_cur = 0;
  sc_status s = sc_syntax_tree_edit(copy, offset, offset, cand, len, err);
  if (s == SC_OK) s = sc_syntax_tree_errors(tree, &old, &n_old, err);
  if (s == SC_OK) s = sc_syntax_tree_errors(copy, &cur, &n_cur, err);
  shifted_error *shifted = NULL;
  if (s == SC_OK && n_old && !(shifted = malloc(n_old * sizeof *shifted)))
    s = sc_error_set(err, SC_ERR_NOMEM, "out of memory comparing %zu syntax errors", n_old);
  if (s == SC_OK) {
    out->errors_before = n_old;
    out->errors_after = n_cur;
    size_t lo, hi;
    out->new_errors = count_new_errors(old, n_old, cur, n_cur, offset, len, shifted, &lo, &hi);
    out->ok = out->new_errors == 0;
    error_span(cand, len, offset, lo, hi, &out->span_start, &out->span_end);
  }
  free(shifted);
  free(old);
  free(cur);
  sc_syntax_tree_free(copy);
  return s;
}

typedef struct {
  bool hash_comments;   /* '#' starts a line comment (Python, bash) */
  bool slash_comments;  /* '//' and block comments */
  bool single_quotes;   /* '...' is a string (not Rust: lifetimes) */
  bool backticks;       /* `...` is a string (JS/TS/Go raw strings, bash) */
  bool indent_blocks;   /* Python: blocks are indentation */
  bool dedent_closes;   /* a dedent leaves the block (Python; bash's fi/done) */
} lex_rules;

static lex_rules rules_for(const char *lang) {
  lex_rules r = {false, true, true, false, false, false};
  if (strcmp(lang, "python") == 0) r = (lex_rules){true, false, true, false, true, true};
  else if (strcmp(lang, "bash") == 0) r = (lex_rules){true, false, true, true, false, true};
  else if (strcmp(lang, "rust") == 0) r.single_quotes = false;
  else if (!strcmp(lang, "javascript") || !strcmp(lang, "typescript") || !strcmp(lang, "tsx") ||
           !strcmp(lang, "go"))
    r.backticks = true;
  return r;
}

static size_t rtrim(const char *s, size_t n) {
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
    n--;
  return n;
}

static size_t line_indent(const char *s, size_t n) {
  size_t i = 0, w = 0;
  for (; i < n && (s[i] == ' ' || s[i] == '\t'); i++) w += s[i] == '\t' ? 8 : 1;
  return w;
}

size_t sc_completion_cut(const sc_syntax_tree *tree, const sc_completion_plan *plan,
                         size_t cursor, const char *cand, size_t len) {
  if (!tree || !plan || !cand || plan->kind == SC_COMPLETION_NONE) return 0;
  if (plan->single_line) {
    const char *nl = memchr(cand, '\n', len);
    return rtrim(cand, nl ? (size_t)(nl - cand) : len);
  }
  lex_rules r = rules_for(sc_syntax_tree_language(tree));
  size_t doc_len = 0;
  const char *doc = sc_syntax_tree_text(tree, &doc_len);
  if (cursor > doc_len) cursor = doc_len;
  /* The column the candidate starts at: its first line continues the
   * cursor's line. */
  size_t ls = cursor;
  while (ls > 0 && doc[ls - 1] != '\n') ls--;
  size_t first_indent = line_indent(doc + ls, cursor - ls);
  bool on_cursor_line = true; /* still on the candidate's first line */
  bool seen_code = false;     /* a non-blank character outside comments */
  size_t unit_indent = (size_t)-1; /* indentation of the unit's first code line */
  int depth = 0;
  char quote = 0;
  bool line_comment = false, block_comment = false;

  for (size_t i = 0; i < len; i++) {
    char ch = cand[i];
    if (ch == '\n') {
      line_comment = false;
      if (quote && quote != '`' && !r.indent_blocks) quote = 0; /* unterminated: give up on it */
      on_cursor_line = false;
      /* A statement ends at a line break at depth 0 unless the next code
       * line is indented deeper (a continuation, or a Python block). */
      size_t j = i + 1, ind = 0;
      bool more = false;
      while (j < len) { /* the next line that is not blank */
        size_t e = j;
        while (e < len && cand[e] != '\n') e++;
        if (rtrim(cand + j, e - j) > 0) {
          ind = line_indent(cand + j, e - j);
          more = true;
          break;
        }
        j = e + 1;
      }
      if (!more) return rtrim(cand, i);
      if (depth == 0 && !quote && !block_comment && seen_code) {
        size_t ref = unit_indent == (size_t)-1 ? first_indent : unit_indent;
        if (plan->kind == SC_COMPLETION_STATEMENT && ind <= ref) return rtrim(cand, i);
        /* Blocks and bodies: a line indented less than the body's lines
         * leaves the block (Python's dedent, bash's fi/done; with braces the
         * '}' check below catches it). */
        if (plan->kind != SC_COMPLETION_STATEMENT && r.dedent_closes && ind < ref)
          return rtrim(cand, i);
      }
      continue;
    }
    if (line_comment) continue;
    if (block_comment) {
      if (ch == '*' && i + 1 < len && cand[i + 1] == '/') block_comment = false, i++;
      continue;
    }
    if (quote) {
      if (ch == '\\') i++;
      else if (ch == quote) quote = 0;
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\r') continue;
    if ((r.hash_comments && ch == '#') ||
        (r.slash_comments && ch == '/' && i + 1 < len && cand[i + 1] == '/')) {
      line_comment = true;
      continue;
    }
    if (r.slash_comments && ch == '/' && i + 1 < len && cand[i + 1] == '*') {
      block_comment = true;
      i++;
      continue;
    }
    if (unit_indent == (size_t)-1) { /* the first code line sets the unit's indentation */
      size_t b = i;
      while (b > 0 && cand[b - 1] != '\n') b--;
      unit_indent = on_cursor_line ? first_indent : line_indent(cand + b, i - b);
    }
    seen_code = true;
    if (ch == '"' || (ch == '\'' && r.single_quotes) || (ch == '`' && r.backticks)) {
      quote = ch;
    } else if (ch == '(' || ch == '[' || ch == '{') {
      depth++;
    } else if (ch == ')' || ch == ']' || ch == '}') {
      if (--depth < 0) {
        /* Closes what the cursor is in: the suffix already does that. Keep
         * the lines before this one. */
        size_t b = i;
        while (b > 0 && cand[b - 1] != '\n') b--;
        return rtrim(cand, b > 0 ? b : i);
      }
    }
  }
  return rtrim(cand, len);
}

sc_status sc_completion_repair(const sc_syntax_tree *tree, size_t offset, const char *cand,
                               size_t len, const sc_completion_check *chk,
                               sc_repair_fill_fn fill, void *user, char **out, size_t *out_len,
                               sc_completion_check *out_chk, sc_error *err) {
  *out = NULL;
  *out_len = 0;
  SC_CHECK(tree && cand && chk && fill && out_chk, err, SC_ERR_INVALID,
           "sc_completion_repair: NULL argument");
  size_t a = chk->span_start, b = chk->span_end;
  SC_CHECK(a < b && b <= len, err, SC_ERR_INVALID, "repair: no span to re-mask");
  char *mid = NULL;
  size_t mid_len = 0;
  SC_TRY(fill(user, cand, a, cand + a, b - a, cand + b, len - b, &mid, &mid_len, err));
  if (!memchr(cand + a, '\n', b - a)) {
    const char *nl = memchr(mid, '\n', mid_len);
    if (nl) mid_len = (size_t)(nl - mid);
  }
  /* A span that ends the candidate keeps its end: the candidate was trimmed
   * (sc_completion_trim), and a line break or blanks the fill wrote after
   * its last line would be accepted with it (Tab in VS Code left the cursor
   * on a new empty line, and the file with a blank line more). */
  if (b == len && rtrim(cand, len) == len) mid_len = rtrim(mid, mid_len);
  char *s = malloc(a + mid_len + (len - b) + 1);
  if (!s) {
    free(mid);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  memcpy(s, cand, a);
  memcpy(s + a, mid, mid_len);
  memcpy(s + a + mid_len, cand + b, len - b);
  size_t n = a + mid_len + (len - b);
  s[n] = '\0';
  free(mid);
  sc_status st = sc_completion_check_insert(tree, offset, s, n, out_chk, err);
  if (st != SC_OK) {
    free(s);
    return st;
  }
  *out = s;
  *out_len = n;
  return SC_OK;
}

/* Trims a middle for the editor (see context.h): a single-line completion stops at the
 * line's end; a middle that runs into the suffix (repeats the text after the
 * cursor, or the next non-blank line) is cut there; trailing blank space in
 * a multi-line middle goes. Returns the kept length. */
size_t sc_completion_trim(const char *mid, size_t len, const char *suffix, size_t suffix_len,
                          bool single_line) {
  if (single_line) {
    const char *nl = memchr(mid, '\n', len);
    if (nl) len = (size_t)(nl - mid);
    /* Drop a tail the suffix already has (e.g. a closing bracket). */
    const char *eol = memchr(suffix, '\n', suffix_len);
    size_t rest = eol ? (size_t)(eol - suffix) : suffix_len;
    while (rest > 0 && (suffix[rest - 1] == ' ' || suffix[rest - 1] == '\t' ||
                        suffix[rest - 1] == '\r'))
      rest--;
    for (size_t k = rest < len ? rest : len; k > 0; k--)
      if (memcmp(mid + len - k, suffix, k) == 0) {
        len -= k;
        break;
      }
    return len;
  }
  /* The first non-blank line of the suffix, trimmed. */
  size_t i = 0;
  const char *line = NULL;
  size_t line_len = 0;
  while (i < suffix_len) {
    const char *eol = memchr(suffix + i, '\n', suffix_len - i);
    size_t end = eol ? (size_t)(eol - suffix) : suffix_len;
    size_t a = i, b = end;
    while (a < b && (suffix[a] == ' ' || suffix[a] == '\t')) a++;
    while (b > a && (suffix[b - 1] == ' ' || suffix[b - 1] == '\t' || suffix[b - 1] == '\r')) b--;
    if (b > a) {
      line = suffix + a;
      line_len = b - a;
      break;
    }
    i = end + 1;
  }
  if (line && line_len >= 2) {
    /* Cut before the first middle line that equals it. */
    size_t p = 0;
    while (p < len) {
      const char *eol = memchr(mid + p, '\n', len - p);
      size_t end = eol ? (size_t)(eol - mid) : len;
      size_t a = p, b = end;
      while (a < b && (mid[a] == ' ' || mid[a] == '\t')) a++;
      while (b > a && (mid[b - 1] == ' ' || mid[b - 1] == '\t' || mid[b - 1] == '\r')) b--;
      if (b - a == line_len && memcmp(mid + a, line, line_len) == 0 && p > 0) {
        len = p;
        break;
      }
      p = end + 1;
    }
  }
  while (len > 0 && (mid[len - 1] == ' ' || mid[len - 1] == '\t' || mid[len - 1] == '\n' ||
                     mid[len - 1] == '\r'))
    len--;
  return len;
}

/* position.c — LSP positions <-> byte offsets in UTF-8 text.
 * Spec: LSP 3.17 "Position": character offsets count code units of the
 * negotiated encoding. Lines end at \n and \r\n. The spec ends them at a
 * lone \r too, but the clients do not: Neovim and Emacs count a \r that
 * no \n follows as a character of its line (so do clangd, gopls and
 * rust-analyzer), and VS Code makes every line end in its document one
 * \n or \r\n. Split at a lone \r, a document with one went out of step
 * with Neovim's at the first edit after it. */
#include "lsp_impl.h"

#include <stdlib.h>
#include <string.h>

const char *sc_pos_encoding_name(sc_pos_encoding enc) {
  switch (enc) {
  case SC_POS_UTF8: return "utf-8";
  case SC_POS_UTF16: return "utf-16";
  case SC_POS_UTF32: return "utf-32";
  }
  return "utf-16";
}

size_t sc_utf8_decode(const char *text, size_t len, size_t i, uint32_t *cp) {
  const unsigned char *s = (const unsigned char *)text + i;
  int n = sc_utf8_lead(s, len - i);
  if (n == 0 || (size_t)n > len - i) { /* invalid or truncated */
    *cp = 0xFFFD;
    return 1;
  }
  static const unsigned char first_bits[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t v = s[0] & first_bits[n];
  for (int k = 1; k < n; k++) v = (v << 6) | (s[k] & 0x3F);
  *cp = v;
  return (size_t)n;
}

static sc_status push_start(sc_line_index *idx, size_t off) {
  if (idx->n == idx->cap) {
    size_t cap = idx->cap ? idx->cap * 2 : 64;
    size_t *ns = realloc(idx->starts, cap * sizeof *ns);
    if (!ns) return SC_ERR_NOMEM;
    idx->starts = ns;
    idx->cap = cap;
  }
  idx->starts[idx->n++] = off;
  return SC_OK;
}

sc_status sc_line_index_build(sc_line_index *idx, const char *text, size_t len) {
  idx->n = 0;
  SC_TRY(push_start(idx, 0));
  for (const char *p = text, *end = text + len; (p = memchr(p, '\n', (size_t)(end - p)));)
    SC_TRY(push_start(idx, (size_t)(++p - text)));
  return SC_OK;
}

/* Whether a line starts at s in text: the byte before is a \n. */
static bool starts_line(const char *text, size_t s) { return s == 0 || text[s - 1] == '\n'; }

sc_status sc_line_index_splice(sc_line_index *idx, const char *text, size_t len, size_t a,
                               size_t old_b, size_t ins) {
  /* A start at s depends on the byte at s - 1 only. So the starts before a
   * keep their place, those in [a, a + ins] are found again, and the old
   * ones past old_b keep theirs, shifted by the edit's length. */
  size_t lo = a ? a : 1; /* starts[0] == 0 always */
  size_t k0 = 0, hi = idx->n; /* the first old start >= lo */
  while (k0 < hi) {
    size_t mid = (k0 + hi) / 2;
    if (idx->starts[mid] < lo) k0 = mid + 1;
    else hi = mid;
  }
  size_t k1 = k0; /* the first old start > old_b */
  while (k1 < idx->n && idx->starts[k1] <= old_b) k1++;
  size_t found = 0, end = a + ins < len ? a + ins : len;
  for (size_t s = lo; s <= end; s++) found += starts_line(text, s);
  size_t n = k0 + found + (idx->n - k1);
  if (n > idx->cap) {
    size_t cap = n + n / 2 + 64;
    size_t *ns = realloc(idx->starts, cap * sizeof *ns);
    if (!ns) return SC_ERR_NOMEM;
    idx->starts = ns;
    idx->cap = cap;
  }
  memmove(idx->starts + k0 + found, idx->starts + k1, (idx->n - k1) * sizeof *idx->starts);
  for (size_t k = k0 + found; k < n; k++) idx->starts[k] = idx->starts[k] - old_b + a + ins;
  size_t k = k0;
  for (size_t s = lo; s <= end; s++)
    if (starts_line(text, s)) idx->starts[k++] = s;
  idx->n = n;
  return SC_OK;
}

uint32_t sc_line_index_line_of(const sc_line_index *idx, size_t off) {
  size_t lo = 0, hi = idx->n;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (idx->starts[mid] <= off) lo = mid;
    else hi = mid;
  }
  return (uint32_t)lo;
}

void sc_line_index_free(sc_line_index *idx) {
  free(idx->starts);
  idx->starts = NULL;
  idx->n = idx->cap = 0;
}

/* End of line `line`'s content, before its terminator (\n or \r\n). */
static size_t line_content_end(const char *text, size_t len, const sc_line_index *idx,
                               size_t line) {
  size_t end = line + 1 < idx->n ? idx->starts[line + 1] : len;
  if (end > idx->starts[line] && line + 1 < idx->n) {
    end--; /* the \n */
    if (end > idx->starts[line] && text[end - 1] == '\r') end--;
  }
  return end;
}

static uint32_t units_of(uint32_t cp, size_t bytes, sc_pos_encoding enc) {
  switch (enc) {
  case SC_POS_UTF8: return (uint32_t)bytes;
  case SC_POS_UTF16: return cp >= 0x10000 ? 2 : 1;
  case SC_POS_UTF32: return 1;
  }
  return 1;
}

/* The ASCII bytes at p (at most n, at most `most`), 8 at a time: one unit
 * each in every encoding. A minified file's one 2 MB line cost the loop
 * 5 ms a position through sc_utf8_decode. Adds them to *units. */
static size_t ascii_run(const char *p, size_t n, uint32_t most, uint32_t *units) {
  size_t k = 0, cap = n < most ? n : most;
  for (uint64_t w; k + 8 <= cap; k += 8) {
    memcpy(&w, p + k, 8);
    if (w & 0x8080808080808080ull) break;
  }
  while (k < cap && (unsigned char)p[k] < 0x80) k++;
  *units += (uint32_t)k;
  return k;
}

uint32_t sc_text_units(const char *text, size_t len, sc_pos_encoding enc) {
  uint32_t units = 0;
  for (size_t i = 0; i < len;) {
    i += ascii_run(text + i, len - i, UINT32_MAX - units, &units);
    if (i >= len) break;
    uint32_t cp;
    size_t n = sc_utf8_decode(text, len, i, &cp);
    units += units_of(cp, n, enc);
    i += n;
  }
  return units;
}

size_t sc_pos_to_offset(const char *text, size_t len, const sc_line_index *idx,
                        uint32_t line, uint32_t character, sc_pos_encoding enc,
                        bool *clamped) {
  bool c = false;
  if (idx->n == 0 || line >= idx->n) {
    if (clamped) *clamped = true;
    return len;
  }
  size_t i = idx->starts[line];
  size_t end = line_content_end(text, len, idx, line);
  uint32_t units = 0;
  while (units < character) {
    i += ascii_run(text + i, end - i, character - units, &units);
    if (units == character) break;
    if (i >= end) {
      c = true;
      break;
    }
    uint32_t cp;
    size_t n = sc_utf8_decode(text, end, i, &cp);
    uint32_t u = units_of(cp, n, enc);
    if (units + u > character) break; /* inside this character: round down */
    units += u;
    i += n;
  }
  /* One unit past a line that ends in \r\n is after the \r: where a
   * client that ends lines at \n alone (Neovim and Emacs, in a buffer whose
   * other lines end in \n) puts the end of that line. */
  if (c && units + 1 == character && i + 1 < len && text[i] == '\r' && text[i + 1] == '\n') {
    c = false;
    i++;
  }
  if (clamped) *clamped = c;
  return i;
}

void sc_offset_to_pos(const char *text, size_t len, const sc_line_index *idx,
                      size_t offset, sc_pos_encoding enc, uint32_t *line,
                      uint32_t *character) {
  if (offset > len) offset = len;
  /* Binary search for the last line start <= offset. */
  size_t lo = 0, hi = idx->n ? idx->n - 1 : 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (idx->starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  size_t end = idx->n ? line_content_end(text, len, idx, lo) : len;
  if (offset > end) offset = end;
  uint32_t units = 0;
  size_t i = idx->n ? idx->starts[lo] : 0;
  while (i < offset) {
    i += ascii_run(text + i, offset - i, UINT32_MAX - units, &units);
    if (i >= offset) break;
    uint32_t cp;
    size_t n = sc_utf8_decode(text, end, i, &cp);
    if (i + n > offset) break;
    units += units_of(cp, n, enc);
    i += n;
  }
  *line = (uint32_t)lo;
  *character = units;
}

/* json.c — what JSON decoders refuse in text that editors send. */
#include "sculpt.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int hex4(const char *p, size_t avail) {
  if (avail < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* The code of a \uXXXX escape at p (p[0] is the backslash); -1 if p holds
 * none. */
static int escape_at(const char *p, size_t avail) {
  return avail >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2, avail - 2) : -1;
}

char *sc_json_repair(const char *body, size_t len, size_t *out_len, size_t *replaced) {
  /* A lone surrogate escape (6 bytes) becomes \uFFFD (6 bytes). */
  char *out = malloc(len + 1);
  if (!out) return NULL;
  size_t o = 0, n = 0;
  bool in_string = false;
  for (size_t i = 0; i < len;) {
    const char c = body[i];
    if (c == '"') in_string = !in_string;
    if (!in_string || c != '\\' || i + 1 >= len) {
      out[o++] = c;
      i++;
      continue;
    }
    /* An escape inside a string: a surrogate must come as a high half
     * followed by a low half (RFC 8259 section 7); anything else is copied
     * as it is, the escaped character with it (so \\" stays inside). */
    int u = escape_at(body + i, len - i);
    if (u >= 0xD800 && u <= 0xDBFF) {
      int lo = escape_at(body + i + 6, len - i - 6);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        memcpy(out + o, body + i, 12);
        o += 12;
        i += 12;
        continue;
      }
    }
    if (u >= 0xD800 && u <= 0xDFFF) {
      memcpy(out + o, "\\uFFFD", 6);
      o += 6;
      i += 6;
      n++;
      continue;
    }
    out[o++] = body[i++];
    out[o++] = body[i++];
  }
  out[o] = '\0';
  *out_len = o;
  *replaced = n;
  return out;
}

void *sc_json_load_text(const char *body, size_t len, size_t flags, void *error,
                        size_t *replaced) {
  json_error_t *jerr = error;
  *replaced = 0;
  json_t *v = json_loadb(body, len, flags, jerr);
  if (v) return v;
  /* Only a text that failed is copied: a valid one costs nothing more. */
  json_error_t first = *jerr;
  size_t fixed_len, n;
  char *fixed = sc_json_repair(body, len, &fixed_len, &n);
  if (fixed && n > 0) v = json_loadb(fixed, fixed_len, flags, jerr);
  free(fixed);
  if (v) *replaced = n;
  else *jerr = first; /* the error is the text's as sent */
  return v;
}

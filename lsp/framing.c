/* framing.c — LSP base protocol: Content-Length framed messages.
 * Spec: LSP 3.17 "Base Protocol" (header part, then content part; headers are
 * ASCII "Name: value\r\n", ended by an empty "\r\n"). */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A header block longer than this is garbage, not a header. */
#define MAX_HEADER_BYTES 8192

static const char *const k_header_names[] = {"content-length:", "content-type:"};

void sc_frame_reader_init(sc_frame_reader *r, size_t max_message) {
  memset(r, 0, sizeof *r);
  r->max_message = max_message ? max_message : SC_LSP_DEFAULT_MAX_MESSAGE;
}

void sc_frame_reader_free(sc_frame_reader *r) {
  free(r->buf);
  memset(r, 0, sizeof *r);
}

static sc_status reserve(sc_frame_reader *r, size_t extra) {
  size_t live = r->len - r->start;
  if (r->start > 0 && (r->start >= r->cap / 2 || r->len + extra > r->cap)) {
    memmove(r->buf, r->buf + r->start, live);
    r->len = live;
    r->start = 0;
  }
  if (r->len + extra <= r->cap) return SC_OK;
  size_t cap = r->cap ? r->cap : 4096;
  while (cap < r->len + extra) {
    if (cap > SIZE_MAX / 2) return SC_ERR_NOMEM;
    cap *= 2;
  }
  char *nb = realloc(r->buf, cap);
  if (!nb) return SC_ERR_NOMEM;
  r->buf = nb;
  r->cap = cap;
  return SC_OK;
}

char *sc_frame_reader_take(sc_frame_reader *r) {
  size_t rest = r->len - r->start, cap = 4096;
  while (cap < rest) cap *= 2;
  char *nb = malloc(cap);
  if (!nb) return NULL;
  memcpy(nb, r->buf + r->start, rest);
  char *old = r->buf;
  r->buf = nb;
  r->cap = cap;
  r->start = 0;
  r->len = rest;
  return old;
}

/* Case-insensitive search for a header name, also one cut off by the end of
 * the data (it may be completed by the next read). Returns its offset or -1. */
static long find_header_name(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = (char)tolower((unsigned char)p[i]);
    if (c != 'c') continue;
    for (size_t k = 0; k < sizeof k_header_names / sizeof k_header_names[0]; k++) {
      const char *name = k_header_names[k];
      size_t nl = strlen(name);
      size_t avail = n - i < nl ? n - i : nl;
      if (strncasecmp(p + i, name, avail) == 0) return (long)i; /* full or partial */
    }
  }
  return -1;
}

static bool starts_with_ci(const char *p, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n >= l && strncasecmp(p, lit, l) == 0;
}

/* Parses the header block [p, p+n) (without the final blank line).
 * Returns true with *length set when it is a valid header. */
static bool parse_headers(const char *p, size_t n, size_t *length) {
  bool have_len = false;
  size_t pos = 0;
  while (pos < n) {
    const char *eol = NULL;
    for (size_t i = pos; i + 1 < n; i++)
      if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n') {
        eol = p + i;
        break;
      }
    size_t line_len = eol ? (size_t)(eol - (p + pos)) : n - pos;
    const char *line = p + pos;
    if (starts_with_ci(line, line_len, "content-length:")) {
      size_t i = strlen("content-length:");
      while (i < line_len && (line[i] == ' ' || line[i] == '\t')) i++;
      if (i == line_len) return false;
      size_t v = 0;
      for (; i < line_len && line[i] >= '0' && line[i] <= '9'; i++) {
        if (v > (SIZE_MAX - 9) / 10) return false;
        v = v * 10 + (size_t)(line[i] - '0');
      }
      while (i < line_len && (line[i] == ' ' || line[i] == '\t')) i++;
      if (i != line_len) return false;
      *length = v;
      have_len = true;
    } else {
      /* Any other header must at least look like "Name: value". */
      const char *colon = memchr(line, ':', line_len);
      if (!colon || colon == line) return false;
      for (const char *c = line; c < colon; c++)
        if (!isgraph((unsigned char)*c)) return false;
    }
    pos += line_len + 2;
  }
  return have_len;
}

static const char *find_crlfcrlf(const char *p, size_t n) {
  for (size_t i = 0; i + 3 < n; i++)
    if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
      return p + i;
  return NULL;
}

sc_status sc_frame_reader_feed(sc_frame_reader *r, const char *data, size_t len,
                               sc_frame_fn fn, void *user) {
  /* Drop the part of an oversized body that arrives now, without buffering. */
  if (r->skip_remaining > 0 && r->start == r->len) {
    size_t k = len < r->skip_remaining ? len : r->skip_remaining;
    r->skip_remaining -= k;
    data += k;
    len -= k;
  }
  if (len > 0) {
    if (reserve(r, len) != SC_OK) return SC_ERR_NOMEM;
    memcpy(r->buf + r->len, data, len);
    r->len += len;
  }

  while (!r->paused) {
    char *p = r->buf + r->start;
    size_t n = r->len - r->start;
    if (r->skip_remaining > 0) {
      size_t k = n < r->skip_remaining ? n : r->skip_remaining;
      r->skip_remaining -= k;
      r->start += k;
      if (r->skip_remaining > 0) break;
      continue;
    }
    if (r->body_needed > 0) {
      if (n < r->body_needed) break;
      size_t body = r->body_needed;
      r->body_needed = 0;
      r->start += body;
      r->messages++;
      fn(user, SC_FRAME_MESSAGE, p, body);
      continue;
    }
    if (n == 0) break;
    long at = find_header_name(p, n);
    if (at < 0) {
      /* Nothing here can start a header: all of it is garbage. */
      r->garbage_bytes += n;
      fn(user, SC_FRAME_GARBAGE, NULL, n);
      r->start = r->len;
      break;
    }
    if (at > 0) {
      r->garbage_bytes += (size_t)at;
      fn(user, SC_FRAME_GARBAGE, NULL, (size_t)at);
      r->start += (size_t)at;
      continue;
    }
    const char *end = find_crlfcrlf(p, n < MAX_HEADER_BYTES + 4 ? n : MAX_HEADER_BYTES + 4);
    if (!end) {
      if (n < MAX_HEADER_BYTES + 4) break; /* wait for the rest of the header */
      /* Too long to be a header: skip its first byte and look again. */
      r->garbage_bytes += 1;
      fn(user, SC_FRAME_GARBAGE, NULL, 1);
      r->start += 1;
      continue;
    }
    size_t header_len = (size_t)(end - p);
    size_t body_len = 0;
    if (!parse_headers(p, header_len, &body_len)) {
      r->garbage_bytes += 1;
      fn(user, SC_FRAME_GARBAGE, NULL, 1);
      r->start += 1;
      continue;
    }
    r->start += header_len + 4;
    if (body_len > r->max_message) {
      r->oversized++;
      fn(user, SC_FRAME_OVERSIZED, NULL, body_len);
      r->skip_remaining = body_len;
      continue;
    }
    if (body_len == 0) {
      r->messages++;
      fn(user, SC_FRAME_MESSAGE, "", 0);
      continue;
    }
    r->body_needed = body_len;
    if (reserve(r, 0) != SC_OK) return SC_ERR_NOMEM;
  }
  if (r->start == r->len) r->start = r->len = 0;
  return SC_OK;
}

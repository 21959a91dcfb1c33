/* http.c — the HTTP/1.1 request reader of `sculpt serve`: Debian's
 * http-parser (nodejs/http-parser 2.9) does the parsing; this adds our
 * limits (header and body sizes), keeps the one header we read
 * (Authorization) and the body, and pauses after each request so that
 * pipelined requests are answered one at a time, in order.
 * http-parser's API: /usr/include/http_parser.h (callbacks return non-zero
 * to stop with an error; http_parser_pause from a callback makes execute
 * return after the current byte with HPE_PAUSED). */
#define _POSIX_C_SOURCE 200809L
#include "net.h"

#include <http_parser.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A growable byte buffer, NUL-terminated once used. */
typedef struct buf {
  char *p;
  size_t len, cap;
} buf;

static bool buf_add(buf *b, const char *data, size_t len) {
  return sc_buf_append(&b->p, &b->len, &b->cap, 256, data, len);
}

static void buf_clear(buf *b) {
  b->len = 0;
  if (b->p) b->p[0] = '\0';
}

struct sc_http_reader {
  http_parser parser;
  http_parser_settings settings;
  size_t max_header, max_body;
  size_t header_bytes;
  buf url, field, auth, expect, body;
  bool in_value;   /* the last header callback was a value */
  bool want_value; /* the current header is Authorization, kept */
  bool want_expect; /* the current header is Expect, kept */
  bool field_long; /* the current header's name passed 64 bytes: not ours */
  bool trailers;   /* past the headers: fields now are a chunked body's
                      trailers, which must not authorize anything */
  bool complete;
  bool has_auth;
  /* The request line, watched as it arrives (see the top): started once
   * its first byte is in, done at its LF; tail keeps its last bytes. */
  bool line_started, line_done;
  unsigned char line_tail_len;
  char line_tail[16];
  int error_status;
  const char *error_why;
  sc_http_request req;
};

static sc_http_reader *reader_of(http_parser *p) { return p->data; }

static int fail(sc_http_reader *r, int status, const char *why) {
  if (!r->error_status) {
    r->error_status = status;
    r->error_why = why;
  }
  return 1;
}

static int count_header(sc_http_reader *r, size_t len) {
  r->header_bytes += len;
  if (r->header_bytes > r->max_header)
    return fail(r, 431, "the request's headers are too large");
  return 0;
}

static int on_message_begin(http_parser *p) {
  sc_http_reader *r = reader_of(p);
  r->req.started = true;
  return 0;
}

static int on_url(http_parser *p, const char *at, size_t len) {
  sc_http_reader *r = reader_of(p);
  r->req.started = true;
  if (count_header(r, len)) return 1;
  return buf_add(&r->url, at, len) ? 0 : fail(r, 400, "out of memory");
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
  sc_http_reader *r = reader_of(p);
  if (count_header(r, len)) return 1;
  if (r->trailers) return 0;
  if (r->in_value) {
    buf_clear(&r->field);
    r->field_long = false;
  }
  r->in_value = false;
  /* Only short names can be ones we keep. A longer one is remembered as
   * such: keeping just its first pieces would let "Authorization-Foo..."
   * (split across reads) pass for "Authorization". */
  if (r->field_long || r->field.len + len > 64) {
    r->field_long = true;
    return 0;
  }
  return buf_add(&r->field, at, len) ? 0 : fail(r, 400, "out of memory");
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
  sc_http_reader *r = reader_of(p);
  if (count_header(r, len)) return 1;
  if (r->trailers) return 0;
  if (!r->in_value) {
    r->in_value = true;
    r->want_value =
        !r->field_long && r->field.p && strcasecmp(r->field.p, "authorization") == 0;
    if (r->want_value) {
      /* A repeated Authorization header is ambiguous: refuse it. */
      if (r->has_auth) return fail(r, 400, "more than one Authorization header");
      r->has_auth = true;
      buf_clear(&r->auth);
      if (!buf_add(&r->auth, "", 0)) return fail(r, 400, "out of memory");
    }
    r->want_expect = !r->field_long && r->field.p && strcasecmp(r->field.p, "expect") == 0;
  }
  if (r->want_value && !buf_add(&r->auth, at, len)) return fail(r, 400, "out of memory");
  /* The only expectation there is fits in 32 bytes; more is not it. */
  if (r->want_expect && r->expect.len + len < 32 && !buf_add(&r->expect, at, len))
    return fail(r, 400, "out of memory");
  return 0;
}

static int on_headers_complete(http_parser *p) {
  sc_http_reader *r = reader_of(p);
  r->trailers = true;
  /* From this callback 1 and 2 mean "no body" to http-parser, not an error:
   * an error must be another non-zero value. */
  if (p->http_major != 1 || p->http_minor > 1) {
    fail(r, 505, "only HTTP/1.0 and HTTP/1.1 are spoken here");
    return -1;
  }
  /* content_length is ULLONG_MAX when absent (chunked or no body). */
  if (p->content_length != (uint64_t)-1 && p->content_length > r->max_body) {
    fail(r, 413, "the request body is too large");
    return -1;
  }
  /* Only HTTP/1.1 has 100 (Continue); a 1.0 client sends the body anyway. */
  if (p->http_minor >= 1 && r->expect.p) {
    const char *v = r->expect.p;
    size_t n = r->expect.len;
    while (n && (*v == ' ' || *v == '\t')) v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
    r->req.expect_continue = n == 12 && strncasecmp(v, "100-continue", 12) == 0;
  }
  return 0;
}

static int on_body(http_parser *p, const char *at, size_t len) {
  sc_http_reader *r = reader_of(p);
  if (r->body.len + len > r->max_body) return fail(r, 413, "the request body is too large");
  return buf_add(&r->body, at, len) ? 0 : fail(r, 400, "out of memory");
}

static int on_message_complete(http_parser *p) {
  sc_http_reader *r = reader_of(p);
  r->complete = true;
  http_parser_pause(p, 1);
  return 0;
}

sc_http_reader *sc_http_reader_new(size_t max_header, size_t max_body) {
  sc_http_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->max_header = max_header;
  r->max_body = max_body;
  http_parser_settings_init(&r->settings);
  r->settings.on_message_begin = on_message_begin;
  r->settings.on_url = on_url;
  r->settings.on_header_field = on_header_field;
  r->settings.on_header_value = on_header_value;
  r->settings.on_headers_complete = on_headers_complete;
  r->settings.on_body = on_body;
  r->settings.on_message_complete = on_message_complete;
  http_parser_init(&r->parser, HTTP_REQUEST);
  r->parser.data = r;
  return r;
}

void sc_http_reader_free(sc_http_reader *r) {
  if (!r) return;
  free(r->url.p);
  free(r->field.p);
  free(r->auth.p);
  free(r->expect.p);
  free(r->body.p);
  free(r);
}

void sc_http_reader_next(sc_http_reader *r) {
  buf_clear(&r->url);
  buf_clear(&r->field);
  buf_clear(&r->auth);
  buf_clear(&r->expect);
  buf_clear(&r->body);
  r->header_bytes = 0;
  r->in_value = r->want_value = r->want_expect = r->field_long = r->trailers = r->complete =
      r->has_auth = r->line_started = r->line_done = false;
  r->line_tail_len = 0;
  memset(&r->req, 0, sizeof r->req);
  if (HTTP_PARSER_ERRNO(&r->parser) == HPE_PAUSED) http_parser_pause(&r->parser, 0);
}

char *sc_http_reader_take_body(sc_http_reader *r, size_t *len) {
  char *p = r->body.len ? r->body.p : NULL;
  *len = p ? r->body.len : 0;
  if (p) memset(&r->body, 0, sizeof r->body);
  r->req.body = "";
  r->req.body_len = 0;
  return p;
}

static void fill_request(sc_http_reader *r) {
  sc_http_request *q = &r->req;
  q->method = http_method_str((enum http_method)r->parser.method);
  /* The path: the URL up to its query or fragment. */
  if (!buf_add(&r->url, "", 0)) {
    q->path = "";
  } else {
    r->url.p[strcspn(r->url.p, "?#")] = '\0';
    q->path = r->url.p;
  }
  q->authorization = r->has_auth ? (r->auth.p ? r->auth.p : "") : NULL;
  q->body = r->body.p ? r->body.p : "";
  q->body_len = r->body.len;
  /* An upgrade (e.g. WebSocket) is not ours to speak: close after. */
  q->keep_alive = http_should_keep_alive(&r->parser) && !r->parser.upgrade;
  q->http10 = r->parser.http_major == 1 && r->parser.http_minor == 0;
}

/* Watches the request line in data[0..len) (bytes http-parser accepted);
 * at its end, fails the request unless it names HTTP/1.0 or 1.1. Empty
 * lines before a request are skipped, as http-parser skips them. */
static void watch_request_line(sc_http_reader *r, const char *data, size_t len) {
  for (size_t i = 0; i < len && !r->line_done; i++) {
    char ch = data[i];
    if (!r->line_started) {
      if (ch == '\r' || ch == '\n') continue;
      r->line_started = true;
    }
    if (ch != '\n') {
      if (r->line_tail_len == sizeof r->line_tail) {
        memmove(r->line_tail, r->line_tail + 1, sizeof r->line_tail - 1);
        r->line_tail_len--;
      }
      r->line_tail[r->line_tail_len++] = ch;
      continue;
    }
    r->line_done = true;
    const char *t = r->line_tail;
    size_t n = r->line_tail_len;
    if (n && t[n - 1] == '\r') n--;
    /* " HTTP/d.d" ends the line of every version there is. */
    bool versioned = n >= 9 && memcmp(t + n - 9, " HTTP/", 6) == 0 &&
                     t[n - 3] >= '0' && t[n - 3] <= '9' && t[n - 2] == '.' &&
                     t[n - 1] >= '0' && t[n - 1] <= '9';
    if (!versioned)
      fail(r, 400, "the request line has no HTTP version (HTTP/0.9 is not spoken here)");
    else if (t[n - 3] != '1' || (t[n - 1] != '0' && t[n - 1] != '1'))
      fail(r, 505, "only HTTP/1.0 and HTTP/1.1 are spoken here");
  }
}

/* What went wrong, in the request's terms. http_parser keeps a chunk's
 * size in its content_length and so reports a chunk size past 2^64 as
 * HPE_INVALID_CONTENT_LENGTH, "invalid character in content-length header"
 * (http_parser.c, s_chunk_size), which named a header the request never
 * sent. */
static const char *error_cause(const http_parser *p, enum http_errno e) {
  switch (e) {
  case HPE_INVALID_CONTENT_LENGTH:
    return (p->flags & F_CHUNKED)
               ? "a chunk size of the chunked body is too large"
               : "the Content-Length header is not a number, is too large or is repeated";
  case HPE_INVALID_CHUNK_SIZE:
    return "a chunk size of the chunked body is not a hexadecimal number";
  case HPE_UNEXPECTED_CONTENT_LENGTH:
    return "the request has both Content-Length and Transfer-Encoding: chunked";
  default:
    return http_errno_description(e);
  }
}

sc_http_feed sc_http_reader_feed(sc_http_reader *r, const char *data, size_t len,
                                 size_t *used) {
  *used = 0;
  if (r->error_status) return SC_HTTP_ERROR;
  if (r->complete) return SC_HTTP_REQUEST;
  size_t n = http_parser_execute(&r->parser, &r->settings, data, len);
  enum http_errno e = HTTP_PARSER_ERRNO(&r->parser);
  *used = n > len ? len : n;
  if (r->error_status) return SC_HTTP_ERROR;
  if (e == HPE_OK || e == HPE_PAUSED) {
    watch_request_line(r, data, *used);
    if (r->error_status) return SC_HTTP_ERROR;
  }
  if (r->complete) {
    fill_request(r);
    return SC_HTTP_REQUEST;
  }
  if (e == HPE_HEADER_OVERFLOW) {
    fail(r, 431, "the request's headers are too large");
    return SC_HTTP_ERROR;
  }
  if (e != HPE_OK) {
    fail(r, 400, error_cause(&r->parser, e));
    return SC_HTTP_ERROR;
  }
  if (len == 0 && r->req.started) {
    fail(r, 400, "the connection closed inside a request");
    return SC_HTTP_ERROR;
  }
  return SC_HTTP_MORE;
}

const sc_http_request *sc_http_reader_request(const sc_http_reader *r) { return &r->req; }

int sc_http_reader_error(const sc_http_reader *r, const char **why) {
  if (why) *why = r->error_why ? r->error_why : "bad request";
  return r->error_status ? r->error_status : 400;
}

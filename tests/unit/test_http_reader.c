/* test_http_reader.c — the HTTP request reader of `sculpt serve`
 * (net/http.c): a request split at every byte parses the same; pipelined
 * requests come one at a time; limits give 431/413; versions other than
 * HTTP/1.0 and 1.1 and duplicate Content-Length headers are refused as soon
 * as they are seen; a body handed over (take_body) leaves the reader whole
 * for the next request; and random bytes or mutated requests never crash it (a
 * small in-process fuzz). */
#define _POSIX_C_SOURCE 200809L
#include "net.h"
#include "sc_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char k_req[] =
    "POST /v1/fim/completions?x=1 HTTP/1.1\r\nHost: a\r\nauthorization: Bearer t0k\r\n"
    "Content-Length: 11\r\n\r\n{\"prompt\":1}";

static void test_split_everywhere(void) {
  size_t len = strlen(k_req) - 1; /* the body is 11 bytes: drop the last '}' */
  for (size_t cut = 0; cut <= len; cut++) {
    sc_http_reader *r = sc_http_reader_new(16384, 1 << 20);
    REQUIRE(r);
    size_t used = 0;
    sc_http_feed f = SC_HTTP_MORE;
    if (cut > 0) f = sc_http_reader_feed(r, k_req, cut, &used);
    if (f == SC_HTTP_MORE) f = sc_http_reader_feed(r, k_req + cut, len - cut, &used);
    EXPECTF(f == SC_HTTP_REQUEST, "cut at %zu", cut);
    const sc_http_request *q = sc_http_reader_request(r);
    if (f == SC_HTTP_REQUEST) {
      EXPECT_STREQ(q->method, "POST");
      EXPECT_STREQ(q->path, "/v1/fim/completions");
      EXPECT(q->authorization && strcmp(q->authorization, "Bearer t0k") == 0);
      EXPECT(q->body_len == 11 && memcmp(q->body, "{\"prompt\":1", 11) == 0);
      EXPECT(q->keep_alive);
    }
    sc_http_reader_free(r);
  }
}

static void test_pipelined_and_limits(void) {
  const char two[] = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: close\r\n\r\n";
  sc_http_reader *r = sc_http_reader_new(16384, 100);
  REQUIRE(r);
  size_t used = 0, len = strlen(two);
  REQUIRE(sc_http_reader_feed(r, two, len, &used) == SC_HTTP_REQUEST);
  EXPECT_STREQ(sc_http_reader_request(r)->path, "/a");
  EXPECT(used < len && sc_http_reader_request(r)->authorization == NULL);
  sc_http_reader_next(r);
  size_t used2 = 0;
  REQUIRE(sc_http_reader_feed(r, two + used, len - used, &used2) == SC_HTTP_REQUEST);
  EXPECT_STREQ(sc_http_reader_request(r)->path, "/b");
  EXPECT(!sc_http_reader_request(r)->keep_alive && used + used2 == len);
  sc_http_reader_free(r);

  r = sc_http_reader_new(64, 100);
  char big[256];
  snprintf(big, sizeof big, "GET /%0100d HTTP/1.1\r\n\r\n", 7);
  EXPECT(sc_http_reader_feed(r, big, strlen(big), &used) == SC_HTTP_ERROR);
  EXPECT(sc_http_reader_error(r, NULL) == 431);
  sc_http_reader_free(r);
  r = sc_http_reader_new(16384, 100);
  const char body[] = "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
  EXPECT(sc_http_reader_feed(r, body, strlen(body), &used) == SC_HTTP_ERROR);
  EXPECT(sc_http_reader_error(r, NULL) == 413);
  sc_http_reader_free(r);
  r = sc_http_reader_new(16384, 100);
  const char *why = NULL;
  EXPECT(sc_http_reader_feed(r, "GARBAGE\r\n\r\n", 11, &used) == SC_HTTP_ERROR);
  EXPECT(sc_http_reader_error(r, &why) == 400 && why && why[0]);
  sc_http_reader_free(r);
  /* A request cut by the peer's close is an error; nothing at all is not. */
  r = sc_http_reader_new(16384, 100);
  EXPECT(sc_http_reader_feed(r, "GET / HT", 8, &used) == SC_HTTP_MORE);
  EXPECT(sc_http_reader_request(r)->started);
  EXPECT(sc_http_reader_feed(r, "", 0, &used) == SC_HTTP_ERROR);
  sc_http_reader_free(r);
}

/* A header whose long name begins with "Authorization" is not the
 * Authorization header, also when its name arrives in pieces; nor is a
 * trailer; HTTP/1.0 is told apart. */
static void test_long_header_name(void) {
  const char *parts[] = {"GET / HTTP/1.1\r\nAuthorization",
                         "-And-A-Long-Tail-That-Passes-Sixty-Four-Bytes-Of-Name-xxxxxxxxxxxxx",
                         ": Bearer t0k\r\n\r\n"};
  sc_http_reader *r = sc_http_reader_new(16384, 100);
  REQUIRE(r);
  sc_http_feed f = SC_HTTP_MORE;
  for (size_t i = 0; i < 3 && f == SC_HTTP_MORE; i++) {
    size_t used = 0;
    f = sc_http_reader_feed(r, parts[i], strlen(parts[i]), &used);
    EXPECT(used == strlen(parts[i]));
  }
  REQUIRE(f == SC_HTTP_REQUEST);
  EXPECT(sc_http_reader_request(r)->authorization == NULL);
  /* The next request's real one is still found. */
  sc_http_reader_next(r);
  const char real[] = "GET / HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n";
  size_t used = 0;
  REQUIRE(sc_http_reader_feed(r, real, strlen(real), &used) == SC_HTTP_REQUEST);
  EXPECT(sc_http_reader_request(r)->authorization &&
         strcmp(sc_http_reader_request(r)->authorization, "Bearer x") == 0);
  EXPECT(!sc_http_reader_request(r)->http10);
  sc_http_reader_next(r);
  /* HTTP/1.0 is told apart (keep-alive only when asked for). */
  const char old[] = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  REQUIRE(sc_http_reader_feed(r, old, strlen(old), &used) == SC_HTTP_REQUEST);
  EXPECT(sc_http_reader_request(r)->http10 && sc_http_reader_request(r)->keep_alive);
  sc_http_reader_next(r);
  /* A chunked body's trailer is not a header: no Authorization from it. */
  const char trailer[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "2\r\n{}\r\n0\r\nAuthorization: Bearer x\r\n\r\n";
  REQUIRE(sc_http_reader_feed(r, trailer, strlen(trailer), &used) == SC_HTTP_REQUEST);
  EXPECT(sc_http_reader_request(r)->authorization == NULL);
  EXPECT(sc_http_reader_request(r)->body_len == 2);
  sc_http_reader_free(r);
}

/* Expect: 100-continue is reported once the headers are in, before the
 * body; not for HTTP/1.0 and not for other expectations. */
static void test_expect_continue(void) {
  sc_http_reader *r = sc_http_reader_new(16384, 100);
  REQUIRE(r);
  const char head[] = "POST /v1/fim/completions HTTP/1.1\r\nExpect:  100-Continue \r\n"
                      "Content-Length: 2\r\n\r\n";
  size_t used = 0;
  EXPECT(sc_http_reader_feed(r, head, strlen(head), &used) == SC_HTTP_MORE);
  EXPECT(sc_http_reader_request(r)->expect_continue);
  EXPECT(sc_http_reader_feed(r, "{}", 2, &used) == SC_HTTP_REQUEST && used == 2);
  sc_http_reader_next(r);
  EXPECT(!sc_http_reader_request(r)->expect_continue);
  const char part[] = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n";
  EXPECT(sc_http_reader_feed(r, part, strlen(part), &used) == SC_HTTP_MORE);
  EXPECT(!sc_http_reader_request(r)->expect_continue); /* headers not finished */
  EXPECT(sc_http_reader_feed(r, "\r\n{}", 4, &used) == SC_HTTP_REQUEST);
  sc_http_reader_next(r);
  const char *no[] = {"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
                      "POST / HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n",
                      "POST / HTTP/1.1\r\nX-Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"};
  for (size_t i = 0; i < 3; i++) {
    EXPECT(sc_http_reader_feed(r, no[i], strlen(no[i]), &used) == SC_HTTP_MORE);
    EXPECTF(!sc_http_reader_request(r)->expect_continue, "case %zu", i);
    EXPECT(sc_http_reader_feed(r, "{}", 2, &used) == SC_HTTP_REQUEST);
    sc_http_reader_next(r);
  }
  sc_http_reader_free(r);
}

/* Feeds text whole, then split at every byte; the first result that is not
 * SC_HTTP_MORE must be want (with status when an error). */
static void expect_feed(const char *text, sc_http_feed want, int status) {
  size_t len = strlen(text);
  for (size_t cut = 0; cut <= len; cut++) {
    sc_http_reader *r = sc_http_reader_new(16384, 1 << 20);
    REQUIRE(r);
    size_t used = 0;
    sc_http_feed f = sc_http_reader_feed(r, text, cut, &used);
    /* (A feed of 0 bytes would be the peer's close.) */
    if (f == SC_HTTP_MORE && len > used)
      f = sc_http_reader_feed(r, text + used, len - used, &used);
    EXPECTF(f == want, "%.24s... cut at %zu: %d", text, cut, (int)f);
    if (f == SC_HTTP_ERROR && want == SC_HTTP_ERROR)
      EXPECTF(sc_http_reader_error(r, NULL) == status, "%.24s...: status %d", text,
              sc_http_reader_error(r, NULL));
    sc_http_reader_free(r);
  }
}

/* Only HTTP/1.0 and 1.1, decided at the end of the request line: a 0.9
 * line (no version) is a 400 at once, not a wait for headers that never
 * come; 1.5 and 2.0 are 505 before their headers are in. Duplicate
 * Content-Length headers are a 400, conflicting or not. */
static void test_versions_and_lengths(void) {
  expect_feed("GET /health\r\n", SC_HTTP_ERROR, 400);
  expect_feed("GET /health\n", SC_HTTP_ERROR, 400);
  expect_feed("GET / HTTP/1.5\r\n", SC_HTTP_ERROR, 505);
  expect_feed("GET / HTTP/1.5\r\nHost: x\r\n\r\n", SC_HTTP_ERROR, 505);
  expect_feed("GET / HTTP/2.0\r\n", SC_HTTP_ERROR, 505);
  expect_feed("GET / HTTP/0.9\r\n", SC_HTTP_ERROR, 505);
  expect_feed("GET / HTTP/1.1\r\nHost: x\r\n", SC_HTTP_MORE, 0);
  expect_feed("\r\n\r\nGET / HTTP/1.1\r\n\r\n", SC_HTTP_REQUEST, 0);
  expect_feed("GET / HTTP/1.0\r\n\r\n", SC_HTTP_REQUEST, 0);
  expect_feed("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}",
              SC_HTTP_ERROR, 400);
  expect_feed("POST / HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n{}",
              SC_HTTP_ERROR, 400);
  /* The line of the next pipelined request is checked as well. */
  sc_http_reader *r = sc_http_reader_new(16384, 100);
  REQUIRE(r);
  const char two[] = "GET /a HTTP/1.1\r\n\r\nGET /b\r\n";
  size_t used = 0, len = strlen(two);
  REQUIRE(sc_http_reader_feed(r, two, len, &used) == SC_HTTP_REQUEST);
  sc_http_reader_next(r);
  EXPECT(sc_http_reader_feed(r, two + used, len - used, &used) == SC_HTTP_ERROR);
  EXPECT(sc_http_reader_error(r, NULL) == 400);
  sc_http_reader_free(r);
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* serve's intake takes a long body instead of copying it: the caller owns
 * it, the request's body reads empty after, and the next request, with a
 * body or without, is read into a new buffer. */
static void test_take_body(void) {
  const char two[] = "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                     "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                     "GET /c HTTP/1.1\r\n\r\n";
  sc_http_reader *r = sc_http_reader_new(16384, 100);
  REQUIRE(r);
  size_t used = 0, off = 0, len = strlen(two), n = 99;
  REQUIRE(sc_http_reader_feed(r, two, len, &used) == SC_HTTP_REQUEST);
  off += used;
  char *b = sc_http_reader_take_body(r, &n);
  EXPECT(b && n == 5 && memcmp(b, "hello", 6) == 0); /* NUL-terminated */
  EXPECT(sc_http_reader_request(r)->body_len == 0 && *sc_http_reader_request(r)->body == '\0');
  size_t n2 = 99;
  EXPECT(sc_http_reader_take_body(r, &n2) == NULL && n2 == 0); /* taken already */
  sc_http_reader_next(r);
  REQUIRE(sc_http_reader_feed(r, two + off, len - off, &used) == SC_HTTP_REQUEST);
  off += used;
  const sc_http_request *q = sc_http_reader_request(r);
  EXPECT_STREQ(q->path, "/b");
  EXPECT(q->body_len == 3 && strcmp(q->body, "abc") == 0);
  EXPECT(memcmp(b, "hello", 6) == 0); /* the taken body is the caller's */
  free(b);
  sc_http_reader_next(r);
  REQUIRE(sc_http_reader_feed(r, two + off, len - off, &used) == SC_HTTP_REQUEST);
  EXPECT(sc_http_reader_take_body(r, &n) == NULL && n == 0); /* no body */
  sc_http_reader_free(r);
}

static void test_random_bytes(void) {
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  unsigned char buf[512];
  int requests = 0;
  for (int iter = 0; iter < 4000; iter++) {
    size_t n;
    if (iter % 2) {
      n = 1 + next_rand(&seed) % sizeof buf;
      for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)next_rand(&seed);
    } else {
      n = strlen(k_req);
      memcpy(buf, k_req, n);
      for (int k = 0; k < 1 + (int)(next_rand(&seed) % 4); k++)
        buf[next_rand(&seed) % n] = (unsigned char)next_rand(&seed);
    }
    sc_http_reader *r = sc_http_reader_new(256, 64);
    REQUIRE(r);
    size_t off = 0;
    /* Fed in random pieces, answering requests as they complete. */
    for (int guard = 0; off < n && guard < 1000; guard++) {
      size_t piece = 1 + next_rand(&seed) % (n - off), used = 0;
      sc_http_feed f = sc_http_reader_feed(r, (const char *)buf + off, piece, &used);
      EXPECT(used <= piece);
      off += used;
      if (f == SC_HTTP_ERROR) {
        int st = sc_http_reader_error(r, NULL);
        EXPECT(st == 400 || st == 413 || st == 431 || st == 505);
        break;
      }
      if (f == SC_HTTP_REQUEST) {
        const sc_http_request *q = sc_http_reader_request(r);
        EXPECT(q->method && q->path && q->body && q->body_len <= 64);
        requests++;
        if (!q->keep_alive) break;
        sc_http_reader_next(r);
      }
    }
    sc_http_reader_free(r);
  }
  EXPECT(requests > 0); /* some mutations still parse */
}

int main(void) {
  RUN(test_split_everywhere);
  RUN(test_pipelined_and_limits);
  RUN(test_long_header_name);
  RUN(test_versions_and_lengths);
  RUN(test_expect_continue);
  RUN(test_take_body);
  RUN(test_random_bytes);
  TEST_MAIN_END();
}

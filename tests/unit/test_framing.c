/* test_framing.c — the Content-Length reader: split, merged, oversized,
 * garbage. Each case feeds a byte stream in a chosen split and compares the
 * bodies that come out with the bodies that went in. */
#include "lsp_impl.h"
#include "sc_test.h"

#include <stdlib.h>

typedef struct collected {
  char bodies[64][256];
  size_t lens[64];
  int n;
  size_t garbage, oversized;
} collected;

static void collect(void *user, sc_frame_event ev, const char *body, size_t len) {
  collected *c = user;
  if (ev == SC_FRAME_GARBAGE) c->garbage += len;
  else if (ev == SC_FRAME_OVERSIZED) c->oversized++;
  else if (c->n < 64 && len < 256) {
    memcpy(c->bodies[c->n], body, len);
    c->bodies[c->n][len] = '\0';
    c->lens[c->n++] = len;
  }
}

static size_t frame(char *out, const char *body) {
  return (size_t)sprintf(out, "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
}

/* Feeds stream in chunks of `chunk` bytes (0 = all at once). */
static void feed_split(sc_frame_reader *r, const char *stream, size_t len, size_t chunk,
                       collected *c) {
  if (chunk == 0) chunk = len ? len : 1;
  for (size_t i = 0; i < len; i += chunk) {
    size_t k = len - i < chunk ? len - i : chunk;
    EXPECT(sc_frame_reader_feed(r, stream + i, k, collect, c) == SC_OK);
  }
}

static void test_split_and_merged(void) {
  const char *bodies[] = {"{\"a\":1}", "{}", "{\"text\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}",
                          "[1,2,3]"};
  char stream[1024];
  size_t len = 0;
  for (int i = 0; i < 4; i++) len += frame(stream + len, bodies[i]);
  size_t chunks[] = {0, 1, 2, 3, 7, 16, 1000};
  for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
    sc_frame_reader r;
    sc_frame_reader_init(&r, 1024);
    collected c = {0};
    feed_split(&r, stream, len, chunks[ci], &c);
    EXPECTF(c.n == 4, "chunk %zu: %d messages", chunks[ci], c.n);
    for (int i = 0; i < c.n && i < 4; i++) EXPECT_STREQ(c.bodies[i], bodies[i]);
    EXPECT(c.garbage == 0);
    sc_frame_reader_free(&r);
  }
}

static void test_content_type_and_case(void) {
  const char *stream =
      "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
      "Content-Length: 2\r\n\r\n{}"
      "content-length: 3\r\n\r\n[1]";
  sc_frame_reader r;
  sc_frame_reader_init(&r, 1024);
  collected c = {0};
  feed_split(&r, stream, strlen(stream), 5, &c);
  EXPECT(c.n == 2);
  EXPECT_STREQ(c.bodies[0], "{}");
  EXPECT_STREQ(c.bodies[1], "[1]");
  EXPECT(c.garbage == 0);
  sc_frame_reader_free(&r);
}

static void test_garbage(void) {
  char stream[2048];
  size_t len = 0;
  len += (size_t)sprintf(stream + len, "hello world\r\n\r\n");
  len += frame(stream + len, "{\"n\":1}");
  len += (size_t)sprintf(stream + len, "Content-Length: abc\r\n\r\n");
  len += (size_t)sprintf(stream + len, "Content-Len");  /* a cut-off header */
  len += (size_t)sprintf(stream + len, "\x01\x02\xff garbage");
  len += frame(stream + len, "{\"n\":2}");
  len += (size_t)sprintf(stream + len, "X-Bogus\r\nContent-Length: 2\r\n\r\n{}");
  len += frame(stream + len, "{\"n\":3}");
  size_t chunks[] = {0, 1, 4, 9};
  for (size_t ci = 0; ci < 4; ci++) {
    sc_frame_reader r;
    sc_frame_reader_init(&r, 1024);
    collected c = {0};
    feed_split(&r, stream, len, chunks[ci], &c);
    /* The bogus header line is garbage; the Content-Length after it is a
     * valid header of its own, so {} is delivered. */
    EXPECTF(c.n == 4, "chunk %zu: %d messages", chunks[ci], c.n);
    if (c.n == 4) {
      EXPECT_STREQ(c.bodies[0], "{\"n\":1}");
      EXPECT_STREQ(c.bodies[1], "{\"n\":2}");
      EXPECT_STREQ(c.bodies[2], "{}");
      EXPECT_STREQ(c.bodies[3], "{\"n\":3}");
    }
    EXPECT(c.garbage > 0);
    sc_frame_reader_free(&r);
  }
}

static void test_oversized(void) {
  /* 100 bytes over a 64-byte limit, split so the body spans several feeds. */
  char big[128];
  memset(big, 'x', 100);
  big[100] = '\0';
  char stream[1024];
  size_t len = 0;
  len += frame(stream + len, "{\"before\":1}");
  len += frame(stream + len, big);
  len += frame(stream + len, "{\"after\":1}");
  size_t chunks[] = {0, 1, 13};
  for (size_t ci = 0; ci < 3; ci++) {
    sc_frame_reader r;
    sc_frame_reader_init(&r, 64);
    collected c = {0};
    feed_split(&r, stream, len, chunks[ci], &c);
    EXPECTF(c.n == 2, "chunk %zu: %d messages", chunks[ci], c.n);
    EXPECT(c.oversized == 1);
    EXPECT(c.garbage == 0);
    if (c.n == 2) EXPECT_STREQ(c.bodies[1], "{\"after\":1}");
    sc_frame_reader_free(&r);
  }
}

static void test_oversized_not_buffered(void) {
  /* A 16 MiB body over a 1 KiB limit, fed in 64 KiB reads as a pipe would:
   * it is dropped as it arrives, never held whole. */
  size_t body = 16u << 20, chunk = 65536;
  char *buf = malloc(chunk);
  memset(buf, 'x', chunk);
  sc_frame_reader r;
  sc_frame_reader_init(&r, 1024);
  collected c = {0};
  char head[64];
  size_t hl = (size_t)sprintf(head, "Content-Length: %zu\r\n\r\n", body);
  sc_frame_reader_feed(&r, head, hl, collect, &c);
  size_t max_cap = 0;
  for (size_t sent = 0; sent < body; sent += chunk) {
    sc_frame_reader_feed(&r, buf, chunk, collect, &c);
    if (r.cap > max_cap) max_cap = r.cap;
  }
  char tail[64];
  size_t tl = frame(tail, "{\"after\":1}");
  sc_frame_reader_feed(&r, tail, tl, collect, &c);
  EXPECT(c.oversized == 1);
  EXPECT(c.n == 1);
  EXPECTF(max_cap <= 4 * chunk, "buffer grew to %zu", max_cap);
  free(buf);
  sc_frame_reader_free(&r);
}

static void test_huge_length_and_header(void) {
  /* A length that overflows size_t, and a header that never ends. */
  const char *s1 = "Content-Length: 99999999999999999999999999\r\n\r\n";
  sc_frame_reader r;
  sc_frame_reader_init(&r, 1024);
  collected c = {0};
  feed_split(&r, s1, strlen(s1), 0, &c);
  EXPECT(c.n == 0);
  char *endless = malloc(20000);
  memcpy(endless, "Content-Length: 5", 17);
  memset(endless + 17, ' ', 20000 - 17);
  feed_split(&r, endless, 20000, 1000, &c);
  char tail[64];
  size_t tl = frame(tail, "{\"ok\":1}");
  feed_split(&r, tail, tl, 0, &c);
  EXPECT(c.n == 1);
  if (c.n == 1) EXPECT_STREQ(c.bodies[0], "{\"ok\":1}");
  free(endless);
  sc_frame_reader_free(&r);
}

static void test_random_splits(void) {
  /* Many random messages with random garbage between, random chunking. */
  srand(1234);
  for (int round = 0; round < 200; round++) {
    char stream[8192];
    size_t len = 0;
    char expected[16][64];
    int n = 1 + rand() % 15;
    for (int i = 0; i < n; i++) {
      sprintf(expected[i], "{\"i\":%d,\"r\":%d}", i, rand());
      if (rand() % 3 == 0) {
        int g = rand() % 20;
        for (int k = 0; k < g; k++) stream[len++] = (char)("ab \r\n{}:0"[rand() % 9]);
      }
      len += frame(stream + len, expected[i]);
    }
    sc_frame_reader r;
    sc_frame_reader_init(&r, 4096);
    collected c = {0};
    size_t pos = 0;
    while (pos < len) {
      size_t k = 1 + (size_t)rand() % 40;
      if (k > len - pos) k = len - pos;
      sc_frame_reader_feed(&r, stream + pos, k, collect, &c);
      pos += k;
    }
    EXPECTF(c.n == n, "round %d: %d of %d", round, c.n, n);
    for (int i = 0; i < c.n && i < n; i++) EXPECT_STREQ(c.bodies[i], expected[i]);
    sc_frame_reader_free(&r);
  }
}

/* A callback that pauses the reader after each body: the server does so
 * while it parses a long one elsewhere. */
typedef struct pausing {
  collected c;
  sc_frame_reader *r;
} pausing;

static void collect_and_pause(void *user, sc_frame_event ev, const char *body, size_t len) {
  pausing *p = user;
  collect(&p->c, ev, body, len);
  if (ev == SC_FRAME_MESSAGE) p->r->paused = true;
}

static void test_paused(void) {
  const char *bodies[] = {"{\"a\":1}", "{}", "[1,2,3]"};
  char stream[512];
  size_t len = 0;
  for (int i = 0; i < 3; i++) len += frame(stream + len, bodies[i]);
  size_t half = len / 2;
  sc_frame_reader r;
  sc_frame_reader_init(&r, 1024);
  pausing p = {.r = &r};
  /* The first body pauses it: the rest of the data waits, and so does what
   * is fed while paused. */
  EXPECT(sc_frame_reader_feed(&r, stream, half, collect_and_pause, &p) == SC_OK);
  EXPECT(p.c.n == 1);
  EXPECT(sc_frame_reader_feed(&r, stream + half, len - half, collect_and_pause, &p) == SC_OK);
  EXPECT(p.c.n == 1);
  /* Cleared, a feed without data delivers the next one, in order. */
  for (int want = 2; want <= 3; want++) {
    r.paused = false;
    EXPECT(sc_frame_reader_feed(&r, NULL, 0, collect_and_pause, &p) == SC_OK);
    EXPECTF(p.c.n == want, "%d messages after resuming, want %d", p.c.n, want);
  }
  for (int i = 0; i < p.c.n; i++) EXPECT_STREQ(p.c.bodies[i], bodies[i]);
  r.paused = false;
  EXPECT(sc_frame_reader_feed(&r, NULL, 0, collect_and_pause, &p) == SC_OK);
  EXPECT(p.c.n == 3 && p.c.garbage == 0);
  sc_frame_reader_free(&r);
}

/* The LSP takes a long body with the reader's buffer instead of copying
 * it: the body stays readable in the buffer taken, and the frames after
 * it come from the new buffer, in order, whole. */
typedef struct taking {
  sc_frame_reader *r;
  char *taken[4];
  const char *body[4];
  size_t len[4];
  int n;
} taking;

static void take_each(void *user, sc_frame_event ev, const char *body, size_t len) {
  taking *t = user;
  if (ev != SC_FRAME_MESSAGE || t->n >= 4) return;
  t->body[t->n] = body;
  t->len[t->n] = len;
  t->taken[t->n] = sc_frame_reader_take(t->r);
  t->n++;
}

static void test_take(void) {
  const char *bodies[] = {"{\"first\":1}", "[2]", "{\"third\":[3,3,3]}"};
  char stream[512];
  size_t len = 0;
  for (int i = 0; i < 3; i++) len += frame(stream + len, bodies[i]);
  sc_frame_reader r;
  sc_frame_reader_init(&r, 1024);
  taking t = {.r = &r};
  /* All three in one feed, the last cut: each delivered from a buffer the
   * one before handed over. */
  EXPECT(sc_frame_reader_feed(&r, stream, len - 3, take_each, &t) == SC_OK);
  EXPECT(t.n == 2);
  EXPECT(sc_frame_reader_feed(&r, stream + len - 3, 3, take_each, &t) == SC_OK);
  REQUIRE(t.n == 3);
  for (int i = 0; i < 3; i++) {
    EXPECT(t.taken[i] != NULL);
    EXPECTF(t.len[i] == strlen(bodies[i]) && memcmp(t.body[i], bodies[i], t.len[i]) == 0,
            "body %d", i);
    free(t.taken[i]);
  }
  EXPECT(r.start == r.len);
  sc_frame_reader_free(&r);
}

int main(void) {
  RUN(test_split_and_merged);
  RUN(test_content_type_and_case);
  RUN(test_garbage);
  RUN(test_oversized);
  RUN(test_oversized_not_buffered);
  RUN(test_huge_length_and_header);
  RUN(test_random_splits);
  RUN(test_paused);
  RUN(test_take);
  TEST_MAIN_END();
}

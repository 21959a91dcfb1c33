/* common/: the write queue both event loops (stdio, HTTP) send from, the
 * growable string the HTTP reader and the FIM client collect bodies in, and
 * the long-text hash of the LSP's suggestion cache. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "sc_test.h"
#include "sculpt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void test_queue_append(void) {
  char *buf = NULL;
  size_t start = 0, len = 0, cap = 0;
  /* Grows from the first capacity, doubling. */
  EXPECT(sc_queue_append(&buf, &start, &len, &cap, 8, "abcdef", 6));
  EXPECT(cap == 8 && len == 6 && memcmp(buf, "abcdef", 6) == 0);
  EXPECT(sc_queue_append(&buf, &start, &len, &cap, 8, "ghijklmnop", 10));
  EXPECTF(cap == 16 && len == 16 && memcmp(buf, "abcdefghijklmnop", 16) == 0, "cap %zu", cap);
  /* Sent bytes at the front make room before the buffer grows. */
  start = 12; /* "abcdefghijkl" went out */
  EXPECT(sc_queue_append(&buf, &start, &len, &cap, 8, "QRS", 3));
  EXPECTF(cap == 16 && start == 0 && len == 7 && memcmp(buf, "mnopQRS", 7) == 0,
          "cap %zu start %zu len %zu", cap, start, len);
  /* Nothing to add is fine, and keeps the pending bytes. */
  EXPECT(sc_queue_append(&buf, &start, &len, &cap, 8, NULL, 0) && len == 7);
  /* A big append after partial sends: compacts, then grows enough. */
  start = 3;
  char big[100];
  memset(big, 'x', sizeof big);
  EXPECT(sc_queue_append(&buf, &start, &len, &cap, 8, big, sizeof big));
  EXPECTF(cap == 128 && start == 0 && len == 104 && memcmp(buf, "pQRS", 4) == 0 &&
              buf[103] == 'x',
          "cap %zu len %zu", cap, len);
  free(buf);
}

static void test_buf_append(void) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  /* NUL-terminated from the first append: room for it counts. */
  EXPECT(sc_buf_append(&buf, &len, &cap, 8, "abcdefg", 7));
  EXPECT(cap == 8 && len == 7 && strcmp(buf, "abcdefg") == 0);
  EXPECT(sc_buf_append(&buf, &len, &cap, 8, "h", 1));
  EXPECTF(cap == 16 && len == 8 && strcmp(buf, "abcdefgh") == 0, "cap %zu", cap);
  /* Bytes with a NUL inside are kept by length. */
  EXPECT(sc_buf_append(&buf, &len, &cap, 8, "i\0j", 3));
  EXPECT(len == 11 && memcmp(buf + 8, "i\0j", 4) == 0);
  /* An impossible size fails and leaves the buffer as it was. */
  EXPECT(!sc_buf_append(&buf, &len, &cap, 8, "x", SIZE_MAX - 5));
  EXPECT(len == 11 && cap == 16);
  free(buf);
  /* Empty appends still give a string. */
  buf = NULL, len = cap = 0;
  EXPECT(sc_buf_append(&buf, &len, &cap, 4, "", 0) && buf && buf[0] == '\0' && len == 0);
  free(buf);
}

/* sc_hash64_long tells apart what the cache must: texts one bit apart at
 * any place (words and tails of every length), a text and itself with
 * trailing zero bytes, and seeds; and gives a text the same hash wherever
 * it lies in memory. */
static void test_hash64_long(void) {
  unsigned char a[64], b[80];
  for (int i = 0; i < 64; i++) a[i] = (unsigned char)(i * 37 + 11);
  int same = 0, tried = 0;
  for (size_t len = 1; len <= 40; len++) {
    uint64_t h = sc_hash64_long(a, len, 1);
    for (size_t bit = 0; bit < len * 8; bit++) {
      a[bit / 8] ^= (unsigned char)(1u << bit % 8);
      same += sc_hash64_long(a, len, 1) == h;
      a[bit / 8] ^= (unsigned char)(1u << bit % 8);
      tried++;
    }
    memcpy(b + 3, a, len); /* unaligned */
    EXPECTF(sc_hash64_long(b + 3, len, 1) == h, "length %zu: another address", len);
    memset(b + 3 + len, 0, 8);
    EXPECTF(sc_hash64_long(b + 3, len + 1, 1) != h && sc_hash64_long(b + 3, len + 8, 1) != h,
            "length %zu: trailing zero bytes", len);
    EXPECTF(sc_hash64_long(a, len, 2) != h, "length %zu: another seed", len);
  }
  EXPECTF(same == 0, "%d of %d one-bit changes kept the hash", same, tried);
  EXPECT(sc_hash64_long("", 0, 1) != sc_hash64_long("", 0, 2));
}

/* The CPU budget counts the thread's CPU, not the clock: a thread that
 * waits (descheduled on a busy machine, or here asleep) keeps its budget. */
static void test_cpu_budget(void) {
  sc_cpu_budget b;
  sc_cpu_budget_start(&b, 20000000ll); /* 20 ms */
  EXPECT(!sc_cpu_budget_over(&b));
  struct timespec nap = {0, 60000000l}; /* 60 ms asleep: wall time, no CPU */
  nanosleep(&nap, NULL);
  EXPECTF(!sc_cpu_budget_over(&b), "over after 60 ms asleep with a 20 ms CPU budget");
  double t0 = sc_thread_cpu_ms();
  volatile unsigned long spin = 0;
  while (sc_thread_cpu_ms() - t0 < 25.0) spin++; /* 25 ms of CPU */
  EXPECTF(sc_cpu_budget_over(&b), "not over after 25 ms of CPU with a 20 ms budget");
}

int main(void) {
  RUN(test_queue_append);
  RUN(test_cpu_budget);
  RUN(test_buf_append);
  RUN(test_hash64_long);
  TEST_MAIN_END();
}

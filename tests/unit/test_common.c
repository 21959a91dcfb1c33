/* common/: the write queue both event loops (stdio, HTTP) send from. */
#include "sc_test.h"
#include "sculpt.h"

#include <stdlib.h>
#include <string.h>

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

int main(void) {
  RUN(test_queue_append);
  TEST_MAIN_END();
}

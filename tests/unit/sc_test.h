/* sc_test.h — a minimal test harness for the C unit tests.
 * EXPECT records a failure and goes on; REQUIRE stops the test function.
 * main() returns the failure count (0 = pass), so ctest reads it directly. */
#ifndef SC_TEST_H
#define SC_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sc_test_failures;
static int sc_test_checks;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    sc_test_checks++;                                                          \
    if (!(cond)) {                                                             \
      sc_test_failures++;                                                      \
      fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond);\
    }                                                                          \
  } while (0)

#define EXPECTF(cond, ...)                                                     \
  do {                                                                         \
    sc_test_checks++;                                                          \
    if (!(cond)) {                                                             \
      sc_test_failures++;                                                      \
      fprintf(stderr, "%s:%d: EXPECT failed: %s: ", __FILE__, __LINE__, #cond);\
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define REQUIRE(cond)                                                          \
  do {                                                                         \
    sc_test_checks++;                                                          \
    if (!(cond)) {                                                             \
      sc_test_failures++;                                                      \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);\
      return;                                                                  \
    }                                                                          \
  } while (0)

#define EXPECT_STREQ(a, b) EXPECTF(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))

#define RUN(fn)                                                                \
  do {                                                                         \
    int before = sc_test_failures;                                             \
    fn();                                                                      \
    fprintf(stderr, "%s %s\n", sc_test_failures == before ? "ok  " : "FAIL", #fn);\
  } while (0)

/* Fixtures on disk: text written to dir/rel (false when it cannot be), and
 * a temporary folder removed with all it holds (a line when it cannot be). */
static inline bool sc_test_write_at(const char *dir, const char *rel, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  FILE *f = fopen(p, "w");
  if (!f) return false;
  bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

static inline void sc_test_remove_tree(const char *dir) {
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#define TEST_MAIN_END()                                                        \
  do {                                                                         \
    fprintf(stderr, "%d checks, %d failures\n", sc_test_checks, sc_test_failures);\
    return sc_test_failures ? 1 : 0;                                           \
  } while (0)

#endif

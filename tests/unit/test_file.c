/* test_file.c — common/file.c: only regular files are opened and read. A
 * FIFO (whose open would block with no writer), a directory, a device and
 * a symlink to a FIFO are errors naming the path and what it is; a
 * regular file reads whole (NUL-terminated), empty or not, within max. An
 * alarm turns a hang into a failure. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "sculpt.h"
#include "sc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void path_of(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", dir, name);
}

static void test_regular(void) {
  char p[512];
  path_of(p, sizeof p, "a.txt");
  FILE *f = fopen(p, "w");
  REQUIRE(f);
  fputs("hello\nworld", f);
  fclose(f);
  char *buf = NULL;
  size_t len = 0;
  sc_error err = {0};
  EXPECT(sc_file_read_regular(p, 1024, &buf, &len, &err) == SC_OK);
  EXPECT(buf && len == 11 && buf[11] == '\0' && strcmp(buf, "hello\nworld") == 0);
  free(buf);
  /* Over max: refused, naming the file. */
  EXPECT(sc_file_read_regular(p, 5, &buf, &len, &err) == SC_ERR_FORMAT && !buf);
  EXPECT(strstr(err.msg, "a.txt") != NULL);
  /* Empty. */
  path_of(p, sizeof p, "empty");
  f = fopen(p, "w");
  REQUIRE(f);
  fclose(f);
  EXPECT(sc_file_read_regular(p, 10, &buf, &len, &err) == SC_OK && len == 0 && buf[0] == '\0');
  free(buf);
  int fd = -1;
  EXPECT(sc_file_open_regular(p, &fd, &err) == SC_OK && fd >= 0);
  if (fd >= 0) close(fd);
}

static void expect_refused(const char *name, const char *kind) {
  char p[512];
  path_of(p, sizeof p, name);
  char *buf = NULL;
  size_t len = 0;
  int fd = -1;
  sc_error err = {0};
  alarm(20);
  sc_status a = sc_file_read_regular(p, 1 << 20, &buf, &len, &err);
  sc_status b = sc_file_open_regular(p, &fd, &err);
  alarm(0);
  EXPECTF(a == SC_ERR_IO && b == SC_ERR_IO && !buf && fd == -1, "%s: %d %d", name, a, b);
  EXPECTF(strstr(err.msg, name) && strstr(err.msg, kind), "%s: '%s'", name, err.msg);
}

static void test_special(void) {
  char p[512], q[512];
  path_of(p, sizeof p, "fifo");
  REQUIRE(mkfifo(p, 0600) == 0);
  expect_refused("fifo", "FIFO");
  path_of(q, sizeof q, "link-to-fifo");
  REQUIRE(symlink(p, q) == 0);
  expect_refused("link-to-fifo", "FIFO");
  path_of(p, sizeof p, "sub");
  REQUIRE(mkdir(p, 0700) == 0);
  expect_refused("sub", "directory");
  path_of(q, sizeof q, "zero");
  REQUIRE(symlink("/dev/zero", q) == 0);
  expect_refused("zero", "character device");
  expect_refused("missing", "No such file");
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/sc_file_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "skip: no temporary folder\n");
    return 77;
  }
  RUN(test_regular);
  RUN(test_special);
  sc_test_remove_tree(dir);
  TEST_MAIN_END();
}

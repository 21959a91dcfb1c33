/* write.c — reading and writing the files of a run: whole-file reads, and
 * atomic replacement (temp file, fsync, rename) so that a crash leaves
 * either the old or the new file whole. */
#define _GNU_SOURCE /* strdup */
#include "edit_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_TAG ".sculpt-" /* temp files: .NAME.sculpt-XXXXXX, skipped by the walk */

bool sc_edit__read_file(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      } else {
        buf = nb;
      }
    }
  }
  bool ok = buf && !ferror(f);
  fclose(f);
  if (!ok) {
    free(buf);
    if (!errno) errno = EIO;
    return false;
  }
  buf[n] = '\0'; /* n < cap: a full buffer was always grown above */
  *data = buf;
  *len = n;
  return true;
}

sc_status sc_edit__write_atomic(const char *path, const char *data, size_t len, mode_t perm,
                                sc_error *err) {
  char *d1 = strdup(path), *d2 = strdup(path);
  if (!d1 || !d2) {
    free(d1);
    free(d2);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  const char *dir = dirname(d1), *base = basename(d2);
  size_t tl = strlen(dir) + strlen(base) + 32;
  char *tmp = malloc(tl);
  if (!tmp) {
    free(d1);
    free(d2);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  snprintf(tmp, tl, "%s/.%s" TMP_TAG "XXXXXX", dir, base);
  sc_status st = SC_OK;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    st = sc_error_set(err, SC_ERR_IO, "cannot create a temp file next to %s: %s", path,
                      strerror(errno));
    goto out;
  }
  bool ok = fchmod(fd, perm) == 0;
  for (size_t off = 0; ok && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false;
    else off += (size_t)w;
  }
  ok = ok && fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0) ok = false;
  if (!ok) {
    unlink(tmp);
    st = sc_error_set(err, SC_ERR_IO, "cannot write %s: %s", tmp, strerror(saved));
    goto out;
  }
  /* Test-only hook (tests/batch): die where a crash hurts most, between the
   * complete temp file and the rename, to show no partial file is left. */
  const char *kill_env = getenv("SCULPT_TEST_KILL_BEFORE_RENAME");
  if (kill_env && strcmp(kill_env, "1") == 0) raise(SIGKILL);
  if (rename(tmp, path) != 0) {
    saved = errno;
    unlink(tmp);
    st = sc_error_set(err, SC_ERR_IO, "cannot replace %s: %s", path, strerror(saved));
    goto out;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd); /* best effort: the rename itself is already atomic */
    close(dfd);
  }
out:
  free(tmp);
  free(d1);
  free(d2);
  return st;
}

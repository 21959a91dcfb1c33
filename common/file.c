/* file.c — opening and reading files that must be regular files (the parts
 * of a checkpoint, a workspace's sources), so that a FIFO, a device or a
 * directory in their place is an error naming it, never a read that blocks
 * forever (a FIFO with no writer) or never ends (/dev/zero); and writing a
 * temp file whole and durably before it is renamed into place. */
#define _POSIX_C_SOURCE 200809L
#include "sculpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

sc_status sc_file_open_regular(const char *path, int *fd, sc_error *err) {
  *fd = -1;
  /* stat first: a FIFO or a device is refused without being opened
   * (opening one can block, or act: a tape rewinds). stat follows
   * symlinks, so a link to a FIFO is refused the same way. */
  struct stat sb;
  if (stat(path, &sb) != 0) {
    int e = errno;
    return sc_error_set(err, SC_ERR_IO, "%s: cannot open: %s", path, strerror(e));
  }
  SC_CHECK(S_ISREG(sb.st_mode), err, SC_ERR_IO, "%s: %s, not a regular file", path,
           kind_of(sb.st_mode));
  /* The path may be swapped for a FIFO between the stat and the open:
   * O_NONBLOCK keeps that open from blocking, and fstat checks what was
   * opened. Reads of a regular file ignore O_NONBLOCK; it is cleared
   * anyway so that the descriptor behaves as a plain one. */
  int f = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (f < 0) {
    int e = errno;
    return sc_error_set(err, SC_ERR_IO, "%s: cannot open: %s", path, strerror(e));
  }
  if (fstat(f, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(f);
    return sc_error_set(err, SC_ERR_IO, "%s: %s, not a regular file", path,
                        kind_of(sb.st_mode));
  }
  int fl = fcntl(f, F_GETFL);
  if (fl >= 0) (void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
  *fd = f;
  return SC_OK;
}

sc_status sc_file_read_regular(const char *path, size_t max, char **out, size_t *len,
                               sc_error *err) {
  *out = NULL;
  *len = 0;
  int fd;
  SC_TRY(sc_file_open_regular(path, &fd, err));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return sc_error_set(err, SC_ERR_IO, "%s: %s", path, strerror(e));
  }
  if ((uint64_t)sb.st_size > (uint64_t)max) {
    close(fd);
    return sc_error_set(err, SC_ERR_FORMAT, "%s: %lld bytes, more than the %zu allowed", path,
                        (long long)sb.st_size, max);
  }
  /* The size is a hint (the file may change while read): read to EOF,
   * never past max. */
  size_t cap = (size_t)sb.st_size + 1, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) {
    close(fd);
    return sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", path);
  }
  for (;;) {
    if (n == cap) {
      if (cap > max) {
        free(buf);
        close(fd);
        return sc_error_set(err, SC_ERR_FORMAT, "%s: grew past the %zu bytes allowed", path,
                            max);
      }
      size_t nc = cap * 2;
      char *nb = realloc(buf, nc + 1);
      if (!nb) {
        free(buf);
        close(fd);
        return sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", path);
      }
      buf = nb;
      cap = nc;
    }
    ssize_t k = read(fd, buf + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return sc_error_set(err, SC_ERR_IO, "%s: read error: %s", path, strerror(e));
    }
    if (k == 0) break;
    n += (size_t)k;
  }
  close(fd);
  if (n > max) {
    free(buf);
    return sc_error_set(err, SC_ERR_FORMAT, "%s: grew past the %zu bytes allowed", path, max);
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return SC_OK;
}

bool sc_file_write_full(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    len -= (size_t)w;
  }
  return true;
}

bool sc_file_write_all(int fd, const void *data, size_t len) {
  return sc_file_write_full(fd, data, len) && fsync(fd) == 0;
}

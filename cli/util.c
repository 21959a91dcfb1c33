/* util.c — small helpers shared by the subcommands. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "cli.h"
#include "model.h"
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool sc_cli_parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool sc_cli_parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

/* Reads a whole file; *data owned by the caller. */
bool sc_cli_read_file(const char *path, char **data, size_t *len) {
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
      if (!nb) { free(buf); buf = NULL; }
      else buf = nb;
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

/* FILE:LINE:COL (1-based line, 1-based byte column) -> path and offset. */
int sc_cli_locate(const char *target, char **path, const char *text, size_t len,
                  size_t *offset, bool read_it, long *line_out, long *col_out) {
  const char *c2 = strrchr(target, ':');
  if (!c2 || c2 == target) return -1;
  const char *c1 = c2 - 1;
  while (c1 > target && *c1 != ':') c1--;
  if (*c1 != ':') return -1;
  char lbuf[32], cbuf[32];
  size_t ll = (size_t)(c2 - c1 - 1), cl = strlen(c2 + 1);
  if (ll == 0 || ll >= sizeof lbuf || cl == 0 || cl >= sizeof cbuf) return -1;
  memcpy(lbuf, c1 + 1, ll);
  lbuf[ll] = '\0';
  memcpy(cbuf, c2 + 1, cl + 1);
  long line, col;
  if (!sc_cli_parse_long(lbuf, 1, 1L << 30, &line) || !sc_cli_parse_long(cbuf, 1, 1L << 30, &col)) return -1;
  *line_out = line;
  *col_out = col;
  if (read_it) {
    *path = strndup(target, (size_t)(c1 - target));
    return 0;
  }
  /* Find the line's start; lines end at \n (a \r before it is content). */
  size_t pos = 0;
  for (long l = 1; l < line; l++) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    if (!nl) return -2;
    pos = (size_t)(nl - text) + 1;
  }
  const char *nl = memchr(text + pos, '\n', len - pos);
  size_t end = nl ? (size_t)(nl - text) : len;
  if ((size_t)(col - 1) > end - pos) return -3;
  *offset = pos + (size_t)(col - 1);
  return 0;
}


int sc_cli_backend_option(const char *cmd, const char *o, const char *v,
                          sc_fim_client_options *r) {
  long n;
  if (strcmp(o, "--backend") == 0) {
    if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
      sc_cli_fail(cmd, "--backend takes an http:// or https:// URL");
      return -1;
    }
    r->url = v;
  } else if (strcmp(o, "--backend-model") == 0) {
    r->model = v;
  } else if (strcmp(o, "--api-key-env") == 0) {
    r->api_key_env = v;
  } else if (strcmp(o, "--timeout") == 0) {
    if (!sc_cli_parse_long(v, 1, 3600000, &n)) {
      sc_cli_fail(cmd, "--timeout takes milliseconds, 1 to 3600000");
      return -1;
    }
    r->timeout_ms = (int)n;
  } else if (strcmp(o, "--max-tries") == 0) {
    if (!sc_cli_parse_long(v, 1, 10, &n)) {
      sc_cli_fail(cmd, "--max-tries takes 1 to 10");
      return -1;
    }
    r->max_tries = (int)n;
  } else if (strcmp(o, "--provider") == 0) {
    if (!sc_fim_provider_parse(v, &r->provider)) {
      sc_cli_fail(cmd, "--provider takes %s", SC_FIM_PROVIDER_NAMES);
      return -1;
    }
  } else if (strcmp(o, "--fim-template") == 0) {
    if (!sc_fim_template_parse(v, &r->fim_template)) {
      sc_cli_fail(cmd, "--fim-template takes %s", SC_FIM_TEMPLATE_NAMES);
      return -1;
    }
  } else if (strcmp(o, "--stream") == 0) {
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
      sc_cli_fail(cmd, "--stream takes on or off");
      return -1;
    }
    r->no_stream = strcmp(v, "off") == 0;
  } else {
    return 0;
  }
  return 1;
}

bool sc_cli_backend_orphan(const char *cmd, const struct sc_fim_client_options *r) {
  if (r->url || !(r->model || r->api_key_env || r->timeout_ms || r->max_tries || r->provider ||
                  r->fim_template || r->no_stream))
    return false;
  sc_cli_fail(cmd, "--backend-model, --api-key-env, --timeout, --max-tries, --provider, "
                   "--fim-template and --stream go with --backend");
  return true;
}

/* Writes data into path in place: for what a rename must not replace (a
 * device such as /dev/null or /dev/stdout, a FIFO). */
static sc_status write_in_place(const char *path, const char *data, size_t len, sc_error *err) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return sc_error_set(err, SC_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  bool ok = sc_file_write_full(fd, data, len);
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  return ok ? SC_OK : sc_error_set(err, SC_ERR_IO, "cannot write %s: %s", path, strerror(saved));
}

/* Writes data atomically over path: a temp file in the same directory with
 * the given permissions, fsync, rename, fsync of the directory. A kill at any
 * point leaves either the old or the new file whole (at worst a stray
 * .NAME.sculpt-XXXXXX next to it). */
sc_status sc_cli_write_atomic(const char *path, const char *data, size_t len, mode_t perm,
                              sc_error *err) {
  /* What path names decides how: a device or a FIFO is written in place (a
   * rename would put a regular file where /dev/null was: `--out /dev/null`
   * as root), a directory is refused, and a symbolic link keeps pointing at
   * its target, which is replaced (the rename happens next to the target). */
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return sc_error_set(err, SC_ERR_IO, "cannot write %s: it is a directory", path);
    if (!S_ISREG(sb.st_mode)) return write_in_place(path, data, len, err);
  }
  char *real = NULL;
  if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
    real = realpath(path, NULL);
    if (!real)
      return sc_error_set(err, SC_ERR_IO, "cannot follow the link %s: %s", path,
                          strerror(errno));
    path = real;
  }
  char *d1 = strdup(path), *d2 = strdup(path);
  if (!d1 || !d2) {
    free(d1);
    free(d2);
    free(real);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  const char *dir = dirname(d1), *base = basename(d2);
  size_t tl = strlen(dir) + strlen(base) + 32;
  char *tmp = malloc(tl);
  if (!tmp) {
    free(d1);
    free(d2);
    free(real);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  snprintf(tmp, tl, "%s/.%s" SC_CLI_TMP_TAG "XXXXXX", dir, base);
  sc_status st = SC_OK;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    st = sc_error_set(err, SC_ERR_IO, "cannot create a temp file next to %s: %s", path,
                      strerror(errno));
    goto out;
  }
  bool ok = fchmod(fd, perm) == 0 && sc_file_write_all(fd, data, len);
  int saved = errno;
  if (close(fd) != 0) ok = false;
  if (!ok) {
    unlink(tmp);
    st = sc_error_set(err, SC_ERR_IO, "cannot write %s: %s", tmp, strerror(saved));
    goto out;
  }
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
  free(real);
  return st;
}

char *sc_cli_model_dir(const char *cmd, const char *given, int *rc) {
  sc_error err = {0};
  char *dir = NULL;
  if (sc_model_resolve(given, &dir, &err) != SC_OK) {
    sc_cli_fail(cmd, "%s", err.msg);
    *rc = err.status == SC_ERR_INVALID ? 2 : 1;
    return NULL;
  }
  if (!dir) {
    sc_cli_fail(cmd, "no model: pass --model DIR or ORG/NAME, or set SCULPT_MODEL");
    *rc = 2;
  }
  return dir;
}

/* write.c — reading and writing the files of a run without losing a byte.
 *
 * A file is read once, through its real path, with a stamp of what was read
 * (device, inode, size, mtime in ns, link count, mode, owner, a hash of the
 * bytes). Replacing it:
 *   - refuses a read-only file (no write bit, or not writable by us) unless
 *     forced, and a file with several hard links: replacing it by rename
 *     would split the links (the other names keep the old text), and writing
 *     in place cannot be atomic (a crash mid-write leaves a torn file), so
 *     such a file is reported and left alone;
 *   - writes the new text to a temp file next to it, mode and owner kept,
 *     locked with flock while it lives, and fsyncs it; the file has no name
 *     (O_TMPFILE) until just before the rename, where the file system
 *     allows, so that a run killed while it writes leaves nothing behind;
 *     it is named .NAME.sculpt-XXXXXX then (or from the start elsewhere);
 *   - immediately before the rename, checks that the file is still what was
 *     read: same inode, size and mtime, and the same bytes; if not, the temp
 *     file goes and nothing is written (SC_ERR_STALE);
 *   - swaps the two names in one step (renameat2 RENAME_EXCHANGE; a plain
 *     rename where the file system cannot), atomic either way: a crash
 *     leaves the old or the new file whole; then fsyncs the folder;
 *   - judges what it replaced, to close the window between the look and
 *     the swap: still the file it checked, with bytes appended at most (a
 *     log writer's lines: they are carried over to the end of the new file),
 *     or else the other writer wins: the swap is undone (or, after a plain
 *     rename, their text put back) and SC_ERR_STALE says so.
 * A temp file whose writer died (kill -9) after naming it is unlocked; the
 * next writing run removes it (sc_edit__clean_temps), matching our exact
 * naming only. */
#define _GNU_SOURCE /* strdup, openat */
#include "edit_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_TAG ".sculpt-" /* temp files: .NAME.sculpt-XXXXXX, skipped by the walk */

/* Reads all of fd from offset 0; *data (NUL-terminated) owned by the caller. */
static bool read_fd(int fd, char **data, size_t *len) {
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  for (off_t off = 0; buf;) {
    ssize_t got = pread(fd, buf + n, cap - n - 1, off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      free(buf);
      return false;
    }
    if (got == 0) break;
    n += (size_t)got;
    off += got;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  if (!buf) {
    errno = ENOMEM;
    return false;
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return true;
}

static void stamp_of(const struct stat *sb, const char *data, size_t len, sc_edit__stamp *st) {
  st->dev = sb->st_dev;
  st->ino = sb->st_ino;
  st->size = sb->st_size;
  st->mtime = sb->st_mtim;
  st->nlink = sb->st_nlink;
  st->mode = sb->st_mode;
  st->uid = sb->st_uid;
  st->gid = sb->st_gid;
  st->hash = sc_hash64(data, len, 0);
}

/* Does the open file fd still hold what st stamped (and expect, its bytes)? */
static bool unchanged(int fd, const sc_edit__stamp *st, const char *expect, size_t expect_len) {
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_dev != st->dev || sb.st_ino != st->ino ||
      sb.st_size != st->size || (size_t)sb.st_size != expect_len ||
      sb.st_mtim.tv_sec != st->mtime.tv_sec || sb.st_mtim.tv_nsec != st->mtime.tv_nsec)
    return false;
  char *now = NULL;
  size_t now_len = 0;
  if (!read_fd(fd, &now, &now_len)) return false;
  bool same = now_len == expect_len && memcmp(now, expect, now_len) == 0;
  free(now);
  return same;
}

sc_status sc_edit__file_read(const char *path, char **data, size_t *len, sc_edit__stamp *st) {
  /* The stamp must describe the bytes read: a file that changes while it is
   * read is read again (a few times), else refused. */
  for (int tries = 0; tries < 3; tries++) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return SC_ERR_IO;
    struct stat before, after;
    char *text = NULL;
    size_t n = 0;
    bool ok = fstat(fd, &before) == 0 && read_fd(fd, &text, &n) && fstat(fd, &after) == 0;
    int saved = errno;
    close(fd);
    if (!ok) {
      errno = saved;
      return SC_ERR_IO;
    }
    if ((size_t)after.st_size == n && before.st_size == after.st_size &&
        before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
        before.st_mtim.tv_nsec == after.st_mtim.tv_nsec) {
      stamp_of(&after, text, n, st);
      *data = text;
      *len = n;
      return SC_OK;
    }
    free(text);
  }
  errno = EAGAIN;
  return SC_ERR_STALE;
}

/* A complete temp file with data in dir, for path's base name: locked, with
 * mode and owner, fsynced. Where the file system has O_TMPFILE it has no
 * name yet (*tmp_out NULL; name_temp gives it one); else it is
 * .NAME.sculpt-XXXXXX (*tmp_out, owned by the caller). *fd_out stays open
 * (holding the lock). */
static sc_status write_temp(const char *dir, const char *base, const char *data, size_t len,
                            const sc_edit__stamp *st, char **tmp_out, int *fd_out,
                            sc_error *err) {
  char *tmp = NULL;
  int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) { /* EOPNOTSUPP, EISDIR, EINVAL: a file system without it */
    size_t tl = strlen(dir) + strlen(base) + 32;
    tmp = malloc(tl);
    SC_CHECK(tmp, err, SC_ERR_NOMEM, "out of memory");
    snprintf(tmp, tl, "%s/.%s" TMP_TAG "XXXXXX", dir, base);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
      sc_status s = sc_error_set(err, SC_ERR_IO, "cannot create a temp file in %s: %s", dir,
                                 strerror(errno));
      free(tmp);
      return s;
    }
  }
  /* Locked from birth to rename: a later run's clean-up leaves it alone. */
  bool ok = flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (ok && fchown(fd, st->uid, st->gid) != 0) { /* best effort: we may not own it */
  }
  ok = ok && fchmod(fd, st->mode & 07777) == 0 && sc_file_write_all(fd, data, len);
  if (!ok) {
    sc_status s = sc_error_set(err, SC_ERR_IO, "cannot write %s: %s", tmp ? tmp : dir,
                               strerror(errno));
    if (tmp) unlink(tmp);
    close(fd);
    free(tmp);
    return s;
  }
  *tmp_out = tmp;
  *fd_out = fd;
  return SC_OK;
}

/* Names the anonymous temp file fd (write_temp's, O_TMPFILE) in dir as
 * .NAME.sculpt-XXXXXX, the instant before the rename needs a name:
 * linkat with AT_EMPTY_PATH where we may (CAP_DAC_READ_SEARCH), else
 * through /proc/self/fd (open(2), "O_TMPFILE"). *tmp_out owned by the
 * caller. */
static sc_status name_temp(int fd, const char *dir, const char *base, char **tmp_out,
                           sc_error *err) {
  static const char k_alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  size_t tl = strlen(dir) + strlen(base) + 32;
  char *tmp = malloc(tl), proc[64];
  SC_CHECK(tmp, err, SC_ERR_NOMEM, "out of memory");
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  for (int tries = 0; tries < 100; tries++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
      for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)(rand() ^ (tries * 31 + i));
    char suffix[7];
    for (size_t i = 0; i < 6; i++) suffix[i] = k_alnum[r[i] % (sizeof k_alnum - 1)];
    suffix[6] = '\0';
    snprintf(tmp, tl, "%s/.%s" TMP_TAG "%s", dir, base, suffix);
    if (linkat(fd, "", AT_FDCWD, tmp, AT_EMPTY_PATH) == 0 ||
        linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
      *tmp_out = tmp;
      return SC_OK;
    }
    if (errno != EEXIST) break;
  }
  sc_status s = sc_error_set(err, SC_ERR_IO, "cannot name a temp file in %s: %s", dir,
                             strerror(errno));
  free(tmp);
  return s;
}

/* write_temp, named: the temp file has a name when this returns. */
static sc_status write_named_temp(const char *dir, const char *base, const char *data,
                                  size_t len, const sc_edit__stamp *st, char **tmp_out,
                                  int *fd_out, sc_error *err) {
  SC_TRY(write_temp(dir, base, data, len, st, tmp_out, fd_out, err));
  if (*tmp_out) return SC_OK;
  sc_status s = name_temp(*fd_out, dir, base, tmp_out, err);
  if (s != SC_OK) {
    close(*fd_out);
    *fd_out = -1;
  }
  return s;
}

static void sync_dir(const char *dir) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd); /* best effort: the rename itself is already atomic */
    close(dfd);
  }
}

/* Puts data back over path (the other writer's text after a lost race). */
static void put_back(const char *dir, const char *base, const char *path, const char *data,
                     size_t len, const sc_edit__stamp *st) {
  char *tmp = NULL;
  int fd = -1;
  if (write_named_temp(dir, base, data, len, st, &tmp, &fd, NULL) != SC_OK) return;
  if (rename(tmp, path) != 0) unlink(tmp);
  else sync_dir(dir);
  close(fd);
  free(tmp);
}

/* Appends n bytes to the file at path (the other writer's appends that
 * landed in the file we replaced, carried over into ours). */
static bool append_to(const char *path, const char *p, size_t n) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  bool ok = sc_file_write_all(fd, p, n);
  close(fd);
  return ok;
}

/* What the file we replaced held at the end (theirs, theirs_len), against
 * what we checked (expect): SC_OK when it is expect, or expect with bytes
 * appended (carried over into ours: *extra set); else SC_ERR_STALE. */
static sc_status judge_replaced(bool same_inode, const char *theirs, size_t theirs_len,
                                const char *expect, size_t expect_len, bool *extra) {
  *extra = false;
  if (!same_inode || theirs_len < expect_len || memcmp(theirs, expect, expect_len) != 0)
    return SC_ERR_STALE;
  *extra = theirs_len > expect_len;
  return SC_OK;
}

sc_status sc_edit__file_replace(const char *path, const char *shown, char **disk,
                                size_t *disk_len, sc_edit__stamp *st, const char *data,
                                size_t len, bool force, sc_error *err) {
  const char *expect = *disk;
  size_t expect_len = *disk_len;
  struct stat sb;
  if (lstat(path, &sb) != 0)
    return sc_error_set(err, SC_ERR_STALE, "%s changed on disk after it was read; not written",
                        shown);
  SC_CHECK(S_ISREG(sb.st_mode) && sb.st_dev == st->dev && sb.st_ino == st->ino, err,
           SC_ERR_STALE, "%s changed on disk after it was read; not written", shown);
  SC_CHECK(force || ((sb.st_mode & 0222) && access(path, W_OK) == 0), err, SC_ERR_UNSUPPORTED,
           "%s is read-only; not written (--force writes it)", shown);
  SC_CHECK(sb.st_nlink <= 1, err, SC_ERR_UNSUPPORTED,
           "%s has %lu hard links; not written (a new file would split them, and writing in "
           "place could leave it torn)", shown, (unsigned long)sb.st_nlink);
  char *d1 = strdup(path), *d2 = strdup(path), *theirs = NULL, *now = NULL;
  size_t theirs_len = 0;
  if (!d1 || !d2) {
    free(d1);
    free(d2);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  const char *dir = dirname(d1), *base = basename(d2);
  char *tmp = NULL;
  int fd = -1, old = -1;
  sc_status s = write_temp(dir, base, data, len, st, &tmp, &fd, err);
  if (s != SC_OK) goto out;
  /* Test-only hook (tests/batch): die where a crash hurts most, between the
   * complete temp file and the rename, to show no partial file is left. */
  const char *kill_env = getenv("SCULPT_TEST_KILL_BEFORE_RENAME");
  if (kill_env && strcmp(kill_env, "1") == 0) raise(SIGKILL);
  /* The last look before the rename, through a descriptor kept across it. */
  old = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (old < 0 || !unchanged(old, st, expect, expect_len)) {
    if (tmp) unlink(tmp);
    s = sc_error_set(err, SC_ERR_STALE, "%s changed on disk after it was read; not written",
                     shown);
    goto out;
  }
  /* The name the rename needs, only now: a kill before this leaves nothing. */
  if (!tmp && (s = name_temp(fd, dir, base, &tmp, err)) != SC_OK) goto out;
  /* Test-only hook (tests/batch/test_write.py): widen the window between the
   * last look and the rename, so that a racing writer lands in it. */
  const char *pause = getenv("SCULPT_TEST_PAUSE_BEFORE_RENAME_MS");
  if (pause) usleep((useconds_t)atoi(pause) * 1000u);
  /* The swap: where the file system can, the new text takes the name and
   * the old file the temp name in one step (RENAME_EXCHANGE), so that what
   * was at the name at that instant can be judged, and swapped back. */
  bool exchanged = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0;
  if (!exchanged && errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
    int saved = errno;
    unlink(tmp);
    s = sc_error_set(err, SC_ERR_IO, "cannot replace %s: %s", shown, strerror(saved));
    goto out;
  }
  if (!exchanged && rename(tmp, path) != 0) {
    int saved = errno;
    unlink(tmp);
    s = sc_error_set(err, SC_ERR_IO, "cannot replace %s: %s", shown, strerror(saved));
    goto out;
  }
  /* What was replaced: at the temp name after a swap (it may be a file
   * someone put there meanwhile), else the old file through our descriptor.
   * The folder is synced after the temp name is gone, so that the name
   * lives microseconds, not an fsync. */
  bool same = true, extra = false;
  if (exchanged) {
    int was = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat wb;
    same = was >= 0 && fstat(was, &wb) == 0 && wb.st_ino == st->ino && wb.st_dev == st->dev;
    if (was < 0 || !read_fd(was, &theirs, &theirs_len)) same = false;
    if (was >= 0) close(was);
  } else if (!read_fd(old, &theirs, &theirs_len)) {
    same = false;
  }
  if (judge_replaced(same, theirs, theirs_len, expect, expect_len, &extra) != SC_OK) {
    /* Someone changed it between the look and the rename: theirs wins. */
    if (exchanged && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0)
      unlink(tmp); /* now ours */
    else if (theirs)
      put_back(dir, base, path, theirs, theirs_len, st);
    sync_dir(dir);
    s = sc_error_set(err, SC_ERR_STALE,
                     "%s changed on disk while it was replaced; the other writer's text is "
                     "kept, not ours", shown);
    goto out;
  }
  if (exchanged) unlink(tmp); /* the old file */
  sync_dir(dir);
  /* Bytes appended to the old file meanwhile go on at the end of ours. */
  size_t now_len = len;
  if (extra) {
    if (!append_to(path, theirs + expect_len, theirs_len - expect_len)) {
      s = sc_error_set(err, SC_ERR_IO, "cannot carry the bytes appended to %s meanwhile: %s",
                       shown, strerror(errno));
      goto out;
    }
    now_len += theirs_len - expect_len;
  }
  now = malloc(now_len + 1);
  if (!now) {
    s = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    goto out;
  }
  memcpy(now, data, len);
  if (extra) memcpy(now + len, theirs + expect_len, theirs_len - expect_len);
  now[now_len] = '\0';
  free(*disk);
  *disk = now;
  *disk_len = now_len;
  if (fstat(fd, &sb) == 0) stamp_of(&sb, now, now_len, st);
out:
  free(theirs);
  if (old >= 0) close(old);
  if (fd >= 0) close(fd); /* releases the lock */
  free(tmp);
  free(d1);
  free(d2);
  return s;
}

/* Is name ours: .NAME.sculpt-XXXXXX with six letters or digits? */
static bool is_our_temp(const char *name) {
  size_t n = strlen(name), tl = strlen(TMP_TAG);
  if (n < 1 + 1 + tl + 6 || name[0] != '.') return false;
  if (strncmp(name + n - 6 - tl, TMP_TAG, tl) != 0) return false;
  for (size_t i = n - 6; i < n; i++)
    if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
          (name[i] >= '0' && name[i] <= '9')))
      return false;
  return true;
}

size_t sc_edit__clean_temps(const char *dir, void (*removed)(void *user, const char *path),
                            void *user) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!is_our_temp(e->d_name)) continue;
    int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat sb;
    /* Unlocked: its writer is gone (a live one holds the lock until rename). */
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        unlinkat(dirfd(d), e->d_name, 0) == 0) {
      n++;
      if (removed) {
        size_t pl = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(pl);
        if (p) {
          snprintf(p, pl, "%s/%s", dir, e->d_name);
          removed(user, p);
          free(p);
        }
      }
    }
    close(fd);
  }
  closedir(d);
  return n;
}

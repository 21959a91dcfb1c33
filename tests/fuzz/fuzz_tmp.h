/* fuzz_tmp.h — a fuzz target's scratch folder, removed when the process
 * exits normally (libFuzzer's run ends with exit()), so a CI run or a long
 * run of thousands of jobs leaves nothing in TMPDIR. A crash keeps it, with
 * the crashing input beside whatever it wrote. Needs _GNU_SOURCE or
 * _XOPEN_SOURCE 500 for nftw. */
#ifndef SCULPT_FUZZ_TMP_H
#define SCULPT_FUZZ_TMP_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static char fuzz_tmp_dir[4096];

static int fuzz_tmp_remove_one(const char *path, const struct stat *st, int type,
                               struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  remove(path); /* best effort: a folder left is one line below, not a finding */
  return 0;
}

static void fuzz_tmp_remove(void) {
  if (fuzz_tmp_dir[0] && nftw(fuzz_tmp_dir, fuzz_tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "could not remove %s\n", fuzz_tmp_dir);
}

/* dir: a folder mkdtemp made (borrowed; copied). Call once. */
static inline void fuzz_tmp_remove_at_exit(const char *dir) {
  snprintf(fuzz_tmp_dir, sizeof fuzz_tmp_dir, "%s", dir);
  atexit(fuzz_tmp_remove);
}

#endif

/* sc_test_tmp.h — a temporary folder for a C test, under $TMPDIR (else
 * /tmp), as every other test makes its own: tools/bootstrap.sh runs the
 * suite under a TMPDIR of its own and fails naming what a test left there.
 * Include it after the feature macros that declare mkdtemp. */
#ifndef SC_TEST_TMP_H
#define SC_TEST_TMP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* out: TMPDIR/PREFIX-XXXXXX, made (mode 0700); false when it does not fit
 * in cap bytes or cannot be made. */
static inline bool sc_test_mkdtemp(char *out, size_t cap, const char *prefix) {
  const char *t = getenv("TMPDIR");
  int n = snprintf(out, cap, "%s/%s-XXXXXX", t && *t ? t : "/tmp", prefix);
  return n > 0 && (size_t)n < cap && mkdtemp(out) != NULL;
}

#endif

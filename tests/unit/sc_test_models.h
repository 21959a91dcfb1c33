/* sc_test_models.h — test checkpoints for the C tests: generated at test
 * time into the build folder by tools/planted_checkpoints.py (hand-built
 * weights, known answers) and tools/tiny_checkpoints.py (seeded random). */
#ifndef SC_TEST_MODELS_H
#define SC_TEST_MODELS_H

#include "model.h"

#include <stdio.h>
#include <stdlib.h>

static char sc_test_model_dir[256];

/* Generates the checkpoints into BUILD/<sub>; tiny_args selects the random
 * ones ("" for all, "--only NAME" for one). Returns 0 on success. */
static int sc_test_make_models(const char *sub, const char *tiny_args) {
  snprintf(sc_test_model_dir, sizeof sc_test_model_dir, "%s/%s", SC_TEST_BUILD_DIR, sub);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 %s/../tools/planted_checkpoints.py %s >/dev/null && "
           "/usr/bin/python3 %s/../tools/tiny_checkpoints.py %s %s >/dev/null",
           SC_TEST_DATA_DIR, sc_test_model_dir, SC_TEST_DATA_DIR, sc_test_model_dir, tiny_args);
  if (system(cmd) != 0) {
    fprintf(stderr, "cannot generate the test checkpoints (%s)\n", cmd);
    return 1;
  }
  return 0;
}

/* Loads one of them; NULL (with the reason printed) on failure. */
static sc_model *load(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", sc_test_model_dir, name);
  sc_model *m = NULL;
  sc_error err = {0};
  if (sc_model_load(path, NULL, &m, &err) != SC_OK) {
    fprintf(stderr, "load %s: %s\n", path, err.msg);
    return NULL;
  }
  return m;
}

#endif

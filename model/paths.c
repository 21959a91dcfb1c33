/* paths.c — where the default model lives. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#ifndef SCULPT_DEFAULT_MODEL_DIR
#define SCULPT_DEFAULT_MODEL_DIR ""
#endif

static bool has_config(const char *dir) {
  char path[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/config.json", dir);
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *sc_model_shipped_dir(void) {
  if (SCULPT_DEFAULT_MODEL_DIR[0] && has_config(SCULPT_DEFAULT_MODEL_DIR))
    return SCULPT_DEFAULT_MODEL_DIR;
  return NULL;
}

const char *sc_model_default_dir(void) {
  const char *env = getenv("SCULPT_MODEL");
  if (env && *env) return env;
  return sc_model_shipped_dir();
}

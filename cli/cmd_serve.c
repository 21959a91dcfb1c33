/* cmd_serve.c — `sculpt serve`: the engine as an OpenAI-compatible FIM
 * completions server over HTTP/1.1 (net/serve.c). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "serve"

static bool parse_seconds(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v > 0 && v <= 86400)) return false;
  *out = v;
  return true;
}

int sc_cli_serve(int argc, char **argv) {
  sc_serve_options o;
  sc_serve_options_default(&o);
  const char *key_env = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (!v) {
      sc_cli_fail(CMD, "%s needs a value (see sculpt help serve)", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--model") == 0) o.model_dir = v;
    else if (strcmp(a, "--listen") == 0) o.listen = v;
    else if (strcmp(a, "--api-key-env") == 0) key_env = v;
    else if (strcmp(a, "--device") == 0) {
      if (!sc_device_kind_parse(v, &o.device)) { sc_cli_fail(CMD, "--device takes auto, cpu or cuda"); return 2; }
    } else if (strcmp(a, "--weights") == 0) {
      if (!sc_weights_kind_parse(v, &o.weights)) { sc_cli_fail(CMD, "--weights takes " SC_WEIGHTS_KINDS); return 2; }
    } else if (strcmp(a, "--queue") == 0) {
      if (!sc_cli_parse_long(v, 0, 1 << 20, &n)) { sc_cli_fail(CMD, "--queue takes 0 to 1048576"); return 2; }
      o.queue = (int)n;
    } else if (strcmp(a, "--batch") == 0) {
      if (!sc_cli_parse_long(v, 1, SC_INFILL_MAX_BATCH, &n)) {
        sc_cli_fail(CMD, "--batch takes 1 to %d", SC_INFILL_MAX_BATCH);
        return 2;
      }
      o.batch = (int)n;
    } else if (strcmp(a, "--context") == 0) {
      if (!sc_cli_parse_long(v, 8, 1 << 20, &n)) { sc_cli_fail(CMD, "--context takes 8 or more"); return 2; }
      o.context = (int)n;
    } else if (strcmp(a, "--max-tokens") == 0) {
      if (!sc_cli_parse_long(v, 1, 4096, &n)) { sc_cli_fail(CMD, "--max-tokens takes 1 to 4096"); return 2; }
      o.max_tokens = (int)n;
    } else if (strcmp(a, "--max-connections") == 0) {
      if (!sc_cli_parse_long(v, 1, 1 << 16, &n)) { sc_cli_fail(CMD, "--max-connections takes 1 to 65536"); return 2; }
      o.max_connections = (int)n;
    } else if (strcmp(a, "--max-client-connections") == 0) {
      if (!sc_cli_parse_long(v, 1, 1 << 16, &n)) { sc_cli_fail(CMD, "--max-client-connections takes 1 to 65536"); return 2; }
      o.max_client_connections = (int)n;
    } else if (strcmp(a, "--max-body") == 0) {
      if (!sc_cli_parse_long(v, 1024, 1L << 30, &n)) { sc_cli_fail(CMD, "--max-body takes 1024 to 1073741824 bytes"); return 2; }
      o.max_body = (size_t)n;
    } else if (strcmp(a, "--header-timeout") == 0) {
      if (!parse_seconds(v, &o.header_timeout_s)) { sc_cli_fail(CMD, "--header-timeout takes seconds in (0, 86400]"); return 2; }
    } else if (strcmp(a, "--idle-timeout") == 0) {
      if (!parse_seconds(v, &o.idle_timeout_s)) { sc_cli_fail(CMD, "--idle-timeout takes seconds in (0, 86400]"); return 2; }
    } else {
      sc_cli_fail(CMD, "unknown option '%s' (see sculpt help serve)", a);
      return 2;
    }
  }
  int rc = 0;
  char *model_dir = sc_cli_model_dir(CMD, o.model_dir, &rc);
  if (!model_dir) return rc;
  /* A model id names the model in the answers (a snapshot's folder is its
   * commit). */
  const char *name = o.model_dir ? o.model_dir : sc_model_default_dir();
  if (name && strcmp(name, model_dir) != 0) o.model_name = name;
  o.model_dir = model_dir;
  sc_model_builtin_hint(model_dir);
  if (key_env) {
    /* The key comes from the environment, never argv (visible in ps). */
    o.api_key = getenv(key_env);
    if (!o.api_key || !o.api_key[0]) {
      sc_cli_fail(CMD, "--api-key-env %s: that variable is unset or empty", key_env);
      free(model_dir);
      return 2;
    }
  }
  /* Test hook: SCULPT_SERVE_STEP_DELAY_MS slows every batch step, so that
   * tests can fill the queue or disconnect mid-stream on a tiny model. */
  const char *delay = getenv("SCULPT_SERVE_STEP_DELAY_MS");
  long d;
  if (delay && sc_cli_parse_long(delay, 0, 60000, &d)) o.step_delay_ms = (int)d;
  sc_error err = {0};
  sc_status st = sc_serve_run(&o, &err);
  free(model_dir);
  if (st != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return err.status == SC_ERR_INVALID ? 2 : 1;
  }
  return 0;
}

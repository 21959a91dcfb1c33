/* cmd_lsp.c — `sculpt lsp`: the language server over stdio. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "lsp.h"
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sc_cli_lsp(int argc, char **argv) {
  sc_lsp_options opts;
  sc_lsp_options_default(&opts);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--stdio") == 0) continue;
    /* VS Code's client may pass its pid; we have no use for it. */
    if (strncmp(a, "--clientProcessId", 17) == 0) {
      if (a[17] == '\0') i++;
      continue;
    }
    if (strcmp(a, "--log-level") == 0 && val) {
      sc_log_level level;
      if (!sc_log_level_parse(val, &level)) {
        sc_cli_fail("lsp", "--log-level takes error, warn, info or debug, not '%s'", val);
        return 2;
      }
      sc_log_set_stderr_level(level);
      i++;
    } else if (strcmp(a, "--max-message-size") == 0 && val) {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(val, &end, 10);
      if (errno || *end || v == 0 || val[0] == '-') {
        sc_cli_fail("lsp", "--max-message-size takes a positive number of bytes");
        return 2;
      }
      opts.max_message_size = (size_t)v;
      i++;
    } else if (strcmp(a, "--device") == 0 && val) {
      if (!sc_device_kind_parse(val, &opts.device)) {
        sc_cli_fail("lsp", "--device takes auto, cpu or cuda, not '%s'", val);
        return 2;
      }
      i++;
    } else if (strcmp(a, "--weights") == 0 && val) {
      /* The weights setting's default (as --device is the device's). */
      if (!sc_weights_kind_parse(val, &opts.weights)) {
        sc_cli_fail("lsp", "--weights takes " SC_WEIGHTS_KINDS ", not '%s'", val);
        return 2;
      }
      i++;
    } else {
      sc_cli_fail("lsp", "unknown or incomplete option '%s' (see sculpt help lsp)", a);
      return 2;
    }
  }
  return sc_lsp_run_stdio(&opts);
}

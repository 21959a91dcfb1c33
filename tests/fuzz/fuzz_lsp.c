/* fuzz_lsp.c — libFuzzer target for the whole message path:
 * framing -> JSON -> dispatch -> document edits -> jobs -> responses.
 * The first input byte picks how the rest is split into reads, so one input
 * also exercises partial and merged frames. Jobs run inline (no thread), so
 * a run is deterministic. Every response must itself be a well-formed frame. */
#define _POSIX_C_SOURCE 200809L
#include "lsp_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t g_out_bytes;

static void on_write(void *user, const char *data, size_t len) {
  /* Our own output must always be a framed message. */
  if (len < 20 || memcmp(data, "Content-Length: ", 16) != 0) __builtin_trap();
  g_out_bytes += len;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  sc_log_set_stderr_level(SC_LOG_ERROR);
  /* No model: loading the default one on every input would cost most of
   * the time; the no-model paths are what gets fuzzed here. */
  setenv("SCULPT_MODEL", "/nonexistent-sculpt-model", 1);
  /* An input may set autoPull and a model id: never the network. */
  setenv("HF_HUB_OFFLINE", "1", 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static bool init;
  if (!init) {
    sc_log_set_stderr_level(SC_LOG_ERROR);
    init = true;
  }
  sc_lsp_options opts;
  sc_lsp_options_default(&opts);
  opts.test_hooks = true;
  opts.synchronous_jobs = true;
  opts.max_message_size = 1 << 16;
  sc_lsp_server *s = sc_lsp_server_new(&opts, on_write, NULL, NULL);
  if (!s) return 0;
  size_t chunk = size ? (size_t)data[0] % 64 : 0;
  const char *p = (const char *)data + (size ? 1 : 0);
  size_t n = size ? size - 1 : 0;
  if (chunk == 0) chunk = n ? n : 1;
  for (size_t i = 0; i < n && !sc_lsp_server_done(s, NULL); i += chunk)
    sc_lsp_server_feed(s, p + i, n - i < chunk ? n - i : chunk);
  sc_lsp_server_eof(s);
  sc_lsp_server_finish(s);
  sc_lsp_server_free(s);
  return 0;
}

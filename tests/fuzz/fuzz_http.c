/* fuzz_http.c — the HTTP request reader of `sculpt serve` under fuzzing.
 * The first byte picks how the input is split into reads (a peer may send a
 * request in any pieces), the rest is the byte stream of one connection;
 * requests are taken one after another as the server does, and a last empty
 * read is the peer closing. Any input must end in requests or one clean
 * error, never a crash or a leak. */
#include "net.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size == 0) return 0;
  size_t piece = (size_t)(data[0] % 64) + 1; /* bytes per read: 1..64 */
  const char *p = (const char *)data + 1;
  size_t left = size - 1;
  /* Small limits so that the 431 and 413 paths are reachable. */
  sc_http_reader *r = sc_http_reader_new(512, 1024);
  if (!r) return 0;
  size_t pending = 0; /* bytes handed over but not consumed */
  for (int guard = 0; guard < 100000; guard++) {
    size_t n = pending + piece < left ? pending + piece : left;
    size_t used = 0;
    sc_http_feed f = sc_http_reader_feed(r, p, n, &used);
    if (used > n) __builtin_trap(); /* it may never claim more than it got */
    p += used;
    left -= used;
    pending = n - used;
    if (f == SC_HTTP_ERROR) {
      const char *why = NULL;
      int code = sc_http_reader_error(r, &why);
      if (code < 400 || code > 599 || !why) __builtin_trap();
      break;
    }
    if (f == SC_HTTP_REQUEST) {
      const sc_http_request *q = sc_http_reader_request(r);
      if (!q || !q->method || !q->path || (q->body_len && !q->body)) __builtin_trap();
      if (q->body && q->body[q->body_len] != '\0') __builtin_trap();
      sc_http_reader_next(r);
      continue;
    }
    if (n == 0) break; /* the peer closed and nothing more came */
    if (left == 0 && f == SC_HTTP_MORE) {
      size_t u = 0;
      sc_http_reader_feed(r, p, 0, &u); /* the peer closes mid-request */
      break;
    }
  }
  sc_http_reader_free(r);
  return 0;
}

/*
 * lsp.h — the sculpt language server: JSON-RPC over a byte stream.
 *
 * The server core is transport-free: bytes from the client go in through
 * sc_lsp_server_feed(), complete frames come out through the write callback.
 * sc_lsp_run_stdio() wires the core to stdin/stdout on a libev loop. Model
 * work runs on a worker thread; the loop never blocks on it.
 *
 * Threading: every sc_lsp_server_* function must be called from one thread
 * (the loop thread). The write callback is called on that thread too.
 */
#ifndef SCULPT_LSP_H
#define SCULPT_LSP_H

#include "model.h"
#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SC_LSP_DEFAULT_MAX_MESSAGE (64u * 1024u * 1024u)

typedef struct sc_lsp_options {
  size_t max_message_size; /* bytes; larger messages are skipped */
  bool test_hooks;         /* enable the sculpt/test/... methods */
  bool synchronous_jobs;   /* run jobs inline on the caller's thread (fuzzing) */
  sc_device_kind device;   /* where model work will run */
  sc_weights_kind weights; /* what the CPU computes in (the weights setting's
                              default); AUTO: $SCULPT_WEIGHTS, else by size */
} sc_lsp_options;

/* Fills the defaults: 64 MiB, no test hooks ($SCULPT_TEST_HOOKS=1 turns them
 * on), a worker thread, device auto, weights auto. */
void sc_lsp_options_default(sc_lsp_options *opts);

typedef struct sc_lsp_server sc_lsp_server;

/* Called with each complete outgoing frame (header and body). The bytes are
 * borrowed for the duration of the call. */
typedef void (*sc_lsp_write_fn)(void *user, const char *data, size_t len);

/* Called from a worker thread when a finished job (or a long message
 * parsed off the loop) waits for sc_lsp_server_drain() on the loop thread
 * (the stdio runner uses ev_async). Without one, every message is parsed
 * on the caller's thread. */
typedef void (*sc_lsp_wake_fn)(void *user);

/* Returns NULL when memory runs out. opts is copied. */
sc_lsp_server *sc_lsp_server_new(const sc_lsp_options *opts, sc_lsp_write_fn write,
                                 sc_lsp_wake_fn wake, void *user);
/* Cancels every job, joins the worker and frees everything. */
void sc_lsp_server_free(sc_lsp_server *server);

/* Feeds raw bytes from the client, in any split. */
void sc_lsp_server_feed(sc_lsp_server *server, const char *data, size_t len);

/* Delivers finished jobs' responses, and a long message parsed off the
 * loop with the input that waited behind it. Call after a wake. */
void sc_lsp_server_drain(sc_lsp_server *server);

/* False while a long message is parsed off the loop: the input after it
 * waits, so a transport stops reading (it resumes after a drain). Feeding
 * meanwhile is allowed; the bytes are then buffered. */
bool sc_lsp_server_wants_input(const sc_lsp_server *server);

/* The client's input ended (EOF). Counts as exit. */
void sc_lsp_server_eof(sc_lsp_server *server);

/* Stops the worker and answers every request still in flight (-32800 for
 * those it was running). Call once, after exit or EOF, before the last
 * flush of output. Blocks until the running job reaches its next step. */
void sc_lsp_server_finish(sc_lsp_server *server);

/* True once exit arrived (or EOF); *code is then the process exit status:
 * 0 when shutdown came first, 1 otherwise. */
bool sc_lsp_server_done(const sc_lsp_server *server, int *code);

/* Runs the server over stdin/stdout until exit or EOF; returns the exit
 * status. Installs the window/logMessage log sink for its duration. */
int sc_lsp_run_stdio(const sc_lsp_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_LSP_H */

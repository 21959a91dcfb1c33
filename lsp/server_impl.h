/*
 * server_impl.h — the server core's private parts, shared by its files and
 * by nothing else: server.c (lifecycle, configuration, dispatch, the public
 * API), core.c (accessors, parameter helpers, the loop's timing, under
 * everything that handles a message), rpc.c (messages out, responses back,
 * logs to the client), jobs.c
 * (requests in flight), sync.c (text synchronisation) and test_hooks.c.
 * The feature never includes this header: it reaches the server through
 * the sc_lsp__ functions of lsp_impl.h.
 *
 * Names: sc_server__ marks a function private to the core but shared
 * between its files.
 */
#ifndef SCULPT_SERVER_IMPL_H
#define SCULPT_SERVER_IMPL_H

#include "lsp_impl.h"

#include <pthread.h>

typedef enum lifecycle {
  LC_UNINITIALIZED, /* waiting for initialize */
  LC_INITIALIZING,  /* initialize answered, initialized not yet seen */
  LC_RUNNING,
  LC_SHUTDOWN,      /* shutdown answered; only exit is welcome */
  LC_EXITED,
} lifecycle;

/* A server->client request we are waiting on. */
typedef struct outgoing {
  json_int_t id;
  void (*on_response)(sc_lsp_server *s, json_t *result, json_t *error);
  /* Or, with what the sender gave: */
  void (*on_response_with)(sc_lsp_server *s, json_t *result, json_t *error, void *user);
  void *user;
  struct outgoing *next;
} outgoing;

/* A work-done progress token the server started (progress.c). */
typedef struct sc_server_progress sc_server_progress;

/* The last request that failed, for sculpt/status (rpc.c records it). */
typedef struct last_error {
  bool set;
  int code;
  char method[96];
  char message[600];
  char time[32]; /* ISO 8601, UTC */
} last_error;

/* Log lines bound for window/logMessage, queued because they may come from
 * any thread and because nothing may be sent before initialize is answered. */
typedef struct log_entry {
  sc_log_level level;
  struct log_entry *next;
  char text[];
} log_entry;
#define MAX_QUEUED_LOGS 1000

/* How long each call from the loop into the server (sc_lsp_server_feed,
 * sc_lsp_server_drain) took: the loop must never block, and a test checks
 * that it does not through sculpt/test/stats. Wall time says what a client
 * waits; the thread's CPU time says what the loop itself did, which a
 * loaded machine does not inflate. */
#define LOOP_BUCKETS 12
typedef struct loop_timing {
  int depth;            /* feed drains: only the outermost call counts */
  double t0_wall, t0_cpu;
  long calls;
  double max_wall_ms, max_cpu_ms;
  long wall_le[LOOP_BUCKETS]; /* calls of at most k_loop_bucket_ms[i] (wall) */
  long cpu_le[LOOP_BUCKETS];
} loop_timing;
extern const double k_loop_bucket_ms[LOOP_BUCKETS];

/* A message body parsed off the loop (server.c, parse_elsewhere): jansson
 * decodes about 75 MB/s here, so a 60 MB didOpen held the loop 0.9 s. */
typedef struct sc_big_parse sc_big_parse;
/* In didOpen: the text made off the loop for the string src (the message's
 * own), when there is one (moved into *out); false otherwise. (core.c) */
bool sc_server__take_made_text(sc_lsp_server *s, const char *src, sc_document_text *out);

struct sc_lsp_server {
  sc_lsp_options opts;
  sc_lsp_write_fn write;
  sc_lsp_wake_fn wake;
  void *user;

  sc_frame_reader reader;
  size_t garbage_run; /* garbage bytes since the last message, for one log line */
  sc_big_parse *parsing; /* a body being parsed off the loop; the reader is
                            paused behind it */
  /* While the message parsed off the loop is dispatched: a didOpen's text
   * made on that thread for the string made_src (sc_server__take_made_text,
   * core.c), NULL otherwise. Borrowed from the parse. */
  sc_document_text *made;
  const char *made_src;
  bool eof_pending;      /* the input ended behind it */
  lifecycle state;
  bool shutdown_requested;
  int exit_code;
  sc_pos_encoding enc;

  sc_document_store *docs;
  sc_worker *workers[SC_LANE_COUNT]; /* one thread per sc_job_lane */
  sc_job **inflight; /* posted jobs not yet answered (loop thread only) */
  size_t n_inflight, cap_inflight;

  outgoing *outgoing;
  json_int_t next_out_id;
  bool client_config_pull; /* client supports workspace/configuration */
  bool client_progress;    /* client supports window/workDoneProgress */
  bool client_action_resolve; /* client resolves a code action's edit lazily */
  bool client_watch_dynamic; /* client registers file watchers on request */
  const sc_lsp_feature *feature; /* completions, code actions, commands */
  void *feature_state;           /* its state (owned) */
  struct ev_loop *loop; /* the transport's, or NULL */

  pthread_mutex_t log_mu;
  log_entry *log_head, *log_tail;
  size_t log_count, log_dropped;
  _Atomic int client_log_level; /* window/logMessage threshold */

  sc_server_progress *progress; /* tokens not yet ended (progress.c) */
  int next_progress_id;
  /* The method being answered (a handler's or a job's), for last_error. */
  const char *answering;
  last_error last_error;
  loop_timing timing; /* the loop's calls into the server (sculpt/test/stats) */
};

/* ======================= rpc.c ============================================= */

/* A response to one of our requests: runs its on_response. */
void sc_server__handle_response(sc_lsp_server *s, json_t *msg);
/* The log sink while the server lives: queues lines for window/logMessage. */
void sc_server__log_sink(void *user, sc_log_level level, const char *text);
/* Sends the queued log lines (not before initialize is answered). */
void sc_server__flush_logs(sc_lsp_server *s);
void sc_server__set_client_log_level(sc_lsp_server *s, sc_log_level level);
/* $/setTrace and initialize's trace: off, messages, verbose. */
bool sc_server__level_from_trace(const char *trace, sc_log_level *out);

/* sc_lsp__send_request with a pointer handed back to on_response. */
void sc_server__send_request_with(sc_lsp_server *s, const char *method, json_t *params,
                                  void (*on_response)(sc_lsp_server *, json_t *, json_t *,
                                                      void *),
                                  void *user);

/* ======================= progress.c ======================================== */

/* Frees the tokens still open (at exit). */
void sc_server__progress_free_all(sc_lsp_server *s);

/* ======================= jobs.c ============================================ */

/* The one place a job's response is sent; frees the job. */
void sc_server__answer_job(sc_lsp_server *s, sc_job *job);
/* Cancels the in-flight jobs on a document (-32801). */
void sc_server__cancel_jobs_for_uri(sc_lsp_server *s, const char *uri);
/* Cancels every in-flight job: queued ones are answered now, running ones
 * flagged. */
void sc_server__cancel_all_jobs(sc_lsp_server *s, sc_job_cancel why);
void sc_server__handle_cancel(sc_lsp_req *r); /* $/cancelRequest */
/* Delivers running jobs' progress and finished jobs' answers (the part of
 * sc_lsp_server_drain that is about jobs). */
void sc_server__drain_jobs(sc_lsp_server *s);

/* ======================= core.c ============================================ */

/* params.textDocument.uri, or NULL after reporting the error. */
const char *sc_server__get_uri(sc_lsp_req *r);
/* Around each call from the loop into the server. */
void sc_server__loop_enter(sc_lsp_server *s);
void sc_server__loop_leave(sc_lsp_server *s);
/* The current call's clock starts again from now (sculpt/test/stats' reset). */
void sc_server__loop_restart(sc_lsp_server *s);

/* ======================= sync.c ============================================ */

void sc_server__handle_did_open(sc_lsp_req *r);
void sc_server__handle_did_change(sc_lsp_req *r);
void sc_server__handle_did_close(sc_lsp_req *r);
void sc_server__handle_did_save(sc_lsp_req *r);
void sc_server__handle_did_change_watched_files(sc_lsp_req *r);

/* ======================= test_hooks.c ====================================== */

void sc_server__handle_test_document(sc_lsp_req *r);
void sc_server__handle_test_offset(sc_lsp_req *r);
void sc_server__handle_test_sleep(sc_lsp_req *r);
void sc_server__handle_test_stats(sc_lsp_req *r);

#endif /* SCULPT_SERVER_IMPL_H */

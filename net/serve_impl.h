/*
 * serve_impl.h — what the files of `sculpt serve` share (and
 * tests/unit/test_serve_shape.c reaches into); nothing else includes it.
 * The server is split by layer:
 *
 *   serve.c        start and stop: options, model, loop, engine thread
 *   serve_conn.c   the HTTP connection layer: admission (the pool, the
 *                  per-client cap, the reserve for /health and /metrics),
 *                  accept, read, parse (http.c), write, timers, keep-alive,
 *                  pipelining, a client's EOF (half-close or gone),
 *                  lingering close, chunked/SSE framing
 *   serve_api.c    the routes: each complete request is handed to
 *                  sc_serve__route, which authorizes it and answers it
 *                  (health, metrics, models) or queues a completion and
 *                  delivers what the engine posts back
 *   serve_shape.c  request and response shaping: a JSON body (OpenAI's or
 *                  llama.cpp's /infill) into a job, what of a draft may be
 *                  streamed, results and stream events into JSON, error
 *                  bodies (pure: no I/O, no locks)
 *   serve_sched.c  the scheduler: the engine thread, the queue, admission
 *                  into the continuous batch, drafts and results posted
 *                  back through the outbox
 *
 * Threads: everything but serve_sched.c's engine thread runs on the libev
 * loop thread. A job is shared by the two; its mutable fields and the queue
 * are guarded by server.mu, and it is freed when its last reference (the
 * connection's, the engine's, the outbox's) goes.
 */
#ifndef SCULPT_SERVE_IMPL_H
#define SCULPT_SERVE_IMPL_H

#include "net.h"

#include <ev.h>
#include <jansson.h>
#include <pthread.h>

#define MAX_HEADER_BYTES (16 * 1024)
#define MAX_STOPS 16 /* Continue sends 12 to 14 */
#define MAX_INPUT_BUFFER (64 * 1024) /* unparsed (pipelined) bytes held per connection */
#define READ_SLICE_BYTES (256 * 1024) /* read from one connection per loop callback */
#define MAX_OUTPUT_BACKLOG (1 << 20) /* drafts are skipped while more is unsent */
/* No further pipelined request is parsed while more than this is unsent: a
 * client that pipelines without reading would otherwise make us buffer
 * answers without bound. */
#define MAX_PIPELINE_BACKLOG (64 * 1024)
#define LINGER_S 2.0
/* How often a half-closed client with a completion pending is checked for a
 * reset (see conn_watch_gone in serve_conn.c). */
#define GONE_CHECK_S 0.05
#define N_BUCKETS 12
/* Connections past --max-connections (or past a client's
 * --max-client-connections) that may still ask GET/HEAD /health or
 * /metrics, so that a load balancer's checks and the monitoring answer
 * while the pool is exhausted; each gets one request, within
 * RESERVED_TIMEOUT_S. When all are taken, the oldest still waiting for its
 * request gives its place up (see accept in serve_conn.c). */
#define RESERVED_CONNS 8
#define RESERVED_TIMEOUT_S 2.0

typedef struct server server;
typedef struct conn conn;
typedef struct intake intake;

enum job_state { JOB_QUEUED, JOB_LIVE, JOB_DONE, JOB_FAILED };

/* Which API a request came in by, which shapes its answer. */
enum job_api {
  API_OPENAI, /* POST /v1/fim/completions, /v1/completions */
  API_INFILL, /* POST /infill, llama.cpp's server shape */
};

typedef struct job {
  /* Set by the loop thread before the job is queued; read-only after. */
  enum job_api api;
  char *prompt, *suffix; /* the text before and after the middle */
  size_t prompt_len, suffix_len;
  int max_tokens;        /* the canvas; 0 (/infill n_predict 0): no decoding */
  sc_infill_params params;
  bool stream;
  bool stream_drafts;    /* stream each whole refining draft, not increments */
  char *stop[MAX_STOPS];
  int n_stop;
  int n_indent;          /* /infill: a line indented less ends the answer */
  char **fields;         /* /infill response_fields (n_fields), or NULL */
  int n_fields;
  char id[48];
  long long created;
  double t_start;
  /* Guarded by server.mu. */
  int refs;
  enum job_state state;
  bool cancelled;
  bool in_outbox;
  struct job *next_q;   /* the pending queue */
  struct job *next_out; /* the outbox */
  char *draft;          /* newest draft not yet sent (owned), or NULL: the
                           whole draft (stream_drafts) or its stable prefix */
  size_t draft_len;
  int draft_step;
  /* Written by the engine thread before the state turns DONE or FAILED;
   * read-only afterwards. */
  char *text;
  size_t text_len;
  const char *finish_reason;
  int stop_hit;         /* the stop string that ended the answer, or -1 */
  bool indent_cut;      /* n_indent ended it */
  bool ended;           /* the model ended it (EOS) */
  bool truncated;       /* prompt or suffix tokens were dropped to fit */
  int prompt_tokens, completion_tokens, steps;
  double t_admit, t_done; /* sc_now_ms() at admission and at the end */
  int err_status;
  char err_msg[256];
  /* Engine thread only. */
  int slot;
  int stable_posted;    /* canvas positions of the stable prefix last posted */
  /* Loop thread only. */
  conn *conn;
} job;

struct conn {
  server *s;
  int fd;
  ev_io rw, ww;
  ev_timer timer;
  ev_timer gone_w;  /* after EOF with a completion pending: is the client gone? */
  sc_http_reader *rd;
  char *in;
  size_t in_len, in_cap;
  char *out;
  size_t out_start, out_len, out_cap;
  bool busy;        /* a request is being answered */
  bool closing;     /* answered with close: draining until EOF or LINGER_S */
  bool close_after; /* close once the output is flushed */
  bool keep_alive;
  bool http10;      /* the current request is HTTP/1.0 */
  bool head;        /* the current request is HEAD: answers carry no body */
  bool sse_started;
  bool chunked;     /* the streamed body is chunked (not for HTTP/1.0) */
  bool req_timer;  /* the timer times the current request, not idleness */
  bool continued;  /* a 100 (Continue) went out for the current request */
  bool eof;        /* the client closed its side */
  bool probed;     /* a 100 (Continue) went out after EOF (conn_watch_gone) */
  bool in_process; /* inside conn_process: answers do not recurse into it */
  bool reserved;   /* one of the RESERVED_CONNS: /health and /metrics only */
  int last_step_sent; /* stream_drafts: the newest draft's step sent */
  size_t sent;        /* increments: bytes of the answer sent so far */
  job *job;
  intake *intake;   /* the current request's body, being parsed off the loop */
  double t_request;
  unsigned char client[16]; /* the client's address (see client_key) */
  conn *prev, *next;
};

/* Open connections per client address (the pool's, not the reserved
 * ones): an open-addressing table with linear probing, sized at start. */
typedef struct client_slot {
  unsigned char key[16];
  int count; /* 0: empty */
} client_slot;

struct server {
  sc_serve_options o;
  struct ev_loop *loop;
  ev_io listen_w;
  ev_async wake_w;
  ev_signal sigint_w, sigterm_w;
  ev_check reap_w;
  int listen_fd;
  conn *conns;
  conn *dead; /* closed, freed after the callbacks of this iteration */
  int n_conns;  /* all open connections, the reserved ones included */
  conn *reserved[RESERVED_CONNS]; /* the reserved ones, in the order accepted */
  int n_reserved;
  client_slot *clients; /* per-client counts, n_clients_cap slots (a power of 2) */
  size_t n_clients_cap;
  char model_name[128];
  const char *api_key;
  size_t api_key_len;
  sc_model *model;
  sc_tokenizer *tok;
  sc_engine *engine;
  sc_engine_batch *batch;
  const sc_model_info *info;
  int context;
  long long started; /* time() at start, the model's "created" */
  unsigned long long next_id;

  pthread_t thread;
  bool thread_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Guarded by mu. */
  bool stop;
  job *q_head, *q_tail;
  int n_pending; /* the queue's jobs and the one admit() is moving into the
                    batch; n_pending + n_live <= queue + batch always */
  job *out_head, *out_tail;
  job *live[SC_INFILL_MAX_BATCH]; /* by batch slot */
  int n_live, max_live;
  unsigned long long passes, request_steps, gen_tokens, prompt_tokens, cancelled;
  /* Loop thread only. */
  unsigned long long by_status[600];
  unsigned long long lat_buckets[N_BUCKETS + 1];
  double lat_sum;
  unsigned long long lat_count;
  /* The loop's own CPU time per iteration, from the first watcher after
   * the poll (awake_w, a check at top priority) to the next prepare
   * (asleep_w, lowest): /metrics shows the most, so a stall shows. */
  ev_check awake_w;
  ev_prepare asleep_w;
  double iter_cpu0_ms, iter_cpu_max_ms;

  /* serve_intake.c: long bodies parsed off the loop. */
  pthread_t intake_thread;
  bool intake_started;
  pthread_mutex_t intake_mu;
  pthread_cond_t intake_cv;
  /* Guarded by intake_mu. */
  bool intake_stop;
  intake *intake_head, *intake_tail; /* waiting for the thread */
  intake *parsed_head, *parsed_tail; /* parsed, waiting for the loop */
};

/* The upper bounds of the completion latency histogram's buckets (s). */
extern const double sc_serve__buckets[N_BUCKETS];

/* ---- serve_conn.c: the HTTP connection layer --------------------------------
 * Loop thread only. Every call that may close c leaves it readable
 * (c->fd < 0) until the loop's check phase frees it. */

/* Binds and listens on o.listen; prints "sculpt serve: listening on ...".
 * Also sizes the per-client table. */
sc_status sc_serve__listen(server *s, sc_error *err);
void sc_serve__accept_cb(struct ev_loop *loop, ev_io *w, int revents);
/* Frees the connections closed during this loop iteration. */
void sc_serve__reap(server *s);
void sc_serve__reap_cb(struct ev_loop *loop, ev_check *w, int revents);
/* Closes now; a completion still pending is cancelled (a 499). */
void sc_serve__conn_close(conn *c);
/* Writes what it can. False when the connection was closed. */
bool sc_serve__conn_flush(conn *c);
/* Closes once what is queued is sent (a lingering close). */
void sc_serve__conn_close_when_sent(conn *c);
/* Queues bytes (nothing while lingering). False when the connection was
 * closed. */
bool sc_serve__conn_send(conn *c, const char *data, size_t len);
/* The request is answered: counted, and the next one read (or close). */
void sc_serve__conn_request_done(conn *c, int status, bool completion);
/* A whole response; extra is more header lines, each ending in CRLF. */
void sc_serve__conn_respond(conn *c, int status, const char *ctype, const char *body,
                            size_t len, const char *extra, bool completion);
/* o is dumped and released. */
void sc_serve__conn_respond_json(conn *c, int status, json_t *o, const char *extra,
                                 bool completion);
/* An error answer with OpenAI's error body; close: the connection closes
 * after it. */
void sc_serve__conn_error(conn *c, int status, const char *msg, bool close);
/* Server-sent events: the head (once), events (o is dumped and released),
 * and the end (done_marker: `data: [DONE]`; then the last chunk when
 * chunked). */
void sc_serve__sse_start(conn *c);
void sc_serve__sse_event(conn *c, json_t *o);
void sc_serve__sse_end(conn *c, bool done_marker);

/* ---- serve_api.c: the routes ------------------------------------------------ */

/* Answers one complete request (the connection layer calls it). */
void sc_serve__route(conn *c, const sc_http_request *q);
/* The loop side of the outbox: delivers what the engine posted. */
void sc_serve__wake_cb(struct ev_loop *loop, ev_async *w, int revents);
/* At shutdown: requests still open get a last word (best effort). */
void sc_serve__last_words(server *s);

/* ---- serve_shape.c: request and response shaping ---------------------------- */

/* A JSON string of text; bytes that are not valid UTF-8 become U+FFFD. */
json_t *sc_serve__json_text(const char *text, size_t len);
/* OpenAI's error body {"error": {message, type, param, code}}. */
json_t *sc_serve__error_body(const char *msg, const char *type);
/* The decoding parameters a job starts from: sculpt's block loop with
 * blocks of 32, and no DreamOn growth (the batch decodes fixed-length
 * canvases), which is also what the context is fitted for. */
void sc_serve__job_params(sc_infill_params *p);
/* Validates a request body into a new job (owned by the caller), or NULL
 * with msg filled on a bad request: the OpenAI completions shape, or
 * llama.cpp's /infill shape. */
job *sc_serve__parse_completion(const server *s, const char *body, size_t len, char *msg,
                                size_t msg_len);
job *sc_serve__parse_infill(const server *s, const char *body, size_t len, char *msg,
                            size_t msg_len);
/* Where the answer in text[0..len) ends: at the first stop string
 * (*stop_hit = its index, else -1) or, with n_indent, at a line indented
 * less (*indent_cut). The engine thread calls it too (j is read-only). */
size_t sc_serve__answer_end(const job *j, const char *text, size_t len, int *stop_hit,
                            bool *indent_cut);
/* Of a stable prefix text[0..len) of the answer-to-be, how many bytes can
 * be streamed now: no byte after the answer's end, none that may still
 * turn out to begin a stop string, no UTF-8 sequence cut short. */
size_t sc_serve__sendable(const job *j, const char *text, size_t len);
/* A streamed event of j's answer: an increment (drafts off), a whole draft
 * with its step (drafts on), or the last one (final: finish_reason, usage,
 * the /infill totals). */
json_t *sc_serve__stream_event(const server *s, const job *j, const char *text, size_t len,
                               int step, bool final);
/* The whole answer of a request that was not streamed. */
json_t *sc_serve__answer(const server *s, const job *j);

/* ---- serve_intake.c: long bodies parsed off the loop -------------------------
 * jansson decodes about 75 MB/s, so a body near max_body (4 MiB) held the
 * loop, and every other connection's answers, 70-90 ms (a /health probe
 * beside it, measured). A body of SC_SERVE_INTAKE_BYTES or more is parsed
 * on the intake thread instead; its connection is busy meanwhile (nothing
 * it pipelines is read past MAX_INPUT_BUFFER), and the parsed job comes
 * back to the loop through the wake-up the engine uses. */
#define SC_SERVE_INTAKE_BYTES ((size_t)256 << 10)
/* Takes the body of c's current request (the reader gives it up) and
 * queues its parse; false (nothing taken, nothing started) when there is no
 * memory or thread for it, and the caller parses on the loop. */
bool sc_serve__intake_submit(conn *c, enum job_api api);
/* Loop thread: each parse that finished goes to done(c, job, msg), with
 * the job (owned by the callee) or NULL and the bad request's message; one
 * whose connection closed meanwhile is dropped. */
typedef void (*intake_done_fn)(conn *c, job *j, const char *msg);
void sc_serve__intake_drain(server *s, intake_done_fn done);
/* The connection closed: its parse's result will be dropped. */
void sc_serve__intake_forget(conn *c);
/* Stops and joins the thread and frees what it held. */
void sc_serve__intake_stop(server *s);

/* ---- serve_sched.c: the scheduler ------------------------------------------- */

/* A snapshot of the scheduler's counters (for /health and /metrics). */
typedef struct sched_counts {
  int pending, live, max_live;
  unsigned long long passes, steps, gen_tokens, prompt_tokens, cancelled;
} sched_counts;

void sc_serve__job_free(job *j); /* a job never shared; NULL is fine */
void sc_serve__job_release(server *s, job *j);
/* Queues j (refs already 2: the connection's and the engine's) unless the
 * queue and the batch are full: then false, and j was not shared. */
bool sc_serve__sched_submit(server *s, job *j);
/* The client left: a queued job leaves the queue now, a live one at the
 * next step boundary. Drops the connection's reference. */
void sc_serve__sched_cancel(server *s, job *j);
/* What the engine posted for one job, taken from the outbox. */
typedef void (*sched_deliver_fn)(server *s, job *j, char *draft, size_t draft_len, int step,
                                 enum job_state state);
/* Takes the outbox and calls deliver for each job in it (loop thread). */
void sc_serve__sched_drain(server *s, sched_deliver_fn deliver);
void sc_serve__sched_counts(server *s, sched_counts *out);
sc_status sc_serve__sched_start(server *s, sc_error *err);
/* Stops and joins the engine thread. */
void sc_serve__sched_stop(server *s);
/* After the connections are closed: what the engine thread left (queued
 * jobs, live ones, the outbox). */
void sc_serve__sched_release_all(server *s);

#endif /* SCULPT_SERVE_IMPL_H */

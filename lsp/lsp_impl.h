/*
 * lsp_impl.h — the daemon's private parts: framing, positions, documents,
 * the worker, and the server as its handlers see it (the sc_lsp__
 * functions, the dispatch table's rows and the feature's hooks). Only lsp/
 * sources and the unit tests include this. The server core's own state is
 * in server_impl.h, the completion feature's in completer_impl.h; neither
 * includes the other.
 *
 * Layers. A file calls only files below it (tests/protocol/test_lsp_layers.py
 * checks the built objects); the one way up is a table of hooks (the
 * server's dispatch into the feature, a job's done callback). Bottom to top:
 *   position, framing, worker,       the parts: offsets, frames, threads,
 *   reaper                           frees off the loop
 *   document, rpc                    texts and trees; messages out
 *   core                             the server as its parts see it
 *   jobs, progress                   requests in flight; $/progress
 *   sync, test_hooks                 the core's own handlers
 *   settings, cache, shape           the completion feature's bottom
 *   model_slot                       the model, its load and sessions
 *   index                            the workspace index
 *   prompt                           what the prompt is built from
 *   remote                           the remote backend
 *   inline, actions                  completions and code actions
 *   completer                        the feature's front: hooks, settings' effects
 *   server                           lifecycle and dispatch
 *   stdio                            the front door (libev, stdin, stdout)
 */
#ifndef SCULPT_LSP_IMPL_H
#define SCULPT_LSP_IMPL_H

#include "lsp.h"

#include <jansson.h>
#include <stdatomic.h>

/* ======================= framing ========================================== */

/* Splits a byte stream into message bodies. Each message is
 *   Content-Length: N\r\n [Content-Type: ...\r\n] \r\n <N bytes>
 * Bytes that do not start a valid header are skipped up to the next header
 * name; a body larger than the limit is skipped as it arrives, so the stream
 * stays in sync without buffering it. */
typedef struct sc_frame_reader {
  char *buf;         /* pending bytes [start, len) */
  size_t start, len, cap;
  size_t max_message;
  size_t skip_remaining; /* bytes of an oversized body still to drop */
  size_t body_needed;    /* >0: header parsed, waiting for this many body bytes */
  bool paused;           /* set by the callback: the frames after wait, buffered,
                            until it is cleared and feed is called again */
  /* counters, for logs and tests */
  size_t garbage_bytes;  /* total bytes skipped as garbage */
  size_t oversized;      /* messages dropped for size */
  size_t messages;       /* bodies delivered */
} sc_frame_reader;

typedef enum sc_frame_event {
  SC_FRAME_MESSAGE,   /* body, len: one complete message body (borrowed) */
  SC_FRAME_GARBAGE,   /* len bytes were skipped before a header */
  SC_FRAME_OVERSIZED, /* a message of len bytes exceeds the limit; skipped */
} sc_frame_event;

typedef void (*sc_frame_fn)(void *user, sc_frame_event ev, const char *body, size_t len);

void sc_frame_reader_init(sc_frame_reader *r, size_t max_message);
void sc_frame_reader_free(sc_frame_reader *r);
/* Consumes data and calls fn for each event, in stream order; while paused
 * it only buffers (feed with no data delivers what waited, once the pause
 * is cleared). Returns SC_ERR_NOMEM when the buffer cannot grow (the data
 * is then dropped). */
sc_status sc_frame_reader_feed(sc_frame_reader *r, const char *data, size_t len,
                               sc_frame_fn fn, void *user);
/* From fn, for the SC_FRAME_MESSAGE being delivered: hands over the
 * reader's buffer, which holds the body (its pointer stays valid; owned by
 * the caller now, free()), and starts a new one with the bytes after it,
 * so that a long body is not copied. NULL (nothing changed) on OOM. */
char *sc_frame_reader_take(sc_frame_reader *r);

/* ======================= positions ========================================= */

typedef enum sc_pos_encoding {
  SC_POS_UTF8 = 1,  /* character = bytes */
  SC_POS_UTF16 = 2, /* character = UTF-16 code units (LSP's default) */
  SC_POS_UTF32 = 3, /* character = code points */
} sc_pos_encoding;

const char *sc_pos_encoding_name(sc_pos_encoding enc);

/* Byte offsets where each line starts. Lines end at \n or \r\n; a lone \r
 * is a character of its line, as Neovim and Emacs count it (position.c). */
typedef struct sc_line_index {
  size_t *starts; /* starts[0] == 0; n entries */
  size_t n, cap;
} sc_line_index;

sc_status sc_line_index_build(sc_line_index *idx, const char *text, size_t len);
/* After an edit replaced bytes [a, old_b) of the text idx indexed with ins
 * bytes, giving text (len bytes): idx is made the new text's, as
 * sc_line_index_build would make it, in time for the lines after the edit
 * rather than the bytes of the whole text. SC_ERR_NOMEM leaves it as it
 * was. */
sc_status sc_line_index_splice(sc_line_index *idx, const char *text, size_t len, size_t a,
                               size_t old_b, size_t ins);
void sc_line_index_free(sc_line_index *idx);
/* The line (0-based) holding byte off: the last start at or before it. */
uint32_t sc_line_index_line_of(const sc_line_index *idx, size_t off);

/* Decodes one UTF-8 character at text[i] (i < len). Returns its byte length
 * (1..4) and stores the code point; an invalid or truncated sequence is one
 * byte long and decodes as U+FFFD, as editors display it. */
size_t sc_utf8_decode(const char *text, size_t len, size_t i, uint32_t *cp);

/* LSP position -> byte offset. Positions past the end of a line clamp to the
 * line's end (before its terminator), but one unit past a line ending in
 * \r\n is after the \r (a client that counts it in the line); lines past the
 * end clamp to the end of the text; a character inside a multi-unit
 * character rounds down to its start. *clamped (may be NULL) says whether
 * clamping happened. */
size_t sc_pos_to_offset(const char *text, size_t len, const sc_line_index *idx,
                        uint32_t line, uint32_t character, sc_pos_encoding enc,
                        bool *clamped);

/* The units of enc that text counts (as a line's characters do). */
uint32_t sc_text_units(const char *text, size_t len, sc_pos_encoding enc);

/* Byte offset -> LSP position (offset clamped to len; an offset inside a
 * character or a \r\n pair counts as the character's start). */
void sc_offset_to_pos(const char *text, size_t len, const sc_line_index *idx,
                      size_t offset, sc_pos_encoding enc, uint32_t *line,
                      uint32_t *character);

/* ======================= documents ========================================= */

typedef struct sc_document {
  char *uri;
  char *language_id;
  int64_t version;
  char *text; /* UTF-8 as the client sent it, NUL-terminated; len excludes NUL */
  size_t len, cap;
  sc_line_index lines;
  bool lines_valid;
  uint64_t edit_seq; /* bumps on every change; jobs compare it */
  /* The syntax tree follows the text lazily and is parsed only off the
   * loop: edits are queued as they come (a keystroke costs a copy, not a
   * reparse); a request copies the tree and the queue (a syntax snapshot),
   * its job parses on its worker, and the loop keeps the result for the
   * next request (sc_document_syntax_adopt). */
  const char *lang;              /* sculpt's language name, NULL = no grammar */
  struct sc_syntax_tree *tree;   /* the last parsed tree, NULL: parse the text afresh */
  struct sc_pending_edit *edits; /* queued edits since tree (or since a snapshot of the
                                    text, without one), in order */
  size_t n_edits, cap_edits;
  uint64_t tree_gen;             /* changes whenever tree or the queue's start does */
  /* An incremental change that cannot apply (a reversed range, a line past
   * the end) leaves the text out of step with the client's: until a full
   * text arrives, changes are not applied and nothing is offered in it. */
  bool unsynced;
  bool size_warned; /* the feature told the user this document is too large */
  /* For repository context (issue #6). */
  struct sc_document_store *store; /* the store it is open in (borrowed) */
  double last_used_ms;  /* sc_now_ms() of the last open, edit or request */
  double last_index_ms; /* the last refresh of its workspace index entry */
  bool index_dirty;     /* edited since that refresh */
} sc_document;

/* A recently edited line range, kept by the store across documents. Lines
 * are 0-based and inclusive, in the document's text as it is now (later
 * edits above a range shift it). */
typedef struct sc_recent_edit {
  char *uri;
  uint32_t start_line, end_line;
  double when_ms; /* sc_now_ms() of the latest edit merged into it */
} sc_recent_edit;

#define SC_RECENT_EDITS 16

typedef struct sc_pending_edit {
  size_t start, old_end;
  char *text;
  size_t len;
} sc_pending_edit;

/* A request's view of its document's syntax: made on the loop (a copy of
 * the last tree and copies of the edits queued since, or the text when
 * there is no tree), parsed on the request's worker, and handed back to the
 * document on the loop, so that the loop never runs the parser. */
typedef struct sc_syntax_snapshot sc_syntax_snapshot;
typedef struct sc_job sc_job; /* below, with the worker */

/* Loop thread. NULL when the document has no grammar (err untouched), or
 * with err set when memory ran out or the grammar cannot load (the document
 * is then treated as having none). Costs a copy of the text. */
sc_syntax_snapshot *sc_document_syntax_snapshot(sc_document *doc, sc_error *err);
/* The job's thread: the tree at the snapshot's text, parsed (incrementally
 * when the snapshot has an old tree) in slices that stop as soon as job is
 * cancelled (job may be NULL: never stopped). Owned by the snapshot; NULL
 * with err set when stopped (SC_ERR_CANCELLED) or failed. */
struct sc_syntax_tree *sc_syntax_snapshot_parse(sc_syntax_snapshot *snap, sc_job *job,
                                                sc_error *err);
/* Loop thread: the document uri names keeps a copy of the snapshot's parsed
 * tree, and drops the edits it covers, unless the document's tree changed
 * meanwhile (closed, replaced, adopted from another request). */
void sc_document_syntax_adopt(struct sc_document_store *store, const char *uri,
                              const sc_syntax_snapshot *snap);
void sc_syntax_snapshot_free(sc_syntax_snapshot *snap);
/* Frees the document's tree and queue: the next snapshot parses afresh. */
void sc_document_drop_syntax(sc_document *doc);

/* Frees, on a thread of its own, what the loop lets go of and would take
 * it long to free (a big document's syntax tree). */
typedef struct sc_reaper sc_reaper;
/* NULL when no thread could be started. */
sc_reaper *sc_reaper_new(void);
/* Takes p (owned by the reaper from now on; NULL is ignored) and frees it
 * with free_fn soon, in the order given. Any thread. With r NULL, or no
 * memory to queue it, frees it before returning. weight: about how many
 * bytes freeing it gives back (0 where it is likely shared); once the
 * weights add up, the heap's free pages go back to the system when the
 * reaper has been idle a second. */
void sc_reaper_put(sc_reaper *r, void (*free_fn)(void *), void *p, size_t weight);
/* Frees what still waits, then stops its thread. */
void sc_reaper_free(sc_reaper *r);

typedef struct sc_document_store sc_document_store;

sc_document_store *sc_document_store_new(void);
void sc_document_store_free(sc_document_store *store);
size_t sc_document_store_count(const sc_document_store *store);

/* Borrowed; NULL when not open. */
sc_document *sc_document_store_get(sc_document_store *store, const char *uri);
/* Opens (or replaces) a document. */
sc_status sc_document_store_open(sc_document_store *store, const char *uri,
                                 const char *language_id, int64_t version,
                                 const char *text, size_t len, sc_error *err);
/* A document's text made ahead of its didOpen, off the loop (server.c's
 * parse thread): the bytes, sized as a document's, and their line index.
 * An 8 MB copy into fresh pages and its index cost the loop 20-30 ms. */
typedef struct sc_document_text {
  char *text; /* owned */
  size_t len, cap;
  sc_line_index lines;
  bool lines_valid;
} sc_document_text;
sc_status sc_document_text_make(const char *src, size_t len, sc_document_text *out);
void sc_document_text_free(sc_document_text *t); /* the members; zeroed */
/* sc_document_store_open with a text made ahead: adopted (*made is zeroed)
 * when it succeeds, left to the caller otherwise. */
sc_status sc_document_store_open_made(sc_document_store *store, const char *uri,
                                      const char *language_id, int64_t version,
                                      sc_document_text *made, sc_error *err);
/* Returns false when the document was not open. */
bool sc_document_store_close(sc_document_store *store, const char *uri);

/* The last SC_RECENT_EDITS edited ranges across documents, most recent
 * first: each change extends (merges with) a range it touches or adjoins in
 * the same document. Borrowed; valid until the next edit. Closed documents'
 * ranges stay (their files keep the edits). */
const sc_recent_edit *sc_document_store_recent_edits(const sc_document_store *store, size_t *n);
/* Up to max open documents other than except (may be NULL), most recently
 * used first, into out (borrowed pointers). Returns how many. */
size_t sc_document_store_recent_docs(sc_document_store *store, const sc_document *except,
                                     sc_document **out, size_t max);
/* Marks the document used now (a completion request in it). */
void sc_document_touch(sc_document *doc);
/* The server's open documents (loop thread only). */
sc_document_store *sc_lsp__documents(sc_lsp_server *s);

/* Replaces the whole text. */
sc_status sc_document_set_text(sc_document *doc, const char *text, size_t len,
                               sc_error *err);
/* Replaces the range [start, end) given as LSP positions. A character past
 * the end of its line counts as the line's end (LSP says so); *clamped
 * reports whether that happened. SC_ERR_INVALID, with nothing changed, for
 * a range that cannot be meant: reversed (start after end), or a line past
 * the end of the document (the line just after the last one, at character
 * 0, is its end, as clients write it). */
sc_status sc_document_apply_edit(sc_document *doc, uint32_t start_line,
                                 uint32_t start_char, uint32_t end_line,
                                 uint32_t end_char, sc_pos_encoding enc,
                                 const char *text, size_t len, bool *clamped,
                                 sc_error *err);
/* One change of a didChange: the range [start, end) as LSP positions. */
typedef struct sc_text_change {
  uint32_t sl, sc, el, ec;
  const char *text; /* borrowed */
  size_t len;
} sc_text_change;
/* Applies n changes in one pass when each lies wholly before the one ahead
 * of it (VS Code sends a replace-all or a format so, in reverse document
 * order), each position inside its line: then every position means in the
 * text as it is what it would mean after the changes ahead of it, and the
 * result is what sc_document_apply_edit would make of them one by one.
 * SC_ERR_UNSUPPORTED, with nothing changed, for any other batch (the caller
 * applies it one by one); SC_ERR_NOMEM likewise. */
sc_status sc_document_apply_reversed(sc_document *doc, const sc_text_change *ch, size_t n,
                                     sc_pos_encoding enc, sc_error *err);
/* The same for changes in the order they were made (eglot's and Neovim's
 * batches): each starts at or after where the one before it ended, in the
 * text as that one left it. Refused (SC_ERR_UNSUPPORTED, nothing changed)
 * otherwise, and where a \r is near a change (a \r\n could form or split),
 * or a position lies past its line's end. */
sc_status sc_document_apply_in_order(sc_document *doc, const sc_text_change *ch, size_t n,
                                     sc_pos_encoding enc, sc_error *err);
/* The same for changes in any order: the text is cut into blocks of whole
 * lines for the batch, so that a change moves its block's bytes, not the
 * document's (20,000 changes in random order in a 1 MB file held the loop
 * 0.5 s one by one, and O(changes x text) grows without bound). Refused
 * (SC_ERR_UNSUPPORTED, nothing changed) where a position lies past its
 * line's end or past the text, a range is reversed, or a \r is near a
 * change. */
sc_status sc_document_apply_any_order(sc_document *doc, const sc_text_change *ch, size_t n,
                                      sc_pos_encoding enc, sc_error *err);
/* The document's line index, rebuilt when stale. NULL on OOM. */
const sc_line_index *sc_document_lines(sc_document *doc);

/* ======================= worker ============================================ */

typedef enum sc_job_cancel {
  SC_JOB_LIVE = 0,
  SC_JOB_CANCELLED = 1, /* $/cancelRequest -> -32800 */
  SC_JOB_STALE = 2,     /* a newer edit of its document -> -32801 */
  SC_JOB_SHUTDOWN = 3,  /* the server is going away */
} sc_job_cancel;

typedef struct sc_job sc_job;

/* Runs on the worker thread. Returns a result (owned; json_null() is a
 * valid result) or NULL with *err filled. It should poll sc_job_cancelled()
 * between steps and return NULL with SC_ERR_CANCELLED when asked to stop. */
typedef json_t *(*sc_job_fn)(sc_job *job, void *arg, sc_error *err);

/* Which worker thread runs a job. Each lane is one thread, in order, so a
 * job only ever waits behind jobs of its own kind. */
typedef enum sc_job_lane {
  SC_LANE_MODEL,      /* requests that use the engine (one model, one thread) */
  SC_LANE_BACKGROUND, /* long internal jobs: the workspace index */
  SC_LANE_NETWORK,    /* requests that wait on the remote backend, not the engine */
  SC_LANE_COUNT
} sc_job_lane;

struct sc_job {
  json_t *id;        /* the request id (owned reference) */
  char *method;      /* for logs */
  char *uri;         /* the document it depends on, or NULL */
  sc_job_fn fn;
  void *arg;
  void (*free_arg)(void *arg);
  atomic_int cancel; /* sc_job_cancel */
  /* Runs on the loop thread when the job is done, before its response (or
   * instead of one, for internal jobs with no id). May replace result. */
  void (*on_done)(sc_lsp_server *s, sc_job *job);
  /* Set by on_done when the answer comes later, from the loop (the remote
   * backend's HTTP request): the job then stays in flight until
   * sc_lsp__answer_deferred. on_cancel (set with it) must release what the
   * job waits on, without answering; the server then answers -32800/-32801. */
  bool deferred;
  void (*on_cancel)(sc_lsp_server *s, sc_job *job);
  sc_job_lane lane;  /* the worker it runs on */
  struct sc_worker *worker; /* that worker, to wake the loop for a report */
  double queued_ms;
  /* What the job reports while it runs (sc_job_report, from its thread):
   * the latest numbers wait here until the loop's next drain hands them to
   * on_progress (set when posting; NULL: reports are dropped). */
  void (*on_progress)(sc_lsp_server *s, sc_job *job, uint64_t done, uint64_t total);
  _Atomic uint64_t progress_done, progress_total;
  atomic_bool progress_pending;
  /* filled by the worker */
  json_t *result;
  sc_error err;
  bool ran;
  sc_job *next;
};

static inline sc_job_cancel sc_job_cancelled(sc_job *job) {
  return (sc_job_cancel)atomic_load_explicit(&job->cancel, memory_order_relaxed);
}

typedef struct sc_worker sc_worker;

typedef void (*sc_worker_done_fn)(void *user);

/* threaded=false runs each job inline inside sc_worker_post (fuzzing).
 * parse_bytes: the longest text the worker's jobs should parse on its own
 * stack (context/syntax.c; longer ones parse on a thread of their own); 0:
 * the default stack. */
sc_worker *sc_worker_new(bool threaded, size_t parse_bytes, sc_worker_done_fn on_done,
                         void *user);
/* Marks every job SC_JOB_SHUTDOWN and joins the thread; the job that was
 * running is then in the done list. Idempotent. */
void sc_worker_stop(sc_worker *w);
/* Stops the worker, then frees every job not taken back. */
void sc_worker_free(sc_worker *w);
/* Takes ownership of job. */
void sc_worker_post(sc_worker *w, sc_job *job);
/* Pops finished jobs (FIFO); the caller owns and frees them. */
sc_job *sc_worker_take_done(sc_worker *w);
/* Removes a job from the queue if it has not started. Returns the job
 * (caller owns it) or NULL when it is running or done. */
sc_job *sc_worker_unqueue(sc_worker *w, sc_job *job);
/* Applies fn to every queued and the running job under the lock. */
void sc_worker_each(sc_worker *w, void (*fn)(sc_job *job, void *arg), void *arg);
size_t sc_worker_pending(sc_worker *w);

void sc_job_free(sc_job *job);

/* On the job's thread: records how far the job is and wakes the loop,
 * which passes the latest numbers to job->on_progress at its next drain
 * (sc_lsp_server_drain). Cheap: call it as often as progress is made. */
void sc_job_report(sc_job *job, uint64_t done, uint64_t total);
/* Wakes the loop as a finished job does (the server's wake callback). */
void sc_worker_wake(sc_worker *w);

/* On the job's thread: waits ms milliseconds in 1 ms steps, so that a
 * cancel takes effect at once. False (after less than ms) when cancelled. */
bool sc_job_wait(sc_job *job, double ms);

/* ======================= the server, for handlers ========================= */
/* What a handler (the feature's, or the core's own) may ask of the server.
 * Loop thread only. Double underscores: private to lsp/, shared by files. */

enum {
  SC_RPC_PARSE_ERROR = -32700,
  SC_RPC_INVALID_REQUEST = -32600,
  SC_RPC_METHOD_NOT_FOUND = -32601,
  SC_RPC_INVALID_PARAMS = -32602,
  SC_RPC_INTERNAL_ERROR = -32603,
  SC_RPC_SERVER_NOT_INITIALIZED = -32002,
  SC_RPC_REQUEST_FAILED = -32803,
  SC_RPC_REQUEST_CANCELLED = -32800,
  SC_RPC_CONTENT_MODIFIED = -32801,
};

/* One incoming request or notification. */
typedef struct sc_lsp_req {
  sc_lsp_server *s;
  json_t *id; /* NULL for notifications */
  const char *method;
  json_t *params; /* may be NULL */
} sc_lsp_req;

/* Takes ownership of result / params. */
void sc_lsp__send_result(sc_lsp_server *s, json_t *id, json_t *result);
void sc_lsp__send_error(sc_lsp_server *s, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sc_lsp__send_notification(sc_lsp_server *s, const char *method, json_t *params);
/* An error response for requests, a log line for notifications. */
bool sc_lsp__bad_params(sc_lsp_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool sc_lsp__get_position(json_t *pos, uint32_t *line, uint32_t *character);
/* params.textDocument's open document, or NULL after reporting why. */
sc_document *sc_lsp__get_open_document(sc_lsp_req *r);
/* The open document uri names, or NULL (borrowed). */
sc_document *sc_lsp__find_document(sc_lsp_server *s, const char *uri);
sc_pos_encoding sc_lsp__encoding(const sc_lsp_server *s);
const sc_lsp_options *sc_lsp__options(const sc_lsp_server *s);
/* True when the client accepts window/workDoneProgress/create. */
bool sc_lsp__client_progress(const sc_lsp_server *s);
/* The client resolves code actions' edits lazily (codeAction/resolve). */
bool sc_lsp__client_action_resolve(const sc_lsp_server *s);
/* Sends a server->client request; on_response runs when the answer comes. */
void sc_lsp__send_request(sc_lsp_server *s, const char *method, json_t *params,
                          void (*on_response)(sc_lsp_server *, json_t *, json_t *));
/* Work-done progress the server starts (LSP 3.17): creates a token
 * "sculpt/KIND/N" and sends begin (title, message, percentage -1: none)
 * once the client accepts it. Each token goes begin -> report* -> end,
 * each once, whatever the order of the client's answer and the calls:
 * what comes before the answer waits (the latest report only), and a
 * refused token sends nothing. Returns the token's handle, 0 when the
 * client does not take progress (the other calls then do nothing). */
int sc_lsp__progress_begin(sc_lsp_server *s, const char *kind, const char *title,
                           const char *message, int percentage);
void sc_lsp__progress_report(sc_lsp_server *s, int id, const char *message, int percentage);
/* Ends the token (message may be NULL); the handle is void afterwards. */
void sc_lsp__progress_end(sc_lsp_server *s, int id, const char *message);
/* The last request that failed with an error worth showing (not a
 * cancellation, a changed document or an unknown method): its message
 * (borrowed, valid until the next response), code, method and time (ISO
 * 8601, UTC); NULL when there is none, or the method has succeeded since. */
const char *sc_lsp__last_error(const sc_lsp_server *s, int *code, const char **method,
                               const char **time);
/* Posts a job (id NULL: an internal job, never answered; its on_done runs).
 * Takes ownership of arg. Returns the job (still owned by the server) or
 * NULL when it was refused for lack of memory (the request is answered). */
sc_job *sc_lsp__post_job(sc_lsp_server *s, json_t *id, const char *method, const char *uri,
                         sc_job_fn fn, void *arg, void (*free_arg)(void *),
                         void (*on_done)(sc_lsp_server *s, sc_job *job));
/* sc_lsp__post_job on another lane: a request that only waits on the
 * network (SC_LANE_NETWORK) must not hold up the engine's queue. The job
 * must not touch the engine or what model-lane jobs use without a lock. */
sc_job *sc_lsp__post_job_on(sc_lsp_server *s, sc_job_lane lane, json_t *id, const char *method,
                            const char *uri, sc_job_fn fn, void *arg, void (*free_arg)(void *),
                            void (*on_done)(sc_lsp_server *s, sc_job *job));
/* A long internal job (no id, no document) on the background worker, so that
 * requests keep being served meanwhile: the workspace index. It must not
 * touch what jobs on the request worker use without a lock; its on_done
 * runs on the loop as usual. */
sc_job *sc_lsp__post_background_job(sc_lsp_server *s, const char *method, sc_job_fn fn,
                                    void *arg, void (*free_arg)(void *),
                                    void (*on_done)(sc_lsp_server *s, sc_job *job));
/* Cancels one job in flight (the handle sc_lsp__post_job returned): answered
 * now when still queued, else flagged for its function to stop. */
void sc_lsp__cancel_job(sc_lsp_server *s, sc_job *job);
/* Cancels the in-flight jobs of one method on one document (a newer request
 * supersedes them). */
void sc_lsp__cancel_method(sc_lsp_server *s, const char *method, const char *uri);
/* Answers a deferred job (job->result, or job->err) and frees it. */
void sc_lsp__answer_deferred(sc_lsp_server *s, sc_job *job);
/* The loop the transport runs (borrowed), for work that lives on it (the
 * remote backend's HTTP); NULL without one (fuzzing, unit tests). */
struct ev_loop;
void sc_lsp__set_loop(sc_lsp_server *s, struct ev_loop *loop);
struct ev_loop *sc_lsp__loop(sc_lsp_server *s);

/* ======================= the dispatch table and the feature ================ */
/* The server core (server.c and the files that share server_impl.h) answers
 * the lifecycle, text synchronisation and $/ methods itself. Everything else
 * a client asks for (completions, code actions, commands) belongs to the
 * feature: the server looks its methods up in the feature's table and tells
 * it of the session's events through its hooks. The feature reaches the
 * server only through the sc_lsp__ functions above, the server reaches the
 * feature only through this table, so neither includes the other's
 * internals. */

enum {
  SC_METHOD_REQUEST = 1u << 0,   /* has an id and gets a response; else a notification */
  SC_METHOD_TEST_HOOK = 1u << 1, /* answered only with opts.test_hooks */
};

/* A row of a dispatch table: the method's name, its handler and flags. */
typedef struct sc_lsp_method {
  const char *name;
  void (*fn)(sc_lsp_req *r);
  unsigned flags; /* SC_METHOD_* */
} sc_lsp_method;

typedef struct sc_lsp_feature {
  const sc_lsp_method *methods; /* the requests and notifications it answers */
  size_t n_methods;
  /* Its state, made with the server and freed with it, after the workers
   * have stopped; sc_lsp__feature() returns it. create: NULL on OOM. */
  void *(*create)(void);
  void (*destroy)(void *state);
  /* Adds the capabilities it implements to initialize's answer. */
  void (*capabilities)(json_t *caps);
  /* initialize: the workspace folder (a file:// URI). */
  void (*set_root)(sc_lsp_server *s, const char *root_uri);
  /* A "sculpt" settings object (initializationOptions, configuration). */
  void (*settings)(sc_lsp_server *s, json_t *settings);
  /* initialized: the session runs. */
  void (*start)(sc_lsp_server *s);
  /* A document changed (its edits applied, its jobs cancelled). */
  void (*on_change)(sc_lsp_server *s, sc_document *d);
  /* A document was saved. */
  void (*on_save)(sc_lsp_server *s, const char *uri);
  /* workspace/didChangeWatchedFiles: type is LSP's FileChangeType (1
   * created, 2 changed, 3 deleted). */
  void (*on_file_changed)(sc_lsp_server *s, const char *uri, int type);
  /* Counters merged into sculpt/test/stats (owned by the caller). */
  json_t *(*stats)(sc_lsp_server *s);
  /* The last error (sc_lsp__last_error) was set or cleared. */
  void (*on_error)(sc_lsp_server *s);
  /* A document was opened (its text is in the store). */
  void (*on_open)(sc_lsp_server *s, sc_document *d);
} sc_lsp_feature;

/* The completion feature (lsp/completer.c), the one the server runs. */
extern const sc_lsp_feature sc_completion_feature;

/* The feature's state (borrowed). */
void *sc_lsp__feature(sc_lsp_server *s);

#endif /* SCULPT_LSP_IMPL_H */

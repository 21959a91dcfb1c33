/*
 * completer_impl.h — the completion feature's private parts, shared by its
 * files (completer.c and the ones it names) and by nothing else: the
 * completer's state, the settings, the suggestion cache's entries, and the
 * functions one of its files calls in another. The server's side of the
 * feature is lsp_impl.h; the server never includes this header.
 *
 * Names: sc_cpl__ marks a function private to the completion feature but
 * shared between its files.
 */
#ifndef SCULPT_COMPLETER_IMPL_H
#define SCULPT_COMPLETER_IMPL_H

#include "context.h"
#include "lsp_impl.h"
#include "net.h"

typedef struct sc_completer sc_completer;

#define CACHE_ENTRIES 32
/* Text copied around the cursor for a job: enough bytes for the token budget
 * (code averages 3-4 bytes a token; 8 leaves room), never the whole file,
 * since tokenizing what the budget then drops is wasted time. */
#define WINDOW_BYTES_PER_TOKEN 8
/* Documents larger than this (setting maxDocumentBytes) are kept in sync
 * but get no syntax tree and no completions: a tree costs 25-60 times the
 * text for real code and about 100 times for garbage, and its first parse
 * seconds per megabyte. */
#define SC_DEFAULT_MAX_DOCUMENT_BYTES (2 << 20)
/* K/V sessions kept (model.h, sessions): one per recently used document,
 * the least recently used freed when another is needed. A session is a few
 * bytes; the engine's one cache serves one document at a time anyway. */
#define SESSION_SLOTS 8

typedef struct settings {
  char *model_path; /* NULL: sc_model_default_dir(); a folder or a model id */
  bool auto_pull;   /* autoPull: a model id missing from the cache is downloaded */
  sc_device_kind device;
  bool device_set; /* the setting was given (else `sculpt lsp --device` chooses) */
  sc_weights_kind weights; /* what the CPU computes in (model.h) */
  bool weights_set;        /* the setting was given (else `sculpt lsp --weights`) */
  char algorithm[16];
  double threshold;
  double eos_penalty; /* NAN: the checkpoint's default */
  int max_tokens;
  int context_budget; /* prompt tokens wanted; fitted to the model per request */
  bool budget_set;    /* the user set contextBudget (else the default: no warning) */
  int debounce_ms;
  char **languages; /* NULL: every language sculpt knows */
  int n_languages;
  char *hole_marker; /* NULL: TODO(sculpt) */
  int length_candidates; /* canvas lengths decoded per completion (batched) */
  bool repair;           /* a candidate that breaks the parse is repaired once */
  bool kv_reuse;         /* kvReuse: infills go through the document's K/V session */
  bool drafts;           /* drafts: the engine verifies drafts (context.h, sc_drafts_find) */
  double draft_threshold; /* draftThreshold: p a drafted token needs */
  int max_document_bytes; /* larger documents get no tree and no completions */
  int index_max_files;    /* indexMaxFiles: files the workspace index takes; 0: 100,000 */
  /* The remote backend (setting "backend"); url NULL: the local engine. */
  char *backend_url, *backend_model, *backend_key_env, *backend_key;
  int backend_timeout_ms, backend_max_tries;
  int backend_context; /* backend.contextTokens: the server's context; 0: unknown */
  sc_fim_provider backend_provider; /* "provider"; AUTO: from the URL */
  sc_fim_template backend_template; /* "fimTemplate" */
  bool backend_no_stream;           /* "stream": false */
  bool backend_drop_cut;            /* "cutOff": "drop" (default "mark") */
  bool backend_drafts;              /* "drafts": sculpt/draft notifications */
} settings;

typedef enum model_state { MS_NONE, MS_LOADING, MS_READY, MS_ERROR } model_state;

/* What the last remote request said about the backend. */
typedef enum backend_state { BS_UNKNOWN, BS_OK, BS_UNREACHABLE, BS_ERROR } backend_state;

/* The prompt a document's last full build chose, kept so that the next
 * requests in it start their prompt with the same tokens (prompt.c,
 * sc_cpl__local_prompt): the snippets, then the document from the same
 * window start, then the suffix up to the same distance from the
 * document's end. Only then does a session reuse K/V: a window that
 * starts elsewhere moves every cached position. */
#define PIN_MARK 32
typedef struct prompt_pin {
  bool set;
  char *head; /* the snippets before the window (owned) */
  size_t head_len, n_snippets;
  size_t win_start;       /* document offset of the window's first byte */
  char mark[PIN_MARK];    /* the window's first bytes: text moved above it */
  size_t mark_len;        /* when they differ */
  size_t suf_tail;        /* document length minus the suffix's end */
  bool suffix_cut, partial_index;
  uint64_t ws_epoch;       /* the index it was built from (c->ws_epoch) */
  const char *index_state; /* and its state then (static) */
  int budget; /* the fit's prompt tokens it was built for */
  int uses;   /* requests it served since it was built */
} prompt_pin;

/* A document's K/V session (model_slot.c), keyed by its URI. */
typedef struct doc_session {
  char *uri; /* owned; NULL: the slot is free */
  sc_infill_session *session;
  prompt_pin pin;
  uint64_t stamp; /* last use, for eviction */
} doc_session;

typedef struct cache_entry {
  bool used;
  uint64_t uri_hash, prefix_hash, suffix_hash;
  size_t prefix_len;
  char *middle; /* shaped text the user was shown */
  size_t middle_len;
  uint64_t stamp;
} cache_entry;

/* The feature's state, grouped by the file that owns each part. */
struct sc_completer {
  settings set; /* settings.c; read everywhere on the loop, copied for jobs */
  /* model_slot.c, model-lane state: only jobs touch these. */
  sc_model *model;
  sc_tokenizer *tok;
  sc_engine *engine;
  char *loaded_path;
  sc_device_kind loaded_device;
  /* The documents' K/V sessions: looked up and made by jobs on the model
   * lane (one at a time), freed at exit after the workers stopped. Not on
   * sc_document, which the loop frees (didClose) while a job may run; a
   * closed document's session is left to be evicted. */
  doc_session sessions[SESSION_SLOTS];
  uint64_t session_clock;
  /* model_slot.c, loop-thread state. */
  model_state state;
  char model_name[256], device_name[192], error[512];
  const char *weights_name; /* what the loaded model computes in (static), or NULL */
  double last_latency_ms; /* also set by inline.c and remote.c when they answer */
  /* The last completion the model answered and this session's counts
   * (sc_cpl__note_outcome), for sculpt/status: a user sees why a request
   * showed nothing. last_outcome is static text, or NULL before any. */
  const char *last_outcome;
  long n_answered, n_offered, n_dropped;
  int model_context;      /* the loaded model's context in tokens (0: none loaded) */
  sc_infill_frame model_frame; /* its family's frame (sc_infill_frame_for) */
  /* The (budget, context) pair last warned about: contextBudget larger
   * than the context allows is said once, not per request. */
  int warned_budget, warned_context;
  int load_generation;
  int load_progress; /* the load's $/progress token (sc_lsp__progress_begin), or 0 */
  /* An autoPull download's share done (0-100) and its line ("downloading
   * ID: a of b MB"), also in sculpt/status: a client that shows the status,
   * not $/progress, must not sit at 0% through a long download. */
  int load_pct;
  char load_note[320];
  sc_job *load_job;  /* the load in flight (loop thread), cancelled when superseded:
                        an autoPull download stops then */
  /* index.c */
  sc_workspace *ws; /* the workspace index (model lane only) */
  uint64_t ws_epoch; /* bumped when ws is replaced (model lane): prompt pins see it */
  /* Model lane: updates of ws read from disk (saves, watched files,
   * removals) since it was installed; written to the kept index at exit. */
  size_t index_disk_updates;
  /* Loop-thread state for the index. */
  char *client_root; /* the folder initialize named, or NULL */
  char *root;        /* the folder indexed: client_root, or the open file's work tree */
  bool indexing;     /* an index of root is being built */
  sc_job *index_job; /* that build (while indexing) */
  int index_generation; /* bumped per build: a superseded one's answer is dropped */
  bool started;      /* initialized was received */
  /* Files whose entries changed while the index was being built: their
   * updates went to the old index (or nowhere), so they are redone once the
   * new one is installed (uri; buffer: refresh from the open document). */
  struct pending_update {
    char *uri;
    bool remove, buffer;
  } *pending;
  size_t n_pending, cap_pending;
  bool pending_lost; /* one could not be recorded (OOM): say so */
  const char *index_state; /* for sculpt/status: NULL (no root), "indexing", "ready", "failed" */
  size_t index_files;
  size_t index_cached; /* of those, taken unchanged from the index kept on disk */
  bool index_partial;  /* a bound (indexMaxFiles, the chunk cap) left files out */
  double last_index_ms;
  /* cache.c (loop thread) */
  cache_entry cache[CACHE_ENTRIES];
  uint64_t cache_clock;
  /* Bumped by sc_cpl__cache_clear: a request started before it does not
   * put its answer (made under the old settings or model) into the cache. */
  uint64_t cache_epoch;
  /* inline.c (loop thread): the typing rhythm, for the debounce. */
  uint64_t typing_uri;
  double last_change_ms, avg_interval_ms;
  /* remote.c (loop thread): the client, made when first needed. */
  sc_fim_client *fim;
  unsigned fim_generation; /* bumped per client: a shaped answer knows its own */
  backend_state backend;
  char backend_error[512];
  int backend_context_learnt; /* the context a backend's error named; 0: none */
  bool closing; /* completer.c: being freed, remote callbacks touch nothing */
  /* Counters; engine_calls is bumped by jobs, read on the loop. */
  _Atomic long engine_calls;
  _Atomic long shaping; /* remote answers being shaped now (sculpt/test/stats) */
  long requests, cache_hits, accepted, dismissed, remote_calls;
};

/* ======================= settings (settings.c) ============================== */

void sc_cpl__settings_defaults(settings *st);
void sc_cpl__settings_free(settings *st);
/* A deep copy for a job; false when memory ran out (dst is then partly
 * filled: free it with sc_cpl__settings_free). */
bool sc_cpl__settings_copy(settings *dst, const settings *src);
/* The decoding parameters the settings choose (completions and code actions). */
void sc_cpl__params_from_settings(const settings *st, sc_infill_params *p);
/* What a settings object changed, for completer.c to act on (settings.c
 * itself starts nothing: it is the feature's bottom layer). */
enum {
  SC_CPL_CHANGED_MODEL = 1u << 0,       /* model, device, weights, local/remote: reload */
  SC_CPL_CHANGED_BACKEND = 1u << 1,     /* the remote backend: a new client */
  SC_CPL_CHANGED_DECODING = 1u << 2,    /* what a suggestion depends on: clear the cache */
  SC_CPL_CHANGED_INDEX_BOUND = 1u << 3, /* indexMaxFiles: index again */
};
/* Applies a "sculpt" settings object to c->set, one warning for each bad
 * value; returns the SC_CPL_CHANGED_* bits of what changed. */
unsigned sc_cpl__settings_apply(sc_completer *c, json_t *o);
/* Whether completions are on for lang (sculpt's language name, or NULL). */
bool sc_cpl__language_enabled(const sc_completer *c, const char *lang);
/* Says once (a warning) when a contextBudget the user set is more than the
 * model's (or the backend's) context leaves after a maxTokens canvas; the
 * requests then use what fits. Called when the model loads, the settings
 * change, or the backend's context is learnt. */
void sc_cpl__check_budget(sc_completer *c);
/* The remote backend's context in tokens: backend.contextTokens, else what
 * an error of the backend said, else 0 (unknown). */
int sc_cpl__remote_context(const sc_completer *c);
/* The remote backend's fit for a canvas of `canvas` tokens: the backend's
 * context (remote_context: configured or learnt) when known, with room for
 * the canvas and the repair's request; else (context 0) the budget alone
 * bounds the prompt. */
sc_infill_budget sc_cpl__remote_fit(const settings *set, int remote_context, int canvas);
/* Without a tokenizer to count with: the bytes to keep before and after
 * the canvas (at most before and after), 3 bytes a token. */
void sc_cpl__remote_byte_windows(const sc_infill_budget *fit, size_t before, size_t after,
                                 size_t *keep_before, size_t *keep_after);
/* Why nothing is offered in d, or NULL: "out of sync" (an edit could not
 * apply) or "too large" (over maxDocumentBytes: its tree is freed and the
 * user told once, window/showMessage). why gets the sentence for the user. */
const char *sc_cpl__document_refused(sc_lsp_server *s, sc_completer *c, sc_document *d,
                                     char *why, size_t cap);

/* ======================= the model (model_slot.c) =========================== */

/* Loads the model the settings name (or, for the remote backend, its
 * tokenizer) on the model lane, with $/progress and sculpt/status; a load
 * started later supersedes it. */
void sc_cpl__start_load(sc_lsp_server *s, sc_completer *c);
/* Frees the model, tokenizer and engine (the model lane's, or at exit). */
void sc_cpl__release_model(sc_completer *c);
/* Model lane: the K/V session of the document uri names, made (evicting
 * the least recently used) when it has none; NULL when the kvReuse setting
 * (kv_reuse) is off or memory ran out, which means a full pass. Borrowed:
 * valid until the next call. */
sc_infill_session *sc_cpl__session_for(sc_completer *c, const char *uri, bool kv_reuse);
/* The same, the whole slot: the session and the document's prompt pin. */
doc_session *sc_cpl__doc_session(sc_completer *c, const char *uri, bool kv_reuse);
void sc_cpl__pin_clear(prompt_pin *pin);
/* Frees every session (at exit, after the workers stopped). */
void sc_cpl__sessions_free(sc_completer *c);
/* Sends sculpt/status: the model's state, device, last latency, and the
 * backend's and the index's state. */
void sc_cpl__send_status(sc_lsp_server *s, sc_completer *c);
/* Records what a completion the model answered came to (result: the
 * answer's {items, data}): "offered", "dropped: would not parse",
 * "dropped: cut off at maxTokens" or "nothing to offer", and counts it. */
void sc_cpl__note_outcome(sc_completer *c, const json_t *result);
/* "idle", "loading", "ready" or "error". */
const char *sc_cpl__state_name(model_state st);

/* ======================= the workspace index (index.c) ====================== */

/* The feature's hooks: the workspace folder (from initialize), a saved
 * document, a file changed on disk (type: LSP's FileChangeType). */
void sc_cpl__set_root(sc_lsp_server *s, const char *root_uri);
/* The feature's on_open hook: a document outside the indexed workspace
 * moves it to the document's work tree (or folder). */
void sc_cpl__on_open(sc_lsp_server *s, sc_document *d);
void sc_cpl__on_save(sc_lsp_server *s, const char *uri);
void sc_cpl__on_file_changed(sc_lsp_server *s, const char *uri, int type);
/* Builds the index of the root (if any, and not already building). */
void sc_cpl__start_index(sc_lsp_server *s, sc_completer *c);
/* An open document's entry follows its buffer, at most every 2 s. */
void sc_cpl__maybe_refresh_index(sc_lsp_server *s, sc_completer *c, sc_document *d);
/* uri as the index names it: relative to the root when inside it, else the
 * absolute path, or the URI itself when it is not a file (owned). */
char *sc_cpl__rel_path_of(const sc_completer *c, const char *uri);
/* Frees the index and its loop-side state (at exit). */
void sc_cpl__index_free(sc_completer *c);

/* ======================= the suggestion cache (cache.c) ===================== */

/* Suggestions made under other settings or another model are not reused:
 * empties the cache, and bumps cache_epoch so that requests already under
 * way do not put their answers in. */
void sc_cpl__cache_clear(sc_completer *c);
/* A shown suggestion the user is typing into, at offset in text (the
 * document). With *diverged false, what was typed (*typed bytes) is the
 * start of the suggestion: serve the rest. With *diverged true, the typing
 * left it. NULL when there is none. */
cache_entry *sc_cpl__cache_find(sc_completer *c, uint64_t uri_hash, uint64_t suffix_hash,
                                const char *text, size_t offset, size_t *typed, bool *diverged);
/* Remembers a shown suggestion (middle is copied; empty ones are not kept),
 * in place of the least recently used. */
void sc_cpl__cache_put(sc_completer *c, uint64_t uri_hash, uint64_t prefix_hash,
                       size_t prefix_len, uint64_t suffix_hash, const char *middle,
                       size_t middle_len);

/* ======================= a completion request =============================== */
/* The job of one inlineCompletion or completion request: made on the loop
 * by its handler (inline.c), read by the prompt (prompt.c), the shaping
 * (shape.c) and the remote backend (remote.c). */

typedef enum request_kind { RK_INLINE, RK_ITEMS } request_kind;

typedef struct complete_arg {
  sc_completer *c;
  request_kind kind;
  settings set;
  uint64_t cache_epoch; /* c->cache_epoch when the request was made */
  char *prefix; /* the window before the cursor (owned) */
  size_t prefix_len;
  char *suffix; /* the window after it (owned) */
  bool suffix_window_cut; /* it stops before the document's end */
  size_t suffix_len;
  bool single_line;
  int debounce_ms;
  char *rest;      /* the remains of a suggestion the typing diverged from (owned) */
  json_t *position; /* the client's position, for ranges (owned) */
  sc_syntax_snapshot *syn; /* the document's syntax, parsed by the job (owned; may be NULL) */
  sc_syntax_tree *tree; /* syn's tree once parsed, for shaping (borrowed; may be NULL) */
  bool settled;         /* the job's answer is final: nothing to complete here */
  sc_completion_plan plan;
  size_t cursor;        /* byte offset of the cursor in the document */
  char language[16];
  bool lang_known;
  char *rel_path;   /* the file relative to the workspace root (owned) */
  /* c->index_state when the request was made (static; NULL: no workspace):
   * "indexing" tells the prompt builder and the answer's data that the
   * index is not in yet. */
  const char *index_state;
  bool partial_index; /* out: the prompt came from a partial index (data.partialIndex) */
  struct prompt_extras *extras; /* other documents and recent edits (owned; may be NULL) */
  uint64_t uri_hash, prefix_hash, suffix_hash;
  size_t doc_prefix_len;
  size_t doc_len; /* the document's length in bytes */
  double t_request;
  double prepare_ms; /* loop-thread time: syntax, planning, copies */
  /* out, for on_done */
  char *middle;
  size_t middle_len;
  double model_ms;
  /* The remote backend: the job assembles the prompt, the loop sends it. */
  bool remote;
  int remote_context; /* the backend's context in tokens (configured or learnt); 0: unknown */
  char *r_prompt; /* snippets + prefix window, fitted (owned) */
  size_t r_prompt_len, n_snippets;
  char *r_suffix; /* the suffix window, fitted (owned) */
  size_t r_suffix_len;
  int r_canvas; /* max_tokens for the backend: maxTokens, fitted */
  double remote_ms, repair_ms; /* the backend's calls, all and the repair's (loop) */
  int remote_tries;
  double ctx_ms;
  sc_lsp_server *s;
  sc_fim_call *call; /* in flight, or NULL */
  bool r_one_line;   /* the call in flight wants one line: its stream may stop there */
  double r_draft_ms; /* when the last sculpt/draft went out; 0: none yet; <0: no drafts */
  sc_job *shape;     /* the job shaping the backend's answer, or NULL (loop thread) */
  /* Repair once: the shaped candidate that failed the parse check and its
   * check, while the backend rewrites the broken span (owned). */
  char *r_cand;
  size_t r_cand_len;
  sc_completion_check r_chk;
  const char *r_repair_text; /* the rewrite, for remote_fill_done (borrowed, while shaping) */
  size_t r_repair_len;
  bool repaired;
} complete_arg;

/* ======================= the prompt (prompt.c) ============================== */

typedef struct prompt_extras prompt_extras;
/* The other documents and recent edits a prompt may use, copied from the
 * loop (bounded). base_line: the document line the job's text starts in (its
 * window), for the edits of the document itself. NULL when out of memory. */
prompt_extras *sc_cpl__gather_extras(sc_lsp_server *s, sc_completer *c, sc_document *d,
                                     uint32_t base_line);
void sc_cpl__extras_free(prompt_extras *x);
/* The text before the canvas: repository snippets and the prefix window.
 * Returns what *before points into (owned), or NULL: then a->prefix. Sets
 * a->partial_index. win_bytes (may be NULL): the builder's window even
 * without snippets, and its length in bytes (the end of *before). */
char *sc_cpl__prompt_before(complete_arg *a, int budget, const char **before,
                            size_t *before_len, size_t *n_snippets, size_t *win_bytes);
/* The local engine's prompt: the text before the canvas (snippets and the
 * prefix window) and after it (the suffix window), tokenized and fitted to
 * fit's prompt (use pre + (n_pre - keep_pre) and suf[0, keep_suf)).
 *
 * Built fresh, the snippets and the window come from the prompt builder
 * (sc_prompt_build_with) and the suffix is the whole lines after the cursor
 * that fill the rest, so that nothing is cut from the snippets. With a
 * document slot (kvReuse), a fresh build leaves 1/8 of the budget free and
 * is pinned: the next requests in the document keep its snippets, its
 * window start and its suffix end while the text still fits, so their
 * tokens differ from the last request's only where the document changed
 * and the session reuses the rest (model.h, sessions). It is rebuilt when
 * the text no longer fits, the text above the window moved, the budget
 * grew by more than the slack, or after PIN_USES requests (the snippets follow the cursor
 * then). ds may be NULL (no pinning). */
typedef struct local_prompt {
  char *before_owned;      /* what before points into, or NULL: a->prefix */
  const char *before, *after; /* after points into a->suffix */
  size_t before_len, after_len;
  int32_t *pre, *suf;      /* owned */
  size_t n_pre, keep_pre, n_suf, keep_suf, n_snippets;
  bool suffix_cut;
  bool pinned; /* served by the document's pin, not built fresh */
} local_prompt;
sc_status sc_cpl__local_prompt(complete_arg *a, const sc_infill_budget *fit, doc_session *ds,
                               local_prompt *out, sc_error *err);
void sc_cpl__local_prompt_free(local_prompt *lp);
/* Adds to an answer's data what the index was when its prompt was built:
 * "index" (its state: "indexing", "ready", "failed") and "partialIndex"
 * (the index was still being built, or a bound left files out). */
void sc_cpl__index_data(const complete_arg *a, json_t *data);
/* Tokenizes the text before and after the canvas and fits them to fit's
 * prompt (sc_infill_fit: the prefix's far end is cut first, down to half,
 * then the suffix's). after_cut: the text after is a window that stops
 * before the document's end. *suffix_cut (for params.suffix_cut): the
 * suffix the model sees is not the document's end, so no EOS follows it.
 * *pre and *suf are owned by the caller; use pre + (n_pre - keep_pre).
 * n_suf (may be NULL): the suffix's tokens before the cut. */
sc_status sc_cpl__encode_context(sc_completer *c, const char *before, size_t before_len,
                                 const char *after, size_t after_len, bool after_cut,
                                 const sc_infill_budget *fit, int32_t **pre, size_t *n_pre,
                                 size_t *keep_pre, int32_t **suf, size_t *keep_suf,
                                 size_t *n_suf, bool *suffix_cut, sc_error *err);
/* On the model lane: a->r_prompt and a->r_suffix, the text before the
 * canvas (before, before_len) and the suffix window cut to fit->prompt,
 * counted with the local tokenizer (or, without one, 3 bytes a token). */
sc_status sc_cpl__remote_cut(complete_arg *a, const sc_infill_budget *fit, const char *before,
                             size_t before_len, sc_error *err);
/* Frees a complete_arg (a job's argument, for sc_lsp__post_job). */
void sc_cpl__complete_arg_free(void *p);
/* sculpt/test/prompt (a test hook): the assembled prompt at a position. */
void sc_cpl__handle_test_prompt(sc_lsp_req *r);

/* ======================= shaping (shape.c) ================================== */

/* The items for text (len bytes; 0: none) at the request's position:
 * InlineCompletionList or CompletionList; data is taken (the timings). */
json_t *sc_cpl__build_items(const complete_arg *a, const char *text, size_t len, json_t *data);
/* Shapes raw (len bytes) for the request: the cut, the trim, the parse
 * check and, with fill, the one repair; *discarded says why nothing is
 * left. With keep_failed, a failing candidate and its check are kept in
 * a->r_cand and a->r_chk. Sets a->middle; returns its length. */
size_t sc_cpl__shape_middle(complete_arg *a, const char *raw, size_t len, const char **discarded,
                            sc_repair_fill_fn fill, void *user, bool keep_failed);

/* ======================= the remote backend (remote.c) ====================== */

/* Sends the prompt the job assembled to the backend; the job is answered
 * later, from the loop (deferred), or now with job->err. */
void sc_cpl__remote_submit(sc_lsp_server *s, sc_completer *c, sc_job *job);
/* Frees the backend's client: in-flight calls end with an error. */
void sc_cpl__drop_client(sc_completer *c);
/* The FIM client's options from the settings (borrowed strings). */
void sc_cpl__fim_options(const settings *st, sc_fim_client_options *o);

/* ======================= code actions (actions.c) =========================== */

void sc_cpl__handle_action(sc_lsp_req *r);         /* textDocument/codeAction */
void sc_cpl__handle_action_resolve(sc_lsp_req *r); /* codeAction/resolve */

/* ======================= completion requests (inline.c) ===================== */

void sc_cpl__handle_inline(sc_lsp_req *r);     /* textDocument/inlineCompletion */
void sc_cpl__handle_completion(sc_lsp_req *r); /* textDocument/completion */
/* The feature's on_change hook: the document's index entry follows its
 * buffer, and the typing rhythm feeds the debounce. */
void sc_cpl__on_change(sc_lsp_server *s, sc_document *d);

#endif /* SCULPT_COMPLETER_IMPL_H */

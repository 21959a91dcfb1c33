/* remote.c — the remote backend (setting "backend"): a completion's prompt,
 * assembled on the model lane, goes out on the loop through the FIM client's
 * multi handle; the answer is handed to a shaping job on the model lane,
 * whose on_done sends the reply, or the request that repairs a candidate
 * that broke the parse. The loop only moves bytes. The request's job stays
 * in flight meanwhile (deferred), so that $/cancelRequest, a newer request,
 * an edit or exit cancel the HTTP request or the shaping too, and it is
 * answered exactly once. Also the backend's state for sculpt/status.
 *
 * Streamed answers: while the text arrives, a one-line request ends the
 * transfer as soon as the line is complete (servers need not honour stop),
 * and with the backend's "drafts" on, the text so far goes to the client as
 * sculpt/draft notifications, provisional until the request's answer. An
 * answer the server cut at maxTokens is marked (data.cutOff) or, with
 * cutOff "drop", not offered.
 *
 * Threads: the client and the backend state are the loop's; shape_job runs
 * on the model lane (the tokenizer is its). */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc_cpl__drop_client(sc_completer *c) {
  sc_fim_client *f = c->fim;
  c->fim = NULL;
  sc_fim_client_free(f); /* in-flight calls end: their callbacks answer */
}

void sc_cpl__fim_options(const settings *st, sc_fim_client_options *o) {
  memset(o, 0, sizeof *o);
  o->url = st->backend_url;
  o->model = st->backend_model;
  o->api_key = st->backend_key;
  o->api_key_env = st->backend_key_env;
  o->timeout_ms = st->backend_timeout_ms;
  o->max_tries = st->backend_max_tries;
  o->provider = st->backend_provider;
  o->fim_template = st->backend_template;
  o->no_stream = st->backend_no_stream;
}

static bool ensure_client(sc_lsp_server *s, sc_completer *c, sc_error *err) {
  if (c->fim) return true;
  if (!c->set.backend_url) {
    sc_error_set(err, SC_ERR_STALE, "the backend setting changed; ask again");
    return false;
  }
  struct ev_loop *loop = sc_lsp__loop(s);
  if (!loop) {
    sc_error_set(err, SC_ERR_UNSUPPORTED, "the remote backend needs the server's event loop");
    return false;
  }
  sc_fim_client_options o;
  sc_cpl__fim_options(&c->set, &o);
  if (sc_fim_client_new(loop, &o, &c->fim, err) != SC_OK) {
    /* A setting the provider cannot do without (a model, a template): the
     * request is fine, the configuration is not (not -32602). */
    if (err->status == SC_ERR_INVALID) err->status = SC_ERR_UNSUPPORTED;
    return false;
  }
  c->fim_generation++;
  return true;
}

static void set_backend(sc_lsp_server *s, sc_completer *c, backend_state st, const char *msg) {
  bool changed = c->backend != st || strcmp(c->backend_error, msg ? msg : "") != 0;
  c->backend = st;
  snprintf(c->backend_error, sizeof c->backend_error, "%s", msg ? msg : "");
  if (changed) {
    if (st == BS_UNREACHABLE) SC_LOG_WARN("%s", c->backend_error);
    sc_cpl__send_status(s, c);
  }
}

/* A NUL-terminated copy of len bytes (which may hold NULs: strndup would
 * stop there while the length says more). */
static char *memdup0(const char *p, size_t len) {
  char *out = malloc(len + 1);
  if (!out) return NULL;
  if (len) memcpy(out, p, len);
  out[len] = '\0';
  return out;
}

/* The repair's fill once the backend has answered: its text, as given. */
static sc_status remote_fill_done(void *user, const char *head, size_t head_len,
                                  const char *span, size_t span_len, const char *tail,
                                  size_t tail_len, char **out, size_t *out_len, sc_error *err) {
  complete_arg *a = user;
  *out = memdup0(a->r_repair_text, a->r_repair_len);
  *out_len = a->r_repair_len;
  return *out ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
}

/* The backend's answer, shaped on the request worker (shape_job): the cut,
 * the trim and the parse check (a tree-sitter reparse) take milliseconds on
 * a big file, and on the loop they would hold up every other message. The
 * loop hands the text over and sends what comes back (shape_done). */
/* How the backend's answer came, for the result's data. */
typedef struct remote_info {
  double ms, first_ms; /* the whole request; the first streamed text (0: none) */
  int tries;
  bool streamed, truncated, early;
} remote_info;

static remote_info info_of(const sc_fim_result *res) {
  return (remote_info){res->ms, res->first_ms, res->tries, res->streamed, res->truncated,
                       res->finished_early};
}

typedef struct shape_arg {
  sc_job *req;         /* the deferred request; NULL once it was answered (loop) */
  complete_arg *a;     /* req's arg: borrowed while req lives */
  complete_arg *owned; /* a, handed over when req was answered first (remote_cancel) */
  bool repair;         /* text rewrites the broken span of a->r_cand */
  char *text;          /* the backend's text (owned) */
  size_t text_len;
  remote_info info;
  unsigned fim_generation; /* the client that answered */
  int delay_ms;        /* test hook: SCULPT_TEST_SHAPE_DELAY_MS */
  /* out, for shape_done */
  json_t *result;      /* the answer, unless the repair request goes out (owned) */
  bool want_repair;    /* the candidate broke the parse: send the request below */
  char *rp_prompt, *rp_suffix; /* the repair request (owned) */
  size_t rp_prompt_len, rp_suffix_len;
  int rp_max_tokens;
  bool rp_one_line;
} shape_arg;

static void shape_arg_free(void *p) {
  shape_arg *sa = p;
  if (!sa) return;
  free(sa->text);
  free(sa->rp_prompt);
  free(sa->rp_suffix);
  json_decref(sa->result);
  if (sa->owned) sc_cpl__complete_arg_free(sa->owned);
  free(sa);
}

/* The answer's JSON (any thread: it reads only a). remoteMs and modelMs
 * count every call the request made to the backend, the repair's
 * included, which is also shown alone (repairMs); ri says how the last
 * answer came. */
static json_t *remote_result(const complete_arg *a, const remote_info *ri,
                             const char *discarded, size_t len, double t0) {
  double t_end = sc_now_ms();
  json_t *data = json_pack("{s:b, s:s, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:s}", "cached", 0,
                           "backend", "remote", "contextMs", a->ctx_ms, "remoteMs",
                           a->remote_ms, "modelMs", a->remote_ms, "repairMs", a->repair_ms,
                           "tries", a->remote_tries, "debounceMs", a->debounce_ms, "totalMs",
                           t_end - a->t_request, "kind",
                           a->tree ? sc_completion_kind_name(a->plan.kind) : "unplanned");
  if (a->remote_context > 0)
    json_object_set_new(data, "contextTokens", json_integer(a->remote_context));
  if (discarded) json_object_set_new(data, "discarded", json_string(discarded));
  json_object_set_new(data, "streamed", json_boolean(ri->streamed));
  if (ri->first_ms > 0) json_object_set_new(data, "firstTextMs", json_real(ri->first_ms));
  /* The server stopped at maxTokens: the text may end mid-way (it was
   * still cut to its syntactic unit and parse-checked like any other). */
  if (ri->truncated) json_object_set_new(data, "cutOff", json_true());
  if (ri->early) json_object_set_new(data, "stoppedEarly", json_true());
  json_object_set_new(data, "shapeMs", json_real(t_end - t0));
  json_object_set_new(data, "snippets", json_integer((json_int_t)a->n_snippets));
  sc_cpl__index_data(a, data);
  json_object_set_new(data, "prepareMs", json_real(a->prepare_ms));
  if (a->repaired) json_object_set_new(data, "repaired", json_true());
  return sc_cpl__build_items(a, a->middle ? a->middle : "", a->middle ? len : 0, data);
}

/* Repair once, remotely: a second request rewrites the broken lines of the
 * candidate (a->r_cand, its check a->r_chk), with the prompt and the
 * candidate's good head before the canvas and its tail and the suffix
 * after. Built on the worker (c->tok is worker state); false when there is
 * no span to rewrite or no memory: the candidate stays discarded. */
static bool repair_request(complete_arg *a, shape_arg *sa) {
  size_t x = a->r_chk.span_start, y = a->r_chk.span_end;
  if (!(x < y && y <= a->r_cand_len)) return false;
  size_t pl = a->r_prompt_len + x, sl = (a->r_cand_len - y) + a->r_suffix_len;
  char *p = malloc(pl + 1), *q = malloc(sl + 1);
  if (!p || !q) {
    free(p);
    free(q);
    return false;
  }
  memcpy(p, a->r_prompt, a->r_prompt_len);
  memcpy(p + a->r_prompt_len, a->r_cand, x);
  memcpy(q, a->r_cand + y, a->r_cand_len - y);
  memcpy(q + (a->r_cand_len - y), a->r_suffix, a->r_suffix_len);
  /* The canvas: the span's tokens and room to write it differently. */
  int m = (int)((y - x) / 2 + 8);
  if (a->c->tok) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (sc_tokenizer_encode(a->c->tok, a->r_cand + x, y - x, &ids, &n, NULL) == SC_OK)
      m = (int)n + 8;
    free(ids);
  }
  if (m > a->r_canvas) m = a->r_canvas;
  sa->rp_prompt = p;
  sa->rp_prompt_len = pl;
  sa->rp_suffix = q;
  sa->rp_suffix_len = sl;
  sa->rp_max_tokens = m;
  sa->rp_one_line = a->single_line || !memchr(a->r_cand + x, '\n', y - x);
  return true;
}

/* On the request worker. The result is json_null(); the answer is in
 * sa->result (and the repair request, when one is wanted). */
static json_t *shape_body(sc_job *job, shape_arg *sa, sc_error *err) {
  complete_arg *a = sa->a;
  double t0 = sc_now_ms();
  if (sa->delay_ms > 0 && !sc_job_wait(job, sa->delay_ms))
    return sc_error_set(err, SC_ERR_CANCELLED, "cancelled while shaping"), NULL;
  const char *discarded = NULL;
  size_t len;
  if (sa->repair) {
    /* The rewrite of the broken span came back: rebuild and check. */
    a->r_repair_text = sa->text ? sa->text : "";
    a->r_repair_len = sa->text_len;
    char *cand = a->r_cand;
    a->r_cand = NULL;
    a->r_chk.ok = false;
    len = sc_cpl__shape_middle(a, cand, a->r_cand_len, &discarded, remote_fill_done, a, false);
    free(cand);
    a->r_repair_text = NULL;
  } else if (sa->info.truncated && a->set.backend_drop_cut) {
    discarded = "cut off: the backend stopped at maxTokens";
    len = 0;
  } else {
    len = sc_cpl__shape_middle(a, sa->text ? sa->text : "", sa->text_len, &discarded, NULL, NULL,
                               a->set.repair);
    if (a->r_cand && !(sa->want_repair = repair_request(a, sa))) {
      free(a->r_cand);
      a->r_cand = NULL;
    }
  }
  /* With a repair wanted, this is the answer should its request not go out
   * (the candidate discarded). */
  sa->result = remote_result(a, &sa->info, discarded, len, t0);
  if (!sa->result) return sc_error_set(err, SC_ERR_NOMEM, "out of memory"), NULL;
  return json_null();
}

/* The answer goes out; the cache, the latency and the status follow it. */
static void remote_answer(sc_lsp_server *s, sc_completer *c, sc_job *req, json_t *result,
                          bool backend_ok) {
  complete_arg *a = req->arg;
  json_decref(req->result);
  req->result = result;
  if (!result) {
    /* remote_result ran out of memory: an error, not an empty answer. */
    sc_error_set(&req->err, SC_ERR_NOMEM, "out of memory");
    sc_lsp__answer_deferred(s, req);
    return;
  }
  if (a->middle && a->cache_epoch == c->cache_epoch)
    sc_cpl__cache_put(c, a->uri_hash, a->prefix_hash, a->doc_prefix_len, a->suffix_hash,
                      a->middle, a->middle_len);
  c->last_latency_ms = sc_now_ms() - a->t_request;
  sc_cpl__note_outcome(c, result);
  if (backend_ok) {
    c->backend = BS_UNKNOWN; /* set_backend sends the status with the latency */
    set_backend(s, c, BS_OK, NULL);
  }
  sc_lsp__answer_deferred(s, req);
}

static void remote_done(void *user, const sc_fim_result *res);
static void remote_partial(void *user, sc_fim_call *call, const char *text, size_t len);

static bool repair_submit(sc_completer *c, sc_job *req, shape_arg *sa) {
  complete_arg *a = req->arg;
  static const char *const nl_stop[] = {"\n"};
  sc_fim_request fr = {.prompt = sa->rp_prompt, .prompt_len = sa->rp_prompt_len,
                       .suffix = sa->rp_suffix, .suffix_len = sa->rp_suffix_len,
                       .max_tokens = sa->rp_max_tokens, .stop = sa->rp_one_line ? nl_stop : NULL,
                       .n_stop = sa->rp_one_line ? 1 : 0, .partial = remote_partial};
  a->r_one_line = sa->rp_one_line;
  a->r_draft_ms = -1; /* a repair's rewrite is no draft of the suggestion */
  sc_error err = {0};
  a->call = sc_fim_client_submit(c->fim, &fr, remote_done, req, &err);
  if (!a->call) return false;
  c->remote_calls++;
  return true;
}

static json_t *shape_job(sc_job *job, void *argp, sc_error *err) {
  shape_arg *sa = argp;
  sc_completer *c = sa->a->c;
  atomic_fetch_add(&c->shaping, 1);
  json_t *r = shape_body(job, sa, err);
  atomic_fetch_sub(&c->shaping, 1);
  return r;
}

/* On the loop, after shape_job: the answer, or the repair request. */
static void shape_done(sc_lsp_server *s, sc_job *job) {
  shape_arg *sa = job->arg;
  sc_job *req = sa->req;
  if (!req) return; /* answered meanwhile (remote_cancel): sa frees a */
  complete_arg *a = sa->a;
  sc_completer *c = a->c;
  a->shape = NULL;
  sc_job_cancel why = sc_job_cancelled(job);
  if (why != SC_JOB_LIVE || !job->result) {
    /* Stopped by shutdown while the request itself was not (yet)
     * cancelled, or out of memory: answered as the reason says. */
    int live = SC_JOB_LIVE;
    if (why != SC_JOB_LIVE) atomic_compare_exchange_strong(&req->cancel, &live, (int)why);
    else req->err = job->err;
    sc_lsp__answer_deferred(s, req);
    return;
  }
  if (sa->want_repair) {
    if (!c->fim || c->fim_generation != sa->fim_generation) {
      /* The backend setting changed while this was shaped, as if during
       * the request (sc_cpl__drop_client). */
      sc_error_set(&req->err, SC_ERR_STALE, "the backend setting changed; ask again");
      sc_lsp__answer_deferred(s, req);
      return;
    }
    if (repair_submit(c, req, sa)) return; /* answered when the rewrite is back */
    free(a->r_cand);
    a->r_cand = NULL;
  }
  json_t *result = sa->result;
  sa->result = NULL;
  remote_answer(s, c, req, result, true);
}

/* The context length a backend's refusal names, or 0: OpenAI-compatible
 * servers (vLLM, OpenAI) say "maximum context length is N tokens", others
 * "context length of N" or "context window of N", sculpt's engine "the
 * N-token context". */
static int context_in_error(const char *msg) {
  static const char *const after[] = {"maximum context length is ", "context length of ",
                                      "context window of "};
  for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
    const char *p = strstr(msg, after[i]);
    if (p) return atoi(p + strlen(after[i]));
  }
  const char *p = strstr(msg, "-token context");
  if (p && p > msg) {
    const char *d = p;
    while (d > msg && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d < p) return atoi(d);
  }
  return 0;
}

/* A refusal that names the backend's context teaches it: later prompts are
 * fitted to it (unless backend.contextTokens says otherwise). */
static void learn_context(sc_lsp_server *s, sc_completer *c, const char *msg) {
  int n = context_in_error(msg);
  if (n < 64 || n > (1 << 22) || n == c->backend_context_learnt) return;
  c->backend_context_learnt = n;
  if (c->set.backend_context > 0) return;
  SC_LOG_WARN("backend: its context is %d tokens (from its answer); prompts are fitted to it", n);
  sc_cpl__check_budget(c);
  sc_cpl__send_status(s, c);
}

static void remote_done(void *user, const sc_fim_result *res) {
  sc_job *job = user;
  complete_arg *a = job->arg;
  a->call = NULL;
  sc_completer *c = a->c;
  /* Released by the server (cancelled): it answers. Being freed: nobody. */
  if (!job->deferred || sc_job_cancelled(job) != SC_JOB_LIVE || c->closing) return;
  sc_lsp_server *s = a->s;
  a->remote_ms += res->ms;
  a->remote_tries += res->tries;
  if (a->r_cand) a->repair_ms += res->ms;
  /* The repair's request failing only loses the repair: the candidate is
   * discarded as it would be without one, and the status tells why. Nothing
   * is shaped, so this stays on the loop. */
  bool repair_failed = a->r_cand && res->status != SC_OK && res->status != SC_ERR_CANCELLED;
  if (repair_failed) {
    set_backend(s, c, res->unreachable ? BS_UNREACHABLE : BS_ERROR, res->err.msg);
    double t0 = sc_now_ms();
    free(a->r_cand);
    a->r_cand = NULL;
    free(a->middle);
    a->middle = strdup("");
    a->middle_len = 0;
    remote_info ri = info_of(res);
    remote_answer(s, c, job,
                  remote_result(a, &ri, "new syntax errors, the repair request failed", 0, t0),
                  false);
    return;
  }
  if (res->status != SC_OK) {
    job->err = res->err;
    if (res->status == SC_ERR_CANCELLED) {
      sc_error_set(&job->err, SC_ERR_STALE, "the backend setting changed; ask again");
    } else {
      set_backend(s, c, res->unreachable ? BS_UNREACHABLE : BS_ERROR, res->err.msg);
      learn_context(s, c, res->err.msg);
    }
    sc_lsp__answer_deferred(s, job);
    return;
  }
  /* The text goes to the request worker; the request stays deferred (and
   * cancellable) until shape_done answers it. */
  shape_arg *sa = calloc(1, sizeof *sa);
  if (sa && !(sa->text = memdup0(res->text ? res->text : "", res->text ? res->text_len : 0))) {
    free(sa);
    sa = NULL;
  }
  if (!sa) {
    sc_error_set(&job->err, SC_ERR_NOMEM, "out of memory");
    sc_lsp__answer_deferred(s, job);
    return;
  }
  sa->req = job;
  sa->a = a;
  sa->repair = a->r_cand != NULL;
  sa->text_len = res->text ? res->text_len : 0;
  sa->info = info_of(res);
  sa->fim_generation = c->fim_generation;
  const char *delay = getenv("SCULPT_TEST_SHAPE_DELAY_MS");
  if (sc_lsp__options(s)->test_hooks && delay) sa->delay_ms = atoi(delay);
  a->shape = sc_lsp__post_job(s, NULL, "sculpt/shapeRemote", NULL, shape_job, sa,
                              shape_arg_free, shape_done);
  if (!a->shape) { /* sa is freed */
    sc_error_set(&job->err, SC_ERR_NOMEM, "out of memory");
    sc_lsp__answer_deferred(s, job);
  }
}

/* Drafts go out at most this often: each is a message the editor redraws. */
#define DRAFT_INTERVAL_MS 50

/* A streamed answer's text so far (loop thread): a one-line request has
 * what it needs once the line ends, so the transfer stops there (the answer
 * is shaped from it as from any other); otherwise, with drafts on, the
 * editor gets the text as sculpt/draft, unshaped and provisional: the
 * request's answer replaces it (or clears it, when nothing is offered). */
static void remote_partial(void *user, sc_fim_call *call, const char *text, size_t len) {
  sc_job *job = user;
  complete_arg *a = job->arg;
  if (!a || !job->deferred || sc_job_cancelled(job) != SC_JOB_LIVE || a->c->closing) return;
  if (a->r_one_line && memchr(text, '\n', len)) {
    sc_fim_call_finish(call); /* remote_done runs now */
    return;
  }
  if (!a->set.backend_drafts || a->r_draft_ms < 0 || !job->uri || !a->position) return;
  double now = sc_now_ms();
  if (a->r_draft_ms > 0 && now - a->r_draft_ms < DRAFT_INTERVAL_MS) return;
  a->r_draft_ms = now;
  json_t *t = json_stringn(text, len);
  json_t *p = t ? json_pack("{s:{s:s}, s:O, s:O, s:o}", "textDocument", "uri", job->uri,
                            "position", a->position, "requestId", job->id, "text", t)
                : NULL;
  if (p) sc_lsp__send_notification(a->s, "sculpt/draft", p);
  else json_decref(t);
}

/* llama.cpp takes the repository snippets apart from the prefix
 * (input_extra). The job's prompt is the snippets, each headed by
 * "<comment> path:line" (context/retrieve.c), then the prefix window, a
 * tail of the document's text before the cursor (a->prefix): the window is
 * the longest tail the two share, from a line start, and the snippets are
 * cut at their headers. Returns the window's start in a->r_prompt; *out
 * (owned, may be NULL) gets the chunks. */
static size_t split_snippets(const complete_arg *a, sc_fim_chunk **out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  const char *p = a->r_prompt;
  size_t n = a->r_prompt_len, k = 0;
  if (!a->n_snippets) return 0;
  while (k < n && k < a->prefix_len && p[n - 1 - k] == a->prefix[a->prefix_len - 1 - k]) k++;
  size_t w = n - k;
  /* A snippet's last line may equal the line before the window: the window
   * then starts at the next line start, still inside what both share. */
  while (w > 0 && w < n && p[w - 1] != '\n') w++;
  if (w == 0) return 0;
  size_t lines = 1;
  for (size_t i = 0; i < w; i++) lines += p[i] == '\n';
  sc_fim_chunk *ch = calloc(lines, sizeof *ch);
  if (!ch) return 0; /* the whole prompt goes as the prefix */
  int m = 0;
  for (size_t i = 0; i < w;) {
    const char *e = memchr(p + i, '\n', w - i);
    size_t le = e ? (size_t)(e - p) : w; /* the line is p[i, le) */
    /* A header: "// path:N" or "# path:N". */
    size_t h = (le - i > 3 && memcmp(p + i, "// ", 3) == 0) ? 3
               : (le - i > 2 && memcmp(p + i, "# ", 2) == 0) ? 2 : 0;
    size_t colon = le;
    while (h && colon > i + h && p[colon - 1] >= '0' && p[colon - 1] <= '9') colon--;
    bool header = h && colon < le && colon > i + h + 1 && p[colon - 1] == ':' &&
                  !memchr(p + i + h, ' ', colon - 1 - (i + h));
    if (header || m == 0) {
      ch[m].text = p + i;
      if (header) {
        ch[m].filename = p + i + h;
        ch[m].filename_len = colon - 1 - (i + h);
      }
      m++;
    }
    ch[m - 1].text_len = (e ? le + 1 : le) - (size_t)(ch[m - 1].text - p);
    i = e ? le + 1 : le;
  }
  *out = ch;
  *n_out = m;
  return w;
}

/* The request was answered (cancelled, superseded, stale, exit) while it
 * waited on the backend or on its shaping. */
static void remote_cancel(sc_lsp_server *s, sc_job *job) {
  complete_arg *a = job->arg;
  sc_fim_call *call = a->call;
  a->call = NULL;
  sc_fim_call_cancel(call); /* closes the connection; remote_done returns early */
  if (a->shape) {
    /* The shaping job may be running on a: it takes a over (the server
     * frees req after this), and is told to stop. */
    shape_arg *sa = a->shape->arg;
    int live = SC_JOB_LIVE, why = sc_job_cancelled(job);
    atomic_compare_exchange_strong(&a->shape->cancel, &live,
                                   why != SC_JOB_LIVE ? why : SC_JOB_CANCELLED);
    a->shape = NULL;
    sa->req = NULL;
    sa->owned = a;
    job->arg = NULL;
    job->free_arg = NULL;
  }
}

void sc_cpl__remote_submit(sc_lsp_server *s, sc_completer *c, sc_job *job) {
  complete_arg *a = job->arg;
  json_decref(job->result);
  job->result = NULL; /* answered with job->err unless the request goes out */
  if (!ensure_client(s, c, &job->err)) {
    if (job->err.status != SC_ERR_STALE) set_backend(s, c, BS_ERROR, job->err.msg);
    return;
  }
  /* One line wanted: the server may stop at the line's end (and the
   * stream is cut there, remote_partial). */
  static const char *const nl_stop[] = {"\n"};
  sc_fim_chunk *chunks = NULL;
  int n_chunks = 0;
  size_t w = sc_fim_client_provider(c->fim) == SC_FIM_PROVIDER_LLAMACPP
                 ? split_snippets(a, &chunks, &n_chunks)
                 : 0;
  /* The prompt and the suffix as fitted to the backend's context (prompt.c,
   * sc_cpl__remote_cut), and the canvas that fit left. */
  sc_fim_request req = {.prompt = a->r_prompt + w, .prompt_len = a->r_prompt_len - w,
                        .suffix = a->r_suffix, .suffix_len = a->r_suffix_len,
                        .max_tokens = a->r_canvas, .stop = a->single_line ? nl_stop : NULL,
                        .n_stop = a->single_line ? 1 : 0, .extra = chunks, .n_extra = n_chunks,
                        .partial = remote_partial};
  if (!chunks) req.prompt = a->r_prompt, req.prompt_len = a->r_prompt_len;
  a->s = s;
  a->r_one_line = a->single_line;
  a->r_draft_ms = 0;
  a->call = sc_fim_client_submit(c->fim, &req, remote_done, job, &job->err);
  free(chunks); /* the body is built: borrowed no more */
  if (!a->call) return;
  c->remote_calls++;
  job->deferred = true;
  job->on_cancel = remote_cancel;
}

/* model_slot.c — the model the completions use: loaded in the background on
 * the model lane (the model, its tokenizer and the engine; for the remote
 * backend only the tokenizer, to count the prompt), reloaded when the model,
 * device, weights or backend setting changes (a newer load wins), and reported: the
 * $/progress of a load and the sculpt/status notification, which also
 * carries the remote backend's and the workspace index's state; and the
 * documents' K/V sessions (model.h) the engine's infills go through.
 * modelPath names a folder or a Hugging Face id found in the cache
 * (model.h, sc_model_resolve); with autoPull an id missing there is
 * downloaded first (net.h, sc_hub_pull), its bytes in the load's
 * $/progress, on the model lane like the load itself.
 *
 * Threads: the model, tokenizer and engine are created, used and freed only
 * by jobs on the model lane; the state and status fields are the loop's. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *sc_cpl__state_name(model_state st) {
  switch (st) {
  case MS_NONE: return "idle";
  case MS_LOADING: return "loading";
  case MS_READY: return "ready";
  case MS_ERROR: return "error";
  }
  return "?";
}

void sc_cpl__note_outcome(sc_completer *c, const json_t *result) {
  const json_t *data = json_object_get(result, "data");
  const char *discarded = json_string_value(json_object_get(data, "discarded"));
  c->n_answered++;
  if (json_array_size(json_object_get(result, "items")) > 0) {
    c->last_outcome = "offered";
    c->n_offered++;
  } else if (discarded) {
    /* shape.c's and remote.c's reasons, said the user's way */
    c->last_outcome = strncmp(discarded, "cut off", 7) == 0 ? "dropped: cut off at maxTokens"
                                                             : "dropped: would not parse";
    c->n_dropped++;
  } else {
    c->last_outcome = "nothing to offer";
  }
}

void sc_cpl__send_status(sc_lsp_server *s, sc_completer *c) {
  json_t *p = json_pack("{s:s, s:s, s:s, s:i}", "state", sc_cpl__state_name(c->state), "model",
                        c->model_name, "device", c->device_name, "progress",
                        c->state == MS_READY ? 100 : c->state == MS_LOADING ? c->load_pct : 0);
  if (c->state == MS_LOADING && c->load_note[0])
    json_object_set_new(p, "message", json_string(c->load_note));
  if (c->last_latency_ms > 0)
    json_object_set_new(p, "lastLatencyMs", json_real(c->last_latency_ms));
  if (c->state == MS_ERROR) json_object_set_new(p, "message", json_string(c->error));
  if (c->last_outcome) {
    json_object_set_new(p, "lastOutcome", json_string(c->last_outcome));
    json_object_set_new(p, "completions",
                        json_pack("{s:I, s:I, s:I}", "answered", (json_int_t)c->n_answered,
                                  "offered", (json_int_t)c->n_offered, "dropped",
                                  (json_int_t)c->n_dropped));
  }
  /* What the local model computes in (the weights setting, resolved). */
  if (c->state == MS_READY && c->weights_name)
    json_object_set_new(p, "weights", json_string(c->weights_name));
  if (c->set.backend_url) {
    static const char *names[] = {"unknown", "ok", "unreachable", "error"};
    json_t *b = json_pack("{s:s}", "state", names[c->backend]);
    if (c->fim) json_object_set_new(b, "url", json_string(sc_fim_client_endpoint(c->fim)));
    if (c->backend_error[0]) json_object_set_new(b, "message", json_string(c->backend_error));
    json_object_set_new(p, "backend", b);
    if (c->backend_error[0] && c->state != MS_ERROR)
      json_object_set_new(p, "message", json_string(c->backend_error));
  }
  /* The workspace index is built in the background: a client (or a test)
   * that wants repository context from the start can wait for "ready". */
  if (c->index_state) {
    /* cached: files taken unchanged from the index kept on disk (a restart
     * on an unchanged tree reuses them all); partial: a bound left files
     * out, so a definition may be missing from the context. */
    json_t *ix = json_pack("{s:s, s:I, s:I, s:b}", "state", c->index_state, "files",
                           (json_int_t)c->index_files, "cached", (json_int_t)c->index_cached,
                           "partial", c->index_partial);
    if (c->root) json_object_set_new(ix, "root", json_string(c->root));
    json_object_set_new(p, "index", ix);
  }
  /* The context requests are fitted to (model.h, sc_infill_budget). */
  int context = c->set.backend_url ? sc_cpl__remote_context(c) : c->model_context;
  if (context > 0) json_object_set_new(p, "contextTokens", json_integer(context));
  /* The last request that failed, so that a client (or the user) sees why
   * completions stopped even when the client drops error answers. */
  int code = 0;
  const char *method = NULL, *when = NULL;
  const char *msg = sc_lsp__last_error(s, &code, &method, &when);
  if (msg)
    json_object_set_new(p, "lastError", json_pack("{s:s, s:s, s:i, s:s}", "message", msg,
                                                  "method", method, "code", code, "time", when));
  sc_lsp__send_notification(s, "sculpt/status", p);
}

typedef struct load_arg {
  sc_completer *c;
  char *path;
  sc_device_kind device;
  sc_weights_kind weights;
  int generation;
  int progress; /* its $/progress token, or 0 */
  bool remote; /* the remote backend: only the tokenizer, for the prompt */
  bool auto_pull; /* a model id not in the cache may be downloaded */
  /* out */
  char model_name[256], device_name[192];
  const char *weights_name; /* what the model computes in (static) */
  int context;           /* the model's context in tokens */
  sc_infill_frame frame; /* its family's frame */
  /* The local model being served when this load began, kept if the new
   * one proves not to be a model before that one is let go (kept). */
  bool had, kept;
  char had_name[256], had_device[192];
  const char *had_weights;
  int had_context;
  sc_infill_frame had_frame;
} load_arg;

static void load_arg_free(void *p) {
  load_arg *a = p;
  free(a->path);
  free(a);
}

void sc_cpl__release_model(sc_completer *c) {
  sc_engine_free(c->engine);
  sc_tokenizer_free(c->tok);
  sc_model_free(c->model);
  c->engine = NULL;
  c->tok = NULL;
  c->model = NULL;
  free(c->loaded_path);
  c->loaded_path = NULL;
}

void sc_cpl__pin_clear(prompt_pin *pin) {
  free(pin->head);
  *pin = (prompt_pin){0};
}

doc_session *sc_cpl__doc_session(sc_completer *c, const char *uri, bool kv_reuse) {
  if (!kv_reuse || !uri) return NULL;
  doc_session *slot = &c->sessions[0];
  for (int i = 0; i < SESSION_SLOTS; i++) {
    doc_session *d = &c->sessions[i];
    if (d->uri && strcmp(d->uri, uri) == 0) {
      d->stamp = ++c->session_clock;
      return d;
    }
    /* The free slot, else the least recently used. */
    if (slot->uri && (!d->uri || d->stamp < slot->stamp)) slot = d;
  }
  sc_error err = {0};
  sc_infill_session *ns = NULL;
  char *copy = strdup(uri);
  if (!copy || sc_infill_session_new(NULL, &ns, &err) != SC_OK) {
    free(copy);
    SC_LOG_WARN("kvReuse: no session for %s (%s): a full pass", uri,
                err.msg[0] ? err.msg : "out of memory");
    return NULL;
  }
  free(slot->uri);
  sc_infill_session_free(slot->session);
  sc_cpl__pin_clear(&slot->pin);
  slot->uri = copy;
  slot->session = ns;
  slot->stamp = ++c->session_clock;
  return slot;
}

sc_infill_session *sc_cpl__session_for(sc_completer *c, const char *uri, bool kv_reuse) {
  doc_session *d = sc_cpl__doc_session(c, uri, kv_reuse);
  return d ? d->session : NULL;
}

void sc_cpl__sessions_free(sc_completer *c) {
  for (int i = 0; i < SESSION_SLOTS; i++) {
    free(c->sessions[i].uri);
    sc_infill_session_free(c->sessions[i].session);
    sc_cpl__pin_clear(&c->sessions[i].pin);
    c->sessions[i] = (doc_session){0};
  }
}

static void pull_progress(void *user, const sc_hub_progress *p) {
  sc_job_report(user, p->done, p->total);
}

/* Whether a.path is a model id that autoPull may download: an id, not a
 * folder of that name. */
static bool may_pull(const load_arg *a) {
  sc_model_id id;
  struct stat st;
  return a->auto_pull && !a->remote && a->path && sc_model_id_parse(a->path, &id) &&
         stat(a->path, &st) != 0;
}

/* Downloads a.path's snapshot into the cache (files already whole there
 * are kept), then resolves it again. *dir owned by the caller. */
static sc_status pull_model(sc_job *job, const load_arg *a, char **dir, sc_error *err) {
  sc_hub_options o = {.cancel = &job->cancel, .progress = pull_progress, .user = job};
  sc_hub_result r;
  *err = (sc_error){0};
  SC_TRY(sc_hub_pull(a->path, &o, &r, err));
  SC_LOG_INFO("autoPull: %s: %d files (%.1f MB downloaded) in %s", a->path, r.files,
              (double)r.transferred / 1e6, r.dir);
  return sc_model_resolve(a->path, dir, err);
}

/* The folder the model's name stands for; an id missing from the cache is
 * pulled first when autoPull allows it (*pulled then says so). *dir owned
 * by the caller. */
static sc_status resolve_model(sc_job *job, const load_arg *a, char **dir, bool *pulled,
                               sc_error *err) {
  sc_status st = sc_model_resolve(a->path, dir, err);
  sc_model_id id;
  *pulled = false;
  if (st == SC_OK || a->remote || !sc_model_id_parse(a->path, &id)) return st;
  if (!a->auto_pull) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s, or set sculpt.autoPull to download it", err->msg);
    snprintf(err->msg, sizeof err->msg, "%s", msg);
    return st;
  }
  SC_LOG_INFO("autoPull: downloading %s into the Hugging Face cache", a->path);
  *pulled = true;
  return pull_model(job, a, dir, err);
}

/* The folder a.path stands for and its survey (model.h). A snapshot that
 * is in the cache but is not whole (another tool fetched only config.json,
 * a shard is missing or cut short, a blob was removed) is pulled again
 * once when autoPull allows it: the pull keeps the whole files and fetches
 * the rest. Without this, autoPull never helped once any snapshot was
 * there. *dir owned by the caller. */
static sc_status survey_model(sc_job *job, const load_arg *a, char **dir,
                              sc_model_survey *survey, sc_error *err) {
  bool pulled;
  sc_status st = resolve_model(job, a, dir, &pulled, err);
  if (st == SC_OK) st = sc_model_survey_read(*dir, survey, err);
  if (st == SC_OK || st == SC_ERR_CANCELLED || pulled || !may_pull(a) ||
      sc_job_cancelled(job) != SC_JOB_LIVE)
    return st;
  SC_LOG_INFO("autoPull: the cached %s is not whole (%s); pulling it again", a->path, err->msg);
  free(*dir);
  *dir = NULL;
  st = pull_model(job, a, dir, err);
  if (st == SC_OK) st = sc_model_survey_read(*dir, survey, err);
  return st;
}

/* A download's bytes, on the loop: the load's $/progress, and sculpt/status. */
static void load_progress(sc_lsp_server *s, sc_job *job, uint64_t done, uint64_t total) {
  sc_completer *c = sc_lsp__feature(s);
  load_arg *a = job->arg;
  if (a->generation != c->load_generation) return;
  char msg[320];
  snprintf(msg, sizeof msg, "downloading %s: %.1f of %.1f MB", a->path, (double)done / 1e6,
           (double)total / 1e6);
  int pct = total ? (int)(done * 100 / total) : 0;
  sc_lsp__progress_report(s, a->progress, msg, pct);
  /* sculpt/status at most once per percent */
  bool send = pct != c->load_pct || !c->load_note[0];
  c->load_pct = pct;
  snprintf(c->load_note, sizeof c->load_note, "%s", msg);
  if (send) sc_cpl__send_status(s, c);
}

static json_t *load_job(sc_job *job, void *argp, sc_error *err) {
  load_arg *a = argp;
  sc_completer *c = a->c;
  char *dir = NULL;
  if (a->remote) {
    sc_cpl__release_model(c);
    /* The prompt is still assembled here, counted with the model's
     * tokenizer; without one it is cut by bytes. */
    sc_error terr = {0};
    bool pulled;
    if (a->path && (resolve_model(job, a, &dir, &pulled, &terr) != SC_OK ||
                    sc_tokenizer_load_dir(dir, &c->tok, &terr) != SC_OK))
      SC_LOG_WARN("remote backend: no local tokenizer (%s); prompts are cut by bytes", terr.msg);
    free(dir);
    snprintf(a->device_name, sizeof a->device_name, "remote");
    return json_null();
  }
  if (!a->path) {
    sc_cpl__release_model(c);
    sc_error_set(err, SC_ERR_INVALID,
                 "no model: set sculpt.modelPath or $SCULPT_MODEL (no default model is installed)");
    return NULL;
  }
  /* A name that is no model (a folder that is not there, a typo in the
   * settings) leaves the model being served as it is: its config and its
   * files' headers are read first (survey.c), before that one goes. */
  sc_model_survey survey;
  if (survey_model(job, a, &dir, &survey, err) != SC_OK) {
    free(dir);
    a->kept = c->model != NULL;
    return NULL;
  }
  sc_cpl__release_model(c);
  sc_device_choice dev;
  sc_device_select(a->device, &dev);
  snprintf(a->device_name, sizeof a->device_name, "%s", dev.description);
  sc_model_options mo = {0};
  mo.device = dev.kind;
  mo.weights = a->weights;
  sc_model_builtin_hint(dir);
  double t0 = sc_now_ms();
  sc_status st = sc_model_load(dir, &mo, &c->model, err);
  if (st == SC_OK) st = sc_tokenizer_load_dir(dir, &c->tok, err);
  free(dir);
  if (st != SC_OK) {
    sc_cpl__release_model(c);
    return NULL;
  }
  /* The engine holds the model's whole context, so that every request
   * can be fitted to it (sc_infill_fit_plan) whatever the settings say; the
   * per-position buffers are touched only as far as a request reaches. The
   * frame is what the settings' decoding reserves (no setting changes it:
   * they all decode with sc_infill_params_default's loop and padding), for
   * the budget warning on the loop (sc_cpl__check_budget). */
  const sc_model_info *info = sc_model_get_info(c->model);
  a->context = info->max_seq;
  a->weights_name = sc_weights_kind_name(info->weights);
  sc_infill_params dp;
  sc_infill_params_default(&dp);
  sc_infill_frame_for(c->model, &dp, &a->frame);
  if (sc_engine_new(c->model, c->tok, 0, &c->engine, err) != SC_OK) {
    sc_cpl__release_model(c);
    return NULL;
  }
  /* sculpt/status names what runs: CUDA may fall back for this model. */
  sc_engine_device(c->engine, &dev, &dev);
  snprintf(a->device_name, sizeof a->device_name, "%s", dev.description);
  c->loaded_path = strdup(a->path);
  const char *base = strrchr(a->path, '/');
  snprintf(a->model_name, sizeof a->model_name, "%s (%s, %.1fM params)",
           base && base[1] ? base + 1 : a->path, sc_model_family_name(info->family),
           (double)info->n_params / 1e6);
  SC_LOG_INFO("model %s loaded in %.0f ms on %s (%s weights); %d-token context",
              a->model_name, sc_now_ms() - t0, a->device_name, a->weights_name, a->context);
  return json_null();
}

static void load_done(sc_lsp_server *s, sc_job *job) {
  sc_completer *c = sc_lsp__feature(s);
  load_arg *a = job->arg;
  if (c->load_job == job) c->load_job = NULL;
  if (a->generation != c->load_generation) return; /* a newer load follows; its progress ended */
  if (job->result) {
    c->state = MS_READY;
    if (!a->remote) snprintf(c->model_name, sizeof c->model_name, "%s", a->model_name);
    snprintf(c->device_name, sizeof c->device_name, "%s", a->device_name);
    c->error[0] = '\0';
    c->model_context = a->remote ? 0 : a->context;
    c->model_frame = a->frame;
    c->weights_name = a->remote ? NULL : a->weights_name;
  } else if (a->kept && a->had && !sc_job_cancelled(job)) {
    /* The model being served stays: completions go on, and the user is
     * told once why the setting did not take. */
    c->state = MS_READY;
    snprintf(c->model_name, sizeof c->model_name, "%s", a->had_name);
    snprintf(c->device_name, sizeof c->device_name, "%s", a->had_device);
    c->model_context = a->had_context;
    c->model_frame = a->had_frame;
    c->weights_name = a->had_weights;
    char msg[sizeof c->error + 600];
    snprintf(msg, sizeof msg, "sculpt: could not load %s (%s); completions go on with %s",
             a->path, job->err.msg, a->had_name);
    SC_LOG_ERROR("model: %s", msg + 8);
    sc_lsp__send_notification(s, "window/showMessage",
                              json_pack("{s:i, s:s}", "type", 1, "message", msg));
  } else {
    c->state = MS_ERROR;
    c->model_context = 0;
    c->weights_name = NULL;
    snprintf(c->error, sizeof c->error, "%s",
             sc_job_cancelled(job) ? "loading was cancelled" : job->err.msg);
    SC_LOG_ERROR("model: %s", c->error);
  }
  sc_lsp__progress_end(s, a->progress, c->state == MS_READY ? "ready" : c->error);
  c->load_progress = 0;
  c->load_pct = 0;
  c->load_note[0] = '\0';
  sc_cpl__check_budget(c);
  sc_cpl__send_status(s, c);
}

void sc_cpl__start_load(sc_lsp_server *s, sc_completer *c) {
  load_arg *a = calloc(1, sizeof *a);
  if (!a) return;
  const char *path = c->set.model_path ? c->set.model_path : sc_model_default_dir();
  a->c = c;
  a->path = path ? strdup(path) : NULL;
  if (path && !a->path) {
    free(a);
    return;
  }
  a->device = c->set.device;
  a->weights = c->set.weights;
  a->auto_pull = c->set.auto_pull;
  a->generation = ++c->load_generation;
  /* What is served now, restored if the new name proves no model. */
  a->had = c->state == MS_READY && c->model_context > 0; /* a local model (remote: 0) */
  snprintf(a->had_name, sizeof a->had_name, "%s", c->model_name);
  snprintf(a->had_device, sizeof a->had_device, "%s", c->device_name);
  a->had_weights = c->weights_name;
  a->had_context = c->model_context;
  a->had_frame = c->model_frame;
  /* The load in flight is superseded: a download it makes stops (its
   * partial blob stays, for the next pull to resume). */
  if (c->load_job) sc_lsp__cancel_job(s, c->load_job);
  c->load_job = NULL;
  /* A load still under way is superseded: its progress ends now (its
   * answer is dropped in load_done). */
  sc_lsp__progress_end(s, c->load_progress, "superseded");
  c->load_progress = 0;
  c->state = MS_LOADING;
  c->model_context = 0;
  c->load_pct = 0;
  c->load_note[0] = '\0';
  sc_cpl__cache_clear(c);
  snprintf(c->model_name, sizeof c->model_name, "%s", path ? path : "(none)");
  a->remote = c->set.backend_url != NULL;
  if (a->remote)
    snprintf(c->model_name, sizeof c->model_name, "remote: %s",
             c->set.backend_model ? c->set.backend_model : "the server's model");
  if (!path && !a->remote) {
    /* Nothing to load: say so once, plainly; completions answer with the
     * same reason until a model is configured. */
    free(a);
    c->state = MS_ERROR;
    snprintf(c->error, sizeof c->error,
             "no model configured: set sculpt.modelPath or $SCULPT_MODEL");
    SC_LOG_WARN("%s", c->error);
    sc_cpl__send_status(s, c);
    return;
  }
  a->progress = c->load_progress =
      sc_lsp__progress_begin(s, "load", "sculpt: loading the model", c->model_name, 0);
  sc_cpl__send_status(s, c);
  c->load_job =
      sc_lsp__post_job(s, NULL, "sculpt/loadModel", NULL, load_job, a, load_arg_free, load_done);
  if (c->load_job) c->load_job->on_progress = load_progress;
}

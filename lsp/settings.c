/* settings.c — the completion feature's settings: their defaults, parsing a
 * "sculpt" settings object (initializationOptions, workspace/configuration)
 * with a warning for each bad value, deep copies for jobs, what a change
 * means (SC_CPL_CHANGED_*; completer.c acts on it: a new model, device or
 * weights kind reloads, a new backend drops the client, a change to what a
 * suggestion depends on clears the cache), and the prompt budget the
 * settings leave (the local model's, a remote backend's in tokens and bytes).
 * The bottom of the feature: it calls nothing above it (lsp_impl.h, "Layers"). */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The prompt budget when the user sets none: fitted to the model without
 * a word, since it is nobody's choice to warn about. */
#define DEFAULT_CONTEXT_BUDGET 1024

void sc_cpl__settings_defaults(settings *st) {
  memset(st, 0, sizeof *st);
  st->device = SC_DEVICE_AUTO;
  st->weights = SC_WEIGHTS_AUTO;
  snprintf(st->algorithm, sizeof st->algorithm, "threshold");
  st->threshold = 0.9;
  st->eos_penalty = NAN;
  st->max_tokens = 64;
  st->context_budget = DEFAULT_CONTEXT_BUDGET;
  st->debounce_ms = 75;
  st->length_candidates = 1;
  st->repair = true;
  st->kv_reuse = true; /* docs/measurements-history.md: the time it saves against what it changes */
  st->drafts = true;   /* docs/evaluation.md, "Drafts": measured on and off */
  st->draft_threshold = SC_DRAFT_THRESHOLD_DEFAULT;
  st->max_document_bytes = SC_DEFAULT_MAX_DOCUMENT_BYTES;
}

/* The decoding parameters the settings choose (completions and code actions). */
void sc_cpl__params_from_settings(const settings *st, sc_infill_params *p) {
  sc_infill_params_default(p);
  sc_infill_algorithm_parse(st->algorithm, p);
  p->threshold = (float)st->threshold;
  p->eos_penalty = (float)st->eos_penalty; /* NAN stays NAN: the model's default */
  p->draft_threshold = (float)st->draft_threshold;
}

void sc_cpl__settings_free(settings *st) {
  free(st->model_path);
  free(st->backend_url);
  free(st->backend_model);
  free(st->backend_key_env);
  if (st->backend_key) memset(st->backend_key, 0, strlen(st->backend_key));
  free(st->backend_key);
  free(st->hole_marker);
  for (int i = 0; i < st->n_languages; i++) free(st->languages[i]);
  free(st->languages);
  memset(st, 0, sizeof *st);
}

bool sc_cpl__settings_copy(settings *dst, const settings *src) {
  *dst = *src;
  dst->model_path = src->model_path ? strdup(src->model_path) : NULL;
  dst->hole_marker = src->hole_marker ? strdup(src->hole_marker) : NULL;
  dst->languages = NULL;
  dst->n_languages = 0;
  dst->backend_url = src->backend_url ? strdup(src->backend_url) : NULL;
  dst->backend_model = src->backend_model ? strdup(src->backend_model) : NULL;
  dst->backend_key_env = src->backend_key_env ? strdup(src->backend_key_env) : NULL;
  dst->backend_key = src->backend_key ? strdup(src->backend_key) : NULL;
  if ((src->backend_url && !dst->backend_url) || (src->backend_model && !dst->backend_model) ||
      (src->backend_key_env && !dst->backend_key_env) || (src->backend_key && !dst->backend_key))
    return false;
  if (src->n_languages) {
    dst->languages = calloc((size_t)src->n_languages, sizeof *dst->languages);
    if (!dst->languages) return false;
    for (int i = 0; i < src->n_languages; i++) {
      dst->languages[i] = strdup(src->languages[i]);
      if (!dst->languages[i]) return false;
      dst->n_languages++;
    }
  }
  return !src->model_path || dst->model_path;
}

static bool get_int(json_t *o, const char *key, int lo, int hi, int *out) {
  json_t *v = json_object_get(o, key);
  if (!v) return false;
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
    SC_LOG_WARN("settings: %s must be an integer from %d to %d; ignored", key, lo, hi);
    return false;
  }
  *out = (int)json_integer_value(v);
  return true;
}

static bool same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void set_str(char **dst, const char *src) {
  if (*dst) memset(*dst, 0, strlen(*dst)); /* it may be a key */
  free(*dst);
  *dst = src && *src ? strdup(src) : NULL;
}

/* The backend object's provider, fimTemplate, stream, cutOff and drafts; false
 * (with a warning) on a bad value, which leaves the whole setting ignored
 * rather than half applied. */
static bool backend_shape(json_t *v, sc_fim_provider *prov, sc_fim_template *tmpl, bool *no_stream,
                          bool *drop_cut, bool *drafts) {
  json_t *x;
  if ((x = json_object_get(v, "provider")) && !json_is_null(x) &&
      !sc_fim_provider_parse(json_string_value(x), prov)) {
    SC_LOG_WARN("settings: backend.provider must be one of %s; ignored", SC_FIM_PROVIDER_NAMES);
    return false;
  }
  if ((x = json_object_get(v, "fimTemplate")) && !json_is_null(x) &&
      !sc_fim_template_parse(json_string_value(x), tmpl)) {
    SC_LOG_WARN("settings: backend.fimTemplate must be one of %s; ignored", SC_FIM_TEMPLATE_NAMES);
    return false;
  }
  if ((x = json_object_get(v, "stream"))) {
    if (!json_is_boolean(x)) {
      SC_LOG_WARN("settings: backend.stream must be true or false; ignored");
      return false;
    }
    *no_stream = json_is_false(x);
  }
  if ((x = json_object_get(v, "cutOff"))) {
    const char *m = json_string_value(x);
    if (!m || (strcmp(m, "mark") != 0 && strcmp(m, "drop") != 0)) {
      SC_LOG_WARN("settings: backend.cutOff must be \"mark\" or \"drop\"; ignored");
      return false;
    }
    *drop_cut = strcmp(m, "drop") == 0;
  }
  if ((x = json_object_get(v, "drafts"))) {
    if (!json_is_boolean(x)) {
      SC_LOG_WARN("settings: backend.drafts must be true or false; ignored");
      return false;
    }
    *drafts = json_is_true(x);
  }
  return true;
}

/* The "backend" setting: null or "" (the local engine), a URL, or
 * {url, model, apiKeyEnv, apiKey, timeoutMs, maxTries, provider, fimTemplate,
 * stream, cutOff, drafts, contextTokens}. True when it changed. The key
 * itself is never logged. */
static bool backend_settings(settings *st, json_t *v) {
  const char *url = NULL, *model = NULL, *env = NULL, *key = NULL;
  int timeout = 0, tries = 0, context = 0;
  sc_fim_provider prov = SC_FIM_PROVIDER_AUTO;
  sc_fim_template tmpl = SC_FIM_TEMPLATE_NONE;
  bool no_stream = false, drop_cut = false, drafts = false;
  if (json_is_string(v)) {
    url = json_string_value(v);
  } else if (json_is_object(v)) {
    url = json_string_value(json_object_get(v, "url"));
    model = json_string_value(json_object_get(v, "model"));
    env = json_string_value(json_object_get(v, "apiKeyEnv"));
    key = json_string_value(json_object_get(v, "apiKey"));
    get_int(v, "timeoutMs", 100, 600000, &timeout);
    get_int(v, "maxTries", 1, 10, &tries);
    get_int(v, "contextTokens", 64, 1 << 22, &context);
    if (!backend_shape(v, &prov, &tmpl, &no_stream, &drop_cut, &drafts)) return false;
  } else if (!json_is_null(v)) {
    SC_LOG_WARN("settings: backend must be a URL or {url, model, apiKeyEnv, timeoutMs, provider, "
                "fimTemplate, ...}; ignored");
    return false;
  }
  if (url && !*url) url = NULL;
  if (url && strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
    SC_LOG_WARN("settings: backend.url must start with http:// or https://; ignored");
    return false;
  }
  if (model && !*model) model = NULL;
  if (env && !*env) env = NULL;
  if (key && !*key) key = NULL;
  if (same_str(url, st->backend_url) && same_str(model, st->backend_model) &&
      same_str(env, st->backend_key_env) && same_str(key, st->backend_key) &&
      timeout == st->backend_timeout_ms && tries == st->backend_max_tries &&
      prov == st->backend_provider && tmpl == st->backend_template &&
      no_stream == st->backend_no_stream && drop_cut == st->backend_drop_cut &&
      drafts == st->backend_drafts && context == st->backend_context)
    return false;
  set_str(&st->backend_url, url);
  set_str(&st->backend_model, model);
  set_str(&st->backend_key_env, env);
  set_str(&st->backend_key, key);
  st->backend_timeout_ms = timeout;
  st->backend_max_tries = tries;
  st->backend_context = context;
  st->backend_provider = prov;
  st->backend_template = tmpl;
  st->backend_no_stream = no_stream;
  st->backend_drop_cut = drop_cut;
  st->backend_drafts = drafts;
  return true;
}

/* The settings a suggestion depends on, other than the model and the
 * backend (whose changes clear the cache where they are handled). */
static bool same_decoding(const settings *a, const settings *b) {
  return strcmp(a->algorithm, b->algorithm) == 0 && a->threshold == b->threshold &&
         (a->eos_penalty == b->eos_penalty || (isnan(a->eos_penalty) && isnan(b->eos_penalty))) &&
         a->max_tokens == b->max_tokens && a->length_candidates == b->length_candidates &&
         a->repair == b->repair && a->context_budget == b->context_budget &&
         a->kv_reuse == b->kv_reuse && a->drafts == b->drafts &&
         a->draft_threshold == b->draft_threshold;
}

unsigned sc_cpl__settings_apply(sc_completer *c, json_t *o) {
  settings *st = &c->set;
  /* Scalars only are compared; the strings in the copy may be freed below. */
  const settings before = *st;
  unsigned changes = 0;
  json_t *v;
  if ((v = json_object_get(o, "modelPath"))) {
    const char *path = json_string_value(v);
    if (json_is_null(v) || (path && !*path)) path = NULL;
    else if (!path) SC_LOG_WARN("settings: modelPath must be a string; ignored");
    if (json_is_null(v) || path || (json_is_string(v))) {
      bool changed = (path == NULL) != (st->model_path == NULL) ||
                     (path && strcmp(path, st->model_path) != 0);
      if (changed) {
        free(st->model_path);
        st->model_path = path ? strdup(path) : NULL;
        changes |= SC_CPL_CHANGED_MODEL;
      }
    }
  }
  if ((v = json_object_get(o, "device"))) {
    sc_device_kind k;
    if (json_is_string(v) && sc_device_kind_parse(json_string_value(v), &k)) {
      if (k != st->device) changes |= SC_CPL_CHANGED_MODEL;
      st->device = k;
      st->device_set = true;
    } else {
      SC_LOG_WARN("settings: device must be auto, cpu or cuda; ignored");
    }
  }
  if ((v = json_object_get(o, "weights"))) {
    sc_weights_kind k;
    if (json_is_string(v) && sc_weights_kind_parse(json_string_value(v), &k)) {
      if (k != st->weights) changes |= SC_CPL_CHANGED_MODEL;
      st->weights = k;
      st->weights_set = true;
    } else {
      SC_LOG_WARN("settings: weights must be auto, int8, bf16 or f32; ignored");
    }
  }
  if ((v = json_object_get(o, "algorithm"))) {
    sc_infill_params probe;
    if (json_is_string(v) && sc_infill_algorithm_parse(json_string_value(v), &probe))
      snprintf(st->algorithm, sizeof st->algorithm, "%s", json_string_value(v));
    else
      SC_LOG_WARN("settings: algorithm must be threshold, confidence, margin or entropy");
  }
  if ((v = json_object_get(o, "threshold"))) {
    if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) <= 1)
      st->threshold = json_number_value(v);
    else
      SC_LOG_WARN("settings: threshold must be a number in [0, 1]; ignored");
  }
  if ((v = json_object_get(o, "eosPenalty"))) {
    if (json_is_null(v))
      st->eos_penalty = NAN;
    else if (json_is_number(v) && fabs(json_number_value(v)) <= SC_EOS_PENALTY_MAX)
      st->eos_penalty = json_number_value(v);
    else
      SC_LOG_WARN("settings: eosPenalty must be a number in [-%g, %g] or null; ignored",
                  SC_EOS_PENALTY_MAX, SC_EOS_PENALTY_MAX);
  }
  get_int(o, "maxTokens", 1, 1024, &st->max_tokens);
  if ((v = json_object_get(o, "holeMarker"))) {
    if (json_is_string(v) && json_string_length(v) > 0) {
      free(st->hole_marker);
      st->hole_marker = strdup(json_string_value(v));
    } else {
      SC_LOG_WARN("settings: holeMarker must be a non-empty string; ignored");
    }
  }
  if ((v = json_object_get(o, "contextBudget"))) {
    if (json_is_null(v)) { /* back to the default, fitted silently */
      st->context_budget = DEFAULT_CONTEXT_BUDGET;
      st->budget_set = false;
    } else if (get_int(o, "contextBudget", 64, 65536, &st->context_budget)) {
      st->budget_set = true;
    }
  }
  get_int(o, "debounceMs", 0, 5000, &st->debounce_ms);
  get_int(o, "lengthCandidates", 1, SC_INFILL_MAX_CANDIDATES, &st->length_candidates);
  get_int(o, "maxDocumentBytes", 0, 1 << 30, &st->max_document_bytes);
  get_int(o, "indexMaxFiles", 0, 10000000, &st->index_max_files);
  if ((v = json_object_get(o, "repair"))) {
    if (json_is_boolean(v)) st->repair = json_is_true(v);
    else SC_LOG_WARN("settings: repair must be true or false; ignored");
  }
  if ((v = json_object_get(o, "kvReuse"))) {
    if (json_is_boolean(v)) st->kv_reuse = json_is_true(v);
    else SC_LOG_WARN("settings: kvReuse must be true or false; ignored");
  }
  if ((v = json_object_get(o, "drafts"))) {
    if (json_is_boolean(v)) st->drafts = json_is_true(v);
    else SC_LOG_WARN("settings: drafts must be true or false; ignored");
  }
  if ((v = json_object_get(o, "draftThreshold"))) {
    if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) <= 1)
      st->draft_threshold = json_number_value(v);
    else
      SC_LOG_WARN("settings: draftThreshold must be a number in [0, 1]; ignored");
  }
  if ((v = json_object_get(o, "autoPull"))) {
    /* Turned on while the model is missing: the load that failed runs
     * again, and downloads it. */
    if (json_is_boolean(v)) {
      if (json_is_true(v) && !st->auto_pull && c->state == MS_ERROR)
        changes |= SC_CPL_CHANGED_MODEL;
      st->auto_pull = json_is_true(v);
    } else {
      SC_LOG_WARN("settings: autoPull must be true or false; ignored");
    }
  }
  if ((v = json_object_get(o, "enabledLanguages"))) {
    if (!json_is_array(v) && !json_is_null(v)) {
      SC_LOG_WARN("settings: enabledLanguages must be an array of names; ignored");
    } else {
      for (int i = 0; i < st->n_languages; i++) free(st->languages[i]);
      free(st->languages);
      st->languages = NULL;
      st->n_languages = 0;
      size_t n = json_array_size(v);
      if (n) st->languages = calloc(n, sizeof *st->languages);
      for (size_t i = 0; i < n && st->languages; i++) {
        const char *name = json_string_value(json_array_get(v, i));
        if (name && (st->languages[st->n_languages] = strdup(name))) st->n_languages++;
      }
    }
  }
  if ((v = json_object_get(o, "backend"))) {
    bool was_remote = st->backend_url != NULL;
    if (backend_settings(st, v)) {
      changes |= SC_CPL_CHANGED_BACKEND;
      SC_LOG_INFO("settings: %s%s%s", st->backend_url ? "the remote backend" : "the local engine",
                  st->backend_model ? ", model " : "", st->backend_model ? st->backend_model : "");
      /* Remote needs only the tokenizer; local needs the model. */
      if (was_remote != (st->backend_url != NULL)) changes |= SC_CPL_CHANGED_MODEL;
    }
  }
  if (!same_decoding(&before, st)) changes |= SC_CPL_CHANGED_DECODING;
  if (before.index_max_files != st->index_max_files) changes |= SC_CPL_CHANGED_INDEX_BOUND;
  return changes;
}

bool sc_cpl__language_enabled(const sc_completer *c, const char *lang) {
  if (!lang) return false;
  if (!c->set.languages) return true;
  for (int i = 0; i < c->set.n_languages; i++)
    if (strcmp(c->set.languages[i], lang) == 0) return true;
  return false;
}

int sc_cpl__remote_context(const sc_completer *c) {
  return c->set.backend_context > 0 ? c->set.backend_context : c->backend_context_learnt;
}

void sc_cpl__check_budget(sc_completer *c) {
  bool remote = c->set.backend_url != NULL;
  int context = remote ? sc_cpl__remote_context(c) : c->model_context;
  if (!c->set.budget_set || context <= 0) return;
  sc_infill_budget fit;
  if (remote) {
    fit = sc_cpl__remote_fit(&c->set, context, c->set.max_tokens);
  } else if (sc_infill_budget_compute(context, &c->model_frame, c->set.context_budget,
                                      c->set.max_tokens, &fit, NULL) != SC_OK) {
    return;
  }
  if (!fit.clamped) return;
  if (c->warned_budget == c->set.context_budget && c->warned_context == context) return;
  c->warned_budget = c->set.context_budget;
  c->warned_context = context;
  SC_LOG_WARN("settings: contextBudget %d is more than the %s's %d-token context leaves "
              "after a %d-token canvas; prompts get at most %d tokens",
              c->set.context_budget, remote ? "backend" : "model", context, fit.canvas,
              fit.prompt);
}

/* ---- the remote backend's budget (prompt.c cuts its prompt by it) ----------- */

/* Positions a FIM server's template adds around the prompt and the suffix
 * (BOS and the three FIM sentinels, with room to spare), whether or not
 * the suffix is cut: its template is not known here. */
#define REMOTE_SPECIALS 8
/* Without a local tokenizer, bytes stand for tokens at this rate: code
 * averages 3-4 bytes a token with BPE tokenizers, so 3 errs on the side of
 * fitting. */
#define REMOTE_BYTES_PER_TOKEN 3

sc_infill_budget sc_cpl__remote_fit(const settings *set, int remote_context, int canvas) {
  int budget = set->context_budget;
  /* The canvas reserves room for the repair's request too, which carries
   * the candidate's head and tail besides the prompt. */
  sc_infill_frame frame = {REMOTE_SPECIALS, REMOTE_SPECIALS, 2 * canvas};
  sc_infill_budget fit = {.context = 0, .frame = frame, .canvas = canvas,
                          .max_canvas = canvas, .prompt = budget, .prompt_cut = budget};
  if (remote_context > 0 &&
      sc_infill_budget_compute(remote_context, &frame, budget, canvas, &fit, NULL) != SC_OK) {
    /* A context too small for anything: the least that can be sent. */
    fit = (sc_infill_budget){.context = remote_context, .frame = frame, .canvas = 1,
                             .max_canvas = 1, .prompt = 1, .prompt_cut = 1, .clamped = true};
  }
  return fit;
}

void sc_cpl__remote_byte_windows(const sc_infill_budget *fit, size_t before, size_t after,
                                 size_t *keep_before, size_t *keep_after) {
  /* The same split, in bytes. */
  sc_infill_budget bytes = *fit;
  size_t room = (size_t)fit->prompt * REMOTE_BYTES_PER_TOKEN;
  bytes.prompt = bytes.prompt_cut = room > INT32_MAX ? INT32_MAX : (int)room;
  bool cut;
  sc_infill_fit(&bytes, before, after, keep_before, keep_after, &cut);
}

/* ---- documents the settings refuse ------------------------------------------ */

const char *sc_cpl__document_refused(sc_lsp_server *s, sc_completer *c, sc_document *d,
                                     char *why, size_t cap) {
  if (d->unsynced) {
    snprintf(why, cap, "%s is out of sync with the editor (an edit could not be applied); "
             "close and reopen it", d->uri);
    return "out of sync";
  }
  size_t max = (size_t)c->set.max_document_bytes;
  if (d->len <= max) return NULL;
  snprintf(why, cap, "%s is %zu bytes, above maxDocumentBytes (%zu): sculpt offers nothing in it",
           d->uri, d->len, max);
  if (d->tree) sc_document_drop_syntax(d);
  if (!d->size_warned) {
    /* Once per document: the user learns why nothing comes, without a
     * message per keystroke. */
    d->size_warned = true;
    SC_LOG_INFO("%s", why);
    sc_lsp__send_notification(s, "window/showMessage",
                              json_pack("{s:i, s:s}", "type", 2, "message", why));
  }
  return "too large";
}

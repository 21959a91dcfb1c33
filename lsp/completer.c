/* completer.c — the completion feature as the server sees it: its state
 * (made and freed with the server), the capabilities it adds to
 * initialize's answer, its table of methods, the hooks the server calls,
 * the accept and dismiss commands (workspace/executeCommand) and its
 * counters for sculpt/test/stats. Each concern lives in a file of its own:
 *
 *   settings.c   the settings: defaults, parsing, change detection
 *   model_slot.c the model: load, reload, status, progress
 *   index.c      the workspace index jobs
 *   prompt.c     the prompt's inputs besides the cursor's windows
 *   cache.c      the suggestion cache and typing-through
 *   inline.c     inlineCompletion and completion requests
 *   shape.c      from a model's text to the answer's items
 *   remote.c     the remote backend and the shaping of its answers
 *   actions.c    code actions and codeAction/resolve
 *
 * They share completer_impl.h; the server is reached only through
 * lsp_impl.h, and reaches the feature only through sc_completion_feature. */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The state, made with the server (the settings at their defaults). */
static void *completer_new(void) {
  sc_completer *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  sc_cpl__settings_defaults(&c->set);
  return c;
}

/* At exit, after the workers stopped: remote callbacks are told to touch
 * nothing, then everything is freed. */
static void completer_free(void *state) {
  sc_completer *c = state;
  if (!c) return;
  c->closing = true;
  sc_cpl__drop_client(c);
  sc_cpl__release_model(c);
  sc_cpl__sessions_free(c);
  sc_cpl__index_free(c);
  sc_cpl__settings_free(&c->set);
  sc_cpl__cache_clear(c);
  free(c);
}

static void completer_capabilities(json_t *caps) {
  json_object_set_new(caps, "inlineCompletionProvider", json_true());
  json_object_set_new(caps, "completionProvider", json_pack("{s:b}", "resolveProvider", 0));
  json_object_set_new(caps, "codeActionProvider",
                      json_pack("{s:[s, s], s:b}", "codeActionKinds", "quickfix",
                                "refactor.rewrite", "resolveProvider", 1));
  json_object_set_new(caps, "executeCommandProvider",
                      json_pack("{s:[s, s]}", "commands", "sculpt.accept", "sculpt.dismiss"));
}

/* initialized: the model loads and the workspace is indexed, both in the
 * background. */
static void completer_start(sc_lsp_server *s) {
  sc_completer *c = sc_lsp__feature(s);
  c->started = true;
  /* `sculpt lsp --device` and `--weights` are the defaults the device and
   * weights settings override. */
  if (!c->set.device_set) c->set.device = sc_lsp__options(s)->device;
  if (!c->set.weights_set) c->set.weights = sc_lsp__options(s)->weights;
  if (c->state == MS_NONE) sc_cpl__start_load(s, c);
  sc_cpl__start_index(s, c);
}

/* A request failed (or the one that failed works again): the status says
 * so, once the session runs. */
static void completer_on_error(sc_lsp_server *s) {
  sc_completer *c = sc_lsp__feature(s);
  if (c->started) sc_cpl__send_status(s, c);
}

/* workspace/executeCommand: sculpt.accept and sculpt.dismiss, which the
 * clients send when a suggestion is taken or dropped; counted. */
static void handle_execute(sc_lsp_req *r) {
  sc_completer *c = sc_lsp__feature(r->s);
  const char *cmd = json_string_value(json_object_get(r->params, "command"));
  if (!cmd) {
    sc_lsp__bad_params(r, "command must be a string");
    return;
  }
  if (strcmp(cmd, "sculpt.accept") == 0) {
    c->accepted++;
  } else if (strcmp(cmd, "sculpt.dismiss") == 0) {
    c->dismissed++;
  } else {
    sc_lsp__bad_params(r, "unknown command %s", cmd);
    return;
  }
  SC_LOG_DEBUG("%s (accepted %ld, dismissed %ld)", cmd, c->accepted, c->dismissed);
  sc_lsp__send_result(r->s, r->id, json_null());
}

/* The feature's settings hook: settings.c applies the object and says what
 * changed; the feature's front acts on it, since what it sets off (a load,
 * an index, a new client) lives in the files above settings.c. */
static void completer_settings(sc_lsp_server *s, json_t *o) {
  sc_completer *c = sc_lsp__feature(s);
  unsigned changed = sc_cpl__settings_apply(c, o);
  if (changed & SC_CPL_CHANGED_BACKEND) {
    /* In-flight remote requests end with an error; the next request makes
     * a client with the new settings. */
    sc_cpl__drop_client(c);
    c->backend = BS_UNKNOWN;
    c->backend_error[0] = '\0';
    c->backend_context_learnt = 0; /* another server, perhaps another context */
  }
  if (changed & (SC_CPL_CHANGED_BACKEND | SC_CPL_CHANGED_DECODING)) sc_cpl__cache_clear(c);
  sc_cpl__check_budget(c);
  /* A new model, device or weights kind is loaded at once, once the
   * session runs. */
  if ((changed & SC_CPL_CHANGED_MODEL) && c->state != MS_NONE) sc_cpl__start_load(s, c);
  /* A new bound on the index builds it again (the old one serves meanwhile). */
  if ((changed & SC_CPL_CHANGED_INDEX_BOUND) && c->started) sc_cpl__start_index(s, c);
}

/* A document's change: one that grew past maxDocumentBytes frees its tree
 * at once (memory), then the completion side's own bookkeeping. */
static void completer_on_change(sc_lsp_server *s, sc_document *d) {
  sc_completer *c = sc_lsp__feature(s);
  if (d->len > (size_t)c->set.max_document_bytes && d->tree) sc_document_drop_syntax(d);
  sc_cpl__on_change(s, d);
}

/* The counters merged into sculpt/test/stats. */
static json_t *completer_stats(sc_lsp_server *s) {
  const sc_completer *c = sc_lsp__feature(s);
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:I}", "engineCalls",
                   (json_int_t)atomic_load(&((sc_completer *)c)->engine_calls),
                   "completionRequests", (json_int_t)c->requests, "cacheHits",
                   (json_int_t)c->cache_hits, "accepted", (json_int_t)c->accepted,
                   "dismissed", (json_int_t)c->dismissed, "modelState",
                   sc_cpl__state_name(c->state),
                   "remoteCalls", (json_int_t)c->remote_calls, "shaping",
                   (json_int_t)atomic_load(&((sc_completer *)c)->shaping));
}

static const sc_lsp_method k_methods[] = {
    {"textDocument/inlineCompletion", sc_cpl__handle_inline, SC_METHOD_REQUEST},
    {"textDocument/completion", sc_cpl__handle_completion, SC_METHOD_REQUEST},
    {"workspace/executeCommand", handle_execute, SC_METHOD_REQUEST},
    {"textDocument/codeAction", sc_cpl__handle_action, SC_METHOD_REQUEST},
    {"codeAction/resolve", sc_cpl__handle_action_resolve, SC_METHOD_REQUEST},
    {"sculpt/test/prompt", sc_cpl__handle_test_prompt,
     SC_METHOD_REQUEST | SC_METHOD_TEST_HOOK},
};

const sc_lsp_feature sc_completion_feature = {
    .methods = k_methods,
    .n_methods = sizeof k_methods / sizeof k_methods[0],
    .create = completer_new,
    .destroy = completer_free,
    .capabilities = completer_capabilities,
    .set_root = sc_cpl__set_root,
    .settings = completer_settings,
    .start = completer_start,
    .on_change = completer_on_change,
    .on_save = sc_cpl__on_save,
    .on_file_changed = sc_cpl__on_file_changed,
    .stats = completer_stats,
    .on_error = completer_on_error,
    .on_open = sc_cpl__on_open,
};

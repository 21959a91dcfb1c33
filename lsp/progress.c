/* progress.c — work-done progress the server starts itself (LSP 3.17
 * "Server Initiated Progress"): window/workDoneProgress/create, then
 * $/progress begin, reports and end on the token. The work and the
 * client's answer to create race: a load or an index may finish before
 * the client has answered, or a report come before begin could be sent.
 * Here each token goes begin -> report* -> end, each once, whatever the
 * order: what the work says before the token exists waits (the latest
 * report only), a refused token says nothing, and a token is dropped once
 * its end is sent.
 *
 * Threads: the loop's only. */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sc_server_progress {
  int id;
  char token[64];
  bool created;  /* the client accepted the token: begin was sent */
  bool ended;    /* the work is over: end is sent once created */
  char *title, *message, *report, *end_message;
  int percentage; /* begin's; -1: none */
  int report_pct;
  bool report_pending;
  struct sc_server_progress *next;
};

static void progress_free(sc_server_progress *p) {
  free(p->title);
  free(p->message);
  free(p->report);
  free(p->end_message);
  free(p);
}

static sc_server_progress *find(sc_lsp_server *s, int id, sc_server_progress ***link) {
  for (sc_server_progress **pp = &s->progress; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      if (link) *link = pp;
      return *pp;
    }
  return NULL;
}

static void drop(sc_lsp_server *s, int id) {
  sc_server_progress **link = NULL, *p = find(s, id, &link);
  if (!p) return;
  *link = p->next;
  progress_free(p);
}

static void send_value(sc_lsp_server *s, const sc_server_progress *p, json_t *value) {
  sc_lsp__send_notification(s, "$/progress",
                            json_pack("{s:s, s:o}", "token", p->token, "value", value));
}

static void send_kind(sc_lsp_server *s, sc_server_progress *p, const char *kind,
                      const char *message, int percentage) {
  json_t *v = json_pack("{s:s}", "kind", kind);
  if (strcmp(kind, "begin") == 0 && p->title) json_object_set_new(v, "title", json_string(p->title));
  if (message) json_object_set_new(v, "message", json_string(message));
  if (percentage >= 0) json_object_set_new(v, "percentage", json_integer(percentage));
  send_value(s, p, v);
}

static void on_created(sc_lsp_server *s, json_t *result, json_t *error, void *user) {
  (void)result;
  int id = (int)(intptr_t)user;
  sc_server_progress *p = find(s, id, NULL);
  if (!p) return;
  if (error) { /* refused: nothing may go out on this token */
    SC_LOG_DEBUG("the client refused progress token %s", p->token);
    drop(s, id);
    return;
  }
  p->created = true;
  send_kind(s, p, "begin", p->message, p->percentage);
  if (p->report_pending && !p->ended) send_kind(s, p, "report", p->report, p->report_pct);
  p->report_pending = false;
  if (p->ended) {
    send_kind(s, p, "end", p->end_message, -1);
    drop(s, id);
  }
}

int sc_lsp__progress_begin(sc_lsp_server *s, const char *kind, const char *title,
                           const char *message, int percentage) {
  if (!s->client_progress) return 0;
  sc_server_progress *p = calloc(1, sizeof *p);
  if (!p) return 0;
  p->id = ++s->next_progress_id;
  snprintf(p->token, sizeof p->token, "sculpt/%s/%d", kind, p->id);
  p->title = title ? strdup(title) : NULL;
  p->message = message ? strdup(message) : NULL;
  p->percentage = percentage;
  p->next = s->progress;
  s->progress = p;
  sc_server__send_request_with(s, "window/workDoneProgress/create",
                               json_pack("{s:s}", "token", p->token), on_created,
                               (void *)(intptr_t)p->id);
  return p->id;
}

void sc_lsp__progress_report(sc_lsp_server *s, int id, const char *message, int percentage) {
  sc_server_progress *p = id ? find(s, id, NULL) : NULL;
  if (!p || p->ended) return;
  if (p->created) {
    send_kind(s, p, "report", message, percentage);
    return;
  }
  free(p->report); /* only the latest waits */
  p->report = message ? strdup(message) : NULL;
  p->report_pct = percentage;
  p->report_pending = true;
}

void sc_lsp__progress_end(sc_lsp_server *s, int id, const char *message) {
  sc_server_progress *p = id ? find(s, id, NULL) : NULL;
  if (!p || p->ended) return;
  if (p->created) {
    send_kind(s, p, "end", message, -1);
    drop(s, id);
    return;
  }
  p->ended = true; /* sent when the client answers create */
  p->end_message = message ? strdup(message) : NULL;
}

void sc_server__progress_free_all(sc_lsp_server *s) {
  while (s->progress) {
    sc_server_progress *p = s->progress;
    s->progress = p->next;
    progress_free(p);
  }
}

/* fim_impl.h — what the remote FIM client's two files share (private to
 * net/): the client and call structures, and the provider-shape functions
 * fim_shape.c gives fim_client.c. fim_client.c owns the transport (libcurl's
 * multi interface on the libev loop, calls, retries); fim_shape.c owns what
 * goes over the wire in each provider's shape (URLs, request bodies, answers
 * whole or streamed, refusal messages). */
#ifndef SC_NET_FIM_IMPL_H
#define SC_NET_FIM_IMPL_H

#include "net.h"

#include <curl/curl.h>
#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>


#define MAX_ANSWER (16u << 20) /* bytes; a FIM answer is small, refuse floods */

typedef struct sock_w {
  ev_io io;
  curl_socket_t fd;
  sc_fim_client *c;
  struct sock_w *prev, *next;
} sock_w;

/* How the body of a 2xx answer is read. */
typedef enum body_mode { BODY_UNKNOWN, BODY_JSON, BODY_SSE, BODY_NDJSON } body_mode;

struct sc_fim_call {
  sc_fim_client *c;
  CURL *easy;
  char *body;
  char *resp; /* every byte of the answer (bounded by MAX_ANSWER) */
  size_t resp_len, resp_cap;
  bool resp_overflow;
  long retry_after_ms; /* from the last answer's Retry-After, -1: none */
  char content_type[64];
  int tries;
  double t0;
  bool in_multi;
  ev_timer retry; /* waiting to try again */
  sc_fim_done_fn done;
  sc_fim_partial_fn partial;
  void *user;
  char errbuf[CURL_ERROR_SIZE];
  /* The streamed answer, read as it arrives (write_cb). */
  body_mode mode;
  size_t parsed;       /* bytes of resp the stream reader has consumed */
  char *event;         /* an SSE event's data lines so far */
  size_t event_len, event_cap;
  bool event_open;     /* a data: line came since the last dispatch */
  char *text;          /* the answer so far */
  size_t text_len, text_cap;
  bool finished;       /* the stream's last event ([DONE], a finish_reason,
                          llama.cpp's stop, Ollama's done) was seen */
  bool drafts;         /* events carry whole drafts (sculpt serve's `step`) */
  bool stream_failed;  /* an error inside the stream, or out of memory */
  char stream_err[256];
  char finish[16];
  double first_ms;
  bool partial_pending; /* the text changed: partial runs after the socket action */
  sc_fim_call *prev, *next;
};

struct sc_fim_client {
  struct ev_loop *loop;
  CURLM *multi;
  ev_timer timer;
  char *endpoint; /* where requests go */
  char *shown;    /* the endpoint for messages, without user:password@ */
  char *model;
  char *key;      /* NULL: no Authorization header */
  struct curl_slist *headers;
  int timeout_ms, max_tries, backoff_ms, max_backoff_ms;
  sc_fim_provider provider;
  sc_fim_template tmpl;
  bool stream;
  sc_fim_call *calls;
  sock_w *socks;
};

/* The endpoint requests go to for o->url: the provider (o's, else detected
 * from the URL and template) and the URL with the provider's endpoint path.
 * Refuses a provider that needs a model without one, and prompt-template
 * without a template. *endpoint is malloc'd. */
sc_status sc_fim__endpoint(const sc_fim_client_options *o, sc_fim_provider *provider,
                           char **endpoint, sc_error *err);

/* The URL with its user:password@ removed (for messages). malloc'd, or NULL. */
char *sc_fim__url_shown(const char *url);

/* The request body in the client's provider shape. malloc'd, NULL on OOM. */
char *sc_fim__request_body(const sc_fim_client *c, const sc_fim_request *req);

/* How a 2xx answer's body is read, from its Content-Type and first bytes. */
body_mode sc_fim__body_mode(const sc_fim_call *call);

/* Reads the complete lines of a streamed body that arrived into call->text;
 * at the end (eof), the rest too. */
void sc_fim__stream_feed(sc_fim_call *call, bool eof);

/* A 2xx answer, whole or streamed, into res (its text borrowed from call or
 * from *j, which the caller frees after the callback). */
void sc_fim__answer_result(sc_fim_call *call, sc_fim_result *res, json_t **j);

/* A refused request (HTTP status code): the server's reason from the body
 * into reason, and for 400/404/422/501 what to check into hint ("" else). */
void sc_fim__refusal(const sc_fim_call *call, long code, char *reason, size_t reason_cap,
                     char *hint, size_t hint_cap);

#endif

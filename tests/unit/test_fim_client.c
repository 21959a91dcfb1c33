/* test_fim_client.c — the remote FIM client: where requests go (a base URL
 * gets the provider's endpoint, a path prefix kept; a URL that names the
 * endpoint is used as given; user:password@ never shows), the provider
 * detected from the URL, each provider's request shape, streamed answers in
 * each framing, refusals with hints, bad options, a closed port (an unreachable
 * backend, no retry), cancellation of a request that a silent server never
 * answers; and against a scripted in-process server: the key masked in
 * errors (short keys, keys cut by truncation), NUL bytes in a prompt, answers
 * that are not completions, redirects not followed, the answer size cap, and
 * Retry-After as an HTTP-date. More HTTP exchanges are tested against a mock
 * server in tests/remote/. */
#define _GNU_SOURCE /* strcasestr */
#include "net.h"
#include "sc_test.h"

#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A listening socket on 127.0.0.1 that never accepts; *port gets its port. */
static int silent_listener(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &n) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

static int closed_port(void) {
  int port = 0;
  int fd = silent_listener(&port);
  if (fd >= 0) close(fd);
  return port;
}


/* ---- a scripted one-connection-per-reply HTTP server (a thread) ---------- */

#define MOCK_MAX 4

typedef struct mock {
  int fd, port;
  pthread_t th;
  const char *replies[MOCK_MAX]; /* whole responses; NULL: a huge 200 body */
  int n_replies;
  char req[MOCK_MAX][4096]; /* what arrived, NUL-terminated (cut to fit) */
  int n_req;
} mock;

static void *mock_main(void *arg) {
  mock *m = arg;
  for (int i = 0; i < m->n_replies; i++) {
    int c = accept(m->fd, NULL, NULL);
    if (c < 0) break;
    /* The request: headers, then Content-Length bytes of body. */
    size_t got = 0, need = 0;
    char *buf = m->req[i];
    for (;;) {
      ssize_t n = recv(c, buf + got, sizeof m->req[i] - 1 - got, 0);
      if (n <= 0) break;
      got += (size_t)n;
      buf[got] = '\0';
      char *end = strstr(buf, "\r\n\r\n");
      if (end && !need) {
        const char *cl = strcasestr(buf, "content-length:");
        need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
      }
      if (need && got >= need) break;
      if (got + 1 >= sizeof m->req[i]) break;
    }
    m->n_req = i + 1;
    if (m->replies[i]) {
      ssize_t w = send(c, m->replies[i], strlen(m->replies[i]), MSG_NOSIGNAL);
      (void)w;
    } else {
      /* 20 MB of answer: the client must stop reading at its cap. */
      static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 20000000\r\nConnection: close\r\n\r\n";
      static char block[65536];
      memset(block, 'x', sizeof block);
      ssize_t w = send(c, head, sizeof head - 1, MSG_NOSIGNAL);
      for (size_t sent = 0; w > 0 && sent < 20000000; sent += (size_t)w)
        w = send(c, block, sizeof block, MSG_NOSIGNAL);
    }
    close(c);
  }
  return NULL;
}

static bool mock_start(mock *m) {
  m->fd = silent_listener(&m->port);
  if (m->fd < 0) return false;
  return pthread_create(&m->th, NULL, mock_main, m) == 0;
}

static void mock_stop(mock *m) {
  shutdown(m->fd, SHUT_RDWR); /* wakes an accept that waits for no one */
  pthread_join(m->th, NULL);
  close(m->fd);
}

/* One synchronous request to the mock; the status, *res filled. */
static sc_status mock_call(mock *m, const char *key, int max_tries, const char *prompt,
                           size_t prompt_len, sc_fim_result *res, char **text) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", m->port);
  sc_fim_client_options o = {0};
  o.url = url;
  o.api_key = key;
  o.api_key_env = "SCULPT_UNIT_NO_SUCH_KEY_VAR";
  o.max_tries = max_tries;
  o.backoff_ms = 50;
  o.timeout_ms = 10000;
  sc_fim_request req = {.prompt = prompt, .prompt_len = prompt_len, .suffix = "}",
                        .suffix_len = 1, .max_tokens = 8};
  size_t len = 0;
  sc_error err = {0};
  *text = NULL;
  return sc_fim_complete_sync(&o, &req, NULL, text, &len, res, &err);
}

static char *reply_of(int status, const char *extra, const char *body) {
  char *r = malloc(strlen(body) + 512);
  if (r)
    sprintf(r, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nConnection: close\r\n%s"
               "Content-Length: %zu\r\n\r\n%s",
            status, extra ? extra : "", strlen(body), body);
  return r;
}

/* The key never shows in an error, also when the server echoes it: not a
 * short key (masking must not grow the message past its buffer), nor one
 * cut by the message's truncation. */
static void test_key_scrubbed(void) {
  char body[512];
  /* Short keys: masked where they are, the rest of the message intact; a
   * key that its own mask contains ("*") does not make masking loop. */
  const char *keys[] = {"x", "*"};
  const char *want[] = {"before * after", "before * after"};
  for (int k = 0; k < 2; k++) {
    snprintf(body, sizeof body, "{\"error\":{\"message\":\"before %s after\"}}", keys[k]);
    mock m = {0};
    m.replies[0] = reply_of(500, NULL, body);
    m.n_replies = 1;
    REQUIRE(m.replies[0] && mock_start(&m));
    sc_fim_result res;
    char *text = NULL;
    EXPECT(mock_call(&m, keys[k], 1, "q", 1, &res, &text) == SC_ERR_IO);
    EXPECT(res.http_status == 500);
    EXPECTF(strstr(res.err.msg, want[k]) != NULL, "key %s: %s", keys[k], res.err.msg);
    mock_stop(&m);
    free((char *)m.replies[0]);
  }
  sc_fim_result res;
  char *text = NULL;

  /* A long key echoed where the 200-byte reason cuts it. */
  const char *key = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz";
  snprintf(body, sizeof body, "{\"error\":{\"message\":\"%0190d%s\"}}", 0, key);
  mock m2 = {0};
  m2.replies[0] = reply_of(401, NULL, body);
  m2.n_replies = 1;
  REQUIRE(m2.replies[0] && mock_start(&m2));
  EXPECT(mock_call(&m2, key, 1, "x", 1, &res, &text) == SC_ERR_IO);
  EXPECT(res.http_status == 401);
  EXPECTF(strstr(res.err.msg, "sk-live-01") == NULL && strstr(res.err.msg, "***"), "%s",
          res.err.msg);
  /* The key did go to the server, as a bearer token. */
  EXPECT(strstr(m2.req[0], "Authorization: Bearer sk-live-0123456789") != NULL);
  mock_stop(&m2);
  free((char *)m2.replies[0]);
}

/* A NUL byte in the prompt does not go out as \u0000 (which servers,
 * sculpt serve included, refuse). */
static void test_nul_in_prompt(void) {
  mock m = {0};
  m.replies[0] = reply_of(200, NULL, "{\"choices\":[{\"text\":\"ok\"}]}");
  m.n_replies = 1;
  REQUIRE(m.replies[0] && mock_start(&m));
  sc_fim_result res;
  char *text = NULL;
  EXPECT(mock_call(&m, NULL, 1, "a\0b", 3, &res, &text) == SC_OK);
  EXPECT(text && strcmp(text, "ok") == 0);
  free(text);
  EXPECTF(strstr(m.req[0], "\\u0000") == NULL && strstr(m.req[0], "\"prompt\":\"a b\""),
          "%s", m.req[0]);
  mock_stop(&m);
  free((char *)m.replies[0]);
}

/* Answers that are not a completion: not JSON, no choices, a redirect (not
 * followed: it would take the key elsewhere), one over the size cap; and
 * a Retry-After given as an HTTP-date. */
static void test_bad_answers(void) {
  struct {
    const char *reply;
    sc_status want;
    int http;
  } cases[] = {
      {"{not json", SC_ERR_FORMAT, 200},
      {"{\"choices\":[]}", SC_ERR_FORMAT, 200},
      {"{\"choices\":[{\"text\":5}]}", SC_ERR_FORMAT, 200},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mock m = {0};
    m.replies[0] = reply_of(cases[i].http, NULL, cases[i].reply);
    m.n_replies = 1;
    REQUIRE(m.replies[0] && mock_start(&m));
    sc_fim_result res;
    char *text = NULL;
    EXPECTF(mock_call(&m, NULL, 3, "x", 1, &res, &text) == cases[i].want, "case %zu", i);
    EXPECT(text == NULL && res.tries == 1 && res.err.msg[0]);
    mock_stop(&m);
    free((char *)m.replies[0]);
  }
  mock m = {0};
  m.replies[0] = reply_of(307, "Location: http://127.0.0.2:1/v1/fim/completions\r\n", "");
  m.n_replies = 1;
  REQUIRE(m.replies[0] && mock_start(&m));
  sc_fim_result res;
  char *text = NULL;
  EXPECT(mock_call(&m, "sk-redirect-key", 3, "x", 1, &res, &text) == SC_ERR_IO);
  EXPECT(res.http_status == 307 && res.tries == 1 && m.n_req == 1);
  mock_stop(&m);
  free((char *)m.replies[0]);

  mock big = {0};
  big.replies[0] = NULL;
  big.n_replies = 1;
  REQUIRE(mock_start(&big));
  EXPECT(mock_call(&big, NULL, 3, "x", 1, &res, &text) == SC_ERR_IO);
  EXPECTF(strstr(res.err.msg, "over") != NULL && res.tries == 1, "%s", res.err.msg);
  mock_stop(&big);

  /* 503 with Retry-After two seconds on (an HTTP-date has whole seconds:
   * the wait is over one second), then the answer. */
  char when[64], extra[96];
  time_t t = time(NULL) + 2;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(when, sizeof when, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  snprintf(extra, sizeof extra, "Retry-After: %s\r\n", when);
  mock r = {0};
  r.replies[0] = reply_of(503, extra, "{}");
  r.replies[1] = reply_of(200, NULL, "{\"choices\":[{\"text\":\"late\"}]}");
  r.n_replies = 2;
  REQUIRE(r.replies[0] && r.replies[1] && mock_start(&r));
  EXPECT(mock_call(&r, NULL, 3, "x", 1, &res, &text) == SC_OK);
  EXPECT(text && strcmp(text, "late") == 0 && res.tries == 2);
  EXPECTF(res.ms > 900 && res.ms < 5000, "%.0f ms", res.ms);
  free(text);
  mock_stop(&r);
  free((char *)r.replies[0]);
  free((char *)r.replies[1]);
}

static void *raise_later(void *arg) {
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  atomic_store((_Atomic int *)arg, 1);
  return NULL;
}

/* A cancel while waiting to retry (Retry-After: 5) ends the wait at once. */
static void test_cancel_in_backoff(void) {
  mock m = {0};
  m.replies[0] = reply_of(503, "Retry-After: 5\r\n", "{}");
  m.n_replies = 1;
  REQUIRE(m.replies[0] && mock_start(&m));
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", m.port);
  sc_fim_client_options o = {0};
  o.url = url;
  o.max_tries = 3;
  sc_fim_request req = {.prompt = "a", .prompt_len = 1, .suffix = "b", .suffix_len = 1,
                        .max_tokens = 4};
  _Atomic int cancel = 0;
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, raise_later, &cancel) == 0);
  char *text = NULL;
  size_t len = 0;
  sc_fim_result res;
  sc_error err = {0};
  double t0 = sc_now_ms();
  EXPECT(sc_fim_complete_sync(&o, &req, &cancel, &text, &len, &res, &err) == SC_ERR_CANCELLED);
  EXPECTF(sc_now_ms() - t0 < 2000, "took %.0f ms", sc_now_ms() - t0);
  EXPECT(text == NULL && res.tries == 1 && m.n_req == 1);
  pthread_join(th, NULL);
  mock_stop(&m);
  free((char *)m.replies[0]);
}

static void test_endpoints(void) {
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  REQUIRE(loop);
  struct {
    const char *url, *want;
  } cases[] = {
      {"http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/fim/completions"},
      {"http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1/fim/completions"},
      {"https://api.example.com/v1/fim/completions", "https://api.example.com/v1/fim/completions"},
      /* Any other path is a base, a prefix kept (a proxy's, DeepSeek's /beta). */
      {"http://h:1/custom/fim", "http://h:1/custom/fim/v1/fim/completions"},
      {"http://h:1/x/v1", "http://h:1/x/v1/fim/completions"},
      {"https://api.deepseek.com/beta", "https://api.deepseek.com/beta/completions"},
      {"https://h/x/beta/", "https://h/x/beta/completions"},
      {"https://api.example.com/v1", "https://api.example.com/v1/fim/completions"},
      {"http://h:1/v1/", "http://h:1/v1/fim/completions"},
      {"http://h:1/v1/completions", "http://h:1/v1/completions"},
      {"http://user:secret@h:1", "http://h:1/v1/fim/completions"},
      /* A query stays a query, after the path it belongs to. */
      {"http://h:1?x=1", "http://h:1/v1/fim/completions?x=1"},
      {"https://api.example.com/v1?k=2", "https://api.example.com/v1/fim/completions?k=2"},
      {"http://h:1/v1/completions?k=2", "http://h:1/v1/completions?k=2"},
      {"http://[::1]:8000", "http://[::1]:8000/v1/fim/completions"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_fim_client_options o = {0};
    o.url = cases[i].url;
    o.model = "m"; /* DeepSeek needs one */
    sc_fim_client *c = NULL;
    sc_error err = {0};
    EXPECTF(sc_fim_client_new(loop, &o, &c, &err) == SC_OK, "%s: %s", cases[i].url, err.msg);
    if (c) EXPECT_STREQ(sc_fim_client_endpoint(c), cases[i].want);
    sc_fim_client_free(c);
  }
  /* Bad options are refused, with a message. */
  const char *bad[] = {NULL, "", "ftp://h/x", "127.0.0.1:8000"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sc_fim_client_options o = {0};
    o.url = bad[i];
    sc_fim_client *c = NULL;
    sc_error err = {0};
    EXPECT(sc_fim_client_new(loop, &o, &c, &err) == SC_ERR_INVALID);
    EXPECT(c == NULL && err.msg[0]);
  }
  /* A key with a line break would inject headers; refused, not echoed. */
  sc_fim_client_options o = {0};
  o.url = "http://h:1";
  o.api_key = "abc\r\nX-Evil: 1";
  sc_fim_client *c = NULL;
  sc_error err = {0};
  EXPECT(sc_fim_client_new(loop, &o, &c, &err) == SC_ERR_INVALID);
  EXPECT(strstr(err.msg, "abc") == NULL);
  ev_loop_destroy(loop);
}

/* Each provider's endpoint under a base URL (any path prefix kept), the
 * provider detected from the URL, and the options a provider cannot do
 * without refused with a message naming the setting. */
static void test_providers(void) {
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  REQUIRE(loop);
  struct {
    const char *url;
    sc_fim_provider given;
    sc_fim_template tmpl;
    sc_fim_provider want;
    const char *endpoint;
  } cases[] = {
      {"http://h:8080", SC_FIM_PROVIDER_LLAMACPP, 0, SC_FIM_PROVIDER_LLAMACPP, "http://h:8080/infill"},
      {"http://h:8080/v1", SC_FIM_PROVIDER_LLAMACPP, 0, SC_FIM_PROVIDER_LLAMACPP, "http://h:8080/infill"},
      {"http://h/llama/", SC_FIM_PROVIDER_LLAMACPP, 0, SC_FIM_PROVIDER_LLAMACPP, "http://h/llama/infill"},
      {"http://h:8080/infill", 0, 0, SC_FIM_PROVIDER_LLAMACPP, "http://h:8080/infill"},
      {"http://h:11434", 0, 0, SC_FIM_PROVIDER_OLLAMA, "http://h:11434/api/generate"},
      {"http://h:11434/api", 0, 0, SC_FIM_PROVIDER_OLLAMA, "http://h:11434/api/generate"},
      {"http://h/x/api/generate", 0, 0, SC_FIM_PROVIDER_OLLAMA, "http://h/x/api/generate"},
      {"http://h:1/v1", SC_FIM_PROVIDER_OLLAMA, 0, SC_FIM_PROVIDER_OLLAMA, "http://h:1/api/generate"},
      /* Ollama's OpenAI layer has /v1/completions, not /v1/fim/completions. */
      {"http://h:11434/v1", 0, 0, SC_FIM_PROVIDER_OPENAI, "http://h:11434/v1/completions"},
      {"https://api.mistral.ai", 0, 0, SC_FIM_PROVIDER_MISTRAL, "https://api.mistral.ai/v1/fim/completions"},
      {"https://codestral.mistral.ai/v1", 0, 0, SC_FIM_PROVIDER_MISTRAL,
       "https://codestral.mistral.ai/v1/fim/completions"},
      {"http://h/gw/v1", SC_FIM_PROVIDER_MISTRAL, 0, SC_FIM_PROVIDER_MISTRAL, "http://h/gw/v1/fim/completions"},
      {"https://api.deepseek.com", 0, 0, SC_FIM_PROVIDER_OPENAI, "https://api.deepseek.com/beta/completions"},
      {"http://h:8000", 0, SC_FIM_TEMPLATE_QWEN, SC_FIM_PROVIDER_TEMPLATE, "http://h:8000/v1/completions"},
      {"http://h:8000/vllm/v1", SC_FIM_PROVIDER_TEMPLATE, SC_FIM_TEMPLATE_STARCODER,
       SC_FIM_PROVIDER_TEMPLATE, "http://h:8000/vllm/v1/completions"},
      {"http://h:30000/v1/completions", SC_FIM_PROVIDER_TEMPLATE, SC_FIM_TEMPLATE_DEEPSEEK,
       SC_FIM_PROVIDER_TEMPLATE, "http://h:30000/v1/completions"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_fim_client_options o = {0};
    o.url = cases[i].url;
    o.provider = cases[i].given;
    o.fim_template = cases[i].tmpl;
    o.model = "m";
    sc_fim_client *c = NULL;
    sc_error err = {0};
    EXPECTF(sc_fim_client_new(loop, &o, &c, &err) == SC_OK, "%s: %s", cases[i].url, err.msg);
    if (!c) continue;
    EXPECTF(sc_fim_client_provider(c) == cases[i].want, "%s: %s", cases[i].url,
            sc_fim_provider_name(sc_fim_client_provider(c)));
    EXPECT_STREQ(sc_fim_client_endpoint(c), cases[i].endpoint);
    sc_fim_client_free(c);
  }
  /* No model where the provider requires one; no template for
   * prompt-template: refused, naming the setting. */
  struct {
    const char *url;
    sc_fim_provider given;
    const char *says;
  } bad[] = {
      {"https://api.mistral.ai", 0, "\"model\""},
      {"http://h:1", SC_FIM_PROVIDER_OLLAMA, "--backend-model"},
      {"https://api.deepseek.com/beta", 0, "\"model\""},
      {"http://h:11434/v1", 0, "\"model\""},
      {"http://h:1", SC_FIM_PROVIDER_TEMPLATE, "\"fimTemplate\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sc_fim_client_options o = {0};
    o.url = bad[i].url;
    o.provider = bad[i].given;
    sc_fim_client *c = NULL;
    sc_error err = {0};
    EXPECTF(sc_fim_client_new(loop, &o, &c, &err) == SC_ERR_INVALID && !c, "%s", bad[i].url);
    EXPECTF(strstr(err.msg, bad[i].says) != NULL, "%s: %s", bad[i].url, err.msg);
  }
  /* Names round-trip; unknown ones are refused. */
  sc_fim_provider p;
  sc_fim_template t;
  EXPECT(sc_fim_provider_parse("llama.cpp", &p) && p == SC_FIM_PROVIDER_LLAMACPP);
  EXPECT(!sc_fim_provider_parse("llamacpp", &p) && !sc_fim_template_parse("none", &t));
  EXPECT(sc_fim_template_parse("codestral", &t) && strcmp(sc_fim_template_name(t), "codestral") == 0);
  ev_loop_destroy(loop);
}

static char *sse_reply(const char *events) {
  char *r = malloc(strlen(events) + 256);
  if (r)
    sprintf(r, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
               "Content-Length: %zu\r\n\r\n%s", strlen(events), events);
  return r;
}

/* One request with these options to a mock answering reply; the request
 * as the mock got it in *seen (the mock's buffer), the text in *text. */
static sc_status call_with(sc_fim_client_options o, const sc_fim_request *req, const char *reply,
                           sc_fim_result *res, char **text, char seen[4096]) {
  mock m = {0};
  m.replies[0] = reply;
  m.n_replies = 1;
  if (!mock_start(&m)) return SC_ERR_INTERNAL;
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", m.port, o.url ? o.url : "");
  o.url = url;
  o.api_key_env = "SCULPT_UNIT_NO_SUCH_KEY_VAR";
  o.timeout_ms = 10000;
  o.max_tries = 1;
  size_t len = 0;
  sc_error err = {0};
  *text = NULL;
  sc_status st = sc_fim_complete_sync(&o, req, NULL, text, &len, res, &err);
  mock_stop(&m);
  memcpy(seen, m.req[0], 4096);
  return st;
}

/* Streamed answers in each framing: OpenAI increments ending with [DONE],
 * Mistral's delta.content, llama.cpp's content and stop_type (no [DONE]),
 * Ollama's NDJSON; finish_reason "length" marks the text cut off; sculpt
 * serve's refining drafts (`step`) replace rather than append; an error
 * inside the stream, or a stream that stops before its last event, is an
 * error, not a short answer. */
static void test_streams(void) {
  sc_fim_request req = {.prompt = "a", .prompt_len = 1, .suffix = "b", .suffix_len = 1,
                        .max_tokens = 4};
  struct {
    const char *name, *path;
    sc_fim_provider prov;
    const char *body;
    const char *content_type; /* NULL: text/event-stream */
    sc_status want;
    const char *text;
    bool truncated;
  } cases[] = {
      {"openai", "", SC_FIM_PROVIDER_OPENAI,
       "data: {\"choices\":[{\"text\":\"x = \",\"finish_reason\":null}]}\n\n"
       "data: {\"choices\":[{\"text\":\"1\",\"finish_reason\":null}]}\n\n"
       "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n",
       NULL, SC_OK, "x = 1", true},
      {"crlf and comments", "", SC_FIM_PROVIDER_OPENAI,
       ": keep-alive\r\n\r\ndata: {\"choices\":[{\"text\":\"ok\"}]}\r\n\r\ndata: [DONE]\r\n\r\n",
       NULL, SC_OK, "ok", false},
      {"mistral", "", SC_FIM_PROVIDER_MISTRAL,
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
       "\"finish_reason\":null}]}\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ret\"},\"finish_reason\":null}]}\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"urn\"},\"finish_reason\":\"stop\"}]}\n\n"
       "data: [DONE]\n\n",
       NULL, SC_OK, "return", false},
      {"llama.cpp", "", SC_FIM_PROVIDER_LLAMACPP,
       "data: {\"content\":\"fo\",\"stop\":false}\n\ndata: {\"content\":\"o\",\"stop\":false}\n\n"
       "data: {\"content\":\"\",\"stop\":true,\"stop_type\":\"limit\"}\n\n",
       NULL, SC_OK, "foo", true},
      {"ollama", "", SC_FIM_PROVIDER_OLLAMA,
       "{\"model\":\"m\",\"response\":\"ab\",\"done\":false}\n"
       "{\"model\":\"m\",\"response\":\"c\",\"done\":false}\n"
       "{\"model\":\"m\",\"response\":\"\",\"done\":true,\"done_reason\":\"stop\"}\n",
       "application/x-ndjson", SC_OK, "abc", false},
      {"drafts", "", SC_FIM_PROVIDER_OPENAI,
       "data: {\"choices\":[{\"text\":\"abX\"}],\"step\":1}\n\n"
       "data: {\"choices\":[{\"text\":\"abc\"}],\"step\":2}\n\n"
       "data: {\"choices\":[{\"text\":\"abcd\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
       NULL, SC_OK, "abcd", false},
      {"error event", "", SC_FIM_PROVIDER_OPENAI,
       "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
       "data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n",
       NULL, SC_ERR_IO, NULL, false},
      {"broken off", "", SC_FIM_PROVIDER_OPENAI,
       "data: {\"choices\":[{\"text\":\"a\"}]}\n\n", NULL, SC_ERR_IO, NULL, false},
      {"ollama error line", "", SC_FIM_PROVIDER_OLLAMA,
       "{\"response\":\"a\",\"done\":false}\n{\"error\":\"model crashed\"}\n",
       "application/x-ndjson", SC_ERR_IO, NULL, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *reply = NULL;
    if (cases[i].content_type) {
      reply = malloc(strlen(cases[i].body) + 256);
      if (reply)
        sprintf(reply, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nConnection: close\r\n"
                       "Content-Length: %zu\r\n\r\n%s",
                cases[i].content_type, strlen(cases[i].body), cases[i].body);
    } else {
      reply = sse_reply(cases[i].body);
    }
    REQUIRE(reply);
    sc_fim_client_options o = {0};
    o.url = cases[i].path;
    o.provider = cases[i].prov;
    o.model = "m";
    sc_fim_result res;
    char *text = NULL, seen[4096];
    sc_status st = call_with(o, &req, reply, &res, &text, seen);
    EXPECTF(st == cases[i].want, "%s: %s", cases[i].name, res.err.msg);
    if (cases[i].text) {
      EXPECTF(text && strcmp(text, cases[i].text) == 0, "%s: %s", cases[i].name, text ? text : "");
      EXPECTF(res.streamed && res.truncated == cases[i].truncated, "%s", cases[i].name);
    } else {
      EXPECTF(text == NULL && res.err.msg[0], "%s", cases[i].name);
    }
    /* A streamed request asks for a stream. */
    EXPECTF(strstr(seen, "\"stream\":true") != NULL, "%s: %s", cases[i].name, seen);
    free(text);
    free(reply);
  }
  /* stream off: the whole answer, finish_reason read from it. */
  char *reply = reply_of(200, NULL, "{\"choices\":[{\"text\":\"z\",\"finish_reason\":\"length\"}]}");
  REQUIRE(reply);
  sc_fim_client_options o = {0};
  o.no_stream = true;
  sc_fim_result res;
  char *text = NULL, seen[4096];
  EXPECT(call_with(o, &req, reply, &res, &text, seen) == SC_OK);
  EXPECT(text && strcmp(text, "z") == 0 && !res.streamed && res.truncated);
  EXPECTF(strstr(seen, "\"stream\":false") != NULL, "%s", seen);
  free(text);
  free(reply);
}

/* What each provider is sent: the fields its API names, the snippets apart
 * for llama.cpp (input_extra) and in front of the prompt elsewhere, and for
 * prompt-template the model's FIM tokens with no suffix field. */
static void test_request_shapes(void) {
  static const sc_fim_chunk extra[] = {{"lib/a.py", 8, "# lib/a.py:1\ndef a(): pass\n", 27}};
  sc_fim_request req = {.prompt = "x = ", .prompt_len = 4, .suffix = "\nprint(x)", .suffix_len = 9,
                        .max_tokens = 7, .extra = extra, .n_extra = 1};
  struct {
    sc_fim_provider prov;
    sc_fim_template tmpl;
    const char *reply_body;
    const char *has[4], *lacks[2];
  } cases[] = {
      {SC_FIM_PROVIDER_OPENAI, 0, "{\"choices\":[{\"text\":\"1\"}]}",
       {"POST /v1/fim/completions ", "\"prompt\":\"# lib/a.py:1\\ndef a(): pass\\nx = \"",
        "\"suffix\":\"\\nprint(x)\"", "\"max_tokens\":7"},
       {"input_extra", NULL}},
      {SC_FIM_PROVIDER_LLAMACPP, 0, "{\"content\":\"1\",\"stop\":true}",
       {"POST /infill ", "\"input_prefix\":\"x = \"",
        "\"input_extra\":[{\"text\":\"# lib/a.py:1\\ndef a(): pass\\n\",\"filename\":\"lib/a.py\"}]",
        "\"n_predict\":7"},
       {"\"prompt\"", "max_tokens"}},
      {SC_FIM_PROVIDER_OLLAMA, 0, "{\"response\":\"1\",\"done\":true}",
       {"POST /api/generate ", "\"suffix\":\"\\nprint(x)\"", "\"options\":{\"num_predict\":7",
        "\"model\":\"m\""},
       {"max_tokens", NULL}},
      {SC_FIM_PROVIDER_TEMPLATE, SC_FIM_TEMPLATE_QWEN, "{\"choices\":[{\"text\":\"1\"}]}",
       {"POST /v1/completions ",
        "\"prompt\":\"<|fim_prefix|># lib/a.py:1\\ndef a(): pass\\nx = <|fim_suffix|>\\nprint(x)<|fim_middle|>\"",
        NULL, NULL},
       {"\"suffix\"", NULL}},
      {SC_FIM_PROVIDER_TEMPLATE, SC_FIM_TEMPLATE_CODESTRAL, "{\"choices\":[{\"text\":\"1\"}]}",
       {"\"prompt\":\"[SUFFIX]\\nprint(x)[PREFIX]# lib/a.py:1\\ndef a(): pass\\nx = \"", NULL, NULL, NULL},
       {"\"suffix\"", NULL}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *reply = reply_of(200, NULL, cases[i].reply_body);
    REQUIRE(reply);
    sc_fim_client_options o = {0};
    o.provider = cases[i].prov;
    o.fim_template = cases[i].tmpl;
    o.model = "m";
    o.no_stream = true;
    sc_fim_result res;
    char *text = NULL, seen[4096];
    EXPECTF(call_with(o, &req, reply, &res, &text, seen) == SC_OK, "%s: %s",
            sc_fim_provider_name(cases[i].prov), res.err.msg);
    EXPECT(text && strcmp(text, "1") == 0);
    for (int k = 0; k < 4 && cases[i].has[k]; k++)
      EXPECTF(strstr(seen, cases[i].has[k]) != NULL, "%s lacks %s:\n%s",
              sc_fim_provider_name(cases[i].prov), cases[i].has[k], seen);
    for (int k = 0; k < 2 && cases[i].lacks[k]; k++)
      EXPECTF(strstr(seen, cases[i].lacks[k]) == NULL, "%s has %s:\n%s",
              sc_fim_provider_name(cases[i].prov), cases[i].lacks[k], seen);
    free(text);
    free(reply);
  }
}

/* Refusals say what to check: vLLM's suffix refusal points to
 * prompt-template, a 404 to the URL and model, Mistral's 422 detail is read;
 * 501 (llama.cpp without FIM tokens) is not retried. */
static void test_refusal_hints(void) {
  sc_fim_request req = {.prompt = "a", .prompt_len = 1, .suffix = "b", .suffix_len = 1};
  struct {
    int status;
    const char *body;
    sc_fim_provider prov;
    const char *says;
  } cases[] = {
      {400, "{\"error\":{\"message\":\"suffix is not currently supported\",\"type\":\"BadRequestError\",\"code\":400}}",
       SC_FIM_PROVIDER_OPENAI, "prompt-template"},
      {404, "{\"error\":{\"message\":\"The model `m` does not exist.\"}}", SC_FIM_PROVIDER_OPENAI,
       "check the URL's path"},
      {422, "{\"detail\":[{\"type\":\"missing\",\"loc\":[\"body\",\"model\"],\"msg\":\"Field required\"}]}",
       SC_FIM_PROVIDER_MISTRAL, "model: Field required"},
      {501, "{\"error\":{\"code\":501,\"message\":\"Infill is not supported by this model: prefix token is missing. \",\"type\":\"not_supported_error\"}}",
       SC_FIM_PROVIDER_LLAMACPP, "no FIM tokens"},
      {400, "{\"error\":\"m does not support insert\"}", SC_FIM_PROVIDER_OLLAMA, "insert capability"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *reply = reply_of(cases[i].status, NULL, cases[i].body);
    REQUIRE(reply);
    sc_fim_client_options o = {0};
    o.provider = cases[i].prov;
    o.model = "m";
    sc_fim_result res;
    char *text = NULL, seen[4096];
    EXPECT(call_with(o, &req, reply, &res, &text, seen) == SC_ERR_IO);
    EXPECTF(strstr(res.err.msg, cases[i].says) != NULL && res.tries == 1, "%d: %s",
            cases[i].status, res.err.msg);
    free(reply);
  }
}

static void test_unreachable(void) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  sc_fim_client_options o = {0};
  o.url = url;
  o.api_key = "sk-unit-secret-1234";
  o.max_tries = 3;
  sc_fim_request req = {.prompt = "int x = ", .prompt_len = 8, .suffix = ";\n", .suffix_len = 2,
                        .max_tokens = 16};
  char *text = NULL;
  size_t len = 0;
  sc_fim_result res;
  sc_error err = {0};
  EXPECT(sc_fim_complete_sync(&o, &req, NULL, &text, &len, &res, &err) == SC_ERR_IO);
  EXPECT(text == NULL);
  EXPECT(res.unreachable);
  EXPECT(res.tries == 1); /* a refused connection is not retried */
  EXPECT(res.http_status == 0);
  EXPECTF(strstr(err.msg, "unreachable") != NULL, "%s", err.msg);
  EXPECT(strstr(err.msg, "sk-unit-secret") == NULL);
}

static void test_cancel(void) {
  int port = 0;
  int fd = silent_listener(&port);
  REQUIRE(fd >= 0);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  sc_fim_client_options o = {0};
  o.url = url;
  o.timeout_ms = 20000;
  sc_fim_request req = {.prompt = "a", .prompt_len = 1, .suffix = "b", .suffix_len = 1,
                        .max_tokens = 4};
  /* Raised before the start: the first poll (20 ms) stops the request. */
  _Atomic int cancel = 1;
  char *text = NULL;
  size_t len = 0;
  sc_error err = {0};
  double t0 = sc_now_ms();
  EXPECT(sc_fim_complete_sync(&o, &req, &cancel, &text, &len, NULL, &err) == SC_ERR_CANCELLED);
  EXPECTF(sc_now_ms() - t0 < 5000, "took %.0f ms", sc_now_ms() - t0);
  EXPECT(text == NULL);
  close(fd);
}

int main(void) {
  /* Requests to 127.0.0.1 must not go through a proxy from the environment. */
  const char *proxies[] = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                           "ALL_PROXY", "all_proxy"};
  for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++) unsetenv(proxies[i]);
  RUN(test_endpoints);
  RUN(test_providers);
  RUN(test_streams);
  RUN(test_request_shapes);
  RUN(test_refusal_hints);
  RUN(test_unreachable);
  RUN(test_cancel);
  RUN(test_key_scrubbed);
  RUN(test_nul_in_prompt);
  RUN(test_bad_answers);
  RUN(test_cancel_in_backoff);
  TEST_MAIN_END();
}

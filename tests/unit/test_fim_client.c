/* test_fim_client.c — the remote FIM client: where requests go (a base URL
 * gets /v1/fim/completions, a URL with a path is used as given,
 * user:password@ never shows), bad options, a closed port (an unreachable
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
  sc_fim_request req = {prompt, prompt_len, "}", 1, 8, 0.0, NULL, 0};
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
  sc_fim_request req = {"a", 1, "b", 1, 4, 0.0, NULL, 0};
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
      {"http://h:1/custom/fim", "http://h:1/custom/fim"},
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
    sc_fim_client *c = NULL;
    sc_error err = {0};
    EXPECT(sc_fim_client_new(loop, &o, &c, &err) == SC_OK);
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

static void test_unreachable(void) {
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
  sc_fim_client_options o = {0};
  o.url = url;
  o.api_key = "sk-unit-secret-1234";
  o.max_tries = 3;
  sc_fim_request req = {"int x = ", 8, ";\n", 2, 16, 0.0, NULL, 0};
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
  sc_fim_request req = {"a", 1, "b", 1, 4, 0.0, NULL, 0};
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
  RUN(test_unreachable);
  RUN(test_cancel);
  RUN(test_key_scrubbed);
  RUN(test_nul_in_prompt);
  RUN(test_bad_answers);
  RUN(test_cancel_in_backoff);
  TEST_MAIN_END();
}

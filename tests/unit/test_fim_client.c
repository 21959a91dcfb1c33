/* test_fim_client.c — the remote FIM client without a server: where requests
 * go (a base URL gets /v1/fim/completions, a URL with a path is used as
 * given, user:password@ never shows), bad options, a closed port (an
 * unreachable backend, no retry), and cancellation of a request that a
 * silent server never answers. The HTTP exchanges themselves are tested
 * against a mock server in tests/remote/. */
#define _POSIX_C_SOURCE 200809L
#include "net.h"
#include "sc_test.h"

#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
  TEST_MAIN_END();
}

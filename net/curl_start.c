/* curl_start.c — libcurl's process-wide start, shared by the remote FIM
 * client and the hub puller (net_impl.h). */
#include "net_impl.h"

#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CURLcode g_init = CURLE_OK;
static void init_once(void) { g_init = curl_global_init(CURL_GLOBAL_DEFAULT); }

sc_status sc_net__curl_start(sc_error *err) {
  pthread_once(&g_once, init_once);
  SC_CHECK(g_init == CURLE_OK, err, SC_ERR_INTERNAL, "libcurl failed to start: %s",
           curl_easy_strerror(g_init));
  return SC_OK;
}

/* net_impl.h — what several parts of net/ share (private to net/). */
#ifndef SC_NET_IMPL_H
#define SC_NET_IMPL_H

#include "net.h"

/* Starts libcurl once per process (curl_global_init is not thread-safe to
 * call twice at once); every later call returns the first one's result.
 * Called by each client before its first handle (curl_start.c). */
sc_status sc_net__curl_start(sc_error *err);

#endif

/*
 * net.h — sculpt over HTTP.
 *
 * The server side serves the diffusion engine (`sculpt serve`): HTTP/1.1 on
 * a libev loop, OpenAI-compatible FIM completions with continuous batching.
 * The client side is the remote backend: it sends an assembled prompt and
 * suffix to an OpenAI-compatible FIM endpoint (sculpt serve, Mercury Coder,
 * SGLang, vLLM) through libcurl's multi interface on a libev loop, so the
 * loop never blocks.
 *
 * net/ depends on model/ (the engine, for the server) and common/; it knows
 * no LSP and no syntax.
 */
#ifndef SCULPT_NET_H
#define SCULPT_NET_H

#include "model.h"
#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== server: sculpt serve ================================================ */

/* ==== client: the remote FIM backend ====================================== */

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_NET_H */

/*
 * model.h — the model module's one public header: devices, checkpoints,
 * the tokenizer, the forward pass and (later) the diffusion engine.
 *
 * model/ knows no protocol and no syntax. Handles are opaque; every function
 * that can fail returns an sc_status and fills an sc_error*. Ownership is
 * stated per call: "owned by the caller" means free it with the matching
 * _free; "borrowed" means it lives as long as the object it came from.
 */
#ifndef SCULPT_MODEL_H
#define SCULPT_MODEL_H

#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================= devices ========================================= */

typedef enum sc_device_kind {
  SC_DEVICE_AUTO = 0, /* CUDA when a device answers, else the CPU */
  SC_DEVICE_CPU,
  SC_DEVICE_CUDA,
} sc_device_kind;

/* "auto", "cpu", "cuda" -> kind. False on anything else. */
bool sc_device_kind_parse(const char *s, sc_device_kind *out);
const char *sc_device_kind_name(sc_device_kind kind); /* static string */

typedef struct sc_device_choice {
  sc_device_kind kind;  /* SC_DEVICE_CPU or SC_DEVICE_CUDA: what will run */
  char description[192]; /* e.g. "cuda:0 NVIDIA H200 (139 GiB)" or "cpu (4 threads)" */
  char fallback_reason[512]; /* why CUDA was not used; "" when it was, or never asked */
} sc_device_choice;

/* Picks the device for a request. AUTO and CUDA fall back to the CPU when
 * the binary has no CUDA backend or no device answers, and log exactly one
 * info line saying so; CPU never probes. Never fails. */
void sc_device_select(sc_device_kind requested, sc_device_choice *out);

/* ======================= tokenizer ======================================= */
/* (section owned by the tokenizer work: model/tokenizer*.c) */

/* ======================= checkpoints and the forward pass ================ */
/* (section owned by the checkpoint work: model/checkpoint*.c, model/cpu*.c) */

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_MODEL_H */

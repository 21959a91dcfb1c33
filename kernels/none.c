/* none.c — the kernels/ interface in a CPU-only build: every entry point
 * exists and answers SC_ERR_UNSUPPORTED "built without CUDA". */
#include "kernels.h"

#include <string.h>

#define NO_CUDA(err) sc_error_set((err), SC_ERR_UNSUPPORTED, "built without CUDA")

bool sc_kernels_compiled(void) { return false; }

sc_status sc_kernels_probe(sc_kernels_device_info *out, sc_error *err) {
  if (out) memset(out, 0, sizeof *out);
  return NO_CUDA(err);
}

sc_status sc_kernels_device_bandwidth(int *sm_count, double *bytes_per_s, sc_error *err) {
  if (sm_count) *sm_count = 0;
  if (bytes_per_s) *bytes_per_s = 0;
  return NO_CUDA(err);
}

sc_status sc_kernels_device_memory(uint64_t *used, uint64_t *total, sc_error *err) {
  if (used) *used = 0;
  if (total) *total = 0;
  return NO_CUDA(err);
}

sc_status sc_kernels_model_new(const sc_kernels_model_desc *desc, sc_kernels_model **out,
                               sc_error *err) {
  (void)desc;
  if (out) *out = NULL;
  return NO_CUDA(err);
}

void sc_kernels_model_free(sc_kernels_model *m) { (void)m; }
uint64_t sc_kernels_model_bytes(const sc_kernels_model *m) { (void)m; return 0; }
uint64_t sc_kernels_model_step_bytes(const sc_kernels_model *m) { (void)m; return 0; }
bool sc_kernels_model_fp8(const sc_kernels_model *m) { (void)m; return false; }

uint64_t sc_kernels_ctx_plan_bytes(const sc_kernels_dims *dims, int max_seq) {
  (void)dims, (void)max_seq;
  return 0;
}

sc_status sc_kernels_ctx_new(sc_kernels_model *m, int max_seq, sc_kernels_ctx **out,
                             sc_error *err) {
  (void)m, (void)max_seq;
  if (out) *out = NULL;
  return NO_CUDA(err);
}

void sc_kernels_ctx_free(sc_kernels_ctx *c) { (void)c; }
uint64_t sc_kernels_ctx_bytes(const sc_kernels_ctx *c) { (void)c; return 0; }

sc_status sc_kernels_forward(sc_kernels_ctx *c, const sc_kernels_pass *p, float *logits_host,
                             sc_error *err) {
  (void)c, (void)p, (void)logits_host;
  return NO_CUDA(err);
}

sc_status sc_kernels_forward_stats(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                   const sc_kernels_sample *s, sc_kernels_row_stats *out,
                                   sc_error *err) {
  (void)c, (void)p, (void)s, (void)out;
  return NO_CUDA(err);
}

void sc_kernels_ctx_counters(const sc_kernels_ctx *c, sc_kernels_counters *out) {
  (void)c;
  memset(out, 0, sizeof *out);
}

sc_status sc_kernels_ctx_set_options(sc_kernels_ctx *c, const sc_kernels_options *o,
                                     sc_error *err) {
  (void)c, (void)o;
  return NO_CUDA(err);
}

void sc_kernels_ctx_get_options(const sc_kernels_ctx *c, sc_kernels_options *out) {
  (void)c;
  memset(out, 0, sizeof *out);
}

sc_status sc_kernels_profile_step(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                  const sc_kernels_sample *s, sc_kernels_row_stats *stats,
                                  bool in_graph, sc_kernels_profile *out, sc_error *err) {
  (void)c, (void)p, (void)s, (void)stats, (void)in_graph;
  if (out) memset(out, 0, sizeof *out);
  return NO_CUDA(err);
}

/* backend.c — forward contexts: argument checks and dispatch through the
 * backend vtable (sc_backend_ops in model_impl.h). */
#define _POSIX_C_SOURCE 200809L
#include "model_impl.h"

#include <stdlib.h>
#include <string.h>

struct sc_forward_ctx {
  sc_model *model;
  const sc_backend_ops *ops;
  void *state;
  int max_seq;
  uint64_t bytes;
  int cached_n; /* length of the last run whose K/V the context holds; 0 = none */
  double *pick_z; /* [vocab] the host picker's scratch, made on first use (owned) */
  uint64_t passes; /* forward passes run (sc_forward_ctx_counters) */
};

const sc_backend_ops *sc_backend_for(sc_device_kind kind) {
  /* model/cuda.c; declared here so that backend.c needs no kernels header. */
  extern const sc_backend_ops *sc_cuda_backend_get(sc_error * err);
  /* Only an explicit CUDA choice (what sc_device_select() resolved) leaves
   * the CPU: AUTO here means no selection was made, and the CPU is the
   * exact reference. sc_device_select() has already logged its own line
   * when no device answered, so this logs only for callers that skipped it.
   * Device OOM and unsupported shapes fall back later, per context
   * (cuda.c). */
  if (kind != SC_DEVICE_CUDA) return &sc_cpu_backend;
  sc_error err = {0};
  const sc_backend_ops *ops = sc_cuda_backend_get(&err);
  if (ops) return ops;
  SC_LOG_INFO("model: CUDA unavailable (%s); falling back to the CPU", err.msg);
  return &sc_cpu_backend;
}

sc_status sc_forward_ctx_new(sc_model *model, int max_seq, sc_forward_ctx **out,
                             sc_error *err) {
  *out = NULL;
  SC_CHECK(model, err, SC_ERR_INVALID, "no model");
  if (max_seq == 0) max_seq = model->info.max_seq;
  SC_CHECK(max_seq > 0 && max_seq <= (1 << 20), err, SC_ERR_INVALID,
           "max_seq %d is out of range", max_seq);
  sc_forward_ctx *c = calloc(1, sizeof *c);
  SC_CHECK(c, err, SC_ERR_NOMEM, "out of memory");
  c->model = model;
  c->ops = model->backend;
  c->max_seq = max_seq;
  c->bytes = c->ops->ctx_bytes(model, max_seq);
  sc_status st = c->ops->ctx_init(model, max_seq, &c->state, err);
  if (st != SC_OK) {
    free(c);
    return st;
  }
  *out = c;
  return SC_OK;
}

void sc_forward_ctx_free(sc_forward_ctx *c) {
  if (!c) return;
  c->ops->ctx_free(c->state);
  free(c->pick_z);
  free(c);
}

uint64_t sc_forward_ctx_bytes(const sc_forward_ctx *c) { return c ? c->bytes : 0; }

/* Everything about a pass but its output buffer. */
static sc_status check_pass(sc_forward_ctx *c, const int32_t *ids, int n, int w0, int w1,
                            const int32_t *rows, int n_rows, sc_error *err) {
  SC_CHECK(c && ids, err, SC_ERR_INVALID, "no context or no ids");
  SC_CHECK(n >= 1 && n <= c->max_seq, err, SC_ERR_INVALID,
           "%d tokens: the context holds 1 to %d", n, c->max_seq);
  SC_CHECK(0 <= w0 && w0 < w1 && w1 <= n, err, SC_ERR_INVALID,
           "window [%d, %d) is not inside 0..%d", w0, w1, n);
  const int vocab = c->model->info.vocab;
  for (int i = w0; i < w1; i++)
    SC_CHECK(ids[i] >= 0 && ids[i] < vocab, err, SC_ERR_INVALID,
             "token id %d at position %d is outside the vocabulary (0..%d)", ids[i], i,
             vocab - 1);
  if (!rows) {
    SC_CHECK(n_rows == w1 - w0, err, SC_ERR_INVALID, "rows is NULL but n_rows %d != %d",
             n_rows, w1 - w0);
  } else {
    SC_CHECK(n_rows >= 0, err, SC_ERR_INVALID, "n_rows %d is negative", n_rows);
    for (int i = 0; i < n_rows; i++)
      SC_CHECK(rows[i] >= w0 && rows[i] < w1, err, SC_ERR_INVALID,
               "row %d (entry %d) is outside %d..%d", rows[i], i, w0, w1 - 1);
  }
  return SC_OK;
}

static sc_status check_run(sc_forward_ctx *c, const int32_t *ids, int n, int w0, int w1,
                           const int32_t *rows, int n_rows, float *logits, sc_error *err) {
  SC_TRY(check_pass(c, ids, n, w0, w1, rows, n_rows, err));
  SC_CHECK(n_rows == 0 || logits, err, SC_ERR_INVALID, "no logits buffer");
  return SC_OK;
}

sc_status sc_forward_ctx_run(sc_forward_ctx *c, const int32_t *ids, int n,
                             const int32_t *rows, int n_rows, float *logits, sc_error *err) {
  SC_TRY(check_run(c, ids, n, 0, n, rows, n_rows, logits, err));
  c->cached_n = 0;
  c->passes++;
  SC_TRY(c->ops->forward(c->state, ids, n, 0, n, rows, n_rows, logits, err));
  c->cached_n = n;
  return SC_OK;
}

sc_status sc_forward_ctx_run_window(sc_forward_ctx *c, const int32_t *ids, int n, int w0,
                                    int w1, const int32_t *rows, int n_rows, float *logits,
                                    sc_error *err) {
  SC_TRY(check_run(c, ids, n, w0, w1, rows, n_rows, logits, err));
  SC_CHECK(c->cached_n == n, err, SC_ERR_INVALID,
           "a window run needs the K/V of a previous %d-token run (the context holds %d)", n,
           c->cached_n);
  c->passes++;
  return c->ops->forward(c->state, ids, n, w0, w1, rows, n_rows, logits, err);
}

sc_status sc_forward_ctx_shift(sc_forward_ctx *c, int n_new, int src0, int src1, int dst0,
                               sc_error *err) {
  SC_CHECK(c, err, SC_ERR_INVALID, "no context");
  SC_CHECK(c->cached_n > 0, err, SC_ERR_INVALID, "a shift needs the K/V of a previous run");
  SC_CHECK(0 <= src0 && src0 <= src1 && src1 <= c->cached_n && dst0 >= 0 &&
               n_new >= 1 && n_new <= c->max_seq && dst0 + (src1 - src0) <= n_new,
           err, SC_ERR_INVALID, "shift [%d, %d) -> %d does not fit %d cached, %d new positions",
           src0, src1, dst0, c->cached_n, n_new);
  SC_CHECK(c->ops->shift, err, SC_ERR_UNSUPPORTED, "the %s backend cannot move cached K/V",
           c->ops->name);
  if (src1 > src0 && src0 != dst0) {
    c->cached_n = 0; /* a failed move leaves no usable cache */
    SC_TRY(c->ops->shift(c->state, src0, src1, dst0, err));
  }
  c->cached_n = n_new;
  return SC_OK;
}

sc_status sc_forward_ctx_run_packed(sc_forward_ctx *c, const int32_t *ids,
                                    const int32_t *offsets, int n_seqs, const int32_t *rows,
                                    int n_rows, float *logits, sc_error *err) {
  SC_CHECK(c && offsets && n_seqs >= 1, err, SC_ERR_INVALID, "no context or no sequences");
  SC_CHECK(offsets[0] == 0, err, SC_ERR_INVALID, "offsets[0] must be 0");
  for (int s = 0; s < n_seqs; s++)
    SC_CHECK(offsets[s + 1] > offsets[s], err, SC_ERR_INVALID, "sequence %d is empty", s);
  int n = offsets[n_seqs];
  SC_TRY(check_run(c, ids, n, 0, n, rows, n_rows, logits, err));
  c->cached_n = 0; /* packed K/V are no cache for a window run */
  c->passes++;
  return c->ops->forward_packed(c->state, ids, offsets, n_seqs, rows, n_rows, logits, err);
}

/* A pass whose picked rows saw a NaN or infinite logit is an error naming
 * the checkpoint: completing from it would give blank or garbage text
 * with every sign of success. */
static sc_status check_finite(const sc_forward_ctx *c, const sc_row_pick *out, int n_rows,
                              sc_error *err) {
  for (int k = 0; k < n_rows; k++)
    if (out[k].nonfinite) return sc_model_nonfinite_error(c->model, err);
  return SC_OK;
}

void sc_forward_ctx_counters(const sc_forward_ctx *c, sc_forward_counters *out) {
  memset(out, 0, sizeof *out);
  if (!c) return;
  if (c->ops->counters) c->ops->counters(c->state, out);
  out->passes = c->passes;
}

bool sc_forward_ctx_picks_on_device(const sc_forward_ctx *c) {
  return c && c->ops->pick && c->ops->picks_on_device && c->ops->picks_on_device(c->state);
}

sc_status sc_forward_ctx_pick(sc_forward_ctx *c, const int32_t *ids, int n, int w0, int w1,
                              const int32_t *offsets, int n_seqs, const int32_t *rows,
                              int n_rows, const sc_pick_params *pick, float *logits,
                              bool keep_logits, sc_row_pick *out, sc_error *err) {
  SC_CHECK(c && pick && (n_rows == 0 || (out && pick->rows)), err, SC_ERR_INVALID,
           "no context, pick parameters or output");
  if (offsets) {
    SC_CHECK(n_seqs >= 1 && offsets[0] == 0 && w0 == 0 && w1 == n && offsets[n_seqs] == n, err,
             SC_ERR_INVALID, "packed sequences must cover [0, n) from offsets[0] = 0");
    for (int s = 0; s < n_seqs; s++)
      SC_CHECK(offsets[s + 1] > offsets[s], err, SC_ERR_INVALID, "sequence %d is empty", s);
  }
  SC_TRY(check_pass(c, ids, n, w0, w1, rows, n_rows, err));
  const bool window = !offsets && (w0 > 0 || w1 < n);
  if (window)
    SC_CHECK(c->cached_n == n, err, SC_ERR_INVALID,
             "a window run needs the K/V of a previous %d-token run (the context holds %d)", n,
             c->cached_n);
  if (sc_forward_ctx_picks_on_device(c)) {
    if (!window) c->cached_n = 0;
    SC_CHECK(!keep_logits || logits || n_rows == 0, err, SC_ERR_INVALID, "no logits buffer");
    c->passes++;
    SC_TRY(c->ops->pick(c->state, ids, n, w0, w1, offsets, n_seqs, rows, n_rows, pick,
                        keep_logits ? logits : NULL, out, err));
    if (!window) c->cached_n = offsets ? 0 : n;
    return check_finite(c, out, n_rows, err);
  }
  /* The host picks: the logits of the rows, then model/pick.c. */
  SC_CHECK(logits || n_rows == 0, err, SC_ERR_INVALID, "no logits buffer for the host's picking");
  if (offsets) {
    SC_TRY(sc_forward_ctx_run_packed(c, ids, offsets, n_seqs, rows, n_rows, logits, err));
  } else if (window) {
    SC_TRY(sc_forward_ctx_run_window(c, ids, n, w0, w1, rows, n_rows, logits, err));
  } else {
    SC_TRY(sc_forward_ctx_run(c, ids, n, rows, n_rows, logits, err));
  }
  if (n_rows == 0) return SC_OK;
  const int V = c->model->info.vocab;
  if (!c->pick_z) { /* once per context: the host picker's row scratch */
    c->pick_z = malloc((size_t)V * sizeof *c->pick_z);
    SC_CHECK(c->pick_z, err, SC_ERR_NOMEM, "out of memory");
  }
  sc_pick_rows(logits, n_rows, V, pick, c->pick_z, out);
  return check_finite(c, out, n_rows, err);
}

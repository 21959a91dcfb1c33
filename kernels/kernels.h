/*
 * kernels.h — the CUDA backend's public face.
 *
 * kernels/ is compiled only when the CUDA toolkit and cuBLAS are found; a
 * CPU-only build links kernels/none.c instead, whose functions say so. The
 * model/ module is the only caller: it probes here and falls back to its CPU
 * backend when no usable device answers.
 */
#ifndef SCULPT_KERNELS_H
#define SCULPT_KERNELS_H

#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_kernels_device_info {
  int device_count;     /* CUDA devices visible to this process */
  char name[256];       /* device 0's name, "" when none */
  size_t total_memory;  /* bytes on device 0 */
  int cc_major, cc_minor;
  int driver_version;   /* e.g. 13000; 0 when no driver answered */
  int runtime_version;  /* the CUDA runtime we were built against */
} sc_kernels_device_info;

/* True when this binary was built with the CUDA backend. */
bool sc_kernels_compiled(void);

/* Asks the driver for devices. SC_OK with device_count >= 1 means device 0 is
 * usable; otherwise returns SC_ERR_DEVICE (or SC_ERR_UNSUPPORTED in a
 * CPU-only build) with a one-line reason in err. Never aborts. */
sc_status sc_kernels_probe(sc_kernels_device_info *out, sc_error *err);

/* Device 0's memory bandwidth and size of the chip, for rooflines: SMs
 * and the peak HBM bandwidth in bytes/s (2 x memory clock x bus width).
 * SC_ERR_DEVICE / SC_ERR_UNSUPPORTED as sc_kernels_probe. */
sc_status sc_kernels_device_bandwidth(int *sm_count, double *bytes_per_s, sc_error *err);

/* Device memory now in use by this process and everything else (total -
 * free) and the device's total, in bytes. */
sc_status sc_kernels_device_memory(uint64_t *used, uint64_t *total, sc_error *err);

/* ======================= the device model ================================
 * A transformer of the Qwen2/Qwen3/LLaDA shape (model/cpu.c is the
 * reference for the math) held on device 0: weights uploaded once in bf16
 * (f16 and f32 converted on upload), then forward contexts, each with ONE
 * device arena planned up front for max_seq positions. Activations are bf16
 * with fp32 accumulation; the residual stream, norms, softmax and sampling
 * statistics are fp32. kernels/ knows nothing of checkpoints: the caller
 * describes every tensor with host pointers. */

typedef enum sc_kernels_dtype {
  SC_KERNELS_F32 = 0,
  SC_KERNELS_F16,
  SC_KERNELS_BF16,
} sc_kernels_dtype;

typedef struct sc_kernels_dims {
  int n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab;
} sc_kernels_dims;

/* A weight [rows][cols], row-major (PyTorch Linear: out x in). data is a
 * host pointer (may be unaligned, e.g. into an mmapped file), borrowed only
 * for the duration of sc_kernels_model_new. */
typedef struct sc_kernels_matrix {
  const void *data;
  sc_kernels_dtype dtype;
  int64_t rows, cols;
} sc_kernels_matrix;

typedef struct sc_kernels_layer_desc {
  sc_kernels_matrix wq, wk, wv, wo, wgate, wup, wdown;
  const float *bq, *bk, *bv;         /* [nh*hd], [nkv*hd], [nkv*hd], or NULL */
  const float *q_norm, *k_norm;      /* [head_dim] (Qwen3), or NULL */
  const float *attn_norm, *mlp_norm; /* [hidden] */
} sc_kernels_layer_desc;

typedef struct sc_kernels_model_desc {
  sc_kernels_dims dims;
  float rope_theta, rms_eps;
  const sc_kernels_layer_desc *layers; /* [n_layers]; unused when synthetic */
  sc_kernels_matrix embed, lm_head;    /* lm_head.data == embed.data: tied, one copy */
  const float *final_norm;             /* [hidden] */
  /* Benchmarks: no host weights; random bf16 weights at these dims are
   * generated on the device from seed (norms near 1, small biases). */
  bool synthetic;
  bool synthetic_bias, synthetic_qk_norm, synthetic_tied;
  uint64_t seed;
} sc_kernels_model_desc;

typedef struct sc_kernels_model sc_kernels_model;
typedef struct sc_kernels_ctx sc_kernels_ctx;

/* Uploads (or generates) the weights. Fails with SC_ERR_INVALID on shapes
 * that disagree with dims, SC_ERR_UNSUPPORTED on a head size the attention
 * kernel has no instance for (> 256 or odd), SC_ERR_DEVICE on no device,
 * out of device memory or a driver mismatch (nothing is left allocated).
 * *out owned by the caller: sc_kernels_model_free, after its contexts. */
sc_status sc_kernels_model_new(const sc_kernels_model_desc *desc, sc_kernels_model **out,
                               sc_error *err);
void sc_kernels_model_free(sc_kernels_model *m); /* NULL is fine */
uint64_t sc_kernels_model_bytes(const sc_kernels_model *m); /* device bytes of weights */

/* Bytes of one context's device arena for max_seq positions (pure
 * arithmetic; no device needed; 0 in a CPU-only build). */
uint64_t sc_kernels_ctx_plan_bytes(const sc_kernels_dims *dims, int max_seq);

/* A context: arena (activations, per-layer K/V cache, lm_head chunk,
 * attention partials, cuBLAS workspace), its own stream and cuBLAS handle.
 * One thread at a time per context; contexts of one model may run
 * concurrently. *out owned by the caller. */
sc_status sc_kernels_ctx_new(sc_kernels_model *m, int max_seq, sc_kernels_ctx **out,
                             sc_error *err);
void sc_kernels_ctx_free(sc_kernels_ctx *c); /* NULL is fine */
uint64_t sc_kernels_ctx_bytes(const sc_kernels_ctx *c);

/* One forward pass, as model.h's sc_forward_ctx_run_window / _run_packed:
 * positions [w0, w1) of ids[0..n) are computed and every other position's
 * K/V comes from this context's cache; with segs (n_segs + 1 offsets,
 * segs[0] = 0, segs[n_segs] = n; then w0 = 0 and w1 = n) the rows are
 * independent sequences packed back to back (RoPE positions restart,
 * attention stays inside each). rows index the packed/absolute positions
 * and must lie in [w0, w1); NULL = every window row in order. Only
 * ids[w0..w1) are read. All host pointers are borrowed for the call. */
typedef struct sc_kernels_pass {
  const int32_t *ids;
  int n, w0, w1;
  const int32_t *segs;
  int n_segs;
  const int32_t *rows;
  int n_rows;
} sc_kernels_pass;

/* Raw lm_head outputs for the rows, copied to logits_host [n_rows][vocab]
 * (f32, row-major). */
sc_status sc_kernels_forward(sc_kernels_ctx *c, const sc_kernels_pass *p, float *logits_host,
                             sc_error *err);

/* ---- picking a token per row, on the device --------------------------------
 * The fused lm_head epilogue applies the engine's picking rules (model.h,
 * sc_pick_params; model/pick.c is the CPU reference) to each requested
 * row's logits l[0..V):
 *   inv_t = 1/T when T > 0, else 1
 *   z[t]  = l[t] * inv_t, minus eos_penalty * inv_t for the eos and pad ids,
 *           and -inf for every banned id
 *   p     = softmax(z); max_prob, margin (p1 - p2) and entropy of p
 *   token = argmax z (lowest index on ties) when T <= 0, else the Gumbel-max
 *           sample argmax (z[t] - log(-log(u(key, t)))), u below
 *   nonfinite = some l[t] (banned or not) is NaN or infinite
 * Only these records cross to the host, never the [rows x vocab] logits. */

#if defined(__CUDACC__)
#define SC_KERNELS_HD __host__ __device__
#else
#define SC_KERNELS_HD
#endif

/* splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective mixer. */
static inline SC_KERNELS_HD uint64_t sc_kernels_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* 64 random bits -> a float in (0, 1), never 0 or 1: the top 23 bits plus
 * a half step, (k + 0.5) / 2^23. With 24 bits the largest value, 2^24 - 0.5,
 * would round to 2^24 in a float and give exactly 1 (and -log(-log(u)) =
 * +inf would win any Gumbel-max). */
static inline SC_KERNELS_HD float sc_kernels_u01(uint64_t h) {
  return ((float)(h >> 41) + 0.5f) * (1.0f / 8388608.0f);
}

/* The sampler's uniform for token t of a row keyed `key`. Counter-based, so
 * any thread draws any token's noise, and the host reference draws the
 * same bits. */
static inline SC_KERNELS_HD float sc_kernels_pick_uniform(uint64_t key, uint64_t t) {
  return sc_kernels_u01(sc_kernels_mix64(key ^ sc_kernels_mix64(t ^ 0x632be59bd9b4e019ULL)));
}

/* Per requested row. Layout shared with model.h's sc_pick_row_params. */
typedef struct sc_kernels_pick_row {
  float temperature; /* <= 0: the argmax */
  float eos_penalty; /* in logit units, before the temperature */
  uint64_t key;      /* the row's noise: u(key, t) */
} sc_kernels_pick_row;

typedef struct sc_kernels_sample {
  const sc_kernels_pick_row *rows; /* [n_rows] (borrowed for the call) */
  /* [vocab] 1 = never picked, or NULL (borrowed for the call). Copied to
   * the device when its contents differ from the last call's, so the caller
   * may edit it in place between calls. */
  const uint8_t *banned;
  int32_t eos_id, pad_id; /* -1: none */
  /* [n_rows][vocab] or NULL: the rows' logits are also copied here (a batch
   * whose other rows are picked on the host). */
  float *logits_host;
} sc_kernels_sample;

typedef struct sc_kernels_row_stats {
  float max_prob;    /* p(top1) */
  float margin;      /* p(top1) - p(top2) */
  float entropy;     /* -sum p log p, nats */
  float sample_prob; /* p(sample) */
  int32_t argmax;    /* lowest index among equal maxima */
  int32_t sample;    /* the picked token: argmax when T <= 0 */
  int32_t nonfinite; /* 1: a logit of the row was NaN or infinite (the rest
                        is then 0), as model/pick.c flags it */
} sc_kernels_row_stats;

sc_status sc_kernels_forward_stats(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                   const sc_kernels_sample *s, sc_kernels_row_stats *out,
                                   sc_error *err);

#ifdef __cplusplus
}
#endif
#endif

/*
 * kernels_impl.h — private to kernels/ and its tests (tests/gpu): the error
 * macros, the RNG shared by device and host, and the launchers of every
 * kernel in ops.cu. Only CUDA translation units include it.
 *
 * Conventions: activations and weights are bf16 ("bf16" below), row-major;
 * the residual stream, norm weights, biases, RoPE tables, logits and every
 * reduction are fp32. Every launcher enqueues on `stream` and returns the
 * launch status (errors of the kernel itself surface at the next sync).
 */
#ifndef SCULPT_KERNELS_IMPL_H
#define SCULPT_KERNELS_IMPL_H

#include "kernels.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

typedef __nv_bfloat16 sck_bf16;

/* ---- errors: every CUDA/cuBLAS call's failure becomes an sc_error ------- */

sc_status sck_cuda_fail(cudaError_t e, const char *what, const char *file, int line,
                        sc_error *err);
sc_status sck_cublas_fail(cublasStatus_t s, const char *what, const char *file, int line,
                          sc_error *err);

/* Records the failing call (its text, file and line) and returns from the
 * enclosing function, which must return sc_status. Never exits. */
#define SCK_CUDA(call, err)                                                    \
  do {                                                                         \
    cudaError_t sck_e_ = (call);                                               \
    if (sck_e_ != cudaSuccess)                                                 \
      return sck_cuda_fail(sck_e_, #call, __FILE__, __LINE__, (err));          \
  } while (0)
#define SCK_CUBLAS(call, err)                                                  \
  do {                                                                         \
    cublasStatus_t sck_s_ = (call);                                            \
    if (sck_s_ != CUBLAS_STATUS_SUCCESS)                                       \
      return sck_cublas_fail(sck_s_, #call, __FILE__, __LINE__, (err));        \
  } while (0)

/* ---- synthetic weights' RNG ------------------------------------------------ */

/* A uniform in (0, 1) keyed by (seed, a, b): counter-based, so any thread
 * can draw any element. The sampler's noise is sc_kernels_pick_uniform. */
static inline __host__ __device__ float sck_uniform(uint64_t seed, uint64_t a, uint64_t b) {
  return sc_kernels_u01(sc_kernels_mix64(seed ^ sc_kernels_mix64(a * 0x100000001b3ULL +
                                                                 sc_kernels_mix64(b))));
}

/* ---- launchers (ops.cu) --------------------------------------------------- */

/* One attention tile (kernels.h). */
typedef sc_kernels_tile sck_tile;

/* The small per-pass inputs that change within a shape class: the first
 * thing of the packed upload each pass makes (kernels/model.cu), read by
 * the kernels of a captured graph, so a graph serves every window place. */
typedef struct sck_step_hdr {
  int32_t w0;      /* the window's first position: its K/V go to cache rows w0.. */
  int32_t n;       /* the sequence's length */
  int32_t n_rows;  /* lm_head rows asked for; rows past it are zeros */
  int32_t eos_id, pad_id; /* the picking rules' ids, -1: none */
  int32_t pad_[3];
} sck_step_hdr;


/* x[n][H] f32 = table[ids[i]][H] (bf16 -> f32). */
cudaError_t sck_embed(const int32_t *ids, int n, const sck_bf16 *table, int H, float *x,
                      cudaStream_t stream);

/* Per row i < n: x[i] += delta[i] (when delta is not NULL), then
 * out[i] = bf16(x[i] / sqrt(mean(x[i]^2) + eps) * w). x f32 [n][H], delta
 * and out bf16 [n][H], w f32 [H]. */
cudaError_t sck_add_rmsnorm(float *x, const sck_bf16 *delta, const float *w, float eps, int H,
                            int n, sck_bf16 *out, cudaStream_t stream);

/* After the fused QKV GEMM: qkv bf16 [n][QD + 2 KD] (QD = nh*hd, KD =
 * nkv*hd). Adds bias (f32 [QD + 2 KD], may be NULL); applies the per-head
 * RMSNorm qn / kn (f32 [hd], may be NULL) to q / k heads; rotates q and k by
 * RoPE (rotate-half, cos/sin f32 [*][hd/2] indexed by pos[i]); writes q back
 * in place and k, v to kc, vc bf16 [*][KD] at row cache_row0 + i. */
cudaError_t sck_qkv_post(sck_bf16 *qkv, int n, int nh, int nkv, int hd, const float *bias,
                         const float *qn, const float *kn, float eps, const float *cos_t,
                         const float *sin_t, const int32_t *pos, sck_bf16 *kc, sck_bf16 *vc,
                         int cache_row0, const sck_step_hdr *hdr, const float *src32,
                         cudaStream_t stream);
/* (hdr, when not NULL, adds hdr->w0 to cache_row0 on the device; src32,
 * when not NULL, is the GEMM's output in f32 [n][QD + 2 KD], read instead
 * of qkv's, q still written to qkv.) */


typedef struct sck_attn_plan {
  int hd_tmpl;    /* the kernel instance: 32, 64, 128 or 256 (>= head_dim) */
  int qv;         /* query vectors (rows x heads of one kv group) per block */
  int tq;         /* query rows per tile: max(1, qv / group) */
  size_t smem;    /* dynamic shared memory per block (simt) */
  bool mma;       /* the tensor-core kernel has an instance (head_dim <= 128) */
} sck_attn_plan;

/* The kernel instance for a head size and group; false when unsupported
 * (head_dim > 256 or odd, or a group larger than qv). */
bool sck_attn_plan_for(int head_dim, int group, sck_attn_plan *out);
/* Raises the kernel's dynamic shared memory limit (once per context). */
cudaError_t sck_attn_prepare(const sck_attn_plan *p);

/* Bidirectional GQA attention, flash style (online softmax, no score
 * matrix in global memory). q bf16 [*][ldq] (head h at column h*hd, after
 * RoPE; the kernel applies the 1/sqrt(hd) scale); k, v bf16 [*][nkv*hd];
 * out bf16 [*][nh*hd]. tiles (device) [n_tiles]. Each tile's keys are split
 * into n_chunks chunks, each ceil(keys / n_chunks) rounded up to the
 * kernel's key tile (so some may be empty), derived by each block from its
 * tile; with n_chunks > 1 the partial results go to part (f32
 * [n_tiles * nkv * n_chunks][qv][hd_tmpl + 2]).
 *   simt: CUDA cores; sck_attention_combine merges the partials after it.
 *   mma: tensor cores; the last block of a (tile, kv head) to finish merges
 *        them (counters: int [n_tiles * nkv], zero, left zero). */
cudaError_t sck_attention(const sck_attn_plan *p, sc_kernels_attn_kind kind, const sck_bf16 *q,
                          int ldq, const sck_bf16 *k, const sck_bf16 *v, sck_bf16 *out,
                          const sck_tile *tiles, int n_tiles, int nh, int nkv, int hd,
                          int n_chunks, float *part, int *counters, cudaStream_t stream);
/* The simt kernel's merge of n_chunks > 1 partials (nothing otherwise). */
cudaError_t sck_attention_combine(const sck_attn_plan *p, const float *part,
                                  const sck_tile *tiles, int n_tiles, int nh, int nkv, int hd,
                                  int n_chunks, sck_bf16 *out, cudaStream_t stream);

/* h[n][I] = silu(gate) * up, in f32, stored bf16: gu[n][2I] holds gate
 * then up, or (interleaved) by 8 columns: gate j at 16 (j / 8) + j % 8,
 * up j 8 after it. */
cudaError_t sck_swiglu(const sck_bf16 *gu, int n, int I, bool interleaved, sck_bf16 *h,
                       cudaStream_t stream);

/* out[j][H] = x[rows[j]][H] for j < n_rows; with hdr, rows j >= hdr->n_rows
 * are zeros instead. */
cudaError_t sck_gather_rows(const sck_bf16 *x, int H, const int32_t *rows, int n_rows,
                            sck_bf16 *out, const sck_step_hdr *hdr, cudaStream_t stream);

/* The lm_head epilogue over logits f32 [n][V] (row-major): row j is picked
 * by rows[j] under kernels.h's rules; banned is a device bitmap [V] or
 * NULL; eos_id/pad_id -1 for none. With hdr, the ids come from it and rows
 * j >= hdr->n_rows are left alone. */
cudaError_t sck_lm_stats(const float *logits, int n, int V, const sc_kernels_pick_row *rows,
                         const uint8_t *banned, int32_t eos_id, int32_t pad_id,
                         sc_kernels_row_stats *out, const sck_step_hdr *hdr,
                         cudaStream_t stream);

/* dtype conversion on upload, and synthetic weights. */
cudaError_t sck_f32_to_bf16(const float *src, size_t n, sck_bf16 *dst, cudaStream_t stream);
cudaError_t sck_f16_to_bf16(const __half *src, size_t n, sck_bf16 *dst, cudaStream_t stream);
/* dst[i] = bf16(scale * (2u - 1)), u = sck_uniform(seed, i, 0). */
cudaError_t sck_fill_uniform(sck_bf16 *dst, size_t n, float scale, uint64_t seed,
                             cudaStream_t stream);
/* dst[i] = base + jitter * (2u - 1). */
cudaError_t sck_fill_f32(float *dst, size_t n, float base, float jitter, uint64_t seed,
                         cudaStream_t stream);

/* ---- the narrow GEMM and FP8 (narrow.cu) ------------------------------------ */

/* What the narrow GEMM's epilogue does with Y[m][n] = sum_k X[m][k] W[n][k]
 * (times the row's scale for FP8). */
typedef enum sck_epilogue {
  SCK_EPI_F32_ADD = 0, /* Y f32 += (atomically: k may be split across blocks) */
  SCK_EPI_F32,         /* Y f32 = */
  SCK_EPI_BF16,        /* Y bf16 = */
  SCK_EPI_SWIGLU,      /* W's rows interleaved by 8 (gate 8q.., then up 8q..): Y bf16
                          [m][j] = silu(gate_j) * up_j, ldy >= N / 2 */
} sck_epilogue;

/* A weight matrix [rows][cols] on the device, each row `stride` elements
 * (zeros past cols): bf16, or e4m3 bytes with scale [rows]
 * (sc_kernels_fp8_quantize_row's rule). */
typedef struct sck_narrow_w {
  const void *w;
  const float *scale;
  bool fp8;
  int rows, cols, stride;
} sck_narrow_w;

/* The row stride the narrow GEMM needs for cols: a multiple of 128. */
int sck_narrow_stride(int cols);
/* Whether it takes w: cols a multiple of 8, stride a multiple of 128;
 * SwiGLU rows a multiple of 16. */
bool sck_narrow_fits(const sck_narrow_w *w, sck_epilogue epi);
/* Y (ldy) from X [M][K] bf16 (ldx, a multiple of 8) and w; any M (chunks
 * of 64 rows, each reading the weights again). cudaErrorInvalidValue when
 * sck_narrow_fits says no. */
cudaError_t sck_gemm_narrow(const sck_narrow_w *w, const sck_bf16 *X, int ldx, int M,
                            sck_epilogue epi, void *Y, int ldy, int sm_count,
                            cudaStream_t stream);
/* rows of src [rows][cols] bf16 -> q [rows][stride] e4m3 (zeros past
 * cols) and scale [rows]. */
cudaError_t sck_quant_fp8(const sck_bf16 *src, int rows, int cols, int stride, uint8_t *q,
                          float *scale, cudaStream_t stream);

/* ---- cuBLAS (blas.cu opens it, gemm.cu multiplies) ----------------------- */

/* The cuBLAS entry points the backend calls, resolved from libcublas at run
 * time (see blas.cu for why it is not linked). */
typedef cublasStatus_t (*sck_gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                         int, int, int, const void *, const void *,
                                         cudaDataType, int, const void *, cudaDataType, int,
                                         const void *, void *, cudaDataType, int,
                                         cublasComputeType_t, cublasGemmAlgo_t);
typedef struct sck_blas_api {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  sck_gemm_ex_fn gemm_ex; /* cublasGemmEx is overloaded in C++; blas.cu checks the type */
  decltype(&cublasGetStatusString) status_string;
} sck_blas_api;

/* The loaded table (process-wide, loaded once, never freed), or NULL with
 * SC_ERR_DEVICE and the loader's reason in err. Thread-safe. */
const sck_blas_api *sck_blas(sc_error *err);
/* cublasGetStatusString when cuBLAS is loaded, else a fixed text. */
const char *sck_blas_status_string(cublasStatus_t s);


/* Y[n][out] (leading dimension ldy) = beta * Y + X[n][in] (ld ldx) * W^T,
 * W bf16 [out][in] (PyTorch Linear layout), X bf16, Y bf16 or f32
 * (y_f32), fp32 accumulation. */
sc_status sck_gemm(cublasHandle_t h, const sck_bf16 *W, int out, int in, const sck_bf16 *X,
                   int n, int ldx, void *Y, bool y_f32, int ldy, float beta, sc_error *err);

#endif

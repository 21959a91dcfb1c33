// model.cu — the device model (weights in one device allocation) and forward
// contexts (one device arena each, planned up front), the per-layer launch
// sequence, and CUDA graphs per shape class. A step is one packed copy of
// its small inputs to the device, the body and the lm_head with its picking
// (a graph replay once the class was seen twice: kernels/plan.c), one copy
// of the picks back and one wait. model/cpu.c is the reference for every
// step of the math.
#include "kernels_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 256
static size_t align_up(size_t x) { return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

// Upper bound on (tile x kv head x key chunk) partial records of split
// attention; sizes the partial buffer and caps the split.
#define PART_BLOCKS 1024
// Rows of lm_head output per chunk ([RC][vocab] f32 in the arena).
#define ROW_CHUNK 128
#define WORKSPACE_BYTES ((size_t)32 << 20) /* cuBLAS's advice for Hopper */
#define STAGING_BYTES ((size_t)64 << 20)
// Rows a pass may have for the narrow GEMM to take it (bf16 weights; FP8
// ones always go through it).
#define NARROW_ROWS_MAX 64

// A weight matrix on the device: bf16 [rows][cols], or FP8 (e4m3, the rule
// of kernels.h) [rows][stride] with one f32 scale a row (narrow.cu reads it).
struct dev_mat {
  void *w;
  float *s;  // [rows] for FP8, else NULL
  int rows, cols, stride;
};

struct dev_layer {
  dev_mat qkv;   // [QD + 2 KD][H]: q, k, v projections stacked (one GEMM)
  dev_mat o;     // [H][QD]
  dev_mat gu;    // [2 I][H]: gate and up (one GEMM); with gu_il, by 8 rows:
                 // gate 0..7, up 0..7, gate 8..15, ... (narrow.cu's SwiGLU epilogue)
  dev_mat down;  // [H][I]
  float *bqkv;     // [QD + 2 KD] or NULL
  float *qn, *kn;  // [hd] or NULL
  float *attn_norm, *mlp_norm; // [H]
};

struct sc_kernels_model {
  sc_kernels_dims d;
  float theta, eps;
  int QD, KD;
  bool bias, qk_norm, tied;
  bool fp8;    // the matrices (not the embedding table) in FP8
  bool gu_il;  // gate/up rows interleaved by 8 (intermediate % 8 == 0)
  char *arena;
  size_t bytes;
  dev_layer *layers;  // host array of device pointers
  sck_bf16 *embed;    // [V][H]
  dev_mat head;       // [V][H] (its w == embed when tied and bf16: one copy)
  float *final_norm;  // [H]
  size_t tmp_elems;   // bf16 elements of the transient buffer an upload needs
  sck_attn_plan attn;
  int sm_count;
};

// ---- planning ------------------------------------------------------------------

// Assigns every weight its offset; with base NULL only sizes. Returns bytes.
static size_t plan_model(sc_kernels_model *m, char *base) {
  size_t at = 0;
  auto take = [&](size_t bytes) -> char * {
    char *p = base ? base + at : nullptr;
    at += align_up(bytes);
    return p;
  };
  auto mat = [&](dev_mat *dm, size_t rows, size_t cols) {
    dm->rows = (int)rows;
    dm->cols = (int)cols;
    dm->stride = m->fp8 ? sck_narrow_stride((int)cols) : (int)cols;
    dm->w = take(rows * (size_t)dm->stride * (m->fp8 ? 1 : sizeof(sck_bf16)));
    dm->s = m->fp8 ? (float *)take(rows * sizeof(float)) : nullptr;
  };
  const size_t H = (size_t)m->d.hidden, QD = (size_t)m->QD, KD = (size_t)m->KD,
               I = (size_t)m->d.intermediate, V = (size_t)m->d.vocab, hd = (size_t)m->d.head_dim;
  const size_t f4 = sizeof(float);
  for (int l = 0; l < m->d.n_layers; l++) {
    dev_layer *y = &m->layers[l];
    mat(&y->qkv, QD + 2 * KD, H);
    mat(&y->o, H, QD);
    mat(&y->gu, 2 * I, H);
    mat(&y->down, H, I);
    y->bqkv = m->bias ? (float *)take((QD + 2 * KD) * f4) : nullptr;
    y->qn = m->qk_norm ? (float *)take(hd * f4) : nullptr;
    y->kn = m->qk_norm ? (float *)take(hd * f4) : nullptr;
    y->attn_norm = (float *)take(H * f4);
    y->mlp_norm = (float *)take(H * f4);
  }
  m->embed = (sck_bf16 *)take(V * H * sizeof(sck_bf16));
  if (m->tied && !m->fp8) m->head = dev_mat{m->embed, nullptr, (int)V, (int)H, (int)H};
  else mat(&m->head, V, H);
  m->final_norm = (float *)take(H * f4);
  // The transient bf16 an upload assembles a matrix in before it is
  // quantized (FP8), and a gate or up half before it is interleaved.
  size_t big = V * H > 3 * I * H ? V * H : 3 * I * H;
  if (big < (QD + 2 * KD) * H) big = (QD + 2 * KD) * H;
  m->tmp_elems = m->fp8 ? big : m->gu_il ? I * H : 0;
  return at;
}

struct ctx_plan {
  size_t x, xn, qkv, qkv32, att, tmp, gu, hmid, kc, vc, xr, cos_t, sin_t, logits, part;
  size_t rows, prow, banned, stats, counters, in, ws, total;
  size_t in_bytes;  // the packed per-pass inputs' room (step_io)
  int rc, tile_cap;
  sck_attn_plan attn;
};

// The packed per-pass inputs (one host-to-device copy a pass): where each
// part lies in the region for a class's sizes. The offsets depend only on
// the shape class (rows, tiles, lm_head rows), so a graph captured with
// these pointers reads the right places at every replay.
struct step_io {
  size_t hdr, ids, pos, tiles, rows, prow, bytes;
};

static step_io io_layout(int nw, int n_tiles, int head_rows) {
  step_io io;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    size_t o = at;
    at += (bytes + 15) & ~(size_t)15;
    return o;
  };
  io.hdr = take(sizeof(sck_step_hdr));
  io.ids = take((size_t)nw * sizeof(int32_t));
  io.pos = take((size_t)nw * sizeof(int32_t));
  io.tiles = take((size_t)n_tiles * sizeof(sck_tile));
  io.rows = take((size_t)head_rows * sizeof(int32_t));
  io.prow = take((size_t)head_rows * sizeof(sc_kernels_pick_row));
  io.bytes = at;
  return io;
}

static bool plan_ctx(const sc_kernels_dims *d, int S, ctx_plan *p) {
  if (!d || S < 1 || d->n_layers < 1 || d->hidden < 1 || d->n_heads < 1 || d->n_kv_heads < 1 ||
      d->n_heads % d->n_kv_heads || d->head_dim < 2 || d->intermediate < 1 || d->vocab < 1)
    return false;
  if (!sck_attn_plan_for(d->head_dim, d->n_heads / d->n_kv_heads, &p->attn)) return false;
  const size_t s = (size_t)S, H = (size_t)d->hidden, hd = (size_t)d->head_dim;
  const size_t QD = (size_t)d->n_heads * hd, KD = (size_t)d->n_kv_heads * hd;
  const size_t I = (size_t)d->intermediate, V = (size_t)d->vocab, L = (size_t)d->n_layers;
  const size_t b2 = sizeof(sck_bf16), f4 = sizeof(float);
  p->rc = S < ROW_CHUNK ? S : ROW_CHUNK;
  p->tile_cap = S + S / p->attn.tq + 2;  // window tiles + one partial tile per segment
  size_t at = 0;
  auto take = [&](size_t bytes) {
    size_t o = at;
    at += align_up(bytes);
    return o;
  };
  p->x = take(s * H * f4);                 // residual stream f32 [S][H]
  p->xn = take(s * H * b2);                // normed input [S][H]
  p->qkv = take(s * (QD + 2 * KD) * b2);   // [S][QD + 2 KD]
  p->qkv32 = take(NARROW_ROWS_MAX * (QD + 2 * KD) * f4);  // the narrow GEMM's f32 sums
  p->att = take(s * QD * b2);              // attention output [S][QD]
  p->tmp = take(s * H * b2);               // o_proj / down output [S][H]
  p->gu = take(s * 2 * I * b2);            // gate|up [S][2I]
  p->hmid = take(s * I * b2);              // SwiGLU output [S][I]
  p->kc = take(L * s * KD * b2);           // K cache [L][S][KD], post-RoPE
  p->vc = take(L * s * KD * b2);           // V cache [L][S][KD]
  p->xr = take((size_t)p->rc * H * b2);    // gathered rows [RC][H]
  p->cos_t = take(s * (hd / 2) * f4);      // [S][hd/2]
  p->sin_t = take(s * (hd / 2) * f4);
  p->logits = take((size_t)p->rc * V * f4);  // [RC][V]
  // Partials of split attention, at the instance's head size (both kernels').
  p->part = take((size_t)PART_BLOCKS * p->attn.qv * ((size_t)p->attn.hd_tmpl + 2) * f4);
  p->rows = take((size_t)p->rc * sizeof(int32_t));  // the lm_head after the graph: rows,
  p->prow = take((size_t)p->rc * sizeof(sc_kernels_pick_row));  // per-row pick parameters
  p->banned = take(V);                                           // banned-token bitmap [V]
  p->stats = take((size_t)p->rc * sizeof(sc_kernels_row_stats));
  p->counters = take((size_t)p->tile_cap * d->n_kv_heads * sizeof(int));  // in-kernel merges
  p->in_bytes = io_layout(S, p->tile_cap, p->rc).bytes;  // the largest class's inputs
  p->in = take(p->in_bytes);
  p->ws = take(WORKSPACE_BYTES);
  p->total = at;
  return true;
}

extern "C" uint64_t sc_kernels_ctx_plan_bytes(const sc_kernels_dims *dims, int max_seq) {
  ctx_plan p;
  return plan_ctx(dims, max_seq, &p) ? (uint64_t)p.total : 0;
}

// ---- the model ---------------------------------------------------------------------

// Copies a host matrix into dst as bf16, converting through the staging
// buffer on the legacy default stream (ordered with cudaMemcpy).
static sc_status upload_matrix(const sc_kernels_matrix *src, int64_t rows, int64_t cols,
                               const char *what, int layer, sck_bf16 *dst, void *staging,
                               sc_error *err) {
  SC_CHECK(src->data, err, SC_ERR_INVALID, "layer %d %s: no data", layer, what);
  SC_CHECK(src->rows == rows && src->cols == cols, err, SC_ERR_INVALID,
           "layer %d %s: shape [%lld, %lld], expected [%lld, %lld]", layer, what,
           (long long)src->rows, (long long)src->cols, (long long)rows, (long long)cols);
  const size_t n = (size_t)rows * (size_t)cols;
  switch (src->dtype) {
  case SC_KERNELS_BF16:
    SCK_CUDA(cudaMemcpy(dst, src->data, n * sizeof(sck_bf16), cudaMemcpyHostToDevice), err);
    return SC_OK;
  case SC_KERNELS_F16:
  case SC_KERNELS_F32: {
    const size_t es = src->dtype == SC_KERNELS_F32 ? 4 : 2, per = STAGING_BYTES / es;
    const char *s = (const char *)src->data;
    for (size_t o = 0; o < n; o += per) {
      const size_t cnt = n - o < per ? n - o : per;
      SCK_CUDA(cudaMemcpy(staging, s + o * es, cnt * es, cudaMemcpyHostToDevice), err);
      cudaError_t e = src->dtype == SC_KERNELS_F32
                          ? sck_f32_to_bf16((const float *)staging, cnt, dst + o, 0)
                          : sck_f16_to_bf16((const __half *)staging, cnt, dst + o, 0);
      SCK_CUDA(e, err);
    }
    return SC_OK;
  }
  }
  return sc_error_set(err, SC_ERR_INVALID, "layer %d %s: unknown dtype %d", layer, what,
                      (int)src->dtype);
}

static sc_status upload_vec(float *dst, const float *src, size_t n, const char *what, int layer,
                            sc_error *err) {
  SC_CHECK(src, err, SC_ERR_INVALID, "layer %d %s: missing", layer, what);
  SCK_CUDA(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice), err);
  return SC_OK;
}

// Interleaves the gate or up half (half 0 or 1) of a [2I][H] matrix by 8
// rows: raw [I][H] -> rows 16q + 8 half + (0..7) of dst.
static sc_status interleave_half(sck_bf16 *dst, const sck_bf16 *raw, int I, int H, int half,
                                 sc_error *err) {
  const size_t row = (size_t)H * sizeof(sck_bf16);
  SCK_CUDA(cudaMemcpy2D(dst + (size_t)8 * half * H, 16 * row, raw, 8 * row, 8 * row,
                        (size_t)I / 8, cudaMemcpyDeviceToDevice),
           err);
  return SC_OK;
}

// What a dev_mat is made from: bf16 assembled in `asm_` (the matrix itself
// when bf16, the transient when FP8), then quantized into place.
static sck_bf16 *assembly(const sc_kernels_model *m, const dev_mat *d, sck_bf16 *tmp) {
  return m->fp8 ? tmp : (sck_bf16 *)d->w;
}
static sc_status finish(const sc_kernels_model *m, dev_mat *d, const sck_bf16 *asm_,
                        sc_error *err) {
  if (m->fp8)
    SCK_CUDA(sck_quant_fp8(asm_, d->rows, d->cols, d->stride, (uint8_t *)d->w, d->s, 0), err);
  return SC_OK;
}

static sc_status upload_weights(sc_kernels_model *m, const sc_kernels_model_desc *desc,
                                sck_bf16 *tmp, sc_error *err) {
  const int64_t H = m->d.hidden, QD = m->QD, KD = m->KD, I = m->d.intermediate,
                V = m->d.vocab, hd = m->d.head_dim;
  void *staging = nullptr;
  SCK_CUDA(cudaMalloc(&staging, STAGING_BYTES), err);
  float *bias = m->bias ? (float *)calloc((size_t)(QD + 2 * KD), sizeof(float)) : nullptr;
  sc_status st = SC_OK;
  if (m->bias && !bias) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  for (int l = 0; st == SC_OK && l < m->d.n_layers; l++) {
    const sc_kernels_layer_desc *y = &desc->layers[l];
    dev_layer *g = &m->layers[l];
    sck_bf16 *a = assembly(m, &g->qkv, tmp);
    if (st == SC_OK) st = upload_matrix(&y->wq, QD, H, "wq", l, a, staging, err);
    if (st == SC_OK) st = upload_matrix(&y->wk, KD, H, "wk", l, a + QD * H, staging, err);
    if (st == SC_OK) st = upload_matrix(&y->wv, KD, H, "wv", l, a + (QD + KD) * H, staging, err);
    if (st == SC_OK) st = finish(m, &g->qkv, a, err);
    a = assembly(m, &g->o, tmp);
    if (st == SC_OK) st = upload_matrix(&y->wo, H, QD, "wo", l, a, staging, err);
    if (st == SC_OK) st = finish(m, &g->o, a, err);
    // gate and up: one after the other, or interleaved by 8 rows through
    // the transient's last I x H.
    a = assembly(m, &g->gu, tmp);
    if (!m->gu_il) {
      if (st == SC_OK) st = upload_matrix(&y->wgate, I, H, "wgate", l, a, staging, err);
      if (st == SC_OK) st = upload_matrix(&y->wup, I, H, "wup", l, a + I * H, staging, err);
    } else {
      sck_bf16 *raw = tmp + (m->fp8 ? 2 * I * H : 0);
      if (st == SC_OK) st = upload_matrix(&y->wgate, I, H, "wgate", l, raw, staging, err);
      if (st == SC_OK) st = interleave_half(a, raw, (int)I, (int)H, 0, err);
      if (st == SC_OK) st = upload_matrix(&y->wup, I, H, "wup", l, raw, staging, err);
      if (st == SC_OK) st = interleave_half(a, raw, (int)I, (int)H, 1, err);
    }
    if (st == SC_OK) st = finish(m, &g->gu, a, err);
    a = assembly(m, &g->down, tmp);
    if (st == SC_OK) st = upload_matrix(&y->wdown, H, I, "wdown", l, a, staging, err);
    if (st == SC_OK) st = finish(m, &g->down, a, err);
    if (st == SC_OK && m->bias) {
      // Missing parts of the stacked bias are zero (e.g. only q has one).
      memset(bias, 0, (size_t)(QD + 2 * KD) * sizeof(float));
      if (y->bq) memcpy(bias, y->bq, (size_t)QD * sizeof(float));
      if (y->bk) memcpy(bias + QD, y->bk, (size_t)KD * sizeof(float));
      if (y->bv) memcpy(bias + QD + KD, y->bv, (size_t)KD * sizeof(float));
      st = upload_vec(g->bqkv, bias, (size_t)(QD + 2 * KD), "qkv bias", l, err);
    }
    if (st == SC_OK && m->qk_norm) {
      st = upload_vec(g->qn, y->q_norm, (size_t)hd, "q_norm", l, err);
      if (st == SC_OK) st = upload_vec(g->kn, y->k_norm, (size_t)hd, "k_norm", l, err);
    }
    if (st == SC_OK) st = upload_vec(g->attn_norm, y->attn_norm, (size_t)H, "attn_norm", l, err);
    if (st == SC_OK) st = upload_vec(g->mlp_norm, y->mlp_norm, (size_t)H, "mlp_norm", l, err);
  }
  if (st == SC_OK) st = upload_matrix(&desc->embed, V, H, "embed", -1, m->embed, staging, err);
  if (st == SC_OK && m->head.w != m->embed) {
    // Its own matrix, or (FP8, tied) the embedding quantized.
    sck_bf16 *a = assembly(m, &m->head, tmp);
    if (!m->tied) st = upload_matrix(&desc->lm_head, V, H, "lm_head", -1, a, staging, err);
    if (st == SC_OK) st = finish(m, &m->head, m->tied ? m->embed : a, err);
  }
  if (st == SC_OK) st = upload_vec(m->final_norm, desc->final_norm, (size_t)H, "final_norm", -1, err);
  if (st == SC_OK) {
    cudaError_t e = cudaStreamSynchronize(0);
    if (e != cudaSuccess) st = sck_cuda_fail(e, "weight upload", __FILE__, __LINE__, err);
  }
  free(bias);
  cudaFree(staging);
  return st;
}

// Random weights at the real shapes, generated on the device (benchmarks);
// FP8 ones generated in bf16 and quantized, as an upload would.
static sc_status synth_weights(sc_kernels_model *m, uint64_t seed, sck_bf16 *tmp,
                               sc_error *err) {
  const size_t H = (size_t)m->d.hidden, QD = (size_t)m->QD, KD = (size_t)m->KD,
               V = (size_t)m->d.vocab, hd = (size_t)m->d.head_dim;
  uint64_t k = seed;
  // Uniform(-a, a) with a = 1/sqrt(fan_in): activations stay O(1).
  auto mat = [&](dev_mat *d) -> sc_status {
    sck_bf16 *a = assembly(m, d, tmp);
    SCK_CUDA(sck_fill_uniform(a, (size_t)d->rows * d->cols, 1.0f / sqrtf((float)d->cols), ++k, 0),
             err);
    return finish(m, d, a, err);
  };
  for (int l = 0; l < m->d.n_layers; l++) {
    dev_layer *g = &m->layers[l];
    SC_TRY(mat(&g->qkv));
    SC_TRY(mat(&g->o));
    SC_TRY(mat(&g->gu));
    SC_TRY(mat(&g->down));
    if (g->bqkv) SCK_CUDA(sck_fill_f32(g->bqkv, QD + 2 * KD, 0.0f, 0.02f, ++k, 0), err);
    if (g->qn) SCK_CUDA(sck_fill_f32(g->qn, hd, 1.0f, 0.05f, ++k, 0), err);
    if (g->kn) SCK_CUDA(sck_fill_f32(g->kn, hd, 1.0f, 0.05f, ++k, 0), err);
    SCK_CUDA(sck_fill_f32(g->attn_norm, H, 1.0f, 0.05f, ++k, 0), err);
    SCK_CUDA(sck_fill_f32(g->mlp_norm, H, 1.0f, 0.05f, ++k, 0), err);
  }
  SCK_CUDA(sck_fill_uniform(m->embed, V * H, 1.0f, ++k, 0), err);
  if (!m->tied) SC_TRY(mat(&m->head));
  else if (m->head.w != m->embed) SC_TRY(finish(m, &m->head, m->embed, err));
  SCK_CUDA(sck_fill_f32(m->final_norm, H, 1.0f, 0.05f, ++k, 0), err);
  SCK_CUDA(cudaStreamSynchronize(0), err);
  return SC_OK;
}

// cudaMalloc with an out-of-memory message that says how much was asked.
static sc_status dev_alloc(void **p, size_t bytes, const char *what, sc_error *err) {
  cudaError_t e = cudaMalloc(p, bytes);
  if (e == cudaSuccess) return SC_OK;
  *p = nullptr;
  cudaGetLastError();  // an allocation failure is not sticky; clear it
  size_t f = 0, t = 0;
  cudaMemGetInfo(&f, &t);
  if (e == cudaErrorMemoryAllocation)
    return sc_error_set(err, SC_ERR_DEVICE,
                        "out of device memory: %s needs %.2f GiB, %.2f GiB of %.2f GiB free",
                        what, bytes / 1073741824.0, f / 1073741824.0, t / 1073741824.0);
  return sck_cuda_fail(e, what, __FILE__, __LINE__, err);
}

extern "C" sc_status sc_kernels_model_new(const sc_kernels_model_desc *desc,
                                          sc_kernels_model **out, sc_error *err) {
  SC_CHECK(out, err, SC_ERR_INVALID, "no output");
  *out = nullptr;
  SC_CHECK(desc, err, SC_ERR_INVALID, "no model description");
  const sc_kernels_dims *d = &desc->dims;
  ctx_plan probe_plan;
  SC_CHECK(plan_ctx(d, 1, &probe_plan), err, SC_ERR_UNSUPPORTED,
           "the CUDA backend cannot run this shape (%d heads, %d kv heads, head_dim %d; "
           "head_dim must be even and <= 256, heads a multiple of kv heads)",
           d->n_heads, d->n_kv_heads, d->head_dim);
  SC_CHECK(desc->synthetic || (desc->layers && desc->final_norm), err, SC_ERR_INVALID,
           "no layers or final norm");
  SC_TRY(sc_kernels_probe(nullptr, err));
  SCK_CUDA(cudaSetDevice(0), err);

  sc_kernels_model *m = (sc_kernels_model *)calloc(1, sizeof *m);
  SC_CHECK(m, err, SC_ERR_NOMEM, "out of memory");
  m->d = *d;
  m->theta = desc->rope_theta;
  m->eps = desc->rms_eps;
  m->QD = d->n_heads * d->head_dim;
  m->KD = d->n_kv_heads * d->head_dim;
  m->attn = probe_plan.attn;
  m->fp8 = desc->fp8;
  m->gu_il = d->intermediate % 8 == 0;
  if (m->fp8 && (d->hidden % 8 || (d->n_heads * d->head_dim) % 8 || d->intermediate % 8)) {
    free(m);
    return sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "FP8 weights need hidden (%d), heads x head_dim (%d) and intermediate "
                        "(%d) sizes that are multiples of 8",
                        d->hidden, d->n_heads * d->head_dim, d->intermediate);
  }
  if (desc->synthetic) {
    m->bias = desc->synthetic_bias;
    m->qk_norm = desc->synthetic_qk_norm;
    m->tied = desc->synthetic_tied;
  } else {
    m->tied = desc->lm_head.data == desc->embed.data;
    for (int l = 0; l < d->n_layers; l++) {
      const sc_kernels_layer_desc *y = &desc->layers[l];
      if (y->bq || y->bk || y->bv) m->bias = true;
      if (y->q_norm || y->k_norm) m->qk_norm = true;
    }
  }
  sc_status st = SC_OK;
  m->layers = (dev_layer *)calloc((size_t)d->n_layers, sizeof *m->layers);
  if (!m->layers) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (st == SC_OK) {
    m->bytes = plan_model(m, nullptr);
    st = dev_alloc((void **)&m->arena, m->bytes, "the model's weights", err);
  }
  if (st == SC_OK) {
    plan_model(m, m->arena);
    cudaError_t e = cudaDeviceGetAttribute(&m->sm_count, cudaDevAttrMultiProcessorCount, 0);
    if (e != cudaSuccess) st = sck_cuda_fail(e, "SM count", __FILE__, __LINE__, err);
  }
  // The transient an upload needs (FP8's assembly, gate/up's interleave).
  sck_bf16 *tmp = nullptr;
  if (st == SC_OK && m->tmp_elems)
    st = dev_alloc((void **)&tmp, m->tmp_elems * sizeof(sck_bf16), "the upload's transient", err);
  if (st == SC_OK)
    st = desc->synthetic ? synth_weights(m, desc->seed, tmp, err)
                         : upload_weights(m, desc, tmp, err);
  if (tmp) cudaFree(tmp);
  if (st != SC_OK) {
    sc_kernels_model_free(m);
    return st;
  }
  *out = m;
  return SC_OK;
}

extern "C" void sc_kernels_model_free(sc_kernels_model *m) {
  if (!m) return;
  if (m->arena) cudaFree(m->arena);
  free(m->layers);
  free(m);
}

extern "C" uint64_t sc_kernels_model_bytes(const sc_kernels_model *m) {
  return m ? (uint64_t)m->bytes : 0;
}

extern "C" uint64_t sc_kernels_model_step_bytes(const sc_kernels_model *m) {
  if (!m) return 0;
  // Everything but the embedding table, unless it is the head too.
  const uint64_t table = (uint64_t)m->d.vocab * m->d.hidden * sizeof(sck_bf16);
  return (uint64_t)m->bytes - (m->head.w == m->embed ? 0 : table);
}

extern "C" bool sc_kernels_model_fp8(const sc_kernels_model *m) { return m && m->fp8; }

// ---- contexts ------------------------------------------------------------------------

#define MAX_PROF_EVENTS 1024

struct sc_kernels_ctx {
  sc_kernels_model *m;
  int S;
  ctx_plan plan;
  char *arena;
  float *x, *qkv32;
  sck_bf16 *xn, *qkv, *att, *tmp, *gu, *hmid, *kc, *vc, *xr;
  float *cos_t, *sin_t, *logits, *part;
  int *counters;  // [tile_cap * nkv] the tensor-core attention's merges (left zero)
  char *d_in;     // the packed per-pass inputs (step_io)
  int32_t *d_rows;  // the lm_head after the graph: its rows and pick parameters
  sc_kernels_pick_row *d_prow;
  uint8_t *d_banned;
  // [V] what d_banned holds, to compare the caller's bitmap against: a
  // pointer alone would miss an edit in place or a freed bitmap's address
  // reused. banned_valid: false until the first upload.
  uint8_t *h_banned;
  bool banned_valid;
  sc_kernels_row_stats *d_stats;
  // Pinned host staging: the packed inputs, and the lm_head's after the graph.
  char *host;
  char *h_in;
  int32_t *h_rows;
  sc_kernels_pick_row *h_prow;
  sc_kernels_row_stats *h_stats;
  cudaStream_t stream;
  cublasHandle_t blas;
  sc_kernels_options opt;
  sc_kernels_counters cnt;
  // Graphs per shape class (kernels/plan.c decides; exec[i] is slot i's).
  sc_kernels_graph_cache gcache;
  cudaGraphExec_t exec[SC_KERNELS_GRAPH_SLOTS];
  // Profiling: events recorded before each group of launches, and its kind.
  bool profiling, prof_capture;
  bool prof_no_graph;  // this device could not time a graph's events: eager only
  cudaEvent_t *prof_ev;
  int prof_kind[MAX_PROF_EVENTS];
  int prof_n;
};

static void drop_graphs(sc_kernels_ctx *c) {
  for (int i = 0; i < SC_KERNELS_GRAPH_SLOTS; i++)
    if (c->exec[i]) {
      cudaGraphExecDestroy(c->exec[i]);
      c->exec[i] = nullptr;
    }
  sc_kernels_graph_cache_init(&c->gcache);
}

extern "C" void sc_kernels_ctx_free(sc_kernels_ctx *c) {
  if (!c) return;
  drop_graphs(c);
  if (c->prof_ev) {
    for (int i = 0; i < MAX_PROF_EVENTS; i++)
      if (c->prof_ev[i]) cudaEventDestroy(c->prof_ev[i]);
    free(c->prof_ev);
  }
  if (c->blas) sck_blas(NULL)->destroy(c->blas);  // a handle means cuBLAS is loaded
  if (c->stream) cudaStreamDestroy(c->stream);
  if (c->host) cudaFreeHost(c->host);
  if (c->arena) cudaFree(c->arena);
  free(c->h_banned);
  free(c);
}

extern "C" uint64_t sc_kernels_ctx_bytes(const sc_kernels_ctx *c) {
  return c ? (uint64_t)c->plan.total : 0;
}

extern "C" void sc_kernels_ctx_counters(const sc_kernels_ctx *c, sc_kernels_counters *out) {
  if (c) *out = c->cnt;
  else memset(out, 0, sizeof *out);
}

extern "C" void sc_kernels_ctx_get_options(const sc_kernels_ctx *c, sc_kernels_options *out) {
  *out = c->opt;
}

extern "C" sc_status sc_kernels_ctx_set_options(sc_kernels_ctx *c, const sc_kernels_options *o,
                                                sc_error *err) {
  SC_CHECK(c && o, err, SC_ERR_INVALID, "no context or options");
  SC_CHECK(o->attn_chunks >= 0 && o->attn_chunks <= PART_BLOCKS, err, SC_ERR_INVALID,
           "attention chunks %d: 0 (planned) to %d", o->attn_chunks, PART_BLOCKS);
  c->opt = *o;
  // Head sizes the tensor-core kernel has no instance for keep the simt one.
  if (!c->m->attn.mma) c->opt.attn = SC_KERNELS_ATTN_SIMT;
  drop_graphs(c);
  return SC_OK;
}

static sc_status ctx_setup(sc_kernels_ctx *c, sc_error *err) {
  const sc_kernels_model *m = c->m;
  ctx_plan *p = &c->plan;
  if (!sc_kernels_options_from_env(&c->opt, err)) return SC_ERR_INVALID;
  if (!m->attn.mma) c->opt.attn = SC_KERNELS_ATTN_SIMT;
  SC_TRY(dev_alloc((void **)&c->arena, p->total, "a forward context's arena", err));
  char *a = c->arena;
  c->x = (float *)(a + p->x);
  c->xn = (sck_bf16 *)(a + p->xn);
  c->qkv = (sck_bf16 *)(a + p->qkv);
  c->qkv32 = (float *)(a + p->qkv32);
  c->att = (sck_bf16 *)(a + p->att);
  c->tmp = (sck_bf16 *)(a + p->tmp);
  c->gu = (sck_bf16 *)(a + p->gu);
  c->hmid = (sck_bf16 *)(a + p->hmid);
  c->kc = (sck_bf16 *)(a + p->kc);
  c->vc = (sck_bf16 *)(a + p->vc);
  c->xr = (sck_bf16 *)(a + p->xr);
  c->cos_t = (float *)(a + p->cos_t);
  c->sin_t = (float *)(a + p->sin_t);
  c->logits = (float *)(a + p->logits);
  c->part = (float *)(a + p->part);
  c->d_rows = (int32_t *)(a + p->rows);
  c->d_prow = (sc_kernels_pick_row *)(a + p->prow);
  c->d_banned = (uint8_t *)(a + p->banned);
  c->d_stats = (sc_kernels_row_stats *)(a + p->stats);
  c->counters = (int *)(a + p->counters);
  c->d_in = a + p->in;
  // The cache starts as zeros so a window run on a fresh context reads
  // defined values (model/ rejects that case anyway).
  SCK_CUDA(cudaMemset(a + p->kc, 0, p->cos_t - p->kc), err);
  SCK_CUDA(cudaMemset(c->counters, 0, (size_t)p->tile_cap * m->d.n_kv_heads * sizeof(int)), err);

  const size_t rc = (size_t)p->rc;
  const size_t hb = align_up(p->in_bytes) + align_up(rc * sizeof(int32_t)) +
                    align_up(rc * sizeof(sc_kernels_pick_row)) +
                    align_up(rc * sizeof(sc_kernels_row_stats));
  SCK_CUDA(cudaMallocHost((void **)&c->host, hb), err);
  char *h = c->host;
  c->h_in = h;
  h += align_up(p->in_bytes);
  c->h_rows = (int32_t *)h;
  h += align_up(rc * sizeof(int32_t));
  c->h_prow = (sc_kernels_pick_row *)h;
  h += align_up(rc * sizeof(sc_kernels_pick_row));
  c->h_stats = (sc_kernels_row_stats *)h;
  sc_kernels_graph_cache_init(&c->gcache);

  // RoPE tables as the CPU reference builds them: inv_freq_i =
  // theta^(-2i/hd), angle = pos * inv_freq_i, in double (HF
  // _compute_default_rope_parameters).
  const int half = m->d.head_dim / 2;
  const size_t S = (size_t)c->S;
  float *tab = (float *)malloc(2 * S * (size_t)half * sizeof(float));
  SC_CHECK(tab, err, SC_ERR_NOMEM, "out of memory for the RoPE tables");
  for (size_t ps = 0; ps < S; ps++)
    for (int i = 0; i < half; i++) {
      double inv = pow((double)m->theta, -2.0 * i / m->d.head_dim);
      tab[ps * half + i] = (float)cos((double)ps * inv);
      tab[S * half + ps * half + i] = (float)sin((double)ps * inv);
    }
  cudaError_t e = cudaMemcpy(c->cos_t, tab, S * half * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMemcpy(c->sin_t, tab + S * half, S * half * sizeof(float), cudaMemcpyHostToDevice);
  free(tab);
  SCK_CUDA(e, err);

  // The memset and the pageable copies above ran on the legacy stream, which
  // the context's non-blocking stream does not wait for.
  SCK_CUDA(cudaDeviceSynchronize(), err);
  SCK_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), err);
  const sck_blas_api *blas = sck_blas(err);
  if (!blas) return SC_ERR_DEVICE;
  SCK_CUBLAS(blas->create(&c->blas), err);
  SCK_CUBLAS(blas->set_stream(c->blas, c->stream), err);
  // A fixed workspace keeps cuBLAS from allocating, which graph capture needs.
  SCK_CUBLAS(blas->set_workspace(c->blas, a + p->ws, WORKSPACE_BYTES), err);
  SCK_CUDA(sck_attn_prepare(&m->attn), err);
  return SC_OK;
}

extern "C" sc_status sc_kernels_ctx_new(sc_kernels_model *m, int max_seq, sc_kernels_ctx **out,
                                        sc_error *err) {
  SC_CHECK(out, err, SC_ERR_INVALID, "no output");
  *out = nullptr;
  SC_CHECK(m, err, SC_ERR_INVALID, "no model");
  SC_CHECK(max_seq >= 1 && max_seq <= (1 << 20), err, SC_ERR_INVALID,
           "max_seq %d is out of range", max_seq);
  sc_kernels_ctx *c = (sc_kernels_ctx *)calloc(1, sizeof *c);
  SC_CHECK(c, err, SC_ERR_NOMEM, "out of memory");
  c->m = m;
  c->S = max_seq;
  sc_status st = plan_ctx(&m->d, max_seq, &c->plan)
                     ? ctx_setup(c, err)
                     : sc_error_set(err, SC_ERR_INTERNAL, "no arena plan for this model");
  if (st != SC_OK) {
    sc_kernels_ctx_free(c);
    return st;
  }
  *out = c;
  return SC_OK;
}

// ---- one pass -------------------------------------------------------------------------

static sc_status check_pass(const sc_kernels_ctx *c, const sc_kernels_pass *p, sc_error *err) {
  SC_CHECK(p && p->ids, err, SC_ERR_INVALID, "no pass or no ids");
  SC_CHECK(p->n >= 1 && p->n <= c->S, err, SC_ERR_INVALID, "%d tokens: the context holds 1 to %d",
           p->n, c->S);
  SC_CHECK(0 <= p->w0 && p->w0 < p->w1 && p->w1 <= p->n, err, SC_ERR_INVALID,
           "window [%d, %d) is not inside 0..%d", p->w0, p->w1, p->n);
  if (p->segs) {
    SC_CHECK(p->n_segs >= 1 && p->segs[0] == 0 && p->segs[p->n_segs] == p->n && p->w0 == 0 &&
                 p->w1 == p->n,
             err, SC_ERR_INVALID, "packed sequences must cover 0..n exactly");
    for (int s = 0; s < p->n_segs; s++)
      SC_CHECK(p->segs[s + 1] > p->segs[s], err, SC_ERR_INVALID, "sequence %d is empty", s);
  }
  for (int i = p->w0; i < p->w1; i++)
    SC_CHECK(p->ids[i] >= 0 && p->ids[i] < c->m->d.vocab, err, SC_ERR_INVALID,
             "token id %d at position %d is outside the vocabulary", p->ids[i], i);
  if (p->rows) {
    SC_CHECK(p->n_rows >= 0, err, SC_ERR_INVALID, "negative n_rows");
    for (int j = 0; j < p->n_rows; j++)
      SC_CHECK(p->rows[j] >= p->w0 && p->rows[j] < p->w1, err, SC_ERR_INVALID,
               "row %d is outside the window [%d, %d)", p->rows[j], p->w0, p->w1);
  } else {
    SC_CHECK(p->n_rows == p->w1 - p->w0, err, SC_ERR_INVALID, "rows NULL but n_rows %d != %d",
             p->n_rows, p->w1 - p->w0);
  }
  return SC_OK;
}

// One pass's inputs on the device (pointers into d_in) and its plan.
struct pass_dev {
  sc_kernels_step_plan pl;
  const sck_step_hdr *hdr;
  const int32_t *ids, *pos, *rows;
  const sck_tile *tiles;
  const sc_kernels_pick_row *prow;
  bool sample;
  const uint8_t *banned;  // device bitmap or NULL
};

// A group of launches of one kind begins here (profiling only): an event
// on the stream, a graph node when capturing.
static void prof_mark(sc_kernels_ctx *c, int kind, bool capturing) {
  if (!c->profiling || c->prof_n >= MAX_PROF_EVENTS) return;
  cudaEvent_t ev = c->prof_ev[c->prof_n];
  if (capturing) cudaEventRecordWithFlags(ev, c->stream, cudaEventRecordExternal);
  else cudaEventRecord(ev, c->stream);
  c->prof_kind[c->prof_n++] = kind;
}

// One product Y = X W^T with its epilogue: the narrow GEMM when the weights
// are FP8, or when it is asked for and the pass has few rows (and it takes
// the shape); cuBLAS otherwise (SwiGLU is then the caller's kernel).
static bool narrow_for(const sc_kernels_ctx *c, const dev_mat *w, int M, sck_epilogue epi) {
  if (c->m->fp8) return true;
  const sck_narrow_w nw = {w->w, w->s, false, w->rows, w->cols, w->stride};
  return c->opt.gemm == SC_KERNELS_GEMM_NARROW && M <= NARROW_ROWS_MAX &&
         sck_narrow_fits(&nw, epi) && (epi != SCK_EPI_SWIGLU || c->m->gu_il);
}

static sc_status linear(sc_kernels_ctx *c, const dev_mat *w, const sck_bf16 *X, int ldx, int M,
                        sck_epilogue epi, void *Y, int ldy, sc_error *err) {
  if (narrow_for(c, w, M, epi)) {
    const sck_narrow_w nw = {w->w, w->s, c->m->fp8, w->rows, w->cols, w->stride};
    SCK_CUDA(sck_gemm_narrow(&nw, X, ldx, M, epi, Y, ldy, c->m->sm_count, c->stream), err);
    return SC_OK;
  }
  const sck_bf16 *W = (const sck_bf16 *)w->w;
  switch (epi) {
  case SCK_EPI_F32_ADD: return sck_gemm(c->blas, W, w->rows, w->cols, X, M, ldx, Y, true, ldy, 1.0f, err);
  case SCK_EPI_F32: return sck_gemm(c->blas, W, w->rows, w->cols, X, M, ldx, Y, true, ldy, 0.0f, err);
  case SCK_EPI_BF16: return sck_gemm(c->blas, W, w->rows, w->cols, X, M, ldx, Y, false, ldy, 0.0f, err);
  case SCK_EPI_SWIGLU: break;
  }
  return sc_error_set(err, SC_ERR_INTERNAL, "cuBLAS has no SwiGLU epilogue");
}

// The transformer over the window's rows, ending with the final norm in xn,
// then (head_rows > 0) the lm_head and the picking: only device buffers and
// the shape class, so it can be captured as a graph.
static sc_status run_body(sc_kernels_ctx *c, const pass_dev *pd, bool cap, sc_error *err) {
  const sc_kernels_model *m = c->m;
  const int H = m->d.hidden, QD = m->QD, KD = m->KD, I = m->d.intermediate, V = m->d.vocab;
  const int nh = m->d.n_heads, nkv = m->d.n_kv_heads, hd = m->d.head_dim;
  const int nw = pd->pl.nw, nt = pd->pl.n_tiles, chunks = pd->pl.n_chunks;
  const bool fuse = c->opt.fuse;
  const size_t cache_layer = (size_t)c->S * KD;
  cudaStream_t s = c->stream;
  prof_mark(c, SC_KK_EMBED, cap);
  SCK_CUDA(sck_embed(pd->ids, nw, m->embed, H, c->x, s), err);
  for (int l = 0; l < m->d.n_layers; l++) {
    const dev_layer *y = &m->layers[l];
    sck_bf16 *kc = c->kc + l * cache_layer, *vc = c->vc + l * cache_layer;
    // x += previous layer's MLP output (unless its GEMM added it); xn = rms(x) * attn_norm
    prof_mark(c, SC_KK_NORM, cap);
    SCK_CUDA(sck_add_rmsnorm(c->x, l && !fuse ? c->tmp : nullptr, y->attn_norm, m->eps, H, nw,
                             c->xn, s),
             err);
    // QKV: the narrow GEMM's k-split sums meet in f32 (zeroed first); the
    // post-processing reads them from there.
    prof_mark(c, SC_KK_GEMM_QKV, cap);
    const bool q32 = nw <= NARROW_ROWS_MAX && narrow_for(c, &y->qkv, nw, SCK_EPI_F32_ADD);
    if (q32) {
      SCK_CUDA(cudaMemsetAsync(c->qkv32, 0, (size_t)nw * (QD + 2 * KD) * sizeof(float), s), err);
      SC_TRY(linear(c, &y->qkv, c->xn, H, nw, SCK_EPI_F32_ADD, c->qkv32, QD + 2 * KD, err));
    } else {
      SC_TRY(linear(c, &y->qkv, c->xn, H, nw, SCK_EPI_BF16, c->qkv, QD + 2 * KD, err));
    }
    prof_mark(c, SC_KK_QKV_POST, cap);
    SCK_CUDA(sck_qkv_post(c->qkv, nw, nh, nkv, hd, y->bqkv, y->qn, y->kn, m->eps, c->cos_t,
                          c->sin_t, pd->pos, kc, vc, 0, pd->hdr, q32 ? c->qkv32 : nullptr, s),
             err);
    prof_mark(c, SC_KK_ATTN, cap);
    SCK_CUDA(sck_attention(&m->attn, c->opt.attn, c->qkv, QD + 2 * KD, kc, vc, c->att, pd->tiles,
                           nt, nh, nkv, hd, chunks, c->part, c->counters, s),
             err);
    if (c->opt.attn == SC_KERNELS_ATTN_SIMT && chunks > 1) {
      prof_mark(c, SC_KK_ATTN_COMBINE, cap);
      SCK_CUDA(sck_attention_combine(&m->attn, c->part, pd->tiles, nt, nh, nkv, hd, chunks,
                                     c->att, s),
               err);
    }
    // Fused: the residual add is the GEMM's epilogue (into x, f32).
    prof_mark(c, SC_KK_GEMM_O, cap);
    if (fuse) SC_TRY(linear(c, &y->o, c->att, QD, nw, SCK_EPI_F32_ADD, c->x, H, err));
    else SC_TRY(linear(c, &y->o, c->att, QD, nw, SCK_EPI_BF16, c->tmp, H, err));
    prof_mark(c, SC_KK_NORM, cap);
    SCK_CUDA(sck_add_rmsnorm(c->x, fuse ? nullptr : c->tmp, y->mlp_norm, m->eps, H, nw, c->xn, s),
             err);
    prof_mark(c, SC_KK_GEMM_GATE_UP, cap);
    if (narrow_for(c, &y->gu, nw, SCK_EPI_SWIGLU)) {
      SC_TRY(linear(c, &y->gu, c->xn, H, nw, SCK_EPI_SWIGLU, c->hmid, I, err));
    } else {
      SC_TRY(linear(c, &y->gu, c->xn, H, nw, SCK_EPI_BF16, c->gu, 2 * I, err));
      prof_mark(c, SC_KK_SWIGLU, cap);
      SCK_CUDA(sck_swiglu(c->gu, nw, I, m->gu_il, c->hmid, s), err);
    }
    prof_mark(c, SC_KK_GEMM_DOWN, cap);
    if (fuse) SC_TRY(linear(c, &y->down, c->hmid, I, nw, SCK_EPI_F32_ADD, c->x, H, err));
    else SC_TRY(linear(c, &y->down, c->hmid, I, nw, SCK_EPI_BF16, c->tmp, H, err));
  }
  prof_mark(c, SC_KK_NORM, cap);
  SCK_CUDA(sck_add_rmsnorm(c->x, fuse ? nullptr : c->tmp, m->final_norm, m->eps, H, nw, c->xn, s),
           err);
  const int hr = pd->pl.head_rows;
  if (hr > 0) {
    prof_mark(c, SC_KK_HEAD_GATHER, cap);
    SCK_CUDA(sck_gather_rows(c->xn, H, pd->rows, hr, c->xr, pd->hdr, s), err);
    prof_mark(c, SC_KK_HEAD_GEMM, cap);
    SC_TRY(linear(c, &m->head, c->xr, H, hr, SCK_EPI_F32, c->logits, V, err));
    if (pd->sample) {
      prof_mark(c, SC_KK_HEAD_STATS, cap);
      SCK_CUDA(sck_lm_stats(c->logits, hr, V, pd->prow, pd->banned, -1, -1, c->d_stats, pd->hdr,
                            s),
               err);
    }
  }
  return SC_OK;
}

// Captures the body into a graph; NULL (the reason in err) when it fails.
static cudaGraphExec_t capture(sc_kernels_ctx *c, const pass_dev *pd, sc_error *err) {
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    sck_cuda_fail(e, "cudaStreamBeginCapture", __FILE__, __LINE__, err);
    return nullptr;
  }
  sc_error cap_err = {};
  sc_status st = run_body(c, pd, true, &cap_err);
  e = cudaStreamEndCapture(c->stream, &g);
  cudaGraphExec_t exec = nullptr;
  if (st == SC_OK && e == cudaSuccess) e = cudaGraphInstantiate(&exec, g, 0);
  if (g) cudaGraphDestroy(g);
  if (st != SC_OK || e != cudaSuccess) {
    cudaGetLastError();  // not sticky: the context goes on eagerly
    if (st != SC_OK) *err = cap_err;
    else sck_cuda_fail(e, "graph capture", __FILE__, __LINE__, err);
    return nullptr;
  }
  return exec;
}

// Runs the body: from its class's graph when captured, capturing it on the
// class's second use (plan.c), eagerly otherwise or when capture fails.
static sc_status launch_body(sc_kernels_ctx *c, const pass_dev *pd, sc_error *err) {
  if (c->profiling) {
    // One graph for this step alone (its event nodes are this step's), or eager.
    if (c->prof_capture) {
      const int n0 = c->prof_n;
      sc_error why = {};
      cudaGraphExec_t exec = capture(c, pd, &why);
      if (exec) {
        cudaError_t e = cudaGraphLaunch(exec, c->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
        cudaGraphExecDestroy(exec);
        SCK_CUDA(e, err);
        return SC_OK;
      }
      SC_LOG_WARN("cuda: profiling inside a graph failed (%s); timing eagerly", why.msg);
      c->prof_n = n0;
      c->prof_capture = false;
    }
    c->cnt.eager++;
    return run_body(c, pd, false, err);
  }
  int slot = -1;
  sc_kernels_graph_action a =
      c->opt.graphs ? sc_kernels_graph_cache_decide(&c->gcache, pd->pl.key, &slot)
                    : SC_KERNELS_GRAPH_EAGER;
  if (a == SC_KERNELS_GRAPH_CAPTURE) {
    sc_error why = {};
    cudaGraphExec_t exec = capture(c, pd, &why);
    if (!exec) {
      // Not fatal: note it once, stop trying on this context, run eagerly.
      SC_LOG_WARN("cuda: graph capture failed (%s); running without graphs", why.msg);
      sc_kernels_graph_cache_drop(&c->gcache, slot);
      c->opt.graphs = false;
      a = SC_KERNELS_GRAPH_EAGER;
    } else {
      if (c->exec[slot]) cudaGraphExecDestroy(c->exec[slot]);
      c->exec[slot] = exec;
      c->cnt.captures++;
      a = SC_KERNELS_GRAPH_REPLAY;
    }
  }
  if (a == SC_KERNELS_GRAPH_REPLAY) {
    SCK_CUDA(cudaGraphLaunch(c->exec[slot], c->stream), err);
    c->cnt.replays++;
    return SC_OK;
  }
  c->cnt.eager++;
  return run_body(c, pd, false, err);
}

// The lm_head after the body when its rows do not fit the graph's (more
// than a chunk), or when asked ($SCULPT_CUDA_HEAD=host): a chunk at a time,
// each with its own uploads, copies back and wait.
static sc_status head_after(sc_kernels_ctx *c, const sc_kernels_pass *p, float *logits_host,
                            const sc_kernels_sample *smp, sc_kernels_row_stats *stats,
                            const uint8_t *banned, sc_error *err) {
  const sc_kernels_model *m = c->m;
  const int H = m->d.hidden, V = m->d.vocab, rc = c->plan.rc;
  for (int j0 = 0; j0 < p->n_rows; j0 += rc) {
    const int cnt = p->n_rows - j0 < rc ? p->n_rows - j0 : rc;
    for (int j = 0; j < cnt; j++) {
      const int r = p->rows ? p->rows[j0 + j] : p->w0 + j0 + j;
      c->h_rows[j] = r - p->w0;  // local row in the window
    }
    prof_mark(c, SC_KK_UPLOAD, false);
    SCK_CUDA(cudaMemcpyAsync(c->d_rows, c->h_rows, (size_t)cnt * sizeof(int32_t),
                             cudaMemcpyHostToDevice, c->stream),
             err);
    prof_mark(c, SC_KK_HEAD_GATHER, false);
    SCK_CUDA(sck_gather_rows(c->xn, H, c->d_rows, cnt, c->xr, nullptr, c->stream), err);
    prof_mark(c, SC_KK_HEAD_GEMM, false);
    SC_TRY(linear(c, &m->head, c->xr, H, cnt, SCK_EPI_F32, c->logits, V, err));
    if (logits_host) {
      prof_mark(c, SC_KK_DOWNLOAD, false);
      SCK_CUDA(cudaMemcpyAsync(logits_host + (size_t)j0 * V, c->logits,
                               (size_t)cnt * V * sizeof(float), cudaMemcpyDeviceToHost,
                               c->stream),
               err);
    }
    if (smp) {
      memcpy(c->h_prow, smp->rows + j0, (size_t)cnt * sizeof *c->h_prow);
      prof_mark(c, SC_KK_UPLOAD, false);
      SCK_CUDA(cudaMemcpyAsync(c->d_prow, c->h_prow, (size_t)cnt * sizeof *c->h_prow,
                               cudaMemcpyHostToDevice, c->stream),
               err);
      prof_mark(c, SC_KK_HEAD_STATS, false);
      SCK_CUDA(sck_lm_stats(c->logits, cnt, V, c->d_prow, banned, smp->eos_id, smp->pad_id,
                            c->d_stats, nullptr, c->stream),
               err);
      prof_mark(c, SC_KK_DOWNLOAD, false);
      SCK_CUDA(cudaMemcpyAsync(c->h_stats, c->d_stats, (size_t)cnt * sizeof *stats,
                               cudaMemcpyDeviceToHost, c->stream),
               err);
    }
    // The staging buffers are reused by the next chunk.
    prof_mark(c, SC_KK_COUNT, false);
    SCK_CUDA(cudaStreamSynchronize(c->stream), err);
    c->cnt.syncs++;
    if (smp) memcpy(stats + j0, c->h_stats, (size_t)cnt * sizeof *stats);
  }
  return SC_OK;
}

static sc_status forward_pass(sc_kernels_ctx *c, const sc_kernels_pass *p, float *logits_host,
                              const sc_kernels_sample *smp, sc_kernels_row_stats *stats,
                              sc_error *err) {
  SC_TRY(check_pass(c, p, err));
  const sc_kernels_model *m = c->m;
  const int V = m->d.vocab;
  SC_CHECK(p->n_rows == 0 || logits_host || stats, err, SC_ERR_INVALID, "no output buffer");
  // The plan (kernels/plan.c) and where the pass's inputs go.
  sc_kernels_step_in in;
  memset(&in, 0, sizeof in);
  in.n = p->n, in.w0 = p->w0, in.w1 = p->w1, in.segs = p->segs, in.n_segs = p->n_segs;
  in.n_rows = p->n_rows;
  in.tq = m->attn.tq;
  in.n_kv_heads = m->d.n_kv_heads;
  in.sm_count = m->sm_count;
  in.forced_chunks = c->opt.attn_chunks;
  if (!in.forced_chunks) {
    const char *force = getenv("SCULPT_CUDA_ATTN_CHUNKS");  // tests: force the split path
    if (force && atoi(force) > 0) in.forced_chunks = atoi(force);
  }
  in.part_blocks = PART_BLOCKS;
  in.head_cap = c->plan.rc;
  in.head_in_graph = c->opt.head_in_graph;
  in.sample = smp != nullptr;
  in.banned = smp && smp->banned;
  const int nt_need = sc_kernels_tile_count(&in);
  SC_CHECK(nt_need <= c->plan.tile_cap, err, SC_ERR_INTERNAL, "%d attention tiles > %d planned",
           nt_need, c->plan.tile_cap);
  pass_dev pd;
  SC_CHECK(sc_kernels_plan_step(&in, nullptr, &pd.pl), err, SC_ERR_UNSUPPORTED,
           "the pass cannot be planned (%d attention tiles: a grid holds 65535)", nt_need);
  const step_io io = io_layout(pd.pl.nw, pd.pl.n_tiles, pd.pl.head_rows);
  char *h = c->h_in;
  sc_kernels_plan_step(&in, (sck_tile *)(h + io.tiles), &pd.pl);
  // The packed inputs: header, ids, positions, tiles, lm_head rows and
  // their pick parameters (padding rows zero), then one copy.
  const int nw = pd.pl.nw, hr = pd.pl.head_rows;
  sck_step_hdr *hdr = (sck_step_hdr *)(h + io.hdr);
  memset(hdr, 0, sizeof *hdr);
  hdr->w0 = p->w0;
  hdr->n = p->n;
  hdr->n_rows = p->n_rows;
  hdr->eos_id = smp ? smp->eos_id : -1;
  hdr->pad_id = smp ? smp->pad_id : -1;
  memcpy(h + io.ids, p->ids + p->w0, (size_t)nw * sizeof(int32_t));
  int32_t *pos = (int32_t *)(h + io.pos);
  if (!p->segs) {
    for (int i = 0; i < nw; i++) pos[i] = p->w0 + i;
  } else {
    for (int s = 0; s < p->n_segs; s++)
      for (int i = p->segs[s]; i < p->segs[s + 1]; i++) pos[i] = i - p->segs[s];
  }
  if (hr > 0) {
    int32_t *rows = (int32_t *)(h + io.rows);
    sc_kernels_pick_row *prow = (sc_kernels_pick_row *)(h + io.prow);
    for (int j = 0; j < hr; j++) {
      rows[j] = j < p->n_rows ? (p->rows ? p->rows[j] : p->w0 + j) - p->w0 : 0;
      if (smp) prow[j] = j < p->n_rows ? smp->rows[j] : sc_kernels_pick_row{};
    }
  }
  prof_mark(c, SC_KK_UPLOAD, false);
  SCK_CUDA(cudaMemcpyAsync(c->d_in, h, io.bytes, cudaMemcpyHostToDevice, c->stream), err);
  if (smp && smp->banned &&
      (!c->banned_valid || memcmp(c->h_banned, smp->banned, (size_t)V) != 0)) {
    // Uploaded only when the contents change: a V-byte compare per pass
    // (microseconds) against a V-byte copy over PCIe. h_banned is pageable:
    // the async copy returns once it is staged, so the next pass may rewrite it.
    if (!c->h_banned) {
      c->h_banned = (uint8_t *)malloc((size_t)V);
      SC_CHECK(c->h_banned, err, SC_ERR_NOMEM, "out of memory for the banned-id bitmap");
    }
    c->banned_valid = false;
    memcpy(c->h_banned, smp->banned, (size_t)V);
    SCK_CUDA(cudaMemcpyAsync(c->d_banned, c->h_banned, (size_t)V, cudaMemcpyHostToDevice,
                             c->stream),
             err);
    c->banned_valid = true;
  }
  const uint8_t *banned = smp && smp->banned ? c->d_banned : nullptr;
  pd.hdr = (const sck_step_hdr *)(c->d_in + io.hdr);
  pd.ids = (const int32_t *)(c->d_in + io.ids);
  pd.pos = (const int32_t *)(c->d_in + io.pos);
  pd.tiles = (const sck_tile *)(c->d_in + io.tiles);
  pd.rows = (const int32_t *)(c->d_in + io.rows);
  pd.prow = (const sc_kernels_pick_row *)(c->d_in + io.prow);
  pd.sample = smp != nullptr;
  pd.banned = banned;
  SC_TRY(launch_body(c, &pd, err));
  c->cnt.passes++;

  if (hr == 0 && p->n_rows > 0) {
    SC_TRY(head_after(c, p, logits_host, smp, stats, banned, err));
  } else if (p->n_rows > 0) {
    // One copy of the picks back (and the logits when asked), one wait.
    prof_mark(c, SC_KK_DOWNLOAD, false);
    if (smp)
      SCK_CUDA(cudaMemcpyAsync(c->h_stats, c->d_stats, (size_t)p->n_rows * sizeof *stats,
                               cudaMemcpyDeviceToHost, c->stream),
               err);
    if (logits_host)
      SCK_CUDA(cudaMemcpyAsync(logits_host, c->logits, (size_t)p->n_rows * V * sizeof(float),
                               cudaMemcpyDeviceToHost, c->stream),
               err);
  }
  prof_mark(c, SC_KK_COUNT, false);  // the end
  SCK_CUDA(cudaStreamSynchronize(c->stream), err);
  c->cnt.syncs++;
  if (smp && hr > 0 && p->n_rows > 0)
    memcpy(stats, c->h_stats, (size_t)p->n_rows * sizeof *stats);
  SCK_CUDA(cudaGetLastError(), err);
  return SC_OK;
}

static sc_status forward_impl(sc_kernels_ctx *c, const sc_kernels_pass *p, float *logits_host,
                              const sc_kernels_sample *smp, sc_kernels_row_stats *stats,
                              sc_error *err) {
  SC_CHECK(c, err, SC_ERR_INVALID, "no context");
  const sc_status st = forward_pass(c, p, logits_host, smp, stats, err);
  // A pass that failed part-way may have copies from the pinned staging
  // still queued, and the next pass rewrites those buffers: drain them. (A
  // lost device fails here too; its error is already in err.)
  if (st != SC_OK && c->stream) (void)cudaStreamSynchronize(c->stream);
  return st;
}

extern "C" sc_status sc_kernels_forward(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                        float *logits_host, sc_error *err) {
  SC_CHECK(!p || p->n_rows == 0 || logits_host, err, SC_ERR_INVALID, "no logits buffer");
  return forward_impl(c, p, logits_host, nullptr, nullptr, err);
}

extern "C" sc_status sc_kernels_forward_stats(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                              const sc_kernels_sample *s,
                                              sc_kernels_row_stats *out, sc_error *err) {
  SC_CHECK(s && (out || (p && p->n_rows == 0)) && (s->rows || (p && p->n_rows == 0)), err,
           SC_ERR_INVALID, "no sample parameters or output");
  sc_kernels_row_stats dummy;
  return forward_impl(c, p, s->logits_host, s, out ? out : &dummy, err);
}

extern "C" sc_status sc_kernels_profile_step(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                             const sc_kernels_sample *s,
                                             sc_kernels_row_stats *stats, bool in_graph,
                                             sc_kernels_profile *out, sc_error *err) {
  SC_CHECK(c && out, err, SC_ERR_INVALID, "no context or output");
  memset(out, 0, sizeof *out);
  if (!c->prof_ev) {
    c->prof_ev = (cudaEvent_t *)calloc(MAX_PROF_EVENTS, sizeof *c->prof_ev);
    SC_CHECK(c->prof_ev, err, SC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < MAX_PROF_EVENTS; i++) SCK_CUDA(cudaEventCreate(&c->prof_ev[i]), err);
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    c->profiling = true;
    c->prof_capture = in_graph && attempt == 0 && !c->prof_no_graph;
    c->prof_n = 0;
    sc_status st = s ? forward_impl(c, p, s->logits_host, s, stats, err)
                     : forward_impl(c, p, nullptr, nullptr, nullptr, err);
    const bool graph = c->prof_capture;
    c->profiling = false;
    SC_TRY(st);
    SC_CHECK(c->prof_n < MAX_PROF_EVENTS, err, SC_ERR_INTERNAL,
             "more than %d timed groups in one step", MAX_PROF_EVENTS);
    memset(out, 0, sizeof *out);
    cudaError_t e = cudaSuccess;
    for (int i = 0; e == cudaSuccess && i + 1 < c->prof_n; i++) {
      float ms = 0.0f;
      e = cudaEventElapsedTime(&ms, c->prof_ev[i], c->prof_ev[i + 1]);
      const int k = c->prof_kind[i];
      if (e == cudaSuccess && k >= 0 && k < SC_KK_COUNT) {
        out->ms[k] += ms;
        out->groups[k]++;
      }
    }
    float total = 0.0f;
    if (e == cudaSuccess && c->prof_n > 1)
      e = cudaEventElapsedTime(&total, c->prof_ev[0], c->prof_ev[c->prof_n - 1]);
    if (e != cudaSuccess && graph) {
      // A driver that cannot time a graph's event nodes: eagerly instead.
      cudaGetLastError();
      SC_LOG_WARN("cuda: timing a graph's events failed (%s); profiling eagerly",
                  cudaGetErrorString(e));
      c->prof_no_graph = true;
      continue;
    }
    SCK_CUDA(e, err);
    out->total_ms = total;
    out->graph = graph;
    return SC_OK;
  }
  return sc_error_set(err, SC_ERR_INTERNAL, "profiling failed");
}

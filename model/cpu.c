/* cpu.c — the CPU backend: the bidirectional transformer forward pass in f32,
 * every weight product through oneDNN's matmul over converted weights or
 * OpenBLAS cblas_sgemm over the mapped ones (below).
 * It is the reference every other backend is compared to; itself it is
 * checked against a float64 numpy forward (tests/model/test_logits.py),
 * with and without oneDNN.
 *
 * Per layer (HF modeling_qwen2/qwen3, LLaDA's LLaDALlamaBlock):
 *   h = x + o_proj(attn(rope(qn(q_proj(rms(x)))), rope(kn(k_proj(rms(x)))),
 *                       v_proj(rms(x))))
 *   x = h + down(silu(gate(rms(h))) * up(rms(h)))
 * with no causal mask (softmax over every position), GQA (query head h reads
 * kv head h / (n_heads / n_kv_heads)), RoPE in HF's rotate-half layout (pair
 * i with i + head_dim/2), positions 0..n-1, then the final RMSNorm and the
 * lm_head for the requested rows only.
 *
 * Weights in oneDNN's layout (w->packed: int8, bf16, or f32 where oneDNN is
 * installed and the f32 copy fits; checkpoint.c f32_copy_fits): every matrix
 * product, and the attention's products and softmax, go through oneDNN
 * (dnnl.c) on its OpenMP team; the rest of the pass (norms, RoPE, SiLU,
 * residuals) is the code below in every mode.
 *
 * f32 over the mapping (no oneDNN, a copy that would not fit, or a
 * sanitizer build): f32 tensors aligned to 4 bytes are passed to sgemm in
 * place; every other dtype (bf16, f16, unaligned f32, and the quantized
 * int8 / q8_0 / q4_0 rows) is converted to f32 one block of rows at a time
 * (at most SCRATCH_FLOATS elements) into the context's scratch, on
 * OpenBLAS's thread count, just before the sgemm for that block. Nothing is
 * converted ahead of time, so memory is the mapped checkpoint plus one arena
 * per context. The attention goes through oneDNN when it is installed,
 * else through one sgemm pair per head and softmax_rows. */
#define _POSIX_C_SOURCE 200809L
#include "model_impl.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 4 Mi floats (16 MiB): large enough that each sgemm is efficient, small
 * enough that a 150k-row lm_head never needs a full f32 copy. */
#define SCRATCH_FLOATS ((int64_t)1 << 22)

void sc_cpu_set_threads(int n) { openblas_set_num_threads(n); }

/* ---- dtype conversion -------------------------------------------------------- */

static inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16; /* bf16 is the top half of an f32 */
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* IEEE 754 binary16 -> binary32, exact for every input (subnormals, inf, NaN). */
static inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    float f = (float)mant * 5.9604644775390625e-8f; /* mant * 2^-24 */
    return sign ? -f : f;
  }
  if (exp == 31) bits = sign | 0x7f800000u | (mant << 13);
  else bits = sign | ((exp + 112u) << 23) | (mant << 13);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

void sc_convert_to_f32(const uint8_t *src, sc_dtype dtype, size_t n, float *dst) {
  /* memcpy per element: the mapping gives no alignment guarantee. */
  switch (dtype) {
  case SC_DTYPE_F32: memcpy(dst, src, n * sizeof(float)); break;
  case SC_DTYPE_BF16:
    for (size_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, src + 2 * i, 2);
      dst[i] = bf16_to_f32(h);
    }
    break;
  case SC_DTYPE_F16:
    for (size_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, src + 2 * i, 2);
      dst[i] = f16_to_f32(h);
    }
    break;
  case SC_DTYPE_I8: /* rows with scales: sc_weight_rows_to_f32 (quant.c) */
  case SC_DTYPE_Q8_0:
  case SC_DTYPE_Q4_0:
  case SC_DTYPE_MIXED: break;
  }
}

/* ---- the context's arena ----------------------------------------------------- */

typedef struct cpu_layout {
  size_t x, xn, q, att, k, v, scores, gate, up, cos, sin, scratch, total; /* float offsets */
} cpu_layout;

typedef struct cpu_state {
  const sc_model *m;
  int max_seq;
  float *arena;
  float *x;      /* [S][H] residual stream */
  float *xn;     /* [S][H] normed input, then sublayer output */
  float *q;      /* [S][nh*hd] */
  float *att;    /* [S][nh*hd] attention output */
  float *k, *v;  /* [L][S][nkv*hd] per layer, post-RoPE, kept for later reuse */
  float *scores; /* [S][S] one head at a time */
  float *gate, *up; /* [S][I] */
  float *cos, *sin; /* [S][hd/2] */
  float *scratch;   /* converted weight rows */
  size_t scores_cap; /* floats in scores */
  sc_dnnl_ctx *dnnl; /* oneDNN's side (owned): the packed products, and the
                        attention; NULL without oneDNN */
  int threads;       /* for converting weight blocks: OpenBLAS's count */
} cpu_state;

static bool direct(const sc_weight *w) {
  return w->dtype == SC_DTYPE_F32 && ((uintptr_t)w->data % sizeof(float)) == 0;
}

static int64_t block_rows(const sc_weight *w) {
  int64_t r = SCRATCH_FLOATS / w->cols;
  if (r < 16) r = 16;
  return r < w->rows ? r : w->rows;
}

static int64_t scratch_need(const sc_weight *w) {
  return direct(w) || w->packed ? 0 : block_rows(w) * w->cols;
}

static cpu_layout layout(const sc_model *m, int S) {
  const sc_config *c = &m->cfg;
  const size_t H = (size_t)c->hidden, QD = (size_t)c->n_heads * c->head_dim,
               KD = (size_t)c->n_kv_heads * c->head_dim, FF = (size_t)c->intermediate;
  int64_t scratch = scratch_need(&m->lm_head);
  for (int l = 0; l < c->n_layers; l++) {
    const sc_layer *y = &m->layers[l];
    const sc_weight *ws[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wgate, &y->wup, &y->wdown};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
      if (scratch_need(ws[i]) > scratch) scratch = scratch_need(ws[i]);
  }
  if (scratch < c->hidden) scratch = c->hidden; /* one embedding row */
  /* Every buffer starts on a 64-byte boundary (16 floats). */
#define ROUND(n) (((n) + 15) & ~(size_t)15)
  cpu_layout o;
  size_t at = 0, s = (size_t)S;
  o.x = at, at += ROUND(s * H);
  o.xn = at, at += ROUND(s * H);
  o.q = at, at += ROUND(s * QD);
  o.att = at, at += ROUND(s * QD);
  o.k = at, at += ROUND((size_t)c->n_layers * s * KD);
  o.v = at, at += ROUND((size_t)c->n_layers * s * KD);
  /* One head's [S][S] scores (f32 path), or every head's scores for a
   * chunk of query rows, at least one row (oneDNN path). */
  const size_t nh = (size_t)c->n_heads;
  o.scores = at, at += ROUND(s * s > nh * s ? s * s : nh * s);
  o.gate = at, at += ROUND(s * FF);
  o.up = at, at += ROUND(s * FF);
  o.cos = at, at += ROUND(s * (size_t)c->head_dim / 2);
  o.sin = at, at += ROUND(s * (size_t)c->head_dim / 2);
  o.scratch = at, at += ROUND((size_t)scratch);
#undef ROUND
  o.total = at;
  return o;
}

static uint64_t cpu_ctx_bytes(const sc_model *m, int max_seq) {
  return (uint64_t)layout(m, max_seq).total * sizeof(float);
}

static void cpu_ctx_free(void *p) {
  cpu_state *s = p;
  if (!s) return;
  sc_dnnl_ctx_free(s->dnnl);
  free(s->arena);
  free(s);
}

static sc_status cpu_ctx_init(const sc_model *m, int max_seq, void **out, sc_error *err) {
  cpu_layout o = layout(m, max_seq);
  cpu_state *s = calloc(1, sizeof *s);
  SC_CHECK(s, err, SC_ERR_NOMEM, "out of memory");
  void *arena = NULL;
  if (posix_memalign(&arena, 64, o.total * sizeof(float)) != 0) {
    free(s);
    return sc_error_set(err, SC_ERR_NOMEM, "cannot allocate the %.1f MiB activation arena",
                        (double)o.total * 4.0 / 1048576.0);
  }
  s->m = m;
  s->max_seq = max_seq;
  s->arena = arena;
  s->x = s->arena + o.x;
  s->xn = s->arena + o.xn;
  s->q = s->arena + o.q;
  s->att = s->arena + o.att;
  s->k = s->arena + o.k;
  s->v = s->arena + o.v;
  s->scores = s->arena + o.scores;
  s->gate = s->arena + o.gate;
  s->up = s->arena + o.up;
  s->cos = s->arena + o.cos;
  s->sin = s->arena + o.sin;
  s->scratch = s->arena + o.scratch;
  s->scores_cap = o.gate - o.scores;
  s->threads = m->n_threads > 0 ? m->n_threads : openblas_get_num_threads();
  if (m->n_packs > 0) {
    sc_status st = sc_dnnl_ctx_new(m, &s->dnnl, err);
    if (st != SC_OK) {
      cpu_ctx_free(s);
      return st;
    }
  } else {
#ifndef SC_ASAN
    /* f32: oneDNN, when it is installed, runs the attention (its batched
     * matmuls and vectorised softmax) while OpenBLAS keeps the weight
     * products; the per-head OpenBLAS loop below is the fallback. At 1,056
     * tokens on the 0.5B shape the loop spent 37% of the pass there
     * (docs/measurements-history.md). Sanitizer builds keep the loop: it is
     * our code, which they are there to check, and with oneDNN's attention on a tiny
     * multi-head (not GQA) shape LeakSanitizer's exit-time tracer crashed
     * (signal 11) in tests/model/test_logits.py's llada-bf16. */
    sc_error why = {0};
    if (sc_dnnl_ctx_new(m, &s->dnnl, &why) != SC_OK) {
      SC_LOG_DEBUG("f32 attention through OpenBLAS: %s", why.msg);
      s->dnnl = NULL;
    }
#endif
  }
  /* RoPE tables: inv_freq_i = theta^(-2i/hd), angle = pos * inv_freq_i
   * (HF _compute_default_rope_parameters), computed in double. */
  const int half = m->cfg.head_dim / 2;
  for (int p = 0; p < max_seq; p++)
    for (int i = 0; i < half; i++) {
      double inv = pow(m->cfg.rope_theta, -2.0 * i / m->cfg.head_dim);
      s->cos[(size_t)p * half + i] = (float)cos(p * inv);
      s->sin[(size_t)p * half + i] = (float)sin(p * inv);
    }
  *out = s;
  return SC_OK;
}

/* ---- the pieces ----------------------------------------------------------- */

/* y[n][w.rows] = x[n][w.cols] * w^T (+ bias) */
static sc_status linear(cpu_state *s, const sc_weight *w, const float *x, int n,
                        const float *bias, float *y, sc_error *err) {
  if (w->packed) return sc_dnnl_linear(s->dnnl, w, x, n, bias, y, err);
  const int rows = (int)w->rows, cols = (int)w->cols;
  if (direct(w)) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, cols, 1.0f, x, cols,
                (const float *)w->data, cols, 0.0f, y, rows);
  } else {
    const int64_t br = block_rows(w);
    for (int64_t r0 = 0; r0 < w->rows; r0 += br) {
      int64_t nr = w->rows - r0 < br ? w->rows - r0 : br;
      sc_weight_rows_to_f32_mt(w, r0, nr, s->scratch, s->threads);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, (int)nr, cols, 1.0f, x, cols,
                  s->scratch, cols, 0.0f, y + r0, rows);
    }
  }
  if (bias)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < rows; j++) y[(size_t)i * rows + j] += bias[j];
  return SC_OK;
}

/* The products of one input with nm matrices (q, k, v; gate, up): through
 * oneDNN at once when they are packed (the input is quantized or rounded
 * once), else one by one. */
static sc_status linear_n(cpu_state *s, int nm, const sc_weight *const *ws, const float *x,
                          int n, const float *const *bias, float *const *ys, sc_error *err) {
  if (ws[0]->packed) return sc_dnnl_linear_n(s->dnnl, nm, ws, x, n, bias, ys, err);
  for (int i = 0; i < nm; i++) SC_TRY(linear(s, ws[i], x, n, bias[i], ys[i], err));
  return SC_OK;
}

/* out = x / sqrt(mean(x^2) + eps) * w over one row of d; out may be x. The
 * sum of squares in double, in eight running sums (so that the
 * compiler keeps them in one vector; a single sum cannot be reordered
 * without -ffast-math): 48 rows of 896 over 256 tokens took 5.6 ms against
 * 12.8 with one sum. */
SC_VECTOR_CLONES
static void rms_row(const float *x, const float *w, int d, float eps, float *out) {
  double s[8] = {0};
  int j = 0;
  for (; j + 8 <= d; j += 8)
    for (int k = 0; k < 8; k++) s[k] += (double)x[j + k] * x[j + k];
  double ss = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; j < d; j++) ss += (double)x[j] * x[j];
  float r = (float)(1.0 / sqrt(ss / d + eps));
  for (j = 0; j < d; j++) out[j] = x[j] * r * w[j];
}

/* e^x without a libm call or a branch, so that silu_mul vectorizes: x = n
 * ln2 + r with |r| <= ln2/2 (n rounded by adding and taking away 1.5 *
 * 2^23; ln2 split in two, Cody and Waite, so that n ln2 is exact enough),
 * e^r by its Taylor series to r^6 (the rest is under r^7/7! <= 1.2e-7
 * relative; measured against double exp over [-87, 88]: 2.4e-7, 2 ulp),
 * 2^n through the exponent bits. x is clamped to [-87, 88], where 2^n
 * stays a normal float (beyond it the SiLU does not change); a NaN becomes
 * -87 here, and the caller's own x keeps it a NaN. */
static inline float exp_vec(float x) {
  x = x > -87.0f ? x : -87.0f;
  x = x < 88.0f ? x : 88.0f;
  const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t e = ((int32_t)n + 127) * (1 << 23);
  float two_n;
  memcpy(&two_n, &e, sizeof two_n);
  return p * two_n;
}

/* g[i] = silu(g[i]) * u[i], silu(x) = x / (1 + e^-x). With libm's scalar
 * expf this loop took about 2.9 ms a layer over 256 tokens of the 0.5B
 * shape, some 70 ms of a 650 ms f32 pass on one thread while oneDNN's team
 * waited; vectorized, 0.3-0.65 ms. */
SC_VECTOR_CLONES
static void silu_mul(float *restrict g, const float *restrict u, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float x = g[i];
    g[i] = x / (1.0f + exp_vec(-x)) * u[i];
  }
}

/* silu_mul over rows [a, b) of [rows][ff] (sc_dnnl_for job). */
typedef struct silu_job {
  float *g;
  const float *u;
  size_t ff;
} silu_job;

static void silu_rows(void *arg, int64_t a, int64_t b) {
  const silu_job *j = arg;
  silu_mul(j->g + (size_t)a * j->ff, j->u + (size_t)a * j->ff, (size_t)(b - a) * j->ff);
}

/* Per-head RMSNorm (Qwen3 q_norm/k_norm) in place, then RoPE in place, for
 * rows at positions pos0.. */
static void heads_norm_rope(cpu_state *s, float *t, int n, int pos0, int nh, const float *nw) {
  const int hd = s->m->cfg.head_dim, half = hd / 2, ld = nh * hd;
  const float eps = (float)s->m->cfg.rms_eps;
  for (int i = 0; i < n; i++) {
    const size_t pos = (size_t)(pos0 + i); /* row i is position pos0 + i */
    const float *cs = s->cos + pos * half, *sn = s->sin + pos * half;
    for (int h = 0; h < nh; h++) {
      float *v = t + (size_t)i * ld + (size_t)h * hd;
      if (nw) rms_row(v, nw, hd, eps, v);
      for (int j = 0; j < half; j++) {
        float a = v[j], b = v[j + half];
        v[j] = a * cs[j] - b * sn[j];
        v[j + half] = b * cs[j] + a * sn[j];
      }
    }
  }
}

static void softmax_rows(float *x, int n, int d) {
  for (int i = 0; i < n; i++) {
    float *r = x + (size_t)i * d, mx = r[0];
    for (int j = 1; j < d; j++) mx = r[j] > mx ? r[j] : mx;
    double sum = 0;
    for (int j = 0; j < d; j++) {
      r[j] = expf(r[j] - mx);
      sum += r[j];
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < d; j++) r[j] *= inv;
  }
}

/* Positions [w0, w1) are computed; every other position's K/V is read from
 * the per-layer cache as the last run left it. Local row i is position w0+i.
 * With segs (n_segs + 1 offsets; then w0 = 0, w1 = n), the rows are several
 * sequences packed back to back: RoPE positions restart and attention stays
 * inside each one, while the matrix products run over all rows at once. */
static sc_status forward_impl(void *p, const int32_t *ids, int n, int w0, int w1,
                              const int32_t *segs, int n_segs, const int32_t *rows,
                              int n_rows, float *logits, sc_error *err) {
  cpu_state *s = p;
  const sc_model *m = s->m;
  const sc_config *c = &m->cfg;
  const int H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
  const int QD = nh * hd, KD = nkv * hd, FF = c->intermediate, V = c->vocab;
  const int group = nh / nkv;
  const float eps = (float)c->rms_eps, scale = 1.0f / sqrtf((float)hd);
  if (s->dnnl) sc_dnnl_ctx_begin(s->dnnl);

  const int nw = w1 - w0; /* rows computed this pass */
  for (int i = 0; i < nw; i++) sc_weight_rows_to_f32(&m->embed, ids[w0 + i], 1, s->x + (size_t)i * H);

  for (int l = 0; l < c->n_layers; l++) {
    const sc_layer *y = &m->layers[l];
    float *K = s->k + (size_t)l * s->max_seq * KD, *Vv = s->v + (size_t)l * s->max_seq * KD;
    float *Kw = K + (size_t)w0 * KD, *Vw = Vv + (size_t)w0 * KD; /* the window's rows */
    for (int i = 0; i < nw; i++)
      rms_row(s->x + (size_t)i * H, y->attn_norm, H, eps, s->xn + (size_t)i * H);
    {
      const sc_weight *ws[3] = {&y->wq, &y->wk, &y->wv};
      const float *bs[3] = {y->bq, y->bk, y->bv};
      float *ys[3] = {s->q, Kw, Vw};
      SC_TRY(linear_n(s, 3, ws, s->xn, nw, bs, ys, err));
    }
    if (!segs) {
      heads_norm_rope(s, s->q, nw, w0, nh, y->q_norm);
      heads_norm_rope(s, Kw, nw, w0, nkv, y->k_norm);
      /* Window queries attend to all n keys: fresh ones inside the window,
       * cached ones outside it. */
      if (s->dnnl)
        SC_TRY(sc_dnnl_attention(s->dnnl, s->q, K, Vv, nw, n, nh, nkv, hd, scale, s->scores,
                                 s->scores_cap, s->att, err));
      for (int h = 0; !s->dnnl && h < nh; h++) {
        const int g = h / group;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nw, n, hd, scale, s->q + h * hd,
                    QD, K + g * hd, KD, 0.0f, s->scores, n);
        softmax_rows(s->scores, nw, n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nw, hd, n, 1.0f, s->scores, n,
                    Vv + g * hd, KD, 0.0f, s->att + h * hd, QD);
      }
    } else {
      for (int sg = 0; sg < n_segs; sg++) {
        const int a = segs[sg], len = segs[sg + 1] - segs[sg];
        float *qs = s->q + (size_t)a * QD, *ks = K + (size_t)a * KD, *vs = Vv + (size_t)a * KD;
        heads_norm_rope(s, qs, len, 0, nh, y->q_norm);
        heads_norm_rope(s, ks, len, 0, nkv, y->k_norm);
        if (s->dnnl)
          SC_TRY(sc_dnnl_attention(s->dnnl, qs, ks, vs, len, len, nh, nkv, hd, scale, s->scores,
                                   s->scores_cap, s->att + (size_t)a * QD, err));
        for (int h = 0; !s->dnnl && h < nh; h++) {
          const int g = h / group;
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, len, hd, scale,
                      qs + h * hd, QD, ks + g * hd, KD, 0.0f, s->scores, len);
          softmax_rows(s->scores, len, len);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, len, hd, len, 1.0f,
                      s->scores, len, vs + g * hd, KD, 0.0f, s->att + (size_t)a * QD + h * hd,
                      QD);
        }
      }
    }
    SC_TRY(linear(s, &y->wo, s->att, nw, NULL, s->xn, err));
    for (size_t i = 0; i < (size_t)nw * H; i++) s->x[i] += s->xn[i];

    for (int i = 0; i < nw; i++)
      rms_row(s->x + (size_t)i * H, y->mlp_norm, H, eps, s->xn + (size_t)i * H);
    {
      const sc_weight *ws[2] = {&y->wgate, &y->wup};
      const float *bs[2] = {NULL, NULL};
      float *ys[2] = {s->gate, s->up};
      SC_TRY(linear_n(s, 2, ws, s->xn, nw, bs, ys, err));
    }
    silu_job sj = {s->gate, s->up, (size_t)FF};
    sc_dnnl_for(s->dnnl, nw, FF, SC_DNNL_GRAIN, silu_rows, &sj);
    SC_TRY(linear(s, &y->wdown, s->gate, nw, NULL, s->xn, err));
    for (size_t i = 0; i < (size_t)nw * H; i++) s->x[i] += s->xn[i];
  }

  /* Final norm and lm_head for the requested rows only, max_seq rows at a
   * time (xn holds that many). */
  for (int j0 = 0; j0 < n_rows; j0 += s->max_seq) {
    int cnt = n_rows - j0 < s->max_seq ? n_rows - j0 : s->max_seq;
    for (int j = 0; j < cnt; j++) {
      int r = rows ? rows[j0 + j] - w0 : j0 + j;
      rms_row(s->x + (size_t)r * H, m->final_norm, H, eps, s->xn + (size_t)j * H);
    }
    SC_TRY(linear(s, &m->lm_head, s->xn, cnt, NULL, logits + (size_t)j0 * V, err));
  }
  return SC_OK;
}

static sc_status cpu_forward(void *p, const int32_t *ids, int n, int w0, int w1,
                             const int32_t *rows, int n_rows, float *logits, sc_error *err) {
  return forward_impl(p, ids, n, w0, w1, NULL, 0, rows, n_rows, logits, err);
}

static sc_status cpu_forward_packed(void *p, const int32_t *ids, const int32_t *offsets,
                                    int n_seqs, const int32_t *rows, int n_rows,
                                    float *logits, sc_error *err) {
  int n = offsets[n_seqs];
  return forward_impl(p, ids, n, 0, n, offsets, n_seqs, rows, n_rows, logits, err);
}

/* Moves K/V rows [src0, src1) to dst0 in every layer and turns K by the
 * position change: RoPE rotates pair (a, b) of frequency i by pos * inv_i,
 * so a row computed at p and moved to p + d needs one more rotation by
 * d * inv_i (rotations compose), from the same cos/sin tables. */
static sc_status cpu_shift(void *p, int src0, int src1, int dst0, sc_error *err) {
  cpu_state *s = p;
  const sc_config *c = &s->m->cfg;
  const int KD = c->n_kv_heads * c->head_dim, hd = c->head_dim, half = hd / 2;
  const int d = dst0 - src0, ad = d < 0 ? -d : d, cnt = src1 - src0;
  const float *cs = s->cos + (size_t)ad * half, *sn = s->sin + (size_t)ad * half;
  const float sign = d < 0 ? -1.0f : 1.0f;
  for (int l = 0; l < c->n_layers; l++) {
    float *K = s->k + (size_t)l * s->max_seq * KD, *V = s->v + (size_t)l * s->max_seq * KD;
    memmove(K + (size_t)dst0 * KD, K + (size_t)src0 * KD, (size_t)cnt * KD * sizeof *K);
    memmove(V + (size_t)dst0 * KD, V + (size_t)src0 * KD, (size_t)cnt * KD * sizeof *V);
    for (int r = 0; r < cnt; r++)
      for (int h = 0; h < c->n_kv_heads; h++) {
        float *v = K + (size_t)(dst0 + r) * KD + (size_t)h * hd;
        for (int j = 0; j < half; j++) {
          float a = v[j], b = v[j + half], co = cs[j], si = sign * sn[j];
          v[j] = a * co - b * si;
          v[j + half] = b * co + a * si;
        }
      }
  }
  (void)err;
  return SC_OK;
}

const sc_backend_ops sc_cpu_backend = {
    .name = "cpu",
    .ctx_bytes = cpu_ctx_bytes,
    .ctx_init = cpu_ctx_init,
    .ctx_free = cpu_ctx_free,
    .forward = cpu_forward,
    .forward_packed = cpu_forward_packed,
    .shift = cpu_shift,
};

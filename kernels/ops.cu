// ops.cu — the elementwise, normalisation, attention and epilogue kernels of
// the forward pass (the GEMMs are cuBLAS, gemm.cu). Each kernel says how it
// splits work; shapes are [rows][cols], row-major. The math follows
// model/cpu.c, the reference: HF Qwen2/Qwen3 modeling code for RMSNorm,
// rotate-half RoPE and SwiGLU.
#include "kernels_impl.h"

#include <math.h>

#define WARP 32

static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
static __device__ __forceinline__ float warp_max(float v) {
  for (int o = WARP / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread
// gets the total. red: 32 floats of shared memory.
static __device__ float block_sum(float v, float *red) {
  const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
  v = warp_sum(v);
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[w] = v;
  __syncthreads();
  float t = lane < nw ? red[lane] : 0.0f;
  return warp_sum(t);
}

static unsigned blocks_for(size_t n, unsigned threads) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b < 65535u * 16u ? b : 65535u * 16u);
}

// ---- embedding gather --------------------------------------------------------
// Grid: one block per row i (n blocks); threads stride over H.
// ids [n], table bf16 [V][H], x f32 [n][H].
__global__ void k_embed(const int32_t *ids, const sck_bf16 *table, int H, float *x) {
  const int i = blockIdx.x;
  const sck_bf16 *src = table + (size_t)ids[i] * H;
  float *dst = x + (size_t)i * H;
  for (int j = threadIdx.x; j < H; j += blockDim.x) dst[j] = __bfloat162float(src[j]);
}

cudaError_t sck_embed(const int32_t *ids, int n, const sck_bf16 *table, int H, float *x,
                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  k_embed<<<n, 256, 0, stream>>>(ids, table, H, x);
  return cudaGetLastError();
}

// ---- residual add + RMSNorm --------------------------------------------------
// Grid: one block of 256 threads per row; each thread strides over H twice
// (add + sum of squares, then scale). x f32 [n][H], delta/out bf16 [n][H].
__global__ void k_add_rmsnorm(float *x, const sck_bf16 *delta, const float *w, float eps, int H,
                              sck_bf16 *out) {
  __shared__ float red[WARP];
  const size_t base = (size_t)blockIdx.x * H;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    float v = x[base + j];
    if (delta) {
      v += __bfloat162float(delta[base + j]);
      x[base + j] = v;
    }
    ss += v * v;
  }
  ss = block_sum(ss, red);
  const float r = rsqrtf(ss / (float)H + eps);
  for (int j = threadIdx.x; j < H; j += blockDim.x)
    out[base + j] = __float2bfloat16(x[base + j] * r * w[j]);
}

cudaError_t sck_add_rmsnorm(float *x, const sck_bf16 *delta, const float *w, float eps, int H,
                            int n, sck_bf16 *out, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  k_add_rmsnorm<<<n, 256, 0, stream>>>(x, delta, w, eps, H, out);
  return cudaGetLastError();
}

// ---- QKV bias, q/k RMSNorm, RoPE, K/V into the cache -------------------------
// Grid: one warp per (row, head slot), slots 0..nh-1 are q heads, then nkv k
// heads, then nkv v heads; 8 warps per block. Lane l handles the rotate-half
// pairs (j, j + hd/2) for j = l, l+32, ... so a pair never crosses lanes.
// qkv bf16 [n][nh*hd + 2*nkv*hd]; kc, vc bf16 [*][nkv*hd]; cos/sin f32
// [*][hd/2]; pos [n].
__global__ void k_qkv_post(sck_bf16 *qkv, int n, int nh, int nkv, int hd, const float *bias,
                           const float *qn, const float *kn, float eps, const float *cos_t,
                           const float *sin_t, const int32_t *pos, sck_bf16 *kc, sck_bf16 *vc,
                           int cache_row0, const sck_step_hdr *hdr, const float *src32) {
  const int slots = nh + 2 * nkv;
  if (hdr) cache_row0 += hdr->w0;
  const long gw = (long)blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
  if (gw >= (long)n * slots) return;  // whole warps exit together
  const int lane = threadIdx.x % WARP;
  const int i = (int)(gw / slots), s = (int)(gw % slots);
  const int QD = nh * hd, KD = nkv * hd, half = hd / 2;
  sck_bf16 *src = qkv + (size_t)i * (QD + 2 * KD) + (size_t)s * hd;  // slot s at column s*hd
  // The GEMM's output: bf16 in qkv, or f32 in src32 (the narrow GEMM's
  // split-k sums); q goes back to qkv either way.
  const float *s32 = src32 ? src32 + (size_t)i * (QD + 2 * KD) + (size_t)s * hd : nullptr;
  auto in = [&](int j) { return s32 ? s32[j] : __bfloat162float(src[j]); };
  const float *b = bias ? bias + (size_t)s * hd : nullptr;
  const size_t crow = (size_t)(cache_row0 + i) * KD;
  if (s >= nh + nkv) {  // v head: bias only
    sck_bf16 *dst = vc + crow + (size_t)(s - nh - nkv) * hd;
    for (int j = lane; j < hd; j += WARP) {
      float v = in(j);
      if (b) v += b[j];
      dst[j] = __float2bfloat16(v);
    }
    return;
  }
  const bool is_q = s < nh;
  const float *nw = is_q ? qn : kn;
  sck_bf16 *dst = is_q ? src : kc + crow + (size_t)(s - nh) * hd;
  float r = 1.0f;
  if (nw) {
    float ss = 0.0f;
    for (int j = lane; j < hd; j += WARP) {
      float v = in(j) + (b ? b[j] : 0.0f);
      ss += v * v;
    }
    ss = warp_sum(ss);
    r = rsqrtf(ss / (float)hd + eps);
  }
  const size_t p = (size_t)pos[i] * half;
  for (int j = lane; j < half; j += WARP) {
    float a = in(j) + (b ? b[j] : 0.0f);
    float c = in(j + half) + (b ? b[j + half] : 0.0f);
    if (nw) {
      a = a * r * nw[j];
      c = c * r * nw[j + half];
    }
    const float cs = cos_t[p + j], sn = sin_t[p + j];
    dst[j] = __float2bfloat16(a * cs - c * sn);
    dst[j + half] = __float2bfloat16(c * cs + a * sn);
  }
}

cudaError_t sck_qkv_post(sck_bf16 *qkv, int n, int nh, int nkv, int hd, const float *bias,
                         const float *qn, const float *kn, float eps, const float *cos_t,
                         const float *sin_t, const int32_t *pos, sck_bf16 *kc, sck_bf16 *vc,
                         int cache_row0, const sck_step_hdr *hdr, const float *src32,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const size_t warps = (size_t)n * (size_t)(nh + 2 * nkv);
  const unsigned blocks = (unsigned)((warps + 7) / 8);
  k_qkv_post<<<blocks, 256, 0, stream>>>(qkv, n, nh, nkv, hd, bias, qn, kn, eps, cos_t, sin_t,
                                         pos, kc, vc, cache_row0, hdr, src32);
  return cudaGetLastError();
}

// ---- attention -----------------------------------------------------------------
// Flash-style bidirectional GQA attention on CUDA cores.
// Grid: x = key chunk, y = tile (a run of tq query rows sharing one key
// range), z = kv head g. Block: 128 threads = 4 warps. A block handles the
// qv = tq * group query vectors of its tile that read kv head g (vector
// v = row * group + head-in-group), so each K/V element loaded into shared
// memory serves every query head of the group. Warp w owns vectors
// w, w+4, w+8, ...; keys go through shared memory 32 at a time (lane = key
// for the scores, lane = output dimension for P*V); the softmax is online
// (running max m and sum l per vector, exp2 with log2(e) folded into the
// query scale), so no score matrix exists beyond one 32-key tile.
// Shared memory: Qs f32 [qv][hd+2], Ks/Vs bf16 [32][hd+2] (the +2 staggers
// rows across banks), Ps f32 [qv][32].
#define ATT_THREADS 128
#define ATT_WARPS (ATT_THREADS / WARP)
#define ATT_KT 32

template <int HD, int QV>
__global__ void __launch_bounds__(ATT_THREADS)
    k_attn(const sck_bf16 *__restrict__ q, int ldq, const sck_bf16 *__restrict__ k,
           const sck_bf16 *__restrict__ v, sck_bf16 *__restrict__ out, const sck_tile *tiles,
           int nh, int nkv, int hd, int tq, int n_chunks, float scale_log2,
           float *__restrict__ part) {
  constexpr int NI = QV / ATT_WARPS;   // vectors per warp
  constexpr int NJ = (HD + WARP - 1) / WARP;  // output dims per lane
  extern __shared__ float4 smem_raw[];
  const int stride = hd + 2;
  float *Qs = reinterpret_cast<float *>(smem_raw);
  sck_bf16 *Ks = reinterpret_cast<sck_bf16 *>(Qs + (size_t)QV * stride);
  sck_bf16 *Vs = Ks + (size_t)ATT_KT * stride;
  // hd is even, so every bf16 row start (and Ps) stays 4-byte aligned.
  float *Ps = reinterpret_cast<float *>(Vs + (size_t)ATT_KT * stride);

  const sck_tile t = tiles[blockIdx.y];
  const int chunk = blockIdx.x, g = blockIdx.z, group = nh / nkv;
  const int KD = nkv * hd;
  const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
  // This block's chunk of the tile's keys (sck_attention: rounded to the key tile).
  const int chunk_keys = ((t.k1 - t.k0 + n_chunks - 1) / n_chunks + ATT_KT - 1) / ATT_KT * ATT_KT;
  const int kbeg = t.k0 + chunk * chunk_keys;
  const int kend = min(t.k1, kbeg + chunk_keys);

  // Q for this block's vectors, pre-scaled by log2(e)/sqrt(hd).
  for (int e = threadIdx.x; e < QV * hd; e += ATT_THREADS) {
    const int vv = e / hd, d = e % hd, r = vv / group, hh = vv % group;
    float val = 0.0f;
    if (r < tq && r < t.nq)
      val = __bfloat162float(q[(size_t)(t.q0 + r) * ldq + (size_t)(g * group + hh) * hd + d]) *
            scale_log2;
    Qs[vv * stride + d] = val;
  }

  float m[NI], l[NI], acc[NI][NJ];
#pragma unroll
  for (int i = 0; i < NI; i++) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < NJ; j++) acc[i][j] = 0.0f;
  }

  for (int k0 = kbeg; k0 < kend; k0 += ATT_KT) {
    __syncthreads();  // the previous tile's K/V (and Q on entry) are done with
    const int nk = min(ATT_KT, kend - k0);
    for (int e = threadIdx.x; e < ATT_KT * hd; e += ATT_THREADS) {
      const int kk = e / hd, d = e % hd;
      sck_bf16 kv = __float2bfloat16(0.0f), vv = kv;
      if (kk < nk) {
        const size_t at = (size_t)(k0 + kk) * KD + (size_t)g * hd + d;
        kv = k[at];
        vv = v[at];
      }
      Ks[kk * stride + d] = kv;
      Vs[kk * stride + d] = vv;
    }
    __syncthreads();

    // Scores: lane = key; s[i] = q_i . k_lane.
    float s[NI];
#pragma unroll
    for (int i = 0; i < NI; i++) s[i] = 0.0f;
    const sck_bf16 *kr = Ks + lane * stride;
    for (int d = 0; d < hd; d += 2) {
      const float2 kf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(kr + d));
#pragma unroll
      for (int i = 0; i < NI; i++) {
        const float *qr = Qs + (w + ATT_WARPS * i) * stride + d;
        s[i] = fmaf(qr[0], kf.x, fmaf(qr[1], kf.y, s[i]));
      }
    }
    // Online softmax per vector: new max, rescale, probabilities to Ps.
#pragma unroll
    for (int i = 0; i < NI; i++) {
      const float sv = lane < nk ? s[i] : -INFINITY;
      const float mn = fmaxf(m[i], warp_max(sv));  // finite: nk >= 1
      const float alpha = exp2f(m[i] - mn);        // 0 on the first tile
      const float p = exp2f(sv - mn);
      l[i] = l[i] * alpha + warp_sum(p);
      m[i] = mn;
      Ps[(w + ATT_WARPS * i) * ATT_KT + lane] = p;
#pragma unroll
      for (int j = 0; j < NJ; j++) acc[i][j] *= alpha;
    }
    __syncwarp();
    // P * V: lane = output dimension d = lane + 32 j.
    for (int kk = 0; kk < nk; kk++) {
      float vr[NJ];
#pragma unroll
      for (int j = 0; j < NJ; j++) {
        const int d = lane + WARP * j;
        vr[j] = d < hd ? __bfloat162float(Vs[kk * stride + d]) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < NI; i++) {
        const float p = Ps[(w + ATT_WARPS * i) * ATT_KT + kk];
#pragma unroll
        for (int j = 0; j < NJ; j++) acc[i][j] = fmaf(p, vr[j], acc[i][j]);
      }
    }
  }

  // Output: normalised directly, or the partial (acc, m, l) for the combine.
#pragma unroll
  for (int i = 0; i < NI; i++) {
    const int vv = w + ATT_WARPS * i, r = vv / group, hh = vv % group;
    if (r >= tq || r >= t.nq) continue;
    if (n_chunks == 1) {
      const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
      sck_bf16 *o = out + (size_t)(t.q0 + r) * (nh * hd) + (size_t)(g * group + hh) * hd;
#pragma unroll
      for (int j = 0; j < NJ; j++) {
        const int d = lane + WARP * j;
        if (d < hd) o[d] = __float2bfloat16(acc[i][j] * inv);
      }
    } else {
      float *pp = part + (((size_t)blockIdx.y * nkv + g) * n_chunks + chunk) * QV * stride +
                  (size_t)vv * stride;
#pragma unroll
      for (int j = 0; j < NJ; j++) {
        const int d = lane + WARP * j;
        if (d < hd) pp[d] = acc[i][j];
      }
      if (lane == 0) {
        pp[hd] = m[i];
        pp[hd + 1] = l[i];
      }
    }
  }
}

// Combine the key chunks of split attention. Grid: one block per (tile, kv
// head) (x = tile * nkv + g); warp w takes vectors w, w+4, ...; lane strides
// over dimensions. part f32 [tiles*nkv][n_chunks][qv][hd+2].
__global__ void k_attn_combine(const float *__restrict__ part, const sck_tile *tiles, int nh,
                               int nkv, int hd, int tq, int qv, int n_chunks,
                               sck_bf16 *__restrict__ out) {
  const int tile = blockIdx.x / nkv, g = blockIdx.x % nkv, group = nh / nkv;
  const sck_tile t = tiles[tile];
  const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
  const int stride = hd + 2;
  const float *base = part + (size_t)blockIdx.x * n_chunks * qv * stride;
  for (int vv = w; vv < qv; vv += blockDim.x / WARP) {
    const int r = vv / group, hh = vv % group;
    if (r >= tq || r >= t.nq) continue;
    float M = -INFINITY;
    for (int c = 0; c < n_chunks; c++) M = fmaxf(M, base[((size_t)c * qv + vv) * stride + hd]);
    float L = 0.0f;
    for (int c = 0; c < n_chunks; c++) {
      const float *pp = base + ((size_t)c * qv + vv) * stride;
      if (pp[hd + 1] > 0.0f) L += pp[hd + 1] * exp2f(pp[hd] - M);
    }
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    sck_bf16 *o = out + (size_t)(t.q0 + r) * (nh * hd) + (size_t)(g * group + hh) * hd;
    for (int d = lane; d < hd; d += WARP) {
      float a = 0.0f;
      for (int c = 0; c < n_chunks; c++) {
        const float *pp = base + ((size_t)c * qv + vv) * stride;
        if (pp[hd + 1] > 0.0f) a += pp[d] * exp2f(pp[hd] - M);
      }
      o[d] = __float2bfloat16(a * inv);
    }
  }
}

// ---- attention on tensor cores --------------------------------------------------
// FlashAttention-2's forward (Dao 2023, arXiv:2307.08691) for a non-causal
// GQA block, on mma.sync.m16n8k16 (bf16 operands, f32 accumulators; PTX
// ISA, "Matrix Fragments for mma.m16n8k16": for lane l, g = l/4 and
// t = l%4; A's four registers hold rows g, g+8 at columns 2t..2t+1 and
// 2t+8..2t+9; B's two hold rows (k) 2t..2t+1 and 2t+8..2t+9 at column
// (n) g; C's four hold rows g, g+8 at columns 2t..2t+1; in each register
// the lower index is the lower half).
// Grid as k_attn: x = key chunk, y = tile, z = kv head g. Block: 4 warps,
// 64 query vectors of kv head g (vector v = row * group + head-in-group:
// the group's heads share each K/V element loaded), warp w rows 16w..16w+15
// as the mma's M. Keys through shared memory 64 at a time (K and V rows
// padded by 8 elements: a warp's 32-bit fragment loads hit 32 banks).
// Q stays in registers as A fragments; S = Q K^T per warp is 16 x 64 f32
// (8 n-tiles), scaled by log2(e)/sqrt(hd) after the product, masked past
// the chunk's last key, then the online softmax per row (the 4 lanes of a
// row reduce with two shuffles), P rounded to bf16 becomes A fragments in
// place (a C tile's layout is half an A tile's), and O += P V with V's
// B fragments read as two 16-bit loads each. Head sizes below the
// instance's HD are zero-padded (Q and K columns past hd are 0).
// Split keys: each block writes its unnormalised O, m and l to part, and
// the last block of its (tile, kv head) to arrive (an atomic counter,
// after a fence: the CUDA guide's "last block" reduction) merges all
// chunks and resets the counter for the next launch or graph replay.
#define MMA_KT 64

static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower half)
  return *reinterpret_cast<uint32_t *>(&h);
}

static __device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0,
                                                uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int HD>
__global__ void __launch_bounds__(128)
    k_attn_mma(const sck_bf16 *__restrict__ q, int ldq, const sck_bf16 *__restrict__ k,
               const sck_bf16 *__restrict__ v, sck_bf16 *__restrict__ out,
               const sck_tile *tiles, int nh, int nkv, int hd, int tq, int n_chunks,
               float scale_log2, float *__restrict__ part, int *__restrict__ counters) {
  constexpr int ST = HD + 8;  // shared row stride (elements)
  constexpr int NT = MMA_KT / 8, NKS = HD / 16, NDT = HD / 8;
  __shared__ __align__(16) sck_bf16 Ks[MMA_KT * ST];
  __shared__ __align__(16) sck_bf16 Vs[MMA_KT * ST];
  __shared__ int s_last;

  const sck_tile t = tiles[blockIdx.y];
  const int chunk = blockIdx.x, g = blockIdx.z, group = nh / nkv, KD = nkv * hd;
  const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, gr = lane / 4, tg = lane % 4;
  const int chunk_keys =
      ((t.k1 - t.k0 + n_chunks - 1) / n_chunks + MMA_KT - 1) / MMA_KT * MMA_KT;
  const int kbeg = t.k0 + chunk * chunk_keys, kend = min(t.k1, kbeg + chunk_keys);

  // The two query vectors (rows of the mma) this lane's fragments touch.
  int vrow[2];
  bool vok[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int vv = 16 * w + gr + 8 * h, r = vv / group;
    vrow[h] = vv;
    vok[h] = r < tq && r < t.nq;
  }
  auto qptr = [&](int h) {
    const int vv = vrow[h], r = vv / group, hh = vv % group;
    return q + (size_t)(t.q0 + r) * ldq + (size_t)(g * group + hh) * hd;
  };
  uint32_t qf[NKS][4];
#pragma unroll
  for (int ks = 0; ks < NKS; ks++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int h = j & 1, col = ks * 16 + 2 * tg + (j & 2 ? 8 : 0);
      qf[ks][j] = vok[h] && col < hd ? *reinterpret_cast<const uint32_t *>(qptr(h) + col) : 0u;
    }

  float o[NDT][4];
#pragma unroll
  for (int j = 0; j < NDT; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int k0 = kbeg; k0 < kend; k0 += MMA_KT) {
    const int nk = min(MMA_KT, kend - k0);
    __syncthreads();  // the previous tile's K/V are done with
    // K and V rows, 32 bits at a time (hd is even); zeros past hd and nk.
    for (int e = threadIdx.x; e < MMA_KT * (HD / 2); e += blockDim.x) {
      const int kk = e / (HD / 2), d = 2 * (e % (HD / 2));
      uint32_t kv = 0u, vv = 0u;
      if (kk < nk && d < hd) {
        const size_t at = (size_t)(k0 + kk) * KD + (size_t)g * hd + d;
        kv = *reinterpret_cast<const uint32_t *>(k + at);
        vv = *reinterpret_cast<const uint32_t *>(v + at);
      }
      *reinterpret_cast<uint32_t *>(Ks + kk * ST + d) = kv;
      *reinterpret_cast<uint32_t *>(Vs + kk * ST + d) = vv;
    }
    __syncthreads();

    float s[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < NKS; ks++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++) {
        const sck_bf16 *kr = Ks + (nt * 8 + gr) * ST + ks * 16 + 2 * tg;
        mma_bf16(s[nt], qf[ks], *reinterpret_cast<const uint32_t *>(kr),
                 *reinterpret_cast<const uint32_t *>(kr + 8));
      }
    // Scale, mask, and the rows' new maxima (rows gr and gr + 8).
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int key = nt * 8 + 2 * tg + (j & 1);
        s[nt][j] = key < nk ? s[nt][j] * scale_log2 : -INFINITY;
        mx[j >> 1] = fmaxf(mx[j >> 1], s[nt][j]);
      }
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      const float mn = fmaxf(m[h], mx[h]);  // finite: nk >= 1
      alpha[h] = exp2f(m[h] - mn);          // 0 on the first tile
      m[h] = mn;
      l[h] *= alpha[h];
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int j = 0; j < 4; j++) {
        s[nt][j] = exp2f(s[nt][j] - m[j >> 1]);
        l[j >> 1] += s[nt][j];  // this lane's columns; the quad sums at the end
      }
#pragma unroll
    for (int j = 0; j < NDT; j++) {
      o[j][0] *= alpha[0], o[j][1] *= alpha[0];
      o[j][2] *= alpha[1], o[j][3] *= alpha[1];
    }
    // O += P V, 16 keys per k-step: P's A fragment from two S tiles.
#pragma unroll
    for (int kt = 0; kt < MMA_KT / 16; kt++) {
      const uint32_t pa[4] = {pack_bf16(s[2 * kt][0], s[2 * kt][1]),
                              pack_bf16(s[2 * kt][2], s[2 * kt][3]),
                              pack_bf16(s[2 * kt + 1][0], s[2 * kt + 1][1]),
                              pack_bf16(s[2 * kt + 1][2], s[2 * kt + 1][3])};
      const sck_bf16 *vr = Vs + (kt * 16 + 2 * tg) * ST + gr;
#pragma unroll
      for (int dt = 0; dt < NDT; dt++) {
        const sck_bf16 *c = vr + dt * 8;
        __nv_bfloat162 b0, b1;
        b0.x = c[0], b0.y = c[ST], b1.x = c[8 * ST], b1.y = c[9 * ST];
        mma_bf16(o[dt], pa, *reinterpret_cast<uint32_t *>(&b0),
                 *reinterpret_cast<uint32_t *>(&b1));
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }

  const int stride = HD + 2;
  if (n_chunks == 1) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      if (!vok[h]) continue;
      const int vv = vrow[h], r = vv / group, hh = vv % group;
      sck_bf16 *o_row = out + (size_t)(t.q0 + r) * (nh * hd) + (size_t)(g * group + hh) * hd;
      const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
#pragma unroll
      for (int dt = 0; dt < NDT; dt++) {
        const int d = dt * 8 + 2 * tg;
        if (d < hd)
          *reinterpret_cast<__nv_bfloat162 *>(o_row + d) =
              __floats2bfloat162_rn(o[dt][2 * h] * inv, o[dt][2 * h + 1] * inv);
      }
    }
    return;
  }
  // Split keys: the partial, then the last block of (tile, g) merges.
  const size_t tg_index = (size_t)blockIdx.y * nkv + g;
  float *mine = part + (tg_index * n_chunks + chunk) * 64 * stride;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float *pp = mine + (size_t)vrow[h] * stride;
#pragma unroll
    for (int dt = 0; dt < NDT; dt++) {
      pp[dt * 8 + 2 * tg] = o[dt][2 * h];
      pp[dt * 8 + 2 * tg + 1] = o[dt][2 * h + 1];
    }
    if (tg == 0) {
      pp[HD] = m[h];
      pp[HD + 1] = l[h];
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(&counters[tg_index], 1) == n_chunks - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  const float *base = part + tg_index * n_chunks * 64 * stride;
  for (int vv = w; vv < 64; vv += 4) {
    const int r = vv / group, hh = vv % group;
    if (r >= tq || r >= t.nq) continue;
    float M = -INFINITY, L = 0.0f;
    for (int c = 0; c < n_chunks; c++) M = fmaxf(M, __ldcg(base + ((size_t)c * 64 + vv) * stride + HD));
    for (int c = 0; c < n_chunks; c++) {
      const float *pp = base + ((size_t)c * 64 + vv) * stride;
      const float lc = __ldcg(pp + HD + 1);
      if (lc > 0.0f) L += lc * exp2f(__ldcg(pp + HD) - M);
    }
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    sck_bf16 *o_row = out + (size_t)(t.q0 + r) * (nh * hd) + (size_t)(g * group + hh) * hd;
    for (int d = lane; d < hd; d += WARP) {
      float a = 0.0f;
      for (int c = 0; c < n_chunks; c++) {
        const float *pp = base + ((size_t)c * 64 + vv) * stride;
        const float lc = __ldcg(pp + HD + 1);
        if (lc > 0.0f) a += __ldcg(pp + d) * exp2f(__ldcg(pp + HD) - M);
      }
      o_row[d] = __float2bfloat16(a * inv);
    }
  }
  if (threadIdx.x == 0) counters[tg_index] = 0;
}

bool sck_attn_plan_for(int head_dim, int group, sck_attn_plan *out) {
  if (head_dim < 2 || head_dim % 2 || head_dim > 256 || group < 1) return false;
  sck_attn_plan p;
  p.hd_tmpl = head_dim <= 32 ? 32 : head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256;
  p.qv = p.hd_tmpl == 256 ? 32 : 64;
  if (group > p.qv) return false;
  p.tq = p.qv / group;
  const size_t stride = (size_t)head_dim + 2;
  p.smem = (size_t)p.qv * stride * sizeof(float) + 2 * ATT_KT * stride * sizeof(sck_bf16) +
           (size_t)p.qv * ATT_KT * sizeof(float);
  // The tensor-core kernel: 64 vectors a block, as simt's for these sizes,
  // so both cut a pass into the same tiles.
  p.mma = p.hd_tmpl <= 128;
  *out = p;
  return true;
}

#define ATT_INSTANCES(X) X(32, 64) X(64, 64) X(128, 64) X(256, 32)

// The attribute belongs to the kernel instance, process-wide, not to one
// context: it is set to what the instance's largest head_dim needs, so a
// second model sharing the instance with a smaller head_dim cannot lower it
// under the first one's launches.
cudaError_t sck_attn_prepare(const sck_attn_plan *p) {
  sck_attn_plan ub;
  if (!sck_attn_plan_for(p->hd_tmpl, 1, &ub) || ub.smem < p->smem) return cudaErrorInvalidValue;
#define PREP(H, Q)                                                                 \
  if (p->hd_tmpl == H)                                                             \
    return cudaFuncSetAttribute(k_attn<H, Q>, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                (int)ub.smem);
  ATT_INSTANCES(PREP)
#undef PREP
  return cudaErrorInvalidValue;
}

cudaError_t sck_attention(const sck_attn_plan *p, sc_kernels_attn_kind kind, const sck_bf16 *q,
                          int ldq, const sck_bf16 *k, const sck_bf16 *v, sck_bf16 *out,
                          const sck_tile *tiles, int n_tiles, int nh, int nkv, int hd,
                          int n_chunks, float *part, int *counters, cudaStream_t stream) {
  if (n_tiles <= 0) return cudaSuccess;
  const float scale_log2 = 1.4426950408889634f / sqrtf((float)hd);
  dim3 grid((unsigned)n_chunks, (unsigned)n_tiles, (unsigned)nkv);
  if (kind == SC_KERNELS_ATTN_MMA) {
    if (!p->mma || p->qv != 64) return cudaErrorInvalidValue;
    switch (p->hd_tmpl) {
    case 32:
      k_attn_mma<32><<<grid, 128, 0, stream>>>(q, ldq, k, v, out, tiles, nh, nkv, hd, p->tq,
                                               n_chunks, scale_log2, part, counters);
      break;
    case 64:
      k_attn_mma<64><<<grid, 128, 0, stream>>>(q, ldq, k, v, out, tiles, nh, nkv, hd, p->tq,
                                               n_chunks, scale_log2, part, counters);
      break;
    case 128:
      k_attn_mma<128><<<grid, 128, 0, stream>>>(q, ldq, k, v, out, tiles, nh, nkv, hd, p->tq,
                                                n_chunks, scale_log2, part, counters);
      break;
    default:
      return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
  }
  bool launched = false;
#define LAUNCH(H, Q)                                                                   \
  if (p->hd_tmpl == H) {                                                               \
    k_attn<H, Q><<<grid, ATT_THREADS, p->smem, stream>>>(q, ldq, k, v, out, tiles, nh, nkv, \
                                                         hd, p->tq, n_chunks, scale_log2, \
                                                         part);                        \
    launched = true;                                                                   \
  }
  ATT_INSTANCES(LAUNCH)
#undef LAUNCH
  if (!launched) return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t sck_attention_combine(const sck_attn_plan *p, const float *part,
                                  const sck_tile *tiles, int n_tiles, int nh, int nkv, int hd,
                                  int n_chunks, sck_bf16 *out, cudaStream_t stream) {
  if (n_tiles <= 0 || n_chunks <= 1) return cudaSuccess;
  k_attn_combine<<<(unsigned)(n_tiles * nkv), 128, 0, stream>>>(part, tiles, nh, nkv, hd, p->tq,
                                                                p->qv, n_chunks, out);
  return cudaGetLastError();
}

// ---- SwiGLU ---------------------------------------------------------------------
// Grid-stride over n*I elements, one per thread. gu bf16 [n][2I] (gate then
// up, or interleaved by 8: gate j at 16(j/8) + j%8, up 8 after), h bf16 [n][I].
__global__ void k_swiglu(const sck_bf16 *gu, int n, int I, bool il, sck_bf16 *h) {
  const size_t total = (size_t)n * I;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (size_t)gridDim.x * blockDim.x) {
    const size_t i = e / I, j = e % I;
    const size_t gc = il ? 16 * (j / 8) + j % 8 : j, uc = il ? gc + 8 : I + j;
    const float g = __bfloat162float(gu[i * 2 * I + gc]);
    const float u = __bfloat162float(gu[i * 2 * I + uc]);
    h[e] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
  }
}

cudaError_t sck_swiglu(const sck_bf16 *gu, int n, int I, bool interleaved, sck_bf16 *h,
                       cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  k_swiglu<<<blocks_for((size_t)n * I, 256), 256, 0, stream>>>(gu, n, I, interleaved, h);
  return cudaGetLastError();
}

// ---- row gather -----------------------------------------------------------------
// Grid: one block per output row j; threads stride over H.
__global__ void k_gather_rows(const sck_bf16 *x, int H, const int32_t *rows, sck_bf16 *out,
                              const sck_step_hdr *hdr) {
  sck_bf16 *dst = out + (size_t)blockIdx.x * H;
  if (hdr && (int)blockIdx.x >= hdr->n_rows) {  // padding rows of a graph's lm_head
    for (int j = threadIdx.x; j < H; j += blockDim.x) dst[j] = __float2bfloat16(0.0f);
    return;
  }
  const sck_bf16 *src = x + (size_t)rows[blockIdx.x] * H;
  for (int j = threadIdx.x; j < H; j += blockDim.x) dst[j] = src[j];
}

cudaError_t sck_gather_rows(const sck_bf16 *x, int H, const int32_t *rows, int n_rows,
                            sck_bf16 *out, const sck_step_hdr *hdr, cudaStream_t stream) {
  if (n_rows <= 0) return cudaSuccess;
  k_gather_rows<<<n_rows, 256, 0, stream>>>(x, H, rows, out, hdr);
  return cudaGetLastError();
}

// ---- the lm_head epilogue ---------------------------------------------------------
// Grid: one block of 1024 threads per row; threads stride over the vocab.
// The row's z[t] (kernels.h: logits / T, eos/pad penalty, banned -inf) is
// recomputed from the logits in each pass rather than stored. Pass 1 finds
// the top two z (lowest index wins ties) and the Gumbel-max sample; pass 2
// sums exp(z - max) and exp(z - max) * (z - max) for p(top1) = 1/Z,
// margin = (1 - e^(z2 - z1))/Z and H = log Z - sum(e^(z-m) (z-m)) / Z.
// logits f32 [n][V].
struct top2 {
  float v1, v2, gv;
  int i1, gi;
};

static __device__ __forceinline__ bool better(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}

static __device__ top2 merge(top2 a, top2 b) {
  top2 r;
  if (better(a.v1, a.i1, b.v1, b.i1)) {
    r.v1 = a.v1, r.i1 = a.i1, r.v2 = fmaxf(a.v2, b.v1);
  } else {
    r.v1 = b.v1, r.i1 = b.i1, r.v2 = fmaxf(b.v2, a.v1);
  }
  if (better(a.gv, a.gi, b.gv, b.gi)) r.gv = a.gv, r.gi = a.gi;
  else r.gv = b.gv, r.gi = b.gi;
  return r;
}

// z[t] of one row under its pick parameters.
static __device__ __forceinline__ float pick_z(const float *row, int t, float inv_t, float pen,
                                               const uint8_t *banned, int32_t eos_id,
                                               int32_t pad_id) {
  if (banned && banned[t]) return -INFINITY;
  float z = row[t] * inv_t;
  if (t == eos_id || t == pad_id) z -= pen;
  return z;
}

__global__ void __launch_bounds__(1024)
    k_lm_stats(const float *logits, int V, const sc_kernels_pick_row *rows,
               const uint8_t *banned, int32_t eos_id, int32_t pad_id,
               sc_kernels_row_stats *out, const sck_step_hdr *hdr) {
  if (hdr) {
    if ((int)blockIdx.x >= hdr->n_rows) return;  // a graph's padding row
    eos_id = hdr->eos_id;
    pad_id = hdr->pad_id;
  }
  __shared__ top2 red[WARP];
  __shared__ float redf[WARP];
  __shared__ top2 best;
  const float *row = logits + (size_t)blockIdx.x * V;
  const sc_kernels_pick_row pr = rows[blockIdx.x];
  const bool sample = pr.temperature > 0.0f;
  const float inv_t = sample ? 1.0f / pr.temperature : 1.0f;
  const float pen = pr.eos_penalty * inv_t;
  // Indices start at 0, never past the row: a row with no finite z keeps them.
  top2 t = {-INFINITY, -INFINITY, -INFINITY, 0, 0};
  int bad = 0;  // this thread saw a NaN or infinite logit (banned ids too)
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    bad |= !isfinite(row[j]);
    const float z = pick_z(row, j, inv_t, pen, banned, eos_id, pad_id);
    if (better(z, j, t.v1, t.i1)) {
      t.v2 = t.v1;  // the old best becomes second (index irrelevant)
      t.v1 = z, t.i1 = j;
    } else if (z > t.v2) {
      t.v2 = z;
    }
    if (sample) {
      const float u = sc_kernels_pick_uniform(pr.key, (uint64_t)j);
      const float gk = z - logf(-logf(u));
      if (better(gk, j, t.gv, t.gi)) t.gv = gk, t.gi = j;
    }
  }
  // Any thread's flag, for the whole block (and a barrier every thread reaches).
  const int nonfinite = __syncthreads_or(bad);
  // Warp then block reduction of the top-2 records.
  const int lane = threadIdx.x % WARP, w = threadIdx.x / WARP;
  for (int o = WARP / 2; o > 0; o /= 2) {
    top2 u;
    u.v1 = __shfl_xor_sync(0xffffffffu, t.v1, o);
    u.v2 = __shfl_xor_sync(0xffffffffu, t.v2, o);
    u.gv = __shfl_xor_sync(0xffffffffu, t.gv, o);
    u.i1 = __shfl_xor_sync(0xffffffffu, t.i1, o);
    u.gi = __shfl_xor_sync(0xffffffffu, t.gi, o);
    t = merge(t, u);
  }
  if (lane == 0) red[w] = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    top2 b = red[0];
    for (int k = 1; k < (int)(blockDim.x / WARP); k++) b = merge(b, red[k]);
    best = b;
  }
  __syncthreads();
  const float m = best.v1;
  float z = 0.0f, s1 = 0.0f;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float d = pick_z(row, j, inv_t, pen, banned, eos_id, pad_id) - m, e = expf(d);
    z += e;
    if (e > 0.0f) s1 += e * d;  // a -inf logit adds 0, not 0 * -inf
  }
  // block_sum-style reductions, twice, on one shared array.
  z = warp_sum(z);
  if (lane == 0) redf[w] = z;
  __syncthreads();
  z = 0.0f;
  for (int k = 0; k < (int)(blockDim.x / WARP); k++) z += redf[k];
  __syncthreads();
  s1 = warp_sum(s1);
  if (lane == 0) redf[w] = s1;
  __syncthreads();
  if (threadIdx.x == 0) {
    s1 = 0.0f;
    for (int k = 0; k < (int)(blockDim.x / WARP); k++) s1 += redf[k];
    const int pick = sample ? best.gi : best.i1;
    sc_kernels_row_stats r;
    r.nonfinite = nonfinite ? 1 : 0;
    if (nonfinite || !(m > -INFINITY) || !isfinite(z) || !isfinite(s1)) {
      // Every id banned, or non-finite logits: nothing to pick; as model/pick.c.
      r.max_prob = r.margin = r.entropy = r.sample_prob = 0.0f;
      r.argmax = r.sample = 0;
    } else {
      r.max_prob = 1.0f / z;
      r.margin = (1.0f - expf(best.v2 - m)) / z;
      r.entropy = logf(z) - s1 / z;
      r.sample_prob = expf(pick_z(row, pick, inv_t, pen, banned, eos_id, pad_id) - m) / z;
      r.argmax = best.i1;
      r.sample = pick;
    }
    out[blockIdx.x] = r;
  }
}

cudaError_t sck_lm_stats(const float *logits, int n, int V, const sc_kernels_pick_row *rows,
                         const uint8_t *banned, int32_t eos_id, int32_t pad_id,
                         sc_kernels_row_stats *out, const sck_step_hdr *hdr,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  k_lm_stats<<<n, 1024, 0, stream>>>(logits, V, rows, banned, eos_id, pad_id, out, hdr);
  return cudaGetLastError();
}

// ---- conversion and synthetic weights (grid-stride, one element per thread) ----------
__global__ void k_f32_to_bf16(const float *src, size_t n, sck_bf16 *dst) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x)
    dst[e] = __float2bfloat16(src[e]);
}
__global__ void k_f16_to_bf16(const __half *src, size_t n, sck_bf16 *dst) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x)
    dst[e] = __float2bfloat16(__half2float(src[e]));
}
__global__ void k_fill_uniform(sck_bf16 *dst, size_t n, float scale, uint64_t seed) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x)
    dst[e] = __float2bfloat16(scale * (2.0f * sck_uniform(seed, e, 0) - 1.0f));
}
__global__ void k_fill_f32(float *dst, size_t n, float base, float jitter, uint64_t seed) {
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (size_t)gridDim.x * blockDim.x)
    dst[e] = base + jitter * (2.0f * sck_uniform(seed, e, 0) - 1.0f);
}

cudaError_t sck_f32_to_bf16(const float *src, size_t n, sck_bf16 *dst, cudaStream_t stream) {
  if (!n) return cudaSuccess;
  k_f32_to_bf16<<<blocks_for(n, 256), 256, 0, stream>>>(src, n, dst);
  return cudaGetLastError();
}
cudaError_t sck_f16_to_bf16(const __half *src, size_t n, sck_bf16 *dst, cudaStream_t stream) {
  if (!n) return cudaSuccess;
  k_f16_to_bf16<<<blocks_for(n, 256), 256, 0, stream>>>(src, n, dst);
  return cudaGetLastError();
}
cudaError_t sck_fill_uniform(sck_bf16 *dst, size_t n, float scale, uint64_t seed,
                             cudaStream_t stream) {
  if (!n) return cudaSuccess;
  k_fill_uniform<<<blocks_for(n, 256), 256, 0, stream>>>(dst, n, scale, seed);
  return cudaGetLastError();
}
cudaError_t sck_fill_f32(float *dst, size_t n, float base, float jitter, uint64_t seed,
                         cudaStream_t stream) {
  if (!n) return cudaSuccess;
  k_fill_f32<<<blocks_for(n, 256), 256, 0, stream>>>(dst, n, base, jitter, seed);
  return cudaGetLastError();
}

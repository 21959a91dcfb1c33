// narrow.cu — Y = X W^T for the few rows of a window step (M up to 64 per
// launch chunk), weights bf16 or FP8 (e4m3 with one f32 scale per output
// row), streamed once from device memory on tensor cores, with the
// epilogues the forward pass needs fused: add into the f32 residual stream
// (split-K across all SMs, atomics), store f32 or bf16, or SwiGLU over a
// gate/up matrix whose rows are interleaved by 8.
//
// Roles: the weight rows are the mma's M (16 a tile) and the rows of X its
// N (8 a tile), so a narrow X costs no padding in the streamed operand.
// Each lane loads 16 contiguous bytes of a weight row (coalesced: a row's
// 64 bytes come from its 4 lanes) and 16 of an X row; the k order inside a
// 32-element step (64 for FP8) is permuted identically for both operands,
// which a dot product does not see: lane t's bytes hold the k positions the
// fragment layout (PTX ISA, mma.m16n8k16) gives it in its two k-halves
// (A: rows g, g+8 at k 2t..2t+1 and 2t+8..2t+9; B: k 2t..2t+1 and
// 2t+8..2t+9 at column g), real k 8t..8t+3 for the first mma and 8t+4..8t+7
// for the second (FP8: 16t + 4q .. 16t + 4q + 3 for the q-th of four).
// X (at most 64 rows) is read through L1, which the block's 4 warps share;
// the weights with the streaming hint. Each warp takes 2 tiles of 16 weight
// rows, so each X fragment feeds 2 mmas; a block is 128 weight rows.
#include "kernels_impl.h"

#include <cuda_fp8.h>

#define NW_WARPS 4
#define NW_RT 2                          // 16-row weight tiles per warp
#define NW_ROWS (NW_WARPS * NW_RT * 16)  // weight rows per block
#define NW_KI 128                        // k per iteration (and the K granule)

static __device__ __forceinline__ void mma16816(float c[4], uint32_t a0, uint32_t a1,
                                                uint32_t a2, uint32_t a3, uint32_t b0,
                                                uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Two e4m3 bytes (the low 16 bits of v >> sh) as a bf16 pair, exactly
// (every e4m3 value is a bf16 value).
static __device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t v, int sh) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)((v >> sh) & 0xffffu), __NV_E4M3);
  const float2 f = __half22float2(*reinterpret_cast<const __half2 *>(&h));
  __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<uint32_t *>(&b);
}

template <int NT, bool W8>
__global__ void __launch_bounds__(NW_WARPS * 32)
    k_gemm_narrow(const uint8_t *__restrict__ W, const float *__restrict__ wscale,
                  const sck_bf16 *__restrict__ X, int ldx, int M, int N, int K, int KP, int ks,
                  int epi, void *__restrict__ Y, int ldy) {
  constexpr int ES = W8 ? 1 : 2;  // bytes per weight
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.z * NT * 8;
  // k runs over the rows' stored length KP (a multiple of NW_KI, zeros past
  // K); X is read only below K.
  const int kb = blockIdx.y * ks, ke = min(KP, kb + ks);
  const int nb = (blockIdx.x * NW_WARPS + warp) * NW_RT * 16;
  const size_t wrow = (size_t)KP * ES;

  const sck_bf16 *xr[NT];
  bool xok[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    const int m = m0 + j * 8 + g;
    xok[j] = m < M;
    xr[j] = X + (size_t)(xok[j] ? m : 0) * ldx;
  }
  const uint8_t *wr[NW_RT][2];
  bool wok[NW_RT][2];
#pragma unroll
  for (int r = 0; r < NW_RT; r++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int n = nb + r * 16 + g + 8 * h;
      wok[r][h] = n < N;
      wr[r][h] = W + (size_t)(wok[r][h] ? n : 0) * wrow;
    }
  float acc[NW_RT][NT][4];
#pragma unroll
  for (int r = 0; r < NW_RT; r++)
#pragma unroll
    for (int j = 0; j < NT; j++) acc[r][j][0] = acc[r][j][1] = acc[r][j][2] = acc[r][j][3] = 0.0f;

  const uint4 z4 = make_uint4(0, 0, 0, 0);
  for (int k = kb; k < ke; k += NW_KI) {
    // The iteration's weights first (all in flight), 16 bytes a lane a load.
    constexpr int U = NW_KI * ES / 64;  // 16-byte loads per row half: 4 (bf16) or 2 (FP8)
    uint4 a[U][NW_RT][2];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int r = 0; r < NW_RT; r++)
#pragma unroll
        for (int h = 0; h < 2; h++)
          a[u][r][h] = wok[r][h] ? __ldcs(reinterpret_cast<const uint4 *>(
                                       wr[r][h] + (size_t)k * ES + u * 64 + 16 * t))
                                 : z4;
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (!W8) {
        // k + 32u + 8t .. +7: two mmas.
        uint4 b[NT];
        const int kx = k + 32 * u + 8 * t;
#pragma unroll
        for (int j = 0; j < NT; j++)
          b[j] = xok[j] && kx < K ? __ldg(reinterpret_cast<const uint4 *>(xr[j] + kx)) : z4;
#pragma unroll
        for (int r = 0; r < NW_RT; r++)
#pragma unroll
          for (int j = 0; j < NT; j++) {
            const uint4 lo = a[u][r][0], hi = a[u][r][1];
            mma16816(acc[r][j], lo.x, hi.x, lo.y, hi.y, b[j].x, b[j].y);
            mma16816(acc[r][j], lo.z, hi.z, lo.w, hi.w, b[j].z, b[j].w);
          }
      } else {
        // k + 64u + 16t .. +15: four mmas, the weights widened to bf16.
        uint4 b0[NT], b1[NT];
        const int kx = k + 64 * u + 16 * t;
#pragma unroll
        for (int j = 0; j < NT; j++) {
          const sck_bf16 *p = xr[j] + kx;
          b0[j] = xok[j] && kx < K ? __ldg(reinterpret_cast<const uint4 *>(p)) : z4;
          b1[j] = xok[j] && kx + 8 < K ? __ldg(reinterpret_cast<const uint4 *>(p + 8)) : z4;
        }
#pragma unroll
        for (int r = 0; r < NW_RT; r++) {
          uint32_t lo[8], hi[8];
          const uint32_t lw[4] = {a[u][r][0].x, a[u][r][0].y, a[u][r][0].z, a[u][r][0].w};
          const uint32_t hw[4] = {a[u][r][1].x, a[u][r][1].y, a[u][r][1].z, a[u][r][1].w};
#pragma unroll
          for (int i = 0; i < 4; i++) {
            lo[2 * i] = e4m3x2_to_bf16x2(lw[i], 0), lo[2 * i + 1] = e4m3x2_to_bf16x2(lw[i], 16);
            hi[2 * i] = e4m3x2_to_bf16x2(hw[i], 0), hi[2 * i + 1] = e4m3x2_to_bf16x2(hw[i], 16);
          }
#pragma unroll
          for (int j = 0; j < NT; j++) {
            mma16816(acc[r][j], lo[0], hi[0], lo[1], hi[1], b0[j].x, b0[j].y);
            mma16816(acc[r][j], lo[2], hi[2], lo[3], hi[3], b0[j].z, b0[j].w);
            mma16816(acc[r][j], lo[4], hi[4], lo[5], hi[5], b1[j].x, b1[j].y);
            mma16816(acc[r][j], lo[6], hi[6], lo[7], hi[7], b1[j].z, b1[j].w);
          }
        }
      }
    }
  }

  // The epilogue: acc[r][j][2h + e] is Y[m = m0 + 8j + 2t + e][n = nb + 16r + g + 8h].
#pragma unroll
  for (int r = 0; r < NW_RT; r++) {
    const int n_lo = nb + r * 16 + g, n_hi = n_lo + 8;
    const float s_lo = W8 && n_lo < N ? wscale[n_lo] : 1.0f;
    const float s_hi = W8 && n_hi < N ? wscale[n_hi] : 1.0f;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
      for (int e = 0; e < 2; e++) {
        const int m = m0 + j * 8 + 2 * t + e;
        if (m >= M) continue;
        const float lo = acc[r][j][e] * s_lo, hi = acc[r][j][2 + e] * s_hi;
        if (epi == SCK_EPI_SWIGLU) {
          // Rows 16q..16q+7 are gate rows 8q.., 16q+8.. their up rows.
          const int jo = (nb + r * 16) / 2 + g;
          if (n_lo < N)
            reinterpret_cast<sck_bf16 *>(Y)[(size_t)m * ldy + jo] =
                __float2bfloat16(lo / (1.0f + expf(-lo)) * hi);
          continue;
        }
        const size_t at = (size_t)m * ldy;
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int n = h ? n_hi : n_lo;
          if (n >= N) continue;
          const float v = h ? hi : lo;
          if (epi == SCK_EPI_F32_ADD) atomicAdd(reinterpret_cast<float *>(Y) + at + n, v);
          else if (epi == SCK_EPI_F32) reinterpret_cast<float *>(Y)[at + n] = v;
          else reinterpret_cast<sck_bf16 *>(Y)[at + n] = __float2bfloat16(v);
        }
      }
  }
}

int sck_narrow_stride(int cols) { return (cols + NW_KI - 1) / NW_KI * NW_KI; }

bool sck_narrow_fits(const sck_narrow_w *w, sck_epilogue epi) {
  return w->rows >= 1 && w->cols >= 8 && w->cols % 8 == 0 && w->stride % NW_KI == 0 &&
         w->stride >= w->cols && (epi != SCK_EPI_SWIGLU || w->rows % 16 == 0);
}

cudaError_t sck_gemm_narrow(const sck_narrow_w *w, const sck_bf16 *X, int ldx, int M,
                            sck_epilogue epi, void *Y, int ldy, int sm_count,
                            cudaStream_t stream) {
  if (M <= 0) return cudaSuccess;
  const int N = w->rows, K = w->cols, KP = w->stride;
  if (!sck_narrow_fits(w, epi) || ldx % 8 || (w->fp8 && !w->scale)) return cudaErrorInvalidValue;
  const int NT = M >= 64 ? 8 : (M + 7) / 8;
  const int zc = (M + NT * 8 - 1) / (NT * 8), blocks = (N + NW_ROWS - 1) / NW_ROWS;
  // Split the k range when the rows alone leave SMs idle (only where the
  // epilogue adds: the partial sums meet in the atomics), at least 256 of
  // k a split.
  int splits = 1;
  if (epi == SCK_EPI_F32_ADD && blocks * zc < 4 * sm_count) {
    splits = (4 * sm_count + blocks * zc - 1) / (blocks * zc);
    if (splits > KP / 256) splits = KP / 256;
    if (splits < 1) splits = 1;
  }
  int ks = (KP + splits - 1) / splits;
  ks = (ks + NW_KI - 1) / NW_KI * NW_KI;
  dim3 grid((unsigned)blocks, (unsigned)((KP + ks - 1) / ks), (unsigned)zc);
  const uint8_t *wp = (const uint8_t *)w->w;
#define NARROW_LAUNCH(NTV)                                                                   \
  case NTV:                                                                                  \
    if (w->fp8)                                                                              \
      k_gemm_narrow<NTV, true><<<grid, NW_WARPS * 32, 0, stream>>>(wp, w->scale, X, ldx, M, N, \
                                                                    K, KP, ks, (int)epi, Y, ldy); \
    else                                                                                     \
      k_gemm_narrow<NTV, false><<<grid, NW_WARPS * 32, 0, stream>>>(wp, w->scale, X, ldx, M, \
                                                                     N, K, KP, ks, (int)epi, Y, \
                                                                     ldy);                   \
    break;
  switch (NT) {
    NARROW_LAUNCH(1)
    NARROW_LAUNCH(2)
    NARROW_LAUNCH(3)
    NARROW_LAUNCH(4)
    NARROW_LAUNCH(5)
    NARROW_LAUNCH(6)
    NARROW_LAUNCH(7)
    NARROW_LAUNCH(8)
  default:
    return cudaErrorInvalidValue;
  }
#undef NARROW_LAUNCH
  return cudaGetLastError();
}

// ---- FP8 quantization (the same rule as plan.c's host reference) ---------------
// One block of 256 threads per row: amax, scale = amax / 448 (1 for a zero
// row), then each element rounded to nearest even e4m3 of x / scale.
__global__ void k_quant_fp8(const sck_bf16 *__restrict__ src, int cols, int stride,
                            uint8_t *__restrict__ q, float *__restrict__ scale) {
  __shared__ float red[32];
  const sck_bf16 *row = src + (size_t)blockIdx.x * cols;
  float mx = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, fabsf(__bfloat162float(row[j])));
  for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = 0.0f;
  for (int i = 0; i < (int)blockDim.x / 32; i++) mx = fmaxf(mx, red[i]);
  const float s = sc_kernels_fp8_scale(mx);
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
  uint8_t *out = q + (size_t)blockIdx.x * stride;
  for (int j = threadIdx.x; j < stride; j += blockDim.x)
    out[j] = j < cols ? (uint8_t)__nv_cvt_float_to_fp8(__bfloat162float(row[j]) / s,
                                                       __NV_SATFINITE, __NV_E4M3)
                      : 0;  // the padding to the stride: zeros
}

cudaError_t sck_quant_fp8(const sck_bf16 *src, int rows, int cols, int stride, uint8_t *q,
                          float *scale, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  k_quant_fp8<<<rows, 256, 0, stream>>>(src, cols, stride, q, scale);
  return cudaGetLastError();
}

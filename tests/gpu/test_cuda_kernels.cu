// test_cuda_kernels.cu — one parity test per kernel of kernels/ops.cu (and the
// cuBLAS wrapper) against a CPU reference written here in double precision
// from the same formulas as model/cpu.c. Inputs are bf16-representable, so
// the only differences are the kernels' own rounding. Relative error is
// max|gpu - ref| / max|ref| over the output; tolerances per op:
//   embedding, gather, dtype conversion: exact (they copy bf16 values)
//   residual add (f32 stream): 1e-6; RMSNorm output (bf16): 8e-3 (bf16's
//     relative half-ulp is 2^-9 = 2e-3, plus f32 reduction order)
//   GEMM: f32 output 1e-3 (fp32 accumulation order), bf16 output 1e-2
//   q/k-norm + RoPE, SwiGLU (bf16 out, f32 math): 1e-2
//   attention (bf16 in/out, f32 online softmax; simt and tensor cores,
//     contexts 16 to 8,192, split keys merged): 2e-2, every row written
//   lm_head epilogue (f32 logits in): stats 1e-4, argmax/pick exact, the
//     non-finite flag exact
// Without a usable device it prints why and exits 77 (skip).
#include "kernels_impl.h"
#include "sc_test.h"

#include <math.h>
#include <stdlib.h>
#include <vector>

typedef std::vector<float> vecf;

static uint64_t rng_state = 88172645463325252ULL;
static float frand(void) {  // uniform in [-1, 1), xorshift64
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((rng_state >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static float bfr(float x) { return __bfloat162float(__float2bfloat16(x)); }
static vecf rand_bf(size_t n, float scale) {
  vecf v(n);
  for (auto &x : v) x = bfr(frand() * scale);
  return v;
}
static std::vector<sck_bf16> to_bf(const vecf &v) {
  std::vector<sck_bf16> o(v.size());
  for (size_t i = 0; i < v.size(); i++) o[i] = __float2bfloat16(v[i]);
  return o;
}
static vecf from_bf(const std::vector<sck_bf16> &v) {
  vecf o(v.size());
  for (size_t i = 0; i < v.size(); i++) o[i] = __bfloat162float(v[i]);
  return o;
}
static double rel_err(const vecf &a, const vecf &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); i++) {
    num = fmax(num, fabs((double)a[i] - b[i]));
    den = fmax(den, fabs((double)b[i]));
  }
  return den > 0 ? num / den : num;
}

// Device buffers freed at scope exit.
template <typename T> struct dbuf {
  T *p = nullptr;
  size_t n = 0;
  explicit dbuf(size_t n_) : n(n_) {
    if (cudaMalloc(&p, (n ? n : 1) * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  dbuf(const std::vector<T> &h) : dbuf(h.size()) {
    if (p) cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~dbuf() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

static bool ok(cudaError_t e) {
  cudaError_t s = cudaDeviceSynchronize();
  if (e != cudaSuccess || s != cudaSuccess) {
    fprintf(stderr, "CUDA error: %s / %s\n", cudaGetErrorString(e), cudaGetErrorString(s));
    return false;
  }
  return true;
}

static void test_embed(void) {
  const int V = 50, H = 40, n = 7;
  vecf table = rand_bf((size_t)V * H, 1.0f);
  std::vector<int32_t> ids = {3, 0, 49, 3, 17, 25, 1};
  dbuf<sck_bf16> dt(to_bf(table));
  dbuf<int32_t> di(ids);
  dbuf<float> dx((size_t)n * H);
  REQUIRE(ok(sck_embed(di.p, n, dt.p, H, dx.p, 0)));
  vecf x = dx.get(), ref((size_t)n * H);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < H; j++) ref[(size_t)i * H + j] = table[(size_t)ids[i] * H + j];
  EXPECTF(rel_err(x, ref) == 0.0, "embed err %g", rel_err(x, ref));
}

static void test_add_rmsnorm(void) {
  const int n = 5, H = 300;
  const float eps = 1e-6f;
  vecf x0((size_t)n * H), w(H), delta = rand_bf((size_t)n * H, 2.0f);
  for (auto &v : x0) v = frand() * 3.0f;
  for (auto &v : w) v = 1.0f + 0.3f * frand();
  for (int with_delta = 0; with_delta < 2; with_delta++) {
    dbuf<float> dx(x0), dw(w);
    dbuf<sck_bf16> dd(to_bf(delta)), dout((size_t)n * H);
    REQUIRE(ok(sck_add_rmsnorm(dx.p, with_delta ? dd.p : nullptr, dw.p, eps, H, n, dout.p, 0)));
    vecf xr(x0), outr((size_t)n * H);
    for (int i = 0; i < n; i++) {
      double ss = 0;
      for (int j = 0; j < H; j++) {
        size_t k = (size_t)i * H + j;
        if (with_delta) xr[k] = x0[k] + delta[k];
        ss += (double)xr[k] * xr[k];
      }
      double r = 1.0 / sqrt(ss / H + eps);
      for (int j = 0; j < H; j++) outr[(size_t)i * H + j] = (float)(xr[(size_t)i * H + j] * r * w[j]);
    }
    double ex = rel_err(dx.get(), xr), eo = rel_err(from_bf(dout.get()), outr);
    EXPECTF(ex <= 1e-6, "residual err %g (delta %d)", ex, with_delta);
    EXPECTF(eo <= 8e-3, "rmsnorm err %g (delta %d)", eo, with_delta);
  }
}

static void test_gemm(void) {
  const int out = 96, in = 80, n = 13;
  vecf W = rand_bf((size_t)out * in, 1.0f), X = rand_bf((size_t)n * in, 1.0f);
  vecf Y0 = rand_bf((size_t)n * out, 1.0f);
  vecf ref((size_t)n * out);
  for (int i = 0; i < n; i++)
    for (int o = 0; o < out; o++) {
      double s = 0;
      for (int k = 0; k < in; k++) s += (double)X[(size_t)i * in + k] * W[(size_t)o * in + k];
      ref[(size_t)i * out + o] = (float)s;
    }
  sc_error berr = {};
  const sck_blas_api *blas = sck_blas(&berr);
  cublasHandle_t h = nullptr;
  REQUIRE(blas && blas->create(&h) == CUBLAS_STATUS_SUCCESS);
  dbuf<sck_bf16> dW(to_bf(W)), dX(to_bf(X)), dYb((size_t)n * out);
  dbuf<float> dYf((size_t)n * out), dYacc(Y0);
  sc_error err = {};
  EXPECT(sck_gemm(h, dW.p, out, in, dX.p, n, in, dYf.p, true, out, 0.0f, &err) == SC_OK);
  EXPECT(sck_gemm(h, dW.p, out, in, dX.p, n, in, dYb.p, false, out, 0.0f, &err) == SC_OK);
  EXPECT(sck_gemm(h, dW.p, out, in, dX.p, n, in, dYacc.p, true, out, 1.0f, &err) == SC_OK);
  REQUIRE(ok(cudaSuccess));
  vecf acc_ref(ref);
  for (size_t i = 0; i < acc_ref.size(); i++) acc_ref[i] += Y0[i];
  double ef = rel_err(dYf.get(), ref), eb = rel_err(from_bf(dYb.get()), ref),
         ea = rel_err(dYacc.get(), acc_ref);
  EXPECTF(ef <= 1e-3, "gemm f32 err %g", ef);
  EXPECTF(eb <= 1e-2, "gemm bf16 err %g", eb);
  EXPECTF(ea <= 1e-3, "gemm beta=1 err %g", ea);
  blas->destroy(h);
}

// The narrow GEMM (narrow.cu) against a double reference: bf16 and FP8
// weights (quantized here by the host reference, so the reference is the
// dequantized matrix), each epilogue, a partial last block of weight rows,
// more than 64 rows of X (chunks), a k split that adds through atomics onto
// what Y held, and FP8 rows padded to their stride. Outputs poisoned first.
static void narrow_case(int M, int N, int K, bool fp8, sck_epilogue epi) {
  const int stride = fp8 ? sck_narrow_stride(K) : K;
  vecf W = rand_bf((size_t)N * K, 1.0f), X = rand_bf((size_t)M * K, 1.0f);
  std::vector<uint8_t> q((size_t)N * stride, 0);
  vecf scale(N, 1.0f), Wd(W);
  if (fp8)
    for (int n = 0; n < N; n++) {
      sc_kernels_fp8_quantize_row(&W[(size_t)n * K], K, &q[(size_t)n * stride], &scale[n]);
      for (int k = 0; k < K; k++)
        Wd[(size_t)n * K + k] = sc_kernels_fp8_to_float(q[(size_t)n * stride + k]) * scale[n];
    }
  std::vector<double> acc((size_t)M * N);
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double a = 0;
      for (int k = 0; k < K; k++) a += (double)X[(size_t)m * K + k] * Wd[(size_t)n * K + k];
      acc[(size_t)m * N + n] = a;
    }
  const int ny = epi == SCK_EPI_SWIGLU ? N / 2 : N;
  vecf Y0((size_t)M * ny), ref((size_t)M * ny);
  for (auto &y : Y0) y = epi == SCK_EPI_F32_ADD ? frand() : NAN;
  for (int m = 0; m < M; m++)
    for (int j = 0; j < ny; j++) {
      double v;
      if (epi == SCK_EPI_SWIGLU) {
        const double g = acc[(size_t)m * N + 16 * (j / 8) + j % 8],
                     u = acc[(size_t)m * N + 16 * (j / 8) + j % 8 + 8];
        v = g / (1.0 + exp(-g)) * u;
      } else {
        v = acc[(size_t)m * N + j] + (epi == SCK_EPI_F32_ADD ? Y0[(size_t)m * ny + j] : 0.0);
      }
      ref[(size_t)m * ny + j] = (float)v;
    }
  dbuf<sck_bf16> dW(to_bf(W)), dX(to_bf(X));
  dbuf<uint8_t> dq(q);
  dbuf<float> ds(scale), dYf(Y0);
  dbuf<sck_bf16> dYb(to_bf(Y0));
  const bool f32 = epi == SCK_EPI_F32_ADD || epi == SCK_EPI_F32;
  sck_narrow_w w = {fp8 ? (const void *)dq.p : (const void *)dW.p, fp8 ? ds.p : nullptr, fp8, N,
                    K, stride};
  REQUIRE(sck_narrow_fits(&w, epi));
  REQUIRE(ok(sck_gemm_narrow(&w, dX.p, K, M, epi, f32 ? (void *)dYf.p : (void *)dYb.p, ny, 132,
                             0)));
  vecf got = f32 ? dYf.get() : from_bf(dYb.get());
  bool finite = true;
  for (float x : got) finite &= isfinite(x);
  const double e = rel_err(got, ref), tol = f32 ? 1e-3 : 1e-2;
  EXPECTF(finite && e <= tol, "narrow M %d N %d K %d %s epi %d: err %g%s", M, N, K,
          fp8 ? "fp8" : "bf16", (int)epi, e, finite ? "" : " (an output not written)");
}

static void test_gemm_narrow(void) {
  for (int fp8 = 0; fp8 < 2; fp8++) {
    narrow_case(33, 300, 256, fp8, SCK_EPI_F32);        // a window; 2.3 blocks of rows
    narrow_case(1, 130, 128, fp8, SCK_EPI_BF16);        // one row
    narrow_case(17, 130, 2048, fp8, SCK_EPI_F32_ADD);   // split k, added onto Y
    narrow_case(64, 256, 384, fp8, SCK_EPI_F32_ADD);
    narrow_case(70, 200, 256, fp8, SCK_EPI_F32);        // two chunks of X rows
    narrow_case(33, 96, 512, fp8, SCK_EPI_SWIGLU);      // gate/up by 8
  }
  narrow_case(9, 100, 200, true, SCK_EPI_F32);          // FP8 rows padded to 256
  narrow_case(5, 64, 8, true, SCK_EPI_BF16);            // ... from 8
  sck_narrow_w bad = {nullptr, nullptr, false, 10, 200, 200};
  EXPECT(!sck_narrow_fits(&bad, SCK_EPI_F32));          // bf16 needs a stride of 128s
}

// The device's FP8 quantizer (upload) gives the host reference's bytes and
// scales exactly, with the padding to the stride zero; an all-zero row has
// scale 1.
static void test_quant_fp8(void) {
  const int rows = 7, cols = 300, stride = sck_narrow_stride(cols);
  vecf w = rand_bf((size_t)rows * cols, 3.0f);
  for (int j = 0; j < cols; j++) w[(size_t)2 * cols + j] = 0.0f;
  w[5] = bfr(1e-4f), w[6] = bfr(-600.0f);  // a subnormal after scaling; the row's max
  std::vector<uint8_t> qref((size_t)rows * stride, 0);
  vecf sref(rows);
  for (int r = 0; r < rows; r++)
    sc_kernels_fp8_quantize_row(&w[(size_t)r * cols], cols, &qref[(size_t)r * stride], &sref[r]);
  dbuf<sck_bf16> dw(to_bf(w));
  dbuf<uint8_t> dq(std::vector<uint8_t>((size_t)rows * stride, 0xAA));
  dbuf<float> ds(rows);
  REQUIRE(ok(sck_quant_fp8(dw.p, rows, cols, stride, dq.p, ds.p, 0)));
  std::vector<uint8_t> q = dq.get();
  vecf sc = ds.get();
  int diff = 0;
  for (size_t i = 0; i < q.size(); i++) diff += q[i] != qref[i];
  EXPECTF(diff == 0, "%d FP8 bytes differ from the host reference", diff);
  for (int r = 0; r < rows; r++) EXPECTF(sc[r] == sref[r], "row %d scale %g vs %g", r, sc[r], sref[r]);
  EXPECT(sc[2] == 1.0f);
}

static void test_qkv_post(void) {
  const int n = 6, nh = 4, nkv = 2, hd = 24, half = hd / 2, QD = nh * hd, KD = nkv * hd;
  const int ld = QD + 2 * KD, row0 = 3, S = 40;
  const float eps = 1e-6f;
  const double theta = 1e4;
  vecf qkv = rand_bf((size_t)n * ld, 2.0f), bias(ld), qn(hd), kn(hd);
  for (auto &v : bias) v = 0.1f * frand();
  for (auto &v : qn) v = 1.0f + 0.2f * frand();
  for (auto &v : kn) v = 1.0f + 0.2f * frand();
  std::vector<int32_t> pos = {7, 8, 9, 0, 1, 30};  // a window offset, then a restart
  vecf cs((size_t)S * half), sn((size_t)S * half);
  for (int p = 0; p < S; p++)
    for (int i = 0; i < half; i++) {
      double inv = pow(theta, -2.0 * i / hd);
      cs[(size_t)p * half + i] = (float)cos(p * inv);
      sn[(size_t)p * half + i] = (float)sin(p * inv);
    }
  // 0: bias + q/k-norm; 1: neither; 2: as 0, from the narrow GEMM's f32 sums
  for (int variant = 0; variant < 3; variant++) {
    dbuf<sck_bf16> dq(to_bf(qkv)), dk((size_t)S * KD), dv((size_t)S * KD);
    dbuf<float> db(bias), dqn(qn), dkn(kn), dcs(cs), dsn(sn);
    dbuf<int32_t> dp(pos);
    // Variant 1 takes its cache row from a step header on the device, as a
    // graph's replay does: row0 - 2 in the argument plus w0 = 2.
    sck_step_hdr hh = {};
    hh.w0 = 2;
    dbuf<sck_step_hdr> dh(std::vector<sck_step_hdr>{hh});
    const bool plain = variant == 1;
    // Variant 2: the input in f32 (bf16 poisoned: it must not be read).
    std::vector<sck_bf16> qb = to_bf(qkv);
    if (variant == 2)
      for (size_t e = 0; e < qb.size(); e++) qb[e] = __float2bfloat16(NAN);
    dbuf<sck_bf16> dq2(qb);
    dbuf<float> d32(qkv);
    sck_bf16 *qbuf = variant == 2 ? dq2.p : dq.p;
    REQUIRE(ok(sck_qkv_post(qbuf, n, nh, nkv, hd, plain ? nullptr : db.p,
                            plain ? nullptr : dqn.p, plain ? nullptr : dkn.p, eps, dcs.p,
                            dsn.p, dp.p, dk.p, dv.p, plain ? row0 - 2 : row0,
                            plain ? dh.p : nullptr, variant == 2 ? d32.p : nullptr, 0)));
    vecf gq = from_bf(variant == 2 ? dq2.get() : dq.get()), gk = from_bf(dk.get()),
         gv = from_bf(dv.get());
    vecf rq, gq_only, rk, gk_only, rv, gv_only;
    for (int i = 0; i < n; i++)
      for (int s = 0; s < nh + 2 * nkv; s++) {
        double v[256];
        for (int j = 0; j < hd; j++)
          v[j] = qkv[(size_t)i * ld + s * hd + j] + (plain ? 0.0 : bias[s * hd + j]);
        if (s >= nh + nkv) {
          for (int j = 0; j < hd; j++) {
            rv.push_back((float)v[j]);
            gv_only.push_back(gv[(size_t)(row0 + i) * KD + (s - nh - nkv) * hd + j]);
          }
          continue;
        }
        if (!plain) {
          double ss = 0;
          for (int j = 0; j < hd; j++) ss += v[j] * v[j];
          double r = 1.0 / sqrt(ss / hd + eps);
          for (int j = 0; j < hd; j++) v[j] *= r * (s < nh ? qn[j] : kn[j]);
        }
        double o[256];
        for (int j = 0; j < half; j++) {
          double c = cs[(size_t)pos[i] * half + j], si = sn[(size_t)pos[i] * half + j];
          o[j] = v[j] * c - v[j + half] * si;
          o[j + half] = v[j + half] * c + v[j] * si;
        }
        for (int j = 0; j < hd; j++) {
          if (s < nh) {
            rq.push_back((float)o[j]);
            gq_only.push_back(gq[(size_t)i * ld + s * hd + j]);
          } else {
            rk.push_back((float)o[j]);
            gk_only.push_back(gk[(size_t)(row0 + i) * KD + (s - nh) * hd + j]);
          }
        }
      }
    double eq = rel_err(gq_only, rq), ek = rel_err(gk_only, rk), ev = rel_err(gv_only, rv);
    EXPECTF(eq <= 1e-2 && ek <= 1e-2 && ev <= 1e-2, "qkv_post variant %d: q %g k %g v %g",
            variant, eq, ek, ev);
  }
}

// Reference attention: every query row i of tile t against keys [k0, k1).
static vecf attn_ref(const vecf &q, int ldq, const vecf &k, const vecf &v, int nh, int nkv,
                     int hd, const std::vector<sck_tile> &tiles, int n_rows) {
  const int group = nh / nkv, KD = nkv * hd;
  vecf out((size_t)n_rows * nh * hd, 0.0f);
  for (const sck_tile &t : tiles)
    for (int r = t.q0; r < t.q0 + t.nq; r++)
      for (int h = 0; h < nh; h++) {
        const int g = h / group;
        std::vector<double> s(t.k1 - t.k0);
        double mx = -1e300;
        for (int kk = t.k0; kk < t.k1; kk++) {
          double d = 0;
          for (int j = 0; j < hd; j++)
            d += (double)q[(size_t)r * ldq + h * hd + j] * k[(size_t)kk * KD + g * hd + j];
          s[kk - t.k0] = d / sqrt((double)hd);
          mx = fmax(mx, s[kk - t.k0]);
        }
        double z = 0;
        for (auto &x : s) z += (x = exp(x - mx));
        for (int j = 0; j < hd; j++) {
          double a = 0;
          for (int kk = t.k0; kk < t.k1; kk++)
            a += s[kk - t.k0] * v[(size_t)kk * KD + g * hd + j];
          out[(size_t)r * nh * hd + h * hd + j] = (float)(a / z);
        }
      }
  return out;
}

// One attention shape through one kernel: a window of nq query rows over
// n_keys keys (or, packed, three sequences attending inside themselves),
// its keys split into n_chunks. Returns the relative error (-1: the launch
// failed). Twice when split, so the in-kernel merge's counters are seen to
// return to zero (a stale counter would merge early on the second launch).
static double attn_run(sc_kernels_attn_kind kind, int nh, int nkv, int hd, int n_keys, int nq,
                       bool packed, int n_chunks) {
  sck_attn_plan plan;
  if (!sck_attn_plan_for(hd, nh / nkv, &plan) || !ok(sck_attn_prepare(&plan))) return -1;
  const int QD = nh * hd, KD = nkv * hd, ldq = QD + 2 * KD;  // q inside a qkv buffer
  std::vector<sck_tile> tiles;
  int n_rows;
  if (!packed) {
    n_rows = nq;
    for (int r0 = 0; r0 < n_rows; r0 += plan.tq)
      tiles.push_back({r0, n_rows - r0 < plan.tq ? n_rows - r0 : plan.tq, 0, n_keys});
  } else {
    n_rows = n_keys;
    const int segs[4] = {0, 5, n_keys / 2, n_keys};
    for (int s = 0; s < 3; s++)
      for (int r0 = segs[s]; r0 < segs[s + 1]; r0 += plan.tq)
        tiles.push_back({r0, segs[s + 1] - r0 < plan.tq ? segs[s + 1] - r0 : plan.tq, segs[s],
                         segs[s + 1]});
  }
  vecf q = rand_bf((size_t)n_rows * ldq, 2.0f), k = rand_bf((size_t)n_keys * KD, 2.0f),
       v = rand_bf((size_t)n_keys * KD, 1.0f);
  dbuf<sck_bf16> dq(to_bf(q)), dk(to_bf(k)), dv(to_bf(v));
  dbuf<sck_tile> dt(tiles);
  dbuf<float> part((size_t)tiles.size() * nkv * n_chunks * plan.qv * (plan.hd_tmpl + 2));
  dbuf<int> counters(std::vector<int>(tiles.size() * nkv, 0));
  vecf ref = attn_ref(q, ldq, k, v, nh, nkv, hd, tiles, n_rows);
  double worst = 0;
  for (int rep = 0; rep < (n_chunks > 1 ? 2 : 1); rep++) {
    // Poisoned output: a row the kernel forgets to write fails the check.
    std::vector<sck_bf16> poison((size_t)n_rows * QD, __float2bfloat16(NAN));
    dbuf<sck_bf16> dout(poison);
    cudaError_t e = sck_attention(&plan, kind, dq.p, ldq, dk.p, dv.p, dout.p, dt.p,
                                  (int)tiles.size(), nh, nkv, hd, n_chunks, part.p, counters.p, 0);
    if (e == cudaSuccess && kind == SC_KERNELS_ATTN_SIMT)
      e = sck_attention_combine(&plan, part.p, dt.p, (int)tiles.size(), nh, nkv, hd, n_chunks,
                                dout.p, 0);
    if (!ok(e)) return -1;
    vecf got = from_bf(dout.get());
    for (float x : got)
      if (!isfinite(x)) return 1e9;
    double err = rel_err(got, ref);
    worst = err > worst ? err : worst;
  }
  std::vector<int> left = counters.get();
  for (int x : left)
    if (x != 0) return 2e9;  // a merge left its counter set
  return worst;
}

static void attn_case(sc_kernels_attn_kind kind, int nh, int nkv, int hd, int n_keys, int nq,
                      bool packed, int n_chunks) {
  double e = attn_run(kind, nh, nkv, hd, n_keys, nq, packed, n_chunks);
  EXPECTF(e >= 0 && e <= 2e-2,
          "attention %s nh %d nkv %d hd %d keys %d rows %d packed %d chunks %d: err %g",
          kind == SC_KERNELS_ATTN_MMA ? "mma" : "simt", nh, nkv, hd, n_keys, nq, packed,
          n_chunks, e);
}

static void attn_cases(sc_kernels_attn_kind kind) {
  attn_case(kind, 4, 2, 24, 70, 9, false, 1);    // tiny-checkpoint shape, odd head size
  attn_case(kind, 4, 2, 24, 70, 9, false, 2);    // split keys + merge
  attn_case(kind, 4, 2, 24, 70, 9, true, 1);     // packed sequences
  attn_case(kind, 4, 4, 12, 45, 9, true, 2);     // MHA, hd 12, packed and split
  attn_case(kind, 14, 2, 64, 300, 9, false, 3);  // Open-dCoder: group 7 (tq 9)
  attn_case(kind, 28, 4, 128, 600, 9, false, 5); // Dream 7B heads
  attn_case(kind, 16, 8, 128, 200, 9, true, 1);  // CoDA heads, packed
  attn_case(kind, 4, 2, 24, 80, 9, false, 3);    // chunks of 64 keys: the third is empty
  if (kind == SC_KERNELS_ATTN_SIMT) attn_case(kind, 8, 2, 256, 100, 9, false, 2); // hd 256
  // Contexts 16 to 8,192 at the real models' heads: a 33-row window (a
  // block of 32 and the row before it) over the whole context, split as
  // the planner would split it on a 132-SM GPU, and a long full pass.
  const int ctxs[] = {16, 64, 512, 2048, 8192};
  for (int n : ctxs) {
    sc_kernels_step_in in = {};
    in.n = n, in.w0 = 0, in.w1 = n < 33 ? n : 33, in.n_rows = in.w1, in.tq = 9;
    in.n_kv_heads = 4, in.sm_count = 132, in.part_blocks = 1024, in.head_cap = 128;
    sc_kernels_step_plan pl;
    REQUIRE(sc_kernels_plan_step(&in, nullptr, &pl));
    attn_case(kind, 28, 4, 128, n, in.w1, false, pl.n_chunks);
    attn_case(kind, 14, 2, 64, n, in.w1, false, pl.n_chunks > 1 ? pl.n_chunks : 1);
  }
  attn_case(kind, 28, 4, 128, 512, 512, false, 1);    // a full pass: 57 tiles
  attn_case(kind, 16, 8, 128, 2048, 256, false, 4);   // CoDA, split
}

static void test_attention_simt(void) { attn_cases(SC_KERNELS_ATTN_SIMT); }
static void test_attention_mma(void) { attn_cases(SC_KERNELS_ATTN_MMA); }

static void test_swiglu(void) {
  const int n = 7, I = 333;
  vecf gu = rand_bf((size_t)n * 2 * I, 4.0f), ref((size_t)n * I);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < I; j++) {
      double g = gu[(size_t)i * 2 * I + j], u = gu[(size_t)i * 2 * I + I + j];
      ref[(size_t)i * I + j] = (float)(g / (1.0 + exp(-g)) * u);
    }
  dbuf<sck_bf16> dgu(to_bf(gu)), dh((size_t)n * I);
  REQUIRE(ok(sck_swiglu(dgu.p, n, I, false, dh.p, 0)));
  double e = rel_err(from_bf(dh.get()), ref);
  EXPECTF(e <= 1e-2, "swiglu err %g", e);
  // Interleaved by 8 (the narrow GEMM's layout): the same values moved.
  const int I2 = 336;
  vecf il((size_t)n * 2 * I2), ref2((size_t)n * I2);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < I2; j++) {
      const float g = bfr(frand() * 4.0f), u = bfr(frand() * 4.0f);
      il[(size_t)i * 2 * I2 + 16 * (j / 8) + j % 8] = g;
      il[(size_t)i * 2 * I2 + 16 * (j / 8) + j % 8 + 8] = u;
      ref2[(size_t)i * I2 + j] = (float)(g / (1.0 + exp(-(double)g)) * u);
    }
  dbuf<sck_bf16> dil(to_bf(il)), dh2((size_t)n * I2);
  REQUIRE(ok(sck_swiglu(dil.p, n, I2, true, dh2.p, 0)));
  e = rel_err(from_bf(dh2.get()), ref2);
  EXPECTF(e <= 1e-2, "interleaved swiglu err %g", e);
}

static void test_gather(void) {
  const int H = 33, n = 10;
  vecf x = rand_bf((size_t)n * H, 1.0f);
  std::vector<int32_t> rows = {9, 0, 4, 4};
  dbuf<sck_bf16> dx(to_bf(x)), dout(rows.size() * H);
  dbuf<int32_t> dr(rows);
  REQUIRE(ok(sck_gather_rows(dx.p, H, dr.p, (int)rows.size(), dout.p, nullptr, 0)));
  vecf got = from_bf(dout.get()), ref;
  for (int r : rows) ref.insert(ref.end(), x.begin() + (size_t)r * H, x.begin() + (size_t)(r + 1) * H);
  EXPECT(rel_err(got, ref) == 0.0);
  // A graph's padding rows (past the header's count) are zeros.
  sck_step_hdr hh = {};
  hh.n_rows = 3;
  dbuf<sck_step_hdr> dh(std::vector<sck_step_hdr>{hh});
  REQUIRE(ok(sck_gather_rows(dx.p, H, dr.p, (int)rows.size(), dout.p, dh.p, 0)));
  got = from_bf(dout.get());
  for (int j = 0; j < H; j++) ref[(size_t)3 * H + j] = 0.0f;
  EXPECT(rel_err(got, ref) == 0.0);
}

static void test_convert(void) {
  const size_t n = 1000;
  vecf f(n);
  std::vector<__half> h(n);
  for (size_t i = 0; i < n; i++) {
    f[i] = frand() * 100.0f;
    h[i] = __float2half(frand() * 10.0f);
  }
  dbuf<float> df(f);
  dbuf<__half> dh(h);
  dbuf<sck_bf16> o1(n), o2(n);
  REQUIRE(ok(sck_f32_to_bf16(df.p, n, o1.p, 0)));
  REQUIRE(ok(sck_f16_to_bf16(dh.p, n, o2.p, 0)));
  vecf g1 = from_bf(o1.get()), g2 = from_bf(o2.get()), r1(n), r2(n);
  for (size_t i = 0; i < n; i++) {
    r1[i] = bfr(f[i]);
    r2[i] = bfr(__half2float(h[i]));
  }
  EXPECT(rel_err(g1, r1) == 0.0);
  EXPECT(rel_err(g2, r2) == 0.0);
}

// The picking rules of kernels.h, in double, on the host: temperature,
// eos/pad penalty, banned ids, keyed Gumbel noise (model/pick.c is the
// engine's copy; both follow kernels.h).
static void test_lm_stats(void) {
  // Configurations: several elements per thread (V > 1024), a bitmap or
  // none, eos == pad (penalised once), no eos at all.
  struct cfg { int V; bool use_banned; int32_t eos, pad; };
  const cfg cfgs[] = {{5000, true, 3, 4}, {5000, false, 3, 3}, {1000, true, -1, -1}};
  for (const cfg &cf : cfgs) {
    const int n = 6, V = cf.V;
    const int32_t eos = cf.eos, pad = cf.pad;
    vecf lg((size_t)n * V);
    for (auto &x : lg) x = frand() * 6.0f;
    lg[(size_t)1 * V + 10] = lg[(size_t)1 * V + 500] = 9.0f;  // a tie: lowest index wins, margin 0
    lg[(size_t)2 * V + V - 1] = 30.0f;                         // nearly one-hot, last id
    lg[(size_t)3 * V + 7] = 40.0f;                             // banned when there is a bitmap
    if (eos >= 0) lg[(size_t)4 * V + eos] = 12.0f;             // eos, penalised below
    if (pad >= 0) lg[(size_t)5 * V + pad] = 11.0f;
    std::vector<uint8_t> banned(V, 0);
    banned[7] = banned[V - 2] = 1;
    for (int pass = 0; pass < 2; pass++) {
      std::vector<sc_kernels_pick_row> pr(n);
      for (int i = 0; i < n; i++) {
        pr[i].temperature = pass ? (i % 2 ? 0.8f : 1.3f) : 0.0f;
        pr[i].eos_penalty = i >= 4 ? 5.0f : 0.0f;
        pr[i].key = 1234u + 77u * (uint64_t)i + (uint64_t)V;
      }
      dbuf<float> dl(lg);
      dbuf<sc_kernels_pick_row> dp(pr);
      dbuf<uint8_t> db(banned);
      // pass 0: the ids as arguments; pass 1: from a step header (a graph's
      // way), whose row count leaves the last row's record untouched.
      sck_step_hdr hh = {};
      hh.n_rows = n - 1, hh.eos_id = eos, hh.pad_id = pad;
      dbuf<sck_step_hdr> dh(std::vector<sck_step_hdr>{hh});
      sc_kernels_row_stats mark = {};
      mark.argmax = -7;
      dbuf<sc_kernels_row_stats> ds(std::vector<sc_kernels_row_stats>(n, mark));
      REQUIRE(ok(sck_lm_stats(dl.p, n, V, dp.p, cf.use_banned ? db.p : nullptr,
                              pass ? 12345 : eos, pass ? 54321 : pad, ds.p,
                              pass ? dh.p : nullptr, 0)));
      std::vector<sc_kernels_row_stats> got = ds.get();
      if (pass) EXPECTF(got[n - 1].argmax == -7, "a padding row's record was written");
      for (int i = 0; i < (pass ? n - 1 : n); i++) {
        const float *r = &lg[(size_t)i * V];
        const bool sample = pr[i].temperature > 0;
        const float inv_t = sample ? 1.0f / pr[i].temperature : 1.0f;
        std::vector<double> z(V);
        for (int j = 0; j < V; j++) {
          const bool ban = cf.use_banned && banned[j];
          // As the kernel: z in f32, then the penalty in f32.
          float zf = r[j] * inv_t;
          if (j == eos || j == pad) zf -= pr[i].eos_penalty * inv_t;
          z[j] = ban ? -INFINITY : (double)zf;
        }
        int am = 0;
        for (int j = 1; j < V; j++)
          if (z[j] > z[am]) am = j;
        double second = -INFINITY;
        for (int j = 0; j < V; j++)
          if (j != am && z[j] > second) second = z[j];
        double zs = 0, s1 = 0;
        for (int j = 0; j < V; j++) {
          if (z[j] == -INFINITY) continue;
          double d = z[j] - z[am];
          zs += exp(d);
          s1 += exp(d) * d;
        }
        double pmax = 1.0 / zs, margin = (1.0 - exp(second - z[am])) / zs,
               ent = log(zs) - s1 / zs;
        int pick = am;
        if (sample) {
          double best = -INFINITY;
          for (int j = 0; j < V; j++) {
            if (z[j] == -INFINITY) continue;
            float u = sc_kernels_pick_uniform(pr[i].key, (uint64_t)j);
            double gk = z[j] - log(-log((double)u));
            if (gk > best) best = gk, pick = j;
          }
        }
        double ppick = exp(z[pick] - z[am]) / zs;
        EXPECTF(got[i].argmax == am, "V %d row %d argmax %d != %d", V, i, got[i].argmax, am);
        EXPECTF(got[i].sample == pick, "V %d row %d pick %d != %d (T %g)", V, i, got[i].sample,
                pick, pr[i].temperature);
        EXPECTF(!(cf.use_banned && banned[got[i].sample]), "row %d picked banned %d", i,
                got[i].sample);
        EXPECTF(fabs(got[i].max_prob - pmax) <= 1e-4 * pmax, "V %d row %d p %g vs %g", V, i,
                got[i].max_prob, pmax);
        EXPECTF(fabs(got[i].sample_prob - ppick) <= 1e-4 * fmax(ppick, 1e-3),
                "V %d row %d p(pick) %g vs %g", V, i, got[i].sample_prob, ppick);
        EXPECTF(fabs(got[i].margin - margin) <= 1e-4 * fmax(pmax, 1e-3),
                "V %d row %d margin %g vs %g", V, i, got[i].margin, margin);
        EXPECTF(fabs(got[i].entropy - ent) <= 1e-4 * fmax(ent, 1.0),
                "V %d row %d entropy %g vs %g", V, i, got[i].entropy, ent);
      }
    }
  }
  // A row with every id banned has nothing to pick: zeros, index 0 (as
  // model/pick.c), never an index past the row or NaN.
  const int V = 300;
  vecf lg(V, 1.0f);
  std::vector<uint8_t> all(V, 1);
  std::vector<sc_kernels_pick_row> pr(1);
  pr[0].temperature = 0.9f, pr[0].eos_penalty = 0.0f, pr[0].key = 5;
  dbuf<float> dl(lg);
  dbuf<sc_kernels_pick_row> dp(pr);
  dbuf<uint8_t> db(all);
  dbuf<sc_kernels_row_stats> ds(1);
  REQUIRE(ok(sck_lm_stats(dl.p, 1, V, dp.p, db.p, -1, -1, ds.p, nullptr, 0)));
  sc_kernels_row_stats r = ds.get()[0];
  EXPECTF(r.sample == 0 && r.argmax == 0 && r.max_prob == 0.0f && r.sample_prob == 0.0f &&
              r.entropy == 0.0f && r.nonfinite == 0,
          "all banned: pick %d argmax %d p %g", r.sample, r.argmax, r.max_prob);
}

// NaN and infinite logits (broken weights) are flagged per row, as
// model/pick.c flags them: any l[t] not finite, banned ids included; the
// record is then zeros. Finite rows beside them are unaffected.
static void test_lm_stats_nonfinite(void) {
  const int V = 3000, n = 7;
  vecf lg((size_t)n * V);
  for (auto &x : lg) x = frand() * 4.0f;
  lg[(size_t)1 * V + 1234] = NAN;       // one NaN mid-row
  lg[(size_t)2 * V + 5] = INFINITY;     // +Inf (it would win the argmax)
  lg[(size_t)3 * V + V - 1] = -INFINITY;  // -Inf, last id (a banned id's z looks like it)
  lg[(size_t)4 * V + 7] = NAN;          // NaN at a banned id
  for (int j = 0; j < V; j++) lg[(size_t)5 * V + j] = NAN;  // all NaN
  lg[(size_t)6 * V + 0] = -INFINITY;    // -Inf, first id, sampled row
  std::vector<uint8_t> banned(V, 0);
  banned[7] = 1;
  std::vector<sc_kernels_pick_row> pr(n);
  for (int i = 0; i < n; i++) {
    pr[i].temperature = i == 6 ? 0.7f : 0.0f;
    pr[i].eos_penalty = 0.0f;
    pr[i].key = 99u + (uint64_t)i;
  }
  dbuf<float> dl(lg);
  dbuf<sc_kernels_pick_row> dp(pr);
  dbuf<uint8_t> db(banned);
  dbuf<sc_kernels_row_stats> ds(n);
  REQUIRE(ok(sck_lm_stats(dl.p, n, V, dp.p, db.p, -1, -1, ds.p, nullptr, 0)));
  std::vector<sc_kernels_row_stats> got = ds.get();
  for (int i = 0; i < n; i++) {
    bool want = false;
    for (int j = 0; j < V; j++) want |= !isfinite(lg[(size_t)i * V + j]);
    EXPECTF(got[i].nonfinite == (want ? 1 : 0), "row %d: nonfinite %d, want %d", i,
            got[i].nonfinite, want);
    if (want)
      EXPECTF(got[i].argmax == 0 && got[i].sample == 0 && got[i].max_prob == 0.0f &&
                  got[i].sample_prob == 0.0f && got[i].entropy == 0.0f,
              "row %d: a flagged row's record is zeros", i);
  }
  EXPECT(got[0].nonfinite == 0 && got[0].max_prob > 0.0f);
}

int main(void) {
  sc_kernels_device_info info;
  sc_error err = {};
  if (sc_kernels_probe(&info, &err) != SC_OK) {
    printf("no CUDA device: %s; skipping the kernel parity tests\n", err.msg);
    return 77;
  }
  fprintf(stderr, "device: %s (sm_%d%d)\n", info.name, info.cc_major, info.cc_minor);
  RUN(test_embed);
  RUN(test_add_rmsnorm);
  RUN(test_gemm);
  RUN(test_gemm_narrow);
  RUN(test_quant_fp8);
  RUN(test_qkv_post);
  RUN(test_attention_simt);
  RUN(test_attention_mma);
  RUN(test_swiglu);
  RUN(test_gather);
  RUN(test_convert);
  RUN(test_lm_stats);
  RUN(test_lm_stats_nonfinite);
  TEST_MAIN_END();
}

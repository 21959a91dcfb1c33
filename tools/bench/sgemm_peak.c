/* sgemm_peak.c — this machine's f32 matrix-product peak, the peer the CPU
 * benchmarks set sculpt's f32 pass against. Not part of sculpt; the bench
 * scripts build it on the fly (tools/bench/peak.py).
 *
 * Two libraries, both as their users run them, N^3 (N = 2048 by default)
 * with T threads, best of R products after one warm-up:
 *   - OpenBLAS cblas_sgemm (what numpy runs, and sculpt's f32 path without
 *     oneDNN), OPENBLAS_NUM_THREADS=T set by the caller;
 *   - oneDNN's matmul primitive with its weights reordered once into the
 *     layout it asks for (format "any"), as sculpt's f32 copy is, on its
 *     OpenMP team of T (OMP_NUM_THREADS=T, OMP_WAIT_POLICY=PASSIVE).
 * Debian's OpenBLAS 0.3.21 runs AVX2 (Haswell) kernels even on AVX-512
 * CPUs while oneDNN dispatches AVX-512 there, so the faster of the two is
 * the machine's peak; the scripts use the larger.
 *
 * The same oneDNN matmul in bf16 (bf16 x bf16 -> f32) and in int8
 * (s8 x s8 -> s32, the types of sculpt's int8 products) gives those kinds'
 * peaks, the rates the CPU benchmarks set int8 and bf16 steps against.
 *
 * Prints one line: RESULT n=N openblas_gflops=.. onednn_gflops=.. onednn_impl=..
 * bf16_gflops=.. bf16_impl=.. int8_gops=.. int8_impl=.. (0 where oneDNN
 * could not run that kind). */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define OK(call)                                                                    \
  do {                                                                              \
    if ((call) != dnnl_success) {                                                   \
      fprintf(stderr, "sgemm_peak: %s failed\n", #call);                            \
      return 0;                                                                     \
    }                                                                               \
  } while (0)

/* y[n][n] = x[n][n] * w, w given as n x n rows (transposed), through a
 * matmul primitive over w reordered into its preferred layout, with
 * sources and weights of type t (f32 data is converted by reorders first;
 * the result is f32, or s32 for s8). Returns the best seconds of reps, 0 on
 * failure. */
static double onednn_best(int64_t n, dnnl_data_type_t t, const float *x, const float *w,
                          float *y, int reps, const char **impl) {
  dnnl_engine_t eng;
  dnnl_stream_t st;
  OK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  OK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  dnnl_dims_t d = {n, n};
  dnnl_memory_desc_t src, wany, dst, wplain, xplain;
  OK(dnnl_memory_desc_init_by_tag(&src, 2, d, t, dnnl_ab));
  OK(dnnl_memory_desc_init_by_tag(&wany, 2, d, t, dnnl_format_tag_any));
  OK(dnnl_memory_desc_init_by_tag(&dst, 2, d, t == dnnl_s8 ? dnnl_s32 : dnnl_f32, dnnl_ab));
  OK(dnnl_memory_desc_init_by_tag(&wplain, 2, d, dnnl_f32, dnnl_ba));
  OK(dnnl_memory_desc_init_by_tag(&xplain, 2, d, dnnl_f32, dnnl_ab));
  dnnl_matmul_desc_t md;
  OK(dnnl_matmul_desc_init(&md, &src, &wany, NULL, &dst));
  dnnl_primitive_desc_t pd;
  OK(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL));
  OK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl));
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t mw_plain, mw, mx, my;
  OK(dnnl_memory_create(&mw_plain, &wplain, eng, (void *)w));
  OK(dnnl_memory_create(&mw, wmd, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_desc_t rpd;
  OK(dnnl_reorder_primitive_desc_create(&rpd, &wplain, eng, wmd, eng, NULL));
  dnnl_primitive_t reorder, mm;
  OK(dnnl_primitive_create(&reorder, rpd));
  dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, mw_plain}, {DNNL_ARG_TO, mw}};
  OK(dnnl_primitive_execute(reorder, st, 2, ra));
  OK(dnnl_stream_wait(st));
  /* The source in t (a reorder from f32; s8 saturates, which does not
   * change the speed). */
  dnnl_memory_t mx_plain;
  OK(dnnl_memory_create(&mx_plain, &xplain, eng, (void *)x));
  OK(dnnl_memory_create(&mx, &src, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_desc_t xpd;
  OK(dnnl_reorder_primitive_desc_create(&xpd, &xplain, eng, &src, eng, NULL));
  dnnl_primitive_t xreorder;
  OK(dnnl_primitive_create(&xreorder, xpd));
  dnnl_exec_arg_t xa[2] = {{DNNL_ARG_FROM, mx_plain}, {DNNL_ARG_TO, mx}};
  OK(dnnl_primitive_execute(xreorder, st, 2, xa));
  OK(dnnl_stream_wait(st));
  OK(dnnl_memory_create(&my, &dst, eng, y));
  OK(dnnl_primitive_create(&mm, pd));
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, my}};
  OK(dnnl_primitive_execute(mm, st, 3, args));
  OK(dnnl_stream_wait(st));
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = now_s();
    OK(dnnl_primitive_execute(mm, st, 3, args));
    OK(dnnl_stream_wait(st));
    t = now_s() - t;
    if (t < best) best = t;
  }
  /* The process ends next: nothing is freed. */
  return best;
}

int main(int argc, char **argv) {
  const int64_t n = argc > 1 ? atol(argv[1]) : 2048;
  const int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (n < 16 || n > 16384 || reps < 1) {
    fprintf(stderr, "usage: sgemm_peak [N (16..16384)] [repeats]\n");
    return 2;
  }
  const size_t e = (size_t)n * (size_t)n;
  float *x = malloc(e * sizeof *x), *w = malloc(e * sizeof *w), *y = malloc(e * sizeof *y);
  if (!x || !w || !y) {
    fprintf(stderr, "sgemm_peak: out of memory\n");
    return 1;
  }
  unsigned s = 12345;
  for (size_t i = 0; i < e; i++) {
    s = s * 1103515245u + 12345u;
    x[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f;
    s = s * 1103515245u + 12345u;
    w[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f;
  }
  const double flop = 2.0 * (double)n * (double)n * (double)n;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n, 1.0f, x, (int)n,
              w, (int)n, 0.0f, y, (int)n);
  double blas = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n, 1.0f, x,
                (int)n, w, (int)n, 0.0f, y, (int)n);
    t = now_s() - t;
    if (t < blas) blas = t;
  }
  const char *impl = "none", *bimpl = "none", *iimpl = "none";
  double dn = onednn_best(n, dnnl_f32, x, w, y, reps, &impl);
  double bf = onednn_best(n, dnnl_bf16, x, w, y, reps, &bimpl);
  double i8 = onednn_best(n, dnnl_s8, x, w, y, reps, &iimpl);
  printf("RESULT n=%lld openblas_gflops=%.1f onednn_gflops=%.1f onednn_impl=%s bf16_gflops=%.1f "
         "bf16_impl=%s int8_gops=%.1f int8_impl=%s\n",
         (long long)n, flop / blas / 1e9, dn > 0 ? flop / dn / 1e9 : 0.0, impl,
         bf > 0 ? flop / bf / 1e9 : 0.0, bimpl, i8 > 0 ? flop / i8 / 1e9 : 0.0, iimpl);
  return 0;
}

/* dnnl.c — the CPU backend's int8, bf16 and f32 compute, through oneDNN
 * (Debian's libdnnl 2.6, OpenMP build): the matrix products of every layer
 * and the lm_head, and the attention products and softmax too, so that one
 * OpenMP team does all the work of a pass (OpenBLAS's own threads,
 * spinning between calls on the same two cores, would fight it).
 *
 * int8: weights per output channel, symmetric (quant.c), converted once at
 * load into the blocked layout oneDNN's matmul asks for (queried with
 * format "any", then reordered). Activations are quantized at run time per
 * row in two int8 parts, x ~= s_hi q_hi + s_lo q_lo (the second quantizes
 * the first's rounding error), about 15 bits: plain per-row int8 activations doubled
 * the logit error of int8 weights alone on the shipped model (rms 0.028 vs
 * 0.014, argmax agreement 98.0% vs 99.2%, same completion text at 91.7% of
 * the corpus sites; measured again on main: argmax 98.3%, same text at
 * 107 of 120 sites, both under the gate of tests/model/test_int8.py). The
 * two parts go through the product as 2n rows of one u8 x s8 -> s32
 * matmul (the parts as bytes q + 128, or q + 64 in 7 bits on CPUs without
 * VNNI: int8_range), which reads the weights once but does twice the
 * arithmetic, and
 * a decoding step is bound by that arithmetic, not by reading the weights:
 * on the 0.5B shape (33 rows, 2 threads of the AVX-512 VM, VNNI int8 at
 * about 4x the f32 rate) one part made the step 73 ms against 100 (and
 * rotating rows by a block Hadamard transform first, as QuaRot does, still
 * left the shipped model's text under the gate: docs/measurements-history.md). Our
 * epilogue then forms y = (acc_hi s_hi + acc_lo s_lo) * sw[col] (+ bias),
 * each acc less the byte offset times the column's weight sum:
 * oneDNN 2.6's brgemm matmul takes no run-time scales (with them it falls
 * back to its slower gemm:jit). The lm_head stays bf16 in int8 mode: it
 * decides which token wins, and in int8 it alone changed the completion
 * text at 11% of the corpus sites (int8 layers with a bf16 head: 2.5%;
 * screened in int8 with its possible winners recomputed in f32, it kept
 * the argmax but not the text: docs/measurements-history.md);
 * where oneDNN has no bf16 matmul (2.6 on AVX2) it is f32.
 * bf16: weights and activations bf16, f32 accumulation, f32 out.
 * f32: weights (widened from the checkpoint's dtype) and activations f32.
 * On AVX-512 CPUs oneDNN runs its AVX-512 kernels where Debian's OpenBLAS
 * 0.3.21 runs AVX2 ones: on the 2-core VM its f32 matmul did 2048^3 at 419
 * GFLOP/s against OpenBLAS's 216, and the 0.5B shape's products 1.5-3.2x
 * (tools/bench/sgemm_peak.c).
 *
 * Primitives depend on the row count, so each context caches them by shape
 * (kind, rows, cols, M); a new M costs one oneDNN JIT (~0.4 ms), a repeat is
 * a lookup. The weight layout does not depend on M (checked at creation:
 * the primitive is made with the packed layout itself).
 *
 * Sources: oneDNN 2.6 developer guide, "Matrix Multiplication" (matmul
 * primitive, format_tag::any, runtime dimensions, output scales), "Int8
 * Computation Aspects" (s8s8 compensation), "Softmax", dnnl.h. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#define _POSIX_C_SOURCE 200809L
#include "model_impl.h"

#include <dlfcn.h>
#include <dnnl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- loading oneDNN ----------------------------------------------------------
 * libdnnl is opened at run time, not linked (as model/cuda.c opens cuBLAS):
 * its OpenMP runtime (libgomp) reads OMP_WAIT_POLICY once, when it is
 * loaded, and its default, spinning at every barrier, is ruinous on a
 * machine whose cores are busy with anything else (the editor, other
 * processes): measured on the loaded CI machine, one int8 `sculpt complete`
 * took 2.0 s spinning against 0.17-0.21 s passive. So before the first
 * load, OMP_WAIT_POLICY=PASSIVE is set unless the user set it. A missing
 * libdnnl makes int8/bf16 unavailable (f32 then, with one log line), not
 * the binary unusable. */
#define DNNL_FNS(X)                                                                            \
  X(dnnl_engine_create)                                                                            \
  X(dnnl_engine_destroy)                                                                            \
  X(dnnl_matmul_desc_init)                                                                            \
  X(dnnl_memory_create)                                                                            \
  X(dnnl_memory_desc_get_size)                                                                            \
  X(dnnl_memory_desc_init_by_strides)                                                                            \
  X(dnnl_memory_desc_init_by_tag)                                                                            \
  X(dnnl_memory_destroy)                                                                            \
  X(dnnl_primitive_attr_create)                                                                            \
  X(dnnl_primitive_attr_destroy)                                                                            \
  X(dnnl_primitive_attr_set_output_scales)                                                                            \
  X(dnnl_primitive_create)                                                                            \
  X(dnnl_primitive_desc_create)                                                                            \
  X(dnnl_primitive_desc_destroy)                                                                            \
  X(dnnl_primitive_desc_query)                                                                            \
  X(dnnl_primitive_desc_query_md)                                                                            \
  X(dnnl_primitive_destroy)                                                                            \
  X(dnnl_primitive_execute)                                                                            \
  X(dnnl_reorder_primitive_desc_create)                                                                            \
  X(dnnl_softmax_forward_desc_init)                                                                            \
  X(dnnl_stream_create)                                                                            \
  X(dnnl_stream_destroy)                                                                            \
  X(dnnl_stream_wait)

static struct {
  void *lib;
  void (*omp_set_num_threads)(int);
  /* libgomp (libdnnl's OpenMP runtime, found through its handle) for our
   * own loops (sc_dnnl_for); NULL when a build of libdnnl has none. */
  void (*GOMP_parallel)(void (*)(void *), void *, unsigned, unsigned);
  int (*omp_get_thread_num)(void);
  int (*omp_get_num_threads)(void);
  int (*omp_get_max_threads)(void);
#define X(f) __typeof__(f) *f;
  DNNL_FNS(X)
#undef X
  char error[200];
} D;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_once(void) {
  /* SCULPT_ONEDNN=0: run as if oneDNN were not installed (the f32 path's
   * fallback attention; tests check it against the reference). */
  const char *use = getenv("SCULPT_ONEDNN");
  if (use && strcmp(use, "0") == 0) {
    snprintf(D.error, sizeof D.error, "oneDNN is turned off (SCULPT_ONEDNN=0)");
    return;
  }
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
#ifdef SC_ASAN
  /* LeakSanitizer's exit-time thread tracer crashes (signal 11) on a live
   * libgomp worker thread: sanitizer builds run oneDNN on one thread. */
  setenv("OMP_NUM_THREADS", "1", 0);
#endif
  void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(D.error, sizeof D.error, "oneDNN is not installed (libdnnl.so.2: %s)", dlerror());
    return;
  }
#define X(f)                                                                                   \
  if (!(*(void **)&D.f = dlsym(lib, #f))) {                                                    \
    snprintf(D.error, sizeof D.error, "libdnnl.so.2 has no %s", #f);                          \
    return;                                                                                    \
  }
  DNNL_FNS(X)
#undef X
  *(void **)&D.omp_set_num_threads = dlsym(lib, "omp_set_num_threads");
  *(void **)&D.GOMP_parallel = dlsym(lib, "GOMP_parallel");
  *(void **)&D.omp_get_thread_num = dlsym(lib, "omp_get_thread_num");
  *(void **)&D.omp_get_num_threads = dlsym(lib, "omp_get_num_threads");
  *(void **)&D.omp_get_max_threads = dlsym(lib, "omp_get_max_threads");
  if (!D.omp_get_thread_num || !D.omp_get_num_threads || !D.omp_get_max_threads)
    D.GOMP_parallel = NULL;
  D.lib = lib;
}

static sc_status dnnl_load(sc_error *err) {
  pthread_once(&g_once, load_once);
  SC_CHECK(D.lib, err, SC_ERR_UNSUPPORTED, "%s", D.error);
  return SC_OK;
}

static void set_threads(int n) {
#ifdef SC_ASAN
  n = 1; /* one thread in sanitizer builds, whatever --threads says (load_once) */
#endif
  if (n > 0 && D.omp_set_num_threads) D.omp_set_num_threads(n);
}

/* The row count the packing primitive is made with (any: the layout does
 * not depend on it). */
#define PACK_M 32
#define CACHE_SLOTS 48
/* Most bytes of s32 sums one int8 product writes (see sc_dnnl_linear). */
#define ACC_BYTES ((int64_t)64 << 20)

struct sc_packed {
  sc_weights_kind kind;
  int64_t rows, cols;
  dnnl_memory_desc_t md; /* the blocked layout */
  void *data;            /* md's bytes (owned) */
  size_t bytes;
  float *scales;         /* INT8: [rows] (owned) */
  int32_t *wsum;         /* INT8: [rows] each row's sum of int8 weights (owned) */
  int qmax;              /* INT8: activations quantized over [-qmax, qmax] */
};

typedef enum prim_kind { PRIM_LINEAR, PRIM_QK, PRIM_SOFTMAX, PRIM_PV } prim_kind;

typedef struct prim_key {
  int kind;    /* prim_kind */
  int wkind;   /* sc_weights_kind for PRIM_LINEAR */
  int64_t a, b, c, d; /* shape: linear (rows, cols, M); attention (R, n, ...) */
} prim_key;

typedef struct prim_slot {
  bool used;
  prim_key key;
  dnnl_primitive_t prim;
  dnnl_memory_desc_t md[3]; /* src, weights, dst (or data for softmax) */
  uint64_t last_use;
} prim_slot;

struct sc_dnnl_ctx {
  const sc_model *m;
  dnnl_engine_t eng;
  dnnl_stream_t strm;
  prim_slot slots[CACHE_SLOTS];
  uint64_t clock;
  void *act;        /* quantized (int8) or converted (bf16) activations */
  size_t act_cap;   /* bytes */
  float *act_scale; /* [act_rows] int8 row scales */
  size_t act_rows;
  float *resid;     /* [team][K] each thread's row rounding error */
  size_t resid_cap; /* floats */
};

/* ---- our loops on oneDNN's OpenMP team ------------------------------------------
 * The work around the products (quantizing or converting the activations,
 * the int8 epilogue, the SiLU) ran on one thread while the rest of oneDNN's
 * team slept: on the 0.5B shape's int8 step (33 rows, 2 threads) about 19
 * ms of 96. sc_dnnl_for runs such a loop as one parallel region of the same
 * team, through libgomp's entry point for `#pragma omp parallel`
 * (GOMP_parallel(fn, data, 0 = the team size omp_set_num_threads set, 0);
 * GCC's libgomp ABI). Each thread takes one contiguous range, so every
 * row or element is computed by the same code as on one thread, bit for
 * bit. Waking the team costs microseconds: loops under grain elements a
 * thread stay on the calling thread. */
typedef struct for_job {
  sc_range_fn fn;
  void *arg;
  int64_t n;
} for_job;

static void for_main(void *p) {
  const for_job *j = p;
  const int64_t t = D.omp_get_thread_num(), T = D.omp_get_num_threads();
  const int64_t a = j->n * t / T, b = j->n * (t + 1) / T;
  if (a < b) j->fn(j->arg, a, b);
}

void sc_dnnl_for(sc_dnnl_ctx *c, int64_t n, int64_t cost, int64_t grain, sc_range_fn fn,
                 void *arg) {
  if (n <= 0) return;
  if (!c || !D.GOMP_parallel || c->m->n_threads == 1 || n < 2 || n * cost < 2 * grain) {
    fn(arg, 0, n);
    return;
  }
  for_job j = {fn, arg, n};
  D.GOMP_parallel(for_main, &j, 0, 0);
}

/* The calling thread's index in the running region (0 outside one). */
static int thread_index(void) { return D.GOMP_parallel ? D.omp_get_thread_num() : 0; }

/* Threads a region of sc_dnnl_for may use. */
static int team_size(const sc_dnnl_ctx *c) {
  if (!D.GOMP_parallel || c->m->n_threads == 1) return 1;
  const int t = D.omp_get_max_threads();
  return t < 1 ? 1 : t;
}

static sc_status dnnl_fail(sc_error *err, dnnl_status_t s, const char *what) {
  return sc_error_set(err, s == dnnl_unimplemented ? SC_ERR_UNSUPPORTED : SC_ERR_INTERNAL,
                      "oneDNN: %s failed (status %d%s)", what, (int)s,
                      s == dnnl_unimplemented ? ": not implemented for this CPU" : "");
}

#define DN(call, what)                                                                          \
  do {                                                                                          \
    dnnl_status_t s_ = (call);                                                                  \
    if (s_ != dnnl_success) return dnnl_fail(err, s_, what);                                    \
  } while (0)

static dnnl_data_type_t wtype(sc_weights_kind k) {
  return k == SC_WEIGHTS_INT8 ? dnnl_s8 : k == SC_WEIGHTS_F32 ? dnnl_f32 : dnnl_bf16;
}

/* f32 -> bf16, round to nearest even (NaN kept a NaN). */
static inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* A matmul primitive descriptor for x[M][K] * w (K x N, given as N x K
 * rows) -> y[M][N]; wmd NULL means "any" (to learn the layout). */
static sc_status linear_pd(dnnl_engine_t eng, sc_weights_kind kind, int64_t N, int64_t K,
                           int64_t M, const dnnl_memory_desc_t *wmd, dnnl_primitive_desc_t *pd,
                           dnnl_memory_desc_t md[3], sc_error *err) {
  dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
  dnnl_data_type_t t = wtype(kind);
  DN(D.dnnl_memory_desc_init_by_tag(&md[0], 2, sd, kind == SC_WEIGHTS_INT8 ? dnnl_u8 : t, dnnl_ab),
     "source descriptor");
  if (wmd) md[1] = *wmd;
  else DN(D.dnnl_memory_desc_init_by_tag(&md[1], 2, wd, t, dnnl_format_tag_any), "weights descriptor");
  DN(D.dnnl_memory_desc_init_by_tag(&md[2], 2, dd, kind == SC_WEIGHTS_INT8 ? dnnl_s32 : dnnl_f32,
                                  dnnl_ab),
     "destination descriptor");
  dnnl_matmul_desc_t d;
  DN(D.dnnl_matmul_desc_init(&d, &md[0], &md[1], NULL, &md[2]), "matmul descriptor");
  DN(D.dnnl_primitive_desc_create(pd, &d, NULL, eng, NULL), "matmul primitive descriptor");
  return SC_OK;
}

/* Runs prim with (arg, memory over ptr with md) pairs. */
static sc_status exec_prim(dnnl_engine_t eng, dnnl_stream_t strm, dnnl_primitive_t prim, int n,
                           const int *args, const dnnl_memory_desc_t *const *mds,
                           void *const *ptrs, const char *what, sc_error *err) {
  dnnl_memory_t mem[4] = {0};
  dnnl_exec_arg_t ea[4];
  dnnl_status_t s = dnnl_success;
  for (int i = 0; i < n && s == dnnl_success; i++) {
    s = D.dnnl_memory_create(&mem[i], mds[i], eng, ptrs[i]);
    ea[i].arg = args[i];
    ea[i].memory = mem[i];
  }
  if (s == dnnl_success) s = D.dnnl_primitive_execute(prim, strm, n, ea);
  if (s == dnnl_success) s = D.dnnl_stream_wait(strm);
  for (int i = 0; i < n; i++)
    if (mem[i]) D.dnnl_memory_destroy(mem[i]);
  if (s != dnnl_success) return dnnl_fail(err, s, what);
  return SC_OK;
}

/* ---- packing (at load) --------------------------------------------------------- */

static void pack_free(sc_packed *p) {
  if (!p) return;
  free(p->data);
  free(p->scales);
  free(p->wsum);
  free(p);
}

/* A conversion into the plain int8, bf16 or f32 copy (sc_run_ranges job). */
typedef struct convert_job {
  const sc_weight *w;
  sc_weights_kind kind;
  uint8_t *buf;
  float *scales;
  int failed; /* set (atomically) by a range that could not allocate */
} convert_job;

static void convert_rows(void *arg, int64_t r0, int64_t r1) {
  convert_job *j = arg;
  const int64_t K = j->w->cols;
  if (j->kind == SC_WEIGHTS_F32) {
    sc_weight_rows_to_f32(j->w, r0, r1 - r0, (float *)(void *)j->buf + (size_t)r0 * (size_t)K);
    return;
  }
  float *tmp = malloc((size_t)K * sizeof *tmp);
  if (!tmp) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t r = r0; r < r1; r++) {
    if (j->kind == SC_WEIGHTS_INT8) {
      sc_quantize_rows_i8(j->w, r, 1, (int8_t *)j->buf + (size_t)r * (size_t)K, j->scales + r,
                          tmp);
    } else {
      sc_weight_rows_to_f32(j->w, r, 1, tmp);
      uint16_t *dst = (uint16_t *)j->buf + (size_t)r * (size_t)K;
      for (int64_t c = 0; c < K; c++) dst[c] = f32_to_bf16(tmp[c]);
    }
  }
  free(tmp);
}

/* The plain (row-major N x K) int8, bf16 or f32 copy of w (scales for
 * int8), made on every core: loading a 7B checkpoint converts 7 billion
 * values. An aligned dense matrix that is already the kind's type, or bf16
 * for f32, is used in place (*owned false, *type its dtype): the reorder
 * widens bf16 itself, which took the 0.5B shape's f32 load from 6.3 s to
 * 3.8 s against widening into a copy first, bit for bit the same. */
static sc_status plain_copy(const sc_weight *w, sc_weights_kind kind, void **out, bool *owned,
                            dnnl_data_type_t *type, float *scales, sc_error *err) {
  const int64_t N = w->rows, K = w->cols;
  *owned = false;
  *type = wtype(kind);
  if ((kind == SC_WEIGHTS_F32 && (w->dtype == SC_DTYPE_F32 || w->dtype == SC_DTYPE_BF16)) ||
      (kind == SC_WEIGHTS_BF16 && w->dtype == SC_DTYPE_BF16)) {
    const size_t es = w->dtype == SC_DTYPE_F32 ? 4 : 2;
    if (w->row_bytes == (size_t)K * es && (uintptr_t)w->data % es == 0) {
      *out = (void *)(uintptr_t)w->data;
      *type = w->dtype == SC_DTYPE_F32 ? dnnl_f32 : dnnl_bf16;
      return SC_OK;
    }
  }
  *owned = true;
  const size_t esize = kind == SC_WEIGHTS_INT8 ? 1 : kind == SC_WEIGHTS_F32 ? 4 : 2;
  uint8_t *buf = malloc((size_t)N * (size_t)K * esize);
  SC_CHECK(buf, err, SC_ERR_NOMEM, "out of memory converting a %lld x %lld matrix",
           (long long)N, (long long)K);
  if (kind == SC_WEIGHTS_INT8 && w->dtype == SC_DTYPE_I8) {
    /* Already quantized by the same rule: copied as is, bit for bit. */
    for (int64_t r = 0; r < N; r++)
      memcpy(buf + (size_t)r * (size_t)K, w->data + (size_t)r * w->row_bytes, (size_t)K);
    memcpy(scales, w->scales, (size_t)N * sizeof *scales);
    *out = buf;
    return SC_OK;
  }
  convert_job job = {w, kind, buf, scales, 0};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  sc_run_ranges(N, N < 64 ? 1 : cpus < 1 ? 1 : (int)cpus, convert_rows, &job);
  if (job.failed) {
    free(buf);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory converting a matrix");
  }
  *out = buf;
  return SC_OK;
}

/* A packed matrix's memory: 2 MiB-aligned and marked for transparent huge
 * pages where it spans at least one (under THP's "madvise" mode, as on the
 * 2-core VM, unmarked memory gets 4 KiB pages). A decoding step streams every
 * matrix once; with 4 KiB pages that is a TLB miss every 4 KiB, each a
 * two-level page walk inside a VM. */
static void *packed_alloc(size_t bytes) {
  const size_t huge = (size_t)2 << 20;
  void *p = NULL;
  if (bytes >= huge) {
    if (posix_memalign(&p, huge, bytes) != 0) return NULL;
    (void)madvise(p, bytes & ~(huge - 1), MADV_HUGEPAGE);
    return p;
  }
  return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL;
}

static sc_status pack_one(dnnl_engine_t eng, dnnl_stream_t strm, const sc_weight *w,
                          sc_weights_kind kind, sc_packed **out, sc_error *err) {
  *out = NULL;
  sc_packed *p = calloc(1, sizeof *p);
  SC_CHECK(p, err, SC_ERR_NOMEM, "out of memory");
  p->kind = kind;
  p->rows = w->rows;
  p->cols = w->cols;
  if (kind == SC_WEIGHTS_INT8) {
    p->scales = malloc((size_t)w->rows * sizeof *p->scales);
    p->wsum = malloc((size_t)w->rows * sizeof *p->wsum);
    if (!p->scales || !p->wsum) {
      pack_free(p);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
  }
  dnnl_primitive_desc_t pd = NULL, rpd = NULL;
  dnnl_primitive_t reorder = NULL;
  dnnl_memory_t from = NULL, to = NULL;
  void *plain = NULL;
  bool plain_owned = false;
  dnnl_data_type_t plain_type = wtype(kind);
  dnnl_memory_desc_t md[3], pmd;
  sc_status st = linear_pd(eng, kind, w->rows, w->cols, PACK_M, NULL, &pd, md, err);
  if (st == SC_OK) {
    p->md = *D.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    p->bytes = D.dnnl_memory_desc_get_size(&p->md);
    p->data = packed_alloc(p->bytes);
    if (!p->data)
      st = sc_error_set(err, SC_ERR_NOMEM, "out of memory for a %.1f MiB matrix",
                        (double)p->bytes / 1048576.0);
  }
  if (st == SC_OK) st = plain_copy(w, kind, &plain, &plain_owned, &plain_type, p->scales, err);
  if (st == SC_OK && kind == SC_WEIGHTS_INT8)
    for (int64_t r = 0; r < w->rows; r++) {
      const int8_t *q = (const int8_t *)plain + (size_t)r * (size_t)w->cols;
      int32_t sum = 0;
      for (int64_t c = 0; c < w->cols; c++) sum += q[c];
      p->wsum[r] = sum;
    }
  if (st == SC_OK) {
    /* The plain matrix as oneDNN sees it: K x N with N x K storage ("ba"). */
    dnnl_dims_t wd = {w->cols, w->rows};
    dnnl_status_t s = D.dnnl_memory_desc_init_by_tag(&pmd, 2, wd, plain_type, dnnl_ba);
    if (s == dnnl_success) s = D.dnnl_memory_create(&from, &pmd, eng, plain);
    if (s == dnnl_success) s = D.dnnl_memory_create(&to, &p->md, eng, p->data);
    if (s == dnnl_success) s = D.dnnl_reorder_primitive_desc_create(&rpd, &pmd, eng, &p->md, eng, NULL);
    if (s == dnnl_success) s = D.dnnl_primitive_create(&reorder, rpd);
    if (s == dnnl_success) {
      dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
      s = D.dnnl_primitive_execute(reorder, strm, 2, args);
    }
    if (s == dnnl_success) s = D.dnnl_stream_wait(strm);
    if (s != dnnl_success) st = dnnl_fail(err, s, "reordering a matrix");
  }
  if (reorder) D.dnnl_primitive_destroy(reorder);
  if (rpd) D.dnnl_primitive_desc_destroy(rpd);
  if (pd) D.dnnl_primitive_desc_destroy(pd);
  if (from) D.dnnl_memory_destroy(from);
  if (to) D.dnnl_memory_destroy(to);
  if (plain_owned) free(plain);
  if (st != SC_OK) {
    pack_free(p);
    return st;
  }
  *out = p;
  return SC_OK;
}

/* The name of the implementation oneDNN picks for a kind's matmul of N x K
 * weights ("brg:avx512_core", "gemm:jit", ...) into name; "?" when it has
 * none. */
static void matmul_impl(dnnl_engine_t eng, sc_weights_kind kind, int64_t N, int64_t K,
                        char *name, size_t cap) {
  sc_error err = {0};
  dnnl_primitive_desc_t pd = NULL;
  dnnl_memory_desc_t md[3];
  const char *impl = NULL;
  if (linear_pd(eng, kind, N, K, PACK_M, NULL, &pd, md, &err) != SC_OK ||
      D.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
    impl = NULL;
  snprintf(name, cap, "%s", impl ? impl : "?");
  if (pd) D.dnnl_primitive_desc_destroy(pd);
}

/* f32: only oneDNN's brgemm matmul (AVX-512 and up) beats OpenBLAS. Where
 * it falls back to its gemm:jit (AVX2 CPUs: ONEDNN_MAX_CPU_ISA=AVX2 on the
 * 2-core VM), that did the 0.5B shape's 256-row products at 98-177 GFLOP/s
 * against OpenBLAS's 134-200, so f32 stays with OpenBLAS there. */
static sc_status f32_worth_it(dnnl_engine_t eng, const sc_model *m, sc_error *err) {
  const sc_weight *w = m->cfg.n_layers > 0 ? &m->layers[0].wq : &m->lm_head;
  char name[64];
  matmul_impl(eng, SC_WEIGHTS_F32, w->rows, w->cols, name, sizeof name);
  SC_CHECK(strncmp(name, "brg", 3) == 0, err, SC_ERR_UNSUPPORTED,
           "oneDNN's f32 matmul on this CPU is %s, not brgemm: OpenBLAS is faster", name);
  return SC_OK;
}

static bool g_bf16_native;
static pthread_once_t g_bf16_once = PTHREAD_ONCE_INIT;

static void bf16_probe(void) {
  sc_error err = {0};
  dnnl_engine_t eng = NULL;
  if (dnnl_load(&err) != SC_OK || D.dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) return;
  char name[64];
  matmul_impl(eng, SC_WEIGHTS_BF16, 4864, 896, name, sizeof name);
  g_bf16_native = strncmp(name, "brg", 3) == 0 && (strstr(name, "bf16") || strstr(name, "amx"));
  D.dnnl_engine_destroy(eng);
}

/* AVX512_CORE without BF16 runs bf16 through gemm:jit (converting), AVX2
 * has none (ONEDNN_MAX_CPU_ISA on the 2-core VM). */
bool sc_dnnl_bf16_native(void) {
  pthread_once(&g_bf16_once, bf16_probe);
  return g_bf16_native;
}

/* int8 activations are unsigned bytes, q + qmax + 1 (our epilogue takes
 * away (qmax + 1) times each weight row's sum), so that oneDNN needs no
 * s8 compensation and the range can shrink where it must: its u8 x s8 ->
 * s32 matmul is exact on VNNI (vpdpbusd adds four products in 32 bits) and
 * AMX, but its gemm:jit on AVX2, and on AVX-512 without VNNI, multiplies
 * with vpmaddubsw, which adds two u8 x s8 products in a saturating 16-bit
 * lane: with 8-bit activations every sum of a random 33 x 896 x 256 product
 * came out wrong, by up to 130,175 (ONEDNN_MAX_CPU_ISA=AVX2 and AVX512_CORE
 * on the 2-core VM; oneDNN's guide, "Nuances of int8 Computations", warns
 * of it). Bytes of at most 127 never saturate (2 x 127 x 128 < 32,768). So
 * before packing, one product at the worst case (every byte at its top,
 * every weight 127 or -127) is checked: exact with bytes up to 255, the
 * activations take [-127, 127] (*qmax 127); else, exact up to 127,
 * [-63, 63] (63: 7 bits a part, about 13 for the two); else none (0). */
#define PROBE_N 64
#define PROBE_K 512
static sc_status int8_range(dnnl_engine_t eng, dnnl_stream_t strm, int *qmax, sc_error *err) {
  *qmax = 0;
  int8_t *wq = malloc((size_t)PROBE_N * PROBE_K);
  uint8_t *src = malloc((size_t)PACK_M * PROBE_K);
  int32_t *dst = malloc((size_t)PACK_M * PROBE_N * sizeof *dst);
  float scales[PROBE_N];
  sc_packed *p = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  sc_status st = wq && src && dst ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (st == SC_OK) {
    for (int r = 0; r < PROBE_N; r++) {
      memset(wq + (size_t)r * PROBE_K, r % 2 ? -127 : 127, PROBE_K);
      scales[r] = 1.0f;
    }
    sc_weight w = {(const uint8_t *)wq, SC_DTYPE_I8, PROBE_N, PROBE_K, PROBE_K, scales, NULL};
    st = pack_one(eng, strm, &w, SC_WEIGHTS_INT8, &p, err);
  }
  dnnl_memory_desc_t md[3];
  if (st == SC_OK)
    st = linear_pd(eng, SC_WEIGHTS_INT8, PROBE_N, PROBE_K, PACK_M, &p->md, &pd, md, err);
  if (st == SC_OK && D.dnnl_primitive_create(&prim, pd) != dnnl_success)
    st = sc_error_set(err, SC_ERR_UNSUPPORTED, "oneDNN: creating the int8 probe failed");
  for (int q = 127; st == SC_OK && q >= 63 && *qmax == 0; q = q == 127 ? 63 : 0) {
    memset(src, 2 * q + 1, (size_t)PACK_M * PROBE_K);
    static const int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    const dnnl_memory_desc_t *mds[3] = {&md[0], &md[1], &md[2]};
    void *ptrs[3] = {src, p->data, dst};
    st = exec_prim(eng, strm, prim, 3, args, mds, ptrs, "the int8 probe", err);
    bool exact = st == SC_OK;
    for (int i = 0; exact && i < PACK_M * PROBE_N; i++)
      exact = dst[i] == (2 * q + 1) * p->wsum[i % PROBE_N];
    if (exact) *qmax = q;
  }
  if (prim) D.dnnl_primitive_destroy(prim);
  if (pd) D.dnnl_primitive_desc_destroy(pd);
  pack_free(p);
  free(wq);
  free(src);
  free(dst);
  return st;
}

sc_status sc_dnnl_pack_model(sc_model *m, sc_weights_kind kind, sc_error *err) {
  SC_CHECK(kind == SC_WEIGHTS_INT8 || kind == SC_WEIGHTS_BF16 || kind == SC_WEIGHTS_F32, err,
           SC_ERR_INVALID, "oneDNN packs int8, bf16 or f32 weights only");
  SC_TRY(dnnl_load(err));
  const int L = m->cfg.n_layers;
  const size_t total = (size_t)L * 7 + 1;
  m->packs = calloc(total, sizeof *m->packs);
  SC_CHECK(m->packs, err, SC_ERR_NOMEM, "out of memory");
  dnnl_engine_t eng = NULL;
  dnnl_stream_t strm = NULL;
  DN(D.dnnl_engine_create(&eng, dnnl_cpu, 0), "engine");
  dnnl_status_t s = D.dnnl_stream_create(&strm, eng, dnnl_stream_default_flags);
  if (s != dnnl_success) {
    D.dnnl_engine_destroy(eng);
    return dnnl_fail(err, s, "stream");
  }
  set_threads(m->n_threads);
  sc_status st = kind == SC_WEIGHTS_F32 ? f32_worth_it(eng, m, err) : SC_OK;
  int qmax = 0;
  if (kind == SC_WEIGHTS_INT8 && st == SC_OK) {
    st = int8_range(eng, strm, &qmax, err);
    if (st == SC_OK && qmax == 0)
      st = sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "oneDNN's int8 matrix products are not exact on this CPU");
    if (st == SC_OK && qmax < 127)
      SC_LOG_DEBUG("int8: activations in 7 bits a part (oneDNN's int8 products would "
                   "saturate 8-bit ones on this CPU)");
  }
  /* The lm_head: bf16 in int8 and bf16 (see sc_weights_kind), but f32 in
   * int8 where oneDNN has no bf16 matmul (2.6 on AVX2). */
  sc_weights_kind head = kind == SC_WEIGHTS_F32 ? SC_WEIGHTS_F32 : SC_WEIGHTS_BF16;
  if (kind == SC_WEIGHTS_INT8 && st == SC_OK) {
    char name[64];
    matmul_impl(eng, SC_WEIGHTS_BF16, m->lm_head.rows, m->lm_head.cols, name, sizeof name);
    if (strcmp(name, "?") == 0) head = SC_WEIGHTS_F32;
  }
  for (int l = 0; l <= L && st == SC_OK; l++) {
    sc_weight *ws[7];
    int nw = 0;
    if (l < L) {
      sc_layer *y = &m->layers[l];
      sc_weight *list[7] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wgate, &y->wup, &y->wdown};
      memcpy(ws, list, sizeof list);
      nw = 7;
    } else {
      ws[0] = &m->lm_head;
      nw = 1;
    }
    for (int i = 0; i < nw && st == SC_OK; i++) {
      sc_packed *p = NULL;
      st = pack_one(eng, strm, ws[i], l == L ? head : kind, &p, err);
      if (st == SC_OK) {
        p->qmax = qmax;
        m->packs[m->n_packs++] = p;
        ws[i]->packed = p;
      }
    }
  }
  D.dnnl_stream_destroy(strm);
  D.dnnl_engine_destroy(eng);
  if (st != SC_OK) sc_dnnl_free_packs(m);
  return st;
}

void sc_dnnl_free_packs(sc_model *m) {
  for (size_t i = 0; i < m->n_packs; i++) pack_free(m->packs[i]);
  free(m->packs);
  m->packs = NULL;
  m->n_packs = 0;
  for (int l = 0; m->layers && l < m->cfg.n_layers; l++) {
    sc_layer *y = &m->layers[l];
    y->wq.packed = y->wk.packed = y->wv.packed = y->wo.packed = NULL;
    y->wgate.packed = y->wup.packed = y->wdown.packed = NULL;
  }
  m->lm_head.packed = m->embed.packed = NULL;
}

uint64_t sc_dnnl_packed_bytes(const sc_model *m) {
  uint64_t b = 0;
  for (size_t i = 0; i < m->n_packs; i++)
    b += m->packs[i]->bytes + (m->packs[i]->scales ? (uint64_t)m->packs[i]->rows * 4 : 0);
  return b;
}

/* ---- contexts ------------------------------------------------------------------- */

sc_status sc_dnnl_ctx_new(const sc_model *m, sc_dnnl_ctx **out, sc_error *err) {
  *out = NULL;
  SC_TRY(dnnl_load(err));
  sc_dnnl_ctx *c = calloc(1, sizeof *c);
  SC_CHECK(c, err, SC_ERR_NOMEM, "out of memory");
  c->m = m;
  dnnl_status_t s = D.dnnl_engine_create(&c->eng, dnnl_cpu, 0);
  if (s == dnnl_success) s = D.dnnl_stream_create(&c->strm, c->eng, dnnl_stream_default_flags);
  if (s != dnnl_success) {
    sc_dnnl_ctx_free(c);
    return dnnl_fail(err, s, "engine");
  }
  *out = c;
  return SC_OK;
}

void sc_dnnl_ctx_free(sc_dnnl_ctx *c) {
  if (!c) return;
  for (int i = 0; i < CACHE_SLOTS; i++)
    if (c->slots[i].used) D.dnnl_primitive_destroy(c->slots[i].prim);
  if (c->strm) D.dnnl_stream_destroy(c->strm);
  if (c->eng) D.dnnl_engine_destroy(c->eng);
  free(c->act);
  free(c->act_scale);
  free(c->resid);
  free(c);
}

void sc_dnnl_ctx_begin(sc_dnnl_ctx *c) { set_threads(c->m->n_threads); }

static bool key_eq(const prim_key *a, const prim_key *b) {
  return a->kind == b->kind && a->wkind == b->wkind && a->a == b->a && a->b == b->b &&
         a->c == b->c && a->d == b->d;
}

/* The cached slot for key, or NULL; on a miss *victim is the slot to fill
 * (a free one, else the least recently used). */
static prim_slot *cache_find(sc_dnnl_ctx *c, const prim_key *key, prim_slot **victim) {
  prim_slot *v = NULL;
  for (int i = 0; i < CACHE_SLOTS; i++) {
    prim_slot *sl = &c->slots[i];
    if (sl->used && key_eq(&sl->key, key)) {
      sl->last_use = ++c->clock;
      return sl;
    }
    if (!sl->used) {
      if (!v || v->used) v = sl;
    } else if (!v || (v->used && sl->last_use < v->last_use)) {
      v = sl;
    }
  }
  *victim = v;
  return NULL;
}

/* Makes a primitive from pd into slot (taking pd), evicting what was there. */
static sc_status cache_fill(sc_dnnl_ctx *c, prim_slot *sl, const prim_key *key,
                            dnnl_primitive_desc_t pd, const dnnl_memory_desc_t md[3],
                            sc_error *err) {
  dnnl_primitive_t prim = NULL;
  dnnl_status_t s = D.dnnl_primitive_create(&prim, pd);
  D.dnnl_primitive_desc_destroy(pd);
  if (s != dnnl_success) return dnnl_fail(err, s, "creating a primitive");
  if (sl->used) D.dnnl_primitive_destroy(sl->prim);
  sl->used = true;
  sl->key = *key;
  sl->prim = prim;
  memcpy(sl->md, md, sizeof sl->md);
  sl->last_use = ++c->clock;
  return SC_OK;
}

static sc_status run(sc_dnnl_ctx *c, dnnl_primitive_t prim, int n, const int *args,
                     const dnnl_memory_desc_t *const *mds, void *const *ptrs, const char *what,
                     sc_error *err) {
  return exec_prim(c->eng, c->strm, prim, n, args, mds, ptrs, what, err);
}

static sc_status ensure_act(sc_dnnl_ctx *c, size_t bytes, size_t rows, sc_error *err) {
  if (bytes > c->act_cap) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0) p = NULL;
    SC_CHECK(p, err, SC_ERR_NOMEM, "out of memory for activations");
    free(c->act);
    c->act = p;
    c->act_cap = bytes;
  }
  if (rows > c->act_rows) {
    float *s = realloc(c->act_scale, rows * sizeof *s);
    SC_CHECK(s, err, SC_ERR_NOMEM, "out of memory");
    c->act_scale = s;
    c->act_rows = rows;
  }
  return SC_OK;
}

/* The rounding error x - s * (q - zero) into e. */
SC_VECTOR_CLONES
static void residual(const float *x, const uint8_t *q, float s, int32_t zero, int64_t K,
                     float *e) {
  for (int64_t j = 0; j < K; j++) e[j] = x[j] - s * (float)((int32_t)q[j] - zero);
}

/* int8 activations in two parts (why: see the file comment): x ~= s_hi *
 * q_hi + s_lo * q_lo, q_hi by the int8 rule over [-qmax, qmax], q_lo the
 * same rule over the rounding error x - s_hi * q_hi (s_lo ~ s_hi / 2 qmax),
 * each stored as bytes q + qmax + 1 (int8_range). e is [K] scratch. */
static void quantize_split(const float *x, int64_t K, int qmax, uint8_t *q_hi, uint8_t *q_lo,
                           float *s_hi, float *s_lo, float *e) {
  *s_hi = sc_quantize_row_u8(x, K, qmax, q_hi);
  residual(x, q_hi, *s_hi, qmax + 1, K, e);
  *s_lo = sc_quantize_row_u8(e, K, qmax, q_lo);
}

/* y[j] = ((hi[j] - z[j]) * sh + (lo[j] - z[j]) * sl) * ws[j] (+ bias[j]),
 * z[j] = zero * wsum[j]: the sums of the signed parts (exact in 32 bits:
 * the true sum and zero * wsum are both under 255 * 128 * K). */
SC_VECTOR_CLONES
static void dequant_row(const int32_t *hi, const int32_t *lo, float sh, float sl,
                        const float *ws, const int32_t *wsum, int32_t zero, const float *bias,
                        int64_t N, float *y) {
  if (bias)
    for (int64_t j = 0; j < N; j++) {
      const int32_t z = zero * wsum[j];
      y[j] = ((float)(hi[j] - z) * sh + (float)(lo[j] - z) * sl) * ws[j] + bias[j];
    }
  else
    for (int64_t j = 0; j < N; j++) {
      const int32_t z = zero * wsum[j];
      y[j] = ((float)(hi[j] - z) * sh + (float)(lo[j] - z) * sl) * ws[j];
    }
}

/* The primitive for kind at (N, K) with M source rows, from the cache. */
static sc_status linear_prim(sc_dnnl_ctx *c, const sc_packed *p, int64_t M, prim_slot **out,
                             sc_error *err) {
  prim_key key = {PRIM_LINEAR, (int)p->kind, p->rows, p->cols, M, 0};
  prim_slot *victim = NULL;
  if ((*out = cache_find(c, &key, &victim))) return SC_OK;
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t md[3];
  SC_TRY(linear_pd(c->eng, p->kind, p->rows, p->cols, M, &p->md, &pd, md, err));
  SC_TRY(cache_fill(c, victim, &key, pd, md, err));
  *out = victim;
  return SC_OK;
}

/* One product of a prepared source (int8 parts, bf16 or f32 rows) with a
 * packed matrix into out (s32 sums for int8, else f32). */
static sc_status product(sc_dnnl_ctx *c, const sc_packed *p, int64_t M, const void *src,
                         void *out, sc_error *err) {
  prim_slot *sl;
  SC_TRY(linear_prim(c, p, M, &sl, err));
  static const int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  const dnnl_memory_desc_t *mds[3] = {&sl->md[0], &sl->md[1], &sl->md[2]};
  void *ptrs[3] = {(void *)(uintptr_t)src, p->data, out};
  return run(c, sl->prim, 3, args, mds, ptrs,
             p->kind == SC_WEIGHTS_INT8   ? "an int8 matrix product"
             : p->kind == SC_WEIGHTS_BF16 ? "a bf16 matrix product"
                                          : "an f32 matrix product",
             err);
}

/* Rows [a, b) of the activations' preparation (sc_dnnl_for jobs): the two
 * int8 parts of m rows (row i's at q + i K, its rounding error's at
 * q + (m + i) K), or bf16. */
typedef struct prep_job {
  sc_dnnl_ctx *c;
  const float *x;
  int64_t K, m;
  int qmax; /* int8 */
  void *dst;
} prep_job;

static void quantize_rows(void *arg, int64_t a, int64_t b) {
  const prep_job *j = arg;
  const int64_t K = j->K;
  uint8_t *q = j->dst;
  float *sx = j->c->act_scale, *e = j->c->resid + (size_t)thread_index() * (size_t)K;
  for (int64_t i = a; i < b; i++)
    quantize_split(j->x + (size_t)i * (size_t)K, K, j->qmax, q + (size_t)i * (size_t)K,
                   q + (size_t)(j->m + i) * (size_t)K, &sx[i], &sx[j->m + i], e);
}

static void bf16_rows(void *arg, int64_t a, int64_t b) {
  const prep_job *j = arg;
  const size_t K = (size_t)j->K;
  for (int64_t i = a; i < b; i++) {
    const float *xr = j->x + (size_t)i * K;
    uint16_t *d = (uint16_t *)j->dst + (size_t)i * K;
    for (size_t k = 0; k < K; k++) d[k] = f32_to_bf16(xr[k]);
  }
}

/* Rows [a, b) of the int8 epilogue (sc_dnnl_for job). */
typedef struct deq_job {
  const int32_t *acc; /* [2m][N]: the hi parts' sums, then the lo parts' */
  const float *sx;    /* [2m] */
  const sc_packed *p;
  const float *bias;
  int64_t m;
  float *y; /* [m][N] */
} deq_job;

static void dequant_rows(void *arg, int64_t a, int64_t b) {
  const deq_job *j = arg;
  const size_t N = (size_t)j->p->rows;
  for (int64_t i = a; i < b; i++)
    dequant_row(j->acc + (size_t)i * N, j->acc + (size_t)(j->m + i) * N, j->sx[i],
                j->sx[j->m + i], j->p->scales, j->p->wsum, j->p->qmax + 1, j->bias, (int64_t)N,
                j->y + (size_t)i * N);
}

static void add_bias(const float *bias, int n, int64_t N, float *y) {
  if (bias)
    for (int i = 0; i < n; i++)
      for (int64_t j = 0; j < N; j++) y[(size_t)i * (size_t)N + j] += bias[j];
}

sc_status sc_dnnl_linear_n(sc_dnnl_ctx *c, int nm, const sc_weight *const *ws, const float *x,
                           int n, const float *const *bias, float *const *ys, sc_error *err) {
  if (n <= 0 || nm <= 0) return SC_OK;
  const sc_weights_kind kind = ws[0]->packed->kind;
  const int64_t K = ws[0]->packed->cols;
  int64_t Nmax = 0;
  for (int i = 0; i < nm; i++) {
    const sc_packed *p = ws[i]->packed;
    SC_CHECK(p && p->kind == kind && p->cols == K && p->qmax == ws[0]->packed->qmax, err,
             SC_ERR_INTERNAL,
             "products of one input need packed matrices of one kind and width");
    Nmax = p->rows > Nmax ? p->rows : Nmax;
  }
  if (kind == SC_WEIGHTS_F32) {
    for (int i = 0; i < nm; i++) {
      SC_TRY(product(c, ws[i]->packed, n, x, ys[i], err));
      add_bias(bias ? bias[i] : NULL, n, ws[i]->packed->rows, ys[i]);
    }
    return SC_OK;
  }
  if (kind == SC_WEIGHTS_BF16) {
    SC_TRY(ensure_act(c, (size_t)n * (size_t)K * 2, 0, err));
    prep_job pj = {c, x, K, n, 0, c->act};
    sc_dnnl_for(c, n, K, SC_DNNL_GRAIN, bf16_rows, &pj);
    for (int i = 0; i < nm; i++) {
      SC_TRY(product(c, ws[i]->packed, n, c->act, ys[i], err));
      add_bias(bias ? bias[i] : NULL, n, ws[i]->packed->rows, ys[i]);
    }
    return SC_OK;
  }
  /* int8. Rows per product: the two parts of each row are 2 source rows,
   * their s32 sums 2 rows of acc; chunks keep acc under ACC_BYTES (only a
   * wide lm_head over many rows needs more than one). */
  int64_t C = ACC_BYTES / (2 * Nmax * 4);
  C = C < 1 ? 1 : C > n ? n : C;
  SC_TRY(ensure_act(c, (size_t)(2 * C * K) + (size_t)(2 * C * Nmax) * 4 + 64, (size_t)(2 * C),
                    err));
  const size_t resid = (size_t)K * (size_t)team_size(c);
  if (resid > c->resid_cap) {
    float *r = realloc(c->resid, resid * sizeof *r);
    SC_CHECK(r, err, SC_ERR_NOMEM, "out of memory");
    c->resid = r;
    c->resid_cap = resid;
  }
  uint8_t *q = c->act;
  int32_t *acc = (int32_t *)(void *)((uint8_t *)c->act + (((size_t)(2 * C * K) + 63) & ~(size_t)63));
  for (int64_t r0 = 0; r0 < n; r0 += C) {
    const int64_t m = n - r0 < C ? n - r0 : C;
    prep_job pj = {c, x + (size_t)r0 * (size_t)K, K, m, ws[0]->packed->qmax, q};
    sc_dnnl_for(c, m, 4 * K, SC_DNNL_GRAIN, quantize_rows, &pj);
    for (int i = 0; i < nm; i++) {
      const sc_packed *p = ws[i]->packed;
      SC_TRY(product(c, p, 2 * m, q, acc, err));
      deq_job dj = {acc, c->act_scale, p, bias ? bias[i] : NULL, m,
                    ys[i] + (size_t)r0 * (size_t)p->rows};
      sc_dnnl_for(c, m, p->rows, SC_DNNL_GRAIN, dequant_rows, &dj);
    }
  }
  return SC_OK;
}

sc_status sc_dnnl_linear(sc_dnnl_ctx *c, const sc_weight *w, const float *x, int n,
                         const float *bias, float *y, sc_error *err) {
  const float *b[1] = {bias};
  float *ys[1] = {y};
  return sc_dnnl_linear_n(c, 1, &w, x, n, b, ys, err);
}

/* ---- attention ------------------------------------------------------------------
 * In f32 for every weights kind: with bf16 queries and keys the shipped
 * model's int8 text moved off f32's at 3 more corpus sites of 120, past
 * the gate, and bf16 values and probabilities alone saved nothing
 * measurable (docs/measurements-history.md).
 *
 * Heads are grouped by the kv head they read (GQA): the queries of one
 * chunk of R rows are viewed as a 4-D tensor [nkv][group][R][hd] (strides
 * group*hd, hd, nh*hd, 1), the keys as [nkv][1][hd][n] (broadcast over the
 * group), so one matmul computes every head's scores [nkv][group][R][n]
 * (contiguous), one softmax normalises their rows, and one matmul with the
 * values [nkv][1][n][hd] writes the output in place in att's layout. */

static sc_status att_prims(sc_dnnl_ctx *c, int R, int n, int nh, int nkv, int hd, float scale,
                           prim_slot **qk, prim_slot **sm, prim_slot **pv, sc_error *err) {
  const int64_t g = nh / nkv, QD = (int64_t)nh * hd, KD = (int64_t)nkv * hd;
  prim_key kq = {PRIM_QK, 0, R, n, nh, nkv}, ks = {PRIM_SOFTMAX, 0, R, n, nh, nkv},
           kp = {PRIM_PV, 0, R, n, nh, nkv};
  dnnl_dims_t qd = {nkv, g, R, hd}, qs = {g * hd, hd, QD, 1};
  dnnl_dims_t kd = {nkv, 1, hd, n}, kst = {hd, hd, 1, KD};
  dnnl_dims_t sd = {nkv, g, R, n};
  dnnl_dims_t vd = {nkv, 1, n, hd}, vs = {hd, hd, KD, 1};
  dnnl_dims_t s2 = {(int64_t)nh * R, n};
  prim_slot *victim = NULL;
  if (!(*qk = cache_find(c, &kq, &victim))) {
    dnnl_memory_desc_t md[3];
    DN(D.dnnl_memory_desc_init_by_strides(&md[0], 4, qd, dnnl_f32, qs), "query descriptor");
    DN(D.dnnl_memory_desc_init_by_strides(&md[1], 4, kd, dnnl_f32, kst), "key descriptor");
    DN(D.dnnl_memory_desc_init_by_tag(&md[2], 4, sd, dnnl_f32, dnnl_abcd), "score descriptor");
    dnnl_matmul_desc_t d;
    DN(D.dnnl_matmul_desc_init(&d, &md[0], &md[1], NULL, &md[2]), "score matmul");
    dnnl_primitive_attr_t attr;
    DN(D.dnnl_primitive_attr_create(&attr), "attributes");
    dnnl_status_t s = D.dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale);
    dnnl_primitive_desc_t pd = NULL;
    if (s == dnnl_success) s = D.dnnl_primitive_desc_create(&pd, &d, attr, c->eng, NULL);
    D.dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) return dnnl_fail(err, s, "score matmul descriptor");
    SC_TRY(cache_fill(c, victim, &kq, pd, md, err));
    *qk = victim;
  }
  if (!(*sm = cache_find(c, &ks, &victim))) {
    dnnl_memory_desc_t md[3];
    DN(D.dnnl_memory_desc_init_by_tag(&md[0], 2, s2, dnnl_f32, dnnl_ab), "softmax descriptor");
    md[1] = md[2] = md[0];
    dnnl_softmax_desc_t d;
    DN(D.dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md[0], 1), "softmax");
    dnnl_primitive_desc_t pd;
    DN(D.dnnl_primitive_desc_create(&pd, &d, NULL, c->eng, NULL), "softmax descriptor");
    SC_TRY(cache_fill(c, victim, &ks, pd, md, err));
    *sm = victim;
  }
  if (!(*pv = cache_find(c, &kp, &victim))) {
    dnnl_memory_desc_t md[3];
    DN(D.dnnl_memory_desc_init_by_tag(&md[0], 4, sd, dnnl_f32, dnnl_abcd), "score descriptor");
    DN(D.dnnl_memory_desc_init_by_strides(&md[1], 4, vd, dnnl_f32, vs), "value descriptor");
    DN(D.dnnl_memory_desc_init_by_strides(&md[2], 4, qd, dnnl_f32, qs), "output descriptor");
    dnnl_matmul_desc_t d;
    DN(D.dnnl_matmul_desc_init(&d, &md[0], &md[1], NULL, &md[2]), "value matmul");
    dnnl_primitive_desc_t pd;
    DN(D.dnnl_primitive_desc_create(&pd, &d, NULL, c->eng, NULL), "value matmul descriptor");
    SC_TRY(cache_fill(c, victim, &kp, pd, md, err));
    *pv = victim;
  }
  /* A later fill may have evicted an earlier one of the three (tiny cache
   * only); check they are all still there. */
  SC_CHECK(key_eq(&(*qk)->key, &kq) && key_eq(&(*sm)->key, &ks) && key_eq(&(*pv)->key, &kp),
           err, SC_ERR_INTERNAL, "oneDNN primitive cache too small");
  return SC_OK;
}

sc_status sc_dnnl_attention(sc_dnnl_ctx *c, const float *q, const float *k, const float *v,
                            int nw, int n, int nh, int nkv, int hd, float scale,
                            float *scores, size_t scores_cap, float *att, sc_error *err) {
  SC_CHECK(nkv > 0 && nh % nkv == 0 && scores_cap >= (size_t)nh * (size_t)n, err,
           SC_ERR_INTERNAL, "attention: bad shape or scratch");
  /* Rows per chunk: as many as the scores scratch holds, in two sizes at
   * most (full chunks and the last one), so primitives repeat. */
  size_t rmax = scores_cap / ((size_t)nh * (size_t)n);
  int R = rmax < (size_t)nw ? (int)rmax : nw;
  const size_t QD = (size_t)nh * (size_t)hd;
  for (int r0 = 0; r0 < nw; r0 += R) {
    int rows = nw - r0 < R ? nw - r0 : R;
    prim_slot *qk, *sm, *pv;
    SC_TRY(att_prims(c, rows, n, nh, nkv, hd, scale, &qk, &sm, &pv, err));
    const int a2[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    const int a3[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    {
      const dnnl_memory_desc_t *mds[3] = {&qk->md[0], &qk->md[1], &qk->md[2]};
      void *ptrs[3] = {(void *)(q + (size_t)r0 * QD), (void *)k, scores};
      SC_TRY(run(c, qk->prim, 3, a3, mds, ptrs, "attention scores", err));
    }
    {
      const dnnl_memory_desc_t *mds[2] = {&sm->md[0], &sm->md[0]};
      void *ptrs[2] = {scores, scores};
      SC_TRY(run(c, sm->prim, 2, a2, mds, ptrs, "softmax", err));
    }
    {
      const dnnl_memory_desc_t *mds[3] = {&pv->md[0], &pv->md[1], &pv->md[2]};
      void *ptrs[3] = {scores, (void *)v, att + (size_t)r0 * QD};
      SC_TRY(run(c, pv->prim, 3, a3, mds, ptrs, "attention values", err));
    }
  }
  return SC_OK;
}

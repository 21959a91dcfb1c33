// blas.cu — cuBLAS, opened at run time with dlopen.
//
// Why not link it: a binary with libcublas.so.N in its DT_NEEDED list is
// refused by the dynamic loader on a host without that library, before
// main() runs, so the CPU fallback never gets a chance. The CUDA runtime is
// already static (and itself opens the driver's libcuda at run time), so
// cuBLAS was the one library that kept a CUDA build from starting anywhere.
//
// Only the six entry points the backend uses are resolved. Their types come
// from cublas_v2.h, so a signature change in a new toolkit fails to compile
// here rather than at run time. cuBLAS keeps its ABI within a major version
// (the soname carries the major), so any libcublas.so.<major> will do.
#include "kernels_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCK_STR2(x) #x
#define SCK_STR(x) SCK_STR2(x)
#define SCK_CUBLAS_SONAME "libcublas.so." SCK_STR(CUBLAS_VER_MAJOR)

// The header's cublasGemmEx has a C++ overload, so its pointer type is
// spelled out in kernels_impl.h; this fails to compile if no declaration
// matches it (sizeof does not evaluate, so nothing is linked).
static_assert(sizeof(static_cast<sck_gemm_ex_fn>(&cublasGemmEx)) > 0,
              "sck_gemm_ex_fn matches cublasGemmEx");

static sck_blas_api g_api;
static bool g_loaded;
static char g_why[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

// Resolves every entry point from an opened library; false (with the
// missing name in g_why) when one is absent.
static bool resolve(void *h, const char *path) {
  struct { const char *name; void **slot; } want[] = {
    {"cublasCreate_v2", (void **)&g_api.create},
    {"cublasDestroy_v2", (void **)&g_api.destroy},
    {"cublasSetStream_v2", (void **)&g_api.set_stream},
    {"cublasSetWorkspace_v2", (void **)&g_api.set_workspace},
    {"cublasGemmEx", (void **)&g_api.gemm_ex},
    {"cublasGetStatusString", (void **)&g_api.status_string},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    *want[i].slot = dlsym(h, want[i].name);
    if (!*want[i].slot) {
      snprintf(g_why, sizeof g_why, "%s has no %s", path, want[i].name);
      return false;
    }
  }
  return true;
}

static void load_once(void) {
  // $SCULPT_CUBLAS names the library exactly (an unusual install, or a test
  // of the missing-library path); otherwise the loader's search (rpath,
  // LD_LIBRARY_PATH, ld.so.cache), then the toolkit we were built with.
  const char *forced = getenv("SCULPT_CUBLAS");
  const char *tries[2];
  int n = 0;
  if (forced && *forced) {
    tries[n++] = forced;
  } else {
    tries[n++] = SCK_CUBLAS_SONAME;
#ifdef SCK_CUDA_LIBDIR
    tries[n++] = SCK_CUDA_LIBDIR "/" SCK_CUBLAS_SONAME;
#endif
  }
  char first[256] = "";
  for (int i = 0; i < n; i++) {
    void *h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      if (!first[0]) {
        const char *e = dlerror();
        snprintf(first, sizeof first, "%s", e ? e : tries[i]);
      }
      continue;
    }
    if (resolve(h, tries[i])) {
      g_loaded = true;
      return;
    }
    dlclose(h);
    return;  // g_why names the missing symbol
  }
  snprintf(g_why, sizeof g_why, "%s cannot be loaded (%s)",
           forced && *forced ? forced : SCK_CUBLAS_SONAME, first);
}

const sck_blas_api *sck_blas(sc_error *err) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_api;
  sc_error_set(err, SC_ERR_DEVICE, "cuBLAS: %s", g_why);
  return nullptr;
}

const char *sck_blas_status_string(cublasStatus_t s) {
  pthread_once(&g_once, load_once);
  return g_loaded ? g_api.status_string(s) : "cuBLAS not loaded";
}

// test_blas_load.cu — cuBLAS is opened at run time (kernels/blas.cu), so a
// CUDA build starts on a host without libcublas and falls back to the CPU.
// No device needed: loading a library and resolving symbols never touches
// the GPU. One process per case, because the load happens once per process:
//   ok       the toolkit's libcublas loads and every entry point resolves
//   missing  $SCULPT_CUBLAS names no file: a reason naming it, no crash
//   wrong    $SCULPT_CUBLAS names a library without cuBLAS's symbols
#include "kernels_impl.h"
#include "sc_test.h"

#include <stdlib.h>
#include <string.h>

static const char *mode = "ok";

static void test_load(void) {
  sc_error err = {};
  const sck_blas_api *b = sck_blas(&err);
  if (strcmp(mode, "ok") == 0) {
    REQUIRE(b != nullptr);
    EXPECT(b->create && b->destroy && b->set_stream && b->set_workspace && b->gemm_ex);
    EXPECT(strstr(sck_blas_status_string(CUBLAS_STATUS_NOT_INITIALIZED), "not initialized"));
    EXPECT(sck_blas(&err) == b);  // loaded once
    return;
  }
  const char *path = getenv("SCULPT_CUBLAS");
  REQUIRE(path && *path);
  EXPECT(b == nullptr);
  EXPECT(err.status == SC_ERR_DEVICE);
  EXPECTF(strstr(err.msg, "cuBLAS") && strstr(err.msg, path), "message: %s", err.msg);
  if (strcmp(mode, "missing") == 0)
    EXPECTF(strstr(err.msg, "cannot be loaded") != nullptr, "message: %s", err.msg);
  else
    EXPECTF(strstr(err.msg, "has no cublasCreate_v2") != nullptr, "message: %s", err.msg);
  EXPECT(strcmp(sck_blas_status_string(CUBLAS_STATUS_SUCCESS), "cuBLAS not loaded") == 0);
  // The public probe says the same thing whether or not a device answers:
  // either no device, or a device that cuBLAS cannot drive.
  sc_error perr = {};
  EXPECT(sc_kernels_probe(nullptr, &perr) == SC_ERR_DEVICE);
}

int main(int argc, char **argv) {
  if (argc > 1) mode = argv[1];
  RUN(test_load);
  TEST_MAIN_END();
}

// gemm.cu — every matrix product of the forward pass: cuBLAS GemmEx with
// bf16 operands and fp32 accumulation (CUBLAS_COMPUTE_32F; cuBLAS picks
// tensor-core kernels for bf16 on sm_80+). Several canvases or requests are
// batched by packing their rows into one product (sc_kernels_pass.segs), so
// each weight matrix is read once per step whatever the batch.
#include "kernels_impl.h"

// Row-major Y[n][out] = X[n][in] * W^T is, in cuBLAS's column-major terms,
// C (out x n, ldc = ldy) = op(A) * op(B) with A = W seen as column-major
// [in x out] (lda = in) and op = T, B = X seen as column-major [in x n]
// (ldb = ldx) and op = N.
sc_status sck_gemm(cublasHandle_t h, const sck_bf16 *W, int out, int in, const sck_bf16 *X,
                   int n, int ldx, void *Y, bool y_f32, int ldy, float beta, sc_error *err) {
  if (n <= 0) return SC_OK;
  const float alpha = 1.0f;
  const sck_blas_api *b = sck_blas(err);
  if (!b) return SC_ERR_DEVICE;
  SCK_CUBLAS(b->gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &alpha, W, CUDA_R_16BF, in,
                          X, CUDA_R_16BF, ldx, &beta, Y, y_f32 ? CUDA_R_32F : CUDA_R_16BF, ldy,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             err);
  return SC_OK;
}

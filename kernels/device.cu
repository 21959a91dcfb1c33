// device.cu — device discovery for the CUDA backend.
// Only runtime queries here: no kernels launch, so a machine without a GPU
// (or with a driver older than the runtime) gets a clear reason, not a crash.
#include "kernels_impl.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" bool sc_kernels_compiled(void) { return true; }

extern "C" sc_status sc_kernels_probe(sc_kernels_device_info *out, sc_error *err) {
  sc_kernels_device_info info;
  memset(&info, 0, sizeof info);
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);  // 0 when no driver is installed
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (out) *out = info;
  if (e != cudaSuccess) {
    const char *why = cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky error so later probes start clean
    if (info.driver_version == 0)
      return sc_error_set(err, SC_ERR_DEVICE, "no CUDA driver is installed (%s)", why);
    if (e == cudaErrorInsufficientDriver)
      return sc_error_set(err, SC_ERR_DEVICE,
                          "CUDA driver %d is older than runtime %d (%s)",
                          info.driver_version, info.runtime_version, why);
    return sc_error_set(err, SC_ERR_DEVICE, "no CUDA device (%s)", why);
  }
  if (n < 1) return sc_error_set(err, SC_ERR_DEVICE, "no CUDA device");
  info.device_count = n;
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess)
    return sc_error_set(err, SC_ERR_DEVICE, "cannot query CUDA device 0 (%s)",
                        cudaGetErrorString(e));
  snprintf(info.name, sizeof info.name, "%s", prop.name);
  info.total_memory = prop.totalGlobalMem;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  if (out) *out = info;
  // A device with no cuBLAS to drive it is no usable device: say which.
  if (!sck_blas(err)) return SC_ERR_DEVICE;
  return SC_OK;
}

// ---- error records shared by every kernels/ file ------------------------------

sc_status sck_cuda_fail(cudaError_t e, const char *what, const char *file, int line,
                        sc_error *err) {
  return sc_error_set_at(err, SC_ERR_DEVICE, file, line, "CUDA: %s failed: %s (%s)", what,
                         cudaGetErrorName(e), cudaGetErrorString(e));
}

sc_status sck_cublas_fail(cublasStatus_t s, const char *what, const char *file,
                                     int line, sc_error *err) {
  return sc_error_set_at(err, SC_ERR_DEVICE, file, line, "cuBLAS: %s failed: %s (%d)", what,
                         sck_blas_status_string(s), (int)s);
}

extern "C" sc_status sc_kernels_device_bandwidth(int *sm_count, double *bytes_per_s,
                                                 sc_error *err) {
  SC_TRY(sc_kernels_probe(NULL, err));
  int sms = 0, clock_khz = 0, bus_bits = 0;
  SCK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), err);
  SCK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0), err);
  SCK_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0), err);
  if (sm_count) *sm_count = sms;
  // Double data rate: two transfers per memory clock (the CUDA samples'
  // bandwidthTest and deviceQuery compute peak bandwidth the same way).
  if (bytes_per_s) *bytes_per_s = 2.0 * (double)clock_khz * 1000.0 * (double)bus_bits / 8.0;
  return SC_OK;
}

extern "C" sc_status sc_kernels_device_memory(uint64_t *used, uint64_t *total, sc_error *err) {
  SC_TRY(sc_kernels_probe(NULL, err));
  size_t f = 0, t = 0;
  SCK_CUDA(cudaMemGetInfo(&f, &t), err);
  if (used) *used = (uint64_t)(t - f);
  if (total) *total = (uint64_t)t;
  return SC_OK;
}

// device.cu — device discovery for the CUDA backend.
// Only runtime queries here: no kernels launch, so a machine without a GPU
// (or with a driver older than the runtime) gets a clear reason, not a crash.
#include "kernels.h"

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
  return SC_OK;
}

/*
 * kernels.h — the CUDA backend's public face.
 *
 * kernels/ is compiled only when the CUDA toolkit and cuBLAS are found; a
 * CPU-only build links kernels/none.c instead, whose functions say so. The
 * model/ module is the only caller: it probes here and falls back to its CPU
 * backend when no usable device answers.
 */
#ifndef SCULPT_KERNELS_H
#define SCULPT_KERNELS_H

#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_kernels_device_info {
  int device_count;     /* CUDA devices visible to this process */
  char name[256];       /* device 0's name, "" when none */
  size_t total_memory;  /* bytes on device 0 */
  int cc_major, cc_minor;
  int driver_version;   /* e.g. 13000; 0 when no driver answered */
  int runtime_version;  /* the CUDA runtime we were built against */
} sc_kernels_device_info;

/* True when this binary was built with the CUDA backend. */
bool sc_kernels_compiled(void);

/* Asks the driver for devices. SC_OK with device_count >= 1 means device 0 is
 * usable; otherwise returns SC_ERR_DEVICE (or SC_ERR_UNSUPPORTED in a
 * CPU-only build) with a one-line reason in err. Never aborts. */
sc_status sc_kernels_probe(sc_kernels_device_info *out, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif

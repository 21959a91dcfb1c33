/* none.c — the kernels/ interface in a CPU-only build. */
#include "kernels.h"

#include <string.h>

bool sc_kernels_compiled(void) { return false; }

sc_status sc_kernels_probe(sc_kernels_device_info *out, sc_error *err) {
  if (out) memset(out, 0, sizeof *out);
  return sc_error_set(err, SC_ERR_UNSUPPORTED, "built without CUDA");
}

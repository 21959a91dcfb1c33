/* device.c — choosing between the CUDA backend and the CPU reference. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "kernels.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

bool sc_device_kind_parse(const char *s, sc_device_kind *out) {
  if (!s) return false;
  if (strcasecmp(s, "auto") == 0) *out = SC_DEVICE_AUTO;
  else if (strcasecmp(s, "cpu") == 0) *out = SC_DEVICE_CPU;
  else if (strcasecmp(s, "cuda") == 0 || strcasecmp(s, "gpu") == 0) *out = SC_DEVICE_CUDA;
  else return false;
  return true;
}

const char *sc_device_kind_name(sc_device_kind kind) {
  switch (kind) {
  case SC_DEVICE_AUTO: return "auto";
  case SC_DEVICE_CPU: return "cpu";
  case SC_DEVICE_CUDA: return "cuda";
  }
  return "?";
}

static void describe_cpu(sc_device_choice *out) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(out->description, sizeof out->description, "cpu (%ld threads)", n > 0 ? n : 1);
  out->kind = SC_DEVICE_CPU;
}

void sc_device_select(sc_device_kind requested, sc_device_choice *out) {
  memset(out, 0, sizeof *out);
  if (requested == SC_DEVICE_CPU) {
    describe_cpu(out);
    return;
  }
  sc_kernels_device_info info;
  sc_error err = {0};
  if (sc_kernels_probe(&info, &err) == SC_OK) {
    out->kind = SC_DEVICE_CUDA;
    snprintf(out->description, sizeof out->description, "cuda:0 %s (%.0f GiB, sm_%d%d)",
             info.name, (double)info.total_memory / (1024.0 * 1024.0 * 1024.0),
             info.cc_major, info.cc_minor);
    return;
  }
  describe_cpu(out);
  snprintf(out->fallback_reason, sizeof out->fallback_reason, "%s", err.msg);
  /* One line per process. Asked for CUDA, the user learns why it is not
   * used (a warning). Asked for nothing (auto) on a machine with no CUDA
   * driver at all, the CPU is simply the device: a debug line, not a line
   * on every command. A driver without a usable device, though, is worth
   * an info line: the user may well expect the GPU. */
  static atomic_flag said = ATOMIC_FLAG_INIT;
  if (!(sc_kernels_compiled() || requested == SC_DEVICE_CUDA) || atomic_flag_test_and_set(&said))
    return;
  if (requested == SC_DEVICE_CUDA)
    SC_LOG_WARN("device: CUDA unavailable (%s); falling back to the CPU (cuda was asked for)",
                err.msg);
  else if (info.driver_version == 0 || !sc_kernels_compiled())
    SC_LOG_DEBUG("device: CUDA unavailable (%s); falling back to the CPU", err.msg);
  else
    SC_LOG_INFO("device: CUDA unavailable (%s); falling back to the CPU", err.msg);
}

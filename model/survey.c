/* survey.c — what a checkpoint is and would take without loading it
 * (model.h, sc_model_survey_read): its config as the loader reads it
 * (config.c, or a GGUF's metadata, gguf.c), its weight files' headers
 * (safetensors.c maps them; no tensor byte is read), and the weights kind
 * AUTO would pick, by the loader's own rule (checkpoint.c, auto_kind), with
 * the memory that takes. `sculpt model list` shows one line of it per
 * cached model. Also the memory this machine can still give, which the
 * loader's rule reads too. */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "model_impl.h"
#include "tokenizer_impl.h" /* sc_gguf_find */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One /proc/meminfo field (format "Name: %llu kB"), bounded by the memory
 * cgroup's room; 0 when neither is known. */
static uint64_t meminfo_bytes(const char *format) {
  const uint64_t host = sc_meminfo_bytes(format), cg = sc_cgroup_available("");
  if (host == 0) return cg == UINT64_MAX ? 0 : cg;
  return cg < host ? cg : host;
}

uint64_t sc_mem_available(void) { return meminfo_bytes("MemAvailable: %llu kB"); }

uint64_t sc_mem_total(void) {
  const char *test = getenv("SCULPT_TEST_MEMORY_BYTES");
  if (test && *test) return strtoull(test, NULL, 10);
  return meminfo_bytes("MemTotal: %llu kB");
}

/* Folds one file's tensors into the survey: elements, and the dtype of the
 * matrices (rank 2; the small vectors are f32 in many bf16 checkpoints). */
static void count_tensors(const sc_st_file *f, sc_model_survey *s, int *dtype_seen) {
  for (size_t t = 0; t < f->n_tensors; t++) {
    const sc_st_tensor *x = &f->tensors[t];
    int64_t e = 1;
    for (int r = 0; r < x->rank; r++) e *= x->shape[r];
    s->n_params += e;
    if (x->rank != 2 || !x->usable) continue;
    if (*dtype_seen < 0) *dtype_seen = (int)x->dtype;
    else if (*dtype_seen != (int)x->dtype) *dtype_seen = SC_DTYPE_MIXED;
  }
}

/* Every *.safetensors file of dir (the shards an index names are all
 * there; an index naming more is the loader's error to report). */
static sc_status survey_safetensors(const char *dir, sc_model_survey *s, int *dtype_seen,
                                    sc_error *err) {
  DIR *d = opendir(dir);
  SC_CHECK(d, err, SC_ERR_IO, "%s: cannot list the folder", dir);
  sc_status st = SC_OK;
  int files = 0;
  struct dirent *de;
  while (st == SC_OK && (de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l < 12 || strcmp(de->d_name + l - 12, ".safetensors") != 0) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    sc_st_file f = {0};
    st = sc_st_file_open(path, &f, err);
    if (st != SC_OK) break;
    count_tensors(&f, s, dtype_seen);
    sc_st_file_close(&f);
    files++;
  }
  closedir(d);
  if (st == SC_OK && files == 0)
    st = sc_error_set(err, SC_ERR_IO, "%s: no .safetensors weights", dir);
  return st;
}

/* One context's activation arena, roughly as cpu.c lays it out (layout()):
 * per position the hidden rows, queries, K/V of every layer, the MLP's two
 * rows and the rotary tables, plus the attention scores. */
static uint64_t context_estimate(const sc_config *c) {
  const uint64_t S = (uint64_t)sc_config_context(c), H = (uint64_t)c->hidden,
                 QD = (uint64_t)c->n_heads * (uint64_t)c->head_dim,
                 KD = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim,
                 FF = (uint64_t)c->intermediate;
  uint64_t per_pos = 2 * H + 2 * QD + 2 * (uint64_t)c->n_layers * KD + 2 * FF + (uint64_t)c->head_dim;
  uint64_t scores = S * (S > (uint64_t)c->n_heads ? S : (uint64_t)c->n_heads);
  return (S * per_pos + scores) * sizeof(float);
}

sc_status sc_model_survey_read(const char *dir, sc_model_survey *s, sc_error *err) {
  memset(s, 0, sizeof *s);
  SC_CHECK(dir && *dir, err, SC_ERR_INVALID, "no model folder given");
  sc_config c;
  int dtype_seen = -1;
  char gguf[4200];
  if (sc_gguf_find(dir, gguf, sizeof gguf)) {
    sc_st_file f = {0};
    SC_TRY(sc_gguf_open(gguf, SC_FAMILY_AUTO, &c, &f, err));
    count_tensors(&f, s, &dtype_seen);
    sc_st_file_close(&f);
  } else {
    SC_TRY(sc_config_load(dir, SC_FAMILY_AUTO, &c, err));
    SC_TRY(survey_safetensors(dir, s, &dtype_seen, err));
  }
  s->family = c.family;
  snprintf(s->profile, sizeof s->profile, "%s", c.profile.name);
  s->dtype = dtype_seen < 0 ? SC_DTYPE_F32 : (sc_dtype)dtype_seen;
  s->available = sc_mem_available();
  /* AUTO's rule (checkpoint.c, auto_kind): f32 below the threshold; else
   * bf16 where the CPU multiplies bf16 natively and the copy takes at most
   * half of what is available; else int8. The embedding stays in the
   * checkpoint's dtype, counted at 2 bytes. */
  const uint64_t p = (uint64_t)s->n_params, embed = (uint64_t)c.vocab * (uint64_t)c.hidden;
  const uint64_t mats = p > embed ? p - embed : p;
  if (s->n_params < SC_WEIGHTS_CONVERT_MIN_PARAMS) s->weights = SC_WEIGHTS_F32;
  else if (sc_dnnl_bf16_native() && s->available > 0 && mats * 2 <= s->available / 2)
    s->weights = SC_WEIGHTS_BF16;
  else s->weights = SC_WEIGHTS_INT8;
  const unsigned per = s->weights == SC_WEIGHTS_F32 ? 4 : s->weights == SC_WEIGHTS_BF16 ? 2 : 1;
  s->memory_bytes = mats * per + embed * 2 + context_estimate(&c);
  /* The CUDA backend reads the checkpoint's own f32, f16 or bf16 rows. */
  sc_kernels_device_info di;
  if (sc_kernels_probe(&di, NULL) == SC_OK) {
    const size_t el = sc_dtype_size(s->dtype) ? sc_dtype_size(s->dtype) : 2;
    s->device_bytes = p * el + context_estimate(&c);
    s->device_total = di.total_memory;
    snprintf(s->device, sizeof s->device, "%s", di.name);
  }
  return SC_OK;
}

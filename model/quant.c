/* quant.c — quantized weights: reading rows of any stored dtype as f32 (the
 * plain ones, sculpt's int8 rows with a scale per row, and GGUF's q8_0 and
 * q4_0 blocks), the int8 quantization rule, and `sculpt model quantize`,
 * which writes a checkpoint folder whose matrices are int8.
 *
 * Block layouts (ggml's ggml-common.h, block_q8_0 / block_q4_0, and the
 * GGUF spec, ggml docs/gguf.md): a row of K values is K/32 blocks; a q8_0
 * block is an f16 scale d then 32 int8 q, value = d * q (34 bytes); a q4_0
 * block is an f16 scale d then 16 bytes, byte j holding value j in its low
 * nibble and value j + 16 in its high nibble, value = d * (nibble - 8) (18
 * bytes).
 *
 * The int8 file format (a safetensors file like any other, so every check of
 * safetensors.c applies): each matrix NAME of the layers is stored as dtype
 * I8 [rows, cols], with NAME_scale, F32 [rows], beside it: w[r][c] =
 * q[r][c] * scale[r]. Every other tensor (the embedding, the lm_head, the
 * norms and biases) is copied byte for byte, since int8 compute reads those
 * in their own dtype (the lm_head in bf16, see dnnl.c): the file then
 * computes exactly what int8 made at load computes. The header's
 * __metadata__ says "quantization": "int8-per-row". */
#define _DEFAULT_SOURCE /* realpath */
#define _POSIX_C_SOURCE 200809L
#include "model_impl.h"
#include "tokenizer_impl.h" /* sc_gguf_find */

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define QBLOCK 32

bool sc_weights_kind_parse(const char *s, sc_weights_kind *out) {
  static const struct {
    const char *name;
    sc_weights_kind kind;
  } names[] = {{"auto", SC_WEIGHTS_AUTO},
               {"f32", SC_WEIGHTS_F32},
               {"bf16", SC_WEIGHTS_BF16},
               {"int8", SC_WEIGHTS_INT8},
               {"fp8", SC_WEIGHTS_FP8}};
  if (!s) return false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0) {
      *out = names[i].kind;
      return true;
    }
  return false;
}

const char *sc_weights_kind_name(sc_weights_kind kind) {
  switch (kind) {
  case SC_WEIGHTS_AUTO: return "auto";
  case SC_WEIGHTS_F32: return "f32";
  case SC_WEIGHTS_BF16: return "bf16";
  case SC_WEIGHTS_INT8: return "int8";
  case SC_WEIGHTS_FP8: return "fp8";
  }
  return "?";
}

size_t sc_dtype_row_bytes(sc_dtype dtype, int64_t cols) {
  switch (dtype) {
  case SC_DTYPE_F32: return (size_t)cols * 4;
  case SC_DTYPE_F16:
  case SC_DTYPE_BF16: return (size_t)cols * 2;
  case SC_DTYPE_I8: return (size_t)cols;
  case SC_DTYPE_Q8_0: return (size_t)(cols / QBLOCK) * 34;
  case SC_DTYPE_Q4_0: return (size_t)(cols / QBLOCK) * 18;
  case SC_DTYPE_MIXED: return 0;
  }
  return 0;
}

static float half_at(const uint8_t *p) {
  float d;
  sc_convert_to_f32(p, SC_DTYPE_F16, 1, &d);
  return d;
}

typedef struct range_job {
  sc_range_fn fn;
  void *arg;
  int64_t a, b;
} range_job;

static void *range_main(void *p) {
  range_job *j = p;
  j->fn(j->arg, j->a, j->b);
  return NULL;
}

void sc_run_ranges(int64_t n, int threads, sc_range_fn fn, void *arg) {
  int T = threads < 1 ? 1 : threads > 16 ? 16 : threads;
  if (n < T) T = n > 0 ? (int)n : 1;
  pthread_t th[16];
  range_job jobs[16];
  int started = 0;
  for (int t = 0; t < T; t++) {
    jobs[t] = (range_job){fn, arg, n * t / T, n * (t + 1) / T};
    if (t == T - 1 || pthread_create(&th[t], NULL, range_main, &jobs[t]) != 0)
      range_main(&jobs[t]);
    else
      started |= 1 << t;
  }
  for (int t = 0; t < T; t++)
    if (started & (1 << t)) pthread_join(th[t], NULL);
}

typedef struct to_f32_job {
  const sc_weight *w;
  int64_t r0;
  float *dst;
} to_f32_job;

static void to_f32_range(void *p, int64_t a, int64_t b) {
  const to_f32_job *j = p;
  sc_weight_rows_to_f32(j->w, j->r0 + a, b - a, j->dst + (size_t)a * (size_t)j->w->cols);
}

void sc_weight_rows_to_f32_mt(const sc_weight *w, int64_t r0, int64_t nr, float *dst,
                              int threads) {
  /* Below 1 Mi values a thread's start costs more than it saves. */
  if (threads < 2 || nr * w->cols < ((int64_t)1 << 20)) {
    sc_weight_rows_to_f32(w, r0, nr, dst);
    return;
  }
  to_f32_job j = {w, r0, dst};
  sc_run_ranges(nr, threads, to_f32_range, &j);
}

void sc_weight_rows_to_f32(const sc_weight *w, int64_t r0, int64_t nr, float *dst) {
  const int64_t K = w->cols;
  for (int64_t r = r0; r < r0 + nr; r++, dst += K) {
    const uint8_t *src = w->data + (size_t)r * w->row_bytes;
    switch (w->dtype) {
    case SC_DTYPE_I8: {
      const float s = w->scales[r];
      const int8_t *q = (const int8_t *)src;
      for (int64_t c = 0; c < K; c++) dst[c] = (float)q[c] * s;
      break;
    }
    case SC_DTYPE_Q8_0:
      for (int64_t b = 0; b < K / QBLOCK; b++) {
        const uint8_t *blk = src + (size_t)b * 34;
        const float d = half_at(blk);
        const int8_t *q = (const int8_t *)(blk + 2);
        for (int j = 0; j < QBLOCK; j++) dst[b * QBLOCK + j] = d * (float)q[j];
      }
      break;
    case SC_DTYPE_Q4_0:
      for (int64_t b = 0; b < K / QBLOCK; b++) {
        const uint8_t *blk = src + (size_t)b * 18;
        const float d = half_at(blk);
        for (int j = 0; j < QBLOCK / 2; j++) {
          dst[b * QBLOCK + j] = d * (float)((blk[2 + j] & 0x0F) - 8);
          dst[b * QBLOCK + j + QBLOCK / 2] = d * (float)((blk[2 + j] >> 4) - 8);
        }
      }
      break;
    case SC_DTYPE_F32:
    case SC_DTYPE_F16:
    case SC_DTYPE_BF16:
    case SC_DTYPE_MIXED: sc_convert_to_f32(src, w->dtype, (size_t)K, dst); break;
    }
  }
}

/* max |x[i]| through the bit patterns (clearing the sign, the order of
 * finite floats is that of their bits as integers), so that the reduction
 * vectorizes without -ffast-math; a NaN compares above every finite value
 * (and an infinity too), so either makes the result non-finite (see
 * below). */
SC_VECTOR_CLONES
static float absmax(const float *x, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &x[i], 4);
    b &= 0x7fffffffu;
    m = b > m ? b : m;
  }
  float f;
  memcpy(&f, &m, 4);
  return f;
}

/* q[i] = round-half-away(x[i] * inv) clamped to [-qmax, qmax], plus zero,
 * as a byte (zero 0: the int8 value's two's complement). Rounding adds
 * +-0.5 by the sign (copysign, a bit operation; a compare and blend was
 * 1.6x slower) and truncates. */
SC_VECTOR_CLONES
static void quantize_scaled(const float *x, int64_t n, float inv, float qmax, int32_t zero,
                            uint8_t *q) {
  for (int64_t i = 0; i < n; i++) {
    float v = x[i] * inv;
    v = v > qmax ? qmax : v;
    v = v < -qmax ? -qmax : v;
    q[i] = (uint8_t)((int32_t)(v + copysignf(0.5f, v)) + zero);
  }
}

/* The rule of model_impl.h over [-qmax, qmax], stored plus zero. */
static float quantize_row(const float *x, int64_t n, int qmax, int zero, uint8_t *q) {
  const float amax = absmax(x, n);
  /* A row holding a NaN or an infinity quantizes to 0s with a NaN scale,
   * so that what it multiplies comes out NaN as in f32, and the logits'
   * check names the checkpoint (model.h): a finite scale would turn a
   * broken row into a plausible one. */
  if (!isfinite(amax)) {
    memset(q, zero, (size_t)n);
    return NAN;
  }
  /* An all-zero row keeps scale 1 and quantizes to 0s. */
  const float scale = amax > 0.0f ? amax / (float)qmax : 1.0f;
  quantize_scaled(x, n, 1.0f / scale, (float)qmax, zero, q);
  return scale;
}

float sc_quantize_row_i8(const float *x, int64_t n, int8_t *q) {
  return quantize_row(x, n, 127, 0, (uint8_t *)q);
}

float sc_quantize_row_u8(const float *x, int64_t n, int qmax, uint8_t *q) {
  return quantize_row(x, n, qmax, qmax + 1, q);
}

void sc_quantize_rows_i8(const sc_weight *w, int64_t r0, int64_t nr, int8_t *q, float *scales,
                         float *tmp) {
  for (int64_t r = 0; r < nr; r++) {
    sc_weight_rows_to_f32(w, r0 + r, 1, tmp);
    scales[r] = sc_quantize_row_i8(tmp, w->cols, q + (size_t)r * (size_t)w->cols);
  }
}

/* ---- sculpt model quantize ------------------------------------------------- */

/* One tensor of the output file: a quantized matrix (w), a scale vector
 * (its sibling), or a tensor copied byte for byte (src). */
typedef struct out_tensor {
  char *name;
  const sc_weight *w;  /* quantize this matrix */
  const sc_weight *of; /* the scales of this matrix */
  const sc_st_tensor *src; /* copied as is */
  uint64_t bytes;
} out_tensor;

/* The layer matrix whose data is at data, or NULL. */
static const sc_weight *layer_matrix(const sc_model *m, const uint8_t *data) {
  for (int l = 0; l < m->cfg.n_layers; l++) {
    const sc_layer *y = &m->layers[l];
    const sc_weight *ws[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wgate, &y->wup, &y->wdown};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
      if (ws[i]->data == data) return ws[i];
  }
  return NULL;
}

static sc_status write_all(FILE *f, const void *p, size_t n, const char *path, sc_error *err) {
  SC_CHECK(fwrite(p, 1, n, f) == n, err, SC_ERR_IO, "%s: write failed: %s", path,
           strerror(errno));
  return SC_OK;
}

/* Writes tensor t; a quantized matrix fills scales[rows] for its sibling. */
static sc_status write_tensor(FILE *f, const out_tensor *t, float *scales, const char *path,
                              sc_error *err) {
  if (t->w) {
    const sc_weight *w = t->w;
    const int64_t chunk = 256;
    int8_t *q = malloc((size_t)chunk * (size_t)w->cols);
    float *tmp = malloc((size_t)w->cols * sizeof *tmp);
    sc_status st = q && tmp ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    for (int64_t r0 = 0; st == SC_OK && r0 < w->rows; r0 += chunk) {
      int64_t nr = w->rows - r0 < chunk ? w->rows - r0 : chunk;
      sc_quantize_rows_i8(w, r0, nr, q, scales + r0, tmp);
      st = write_all(f, q, (size_t)nr * (size_t)w->cols, path, err);
    }
    free(q);
    free(tmp);
    return st;
  }
  if (t->of) return write_all(f, scales, (size_t)t->of->rows * sizeof *scales, path, err);
  return write_all(f, t->src->data, (size_t)(t->src->end - t->src->begin), path, err);
}

/* Copies a small file (config, tokenizer) into dst atomically. */
static sc_status copy_file(const char *src, const char *dst, sc_error *err) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dst, (long)getpid());
  FILE *in = fopen(src, "rb");
  SC_CHECK(in, err, SC_ERR_IO, "%s: cannot read: %s", src, strerror(errno));
  FILE *out = fopen(tmp, "wb");
  if (!out) {
    fclose(in);
    return sc_error_set(err, SC_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
  }
  char buf[65536];
  size_t n;
  bool ok = true;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  ok = ok && !ferror(in);
  fclose(in);
  if (fclose(out) != 0) ok = false;
  if (!ok || rename(tmp, dst) != 0) {
    int e = errno;
    unlink(tmp);
    return sc_error_set(err, SC_ERR_IO, "%s: cannot write: %s", dst, strerror(e));
  }
  return SC_OK;
}

static bool is_weight_file(const char *name) {
  size_t n = strlen(name);
  static const char *const ext[] = {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".tmp"};
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    size_t e = strlen(ext[i]);
    if (n >= e && strcmp(name + n - e, ext[i]) == 0) return true;
  }
  return strcmp(name, "model.safetensors.index.json") == 0 || strstr(name, ".tmp-") != NULL;
}

sc_status sc_model_quantize(const char *dir, const char *out_dir, sc_error *err) {
  SC_CHECK(dir && out_dir && *dir && *out_dir, err, SC_ERR_INVALID, "quantize: no folder given");
  char rin[4096], rout[4096];
  if (realpath(dir, rin) && realpath(out_dir, rout))
    SC_CHECK(strcmp(rin, rout) != 0, err, SC_ERR_INVALID,
             "quantize: --out must be another folder than the checkpoint");
  char gguf[4200];
  SC_CHECK(!sc_gguf_find(dir, gguf, sizeof gguf), err, SC_ERR_UNSUPPORTED,
           "quantize: %s is a GGUF file, already quantized its own way; quantize reads "
           "Hugging Face checkpoint folders (it loads as it is, with --weights int8)", gguf);
  sc_model_options o = {.device = SC_DEVICE_CPU, .weights = SC_WEIGHTS_F32};
  sc_model *m = NULL;
  SC_TRY(sc_model_load(dir, &o, &m, err));
  if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
    int e = errno;
    sc_model_free(m);
    return sc_error_set(err, SC_ERR_IO, "%s: cannot create: %s", out_dir, strerror(e));
  }

  /* Every tensor of every shard, in shard order: bound matrices quantized
   * (with a scale tensor after each), floats as F32, the rest as is. */
  size_t cap = 0;
  for (size_t i = 0; i < m->n_files; i++) cap += 2 * m->files[i].n_tensors;
  out_tensor *ts = calloc(cap ? cap : 1, sizeof *ts);
  sc_status st = ts ? SC_OK : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  size_t nt = 0;
  for (size_t i = 0; st == SC_OK && i < m->n_files; i++) {
    for (size_t j = 0; st == SC_OK && j < m->files[i].n_tensors; j++) {
      const sc_st_tensor *t = &m->files[i].tensors[j];
      const sc_weight *w = t->rank == 2 ? layer_matrix(m, t->data) : NULL;
      /* Already int8 (a quantized input): copied as is, scales too. */
      if (w && w->dtype == SC_DTYPE_I8) w = NULL;
      out_tensor *ot = &ts[nt++];
      ot->name = strdup(t->name);
      if (!ot->name) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
      if (w) {
        ot->w = w;
        ot->bytes = (uint64_t)w->rows * (uint64_t)w->cols;
        out_tensor *os = &ts[nt++];
        size_t len = strlen(t->name) + 8;
        os->name = malloc(len);
        if (!os->name) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
        else snprintf(os->name, len, "%s_scale", t->name);
        os->of = w;
        os->bytes = (uint64_t)w->rows * 4;
      } else {
        ot->src = t;
        ot->bytes = t->end - t->begin;
      }
    }
  }

  json_t *hdr = st == SC_OK ? json_object() : NULL;
  if (st == SC_OK && !hdr) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  uint64_t off = 0;
  for (size_t i = 0; st == SC_OK && i < nt; i++) {
    const out_tensor *t = &ts[i];
    json_t *e = json_object(), *shape = json_array();
    const char *dt;
    if (t->w) {
      dt = "I8";
      json_array_append_new(shape, json_integer(t->w->rows));
      json_array_append_new(shape, json_integer(t->w->cols));
    } else if (t->of) {
      dt = "F32";
      json_array_append_new(shape, json_integer(t->of->rows));
    } else {
      dt = t->src->dtype_str;
      for (int d = 0; d < t->src->rank; d++)
        json_array_append_new(shape, json_integer(t->src->shape[d]));
    }
    json_object_set_new(e, "dtype", json_string(dt));
    json_object_set_new(e, "shape", shape);
    json_t *offs = json_array();
    json_array_append_new(offs, json_integer((json_int_t)off));
    json_array_append_new(offs, json_integer((json_int_t)(off + t->bytes)));
    json_object_set_new(e, "data_offsets", offs);
    json_object_set_new(hdr, t->name, e);
    off += t->bytes;
  }
  if (st == SC_OK) {
    json_t *meta = json_object();
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(meta, "quantization", json_string("int8-per-row"));
    json_object_set_new(hdr, "__metadata__", meta);
  }
  char *htext = st == SC_OK ? json_dumps(hdr, JSON_COMPACT) : NULL;
  if (st == SC_OK && !htext) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");

  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = NULL;
  if (st == SC_OK) {
    f = fopen(tmp, "wb");
    if (!f) st = sc_error_set(err, SC_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
  }
  if (st == SC_OK) {
    /* Header padded with spaces so the data starts 8-byte aligned. */
    size_t hl = strlen(htext), pad = (8 - (8 + hl) % 8) % 8;
    uint64_t total = hl + pad;
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(total >> (8 * i));
    st = write_all(f, len8, 8, tmp, err);
    if (st == SC_OK) st = write_all(f, htext, hl, tmp, err);
    if (st == SC_OK) st = write_all(f, "        ", pad, tmp, err);
  }
  float *scales = NULL;
  for (size_t i = 0; st == SC_OK && i < nt; i++) {
    if (ts[i].w) {
      free(scales);
      scales = malloc((size_t)ts[i].w->rows * sizeof *scales);
      if (!scales) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    if (st == SC_OK) st = write_tensor(f, &ts[i], scales, tmp, err);
  }
  free(scales);
  if (f && fclose(f) != 0 && st == SC_OK)
    st = sc_error_set(err, SC_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
  if (st == SC_OK && rename(tmp, path) != 0)
    st = sc_error_set(err, SC_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
  if (st != SC_OK && f) unlink(tmp);

  /* Everything else in the folder (config, tokenizer, generation config,
   * card) comes along; old weight files of the output folder go, so that
   * the new model.safetensors is the only one. */
  if (st == SC_OK) {
    char idx[4200];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", out_dir);
    unlink(idx);
    DIR *d = opendir(dir);
    if (!d) st = sc_error_set(err, SC_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *de;
    while (st == SC_OK && d && (de = readdir(d)) != NULL) {
      if (de->d_name[0] == '.' || is_weight_file(de->d_name)) continue;
      char src[4200], dst[4200];
      snprintf(src, sizeof src, "%s/%s", dir, de->d_name);
      snprintf(dst, sizeof dst, "%s/%s", out_dir, de->d_name);
      struct stat sb;
      if (stat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
      st = copy_file(src, dst, err);
    }
    if (d) closedir(d);
  }
  free(htext);
  json_decref(hdr);
  for (size_t i = 0; i < nt; i++) free(ts[i].name);
  free(ts);
  sc_model_free(m);
  return st;
}

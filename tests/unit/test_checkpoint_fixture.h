/* test_checkpoint_fixture.h — writes a tiny Dream-shaped checkpoint (config.json plus
 * safetensors) for the checkpoint and forward unit tests, with hooks to
 * corrupt it. Weights are a deterministic function of the tensor and index.
 * Geometry: hidden 8, 1 layer, 2 heads, 1 kv head (head_dim 4), ffn 16,
 * vocab 32, QKV bias, untied lm_head. */
#ifndef CKPT_FIXTURE_H
#define CKPT_FIXTURE_H

#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fx_tensor {
  char name[96];
  char dtype[16];
  int rank;
  long long shape[2];
  long long begin, end; /* filled by fx_layout */
} fx_tensor;

typedef struct fx_ckpt {
  fx_tensor t[32];
  int n;
} fx_ckpt;

static inline void fx_add(fx_ckpt *c, const char *name, long long d0, long long d1) {
  fx_tensor *t = &c->t[c->n++];
  snprintf(t->name, sizeof t->name, "%s", name);
  snprintf(t->dtype, sizeof t->dtype, "F32");
  t->rank = d1 ? 2 : 1;
  t->shape[0] = d0;
  t->shape[1] = d1;
}

/* The valid tensor set. */
static inline void fx_default(fx_ckpt *c) {
  memset(c, 0, sizeof *c);
  fx_add(c, "model.embed_tokens.weight", 32, 8);
  fx_add(c, "model.layers.0.input_layernorm.weight", 8, 0);
  fx_add(c, "model.layers.0.self_attn.q_proj.weight", 8, 8);
  fx_add(c, "model.layers.0.self_attn.k_proj.weight", 4, 8);
  fx_add(c, "model.layers.0.self_attn.v_proj.weight", 4, 8);
  fx_add(c, "model.layers.0.self_attn.q_proj.bias", 8, 0);
  fx_add(c, "model.layers.0.self_attn.k_proj.bias", 4, 0);
  fx_add(c, "model.layers.0.self_attn.v_proj.bias", 4, 0);
  fx_add(c, "model.layers.0.self_attn.o_proj.weight", 8, 8);
  fx_add(c, "model.layers.0.post_attention_layernorm.weight", 8, 0);
  fx_add(c, "model.layers.0.mlp.gate_proj.weight", 16, 8);
  fx_add(c, "model.layers.0.mlp.up_proj.weight", 16, 8);
  fx_add(c, "model.layers.0.mlp.down_proj.weight", 8, 16);
  fx_add(c, "model.norm.weight", 8, 0);
  fx_add(c, "lm_head.weight", 32, 8);
}

static inline int fx_find(const fx_ckpt *c, const char *name) {
  for (int i = 0; i < c->n; i++)
    if (strcmp(c->t[i].name, name) == 0) return i;
  return -1;
}

static inline long long fx_esize(const char *dtype) {
  if (strcmp(dtype, "F32") == 0 || strcmp(dtype, "I32") == 0) return 4;
  if (strcmp(dtype, "I64") == 0 || strcmp(dtype, "F64") == 0) return 8;
  return 2;
}

/* Packs tensors back to back; returns the data length. */
static inline long long fx_layout(fx_ckpt *c) {
  long long off = 0;
  for (int i = 0; i < c->n; i++) {
    fx_tensor *t = &c->t[i];
    long long numel = t->shape[0] * (t->rank == 2 ? t->shape[1] : 1);
    t->begin = off;
    t->end = off + numel * fx_esize(t->dtype);
    off = t->end;
  }
  return off;
}

/* The header JSON for c (offsets must be laid out). Caller frees. */
static char *fx_header(const fx_ckpt *c) {
  json_t *h = json_object();
  for (int i = 0; i < c->n; i++) {
    const fx_tensor *t = &c->t[i];
    json_t *shape = json_array();
    for (int r = 0; r < t->rank; r++) json_array_append_new(shape, json_integer(t->shape[r]));
    json_object_set_new(h, t->name,
                        json_pack("{s:s, s:o, s:[I,I]}", "dtype", t->dtype, "shape", shape,
                                  "data_offsets", (json_int_t)t->begin, (json_int_t)t->end));
  }
  json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
  char *s = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(h);
  return s;
}

/* Deterministic weights: small, varied, reproducible. */
static inline float fx_value(int tensor, long long i) {
  return 0.5f * sinf(0.37f * (float)i + 1.3f * (float)tensor) + (tensor % 3 == 1 ? 1.0f : 0.0f);
}

/* Writes path: 8-byte length (hlen_override if >= 0), header, data of
 * data_len bytes (f32 values for F32 tensors, zeros otherwise). */
static inline int fx_write_file(const char *path, const fx_ckpt *c, const char *header,
                         long long hlen_override, long long data_len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  unsigned long long hlen = hlen_override >= 0 ? (unsigned long long)hlen_override : strlen(header);
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(hlen >> (8 * i));
  fwrite(len8, 1, 8, f);
  fwrite(header, 1, strlen(header), f);
  unsigned char *data = calloc((size_t)data_len + 1, 1);
  for (int i = 0; i < c->n; i++) {
    const fx_tensor *t = &c->t[i];
    if (strcmp(t->dtype, "F32") != 0 || t->end > data_len || t->begin < 0) continue;
    for (long long k = 0; k < (t->end - t->begin) / 4; k++) {
      float v = fx_value(i, k);
      memcpy(data + t->begin + 4 * k, &v, 4);
    }
  }
  fwrite(data, 1, (size_t)data_len, f);
  free(data);
  return fclose(f);
}

static inline int fx_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

static const char *fx_config =
    "{\"architectures\": [\"DreamModel\"], \"model_type\": \"Dream\", \"hidden_size\": 8,"
    " \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1,"
    " \"intermediate_size\": 16, \"vocab_size\": 32, \"rope_theta\": 10000.0,"
    " \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": false, \"mask_token_id\": 31,"
    " \"eos_token_id\": 30, \"pad_token_id\": 30, \"bos_token_id\": 29}";

/* A fresh empty folder under /tmp; path is written into out. */
static inline int fx_mkdtemp(char *out, size_t len) {
  /* $TMPDIR when set: tools/fuzz_long.sh gives each run its own, where a
   * killed fuzzing job's folders are found and removed. */
  const char *tmp = getenv("TMPDIR");
  snprintf(out, len, "%s/sc_ckpt_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(out) ? 0 : -1;
}

/* Removes the files this fixture writes, then the folder. */
static inline void fx_cleanup(const char *dir) {
  static const char *const names[] = {"config.json", "model.safetensors",
                                      "model.safetensors.index.json",
                                      "model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors"};
  char p[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* Writes a whole valid checkpoint into dir. */
static inline int fx_write_valid(const char *dir) {
  char p[512];
  fx_ckpt c;
  fx_default(&c);
  long long len = fx_layout(&c);
  char *h = fx_header(&c);
  snprintf(p, sizeof p, "%s/config.json", dir);
  int rc = fx_write_text(p, fx_config);
  snprintf(p, sizeof p, "%s/model.safetensors", dir);
  rc |= fx_write_file(p, &c, h, -1, len);
  free(h);
  return rc;
}

#endif

/* gguf.c — llama.cpp's GGUF files for the Dream and LLaDA architectures:
 * the header, the metadata, the tensor directory, every check before a byte
 * of data is read; the tensors presented to checkpoint.c under the Hugging
 * Face names it binds (so one binding path serves both formats); the config
 * from the metadata; and the tokenizer from the metadata.
 *
 * Format (ggml docs/gguf.md; gguf-py constants.py): "GGUF", u32 version (2
 * or 3), u64 tensor count, u64 metadata count; metadata as (string key, u32
 * type, value), strings as u64 length + bytes, arrays as u32 element type +
 * u64 count + elements; then per tensor a string name, u32 rank, u64 dims
 * (ne[0] first: the innermost, the columns of a matrix), u32 ggml type, u64
 * offset into the data section, which starts at the next multiple of
 * general.alignment (default 32). ggml types read here: F32 (0), F16 (1),
 * Q4_0 (2), Q8_0 (8), BF16 (30); block layouts in quant.c.
 *
 * Names and metadata (llama.cpp src/llama-arch.cpp, gguf-py
 * tensor_mapping.py, convert_hf_to_gguf.py DreamModel / LLaDAModel):
 * token_embd, output_norm, output (absent: tied to token_embd), and per
 * block blk.N.{attn_norm, attn_q, attn_k, attn_v (+ .bias for Dream),
 * attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}; keys
 * {arch}.block_count, .embedding_length, .feed_forward_length,
 * .attention.head_count(_kv), .attention.layer_norm_rms_epsilon,
 * .rope.freq_base, .context_length; tokenizer.ggml.{model, pre, tokens,
 * token_type, merges, bos/eos/padding/mask_token_id}; diffusion.shift_logits
 * (absent: Dream shifts, LLaDA does not). The LLaDA converter permutes the
 * rows of q and k for ggml's interleaved RoPE (LlamaModel.permute: each
 * head's rows reshaped (2, hd/2) and transposed); they are put back here
 * into the rotate-half order cpu.c computes with. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model_impl.h"
#include "tokenizer_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { GT_U8, GT_I8, GT_U16, GT_I16, GT_U32, GT_I32, GT_F32, GT_BOOL, GT_STR, GT_ARR, GT_U64,
       GT_I64, GT_F64, GT_COUNT };
static const unsigned gt_size[GT_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

#define MAX_COUNT 10000000ull /* tensors, keys, array elements: far past any model */

typedef struct gkv {
  const char *key;
  size_t key_len;
  unsigned type;      /* GT_* */
  unsigned arr_type;  /* GT_ARR: the elements' type */
  uint64_t count;     /* GT_ARR: elements */
  const uint8_t *val; /* into the mapping */
} gkv;

typedef struct gtensor {
  char name[128];
  uint32_t rank, type;
  uint64_t ne[4];
  uint64_t offset, bytes;
} gtensor;

typedef struct gguf {
  const char *path;
  uint8_t *map;
  size_t len;
  gkv *kv;
  uint64_t n_kv;
  gtensor *t;
  uint64_t n_t;
  const uint8_t *data; /* the data section */
  uint64_t data_len;
} gguf;

static void gguf_close(gguf *g) {
  free(g->kv);
  free(g->t);
  if (g->map) munmap(g->map, g->len);
  memset(g, 0, sizeof *g);
}

/* ---- reading with bounds -------------------------------------------------------- */

typedef struct cursor {
  const uint8_t *p, *end;
} cursor;

static bool take(cursor *c, size_t n, const uint8_t **out) {
  if ((size_t)(c->end - c->p) < n) return false;
  *out = c->p;
  c->p += n;
  return true;
}

static bool u32_at(cursor *c, uint32_t *v) {
  const uint8_t *b;
  if (!take(c, 4, &b)) return false;
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return true;
}

static bool u64_at(cursor *c, uint64_t *v) {
  uint32_t lo, hi;
  if (!u32_at(c, &lo) || !u32_at(c, &hi)) return false;
  *v = (uint64_t)hi << 32 | lo;
  return true;
}

static bool str_at(cursor *c, const char **s, size_t *len) {
  uint64_t n;
  const uint8_t *b;
  if (!u64_at(c, &n) || n > (uint64_t)(c->end - c->p) || !take(c, (size_t)n, &b)) return false;
  *s = (const char *)b;
  *len = (size_t)n;
  return true;
}

/* Skips one value of type t (arrays of arrays are refused). */
static bool skip_value(cursor *c, unsigned t, unsigned *arr_type, uint64_t *count) {
  const uint8_t *b;
  if (t == GT_STR) {
    const char *s;
    size_t n;
    return str_at(c, &s, &n);
  }
  if (t != GT_ARR) return t < GT_COUNT && take(c, gt_size[t], &b);
  uint32_t et;
  uint64_t n;
  if (!u32_at(c, &et) || !u64_at(c, &n) || et >= GT_COUNT || et == GT_ARR || n > MAX_COUNT)
    return false;
  *arr_type = et;
  *count = n;
  if (et != GT_STR) return n * gt_size[et] <= (uint64_t)(c->end - c->p) &&
                           take(c, (size_t)(n * gt_size[et]), &b);
  for (uint64_t i = 0; i < n; i++)
    if (!skip_value(c, GT_STR, NULL, NULL)) return false;
  return true;
}

static const gkv *kv_find(const gguf *g, const char *key) {
  size_t n = strlen(key);
  for (uint64_t i = 0; i < g->n_kv; i++)
    if (g->kv[i].key_len == n && memcmp(g->kv[i].key, key, n) == 0) return &g->kv[i];
  return NULL;
}

/* An integer key of any integer type; false when absent or not one. */
static bool kv_int(const gguf *g, const char *key, int64_t *out) {
  const gkv *k = kv_find(g, key);
  if (!k) return false;
  const uint8_t *v = k->val;
  uint64_t u = 0;
  unsigned sz = k->type < GT_COUNT ? gt_size[k->type] : 0;
  if (k->type == GT_F32 || k->type == GT_F64 || k->type == GT_BOOL || sz == 0) return false;
  for (unsigned i = 0; i < sz; i++) u |= (uint64_t)v[i] << (8 * i);
  bool sgn = k->type == GT_I8 || k->type == GT_I16 || k->type == GT_I32 || k->type == GT_I64;
  if (sgn && sz < 8 && (u >> (8 * sz - 1)) & 1) u |= ~0ull << (8 * sz);
  *out = (int64_t)u;
  return true;
}

static bool kv_float(const gguf *g, const char *key, double *out) {
  const gkv *k = kv_find(g, key);
  if (!k) return false;
  if (k->type == GT_F32) {
    float f;
    memcpy(&f, k->val, 4);
    *out = f;
    return true;
  }
  if (k->type == GT_F64) {
    memcpy(out, k->val, 8);
    return true;
  }
  int64_t i;
  if (!kv_int(g, key, &i)) return false;
  *out = (double)i;
  return true;
}

static bool kv_bool(const gguf *g, const char *key, bool *out) {
  const gkv *k = kv_find(g, key);
  if (!k || k->type != GT_BOOL) return false;
  *out = k->val[0] != 0;
  return true;
}

/* A string key, copied into buf; false when absent or not a string. */
static bool kv_str(const gguf *g, const char *key, char *buf, size_t n) {
  const gkv *k = kv_find(g, key);
  if (!k || k->type != GT_STR) return false;
  cursor c = {k->val, g->map + g->len};
  const char *s;
  size_t len;
  if (!str_at(&c, &s, &len)) return false;
  snprintf(buf, n, "%.*s", (int)len, s);
  return true;
}

/* ---- the file ------------------------------------------------------------------- */

static uint64_t type_bytes(uint32_t type, uint64_t ne0, uint64_t n, bool *known) {
  *known = true;
  switch (type) {
  case 0: return n * 4;                              /* F32 */
  case 1: case 30: return n * 2;                     /* F16, BF16 */
  case 8: return ne0 % 32 ? 0 : n / 32 * 34;         /* Q8_0 */
  case 2: return ne0 % 32 ? 0 : n / 32 * 18;         /* Q4_0 */
  }
  *known = false;
  return 0;
}

static const char *type_name(uint32_t type) {
  switch (type) {
  case 0: return "F32";
  case 1: return "F16";
  case 2: return "Q4_0";
  case 8: return "Q8_0";
  case 30: return "BF16";
  }
  return NULL;
}

static int cmp_offset(const void *a, const void *b) {
  const gtensor *x = *(const gtensor *const *)a, *y = *(const gtensor *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static sc_status gguf_parse(const char *path, gguf *g, sc_error *err) {
  memset(g, 0, sizeof *g);
  g->path = path;
  /* Regular files only: a FIFO or a device named .gguf is an error naming
   * it, never an open or a mapping that blocks (common/file.c). */
  int fd;
  SC_TRY(sc_file_open_regular(path, &fd, err));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size < 24) {
    close(fd);
    return sc_error_set(err, SC_ERR_FORMAT, "%s: not a GGUF file (too short)", path);
  }
  g->len = (size_t)sb.st_size;
  void *map = mmap(NULL, g->len, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  SC_CHECK(map != MAP_FAILED, err, SC_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
  g->map = map;
  sc_status st = SC_OK;
  cursor c = {g->map, g->map + g->len};
  uint32_t magic = 0, version = 0; /* set below: the file holds >= 24 bytes */
  uint64_t nt = 0, nkv = 0;
  u32_at(&c, &magic);
  u32_at(&c, &version);
  u64_at(&c, &nt);
  u64_at(&c, &nkv);
#define BAD(...) do { st = sc_error_set(err, SC_ERR_FORMAT, __VA_ARGS__); goto fail; } while (0)
  if (memcmp(g->map, "GGUF", 4) != 0) BAD("%s: not a GGUF file (no GGUF magic)", path);
  (void)magic;
  if (version != 2 && version != 3)
    BAD("%s: GGUF version %u is not supported (2 and 3 are)", path, version);
  if (nt > MAX_COUNT || nkv > MAX_COUNT) BAD("%s: %llu tensors / %llu keys is not sane", path,
                                             (unsigned long long)nt, (unsigned long long)nkv);
  g->kv = calloc(nkv ? nkv : 1, sizeof *g->kv);
  g->t = calloc(nt ? nt : 1, sizeof *g->t);
  if (!g->kv || !g->t) {
    st = sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", path);
    goto fail;
  }
  for (uint64_t i = 0; i < nkv; i++) {
    gkv *k = &g->kv[i];
    uint32_t t;
    if (!str_at(&c, &k->key, &k->key_len) || !u32_at(&c, &t) || t >= GT_COUNT)
      BAD("%s: metadata entry %llu is truncated or has an unknown type", path,
          (unsigned long long)i);
    k->type = t;
    k->val = c.p;
    if (!skip_value(&c, t, &k->arr_type, &k->count))
      BAD("%s: metadata '%.*s': value runs past the end of the file", path,
          (int)(k->key_len > 80 ? 80 : k->key_len), k->key);
    g->n_kv++;
  }
  for (uint64_t i = 0; i < nt; i++) {
    gtensor *t = &g->t[i];
    const char *name;
    size_t nl;
    if (!str_at(&c, &name, &nl) || nl >= sizeof t->name || !u32_at(&c, &t->rank) ||
        t->rank < 1 || t->rank > 4)
      BAD("%s: tensor %llu: bad name or rank", path, (unsigned long long)i);
    memcpy(t->name, name, nl);
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->rank; d++) {
      if (!u64_at(&c, &t->ne[d]) || t->ne[d] == 0 || t->ne[d] > g->len ||
          n > g->len / t->ne[d])
        BAD("%s: tensor '%s': a dimension is zero or larger than the file", path, t->name);
      n *= t->ne[d];
    }
    if (!u32_at(&c, &t->type) || !u64_at(&c, &t->offset))
      BAD("%s: tensor '%s': truncated", path, t->name);
    bool known;
    t->bytes = type_bytes(t->type, t->ne[0], n, &known);
    if (known && t->bytes == 0)
      BAD("%s: tensor '%s': %s rows of %llu values are not whole blocks of 32", path, t->name,
          type_name(t->type), (unsigned long long)t->ne[0]);
    g->n_t++;
  }
  int64_t align = 32;
  if (kv_find(g, "general.alignment") &&
      (!kv_int(g, "general.alignment", &align) || align < 8 || align > 65536 || align % 8))
    BAD("%s: general.alignment is not a multiple of 8 up to 65536", path);
  uint64_t at = (uint64_t)(c.p - g->map);
  at = (at + (uint64_t)align - 1) / (uint64_t)align * (uint64_t)align;
  if (at > g->len) BAD("%s: no data section", path);
  g->data = g->map + at;
  g->data_len = g->len - at;
  /* Offsets: aligned, inside the data, and no two tensors sharing bytes. */
  const gtensor **order = malloc((g->n_t ? g->n_t : 1) * sizeof *order);
  if (!order) {
    st = sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", path);
    goto fail;
  }
  for (uint64_t i = 0; i < g->n_t; i++) {
    const gtensor *t = &g->t[i];
    order[i] = t;
    if (t->offset % (uint64_t)align || t->offset > g->data_len ||
        (t->bytes && t->bytes > g->data_len - t->offset)) {
      free(order);
      BAD("%s: tensor '%s': data at offset %llu (%llu bytes) is misaligned or past the end",
          path, t->name, (unsigned long long)t->offset, (unsigned long long)t->bytes);
    }
  }
  qsort(order, g->n_t, sizeof *order, cmp_offset);
  for (uint64_t i = 1; i < g->n_t; i++)
    if (order[i - 1]->bytes && order[i]->offset < order[i - 1]->offset + order[i - 1]->bytes) {
      const char *a = order[i - 1]->name, *b = order[i]->name;
      free(order);
      BAD("%s: tensors '%s' and '%s' overlap", path, a, b);
    }
  free(order);
#undef BAD
  return SC_OK;
fail:
  gguf_close(g);
  return st;
}

const char *sc_gguf_find(const char *dir, char *buf, size_t n) {
  size_t len = strlen(dir);
  struct stat sb;
  /* Any .gguf that is not a folder: gguf_parse refuses what is not a
   * regular file by name. */
  if (len > 5 && strcmp(dir + len - 5, ".gguf") == 0 && stat(dir, &sb) == 0 &&
      !S_ISDIR(sb.st_mode)) {
    snprintf(buf, n, "%s", dir);
    return buf;
  }
  /* A folder with a config.json is a Hugging Face checkpoint; otherwise its
   * one .gguf file, if it has exactly one. */
  char cfg[4200];
  snprintf(cfg, sizeof cfg, "%s/config.json", dir);
  if (stat(cfg, &sb) == 0) return NULL;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  int found = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l > 5 && strcmp(de->d_name + l - 5, ".gguf") == 0) {
      found++;
      snprintf(buf, n, "%s/%s", dir, de->d_name);
    }
  }
  closedir(d);
  return found == 1 ? buf : NULL;
}

/* ---- the model: config and tensors ---------------------------------------------- */

static const gtensor *tensor_find(const gguf *g, const char *name) {
  for (uint64_t i = 0; i < g->n_t; i++)
    if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
  return NULL;
}

/* GGUF block-tensor suffix -> Hugging Face name, per family. */
static bool hf_name(sc_model_family f, const char *gname, char *out, size_t n) {
  static const struct {
    const char *g, *dream, *llada;
  } map[] = {
      {"attn_norm.weight", "input_layernorm.weight", "attn_norm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight", "ff_norm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight", "q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight", "k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight", "v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias", "q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias", "k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias", "v_proj.bias"},
      {"attn_output.weight", "self_attn.o_proj.weight", "attn_out.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight", "ff_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight", "up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight", "ff_out.weight"},
  };
  const bool llada = f == SC_FAMILY_LLADA;
  if (strcmp(gname, "token_embd.weight") == 0)
    return snprintf(out, n, "%s", llada ? "model.transformer.wte.weight"
                                        : "model.embed_tokens.weight") > 0;
  if (strcmp(gname, "output_norm.weight") == 0)
    return snprintf(out, n, "%s", llada ? "model.transformer.ln_f.weight" : "model.norm.weight") > 0;
  if (strcmp(gname, "output.weight") == 0)
    return snprintf(out, n, "%s", llada ? "model.transformer.ff_out.weight" : "lm_head.weight") > 0;
  int blk, used = 0;
  if (sscanf(gname, "blk.%d.%n", &blk, &used) != 1 || used == 0 || blk < 0) return false;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(gname + used, map[i].g) == 0) {
      if (llada) snprintf(out, n, "model.transformer.blocks.%d.%s", blk, map[i].llada);
      else snprintf(out, n, "model.layers.%d.%s", blk, map[i].dream);
      return true;
    }
  return false;
}

static int cmp_st_name(const void *a, const void *b) {
  return strcmp(((const sc_st_tensor *)a)->name, ((const sc_st_tensor *)b)->name);
}

/* LLaDA's q/k rows back from ggml's interleaved order: within each head of
 * hd rows, stored row 2i + j holds original row j * hd/2 + i. */
static void unpermute_rows(const uint8_t *src, uint8_t *dst, uint64_t rows, size_t row_bytes,
                           int heads) {
  const uint64_t hd = rows / (uint64_t)heads, half = hd / 2;
  for (uint64_t h = 0; h < (uint64_t)heads; h++)
    for (uint64_t i = 0; i < half; i++)
      for (uint64_t j = 0; j < 2; j++)
        memcpy(dst + (h * hd + j * half + i) * row_bytes, src + (h * hd + 2 * i + j) * row_bytes,
               row_bytes);
}

/* The family profile (family.c) from the metadata, as the other loaders
 * resolve it from a checkpoint's tokenizer files: the added tokens are the
 * tokens of type 3 (control) and 4 (user-defined), as the converter writes
 * a tokenizer.json's added tokens; bos/eos/pad by their ids; the BOS the
 * tokenizer adds from tokenizer.ggml.add_bos_token. A GGUF file has no
 * config.json, so no sculpt_* override applies. */
static sc_status resolve_profile(const gguf *g, sc_config *cfg, sc_error *err) {
  json_t *added = json_array(), *tok = json_object(), *tcfg = json_object();
  sc_status st = SC_OK;
  if (!added || !tok || !tcfg || json_object_set(tok, "added_tokens", added) != 0) {
    st = sc_error_set(err, SC_ERR_NOMEM, "%s: out of memory", g->path);
    goto out;
  }
  const gkv *toks = kv_find(g, "tokenizer.ggml.tokens");
  const gkv *typ = kv_find(g, "tokenizer.ggml.token_type");
  if (toks && toks->type == GT_ARR && toks->arr_type == GT_STR) {
    const bool typed = typ && typ->type == GT_ARR && typ->arr_type == GT_I32 &&
                       typ->count == toks->count;
    static const char *const named[] = {"bos", "eos", "padding"};
    int64_t ids[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++) {
      char key[64];
      snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", named[k]);
      if (!kv_int(g, key, &ids[k])) ids[k] = -1;
    }
    cursor c = {toks->val + 12, g->map + g->len};
    for (uint64_t i = 0; i < toks->count; i++) {
      const char *text;
      size_t len;
      if (!str_at(&c, &text, &len)) break; /* the tokenizer's load names it */
      int32_t ty = 1;
      if (typed) memcpy(&ty, typ->val + 12 + 4 * i, 4);
      json_t *str = NULL;
      if (ty == 3 || ty == 4 || (int64_t)i == ids[0] || (int64_t)i == ids[1] ||
          (int64_t)i == ids[2])
        str = json_stringn_nocheck(text, len);
      if ((ty == 3 || ty == 4) && str)
        json_array_append_new(added, json_pack("{s:I, s:O}", "id", (json_int_t)i, "content", str));
      static const char *const as[] = {"bos_token", "eos_token", "pad_token"};
      for (int k = 0; k < 3 && str; k++)
        if ((int64_t)i == ids[k]) json_object_set(tcfg, as[k], str);
      json_decref(str);
    }
  }
  bool add_bos;
  if (kv_bool(g, "tokenizer.ggml.add_bos_token", &add_bos))
    json_object_set_new(tcfg, "add_bos_token", json_boolean(add_bos));
  sc_token_files tf = {tok, tcfg, NULL};
  st = sc_family_profile_resolve(g->path, NULL, &tf, cfg, err);
out:
  json_decref(added);
  json_decref(tok);
  json_decref(tcfg);
  return st;
}

sc_status sc_gguf_open(const char *path, sc_model_family family, sc_config *cfg,
                       sc_st_file *out, sc_error *err) {
  if (out) memset(out, 0, sizeof *out);
  memset(cfg, 0, sizeof *cfg);
  gguf g;
  SC_TRY(gguf_parse(path, &g, err));
  sc_status st = SC_OK;
  char arch[64] = "";
  kv_str(&g, "general.architecture", arch, sizeof arch);
#define BAD(code, ...) do { st = sc_error_set(err, code, __VA_ARGS__); goto out; } while (0)
  sc_model_family f = family;
  if (f == SC_FAMILY_AUTO) {
    if (strcmp(arch, "dream") == 0) f = SC_FAMILY_DREAM;
    else if (strcmp(arch, "llada") == 0) f = SC_FAMILY_LLADA;
    else
      BAD(SC_ERR_UNSUPPORTED,
          "%s: GGUF architecture '%s' is not supported (dream and llada are)", path, arch);
  }
  if (f != SC_FAMILY_DREAM && f != SC_FAMILY_LLADA)
    BAD(SC_ERR_UNSUPPORTED, "%s: GGUF files are read for the dream and llada families", path);
  cfg->family = f;
  snprintf(cfg->architecture, sizeof cfg->architecture, "%s (gguf)", arch);
  char key[160];
  int64_t v;
#define KEY(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
  if (!kv_int(&g, KEY("block_count"), &v) || v < 1 || v > 4096)
    BAD(SC_ERR_FORMAT, "%s: no sane %s", path, key);
  cfg->n_layers = (int)v;
  if (!kv_int(&g, KEY("embedding_length"), &v) || v < 1 || v > 1 << 20)
    BAD(SC_ERR_FORMAT, "%s: no sane %s", path, key);
  cfg->hidden = (int)v;
  if (!kv_int(&g, KEY("feed_forward_length"), &v) || v < 1 || v > 1 << 22)
    BAD(SC_ERR_FORMAT, "%s: no sane %s", path, key);
  cfg->intermediate = (int)v;
  if (!kv_int(&g, KEY("attention.head_count"), &v) || v < 1 || v > 4096)
    BAD(SC_ERR_FORMAT, "%s: no sane %s", path, key);
  cfg->n_heads = (int)v;
  cfg->n_kv_heads = kv_int(&g, KEY("attention.head_count_kv"), &v) ? (int)v : cfg->n_heads;
  if (cfg->n_kv_heads < 1 || cfg->n_heads % cfg->n_kv_heads || cfg->hidden % cfg->n_heads ||
      (cfg->hidden / cfg->n_heads) % 2)
    BAD(SC_ERR_FORMAT, "%s: heads %d / kv heads %d do not divide hidden %d into even heads",
        path, cfg->n_heads, cfg->n_kv_heads, cfg->hidden);
  cfg->head_dim = cfg->hidden / cfg->n_heads;
  double d;
  cfg->rope_theta = kv_float(&g, KEY("rope.freq_base"), &d) ? d
                    : f == SC_FAMILY_LLADA                  ? 500000.0
                                                            : 10000.0;
  cfg->rms_eps = kv_float(&g, KEY("attention.layer_norm_rms_epsilon"), &d) ? d
                 : f == SC_FAMILY_LLADA                                      ? 1e-5
                                                                             : 1e-6;
  if (!(cfg->rope_theta > 0) || !(cfg->rms_eps > 0) || cfg->rms_eps > 1)
    BAD(SC_ERR_FORMAT, "%s: rope.freq_base and the RMS epsilon must be positive", path);
  cfg->max_positions = kv_int(&g, KEY("context_length"), &v) && v > 0 && v < 1 << 24 ? (int)v : 0;
  bool shift;
  cfg->shift_logits = kv_bool(&g, "diffusion.shift_logits", &shift) ? shift
                                                                    : f == SC_FAMILY_DREAM;
  cfg->mask_id = kv_int(&g, "tokenizer.ggml.mask_token_id", &v) ? (int32_t)v
                 : f == SC_FAMILY_LLADA                          ? 126336
                                                                 : 151666;
  cfg->eos_id = kv_int(&g, "tokenizer.ggml.eos_token_id", &v) ? (int32_t)v : -1;
  cfg->pad_id = kv_int(&g, "tokenizer.ggml.padding_token_id", &v) ? (int32_t)v : cfg->eos_id;
  cfg->bos_id = kv_int(&g, "tokenizer.ggml.bos_token_id", &v) ? (int32_t)v : -1;
#undef KEY
  const gtensor *emb = tensor_find(&g, "token_embd.weight");
  if (!emb || emb->rank != 2) BAD(SC_ERR_FORMAT, "%s: no 2-D token_embd.weight", path);
  cfg->vocab = (int)emb->ne[1];
  cfg->qkv_bias = tensor_find(&g, "blk.0.attn_q.bias") != NULL;
  cfg->qk_norm = false;
  cfg->tie = tensor_find(&g, "output.weight") ? 0 : 1;
  cfg->tie_default = true;
  if ((st = resolve_profile(&g, cfg, err)) != SC_OK || !out) goto out;

  /* The tensors, renamed; LLaDA's q/k rows put back in order. */
  out->path = strdup(path);
  out->tensors = calloc(g.n_t ? g.n_t : 1, sizeof *out->tensors);
  if (!out->path || !out->tensors) BAD(SC_ERR_NOMEM, "%s: out of memory", path);
  size_t owned = 0;
  for (uint64_t i = 0; f == SC_FAMILY_LLADA && i < g.n_t; i++) {
    const char *nm = g.t[i].name;
    size_t l = strlen(nm);
    if (l > 14 && (strcmp(nm + l - 14, ".attn_q.weight") == 0 ||
                   strcmp(nm + l - 14, ".attn_k.weight") == 0))
      owned += (size_t)g.t[i].bytes;
  }
  if (owned && !(out->owned = malloc(owned))) BAD(SC_ERR_NOMEM, "%s: out of memory", path);
  uint8_t *next = out->owned;
  for (uint64_t i = 0; i < g.n_t; i++) {
    const gtensor *t = &g.t[i];
    char name[200];
    if (!hf_name(f, t->name, name, sizeof name)) continue; /* not one we read */
    sc_st_tensor *s = &out->tensors[out->n_tensors];
    if (!(s->name = strdup(name))) BAD(SC_ERR_NOMEM, "%s: out of memory", path);
    out->n_tensors++;
    const char *tn = type_name(t->type);
    snprintf(s->dtype_str, sizeof s->dtype_str, "%s", tn ? tn : "ggml type");
    if (!tn) snprintf(s->dtype_str, sizeof s->dtype_str, "ggml type %u", t->type);
    s->usable = tn != NULL;
    s->dtype = t->type == 0   ? SC_DTYPE_F32
               : t->type == 1 ? SC_DTYPE_F16
               : t->type == 30 ? SC_DTYPE_BF16
               : t->type == 8 ? SC_DTYPE_Q8_0
                              : SC_DTYPE_Q4_0;
    s->rank = (int)t->rank;
    for (uint32_t k = 0; k < t->rank; k++) s->shape[k] = (int64_t)t->ne[t->rank - 1 - k];
    s->begin = t->offset;
    s->end = t->offset + t->bytes;
    s->data = g.data + t->offset;
    size_t l = strlen(t->name);
    bool q = l > 14 && strcmp(t->name + l - 14, ".attn_q.weight") == 0;
    bool k = l > 14 && strcmp(t->name + l - 14, ".attn_k.weight") == 0;
    if (f == SC_FAMILY_LLADA && (q || k) && s->usable && t->rank == 2) {
      const int heads = q ? cfg->n_heads : cfg->n_kv_heads;
      if (t->ne[1] % (uint64_t)heads || (t->ne[1] / (uint64_t)heads) % 2)
        BAD(SC_ERR_FORMAT, "%s: tensor '%s': %llu rows are not %d heads of even size", path,
            t->name, (unsigned long long)t->ne[1], heads);
      unpermute_rows(s->data, next, t->ne[1], (size_t)(t->bytes / t->ne[1]), heads);
      s->data = next;
      next += t->bytes;
    }
  }
  qsort(out->tensors, out->n_tensors, sizeof *out->tensors, cmp_st_name);
  /* The mapping moves to the file record (sc_st_file_close unmaps it). */
  out->map = g.map;
  out->map_len = g.len;
  g.map = NULL;
#undef BAD
out:
  gguf_close(&g);
  if (st != SC_OK && out) sc_st_file_close(out);
  return st;
}

/* ---- the tokenizer --------------------------------------------------------------
 * tokenizer.ggml.model "gpt2" (byte-level BPE): tokens[i] is id i in the
 * byte-level form; token_type 1 (normal) goes into the vocabulary, 3
 * (control) and 4 (user-defined) become added tokens (control = special),
 * 5 (unused, the converter's [PADn]) is skipped; merges "a b" in rank
 * order. The pre-tokenizer is named by tokenizer.ggml.pre (llama.cpp
 * llama-vocab.cpp): "qwen2" (Dream), "llama-bpe" (LLaMA 3 style) and
 * "gpt2"/"default" (GPT-2's pattern) are known; another name is refused
 * (a tokenizer.json beside the .gguf is then used instead). */

#define SC_TOK_LLAMA3_PATTERN                                                  \
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "    \
  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Element i of a string array (cursor over the array's elements). */
static bool next_str(cursor *c, const char **s, size_t *len) { return str_at(c, s, len); }

static sc_status tok_from_gguf(sc_tokenizer *t, const gguf *g, sc_error *err) {
  const char *path = g->path;
  char model[32] = "", pre[64] = "";
  kv_str(g, "tokenizer.ggml.model", model, sizeof model);
  SC_CHECK(strcmp(model, "gpt2") == 0, err, SC_ERR_UNSUPPORTED,
           "%s: tokenizer.ggml.model '%s' is not supported (gpt2, byte-level BPE, is)", path,
           model);
  if (!kv_str(g, "tokenizer.ggml.pre", pre, sizeof pre)) snprintf(pre, sizeof pre, "default");
  const gkv *tok = kv_find(g, "tokenizer.ggml.tokens");
  const gkv *typ = kv_find(g, "tokenizer.ggml.token_type");
  const gkv *mer = kv_find(g, "tokenizer.ggml.merges");
  SC_CHECK(tok && tok->type == GT_ARR && tok->arr_type == GT_STR && tok->count > 0, err,
           SC_ERR_FORMAT, "%s: no tokenizer.ggml.tokens", path);
  SC_CHECK(!typ || (typ->type == GT_ARR && typ->arr_type == GT_I32 && typ->count == tok->count),
           err, SC_ERR_FORMAT, "%s: tokenizer.ggml.token_type does not match the tokens", path);
  SC_CHECK(!mer || (mer->type == GT_ARR && mer->arr_type == GT_STR), err, SC_ERR_FORMAT,
           "%s: tokenizer.ggml.merges is not a string array", path);
  const uint8_t *end = g->map + g->len;
  /* Array values start after (u32 type, u64 count). */
  cursor c = {tok->val + 12, end};
  const uint8_t *types = typ ? typ->val + 12 : NULL;
  for (uint64_t i = 0; i < tok->count; i++) {
    const char *s;
    size_t len;
    SC_CHECK(next_str(&c, &s, &len), err, SC_ERR_FORMAT, "%s: token %llu is truncated", path,
             (unsigned long long)i);
    int32_t ty = 1;
    if (types) memcpy(&ty, types + 4 * i, 4);
    if (ty == 1 || ty == 6) SC_TRY(sc_tok__add_vocab(t, s, len, (int32_t)i, err));
  }
  SC_TRY(sc_tok__index_vocab(t, err));
  c = (cursor){tok->val + 12, end};
  for (uint64_t i = 0; i < tok->count; i++) {
    const char *s = NULL; /* the first pass checked every string */
    size_t len = 0;
    next_str(&c, &s, &len);
    int32_t ty = 1;
    if (types) memcpy(&ty, types + 4 * i, 4);
    if (ty == 3 || ty == 4)
      SC_TRY(sc_tok__add_added(t, s, len, (int32_t)i, ty == 3, false, false, false, ty == 4,
                               true, err));
  }
  if (mer) {
    SC_TRY(sc_tok__reserve_merges(t, (size_t)mer->count, err));
    c = (cursor){mer->val + 12, end};
    char where[48];
    for (uint64_t i = 0; i < mer->count; i++) {
      const char *s;
      size_t len;
      SC_CHECK(next_str(&c, &s, &len), err, SC_ERR_FORMAT, "%s: merge %llu is truncated", path,
               (unsigned long long)i);
      const char *sp = memchr(s, ' ', len);
      SC_CHECK(sp && sp > s && sp < s + len - 1, err, SC_ERR_FORMAT,
               "%s: merge %llu is not \"a b\"", path, (unsigned long long)i);
      snprintf(where, sizeof where, "merge %llu", (unsigned long long)i);
      SC_TRY(sc_tok__add_merge(t, s, (size_t)(sp - s), sp + 1, len - (size_t)(sp - s) - 1,
                               (int32_t)i, where, err));
    }
  }
  /* Byte-level with no prefix space; the split pattern by name. */
  t->prefix_space = false;
  if (strcmp(pre, "qwen2") == 0 || strcmp(pre, "llama-bpe") == 0) {
    SC_TRY(sc_tok__compile(strcmp(pre, "qwen2") == 0 ? SC_TOK_QWEN2_PATTERN
                                                      : SC_TOK_LLAMA3_PATTERN,
                           PCRE2_ZERO_TERMINATED, false, &t->split[0], err));
    t->n_split = 1;
    t->nfc = strcmp(pre, "qwen2") == 0;
  } else if (strcmp(pre, "gpt2") == 0 || strcmp(pre, "default") == 0) {
    SC_TRY(sc_tok__compile(SC_TOK_GPT2_PATTERN, PCRE2_ZERO_TERMINATED, false, &t->bl_regex,
                           err));
  } else {
    return sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "%s: tokenizer.ggml.pre '%s' is not supported (qwen2, llama-bpe, gpt2 "
                        "are); put the model's tokenizer.json beside the .gguf",
                        path, pre);
  }
  return sc_tok__finish(t, err);
}

sc_status sc_tokenizer_load_gguf(const char *path, sc_tokenizer **out, sc_error *err) {
  *out = NULL;
  gguf g;
  SC_TRY(gguf_parse(path, &g, err));
  sc_tokenizer *t = sc_tok__new();
  sc_status st = t ? tok_from_gguf(t, &g, err)
                   : sc_error_set(err, SC_ERR_NOMEM, "out of memory (tokenizer)");
  gguf_close(&g);
  if (st != SC_OK) {
    sc_tokenizer_free(t);
    return st;
  }
  *out = t;
  return SC_OK;
}

/* checkpoint.c — sc_model_load: config, shards, and binding every tensor the
 * family needs, with its shape checked against the config.
 *
 * Tensor names: Qwen2/Qwen3 follow HF transformers' modeling_qwen2/qwen3
 * (model.embed_tokens, model.layers.N.self_attn.{q,k,v,o}_proj, q_norm/k_norm
 * in Qwen3, mlp.{gate,up,down}_proj, input_layernorm,
 * post_attention_layernorm, model.norm, lm_head). LLaDA follows its
 * modeling_llada.py (LLaDALlamaBlock): model.transformer.wte,
 * blocks.N.{q_proj,k_proj,v_proj,attn_out,attn_norm,ff_norm,ff_proj,up_proj,
 * ff_out}, ln_f, and ff_out for the head. In LLaDALlamaBlock.forward,
 * `x, x_up = self.ff_proj(x), self.up_proj(x); x = self.act(x); x = x * x_up;
 * x = self.ff_out(x)`: ff_proj is the GATE (it goes through SiLU), up_proj
 * the up projection and blocks.N.ff_out the down projection.
 *
 * The lm_head rule (CoDA states no tie_word_embeddings while its code
 * defaults it to true): when config.json says tied, the embedding is the
 * head, as in HF; otherwise a saved head tensor is used; with neither, the
 * family's default decides (tied for Qwen3, else the head is missing). */
#define _POSIX_C_SOURCE 200809L
#include "model_impl.h"
#include "tokenizer_impl.h" /* sc_gguf_find */

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct loader {
  sc_model *m;
  const char *dir;
  json_t *weight_map; /* from the index, or NULL for one file */
  float *vec_next;    /* next free slot in m->vectors */
  int64_t n_params;
  uint64_t bytes;
  int dtype_seen; /* -1 none yet, else sc_dtype; SC_DTYPE_MIXED once mixed */
  bool dtype_only_vectors; /* dtype_seen came from a vector so far */
  bool gguf;                /* the weights are one GGUF file */
} loader;

/* Finds a tensor in whichever shard holds it; NULL when none does. */
static const sc_st_tensor *find_tensor(const loader *L, const char *name, const char **file) {
  for (size_t i = 0; i < L->m->n_files; i++) {
    const sc_st_tensor *t = sc_st_file_find(&L->m->files[i], name);
    if (t) {
      *file = L->m->files[i].path;
      return t;
    }
  }
  return NULL;
}

static sc_status missing(const loader *L, const char *name, sc_error *err) {
  if (L->gguf)
    return sc_error_set(err, SC_ERR_FORMAT, "%s: missing tensor '%s'", L->m->files[0].path,
                        name);
  if (L->weight_map)
    return sc_error_set(err, SC_ERR_FORMAT,
                        "%s/model.safetensors.index.json: missing tensor '%s' (no shard has it)",
                        L->dir, name);
  return sc_error_set(err, SC_ERR_FORMAT, "%s/model.safetensors: missing tensor '%s'", L->dir,
                      name);
}

static sc_status take(loader *L, const char *name, int rank, int64_t d0, int64_t d1,
                      const sc_st_tensor **out, sc_error *err) {
  const char *file = NULL;
  const sc_st_tensor *t = find_tensor(L, name, &file);
  if (!t) return missing(L, name, err);
  SC_CHECK(t->usable && (rank == 2 || t->dtype != SC_DTYPE_I8), err, SC_ERR_UNSUPPORTED,
           "%s: tensor '%s': dtype %s is not supported (F32, F16, BF16 are; I8 for the "
           "matrices of `sculpt model quantize`; Q8_0 and Q4_0 in GGUF files)",
           file, name, t->dtype_str);
  bool ok = t->rank == rank && t->shape[0] == d0 && (rank == 1 || t->shape[1] == d1);
  if (!ok) {
    char got[128] = "", *p = got;
    for (int i = 0; i < t->rank && p < got + sizeof got - 24; i++)
      p += snprintf(p, (size_t)(got + sizeof got - p), "%s%lld", i ? ", " : "",
                    (long long)t->shape[i]);
    if (rank == 1)
      return sc_error_set(err, SC_ERR_FORMAT,
                          "%s: tensor '%s': shape [%s] does not match config.json ([%lld])",
                          file, name, got, (long long)d0);
    return sc_error_set(err, SC_ERR_FORMAT,
                        "%s: tensor '%s': shape [%s] does not match config.json ([%lld, %lld])",
                        file, name, got, (long long)d0, (long long)d1);
  }
  L->n_params += rank == 1 ? d0 : d0 * d1;
  L->bytes += t->end - t->begin;
  /* The checkpoint's dtype is its matrices' (vectors may be f32 beside
   * int8 or bf16 matrices); vectors count only when there is no matrix. */
  if (rank == 2 || L->dtype_seen < 0) {
    if (L->dtype_seen < 0 || L->dtype_only_vectors) L->dtype_seen = (int)t->dtype;
    else if (L->dtype_seen != (int)t->dtype) L->dtype_seen = SC_DTYPE_MIXED;
    L->dtype_only_vectors = rank != 2;
  }
  *out = t;
  return SC_OK;
}

sc_status sc_model_own(sc_model *m, void *p, sc_error *err) {
  if (!p) return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  if (m->n_owned == m->cap_owned) {
    size_t cap = m->cap_owned ? 2 * m->cap_owned : 16;
    void **n = realloc(m->owned, cap * sizeof *n);
    if (!n) {
      free(p);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    m->owned = n;
    m->cap_owned = cap;
  }
  m->owned[m->n_owned++] = p;
  return SC_OK;
}

/* An I8 matrix's scales: NAME_scale, a float vector of one value per row
 * (quant.c writes it), converted to f32 into memory the model owns. */
static sc_status take_scales(loader *L, const char *name, int64_t rows, sc_weight *w,
                             sc_error *err) {
  char sname[300];
  snprintf(sname, sizeof sname, "%s_scale", name);
  const char *file = NULL;
  const sc_st_tensor *t = find_tensor(L, sname, &file);
  if (!t)
    return sc_error_set(err, SC_ERR_FORMAT, "%s: int8 tensor '%s' has no '%s' beside it", L->dir,
                        name, sname);
  SC_CHECK(t->usable && t->dtype != SC_DTYPE_I8 && t->rank >= 1 && t->shape[0] == rows &&
               (t->rank == 1 || (t->rank == 2 && t->shape[1] == 1)),
           err, SC_ERR_FORMAT, "%s: tensor '%s': not a float vector of %lld scales", file, sname,
           (long long)rows);
  float *s = malloc((size_t)rows * sizeof *s);
  SC_TRY(sc_model_own(L->m, s, err));
  sc_convert_to_f32(t->data, t->dtype, (size_t)rows, s);
  for (int64_t r = 0; r < rows; r++)
    SC_CHECK(isfinite(s[r]), err, SC_ERR_FORMAT, "%s: tensor '%s': scale %lld is not finite",
             file, sname, (long long)r);
  w->scales = s;
  L->bytes += t->end - t->begin;
  return SC_OK;
}

static sc_status take_matrix(loader *L, const char *name, int64_t rows, int64_t cols,
                             sc_weight *w, sc_error *err) {
  const sc_st_tensor *t;
  SC_TRY(take(L, name, 2, rows, cols, &t, err));
  w->data = t->data;
  w->dtype = t->dtype;
  w->rows = rows;
  w->cols = cols;
  w->row_bytes = sc_dtype_row_bytes(t->dtype, cols);
  w->scales = NULL;
  w->packed = NULL;
  if (t->dtype == SC_DTYPE_I8) SC_TRY(take_scales(L, name, rows, w, err));
  return SC_OK;
}

static sc_status take_vector(loader *L, const char *name, int64_t n, const float **out,
                             sc_error *err) {
  const sc_st_tensor *t;
  SC_TRY(take(L, name, 1, n, 0, &t, err));
  sc_convert_to_f32(t->data, t->dtype, (size_t)n, L->vec_next);
  *out = L->vec_next;
  L->vec_next += n;
  return SC_OK;
}

/* A shard name from the index must be a plain file in the model folder. */
static bool plain_name(const char *s) {
  return s[0] && s[0] != '.' && !strchr(s, '/') && !strchr(s, '\\');
}

static sc_status open_files(loader *L, sc_error *err) {
  sc_model *m = L->m;
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", L->dir);
  if (access(path, F_OK) == 0) {
    json_t *idx = NULL;
    SC_TRY(sc_json_file_load(path, JSON_REJECT_DUPLICATES, &idx, err));
    json_t *wm = json_object_get(idx, "weight_map");
    if (!json_is_object(wm) || json_object_size(wm) == 0) {
      json_decref(idx);
      return sc_error_set(err, SC_ERR_FORMAT, "%s: no \"weight_map\" object", path);
    }
    L->weight_map = json_incref(wm);
    json_decref(idx);
    /* Unique shard names, in first-seen order. */
    size_t cap = json_object_size(wm);
    const char **names = calloc(cap, sizeof *names);
    SC_CHECK(names, err, SC_ERR_NOMEM, "out of memory");
    size_t n = 0;
    const char *key;
    json_t *v;
    sc_status st = SC_OK;
    json_object_foreach(wm, key, v) {
      if (!json_is_string(v) || !plain_name(json_string_value(v))) {
        st = sc_error_set(err, SC_ERR_FORMAT,
                          "%s: tensor '%s': shard is not a plain file name", path, key);
        break;
      }
      const char *f = json_string_value(v);
      size_t j = 0;
      while (j < n && strcmp(names[j], f) != 0) j++;
      if (j == n) names[n++] = f;
    }
    if (st == SC_OK) {
      m->files = calloc(n, sizeof *m->files);
      if (!m->files) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    for (size_t j = 0; st == SC_OK && j < n; j++) {
      snprintf(path, sizeof path, "%s/%s", L->dir, names[j]);
      if (access(path, F_OK) != 0) {
        st = sc_error_set(err, SC_ERR_IO,
                          "%s: shard listed in model.safetensors.index.json is missing", path);
        break;
      }
      st = sc_st_file_open(path, &m->files[j], err);
      if (st == SC_OK) m->n_files++;
    }
    free(names);
    SC_TRY(st);
    /* The index and the shards must agree on where each tensor lives. */
    json_object_foreach(wm, key, v) {
      for (size_t j = 0; j < m->n_files; j++) {
        const char *base = strrchr(m->files[j].path, '/') + 1;
        if (strcmp(base, json_string_value(v)) == 0) {
          SC_CHECK(sc_st_file_find(&m->files[j], key), err, SC_ERR_FORMAT,
                   "%s: tensor '%s': listed in the index but not in this shard",
                   m->files[j].path, key);
        }
      }
    }
    return SC_OK;
  }
  m->files = calloc(1, sizeof *m->files);
  SC_CHECK(m->files, err, SC_ERR_NOMEM, "out of memory");
  snprintf(path, sizeof path, "%s/model.safetensors", L->dir);
  SC_CHECK(access(path, F_OK) == 0, err, SC_ERR_IO,
           "%s: no model.safetensors or model.safetensors.index.json", L->dir);
  SC_TRY(sc_st_file_open(path, &m->files[0], err));
  m->n_files = 1;
  return SC_OK;
}

/* The config against the weight files' headers, before anything is
 * allocated per layer: a config.json claiming 16,777,216 layers once took a
 * minute and 7 GB before its first missing tensor was noticed. The files
 * must hold as many tensors as the config names (per_layer a layer, the
 * embedding and the final norm), the last layer among them, and the
 * weights must fit in this machine at one byte each (int8, the smallest
 * form any backend computes from). */
static sc_status check_layout(loader *L, uint64_t per_layer, const char *last_layer,
                              sc_error *err) {
  const sc_model *m = L->m;
  const sc_config *c = &m->cfg;
  uint64_t held = 0, weights = 0;
  for (size_t f = 0; f < m->n_files; f++) {
    held += m->files[f].n_tensors;
    for (size_t t = 0; t < m->files[f].n_tensors; t++) {
      const sc_st_tensor *x = &m->files[f].tensors[t];
      uint64_t e = 1;
      for (int r = 0; r < x->rank; r++) e *= (uint64_t)x->shape[r];
      weights += e;
    }
  }
  const uint64_t named = (uint64_t)c->n_layers * per_layer + 2;
  const char *where = L->gguf ? m->files[0].path : L->dir;
  SC_CHECK(named <= held, err, SC_ERR_FORMAT,
           "%s: the config names %llu tensors (%d layers of %llu, the embedding and the "
           "final norm) but the weight files hold %llu",
           where, (unsigned long long)named, c->n_layers, (unsigned long long)per_layer,
           (unsigned long long)held);
  const char *file;
  if (c->n_layers > 0 && !find_tensor(L, last_layer, &file)) return missing(L, last_layer, err);
  const uint64_t have = sc_mem_total();
  char need_s[32], have_s[32];
  SC_CHECK(have == 0 || weights <= have, err, SC_ERR_UNSUPPORTED,
           "%s: the model needs at least %s (%llu weights in its files' headers, one byte "
           "each as int8) and this machine has %s",
           where, sc_format_bytes(weights, need_s, sizeof need_s), (unsigned long long)weights,
           sc_format_bytes(have, have_s, sizeof have_s));
  return SC_OK;
}

static sc_status bind_tensors(loader *L, sc_error *err) {
  sc_model *m = L->m;
  const sc_config *c = &m->cfg;
  const int64_t H = c->hidden, I = c->intermediate, V = c->vocab;
  const int64_t QD = (int64_t)c->n_heads * c->head_dim, KD = (int64_t)c->n_kv_heads * c->head_dim;
  const bool llada = c->family == SC_FAMILY_LLADA;

  char name[256];
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
  SC_TRY(check_layout(
      L, llada ? 9u : 9u + (c->qkv_bias ? 3u : 0u) + (c->qk_norm ? 2u : 0u),
      llada ? NAME("model.transformer.blocks.%d.q_proj.weight", c->n_layers - 1)
            : NAME("model.layers.%d.self_attn.q_proj.weight", c->n_layers - 1),
      err));

  size_t per_layer = (size_t)(2 * H + (c->qkv_bias ? QD + 2 * KD : 0) +
                              (c->qk_norm ? 2 * c->head_dim : 0));
  m->vectors = malloc(((size_t)c->n_layers * per_layer + (size_t)H) * sizeof(float));
  m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
  SC_CHECK(m->vectors && m->layers, err, SC_ERR_NOMEM, "out of memory for the model");
  L->vec_next = m->vectors;

  SC_TRY(take_matrix(L, llada ? "model.transformer.wte.weight" : "model.embed_tokens.weight",
                     V, H, &m->embed, err));
  for (int l = 0; l < c->n_layers; l++) {
    sc_layer *y = &m->layers[l];
    if (llada) {
      const char *p = "model.transformer.blocks";
      SC_TRY(take_matrix(L, NAME("%s.%d.q_proj.weight", p, l), QD, H, &y->wq, err));
      SC_TRY(take_matrix(L, NAME("%s.%d.k_proj.weight", p, l), KD, H, &y->wk, err));
      SC_TRY(take_matrix(L, NAME("%s.%d.v_proj.weight", p, l), KD, H, &y->wv, err));
      SC_TRY(take_matrix(L, NAME("%s.%d.attn_out.weight", p, l), H, QD, &y->wo, err));
      SC_TRY(take_matrix(L, NAME("%s.%d.ff_proj.weight", p, l), I, H, &y->wgate, err));
      SC_TRY(take_matrix(L, NAME("%s.%d.up_proj.weight", p, l), I, H, &y->wup, err));
      SC_TRY(take_matrix(L, NAME("%s.%d.ff_out.weight", p, l), H, I, &y->wdown, err));
      SC_TRY(take_vector(L, NAME("%s.%d.attn_norm.weight", p, l), H, &y->attn_norm, err));
      SC_TRY(take_vector(L, NAME("%s.%d.ff_norm.weight", p, l), H, &y->mlp_norm, err));
      continue;
    }
    const char *p = "model.layers";
    SC_TRY(take_matrix(L, NAME("%s.%d.self_attn.q_proj.weight", p, l), QD, H, &y->wq, err));
    SC_TRY(take_matrix(L, NAME("%s.%d.self_attn.k_proj.weight", p, l), KD, H, &y->wk, err));
    SC_TRY(take_matrix(L, NAME("%s.%d.self_attn.v_proj.weight", p, l), KD, H, &y->wv, err));
    SC_TRY(take_matrix(L, NAME("%s.%d.self_attn.o_proj.weight", p, l), H, QD, &y->wo, err));
    if (c->qkv_bias) {
      SC_TRY(take_vector(L, NAME("%s.%d.self_attn.q_proj.bias", p, l), QD, &y->bq, err));
      SC_TRY(take_vector(L, NAME("%s.%d.self_attn.k_proj.bias", p, l), KD, &y->bk, err));
      SC_TRY(take_vector(L, NAME("%s.%d.self_attn.v_proj.bias", p, l), KD, &y->bv, err));
    }
    if (c->qk_norm) {
      SC_TRY(take_vector(L, NAME("%s.%d.self_attn.q_norm.weight", p, l), c->head_dim,
                         &y->q_norm, err));
      SC_TRY(take_vector(L, NAME("%s.%d.self_attn.k_norm.weight", p, l), c->head_dim,
                         &y->k_norm, err));
    }
    SC_TRY(take_matrix(L, NAME("%s.%d.mlp.gate_proj.weight", p, l), I, H, &y->wgate, err));
    SC_TRY(take_matrix(L, NAME("%s.%d.mlp.up_proj.weight", p, l), I, H, &y->wup, err));
    SC_TRY(take_matrix(L, NAME("%s.%d.mlp.down_proj.weight", p, l), H, I, &y->wdown, err));
    SC_TRY(take_vector(L, NAME("%s.%d.input_layernorm.weight", p, l), H, &y->attn_norm, err));
    SC_TRY(take_vector(L, NAME("%s.%d.post_attention_layernorm.weight", p, l), H,
                       &y->mlp_norm, err));
  }
#undef NAME
  SC_TRY(take_vector(L, llada ? "model.transformer.ln_f.weight" : "model.norm.weight", H,
                     &m->final_norm, err));

  const char *head = llada ? "model.transformer.ff_out.weight" : "lm_head.weight";
  const char *file;
  bool has_head = find_tensor(L, head, &file) != NULL;
  bool tied;
  if (c->tie == 1) tied = true;
  else if (has_head) tied = false;
  else if (c->tie == -1 && c->tie_default) tied = true;
  else return missing(L, head, err);
  if (tied) m->lm_head = m->embed;
  else SC_TRY(take_matrix(L, head, V, H, &m->lm_head, err));
  m->info.tied_embeddings = tied;
  return SC_OK;
}

/* True when some matrix is stored in a dtype only the CPU reads. */
static bool cpu_only_dtypes(const sc_model *m) {
  const sc_dtype d = m->info.dtype;
  if (d == SC_DTYPE_F32 || d == SC_DTYPE_F16 || d == SC_DTYPE_BF16) return false;
  if (d != SC_DTYPE_MIXED) return true;
  const sc_weight *ws[] = {&m->embed, &m->lm_head};
  for (size_t i = 0; i < 2; i++)
    if (ws[i]->dtype == SC_DTYPE_I8 || ws[i]->dtype == SC_DTYPE_Q8_0 ||
        ws[i]->dtype == SC_DTYPE_Q4_0)
      return true;
  for (int l = 0; l < m->cfg.n_layers; l++) {
    const sc_layer *y = &m->layers[l];
    const sc_weight *lw[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wgate, &y->wup, &y->wdown};
    for (size_t i = 0; i < 7; i++)
      if (lw[i]->dtype == SC_DTYPE_I8 || lw[i]->dtype == SC_DTYPE_Q8_0 ||
          lw[i]->dtype == SC_DTYPE_Q4_0)
        return true;
  }
  return false;
}

/* The first number in path (after key and a space when key is set: a
 * memory.stat line); false when the file, the key or a number is missing
 * ("max" in cgroup v2's memory.max is not a number: no limit). */
static bool read_u64(const char *path, const char *key, uint64_t *out) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[256];
  bool ok = false;
  const size_t kl = key ? strlen(key) : 0;
  while (!ok && fgets(line, sizeof line, f)) {
    const char *v = line;
    if (key) {
      if (strncmp(line, key, kl) != 0 || line[kl] != ' ') continue;
      v = line + kl + 1;
    }
    unsigned long long x;
    ok = sscanf(v, "%llu", &x) == 1;
    if (ok) *out = x;
    if (!key) break;
  }
  fclose(f);
  return ok;
}

/* Bytes the memory cgroup of this process may still take: a container's
 * or a service's limit (docker --memory, systemd MemoryMax=) is not in
 * /proc/meminfo, which shows the host's, and a copy sized by the host
 * would have the process killed. For the cgroup (from /proc/self/cgroup,
 * v1's memory controller or v2's unified tree) and each one above it with
 * a limit: the limit less its usage, plus its page cache, which the kernel
 * reclaims before it fails (as MemAvailable counts it); the smallest.
 * UINT64_MAX when no limit is found. Sources: the kernel's
 * Documentation/admin-guide/cgroup-v1/memory.rst and cgroup-v2.rst.
 * (model_impl.h: root prefixes every path, "" for this machine.) */
uint64_t sc_cgroup_available(const char *root) {
  char cgpath[1024];
  snprintf(cgpath, sizeof cgpath, "%s/proc/self/cgroup", root);
  FILE *f = fopen(cgpath, "r");
  if (!f) return UINT64_MAX;
  char line[1024], v1[512] = "", v2[512] = "";
  bool have_v1 = false, have_v2 = false;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
    if (!b || strlen(b + 1) >= sizeof v1) continue;
    *a = *b = 0;
    const char *ctl = a + 1;
    if (strncmp(line, "0", 2) == 0 && *ctl == 0) {
      snprintf(v2, sizeof v2, "%s", b + 1);
      have_v2 = true;
    } else {
      /* v1: a comma-separated list of controllers, one of them memory */
      for (const char *c = ctl; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
        if (strncmp(c, "memory", 6) == 0 && (c[6] == ',' || c[6] == 0)) {
          snprintf(v1, sizeof v1, "%s", b + 1);
          have_v1 = true;
        }
    }
  }
  fclose(f);
  static const struct {
    const char *root, *limit, *usage, *cache;
  } trees[] = {
      {"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache"},
      {"/sys/fs/cgroup", "memory.max", "memory.current", "file"},
      {"/sys/fs/cgroup/unified", "memory.max", "memory.current", "file"},
  };
  uint64_t best = UINT64_MAX;
  for (size_t t = 0; t < sizeof trees / sizeof trees[0]; t++) {
    if (t == 0 ? !have_v1 : !have_v2) continue;
    char rel[512];
    snprintf(rel, sizeof rel, "%s", t == 0 ? v1 : v2);
    /* From the cgroup up to the mount's root (a cgroup namespace's own
     * root carries the container's limit). */
    for (;;) {
      char dir[1024], path[1100];
      snprintf(dir, sizeof dir, "%s%s%s", root, trees[t].root, strcmp(rel, "/") == 0 ? "" : rel);
      uint64_t limit, usage, cache = 0;
      snprintf(path, sizeof path, "%s/%s", dir, trees[t].limit);
      /* v1 writes "no limit" as a number near 2^63 */
      if (read_u64(path, NULL, &limit) && limit < ((uint64_t)1 << 60)) {
        snprintf(path, sizeof path, "%s/%s", dir, trees[t].usage);
        if (read_u64(path, NULL, &usage)) {
          snprintf(path, sizeof path, "%s/memory.stat", dir);
          (void)read_u64(path, trees[t].cache, &cache);
          const uint64_t used = usage > cache ? usage - cache : 0;
          const uint64_t avail = limit > used ? limit - used : 0;
          if (avail < best) best = avail;
        }
      }
      char *slash = strrchr(rel, '/');
      if (!slash || strcmp(rel, "/") == 0 || rel[0] == 0) break;
      if (slash == rel) snprintf(rel, sizeof rel, "/");
      else *slash = 0;
    }
  }
  return best;
}

/* Weights of the matrices a converted copy holds: the layers' seven and the
 * lm_head. */
static uint64_t matrix_elems(const sc_model *m) {
  uint64_t elems = (uint64_t)m->lm_head.rows * (uint64_t)m->lm_head.cols;
  for (int l = 0; l < m->cfg.n_layers; l++) {
    const sc_layer *y = &m->layers[l];
    const sc_weight *lw[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->wgate, &y->wup, &y->wdown};
    for (size_t i = 0; i < 7; i++) elems += (uint64_t)lw[i]->rows * (uint64_t)lw[i]->cols;
  }
  return elems;
}

/* Whether a copy at bytes_per weight fits in half of the memory available
 * now (*need, *avail: the bytes, for the log). */
static bool copy_fits(const sc_model *m, unsigned bytes_per, uint64_t *need, uint64_t *avail) {
  *need = matrix_elems(m) * bytes_per;
  *avail = sc_mem_available();
  return *avail > 0 && *need <= *avail / 2;
}

/* f32 compute: whether the matrices get an f32 copy in oneDNN's layout at
 * load (its AVX-512 brgemm matmul; on the 2-core AVX-512 VM about 2x
 * OpenBLAS 0.3.21's sgemm, docs/measurements-history.md) or stay mapped and are
 * widened per block for OpenBLAS. An f32 checkpoint is copied at no cost:
 * its mapping is released after. Any other dtype grows (bf16: twice), so
 * the copy is made only within half of the memory available now; a 7B
 * bf16 checkpoint on a 24 GB laptop keeps the checkpoint-sized path.
 * Sanitizer builds keep OpenBLAS: our code is what they check. */
static bool f32_copy_fits(const sc_model *m, const char *dir) {
#ifdef SC_ASAN
  (void)m;
  (void)dir;
  return false;
#else
  if (m->info.dtype == SC_DTYPE_F32) return true;
  uint64_t need, avail;
  if (copy_fits(m, 4, &need, &avail)) return true;
  SC_LOG_INFO("%s: f32 weights widened per product (an f32 copy would take %.1f GiB of the "
              "%.1f GiB available; --weights int8 or bf16 is faster)",
              dir, (double)need / 1073741824.0, (double)avail / 1073741824.0);
  return false;
#endif
}

/* AUTO (docs/measurements-history.md, the 0.5B shape on the 2-core AVX-512 VM):
 * below SC_WEIGHTS_CONVERT_MIN_PARAMS, f32 (exact, and as fast there).
 * From it up, bf16 where oneDNN's bf16 matmul runs on the CPU's own bf16
 * instructions (AVX512_BF16 or AMX) and the copy fits: there it matched
 * or beat int8 on the decoding step and the full pass in every run, with a
 * fifth of int8's logit error; else int8, the smallest copy, which needs
 * only AVX2 (7-bit activation parts where the CPU has no VNNI, and an f32
 * lm_head where oneDNN has no bf16 matmul: dnnl.c). */
static sc_weights_kind auto_kind(const sc_model *m, const char *dir) {
  if (m->info.n_params < SC_WEIGHTS_CONVERT_MIN_PARAMS) return SC_WEIGHTS_F32;
  uint64_t need = 0, avail = 0;
  const bool native = sc_dnnl_bf16_native();
  if (native && copy_fits(m, 2, &need, &avail)) return SC_WEIGHTS_BF16;
  SC_LOG_DEBUG("%s: auto picks int8 (%s)", dir,
               native ? "a bf16 copy would take over half the memory available"
                      : "no native bf16 matmul in oneDNN on this CPU");
  return SC_WEIGHTS_INT8;
}

/* The backend, and what the CPU computes in: o->weights, else
 * $SCULPT_WEIGHTS, else auto_kind. int8 and bf16 convert the matrices now
 * (dnnl.c); a CPU without that product in oneDNN falls back to f32 with one
 * log line. f32 converts them too when oneDNN's f32 matmul is worth it and
 * the copy fits (f32_copy_fits, dnnl.c f32_worth_it). */
static sc_status prepare_weights(sc_model *m, const sc_model_options *o, const char *dir,
                                 sc_error *err) {
  sc_model_info *i = &m->info;
  sc_device_kind dev = o->device;
  if (dev == SC_DEVICE_CUDA && cpu_only_dtypes(m)) {
    SC_LOG_INFO("%s: %s weights run on the CPU (the CUDA backend reads f32, f16 and bf16)",
                dir, sc_dtype_name(i->dtype));
    dev = SC_DEVICE_CPU;
  }
  m->backend = sc_backend_for(dev);
  sc_weights_kind kind = o->weights;
  const char *env = getenv("SCULPT_WEIGHTS");
  if (kind == SC_WEIGHTS_AUTO && env && *env)
    SC_CHECK(sc_weights_kind_parse(env, &kind), err, SC_ERR_INVALID,
             "SCULPT_WEIGHTS=%.40s: expected " SC_WEIGHTS_KINDS, env);
  /* Only the CPU backend computes with the converted copies: the CUDA one
   * reads the mapping (and makes FP8 on the device), and gets no copy. */
  const bool cpu = m->backend == &sc_cpu_backend;
  SC_CHECK(!cpu || kind != SC_WEIGHTS_FP8, err, SC_ERR_UNSUPPORTED,
           "%s: fp8 weights run on a GPU (--device cuda), and this model runs on the CPU", dir);
  if (!cpu) kind = kind == SC_WEIGHTS_FP8 ? SC_WEIGHTS_FP8 : SC_WEIGHTS_F32;
  if (kind == SC_WEIGHTS_FP8) {
    i->weights = kind;
    return SC_OK;
  }
  if (kind == SC_WEIGHTS_AUTO) kind = auto_kind(m, dir);
  i->weights = kind;
  if (kind == SC_WEIGHTS_F32 && (!cpu || !f32_copy_fits(m, dir))) return SC_OK;
  double t0 = sc_now_ms();
  sc_status st = sc_dnnl_pack_model(m, kind, err);
  if (st != SC_OK && kind == SC_WEIGHTS_F32) {
    /* No oneDNN (or no memory after all): OpenBLAS computes f32 from the
     * mapped checkpoint, as fast as it goes. */
    if (st == SC_ERR_UNSUPPORTED) SC_LOG_DEBUG("%s: f32 weights through OpenBLAS: %s", dir, err->msg);
    else SC_LOG_WARN("%s: f32 weights through OpenBLAS: %s", dir, err->msg);
    *err = (sc_error){0};
    return SC_OK;
  }
  if (st == SC_ERR_UNSUPPORTED) {
    SC_LOG_WARN("%s: %s weights: %s; computing in f32", dir, sc_weights_kind_name(kind),
                err->msg);
    i->weights = SC_WEIGHTS_F32;
    return SC_OK;
  }
  SC_TRY(st);
  i->packed_bytes = sc_dnnl_packed_bytes(m);
  /* The mapped matrices are no longer read (only embedding rows are, on
   * demand): let their pages go. */
  for (size_t f = 0; f < m->n_files; f++) sc_st_file_release(&m->files[f]);
  SC_LOG_DEBUG("%s: %s weights made in %.0f ms (%.1f MiB)", dir, sc_weights_kind_name(kind),
               sc_now_ms() - t0, (double)i->packed_bytes / 1048576.0);
  return SC_OK;
}

sc_status sc_model_load(const char *dir, const sc_model_options *opts, sc_model **out,
                        sc_error *err) {
  *out = NULL;
  SC_CHECK(dir && *dir, err, SC_ERR_INVALID, "no model folder given");
  sc_model_options o = {0};
  if (opts) o = *opts;
  SC_CHECK(o.max_seq >= 0 && o.n_threads >= 0, err, SC_ERR_INVALID,
           "max_seq and n_threads must not be negative");
  sc_model *m = calloc(1, sizeof *m);
  SC_CHECK(m, err, SC_ERR_NOMEM, "out of memory");
  if (!(m->dir = strdup(dir))) {
    free(m);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  loader L = {.m = m, .dir = dir, .dtype_seen = -1};
  char gguf[4200];
  sc_status st;
  if (sc_gguf_find(dir, gguf, sizeof gguf)) {
    /* llama.cpp's format: one file, config from its metadata (gguf.c). */
    m->files = calloc(1, sizeof *m->files);
    st = m->files ? sc_gguf_open(gguf, o.family, &m->cfg, &m->files[0], err)
                  : sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    if (st == SC_OK) m->n_files = 1;
    L.gguf = true;
  } else {
    st = sc_config_load(dir, o.family, &m->cfg, err);
    if (st == SC_OK) st = open_files(&L, err);
  }
  if (st == SC_OK) st = bind_tensors(&L, err);
  json_decref(L.weight_map);
  if (st != SC_OK) {
    sc_model_free(m);
    return st;
  }

  const sc_config *c = &m->cfg;
  sc_model_info *i = &m->info;
  i->family = c->family;
  snprintf(i->architecture, sizeof i->architecture, "%s", c->architecture);
  i->n_layers = c->n_layers;
  i->hidden = c->hidden;
  i->n_heads = c->n_heads;
  i->n_kv_heads = c->n_kv_heads;
  i->head_dim = c->head_dim;
  i->intermediate = c->intermediate;
  i->vocab = c->vocab;
  i->n_params = L.n_params;
  i->dtype = (sc_dtype)L.dtype_seen;
  i->rope_theta = (float)c->rope_theta;
  i->rms_eps = (float)c->rms_eps;
  i->qkv_bias = c->qkv_bias;
  i->qk_norm = c->qk_norm;
  i->mask_id = c->mask_id;
  i->eos_id = c->eos_id;
  i->pad_id = c->pad_id;
  i->bos_id = c->bos_id;
  i->shift_logits = c->shift_logits;
  i->eos_penalty = c->eos_penalty;
  i->max_positions = c->max_positions;
  i->sliding_window = c->sliding_window;
  i->context = sc_config_context(c);
  i->max_seq = o.max_seq > 0 ? o.max_seq : i->context;
  i->weight_bytes = L.bytes;
  m->n_threads = o.n_threads;
  if (o.n_threads > 0) sc_cpu_set_threads(o.n_threads);
  st = prepare_weights(m, &o, dir, err);
  if (st != SC_OK) {
    sc_model_free(m);
    return st;
  }
  i->context_bytes = m->backend->ctx_bytes(m, i->max_seq);
  if (i->mask_id >= i->vocab)
    SC_LOG_WARN("%s: mask id %d is outside the vocabulary (%d)", dir, i->mask_id, i->vocab);
  SC_LOG_DEBUG("model %s: %s, %d layers, %s, %lld params", dir,
               sc_model_family_name(i->family), i->n_layers, sc_dtype_name(i->dtype),
               (long long)i->n_params);
  *out = m;
  return SC_OK;
}

void sc_model_free(sc_model *m) {
  if (!m) return;
  sc_dnnl_free_packs(m);
  for (size_t i = 0; i < m->n_files; i++) sc_st_file_close(&m->files[i]);
  free(m->files);
  free(m->layers);
  free(m->vectors);
  for (size_t i = 0; i < m->n_owned; i++) free(m->owned[i]);
  free(m->owned);
  free(m->dir);
  free(m);
}

sc_status sc_model_nonfinite_error(const sc_model *m, sc_error *err) {
  /* Loading does not scan the weights (a 7B checkpoint is gigabytes, mapped
   * lazily); the logits say it at the first pass instead. */
  return sc_error_set(err, SC_ERR_FORMAT,
                      "checkpoint %s: the model's logits are NaN or infinite (its weights hold "
                      "NaN/Inf values, or its activations overflow); no completion from it",
                      m->dir);
}

const sc_model_info *sc_model_get_info(const sc_model *m) { return &m->info; }

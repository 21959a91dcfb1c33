/* synthetic.c — models with random weights at real shapes (model.h,
 * sc_model_new_synthetic), so that a benchmark can run the real engine on
 * a 7B shape without the checkpoint: `sculpt bench --synthetic`. On a GPU
 * the weights are generated on the device (kernels/model.cu), on the CPU
 * here, in f32, with the same distributions: matrices uniform in
 * +-1/sqrt(fan_in) (activations stay O(1)), the embedding in +-1, norms
 * 1 +- 0.05, biases +- 0.02. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Real shapes (config.json of each model; ../shared/notes/diffusion-models.md). */
static const sc_synthetic_shape SHAPES[] = {
    /* Qwen2.5-Coder-0.5B: 24 layers, 14/2 heads, QKV bias, tied. */
    {"open-dcoder-0.5b", 24, 896, 14, 2, 64, 4864, 151936, 1e6f, true, false, true},
    /* Qwen3-1.7B: 28 layers, 16/8 heads, hd 128, q/k-norm, own lm_head. */
    {"coda-1.7b", 28, 2048, 16, 8, 128, 6144, 151936, 1e6f, false, true, false},
    /* Qwen2.5-7B: 28 layers, 28/4 heads, hd 128, QKV bias, untied. */
    {"dream-7b", 28, 3584, 28, 4, 128, 18944, 152064, 1e6f, true, false, false},
    /* For tests on the CPU: Dream's structure (GQA 2:1, bias, untied) in
     * 2 layers of 64. */
    {"tiny", 2, 64, 4, 2, 16, 160, 384, 1e4f, true, false, false},
};

const sc_synthetic_shape *sc_synthetic_shapes(int *n) {
  *n = (int)(sizeof SHAPES / sizeof SHAPES[0]);
  return SHAPES;
}

void sc_synthetic_shape_names(char *buf, size_t n) {
  if (!n) return;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
    snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", SHAPES[i].name);
}

const sc_synthetic_shape *sc_synthetic_shape_find(const char *name) {
  for (size_t i = 0; name && i < sizeof SHAPES / sizeof SHAPES[0]; i++)
    if (strcmp(SHAPES[i].name, name) == 0) return &SHAPES[i];
  return NULL;
}

/* base + jitter * (2u - 1) for element i of stream k (counter-based, as
 * the device's generator). */
static void fill(float *dst, size_t n, float base, float jitter, uint64_t seed, uint64_t k) {
  const uint64_t s = sc_kernels_mix64(seed ^ sc_kernels_mix64(k));
  for (size_t i = 0; i < n; i++)
    dst[i] = base + jitter * (2.0f * sc_kernels_u01(sc_kernels_mix64(s + i)) - 1.0f);
}

/* An owned f32 matrix [rows][cols] of uniform(+-scale). */
static sc_status matrix(sc_model *m, int64_t rows, int64_t cols, float scale, uint64_t k,
                        sc_weight *w, sc_error *err) {
  float *d = malloc((size_t)rows * (size_t)cols * sizeof *d);
  SC_CHECK(d, err, SC_ERR_NOMEM, "out of memory for a synthetic matrix");
  fill(d, (size_t)rows * (size_t)cols, 0.0f, scale, m->synth_seed, k);
  SC_TRY(sc_model_own(m, d, err));
  *w = (sc_weight){(const uint8_t *)d, SC_DTYPE_F32, rows, cols, (size_t)cols * sizeof(float),
                   NULL, NULL};
  return SC_OK;
}

static sc_status host_weights(sc_model *m, sc_error *err) {
  const sc_config *c = &m->cfg;
  const int64_t H = c->hidden, I = c->intermediate, V = c->vocab;
  const int64_t QD = (int64_t)c->n_heads * c->head_dim, KD = (int64_t)c->n_kv_heads * c->head_dim;
  const size_t per_layer = (size_t)(2 * H + (c->qkv_bias ? QD + 2 * KD : 0) +
                                    (c->qk_norm ? 2 * c->head_dim : 0));
  m->vectors = malloc(((size_t)c->n_layers * per_layer + (size_t)H) * sizeof(float));
  m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
  SC_CHECK(m->vectors && m->layers, err, SC_ERR_NOMEM, "out of memory for the model");
  float *v = m->vectors;
  uint64_t k = 0;
  const float aH = 1.0f / sqrtf((float)H), aQ = 1.0f / sqrtf((float)QD),
              aI = 1.0f / sqrtf((float)I);
  SC_TRY(matrix(m, V, H, 1.0f, ++k, &m->embed, err));
  for (int l = 0; l < c->n_layers; l++) {
    sc_layer *y = &m->layers[l];
    SC_TRY(matrix(m, QD, H, aH, ++k, &y->wq, err));
    SC_TRY(matrix(m, KD, H, aH, ++k, &y->wk, err));
    SC_TRY(matrix(m, KD, H, aH, ++k, &y->wv, err));
    SC_TRY(matrix(m, H, QD, aQ, ++k, &y->wo, err));
    SC_TRY(matrix(m, I, H, aH, ++k, &y->wgate, err));
    SC_TRY(matrix(m, I, H, aH, ++k, &y->wup, err));
    SC_TRY(matrix(m, H, I, aI, ++k, &y->wdown, err));
    if (c->qkv_bias) {
      fill(v, (size_t)(QD + 2 * KD), 0.0f, 0.02f, m->synth_seed, ++k);
      y->bq = v, y->bk = v + QD, y->bv = v + QD + KD;
      v += QD + 2 * KD;
    }
    if (c->qk_norm) {
      fill(v, (size_t)(2 * c->head_dim), 1.0f, 0.05f, m->synth_seed, ++k);
      y->q_norm = v, y->k_norm = v + c->head_dim;
      v += 2 * c->head_dim;
    }
    fill(v, (size_t)(2 * H), 1.0f, 0.05f, m->synth_seed, ++k);
    y->attn_norm = v, y->mlp_norm = v + H;
    v += 2 * H;
  }
  fill(v, (size_t)H, 1.0f, 0.05f, m->synth_seed, ++k);
  m->final_norm = v;
  if (c->tie == 1) m->lm_head = m->embed;
  else SC_TRY(matrix(m, V, H, aH, ++k, &m->lm_head, err));
  return SC_OK;
}

sc_status sc_model_new_synthetic(const char *name, const sc_model_options *opts, uint64_t seed,
                                 sc_model **out, sc_error *err) {
  *out = NULL;
  const sc_synthetic_shape *sh = sc_synthetic_shape_find(name);
  if (!sh) {
    char names[256];
    sc_synthetic_shape_names(names, sizeof names);
    return sc_error_set(err, SC_ERR_INVALID, "no synthetic shape '%s' (there are %s)",
                        name ? name : "", names);
  }
  sc_model_options o = {0};
  if (opts) o = *opts;
  sc_model *m = calloc(1, sizeof *m);
  SC_CHECK(m, err, SC_ERR_NOMEM, "out of memory");
  char dir[96];
  snprintf(dir, sizeof dir, "synthetic:%s", sh->name);
  m->dir = strdup(dir);
  m->synth_shape = sh;
  m->synth_seed = seed;
  sc_config *c = &m->cfg;
  c->family = SC_FAMILY_QWEN2;
  snprintf(c->architecture, sizeof c->architecture, "synthetic");
  c->n_layers = sh->n_layers, c->hidden = sh->hidden, c->n_heads = sh->n_heads;
  c->n_kv_heads = sh->n_kv_heads, c->head_dim = sh->head_dim, c->intermediate = sh->intermediate;
  c->vocab = sh->vocab;
  c->rope_theta = sh->rope_theta, c->rms_eps = 1e-6;
  c->qkv_bias = sh->qkv_bias, c->qk_norm = sh->qk_norm, c->tie = sh->tied ? 1 : 0;
  c->mask_id = sh->vocab - 1, c->eos_id = c->pad_id = c->bos_id = -1;
  c->max_positions = 32768;
  /* The profile: sculpt's block loop, nothing before or after the frame,
   * no end token. */
  sc_family_profile *pf = &c->profile;
  snprintf(pf->name, sizeof pf->name, "synthetic");
  pf->source = "sculpt bench --synthetic (random weights)";
  pf->bos_rule = SC_BOS_NONE, pf->bos_id = -1, pf->eos_id = -1, pf->expand_id = -1;
  pf->preset = SC_PRESET_FAST, pf->loop = SC_LOOP_BLOCKS, pf->block_len = 32;

  sc_model_info *i = &m->info;
  i->family = c->family;
  snprintf(i->architecture, sizeof i->architecture, "%s", c->architecture);
  i->n_layers = c->n_layers, i->hidden = c->hidden, i->n_heads = c->n_heads;
  i->n_kv_heads = c->n_kv_heads, i->head_dim = c->head_dim, i->intermediate = c->intermediate;
  i->vocab = c->vocab;
  const int64_t H = c->hidden, QD = (int64_t)c->n_heads * c->head_dim,
                KD = (int64_t)c->n_kv_heads * c->head_dim, I = c->intermediate, V = c->vocab;
  i->n_params = c->n_layers * (H * QD * 2 + 2 * H * KD + 3 * H * I + 2 * H) + V * H * (sh->tied ? 1 : 2) + H;
  i->rope_theta = (float)c->rope_theta, i->rms_eps = (float)c->rms_eps;
  i->qkv_bias = c->qkv_bias, i->qk_norm = c->qk_norm, i->tied_embeddings = sh->tied;
  i->mask_id = c->mask_id, i->eos_id = i->pad_id = i->bos_id = -1;
  i->max_positions = c->max_positions;
  i->context = sc_config_context(c);
  i->max_seq = o.max_seq > 0 ? o.max_seq : i->context;
  i->weights = SC_WEIGHTS_F32;
  m->n_threads = o.n_threads;
  if (o.n_threads > 0) sc_cpu_set_threads(o.n_threads);

  sc_status st = SC_OK;
  m->backend = sc_backend_for(o.device);
  if (m->backend == &sc_cpu_backend && o.weights == SC_WEIGHTS_FP8)
    st = sc_error_set(err, SC_ERR_UNSUPPORTED,
                      "fp8 weights run on a GPU (--device cuda), and this model runs on the CPU");
  else if (m->backend == &sc_cpu_backend) {
    i->dtype = SC_DTYPE_F32;
    i->weight_bytes = (uint64_t)i->n_params * 4;
    const uint64_t have = sc_mem_available();
    if (have && i->weight_bytes > have / 10 * 9)
      st = sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "synthetic %s on the CPU needs %.1f GiB of f32 weights, more than the "
                        "%.1f GiB available (a GPU: --device cuda; or the tiny shape)",
                        sh->name, i->weight_bytes / 1073741824.0, have / 1073741824.0);
    if (st == SC_OK) st = host_weights(m, err);
    if (st == SC_OK && (o.weights == SC_WEIGHTS_BF16 || o.weights == SC_WEIGHTS_INT8)) {
      st = sc_dnnl_pack_model(m, o.weights, err);
      if (st == SC_OK) {
        i->weights = o.weights;
        i->packed_bytes = sc_dnnl_packed_bytes(m);
      }
    }
  } else {
    /* The device generates them (model/cuda.c): bf16 there, or FP8. */
    i->dtype = SC_DTYPE_BF16;
    i->weight_bytes = (uint64_t)i->n_params * 2;
    if (o.weights == SC_WEIGHTS_FP8) i->weights = SC_WEIGHTS_FP8;
  }
  if (st == SC_OK) i->context_bytes = m->backend->ctx_bytes(m, i->max_seq);
  if (st != SC_OK) {
    sc_model_free(m);
    return st;
  }
  *out = m;
  return SC_OK;
}

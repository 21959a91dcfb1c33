/* cuda.c — the CUDA backend: sc_backend_ops over kernels.h's device model.
 *
 * The weights go to the device once per model, when its first context is
 * made, and stay while any context of that model lives (sc_model has no
 * slot for backend state, so a small registry keyed by the model holds
 * them; model.h already asks callers to free contexts before the model).
 *
 * Anything the device cannot do becomes a CPU context, with one log line
 * per model: the weights do not fit, a context's arena does not fit, the
 * shape has no kernel instance, or the driver refuses. Failures during a
 * pass are returned as errors (a window pass cannot move to the CPU, whose
 * K/V cache would be empty). */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "model_impl.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct cuda_entry {
  const sc_model *model;
  sc_kernels_model *km; /* NULL when the device refused this model */
  int refs;             /* live contexts of the model, device or CPU */
  bool logged;          /* the fallback line was written */
  struct cuda_entry *next;
} cuda_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cuda_entry *g_entries;

typedef struct cuda_state {
  cuda_entry *entry;
  sc_kernels_ctx *kc; /* the device context, or NULL ... */
  void *cpu;          /* ... and then this CPU state */
  sc_kernels_row_stats *stats; /* [cap_stats] the picks' device records (owned) */
  int cap_stats;
} cuda_state;

/* model.h's per-row pick parameters are handed to the kernels as they are. */
_Static_assert(sizeof(sc_pick_row_params) == sizeof(sc_kernels_pick_row) &&
                   offsetof(sc_pick_row_params, temperature) ==
                       offsetof(sc_kernels_pick_row, temperature) &&
                   offsetof(sc_pick_row_params, eos_penalty) ==
                       offsetof(sc_kernels_pick_row, eos_penalty) &&
                   offsetof(sc_pick_row_params, key) == offsetof(sc_kernels_pick_row, key),
               "sc_pick_row_params and sc_kernels_pick_row share a layout");

static sc_kernels_dtype kdtype(sc_dtype t) {
  return t == SC_DTYPE_BF16 ? SC_KERNELS_BF16 : t == SC_DTYPE_F16 ? SC_KERNELS_F16 : SC_KERNELS_F32;
}

static sc_kernels_matrix kmat(const sc_weight *w) {
  sc_kernels_matrix k = {w->data, kdtype(w->dtype), w->rows, w->cols};
  return k;
}

static sc_kernels_dims dims_of(const sc_model *m) {
  const sc_config *c = &m->cfg;
  sc_kernels_dims d = {c->n_layers, c->hidden, c->n_heads, c->n_kv_heads,
                       c->head_dim, c->intermediate, c->vocab};
  return d;
}

/* A synthetic model's weights, generated on the device (model.h,
 * sc_model_new_synthetic). */
static sc_status synthesize(const sc_model *m, sc_kernels_model **out, sc_error *err) {
  const sc_synthetic_shape *sh = m->synth_shape;
  sc_kernels_model_desc d;
  memset(&d, 0, sizeof d);
  d.dims = dims_of(m);
  d.rope_theta = sh->rope_theta;
  d.rms_eps = (float)m->cfg.rms_eps;
  d.synthetic = true;
  d.synthetic_bias = sh->qkv_bias;
  d.synthetic_qk_norm = sh->qk_norm;
  d.synthetic_tied = sh->tied;
  d.seed = m->synth_seed;
  d.fp8 = m->info.weights == SC_WEIGHTS_FP8;
  return sc_kernels_model_new(&d, out, err);
}

/* Uploads the model's weights (caller holds g_lock). */
static sc_status upload(const sc_model *m, sc_kernels_model **out, sc_error *err) {
  if (m->synth_shape && !m->layers) return synthesize(m, out, err);
  const sc_config *c = &m->cfg;
  sc_kernels_layer_desc *ls = calloc((size_t)c->n_layers, sizeof *ls);
  SC_CHECK(ls, err, SC_ERR_NOMEM, "out of memory");
  for (int l = 0; l < c->n_layers; l++) {
    const sc_layer *y = &m->layers[l];
    sc_kernels_layer_desc *k = &ls[l];
    k->wq = kmat(&y->wq), k->wk = kmat(&y->wk), k->wv = kmat(&y->wv), k->wo = kmat(&y->wo);
    k->wgate = kmat(&y->wgate), k->wup = kmat(&y->wup), k->wdown = kmat(&y->wdown);
    k->bq = y->bq, k->bk = y->bk, k->bv = y->bv;
    k->q_norm = y->q_norm, k->k_norm = y->k_norm;
    k->attn_norm = y->attn_norm, k->mlp_norm = y->mlp_norm;
  }
  sc_kernels_model_desc d;
  memset(&d, 0, sizeof d);
  d.dims = dims_of(m);
  d.rope_theta = (float)c->rope_theta;
  d.rms_eps = (float)c->rms_eps;
  d.layers = ls;
  d.embed = kmat(&m->embed);
  d.lm_head = kmat(&m->lm_head); /* same data pointer when tied: one copy */
  d.final_norm = m->final_norm;
  d.fp8 = m->info.weights == SC_WEIGHTS_FP8;
  double t0 = sc_now_ms();
  sc_status st = sc_kernels_model_new(&d, out, err);
  free(ls);
  if (st == SC_OK)
    SC_LOG_INFO("model: %.2f GiB of %s weights on the GPU in %.0f ms",
                (double)sc_kernels_model_bytes(*out) / 1073741824.0,
                d.fp8 ? "fp8 (e4m3)" : "bf16", sc_now_ms() - t0);
  return st;
}

static uint64_t cuda_ctx_bytes(const sc_model *m, int max_seq) {
  sc_kernels_dims d = dims_of(m);
  uint64_t b = sc_kernels_ctx_plan_bytes(&d, max_seq);
  return b ? b : sc_cpu_backend.ctx_bytes(m, max_seq);
}

static void release(cuda_entry *e) {
  pthread_mutex_lock(&g_lock);
  if (--e->refs == 0) {
    for (cuda_entry **p = &g_entries; *p; p = &(*p)->next)
      if (*p == e) {
        *p = e->next;
        break;
      }
    sc_kernels_model_free(e->km);
    free(e);
  }
  pthread_mutex_unlock(&g_lock);
}

static void cuda_ctx_free(void *p) {
  cuda_state *s = p;
  if (!s) return;
  sc_kernels_ctx_free(s->kc);
  if (s->cpu) sc_cpu_backend.ctx_free(s->cpu);
  free(s->stats);
  if (s->entry) release(s->entry);
  free(s);
}

static sc_status cuda_ctx_init(const sc_model *m, int max_seq, void **out, sc_error *err) {
  *out = NULL;
  cuda_state *s = calloc(1, sizeof *s);
  SC_CHECK(s, err, SC_ERR_NOMEM, "out of memory");
  sc_error why = {0};
  bool first_failure = false;

  pthread_mutex_lock(&g_lock);
  cuda_entry *e = g_entries;
  while (e && e->model != m) e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e) {
      pthread_mutex_unlock(&g_lock);
      free(s);
      return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
    }
    e->model = m;
    e->next = g_entries;
    g_entries = e;
    if (upload(m, &e->km, &why) != SC_OK) {
      e->km = NULL;
      first_failure = true;
    }
  }
  e->refs++;
  s->entry = e;
  if (e->km && sc_kernels_ctx_new(e->km, max_seq, &s->kc, &why) != SC_OK) {
    s->kc = NULL;
    first_failure = true;
  }
  bool log_it = first_failure && !e->logged;
  if (log_it) e->logged = true;
  pthread_mutex_unlock(&g_lock);

  if (!s->kc && !m->layers) {
    /* A synthetic model's weights are on the device only: no CPU to fall to. */
    cuda_ctx_free(s);
    return sc_error_set(err, SC_ERR_DEVICE, "the GPU cannot run synthetic %s: %s",
                        m->synth_shape ? m->synth_shape->name : "weights", why.msg);
  }
  if (!s->kc) {
    if (log_it)
      SC_LOG_INFO("model: CUDA cannot run this model (%s); falling back to the CPU", why.msg);
    sc_status st = sc_cpu_backend.ctx_init(m, max_seq, &s->cpu, err);
    if (st != SC_OK) {
      cuda_ctx_free(s);
      return st;
    }
  }
  *out = s;
  return SC_OK;
}

static sc_status cuda_forward(void *p, const int32_t *ids, int n, int w0, int w1,
                              const int32_t *rows, int n_rows, float *logits, sc_error *err) {
  cuda_state *s = p;
  if (s->cpu) return sc_cpu_backend.forward(s->cpu, ids, n, w0, w1, rows, n_rows, logits, err);
  sc_kernels_pass pass = {ids, n, w0, w1, NULL, 0, rows, n_rows};
  return sc_kernels_forward(s->kc, &pass, logits, err);
}

static sc_status cuda_forward_packed(void *p, const int32_t *ids, const int32_t *offsets,
                                     int n_seqs, const int32_t *rows, int n_rows, float *logits,
                                     sc_error *err) {
  cuda_state *s = p;
  if (s->cpu)
    return sc_cpu_backend.forward_packed(s->cpu, ids, offsets, n_seqs, rows, n_rows, logits, err);
  const int n = offsets[n_seqs];
  sc_kernels_pass pass = {ids, n, 0, n, offsets, n_seqs, rows, n_rows};
  return sc_kernels_forward(s->kc, &pass, logits, err);
}

/* The lm_head epilogue picks on the device; for a CPU fallback state
 * (picks_on_device false) backend.c picks on the host instead. */
static sc_status cuda_pick(void *p, const int32_t *ids, int n, int w0, int w1,
                           const int32_t *offsets, int n_seqs, const int32_t *rows, int n_rows,
                           const sc_pick_params *pick, float *logits, sc_row_pick *out,
                           sc_error *err) {
  cuda_state *s = p;
  if (s->cpu) return sc_error_set(err, SC_ERR_UNSUPPORTED, "a CPU context picks on the host");
  if (n_rows > s->cap_stats) {
    sc_kernels_row_stats *ns = realloc(s->stats, (size_t)n_rows * sizeof *ns);
    SC_CHECK(ns, err, SC_ERR_NOMEM, "out of memory");
    s->stats = ns;
    s->cap_stats = n_rows;
  }
  sc_kernels_pass pass = {ids, n, w0, w1, offsets, offsets ? n_seqs : 0, rows, n_rows};
  sc_kernels_sample smp = {(const sc_kernels_pick_row *)pick->rows, pick->banned, pick->eos_id,
                           pick->pad_id, logits};
  SC_TRY(sc_kernels_forward_stats(s->kc, &pass, &smp, s->stats, err));
  for (int k = 0; k < n_rows; k++) {
    const sc_kernels_row_stats *r = &s->stats[k];
    out[k] = (sc_row_pick){r->sample, r->sample_prob, r->max_prob, r->margin, r->entropy,
                           r->nonfinite != 0};
  }
  return SC_OK;
}

static bool cuda_picks_on_device(const void *p) { return ((const cuda_state *)p)->kc != NULL; }

static void cuda_counters(const void *p, sc_forward_counters *out) {
  const cuda_state *s = p;
  sc_kernels_counters k;
  sc_kernels_ctx_counters(s->kc, &k); /* zeros for a CPU fallback */
  out->graph_captures = k.captures;
  out->graph_replays = k.replays;
  out->eager_passes = k.eager;
  out->host_syncs = k.syncs;
}

static const sc_backend_ops sc_cuda_backend = {
    .name = "cuda",
    .ctx_bytes = cuda_ctx_bytes,
    .ctx_init = cuda_ctx_init,
    .ctx_free = cuda_ctx_free,
    .forward = cuda_forward,
    .forward_packed = cuda_forward_packed,
    .pick = cuda_pick,
    .picks_on_device = cuda_picks_on_device,
    .counters = cuda_counters,
};

/* The CUDA backend when device 0 answers, else NULL with the reason in err
 * (used by sc_backend_for in backend.c). */
const sc_backend_ops *sc_cuda_backend_get(sc_error *err);
const sc_backend_ops *sc_cuda_backend_get(sc_error *err) {
  if (sc_kernels_probe(NULL, err) != SC_OK) return NULL;
  return &sc_cuda_backend;
}

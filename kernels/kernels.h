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

/* Device 0's memory bandwidth and size of the chip, for rooflines: SMs
 * and the peak HBM bandwidth in bytes/s (2 x memory clock x bus width).
 * SC_ERR_DEVICE / SC_ERR_UNSUPPORTED as sc_kernels_probe. */
sc_status sc_kernels_device_bandwidth(int *sm_count, double *bytes_per_s, sc_error *err);

/* Device memory now in use by this process and everything else (total -
 * free) and the device's total, in bytes. */
sc_status sc_kernels_device_memory(uint64_t *used, uint64_t *total, sc_error *err);

/* ======================= the device model ================================
 * A transformer of the Qwen2/Qwen3/LLaDA shape (model/cpu.c is the
 * reference for the math) held on device 0: weights uploaded once in bf16
 * (f16 and f32 converted on upload), then forward contexts, each with ONE
 * device arena planned up front for max_seq positions. Activations are bf16
 * with fp32 accumulation; the residual stream, norms, softmax and sampling
 * statistics are fp32. kernels/ knows nothing of checkpoints: the caller
 * describes every tensor with host pointers. */

typedef enum sc_kernels_dtype {
  SC_KERNELS_F32 = 0,
  SC_KERNELS_F16,
  SC_KERNELS_BF16,
} sc_kernels_dtype;

typedef struct sc_kernels_dims {
  int n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab;
} sc_kernels_dims;

/* A weight [rows][cols], row-major (PyTorch Linear: out x in). data is a
 * host pointer (may be unaligned, e.g. into an mmapped file), borrowed only
 * for the duration of sc_kernels_model_new. */
typedef struct sc_kernels_matrix {
  const void *data;
  sc_kernels_dtype dtype;
  int64_t rows, cols;
} sc_kernels_matrix;

typedef struct sc_kernels_layer_desc {
  sc_kernels_matrix wq, wk, wv, wo, wgate, wup, wdown;
  const float *bq, *bk, *bv;         /* [nh*hd], [nkv*hd], [nkv*hd], or NULL */
  const float *q_norm, *k_norm;      /* [head_dim] (Qwen3), or NULL */
  const float *attn_norm, *mlp_norm; /* [hidden] */
} sc_kernels_layer_desc;

typedef struct sc_kernels_model_desc {
  sc_kernels_dims dims;
  float rope_theta, rms_eps;
  const sc_kernels_layer_desc *layers; /* [n_layers]; unused when synthetic */
  sc_kernels_matrix embed, lm_head;    /* lm_head.data == embed.data: tied, one copy */
  const float *final_norm;             /* [hidden] */
  /* Benchmarks: no host weights; random bf16 weights at these dims are
   * generated on the device from seed (norms near 1, small biases). */
  bool synthetic;
  bool synthetic_bias, synthetic_qk_norm, synthetic_tied;
  uint64_t seed;
  /* The matrices (all but the embedding table) in FP8 e4m3 with one scale
   * an output row, quantized on the device at upload (the rule below,
   * sc_kernels_fp8_quantize_row); every product then goes through the
   * narrow GEMM (sc_kernels_gemm_kind). */
  bool fp8;
} sc_kernels_model_desc;

typedef struct sc_kernels_model sc_kernels_model;
typedef struct sc_kernels_ctx sc_kernels_ctx;

/* Uploads (or generates) the weights. Fails with SC_ERR_INVALID on shapes
 * that disagree with dims, SC_ERR_UNSUPPORTED on a head size the attention
 * kernel has no instance for (> 256 or odd), SC_ERR_DEVICE on no device,
 * out of device memory or a driver mismatch (nothing is left allocated).
 * *out owned by the caller: sc_kernels_model_free, after its contexts. */
sc_status sc_kernels_model_new(const sc_kernels_model_desc *desc, sc_kernels_model **out,
                               sc_error *err);
void sc_kernels_model_free(sc_kernels_model *m); /* NULL is fine */
uint64_t sc_kernels_model_bytes(const sc_kernels_model *m); /* device bytes of weights */
/* Bytes a step reads at least: every matrix once (the embedding table only
 * when it is also the lm_head). */
uint64_t sc_kernels_model_step_bytes(const sc_kernels_model *m);
bool sc_kernels_model_fp8(const sc_kernels_model *m);

/* Bytes of one context's device arena for max_seq positions (pure
 * arithmetic; no device needed; 0 in a CPU-only build). */
uint64_t sc_kernels_ctx_plan_bytes(const sc_kernels_dims *dims, int max_seq);

/* A context: arena (activations, per-layer K/V cache, lm_head chunk,
 * attention partials, cuBLAS workspace), its own stream and cuBLAS handle.
 * One thread at a time per context; contexts of one model may run
 * concurrently. *out owned by the caller. */
sc_status sc_kernels_ctx_new(sc_kernels_model *m, int max_seq, sc_kernels_ctx **out,
                             sc_error *err);
void sc_kernels_ctx_free(sc_kernels_ctx *c); /* NULL is fine */
uint64_t sc_kernels_ctx_bytes(const sc_kernels_ctx *c);

/* One forward pass, as model.h's sc_forward_ctx_run_window / _run_packed:
 * positions [w0, w1) of ids[0..n) are computed and every other position's
 * K/V comes from this context's cache; with segs (n_segs + 1 offsets,
 * segs[0] = 0, segs[n_segs] = n; then w0 = 0 and w1 = n) the rows are
 * independent sequences packed back to back (RoPE positions restart,
 * attention stays inside each). rows index the packed/absolute positions
 * and must lie in [w0, w1); NULL = every window row in order. Only
 * ids[w0..w1) are read. All host pointers are borrowed for the call. */
typedef struct sc_kernels_pass {
  const int32_t *ids;
  int n, w0, w1;
  const int32_t *segs;
  int n_segs;
  const int32_t *rows;
  int n_rows;
} sc_kernels_pass;

/* Raw lm_head outputs for the rows, copied to logits_host [n_rows][vocab]
 * (f32, row-major). */
sc_status sc_kernels_forward(sc_kernels_ctx *c, const sc_kernels_pass *p, float *logits_host,
                             sc_error *err);

/* ---- picking a token per row, on the device --------------------------------
 * The fused lm_head epilogue applies the engine's picking rules (model.h,
 * sc_pick_params; model/pick.c is the CPU reference) to each requested
 * row's logits l[0..V):
 *   inv_t = 1/T when T > 0, else 1
 *   z[t]  = l[t] * inv_t, minus eos_penalty * inv_t for the eos and pad ids,
 *           and -inf for every banned id
 *   p     = softmax(z); max_prob, margin (p1 - p2) and entropy of p
 *   token = argmax z (lowest index on ties) when T <= 0, else the Gumbel-max
 *           sample argmax (z[t] - log(-log(u(key, t)))), u below
 *   nonfinite = some l[t] (banned or not) is NaN or infinite
 * Only these records cross to the host, never the [rows x vocab] logits. */

#if defined(__CUDACC__)
#define SC_KERNELS_HD __host__ __device__
#else
#define SC_KERNELS_HD
#endif

/* splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective mixer. */
static inline SC_KERNELS_HD uint64_t sc_kernels_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* 64 random bits -> a float in (0, 1), never 0 or 1: the top 23 bits plus
 * a half step, (k + 0.5) / 2^23. With 24 bits the largest value, 2^24 - 0.5,
 * would round to 2^24 in a float and give exactly 1 (and -log(-log(u)) =
 * +inf would win any Gumbel-max). */
static inline SC_KERNELS_HD float sc_kernels_u01(uint64_t h) {
  return ((float)(h >> 41) + 0.5f) * (1.0f / 8388608.0f);
}

/* The sampler's uniform for token t of a row keyed `key`. Counter-based, so
 * any thread draws any token's noise, and the host reference draws the
 * same bits. */
static inline SC_KERNELS_HD float sc_kernels_pick_uniform(uint64_t key, uint64_t t) {
  return sc_kernels_u01(sc_kernels_mix64(key ^ sc_kernels_mix64(t ^ 0x632be59bd9b4e019ULL)));
}

/* ---- FP8 weights -------------------------------------------------------------
 * e4m3 ("fn": no infinities, 0x7f/0xff NaN, largest finite 448), one f32
 * scale per output row: scale = max|w| / 448 (1 for an all-zero row) and
 * q = the e4m3 nearest to w / scale (ties to even), saturating at +-448;
 * w ~ q * scale. The device quantizes at upload (kernels/narrow.cu); the
 * host functions below (kernels/plan.c) are the reference it is tested
 * against, and they against numpy (tests/unit/test_fp8.c). */
static inline SC_KERNELS_HD float sc_kernels_fp8_scale(float amax) {
  return amax > 0.0f ? amax / 448.0f : 1.0f;
}
/* x (already divided by its scale) to e4m3 bits; NaN -> 0x7f. */
uint8_t sc_kernels_fp8_from_float(float x);
float sc_kernels_fp8_to_float(uint8_t q); /* NaN for 0x7f, 0xff */
/* One row of n weights: q[n] and its scale (the rule above). */
void sc_kernels_fp8_quantize_row(const float *w, int n, uint8_t *q, float *scale);

/* Per requested row. Layout shared with model.h's sc_pick_row_params. */
typedef struct sc_kernels_pick_row {
  float temperature; /* <= 0: the argmax */
  float eos_penalty; /* in logit units, before the temperature */
  uint64_t key;      /* the row's noise: u(key, t) */
} sc_kernels_pick_row;

typedef struct sc_kernels_sample {
  const sc_kernels_pick_row *rows; /* [n_rows] (borrowed for the call) */
  /* [vocab] 1 = never picked, or NULL (borrowed for the call). Copied to
   * the device when its contents differ from the last call's, so the caller
   * may edit it in place between calls. */
  const uint8_t *banned;
  int32_t eos_id, pad_id; /* -1: none */
  /* [n_rows][vocab] or NULL: the rows' logits are also copied here (a batch
   * whose other rows are picked on the host). */
  float *logits_host;
} sc_kernels_sample;

typedef struct sc_kernels_row_stats {
  float max_prob;    /* p(top1) */
  float margin;      /* p(top1) - p(top2) */
  float entropy;     /* -sum p log p, nats */
  float sample_prob; /* p(sample) */
  int32_t argmax;    /* lowest index among equal maxima */
  int32_t sample;    /* the picked token: argmax when T <= 0 */
  int32_t nonfinite; /* 1: a logit of the row was NaN or infinite (the rest
                        is then 0), as model/pick.c flags it */
} sc_kernels_row_stats;

sc_status sc_kernels_forward_stats(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                   const sc_kernels_sample *s, sc_kernels_row_stats *out,
                                   sc_error *err);


/* ======================= planning a step (kernels/plan.c) ==================
 * Pure host arithmetic, compiled in every build (CPU-only too), so that the
 * CPU tests check what the device runs: how a pass is cut into attention
 * tiles and key chunks, which shape class (graph key) it belongs to, and
 * when a graph is captured. */

/* One attention tile: query rows [q0, q0 + nq) attend to keys [k0, k1). */
typedef struct sc_kernels_tile {
  int32_t q0, nq, k0, k1;
} sc_kernels_tile;

/* What a pass asks for, besides its token ids (sc_kernels_pass). */
typedef struct sc_kernels_step_in {
  int n, w0, w1;          /* as sc_kernels_pass */
  const int32_t *segs;    /* packed sequences, or NULL */
  int n_segs;
  int n_rows;             /* rows of the lm_head */
  int tq;                 /* query rows per attention tile (the kernel's) */
  int n_kv_heads;
  int sm_count;           /* the device's SMs: the split aims at 2 blocks a SM */
  int forced_chunks;      /* > 0: exactly this many key chunks (tests, sweeps) */
  int part_blocks;        /* the partial buffer's room: tiles x kv heads x chunks */
  int head_cap;           /* lm_head rows the graph may hold (the arena's) */
  bool head_in_graph;     /* the lm_head (and picking) belong to the graph */
  bool sample;            /* the picking epilogue runs after the lm_head */
  bool banned;            /* a banned-id bitmap applies */
} sc_kernels_step_in;

typedef struct sc_kernels_step_plan {
  int nw;         /* rows the transformer body computes: w1 - w0 */
  int n_tiles;    /* attention tiles (the grid's y) */
  int max_keys;   /* the longest key range of a tile */
  int n_chunks;   /* key chunks per tile (the grid's x); each block derives
                     its chunk's keys from its tile, so a chunk count serves
                     every context length of a class */
  int head_rows;  /* lm_head rows computed in the graph (>= n_rows; rows
                     past n_rows are zeros); 0: the lm_head runs after it */
  uint64_t key;   /* the shape class: passes with one key replay one graph */
} sc_kernels_step_plan;

/* Plans a pass; false when it cannot run (no rows to compute, a window
 * outside 0..n, tiles past a grid's 65535). With tiles (room for
 * sc_kernels_tile_count entries) also writes the tiles: window rows are
 * local (0..nw), keys absolute. The key leaves out what travels in device
 * buffers (the window's place w0, the context length n when it changes
 * neither the tiles nor the chunks, the rows' indices and pick
 * parameters), so a window moving block by block keeps its graph. */
bool sc_kernels_plan_step(const sc_kernels_step_in *in, sc_kernels_tile *tiles,
                          sc_kernels_step_plan *out);
/* Tiles a pass needs (an upper bound for sc_kernels_plan_step's array). */
int sc_kernels_tile_count(const sc_kernels_step_in *in);

/* Which graph a pass runs on: the classes captured (at most
 * SC_KERNELS_GRAPH_SLOTS, least recently used replaced) and the ones seen
 * once. A class is captured on its second use: a one-off shape (a full
 * pass at a length never seen again) runs eagerly, and an infill, whose
 * passes repeat two classes (the full pass at each block's start, the
 * window steps), captures each at most once. */
#define SC_KERNELS_GRAPH_SLOTS 8
#define SC_KERNELS_GRAPH_SEEN 16
typedef struct sc_kernels_graph_cache {
  uint64_t slot_key[SC_KERNELS_GRAPH_SLOTS];
  uint64_t slot_used[SC_KERNELS_GRAPH_SLOTS]; /* last use (tick); 0 = empty */
  uint64_t seen[SC_KERNELS_GRAPH_SEEN];       /* keys run once, a ring */
  int seen_next;
  uint64_t tick;
} sc_kernels_graph_cache;

typedef enum sc_kernels_graph_action {
  SC_KERNELS_GRAPH_EAGER = 0, /* run the launches one by one */
  SC_KERNELS_GRAPH_CAPTURE,   /* capture into *slot (replacing what it holds), then launch */
  SC_KERNELS_GRAPH_REPLAY,    /* launch the graph in *slot */
} sc_kernels_graph_action;

void sc_kernels_graph_cache_init(sc_kernels_graph_cache *g);
sc_kernels_graph_action sc_kernels_graph_cache_decide(sc_kernels_graph_cache *g, uint64_t key,
                                                      int *slot);
/* Forgets slot (its capture failed, or the caller destroyed its graph). */
void sc_kernels_graph_cache_drop(sc_kernels_graph_cache *g, int slot);

/* ---- run-time choices and counters ---------------------------------------
 * Every newer path keeps its older one behind a switch, so that one GPU run
 * can compare them and a path that fails its parity test is turned off. */
typedef enum sc_kernels_attn_kind {
  SC_KERNELS_ATTN_SIMT = 0, /* CUDA cores, a separate combine kernel */
  SC_KERNELS_ATTN_MMA,      /* tensor cores (mma.sync bf16), merged in-kernel */
} sc_kernels_attn_kind;

typedef enum sc_kernels_gemm_kind {
  SC_KERNELS_GEMM_CUBLAS = 0, /* cublasGemmEx for every product */
  SC_KERNELS_GEMM_NARROW,     /* our own for a window's few rows (<= 64): the
                                 weights streamed once on tensor cores, split
                                 k across the SMs, epilogues fused; cuBLAS for
                                 more rows (FP8 weights: ours always) */
} sc_kernels_gemm_kind;

typedef struct sc_kernels_options {
  bool graphs;        /* CUDA graphs per shape class ($SCULPT_CUDA_GRAPH=0: off) */
  sc_kernels_gemm_kind gemm; /* $SCULPT_CUDA_GEMM=cublas|narrow (default cublas) */
  sc_kernels_attn_kind attn; /* $SCULPT_CUDA_ATTN=simt|mma (default mma; head
                                sizes over 128 always take simt) */
  int attn_chunks;    /* > 0: force the key split ($SCULPT_CUDA_ATTN_CHUNKS,
                         read at each pass while this is 0) */
  bool head_in_graph; /* lm_head + picking inside the graph, one copy back and
                         one sync a step ($SCULPT_CUDA_HEAD=host: after it) */
  bool fuse;          /* residual adds in the GEMMs' epilogue ($SCULPT_CUDA_FUSE=0: off) */
} sc_kernels_options;

/* The defaults, with the environment's overrides; false (with the
 * variable named in err) when a variable holds something else. */
bool sc_kernels_options_from_env(sc_kernels_options *o, sc_error *err);

typedef struct sc_kernels_counters {
  uint64_t passes;    /* forward passes run */
  uint64_t captures;  /* graphs captured (and instantiated) */
  uint64_t replays;   /* passes launched from a captured graph */
  uint64_t eager;     /* passes launched kernel by kernel */
  uint64_t syncs;     /* host waits on the stream */
} sc_kernels_counters;

void sc_kernels_ctx_counters(const sc_kernels_ctx *c, sc_kernels_counters *out);
/* Replaces the context's choices; its graphs are dropped. */
sc_status sc_kernels_ctx_set_options(sc_kernels_ctx *c, const sc_kernels_options *o,
                                     sc_error *err);
void sc_kernels_ctx_get_options(const sc_kernels_ctx *c, sc_kernels_options *out);

/* ---- profiling one step ------------------------------------------------------
 * The step's launches grouped by kind, each group's device time measured
 * with CUDA events around it (summed over the layers), in a graph (event
 * record nodes: what a replay spends, without launch gaps) or eagerly. */
typedef enum sc_kernels_kind {
  SC_KK_UPLOAD = 0, /* the step's inputs, host to device */
  SC_KK_EMBED,
  SC_KK_NORM,       /* residual add + RMSNorm (and the final norm) */
  SC_KK_GEMM_QKV,
  SC_KK_QKV_POST,   /* bias, q/k norm, RoPE, K/V store */
  SC_KK_ATTN,
  SC_KK_ATTN_COMBINE, /* the split keys' merge (simt attention only) */
  SC_KK_GEMM_O,
  SC_KK_GEMM_GATE_UP,
  SC_KK_SWIGLU,
  SC_KK_GEMM_DOWN,
  SC_KK_HEAD_GATHER,
  SC_KK_HEAD_GEMM,
  SC_KK_HEAD_STATS,
  SC_KK_DOWNLOAD,   /* the step's results, device to host */
  SC_KK_COUNT
} sc_kernels_kind;
const char *sc_kernels_kind_name(sc_kernels_kind k); /* static string */

typedef struct sc_kernels_profile {
  double ms[SC_KK_COUNT];  /* device time per kind */
  int groups[SC_KK_COUNT]; /* timed groups per kind (e.g. 28 layers' GEMMs) */
  double total_ms;         /* first event to last */
  bool graph;              /* measured inside a graph */
} sc_kernels_profile;

/* One step of sc_kernels_forward_stats (s may be NULL: logits only, none
 * copied back), timed by kind. in_graph asks for the graph; a device that
 * cannot time inside one is timed eagerly (out->graph says which). */
sc_status sc_kernels_profile_step(sc_kernels_ctx *c, const sc_kernels_pass *p,
                                  const sc_kernels_sample *s, sc_kernels_row_stats *stats,
                                  bool in_graph, sc_kernels_profile *out, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif

/*
 * model_impl.h — private to model/: the safetensors reader, the parsed
 * config, the loaded model and the backend interface. Not for other modules.
 */
#ifndef SCULPT_MODEL_IMPL_H
#define SCULPT_MODEL_IMPL_H

#include "model.h"

/* ---- safetensors (safetensors.c) ----------------------------------------
 * Format (huggingface/safetensors README, "Format"): 8-byte little-endian
 * u64 N, then N bytes of UTF-8 JSON {name: {dtype, shape, data_offsets:
 * [begin, end)}, "__metadata__"?: {str: str}}, then the data; offsets are
 * relative to the end of the header. */

/* SC_ASAN: an AddressSanitizer build (GCC's macro or clang's feature). */
#if defined(__SANITIZE_ADDRESS__)
#define SC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SC_ASAN 1
#endif
#endif

#define SC_ST_MAX_RANK 8
#define SC_ST_MAX_HEADER (100u << 20) /* the reference reader's own cap */

typedef struct sc_st_tensor {
  char *name;            /* owned by the file */
  char dtype_str[16];    /* as written, e.g. "BF16" */
  bool usable;           /* dtype is F32, F16, BF16 or I8 (I8 needs a scale
                            tensor beside it: see checkpoint.c) */
  sc_dtype dtype;        /* valid when usable */
  int rank;
  int64_t shape[SC_ST_MAX_RANK];
  uint64_t begin, end;   /* relative to the data section */
  const uint8_t *data;   /* into the mapping; may be unaligned */
} sc_st_tensor;

typedef struct sc_st_file {
  char *path;            /* owned */
  void *map;
  size_t map_len;
  sc_st_tensor *tensors; /* sorted by name */
  size_t n_tensors;
  void *owned;           /* rows rewritten at load (GGUF's LLaDA q/k), or NULL */
} sc_st_file;

/* Maps and validates one file (see the checks in safetensors.c). On error
 * *out is left empty and err names the file and, when known, the tensor. */
sc_status sc_st_file_open(const char *path, sc_st_file *out, sc_error *err);
void sc_st_file_close(sc_st_file *f);
/* Drops the mapping's resident pages (they fault back in from the page
 * cache if read again): after the matrices were converted. */
void sc_st_file_release(sc_st_file *f);
const sc_st_tensor *sc_st_file_find(const sc_st_file *f, const char *name);
size_t sc_dtype_size(sc_dtype dtype);

/* ---- config.json and the tokenizer's special tokens (config.c) ------------ */

/* The largest JSON file of a checkpoint read (tokenizer.json runs to ~10 MB). */
#define SC_JSON_FILE_MAX ((size_t)1 << 30)

/* Parses the JSON file at path (jansson flags, e.g. JSON_REJECT_DUPLICATES)
 * into *out (a new reference). The file must be a regular file (a FIFO,
 * device or directory is an error, never a blocking open); every error
 * names path. Shared by every JSON part of a checkpoint. */
struct json_t;
sc_status sc_json_file_load(const char *path, size_t flags, struct json_t **out, sc_error *err);

typedef struct sc_config {
  sc_model_family family;
  char architecture[64];
  int n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab;
  double rope_theta, rms_eps;
  bool qkv_bias, qk_norm;
  int tie;            /* 1 tied, 0 untied, -1 not stated in config.json */
  bool tie_default;   /* what an unstated tie means for this family */
  int32_t mask_id, eos_id, pad_id, bos_id;
  bool shift_logits;
  int max_positions;  /* 0 when unknown */
  int sliding_window; /* positions the upper layers attend to; 0 when off */
  float eos_penalty;  /* generation_config.json "eos_penalty", else 0 */
  sc_family_profile profile; /* how the family frames, ends and decodes (family.c) */
} sc_config;

/* Reads dir/config.json, the tokenizer files and generation_config.json
 * beside it. family overrides
 * detection unless SC_FAMILY_AUTO. */
sc_status sc_config_load(const char *dir, sc_model_family family, sc_config *out,
                         sc_error *err);

/* ---- GGUF (gguf.c) ---------------------------------------------------------
 * A GGUF file of the dream or llada architecture read as one sc_st_file
 * whose tensors carry the Hugging Face names checkpoint.c binds, and the
 * sc_config its metadata gives (family AUTO: from general.architecture).
 * out NULL: the config alone (sc_model_context_read), no tensor touched. */
sc_status sc_gguf_open(const char *path, sc_model_family family, sc_config *cfg,
                       sc_st_file *out, sc_error *err);

/* The positions a sequence of this checkpoint may use: max_positions (at
 * most SC_MODEL_MAX_CONTEXT, which bounds a context's memory), and no more
 * than an active sliding window. */
int sc_config_context(const sc_config *c);

/* ---- the loaded model (checkpoint.c) ---------------------------------- */

typedef struct sc_packed sc_packed; /* a matrix in oneDNN's layout (dnnl.c) */

/* A weight matrix [rows][cols] (PyTorch Linear layout: out x in), borrowed
 * from a mapping. Row r starts at data + r * row_bytes. */
typedef struct sc_weight {
  const uint8_t *data;
  sc_dtype dtype;
  int64_t rows, cols;
  size_t row_bytes;
  const float *scales;     /* SC_DTYPE_I8: [rows] (owned by the model); else NULL */
  const sc_packed *packed; /* the converted copy in oneDNN's layout (owned by
                              the model), else NULL: OpenBLAS's f32 path */
} sc_weight;

/* Bytes of one row of cols elements in dtype (block dtypes: cols must be a
 * multiple of 32); 0 for MIXED. */
size_t sc_dtype_row_bytes(sc_dtype dtype, int64_t cols);
/* Rows [r0, r0+nr) of w as f32 into dst[nr][cols]: any stored dtype. */
void sc_weight_rows_to_f32(const sc_weight *w, int64_t r0, int64_t nr, float *dst);
/* The same on up to `threads` threads (the caller's among them), for the
 * f32 path's per-product conversion: single-threaded it left the other
 * cores idle for a tenth of a pass. Small blocks stay on the caller. */
void sc_weight_rows_to_f32_mt(const sc_weight *w, int64_t r0, int64_t nr, float *dst,
                              int threads);

/* Runs fn(arg, a, b) over [0, n) cut into `threads` contiguous ranges (at
 * most 16), each on its own thread and the last on the caller's; returns
 * when all are done. A range no thread could be made for runs on the
 * caller. */
typedef void (*sc_range_fn)(void *arg, int64_t a, int64_t b);
void sc_run_ranges(int64_t n, int threads, sc_range_fn fn, void *arg);

typedef struct sc_layer {
  sc_weight wq, wk, wv, wo, wgate, wup, wdown;
  /* Small vectors, converted to f32 once at load; NULL when absent. */
  const float *bq, *bk, *bv, *q_norm, *k_norm, *attn_norm, *mlp_norm;
} sc_layer;

typedef struct sc_backend_ops sc_backend_ops;

struct sc_model {
  sc_model_info info;
  char *dir; /* owned: the checkpoint folder, for messages */
  sc_config cfg;
  sc_st_file *files;
  size_t n_files;
  sc_layer *layers;
  sc_weight embed, lm_head;
  const float *final_norm;
  float *vectors; /* owned: every small vector above */
  const sc_backend_ops *backend;
  void **owned;   /* other allocations the model frees (scales, unpermuted rows) */
  size_t n_owned, cap_owned;
  sc_packed **packs; /* owned: the converted matrices (oneDNN's layout) */
  size_t n_packs;
  int n_threads;     /* opts.n_threads: oneDNN's OpenMP team size, 0 = default */
  /* sc_model_new_synthetic: the weights are random from synth_seed at
   * synth_shape; on a GPU they exist only there (layers NULL here). */
  const sc_synthetic_shape *synth_shape;
  uint64_t synth_seed;
};

/* Hands p to the model (freed with it); on failure frees p and says so. */
sc_status sc_model_own(sc_model *m, void *p, sc_error *err);

/* The error for a pass whose logits are NaN or infinite, naming m's
 * checkpoint (checkpoint.c). Returns SC_ERR_FORMAT. */
sc_status sc_model_nonfinite_error(const sc_model *m, sc_error *err);

/* Bytes the process's memory cgroup may still take: for its cgroup (v1's
 * memory controller, v2's unified tree) and each one above it with a
 * limit, the limit less the usage that is not page cache; the smallest,
 * UINT64_MAX when none has a limit (checkpoint.c). root (borrowed)
 * prefixes /proc/self/cgroup and /sys/fs/cgroup: "" for this machine, a
 * folder holding copies of them in tests. */
uint64_t sc_cgroup_available(const char *root);

/* Bytes this machine can still give: /proc/meminfo's MemAvailable (the
 * kernel's estimate, page cache included), or the memory cgroup's room
 * when that is smaller; 0 when unknown (survey.c). */
uint64_t sc_mem_available(void);
/* Bytes this machine has at all: /proc/meminfo's MemTotal, or the memory
 * cgroup's room when that is smaller; 0 when unknown. $SCULPT_TEST_MEMORY_BYTES
 * stands in for it in tests (survey.c). */
uint64_t sc_mem_total(void);

/* Converts n elements of a row (possibly unaligned) of a plain dtype (F32,
 * F16, BF16) to f32. */
void sc_convert_to_f32(const uint8_t *src, sc_dtype dtype, size_t n, float *dst);

/* Hot elementwise loops (quantizing activations, scaling int8 sums) are
 * written so that the compiler vectorizes them (model/deps.cmake builds
 * their files with -O3) and compiled for AVX-512, AVX2 and plain x86-64,
 * picked at load time (GCC/clang function multiversioning): no SIMD by
 * hand. Elementwise only, so every clone gives the same bits. The AVX-512
 * clone is x86-64-v4 (F, BW, DQ, VL: every AVX-512 CPU but Xeon Phi, which
 * takes the AVX2 one), not F alone: F has no byte or 256-bit forms, and
 * GCC 12 narrowed the quantized bytes in ymm halves: quantizing 33 rows
 * of 4,864 took 0.060 ms, 0.025 on x86-64-v4 (0.015 with quant.c's
 * copysign); the 0.5B shape's int8 step 85 -> 82 ms. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SCULPT_NO_CLONES)
#define SC_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define SC_VECTOR_CLONES
#endif

/* ---- quantization (quant.c) ----------------------------------------------
 * int8 per output channel, symmetric: scale[r] = max|w[r][:]| / 127 (1 for
 * an all-zero row), q = round-half-away(w / scale) in [-127, 127]. The one
 * rule behind both `sculpt model quantize` and int8 made at load, so both
 * give identical weights. */
void sc_quantize_rows_i8(const sc_weight *w, int64_t r0, int64_t nr, int8_t *q, float *scales,
                         float *tmp /* [cols] */);
/* The same rule over one f32 row of n values; returns the scale. */
float sc_quantize_row_i8(const float *x, int64_t n, int8_t *q);
/* The same rule over [-qmax, qmax] (qmax < 128), stored as unsigned bytes
 * q + qmax + 1: the activations of the int8 products (dnnl.c). */
float sc_quantize_row_u8(const float *x, int64_t n, int qmax, uint8_t *q);

/* ---- oneDNN (dnnl.c): the int8, bf16 and f32 matrix products ------------- */

/* Converts every matrix of the model (the layers' and the lm_head) to kind
 * (INT8, BF16 or F32) in oneDNN's layout and points w->packed at it. Fails
 * with SC_ERR_UNSUPPORTED when oneDNN is missing or has no such product on
 * this CPU. */
sc_status sc_dnnl_pack_model(sc_model *m, sc_weights_kind kind, sc_error *err);
void sc_dnnl_free_packs(sc_model *m);
/* True when oneDNN is installed and its bf16 matmul runs on this CPU's own
 * bf16 instructions (brgemm on AVX512_BF16 or AMX), not emulated. */
bool sc_dnnl_bf16_native(void);
uint64_t sc_dnnl_packed_bytes(const sc_model *m);

/* Per forward context: oneDNN's engine, stream, primitives (cached by
 * shape) and the quantized activations. One thread at a time. */
typedef struct sc_dnnl_ctx sc_dnnl_ctx;
sc_status sc_dnnl_ctx_new(const sc_model *m, sc_dnnl_ctx **out, sc_error *err);
void sc_dnnl_ctx_free(sc_dnnl_ctx *c);
/* Sets this thread's OpenMP team size to the model's n_threads (if set). */
void sc_dnnl_ctx_begin(sc_dnnl_ctx *c);
/* y[n][w.rows] = x[n][w.cols] * w^T (+ bias[w.rows] when not NULL), through
 * w->packed (which must be set). */
sc_status sc_dnnl_linear(sc_dnnl_ctx *c, const sc_weight *w, const float *x, int n,
                         const float *bias, float *y, sc_error *err);
/* The products of one input with nm matrices of one kind and width (a
 * layer's q, k and v; its gate and up): ys[i] = x * ws[i]^T (+ bias[i];
 * bias may be NULL, as may each bias[i]). The activations are quantized
 * (int8) or rounded (bf16) once for all of them. */
sc_status sc_dnnl_linear_n(sc_dnnl_ctx *c, int nm, const sc_weight *const *ws, const float *x,
                           int n, const float *const *bias, float *const *ys, sc_error *err);
/* fn(arg, a, b) over [0, n) split in contiguous ranges across the OpenMP
 * team oneDNN runs on (one thread when c is NULL, there is no team, or
 * n * cost, the work in elements, is under 2 * grain). Each index is
 * computed by the same code whichever thread takes it. */
void sc_dnnl_for(sc_dnnl_ctx *c, int64_t n, int64_t cost, int64_t grain, sc_range_fn fn,
                 void *arg);
/* The grain of the forward pass's loops: elements a thread should have
 * before waking the team pays (a wake costs microseconds). */
#define SC_DNNL_GRAIN 16384
/* Bidirectional attention of nw query rows over n key rows, every head:
 * q [nw][nh*hd], k and v [n][nkv*hd] (query head h reads kv head
 * h / (nh / nkv)), att [nw][nh*hd]; softmax(q k^T * scale) v. scores is
 * scratch of scores_cap floats (at least nh * n). */
sc_status sc_dnnl_attention(sc_dnnl_ctx *c, const float *q, const float *k, const float *v,
                            int nw, int n, int nh, int nkv, int hd, float scale,
                            float *scores, size_t scores_cap, float *att, sc_error *err);

/* ---- backends (backend.c, cpu.c) ----------------------------------------
 * A backend runs the forward pass for a loaded model. The CPU backend is the
 * reference that every other backend (CUDA, later) is compared to. */
struct sc_backend_ops {
  const char *name;
  /* Arena bytes a context needs for max_seq positions. */
  uint64_t (*ctx_bytes)(const sc_model *m, int max_seq);
  /* Creates the backend state of one context (owned by the caller: free). */
  sc_status (*ctx_init)(const sc_model *m, int max_seq, void **state, sc_error *err);
  void (*ctx_free)(void *state);
  /* As sc_forward_ctx_run_window, with every argument already checked (rows
   * may still be NULL, meaning every position of the window, in order). A
   * full pass is the window [0, n). */
  sc_status (*forward)(void *state, const int32_t *ids, int n, int w0, int w1,
                       const int32_t *rows, int n_rows, float *logits, sc_error *err);
  /* As sc_forward_ctx_run_packed, arguments checked: n_seqs sequences packed
   * back to back, sequence s at ids[offsets[s] .. offsets[s+1]). */
  sc_status (*forward_packed)(void *state, const int32_t *ids, const int32_t *offsets,
                              int n_seqs, const int32_t *rows, int n_rows, float *logits,
                              sc_error *err);
  /* Optional (NULL: the host picks from forward's logits). As
   * sc_forward_ctx_pick, arguments checked; called only for a state whose
   * picks_on_device says yes (not a CPU fallback). */
  sc_status (*pick)(void *state, const int32_t *ids, int n, int w0, int w1,
                    const int32_t *offsets, int n_seqs, const int32_t *rows, int n_rows,
                    const sc_pick_params *pick, float *logits /* or NULL */,
                    sc_row_pick *out, sc_error *err);
  /* Optional: true when this state's pick runs on its device. */
  bool (*picks_on_device)(const void *state);
  /* Optional: the device's counters (graphs, waits) into out. */
  void (*counters)(const void *state, sc_forward_counters *out);
  /* Optional (NULL: sc_forward_ctx_shift answers SC_ERR_UNSUPPORTED): as
   * sc_forward_ctx_shift, arguments checked. */
  sc_status (*shift)(void *state, int src0, int src1, int dst0, sc_error *err);
};

extern const sc_backend_ops sc_cpu_backend;

/* Sets OpenBLAS's (process-wide) thread count. */
void sc_cpu_set_threads(int n);

/* The backend for a device; CUDA falls back to the CPU (logged once). */
const sc_backend_ops *sc_backend_for(sc_device_kind kind);

#endif

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

#define SC_ST_MAX_RANK 8
#define SC_ST_MAX_HEADER (100u << 20) /* the reference reader's own cap */

typedef struct sc_st_tensor {
  char *name;            /* owned by the file */
  char dtype_str[16];    /* as written, e.g. "BF16" */
  bool usable;           /* dtype is F32, F16 or BF16 */
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
} sc_st_file;

/* Maps and validates one file (see the checks in safetensors.c). On error
 * *out is left empty and err names the file and, when known, the tensor. */
sc_status sc_st_file_open(const char *path, sc_st_file *out, sc_error *err);
void sc_st_file_close(sc_st_file *f);
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

/* The positions a sequence of this checkpoint may use: max_positions (at
 * most SC_MODEL_MAX_CONTEXT, which bounds a context's memory), and no more
 * than an active sliding window. */
int sc_config_context(const sc_config *c);

/* ---- the loaded model (checkpoint.c) ---------------------------------- */

/* A weight matrix [rows][cols] (PyTorch Linear layout: out x in), borrowed
 * from a mapping. */
typedef struct sc_weight {
  const uint8_t *data;
  sc_dtype dtype;
  int64_t rows, cols;
} sc_weight;

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
};

/* The error for a pass whose logits are NaN or infinite, naming m's
 * checkpoint (checkpoint.c). Returns SC_ERR_FORMAT. */
sc_status sc_model_nonfinite_error(const sc_model *m, sc_error *err);

/* Converts n elements of a weight row (possibly unaligned) to f32. */
void sc_convert_to_f32(const uint8_t *src, sc_dtype dtype, size_t n, float *dst);

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
};

extern const sc_backend_ops sc_cpu_backend;

/* Sets OpenBLAS's (process-wide) thread count. */
void sc_cpu_set_threads(int n);

/* The backend for a device; CUDA falls back to the CPU (logged once). */
const sc_backend_ops *sc_backend_for(sc_device_kind kind);

#endif

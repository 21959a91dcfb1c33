/*
 * model.h — the model module's one public header: devices, checkpoints,
 * the tokenizer, the forward pass and (later) the diffusion engine.
 *
 * model/ knows no protocol and no syntax. Handles are opaque; every function
 * that can fail returns an sc_status and fills an sc_error*. Ownership is
 * stated per call: "owned by the caller" means free it with the matching
 * _free; "borrowed" means it lives as long as the object it came from.
 */
#ifndef SCULPT_MODEL_H
#define SCULPT_MODEL_H

#include "sculpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================= devices ========================================= */

typedef enum sc_device_kind {
  SC_DEVICE_AUTO = 0, /* CUDA when a device answers, else the CPU */
  SC_DEVICE_CPU,
  SC_DEVICE_CUDA,
} sc_device_kind;

/* "auto", "cpu", "cuda" -> kind. False on anything else. */
bool sc_device_kind_parse(const char *s, sc_device_kind *out);
const char *sc_device_kind_name(sc_device_kind kind); /* static string */

typedef struct sc_device_choice {
  sc_device_kind kind;  /* SC_DEVICE_CPU or SC_DEVICE_CUDA: what will run */
  char description[192]; /* e.g. "cuda:0 NVIDIA H200 (139 GiB)" or "cpu (4 threads)" */
  char fallback_reason[512]; /* why CUDA was not used; "" when it was, or never asked */
} sc_device_choice;

/* The model used when none is given: $SCULPT_MODEL when set, else the model
 * sculpt ships (model/default in the source tree) when it is there, else
 * NULL. Static or environment string; do not free. A name, not yet a
 * folder: sc_model_resolve turns it into one. */
const char *sc_model_default_dir(void);
/* The model sculpt ships, whatever $SCULPT_MODEL says (a baseline to
 * compare others with); NULL when it is not there. Static string. */
const char *sc_model_shipped_dir(void);

/* ---- model names: a folder, or a Hugging Face id in the shared cache ------
 * Everywhere a model is named (--model, the LSP's modelPath, $SCULPT_MODEL,
 * serve, batch, eval) the name is either a folder (or a .gguf file) or a
 * Hugging Face model id ORG/NAME[@REVISION], found offline in
 * huggingface_hub's cache, which `sculpt model pull` fills and Python tools
 * share (model/paths.c). Layout (huggingface_hub file_download.py,
 * hf_hub_download's docstring and try_to_load_from_cache):
 *   CACHE/models--ORG--NAME/refs/REVISION      the commit REVISION stands for
 *   CACHE/models--ORG--NAME/snapshots/COMMIT/  the files, links into blobs/
 *   CACHE/models--ORG--NAME/blobs/ETAG         LFS: the sha256; else the git oid */

typedef struct sc_model_id {
  char repo[128];     /* ORG/NAME */
  char revision[128]; /* after '@'; "main" when none was given */
} sc_model_id;

/* ORG/NAME[@REVISION]: ORG and NAME as huggingface_hub's validate_repo_id
 * takes them (utils/_validators.py: [A-Za-z0-9_.-], not starting or ending
 * with '-' or '.', no "--" or "..", NAME at most 96 and not ending in
 * ".git"); the namespace is required here, so that a relative folder like
 * "default" is never taken for an id. The revision: a branch, a tag or a
 * commit, without ".." or a leading '/'. False on anything else. */
bool sc_model_id_parse(const char *s, sc_model_id *out);

/* $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface
 * (huggingface_hub constants.py); false when there is no home to put it in. */
bool sc_model_hf_home(char *buf, size_t n);
/* The hub cache: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else
 * HF_HOME/hub (constants.py); false when there is none. */
bool sc_model_cache_dir(char *buf, size_t n);
/* CACHE/models--ORG--NAME (file_download.py, repo_folder_name). */
void sc_model_id_folder(const sc_model_id *id, const char *cache, char *buf, size_t n);
/* The commit a revision stands for in a repository folder of the cache: a
 * full commit hash is itself, else the content of refs/REVISION. false when
 * the cache does not know it. */
bool sc_model_cache_commit(const char *repo_folder, const char *revision, char commit[41]);

/* The folder a model name stands for, as *dir (owned by the caller: free()).
 * name NULL or "": sc_model_default_dir(). A name that exists on disk is
 * that path, unchanged (so a relative folder "org/name" wins over the id).
 * Else a model id resolves, offline, to its snapshot folder in the cache
 * (refs/REVISION's commit, or the commit given); a model not there is
 * SC_ERR_IO with one line naming the cache and the `sculpt model pull`
 * command. Anything else is returned unchanged, for the loader to report.
 * *dir NULL and SC_OK when there is no name and no default. */
sc_status sc_model_resolve(const char *name, char **dir, sc_error *err);

/* Whether dir is the demo model sculpt ships (model/default). */
bool sc_model_is_builtin(const char *dir);
/* A server starting on dir: when it is the demo model, says once per
 * process, at info level, how to get a real one. */
void sc_model_builtin_hint(const char *dir);

/* A snapshot in the cache, as `sculpt model list` shows it. */
typedef struct sc_cached_model {
  char id[160];        /* ORG/NAME */
  char refs[128];      /* the refs pointing at it, comma-separated ("main"); "" for none */
  char commit[41];
  char dir[4200];      /* the snapshot folder */
  uint64_t bytes;      /* its files' size on disk */
  int files;
} sc_cached_model;

/* Every model snapshot in the cache (cache NULL: sc_model_cache_dir()), in
 * the order of their ids; *out owned by the caller (free()), *n of them. A
 * cache that does not exist yet is an empty list. */
sc_status sc_model_cache_list(const char *cache, sc_cached_model **out, int *n, sc_error *err);

/* Picks the device for a request. AUTO and CUDA fall back to the CPU when
 * the binary has no CUDA backend or no device answers, and log one line
 * per process saying why: a warning when CUDA was asked for; for AUTO a
 * debug line when there is no CUDA driver (or backend) at all, an info
 * line when a driver is there but no device is usable. CPU never probes.
 * Never fails. */
void sc_device_select(sc_device_kind requested, sc_device_choice *out);

/* ======================= tokenizer ======================================= */
/* Byte-level BPE as Hugging Face `tokenizers` runs it for the Qwen2/2.5/3
 * and LLaDA tokenizers (model/tokenizer*.c). A tokenizer is immutable after
 * loading: every function below may be called from several threads at once.
 *
 * Encoding pipeline: added tokens (longest match first) -> NFC (when the file
 * asks for it) -> the file's Split regexes -> byte-level mapping -> merges by
 * rank. Input that is not valid UTF-8 never fails: each byte of an invalid
 * sequence is cut out of the text and becomes its own one-byte token, so the
 * regex never sees it and decoding gives the byte back. Valid text decodes to
 * its NFC form (identical bytes when the input was already NFC). */

typedef struct sc_tokenizer sc_tokenizer;

/* Loads one tokenizer.json. Supports model BPE; normalizer null, NFC or a
 * Sequence of NFC; pre_tokenizer ByteLevel or Sequence[Split(Isolated)...,
 * ByteLevel]; decoder null or ByteLevel. Anything else fails with
 * SC_ERR_UNSUPPORTED naming the part; a malformed file with SC_ERR_FORMAT;
 * an unreadable one with SC_ERR_IO. *out is owned by the caller
 * (sc_tokenizer_free), NULL on failure. */
sc_status sc_tokenizer_load_file(const char *tokenizer_json, sc_tokenizer **out,
                                 sc_error *err);

/* Loads a model folder: DIR/tokenizer.json when present, else the slow form
 * DIR/vocab.json + DIR/merges.txt with the Qwen2 pre-tokenizer and NFC. Both
 * then add the added tokens of DIR/tokenizer_config.json
 * ("added_tokens_decoder") and mark the tokens named in
 * DIR/special_tokens_map.json as special, when those files exist. */
sc_status sc_tokenizer_load_dir(const char *model_dir, sc_tokenizer **out,
                                sc_error *err);

void sc_tokenizer_free(sc_tokenizer *tok); /* NULL is fine */

/* text[0..len) -> *ids (owned by the caller: free()), *n of them. No special
 * tokens are added; special tokens written in the text are recognised. An
 * empty text gives *ids == NULL, *n == 0. Fails only on OOM or a regex
 * engine error. */
sc_status sc_tokenizer_encode(const sc_tokenizer *tok, const char *text,
                              size_t len, int32_t **ids, size_t *n,
                              sc_error *err);

/* ids -> the exact bytes, *text owned by the caller (free()), NUL-terminated
 * for convenience, *len bytes long (the text may contain NUL). Added and
 * special tokens decode to their content. An id outside the vocabulary fails
 * with SC_ERR_INVALID. */
sc_status sc_tokenizer_decode(const sc_tokenizer *tok, const int32_t *ids,
                              size_t n, char **text, size_t *len, sc_error *err);

/* Token string (byte-level form, e.g. "Ġint", or an added token's content)
 * -> id; -1 when absent. Added tokens are looked up first. */
int32_t sc_tokenizer_token_to_id(const sc_tokenizer *tok, const char *token);

/* id -> token string, borrowed (lives as long as tok); NULL when unused. */
const char *sc_tokenizer_id_to_token(const sc_tokenizer *tok, int32_t id);

/* Largest id + 1, over the vocabulary and the added tokens. The model's
 * embedding table may be larger (padding rows). */
size_t sc_tokenizer_vocab_size(const sc_tokenizer *tok);

enum {
  SC_TOKEN_ADDED = 1u,   /* an added token: matched before BPE */
  SC_TOKEN_SPECIAL = 2u, /* marked special (e.g. <|endoftext|>, <|im_start|>) */
};
/* SC_TOKEN_* bits for an id; 0 for ordinary tokens and unknown ids. */
unsigned sc_tokenizer_token_flags(const sc_tokenizer *tok, int32_t id);

/* ======================= checkpoints and the forward pass ================ */
/* (section owned by the checkpoint work: model/checkpoint*.c, model/cpu*.c) */

/* A model is a folder: config.json, tokenizer files (only their special
 * tokens are read here) and model.safetensors, or shards listed by
 * model.safetensors.index.json. Weights are mmapped read-only. How the CPU
 * computes with them is the weights kind (sc_weights_kind below): in int8,
 * bf16 and f32, every matrix is converted once at load into oneDNN's layout
 * for that type (model/dnnl.c) and the mapping is released, so memory is
 * about one byte (int8), two (bf16) or four (f32) per weight. f32 makes
 * that copy only where oneDNN is installed and the copy fits in half of the
 * memory available (an f32 checkpoint always fits: it replaces its
 * mapping); otherwise f32 weights are used in place and every other dtype
 * is converted to f32 one block of rows at a time just before its GEMM
 * (OpenBLAS), so resident memory stays about the checkpoint's size plus
 * the arenas. */

typedef enum sc_model_family {
  SC_FAMILY_AUTO = 0, /* detect from config.json (architectures, model_type) */
  SC_FAMILY_DREAM,    /* DreamModel: Dream, Dream-Coder, DiffuCoder (Qwen2 graph) */
  SC_FAMILY_QWEN2,    /* Qwen2ForCausalLM diffusion models, e.g. Open-dCoder */
  SC_FAMILY_QWEN3,    /* Qwen3 graph with q/k RMSNorm, e.g. CoDA */
  SC_FAMILY_LLADA,    /* LLaDAModelLM (OLMo-style names and keys) */
} sc_model_family;

/* "dream", "qwen2", "qwen3", "llada" (case-insensitive), plus the aliases
 * "auto", "dream-coder", "diffucoder", "open-dcoder", "coda". False on
 * anything else. */
bool sc_model_family_parse(const char *s, sc_model_family *out);
const char *sc_model_family_name(sc_model_family family); /* static string */

typedef enum sc_dtype {
  SC_DTYPE_F32 = 0,
  SC_DTYPE_F16,
  SC_DTYPE_BF16,
  SC_DTYPE_MIXED, /* only in sc_model_info: the weights use several dtypes */
  SC_DTYPE_I8,    /* int8 rows with one f32 scale per row (sculpt model quantize) */
  SC_DTYPE_Q8_0,  /* GGUF blocks of 32: f16 scale + 32 int8 */
  SC_DTYPE_Q4_0,  /* GGUF blocks of 32: f16 scale + 16 bytes of 4-bit values */
} sc_dtype;
/* "f32", "f16", "bf16", "mixed", "int8", "q8_0", "q4_0" */
const char *sc_dtype_name(sc_dtype dtype);

/* What the CPU backend computes the matrix products in (the checkpoint's own
 * dtype is sc_dtype). AUTO, measured on the 2-core CI machine
 * (docs/measurements-history.md): below SC_WEIGHTS_CONVERT_MIN_PARAMS f32,
 * which is exact (what the tiny test checkpoints and the shipped model are
 * checked against) and
 * as fast there; from it up, bf16 where the CPU has bf16 instructions that
 * oneDNN uses (AVX512_BF16, AMX) and the bf16 copy fits in half of the
 * memory available (the fastest and the most exact of the converted kinds
 * there), else int8 (the smallest; it passes the accuracy gate,
 * tests/model/test_int8.py). */
typedef enum sc_weights_kind {
  SC_WEIGHTS_AUTO = 0, /* $SCULPT_WEIGHTS when set, else the measured default */
  SC_WEIGHTS_F32,      /* f32 weights and activations: an f32 copy in oneDNN's
                          layout, or OpenBLAS over the mapping (see above) */
  SC_WEIGHTS_BF16,     /* bf16 weights and activations, f32 accumulation (oneDNN) */
  SC_WEIGHTS_INT8,     /* the layers' matrices int8 per output channel,
                          activations quantized per row at run time (two 8-bit
                          parts, 7-bit where oneDNN's int8 product saturates:
                          CPUs without VNNI), int32 accumulation; the lm_head
                          bf16, f32 where oneDNN has no bf16 matmul (AVX2) */
  SC_WEIGHTS_FP8,      /* a GPU only (CUDA): every matrix but the embedding
                          table FP8 e4m3 with one scale an output row, made on
                          the device at load (kernels.h); activations bf16.
                          A model on the CPU refuses it */
} sc_weights_kind;
/* What --weights and the settings take, for messages. */
#define SC_WEIGHTS_KINDS "auto, f32, bf16, int8 or fp8"
/* "auto", "f32", "bf16", "int8", "fp8" -> kind (case-insensitive). False on anything else. */
bool sc_weights_kind_parse(const char *s, sc_weights_kind *out);
const char *sc_weights_kind_name(sc_weights_kind kind); /* static string */
/* AUTO converts (bf16 or int8) from this many parameters up, f32 below. */
#define SC_WEIGHTS_CONVERT_MIN_PARAMS 50000000

typedef struct sc_model_options {
  sc_model_family family; /* SC_FAMILY_AUTO (0) detects; else overrides */
  sc_device_kind device;  /* what sc_device_select() chose; CUDA has no
                             forward pass yet and falls back to the CPU */
  int max_seq;   /* longest sequence a context accepts; 0 = the
                    checkpoint's context (info.context) */
  int n_threads; /* GEMM threads (OpenBLAS, process-wide; oneDNN's OpenMP
                    team, per forward context); 0 = leave as is */
  sc_weights_kind weights; /* CPU compute type; AUTO: see sc_weights_kind
                              (the LSP's "weights" setting, --weights) */
} sc_model_options;

typedef struct sc_model_info {
  sc_model_family family;
  char architecture[64]; /* config.json architectures[0], or "" */
  int n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab;
  int64_t n_params;      /* elements of the tensors the forward pass uses */
  sc_dtype dtype;
  float rope_theta, rms_eps;
  bool qkv_bias, qk_norm;
  bool tied_embeddings;  /* lm_head reuses the token embedding */
  int32_t mask_id, eos_id, pad_id, bos_id; /* -1 when unknown */
  bool shift_logits;     /* token i is predicted by row i-1 (row 0 by itself) */
  float eos_penalty;     /* the checkpoint's default (generation_config.json
                            "eos_penalty"), else 0 */
  int max_positions;     /* config.json max_position_embeddings (LLaDA:
                            max_sequence_length); 0 when not stated */
  int sliding_window;    /* the active sliding window; 0 when off */
  int context;           /* the positions a sequence may use: max_positions,
                            at most SC_MODEL_MAX_CONTEXT and the sliding
                            window (sc_model_context_read reads the same) */
  int max_seq;           /* the contexts' default capacity (context, unless
                            the options said otherwise) */
  uint64_t weight_bytes; /* tensor bytes mapped from the checkpoint */
  uint64_t context_bytes; /* one context's activation arena at max_seq */
  sc_weights_kind weights; /* what the CPU computes in (never AUTO) */
  uint64_t packed_bytes;   /* bytes of the converted matrices (0: none, the
                              f32 path over the mapping) */
} sc_model_info;

typedef struct sc_model sc_model;

/* The most positions sculpt gives a sequence, whatever the checkpoint
 * allows: a context's arena and the engine's logits grow with it. */
#define SC_MODEL_MAX_CONTEXT 2048

typedef struct sc_infill_frame sc_infill_frame; /* below: fitting a request */

/* The context (sc_model_info.context) of the checkpoint in dir, and the
 * frame (may be NULL) of its family profile with the default decoding
 * (sc_infill_params_default, as the editor's), from its config.json and
 * tokenizer files alone: no weights are opened. For callers that need the
 * model's limits but not the model (`sculpt context`). family as in
 * sc_model_options. */
sc_status sc_model_context_read(const char *dir, sc_model_family family, int *context,
                                sc_infill_frame *frame, sc_error *err);

/* What a checkpoint is and would take, from its config (config.json and the
 * tokenizer files, or a GGUF's metadata) and its weight files' headers
 * alone, no weight read: for `sculpt model list` (model/survey.c). */
typedef struct sc_model_survey {
  sc_model_family family;
  char profile[32];        /* the family profile's name */
  sc_dtype dtype;          /* of the matrices; MIXED when several */
  int64_t n_params;        /* elements of every tensor in the weight files */
  sc_weights_kind weights; /* what AUTO computes in on this machine's CPU */
  uint64_t memory_bytes;   /* the weights in that kind, plus one context */
  uint64_t available;      /* memory this machine can still give; 0: unknown */
  uint64_t device_bytes;   /* on CUDA (the checkpoint's own dtype), plus one context */
  uint64_t device_total;   /* device 0's memory; 0: no CUDA device answers */
  char device[192];        /* its description, "" without one */
} sc_model_survey;
sc_status sc_model_survey_read(const char *dir, sc_model_survey *out, sc_error *err);

/* Loads and validates the checkpoint in dir: every safetensors header, every
 * tensor the family needs (present, known dtype, shape matching config.json,
 * offsets inside the file and not overlapping) and every shard. On failure
 * returns a status and one message naming the file (and the tensor). opts may
 * be NULL. *out is owned by the caller: sc_model_free. Thread-safe to call;
 * the model is immutable afterwards and may be shared by threads. */
sc_status sc_model_load(const char *dir, const sc_model_options *opts,
                        sc_model **out, sc_error *err);
void sc_model_free(sc_model *model); /* NULL is fine; free contexts first */

/* Borrowed; lives as long as the model. */
const sc_model_info *sc_model_get_info(const sc_model *model);

/* ---- synthetic models (benchmarks) ----------------------------------------
 * Random weights at a real model's shape, nothing to download: on a GPU
 * generated there in bf16 (no host copy), on the CPU in f32 on the host.
 * The last id is the mask; there is no tokenizer and no end token, so a
 * fixed-k schedule commits exactly k tokens a step (random weights cannot
 * decide when to stop). "tiny" is small enough for the CPU tests. */
typedef struct sc_synthetic_shape {
  const char *name;
  int n_layers, hidden, n_heads, n_kv_heads, head_dim, intermediate, vocab;
  float rope_theta;
  bool qkv_bias, qk_norm, tied;
} sc_synthetic_shape;

/* The shape called name, or NULL; sc_synthetic_shapes lists them all
 * (*n of them; static storage). */
const sc_synthetic_shape *sc_synthetic_shape_find(const char *name);
const sc_synthetic_shape *sc_synthetic_shapes(int *n);
/* Their names, ", "-separated, into buf (for messages). */
void sc_synthetic_shape_names(char *buf, size_t n);

/* A model of shape `name` on opts->device (CPU or CUDA; opts may be NULL:
 * the CPU), weights from seed. A CUDA model keeps no host weights: when the
 * device cannot take it, this fails (SC_ERR_DEVICE) instead of falling back.
 * A CPU model whose f32 weights would not fit in the memory available is
 * refused (SC_ERR_UNSUPPORTED). *out owned by the caller: sc_model_free. */
sc_status sc_model_new_synthetic(const char *name, const sc_model_options *opts, uint64_t seed,
                                 sc_model **out, sc_error *err);

/* Writes out_dir (created if missing) as a copy of the checkpoint in dir
 * whose matrices are int8 with one f32 scale per row (the same rule as
 * int8 made at load, so a model loads the same from either), in one
 * model.safetensors (replaced atomically); every other file of dir comes
 * along. The result loads like any checkpoint and maps its int8 rows
 * instead of quantizing them. out_dir must differ from dir. */
sc_status sc_model_quantize(const char *dir, const char *out_dir, sc_error *err);

/* A forward context: one activation arena (sized up front for max_seq) plus
 * per-layer K and V rows, so that a later caller can recompute a window
 * only. Contexts sharing one model may run concurrently on different
 * threads; one context is used by one thread at a time. */
typedef struct sc_forward_ctx sc_forward_ctx;

/* max_seq 0 = the model's info.max_seq. *out owned by the caller. */
sc_status sc_forward_ctx_new(sc_model *model, int max_seq, sc_forward_ctx **out,
                             sc_error *err);
void sc_forward_ctx_free(sc_forward_ctx *ctx); /* NULL is fine */
/* Bytes of the context's arena (activations, K/V, scratch). */
uint64_t sc_forward_ctx_bytes(const sc_forward_ctx *ctx);

/* One bidirectional forward pass over ids[0..n) at positions 0..n-1
 * (1 <= n <= max_seq, every id < vocab). Writes the raw lm_head outputs,
 * before any logit shift, for the rows rows[0..n_rows) (each in [0, n),
 * repeats allowed) into logits[n_rows][vocab], row-major, in that order.
 * rows == NULL means every position (n_rows must then be n). logits is
 * owned by the caller. */
sc_status sc_forward_ctx_run(sc_forward_ctx *ctx, const int32_t *ids, int n,
                             const int32_t *rows, int n_rows, float *logits,
                             sc_error *err);

/* The cached pass (Fast-dLLM's dual cache): recomputes only positions
 * [w0, w1) of ids[0..n) and reuses every other position's K/V from the
 * context's previous run, which must have been over the same n positions
 * (SC_ERR_INVALID otherwise). Those K/V are approximate where tokens changed
 * since they were computed; a full sc_forward_ctx_run refreshes them. rows
 * must lie in [w0, w1); NULL means every window position, in order. */
sc_status sc_forward_ctx_run_window(sc_forward_ctx *ctx, const int32_t *ids, int n,
                                    int w0, int w1, const int32_t *rows, int n_rows,
                                    float *logits, sc_error *err);

/* Moves the K/V the context holds for positions [src0, src1) of its last
 * run to positions [dst0, dst0 + (src1 - src0)), with K rotated (RoPE) to
 * the new positions, and makes the cached length n_new: a window run over
 * n_new positions then reuses them, with every position that neither this
 * move nor an unmoved row below min(src0, dst0) covers inside the window.
 * For reusing a request's suffix in the next request when the text before
 * it grew or shrank (the engine's sessions). 0 <= src0 <= src1 <= the
 * cached length, dst0 + (src1 - src0) <= n_new <= max_seq; SC_ERR_INVALID
 * without a cache; SC_ERR_UNSUPPORTED on a backend that cannot (CUDA today:
 * run in full). */
sc_status sc_forward_ctx_shift(sc_forward_ctx *ctx, int n_new, int src0, int src1, int dst0,
                               sc_error *err);

/* Several sequences in one pass (a batch): sequence s is
 * ids[offsets[s] .. offsets[s+1]) at positions 0.., attending only within
 * itself, while every matrix product runs over all of them at once. rows
 * index the packed array; offsets has n_seqs + 1 entries, offsets[0] = 0,
 * and the total must fit the context. Leaves no cache for window runs. */
sc_status sc_forward_ctx_run_packed(sc_forward_ctx *ctx, const int32_t *ids,
                                    const int32_t *offsets, int n_seqs, const int32_t *rows,
                                    int n_rows, float *logits, sc_error *err);


/* ---- picking a token per row ------------------------------------------------
 * The engine's rules for an unfiltered row (no top-k or top-p), applied
 * where the logits are: on a GPU in the lm_head epilogue, so only one small
 * record per row crosses to the host; on the CPU by model/pick.c, which is
 * the reference. For row logits l[0..vocab):
 *   inv_t = 1/T when T > 0, else 1
 *   z[t]  = l[t] * inv_t, minus eos_penalty * inv_t for the eos and pad ids,
 *           -inf for banned ids
 *   p     = softmax(z): max_prob, margin = p1 - p2, entropy (nats)
 *   token = argmax z (lowest index on ties) when T <= 0, else Gumbel-max:
 *           argmax z[t] - log(-log(u)), u = sc_pick_uniform(key, t)
 * The noise is a pure function of (key, t), so the CPU and a GPU pick the
 * same token from the same logits, and a row's sample does not depend on
 * what else shares its forward pass. */
typedef struct sc_pick_row_params {
  float temperature; /* <= 0: the argmax */
  float eos_penalty; /* in logit units, before the temperature */
  uint64_t key;      /* this row's noise */
} sc_pick_row_params;

typedef struct sc_pick_params {
  const sc_pick_row_params *rows; /* [n_rows] (borrowed) */
  /* [vocab] 1 = never picked, or NULL (borrowed for the call). A GPU
   * uploads it again only when its contents change. */
  const uint8_t *banned;
  int32_t eos_id, pad_id; /* -1: none */
  /* More ids the EOS penalty applies to (a family's other end tokens, e.g.
   * DiffuCoder-Instruct's <|dlm_pad|>), borrowed; applied by model/pick.c
   * only: a GPU picks rows with extra ids only when the penalty is 0 (the
   * engine sees to it). */
  const int32_t *more_end_ids;
  int n_more_end_ids;
} sc_pick_params;

/* Double, though a GPU computes in f32: near 1 the ranking of the host's
 * picks needs the resolution (f32 rounds 1 - 1e-9 to 1, making ties). */
typedef struct sc_row_pick {
  int32_t token;
  double p;        /* p(token) */
  double max_prob; /* p1 */
  double margin;   /* p1 - p2 */
  double entropy;  /* nats */
  /* A logit of the row is NaN or infinite (broken weights or an overflow):
   * the other fields mean nothing. sc_forward_ctx_pick refuses such a pass
   * with an error naming the checkpoint. */
  bool nonfinite;
} sc_row_pick;

/* The uniform in (0, 1) behind the noise (23 bits plus a half step; never
 * 0 or 1). */
float sc_pick_uniform(uint64_t key, uint64_t t);

/* The forward pass of sc_forward_ctx_run_window (offsets NULL; w0 = 0,
 * w1 = n is a full pass) or of sc_forward_ctx_run_packed (offsets with
 * n_seqs + 1 entries; w0 = 0, w1 = n = offsets[n_seqs]), then one pick per
 * requested row into out[n_rows]. logits [n_rows][vocab] floats receives
 * the rows' logits when the picking runs on the host (the CPU backend, or a
 * GPU context that fell back), and also on a device when keep_logits (a
 * batch whose other rows are picked on the host); NULL is accepted only
 * when sc_forward_ctx_picks_on_device and not keep_logits. */
sc_status sc_forward_ctx_pick(sc_forward_ctx *ctx, const int32_t *ids, int n, int w0, int w1,
                              const int32_t *offsets, int n_seqs, const int32_t *rows,
                              int n_rows, const sc_pick_params *pick, float *logits,
                              bool keep_logits, sc_row_pick *out, sc_error *err);
/* True when ctx picks on a GPU (no logits reach the host). The engine
 * picks rows with top-k or top-p on the host, from their logits. */
bool sc_forward_ctx_picks_on_device(const sc_forward_ctx *ctx);

/* What a context's passes cost: every forward pass, and on a GPU the
 * graphs captured and replayed, the passes launched kernel by kernel and
 * the host's waits on the device (0 on the CPU). */
typedef struct sc_forward_counters {
  uint64_t passes, graph_captures, graph_replays, eager_passes, host_syncs;
} sc_forward_counters;
void sc_forward_ctx_counters(const sc_forward_ctx *ctx, sc_forward_counters *out);
/* The picking rules over logits already on the host: logits [n_rows][vocab]
 * (row-major, as sc_forward_ctx_run writes them), z scratch [vocab]. */
void sc_pick_rows(const float *logits, int n_rows, int vocab, const sc_pick_params *pick,
                  double *z, sc_row_pick *out);
/* What a draft's acceptance test reads of one drafted row (sc_draft). */
typedef struct sc_draft_score {
  double p;   /* p(token) */
  double top; /* the row's largest p: p / top is how far the token is from the model's favourite */
} sc_draft_score;
/* p(token) in one row under the same rules (temperature, EOS penalty,
 * bans; no noise), with the row's largest p beside it into *out (may be
 * NULL): what a draft's acceptance test reads. 0 (both) for a banned token
 * or a row with a non-finite logit. */
double sc_pick_prob(const float *logits, int vocab, const sc_pick_row_params *row,
                    const sc_pick_params *pick, int32_t token, sc_draft_score *out);

/* ======================= the diffusion infill engine ===================== */
/* (model/engine.c) Fills a canvas of mask tokens between a prefix and a
 * suffix in a few forward passes, committing several tokens per pass.
 * Layout, as each family's harness builds it (no FIM sentinels):
 *   [BOS] prefix [MASK] x m suffix [EOS]
 * with BOS and EOS as the family profile says (below). Algorithms and
 * their sources: ../shared/notes/diffusion-models.md section B; the
 * upstream loops are in model/upstream.c. */

/* How masked positions are ranked for committing. */
typedef enum sc_rank {
  SC_RANK_CONFIDENCE = 0, /* p(top1) — LLaDA low-confidence remasking, Dream maskgit_plus */
  SC_RANK_MARGIN,         /* p(top1) - p(top2) — Dream topk_margin */
  SC_RANK_ENTROPY,        /* -H(p), larger = more certain — Dream entropy */
} sc_rank;

/* How many positions are committed per step. */
typedef enum sc_schedule {
  SC_SCHEDULE_THRESHOLD = 0, /* Fast-dLLM: every position scoring >= threshold,
                                and always the best one */
  SC_SCHEDULE_FIXED_K,       /* LLaDA: the block's masks split evenly over steps */
} sc_schedule;

/* The bound on an EOS penalty's size, wherever one comes from (a checkpoint's
 * generation_config.json, the CLI, the LSP settings): far past any useful
 * value, short of overflowing the logits. */
#define SC_EOS_PENALTY_MAX 100.0

/* ---- family profiles (model/family.c) ---------------------------------------
 * How each model family frames, ends and decodes an infill, as its authors'
 * code does (sources per row in family.c; summary in docs/models.md).
 * One table of data, detected from the checkpoint (architectures,
 * model_type, the tokenizer's known added tokens) and overridable by
 * config.json keys:
 *   "sculpt_profile"          a row by name (dream, diffucoder-instruct,
 *                             dreamon, open-dcoder, coda, llada, sculpt)
 *   "sculpt_bos_token_id"     int, or -1 for no BOS
 *   "sculpt_eos_after_suffix" bool
 *   "sculpt_end_token_ids"    [int...] (replaces the detected list)
 *   "sculpt_eos_fill"         bool
 *   "sculpt_expand_token_id"  int, or -1 for none
 *   "sculpt_max_infill"       int (DreamOn's max_gen_len)
 *   "sculpt_preset"           "fast" or "upstream" */

/* The decoding loop of a preset. */
typedef enum sc_decode_loop {
  SC_LOOP_BLOCKS = 0,     /* sculpt's: semi-AR blocks, threshold or fixed-k
                             schedule, optional dual cache (DreamOn: its
                             expand/delete loop under the same schedule) */
  SC_LOOP_ONE_PER_STEP,   /* DreamOn's harness on a fixed canvas: the best-ranked
                             masked position each step, full recompute */
  SC_LOOP_DREAM_SCHEDULE, /* Dream/CoDA diffusion_generate: int(n (1 - s/t))
                             positions per step on the linspace(1, 1e-3) grid */
  SC_LOOP_P2,             /* Open-dLLM p2: every step re-masks the canvas's
                             least confident positions, (1 - (i+1)/steps) of it */
  SC_LOOP_LLADA,          /* LLaDA generate(): blocks, low-confidence commits
                             split evenly over the block's steps */
  SC_LOOP_DREAMON,        /* DreamOn variable length: one token per step,
                             expand -> two masks, EOS deletes */
} sc_decode_loop;
const char *sc_decode_loop_name(sc_decode_loop loop); /* static string */

typedef enum sc_preset {
  SC_PRESET_AUTO = 0, /* the family's default */
  SC_PRESET_FAST,     /* sculpt's: threshold 0.9 + dual cache, blocks of 32 */
  SC_PRESET_UPSTREAM, /* the authors' evaluation loop and sampling settings */
} sc_preset;
/* "auto", "fast", "upstream" -> preset; false on anything else. */
bool sc_preset_parse(const char *s, sc_preset *out);
const char *sc_preset_name(sc_preset preset); /* static string */

/* Where a family's BOS comes from. */
typedef enum sc_bos_rule {
  SC_BOS_NONE = 0,          /* no BOS (Open-dCoder, CoDA) */
  SC_BOS_TOKENIZER,         /* the tokenizer's bos_token, else config.json's */
  SC_BOS_TOKENIZER_ADDS,    /* only when the tokenizer adds one itself
                               (add_bos_token, or its post_processor template) */
} sc_bos_rule;
const char *sc_bos_rule_name(sc_bos_rule rule); /* static string */

#define SC_PROFILE_MAX_END 8

typedef struct sc_family_profile {
  char name[32];          /* the table row: "dream", "dreamon", ... */
  const char *source;     /* static: the upstream files the row follows */
  bool overridden;        /* a sculpt_* key in config.json changed something */
  /* framing: [BOS] prefix [MASK] x m suffix [EOS] */
  sc_bos_rule bos_rule;
  int32_t bos_id;         /* resolved; -1: none */
  bool eos_after_suffix;  /* an EOS follows a whole suffix (never a cut one) */
  int32_t eos_id;         /* that EOS, also DreamOn's delete and the fill */
  /* ending */
  int32_t end_ids[SC_PROFILE_MAX_END]; /* the middle ends at the first of these */
  int n_end;
  bool eos_fill;          /* masks after a committed end token become EOS
                             (DreamOn's pad_eos_to_right; sculpt's training) */
  int32_t expand_id;      /* DreamOn's expand token; -1: fixed-length canvas */
  int max_infill;         /* DreamOn: the longest middle (max_gen_len); 0 = none */
  sc_preset preset;       /* the default preset (FAST or UPSTREAM) */
  /* the upstream preset */
  sc_decode_loop loop;
  sc_rank rank;
  float temperature, top_p;
  int steps;              /* 0 = one token per step / steps = canvas */
  int block_len;          /* LLaDA / sculpt blocks; 0 = one block */
  int pad_after;          /* EOS tokens the harness pads after the frame */
  bool plain_confidence;  /* rank by softmax of the untempered logits (LLaDA) */
} sc_family_profile;

/* ---- drafts: tokens proposed for canvas positions ----------------------------
 * A draft proposes tokens for a run of canvas positions: text the caller
 * found elsewhere (the prompt's own text, the repository, an answer shown
 * before); the engine knows nothing of where. In each step, the best-ranked
 * draft that agrees with everything already committed in its span writes
 * its tokens into the masked positions it covers in the current block, and
 * the one forward pass the step runs anyway scores every drafted position
 * at once, each against the prefix, the suffix and the other drafted tokens
 * (its row is computed with the drafted tokens visible). The leading run of
 * drafted positions whose drafted token has p >= draft_threshold p_top,
 * p_top the largest p in its row (a likelihood-ratio test: the draft stays
 * while the model finds it at least that fraction as likely as its own
 * favourite, so an unsure row asks less of it; p under the step's picking
 * rules: temperature, EOS penalty, bans; before top-k or top-p) is
 * committed together; a token the rules ban never is. At the first
 * position that falls short the draft is rejected: it and the rest of the
 * draft become masks again and are decoded as usual. Rows that saw a rejected token commit nothing that
 * step, except the rejected position itself, which takes the model's own
 * pick when it passes the schedule (always, when the step committed nothing
 * else), so every step still makes progress; a rejected draft is not tried
 * again. A draft that ends the middle (the suffix follows its last token)
 * sets the canvas length to its end once all of it is committed and no mask
 * is left before it.
 *
 * Where it runs: sculpt's block loop (fast, with or without the dual K/V
 * cache, one length or several) and, on request, the upstream loops that
 * commit without re-masking (one-per-step, dream-schedule, llada); p2 and
 * DreamOn's expand/delete loop ignore drafts. On a device that picks on the
 * GPU, a drafting step asks for its rows' logits back (keep_logits) and the
 * acceptance test reads them on the host (sc_pick_prob). */
typedef struct sc_draft {
  const int32_t *ids; /* the proposed tokens (borrowed) */
  int n;
  int offset;       /* the canvas position of ids[0] (0: at the cursor) */
  bool ends_middle; /* the suffix follows ids[n - 1]: the middle ends there */
} sc_draft;
#define SC_INFILL_MAX_DRAFTS 8
/* The acceptance threshold's default (sc_infill_params.draft_threshold):
 * the strictest of 0.003/0.001/0.0003 that gives at least twice the tokens
 * a pass on both repository benchmarks with the shipped model (repo-single
 * 4.61 and repo-multi 2.84 against 1.00 drafts off; 0.001: 2.28 and 1.91),
 * exact match on repo-single 4.0% against the line n-gram's 1.0%
 * (docs/evaluation.md, "Drafts"). 0, which verifies nothing, scored a
 * little higher still with that weak model, not significantly: re-sweep
 * for a stronger one. */
#define SC_DRAFT_THRESHOLD_DEFAULT 0.0003f

typedef struct sc_infill_params {
  sc_rank rank;
  sc_schedule schedule;
  /* The score compared with threshold is p(top1), p1 - p2, or exp(-H)
   * for the three ranks, so all live in [0, 1]. */
  float threshold;   /* default 0.9 */
  int steps;         /* fixed-k: steps for the whole canvas (>= number of
                        blocks); 0 = one token per step */
  int block_len;     /* semi-autoregressive blocks inside the canvas; 0 = one block */
  double temperature; /* 0 = greedy (argmax); else Gumbel-max sampling */
  double top_p;       /* 1 = off */
  int top_k;          /* 0 = off */
  uint64_t seed;      /* same seed, same output */
  float eos_penalty;  /* subtracted from the EOS and pad logits (Dream-Coder: 3);
                         NAN (the default) = the checkpoint's, info.eos_penalty;
                         at most SC_EOS_PENALTY_MAX either way */
  bool use_cache;     /* reuse prefix/suffix K/V between steps (Fast-dLLM dual
                         cache, refreshed at block boundaries) */
  bool no_expand;     /* ignore the checkpoint's expand token (see below) */
  bool no_batch;      /* decode several candidate lengths one after another
                         (each with the cache) instead of as one batch of
                         packed forward passes (without it) */
  int max_canvas;     /* DreamOn: the canvas may grow to this; 0 = the
                         profile's max_infill (64 for DreamOn) */
  /* What sc_infill_params_for fills from the family profile; the defaults
   * (all 0) are sculpt's block loop. */
  sc_preset preset;      /* for the record (results, logs) */
  sc_decode_loop loop;   /* SC_LOOP_BLOCKS, or an upstream loop (model/upstream.c) */
  int pad_after;         /* EOS tokens after the frame (DreamOn's harness) */
  bool plain_confidence; /* LLaDA: rank by softmax of the untempered logits */
  /* The suffix was cut to fit a budget: no EOS after it (an EOS says the
   * file ends there). sc_infill_fit says when. */
  bool suffix_cut;
  /* Drafts (above), best first; borrowed for the call (sc_engine_infill and
   * its variants); NULL or 0: none. At most SC_INFILL_MAX_DRAFTS are used.
   * sc_engine_infill_many and sc_engine_batch_add (other prompts in one
   * batch) ignore them. */
  const sc_draft *drafts;
  int n_drafts;
  float draft_threshold; /* p a drafted token needs; default SC_DRAFT_THRESHOLD_DEFAULT */
} sc_infill_params;

/* Variable length (DreamOn, ../shared/notes B5): when the profile has an
 * expand token (DreamOn's id 151667), a committed expand becomes two masks
 * (the canvas grows, up to max_canvas; at the limit expand is never
 * predicted), and a committed EOS deletes itself and the masks after it (the
 * canvas shrinks and the suffix moves up). The canvas is then one block,
 * recomputed in full every step, since positions move.
 *
 * Defaults: threshold 0.9 on confidence, blocks of 32, greedy, cache on. */
void sc_infill_params_default(sc_infill_params *p);

/* The profile of a loaded model (borrowed; lives as long as the model). */
const sc_family_profile *sc_model_get_profile(const sc_model *model);

/* Parameters for a preset of the model's family: FAST is
 * sc_infill_params_default (with the profile's max_infill); UPSTREAM the
 * profile's loop, ranking, temperature, top-p, steps, blocks and padding,
 * full recompute, nothing banned; AUTO the profile's default. Callers may
 * then override single fields (the CLI's flags, the LSP's settings). */
void sc_infill_params_for(const sc_model *model, sc_preset preset, sc_infill_params *p);

/* "confidence", "margin", "entropy" -> rank with the fixed-k schedule;
 * "threshold" -> confidence with the threshold schedule. */
bool sc_infill_algorithm_parse(const char *name, sc_infill_params *p);

#define SC_INFILL_MAX_CANDIDATES 8

/* The caller's canvas plan: one or several candidate lengths. Several are
 * decoded as one batch and the best by mean log-confidence is returned. */
typedef struct sc_infill_plan {
  int n_lengths;
  int lengths[SC_INFILL_MAX_CANDIDATES];
} sc_infill_plan;

/* ---- fitting a request to a context ------------------------------------------
 * (model/fit.c) How the tokens of one infill share a context of N positions,
 * one rule for every caller (the LSP, `sculpt complete`, `sculpt context`,
 * `sculpt batch`, `sculpt serve`, and the LSP's remote backend with the
 * context its server has). The frame's own tokens (the family profile's
 * BOS, the EOS after a whole suffix, padding) are reserved first; then the
 * canvas, at most half of what is left, since a canvas with nothing to
 * condition on is noise; a canvas that may grow (DreamOn) reserves what it
 * may grow to, within the same half; the prompt (the text before and after
 * the canvas) gets the rest, or what the caller asked for when that is
 * less. When text has to go, the far end of the prefix goes first (as the
 * upstream harnesses truncate, from the left), down to half the prompt,
 * then the far end of the suffix; a cut suffix is followed by no EOS (it
 * is not the file's end), which frees that room for the prompt. */

/* What a layout adds to the prompt and the canvas. */
struct sc_infill_frame {
  int whole; /* positions the frame adds when the suffix is whole: the BOS,
                an EOS after the suffix, padding */
  int cut;   /* the same when the suffix is cut: no EOS, no padding */
  int grow;  /* what a canvas may grow to (DreamOn: params.max_canvas, else
                the profile's max_infill); 0 = a fixed-length canvas */
};

/* The frame of the model's family profile for decoding with p (its
 * padding, and whether a DreamOn canvas may grow: the expand token, the
 * loop, no_expand, max_canvas). */
void sc_infill_frame_for(const sc_model *model, const sc_infill_params *p,
                         sc_infill_frame *out);

typedef struct sc_infill_budget {
  int context;           /* the positions fitted into */
  sc_infill_frame frame; /* the frame fitted with */
  int canvas;            /* the longest canvas: the one asked for, cut to fit */
  int max_canvas;        /* what a growing canvas may reach; canvas when it cannot grow */
  int prompt;            /* tokens for the text before and after the canvas
                            together, the suffix whole */
  int prompt_cut;        /* the same with the suffix cut (>= prompt) */
  bool clamped;          /* the prompt budget asked for was more than the room left */
} sc_infill_budget;

/* context: the positions (a model's info.context, an engine's
 * sc_engine_context, a remote server's); frame: what the layout adds
 * (sc_infill_frame_for, or the caller's estimate for a server whose
 * template it does not know); budget: the prompt tokens wanted, 0 = all
 * the room; canvas: the longest canvas wanted (>= 1). SC_ERR_INVALID when
 * the context leaves no room for one canvas token and one prompt token. */
sc_status sc_infill_budget_compute(int context, const sc_infill_frame *frame, int budget,
                                   int canvas, sc_infill_budget *out, sc_error *err);

/* Splits fit's prompt between the text before the canvas (n_pre tokens)
 * and after it (n_suf): the prefix is cut first (its far end), but keeps
 * half the prompt when it has that much; then the suffix is cut (its far
 * end, at least one token: *suffix_cut, which the caller sets in
 * params.suffix_cut or the request's suffix_cut); room one side does not
 * need goes to the other. Use pre + (n_pre - keep_pre) and suf[0,
 * keep_suf). */
void sc_infill_fit(const sc_infill_budget *fit, size_t n_pre, size_t n_suf, size_t *keep_pre,
                   size_t *keep_suf, bool *suffix_cut);

/* The context positions an infill of that split needs (prefix + suffix, the
 * canvas and its growth, the frame): what to give sc_engine_new. */
int sc_infill_positions(const sc_infill_budget *fit, size_t keep_pre, size_t keep_suf,
                        bool suffix_cut);

/* sc_infill_budget_compute for a model decoding with params in a context of
 * `context` positions (the engine's sc_engine_context, or info.max_seq
 * before an engine is made), the plan's longest length as the canvas. Then
 * cuts the plan's lengths to out->canvas and, for a growing canvas, sets
 * params->max_canvas to out->max_canvas, so that the engine stays within
 * what was reserved. plan and params are changed in place. */
sc_status sc_infill_fit_plan(const sc_model *model, int context, int budget,
                             sc_infill_plan *plan, sc_infill_params *params,
                             sc_infill_budget *out, sc_error *err);

/* ---- an infill from the text around a cursor ---------------------------------
 * What every caller that starts from text does (`sculpt complete`, `sculpt
 * eval`, the edit engine's local generator, the LSP): the plan and the
 * prompt fitted to a context (sc_infill_fit_plan), the text before and
 * after the canvas tokenized and split as sc_infill_fit says, and the
 * positions the engine then needs. */
typedef struct sc_infill_tokens {
  int32_t *pre, *suf;        /* owned: the tokens of each side (see below) */
  size_t n_pre, n_suf;
  size_t keep_pre, keep_suf; /* fitted: pre + (n_pre - keep_pre), suf[0, keep_suf) */
  bool suffix_cut;           /* the suffix the model sees is not the text's end */
  bool pre_window, suf_window; /* that side was encoded through a window */
} sc_infill_tokens;

/* Tokenizes before and after with tok and splits them by fit
 * (sc_infill_fit). after_cut: the caller's after is already not the text's
 * end (a window), so no EOS may follow it whatever the fit keeps. *out
 * owned by the caller (sc_infill_tokens_free), zeroed on failure.
 *
 * A side far longer than the fit can keep is not encoded whole: only a
 * window at its end near the canvas (the end of before, the start of
 * after), grown until it holds SC_INFILL_WINDOW_MARGIN tokens more than
 * the fit could keep (pre_window, suf_window; n_pre and n_suf then count
 * the window's tokens, more than any fit keeps, so keep < n says the side
 * was cut as it does for a whole one). The split is the same as the whole
 * side's (sc_infill_fit sees every count past the prompt alike), and so
 * are the tokens kept, as long as the tokenizer's pieces line up again
 * within the margin after the window's cut: a pre-token piece (a run of
 * letters, of spaces) longer than the margin that straddles the cut could
 * merge differently (tests/unit/test_fit_window.c measures it on real
 * code). A 3.7 MB prefix took 149 ms to encode whole. */
#define SC_INFILL_WINDOW_MARGIN 64
sc_status sc_infill_tokens_encode(const sc_tokenizer *tok, const sc_infill_budget *fit,
                                  const char *before, size_t before_len, const char *after,
                                  size_t after_len, bool after_cut, sc_infill_tokens *out,
                                  sc_error *err);
void sc_infill_tokens_free(sc_infill_tokens *t); /* frees the members; NULL is fine */

typedef struct sc_infill_prepared {
  sc_infill_plan plan;      /* the caller's, its lengths cut to fit */
  sc_infill_params params;  /* the caller's, with max_canvas and suffix_cut set */
  sc_infill_budget fit;
  sc_infill_tokens tokens;
  int positions;            /* what the engine needs (sc_infill_positions) */
} sc_infill_prepared;

/* sc_infill_fit_plan (model, context, budget: 0 = all the room) for a copy
 * of plan and params, then sc_infill_tokens_encode. *out owned by the
 * caller (sc_infill_prepared_free). */
sc_status sc_infill_prepare(const sc_model *model, const sc_tokenizer *tok, int context,
                            int budget, const char *before, size_t before_len, const char *after,
                            size_t after_len, bool after_cut, const sc_infill_plan *plan,
                            const sc_infill_params *params, sc_infill_prepared *out,
                            sc_error *err);
void sc_infill_prepared_free(sc_infill_prepared *p); /* NULL is fine */

typedef struct sc_infill_result {
  int32_t *ids;       /* the middle: the canvas up to the family's first end
                         token, with every special token (mask, end, expand,
                         ids marked special, ids with no token) left out (owned) */
  int n_ids;
  float *confidence;  /* p of each middle token when it was committed (owned) */
  char *text;         /* decoded middle, NUL-terminated (owned; NULL without a tokenizer) */
  size_t text_len;
  int canvas_len;     /* the chosen candidate's canvas length */
  int candidate;      /* its index in the plan */
  double mean_logp;   /* its mean log-confidence */
  int steps;          /* forward passes used, all candidates */
  int committed;      /* tokens committed, all candidates */
  bool ended;         /* the model wrote an end token inside the canvas */
  double ms_total, ms_forward, ms_sample;
  int kv_reused;      /* with a session: positions whose K/V its previous request
                         left and this one reused (0: its first pass was full) */
  int32_t *canvas_ids; /* the chosen canvas as decoded, before ending and
                          cleaning (owned; canvas_len of them) */
  /* Drafts (sc_infill_params.drafts), all candidates: drafted tokens
   * placed on the canvas and scored, of which accepted were committed and
   * rejected (drafted - accepted) were not. committed / steps is the
   * tokens a forward pass gave. */
  int drafted, accepted, rejected;
} sc_infill_result;

void sc_infill_result_free(sc_infill_result *r); /* frees the members; r itself is the caller's */

/* One prompt of a batch (sc_engine_infill_many): the ids are borrowed. */
typedef struct sc_infill_request {
  const int32_t *prefix;
  int n_prefix;
  const int32_t *suffix;
  int n_suffix;
  int canvas;    /* canvas length */
  uint64_t seed; /* its own seed (the params' seed is not used) */
  bool suffix_cut; /* the suffix was cut (sc_infill_fit): no EOS after it,
                      as with the params' suffix_cut */
} sc_infill_request;

#define SC_INFILL_MAX_BATCH 16

/* The current draft after a step: canvas[0..m) with mask ids where nothing
 * is committed yet. Borrowed for the duration of the call. */
typedef void (*sc_infill_progress_fn)(void *user, int candidate, const int32_t *canvas,
                                      int m, int step, int committed);

typedef struct sc_engine sc_engine;

/* model and tok are borrowed and must outlive the engine; tok may be NULL
 * (no text in results). max_seq 0 = the model's. One engine is used by one
 * thread at a time; several engines may share one model. */
sc_status sc_engine_new(sc_model *model, const sc_tokenizer *tok, int max_seq,
                        sc_engine **out, sc_error *err);
void sc_engine_free(sc_engine *e);

/* The positions a sequence may have in this engine (its max_seq). */
int sc_engine_context(const sc_engine *e);
/* Its forward contexts' counters summed (its own and its batches'). */
void sc_engine_counters(const sc_engine *e, sc_forward_counters *out);

/* The device the engine's passes run on, for a caller to report: *chosen
 * (what sc_device_select() gave the model), or the CPU's choice where CUDA
 * was chosen but cannot run this model (its context fell back to the CPU,
 * with one log line). out may be chosen. */
void sc_engine_device(const sc_engine *e, const sc_device_choice *chosen,
                      sc_device_choice *out);

/* Several independent prompts (other sites, other files) decoded together:
 * every step is one packed forward pass over all unfinished prompts, in
 * groups of up to SC_INFILL_MAX_BATCH. outs[i] gets what sc_engine_infill
 * would give for reqs[i] with a one-length plan and seed reqs[i].seed
 * (timings are per group). No cache, no DreamOn expand. *passes (may be
 * NULL) counts the forward passes. On failure every outs[i] is freed. */
sc_status sc_engine_infill_many(sc_engine *e, const sc_infill_request *reqs, int n,
                                const sc_infill_params *params, const _Atomic int *cancel,
                                sc_infill_result *outs, int *passes, sc_error *err);

/* Fills the middle. cancel (may be NULL) is polled between steps: when it
 * becomes non-zero the call returns SC_ERR_CANCELLED within one step.
 * progress may be NULL. *out is filled on success (free with
 * sc_infill_result_free). */
sc_status sc_engine_infill(sc_engine *e, const int32_t *prefix, int n_prefix,
                           const int32_t *suffix, int n_suffix, const sc_infill_plan *plan,
                           const sc_infill_params *params, const _Atomic int *cancel,
                           sc_infill_progress_fn progress, void *user,
                           sc_infill_result *out, sc_error *err);

/* sc_engine_infill of a prepared request (its kept tokens, plan and
 * params); the engine needs p->positions at least. */
sc_status sc_engine_infill_prepared(sc_engine *e, const sc_infill_prepared *p,
                                    const _Atomic int *cancel, sc_infill_progress_fn progress,
                                    void *user, sc_infill_result *out, sc_error *err);

/* ---- sessions: K/V reused across requests ----------------------------------
 * Between two keystrokes the prefix and the suffix of a document hardly
 * change. A session remembers what the engine's K/V cache holds for its
 * document, so that the next infill with it recomputes only the positions
 * whose tokens changed (and the canvas's first block), keeping the K/V of
 * the unchanged text before them in place and moving those of the unchanged
 * text after them to their new positions (sc_forward_ctx_shift), instead of
 * a full pass over the whole context. It is the dual cache's approximation
 * (Fast-dLLM) carried across requests: K/V of unchanged tokens are kept
 * although tokens near them changed. A full pass refreshes everything on a
 * session's first infill, after the engine ran anything else (another
 * session, an infill without one), when the changed span besides the first
 * block is longer than max_edit tokens (the edit moved far), and after
 * max_reuses reuses in a row; around the change, margin unchanged positions
 * on each side are recomputed as well (docs/measurements-history.md: what the reuse
 * costs in agreement with a full recompute, against what it saves). Only the cached single-candidate path reuses
 * (use_cache, no DreamOn expand, one canvas length or no_batch); a backend
 * without sc_forward_ctx_shift (CUDA today) always runs in full.
 *
 * Use (the LSP, lsp/inline.c): one session per document, passed with its
 * completions and their repairs (a repair's prompt is the same document, so
 * it reuses too), kept in a small table on the model lane, the least
 * recently used freed first. Its prompts are pinned (lsp/prompt.c): the
 * window before the cursor keeps its start and the suffix its end while
 * they fit, so that a keystroke changes the tokens at the cursor only. The engine holds one cache, so alternating documents costs one
 * full pass at each switch; sessions hold no K/V of their own (a few bytes
 * each). A session is used with one engine at a time, by its thread. */
typedef struct sc_infill_session sc_infill_session;

typedef struct sc_session_options {
  int max_reuses; /* reuses in a row before a full refresh; default 16 */
  int max_edit;   /* most changed positions outside the first block; more: a full
                     pass; default 64 */
  int margin;     /* unchanged positions on each side of the change recomputed
                     too (their K/V moved most); default 16 */
} sc_session_options;
void sc_session_options_default(sc_session_options *o);

/* o NULL = defaults. *out owned by the caller (sc_infill_session_free). */
sc_status sc_infill_session_new(const sc_session_options *o, sc_infill_session **out,
                                sc_error *err);
void sc_infill_session_free(sc_infill_session *s); /* NULL is fine */

/* sc_engine_infill for the session's document (session NULL: exactly
 * sc_engine_infill). out->kv_reused says what was reused. */
sc_status sc_engine_infill_session(sc_engine *e, sc_infill_session *session,
                                   const int32_t *prefix, int n_prefix, const int32_t *suffix,
                                   int n_suffix, const sc_infill_plan *plan,
                                   const sc_infill_params *params, const _Atomic int *cancel,
                                   sc_infill_progress_fn progress, void *user,
                                   sc_infill_result *out, sc_error *err);

/* ---- stepwise batches (continuous batching) -------------------------------
 * A set of up to SC_INFILL_MAX_BATCH requests decoded in lockstep, one packed
 * forward pass per step, to which requests may be added and from which they
 * may be removed between steps: a request added now joins the next step.
 * Each request decodes as in sc_engine_infill_many (no cache, no DreamOn
 * expand, its own params and seed), so its result does not depend on what
 * else shares its passes. The batch borrows the engine's buffers: while it
 * lives, use the engine for nothing else (one thread, one batch). */
typedef struct sc_engine_batch sc_engine_batch;

/* max_tokens bounds the packed length (sum of the live requests' sequences;
 * the packed pass's memory grows with its square); 0 = max(the engine's
 * max_seq, 2048). *out owned by the caller (sc_engine_batch_free). */
sc_status sc_engine_batch_new(sc_engine *e, int max_tokens, sc_engine_batch **out,
                              sc_error *err);
void sc_engine_batch_free(sc_engine_batch *b); /* NULL is fine; drops live requests */

/* Positions a request of req's size needs in the packed pass. */
int sc_engine_batch_request_tokens(const sc_infill_request *req);

/* Adds a request (ids copied; params copied, NULL = defaults) to slot *slot.
 * SC_ERR_INVALID for a bad request (as sc_engine_infill_many checks it);
 * SC_ERR_UNSUPPORTED when it does not fit now (every slot used, or the packed
 * length would pass max_tokens): retry after others finish. A request alone
 * in the batch always fits when it fits the engine. */
sc_status sc_engine_batch_add(sc_engine_batch *b, const sc_infill_request *req,
                              const sc_infill_params *params, int *slot, sc_error *err);

/* Drops a request (finished or not) and frees its slot; unknown slots are
 * ignored. */
void sc_engine_batch_remove(sc_engine_batch *b, int slot);

/* Requests in the batch, finished or not. */
int sc_engine_batch_count(const sc_engine_batch *b);
/* Requests still decoding: the size of the next step's packed pass. */
int sc_engine_batch_live(const sc_engine_batch *b);
/* Whether the request in slot has finished decoding (false for a free slot). */
bool sc_engine_batch_done(const sc_engine_batch *b, int slot);

/* One step: a packed forward pass over every unfinished request, then each
 * commits on its own rows. progress (may be NULL) is called once per request
 * stepped, with candidate = its slot and its current canvas. *stepped (may
 * be NULL) gets the number of requests in the pass (0: nothing to do, no
 * pass ran). On failure the requests are left as they were before the step
 * (remove them). */
sc_status sc_engine_batch_step(sc_engine_batch *b, sc_infill_progress_fn progress, void *user,
                               int *stepped, sc_error *err);

/* The result of a finished request (what sc_engine_infill_many gives it;
 * steps = the passes it took part in, timings its share of the batch's),
 * and its slot freed. SC_ERR_INVALID when the slot holds no finished request. */
sc_status sc_engine_batch_take(sc_engine_batch *b, int slot, sc_infill_result *out,
                               sc_error *err);

/* Forward passes this batch has run. */
int sc_engine_batch_passes(const sc_engine_batch *b);

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_MODEL_H */

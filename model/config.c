/* config.c — config.json: family detection, sizes, and the special-token ids
 * (config.json first, then the tokenizer files, then family defaults).
 *
 * Sources for the keys and defaults:
 *  - Qwen2/Dream: HF transformers Qwen2Config (hidden_size, num_hidden_layers,
 *    num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
 *    rope_theta, rms_norm_eps, tie_word_embeddings default false) and
 *    apple/DiffuCoder-7B-Instruct config.json (DreamModel, mask 151666).
 *  - Qwen3/CoDA: Qwen3Config adds head_dim and attention_bias (default false);
 *    CoDA config.json mask_token_id 151669; CoDA's model_config.py defaults
 *    tie_word_embeddings to true (see the lm_head rule in checkpoint.c).
 *  - LLaDA: configuration_llada.py (ModelConfig: d_model, n_heads, n_kv_heads,
 *    n_layers, mlp_ratio, mlp_hidden_size, rope_theta, include_bias,
 *    weight_tying, embedding_size, vocab_size, max_sequence_length) and
 *    ML-GSAI/LLaDA generate.py (mask 126336); rms eps 1e-5.
 *  - Shift: Dream/Open-dCoder/CoDA generation utilities shift, LLaDA does not
 *    (../shared/notes/diffusion-models.md, section A). */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model_impl.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool sc_model_family_parse(const char *s, sc_model_family *out) {
  static const struct {
    const char *name;
    sc_model_family family;
  } names[] = {
      {"auto", SC_FAMILY_AUTO},        {"dream", SC_FAMILY_DREAM},
      {"dream-coder", SC_FAMILY_DREAM}, {"diffucoder", SC_FAMILY_DREAM},
      {"qwen2", SC_FAMILY_QWEN2},      {"open-dcoder", SC_FAMILY_QWEN2},
      {"qwen3", SC_FAMILY_QWEN3},      {"coda", SC_FAMILY_QWEN3},
      {"llada", SC_FAMILY_LLADA},
  };
  if (!s) return false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0) {
      *out = names[i].family;
      return true;
    }
  return false;
}

const char *sc_model_family_name(sc_model_family family) {
  switch (family) {
  case SC_FAMILY_AUTO: return "auto";
  case SC_FAMILY_DREAM: return "dream";
  case SC_FAMILY_QWEN2: return "qwen2";
  case SC_FAMILY_QWEN3: return "qwen3";
  case SC_FAMILY_LLADA: return "llada";
  }
  return "?";
}

const char *sc_dtype_name(sc_dtype dtype) {
  switch (dtype) {
  case SC_DTYPE_F32: return "f32";
  case SC_DTYPE_F16: return "f16";
  case SC_DTYPE_BF16: return "bf16";
  case SC_DTYPE_MIXED: return "mixed";
  }
  return "?";
}

sc_status sc_json_file_load(const char *path, size_t flags, json_t **out, sc_error *err) {
  *out = NULL;
  char *buf = NULL;
  size_t len = 0;
  SC_TRY(sc_file_read_regular(path, SC_JSON_FILE_MAX, &buf, &len, err));
  json_error_t jerr;
  json_t *j = json_loadb(buf, len, flags, &jerr);
  free(buf);
  SC_CHECK(j, err, SC_ERR_FORMAT, "%s: invalid JSON at line %d, column %d: %s", path, jerr.line,
           jerr.column, jerr.text);
  *out = j;
  return SC_OK;
}

/* dir/name as a JSON object. An optional file that does not exist is NULL
 * with *st SC_OK; one that exists must be a readable regular file holding
 * an object (a broken tokenizer file is as wrong as a broken config). */
static json_t *load_json(const char *dir, const char *name, bool required,
                         sc_status *st, sc_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat sb;
  *st = SC_OK;
  if (!required && stat(path, &sb) != 0 && errno == ENOENT) return NULL;
  json_t *j = NULL;
  *st = sc_json_file_load(path, JSON_REJECT_DUPLICATES, &j, err);
  if (j && !json_is_object(j)) {
    json_decref(j);
    j = NULL;
    *st = sc_error_set(err, SC_ERR_FORMAT, "%s: not a JSON object", path);
  }
  return j;
}

/* Reads an integer key. Absent or null leaves *out; anything else but an
 * integer in [lo, hi] is an error naming the key. */
static sc_status get_int(const json_t *cfg, const char *key, long long lo, long long hi,
                         int *out, bool *found, const char *dir, sc_error *err) {
  json_t *v = json_object_get(cfg, key);
  if (found) *found = false;
  if (!v || json_is_null(v)) return SC_OK;
  SC_CHECK(json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi,
           err, SC_ERR_FORMAT, "%s/config.json: '%s' must be an integer in [%lld, %lld]", dir,
           key, lo, hi);
  *out = (int)json_integer_value(v);
  if (found) *found = true;
  return SC_OK;
}

static sc_status get_required_int(const json_t *cfg, const char *key, int *out,
                                  const char *dir, sc_error *err) {
  bool found;
  SC_TRY(get_int(cfg, key, 1, 1 << 24, out, &found, dir, err));
  SC_CHECK(found, err, SC_ERR_FORMAT, "%s/config.json: missing '%s'", dir, key);
  return SC_OK;
}

static sc_status get_real(const json_t *cfg, const char *key, double *out, const char *dir,
                          sc_error *err) {
  json_t *v = json_object_get(cfg, key);
  if (!v || json_is_null(v)) return SC_OK;
  SC_CHECK(json_is_number(v) && json_number_value(v) > 0, err, SC_ERR_FORMAT,
           "%s/config.json: '%s' must be a positive number", dir, key);
  *out = json_number_value(v);
  return SC_OK;
}

static sc_status get_bool(const json_t *cfg, const char *key, int *out, const char *dir,
                          sc_error *err) {
  json_t *v = json_object_get(cfg, key);
  if (!v || json_is_null(v)) return SC_OK;
  SC_CHECK(json_is_boolean(v), err, SC_ERR_FORMAT, "%s/config.json: '%s' must be a boolean",
           dir, key);
  *out = json_is_true(v) ? 1 : 0;
  return SC_OK;
}

static bool contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0) return true;
  return false;
}

static sc_model_family detect_family(const char *arch, const char *model_type) {
  if (contains_ci(arch, "Dream") || strcasecmp(model_type, "dream") == 0)
    return SC_FAMILY_DREAM;
  if (contains_ci(arch, "LLaDA") || strcasecmp(model_type, "llada") == 0)
    return SC_FAMILY_LLADA;
  if (contains_ci(arch, "Qwen3") || contains_ci(arch, "CoDA") ||
      strcasecmp(model_type, "qwen3") == 0 || contains_ci(model_type, "coda"))
    return SC_FAMILY_QWEN3;
  if (contains_ci(arch, "Qwen2") || strcasecmp(model_type, "qwen2") == 0)
    return SC_FAMILY_QWEN2;
  return SC_FAMILY_AUTO;
}

/* ---- special tokens ------------------------------------------------------ */

typedef sc_token_files token_files;

int32_t sc_token_files_added_id(const sc_token_files *tf, const char *content) {
  json_t *list = json_object_get(tf->tokenizer, "added_tokens");
  size_t i;
  json_t *t;
  json_array_foreach(list, i, t) {
    json_t *c = json_object_get(t, "content"), *id = json_object_get(t, "id");
    if (json_is_string(c) && json_is_integer(id) && strcmp(json_string_value(c), content) == 0)
      return (int32_t)json_integer_value(id);
  }
  json_t *dec = json_object_get(tf->tokenizer_config, "added_tokens_decoder");
  const char *key;
  json_t *v;
  json_object_foreach(dec, key, v) {
    json_t *c = json_object_get(v, "content");
    if (json_is_string(c) && strcmp(json_string_value(c), content) == 0) {
      char *end;
      long id = strtol(key, &end, 10);
      if (*end == '\0' && id >= 0 && id <= INT32_MAX) return (int32_t)id;
    }
  }
  return -1;
}

const char *sc_token_files_added_text(const sc_token_files *tf, int32_t id) {
  json_t *list = json_object_get(tf->tokenizer, "added_tokens");
  size_t i;
  json_t *t;
  json_array_foreach(list, i, t) {
    json_t *c = json_object_get(t, "content"), *tid = json_object_get(t, "id");
    if (json_is_string(c) && json_is_integer(tid) && json_integer_value(tid) == id)
      return json_string_value(c);
  }
  char key[16];
  snprintf(key, sizeof key, "%d", (int)id);
  json_t *c = json_object_get(json_object_get(json_object_get(tf->tokenizer_config,
                                                              "added_tokens_decoder"),
                                              key),
                              "content");
  return json_is_string(c) ? json_string_value(c) : NULL;
}

/* "<x>_token" in a tokenizer file is a string or {"content": string}. */
static const char *token_text(json_t *file, const char *key) {
  json_t *v = json_object_get(file, key);
  if (json_is_object(v)) v = json_object_get(v, "content");
  return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *sc_token_files_named(const sc_token_files *tf, const char *what) {
  char key[64];
  snprintf(key, sizeof key, "%s_token", what);
  const char *text = token_text(tf->tokenizer_config, key);
  return text ? text : token_text(tf->special_map, key);
}

/* config.json "<x>_token_id" (an int, or a list whose first int counts),
 * else the tokenizer files' "<x>_token" text resolved through the added
 * tokens; -1 when neither says. */
static int32_t special_id(const json_t *cfg, const token_files *tf, const char *what) {
  char key[64];
  snprintf(key, sizeof key, "%s_token_id", what);
  json_t *v = json_object_get(cfg, key);
  if (json_is_array(v)) v = json_array_get(v, 0);
  if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX)
    return (int32_t)json_integer_value(v);
  const char *text = sc_token_files_named(tf, what);
  return text ? sc_token_files_added_id(tf, text) : -1;
}

static sc_status read_special_ids(const char *dir, const json_t *cfg, sc_config *c,
                                  sc_error *err) {
  token_files tf = {0};
  sc_status st;
  tf.tokenizer = load_json(dir, "tokenizer.json", false, &st, err);
  if (st == SC_OK) tf.tokenizer_config = load_json(dir, "tokenizer_config.json", false, &st, err);
  if (st == SC_OK) tf.special_map = load_json(dir, "special_tokens_map.json", false, &st, err);
  if (st == SC_OK) {
    c->mask_id = special_id(cfg, &tf, "mask");
    c->eos_id = special_id(cfg, &tf, "eos");
    c->pad_id = special_id(cfg, &tf, "pad");
    c->bos_id = special_id(cfg, &tf, "bos");
    /* Open-dCoder adds its mask token to the tokenizer without naming it in
     * the config; the training and eval scripts use one of these texts
     * (pengzhangzhi/Open-dLLM, see the shared notes). */
    static const char *const mask_texts[] = {"<|mask|>", "<M>", "[MASK]", "<mask>"};
    for (size_t i = 0; c->mask_id < 0 && i < sizeof mask_texts / sizeof mask_texts[0]; i++)
      c->mask_id = sc_token_files_added_id(&tf, mask_texts[i]);
  }
  if (st != SC_OK) goto out;

  /* Family defaults, the last resort (shared notes, Table 1). */
  int32_t dmask = -1, deos = -1, dpad = -1, dbos = -1;
  switch (c->family) {
  case SC_FAMILY_DREAM: dmask = 151666; deos = dpad = dbos = 151643; break;
  case SC_FAMILY_QWEN2: deos = dpad = 151643; break;
  case SC_FAMILY_QWEN3: dmask = 151669; deos = dpad = 151643; break;
  case SC_FAMILY_LLADA: dmask = 126336; deos = dpad = 126081; break;
  case SC_FAMILY_AUTO: break;
  }
  if (c->mask_id < 0) c->mask_id = dmask;
  if (c->eos_id < 0) c->eos_id = deos;
  if (c->pad_id < 0) c->pad_id = dpad;
  if (c->bos_id < 0) c->bos_id = dbos;
  /* How this family frames, ends and decodes an infill (family.c). */
  st = sc_family_profile_resolve(dir, cfg, &tf, c, err);
out:
  json_decref(tf.tokenizer);
  json_decref(tf.tokenizer_config);
  json_decref(tf.special_map);
  return st;
}

/* ---- sizes ------------------------------------------------------------------ */

static sc_status read_qwen(const char *dir, const json_t *cfg, sc_config *c, sc_error *err) {
  SC_TRY(get_required_int(cfg, "hidden_size", &c->hidden, dir, err));
  SC_TRY(get_required_int(cfg, "num_hidden_layers", &c->n_layers, dir, err));
  SC_TRY(get_required_int(cfg, "num_attention_heads", &c->n_heads, dir, err));
  SC_TRY(get_required_int(cfg, "intermediate_size", &c->intermediate, dir, err));
  SC_TRY(get_required_int(cfg, "vocab_size", &c->vocab, dir, err));
  c->n_kv_heads = c->n_heads;
  SC_TRY(get_int(cfg, "num_key_value_heads", 1, 1 << 16, &c->n_kv_heads, NULL, dir, err));
  c->head_dim = c->hidden / c->n_heads;
  bool has_hd = false;
  SC_TRY(get_int(cfg, "head_dim", 1, 1 << 16, &c->head_dim, &has_hd, dir, err));
  SC_CHECK(has_hd || c->hidden % c->n_heads == 0, err, SC_ERR_FORMAT,
           "%s/config.json: hidden_size %d is not a multiple of num_attention_heads %d", dir,
           c->hidden, c->n_heads);
  c->rope_theta = 10000.0; /* Qwen2Config/Qwen3Config default */
  c->rms_eps = 1e-6;
  SC_TRY(get_real(cfg, "rope_theta", &c->rope_theta, dir, err));
  SC_TRY(get_real(cfg, "rms_norm_eps", &c->rms_eps, dir, err));
  SC_TRY(get_bool(cfg, "tie_word_embeddings", &c->tie, dir, err));
  SC_TRY(get_int(cfg, "max_position_embeddings", 1, 1 << 30, &c->max_positions, NULL, dir,
                 err));
  /* Qwen2Config/Qwen3Config: with use_sliding_window, the upper layers
   * attend only to the last sliding_window positions. Our attention is
   * full, which computes the same thing for sequences within the window,
   * so the window bounds the context we use (sc_config_context). */
  int use_window = 0, window = 0;
  SC_TRY(get_bool(cfg, "use_sliding_window", &use_window, dir, err));
  SC_TRY(get_int(cfg, "sliding_window", 1, 1 << 30, &window, NULL, dir, err));
  c->sliding_window = use_window == 1 ? window : 0;
  /* Qwen2 hard-codes bias on q/k/v; Qwen3 reads attention_bias. */
  c->qkv_bias = c->family != SC_FAMILY_QWEN3;
  if (c->family == SC_FAMILY_QWEN3) {
    int b = 0;
    SC_TRY(get_bool(cfg, "attention_bias", &b, dir, err));
    c->qkv_bias = b == 1;
  }
  c->qk_norm = c->family == SC_FAMILY_QWEN3;
  c->tie_default = c->family == SC_FAMILY_QWEN3;
  json_t *rs = json_object_get(cfg, "rope_scaling");
  SC_CHECK(!rs || json_is_null(rs), err, SC_ERR_UNSUPPORTED,
           "%s/config.json: rope_scaling is not supported", dir);
  return SC_OK;
}

static sc_status read_llada(const char *dir, const json_t *cfg, sc_config *c, sc_error *err) {
  SC_TRY(get_required_int(cfg, "d_model", &c->hidden, dir, err));
  SC_TRY(get_required_int(cfg, "n_layers", &c->n_layers, dir, err));
  SC_TRY(get_required_int(cfg, "n_heads", &c->n_heads, dir, err));
  c->n_kv_heads = c->n_heads; /* n_kv_heads null means multi-head attention */
  SC_TRY(get_int(cfg, "n_kv_heads", 1, 1 << 16, &c->n_kv_heads, NULL, dir, err));
  SC_CHECK(c->hidden % c->n_heads == 0, err, SC_ERR_FORMAT,
           "%s/config.json: d_model %d is not a multiple of n_heads %d", dir, c->hidden,
           c->n_heads);
  c->head_dim = c->hidden / c->n_heads;
  bool found = false;
  SC_TRY(get_int(cfg, "mlp_hidden_size", 1, 1 << 24, &c->intermediate, &found, dir, err));
  if (!found) {
    int ratio = 4;
    SC_TRY(get_int(cfg, "mlp_ratio", 1, 1 << 10, &ratio, NULL, dir, err));
    c->intermediate = ratio * c->hidden;
  }
  /* embedding_size (padded) is the real row count of wte and ff_out. */
  SC_TRY(get_int(cfg, "vocab_size", 1, 1 << 24, &c->vocab, &found, dir, err));
  bool has_emb = false;
  SC_TRY(get_int(cfg, "embedding_size", 1, 1 << 24, &c->vocab, &has_emb, dir, err));
  SC_CHECK(found || has_emb, err, SC_ERR_FORMAT,
           "%s/config.json: missing 'embedding_size' and 'vocab_size'", dir);
  c->rope_theta = 10000.0;
  c->rms_eps = 1e-5;
  SC_TRY(get_real(cfg, "rope_theta", &c->rope_theta, dir, err));
  SC_TRY(get_real(cfg, "rms_norm_eps", &c->rms_eps, dir, err));
  SC_TRY(get_bool(cfg, "weight_tying", &c->tie, dir, err));
  SC_TRY(get_int(cfg, "max_sequence_length", 1, 1 << 30, &c->max_positions, NULL, dir, err));
  int bias = 0, qkln = 0;
  SC_TRY(get_bool(cfg, "include_bias", &bias, dir, err));
  SC_TRY(get_bool(cfg, "attention_layer_norm", &qkln, dir, err));
  SC_CHECK(bias != 1, err, SC_ERR_UNSUPPORTED,
           "%s/config.json: include_bias=true is not supported for LLaDA", dir);
  SC_CHECK(qkln != 1, err, SC_ERR_UNSUPPORTED,
           "%s/config.json: attention_layer_norm=true is not supported for LLaDA", dir);
  json_t *bt = json_object_get(cfg, "block_type");
  SC_CHECK(!bt || (json_is_string(bt) && strcmp(json_string_value(bt), "llama") == 0), err,
           SC_ERR_UNSUPPORTED, "%s/config.json: only block_type \"llama\" is supported", dir);
  json_t *act = json_object_get(cfg, "activation_type");
  SC_CHECK(!act || (json_is_string(act) && strcmp(json_string_value(act), "silu") == 0), err,
           SC_ERR_UNSUPPORTED, "%s/config.json: only activation_type \"silu\" is supported",
           dir);
  c->qkv_bias = false;
  c->qk_norm = false;
  c->tie_default = false;
  return SC_OK;
}

/* generation_config.json, optional: the checkpoint's own decoding default.
 * Only "eos_penalty" is read (the name of Dream-Coder's generate() argument,
 * whose demos use 3.0 against EOS floods; ../shared/notes/diffusion-models.md).
 * The HF sampling keys (temperature, top_p) are left alone on purpose: an
 * editor wants greedy, repeatable completions unless the user asks. */
static sc_status read_generation(const char *dir, sc_config *c, sc_error *err) {
  sc_status st;
  json_t *g = load_json(dir, "generation_config.json", false, &st, err);
  if (!g) return st;
  json_t *v = json_object_get(g, "eos_penalty");
  if (v && !json_is_null(v)) {
    if (json_is_number(v) && fabs(json_number_value(v)) <= SC_EOS_PENALTY_MAX)
      c->eos_penalty = (float)json_number_value(v);
    else
      st = sc_error_set(err, SC_ERR_FORMAT,
                        "%s/generation_config.json: 'eos_penalty' must be a number in [-%g, %g]",
                        dir, SC_EOS_PENALTY_MAX, SC_EOS_PENALTY_MAX);
  }
  json_decref(g);
  return st;
}

int sc_config_context(const sc_config *c) {
  int n = c->max_positions > 0 && c->max_positions < SC_MODEL_MAX_CONTEXT ? c->max_positions
                                                                        : SC_MODEL_MAX_CONTEXT;
  if (c->sliding_window > 0 && c->sliding_window < n) n = c->sliding_window;
  return n;
}

sc_status sc_model_context_read(const char *dir, sc_model_family family, int *context,
                                sc_infill_frame *frame, sc_error *err) {
  SC_CHECK(dir && *dir && context, err, SC_ERR_INVALID, "no model folder given");
  sc_config c;
  SC_TRY(sc_config_load(dir, family, &c, err));
  *context = sc_config_context(&c);
  if (frame) {
    sc_infill_params p;
    sc_infill_params_default(&p);
    sc_family_frame_for(&c.profile, c.vocab, &p, frame);
  }
  return SC_OK;
}

sc_status sc_config_load(const char *dir, sc_model_family family, sc_config *c,
                         sc_error *err) {
  memset(c, 0, sizeof *c);
  c->tie = -1;
  sc_status st;
  json_t *cfg = load_json(dir, "config.json", true, &st, err);
  if (!cfg) return st;

  json_t *archs = json_object_get(cfg, "architectures");
  json_t *a0 = json_is_array(archs) ? json_array_get(archs, 0) : NULL;
  const char *arch = json_is_string(a0) ? json_string_value(a0) : "";
  json_t *mt = json_object_get(cfg, "model_type");
  const char *model_type = json_is_string(mt) ? json_string_value(mt) : "";
  snprintf(c->architecture, sizeof c->architecture, "%s", arch);

  c->family = family != SC_FAMILY_AUTO ? family : detect_family(arch, model_type);
  if (c->family == SC_FAMILY_AUTO) {
    st = sc_error_set(err, SC_ERR_UNSUPPORTED,
                      "%s/config.json: unknown model family (architectures '%s', model_type "
                      "'%s'); pass --family dream|qwen2|qwen3|llada",
                      dir, arch, model_type);
    goto out;
  }
  st = c->family == SC_FAMILY_LLADA ? read_llada(dir, cfg, c, err) : read_qwen(dir, cfg, c, err);
  if (st != SC_OK) goto out;
  if (c->n_heads % c->n_kv_heads != 0) {
    st = sc_error_set(err, SC_ERR_FORMAT,
                      "%s/config.json: %d attention heads are not a multiple of %d kv heads",
                      dir, c->n_heads, c->n_kv_heads);
    goto out;
  }
  if (c->head_dim % 2 != 0) {
    st = sc_error_set(err, SC_ERR_FORMAT, "%s/config.json: head_dim %d is odd (RoPE needs pairs)",
                      dir, c->head_dim);
    goto out;
  }
  c->shift_logits = c->family != SC_FAMILY_LLADA;
  json_t *sh = json_object_get(cfg, "shift_logits"); /* a checkpoint may say so itself */
  if (json_is_boolean(sh)) c->shift_logits = json_is_true(sh);
  st = read_special_ids(dir, cfg, c, err);
  if (st == SC_OK) st = read_generation(dir, c, err);
out:
  json_decref(cfg);
  return st;
}

/* fuzz_checkpoint.c — the checkpoint parsers under fuzzing: config.json,
 * the safetensors header, model.safetensors.index.json, tokenizer.json and
 * generation_config.json.
 * A checkpoint folder comes from whoever published it, so any bytes in any
 * of these files must give a clear error, never a crash, a leak or a read
 * outside the file.
 *
 * The first byte picks the file, the rest is its content; the other files
 * of the folder stay valid (tests/unit/test_checkpoint_fixture.h), so the
 * mutations reach past the first check:
 *   0  config.json                   (valid model.safetensors beside it)
 *   1  model.safetensors             (valid config.json)
 *   2  model.safetensors.index.json  (valid config.json, one valid shard
 *                                     named shard-1.safetensors)
 *   3  tokenizer.json
 *   4  generation_config.json        (a valid checkpoint beside it)
 * A checkpoint that loads runs one forward pass of 4 tokens; a tokenizer
 * that loads encodes and decodes a sample.
 *
 * SCULPT_FUZZ_WRITE_SEEDS=DIR writes the five valid inputs as seeds;
 * SCULPT_FUZZ_VERBOSE=1 prints what each input gave (for triage). */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "../unit/test_checkpoint_fixture.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

enum { M_CONFIG, M_WEIGHTS, M_INDEX, M_TOKENIZER, M_GENERATION, M_COUNT };

static char g_dir[M_COUNT][256];
static bool g_verbose;

static void say(const char *what, const sc_error *err) {
  if (g_verbose) fprintf(stderr, "%s: %s\n", what, err ? err->msg : "ok");
}

/* A small byte-level BPE tokenizer.json: the 256 byte symbols, two merges,
 * one added special token. */
static char *valid_tokenizer(void) {
  /* GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for
   * themselves, the rest are shifted to U+0100 onwards. */
  json_t *vocab = json_object();
  int shifted = 0;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    int cp = printable ? b : 256 + shifted++;
    char u[4];
    if (cp < 0x80) {
      u[0] = (char)cp;
      u[1] = 0;
    } else {
      u[0] = (char)(0xc0 | (cp >> 6));
      u[1] = (char)(0x80 | (cp & 0x3f));
      u[2] = 0;
    }
    json_object_set_new(vocab, u, json_integer(b));
  }
  json_object_set_new(vocab, "in", json_integer(256));
  json_object_set_new(vocab, "int", json_integer(257));
  json_t *root = json_pack(
      "{s:s, s:[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}], s:n, s:{s:s, s:b, s:b, s:b},"
      " s:{s:s, s:b, s:b, s:b}, s:{s:s, s:o, s:[s, s]}}",
      "version", "1.0", "added_tokens", "id", 258, "content", "<|endoftext|>", "single_word", 0,
      "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1, "normalizer", "pre_tokenizer",
      "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1, "decoder",
      "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1, "model",
      "type", "BPE", "vocab", vocab, "merges", "i n", "in t");
  char *s = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  return s;
}

/* The index of the single shard: every tensor of the fixture in it. */
static char *valid_index(void) {
  fx_ckpt c;
  fx_default(&c);
  json_t *wm = json_object();
  for (int i = 0; i < c.n; i++)
    json_object_set_new(wm, c.t[i].name, json_string("shard-1.safetensors"));
  json_t *root = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", wm);
  char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(root);
  return s;
}

static int write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(p, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static int read_all(const char *path, unsigned char **out, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc((size_t)len + 1);
  *n = *out ? fread(*out, 1, (size_t)len, f) : 0;
  fclose(f);
  return *out && *n == (size_t)len ? 0 : -1;
}

static void write_seed(const char *dir, const char *name, int mode, const unsigned char *p,
                       size_t n) {
  unsigned char *buf = malloc(n + 1);
  if (!buf) return;
  buf[0] = (unsigned char)mode;
  memcpy(buf + 1, p, n);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (write_bytes(path, buf, n + 1) != 0) fprintf(stderr, "cannot write %s\n", path);
  free(buf);
}

/* Indexed by mode for the first five. */
static const char *const k_names[] = {"config.json",          "model.safetensors",
                                      "model.safetensors.index.json", "tokenizer.json",
                                      "generation_config.json", "shard-1.safetensors"};

static void cleanup(void) {
  char p[512];
  for (int m = 0; m < M_COUNT; m++) {
    if (!g_dir[m][0]) continue;
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++) {
      snprintf(p, sizeof p, "%s/%s", g_dir[m], k_names[i]);
      unlink(p);
    }
    rmdir(g_dir[m]);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  for (int m = 0; m < M_COUNT; m++)
    if (fx_mkdtemp(g_dir[m], sizeof g_dir[m]) != 0) abort();
  /* Each folder holds the valid files; the fuzzed one is written per input. */
  fx_write_valid(g_dir[M_CONFIG]);
  fx_write_valid(g_dir[M_WEIGHTS]);
  fx_write_valid(g_dir[M_INDEX]);
  fx_write_valid(g_dir[M_GENERATION]);
  char a[512], b[512];
  snprintf(a, sizeof a, "%s/model.safetensors", g_dir[M_INDEX]);
  snprintf(b, sizeof b, "%s/shard-1.safetensors", g_dir[M_INDEX]);
  if (rename(a, b) != 0) abort();

  const char *v = getenv("SCULPT_FUZZ_VERBOSE");
  g_verbose = v && *v && strcmp(v, "0") != 0;
  const char *seeds = getenv("SCULPT_FUZZ_WRITE_SEEDS");
  if (seeds && *seeds) {
    unsigned char *buf = NULL;
    size_t n = 0;
    write_seed(seeds, "config", M_CONFIG, (const unsigned char *)fx_config, strlen(fx_config));
    if (read_all(b, &buf, &n) == 0) write_seed(seeds, "weights", M_WEIGHTS, buf, n);
    free(buf);
    char *index = valid_index();
    if (index) write_seed(seeds, "index", M_INDEX, (unsigned char *)index, strlen(index));
    free(index);
    char *tok = valid_tokenizer();
    if (tok) write_seed(seeds, "tokenizer", M_TOKENIZER, (unsigned char *)tok, strlen(tok));
    free(tok);
    static const char gen[] = "{\"eos_penalty\": 3.0, \"temperature\": 0.2, \"top_p\": 0.95}";
    write_seed(seeds, "generation", M_GENERATION, (const unsigned char *)gen, sizeof gen - 1);
  }
  atexit(cleanup);
  return 0;
}

static void try_model(const char *dir) {
  sc_model_options o = {0};
  o.max_seq = 16;
  o.n_threads = 1;
  sc_model *m = NULL;
  sc_error err = {0};
  if (sc_model_load(dir, &o, &m, &err) != SC_OK) {
    if (m || !err.msg[0]) __builtin_trap(); /* a failure always says why */
    say("model", &err);
    return;
  }
  const sc_model_info *info = sc_model_get_info(m);
  if (!(info->eos_penalty >= -100 && info->eos_penalty <= 100)) __builtin_trap();
  sc_forward_ctx *ctx = NULL;
  if (info->vocab > 0 && sc_forward_ctx_new(m, 8, &ctx, &err) == SC_OK) {
    int32_t ids[4];
    for (int i = 0; i < 4; i++) ids[i] = (int32_t)((i * 7) % info->vocab);
    float *logits = malloc((size_t)4 * (size_t)info->vocab * sizeof *logits);
    if (logits && sc_forward_ctx_run(ctx, ids, 4, NULL, 4, logits, &err) == SC_OK)
      say("model and forward", NULL);
    free(logits);
  }
  sc_forward_ctx_free(ctx);
  sc_model_free(m);
}

static void try_tokenizer(const char *path) {
  sc_tokenizer *t = NULL;
  sc_error err = {0};
  if (sc_tokenizer_load_file(path, &t, &err) != SC_OK) {
    if (t || !err.msg[0]) __builtin_trap();
    say("tokenizer", &err);
    return;
  }
  static const char sample[] = "int main(void) {\n  return 0; // ünï\xff\n}<|endoftext|>";
  int32_t *ids = NULL;
  size_t n = 0;
  if (sc_tokenizer_encode(t, sample, sizeof sample - 1, &ids, &n, &err) == SC_OK) {
    size_t vs = sc_tokenizer_vocab_size(t);
    for (size_t i = 0; i < n; i++)
      if (ids[i] < 0 || (size_t)ids[i] >= vs) __builtin_trap(); /* ids stay in the vocab */
    char *text = NULL;
    size_t len = 0;
    if (sc_tokenizer_decode(t, ids, n, &text, &len, &err) == SC_OK) {
      if (text[len] != '\0') __builtin_trap();
      say("tokenizer round trip", NULL);
    }
    free(text);
    for (size_t i = 0; i < n; i++) {
      const char *tok = sc_tokenizer_id_to_token(t, ids[i]);
      if (tok) sc_tokenizer_token_to_id(t, tok);
    }
  }
  free(ids);
  sc_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size == 0) return 0;
  int mode = data[0] % M_COUNT;
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_dir[mode], k_names[mode]);
  if (write_bytes(path, data + 1, size - 1) != 0) return 0;
  if (mode == M_TOKENIZER) try_tokenizer(path);
  else try_model(g_dir[mode]);
  return 0;
}

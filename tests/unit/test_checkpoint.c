/* test_checkpoint.c — sc_model_load on valid and corrupted checkpoints.
 * Every corruption must give one error naming the file (and the tensor when
 * there is one), never a crash; run under ASan+UBSan in the sanitize build. */
#include "test_checkpoint_fixture.h"

#include "model.h"
#include "sc_test.h"

static char g_dir[256];

/* Loads g_dir and expects failure with `status` and every needle in msg. */
static void expect_fail(const char *what, sc_status status, const char *n1, const char *n2) {
  sc_model *m = NULL;
  sc_error err = {0};
  sc_status st = sc_model_load(g_dir, NULL, &m, &err);
  EXPECTF(st == status, "%s: status %s, want %s (%s)", what, sc_status_name(st),
          sc_status_name(status), err.msg);
  EXPECTF(m == NULL, "%s: no model on failure", what);
  EXPECTF(!n1 || strstr(err.msg, n1), "%s: '%s' not in '%s'", what, n1, err.msg);
  EXPECTF(!n2 || strstr(err.msg, n2), "%s: '%s' not in '%s'", what, n2, err.msg);
  EXPECTF(strchr(err.msg, '\n') == NULL, "%s: one line", what);
  fprintf(stderr, "  %-28s -> %s\n", what, err.msg);
  sc_model_free(m);
}

/* Rewrites model.safetensors from c; `mutate` may change the header text. */
static void write_st(fx_ckpt *c, bool relayout, long long hlen, long long data_len_delta,
                     const char *header_override) {
  long long len = relayout ? fx_layout(c) : c->t[c->n - 1].end;
  char *h = fx_header(c);
  char p[512];
  snprintf(p, sizeof p, "%s/model.safetensors", g_dir);
  fx_write_file(p, c, header_override ? header_override : h, hlen, len + data_len_delta);
  free(h);
}

static void reset(void) {
  char p[512];
  fx_cleanup(g_dir);
  fx_mkdtemp(g_dir, sizeof g_dir);
  snprintf(p, sizeof p, "%s/config.json", g_dir);
  fx_write_text(p, fx_config);
}

static void test_valid(void) {
  reset();
  REQUIRE(fx_write_valid(g_dir) == 0);
  sc_model *m = NULL;
  sc_error err = {0};
  sc_status st = sc_model_load(g_dir, NULL, &m, &err);
  EXPECTF(st == SC_OK, "%s", err.msg);
  REQUIRE(m);
  const sc_model_info *i = sc_model_get_info(m);
  EXPECT(i->family == SC_FAMILY_DREAM);
  EXPECT(i->n_layers == 1 && i->hidden == 8 && i->n_heads == 2 && i->n_kv_heads == 1);
  EXPECT(i->head_dim == 4 && i->intermediate == 16 && i->vocab == 32);
  EXPECT(i->dtype == SC_DTYPE_F32 && i->qkv_bias && !i->qk_norm && !i->tied_embeddings);
  EXPECT(i->mask_id == 31 && i->eos_id == 30 && i->pad_id == 30 && i->bos_id == 29);
  EXPECT(i->shift_logits);
  fx_ckpt c;
  fx_default(&c);
  long long bytes = fx_layout(&c);
  EXPECT(i->weight_bytes == (uint64_t)bytes && i->n_params == bytes / 4);
  sc_model_free(m);
}

static void test_truncated(void) {
  reset();
  char p[512];
  snprintf(p, sizeof p, "%s/model.safetensors", g_dir);
  fx_write_text(p, "abc");
  expect_fail("file of 3 bytes", SC_ERR_FORMAT, "model.safetensors", "truncated");

  /* Header cut short: the length says more than the file holds. */
  fx_ckpt c;
  fx_default(&c);
  fx_layout(&c);
  char *h = fx_header(&c);
  h[strlen(h) / 2] = '\0';
  fx_write_file(p, &c, h, (long long)strlen(h) * 2, 0);
  free(h);
  expect_fail("truncated header", SC_ERR_FORMAT, "model.safetensors", "past the end");

  /* Data cut short: the last tensor ends beyond the file. */
  fx_default(&c);
  write_st(&c, true, -1, -10, NULL);
  expect_fail("truncated data", SC_ERR_FORMAT, "lm_head.weight", "past the end");
}

static void test_header_length(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  write_st(&c, true, 1LL << 40, 0, NULL);
  expect_fail("header length 1 TiB", SC_ERR_FORMAT, "model.safetensors", "header length");
  write_st(&c, true, 50000, 0, NULL);
  expect_fail("header length past EOF", SC_ERR_FORMAT, "model.safetensors", "past the end");
  write_st(&c, true, 1, 0, NULL);
  expect_fail("header length 1", SC_ERR_FORMAT, "model.safetensors", "header length");
}

static void test_bad_json(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  write_st(&c, true, -1, 0, "{\"model.norm.weight\": {\"dtype\": \"F32\",");
  expect_fail("invalid header JSON", SC_ERR_FORMAT, "model.safetensors", "not valid JSON");
  write_st(&c, true, -1, 0, "[1, 2, 3]");
  expect_fail("header not an object", SC_ERR_FORMAT, "model.safetensors", "not a JSON object");
  write_st(&c, true, -1, 0,
           "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [8], \"data_offsets\": [0]}}");
  expect_fail("data_offsets of one", SC_ERR_FORMAT, "model.norm.weight", "data_offsets");
  write_st(&c, true, -1, 0,
           "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [-8], \"data_offsets\": [0, 32]}}");
  expect_fail("negative shape", SC_ERR_FORMAT, "model.norm.weight", "shape");
  write_st(&c, true, -1, 0,
           "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 4],"
           " \"data_offsets\": [0, 32]}}");
  expect_fail("shape overflowing", SC_ERR_FORMAT, "model.norm.weight", NULL);
}

static void test_overlap(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  fx_layout(&c);
  /* q_proj (8x8) moves onto the embedding's bytes. */
  int q = fx_find(&c, "model.layers.0.self_attn.q_proj.weight");
  c.t[q].begin = 0;
  c.t[q].end = 256;
  write_st(&c, false, -1, 0, NULL);
  expect_fail("overlapping offsets", SC_ERR_FORMAT, "overlap", "self_attn.q_proj.weight");
}

static void test_offsets_past_eof(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  long long len = fx_layout(&c);
  int k = fx_find(&c, "model.norm.weight");
  c.t[k].begin = len + 1000;
  c.t[k].end = len + 1032;
  char *h = fx_header(&c);
  char p[512];
  snprintf(p, sizeof p, "%s/model.safetensors", g_dir);
  fx_write_file(p, &c, h, -1, len);
  free(h);
  expect_fail("offsets past EOF", SC_ERR_FORMAT, "model.norm.weight", "past the end");
}

static void test_size_mismatch(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  fx_layout(&c);
  int k = fx_find(&c, "model.layers.0.mlp.up_proj.weight");
  c.t[k].end -= 4; /* one float short of 16x8 */
  write_st(&c, false, -1, 0, NULL);
  expect_fail("bytes != numel * size", SC_ERR_FORMAT, "mlp.up_proj.weight", "need");
}

static void test_dtype(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  snprintf(c.t[fx_find(&c, "model.norm.weight")].dtype, 16, "F33");
  write_st(&c, true, -1, 0, NULL);
  expect_fail("unknown dtype", SC_ERR_FORMAT, "model.norm.weight", "unknown dtype");

  fx_default(&c);
  snprintf(c.t[fx_find(&c, "model.norm.weight")].dtype, 16, "I64");
  write_st(&c, true, -1, 0, NULL);
  expect_fail("known but unusable dtype", SC_ERR_UNSUPPORTED, "model.norm.weight", "I64");
}

static void test_shape_mismatch(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  /* k_proj as if there were two kv heads; the file itself is consistent. */
  c.t[fx_find(&c, "model.layers.0.self_attn.k_proj.weight")].shape[0] = 8;
  write_st(&c, true, -1, 0, NULL);
  expect_fail("shape vs config", SC_ERR_FORMAT, "self_attn.k_proj.weight", "config.json");
}

static void test_missing_tensor(void) {
  reset();
  fx_ckpt c;
  fx_default(&c);
  int k = fx_find(&c, "model.layers.0.mlp.down_proj.weight");
  c.t[k] = c.t[--c.n];
  write_st(&c, true, -1, 0, NULL);
  expect_fail("missing tensor", SC_ERR_FORMAT, "model.safetensors",
              "model.layers.0.mlp.down_proj.weight");
  fx_default(&c);
  c.n--; /* lm_head, with tie_word_embeddings false */
  write_st(&c, true, -1, 0, NULL);
  expect_fail("missing untied head", SC_ERR_FORMAT, "lm_head.weight", NULL);
}

static void test_bad_config(void) {
  char p[512];
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"{\"hidden_size\": 8,", "invalid JSON"},
      {"[]", "not a JSON object"},
      {"{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\"}", "family"},
      {"{\"model_type\": \"Dream\", \"hidden_size\": -8}", "hidden_size"},
      {"{\"model_type\": \"Dream\", \"hidden_size\": 8, \"num_hidden_layers\": 1,"
       " \"num_attention_heads\": 2, \"intermediate_size\": 16}", "vocab_size"},
      {"{\"model_type\": \"Dream\", \"hidden_size\": 8, \"num_hidden_layers\": 1,"
       " \"num_attention_heads\": 3, \"intermediate_size\": 16, \"vocab_size\": 32}",
       "multiple"},
      {"{\"model_type\": \"Dream\", \"hidden_size\": 8, \"num_hidden_layers\": 1,"
       " \"num_attention_heads\": 2, \"num_key_value_heads\": \"one\","
       " \"intermediate_size\": 16, \"vocab_size\": 32}", "num_key_value_heads"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    reset();
    fx_write_valid(g_dir);
    snprintf(p, sizeof p, "%s/config.json", g_dir);
    fx_write_text(p, cases[i].text);
    sc_status want = strstr(cases[i].needle, "family") ? SC_ERR_UNSUPPORTED : SC_ERR_FORMAT;
    expect_fail(cases[i].needle, want, "config.json", cases[i].needle);
  }
  reset();
  snprintf(p, sizeof p, "%s/config.json", g_dir);
  unlink(p);
  expect_fail("no config.json", SC_ERR_IO, "config.json", NULL);
  /* No weights at all. */
  reset();
  expect_fail("no safetensors", SC_ERR_IO, "model.safetensors", NULL);
}

static void test_shards(void) {
  reset();
  fx_ckpt all, a, b;
  fx_default(&all);
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  for (int i = 0; i < all.n; i++) {
    if (i % 2) b.t[b.n++] = all.t[i];
    else a.t[a.n++] = all.t[i];
  }
  json_t *wm = json_object();
  for (int i = 0; i < all.n; i++)
    json_object_set_new(wm, all.t[i].name,
                        json_string(i % 2 ? "model-00002-of-00002.safetensors"
                                          : "model-00001-of-00002.safetensors"));
  json_t *idx = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", wm);
  char p[512];
  snprintf(p, sizeof p, "%s/model.safetensors.index.json", g_dir);
  json_dump_file(idx, p, 0);
  json_decref(idx);
  long long la = fx_layout(&a), lb = fx_layout(&b);
  char *ha = fx_header(&a), *hb = fx_header(&b);
  snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", g_dir);
  fx_write_file(p, &a, ha, -1, la);
  expect_fail("missing shard", SC_ERR_IO, "model-00002-of-00002.safetensors", "missing");

  snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", g_dir);
  fx_write_file(p, &b, hb, -1, lb);
  sc_model *m = NULL;
  sc_error err = {0};
  EXPECTF(sc_model_load(g_dir, NULL, &m, &err) == SC_OK, "two shards load: %s", err.msg);
  sc_model_free(m);

  /* The index claims a tensor that its shard lacks. */
  b.n--;
  fx_layout(&b);
  free(hb);
  hb = fx_header(&b);
  fx_write_file(p, &b, hb, -1, b.t[b.n - 1].end);
  expect_fail("index lists an absent tensor", SC_ERR_FORMAT, "model-00002-of-00002.safetensors",
              all.t[all.n - 2].name);
  free(ha);
  free(hb);

  /* A shard name that climbs out of the folder is refused. */
  snprintf(p, sizeof p, "%s/model.safetensors.index.json", g_dir);
  fx_write_text(p, "{\"weight_map\": {\"model.norm.weight\": \"../x.safetensors\"}}");
  expect_fail("shard outside the folder", SC_ERR_FORMAT, "model.norm.weight", "plain file");
  fx_write_text(p, "{\"weight_map\": ");
  expect_fail("bad index JSON", SC_ERR_FORMAT, "index.json", "invalid JSON");
}

static void test_family_override(void) {
  reset();
  fx_write_valid(g_dir);
  sc_model_options o = {.family = SC_FAMILY_QWEN3};
  sc_model *m = NULL;
  sc_error err = {0};
  EXPECT(sc_model_load(g_dir, &o, &m, &err) == SC_ERR_FORMAT);
  EXPECTF(strstr(err.msg, "q_norm.weight"), "%s", err.msg);
  sc_model_free(m);
  sc_model_family f;
  EXPECT(sc_model_family_parse("CoDA", &f) && f == SC_FAMILY_QWEN3);
  EXPECT(sc_model_family_parse("open-dcoder", &f) && f == SC_FAMILY_QWEN2);
  EXPECT(!sc_model_family_parse("gpt2", &f));
  EXPECT_STREQ(sc_model_family_name(SC_FAMILY_LLADA), "llada");
}

int main(void) {
  fx_mkdtemp(g_dir, sizeof g_dir);
  RUN(test_valid);
  RUN(test_truncated);
  RUN(test_header_length);
  RUN(test_bad_json);
  RUN(test_overlap);
  RUN(test_offsets_past_eof);
  RUN(test_size_mismatch);
  RUN(test_dtype);
  RUN(test_shape_mismatch);
  RUN(test_missing_tensor);
  RUN(test_bad_config);
  RUN(test_shards);
  RUN(test_family_override);
  fx_cleanup(g_dir);
  TEST_MAIN_END();
}

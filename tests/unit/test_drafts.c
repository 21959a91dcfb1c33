/* test_drafts.c — drafts in the engine (model.h, sc_draft) on planted
 * checkpoints whose right middle is known (tools/planted_checkpoints.py):
 * the successor models write prefix's last + 1, + 2, ... up to 59, then
 * EOS, and only the leftmost mask is ever confident, so without drafts the
 * canvas fills one token per pass. Checks: a right draft is accepted in one
 * pass, a wrong one is rejected and the model's own tokens are written, a
 * draft that ends the middle sets the canvas length, drafts across blocks,
 * with and without the dual cache, several lengths, a session, the
 * upstream loops, and the acceptance threshold itself. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h" /* the acceptance rule, tested alone */
#include "model.h"
#include "sc_test.h"
#include "sc_test_models.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int32_t PREFIX[] = {5, 7, 50}, SUFFIX[] = {3, 4};

/* The middle 51..59 (nine tokens), as every check below expects. */
static bool right_middle(const sc_infill_result *r) {
  if (r->n_ids != 9) return false;
  for (int i = 0; i < 9; i++)
    if (r->ids[i] != 51 + i) return false;
  return true;
}

static sc_status run(sc_engine *e, const sc_infill_params *p, int m, sc_infill_result *r) {
  sc_infill_plan plan = {1, {m}};
  sc_error err = {0};
  sc_status st = sc_engine_infill(e, PREFIX, 3, SUFFIX, 2, &plan, p, NULL, NULL, NULL, r, &err);
  if (st != SC_OK) fprintf(stderr, "infill: %s\n", err.msg);
  return st;
}

static void check_model(const char *name) {
  sc_model *m = load(name);
  REQUIRE(m);
  sc_engine *e = NULL;
  REQUIRE(sc_engine_new(m, NULL, 256, &e, NULL) == SC_OK);
  sc_infill_params p;
  sc_infill_params_default(&p);
  sc_infill_result r;

  /* Without drafts: one token a pass, nine and the EOS. */
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECTF(right_middle(&r) && r.steps == 10, "%s: no drafts: %d tokens, %d steps", name,
          r.n_ids, r.steps);
  EXPECT(r.drafted == 0 && r.accepted == 0 && r.rejected == 0);
  sc_infill_result_free(&r);

  /* A right draft of five: all five accepted in the first pass, and the
   * sixth (whose row now sees 55) committed by the schedule in the same
   * pass; then 57, 58, 59 and the EOS, one a pass. */
  int32_t right[] = {51, 52, 53, 54, 55};
  sc_draft d = {right, 5, 0, false};
  p.drafts = &d;
  p.n_drafts = 1;
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECTF(right_middle(&r), "%s: right draft: %d tokens", name, r.n_ids);
  EXPECTF(r.steps == 5, "%s: right draft: %d steps", name, r.steps);
  EXPECTF(r.drafted == 5 && r.accepted == 5 && r.rejected == 0, "%s: %d drafted, %d accepted",
          name, r.drafted, r.accepted);
  EXPECT(r.confidence[0] > 0.99f && r.confidence[4] > 0.99f);
  sc_infill_result_free(&r);

  /* A wrong draft: 51 and 52 pass, 40 does not. The rest of it becomes
   * masks again, and the rejected position gets the model's own 53 in the
   * same pass; the draft is not tried again. */
  int32_t wrong[] = {51, 52, 40, 41};
  d = (sc_draft){wrong, 4, 0, false};
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECTF(right_middle(&r), "%s: wrong draft: %d tokens, first %d", name, r.n_ids,
          r.n_ids ? r.ids[0] : -1);
  EXPECTF(r.steps == 8, "%s: wrong draft: %d steps", name, r.steps);
  EXPECTF(r.drafted == 4 && r.accepted == 2 && r.rejected == 2, "%s: %d/%d/%d", name,
          r.drafted, r.accepted, r.rejected);
  sc_infill_result_free(&r);

  /* Wrong from its first token: nothing accepted, and the pass still
   * commits the model's own token there (every step makes progress). */
  int32_t bad[] = {40, 41, 42};
  d = (sc_draft){bad, 3, 0, false};
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECT(right_middle(&r) && r.steps == 10);
  EXPECT(r.drafted == 3 && r.accepted == 0 && r.rejected == 3);
  sc_infill_result_free(&r);

  /* A draft that ends the middle: accepted whole, it sets the canvas
   * length, and the middle is it (the model would have gone on to 59). */
  int32_t ends[] = {51, 52, 53};
  d = (sc_draft){ends, 3, 0, true};
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECTF(r.n_ids == 3 && r.ids[0] == 51 && r.ids[2] == 53, "%s: ending draft: %d tokens",
          name, r.n_ids);
  EXPECTF(r.canvas_len == 3 && r.steps == 1 && r.ended, "%s: canvas %d, %d steps", name,
          r.canvas_len, r.steps);
  sc_infill_result_free(&r);
  /* The same draft rejected in part does not end anything. */
  int32_t ends_bad[] = {51, 52, 9};
  d = (sc_draft){ends_bad, 3, 0, true};
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECT(right_middle(&r) && r.canvas_len == 16);
  sc_infill_result_free(&r);

  /* Ranked drafts: one that disagrees with what was committed dies, the
   * next one that agrees is placed. The first is rejected at 40 (the model
   * writes 53); the second agrees with 51 52 53 and carries on to 58. */
  int32_t first[] = {51, 52, 40}, second[] = {51, 52, 53, 54, 55, 56, 57, 58};
  sc_draft two[2] = {{first, 3, 0, false}, {second, 8, 0, false}};
  p.drafts = two;
  p.n_drafts = 2;
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECT(right_middle(&r));
  /* pass 1: 51 52 accepted, 53 the model's; pass 2: 54..58 from the second
   * draft and 59 by the schedule; pass 3: the EOS. */
  EXPECTF(r.steps == 3 && r.accepted == 7, "%s: ranked: %d steps, %d accepted", name, r.steps,
          r.accepted);
  sc_infill_result_free(&r);

  /* The threshold decides: at 0 every drafted token passes, a wrong one
   * too; the default rejects 40 where the model is sure of 51 (its row's
   * entropy is near 0, so the test asks p >= the threshold itself). */
  d = (sc_draft){bad, 3, 0, false};
  p.drafts = &d;
  p.n_drafts = 1;
  p.draft_threshold = 0.0f;
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECTF(r.n_ids >= 3 && r.ids[0] == 40 && r.ids[2] == 42 && r.accepted == 3,
          "%s: threshold 0: %d accepted", name, r.accepted);
  sc_infill_result_free(&r);
  d = (sc_draft){right, 5, 0, false};
  p.draft_threshold = SC_DRAFT_THRESHOLD_DEFAULT;

  /* Across blocks of 4, with the dual cache and without. */
  int32_t long_right[] = {51, 52, 53, 54, 55, 56, 57};
  d = (sc_draft){long_right, 7, 0, false};
  for (int cache = 0; cache < 2; cache++) {
    p.block_len = 4;
    p.use_cache = cache;
    REQUIRE(run(e, &p, 12, &r) == SC_OK);
    /* block 0: 51..54 in one pass; block 1: 55..57 drafted and 58 by the
     * schedule in one pass; block 2: 59, then the EOS. */
    EXPECTF(right_middle(&r) && r.steps == 4 && r.accepted == 7,
            "%s: blocks, cache %d: %d steps, %d accepted", name, cache, r.steps, r.accepted);
    sc_infill_result_free(&r);
  }
  p.block_len = 32;
  p.use_cache = true;

  /* Several lengths, decoded as one batch (no cache): each gets the draft. */
  sc_infill_plan plan2 = {2, {12, 16}};
  sc_error err = {0};
  REQUIRE(sc_engine_infill(e, PREFIX, 3, SUFFIX, 2, &plan2, &p, NULL, NULL, NULL, &r, &err) ==
          SC_OK);
  /* (steps counts the shared passes) */
  EXPECTF(right_middle(&r) && r.accepted == 14 && r.steps == 3, "%s: lengths: %d accepted, %d steps",
          name, r.accepted, r.steps);
  sc_infill_result_free(&r);

  /* Through a session (K/V reused from the request before: a prompt long
   * enough that the reuse's margins leave some). */
  int32_t long_pre[48], long_suf[24];
  for (int i = 0; i < 48; i++) long_pre[i] = i % 40;
  long_pre[47] = 50;
  for (int i = 0; i < 24; i++) long_suf[i] = (i * 7) % 50;
  sc_infill_session *s = NULL;
  REQUIRE(sc_infill_session_new(NULL, &s, NULL) == SC_OK);
  for (int i = 0; i < 2; i++) {
    sc_infill_plan plan = {1, {16}};
    REQUIRE(sc_engine_infill_session(e, s, long_pre, 48, long_suf, 24, &plan, &p, NULL, NULL,
                                     NULL, &r, &err) == SC_OK);
    EXPECTF(right_middle(&r) && r.accepted == 7 && r.steps == 3,
            "%s: session: %d accepted, %d steps", name, r.accepted, r.steps);
    EXPECTF(i == 0 || r.kv_reused > 0, "%s: session: %d reused", name, r.kv_reused);
    sc_infill_result_free(&r);
  }
  sc_infill_session_free(s);

  /* Malformed drafts are refused, not read. */
  int32_t oob[] = {51, 9999};
  d = (sc_draft){oob, 2, 0, false};
  EXPECT(run(e, &p, 16, &r) == SC_ERR_INVALID);
  p.draft_threshold = 1.5f;
  d = (sc_draft){right, 5, 0, false};
  EXPECT(run(e, &p, 16, &r) == SC_ERR_INVALID);
  p.draft_threshold = SC_DRAFT_THRESHOLD_DEFAULT;

  /* A draft with nothing to add (offset past the canvas) changes nothing. */
  d = (sc_draft){right, 5, 40, false};
  REQUIRE(run(e, &p, 16, &r) == SC_OK);
  EXPECT(right_middle(&r) && r.steps == 10 && r.drafted == 0);
  sc_infill_result_free(&r);

  /* The upstream preset's loop (one-per-step for dream, llada's blocks for
   * llada), drafts on request: the right draft saves passes there too, and
   * the wrong one leaves the model's middle. */
  sc_infill_params u;
  sc_infill_params_for(m, SC_PRESET_UPSTREAM, &u);
  u.temperature = 0;
  REQUIRE(run(e, &u, 16, &r) == SC_OK);
  int base_steps = r.steps;
  EXPECT(right_middle(&r));
  sc_infill_result_free(&r);
  d = (sc_draft){right, 5, 0, false};
  u.drafts = &d;
  u.n_drafts = 1;
  REQUIRE(run(e, &u, 16, &r) == SC_OK);
  EXPECTF(right_middle(&r) && r.accepted == 5 && r.steps < base_steps,
          "%s: upstream %s: %d steps against %d, %d accepted", name,
          sc_decode_loop_name(u.loop), r.steps, base_steps, r.accepted);
  sc_infill_result_free(&r);
  d = (sc_draft){wrong, 4, 0, false};
  REQUIRE(run(e, &u, 16, &r) == SC_OK);
  EXPECT(right_middle(&r) && r.accepted == 2 && r.rejected == 2);
  sc_infill_result_free(&r);
  d = (sc_draft){ends, 3, 0, true};
  REQUIRE(run(e, &u, 16, &r) == SC_OK);
  EXPECTF(r.n_ids == 3 && r.canvas_len == 3 && r.steps == 1, "%s: upstream ending: %d tokens",
          name, r.n_ids);
  sc_infill_result_free(&r);

  sc_engine_free(e);
  sc_model_free(m);
}

static void test_shifted(void) { check_model("planted-successor-shifted"); }
static void test_unshifted(void) { check_model("planted-successor-unshifted"); }

/* sc_pick_prob agrees with the picker's own p for the token it picks, and
 * with a softmax computed here for another, under temperature, penalty and
 * bans. */
static void test_pick_prob(void) {
  enum { V = 6 };
  float l[V] = {1.0f, 3.0f, 0.5f, 2.0f, -1.0f, 2.5f};
  uint8_t banned[V] = {0, 0, 0, 0, 1, 0};
  sc_pick_row_params rp = {0.7f, 1.5f, 42};
  sc_pick_params pp = {&rp, banned, 5, -1, NULL, 0};
  double z[V];
  sc_row_pick out;
  rp.temperature = 0; /* greedy: the argmax */
  sc_pick_rows(l, 1, V, &pp, z, &out);
  sc_draft_score ds = {-1, -1};
  EXPECT(fabs(sc_pick_prob(l, V, &rp, &pp, out.token, &ds) - out.p) < 1e-12);
  EXPECT(fabs(ds.p - out.p) < 1e-12 && fabs(ds.top - out.max_prob) < 1e-12);
  /* Token 3 (logit 2.0) against the favourite 1 (3.0): e^-1 as likely. */
  EXPECT(fabs(sc_pick_prob(l, V, &rp, &pp, 3, &ds) / ds.top - exp(2.0 - 3.0)) < 1e-9);
  EXPECT(sc_pick_prob(l, V, &rp, &pp, 4, &ds) == 0.0 && ds.top == 0.0); /* banned */
  rp.temperature = 0.7f;
  double s = 0, want = 0;
  for (int t = 0; t < V; t++) {
    if (banned[t]) continue;
    double v = (l[t] - (t == 5 ? 1.5 : 0)) / (double)0.7f;
    s += exp(v);
    if (t == 3) want = exp(v);
  }
  EXPECT(fabs(sc_pick_prob(l, V, &rp, &pp, 3, NULL) - want / s) < 1e-9);
  EXPECT(sc_pick_prob(l, V, &rp, &pp, 4, NULL) == 0.0); /* banned */
  EXPECT(sc_pick_prob(l, V, &rp, &pp, 99, NULL) == 0.0);
  l[2] = NAN;
  EXPECT(sc_pick_prob(l, V, &rp, &pp, 3, NULL) == 0.0);
}

/* The acceptance rule itself (model/draft.c): p >= thr p_top, relative
 * to the row's favourite, so a diffuse row keeps a token a sure row would
 * not; a banned token (p 0) never stays; the leading run that passes
 * stays, the rest is masked again. */
static void test_ratio_acceptance(void) {
  int32_t ids[3] = {7, 8, 9};
  sc_draft d = {ids, 3, 0, false};
  sc_infill_params p;
  sc_infill_params_default(&p);
  p.drafts = &d;
  p.n_drafts = 1;
  sc_draft_run dr;
  REQUIRE(sc_draft_run_init(&dr, &p, 8, NULL) == SC_OK);
  int32_t cv[8];
  for (int i = 0; i < 8; i++) cv[i] = 99;
  REQUIRE(sc_draft_place(&dr, cv, 8, 99, 0, 8) == 3 && cv[0] == 7 && cv[2] == 9);
  /* thr 0.09: 0.05 passes beside a favourite of 0.5 (0.1 of it), 0.002
   * beside 0.01 (0.2: a diffuse row), 0.05 fails beside a sure 0.9. */
  dr.s[0] = (sc_draft_score){0.05, 0.5};
  dr.s[1] = (sc_draft_score){0.002, 0.01};
  dr.s[2] = (sc_draft_score){0.05, 0.9};
  int rej = -2;
  EXPECT(sc_draft_accept(&dr, cv, 99, 0.09f, &rej) == 2);
  EXPECT(rej == 2 && cv[2] == 99 && cv[0] == 7 && cv[1] == 8);
  EXPECT(dr.dead[0] && dr.accepted == 2 && dr.drafted == 3);
  /* A dead draft is not placed again. */
  EXPECT(sc_draft_place(&dr, cv, 8, 99, 0, 8) == 0);
  sc_draft_run_free(&dr);
  /* thr 0 keeps every token the rules allow, and never a banned one. */
  REQUIRE(sc_draft_run_init(&dr, &p, 8, NULL) == SC_OK);
  for (int i = 0; i < 8; i++) cv[i] = 99;
  REQUIRE(sc_draft_place(&dr, cv, 8, 99, 0, 8) == 3);
  dr.s[0] = (sc_draft_score){1e-9, 0.99};
  dr.s[1] = (sc_draft_score){0.0, 0.0};
  dr.s[2] = (sc_draft_score){0.5, 0.5};
  EXPECT(sc_draft_accept(&dr, cv, 99, 0.0f, &rej) == 1 && rej == 1 && cv[1] == 99);
  sc_draft_run_free(&dr);
}

int main(void) {
  if (sc_test_make_models("drafts-checkpoints", "--only dream-bf16") != 0) return 1;
  sc_log_set_stderr_level(SC_LOG_WARN);
  RUN(test_shifted);
  RUN(test_unshifted);
  RUN(test_pick_prob);
  RUN(test_ratio_acceptance);
  TEST_MAIN_END();
}

/* engine.c — masked-diffusion infill: parallel refinement of a canvas.
 *
 * One call decodes each candidate canvas length in turn and keeps the one
 * with the best mean log-confidence. Inside a candidate, the canvas is
 * split into blocks decoded left to right (semi-autoregressive, as LLaDA);
 * inside a block every masked position is predicted in parallel each step,
 * and the schedule commits the best ones: all above a threshold (Fast-dLLM)
 * or a fixed share of the block per step (LLaDA). A row's token is picked
 * by model.h's rules (sc_pick_params) where its logits are: on a GPU in
 * the lm_head epilogue, on the CPU by model/pick.c in double precision.
 * The noise's uniform has 23 bits on both (LLaDA's note: low-precision
 * Gumbel noise hurts): the noise stays in [-2.8, 16.6], so only a token
 * more than 19.4 nats below the top one (at T = 1) can never be drawn.
 * Top-k and top-p rows are picked here, on the host. The noise is keyed by
 * (seed, candidate, step, position), so a row's sample never depends on
 * what shares its pass.
 * Sources: ../shared/notes/diffusion-models.md, section B. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model_impl.h" /* sc_model_nonfinite_error: the checkpoint's name */

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct sc_engine {
  sc_model *model;         /* borrowed */
  const sc_tokenizer *tok; /* borrowed, may be NULL */
  const sc_model_info *info;
  const sc_family_profile *prof; /* how the family frames and ends (family.c) */
  sc_forward_ctx *fctx;
  int max_seq, vocab;
  int32_t expand_id;  /* DreamOn's expand token (the profile's), or -1 */
  /* [vocab] 1 = never picked: the mask, ids the tokenizer has no token for
   * (padding rows of the embedding) and the expand token; banned_dreamon
   * allows the expand token (a DreamOn canvas that may still grow). */
  uint8_t *banned, *banned_dreamon;
  sc_pick_row_params *prow; /* [cap_rows] this step's per-row pick parameters */
  sc_row_pick *rpick;       /* [cap_rows] this step's picks */
  int cap_rows;       /* rows the per-step buffers below hold */
  sc_forward_ctx *bctx; /* packed passes over several candidates (a batch) */
  int batch_cap;      /* positions bctx holds */
  float *logits;      /* [max_seq][vocab]: lm_head rows of one step */
  int32_t *rows;      /* [max_seq] rows asked of the lm_head */
  int32_t *positions; /* [max_seq] the canvas positions those rows predict */
  double *z;          /* [vocab] one row's adjusted logits */
  int32_t *cand;      /* [vocab] indices kept by top-k/top-p */
  int32_t *seq;       /* [max_seq] the token sequence being refined */
  float *conf;        /* [max_seq] committed confidences */
  double *score;      /* [max_seq] ranking scores of this step */
  int32_t *pick;      /* [max_seq] predicted tokens of this step */
  float *pprob;       /* [max_seq] their probabilities */
  int32_t *order;     /* [max_seq] scratch for sorting */
  sc_draft_score *sdraft; /* [max_seq] how each drafted row scored its drafted token */
  /* What fctx's K/V cache holds (sessions, below): kv_ids[i] is the token
   * whose K/V position i holds, for kv_n positions, computed for session
   * kv_session (0: no session; nothing to reuse). */
  int32_t *kv_ids;
  int kv_n;
  uint64_t kv_session;
};

/* ---- parameters ------------------------------------------------------------ */

void sc_infill_params_default(sc_infill_params *p) {
  memset(p, 0, sizeof *p);
  p->rank = SC_RANK_CONFIDENCE;
  p->schedule = SC_SCHEDULE_THRESHOLD;
  p->threshold = 0.9f;
  p->block_len = 32;
  p->temperature = 0.0;
  p->top_p = 1.0;
  p->top_k = 0;
  p->seed = 0;
  p->eos_penalty = NAN;
  p->use_cache = true;
  p->draft_threshold = SC_DRAFT_THRESHOLD_DEFAULT;
}

bool sc_infill_algorithm_parse(const char *name, sc_infill_params *p) {
  if (!name) return false;
  if (strcmp(name, "threshold") == 0) {
    p->rank = SC_RANK_CONFIDENCE;
    p->schedule = SC_SCHEDULE_THRESHOLD;
  } else if (strcmp(name, "confidence") == 0) {
    p->rank = SC_RANK_CONFIDENCE;
    p->schedule = SC_SCHEDULE_FIXED_K;
  } else if (strcmp(name, "margin") == 0) {
    p->rank = SC_RANK_MARGIN;
    p->schedule = SC_SCHEDULE_FIXED_K;
  } else if (strcmp(name, "entropy") == 0) {
    p->rank = SC_RANK_ENTROPY;
    p->schedule = SC_SCHEDULE_FIXED_K;
  } else {
    return false;
  }
  return true;
}

void sc_infill_result_free(sc_infill_result *r) {
  if (!r) return;
  free(r->ids);
  free(r->confidence);
  free(r->text);
  free(r->canvas_ids);
  memset(r, 0, sizeof *r);
}

/* ---- engine ------------------------------------------------------------------ */

sc_status sc_engine_new(sc_model *model, const sc_tokenizer *tok, int max_seq,
                        sc_engine **out, sc_error *err) {
  *out = NULL;
  SC_CHECK(model, err, SC_ERR_INVALID, "engine: no model");
  sc_engine *e = calloc(1, sizeof *e);
  SC_CHECK(e, err, SC_ERR_NOMEM, "engine: out of memory");
  e->model = model;
  e->tok = tok;
  e->info = sc_model_get_info(model);
  e->prof = sc_model_get_profile(model);
  e->max_seq = max_seq > 0 ? max_seq : e->info->max_seq;
  e->vocab = e->info->vocab;
  /* DreamOn's expand token comes with the family profile (family.c). */
  e->expand_id = e->prof->expand_id < e->vocab ? e->prof->expand_id : -1;
  e->banned = calloc((size_t)e->vocab, 1);
  e->banned_dreamon = calloc((size_t)e->vocab, 1);
  if (!e->banned || !e->banned_dreamon) {
    sc_engine_free(e);
    return sc_error_set(err, SC_ERR_NOMEM, "engine: out of memory");
  }
  for (int i = 0; tok && i < e->vocab; i++)
    e->banned[i] = e->banned_dreamon[i] = sc_tokenizer_id_to_token(tok, i) == NULL;
  /* Never predict the mask itself. */
  if (e->info->mask_id >= 0 && e->info->mask_id < e->vocab)
    e->banned[e->info->mask_id] = e->banned_dreamon[e->info->mask_id] = 1;
  if (e->expand_id >= 0) e->banned[e->expand_id] = 1;
  sc_status st = sc_forward_ctx_new(model, e->max_seq, &e->fctx, err);
  if (st != SC_OK) {
    sc_engine_free(e);
    return st;
  }
  size_t S = (size_t)e->max_seq, V = (size_t)e->vocab;
  e->logits = malloc(S * V * sizeof *e->logits);
  e->rows = malloc(S * sizeof *e->rows);
  e->positions = malloc(S * sizeof *e->positions);
  e->z = malloc(V * sizeof *e->z);
  e->cand = malloc(V * sizeof *e->cand);
  e->seq = malloc(S * sizeof *e->seq);
  e->conf = malloc(S * sizeof *e->conf);
  e->score = malloc(S * sizeof *e->score);
  e->pick = malloc(S * sizeof *e->pick);
  e->pprob = malloc(S * sizeof *e->pprob);
  e->order = malloc(S * sizeof *e->order);
  e->sdraft = malloc(S * sizeof *e->sdraft);
  e->prow = malloc(S * sizeof *e->prow);
  e->rpick = malloc(S * sizeof *e->rpick);
  e->kv_ids = malloc(S * sizeof *e->kv_ids);
  e->cap_rows = e->max_seq;
  if (!e->logits || !e->rows || !e->positions || !e->z || !e->cand || !e->seq ||
      !e->conf || !e->score || !e->pick || !e->pprob || !e->order || !e->prow || !e->rpick ||
      !e->kv_ids || !e->sdraft) {
    sc_engine_free(e);
    return sc_error_set(err, SC_ERR_NOMEM, "engine: out of memory for %d positions x %d vocab",
                        e->max_seq, e->vocab);
  }
  *out = e;
  return SC_OK;
}

void sc_engine_free(sc_engine *e) {
  if (!e) return;
  sc_forward_ctx_free(e->fctx);
  sc_forward_ctx_free(e->bctx);
  free(e->banned);
  free(e->banned_dreamon);
  free(e->prow);
  free(e->rpick);
  free(e->logits);
  free(e->rows);
  free(e->positions);
  free(e->z);
  free(e->cand);
  free(e->seq);
  free(e->conf);
  free(e->score);
  free(e->pick);
  free(e->pprob);
  free(e->order);
  free(e->sdraft);
  free(e->kv_ids);
  free(e);
}

/* ---- one row: filter, sample, score --------------------------------------- */

typedef struct row_pick {
  int32_t token;
  double p;     /* probability of token under the filtered distribution */
  double score; /* ranking score in [0, 1]-comparable form, see sc_infill_params */
  bool nonfinite; /* a logit of the row was NaN or infinite: nothing was picked */
} row_pick;

/* qsort has no context argument in C17; the row being sorted is a global of
 * this call chain only, so keep it thread-local. */
static _Thread_local const double *g_sort_z;
static int cmp_cand_desc(const void *a, const void *b) {
  double za = g_sort_z[*(const int32_t *)a], zb = g_sort_z[*(const int32_t *)b];
  if (za > zb) return -1;
  if (za < zb) return 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

/* The ranking score of a pick under p->rank, comparable in [0, 1]. */
static double pick_score(const sc_row_pick *rp, const sc_infill_params *p) {
  switch (p->rank) {
  case SC_RANK_MARGIN: return rp->margin;
  case SC_RANK_ENTROPY: return exp(-rp->entropy); /* 1 when certain */
  case SC_RANK_CONFIDENCE: break;
  }
  return rp->p;
}

static float eos_penalty(const sc_engine *e, const sc_infill_params *p) {
  return isnan(p->eos_penalty) ? e->info->eos_penalty : p->eos_penalty;
}

/* True when rows of p are picked by model.h's rules alone (no top-k/top-p
 * that removes anything), which a GPU applies on the device; a GPU's
 * epilogue penalises two end ids, so a family with more (and a penalty)
 * has its rows picked on the host. */
static bool unfiltered(const sc_engine *e, const sc_infill_params *p) {
  if (e->prof->n_end > 2 && eos_penalty(e, p) != 0.0f &&
      sc_forward_ctx_picks_on_device(e->fctx))
    return false;
  return !(p->top_k > 0 && p->top_k < e->vocab) && !(p->top_p > 0 && p->top_p < 1.0);
}

static sc_pick_row_params row_params(const sc_engine *e, const sc_infill_params *p,
                                     uint64_t key) {
  sc_pick_row_params r = {p->temperature > 0 ? (float)p->temperature : 0.0f, eos_penalty(e, p),
                          key};
  return r;
}

/* The EOS penalty falls on every end token of the family. */
static sc_pick_params pick_params(const sc_engine *e, const uint8_t *banned,
                                  const sc_pick_row_params *rows) {
  const sc_family_profile *pf = e->prof;
  sc_pick_params pp = {rows, banned, pf->n_end > 0 ? pf->end_ids[0] : -1,
                       pf->n_end > 1 ? pf->end_ids[1] : -1, pf->end_ids + 2,
                       pf->n_end > 2 ? pf->n_end - 2 : 0};
  return pp;
}

/* One row on the host: model/pick.c for an unfiltered row; otherwise the
 * same rules over the top-k, then top-p, set, with the same noise. */
static row_pick sample_row(sc_engine *e, const float *logits, const sc_infill_params *p,
                           bool allow_expand, uint64_t key) {
  const int V = e->vocab;
  const uint8_t *banned = allow_expand ? e->banned_dreamon : e->banned;
  row_pick out;
  if (unfiltered(e, p)) {
    sc_pick_row_params rp = row_params(e, p, key);
    sc_pick_params pp = pick_params(e, banned, &rp);
    sc_row_pick r;
    sc_pick_rows(logits, 1, V, &pp, e->z, &r);
    out.token = r.token;
    out.p = r.p;
    out.score = pick_score(&r, p);
    out.nonfinite = r.nonfinite;
    return out;
  }
  double *z = e->z;
  double inv_t = p->temperature > 0 ? 1.0 / p->temperature : 1.0;
  bool nonfinite = false;
  for (int i = 0; i < V; i++) {
    nonfinite |= !isfinite(logits[i]); /* as model/pick.c's pass does */
    z[i] = banned[i] ? -INFINITY : (double)logits[i] * inv_t;
  }
  if (nonfinite) return (row_pick){0, 0.0, 0.0, true};
  out.nonfinite = false;
  const float pen = eos_penalty(e, p);
  for (int k = 0; pen != 0.0f && k < e->prof->n_end; k++)
    if (e->prof->end_ids[k] < V) z[e->prof->end_ids[k]] -= pen * inv_t;

  /* The kept set: the top-k, then the top-p nucleus. Sort only what can
   * matter: candidates within 30 nats of the maximum hold all but e^-30 of
   * the mass. */
  int32_t *cand = e->cand;
  int nc = 0;
  double m = -INFINITY;
  for (int i = 0; i < V; i++)
    if (z[i] > m) m = z[i];
  for (int i = 0; i < V; i++)
    if (z[i] > m - 30.0) cand[nc++] = i;
  g_sort_z = z;
  qsort(cand, (size_t)nc, sizeof *cand, cmp_cand_desc);
  if (p->top_k > 0 && nc > p->top_k) nc = p->top_k;
  double s = 0;
  for (int i = 0; i < nc; i++) s += exp(z[cand[i]] - m);
  if (p->top_p > 0 && p->top_p < 1.0) {
    double acc = 0;
    int keep = nc;
    for (int i = 0; i < nc; i++) {
      acc += exp(z[cand[i]] - m) / s;
      if (acc >= p->top_p) {
        keep = i + 1;
        break;
      }
    }
    nc = keep;
    s = 0;
    for (int i = 0; i < nc; i++) s += exp(z[cand[i]] - m);
  }
  double lse = m + log(s);

  /* Choose: argmax when greedy, else Gumbel-max over the kept set. */
  int32_t best = -1;
  double best_v = -INFINITY, p1 = 0, p2 = 0, plogp = 0;
  for (int k = 0; k < nc; k++) {
    int i = cand[k];
    if (z[i] == -INFINITY) continue;
    double lp = z[i] - lse;
    double pi = exp(lp);
    plogp += pi * lp;
    if (pi > p1) {
      p2 = p1;
      p1 = pi;
    } else if (pi > p2) {
      p2 = pi;
    }
    double v = lp;
    if (p->temperature > 0) v += -log(-log((double)sc_pick_uniform(key, (uint64_t)i)));
    if (v > best_v) {
      best_v = v;
      best = i;
    }
  }
  out.token = best >= 0 ? best : 0;
  out.p = best >= 0 ? exp(z[best] - lse) : 0;
  out.score = p->rank == SC_RANK_MARGIN ? p1 - p2 : p->rank == SC_RANK_ENTROPY ? exp(plogp) : out.p;
  return out;
}

/* ---- one candidate --------------------------------------------------------- */

typedef sc_cand cand_state; /* infill_impl.h */

/* Sorts order[0..k) by score descending, position ascending on ties. */
static _Thread_local const double *g_sort_score;
static int cmp_order(const void *a, const void *b) {
  int32_t ia = *(const int32_t *)a, ib = *(const int32_t *)b;
  double sa = g_sort_score[ia], sb = g_sort_score[ib];
  if (sa > sb) return -1;
  if (sa < sb) return 1;
  return ia - ib;
}

/* One candidate being decoded: its own sequence, canvas state and random
 * stream, so that candidates can advance in lockstep through shared
 * (batched) forward passes and still give what each would give alone. */
typedef struct cand_run {
  int index;
  int32_t *seq; /* [cap] the token sequence (owned) */
  float *conf;  /* [m] committed confidences (owned) */
  int n, c0, m;
  int block, n_blocks, steps_per_block;
  int b, bs, be, masks_left, block_steps, step_in_block;
  bool done, ended;
  int steps, committed;
  uint64_t key; /* sc_infill_run_key(seed, index): the root of this run's noise */
  int row0, nr; /* this step's rows in the engine's shared buffers */
  sc_draft_run dr; /* the params' drafts (model.h, sc_draft) */
  bool *drafted;   /* [m] the positions a draft filled this step (owned; NULL without drafts) */
} cand_run;

static void run_free(cand_run *run) {
  free(run->seq);
  free(run->conf);
  free(run->drafted);
  sc_draft_run_free(&run->dr);
  run->seq = NULL;
  run->conf = NULL;
  run->drafted = NULL;
}

/* Moves to the next block that still has masks, or marks the run done. */
static void run_next_block(cand_run *run, const sc_model_info *info) {
  for (;;) {
    run->b++;
    if (run->ended || run->b >= run->n_blocks) {
      run->done = true;
      return;
    }
    run->bs = run->c0 + run->b * run->block;
    run->be = run->bs + run->block < run->c0 + run->m ? run->bs + run->block : run->c0 + run->m;
    run->masks_left = 0;
    for (int i = run->bs; i < run->be; i++) run->masks_left += run->seq[i] == info->mask_id;
    run->block_steps = run->steps_per_block > 0 ? run->steps_per_block : run->masks_left;
    if (run->block_steps > run->masks_left) run->block_steps = run->masks_left;
    run->step_in_block = 0;
    if (run->masks_left > 0) return;
  }
}

static sc_status run_init(sc_engine *e, cand_run *run, const int32_t *prefix, int n_prefix,
                          const int32_t *suffix, int n_suffix, int m, int index, uint64_t seed,
                          const sc_infill_params *p, sc_error *err) {
  const sc_model_info *info = e->info;
  memset(run, 0, sizeof *run);
  SC_CHECK(info->mask_id >= 0, err, SC_ERR_UNSUPPORTED,
           "the checkpoint has no mask token: it is not a diffusion model");
  run->index = index;
  int extra = sc_family_frame_extra(e->prof, p->suffix_cut, 0);
  run->seq = malloc((size_t)(n_prefix + m + n_suffix + extra) * sizeof *run->seq);
  run->conf = calloc((size_t)m, sizeof *run->conf);
  if (!run->seq || !run->conf) {
    run_free(run);
    return sc_error_set(err, SC_ERR_NOMEM, "engine: out of memory");
  }
  sc_status st = sc_draft_run_init(&run->dr, p, m, err);
  if (st == SC_OK && run->dr.n > 0 && !(run->drafted = calloc((size_t)m, sizeof *run->drafted)))
    st = sc_error_set(err, SC_ERR_NOMEM, "engine: out of memory");
  if (st != SC_OK) {
    run_free(run);
    return st;
  }
  /* The family's frame (family.c); a cut suffix gets no EOS. */
  run->n = sc_family_frame(e->prof, p->suffix_cut, 0, prefix, n_prefix, info->mask_id, m, suffix,
                           n_suffix, run->seq, &run->c0);
  run->m = m;
  run->key = sc_infill_run_key(seed, index);
  run->block = p->block_len > 0 && p->block_len < m ? p->block_len : m;
  run->n_blocks = (m + run->block - 1) / run->block;
  /* Fixed-k: the canvas's steps shared evenly by the blocks (at least one
   * each); 0 steps means one token per step. */
  run->steps_per_block = p->steps > 0 ? (p->steps + run->n_blocks - 1) / run->n_blocks : 0;
  run->b = -1;
  run_next_block(run, info);
  return SC_OK;
}

/* Lists this step's rows (masked positions of the current block) into the
 * shared buffers at row0; `base` is added to each row (its offset in a
 * packed batch). */
static void run_rows(sc_engine *e, cand_run *run, int row0, int base) {
  const sc_model_info *info = e->info;
  run->row0 = row0;
  run->nr = 0;
  /* A draft fills masked positions of the block first; its rows are
   * scored in the same pass as the masks'. */
  if (run->dr.n > 0 &&
      sc_draft_place(&run->dr, run->seq + run->c0, run->m, info->mask_id, run->bs - run->c0,
                     run->be - run->c0) > 0)
    for (int k = 0; k < run->dr.np; k++) run->drafted[run->dr.pos[k]] = true;
  for (int i = run->bs; i < run->be; i++) {
    if (run->seq[i] != info->mask_id && !(run->drafted && run->drafted[i - run->c0])) continue;
    int k = row0 + run->nr++;
    e->positions[k] = i;
    e->rows[k] = base + (info->shift_logits ? (i > 0 ? i - 1 : 0) : i);
  }
}

/* This step's pick parameters for the run's rows (run_rows listed them). */
static void run_pick_params(sc_engine *e, const cand_run *run, const sc_infill_params *p) {
  for (int k = run->row0; k < run->row0 + run->nr; k++)
    e->prow[k] = row_params(e, p, sc_infill_row_key(run->key, run->steps, e->positions[k]));
}

/* The run's rows picked: from e->rpick when the pass picked them (on the
 * device or by model/pick.c), else from their logits here. */
static sc_status run_take_picks(sc_engine *e, cand_run *run, const sc_infill_params *p,
                                bool picked, sc_error *err) {
  for (int k = run->row0; k < run->row0 + run->nr; k++) {
    if (picked) {
      e->pick[k] = e->rpick[k].token;
      e->pprob[k] = (float)e->rpick[k].p;
      e->score[k] = pick_score(&e->rpick[k], p);
    } else {
      row_pick rp = sample_row(e, e->logits + (size_t)k * (size_t)e->vocab, p, false,
                               e->prow[k].key);
      /* (Picked rows were checked by sc_forward_ctx_pick.) */
      if (rp.nonfinite) return sc_model_nonfinite_error(e->model, err);
      e->pick[k] = rp.token;
      e->pprob[k] = (float)rp.p;
      e->score[k] = rp.score;
    }
    e->order[k] = k;
    /* A drafted row: p of its drafted token, under the pick's rules. The
     * pick itself gives it when it chose that token unfiltered; else it is
     * read from the row's logits (on a GPU they came back for this). */
    const int i = e->positions[k];
    if (run->drafted && run->drafted[i - run->c0]) {
      const int32_t t = run->seq[i];
      const sc_row_pick *r = &e->rpick[k];
      if (picked && e->pick[k] == t) {
        e->sdraft[k] = (sc_draft_score){r->p, r->max_prob};
      } else {
        const sc_pick_params pp = pick_params(e, e->banned, e->prow + k);
        sc_pick_prob(e->logits + (size_t)k * (size_t)e->vocab, e->vocab, &e->prow[k], &pp, t,
                     &e->sdraft[k]);
      }
    }
  }
  return SC_OK;
}

/* The family's ending rule after a step. The middle ends at the first end
 * token in the canvas: once no mask is left before it, nothing after it can
 * change the middle, so the run stops there. Before that, the masks after
 * it are decoded like any other (they shape what the masks before it
 * condition on), except for a family trained with EOS to the right of the
 * middle (profile eos_fill: DreamOn, sculpt's own), whose masks there
 * become EOS at once. */
static void run_end(sc_engine *e, cand_run *run) {
  const sc_family_profile *pf = e->prof;
  const int32_t mask = e->info->mask_id;
  int first_end = -1;
  bool mask_before = false;
  for (int i = run->c0; i < run->c0 + run->m && first_end < 0; i++) {
    if (run->seq[i] == mask) mask_before = true;
    else if (sc_family_is_end(pf, run->seq[i])) first_end = i;
  }
  if (first_end < 0) return;
  if (pf->eos_fill) {
    int32_t fill = pf->eos_id >= 0 ? pf->eos_id : pf->end_ids[0];
    for (int i = first_end + 1; i < run->c0 + run->m; i++)
      if (run->seq[i] == mask) {
        run->seq[i] = fill;
        run->conf[i - run->c0] = 1.0f;
        if (i >= run->bs && i < run->be) run->masks_left--;
      }
  }
  if (!mask_before) run->ended = run->done = true;
}

/* A draft that ends the middle was committed whole: the canvas ends with
 * it, the suffix moved up behind it, and the run is over. */
static void run_cut(cand_run *run, int end) {
  memmove(run->seq + run->c0 + end, run->seq + run->c0 + run->m,
          (size_t)(run->n - run->c0 - run->m) * sizeof *run->seq);
  run->n -= run->m - end;
  run->m = end;
  run->ended = run->done = true;
}

/* The acceptance test of this step's drafted rows (model.h, sc_draft):
 * commits the leading run that passes; returns how many, with
 * *first_rejected the position (in the sequence) that fell short, or -1. */
static int run_accept(sc_engine *e, cand_run *run, const sc_infill_params *p,
                      int *first_rejected) {
  *first_rejected = -1;
  if (run->dr.np == 0) return 0;
  int n = 0;
  for (int k = run->row0; k < run->row0 + run->nr; k++)
    if (run->drafted[e->positions[k] - run->c0]) {
      run->dr.s[n++] = e->sdraft[k];
    }
  int rej = -1;
  int acc = sc_draft_accept(&run->dr, run->seq + run->c0, e->info->mask_id, p->draft_threshold,
                            &rej);
  for (int j = 0; j < acc; j++) {
    run->conf[run->dr.pos[j]] = (float)run->dr.s[j].p;
    run->committed++;
    run->masks_left--;
  }
  for (int j = 0; j < run->dr.np; j++) run->drafted[run->dr.pos[j]] = false;
  if (rej >= 0) *first_rejected = run->c0 + rej;
  return acc;
}

/* Commits the run's picked rows by the schedule, and moves on to the next
 * block when this one is full. With a draft: its accepted run first; when
 * a drafted position was rejected, every other row saw that token, so only
 * the rejected position itself may take the model's pick (the schedule's
 * rule, or always when nothing else was committed). */
static void run_apply(sc_engine *e, cand_run *run, const sc_infill_params *p,
                      sc_infill_progress_fn progress, void *user) {
  const sc_model_info *info = e->info;
  const int k0 = run->row0, nr = run->nr;
  run->steps++;
  int rejected = -1;
  const int accepted = run_accept(e, run, p, &rejected);
  int end = accepted > 0 && rejected < 0
                ? sc_draft_end(&run->dr, run->seq + run->c0, run->m, info->mask_id)
                : -1;
  if (end >= 0) {
    run_cut(run, end);
  } else {
    /* The rows the schedule chooses from: the masks left (only the
     * rejected position after a rejection). */
    int nc = 0;
    for (int k = k0; k < k0 + nr; k++) {
      int pos = e->positions[k];
      if (run->seq[pos] == info->mask_id && (rejected < 0 || pos == rejected))
        e->order[k0 + nc++] = k;
    }
    g_sort_score = e->score;
    qsort(e->order + k0, (size_t)nc, sizeof *e->order, cmp_order);
    int take = 0;
    if (nc == 0) {
      take = 0;
    } else if (rejected >= 0) {
      take = accepted == 0 || p->schedule != SC_SCHEDULE_THRESHOLD ||
             e->score[e->order[k0]] >= p->threshold;
    } else if (p->schedule == SC_SCHEDULE_THRESHOLD) {
      take = accepted > 0 ? 0 : 1; /* always the best one, so every step makes progress */
      while (take < nc && e->score[e->order[k0 + take]] >= p->threshold) take++;
    } else {
      /* LLaDA's split: base = n / s, the first n % s steps take one more. */
      int left_steps = run->block_steps - run->step_in_block;
      if (left_steps < 1) left_steps = 1;
      take = run->masks_left / left_steps + (run->masks_left % left_steps ? 1 : 0);
      if (take < 1) take = 1;
      if (take > nc) take = nc;
    }
    for (int t = 0; t < take; t++) {
      int j = e->order[k0 + t];
      int pos = e->positions[j];
      run->seq[pos] = e->pick[j];
      run->conf[pos - run->c0] = e->pprob[j];
      run->committed++;
      run->masks_left--;
    }
    run_end(e, run);
  }
  run->step_in_block++;
  if (progress)
    progress(user, run->index, run->seq + run->c0, run->m, run->steps, run->committed);
  if (!run->done && run->masks_left <= 0) run_next_block(run, info);
}

/* Hands the finished canvas to cs (ownership moves) and scores it. */
static void run_finish(sc_engine *e, cand_run *run, cand_state *cs) {
  cs->m = run->m;
  cs->c0 = run->c0;
  cs->n = run->n;
  cs->steps = run->steps;
  cs->committed = run->committed;
  cs->drafted = run->dr.drafted;
  cs->accepted = run->dr.accepted;
  /* The canvas is moved to the front of seq, which the run owns. */
  memmove(run->seq, run->seq + run->c0, (size_t)run->m * sizeof *run->seq);
  cs->canvas = run->seq;
  cs->conf = run->conf;
  run->seq = NULL;
  run->conf = NULL;
  /* Mean log-confidence over the middle and the end token that ends it. */
  sc_family_score(e->prof, cs);
  cs->ended = cs->ended || run->ended; /* a draft that ended the middle (run_cut) */
}

/* Makes the per-step buffers hold n rows. */
static sc_status ensure_rows(sc_engine *e, int n, sc_error *err) {
  if (n <= e->cap_rows) return SC_OK;
  size_t N = (size_t)n, V = (size_t)e->vocab;
  float *logits = realloc(e->logits, N * V * sizeof *logits);
  if (logits) e->logits = logits;
  int32_t *rows = realloc(e->rows, N * sizeof *rows);
  if (rows) e->rows = rows;
  int32_t *positions = realloc(e->positions, N * sizeof *positions);
  if (positions) e->positions = positions;
  double *score = realloc(e->score, N * sizeof *score);
  if (score) e->score = score;
  int32_t *pick = realloc(e->pick, N * sizeof *pick);
  if (pick) e->pick = pick;
  float *pprob = realloc(e->pprob, N * sizeof *pprob);
  if (pprob) e->pprob = pprob;
  int32_t *order = realloc(e->order, N * sizeof *order);
  if (order) e->order = order;
  sc_draft_score *sdraft = realloc(e->sdraft, N * sizeof *sdraft);
  if (sdraft) e->sdraft = sdraft;
  sc_pick_row_params *prow = realloc(e->prow, N * sizeof *prow);
  if (prow) e->prow = prow;
  sc_row_pick *rpick = realloc(e->rpick, N * sizeof *rpick);
  if (rpick) e->rpick = rpick;
  SC_CHECK(logits && rows && positions && score && pick && pprob && order && sdraft &&
               prow && rpick,
           err,
           SC_ERR_NOMEM, "engine: out of memory for %d rows", n);
  e->cap_rows = n;
  return SC_OK;
}

/* ---- sessions: K/V reused across requests (model.h) ------------------------ */

struct sc_infill_session {
  sc_session_options o;
  uint64_t id;      /* unique, never 0: what the engine's kv_session names */
  int reuses;       /* reuses in a row since the last full pass */
};

static _Atomic uint64_t g_session_ids;

void sc_session_options_default(sc_session_options *o) {
  o->max_reuses = 16;
  o->max_edit = 64;
  o->margin = 16;
}

sc_status sc_infill_session_new(const sc_session_options *o, sc_infill_session **out,
                                sc_error *err) {
  *out = NULL;
  sc_infill_session *s = calloc(1, sizeof *s);
  SC_CHECK(s, err, SC_ERR_NOMEM, "session: out of memory");
  if (o) s->o = *o;
  else sc_session_options_default(&s->o);
  if (s->o.max_reuses < 0 || s->o.max_edit < 0 || s->o.margin < 0) {
    free(s);
    return sc_error_set(err, SC_ERR_INVALID,
                        "session: max_reuses, max_edit and margin must be >= 0");
  }
  s->id = atomic_fetch_add(&g_session_ids, 1) + 1;
  *out = s;
  return SC_OK;
}

void sc_infill_session_free(sc_infill_session *s) { free(s); }

/* Records what a pass over seq[w0, w1) of n positions left in fctx's cache
 * (a full pass is [0, n)), and for which session. */
static void kv_note(sc_engine *e, const int32_t *seq, int n, int w0, int w1,
                    const sc_infill_session *s) {
  if (w0 == 0 && w1 == n) e->kv_n = n;
  memcpy(e->kv_ids + w0, seq + w0, (size_t)(w1 - w0) * sizeof *e->kv_ids);
  e->kv_session = s ? s->id : 0;
}

/* The first pass of a candidate under a session: when the cache holds this
 * session's previous request, the window [*w0, *w1) to recompute (the
 * positions whose tokens changed, and the first block, whose rows the pass
 * must return) with the unchanged tail moved into place; returns the
 * positions reused, 0 for a full pass (then *w0 = 0, *w1 = n). */
static int session_window(sc_engine *e, sc_infill_session *s, const cand_run *run, int *w0,
                          int *w1) {
  const int n = run->n, old = e->kv_n;
  *w0 = 0;
  *w1 = n;
  if (!s || e->kv_session != s->id || old <= 0 || s->reuses >= s->o.max_reuses) {
    SC_LOG_DEBUG("session: a full pass (%s)", !s ? "no session"
                 : e->kv_session != s->id ? "the cache holds another run's K/V"
                 : old <= 0 ? "nothing cached" : "a refresh after max_reuses");
    return 0;
  }
  const int lim = n < old ? n : old;
  int L = 0, T = 0;
  while (L < lim && e->kv_ids[L] == run->seq[L]) L++;
  while (T < lim - L && e->kv_ids[old - 1 - T] == run->seq[n - 1 - T]) T++;
  /* The first block (from the row before it on a shifted model) is always
   * recomputed: its rows are this pass's output. */
  const int b0 = e->info->shift_logits && run->bs > 0 ? run->bs - 1 : run->bs;
  int a = L < b0 ? L : b0, b = n - T > run->be ? n - T : run->be;
  if ((b - a) - (run->be - b0) > s->o.max_edit) {
    SC_LOG_DEBUG("session: a full pass (%d positions changed in [%d, %d) of %d, max_edit %d)",
                 (b - a) - (run->be - b0), a, b, n, s->o.max_edit);
    return 0;
  }
  /* The neighbours of the change are recomputed too: theirs are the K/V
   * the change moved most. */
  a = a > s->o.margin ? a - s->o.margin : 0;
  b = n - b > s->o.margin ? b + s->o.margin : n;
  const int keep_tail = n - b; /* positions after the window, from the old tail */
  SC_LOG_DEBUG("session: %d of %d positions kept (the first %d, the last %d of %d before)",
               a + keep_tail, n, a, keep_tail, old);
  sc_error ignored = {0};
  if (sc_forward_ctx_shift(e->fctx, n, old - keep_tail, old, b, &ignored) != SC_OK) {
    SC_LOG_DEBUG("session: a full pass (%s)", ignored.msg);
    return 0;
  }
  /* What the cache holds now: the moved tail's ids with it, and n
   * positions (the window's are noted after the pass). Else the next
   * request would compare against the positions before the move. */
  memmove(e->kv_ids + b, e->kv_ids + (old - keep_tail), (size_t)keep_tail * sizeof *e->kv_ids);
  e->kv_n = n;
  *w0 = a;
  *w1 = b;
  return a + keep_tail;
}

/* One candidate alone, with the dual cache when asked, and the session's
 * K/V from its previous request when there is one. */
static sc_status decode_candidate(sc_engine *e, sc_infill_session *session, const int32_t *prefix,
                                  int n_prefix, const int32_t *suffix, int n_suffix, int m,
                                  int cand_index, const sc_infill_params *p,
                                  const _Atomic int *cancel, sc_infill_progress_fn progress,
                                  void *user, cand_state *cs, double *ms_fwd, double *ms_smp,
                                  int *kv_reused, sc_error *err) {
  const sc_model_info *info = e->info;
  cand_run run;
  SC_TRY(run_init(e, &run, prefix, n_prefix, suffix, n_suffix, m, cand_index, p->seed, p, err));
  sc_status st = SC_OK;
  while (!run.done) {
    if (cancel && atomic_load(cancel)) {
      st = sc_error_set(err, SC_ERR_CANCELLED, "infill cancelled");
      break;
    }
    if ((st = ensure_rows(e, run.be - run.bs, err)) != SC_OK) break;
    run_rows(e, &run, 0, 0);
    run_pick_params(e, &run, p);
    const bool pick = unfiltered(e, p);
    const sc_pick_params pp = pick_params(e, e->banned, e->prow);
    /* Dual cache: only the block is recomputed, against the prefix and
     * suffix K/V of the block's first pass. A shifted model reads the first
     * block position from row bs-1, so that row joins the window. */
    bool window = p->use_cache && run.step_in_block > 0;
    int w0 = !window ? 0 : info->shift_logits && run.bs > 0 ? run.bs - 1 : run.bs;
    int w1 = window ? run.be : run.n;
    double t0 = sc_now_ms();
    if (!window && session && p->use_cache && run.b == 0) {
      int reused = session_window(e, session, &run, &w0, &w1);
      window = reused > 0;
      *kv_reused += reused;
      session->reuses = window ? session->reuses + 1 : 0;
    }
    if (pick)
      st = sc_forward_ctx_pick(e->fctx, run.seq, run.n, w0, w1, NULL, 0, e->rows, run.nr, &pp,
                               e->logits, run.dr.np > 0, e->rpick, err);
    else if (window)
      st = sc_forward_ctx_run_window(e->fctx, run.seq, run.n, w0, w1, e->rows, run.nr,
                                     e->logits, err);
    else
      st = sc_forward_ctx_run(e->fctx, run.seq, run.n, e->rows, run.nr, e->logits, err);
    if (st != SC_OK) {
      e->kv_session = 0;
      break;
    }
    kv_note(e, run.seq, run.n, w0, w1, session);
    double t1 = sc_now_ms();
    *ms_fwd += t1 - t0;
    if ((st = run_take_picks(e, &run, p, pick, err)) != SC_OK) break;
    run_apply(e, &run, p, progress, user);
    *ms_smp += sc_now_ms() - t1;
  }
  if (st == SC_OK) run_finish(e, &run, cs);
  else cs->steps = run.steps, cs->committed = run.committed;
  cs->drafted = run.dr.drafted;
  cs->accepted = run.dr.accepted;
  run_free(&run);
  return st;
}

/* ---- stepwise batches ------------------------------------------------------
 * Runs in lockstep: each step is one packed forward pass over every
 * unfinished run, then each commits on its own rows. A run is one request:
 * its own prefix, suffix, canvas, params and seed. Runs join and leave
 * between steps (continuous batching); decode_batch below is the batch
 * driven to the end. */

typedef struct batch_slot {
  bool used;
  cand_run run;
  sc_infill_params p;
  double ms_fwd, ms_smp, t0;
} batch_slot;

struct sc_engine_batch {
  sc_engine *e; /* borrowed */
  int max_tokens;
  batch_slot slots[SC_INFILL_MAX_BATCH];
  int32_t *packed; /* [packed_cap] the packed sequences of one step */
  int packed_cap;
  int passes;
  double ms_fwd, ms_smp; /* over all passes */
};

static sc_status check_request(const sc_engine *e, const sc_infill_request *q,
                               const sc_infill_params *p, sc_error *err);
static sc_status finish_result(sc_engine *e, cand_state *bestp, int best_index,
                               sc_infill_result *out, sc_error *err);

int sc_engine_batch_request_tokens(const sc_infill_request *req) {
  return req ? req->n_prefix + req->canvas + req->n_suffix + 2 : 0;
}

static int batch_live_tokens(const sc_engine_batch *b) {
  int t = 0;
  for (int s = 0; s < SC_INFILL_MAX_BATCH; s++)
    if (b->slots[s].used && !b->slots[s].run.done) t += b->slots[s].run.n;
  return t;
}

/* index mixes into the run's seed (candidate lengths of one infill differ
 * by it); requests of sc_engine_infill_many and of the public API use 0. */
static sc_status batch_add_indexed(sc_engine_batch *b, const sc_infill_request *q,
                                   const sc_infill_params *p, int index, int *slot,
                                   sc_error *err) {
  SC_TRY(check_request(b->e, q, p, err));
  SC_CHECK(!p || p->loop == SC_LOOP_BLOCKS, err, SC_ERR_UNSUPPORTED,
           "batch: the %s loop decodes one request at a time (sc_engine_infill)",
           sc_decode_loop_name(p ? p->loop : SC_LOOP_BLOCKS));
  int s = 0;
  while (s < SC_INFILL_MAX_BATCH && b->slots[s].used) s++;
  SC_CHECK(s < SC_INFILL_MAX_BATCH, err, SC_ERR_UNSUPPORTED, "batch: every slot is taken");
  int live = sc_engine_batch_live(b);
  SC_CHECK(live == 0 || batch_live_tokens(b) + sc_engine_batch_request_tokens(q) <= b->max_tokens,
           err, SC_ERR_UNSUPPORTED, "batch: %d more positions pass the %d-token budget",
           sc_engine_batch_request_tokens(q), b->max_tokens);
  batch_slot *bs = &b->slots[s];
  memset(bs, 0, sizeof *bs);
  if (p) bs->p = *p;
  else sc_infill_params_default(&bs->p);
  if (q->suffix_cut) bs->p.suffix_cut = true;
  SC_TRY(run_init(b->e, &bs->run, q->prefix, q->n_prefix, q->suffix, q->n_suffix, q->canvas,
                  index, q->seed, &bs->p, err));
  bs->used = true;
  bs->t0 = sc_now_ms();
  *slot = s;
  return SC_OK;
}

sc_status sc_engine_batch_new(sc_engine *e, int max_tokens, sc_engine_batch **out,
                              sc_error *err) {
  *out = NULL;
  SC_CHECK(e, err, SC_ERR_INVALID, "batch: no engine");
  sc_engine_batch *b = calloc(1, sizeof *b);
  SC_CHECK(b, err, SC_ERR_NOMEM, "batch: out of memory");
  b->e = e;
  b->max_tokens = max_tokens > 0 ? max_tokens : (e->max_seq > 2048 ? e->max_seq : 2048);
  *out = b;
  return SC_OK;
}

void sc_engine_batch_free(sc_engine_batch *b) {
  if (!b) return;
  for (int s = 0; s < SC_INFILL_MAX_BATCH; s++) sc_engine_batch_remove(b, s);
  free(b->packed);
  free(b);
}

sc_status sc_engine_batch_add(sc_engine_batch *b, const sc_infill_request *req,
                              const sc_infill_params *params, int *slot, sc_error *err) {
  SC_CHECK(b && req && slot, err, SC_ERR_INVALID, "batch: bad arguments");
  /* Drafts belong to one prompt (model.h): none here. */
  sc_infill_params q;
  if (params) {
    q = *params;
    q.drafts = NULL;
    q.n_drafts = 0;
    params = &q;
  }
  return batch_add_indexed(b, req, params, 0, slot, err);
}

void sc_engine_batch_remove(sc_engine_batch *b, int slot) {
  if (!b || slot < 0 || slot >= SC_INFILL_MAX_BATCH || !b->slots[slot].used) return;
  run_free(&b->slots[slot].run);
  b->slots[slot].used = false;
}

int sc_engine_batch_count(const sc_engine_batch *b) {
  int n = 0;
  for (int s = 0; b && s < SC_INFILL_MAX_BATCH; s++) n += b->slots[s].used;
  return n;
}

int sc_engine_batch_live(const sc_engine_batch *b) {
  int n = 0;
  for (int s = 0; b && s < SC_INFILL_MAX_BATCH; s++)
    n += b->slots[s].used && !b->slots[s].run.done;
  return n;
}

bool sc_engine_batch_done(const sc_engine_batch *b, int slot) {
  return b && slot >= 0 && slot < SC_INFILL_MAX_BATCH && b->slots[slot].used &&
         b->slots[slot].run.done;
}

int sc_engine_batch_passes(const sc_engine_batch *b) { return b ? b->passes : 0; }

sc_status sc_engine_batch_step(sc_engine_batch *b, sc_infill_progress_fn progress, void *user,
                               int *stepped, sc_error *err) {
  if (stepped) *stepped = 0;
  SC_CHECK(b, err, SC_ERR_INVALID, "batch: none");
  sc_engine *e = b->e;
  int active[SC_INFILL_MAX_BATCH], na = 0, total = 0, max_rows = 0;
  for (int s = 0; s < SC_INFILL_MAX_BATCH; s++) {
    cand_run *run = &b->slots[s].run;
    if (!b->slots[s].used || run->done) continue;
    active[na++] = s;
    total += run->n;
    max_rows += run->be - run->bs;
  }
  if (na == 0) return SC_OK;
  SC_TRY(ensure_rows(e, max_rows, err));
  if (total > e->batch_cap) {
    sc_forward_ctx_free(e->bctx);
    e->bctx = NULL;
    e->batch_cap = 0;
    SC_TRY(sc_forward_ctx_new(e->model, total, &e->bctx, err));
    e->batch_cap = total;
  }
  if (total > b->packed_cap) {
    int32_t *np = realloc(b->packed, (size_t)total * sizeof *np);
    SC_CHECK(np, err, SC_ERR_NOMEM, "engine: out of memory");
    b->packed = np;
    b->packed_cap = total;
  }
  int32_t offsets[SC_INFILL_MAX_BATCH + 1];
  int n = 0, rows = 0;
  /* Each run's rows are picked as they would be alone: unfiltered ones by
   * the pass (on a GPU, on the device), top-k/top-p ones here from their
   * logits, which the pass then also brings back. */
  bool filtered = false;
  offsets[0] = 0;
  for (int a = 0; a < na; a++) {
    batch_slot *bs = &b->slots[active[a]];
    cand_run *run = &bs->run;
    run_rows(e, run, rows, n); /* (places a draft in run->seq first) */
    memcpy(b->packed + n, run->seq, (size_t)run->n * sizeof *b->packed);
    run_pick_params(e, run, &bs->p);
    /* A drafted row's test reads its logits (sc_pick_prob). */
    filtered |= !unfiltered(e, &bs->p) || run->dr.np > 0;
    rows += run->nr;
    n += run->n;
    offsets[a + 1] = n;
  }
  double t0 = sc_now_ms();
  const sc_pick_params pp = pick_params(e, e->banned, e->prow);
  SC_TRY(sc_forward_ctx_pick(e->bctx, b->packed, n, 0, n, offsets, na, e->rows, rows, &pp,
                             e->logits, filtered, e->rpick, err));
  double t1 = sc_now_ms();
  b->passes++;
  for (int a = 0; a < na; a++) {
    batch_slot *bs = &b->slots[active[a]];
    SC_TRY(run_take_picks(e, &bs->run, &bs->p, unfiltered(e, &bs->p), err));
    run_apply(e, &bs->run, &bs->p, NULL, NULL);
    if (progress)
      progress(user, active[a], bs->run.seq + bs->run.c0, bs->run.m, bs->run.steps,
               bs->run.committed);
  }
  double t2 = sc_now_ms();
  b->ms_fwd += t1 - t0;
  b->ms_smp += t2 - t1;
  for (int a = 0; a < na; a++) {
    b->slots[active[a]].ms_fwd += t1 - t0;
    b->slots[active[a]].ms_smp += t2 - t1;
  }
  if (stepped) *stepped = na;
  return SC_OK;
}

sc_status sc_engine_batch_take(sc_engine_batch *b, int slot, sc_infill_result *out,
                               sc_error *err) {
  memset(out, 0, sizeof *out);
  SC_CHECK(sc_engine_batch_done(b, slot), err, SC_ERR_INVALID,
           "batch: slot %d holds no finished request", slot);
  batch_slot *bs = &b->slots[slot];
  cand_state cs;
  memset(&cs, 0, sizeof cs);
  run_finish(b->e, &bs->run, &cs);
  run_free(&bs->run);
  bs->used = false;
  SC_TRY(finish_result(b->e, &cs, 0, out, err));
  out->ms_forward = bs->ms_fwd;
  out->ms_sample = bs->ms_smp;
  out->ms_total = sc_now_ms() - bs->t0;
  return SC_OK;
}

/* A whole batch decoded to the end: candidate lengths of one infill
 * (same_prompt: each run's index, mixed into its seed, is its candidate
 * number) or independent prompts (sc_engine_infill_many: index 0). The
 * caller bounds the packed length. */
static sc_status decode_batch(sc_engine *e, const sc_infill_request *reqs, int nc,
                              bool same_prompt, const sc_infill_params *p,
                              const _Atomic int *cancel, sc_infill_progress_fn progress,
                              void *user, cand_state *cs, int *steps, double *ms_fwd,
                              double *ms_smp, sc_error *err) {
  sc_engine_batch b;
  memset(&b, 0, sizeof b);
  b.e = e;
  b.max_tokens = INT_MAX;
  sc_status st = SC_OK;
  for (int c = 0; c < nc && st == SC_OK; c++) {
    int slot = -1;
    /* Slots fill from 0 in order, so slot c is request c. */
    st = batch_add_indexed(&b, &reqs[c], p, same_prompt ? c : 0, &slot, err);
  }
  while (st == SC_OK && sc_engine_batch_live(&b) > 0) {
    if (cancel && atomic_load(cancel)) {
      st = sc_error_set(err, SC_ERR_CANCELLED, "infill cancelled");
      break;
    }
    st = sc_engine_batch_step(&b, progress, user, NULL, err);
  }
  *steps += b.passes;
  *ms_fwd += b.ms_fwd;
  *ms_smp += b.ms_smp;
  for (int c = 0; c < nc; c++) {
    if (!b.slots[c].used) continue;
    if (st == SC_OK) run_finish(e, &b.slots[c].run, &cs[c]);
    run_free(&b.slots[c].run);
  }
  free(b.packed);
  return st;
}

static sc_status finish_result(sc_engine *e, cand_state *bestp, int best_index,
                               sc_infill_result *out, sc_error *err);

/* One candidate through a loop of model/upstream.c: an upstream preset's
 * loop, or DreamOn's expand/delete loop under sculpt's schedule. */
static sc_status decode_candidate_loop(sc_engine *e, const int32_t *prefix, int n_prefix,
                                       const int32_t *suffix, int n_suffix, int m,
                                       int cand_index, const sc_infill_params *p,
                                       const _Atomic int *cancel,
                                       sc_infill_progress_fn progress, void *user,
                                       cand_state *cs, double *ms_fwd, double *ms_smp,
                                       sc_error *err) {
  e->kv_session = 0; /* full passes (positions move): nothing left for a session */
  sc_loop_io io = {e->model,  e->fctx, e->info, e->prof, e->max_seq, e->vocab, e->logits, e->rows,
                   e->seq,    e->z,    e->cand,
                   /* sculpt's schedule keeps its bans; the authors' loops have none */
                   p->loop == SC_LOOP_BLOCKS ? e->banned_dreamon : NULL,
                   progress,  user,    cancel};
  return sc_loop_decode(&io, prefix, n_prefix, suffix, n_suffix, m, cand_index, p, cs, ms_fwd,
                        ms_smp, err);
}

int sc_engine_context(const sc_engine *e) { return e->max_seq; }

void sc_engine_counters(const sc_engine *e, sc_forward_counters *out) {
  sc_forward_ctx_counters(e->fctx, out);
  sc_forward_counters b;
  sc_forward_ctx_counters(e->bctx, &b); /* zeros when no batch ran */
  out->passes += b.passes;
  out->graph_captures += b.graph_captures;
  out->graph_replays += b.graph_replays;
  out->eager_passes += b.eager_passes;
  out->host_syncs += b.host_syncs;
}

void sc_engine_device(const sc_engine *e, const sc_device_choice *chosen,
                      sc_device_choice *out) {
  /* The CUDA backend picks on the device exactly when its kernels run. */
  if (chosen->kind == SC_DEVICE_CUDA && !sc_forward_ctx_picks_on_device(e->fctx))
    sc_device_select(SC_DEVICE_CPU, out);
  else if (out != chosen)
    *out = *chosen;
}

sc_status sc_engine_infill(sc_engine *e, const int32_t *prefix, int n_prefix,
                           const int32_t *suffix, int n_suffix, const sc_infill_plan *plan,
                           const sc_infill_params *params, const _Atomic int *cancel,
                           sc_infill_progress_fn progress, void *user,
                           sc_infill_result *out, sc_error *err) {
  return sc_engine_infill_session(e, NULL, prefix, n_prefix, suffix, n_suffix, plan, params,
                                  cancel, progress, user, out, err);
}

sc_status sc_engine_infill_prepared(sc_engine *e, const sc_infill_prepared *p,
                                    const _Atomic int *cancel, sc_infill_progress_fn progress,
                                    void *user, sc_infill_result *out, sc_error *err) {
  const sc_infill_tokens *t = &p->tokens;
  return sc_engine_infill_session(e, NULL, t->pre + (t->n_pre - t->keep_pre), (int)t->keep_pre,
                                  t->suf, (int)t->keep_suf, &p->plan, &p->params, cancel,
                                  progress, user, out, err);
}

sc_status sc_engine_infill_session(sc_engine *e, sc_infill_session *session,
                                   const int32_t *prefix, int n_prefix, const int32_t *suffix,
                                   int n_suffix, const sc_infill_plan *plan,
                                   const sc_infill_params *params, const _Atomic int *cancel,
                                   sc_infill_progress_fn progress, void *user,
                                   sc_infill_result *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  int kv_reused = 0;
  double t_start = sc_now_ms();
  sc_infill_params defaults;
  if (!params) {
    sc_infill_params_default(&defaults);
    params = &defaults;
  }
  SC_CHECK(plan && plan->n_lengths >= 1 && plan->n_lengths <= SC_INFILL_MAX_CANDIDATES, err,
           SC_ERR_INVALID, "infill: the plan needs 1 to %d canvas lengths",
           SC_INFILL_MAX_CANDIDATES);
  SC_CHECK(n_prefix >= 0 && n_suffix >= 0 && (n_prefix == 0 || prefix) &&
               (n_suffix == 0 || suffix),
           err, SC_ERR_INVALID, "infill: bad prefix or suffix");
  SC_CHECK(params->threshold >= 0 && params->threshold <= 1, err, SC_ERR_INVALID,
           "infill: threshold must be in [0, 1]");
  const int extra = sc_family_frame_extra(e->prof, params->suffix_cut, params->pad_after);
  for (int c = 0; c < plan->n_lengths; c++) {
    int m = plan->lengths[c];
    SC_CHECK(m >= 1, err, SC_ERR_INVALID, "infill: canvas length %d must be at least 1", m);
    SC_CHECK(n_prefix + m + n_suffix + extra <= e->max_seq, err, SC_ERR_INVALID,
             "infill: %d prefix + %d canvas + %d suffix tokens exceed the %d-token context",
             n_prefix, m, n_suffix, e->max_seq);
  }
  for (int i = 0; i < n_prefix; i++)
    SC_CHECK(prefix[i] >= 0 && prefix[i] < e->vocab, err, SC_ERR_INVALID,
             "infill: prefix token %d out of the vocabulary", prefix[i]);
  for (int i = 0; i < n_suffix; i++)
    SC_CHECK(suffix[i] >= 0 && suffix[i] < e->vocab, err, SC_ERR_INVALID,
             "infill: suffix token %d out of the vocabulary", suffix[i]);

  SC_CHECK(params->draft_threshold >= 0 && params->draft_threshold <= 1, err, SC_ERR_INVALID,
           "infill: draft_threshold must be in [0, 1]");
  SC_CHECK(params->n_drafts <= 0 || params->drafts, err, SC_ERR_INVALID, "infill: no drafts");
  for (int d = 0; d < params->n_drafts && d < SC_INFILL_MAX_DRAFTS; d++) {
    const sc_draft *dr = &params->drafts[d];
    SC_CHECK(dr->n >= 0 && dr->offset >= 0 && (dr->n == 0 || dr->ids), err, SC_ERR_INVALID,
             "infill: draft %d is malformed", d);
    for (int i = 0; i < dr->n; i++)
      SC_CHECK(dr->ids[i] >= 0 && dr->ids[i] < e->vocab, err, SC_ERR_INVALID,
               "infill: draft token %d out of the vocabulary", dr->ids[i]);
  }
  cand_state cands[SC_INFILL_MAX_CANDIDATES];
  memset(cands, 0, sizeof cands);
  double ms_fwd = 0, ms_smp = 0;
  int steps = 0, committed = 0, drafted = 0, accepted = 0;
  sc_status st = SC_OK;
  /* sculpt's block loop (batched over several lengths, or alone with the
   * cache), else a loop of upstream.c: an upstream preset, or DreamOn. */
  bool loop = params->loop != SC_LOOP_BLOCKS || (e->expand_id >= 0 && !params->no_expand);
  if (!loop && plan->n_lengths > 1 && !params->no_batch) {
    sc_infill_request reqs[SC_INFILL_MAX_CANDIDATES];
    for (int c = 0; c < plan->n_lengths; c++)
      reqs[c] = (sc_infill_request){prefix, n_prefix, suffix, n_suffix, plan->lengths[c],
                                    params->seed, params->suffix_cut};
    st = decode_batch(e, reqs, plan->n_lengths, true, params, cancel, progress, user, cands,
                      &steps, &ms_fwd, &ms_smp, err);
    for (int c = 0; c < plan->n_lengths; c++) {
      committed += cands[c].committed;
      drafted += cands[c].drafted;
      accepted += cands[c].accepted;
    }
  } else {
    for (int c = 0; c < plan->n_lengths && st == SC_OK; c++) {
      cand_state *cs = &cands[c];
      st = loop ? decode_candidate_loop(e, prefix, n_prefix, suffix, n_suffix,
                                        plan->lengths[c], c, params, cancel, progress, user, cs,
                                        &ms_fwd, &ms_smp, err)
                : decode_candidate(e, session, prefix, n_prefix, suffix, n_suffix,
                                   plan->lengths[c], c, params, cancel, progress, user, cs,
                                   &ms_fwd, &ms_smp, &kv_reused, err);
      steps += cs->steps;
      committed += cs->committed;
      drafted += cs->drafted;
      accepted += cs->accepted;
    }
  }
  /* Best mean log-confidence; on a tie, prefer a candidate the model ended
   * itself over one that ran out of canvas. */
  int best_index = -1;
  for (int c = 0; c < plan->n_lengths && st == SC_OK; c++) {
    cand_state *cs = &cands[c], *b = best_index >= 0 ? &cands[best_index] : NULL;
    if (!b || cs->mean_logp > b->mean_logp + 1e-9 ||
        (fabs(cs->mean_logp - b->mean_logp) <= 1e-9 && cs->ended && !b->ended))
      best_index = c;
  }
  cand_state best = {0};
  for (int c = 0; c < plan->n_lengths; c++) {
    if (c == best_index) {
      best = cands[c];
    } else {
      free(cands[c].canvas);
      free(cands[c].conf);
    }
  }
  if (st != SC_OK) {
    free(best.canvas);
    free(best.conf);
    return st;
  }

  st = finish_result(e, &best, best_index, out, err);
  if (st != SC_OK) return st;
  out->steps = steps;
  out->committed = committed;
  out->drafted = drafted;
  out->accepted = accepted;
  out->rejected = drafted - accepted;
  out->ms_forward = ms_fwd;
  out->ms_sample = ms_smp;
  out->ms_total = sc_now_ms() - t_start;
  out->kv_reused = kv_reused;
  return SC_OK;
}

/* The result from a finished candidate (whose buffers it frees): the middle
 * by the family's ending and cleaning rules (family.c), decoded, and the
 * canvas as it was decoded. */
static sc_status finish_result(sc_engine *e, cand_state *bestp, int best_index,
                               sc_infill_result *out, sc_error *err) {
  cand_state best = *bestp;
  sc_status st;
  size_t cap = (size_t)(best.m ? best.m : 1);
  out->ids = malloc(cap * sizeof *out->ids);
  out->confidence = malloc(cap * sizeof *out->confidence);
  out->canvas_ids = malloc(cap * sizeof *out->canvas_ids);
  if (!out->ids || !out->confidence || !out->canvas_ids) {
    free(best.canvas);
    free(best.conf);
    sc_infill_result_free(out);
    return sc_error_set(err, SC_ERR_NOMEM, "engine: out of memory");
  }
  int len = sc_family_middle(e->prof, e->tok, e->info->mask_id, best.canvas, best.conf, best.m,
                             out->ids, out->confidence);
  if (best.m) memcpy(out->canvas_ids, best.canvas, (size_t)best.m * sizeof *out->canvas_ids);
  out->n_ids = len;
  out->canvas_len = best.m;
  out->candidate = best_index;
  out->mean_logp = best.mean_logp;
  out->ended = best.ended;
  out->steps = best.steps;
  out->committed = best.committed;
  out->drafted = best.drafted;
  out->accepted = best.accepted;
  out->rejected = best.drafted - best.accepted;
  free(best.canvas);
  free(best.conf);
  if (e->tok) {
    st = sc_tokenizer_decode(e->tok, out->ids, (size_t)len, &out->text, &out->text_len, err);
    if (st != SC_OK) {
      sc_infill_result_free(out);
      return st;
    }
  }
  return SC_OK;
}

/* p may be NULL (the defaults); a cut suffix (the request's or the
 * params') has no EOS after it. */
static sc_status check_request(const sc_engine *e, const sc_infill_request *q,
                               const sc_infill_params *p, sc_error *err) {
  SC_CHECK(q->n_prefix >= 0 && q->n_suffix >= 0 && (q->n_prefix == 0 || q->prefix) &&
               (q->n_suffix == 0 || q->suffix) && q->canvas >= 1,
           err, SC_ERR_INVALID, "infill: bad request");
  bool cut = q->suffix_cut || (p && p->suffix_cut);
  SC_CHECK(q->n_prefix + q->canvas + q->n_suffix + sc_family_frame_extra(e->prof, cut, 0) <=
               e->max_seq,
           err, SC_ERR_INVALID,
           "infill: %d prefix + %d canvas + %d suffix tokens exceed the %d-token context",
           q->n_prefix, q->canvas, q->n_suffix, e->max_seq);
  for (int i = 0; i < q->n_prefix; i++)
    SC_CHECK(q->prefix[i] >= 0 && q->prefix[i] < e->vocab, err, SC_ERR_INVALID,
             "infill: prefix token %d out of the vocabulary", q->prefix[i]);
  for (int i = 0; i < q->n_suffix; i++)
    SC_CHECK(q->suffix[i] >= 0 && q->suffix[i] < e->vocab, err, SC_ERR_INVALID,
             "infill: suffix token %d out of the vocabulary", q->suffix[i]);
  return SC_OK;
}

sc_status sc_engine_infill_many(sc_engine *e, const sc_infill_request *reqs, int n,
                                const sc_infill_params *params, const _Atomic int *cancel,
                                sc_infill_result *outs, int *passes, sc_error *err) {
  sc_infill_params defaults;
  if (!params) {
    sc_infill_params_default(&defaults);
    params = &defaults;
  }
  if (passes) *passes = 0;
  SC_CHECK(n >= 0 && (n == 0 || (reqs && outs)), err, SC_ERR_INVALID, "infill: bad arguments");
  /* Drafts belong to one prompt (model.h): none for many. */
  sc_infill_params no_drafts = *params;
  no_drafts.drafts = NULL;
  no_drafts.n_drafts = 0;
  params = &no_drafts;
  for (int i = 0; i < n; i++) memset(&outs[i], 0, sizeof outs[i]);
  for (int i = 0; i < n; i++) SC_TRY(check_request(e, &reqs[i], params, err));
  /* Groups of at most SC_INFILL_MAX_BATCH requests and a bounded packed
   * length (the packed context's arena grows with its square). */
  const int max_tokens = e->max_seq > 2048 ? e->max_seq : 2048;
  for (int g0 = 0; g0 < n;) {
    int g1 = g0, tokens = 0;
    while (g1 < n && g1 - g0 < SC_INFILL_MAX_BATCH) {
      int t = reqs[g1].n_prefix + reqs[g1].canvas + reqs[g1].n_suffix + 2;
      if (g1 > g0 && tokens + t > max_tokens) break;
      tokens += t;
      g1++;
    }
    cand_state cs[SC_INFILL_MAX_BATCH];
    memset(cs, 0, sizeof cs);
    int steps = 0;
    double ms_fwd = 0, ms_smp = 0, t0 = sc_now_ms();
    sc_status st = decode_batch(e, reqs + g0, g1 - g0, false, params, cancel, NULL, NULL, cs,
                                &steps, &ms_fwd, &ms_smp, err);
    if (passes) *passes += steps;
    for (int i = g0; i < g1; i++) {
      if (st == SC_OK) st = finish_result(e, &cs[i - g0], 0, &outs[i], err);
      else free(cs[i - g0].canvas), free(cs[i - g0].conf);
      outs[i].ms_forward = ms_fwd;
      outs[i].ms_sample = ms_smp;
      outs[i].ms_total = sc_now_ms() - t0;
    }
    if (st != SC_OK) {
      for (int i = 0; i < n; i++) sc_infill_result_free(&outs[i]);
      return st;
    }
    g0 = g1;
  }
  return SC_OK;
}

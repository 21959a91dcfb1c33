/* upstream.c — the model authors' own decode loops, for the `upstream`
 * preset (sc_infill_params_for), and DreamOn's expand/delete loop, which the
 * fast preset runs under sculpt's threshold schedule. Every loop recomputes
 * the whole sequence every step (no cache), as the originals do, and picks
 * rows as their sample_tokens() does: logits / T, then top-p (torch's rule:
 * drop a token once the mass before it passes top_p), then top-k, then
 * softmax; confidence, margin or entropy (sum p log(p + 1e-10)) of that
 * distribution; LLaDA ranks by the softmax of the untempered logits.
 *
 * Sources (each loop cites its lines):
 *   DreamOn@8a0a549 eval/generator.py — the fixed-canvas harness (L126-203)
 *     and the expand/delete loop (L205-316);
 *   CoDA@fa1d505 CoDALanguageModel/generation_utils.py L412-540 — Dream's
 *     diffusion_generate schedule;
 *   Open-dLLM@8b38787 veomni/models/transformers/qwen2/generation_utils.py
 *     L166-277 — p2;
 *   LLaDA@b7e6c35 generate.py L43-120.
 * Where a loop needs torch's float32 arithmetic to reproduce a count (the
 * schedules), it is done in float here too.
 *
 * Differences kept on purpose: ties between equal scores go to the lowest
 * position (torch leaves them unspecified); sampling at T > 0 uses sculpt's
 * keyed noise, not torch's generator; only canvas positions are decoded (a
 * mask token written in the prefix is not); steps that would commit nothing
 * run no forward pass. */
#define _POSIX_C_SOURCE 200809L
#include "infill_impl.h"
#include "model_impl.h" /* sc_model_nonfinite_error */

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- one row ------------------------------------------------------------------ */

static _Thread_local const double *g_z;
static int cmp_z_desc(const void *a, const void *b) {
  double za = g_z[*(const int32_t *)a], zb = g_z[*(const int32_t *)b];
  if (za > zb) return -1;
  if (za < zb) return 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

void sc_loop_pick_row(const float *logits, int V, const sc_infill_params *p,
                      const sc_family_profile *pf, float eos_penalty, const uint8_t *banned,
                      int32_t suppress, uint64_t key, double *z, int32_t *cand,
                      sc_loop_pick *out) {
  const bool sample = p->temperature > 0;
  const double inv_t = sample ? 1.0 / p->temperature : 1.0;
  /* Raw (untempered) logits with the penalty, the suppression and bans. */
  double m_raw = -INFINITY;
  bool nonfinite = false;
  for (int t = 0; t < V; t++) {
    nonfinite |= !isfinite(logits[t]); /* as model/pick.c's pass does */
    double v = banned && banned[t] ? -INFINITY : (double)logits[t];
    if (eos_penalty != 0.0f && sc_family_is_end(pf, t)) v -= eos_penalty;
    if (t == suppress) v -= 1e9; /* DreamOn: logits[:, expand] -= 1e9 */
    z[t] = v;
    if (v > m_raw) m_raw = v;
  }
  *out = (sc_loop_pick){0};
  if (nonfinite) {
    out->nonfinite = true;
    return;
  }
  if (p->plain_confidence) {
    /* LLaDA (generate.py L94-103): x0 = argmax(exp(l) / (-log u)^T), i.e.
     * Gumbel-max at temperature T, and p = softmax(l) at T = 1. */
    double s = 0, best_v = -INFINITY;
    int32_t best = -1;
    for (int t = 0; t < V; t++) {
      if (z[t] == -INFINITY) continue;
      s += exp(z[t] - m_raw);
      double v = z[t] * inv_t;
      if (sample) v += -log(-log((double)sc_pick_uniform(key, (uint64_t)t)));
      if (v > best_v) best_v = v, best = t;
    }
    out->token = best >= 0 ? best : 0;
    out->p = best >= 0 ? exp(z[best] - m_raw) / s : 0;
    out->score = out->score01 = out->p;
    return;
  }
  /* Tempered, then top-p over the tokens that can matter: those within 40
   * nats of the best hold all but e^-40 of the mass, and the normaliser is
   * taken over every token, as torch's softmax does. */
  double m = -INFINITY;
  for (int t = 0; t < V; t++) {
    if (z[t] != -INFINITY) z[t] *= inv_t;
    if (z[t] > m) m = z[t];
  }
  int nc = 0;
  double total = 0;
  for (int t = 0; t < V; t++) {
    if (z[t] == -INFINITY) continue;
    total += exp(z[t] - m);
    if (z[t] > m - 40.0) cand[nc++] = t;
  }
  g_z = z;
  qsort(cand, (size_t)nc, sizeof *cand, cmp_z_desc);
  if (p->top_p > 0 && p->top_p < 1.0) {
    /* sorted_indices_to_remove = cumsum > top_p, shifted right by one. */
    double cum = 0;
    int keep = nc;
    for (int i = 0; i < nc; i++) {
      if (i > 0 && cum > p->top_p) {
        keep = i;
        break;
      }
      cum += exp(z[cand[i]] - m) / total;
    }
    nc = keep;
  }
  if (p->top_k > 0 && nc > p->top_k) {
    /* logits < the k-th largest are removed: ties with it stay. */
    int k = p->top_k;
    while (k < nc && z[cand[k]] == z[cand[p->top_k - 1]]) k++;
    nc = k;
  }
  double s = 0;
  for (int i = 0; i < nc; i++) s += exp(z[cand[i]] - m);
  int32_t pick = nc > 0 ? cand[0] : 0;
  if (sample) {
    double g_best = -INFINITY;
    for (int i = 0; i < nc; i++) {
      int t = cand[i];
      double g = z[t] - log(-log((double)sc_pick_uniform(key, (uint64_t)t)));
      if (g > g_best) g_best = g, pick = t;
    }
  }
  double p1 = nc > 0 ? exp(z[cand[0]] - m) / s : 0, p2 = nc > 1 ? exp(z[cand[1]] - m) / s : 0;
  double plogp = 0;
  for (int i = 0; i < nc; i++) {
    double pi = exp(z[cand[i]] - m) / s;
    plogp += pi * log(pi + 1e-10);
  }
  out->token = pick;
  out->p = nc > 0 ? exp(z[pick] - m) / s : 0;
  switch (p->rank) {
  case SC_RANK_MARGIN: out->score = out->score01 = p1 - p2; break;
  case SC_RANK_ENTROPY:
    out->score = plogp;
    out->score01 = exp(plogp);
    break;
  case SC_RANK_CONFIDENCE: out->score = out->score01 = out->p; break;
  }
}

/* ---- shared step machinery ------------------------------------------------------ */

typedef struct loop_run {
  const sc_loop_io *io;
  const sc_infill_params *p;
  float penalty;
  uint64_t key;
  int32_t mask;
  int n, c0, m;    /* sequence length, canvas start and length */
  int32_t *cv;     /* [cap] the canvas (owned, moves to the result) */
  float *cf;       /* [cap] confidences (owned) */
  int cap;
  int steps, committed;
  /* this step's rows */
  int nr;
  int32_t *pos;    /* [cap] canvas positions of the rows */
  sc_loop_pick *pk; /* [cap] their picks */
  int32_t *order;  /* [cap] */
  double ms_fwd, ms_smp;
  /* Drafts (model.h, sc_draft), on the loops that never re-mask. */
  sc_draft_run dr;
  bool *drafted; /* [cap] positions a draft filled this step (owned; NULL without drafts) */
  bool ended;    /* a draft that ends the middle set the canvas's end */
} loop_run;

static int row_of(const loop_run *r, int pos) {
  return r->io->info->shift_logits ? (pos > 0 ? pos - 1 : 0) : pos;
}

/* Writes the frame around the current canvas into io->seq. */
static void frame(loop_run *r, const int32_t *prefix, int n_prefix, const int32_t *suffix,
                  int n_suffix) {
  const sc_loop_io *io = r->io;
  r->n = sc_family_frame(io->prof, r->p->suffix_cut, r->p->pad_after, prefix, n_prefix, r->mask,
                         r->m, suffix, n_suffix, io->seq, &r->c0);
  memcpy(io->seq + r->c0, r->cv, (size_t)r->m * sizeof *r->cv);
}

/* One full forward pass and a pick for each listed row (r->pos[0..nr),
 * canvas positions). */
static sc_status step_pick(loop_run *r, int32_t suppress, sc_error *err) {
  const sc_loop_io *io = r->io;
  if (io->cancel && atomic_load(io->cancel))
    return sc_error_set(err, SC_ERR_CANCELLED, "infill cancelled");
  for (int k = 0; k < r->nr; k++) io->rows[k] = row_of(r, r->c0 + r->pos[k]);
  double t0 = sc_now_ms();
  SC_TRY(sc_forward_ctx_run(io->fctx, io->seq, r->n, io->rows, r->nr, io->logits, err));
  double t1 = sc_now_ms();
  r->ms_fwd += t1 - t0;
  r->steps++;
  for (int k = 0; k < r->nr; k++) {
    sc_loop_pick_row(io->logits + (size_t)k * (size_t)io->vocab, io->vocab, r->p, io->prof,
                     r->penalty, io->banned, suppress, sc_infill_row_key(r->key, r->steps, r->pos[k]),
                     io->z, io->cand, &r->pk[k]);
    if (r->pk[k].nonfinite) return sc_model_nonfinite_error(io->model, err);
    r->order[k] = k;
  }
  r->ms_smp += sc_now_ms() - t1;
  return SC_OK;
}

static _Thread_local const sc_loop_pick *g_pk;
static _Thread_local const int32_t *g_pos;
/* Rows by score, best first; the lower position first on a tie. */
static int cmp_best(const void *a, const void *b) {
  int ia = *(const int32_t *)a, ib = *(const int32_t *)b;
  double sa = g_pk[ia].score, sb = g_pk[ib].score;
  if (sa > sb) return -1;
  if (sa < sb) return 1;
  return g_pos[ia] - g_pos[ib];
}
/* Rows by score, worst first; the lower position first on a tie. */
static int cmp_worst(const void *a, const void *b) {
  int ia = *(const int32_t *)a, ib = *(const int32_t *)b;
  double sa = g_pk[ia].score, sb = g_pk[ib].score;
  if (sa < sb) return -1;
  if (sa > sb) return 1;
  return g_pos[ia] - g_pos[ib];
}
static void sort_best(loop_run *r) {
  g_pk = r->pk;
  g_pos = r->pos;
  qsort(r->order, (size_t)r->nr, sizeof *r->order, cmp_best);
}

/* Commits the best k rows. */
static void commit_best(loop_run *r, int k) {
  sort_best(r);
  if (k > r->nr) k = r->nr;
  for (int i = 0; i < k; i++) {
    int j = r->order[i];
    r->cv[r->pos[j]] = r->pk[j].token;
    r->cf[r->pos[j]] = (float)r->pk[j].p;
    r->committed++;
  }
}

/* Lists the canvas's masked positions in [a, b) as this step's rows. */
static int list_masks(loop_run *r, int a, int b) {
  r->nr = 0;
  for (int i = a; i < b && i < r->m; i++)
    if (r->cv[i] == r->mask) r->pos[r->nr++] = i;
  return r->nr;
}

/* This step's rows with drafts: the best live draft fills masked positions
 * of [a, b) first, and its positions are scored with the masks'. */
static int list_rows(loop_run *r, int a, int b) {
  if (r->dr.n > 0 && sc_draft_place(&r->dr, r->cv, r->m, r->mask, a, b) > 0)
    for (int k = 0; k < r->dr.np; k++) r->drafted[r->dr.pos[k]] = true;
  r->nr = 0;
  for (int i = a; i < b && i < r->m; i++)
    if (r->cv[i] == r->mask || (r->drafted && r->drafted[i])) r->pos[r->nr++] = i;
  return r->nr;
}

/* The acceptance test after a step (model.h, sc_draft): the leading run of
 * drafted rows whose token has p >= the threshold (softmax of the tempered,
 * penalised logits, as the engine's test) is committed; then the rows the
 * loop's own rule may commit are left in pos/pk: the masks, or only the
 * first rejected position (every other row saw the rejected token).
 * Returns how many were accepted; *cut: a draft that ends the middle was
 * committed whole and the canvas now ends with it. */
static int accept_drafts(loop_run *r, bool *rejected, bool *cut) {
  *rejected = *cut = false;
  if (r->dr.np == 0) return 0;
  const sc_loop_io *io = r->io;
  const sc_family_profile *pf = io->prof;
  sc_pick_row_params rp = {r->p->temperature > 0 ? (float)r->p->temperature : 0.0f, r->penalty,
                           0};
  sc_pick_params pp = {&rp, io->banned, pf->n_end > 0 ? pf->end_ids[0] : -1,
                       pf->n_end > 1 ? pf->end_ids[1] : -1, pf->end_ids + 2,
                       pf->n_end > 2 ? pf->n_end - 2 : 0};
  int n = 0;
  for (int k = 0; k < r->nr; k++)
    if (r->drafted[r->pos[k]]) {
      sc_pick_prob(io->logits + (size_t)k * (size_t)io->vocab, io->vocab, &rp, &pp,
                   r->cv[r->pos[k]], &r->dr.s[n]);
      n++;
    }
  int first = -1;
  int acc = sc_draft_accept(&r->dr, r->cv, r->mask, r->p->draft_threshold, &first);
  for (int j = 0; j < acc; j++) {
    r->cf[r->dr.pos[j]] = (float)r->dr.s[j].p;
    r->committed++;
  }
  for (int j = 0; j < r->dr.np; j++) r->drafted[r->dr.pos[j]] = false;
  *rejected = first >= 0;
  int end = acc > 0 && first < 0 ? sc_draft_end(&r->dr, r->cv, r->m, r->mask) : -1;
  if (end >= 0) {
    r->n -= r->m - end; /* the suffix would follow; no pass runs after this */
    r->m = end;
    r->ended = *cut = true;
  }
  /* What the loop's rule still chooses from. */
  int w = 0;
  for (int k = 0; k < r->nr; k++) {
    int pos = r->pos[k];
    if (*cut || pos >= r->m || r->cv[pos] != r->mask || (first >= 0 && pos != first)) continue;
    r->pos[w] = pos;
    r->pk[w] = r->pk[k];
    r->order[w] = w;
    w++;
  }
  r->nr = w;
  return acc;
}

/* The loop's own k after the drafts: one (the rejected position) after a
 * rejection, nothing more when a draft ended the middle. */
static int draft_k(int k, bool rejected, bool cut) { return cut ? 0 : rejected ? 1 : k; }

static void report(loop_run *r, int cand_index) {
  if (r->io->progress)
    r->io->progress(r->io->user, cand_index, r->cv, r->m, r->steps, r->committed);
}

/* ---- the loops ------------------------------------------------------------------------ */

/* DreamOn's fixed-canvas harness (generator.py L126-174): every step, the
 * masked position with the best score gets its token; at most p->steps
 * steps (0: until the canvas is full). */
static sc_status loop_one_per_step(loop_run *r, int cand_index, sc_error *err) {
  for (int step = 0; r->p->steps <= 0 || step < r->p->steps; step++) {
    if (list_rows(r, 0, r->m) == 0) break;
    memcpy(r->io->seq + r->c0, r->cv, (size_t)r->m * sizeof *r->cv);
    SC_TRY(step_pick(r, r->io->prof->expand_id, err));
    bool rejected, cut;
    accept_drafts(r, &rejected, &cut);
    commit_best(r, draft_k(1, rejected, cut));
    report(r, cand_index);
  }
  return SC_OK;
}

/* torch.linspace(1, eps, S + 1) in float32, as ATen computes it: from the
 * start for the first half, from the end for the second. */
static void linspace_f32(float start, float end, int n, float *out) {
  float step = (end - start) / (float)(n - 1);
  int half = n / 2;
  for (int i = 0; i < n; i++) {
    if (i < half) {
      float d = step * (float)i;
      out[i] = start + d;
    } else {
      float d = step * (float)(n - i - 1);
      out[i] = end - d;
    }
  }
}

/* Dream's schedule (CoDA generation_utils.py L450-540; Dream's is the same):
 * S steps (0: S = the canvas length, as their evals set steps = tokens); at
 * step i < S-1 the best int(n * (1 - t[i+1]/t[i])) of the n masked
 * positions get their tokens, at the last step all. */
static sc_status loop_dream_schedule(loop_run *r, int cand_index, sc_error *err) {
  const int S = r->p->steps > 0 ? r->p->steps : r->m;
  float *ts = malloc((size_t)(S + 1) * sizeof *ts);
  SC_CHECK(ts, err, SC_ERR_NOMEM, "infill: out of memory");
  linspace_f32(1.0f, 1e-3f, S + 1, ts);
  sc_status st = SC_OK;
  for (int i = 0; i < S; i++) {
    int nm = list_masks(r, 0, r->m);
    if (nm == 0) break;
    int k = nm;
    if (i < S - 1) {
      float ratio = ts[i + 1] / ts[i];
      float frac = 1.0f - ratio;
      float want = (float)nm * frac;
      k = (int)want;
    }
    if (k <= 0) continue; /* upstream runs the pass and commits nothing */
    list_rows(r, 0, r->m);
    memcpy(r->io->seq + r->c0, r->cv, (size_t)r->m * sizeof *r->cv);
    if ((st = step_pick(r, -1, err)) != SC_OK) break;
    bool rejected, cut;
    accept_drafts(r, &rejected, &cut);
    commit_best(r, draft_k(k, rejected, cut));
    report(r, cand_index);
  }
  free(ts);
  return st;
}

/* LLaDA's generate() (L60-120) on the canvas: blocks of block_len; a
 * block's masks are split evenly over its steps (the first n % s steps take
 * one more, get_num_transfer_tokens L22-40), each step committing the best
 * of the masks before the block's end (positions past it score -inf, L109).
 * steps 0: one token per step (steps = length, as chat.py). */
static sc_status loop_llada(loop_run *r, int cand_index, sc_error *err) {
  const int m = r->m;
  const int B = r->p->block_len > 0 && r->p->block_len < m ? r->p->block_len : m;
  const int nb = (m + B - 1) / B;
  for (int b = 0; b < nb; b++) {
    const int be = (b + 1) * B < m ? (b + 1) * B : m;
    int nmask = 0;
    for (int i = b * B; i < be; i++) nmask += r->cv[i] == r->mask;
    int s = r->p->steps > 0 ? r->p->steps / nb : nmask;
    if (s < 1) s = 1;
    for (int j = 0; j < s; j++) {
      int k = nmask / s + (j < nmask % s ? 1 : 0);
      if (k == 0 || list_rows(r, 0, be) == 0) continue;
      memcpy(r->io->seq + r->c0, r->cv, (size_t)r->m * sizeof *r->cv);
      SC_TRY(step_pick(r, -1, err));
      bool rejected, cut;
      accept_drafts(r, &rejected, &cut);
      commit_best(r, draft_k(k, rejected, cut));
      report(r, cand_index);
      if (cut) return SC_OK;
    }
  }
  return SC_OK;
}

/* Open-dLLM's p2 (generation_utils.py L194-277): S steps; at step i every
 * canvas position (committed or not) is predicted, the floor(m (1 - (i+1)/S))
 * least confident of them become masks again, and the masks that stay
 * unmasked take their predictions. */
static sc_status loop_p2(loop_run *r, int cand_index, sc_error *err) {
  const int S = r->p->steps > 0 ? r->p->steps : 64;
  const int m = r->m;
  bool *was_mask = malloc((size_t)m * sizeof *was_mask);
  bool *remask = malloc((size_t)m * sizeof *remask);
  if (!was_mask || !remask) {
    free(was_mask);
    free(remask);
    return sc_error_set(err, SC_ERR_NOMEM, "infill: out of memory");
  }
  sc_status st = SC_OK;
  for (int i = 0; i < S; i++) {
    int nm = 0;
    for (int j = 0; j < m; j++) nm += (was_mask[j] = r->cv[j] == r->mask);
    if (nm == 0) break;
    r->nr = m;
    for (int j = 0; j < m; j++) r->pos[j] = j;
    memcpy(r->io->seq + r->c0, r->cv, (size_t)m * sizeof *r->cv);
    if ((st = step_pick(r, -1, err)) != SC_OK) break;
    /* num_to_mask = floor(float32(m) * (1 - kappa)), kappa = (i+1)/S. */
    float keep = (float)(1.0 - (double)(i + 1) / (double)S);
    int nt = (int)floorf((float)m * keep);
    if (nt < 0) nt = 0;
    if (nt > m) nt = m;
    /* The nt least confident (argsort ascending; equal scores in
     * position order). */
    for (int j = 0; j < m; j++) r->order[j] = j, remask[j] = false;
    g_pk = r->pk;
    g_pos = r->pos;
    qsort(r->order, (size_t)m, sizeof *r->order, cmp_worst);
    for (int a = 0; a < nt; a++) remask[r->order[a]] = true;
    for (int j = 0; j < m; j++) {
      if (remask[j]) {
        r->cv[j] = r->mask;
        r->cf[j] = 0;
      } else if (was_mask[j]) {
        r->cv[j] = r->pk[j].token;
        r->cf[j] = (float)r->pk[j].p;
        r->committed++;
      }
    }
    report(r, cand_index);
  }
  free(was_mask);
  free(remask);
  return st;
}

/* DreamOn (generator.py L205-316): the canvas starts at m0 masks and may
 * grow to max_m; each step commits one token (upstream) or every position
 * scoring at least the threshold (the fast preset), then masks after the
 * first EOS become EOS (pad_eos_to_right, when the profile says so), each
 * expand becomes two masks, and every EOS written this step is deleted. */
static sc_status loop_dreamon(loop_run *r, const int32_t *prefix, int n_prefix,
                              const int32_t *suffix, int n_suffix, int max_m, int cand_index,
                              bool *ended, sc_error *err) {
  const sc_family_profile *pf = r->io->prof;
  const sc_infill_params *p = r->p;
  const bool upstream = p->loop == SC_LOOP_DREAMON;
  int budget = max_m; /* expand_budget = max_gen_len (L119) */
  bool *wm = malloc((size_t)r->cap * sizeof *wm);
  SC_CHECK(wm, err, SC_ERR_NOMEM, "infill: out of memory");
  sc_status st = SC_OK;
  for (int step = 0; p->steps <= 0 || !upstream || step < p->steps; step++) {
    int nm = list_masks(r, 0, r->m);
    if (nm == 0) break;
    for (int i = 0; i < r->m; i++) wm[i] = r->cv[i] == r->mask;
    frame(r, prefix, n_prefix, suffix, n_suffix);
    /* The expand logit is cut at the limit (L232-234). */
    int32_t suppress = r->m >= max_m || budget == 0 ? pf->expand_id : -1;
    if ((st = step_pick(r, suppress, err)) != SC_OK) break;
    int take = 1;
    if (!upstream) {
      sort_best(r);
      if (p->schedule == SC_SCHEDULE_THRESHOLD) {
        while (take < r->nr && r->pk[r->order[take]].score01 >= p->threshold) take++;
      } else if (p->steps > 0) {
        int left = p->steps - r->steps + 1;
        take = left > 1 ? (nm + left - 1) / left : nm;
      }
    }
    commit_best(r, take);
    /* pad_eos_to_right (L260-279): masks (as of this step's start) from the
     * first end token on become EOS. */
    if (pf->eos_fill) {
      int first = -1;
      for (int i = 0; i < r->m && first < 0; i++)
        if (sc_family_is_end(pf, r->cv[i])) first = i;
      for (int i = first >= 0 ? first : r->m; i < r->m; i++)
        if (wm[i]) r->cv[i] = pf->eos_id, r->cf[i] = 1.0f;
    }
    /* Expand (L287-301), right to left: two masks, one more position;
     * at the limit (several in one fast step) only one mask. */
    for (int i = r->m - 1; i >= 0; i--) {
      if (r->cv[i] != pf->expand_id) continue;
      r->cv[i] = r->mask;
      r->cf[i] = 0;
      wm[i] = false;
      if (r->m < max_m && budget > 0) {
        memmove(r->cv + i + 2, r->cv + i + 1, (size_t)(r->m - i - 1) * sizeof *r->cv);
        memmove(r->cf + i + 2, r->cf + i + 1, (size_t)(r->m - i - 1) * sizeof *r->cf);
        memmove(wm + i + 2, wm + i + 1, (size_t)(r->m - i - 1) * sizeof *wm);
        r->cv[i + 1] = r->mask;
        r->cf[i + 1] = 0;
        wm[i + 1] = false;
        r->m++;
        budget--;
      }
    }
    /* Delete (L302-314): end tokens written this step leave the canvas. */
    int w = 0;
    for (int i = 0; i < r->m; i++) {
      if (wm[i] && sc_family_is_end(pf, r->cv[i])) {
        *ended = true;
        continue;
      }
      r->cv[w] = r->cv[i], r->cf[w] = r->cf[i], wm[w] = wm[i];
      w++;
    }
    r->m = w;
    report(r, cand_index);
  }
  free(wm);
  return st;
}

/* ---- entry ---------------------------------------------------------------------------- */

sc_status sc_loop_decode(const sc_loop_io *io, const int32_t *prefix, int n_prefix,
                         const int32_t *suffix, int n_suffix, int m0, int cand_index,
                         const sc_infill_params *p, sc_cand *out, double *ms_fwd,
                         double *ms_smp, sc_error *err) {
  const sc_family_profile *pf = io->prof;
  memset(out, 0, sizeof *out);
  SC_CHECK(io->info->mask_id >= 0, err, SC_ERR_UNSUPPORTED,
           "the checkpoint has no mask token: it is not a diffusion model");
  const bool dreamon = p->loop == SC_LOOP_DREAMON ||
                       (p->loop == SC_LOOP_BLOCKS && pf->expand_id >= 0 && !p->no_expand);
  SC_CHECK(!dreamon || pf->expand_id >= 0, err, SC_ERR_UNSUPPORTED,
           "infill: the DreamOn loop needs an expand token (sculpt_expand_token_id)");
  int max_m = m0;
  if (dreamon) {
    int room = io->max_seq - n_prefix - n_suffix -
               sc_family_frame_extra(pf, p->suffix_cut, p->pad_after);
    max_m = p->max_canvas > 0 ? p->max_canvas : pf->max_infill > 0 ? pf->max_infill : m0;
    if (max_m > room) max_m = room;
    if (max_m < m0) max_m = m0;
  }
  loop_run r;
  memset(&r, 0, sizeof r);
  r.io = io;
  r.p = p;
  r.penalty = isnan(p->eos_penalty) ? io->info->eos_penalty : p->eos_penalty;
  r.key = sc_infill_run_key(p->seed, cand_index);
  r.mask = io->info->mask_id;
  r.m = m0;
  r.cap = max_m + 1;
  r.cv = malloc((size_t)r.cap * sizeof *r.cv);
  r.cf = calloc((size_t)r.cap, sizeof *r.cf);
  r.pos = malloc((size_t)r.cap * sizeof *r.pos);
  r.pk = malloc((size_t)r.cap * sizeof *r.pk);
  r.order = malloc((size_t)r.cap * sizeof *r.order);
  sc_status st = SC_OK;
  if (!r.cv || !r.cf || !r.pos || !r.pk || !r.order) {
    st = sc_error_set(err, SC_ERR_NOMEM, "infill: out of memory");
    goto done;
  }
  for (int i = 0; i < m0; i++) r.cv[i] = r.mask;
  /* Drafts on the loops that commit without re-masking (model.h). */
  if (!dreamon && p->loop != SC_LOOP_P2 && p->n_drafts > 0) {
    if ((st = sc_draft_run_init(&r.dr, p, r.cap, err)) != SC_OK) goto done;
    if (r.dr.n > 0 && !(r.drafted = calloc((size_t)r.cap, sizeof *r.drafted))) {
      st = sc_error_set(err, SC_ERR_NOMEM, "infill: out of memory");
      goto done;
    }
  }
  bool ended = false;
  if (dreamon) {
    st = loop_dreamon(&r, prefix, n_prefix, suffix, n_suffix, max_m, cand_index, &ended, err);
  } else {
    frame(&r, prefix, n_prefix, suffix, n_suffix);
    switch (p->loop) {
    case SC_LOOP_ONE_PER_STEP: st = loop_one_per_step(&r, cand_index, err); break;
    case SC_LOOP_DREAM_SCHEDULE: st = loop_dream_schedule(&r, cand_index, err); break;
    case SC_LOOP_LLADA: st = loop_llada(&r, cand_index, err); break;
    case SC_LOOP_P2: st = loop_p2(&r, cand_index, err); break;
    case SC_LOOP_BLOCKS:
    case SC_LOOP_DREAMON:
      st = sc_error_set(err, SC_ERR_INTERNAL, "infill: loop %s is not an upstream loop",
                        sc_decode_loop_name(p->loop));
      break;
    }
  }
  *ms_fwd += r.ms_fwd;
  *ms_smp += r.ms_smp;
  out->steps = r.steps;
  out->committed = r.committed;
  out->drafted = r.dr.drafted;
  out->accepted = r.dr.accepted;
  if (st != SC_OK) goto done;
  out->m = r.m;
  out->c0 = r.c0;
  out->n = r.n;
  out->canvas = r.cv;
  out->conf = r.cf;
  r.cv = NULL;
  r.cf = NULL;
  sc_family_score(pf, out);
  out->ended = out->ended || ended || r.ended;
done:
  sc_draft_run_free(&r.dr);
  free(r.drafted);
  free(r.cv);
  free(r.cf);
  free(r.pos);
  free(r.pk);
  free(r.order);
  return st;
}

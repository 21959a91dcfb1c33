/* pick.c — the picking rules of model.h on the host, in double precision:
 * the CPU backend's picker and the reference for the GPU's lm_head
 * epilogue (kernels/ops.cu, k_lm_stats), which follows the same rules in
 * f32. The noise comes from kernels.h so that both draw the same bits. */
#include "kernels.h"
#include "model.h"

#include <math.h>

float sc_pick_uniform(uint64_t key, uint64_t t) { return sc_kernels_pick_uniform(key, t); }

/* One of a family's end tokens beyond eos_id and pad_id (the penalty falls
 * on all of them). */
static bool is_more_end(const sc_pick_params *pp, int t) {
  for (int i = 0; i < pp->n_more_end_ids; i++)
    if (pp->more_end_ids[i] == t) return true;
  return false;
}

static void pick_row(const float *l, int V, const sc_pick_row_params *rp,
                     const sc_pick_params *pp, double *z, sc_row_pick *out) {
  const bool sample = rp->temperature > 0;
  const double inv_t = sample ? 1.0 / (double)rp->temperature : 1.0;
  const double pen = (double)rp->eos_penalty * inv_t;
  int best = -1, pick = -1;
  bool nonfinite = false;
  double m = -INFINITY, second = -INFINITY, g_best = -INFINITY;
  for (int t = 0; t < V; t++) {
    /* Every logit, banned or not: one that is NaN or infinite means the
     * model is broken, whatever this row would pick. */
    nonfinite |= !isfinite(l[t]);
    double v = -INFINITY;
    if (!(pp->banned && pp->banned[t])) {
      v = (double)l[t] * inv_t;
      if (t == pp->eos_id || t == pp->pad_id) v -= pen;
      else if (pen != 0.0 && pp->n_more_end_ids > 0 && is_more_end(pp, t)) v -= pen;
    }
    z[t] = v;
    if (v > m) {
      second = m;
      m = v;
      best = t;
    } else if (v > second) {
      second = v;
    }
    if (sample && v > -INFINITY) {
      double g = v - log(-log((double)sc_kernels_pick_uniform(rp->key, (uint64_t)t)));
      if (g > g_best) {
        g_best = g;
        pick = t;
      }
    }
  }
  if (!sample) pick = best;
  double zs = 0, s1 = 0;
  for (int t = 0; best >= 0 && t < V; t++) {
    if (z[t] == -INFINITY) continue;
    double d = z[t] - m, e = exp(d);
    zs += e;
    s1 += e * d;
  }
  if (nonfinite || best < 0 || pick < 0 || !isfinite(zs) || !isfinite(s1)) {
    /* Every id banned, or non-finite logits: nothing to pick; say so with
     * p = 0 (and the flag, for the caller to refuse the pass). */
    *out = (sc_row_pick){0, 0.0, 0.0, 0.0, 0.0, nonfinite};
    return;
  }
  out->nonfinite = false;
  out->token = pick;
  out->p = exp(z[pick] - m) / zs;
  out->max_prob = 1.0 / zs;
  out->margin = (1.0 - exp(second - m)) / zs;
  out->entropy = log(zs) - s1 / zs;
}

void sc_pick_rows(const float *logits, int n_rows, int vocab, const sc_pick_params *pick,
                  double *z, sc_row_pick *out) {
  for (int k = 0; k < n_rows; k++)
    pick_row(logits + (size_t)k * (size_t)vocab, vocab, &pick->rows[k], pick, z, &out[k]);
}

/* A logit as pick_row adjusts it (banned ids aside). */
static double adjusted(const float *l, int t, double inv_t, double pen, const sc_pick_params *pp) {
  double v = (double)l[t] * inv_t;
  if (t == pp->eos_id || t == pp->pad_id) v -= pen;
  else if (pen != 0.0 && pp->n_more_end_ids > 0 && is_more_end(pp, t)) v -= pen;
  return v;
}

/* The rules of pick_row, for one token's probability (and the row's
 * largest, 1 / the sum): two passes (the maximum, then the sum), no
 * scratch row. */
double sc_pick_prob(const float *l, int V, const sc_pick_row_params *rp, const sc_pick_params *pp,
                    int32_t token, sc_draft_score *out) {
  if (out) *out = (sc_draft_score){0.0, 0.0};
  if (token < 0 || token >= V || (pp->banned && pp->banned[token])) return 0.0;
  const double inv_t = rp->temperature > 0 ? 1.0 / (double)rp->temperature : 1.0;
  const double pen = (double)rp->eos_penalty * inv_t;
  double m = -INFINITY;
  for (int t = 0; t < V; t++) {
    if (!isfinite(l[t])) return 0.0;
    if (pp->banned && pp->banned[t]) continue;
    double v = adjusted(l, t, inv_t, pen, pp);
    if (v > m) m = v;
  }
  double s = 0;
  for (int t = 0; t < V; t++)
    if (!pp->banned || !pp->banned[t]) s += exp(adjusted(l, t, inv_t, pen, pp) - m);
  if (!(s > 0) || !isfinite(s)) return 0.0;
  const double p = exp(adjusted(l, token, inv_t, pen, pp) - m) / s;
  if (out) *out = (sc_draft_score){p, 1.0 / s};
  return p;
}

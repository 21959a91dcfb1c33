/* draft.c — drafts on a canvas (model.h, sc_draft): which draft a step
 * places, and the acceptance test on the probabilities the pass gave it.
 * Shared by the block loop (engine.c) and the upstream loops (upstream.c);
 * the probabilities themselves come from the picking rules (pick.c).
 *
 * The idea is speculative decoding's (a draft verified by the model in one
 * pass: Leviathan et al. 2023; drafts looked up in the context or a
 * datastore: llama.cpp's lookup decoding, prompt-lookup decoding, REST, He
 * et al. 2023), on a canvas: every drafted position is scored in the same
 * pass, on both sides of it, and the leading run that passes is kept. */
#include "infill_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

sc_status sc_draft_run_init(sc_draft_run *dr, const sc_infill_params *p, int cap, sc_error *err) {
  memset(dr, 0, sizeof *dr);
  dr->cur = -1;
  if (!p || !p->drafts || p->n_drafts <= 0 || cap <= 0) return SC_OK;
  dr->d = p->drafts;
  dr->n = p->n_drafts < SC_INFILL_MAX_DRAFTS ? p->n_drafts : SC_INFILL_MAX_DRAFTS;
  dr->pos = malloc((size_t)cap * sizeof *dr->pos);
  dr->s = malloc((size_t)cap * sizeof *dr->s);
  if (!dr->pos || !dr->s) {
    sc_draft_run_free(dr);
    return sc_error_set(err, SC_ERR_NOMEM, "infill: out of memory");
  }
  dr->cap = cap;
  return SC_OK;
}

void sc_draft_run_free(sc_draft_run *dr) {
  free(dr->pos);
  free(dr->s);
  memset(dr, 0, sizeof *dr);
  dr->cur = -1;
}

/* Whether draft d agrees with every committed position it covers, and how
 * many masked ones it covers within [lo, hi). */
static bool agrees(const sc_draft *d, const int32_t *cv, int m, int32_t mask, int lo, int hi,
                   int *masked) {
  *masked = 0;
  if (!d->ids || d->n <= 0 || d->offset < 0 || d->offset >= m) return false;
  int end = d->offset + d->n < m ? d->offset + d->n : m;
  for (int j = d->offset; j < end; j++) {
    if (cv[j] == mask) *masked += j >= lo && j < hi;
    else if (cv[j] != d->ids[j - d->offset]) return false;
  }
  return true;
}

int sc_draft_place(sc_draft_run *dr, int32_t *cv, int m, int32_t mask, int lo, int hi) {
  dr->cur = -1;
  dr->np = 0;
  for (int i = 0; i < dr->n; i++) {
    if (dr->dead[i]) continue;
    int masked = 0;
    if (!agrees(&dr->d[i], cv, m, mask, lo, hi, &masked)) {
      dr->dead[i] = true;
      continue;
    }
    if (masked == 0) continue; /* nothing to add here; perhaps in a later block */
    const sc_draft *d = &dr->d[i];
    int a = d->offset > lo ? d->offset : lo;
    int b = d->offset + d->n < hi ? d->offset + d->n : hi;
    if (b > m) b = m;
    for (int j = a; j < b && dr->np < dr->cap; j++) {
      if (cv[j] != mask) continue;
      cv[j] = d->ids[j - d->offset];
      dr->pos[dr->np++] = j;
    }
    dr->cur = i;
    dr->drafted += dr->np;
    return dr->np;
  }
  return 0;
}

int sc_draft_accept(sc_draft_run *dr, int32_t *cv, int32_t mask, float thr,
                    int *first_rejected) {
  *first_rejected = -1;
  /* A likelihood-ratio test: a drafted token stays while the model finds
   * it at least thr times as likely as its own favourite for that row
   * (p >= thr p_top, i.e. its log-probability within ln(1/thr) nats of the
   * best). Scale-free where an absolute p is not: a diffuse row (a weak or
   * unsure model) gives the right token p 0.001-0.03 beside a favourite of
   * a few tenths. Medusa's typical acceptance (Cai et al. 2024,
   * arXiv:2401.10774, section 3.3.1: p > min(eps, sqrt(eps) exp(-H)))
   * relaxes an absolute threshold by the entropy for the same reason; on
   * repo-single with the shipped model no threshold above 0 kept more than
   * 1.38 tokens a pass with it, against 4.61 here at the default, with
   * higher exact match (docs/evaluation.md, "Drafts"). A token the rules
   * ban (p 0) never stays, whatever thr. */
  int k = 0;
  while (k < dr->np && dr->s[k].p > 0 && dr->s[k].p >= (double)thr * dr->s[k].top) k++;
  if (k < dr->np) {
    /* What follows a rejected token was scored against it: none of it stays. */
    *first_rejected = dr->pos[k];
    for (int j = k; j < dr->np; j++) cv[dr->pos[j]] = mask;
    if (dr->cur >= 0) dr->dead[dr->cur] = true;
  }
  dr->accepted += k;
  return k;
}

int sc_draft_end(const sc_draft_run *dr, const int32_t *cv, int m, int32_t mask) {
  if (dr->cur < 0) return -1;
  const sc_draft *d = &dr->d[dr->cur];
  int end = d->offset + d->n;
  if (!d->ends_middle || end > m) return -1;
  for (int j = 0; j < end; j++)
    if (cv[j] == mask || (j >= d->offset && cv[j] != d->ids[j - d->offset])) return -1;
  return end;
}

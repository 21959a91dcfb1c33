/*
 * infill_impl.h — private to model/: what the engine (engine.c), the family
 * profiles (family.c) and the upstream decode loops (upstream.c) share: one
 * decoded candidate, the frame and ending rules of a profile, the noise keys,
 * and the resources the engine lends a loop. Not for other modules.
 */
#ifndef SCULPT_INFILL_IMPL_H
#define SCULPT_INFILL_IMPL_H

#include "kernels.h"
#include "model.h"

/* One decoded candidate: its final canvas and how it got there. */
typedef struct sc_cand {
  int m;           /* canvas length */
  int c0;          /* canvas start in the sequence */
  int n;           /* sequence length */
  int32_t *canvas; /* [m] final tokens (owned) */
  float *conf;     /* [m] p of each token when it was committed (owned) */
  double mean_logp;
  int steps, committed;
  int drafted, accepted; /* draft tokens placed and committed (sc_draft_run) */
  bool ended;
} sc_cand;

/* ---- drafts (draft.c): what the block loop and the upstream loops share ---- */

/* One candidate's drafts while it decodes (model.h, sc_draft). */
typedef struct sc_draft_run {
  const sc_draft *d; /* the params' drafts, best first (borrowed) */
  int n;
  bool dead[SC_INFILL_MAX_DRAFTS]; /* rejected, or no longer agreeing with the canvas */
  int cur;       /* the draft placed this step; -1: none */
  int np;        /* positions placed this step ... */
  int32_t *pos;  /* ... [cap]: canvas positions, ascending (owned) */
  sc_draft_score *s; /* [cap] how the pass scored each placed token, for the test (owned) */
  int cap;
  int drafted, accepted; /* over the run */
} sc_draft_run;

/* p's drafts for a canvas of up to cap positions; nothing to free when p
 * has none. */
sc_status sc_draft_run_init(sc_draft_run *dr, const sc_infill_params *p, int cap, sc_error *err);
void sc_draft_run_free(sc_draft_run *dr);
/* Writes the best live draft that agrees with the canvas cv[0, m) into its
 * masked positions within [lo, hi) and lists them in dr->pos; returns how
 * many (0: none placed, dr->cur -1). Drafts that disagree with a committed
 * position die. */
int sc_draft_place(sc_draft_run *dr, int32_t *cv, int m, int32_t mask, int lo, int hi);
/* The acceptance test: the leading run of placed positions whose p[k]
 * (dr->p, for dr->pos[k]) is at least min(thr, sqrt(thr) exp(-h[k]))
 * stays; the rest become masks again in cv and the draft dies. Returns
 * the run's length; *first_rejected is the first position that fell
 * short, -1 when all passed. */
int sc_draft_accept(sc_draft_run *dr, int32_t *cv, int32_t mask, float thr,
                    int *first_rejected);
/* After an acceptance: the canvas length the placed draft sets (its end)
 * when it ends the middle, all of it is committed and no mask is left
 * before it; else -1. */
int sc_draft_end(const sc_draft_run *dr, const int32_t *cv, int m, int32_t mask);

/* ---- the profile's rules (family.c) ---------------------------------------- */

/* Whether t is one of the profile's end tokens. */
static inline bool sc_family_is_end(const sc_family_profile *pf, int32_t t) {
  for (int i = 0; i < pf->n_end; i++)
    if (pf->end_ids[i] == t) return true;
  return false;
}

/* Tokens the frame adds around prefix + canvas + suffix: the BOS, the EOS
 * after a whole suffix, and pad_after EOS. */
int sc_family_frame_extra(const sc_family_profile *pf, bool suffix_cut, int pad_after);

/* The frame a fit reserves (model.h, sc_infill_frame) for a profile, a
 * vocabulary of vocab ids and decoding with p; sc_infill_frame_for for a
 * loaded model, sc_model_context_read for a checkpoint's config alone. */
void sc_family_frame_for(const sc_family_profile *pf, int vocab, const sc_infill_params *p,
                         sc_infill_frame *out);

/* Writes [BOS] prefix MASK*m suffix [EOS] [EOS*pad_after] into seq (room
 * for n_prefix + m + n_suffix + sc_family_frame_extra) and returns its
 * length; *c0 = the canvas start. A cut suffix gets no EOS (nor padding). */
int sc_family_frame(const sc_family_profile *pf, bool suffix_cut, int pad_after,
                    const int32_t *prefix, int n_prefix, int32_t mask, int m,
                    const int32_t *suffix, int n_suffix, int32_t *seq, int *c0);

/* The middle of a canvas: up to the first end token, without the tokens a
 * user must never see (mask, end and expand tokens, the BOS, ids the
 * tokenizer marks special or has no token for; tok may be NULL). ids and
 * conf receive at most m entries; returns how many. */
int sc_family_middle(const sc_family_profile *pf, const sc_tokenizer *tok, int32_t mask,
                     const int32_t *canvas, const float *conf, int m, int32_t *ids,
                     float *out_conf);

/* cs->mean_logp over the canvas up to and including its first end token;
 * cs->ended when there is one. */
void sc_family_score(const sc_family_profile *pf, sc_cand *cs);

/* ---- config.json and the tokenizer files (config.c) ------------------------ */

struct json_t;
typedef struct sc_token_files {
  struct json_t *tokenizer;        /* tokenizer.json, or NULL */
  struct json_t *tokenizer_config; /* tokenizer_config.json, or NULL */
  struct json_t *special_map;      /* special_tokens_map.json, or NULL */
} sc_token_files;

/* The id of the added token whose content is text; -1 when none. */
int32_t sc_token_files_added_id(const sc_token_files *tf, const char *text);
/* The content of the added token with this id; NULL when none (borrowed). */
const char *sc_token_files_added_text(const sc_token_files *tf, int32_t id);
/* The text of "<what>_token" (e.g. "bos") in tokenizer_config.json, else in
 * special_tokens_map.json; NULL when neither names one (borrowed). */
const char *sc_token_files_named(const sc_token_files *tf, const char *what);

struct sc_config;
/* Picks and resolves the family profile of a checkpoint being loaded: c's
 * family, sizes and ids are read; cfg is its config.json (for the
 * sculpt_* keys). Fills c->profile. Every loader must call it (a zeroed
 * profile would frame with id 0); a loader without tokenizer files or a
 * config.json passes an empty sc_token_files and cfg NULL. */
sc_status sc_family_profile_resolve(const char *dir, const struct json_t *cfg,
                                    const sc_token_files *tf, struct sc_config *c,
                                    sc_error *err);

/* ---- the noise's keys -------------------------------------------------------- */

/* A candidate's key: the request's seed and the candidate's number. */
static inline uint64_t sc_infill_run_key(uint64_t seed, int index) {
  return sc_kernels_mix64(seed ^ (0xA24BAED4963EE407ULL * (uint64_t)(index + 1)));
}

/* A row's key: its candidate's key, the step and the canvas position. */
static inline uint64_t sc_infill_row_key(uint64_t key, int step, int pos) {
  return sc_kernels_mix64(key ^ sc_kernels_mix64(((uint64_t)(uint32_t)step << 32) |
                                                 (uint64_t)(uint32_t)pos));
}

/* ---- the upstream loops (upstream.c) ------------------------------------------ */

/* What the engine lends a loop for one call (all borrowed). */
typedef struct sc_loop_io {
  const sc_model *model; /* named in a non-finite logits error */
  sc_forward_ctx *fctx;
  const sc_model_info *info;
  const sc_family_profile *prof;
  int max_seq, vocab;
  float *logits;   /* [max_seq][vocab] */
  int32_t *rows;   /* [max_seq] */
  int32_t *seq;    /* [max_seq] */
  double *z;       /* [vocab] */
  int32_t *cand;   /* [vocab] */
  /* [vocab] 1 = never picked, or NULL: sculpt's fast DreamOn bans what the
   * tokenizer has no token for; the upstream loops ban nothing, as their
   * authors' code. */
  const uint8_t *banned;
  sc_infill_progress_fn progress;
  void *user;
  const _Atomic int *cancel;
} sc_loop_io;

/* Decodes one candidate of initial canvas length m with p->loop (an
 * upstream loop), or DreamOn's expand/delete loop under sculpt's schedule
 * when p->loop is SC_LOOP_BLOCKS. Fills *out (its buffers owned by the
 * caller) and adds the time spent to *ms_fwd and *ms_smp. */
sc_status sc_loop_decode(const sc_loop_io *io, const int32_t *prefix, int n_prefix,
                         const int32_t *suffix, int n_suffix, int m, int cand_index,
                         const sc_infill_params *p, sc_cand *out, double *ms_fwd,
                         double *ms_smp, sc_error *err);

/* One row picked as the upstream samplers do (torch's top-p/top-k
 * semantics, confidence over the filtered tempered distribution, entropy
 * as sum p log(p + 1e-10); LLaDA's plain confidence on request); exposed
 * for the unit tests. */
typedef struct sc_loop_pick {
  int32_t token;
  double p;       /* p(token) under the filtered, tempered distribution */
  double score;   /* the rank's value as upstream compares it */
  double score01; /* the same in [0, 1] (exp of the entropy one) */
  bool nonfinite; /* a logit of the row was NaN or infinite: nothing was picked */
} sc_loop_pick;
void sc_loop_pick_row(const float *logits, int vocab, const sc_infill_params *p,
                      const sc_family_profile *pf, float eos_penalty, const uint8_t *banned,
                      int32_t suppress, uint64_t key, double *z, int32_t *cand,
                      sc_loop_pick *out);

#endif

/* fit.c — fitting an infill request to a context (model.h, "fitting a
 * request to a context"): the frame's own tokens are reserved first, then
 * the canvas and the room a growing canvas needs, within half of what is
 * left; the prompt gets the rest, and when it is short the prefix is cut
 * first, down to half of it, then the suffix, which then loses its EOS.
 * The same numbers serve the local engine, `sculpt complete`, `sculpt
 * context`, `sculpt batch`, `sculpt serve` and a remote backend whose
 * context is known, so that no request fails because of where the cursor
 * is or how long the file is. The frame itself is the family profile's
 * (family.c, sc_infill_frame_for). */
#include "model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

sc_status sc_infill_budget_compute(int context, const sc_infill_frame *frame, int budget,
                                   int canvas, sc_infill_budget *out, sc_error *err) {
  *out = (sc_infill_budget){0};
  SC_CHECK(frame && frame->whole >= 0 && frame->cut >= 0 && frame->cut <= frame->whole &&
               frame->grow >= 0 && budget >= 0 && canvas >= 1,
           err, SC_ERR_INVALID, "fit: bad arguments");
  int room = context - frame->whole;
  SC_CHECK(room >= 2, err, SC_ERR_INVALID,
           "a %d-token context leaves no room for a canvas and a prompt", context);
  /* At most half the room for the canvas and its growth: the other half
   * conditions it. */
  int half = room / 2;
  out->context = context;
  out->frame = *frame;
  out->canvas = canvas < half ? canvas : half;
  out->max_canvas = out->canvas;
  if (frame->grow > out->canvas) out->max_canvas = frame->grow < half ? frame->grow : half;
  int avail = room - out->max_canvas;
  int avail_cut = avail + (frame->whole - frame->cut);
  out->prompt = budget > 0 && budget < avail ? budget : avail;
  out->prompt_cut = budget > 0 && budget < avail_cut ? budget : avail_cut;
  out->clamped = budget > avail;
  return SC_OK;
}

void sc_infill_fit(const sc_infill_budget *fit, size_t n_pre, size_t n_suf, size_t *keep_pre,
                   size_t *keep_suf, bool *suffix_cut) {
  size_t whole = fit->prompt > 0 ? (size_t)fit->prompt : 0;
  size_t cut = fit->prompt_cut > 0 ? (size_t)fit->prompt_cut : 0;
  *suffix_cut = false;
  /* The prefix is cut from its far end first (upstream harnesses cut the
   * whole prompt from the left), but keeps half the room when it has that
   * much: the lines before the cursor matter most to an editor. */
  size_t floor_pre = n_pre < whole / 2 ? n_pre : whole / 2;
  if (n_suf + floor_pre <= whole) {
    *keep_suf = n_suf;
    *keep_pre = n_pre < whole - n_suf ? n_pre : whole - n_suf;
    return;
  }
  /* The suffix is cut from its far end: no EOS follows it (the file does
   * not end there), which leaves the room of the frame's EOS and padding.
   * At least one token goes, so that a suffix called cut is. */
  floor_pre = n_pre < cut / 2 ? n_pre : cut / 2;
  *keep_suf = cut - floor_pre < n_suf - 1 ? cut - floor_pre : n_suf - 1;
  *keep_pre = n_pre < cut - *keep_suf ? n_pre : cut - *keep_suf;
  *suffix_cut = true;
}

int sc_infill_positions(const sc_infill_budget *fit, size_t keep_pre, size_t keep_suf,
                        bool suffix_cut) {
  return (int)(keep_pre + keep_suf) + fit->max_canvas +
         (suffix_cut ? fit->frame.cut : fit->frame.whole);
}

sc_status sc_infill_fit_plan(const sc_model *model, int context, int budget,
                             sc_infill_plan *plan, sc_infill_params *params,
                             sc_infill_budget *out, sc_error *err) {
  SC_CHECK(model && plan && params && plan->n_lengths >= 1 &&
               plan->n_lengths <= SC_INFILL_MAX_CANDIDATES,
           err, SC_ERR_INVALID, "fit: the plan needs 1 to %d canvas lengths",
           SC_INFILL_MAX_CANDIDATES);
  int longest = 1;
  for (int c = 0; c < plan->n_lengths; c++)
    if (plan->lengths[c] > longest) longest = plan->lengths[c];
  sc_infill_frame frame;
  sc_infill_frame_for(model, params, &frame);
  SC_TRY(sc_infill_budget_compute(context, &frame, budget, longest, out, err));
  for (int c = 0; c < plan->n_lengths; c++) {
    if (plan->lengths[c] > out->canvas) plan->lengths[c] = out->canvas;
    if (plan->lengths[c] < 1) plan->lengths[c] = 1;
  }
  if (frame.grow > 0) params->max_canvas = out->max_canvas;
  return SC_OK;
}

/* The first window's bytes a token: code runs 3-4 bytes a token in the
 * tokenizers we ship; a text of longer tokens grows the window (x4 a try,
 * so the bytes encoded stay within 4/3 of the last window's). */
#define WINDOW_BYTES_PER_TOKEN 8
#define WINDOW_MIN_BYTES 4096

/* Encodes s[0..len), or, when it is far longer than `need` tokens, a
 * window at its near end (at_end: the end of a prefix; else the start of a
 * suffix) holding need + SC_INFILL_WINDOW_MARGIN tokens or more. The
 * window's far edge is put at a line break where one is near (pieces line
 * up again soonest there), else at a character boundary. */
static sc_status encode_near(const sc_tokenizer *tok, const char *s, size_t len, bool at_end,
                             size_t need, int32_t **ids, size_t *n, bool *windowed,
                             sc_error *err) {
  *windowed = false;
  size_t want = need + SC_INFILL_WINDOW_MARGIN;
  size_t win = want * WINDOW_BYTES_PER_TOKEN;
  if (win < WINDOW_MIN_BYTES) win = WINDOW_MIN_BYTES;
  while (win < len) {
    size_t a, b; /* the window: s[a..b) */
    if (at_end) {
      a = len - win;
      const char *nl = memchr(s + a, '\n', win / 4);
      if (nl) a = (size_t)(nl - s) + 1;
      else
        while (a < len && ((unsigned char)s[a] & 0xC0) == 0x80) a++;
      b = len;
    } else {
      a = 0;
      b = win;
      size_t lo = win - win / 4;
      while (b > lo && s[b - 1] != '\n') b--;
      if (b == lo) {
        b = win;
        while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
      }
    }
    SC_TRY(sc_tokenizer_encode(tok, s + a, b - a, ids, n, err));
    if (*n >= want) {
      *windowed = true;
      return SC_OK;
    }
    free(*ids);
    *ids = NULL;
    *n = 0;
    win = win > SIZE_MAX / 4 ? SIZE_MAX : win * 4;
  }
  return sc_tokenizer_encode(tok, s, len, ids, n, err);
}

sc_status sc_infill_tokens_encode(const sc_tokenizer *tok, const sc_infill_budget *fit,
                                  const char *before, size_t before_len, const char *after,
                                  size_t after_len, bool after_cut, sc_infill_tokens *out,
                                  sc_error *err) {
  *out = (sc_infill_tokens){0};
  /* sc_infill_fit compares each count with the prompt's room at most
   * (prompt_cut >= prompt): past prompt_cut + 1 every count splits alike. */
  size_t room = fit->prompt_cut > fit->prompt ? (size_t)fit->prompt_cut : (size_t)fit->prompt;
  size_t need = room + 2;
  sc_status st = encode_near(tok, before, before_len, true, need, &out->pre, &out->n_pre,
                             &out->pre_window, err);
  if (st == SC_OK)
    st = encode_near(tok, after, after_len, false, need, &out->suf, &out->n_suf,
                     &out->suf_window, err);
  if (st != SC_OK) {
    sc_infill_tokens_free(out);
    return st;
  }
  sc_infill_fit(fit, out->n_pre, out->n_suf, &out->keep_pre, &out->keep_suf, &out->suffix_cut);
  if (after_cut) out->suffix_cut = true;
  return SC_OK;
}

void sc_infill_tokens_free(sc_infill_tokens *t) {
  if (!t) return;
  free(t->pre);
  free(t->suf);
  *t = (sc_infill_tokens){0};
}

sc_status sc_infill_prepare(const sc_model *model, const sc_tokenizer *tok, int context,
                            int budget, const char *before, size_t before_len, const char *after,
                            size_t after_len, bool after_cut, const sc_infill_plan *plan,
                            const sc_infill_params *params, sc_infill_prepared *out,
                            sc_error *err) {
  *out = (sc_infill_prepared){0};
  out->plan = *plan;
  out->params = *params;
  SC_TRY(sc_infill_fit_plan(model, context, budget, &out->plan, &out->params, &out->fit, err));
  SC_TRY(sc_infill_tokens_encode(tok, &out->fit, before, before_len, after, after_len, after_cut,
                                 &out->tokens, err));
  out->params.suffix_cut = out->tokens.suffix_cut;
  out->positions = sc_infill_positions(&out->fit, out->tokens.keep_pre, out->tokens.keep_suf,
                                       out->tokens.suffix_cut);
  return SC_OK;
}

void sc_infill_prepared_free(sc_infill_prepared *p) {
  if (p) sc_infill_tokens_free(&p->tokens);
}

/* fit.c — fitting an infill request to a context (model.h, "fitting a
 * request to a context"): the canvas and the room a growing canvas needs
 * are reserved first, within half the room; the prompt gets the rest, and
 * splits a quarter after the canvas, the rest before it. The same numbers
 * serve the local engine, `sculpt complete`, `sculpt context`, `sculpt
 * serve` and a remote backend whose context is known, so that no request
 * fails because of where the cursor is or how long the file is. */
#include "model.h"

sc_status sc_infill_fit_compute(int context, int specials, int budget, int canvas, int grow,
                                sc_infill_fit *out, sc_error *err) {
  *out = (sc_infill_fit){0};
  SC_CHECK(specials >= 0 && budget >= 0 && canvas >= 1 && grow >= 0, err, SC_ERR_INVALID,
           "fit: bad arguments");
  int room = context - specials;
  SC_CHECK(room >= 2, err, SC_ERR_INVALID,
           "a %d-token context leaves no room for a canvas and a prompt", context);
  /* At most half the room for the canvas and its growth: the other half
   * conditions it. */
  int half = room / 2;
  out->context = context;
  out->canvas = canvas < half ? canvas : half;
  out->max_canvas = out->canvas;
  if (grow > out->canvas) out->max_canvas = grow < half ? grow : half;
  int avail = room - out->max_canvas;
  out->prompt = budget > 0 && budget < avail ? budget : avail;
  out->clamped = budget > avail;
  return SC_OK;
}

void sc_infill_fit_split(int prompt, size_t n_pre, size_t n_suf, size_t *keep_pre,
                         size_t *keep_suf) {
  size_t room = prompt > 0 ? (size_t)prompt : 0;
  /* The suffix's share first (a quarter), so that a long prefix is what
   * gets cut; then what the prefix leaves goes back to the suffix. */
  size_t suf = n_suf < room / 4 ? n_suf : room / 4;
  size_t pre = n_pre < room - suf ? n_pre : room - suf;
  suf = n_suf < room - pre ? n_suf : room - pre;
  *keep_pre = pre;
  *keep_suf = suf;
}

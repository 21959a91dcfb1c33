/* fit.c — fitting an infill request to a context (model.h, "fitting a
 * request to a context"): the canvas and the room a growing canvas needs
 * are reserved first, within half the room; the prompt gets the rest, and
 * when it is short the prefix is cut first, down to half of it, then the
 * suffix. The same numbers
 * serve the local engine, `sculpt complete`, `sculpt context`, `sculpt
 * serve` and a remote backend whose context is known, so that no request
 * fails because of where the cursor is or how long the file is. */
#include "model.h"

sc_status sc_infill_budget_compute(int context, int specials, int budget, int canvas, int grow,
                                sc_infill_budget *out, sc_error *err) {
  *out = (sc_infill_budget){0};
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

void sc_infill_split_prompt(int prompt, size_t n_pre, size_t n_suf, size_t *keep_pre,
                            size_t *keep_suf) {
  size_t room = prompt > 0 ? (size_t)prompt : 0;
  /* The prefix is cut first, from its far end, but keeps half the room
   * when it has that much: the lines before the cursor matter most. Then
   * the suffix is cut from its far end, and room it leaves goes back to
   * the prefix. */
  size_t floor_pre = n_pre < room / 2 ? n_pre : room / 2;
  size_t suf = n_suf < room - floor_pre ? n_suf : room - floor_pre;
  size_t pre = n_pre < room - suf ? n_pre : room - suf;
  *keep_pre = pre;
  *keep_suf = suf;
}

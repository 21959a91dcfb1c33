/* prompt.c — what a completion's prompt is built from besides the text
 * around the cursor: the prompt extras (other open documents and recently
 * edited ranges, copied on the loop, bounded), the repository snippets put
 * before the prefix window, the token budget split between the text before
 * and after the canvas, and sculpt/test/prompt, which shows that prompt.
 *
 * Threads: extras are gathered on the loop; the prompt is built and
 * tokenized by jobs on the model lane (the tokenizer and index are its). */
#define _POSIX_C_SOURCE 200809L
#include "completer_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What the prompt builder may use besides the document, copied on the loop
 * (bounded): the most recently used other open documents and the recently
 * edited ranges. */
#define EXTRA_DOCS 8
#define EXTRA_DOC_BYTES (256u << 10)
typedef struct prompt_extras {
  sc_prompt_inputs in;
  sc_open_document docs[EXTRA_DOCS];
  sc_edited_range edits[SC_RECENT_EDITS];
  char *owned[EXTRA_DOCS * 2 + SC_RECENT_EDITS]; /* paths and texts */
  size_t n_owned;
} prompt_extras;

void sc_cpl__extras_free(prompt_extras *x) {
  if (!x) return;
  for (size_t i = 0; i < x->n_owned; i++) free(x->owned[i]);
  free(x);
}

static char *extras_keep(prompt_extras *x, char *p) {
  if (p) x->owned[x->n_owned++] = p;
  return p;
}

/* base_line: the document line the job's text starts in (its window), for
 * the edits of the document itself. */
prompt_extras *sc_cpl__gather_extras(sc_lsp_server *s, sc_completer *c, sc_document *d,
                                     uint32_t base_line) {
  prompt_extras *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  sc_document_store *store = sc_lsp__documents(s);
  sc_document *others[EXTRA_DOCS];
  size_t n = sc_document_store_recent_docs(store, d, others, EXTRA_DOCS);
  for (size_t i = 0; i < n; i++) {
    sc_document *o = others[i];
    size_t len = o->len;
    if (len > EXTRA_DOC_BYTES) { /* the first 256 KiB, whole lines */
      len = EXTRA_DOC_BYTES;
      while (len > 0 && o->text[len - 1] != '\n') len--;
    }
    char *p = extras_keep(x, sc_cpl__rel_path_of(c, o->uri));
    char *t = extras_keep(x, sc_memdup(o->text, len));
    if (p && t) x->docs[x->in.n_docs++] = (sc_open_document){p, o->lang, t, len};
  }
  size_t ne = 0;
  const sc_recent_edit *re = sc_document_store_recent_edits(store, &ne);
  for (size_t i = 0; i < ne; i++) {
    uint32_t a = re[i].start_line, b = re[i].end_line;
    if (strcmp(re[i].uri, d->uri) == 0) {
      if (b < base_line) continue;
      a = a < base_line ? 0 : a - base_line;
      b -= base_line;
    }
    char *p = extras_keep(x, sc_cpl__rel_path_of(c, re[i].uri));
    if (p) x->edits[x->in.n_edits++] = (sc_edited_range){p, a, b, re[i].when_ms};
  }
  x->in.docs = x->docs;
  x->in.edits = x->edits;
  return x;
}

sc_status sc_cpl__encode_context(sc_completer *c, const char *before, size_t before_len,
                                 const char *after, size_t after_len, bool after_cut,
                                 const sc_infill_budget *fit, int32_t **pre, size_t *n_pre,
                                 size_t *keep_pre, int32_t **suf, size_t *keep_suf,
                                 size_t *n_suf_out, bool *suffix_cut, sc_error *err) {
  sc_infill_tokens t;
  SC_TRY(sc_infill_tokens_encode(c->tok, fit, before, before_len, after, after_len, after_cut,
                                 &t, err));
  *pre = t.pre;
  *n_pre = t.n_pre;
  *keep_pre = t.keep_pre;
  *suf = t.suf;
  *keep_suf = t.keep_suf;
  *suffix_cut = t.suffix_cut;
  if (n_suf_out) *n_suf_out = t.n_suf;
  return SC_OK;
}

/* The text before the canvas, on the model lane: with snippets, the
 * definitions and chunks the prompt builder chose, each headed by its path,
 * then the window it chose, so that they fit the budget; without (or for a
 * language sculpt does not know), the whole prefix window (sc_cpl__encode_context
 * trims it). With win_bytes, the builder's window even without snippets,
 * and *win_bytes its length (the end of *before). *before points into the
 * returned text (owned) or, when NULL is returned, into a->prefix. */
char *sc_cpl__prompt_before(complete_arg *a, int budget, const char **before,
                            size_t *before_len, size_t *n_snippets, size_t *win_bytes) {
  sc_completer *c = a->c;
  *before = a->prefix;
  *before_len = a->prefix_len;
  *n_snippets = 0;
  char *joined = NULL;
  /* While the index is built the prompt has what the old index (or none)
   * holds: the prompt says so in partial_index. */
  sc_prompt_inputs in = {0};
  if (a->extras) in = a->extras->in;
  in.index_pending = a->index_state && strcmp(a->index_state, "indexing") == 0;
  if (a->lang_known) {
    size_t tl = a->prefix_len + a->suffix_len;
    char *text = malloc(tl + 1);
    sc_prompt prompt;
    if (text) {
      memcpy(text, a->prefix, a->prefix_len);
      memcpy(text + a->prefix_len, a->suffix, a->suffix_len);
      text[tl] = '\0';
      if (sc_prompt_build_with(c->ws, a->rel_path, a->language, text, tl, a->prefix_len,
                               c->tok, (size_t)(budget >= 16 ? budget : 16), &in, &prompt,
                               NULL) == SC_OK) {
        a->partial_index = prompt.partial_index;
        if ((prompt.n_snippets || win_bytes) && (joined = sc_prompt_text(&prompt, before_len))) {
          *before = joined;
          *n_snippets = prompt.n_snippets;
          if (win_bytes) *win_bytes = a->prefix_len - prompt.prefix_start;
        }
        sc_prompt_free(&prompt);
      }
      free(text);
    }
  }
  return joined;
}

/* ---- the local engine's prompt, pinned across keystrokes ------------------- */

/* Requests a pin serves before the prompt is built afresh (its snippets
 * then follow the cursor again). */
#define PIN_USES 32

void sc_cpl__local_prompt_free(local_prompt *lp) {
  free(lp->before_owned);
  free(lp->pre);
  free(lp->suf);
  *lp = (local_prompt){0};
}

static sc_status lp_encode(complete_arg *a, const sc_infill_budget *fit, bool after_cut,
                           local_prompt *lp, sc_error *err) {
  free(lp->pre);
  free(lp->suf);
  lp->pre = lp->suf = NULL;
  return sc_cpl__encode_context(a->c, lp->before, lp->before_len, lp->after, lp->after_len,
                                after_cut, fit, &lp->pre, &lp->n_pre, &lp->keep_pre, &lp->suf,
                                &lp->keep_suf, &lp->n_suf, &lp->suffix_cut, err);
}

/* The pinned prompt, when the pin still fits this request; false: build
 * afresh. */
static bool pinned_prompt(complete_arg *a, const sc_infill_budget *fit, prompt_pin *pin,
                          local_prompt *lp) {
  /* A budget that shrank is checked by the fit below (a canvas taken from
   * the last suggestion's rest shrinks with the typing); one that grew by
   * more than the slack leaves room a fresh build would use. */
  if (!pin->set || pin->uses >= PIN_USES || fit->prompt > pin->budget + pin->budget / 8)
    return false;
  /* Another index, or the same one finished since: its snippets may differ. */
  if (pin->ws_epoch != a->c->ws_epoch || pin->index_state != a->index_state) return false;
  size_t p0 = a->cursor - a->prefix_len;
  if (pin->win_start < p0 || pin->win_start > a->cursor ||
      a->cursor - pin->win_start < pin->mark_len ||
      memcmp(a->prefix + (pin->win_start - p0), pin->mark, pin->mark_len) != 0)
    return false;
  if (pin->suf_tail > a->doc_len) return false;
  size_t suf_end = a->doc_len - pin->suf_tail;
  if (suf_end < a->cursor || suf_end - a->cursor > a->suffix_len) return false;
  size_t win = a->cursor - pin->win_start;
  char *b = malloc(pin->head_len + win + 1);
  if (!b) return false;
  memcpy(b, pin->head, pin->head_len);
  memcpy(b + pin->head_len, a->prefix + (pin->win_start - p0), win);
  b[pin->head_len + win] = '\0';
  lp->before_owned = b;
  lp->before = b;
  lp->before_len = pin->head_len + win;
  lp->after = a->suffix;
  lp->after_len = suf_end - a->cursor;
  sc_error ignored = {0};
  if (lp_encode(a, fit, pin->suffix_cut, lp, &ignored) != SC_OK ||
      lp->keep_pre != lp->n_pre || lp->keep_suf != lp->n_suf) {
    sc_cpl__local_prompt_free(lp);
    return false;
  }
  lp->n_snippets = pin->n_snippets;
  lp->pinned = true;
  a->partial_index = pin->partial_index;
  pin->uses++;
  return true;
}

sc_status sc_cpl__local_prompt(complete_arg *a, const sc_infill_budget *fit, doc_session *ds,
                               local_prompt *out, sc_error *err) {
  *out = (local_prompt){0};
  sc_completer *c = a->c;
  if (ds && a->lang_known && pinned_prompt(a, fit, &ds->pin, out)) return SC_OK;
  if (ds) sc_cpl__pin_clear(&ds->pin);
  /* Afresh: with a pin to come, 1/8 of the budget is left for the typing. */
  int slack = ds && a->lang_known ? fit->prompt / 8 : 0;
  int budget = fit->prompt - slack;
  size_t win_bytes = 0;
  out->before_owned = sc_cpl__prompt_before(a, budget, &out->before, &out->before_len,
                                            &out->n_snippets, &win_bytes);
  if (!out->before_owned) { /* no builder: the whole window, cut by the fit */
    out->before = a->prefix;
    out->before_len = a->prefix_len;
    out->after = a->suffix;
    out->after_len = a->suffix_len;
    return lp_encode(a, fit, a->suffix_window_cut, out, err);
  }
  /* The suffix: whole lines that fill what the snippets and the window
   * leave, so that the fit cuts nothing from the snippets' end. */
  out->after = a->suffix;
  out->after_len = sc_prompt_suffix_fit(c->tok, out->before, out->before_len, a->suffix,
                                        a->suffix_len, (size_t)budget);
  bool after_cut = a->suffix_window_cut || out->after_len < a->suffix_len;
  SC_TRY(lp_encode(a, fit, after_cut, out, err));
  /* Pinned when nothing was cut: the next requests start from it. */
  if (ds && out->keep_pre == out->n_pre && out->keep_suf == out->n_suf &&
      win_bytes <= out->before_len) {
    prompt_pin *pin = &ds->pin;
    pin->head_len = out->before_len - win_bytes;
    pin->head = malloc(pin->head_len + 1);
    if (!pin->head) return SC_OK;
    memcpy(pin->head, out->before, pin->head_len);
    pin->n_snippets = out->n_snippets;
    pin->win_start = a->cursor - win_bytes;
    pin->mark_len = win_bytes < PIN_MARK ? win_bytes : PIN_MARK;
    memcpy(pin->mark, out->before + pin->head_len, pin->mark_len);
    pin->suf_tail = a->doc_len - (a->cursor + out->after_len);
    pin->suffix_cut = after_cut;
    pin->partial_index = a->partial_index;
    pin->ws_epoch = c->ws_epoch;
    pin->index_state = a->index_state;
    pin->budget = fit->prompt;
    pin->uses = 0;
    pin->set = true;
  }
  return SC_OK;
}

/* A request's arguments (complete_arg), with what prompt.c gave it: the
 * extras, the remote backend's cut windows. */
void sc_cpl__complete_arg_free(void *p) {
  complete_arg *a = p;
  sc_cpl__settings_free(&a->set);
  free(a->prefix);
  free(a->suffix);
  free(a->middle);
  json_decref(a->position);
  sc_syntax_snapshot_free(a->syn); /* a->tree is its tree */
  free(a->rest);
  free(a->rel_path);
  sc_cpl__extras_free(a->extras);
  free(a->r_prompt);
  free(a->r_suffix);
  free(a->r_cand);
  free(a);
}

/* ---- the remote backend's prompt ------------------------------------------------ */

/* Keeps the last n bytes of [p, p+len) that start a UTF-8 character. */
static size_t tail_start(const char *p, size_t len, size_t n) {
  if (n >= len) return 0;
  size_t i = len - n;
  while (i < len && ((unsigned char)p[i] & 0xC0) == 0x80) i++;
  return i;
}

/* The first n bytes of [p, p+len), ending on a UTF-8 character boundary. */
static size_t head_len(const char *p, size_t len, size_t n) {
  if (n >= len) return len;
  while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80) n--;
  return n;
}

sc_status sc_cpl__remote_cut(complete_arg *a, const sc_infill_budget *fit, const char *before,
                             size_t before_len, sc_error *err) {
  sc_completer *c = a->c;
  size_t pre_at = 0, pre_len = before_len, suf_len = a->suffix_len;
  if (c->tok) {
    /* Counted and cut with the local tokenizer; the kept tokens decode
     * back to exactly the bytes they came from. */
    int32_t *pre = NULL, *suf = NULL;
    size_t n_pre = 0, keep_pre = 0, keep_suf = 0;
    bool cut; /* the server frames the prompt itself */
    SC_TRY(sc_cpl__encode_context(c, before, before_len, a->suffix, a->suffix_len, false, fit,
                                  &pre, &n_pre, &keep_pre, &suf, &keep_suf, NULL, &cut, err));
    char *tp = NULL, *ts = NULL;
    size_t lp = 0, ls = 0;
    sc_status st = sc_tokenizer_decode(c->tok, pre + (n_pre - keep_pre), keep_pre, &tp, &lp, err);
    if (st == SC_OK) st = sc_tokenizer_decode(c->tok, suf, keep_suf, &ts, &ls, err);
    free(pre);
    free(suf);
    free(ts);
    free(tp);
    if (st != SC_OK) return st;
    /* Byte-level BPE round-trips exactly; the kept text is the window's
     * end (prefix) and start (suffix). */
    pre_at = lp <= before_len ? before_len - lp : 0;
    pre_len = before_len - pre_at;
    suf_len = ls <= a->suffix_len ? ls : a->suffix_len;
  } else {
    size_t keep_pre = 0, keep_suf = 0;
    sc_cpl__remote_byte_windows(fit, before_len, a->suffix_len, &keep_pre, &keep_suf);
    pre_at = tail_start(before, before_len, keep_pre);
    pre_len = before_len - pre_at;
    suf_len = head_len(a->suffix, a->suffix_len, keep_suf);
  }
  /* Copies with their lengths: the text may hold NUL bytes. */
  a->r_prompt = malloc(pre_len + 1);
  a->r_suffix = malloc(suf_len + 1);
  if (a->r_prompt) memcpy(a->r_prompt, before + pre_at, pre_len), a->r_prompt[pre_len] = '\0';
  if (a->r_suffix) memcpy(a->r_suffix, a->suffix, suf_len), a->r_suffix[suf_len] = '\0';
  a->r_prompt_len = pre_len;
  a->r_suffix_len = suf_len;
  if (!a->r_prompt || !a->r_suffix) return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  return SC_OK;
}

void sc_cpl__index_data(const complete_arg *a, json_t *data) {
  if (a->index_state) json_object_set_new(data, "index", json_string(a->index_state));
  json_object_set_new(data, "partialIndex", json_boolean(a->partial_index));
}

/* ---- sculpt/test/prompt (SCULPT_TEST_HOOKS) ---------------------------------- */
/* The prompt a completion at a position would be built from, as JSON: the
 * windows and the snippets with their reasons, built on the worker exactly
 * as complete_job builds it but from the whole document. */

typedef struct tprompt_arg {
  sc_completer *c;
  char *text, *rel;
  size_t len, cursor, budget;
  const char *lang;
  prompt_extras *extras;
} tprompt_arg;

static void tprompt_arg_free(void *p) {
  tprompt_arg *a = p;
  free(a->text);
  free(a->rel);
  sc_cpl__extras_free(a->extras);
  free(a);
}

static json_t *tprompt_job(sc_job *job, void *argp, sc_error *err) {
  tprompt_arg *a = argp;
  if (!a->c->tok) {
    sc_error_set(err, SC_ERR_UNSUPPORTED, "no tokenizer: the model is not loaded");
    return NULL;
  }
  sc_prompt p;
  if (sc_prompt_build_with(a->c->ws, a->rel, a->lang, a->text, a->len, a->cursor, a->c->tok,
                           a->budget, a->extras ? &a->extras->in : NULL, &p, err) != SC_OK)
    return NULL;
  json_t *snips = json_array();
  for (size_t i = 0; i < p.n_snippets; i++) {
    sc_context_snippet *x = &p.snippets[i];
    json_t *t = json_stringn(x->text, x->len);
    json_array_append_new(
        snips, json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:I, s:o}", "path", x->path, "reason",
                         x->reason, "name", x->name, "score", (double)x->score, "startLine",
                         (int)x->start_line, "endLine", (int)x->end_line, "tokens",
                         (json_int_t)x->tokens, "text", t ? t : json_string("")));
  }
  json_t *jp = json_string(p.prefix), *js = json_string(p.suffix);
  json_t *out = json_pack("{s:o, s:o, s:o, s:b}", "prefix", jp ? jp : json_string(""), "suffix",
                          js ? js : json_string(""), "snippets", snips, "workspace",
                          a->c->ws != NULL);
  sc_prompt_free(&p);
  return out;
}

void sc_cpl__handle_test_prompt(sc_lsp_req *r) {
  sc_lsp_server *s = r->s;
  sc_completer *c = sc_lsp__feature(s);
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  uint32_t line, character;
  if (!sc_lsp__get_position(json_object_get(r->params, "position"), &line, &character)) {
    sc_lsp__bad_params(r, "position needs line and character");
    return;
  }
  json_t *jb = json_object_get(r->params, "budget");
  json_int_t budget = jb ? json_integer_value(jb) : c->set.context_budget;
  const sc_line_index *idx = sc_document_lines(d);
  tprompt_arg *a = calloc(1, sizeof *a);
  if (!idx || !a || !(a->text = sc_memdup(d->text, d->len))) {
    if (a) free(a->text);
    free(a);
    sc_lsp__send_error(s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  a->c = c;
  a->len = d->len;
  a->cursor = sc_pos_to_offset(d->text, d->len, idx, line, character, sc_lsp__encoding(s), NULL);
  a->budget = budget >= 16 && budget <= (1 << 20) ? (size_t)budget : 1024;
  a->lang = sc_context_language_for(d->language_id, d->uri);
  a->rel = sc_cpl__rel_path_of(c, d->uri);
  sc_document_touch(d);
  sc_cpl__maybe_refresh_index(s, c, d);
  a->extras = sc_cpl__gather_extras(s, c, d, 0);
  sc_lsp__post_job(s, r->id, r->method, d->uri, tprompt_job, a, tprompt_arg_free, NULL);
}

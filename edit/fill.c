/* fill.c — one site filled: candidates in seed order from the caller's
 * generator, each trimmed to the site's shape and judged by the engine's
 * checks (check.c) and then by the caller's own test; the first that
 * passes becomes the edit. For a diagnostic, the insertion of a missing
 * token (tree-sitter's recovery or the message's "expected ';'") is tried
 * before the model's candidates. The single-site entry both front doors call. */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */
#include "edit_impl.h"

#include <stdlib.h>
#include <string.h>

static bool cancelled(const _Atomic int *c) { return c && *c; }

/* The next try record, zeroed, with its seed. NULL: out of memory. */
static sc_edit_try *new_try(sc_edit_result *r, int seed) {
  sc_edit_try *nt = realloc(r->tries, (r->n_tries + 1) * sizeof *nt);
  if (!nt) return NULL;
  r->tries = nt;
  sc_edit_try *t = &r->tries[r->n_tries++];
  memset(t, 0, sizeof *t);
  t->seed = seed;
  return t;
}

typedef struct missing_walk {
  size_t a, b;   /* the site */
  size_t n;      /* tokens found */
  size_t at[8];  /* where each goes */
  const char *tok[8];
  bool named;    /* a named token is missing: it cannot be guessed */
} missing_walk;

static void visit_missing(void *user, TSNode node) {
  missing_walk *w = user;
  size_t p = ts_node_start_byte(node);
  if (!ts_node_is_missing(node) || p < w->a || p > w->b) return;
  if (ts_node_is_named(node) || w->n == sizeof w->at / sizeof w->at[0]) {
    w->named = true;
    return;
  }
  w->at[w->n] = p;
  w->tok[w->n++] = ts_node_type(node); /* an anonymous token's type is its text */
}

/* tok appended to out (k bytes so far, next the byte after), a space kept
 * between words on either side; the new length. */
static size_t put_token(char *out, size_t k, const char *tok, char next) {
  size_t tn = strlen(tok);
  if (tn && k > 0 && sc_edit__word_byte(out[k - 1]) && sc_edit__word_byte(tok[0])) out[k++] = ' ';
  memcpy(out + k, tok, tn);
  k += tn;
  if (tn && sc_edit__word_byte(next) && sc_edit__word_byte(tok[tn - 1])) out[k++] = ' ';
  return k;
}

/* The insertion that fixes a diagnostic's site, as a compiler's fix-it
 * does (clang's "insert ';'"): the one token the diagnostic's message says
 * is expected (site.expect: gcc's missing `;`, Python's missing `:`) where
 * the site puts it (site.anchor); else the tokens tree-sitter's error
 * recovery inserted in the site (MISSING `;`, `)`, `}`), each where it put
 * them (expect: the token named, s->expect or one of s->choices). The
 * compiler's word comes first: tree-sitter's guess may be the
 * right token in the wrong place (jq's `close(fd)` without its `;`, then
 * `return ...`: a MISSING `;` after `return`). It faces every check a
 * model's candidate does. NULL when there is none (a named token is
 * missing: an identifier or an expression cannot be guessed), or out of
 * memory; else owned by the caller, *len bytes. */
static char *insertion_fix(const sc_edit_doc *doc, const sc_edit_site *s, const char *expect,
                           size_t *len) {
  missing_walk w = {.a = s->start, .b = s->end};
  if (expect[0] && s->anchor >= s->start && s->anchor <= s->end) {
    w.at[0] = s->anchor;
    w.tok[0] = expect;
    w.n = 1;
  } else if (s->n_choices) {
    return NULL;
  } else {
    sc_edit__visit(doc->tree, s->start, s->end, visit_missing, &w);
    if (w.named) return NULL;
  }
  if (w.n == 0) return NULL;
  size_t tl, extra = 0;
  const char *text = sc_edit_doc_text(doc, &tl);
  for (size_t i = 0; i < w.n; i++) {
    if (i > 0 && w.at[i] < w.at[i - 1]) return NULL; /* document order, as visited */
    extra += strlen(w.tok[i]) + 2;
  }
  char *out = malloc(s->end - s->start + extra + 1);
  if (!out) return NULL;
  size_t k = 0, from = s->start;
  for (size_t i = 0; i < w.n; i++) {
    memcpy(out + k, text + from, w.at[i] - from);
    k += w.at[i] - from;
    from = w.at[i];
    k = put_token(out, k, w.tok[i], from < s->end ? text[from] : '\0');
  }
  memcpy(out + k, text + from, s->end - from);
  k += s->end - from;
  out[k] = '\0';
  *len = k;
  return out;
}

/* The insertions tried before the model, into fixes (owned by the
 * caller); their count. One token named, or tree-sitter's MISSING tokens:
 * that insertion. A choice of tokens: each inserted where the site puts it
 * and judged by the engine's checks; those that pass are tried in the
 * message's order when the caller has its own test (accept: the build
 * decides), else only when one alone passes, and, where the message also
 * allows a kind of thing (a path, an identifier), only when the C
 * compiler judged it: in Rust's `E: Display +  + Send` (a bound lost,
 * rustc's "`!`, `(`, ..., lifetime, or path") `!` alone parses. Where
 * several pass, nothing here tells which the code meant (rustc's `,` or
 * `.` in `f(a() b)`, `=` or `;` in `let x  y.z();`), and a token is not
 * guessed: the model's candidates follow. */
static int insertions(const sc_edit_doc *doc, const sc_edit_site *site,
                      const sc_edit_fill_options *o, char **fixes, size_t *lens) {
  if (!site->n_choices) {
    fixes[0] = insertion_fix(doc, site, site->expect, &lens[0]);
    return fixes[0] ? 1 : 0;
  }
  int n = 0;
  for (int i = 0; i < site->n_choices && i < SC_EDIT_MAX_CHOICES; i++) {
    size_t len = 0;
    char *f = insertion_fix(doc, site, site->choices[i], &len);
    sc_edit_verdict v = {0};
    if (f) sc_edit_check(doc, site, f, len, &v, NULL);
    if (!f || !v.ok) {
      free(f);
      continue;
    }
    fixes[n] = f;
    lens[n++] = len;
    if (n > 1 && !o->accept) break; /* refused below whatever the rest do */
  }
  if (!o->accept && (n > 1 || (site->choices_open && !doc->cc_usable))) {
    for (int i = 0; i < n; i++) free(fixes[i]);
    n = 0;
  }
  return n;
}

/* How much of a candidate the site takes: an inline hole, or a one-line
 * span being re-infilled, gets one line; trailing blank space goes. */
static size_t trim(const sc_edit_doc *doc, const sc_edit_site *s, const char *cand, size_t len) {
  size_t tl;
  const char *text = sc_edit_doc_text(doc, &tl);
  bool one_line = s->single_line ||
                  (s->kind != SC_EDIT_HOLE && s->kind != SC_EDIT_BLOCK &&
                   !memchr(text + s->start, '\n', s->end - s->start));
  if (one_line) {
    const char *nl = memchr(cand, '\n', len);
    if (nl) len = (size_t)(nl - cand);
  }
  while (len > 0 && strchr("\r\n \t", cand[len - 1])) len--;
  return len;
}

sc_status sc_edit_fill(const sc_edit_doc *doc, const sc_edit_site *site,
                       const sc_edit_fill_options *o, sc_edit_result *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  double t0 = sc_now_ms();
  out->status = SC_EDIT_FAILED;
  out->reason = "no candidate parsed";
  out->check = "not run";
  out->seed = -1;
  size_t tl;
  const char *text = sc_edit_doc_text(doc, &tl);
  size_t a = site->start, b = site->end;
  SC_CHECK(a <= b && b <= tl, err, SC_ERR_INVALID, "the site [%zu, %zu) is outside the text", a,
           b);
  /* Nothing a judge could tell fixed: the model is not asked. */
  if (site->kind == SC_EDIT_DIAGNOSTIC && !sc_edit__error_seen(doc, a, b)) {
    out->reason = "no error to fix there";
    out->ms = sc_now_ms() - t0;
    return SC_OK;
  }
  int n_cands = o->candidates > 0 ? o->candidates : 1;
  if (n_cands > SC_EDIT_MAX_CANDIDATES) n_cands = SC_EDIT_MAX_CANDIDATES;
  char *seen[SC_EDIT_MAX_CANDIDATES] = {0};
  size_t seen_len[SC_EDIT_MAX_CANDIDATES] = {0};
  int n_seen = 0;
  sc_status st = SC_OK;
  char *fixes[SC_EDIT_MAX_CHOICES] = {0};
  size_t fix_lens[SC_EDIT_MAX_CHOICES] = {0};
  int n_fix = site->kind == SC_EDIT_DIAGNOSTIC ? insertions(doc, site, o, fixes, fix_lens) : 0;
  bool fixes_judged = site->n_choices > 0; /* insertions() ran the checks on each */
  for (int k = -n_fix; k < n_cands && out->status != SC_EDIT_DONE; k++) {
    if (cancelled(o->cancel)) {
      out->reason = "interrupted";
      break;
    }
    double tc = sc_now_ms();
    sc_edit_try *t = new_try(out, k);
    if (!t) {
      st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
      break;
    }
    sc_edit_candidate c = {0};
    sc_error gerr = {0};
    sc_status gst;
    if (k < 0) {
      c.text = fixes[n_fix + k]; /* taken over */
      c.len = fix_lens[n_fix + k];
      c.confidence = 1.0;
      fixes[n_fix + k] = NULL;
      gst = SC_OK;
    } else if (k == 0 && o->first && o->first->text) {
      c = *o->first; /* taken over */
      o->first->text = NULL;
      gst = SC_OK;
    } else {
      sc_edit_request req = {text, tl, doc->lang, *site, (uint64_t)k};
      gst = o->gen.generate(o->gen.user, &req, &c, &gerr);
    }
    if (gst != SC_OK) {
      t->error = strdup(gerr.msg);
      sc_edit_candidate_free(&c);
      if (gerr.status == SC_ERR_CANCELLED) {
        out->reason = "interrupted";
        break;
      }
      if (o->gen.remote) {
        /* The same endpoint would fail the same way for every seed. */
        out->reason = "the backend failed";
        break;
      }
      out->reason = "the engine failed";
      continue;
    }
    t->decoded = true;
    const char *cand = c.text ? c.text : "";
    size_t len = trim(doc, site, cand, c.len);
    t->text = sc_edit__dupn(cand, len);
    t->len = len;
    t->confidence = c.confidence;
    bool dup = false;
    const char *why = NULL;
    for (int i = 0; i < n_seen; i++)
      dup |= seen_len[i] == len && memcmp(seen[i], cand, len) == 0;
    if (dup) why = "duplicate";
    else if (len == 0) why = "empty";
    else if (memchr(cand, '\0', len)) why = "contains a NUL byte";
    else if (len == b - a && memcmp(cand, text + a, len) == 0) why = "unchanged";
    else if (k < 0 && fixes_judged) why = NULL;
    else {
      sc_edit_verdict v;
      sc_edit_check(doc, site, cand, len, &v, NULL);
      why = v.ok ? NULL : v.why;
    }
    if (n_seen < SC_EDIT_MAX_CANDIDATES && !dup) {
      seen[n_seen] = sc_edit__dupn(cand, len);
      seen_len[n_seen++] = len;
    }
    t->parsed = why == NULL;
    t->rejected = why;
    if (t->parsed) {
      bool keep = true;
      if (o->accept) {
        size_t nl_len;
        char *next = sc_edit__splice(text, tl, a, b, cand, len, &nl_len);
        sc_error aerr = {0};
        sc_status ast = next ? o->accept(o->accept_user, next, nl_len, &keep, &aerr)
                             : sc_error_set(&aerr, SC_ERR_NOMEM, "out of memory");
        free(next);
        if (ast != SC_OK) {
          t->check = "not run";
          t->error = strdup(aerr.msg);
          out->reason = ast == SC_ERR_STALE ? "the file changed on disk" : "cannot write";
          sc_edit_candidate_free(&c);
          break;
        }
        t->check = keep ? "passed" : "failed";
        out->check = t->check;
        if (!keep) out->reason = "no candidate passed the check";
      }
      if (keep) {
        out->status = SC_EDIT_DONE;
        out->reason = NULL;
        out->start = a;
        out->end = b;
        out->text = sc_edit__dupn(cand, len);
        out->len = len;
        out->seed = k;
        out->confidence = c.confidence;
        if (!out->text) st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
      }
    }
    t->has_ms = true;
    t->ms = sc_now_ms() - tc;
    sc_edit_candidate_free(&c);
  }
  for (int i = 0; i < n_fix; i++) free(fixes[i]); /* not taken when cancelled first */
  for (int i = 0; i < n_seen; i++) free(seen[i]);
  out->ms = sc_now_ms() - t0;
  return st;
}

/* retrieve_fill.c — phase 2 of prompt assembly (retrieve.c): what phase 1
 * left of the snippet budget goes to recent edits, chunks of the open and
 * recently edited documents similar to the cursor's lines, the bodies of
 * the functions phase 1 gave compact, and similar workspace chunks. */
#define _DEFAULT_SOURCE /* strndup */
#include "prompt_impl.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- documents searched for similar chunks and recent edits ------------------------ */

typedef struct src_doc {
  const char *path, *lang, *text;
  size_t len;
  char *owned; /* text read from disk, or NULL */
} src_doc;

/* Reads path (relative to root, or absolute) from disk; NULL when it cannot. */
static char *read_source(const sc_workspace *ws, const char *path, size_t *len) {
  char full[PATH_MAX * 2];
  if (path[0] == '/') snprintf(full, sizeof full, "%s", path);
  else if (ws) snprintf(full, sizeof full, "%s/%s", ws->root, path);
  else return NULL;
  bool big = false;
  return ws_read_all(full, 4u << 20, len, &big);
}

typedef struct cand {
  size_t src; /* index into the searched documents, or a workspace candidate */
  uint32_t start_line, end_line;
  float score;
} cand;

static int cmp_cand(const void *a, const void *b) {
  float x = ((const cand *)a)->score, y = ((const cand *)b)->score;
  return x > y ? -1 : x < y;
}

/* Exact Jaccard of lines [a, b) of text against the query set. */
static float window_score(const char *text, const lines *L, size_t a, size_t b,
                          const uint64_t *q, size_t nq, uint64_t *buf) {
  size_t x = rv_line_start(L, a), y = rv_line_start(L, b);
  size_t n = sc_ident_set(text + x, y - x, buf, SET_CAP);
  return n < 3 ? 0.0f : sc_ident_jaccard(q, nq, buf, n);
}

/* Every window of doc at or above threshold, appended to *cs. */
static void scan_doc(const src_doc *d, size_t src, const uint64_t *q, size_t nq,
                     float threshold, cand **cs, size_t *n, size_t *cap, uint64_t *buf) {
  lines L;
  if (!rv_lines_build(d->text, d->len, &L)) return;
  for (size_t a = 0; a < L.n; a += WS_CHUNK_STEP) {
    size_t b = a + WS_CHUNK_LINES < L.n ? a + WS_CHUNK_LINES : L.n;
    float sc = window_score(d->text, &L, a, b, q, nq, buf);
    if (sc >= threshold) {
      if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        cand *nn = realloc(*cs, nc * sizeof *nn);
        if (!nn) break;
        *cs = nn;
        *cap = nc;
      }
      (*cs)[(*n)++] = (cand){src, (uint32_t)a, (uint32_t)(b - 1), sc};
    }
    if (b == L.n) break;
  }
  free(L.starts);
}

/* Takes the best candidates (by score) that overlap nothing taken and fit,
 * as "similar chunk" snippets; returns how many. */
static size_t take_chunks(sc_prompt *out, spend *sp, cand *cs, size_t n, const src_doc *docs,
                          size_t want) {
  if (n > 1) qsort(cs, n, sizeof *cs, cmp_cand);
  size_t taken = 0;
  for (size_t i = 0; i < n && taken < want; i++) {
    const src_doc *d = &docs[cs[i].src];
    if (rv_overlaps(out, sp->first, d->path, cs[i].start_line, cs[i].end_line)) continue;
    lines L;
    if (!rv_lines_build(d->text, d->len, &L)) continue;
    size_t a = rv_line_start(&L, cs[i].start_line), b = rv_line_start(&L, cs[i].end_line + 1);
    free(L.starts);
    if (rv_push_text(out, d->path, d->lang, d->text + a, b - a, cs[i].start_line, cs[i].end_line,
                     "similar chunk", "", "", cs[i].score) &&
        rv_afford(out, sp))
      taken++;
  }
  return taken;
}

static int cmp_edit_recent(const void *a, const void *b) {
  double x = (*(const sc_edited_range *const *)a)->when_ms;
  double y = (*(const sc_edited_range *const *)b)->when_ms;
  return x > y ? -1 : x < y;
}


/* The text of a workspace file now: an open document's buffer (the index
 * follows it there), else the disk. *owned is what to free. */
static const char *file_text(const sc_workspace *ws, const src_doc *open, size_t n_open,
                             const char *path, size_t *len, char **owned) {
  *owned = NULL;
  for (size_t i = 0; i < n_open; i++)
    if (strcmp(open[i].path, path) == 0) {
      *len = open[i].len;
      return open[i].text;
    }
  *owned = read_source(ws, path, len);
  return *owned;
}

/* Phase 2: the whole of a definition phase 1 gave in compact form, when
 * what is left allows; the snippet's text is replaced. */
static void upgrade_body(sc_prompt *out, spend *sp, size_t si, const ws_file *f, const ws_def *d,
                         const char *ftext, size_t flen, const char *lang) {
  sc_context_snippet *s = &out->snippets[si];
  if (d->end_byte > flen || d->start_byte >= d->end_byte) return;
  /* The entry may lag the text (a buffer refreshed every 2 s, a file
   * changed without an event): the head's first line must still be there. */
  const char *head = ws_str(f, d->head);
  const char *nl = head ? strchr(head, '\n') : NULL;
  size_t fl = head ? (nl ? (size_t)(nl - head) : strlen(head)) : 0;
  size_t a = d->start_byte;
  while (a > 0 && ftext[a - 1] != '\n') a--;
  if (!head || flen - a < fl || memcmp(ftext + a, head, fl) != 0) return;
  size_t b = a, seen = 0;
  while (b < d->end_byte && seen < BODY_MAX_LINES) {
    const char *e = memchr(ftext + b, '\n', flen - b);
    b = e ? (size_t)(e - ftext) + 1 : flen;
    seen++;
  }
  if (b > d->end_byte) {
    b = d->end_byte;
    while (b < flen && ftext[b] != '\n') b++;
  }
  /* With its path line unless it is grouped under another's. */
  const char *cp = rv_comment_prefix(lang);
  size_t hl = strlen(s->path) + 32;
  char *t = malloc(hl + (b - a) + 2);
  if (!t) return;
  char path_line[PATH_MAX + 8];
  int hn = cp ? snprintf(path_line, sizeof path_line, "%s %s:", cp, s->path) : 0;
  bool headed = hn > 0 && (size_t)hn < sizeof path_line &&
                strncmp(s->text, path_line, (size_t)hn) == 0;
  int h = cp && headed ? snprintf(t, hl, "%s %s:%u\n", cp, s->path, d->start_line + 1) : 0;
  memcpy(t + h, ftext + a, b - a);
  size_t e = (size_t)h + (b - a);
  if (e == 0 || t[e - 1] != '\n') t[e++] = '\n';
  t[e] = '\0';
  size_t tokens = rv_count_tokens(sp->tok, t, e);
  if (tokens <= s->tokens || tokens - s->tokens > sp->left || strstr(out->prefix, t + h) ||
      strstr(out->suffix, t + h)) {
    free(t);
    return;
  }
  sp->left -= tokens - s->tokens;
  free(s->text);
  s->text = t;
  s->len = e;
  s->tokens = tokens;
  s->end_line = d->start_line + (uint32_t)seen - 1;
  s->body = true;
}

/* Phase 2: spends what phase 1 left (sp) on, in order, recent edits (most
 * recent first, outside the windows), chunks of the open and recently
 * edited documents most similar to the cursor's lines, the bodies of the
 * functions phase 1 gave compact (kept_defs, the snippets from n_scopes
 * on), and similar workspace chunks. Under ws's read lock. */
void rv_fill(const retrieval *r, const char *path, size_t cursor, const sc_prompt_inputs *in,
             const lines *self_lines_in, const defref *kept_defs, size_t n_kept_defs,
             size_t n_scopes, spend *spp, sc_prompt *out) {
  const sc_workspace *ws = r->ws;
  const char *self_path = r->self_path, *lang = r->lang, *text = r->text;
  size_t len = r->len, win_first = r->win_first, win_last = r->win_last;
  float threshold = in->similar_threshold > 0 ? in->similar_threshold : 0.2f;
  size_t max_similar = in->max_similar ? in->max_similar : 3;
  size_t max_edits = in->max_recent_edits ? in->max_recent_edits : 3;
  const lines self_lines = *self_lines_in;
  spend sp = *spp;
  /* The documents searched for recent edits and similar chunks:
   * the open ones the caller passed, then recently edited files read from
   * disk. */
  size_t n_src = 0;
  src_doc *src = calloc(in->n_docs + MAX_EXTRA_DOCS + 1, sizeof *src);
  for (size_t i = 0; src && i < in->n_docs; i++) {
    const sc_open_document *d = &in->docs[i];
    if (!d->path || !d->text || (path && strcmp(d->path, path) == 0)) continue;
    src[n_src++] = (src_doc){d->path, d->lang ? d->lang : sc_context_language_for(NULL, d->path),
                             d->text, d->len, NULL};
  }
  size_t n_open = n_src;
  const sc_edited_range **edits = calloc(in->n_edits ? in->n_edits : 1, sizeof *edits);
  for (size_t i = 0; edits && i < in->n_edits; i++) edits[i] = &in->edits[i];
  if (edits && in->n_edits > 1) qsort(edits, in->n_edits, sizeof *edits, cmp_edit_recent);
  for (size_t i = 0; src && edits && i < in->n_edits && n_src < n_open + MAX_EXTRA_DOCS; i++) {
    const char *ep = edits[i]->path;
    bool have = !ep || (path && strcmp(ep, path) == 0);
    for (size_t k = 0; k < n_src && !have; k++) have = strcmp(src[k].path, ep) == 0;
    if (have) continue;
    size_t flen = 0;
    char *ftext = read_source(ws, ep, &flen);
    if (ftext)
      src[n_src++] = (src_doc){ep, sc_context_language_for(NULL, ep), ftext, flen, ftext};
  }

  /* Recent edits, most recent first, outside the windows. */
  size_t n_taken_edits = 0;
  for (size_t i = 0; edits && i < in->n_edits && n_taken_edits < max_edits; i++) {
    const sc_edited_range *e = edits[i];
    if (!e->path) continue;
    const src_doc *d = NULL;
    src_doc cur = {self_path, lang, text, len, NULL};
    bool is_self = path && strcmp(e->path, path) == 0;
    if (is_self) d = &cur;
    for (size_t k = 0; src && k < n_src && !d; k++)
      if (strcmp(src[k].path, e->path) == 0) d = &src[k];
    if (!d) continue;
    lines L;
    if (is_self) L = self_lines;
    else if (!rv_lines_build(d->text, d->len, &L)) continue;
    uint32_t s = e->start_line, t = e->end_line < e->start_line ? e->start_line : e->end_line;
    s = s > EDIT_CONTEXT_LINES ? s - EDIT_CONTEXT_LINES : 0;
    t += EDIT_CONTEXT_LINES;
    if (t >= L.n) t = L.n ? (uint32_t)L.n - 1 : 0;
    if (t - s + 1 > EDIT_MAX_LINES) t = s + EDIT_MAX_LINES - 1;
    bool ok = s < L.n && !(is_self && s <= win_last && win_first <= t) &&
              !rv_overlaps(out, sp.first, d->path, s, t);
    size_t x = rv_line_start(&L, s), y = rv_line_start(&L, (size_t)t + 1);
    if (ok &&
        rv_push_text(out, d->path, d->lang, d->text + x, y - x, s, t, "recent edit", "", "",
                     0.0f) &&
        rv_afford(out, &sp))
      n_taken_edits++;
    if (!is_self) free(L.starts);
  }
  free(edits);

  /* The cursor's window of identifiers, for similarity. */
  uint64_t *q = malloc(SET_CAP * sizeof *q), *buf = malloc(SET_CAP * sizeof *buf);
  size_t nq = 0;
  if (q && buf) {
    size_t cl = rv_line_of(&self_lines, cursor);
    size_t qa = cl > QUERY_LINES_BEFORE ? cl - QUERY_LINES_BEFORE : 0;
    size_t qb = cl + QUERY_LINES_AFTER < self_lines.n ? cl + QUERY_LINES_AFTER : self_lines.n;
    size_t x = rv_line_start(&self_lines, qa), y = rv_line_start(&self_lines, qb);
    nq = sc_ident_set(text + x, y - x, q, SET_CAP);
  }

  /* Similar chunks of the open and recently edited documents. */
  size_t n_similar = 0;
  if (nq >= 3 && src && sp.left > 0) {
    cand *cs = NULL;
    size_t nc = 0, cc = 0;
    for (size_t i = 0; i < n_src; i++) scan_doc(&src[i], i, q, nq, threshold, &cs, &nc, &cc, buf);
    n_similar = take_chunks(out, &sp, cs, nc, src, max_similar);
    free(cs);
  }

  /* The bodies of the definitions phase 1 gave compact (functions and
   * methods), in priority order. */
  for (size_t i = 0, si = n_scopes; i < n_kept_defs && sp.left > 0; i++, si++) {
    const ws_file *f = rv_file_of(r, kept_defs[i].fid);
    const ws_def *d = &f->defs[kept_defs[i].k];
    if ((d->kind != WK_FUNCTION && d->kind != WK_METHOD) || (d->flags & WD_DECL)) continue;
    if (kept_defs[i].fid == SELF) {
      upgrade_body(out, &sp, si, f, d, text, len, lang);
      continue;
    }
    size_t flen = 0;
    char *owned = NULL;
    const char *ftext = file_text(ws, src, n_open, f->path, &flen, &owned);
    if (ftext) upgrade_body(out, &sp, si, f, d, ftext, flen, f->lang);
    free(owned);
  }

  /* Similar workspace chunks (24 lines: not worth the search when less
   * than a few lines' worth of budget is left). */
  if (ws && nq >= 3 && n_similar < max_similar && q && buf && sp.left >= 64) {
    /* The estimate's standard error is up to 0.125 (K = 16): candidates
     * are kept from well below the threshold and re-scored exactly. */
    uint16_t qsig[SC_MINHASH_K];
    sc_minhash_sketch(q, nq, qsig);
    float floor_est = threshold > 0.2f ? threshold - 0.15f : 0.05f;
    cand top[WS_CANDIDATES];
    size_t nt = 0;
    for (size_t fid = 0; fid < ws->n_slots; fid++) {
      const ws_file *f = ws->files[fid];
      if (!f || !f->n_chunks || (path && strcmp(f->path, path) == 0)) continue;
      bool open = false;
      for (size_t i = 0; i < n_src && !open; i++) open = strcmp(src[i].path, f->path) == 0;
      if (open) continue; /* searched above, in its newer text */
      for (size_t c = 0; c < f->n_chunks; c++) {
        if (f->chunks[c].n_idents < 3) continue;
        float est = sc_minhash_estimate(qsig, f->chunks[c].sig);
        if (est < floor_est || (nt == WS_CANDIDATES && est <= top[nt - 1].score)) continue;
        size_t at = nt < WS_CANDIDATES ? nt++ : nt - 1;
        while (at > 0 && top[at - 1].score < est) {
          top[at] = top[at - 1];
          at--;
        }
        top[at] = (cand){fid, f->chunks[c].start_line, 0, est};
      }
    }
    /* Exact scores from the files as they are on disk now. */
    src_doc wdocs[WS_CANDIDATES] = {{0}};
    cand exact[WS_CANDIDATES] = {{0}};
    size_t nw = 0;
    for (size_t i = 0; i < nt; i++) {
      const ws_file *f = ws->files[top[i].src];
      size_t flen = 0;
      char *ftext = read_source(ws, f->path, &flen);
      lines L;
      if (!ftext || !rv_lines_build(ftext, flen, &L)) {
        free(ftext);
        continue;
      }
      size_t s = top[i].start_line;
      size_t t = s + WS_CHUNK_LINES < L.n ? s + WS_CHUNK_LINES : L.n;
      float sc = s < L.n ? window_score(ftext, &L, s, t, q, nq, buf) : 0.0f;
      free(L.starts);
      if (sc < threshold) {
        free(ftext);
        continue;
      }
      wdocs[nw] = (src_doc){f->path, f->lang, ftext, flen, ftext};
      exact[nw] = (cand){nw, (uint32_t)s, (uint32_t)(t - 1), sc};
      nw++;
    }
    take_chunks(out, &sp, exact, nw, wdocs, max_similar - n_similar);
    for (size_t i = 0; i < nw; i++) free(wdocs[i].owned);
  }
  free(q);
  free(buf);
  for (size_t i = 0; src && i < n_src; i++) free(src[i].owned);
  free(src);
  *spp = sp;
}

/* draft.c — drafts: text that may come next at a cursor, found where code
 * repeats itself, for the engine to verify in the passes it runs anyway
 * (model.h, sc_draft; context.h, sc_drafts_find). Three sources, ranked in
 * this order:
 *
 *   previous   what remained of a suggestion the typing left (the caller's);
 *   prompt     the prompt's own text (snippets, the prefix window, the
 *              suffix): the places where the last lexemes before the cursor
 *              occur, longest match first, then nearest; what followed
 *              there is the draft (prompt-lookup decoding, llama.cpp's
 *              lookup decoding, applied to the text the model is given);
 *   workspace  the index's line table (lines.c): the lines that follow the
 *              previous non-blank line elsewhere in the repository, most
 *              frequent first, filtered by what the cursor's line already
 *              holds (the line n-gram of eval/ngram.c over the workspace;
 *              REST's datastore, He et al. 2023, is the repository here).
 *
 * A draft that runs into the text after the cursor (its first line with
 * blank runs compared as blank runs) is cut there and ends the middle.
 * Lines after a draft's first take the cursor's indentation in place of
 * their source's. Everything here is bounded by the prompt's size and a
 * few dozen places in the index: it runs on every request. */
#define _POSIX_C_SOURCE 200809L
#include "workspace_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES 240
#define MAX_MATCH 16        /* lexemes compared before a place */
#define MAX_SCAN (64u << 10) /* bytes of each side lexed: the windows a prompt has */
#define MAX_LEX 16384       /* lexemes of each side */
#define SIG_MAX 48          /* bytes of the suffix a draft must run into to end the middle */
#define TOP_PLACES (4 * SC_DRAFTS_MAX) /* places of the prompt tried, best first */

/* ---- lexemes ---------------------------------------------------------------------- */

typedef struct lexeme {
  uint32_t start, len;
  uint64_t h; /* of the text; newlines (and blank lines) are one lexeme "\n" */
} lexeme;

static bool word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c >= 0x80;
}
static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* Words, single punctuation characters and line breaks of s[0, n); at most
 * cap of them (the last ones when there are more: the cursor's end of
 * before matters, so callers pass the text's tail). */
static size_t lex(const char *s, size_t n, lexeme *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap;) {
    unsigned char c = (unsigned char)s[i];
    if (blank((char)c)) {
      i++;
      continue;
    }
    size_t j = i + 1;
    if (c == '\n') {
      while (j < n && (s[j] == '\n' || blank(s[j]))) j++;
      out[k++] = (lexeme){(uint32_t)i, 1, 0x4e4c};
    } else {
      if (word_char(c))
        while (j < n && word_char((unsigned char)s[j])) j++;
      out[k++] = (lexeme){(uint32_t)i, (uint32_t)(j - i), sc_hash64(s + i, j - i, 5) | 1};
    }
    i = j;
  }
  return k;
}

/* ---- the drafts' list -------------------------------------------------------------- */

void sc_drafts_free(sc_drafts *d) {
  for (size_t i = 0; i < d->n; i++) free(d->d[i].text);
  memset(d, 0, sizeof *d);
}

/* Adds text (copied) in rank order; the same text twice keeps the better
 * rank; a full list drops the worst. */
static void add(sc_drafts *d, const char *text, size_t len, bool ends, const char *source,
                double score) {
  if (len == 0) return;
  for (size_t i = 0; i < d->n; i++)
    if (d->d[i].len == len && memcmp(d->d[i].text, text, len) == 0) {
      if (score <= d->d[i].score) return;
      free(d->d[i].text);
      memmove(&d->d[i], &d->d[i + 1], (d->n - i - 1) * sizeof d->d[0]);
      d->n--;
      break;
    }
  if (d->n == SC_DRAFTS_MAX && score <= d->d[d->n - 1].score) return;
  char *copy = malloc(len + 1);
  if (!copy) return;
  memcpy(copy, text, len);
  copy[len] = '\0';
  if (d->n == SC_DRAFTS_MAX) free(d->d[--d->n].text);
  size_t at = d->n;
  while (at > 0 && d->d[at - 1].score < score) at--;
  memmove(&d->d[at + 1], &d->d[at], (d->n - at) * sizeof d->d[0]);
  d->d[at] = (sc_text_draft){copy, len, ends, source, score};
  d->n++;
}

/* ---- shaping one draft ------------------------------------------------------------- */

/* Where the text after the cursor begins inside cont[0, n), at j >= 1:
 * its first line that holds anything (at most SIG_MAX bytes, blank runs
 * matching blank runs with a line break or without one alike); -1 when it
 * is nowhere up to max_j, or the suffix is blank to its end. */
static long suffix_at(const char *cont, size_t n, size_t max_j, const char *after,
                      size_t after_len) {
  size_t sig = 0;
  bool seen = false;
  while (sig < after_len && sig < SIG_MAX) {
    if (after[sig] == '\n' && seen) break;
    seen |= !blank(after[sig]) && after[sig] != '\n';
    sig++;
  }
  if (!seen) return -1;
  /* A middle of blanks alone would say that the suffix follows at once:
   * the draft must write something first. */
  size_t j0 = 0;
  while (j0 < n && (blank(cont[j0]) || cont[j0] == '\n')) j0++;
  for (size_t j = j0 + 1; j <= max_j && j < n; j++) {
    size_t a = j, b = 0;
    while (a < n && b < sig) {
      bool wa = blank(cont[a]) || cont[a] == '\n', wb = blank(after[b]) || after[b] == '\n';
      if (wa && wb) {
        bool na = false, nb = false;
        while (a < n && (blank(cont[a]) || cont[a] == '\n')) na |= cont[a++] == '\n';
        while (b < sig && (blank(after[b]) || after[b] == '\n')) nb |= after[b++] == '\n';
        if (na != nb) break;
      } else if (cont[a] == after[b]) {
        a++, b++;
      } else {
        break;
      }
    }
    if (b == sig) return (long)j;
  }
  return -1;
}

/* The indentation (blanks) at the start of the line holding offset i of s. */
static size_t indent_at(const char *s, size_t i, size_t *line_start) {
  size_t a = i;
  while (a > 0 && s[a - 1] != '\n') a--;
  size_t b = a;
  while (b < i && (s[b] == ' ' || s[b] == '\t')) b++;
  if (line_start) *line_start = a;
  return b - a;
}

/* The indentation of the last non-blank line before the line starting at
 * ls; -1 when there is none. */
static long prev_indent(const char *s, size_t ls) {
  while (ls > 0) {
    size_t e = ls - 1, a = e;
    while (a > 0 && s[a - 1] != '\n') a--;
    size_t b = a;
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    if (b < e && s[b] != '\r') return (long)(b - a);
    ls = a;
  }
  return -1;
}

typedef struct shaper {
  const sc_draft_query *q;
  size_t max_bytes;
  int max_lines;
  char ind_char; /* the cursor's indentation character */
} shaper;

/* The draft from a continuation: its lines (one more than the draft may
 * hold, so that the suffix can be found after its end) already indented
 * for the cursor, as buf[0, n). Cut at the suffix (ends), else at the
 * line and byte limits, trailing blanks dropped; added when not empty. */
static void finish(sc_drafts *out, const shaper *sh, const char *buf, size_t n,
                   const char *source, double score) {
  size_t lim = 0;
  int lines = 0;
  while (lim < n && lim < sh->max_bytes) {
    if (buf[lim] == '\n' && ++lines >= sh->max_lines) break;
    lim++;
  }
  long at = suffix_at(buf, n, lim, sh->q->after, sh->q->after_len);
  bool ends = at > 0;
  size_t len = ends ? (size_t)at : lim;
  /* Blanks before the suffix are part of the middle; at a draft's open
   * end they are noise. */
  while (!ends && len > 0 && (blank(buf[len - 1]) || buf[len - 1] == '\n')) len--;
  if (len > 0) add(out, buf, len, ends, source, score);
}

/* Appends src[0, n) to buf: after each line break, the line's indentation
 * moved by delta (the cursor's less the source's), in the cursor's
 * character. Stops after max_lines + 1 lines or cap bytes. */
static size_t reindent(char *buf, size_t cap, const char *src, size_t n, long delta,
                       int max_lines, char ind_char) {
  size_t w = 0;
  int lines = 0;
  for (size_t i = 0; i < n && w < cap;) {
    if (src[i] != '\n') {
      buf[w++] = src[i++];
      continue;
    }
    if (++lines > max_lines) break;
    buf[w++] = '\n';
    i++;
    size_t ind = 0;
    while (i < n && (src[i] == ' ' || src[i] == '\t')) i++, ind++;
    if (i < n && src[i] == '\n') continue; /* a blank line stays blank */
    long want = (long)ind + delta;
    for (long k = 0; k < want && w < cap; k++) buf[w++] = ind_char;
  }
  return w;
}

/* ---- the prompt's own text --------------------------------------------------------- */

typedef struct place {
  int side;      /* 0: before, 1: after */
  uint32_t q;    /* the lexeme the continuation starts at (or inside) */
  double score;  /* the evidence: words matched, punctuation and line breaks half */
  size_t dist;   /* bytes from the cursor: nearer first on a tie */
} place;

static int cmp_place(const void *a, const void *b) {
  const place *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? 1 : -1;
  return x->dist < y->dist ? -1 : x->dist > y->dist;
}

/* A word says more than a bracket or a line break: "p ) : NL" before a
 * cursor matches half the lines of a Python file. */
static double weight(const char *s, const lexeme *l) {
  return word_char((unsigned char)s[l->start]) ? 1.0 : 0.5;
}
#define MIN_EVIDENCE 1.5 /* with a word among it: "x =", or a partial word and "(" */

/* The lexemes and places of one lookup, kept per thread between requests:
 * a fresh 1.5 MB every request cost its page faults (a p99 of 1.8 ms on
 * CPython against 0.8 ms for the lookup itself). MAX_LEX lexemes each side
 * (512 KiB) a thread, freed with it. */
typedef struct scratch {
  lexeme lb[MAX_LEX], la[MAX_LEX];
} scratch;

static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static void scratch_key_make(void) { pthread_key_create(&g_scratch_key, free); }

static scratch *thread_scratch(void) {
  pthread_once(&g_scratch_once, scratch_key_make);
  scratch *s = pthread_getspecific(g_scratch_key);
  if (!s && (s = malloc(sizeof *s)) && pthread_setspecific(g_scratch_key, s) != 0) {
    free(s);
    s = NULL;
  }
  return s;
}

static void from_prompt(const shaper *sh, sc_drafts *out) {
  const sc_draft_query *q = sh->q;
  size_t b0 = q->before_len > MAX_SCAN ? q->before_len - MAX_SCAN : 0;
  size_t a1 = q->after_len > MAX_SCAN ? MAX_SCAN : q->after_len;
  const char *B = q->before + b0, *A = q->after;
  size_t nb_text = q->before_len - b0;
  scratch *sc = thread_scratch();
  if (!sc) return;
  lexeme *lb = sc->lb, *la = sc->la;
  place pl[TOP_PLACES];
  char *buf = malloc(sh->max_bytes + 2 * SIG_MAX + 64);
  if (!buf) goto done;
  /* The tail of before is what matters: lex a window that ends at the cursor. */
  size_t from = nb_text > MAX_LEX * 4 ? nb_text - MAX_LEX * 4 : 0;
  size_t nb = lex(B + from, nb_text - from, lb, MAX_LEX);
  for (size_t i = 0; i < nb; i++) lb[i].start += (uint32_t)from;
  size_t na = lex(A, a1, la, MAX_LEX);
  if (nb == 0) goto done;
  /* The cursor: a word it touches is partial (the next place's word must
   * start with it); blanks before it mean the continuation starts at a
   * lexeme, not right after the last one. */
  bool partial = nb_text > 0 && word_char((unsigned char)B[nb_text - 1]) &&
                 lb[nb - 1].start + lb[nb - 1].len == nb_text && lb[nb - 1].len > 0 &&
                 word_char((unsigned char)B[lb[nb - 1].start]);
  size_t kend = partial ? nb - 1 : nb;
  const lexeme *part = partial ? &lb[nb - 1] : NULL;
  bool spaced = nb_text > 0 && (blank(B[nb_text - 1]) || B[nb_text - 1] == '\n');
  if (kend == 0) goto done;
  size_t np = 0;
  for (int side = 0; side < 2; side++) {
    const lexeme *L = side ? la : lb;
    size_t n = side ? na : kend;
    for (size_t qi = side ? 0 : 1; qi < n; qi++) {
      /* Lexemes before the place that equal the ones before the cursor. */
      int m = 0;
      while (m < MAX_MATCH && (size_t)m < qi && (size_t)m < kend &&
             L[qi - 1 - m].h == lb[kend - 1 - m].h)
        m++;
      double score = 0;
      bool word = false;
      for (int j = 0; j < m; j++) {
        double w = weight(B, &lb[kend - 1 - j]);
        score += w;
        word |= w == 1.0;
      }
      if (part) {
        const char *S = side ? A : B;
        if (L[qi].len < part->len || memcmp(S + L[qi].start, B + part->start, part->len) != 0)
          continue;
        score += 1.0;
        word = true;
      }
      if (score < MIN_EVIDENCE || !word || m < 1) continue;
      size_t dist = side ? L[qi].start : nb_text - L[qi].start;
      /* Only the best TOP_PLACES are ever tried: keep them sorted as they
       * come instead of sorting every place (a prompt of repeated lines
       * has thousands). */
      place np_ = {side, (uint32_t)qi, score, dist};
      if (np == TOP_PLACES && cmp_place(&np_, &pl[np - 1]) >= 0) continue;
      size_t at = np < TOP_PLACES ? np++ : np - 1;
      while (at > 0 && cmp_place(&np_, &pl[at - 1]) < 0) {
        pl[at] = pl[at - 1];
        at--;
      }
      pl[at] = np_;
    }
  }
  /* The cursor's indentation, and each place's, for the lines after the
   * first. On a line with nothing but blanks before the cursor, the lines
   * above set it (the cursor's line has only what was typed so far). */
  size_t cur_ls;
  size_t cur_ind = indent_at(B, nb_text, &cur_ls);
  bool at_line_start = cur_ind == nb_text - cur_ls;
  long cur_prev = at_line_start ? prev_indent(B, cur_ls) : -1;
  int tried = 0;
  for (size_t i = 0; i < np && tried < TOP_PLACES && out->n < SC_DRAFTS_MAX; i++) {
    const place *p = &pl[i];
    const lexeme *L = p->side ? la : lb;
    const char *S = p->side ? A : B;
    size_t S_len = p->side ? a1 : nb_text;
    size_t at = part ? L[p->q].start + part->len
                     : spaced ? L[p->q].start : L[p->q - 1].start + L[p->q - 1].len;
    if (at >= S_len) continue;
    tried++;
    size_t src_ls;
    size_t src_ind = indent_at(S, at, &src_ls);
    long delta = (long)cur_ind - (long)src_ind;
    size_t w = 0;
    if (at_line_start && src_ind == at - src_ls) {
      /* Both at the start of a line: indent as the place is, relative to
       * the line above each; what the cursor's line lacks goes first. */
      long src_prev = prev_indent(S, src_ls);
      delta = cur_prev >= 0 && src_prev >= 0 ? cur_prev - src_prev : 0;
      long need = (long)src_ind + delta - (long)cur_ind;
      while (need-- > 0 && w < sh->max_bytes) buf[w++] = sh->ind_char;
    }
    size_t n = w + reindent(buf + w, sh->max_bytes + 2 * SIG_MAX - w, S + at, S_len - at, delta,
                            sh->max_lines, sh->ind_char);
    /* Local text first on equal evidence, as the line n-gram reads the
     * prompt before its corpus. */
    finish(out, sh, buf, n, "prompt", 1.0 + p->score - (double)p->dist / 1e9);
  }
done:
  free(buf);
}

/* ---- the workspace's line table ---------------------------------------------------- */

typedef struct cand {
  uint64_t h;   /* of the line, stripped */
  uint32_t id, k, count;
} cand;

static void from_workspace(const shaper *sh, sc_drafts *out) {
  const sc_draft_query *q = sh->q;
  const char *B = q->before;
  size_t n = q->before_len;
  /* The cursor's line so far, and the previous non-blank line. */
  size_t ls = n;
  while (ls > 0 && B[ls - 1] != '\n') ls--;
  size_t typed_a = ls;
  while (typed_a < n && blank(B[typed_a])) typed_a++;
  const char *typed = B + typed_a;
  size_t typed_len = n - typed_a, typed_ind = typed_a - ls;
  bool typed_blank = typed_len == 0;
  size_t pe = ls, ps = ls;
  uint64_t key = 0;
  while (pe > 0 && !key) {
    pe--; /* the line break before */
    ps = pe;
    while (ps > 0 && B[ps - 1] != '\n') ps--;
    key = ws_line_key(B + ps, pe - ps);
    if (!key) pe = ps;
  }
  if (!key) return;
  double prev_words = 0;
  for (size_t i = ps; i < pe && prev_words < 8; i++)
    prev_words += word_char((unsigned char)B[i]) && (i == ps || !word_char((unsigned char)B[i - 1]));
  size_t prev_ind = indent_at(B, ps, NULL);
  while (ps + prev_ind < pe && (B[ps + prev_ind] == ' ' || B[ps + prev_ind] == '\t')) prev_ind++;
  const sc_workspace *ws = q->ws;
  pthread_rwlock_t *lock = (pthread_rwlock_t *)&ws->lock; /* readers change nothing */
  pthread_rwlock_rdlock(lock);
  uint32_t np = 0;
  const uint64_t *places = ws_lines_next(&ws->lines, key, &np);
  cand c[WS_LINE_PER_KEY];
  size_t nc = 0;
  for (uint32_t i = 0; i < np; i++) {
    uint32_t id = (uint32_t)(places[i] >> 32), k = (uint32_t)places[i];
    const ws_file *f = id < ws->n_slots ? ws->files[id] : NULL;
    if (!f || k >= f->n_ltab || f->ltab[k] == WS_NONE) continue;
    const char *line = f->ltext + f->ltab[k];
    while (blank(*line)) line++;
    size_t len = strlen(line);
    /* What the cursor's line holds must begin it, and something must be left. */
    if (len <= typed_len || memcmp(line, typed, typed_len) != 0) continue;
    uint64_t h = sc_hash64(line, len, 9);
    size_t j = 0;
    while (j < nc && c[j].h != h) j++;
    if (j == nc) c[nc++] = (cand){h, id, k, 0};
    c[j].count++;
  }
  /* Most frequent first (insertion order on a tie: the first indexed). */
  for (size_t i = 1; i < nc; i++)
    for (size_t j = i; j > 0 && c[j].count > c[j - 1].count; j--) {
      cand t = c[j];
      c[j] = c[j - 1];
      c[j - 1] = t;
    }
  size_t cap = sh->max_bytes + 2 * SIG_MAX + 64;
  char *buf = malloc(cap), *src = malloc(cap);
  for (size_t i = 0; buf && src && i < nc && i < SC_DRAFTS_MAX; i++) {
    const ws_file *f = ws->files[c[i].id];
    uint32_t k = c[i].k;
    const char *line = f->ltext + f->ltab[k];
    size_t src_ind = 0;
    while (line[src_ind] == ' ' || line[src_ind] == '\t') src_ind++;
    /* The source's previous line sets how far its indentation is from ours. */
    const char *prev = f->ltext + f->ltab[k - 1];
    size_t src_prev_ind = 0;
    while (prev[src_prev_ind] == ' ' || prev[src_prev_ind] == '\t') src_prev_ind++;
    long delta = (long)prev_ind - (long)src_prev_ind;
    /* The draft starts after what is typed; on a blank line, with what
     * indentation the line still needs. */
    size_t w = 0;
    if (typed_blank) {
      long need = (long)src_ind + delta - (long)typed_ind;
      for (long x = 0; x < need && w < cap / 2; x++) src[w++] = sh->ind_char;
    }
    const char *first = line + src_ind + typed_len;
    size_t fl = strlen(first);
    if (fl > cap / 2) fl = cap / 2;
    memcpy(src + w, first, fl);
    w += fl;
    /* The lines after it in its file, as they are there (reindent moves them). */
    for (uint32_t x = k + 1; x < f->n_ltab && x <= k + (uint32_t)sh->max_lines && w < cap; x++) {
      if (f->ltab[x] == WS_NONE) break;
      const char *l = f->ltext + f->ltab[x];
      size_t ll = strlen(l);
      if (w + 1 + ll > cap) break;
      src[w++] = '\n';
      memcpy(src + w, l, ll);
      w += ll;
    }
    size_t nbuf = reindent(buf, cap, src, w, delta, sh->max_lines, sh->ind_char);
    /* The evidence: the previous line's words (the whole line matched),
     * and how often the line follows it. */
    finish(out, sh, buf, nbuf, "workspace", prev_words + log2(1.0 + c[i].count) / 2.0);
  }
  pthread_rwlock_unlock(lock);
  free(buf);
  free(src);
}

/* ---- the entry ---------------------------------------------------------------------- */

void sc_drafts_find(const sc_draft_query *q, sc_drafts *out) {
  double t0 = sc_now_ms();
  memset(out, 0, sizeof *out);
  shaper sh = {q, q->max_bytes ? q->max_bytes : DEFAULT_MAX_BYTES,
               q->max_lines > 0 ? q->max_lines : q->single_line ? 1 : 4, ' '};
  if (q->single_line) sh.max_lines = 1;
  size_t ls = q->before_len;
  while (ls > 0 && q->before[ls - 1] != '\n') ls--;
  if (ls < q->before_len && q->before[ls] == '\t') sh.ind_char = '\t';
  if (q->previous && q->previous_len) {
    char *buf = malloc(q->previous_len + 1);
    if (buf) {
      memcpy(buf, q->previous, q->previous_len);
      finish(out, &sh, buf, q->previous_len, "previous", 100.0);
      free(buf);
    }
  }
  from_prompt(&sh, out);
  if (q->ws) from_workspace(&sh, out);
  out->ms = sc_now_ms() - t0;
}

/* ---- token runs for the engine ------------------------------------------------------ */

void sc_draft_runs_free(sc_draft_runs *r) {
  for (int i = 0; i < r->n; i++) free((void *)r->d[i].ids);
  memset(r, 0, sizeof *r);
}

sc_status sc_drafts_encode(const sc_drafts *d, const sc_tokenizer *tok, int max_tokens,
                           sc_draft_runs *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < d->n && out->n < SC_INFILL_MAX_DRAFTS; i++) {
    int32_t *ids = NULL;
    size_t n = 0;
    sc_status st = sc_tokenizer_encode(tok, d->d[i].text, d->d[i].len, &ids, &n, err);
    if (st != SC_OK) {
      sc_draft_runs_free(out);
      return st;
    }
    if (n == 0) {
      free(ids);
      continue;
    }
    bool cut = max_tokens > 0 && n > (size_t)max_tokens;
    out->d[out->n++] = (sc_draft){ids, cut ? max_tokens : (int)n, 0, d->d[i].ends_middle && !cut};
  }
  return SC_OK;
}

sc_status sc_drafts_attach(const sc_draft_query *q, const sc_tokenizer *tok, int max_tokens,
                           sc_drafts *found, sc_draft_runs *runs, sc_infill_params *params,
                           sc_error *err) {
  sc_drafts_find(q, found);
  SC_TRY(sc_drafts_encode(found, tok, max_tokens, runs, err));
  params->drafts = runs->n ? runs->d : NULL;
  params->n_drafts = runs->n;
  return SC_OK;
}

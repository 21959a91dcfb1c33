/* retrieve.c — prompt assembly: the windows around the cursor and the
 * snippets retrieved for them.
 *
 * Retrieval for a cursor, in priority order (the order the snippets appear
 * in, and the order the snippet budget is spent in):
 *   1. the headers of the enclosing scopes the prefix window cut off;
 *   2. definitions of identifiers used around the cursor, in the same file;
 *   3. recently edited ranges, most recent first (a few lines around each);
 *   4. chunks of the other open and recently edited documents whose
 *      identifier sets are most similar (exact Jaccard) to the lines around
 *      the cursor: Copilot's "neighbouring tabs" (see
 *      ../shared/notes/completion-servers.md: Jaccard over identifier sets
 *      in sliding windows);
 *   5. definitions in the files this one imports, 6. in the workspace;
 *   7. similar workspace chunks: candidates by MinHash estimate over the
 *      index's sketches, re-scored exactly from the file before use.
 * Each snippet is headed by its path in the language's comment syntax. None
 * overlaps another from the same file or repeats the windows' text. */
#define _DEFAULT_SOURCE /* strndup */
#include "workspace_impl.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUERY_LINES_BEFORE 16 /* the cursor's window for similarity: these lines ... */
#define QUERY_LINES_AFTER 8   /* ... and these (about one chunk) */
#define MAX_EXTRA_DOCS 8      /* recently edited files read from disk for step 4 */
#define WS_CANDIDATES 8       /* workspace chunks re-scored exactly */
#define EDIT_CONTEXT_LINES 2  /* lines shown around a recent edit */
#define EDIT_MAX_LINES 16
#define SET_CAP 2048

static size_t count_tokens(const sc_tokenizer *tok, const char *s, size_t n) {
  int32_t *ids = NULL;
  size_t k = 0;
  if (n == 0 || sc_tokenizer_encode(tok, s, n, &ids, &k, NULL) != SC_OK) k = n ? n / 3 + 1 : 0;
  free(ids);
  return k;
}

static const char *comment_prefix(const char *lang) {
  if (!lang) return NULL;
  if (strcmp(lang, "python") == 0 || strcmp(lang, "bash") == 0) return "#";
  if (strcmp(lang, "json") == 0) return NULL;
  return "//";
}

/* ---- lines ---------------------------------------------------------------------- */

typedef struct lines {
  size_t *starts; /* byte offset of each line; a final newline starts none */
  size_t n;
  size_t len;
} lines;

static bool lines_build(const char *text, size_t len, lines *L) {
  size_t cap = 64;
  L->starts = malloc(cap * sizeof *L->starts);
  L->n = 0;
  L->len = len;
  if (!L->starts) return false;
  L->starts[L->n++] = 0;
  for (size_t i = 0; i + 1 < len; i++) {
    if (text[i] != '\n') continue;
    if (L->n == cap) {
      size_t *ns = realloc(L->starts, cap * 2 * sizeof *ns);
      if (!ns) {
        free(L->starts);
        L->starts = NULL;
        return false;
      }
      L->starts = ns;
      cap *= 2;
    }
    L->starts[L->n++] = i + 1;
  }
  return true;
}

static size_t line_start(const lines *L, size_t i) { return i < L->n ? L->starts[i] : L->len; }

static size_t line_of(const lines *L, size_t off) {
  size_t lo = 0, hi = L->n; /* the last start <= off */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (L->starts[mid] <= off) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* ---- snippets ------------------------------------------------------------------- */

/* Appends text[a, b) as a snippet headed by "<comment> path:line". */
static bool push_snippet(sc_prompt *out, const char *path, const char *lang, const char *text,
                         size_t a, size_t b, uint32_t start_line, uint32_t end_line,
                         const char *reason, const char *name, float score) {
  if (b <= a) return false;
  const char *cp = comment_prefix(lang);
  size_t hl = strlen(path) + 32;
  char *s = malloc(hl + (b - a) + 2);
  if (!s) return false;
  int n = cp ? snprintf(s, hl, "%s %s:%u\n", cp, path, start_line + 1) : 0;
  memcpy(s + n, text + a, b - a);
  size_t e = (size_t)n + (b - a);
  if (text[b - 1] != '\n') s[e++] = '\n';
  s[e] = '\0';
  sc_context_snippet *ns = realloc(out->snippets, (out->n_snippets + 1) * sizeof *ns);
  char *p = strdup(path), *nm = strdup(name ? name : "");
  if (!ns || !p || !nm) {
    if (ns) out->snippets = ns;
    free(s), free(p), free(nm);
    return false;
  }
  out->snippets = ns;
  out->snippets[out->n_snippets++] =
      (sc_context_snippet){p, start_line, end_line, reason, nm, s, e, 0, score};
  return true;
}

/* Whether text[0, n) contains the NUL-terminated s. */
static bool holds(const char *text, size_t n, const char *s) {
  size_t k = strlen(s);
  for (size_t i = 0; k <= n && i <= n - k; i++)
    if (text[i] == s[0] && memcmp(text + i, s, k) == 0) return true;
  return false;
}

static bool add_def_snippet(sc_prompt *out, const char *path, const ws_def *d, const char *text,
                            size_t len, const char *reason, const char *lang) {
  if (d->end_byte > len || d->start_byte >= d->end_byte) return false;
  /* The entry may lag the text (a buffer refreshed every 2 s, a file
   * changed without an event): offsets that no longer hold the name would
   * cut an unrelated snippet. */
  if (d->name[0] && !holds(text + d->start_byte, d->end_byte - d->start_byte, d->name))
    return false;
  /* At most 40 lines of the definition. */
  size_t a = d->start_byte, b = d->end_byte, lines_seen = 0;
  for (size_t i = a; i < b; i++)
    if (text[i] == '\n' && ++lines_seen == 40) {
      b = i;
      break;
    }
  return push_snippet(out, path, lang, text, a, b, d->start_line, d->end_line, reason, d->name,
                      0.0f);
}

static bool already_have(const sc_prompt *out, const char *path, const ws_def *d) {
  for (size_t i = 0; i < out->n_snippets; i++)
    if (strcmp(out->snippets[i].path, path) == 0 && out->snippets[i].start_line == d->start_line)
      return true;
  return false;
}

/* Whether lines [s, e] of path overlap a snippet already taken. */
static bool overlaps(const sc_prompt *out, const char *path, uint32_t s, uint32_t e) {
  for (size_t i = 0; i < out->n_snippets; i++) {
    const sc_context_snippet *x = &out->snippets[i];
    if (strcmp(x->path, path) == 0 && x->start_line <= e && s <= x->end_line) return true;
  }
  return false;
}

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
  size_t x = line_start(L, a), y = line_start(L, b);
  size_t n = sc_ident_set(text + x, y - x, buf, SET_CAP);
  return n < 3 ? 0.0f : sc_ident_jaccard(q, nq, buf, n);
}

/* Every window of doc at or above threshold, appended to *cs. */
static void scan_doc(const src_doc *d, size_t src, const uint64_t *q, size_t nq,
                     float threshold, cand **cs, size_t *n, size_t *cap, uint64_t *buf) {
  lines L;
  if (!lines_build(d->text, d->len, &L)) return;
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

/* Takes the best candidates (by score) that overlap nothing taken, as
 * "similar chunk" snippets; returns how many. */
static size_t take_chunks(sc_prompt *out, cand *cs, size_t n, const src_doc *docs, size_t want) {
  if (n > 1) qsort(cs, n, sizeof *cs, cmp_cand);
  size_t taken = 0;
  for (size_t i = 0; i < n && taken < want; i++) {
    const src_doc *d = &docs[cs[i].src];
    if (overlaps(out, d->path, cs[i].start_line, cs[i].end_line)) continue;
    lines L;
    if (!lines_build(d->text, d->len, &L)) continue;
    size_t a = line_start(&L, cs[i].start_line), b = line_start(&L, cs[i].end_line + 1);
    free(L.starts);
    if (push_snippet(out, d->path, d->lang, d->text, a, b, cs[i].start_line, cs[i].end_line,
                     "similar chunk", "", cs[i].score))
      taken++;
  }
  return taken;
}

static int cmp_edit_recent(const void *a, const void *b) {
  double x = (*(const sc_edited_range *const *)a)->when_ms;
  double y = (*(const sc_edited_range *const *)b)->when_ms;
  return x > y ? -1 : x < y;
}

/* ---- the prompt ------------------------------------------------------------------- */

sc_status sc_prompt_build(const sc_workspace *ws, const char *path, const char *lang,
                          const char *text, size_t len, size_t cursor, const sc_tokenizer *tok,
                          size_t budget, sc_prompt *out, sc_error *err) {
  return sc_prompt_build_with(ws, path, lang, text, len, cursor, tok, budget, NULL, out, err);
}

sc_status sc_prompt_build_with(const sc_workspace *ws, const char *path, const char *lang,
                               const char *text, size_t len, size_t cursor,
                               const sc_tokenizer *tok, size_t budget,
                               const sc_prompt_inputs *in, sc_prompt *out, sc_error *err) {
  memset(out, 0, sizeof *out);
  SC_CHECK(tok && text && cursor <= len, err, SC_ERR_INVALID, "prompt: bad arguments");
  SC_CHECK(budget >= 16, err, SC_ERR_INVALID, "prompt: a budget of %zu tokens is too small",
           budget);
  static const sc_prompt_inputs none;
  if (!in) in = &none;
  float threshold = in->similar_threshold > 0 ? in->similar_threshold : 0.2f;
  size_t max_similar = in->max_similar ? in->max_similar : 3;
  size_t max_edits = in->max_recent_edits ? in->max_recent_edits : 3;
  const char *self_path = path ? path : "(buffer)";
  /* Windows: whole lines around the cursor, nearest first, three quarters of
   * what the snippets leave before the cursor and the rest after. */
  size_t snippet_budget = budget / 4;
  size_t window_budget = budget - snippet_budget;
  size_t pre_budget = window_budget * 3 / 4, suf_budget = window_budget - pre_budget;
  size_t a = cursor, used = 0;
  while (a > 0) {
    size_t ls = a - 1;
    while (ls > 0 && text[ls - 1] != '\n') ls--;
    size_t t = count_tokens(tok, text + ls, a - ls);
    if (used + t > pre_budget && a != cursor) break;
    used += t;
    a = ls;
    if (used >= pre_budget) break;
  }
  out->prefix_tokens = used;
  size_t b = cursor;
  used = 0;
  while (b < len) {
    const char *nlp = memchr(text + b, '\n', len - b);
    size_t le = nlp ? (size_t)(nlp - text) + 1 : len;
    size_t t = count_tokens(tok, text + b, le - b);
    if (used + t > suf_budget && b != cursor) break;
    used += t;
    b = le;
    if (used >= suf_budget) break;
  }
  out->suffix_tokens = used;
  out->prefix = strndup(text + a, cursor - a);
  out->suffix = strndup(text + cursor, b - cursor);
  out->prefix_start = a;
  out->suffix_end = b;
  SC_CHECK(out->prefix && out->suffix, err, SC_ERR_NOMEM, "prompt: out of memory");
  lines self_lines = {0};
  if (!lines_build(text, len, &self_lines)) {
    sc_prompt_free(out);
    return sc_error_set(err, SC_ERR_NOMEM, "prompt: out of memory");
  }
  size_t win_first = line_of(&self_lines, a), win_last = line_of(&self_lines, b ? b - 1 : 0);

  /* 1. The enclosing scopes whose headers the prefix window cut off: the
   * path of functions and classes down to the cursor, outermost first, one
   * header line each. One parse of the text serves them and the file's own
   * index. */
  sc_syntax_tree *tree = NULL;
  if (lang && sc_context_ts_language(lang) &&
      sc_syntax_tree_new(lang, text, len, &tree, NULL) != SC_OK)
    tree = NULL;
  if (tree) {
    TSNode n = ts_node_descendant_for_byte_range(sc_syntax_tree_root(tree), (uint32_t)cursor,
                                                 (uint32_t)cursor);
    TSNode scopes[16];
    int ns = 0;
    for (; !ts_node_is_null(n) && ns < 16; n = ts_node_parent(n)) {
      const char *t = ts_node_type(n);
      bool scope = strstr(t, "function") || strstr(t, "class") || strstr(t, "method") ||
                   strstr(t, "impl_item") || strstr(t, "struct_specifier");
      if (scope && strstr(t, "call") == NULL && ts_node_start_byte(n) < a)
        scopes[ns++] = n;
    }
    for (int k = ns - 1; k >= 0; k--) {
      uint32_t x = ts_node_start_byte(scopes[k]), y = x;
      while (x > 0 && text[x - 1] != '\n') x--; /* keep the indentation */
      while (y < len && text[y] != '\n') y++;
      uint32_t row = ts_node_start_point(scopes[k]).row;
      char *name = strndup(text + x, y - x);
      if (name) push_snippet(out, self_path, lang, text, x, y, row, row, "enclosing scope", name,
                             0.0f);
      free(name);
    }
  }

  /* Identifiers around the cursor, nearest first. */
  char *words[64];
  size_t n_words = 0;
  size_t lo = cursor > 2000 ? cursor - 2000 : 0, hi = cursor + 400 < len ? cursor + 400 : len;
  for (size_t i = cursor; i > lo && n_words < 64;) {
    size_t e = i;
    while (e > lo && !(isalnum((unsigned char)text[e - 1]) || text[e - 1] == '_')) e--;
    size_t s = e;
    while (s > lo && (isalnum((unsigned char)text[s - 1]) || text[s - 1] == '_')) s--;
    if (s == e) break;
    i = s;
    if (e - s < 3 || isdigit((unsigned char)text[s]) || ws_is_keyword(text + s, e - s)) continue;
    char *w = strndup(text + s, e - s);
    bool dup = !w;
    for (size_t k = 0; k < n_words && !dup; k++) dup = strcmp(words[k], w) == 0;
    if (dup) free(w);
    else words[n_words++] = w;
  }
  for (size_t i = cursor; i < hi && n_words < 64;) {
    while (i < hi && !(isalnum((unsigned char)text[i]) || text[i] == '_')) i++;
    size_t s = i;
    while (i < hi && (isalnum((unsigned char)text[i]) || text[i] == '_')) i++;
    if (i - s < 3 || isdigit((unsigned char)text[s]) || ws_is_keyword(text + s, i - s)) continue;
    char *w = strndup(text + s, i - s);
    bool dup = !w;
    for (size_t k = 0; k < n_words && !dup; k++) dup = strcmp(words[k], w) == 0;
    if (dup) free(w);
    else words[n_words++] = w;
  }

  /* 2. The current file's own definitions (from its text now). */
  ws_file self = {0};
  self.lang = lang;
  if (tree) ws_index_tree(&self, tree, text);
  sc_syntax_tree_free(tree);
  bool *word_done = calloc(n_words ? n_words : 1, sizeof *word_done);
  for (size_t w = 0; w < n_words && word_done; w++) {
    bool found = false;
    for (size_t k = 0; k < self.n_defs && !found; k++) {
      ws_def *d = &self.defs[k];
      if (strcmp(d->name, words[w]) != 0) continue;
      if (d->end_byte > a && d->start_byte < b) {
        found = true; /* already in the window */
        break;
      }
      found = !already_have(out, self_path, d) &&
              add_def_snippet(out, self_path, d, text, len, "same file", lang);
    }
    word_done[w] = found;
  }

  /* The documents searched for recent edits and similar chunks: the open
   * ones the caller passed, then recently edited files read from disk. */
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

  /* 3. Recent edits, most recent first, outside the windows. */
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
    else if (!lines_build(d->text, d->len, &L)) continue;
    uint32_t s = e->start_line, t = e->end_line < e->start_line ? e->start_line : e->end_line;
    s = s > EDIT_CONTEXT_LINES ? s - EDIT_CONTEXT_LINES : 0;
    t += EDIT_CONTEXT_LINES;
    if (t >= L.n) t = L.n ? (uint32_t)L.n - 1 : 0;
    if (t - s + 1 > EDIT_MAX_LINES) t = s + EDIT_MAX_LINES - 1;
    bool ok = s < L.n && !(is_self && s <= win_last && win_first <= t) &&
              !overlaps(out, d->path, s, t);
    if (ok && push_snippet(out, d->path, d->lang, d->text, line_start(&L, s),
                           line_start(&L, (size_t)t + 1), s, t, "recent edit", "", 0.0f))
      n_taken_edits++;
    if (!is_self) free(L.starts);
  }
  free(edits);

  /* The cursor's window of identifiers, for similarity. */
  uint64_t *q = malloc(SET_CAP * sizeof *q), *buf = malloc(SET_CAP * sizeof *buf);
  size_t nq = 0;
  if (q && buf) {
    size_t cl = line_of(&self_lines, cursor);
    size_t qa = cl > QUERY_LINES_BEFORE ? cl - QUERY_LINES_BEFORE : 0;
    size_t qb = cl + QUERY_LINES_AFTER < self_lines.n ? cl + QUERY_LINES_AFTER : self_lines.n;
    size_t x = line_start(&self_lines, qa), y = line_start(&self_lines, qb);
    nq = sc_ident_set(text + x, y - x, q, SET_CAP);
  }
  free(self_lines.starts);

  /* 4. Similar chunks of the open and recently edited documents. */
  size_t n_similar = 0;
  if (nq >= 3 && src) {
    cand *cs = NULL;
    size_t nc = 0, cc = 0;
    for (size_t i = 0; i < n_src; i++) scan_doc(&src[i], i, q, nq, threshold, &cs, &nc, &cc, buf);
    n_similar = take_chunks(out, cs, nc, src, max_similar);
    free(cs);
  }

  /* 5. Files this one imports, 6. the rest of the workspace; 7. similar
   * workspace chunks. The read lock is held throughout: updates parse
   * outside it and only wait for the swap. */
  if (ws) {
    pthread_rwlock_t *lock = (pthread_rwlock_t *)&ws->lock; /* readers do not change ws */
    pthread_rwlock_rdlock(lock);
    for (int pass = 0; pass < 2; pass++) {
      for (size_t w = 0; w < n_words && word_done; w++) {
        if (word_done[w]) continue;
        const ws_map_entry *e = ws_map_get(&ws->by_name, words[w]);
        for (uint32_t v = 0; e && v < e->n && !word_done[w]; v++) {
          uint32_t fid = (uint32_t)(e->vals[v] >> 32), k = (uint32_t)e->vals[v];
          const ws_file *f = fid < ws->n_slots ? ws->files[fid] : NULL;
          if (!f || k >= f->n_defs || (path && strcmp(f->path, path) == 0)) continue;
          bool imported = false;
          const char *base = strrchr(f->path, '/');
          base = base ? base + 1 : f->path;
          const char *dot = strrchr(base, '.');
          size_t bl = dot ? (size_t)(dot - base) : strlen(base);
          for (size_t m = 0; m < self.n_imports && !imported; m++)
            imported = strlen(self.imports[m]) == bl && strncmp(self.imports[m], base, bl) == 0;
          if ((pass == 0) != imported || already_have(out, f->path, &f->defs[k])) continue;
          /* An open document's entry follows its buffer (the LSP refreshes
           * it from there), so its definitions' bytes are the buffer's: cut
           * the snippet from the buffer, not from the file on disk. */
          const src_doc *open = NULL;
          for (size_t i = 0; src && i < n_open && !open; i++)
            if (strcmp(src[i].path, f->path) == 0) open = &src[i];
          size_t flen = 0;
          char *ftext = open ? NULL : read_source(ws, f->path, &flen);
          if (open)
            word_done[w] = add_def_snippet(out, f->path, &f->defs[k], open->text, open->len,
                                           pass == 0 ? "imported file" : "workspace", f->lang);
          else if (ftext)
            word_done[w] = add_def_snippet(out, f->path, &f->defs[k], ftext, flen,
                                           pass == 0 ? "imported file" : "workspace", f->lang);
          free(ftext);
        }
      }
    }
    if (nq >= 3 && n_similar < max_similar && q && buf) {
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
        if (!ftext || !lines_build(ftext, flen, &L)) {
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
      take_chunks(out, exact, nw, wdocs, max_similar - n_similar);
      for (size_t i = 0; i < nw; i++) free(wdocs[i].owned);
    }
    pthread_rwlock_unlock(lock);
  }
  free(q);
  free(buf);
  free(word_done);
  for (size_t i = 0; src && i < n_src; i++) free(src[i].owned);
  free(src);
  for (size_t w = 0; w < n_words; w++) free(words[w]);
  for (size_t k = 0; k < self.n_defs; k++) free(self.defs[k].name);
  for (size_t k = 0; k < self.n_imports; k++) free(self.imports[k]);
  free(self.defs);
  free(self.imports);

  /* Within the snippet budget, in retrieval order; none that repeats the
   * windows' text. */
  size_t kept = 0, total = 0;
  for (size_t i = 0; i < out->n_snippets; i++) {
    sc_context_snippet *s = &out->snippets[i];
    const char *body = strchr(s->text, '\n');
    body = body && body[1] ? body + 1 : s->text;
    bool repeated = *body && (strstr(out->prefix, body) || strstr(out->suffix, body));
    s->tokens = count_tokens(tok, s->text, s->len);
    if (repeated || total + s->tokens > snippet_budget) {
      free(s->path);
      free(s->name);
      free(s->text);
      continue;
    }
    total += s->tokens;
    out->snippets[kept++] = *s;
  }
  out->n_snippets = kept;
  out->snippet_tokens = total;
  return SC_OK;
}

char *sc_prompt_text(const sc_prompt *p, size_t *len) {
  size_t wl = p->prefix ? strlen(p->prefix) : 0, total = wl;
  for (size_t i = 0; i < p->n_snippets; i++) total += p->snippets[i].len;
  char *out = malloc(total + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < p->n_snippets; i++) {
    memcpy(out + o, p->snippets[i].text, p->snippets[i].len);
    o += p->snippets[i].len;
  }
  if (wl) memcpy(out + o, p->prefix, wl);
  out[total] = '\0';
  *len = total;
  return out;
}

void sc_prompt_free(sc_prompt *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_snippets; i++) {
    free(p->snippets[i].path);
    free(p->snippets[i].name);
    free(p->snippets[i].text);
  }
  free(p->snippets);
  free(p->prefix);
  free(p->suffix);
  memset(p, 0, sizeof *p);
}

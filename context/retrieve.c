/* retrieve.c — prompt assembly: the windows around the cursor and the
 * snippets retrieved for them. This file holds the assembly, the budget
 * and the rules it is spent by (with the limits in prompt_impl.h); phase 1
 * is retrieve_defs.c (and retrieve_forms.c, the compact forms), phase 2
 * retrieve_fill.c.
 *
 * What the cursor is about to use matters most, so definitions come first
 * and come compact. The snippet budget (a quarter of the prompt) is spent
 * in two phases:
 *
 *   1. definitions, in the priority order of the names they define
 *      (resolve.c): the member access at the cursor (its member, found
 *      through the receiver's type where the index knows it, then that
 *      type with its fields or methods), the names on the cursor's line,
 *      then the lines around it nearest first (a line after the cursor
 *      before the line before it at the same distance; the enclosing
 *      function's lines before the rest), then the names the rest of the
 *      file uses most. Each is
 *      offered in its compact form: a prototype, a signature, a field or
 *      constant line, a struct with its fields, a class with its members'
 *      signatures, a Go type with its method set. The headers of the
 *      enclosing scopes the prefix window cut off come before them.
 *      A definition is looked up in the file itself (its text now), then
 *      in the files it imports (resolved by path), then in the workspace.
 *   2. with what is left, in order: recently edited ranges (most recent
 *      first), chunks of the open and recently edited documents most
 *      similar to the cursor's lines (Copilot's "neighbouring tabs", exact
 *      Jaccard over identifier sets; see ../shared/notes/completion-servers.md),
 *      the bodies of the functions phase 1 gave as signatures, and similar
 *      workspace chunks (MinHash candidates re-scored exactly).
 *
 * More budget never drops a definition that less budget included. Phase 1
 * takes definitions in priority order while they fit and stops at the
 * first that does not (skipping it and taking a later, smaller one would
 * let a larger budget, which takes the skipped one, drop the later one);
 * every compact form is bounded (a container's members stop at
 * CONTAINER_TOKENS), so what this leaves unused is small. Costs do not
 * depend on the budget, and the names are read from a region fixed in
 * lines, not in tokens, so the candidate list does not grow with the
 * budget; a definition that a larger window shows is dropped as a snippet,
 * but it is then in the prompt anyway, and what it cost goes to the next.
 * Nothing repeats the windows' text. */
#define _DEFAULT_SOURCE /* strndup */
#include "prompt_impl.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Token counts of recent texts (window lines, compact forms), per thread:
 * consecutive prompts share most of them, and encoding each again was
 * most of a retrieval's time. Keyed by the tokenizer and a 64-bit hash of
 * the text (with its length: a collision would only misjudge a budget). */
#define TOKEN_CACHE 4096
typedef struct token_memo {
  const sc_tokenizer *tok;
  uint64_t hash;
  uint32_t len, tokens;
} token_memo;
static _Thread_local token_memo t_memo[TOKEN_CACHE];

size_t rv_count_tokens(const sc_tokenizer *tok, const char *s, size_t n) {
  if (n == 0) return 0;
  uint64_t h = sc_hash64(s, n, 0x70c);
  token_memo *m = &t_memo[h & (TOKEN_CACHE - 1)];
  if (m->tok == tok && m->hash == h && m->len == (uint32_t)n) return m->tokens;
  int32_t *ids = NULL;
  size_t k = 0;
  if (sc_tokenizer_encode(tok, s, n, &ids, &k, NULL) != SC_OK) k = n / 3 + 1;
  free(ids);
  *m = (token_memo){tok, h, (uint32_t)n, (uint32_t)k};
  return k;
}

/* n, or less so that s[0, result) ends on a whole UTF-8 character, when
 * it is more than max. */
size_t rv_utf8_cut(const char *s, size_t n, size_t max) {
  if (n <= max) return n;
  while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
  return max;
}

const char *rv_comment_prefix(const char *lang) {
  if (!lang) return NULL;
  if (strcmp(lang, "python") == 0 || strcmp(lang, "bash") == 0) return "#";
  if (strcmp(lang, "json") == 0) return NULL;
  return "//";
}

/* ---- lines ---------------------------------------------------------------------- */

bool rv_lines_build(const char *text, size_t len, lines *L) {
  size_t cap = 64;
  L->starts = malloc(cap * sizeof *L->starts);
  L->n = 0;
  L->len = len;
  if (!L->starts) return false;
  L->starts[L->n++] = 0;
  for (const char *p = text, *end = text + (len ? len - 1 : 0);
       len && (p = memchr(p, '\n', (size_t)(end - p))); p++) {
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
    L->starts[L->n++] = (size_t)(p - text) + 1;
  }
  return true;
}

size_t rv_line_start(const lines *L, size_t i) { return i < L->n ? L->starts[i] : L->len; }

size_t rv_line_of(const lines *L, size_t off) {
  size_t lo = 0, hi = L->n; /* the last start <= off */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (L->starts[mid] <= off) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* ---- snippets ------------------------------------------------------------------- */

/* Appends a snippet: body[0, n) headed by "<comment> path:line". */
sc_context_snippet *rv_push_text(sc_prompt *out, const char *path, const char *lang,
                                 const char *body, size_t n, uint32_t start_line, uint32_t end_line,
                                 const char *reason, const char *name, const char *kind,
                                 float score) {
  if (n == 0) return NULL;
  const char *cp = rv_comment_prefix(lang);
  size_t hl = strlen(path) + 32;
  char *s = malloc(hl + n + 2);
  if (!s) return NULL;
  int h = cp ? snprintf(s, hl, "%s %s:%u\n", cp, path, start_line + 1) : 0;
  memcpy(s + h, body, n);
  size_t e = (size_t)h + n;
  if (body[n - 1] != '\n') s[e++] = '\n';
  s[e] = '\0';
  sc_context_snippet *ns = realloc(out->snippets, (out->n_snippets + 1) * sizeof *ns);
  char *p = strdup(path), *nm = strdup(name ? name : "");
  if (!ns || !p || !nm) {
    if (ns) out->snippets = ns;
    free(s), free(p), free(nm);
    return NULL;
  }
  out->snippets = ns;
  sc_context_snippet *x = &out->snippets[out->n_snippets++];
  *x = (sc_context_snippet){p, start_line, end_line, reason, nm, kind ? kind : "", false, s, e,
                            0, score};
  return x;
}

void rv_snippet_free(sc_context_snippet *s) {
  free(s->path);
  free(s->name);
  free(s->text);
}

/* Whether lines [s, e] of path overlap a snippet already taken (from
 * index first on). */
bool rv_overlaps(const sc_prompt *out, size_t first, const char *path, uint32_t s, uint32_t e) {
  for (size_t i = first; i < out->n_snippets; i++) {
    const sc_context_snippet *x = &out->snippets[i];
    if (strcmp(x->path, path) == 0 && x->start_line <= e && s <= x->end_line) return true;
  }
  return false;
}

/* Whether a snippet's text (past its header line) is already in a window. */
bool rv_repeats_window(const sc_prompt *out, const sc_context_snippet *s) {
  const char *body = strchr(s->text, '\n');
  body = body && body[1] ? body + 1 : s->text;
  return *body && (strstr(out->prefix, body) || strstr(out->suffix, body));
}


/* Keeps the snippet just pushed when it fits what is left and repeats no
 * window; else drops it. */
bool rv_afford(sc_prompt *out, spend *sp) {
  sc_context_snippet *s = &out->snippets[out->n_snippets - 1];
  s->tokens = rv_count_tokens(sp->tok, s->text, s->len);
  if (s->tokens > sp->left || rv_repeats_window(out, s)) {
    rv_snippet_free(s);
    out->n_snippets--;
    return false;
  }
  sp->left -= s->tokens;
  return true;
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
    size_t t = rv_count_tokens(tok, text + ls, a - ls);
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
    size_t t = rv_count_tokens(tok, text + b, le - b);
    if (used + t > suf_budget && b != cursor) break;
    used += t;
    b = le;
    if (used >= suf_budget) break;
  }
  out->suffix_tokens = used;
  out->prefix = sc_memdup(text + a, cursor - a);
  out->suffix = sc_memdup(text + cursor, b - cursor);
  out->prefix_start = a;
  out->suffix_end = b;
  SC_CHECK(out->prefix && out->suffix, err, SC_ERR_NOMEM, "prompt: out of memory");
  lines self_lines = {0};
  if (!rv_lines_build(text, len, &self_lines)) {
    sc_prompt_free(out);
    return sc_error_set(err, SC_ERR_NOMEM, "prompt: out of memory");
  }
  size_t win_first = rv_line_of(&self_lines, a), win_last = rv_line_of(&self_lines, b ? b - 1 : 0);

  /* The syntax tree: the caller's, or one parse of the text here. */
  sc_syntax_tree *own_tree = NULL;
  const sc_syntax_tree *tree = in->tree;
  if (!tree && lang && sc_context_ts_language(lang) &&
      sc_syntax_tree_new(lang, text, len, &own_tree, NULL) == SC_OK)
    tree = own_tree;

  /* Enclosing scopes whose headers the prefix window cut off: the path of
   * functions and classes down to the cursor, outermost first, one header
   * line each. */
  if (tree) {
    TSNode scopes[16], *up;
    int ns = 0;
    size_t nup = sc_syntax_ancestry_at(tree, cursor, cursor, &up);
    for (size_t u = 0; u < nup && ns < 16; u++) {
      TSNode n = up[u];
      const char *t = ts_node_type(n);
      bool scope = strstr(t, "function") || strstr(t, "class") || strstr(t, "method") ||
                   strstr(t, "impl_item") || strstr(t, "struct_specifier");
      if (!scope || strstr(t, "call") || ts_node_start_byte(n) >= a) continue;
      /* A class and its body start on the same line: one header. */
      if (ns > 0 && ts_node_start_point(scopes[ns - 1]).row == ts_node_start_point(n).row)
        scopes[ns - 1] = n;
      else
        scopes[ns++] = n;
    }
    free(up);
    /* Deep nesting (closures in closures) would spend the budget on
     * headers: the outermost and the SCOPES - 1 innermost are kept, each
     * at most SCOPE_LINE_BYTES long. */
    for (int k = ns - 1; k >= 0; k--) {
      if (k != ns - 1 && k >= SCOPES - 1) continue;
      uint32_t x = ts_node_start_byte(scopes[k]), y = x;
      while (x > 0 && text[x - 1] != '\n') x--; /* keep the indentation */
      while (y < len && text[y] != '\n') y++;
      y = x + (uint32_t)rv_utf8_cut(text + x, y - x, SCOPE_LINE_BYTES);
      uint32_t row = ts_node_start_point(scopes[k]).row;
      char *name = strndup(text + x, y - x);
      if (name)
        rv_push_text(out, self_path, lang, text + x, y - x, row, row, "enclosing scope", name, "",
                     0.0f);
      free(name);
    }
  }
  size_t n_scopes = out->n_snippets;

  /* The read lock is held from here to the end: updates parse outside it
   * and only wait for the swap. */
  pthread_rwlock_t *lock = ws ? (pthread_rwlock_t *)&ws->lock : NULL; /* readers do not change ws */
  if (lock) pthread_rwlock_rdlock(lock);
  if (ws && !in->index_pending) {
    /* (stats.partial is computed on demand; the same test here) */
    out->partial_index = ws->stats.skipped_limit > 0 || ws->n_chunks >= ws->max_chunks;
  }
  if (in->index_pending) out->partial_index = true;

  /* The current file's definitions and imports: the index's entry when it
   * was built from this very text, else from the tree. */
  ws_file self_own = {0};
  const ws_file *self = &self_own;
  self_own.lang = lang;
  if (ws && path) {
    const ws_map_entry *e = ws_map_get(&ws->by_path, path);
    uint32_t id = e && e->n ? (uint32_t)(e->vals[0] >> 32) : UINT32_MAX;
    const ws_file *f = id < ws->n_slots ? ws->files[id] : NULL;
    if (f && f->size == len && f->hash == sc_hash64(text, len, 0)) self = f;
  }
  if (self == &self_own && tree) ws_index_tree(&self_own, tree, text, len);

  retrieval r = {.ws = ws,
                 .tok = tok,
                 .self = self,
                 .self_path = self_path,
                 .lang = lang,
                 .text = text,
                 .len = len,
                 .win_first = (uint32_t)win_first,
                 .win_last = (uint32_t)win_last};
  uint32_t *imp = ws ? malloc(MAX_IMPORTED * sizeof *imp) : NULL;
  if (imp && path) r.n_imported = rv_resolve_imports(ws, path, lang, self, imp, MAX_IMPORTED);
  r.imported = imp;

  /* The members of the type at the cursor take three quarters of what the
   * enclosing scopes leave of the snippet budget, at most
   * CURSOR_TYPE_TOKENS: the listing must fit, or nothing after it would be
   * taken. More budget gives the listing as much room or more (the same
   * members or more) and what follows it more too (it is charged its room,
   * see below), so that it never drops a definition that less took. */
  size_t scope_tokens = 0;
  for (size_t i = 0; i < n_scopes; i++)
    scope_tokens += rv_count_tokens(tok, out->snippets[i].text, out->snippets[i].len);
  size_t wide_tokens = snippet_budget > scope_tokens ? (snippet_budget - scope_tokens) * 3 / 4 : 0;
  if (wide_tokens > CURSOR_TYPE_TOKENS) wide_tokens = CURSOR_TYPE_TOKENS;
  /* Phase 1: the definitions of the names around the cursor, compact
   * (retrieve_defs.c). */
  rv_cand cands[MAX_CANDS];
  size_t n_cands = 0;
  defref def_of[MAX_DEF_ITEMS];
  bool at_cursor[MAX_DEF_ITEMS];
  size_t reserve[MAX_DEF_ITEMS]; /* charged at least this (the type at the cursor) */
  rv_defs_offer(&r, tree, cursor, wide_tokens, cands, &n_cands, def_of, at_cursor, reserve, out);
  /* A large definition not from the cursor's line (a struct listed because
   * its name is used nearby) waits until the smaller ones are taken: phase 1
   * stops at the first that does not fit, and a large one would end it with
   * much of the budget unspent. The order depends on costs only, never on
   * the budget, so that more budget still never drops a definition. */
  {
    size_t n_big = 0, w = n_scopes;
    sc_context_snippet big[MAX_DEF_ITEMS];
    defref big_def[MAX_DEF_ITEMS];
    size_t big_reserve[MAX_DEF_ITEMS];
    for (size_t i = n_scopes; i < out->n_snippets; i++) {
      sc_context_snippet s = out->snippets[i];
      defref dd = def_of[i - n_scopes];
      size_t rs = reserve[i - n_scopes];
      bool late = !at_cursor[i - n_scopes] && rv_count_tokens(tok, s.text, s.len) > LATE_TOKENS;
      if (late) {
        big[n_big] = s;
        big_reserve[n_big] = rs;
        big_def[n_big++] = dd;
      } else {
        out->snippets[w] = s;
        def_of[w - n_scopes] = dd;
        reserve[w - n_scopes] = rs;
        w++;
      }
    }
    for (size_t i = 0; i < n_big; i++, w++) {
      out->snippets[w] = big[i];
      def_of[w - n_scopes] = big_def[i];
      reserve[w - n_scopes] = big_reserve[i];
    }
  }
  /* Costs, thresholds, and what the snippet budget takes. */
  size_t n1 = out->n_snippets;
  size_t spent = 0, kept = 0;
  bool full = false;
  defref kept_defs[MAX_DEF_ITEMS];
  size_t n_kept_defs = 0;
  for (size_t i = 0; i < n1; i++) {
    sc_context_snippet *s = &out->snippets[i];
    /* Definitions from a file already shown go under its path line: they
     * are grouped below, so the header is not repeated. */
    bool grouped = false;
    for (size_t j = n_scopes; i >= n_scopes && j < kept && !grouped; j++)
      grouped = strcmp(out->snippets[j].path, s->path) == 0;
    if (!full && grouped) {
      char *nl = strchr(s->text, '\n');
      if (nl && nl[1]) {
        size_t hl = (size_t)(nl + 1 - s->text);
        memmove(s->text, nl + 1, s->len - hl + 1);
        s->len -= hl;
      }
    }
    if (!full) s->tokens = rv_count_tokens(tok, s->text, s->len);
    /* The type at the cursor is charged the room it was given (or all it
     * would take, when less): so what follows it gets a share that only
     * grows with the budget, not what a member more or less leaves. */
    size_t charge = i >= n_scopes && reserve[i - n_scopes] > s->tokens ? reserve[i - n_scopes]
                                                                      : s->tokens;
    full = full || spent + charge > snippet_budget; /* the first that does not fit ends it */
    if (full) {
      rv_snippet_free(s);
      continue;
    }
    spent += charge;
    if (i >= n_scopes) kept_defs[n_kept_defs++] = def_of[i - n_scopes];
    out->snippets[kept++] = *s;
  }
  out->n_snippets = kept;
  /* Group the definitions by file, files in order of their first one. */
  for (size_t i = n_scopes + 1; i < kept; i++) {
    size_t g = i; /* where snippet i goes: after the last earlier one of its file */
    for (size_t j = i; j > n_scopes; j--)
      if (strcmp(out->snippets[j - 1].path, out->snippets[i].path) == 0) {
        g = j;
        break;
      }
    if (g == i) continue;
    sc_context_snippet tmp = out->snippets[i];
    defref td = kept_defs[i - n_scopes];
    memmove(&out->snippets[g + 1], &out->snippets[g], (i - g) * sizeof tmp);
    memmove(&kept_defs[g + 1 - n_scopes], &kept_defs[g - n_scopes], (i - g) * sizeof td);
    out->snippets[g] = tmp;
    kept_defs[g - n_scopes] = td;
  }
  spend sp = {tok, snippet_budget > spent ? snippet_budget - spent : 0, kept};

  /* Phase 2: recent edits, neighbouring chunks, bodies, similar workspace
   * chunks (retrieve_fill.c). */
  rv_fill(&r, path, cursor, in, &self_lines, kept_defs, n_kept_defs, n_scopes, &sp, out);
  free(self_lines.starts);
  if (lock) pthread_rwlock_unlock(lock);
  free(imp);
  rv_cands_free(cands, n_cands);
  ws_file_clear(&self_own);
  sc_syntax_tree_free(own_tree);
  out->snippet_tokens = snippet_budget - sp.left;
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
  for (size_t i = 0; i < p->n_snippets; i++) rv_snippet_free(&p->snippets[i]);
  free(p->snippets);
  free(p->prefix);
  free(p->suffix);
  memset(p, 0, sizeof *p);
}

size_t sc_prompt_suffix_fit(const sc_tokenizer *tok, const char *before, size_t before_len,
                            const char *suf, size_t len, size_t budget) {
  size_t n_before = rv_count_tokens(tok, before, before_len);
  size_t room = n_before < budget ? budget - n_before : 0;
  if (rv_count_tokens(tok, suf, len) <= room) return len;
  /* Line ends, then a binary search for the last that fits. */
  size_t lo = 0, hi = 0; /* in line ends: lo fits (0: the first line, always) */
  size_t ends_cap = 64, n_ends = 0, *ends = malloc(ends_cap * sizeof *ends);
  if (!ends) return len;
  for (size_t i = 0; i < len; i++) {
    if (suf[i] != '\n') continue;
    if (n_ends == ends_cap) {
      size_t *g = realloc(ends, 2 * ends_cap * sizeof *ends);
      if (!g) break;
      ends = g;
      ends_cap *= 2;
    }
    ends[n_ends++] = i + 1;
  }
  if (n_ends == 0) {
    free(ends);
    return len;
  }
  hi = n_ends - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (rv_count_tokens(tok, suf, ends[mid]) <= room) lo = mid;
    else hi = mid - 1;
  }
  size_t end = ends[lo];
  free(ends);
  return end;
}


/* retrieve.c — prompt assembly: the windows around the cursor and the
 * snippets retrieved for them.
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
#include "retrieve_impl.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
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
#define MAX_CANDS 96          /* names looked up */
#define MAX_DEF_ITEMS 48      /* definitions offered */
#define MAX_IMPORTED 512      /* files an import resolves to */
#define AMBIGUOUS 6           /* more definitions than this, none preferred: skip the name */
#define MEMBER_LINES 16       /* member lines in a container's compact form ... */
#define CONTAINER_TOKENS 128  /* ... and tokens, with its head and closing line */
#define CURSOR_MEMBER_LINES 48 /* the type of the member access at the cursor, its member */
#define CURSOR_TYPE_TOKENS 192 /* not typed yet: more of its members */
#define BODY_MAX_LINES 40     /* a definition given whole: at most this many lines */
#define LATE_TOKENS 64        /* a definition costing more goes after the smaller ones */
#define SCOPES 3              /* enclosing scopes' headers: the outermost and the innermost */
#define SCOPE_LINE_BYTES 120  /* a header line, at most */
#define GUESSES 3             /* names predicted by the words around the cursor ... */
#define GUESS_MIN 3.0f        /* ... scoring at least this */
#define GUESS_MISSED 0.25f    /* a name's words not around the cursor: each lowers its score */
#define GUESS_POOL 8192       /* definitions scored for them, at most */
#define GUESS_LINE_BYTES 100  /* a guess is shown by its first line, at most this long ... */
#define GUESS_TOKENS 40       /* ... and costing at most this */
#define GUESS_FIT 0.5f        /* a guess fitting the slot scores this much more (less: not) */
#define MEMBER_WORDS_MIN 2.0f /* a member sharing this much with the words around the cursor ... */

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

static size_t count_tokens(const sc_tokenizer *tok, const char *s, size_t n) {
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
static size_t utf8_cut(const char *s, size_t n, size_t max) {
  if (n <= max) return n;
  while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
  return max;
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

/* Appends a snippet: body[0, n) headed by "<comment> path:line". */
static sc_context_snippet *push_text(sc_prompt *out, const char *path, const char *lang,
                                     const char *body, size_t n, uint32_t start_line,
                                     uint32_t end_line, const char *reason, const char *name,
                                     const char *kind, float score) {
  if (n == 0) return NULL;
  const char *cp = comment_prefix(lang);
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

static void snippet_free(sc_context_snippet *s) {
  free(s->path);
  free(s->name);
  free(s->text);
}

/* Whether lines [s, e] of path overlap a snippet already taken (from
 * index first on). */
static bool overlaps(const sc_prompt *out, size_t first, const char *path, uint32_t s,
                     uint32_t e) {
  for (size_t i = first; i < out->n_snippets; i++) {
    const sc_context_snippet *x = &out->snippets[i];
    if (strcmp(x->path, path) == 0 && x->start_line <= e && s <= x->end_line) return true;
  }
  return false;
}

/* Whether a snippet's text (past its header line) is already in a window. */
static bool repeats_window(const sc_prompt *out, const sc_context_snippet *s) {
  const char *body = strchr(s->text, '\n');
  body = body && body[1] ? body + 1 : s->text;
  return *body && (strstr(out->prefix, body) || strstr(out->suffix, body));
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

/* Phase 2 spends what phase 1 left. */
typedef struct spend {
  const sc_tokenizer *tok;
  size_t left;
  size_t first; /* snippets from here on were added in phase 2 */
} spend;

/* Keeps the snippet just pushed when it fits what is left and repeats no
 * window; else drops it. */
static bool afford(sc_prompt *out, spend *sp) {
  sc_context_snippet *s = &out->snippets[out->n_snippets - 1];
  s->tokens = count_tokens(sp->tok, s->text, s->len);
  if (s->tokens > sp->left || repeats_window(out, s)) {
    snippet_free(s);
    out->n_snippets--;
    return false;
  }
  sp->left -= s->tokens;
  return true;
}

/* Takes the best candidates (by score) that overlap nothing taken and fit,
 * as "similar chunk" snippets; returns how many. */
static size_t take_chunks(sc_prompt *out, spend *sp, cand *cs, size_t n, const src_doc *docs,
                          size_t want) {
  if (n > 1) qsort(cs, n, sizeof *cs, cmp_cand);
  size_t taken = 0;
  for (size_t i = 0; i < n && taken < want; i++) {
    const src_doc *d = &docs[cs[i].src];
    if (overlaps(out, sp->first, d->path, cs[i].start_line, cs[i].end_line)) continue;
    lines L;
    if (!lines_build(d->text, d->len, &L)) continue;
    size_t a = line_start(&L, cs[i].start_line), b = line_start(&L, cs[i].end_line + 1);
    free(L.starts);
    if (push_text(out, d->path, d->lang, d->text + a, b - a, cs[i].start_line, cs[i].end_line,
                  "similar chunk", "", "", cs[i].score) &&
        afford(out, sp))
      taken++;
  }
  return taken;
}

static int cmp_edit_recent(const void *a, const void *b) {
  double x = (*(const sc_edited_range *const *)a)->when_ms;
  double y = (*(const sc_edited_range *const *)b)->when_ms;
  return x > y ? -1 : x < y;
}

/* ---- definitions ----------------------------------------------------------------- */

/* A definition: in the file being edited (fid SELF) or in the workspace. */
#define SELF UINT32_MAX

typedef struct defref {
  uint32_t fid, k;
} defref;

typedef struct retrieval {
  const sc_workspace *ws;
  const sc_tokenizer *tok;
  const ws_file *self; /* the current file's definitions (from its text now) */
  const char *self_path, *lang, *text;
  size_t len;
  uint32_t win_first, win_last; /* the windows' lines */
  const uint32_t *imported;
  size_t n_imported;
  const rv_cand *cands;
  size_t n_cands;
  const rv_bag *bag;       /* the words around the cursor */
  const rv_expect *expect; /* what the member at the cursor must give */
  defref chosen[MAX_DEF_ITEMS * 2];
  size_t n_chosen;
} retrieval;

static const ws_file *file_of(const retrieval *r, uint32_t fid) {
  if (fid == SELF) return r->self;
  return r->ws && fid < r->ws->n_slots ? r->ws->files[fid] : NULL;
}

static const char *def_name(const ws_file *f, const ws_def *d) { return ws_str(f, d->name); }

static bool is_type(const ws_def *d) {
  return d->kind == WK_CLASS || d->kind == WK_TYPE || d->kind == WK_INTERFACE;
}

static bool was_chosen(const retrieval *r, uint32_t fid, uint32_t k) {
  for (size_t i = 0; i < r->n_chosen; i++)
    if (r->chosen[i].fid == fid && r->chosen[i].k == k) return true;
  return false;
}

static void choose(retrieval *r, uint32_t fid, uint32_t k) {
  if (r->n_chosen < sizeof r->chosen / sizeof r->chosen[0]) r->chosen[r->n_chosen++] = (defref){fid, k};
}

static bool imported(const retrieval *r, uint32_t fid) {
  for (size_t i = 0; i < r->n_imported; i++)
    if (r->imported[i] == fid) return true;
  return false;
}

static size_t dir_len(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? (size_t)(s - p) : 0;
}

static bool is_header(const char *p) {
  const char *dot = strrchr(p, '.');
  return dot && (strcmp(dot, ".h") == 0 || strcmp(dot, ".hpp") == 0 || strcmp(dot, ".hh") == 0);
}

/* How much a workspace definition is preferred for the file being edited:
 * in a file it imports, in its folder, a header's declaration; then the
 * nearer the path, the better. */
static int rank(const retrieval *r, uint32_t fid, const ws_def *d) {
  const ws_file *f = file_of(r, fid);
  int s = 0;
  if (imported(r, fid)) s += 16;
  size_t dl = dir_len(r->self_path);
  if (dir_len(f->path) == dl && strncmp(f->path, r->self_path, dl) == 0) s += 8;
  if (is_header(f->path)) s += 4;
  if (d->flags & WD_DECL) s += 1;
  /* Shared leading path components. */
  int shared = 0;
  for (size_t i = 0; f->path[i] && f->path[i] == r->self_path[i]; i++)
    if (f->path[i] == '/') shared++;
  return s * 16 + (shared < 15 ? shared : 15);
}

typedef bool (*def_filter)(const ws_file *f, const ws_def *d, const void *arg);

/* The preferred definition named name (or, with by_scope, a member of
 * that container) among the workspace's, or false. Ambiguous names (more
 * than AMBIGUOUS definitions, none in an imported file or the folder)
 * give nothing. */
static bool pick_workspace(const retrieval *r, const ws_map *map, const char *key,
                           def_filter ok, const void *arg, defref *out) {
  if (!r->ws) return false;
  const ws_map_entry *e = ws_map_get(map, key);
  int best = -1;
  size_t n_ok = 0;
  /* A name defined hundreds of times is looked at in its first 256. */
  for (uint32_t v = 0; e && v < e->n && v < 256; v++) {
    uint32_t fid = (uint32_t)(e->vals[v] >> 32), k = (uint32_t)e->vals[v];
    const ws_file *f = fid < r->ws->n_slots ? r->ws->files[fid] : NULL;
    if (!f || k >= f->n_defs || strcmp(f->path, r->self_path) == 0) continue;
    const ws_def *d = &f->defs[k];
    if (!ok(f, d, arg)) continue;
    n_ok++;
    int s = rank(r, fid, d);
    if (s > best) {
      best = s;
      *out = (defref){fid, k};
    }
  }
  if (best < 0) return false;
  return n_ok <= AMBIGUOUS || best >= 8 * 16;
}

typedef struct name_kind {
  const char *name;
  int want; /* 0: any; 1: not a member; 2: a type; 3: a member of scope */
  const char *scope;
} name_kind;

static bool filter(const ws_file *f, const ws_def *d, const void *arg) {
  const name_kind *nk = arg;
  if (nk->name && strcmp(def_name(f, d), nk->name) != 0) return false;
  if (nk->want == 1) return d->kind != WK_FIELD && d->kind != WK_METHOD; /* enum constants are bare */
  if (nk->want == 2) return is_type(d);
  if (nk->want == 3) {
    const char *sc = ws_str(f, d->scope);
    return sc && strcmp(sc, nk->scope) == 0;
  }
  return true;
}

/* A definition of the current file (PICKED), not when the windows show its
 * head or it encloses the cursor (its header is an "enclosing scope"):
 * SHOWN then, and the name is not looked for elsewhere (it means this
 * one; another file's namesake would be a wrong definition, and one that
 * comes and goes as the windows grow with the budget). */
enum { NOT_HERE = 0, PICKED = 1, SHOWN = -1 };
static int pick_self(const retrieval *r, const name_kind *nk, size_t cursor, defref *out) {
  const ws_file *f = r->self;
  for (size_t k = 0; f && k < f->n_defs; k++) {
    const ws_def *d = &f->defs[k];
    if (!filter(f, d, nk)) continue;
    uint32_t head_last = d->start_line + (d->head_lines ? d->head_lines - 1 : 0);
    bool visible = d->start_line >= r->win_first && head_last <= r->win_last;
    bool encloses = d->start_byte <= cursor && cursor < d->end_byte;
    if (visible || encloses) return SHOWN; /* in the prompt already */
    *out = (defref){SELF, (uint32_t)k};
    return PICKED;
  }
  return NOT_HERE;
}

/* The bases a type names in its head ("class A(B):", "interface A extends
 * B", "type A = Required<B> & C"), into out (owned); how many. */
static size_t bases_of(const retrieval *r, const char *type, char **out, size_t max) {
  name_kind nk = {type, 2, NULL};
  const ws_file *f = NULL;
  const ws_def *d = NULL;
  for (size_t k = 0; r->self && k < r->self->n_defs && !d; k++)
    if (filter(r->self, &r->self->defs[k], &nk)) f = r->self, d = &r->self->defs[k];
  defref w;
  if (!d && r->ws && pick_workspace(r, &r->ws->by_name, type, filter, &nk, &w)) {
    f = file_of(r, w.fid);
    d = &f->defs[w.k];
  }
  const char *h = d ? ws_str(f, d->head) : NULL;
  if (!h) return 0;
  const char *at = strstr(h, type);
  if (!at) return 0;
  at += strlen(type);
  const char *nl = strchr(at, '\n');
  return rv_type_names(at, nl && d->flags & WD_CONTAINER ? (size_t)(nl - at) : strlen(at), out,
                       max);
}

/* A member named name of type, or of its bases (three levels up). For a
 * snippet (cursor != SIZE_MAX) a member the windows show does not count. */
static bool find_member(const retrieval *r, const char *type, const char *name, size_t cursor,
                        int depth, defref *out) {
  name_kind nk = {name, 3, type};
  if (cursor != SIZE_MAX) {
    int here = pick_self(r, &nk, cursor, out);
    if (here != NOT_HERE) return here == PICKED;
  } else {
    for (size_t k = 0; r->self && k < r->self->n_defs; k++)
      if (filter(r->self, &r->self->defs[k], &nk)) {
        *out = (defref){SELF, (uint32_t)k};
        return true;
      }
    /* A type's member, to follow a chain: the file as the index last read
     * it also says, when the text now does not (a line being typed can
     * break the parse of the rest of its class). */
    const ws_map_entry *e = r->ws ? ws_map_get(&r->ws->by_path, r->self_path) : NULL;
    uint32_t id = e && e->n ? (uint32_t)(e->vals[0] >> 32) : UINT32_MAX;
    const ws_file *g = r->ws && id < r->ws->n_slots ? r->ws->files[id] : NULL;
    for (size_t k = 0; g && g != r->self && k < g->n_defs; k++)
      if (filter(g, &g->defs[k], &nk)) {
        *out = (defref){id, (uint32_t)k};
        return true;
      }
  }
  if (r->ws && pick_workspace(r, &r->ws->by_scope, type, filter, &nk, out)) return true;
  if (depth >= 3) return false;
  char *bases[4];
  size_t nb = bases_of(r, type, bases, 4);
  bool found = false;
  for (size_t i = 0; i < nb; i++) {
    if (!found && strcmp(bases[i], type) != 0)
      found = find_member(r, bases[i], name, cursor, depth + 1, out);
    free(bases[i]);
  }
  return found;
}

/* The definition a name stands for, or false. */
static bool resolve_cand(const retrieval *r, const rv_cand *c, size_t cursor, defref *out) {
  const sc_workspace *ws = r->ws;
  if (c->type_only) {
    name_kind nk = {c->name, 2, NULL};
    int here = pick_self(r, &nk, cursor, out);
    if (here != NOT_HERE) return here == PICKED;
    return ws && pick_workspace(r, &ws->by_name, c->name, filter, &nk, out);
  }
  if (c->recv_type && find_member(r, c->recv_type, c->name, cursor, 0, out)) return true;
  name_kind nk = {c->name, c->member ? 0 : 1, NULL};
  int here = pick_self(r, &nk, cursor, out);
  if (here != NOT_HERE) return here == PICKED;
  return ws && pick_workspace(r, &ws->by_name, c->name, filter, &nk, out);
}

/* How near the cursor a name of the same family is used: one sharing at
 * least 5 leading bytes with it (GenZshCompletion beside
 * GenZshCompletionNoDesc); larger is nearer, 0 when none is. */
static uint32_t kinship(const retrieval *r, const char *name) {
  for (size_t i = 0; i < r->n_cands; i++) {
    if (r->cands[i].guess) continue;
    const char *c = r->cands[i].name;
    uint32_t k = 0;
    while (c[k] && c[k] == name[k]) k++;
    if (!c[k] && !name[k]) continue; /* the same name: "near" says it */
    /* The nearest such name decides (the candidates are nearest first),
     * then the longer start shared. */
    if (k >= 5) return (uint32_t)(r->n_cands - i) * 64 + (k < 63 ? k : 63);
  }
  return 0;
}

/* Whether name is one of the names around the cursor. */
static bool near_cursor(const retrieval *r, const char *name) {
  for (size_t i = 0; i < r->n_cands; i++)
    if (!r->cands[i].guess && strcmp(r->cands[i].name, name) == 0) return true;
  return false;
}

/* How near the cursor name is used: larger is nearer (the candidates are
 * nearest first), 0 when it is not. */
static uint32_t nearness(const retrieval *r, const char *name) {
  for (size_t i = 0; i < r->n_cands; i++)
    if (!r->cands[i].guess && strcmp(r->cands[i].name, name) == 0)
      return (uint32_t)(r->n_cands - i);
  return 0;
}

/* The position of name as a whole word in s, or NULL. */
static const char *word_in(const char *s, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = s; (p = strstr(p, name)); p++) {
    bool before = p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool after = !(isalnum((unsigned char)p[nl]) || p[nl] == '_');
    if (before && after) return p;
  }
  return NULL;
}

/* The line of head that names name (a whole word; else its first line):
 * where it starts, *len its length, *row its index in head. */
static const char *naming_line(const char *head, const char *name, size_t *len, size_t *row) {
  const char *p = head;
  for (size_t k = 0; p && *p; k++) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf - 1 ? n : sizeof buf - 1), p);
    if (word_in(buf, name)) {
      *len = n;
      *row = k;
      return p;
    }
    p = e ? e + 1 : NULL;
  }
  const char *e = strchr(head, '\n');
  *len = e ? (size_t)(e - head) : strlen(head);
  *row = 0;
  return head;
}

/* Whether member d (its head, its name) gives what the code before the
 * cursor expects (rv_expect): 1 exactly, -1 it cannot, 0 not known. */
static int fits(const rv_expect *x, const ws_file *g, const ws_def *d, const char *head,
                const char *name) {
  if (!x || !x->known || !head || !g->lang) return 0;
  bool go = strcmp(g->lang, "go") == 0; /* Go's types are checked: a mismatch rules out */
  const char *at = word_in(head, name);
  if (!at) return 0;
  char res[128];
  int n = rv_member_results(head, strlen(head), (size_t)(at - head), strlen(name), g->lang, res,
                            sizeof res);
  bool field = d->kind == WK_FIELD || d->kind == WK_VARIABLE;
  if (x->stmt) return field || n < 0 ? 0 : n == 0 ? 1 : go ? -1 : 0;
  if (n < 0) return 0;
  bool c = strcmp(g->lang, "c") == 0 || strcmp(g->lang, "cpp") == 0;
  if (x->want_bool) {
    bool is_bool = n == 1 && (strcmp(res, "bool") == 0 || strcmp(res, "boolean") == 0 ||
                              (c && strcmp(res, "int") == 0));
    return is_bool ? 1 : go || n == 0 ? -1 : 0;
  }
  if (x->want_seq) {
    bool seq = n == 1 && (strncmp(res, "[]", 2) == 0 || strncmp(res, "map[", 4) == 0 ||
                          strstr(res, "list[") == res || strstr(res, "dict[") == res ||
                          strstr(res, "Sequence[") || strstr(res, "Iterable[") ||
                          strstr(res, "Iterator[") || strstr(res, "[]") ||
                          strncmp(res, "Array<", 6) == 0);
    return seq ? 1 : go || n == 0 ? -1 : 0;
  }
  if (x->results > 0) {
    if (n != x->results) return go || n == 0 || x->results > 1 ? -1 : 0;
    if (x->results > 1) return 1;
    return x->ret[0] && strcmp(res, x->ret) == 0 ? 1 : 0; /* C: "T x = " */
  }
  if (x->ret[0]) {
    int want = 1;
    for (const char *p = x->ret; *p; p++) want += *p == ',';
    if (go && n != want) return -1;
    return strcmp(res, x->ret) == 0 ? 1 : 0;
  }
  return 0;
}

/* ---- names the words around the cursor predict ------------------------------------ */

/* Scores names against the bag: the words a name shares with it, each
 * weighted by the bag and by its rarity among the names scored together
 * (log(N / df): "jv" in every jq function says nothing, "keys" says much);
 * the words it does not share lower it a little (of two names with the
 * word, the one that is mostly it). Two passes: add every name, then score. */
#define BAG_SLOTS 512
typedef struct scorer {
  const rv_bag *bag;
  int16_t slot[BAG_SLOTS]; /* word hash -> bag index, -1 empty */
  uint32_t df[RV_BAG];
  uint32_t n; /* names added */
} scorer;

static void scorer_init(scorer *s, const rv_bag *bag) {
  s->bag = bag;
  s->n = 0;
  memset(s->df, 0, sizeof s->df);
  for (size_t i = 0; i < BAG_SLOTS; i++) s->slot[i] = -1;
  for (size_t i = 0; bag && i < bag->n; i++) {
    size_t h = (size_t)bag->word[i] & (BAG_SLOTS - 1);
    while (s->slot[h] >= 0) h = (h + 1) & (BAG_SLOTS - 1);
    s->slot[h] = (int16_t)i;
  }
}

static int bag_index(const scorer *s, uint64_t w) {
  for (size_t h = (size_t)w & (BAG_SLOTS - 1);; h = (h + 1) & (BAG_SLOTS - 1)) {
    if (s->slot[h] < 0) return -1;
    if (s->bag->word[s->slot[h]] == w) return s->slot[h];
  }
}

static void scorer_add(scorer *s, const char *name) {
  if (!s->bag || !s->bag->n) return;
  uint64_t ws[8];
  size_t k = rv_words(name, strlen(name), ws, 8);
  for (size_t i = 0; i < k; i++) {
    int b = bag_index(s, ws[i]);
    if (b >= 0) s->df[b]++;
  }
  s->n++;
}

static float scorer_score(const scorer *s, const char *name, float min_weight) {
  if (!s->bag || !s->bag->n || !s->n) return 0.0f;
  uint64_t ws[8];
  size_t k = rv_words(name, strlen(name), ws, 8), missed = 0;
  float sc = 0.0f;
  for (size_t i = 0; i < k; i++) {
    int b = bag_index(s, ws[i]);
    if (b < 0 || !s->df[b] || s->bag->weight[b] < min_weight) {
      missed++;
      continue;
    }
    float v = s->bag->weight[b] * logf((float)(s->n + 1) / (float)s->df[b]);
    sc += v;
  }
  return sc / (1.0f + GUESS_MISSED * (float)missed);
}

/* A definition that can stand for a name on its own (not a member). */
static bool guessable(const ws_def *d) {
  if (d->parent != UINT16_MAX && d->kind != WK_CONSTANT) return false;
  return d->kind == WK_FUNCTION || d->kind == WK_CLASS || d->kind == WK_TYPE ||
         d->kind == WK_INTERFACE || d->kind == WK_MACRO || d->kind == WK_CONSTANT ||
         d->kind == WK_VARIABLE;
}

typedef struct guess {
  const char *name;
  const char *head; /* its definition's compact form */
  float score;
} guess;

static int cmp_guess(const void *a, const void *b) {
  const guess *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Up to max names, not written around the cursor, that the words around it
 * predict (the best first), among the definitions of the file itself (not
 * those that enclose the cursor) and of the files it imports; into out
 * (borrowed from the index). want_type: types only. */
static size_t guess_names(const retrieval *r, const rv_scan *scan, size_t cursor,
                          const char **out, size_t max) {
  const rv_bag *bag = scan->bag;
  bool want_type = scan->want_type;
  if (!bag || !bag->n) return 0;
  scorer sc;
  scorer_init(&sc, bag);
  guess *g = malloc(GUESS_POOL * sizeof *g);
  if (!g) return 0;
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i <= r->n_imported && n < GUESS_POOL; i++) {
      const ws_file *f = i == r->n_imported ? r->self : file_of(r, r->imported[i]);
      for (size_t k = 0; f && k < f->n_defs && n < GUESS_POOL; k++) {
        const ws_def *d = &f->defs[k];
        if (!guessable(d)) continue;
        /* Not what encloses the cursor. What the windows show is left to
         * the lookup (resolve_cand): the choice must not depend on the
         * windows, which grow with the budget. */
        if (f == r->self && d->start_byte <= cursor && cursor < d->end_byte) continue;
        const char *nm = def_name(f, d);
        if (!nm) continue;
        if (pass == 0) {
          scorer_add(&sc, nm);
          continue;
        }
        /* Types only where a type goes; a word's rarity was still counted
         * among all names (pass 0): counted among a few types alone, their
         * words are all common and none is guessed (`raise ` in a module
         * importing two error classes). */
        if (want_type && !is_type(d)) continue;
        /* Nor the enclosing function's name: its words are in the bag. */
        if (scan->fn_len && strlen(nm) == scan->fn_len &&
            memcmp(nm, r->text + scan->fn_at, scan->fn_len) == 0)
          continue;
        float s = scorer_score(&sc, nm, 0.0f);
        /* What fits the slot at the cursor (a statement, a condition, the
         * function's result, a declared variable) is likelier; in Go what
         * cannot fit is not guessed. */
        if (s >= GUESS_MIN / 2 && d->kind == WK_FUNCTION) {
          int fit = fits(r->expect, f, d, ws_str(f, d->head), nm);
          if (fit < 0 && f->lang && strcmp(f->lang, "go") == 0) continue;
          s *= 1.0f + GUESS_FIT * (float)fit;
        }
        if (s >= GUESS_MIN && !near_cursor(r, nm)) g[n++] = (guess){nm, ws_str(f, d->head), s};
      }
    }
  qsort(g, n, sizeof *g, cmp_guess);
  size_t k = 0;
  for (size_t i = 0; i < n && k < max; i++) {
    bool dup = false;
    for (size_t j = 0; j < k && !dup; j++) dup = strcmp(out[j], g[i].name) == 0;
    if (dup || !g[i].head) continue;
    /* A guess shown costs its line: one that costs much (a macro's body)
     * is not worth a guess. */
    size_t hl, row;
    const char *line = naming_line(g[i].head, g[i].name, &hl, &row);
    if (count_tokens(r->tok, line, utf8_cut(line, hl, GUESS_LINE_BYTES)) > GUESS_TOKENS) continue;
    out[k++] = g[i].name;
  }
  free(g);
  return k;
}

typedef struct sbuf {
  char *p;
  size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->n + n + 2 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 512;
    while (cap < b->n + n + 2) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) return;
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_line(sbuf *b, const char *s) {
  sb_put(b, s, strlen(s));
  sb_put(b, "\n", 1);
}

/* The first line of a head. */
static void sb_first_line(sbuf *b, const char *s) {
  const char *nl = strchr(s, '\n');
  sb_put(b, s, nl ? (size_t)(nl - s) : strlen(s));
  sb_put(b, "\n", 1);
}

/* A member's line in its container's listing: from its head, the line
 * holding its name (not a decorator above it) with the signature's
 * continuation lines joined on (whitespace collapsed), at most
 * MEMBER_LINE_BYTES; the indentation kept. Into out (cap bytes). */
#define MEMBER_LINE_BYTES 120
static size_t member_line(const char *head, const char *name, char *out, size_t cap) {
  const char *line = head;
  size_t nl = strlen(name);
  for (const char *p = head; p && *p;) {
    const char *e = strchr(p, '\n');
    size_t ll = e ? (size_t)(e - p) : strlen(p);
    for (size_t i = 0; i + nl <= ll; i++)
      if (memcmp(p + i, name, nl) == 0 && (i == 0 || !(isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_'))) {
        line = p;
        goto found;
      }
    p = e ? e + 1 : NULL;
  }
found:;
  size_t o = 0;
  const char *p = line;
  while ((*p == ' ' || *p == '\t') && o + 1 < cap) out[o++] = *p++;
  bool space = false;
  size_t limit = cap - 1 < MEMBER_LINE_BYTES ? cap - 1 : MEMBER_LINE_BYTES;
  for (; *p && o < limit; p++) {
    bool ws = *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r';
    if (ws) {
      space = o > 0;
      continue;
    }
    if (space && o + 1 < limit && out[o - 1] != '(' && *p != ')') out[o++] = ' ';
    space = false;
    out[o++] = *p;
  }
  if (*p) { /* cut short: not inside a UTF-8 character */
    size_t q = o;
    while (q > 0 && ((unsigned char)out[q - 1] & 0xC0) == 0x80) q--;
    if (q > 0 && (unsigned char)out[q - 1] >= 0xC0) {
      unsigned char lead = (unsigned char)out[q - 1];
      size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (o - (q - 1) < want) o = q - 1;
    }
  }
  out[o] = '\0';
  return o;
}

typedef struct member {
  uint32_t fid, k;
  const char *head;
  bool typed; /* starts with what is typed of the member at the cursor */
  int fits;   /* gives what the cursor's code expects: 1, cannot: -1, not known: 0 */
  float words; /* the words it shares with those around the cursor (scorer) */
  uint32_t near; /* nearness() */
  uint32_t kin;  /* the longest start it shares with a name near the cursor (>= 5) */
  uint32_t uses; /* across the workspace, as a member */
  uint32_t order;
} member;

/* Those used near the cursor, then the most used in the workspace, then
 * in source order. */
static int cmp_member_pick(const void *a, const void *b) {
  const member *x = a, *y = b;
  if (x->typed != y->typed) return x->typed ? -1 : 1;
  if (x->fits != y->fits) return x->fits > y->fits ? -1 : 1;
  bool xw = x->words >= MEMBER_WORDS_MIN, yw = y->words >= MEMBER_WORDS_MIN;
  if (xw != yw) return xw ? -1 : 1;
  if (xw && x->words != y->words) return x->words > y->words ? -1 : 1;
  if (x->near != y->near) return x->near > y->near ? -1 : 1;
  if (x->kin != y->kin) return x->kin > y->kin ? -1 : 1;
  if (x->uses != y->uses) return x->uses > y->uses ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* The container's file first, then the others by path, each in source
 * order (cmp_member_order's qsort has no context: the container's path
 * is passed through this). */
static _Thread_local const char *t_home;
static _Thread_local const retrieval *t_r;

static const char *member_path(const retrieval *r, const member *m) {
  return m->fid == SELF ? r->self_path : file_of(r, m->fid)->path;
}

static int cmp_member_order(const void *a, const void *b) {
  const member *x = a, *y = b;
  const char *px = member_path(t_r, x), *py = member_path(t_r, y);
  bool hx = strcmp(px, t_home) == 0, hy = strcmp(py, t_home) == 0;
  if (hx != hy) return hx ? -1 : 1;
  int c = strcmp(px, py);
  if (c) return c;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* A member's line; a member from another file than the one before it
 * (*last: its path) is headed by that file's path line, so that each line
 * is where it says it is (Go methods are spread over their package). */
static void sb_member(const retrieval *r, sbuf *b, const member *m, const char **last) {
  const ws_file *g = file_of(r, m->fid);
  const char *path = member_path(r, m);
  if (strcmp(path, *last) != 0) {
    const char *cp = comment_prefix(g->lang ? g->lang : r->lang);
    char pl[PATH_MAX + 32];
    int pn = snprintf(pl, sizeof pl, "%s %s:%u\n", cp ? cp : "//", path,
                      g->defs[m->k].start_line + 1);
    if (pn > 0 && (size_t)pn < sizeof pl) sb_put(b, pl, (size_t)pn);
    *last = path;
  }
  char line[MEMBER_LINE_BYTES + 64];
  size_t n = member_line(m->head, def_name(g, &g->defs[m->k]), line, sizeof line);
  sb_put(b, line, n);
  sb_put(b, "\n", 1);
}

/* Whether a member is a name code rarely writes after a dot (__init__). */
static bool dunder(const char *name) {
  size_t n = strlen(name);
  return n > 4 && name[0] == '_' && name[1] == '_' && name[n - 1] == '_' && name[n - 2] == '_';
}

/* A Go method: declared outside its type's braces. */
static bool outside(const retrieval *r, const member *m) {
  const ws_file *g = file_of(r, m->fid);
  return g->defs[m->k].parent == UINT16_MAX;
}

/* The container named type (a class, interface or struct): in the file
 * itself, else the preferred one in the workspace. */
static bool find_type(const retrieval *r, const char *type, defref *out) {
  name_kind nk = {type, 2, NULL};
  for (size_t k = 0; r->self && k < r->self->n_defs; k++)
    if (filter(r->self, &r->self->defs[k], &nk)) {
      *out = (defref){SELF, (uint32_t)k};
      return true;
    }
  return r->ws && pick_workspace(r, &r->ws->by_name, type, filter, &nk, out);
}

static bool has_member_named(const retrieval *r, const member *ms, size_t n, const char *name) {
  for (size_t j = 0; j < n; j++) {
    const ws_file *g = file_of(r, ms[j].fid);
    if (strcmp(def_name(g, &g->defs[ms[j].k]), name) == 0) return true;
  }
  return false;
}

/* Appends the members of type's bases (and theirs, depth < 2) that ms[0, n)
 * does not name yet; the new count. */
static size_t inherited(retrieval *r, const char *type, member *ms, size_t n, size_t cap,
                        int depth) {
  char *bases[4];
  size_t nb = depth < 2 ? bases_of(r, type, bases, 4) : 0;
  for (size_t b = 0; b < nb; b++) {
    defref t;
    if (strcmp(bases[b], type) != 0 && find_type(r, bases[b], &t)) {
      const ws_file *g = file_of(r, t.fid);
      const ws_def *td = &g->defs[t.k];
      for (size_t i = t.k + 1; i < g->n_defs && g->defs[i].start_byte < td->end_byte && n < cap;
           i++) {
        const ws_def *m = &g->defs[i];
        const char *mn = def_name(g, m);
        if (m->parent != t.k || was_chosen(r, t.fid, (uint32_t)i) || !ws_str(g, m->head) ||
            !mn || dunder(mn) || has_member_named(r, ms, n, mn))
          continue;
        ms[n] = (member){t.fid, (uint32_t)i, ws_str(g, m->head), false, 0, 0.0f,
                         nearness(r, mn), 0, 0, (uint32_t)n};
        n++;
      }
      n = inherited(r, bases[b], ms, n, cap, depth + 1);
    }
    free(bases[b]);
  }
  return n;
}

/* The compact form of a container: its opening lines, its members (those
 * used near the cursor first, at most MEMBER_LINES, shown in source order;
 * for Go, the methods declared on the type anywhere in its package) and
 * its closing line. Members chosen on their own are left out. */
static void container_text(retrieval *r, uint32_t fid, uint32_t k, sbuf *b, size_t max_lines,
                           size_t max_tokens, const char *typed, bool wide, size_t *full) {
  const ws_file *f = file_of(r, fid);
  const ws_def *d = &f->defs[k];
  /* A type that is no container (an alias: `type A = B & {...}`) is
   * listed here for its bases' members: its first line heads them. */
  bool container = d->flags & WD_CONTAINER;
  const char *head = ws_str(f, d->head);
  const char *hnl = container ? NULL : strchr(head, '\n');
  size_t head_len = hnl ? (size_t)(hnl - head) : strlen(head);
  sb_put(b, head, head_len);
  sb_put(b, "\n", 1);
  member ms[256];
  size_t n = 0;
  for (size_t i = k + 1; i < f->n_defs && f->defs[i].start_byte < d->end_byte && n < 256; i++) {
    const ws_def *m = &f->defs[i];
    if (m->parent != k || was_chosen(r, fid, (uint32_t)i) || !ws_str(f, m->head) ||
        dunder(def_name(f, m)))
      continue;
    bool dup = false; /* "x: int" in the class and "self.x = x" in __init__: once */
    for (size_t j = 0; j < n && !dup; j++)
      dup = strcmp(def_name(file_of(r, ms[j].fid), &file_of(r, ms[j].fid)->defs[ms[j].k]),
                   def_name(f, m)) == 0;
    if (dup) continue;
    ms[n] = (member){fid, (uint32_t)i, ws_str(f, m->head), false, 0, 0.0f,
                     nearness(r, def_name(f, m)), 0, 0, (uint32_t)n};
    n++;
  }
  const sc_workspace *ws = r->ws;
  const char *name = def_name(f, d);
  const char *fpath = fid == SELF ? r->self_path : f->path;
  /* The member about to be typed may be inherited: the bases' members too
   * (two levels up), after the type's own in source order. */
  if (wide) n = inherited(r, name, ms, n, 256, 0);
  /* Go: methods declared outside the type, in the same package (folder):
   * the current file's from its text now, the others' from the index. */
  if (f->lang && strcmp(f->lang, "go") == 0) {
    size_t dl = dir_len(fpath);
    bool same_dir = dir_len(r->self_path) == dl && strncmp(r->self_path, fpath, dl) == 0;
    for (size_t i = 0; same_dir && r->self && i < r->self->n_defs && n < 256; i++) {
      const ws_def *m = &r->self->defs[i];
      const char *sc = ws_str(r->self, m->scope);
      if (m->kind != WK_METHOD || m->parent != UINT16_MAX || !sc || strcmp(sc, name) != 0 ||
          was_chosen(r, SELF, (uint32_t)i) || !ws_str(r->self, m->head))
        continue;
      ms[n] = (member){SELF, (uint32_t)i, ws_str(r->self, m->head), false, 0, 0.0f,
                       nearness(r, def_name(r->self, m)), 0, 0, (uint32_t)n};
      n++;
    }
    const ws_map_entry *e = ws ? ws_map_get(&ws->by_scope, name) : NULL;
    for (uint32_t v = 0; e && v < e->n && n < 256; v++) {
      uint32_t mf = (uint32_t)(e->vals[v] >> 32), mk = (uint32_t)e->vals[v];
      const ws_file *g = file_of(r, mf);
      if (!g || mk >= g->n_defs || g->defs[mk].kind != WK_METHOD || g->defs[mk].parent != UINT16_MAX)
        continue;
      if (strcmp(g->path, r->self_path) == 0) continue; /* taken from the text above */
      if (dir_len(g->path) != dl || strncmp(g->path, fpath, dl) != 0) continue;
      if (was_chosen(r, mf, mk) || !ws_str(g, g->defs[mk].head)) continue;
      ms[n] = (member){mf, mk, ws_str(g, g->defs[mk].head), false, 0, 0.0f,
                       nearness(r, def_name(g, &g->defs[mk])), 0, 0, (uint32_t)n};
      n++;
    }
  }
  size_t tl = typed ? strlen(typed) : 0;
  scorer sc;
  scorer_init(&sc, wide ? r->bag : NULL);
  for (size_t m = 0; m < n; m++) {
    const ws_file *g = file_of(r, ms[m].fid);
    scorer_add(&sc, def_name(g, &g->defs[ms[m].k]));
  }
  for (size_t m = 0; m < n; m++) {
    const ws_file *g = file_of(r, ms[m].fid);
    const char *mn = def_name(g, &g->defs[ms[m].k]);
    if (ws) ms[m].uses = ws_member_uses(ws, mn);
    ms[m].typed = tl && strncmp(mn, typed, tl) == 0;
    ms[m].kin = ms[m].near ? 0 : kinship(r, mn);
    if (wide) {
      ms[m].words = scorer_score(&sc, mn, RV_W_NOTE);
      ms[m].fits = fits(r->expect, g, &g->defs[ms[m].k], ms[m].head, mn);
    }
  }
  qsort(ms, n, sizeof *ms, cmp_member_pick);
  if (n > max_lines) n = max_lines;
  /* Within CONTAINER_TOKENS: the most relevant members first. */
  size_t used = count_tokens(r->tok, head, head_len) + (ws_str(f, d->tail) ? 2 : 0) +
                12 /* the path line */;
  /* *full: what the listing would cost with no limit (up to
   * CURSOR_TYPE_TOKENS), for the caller's reservation. */
  size_t fit = 0, total = used;
  for (size_t m = 0; m < n; m++) {
    char line[MEMBER_LINE_BYTES + 64];
    const ws_file *g = file_of(r, ms[m].fid);
    size_t hl = member_line(ms[m].head, def_name(g, &g->defs[ms[m].k]), line, sizeof line);
    size_t t = count_tokens(r->tok, line, hl) + 1;
    /* A file not listed yet costs its path line. */
    const char *mp = member_path(r, &ms[m]);
    bool seen = strcmp(mp, fpath) == 0;
    for (size_t j = 0; j < m && !seen; j++) seen = strcmp(member_path(r, &ms[j]), mp) == 0;
    if (!seen) t += count_tokens(r->tok, mp, strlen(mp)) + 6;
    if (fit == m && used + t <= max_tokens) {
      used += t;
      fit = m + 1;
    }
    total += t;
    if (fit <= m && (!full || total >= CURSOR_TYPE_TOKENS)) break;
  }
  if (full) *full = total < CURSOR_TYPE_TOKENS ? total : CURSOR_TYPE_TOKENS;
  n = fit;
  t_home = fpath;
  t_r = r;
  qsort(ms, n, sizeof *ms, cmp_member_order);
  for (size_t m = 0; m < n; m++) choose(r, ms[m].fid, ms[m].k); /* listed: not again */
  bool tail_after_fields = container && ws_str(f, d->tail) != NULL;
  size_t i = 0;
  const char *last = fpath;
  for (; i < n; i++) {
    if (outside(r, &ms[i]) && tail_after_fields) break; /* Go methods go after the closing brace */
    sb_member(r, b, &ms[i], &last);
  }
  if (tail_after_fields) sb_line(b, ws_str(f, d->tail));
  for (; i < n; i++) sb_member(r, b, &ms[i], &last);
}

/* Constants, macros and variables declared together (a const block, a
 * run of #defines, an enum without a name): consecutive definitions of the
 * same kind, each within two lines of the last. The one looked up, those
 * used near the cursor and then the nearest are shown, in source order,
 * within MEMBER_LINES and max_tokens; its first and last lines go
 * to *lo_line, *hi_line. */
static bool same_run(const ws_file *f, size_t a, size_t b) {
  const ws_def *x = &f->defs[a], *y = &f->defs[b];
  return x->kind == y->kind && y->parent == UINT16_MAX && x->parent == UINT16_MAX &&
         y->start_line <= x->end_line + 2 && y->start_line >= x->start_line;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void group_text(retrieval *r, uint32_t fid, uint32_t k, sbuf *b, size_t max_tokens,
                       uint32_t *lo_line, uint32_t *hi_line) {
  const ws_file *f = file_of(r, fid);
  size_t lo = k, hi = k;
  while (lo > 0 && k - lo < 64 && same_run(f, lo - 1, lo)) lo--;
  while (hi + 1 < f->n_defs && hi - k < 64 && same_run(f, hi, hi + 1)) hi++;
  uint32_t pick[MEMBER_LINES];
  size_t n = 0;
  pick[n++] = k;
  size_t used = count_tokens(r->tok, ws_str(f, f->defs[k].head),
                             strlen(ws_str(f, f->defs[k].head))) + 12;
  /* Near the cursor first, then outward from k. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t dist = 1; dist <= hi - lo && n < MEMBER_LINES; dist++)
      for (int side = 0; side < 2 && n < MEMBER_LINES; side++) {
        size_t i = side ? k + dist : k - dist;
        if ((side && i > hi) || (!side && (dist > k || i < lo))) continue;
        const ws_def *m = &f->defs[i];
        const char *h = ws_str(f, m->head);
        if (!h || was_chosen(r, fid, (uint32_t)i)) continue;
        bool near = near_cursor(r, def_name(f, m));
        if ((pass == 0) != near) continue;
        const char *nl = strchr(h, '\n');
        size_t t = count_tokens(r->tok, h, nl ? (size_t)(nl - h) : strlen(h)) + 1;
        if (used + t > max_tokens) continue;
        used += t;
        pick[n++] = (uint32_t)i;
      }
  qsort(pick, n, sizeof *pick, cmp_u32);
  for (size_t i = 0; i < n; i++) {
    choose(r, fid, pick[i]);
    if (n == 1) sb_line(b, ws_str(f, f->defs[pick[i]].head));
    else sb_first_line(b, ws_str(f, f->defs[pick[i]].head));
  }
  *lo_line = f->defs[pick[0]].start_line;
  *hi_line = f->defs[pick[n - 1]].end_line;
}

/* ---- the field-type oracle for resolve.c ----------------------------------------- */

static char *type_from_head(const ws_file *f, const ws_def *d, const char *lang) {
  const char *h = ws_str(f, d->head), *name = def_name(f, d);
  if (!h || !name) return NULL;
  size_t hl = strlen(h), nl = strlen(name);
  for (const char *p = h; (p = strstr(p, name)); p++) {
    size_t at = (size_t)(p - h);
    bool word = (at == 0 || !(isalnum((unsigned char)h[at - 1]) || h[at - 1] == '_')) &&
                !(isalnum((unsigned char)h[at + nl]) || h[at + nl] == '_');
    if (!word) continue;
    char *t = rv_decl_type(h, hl, at, nl, lang);
    if (t) return t;
  }
  return NULL;
}

static char *field_type(void *user, const char *type, const char *field) {
  retrieval *r = user;
  defref d;
  if (type) {
    if (!find_member(r, type, field, SIZE_MAX, 0, &d)) return NULL;
    const ws_file *f = file_of(r, d.fid);
    return type_from_head(f, &f->defs[d.k], d.fid == SELF ? r->lang : f->lang);
  }
  /* A variable at file scope. */
  name_kind nk = {field, 0, NULL};
  for (size_t k = 0; r->self && k < r->self->n_defs; k++) {
    const ws_def *x = &r->self->defs[k];
    if (x->kind == WK_VARIABLE && filter(r->self, x, &nk))
      return type_from_head(r->self, x, r->lang);
  }
  if (!r->ws) return NULL;
  const ws_map_entry *e = ws_map_get(&r->ws->by_name, field);
  for (uint32_t v = 0; e && v < e->n && v < 32; v++) {
    uint32_t fid = (uint32_t)(e->vals[v] >> 32), k = (uint32_t)e->vals[v];
    const ws_file *g = fid < r->ws->n_slots ? r->ws->files[fid] : NULL;
    if (!g || k >= g->n_defs || g->defs[k].kind != WK_VARIABLE) continue;
    char *t = type_from_head(g, &g->defs[k], g->lang);
    if (t) return t;
  }
  return NULL;
}

/* What a function (type NULL) or a method of type returns, from its head. */
static char *return_type(void *user, const char *type, const char *name) {
  retrieval *r = user;
  defref d;
  if (type) {
    if (!find_member(r, type, name, SIZE_MAX, 0, &d)) return NULL;
  } else {
    name_kind nk = {name, 1, NULL};
    bool found = false;
    for (size_t k = 0; r->self && k < r->self->n_defs && !found; k++)
      if (filter(r->self, &r->self->defs[k], &nk)) d = (defref){SELF, (uint32_t)k}, found = true;
    if (!found && !(r->ws && pick_workspace(r, &r->ws->by_name, name, filter, &nk, &d)))
      return NULL;
  }
  const ws_file *f = file_of(r, d.fid);
  const ws_def *x = &f->defs[d.k];
  if (x->kind == WK_CLASS) return strdup(name); /* a constructor call */
  if (x->kind != WK_FUNCTION && x->kind != WK_METHOD) return NULL;
  const char *h = ws_str(f, x->head);
  const char *at = h ? word_in(h, name) : NULL;
  if (!at) return NULL;
  /* A class's constructor call gives the class (Python, TS `new` handled by the caller). */
  return rv_return_type(h, strlen(h), (size_t)(at - h), strlen(name),
                        d.fid == SELF ? r->lang : f->lang);
}

/* ---- the prompt ------------------------------------------------------------------- */

sc_status sc_prompt_build(const sc_workspace *ws, const char *path, const char *lang,
                          const char *text, size_t len, size_t cursor, const sc_tokenizer *tok,
                          size_t budget, sc_prompt *out, sc_error *err) {
  return sc_prompt_build_with(ws, path, lang, text, len, cursor, tok, budget, NULL, out, err);
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
  const char *cp = comment_prefix(lang);
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
  size_t tokens = count_tokens(sp->tok, t, e);
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
  out->prefix = sc_memdup(text + a, cursor - a);
  out->suffix = sc_memdup(text + cursor, b - cursor);
  out->prefix_start = a;
  out->suffix_end = b;
  SC_CHECK(out->prefix && out->suffix, err, SC_ERR_NOMEM, "prompt: out of memory");
  lines self_lines = {0};
  if (!lines_build(text, len, &self_lines)) {
    sc_prompt_free(out);
    return sc_error_set(err, SC_ERR_NOMEM, "prompt: out of memory");
  }
  size_t win_first = line_of(&self_lines, a), win_last = line_of(&self_lines, b ? b - 1 : 0);

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
      y = x + (uint32_t)utf8_cut(text + x, y - x, SCOPE_LINE_BYTES);
      uint32_t row = ts_node_start_point(scopes[k]).row;
      char *name = strndup(text + x, y - x);
      if (name) push_text(out, self_path, lang, text + x, y - x, row, row, "enclosing scope", name,
                          "", 0.0f);
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

  retrieval r = {.ws = ws, .tok = tok, .self = self, .self_path = self_path, .lang = lang, .text = text,
                 .len = len, .win_first = (uint32_t)win_first, .win_last = (uint32_t)win_last};
  uint32_t *imp = ws ? malloc(MAX_IMPORTED * sizeof *imp) : NULL;
  if (imp && path) r.n_imported = rv_resolve_imports(ws, path, lang, self, imp, MAX_IMPORTED);
  r.imported = imp;

  /* Phase 1: the definitions of the names around the cursor, compact. */
  rv_cand cands[MAX_CANDS];
  rv_bag bag = {.n = 0};
  rv_scan scan = {text, len, cursor, lang, tree, field_type, return_type, &r, 0, &bag, 0, {0}, false, 0, 0};
  size_t n_cands = rv_candidates(&scan, cands, MAX_CANDS - GUESSES);
  r.cands = cands;
  r.n_cands = n_cands;
  r.bag = &bag;
  r.expect = &scan.expect;
  /* The names the words around the cursor predict come after the cursor's
   * line (what is written there is surer) and before the lines around. */
  const char *guessed[GUESSES];
  size_t n_guess = guess_names(&r, &scan, cursor, guessed, GUESSES);
  size_t gat = scan.n_line < n_cands ? scan.n_line : n_cands, put = 0;
  for (size_t i = 0; i < n_guess; i++) {
    rv_cand c = {strdup(guessed[i]), NULL, false, false, false, false, NULL, true};
    if (!c.name) continue;
    memmove(&cands[gat + put + 1], &cands[gat + put], (n_cands - gat - put) * sizeof *cands);
    cands[gat + put++] = c;
    n_cands++;
  }
  r.n_cands = n_cands;
  defref def_of[MAX_DEF_ITEMS];
  bool at_cursor[MAX_DEF_ITEMS];
  size_t reserve[MAX_DEF_ITEMS]; /* what a definition is charged at least (the type at the cursor) */
  size_t n_defs = 0;
  /* The members of the type at the cursor take three quarters of what the
   * enclosing scopes leave of the snippet budget, at most
   * CURSOR_TYPE_TOKENS: the listing must fit, or nothing after it would be
   * taken. More budget gives the listing as much room or more (the same
   * members or more) and what follows it more too (it is charged its room,
   * see below), so that it never drops a definition that less took. */
  size_t scope_tokens = 0;
  for (size_t i = 0; i < n_scopes; i++)
    scope_tokens += count_tokens(tok, out->snippets[i].text, out->snippets[i].len);
  size_t wide_tokens = snippet_budget > scope_tokens ? (snippet_budget - scope_tokens) * 3 / 4 : 0;
  if (wide_tokens > CURSOR_TYPE_TOKENS) wide_tokens = CURSOR_TYPE_TOKENS;
  for (size_t i = 0; i < n_cands && n_defs < MAX_DEF_ITEMS; i++) {
    defref d;
    if (!resolve_cand(&r, &cands[i], cursor, &d) || was_chosen(&r, d.fid, d.k)) continue;
    const ws_file *f = file_of(&r, d.fid);
    const ws_def *def = &f->defs[d.k];
    /* An enum member comes with its enum (its siblings are the likely
     * alternatives). */
    if (def->kind == WK_CONSTANT && def->parent != UINT16_MAX && !cands[i].guess) {
      d.k = def->parent;
      def = &f->defs[d.k];
      if (was_chosen(&r, d.fid, d.k)) continue;
    }
    /* A guessed container is shown by its head line only: it does not keep
     * its listing from coming later, for a name written near the cursor. */
    const rv_cand *c = &cands[i];
    bool wide = c->type_only && c->at_cursor && !c->known; /* a member is about to be typed */
    size_t full = 0;
    bool listing = def->flags & WD_CONTAINER || (is_type(def) && wide) ||
                   (is_type(def) && f->lang && strcmp(f->lang, "go") == 0);
    if (!(cands[i].guess && listing)) choose(&r, d.fid, d.k);
    sbuf sb = {0};
    uint32_t first_line = def->start_line, last_line = def->end_line;
    if (c->guess && ws_str(f, def->head)) {
      /* A guess is worth its name, not much budget: the line of its head
       * that names it (not a decorator above; a long signature is broken
       * after its name's parenthesis). */
      size_t hl, row;
      const char *h = naming_line(ws_str(f, def->head), def_name(f, def), &hl, &row);
      sb_put(&sb, h, utf8_cut(h, hl, GUESS_LINE_BYTES));
      sb_put(&sb, "\n", 1);
      first_line += (uint32_t)row;
      last_line = first_line;
      /* A typedef'd struct is named on its closing line. */
      const char *tail = ws_str(f, def->tail), *nm = def_name(f, def);
      char first[GUESS_LINE_BYTES + 1];
      snprintf(first, sizeof first, "%.*s", (int)(hl < GUESS_LINE_BYTES ? hl : GUESS_LINE_BYTES), h);
      if (tail && nm && !word_in(first, nm) && word_in(tail, nm)) {
        sb_line(&sb, tail);
        last_line = def->end_line;
      }
    } else if (listing)
      container_text(&r, d.fid, d.k, &sb, wide ? CURSOR_MEMBER_LINES : MEMBER_LINES,
                     wide ? wide_tokens : i < gat ? CONTAINER_TOKENS : LATE_TOKENS,
                     c->typed, wide, wide ? &full : NULL);
    else if (def->kind == WK_CONSTANT || def->kind == WK_MACRO || def->kind == WK_VARIABLE)
      group_text(&r, d.fid, d.k, &sb, i < gat ? CONTAINER_TOKENS : LATE_TOKENS, &first_line,
                 &last_line);
    else if (ws_str(f, def->head))
      sb_line(&sb, ws_str(f, def->head));
    const char *reason = d.fid == SELF ? "same file" : imported(&r, d.fid) ? "imported file"
                                                                            : "workspace";
    sc_context_snippet *s =
        sb.n ? push_text(out, d.fid == SELF ? self_path : f->path, d.fid == SELF ? lang : f->lang,
                         sb.p, sb.n, first_line, last_line, reason,
                         def_name(f, def), ws_kind_name(def->kind), 0.0f)
             : NULL;
    free(sb.p);
    if (!s) continue;
    if (repeats_window(out, s)) {
      snippet_free(s);
      out->n_snippets--;
      continue;
    }
    at_cursor[n_defs] = i < gat + put; /* the member access at the cursor, its line, the guesses */
    reserve[n_defs] = full < wide_tokens ? full : wide_tokens;
    def_of[n_defs++] = d;
  }
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
      bool late = !at_cursor[i - n_scopes] && count_tokens(tok, s.text, s.len) > LATE_TOKENS;
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
    if (!full) s->tokens = count_tokens(tok, s->text, s->len);
    /* The type at the cursor is charged the room it was given (or all it
     * would take, when less): so what follows it gets a share that only
     * grows with the budget, not what a member more or less leaves. */
    size_t charge = i >= n_scopes && reserve[i - n_scopes] > s->tokens ? reserve[i - n_scopes]
                                                                      : s->tokens;
    full = full || spent + charge > snippet_budget; /* the first that does not fit ends it */
    if (full) {
      snippet_free(s);
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

  /* Phase 2. The documents searched for recent edits and similar chunks:
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
    else if (!lines_build(d->text, d->len, &L)) continue;
    uint32_t s = e->start_line, t = e->end_line < e->start_line ? e->start_line : e->end_line;
    s = s > EDIT_CONTEXT_LINES ? s - EDIT_CONTEXT_LINES : 0;
    t += EDIT_CONTEXT_LINES;
    if (t >= L.n) t = L.n ? (uint32_t)L.n - 1 : 0;
    if (t - s + 1 > EDIT_MAX_LINES) t = s + EDIT_MAX_LINES - 1;
    bool ok = s < L.n && !(is_self && s <= win_last && win_first <= t) &&
              !overlaps(out, sp.first, d->path, s, t);
    size_t x = line_start(&L, s), y = line_start(&L, (size_t)t + 1);
    if (ok && push_text(out, d->path, d->lang, d->text + x, y - x, s, t, "recent edit", "", "",
                        0.0f) &&
        afford(out, &sp))
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
    const ws_file *f = file_of(&r, kept_defs[i].fid);
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
    take_chunks(out, &sp, exact, nw, wdocs, max_similar - n_similar);
    for (size_t i = 0; i < nw; i++) free(wdocs[i].owned);
  }
  if (lock) pthread_rwlock_unlock(lock);
  free(q);
  free(buf);
  free(imp);
  rv_cands_free(cands, n_cands);
  for (size_t i = 0; src && i < n_src; i++) free(src[i].owned);
  free(src);
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
  for (size_t i = 0; i < p->n_snippets; i++) snippet_free(&p->snippets[i]);
  free(p->snippets);
  free(p->prefix);
  free(p->suffix);
  memset(p, 0, sizeof *p);
}

size_t sc_prompt_suffix_fit(const sc_tokenizer *tok, const char *before, size_t before_len,
                            const char *suf, size_t len, size_t budget) {
  size_t n_before = count_tokens(tok, before, before_len);
  size_t room = n_before < budget ? budget - n_before : 0;
  if (count_tokens(tok, suf, len) <= room) return len;
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
    if (count_tokens(tok, suf, ends[mid]) <= room) lo = mid;
    else hi = mid - 1;
  }
  size_t end = ends[lo];
  free(ends);
  return end;
}

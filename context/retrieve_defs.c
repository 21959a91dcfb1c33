/* retrieve_defs.c — phase 1 of prompt assembly (retrieve.c): the
 * definitions of the names around the cursor, looked up in the file
 * itself, the files it imports and the workspace; the names the words
 * around the cursor predict; the field-type oracle resolve.c follows
 * receivers with; and the offer, in priority order, in compact form
 * (retrieve_forms.c). What the budget takes of it is retrieve.c's. */
#define _DEFAULT_SOURCE /* strndup */
#include "prompt_impl.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- definitions ----------------------------------------------------------------- */

const ws_file *rv_file_of(const retrieval *r, uint32_t fid) {
  if (fid == SELF) return r->self;
  return r->ws && fid < r->ws->n_slots ? r->ws->files[fid] : NULL;
}

const char *rv_def_name(const ws_file *f, const ws_def *d) { return ws_str(f, d->name); }

static bool is_type(const ws_def *d) {
  return d->kind == WK_CLASS || d->kind == WK_TYPE || d->kind == WK_INTERFACE;
}

bool rv_was_chosen(const retrieval *r, uint32_t fid, uint32_t k) {
  for (size_t i = 0; i < r->n_chosen; i++)
    if (r->chosen[i].fid == fid && r->chosen[i].k == k) return true;
  return false;
}

void rv_choose(retrieval *r, uint32_t fid, uint32_t k) {
  if (r->n_chosen < sizeof r->chosen / sizeof r->chosen[0])
    r->chosen[r->n_chosen++] = (defref){fid, k};
}

static bool imported(const retrieval *r, uint32_t fid) {
  for (size_t i = 0; i < r->n_imported; i++)
    if (r->imported[i] == fid) return true;
  return false;
}

static bool is_header(const char *p) {
  const char *dot = strrchr(p, '.');
  return dot && (strcmp(dot, ".h") == 0 || strcmp(dot, ".hpp") == 0 || strcmp(dot, ".hh") == 0);
}

/* How much a workspace definition is preferred for the file being edited:
 * in a file it imports, in its folder, a header's declaration; then the
 * nearer the path, the better. */
static int rank(const retrieval *r, uint32_t fid, const ws_def *d) {
  const ws_file *f = rv_file_of(r, fid);
  int s = 0;
  if (imported(r, fid)) s += 16;
  size_t dl = rv_dir_len(r->self_path);
  if (rv_dir_len(f->path) == dl && strncmp(f->path, r->self_path, dl) == 0) s += 8;
  if (is_header(f->path)) s += 4;
  if (d->flags & WD_DECL) s += 1;
  /* Shared leading path components. */
  int shared = 0;
  for (size_t i = 0; f->path[i] && f->path[i] == r->self_path[i]; i++)
    if (f->path[i] == '/') shared++;
  return s * 16 + (shared < 15 ? shared : 15);
}


/* The preferred definition named name (or, with by_scope, a member of
 * that container) among the workspace's, or false. Ambiguous names (more
 * than AMBIGUOUS definitions, none in an imported file or the folder)
 * give nothing. */
bool rv_pick_workspace(const retrieval *r, const ws_map *map, const char *key, def_filter ok,
                       const void *arg, defref *out) {
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

bool rv_filter(const ws_file *f, const ws_def *d, const void *arg) {
  const name_kind *nk = arg;
  if (nk->name && strcmp(rv_def_name(f, d), nk->name) != 0) return false;
  if (nk->want == 1)
    return d->kind != WK_FIELD && d->kind != WK_METHOD; /* enum constants are bare */
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
    if (!rv_filter(f, d, nk)) continue;
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
size_t rv_bases_of(const retrieval *r, const char *type, char **out, size_t max) {
  name_kind nk = {type, 2, NULL};
  const ws_file *f = NULL;
  const ws_def *d = NULL;
  for (size_t k = 0; r->self && k < r->self->n_defs && !d; k++)
    if (rv_filter(r->self, &r->self->defs[k], &nk)) f = r->self, d = &r->self->defs[k];
  defref w;
  if (!d && r->ws && rv_pick_workspace(r, &r->ws->by_name, type, rv_filter, &nk, &w)) {
    f = rv_file_of(r, w.fid);
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
      if (rv_filter(r->self, &r->self->defs[k], &nk)) {
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
      if (rv_filter(g, &g->defs[k], &nk)) {
        *out = (defref){id, (uint32_t)k};
        return true;
      }
  }
  if (r->ws && rv_pick_workspace(r, &r->ws->by_scope, type, rv_filter, &nk, out)) return true;
  if (depth >= 3) return false;
  char *bases[4];
  size_t nb = rv_bases_of(r, type, bases, 4);
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
    return ws && rv_pick_workspace(r, &ws->by_name, c->name, rv_filter, &nk, out);
  }
  if (c->recv_type && find_member(r, c->recv_type, c->name, cursor, 0, out)) return true;
  name_kind nk = {c->name, c->member ? 0 : 1, NULL};
  int here = pick_self(r, &nk, cursor, out);
  if (here != NOT_HERE) return here == PICKED;
  return ws && rv_pick_workspace(r, &ws->by_name, c->name, rv_filter, &nk, out);
}

/* How near the cursor a name of the same family is used: one sharing at
 * least 5 leading bytes with it (GenZshCompletion beside
 * GenZshCompletionNoDesc); larger is nearer, 0 when none is. */
uint32_t rv_kinship(const retrieval *r, const char *name) {
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
bool rv_near_cursor(const retrieval *r, const char *name) {
  for (size_t i = 0; i < r->n_cands; i++)
    if (!r->cands[i].guess && strcmp(r->cands[i].name, name) == 0) return true;
  return false;
}

/* How near the cursor name is used: larger is nearer (the candidates are
 * nearest first), 0 when it is not. */
uint32_t rv_nearness(const retrieval *r, const char *name) {
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
int rv_fits(const rv_expect *x, const ws_file *g, const ws_def *d, const char *head,
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

void rv_scorer_init(scorer *s, const rv_bag *bag) {
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

void rv_scorer_add(scorer *s, const char *name) {
  if (!s->bag || !s->bag->n) return;
  uint64_t ws[8];
  size_t k = rv_words(name, strlen(name), ws, 8);
  for (size_t i = 0; i < k; i++) {
    int b = bag_index(s, ws[i]);
    if (b >= 0) s->df[b]++;
  }
  s->n++;
}

float rv_scorer_score(const scorer *s, const char *name, float min_weight) {
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
  rv_scorer_init(&sc, bag);
  guess *g = malloc(GUESS_POOL * sizeof *g);
  if (!g) return 0;
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i <= r->n_imported && n < GUESS_POOL; i++) {
      const ws_file *f = i == r->n_imported ? r->self : rv_file_of(r, r->imported[i]);
      for (size_t k = 0; f && k < f->n_defs && n < GUESS_POOL; k++) {
        const ws_def *d = &f->defs[k];
        if (!guessable(d)) continue;
        /* Not what encloses the cursor. What the windows show is left to
         * the lookup (resolve_cand): the choice must not depend on the
         * windows, which grow with the budget. */
        if (f == r->self && d->start_byte <= cursor && cursor < d->end_byte) continue;
        const char *nm = rv_def_name(f, d);
        if (!nm) continue;
        if (pass == 0) {
          rv_scorer_add(&sc, nm);
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
        float s = rv_scorer_score(&sc, nm, 0.0f);
        /* What fits the slot at the cursor (a statement, a condition, the
         * function's result, a declared variable) is likelier; in Go what
         * cannot fit is not guessed. */
        if (s >= GUESS_MIN / 2 && d->kind == WK_FUNCTION) {
          int fit = rv_fits(r->expect, f, d, ws_str(f, d->head), nm);
          if (fit < 0 && f->lang && strcmp(f->lang, "go") == 0) continue;
          s *= 1.0f + GUESS_FIT * (float)fit;
        }
        if (s >= GUESS_MIN && !rv_near_cursor(r, nm)) g[n++] = (guess){nm, ws_str(f, d->head), s};
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
    if (rv_count_tokens(r->tok, line, rv_utf8_cut(line, hl, GUESS_LINE_BYTES)) > GUESS_TOKENS)
      continue;
    out[k++] = g[i].name;
  }
  free(g);
  return k;
}


/* ---- the field-type oracle for resolve.c ----------------------------------------- */

static char *type_from_head(const ws_file *f, const ws_def *d, const char *lang) {
  const char *h = ws_str(f, d->head), *name = rv_def_name(f, d);
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
    const ws_file *f = rv_file_of(r, d.fid);
    return type_from_head(f, &f->defs[d.k], d.fid == SELF ? r->lang : f->lang);
  }
  /* A variable at file scope. */
  name_kind nk = {field, 0, NULL};
  for (size_t k = 0; r->self && k < r->self->n_defs; k++) {
    const ws_def *x = &r->self->defs[k];
    if (x->kind == WK_VARIABLE && rv_filter(r->self, x, &nk))
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
      if (rv_filter(r->self, &r->self->defs[k], &nk)) d = (defref){SELF, (uint32_t)k}, found = true;
    if (!found && !(r->ws && rv_pick_workspace(r, &r->ws->by_name, name, rv_filter, &nk, &d)))
      return NULL;
  }
  const ws_file *f = rv_file_of(r, d.fid);
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


/* Phase 1, the offer: the definitions of the names around the cursor
 * (rv_candidates, with the names the words around it predict after the
 * cursor's line), each once, in compact form, pushed onto out after its
 * the scope headers in priority order. cands (MAX_CANDS) receives the
 * names (*n_cands, for rv_cands_free); per definition pushed, def_of its
 * definition, at_cursor whether it is the cursor's (its member access, its
 * line, a guess), reserve the tokens it is charged at least (the type at
 * the cursor, given up to wide_tokens). Returns how many were pushed. */
size_t rv_defs_offer(retrieval *r, const sc_syntax_tree *tree, size_t cursor, size_t wide_tokens,
                     rv_cand *cands, size_t *n_cands_out, defref *def_of, bool *at_cursor,
                     size_t *reserve, sc_prompt *out) {
  const char *text = r->text, *lang = r->lang, *self_path = r->self_path;
  size_t len = r->len;
  rv_bag bag = {.n = 0};
  rv_scan scan = {text, len, cursor, lang, tree, field_type, return_type, r, 0, &bag, 0, {0},
                  false, 0, 0};
  size_t n_cands = rv_candidates(&scan, cands, MAX_CANDS - GUESSES);
  r->cands = cands;
  r->n_cands = n_cands;
  r->bag = &bag;
  r->expect = &scan.expect;
  /* The names the words around the cursor predict come after the cursor's
   * line (what is written there is surer) and before the lines around. */
  const char *guessed[GUESSES];
  size_t n_guess = guess_names(r, &scan, cursor, guessed, GUESSES);
  size_t gat = scan.n_line < n_cands ? scan.n_line : n_cands, put = 0;
  for (size_t i = 0; i < n_guess; i++) {
    rv_cand c = {strdup(guessed[i]), NULL, false, false, false, false, NULL, true};
    if (!c.name) continue;
    memmove(&cands[gat + put + 1], &cands[gat + put], (n_cands - gat - put) * sizeof *cands);
    cands[gat + put++] = c;
    n_cands++;
  }
  r->n_cands = n_cands;
  size_t n_defs = 0;
  for (size_t i = 0; i < n_cands && n_defs < MAX_DEF_ITEMS; i++) {
    defref d;
    if (!resolve_cand(r, &cands[i], cursor, &d) || rv_was_chosen(r, d.fid, d.k)) continue;
    const ws_file *f = rv_file_of(r, d.fid);
    const ws_def *def = &f->defs[d.k];
    /* An enum member comes with its enum (its siblings are the likely
     * alternatives). */
    if (def->kind == WK_CONSTANT && def->parent != UINT16_MAX && !cands[i].guess) {
      d.k = def->parent;
      def = &f->defs[d.k];
      if (rv_was_chosen(r, d.fid, d.k)) continue;
    }
    /* A guessed container is shown by its head line only: it does not keep
     * its listing from coming later, for a name written near the cursor. */
    const rv_cand *c = &cands[i];
    bool wide = c->type_only && c->at_cursor && !c->known; /* a member is about to be typed */
    size_t full = 0;
    bool listing = def->flags & WD_CONTAINER || (is_type(def) && wide) ||
                   (is_type(def) && f->lang && strcmp(f->lang, "go") == 0);
    if (!(cands[i].guess && listing)) rv_choose(r, d.fid, d.k);
    sbuf sb = {0};
    uint32_t first_line = def->start_line, last_line = def->end_line;
    if (c->guess && ws_str(f, def->head)) {
      /* A guess is worth its name, not much budget: the line of its head
       * that names it (not a decorator above; a long signature is broken
       * after its name's parenthesis). */
      size_t hl, row;
      const char *h = naming_line(ws_str(f, def->head), rv_def_name(f, def), &hl, &row);
      rv_sb_put(&sb, h, rv_utf8_cut(h, hl, GUESS_LINE_BYTES));
      rv_sb_put(&sb, "\n", 1);
      first_line += (uint32_t)row;
      last_line = first_line;
      /* A typedef'd struct is named on its closing line. */
      const char *tail = ws_str(f, def->tail), *nm = rv_def_name(f, def);
      char first[GUESS_LINE_BYTES + 1];
      snprintf(first, sizeof first, "%.*s", (int)(hl < GUESS_LINE_BYTES ? hl : GUESS_LINE_BYTES),
               h);
      if (tail && nm && !word_in(first, nm) && word_in(tail, nm)) {
        rv_sb_line(&sb, tail);
        last_line = def->end_line;
      }
    } else if (listing)
      rv_container_text(r, d.fid, d.k, &sb, wide ? CURSOR_MEMBER_LINES : MEMBER_LINES,
                        wide ? wide_tokens : i < gat ? CONTAINER_TOKENS : LATE_TOKENS,
                        c->typed, wide, wide ? &full : NULL);
    else if (def->kind == WK_CONSTANT || def->kind == WK_MACRO || def->kind == WK_VARIABLE)
      rv_group_text(r, d.fid, d.k, &sb, i < gat ? CONTAINER_TOKENS : LATE_TOKENS, &first_line,
                    &last_line);
    else if (ws_str(f, def->head))
      rv_sb_line(&sb, ws_str(f, def->head));
    const char *reason = d.fid == SELF ? "same file" : imported(r, d.fid) ? "imported file"
                                                                            : "workspace";
    sc_context_snippet *s =
        sb.n ? rv_push_text(out, d.fid == SELF ? self_path : f->path,
                            d.fid == SELF ? lang : f->lang, sb.p, sb.n, first_line, last_line,
                            reason, rv_def_name(f, def), ws_kind_name(def->kind), 0.0f)
             : NULL;
    free(sb.p);
    if (!s) continue;
    if (rv_repeats_window(out, s)) {
      rv_snippet_free(s);
      out->n_snippets--;
      continue;
    }
    at_cursor[n_defs] = i < gat + put; /* the member access at the cursor, its line, the guesses */
    reserve[n_defs] = full < wide_tokens ? full : wide_tokens;
    def_of[n_defs++] = d;
  }
  *n_cands_out = n_cands;
  /* The word bag and the expectation lived in this frame. */
  r->bag = NULL;
  r->expect = NULL;
  return n_defs;
}

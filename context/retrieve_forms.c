/* retrieve_forms.c — the compact forms phase 1 offers a definition in
 * (retrieve_defs.c): a container with its members' lines (the type at the
 * cursor with more of them, ranked by what the cursor's code expects), a
 * run of constants or variables, and the text buffer they are built in. */
#define _DEFAULT_SOURCE /* strndup */
#include "prompt_impl.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rv_sb_put(sbuf *b, const char *s, size_t n) {
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

void rv_sb_line(sbuf *b, const char *s) {
  rv_sb_put(b, s, strlen(s));
  rv_sb_put(b, "\n", 1);
}

/* The first line of a head. */
static void sb_first_line(sbuf *b, const char *s) {
  const char *nl = strchr(s, '\n');
  rv_sb_put(b, s, nl ? (size_t)(nl - s) : strlen(s));
  rv_sb_put(b, "\n", 1);
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
      if (memcmp(p + i, name, nl) == 0 &&
          (i == 0 || !(isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_'))) {
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
  uint32_t near; /* rv_nearness() */
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
  return m->fid == SELF ? r->self_path : rv_file_of(r, m->fid)->path;
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
  const ws_file *g = rv_file_of(r, m->fid);
  const char *path = member_path(r, m);
  if (strcmp(path, *last) != 0) {
    const char *cp = rv_comment_prefix(g->lang ? g->lang : r->lang);
    char pl[PATH_MAX + 32];
    int pn = snprintf(pl, sizeof pl, "%s %s:%u\n", cp ? cp : "//", path,
                      g->defs[m->k].start_line + 1);
    if (pn > 0 && (size_t)pn < sizeof pl) rv_sb_put(b, pl, (size_t)pn);
    *last = path;
  }
  char line[MEMBER_LINE_BYTES + 64];
  size_t n = member_line(m->head, rv_def_name(g, &g->defs[m->k]), line, sizeof line);
  rv_sb_put(b, line, n);
  rv_sb_put(b, "\n", 1);
}

/* Whether a member is a name code rarely writes after a dot (__init__). */
static bool dunder(const char *name) {
  size_t n = strlen(name);
  return n > 4 && name[0] == '_' && name[1] == '_' && name[n - 1] == '_' && name[n - 2] == '_';
}

/* A Go method: declared outside its type's braces. */
static bool outside(const retrieval *r, const member *m) {
  const ws_file *g = rv_file_of(r, m->fid);
  return g->defs[m->k].parent == UINT16_MAX;
}

/* The container named type (a class, interface or struct): in the file
 * itself, else the preferred one in the workspace. */
static bool find_type(const retrieval *r, const char *type, defref *out) {
  name_kind nk = {type, 2, NULL};
  for (size_t k = 0; r->self && k < r->self->n_defs; k++)
    if (rv_filter(r->self, &r->self->defs[k], &nk)) {
      *out = (defref){SELF, (uint32_t)k};
      return true;
    }
  return r->ws && rv_pick_workspace(r, &r->ws->by_name, type, rv_filter, &nk, out);
}

static bool has_member_named(const retrieval *r, const member *ms, size_t n, const char *name) {
  for (size_t j = 0; j < n; j++) {
    const ws_file *g = rv_file_of(r, ms[j].fid);
    if (strcmp(rv_def_name(g, &g->defs[ms[j].k]), name) == 0) return true;
  }
  return false;
}

/* Appends the members of type's bases (and theirs, depth < 2) that ms[0, n)
 * does not name yet; the new count. */
static size_t inherited(retrieval *r, const char *type, member *ms, size_t n, size_t cap,
                        int depth) {
  char *bases[4];
  size_t nb = depth < 2 ? rv_bases_of(r, type, bases, 4) : 0;
  for (size_t b = 0; b < nb; b++) {
    defref t;
    if (strcmp(bases[b], type) != 0 && find_type(r, bases[b], &t)) {
      const ws_file *g = rv_file_of(r, t.fid);
      const ws_def *td = &g->defs[t.k];
      for (size_t i = t.k + 1; i < g->n_defs && g->defs[i].start_byte < td->end_byte && n < cap;
           i++) {
        const ws_def *m = &g->defs[i];
        const char *mn = rv_def_name(g, m);
        if (m->parent != t.k || rv_was_chosen(r, t.fid, (uint32_t)i) || !ws_str(g, m->head) ||
            !mn || dunder(mn) || has_member_named(r, ms, n, mn))
          continue;
        ms[n] = (member){t.fid, (uint32_t)i, ws_str(g, m->head), false, 0, 0.0f,
                         rv_nearness(r, mn), 0, 0, (uint32_t)n};
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
void rv_container_text(retrieval *r, uint32_t fid, uint32_t k, sbuf *b, size_t max_lines,
                       size_t max_tokens, const char *typed, bool wide, size_t *full) {
  const ws_file *f = rv_file_of(r, fid);
  const ws_def *d = &f->defs[k];
  /* A type that is no container (an alias: `type A = B & {...}`) is
   * listed here for its bases' members: its first line heads them. */
  bool container = d->flags & WD_CONTAINER;
  const char *head = ws_str(f, d->head);
  const char *hnl = container ? NULL : strchr(head, '\n');
  size_t head_len = hnl ? (size_t)(hnl - head) : strlen(head);
  rv_sb_put(b, head, head_len);
  rv_sb_put(b, "\n", 1);
  member ms[256];
  size_t n = 0;
  for (size_t i = k + 1; i < f->n_defs && f->defs[i].start_byte < d->end_byte && n < 256; i++) {
    const ws_def *m = &f->defs[i];
    if (m->parent != k || rv_was_chosen(r, fid, (uint32_t)i) || !ws_str(f, m->head) ||
        dunder(rv_def_name(f, m)))
      continue;
    bool dup = false; /* "x: int" in the class and "self.x = x" in __init__: once */
    for (size_t j = 0; j < n && !dup; j++)
      dup = strcmp(rv_def_name(rv_file_of(r, ms[j].fid), &rv_file_of(r, ms[j].fid)->defs[ms[j].k]),
                   rv_def_name(f, m)) == 0;
    if (dup) continue;
    ms[n] = (member){fid, (uint32_t)i, ws_str(f, m->head), false, 0, 0.0f,
                     rv_nearness(r, rv_def_name(f, m)), 0, 0, (uint32_t)n};
    n++;
  }
  const sc_workspace *ws = r->ws;
  const char *name = rv_def_name(f, d);
  const char *fpath = fid == SELF ? r->self_path : f->path;
  /* The member about to be typed may be inherited: the bases' members too
   * (two levels up), after the type's own in source order. */
  if (wide) n = inherited(r, name, ms, n, 256, 0);
  /* Go: methods declared outside the type, in the same package (folder):
   * the current file's from its text now, the others' from the index. */
  if (f->lang && strcmp(f->lang, "go") == 0) {
    size_t dl = rv_dir_len(fpath);
    bool same_dir = rv_dir_len(r->self_path) == dl && strncmp(r->self_path, fpath, dl) == 0;
    for (size_t i = 0; same_dir && r->self && i < r->self->n_defs && n < 256; i++) {
      const ws_def *m = &r->self->defs[i];
      const char *sc = ws_str(r->self, m->scope);
      if (m->kind != WK_METHOD || m->parent != UINT16_MAX || !sc || strcmp(sc, name) != 0 ||
          rv_was_chosen(r, SELF, (uint32_t)i) || !ws_str(r->self, m->head))
        continue;
      ms[n] = (member){SELF, (uint32_t)i, ws_str(r->self, m->head), false, 0, 0.0f,
                       rv_nearness(r, rv_def_name(r->self, m)), 0, 0, (uint32_t)n};
      n++;
    }
    const ws_map_entry *e = ws ? ws_map_get(&ws->by_scope, name) : NULL;
    for (uint32_t v = 0; e && v < e->n && n < 256; v++) {
      uint32_t mf = (uint32_t)(e->vals[v] >> 32), mk = (uint32_t)e->vals[v];
      const ws_file *g = rv_file_of(r, mf);
      if (!g || mk >= g->n_defs || g->defs[mk].kind != WK_METHOD ||
          g->defs[mk].parent != UINT16_MAX)
        continue;
      if (strcmp(g->path, r->self_path) == 0) continue; /* taken from the text above */
      if (rv_dir_len(g->path) != dl || strncmp(g->path, fpath, dl) != 0) continue;
      if (rv_was_chosen(r, mf, mk) || !ws_str(g, g->defs[mk].head)) continue;
      ms[n] = (member){mf, mk, ws_str(g, g->defs[mk].head), false, 0, 0.0f,
                       rv_nearness(r, rv_def_name(g, &g->defs[mk])), 0, 0, (uint32_t)n};
      n++;
    }
  }
  size_t tl = typed ? strlen(typed) : 0;
  scorer sc;
  rv_scorer_init(&sc, wide ? r->bag : NULL);
  for (size_t m = 0; m < n; m++) {
    const ws_file *g = rv_file_of(r, ms[m].fid);
    rv_scorer_add(&sc, rv_def_name(g, &g->defs[ms[m].k]));
  }
  for (size_t m = 0; m < n; m++) {
    const ws_file *g = rv_file_of(r, ms[m].fid);
    const char *mn = rv_def_name(g, &g->defs[ms[m].k]);
    if (ws) ms[m].uses = ws_member_uses(ws, mn);
    ms[m].typed = tl && strncmp(mn, typed, tl) == 0;
    ms[m].kin = ms[m].near ? 0 : rv_kinship(r, mn);
    if (wide) {
      ms[m].words = rv_scorer_score(&sc, mn, RV_W_NOTE);
      ms[m].fits = rv_fits(r->expect, g, &g->defs[ms[m].k], ms[m].head, mn);
    }
  }
  qsort(ms, n, sizeof *ms, cmp_member_pick);
  if (n > max_lines) n = max_lines;
  /* Within CONTAINER_TOKENS: the most relevant members first. */
  size_t used = rv_count_tokens(r->tok, head, head_len) + (ws_str(f, d->tail) ? 2 : 0) +
                12 /* the path line */;
  /* *full: what the listing would cost with no limit (up to
   * CURSOR_TYPE_TOKENS), for the caller's reservation. */
  size_t fit = 0, total = used;
  for (size_t m = 0; m < n; m++) {
    char line[MEMBER_LINE_BYTES + 64];
    const ws_file *g = rv_file_of(r, ms[m].fid);
    size_t hl = member_line(ms[m].head, rv_def_name(g, &g->defs[ms[m].k]), line, sizeof line);
    size_t t = rv_count_tokens(r->tok, line, hl) + 1;
    /* A file not listed yet costs its path line. */
    const char *mp = member_path(r, &ms[m]);
    bool seen = strcmp(mp, fpath) == 0;
    for (size_t j = 0; j < m && !seen; j++) seen = strcmp(member_path(r, &ms[j]), mp) == 0;
    if (!seen) t += rv_count_tokens(r->tok, mp, strlen(mp)) + 6;
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
  for (size_t m = 0; m < n; m++) rv_choose(r, ms[m].fid, ms[m].k); /* listed: not again */
  bool tail_after_fields = container && ws_str(f, d->tail) != NULL;
  size_t i = 0;
  const char *last = fpath;
  for (; i < n; i++) {
    if (outside(r, &ms[i]) && tail_after_fields) break; /* Go methods go after the closing brace */
    sb_member(r, b, &ms[i], &last);
  }
  if (tail_after_fields) rv_sb_line(b, ws_str(f, d->tail));
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

void rv_group_text(retrieval *r, uint32_t fid, uint32_t k, sbuf *b, size_t max_tokens,
                   uint32_t *lo_line, uint32_t *hi_line) {
  const ws_file *f = rv_file_of(r, fid);
  size_t lo = k, hi = k;
  while (lo > 0 && k - lo < 64 && same_run(f, lo - 1, lo)) lo--;
  while (hi + 1 < f->n_defs && hi - k < 64 && same_run(f, hi, hi + 1)) hi++;
  uint32_t pick[MEMBER_LINES];
  size_t n = 0;
  pick[n++] = k;
  size_t used =
      rv_count_tokens(r->tok, ws_str(f, f->defs[k].head), strlen(ws_str(f, f->defs[k].head))) + 12;
  /* Near the cursor first, then outward from k. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t dist = 1; dist <= hi - lo && n < MEMBER_LINES; dist++)
      for (int side = 0; side < 2 && n < MEMBER_LINES; side++) {
        size_t i = side ? k + dist : k - dist;
        if ((side && i > hi) || (!side && (dist > k || i < lo))) continue;
        const ws_def *m = &f->defs[i];
        const char *h = ws_str(f, m->head);
        if (!h || rv_was_chosen(r, fid, (uint32_t)i)) continue;
        bool near = rv_near_cursor(r, rv_def_name(f, m));
        if ((pass == 0) != near) continue;
        const char *nl = strchr(h, '\n');
        size_t t = rv_count_tokens(r->tok, h, nl ? (size_t)(nl - h) : strlen(h)) + 1;
        if (used + t > max_tokens) continue;
        used += t;
        pick[n++] = (uint32_t)i;
      }
  qsort(pick, n, sizeof *pick, cmp_u32);
  for (size_t i = 0; i < n; i++) {
    rv_choose(r, fid, pick[i]);
    if (n == 1) rv_sb_line(b, ws_str(f, f->defs[pick[i]].head));
    else sb_first_line(b, ws_str(f, f->defs[pick[i]].head));
  }
  *lo_line = f->defs[pick[0]].start_line;
  *hi_line = f->defs[pick[n - 1]].end_line;
}

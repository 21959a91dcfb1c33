/* resolve_names.c — the names around the cursor that retrieval looks up
 * (rv_candidates), nearest first; the words around it (rv_bag); and what
 * the member access at the cursor must give (rv_expect). Receiver types
 * and what differs by language come from resolve.c and the resolvers
 * (resolve_impl.h). */
#define _DEFAULT_SOURCE /* strndup */
#include "resolve_impl.h"

#include <stdlib.h>

/* ---- candidates ------------------------------------------------------------------- */

typedef struct span {
  uint32_t a, b;
} span;

typedef struct masks {
  span *s;
  size_t n, cap;
} masks;

bool rv_masked_type(const char *t) {
  return strstr(t, "comment") || strstr(t, "string") || strcmp(t, "char_literal") == 0 ||
         strcmp(t, "rune_literal") == 0 || strcmp(t, "regex") == 0;
}

/* Comments and strings that intersect [a, b), in order, from the tree. */
static void mask_walk(TSTreeCursor *c, uint32_t a, uint32_t b, masks *m, int depth) {
  do {
    TSNode n = ts_tree_cursor_current_node(c);
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (e <= a) continue;
    if (s >= b) break;
    if (rv_masked_type(ts_node_type(n))) {
      if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 32;
        span *ns = realloc(m->s, nc * sizeof *ns);
        if (!ns) return;
        m->s = ns;
        m->cap = nc;
      }
      m->s[m->n++] = (span){s, e};
      continue;
    }
    if (depth < 200 && ts_tree_cursor_goto_first_child(c)) {
      mask_walk(c, a, b, m, depth + 1);
      ts_tree_cursor_goto_parent(c);
    }
  } while (ts_tree_cursor_goto_next_sibling(c));
}

static bool is_masked(const masks *m, size_t a) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->s[mid].b <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo < m->n && m->s[lo].a <= a;
}

typedef struct collector {
  const rv_scan *sc;
  const masks *mk;
  rv_cand *out;
  size_t n, cap;
  /* receivers already resolved, so each chain is resolved once */
  struct {
    char *chain;
    char *type;
  } recv[32];
  size_t n_recv;
} collector;

/* Words of the languages that ws_is_keyword (which the index's sketches
 * use, so it stays as it is) does not list: never a name to look up. */
/* By length (called for every identifier scanned: a length, then a few
 * words of it). */
static const char *const k_more_keywords[][16] = {
    {NULL},
    {NULL},
    {"of", "go", NULL},
    {"any", "nil", "map", "del", NULL},
    {"type", "null", "void", "true", "chan", "goto", "elif", "None", "True", NULL},
    {"keyof", "infer", "never", "throw", "super", "false", "range", "defer", "const", "raise",
     "False", "await", NULL},
    {"typeof", "string", "number", "symbol", "bigint", "delete", "static", "struct", "select",
     "sizeof", "except", "global", "assert", NULL},
    {"extends", "declare", "boolean", "unknown", "default", "finally", NULL},
    {"readonly", "abstract", "override", "nonlocal", NULL},
    {"interface", "namespace", "satisfies", "undefined", "protected", NULL},
    {"implements", "instanceof", NULL},
    {"fallthrough", NULL},
};

static bool more_keyword(const char *s, size_t n) {
  if (n >= sizeof k_more_keywords / sizeof k_more_keywords[0]) return false;
  for (const char *const *k = k_more_keywords[n]; *k; k++)
    if ((*k)[0] == s[0] && memcmp(*k, s, n) == 0) return true;
  return false;
}

static bool skip_word(const char *s, size_t n) {
  return n < 2 || isdigit((unsigned char)s[0]) || ws_is_keyword(s, n) || more_keyword(s, n);
}

static void add(collector *co, const char *name, size_t n, const char *recv_type, bool member,
                bool type_only) {
  if (co->n >= co->cap || skip_word(name, n)) return;
  for (size_t i = 0; i < co->n; i++) {
    const rv_cand *c = &co->out[i];
    if (c->type_only == type_only && strlen(c->name) == n && memcmp(c->name, name, n) == 0 &&
        ((!c->recv_type && !recv_type) ||
         (c->recv_type && recv_type && strcmp(c->recv_type, recv_type) == 0)))
      return;
  }
  rv_cand c = {strndup(name, n), recv_type ? strdup(recv_type) : NULL, member, type_only,
               false, false, NULL, false};
  if (!c.name || (recv_type && !c.recv_type)) {
    free(c.name);
    free(c.recv_type);
    return;
  }
  co->out[co->n++] = c;
}

/* The receiver chain ending just before offset dot (the '.' or '->' of a
 * member access): [*ra, dot). False when it is not a plain chain. */
static bool chain_before(const char *t, size_t dot, size_t *ra) {
  size_t i = dot;
  for (int parts = 0; parts < 6; parts++) {
    if (i > 0 && t[i - 1] == ')') { /* a call: back over its arguments */
      int depth = 0;
      size_t lim = i > 400 ? i - 400 : 0;
      for (; i > lim; i--) {
        if (t[i - 1] == ')') depth++;
        else if (t[i - 1] == '(' && --depth == 0) break;
      }
      if (depth != 0 || i == lim) return false;
      i--;
    }
    size_t e = i;
    while (i > 0 && rv_is_id(t[i - 1])) i--;
    if (i > 0 && t[i - 1] == '#') i--; /* a TS private field */
    if (i == e) return false;
    if (i >= 1 && t[i - 1] == '.' && !(i >= 2 && t[i - 2] == '?')) {
      i--;
      continue;
    }
    if (i >= 2 && t[i - 1] == '>' && t[i - 2] == '-') {
      i -= 2;
      continue;
    }
    if (i >= 2 && t[i - 1] == '.' && t[i - 2] == '?') {
      i -= 2;
      continue;
    }
    *ra = i;
    return rv_is_id_start(t[i]) || t[i] == '#';
  }
  return false;
}

/* The member-access operator ending at offset a (the name's start): its
 * first byte, or SIZE_MAX. */
static size_t access_before(const char *t, size_t a) {
  if (a >= 1 && t[a - 1] == '.') return a >= 2 && t[a - 2] == '?' ? a - 2 : a - 1;
  if (a >= 2 && t[a - 1] == '>' && t[a - 2] == '-') return a - 2;
  if (a >= 2 && t[a - 1] == ':' && t[a - 2] == ':') return a - 2;
  if (a >= 2 && t[a - 1] == '#' && t[a - 2] == '.') return a - 2;
  return SIZE_MAX;
}

static const char *resolve_recv(collector *co, size_t ra, size_t dot) {
  const char *t = co->sc->text;
  for (size_t i = 0; i < co->n_recv; i++)
    if (strlen(co->recv[i].chain) == dot - ra && memcmp(co->recv[i].chain, t + ra, dot - ra) == 0)
      return co->recv[i].type;
  char *type = rv_receiver_type(co->sc, ra, dot);
  if (co->n_recv < sizeof co->recv / sizeof co->recv[0]) {
    char *chain = strndup(t + ra, dot - ra);
    if (chain) {
      co->recv[co->n_recv].chain = chain;
      co->recv[co->n_recv].type = type;
      co->n_recv++;
      return type;
    }
  }
  free(type);
  return NULL;
}

/* One occurrence text[a, b). */
static void occurrence(collector *co, size_t a, size_t b) {
  const char *t = co->sc->text;
  if (is_masked(co->mk, a)) return;
  size_t op = access_before(t, a);
  const char *type = NULL;
  size_t ra;
  if (op != SIZE_MAX && chain_before(t, op, &ra)) type = resolve_recv(co, ra, op);
  add(co, t + a, b - a, type, op != SIZE_MAX, false);
}

/* The next identifier of t at or after *i and starting before e (not the
 * tail of a longer word): false when there is none; else [*a, *i), *i
 * left at its end (at most e). */
static bool next_id(const char *t, size_t *i, size_t e, size_t *a) {
  while (*i < e) {
    if (!rv_is_id_start(t[*i]) || (*i > 0 && rv_is_id(t[*i - 1]))) {
      (*i)++;
      continue;
    }
    *a = *i;
    while (*i < e && rv_is_id(t[*i])) (*i)++;
    return true;
  }
  return false;
}

/* Identifiers in text[s, e), left to right or right to left. */
static void scan_range(collector *co, size_t s, size_t e, bool backwards) {
  const char *t = co->sc->text;
  if (!backwards) {
    size_t i = s, a;
    while (next_id(t, &i, e, &a)) occurrence(co, a, i);
    return;
  }
  for (size_t i = e; i > s;) {
    if (!rv_is_id(t[i - 1])) {
      i--;
      continue;
    }
    size_t b = i;
    while (i > s && rv_is_id(t[i - 1])) i--;
    if (rv_is_id_start(t[i])) occurrence(co, i, b);
  }
}

/* The names the rest of the file (within RV_FILE_BYTES of the cursor,
 * outside the region [ra, rb)) uses most, RV_FILE_NAMES of them, the most
 * used first (the nearer first on a tie). */
static void file_names(collector *co, size_t ra, size_t rb) {
  enum { SLOTS = 2048 };
  const char *t = co->sc->text;
  size_t len = co->sc->len, cur = co->sc->cursor;
  size_t lo = cur > RV_FILE_BYTES ? cur - RV_FILE_BYTES : 0;
  size_t hi = len - cur > RV_FILE_BYTES ? cur + RV_FILE_BYTES : len;
  struct fname {
    uint32_t at, n, count, dist;
  } *slot = calloc(SLOTS, sizeof *slot);
  if (!slot) return;
  size_t used = 0;
  for (size_t i = lo; i < hi;) {
    if (i == ra) i = rb; /* the region was scanned already */
    if (i >= hi) break;
    if (!rv_is_id_start(t[i]) || (i > 0 && rv_is_id(t[i - 1]))) {
      i++;
      continue;
    }
    size_t a = i;
    while (i < hi && rv_is_id(t[i])) i++;
    size_t n = i - a;
    if (skip_word(t + a, n) || n > 64) continue;
    uint64_t h = sc_hash64(t + a, n, 11);
    size_t s = (size_t)h & (SLOTS - 1), probes = 0;
    while (slot[s].n && !(slot[s].n == n && memcmp(t + slot[s].at, t + a, n) == 0) &&
           probes++ < SLOTS)
      s = (s + 1) & (SLOTS - 1);
    if (probes >= SLOTS) break;
    uint32_t dist = (uint32_t)(a > cur ? a - cur : cur - a);
    if (slot[s].n) {
      slot[s].count++;
      if (dist < slot[s].dist) slot[s].dist = dist;
    } else if (used * 4 < SLOTS * 3) {
      slot[s] = (struct fname){(uint32_t)a, (uint32_t)n, 1, dist};
      used++;
    }
  }
  for (int k = 0; k < RV_FILE_NAMES; k++) {
    size_t best = SIZE_MAX;
    for (size_t s = 0; s < SLOTS; s++) {
      if (!slot[s].n || slot[s].count < 2) continue;
      if (best == SIZE_MAX || slot[s].count > slot[best].count ||
          (slot[s].count == slot[best].count && slot[s].dist < slot[best].dist))
        best = s;
    }
    if (best == SIZE_MAX) break;
    add(co, t + slot[best].at, slot[best].n, NULL, false, false);
    slot[best].n = 0;
  }
  free(slot);
}

/* ---- words ------------------------------------------------------------------------ */

/* The word a common abbreviation (lower case, s[0, n)) stands for, or NULL. */
static const char *abbreviation(const char *s, size_t n) {
  static const char *const pairs[][2] = {
      {"err", "error"}, {"ctx", "context"}, {"cfg", "config"}, {"conf", "config"},
      {"msg", "message"}, {"req", "request"}, {"res", "response"}, {"resp", "response"},
      {"opt", "option"}, {"arg", "argument"}, {"cmd", "command"}, {"str", "string"},
      {"val", "value"}, {"fn", "function"}, {"func", "function"}, {"num", "number"},
      {"idx", "index"}, {"buf", "buffer"}, {"src", "source"}, {"dst", "destination"},
      {"env", "environment"}, {"dir", "directory"}, {"prev", "previous"}, {"tmp", "temporary"},
      {"param", "parameter"}, {"attr", "attribute"}, {"addr", "address"}, {"conn", "connection"},
      {NULL, NULL}};
  for (size_t i = 0; pairs[i][0]; i++)
    if (strlen(pairs[i][0]) == n && memcmp(pairs[i][0], s, n) == 0) return pairs[i][1];
  return NULL;
}

size_t rv_words(const char *s, size_t n, uint64_t *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap;) {
    if (!isalpha((unsigned char)s[i])) {
      i++;
      continue;
    }
    /* A word: an upper-case run (an acronym, which ends before an
     * upper-case letter that starts a lower-case word: "HTTPError"), or an
     * optional capital and lower-case letters. */
    size_t a = i;
    if (isupper((unsigned char)s[i])) {
      while (i < n && isupper((unsigned char)s[i])) i++;
      if (i < n && islower((unsigned char)s[i]) && i - a > 1) i--;
      else if (i - a == 1)
        while (i < n && islower((unsigned char)s[i])) i++;
    } else {
      while (i < n && islower((unsigned char)s[i])) i++;
    }
    if (i - a < 2 || i - a > 32) continue;
    char low[32];
    size_t wl = i - a;
    for (size_t j = a; j < i; j++) low[j - a] = (char)tolower((unsigned char)s[j]);
    /* A plural is its singular: keys, key; params, param (not "class"). */
    if (wl >= 4 && low[wl - 1] == 's' && low[wl - 2] != 's') wl--;
    /* The abbreviations code writes everywhere are their words: err is
     * error, ctx context, cmd command. */
    const char *full = abbreviation(low, wl);
    if (full) {
      wl = strlen(full);
      memcpy(low, full, wl);
    }
    uint64_t h = sc_hash64(low, wl, 0x77);
    bool dup = false;
    for (size_t j = 0; j < k && !dup; j++) dup = out[j] == h;
    if (!dup) out[k++] = h;
  }
  /* The whole name as one word too, without case or underscores: a
   * lower-case compound ("progressbar") is the name ProgressBar. */
  char all[64];
  size_t m = 0, parts = k;
  for (size_t i = 0; i < n && m < sizeof all; i++)
    if (isalpha((unsigned char)s[i])) all[m++] = (char)tolower((unsigned char)s[i]);
  if (parts > 1 && k < cap && m >= 4 && m < sizeof all) out[k++] = sc_hash64(all, m, 0x77);
  return k;
}

float rv_bag_weight(const rv_bag *b, uint64_t word) {
  for (size_t i = 0; i < b->n; i++)
    if (b->word[i] == word) return b->weight[i];
  return 0.0f;
}

static void bag_add(rv_bag *b, const char *s, size_t n, float w) {
  if (skip_word(s, n)) return;
  uint64_t ws[8];
  size_t k = rv_words(s, n, ws, 8);
  for (size_t i = 0; i < k; i++) {
    size_t j = 0;
    while (j < b->n && b->word[j] != ws[i]) j++;
    if (j == b->n) {
      if (b->n == RV_BAG) continue;
      b->word[b->n] = ws[i];
      b->weight[b->n++] = w;
    } else if (b->weight[j] < w) {
      b->weight[j] = w;
    }
  }
}

/* Every identifier of text[a, b) into the bag, but not those in [xa, xb);
 * the words of comments and strings weigh RV_W_PROSE as much (a comment
 * says what the next line does: "we remove it" before RemoveCommand; a
 * string names the case: "fish" where GenFishCompletion is called). */
static void bag_range(rv_bag *bag, const char *t, const masks *mk, size_t a, size_t b, size_t xa,
                      size_t xb, float w) {
  size_t i = a, s;
  while (next_id(t, &i, b, &s)) {
    if (s >= xa && s < xb) continue;
    bag_add(bag, t + s, i - s, is_masked(mk, s) ? w * RV_W_PROSE : w);
  }
}

/* The name of a function whose head starts at s[a] (the identifier right
 * before its parameter list, not a keyword: "func (c *Command) Find(",
 * "static jv f_keys(", "def progressbar(", "async #retry<T>("): [*na, *nb). */
static bool function_name(const char *s, size_t a, size_t e, size_t *na, size_t *nb) {
  for (size_t i = a; i < e && s[i] != '{' && s[i] != '\n';) {
    if (!rv_is_id_start(s[i])) {
      i++;
      continue;
    }
    size_t x = i;
    while (i < e && rv_is_id(s[i])) i++;
    size_t y = i, k = i;
    while (k < e && (s[k] == ' ' || s[k] == '\t')) k++;
    if (k < e && s[k] == '<') { /* type parameters */
      int depth = 0;
      for (; k < e && s[k] != '\n'; k++) {
        if (s[k] == '<') depth++;
        else if (s[k] == '>' && --depth == 0) break;
      }
      k++;
    }
    if (k < e && s[k] == '(' && !ws_is_keyword(s + x, y - x)) {
      *na = x, *nb = y;
      return true;
    }
  }
  return false;
}

/* ---- what the member at the cursor must give ---------------------------------------- */

/* What the member access whose receiver chain starts at ra (on the line
 * starting at ls) must give; fs: the start of the innermost function. */
static void expect_at(const rv_scan *sc, size_t ls, size_t ra, size_t fs, bool in_func,
                      rv_expect *x) {
  const char *t = sc->text;
  memset(x, 0, sizeof *x);
  x->results = -1;
  const rv_lang_ops *ops = rv_lang(sc->lang);
  if (!ops) return;
  size_t a = ls;
  while (a < ra && (t[a] == ' ' || t[a] == '\t')) a++;
  size_t b = ra; /* the code before the chain: t[a, b) */
  while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t' || t[b - 1] == '&' || t[b - 1] == '*'))
    b--;
  if (ops->await && rv_ends_with_word(t, a, b, "await")) { /* what it resolves to */
    b -= 5;
    while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t')) b--;
  }
  x->known = true;
  if (a == b) {
    x->stmt = true;
    return;
  }
  bool cond = t[b - 1] == '!' || (b - a >= 2 && (memcmp(t + b - 2, "&&", 2) == 0 ||
                                                 memcmp(t + b - 2, "||", 2) == 0));
  if (!cond && ops->cond) cond = ops->cond(t, a, b);
  if (cond) {
    x->want_bool = true;
    return;
  }
  if (ops->seq && ops->seq(t, a, b)) {
    x->want_seq = true;
    return;
  }
  if (b - a == 6 && memcmp(t + a, "return", 6) == 0) {
    x->known = false;
    if (!in_func) return;
    /* The enclosing function's head: its results. */
    size_t e = fs;
    while (e < sc->len && t[e] != '{' && t[e] != '\n') e++;
    if (ops->head_results) {
      ops->head_results(t, fs, e, x->ret, sizeof x->ret);
    } else {
      size_t na, nb;
      size_t he = fs + 2000 < sc->len ? fs + 2000 : sc->len;
      if (!function_name(t, fs, he, &na, &nb)) return;
      if (rv_member_results(t, he, na, nb - na, sc->lang, x->ret, sizeof x->ret) < 1) {
        x->ret[0] = '\0';
        return;
      }
    }
    x->known = x->ret[0] != '\0';
    return;
  }
  /* An assignment: the names before ":=" or "=" (a declaration's keyword
   * left out). */
  size_t eq = b;
  if (eq > a && t[eq - 1] == '=' && !(eq - a >= 2 && strchr("=!<>+-*/%|&^:", t[eq - 2]) &&
                                      t[eq - 2] != ':')) {
    size_t l = eq - 1;
    if (l > a && t[l - 1] == ':') l--;
    size_t s0 = ops->assign_start ? ops->assign_start(t, a, l) : a;
    int names = 1;
    for (size_t i = s0; i < l; i++) {
      if (t[i] == ',') names++;
      else if (!rv_is_id(t[i]) && t[i] != ' ' && t[i] != '.' && t[i] != '\t') {
        x->known = false;
        return;
      }
    }
    x->results = names;
    if (ops->assign_type && names == 1) ops->assign_type(t, a, l, x);
    return;
  }
  x->known = false;
}

/* Whether the code before the cursor on its line, t[ls, cur), ends where
 * a type goes; *err: where an exception or error class goes (`raise`,
 * `except`, `throw new`), whose names say so. */
static bool type_position(const char *t, size_t ls, size_t cur, const char *lang,
                          const sc_syntax_tree *tree, bool *err) {
  *err = false;
  const rv_lang_ops *ops = rv_lang(lang);
  rv_line_end l = {t, ls, cur, cur, 0, 0, 0};
  while (l.e > ls && (t[l.e - 1] == ' ' || t[l.e - 1] == '\t')) l.e--;
  if (l.e == ls || !ops || !ops->type_position) return false;
  l.w = l.e;
  while (l.w > ls && rv_is_id(t[l.w - 1])) l.w--;
  l.p = l.w; /* the word before it */
  while (l.p > ls && (t[l.p - 1] == ' ' || t[l.p - 1] == '\t')) l.p--;
  l.q = l.p;
  while (l.q > ls && rv_is_id(t[l.q - 1])) l.q--;
  return ops->type_position(&l, tree, err);
}

size_t rv_candidates(rv_scan *scan, rv_cand *out, size_t cap) {
  rv_scan local = *scan;
  const rv_scan *sc = &local;
  const char *t = sc->text;
  size_t len = sc->len, cur = sc->cursor;
  /* Line boundaries of the region: RV_PREFIX_LINES before, RV_SUFFIX_LINES after. */
  size_t ls = cur;
  while (ls > 0 && t[ls - 1] != '\n') ls--;
  size_t le = cur;
  while (le < len && t[le] != '\n') le++;
  size_t pre[RV_PREFIX_LINES + 1], suf[RV_SUFFIX_LINES + 1];
  size_t npre = 0, nsuf = 0;
  pre[npre++] = ls;
  for (size_t p = ls; p > 0 && npre <= RV_PREFIX_LINES;) {
    size_t q = p - 1; /* the newline ending the previous line */
    while (q > 0 && t[q - 1] != '\n') q--;
    pre[npre++] = q;
    p = q;
  }
  suf[nsuf++] = le;
  for (size_t p = le; p < len && nsuf <= RV_SUFFIX_LINES;) {
    size_t q = p + 1;
    while (q < len && t[q] != '\n') q++;
    suf[nsuf++] = q;
    p = q;
  }
  /* The function around the cursor (its lines come first), and the
   * outermost one (receivers are declared in it, or at file scope). */
  size_t fs = 0, fe = len, name_a = 0, name_b = 0;
  local.decl_floor = cur > (32u << 10) ? cur - (32u << 10) : 0;
  if (sc->tree) {
    bool inner = false;
    TSNode *up;
    size_t k = sc_syntax_ancestry_at(sc->tree, cur, cur, &up);
    for (size_t i = 0; i < k; i++) {
      TSNode n = up[i];
      const char *ty = ts_node_type(n);
      if (!(strstr(ty, "function") || strstr(ty, "method") || strcmp(ty, "func_literal") == 0) ||
          strstr(ty, "call") ||
          strstr(ty, "type") || ts_node_end_byte(n) <= ts_node_start_byte(n) + 1)
        continue;
      if (!inner) {
        fs = ts_node_start_byte(n);
        fe = ts_node_end_byte(n);
        inner = true;
      }
      /* The innermost function with a name (a closure has none: its
       * enclosing one's). */
      if (name_b == 0) function_name(t, ts_node_start_byte(n), len, &name_a, &name_b);
      local.decl_floor = ts_node_start_byte(n);
    }
    free(up);
  }
  masks mk = {0};
  if (sc->tree) {
    TSTreeCursor c = ts_tree_cursor_new(sc_syntax_tree_root(sc->tree));
    if (ts_tree_cursor_goto_first_child(&c))
      mask_walk(&c, (uint32_t)pre[npre - 1], (uint32_t)suf[nsuf - 1], &mk, 0);
    ts_tree_cursor_delete(&c);
  }
  collector co = {sc, &mk, out, 0, cap, {{0}}, 0};
  /* The member access at the cursor: "recv." or "recv->", maybe with the
   * start of the member typed. */
  size_t w = cur;
  while (w > ls && rv_is_id(t[w - 1])) w--;
  size_t op = access_before(t, w), ra;
  bool access = op != SIZE_MAX && op >= ls && chain_before(t, op, &ra);
  if (scan->bag) {
    /* The receiver's own name is the type's, not the member's: left out. */
    rv_bag *bag = scan->bag;
    bag->n = 0;
    bag_range(bag, t, &mk, ls, cur, access ? ra : cur, access ? cur : cur, RV_W_LINE);
    bool err = false;
    scan->want_type = !access && type_position(t, ls, cur, sc->lang, sc->tree, &err);
    if (err) { /* what `raise` and `throw new` take is named so */
      bag_add(bag, "error", 5, RV_W_LINE);
      bag_add(bag, "exception", 9, RV_W_LINE);
    }
    if (name_b > name_a) bag_add(bag, t + name_a, name_b - name_a, RV_W_FUNC);
    scan->fn_at = name_a;
    scan->fn_len = name_b - name_a;
    /* The comment right above the cursor's line says what it does. */
    for (size_t k = 1; k < npre && k <= RV_BAG_BEFORE; k++) {
      size_t a = pre[k], b = pre[k - 1];
      while (a < b && (t[a] == ' ' || t[a] == '\t')) a++;
      if (a >= b || t[a] == '\n' || !is_masked(&mk, a)) break;
      bag_range(bag, t, &mk, a, b, 0, 0, RV_W_NOTE / RV_W_PROSE);
    }
    for (size_t k = 1; k <= RV_BAG_BEFORE || k <= RV_BAG_AFTER; k++) {
      float wk = 1.0f / (1.0f + (float)k / 3.0f);
      if (k <= RV_BAG_AFTER && k < nsuf) bag_range(bag, t, &mk, suf[k - 1], suf[k], 0, 0, wk);
      if (k <= RV_BAG_BEFORE && k < npre) bag_range(bag, t, &mk, pre[k], pre[k - 1], 0, 0, wk);
    }
  }
  memset(&scan->expect, 0, sizeof scan->expect);
  /* What the member at the cursor, or (no member access) the name being
   * typed there, must give. */
  expect_at(sc, ls, access ? ra : w, fs, fs > 0 || fe < len, &scan->expect);
  if (access) {
    const char *type = resolve_recv(&co, ra, op);
    size_t we = cur;
    while (we < len && rv_is_id(t[we])) we++;
    if (we > w) {
      add(&co, t + w, we - w, type, true, false);
      if (co.n) co.out[co.n - 1].at_cursor = true;
    }
    size_t before = co.n;
    if (type) add(&co, type, strlen(type), NULL, false, true);
    if (co.n > before) {
      rv_cand *c = &co.out[co.n - 1];
      c->at_cursor = true;
      c->known = we > cur;
      c->typed = cur > w ? strndup(t + w, cur - w) : NULL;
    }
  }
  scan_range(&co, cur, le, false);
  scan_range(&co, ls, cur, true);
  scan->n_line = co.n;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t k = 1; k < (nsuf > npre ? nsuf : npre); k++) {
      if (k < nsuf && (suf[k - 1] < fe) == (pass == 0)) scan_range(&co, suf[k - 1], suf[k], false);
      if (k < npre && (pre[k - 1] > fs) == (pass == 0)) scan_range(&co, pre[k], pre[k - 1], true);
    }
  }
  file_names(&co, pre[npre - 1], suf[nsuf - 1]);
  for (size_t i = 0; i < co.n_recv; i++) {
    free(co.recv[i].chain);
    free(co.recv[i].type);
  }
  free(mk.s);
  return co.n;
}

void rv_cands_free(rv_cand *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(c[i].name);
    free(c[i].recv_type);
    free(c[i].typed);
  }
}

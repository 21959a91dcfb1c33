/* test_syntax.c — per-document syntax trees: after random edit sequences the
 * incrementally reparsed tree must equal a fresh parse of the same text,
 * node for node (type, byte range, row/column points, MISSING flag). */
#define _GNU_SOURCE /* pthread_getattr_np, mincore */
#include "context.h"
#include "sc_test.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  const char *lang;
  const char *src;
} sample;

static const sample k_samples[] = {
    {"c", "#include <stdlib.h>\n\n/* A growable byte buffer. */\ntypedef struct buf {\n"
          "  char *data;\n  size_t len, cap;\n} buf;\n\n"
          "static int buf_push(buf *b, char c) {\n  if (b->len == b->cap) {\n"
          "    size_t cap = b->cap ? b->cap * 2 : 16;\n    char *p = realloc(b->data, cap);\n"
          "    if (!p) return -1; // out of memory\n    b->data = p;\n    b->cap = cap;\n  }\n"
          "  b->data[b->len++] = c;\n  return 0;\n}\n"},
    {"cpp", "#include <string>\n#include <vector>\n\nnamespace util {\n"
            "template <typename T>\nclass Ring {\n public:\n  explicit Ring(size_t n) : v_(n) {}\n"
            "  void push(const T &x) { v_[head_++ % v_.size()] = x; }\n"
            "  const T &back() const { return v_[(head_ - 1) % v_.size()]; }\n\n private:\n"
            "  std::vector<T> v_;\n  size_t head_ = 0;\n};\n}  // namespace util\n\n"
            "int main() {\n  util::Ring<std::string> r(4);\n  r.push(\"héllo\");\n"
            "  auto f = [&](int i) { return i * 2; };\n  return f(1);\n}\n"},
    {"python", "import os\nfrom typing import Iterator\n\n\nclass Walker:\n"
               "    \"\"\"Yields the files under a root.\"\"\"\n\n    def __init__(self, root: str):\n"
               "        self.root = root\n\n    def files(self) -> Iterator[str]:\n"
               "        for d, _, names in os.walk(self.root):\n            for n in names:\n"
               "                if not n.startswith('.'):  # skip hidden\n"
               "                    yield os.path.join(d, n)\n\n\n"
               "def count(root):\n    return sum(1 for _ in Walker(root).files())\n"},
    {"javascript", "'use strict';\nconst http = require('http');\n\n"
                   "function handler(req, res) {\n  const body = [];\n"
                   "  req.on('data', (chunk) => body.push(chunk));\n  req.on('end', () => {\n"
                   "    res.end(`got ${body.length} chunks`);\n  });\n}\n\n"
                   "class Server {\n  constructor(port) { this.port = port; }\n"
                   "  start() { return http.createServer(handler).listen(this.port); }\n}\n"
                   "module.exports = { Server };\n"},
    {"typescript", "export interface User { id: number; name: string; tags?: string[] }\n\n"
                   "export async function load(ids: number[]): Promise<User[]> {\n"
                   "  const out: User[] = [];\n  for (const id of ids) {\n"
                   "    const r = await fetch(`/api/users/${id}`);\n"
                   "    if (!r.ok) { throw new Error(\"bad \" + r.status); }\n"
                   "    out.push((await r.json()) as User);\n  }\n  return out;\n}\n\n"
                   "enum Mode { Read = 1, Write = 2 }\ntype Pair<T> = [T, T];\n"},
    {"tsx", "import React, { useState } from 'react';\n\n"
            "export function Counter({ start }: { start: number }) {\n"
            "  const [n, setN] = useState(start);\n  return (\n    <div className=\"counter\">\n"
            "      <button onClick={() => setN(n + 1)}>+</button>\n      <span>{n}</span>\n"
            "    </div>\n  );\n}\n"},
    {"go", "package store\n\nimport (\n\t\"errors\"\n\t\"sync\"\n)\n\n"
           "// Store is a map safe for concurrent use.\ntype Store struct {\n\tmu sync.Mutex\n"
           "\tm  map[string]int\n}\n\nvar ErrMissing = errors.New(\"missing\")\n\n"
           "func (s *Store) Get(k string) (int, error) {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n"
           "\tv, ok := s.m[k]\n\tif !ok {\n\t\treturn 0, ErrMissing\n\t}\n\treturn v, nil\n}\n"},
    {"rust", "use std::fmt;\n\n#[derive(Debug, Clone)]\npub struct Point {\n    x: f64,\n"
             "    y: f64,\n}\n\nimpl fmt::Display for Point {\n"
             "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n"
             "        write!(f, \"({}, {})\", self.x, self.y)\n    }\n}\n\n"
             "fn centroid(ps: &[Point]) -> Option<Point> {\n    if ps.is_empty() {\n"
             "        return None;\n    }\n    let n = ps.len() as f64;\n"
             "    let (sx, sy) = ps.iter().fold((0.0, 0.0), |a, p| (a.0 + p.x, a.1 + p.y));\n"
             "    Some(Point { x: sx / n, y: sy / n })\n}\n"},
    {"java", "package demo;\n\nimport java.util.ArrayList;\nimport java.util.List;\n\n"
             "public final class Stack<T> {\n  private final List<T> items = new ArrayList<>();\n\n"
             "  /** Pushes x; returns this for chaining. */\n  public Stack<T> push(T x) {\n"
             "    items.add(x);\n    return this;\n  }\n\n  public T pop() {\n"
             "    if (items.isEmpty()) {\n      throw new IllegalStateException(\"empty\");\n    }\n"
             "    return items.remove(items.size() - 1);\n  }\n}\n"},
    {"bash", "#!/usr/bin/env bash\nset -euo pipefail\n\nlog() { echo \"[$(date +%T)] $*\" >&2; }\n\n"
             "for f in \"$@\"; do\n  if [[ -f \"$f\" ]]; then\n    log \"checking $f\"\n"
             "    wc -l < \"$f\"\n  else\n    log \"missing: $f\"  # keep going\n  fi\ndone\n"
             "cat <<EOF\ndone with ${#} files\nEOF\n"},
    {"json", "{\n  \"name\": \"sculpt-demo\",\n  \"version\": \"1.2.3\",\n"
             "  \"scripts\": { \"build\": \"tsc -p .\", \"test\": \"node --test\" },\n"
             "  \"files\": [\"dist\", \"README.md\"],\n  \"private\": true,\n"
             "  \"count\": -12.5e3,\n  \"nothing\": null\n}\n"},
};

/* Fragments random edits insert: brackets, quotes and comment openers that
 * swing the parse between states, multi-byte UTF-8, CRLF, keywords. */
static const char *const k_fragments[] = {
    "{", "}", "(", ")", "[", "]", ";", ",", "\n", "\r\n", "  ", "\t", "\"", "'", "`",
    "/*", "*/", "//", "#", "x", "foo", "return ", "if (a) ", "def ", "fn ", "é", "→", "0x1F",
    "\\", "<div>", "</div>", ":", "=>", "${", "EOF\n",
};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static bool g_verbose; /* SCULPT_TEST_VERBOSE=1: print every edit */
static uint64_t rnd(void) { /* xorshift64*: deterministic, seeded per run */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 2685821657736338717ull;
}
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* Compares two trees node by node; on the first difference fills why. */
static bool same_tree(TSNode a, TSNode b, char *why, size_t cap) {
  TSTreeCursor ca = ts_tree_cursor_new(a), cb = ts_tree_cursor_new(b);
  bool same = true;
  for (;;) {
    TSNode x = ts_tree_cursor_current_node(&ca), y = ts_tree_cursor_current_node(&cb);
    TSPoint xs = ts_node_start_point(x), ys = ts_node_start_point(y);
    TSPoint xe = ts_node_end_point(x), ye = ts_node_end_point(y);
    if (ts_node_symbol(x) != ts_node_symbol(y) || ts_node_start_byte(x) != ts_node_start_byte(y) ||
        ts_node_end_byte(x) != ts_node_end_byte(y) || xs.row != ys.row ||
        xs.column != ys.column || xe.row != ye.row || xe.column != ye.column ||
        ts_node_is_missing(x) != ts_node_is_missing(y) ||
        ts_node_child_count(x) != ts_node_child_count(y)) {
      snprintf(why, cap, "%s [%u,%u) %u:%u vs %s [%u,%u) %u:%u", ts_node_type(x),
               ts_node_start_byte(x), ts_node_end_byte(x), xs.row, xs.column, ts_node_type(y),
               ts_node_start_byte(y), ts_node_end_byte(y), ys.row, ys.column);
      same = false;
      break;
    }
    if (ts_tree_cursor_goto_first_child(&ca)) {
      ts_tree_cursor_goto_first_child(&cb);
      continue;
    }
    bool done = false;
    while (!ts_tree_cursor_goto_next_sibling(&ca)) {
      if (!ts_tree_cursor_goto_parent(&ca)) {
        done = true;
        break;
      }
      ts_tree_cursor_goto_parent(&cb);
    }
    if (done) break;
    ts_tree_cursor_goto_next_sibling(&cb);
  }
  ts_tree_cursor_delete(&ca);
  ts_tree_cursor_delete(&cb);
  return same;
}

/* Every node's points agree with its byte offsets in text, children lie in
 * order inside their parent, and the root covers the whole text. This holds
 * for any correct tree, however the parser recovered from errors, and it
 * catches wrong TSInputEdit points: reused nodes would keep stale rows. */
static TSPoint point_of(const uint32_t *line_starts, size_t nlines, uint32_t byte) {
  size_t lo = 0, hi = nlines; /* last line start <= byte */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (line_starts[mid] <= byte) lo = mid;
    else hi = mid;
  }
  return (TSPoint){(uint32_t)lo, byte - line_starts[lo]};
}

static bool consistent_tree(TSNode root, const char *text, size_t len, char *why, size_t cap) {
  size_t nlines = 1;
  for (size_t k = 0; k < len; k++) nlines += text[k] == '\n';
  uint32_t *ls = malloc(nlines * sizeof *ls);
  if (!ls) return false;
  ls[0] = 0;
  for (size_t k = 0, l = 1; k < len; k++)
    if (text[k] == '\n') ls[l++] = (uint32_t)k + 1;
  TSTreeCursor c = ts_tree_cursor_new(root);
  bool ok = ts_node_end_byte(root) <= len;
  if (!ok) snprintf(why, cap, "root ends at %u > %zu", ts_node_end_byte(root), len);
  while (ok) {
    TSNode n = ts_tree_cursor_current_node(&c);
    uint32_t sb = ts_node_start_byte(n), eb = ts_node_end_byte(n);
    TSPoint sp = ts_node_start_point(n), ep = ts_node_end_point(n);
    TSPoint ws = point_of(ls, nlines, sb), we = point_of(ls, nlines, eb);
    if (eb > len || sb > eb || sp.row != ws.row || sp.column != ws.column || ep.row != we.row ||
        ep.column != we.column) {
      snprintf(why, cap, "%s [%u,%u) at %u:%u-%u:%u, text says %u:%u-%u:%u", ts_node_type(n), sb,
               eb, sp.row, sp.column, ep.row, ep.column, ws.row, ws.column, we.row, we.column);
      ok = false;
      break;
    }
    uint32_t prev_end = sb;
    for (uint32_t i = 0; i < ts_node_child_count(n) && ok; i++) {
      TSNode ch = ts_node_child(n, i);
      if (ts_node_start_byte(ch) < prev_end || ts_node_end_byte(ch) > eb) {
        snprintf(why, cap, "child %s [%u,%u) out of order in %s [%u,%u)", ts_node_type(ch),
                 ts_node_start_byte(ch), ts_node_end_byte(ch), ts_node_type(n), sb, eb);
        ok = false;
      }
      prev_end = ts_node_end_byte(ch);
    }
    if (!ok) break;
    if (ts_tree_cursor_goto_first_child(&c)) continue;
    bool done = false;
    while (!ts_tree_cursor_goto_next_sibling(&c))
      if (!ts_tree_cursor_goto_parent(&c)) {
        done = true;
        break;
      }
    if (done) break;
  }
  ts_tree_cursor_delete(&c);
  free(ls);
  return ok;
}

/* One random edit: delete, insert a fragment, replace, or copy a slice of
 * the document elsewhere (moves whole lines and blocks around). */
static void random_edit(const char *doc, size_t len, size_t *start, size_t *end,
                        char *ins, size_t *ins_len, size_t ins_cap) {
  *start = rnd_below(len + 1);
  *end = *start;
  *ins_len = 0;
  /* Half the edits are ones a person makes while the code stays valid:
   * whitespace next to whitespace, a letter inside a name, a line copied. */
  if (rnd_below(2) == 0 && len > 0) {
    size_t p = rnd_below(len);
    switch (rnd_below(3)) {
    case 0:
      for (; p < len; p++)
        if (doc[p] == ' ' || doc[p] == '\n') break;
      *start = *end = p;
      ins[0] = rnd_below(2) ? ' ' : '\n';
      *ins_len = 1;
      return;
    case 1:
      for (; p + 1 < len; p++)
        if (isalpha((unsigned char)doc[p]) && isalpha((unsigned char)doc[p + 1])) break;
      *start = *end = p + 1 < len ? p + 1 : len;
      ins[0] = 'q';
      *ins_len = 1;
      return;
    default: {
      while (p > 0 && doc[p - 1] != '\n') p--; /* the start of a line */
      size_t e = p;
      while (e < len && doc[e] != '\n') e++;
      if (e < len) e++;
      size_t n = e - p < ins_cap ? e - p : 0;
      memcpy(ins, doc + p, n);
      *start = *end = p;
      *ins_len = n;
      return;
    }
    }
  }
  switch (rnd_below(4)) {
  case 0: /* delete up to 12 bytes */
    *end = *start + rnd_below(13);
    break;
  case 1: { /* insert a fragment */
    const char *f = k_fragments[rnd_below(sizeof k_fragments / sizeof k_fragments[0])];
    *ins_len = strlen(f);
    memcpy(ins, f, *ins_len);
    break;
  }
  case 2: { /* replace a few bytes with a fragment */
    *end = *start + rnd_below(6);
    const char *f = k_fragments[rnd_below(sizeof k_fragments / sizeof k_fragments[0])];
    *ins_len = strlen(f);
    memcpy(ins, f, *ins_len);
    break;
  }
  default: { /* copy a slice of the document */
    size_t from = rnd_below(len + 1), n = rnd_below(40);
    if (from + n > len) n = len - from;
    if (n > ins_cap) n = ins_cap;
    memcpy(ins, doc + from, n);
    *ins_len = n;
    break;
  }
  }
  if (*end > len) *end = len;
}

/* The edit log, so that the edits can be undone at the end. */
typedef struct {
  size_t start, ins_len, del_len;
  char del[16];
} logged_edit;

static bool check_against_fresh(const sample *s, sc_syntax_tree *t, const char *ref, size_t len,
                                int e, size_t *diverged) {
  sc_error err = {0};
  char why[256];
  sc_syntax_tree *fresh = NULL;
  if (sc_syntax_tree_new(s->lang, ref, len, &fresh, &err) != SC_OK) {
    EXPECTF(0, "%s: fresh parse failed: %s", s->lang, err.msg);
    return false;
  }
  bool ok = true;
  size_t ne = sc_syntax_tree_error_count(t), nf = sc_syntax_tree_error_count(fresh);
  if (!consistent_tree(sc_syntax_tree_root(t), ref, len, why, sizeof why)) {
    EXPECTF(0, "%s edit %d: inconsistent incremental tree: %s", s->lang, e, why);
    ok = false;
  } else if (!same_tree(sc_syntax_tree_root(t), sc_syntax_tree_root(fresh), why, sizeof why)) {
    /* tree-sitter may recover from a syntax error differently when it reuses
     * old nodes (its own fuzzer compares trees only once the errors are
     * undone), so a difference is a failure only when either parse is clean. */
    if (ne == 0 || nf == 0) {
      char *a = NULL, *b = NULL;
      sc_syntax_tree_sexp(t, &a, NULL);
      sc_syntax_tree_sexp(fresh, &b, NULL);
      EXPECTF(0, "%s edit %d: incremental (%zu errors) != fresh (%zu errors) at %s\n"
                 "  incr:  %.600s\n  fresh: %.600s",
              s->lang, e, ne, nf, why, a ? a : "", b ? b : "");
      free(a);
      free(b);
      ok = false;
    } else {
      (*diverged)++;
    }
  }
  sc_syntax_tree_free(fresh);
  return ok;
}

/* Rounds of a few random edits each, every one checked against a fresh
 * parse; each round is then undone step by step (checked too) and must end
 * with exactly the original clean tree, as tree-sitter's own fuzzer does. */
static void test_incremental_equals_fresh(void) {
  enum { ROUNDS = 30, MAX_EDITS = 8 };
  fprintf(stderr, "seed %#llx\n", (unsigned long long)g_rng);
  for (size_t i = 0; i < sizeof k_samples / sizeof k_samples[0]; i++) {
    const sample *s = &k_samples[i];
    sc_error err = {0};
    sc_syntax_tree *t = NULL;
    REQUIRE(sc_syntax_tree_new(s->lang, s->src, strlen(s->src), &t, &err) == SC_OK);
    EXPECT_STREQ(sc_syntax_tree_language(t), s->lang);
    EXPECTF(sc_syntax_tree_error_count(t) == 0, "%s sample does not parse cleanly", s->lang);
    size_t orig_len = strlen(s->src), cap = orig_len + MAX_EDITS * 64 + 1, len = orig_len;
    char *ref = malloc(cap);
    REQUIRE(ref);
    memcpy(ref, s->src, len);
    bool ok = true;
    size_t with_errors = 0, clean = 0, diverged = 0, checked = 0;
    for (int r = 0; r < ROUNDS && ok; r++) {
      logged_edit log[MAX_EDITS];
      int n = 1 + (int)rnd_below(MAX_EDITS), e = 0;
      for (; e < n && ok; e++) {
        size_t start, end, ins_len;
        char ins[64];
        random_edit(ref, len, &start, &end, ins, &ins_len, sizeof ins);
        if (g_verbose)
          fprintf(stderr, "%s round %d edit %d: [%zu,%zu) <- \"%.*s\"\n", s->lang, r, e, start,
                  end, (int)ins_len, ins);
        if (sc_syntax_tree_edit(t, start, end, ins, ins_len, &err) != SC_OK) {
          EXPECTF(0, "%s edit %d: %s", s->lang, e, err.msg);
          ok = false;
          break;
        }
        log[e] = (logged_edit){.start = start, .ins_len = ins_len, .del_len = end - start};
        memcpy(log[e].del, ref + start, end - start);
        memmove(ref + start + ins_len, ref + end, len - end);
        memcpy(ref + start, ins, ins_len);
        len = len - (end - start) + ins_len;
        size_t tlen = 0;
        const char *text = sc_syntax_tree_text(t, &tlen);
        if (tlen != len || memcmp(text, ref, len) != 0 || text[len] != '\0') {
          EXPECTF(0, "%s edit %d: tree text differs from the reference", s->lang, e);
          ok = false;
          break;
        }
        ok = check_against_fresh(s, t, ref, len, r * 100 + e, &diverged);
        checked++;
        if (sc_syntax_tree_error_count(t)) with_errors++;
        else clean++;
      }
      for (int u = e - 1; u >= 0 && ok; u--) {
        const logged_edit *l = &log[u];
        if (sc_syntax_tree_edit(t, l->start, l->start + l->ins_len, l->del, l->del_len, &err) !=
            SC_OK) {
          EXPECTF(0, "%s undo %d: %s", s->lang, u, err.msg);
          ok = false;
          break;
        }
        memmove(ref + l->start + l->del_len, ref + l->start + l->ins_len,
                len - l->start - l->ins_len);
        memcpy(ref + l->start, l->del, l->del_len);
        len = len - l->ins_len + l->del_len;
        ok = check_against_fresh(s, t, ref, len, r * 100 + 50 + u, &diverged);
        checked++;
      }
      if (!ok) break;
      size_t tlen = 0;
      const char *text = sc_syntax_tree_text(t, &tlen);
      EXPECTF(tlen == orig_len && memcmp(text, s->src, tlen) == 0,
              "%s round %d: undoing the edits did not restore the text", s->lang, r);
      EXPECTF(sc_syntax_tree_error_count(t) == 0,
              "%s round %d: errors left after undoing every edit", s->lang, r);
    }
    /* Both sides must have been compared: clean states and broken ones. */
    EXPECTF(!ok || (with_errors > 0 && clean > 0), "%s: %zu edits with errors, %zu clean",
            s->lang, with_errors, clean);
    fprintf(stderr, "  %-10s %zu trees compared; edits left %zu clean, %zu with errors "
                    "(%zu recovered differently)\n",
            s->lang, checked, clean, with_errors, diverged);
    free(ref);
    sc_syntax_tree_free(t);
  }
}

/* The comparison itself must notice a wrong reparse: reparsing with an old
 * tree that was NOT told about the edit gives a tree that differs. */
static void test_comparator_catches_stale_reuse(void) {
  const char *a = "int f(void) {\n  return 1;\n}\nint g(void) { return 2; }\n";
  const char *b = "int f(void) {\n  /* x */ return 1;\n}\nint g(void) { return 2; }\n";
  TSParser *p = ts_parser_new();
  REQUIRE(p && ts_parser_set_language(p, sc_context_ts_language("c")));
  TSTree *old = ts_parser_parse_string(p, NULL, a, (uint32_t)strlen(a));
  TSTree *stale = ts_parser_parse_string(p, old, b, (uint32_t)strlen(b)); /* no ts_tree_edit */
  TSTree *fresh = ts_parser_parse_string(p, NULL, b, (uint32_t)strlen(b));
  char why[256];
  EXPECT(!same_tree(ts_tree_root_node(stale), ts_tree_root_node(fresh), why, sizeof why));
  EXPECT(same_tree(ts_tree_root_node(fresh), ts_tree_root_node(fresh), why, sizeof why));
  ts_tree_delete(old);
  ts_tree_delete(stale);
  ts_tree_delete(fresh);
  ts_parser_delete(p);
}

static void test_edit_edges(void) {
  sc_error err = {0};
  sc_syntax_tree *t = NULL;
  const char *src = "int x = 1;\n";
  REQUIRE(sc_syntax_tree_new("c", src, strlen(src), &t, &err) == SC_OK);
  /* Out of range and reversed ranges are refused and change nothing. */
  EXPECT(sc_syntax_tree_edit(t, 5, 100, "y", 1, &err) == SC_ERR_INVALID);
  EXPECT(sc_syntax_tree_edit(t, 6, 5, "y", 1, &err) == SC_ERR_INVALID);
  size_t len;
  EXPECT_STREQ(sc_syntax_tree_text(t, &len), src);
  /* Insert at 0, append at the end, an empty edit. */
  EXPECT(sc_syntax_tree_edit(t, 0, 0, "// hi\n", 6, &err) == SC_OK);
  EXPECT(sc_syntax_tree_edit(t, 17, 17, "int y;\n", 7, &err) == SC_OK);
  EXPECT(sc_syntax_tree_edit(t, 3, 3, NULL, 0, &err) == SC_OK);
  EXPECT_STREQ(sc_syntax_tree_text(t, &len), "// hi\nint x = 1;\nint y;\n");
  EXPECT(sc_syntax_tree_error_count(t) == 0);
  /* The new text may alias the tree's own buffer (copying a line). */
  const char *own = sc_syntax_tree_text(t, &len);
  EXPECT(sc_syntax_tree_edit(t, len, len, own + 6, 11, &err) == SC_OK);
  EXPECT_STREQ(sc_syntax_tree_text(t, &len), "// hi\nint x = 1;\nint y;\nint x = 1;\n");
  /* A full reparse keeps the text and gives the same clean tree. */
  char *before = NULL, *after = NULL;
  EXPECT(sc_syntax_tree_sexp(t, &before, &err) == SC_OK);
  EXPECT(sc_syntax_tree_reparse(t, &err) == SC_OK);
  EXPECT(sc_syntax_tree_sexp(t, &after, &err) == SC_OK);
  EXPECT(before && after && strcmp(before, after) == 0);
  free(before);
  free(after);
  /* Full replacement. */
  EXPECT(sc_syntax_tree_set_text(t, "", 0, &err) == SC_OK);
  EXPECT_STREQ(sc_syntax_tree_text(t, &len), "");
  EXPECT(len == 0);
  sc_syntax_tree_free(t);

  EXPECT(sc_syntax_tree_new("cobol", "x", 1, &t, &err) == SC_ERR_UNSUPPORTED && t == NULL);
  EXPECT(sc_syntax_tree_new("c", NULL, 3, &t, &err) == SC_ERR_INVALID);
  sc_syntax_tree_free(NULL);
}

static void test_error_ranges(void) {
  sc_error err = {0};
  sc_syntax_tree *t = NULL;
  /* A missing ';' (tree-sitter inserts a MISSING node) and a stray ')'. */
  const char *src = "int a = 1\nint b;\nint c = );\n";
  REQUIRE(sc_syntax_tree_new("c", src, strlen(src), &t, &err) == SC_OK);
  sc_syntax_error *v = NULL;
  size_t n = 0;
  REQUIRE(sc_syntax_tree_errors(t, &v, &n, &err) == SC_OK);
  EXPECT(n == sc_syntax_tree_error_count(t));
  EXPECT(n >= 2);
  bool saw_missing = false, saw_error_line3 = false;
  for (size_t i = 0; i < n; i++) {
    EXPECT(v[i].start_byte <= v[i].end_byte && v[i].end_byte <= strlen(src));
    if (i) EXPECT(v[i - 1].start_byte <= v[i].start_byte); /* document order */
    if (v[i].missing) {
      saw_missing = true;
      EXPECT(v[i].start_byte == v[i].end_byte);
      EXPECT(v[i].start.row == 0 && v[i].start.column == 9); /* right after "1" */
    } else if (v[i].start.row == 2) {
      saw_error_line3 = true;
    }
  }
  EXPECT(saw_missing);
  EXPECT(saw_error_line3);
  free(v);
  /* Fixing the text by edits clears the errors. */
  EXPECT(sc_syntax_tree_edit(t, 9, 9, ";", 1, &err) == SC_OK);
  EXPECT(sc_syntax_tree_edit(t, 26, 27, "2", 1, &err) == SC_OK);
  size_t len;
  EXPECT_STREQ(sc_syntax_tree_text(t, &len), "int a = 1;\nint b;\nint c = 2;\n");
  EXPECT(sc_syntax_tree_error_count(t) == 0);
  REQUIRE(sc_syntax_tree_errors(t, &v, &n, &err) == SC_OK);
  EXPECT(n == 0 && v == NULL);
  /* A copy is independent of its source. */
  sc_syntax_tree *c = NULL;
  REQUIRE(sc_syntax_tree_copy(t, &c, &err) == SC_OK);
  EXPECT(sc_syntax_tree_edit(c, 0, 0, "}", 1, &err) == SC_OK);
  EXPECT(sc_syntax_tree_error_count(c) > 0);
  EXPECT(sc_syntax_tree_error_count(t) == 0);
  EXPECT_STREQ(sc_syntax_tree_text(t, &len), "int a = 1;\nint b;\nint c = 2;\n");
  sc_syntax_tree_free(c);
  sc_syntax_tree_free(t);
}

/* A deep parse's stack is given back: tree-sitter recursed once a level
 * (200,000 unclosed '(' in TypeScript, edited, needed more than 8 MB), and
 * the pages it touched stayed resident on the language server's worker
 * for good. Run on a thread made as a worker is, with the stack for the
 * text, so that the parse runs in place. */
#define DEEP_N 100000

/* Resident bytes of the calling thread's stack from its low end to 128 KB
 * below the caller's frame. */
static size_t stack_resident_below(void) {
  pthread_attr_t a;
  void *low = NULL;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &a) != 0) return 0;
  pthread_attr_getstack(&a, &low, &size);
  pthread_attr_destroy(&a);
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)low + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)__builtin_frame_address(0) - ((uintptr_t)128 << 10)) & ~(page - 1);
  if (hi <= lo) return 0;
  size_t pages = (hi - lo) / page, resident = 0;
  unsigned char *v = malloc(pages);
  if (v && mincore((void *)lo, hi - lo, v) == 0)
    for (size_t i = 0; i < pages; i++) resident += v[i] & 1;
  free(v);
  return resident * page;
}

typedef struct {
  size_t touched_kb, kept_kb;
} deep_result;

static void *deep_parse_main(void *arg) {
  deep_result *r = arg;
  char *text = malloc(DEEP_N + 1);
  memset(text, '(', DEEP_N);
  text[DEEP_N] = '\n';
  sc_syntax_tree *t = NULL;
  sc_error err = {0};
  size_t before = stack_resident_below();
  if (sc_syntax_tree_new("typescript", text, DEEP_N + 1, &t, &err) == SC_OK &&
      sc_syntax_tree_edit(t, DEEP_N / 8, DEEP_N / 8, "f\":", 3, &err) == SC_OK) {
    r->kept_kb = (stack_resident_below() - before) >> 10;
  } else {
    fprintf(stderr, "deep parse: %s\n", err.msg);
  }
  sc_syntax_tree_free(t);
  free(text);
  return NULL;
}

static void test_deep_parse_gives_its_stack_back(void) {
  deep_result r = {0, SIZE_MAX};
  pthread_t th;
  REQUIRE(sc_thread_start(&th, sc_syntax_parse_stack_size(DEEP_N + 4) + ((size_t)1 << 20),
                          deep_parse_main, &r) == 0);
  pthread_join(th, NULL);
  EXPECTF(r.kept_kb < 1024, "%zu KB of the deep parse's stack stayed resident", r.kept_kb);
}

/* The ancestry and the parent of an empty node under deep nesting: a
 * MISSING token at the bottom of thousands of unclosed levels. tree-sitter
 * 0.25.1's ts_node_parent recursed once a level for an empty node and
 * overflowed the stack (fuzz_syntax's crash-728bac676163);
 * sc_syntax_ancestry and sc_syntax_parent walk a tree cursor instead. Run
 * on a 256 KB stack, where a frame a level cannot fit. */
#define NEST_N 20000

typedef struct {
  int found;      /* a MISSING node under the nesting */
  size_t depth;   /* its ancestry's length */
  bool parent_ok; /* sc_syntax_parent gave the ancestry's second node */
} nest_result;

static void *nest_main(void *arg) {
  nest_result *r = arg;
  /* C++: "<<EOF" a line, NEST_N times: a chain of shifts nested to the
   * left whose first operand, at byte 0, is a MISSING identifier (what the
   * fuzzer's 15 bytes made, at 21,845 lines). */
  size_t cap = (size_t)NEST_N * 6 + 1;
  char *text = malloc(cap);
  size_t n = 0;
  for (int i = 0; i < NEST_N; i++, n += 6) memcpy(text + n, "<<EOF\n", 6);
  sc_syntax_tree *t = NULL;
  sc_error err = {0};
  if (sc_syntax_tree_new("cpp", text, n, &t, &err) != SC_OK) {
    fprintf(stderr, "nest parse: %s\n", err.msg);
    free(text);
    return NULL;
  }
  /* The deepest MISSING node, found with a cursor (itself iterative). */
  TSTreeCursor c = ts_tree_cursor_new(sc_syntax_tree_root(t));
  TSNode missing = {0};
  size_t best = 0, depth = 0;
  for (;;) {
    TSNode cur = ts_tree_cursor_current_node(&c);
    if (ts_node_is_missing(cur) && depth >= best) {
      missing = cur;
      best = depth;
    }
    if (ts_tree_cursor_goto_first_child(&c)) {
      depth++;
      continue;
    }
    while (!ts_tree_cursor_goto_next_sibling(&c)) {
      if (!ts_tree_cursor_goto_parent(&c)) goto walked;
      depth--;
    }
  }
walked:
  ts_tree_cursor_delete(&c);
  if (!ts_node_is_null(missing) && best > 1000) {
    r->found = 1;
    TSNode *up = NULL;
    r->depth = sc_syntax_ancestry(missing, &up);
    r->parent_ok = r->depth > 1 && ts_node_eq(sc_syntax_parent(missing), up[1]) &&
                   ts_node_is_null(sc_syntax_parent(sc_syntax_tree_root(t)));
    free(up);
  } else {
    fprintf(stderr, "nest: deepest MISSING node at depth %zu\n", best);
  }
  sc_syntax_tree_free(t);
  free(text);
  return NULL;
}

static void test_empty_node_under_deep_nesting(void) {
  nest_result r = {0};
  pthread_t th;
  /* The parse gets its own big stack inside sc_syntax_tree_new (a worker
   * of its own when the caller's is too small), so only the walks run on
   * this thread's 256 KB. */
  REQUIRE(sc_thread_start(&th, (size_t)256 << 10, nest_main, &r) == 0);
  pthread_join(th, NULL);
  EXPECT(r.found);
  EXPECTF(r.depth > 1000, "ancestry of %zu nodes", r.depth);
  EXPECT(r.parent_ok);
}

/* A parse's budget is CPU time: a parse that waits (its thread descheduled
 * on a busy machine; here, a stop callback that sleeps) is not abandoned
 * for the time it waited. Under the wall clock this parse went over its
 * budget and came back with no tree. */
typedef struct {
  double wait_ms, waited_ms; /* to wait in all; waited so far */
  int naps;
} sleepy;

static bool sleepy_stop(void *user) {
  sleepy *z = user;
  if (z->waited_ms >= z->wait_ms) return false;
  double t0 = sc_now_ms();
  struct timespec nap = {0, 50000000l}; /* 50 ms */
  nanosleep(&nap, NULL);
  z->waited_ms += sc_now_ms() - t0;
  z->naps++;
  return false;
}

static double process_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_parse_budget_is_cpu_time(void) {
  char *text = NULL;
  size_t len = 0, one = strlen(k_samples[0].src);
  REQUIRE((text = malloc(one * 400 + 1)));
  for (int i = 0; i < 400; i++, len += one) memcpy(text + len, k_samples[0].src, one);
  text[len] = '\0';
  /* What the parse costs here, unhurried (the parse may run on a thread of
   * its own, so the process's CPU clock). */
  sc_syntax_tree *t = NULL;
  double c0 = process_cpu_ms();
  REQUIRE(sc_syntax_tree_new("c", text, len, &t, NULL) == SC_OK);
  double cost = process_cpu_ms() - c0;
  sc_syntax_tree_free(t);
  /* A budget of four times that, and a parse that sleeps, in naps of 50 ms
   * as it goes, twice its budget: it must finish, with its tree. */
  long long limit = (long long)(4.0 * cost * 1e6) + 5000000ll;
  REQUIRE(sc_syntax_tree_new_unparsed("c", text, len, &t, NULL) == SC_OK);
  sc_syntax_tree_set_parse_limit(t, limit);
  sleepy z = {.wait_ms = 2.0 * (double)limit / 1e6};
  sc_error err = {0};
  sc_status st = sc_syntax_tree_parse(t, sleepy_stop, &z, &err);
  EXPECTF(st == SC_OK, "a %.0f ms CPU budget, %.0f ms of CPU and %.0f ms asleep (%d naps): %s",
          (double)limit / 1e6, cost, z.waited_ms, z.naps, err.msg);
  if (z.waited_ms < (double)limit / 1e6)
    printf("  note: the parse ended before it had waited its budget (%.0f ms, %d naps)\n",
           z.waited_ms, z.naps);
  EXPECT(st != SC_OK || sc_syntax_tree_error_count(t) == 0);
  sc_syntax_tree_free(t);
  free(text);
}

int main(void) {
  const char *seed = getenv("SCULPT_TEST_SEED");
  if (seed && *seed) g_rng = strtoull(seed, NULL, 0) | 1;
  g_verbose = getenv("SCULPT_TEST_VERBOSE") != NULL;
  RUN(test_comparator_catches_stale_reuse);
  RUN(test_edit_edges);
  RUN(test_error_ranges);
  RUN(test_incremental_equals_fresh);
  RUN(test_deep_parse_gives_its_stack_back);
  RUN(test_empty_node_under_deep_nesting);
  RUN(test_parse_budget_is_cpu_time);
  TEST_MAIN_END();
}

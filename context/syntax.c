/* syntax.c — one tree-sitter tree per document, kept in step with edits. */
#define _GNU_SOURCE /* pthread_getattr_np, syscall */
#include "context.h"
#include "syntax_impl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct sc_syntax_tree {
  const char *lang;    /* static name from the grammar table */
  TSParser *parser;    /* one per tree: parsers are not thread-safe */
  TSTree *ts;
  char *text;          /* NUL-terminated copy of the document */
  size_t len, cap;
  /* The text changed since the last parse (or was never parsed): ts, if
   * any, has the edits' positions but not their nodes. */
  bool pending;
  long long parse_limit_ns; /* 0: the default budget (context.h) */
};

const char *sc_syntax_runtime_version(void) { return SC_TREE_SITTER_VERSION; }

void sc_syntax_tree_set_parse_limit(sc_syntax_tree *t, long long ns) {
  if (t) t->parse_limit_ns = ns;
}

/* tree-sitter counts bytes in uint32_t. */
#define SC_SYNTAX_MAX_BYTES ((size_t)UINT32_MAX - 1)

/* Row and byte column of a byte offset, as TSPoint wants them. */
TSPoint sc_syntax__point_at(const char *text, size_t len, size_t byte) {
  if (byte > len) byte = len;
  uint32_t row = 0;
  size_t line_start = 0;
  for (const char *p = text, *end = text + byte;
       (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
    row++;
    line_start = (size_t)(p - text) + 1;
  }
  return (TSPoint){row, (uint32_t)(byte - line_start)};
}

/* The point reached after appending s[0..n) at point p. */
static TSPoint point_advance(TSPoint p, const char *s, size_t n) {
  if (n == 0) return p; /* s may be NULL then */
  const char *last_nl = NULL;
  for (const char *q = s, *end = s + n; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) {
    p.row++;
    last_nl = q;
  }
  if (last_nl) p.column = (uint32_t)(s + n - last_nl - 1);
  else p.column += (uint32_t)n;
  return p;
}

static sc_status reserve(sc_syntax_tree *t, size_t need, sc_error *err) {
  if (need + 1 <= t->cap) return SC_OK;
  size_t cap = t->cap ? t->cap : 256;
  while (cap < need + 1) cap *= 2;
  char *p = realloc(t->text, cap);
  SC_CHECK(p, err, SC_ERR_NOMEM, "syntax tree: out of memory for %zu bytes", cap);
  t->text = p;
  t->cap = cap;
  return SC_OK;
}

/* A stop callback is asked at most this often: tree-sitter calls the
 * progress callback every hundred or so parse operations, far more often
 * than a cancellation needs checking. */
#define STOP_CHECK_NS 2000000ll

static long long now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000ll + now.tv_nsec;
}

typedef struct {
  sc_syntax_stop_fn stop;
  void *user;
  long long last;
  sc_cpu_budget budget; /* CPU time of the parsing thread (context.h) */
  bool stopped, over;
} parse_progress;

static bool parse_progress_cb(TSParseState *state) {
  parse_progress *pp = state->payload;
  long long now = now_ns();
  if (now - pp->last < STOP_CHECK_NS) return false;
  pp->last = now;
  if (sc_cpu_budget_over(&pp->budget)) pp->over = true;
  else if (pp->stop && pp->stop(pp->user)) pp->stopped = true;
  return pp->stopped || pp->over; /* true halts the parse */
}

/* TSInput over one NUL-terminated buffer. */
static const char *read_text(void *payload, uint32_t byte, TSPoint pos, uint32_t *n) {
  (void)pos;
  const sc_syntax_tree *t = payload;
  if (byte >= t->len) {
    *n = 0;
    return "";
  }
  *n = (uint32_t)(t->len - byte);
  return t->text + byte;
}

/* Parses t->text, from old (t->ts, edited, for an incremental parse; NULL:
 * from scratch), within its time budget. With stop, stop is asked every few
 * milliseconds while the parse runs (tree-sitter's progress callback);
 * stopped: SC_ERR_CANCELLED; past the budget: SC_ERR_UNSUPPORTED; either
 * way the parser is reset and the tree is left as it was (still pending). */
static sc_status parse_here(sc_syntax_tree *t, TSTree *old, sc_syntax_stop_fn stop, void *user,
                            sc_error *err) {
  TSInput input = {.payload = t, .read = read_text, .encoding = TSInputEncodingUTF8};
  const long long start = now_ns(),
                  limit = t->parse_limit_ns > 0
                              ? t->parse_limit_ns
                              : SC_SYNTAX_PARSE_BUDGET_NS +
                                    (long long)t->len * SC_SYNTAX_PARSE_NS_PER_BYTE;
  parse_progress pp = {.stop = stop, .user = user, .last = start};
  sc_cpu_budget_start(&pp.budget, limit);
  TSParseOptions opts = {.payload = &pp, .progress_callback = parse_progress_cb};
  TSTree *next = ts_parser_parse_with_options(t->parser, old, input, opts);
  if (!next && (pp.stopped || pp.over)) {
    ts_parser_reset(t->parser);
    if (pp.over)
      return sc_error_set(err, SC_ERR_UNSUPPORTED,
                          "parsing %s (%zu bytes) took over %.1f s (tree-sitter's error "
                          "recovery on this text); it has no syntax tree",
                          t->lang, t->len, (double)limit / 1e9);
    return sc_error_set(err, SC_ERR_CANCELLED, "parsing %s (%zu bytes) was stopped", t->lang,
                        t->len);
  }
  if (!next && old) { /* should not happen unless halted; try from scratch */
    ts_parser_reset(t->parser);
    next = ts_parser_parse_with_options(t->parser, NULL, input, (TSParseOptions){0});
  }
  SC_CHECK(next, err, SC_ERR_INTERNAL, "tree-sitter returned no tree for %s (%zu bytes)",
           t->lang, t->len);
  if (t->ts) ts_tree_delete(t->ts);
  t->ts = next;
  t->pending = false;
  return SC_OK;
}

/* The stack a parse may need. tree-sitter recurses once a level where it
 * merges two GLR stack versions (stack.c, stack_node_add_link), and a parse
 * stack holds up to a node a byte: 28,000 unclosed '(' in TypeScript, then
 * an edit among them, took 2.5 MB of stack in a release build and
 * overflowed the 8 MB of a sanitized one (fuzz_syntax, 2026-12-06:
 * tests/fuzz/syntax_regressions/fuzz-long-crash-423088db4813); upstream
 * lists more such recursion (tree-sitter issue #5807). An overflow cannot
 * be caught, so a parse runs where the stack has room for its text: here
 * when the calling thread's stack does (a keystroke's reparse of a usual
 * file), else on a thread of its own with that much stack, reserved and
 * only touched as used. That input, widened to 65,535 '(' in 128 KB of
 * text, needed between 64 and 96 bytes of stack a byte of text in a
 * release build and between 256 and 512 in a sanitized one; a text of
 * nothing but openers could need twice that, hence the margins. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define PARSE_STACK_PER_BYTE 4096u
#else
#define PARSE_STACK_PER_BYTE 512u
#endif
#define PARSE_STACK_BASE ((size_t)1 << 20)
#define PARSE_STACK_MAX ((size_t)1 << 30)

size_t sc_syntax_parse_stack_size(size_t len) {
  if (len > (PARSE_STACK_MAX - PARSE_STACK_BASE) / PARSE_STACK_PER_BYTE) return PARSE_STACK_MAX;
  return PARSE_STACK_BASE + len * PARSE_STACK_PER_BYTE;
}

/* The lowest address of the calling thread's stack, asked once a thread:
 * 0 not asked yet, 1 unknown. */
static _Thread_local uintptr_t t_stack_low;

/* Bytes of stack left below the caller's frame; 0 when unknown. */
static size_t stack_left(void) {
  if (!t_stack_low) {
    t_stack_low = 1;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      void *low = NULL;
      size_t size = 0;
      if (pthread_attr_getstack(&a, &low, &size) == 0 && low) t_stack_low = (uintptr_t)low;
      pthread_attr_destroy(&a);
    }
  }
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  return t_stack_low > 1 && sp > t_stack_low ? (size_t)(sp - t_stack_low) : 0;
}

/* Below this, a parse cannot have gone deep enough to matter. */
#define STACK_RELEASE_MIN_TEXT ((size_t)64 << 10)

/* Gives back the pages of the calling thread's stack below its frame, less
 * 64 KB for the calls that follow: what a deep parse touched there stays
 * resident otherwise, for as long as the thread lives (a language server
 * worker: 9 MB after 100,000 unclosed '(' edited, hundreds of MB for 2 MB
 * of them). Not on the main thread, whose stack bounds are an estimate
 * from the rlimit, with other mappings possibly inside them; a thread's
 * is its own mapping. */
static void release_stack_below(void) {
  if (t_stack_low <= 1 || (pid_t)syscall(SYS_gettid) == getpid()) return;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t low = (t_stack_low + page - 1) & ~(page - 1);
  uintptr_t high = ((uintptr_t)__builtin_frame_address(0) - ((uintptr_t)64 << 10)) & ~(page - 1);
  if (high > low) madvise((void *)low, high - low, MADV_DONTNEED);
}

typedef struct {
  sc_syntax_tree *t;
  TSTree *old;
  sc_syntax_stop_fn stop;
  void *user;
  sc_error *err;
  sc_status status;
} parse_call;

static void *parse_main(void *arg) {
  parse_call *c = arg;
  c->status = parse_here(c->t, c->old, c->stop, c->user, c->err);
  return NULL;
}

/* parse_here with stack enough for the text (above). A thread that cannot
 * be had leaves the tree as it was, with an error, as a parse past its
 * budget does. */
static sc_status parse_text(sc_syntax_tree *t, TSTree *old, sc_syntax_stop_fn stop, void *user,
                            sc_error *err) {
  size_t need = sc_syntax_parse_stack_size(t->len);
  if (stack_left() >= need) {
    sc_status st = parse_here(t, old, stop, user, err);
    if (t->len >= STACK_RELEASE_MIN_TEXT) release_stack_below();
    return st;
  }
  if (need > sc_thread_stack_budget())
    return sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "parsing %s (%zu bytes) may need a %zu MB stack, more than this "
                        "process's address space bound leaves for one (ulimit -v or strict "
                        "overcommit); it has no syntax tree",
                        t->lang, t->len, need >> 20);
  parse_call c = {t, old, stop, user, err, SC_ERR_INTERNAL};
  pthread_t th;
  int rc = sc_thread_start(&th, need, parse_main, &c);
  if (rc != 0)
    return sc_error_set(err, SC_ERR_NOMEM,
                        "parsing %s (%zu bytes) needs a %zu MB stack and no thread with one "
                        "could start (%s); it has no syntax tree",
                        t->lang, t->len, need >> 20, strerror(rc));
  pthread_join(th, NULL);
  return c.status;
}

static sc_status parse(sc_syntax_tree *t, TSTree *old, sc_error *err) {
  return parse_text(t, old, NULL, NULL, err);
}

static sc_status tree_alloc(const char *lang, sc_syntax_tree **out, sc_error *err) {
  const TSLanguage *ts_lang = sc_context_ts_language(lang);
  SC_CHECK(ts_lang, err, SC_ERR_UNSUPPORTED, "no grammar for language '%s'",
           lang ? lang : "(null)");
  uint32_t abi = ts_language_abi_version(ts_lang);
  SC_CHECK(abi >= TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION &&
               abi <= TREE_SITTER_LANGUAGE_VERSION,
           err, SC_ERR_UNSUPPORTED,
           "grammar %s has ABI %u; the tree-sitter runtime takes %d..%d", lang, abi,
           TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION, TREE_SITTER_LANGUAGE_VERSION);
  sc_syntax_tree *t = calloc(1, sizeof *t);
  SC_CHECK(t, err, SC_ERR_NOMEM, "syntax tree: out of memory");
  /* The table's static name, so the pointer outlives the caller's string. */
  t->lang = sc_syntax__language_name(lang);
  t->parser = ts_parser_new();
  if (!t->parser || !ts_parser_set_language(t->parser, ts_lang)) {
    sc_syntax_tree_free(t);
    return sc_error_set(err, SC_ERR_UNSUPPORTED, "tree-sitter refused the %s grammar", lang);
  }
  *out = t;
  return SC_OK;
}

sc_status sc_syntax_tree_new(const char *lang, const char *text, size_t len,
                             sc_syntax_tree **out, sc_error *err) {
  SC_TRY(sc_syntax_tree_new_unparsed(lang, text, len, out, err));
  sc_status s = sc_syntax_tree_parse(*out, NULL, NULL, err);
  if (s != SC_OK) {
    sc_syntax_tree_free(*out);
    *out = NULL;
  }
  return s;
}

void sc_syntax_tree_free(sc_syntax_tree *t) {
  if (!t) return;
  if (t->ts) ts_tree_delete(t->ts);
  if (t->parser) ts_parser_delete(t->parser);
  free(t->text);
  free(t);
}

sc_status sc_syntax_tree_copy(const sc_syntax_tree *src, sc_syntax_tree **out, sc_error *err) {
  SC_CHECK(src && out, err, SC_ERR_INVALID, "sc_syntax_tree_copy: NULL argument");
  *out = NULL;
  sc_syntax_tree *t = NULL;
  SC_TRY(tree_alloc(src->lang, &t, err));
  sc_status s = reserve(t, src->len, err);
  if (s != SC_OK) {
    sc_syntax_tree_free(t);
    return s;
  }
  memcpy(t->text, src->text, src->len + 1);
  t->len = src->len;
  t->pending = src->pending;
  t->parse_limit_ns = src->parse_limit_ns;
  t->ts = src->ts ? ts_tree_copy(src->ts) : NULL;
  if (src->ts && !t->ts) {
    sc_syntax_tree_free(t);
    return sc_error_set(err, SC_ERR_NOMEM, "syntax tree: ts_tree_copy failed");
  }
  *out = t;
  return SC_OK;
}

sc_status sc_syntax_tree_set_text(sc_syntax_tree *t, const char *text, size_t len,
                                  sc_error *err) {
  SC_CHECK(t, err, SC_ERR_INVALID, "sc_syntax_tree_set_text: tree is NULL");
  SC_CHECK(text || len == 0, err, SC_ERR_INVALID, "sc_syntax_tree_set_text: text is NULL");
  SC_CHECK(len <= SC_SYNTAX_MAX_BYTES, err, SC_ERR_UNSUPPORTED,
           "document of %zu bytes is too large to parse", len);
  SC_TRY(reserve(t, len, err));
  if (len) memmove(t->text, text, len);
  t->text[len] = '\0';
  t->len = len;
  return parse(t, NULL, err);
}

sc_status sc_syntax_tree_new_unparsed(const char *lang, const char *text, size_t len,
                                      sc_syntax_tree **out, sc_error *err) {
  SC_CHECK(out, err, SC_ERR_INVALID, "sc_syntax_tree_new_unparsed: out is NULL");
  *out = NULL;
  SC_CHECK(text || len == 0, err, SC_ERR_INVALID, "sc_syntax_tree_new_unparsed: text is NULL");
  SC_CHECK(len <= SC_SYNTAX_MAX_BYTES, err, SC_ERR_UNSUPPORTED,
           "document of %zu bytes is too large to parse", len);
  sc_syntax_tree *t = NULL;
  SC_TRY(tree_alloc(lang, &t, err));
  sc_status s = reserve(t, len, err);
  if (s != SC_OK) {
    sc_syntax_tree_free(t);
    return s;
  }
  if (len) memcpy(t->text, text, len);
  t->text[len] = '\0';
  t->len = len;
  t->pending = true;
  *out = t;
  return SC_OK;
}

sc_status sc_syntax_tree_edit_unparsed(sc_syntax_tree *t, size_t start, size_t old_end,
                                       const char *new_text, size_t new_len, sc_error *err) {
  SC_CHECK(t, err, SC_ERR_INVALID, "sc_syntax_tree_edit: tree is NULL");
  SC_CHECK(new_text || new_len == 0, err, SC_ERR_INVALID, "sc_syntax_tree_edit: text is NULL");
  SC_CHECK(start <= old_end && old_end <= t->len, err, SC_ERR_INVALID,
           "edit range [%zu, %zu) is outside the document (%zu bytes)", start, old_end,
           t->len);
  size_t tail = t->len - old_end;
  SC_CHECK(start + new_len <= SC_SYNTAX_MAX_BYTES - tail, err, SC_ERR_UNSUPPORTED,
           "document would be too large to parse");
  size_t new_total = start + new_len + tail;

  /* The points come from the text before it changes. */
  TSInputEdit e;
  e.start_byte = (uint32_t)start;
  e.old_end_byte = (uint32_t)old_end;
  e.new_end_byte = (uint32_t)(start + new_len);
  e.start_point = sc_syntax__point_at(t->text, t->len, start);
  e.old_end_point = point_advance(e.start_point, t->text + start, old_end - start);
  e.new_end_point = point_advance(e.start_point, new_text, new_len);

  /* new_text may point into our own buffer: copy it aside before moving. */
  char *ins = NULL;
  if (new_len && new_text >= t->text && new_text < t->text + t->cap) {
    ins = malloc(new_len);
    SC_CHECK(ins, err, SC_ERR_NOMEM, "syntax tree: out of memory");
    memcpy(ins, new_text, new_len);
    new_text = ins;
  }
  sc_status s = reserve(t, new_total, err);
  if (s != SC_OK) {
    free(ins);
    return s;
  }
  memmove(t->text + start + new_len, t->text + old_end, tail);
  if (new_len) memcpy(t->text + start, new_text, new_len);
  t->len = new_total;
  t->text[new_total] = '\0';
  free(ins);

  if (t->ts) ts_tree_edit(t->ts, &e);
  t->pending = true;
  return SC_OK;
}

sc_status sc_syntax_tree_edit(sc_syntax_tree *t, size_t start, size_t old_end,
                              const char *new_text, size_t new_len, sc_error *err) {
  SC_TRY(sc_syntax_tree_edit_unparsed(t, start, old_end, new_text, new_len, err));
  return parse(t, t->ts, err);
}

sc_status sc_syntax_tree_parse(sc_syntax_tree *t, sc_syntax_stop_fn stop, void *user,
                               sc_error *err) {
  SC_CHECK(t, err, SC_ERR_INVALID, "sc_syntax_tree_parse: tree is NULL");
  return t->pending ? parse_text(t, t->ts, stop, user, err) : SC_OK;
}

bool sc_syntax_tree_pending(const sc_syntax_tree *t) { return t && t->pending; }

sc_status sc_syntax_tree_reparse(sc_syntax_tree *t, sc_error *err) {
  SC_CHECK(t, err, SC_ERR_INVALID, "sc_syntax_tree_reparse: tree is NULL");
  return parse(t, NULL, err);
}

const char *sc_syntax_tree_language(const sc_syntax_tree *t) { return t ? t->lang : NULL; }

const char *sc_syntax_tree_text(const sc_syntax_tree *t, size_t *len) {
  if (!t) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = t->len;
  return t->text;
}

const TSTree *sc_syntax_tree_ts(const sc_syntax_tree *t) { return t ? t->ts : NULL; }

TSNode sc_syntax_tree_root(const sc_syntax_tree *t) { return ts_tree_root_node(t->ts); }

TSQueryCursor *sc_syntax_query_cursor_new(void) {
  TSQueryCursor *c = ts_query_cursor_new();
  if (c) ts_query_cursor_set_max_start_depth(c, SC_SYNTAX_QUERY_MAX_DEPTH);
  return c;
}

static bool query_progress_cb(TSQueryCursorState *state) {
  sc_syntax_budget *b = state->payload;
  if (!b->halted && sc_cpu_budget_over(&b->cpu)) b->halted = true;
  return b->halted;
}

void sc_syntax_query_exec(TSQueryCursor *c, const TSQuery *q, TSNode node, sc_syntax_budget *b) {
  uint32_t bytes = ts_node_end_byte(node) - ts_node_start_byte(node);
  b->halted = false;
  sc_cpu_budget_start(&b->cpu, b->limit_ns > 0 ? b->limit_ns
                                               : SC_SYNTAX_QUERY_BUDGET_NS +
                                                     (long long)bytes * SC_SYNTAX_QUERY_NS_PER_BYTE);
  b->opts = (TSQueryCursorOptions){.payload = b, .progress_callback = query_progress_cb};
  ts_query_cursor_exec_with_options(c, q, node, &b->opts);
}

/* Moves c (on the tree's root) down to node through the nodes whose range
 * holds node's, depth first. Iterative: tree-sitter 0.25.1's
 * ts_node_child_with_descendant (what ts_node_parent steps with) recurses
 * once a level when node is empty, a MISSING token say, and at a few
 * thousand levels of nesting that overflowed the stack (found by
 * fuzz_syntax: 15 bytes of generator program). An empty node can sit where
 * several siblings touch, so a branch that does not hold it is left for the
 * next; siblings that start after it end the level. False when node is not
 * in c's tree. */
static bool cursor_down_to(TSTreeCursor *c, TSNode node) {
  uint32_t s = ts_node_start_byte(node), e = ts_node_end_byte(node);
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(c);
    if (ts_node_eq(n, node)) return true;
    if (ts_node_start_byte(n) <= s && ts_node_end_byte(n) >= e &&
        ts_tree_cursor_goto_first_child(c))
      continue;
    for (;;) {
      if (ts_tree_cursor_goto_next_sibling(c) &&
          ts_node_start_byte(ts_tree_cursor_current_node(c)) <= s)
        break;
      if (!ts_tree_cursor_goto_parent(c)) return false;
    }
  }
}

size_t sc_syntax_ancestry_at(const sc_syntax_tree *t, size_t a, size_t b, TSNode **out) {
  return sc_syntax_ancestry(
      ts_node_descendant_for_byte_range(sc_syntax_tree_root(t), (uint32_t)a, (uint32_t)b), out);
}

size_t sc_syntax_ancestry(TSNode node, TSNode **out) {
  *out = NULL;
  if (ts_node_is_null(node)) return 0;
  TSNode *up = malloc(SC_SYNTAX_ANCESTRY_MAX * sizeof *up);
  if (!up) return 0;
  /* Down from the root to node, then back up the cursor's own path (kept
   * on the heap by the cursor), innermost first. */
  TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(node.tree));
  size_t k = 0;
  if (cursor_down_to(&c, node)) {
    do up[k++] = ts_tree_cursor_current_node(&c);
    while (k < SC_SYNTAX_ANCESTRY_MAX && ts_tree_cursor_goto_parent(&c));
  }
  ts_tree_cursor_delete(&c);
  if (k == 0) { /* not in its own tree: should not happen */
    free(up);
    return 0;
  }
  *out = up;
  return k;
}

TSNode sc_syntax_parent(TSNode node) {
  TSNode parent = {0};
  if (ts_node_is_null(node)) return parent;
  TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(node.tree));
  if (cursor_down_to(&c, node) && ts_tree_cursor_goto_parent(&c))
    parent = ts_tree_cursor_current_node(&c);
  ts_tree_cursor_delete(&c);
  return parent;
}

/* Visits every ERROR/MISSING node in document order, descending only into
 * subtrees that contain one (ts_node_has_error), so clean code costs little. */
typedef void (*error_visit_fn)(void *user, TSNode node);
static void walk_errors(TSNode root, error_visit_fn fn, void *user) {
  if (!ts_node_has_error(root)) return;
  TSTreeCursor c = ts_tree_cursor_new(root);
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&c);
    if (ts_node_is_error(n) || ts_node_is_missing(n)) fn(user, n);
    if (ts_node_has_error(n) && ts_tree_cursor_goto_first_child(&c)) continue;
    bool moved = false;
    while (!moved) {
      if (ts_tree_cursor_goto_next_sibling(&c)) {
        moved = true;
      } else if (!ts_tree_cursor_goto_parent(&c)) {
        ts_tree_cursor_delete(&c);
        return;
      }
    }
  }
}

static void count_one(void *user, TSNode n) {
  (void)n;
  (*(size_t *)user)++;
}

size_t sc_syntax_tree_error_count(const sc_syntax_tree *t) {
  size_t n = 0;
  if (t && t->ts) walk_errors(ts_tree_root_node(t->ts), count_one, &n);
  return n;
}

typedef struct {
  sc_syntax_error *v;
  size_t n, cap;
  bool oom;
} error_list;

static void collect_one(void *user, TSNode n) {
  error_list *l = user;
  if (l->oom) return;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    sc_syntax_error *v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      l->oom = true;
      return;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (sc_syntax_error){
      .start_byte = ts_node_start_byte(n), .end_byte = ts_node_end_byte(n),
      .start = ts_node_start_point(n), .end = ts_node_end_point(n),
      .missing = ts_node_is_missing(n)};
}

sc_status sc_syntax_tree_errors(const sc_syntax_tree *t, sc_syntax_error **out, size_t *n,
                                sc_error *err) {
  SC_CHECK(t && out && n, err, SC_ERR_INVALID, "sc_syntax_tree_errors: NULL argument");
  error_list l = {0};
  walk_errors(ts_tree_root_node(t->ts), collect_one, &l);
  if (l.oom) {
    free(l.v);
    return sc_error_set(err, SC_ERR_NOMEM, "syntax errors: out of memory");
  }
  *out = l.v;
  *n = l.n;
  return SC_OK;
}

sc_status sc_syntax_tree_sexp(const sc_syntax_tree *t, char **out, sc_error *err) {
  SC_CHECK(t && out, err, SC_ERR_INVALID, "sc_syntax_tree_sexp: NULL argument");
  *out = ts_node_string(ts_tree_root_node(t->ts));
  SC_CHECK(*out, err, SC_ERR_NOMEM, "ts_node_string: out of memory");
  return SC_OK;
}

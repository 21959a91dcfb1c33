/* test_scanner_guard.c — every grammar's external scanner is compiled
 * through grammars/scanner_guard.c.in, whose scan wrapper scans nothing at
 * a NUL byte that is not the end of the text. Upstream scanners read a
 * lookahead of 0 as the end and some run on through NULs while eof() says
 * otherwise; the runtime's error recovery asks again at each NUL it skips,
 * so a run of NULs cost a parse quadratic time (128 KB in a bash document:
 * 87 s; tests/fuzz/syntax_regressions/fuzz-long-timeout-8b5d37345272).
 *
 * Each scanner is called here as the runtime calls it, through a lexer of
 * our own over a given text: guarded and upstream (sc_upstream_<name>_scan,
 * the function the guard wraps), with every external token valid (error
 * recovery) and with each one alone. Where the lookahead is not a NUL
 * inside the text, the two must agree exactly. */
#include "sc_grammar_scanners.h"
#include "sc_test.h"

#include <stdarg.h>

#define DECLARE(n)                                                                 \
  void *tree_sitter_##n##_external_scanner_create(void);                           \
  void tree_sitter_##n##_external_scanner_destroy(void *payload);                  \
  bool tree_sitter_##n##_external_scanner_scan(void *payload, TSLexer *lexer,      \
                                               const bool *valid_symbols);         \
  bool sc_upstream_##n##_scan(void *payload, TSLexer *lexer, const bool *valid_symbols);
SC_GRAMMAR_SCANNERS(DECLARE)

typedef struct {
  const char *name;
  void *(*create)(void);
  void (*destroy)(void *);
  bool (*guarded)(void *, TSLexer *, const bool *);
  bool (*upstream)(void *, TSLexer *, const bool *);
} scanner;

#define ENTRY(n)                                                                   \
  {#n, tree_sitter_##n##_external_scanner_create,                                  \
   tree_sitter_##n##_external_scanner_destroy, tree_sitter_##n##_external_scanner_scan, \
   sc_upstream_##n##_scan},
static const scanner k_scanners[] = {SC_GRAMMAR_SCANNERS(ENTRY)};
#define N_SCANNERS (sizeof k_scanners / sizeof k_scanners[0])

/* More than any grammar's external tokens: scanners index this by their own
 * token enum. */
#define N_VALID 128

/* A lexer over [text, text + len): one byte a character, as the scanners
 * here only compare ASCII. */
typedef struct {
  TSLexer lx; /* first: the scanner's TSLexer * is this */
  const unsigned char *text;
  size_t len, pos;
  size_t advances;
} fake_lexer;

static void fake_advance(TSLexer *l, bool skip) {
  fake_lexer *f = (fake_lexer *)l;
  (void)skip;
  f->advances++;
  if (f->pos < f->len) f->pos++;
  l->lookahead = f->pos < f->len ? f->text[f->pos] : 0;
}
static void fake_mark_end(TSLexer *l) { (void)l; }
static uint32_t fake_column(TSLexer *l) { return (uint32_t)((fake_lexer *)l)->pos; }
static bool fake_range_start(const TSLexer *l) {
  (void)l;
  return false;
}
static bool fake_eof(const TSLexer *l) {
  const fake_lexer *f = (const fake_lexer *)l;
  return f->pos >= f->len;
}
static void fake_log(const TSLexer *l, const char *fmt, ...) { (void)l, (void)fmt; }

typedef struct {
  bool found;
  TSSymbol symbol;
  size_t advances;
} scan_result;

/* One scan from the text's start with a fresh scanner state. valid_only < 0:
 * every token valid; else that one alone. */
static scan_result scan_once(bool (*scan)(void *, TSLexer *, const bool *), const scanner *sc,
                             const char *text, size_t len, int valid_only) {
  bool valid[N_VALID];
  for (int i = 0; i < N_VALID; i++) valid[i] = valid_only < 0 || i == valid_only;
  fake_lexer f = {{0}, (const unsigned char *)text, len, 0, 0};
  f.lx.lookahead = len ? f.text[0] : 0;
  f.lx.advance = fake_advance;
  f.lx.mark_end = fake_mark_end;
  f.lx.get_column = fake_column;
  f.lx.is_at_included_range_start = fake_range_start;
  f.lx.eof = fake_eof;
  f.lx.log = fake_log;
  void *payload = sc->create();
  scan_result r = {0};
  r.found = scan(payload, &f.lx, valid);
  r.symbol = r.found ? f.lx.result_symbol : 0;
  r.advances = f.advances;
  sc->destroy(payload);
  return r;
}

static void test_nul_run_scans_nothing(void) {
  static char nuls[4096]; /* zeroed: a run of NULs with text after it */
  size_t upstream_advanced = 0;
  for (size_t k = 0; k < N_SCANNERS; k++) {
    const scanner *sc = &k_scanners[k];
    for (int v = -1; v < N_VALID; v++) {
      scan_result g = scan_once(sc->guarded, sc, nuls, sizeof nuls, v);
      EXPECTF(!g.found && g.advances == 0, "%s, valid %d: scanned %zu NULs (token %d)", sc->name,
              v, g.advances, g.found ? g.symbol : -1);
      upstream_advanced += scan_once(sc->upstream, sc, nuls, sizeof nuls, v).advances;
    }
  }
  /* The hazard is real, so the probe above reaches it: bash's, cpp's and
   * rust's scanners each advance through the whole run (tree-sitter-bash
   * 0.23.3 and the rest as pinned in grammars/package-lock.json). */
  EXPECTF(upstream_advanced >= sizeof nuls, "upstream scanners advanced %zu bytes",
          upstream_advanced);
}

static void expect_same(const scanner *sc, const char *what, const char *text, size_t len) {
  for (int v = -1; v < N_VALID; v++) {
    scan_result g = scan_once(sc->guarded, sc, text, len, v);
    scan_result u = scan_once(sc->upstream, sc, text, len, v);
    EXPECTF(g.found == u.found && g.symbol == u.symbol && g.advances == u.advances,
            "%s on %s, valid %d: guarded (%d, token %d, %zu) upstream (%d, token %d, %zu)",
            sc->name, what, v, g.found, g.symbol, g.advances, u.found, u.symbol, u.advances);
  }
}

static void test_elsewhere_the_scanner_decides(void) {
  /* Texts that start external tokens in one grammar or another: heredocs,
   * raw strings, comments, template strings, indentation, automatic
   * semicolons; a NUL at the very end is the end of the text. */
  static const char *const k_texts[] = {
      "<<EOF\nhello\nEOF\n", "R\"x(raw)x\"", "r#\"raw\"#", "/* block */ x", "`a ${b} c`",
      "\n    pass\n", "\n}\n", "'''doc'''", "#!/bin/sh\n", "\"\\u{41}\"", "x\n", " ",
  };
  for (size_t k = 0; k < N_SCANNERS; k++) {
    const scanner *sc = &k_scanners[k];
    for (size_t t = 0; t < sizeof k_texts / sizeof k_texts[0]; t++)
      expect_same(sc, k_texts[t], k_texts[t], strlen(k_texts[t]));
    expect_same(sc, "the end (a NUL that is eof)", "", 0);
    expect_same(sc, "a text ending in a NUL", "a\0", 2);
  }
}

int main(void) {
  RUN(test_nul_run_scans_nothing);
  RUN(test_elsewhere_the_scanner_decides);
  TEST_MAIN_END();
}

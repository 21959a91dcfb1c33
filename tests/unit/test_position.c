/* test_position.c — LSP positions to byte offsets in utf-8, utf-16 and
 * utf-32, over multi-byte text, surrogate pairs, CRLF, lone CR and invalid
 * UTF-8; clamping past line and file ends. Expected offsets are worked out by
 * hand in the table below. */
#include "lsp_impl.h"
#include "sc_test.h"

/* "aé中😀b\r\nx\ry\n\xff\xfez" — bytes:
 *   line 0: a(0) é(1-2) 中(3-5) 😀(6-9) b(10) \r\n(11-12)
 *   line 1: x(13) \r(14) y(15) \n(16)      a lone \r is a character of its line
 *   line 2: \xff(17) \xfe(18) z(19)           len 20 */
static const char k_text[] = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80" "b\r\nx\ry\n\xff\xfez";

typedef struct pcase {
  uint32_t line, ch;
  sc_pos_encoding enc;
  size_t offset;
  bool clamped;
} pcase;

static const pcase k_cases[] = {
    /* utf-16: a=1 é=1 中=1 😀=2 b=1 */
    {0, 0, SC_POS_UTF16, 0, false},   {0, 1, SC_POS_UTF16, 1, false},
    {0, 2, SC_POS_UTF16, 3, false},   {0, 3, SC_POS_UTF16, 6, false},
    {0, 4, SC_POS_UTF16, 6, false},   /* inside the surrogate pair: round down */
    {0, 5, SC_POS_UTF16, 10, false},  {0, 6, SC_POS_UTF16, 11, false},
    {0, 7, SC_POS_UTF16, 12, false},  /* one past: after the \r, where Neovim has it */
    {0, 8, SC_POS_UTF16, 11, true},   /* past the line end: clamped before \r\n */
    {0, 999, SC_POS_UTF16, 11, true},
    /* utf-32: 😀 is one unit */
    {0, 3, SC_POS_UTF32, 6, false},   {0, 4, SC_POS_UTF32, 10, false},
    {0, 5, SC_POS_UTF32, 11, false},  {0, 6, SC_POS_UTF32, 12, false},
    {0, 7, SC_POS_UTF32, 11, true},
    /* utf-8: bytes; inside a character rounds down */
    {0, 2, SC_POS_UTF8, 1, false},    {0, 3, SC_POS_UTF8, 3, false},
    {0, 4, SC_POS_UTF8, 3, false},    {0, 8, SC_POS_UTF8, 6, false},
    {0, 10, SC_POS_UTF8, 10, false},  {0, 11, SC_POS_UTF8, 11, false},
    {0, 12, SC_POS_UTF8, 12, false},  {0, 13, SC_POS_UTF8, 11, true},
    /* a lone \r is one unit of line 1; \n ends it */
    {1, 0, SC_POS_UTF16, 13, false},  {1, 1, SC_POS_UTF16, 14, false},
    {1, 2, SC_POS_UTF16, 15, false},  {1, 3, SC_POS_UTF16, 16, false},
    {1, 4, SC_POS_UTF16, 16, true},
    /* invalid bytes count as one unit each (U+FFFD) */
    {2, 0, SC_POS_UTF16, 17, false},  {2, 1, SC_POS_UTF16, 18, false},
    {2, 2, SC_POS_UTF16, 19, false},  {2, 3, SC_POS_UTF16, 20, false},
    {2, 4, SC_POS_UTF16, 20, true},
    /* past the last line: end of file */
    {3, 0, SC_POS_UTF16, 20, true},   {100, 5, SC_POS_UTF8, 20, true},
};

static void test_table(void) {
  size_t len = sizeof k_text - 1;
  REQUIRE(len == 20);
  sc_line_index idx = {0};
  REQUIRE(sc_line_index_build(&idx, k_text, len) == SC_OK);
  EXPECT(idx.n == 3);
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    const pcase *c = &k_cases[i];
    bool clamped = !c->clamped;
    size_t off = sc_pos_to_offset(k_text, len, &idx, c->line, c->ch, c->enc, &clamped);
    EXPECTF(off == c->offset, "case %zu (%u:%u %s): offset %zu, want %zu", i, c->line,
            c->ch, sc_pos_encoding_name(c->enc), off, c->offset);
    EXPECTF(clamped == c->clamped, "case %zu: clamped %d", i, clamped);
  }
  sc_line_index_free(&idx);
}

static void test_round_trip(void) {
  /* offset -> position -> offset is the identity at character starts. */
  size_t len = sizeof k_text - 1;
  sc_line_index idx = {0};
  REQUIRE(sc_line_index_build(&idx, k_text, len) == SC_OK);
  size_t starts[] = {0, 1, 3, 6, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20};
  sc_pos_encoding encs[] = {SC_POS_UTF8, SC_POS_UTF16, SC_POS_UTF32};
  for (size_t e = 0; e < 3; e++)
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
      uint32_t line, ch;
      sc_offset_to_pos(k_text, len, &idx, starts[i], encs[e], &line, &ch);
      size_t back = sc_pos_to_offset(k_text, len, &idx, line, ch, encs[e], NULL);
      EXPECTF(back == starts[i], "%s: %zu -> %u:%u -> %zu", sc_pos_encoding_name(encs[e]),
              starts[i], line, ch, back);
    }
  /* 😀 at offset 6 is utf-16 character 3, so b (10) is character 5. */
  uint32_t line, ch;
  sc_offset_to_pos(k_text, len, &idx, 10, SC_POS_UTF16, &line, &ch);
  EXPECT(line == 0 && ch == 5);
  sc_offset_to_pos(k_text, len, &idx, 10, SC_POS_UTF8, &line, &ch);
  EXPECT(line == 0 && ch == 10);
  /* Between \r and \n is the line's end as the spec has it. */
  sc_offset_to_pos(k_text, len, &idx, 12, SC_POS_UTF16, &line, &ch);
  EXPECT(line == 0 && ch == 6);
  sc_line_index_free(&idx);
}

static void test_decode(void) {
  uint32_t cp;
  EXPECT(sc_utf8_decode("\xc3\xa9", 2, 0, &cp) == 2 && cp == 0xE9);
  EXPECT(sc_utf8_decode("\xf0\x9f\x98\x80", 4, 0, &cp) == 4 && cp == 0x1F600);
  EXPECT(sc_utf8_decode("\xf0\x9f\x98", 3, 0, &cp) == 1 && cp == 0xFFFD);  /* truncated */
  EXPECT(sc_utf8_decode("\xc0\xaf", 2, 0, &cp) == 1 && cp == 0xFFFD);      /* overlong */
  EXPECT(sc_utf8_decode("\xed\xa0\x80", 3, 0, &cp) == 1 && cp == 0xFFFD);  /* surrogate */
  EXPECT(sc_utf8_decode("\xf4\x90\x80\x80", 4, 0, &cp) == 1 && cp == 0xFFFD); /* > U+10FFFF */
  EXPECT(sc_utf8_decode("\x80", 1, 0, &cp) == 1 && cp == 0xFFFD);
}

static void test_empty_and_terminators(void) {
  sc_line_index idx = {0};
  REQUIRE(sc_line_index_build(&idx, "", 0) == SC_OK);
  EXPECT(idx.n == 1);
  bool clamped;
  EXPECT(sc_pos_to_offset("", 0, &idx, 0, 0, SC_POS_UTF16, &clamped) == 0 && !clamped);
  EXPECT(sc_pos_to_offset("", 0, &idx, 0, 3, SC_POS_UTF16, &clamped) == 0 && clamped);
  /* "\r\n\r\n" is two lines plus an empty third; in "\n\r" the second
   * line holds a lone \r; "\r\r\n" is one line holding a \r, then an
   * empty one. */
  REQUIRE(sc_line_index_build(&idx, "\r\n\r\n", 4) == SC_OK);
  EXPECT(idx.n == 3 && idx.starts[1] == 2 && idx.starts[2] == 4);
  REQUIRE(sc_line_index_build(&idx, "\n\r", 2) == SC_OK);
  EXPECT(idx.n == 2 && idx.starts[1] == 1);
  EXPECT(sc_pos_to_offset("\n\r", 2, &idx, 1, 1, SC_POS_UTF16, &clamped) == 2 && !clamped);
  REQUIRE(sc_line_index_build(&idx, "\r\r\n", 3) == SC_OK);
  EXPECT(idx.n == 2 && idx.starts[1] == 3);
  EXPECT(sc_pos_to_offset("\r\r\n", 3, &idx, 0, 1, SC_POS_UTF16, &clamped) == 1 && !clamped);
  EXPECT(sc_pos_to_offset("\r\r\n", 3, &idx, 0, 2, SC_POS_UTF16, &clamped) == 2 && !clamped);
  EXPECT(sc_pos_to_offset("\r\r\n", 3, &idx, 0, 3, SC_POS_UTF16, &clamped) == 1 && clamped);
  sc_line_index_free(&idx);
}

/* Long ASCII runs (taken 8 bytes at a time) around a multi-byte character:
 * every position in every encoding, and back. */
static void test_ascii_runs(void) {
  char text[160];
  size_t len = 0;
  for (int i = 0; i < 101; i++) text[len++] = (char)('a' + i % 26);
  memcpy(text + len, "\xf0\x9f\x98\x80", 4); /* 😀: 4 bytes, 2 UTF-16 units */
  len += 4;
  for (int i = 0; i < 19; i++) text[len++] = 'z';
  text[len++] = '\n';
  sc_line_index idx = {0};
  REQUIRE(sc_line_index_build(&idx, text, len) == SC_OK);
  sc_pos_encoding encs[] = {SC_POS_UTF8, SC_POS_UTF16, SC_POS_UTF32};
  uint32_t wide[] = {4, 2, 1};
  for (int e = 0; e < 3; e++) {
    uint32_t total = 101 + wide[e] + 19;
    for (uint32_t ch = 0; ch <= total + 2; ch++) {
      size_t want = ch <= 101             ? ch
                    : ch < 101 + wide[e] ? 101
                    : ch <= total        ? ch - wide[e] + 4
                                         : 124;
      bool clamped;
      size_t off = sc_pos_to_offset(text, len, &idx, 0, ch, encs[e], &clamped);
      EXPECTF(off == want && clamped == (ch > total), "%s %u: %zu, want %zu",
              sc_pos_encoding_name(encs[e]), ch, off, want);
      uint32_t l, c;
      sc_offset_to_pos(text, len, &idx, want, encs[e], &l, &c);
      uint32_t back = ch > total ? total : ch > 101 && ch < 101 + wide[e] ? 101 : ch;
      EXPECTF(l == 0 && c == back, "%s: offset %zu -> %u:%u, want %u",
              sc_pos_encoding_name(encs[e]), want, l, c, back);
    }
  }
  sc_line_index_free(&idx);
}

/* sc_line_index_splice against a fresh build, over random edits of texts
 * made of \n, \r (\r\n pairs form and split) and letters. */
static void test_splice(void) {
  static const char alphabet[] = "\n\r\rab";
  unsigned seed = 12345;
#define NEXT() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  char text[256], next[512];
  int mismatches = 0;
  for (int round = 0; round < 4000; round++) {
    size_t len = NEXT() % 40;
    for (size_t i = 0; i < len; i++) text[i] = alphabet[NEXT() % 5];
    sc_line_index idx = {0};
    REQUIRE(sc_line_index_build(&idx, text, len) == SC_OK);
    for (int e = 0; e < 8; e++) {
      size_t a = len ? NEXT() % (len + 1) : 0;
      size_t b = a + (len - a ? NEXT() % (len - a + 1) : 0);
      if (NEXT() % 3 == 0) b = a; /* pure inserts */
      size_t ins = NEXT() % 4;
      if (len - (b - a) + ins > 200) ins = 0;
      memcpy(next, text, a);
      for (size_t i = 0; i < ins; i++) next[a + i] = alphabet[NEXT() % 5];
      memcpy(next + a + ins, text + b, len - b);
      len = len - (b - a) + ins;
      memcpy(text, next, len);
      REQUIRE(sc_line_index_splice(&idx, text, len, a, b, ins) == SC_OK);
      sc_line_index want = {0};
      REQUIRE(sc_line_index_build(&want, text, len) == SC_OK);
      bool same = want.n == idx.n;
      for (size_t k = 0; same && k < want.n; k++) same = want.starts[k] == idx.starts[k];
      if (!same && mismatches++ < 3)
        EXPECTF(same, "round %d edit %d: [%zu, %zu) <- %zu bytes: %zu starts, want %zu", round,
                e, a, b, ins, idx.n, want.n);
      sc_line_index_free(&want);
    }
    sc_line_index_free(&idx);
  }
  EXPECTF(mismatches == 0, "%d edits left an index other than a fresh build's", mismatches);
#undef NEXT
}

int main(void) {
  RUN(test_table);
  RUN(test_round_trip);
  RUN(test_decode);
  RUN(test_empty_and_terminators);
  RUN(test_ascii_runs);
  RUN(test_splice);
  TEST_MAIN_END();
}

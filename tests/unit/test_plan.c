/* test_plan.c — completion planning, table-driven from
 * tests/context/plan_cases.txt: each case is a snippet with the cursor marked
 * by █ and the kind of completion expected there. */
#include "context.h"
#include "sc_test.h"

#include <stdlib.h>
#include <string.h>

#define CURSOR "\xe2\x96\x88" /* U+2588 FULL BLOCK */

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[n] = '\0', *len = (size_t)n;
  return buf;
}

static sc_completion_kind kind_from_name(const char *name) {
  for (int k = SC_COMPLETION_NONE; k <= SC_COMPLETION_FUNCTION_BODY; k++)
    if (strcmp(name, sc_completion_kind_name((sc_completion_kind)k)) == 0)
      return (sc_completion_kind)k;
  return (sc_completion_kind)-1;
}

static int g_cases, g_kind_seen[SC_COMPLETION_FUNCTION_BODY + 1];

/* Checks one case; body is the snippet with the marker, [body, end). */
static void check_case(const char *lang, const char *want_name, const char *body, size_t n,
                       int line_no) {
  sc_completion_kind want = kind_from_name(want_name);
  EXPECTF((int)want >= 0, "plan_cases.txt:%d: unknown kind '%s'", line_no, want_name);
  const char *m = NULL;
  for (size_t i = 0; i + 3 <= n; i++)
    if (memcmp(body + i, CURSOR, 3) == 0) {
      EXPECTF(m == NULL, "plan_cases.txt:%d: two cursors", line_no);
      m = body + i;
    }
  EXPECTF(m != NULL, "plan_cases.txt:%d: no cursor", line_no);
  if (!m || (int)want < 0) return;
  size_t cursor = (size_t)(m - body), len = n - 3;
  char *text = malloc(len + 1);
  if (!text) return;
  memcpy(text, body, cursor);
  memcpy(text + cursor, m + 3, n - cursor - 3);
  text[len] = '\0';

  sc_error err = {0};
  sc_syntax_tree *t = NULL;
  if (sc_syntax_tree_new(lang, text, len, &t, &err) != SC_OK) {
    EXPECTF(0, "plan_cases.txt:%d: %s", line_no, err.msg);
    free(text);
    return;
  }
  sc_completion_plan p;
  if (sc_completion_plan_at(t, cursor, &p, &err) != SC_OK) {
    EXPECTF(0, "plan_cases.txt:%d: %s", line_no, err.msg);
  } else {
    EXPECTF(p.kind == want, "plan_cases.txt:%d (%s): want %s, got %s (%s)", line_no, lang,
            want_name, sc_completion_kind_name(p.kind), p.reason);
    EXPECT(p.reason && *p.reason);
    /* The canvas list is consistent with the kind. */
    EXPECT((p.kind == SC_COMPLETION_NONE) == (p.n_canvas == 0));
    EXPECT(p.n_canvas <= SC_COMPLETION_MAX_CANVAS);
    for (size_t i = 1; i < p.n_canvas; i++) EXPECT(p.canvas[i - 1] < p.canvas[i]);
    EXPECT(p.single_line ==
           (p.kind == SC_COMPLETION_LINE || p.kind == SC_COMPLETION_EXPRESSION));
    EXPECT(p.line_start <= cursor && cursor <= p.line_end && p.line_end <= len);
    EXPECT(memchr(text + p.line_start, '\n', p.line_end - p.line_start) == NULL);
    g_kind_seen[p.kind]++;
  }
  g_cases++;
  sc_syntax_tree_free(t);
  free(text);
}

static void test_cases_file(void) {
  size_t len = 0;
  char *data = read_file(SC_TEST_DATA_DIR "/context/plan_cases.txt", &len);
  REQUIRE(data);
  char lang[32] = "", kind[32] = "";
  const char *body = NULL;
  int header_line = 0, line_no = 1;
  for (const char *p = data; p < data + len; line_no++) {
    const char *nl = memchr(p, '\n', (size_t)(data + len - p));
    const char *next = nl ? nl + 1 : data + len;
    if (strncmp(p, "=== ", 4) == 0) {
      if (body) check_case(lang, kind, body, (size_t)(p - body), header_line);
      EXPECTF(sscanf(p + 4, "%31s %31s", lang, kind) == 2, "plan_cases.txt:%d: bad header",
              line_no);
      body = next;
      header_line = line_no;
    }
    p = next;
  }
  if (body) check_case(lang, kind, body, (size_t)(data + len - body), header_line);
  free(data);
  EXPECT(g_cases >= 60);
  /* Every kind is exercised by some case. */
  for (int k = 0; k <= SC_COMPLETION_FUNCTION_BODY; k++)
    EXPECTF(g_kind_seen[k] > 0, "no case of kind %s", sc_completion_kind_name((sc_completion_kind)k));
  fprintf(stderr, "%d cases\n", g_cases);
}

static void test_bad_cursor_and_engine_plan(void) {
  sc_syntax_tree *t = NULL;
  sc_error err = {0};
  REQUIRE(sc_syntax_tree_new("c", "int x;\n", 7, &t, &err) == SC_OK);
  sc_completion_plan p;
  EXPECT(sc_completion_plan_at(t, 8, &p, &err) == SC_ERR_INVALID);
  EXPECT(sc_completion_plan_at(t, 7, &p, &err) == SC_OK); /* the end is a valid cursor */
  EXPECT(p.kind == SC_COMPLETION_STATEMENT);
  sc_infill_plan ip;
  sc_completion_plan_to_infill(&p, &ip);
  EXPECT(ip.n_lengths == (int)p.n_canvas && ip.n_lengths > 0);
  for (int i = 0; i < ip.n_lengths; i++) EXPECT(ip.lengths[i] == (int)p.canvas[i]);
  /* An empty document: a statement at the top. */
  EXPECT(sc_syntax_tree_set_text(t, "", 0, &err) == SC_OK);
  EXPECT(sc_completion_plan_at(t, 0, &p, &err) == SC_OK && p.kind == SC_COMPLETION_STATEMENT);
  sc_syntax_tree_free(t);
}

/* The cursor's line holds the cursor: a CRLF's CR is left out of it, but a
 * cursor after a CR that ends the text stays inside (fuzz_syntax found
 * line_end 0 for the cursor 1 in "\r"). */
static void test_line_holds_cursor_at_cr(void) {
  static const struct {
    const char *text;
    size_t cursor, start, end;
  } k[] = {{"\r", 1, 0, 1}, {"x\r", 1, 0, 1}, {"x\r\ny", 1, 0, 1}, {"a;\r\nb\r", 6, 4, 6},
           {"a;\r\n", 0, 0, 2}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    sc_syntax_tree *t = NULL;
    sc_error err = {0};
    REQUIRE(sc_syntax_tree_new("cpp", k[i].text, strlen(k[i].text), &t, &err) == SC_OK);
    sc_completion_plan p;
    EXPECT(sc_completion_plan_at(t, k[i].cursor, &p, &err) == SC_OK);
    EXPECTF(p.line_start == k[i].start && p.line_end == k[i].end,
            "case %zu: line [%zu, %zu), want [%zu, %zu)", i, p.line_start, p.line_end, k[i].start,
            k[i].end);
    sc_syntax_tree_free(t);
  }
}

int main(void) {
  RUN(test_cases_file);
  RUN(test_bad_cursor_and_engine_plan);
  RUN(test_line_holds_cursor_at_cr);
  TEST_MAIN_END();
}

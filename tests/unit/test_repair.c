#define _POSIX_C_SOURCE 200809L
/* Repair once: the span of a candidate that broke the parse, and the
 * rebuilt candidate with that span rewritten. */
#include "context.h"
#include "sc_test.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *reply; /* what the "model" writes for the span */
  char head[256], span[256], tail[256];
  int calls;
  bool fail;
} fake_fill;

static sc_status fill(void *user, const char *head, size_t head_len, const char *span,
                      size_t span_len, const char *tail, size_t tail_len, char **out,
                      size_t *out_len, sc_error *err) {
  fake_fill *f = user;
  f->calls++;
  snprintf(f->head, sizeof f->head, "%.*s", (int)head_len, head);
  snprintf(f->span, sizeof f->span, "%.*s", (int)span_len, span);
  snprintf(f->tail, sizeof f->tail, "%.*s", (int)tail_len, tail);
  if (f->fail) return sc_error_set(err, SC_ERR_IO, "backend down");
  *out = strdup(f->reply);
  *out_len = strlen(f->reply);
  return SC_OK;
}

/* The span is the candidate's broken line, found by the reparse. */
static void test_span_and_repair(const char *lang, const char *doc, const char *at,
                                 const char *cand, const char *bad_line, const char *reply) {
  sc_syntax_tree *t = NULL;
  REQUIRE(sc_syntax_tree_new(lang, doc, strlen(doc), &t, NULL) == SC_OK);
  size_t cursor = (size_t)(strstr(doc, at) - doc) + strlen(at);
  sc_completion_check chk;
  REQUIRE(sc_completion_check_insert(t, cursor, cand, strlen(cand), &chk, NULL) == SC_OK);
  EXPECTF(!chk.ok, "%s: the broken candidate must fail the check", lang);
  EXPECTF(chk.span_end - chk.span_start == strlen(bad_line) &&
              memcmp(cand + chk.span_start, bad_line, strlen(bad_line)) == 0,
          "%s: span [%zu, %zu) = '%.*s', want '%s'", lang, chk.span_start, chk.span_end,
          (int)(chk.span_end - chk.span_start), cand + chk.span_start, bad_line);
  fake_fill f = {.reply = reply};
  char *out = NULL;
  size_t n = 0;
  sc_completion_check after;
  EXPECT(sc_completion_repair(t, cursor, cand, strlen(cand), &chk, fill, &f, &out, &n, &after,
                              NULL) == SC_OK);
  EXPECT(f.calls == 1);
  EXPECTF(strcmp(f.span, bad_line) == 0, "%s: fill saw span '%s'", lang, f.span);
  /* head + span + tail is the candidate. */
  char whole[1024];
  snprintf(whole, sizeof whole, "%s%s%s", f.head, f.span, f.tail);
  EXPECT(strcmp(whole, cand) == 0);
  snprintf(whole, sizeof whole, "%s%s%s", f.head, reply, f.tail);
  EXPECTF(out && strcmp(out, whole) == 0 && n == strlen(whole), "%s: repaired '%s'", lang,
          out ? out : "(null)");
  EXPECTF(after.ok, "%s: the repaired candidate parses", lang);
  free(out);

  /* A rewrite that is still broken is reported as such, not hidden. */
  f = (fake_fill){.reply = bad_line};
  EXPECT(sc_completion_repair(t, cursor, cand, strlen(cand), &chk, fill, &f, &out, &n, &after,
                              NULL) == SC_OK);
  EXPECT(out && !after.ok);
  free(out);

  /* The backend's error travels up. */
  f = (fake_fill){.reply = reply, .fail = true};
  sc_error err = {0};
  EXPECT(sc_completion_repair(t, cursor, cand, strlen(cand), &chk, fill, &f, &out, &n, &after,
                              &err) == SC_ERR_IO &&
         out == NULL);
  EXPECT(strstr(err.msg, "backend down") != NULL);
  sc_syntax_tree_free(t);
}

static void test_one_line_span_stays_one_line(void) {
  const char *doc = "int f(int v) {\n  \n}\n";
  sc_syntax_tree *t = NULL;
  REQUIRE(sc_syntax_tree_new("c", doc, strlen(doc), &t, NULL) == SC_OK);
  const char *cand = "int x = v + ;\n  return x;";
  sc_completion_check chk;
  REQUIRE(sc_completion_check_insert(t, 17, cand, strlen(cand), &chk, NULL) == SC_OK);
  REQUIRE(!chk.ok);
  fake_fill f = {.reply = "int x = v + 1;\n}\n}"};
  char *out = NULL;
  size_t n = 0;
  sc_completion_check after;
  EXPECT(sc_completion_repair(t, 17, cand, strlen(cand), &chk, fill, &f, &out, &n, &after,
                              NULL) == SC_OK);
  EXPECTF(out && strcmp(out, "int x = v + 1;\n  return x;") == 0, "got '%s'", out ? out : "");
  EXPECT(after.ok);
  free(out);
  /* A span that ends the candidate ends where the candidate did: a line
   * break the fill writes after it would be accepted with it (Tab left the
   * cursor on a new, empty line). */
  const char *cand2 = "int x = v + ;\n  return x + ;";
  REQUIRE(sc_completion_check_insert(t, 17, cand2, strlen(cand2), &chk, NULL) == SC_OK);
  REQUIRE(!chk.ok && chk.span_end == strlen(cand2));
  f = (fake_fill){.reply = "int x = v + 1;\n  return x + 1;\n\n"};
  EXPECT(sc_completion_repair(t, 17, cand2, strlen(cand2), &chk, fill, &f, &out, &n, &after,
                              NULL) == SC_OK);
  EXPECTF(out && strcmp(out, "int x = v + 1;\n  return x + 1;") == 0, "got '%s'",
          out ? out : "");
  EXPECT(after.ok && n == strlen("int x = v + 1;\n  return x + 1;"));
  free(out);
  /* No span: nothing to repair. */
  sc_completion_check clean = {.ok = true};
  EXPECT(sc_completion_repair(t, 17, cand, strlen(cand), &clean, fill, &f, &out, &n, &after,
                              NULL) == SC_ERR_INVALID);
  sc_syntax_tree_free(t);
}

static void test_cases(void) {
  test_span_and_repair("c", "int f(int v) {\n  \n}\n", "{\n  ",
                       "int x = v + ;\n  return x;", "int x = v + ;", "int x = v + 1;");
  test_span_and_repair("c", "int f(int v) {\n  \n}\n", "{\n  ",
                       "int x = v;\n  return (x * 2;", "  return (x * 2;", "  return x * 2;");
  /* CRLF: the span ends before the \r, which stays with its line break. */
  test_span_and_repair("c", "int f(int v) {\r\n  \r\n}\r\n", "{\r\n  ",
                       "int x = v + ;\r\n  return x;", "int x = v + ;", "int x = v + 1;");
  /* Multi-byte UTF-8 before the broken line: bytes, not characters. */
  test_span_and_repair("c", "int f(int v) {\n  \n}\n", "{\n  ",
                       "int x = v; /* \xc3\xa9t\xc3\xa9 */\n  return (x * 2;",
                       "  return (x * 2;", "  return x * 2;");
  test_span_and_repair("python", "def f(v):\n    \n", "    ",
                       "x = v\n    y = x +\n    return y", "    y = x +\n    return y",
                       "    y = x + 1\n    return y");
}

int main(void) {
  RUN(test_cases);
  RUN(test_one_line_span_stays_one_line);
  TEST_MAIN_END();
}

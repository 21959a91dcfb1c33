/* test_serve_shape.c — the request and response shaping of `sculpt serve`
 * (net/serve_shape.c, reached through its private header): where an answer
 * ends (stop strings, llama.cpp's n_indent), what of a growing stable
 * prefix may be streamed (stop starts and UTF-8 sequences held back), and
 * the invariant streaming rests on: over random texts, stops and growth,
 * what was streamed never passes the final answer, and the streamed pieces
 * as JSON add up to the answer as JSON. Then /infill's request assembly and
 * answer shape. */
#define _POSIX_C_SOURCE 200809L
#include "serve_impl.h"
#include "sc_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static job *make_job(const char *const *stops, int n_stop, int n_indent) {
  job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  for (int i = 0; i < n_stop; i++) j->stop[j->n_stop++] = strdup(stops[i]);
  j->n_indent = n_indent;
  j->stop_hit = -1;
  return j;
}

static size_t end_of(const job *j, const char *text, int *hit, bool *indent) {
  return sc_serve__answer_end(j, text, strlen(text), hit, indent);
}

static void test_answer_end(void) {
  const char *stops[] = {"mno", "jk", "\n\n"};
  job *j = make_job(stops, 3, 0);
  REQUIRE(j);
  int hit;
  bool indent;
  EXPECT(end_of(j, "defghijklmnop", &hit, &indent) == 6 && hit == 1 && !indent);
  EXPECT(end_of(j, "defg", &hit, &indent) == 4 && hit == -1);
  EXPECT(end_of(j, "a\n\nb jk", &hit, &indent) == 1 && hit == 2);
  sc_serve__job_free(j);
  /* n_indent as llama.cpp: a line after a newline with fewer leading blanks
   * ends the answer before its first other character; a line of blanks
   * still growing does not. */
  j = make_job(NULL, 0, 4);
  REQUIRE(j);
  EXPECT(end_of(j, "x = 1\n    y = 2\n  z = 3\n", &hit, &indent) == 18 && indent);
  EXPECT(end_of(j, "x\n\ty", &hit, &indent) == 3 && indent);
  EXPECT(end_of(j, "x\n\n    y", &hit, &indent) == 2 && indent); /* an empty line */
  EXPECT(end_of(j, "x\n    y\n  ", &hit, &indent) == 10 && !indent);
  sc_serve__job_free(j);
  const char *st[] = {"y"};
  j = make_job(st, 1, 4);
  EXPECT(end_of(j, "xy\n z", &hit, &indent) == 1 && hit == 0 && !indent);
  EXPECT(end_of(j, "x\n zy", &hit, &indent) == 3 && indent && hit == -1);
  sc_serve__job_free(j);
}

static void test_sendable(void) {
  const char *stops[] = {"jkl", "xyz"};
  job *j = make_job(stops, 2, 0);
  REQUIRE(j);
  EXPECT(sc_serve__sendable(j, "defghi", 6) == 6);
  EXPECT(sc_serve__sendable(j, "defghij", 7) == 6);   /* "j" may begin "jkl" */
  EXPECT(sc_serve__sendable(j, "defghijk", 8) == 6);  /* "jk" too */
  EXPECT(sc_serve__sendable(j, "defghijkl", 9) == 6); /* the stop: the end */
  EXPECT(sc_serve__sendable(j, "defghijkm", 9) == 9); /* it was not one */
  EXPECT(sc_serve__sendable(j, "ax", 2) == 1);
  sc_serve__job_free(j);
  j = make_job(NULL, 0, 0);
  REQUIRE(j);
  /* A UTF-8 sequence the next token may complete is held back; a broken
   * one is not (it is U+FFFD whatever comes). */
  EXPECT(sc_serve__sendable(j, "ab\xE2\x82", 4) == 2);
  EXPECT(sc_serve__sendable(j, "ab\xE2\x82\xAC", 5) == 5);
  EXPECT(sc_serve__sendable(j, "ab\xE2", 3) == 2);
  EXPECT(sc_serve__sendable(j, "\xF0\x9F\x98", 3) == 0);
  EXPECT(sc_serve__sendable(j, "ab\xE2\x41", 4) == 4);
  EXPECT(sc_serve__sendable(j, "ab\xED\xA0", 4) == 4); /* a surrogate: never valid */
  EXPECT(sc_serve__sendable(j, "ab\x80\x80", 4) == 4);
  sc_serve__job_free(j);
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Appends json_text(text[a..b))'s UTF-8 to out. */
static void add_json_text(char **out, size_t *len, size_t *cap, const char *text, size_t a,
                          size_t b) {
  json_t *t = sc_serve__json_text(text + a, b - a);
  if (t) sc_buf_append(out, len, cap, 64, json_string_value(t), json_string_length(t));
  json_decref(t);
}

/* Random answers over a small alphabet with multibyte and broken UTF-8,
 * random stops and an n_indent, revealed as growing prefixes: the streamed
 * bytes stay a prefix of the final answer, and the pieces' JSON strings
 * concatenate to the answer's. */
static void test_stream_invariant(void) {
  static const char *atoms[] = {"a", "b", "j", "k", "\n", " ", "\t", "\xE2\x82\xAC",
                                "\xF0\x9F\x98\x80", "\xC3", "\xA9", "\xFF", "jk"};
  uint64_t seed = 0x2545F4914F6CDD1DULL;
  for (int iter = 0; iter < 3000; iter++) {
    char text[256];
    size_t n = 0;
    int atoms_n = 1 + (int)(next_rand(&seed) % 40);
    for (int a = 0; a < atoms_n; a++) {
      const char *at = atoms[next_rand(&seed) % (sizeof atoms / sizeof *atoms)];
      size_t al = strlen(at);
      if (n + al >= sizeof text) break;
      memcpy(text + n, at, al);
      n += al;
    }
    const char *pool[] = {"jk", "k\n", "\xE2\x82", "bab", "\n\n", "j"};
    const char *stops[3];
    int n_stop = (int)(next_rand(&seed) % 4);
    for (int i = 0; i < n_stop; i++) stops[i] = pool[next_rand(&seed) % 6];
    job *j = make_job(stops, n_stop, (int)(next_rand(&seed) % 3));
    REQUIRE(j);
    int hit;
    bool indent;
    size_t final = sc_serve__answer_end(j, text, n, &hit, &indent);
    size_t sent = 0;
    char *out = NULL;
    size_t out_len = 0, out_cap = 0;
    sc_buf_append(&out, &out_len, &out_cap, 64, "", 0);
    for (size_t k = 0; k <= n; k += 1 + next_rand(&seed) % 3) {
      size_t s = sc_serve__sendable(j, text, k);
      EXPECTF(s <= final, "iter %d: sendable %zu of %zu past the end %zu", iter, s, k, final);
      if (s > sent) {
        add_json_text(&out, &out_len, &out_cap, text, sent, s);
        sent = s;
      }
    }
    if (final > sent) add_json_text(&out, &out_len, &out_cap, text, sent, final);
    json_t *whole = sc_serve__json_text(text, final);
    EXPECTF(whole && out_len == json_string_length(whole) &&
                memcmp(out, json_string_value(whole), out_len) == 0,
            "iter %d: the pieces do not add up", iter);
    json_decref(whole);
    free(out);
    sc_serve__job_free(j);
  }
}

static server *make_server(void) {
  server *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  sc_serve_options_default(&s->o);
  s->context = 1024;
  snprintf(s->model_name, sizeof s->model_name, "m");
  return s;
}

static void test_infill(void) {
  server *s = make_server();
  REQUIRE(s);
  char msg[256];
  const char body[] =
      "{\"input_prefix\": \"def f():\\n\", \"input_suffix\": \"\\nreturn x\\n\","
      " \"input_extra\": [{\"filename\": \"a.py\", \"text\": \"A = 1\"},"
      " {\"text\": \"B = 2\\n\"}], \"prompt\": \"    x =\", \"n_predict\": -1,"
      " \"n_indent\": 4, \"top_k\": 40, \"samplers\": [\"top_k\"], \"stream\": true,"
      " \"response_fields\": [\"content\", \"timings/prompt_n\"]}";
  job *j = sc_serve__parse_infill(s, body, sizeof body - 1, msg, sizeof msg);
  REQUIRE(j);
  EXPECT_STREQ(j->prompt, "A = 1\nB = 2\ndef f():\n    x =");
  EXPECT_STREQ(j->suffix, "\nreturn x\n");
  EXPECT(j->api == API_INFILL && j->max_tokens == 32 && j->n_indent == 4 &&
         j->params.top_k == 40 && j->stream && !j->stream_drafts && j->n_fields == 2);
  /* The answer: only the response_fields, each under its whole path. */
  j->text = strdup(" 1\nz");
  j->text_len = 4;
  j->prompt_tokens = 7;
  json_t *o = sc_serve__answer(s, j);
  EXPECT(o && json_object_size(o) == 2 &&
         strcmp(json_string_value(json_object_get(o, "content")), " 1\nz") == 0 &&
         json_integer_value(json_object_get(o, "timings/prompt_n")) == 7);
  json_decref(o);
  sc_serve__job_free(j);
  const char zero[] = "{\"n_predict\": 0}";
  j = sc_serve__parse_infill(s, zero, sizeof zero - 1, msg, sizeof msg);
  EXPECT(j && j->max_tokens == 0 && j->prompt_len == 0 && j->suffix_len == 0);
  sc_serve__job_free(j);
  const char *bad[] = {"{\"input_extra\": [{\"text\": 5}]}", "{\"n_indent\": \"4\"}",
                       "{\"prompt\": []}", "{\"stop\": 5}", "[]"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    j = sc_serve__parse_infill(s, bad[i], strlen(bad[i]), msg, sizeof msg);
    EXPECTF(!j && msg[0], "%s", bad[i]);
    sc_serve__job_free(j);
  }
  free(s);
}

/* Stream events: an increment carries its text twice (text, delta.content)
 * and no step; a draft carries its step and no delta. */
static void test_events(void) {
  server *s = make_server();
  REQUIRE(s);
  char msg[256];
  const char body[] = "{\"prompt\": \"a\", \"stream\": true}";
  job *j = sc_serve__parse_completion(s, body, sizeof body - 1, msg, sizeof msg);
  REQUIRE(j);
  json_t *o = sc_serve__stream_event(s, j, "xy", 2, 3, false);
  json_t *c = json_array_get(json_object_get(o, "choices"), 0);
  EXPECT(strcmp(json_string_value(json_object_get(c, "text")), "xy") == 0 &&
         strcmp(json_string_value(json_object_get(json_object_get(c, "delta"), "content")),
                "xy") == 0 &&
         !json_object_get(o, "step") && json_is_null(json_object_get(c, "finish_reason")));
  json_decref(o);
  j->stream_drafts = true;
  o = sc_serve__stream_event(s, j, "xy", 2, 3, false);
  c = json_array_get(json_object_get(o, "choices"), 0);
  EXPECT(json_integer_value(json_object_get(o, "step")) == 3 && !json_object_get(c, "delta"));
  json_decref(o);
  sc_serve__job_free(j);
  free(s);
}

int main(void) {
  RUN(test_answer_end);
  RUN(test_sendable);
  RUN(test_stream_invariant);
  RUN(test_infill);
  RUN(test_events);
  TEST_MAIN_END();
}

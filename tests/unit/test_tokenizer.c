/* test_tokenizer.c — the byte-level BPE on tiny hand-written tokenizer.json
 * files whose expected ids are worked out by hand in the comments, plus
 * malformed files that must fail cleanly (run under ASan+UBSan too). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "sc_test.h"

/* Vocabulary shared by the fixtures. Byte-level: ' ' is written "Ġ" (U+0120)
 * and byte 0xFF is "ÿ" (U+00FF, a byte that stands for itself). */
#define VOCAB                                                                  \
  "{\"a\":0,\"b\":1,\"c\":2,\"\\u0120\":3,\"ab\":4,\"abc\":5,\"\\u0120a\":6,"  \
  "\"\\u00ff\":7,\"<\":20,\"w\":21,\">\":22}"

#define ADDED                                                                  \
  "[{\"id\":10,\"content\":\"<x>\",\"single_word\":false,\"lstrip\":false,"     \
  "\"rstrip\":false,\"normalized\":false,\"special\":true},"                    \
  "{\"id\":11,\"content\":\"<m>\",\"single_word\":false,\"lstrip\":true,"       \
  "\"rstrip\":false,\"normalized\":false,\"special\":false},"                   \
  "{\"id\":12,\"content\":\"<w>\",\"single_word\":true,\"lstrip\":false,"       \
  "\"rstrip\":false,\"normalized\":false,\"special\":false}]"

/* Ranks: (a,b)=0, (ab,c)=1, (Ġ,a)=2; pair form; ByteLevel with GPT-2 regex. */
static const char *k_pairs =
    "{\"version\":\"1.0\",\"added_tokens\":" ADDED ",\"normalizer\":{\"type\":\"NFC\"},"
    "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
    "\"trim_offsets\":false,\"use_regex\":true},"
    "\"decoder\":{\"type\":\"ByteLevel\"},"
    "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,"
    "\"vocab\":" VOCAB ",\"merges\":[[\"a\",\"b\"],[\"ab\",\"c\"],[\"\\u0120\",\"a\"]]}}";

/* Same ranks as "a b" strings; Sequence[Split(Isolated), ByteLevel(no regex)]
 * whose pattern cuts like GPT-2's for these texts. */
static const char *k_strings =
    "{\"added_tokens\":" ADDED ",\"normalizer\":null,"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
    "{\"type\":\"Split\",\"pattern\":{\"Regex\":\" ?\\\\p{L}+| ?[^\\\\s\\\\p{L}]+|\\\\s+\"},"
    "\"behavior\":\"Isolated\",\"invert\":false},"
    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ","
    "\"merges\":[\"a b\",\"ab c\",\"\\u0120 a\"]}}";

/* Ranks reversed for (Ġ,a): (Ġ,a)=0, (a,b)=1, (ab,c)=2. */
static const char *k_reranked =
    "{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ","
    "\"merges\":[\"\\u0120 a\",\"a b\",\"ab c\"]}}";

static char g_path[1024];

static const char *write_fixture(const char *name, const char *text, size_t len) {
  snprintf(g_path, sizeof g_path, "%s/test_tokenizer_%s.json", SC_TEST_BUILD_DIR, name);
  FILE *f = fopen(g_path, "wb");
  if (!f) return NULL;
  fwrite(text, 1, len, f);
  fclose(f);
  return g_path;
}

static sc_tokenizer *load(const char *name, const char *json) {
  const char *p = write_fixture(name, json, strlen(json));
  sc_tokenizer *t = NULL;
  sc_error err = {0};
  sc_status s = p ? sc_tokenizer_load_file(p, &t, &err) : SC_ERR_IO;
  EXPECTF(s == SC_OK, "%s: %s", name, err.msg);
  return t;
}

/* Encodes text and compares with want[0..n). */
static void expect_ids(const sc_tokenizer *t, const char *text, size_t len,
                       const int32_t *want, size_t n, const char *what) {
  int32_t *ids = NULL;
  size_t got = 0;
  sc_error err = {0};
  sc_status s = sc_tokenizer_encode(t, text, len, &ids, &got, &err);
  EXPECTF(s == SC_OK, "%s: %s", what, err.msg);
  bool same = s == SC_OK && got == n && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
  EXPECTF(same, "%s: got %zu ids [%d %d %d %d ...]", what, got, got > 0 ? ids[0] : -1,
          got > 1 ? ids[1] : -1, got > 2 ? ids[2] : -1, got > 3 ? ids[3] : -1);
  /* and it decodes back to the same bytes */
  if (s == SC_OK) {
    char *back = NULL;
    size_t blen = 0;
    s = sc_tokenizer_decode(t, ids, got, &back, &blen, &err);
    EXPECTF(s == SC_OK && blen == len && memcmp(back, text, len) == 0,
            "%s: round trip differs", what);
    free(back);
  }
  free(ids);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)
#define TXT(s) s, sizeof(s) - 1

static void check_common(const sc_tokenizer *t, const char *form) {
  char what[96];
  /* "abc": a b c -> (a,b) rank 0 -> ab c -> (ab,c) rank 1 -> abc.
   * " ab": Ġ a b; (a,b) rank 0 beats (Ġ,a) rank 2 -> Ġ ab; no (Ġ,ab). */
  snprintf(what, sizeof what, "%s: abc ab", form);
  expect_ids(t, TXT("abc ab"), IDS(5, 3, 4), what);
  /* added token cut out first: "ab" | <x> | "c" */
  snprintf(what, sizeof what, "%s: ab<x>c", form);
  expect_ids(t, TXT("ab<x>c"), IDS(4, 10, 2), what);
  /* <x> keeps the space before it; <m> (lstrip) swallows it */
  snprintf(what, sizeof what, "%s: a <x>b", form);
  expect_ids(t, TXT("a <x>b"), IDS(0, 3, 10, 1), what);
  /* single_word <w> is not matched next to a word character */
  snprintf(what, sizeof what, "%s: a<w>", form);
  expect_ids(t, TXT("a<w>"), IDS(0, 20, 21, 22), what);
  snprintf(what, sizeof what, "%s: ' <w> '", form);
  expect_ids(t, TXT(" <w> "), IDS(3, 12, 3), what);
  /* invalid UTF-8: 0xFF becomes the byte token ÿ between two words */
  snprintf(what, sizeof what, "%s: a\\xffb", form);
  expect_ids(t, TXT("a\xff" "b"), IDS(0, 7, 1), what);
  snprintf(what, sizeof what, "%s: empty", form);
  expect_ids(t, "", 0, NULL, 0, what);
}

static void test_pair_merges(void) {
  sc_tokenizer *t = load("pairs", k_pairs);
  REQUIRE(t);
  check_common(t, "pairs");
  /* lstrip: "a" | " <m>" -> 11 | "b"; the space is part of the token */
  int32_t *ids = NULL;
  size_t n = 0;
  REQUIRE(sc_tokenizer_encode(t, TXT("a <m>b"), &ids, &n, NULL) == SC_OK);
  EXPECT(n == 3 && ids[0] == 0 && ids[1] == 11 && ids[2] == 1);
  free(ids);
  EXPECT(sc_tokenizer_token_to_id(t, "\xc4\xa0" "a") == 6); /* "Ġa" */
  EXPECT(sc_tokenizer_token_to_id(t, "<x>") == 10);
  EXPECT(sc_tokenizer_token_to_id(t, "zzz") == -1);
  EXPECT_STREQ(sc_tokenizer_id_to_token(t, 5), "abc");
  EXPECT_STREQ(sc_tokenizer_id_to_token(t, 11), "<m>");
  EXPECT(sc_tokenizer_id_to_token(t, 9) == NULL);
  EXPECT(sc_tokenizer_id_to_token(t, 1000) == NULL);
  EXPECT(sc_tokenizer_vocab_size(t) == 23);
  EXPECT(sc_tokenizer_token_flags(t, 10) == (SC_TOKEN_ADDED | SC_TOKEN_SPECIAL));
  EXPECT(sc_tokenizer_token_flags(t, 11) == SC_TOKEN_ADDED);
  EXPECT(sc_tokenizer_token_flags(t, 0) == 0);
  EXPECT(sc_tokenizer_token_flags(t, -3) == 0);
  /* decode: added tokens give their content; unknown ids are refused */
  char *text = NULL;
  size_t len = 0;
  REQUIRE(sc_tokenizer_decode(t, IDS(6, 10, 7), &text, &len, NULL) == SC_OK);
  EXPECT(len == 6 && memcmp(text, " a<x>\xff", 6) == 0);
  free(text);
  sc_error err = {0};
  EXPECT(sc_tokenizer_decode(t, IDS(0, 9), &text, &len, &err) == SC_ERR_INVALID);
  EXPECT(strstr(err.msg, "9") != NULL);
  EXPECT(sc_tokenizer_decode(t, IDS(-1), &text, &len, &err) == SC_ERR_INVALID);
  sc_tokenizer_free(t);
}

static void test_string_merges(void) {
  sc_tokenizer *t = load("strings", k_strings);
  REQUIRE(t);
  check_common(t, "strings");
  sc_tokenizer_free(t);
}

static void test_ranks_decide(void) {
  sc_tokenizer *t = load("reranked", k_reranked);
  REQUIRE(t);
  /* " ab": (Ġ,a) is now rank 0 -> Ġa b; (Ġa,b) is no merge -> [6, 1].
   * "abc" is unchanged: (a,b) then (ab,c) -> [5]. */
  expect_ids(t, TXT("abc ab"), IDS(5, 6, 1), "reranked");
  sc_tokenizer_free(t);
}

/* A long run merges with the heap: "ab" repeated merges pairwise. */
static void test_long_run(void) {
  sc_tokenizer *t = load("pairs", k_pairs);
  REQUIRE(t);
  size_t n = 1 << 20; /* 1 MiB, one piece for the regex */
  char *s = malloc(n);
  REQUIRE(s);
  for (size_t i = 0; i < n; i++) s[i] = (i & 1) ? 'b' : 'a';
  int32_t *ids = NULL;
  size_t k = 0;
  EXPECT(sc_tokenizer_encode(t, s, n, &ids, &k, NULL) == SC_OK);
  EXPECT(k == n / 2);
  bool all_ab = true;
  for (size_t i = 0; i < k; i++) all_ab &= ids[i] == 4;
  EXPECT(all_ab);
  free(ids);
  free(s);
  sc_tokenizer_free(t);
}

/* A normalized added token is matched against NFC text with its content in
 * NFC: the content "e" U+0301 becomes "é" (U+00E9), so both spellings in the
 * text hit it; 'a' around it is plain BPE. */
static void test_normalized_added(void) {
  static const char *json =
      "{\"added_tokens\":[{\"id\":13,\"content\":\"e\\u0301\",\"normalized\":true,"
      "\"special\":false}],\"normalizer\":{\"type\":\"NFC\"},"
      "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[\"a b\"]}}";
  sc_tokenizer *t = load("normalized", json);
  REQUIRE(t);
  int32_t *ids = NULL;
  size_t n = 0;
  REQUIRE(sc_tokenizer_encode(t, TXT("a\xc3\xa9" "b"), &ids, &n, NULL) == SC_OK);
  EXPECTF(n == 3 && ids[0] == 0 && ids[1] == 13 && ids[2] == 1, "composed: %zu ids", n);
  free(ids);
  REQUIRE(sc_tokenizer_encode(t, TXT("ae\xcc\x81" "b"), &ids, &n, NULL) == SC_OK);
  EXPECTF(n == 3 && ids[0] == 0 && ids[1] == 13 && ids[2] == 1, "decomposed: %zu ids", n);
  free(ids);
  sc_tokenizer_free(t);
}

typedef struct thread_arg {
  const sc_tokenizer *t;
  int ok;
} thread_arg;

static void *encode_many(void *p) {
  thread_arg *a = p;
  /* abc | Ġab | Ġ <x> | a | Ġ<m> (lstrip) | b | Ġa | ÿ | b | Ġabcabc:
   * [5] [3 4] [3] 10 [0] 11 [1] [6] 7 [1] [3 5 5] = 14 ids */
  static const char text[] = "abc ab <x>a <m>b a\xff" "b abcabc";
  a->ok = 1;
  for (int i = 0; i < 300; i++) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (sc_tokenizer_encode(a->t, text, sizeof text - 1, &ids, &n, NULL) != SC_OK ||
        n != 14 || ids[0] != 5 || ids[4] != 10 || ids[13] != 5)
      a->ok = 0;
    free(ids);
  }
  return NULL;
}

static void test_threads(void) {
  sc_tokenizer *t = load("pairs", k_pairs);
  REQUIRE(t);
  /* reference count from one thread first */
  int32_t *ids = NULL;
  size_t n = 0;
  static const char text[] = "abc ab <x>a <m>b a\xff" "b abcabc";
  REQUIRE(sc_tokenizer_encode(t, text, sizeof text - 1, &ids, &n, NULL) == SC_OK);
  EXPECTF(n == 14, "reference has %zu ids", n);
  free(ids);
  pthread_t th[4];
  thread_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (thread_arg){t, 0};
    REQUIRE(pthread_create(&th[i], NULL, encode_many, &args[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    EXPECT(args[i].ok);
  }
  sc_tokenizer_free(t);
}

static void expect_load_fails(const char *name, const char *json, size_t len,
                              sc_status want) {
  const char *p = write_fixture(name, json, len);
  REQUIRE(p);
  sc_tokenizer *t = (sc_tokenizer *)1;
  sc_error err = {0};
  sc_status s = sc_tokenizer_load_file(p, &t, &err);
  EXPECTF(s == want, "%s: got %s (%s), want %s", name, sc_status_name(s), err.msg,
          sc_status_name(want));
  EXPECTF(t == NULL, "%s: *out not NULL on failure", name);
  EXPECTF(err.msg[0] != '\0', "%s: no message", name);
}

static void test_malformed(void) {
  expect_load_fails("bad_json", "{\"model\": {", 11, SC_ERR_FORMAT);
  expect_load_fails("empty", "", 0, SC_ERR_FORMAT);
  expect_load_fails("not_object", "[1,2]", 5, SC_ERR_FORMAT);
  expect_load_fails("truncated", k_pairs, strlen(k_pairs) / 2, SC_ERR_FORMAT);
  expect_load_fails("no_model",
                    "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}", 38, SC_ERR_FORMAT);
  static const char *wordpiece =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"WordPiece\","
      "\"vocab\":{\"a\":0}}}";
  expect_load_fails("wordpiece", wordpiece, strlen(wordpiece), SC_ERR_UNSUPPORTED);
  static const char *metaspace =
      "{\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("metaspace", metaspace, strlen(metaspace), SC_ERR_UNSUPPORTED);
  static const char *no_pretok =
      "{\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("no_pretok", no_pretok, strlen(no_pretok), SC_ERR_UNSUPPORTED);
  static const char *removed =
      "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
      "\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Removed\"},{\"type\":\"ByteLevel\"}]},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("removed", removed, strlen(removed), SC_ERR_UNSUPPORTED);
  static const char *bad_regex =
      "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
      "\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\"}]},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("bad_regex", bad_regex, strlen(bad_regex), SC_ERR_FORMAT);
  static const char *bad_merge =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":" VOCAB ",\"merges\":[\"a q\"]}}";
  expect_load_fails("bad_merge", bad_merge, strlen(bad_merge), SC_ERR_FORMAT);
  static const char *no_result =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":" VOCAB ",\"merges\":[\"b a\"]}}";
  expect_load_fails("no_result", no_result, strlen(no_result), SC_ERR_FORMAT);
  static const char *three =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":" VOCAB ",\"merges\":[\"a b c\"]}}";
  expect_load_fails("three_part_merge", three, strlen(three), SC_ERR_FORMAT);
  static const char *bad_id =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":{\"a\":-4},\"merges\":[]}}";
  expect_load_fails("bad_id", bad_id, strlen(bad_id), SC_ERR_FORMAT);
  static const char *huge_id =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":{\"a\":2000000000},\"merges\":[]}}";
  expect_load_fails("huge_id", huge_id, strlen(huge_id), SC_ERR_FORMAT);
  /* Within the hard bound (16M) but far beyond what two entries make
   * dense: refused before the id tables grow to it. */
  static const char *sparse_id =
      "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
      "\"vocab\":{\"a\":0,\"b\":9800000},\"merges\":[]}}";
  expect_load_fails("sparse_id", sparse_id, strlen(sparse_id), SC_ERR_FORMAT);
  static const char *sparse_added =
      "{\"added_tokens\":[{\"id\":9800000,\"content\":\"<x>\",\"special\":true}],"
      "\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("sparse_added", sparse_added, strlen(sparse_added), SC_ERR_FORMAT);
  static const char *bad_norm =
      "{\"normalizer\":{\"type\":\"Lowercase\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("bad_norm", bad_norm, strlen(bad_norm), SC_ERR_UNSUPPORTED);
  static const char *bad_added =
      "{\"added_tokens\":[{\"id\":3}],\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
      "\"model\":{\"type\":\"BPE\",\"vocab\":" VOCAB ",\"merges\":[]}}";
  expect_load_fails("bad_added", bad_added, strlen(bad_added), SC_ERR_FORMAT);

  sc_tokenizer *t = (sc_tokenizer *)1;
  sc_error err = {0};
  EXPECT(sc_tokenizer_load_file(SC_TEST_BUILD_DIR "/no/such/tokenizer.json", &t, &err) ==
         SC_ERR_IO);
  EXPECT(t == NULL);
  t = (sc_tokenizer *)1;
  EXPECT(sc_tokenizer_load_dir(SC_TEST_BUILD_DIR "/no/such/dir", &t, &err) == SC_ERR_IO);
  EXPECT(t == NULL);
  sc_tokenizer_free(NULL);
}

/* The slow form in a folder: vocab.json + merges.txt + tokenizer_config.json
 * with the Qwen2 pattern and NFC. */
static void test_slow_dir(void) {
  char dir[1024], p[1100];
  snprintf(dir, sizeof dir, "%s/test_tokenizer_slow", SC_TEST_BUILD_DIR);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  REQUIRE(system(cmd) == 0);
  static const struct { const char *name, *text; } files[] = {
      {"vocab.json", VOCAB},
      {"merges.txt", "#version: 0.2\na b\r\nab c\n\n\xc4\xa0 a\n"},
      {"tokenizer_config.json",
       "{\"added_tokens_decoder\":{\"10\":{\"content\":\"<x>\",\"lstrip\":false,"
       "\"normalized\":false,\"rstrip\":false,\"single_word\":false,\"special\":true}},"
       "\"eos_token\":\"<x>\"}"},
  };
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i].name);
    FILE *f = fopen(p, "wb");
    REQUIRE(f);
    fputs(files[i].text, f);
    fclose(f);
  }
  sc_tokenizer *t = NULL;
  sc_error err = {0};
  sc_status s = sc_tokenizer_load_dir(dir, &t, &err);
  EXPECTF(s == SC_OK, "%s", err.msg);
  REQUIRE(t);
  expect_ids(t, TXT("abc ab"), IDS(5, 3, 4), "slow: abc ab");
  expect_ids(t, TXT("ab<x>c"), IDS(4, 10, 2), "slow: ab<x>c");
  EXPECT(sc_tokenizer_token_flags(t, 10) == (SC_TOKEN_ADDED | SC_TOKEN_SPECIAL));
  sc_tokenizer_free(t);
}

int main(void) {
  RUN(test_pair_merges);
  RUN(test_string_merges);
  RUN(test_ranks_decide);
  RUN(test_long_run);
  RUN(test_normalized_added);
  RUN(test_threads);
  RUN(test_malformed);
  RUN(test_slow_dir);
  TEST_MAIN_END();
}

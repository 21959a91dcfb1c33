/* test_model_paths.c — model names (model.h, "model names"; model/paths.c):
 * which strings are Hugging Face ids (huggingface_hub's validate_repo_id
 * rules, a namespace required, a revision that stays under refs/), where
 * the cache is from the environment (constants.py's order), how an id
 * resolves through refs/ to its snapshot, what a missing one says, and the
 * cache listing. tests/cli/test_model_pull.py covers the same end to end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "sc_test.h"
#include "sc_test_tmp.h"

static void test_id_parse(void) {
  sc_model_id id;
  EXPECT(sc_model_id_parse("apple/DiffuCoder-7B-Instruct", &id));
  EXPECT_STREQ(id.repo, "apple/DiffuCoder-7B-Instruct");
  EXPECT_STREQ(id.revision, "main");
  EXPECT(sc_model_id_parse("Dream-org/Dream-Coder-v0-Instruct-7B@v1.0", &id));
  EXPECT_STREQ(id.repo, "Dream-org/Dream-Coder-v0-Instruct-7B");
  EXPECT_STREQ(id.revision, "v1.0");
  EXPECT(sc_model_id_parse("a_b/c.d@refs/pr/1", &id));
  EXPECT_STREQ(id.revision, "refs/pr/1");
  static const char *const bad[] = {
      "default",            /* no namespace: a folder, never an id */
      "/abs/path",          "./rel/path",   "a/b/c",        "a//b",       "-a/b",
      "a/b-",               ".a/b",         "a/b.",         "a--x/b",     "a/b..c",
      "a/b.git",            "a/b@",         "a/b@../x",     "a/b@/x",     "a/b@x/",
      "a/b@x y",            "a/b c",        "a/b@c@d",      "",           "a/",
      "/b",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    EXPECTF(!sc_model_id_parse(bad[i], &id), "'%s' was taken for an id", bad[i]);
  char name[140] = "org/";
  memset(name + 4, 'n', 97);
  name[4 + 97] = '\0';
  EXPECT(!sc_model_id_parse(name, &id)); /* a name of 97 characters */
  name[4 + 96] = '\0';
  EXPECT(sc_model_id_parse(name, &id)); /* 96 is the limit */
}

static void set(const char *var, const char *v) {
  if (v) setenv(var, v, 1);
  else unsetenv(var);
}

static void test_cache_dir(void) {
  char buf[4096];
  set("HF_HUB_CACHE", NULL);
  set("HUGGINGFACE_HUB_CACHE", NULL);
  set("HF_HOME", NULL);
  set("XDG_CACHE_HOME", NULL);
  set("HOME", "/home/u");
  /* Each step sets one variable more; the cache is where constants.py puts
   * it then. */
  static const struct {
    const char *var, *value, *cache;
  } steps[] = {
      {NULL, NULL, "/home/u/.cache/huggingface/hub"},
      {"XDG_CACHE_HOME", "/xdg", "/xdg/huggingface/hub"},
      {"HF_HOME", "~/hf", "/home/u/hf/hub"},
      {"HUGGINGFACE_HUB_CACHE", "/legacy", "/legacy"},
      {"HF_HUB_CACHE", "/new", "/new"},
      {"HF_HUB_CACHE", "", "/legacy"}, /* empty is unset */
  };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    if (steps[i].var) set(steps[i].var, steps[i].value);
    EXPECT(sc_model_cache_dir(buf, sizeof buf));
    EXPECT_STREQ(buf, steps[i].cache);
  }
  EXPECT(sc_model_hf_home(buf, sizeof buf));
  EXPECT_STREQ(buf, "/home/u/hf");
  sc_model_id id;
  REQUIRE(sc_model_id_parse("org/name@dev", &id));
  sc_model_id_folder(&id, "/c", buf, sizeof buf);
  EXPECT_STREQ(buf, "/c/models--org--name");
}

#define COMMIT "0123456789abcdef0123456789abcdef01234567"
#define OTHER "fedcba9876543210fedcba9876543210fedcba98"

static void test_resolve(void) {
  char root[256];
  REQUIRE(sc_test_mkdtemp(root, sizeof root, "sc-paths"));
  char hub[300], repo[400], p[600];
  snprintf(hub, sizeof hub, "%s/hub", root);
  snprintf(repo, sizeof repo, "%s/models--org--name", hub);
  snprintf(p, sizeof p, "mkdir -p %s/snapshots/%s %s/snapshots/%s %s/refs/refs/pr %s/blobs", repo,
           COMMIT, repo, OTHER, repo, repo);
  REQUIRE(system(p) == 0);
  REQUIRE(sc_test_write_at(repo, "refs/main", COMMIT));    /* as Python writes it */
  /* A pull request's ref, where huggingface_hub keeps revision "refs/pr/1"
   * (refs/ + the revision), ending in a newline as a hand-edited one may. */
  REQUIRE(sc_test_write_at(repo, "refs/refs/pr/1", OTHER "\n"));
  REQUIRE(sc_test_write_at(repo, "blobs/b1", "{}"));
  snprintf(p, sizeof p, "%s/snapshots/%s/config.json", repo, COMMIT);
  REQUIRE(symlink("../../blobs/b1", p) == 0);
  snprintf(p, sizeof p, "%s/snapshots/%s/model.Q8_0.gguf", repo, OTHER); /* a GGUF alone */
  REQUIRE(symlink("../../blobs/b1", p) == 0);
  set("HF_HUB_CACHE", hub);
  set("SCULPT_MODEL", NULL);
  char *dir = NULL;
  sc_error err = {0};
  char want[700];
  EXPECT(sc_model_resolve("org/name", &dir, &err) == SC_OK);
  snprintf(want, sizeof want, "%s/snapshots/%s", repo, COMMIT);
  EXPECT(dir && strcmp(dir, want) == 0);
  free(dir);
  EXPECT(sc_model_resolve("org/name@refs/pr/1", &dir, &err) == SC_OK);
  snprintf(want, sizeof want, "%s/snapshots/%s", repo, OTHER);
  EXPECT(dir && strcmp(dir, want) == 0);
  free(dir);
  EXPECT(sc_model_resolve("org/name@" OTHER, &dir, &err) == SC_OK); /* a commit, no ref */
  EXPECT(dir && strcmp(dir, want) == 0);
  free(dir);
  /* $SCULPT_MODEL is a name too. */
  set("SCULPT_MODEL", "org/name");
  EXPECT(sc_model_resolve(NULL, &dir, &err) == SC_OK);
  snprintf(want, sizeof want, "%s/snapshots/%s", repo, COMMIT);
  EXPECT(dir && strcmp(dir, want) == 0);
  free(dir);
  set("SCULPT_MODEL", NULL);
  /* Missing: one line naming the cache and the pull command. */
  err = (sc_error){0};
  EXPECT(sc_model_resolve("org/other", &dir, &err) == SC_ERR_IO && dir == NULL);
  EXPECT(strstr(err.msg, "sculpt model pull org/other") && strstr(err.msg, hub));
  err = (sc_error){0};
  EXPECT(sc_model_resolve("org/name@v2", &dir, &err) == SC_ERR_IO);
  EXPECT(strstr(err.msg, "sculpt model pull org/name@v2") != NULL);
  /* A ref to a snapshot that is not there. */
  REQUIRE(sc_test_write_at(repo, "refs/gone", "1111111111111111111111111111111111111111"));
  err = (sc_error){0};
  EXPECT(sc_model_resolve("org/name@gone", &dir, &err) == SC_ERR_IO);
  EXPECT(strstr(err.msg, "no snapshot") != NULL);
  /* A snapshot begun by another tool, with no config.json: not a model yet. */
  snprintf(p, sizeof p, "mkdir -p %s/snapshots/2222222222222222222222222222222222222222", repo);
  REQUIRE(system(p) == 0);
  REQUIRE(sc_test_write_at(repo, "refs/half", "2222222222222222222222222222222222222222"));
  REQUIRE(sc_test_write_at(repo, "snapshots/2222222222222222222222222222222222222222/x.json",
                           "{}"));
  err = (sc_error){0};
  EXPECT(sc_model_resolve("org/name@half", &dir, &err) == SC_ERR_IO);
  EXPECT(strstr(err.msg, "unfinished") && strstr(err.msg, "sculpt model pull org/name@half"));
  /* A path that exists is the path, even spelt like an id. */
  REQUIRE(chdir(hub) == 0);
  snprintf(p, sizeof p, "mkdir -p %s/org/name", hub);
  REQUIRE(system(p) == 0);
  EXPECT(sc_model_resolve("org/name", &dir, &err) == SC_OK && dir &&
         strcmp(dir, "org/name") == 0);
  free(dir);
  /* Neither a path nor an id: returned as given, for the loader to report. */
  EXPECT(sc_model_resolve("/no/such/folder", &dir, &err) == SC_OK && dir &&
         strcmp(dir, "/no/such/folder") == 0);
  free(dir);

  /* The listing: both snapshots, their refs and sizes. */
  sc_cached_model *list = NULL;
  int n = 0;
  EXPECT(sc_model_cache_list(hub, &list, &n, &err) == SC_OK);
  EXPECT(n == 3);
  for (int i = 0; i < n; i++) {
    EXPECT_STREQ(list[i].id, "org/name");
    if (strcmp(list[i].commit, COMMIT) == 0) {
      EXPECT_STREQ(list[i].refs, "main");
      EXPECT(list[i].bytes == 2 && list[i].files == 1);
    } else if (strcmp(list[i].commit, OTHER) == 0) {
      EXPECT_STREQ(list[i].refs, "refs/pr/1");
    } else {
      EXPECT_STREQ(list[i].refs, "half");
    }
  }
  free(list);
  snprintf(p, sizeof p, "%s/absent", root);
  EXPECT(sc_model_cache_list(p, &list, &n, &err) == SC_OK && n == 0 && list == NULL);
  set("HF_HUB_CACHE", NULL);
  sc_test_remove_tree(root);
}

int main(void) {
  RUN(test_id_parse);
  RUN(test_cache_dir);
  RUN(test_resolve);
  TEST_MAIN_END();
}

/* paths.c — where a model lives: the default model, and a Hugging Face id
 * ORG/NAME[@REVISION] resolved offline in huggingface_hub's cache (model.h,
 * "model names"). The layout and the environment are huggingface_hub's own
 * (src/huggingface_hub/constants.py: HF_HOME, HF_HUB_CACHE; file_download.py:
 * repo_folder_name, try_to_load_from_cache, _cache_commit_hash_for_specific_
 * revision), so that a snapshot downloaded by Python tools is read as it is
 * and one `sculpt model pull` wrote is theirs too. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SCULPT_DEFAULT_MODEL_DIR
#define SCULPT_DEFAULT_MODEL_DIR ""
#endif

static bool has_config(const char *dir) {
  char path[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/config.json", dir);
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool has_gguf(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *de;
  while (!found && (de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    found = l > 5 && strcmp(de->d_name + l - 5, ".gguf") == 0;
  }
  closedir(d);
  return found;
}

const char *sc_model_shipped_dir(void) {
  if (SCULPT_DEFAULT_MODEL_DIR[0] && has_config(SCULPT_DEFAULT_MODEL_DIR))
    return SCULPT_DEFAULT_MODEL_DIR;
  return NULL;
}

const char *sc_model_default_dir(void) {
  const char *env = getenv("SCULPT_MODEL");
  if (env && *env) return env;
  return sc_model_shipped_dir();
}

bool sc_model_is_builtin(const char *dir) {
  if (!dir || !SCULPT_DEFAULT_MODEL_DIR[0]) return false;
  if (strcmp(dir, SCULPT_DEFAULT_MODEL_DIR) == 0) return true;
  /* The same folder by another spelling (a relative path, a link). */
  struct stat a, b;
  return stat(dir, &a) == 0 && stat(SCULPT_DEFAULT_MODEL_DIR, &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

void sc_model_builtin_hint(const char *dir) {
  static atomic_flag said = ATOMIC_FLAG_INIT;
  if (!sc_model_is_builtin(dir) || atomic_flag_test_and_set(&said)) return;
  SC_LOG_INFO("model: this is sculpt's small demo model; for real completions pull a "
              "checkpoint (e.g. `sculpt model pull fredzzp/open-dcoder-0.5B`) and set "
              "--model, $SCULPT_MODEL or modelPath to its id (README, \"Models\")");
}

/* ---- ids ------------------------------------------------------------------ */

static bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_' || c == '.';
}

/* One part of a repo id (validate_repo_id: REPO_ID_REGEX's \b[\w\-.]+\b,
 * ASCII here, with the "--" and ".." rules). */
static bool id_part(const char *s, size_t n, size_t max) {
  if (n == 0 || n > max) return false;
  for (size_t i = 0; i < n; i++) {
    if (!id_char(s[i])) return false;
    if (i > 0 && (s[i] == '-' || s[i] == '.') && s[i - 1] == s[i]) return false;
  }
  return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}

bool sc_model_id_parse(const char *s, sc_model_id *out) {
  if (!s) return false;
  const char *at = strchr(s, '@');
  size_t n = at ? (size_t)(at - s) : strlen(s);
  const char *slash = memchr(s, '/', n);
  if (!slash || memchr(slash + 1, '/', n - (size_t)(slash + 1 - s))) return false;
  size_t org = (size_t)(slash - s), name = n - org - 1;
  if (!id_part(s, org, 96) || !id_part(slash + 1, name, 96)) return false;
  if (name >= 4 && memcmp(slash + 1 + name - 4, ".git", 4) == 0) return false;
  if (n >= sizeof out->repo) return false;
  const char *rev = at ? at + 1 : "main";
  size_t rn = strlen(rev);
  /* A revision is a git ref name or a commit: it becomes a path under
   * refs/, so nothing that climbs out of it. */
  if (rn == 0 || rn >= sizeof out->revision || rev[0] == '/' || rev[rn - 1] == '/' ||
      strstr(rev, "..") || strchr(rev, '@') || strchr(rev, '\\'))
    return false;
  for (size_t i = 0; i < rn; i++)
    if ((unsigned char)rev[i] <= ' ') return false;
  memcpy(out->repo, s, n);
  out->repo[n] = '\0';
  memcpy(out->revision, rev, rn + 1);
  return true;
}

/* ---- the cache's place -------------------------------------------------- */

/* A path from the environment, "~/" expanded (constants.py expands user). */
static bool env_path(const char *var, const char *suffix, char *buf, size_t n) {
  const char *v = getenv(var);
  if (!v || !*v) return false;
  if (v[0] == '~' && (v[1] == '/' || v[1] == '\0')) {
    const char *home = getenv("HOME");
    if (!home || !*home) return false;
    snprintf(buf, n, "%s%s%s", home, v + 1, suffix);
  } else {
    snprintf(buf, n, "%s%s", v, suffix);
  }
  return true;
}

bool sc_model_hf_home(char *buf, size_t n) {
  if (env_path("HF_HOME", "", buf, n)) return true;
  if (env_path("XDG_CACHE_HOME", "/huggingface", buf, n)) return true;
  const char *home = getenv("HOME");
  if (!home || !*home) {
    struct passwd *pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : NULL;
  }
  if (!home || !*home) return false;
  snprintf(buf, n, "%s/.cache/huggingface", home);
  return true;
}

bool sc_model_cache_dir(char *buf, size_t n) {
  if (env_path("HF_HUB_CACHE", "", buf, n)) return true;
  if (env_path("HUGGINGFACE_HUB_CACHE", "", buf, n)) return true; /* the legacy name */
  char home[4096];
  if (!sc_model_hf_home(home, sizeof home)) return false;
  snprintf(buf, n, "%s/hub", home);
  return true;
}

void sc_model_id_folder(const sc_model_id *id, const char *cache, char *buf, size_t n) {
  const char *slash = strchr(id->repo, '/');
  snprintf(buf, n, "%s/models--%.*s--%s", cache, (int)(slash - id->repo), id->repo, slash + 1);
}

static bool is_commit(const char *s) {
  size_t i = 0;
  for (; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return i == 40; /* constants.py REGEX_COMMIT_HASH */
}

bool sc_model_cache_commit(const char *repo_folder, const char *revision, char commit[41]) {
  if (is_commit(revision)) {
    memcpy(commit, revision, 41);
    return true;
  }
  char path[4400];
  snprintf(path, sizeof path, "%s/refs/%s", repo_folder, revision);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char buf[64] = {0};
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  /* huggingface_hub writes the hash alone (no newline); a hand-edited ref
   * may end in one. */
  while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r' || buf[got - 1] == ' '))
    buf[--got] = '\0';
  if (!is_commit(buf)) return false;
  memcpy(commit, buf, 41);
  return true;
}

sc_status sc_model_resolve(const char *name, char **dir, sc_error *err) {
  *dir = NULL;
  if (!name || !*name) name = sc_model_default_dir();
  if (!name) return SC_OK;
  struct stat st;
  sc_model_id id;
  /* A path that is there is that path; an id only when nothing is. */
  if (stat(name, &st) == 0 || !sc_model_id_parse(name, &id)) {
    *dir = strdup(name);
    SC_CHECK(*dir, err, SC_ERR_NOMEM, "out of memory");
    return SC_OK;
  }
  char cache[4096], repo[4400], snap[4500], commit[41];
  SC_CHECK(sc_model_cache_dir(cache, sizeof cache), err, SC_ERR_IO,
           "model %s: no such folder, and no Hugging Face cache (set HF_HOME or HOME)", name);
  sc_model_id_folder(&id, cache, repo, sizeof repo);
  const char *at = strchr(name, '@');
  char pull[300];
  snprintf(pull, sizeof pull, "sculpt model pull %s%s%s", id.repo, at ? "@" : "",
           at ? id.revision : "");
  SC_CHECK(sc_model_cache_commit(repo, id.revision, commit), err, SC_ERR_IO,
           "model %s is not in the Hugging Face cache (%s): run `%s`", name, cache, pull);
  snprintf(snap, sizeof snap, "%s/snapshots/%s", repo, commit);
  SC_CHECK(stat(snap, &st) == 0 && S_ISDIR(st.st_mode), err, SC_ERR_IO,
           "model %s: the cache names commit %.12s but has no snapshot of it (%s): run `%s`",
           name, commit, repo, pull);
  /* A snapshot another tool began (hf_hub_download of one file, a download
   * cut short) holds no config.json and no GGUF: not a model yet. */
  SC_CHECK(has_config(snap) || has_gguf(snap), err, SC_ERR_IO,
           "model %s: the cached snapshot %.12s has no config.json or .gguf (an unfinished "
           "download?): run `%s`",
           name, commit, pull);
  *dir = strdup(snap);
  SC_CHECK(*dir, err, SC_ERR_NOMEM, "out of memory");
  return SC_OK;
}

/* ---- listing the cache ----------------------------------------------------- */

/* Size and count of the files under dir (links followed: a snapshot's
 * files are links into blobs/). */
static void tree_size(const char *dir, uint64_t *bytes, int *files, int depth) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p, &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < 8) tree_size(p, bytes, files, depth + 1);
    else if (S_ISREG(st.st_mode)) {
      *bytes += (uint64_t)st.st_size;
      (*files)++;
    }
  }
  closedir(d);
}

/* The names under repo/refs pointing at commit, comma-separated; a ref
 * may have folders (revision "refs/pr/1" is refs/refs/pr/1). */
static void refs_of(const char *repo, const char *sub, const char *commit, char *out, size_t n,
                    int depth) {
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/refs%s%s", repo, *sub ? "/" : "", sub);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char rel[300], c[41];
    snprintf(rel, sizeof rel, "%s%s%s", sub, *sub ? "/" : "", de->d_name);
    char p[4800];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (depth < 4) refs_of(repo, rel, commit, out, n, depth + 1);
      continue;
    }
    if (!sc_model_cache_commit(repo, rel, c) || strcmp(c, commit) != 0) continue;
    size_t len = strlen(out);
    snprintf(out + len, n - len, "%s%s", len ? "," : "", rel);
  }
  closedir(d);
}

static int cmp_cached(const void *a, const void *b) {
  const sc_cached_model *x = a, *y = b;
  int c = strcasecmp(x->id, y->id);
  return c ? c : strcmp(x->commit, y->commit);
}

sc_status sc_model_cache_list(const char *cache, sc_cached_model **out, int *n, sc_error *err) {
  *out = NULL;
  *n = 0;
  char root[4096];
  if (!cache) {
    if (!sc_model_cache_dir(root, sizeof root)) return SC_OK;
    cache = root;
  }
  DIR *d = opendir(cache);
  if (!d) {
    SC_CHECK(errno == ENOENT || errno == ENOTDIR, err, SC_ERR_IO, "%s: %s", cache,
             strerror(errno));
    return SC_OK;
  }
  sc_cached_model *list = NULL;
  int len = 0, cap = 0;
  sc_status st = SC_OK;
  struct dirent *de;
  while (st == SC_OK && (de = readdir(d)) != NULL) {
    /* models--ORG--NAME; datasets and spaces share the cache but are not
     * models, and a namespace-less repo (models--NAME) is never sculpt's. */
    const char *nm = de->d_name;
    if (strncmp(nm, "models--", 8) != 0) continue;
    const char *sep = strstr(nm + 8, "--");
    if (!sep || sep == nm + 8 || !sep[2]) continue;
    char repo[4400], snaps[4500];
    snprintf(repo, sizeof repo, "%s/%s", cache, nm);
    snprintf(snaps, sizeof snaps, "%s/snapshots", repo);
    DIR *sd = opendir(snaps);
    if (!sd) continue;
    struct dirent *se;
    while ((se = readdir(sd)) != NULL) {
      if (!is_commit(se->d_name)) continue;
      if (len == cap) {
        int nc = cap ? cap * 2 : 8;
        sc_cached_model *nl = realloc(list, (size_t)nc * sizeof *nl);
        if (!nl) {
          st = sc_error_set(err, SC_ERR_NOMEM, "out of memory");
          break;
        }
        list = nl;
        cap = nc;
      }
      sc_cached_model *m = &list[len++];
      memset(m, 0, sizeof *m);
      snprintf(m->id, sizeof m->id, "%.*s/%s", (int)(sep - (nm + 8)), nm + 8, sep + 2);
      memcpy(m->commit, se->d_name, 41);
      snprintf(m->dir, sizeof m->dir, "%s/%s", snaps, se->d_name);
      refs_of(repo, "", m->commit, m->refs, sizeof m->refs, 0);
      tree_size(m->dir, &m->bytes, &m->files, 0);
    }
    closedir(sd);
  }
  closedir(d);
  if (st != SC_OK) {
    free(list);
    return st;
  }
  if (len > 1) qsort(list, (size_t)len, sizeof *list, cmp_cached);
  *out = list;
  *n = len;
  return SC_OK;
}

/* hub.c — `sculpt model pull`: a model's files from the Hugging Face hub
 * into huggingface_hub's cache (net.h, "the Hugging Face hub").
 *
 * The hub's side, as huggingface_hub talks to it (src/huggingface_hub/):
 *  - hf_api.py, model_info: GET {endpoint}/api/models/{id}/revision/{rev}
 *    with ?blobs=true (files_metadata) answers {"sha": COMMIT, "siblings":
 *    [{"rfilename", "size", "blobId", "lfs": {"sha256", "size",
 *    "pointerSize"}}]}; _snapshot_download.py then fetches every file at
 *    that commit, so that one snapshot is one commit.
 *  - file_download.py, hf_hub_url: {endpoint}/{id}/resolve/{rev}/{file};
 *    get_hf_file_metadata: the hub answers with X-Repo-Commit, and, for an
 *    LFS file, a redirect to the storage host carrying X-Linked-Etag (the
 *    sha256) and X-Linked-Size; a small file comes directly, its ETag the
 *    git blob id. The blob's name is that etag, normalised (_normalize_etag).
 *  - file_download.py, http_get: a resumed transfer sends Range: bytes=N-,
 *    and a 200 instead of 206 means the server ignored it: start over.
 *  - utils/_http.py, hf_raise_for_status: X-Error-Code (RepoNotFound,
 *    RevisionNotFound, EntryNotFound, GatedRepo) and X-Error-Message say
 *    why a 401/403/404 came.
 *  - utils/_auth.py: the token from HF_TOKEN (or the older
 *    HUGGING_FACE_HUB_TOKEN), else the token file; sent as "Authorization:
 *    Bearer". libcurl does not send it on to another host when it follows
 *    the redirect (CURLOPT_UNRESTRICTED_AUTH stays off), as the storage
 *    host must not see it.
 * The cache's side (file_download.py, _hf_hub_download_to_cache_dir and
 * _create_symlink; utils/_cache_manager.py, CachedIncompleteFileInfo):
 * blobs/ETAG, written as blobs/ETAG.incomplete and renamed; a lock per blob
 * at .locks/models--ORG--NAME/ETAG.lock (the filelock package's flock, so
 * a Python download of the same blob waits for ours and the other way);
 * snapshots/COMMIT/FILE -> ../../blobs/ETAG, relative; refs/REV holding
 * the commit. Unlike today's huggingface_hub, which drops a cut transfer,
 * the .incomplete file is kept for the next pull to resume (as its older
 * releases did and `hf cache` still reports); it is under the lock, checked
 * against its hash before it becomes a blob, and removed when it cannot be
 * resumed (a wrong hash, a full disk). */
#define _DEFAULT_SOURCE /* flock */
#include "net_impl.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ENDPOINT "https://huggingface.co"
#define MAX_API_BODY (64u << 20) /* the listing; a big repository's is a few MB */
#define MAX_ERROR_BODY 4096
#define TRIES 3 /* per file, when bytes came before the cut */

typedef struct hub_file {
  char *path;     /* in the repository (owned) */
  char etag[65];  /* the blob's name: the LFS sha256, else the git blob id */
  bool lfs;
  uint64_t size;
  bool have;      /* blobs/ETAG is already there */
  uint64_t partial; /* bytes of blobs/ETAG.incomplete before this pull */
} hub_file;

typedef struct pull {
  const sc_hub_options *o;
  sc_model_id id;
  char endpoint[1024], cache[4096], repo[4400];
  char *token; /* owned; NULL: none */
  const char *token_from; /* where it came from, for messages */
  char commit[41];
  hub_file *files;
  int n_files;
  CURL *curl;
  struct curl_slist *headers;
  /* progress */
  uint64_t total, done; /* bytes to download this pull; done before the current file */
  int index, count;
  double last_report;
  sc_hub_result *out;
} pull;

/* The headers of one answer in a redirect chain. */
typedef struct answer {
  long status;
  char repo_commit[64], linked_etag[96], etag[96], error_code[64], error_message[256];
  bool has_range;
  uint64_t range_start;
} answer;

/* One request: its answers, and where its body goes. */
typedef struct xfer {
  pull *p;
  const hub_file *f;    /* the file a download is for, else NULL */
  answer cur, hub; /* the answer being read; the hub's (the one with X-Repo-Commit) */
  bool hub_seen;
  /* body: a file (fd >= 0 once opened) or memory */
  bool to_file;
  const char *path;     /* the .incomplete file */
  int fd;
  uint64_t offset;      /* bytes already in the file when the request went */
  uint64_t written;     /* bytes appended by this request */
  uint64_t expect;      /* the file's size */
  bool started;         /* the 2xx body began: the Range answer was checked */
  EVP_MD_CTX *md;
  int werrno;           /* a write failed with this errno */
  bool overflow, bad_range;
  char *body;
  size_t body_len, body_cap, body_max;
} xfer;

/* ---- small helpers -------------------------------------------------------------- */

static bool truthy(const char *v) {
  return v && (strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0 ||
               strcasecmp(v, "yes") == 0 || strcasecmp(v, "on") == 0);
}

/* Trims spaces and line ends on both sides, in place. */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* The token (utils/_auth.py get_token: the environment, then the file). */
static void read_token(pull *p) {
  const char *env = getenv("HF_TOKEN");
  const char *from = "HF_TOKEN";
  if (!env || !*env) {
    env = getenv("HUGGING_FACE_HUB_TOKEN");
    from = "HUGGING_FACE_HUB_TOKEN";
  }
  if (env && *env) {
    char *t = strdup(env);
    if (t && *trim(t)) {
      p->token = t;
      p->token_from = from;
      return;
    }
    free(t);
  }
  char path[4200], home[4096];
  const char *tp = getenv("HF_TOKEN_PATH");
  if (tp && *tp) snprintf(path, sizeof path, "%s", tp);
  else if (sc_model_hf_home(home, sizeof home)) snprintf(path, sizeof path, "%s/token", home);
  else return;
  char *text = NULL;
  size_t len = 0;
  if (sc_file_read_regular(path, 64 * 1024, &text, &len, NULL) != SC_OK) return;
  char *t = trim(text);
  if (*t) {
    memmove(text, t, strlen(t) + 1);
    p->token = text;
    p->token_from = "the token file";
    return;
  }
  free(text);
}

/* Percent-encodes s into buf (RFC 3986 unreserved kept; '/' kept when
 * keep_slash): hf_hub_url quotes the file name, model_info the revision. */
static void url_quote(const char *s, bool keep_slash, char *buf, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (; *s && o + 4 < n; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      buf[o++] = (char)c;
    } else {
      buf[o++] = '%';
      buf[o++] = hex[c >> 4];
      buf[o++] = hex[c & 15];
    }
  }
  buf[o] = '\0';
}

/* mkdir -p; false with errno set. */
static bool make_dirs(const char *path) {
  char buf[4600];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *s = buf + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return false;
    *s = '/';
  }
  return mkdir(buf, 0777) == 0 || errno == EEXIST;
}

static void fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)fsync(fd);
  close(fd);
}

static void dir_of(const char *path, char *buf, size_t n) {
  snprintf(buf, n, "%s", path);
  char *slash = strrchr(buf, '/');
  if (slash && slash != buf) *slash = '\0';
}

/* A path inside the repository that stays inside the snapshot
 * (file_download.py, _validate_relative_filename / _get_pointer_path). */
static bool safe_repo_path(const char *s) {
  if (!*s || s[0] == '/' || strchr(s, '\\') || strlen(s) > 1000) return false;
  for (const char *c = s; *c;) {
    const char *e = strchr(c, '/');
    size_t n = e ? (size_t)(e - c) : strlen(c);
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) return false;
    c += n + (e ? 1 : 0);
  }
  return true;
}

static bool hex_of_len(const char *s, size_t n) {
  size_t i = 0;
  for (; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return i == n;
}

/* ---- curl callbacks ---------------------------------------------------------------- */

static bool header_is(const char *line, size_t n, const char *name, const char **value,
                      size_t *vlen) {
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return false;
  const char *v = line + k + 1;
  const char *end = line + n;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
  *value = v;
  *vlen = (size_t)(end - v);
  return true;
}

static void copy_value(char *dst, size_t n, const char *v, size_t len) {
  if (len >= n) len = n - 1;
  memcpy(dst, v, len);
  dst[len] = '\0';
}

/* _normalize_etag: W/"x" and "x" are x. */
static void normalize_etag(char *e) {
  char *s = e;
  if (s[0] == 'W' && s[1] == '/') s += 2;
  if (*s == '"') s++;
  size_t n = strlen(s);
  if (n > 0 && s[n - 1] == '"') n--;
  memmove(e, s, n);
  e[n] = '\0';
}

static size_t on_header(char *line, size_t size, size_t nitems, void *u) {
  xfer *x = u;
  size_t n = size * nitems;
  const char *v;
  size_t vl;
  if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    /* A new answer in the chain (a redirect's, then the next host's). */
    memset(&x->cur, 0, sizeof x->cur);
    const char *sp = memchr(line, ' ', n);
    if (sp) x->cur.status = strtol(sp + 1, NULL, 10);
  } else if (n <= 2) {
    /* The end of an answer's headers: the hub's is the first that names
     * the commit. */
    if (!x->hub_seen && x->cur.repo_commit[0]) {
      x->hub = x->cur;
      x->hub_seen = true;
    }
  } else if (header_is(line, n, "X-Repo-Commit", &v, &vl)) {
    copy_value(x->cur.repo_commit, sizeof x->cur.repo_commit, v, vl);
  } else if (header_is(line, n, "X-Linked-Etag", &v, &vl)) {
    copy_value(x->cur.linked_etag, sizeof x->cur.linked_etag, v, vl);
    normalize_etag(x->cur.linked_etag);
  } else if (header_is(line, n, "ETag", &v, &vl)) {
    copy_value(x->cur.etag, sizeof x->cur.etag, v, vl);
    normalize_etag(x->cur.etag);
  } else if (header_is(line, n, "X-Error-Code", &v, &vl)) {
    copy_value(x->cur.error_code, sizeof x->cur.error_code, v, vl);
  } else if (header_is(line, n, "X-Error-Message", &v, &vl)) {
    copy_value(x->cur.error_message, sizeof x->cur.error_message, v, vl);
  } else if (header_is(line, n, "Content-Range", &v, &vl)) {
    /* bytes START-END/TOTAL */
    char buf[96];
    copy_value(buf, sizeof buf, v, vl);
    unsigned long long a;
    if (sscanf(buf, "bytes %llu-", &a) == 1) {
      x->cur.has_range = true;
      x->cur.range_start = a;
    }
  }
  return n;
}

static bool keep_body(xfer *x, const char *data, size_t len) {
  if (x->body_len + len > x->body_max) len = x->body_max - x->body_len;
  return sc_buf_append(&x->body, &x->body_len, &x->body_cap, 4096, data, len);
}

static bool write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, data, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    len -= (size_t)w;
  }
  return true;
}

/* The git blob id's hash starts with "blob SIZE\0" (git's object format),
 * which is how the hub names a small file (blobId, ETag). */
static bool hash_start(xfer *x, const hub_file *f) {
  if (EVP_DigestInit_ex(x->md, f->lfs ? EVP_sha256() : EVP_sha1(), NULL) != 1) return false;
  if (f->lfs) return true;
  char head[48];
  int n = snprintf(head, sizeof head, "blob %llu", (unsigned long long)f->size);
  return EVP_DigestUpdate(x->md, head, (size_t)n + 1) == 1;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *u) {
  xfer *x = u;
  size_t len = size * nmemb;
  long code = x->cur.status;
  if (!x->to_file || code < 200 || code >= 300) return keep_body(x, data, len) ? len : 0;
  if (!x->started) {
    x->started = true;
    if (x->offset > 0 && code == 200) {
      /* The server ignored the Range (http_get): the whole file comes. */
      x->offset = 0;
      if (!hash_start(x, x->f)) {
        x->werrno = EIO;
        return 0;
      }
    } else if (code == 206 && (!x->cur.has_range || x->cur.range_start != x->offset)) {
      x->bad_range = true;
      return 0;
    }
    x->fd = open(x->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (x->fd < 0 || ftruncate(x->fd, (off_t)x->offset) != 0 ||
        lseek(x->fd, (off_t)x->offset, SEEK_SET) < 0) {
      x->werrno = errno;
      return 0;
    }
  }
  if (x->offset + x->written + len > x->expect) {
    x->overflow = true;
    return 0;
  }
  if (!write_all(x->fd, data, len)) {
    x->werrno = errno;
    return 0;
  }
  EVP_DigestUpdate(x->md, data, len);
  x->written += len;
  return len;
}

static void report(pull *p, const char *file, uint64_t now_done, bool force) {
  if (!p->o->progress) return;
  double t = sc_now_ms();
  if (!force && t - p->last_report < 100) return;
  p->last_report = t;
  sc_hub_progress pr = {file, now_done, p->total, p->index, p->count};
  p->o->progress(p->o->user, &pr);
}

static int on_progress(void *u, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  xfer *x = u;
  pull *p = x->p;
  if (p->o->cancel && *p->o->cancel) return 1;
  if (x->f) report(p, x->f->path, p->done + x->offset + x->written, false);
  return 0;
}

/* ---- requests -------------------------------------------------------------------------- */

static void xfer_reset(xfer *x, pull *p) {
  memset(x, 0, sizeof *x);
  x->p = p;
  x->fd = -1;
  x->body_max = MAX_ERROR_BODY;
}

static CURLcode perform(pull *p, const char *url, xfer *x, const char *range) {
  CURL *c = p->curl;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->headers);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  /* A transfer that stalls for a minute is cut (and resumed by a retry). */
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
  if (range) curl_easy_setopt(c, CURLOPT_RANGE, range);
  return curl_easy_perform(c);
}

/* One line for an HTTP error from the hub (hf_raise_for_status's cases). */
static sc_status http_error(pull *p, const xfer *x, const char *file, sc_error *err) {
  const answer *a = &x->cur;
  long s = a->status;
  const char *id = p->id.repo;
  const char *code = a->error_code;
  char page[1300];
  snprintf(page, sizeof page, "%s/%s", p->endpoint, id);
  if (strcmp(code, "GatedRepo") == 0)
    return sc_error_set(err, SC_ERR_IO,
                        "%s is gated (HTTP %ld): accept its terms on %s while logged in, then "
                        "%s",
                        id, s, page,
                        p->token ? "check that the token's account has access"
                                 : "set HF_TOKEN to an access token of that account");
  if (s == 401 && p->token && strstr(a->error_message, "Invalid credentials"))
    return sc_error_set(err, SC_ERR_IO, "%s: the hub refused the token from %s (HTTP 401: %s)",
                        id, p->token_from, a->error_message);
  if (s == 401 || s == 403)
    return sc_error_set(err, SC_ERR_IO,
                        "%s: no access (HTTP %ld%s%s): check the id on %s; a private or gated "
                        "model needs %s",
                        id, s, a->error_message[0] ? ": " : "", a->error_message, page,
                        p->token ? "a token with access to it" : "HF_TOKEN (an access token)");
  if (s == 404 && strcmp(code, "RevisionNotFound") == 0)
    return sc_error_set(err, SC_ERR_IO, "%s has no revision '%s' (HTTP 404)", id,
                        p->id.revision);
  if (s == 404 && strcmp(code, "EntryNotFound") == 0)
    return sc_error_set(err, SC_ERR_IO, "%s: %s is not in commit %.12s (HTTP 404)", id,
                        file ? file : "a file", p->commit);
  if (s == 404)
    return sc_error_set(err, SC_ERR_IO, "%s: no such model on %s (HTTP 404)", id, p->endpoint);
  if (s == 429)
    return sc_error_set(err, SC_ERR_IO, "%s: the hub is rate-limiting (HTTP 429); try again later",
                        id);
  return sc_error_set(err, SC_ERR_IO, "%s: %s%s answered HTTP %ld%s%s", id,
                      file ? file : "the hub", file ? "'s download" : "", s,
                      a->error_message[0] ? ": " : "", a->error_message);
}

static sc_status net_error(pull *p, CURLcode rc, const char *url, sc_error *err) {
  if (rc == CURLE_ABORTED_BY_CALLBACK)
    return sc_error_set(err, SC_ERR_CANCELLED, "%s: the pull was cancelled", p->id.repo);
  char host[256] = "";
  const char *h = strstr(url, "://");
  if (h) {
    h += 3;
    size_t n = strcspn(h, "/");
    copy_value(host, sizeof host, h, n);
  }
  return sc_error_set(err, SC_ERR_IO, "%s: network error reaching %s: %s", p->id.repo, host,
                      curl_easy_strerror(rc));
}

/* ---- the listing ---------------------------------------------------------------------- */

static const char *const CONFIG_FILES[] = {
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json",
    "model.safetensors.index.json",
};

static bool is_config_file(const char *path) {
  for (size_t i = 0; i < sizeof CONFIG_FILES / sizeof CONFIG_FILES[0]; i++)
    if (strcmp(path, CONFIG_FILES[i]) == 0) return true;
  return false;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool matches_include(const sc_hub_options *o, const char *path) {
  for (int i = 0; i < o->n_include; i++)
    if (fnmatch(o->include[i], path, 0) == 0) return true;
  return false;
}

/* Which files this pull wants: by default the config, tokenizer and
 * safetensors files at the repository's top; with --include, the files it
 * matches, with the config and tokenizer files too unless they are all
 * GGUF (a GGUF carries its config and tokenizer, and a folder with a
 * config.json is read as a safetensors checkpoint: gguf.c, sc_gguf_find). */
static sc_status pick_files(pull *p, json_t *siblings, sc_error *err) {
  size_t n = json_array_size(siblings);
  p->files = calloc(n ? n : 1, sizeof *p->files);
  SC_CHECK(p->files, err, SC_ERR_NOMEM, "out of memory");
  bool weights = false, all_gguf = true, any_include = false;
  char ggufs[512] = "";
  size_t i;
  json_t *s;
  /* Two passes: the weights the patterns (or the default) pick, then the
   * config files they need. */
  for (int pass = 0; pass < 2; pass++) {
    json_array_foreach(siblings, i, s) {
      const char *path = json_string_value(json_object_get(s, "rfilename"));
      if (!path) continue;
      bool top = !strchr(path, '/');
      bool want;
      if (pass == 0) {
        want = p->o->n_include > 0 ? matches_include(p->o, path)
                                   : top && ends_with(path, ".safetensors");
        if (top && ends_with(path, ".gguf") && strlen(ggufs) < 300)
          snprintf(ggufs + strlen(ggufs), sizeof ggufs - strlen(ggufs), "%s%s",
                   ggufs[0] ? ", " : "", path);
        if (want) {
          any_include = true;
          if (!ends_with(path, ".gguf")) all_gguf = false;
          if (ends_with(path, ".safetensors") || ends_with(path, ".gguf")) weights = true;
        }
      } else {
        bool picked_already = false;
        for (int k = 0; k < p->n_files; k++)
          if (strcmp(p->files[k].path, path) == 0) picked_already = true;
        want = !picked_already && is_config_file(path) && !(p->o->n_include > 0 && all_gguf);
      }
      if (!want) continue;
      SC_CHECK(safe_repo_path(path), err, SC_ERR_FORMAT,
               "%s: the hub lists a file with an unsafe path '%.80s'", p->id.repo, path);
      hub_file *f = &p->files[p->n_files];
      json_t *lfs = json_object_get(s, "lfs");
      const char *sha = json_string_value(json_object_get(lfs, "sha256"));
      const char *oid = json_string_value(json_object_get(s, "blobId"));
      json_t *size = json_object_get(s, "size");
      f->lfs = json_is_object(lfs);
      const char *etag = f->lfs ? sha : oid;
      SC_CHECK(etag && hex_of_len(etag, f->lfs ? 64 : 40) && json_is_integer(size) &&
                   json_integer_value(size) >= 0,
               err, SC_ERR_FORMAT,
               "%s: the hub's listing gives no %s and size for %s (is %s a Hugging Face hub?)",
               p->id.repo, f->lfs ? "sha256" : "blob id", path, p->endpoint);
      snprintf(f->etag, sizeof f->etag, "%s", etag);
      f->size = (uint64_t)json_integer_value(size);
      if (f->lfs && json_is_integer(json_object_get(lfs, "size")))
        f->size = (uint64_t)json_integer_value(json_object_get(lfs, "size"));
      f->path = strdup(path);
      SC_CHECK(f->path, err, SC_ERR_NOMEM, "out of memory");
      p->n_files++;
    }
    if (pass == 0 && p->o->n_include > 0 && !any_include) {
      char pats[300] = "";
      for (int k = 0; k < p->o->n_include && strlen(pats) < 200; k++)
        snprintf(pats + strlen(pats), sizeof pats - strlen(pats), "%s'%s'", k ? ", " : "",
                 p->o->include[k]);
      return sc_error_set(err, SC_ERR_INVALID, "%s@%s: no file matches %s", p->id.repo,
                          p->id.revision, pats);
    }
  }
  if (!weights) {
    if (ggufs[0])
      return sc_error_set(err, SC_ERR_UNSUPPORTED,
                          "%s@%s has no safetensors weights; pick one of its GGUF files with "
                          "--include (%s)",
                          p->id.repo, p->id.revision, ggufs);
    return sc_error_set(err, SC_ERR_UNSUPPORTED,
                        "%s@%s has no .safetensors or .gguf weights sculpt can load",
                        p->id.repo, p->id.revision);
  }
  return SC_OK;
}

static sc_status fetch_listing(pull *p, sc_error *err) {
  char rev[400], url[2048];
  url_quote(p->id.revision, false, rev, sizeof rev);
  snprintf(url, sizeof url, "%s/api/models/%s/revision/%s?blobs=true", p->endpoint, p->id.repo,
           rev);
  xfer x;
  xfer_reset(&x, p);
  x.body_max = MAX_API_BODY;
  CURLcode rc = perform(p, url, &x, NULL);
  sc_status st = SC_OK;
  if (rc != CURLE_OK) st = net_error(p, rc, url, err);
  else if (x.cur.status < 200 || x.cur.status >= 300) st = http_error(p, &x, NULL, err);
  json_t *root = NULL;
  if (st == SC_OK) {
    json_error_t je;
    root = x.body ? json_loadb(x.body, x.body_len, 0, &je) : NULL;
    const char *sha = json_string_value(json_object_get(root, "sha"));
    json_t *sib = json_object_get(root, "siblings");
    if (!sha || !hex_of_len(sha, 40) || !json_is_array(sib))
      st = sc_error_set(err, SC_ERR_FORMAT,
                        "%s: %s's answer is not a model listing (no commit or no files)",
                        p->id.repo, p->endpoint);
    else {
      memcpy(p->commit, sha, 41);
      st = pick_files(p, sib, err);
    }
  }
  json_decref(root);
  free(x.body);
  return st;
}

/* ---- one blob ---------------------------------------------------------------------------- */

static void blob_path(const pull *p, const hub_file *f, const char *suffix, char *buf, size_t n) {
  snprintf(buf, n, "%s/blobs/%s%s", p->repo, f->etag, suffix);
}

static bool file_size(const char *path, uint64_t *size) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = (uint64_t)st.st_size;
  return true;
}

/* Takes the blob's lock, waiting (and saying so) while another pull holds
 * it; -1 with *err when cancelled or the lock cannot be made. */
static int lock_blob(pull *p, const hub_file *f, sc_error *err) {
  char dir[4600], path[4800];
  snprintf(dir, sizeof dir, "%s/.locks/%s", p->cache, strrchr(p->repo, '/') + 1);
  if (!make_dirs(dir)) {
    sc_error_set(err, SC_ERR_IO, "%s: %s", dir, strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, "%s/%s.lock", dir, f->etag);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    sc_error_set(err, SC_ERR_IO, "%s: %s", path, strerror(errno));
    return -1;
  }
  bool said = false;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      sc_error_set(err, SC_ERR_IO, "%s: cannot lock: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
    if (!said) SC_LOG_INFO("%s: another download of %s is under way; waiting", p->id.repo, f->path);
    said = true;
    if (p->o->cancel && *p->o->cancel) {
      sc_error_set(err, SC_ERR_CANCELLED, "%s: the pull was cancelled", p->id.repo);
      close(fd);
      return -1;
    }
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return fd;
}

/* Feeds the bytes already in the partial file to the hash. */
static bool hash_partial(xfer *x, const char *path, uint64_t n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char *buf = malloc(1 << 20);
  bool ok = buf != NULL;
  while (ok && n > 0) {
    ssize_t r = read(fd, buf, n < (1u << 20) ? (size_t)n : (1u << 20));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) ok = false;
    else {
      EVP_DigestUpdate(x->md, buf, (size_t)r);
      n -= (uint64_t)r;
    }
  }
  free(buf);
  close(fd);
  return ok;
}

static sc_status disk_full(pull *p, const hub_file *f, const char *inc, sc_error *err) {
  /* Nothing to resume from on a full disk: the space goes back now. */
  unlink(inc);
  char need[32];
  sc_format_bytes(f->size, need, sizeof need);
  return sc_error_set(err, SC_ERR_IO,
                      "%s: the disk is full (%s/blobs): %s needs %s; free some space and pull "
                      "again",
                      p->id.repo, p->repo, f->path, need);
}

/* Downloads one blob into place (the lock held). */
static sc_status download(pull *p, hub_file *f, sc_error *err) {
  char inc[4600], blob[4600], url[4096], qfile[2048];
  blob_path(p, f, ".incomplete", inc, sizeof inc);
  blob_path(p, f, "", blob, sizeof blob);
  url_quote(f->path, true, qfile, sizeof qfile);
  snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", p->endpoint, p->id.repo, p->commit, qfile);
  xfer x;
  sc_status st = SC_OK;
  for (int attempt = 1;; attempt++) {
    xfer_reset(&x, p);
    x.to_file = true;
    x.f = f;
    x.path = inc;
    x.expect = f->size;
    x.md = EVP_MD_CTX_new();
    uint64_t have = 0;
    if (file_size(inc, &have) && have > f->size) {
      unlink(inc); /* longer than the file: not a prefix of it */
      have = 0;
    }
    if (!x.md || !hash_start(&x, f) || (have > 0 && !hash_partial(&x, inc, have))) {
      EVP_MD_CTX_free(x.md);
      return sc_error_set(err, SC_ERR_INTERNAL, "%s: cannot hash %s", p->id.repo, inc);
    }
    x.offset = have;
    CURLcode rc = CURLE_OK;
    const bool asked = have < f->size || f->size == 0;
    if (asked) {
      char range[48];
      snprintf(range, sizeof range, "%llu-", (unsigned long long)have);
      rc = perform(p, url, &x, have > 0 ? range : NULL);
      p->out->transferred += x.written;
    } /* else whole already: cut between its last byte and the rename */
    if (asked && rc == CURLE_OK && f->size == 0 && x.fd < 0 && x.cur.status / 100 == 2) {
      /* An empty file: no body byte came to create it. */
      x.fd = open(inc, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (x.fd < 0) x.werrno = errno;
    }
    if (x.fd >= 0 && rc == CURLE_OK && fsync(x.fd) != 0 && !x.werrno) x.werrno = errno;
    if (x.fd >= 0) close(x.fd);
    x.fd = -1;
    uint64_t got = x.offset + x.written;
    if (asked && rc == CURLE_OK && x.cur.status / 100 != 2) {
      st = http_error(p, &x, f->path, err);
    } else if (x.werrno == ENOSPC || x.werrno == EDQUOT) {
      st = disk_full(p, f, inc, err);
    } else if (x.werrno) {
      st = sc_error_set(err, SC_ERR_IO, "%s: writing %s: %s", p->id.repo, inc, strerror(x.werrno));
    } else if (x.overflow) {
      unlink(inc);
      st = sc_error_set(err, SC_ERR_FORMAT,
                        "%s: %s came longer than the %llu bytes the hub lists; removed", p->id.repo,
                        f->path, (unsigned long long)f->size);
    } else if (x.bad_range) {
      unlink(inc);
      st = sc_error_set(err, SC_ERR_FORMAT,
                        "%s: %s: the server answered the resume at byte %llu with another range; "
                        "the partial file was removed, pull again",
                        p->id.repo, f->path, (unsigned long long)x.offset);
    } else if (rc != CURLE_OK || got < f->size) {
      if (rc == CURLE_ABORTED_BY_CALLBACK) {
        st = net_error(p, rc, url, err);
      } else if (x.written > 0 && attempt < TRIES) {
        /* Bytes came before the cut: resume now (http_get retries too). */
        SC_LOG_INFO("%s: %s cut after %llu of %llu bytes (%s); resuming", p->id.repo, f->path,
                    (unsigned long long)got, (unsigned long long)f->size,
                    rc != CURLE_OK ? curl_easy_strerror(rc) : "short answer");
        EVP_MD_CTX_free(x.md);
        free(x.body);
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
        continue;
      } else if (got > 0) {
        char a[32], b[32];
        sc_format_bytes(got, a, sizeof a);
        sc_format_bytes(f->size, b, sizeof b);
        st = sc_error_set(err, SC_ERR_IO,
                          "%s: the transfer of %s was interrupted at %s of %s (%s); run the "
                          "same pull again to resume it",
                          p->id.repo, f->path, a, b,
                          rc != CURLE_OK ? curl_easy_strerror(rc) : "the answer ended early");
      } else {
        st = net_error(p, rc != CURLE_OK ? rc : CURLE_PARTIAL_FILE, url, err);
      }
    } else if (x.hub_seen && ((x.hub.repo_commit[0] && strcmp(x.hub.repo_commit, p->commit)) ||
                              strcmp(x.hub.linked_etag[0] ? x.hub.linked_etag
                                     : x.hub.etag[0]      ? x.hub.etag
                                                          : f->etag,
                                     f->etag) != 0)) {
      /* The hub named another commit or blob than its listing did. */
      unlink(inc);
      st = sc_error_set(err, SC_ERR_FORMAT,
                        "%s: %s: the hub's headers name blob %.16s at commit %.12s, its listing "
                        "%.16s at %.12s; removed, pull again",
                        p->id.repo, f->path,
                        x.hub.linked_etag[0] ? x.hub.linked_etag : x.hub.etag, x.hub.repo_commit,
                        f->etag, p->commit);
    } else {
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned int mdn = 0;
      char hex[2 * EVP_MAX_MD_SIZE + 1];
      EVP_DigestFinal_ex(x.md, md, &mdn);
      for (unsigned k = 0; k < mdn; k++) snprintf(hex + 2 * k, 3, "%02x", md[k]);
      if (strcmp(hex, f->etag) != 0) {
        unlink(inc);
        st = sc_error_set(err, SC_ERR_FORMAT,
                          "%s: %s does not match its %s (expected %.16s..., got %.16s...); the "
                          "download was removed, nothing was kept",
                          p->id.repo, f->path, f->lfs ? "sha256" : "git blob id", f->etag, hex);
      } else if (rename(inc, blob) != 0) {
        st = sc_error_set(err, SC_ERR_IO, "%s: %s -> %s: %s", p->id.repo, inc, blob,
                          strerror(errno));
      } else {
        char dir[4600];
        dir_of(blob, dir, sizeof dir);
        fsync_dir(dir);
        p->out->downloaded++;
      }
    }
    break;
  }
  EVP_MD_CTX_free(x.md);
  free(x.body);
  /* An error answer before any byte left no file; an empty partial is no
   * use either. */
  uint64_t left = 0;
  if (st != SC_OK && file_size(inc, &left) && left == 0) unlink(inc);
  return st;
}

static sc_status fetch_blob(pull *p, hub_file *f, sc_error *err) {
  char blob[4600];
  blob_path(p, f, "", blob, sizeof blob);
  int lock = lock_blob(p, f, err);
  if (lock < 0) return err->status;
  uint64_t size;
  sc_status st = SC_OK;
  /* Another pull may have finished it while this one waited. */
  if (!(file_size(blob, &size) && size == f->size)) st = download(p, f, err);
  close(lock); /* releases the flock */
  return st;
}

/* ---- the snapshot ---------------------------------------------------------------------- */

/* snapshots/COMMIT/PATH -> ../../blobs/ETAG (one more ../ per folder in
 * PATH), made beside it and renamed over it: atomic, and two pulls making
 * the same link agree. */
static sc_status link_file(pull *p, const hub_file *f, sc_error *err) {
  char link[4800], dir[4800], target[4800], tmp[4900];
  snprintf(link, sizeof link, "%s/snapshots/%s/%s", p->repo, p->commit, f->path);
  dir_of(link, dir, sizeof dir);
  SC_CHECK(make_dirs(dir), err, SC_ERR_IO, "%s: %s", dir, strerror(errno));
  size_t at = 0;
  at += (size_t)snprintf(target, sizeof target, "../../");
  for (const char *c = f->path; *c; c++)
    if (*c == '/' && at + 3 < sizeof target) at += (size_t)snprintf(target + at, sizeof target - at, "../");
  snprintf(target + at, sizeof target - at, "blobs/%s", f->etag);
  char now[4800];
  ssize_t n = readlink(link, now, sizeof now - 1);
  if (n > 0) {
    now[n] = '\0';
    if (strcmp(now, target) == 0) return SC_OK;
  }
  snprintf(tmp, sizeof tmp, "%s.sculpt-%ld.tmp", link, (long)getpid());
  unlink(tmp);
  SC_CHECK(symlink(target, tmp) == 0, err, SC_ERR_IO, "%s: %s", tmp, strerror(errno));
  if (rename(tmp, link) != 0) {
    int e = errno;
    unlink(tmp);
    return sc_error_set(err, SC_ERR_IO, "%s: %s", link, strerror(e));
  }
  return SC_OK;
}

/* refs/REV <- the commit, atomically (_cache_commit_hash_for_specific_
 * revision writes a temp file and renames it). */
static sc_status write_ref(pull *p, sc_error *err) {
  if (strcmp(p->id.revision, p->commit) == 0) return SC_OK;
  char ref[4700], dir[4700], tmp[4800], now[41];
  if (sc_model_cache_commit(p->repo, p->id.revision, now) && strcmp(now, p->commit) == 0)
    return SC_OK;
  snprintf(ref, sizeof ref, "%s/refs/%s", p->repo, p->id.revision);
  dir_of(ref, dir, sizeof dir);
  SC_CHECK(make_dirs(dir), err, SC_ERR_IO, "%s: %s", dir, strerror(errno));
  snprintf(tmp, sizeof tmp, "%s.sculpt-%ld.tmp", ref, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  SC_CHECK(fd >= 0, err, SC_ERR_IO, "%s: %s", tmp, strerror(errno));
  bool ok = sc_file_write_all(fd, p->commit, 40);
  int e = errno;
  close(fd);
  if (!ok || rename(tmp, ref) != 0) {
    if (ok) e = errno;
    unlink(tmp);
    return sc_error_set(err, SC_ERR_IO, "%s: %s", ref, strerror(e));
  }
  fsync_dir(dir);
  return SC_OK;
}

/* ---- the pull ------------------------------------------------------------------------------ */

/* The free bytes where the blobs will go: the nearest folder that exists. */
static bool free_space(const char *path, uint64_t *out) {
  char buf[4600];
  snprintf(buf, sizeof buf, "%s", path);
  for (;;) {
    struct statvfs vs;
    if (statvfs(buf, &vs) == 0) {
      *out = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
      return true;
    }
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return false;
    *slash = '\0';
  }
}

static sc_status from_cache_only(pull *p, sc_error *err) {
  char commit[41];
  SC_CHECK(sc_model_cache_commit(p->repo, p->id.revision, commit), err, SC_ERR_IO,
           "HF_HUB_OFFLINE is set and %s@%s is not in the cache (%s)", p->id.repo,
           p->id.revision, p->cache);
  snprintf(p->out->dir, sizeof p->out->dir, "%s/snapshots/%s", p->repo, commit);
  struct stat st;
  SC_CHECK(stat(p->out->dir, &st) == 0, err, SC_ERR_IO,
           "HF_HUB_OFFLINE is set and the cache has no snapshot %.12s of %s", commit, p->id.repo);
  memcpy(p->out->commit, commit, 41);
  p->out->offline = true;
  return SC_OK;
}

static sc_status run(pull *p, sc_error *err) {
  if (truthy(getenv("HF_HUB_OFFLINE")) || truthy(getenv("TRANSFORMERS_OFFLINE")))
    return from_cache_only(p, err);
  SC_TRY(sc_net__curl_start(err));
  p->curl = curl_easy_init();
  SC_CHECK(p->curl, err, SC_ERR_NOMEM, "out of memory");
  read_token(p);
  char auth[8300], ua[64];
  snprintf(ua, sizeof ua, "User-Agent: sculpt/%s", sc_version());
  p->headers = curl_slist_append(NULL, ua);
  /* The real size, never a compressed one (get_hf_file_metadata). */
  p->headers = curl_slist_append(p->headers, "Accept-Encoding: identity");
  if (p->token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", p->token);
    p->headers = curl_slist_append(p->headers, auth);
    memset(auth, 0, sizeof auth);
  }
  SC_CHECK(p->headers, err, SC_ERR_NOMEM, "out of memory");
  SC_TRY(fetch_listing(p, err));

  /* What is missing, and whether the disk takes it: said before a byte. */
  uint64_t need = 0;
  p->count = 0;
  for (int i = 0; i < p->n_files; i++) {
    hub_file *f = &p->files[i];
    char blob[4600], inc[4600];
    uint64_t size = 0;
    blob_path(p, f, "", blob, sizeof blob);
    blob_path(p, f, ".incomplete", inc, sizeof inc);
    f->have = file_size(blob, &size) && size == f->size;
    p->out->bytes += f->size;
    if (f->have) continue;
    if (!file_size(inc, &f->partial) || f->partial > f->size) f->partial = 0;
    need += f->size - f->partial;
    p->total += f->size;
    p->count++;
  }
  uint64_t avail;
  if (need > 0 && free_space(p->repo, &avail) && avail < need) {
    char a[32], b[32];
    sc_format_bytes(need, a, sizeof a);
    sc_format_bytes(avail, b, sizeof b);
    return sc_error_set(err, SC_ERR_IO,
                        "%s: not enough disk space in %s: %s to download, %s free; nothing was "
                        "written",
                        p->id.repo, p->cache, a, b);
  }
  if (p->count > 0) {
    char blobs[4600];
    snprintf(blobs, sizeof blobs, "%s/blobs", p->repo);
    SC_CHECK(make_dirs(blobs), err, SC_ERR_IO, "%s: %s", blobs, strerror(errno));
  }
  /* The small files first: a wrong id or a gated model shows at once. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < p->n_files; i++) {
      hub_file *f = &p->files[i];
      if (f->have || (pass == 0) != !f->lfs) continue;
      p->index++;
      report(p, f->path, p->done + f->partial, true);
      SC_TRY(fetch_blob(p, f, err));
      p->done += f->size;
      report(p, f->path, p->done, true);
    }
  if (p->count > 0) report(p, NULL, p->done, true);
  /* Every blob is there: now the snapshot, then the ref. */
  for (int i = 0; i < p->n_files; i++) SC_TRY(link_file(p, &p->files[i], err));
  char snap[4600];
  snprintf(snap, sizeof snap, "%s/snapshots/%s", p->repo, p->commit);
  fsync_dir(snap);
  SC_TRY(write_ref(p, err));
  snprintf(p->out->dir, sizeof p->out->dir, "%s", snap);
  memcpy(p->out->commit, p->commit, 41);
  p->out->files = p->n_files;
  return SC_OK;
}

sc_status sc_hub_pull(const char *id, const sc_hub_options *o, sc_hub_result *out,
                      sc_error *err) {
  memset(out, 0, sizeof *out);
  sc_hub_options none = {0};
  pull p = {.o = o ? o : &none, .out = out};
  SC_CHECK(id && sc_model_id_parse(id, &p.id), err, SC_ERR_INVALID,
           "'%s' is not a model id: expected ORG/NAME or ORG/NAME@REVISION", id ? id : "");
  if (p.o->cache && *p.o->cache) snprintf(p.cache, sizeof p.cache, "%s", p.o->cache);
  else
    SC_CHECK(sc_model_cache_dir(p.cache, sizeof p.cache), err, SC_ERR_IO,
             "no Hugging Face cache folder: set HF_HUB_CACHE, HF_HOME or HOME");
  const char *ep = p.o->endpoint && *p.o->endpoint ? p.o->endpoint : getenv("HF_ENDPOINT");
  snprintf(p.endpoint, sizeof p.endpoint, "%s", ep && *ep ? ep : DEFAULT_ENDPOINT);
  size_t el = strlen(p.endpoint);
  while (el > 0 && p.endpoint[el - 1] == '/') p.endpoint[--el] = '\0'; /* rstrip("/") */
  SC_CHECK(strncmp(p.endpoint, "http://", 7) == 0 || strncmp(p.endpoint, "https://", 8) == 0,
           err, SC_ERR_INVALID, "HF_ENDPOINT '%s' is not an http(s) URL", p.endpoint);
  sc_model_id_folder(&p.id, p.cache, p.repo, sizeof p.repo);
  sc_status st = run(&p, err);
  for (int i = 0; i < p.n_files; i++) free(p.files[i].path);
  free(p.files);
  curl_slist_free_all(p.headers);
  if (p.curl) curl_easy_cleanup(p.curl);
  if (p.token) memset(p.token, 0, strlen(p.token));
  free(p.token);
  return st;
}

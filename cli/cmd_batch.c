/* cmd_batch.c — `sculpt batch`: fill holes and re-infill diagnostics or
 * query matches across a repository with no editor, checked by tree-sitter
 * and optionally by a build/test command, written atomically.
 *
 * Flow: collect files under the roots (refusing escapes), find the sites,
 * load the model once, then per file and per site (last site first, so the
 * earlier offsets stay valid) decode up to --candidates candidates (seed 0
 * greedy, then seeded samples), keep the first that parses (and, with
 * --check, whose command passes), and finally print a diff or write. */
#define _GNU_SOURCE /* strndup, realpath, memmem */
#include "cli.h"
#include "context.h"
#include "model.h"
#include "net.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define CMD "batch"
#define MAX_CANDIDATES 16
#define CONTEXT_TOKENS 1024 /* prefix + suffix tokens given to the model per site */
#define BYTES_PER_TOKEN 8   /* text window = tokens x this, then trimmed by tokens */
#define TMP_TAG ".sculpt-"  /* temp files: .NAME.sculpt-XXXXXX, skipped by the walk */

/* The engine polls this between steps; SIGINT sets it. */
static _Atomic int g_cancel;
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
  atomic_store(&g_cancel, 1);
}

typedef enum mode { MODE_NONE, MODE_HOLES, MODE_DIAGNOSTICS, MODE_QUERY } mode;
static const char *k_mode_names[] = {"none", "hole", "diagnostic", "query"};

typedef struct args {
  mode mode;
  const char *marker, *diag_src, *query, *capture, *check, *model_dir, *family;
  int candidates, max_tokens;
  double temperature;
  bool write, json, progress, no_progress;
  int batch_sites; /* 1: holes decoded together; 0: one at a time (with the
                      K/V cache); -1: together on a GPU only (measured on the
                      CPU: one at a time with the cache is 2.6x faster) */
  sc_device_kind device;
  char **paths;
  int n_paths;
  /* --backend URL: candidates come from a remote FIM endpoint */
  sc_fim_client_options remote; /* --backend and its options; url NULL: local */
} args;

typedef struct file_ent {
  char *path;      /* as shown in diffs and reports (owned) */
  char *real;      /* realpath, for the escape checks and de-duplication (owned) */
  const char *lang;
  char *orig;      /* the text as read (owned, NUL-terminated) */
  size_t orig_len;
  char *cur;       /* the text with the kept candidates (owned) */
  size_t cur_len;
  char *disk;      /* what we believe is on disk now (owned; orig or a check's write) */
  size_t disk_len;
  mode_t perm;
  bool failed_write;
} file_ent;

typedef enum site_status { SITE_PENDING, SITE_DONE, SITE_FAILED, SITE_SKIPPED } site_status;
static const char *k_status_names[] = {"pending", "done", "failed", "skipped"};

typedef struct site {
  size_t file;
  size_t a, b;        /* span in the file's original text */
  mode mode;
  bool single_line;   /* an inline hole: the fill must stay on the line */
  char *message;      /* the diagnostic's message, or NULL (owned) */
  uint32_t line0, col0, line1, col1; /* 0-based, byte columns, of [a, b) */
  site_status status;
  char *chosen;       /* owned */
  size_t chosen_len;
  int chosen_seed;
  double confidence;
  const char *check;  /* "passed", "failed", "not run" */
  const char *reason; /* why it failed (static) */
  json_t *cands;      /* per candidate: seed, text, parsed, check (owned) */
  double ms;
  sc_infill_result pre; /* the greedy candidate, decoded with other sites */
  bool has_pre;
} site;

typedef struct run {
  args a;
  char **roots; /* realpaths of the PATHs (owned) */
  int n_roots;
  file_ent *files;
  size_t n_files, cap_files;
  site *sites;
  size_t n_sites, cap_sites;
  json_t *skipped; /* [{path, reason}] */
  sc_model *model;
  sc_tokenizer *tok;
  sc_engine *engine;
  int max_seq;
  int batched_sites, batched_passes; /* greedy candidates decoded together */
} run;

/* ---- small helpers ---------------------------------------------------------- */

static char *dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* Replaces [a, b) of text with rep; a new malloc'd text. */
static char *text_splice(const char *text, size_t len, size_t a, size_t b, const char *rep,
                    size_t rep_len, size_t *out_len) {
  size_t n = len - (b - a) + rep_len;
  char *o = malloc(n + 1);
  if (!o) return NULL;
  memcpy(o, text, a);
  memcpy(o + a, rep, rep_len);
  memcpy(o + a + rep_len, text + b, len - b);
  o[n] = '\0';
  *out_len = n;
  return o;
}

/* Is real (a realpath) inside one of the roots (realpaths)? */
static bool under_roots(const run *r, const char *real) {
  for (int i = 0; i < r->n_roots; i++) {
    size_t n = strlen(r->roots[i]);
    if (strncmp(real, r->roots[i], n) == 0 &&
        (real[n] == '\0' || real[n] == '/' || (n == 1 && r->roots[i][0] == '/')))
      return true;
  }
  return false;
}

static void skip_file(run *r, const char *path, const char *reason) {
  json_array_append_new(r->skipped, json_pack("{s:s, s:s}", "path", path, "reason", reason));
  if (!r->a.json) fprintf(stderr, "sculpt batch: skipped %s: %s\n", path, reason);
}

/* A JSON string for text that may not be UTF-8 (a sampled candidate can be
 * any bytes): invalid bytes become U+FFFD, so that the report still prints. */
static json_t *json_text(const char *t, size_t len) {
  json_t *j = json_stringn(t, len);
  if (j) return j;
  char *o = malloc(3 * len + 1);
  if (!o) return json_string("");
  size_t n = 0;
  for (size_t i = 0; i < len;) {
    unsigned char c = (unsigned char)t[i];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = k > 0 && i + k <= len && c != 0;
    for (size_t q = 1; ok && q < k; q++) ok = ((unsigned char)t[i + q] >> 6) == 2;
    if (ok && k > 1) { /* overlongs, surrogates */
      json_t *c1 = json_stringn(t + i, k);
      ok = c1 != NULL;
      json_decref(c1);
    }
    if (ok) {
      memcpy(o + n, t + i, k);
      n += k;
      i += k;
    } else {
      memcpy(o + n, "\xEF\xBF\xBD", 3);
      n += 3;
      i++;
    }
  }
  j = json_stringn(o, n);
  free(o);
  return j ? j : json_string("");
}

/* ---- writing ---------------------------------------------------------------- */

/* Writes data atomically over path: a temp file in the same directory with
 * the given permissions, fsync, rename, fsync of the directory. A kill at any
 * point leaves either the old or the new file whole (at worst a stray
 * .NAME.sculpt-XXXXXX next to it). */
static sc_status write_atomic(const char *path, const char *data, size_t len, mode_t perm,
                              sc_error *err) {
  char *d1 = strdup(path), *d2 = strdup(path);
  if (!d1 || !d2) {
    free(d1);
    free(d2);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  const char *dir = dirname(d1), *base = basename(d2);
  size_t tl = strlen(dir) + strlen(base) + 32;
  char *tmp = malloc(tl);
  if (!tmp) {
    free(d1);
    free(d2);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  snprintf(tmp, tl, "%s/.%s" TMP_TAG "XXXXXX", dir, base);
  sc_status st = SC_OK;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    st = sc_error_set(err, SC_ERR_IO, "cannot create a temp file next to %s: %s", path,
                      strerror(errno));
    goto out;
  }
  bool ok = fchmod(fd, perm) == 0;
  for (size_t off = 0; ok && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false;
    else off += (size_t)w;
  }
  ok = ok && fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0) ok = false;
  if (!ok) {
    unlink(tmp);
    st = sc_error_set(err, SC_ERR_IO, "cannot write %s: %s", tmp, strerror(saved));
    goto out;
  }
  /* Test-only hook (tests/batch): die where a crash hurts most, between the
   * complete temp file and the rename, to show no partial file is left. */
  const char *kill_env = getenv("SCULPT_TEST_KILL_BEFORE_RENAME");
  if (kill_env && strcmp(kill_env, "1") == 0) raise(SIGKILL);
  if (rename(tmp, path) != 0) {
    saved = errno;
    unlink(tmp);
    st = sc_error_set(err, SC_ERR_IO, "cannot replace %s: %s", path, strerror(saved));
    goto out;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd); /* best effort: the rename itself is already atomic */
    close(dfd);
  }
out:
  free(tmp);
  free(d1);
  free(d2);
  return st;
}

/* Writes text over the file when the disk still holds what we last saw;
 * SC_ERR_STALE when someone else changed it. */
static sc_status file_replace(file_ent *f, const char *text, size_t len, sc_error *err) {
  char *now = NULL;
  size_t now_len = 0;
  if (!sc_cli_read_file(f->path, &now, &now_len))
    return sc_error_set(err, SC_ERR_IO, "cannot read %s: %s", f->path, strerror(errno));
  bool same = now_len == f->disk_len && memcmp(now, f->disk, now_len) == 0;
  free(now);
  SC_CHECK(same, err, SC_ERR_STALE, "%s changed on disk after it was read; not written",
           f->path);
  SC_TRY(write_atomic(f->path, text, len, f->perm, err));
  char *copy = dupn(text, len);
  SC_CHECK(copy, err, SC_ERR_NOMEM, "out of memory");
  free(f->disk);
  f->disk = copy;
  f->disk_len = len;
  return SC_OK;
}

/* ---- files ------------------------------------------------------------------ */

/* Adds a file by the path it was found or named under. Returns its index
 * (the existing one for a second path to the same file), or -1 when it is
 * skipped (the reason is recorded). */
static long add_file(run *r, const char *path, bool explicit_path) {
  char real[PATH_MAX];
  if (!realpath(path, real)) {
    skip_file(r, path, strerror(errno));
    return -1;
  }
  if (!under_roots(r, real)) {
    skip_file(r, path, "refused: resolves outside the given roots");
    return -1;
  }
  for (size_t i = 0; i < r->n_files; i++)
    if (strcmp(r->files[i].real, real) == 0) return (long)i;
  const char *lang = sc_context_language_for(NULL, path);
  if (!lang || !sc_context_ts_language(lang)) {
    if (explicit_path) skip_file(r, path, "no grammar for this file type");
    return -1;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
    skip_file(r, path, "not a regular file");
    return -1;
  }
  char *text = NULL;
  size_t len = 0;
  if (!sc_cli_read_file(path, &text, &len)) {
    skip_file(r, path, strerror(errno));
    return -1;
  }
  /* Binary: a NUL byte anywhere (source text never has one). */
  if (memchr(text, '\0', len)) {
    free(text);
    skip_file(r, path, "binary file");
    return -1;
  }
  if (r->n_files == r->cap_files) {
    size_t cap = r->cap_files ? 2 * r->cap_files : 16;
    file_ent *nf = realloc(r->files, cap * sizeof *nf);
    if (!nf) {
      free(text);
      return -1;
    }
    r->files = nf;
    r->cap_files = cap;
  }
  file_ent *f = &r->files[r->n_files];
  memset(f, 0, sizeof *f);
  const char *shown = strncmp(path, "./", 2) == 0 ? path + 2 : path;
  f->path = strdup(shown);
  f->real = strdup(real);
  f->lang = lang;
  f->orig = text;
  f->orig_len = len;
  f->cur = dupn(text, len);
  f->cur_len = len;
  f->disk = dupn(text, len);
  f->disk_len = len;
  f->perm = st.st_mode & 07777;
  if (!f->path || !f->real || !f->cur || !f->disk) {
    free(f->path);
    free(f->real);
    free(f->cur);
    free(f->disk);
    free(text);
    return -1;
  }
  return (long)r->n_files++;
}

/* Walks a directory: hidden entries (.git, our temp files) are skipped,
 * symlinked directories are not followed, symlinked files are checked. */
static void walk(run *r, const char *dir, int depth) {
  if (depth > 64) return;
  DIR *d = opendir(dir);
  if (!d) {
    skip_file(r, dir, strerror(errno));
    return;
  }
  struct dirent *e;
  char **names = NULL;
  size_t n = 0, cap = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 32;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  /* Sorted, so that the order of sites and diffs is reproducible. */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && names[j] && names[j - 1] && strcmp(names[j - 1], names[j]) > 0; j--) {
      char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  for (size_t i = 0; i < n; i++) {
    if (!names[i]) continue;
    size_t pl = strlen(dir) + strlen(names[i]) + 2;
    char *p = malloc(pl);
    if (p) {
      snprintf(p, pl, "%s/%s", dir, names[i]);
      struct stat st;
      if (lstat(p, &st) == 0) {
        if (S_ISDIR(st.st_mode)) walk(r, p, depth + 1);
        else if (S_ISREG(st.st_mode)) add_file(r, p, false);
        else if (S_ISLNK(st.st_mode)) {
          struct stat tst;
          if (stat(p, &tst) == 0 && S_ISREG(tst.st_mode) &&
              sc_context_language_for(NULL, p))
            add_file(r, p, false); /* refused there when it leads out */
        }
      }
      free(p);
    }
    free(names[i]);
  }
  free(names);
}

/* ---- sites ------------------------------------------------------------------ */

static void line_col(const char *text, size_t off, uint32_t *line, uint32_t *col) {
  uint32_t l = 0;
  size_t ls = 0;
  for (size_t i = 0; i < off; i++)
    if (text[i] == '\n') {
      l++;
      ls = i + 1;
    }
  *line = l;
  *col = (uint32_t)(off - ls);
}

static site *add_site(run *r, size_t file, size_t a, size_t b, mode m, const char *msg) {
  const file_ent *f = &r->files[file];
  for (size_t i = 0; i < r->n_sites; i++) {
    site *s = &r->sites[i];
    /* Overlapping sites in one file: the first one wins. */
    if (s->file == file && a < s->b + (s->a == s->b) && s->a < b + (a == b)) return NULL;
  }
  if (r->n_sites == r->cap_sites) {
    size_t cap = r->cap_sites ? 2 * r->cap_sites : 16;
    site *ns = realloc(r->sites, cap * sizeof *ns);
    if (!ns) return NULL;
    r->sites = ns;
    r->cap_sites = cap;
  }
  site *s = &r->sites[r->n_sites++];
  memset(s, 0, sizeof *s);
  s->file = file;
  s->a = a;
  s->b = b;
  s->mode = m;
  s->message = msg ? strdup(msg) : NULL;
  s->check = "not run";
  s->chosen_seed = -1;
  s->cands = json_array();
  line_col(f->orig, a, &s->line0, &s->col0);
  line_col(f->orig, b, &s->line1, &s->col1);
  return s;
}

/* Is [x, y) a comment holding nothing but the marker? */
static bool comment_only(const char *t, size_t x, size_t y, const char *marker) {
  size_t ml = strlen(marker);
  const char *m = memmem(t + x, y - x, marker, ml);
  if (!m) return false;
  for (const char *p = t + x; p < t + y; p++) {
    if (p >= m && p < m + ml) continue;
    if (!strchr("/#*- \t;<>!", *p)) return false;
  }
  return true;
}

/* Holes: a line that is a comment holding only the marker, or a Python line
 * `...`, is replaced whole (indentation kept); a marker inside code is an
 * inline hole: the marker itself is replaced and the fill stays on the line. */
static void find_holes(run *r, size_t fi) {
  const file_ent *f = &r->files[fi];
  const char *t = f->orig, *marker = r->a.marker ? r->a.marker : "TODO(sculpt)";
  size_t ml = strlen(marker);
  for (size_t p = 0; p < f->orig_len;) {
    const char *nl = memchr(t + p, '\n', f->orig_len - p);
    size_t e = nl ? (size_t)(nl - t) : f->orig_len, x = p, y = e;
    while (x < y && (t[x] == ' ' || t[x] == '\t')) x++;
    while (y > x && (t[y - 1] == ' ' || t[y - 1] == '\t' || t[y - 1] == '\r')) y--;
    bool py_hole = !r->a.marker && strcmp(f->lang, "python") == 0 && y - x == 3 &&
                   memcmp(t + x, "...", 3) == 0;
    if (py_hole || comment_only(t, x, y, marker)) {
      add_site(r, fi, x, y, MODE_HOLES, NULL);
    } else {
      for (size_t q = x; q + ml <= y;) {
        const char *m = memmem(t + q, y - q, marker, ml);
        if (!m) break;
        size_t ma = (size_t)(m - t);
        site *s = add_site(r, fi, ma, ma + ml, MODE_HOLES, NULL);
        if (s) s->single_line = true;
        q = ma + ml;
      }
    }
    p = e + 1;
  }
}

/* For a diagnostic at byte x: from x to the end of its statement when x is
 * inside it (the part most likely wrong), else the whole statement. */
static void diagnostic_span(const sc_syntax_tree *tree, size_t x, size_t *s0, size_t *s1) {
  sc_statement_span(tree, x, s0, s1);
  if (x > *s0 && x < *s1) *s0 = x;
}

typedef struct diag {
  char *path, *message;
  long line, col; /* 0-based line, 0-based byte column */
} diag;

static void diags_free(diag *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(d[i].path);
    free(d[i].message);
  }
  free(d);
}

static bool diag_push(diag **d, size_t *n, const char *path, long line, long col,
                      const char *msg) {
  diag *nd = realloc(*d, (*n + 1) * sizeof *nd);
  if (!nd) return false;
  *d = nd;
  nd[*n].path = strdup(path);
  nd[*n].message = strdup(msg ? msg : "");
  nd[*n].line = line;
  nd[*n].col = col;
  (*n)++;
  return true;
}

/* One LSP Diagnostic (range.start is 0-based) for path. */
static bool diag_from_json(json_t *dg, const char *path, diag **d, size_t *n, char *why,
                           size_t why_len) {
  json_t *start = json_object_get(json_object_get(dg, "range"), "start");
  json_t *l = json_object_get(start, "line"), *c = json_object_get(start, "character");
  if (!json_is_integer(l) || !json_is_integer(c) || json_integer_value(l) < 0 ||
      json_integer_value(c) < 0) {
    snprintf(why, why_len, "a Diagnostic needs range.start.line and .character (integers >= 0)");
    return false;
  }
  const char *msg = json_string_value(json_object_get(dg, "message"));
  return diag_push(d, n, path, (long)json_integer_value(l), (long)json_integer_value(c), msg);
}

/* Parses gcc/clang lines `path:line:col: error|warning|fatal error: message`
 * or LSP JSON: a Diagnostic, an array of them (with "uri" or "file" on each,
 * or a single file PATH), PublishDiagnosticsParams {uri, diagnostics}, or an
 * array of those. Returns false with why on malformed input. */
static bool parse_diagnostics(const char *text, size_t len, const char *only_file, diag **out,
                              size_t *n_out, char *why, size_t why_len) {
  *out = NULL;
  *n_out = 0;
  size_t i = 0;
  while (i < len && strchr(" \t\r\n", text[i])) i++;
  if (i == len) {
    snprintf(why, why_len, "the diagnostics input is empty");
    return false;
  }
  if (text[i] == '[' || text[i] == '{') {
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) {
      snprintf(why, why_len, "diagnostics JSON is malformed at line %d column %d: %s", je.line,
               je.column, je.text);
      return false;
    }
    json_t *items = json_is_array(root) ? json_incref(root) : json_pack("[O]", root);
    size_t k;
    json_t *it;
    bool ok = true;
    json_array_foreach(items, k, it) {
      if (!ok) break;
      if (!json_is_object(it)) {
        snprintf(why, why_len, "diagnostics JSON: item %zu is not an object", k);
        ok = false;
        break;
      }
      const char *uri = json_string_value(json_object_get(it, "uri"));
      if (!uri) uri = json_string_value(json_object_get(it, "file"));
      /* A file URI is decoded (%20 and all); anything else is a path. */
      char *path = uri ? sc_path_from_file_uri(uri) : NULL;
      if (uri && !path) path = strdup(uri);
      json_t *list = json_object_get(it, "diagnostics");
      if (json_is_array(list)) {
        if (!path) {
          snprintf(why, why_len, "diagnostics JSON: item %zu has diagnostics but no uri", k);
          ok = false;
          break;
        }
        size_t j;
        json_t *dg;
        json_array_foreach(list, j, dg) {
          if (ok) ok = diag_from_json(dg, path, out, n_out, why, why_len);
        }
      } else {
        const char *p = path ? path : only_file;
        if (!p) {
          /* Say what is wrong with the item itself first. */
          size_t before_n = *n_out;
          if (!diag_from_json(it, "", out, n_out, why, why_len)) {
            ok = false;
            break;
          }
          free((*out)[before_n].path);
          free((*out)[before_n].message);
          *n_out = before_n;
          snprintf(why, why_len,
                   "diagnostics JSON: item %zu names no file (give \"uri\", or one FILE as PATH)",
                   k);
          ok = false;
          break;
        }
        ok = diag_from_json(it, p, out, n_out, why, why_len);
      }
      free(path);
    }
    json_decref(items);
    json_decref(root);
    if (ok && *n_out == 0) {
      snprintf(why, why_len, "diagnostics JSON holds no diagnostics");
      ok = false;
    }
    if (!ok) {
      diags_free(*out, *n_out);
      *out = NULL;
      *n_out = 0;
    }
    return ok;
  }
  /* Compiler text: other lines (notes' context, carets, "In file included
   * from") are ignored, but at least one line must be a diagnostic. */
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len;
    char *line = dupn(text + p, e - p);
    p = e + 1;
    if (!line) continue;
    /* path:line:col: severity: message (path may itself contain ':'). */
    for (char *c = line; (c = strchr(c, ':'));) {
      char *endl, *endc;
      long ln = strtol(c + 1, &endl, 10);
      if (endl != c + 1 && *endl == ':' && ln >= 1) {
        long col = strtol(endl + 1, &endc, 10);
        if (endc != endl + 1 && *endc == ':' && col >= 1) {
          const char *sev = endc + 1;
          while (*sev == ' ') sev++;
          static const char *k_sev[] = {"fatal error:", "error:", "warning:"};
          for (size_t s = 0; s < 3; s++) {
            size_t sl = strlen(k_sev[s]);
            if (strncmp(sev, k_sev[s], sl) == 0) {
              *c = '\0';
              const char *msg = sev + sl;
              while (*msg == ' ') msg++;
              diag_push(out, n_out, line, ln - 1, col - 1, msg);
              break;
            }
          }
          break;
        }
      }
      c++;
    }
    free(line);
  }
  if (*n_out == 0) {
    snprintf(why, why_len,
             "no diagnostics recognised (expected `path:line:col: error: message` lines or "
             "LSP Diagnostic JSON)");
    return false;
  }
  return true;
}

/* ---- candidates ------------------------------------------------------------- */

/* Site s's prompt in f's current text: *pre and *suf owned by the caller,
 * the kept tokens are pre + (n_pre - keep_pre) and suf[0 .. keep_suf); the
 * plan's canvas lengths in *plan. p (the decoding's parameters) gets the
 * fit's DreamOn growth limit and whether the suffix was cut. */
static sc_status site_prompt(run *r, const file_ent *f, const site *s, size_t a, size_t b,
                             int32_t **pre_out, size_t *n_pre_out, size_t *keep_pre_out,
                             int32_t **suf_out, size_t *keep_suf_out, sc_infill_plan *plan_out,
                             sc_infill_params *p, sc_error *err) {
  size_t pw = (size_t)CONTEXT_TOKENS * BYTES_PER_TOKEN, sw = pw / 4 + 256;
  size_t p0 = a > pw ? a - pw : 0, s1 = f->cur_len - b > sw ? b + sw : f->cur_len;
  int32_t *pre = NULL, *suf = NULL, *old = NULL;
  size_t n_pre = 0, n_suf = 0, n_old = 0;
  SC_TRY(sc_tokenizer_encode(r->tok, f->cur + p0, a - p0, &pre, &n_pre, err));
  sc_status st = sc_tokenizer_encode(r->tok, f->cur + b, s1 - b, &suf, &n_suf, err);
  if (st != SC_OK) {
    free(pre);
    return st;
  }
  sc_infill_plan plan = {0};
  if (s->mode == MODE_HOLES) {
    plan.n_lengths = 1;
    plan.lengths[0] = r->a.max_tokens;
  } else {
    /* A re-infill is usually close to the span's own size. */
    sc_tokenizer_encode(r->tok, f->cur + a, b - a, &old, &n_old, NULL);
    free(old);
    int base = (int)n_old;
    int want[3] = {base + 8, 2 * base + 16, r->a.max_tokens};
    for (int i = 0; i < 3; i++) {
      int l = want[i] > 2 * r->a.max_tokens ? 2 * r->a.max_tokens : want[i];
      bool dup = false;
      for (int k = 0; k < plan.n_lengths; k++) dup |= plan.lengths[k] == l;
      if (!dup) plan.lengths[plan.n_lengths++] = l;
    }
  }
  /* Fitted as every caller fits (model.h, sc_infill_fit_plan): the
   * family's frame, the canvas and a DreamOn canvas's growth within half
   * the model's context, CONTEXT_TOKENS of prompt at most, the prefix cut
   * first down to half, then the suffix, which then ends without EOS. */
  sc_infill_budget fit;
  size_t keep_pre = 0, keep_suf = 0;
  st = sc_infill_fit_plan(r->model, r->max_seq, CONTEXT_TOKENS, &plan, p, &fit, err);
  if (st != SC_OK) {
    free(pre);
    free(suf);
    return st;
  }
  sc_infill_fit(&fit, n_pre, n_suf, &keep_pre, &keep_suf, &p->suffix_cut);
  /* A suffix window that stops before the file's end is cut too. */
  if (s1 < f->cur_len) p->suffix_cut = true;
  *pre_out = pre;
  *n_pre_out = n_pre;
  *keep_pre_out = keep_pre;
  *suf_out = suf;
  *keep_suf_out = keep_suf;
  *plan_out = plan;
  return SC_OK;
}

/* One candidate from the --backend endpoint: the byte windows around the
 * span travel (no tokenizer is loaded for a remote run); seed 0 is greedy,
 * later seeds sample at --temperature. Only res->text is set. */
static sc_status decode_remote(run *r, const file_ent *f, const site *s, size_t a, size_t b,
                               uint64_t seed, sc_infill_result *res, sc_error *err) {
  size_t pw = (size_t)CONTEXT_TOKENS * BYTES_PER_TOKEN, sw = pw / 4 + 256;
  size_t p0 = a > pw ? a - pw : 0, s1 = f->cur_len - b > sw ? b + sw : f->cur_len;
  static const char *const nl_stop[] = {"\n"};
  sc_fim_client_options o = r->a.remote;
  sc_fim_request req = {f->cur + p0, a - p0, f->cur + b, s1 - b,
                        s->mode == MODE_HOLES ? r->a.max_tokens : 2 * r->a.max_tokens,
                        seed ? r->a.temperature : 0.0, s->single_line ? nl_stop : NULL,
                        s->single_line ? 1 : 0};
  memset(res, 0, sizeof *res);
  char *text = NULL;
  size_t len = 0;
  SC_TRY(sc_fim_complete_sync(&o, &req, &g_cancel, &text, &len, NULL, err));
  res->text = text;
  res->text_len = len;
  return SC_OK;
}

/* Decodes one candidate for site s in f's current text. */
static sc_status decode(run *r, const file_ent *f, const site *s, size_t a, size_t b,
                        uint64_t seed, sc_infill_result *res, sc_error *err) {
  if (r->a.remote.url) return decode_remote(r, f, s, a, b, seed, res, err);
  int32_t *pre = NULL, *suf = NULL;
  size_t n_pre = 0, keep_pre = 0, keep_suf = 0;
  sc_infill_plan plan;
  sc_infill_params p;
  sc_infill_params_default(&p);
  SC_TRY(site_prompt(r, f, s, a, b, &pre, &n_pre, &keep_pre, &suf, &keep_suf, &plan, &p, err));
  p.seed = seed;
  p.temperature = seed ? r->a.temperature : 0.0;
  sc_status st = sc_engine_infill(r->engine, pre + (n_pre - keep_pre), (int)keep_pre, suf,
                                  (int)keep_suf, &plan, &p, &g_cancel, NULL, NULL, res, err);
  free(pre);
  free(suf);
  return st;
}

/* The greedy candidates of every hole, decoded together: each forward pass
 * serves up to SC_INFILL_MAX_BATCH sites at once (sc_engine_infill_many).
 * do_site then uses them as its first candidate. Holes have one canvas
 * length, so the batch gives what decoding each alone would; other modes
 * try several lengths per site and stay one site at a time. */
static void prefetch_holes(run *r) {
  size_t n = 0;
  for (size_t k = 0; k < r->n_sites; k++) n += r->sites[k].mode == MODE_HOLES;
  if (n < 2) return;
  sc_infill_request *reqs = calloc(n, sizeof *reqs);
  sc_infill_result *outs = calloc(n, sizeof *outs);
  int32_t **bufs = calloc(2 * n, sizeof *bufs);
  size_t *idx = calloc(n, sizeof *idx);
  size_t m = 0;
  for (size_t k = r->n_sites; reqs && outs && bufs && idx && k-- > 0;) {
    site *s = &r->sites[k];
    if (s->mode != MODE_HOLES) continue;
    int32_t *pre = NULL, *suf = NULL;
    size_t n_pre = 0, keep_pre = 0, keep_suf = 0;
    sc_infill_plan plan;
    /* Fitted with the batch's parameters: whether each suffix was cut goes
     * with its request. */
    sc_infill_params fp;
    sc_infill_params_default(&fp);
    fp.no_expand = true; /* a batch decodes fixed-length canvases */
    if (site_prompt(r, &r->files[s->file], s, s->a, s->b, &pre, &n_pre, &keep_pre, &suf,
                    &keep_suf, &plan, &fp, NULL) != SC_OK)
      continue;
    bufs[2 * m] = pre;
    bufs[2 * m + 1] = suf;
    reqs[m] = (sc_infill_request){pre + (n_pre - keep_pre), (int)keep_pre, suf, (int)keep_suf,
                                  plan.lengths[0], 0, fp.suffix_cut};
    idx[m++] = k;
  }
  sc_infill_params p;
  sc_infill_params_default(&p);
  int passes = 0;
  sc_error err = {0};
  if (m > 1 &&
      sc_engine_infill_many(r->engine, reqs, (int)m, &p, &g_cancel, outs, &passes, &err) ==
          SC_OK) {
    for (size_t i = 0; i < m; i++) {
      r->sites[idx[i]].pre = outs[i];
      r->sites[idx[i]].has_pre = true;
    }
    r->batched_sites = (int)m;
    r->batched_passes = passes;
  }
  for (size_t i = 0; i < 2 * m; i++) free(bufs ? bufs[i] : NULL);
  free(bufs);
  free(reqs);
  free(outs);
  free(idx);
}

/* Runs the check command with /bin/sh; its output goes to stderr so that
 * stdout stays the diff or the report. True when it exits 0. */
static bool run_check(const char *cmd, const char *file) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    setenv("SCULPT_BATCH_FILE", file, 1);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* No ERROR or MISSING node within [a, b] of the edited tree (tree has the
 * candidate inserted at a). */
static bool clean_around(const sc_syntax_tree *tree, size_t a, size_t b) {
  sc_syntax_error *errs = NULL;
  size_t n = 0;
  if (sc_syntax_tree_errors(tree, &errs, &n, NULL) != SC_OK) return false;
  bool clean = true;
  for (size_t i = 0; i < n; i++)
    if (errs[i].start_byte <= b && errs[i].end_byte >= a) clean = false;
  free(errs);
  return clean;
}

/* Processes one site: candidates in seed order, the first that parses (and
 * passes --check) is kept in f->cur. */
static void do_site(run *r, site *s) {
  file_ent *f = &r->files[s->file];
  double t0 = sc_now_ms();
  s->status = SITE_FAILED;
  s->reason = "no candidate parsed";
  sc_syntax_tree *tree = NULL;
  if (sc_syntax_tree_new(f->lang, f->cur, f->cur_len, &tree, NULL) != SC_OK) {
    s->reason = "cannot parse the file";
    return;
  }
  size_t before = sc_syntax_tree_error_count(tree);
  /* Sites are done last first, so [a, b) in the original is [a, b) now. */
  size_t a = s->a, b = s->b;
  char *seen[MAX_CANDIDATES] = {0};
  int n_seen = 0;
  for (int k = 0; k < r->a.candidates && s->status != SITE_DONE; k++) {
    if (g_interrupted) {
      s->reason = "interrupted";
      break;
    }
    sc_error err = {0};
    sc_infill_result res = {0};
    double tc = sc_now_ms();
    json_t *cj = json_pack("{s:i}", "seed", k);
    json_array_append_new(s->cands, cj);
    sc_status dst;
    if (k == 0 && s->has_pre) {
      res = s->pre; /* moved */
      s->has_pre = false;
      dst = SC_OK;
    } else {
      dst = decode(r, f, s, a, b, (uint64_t)k, &res, &err);
    }
    if (dst != SC_OK) {
      json_object_set_new(cj, "error", json_string(err.msg));
      sc_infill_result_free(&res);
      if (err.status == SC_ERR_CANCELLED) {
        s->reason = "interrupted";
        break;
      }
      if (r->a.remote.url) {
        /* The same endpoint would fail the same way for every seed. */
        fprintf(stderr, "sculpt batch: %s\n", err.msg);
        s->reason = "the backend failed";
        break;
      }
      s->reason = "the engine failed";
      continue;
    }
    const char *cand = res.text ? res.text : "";
    size_t len = res.text_len;
    /* An inline hole, or a one-line span being re-infilled, gets one line. */
    if (s->single_line || (s->mode != MODE_HOLES && !memchr(f->cur + a, '\n', b - a))) {
      const char *nl = memchr(cand, '\n', len);
      if (nl) len = (size_t)(nl - cand);
    }
    while (len > 0 && strchr("\r\n \t", cand[len - 1])) len--;
    double conf = 0;
    for (int i = 0; i < res.n_ids; i++) conf += res.confidence[i];
    conf = res.n_ids ? conf / res.n_ids : 0;
    json_object_set_new(cj, "text", json_text(cand, len));
    json_object_set_new(cj, "confidence", json_real(conf));
    bool parsed = false, dup = false;
    const char *why = NULL;
    for (int i = 0; i < n_seen; i++) dup |= strlen(seen[i]) == len && memcmp(seen[i], cand, len) == 0;
    if (dup) why = "duplicate";
    else if (len == 0) why = "empty";
    else if (memchr(cand, '\0', len)) why = "contains a NUL byte";
    else if (len == b - a && memcmp(cand, f->cur + a, len) == 0) why = "unchanged";
    else {
      sc_syntax_tree *copy = NULL;
      sc_completion_check chk;
      if (sc_syntax_tree_copy(tree, &copy, NULL) == SC_OK &&
          sc_syntax_tree_edit(copy, a, b, "", 0, NULL) == SC_OK &&
          sc_completion_check_insert(copy, a, cand, len, &chk, NULL) == SC_OK) {
        /* A fix must also lower the error count when the file had errors. */
        parsed = chk.new_errors == 0 &&
                 (s->mode != MODE_DIAGNOSTICS || before == 0 || chk.errors_after < before);
        /* A fix must also leave no error at or right after the new text
         * (a MISSING `;` there would count as the old error moved). */
        if (parsed && s->mode == MODE_DIAGNOSTICS)
          parsed = sc_syntax_tree_edit(copy, a, a, cand, len, NULL) == SC_OK &&
                   clean_around(copy, a, a + len);
        if (!parsed) why = "does not parse";
      } else {
        why = "parse check failed";
      }
      sc_syntax_tree_free(copy);
    }
    if (n_seen < MAX_CANDIDATES && !dup) seen[n_seen++] = dupn(cand, len);
    json_object_set_new(cj, "parsed", json_boolean(parsed));
    if (why) json_object_set_new(cj, "rejected", json_string(why));
    if (parsed) {
      size_t nl_len;
      char *next = text_splice(f->cur, f->cur_len, a, b, cand, len, &nl_len);
      bool keep = next != NULL;
      if (keep && r->a.check) {
        sc_error werr = {0};
        if (file_replace(f, next, nl_len, &werr) != SC_OK) {
          json_object_set_new(cj, "check", json_string("not run"));
          json_object_set_new(cj, "error", json_string(werr.msg));
          s->reason = werr.status == SC_ERR_STALE ? "the file changed on disk" : "cannot write";
          free(next);
          sc_infill_result_free(&res);
          break;
        }
        keep = run_check(r->a.check, f->path);
        json_object_set_new(cj, "check", json_string(keep ? "passed" : "failed"));
        s->check = keep ? "passed" : "failed";
        if (!keep) s->reason = "no candidate passed the check";
      }
      if (keep) {
        free(f->cur);
        f->cur = next;
        f->cur_len = nl_len;
        s->status = SITE_DONE;
        s->reason = NULL;
        s->chosen = dupn(cand, len);
        s->chosen_len = len;
        s->chosen_seed = k;
        s->confidence = conf;
      } else {
        free(next);
      }
    }
    json_object_set_new(cj, "ms", json_real(sc_now_ms() - tc));
    sc_infill_result_free(&res);
  }
  /* A failed check leaves its candidate on disk: put the text back. */
  if (r->a.check && (f->disk_len != f->cur_len || memcmp(f->disk, f->cur, f->cur_len) != 0)) {
    sc_error werr = {0};
    if (file_replace(f, f->cur, f->cur_len, &werr) != SC_OK) {
      fprintf(stderr, "sculpt batch: %s\n", werr.msg);
      f->failed_write = true;
    }
  }
  for (int i = 0; i < n_seen; i++) free(seen[i]);
  sc_syntax_tree_free(tree);
  s->ms = sc_now_ms() - t0;
}

/* ---- diff --------------------------------------------------------------------- */

typedef struct lines {
  size_t n;
  size_t *start; /* n + 1 entries: line i is [start[i], start[i+1]) */
} lines;

static bool split_lines(const char *t, size_t len, lines *out) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) n += t[i] == '\n';
  if (len > 0 && t[len - 1] != '\n') n++;
  out->n = n;
  out->start = malloc((n + 1) * sizeof *out->start);
  if (!out->start) return false;
  size_t k = 0;
  out->start[k++] = 0;
  for (size_t i = 0; i < len; i++)
    if (t[i] == '\n' && k <= n) out->start[k++] = i + 1;
  out->start[n] = len;
  return true;
}

static void put_line(FILE *o, char tag, const char *t, const lines *L, size_t i) {
  size_t a = L->start[i], b = L->start[i + 1];
  fputc(tag, o);
  fwrite(t + a, 1, b - a, o);
  if (b == a || t[b - 1] != '\n') fputs("\n\\ No newline at end of file\n", o);
}

/* A unified diff (3 lines of context) of old -> new, git-style headers. */
static void write_diff(FILE *o, const char *path, const char *old, size_t old_len,
                       const char *nw, size_t new_len) {
  lines A = {0}, B = {0};
  if (!split_lines(old, old_len, &A) || !split_lines(nw, new_len, &B)) {
    free(A.start);
    free(B.start);
    return;
  }
  fprintf(o, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", path, path, path, path);
#define LINE_EQ(i, j)                                                                      \
  (A.start[(i) + 1] - A.start[i] == B.start[(j) + 1] - B.start[j] &&                       \
   memcmp(old + A.start[i], nw + B.start[j], A.start[(i) + 1] - A.start[i]) == 0)
  /* Common prefix and suffix lines, then an LCS table over the middle
   * (sites are small, so the middle is too); a huge middle is one block. */
  typedef struct blk { size_t i0, i1, j0, j1; } blk;
  blk *blocks = NULL;
  size_t nb = 0, p = 0, sfx = 0;
  while (p < A.n && p < B.n && LINE_EQ(p, p)) p++;
  while (sfx < A.n - p && sfx < B.n - p && LINE_EQ(A.n - 1 - sfx, B.n - 1 - sfx)) sfx++;
  size_t n = A.n - p - sfx, m = B.n - p - sfx;
  uint32_t *dp = (n + 1) * (m + 1) <= 40000000u ? calloc((n + 1) * (m + 1), sizeof *dp) : NULL;
  if (dp) {
    for (size_t x = n; x-- > 0;)
      for (size_t y = m; y-- > 0;)
        dp[x * (m + 1) + y] = LINE_EQ(p + x, p + y)
                                  ? dp[(x + 1) * (m + 1) + y + 1] + 1
                                  : (dp[(x + 1) * (m + 1) + y] > dp[x * (m + 1) + y + 1]
                                         ? dp[(x + 1) * (m + 1) + y]
                                         : dp[x * (m + 1) + y + 1]);
  }
  size_t x = 0, y = 0;
  while (x < n || y < m) {
    if (dp && x < n && y < m && LINE_EQ(p + x, p + y)) {
      x++;
      y++;
      continue;
    }
    size_t x0 = x, y0 = y;
    if (!dp) {
      x = n;
      y = m;
    } else {
      while ((x < n || y < m) && !(x < n && y < m && LINE_EQ(p + x, p + y))) {
        if (y == m || (x < n && dp[(x + 1) * (m + 1) + y] >= dp[x * (m + 1) + y + 1])) x++;
        else y++;
      }
    }
    blk *nbk = realloc(blocks, (nb + 1) * sizeof *nbk);
    if (!nbk) break;
    blocks = nbk;
    blocks[nb++] = (blk){p + x0, p + x, p + y0, p + y};
  }
  free(dp);
  /* Group blocks into hunks with 3 lines of context. */
  for (size_t k = 0; k < nb;) {
    size_t last = k;
    while (last + 1 < nb && blocks[last + 1].i0 - blocks[last].i1 <= 6) last++;
    size_t i0 = blocks[k].i0 > 3 ? blocks[k].i0 - 3 : 0;
    size_t j0 = blocks[k].j0 - (blocks[k].i0 - i0);
    size_t i1 = blocks[last].i1 + 3 < A.n ? blocks[last].i1 + 3 : A.n;
    size_t j1 = blocks[last].j1 + (i1 - blocks[last].i1);
    fprintf(o, "@@ -%zu,%zu +%zu,%zu @@\n", i1 > i0 ? i0 + 1 : i0, i1 - i0,
            j1 > j0 ? j0 + 1 : j0, j1 - j0);
    size_t ci = i0, cj = j0;
    for (size_t q = k; q <= last; q++) {
      for (; ci < blocks[q].i0; ci++, cj++) put_line(o, ' ', old, &A, ci);
      for (; ci < blocks[q].i1; ci++) put_line(o, '-', old, &A, ci);
      for (; cj < blocks[q].j1; cj++) put_line(o, '+', nw, &B, cj);
    }
    for (; ci < i1; ci++, cj++) put_line(o, ' ', old, &A, ci);
    k = last + 1;
  }
#undef LINE_EQ
  free(blocks);
  free(A.start);
  free(B.start);
}

/* ---- arguments ----------------------------------------------------------------- */

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->candidates = 1;
  a->max_tokens = 32;
  a->temperature = 0.8;
  a->device = SC_DEVICE_AUTO;
  a->batch_sites = -1;
  a->paths = calloc((size_t)argc, sizeof *a->paths);
  if (!a->paths) return 2;
  bool candidates_set = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    int br;
    if (strcmp(o, "--no-batch-sites") == 0 || strcmp(o, "--batch-sites") == 0) {
      a->batch_sites = o[2] == 'b';
      continue;
    }
    if (strcmp(o, "--holes") == 0 || strcmp(o, "--write") == 0 || strcmp(o, "--json") == 0 ||
        strcmp(o, "--no-progress") == 0) {
      if (o[2] == 'h') {
        if (a->mode && a->mode != MODE_HOLES) goto two_modes;
        a->mode = MODE_HOLES;
      } else if (o[2] == 'w') a->write = true;
      else if (o[2] == 'j') a->json = true;
      else a->no_progress = true;
      continue;
    }
    if (o[0] != '-' || strcmp(o, "-") == 0) {
      a->paths[a->n_paths++] = argv[i];
      continue;
    }
    if (strcmp(o, "--") == 0) {
      for (i++; i < argc; i++) a->paths[a->n_paths++] = argv[i];
      break;
    }
    if (!v) { sc_cli_fail(CMD, "%s needs a value", o); return 2; }
    i++;
    if (strcmp(o, "--diagnostics") == 0) {
      if (a->mode && a->mode != MODE_DIAGNOSTICS) goto two_modes;
      a->mode = MODE_DIAGNOSTICS;
      a->diag_src = v;
    } else if (strcmp(o, "--query") == 0) {
      if (a->mode && a->mode != MODE_QUERY) goto two_modes;
      a->mode = MODE_QUERY;
      a->query = v;
    } else if (strcmp(o, "--capture") == 0) a->capture = v;
    else if (strcmp(o, "--marker") == 0) {
      if (!*v) { sc_cli_fail(CMD, "--marker must not be empty"); return 2; }
      a->marker = v;
    } else if (strcmp(o, "--check") == 0) a->check = v;
    else if (strcmp(o, "--candidates") == 0) {
      if (!sc_cli_parse_long(v, 1, MAX_CANDIDATES, &n)) {
        sc_cli_fail(CMD, "--candidates takes 1 to %d", MAX_CANDIDATES);
        return 2;
      }
      a->candidates = (int)n;
      candidates_set = true;
    } else if (strcmp(o, "--max-tokens") == 0) {
      if (!sc_cli_parse_long(v, 1, 1024, &n)) { sc_cli_fail(CMD, "--max-tokens takes 1 to 1024"); return 2; }
      a->max_tokens = (int)n;
    } else if (strcmp(o, "--temperature") == 0) {
      char *end;
      a->temperature = strtod(v, &end);
      if (*end || !(a->temperature > 0 && a->temperature <= 100)) {
        sc_cli_fail(CMD, "--temperature takes a number in (0, 100]");
        return 2;
      }
    } else if (strcmp(o, "--model") == 0) a->model_dir = v;
    else if ((br = sc_cli_backend_option(CMD, o, v, &a->remote)) != 0) {
      if (br < 0) return 2;
    }
    else if (strcmp(o, "--family") == 0) a->family = v;
    else if (strcmp(o, "--device") == 0) {
      if (!sc_device_kind_parse(v, &a->device)) { sc_cli_fail(CMD, "--device takes auto, cpu or cuda"); return 2; }
    } else {
      sc_cli_fail(CMD, "unknown option '%s' (see sculpt help batch)", o);
      return 2;
    }
  }
  if (!a->mode) { sc_cli_fail(CMD, "needs a mode: --holes, --diagnostics FILE|- or --query Q --capture NAME"); return 2; }
  if (a->mode == MODE_QUERY && !a->capture) { sc_cli_fail(CMD, "--query needs --capture NAME"); return 2; }
  if (a->capture && a->mode != MODE_QUERY) { sc_cli_fail(CMD, "--capture goes with --query"); return 2; }
  if (a->marker && a->mode != MODE_HOLES) { sc_cli_fail(CMD, "--marker goes with --holes"); return 2; }
  if (a->n_paths == 0) { sc_cli_fail(CMD, "needs at least one PATH (a file or a directory)"); return 2; }
  /* With --check the default is several tries, else one (greedy). */
  if (a->check && !candidates_set) a->candidates = 4;
  a->progress = !a->json && !a->no_progress && isatty(STDERR_FILENO);
  return 0;
two_modes:
  sc_cli_fail(CMD, "give one mode: --holes, --diagnostics or --query");
  return 2;
}

/* ---- the run ------------------------------------------------------------------- */

static void run_free(run *r) {
  for (size_t i = 0; i < r->n_files; i++) {
    file_ent *f = &r->files[i];
    free(f->path);
    free(f->real);
    free(f->orig);
    free(f->cur);
    free(f->disk);
  }
  free(r->files);
  for (size_t i = 0; i < r->n_sites; i++) {
    free(r->sites[i].message);
    free(r->sites[i].chosen);
    json_decref(r->sites[i].cands);
    if (r->sites[i].has_pre) sc_infill_result_free(&r->sites[i].pre);
  }
  free(r->sites);
  for (int i = 0; i < r->n_roots; i++) free(r->roots[i]);
  free(r->roots);
  free(r->a.paths);
  json_decref(r->skipped);
  sc_engine_free(r->engine);
  sc_tokenizer_free(r->tok);
  sc_model_free(r->model);
}

/* Sites of the query's capture in file fi. Returns false (why set) when the
 * query does not compile for the file's language. */
static bool find_query_sites(run *r, size_t fi, char *why, size_t why_len) {
  file_ent *f = &r->files[fi];
  uint32_t off;
  TSQueryError qe;
  TSQuery *q = ts_query_new(sc_context_ts_language(f->lang), r->a.query,
                            (uint32_t)strlen(r->a.query), &off, &qe);
  if (!q) {
    snprintf(why, why_len, "the query does not compile for %s (error %d at byte %u)", f->lang,
             (int)qe, off);
    return false;
  }
  uint32_t cap_idx = UINT32_MAX;
  for (uint32_t i = 0; i < ts_query_capture_count(q); i++) {
    uint32_t nl;
    const char *nm = ts_query_capture_name_for_id(q, i, &nl);
    if (strlen(r->a.capture) == nl && memcmp(nm, r->a.capture, nl) == 0) cap_idx = i;
  }
  if (cap_idx == UINT32_MAX) {
    ts_query_delete(q);
    snprintf(why, why_len, "the query has no capture @%s", r->a.capture);
    return false;
  }
  sc_syntax_tree *tree = NULL;
  if (sc_syntax_tree_new(f->lang, f->orig, f->orig_len, &tree, NULL) == SC_OK) {
    TSQueryCursor *cur = ts_query_cursor_new();
    ts_query_cursor_exec(cur, q, sc_syntax_tree_root(tree));
    TSQueryMatch m;
    uint32_t ci;
    while (ts_query_cursor_next_capture(cur, &m, &ci)) {
      const TSQueryCapture *c = &m.captures[ci];
      if (c->index != cap_idx) continue;
      add_site(r, fi, ts_node_start_byte(c->node), ts_node_end_byte(c->node), MODE_QUERY, NULL);
    }
    ts_query_cursor_delete(cur);
  }
  sc_syntax_tree_free(tree);
  ts_query_delete(q);
  return true;
}

static int cmp_site(const void *x, const void *y) {
  const site *a = x, *b = y;
  if (a->file != b->file) return a->file < b->file ? -1 : 1;
  return a->a < b->a ? -1 : a->a > b->a;
}

static void progress(const run *r, size_t done) {
  if (!r->a.progress) return;
  size_t w = 30, fill = r->n_sites ? done * w / r->n_sites : w;
  fprintf(stderr, "\r[");
  for (size_t i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
  fprintf(stderr, "] %zu/%zu sites", done, r->n_sites);
  if (done == r->n_sites) fputc('\n', stderr);
  fflush(stderr);
}

static json_t *site_json(const run *r, const site *s) {
  const file_ent *f = &r->files[s->file];
  json_t *o = json_pack(
      "{s:s, s:{s:{s:i, s:i}, s:{s:i, s:i}}, s:s, s:s, s:i, s:O, s:s, s:f}", "file", f->path,
      "range", "start", "line", (int)s->line0, "character", (int)s->col0, "end", "line",
      (int)s->line1, "character", (int)s->col1, "mode", k_mode_names[s->mode], "status",
      k_status_names[s->status], "candidates_tried", (int)json_array_size(s->cands),
      "candidates", s->cands, "check", s->check, "ms", s->ms);
  if (!o) return json_object();
  json_object_set_new(o, "original", json_text(f->orig + s->a, s->b - s->a));
  if (s->status == SITE_DONE) {
    json_object_set_new(o, "text", json_text(s->chosen, s->chosen_len));
    json_object_set_new(o, "seed", json_integer(s->chosen_seed));
    json_object_set_new(o, "confidence", json_real(s->confidence));
  } else {
    json_object_set_new(o, "text", json_null());
  }
  if (s->reason) json_object_set_new(o, "reason", json_string(s->reason));
  if (s->message) json_object_set_new(o, "message", json_string(s->message));
  return o;
}

int sc_cli_batch(int argc, char **argv) {
  run r;
  memset(&r, 0, sizeof r);
  int rc = parse_args(argc, argv, &r.a);
  if (rc) {
    free(r.a.paths);
    return rc;
  }
  double t0 = sc_now_ms();
  int exit_code = 2;
  r.skipped = json_array();
  r.roots = calloc((size_t)r.a.n_paths, sizeof *r.roots);
  diag *diags = NULL;
  size_t n_diags = 0;
  char why[512];
  if (!r.roots) goto done;
  for (int i = 0; i < r.a.n_paths; i++) {
    char real[PATH_MAX];
    if (!realpath(r.a.paths[i], real)) {
      sc_cli_fail(CMD, "%s: %s", r.a.paths[i], strerror(errno));
      goto done;
    }
    r.roots[r.n_roots++] = strdup(real);
  }
  if (r.a.mode == MODE_DIAGNOSTICS) {
    char *text = NULL;
    size_t len = 0;
    bool ok;
    if (strcmp(r.a.diag_src, "-") == 0) {
      ok = sc_cli_read_file("/dev/stdin", &text, &len);
    } else {
      ok = sc_cli_read_file(r.a.diag_src, &text, &len);
    }
    if (!ok) {
      sc_cli_fail(CMD, "cannot read diagnostics from %s: %s", r.a.diag_src, strerror(errno));
      goto done;
    }
    struct stat st;
    const char *only = r.a.n_paths == 1 && stat(r.a.paths[0], &st) == 0 && S_ISREG(st.st_mode)
                           ? r.a.paths[0]
                           : NULL;
    ok = parse_diagnostics(text, len, only, &diags, &n_diags, why, sizeof why);
    free(text);
    if (!ok) {
      sc_cli_fail(CMD, "%s: %s", strcmp(r.a.diag_src, "-") == 0 ? "stdin" : r.a.diag_src, why);
      goto done;
    }
    for (size_t i = 0; i < n_diags; i++) {
      long fi = add_file(&r, diags[i].path, true);
      if (fi < 0) continue;
      file_ent *f = &r.files[fi];
      /* line/col -> byte offset; out of range is an input error. */
      size_t pos = 0;
      long l = 0;
      for (; l < diags[i].line && pos <= f->orig_len; l++) {
        const char *nl = memchr(f->orig + pos, '\n', f->orig_len - pos);
        if (!nl) break;
        pos = (size_t)(nl - f->orig) + 1;
      }
      const char *nl = memchr(f->orig + pos, '\n', f->orig_len - pos);
      size_t le = nl ? (size_t)(nl - f->orig) : f->orig_len;
      if (l != diags[i].line || (size_t)diags[i].col > le - pos) {
        sc_cli_fail(CMD, "diagnostic %s:%ld:%ld is outside the file", diags[i].path,
                    diags[i].line + 1, diags[i].col + 1);
        goto done;
      }
      sc_syntax_tree *tree = NULL;
      if (sc_syntax_tree_new(f->lang, f->orig, f->orig_len, &tree, NULL) != SC_OK) continue;
      size_t s0, s1;
      diagnostic_span(tree, pos + (size_t)diags[i].col, &s0, &s1);
      sc_syntax_tree_free(tree);
      add_site(&r, (size_t)fi, s0, s1, MODE_DIAGNOSTICS, diags[i].message);
    }
  } else {
    for (int i = 0; i < r.a.n_paths; i++) {
      struct stat st;
      if (stat(r.a.paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t l = strlen(r.a.paths[i]);
        char *p = strndup(r.a.paths[i], l);
        while (p && l > 1 && p[l - 1] == '/') p[--l] = '\0';
        if (p) walk(&r, p, 0);
        free(p);
      } else {
        add_file(&r, r.a.paths[i], true);
      }
    }
    bool any_query = false;
    for (size_t fi = 0; fi < r.n_files; fi++) {
      if (r.a.mode == MODE_HOLES) find_holes(&r, fi);
      else if (find_query_sites(&r, fi, why, sizeof why)) any_query = true;
    }
    if (r.a.mode == MODE_QUERY && r.n_files > 0 && !any_query) {
      sc_cli_fail(CMD, "%s", why);
      goto done;
    }
  }
  if (r.n_sites > 1) qsort(r.sites, r.n_sites, sizeof *r.sites, cmp_site);

  exit_code = 1;
  if (r.n_sites > 0 && !r.a.remote.url) {
    const char *model_dir = r.a.model_dir ? r.a.model_dir : sc_model_default_dir();
    if (!model_dir) {
      sc_cli_fail(CMD, "no model: pass --model DIR or set SCULPT_MODEL");
      exit_code = 2;
      goto done;
    }
    sc_model_options mo = {0};
    if (r.a.family && !sc_model_family_parse(r.a.family, &mo.family)) {
      sc_cli_fail(CMD, "unknown --family '%s'", r.a.family);
      exit_code = 2;
      goto done;
    }
    sc_device_choice dev;
    sc_device_select(r.a.device, &dev);
    mo.device = dev.kind;
    if (r.a.batch_sites < 0) r.a.batch_sites = dev.kind == SC_DEVICE_CUDA;
    sc_error err = {0};
    if (sc_model_load(model_dir, &mo, &r.model, &err) != SC_OK ||
        sc_tokenizer_load_dir(model_dir, &r.tok, &err) != SC_OK ||
        sc_engine_new(r.model, r.tok, 0, &r.engine, &err) != SC_OK) {
      sc_cli_fail(CMD, "%s", err.msg);
      exit_code = err.status == SC_ERR_INVALID ? 2 : 1;
      goto done;
    }
    r.max_seq = sc_model_get_info(r.model)->max_seq;
  }

  struct sigaction sa, old_sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  /* Per file, last site first. */
  size_t done_sites = 0;
  progress(&r, 0);
  if (r.engine && r.a.batch_sites > 0) prefetch_holes(&r);
  for (size_t k = r.n_sites; k-- > 0;) {
    if (g_interrupted) break;
    do_site(&r, &r.sites[k]);
    progress(&r, ++done_sites);
  }
  if (r.a.progress && done_sites < r.n_sites) fputc('\n', stderr);

  /* Final state of the files: --write writes what was kept; a dry run puts
   * back what --check may have left on disk. */
  size_t written = 0;
  for (size_t i = 0; i < r.n_files; i++) {
    file_ent *f = &r.files[i];
    const char *want = r.a.write ? f->cur : f->orig;
    size_t want_len = r.a.write ? f->cur_len : f->orig_len;
    if (f->disk_len == want_len && memcmp(f->disk, want, want_len) == 0) {
      if (r.a.write && (f->orig_len != f->cur_len || memcmp(f->orig, f->cur, f->cur_len)))
        written++;
      continue;
    }
    sc_error err = {0};
    if (file_replace(f, want, want_len, &err) != SC_OK) {
      fprintf(stderr, "sculpt batch: %s\n", err.msg);
      f->failed_write = true;
    } else if (r.a.write) {
      written++;
    }
  }
  sigaction(SIGINT, &old_sa, NULL);

  size_t n_done = 0, n_failed = 0, n_write_failed = 0;
  for (size_t i = 0; i < r.n_files; i++) n_write_failed += r.files[i].failed_write;
  for (size_t i = 0; i < r.n_sites; i++) {
    site *s = &r.sites[i];
    if (s->status == SITE_PENDING) {
      s->status = SITE_SKIPPED;
      s->reason = "interrupted";
    }
    /* A site whose file could not be written is not done. */
    if (s->status == SITE_DONE && r.a.write && r.files[s->file].failed_write) {
      s->status = SITE_FAILED;
      s->reason = "the file could not be written";
    }
    if (s->status == SITE_DONE) n_done++;
    else n_failed++;
  }
  if (r.a.json) {
    json_t *sites = json_array(), *diffs = json_object();
    for (size_t i = 0; i < r.n_sites; i++) json_array_append_new(sites, site_json(&r, &r.sites[i]));
    for (size_t i = 0; i < r.n_files; i++) {
      file_ent *f = &r.files[i];
      if (f->orig_len == f->cur_len && memcmp(f->orig, f->cur, f->cur_len) == 0) continue;
      char *buf = NULL;
      size_t blen = 0;
      FILE *mf = open_memstream(&buf, &blen);
      if (mf) {
        write_diff(mf, f->path, f->orig, f->orig_len, f->cur, f->cur_len);
        fclose(mf);
        json_object_set_new(diffs, f->path, json_text(buf, blen));
      }
      free(buf);
    }
    json_t *o = json_pack("{s:o, s:{s:i, s:i, s:i, s:i, s:O, s:b, s:b, s:i, s:i, s:f, s:i, s:i}, s:o}",
                          "sites", sites, "summary", "files", (int)r.n_files, "sites",
                          (int)r.n_sites, "done", (int)n_done, "failed", (int)n_failed,
                          "skipped_files", r.skipped, "interrupted", (int)g_interrupted,
                          "write", r.a.write, "written", (int)written, "failed_writes",
                          (int)n_write_failed, "ms", sc_now_ms() - t0, "batched_sites",
                          r.batched_sites, "batched_passes", r.batched_passes,
                          "diffs", diffs);
    char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    if (s) puts(s);
    free(s);
    json_decref(o);
  } else {
    if (!r.a.write)
      for (size_t i = 0; i < r.n_files; i++) {
        file_ent *f = &r.files[i];
        if (f->orig_len != f->cur_len || memcmp(f->orig, f->cur, f->cur_len) != 0)
          write_diff(stdout, f->path, f->orig, f->orig_len, f->cur, f->cur_len);
      }
    for (size_t i = 0; i < r.n_sites; i++) {
      const site *s = &r.sites[i];
      if (s->status != SITE_DONE)
        fprintf(stderr, "sculpt batch: %s:%u:%u: %s not done: %s\n", r.files[s->file].path,
                s->line0 + 1, s->col0 + 1, k_mode_names[s->mode], s->reason ? s->reason : "?");
    }
    if (g_interrupted) fprintf(stderr, "sculpt batch: interrupted\n");
    if (r.n_sites > 0 && (r.a.write || n_failed))
      fprintf(stderr, "sculpt batch: %zu of %zu sites done, %zu files written\n", n_done,
              r.n_sites, written);
  }
  fflush(stdout);
  exit_code = n_failed || g_interrupted || n_write_failed ? 1 : 0;
done:
  diags_free(diags, n_diags);
  run_free(&r);
  return exit_code;
}

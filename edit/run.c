/* run.c — a run over files (what `sculpt batch` drives): the roots and the
 * files under them, their sites, filling every site (per file last first,
 * optionally with the holes' greedy candidates decoded together), the
 * --check command as the caller's test, and the end of the run: write the
 * kept edits, or put back what a check left on disk. */
#define _GNU_SOURCE /* strndup, realpath */
#include "edit_impl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct run_file {
  char *path;   /* as shown in diffs and reports (owned) */
  char *real;   /* realpath: where it is read and written (a symlink is
                   written through to its target), de-duplication (owned) */
  char *orig;   /* the text as read (owned, NUL-terminated) */
  size_t orig_len;
  sc_edit_doc *doc; /* the text with the kept candidates */
  char *disk;   /* what we believe is on disk now (owned; orig or a check's write) */
  size_t disk_len;
  sc_edit__stamp stamp; /* of disk */
  bool foreign; /* another writer's bytes were carried into it: not ours to rewrite */
  bool written, failed_write;
  char *write_error; /* why it was not written (owned), or NULL */
} run_file;

typedef struct run_site {
  sc_edit_run_site pub;
  char *message; /* owned; pub.message points here */
  sc_edit_candidate pre; /* the greedy candidate, decoded with other sites */
} run_site;

struct sc_edit_run {
  sc_edit_run_options o;
  const char *const *paths;
  int n_paths;
  char **roots; /* realpaths of the paths (owned) */
  int n_roots;
  run_file *files;
  size_t n_files, cap_files;
  run_site *sites;
  size_t n_sites, cap_sites;
  char **skip_path, **skip_reason; /* owned */
  size_t n_skipped, cap_skipped;
  char **cleaned; /* folders already rid of stale temp files (owned) */
  size_t n_cleaned;
  int batched_sites, batched_passes;
  size_t left_out; /* diagnostics that were not errors */
};

static void say(const sc_edit_run *r, sc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const sc_edit_run *r, sc_log_level level, const char *fmt, ...) {
  if (!r->o.say) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  r->o.say(r->o.user, level, line);
}

/* ---- roots and files ---------------------------------------------------------- */

/* Is real (a realpath) inside one of the roots (realpaths)? */
static bool under_roots(const sc_edit_run *r, const char *real) {
  for (int i = 0; i < r->n_roots; i++) {
    size_t n = strlen(r->roots[i]);
    if (strncmp(real, r->roots[i], n) == 0 &&
        (real[n] == '\0' || real[n] == '/' || (n == 1 && r->roots[i][0] == '/')))
      return true;
  }
  return false;
}

static void skip_file(sc_edit_run *r, const char *path, const char *reason) {
  if (r->n_skipped == r->cap_skipped) {
    size_t cap = r->cap_skipped ? 2 * r->cap_skipped : 8;
    char **np = realloc(r->skip_path, cap * sizeof *np);
    if (np) r->skip_path = np;
    char **nr = realloc(r->skip_reason, cap * sizeof *nr);
    if (nr) r->skip_reason = nr;
    if (!np || !nr) return;
    r->cap_skipped = cap;
  }
  r->skip_path[r->n_skipped] = strdup(path);
  r->skip_reason[r->n_skipped++] = strdup(reason);
  say(r, SC_LOG_INFO, "skipped %s: %s", path, reason);
}

static void said_removed(void *user, const char *path) {
  say(user, SC_LOG_INFO, "removed a stale temp file %s", path);
}

/* A run that writes first removes the temp files a killed run left in dir. */
static void clean_dir(sc_edit_run *r, const char *dir) {
  if (!r->o.write && !r->o.check_cmd) return;
  for (size_t i = 0; i < r->n_cleaned; i++)
    if (strcmp(r->cleaned[i], dir) == 0) return;
  char **nc = realloc(r->cleaned, (r->n_cleaned + 1) * sizeof *nc);
  if (!nc) return;
  r->cleaned = nc;
  if (!(r->cleaned[r->n_cleaned] = strdup(dir))) return;
  r->n_cleaned++;
  sc_edit__clean_temps(dir, said_removed, r);
}

/* ... and in the folder of the file at real (a real path). */
static void clean_dir_of(sc_edit_run *r, const char *real) {
  char *d = strdup(real);
  char *slash = d ? strrchr(d, '/') : NULL;
  if (slash) {
    *slash = '\0';
    clean_dir(r, *d ? d : "/");
  }
  free(d);
}

/* Adds a file by the path it was found or named under. Returns its index
 * (the existing one for a second path to the same file), or -1 when it is
 * skipped (the reason is recorded). */
static long add_file(sc_edit_run *r, const char *path, bool explicit_path) {
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
  clean_dir_of(r, real);
  char *text = NULL;
  size_t len = 0;
  sc_edit__stamp stamp;
  sc_status rs = sc_edit__file_read(real, &text, &len, &stamp);
  if (rs != SC_OK) {
    skip_file(r, path, rs == SC_ERR_STALE ? "it kept changing while it was read" : strerror(errno));
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
    run_file *nf = realloc(r->files, cap * sizeof *nf);
    if (!nf) {
      free(text);
      return -1;
    }
    r->files = nf;
    r->cap_files = cap;
  }
  run_file *f = &r->files[r->n_files];
  memset(f, 0, sizeof *f);
  const char *shown = strncmp(path, "./", 2) == 0 ? path + 2 : path;
  f->path = strdup(shown);
  f->real = strdup(real);
  f->orig = text;
  f->orig_len = len;
  f->disk = sc_edit__dupn(text, len);
  f->disk_len = len;
  f->stamp = stamp;
  sc_error derr = {0};
  if (!f->path || !f->real || !f->disk ||
      sc_edit_doc_new(lang, f->real, text, len, &f->doc, &derr) != SC_OK) {
    /* A text tree-sitter cannot parse within its budget is named, not
     * passed over in silence. */
    if (derr.msg[0]) skip_file(r, path, derr.msg);
    free(f->path);
    free(f->real);
    free(f->disk);
    sc_edit_doc_free(f->doc);
    free(text);
    return -1;
  }
  return (long)r->n_files++;
}

/* Walks a directory: hidden entries (.git, our temp files) are skipped,
 * symlinked directories are not followed, symlinked files are checked. */
static void walk(sc_edit_run *r, const char *dir, int depth) {
  if (depth > 64) return;
  clean_dir(r, dir);
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
    for (size_t j = i; j > 0 && names[j] && names[j - 1] && strcmp(names[j - 1], names[j]) > 0;
         j--) {
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
          if (stat(p, &tst) == 0 && S_ISREG(tst.st_mode) && sc_context_language_for(NULL, p))
            add_file(r, p, false); /* refused there when it leads out */
        }
      }
      free(p);
    }
    free(names[i]);
  }
  free(names);
}

/* ---- sites -------------------------------------------------------------------- */

static void add_site(sc_edit_run *r, size_t file, const sc_edit_site *site, const char *msg) {
  size_t a = site->start, b = site->end;
  for (size_t i = 0; i < r->n_sites; i++) {
    const sc_edit_run_site *s = &r->sites[i].pub;
    /* Overlapping sites in one file: the first one wins. */
    if (s->file == file &&
        a < s->site.end + (s->site.start == s->site.end) && s->site.start < b + (a == b))
      return;
  }
  if (r->n_sites == r->cap_sites) {
    size_t cap = r->cap_sites ? 2 * r->cap_sites : 16;
    run_site *ns = realloc(r->sites, cap * sizeof *ns);
    if (!ns) return;
    r->sites = ns;
    r->cap_sites = cap;
  }
  run_site *s = &r->sites[r->n_sites++];
  memset(s, 0, sizeof *s);
  const char *text = r->files[file].orig;
  s->pub.file = file;
  s->pub.site = *site;
  s->message = msg ? strdup(msg) : NULL;
  s->pub.message = s->message;
  s->pub.result.check = "not run";
  s->pub.result.seed = -1;
  sc_edit__line_col(text, a, &s->pub.line0, &s->pub.col0);
  sc_edit__line_col(text, b, &s->pub.line1, &s->pub.col1);
}

static void add_sites(sc_edit_run *r, size_t file, const sc_edit_site *v, size_t n) {
  for (size_t i = 0; i < n; i++) add_site(r, file, &v[i], NULL);
}

static int cmp_site(const void *x, const void *y) {
  const run_site *a = x, *b = y;
  if (a->pub.file != b->pub.file) return a->pub.file < b->pub.file ? -1 : 1;
  return a->pub.site.start < b->pub.site.start ? -1 : a->pub.site.start > b->pub.site.start;
}

static void sort_sites(sc_edit_run *r) {
  if (r->n_sites > 1) qsort(r->sites, r->n_sites, sizeof *r->sites, cmp_site);
  /* The messages moved with their records. */
  for (size_t i = 0; i < r->n_sites; i++) r->sites[i].pub.message = r->sites[i].message;
}

/* ---- the run ------------------------------------------------------------------- */

sc_status sc_edit_run_new(const sc_edit_run_options *o, const char *const *paths, int n_paths,
                          sc_edit_run **out, sc_error *err) {
  *out = NULL;
  sc_edit_run *r = calloc(1, sizeof *r);
  SC_CHECK(r, err, SC_ERR_NOMEM, "out of memory");
  r->o = *o;
  r->paths = paths;
  r->n_paths = n_paths;
  r->roots = calloc((size_t)(n_paths > 0 ? n_paths : 1), sizeof *r->roots);
  if (!r->roots) {
    sc_edit_run_free(r);
    return sc_error_set(err, SC_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < n_paths; i++) {
    char real[PATH_MAX];
    if (!realpath(paths[i], real)) {
      sc_status st = sc_error_set(err, SC_ERR_INVALID, "%s: %s", paths[i], strerror(errno));
      sc_edit_run_free(r);
      return st;
    }
    r->roots[r->n_roots++] = strdup(real);
  }
  *out = r;
  return SC_OK;
}

void sc_edit_run_free(sc_edit_run *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_files; i++) {
    run_file *f = &r->files[i];
    free(f->path);
    free(f->real);
    free(f->orig);
    free(f->disk);
    free(f->write_error);
    sc_edit_doc_free(f->doc);
  }
  free(r->files);
  for (size_t i = 0; i < r->n_cleaned; i++) free(r->cleaned[i]);
  free(r->cleaned);
  for (size_t i = 0; i < r->n_sites; i++) {
    free(r->sites[i].message);
    sc_edit_result_free(&r->sites[i].pub.result);
    sc_edit_candidate_free(&r->sites[i].pre);
  }
  free(r->sites);
  for (int i = 0; i < r->n_roots; i++) free(r->roots[i]);
  free(r->roots);
  for (size_t i = 0; i < r->n_skipped; i++) {
    free(r->skip_path[i]);
    free(r->skip_reason[i]);
  }
  free(r->skip_path);
  free(r->skip_reason);
  free(r);
}

sc_status sc_edit_run_collect(sc_edit_run *r, sc_error *err) {
  for (int i = 0; i < r->n_paths; i++) {
    struct stat st;
    if (stat(r->paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      size_t l = strlen(r->paths[i]);
      char *p = strndup(r->paths[i], l);
      while (p && l > 1 && p[l - 1] == '/') p[--l] = '\0';
      if (p) walk(r, p, 0);
      free(p);
    } else {
      add_file(r, r->paths[i], true);
    }
  }
  bool any_query = false;
  sc_error qerr = {0};
  for (size_t fi = 0; fi < r->n_files; fi++) {
    sc_edit_site *v = NULL;
    size_t n = 0;
    if (r->o.mode == SC_EDIT_HOLE) {
      sc_edit_find_holes(r->files[fi].doc, &r->o.holes, 0, SIZE_MAX, &v, &n, NULL);
    } else if (sc_edit_find_query(r->files[fi].doc, r->o.query, r->o.capture, &v, &n, &qerr) ==
               SC_OK) {
      any_query = true;
    }
    add_sites(r, fi, v, n);
    free(v);
  }
  if (r->o.mode == SC_EDIT_QUERY && r->n_files > 0 && !any_query)
    return sc_error_set(err, SC_ERR_INVALID, "%s", qerr.msg);
  sort_sites(r);
  return SC_OK;
}

sc_status sc_edit_run_add_diagnostics(sc_edit_run *r, const sc_edit_diagnostic *d, size_t n,
                                      sc_error *err) {
  size_t left_out = 0;
  for (size_t i = 0; i < n; i++) {
    /* Only errors are sites: a warning is about code that compiles. */
    if (d[i].severity != SC_EDIT_ERROR &&
        !(r->o.warnings && d[i].severity == SC_EDIT_WARNING)) {
      left_out++;
      continue;
    }
    long fi = add_file(r, d[i].path, true);
    if (fi < 0) continue;
    run_file *f = &r->files[fi];
    size_t pos;
    SC_CHECK(sc_edit__diag_offset(f->orig, f->orig_len, &d[i], &pos), err, SC_ERR_INVALID,
             "diagnostic %s:%ld:%ld is outside the file", d[i].path, d[i].line + 1,
             d[i].col + 1);
    sc_edit_site site;
    if (sc_edit_site_for_diagnostic(f->doc, pos, d[i].message, &site, NULL) == SC_OK)
      add_site(r, (size_t)fi, &site, d[i].message);
  }
  r->left_out += left_out;
  if (left_out)
    say(r, SC_LOG_INFO, "left out %zu diagnostic%s that %s not an error%s", left_out,
        left_out == 1 ? "" : "s", left_out == 1 ? "is" : "are",
        r->o.warnings ? "" : " (--warnings takes warnings too)");
  sort_sites(r);
  return SC_OK;
}

size_t sc_edit_run_site_count(const sc_edit_run *r) { return r->n_sites; }

/* ---- writing -------------------------------------------------------------------- */

/* Writes text over the file (through a symlink to its target) when the
 * disk still holds what we last saw there; SC_ERR_STALE when someone else
 * changed it, or the symlink now leads elsewhere. */
static sc_status file_replace(const sc_edit_run *r, run_file *f, const char *text, size_t len,
                              sc_error *err) {
  char now[PATH_MAX];
  SC_CHECK(realpath(f->path, now) && strcmp(now, f->real) == 0, err, SC_ERR_STALE,
           "%s changed on disk after it was read; not written", f->path);
  SC_CHECK(!f->foreign, err, SC_ERR_STALE, "%s changed on disk after it was read; not written",
           f->path);
  SC_TRY(sc_edit__file_replace(f->real, f->path, &f->disk, &f->disk_len, &f->stamp, text, len,
                               r->o.force, err));
  /* Another writer appended meanwhile: their bytes went on after ours, and
   * the file is no longer ours to rewrite (a --check run's put-back). */
  f->foreign = f->disk_len != len;
  if (f->foreign)
    say(r, SC_LOG_ERROR, "%s: kept the bytes appended to it during the write", f->path);
  return SC_OK;
}

/* A write failed: say why, and remember it for the report. */
static void write_failed(const sc_edit_run *r, run_file *f, const sc_error *err) {
  say(r, SC_LOG_ERROR, "%s", err->msg);
  f->failed_write = true;
  if (!f->write_error) f->write_error = strdup(err->msg);
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

typedef struct check_ctx {
  const sc_edit_run *r;
  run_file *f;
} check_ctx;

/* --check as the fill's accept: the candidate goes to disk, the command runs. */
static sc_status accept_by_command(void *user, const char *text, size_t len, bool *passed,
                                   sc_error *err) {
  check_ctx *c = user;
  SC_TRY(file_replace(c->r, c->f, text, len, err));
  *passed = run_check(c->r->o.check_cmd, c->f->path);
  return SC_OK;
}

static bool differs(const char *a, size_t al, const char *b, size_t bl) {
  return al != bl || memcmp(a, b, al) != 0;
}

/* ---- filling --------------------------------------------------------------------- */

/* The greedy candidates of every hole, decoded together (last site first,
 * the order the sites are filled in); fill_site then takes each as its
 * first candidate. */
static void prefetch(sc_edit_run *r, const sc_edit_generator *gen) {
  size_t n = 0;
  for (size_t k = 0; k < r->n_sites; k++) n += r->sites[k].pub.site.kind == SC_EDIT_HOLE;
  if (n < 2) return;
  sc_edit_request *reqs = calloc(n, sizeof *reqs);
  sc_edit_candidate *outs = calloc(n, sizeof *outs);
  size_t *idx = calloc(n, sizeof *idx), m = 0;
  for (size_t k = r->n_sites; reqs && outs && idx && k-- > 0;) {
    run_site *s = &r->sites[k];
    if (s->pub.site.kind != SC_EDIT_HOLE) continue;
    const run_file *f = &r->files[s->pub.file];
    size_t tl;
    const char *text = sc_edit_doc_text(f->doc, &tl);
    reqs[m] = (sc_edit_request){text, tl, sc_edit_doc_language(f->doc), s->pub.site, 0};
    idx[m++] = k;
  }
  int passes = 0;
  if (m > 1 && gen->generate_many(gen->user, reqs, m, outs, &passes, NULL) == SC_OK) {
    int got = 0;
    for (size_t i = 0; i < m; i++)
      if (outs[i].text) {
        r->sites[idx[i]].pre = outs[i];
        got++;
      }
    if (got > 0) {
      r->batched_sites = got;
      r->batched_passes = passes;
    }
  }
  free(reqs);
  free(outs);
  free(idx);
}

static void fill_site(sc_edit_run *r, run_site *s, const sc_edit_generator *gen) {
  run_file *f = &r->files[s->pub.file];
  check_ctx cc = {r, f};
  sc_edit_fill_options fo = {*gen, r->o.candidates, &s->pre,
                             r->o.check_cmd ? accept_by_command : NULL, &cc, r->o.cancel};
  sc_edit_result *res = &s->pub.result;
  sc_edit_result_free(res);
  sc_error err = {0};
  /* Sites are done last first, so the site's span in the original text is
   * its span now. */
  if (sc_edit_fill(f->doc, &s->pub.site, &fo, res, &err) != SC_OK && res->status != SC_EDIT_DONE)
    res->reason = "out of memory";
  if (res->reason && strcmp(res->reason, "the backend failed") == 0 && res->n_tries > 0 &&
      res->tries[res->n_tries - 1].error)
    say(r, SC_LOG_ERROR, "%s", res->tries[res->n_tries - 1].error);
  if (res->status == SC_EDIT_DONE &&
      sc_edit_doc_apply(f->doc, res->start, res->end, res->text, res->len, &err) != SC_OK) {
    res->status = SC_EDIT_FAILED;
    res->reason = "out of memory";
  }
  /* A failed check leaves its candidate on disk: put the text back. */
  size_t tl;
  const char *text = sc_edit_doc_text(f->doc, &tl);
  if (r->o.check_cmd && differs(f->disk, f->disk_len, text, tl)) {
    sc_error werr = {0};
    if (file_replace(r, f, text, tl, &werr) != SC_OK) write_failed(r, f, &werr);
  }
}

size_t sc_edit_run_fill(sc_edit_run *r, const sc_edit_generator *gen, bool batch_sites,
                      void (*progress)(void *user, size_t done), void *user) {
  if (batch_sites && gen->generate_many) prefetch(r, gen);
  size_t done = 0;
  for (size_t k = r->n_sites; k-- > 0;) {
    if (r->o.cancel && *r->o.cancel) break;
    fill_site(r, &r->sites[k], gen);
    if (progress) progress(user, ++done);
  }
  /* Sites never reached. */
  for (size_t k = 0; k < r->n_sites; k++) {
    sc_edit_result *res = &r->sites[k].pub.result;
    if (res->status == SC_EDIT_PENDING) {
      res->status = SC_EDIT_SKIPPED;
      res->reason = "interrupted";
    }
  }
  return done;
}

void sc_edit_run_finish(sc_edit_run *r) {
  bool write = r->o.write;
  for (size_t i = 0; i < r->n_files; i++) {
    run_file *f = &r->files[i];
    size_t tl;
    const char *text = sc_edit_doc_text(f->doc, &tl);
    const char *want = write ? text : f->orig;
    size_t want_len = write ? tl : f->orig_len;
    if (!differs(f->disk, f->disk_len, want, want_len)) {
      if (write && differs(f->orig, f->orig_len, text, tl)) f->written = true;
      continue;
    }
    sc_error err = {0};
    if (file_replace(r, f, want, want_len, &err) != SC_OK) {
      write_failed(r, f, &err);
    } else if (write) {
      f->written = true;
    }
  }
  /* A site whose file could not be written is not done. */
  for (size_t k = 0; write && k < r->n_sites; k++) {
    sc_edit_result *res = &r->sites[k].pub.result;
    if (res->status == SC_EDIT_DONE && r->files[r->sites[k].pub.file].failed_write) {
      res->status = SC_EDIT_FAILED;
      res->reason = "the file could not be written";
    }
  }
}

/* ---- the report ------------------------------------------------------------------ */

size_t sc_edit_run_file_count(const sc_edit_run *r) { return r->n_files; }

void sc_edit_run_get_file(const sc_edit_run *r, size_t i, sc_edit_run_file *out) {
  const run_file *f = &r->files[i];
  out->path = f->path;
  out->orig = f->orig;
  out->orig_len = f->orig_len;
  out->text = sc_edit_doc_text(f->doc, &out->len);
  out->written = f->written;
  out->failed_write = f->failed_write;
  out->write_error = f->write_error;
}

const sc_edit_run_site *sc_edit_run_get_site(const sc_edit_run *r, size_t k) {
  return &r->sites[k].pub;
}

size_t sc_edit_run_skipped_count(const sc_edit_run *r) { return r->n_skipped; }

void sc_edit_run_get_skipped(const sc_edit_run *r, size_t i, const char **path,
                             const char **reason) {
  *path = r->skip_path[i];
  *reason = r->skip_reason[i];
}

size_t sc_edit_run_left_out(const sc_edit_run *r) { return r->left_out; }

void sc_edit_run_batched(const sc_edit_run *r, int *sites, int *passes) {
  *sites = r->batched_sites;
  *passes = r->batched_passes;
}

/* cc.c — the C compiler's judgement of a C or C++ candidate, where one is
 * at hand ($SCULPT_CC, default cc; set empty to skip it): `cc
 * -fsyntax-only` of the whole file before and after. tree-sitter cannot see
 * that a "fix" which deletes a declaration leaves its uses undeclared, or
 * that a line turned into a preprocessor directive is not one; the compiler
 * does. An error after the edit that was not there before (outside the
 * site: the same message on the same line, shifted; inside it: more errors
 * than the site had) refuses the candidate, and so does a diagnostic's fix
 * that leaves as many errors as there were, and a candidate whose site holds
 * more statements with no effect (-Wunused-value: `a->child; n;`) than it
 * did on its lines without an error: gcc reads `a->child n;`, whose `=` was lost, as "expected ';' before
 * 'n'", and the `;` inserted as asked compiles to two statements that do
 * nothing (cJSON, 4 of 30 tokens deleted at random). A hole is held to this only in
 * a file that compiled (no error at all) before. A file whose includes the
 * compiler cannot find stops at a fatal error and cannot be judged this
 * way: tree-sitter's checks stand alone then.
 *
 * Compile only (-fsyntax-only: nothing is generated or run). The text goes
 * on stdin; its folder is searched for quoted and angle includes (-iquote,
 * -I), as a file compiled in place would be; of the warnings only
 * -Wunused-value's are read; a compile that takes over 20 s is killed. */
#define _GNU_SOURCE
#include "edit_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CC_TIMEOUT_MS 20000

/* One error: where (its file, "" for the text itself, and line) and what. */
struct sc_edit__cc_error {
  char *file;
  long line;
  char *msg;
};
typedef struct sc_edit__cc_error cc_error;

static void errors_free(cc_error *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(e[i].file);
    free(e[i].msg);
  }
  free(e);
}

/* The errors of `cc -fsyntax-only` on text, and the lines of the text
 * where a statement has no effect (*noeffect, owned by the caller). 1: ran
 * (*fatal when it stopped at a fatal error); -1: no compiler, or it did not
 * finish. */
static int cc_run(const char *lang, const char *dir, const char *text, size_t len,
                  cc_error **out, size_t *n_out, long **noeffect, size_t *n_noeffect,
                  bool *fatal) {
  *out = NULL;
  *n_out = 0;
  *noeffect = NULL;
  *n_noeffect = 0;
  *fatal = false;
  const char *cc = getenv("SCULPT_CC");
  if (cc && !*cc) return -1;
  if (!cc) cc = "cc";
  FILE *in = tmpfile(), *err = tmpfile();
  int verdict = -1;
  if (!in || !err || (len && fwrite(text, 1, len, in) != len) || fflush(in) != 0 ||
      fseek(in, 0, SEEK_SET) != 0)
    goto done;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fileno(in), STDIN_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fileno(err), STDERR_FILENO);
  /* -Wunused-value: -Wall's in gcc, on by default in clang; the other
   * warnings are printed and not read. */
  char *argv[] = {(char *)cc, "-fsyntax-only", "-Wunused-value", "-fno-diagnostics-color", "-x",
                  strcmp(lang, "cpp") == 0 ? "c++" : "c", "-iquote", (char *)dir, "-I",
                  (char *)dir, "-", NULL};
  pid_t pid;
  /* Its own process group: a Ctrl-C at the terminal is for us, not it. */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = posix_spawnp(&pid, cc, &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) goto done;
  int status = 0;
  double end = sc_now_ms() + CC_TIMEOUT_MS;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) goto done;
    if (sc_now_ms() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      goto done;
    }
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) goto done;
  verdict = 1;
  /* file:line:col: error: message (the file is "<stdin>" for the text). */
  char line[2048];
  fseek(err, 0, SEEK_SET);
  while (fgets(line, sizeof line, err)) {
    char *e = strstr(line, ": error: "), *f = strstr(line, ": fatal error: ");
    if (f) *fatal = true;
    char *w = !e && !f && strstr(line, "[-Wunused-value]") ? strstr(line, ": warning: ") : NULL;
    if (w && strncmp(line, "<stdin>:", 8) == 0) {
      long *nw = realloc(*noeffect, (*n_noeffect + 1) * sizeof *nw);
      if (!nw) break;
      *noeffect = nw;
      nw[(*n_noeffect)++] = strtol(line + 8, NULL, 10);
      continue;
    }
    if (!e && !f) continue;
    char *msg = e ? e + 9 : f + 15;
    *(e ? e : f) = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    /* What is left is file:line:col. */
    char *c2 = strrchr(line, ':'), *c1 = NULL;
    if (c2) {
      *c2 = '\0';
      c1 = strrchr(line, ':');
    }
    long ln = c1 ? strtol(c1 + 1, NULL, 10) : 0;
    if (c1) *c1 = '\0';
    cc_error *ne = realloc(*out, (*n_out + 1) * sizeof *ne);
    if (!ne) break;
    *out = ne;
    bool own = strcmp(line, "<stdin>") == 0;
    ne[*n_out] = (cc_error){strdup(own ? "" : line), ln, strdup(msg)};
    (*n_out)++;
  }
done:
  if (in) fclose(in);
  if (err) fclose(err);
  return verdict;
}

/* How many of the n lines in v lie in [l0, l1], leaving out the lines of
 * the text's own errors in errs (where a compiler's recovery guessed the
 * statements: clang reads `a->child n;` as two, with the `;` it expects). */
static size_t lines_within(const long *v, size_t n, long l0, long l1, const cc_error *errs,
                           size_t n_errs) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    bool guessed = false;
    for (size_t j = 0; j < n_errs && !guessed; j++)
      guessed = !*errs[j].file && errs[j].line == v[i];
    k += v[i] >= l0 && v[i] <= l1 && !guessed;
  }
  return k;
}

static long count_lines(const char *t, size_t a, size_t b) {
  long n = 0;
  for (size_t i = a; i < b; i++) n += t[i] == '\n';
  return n;
}

/* The folder of the document's file, for its includes ("." when unknown). */
static char *dir_of(const sc_edit_doc *doc) {
  const char *p = doc->path;
  const char *slash = p ? strrchr(p, '/') : NULL;
  if (!slash) return strdup(".");
  return slash == p ? strdup("/") : strndup(p, (size_t)(slash - p));
}

/* The compiler's errors on the document's own text, once (a cache); dir
 * is the document's folder. */
static void know(const sc_edit_doc *doc_c, const char *dir, const char *text, size_t tl) {
  sc_edit_doc *doc = (sc_edit_doc *)doc_c;
  if (!doc->cc_known) {
    bool fatal = false;
    sc_edit__cc_forget(doc);
    int r = cc_run(doc->lang, dir, text, tl, &doc->cc_errors, &doc->cc_n, &doc->cc_noeffect,
                   &doc->cc_noeffect_n, &fatal);
    doc->cc_usable = r == 1 && !fatal;
    doc->cc_known = true;
  }
}

bool sc_edit__cc_error_on(const sc_edit_doc *doc, const char *text, size_t tl, long l0,
                          long l1) {
  char *dir = dir_of(doc);
  if (!dir) return false;
  know(doc, dir, text, tl);
  free(dir);
  for (size_t i = 0; doc->cc_usable && i < doc->cc_n; i++)
    if (!*doc->cc_errors[i].file && doc->cc_errors[i].line >= l0 && doc->cc_errors[i].line <= l1)
      return true;
  return false;
}

const char *sc_edit__cc_verdict(const sc_edit_doc *doc_c, const char *text, size_t tl,
                                const sc_edit_site *site, const char *cand, size_t len) {
  sc_edit_doc *doc = (sc_edit_doc *)doc_c; /* the errors of its text are a cache */
  char *dir = dir_of(doc);
  if (!dir) return NULL;
  know(doc, dir, text, tl);
  const char *why = NULL;
  if (!doc->cc_usable) goto out; /* no compiler, or it cannot see the whole file */
  /* A hole in a file that does not compile (an inline marker is itself an
   * undeclared name, and gcc reports each only once per scope) cannot be
   * judged fairly by comparing errors: only a file that compiled is held to
   * still compiling. A fix of existing code always is. */
  if ((site->kind == SC_EDIT_HOLE || site->kind == SC_EDIT_BLOCK) && doc->cc_n > 0) goto out;
  size_t nl;
  char *next = sc_edit__splice(text, tl, site->start, site->end, cand, len, &nl);
  if (!next) goto out;
  cc_error *after = NULL;
  long *noeffect = NULL;
  size_t n_after = 0, n_noeffect = 0;
  bool fatal = false;
  int r = cc_run(doc->lang, dir, next, nl, &after, &n_after, &noeffect, &n_noeffect, &fatal);
  free(next);
  const cc_error *before = doc->cc_errors;
  long l0 = count_lines(text, 0, site->start) + 1;
  long removed = count_lines(text, site->start, site->end), added = count_lines(cand, 0, len);
  size_t in_site_before = 0, in_site_after = 0;
  for (size_t i = 0; i < doc->cc_n; i++)
    in_site_before += !*before[i].file && before[i].line >= l0 && before[i].line <= l0 + removed;
  if (r != 1 || fatal) why = "does not compile";
  for (size_t i = 0; !why && i < n_after; i++) {
    const cc_error *e = &after[i];
    long line = e->line;
    if (!*e->file && line >= l0 && line <= l0 + added) {
      in_site_after++;
      continue;
    }
    if (!*e->file && line > l0 + added) line = line - added + removed;
    bool seen = false;
    for (size_t k = 0; k < doc->cc_n && !seen; k++)
      seen = before[k].line == line && strcmp(before[k].file, e->file) == 0 &&
             strcmp(before[k].msg, e->msg) == 0;
    if (!seen) why = "does not compile";
  }
  if (!why && in_site_after > in_site_before) why = "does not compile";
  /* A diagnostic's fix leaves fewer errors: tree-sitter cannot always
   * tell (check.c, broken_near), the compiler can. */
  if (!why && site->kind == SC_EDIT_DIAGNOSTIC && doc->cc_n > 0 && n_after >= doc->cc_n)
    why = "does not fix the error";
  if (!why && lines_within(noeffect, n_noeffect, l0, l0 + added, NULL, 0) >
                  lines_within(doc->cc_noeffect, doc->cc_noeffect_n, l0, l0 + removed,
                               doc->cc_errors, doc->cc_n))
    why = "leaves a statement with no effect";
  errors_free(after, n_after);
  free(noeffect);
out:
  free(dir);
  return why;
}

void sc_edit__cc_forget(sc_edit_doc *doc) {
  errors_free(doc->cc_errors, doc->cc_n);
  doc->cc_errors = NULL;
  doc->cc_n = 0;
  free(doc->cc_noeffect);
  doc->cc_noeffect = NULL;
  doc->cc_noeffect_n = 0;
  doc->cc_known = false;
}

/* python.c — Python's own judgement of a candidate: the whole file with the
 * candidate in place must compile (compile() through the machine's python3,
 * or $SCULPT_PYTHON), no worse than it did before. tree-sitter's Python
 * grammar accepts some indentation Python rejects (an `unexpected indent`
 * parses), so its error count alone would let such a candidate through.
 *
 * The file is untrusted: it is compiled, never executed. The interpreter
 * runs isolated (-I: no environment variables, no user site, not the
 * file's folder on sys.path; -S: no site import; -B: no bytecode written),
 * reads the text on stdin, and is killed after 20 s (SIGALRM) with its
 * address space capped at 2 GiB. Without an interpreter ($SCULPT_PYTHON
 * set empty, or none on PATH) an indentation check of ours stands in:
 * the block structure Python's tokenizer enforces (an indented block after
 * a line ending in `:`, no unexpected indent, a dedent to an enclosing
 * level), with strings, comments, brackets and backslash continuations
 * skipped. */
#define _GNU_SOURCE /* posix_spawn file actions */
#include "edit_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char k_compile_py[] =
    "import sys, signal\n"
    "signal.alarm(20)\n"
    "try:\n"
    "    import resource\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    "except Exception:\n"
    "    pass\n"
    "src = sys.stdin.buffer.read()\n"
    "try:\n"
    "    compile(src, '<sculpt>', 'exec', dont_inherit=True)\n"
    "except SyntaxError as e:\n"
    "    print(e.lineno or 0)\n"
    "    sys.exit(1)\n"
    "except BaseException:\n"
    "    sys.exit(2)\n";

/* Set once an interpreter could not be started: later checks use ours. */
static _Atomic int g_no_python;

/* compile() of text: 1 compiles; 0 does not (*line: the first error's,
 * 1-based, 0 when unknown); -1 no interpreter. */
static int py_compile(const char *text, size_t len, long *line) {
  *line = 0;
  const char *py = getenv("SCULPT_PYTHON");
  if ((py && !*py) || atomic_load(&g_no_python)) return -1;
  if (!py) py = "python3";
  FILE *in = tmpfile(), *out = tmpfile();
  int verdict = 0;
  if (!in || !out || (len && fwrite(text, 1, len, in) != len) || fflush(in) != 0 ||
      fseek(in, 0, SEEK_SET) != 0) {
    verdict = -1;
    goto done;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fileno(in), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, fileno(out), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char *argv[] = {(char *)py, "-I", "-S", "-B", "-c", (char *)k_compile_py, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, py, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    atomic_store(&g_no_python, 1);
    verdict = -1;
    goto done;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      verdict = -1;
      goto done;
    }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    verdict = 1;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    atomic_store(&g_no_python, 1); /* a shell-like "not found" */
    verdict = -1;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && fseek(out, 0, SEEK_SET) == 0 &&
             fscanf(out, "%ld", line) != 1) {
    *line = 0;
  }
done:
  if (in) fclose(in);
  if (out) fclose(out);
  return verdict;
}

/* ---- our indentation check ------------------------------------------------------ */

/* Indentation width as Python's tokenizer counts it: a tab to the next
 * multiple of 8. */
static size_t indent_width(const char *t, size_t a, size_t b) {
  size_t w = 0;
  for (size_t i = a; i < b; i++) w = t[i] == '\t' ? (w / 8 + 1) * 8 : w + 1;
  return w;
}

long sc_edit__python_indent_error(const char *t, size_t len) {
  size_t stack[128], depth = 1, brackets = 0;
  stack[0] = 0;
  bool want_block = false, continued = false;
  char quote = 0; /* inside a string: its quote character */
  bool triple = false;
  long line = 0;
  for (size_t p = 0; p < len;) {
    line++;
    const char *nl = memchr(t + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - t) : len, x = p;
    /* A logical line starts here unless a string, a bracket or a backslash
     * carries the previous one over. */
    if (!quote && !brackets && !continued) {
      while (x < e && (t[x] == ' ' || t[x] == '\t' || t[x] == '\f')) x++;
      bool blank = x == e || t[x] == '#' || t[x] == '\r';
      if (!blank) {
        size_t w = indent_width(t, p, x);
        if (want_block) {
          if (w <= stack[depth - 1]) return line; /* expected an indented block */
          if (depth == sizeof stack / sizeof stack[0]) return 0; /* too deep to judge */
          stack[depth++] = w;
          want_block = false;
        } else if (w > stack[depth - 1]) {
          return line; /* unexpected indent */
        } else {
          while (depth > 1 && w < stack[depth - 1]) depth--;
          if (w != stack[depth - 1]) return line; /* unindent does not match */
        }
      }
    }
    /* Scan the line for strings, comments, brackets and its last token. */
    char last = 0;
    continued = false;
    for (size_t i = x; i < e; i++) {
      char c = t[i];
      if (quote) {
        if (c == '\\') i++;
        else if (c == quote && (!triple || (i + 2 < e && t[i + 1] == quote && t[i + 2] == quote))) {
          if (triple) i += 2;
          quote = 0;
          last = c;
        }
        continue;
      }
      if (c == '#') break;
      if (c == '\'' || c == '"') {
        triple = i + 2 < e && t[i + 1] == c && t[i + 2] == c;
        quote = c;
        if (triple) i += 2;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') brackets++;
      else if ((c == ')' || c == ']' || c == '}') && brackets > 0) brackets--;
      if (c == '\\' && i + 1 == e) continued = true;
      else if (c != ' ' && c != '\t' && c != '\r') last = c;
    }
    if (quote && !triple) quote = 0; /* an unterminated one-line string ends here */
    if (!quote && !brackets && !continued && last == ':') want_block = true;
    p = e + 1;
  }
  return want_block ? line : 0;
}

/* ---- the verdict ------------------------------------------------------------- */

static long count_lines(const char *t, size_t a, size_t b) {
  long n = 0;
  for (size_t i = a; i < b; i++) n += t[i] == '\n';
  return n;
}

/* Judges one text: 1 good; 0 bad (*line); -1 no interpreter when ours is not asked. */
static int judge(const char *text, size_t len, bool ours, long *line) {
  if (ours) {
    *line = sc_edit__python_indent_error(text, len);
    return *line == 0;
  }
  return py_compile(text, len, line);
}

const char *sc_edit__python_verdict(const sc_edit_doc *doc_c, const char *text, size_t tl,
                                    const sc_edit_site *site, const char *cand, size_t len) {
  sc_edit_doc *doc = (sc_edit_doc *)doc_c; /* the verdict on its text is a cache */
  if (!doc->py_known) {
    doc->py_ours = false;
    doc->py_before = judge(text, tl, false, &doc->py_line);
    if (doc->py_before < 0) {
      doc->py_ours = true;
      doc->py_before = judge(text, tl, true, &doc->py_line);
    }
    doc->py_known = true;
  }
  size_t nl;
  char *next = sc_edit__splice(text, tl, site->start, site->end, cand, len, &nl);
  if (!next) return "parse check failed";
  long after_line = 0;
  int after = judge(next, nl, doc->py_ours, &after_line);
  if (after < 0) { /* the interpreter went away: ours, for both */
    doc->py_ours = true;
    doc->py_before = judge(text, tl, true, &doc->py_line);
    after = judge(next, nl, true, &after_line);
  }
  free(next);
  const char *why = doc->py_ours ? "bad indentation" : "does not compile";
  if (after == 1) return NULL;
  if (doc->py_before == 1) return why;
  /* It did not compile before either: the first error must not be in the
   * site's lines nor come before the old one. */
  long site_line = count_lines(text, 0, site->start) + 1;
  long added = count_lines(cand, 0, len), removed = count_lines(text, site->start, site->end);
  if (after_line >= site_line && after_line <= site_line + added) return why;
  long orig = after_line < site_line ? after_line : after_line - added + removed;
  return orig >= doc->py_line ? NULL : why;
}

/* python.c — Python's own judgement of a candidate: the whole file with the
 * candidate in place must compile (compile() through the machine's python3,
 * or $SCULPT_PYTHON), no worse than it did before. tree-sitter's Python
 * grammar accepts some indentation Python rejects (an `unexpected indent`
 * parses), so its error count alone would let such a candidate through.
 *
 * The file is untrusted: it is compiled, never executed. One interpreter
 * per process serves every check (started on first use: starting one costs
 * far more than a compile), over a socket pair on its stdin and stdout. It
 * runs isolated (-I: no environment variables, no user site, not the file's
 * folder on sys.path; -S: no site import; -B: no bytecode written); a
 * compile that takes over 20 s kills it (SIGALRM; a new one starts on the
 * next check); its address space is capped at 2 GiB; it exits when we do
 * (its stdin ends). Without an interpreter ($SCULPT_PYTHON set empty, or
 * none on PATH) an indentation check of ours stands in: the block structure
 * Python's tokenizer enforces (an indented block after a line ending in
 * `:`, no unexpected indent, a dedent to an enclosing level), with strings,
 * comments, brackets and backslash continuations skipped. */
#define _GNU_SOURCE /* posix_spawn file actions */
#include "edit_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The interpreter's loop: a request is "<length>\n<bytes>", the answer one
 * line: "ok", "err <line>" (a SyntaxError, which IndentationError and
 * TabError are) or "fail" (anything else, e.g. nested too deep). */
static const char k_server_py[] =
    "import sys, signal\n"
    "try:\n"
    "    import resource\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    "except Exception:\n"
    "    pass\n"
    "i, o = sys.stdin.buffer, sys.stdout\n"
    "while True:\n"
    "    h = i.readline()\n"
    "    if not h:\n"
    "        break\n"
    "    src = i.read(int(h))\n"
    "    signal.alarm(20)\n"
    "    try:\n"
    "        compile(src, '<sculpt>', 'exec', dont_inherit=True)\n"
    "        o.write('ok\\n')\n"
    "    except SyntaxError as e:\n"
    "        o.write('err %d\\n' % (e.lineno or 0))\n"
    "    except BaseException:\n"
    "        o.write('fail\\n')\n"
    "    signal.alarm(0)\n"
    "    o.flush()\n";

/* One interpreter per process, guarded by g_lock (the LSP's worker and the
 * CLI may both ask). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_pid = -1;
static int g_sock = -1;
static bool g_none; /* none could be started: ours from now on */

static void stop_server(void) {
  if (g_sock >= 0) close(g_sock);
  g_sock = -1;
  if (g_pid > 0) {
    kill(g_pid, SIGKILL);
    while (waitpid(g_pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  g_pid = -1;
}

static bool start_server(const char *py) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, sv[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char *argv[] = {(char *)py, "-I", "-S", "-B", "-c", (char *)k_server_py, NULL};
  /* Its own process group: a Ctrl-C at the terminal is for us, not it. */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = posix_spawnp(&g_pid, py, &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    g_pid = -1;
    return false;
  }
  g_sock = sv[0];
  return true;
}

static bool send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* One answer line, waiting 30 s at most. */
static bool read_line(int fd, char *buf, size_t cap) {
  size_t n = 0;
  double end = sc_now_ms() + 30000;
  while (n + 1 < cap) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = (int)(end - sc_now_ms());
    if (left <= 0 || poll(&pfd, 1, left) <= 0) return false;
    ssize_t r = recv(fd, buf + n, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    if (buf[n] == '\n') {
      buf[n] = '\0';
      return true;
    }
    n++;
  }
  return false;
}

/* compile() of text: 1 compiles; 0 does not (*line: the first error's,
 * 1-based, 0 when unknown); -1 no interpreter. */
static int py_compile(const char *text, size_t len, long *line) {
  *line = 0;
  const char *py = getenv("SCULPT_PYTHON");
  if (py && !*py) return -1;
  if (!py) py = "python3";
  pthread_mutex_lock(&g_lock);
  int verdict = -1;
  for (int attempt = 0; attempt < 2 && !g_none && verdict < 0; attempt++) {
    if (g_sock < 0 && !start_server(py)) {
      g_none = true;
      break;
    }
    char head[32], answer[64];
    int hl = snprintf(head, sizeof head, "%zu\n", len);
    if (!send_all(g_sock, head, (size_t)hl) || !send_all(g_sock, text, len) ||
        !read_line(g_sock, answer, sizeof answer)) {
      /* It died (a compile over its time, or no python behind the name). */
      stop_server();
      if (attempt == 1) g_none = true;
      continue;
    }
    verdict = strcmp(answer, "ok") == 0;
    if (strncmp(answer, "err ", 4) == 0) *line = strtol(answer + 4, NULL, 10);
  }
  pthread_mutex_unlock(&g_lock);
  return verdict;
}

int sc_edit_python_compiles(const char *text, size_t len) {
  long line;
  return py_compile(text, len, &line);
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

/* Python's verdict on the document's own text, once (a cache). */
static void know(const sc_edit_doc *doc_c, const char *text, size_t tl) {
  sc_edit_doc *doc = (sc_edit_doc *)doc_c;
  if (doc->py_known) return;
  doc->py_ours = false;
  doc->py_before = judge(text, tl, false, &doc->py_line);
  if (doc->py_before < 0) {
    doc->py_ours = true;
    doc->py_before = judge(text, tl, true, &doc->py_line);
  }
  doc->py_known = true;
}

bool sc_edit__python_error_on(const sc_edit_doc *doc, const char *text, size_t tl, long l0,
                              long l1) {
  know(doc, text, tl);
  return doc->py_before == 0 && doc->py_line >= l0 && doc->py_line <= l1;
}

const char *sc_edit__python_verdict(const sc_edit_doc *doc_c, const char *text, size_t tl,
                                    const sc_edit_site *site, const char *cand, size_t len) {
  sc_edit_doc *doc = (sc_edit_doc *)doc_c; /* the verdict on its text is a cache */
  know(doc, text, tl);
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

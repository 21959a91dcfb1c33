/* diag.c — diagnostics as input to a run, as tools print them: compiler
 * and linter lines (gcc, clang, go, mypy, flake8, ruff, pyright, tsc,
 * rustc/cargo, Python's traceback) and LSP Diagnostic JSON, parsed into
 * positions the run turns into sites; and those positions as byte offsets
 * (each tool counts columns its own way).
 *
 * The formats, from the tools' own output (tests/batch/tools holds each
 * one's real output) and documentation: gcc's -fdiagnostics-column-unit
 * (display columns, tab stop 8, since gcc 11), mypy's --show-column-numbers,
 * flake8's default format `%(path)s:%(row)d:%(col)d: %(code)s %(text)s`,
 * rustc's human-readable emitter (` --> file:line:col`, columns in
 * characters), tsc's non-pretty `file(line,col): error TSnnnn:`, javac's
 * `File.java:line: error:` with the column under a caret two lines on (its
 * Log: one blank a char), Maven's `[ERROR] path:[line,col] msg` (display
 * columns), LSP 3.17 (UTF-16 positions, DiagnosticSeverity 1-4). */
#define _GNU_SOURCE /* memrchr */
#include "edit_impl.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc_edit_diagnostics_free(sc_edit_diagnostic *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(d[i].path);
    free(d[i].message);
  }
  free(d);
}

/* One diagnostic onto *d: path and msg copied (msg_len bytes; SIZE_MAX: to
 * its NUL), line and col 0-based (col -1: none). */
static bool diag_push(sc_edit_diagnostic **d, size_t *n, const char *path, long line, long col,
                      const char *msg, size_t msg_len, sc_edit_col_unit unit, int severity) {
  sc_edit_diagnostic *nd = realloc(*d, (*n + 1) * sizeof *nd);
  if (!nd) return false;
  *d = nd;
  if (!msg) msg = "";
  if (msg_len == SIZE_MAX) msg_len = strlen(msg);
  nd[*n] = (sc_edit_diagnostic){strdup(path), sc_edit__dupn(msg, msg_len), line, col, unit,
                                false, severity};
  if (!nd[*n].path || !nd[*n].message) {
    free(nd[*n].path);
    free(nd[*n].message);
    return false;
  }
  (*n)++;
  return true;
}

/* One LSP Diagnostic (range.start is 0-based) for path. */
static bool diag_from_json(json_t *dg, const char *path, sc_edit_diagnostic **d, size_t *n,
                           char *why, size_t why_len) {
  json_t *start = json_object_get(json_object_get(dg, "range"), "start");
  json_t *l = json_object_get(start, "line"), *c = json_object_get(start, "character");
  if (!json_is_integer(l) || !json_is_integer(c) || json_integer_value(l) < 0 ||
      json_integer_value(c) < 0) {
    snprintf(why, why_len, "a Diagnostic needs range.start.line and .character (integers >= 0)");
    return false;
  }
  const char *msg = json_string_value(json_object_get(dg, "message"));
  json_t *sev = json_object_get(dg, "severity");
  int severity = SC_EDIT_ERROR;
  if (json_is_integer(sev) && json_integer_value(sev) >= SC_EDIT_ERROR &&
      json_integer_value(sev) <= SC_EDIT_HINT)
    severity = (int)json_integer_value(sev);
  return diag_push(d, n, path, (long)json_integer_value(l), (long)json_integer_value(c), msg,
                   SIZE_MAX, SC_EDIT_COL_UTF16, severity);
}

/* ---- tools' text ------------------------------------------------------------ */

/* A severity word at p (followed by ':'), its severity into *sev (0: a
 * note, a remark or help, which belong to the diagnostic before) and the
 * length through the colon; 0 when there is none. */
static size_t severity_at(const char *p, int *sev) {
  static const struct {
    const char *word;
    int sev;
  } k_words[] = {{"fatal error", SC_EDIT_ERROR},   {"error", SC_EDIT_ERROR},
                 {"warning", SC_EDIT_WARNING},     {"information", SC_EDIT_INFORMATION},
                 {"info", SC_EDIT_INFORMATION},    {"hint", SC_EDIT_HINT},
                 {"note", 0},                      {"remark", 0},
                 {"help", 0}};
  for (size_t i = 0; i < sizeof k_words / sizeof k_words[0]; i++) {
    size_t n = strlen(k_words[i].word);
    if (strncmp(p, k_words[i].word, n) == 0 && p[n] == ':') {
      *sev = k_words[i].sev;
      return n + 1;
    }
  }
  return 0;
}

/* Digits at *p (at most 9): their value, *p past them; -1 when none. */
static long digits(const char **p) {
  long v = 0;
  int k = 0;
  while (k < 9 && isdigit((unsigned char)**p)) {
    v = v * 10 + (**p - '0');
    (*p)++;
    k++;
  }
  return k ? v : -1;
}

static bool ends_with(const char *path, size_t n, const char *ext) {
  size_t e = strlen(ext);
  return n >= e && memcmp(path + n - e, ext, e) == 0;
}

/* What columns a `path:line:col: severity:` line counts, by the file's
 * kind: Python's tools and cargo's short form characters, TypeScript's
 * UTF-16 units, go bytes; C and C++: gcc's display columns, or clang's
 * bytes. */
static sc_edit_col_unit unit_for(const char *path, size_t n, bool clang) {
  if (ends_with(path, n, ".py") || ends_with(path, n, ".pyi") || ends_with(path, n, ".rs"))
    return SC_EDIT_COL_CHARS;
  if (ends_with(path, n, ".ts") || ends_with(path, n, ".tsx") || ends_with(path, n, ".js") ||
      ends_with(path, n, ".jsx"))
    return SC_EDIT_COL_UTF16;
  if (ends_with(path, n, ".go") || clang) return SC_EDIT_COL_BYTES;
  return SC_EDIT_COL_DISPLAY;
}

/* A Python exception name ending at the ':' at p: SyntaxError, IndentationError... */
static bool syntax_error_name(const char *p) {
  return strncmp(p, "SyntaxError:", 12) == 0 || strncmp(p, "IndentationError:", 17) == 0 ||
         strncmp(p, "TabError:", 9) == 0 || strncmp(p, "invalid-syntax:", 15) == 0;
}

/* The message from p, without mypy's trailing error code (`  [syntax]`). */
static size_t message_len(const char *p) {
  size_t n = strlen(p);
  while (n > 0 && isspace((unsigned char)p[n - 1])) n--;
  if (n > 3 && p[n - 1] == ']') {
    size_t k = n - 1;
    while (k > 0 && (isalnum((unsigned char)p[k - 1]) || p[k - 1] == '-' || p[k - 1] == '_')) k--;
    if (k >= 3 && p[k - 1] == '[' && p[k - 2] == ' ' && p[k - 3] == ' ') n = k - 3;
  }
  return n;
}

/* `path:line[:col][:line:col]: rest` and `path:line:col - rest` lines (the
 * path may hold ':' itself), and tsc's `path(line,col): rest`. true when
 * the line was one (a diagnostic pushed, or a note left out); *ok false
 * when out of memory. */
static bool colon_line(char *line, bool clang, sc_edit_diagnostic **out, size_t *n, bool *ok) {
  bool indented = line[0] == ' ' || line[0] == '\t';
  char *start = line;
  while (*start == ' ' || *start == '\t') start++;
  if (strncmp(start, "vet: ", 5) == 0) start += 5; /* go vet's own prefix */
  for (char *c = start; *c; c++) {
    long ln, col = -1;
    const char *p = c + 1, *rest = NULL;
    bool dash = false, tsc = false;
    if (*c == '(' && c > start) { /* tsc: path(line,col): */
      ln = digits(&p);
      if (ln < 1 || *p++ != ',') continue;
      col = digits(&p);
      if (col < 1 || strncmp(p, "): ", 3) != 0) continue;
      rest = p + 3;
      tsc = true;
    } else if (*c == ':' && c > start) {
      ln = digits(&p);
      if (ln < 1) continue;
      if (*p == ':' && isdigit((unsigned char)p[1])) {
        p++;
        col = digits(&p);
        const char *q = p; /* mypy --show-error-end: :endline:endcol */
        if (*q == ':' && isdigit((unsigned char)q[1])) {
          q++;
          if (digits(&q) >= 1 && *q == ':' && isdigit((unsigned char)q[1])) {
            q++;
            if (digits(&q) >= 1) p = q;
          }
        }
      }
      if (*p == ':' && p[1] == ' ') rest = p + 2;
      else if (col >= 1 && strncmp(p, " - ", 3) == 0) rest = p + 3, dash = true;
      else continue;
    } else {
      continue;
    }
    while (*rest == ' ') rest++;
    size_t path_len = (size_t)(c - start);
    int sev = -1;
    size_t sl = severity_at(rest, &sev);
    const char *msg = rest + sl;
    sc_edit_col_unit unit = SC_EDIT_COL_BYTES;
    if (sl) {
      /* pyright's columns are UTF-16 units; the rest by the file's kind. */
      unit = dash || tsc ? SC_EDIT_COL_UTF16 : unit_for(start, path_len, clang);
    } else if (dash || tsc) {
      /* tsc: "error TS1005: ';' expected." */
      static const char *const k_tsc[] = {"error TS", "warning TS", "message TS"};
      static const int k_sev[] = {SC_EDIT_ERROR, SC_EDIT_WARNING, SC_EDIT_INFORMATION};
      for (int w = 0; w < 3 && sev < 0; w++) {
        const char *q = rest + strlen(k_tsc[w]);
        if (strncmp(rest, k_tsc[w], strlen(k_tsc[w])) == 0 && digits(&q) >= 0 && *q == ':') {
          sev = k_sev[w];
          msg = q + 1;
          unit = SC_EDIT_COL_UTF16;
        }
      }
      if (sev < 0) continue;
    } else if (col < 1 || indented) {
      continue;
    } else {
      /* flake8, ruff: "E999 SyntaxError: ...", "W291 trailing whitespace"
       * (E9: the file cannot be read or parsed; the rest is style); ruff's
       * own "SyntaxError: ...". Else go build, go vet, gofmt -e:
       * "path:line:col: message", an error. */
      const char *q = rest, *d;
      while (isupper((unsigned char)*q) && q - rest < 4) q++;
      d = q;
      sev = SC_EDIT_ERROR;
      if (q > rest && digits(&d) >= 0 && *d == ' ') {
        msg = d + 1;
        if (!(q - rest == 1 && rest[0] == 'E' && q[0] == '9') && !syntax_error_name(msg))
          sev = SC_EDIT_WARNING;
        unit = SC_EDIT_COL_CHARS;
      } else if (syntax_error_name(rest)) {
        unit = SC_EDIT_COL_CHARS; /* ruff: "SyntaxError: ...", "invalid-syntax: ..." */
      } else {
        unit = unit_for(start, path_len, clang);
      }
    }
    if (sev == 0) return true; /* a note, a remark, help: part of the one before */
    while (*msg == ' ') msg++;
    *c = '\0';
    *ok = diag_push(out, n, start, ln - 1, col >= 1 ? col - 1 : -1, msg, message_len(msg), unit,
                    sev);
    return true;
  }
  return false;
}

/* Maven's compiler plugin (javac's messages): `[ERROR] path:[line,col]
 * message` (or [WARNING]), the column in display columns (a tab to the
 * next multiple of 8); printed twice, the second under "Compilation
 * failure". Pushed onto out, true; false when line is not one. */
static bool maven_line(char *line, sc_edit_diagnostic **out, size_t *n, bool *ok) {
  int sev = strncmp(line, "[ERROR] ", 8) == 0     ? SC_EDIT_ERROR
            : strncmp(line, "[WARNING] ", 10) == 0 ? SC_EDIT_WARNING
                                                  : 0;
  if (!sev) return false;
  char *path = line + (sev == SC_EDIT_ERROR ? 8 : 10), *br = strstr(path, ":[");
  if (!br || br == path) return false;
  const char *p = br + 2;
  long ln = digits(&p);
  if (ln < 1 || *p++ != ',') return false;
  long col = digits(&p);
  if (col < 1 || strncmp(p, "] ", 2) != 0) return false;
  for (size_t i = 0; i < *n; i++) /* the same one again */
    if ((*out)[i].line == ln - 1 && (*out)[i].col == col - 1 &&
        strlen((*out)[i].path) == (size_t)(br - path) &&
        memcmp((*out)[i].path, path, (size_t)(br - path)) == 0 &&
        strcmp((*out)[i].message, p + 2) == 0)
      return true;
  *br = '\0';
  *ok = diag_push(out, n, path, ln - 1, col - 1, p + 2, message_len(p + 2), SC_EDIT_COL_DISPLAY,
                  sev);
  return true;
}

/* A caret line's column (blanks, then `^`, then `^` or `~` to its end),
 * -1 when line is not one. */
static long caret_column(const char *line) {
  size_t b = strspn(line, " \t");
  return line[b] == '^' && line[b + 1 + strspn(line + b + 1, "^~")] == '\0' ? (long)b : -1;
}

/* gcc's and rustc's source excerpts: `  145 |   old = ...`, `      |   ^`. */
static bool snippet_line(const char *line) {
  const char *p = line + strspn(line, " ");
  while (isdigit((unsigned char)*p)) p++;
  while (*p == ' ') p++;
  return *p == '|' && p > line;
}

/* What a Python traceback has shown so far: the last `File "path", line
 * N`, the source line it showed (how far it was indented) and its caret. */
typedef struct py_frame {
  char *path;
  long line;
  long echo_indent; /* -1: no source line yet */
  long caret;       /* -1: none */
} py_frame;

/* `  File "path", line N` (", in f" may follow): the frame, true. */
static bool py_file_line(const char *line, py_frame *f) {
  const char *p = line;
  while (*p == ' ') p++;
  if (strncmp(p, "File \"", 6) != 0) return false;
  p += 6;
  const char *q = strstr(p, "\", line ");
  if (!q) return false;
  const char *d = q + 8; /* past `", line ` */
  long ln = digits(&d);
  if (ln < 1 || (*d && *d != ',')) return false;
  char *path = sc_edit__dupn(p, (size_t)(q - p));
  if (!path) return false;
  free(f->path);
  *f = (py_frame){path, ln, -1, -1};
  return true;
}

/* The exception line that ends a traceback: `Name: message` at column 0
 * (SyntaxError, IndentationError, ...; a warning class is a warning). */
static bool py_exception(const char *line, int *sev, const char **msg) {
  const char *p = line;
  while (isalnum((unsigned char)*p) || *p == '_' || *p == '.') p++;
  if (p == line || p[0] != ':' || !isupper((unsigned char)line[0])) return false;
  size_t n = (size_t)(p - line);
  bool warning = n >= 7 && memcmp(p - 7, "Warning", 7) == 0;
  if (!warning && !(n >= 5 && memcmp(p - 5, "Error", 5) == 0) &&
      !(n >= 9 && memcmp(p - 9, "Exception", 9) == 0))
    return false;
  *sev = warning ? SC_EDIT_WARNING : SC_EDIT_ERROR;
  *msg = line;
  return true;
}

/* rustc's header: `error[E0425]: message`, `warning: message`. */
static bool rust_header(const char *line, int *sev, const char **msg) {
  const char *p = line;
  int s;
  if (strncmp(p, "error", 5) == 0) s = SC_EDIT_ERROR, p += 5;
  else if (strncmp(p, "warning", 7) == 0) s = SC_EDIT_WARNING, p += 7;
  else return false;
  if (*p == '[') {
    p = strchr(p, ']');
    if (!p) return false;
    p++;
  }
  if (p[0] != ':' || p[1] != ' ') return false;
  *sev = s;
  *msg = p + 2;
  return true;
}

/* ANSI escape sequences (CSI: ESC [ ... final byte) removed, in place. */
static void strip_ansi(char *s) {
  char *w = s;
  for (const char *r = s; *r;) {
    if (r[0] == 0x1b && r[1] == '[') {
      r += 2;
      while (*r && !(*r >= 0x40 && *r <= 0x7e)) r++;
      if (*r) r++;
      continue;
    }
    *w++ = *r++;
  }
  *w = '\0';
}

/* clang ends with "1 error generated." (or "N warnings and M errors
 * generated."); gcc never does: then its columns are bytes. */
static bool clang_text(const char *text, size_t len) {
  for (const char *p = text; p < text + len;) {
    const char *nl = memchr(p, '\n', (size_t)(text + len - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ')) n--;
    if (n > 11 && isdigit((unsigned char)p[0]) && memcmp(p + n - 11, " generated.", 11) == 0)
      return true;
    p += n + 1;
    if (nl) p = nl + 1;
  }
  return false;
}

/* Every diagnostic in a tool's text. False when out of memory. */
static bool parse_text(const char *text, size_t len, sc_edit_diagnostic **out, size_t *n) {
  bool clang = clang_text(text, len), ok = true;
  py_frame py = {NULL, 0, -1, -1};
  int rust_sev = 0;       /* a rustc header waiting for its ` --> ` */
  char *rust_msg = NULL;
  /* javac's `path:line: error: msg` has no column: the source line follows,
   * then a caret under the column, one blank (a tab where the line has a
   * tab) for each char before it. caret_for: the diagnostic waiting for it
   * (-1: none); caret_echo: its source line has been seen. */
  long caret_for = -1;
  bool caret_echo = false;
  for (size_t p = 0; p < len && ok;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len;
    char *line = sc_edit__dupn(text + p, e - p);
    p = e + 1;
    if (!line) {
      ok = false;
      break;
    }
    strip_ansi(line);
    line[strcspn(line, "\r")] = '\0';
    const char *msg;
    int sev;
    const char *arrow = line + strspn(line, " ");
    if (py_file_line(line, &py)) {
      /* the frame; its source line and caret follow */
    } else if (py.path && py.echo_indent < 0 && line[0] == ' ') {
      py.echo_indent = (long)strspn(line, " ");
    } else if (py.path && py.caret < 0 && line[0] == ' ' && strchr(line, '^') &&
               line[strspn(line, " ^~")] == '\0') {
      py.caret = (long)(strchr(line, '^') - line);
    } else if (py.path && py_exception(line, &sev, &msg)) {
      bool at = py.caret >= py.echo_indent && py.echo_indent >= 0;
      ok = diag_push(out, n, py.path, py.line - 1, at ? py.caret - py.echo_indent : -1, msg,
                     SIZE_MAX, SC_EDIT_COL_CHARS, sev);
      if (ok) (*out)[*n - 1].col_in_content = at;
      free(py.path);
      py = (py_frame){NULL, 0, -1, -1};
    } else if (rust_header(line, &sev, &msg)) {
      free(rust_msg);
      rust_msg = strdup(msg);
      rust_sev = rust_msg ? sev : 0;
    } else if (rust_sev && strncmp(arrow, "--> ", 4) == 0) {
      char *loc = (char *)arrow + 4, *c2 = strrchr(loc, ':');
      char *c1 = c2 ? memrchr(loc, ':', (size_t)(c2 - loc)) : NULL;
      const char *d1 = c1 ? c1 + 1 : NULL, *d2 = c2 ? c2 + 1 : NULL;
      long ln = d1 ? digits(&d1) : -1, col = d2 ? digits(&d2) : -1;
      if (ln >= 1 && col >= 1 && *d1 == ':' && !*d2) {
        *c1 = '\0';
        ok = diag_push(out, n, loc, ln - 1, col - 1, rust_msg, SIZE_MAX, SC_EDIT_COL_CHARS,
                       rust_sev);
      }
      rust_sev = 0; /* later arrows are its notes' */
    } else if (caret_for >= 0 && caret_echo && caret_column(line) >= 0) {
      (*out)[caret_for].col = caret_column(line);
      (*out)[caret_for].unit = SC_EDIT_COL_UTF16; /* a Java char is a UTF-16 unit */
      caret_for = -1;
    } else if (maven_line(line, out, n, &ok)) {
      caret_for = -1;
    } else if (!snippet_line(line)) {
      size_t before = *n;
      bool took = colon_line(line, clang, out, n, &ok);
      if (*n > before && (*out)[*n - 1].col < 0) {
        caret_for = (long)*n - 1, caret_echo = false;
      } else if (caret_for >= 0 && !caret_echo && !took) {
        caret_echo = true; /* the source line */
      } else {
        caret_for = -1;
      }
    }
    free(line);
  }
  free(py.path);
  free(rust_msg);
  return ok;
}

/* Parses gcc/clang lines `path:line:col: error|warning|fatal error: message`
 * or LSP JSON: a Diagnostic, an array of them (with "uri" or "file" on each,
 * or a single file PATH), PublishDiagnosticsParams {uri, diagnostics}, or an
 * array of those. Returns false with why on malformed input. */
static bool parse(const char *text, size_t len, const char *only_file, sc_edit_diagnostic **out,
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
      sc_edit_diagnostics_free(*out, *n_out);
      *out = NULL;
      *n_out = 0;
    }
    return ok;
  }
  if (!parse_text(text, len, out, n_out)) {
    sc_edit_diagnostics_free(*out, *n_out);
    *out = NULL;
    *n_out = 0;
    snprintf(why, why_len, "out of memory");
    return false;
  }
  if (*n_out == 0) {
    snprintf(why, why_len,
             "no diagnostics recognised (expected `path:line:col: error: message` lines, "
             "another tool's (see sculpt help batch) or LSP Diagnostic JSON)");
    return false;
  }
  return true;
}

sc_status sc_edit_diagnostics_parse(const char *text, size_t len, const char *only_file,
                                    sc_edit_diagnostic **out, size_t *n, sc_error *err) {
  char why[sizeof err->msg];
  if (parse(text, len, only_file, out, n, why, sizeof why)) return SC_OK;
  return sc_error_set(err, SC_ERR_FORMAT, "%s", why);
}

/* ---- positions ------------------------------------------------------------------ */

/* The UTF-8 sequence at p (at most n bytes): its length (1 for a stray
 * byte) and its code point into *cp. */
static size_t utf8_at(const char *p, size_t n, unsigned *cp) {
  unsigned char c = (unsigned char)p[0];
  size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (k > n) k = 1;
  unsigned v = k == 1 ? c : c & (0x7f >> k);
  for (size_t i = 1; i < k; i++) {
    if (((unsigned char)p[i] >> 6) != 2) {
      *cp = c;
      return 1;
    }
    v = (v << 6) | ((unsigned char)p[i] & 0x3f);
  }
  *cp = v;
  return k;
}

bool sc_edit__diag_offset(const char *text, size_t len, const sc_edit_diagnostic *d,
                          size_t *off) {
  size_t pos = 0;
  for (long l = 0; l < d->line; l++) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    if (!nl) return false;
    pos = (size_t)(nl - text) + 1;
  }
  const char *nl = memchr(text + pos, '\n', len - pos);
  size_t end = nl ? (size_t)(nl - text) : len;
  size_t content = pos;
  while (content < end && (text[content] == ' ' || text[content] == '\t')) content++;
  if (d->col < 0) { /* no column: the line's end, blanks dropped */
    size_t e = end;
    while (e > content && strchr(" \t\r", text[e - 1])) e--;
    *off = e;
    return true;
  }
  /* Walk the line in the tool's unit, up to col; a column past the end
   * (flake8 reports E999 one past it) is the end. */
  size_t at = d->col_in_content ? content : pos;
  long units = 0;
  while (at < end && units < d->col) {
    unsigned cp;
    size_t k = utf8_at(text + at, end - at, &cp);
    switch (d->unit) {
    case SC_EDIT_COL_BYTES: units += (long)k; break;
    case SC_EDIT_COL_CHARS: units += 1; break;
    case SC_EDIT_COL_UTF16: units += cp >= 0x10000 ? 2 : 1; break;
    case SC_EDIT_COL_DISPLAY: units = cp == '\t' ? (units / 8 + 1) * 8 : units + 1; break;
    }
    at += k;
  }
  *off = at;
  return true;
}

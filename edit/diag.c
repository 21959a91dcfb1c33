/* diag.c — diagnostics as input to a run: compiler lines (gcc/clang
 * `path:line:col: error: message`) and LSP Diagnostic JSON, parsed into
 * positions the run turns into sites. */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */
#include "edit_impl.h"

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

static bool diag_push(sc_edit_diagnostic **d, size_t *n, const char *path, long line, long col,
                      const char *msg) {
  sc_edit_diagnostic *nd = realloc(*d, (*n + 1) * sizeof *nd);
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
  return diag_push(d, n, path, (long)json_integer_value(l), (long)json_integer_value(c), msg);
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
  /* Compiler text: other lines (notes' context, carets, "In file included
   * from") are ignored, but at least one line must be a diagnostic. */
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len;
    char *line = sc_edit__dupn(text + p, e - p);
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

sc_status sc_edit_diagnostics_parse(const char *text, size_t len, const char *only_file,
                                    sc_edit_diagnostic **out, size_t *n, sc_error *err) {
  char why[sizeof err->msg];
  if (parse(text, len, only_file, out, n, why, sizeof why)) return SC_OK;
  return sc_error_set(err, SC_ERR_FORMAT, "%s", why);
}

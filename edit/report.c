/* report.c — what a run did, counted and as the JSON report `sculpt batch
 * --json` prints: per site its span, candidates, checks and outcome; a
 * summary; and each changed file's diff. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "edit_impl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc_edit_run_count(const sc_edit_run *r, sc_edit_run_counts *out) {
  memset(out, 0, sizeof *out);
  out->files = sc_edit_run_file_count(r);
  out->sites = sc_edit_run_site_count(r);
  out->left_out = sc_edit_run_left_out(r);
  for (size_t i = 0; i < out->files; i++) {
    sc_edit_run_file f;
    sc_edit_run_get_file(r, i, &f);
    out->written += f.written;
    out->failed_writes += f.failed_write;
  }
  for (size_t k = 0; k < out->sites; k++) {
    if (sc_edit_run_get_site(r, k)->result.status == SC_EDIT_DONE) out->done++;
    else out->failed++;
  }
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
    memcpy(o + n, ok ? t + i : "\xEF\xBF\xBD", ok ? k : 3);
    n += ok ? k : 3;
    i += ok ? k : 1;
  }
  j = json_stringn(o, n);
  free(o);
  return j ? j : json_string("");
}

/* One candidate tried: seed; text, confidence, parsed, why not, the
 * caller's test, when it was decoded; an error; ms unless it ended in one. */
static json_t *try_json(const sc_edit_try *t) {
  json_t *o = json_pack("{s:i, s:s}", "seed", t->seed, "source", sc_edit_source_name(t->seed));
  if (!o) return json_object();
  if (t->decoded) {
    json_object_set_new(o, "text", json_text(t->text ? t->text : "", t->len));
    json_object_set_new(o, "confidence", json_real(t->confidence));
    json_object_set_new(o, "parsed", json_boolean(t->parsed));
    if (t->rejected) json_object_set_new(o, "rejected", json_string(t->rejected));
    if (t->check) json_object_set_new(o, "check", json_string(t->check));
  }
  if (t->error) json_object_set_new(o, "error", json_string(t->error));
  if (t->has_ms) json_object_set_new(o, "ms", json_real(t->ms));
  return o;
}

static json_t *site_json(const sc_edit_run *run, const sc_edit_run_site *s) {
  sc_edit_run_file f;
  sc_edit_run_get_file(run, s->file, &f);
  const sc_edit_result *res = &s->result;
  json_t *cands = json_array();
  for (size_t i = 0; i < res->n_tries; i++) json_array_append_new(cands, try_json(&res->tries[i]));
  json_t *o = json_pack(
      "{s:s, s:{s:{s:i, s:i}, s:{s:i, s:i}}, s:s, s:s, s:i, s:o, s:s, s:f}", "file", f.path,
      "range", "start", "line", (int)s->line0, "character", (int)s->col0, "end", "line",
      (int)s->line1, "character", (int)s->col1, "mode", sc_edit_kind_name(s->site.kind),
      "status", sc_edit_status_name(res->status), "candidates_tried", (int)res->n_tries,
      "candidates", cands, "check", res->check, "ms", res->ms);
  if (!o) return json_object();
  json_object_set_new(o, "original",
                      json_text(f.orig + s->site.start, s->site.end - s->site.start));
  if (res->status == SC_EDIT_DONE) {
    json_object_set_new(o, "text", json_text(res->text, res->len));
    json_object_set_new(o, "seed", json_integer(res->seed));
    json_object_set_new(o, "source", json_string(sc_edit_source_name(res->seed)));
    json_object_set_new(o, "confidence", json_real(res->confidence));
  } else {
    json_object_set_new(o, "text", json_null());
  }
  if (res->reason) json_object_set_new(o, "reason", json_string(res->reason));
  if (s->message) json_object_set_new(o, "message", json_string(s->message));
  return o;
}

char *sc_edit_run_report_json(const sc_edit_run *run, bool interrupted, bool write, double ms) {
  sc_edit_run_counts c;
  sc_edit_run_count(run, &c);
  json_t *sites = json_array(), *diffs = json_object(), *skipped = json_array();
  for (size_t k = 0; k < c.sites; k++)
    json_array_append_new(sites, site_json(run, sc_edit_run_get_site(run, k)));
  for (size_t i = 0; i < c.files; i++) {
    sc_edit_run_file f;
    sc_edit_run_get_file(run, i, &f);
    if (f.orig_len == f.len && memcmp(f.orig, f.text, f.len) == 0) continue;
    char *buf = NULL;
    size_t blen = 0;
    FILE *mf = open_memstream(&buf, &blen);
    if (mf) {
      sc_edit_diff_write(mf, f.path, f.orig, f.orig_len, f.text, f.len);
      fclose(mf);
      json_object_set_new(diffs, f.path, json_text(buf, blen));
    }
    free(buf);
  }
  for (size_t i = 0; i < sc_edit_run_skipped_count(run); i++) {
    const char *path, *reason;
    sc_edit_run_get_skipped(run, i, &path, &reason);
    json_array_append_new(skipped, json_pack("{s:s, s:s}", "path", path, "reason", reason));
  }
  int bs, bp;
  sc_edit_run_batched(run, &bs, &bp);
  json_t *o = json_pack(
      "{s:o, s:{s:i, s:i, s:i, s:i, s:o, s:b, s:b, s:i, s:i, s:f, s:i, s:i}, s:o}", "sites",
      sites, "summary", "files", (int)c.files, "sites", (int)c.sites, "done", (int)c.done,
      "failed", (int)c.failed, "skipped_files", skipped, "interrupted", (int)interrupted,
      "write", (int)write, "written", (int)c.written, "failed_writes", (int)c.failed_writes,
      "ms", ms, "batched_sites", bs, "batched_passes", bp, "diffs", diffs);
  /* Which files the run wrote, and which it could not, with why. */
  json_t *wrote = json_array(), *failed = json_array();
  for (size_t i = 0; i < c.files; i++) {
    sc_edit_run_file f;
    sc_edit_run_get_file(run, i, &f);
    if (f.written) json_array_append_new(wrote, json_string(f.path));
    if (f.failed_write)
      json_array_append_new(failed, json_pack("{s:s, s:s}", "path", f.path, "reason",
                                              f.write_error ? f.write_error : "?"));
  }
  json_t *summary = json_object_get(o, "summary");
  json_object_set_new(summary, "written_files", wrote);
  json_object_set_new(summary, "diagnostics_left_out", json_integer((json_int_t)c.left_out));
  json_object_set_new(summary, "write_failures", failed);
  char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
  json_decref(o);
  return s;
}

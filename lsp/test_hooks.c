/* test_hooks.c — the sculpt/test/... methods, answered only with test
 * hooks on ($SCULPT_TEST_HOOKS=1): a document's text (and whether it is in
 * sync), a position's offset, a job that sleeps (cancellable), and the
 * counters, with how long the loop's callbacks took. */
#define _POSIX_C_SOURCE 200809L
#include "server_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sc_server__handle_test_document(sc_lsp_req *r) {
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  json_t *text = json_stringn(d->text, d->len);
  sc_lsp__send_result(r->s, r->id,
              json_pack("{s:s, s:I, s:s, s:o, s:b}", "uri", d->uri, "version",
                        (json_int_t)d->version, "languageId", d->language_id, "text",
                        text ? text : json_null(), "synced", !d->unsynced));
}

void sc_server__handle_test_offset(sc_lsp_req *r) {
  sc_document *d = sc_lsp__get_open_document(r);
  if (!d) return;
  uint32_t line, character;
  if (!sc_lsp__get_position(json_object_get(r->params, "position"), &line, &character)) {
    sc_lsp__bad_params(r, "position needs line and character");
    return;
  }
  const sc_line_index *idx = sc_document_lines(d);
  if (!idx) {
    sc_lsp__send_error(r->s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  bool clamped = false;
  size_t off = sc_pos_to_offset(d->text, d->len, idx, line, character, r->s->enc, &clamped);
  uint32_t bl, bc;
  sc_offset_to_pos(d->text, d->len, idx, off, r->s->enc, &bl, &bc);
  sc_lsp__send_result(r->s, r->id,
              json_pack("{s:I, s:b, s:{s:i, s:i}}", "offset", (json_int_t)off, "clamped",
                        clamped, "position", "line", (int)bl, "character", (int)bc));
}

static json_t *sleep_job(sc_job *job, void *arg, sc_error *err) {
  json_int_t ms = *(json_int_t *)arg;
  double t0 = sc_now_ms();
  if (!sc_job_wait(job, (double)ms)) {
    sc_error_set(err, SC_ERR_CANCELLED, "cancelled after %.0f ms", sc_now_ms() - t0);
    return NULL;
  }
  return json_pack("{s:I}", "sleptMs", ms);
}

void sc_server__handle_test_sleep(sc_lsp_req *r) {
  json_t *ms = json_object_get(r->params, "ms");
  if (!json_is_integer(ms) || json_integer_value(ms) < 0 ||
      json_integer_value(ms) > 600000) {
    sc_lsp__bad_params(r, "ms must be an integer from 0 to 600000");
    return;
  }
  const char *uri = NULL;
  if (json_object_get(r->params, "textDocument") && !(uri = sc_server__get_uri(r))) return;
  json_int_t *arg = malloc(sizeof *arg);
  if (!arg) {
    sc_lsp__send_error(r->s, r->id, SC_RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  /* Inline jobs (fuzzing) must not stall the caller: they do not sleep. */
  *arg = r->s->opts.synchronous_jobs ? 0 : json_integer_value(ms);
  sc_lsp__post_job(r->s, r->id, r->method, uri, sleep_job, arg, free, NULL);
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long pages_total = 0, pages_rss = 0;
  int got = fscanf(f, "%ld %ld", &pages_total, &pages_rss);
  fclose(f);
  return got == 2 ? pages_rss * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

void sc_server__handle_test_stats(sc_lsp_req *r) {
  json_t *stats = json_pack("{s:I, s:I, s:I, s:I, s:I}", "openDocuments",
                        (json_int_t)sc_document_store_count(r->s->docs), "pendingJobs",
                        (json_int_t)(sc_worker_pending(r->s->workers[SC_LANE_MODEL]) +
                                     sc_worker_pending(r->s->workers[SC_LANE_NETWORK])),
                        "inflight",
                        (json_int_t)r->s->n_inflight, "rssKb", (json_int_t)rss_kb(),
                        "garbageBytes", (json_int_t)r->s->reader.garbage_bytes);
  json_t *cstats = r->s->feature->stats(r->s);
  json_object_update(stats, cstats);
  json_decref(cstats);
  /* The loop's calls into the server so far (this one still running is not
   * counted); "resetLoop": true starts the count afresh, this call's own
   * clock included: what the loop did before the reset in the same call
   * (a didOpen read with it in one chunk) is not the measured work's. */
  loop_timing *t = &r->s->timing;
  json_t *wall = json_array(), *cpu = json_array();
  for (int i = 0; i < LOOP_BUCKETS; i++) {
    double le = k_loop_bucket_ms[i] > 1e299 ? -1 : k_loop_bucket_ms[i]; /* -1: the rest */
    json_array_append_new(wall, json_pack("[f, I]", le, (json_int_t)t->wall_le[i]));
    json_array_append_new(cpu, json_pack("[f, I]", le, (json_int_t)t->cpu_le[i]));
  }
  json_object_set_new(stats, "loop",
                      json_pack("{s:I, s:f, s:f, s:o, s:o}", "calls", (json_int_t)t->calls,
                                "maxWallMs", t->max_wall_ms, "maxCpuMs", t->max_cpu_ms,
                                "wallHistogramMs", wall, "cpuHistogramMs", cpu));
  if (json_is_true(json_object_get(r->params, "resetLoop"))) {
    int depth = t->depth;
    memset(t, 0, sizeof *t);
    t->depth = depth;
    if (depth > 0) sc_server__loop_restart(r->s);
  }
  sc_lsp__send_result(r->s, r->id, stats);
}

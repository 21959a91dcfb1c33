/* cmd_model_pull.c — `sculpt model pull ORG/NAME[@REVISION]`: a model from
 * the Hugging Face hub into the shared cache (net.h, sc_hub_pull), with a
 * progress line on a terminal; and `sculpt model list`: the cached models
 * of families sculpt runs, what each would take and whether it fits
 * (model.h, sc_model_cache_list and sc_model_survey_read). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "model.h"
#include "net.h"

#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "model"

static void print_json(json_t *o) {
  char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (s) puts(s);
  free(s);
  json_decref(o);
}

/* ---- pull ------------------------------------------------------------------------ */

static _Atomic int g_cancel;
static void on_sigint(int sig) {
  (void)sig;
  atomic_store(&g_cancel, 1);
}

typedef struct bar {
  double t0;
  bool drawn;
} bar;

/* One line, redrawn in place: which file, bytes, share, speed. */
static void draw(void *user, const sc_hub_progress *p) {
  bar *b = user;
  if (!p->file) {
    if (b->drawn) fputc('\n', stderr);
    b->drawn = false;
    return;
  }
  char done[32], total[32];
  sc_format_bytes(p->done, done, sizeof done);
  sc_format_bytes(p->total, total, sizeof total);
  double s = (sc_now_ms() - b->t0) / 1000.0;
  double pct = p->total ? 100.0 * (double)p->done / (double)p->total : 100.0;
  const char *name = strrchr(p->file, '/') ? strrchr(p->file, '/') + 1 : p->file;
  fprintf(stderr, "\r\033[K[%d/%d] %.40s  %s / %s  %3.0f%%  %.1f MB/s", p->index, p->count, name,
          done, total, pct, s > 0 ? (double)p->done / 1e6 / s : 0.0);
  fflush(stderr);
  b->drawn = true;
}

int sc_cli_model_pull(int argc, char **argv) {
  const char *id = NULL;
  const char **include = calloc((size_t)argc, sizeof *include);
  int n_include = 0;
  bool as_json = false;
  if (!include) {
    sc_cli_fail(CMD, "out of memory");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--include") == 0 && i + 1 < argc) include[n_include++] = argv[++i];
    else if (strcmp(a, "--json") == 0) as_json = true;
    else if (a[0] != '-' && !id) id = a;
    else {
      free(include);
      sc_cli_fail(CMD, "pull: unexpected argument '%s' (see sculpt help model)", a);
      return 2;
    }
  }
  sc_model_id mid;
  if (!id || !sc_model_id_parse(id, &mid)) {
    free(include);
    sc_cli_fail(CMD, "pull needs a model id ORG/NAME[@REVISION]%s%s%s (see sculpt help model)",
                id ? ", not '" : "", id ? id : "", id ? "'" : "");
    return 2;
  }
  bar b = {sc_now_ms(), false};
  sc_hub_options o = {.include = include, .n_include = n_include, .cancel = &g_cancel};
  if (!as_json && isatty(STDERR_FILENO)) {
    o.progress = draw;
    o.user = &b;
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  sc_hub_result r;
  sc_error err = {0};
  sc_status st = sc_hub_pull(id, &o, &r, &err);
  sigaction(SIGINT, &old, NULL);
  free(include);
  if (b.drawn) fputc('\n', stderr);
  if (st != SC_OK) {
    if (st == SC_ERR_CANCELLED)
      sc_cli_fail(CMD, "pull of %s interrupted; the same command resumes it", mid.repo);
    else sc_cli_fail(CMD, "%s", err.msg);
    return st == SC_ERR_INVALID ? 2 : 1;
  }
  /* The name to give --model: the id, with the revision when one was
   * asked for. */
  char use[300];
  snprintf(use, sizeof use, "%s%s%s", mid.repo, strchr(id, '@') ? "@" : "",
           strchr(id, '@') ? mid.revision : "");
  if (as_json) {
    print_json(json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:b}", "id", mid.repo,
                         "revision", mid.revision, "commit", r.commit, "dir", r.dir, "files",
                         r.files, "downloaded", r.downloaded, "bytes", (json_int_t)r.bytes,
                         "transferred", (json_int_t)r.transferred, "offline", r.offline));
    return 0;
  }
  char size[32], got[32];
  sc_format_bytes(r.bytes, size, sizeof size);
  sc_format_bytes(r.transferred, got, sizeof got);
  if (r.offline)
    printf("%s: in the cache at %.12s (HF_HUB_OFFLINE: the hub was not asked)\n", mid.repo,
           r.commit);
  else if (r.downloaded == 0)
    printf("%s@%s: up to date at %.12s (%d files, %s); nothing downloaded\n", mid.repo,
           mid.revision, r.commit, r.files, size);
  else
    printf("%s@%s: %d of %d files downloaded (%s of %s) in %.1f s; commit %.12s\n", mid.repo,
           mid.revision, r.downloaded, r.files, got, size, (sc_now_ms() - b.t0) / 1000.0,
           r.commit);
  printf("  %s\n  use it: --model %s (or $SCULPT_MODEL, or the editor's modelPath)\n", r.dir,
         use);
  return 0;
}

/* ---- list ------------------------------------------------------------------------ */

int sc_cli_model_list(int argc, char **argv) {
  bool as_json = false, all = false;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) as_json = true;
    else if (strcmp(argv[i], "--all") == 0) all = true;
    else {
      sc_cli_fail(CMD, "list: unexpected argument '%s' (see sculpt help model)", argv[i]);
      return 2;
    }
  }
  char cache[4096] = "";
  (void)sc_model_cache_dir(cache, sizeof cache);
  sc_cached_model *list = NULL;
  int n = 0, other = 0;
  uint64_t avail_seen = 0;
  sc_error err = {0};
  if (sc_model_cache_list(NULL, &list, &n, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
  }
  json_t *arr = json_array();
  if (!as_json)
    printf("%-40s %-6s %9s  %-6s %-11s %-5s %-7s %9s  %s\n", "MODEL", "REF", "SIZE", "FAMILY",
           "PROFILE", "DTYPE", "WEIGHTS", "MEMORY", "FITS");
  for (int i = 0; i < n; i++) {
    const sc_cached_model *m = &list[i];
    sc_model_survey s;
    sc_error serr = {0};
    bool ok = sc_model_survey_read(m->dir, &s, &serr) == SC_OK;
    if (!ok && !all) {
      other++; /* another family, an unfinished snapshot: not a model sculpt runs */
      continue;
    }
    if (ok && s.available) avail_seen = s.available;
    const bool fits_cpu = ok && s.available > 0 && s.memory_bytes <= s.available;
    const bool fits_gpu = ok && s.device_total > 0 && s.device_bytes <= s.device_total;
    char name[300];
    snprintf(name, sizeof name, "%s%s%s", m->id, m->refs[0] ? "" : "@", m->refs[0] ? "" : m->commit);
    if (as_json) {
      json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:i}", "id", m->id, "refs", m->refs,
                            "commit", m->commit, "dir", m->dir, "bytes", (json_int_t)m->bytes,
                            "files", m->files);
      if (ok) {
        json_object_set_new(o, "family", json_string(sc_model_family_name(s.family)));
        json_object_set_new(o, "profile", json_string(s.profile));
        json_object_set_new(o, "dtype", json_string(sc_dtype_name(s.dtype)));
        json_object_set_new(o, "params", json_integer(s.n_params));
        json_object_set_new(o, "weights", json_string(sc_weights_kind_name(s.weights)));
        json_object_set_new(o, "memory_bytes", json_integer((json_int_t)s.memory_bytes));
        json_object_set_new(o, "available_bytes", json_integer((json_int_t)s.available));
        json_object_set_new(o, "fits", json_boolean(fits_cpu));
        if (s.device_total) {
          json_object_set_new(o, "device", json_string(s.device));
          json_object_set_new(o, "device_memory_bytes", json_integer((json_int_t)s.device_bytes));
          json_object_set_new(o, "device_total_bytes", json_integer((json_int_t)s.device_total));
          json_object_set_new(o, "fits_device", json_boolean(fits_gpu));
        }
      } else {
        json_object_set_new(o, "error", json_string(serr.msg));
      }
      json_array_append_new(arr, o);
      continue;
    }
    char size[32], mem[32];
    sc_format_bytes(m->bytes, size, sizeof size);
    if (!ok) {
      printf("%-40s %-6s %9s  (%s)\n", name, m->refs[0] ? m->refs : "-", size, serr.msg);
      continue;
    }
    sc_format_bytes(s.memory_bytes, mem, sizeof mem);
    char fits[96];
    if (s.device_total)
      snprintf(fits, sizeof fits, "cpu %s, cuda %s", fits_cpu ? "yes" : "no",
               fits_gpu ? "yes" : "no");
    else snprintf(fits, sizeof fits, "%s", fits_cpu ? "yes" : s.available ? "no" : "?");
    printf("%-40s %-6s %9s  %-6s %-11s %-5s %-7s %9s  %s\n", name, m->refs[0] ? m->refs : "-",
           size, sc_model_family_name(s.family), s.profile, sc_dtype_name(s.dtype),
           sc_weights_kind_name(s.weights), mem, fits);
  }
  free(list);
  if (as_json) {
    print_json(arr);
    return 0;
  }
  json_decref(arr);
  if (avail_seen) {
    char a[32];
    sc_format_bytes(avail_seen, a, sizeof a);
    printf("(MEMORY: the weights as WEIGHTS computes them, plus one context; %s available now)\n",
           a);
  }
  if (n == 0 || n == other)
    printf("(no model sculpt runs in %s; `sculpt model pull ORG/NAME` brings one)\n",
           cache[0] ? cache : "the Hugging Face cache");
  if (other > 0)
    printf("(%d more cached snapshot%s of other families or unfinished; --all shows them)\n",
           other, other == 1 ? "" : "s");
  return 0;
}

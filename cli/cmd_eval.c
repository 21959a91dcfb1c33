/* cmd_eval.c — `sculpt eval BENCH`: a checkpoint (or a file of samples) on a
 * benchmark, with the baselines, and `sculpt eval compare A B`: McNemar
 * between two runs. The work is eval/'s (eval.h); this parses, draws the
 * progress bar, prints the summary and writes the files, each atomically
 * and only once the run is whole. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "eval.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "eval"

static _Atomic int g_cancel;

static void on_sigint(int sig) {
  (void)sig;
  atomic_store(&g_cancel, 1);
}

typedef struct args {
  sc_eval_options o;
  bool json, no_progress;
  const char *out, *results, *compare;
  const char *compare_a, *compare_b, *system, *against;
} args;

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->o.baselines = true;
  a->o.device = SC_DEVICE_AUTO;
  a->o.drafts = -1;
  a->o.draft_threshold = -1;
  const char *pos[3] = {0};
  int n_pos = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    double d;
    if (strcmp(o, "--json") == 0) { a->json = true; continue; }
    if (strcmp(o, "--no-progress") == 0) { a->no_progress = true; continue; }
    if (strcmp(o, "--no-baselines") == 0) { a->o.baselines = false; continue; }
    if (strcmp(o, "--oracle-length") == 0) { a->o.oracle_length = true; continue; }
    if (o[0] != '-') {
      if (n_pos == 3) { sc_cli_fail(CMD, "too many arguments (see sculpt help eval)"); return 2; }
      pos[n_pos++] = o;
      continue;
    }
    if (!v) { sc_cli_fail(CMD, "%s needs a value", o); return 2; }
    i++;
    if (strcmp(o, "--model") == 0) a->o.model_dir = v;
    else if (strcmp(o, "--score") == 0) a->o.samples = v;
    else if (strcmp(o, "--out") == 0) a->out = v;
    else if (strcmp(o, "--results") == 0) a->results = v;
    else if (strcmp(o, "--compare") == 0) a->compare = v;
    else if (strcmp(o, "--system") == 0) a->system = v;
    else if (strcmp(o, "--against") == 0) a->against = v;
    else if (strcmp(o, "--data") == 0) a->o.data.data_dir = v;
    else if (strcmp(o, "--repos") == 0) a->o.data.repos_dir = v;
    else if (strcmp(o, "--ngram-corpus") == 0) a->o.ngram_corpus = v;
    else if (strcmp(o, "--preset") == 0) {
      if (!sc_preset_parse(v, &a->o.preset)) { sc_cli_fail(CMD, "--preset takes fast, upstream or auto"); return 2; }
    } else if (strcmp(o, "--drafts") == 0) {
      if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) { sc_cli_fail(CMD, "--drafts takes on or off"); return 2; }
      a->o.drafts = strcmp(v, "on") == 0;
    } else if (strcmp(o, "--draft-threshold") == 0) {
      if (!sc_cli_parse_double(v, 0, 1, &a->o.draft_threshold)) { sc_cli_fail(CMD, "--draft-threshold takes a number in [0, 1]"); return 2; }
    } else if (strcmp(o, "--device") == 0) {
      if (!sc_device_kind_parse(v, &a->o.device)) { sc_cli_fail(CMD, "--device takes auto, cpu or cuda"); return 2; }
    } else if (strcmp(o, "--weights") == 0) {
      if (!sc_weights_kind_parse(v, &a->o.weights)) { sc_cli_fail(CMD, "--weights takes " SC_WEIGHTS_KINDS); return 2; }
    } else if (strcmp(o, "--limit") == 0) {
      if (!sc_cli_parse_long(v, 1, 1L << 30, &n)) { sc_cli_fail(CMD, "--limit takes a positive number"); return 2; }
      a->o.data.limit = (size_t)n;
    } else if (strcmp(o, "--tasks") == 0) {
      if (!sc_cli_parse_long(v, 1, 1L << 24, &n)) { sc_cli_fail(CMD, "--tasks takes a positive number"); return 2; }
      a->o.data.repo_tasks = (size_t)n;
    } else if (strcmp(o, "--max-tokens") == 0) {
      if (!sc_cli_parse_long(v, 1, 4096, &n)) { sc_cli_fail(CMD, "--max-tokens takes 1 to 4096"); return 2; }
      a->o.max_tokens = (int)n;
    } else if (strcmp(o, "--block-len") == 0) {
      if (!sc_cli_parse_long(v, 1, 4096, &n)) { sc_cli_fail(CMD, "--block-len takes 1 to 4096"); return 2; }
      a->o.block_len = (int)n;
    } else if (strcmp(o, "--context-budget") == 0) {
      if (!sc_cli_parse_long(v, 64, 65536, &n)) { sc_cli_fail(CMD, "--context-budget takes 64 to 65536"); return 2; }
      a->o.context_budget = (int)n;
    } else if (strcmp(o, "--timeout") == 0) {
      if (!sc_cli_parse_double(v, 0.1, 600, &d)) { sc_cli_fail(CMD, "--timeout takes 0.1 to 600 seconds"); return 2; }
      a->o.exec.timeout_s = d;
    } else if (strcmp(o, "--jobs") == 0) {
      if (!sc_cli_parse_long(v, 1, 64, &n)) { sc_cli_fail(CMD, "--jobs takes 1 to 64"); return 2; }
      a->o.exec.jobs = (int)n;
    } else if (strcmp(o, "--memory") == 0) {
      if (!sc_cli_parse_long(v, 64, 1L << 20, &n)) { sc_cli_fail(CMD, "--memory takes 64 to 1048576 (MiB)"); return 2; }
      a->o.exec.memory_bytes = (size_t)n << 20;
    } else {
      sc_cli_fail(CMD, "unknown option '%s' (see sculpt help eval)", o);
      return 2;
    }
  }
  if (n_pos > 0 && strcmp(pos[0], "compare") == 0) {
    if (n_pos != 3) { sc_cli_fail(CMD, "compare needs two results files (see sculpt help eval)"); return 2; }
    a->compare_a = pos[1];
    a->compare_b = pos[2];
    return 0;
  }
  if (n_pos != 1) { sc_cli_fail(CMD, "needs one BENCH (see sculpt help eval)"); return 2; }
  a->o.bench = pos[0];
  if (a->o.samples && a->o.model_dir) { sc_cli_fail(CMD, "--score and --model exclude each other"); return 2; }
  if (a->o.oracle_length && a->o.max_tokens) { sc_cli_fail(CMD, "--oracle-length and --max-tokens exclude each other"); return 2; }
  if (a->against && !a->compare) { sc_cli_fail(CMD, "--against needs --compare FILE"); return 2; }
  return 0;
}

static int fail_err(const sc_error *err) {
  sc_cli_fail(CMD, "%s", err->msg);
  switch (err->status) {
  case SC_ERR_INVALID: case SC_ERR_FORMAT: case SC_ERR_IO: case SC_ERR_UNSUPPORTED: return 2;
  default: return 1;
  }
}

/* ---- progress ------------------------------------------------------------------------ */

typedef struct bar {
  char phase[64];
  double t0;
} bar;

static void draw(void *user, const char *phase, size_t done, size_t total) {
  bar *b = user;
  double now = sc_now_ms();
  if (strcmp(b->phase, phase) != 0) {
    if (b->phase[0]) fputc('\n', stderr);
    snprintf(b->phase, sizeof b->phase, "%s", phase);
    b->t0 = now;
  }
  size_t w = 30, fill = total ? done * w / total : w;
  double rate = now > b->t0 ? (double)done * 1000.0 / (now - b->t0) : 0;
  fprintf(stderr, "\r%-22s [", phase);
  for (size_t i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
  fprintf(stderr, "] %zu/%zu %.1f/s ", done, total, rate);
  fflush(stderr);
}

/* ---- output -------------------------------------------------------------------------- */

static double num(const json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static void print_summary(const json_t *sum) {
  const char *bench = json_string_value(json_object_get(sum, "bench"));
  bool exec = strcmp(json_string_value(json_object_get(sum, "scoring")), "execute") == 0;
  json_t *set = json_object_get(sum, "settings");
  printf("%s: %lld tasks\n", bench, (long long)json_integer_value(json_object_get(sum, "tasks")));
  if (exec)
    printf("  %-14s %8s %8s %7s %9s\n", "system", "pass@1", "exact", "empty", "ms/task");
  else
    printf("  %-14s %8s %10s %16s %7s %9s\n", "system", "exact", "similarity", "python compiles",
           "empty", "ms/task");
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(sum, "systems"), i, s) {
    const char *name = json_string_value(json_object_get(s, "name"));
    double ms = num(s, "ms_per_task");
    char mss[32] = "-";
    if (!isnan(ms)) snprintf(mss, sizeof mss, "%.0f", ms);
    if (exec) {
      printf("  %-14s %7.1f%% %7.1f%% %7lld %9s\n", name, 100 * num(s, "pass@1"),
             100 * num(s, "exact_match"), (long long)json_integer_value(json_object_get(s, "empty")),
             mss);
    } else {
      char py[32] = "-";
      double c = num(s, "python_compiles");
      if (!isnan(c))
        snprintf(py, sizeof py, "%.1f%% (n=%lld)", 100 * c,
                 (long long)json_integer_value(json_object_get(s, "python_tasks")));
      printf("  %-14s %7.1f%% %10.3f %16s %7lld %9s\n", name, 100 * num(s, "exact_match"),
             num(s, "char_similarity"), py,
             (long long)json_integer_value(json_object_get(s, "empty")), mss);
    }
  }
  json_array_foreach(json_object_get(sum, "mcnemar"), i, s) {
    if (json_object_get(s, "earlier")) continue; /* printed apart */
    printf("McNemar (%s), %s vs %s: %lld pairs, only %s %lld, only %s %lld, p = %.3g\n",
           json_string_value(json_object_get(s, "measure")),
           json_string_value(json_object_get(s, "a")), json_string_value(json_object_get(s, "b")),
           (long long)json_integer_value(json_object_get(s, "pairs")),
           json_string_value(json_object_get(s, "a")),
           (long long)json_integer_value(json_object_get(s, "only_a")),
           json_string_value(json_object_get(s, "b")),
           (long long)json_integer_value(json_object_get(s, "only_b")), num(s, "p"));
  }
  const char *k;
  json_t *v;
  json_object_foreach(set, k, v) {
    if (json_is_string(v)) printf("%s: %s\n", k, json_string_value(v));
    else if (json_is_integer(v)) printf("%s: %lld\n", k, (long long)json_integer_value(v));
    else if (json_is_real(v)) printf("%s: %g\n", k, json_real_value(v));
  }
  json_array_foreach(json_object_get(sum, "systems"), i, s) {
    const char *m = json_string_value(json_object_get(s, "model"));
    if (m)
      printf("%s: %s (%s, preset %s, %s weights, %s)\n",
             json_string_value(json_object_get(s, "name")), m,
             json_string_value(json_object_get(s, "family")),
             json_string_value(json_object_get(s, "preset")),
             json_string_value(json_object_get(s, "weights")),
             json_string_value(json_object_get(s, "device")));
    json_t *dt = json_object_get(s, "draft_tokens");
    if (dt)
      printf("%s: %.2f tokens a pass; drafts %s (threshold %g): %lld drafted, %lld accepted, "
             "in %lld tasks\n",
             json_string_value(json_object_get(s, "name")), num(s, "tokens_per_pass"),
             json_is_true(json_object_get(s, "drafts")) ? "on" : "off", num(s, "draft_threshold"),
             (long long)json_integer_value(json_object_get(dt, "drafted")),
             (long long)json_integer_value(json_object_get(dt, "accepted")),
             (long long)json_integer_value(json_object_get(dt, "tasks")));
    const char *c = json_string_value(json_object_get(s, "corpus"));
    if (c)
      printf("%s: trained on %lld files of %s (%lld left out: they share the benchmark's "
             "code)\n",
             json_string_value(json_object_get(s, "name")),
             (long long)json_integer_value(json_object_get(s, "corpus_files")), c,
             (long long)json_integer_value(json_object_get(s, "corpus_left_out")));
  }
}

static void print_compare(const json_t *c, const char *a, const char *b) {
  printf("%s (%s) %.1f%% against %s (%s) %.1f%% on %lld paired tasks: only the first %lld, "
         "only the second %lld, McNemar p = %.3g\n",
         a, json_string_value(json_object_get(c, "a")), 100 * num(c, "a_rate"), b,
         json_string_value(json_object_get(c, "b")), 100 * num(c, "b_rate"),
         (long long)json_integer_value(json_object_get(c, "pairs")),
         (long long)json_integer_value(json_object_get(c, "only_a")),
         (long long)json_integer_value(json_object_get(c, "only_b")), num(c, "p"));
}

/* An array of objects as JSON Lines (malloc'd); NULL when one cannot be
 * formatted. */
static char *jsonl(const json_t *lines, size_t *len) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  if (!f) return NULL;
  size_t i;
  json_t *o;
  bool ok = true;
  json_array_foreach(lines, i, o) {
    if (json_dumpf(o, f, JSON_COMPACT | JSON_ENSURE_ASCII) != 0) ok = false;
    fputc('\n', f);
  }
  if (fclose(f) != 0 || !ok) {
    free(out);
    return NULL;
  }
  *len = n;
  return out;
}

static int write_lines(const char *path, const json_t *lines) {
  size_t len = 0;
  char *text = jsonl(lines, &len);
  if (!text) {
    sc_cli_fail(CMD, "cannot format %s", path);
    return 1;
  }
  sc_error err = {0};
  sc_status st = sc_cli_write_atomic(path, text, len, 0644, &err);
  free(text);
  if (st != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    return 1;
  }
  return 0;
}

static int run_compare(const args *a) {
  sc_error err = {0};
  json_t *x = NULL, *y = NULL, *c = NULL;
  int rc = 0;
  if (sc_eval_results_read(a->compare_a, &x, &err) != SC_OK ||
      sc_eval_results_read(a->compare_b, &y, &err) != SC_OK ||
      sc_eval_compare(x, y, a->system, a->against, &c, &err) != SC_OK) {
    rc = fail_err(&err);
  } else if (a->json) {
    json_object_set_new(c, "a_file", json_string(a->compare_a));
    json_object_set_new(c, "b_file", json_string(a->compare_b));
    json_dumpf(c, stdout, JSON_INDENT(2));
    putchar('\n');
  } else {
    print_compare(c, a->compare_a, a->compare_b);
  }
  json_decref(x);
  json_decref(y);
  json_decref(c);
  return rc;
}

int sc_cli_eval(int argc, char **argv) {
  args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  if (a.compare_a) return run_compare(&a);
  sc_error err = {0};
  json_t *earlier = NULL;
  /* A results file to compare with is read before the run, so that a bad
   * one costs nothing. */
  if (a.compare && sc_eval_results_read(a.compare, &earlier, &err) != SC_OK) return fail_err(&err);
  bar b = {{0}, 0};
  bool show = !a.no_progress && isatty(STDERR_FILENO);
  a.o.progress = show ? draw : NULL;
  a.o.user = &b;
  a.o.exec.progress = NULL;
  a.o.cancel = &g_cancel;
  struct sigaction sa, old_sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  json_t *summary = NULL, *tasks = NULL, *samples = NULL;
  sc_status st = sc_eval_run(&a.o, &summary, &tasks, a.out ? &samples : NULL, &err);
  sigaction(SIGINT, &old_sa, NULL);
  if (show && b.phase[0]) fputc('\n', stderr);
  if (st != SC_OK) {
    json_decref(earlier);
    if (st == SC_ERR_CANCELLED) {
      sc_cli_fail(CMD, "interrupted: nothing written");
      return 1;
    }
    return fail_err(&err);
  }
  rc = 0;
  if (earlier) {
    json_t *c = NULL;
    if (sc_eval_compare(tasks, earlier, a.system, a.against, &c, &err) != SC_OK) {
      rc = fail_err(&err);
    } else {
      json_object_set_new(c, "earlier", json_string(a.compare));
      json_array_append_new(json_object_get(summary, "mcnemar"), c);
    }
  }
  if (rc == 0 && a.results) rc = write_lines(a.results, tasks);
  if (rc == 0 && a.out) rc = write_lines(a.out, samples);
  if (rc == 0) {
    if (a.json) {
      json_dumpf(summary, stdout, JSON_INDENT(2));
      putchar('\n');
    } else {
      print_summary(summary);
      size_t i;
      json_t *c;
      json_array_foreach(json_object_get(summary, "mcnemar"), i, c)
        if (json_object_get(c, "earlier")) print_compare(c, "this run", a.compare);
    }
  }
  json_decref(earlier);
  json_decref(summary);
  json_decref(tasks);
  json_decref(samples);
  return rc;
}

/* cmd_batch.c — `sculpt batch`: the front door of the edit engine (edit/)
 * for a repository with no editor. It parses the arguments, loads the model
 * (or sets up the --backend endpoint as the generator), asks the engine's
 * run to find and fill the sites and write the files, and prints the diff or
 * the JSON report. Sites, candidates, checks, --check, diffs and file
 * writing all live in edit/. */
#define _GNU_SOURCE
#include "cli.h"
#include "edit.h"
#include "net.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD "batch"
#define CONTEXT_TOKENS 1024 /* prefix + suffix tokens given to the model per site */

/* The engine polls this between steps; SIGINT sets it. */
static _Atomic int g_cancel;
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
  atomic_store(&g_cancel, 1);
}

typedef struct args {
  sc_edit_run_options run;
  const char *diag_src, *model_dir, *family;
  int max_tokens;
  double temperature;
  bool json, progress, no_progress;
  int batch_sites; /* 1: holes decoded together; 0: one at a time (with the
                      K/V cache); -1: together on a GPU only (measured on the
                      CPU: one at a time with the cache is 2.6x faster) */
  sc_device_kind device;
  sc_weights_kind weights; /* --weights; AUTO: $SCULPT_WEIGHTS, else by size */
  char **paths;
  int n_paths;
  sc_fim_client_options remote; /* --backend and its options; url NULL: local */
} args;

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->run.candidates = 1;
  a->max_tokens = 32;
  a->temperature = 0.8;
  a->device = SC_DEVICE_AUTO;
  a->batch_sites = -1;
  a->paths = calloc((size_t)argc, sizeof *a->paths);
  if (!a->paths) return 2;
  bool candidates_set = false;
  sc_edit_kind *mode = &a->run.mode;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    int br;
    if (strcmp(o, "--no-batch-sites") == 0 || strcmp(o, "--batch-sites") == 0) {
      a->batch_sites = o[2] == 'b';
      continue;
    }
    if (strcmp(o, "--python-ellipsis") == 0 || strcmp(o, "--force") == 0 ||
        strcmp(o, "--warnings") == 0) {
      if (o[2] == 'p') a->run.holes.python_ellipsis = true;
      else if (o[2] == 'w') a->run.warnings = true;
      else a->run.force = true;
      continue;
    }
    if (strcmp(o, "--holes") == 0 || strcmp(o, "--write") == 0 || strcmp(o, "--json") == 0 ||
        strcmp(o, "--no-progress") == 0) {
      if (o[2] == 'h') {
        if (*mode && *mode != SC_EDIT_HOLE) goto two_modes;
        *mode = SC_EDIT_HOLE;
      } else if (o[2] == 'w') a->run.write = true;
      else if (o[2] == 'j') a->json = true;
      else a->no_progress = true;
      continue;
    }
    if (o[0] != '-' || strcmp(o, "-") == 0) {
      a->paths[a->n_paths++] = argv[i];
      continue;
    }
    if (strcmp(o, "--") == 0) {
      for (i++; i < argc; i++) a->paths[a->n_paths++] = argv[i];
      break;
    }
    if (!v) { sc_cli_fail(CMD, "%s needs a value", o); return 2; }
    i++;
    if (strcmp(o, "--diagnostics") == 0) {
      if (*mode && *mode != SC_EDIT_DIAGNOSTIC) goto two_modes;
      *mode = SC_EDIT_DIAGNOSTIC;
      a->diag_src = v;
    } else if (strcmp(o, "--query") == 0) {
      if (*mode && *mode != SC_EDIT_QUERY) goto two_modes;
      *mode = SC_EDIT_QUERY;
      a->run.query = v;
    } else if (strcmp(o, "--capture") == 0) a->run.capture = v;
    else if (strcmp(o, "--marker") == 0) {
      if (!*v) { sc_cli_fail(CMD, "--marker must not be empty"); return 2; }
      a->run.holes.marker = v;
    } else if (strcmp(o, "--check") == 0) a->run.check_cmd = v;
    else if (strcmp(o, "--candidates") == 0) {
      if (!sc_cli_parse_long(v, 1, SC_EDIT_MAX_CANDIDATES, &n)) {
        sc_cli_fail(CMD, "--candidates takes 1 to %d", SC_EDIT_MAX_CANDIDATES);
        return 2;
      }
      a->run.candidates = (int)n;
      candidates_set = true;
    } else if (strcmp(o, "--max-tokens") == 0) {
      if (!sc_cli_parse_long(v, 1, 1024, &n)) { sc_cli_fail(CMD, "--max-tokens takes 1 to 1024"); return 2; }
      a->max_tokens = (int)n;
    } else if (strcmp(o, "--temperature") == 0) {
      char *end;
      a->temperature = strtod(v, &end);
      if (*end || !(a->temperature > 0 && a->temperature <= 100)) {
        sc_cli_fail(CMD, "--temperature takes a number in (0, 100]");
        return 2;
      }
    } else if (strcmp(o, "--model") == 0) a->model_dir = v;
    else if ((br = sc_cli_backend_option(CMD, o, v, &a->remote)) != 0) {
      if (br < 0) return 2;
    }
    else if (strcmp(o, "--family") == 0) a->family = v;
    else if (strcmp(o, "--weights") == 0) {
      if (!sc_weights_kind_parse(v, &a->weights)) { sc_cli_fail(CMD, "--weights takes " SC_WEIGHTS_KINDS); return 2; }
    }
    else if (strcmp(o, "--device") == 0) {
      if (!sc_device_kind_parse(v, &a->device)) { sc_cli_fail(CMD, "--device takes auto, cpu or cuda"); return 2; }
    } else {
      sc_cli_fail(CMD, "unknown option '%s' (see sculpt help batch)", o);
      return 2;
    }
  }
  if (!*mode) { sc_cli_fail(CMD, "needs a mode: --holes, --diagnostics FILE|- or --query Q --capture NAME"); return 2; }
  if (*mode == SC_EDIT_QUERY && !a->run.capture) { sc_cli_fail(CMD, "--query needs --capture NAME"); return 2; }
  if (a->run.capture && *mode != SC_EDIT_QUERY) { sc_cli_fail(CMD, "--capture goes with --query"); return 2; }
  if ((a->run.holes.marker || a->run.holes.python_ellipsis) && *mode != SC_EDIT_HOLE) {
    sc_cli_fail(CMD, "%s goes with --holes", a->run.holes.marker ? "--marker" : "--python-ellipsis");
    return 2;
  }
  if (a->run.warnings && *mode != SC_EDIT_DIAGNOSTIC) { sc_cli_fail(CMD, "--warnings goes with --diagnostics"); return 2; }
  if (a->n_paths == 0) { sc_cli_fail(CMD, "needs at least one PATH (a file or a directory)"); return 2; }
  if (sc_cli_backend_orphan(CMD, &a->remote)) return 2;
  /* With --check the default is several tries, else one (greedy). */
  if (a->run.check_cmd && !candidates_set) a->run.candidates = 4;
  a->progress = !a->json && !a->no_progress && isatty(STDERR_FILENO);
  return 0;
two_modes:
  sc_cli_fail(CMD, "give one mode: --holes, --diagnostics or --query");
  return 2;
}

/* ---- the --backend generator --------------------------------------------------- */

/* One candidate from the endpoint: the byte windows around the site travel
 * (no tokenizer is loaded for a remote run); seed 0 is greedy, later seeds
 * sample at --temperature. */
static sc_status remote_generate(void *user, const sc_edit_request *r, sc_edit_candidate *out,
                                 sc_error *err) {
  const args *a = user;
  size_t p0, s1;
  sc_edit_request_window(r, CONTEXT_TOKENS, &p0, &s1);
  static const char *const nl_stop[] = {"\n"};
  bool one = r->site.single_line;
  sc_fim_request req = {
      .prompt = r->text + p0,
      .prompt_len = r->site.start - p0,
      .suffix = r->text + r->site.end,
      .suffix_len = s1 - r->site.end,
      .max_tokens = r->site.kind == SC_EDIT_HOLE ? a->max_tokens : 2 * a->max_tokens,
      .temperature = r->seed ? a->temperature : 0.0,
      .stop = one ? nl_stop : NULL,
      .n_stop = one ? 1 : 0};
  memset(out, 0, sizeof *out);
  return sc_fim_complete_sync(&a->remote, &req, &g_cancel, &out->text, &out->len, NULL, err);
}

/* ---- output ---------------------------------------------------------------------- */

static void say(void *user, sc_log_level level, const char *line) {
  const args *a = user;
  if (level == SC_LOG_ERROR || !a->json) fprintf(stderr, "sculpt batch: %s\n", line);
}

static void progress(void *user, size_t done) {
  const size_t *total = user;
  size_t w = 30, fill = *total ? done * w / *total : w;
  fprintf(stderr, "\r[");
  for (size_t i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
  fprintf(stderr, "] %zu/%zu sites", done, *total);
  if (done == *total) fputc('\n', stderr);
  fflush(stderr);
}

/* ---- the command ----------------------------------------------------------------- */

/* Reads and parses the --diagnostics input into the run: 0, or the exit status. */
static int load_diagnostics(sc_edit_run *run, const args *a) {
  char *text = NULL;
  size_t len = 0;
  bool stdin_src = strcmp(a->diag_src, "-") == 0;
  if (!sc_cli_read_file(stdin_src ? "/dev/stdin" : a->diag_src, &text, &len)) {
    sc_cli_fail(CMD, "cannot read diagnostics from %s: %s", a->diag_src, strerror(errno));
    return 2;
  }
  struct stat st;
  const char *only = a->n_paths == 1 && stat(a->paths[0], &st) == 0 && S_ISREG(st.st_mode)
                         ? a->paths[0]
                         : NULL;
  sc_edit_diagnostic *d = NULL;
  size_t n = 0;
  sc_error err = {0};
  sc_status s = sc_edit_diagnostics_parse(text, len, only, &d, &n, &err);
  free(text);
  if (s != SC_OK) {
    sc_cli_fail(CMD, "%s: %s", stdin_src ? "stdin" : a->diag_src, err.msg);
    return 2;
  }
  s = sc_edit_run_add_diagnostics(run, d, n, &err);
  sc_edit_diagnostics_free(d, n);
  if (s != SC_OK) sc_cli_fail(CMD, "%s", err.msg);
  return s == SC_OK ? 0 : 2;
}

int sc_cli_batch(int argc, char **argv) {
  args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) {
    free(a.paths);
    return rc;
  }
  double t0 = sc_now_ms();
  int exit_code = 2;
  sc_edit_run *run = NULL;
  sc_model *model = NULL;
  sc_tokenizer *tok = NULL;
  sc_engine *engine = NULL;
  sc_edit_local *local = NULL;
  char *model_dir = NULL;
  sc_error err = {0};
  a.run.cancel = &g_cancel;
  a.run.say = say;
  a.run.user = &a;
  if (sc_edit_run_new(&a.run, (const char *const *)a.paths, a.n_paths, &run, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  if (a.run.mode == SC_EDIT_DIAGNOSTIC) {
    if (load_diagnostics(run, &a)) goto done;
  } else if (sc_edit_run_collect(run, &err) != SC_OK) {
    sc_cli_fail(CMD, "%s", err.msg);
    goto done;
  }
  size_t n_sites = sc_edit_run_site_count(run);

  exit_code = 1;
  sc_edit_generator gen = {remote_generate, NULL, &a, true};
  if (n_sites > 0 && !a.remote.url) {
    model_dir = sc_cli_model_dir(CMD, a.model_dir, &exit_code);
    if (!model_dir) goto done;
    sc_model_options mo = {0};
    if (a.family && !sc_model_family_parse(a.family, &mo.family)) {
      sc_cli_fail(CMD, "unknown --family '%s'", a.family);
      exit_code = 2;
      goto done;
    }
    sc_device_choice dev;
    sc_device_select(a.device, &dev);
    mo.device = dev.kind;
    mo.weights = a.weights;
    if (a.batch_sites < 0) a.batch_sites = dev.kind == SC_DEVICE_CUDA;
    sc_edit_local_options lo = {a.max_tokens, CONTEXT_TOKENS, a.temperature, NULL, &g_cancel};
    if (sc_model_load(model_dir, &mo, &model, &err) != SC_OK ||
        sc_tokenizer_load_dir(model_dir, &tok, &err) != SC_OK ||
        sc_engine_new(model, tok, 0, &engine, &err) != SC_OK ||
        sc_edit_local_new(engine, tok, model, &lo, &local, &err) != SC_OK) {
      sc_cli_fail(CMD, "%s", err.msg);
      exit_code = err.status == SC_ERR_INVALID ? 2 : 1;
      goto done;
    }
    gen = sc_edit_local_generator(local);
  }

  struct sigaction sa, old_sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  if (a.progress) progress(&n_sites, 0);
  size_t reached =
      sc_edit_run_fill(run, &gen, a.batch_sites > 0, a.progress ? progress : NULL, &n_sites);
  if (a.progress && reached < n_sites) fputc('\n', stderr);
  /* Final state of the files: --write writes what was kept; a dry run puts
   * back what --check may have left on disk. */
  sc_edit_run_finish(run);
  sigaction(SIGINT, &old_sa, NULL);

  sc_edit_run_counts c;
  sc_edit_run_count(run, &c);
  if (a.json) {
    char *report = sc_edit_run_report_json(run, g_interrupted, a.run.write, sc_now_ms() - t0);
    if (report) puts(report);
    free(report);
  } else {
    for (size_t i = 0; !a.run.write && i < sc_edit_run_file_count(run); i++) {
      sc_edit_run_file f;
      sc_edit_run_get_file(run, i, &f);
      if (f.orig_len != f.len || memcmp(f.orig, f.text, f.len) != 0)
        sc_edit_diff_write(stdout, f.path, f.orig, f.orig_len, f.text, f.len);
    }
    for (size_t k = 0; k < n_sites; k++) {
      const sc_edit_run_site *s = sc_edit_run_get_site(run, k);
      sc_edit_run_file f;
      sc_edit_run_get_file(run, s->file, &f);
      if (s->result.status != SC_EDIT_DONE)
        fprintf(stderr, "sculpt batch: %s:%u:%u: %s not done: %s\n", f.path, s->line0 + 1,
                s->col0 + 1, sc_edit_kind_name(s->site.kind),
                s->result.reason ? s->result.reason : "?");
    }
    if (g_interrupted) fprintf(stderr, "sculpt batch: interrupted\n");
    if (n_sites > 0 && (a.run.write || c.failed))
      fprintf(stderr, "sculpt batch: %zu of %zu sites done, %zu files written\n", c.done,
              n_sites, c.written);
  }
  fflush(stdout);
  exit_code = c.failed || g_interrupted || c.failed_writes ? 1 : 0;
done:
  free(model_dir);
  sc_edit_run_free(run);
  sc_edit_local_free(local);
  sc_engine_free(engine);
  sc_tokenizer_free(tok);
  sc_model_free(model);
  free(a.paths);
  return exit_code;
}

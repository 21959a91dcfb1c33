/*
 * eval.h — `sculpt eval`: how good a checkpoint's completions are, on the
 * same tasks as everyone else and on our own.
 *
 *   - HumanEval-Infilling (openai/human-eval-infilling: single-line,
 *     multi-line, random-span and its light variant): each completed program
 *     is run against its tests in a sandbox (sc_eval_execute) and pass@1,
 *     exact match and the empty answers are counted.
 *   - Repository tasks: single lines and runs of three taken out of real
 *     packages (the vendored tests/data/real, or any folder of package
 *     folders), the prompt built as the LSP builds it (context/: repository
 *     snippets, then the windows), scored by exact match, character
 *     similarity and, for Python, whether the whole file still compiles.
 *
 * Every run decodes each task as `sculpt complete` does (model.h,
 * sc_infill_prepare, the preset's parameters), and scores the baselines on
 * the same tasks in the same run: the line n-gram (sc_eval_ngram) and the
 * shipped default model. Paired results are compared with McNemar's exact
 * test.
 *
 * eval/ sits on edit/ (Python's compile check), context/ and model/, beside
 * lsp/; cli/cmd_eval.c is its front door. Results are jansson values, owned
 * by the caller.
 */
#ifndef SCULPT_EVAL_H
#define SCULPT_EVAL_H

#include "edit.h"

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- benchmarks ------------------------------------------------------------------ */

typedef enum sc_eval_scoring {
  SC_EVAL_EXECUTE = 1, /* HumanEval-Infilling: the program's tests decide */
  SC_EVAL_MATCH,       /* repository tasks: compared with the middle taken out */
} sc_eval_scoring;

/* One task. All strings owned by the benchmark. */
typedef struct sc_eval_task {
  char *id;            /* HumanEval's task_id; "package/path:line" for our own */
  char *before, *after; /* the text before and after the middle */
  size_t before_len, after_len;
  char *middle;        /* the canonical middle */
  size_t middle_len;
  char *test, *entry_point; /* HumanEval: check(candidate) and the function's name */
  char *package, *path;     /* repository tasks: the package folder, the file in it */
  const char *lang;         /* sculpt's language name (static) */
  int line;                 /* repository tasks: the middle's first line, 1-based */
  int lines;                /* the middle's lines (HumanEval: its newlines, at least 1) */
} sc_eval_task;

typedef struct sc_eval_bench sc_eval_bench;

typedef struct sc_eval_bench_options {
  const char *data_dir;  /* HumanEval-Infilling's files; NULL: the copy sculpt ships */
  const char *repos_dir; /* folders of packages; NULL: the vendored tests/data/real */
  size_t limit;          /* the first N tasks; 0: all */
  size_t repo_tasks;     /* tasks a repository kind draws; 0: 1,000 */
} sc_eval_bench_options;

/* name: humaneval-single, humaneval-multi, humaneval-random,
 * humaneval-random-light, humaneval-test (the harness's example problem),
 * repo-single, repo-multi; or the path of a problems file in HumanEval's
 * format (.jsonl or .jsonl.gz: task_id, prompt, suffix, canonical_solution,
 * test, entry_point). A missing or malformed file is SC_ERR_IO or
 * SC_ERR_FORMAT naming the file and line; an unknown name SC_ERR_INVALID.
 * *out owned by the caller. */
sc_status sc_eval_bench_load(const char *name, const sc_eval_bench_options *o,
                             sc_eval_bench **out, sc_error *err);
void sc_eval_bench_free(sc_eval_bench *b); /* NULL is fine */

/* The benchmarks by name, NULL-terminated (static). */
const char *const *sc_eval_bench_names(void);

const char *sc_eval_bench_name(const sc_eval_bench *b); /* owned by b */
sc_eval_scoring sc_eval_bench_scoring(const sc_eval_bench *b);
size_t sc_eval_bench_count(const sc_eval_bench *b);
const sc_eval_task *sc_eval_bench_task(const sc_eval_bench *b, size_t i);
/* The canvas a task gets unless the caller says otherwise: 32 tokens for
 * one line (sculpt complete's default), 64 for the rest. */
int sc_eval_bench_canvas(const sc_eval_bench *b);

/* The program HumanEval's harness runs for a completion: prompt +
 * completion + suffix + "\n" + test + "\n" + "check(entry_point)".
 * malloc'd (NUL-terminated, *len bytes); NULL when out of memory. */
char *sc_eval_program(const sc_eval_task *t, const char *completion, size_t len, size_t *out_len);

/* ---- the executor --------------------------------------------------------------- */

typedef struct sc_eval_exec_options {
  double timeout_s;    /* wall clock per program; 0: 3 (the harness's) */
  size_t memory_bytes; /* address space; 0: 1 GiB */
  size_t disk_bytes;   /* the largest file, and its folder's size; 0: 16 MiB */
  int jobs;            /* programs at once; 0: the online CPUs */
  const char *python;  /* NULL: $SCULPT_PYTHON, else python3 */
  /* After each program: how many are done. May be NULL. */
  void (*progress)(void *user, size_t done, size_t total);
  void *user;
  const _Atomic int *cancel; /* may be NULL; non-zero stops before the next program */
} sc_eval_exec_options;

typedef struct sc_eval_verdict {
  bool passed;
  char result[200]; /* "passed", "timed out" or "failed: WHY" (the harness's words) */
  double ms;
} sc_eval_verdict;

/* Runs each program (Python source) in its own process, jobs at a time, and
 * judges it. A program passes only when our harness saw its text run to the
 * end (the tests returned) and said so on a channel the program cannot
 * forge without reading the harness's memory: a random nonce, given to the
 * harness on its stdin (then replaced by /dev/null), written to a pipe of
 * ours after exec() returns, and the harness's own exit status 0. An early
 * exit (sys.exit(), raise SystemExit(0), os._exit(0)), a crash, a kill by
 * a limit or a wrong nonce is a failure; what the program prints is never
 * read. Each program gets a fresh folder (a tmpfs of disk_bytes where the
 * machine allows it), the limits above, the CPU time of its timeout, and
 * where the kernel allows it (sc_eval_sandbox) its own user, mount, PID and
 * network namespaces: the rest of the file system read-only, no network, its
 * processes killed with it. out[i] for programs[i]; SC_ERR_CANCELLED when
 * cancel stopped it (the rest of out not filled); SC_ERR_UNSUPPORTED when
 * no interpreter runs. */
sc_status sc_eval_execute(const sc_eval_exec_options *o, const char *const *programs,
                          const size_t *lens, size_t n, sc_eval_verdict *out, sc_error *err);

/* What isolated the last sc_eval_execute of this process, in words (static):
 * "namespaces (user, mount, PID, network)...", or "rlimits and a process
 * group only (...)" where namespaces cannot be made. */
const char *sc_eval_sandbox(void);

/* ---- metrics ------------------------------------------------------------------- */

/* The same text, each line's trailing blanks and the text's trailing
 * newlines aside (as HumanEval-Infilling's line tasks and evaluate.py
 * compare). */
bool sc_eval_exact(const char *a, size_t al, const char *b, size_t bl);
/* Character similarity in [0, 1] of the same normalized texts: 2 LCS /
 * (|a| + |b|), the indel ratio (rapidfuzz's fuzz.ratio / 100, python-Levenshtein's
 * ratio); 1 for two empty texts. */
double sc_eval_similarity(const char *a, size_t al, const char *b, size_t bl);
/* McNemar's exact test for paired binary results: b pairs where only the
 * first system succeeded, c where only the second did; the two-sided
 * p-value 2 P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), at most 1. */
double sc_eval_mcnemar_p(long b, long c);

/* ---- the line n-gram baseline ------------------------------------------------------ */

typedef struct sc_eval_ngram sc_eval_ngram;

/* Documents the n-gram must not learn from: the benchmark's own. A
 * corpus file that shares at least 5 distinctive lines (20 or more
 * characters, whitespace aside) and 30% of the smaller of the two with one
 * of them is left out, the rule model/train/corpus.py decontaminates a
 * training corpus with. (A manifest names files by their paths on the
 * machine that built it: Debian's python3-click, which python3-torch pulls
 * in, is click's own code, and the n-gram trained on it answered 35% of
 * the click tasks from their own lines.) */
typedef struct sc_eval_protect sc_eval_protect;
sc_eval_protect *sc_eval_protect_new(void); /* NULL when out of memory */
/* Adds one document (copied as line hashes); false when out of memory. */
bool sc_eval_protect_add(sc_eval_protect *p, const char *text, size_t len);
void sc_eval_protect_free(sc_eval_protect *p); /* NULL is fine */

/* Trained on a corpus: a corpus manifest.json (the files of its "train"
 * split that are readable here, as model/train/corpus.py lists them), a
 * train.jsonl ({"text", "lang"} per line), or a folder (its source files),
 * less what shares too much with protect's documents (borrowed; NULL:
 * none). *files gets how many files it read, *left_out how many it left out
 * (either may be NULL). *out owned by the caller. */
sc_status sc_eval_ngram_train(const char *corpus, const sc_eval_protect *protect,
                              sc_eval_ngram **out, size_t *files, size_t *left_out,
                              sc_error *err);
void sc_eval_ngram_free(sc_eval_ngram *g); /* NULL is fine */
/* The next k lines after the end of before: each the line that most often
 * follows the previous non-blank line, first in the local texts (the
 * prompt's: before, after and the snippets in before), then in the corpus,
 * else the language's most frequent line. malloc'd, k newline-terminated
 * lines; NULL when out of memory. */
char *sc_eval_ngram_predict(const sc_eval_ngram *g, const char *lang, const char *before,
                            size_t before_len, const char *after, size_t after_len, int k,
                            size_t *len);

/* ---- a run --------------------------------------------------------------------------- */

typedef struct sc_eval_options {
  const char *bench;      /* a name or a problems file (sc_eval_bench_load) */
  sc_eval_bench_options data;
  /* The system: a model (a folder or a Hugging Face id, model.h,
   * sc_model_resolve; NULL: the default), or samples to score (a file in
   * the harness's sample format, or "canonical": the benchmark's own
   * middles). */
  const char *model_dir;
  const char *samples;
  sc_preset preset;       /* AUTO: the family's */
  sc_device_kind device;
  sc_weights_kind weights;
  int max_tokens;         /* the canvas; 0: sc_eval_bench_canvas */
  bool oracle_length;     /* the canvas is the canonical middle's length in tokens */
  int context_budget;     /* repository prompts' tokens (the LSP's contextBudget); 0: 1024 */
  bool baselines;         /* the line n-gram and the shipped model, on the same tasks */
  /* Drafts (model.h, sc_draft; context.h, sc_drafts_find) from the prompt's
   * text and, on repository tasks, the package's line table: 1 on, 0 off,
   * -1 the preset's (on for fast, off for upstream), as sculpt complete. */
  int drafts;
  double draft_threshold; /* < 0: the default (SC_DRAFT_THRESHOLD_DEFAULT) */
  int block_len;          /* the preset's semi-AR blocks (tokens); 0: the preset's */
  const char *ngram_corpus; /* NULL: the model's corpus_manifest.json, else the shipped one's */
  sc_eval_exec_options exec;
  /* Progress: phase ("model", "line-ngram", "tests", ...), done, total. */
  void (*progress)(void *user, const char *phase, size_t done, size_t total);
  void *user;
  const _Atomic int *cancel;
} sc_eval_options;

/* Runs the benchmark: completions from the model (or the samples), the
 * baselines, execution or matching, and the metrics. *summary: an object
 * (bench, tasks, the systems' metrics, McNemar against the model, the
 * settings); *tasks: an array of one object per task and system (task_id,
 * system, completion, and passed/result or exact/similarity/compiles);
 * *samples (may be NULL): the harness's sample format with its results
 * (task_id, completion, passed, result) for the first system. All owned by
 * the caller. Nothing is written anywhere. */
sc_status sc_eval_run(const sc_eval_options *o, json_t **summary, json_t **tasks,
                      json_t **samples, sc_error *err);

/* The per-task lines of an earlier run (sc_eval_run's tasks, written as
 * JSON Lines): *lines an array, owned by the caller. SC_ERR_FORMAT naming
 * FILE:LINE for a line that is not one. */
sc_status sc_eval_results_read(const char *path, json_t **lines, sc_error *err);

/* McNemar between two sets of per-task lines (borrowed): system sys_a's
 * in a against sys_b's in b (NULL: "model"), paired by bench and task_id,
 * on passed (HumanEval) or exact (our own), the first line of each task.
 * *out: {a, b, pairs, a_rate, b_rate, only_a, only_b, p}, owned by the
 * caller. SC_ERR_INVALID when no task pairs up. */
sc_status sc_eval_compare(const json_t *a, const json_t *b, const char *sys_a,
                          const char *sys_b, json_t **out, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* bench_impl.h — private to cli/: the parts of `sculpt bench` in files of
 * their own (bench_replay.c). */
#ifndef SCULPT_BENCH_IMPL_H
#define SCULPT_BENCH_IMPL_H

#include "model.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sc_bench_replay_args {
  const char *target;    /* FILE or FILE:LINE:COL */
  const char *model_dir;
  sc_weights_kind weights;
  int threads;           /* 0: as is */
  int context, canvas;   /* prompt tokens (3/4 before the cursor), canvas tokens */
  int type_chars;        /* characters removed before the position and typed back */
  int steps;             /* > 0: fixed-k decoding in this many steps (else threshold) */
  double eos_penalty;    /* NAN: the model's */
  bool compare, no_session, json, verbose;
  sc_session_options session;
} sc_bench_replay_args;

/* Runs the replay; prints its report; returns the exit status. */
int sc_bench_replay(const sc_bench_replay_args *a);

/* `sculpt bench --step` (bench_step.c): one full pass and one cached
 * decoding step over context + canvas tokens, against the measured memory
 * bandwidth; prints its report; returns the exit status. */
int sc_bench_step(sc_model *model, const char *model_dir, int context, int canvas, int repeat,
                  int threads);
/* GB/s reading a 1 GiB buffer with threads threads (best of 5); 0 on OOM. */
double sc_bench_read_bandwidth(int threads);

/* `sculpt bench --synthetic SHAPE` (bench_synth.c): the CUDA step table,
 * --profile (by kernel kind, switches, key splits) or --infill (the real
 * engine, CPU or CUDA). */
typedef struct sc_bench_synth_args {
  const char *shape, *device;     /* device "cuda" or "cpu" */
  const int *canvases, *contexts; /* the points: every context x canvas */
  int n_canvas, n_context;
  int per_step, repeat, block;    /* tokens committed a step, medians of, blocks */
  bool profile, infill;
  const char *variants;           /* --variants: the switches to time (profile) */
  const char *chunks;             /* --chunks: key splits to time (profile) */
  sc_weights_kind weights;        /* --infill on the CPU: what it computes in */
  int threads;
} sc_bench_synth_args;
int sc_bench_synthetic(const sc_bench_synth_args *a);

/* /proc/cpuinfo's model name, or "unknown cpu". */
void sc_bench_cpu_name(char *out, size_t n);

#endif

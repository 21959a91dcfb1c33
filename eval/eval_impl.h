/* eval_impl.h — what eval/'s files share and nothing else sees. */
#ifndef SCULPT_EVAL_IMPL_H
#define SCULPT_EVAL_IMPL_H

#include "eval.h"

struct sc_eval_bench {
  char *name;
  sc_eval_scoring scoring;
  int canvas;
  char *repos_dir; /* repository tasks: the folder of packages */
  sc_eval_task *tasks;
  size_t n, cap;
};

/* The folder of packages a repository benchmark drew from (NULL otherwise). */
const char *sc_eval__bench_repos(const sc_eval_bench *b);

/* A whole file, gzip-compressed or plain (zlib reads both); *out
 * NUL-terminated, owned by the caller. SC_ERR_IO when it cannot be opened,
 * SC_ERR_FORMAT for a broken gzip stream. */
sc_status sc_eval__read_file(const char *path, char **out, size_t *len, sc_error *err);

/* Each non-blank line of a JSON Lines text as an object, with its 1-based
 * line number; a line that is not an object is SC_ERR_FORMAT "PATH:LINE". */
sc_status sc_eval__each_json_line(const char *path, const char *text, size_t len,
                                  sc_status (*fn)(void *user, json_t *o, size_t line,
                                                  sc_error *err),
                                  void *user, sc_error *err);

/* Lines in s: its newlines, plus one for a last line without one; at least 1. */
int sc_eval__count_lines(const char *s, size_t n);

/* The first k lines of s (through their newlines): the unit a line task
 * asks for. */
size_t sc_eval__first_lines(const char *s, size_t n, int k);

#endif

/* cli.h — the subcommands of the `sculpt` binary. Each is a thin front door
 * over context/ and model/ (or lsp/): it parses its arguments, calls the
 * module, and turns an sc_error into one line on stderr and an exit status.
 * Exit status: 0 success, 1 failure of the work, 2 usage or input error. */
#ifndef SCULPT_CLI_H
#define SCULPT_CLI_H

#include "sculpt.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sc_cli_command {
  const char *name;
  const char *summary; /* one line for `sculpt --help` */
  const char *usage;   /* full text for `sculpt help NAME` */
  int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} sc_cli_command;

/* The table, terminated by a NULL name; defined in main.c. */
extern const sc_cli_command sc_cli_commands[];

int sc_cli_lsp(int argc, char **argv);
int sc_cli_tokenize(int argc, char **argv);
int sc_cli_logits(int argc, char **argv);
int sc_cli_model(int argc, char **argv);
/* `model pull` and `model list` (cmd_model_pull.c), argv[1] the verb. */
int sc_cli_model_pull(int argc, char **argv);
int sc_cli_model_list(int argc, char **argv);
int sc_cli_complete(int argc, char **argv);
int sc_cli_bench(int argc, char **argv);
int sc_cli_context(int argc, char **argv);
int sc_cli_batch(int argc, char **argv);
int sc_cli_serve(int argc, char **argv);
int sc_cli_eval(int argc, char **argv);

/* A whole decimal number in [lo, hi]; false on anything else. */
bool sc_cli_parse_long(const char *s, long lo, long hi, long *out);
/* A decimal number in [lo, hi] (not NaN); false on anything else. */
bool sc_cli_parse_double(const char *s, double lo, double hi, double *out);

/* The remote backend's options, shared by complete and batch: --backend URL,
 * --backend-model NAME, --api-key-env VAR, --timeout MS, --max-tries N,
 * --provider NAME, --fim-template NAME, --stream on|off (option o with its
 * value v) into r. 1: parsed; 0: o is not one of them; -1: a bad value,
 * reported as `sculpt CMD: ...`. */
struct sc_fim_client_options;
int sc_cli_backend_option(const char *cmd, const char *o, const char *v,
                          struct sc_fim_client_options *r);
/* True (and reported) when backend options came without --backend. */
bool sc_cli_backend_orphan(const char *cmd, const struct sc_fim_client_options *r);

/* Reads a whole file; *data (NUL-terminated) owned by the caller. On
 * failure errno says why. */
bool sc_cli_read_file(const char *path, char **data, size_t *len);

/* FILE:LINE:COL (1-based line, 1-based byte column). With read_it, only
 * parses: *path (owned by the caller) and the numbers. Without it, finds the
 * byte offset in text: 0 on success, -1 malformed, -2 no such line, -3 no
 * such column. */
int sc_cli_locate(const char *target, char **path, const char *text, size_t len,
                  size_t *offset, bool read_it, long *line_out, long *col_out);

/* Writes data atomically over path: a temp file .NAME.sculpt-XXXXXX in the
 * same directory with the given permissions, fsync, rename, fsync of the
 * directory. A kill at any point leaves either the old or the new file whole
 * (at worst a stray temp file next to it, which `sculpt batch` skips).
 * A symbolic link stays a link: its target is replaced. A device or a FIFO
 * (/dev/null, /dev/stdout) is written in place, not replaced; a directory
 * is refused. */
#define SC_CLI_TMP_TAG ".sculpt-"
sc_status sc_cli_write_atomic(const char *path, const char *data, size_t len, mode_t perm,
                              sc_error *err);

/* The folder a model name stands for (a folder, or a Hugging Face id found
 * in the cache: model.h, sc_model_resolve; given NULL: the default), owned
 * by the caller (free()). NULL after printing why as `sculpt CMD: ...`:
 * no model at all (*rc 2), or an id that is not in the cache (*rc 1). */
char *sc_cli_model_dir(const char *cmd, const char *given, int *rc);

/* Prints "sculpt NAME: MESSAGE" on stderr. */
void sc_cli_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

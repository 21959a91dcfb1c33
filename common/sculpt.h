/*
 * sculpt.h — the base every module shares: status values, the error record,
 * CHECK macros and logging.
 *
 * Errors are values. A function that can fail returns an sc_status and, when
 * it is given an sc_error*, fills it with a message and the file and line of
 * the check that failed. Nothing in library code exits or aborts; the error
 * travels up and becomes a JSON-RPC error or a CLI message.
 */
#ifndef SCULPT_H
#define SCULPT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *sc_version(void); /* static string, e.g. "0.1.0" */

typedef enum sc_status {
  SC_OK = 0,
  SC_ERR_INVALID,     /* bad argument or malformed input */
  SC_ERR_NOMEM,       /* allocation failed */
  SC_ERR_IO,          /* read/write/open failed */
  SC_ERR_FORMAT,      /* a file's content is not what it claims */
  SC_ERR_UNSUPPORTED, /* valid, but not something we can do */
  SC_ERR_CANCELLED,   /* the caller asked us to stop */
  SC_ERR_STALE,       /* the input changed under us */
  SC_ERR_DEVICE,      /* GPU missing, driver mismatch, device OOM */
  SC_ERR_INTERNAL,    /* a broken invariant: a bug in sculpt */
} sc_status;

const char *sc_status_name(sc_status s); /* static string */

typedef struct sc_error {
  sc_status status;
  const char *file; /* static: __FILE__ of the failing check */
  int line;
  char msg[512];
} sc_error;

/* Fills err (may be NULL) and returns status, so that `return sc_error_set(...)`
 * reads naturally. The message is printf-formatted and truncated to fit. */
sc_status sc_error_set_at(sc_error *err, sc_status status, const char *file,
                          int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define sc_error_set(err, status, ...)                                         \
  sc_error_set_at((err), (status), __FILE__, __LINE__, __VA_ARGS__)

/* CHECK(cond, err, status, fmt, ...): when cond is false, record the error and
 * return its status from the enclosing function (which must return sc_status). */
#define SC_CHECK(cond, err, status, ...)                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      return sc_error_set_at((err), (status), __FILE__, __LINE__, __VA_ARGS__);\
  } while (0)

/* SC_TRY(expr): propagate a non-OK status unchanged (err already filled). */
#define SC_TRY(expr)                                                           \
  do {                                                                         \
    sc_status sc__s = (expr);                                                  \
    if (sc__s != SC_OK) return sc__s;                                          \
  } while (0)

/* ---- logging ----------------------------------------------------------- */

typedef enum sc_log_level {
  SC_LOG_ERROR = 1,
  SC_LOG_WARN = 2,
  SC_LOG_INFO = 3,
  SC_LOG_DEBUG = 4,
} sc_log_level;

/* Parses "error", "warn"/"warning", "info", "debug" (case-insensitive).
 * Returns false and leaves *out alone on anything else. */
bool sc_log_level_parse(const char *s, sc_log_level *out);
const char *sc_log_level_name(sc_log_level level);

/* Lines at or below this level go to stderr. Default SC_LOG_INFO, or the
 * value of $SCULPT_LOG when it names a level. Thread-safe. */
void sc_log_set_stderr_level(sc_log_level level);
sc_log_level sc_log_stderr_level(void);

/* An extra sink (the LSP's window/logMessage). It is called for every line,
 * whatever its level, with the formatted text, on the thread that logged;
 * the sink filters and must be thread-safe. Pass NULL to remove it. */
typedef void (*sc_log_sink_fn)(void *user, sc_log_level level, const char *text);
void sc_log_set_sink(sc_log_sink_fn fn, void *user);

void sc_log(sc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sc_logv(sc_log_level level, const char *fmt, va_list ap);

#define SC_LOG_ERROR(...) sc_log(SC_LOG_ERROR, __VA_ARGS__)
#define SC_LOG_WARN(...) sc_log(SC_LOG_WARN, __VA_ARGS__)
#define SC_LOG_INFO(...) sc_log(SC_LOG_INFO, __VA_ARGS__)
#define SC_LOG_DEBUG(...) sc_log(SC_LOG_DEBUG, __VA_ARGS__)

/* ---- small helpers -------------------------------------------------------- */

/* Monotonic clock in milliseconds (double, sub-ms resolution). */
double sc_now_ms(void);
/* The calling thread's CPU time in milliseconds: what a loop's own work
 * cost, unlike the wall clock not inflated when the machine deschedules it. */
double sc_thread_cpu_ms(void);

/* A budget of the calling thread's CPU time (for work whose cost is its
 * input's, such as a parse, which must not come out different because the
 * machine was busy), checked cheaply: the wall clock (a vDSO read) first,
 * and the thread's CPU clock (a system call) only once as much wall time
 * has passed, since a thread cannot have used more CPU than wall time.
 * Start and check on one thread. */
typedef struct sc_cpu_budget {
  long long wall_next_ns; /* before this (CLOCK_MONOTONIC) it cannot be over */
  long long cpu_end_ns;   /* the thread's CPU clock when it is over */
} sc_cpu_budget;
void sc_cpu_budget_start(sc_cpu_budget *b, long long limit_ns);
/* True once the thread has used limit_ns of CPU since the start. */
bool sc_cpu_budget_over(sc_cpu_budget *b);

/* pthread_create with a stack of stack_bytes (reserved; pages are touched
 * as used). Returns 0 or the error number, as pthread_create does. */
int sc_thread_start(pthread_t *th, size_t stack_bytes, void *(*fn)(void *), void *arg);

/* A /proc/meminfo field in bytes, by its sscanf format ("MemTotal: %llu
 * kB"); 0 when it cannot be read. */
uint64_t sc_meminfo_bytes(const char *format);

/* The most stack one thread may reserve beyond the default: SIZE_MAX where
 * nothing bounds the process's address space; else a sixteenth of the
 * bound (RLIMIT_AS, or CommitLimit under strict overcommit), since a
 * stack reserved counts whole against it, and what a library fails to map
 * then it may not survive (oneDNN crashed generating code under ulimit -v
 * 2.5 GB with 3 GB of stacks reserved). Read once. */
size_t sc_thread_stack_budget(void);

/* b bytes for people: "1.5 GB", "12.0 MB", "3.2 kB", "512 B" (powers of
 * 1000) into buf (n bytes); returns buf. */
char *sc_format_bytes(uint64_t b, char *buf, size_t n);

/* The n bytes at p, NUL bytes included, plus a terminating NUL: owned by the
 * caller (free), NULL when out of memory. Text from a document or the model
 * may hold NUL bytes, where strndup would stop short of n. */
char *sc_memdup(const void *p, size_t n);

/* A file URI (RFC 8089: file:///a/b%20c) as a path ("/a/b c"), with
 * percent-escapes decoded; owned by the caller (free()). NULL for another
 * scheme or on OOM. */
char *sc_path_from_file_uri(const char *uri);

/* Appends n bytes of data to a write queue whose pending bytes are
 * (*buf)[*start, *len) in a buffer of *cap bytes (a non-blocking socket's
 * or pipe's output): sent bytes at the front are dropped first, then the
 * buffer doubles (from first_cap). false when out of memory: the queue is
 * unchanged. */
bool sc_queue_append(char **buf, size_t *start, size_t *len, size_t *cap, size_t first_cap,
                     const char *data, size_t n);

/* Appends n bytes of data to the growable string *buf (*len bytes used of
 * *cap; *buf NULL and both 0 at first), keeping it NUL-terminated: the
 * buffer doubles from first_cap. false when out of memory: unchanged. */
bool sc_buf_append(char **buf, size_t *len, size_t *cap, size_t first_cap, const char *data,
                   size_t n);

/* Opens path read-only when it is a regular file (following symlinks):
 * a FIFO, device, socket or directory is an SC_ERR_IO naming the path and
 * what it is, checked before any blocking open, so none can hang the
 * caller. *fd is the caller's to close. (common/file.c) */
sc_status sc_file_open_regular(const char *path, int *fd, sc_error *err);
/* Reads a whole regular file (as above) of at most max bytes into *out
 * (NUL-terminated, *len bytes without it; owned by the caller). Larger:
 * SC_ERR_FORMAT. */
sc_status sc_file_read_regular(const char *path, size_t max, char **out, size_t *len,
                               sc_error *err);

/* The length (1..4) of the UTF-8 sequence that p[0] begins when the bytes
 * after it that are there (avail in all, at least 1) continue it as RFC 3629
 * section 4 allows (no overlong forms, surrogates or code points past
 * U+10FFFF); else 0. A result above avail is a valid but cut sequence: the
 * callers that need it whole check n <= avail. */
int sc_utf8_lead(const unsigned char *p, size_t avail);

/* body (a JSON text, len bytes) with what jansson refuses but editors send
 * replaced by U+FFFD: a \uD800-\uDFFF escape that is not half of a pair
 * (JavaScript strings are UTF-16, and JSON.stringify writes a lone half as
 * such an escape; Go's encoding/json decodes one as U+FFFD). Bytes that
 * are not UTF-8 stay: such a text is no JSON text at all (RFC 8259 section
 * 8.1). A new NUL-terminated buffer of *out_len bytes, owned by the caller
 * (free()); *replaced counts the replacements. NULL when out of memory.
 * (common/json.c) */
char *sc_json_repair(const char *body, size_t len, size_t *out_len, size_t *replaced);
/* json_loadb(body, len, flags, error) (error: a json_error_t *), and when
 * that fails, the same on sc_json_repair's copy: a json_t * (new
 * reference), with *replaced the characters replaced by U+FFFD (0 when the
 * text was valid as sent); NULL with error set as for the text as sent.
 * (void * keeps jansson out of this header.) */
void *sc_json_load_text(const char *body, size_t len, size_t flags, void *error,
                        size_t *replaced);

/* Writes all len bytes of data to fd (retrying short writes and EINTR),
 * then fsyncs it: what every atomic replacement writes into its temp file
 * before the rename. false with errno set on failure. (common/file.c) */
bool sc_file_write_all(int fd, const void *data, size_t len);
/* The same without the fsync: for a pipe or a device, which have none. */
bool sc_file_write_full(int fd, const void *data, size_t len);

/* 64-bit FNV-1a; for hash tables and cache keys, not security. Its values
 * are kept on disk (the workspace index): changing it changes their format. */
uint64_t sc_hash64(const void *data, size_t len, uint64_t seed);
/* A hash of long texts, 8 bytes a step (about 8 times FNV-1a's speed), for
 * keys that live in memory only, never on disk: the LSP's suggestion cache
 * hashes a document's whole prefix and suffix at every request. */
uint64_t sc_hash64_long(const void *data, size_t len, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* SCULPT_H */

/* base.c — status names, error records, logging and small helpers. */
#define _POSIX_C_SOURCE 200809L
#include "sculpt.h"
#include "sculpt_version.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

const char *sc_version(void) { return SCULPT_VERSION_STRING; }

const char *sc_status_name(sc_status s) {
  switch (s) {
  case SC_OK: return "ok";
  case SC_ERR_INVALID: return "invalid";
  case SC_ERR_NOMEM: return "out of memory";
  case SC_ERR_IO: return "io";
  case SC_ERR_FORMAT: return "format";
  case SC_ERR_UNSUPPORTED: return "unsupported";
  case SC_ERR_CANCELLED: return "cancelled";
  case SC_ERR_STALE: return "stale";
  case SC_ERR_DEVICE: return "device";
  case SC_ERR_INTERNAL: return "internal";
  }
  return "unknown";
}

sc_status sc_error_set_at(sc_error *err, sc_status status, const char *file,
                          int line, const char *fmt, ...) {
  if (err) {
    err->status = status;
    err->file = file;
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return status;
}

/* ---- logging ----------------------------------------------------------- */

static atomic_int g_stderr_level = 0; /* 0 = not yet initialised */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static sc_log_sink_fn g_sink;
static void *g_sink_user;

bool sc_log_level_parse(const char *s, sc_log_level *out) {
  if (!s) return false;
  static const struct { const char *name; sc_log_level level; } names[] = {
      {"error", SC_LOG_ERROR}, {"warn", SC_LOG_WARN},   {"warning", SC_LOG_WARN},
      {"info", SC_LOG_INFO},   {"debug", SC_LOG_DEBUG}, {"log", SC_LOG_DEBUG},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(s, names[i].name) == 0) {
      *out = names[i].level;
      return true;
    }
  return false;
}

const char *sc_log_level_name(sc_log_level level) {
  switch (level) {
  case SC_LOG_ERROR: return "error";
  case SC_LOG_WARN: return "warn";
  case SC_LOG_INFO: return "info";
  case SC_LOG_DEBUG: return "debug";
  }
  return "?";
}

sc_log_level sc_log_stderr_level(void) {
  int l = atomic_load(&g_stderr_level);
  if (l == 0) {
    sc_log_level parsed = SC_LOG_INFO;
    sc_log_level_parse(getenv("SCULPT_LOG"), &parsed);
    int expected = 0;
    atomic_compare_exchange_strong(&g_stderr_level, &expected, (int)parsed);
    l = atomic_load(&g_stderr_level);
  }
  return (sc_log_level)l;
}

void sc_log_set_stderr_level(sc_log_level level) {
  atomic_store(&g_stderr_level, (int)level);
}

void sc_log_set_sink(sc_log_sink_fn fn, void *user) {
  pthread_mutex_lock(&g_log_mu);
  g_sink = fn;
  g_sink_user = user;
  pthread_mutex_unlock(&g_log_mu);
}

void sc_logv(sc_log_level level, const char *fmt, va_list ap) {
  char text[2048];
  vsnprintf(text, sizeof text, fmt, ap);
  pthread_mutex_lock(&g_log_mu);
  if (level <= sc_log_stderr_level()) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    /* One line per message: stderr is shared with nothing else we write. */
    fprintf(stderr, "%02d:%02d:%02d.%03ld sculpt %s: %s\n", tm.tm_hour, tm.tm_min,
            tm.tm_sec, ts.tv_nsec / 1000000, sc_log_level_name(level), text);
    fflush(stderr);
  }
  sc_log_sink_fn sink = g_sink;
  void *user = g_sink_user;
  pthread_mutex_unlock(&g_log_mu);
  if (sink) sink(user, level, text);
}

void sc_log(sc_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sc_logv(level, fmt, ap);
  va_end(ap);
}

/* ---- helpers -------------------------------------------------------------- */

char *sc_memdup(const void *p, size_t n) {
  char *s = n < SIZE_MAX ? malloc(n + 1) : NULL;
  if (!s) return NULL;
  if (n) memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

char *sc_format_bytes(uint64_t b, char *buf, size_t n) {
  if (b >= 1000000000ull) snprintf(buf, n, "%.1f GB", (double)b / 1e9);
  else if (b >= 1000000ull) snprintf(buf, n, "%.1f MB", (double)b / 1e6);
  else if (b >= 1000ull) snprintf(buf, n, "%.1f kB", (double)b / 1e3);
  else snprintf(buf, n, "%llu B", (unsigned long long)b);
  return buf;
}

double sc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long long clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

double sc_thread_cpu_ms(void) { return (double)clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1e6; }

void sc_cpu_budget_start(sc_cpu_budget *b, long long limit_ns) {
  b->wall_next_ns = clock_ns(CLOCK_MONOTONIC) + limit_ns;
  b->cpu_end_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) + limit_ns;
}

bool sc_cpu_budget_over(sc_cpu_budget *b) {
  long long now = clock_ns(CLOCK_MONOTONIC);
  if (now < b->wall_next_ns) return false;
  long long cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (cpu >= b->cpu_end_ns) return true;
  b->wall_next_ns = now + (b->cpu_end_ns - cpu); /* the least wall time still to go */
  return false;
}

int sc_thread_start(pthread_t *th, size_t stack_bytes, void *(*fn)(void *), void *arg) {
  pthread_attr_t a;
  int rc = pthread_attr_init(&a);
  if (rc != 0) return rc;
  rc = pthread_attr_setstacksize(&a, stack_bytes);
  if (rc == 0) rc = pthread_create(th, &a, fn, arg);
  pthread_attr_destroy(&a);
  return rc;
}

uint64_t sc_meminfo_bytes(const char *format) {
  FILE *f = fopen("/proc/meminfo", "r");
  unsigned long long kb = 0;
  if (f) {
    char line[128];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, format, &kb) == 1) break;
    fclose(f);
  }
  return (uint64_t)kb * 1024u;
}

/* CommitLimit in bytes under strict overcommit (vm.overcommit_memory 2),
 * else 0. */
static unsigned long long strict_commit_limit(void) {
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  int mode = 0;
  if (f) {
    if (fscanf(f, "%d", &mode) != 1) mode = 0;
    fclose(f);
  }
  return mode == 2 ? sc_meminfo_bytes("CommitLimit: %llu kB") : 0;
}

static size_t g_stack_budget;
static pthread_once_t g_stack_budget_once = PTHREAD_ONCE_INIT;

static void stack_budget_init(void) {
  unsigned long long bound = strict_commit_limit();
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (!bound || (unsigned long long)rl.rlim_cur < bound))
    bound = (unsigned long long)rl.rlim_cur;
  g_stack_budget = !bound ? SIZE_MAX : bound / 16 > SIZE_MAX ? SIZE_MAX : (size_t)(bound / 16);
}

size_t sc_thread_stack_budget(void) {
  pthread_once(&g_stack_budget_once, stack_budget_init);
  return g_stack_budget;
}

uint64_t sc_hash64(const void *data, size_t len, uint64_t seed) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t sc_hash64_long(const void *data, size_t len, uint64_t seed) {
  /* Each word is mixed in by a multiply and a xor-shift (the finalizer of
   * SplitMix64, Steele et al. 2014), the tail as one zero-padded word, the
   * length last so that texts differing only in trailing zero bytes differ. */
  const unsigned char *p = data;
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ seed;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
  }
  uint64_t t = 0;
  memcpy(&t, p + i, len - i);
  h = (h ^ t ^ ((uint64_t)len << 56 | len)) * 0x94D049BB133111EBULL;
  return h ^ (h >> 29);
}

char *sc_path_from_file_uri(const char *uri) {
  if (!uri || strncmp(uri, "file://", 7) != 0) return NULL;
  const char *p = uri + 7;
  char *out = malloc(strlen(p) + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; p[i]; i++) {
    if (p[i] == '%' && isxdigit((unsigned char)p[i + 1]) && isxdigit((unsigned char)p[i + 2])) {
      char hex[3] = {p[i + 1], p[i + 2], 0};
      out[o++] = (char)strtol(hex, NULL, 16);
      i += 2;
    } else {
      out[o++] = p[i];
    }
  }
  out[o] = '\0';
  return out;
}

/* *buf grows, doubling from first_cap, to hold at least need bytes. */
static bool grow_to(char **buf, size_t *cap, size_t first_cap, size_t need) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : (first_cap ? first_cap : 4096);
  while (c < need) {
    if (c > SIZE_MAX / 2) return false;
    c *= 2;
  }
  char *nb = realloc(*buf, c);
  if (!nb) return false;
  *buf = nb;
  *cap = c;
  return true;
}

bool sc_queue_append(char **buf, size_t *start, size_t *len, size_t *cap, size_t first_cap,
                     const char *data, size_t n) {
  if (*len + n > *cap && *start > 0) {
    memmove(*buf, *buf + *start, *len - *start);
    *len -= *start;
    *start = 0;
  }
  if (!grow_to(buf, cap, first_cap, *len + n)) return false;
  if (n) memcpy(*buf + *len, data, n);
  *len += n;
  return true;
}

bool sc_buf_append(char **buf, size_t *len, size_t *cap, size_t first_cap, const char *data,
                   size_t n) {
  if (n > SIZE_MAX - *len - 1 || !grow_to(buf, cap, first_cap, *len + n + 1)) return false;
  if (n) memcpy(*buf + *len, data, n);
  *len += n;
  (*buf)[*len] = '\0';
  return true;
}

int sc_utf8_lead(const unsigned char *p, size_t avail) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  int n;
  unsigned lo = 0x80, hi = 0xBF; /* the second byte's range (RFC 3629 table) */
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0; /* overlong */
    if (c == 0xED) hi = 0x9F; /* surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90; /* overlong */
    if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
  } else {
    return 0;
  }
  for (size_t i = 1; i < (size_t)n && i < avail; i++)
    if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xBF)) return 0;
  return n;
}

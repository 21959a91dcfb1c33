/* cmd_tokenize.c — `sculpt tokenize (--model DIR | --tokenizer FILE) [--decode]`
 * and its batch form `--jsonl --out FILE.npy [--threads N] [FILE...]`.
 * Encode: raw stdin bytes -> one line of ids separated by single spaces.
 * Decode: ids separated by spaces, commas or newlines -> the exact bytes.
 * Batch: JSON Lines of {"text": ...} -> one token stream, every text followed
 * by a separator token, written as a NumPy .npy array: the token cache
 * model/train/train.py reads (its tokenize_corpus), made here on every core
 * instead of by the Python encoder (the GPU session tokenizes its corpus on
 * the device's 16 cores in seconds).
 * No special tokens are added. Exit 0 ok, 2 usage/input error, 1 failure. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME "tokenize"

/* Reads all of stdin; NULL with *len == 0 is an empty input. */
static int read_stdin(char **out, size_t *len) {
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      size_t c = cap ? cap * 2 : 65536;
      char *b = realloc(buf, c + 1);
      if (!b) {
        free(buf);
        sc_cli_fail(NAME, "out of memory reading stdin");
        return 1;
      }
      buf = b;
      cap = c;
    }
    size_t k = fread(buf + n, 1, cap - n, stdin);
    n += k;
    if (k == 0) break;
  }
  if (ferror(stdin)) {
    free(buf);
    sc_cli_fail(NAME, "cannot read stdin: %s", strerror(errno));
    return 1;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}

static int status_exit(sc_status s) { return s == SC_ERR_INVALID ? 2 : 1; }

static int do_encode(const sc_tokenizer *tok, const char *text, size_t len) {
  int32_t *ids = NULL;
  size_t n = 0;
  sc_error err = {0};
  sc_status s = sc_tokenizer_encode(tok, text, len, &ids, &n, &err);
  if (s != SC_OK) {
    sc_cli_fail(NAME, "%s", err.msg);
    return status_exit(s);
  }
  for (size_t i = 0; i < n; i++) printf(i ? " %ld" : "%ld", (long)ids[i]);
  putchar('\n');
  free(ids);
  return 0;
}

static int do_decode(const sc_tokenizer *tok, const char *text, size_t len) {
  int32_t *ids = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (size_t i = 0; i < len && rc == 0;) {
    char c = text[i];
    if (c == ' ' || c == ',' || c == '\n' || c == '\r' || c == '\t') {
      i++;
      continue;
    }
    size_t j = i;
    while (j < len && text[j] >= '0' && text[j] <= '9') j++;
    if (j == i || j - i > 10) {
      sc_cli_fail(NAME, "--decode: not a token id at byte %zu", i);
      rc = 2;
      break;
    }
    long long v = strtoll(text + i, NULL, 10);
    if (v > INT32_MAX) {
      sc_cli_fail(NAME, "--decode: token id %lld out of range", v);
      rc = 2;
      break;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      int32_t *p = realloc(ids, cap * sizeof *p);
      if (!p) {
        sc_cli_fail(NAME, "out of memory");
        rc = 1;
        break;
      }
      ids = p;
    }
    ids[n++] = (int32_t)v;
    i = j;
  }
  if (rc == 0) {
    char *out = NULL;
    size_t olen = 0;
    sc_error err = {0};
    sc_status s = sc_tokenizer_decode(tok, ids, n, &out, &olen, &err);
    if (s != SC_OK) {
      sc_cli_fail(NAME, "%s", err.msg);
      rc = status_exit(s);
    } else if (fwrite(out, 1, olen, stdout) != olen) {
      sc_cli_fail(NAME, "cannot write stdout");
      rc = 1;
    }
    free(out);
  }
  free(ids);
  return rc;
}


/* ---- batch: JSON Lines -> .npy ---------------------------------------------- */

#define MAX_THREADS 256
#define LINES_PER_GRAB 16 /* lines a worker takes at once: documents vary in size */

typedef struct {
  const char *p; /* the line, not NUL-terminated */
  size_t len;
  int file;      /* index into the file names */
  size_t lineno; /* 1-based */
  int32_t *ids;  /* the result, owned here */
  size_t n;
} tk_line;

typedef struct {
  const sc_tokenizer *tok;
  int32_t sep;
  tk_line *lines;
  size_t n_lines;
  atomic_size_t next;
  atomic_bool stop;
  pthread_mutex_t mu;
  size_t err_line; /* the first failing line's index, n_lines when none */
  char err_msg[512];
  int err_rc;
} tk_batch;

static void batch_fail(tk_batch *b, size_t i, int rc, const char *msg) {
  pthread_mutex_lock(&b->mu);
  if (i < b->err_line) { /* the earliest line wins, whichever thread saw it */
    b->err_line = i;
    b->err_rc = rc;
    snprintf(b->err_msg, sizeof b->err_msg, "%s", msg);
  }
  pthread_mutex_unlock(&b->mu);
  atomic_store(&b->stop, true);
}

static void encode_line(tk_batch *b, size_t i) {
  tk_line *l = &b->lines[i];
  json_error_t je;
  json_t *o = json_loadb(l->p, l->len, JSON_ALLOW_NUL, &je);
  json_t *t = json_is_object(o) ? json_object_get(o, "text") : NULL;
  if (!o) {
    char msg[256];
    snprintf(msg, sizeof msg, "not JSON (%s)", je.text);
    batch_fail(b, i, 2, msg);
  } else if (!json_is_string(t)) {
    batch_fail(b, i, 2, "no string \"text\" in the object");
  } else {
    sc_error err = {0};
    sc_status s = sc_tokenizer_encode(b->tok, json_string_value(t), json_string_length(t),
                                      &l->ids, &l->n, &err);
    if (s != SC_OK) batch_fail(b, i, status_exit(s), err.msg);
  }
  json_decref(o);
}

static void *batch_worker(void *arg) {
  tk_batch *b = arg;
  while (!atomic_load(&b->stop)) {
    size_t i0 = atomic_fetch_add(&b->next, LINES_PER_GRAB);
    if (i0 >= b->n_lines) break;
    size_t i1 = i0 + LINES_PER_GRAB < b->n_lines ? i0 + LINES_PER_GRAB : b->n_lines;
    for (size_t i = i0; i < i1 && !atomic_load(&b->stop); i++) encode_line(b, i);
  }
  return NULL;
}

/* Appends the non-blank lines of text to *lines. */
static bool split_lines(const char *text, size_t len, int file, tk_line **lines, size_t *n,
                        size_t *cap) {
  size_t lineno = 0;
  for (size_t a = 0; a < len;) {
    const char *nl = memchr(text + a, '\n', len - a);
    size_t e = nl ? (size_t)(nl - text) : len;
    lineno++;
    size_t k = a;
    while (k < e && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r')) k++;
    if (k < e) {
      if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4096;
        tk_line *q = realloc(*lines, c * sizeof *q);
        if (!q) return false;
        *lines = q;
        *cap = c;
      }
      (*lines)[(*n)++] = (tk_line){.p = text + a, .len = e - a, .file = file, .lineno = lineno};
    }
    a = e + 1;
  }
  return true;
}

/* The .npy header (NumPy's format.rst, version 1.0): magic, version, a u16
 * header length, a Python dict literal padded with spaces and a newline so
 * that the data starts on a 64-byte boundary. Returns its length. */
static size_t npy_header(char *h, size_t cap, const char *descr, size_t count) {
  char dict[128];
  int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
                    descr, count);
  size_t total = 10 + (size_t)dl + 1;
  total = (total + 63) / 64 * 64;
  if (total > cap || total - 10 > 65535) return 0;
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  h[8] = (char)((total - 10) & 0xff);
  h[9] = (char)((total - 10) >> 8);
  memcpy(h + 10, dict, (size_t)dl);
  memset(h + 10 + dl, ' ', total - 10 - (size_t)dl - 1);
  h[total - 1] = '\n';
  return total;
}

/* Concatenates the lines' ids, each followed by sep, into one .npy: uint16
 * when every id fits (train.py's choice, half the bytes), else int32. */
static int write_npy(const char *path, const tk_batch *b, size_t *tokens, const char **dtype) {
  size_t count = 0;
  int32_t top = b->sep;
  for (size_t i = 0; i < b->n_lines; i++) {
    count += b->lines[i].n + 1;
    for (size_t k = 0; k < b->lines[i].n; k++)
      if (b->lines[i].ids[k] > top) top = b->lines[i].ids[k];
  }
  bool u16 = top < 65536;
  size_t width = u16 ? 2 : 4;
  char head[128];
  size_t hl = npy_header(head, sizeof head, u16 ? "<u2" : "<i4", count);
  char *buf = hl ? malloc(hl + count * width) : NULL;
  if (!buf) {
    sc_cli_fail(NAME, "out of memory for %zu tokens", count);
    return 1;
  }
  memcpy(buf, head, hl);
  unsigned char *o = (unsigned char *)buf + hl;
  for (size_t i = 0; i < b->n_lines; i++) {
    const tk_line *l = &b->lines[i];
    for (size_t k = 0; k <= l->n; k++) {
      uint32_t v = (uint32_t)(k < l->n ? l->ids[k] : b->sep); /* little-endian on any host */
      for (size_t j = 0; j < width; j++) *o++ = (unsigned char)(v >> (8 * j));
    }
  }
  sc_error err = {0};
  sc_status s = sc_cli_write_atomic(path, buf, hl + count * width, 0644, &err);
  free(buf);
  if (s != SC_OK) {
    sc_cli_fail(NAME, "%s", err.msg);
    return 1;
  }
  *tokens = count;
  *dtype = u16 ? "uint16" : "int32";
  return 0;
}

static int do_batch(const sc_tokenizer *tok, const char *out, long threads, const char *sep_tok,
                    char **files, int n_files) {
  int32_t sep = sc_tokenizer_token_to_id(tok, sep_tok);
  if (sep < 0) {
    sc_cli_fail(NAME, "--sep: the tokenizer has no token '%s'", sep_tok);
    return 2;
  }
  double t0 = sc_now_ms();
  static char *stdin_name[] = {"-"};
  if (n_files == 0) {
    files = stdin_name;
    n_files = 1;
  }
  char **texts = calloc((size_t)n_files, sizeof *texts);
  tk_batch b = {.tok = tok, .sep = sep};
  size_t cap = 0, bytes = 0;
  int rc = texts ? 0 : 1;
  for (int f = 0; f < n_files && rc == 0; f++) {
    size_t len = 0;
    if (strcmp(files[f], "-") == 0) {
      rc = read_stdin(&texts[f], &len);
    } else if (!sc_cli_read_file(files[f], &texts[f], &len)) {
      sc_cli_fail(NAME, "cannot read %s: %s", files[f], strerror(errno));
      rc = 2;
    }
    bytes += len;
    if (rc == 0 && !split_lines(texts[f], len, f, &b.lines, &b.n_lines, &cap)) {
      sc_cli_fail(NAME, "out of memory splitting %s into lines", files[f]);
      rc = 1;
    }
  }
  if (rc == 0) {
    /* Jansson seeds its hash tables on first use; seed it before the
     * threads share it (jansson's "Thread safety" notes). */
    json_object_seed(0);
    pthread_mutex_init(&b.mu, NULL);
    b.err_line = b.n_lines;
    atomic_init(&b.next, 0);
    atomic_init(&b.stop, false);
    pthread_t tid[MAX_THREADS];
    long started = 0;
    for (long i = 0; i < threads && (size_t)i * LINES_PER_GRAB < b.n_lines; i++) {
      if (pthread_create(&tid[i], NULL, batch_worker, &b) != 0) break;
      started++;
    }
    if (started == 0) batch_worker(&b); /* no thread could start: this one works */
    for (long i = 0; i < started; i++) pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&b.mu);
    if (b.err_line < b.n_lines) {
      const tk_line *l = &b.lines[b.err_line];
      sc_cli_fail(NAME, "%s:%zu: %s", files[l->file], l->lineno, b.err_msg);
      rc = b.err_rc;
    } else {
      size_t tokens = 0;
      const char *dtype = "";
      rc = write_npy(out, &b, &tokens, &dtype);
      if (rc == 0)
        fprintf(stderr,
                "sculpt tokenize: %zu texts, %zu tokens (%s) from %.1f MB in %.2f s on %ld "
                "threads -> %s\n",
                b.n_lines, tokens, dtype, (double)bytes / 1e6, (sc_now_ms() - t0) / 1000.0,
                started ? started : 1, out);
    }
  }
  for (size_t i = 0; i < b.n_lines; i++) free(b.lines[i].ids);
  free(b.lines);
  for (int f = 0; texts && f < n_files; f++) free(texts[f]);
  free(texts);
  return rc;
}

int sc_cli_tokenize(int argc, char **argv) {
  const char *model = NULL, *file = NULL, *out = NULL, *sep = "<|endoftext|>";
  bool decode = false, jsonl = false, batch_opt = false;
  long threads = sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  int first_file = argc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((strcmp(a, "--model") == 0 || strcmp(a, "--tokenizer") == 0) && i + 1 < argc) {
      if (a[2] == 'm')
        model = argv[++i];
      else
        file = argv[++i];
    } else if (strcmp(a, "--decode") == 0) {
      decode = true;
    } else if (strcmp(a, "--jsonl") == 0) {
      jsonl = true;
    } else if (strcmp(a, "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
      batch_opt = true;
    } else if (strcmp(a, "--sep") == 0 && i + 1 < argc) {
      sep = argv[++i];
      batch_opt = true;
    } else if (strcmp(a, "--threads") == 0 && i + 1 < argc) {
      batch_opt = true;
      if (!sc_cli_parse_long(argv[++i], 1, MAX_THREADS, &threads)) {
        sc_cli_fail(NAME, "--threads takes 1 to %d", MAX_THREADS);
        return 2;
      }
    } else if (jsonl && (a[0] != '-' || strcmp(a, "-") == 0)) {
      first_file = i; /* the input files: the rest of the line */
      break;
    } else {
      sc_cli_fail(NAME, "unexpected argument '%s' (see `sculpt help tokenize`)", a);
      return 2;
    }
  }
  if (!model == !file) {
    sc_cli_fail(NAME, "give exactly one of --model DIR or --tokenizer FILE");
    return 2;
  }
  if (jsonl && (decode || !out)) {
    sc_cli_fail(NAME, decode ? "--jsonl encodes: it takes no --decode"
                             : "--jsonl needs --out FILE.npy");
    return 2;
  }
  if (!jsonl && batch_opt) {
    sc_cli_fail(NAME, "--out, --sep and --threads go with --jsonl");
    return 2;
  }
  sc_tokenizer *tok = NULL;
  sc_error err = {0};
  char *model_dir = NULL;
  sc_status s = model ? sc_model_resolve(model, &model_dir, &err) : SC_OK;
  if (s == SC_OK)
    s = model ? sc_tokenizer_load_dir(model_dir, &tok, &err)
              : sc_tokenizer_load_file(file, &tok, &err);
  free(model_dir);
  if (s != SC_OK) {
    sc_cli_fail(NAME, "%s", err.msg);
    return 1;
  }
  int rc = 0;
  if (jsonl) {
    rc = do_batch(tok, out, threads, sep, argv + first_file, argc - first_file);
  } else {
    char *text = NULL;
    size_t len = 0;
    rc = read_stdin(&text, &len);
    if (rc == 0) rc = decode ? do_decode(tok, text, len) : do_encode(tok, text, len);
    free(text);
  }
  sc_tokenizer_free(tok);
  if (rc == 0 && fflush(stdout) != 0) {
    sc_cli_fail(NAME, "cannot write stdout");
    rc = 1;
  }
  return rc;
}

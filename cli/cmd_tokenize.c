/* cmd_tokenize.c — `sculpt tokenize (--model DIR | --tokenizer FILE) [--decode]`.
 * Encode: raw stdin bytes -> one line of ids separated by single spaces.
 * Decode: ids separated by spaces, commas or newlines -> the exact bytes.
 * No special tokens are added. Exit 0 ok, 2 usage/input error, 1 failure. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int sc_cli_tokenize(int argc, char **argv) {
  const char *model = NULL, *file = NULL;
  bool decode = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((strcmp(a, "--model") == 0 || strcmp(a, "--tokenizer") == 0) && i + 1 < argc) {
      if (a[2] == 'm')
        model = argv[++i];
      else
        file = argv[++i];
    } else if (strcmp(a, "--decode") == 0) {
      decode = true;
    } else {
      sc_cli_fail(NAME, "unexpected argument '%s' (see `sculpt help tokenize`)", a);
      return 2;
    }
  }
  if (!model == !file) {
    sc_cli_fail(NAME, "give exactly one of --model DIR or --tokenizer FILE");
    return 2;
  }
  sc_tokenizer *tok = NULL;
  sc_error err = {0};
  sc_status s = model ? sc_tokenizer_load_dir(model, &tok, &err)
                      : sc_tokenizer_load_file(file, &tok, &err);
  if (s != SC_OK) {
    sc_cli_fail(NAME, "%s", err.msg);
    return 1;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = read_stdin(&text, &len);
  if (rc == 0) rc = decode ? do_decode(tok, text, len) : do_encode(tok, text, len);
  free(text);
  sc_tokenizer_free(tok);
  if (rc == 0 && fflush(stdout) != 0) {
    sc_cli_fail(NAME, "cannot write stdout");
    rc = 1;
  }
  return rc;
}

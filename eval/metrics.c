/* metrics.c — exact match, character similarity and McNemar's test
 * (eval.h). */
#include "eval_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIM_MAX 4096 /* characters compared at most on each side */

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* s without each line's trailing blanks and without its trailing newlines
 * (Python: "\n".join(l.rstrip() for l in s.rstrip("\n").split("\n"))),
 * into out (at least n bytes); returns its length. */
static size_t normalize(const char *s, size_t n, char *out) {
  while (n > 0 && s[n - 1] == '\n') n--;
  size_t o = 0, line_start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '\n') {
      size_t e = i;
      while (e > line_start && blank(s[e - 1])) e--;
      memcpy(out + o, s + line_start, e - line_start);
      o += e - line_start;
      if (i < n) out[o++] = '\n';
      line_start = i + 1;
    }
  }
  return o;
}

bool sc_eval_exact(const char *a, size_t al, const char *b, size_t bl) {
  char *x = malloc(al + 1), *y = malloc(bl + 1);
  bool same = false;
  if (x && y) {
    size_t xl = normalize(a, al, x), yl = normalize(b, bl, y);
    same = xl == yl && memcmp(x, y, xl) == 0;
  }
  free(x);
  free(y);
  return same;
}

double sc_eval_similarity(const char *a, size_t al, const char *b, size_t bl) {
  char *x = malloc(al + 1), *y = malloc(bl + 1);
  size_t *row = NULL;
  double r = 0;
  if (x && y) {
    size_t n = normalize(a, al, x), m = normalize(b, bl, y);
    if (n > SIM_MAX) n = SIM_MAX;
    if (m > SIM_MAX) m = SIM_MAX;
    if (n + m == 0) {
      r = 1;
    } else if ((row = calloc(m + 1, sizeof *row))) {
      /* The longest common subsequence, one row at a time. */
      for (size_t i = 1; i <= n; i++) {
        size_t diag = 0;
        for (size_t j = 1; j <= m; j++) {
          size_t up = row[j];
          row[j] = x[i - 1] == y[j - 1] ? diag + 1 : (row[j] > row[j - 1] ? row[j] : row[j - 1]);
          diag = up;
        }
      }
      r = 2.0 * (double)row[m] / (double)(n + m);
    }
  }
  free(row);
  free(x);
  free(y);
  return r;
}

double sc_eval_mcnemar_p(long b, long c) {
  if (b < 0 || c < 0) return NAN;
  long n = b + c, k = b < c ? b : c;
  if (n == 0) return 1.0;
  /* 2 sum_{i <= k} C(n, i) 2^-n, summed in logs (n may be thousands). */
  double lg_n1 = lgamma((double)n + 1), top = -INFINITY, acc = 0;
  double *terms = malloc(((size_t)k + 1) * sizeof *terms);
  if (!terms) return NAN;
  for (long i = 0; i <= k; i++) {
    terms[i] = lg_n1 - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) - (double)n * log(2.0);
    if (terms[i] > top) top = terms[i];
  }
  for (long i = 0; i <= k; i++) acc += exp(terms[i] - top);
  free(terms);
  double p = 2.0 * exp(top + log(acc));
  return p > 1.0 ? 1.0 : p;
}

size_t sc_eval__first_lines(const char *s, size_t n, int k) {
  size_t i = 0;
  for (int line = 0; line < k && i < n; line++) {
    const char *nl = memchr(s + i, '\n', n - i);
    i = nl ? (size_t)(nl - s) + 1 : n;
  }
  return i;
}

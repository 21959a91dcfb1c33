/* diff.c — a unified diff of a file's change (git-style headers, 3 lines of
 * context): what a batch dry run prints and its JSON report carries. */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */
#include "edit_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct lines {
  size_t n;
  size_t *start; /* n + 1 entries: line i is [start[i], start[i+1]) */
} lines;

static bool split_lines(const char *t, size_t len, lines *out) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) n += t[i] == '\n';
  if (len > 0 && t[len - 1] != '\n') n++;
  out->n = n;
  out->start = malloc((n + 1) * sizeof *out->start);
  if (!out->start) return false;
  size_t k = 0;
  out->start[k++] = 0;
  for (size_t i = 0; i < len; i++)
    if (t[i] == '\n' && k <= n) out->start[k++] = i + 1;
  out->start[n] = len;
  return true;
}

static void put_line(FILE *o, char tag, const char *t, const lines *L, size_t i) {
  size_t a = L->start[i], b = L->start[i + 1];
  fputc(tag, o);
  fwrite(t + a, 1, b - a, o);
  if (b == a || t[b - 1] != '\n') fputs("\n\\ No newline at end of file\n", o);
}

void sc_edit_diff_write(FILE *o, const char *path, const char *old, size_t old_len,
                        const char *nw, size_t new_len) {
  if (old_len == new_len && memcmp(old, nw, old_len) == 0) return;
  lines A = {0}, B = {0};
  if (!split_lines(old, old_len, &A) || !split_lines(nw, new_len, &B)) {
    free(A.start);
    free(B.start);
    return;
  }
  fprintf(o, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", path, path, path, path);
#define LINE_EQ(i, j)                                                                      \
  (A.start[(i) + 1] - A.start[i] == B.start[(j) + 1] - B.start[j] &&                       \
   memcmp(old + A.start[i], nw + B.start[j], A.start[(i) + 1] - A.start[i]) == 0)
  /* Common prefix and suffix lines, then an LCS table over the middle
   * (sites are small, so the middle is too); a huge middle is one block. */
  typedef struct blk { size_t i0, i1, j0, j1; } blk;
  blk *blocks = NULL;
  size_t nb = 0, p = 0, sfx = 0;
  while (p < A.n && p < B.n && LINE_EQ(p, p)) p++;
  while (sfx < A.n - p && sfx < B.n - p && LINE_EQ(A.n - 1 - sfx, B.n - 1 - sfx)) sfx++;
  size_t n = A.n - p - sfx, m = B.n - p - sfx;
  uint32_t *dp = (n + 1) * (m + 1) <= 40000000u ? calloc((n + 1) * (m + 1), sizeof *dp) : NULL;
  if (dp) {
    for (size_t x = n; x-- > 0;)
      for (size_t y = m; y-- > 0;)
        dp[x * (m + 1) + y] = LINE_EQ(p + x, p + y)
                                  ? dp[(x + 1) * (m + 1) + y + 1] + 1
                                  : (dp[(x + 1) * (m + 1) + y] > dp[x * (m + 1) + y + 1]
                                         ? dp[(x + 1) * (m + 1) + y]
                                         : dp[x * (m + 1) + y + 1]);
  }
  size_t x = 0, y = 0;
  while (x < n || y < m) {
    if (dp && x < n && y < m && LINE_EQ(p + x, p + y)) {
      x++;
      y++;
      continue;
    }
    size_t x0 = x, y0 = y;
    if (!dp) {
      x = n;
      y = m;
    } else {
      while ((x < n || y < m) && !(x < n && y < m && LINE_EQ(p + x, p + y))) {
        if (y == m || (x < n && dp[(x + 1) * (m + 1) + y] >= dp[x * (m + 1) + y + 1])) x++;
        else y++;
      }
    }
    blk *nbk = realloc(blocks, (nb + 1) * sizeof *nbk);
    if (!nbk) break;
    blocks = nbk;
    blocks[nb++] = (blk){p + x0, p + x, p + y0, p + y};
  }
  free(dp);
  /* Group blocks into hunks with 3 lines of context. */
  for (size_t k = 0; k < nb;) {
    size_t last = k;
    while (last + 1 < nb && blocks[last + 1].i0 - blocks[last].i1 <= 6) last++;
    size_t i0 = blocks[k].i0 > 3 ? blocks[k].i0 - 3 : 0;
    size_t j0 = blocks[k].j0 - (blocks[k].i0 - i0);
    size_t i1 = blocks[last].i1 + 3 < A.n ? blocks[last].i1 + 3 : A.n;
    size_t j1 = blocks[last].j1 + (i1 - blocks[last].i1);
    fprintf(o, "@@ -%zu,%zu +%zu,%zu @@\n", i1 > i0 ? i0 + 1 : i0, i1 - i0,
            j1 > j0 ? j0 + 1 : j0, j1 - j0);
    size_t ci = i0, cj = j0;
    for (size_t q = k; q <= last; q++) {
      for (; ci < blocks[q].i0; ci++, cj++) put_line(o, ' ', old, &A, ci);
      for (; ci < blocks[q].i1; ci++) put_line(o, '-', old, &A, ci);
      for (; cj < blocks[q].j1; cj++) put_line(o, '+', nw, &B, cj);
    }
    for (; ci < i1; ci++, cj++) put_line(o, ' ', old, &A, ci);
    k = last + 1;
  }
#undef LINE_EQ
  free(blocks);
  free(A.start);
  free(B.start);
}

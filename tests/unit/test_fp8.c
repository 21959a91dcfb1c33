/* test_fp8.c — the FP8 (e4m3) weight rule's host reference (kernels/plan.c;
 * the device quantizer is checked against it in tests/gpu): every code
 * decodes and encodes back to itself, ties between neighbours go to the
 * even code, large values saturate at +-448 and NaN stays NaN, and whole
 * rows (the scale, then each code) equal numpy's rendering of the rule
 * (tests/unit/fp8_numpy.py, its own decoding of the format), on rows with
 * subnormals, ties, zeros and a zero row. */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "sc_test.h"
#include "sc_test_tmp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_codes(void) {
  for (int c = 0; c < 256; c++) {
    if ((c & 0x7f) == 0x7f) {
      EXPECT(isnan(sc_kernels_fp8_to_float((uint8_t)c)));
      continue;
    }
    const float v = sc_kernels_fp8_to_float((uint8_t)c);
    EXPECTF(sc_kernels_fp8_from_float(v) == c, "code 0x%02x (%g) -> 0x%02x", c, v,
            sc_kernels_fp8_from_float(v));
  }
  EXPECT(sc_kernels_fp8_to_float(0x7e) == 448.0f && sc_kernels_fp8_to_float(0x01) == 0x1p-9f &&
         sc_kernels_fp8_to_float(0x08) == 0x1p-6f && sc_kernels_fp8_to_float(0xb8) == -1.0f);
  /* Midpoints between neighbours: to the even code; just off them: the nearer. */
  for (int c = 0; c < 0x7e; c++) {
    const float a = sc_kernels_fp8_to_float((uint8_t)c), b = sc_kernels_fp8_to_float((uint8_t)(c + 1));
    const float mid = (a + b) / 2;
    const int even = c % 2 == 0 ? c : c + 1;
    EXPECTF(sc_kernels_fp8_from_float(mid) == even, "midpoint %g of 0x%02x: 0x%02x", mid, c,
            sc_kernels_fp8_from_float(mid));
    EXPECT(sc_kernels_fp8_from_float(nextafterf(mid, 0.0f)) == c);
    EXPECT(sc_kernels_fp8_from_float(nextafterf(mid, 1e9f)) == c + 1);
  }
  EXPECT(sc_kernels_fp8_from_float(464.0f) == 0x7e && sc_kernels_fp8_from_float(1e30f) == 0x7e);
  EXPECT(sc_kernels_fp8_from_float(-1e30f) == 0xfe && sc_kernels_fp8_from_float(INFINITY) == 0x7e);
  EXPECT(sc_kernels_fp8_from_float(NAN) == 0x7f && sc_kernels_fp8_from_float(-0.0f) == 0x80);
  EXPECT(sc_kernels_fp8_from_float(0x1p-11f) == 0x00); /* under half the smallest: 0 */
  float s;
  uint8_t q[3];
  const float zero[3] = {0, 0, 0};
  sc_kernels_fp8_quantize_row(zero, 3, q, &s);
  EXPECT(s == 1.0f && q[0] == 0 && q[2] == 0);
}

static void test_against_numpy(void) {
  enum { R = 6, C = 700 };
  static float w[R][C];
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const double u = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
      /* Rows of different spreads: the small ones land in the subnormals. */
      w[r][c] = (float)(u * pow(10.0, r - 3) * (c % 50 == 0 ? 30 : 1));
    }
  for (int c = 0; c < C; c++) w[4][c] = 0.0f;            /* a zero row */
  /* Row 5: scale 1 (its max 448), so these are exact ties between
   * neighbours (1 | 1.125, 0.5 | 0.5625, 3 * 2^-10 between 2^-9 and 2^-8). */
  for (int c = 0; c < C; c++) w[5][c] = w[5][c] / 100.0f;
  w[5][0] = 448.0f, w[5][1] = 1.0625f, w[5][2] = -0.53125f, w[5][3] = 0x3p-10f;
  char dir[256];
  REQUIRE(sc_test_mkdtemp(dir, sizeof dir, "sculpt-fp8"));
  char in[300], out[300], cmd[800];
  snprintf(in, sizeof in, "%s/in.bin", dir);
  snprintf(out, sizeof out, "%s/out.bin", dir);
  FILE *f = fopen(in, "wb");
  REQUIRE(f);
  const uint32_t dims[2] = {R, C};
  fwrite(dims, sizeof dims, 1, f);
  fwrite(w, sizeof w, 1, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/unit/fp8_numpy.py %s %s", SC_TEST_DATA_DIR, in,
           out);
  const int rc = system(cmd);
  if (rc != 0) {
    sc_test_remove_tree(dir);
    EXPECTF(0, "%s failed (%d): python3-numpy is one of the test packages", cmd, rc);
    return;
  }
  f = fopen(out, "rb");
  REQUIRE(f);
  int bad_codes = 0, bad_scales = 0;
  for (int r = 0; r < R; r++) {
    float ns;
    uint8_t nq[C], q[C];
    float s;
    REQUIRE(fread(&ns, sizeof ns, 1, f) == 1 && fread(nq, 1, C, f) == (size_t)C);
    sc_kernels_fp8_quantize_row(w[r], C, q, &s);
    bad_scales += s != ns;
    for (int c = 0; c < C; c++) bad_codes += q[c] != nq[c];
  }
  fclose(f);
  sc_test_remove_tree(dir);
  EXPECTF(bad_scales == 0 && bad_codes == 0, "%d scales and %d codes differ from numpy's",
          bad_scales, bad_codes);
}

int main(void) {
  RUN(test_codes);
  RUN(test_against_numpy);
  TEST_MAIN_END();
}

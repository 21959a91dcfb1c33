"""The FP8 (e4m3) weight rule of kernels.h in numpy, for tests/unit/test_fp8.c:
reads rows of float32 (IN: u32 rows, u32 cols, then the values), writes per
row the scale (float32, max|w| / 448, 1 for a zero row) and the e4m3 codes
of w / scale (OUT). The codes come from the grid of every finite e4m3
value, decoded here from the format's definition (OCP 8-bit floating
point, E4M3: bias 7, subnormals m * 2^-9, S.1111.111 NaN, no infinities),
by nearest value, ties to the even code, saturating at +-448."""
import sys

import numpy as np


def grid():
    codes = np.arange(0x7f, dtype=np.int64)  # 0x00..0x7e: the finite non-negative ones
    e, m = codes >> 3, codes & 7
    return np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7.0))


def quantize(x, vals):
    a = np.minimum(np.abs(x).astype(np.float64), 448.0)
    d = np.abs(a[:, None] - vals[None, :])
    best = d.min(axis=1, keepdims=True)
    tie = d == best
    # Ties to even: among the nearest codes, the even one.
    code = np.where(tie.sum(axis=1) > 1, np.argmax(tie & (np.arange(len(vals)) % 2 == 0), axis=1),
                    np.argmin(d, axis=1))
    return (code | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def main():
    src, dst = sys.argv[1:]
    raw = open(src, "rb").read()
    rows, cols = np.frombuffer(raw[:8], dtype="<u4")
    w = np.frombuffer(raw[8:], dtype="<f4").reshape(rows, cols)
    vals = grid()
    with open(dst, "wb") as f:
        for r in w:
            amax = np.abs(r).max()
            s = np.float32(amax) / np.float32(448.0) if amax > 0 else np.float32(1.0)
            f.write(np.float32(s).tobytes())
            f.write(quantize((r / s).astype(np.float32), vals).tobytes())


if __name__ == "__main__":
    main()

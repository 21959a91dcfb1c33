"""This machine's f32 matrix-product peak for the CPU benchmarks: builds
tools/bench/sgemm_peak.c (OpenBLAS cblas_sgemm and oneDNN's matmul over
pre-reordered weights, N^3) and runs it with T threads. Returns both
libraries' GFLOP/s; the peak is the larger (see sgemm_peak.c for why both).
Needs a C compiler, libopenblas-dev and libdnnl-dev (tools/bootstrap.sh
installs them)."""
import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "sgemm_peak.c")


def build(out_dir=None):
    out_dir = out_dir or os.path.join(tempfile.gettempdir(), f"sculpt-peak-{os.getuid()}")
    os.makedirs(out_dir, exist_ok=True)
    exe = os.path.join(out_dir, "sgemm_peak")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(SRC):
        subprocess.run(["cc", "-O2", "-o", exe, SRC, "-ldnnl", "-lopenblas"], check=True)
    return exe


def sgemm_peak(threads, n=2048, repeat=5):
    """{"openblas": GFLOP/s, "onednn": GFLOP/s, "impl": str, "peak": max,
    "library": the faster one's name, "bf16": oneDNN's bf16 GFLOP/s,
    "bf16_impl", "int8": its s8 x s8 -> s32 GOP/s, "int8_impl"}."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OMP_WAIT_POLICY="PASSIVE")
    r = subprocess.run([build(), str(n), str(repeat)], capture_output=True, text=True, env=env,
                       check=True)
    m = re.search(r"openblas_gflops=(\S+) onednn_gflops=(\S+) onednn_impl=(\S+) "
                  r"bf16_gflops=(\S+) bf16_impl=(\S+) int8_gops=(\S+) int8_impl=(\S+)", r.stdout)
    blas, dnn = float(m.group(1)), float(m.group(2))
    return {"openblas": blas, "onednn": dnn, "impl": m.group(3), "peak": max(blas, dnn),
            "library": "oneDNN matmul" if dnn > blas else "OpenBLAS sgemm",
            "bf16": float(m.group(4)), "bf16_impl": m.group(5), "int8": float(m.group(6)),
            "int8_impl": m.group(7)}


def describe(p, threads, n=2048):
    return (f"f32 {n}^3 with {threads} threads: OpenBLAS sgemm {p['openblas']:.1f}, oneDNN "
            f"matmul ({p['impl']}) {p['onednn']:.1f} GFLOP/s; peak {p['peak']:.1f} "
            f"({p['library']}); oneDNN bf16 ({p['bf16_impl']}) {p['bf16']:.1f} GFLOP/s, "
            f"int8 s8 x s8 ({p['int8_impl']}) {p['int8']:.1f} GOP/s")


if __name__ == "__main__":
    import sys
    t = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count()
    print(describe(sgemm_peak(t), t))

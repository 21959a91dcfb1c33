"""tools/gpu_engine_report.py on logs shaped like a device run's (no GPU
needed): the parity lines name the failed kernel test and the paths whose
forward parity failed, the switches in effect; the profile, switch, key
split, infill and peer tables hold the figures of the logs; each target is
judged from them (met / NOT met) and a target without figures says so.
The GPU session has no time to find a broken report, so it is checked here."""
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("SCULPT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
REPORT = os.path.join(SRC, "tools", "gpu_engine_report.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as d:
    def w(name, text):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)

    w("check-kernels.log", "device: H200\nok   test_embed\n"
      "x.cu:1: EXPECT failed: e >= 0: attention mma nh 28 err 0.5\nFAIL test_attention_mma\n"
      "10 checks, 1 failures\n")
    w("check-forward-defaults.log", "paths: as the environment says\n"
      "t.c:9: EXPECT failed: e <= TOL: dream-bf16: full pass rel err 0.3 > 0.05\n"
      "40 checks, 1 failures\n")
    w("check-forward-attn-simt.log", "paths: as the environment says\n40 checks, 0 failures\n")
    w("switches.env", "export SCULPT_CUDA_ATTN=simt\n")
    prof = []
    for mode, scale in (("graph", 1.0), ("eager", 1.5)):
        for kind, ms in (("gemm_qkv", 0.5), ("attention", 0.25), ("head_gemm", 0.25),
                         ("total", 1.0)):
            prof.append(f"PROFILE model=dream-7b context=512 canvas=32 mode={mode} kind={kind} "
                        f"groups=28 ms={ms * scale:.4f}")
    w("profile-dream-7b.log", "\n".join(prof) + "\n"
      "AB model=dream-7b context=512 canvas=32 variant=default ms=4.0000 mean_ms=4.1\n"
      "AB model=dream-7b context=512 canvas=32 variant=attn=simt ms=5.5000 mean_ms=5.6\n"
      "AB model=dream-7b context=4096 canvas=32 variant=default ms=5.0000 mean_ms=5.1\n"
      "CHUNKS model=dream-7b context=4096 canvas=32 chunks=auto attn=mma ms=5.0000\n"
      "CHUNKS model=dream-7b context=4096 canvas=32 chunks=1 attn=mma ms=9.0000\n")
    w("infill-dream-7b.log",
      "INFILL impl=sculpt model=dream-7b device=cuda context=512 canvas=32 per_step=4 "
      "ms=30.0000 tok_s=1066.7 passes=8 committed=32 full_passes=1 window_steps=7 "
      "full_ms=6.0 window_ms=3.5 steps_sum_ms=30.5 fwd_ms=29.0 host_ms=1.0 overhead_pct=-1.64 "
      "captures=0 replays=80 syncs_per_pass=1.00\n"
      "INFILL impl=sculpt model=dream-7b device=cuda context=4096 canvas=32 per_step=4 "
      "ms=40.0000 tok_s=800.0 passes=8 committed=32 full_passes=1 window_steps=7 "
      "full_ms=12.0 window_ms=3.5 steps_sum_ms=36.5 fwd_ms=39.0 host_ms=1.0 overhead_pct=9.59 "
      "captures=0 replays=80 syncs_per_pass=1.00\n")
    w("steps-dream-7b.log",
      "RESULT impl=sculpt model=dream-7b context=512 canvas=32 ms=4.0000 roofline_ms=2.9440 "
      "tok_s=1000.0\n"
      "RESULT impl=sculpt model=dream-7b context=4096 canvas=32 ms=5.0000 roofline_ms=2.9866 "
      "tok_s=800.0\n")
    w("torch-dream-7b.log", "RESULT impl=torch model=dream-7b context=4096 canvas=32 ms=15.0000\n")
    w("torch-compile-dream-7b.log",
      "RESULT impl=torch_compile model=dream-7b context=4096 canvas=32 ms=4.5000\n")
    p = subprocess.run([sys.executable, REPORT, d, "--device", "NVIDIA H200"],
                       capture_output=True, text=True, timeout=60)
    out = p.stdout
    check(p.returncode == 0, f"exit 0 ({p.returncode}: {p.stderr[-300:]})")
    check("FAILED: test_attention_mma" in out, "the failed kernel test is named")
    check("paths `defaults`: 1 failures of 40 checks" in out and
          "paths `attn-simt`: 0 failures of 40 checks" in out, "each set of paths' parity")
    check("switches parity turned: `SCULPT_CUDA_ATTN=simt`" in out, "the switches in effect")
    # The switches the check phase derives: the mma kernel failed; the
    # defaults failed the forward parity and simt alone passed.
    q = subprocess.run([sys.executable, REPORT, d, "--switches"], capture_output=True, text=True,
                       timeout=60)
    check(q.stdout == "export SCULPT_CUDA_ATTN=simt\n", f"--switches: {q.stdout!r}")
    w("check-forward-attn-simt.log", "t.c:3: EXPECT failed: x\n40 checks, 1 failures\n")
    w("check-forward-fuse-off.log", "40 checks, 0 failures\n")
    w("check-forward-head-host.log", "no CUDA device: x; skipping the CUDA forward parity test\n")
    w("check-kernels.log", "ok   test_attention_mma\nFAIL test_gemm_narrow\n")
    q = subprocess.run([sys.executable, REPORT, d, "--switches"], capture_output=True, text=True,
                       timeout=60)
    check(q.stdout == "export SCULPT_CUDA_FUSE=0\nexport SCULPT_CUDA_GEMM=cublas\n",
          f"--switches: the path whose turning off alone passes, and the failed GEMM: {q.stdout!r}")
    w("check-forward-fuse-off.log", "40 checks, 2 failures\n")
    q = subprocess.run([sys.executable, REPORT, d, "--switches"], capture_output=True, text=True,
                       timeout=60)
    check("export SCULPT_CUDA_ATTN=simt\nexport SCULPT_CUDA_FUSE=0\nexport SCULPT_CUDA_GEMM=cublas\n"
          "export SCULPT_CUDA_HEAD=host\n" == q.stdout,
          f"--switches: none passes alone, every new path off: {q.stdout!r}")
    w("check-forward-defaults.log", "no CUDA device: x; skipping the CUDA forward parity test\n")
    w("check-kernels.log", "no CUDA device: x; skipping the kernel parity tests\n")
    q = subprocess.run([sys.executable, REPORT, d, "--switches"], capture_output=True, text=True,
                       timeout=60)
    check(q.stdout == "", f"--switches: skipped tests turn nothing off: {q.stdout!r}")
    # --prefer: a variant 3% faster at every point is kept; one that is not,
    # or that parity turned, is not.
    w("ab.log", "AB model=m context=512 canvas=32 variant=default ms=4.0 mean_ms=4\n"
      "AB model=m context=512 canvas=32 variant=gemm=narrow ms=3.0 mean_ms=3\n"
      "AB model=m context=512 canvas=32 variant=fuse=off ms=3.0 mean_ms=3\n"
      "AB model=m context=4096 canvas=32 variant=default ms=5.0 mean_ms=5\n"
      "AB model=m context=4096 canvas=32 variant=gemm=narrow ms=4.8 mean_ms=4.8\n"
      "AB model=m context=4096 canvas=32 variant=fuse=off ms=4.99 mean_ms=5\n")
    q = subprocess.run([sys.executable, REPORT, d, "--prefer", os.path.join(d, "ab.log")],
                       capture_output=True, text=True, timeout=60)
    check(q.stdout == "export SCULPT_CUDA_GEMM=narrow\n", f"--prefer: {q.stdout!r}")
    w("check-kernels.log", "FAIL test_gemm_narrow\n")
    q = subprocess.run([sys.executable, REPORT, d, "--prefer", os.path.join(d, "ab.log")],
                       capture_output=True, text=True, timeout=60)
    check(q.stdout == "", f"--prefer: parity's choice wins: {q.stdout!r}")
    check("| attention | 28 | 0.2500 | 25.0% | 0.3750 |" in out,
          "the profile row: graph ms, share of the graph total, eager ms")
    check("| dream-7b | 512 | 32 | 4.000 | 5.500 |" in out, "the switch table's row")
    check("| dream-7b | 4096 | 32 | mma | 5.000 | 9.000 |" in out, "the key split row")
    check("| dream-7b | cuda | 512 | 32 | 4 | 30.000 | 1067 | 8 | 30.500 | -1.6% | 0 | 1.00 |" in out,
          "the infill row")
    check("| dream-7b | 4096 | 32 | 5.000 | 1.67 | 15.000 | 4.500 | 3.00 | 0.90 |" in out,
          "the peers row: roofline ratio, eager and compile over sculpt")
    check("context 512: 4.000 ms, 1.36x the roofline (target 1.5x: met; goal 1.25x: not yet)"
          in out, "the 7B step target, met against 1.5x and not the 1.25x goal")
    check("3.00x faster than eager (target 2x: met), 0.90x torch.compile (target > 1x: NOT met)"
          in out, "the peers' targets")
    check("context 512: 1067 tok/s (target 1000: met), loop overhead -1.6%" in out and
          "context 4096: 800 tok/s (target 1000: NOT met)" in out, "the infill targets")
    check("open-dcoder-0.5b canvas 32 context 512 step <= 3.0x roofline: no figures" in out,
          "a target without figures says so")
    check("open-dcoder-0.5b whole 32-token infill at 4 a step: no figures" in out,
          "an infill target without figures says so")
    check("FP8 7B step <= 2.3 ms: no figures" in out, "the FP8 target without figures")
    w("steps-dream-7b-fp8.log",
      "RESULT impl=sculpt model=dream-7b:fp8 context=512 canvas=32 ms=2.2000 roofline_ms=1.6 "
      "tok_s=1818.2\n")
    out = subprocess.run([sys.executable, REPORT, d], capture_output=True, text=True,
                         timeout=60).stdout
    check("FP8 7B step, context 512 canvas 32: 2.200 ms (target 2.3 ms: met)" in out,
          "the FP8 target judged from its step")
    # An empty folder: headings and 'no figures', no traceback.
    with tempfile.TemporaryDirectory() as e:
        q = subprocess.run([sys.executable, REPORT, e], capture_output=True, text=True, timeout=60)
        check(q.returncode == 0 and "per-kernel parity: not run" in q.stdout,
              f"empty logs: a report that says nothing ran ({q.returncode}: {q.stderr[-200:]})")
sys.exit(1 if failures else 0)

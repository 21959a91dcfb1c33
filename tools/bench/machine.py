"""The machine a benchmark ran on, named the same way by every benchmark."""
import os
import platform
import re
import shutil
import subprocess

# The CPU features sculpt's kernels choose between (kernels/, model/dnnl.c):
# a result is only comparable with another on a CPU with the same ones.
FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq",
         "avx512vl", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8",
         "asimd", "sve")


def _cpuinfo():
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def cpu_model():
    m = re.search(r"model name\s*:\s*(.*)", _cpuinfo())
    return m.group(1).strip() if m else (platform.processor() or platform.machine() or "?")


def cpu_flags():
    """The FLAGS this CPU has, in FLAGS' order; None where /proc/cpuinfo
    does not list them."""
    m = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", _cpuinfo(), re.M)
    if not m:
        return None
    have = set(m.group(1).split())
    return [f for f in FLAGS if f in have]


def gpus():
    """The GPUs nvidia-smi names, or [] (none, or no driver)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        r = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []


def describe():
    """e.g. "Intel(R) Xeon(R) Processor, 2 logical CPUs, Linux 6.1.0"."""
    return (f"{cpu_model()}, {os.cpu_count()} logical CPUs, "
            f"{platform.system()} {platform.release()}")


def info():
    """The machine as a result record holds it (tools/bench/results.py);
    the load average is the caller's to add, at the time of the figure."""
    g = gpus()
    return {"cpu": cpu_model(), "flags": cpu_flags(), "cores": os.cpu_count(),
            "gpu": ", ".join(g) if g else None,
            "os": f"{platform.system()} {platform.release()}"}

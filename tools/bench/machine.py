"""The machine a benchmark ran on, named the same way by every benchmark."""
import os
import platform
import re


def describe():
    """e.g. "Intel(R) Xeon(R) Processor, 2 logical CPUs, Linux 6.1.0"."""
    cpu = platform.processor() or platform.machine() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"

#!/usr/bin/env python3
"""What the GPU machine already holds (issue 41), as a Markdown section for
the session's results file: pretrained weights (safetensors, bin, gguf, pt,
pth, ckpt files over 10 MB, and Hugging Face hub model folders) in the
caches and Python package folders, the Python packages (`pip list`), and
the machine. If a pretrained code model is there, adapting it to masked
diffusion would beat training one from scratch.

    gpu_inventory.py [--budget SECONDS] [--root DIR ...]

Standard library only (the device's Python); bounded in time: past the
budget it says where it stopped. Never reads a file's contents.
"""
import argparse
import glob
import os
import platform
import shutil
import site
import subprocess
import sys
import time

METADATA = ("import importlib.metadata as m\n"
            "print('\\n'.join(sorted({f\"{d.metadata['Name']}=={d.version}\" "
            "for d in m.distributions()})))")
EXTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".onnx")
MIN_BYTES = 10 * 1000 * 1000


def roots():
    home = os.path.expanduser("~")
    out = [os.environ.get(k) for k in ("HF_HOME", "HF_HUB_CACHE", "TRANSFORMERS_CACHE",
                                        "TORCH_HOME", "XDG_CACHE_HOME", "VIRTUAL_ENV")]
    out += [os.path.join(home, ".cache"), "/root/.cache"] + glob.glob("/home/*/.cache")
    try:
        out += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:
        pass
    out += glob.glob("/usr/local/lib/python3*") + glob.glob("/usr/lib/python3*")
    out += ["/opt", "/models", "/data", "/workspace", "/mnt", "/srv", "/var/cache"]
    seen, res = set(), []
    for r in out:
        if r and os.path.isdir(r):
            rr = os.path.realpath(r)
            if rr not in seen and not any(rr.startswith(s + "/") for s in seen):
                seen.add(rr)
                res.append(rr)
    return res


def scan(top_dirs, deadline):
    found, hub, stopped = [], set(), None
    for top in top_dirs:
        for dp, dns, fns in os.walk(top):
            if time.time() > deadline:
                return found, hub, dp
            dns[:] = [d for d in dns if d not in (".git", "__pycache__", "node_modules")]
            for d in dns:
                if d.startswith("models--"):
                    hub.add(os.path.join(dp, d))
            for fn in fns:
                if fn.endswith(EXTS):
                    p = os.path.join(dp, fn)
                    try:
                        n = os.stat(p).st_size  # follows the hub's snapshot links
                    except OSError:
                        continue
                    if n > MIN_BYTES:
                        found.append((n, p))
    return found, hub, stopped


def run(cmd, timeout=30):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (p.stdout or p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"({cmd[0]}: {e})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=float, default=60)
    ap.add_argument("--root", action="append", default=None)
    a = ap.parse_args()
    t0 = time.time()
    top = a.root or roots()
    found, hub, stopped = scan(top, t0 + a.budget)
    print("## Machine inventory (pretrained weights already here, Python packages)")
    print()
    print(f"- host: {platform.node() or '?'}, {os.cpu_count()} CPUs, {platform.platform()}, "
          f"Python {platform.python_version()} ({sys.executable})")
    if shutil.which("nvidia-smi"):
        print(f"- GPUs: {run(['nvidia-smi', '-L']).replace(chr(10), '; ')}")
    du = shutil.disk_usage("/")
    print(f"- disk /: {du.free / 1e9:.0f} GB free of {du.total / 1e9:.0f} GB")
    print(f"- searched ({time.time() - t0:.1f} s{', STOPPED at the time budget in ' + stopped if stopped else ''}): "
          + ", ".join(top))
    print(f"- weight files over {MIN_BYTES // 1000000} MB ({', '.join(EXTS)}): {len(found)}")
    for n, p in sorted(found, key=lambda x: -x[0])[:60]:
        print(f"  - {n / 1e6:,.0f} MB  {p}")
    if len(found) > 60:
        print(f"  - ... {len(found) - 60} more")
    print(f"- Hugging Face hub model folders: {len(hub)}")
    for h in sorted(hub)[:40]:
        print(f"  - {os.path.basename(h)[len('models--'):].replace('--', '/')}  ({h})")
    print()
    pips = []
    for py in dict.fromkeys([sys.executable, shutil.which("python3") or "", "/usr/bin/python3"]):
        if py and os.path.exists(py):
            how = "pip list"
            out = run([py, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                      timeout=60)
            if "No module named pip" in out or not out:
                # No pip in that interpreter: its installed distributions all the same.
                how = "importlib.metadata (no pip)"
                out = run([py, "-c", METADATA], timeout=60)
            pips.append((py, how, out))
    for py, how, out in pips:
        lines = out.splitlines()
        print(f"<details><summary>{how} ({py}): {len(lines)} packages</summary>")
        print()
        print("```")
        print(out)
        print("```")
        print("</details>")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

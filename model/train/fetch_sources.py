#!/usr/bin/env python3
"""Fetch more permissively licensed code through the two registries these
machines reach (Debian's apt and npm), for corpus.py.

The code installed on a build machine is only ~21 MB (CPython's stdlib, a
few Python libraries, some npm tools); a 14M-parameter model wants several
times that. This downloads the packages listed in sources.txt, without
installing anything, and unpacks each into its own folder:

  OUT/deb/<pkg>/   `apt-get download` + `dpkg -x`   (binary packages: Python
                   libraries ship their .py files; the DEP-5 copyright file
                   is at usr/share/doc/<pkg>/copyright)
  OUT/src/<pkg>/   `apt-get source --download-only` + tar (C sources; the
                   copyright file is debian/copyright). Debian's sources are
                   reached through a private apt configuration under OUT/apt
                   (deb-src of the machine's own mirrors), so the system's
                   apt state is not touched.
  OUT/npm/<name>/  `npm pack` + tar (package/package.json has the license)

Licenses are NOT decided here: corpus.py checks every package (every
License: field of a DEP-5 file, or package.json's license) and drops the
ones that are not permissive. A package that fails to download is logged and
skipped. Already unpacked packages are kept, so a second run only fetches
what is missing.

    fetch_sources.py OUT [--list sources.txt] [--only deb|src|npm]
    corpus.py CORPUS --deb-root OUT/deb --src-root OUT/src --npm-root OUT/npm ...
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def read_list(path):
    items = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or parts[0] not in ("deb", "src", "npm"):
                sys.exit(f"{path}:{n}: expected 'deb|src|npm NAME', got {line!r}")
            items.append((parts[0], parts[1]))
    return items


def run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    return r.returncode, r.stdout


def slug(name):
    return name.lstrip("@").replace("/", "__").split("@")[0] if name.startswith("@") \
        else name.split("@")[0]


def src_apt_options(out):
    """apt options for a private deb-src configuration mirroring the system's
    deb entries (deb822 .sources files and one-line .list files)."""
    d = os.path.join(out, "apt")
    parts = os.path.join(d, "parts")
    lists = os.path.join(d, "lists")
    os.makedirs(os.path.join(lists, "partial"), exist_ok=True)
    os.makedirs(parts, exist_ok=True)
    for f in glob.glob("/etc/apt/sources.list.d/*.sources"):
        with open(f) as fh:
            text = fh.read()
        # The security suite's index can name versions the mirror here does
        # not serve (404s); the release suites are enough for a corpus.
        stanzas = [st for st in re.split(r"\n\s*\n", text) if "security" not in st]
        text = "\n\n".join(stanzas)
        text = "\n".join("Types: deb-src" if l.strip() == "Types: deb" else l
                         for l in text.split("\n"))
        with open(os.path.join(parts, os.path.basename(f)), "w") as fh:
            fh.write(text)
    lines = []
    for f in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list"):
        if os.path.exists(f):
            with open(f) as fh:
                lines += ["deb-src" + l[3:] for l in fh
                          if l.startswith("deb ") and "security" not in l]
    with open(os.path.join(parts, "sculpt-src.list"), "w") as fh:
        fh.write("".join(lines))
    return ["-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={parts}",
            "-o", f"Dir::State::Lists={lists}"]


def fetch_deb(out, name):
    dest = os.path.join(out, "deb", name)
    if os.path.isdir(dest):
        return True, "kept"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        rc, log = run(["apt-get", "download", name], cwd=tmp)
        debs = glob.glob(os.path.join(tmp, "*.deb"))
        if rc != 0 or not debs:
            return False, log.strip().splitlines()[-1:] or ["apt-get download failed"]
        stage = os.path.join(tmp, "x")
        rc, log = run(["dpkg-deb", "-x", debs[0], stage])
        if rc != 0:
            return False, log
        os.replace(stage, dest)
    return True, "fetched"


def fetch_src(out, name, apt_opts, updated):
    dest = os.path.join(out, "src", name)
    if os.path.isdir(dest):
        return True, "kept"
    if not updated[0]:
        rc, log = run(["apt-get"] + apt_opts + ["update"])
        if rc != 0:
            return False, "apt-get update (deb-src) failed: " + log[-300:]
        updated[0] = True
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        rc, log = run(["apt-get"] + apt_opts + ["source", "--download-only", name], cwd=tmp)
        tars = sorted(t for t in glob.glob(os.path.join(tmp, "*.tar.*"))
                      if not t.endswith((".asc", ".sig")))  # signatures
        if rc != 0 or not tars:
            return False, log.strip().splitlines()[-1:] or ["apt-get source failed"]
        stage = os.path.join(tmp, "x")
        os.makedirs(stage)
        for t in tars:  # the .orig tarball(s) and the debian/ tarball
            rc, log = run(["tar", "-xf", t, "-C", stage])
            if rc != 0:
                return False, log
        os.replace(stage, dest)
    return True, "fetched"


def fetch_npm(out, name):
    dest = os.path.join(out, "npm", slug(name))
    if os.path.isdir(dest):
        return True, "kept"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        rc, log = run(["npm", "pack", "--silent", name], cwd=tmp)
        tgz = glob.glob(os.path.join(tmp, "*.tgz"))
        if rc != 0 or not tgz:
            return False, log.strip().splitlines()[-1:] or ["npm pack failed"]
        stage = os.path.join(tmp, "x")
        os.makedirs(stage)
        rc, log = run(["tar", "-xzf", tgz[0], "-C", stage])
        if rc != 0:
            return False, log
        os.replace(stage, dest)
    return True, "fetched"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--list", default=os.path.join(HERE, "sources.txt"))
    ap.add_argument("--only", choices=("deb", "src", "npm"))
    a = ap.parse_args()
    a.out = os.path.abspath(a.out)  # apt runs in temporary folders below it
    os.makedirs(a.out, exist_ok=True)
    for k in ("deb", "src", "npm"):
        os.makedirs(os.path.join(a.out, k), exist_ok=True)
    items = [it for it in read_list(a.list) if not a.only or it[0] == a.only]
    apt_opts = src_apt_options(a.out) if any(k == "src" for k, _ in items) else []
    updated = [False]
    ok = bad = 0
    for kind, name in items:
        if kind == "deb":
            good, why = fetch_deb(a.out, name)
        elif kind == "src":
            good, why = fetch_src(a.out, name, apt_opts, updated)
        else:
            good, why = fetch_npm(a.out, name)
        ok += good
        bad += not good
        print(f"{kind} {name}: {why if isinstance(why, str) else ' '.join(why)}", flush=True)
    shutil.rmtree(os.path.join(a.out, "apt", "lists"), ignore_errors=True)
    print(f"fetch_sources: {ok} packages ready, {bad} failed, in {a.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# tools/gpu_bundle.sh — the prepared binaries for the GPU machine, which has
# CUDA and PyTorch but none of our Debian libraries (jansson, libev,
# tree-sitter, PCRE2, utf8proc, OpenBLAS, http-parser, libcurl, libgit2) and
# no package registry: build here with CUDA for sm_90 (+ compute_90 PTX),
# and pack the binaries with the shared libraries they load.
#
#   tools/gpu_bundle.sh [BUILD [OUT.tar.xz]]
#     BUILD    build folder (default build-carry; configured here when new:
#              Release, CUDA, -Werror, SCULPT_CUDA_ARCHITECTURES=90)
#     OUT      default build-train/gpu-carry/bin.tar.xz
#
# The tarball holds one folder, prebuilt/, laid out like the build folder
# for what the GPU steps run: sculpt, the gpu-labelled test executables
# (tests/gpu/...), lib/ (the ldd closure of all of them, less glibc, the
# C++ runtime and libgcc, which the machine has, and the CUDA driver, which
# must be the machine's own; cuBLAS is opened at run time from the machine's
# toolkit; the executables find lib/ through their RPATH, $ORIGIN-relative,
# so no LD_LIBRARY_PATH is needed), gpu-tests.json (ctest's list of the gpu tests with the paths
# written @BUILD@ @SRC@ @PY@, for tests/gpu/replay.py) and BUILD-INFO.
# tests/gpu/run.sh unpacks it when SCULPT_GPU_PREBUILT names it and runs
# the tests through tests/gpu/replay.py instead of building. Needs patchelf
# (tools/bootstrap.sh gpu-prep installs it).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${1:-$SRC/build-carry}")
OUT=$(realpath -m "${2:-$SRC/build-train/gpu-carry/bin.tar.xz}")
NICE=${NICE:-nice -n 10}
command -v patchelf >/dev/null || { echo "gpu_bundle: needs patchelf (tools/bootstrap.sh gpu-prep)" >&2; exit 1; }

# Configured every time (quick when nothing changed): an older folder may
# have been made with the default architectures.
$NICE cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSCULPT_WERROR=ON \
  -DSCULPT_CUDA=ON -DSCULPT_CUDA_ARCHITECTURES=90 >/dev/null
TESTS_JSON=$(mktemp)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE" "$TESTS_JSON"' EXIT
# Built before listing: ctest leaves a test's "command" out while its
# executable does not exist yet (a fresh build folder).
$NICE cmake --build "$BUILD" -j2 >/dev/null
ctest --test-dir "$BUILD" -L gpu --show-only=json-v1 > "$TESTS_JSON"
# The executables those tests run (their first word, when it is a build output).
mapfile -t EXES < <(/usr/bin/python3 - "$TESTS_JSON" "$BUILD" <<'EOF'
import json, os, sys
b = sys.argv[2]
for t in json.load(open(sys.argv[1]))["tests"]:
    if "command" not in t:
        sys.exit(f"gpu_bundle: ctest gives no command for {t['name']} (not built?)")
    c = t["command"][0]
    if c.startswith(b + "/"):
        print(os.path.relpath(c, b))
EOF
)
[ "${#EXES[@]}" -gt 0 ] || { echo "gpu_bundle: no gpu tests in $BUILD (built without CUDA?)" >&2; exit 1; }
"$BUILD/sculpt" --version | grep -q cuda || { echo "gpu_bundle: $BUILD/sculpt has no CUDA backend" >&2; exit 1; }

P=$STAGE/prebuilt
mkdir -p "$P/lib"
for e in sculpt "${EXES[@]}"; do
  mkdir -p "$P/$(dirname "$e")"
  cp "$BUILD/$e" "$P/$e"
  strip --strip-unneeded "$P/$e"
  # DT_RPATH (not RUNPATH: it also serves the libraries' own dependencies)
  # to prebuilt/lib beside it: nothing else on the machine sees these
  # libraries, so the PyTorch processes next to it keep the system's.
  patchelf --force-rpath --set-rpath \
    "\$ORIGIN/$(realpath -m --relative-to="$P/$(dirname "$e")" "$P/lib")" "$P/$e"
done
# Paths: the build folder, this checkout and Debian's Python become
# placeholders replay.py fills in on the GPU machine.
/usr/bin/python3 - "$TESTS_JSON" "$BUILD" "$SRC" > "$P/gpu-tests.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
b, s = sys.argv[2], sys.argv[3]
def sub(x):
    if isinstance(x, str):
        x = x.replace(b, "@BUILD@").replace(s, "@SRC@")
        return "@PY@" if x in ("/usr/bin/python3", sys.executable) else x
    if isinstance(x, list):
        return [sub(v) for v in x]
    if isinstance(x, dict):
        return {k: sub(v) for k, v in x.items()}
    return x
json.dump({"tests": [sub(t) for t in d["tests"]]}, sys.stdout, indent=1)
EOF
# The shared libraries: ldd's closure (it is recursive), less what the GPU
# machine brings itself: glibc's libraries, the C++ runtime, libgcc, the
# CUDA driver (libcuda, libnvidia-*).
is_system() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|\
    librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*|libBrokenLocale.so.*|\
    libstdc++.so.*|libgcc_s.so.*|libcuda.so.*|libnvidia-*) return 0 ;;
  esac
  return 1
}
for e in sculpt "${EXES[@]}"; do
  if ldd "$BUILD/$e" | grep -q "not found"; then
    echo "gpu_bundle: $e has unresolved libraries here:" >&2; ldd "$BUILD/$e" | grep "not found" >&2; exit 1
  fi
  ldd "$BUILD/$e" | awk '/=> \//{print $1, $3}'
done | sort -u | while read -r name path; do
  is_system "$name" && continue
  cp -L "$path" "$P/lib/$name"
done
{
  echo "built: $(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
  echo "commit: $(git -C "$SRC" rev-parse --short HEAD)$(git -C "$SRC" diff --quiet HEAD -- . ':!build*' 2>/dev/null || echo ' (+ local changes)')"
  echo "nvcc: $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -1)"
  echo "cuda architectures: $(sed -n 's/^SCULPT_CUDA_ARCHITECTURES:STRING=//p' "$BUILD/CMakeCache.txt")"
  echo "executables: sculpt ${EXES[*]}"
  echo "libraries: $(cd "$P/lib" && ls | tr '\n' ' ')"
  echo "sculpt --version: $("$BUILD/sculpt" --version | tr '\n' ' ')"
} > "$P/BUILD-INFO"
mkdir -p "$(dirname "$OUT")"
tar -C "$STAGE" -cf - prebuilt | $NICE xz -9 -T2 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "gpu_bundle: $OUT: $(du -b "$OUT" | cut -f1) bytes ($(du -sb "$P" | cut -f1) unpacked;" \
     "$(ls "$P/lib" | wc -l) libraries)"

#!/usr/bin/env bash
# tools/gpu_engine_rehearse.sh — tools/gpu_engine.sh's device call rehearsed
# here, in the conditions tools/gpu_rehearse.sh makes (a bare Debian chroot:
# python3 and numpy, no compiler, none of our libraries, no network, a
# stand-in nvidia-smi; tools/rehearse/chroot.sh), with the REAL prepared
# binaries (build-train/gpu-carry/bin.tar.xz, from tools/gpu_bundle.sh or
# tools/gpu_session.sh --prepare). No GPU answers there, so every parity
# test must skip saying why and every benchmark must fail with one line;
# what is rehearsed is the plumbing a GPU session has no time to debug: the
# bundle unpacks and runs, each phase runs in turn under the deadline, the
# switches file and the report are written and appended where the session's
# hook expects them, within the device tool's limits.
#
#   tools/gpu_engine_rehearse.sh        (as root)
#
# Environment: REHEARSE_DIR (default build-rehearse; the base is shared with
# tools/gpu_rehearse.sh), CARRY (default build-train/gpu-carry), MIRROR.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
R=$(realpath -m "${REHEARSE_DIR:-$SRC/build-rehearse}")
CARRY=$(realpath -m "${CARRY:-$SRC/build-train/gpu-carry}")
BASE=$R/base
ROOT=$R/engine-root
T0=$(date +%s)
say() { echo "[engine-rehearse $(( $(date +%s) - T0 ))s] $*"; }
. "$SRC/tools/rehearse/chroot.sh"
rehearse_need gpu_engine_rehearse
[ -f "$CARRY/bin.tar.xz" ] || { echo "gpu_engine_rehearse: no $CARRY/bin.tar.xz: run tools/gpu_bundle.sh first" >&2; exit 2; }
rehearse_base "$BASE" "$R" || exit 1
rehearse_root "$BASE" "$ROOT" || exit 1
mkdir -p "$ROOT/repo/build-train/gpu-carry" "$ROOT/out"
cp "$CARRY/bin.tar.xz" "$ROOT/repo/build-train/gpu-carry/"
install -m 755 "$SRC/tools/rehearse/nvidia-smi" "$ROOT/usr/local/bin/nvidia-smi"
absent() { ! chroot "$ROOT" /bin/sh -c "$1" >/dev/null 2>&1; }
for x in gcc cc cmake nvcc; do
  absent "command -v $x"; check $? "no $x in the chroot"
done

say "the device's command in the chroot: tools/gpu_engine.sh all (no network)"
cat > "$ROOT/rehearse-inner.sh" <<'EOF'
python3 -c 'import socket; socket.create_connection(("deb.debian.org", 80), 3)' 2>/dev/null &&
  echo NETWORK-REACHABLE || echo no-network
cd /repo && timeout 600 bash tools/gpu_engine.sh all
echo "engine-exit $?"
EOF
S0=$(date +%s)
unshare --mount --propagation private --net --fork /bin/bash -c '
  mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" &&
  exec chroot "$1" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    OUT=/out TMPDIR=/tmp SCULPT_GPU_DEADLINE="$2" /bin/bash /rehearse-inner.sh' \
  inner "$ROOT" "$(( $(date +%s) + 300 ))" > "$R/engine.out" 2>&1
cat "$R/engine.out"
say "the device call took $(( $(date +%s) - S0 )) s"

L=$ROOT/out/engine-logs
grep -q "^no-network" "$R/engine.out"; check $? "no network inside"
grep -q "^engine-exit 0" "$R/engine.out"; check $? "gpu_engine.sh all exits 0 (phases that find no GPU are reported, not fatal)"
grep -q "unpacking .*bin.tar.xz" "$L/engine.log"; check $? "the bundle was unpacked (no cmake build)"
"$ROOT/repo/build-gpu/sculpt" --version 2>/dev/null | grep -q cuda ||
  chroot "$ROOT" /repo/build-gpu/sculpt --version 2>/dev/null | grep -q cuda
check $? "the unpacked sculpt starts there and lists the CUDA backend"
grep -q "skipping" "$L/check-kernels.log" 2>/dev/null; check $? "the kernel parity test ran and skipped, saying why"
n=$(ls "$L"/check-forward-*.log 2>/dev/null | wc -l)
[ "$n" -eq 6 ] && ! grep -L "skipping" "$L"/check-forward-*.log | grep -q .
check $? "the forward parity ran once per set of paths ($n) and each skipped, saying why"
[ -f "$L/switches.env" ] && [ ! -s "$L/switches.env" ]
check $? "the switches file was written, empty (a skipped test turns nothing off)"
grep -q "needs a CUDA GPU" "$L/profile-dream-7b.log" 2>/dev/null &&
  [ "$(wc -l < "$L/profile-dream-7b.log")" -eq 1 ]
check $? "the profile ran and failed in one line for want of a GPU"
grep -q "needs a CUDA GPU" "$L/infill-dream-7b.log" 2>/dev/null; check $? "the infill benchmark ran and said why it could not"
grep -q "^## Engine (issue 40)" "$ROOT/out/engine-results.md" &&
  grep -q "forward parity against the CPU, paths \`defaults\`: skipped" "$ROOT/out/engine-results.md" &&
  grep -q "no figures" "$ROOT/out/engine-results.md"
check $? "the report was written: parity skipped, targets without figures"
grep -q "^## Engine (issue 40)" "$ROOT/out/gpu-results.md"; check $? "the report was appended to gpu-results.md"
N=$(find "$ROOT/out" -maxdepth 1 -type f | wc -l)
BIG=$(find "$ROOT/out" -type f -size +16M | wc -l)
[ "$BIG" -eq 0 ]; check $? "nothing under OUT over 16 MiB ($N files at its top)"
sed 's/^/       /' "$ROOT/out/engine-results.md" | head -30
say "done: $FAILS failed check(s); logs in $L"
[ "$FAILS" -eq 0 ]

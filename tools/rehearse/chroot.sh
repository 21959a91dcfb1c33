# tools/rehearse/chroot.sh — sourced by the device rehearsals
# (tools/gpu_rehearse.sh, tools/gpu_engine_rehearse.sh): the bare Debian
# bookworm minbase the GPU machine is rehearsed in (python3 and
# python3-numpy only: no compiler, none of our libraries), made once with
# debootstrap and cached, and a fresh root from it holding what the device
# tool sends (the files git does not ignore); the checks' tally. Expects
# say() and SRC.

FAILS=0
check() { # CONDITION-STATUS WHAT
  if [ "$1" -eq 0 ]; then echo "ok   $2"; else echo "FAIL $2"; FAILS=$((FAILS + 1)); fi
}

# rehearse_need NAME: exits 2 unless root with debootstrap, unshare, chroot.
rehearse_need() {
  [ "$(id -u)" -eq 0 ] || { echo "$1: needs root (debootstrap, chroot, unshare)" >&2; exit 2; }
  for t in debootstrap unshare chroot; do
    command -v $t >/dev/null || { echo "$1: needs $t (tools/bootstrap.sh gpu-prep)" >&2; exit 2; }
  done
}

# rehearse_base BASE R: debootstrap into BASE once (the log in R).
rehearse_base() {
  local base=$1 r=$2
  [ -f "$base/.sculpt-base" ] && return 0
  MIRROR=${MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
                     grep -v security | head -1)}
  MIRROR=${MIRROR:-$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)}
  say "debootstrap --variant=minbase bookworm from ${MIRROR:?no Debian mirror configured} (once)"
  mkdir -p "$r"
  rm -rf "$base"
  nice -n 10 debootstrap --variant=minbase --include=python3,python3-numpy bookworm "$base" "$MIRROR" \
    > "$r/debootstrap.log" 2>&1 || { tail -20 "$r/debootstrap.log"; return 1; }
  rm -rf "$base"/var/cache/apt/archives/*.deb
  touch "$base/.sculpt-base"
}

# rehearse_root BASE ROOT: ROOT afresh from BASE, with the tree the device
# tool sends in ROOT/repo.
rehearse_root() {
  local base=$1 root=$2
  say "fresh root from the cached base"
  # Never delete through a mount (a /dev left bound in a stale root).
  if grep -q " $root/" /proc/mounts; then
    echo "rehearse: something is mounted under $root; unmount it first" >&2; return 1
  fi
  rm -rf --one-file-system "$root"
  cp -a "$base" "$root"
  mkdir -p "$root/repo"
  (cd "$SRC" && git ls-files -z -co --exclude-standard | xargs -0 cp -P --parents -t "$root/repo")
}

#!/usr/bin/env bash
# tools/bootstrap.sh — install what is missing, build, and run a job.
#
#   tools/bootstrap.sh demo   install, build, run the main job (default)
#   tools/bootstrap.sh test   install, build, run the whole test suite
#   tools/bootstrap.sh build  install and build only
#   tools/bootstrap.sh gpu-prep  what tools/gpu_session.sh --prepare and
#                             tools/gpu_rehearse.sh need (patchelf, debootstrap)
#
# Idempotent and non-interactive: Debian 12 packages are installed only when
# missing, npm packages from their lock files. Run as root (or with sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-demo}
jobs=$(nproc 2>/dev/null || echo 2)

# Build and runtime libraries, then what the tests need.
BUILD_PKGS=(build-essential cmake ninja-build pkg-config git ca-certificates
            libjansson-dev libev-dev libpcre2-dev libutf8proc-dev
            libopenblas-dev libhttp-parser-dev libcurl4-openssl-dev libssl-dev libgit2-dev libdnnl-dev
            zlib1g-dev python3)
# The editor tests: Neovim, Emacs with eglot and go-mode, Chromium to drive
# code-server, libkrb5-dev to build one of code-server's native modules;
# HAProxy for the several-servers test; QEMU's user-mode emulation to run
# sculpt as CPUs without AVX-512 (tests/model/test_cpu_isa.py).
TEST_PKGS=(python3-numpy python3-torch clang libclang-rt-14-dev neovim emacs-nox elpa-eglot
           elpa-go-mode tmux wrk chromium libkrb5-dev haproxy qemu-user)
# What preparing the GPU session needs beyond a build (tools/gpu_session.sh
# --prepare, tools/gpu_bundle.sh, tools/gpu_rehearse.sh): not CI's.
GPU_PREP_PKGS=(python3-numpy patchelf debootstrap xz-utils)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

install_node() {
  # npm brings the pinned tree-sitter grammars (grammars/, built into the
  # binary) and test oracles. Any node >= 18 will do (Debian 12 ships 18);
  # a newer one already here is kept.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    install_missing nodejs npm
  fi
  local lock
  for lock in $(git ls-files '*package-lock.json' 2>/dev/null || true); do
    local dir; dir=$(dirname "$lock")
    case "$dir" in editors/*) continue ;; esac  # the editor clients: see install_editor_clients
    if [ ! -d "$dir/node_modules" ] || [ "$lock" -nt "$dir/node_modules" ]; then
      echo "bootstrap: npm ci in $dir"
      (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
      touch "$dir/node_modules"
    fi
  done
}

install_editor_clients() {
  # The VS Code extension's tooling needs node >= 20 and code-server node 24:
  # tools/editor_tools.sh installs pinned ones (and code-server) under
  # ~/.cache/sculpt-tools, once; the editor tests find them there.
  local tools; tools=$(tools/editor_tools.sh | tail -n 1)
  if [ ! -d editors/vscode/node_modules ] ||
     [ editors/vscode/package-lock.json -nt editors/vscode/node_modules ]; then
    echo "bootstrap: npm ci in editors/vscode (node $("$tools/bin/node" --version))"
    (cd editors/vscode && PATH="$tools/bin:$PATH" npm ci --ignore-scripts --no-audit --no-fund \
       --loglevel=error)
    touch editors/vscode/node_modules
  fi
}

configure_build() { # DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DSCULPT_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

case "$mode" in
  build)
    install_missing "${BUILD_PKGS[@]}"
    install_node
    configure_build build
    ;;
  demo)
    install_missing "${BUILD_PKGS[@]}"
    install_node
    configure_build build
    python3 tools/demo_session.py build/sculpt
    echo
    echo "== sculpt complete tools/demo/fib.py:4:5 (the default model, model/default)"
    ./build/sculpt complete tools/demo/fib.py:4:5 --max-tokens 24 --json
    ;;
  test)
    install_missing "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"
    install_node
    install_editor_clients
    status=0
    # The tests run with a TMPDIR of their own: what a test leaves there is
    # a finding (each run once left about 1 GB of planted models and fixture
    # repositories in /tmp), and the rest goes when the run passes.
    outer_tmp=${TMPDIR:-/tmp}
    TMPDIR=$(mktemp -d "$outer_tmp/sculpt-tests.XXXXXX")
    chmod 1777 "$TMPDIR" # as /tmp: sculpt eval's sandboxed jobs run as other users
    export TMPDIR
    echo "== release build (gcc, -Werror; CUDA when the toolkit is present)"
    configure_build build
    ctest --test-dir build --output-on-failure -j "$jobs" || status=1
    echo "== ASan + UBSan build: unit, protocol, cli, serve, remote and context tests"
    CC=gcc configure_build build-asan -DSCULPT_SANITIZE=ON -DSCULPT_CUDA=OFF
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$jobs" \
      -L 'unit|protocol|cli|serve|remote|context' || status=1
    echo "== libFuzzer (clang): the LSP message path for ${SCULPT_FUZZ_SECONDS:-60} s"
    CC=clang configure_build build-fuzz -DSCULPT_FUZZ=ON -DSCULPT_CUDA=OFF
    ctest --test-dir build-fuzz --output-on-failure -L fuzz || status=1
    left=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 \( -name 'sculpt-*' -o -name 'hf-home-*' \) -printf '%f\n' | sort)
    if [ -n "$left" ]; then
      echo "bootstrap: the tests left $(echo "$left" | wc -l) folder(s) of theirs in TMPDIR ($TMPDIR):"
      echo "$left" | sed 's/^/  /' | head -20
      status=1
    fi
    if [ $status -eq 0 ]; then rm -rf "$TMPDIR"; else echo "bootstrap: TMPDIR kept for a look: $TMPDIR"; fi
    export TMPDIR=$outer_tmp
    if [ $status -ne 0 ]; then echo "bootstrap: tests FAILED"; else echo "bootstrap: all tests passed"; fi
    exit $status
    ;;
  gpu-prep)
    install_missing "${BUILD_PKGS[@]}" "${GPU_PREP_PKGS[@]}"
    install_node
    ;;
  *)
    echo "usage: tools/bootstrap.sh [demo|test|build|gpu-prep]" >&2
    exit 2
    ;;
esac

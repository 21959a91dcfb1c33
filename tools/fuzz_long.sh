#!/usr/bin/env bash
# tools/fuzz_long.sh — a dedicated fuzzing run of the libFuzzer targets
# (fuzz_lsp, fuzz_http, fuzz_checkpoint, fuzz_syntax, fuzz_text, fuzz_index;
# tests/fuzz), long enough to mean
# something: by default 10M executions per target, outside CI's budget.
#
#   tools/fuzz_long.sh [-r RUNS | -t SECONDS] [-j JOBS] [-T SECONDS] [-w WORKDIR]
#                      [-b BUILD] [-n NOTE] [--no-record] [TARGET...]
#
#   TARGET     lsp, http, checkpoint, syntax, text, index (default: all six,
#              one after another)
#   -r RUNS    executions per target, all jobs together (default 10000000)
#   -t SECONDS wall-clock budget per target instead of a run count
#   -j JOBS    parallel fuzzing processes (libFuzzer -workers; default nproc)
#   -T SECONDS one input's wall-clock limit before it counts as a timeout
#              (default 10); raise it for a worker at idle priority on a
#              busy machine, where starving counts against the input
#   -w WORKDIR corpora, logs and crash artifacts, kept between runs so each
#              run starts from the last one's corpus (default
#              ${XDG_CACHE_HOME:-$HOME/.cache}/sculpt-fuzz); never inside the
#              repository
#   -b BUILD   the fuzz build (default build-fuzz; configured with CC=clang
#              -DSCULPT_FUZZ=ON -DSCULPT_CUDA=OFF when missing)
#   -n NOTE    a line for the record (e.g. "short run: proves the script")
#   --no-record  do not append the run to tests/fuzz/RECORD.md
#
# Each target runs as libFuzzer -jobs/-workers: JOBS worker processes at a
# time share one corpus folder (each reloads what the others add), over
# 4 x JOBS jobs that split the run count (or each get the time budget), so
# a crash ends one job, not the run. (Fork mode, -fork=N, does the same
# with a merge after every short job; it reached a quarter of this
# throughput on fuzz_lsp here: 220 against 1,000 executions/s.) The seed
# corpus and the regressions folder of the target are read, never written.
# Every new crash, timeout, OOM or leak input is copied into the target's
# regressions folder (tests/fuzz/regressions, http_regressions,
# checkpoint_regressions, syntax_regressions, text_regressions,
# index_regressions) as fuzz-long-<kind>-<sha1>, so every build
# replays it (fuzz.replay*); fix it, then commit it. The run is appended to
# tests/fuzz/RECORD.md: date, machine, executions, corpus size, findings.
#
# Executions are the sum of each job's final "stat::number_of_executed_units"
# (-print_final_stats=1; its last "#N" status line when a job was killed).
set -euo pipefail
# The whole script is one function, read before any of it runs: bash reads
# a plain script as it goes, so editing this file during a two-hour run
# broke the run's last lines (its record was lost once that way).
main() {
cd "$(dirname "$0")/.."
SRC=$PWD

RUNS=10000000 SECONDS_BUDGET="" JOBS=$(nproc 2>/dev/null || echo 2) TIMEOUT=10
WORK=${XDG_CACHE_HOME:-$HOME/.cache}/sculpt-fuzz BUILD=build-fuzz NOTE="" RECORD=1
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    -r) RUNS=$2; shift 2 ;;
    -t) SECONDS_BUDGET=$2; shift 2 ;;
    -j) JOBS=$2; shift 2 ;;
    -T) TIMEOUT=$2; shift 2 ;;
    -w) WORK=$2; shift 2 ;;
    -b) BUILD=$2; shift 2 ;;
    -n) NOTE=$2; shift 2 ;;
    --no-record) RECORD=0; shift ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    lsp|http|checkpoint|syntax|text|index) TARGETS+=("$1"); shift ;;
    *) echo "fuzz_long.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(lsp http checkpoint syntax text index)
case "$RUNS$JOBS${SECONDS_BUDGET}$TIMEOUT" in *[!0-9]*) echo "fuzz_long.sh: -r, -j, -t, -T take numbers" >&2; exit 2 ;; esac

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$SRC"/*)
  echo "fuzz_long.sh: $WORK is inside the repository; the corpus lives outside it (-w)" >&2
  exit 2 ;;
esac

if [ ! -x "$BUILD/tests/fuzz/fuzz_lsp" ] || [ ! -x "$BUILD/tests/fuzz/fuzz_http" ] ||
   [ ! -x "$BUILD/tests/fuzz/fuzz_checkpoint" ] || [ ! -x "$BUILD/tests/fuzz/fuzz_syntax" ] ||
   [ ! -x "$BUILD/tests/fuzz/fuzz_text" ] || [ ! -x "$BUILD/tests/fuzz/fuzz_index" ]; then
  command -v clang >/dev/null || { echo "fuzz_long.sh: clang is needed" >&2; exit 2; }
  CC=clang cmake -S . -B "$BUILD" -G Ninja -DSCULPT_FUZZ=ON -DSCULPT_CUDA=OFF >/dev/null
fi
# Always rebuild: the run must fuzz the code as it is now.
cmake --build "$BUILD" -j "$JOBS" --target fuzz_lsp fuzz_http fuzz_checkpoint fuzz_syntax \
  fuzz_text fuzz_index >/dev/null

seeds_of() { case "$1" in lsp) echo corpus ;; http) echo http_corpus ;; checkpoint) echo checkpoint_corpus ;;
  syntax) echo syntax_corpus ;; text) echo text_corpus ;; index) echo index_corpus ;; esac; }
regressions_of() { case "$1" in lsp) echo regressions ;; *) echo "$1_regressions" ;; esac; }

STAMP=$(date -u +%Y-%m-%dT%H:%MZ)
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
MACHINE="$(uname -sm), ${CPU:-unknown CPU}, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' + local changes')"
ROWS=()
TOTAL_NEW=0

for t in "${TARGETS[@]}"; do
  bin=$SRC/$BUILD/tests/fuzz/fuzz_$t
  seeds=$SRC/tests/fuzz/$(seeds_of "$t")
  regs=$SRC/tests/fuzz/$(regressions_of "$t")
  dir=$WORK/$t
  # Scratch files of the targets (fuzz_checkpoint writes a checkpoint
  # folder per input) go to memory when /dev/shm is there: a third more
  # executions per second here than on the disk. One name per user and
  # target, so a later run removes what a killed one left there.
  scratch=$dir/tmp
  [ -d /dev/shm ] && [ -w /dev/shm ] && scratch=/dev/shm/sculpt-fuzz-$(id -u)-$t
  mkdir -p "$dir/corpus" "$dir/artifacts" "$scratch"
  extra=()
  [ "$t" = lsp ] && extra=(-dict="$SRC/tests/fuzz/lsp.dict")
  # fuzz_syntax's deep inputs (tens of KB of nesting) take half a second
  # each in the sanitized build against milliseconds for the rest; without
  # this, mutating them took most of the run (12 against 33 inputs a
  # second here, with more coverage in the same two minutes).
  [ "$t" = syntax ] && extra+=(-entropic_scale_per_exec_time=1)
  njobs=$((4 * JOBS))
  limit=(-runs=$(( (RUNS + njobs - 1) / njobs )))
  if [ -n "$SECONDS_BUDGET" ]; then njobs=$JOBS; limit=(-max_total_time="$SECONDS_BUDGET"); fi
  before=$(find "$dir/artifacts" -type f | sort)
  logs=$dir/logs-$STAMP
  mkdir -p "$logs"
  echo "fuzz_long.sh: fuzz_$t, $njobs jobs of ${limit[*]} on $JOBS workers, corpus $dir/corpus (logs $logs)"
  t0=$(date +%s)
  # Jobs write fuzz-N.log into the current folder; scratch files of the
  # targets (fuzz_checkpoint's folders) go to the scratch folder, where a
  # killed job's leftovers are found and removed.
  (cd "$logs" && TMPDIR=$scratch ASAN_OPTIONS=detect_leaks=1 "$bin" -jobs="$njobs" \
     -workers="$JOBS" "${limit[@]}" -print_final_stats=1 -timeout="$TIMEOUT" -rss_limit_mb=2048 \
     -max_len=65536 "${extra[@]}" -artifact_prefix="$dir/artifacts/" \
     "$dir/corpus" "$seeds" "$regs" >"$logs/main.log" 2>&1) || true
  secs=$(( $(date +%s) - t0 ))
  rm -rf "${scratch:?}"
  execs=0
  for l in "$logs"/fuzz-*.log; do
    [ -e "$l" ] || continue
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$l" | tail -1)
    [ -n "$n" ] || n=$(grep -o '^#[0-9]*' "$l" | tail -1 | tr -d '#')
    execs=$((execs + ${n:-0}))
  done
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(du -sb "$dir/corpus" | cut -f1)
  # New findings: copied to the regressions folder under a stable name.
  found=()
  while IFS= read -r a; do
    [ -n "$a" ] || continue
    grep -qxF "$a" <<<"$before" && continue
    kind=$(basename "$a" | cut -d- -f1)
    name="fuzz-long-$kind-$(sha1sum "$a" | cut -c1-12)"
    [ -e "$regs/$name" ] || cp "$a" "$regs/$name"
    found+=("$(basename "$regs")/$name")
  done < <(find "$dir/artifacts" -type f | sort)
  TOTAL_NEW=$((TOTAL_NEW + ${#found[@]}))
  findings=${found[*]:-none}
  echo "fuzz_long.sh: fuzz_$t: $execs executions in ${secs} s, corpus $files files ($bytes bytes), findings: $findings"
  ROWS+=("| fuzz_$t | $execs | $secs | $files files, $bytes bytes | $findings |")
done

if [ "$RECORD" = 1 ]; then
  rec=$SRC/tests/fuzz/RECORD.md
  [ -s "$rec" ] || printf '# Fuzzing record\n\nRuns of tools/fuzz_long.sh, newest last.\n' >"$rec"
  {
    echo
    echo "## $STAMP"
    echo
    [ -n "$NOTE" ] && { echo "$NOTE"; echo; }
    echo "- machine: $MACHINE"
    echo "- commit: $COMMIT; build: $BUILD (clang, ASan + UBSan, libFuzzer, $JOBS workers)"
    if [ -n "$SECONDS_BUDGET" ]; then echo "- limit per target: $SECONDS_BUDGET s"
    else echo "- limit per target: $RUNS executions"; fi
    echo "- one input's limit: $TIMEOUT s"
    echo
    echo "| target | executions | seconds | corpus after | new findings |"
    echo "| --- | --- | --- | --- | --- |"
    printf '%s\n' "${ROWS[@]}"
  } >>"$rec"
  echo "fuzz_long.sh: recorded in $rec"
fi
[ "$TOTAL_NEW" -eq 0 ] || echo "fuzz_long.sh: $TOTAL_NEW new finding(s) copied into tests/fuzz/*regressions: fix them and commit them"
}
main "$@"
exit $?

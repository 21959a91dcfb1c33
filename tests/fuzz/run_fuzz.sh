#!/bin/sh
# run_fuzz.sh FUZZER SRC_DIR WORK_DIR SECONDS
# Fuzzes from the seed corpus into a scratch corpus under WORK_DIR. A crash
# leaves its input in WORK_DIR/artifacts; copy it to tests/fuzz/regressions/
# (with a name saying what it broke) so that every build replays it.
set -eu
fuzzer=$1 src=$2 work=$3 seconds=$4
mkdir -p "$work/corpus" "$work/artifacts"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -dict="$src/lsp.dict" -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$src/corpus" "$src/regressions"

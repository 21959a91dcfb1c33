#!/bin/sh
# run_fuzz.sh FUZZER SRC_DIR WORK_DIR SECONDS [CORPUS REGRESSIONS]
# Fuzzes from the seed corpus (default SRC_DIR/corpus) into a scratch corpus
# under WORK_DIR. A crash leaves its input in WORK_DIR/artifacts; copy it to
# the regressions folder (default SRC_DIR/regressions) with a name saying
# what it broke, so that every build replays it. The LSP dictionary is used
# unless SCULPT_FUZZ_DICT is set (empty: none).
set -eu
fuzzer=$1 src=$2 work=$3 seconds=$4
corpus=$src/${5:-corpus} regressions=$src/${6:-regressions}
dict=${SCULPT_FUZZ_DICT-$src/lsp.dict}
mkdir -p "$work/corpus" "$work/artifacts"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 ${dict:+-dict="$dict"} -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$corpus" "$regressions"

#!/usr/bin/env bash
# tools/gpu_session.sh — all the GPU work a lent device session owes, in ONE
# device call of about 9 minutes (a session gets ~15 minutes of device time,
# the machine's start included, so there is room for one such call and a
# rerun at most: everything that can run side by side does).
#
#   here, first:    tools/gpu_session.sh --prepare [INPUT]
#                   -> build-train/gpu-carry: the corpus as xz shards (>= 300
#                      MB of source, tokenized THERE), the tokenizer, and
#                      bin.tar.xz (sculpt and the GPU tests built here with
#                      CUDA for sm_90 + PTX, with the shared libraries they
#                      load: the GPU machine has none of our Debian
#                      libraries). Prints what travels; fails past 64 MiB.
#   rehearse here:  tools/gpu_rehearse.sh   (the call below in a bare Debian
#                   chroot without network, at toy size)
#   on the device:  run(command="tools/gpu_session.sh",
#                       carry=["build-train/gpu-carry"], timeout_s=600)
#   here, after:    tools/gpu_after.sh FILES_AT
#                   (--unpack -> build-train/gpu-result/checkpoint and
#                   tests/gpu/results/<date>-<gpu>.md, then `sculpt eval`
#                   against the shipped model, the latency gate and the ship
#                   decision of model/train/README.md)
#   CI:             tools/gpu_session.sh --smoke   (CPU, toy scale, seconds)
#
# On the device: the prebuilt binaries are unpacked (tests/gpu/run.sh, step
# build), the corpus is decompressed and tokenized by `sculpt tokenize
# --jsonl` on every core (model/train/carry.py unpack, seconds), then
# model/train/run_gpu.sh trains the default model on the GPU for TRAIN_S
# seconds (default 420, less what compiling takes before the clock: it
# must end by SESSION_S - 75; on 2026-12-04 the tests took 32 s, the
# benchmark 40 s, and the whole call 340 s with 270) while the GPU parity
# tests run
# (tests/gpu/run.sh, step test: not timed, so sharing the GPU is harmless). The benchmark
# waits for the training to end, since it reports timings. Everything stops
# by SESSION_S seconds (default 560). The machine's inventory (weights
# already there, pip list: tools/gpu_inventory.py) runs beside it all;
# issue 40's hook (below) after the benchmark. What comes back is at most
# 8 flat files under $OUT (the device tool's limit), each under 16 MiB:
#   gpu-results.md (GPU tests, benchmark, training with MFU, inventory),
#   metrics.json, model*.safetensors (1-2 shards), checkpoint-meta.tar.gz
#   (config, tokenizer, training.json), logs.tar.gz
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
CARRY=${CARRY:-$SRC/build-train/gpu-carry}
MODE=run
case "${1:-}" in
  --prepare) MODE=prepare ;;
  --unpack) MODE=unpack ;;
  --smoke) MODE=smoke ;;
  "") ;;
  *) echo "usage: $0 [--prepare [INPUT] | --unpack FILES_AT | --smoke]" >&2; exit 2 ;;
esac

# The corpus the device trains on: per-language caps (MB of source) over
# what model/train/sources.txt fetches, sized so that the xz shards, the
# binaries and the repository stay under the device's 64 MiB.
# 301 MB: 95.9% of the 64 MiB with the repository of 2026-12-03; lower a cap (and
# delete INPUT/corpus) if --prepare reports more than the limit.
# 2026-12 (issue 41): 13 MB less (python 126, c 78) for the repository
# records (--repo-records 4000: ~12 MB of JSON Lines, ~2.7 MB of xz).
# 2026-12-07: the repository travels too and grew from 6.3 to 14.2 MB (two
# committed candidates, their manifests) and the binaries from 12.8 to 13.6
# MB, which put the old caps about 6 MB past the limit; and Go, Rust, Java
# and C++ join the four (sculpt completes them, and the repository tasks
# have Go): 222 MB in eight (236 MB came to 99.3% of the limit: xz packs
# these 6.9x, not 7.2x).
CORPUS_CAPS=${CORPUS_CAPS:-"python=80 c=42 javascript=22 typescript=22 go=22 rust=14 java=12 cpp=8"}
REPO_RECORDS=${REPO_RECORDS:-4000}
LIMIT=$((64 * 1024 * 1024))

if [ "$MODE" = prepare ]; then
  # INPUT: a folder with corpus/ (corpus.py) and tokenizer.json (bpe.py).
  # Missing, they are built here from packages fetched through apt and npm
  # (model/train/README.md; ~80 minutes on 2 busy cores, ~3 GB under
  # build-train/sources).
  # gpu-input5: issue 41's corpus (the evaluation's code left out, the
  # held-out split by package, repository records) in eight languages
  # (2026-12-07); gpu-input4 had four; gpu-input3 had jq.
  IN=${2:-$SRC/build-train/gpu-input5}
  PY=${PY:-/usr/bin/python3}
  BUILD=${SCULPT_CARRY_BUILD:-$SRC/build-carry}
  set -e
  if [ ! -f "$IN/corpus/manifest.json" ]; then
    S=$SRC/build-train/sources
    nice -n 10 "$PY" "$SRC/model/train/fetch_sources.py" "$S"
    CAPS=()
    for c in $CORPUS_CAPS; do CAPS+=(--max-mb "$c"); done
    nice -n 10 "$PY" "$SRC/model/train/corpus.py" "$IN/corpus" --deb-root "$S/deb" \
      --src-root "$S/src" --npm-root "$S/npm" --npm-root /usr/lib/node_modules \
      --heldout-pct 2 --repo-records "$REPO_RECORDS" "${CAPS[@]}"
    # The evaluation's code must not be in it (exit 1 names what is).
    "$PY" "$SRC/model/train/corpus.py" --check "$IN/corpus"
  fi
  [ -f "$IN/tokenizer.json" ] ||
    nice -n 10 "$PY" "$SRC/model/train/bpe.py" train "$IN/corpus" "$IN" --vocab 16384 --max-mb 12
  rm -rf "$CARRY.tmp"
  mkdir -p "$CARRY.tmp"
  bash "$SRC/tools/gpu_bundle.sh" "$BUILD" "$CARRY.tmp/bin.tar.xz"
  # The streams sculpt makes here are recorded: the device's must match.
  # An earlier carry of the same corpus lends its shards (no second xz pass).
  nice -n 10 "$PY" "$SRC/model/train/carry.py" pack "$IN" "$CARRY.tmp" --sculpt "$BUILD/sculpt" \
    --reuse "$CARRY"
  rm -rf "$CARRY"
  mv "$CARRY.tmp" "$CARRY"
  # What this carry measured goes to model/train/carry_sizes.json (commit
  # it): tests/train/test_carry_budget.py checks with it, in every CI run,
  # that the repository has not grown past what these caps leave.
  "$PY" "$SRC/model/train/carry.py" size "$CARRY" --repo "$SRC" --limit "$LIMIT" \
    --record "$SRC/model/train/carry_sizes.json"
  exit 0
fi

if [ "$MODE" = unpack ]; then
  AT=${2:?usage: $0 --unpack FILES_AT}
  set -e
  DEST=${RESULT_DIR:-$SRC/build-train/gpu-result}
  RESULTS=${GPU_RESULTS_DIR:-$SRC/tests/gpu/results}
  rm -rf "$DEST"
  mkdir -p "$DEST/checkpoint"
  tar -xzf "$AT/checkpoint-meta.tar.gz" -C "$DEST/checkpoint"
  cp "$AT"/*.safetensors "$DEST/checkpoint/"
  cp "$AT/metrics.json" "$DEST/" 2>/dev/null || true
  [ -f "$AT/logs.tar.gz" ] && tar -xzf "$AT/logs.tar.gz" -C "$DEST"
  if grep -q '^- GPU: ' "$AT/gpu-results.md" 2>/dev/null; then
    GPU=$(sed -n 's/^- GPU: \(.*\) (driver.*/\1/p' "$AT/gpu-results.md" | head -1)
    DATE=$(sed -n 's/^# sculpt GPU results, //p' "$AT/gpu-results.md" | head -1)
    SLUG=$(echo "${GPU:-gpu}" | tr -cs 'A-Za-z0-9' '-' | sed 's/-*$//')
    mkdir -p "$RESULTS"
    cp "$AT/gpu-results.md" "$RESULTS/${DATE:-$(date -u +%F)}-$SLUG.md"
    echo "results: $RESULTS/${DATE:-$(date -u +%F)}-$SLUG.md"
  fi
  echo "checkpoint: $DEST/checkpoint"
  exit 0
fi

# ---- run (device) or smoke (CPU) --------------------------------------------
T0=$(date +%s)
# 560 s: under the 9.5 minutes the issue allows one call, leaving a
# rerun's room in 15 minutes of device time with the machine's start.
SESSION_S=${SESSION_S:-560}
TRAIN_S=${TRAIN_S:-420}
DEADLINE=$((T0 + SESSION_S))
# The checkpoint must exist by then: the benchmark (~40 s) and packing
# follow. Compiling before the clock comes out of the training, not after.
TRAIN_DEADLINE=$((DEADLINE - ${AFTER_TRAIN_S:-75}))
OUT=${OUT:-$SRC/build-train/session-out}
W=$(mktemp -d "${TMPDIR:-/tmp}/sculpt-session.XXXXXX")
mkdir -p "$OUT" "$W/logs"
log() { echo "[gpu_session $(( $(date +%s) - T0 ))s] $*" | tee -a "$W/logs/session.log"; }
export PYTHONUNBUFFERED=1

# What the machine already holds (pretrained weights, pip list), beside
# everything else: it reads directories, not the GPU.
INV_BUDGET=${INVENTORY_S:-60}
[ "$MODE" = smoke ] && INV_BUDGET=5
timeout $((INV_BUDGET + 60)) python3 "$SRC/tools/gpu_inventory.py" --budget "$INV_BUDGET" \
  >"$W/inventory.md" 2>"$W/logs/inventory.err" &
INV_PID=$!

if [ "$MODE" = smoke ]; then
  log "smoke: toy training on the CPU; the GPU steps run only where there is a GPU"
  (cd "$SRC" && PY="${PY:-/usr/bin/python3}" OUT="$W/train" BUDGET=4 DEADLINE=$TRAIN_DEADLINE \
     model/train/run_gpu.sh --smoke) >"$W/logs/train.out" 2>&1 &
else
  GPU_BUILD=${SCULPT_GPU_BUILD:-$SRC/build-gpu}
  STEPS="build test"
  if [ -f "$CARRY/bin.tar.xz" ]; then
    # The prebuilt binaries first: the corpus is tokenized with them.
    SCULPT_GPU_STEPS=build SCULPT_GPU_PREBUILT="$CARRY/bin.tar.xz" SCULPT_GPU_CMAKE=0 \
      SCULPT_GPU_DEADLINE=$DEADLINE OUT="$W/gpu" bash "$SRC/tests/gpu/run.sh" \
      >"$W/logs/gpu-unpack.out" 2>&1
    URC=$?
    log "prebuilt binaries: run.sh exit $URC: $(tail -1 "$W/logs/gpu-unpack.out")"
    [ "$URC" -eq 0 ] && STEPS="test"
  fi
  INPUT=$CARRY
  if [ -f "$CARRY/carry.json" ]; then
    SC=()
    [ "$STEPS" = test ] && SC=(--sculpt "$GPU_BUILD/sculpt")
    python3 "$SRC/model/train/carry.py" unpack "$CARRY" "$W/input" "${SC[@]}" >>"$W/logs/session.log" 2>&1
    CRC=$?
    log "corpus unpacked and tokenized (carry.py exit $CRC): $(grep -E '(train|heldout|repo): [0-9]+ tokens' "$W/logs/session.log" | tr '\n' ' ')"
    INPUT=$W/input
  else
    log "no $CARRY/carry.json: the box builds corpus and tokenizer itself (slow)"
  fi
  (cd "$SRC" && INPUT="$INPUT" OUT="$W/train" BUDGET="$TRAIN_S" EVAL=0 DEADLINE=$TRAIN_DEADLINE \
     model/train/run_gpu.sh) >"$W/logs/train.out" 2>&1 &
fi
TRAIN_PID=$!
log "training started (pid $TRAIN_PID)"

SCULPT_GPU_STEPS="${STEPS:-build test}" SCULPT_GPU_DEADLINE=$DEADLINE OUT="$W/gpu" \
  bash "$SRC/tests/gpu/run.sh" >"$W/logs/gpu-build-test.out" 2>&1
GRC=$?
log "GPU ${STEPS:-build test} exit $GRC"

# The training must end in its budget; past the deadline it is stopped.
while kill -0 "$TRAIN_PID" 2>/dev/null && [ "$(date +%s)" -lt $((DEADLINE - 30)) ]; do sleep 2; done
if kill -0 "$TRAIN_PID" 2>/dev/null; then
  log "training still running at the deadline: stopped"
  kill "$TRAIN_PID" 2>/dev/null
fi
wait "$TRAIN_PID"
TRC=$?
log "training exit $TRC"

BRC=77
if [ "$GRC" -ne 77 ] && [ -x "${SCULPT_GPU_BUILD:-$SRC/build-gpu}/sculpt" ]; then
  SCULPT_GPU_STEPS="bench" SCULPT_GPU_DEADLINE=$((DEADLINE - 15)) OUT="$W/gpu" \
    bash "$SRC/tests/gpu/run.sh" >"$W/logs/gpu-bench.out" 2>&1
  BRC=$?
  log "benchmark exit $BRC"
fi

# ---- issue 40's hook (the GPU engine's measurements) -------------------------
# NOT implemented here (issue 40 owns it). Its measurements belong in one
# executable, tools/gpu_engine_measure.sh (or $GPU_ENGINE_HOOK), which this
# call runs, when it exists, after the benchmark and before the packing,
# with: SCULPT_GPU_BUILD (the unpacked binaries), SCULPT_GPU_DEADLINE (stop
# by then: the call's deadline less 10 s), HOOK_MD (append Markdown there:
# it goes into gpu-results.md) and HOOK_DIR (a folder whose files go into
# logs.tar.gz). Whatever it returns, the session goes on.
HOOK=${GPU_ENGINE_HOOK:-$SRC/tools/gpu_engine_measure.sh}
HRC=-
# (--smoke runs it only when GPU_ENGINE_HOOK names one: the test's stand-in.)
if [ -x "$HOOK" ] && { [ "$MODE" != smoke ] || [ -n "${GPU_ENGINE_HOOK:-}" ]; }; then
  mkdir -p "$W/logs/issue40"
  HLEFT=$((DEADLINE - 10 - $(date +%s)))
  if [ "$HLEFT" -gt 5 ]; then
    SCULPT_GPU_BUILD=${SCULPT_GPU_BUILD:-$SRC/build-gpu} SCULPT_GPU_DEADLINE=$((DEADLINE - 10)) \
      HOOK_MD="$W/issue40.md" HOOK_DIR="$W/logs/issue40" timeout "$HLEFT" "$HOOK" \
      >"$W/logs/issue40/hook.out" 2>&1
    HRC=$?
  else
    HRC="skipped (no time left)"
  fi
  log "issue 40 hook ($HOOK): $HRC"
fi

# ---- what comes back: <= 8 flat files, each < 16 MiB ------------------------
if [ -f "$W/gpu/gpu-results.md" ]; then
  cp "$W/gpu/gpu-results.md" "$OUT/"
else
  echo "# sculpt GPU session $(date -u +%F): no GPU results (run.sh exit $GRC)" > "$OUT/gpu-results.md"
fi
# The training (MFU among it), the machine's inventory, issue 40's section.
{
  echo
  python3 "$SRC/tools/gpu_report.py" "$W/train/checkpoint/training.json"
  wait "$INV_PID" 2>/dev/null
  if [ -s "$W/inventory.md" ]; then cat "$W/inventory.md"
  else echo "## Machine inventory"; echo; echo "- failed: $(tail -3 "$W/logs/inventory.err")"; fi
  if [ -s "$W/issue40.md" ]; then echo; echo "## GPU engine (issue 40, its hook)"; echo; cat "$W/issue40.md"; fi
} >> "$OUT/gpu-results.md" 2>>"$W/logs/session.log"
CK="$W/train/checkpoint"
if [ -d "$CK" ]; then
  cp "$CK"/*.safetensors "$OUT/"
  (cd "$CK" && tar -czf "$OUT/checkpoint-meta.tar.gz" --exclude='*.safetensors' .)
fi
[ -f "$W/train/metrics.json" ] && cp "$W/train/metrics.json" "$OUT/"
cp "$W/train/train.log" "$W/logs/" 2>/dev/null
cp -r "$W/gpu/gpu-logs" "$W/logs/" 2>/dev/null
log "done: training $TRC, GPU build+tests $GRC, bench $BRC, issue 40 hook $HRC"
tar -czf "$OUT/logs.tar.gz" -C "$W" logs
N=$(find "$OUT" -type f | wc -l)
BIG=$(find "$OUT" -type f -size +16M | wc -l)
DEEP=$(find "$OUT" -mindepth 2 | wc -l)
ls -la "$OUT"
rm -rf "$W"
if [ "$N" -gt 8 ] || [ "$BIG" -ne 0 ] || [ "$DEEP" -ne 0 ]; then
  echo "gpu_session: OUT breaks the device limits: $N files, $BIG over 16 MiB, $DEEP nested" >&2
  exit 1
fi
[ "$TRC" -eq 0 ] || exit 1
[ "$MODE" = smoke ] || { [ "$GRC" -eq 0 ] && [ "$BRC" -eq 0 ]; } || exit 1
exit 0

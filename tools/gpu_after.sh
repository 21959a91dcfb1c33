#!/usr/bin/env bash
# tools/gpu_after.sh — everything after a GPU visit, on this CPU machine
# (issue 41): unpack what came back, evaluate the candidate with `sculpt
# eval` against the shipped model and the line n-gram, time it as the LSP
# runs it, and apply the ship rule (tools/ship_decision.py,
# model/train/README.md).
#
#   tools/gpu_after.sh FILES_AT [--ship]
#
#   1. tools/gpu_session.sh --unpack FILES_AT: build-train/gpu-result/checkpoint,
#      tests/gpu/results/<date>-<gpu>.md (commit it either way);
#   2. the candidate's EOS penalty, chosen on the training corpus's held-out
#      split (model/train/evaluate.py, 0 against 3; never on the
#      benchmarks): its generation_config.json;
#   3. sculpt eval humaneval-single and repo-single (each with the shipped
#      model and the n-gram as baselines, McNemar), humaneval-multi and
#      repo-multi for the record; ~1-2 hours on 2 cores (EVAL_LIMIT=N takes
#      the first N tasks of each: less power for the test);
#   4. sculpt bench --replay at default settings (click's core.py:1543):
#      the p50 of pause -> result;
#   5. the decision; with --ship and a yes, the checkpoint is copied into
#      model/default (the card, the figures in docs/models.md and
#      docs/evaluation.md, and the demo are then
#      updated by hand, and committed together with the evaluation, so the
#      winning weights are never lost again).
# Everything goes to build-train/gpu-result/eval/ and, for committing,
# tests/gpu/results/<date>-candidate-*.json.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
AT=${1:?usage: tools/gpu_after.sh FILES_AT [--ship]}
SHIP=${2:-}
BIN=${SCULPT_BIN:-$SRC/build/sculpt}
PY=${PY:-/usr/bin/python3}
DEST=${RESULT_DIR:-$SRC/build-train/gpu-result}
CORPUS=${CORPUS:-$SRC/build-train/gpu-input5/corpus}
NICE=${NICE:-nice -n 10}
[ -x "$BIN" ] || { echo "gpu_after: no $BIN (cmake --build build)" >&2; exit 2; }

bash "$SRC/tools/gpu_session.sh" --unpack "$AT"
CK=$DEST/checkpoint
E=$DEST/eval
mkdir -p "$E"
"$BIN" model info --model "$CK" | tee "$E/model-info.txt"
[ -d "$CORPUS" ] && "$PY" "$SRC/model/train/corpus.py" --check "$CORPUS" | tail -1

# 2. EOS penalty on the held-out split (the benchmarks stay untouched).
PEN=3
if [ -f "$CORPUS/heldout.jsonl" ]; then
  for p in 0 3; do
    $NICE "$PY" "$SRC/model/train/evaluate.py" --model "$CK" --corpus "$CORPUS" --engine sculpt \
      --sculpt "$BIN" --n 100 --eos-penalty $p --out "$E/heldout-eos$p.json" > /dev/null
  done
  PEN=$("$PY" - "$E" <<'EOF'
import json, sys
s = {p: json.load(open(f"{sys.argv[1]}/heldout-eos{p}.json"))["tasks"]["single"]["model"]
     for p in (0, 3)}
key = lambda p: (s[p]["exact_match"], s[p]["char_similarity"])
print(max((0, 3), key=key))
EOF
)
else
  echo "gpu_after: no held-out split at $CORPUS: EOS penalty 3 (as the shipped model's)"
fi
echo "{\"eos_penalty\": $PEN}" > "$CK/generation_config.json"
echo "EOS penalty: $PEN"

# 3. The benchmarks (the shipped model and the n-gram as baselines).
LIM=()
[ -n "${EVAL_LIMIT:-}" ] && LIM=(--limit "$EVAL_LIMIT")
for b in humaneval-single repo-single humaneval-multi repo-multi; do
  [ -n "${EVAL_ONLY_GATES:-}" ] && case $b in *multi) continue ;; esac
  echo "sculpt eval $b ..."
  $NICE "$BIN" eval "$b" --model "$CK" --json --no-progress "${LIM[@]}" \
    --results "$E/$b-results.jsonl" > "$E/$b.json"
done

# 4. Latency as the LSP sees it.
$NICE "$BIN" bench --replay "$SRC/tests/data/real/click/src/click/core.py:1543:2" --model "$CK" \
  > "$E/latency.txt" 2>&1 || true
cat "$E/latency.txt" | tail -4
P50=$(sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' "$E/latency.txt" | head -1)

# 5. The rule.
DATE=$(date -u +%F)
set +e
"$PY" "$SRC/tools/ship_decision.py" --humaneval "$E/humaneval-single.json" --repo "$E/repo-single.json" \
  ${P50:+--latency-ms "$P50"} --json "$E/decision.json"
RC=$?
set -e
R=${GPU_RESULTS_DIR:-$SRC/tests/gpu/results}
mkdir -p "$R"
for f in humaneval-single repo-single humaneval-multi repo-multi decision; do
  [ -f "$E/$f.json" ] && cp "$E/$f.json" "$R/$DATE-candidate-$f.json"
done
if [ "$RC" -eq 0 ] && [ "$SHIP" = --ship ]; then
  T=$SRC/model/default
  find "$T" -maxdepth 1 -name 'model*.safetensors*' -delete
  cp "$CK"/model*.safetensors* "$CK"/config.json "$CK"/tokenizer.json "$CK"/tokenizer_config.json \
     "$CK"/generation_config.json "$CK"/training.json "$T/"
  [ -f "$CORPUS/manifest.json" ] && cp "$CORPUS/manifest.json" "$T/corpus_manifest.json"
  echo "shipped into $T: update its README.md (card), the figures in docs/models.md and"
  echo "docs/evaluation.md, and the demo, then commit the weights with"
  echo "tests/gpu/results/$DATE-candidate-*.json in one change"
fi
exit "$RC"

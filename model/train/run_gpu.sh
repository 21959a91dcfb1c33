#!/usr/bin/env bash
# The default model's real training run: one H200, a fixed time budget.
#
#   model/train/run_gpu.sh            # GPU run (PyTorch >= 2 with CUDA, no network)
#   model/train/run_gpu.sh --smoke    # the same script end to end on the CPU, seconds
#
# Environment:
#   OUT        where everything goes (default ./train-out): OUT/checkpoint is
#              the model/default layout (config.json, tokenizer.json,
#              model*.safetensors, training.json), OUT/metrics.json the
#              training + evaluation numbers, OUT/train.log the log.
#   INPUT      optional folder prepared beforehand (the GPU box may have no
#              Debian sources to build a corpus from): INPUT/corpus/ (from
#              corpus.py) and INPUT/tokenizer.json (from bpe.py). Missing
#              parts are built here.
#              INPUT/cache/ (optional) holds the token streams train.py
#              cached for that corpus and tokenizer, so the box skips
#              tokenizing.
#   BUDGET     training seconds (default 540 = 9 minutes; smoke: 4)
#   EVAL       0: skip the evaluation (do it later, on any machine, with
#              evaluate.py on the checkpoint that comes back)
#   PY         Python interpreter (default python3)
#   SCULPT_BIN optional: also measure sculpt's CPU latency on the result
#   DEADLINE   optional Unix time by which the checkpoint must be written
#              (train.py --deadline: compiling and loading come out of the
#              training budget, not after it)
#   TRAIN_ARGS optional extra train.py flags (e.g. "--mix plain=1,infill=3")
#
# Prepare INPUT on a Debian box (kept under an ignored build folder):
#   python3 model/train/corpus.py build-train/gpu-input/corpus
#   python3 model/train/bpe.py train build-train/gpu-input/corpus build-train/gpu-input --vocab 16384 --max-mb 12
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SMOKE=0
for a in "$@"; do
  case "$a" in
    --smoke) SMOKE=1 ;;
    *) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
  esac
done
PY="${PY:-python3}"
OUT="${OUT:-$PWD/train-out}"
mkdir -p "$OUT"
LOG="$OUT/train.log"
: > "$LOG"
say() { echo "[run_gpu $(date +%H:%M:%S)] $*" | tee -a "$LOG"; }

if [ "$SMOKE" = 1 ]; then
  PRESET=toy; DEVICE=cpu; BUDGET="${BUDGET:-4}"; VOCAB=320; CORPUS_MB=0.1; BPE_MB=0.1; HELDOUT=25
  EVAL_N=3; THREADS=2
else
  PRESET=gpu; DEVICE=cuda; BUDGET="${BUDGET:-540}"; VOCAB=16384; CORPUS_MB=12; BPE_MB=12; HELDOUT=3
  EVAL_N=200; THREADS=0
  "$PY" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    || { say "no CUDA device visible to PyTorch; use --smoke on a CPU"; exit 1; }
fi
say "preset $PRESET device $DEVICE budget ${BUDGET}s out $OUT"
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' | tee -a "$LOG"

CORPUS="$OUT/corpus"
if [ -n "${INPUT:-}" ] && [ -f "$INPUT/corpus/manifest.json" ]; then
  CORPUS="$INPUT/corpus"
  say "corpus from $CORPUS"
else
  "$PY" "$HERE/corpus.py" "$CORPUS" --max-mb-per-lang "$CORPUS_MB" --heldout-pct "$HELDOUT" 2>&1 | tee -a "$LOG"
fi
TOK="$OUT/tokenizer/tokenizer.json"
if [ -n "${INPUT:-}" ] && [ -f "$INPUT/tokenizer.json" ]; then
  TOK="$INPUT/tokenizer.json"
  say "tokenizer from $TOK"
else
  "$PY" "$HERE/bpe.py" train "$CORPUS" "$OUT/tokenizer" --vocab "$VOCAB" --max-mb "$BPE_MB" 2>&1 | tee -a "$LOG"
fi

EXTRA=()
[ "$THREADS" != 0 ] && EXTRA+=(--threads "$THREADS")
[ "$SMOKE" = 1 ] && EXTRA+=(--eval-every 2)
[ -n "${DEADLINE:-}" ] && EXTRA+=(--deadline "$DEADLINE")
# shellcheck disable=SC2206
[ -n "${TRAIN_ARGS:-}" ] && EXTRA+=($TRAIN_ARGS)
CACHE="$OUT/cache"
[ -n "${INPUT:-}" ] && [ -d "$INPUT/cache" ] && CACHE="$INPUT/cache"
"$PY" "$HERE/train.py" --corpus "$CORPUS" --tokenizer "$TOK" --out "$OUT/checkpoint" \
  --cache "$CACHE" --preset "$PRESET" --device "$DEVICE" --time-budget "$BUDGET" \
  --log "$LOG" "${EXTRA[@]}" > /dev/null

if [ "${EVAL:-1}" = 0 ]; then
  say "evaluation skipped (EVAL=0)"
else
EV=(--model "$OUT/checkpoint" --corpus "$CORPUS" --n "$EVAL_N" --out "$OUT/eval.json")
if [ -n "${SCULPT_BIN:-}" ] && [ -x "${SCULPT_BIN}" ]; then
  EV+=(--engine sculpt --sculpt "$SCULPT_BIN")
else
  EV+=(--engine torch --device "$DEVICE")
fi
"$PY" "$HERE/evaluate.py" "${EV[@]}" 2>&1 | tee -a "$LOG"
fi

"$PY" - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
m = {"training": json.load(open(os.path.join(out, "checkpoint", "training.json")))}
if os.path.exists(os.path.join(out, "eval.json")):
    m["evaluation"] = json.load(open(os.path.join(out, "eval.json")))
sizes = {f: os.path.getsize(os.path.join(out, "checkpoint", f))
         for f in sorted(os.listdir(os.path.join(out, "checkpoint")))}
m["files"] = sizes
json.dump(m, open(os.path.join(out, "metrics.json"), "w"), indent=1)
big = [f for f, s in sizes.items() if s > 16 * 1024 * 1024]
total = sum(s for f, s in sizes.items() if f.endswith(".safetensors"))
print("checkpoint files:", sizes, "weights total", total)
if big or total > 32 * 1000 * 1000:
    sys.exit(f"checkpoint too large: {big} total {total}")
EOF
say "done: $OUT/checkpoint, $OUT/metrics.json"

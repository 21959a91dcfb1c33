#!/usr/bin/env bash
# tools/gpu_rehearse.sh — the GPU session's one device call, rehearsed on
# this CPU machine in conditions like the GPU machine's, at toy size: what
# fails here would have failed there, where there is no time for a second
# try.
#
#   tools/gpu_rehearse.sh            (as root; after tools/gpu_session.sh --prepare)
#
# Conditions: a clean Debian bookworm minbase chroot (debootstrap, cached in
# build-rehearse/base) holding only python3 and python3-numpy: no compiler,
# none of our libraries, no cmake; no network (unshare -n); a stand-in
# nvidia-smi (tools/rehearse/nvidia-smi). Into it goes what the device tool
# sends: the files git does not ignore, plus a carry made like the real one
# (model/train/carry.py pack) but of a toy corpus (the sources under
# tests/data/real), with the REAL prepared bin.tar.xz. Then, inside,
# exactly the device's command, tools/gpu_session.sh, with OUT=/out; then,
# here, tools/gpu_session.sh --unpack of what came out (into
# build-rehearse/, never tests/gpu/results).
#
# Stood in (the rehearsal CANNOT cover these): torch (not installable in the
# chroot): a stub answers run_gpu.sh's "does PyTorch see a GPU" and
# tools/rehearse/train_standin.py replaces train.py in the copy (it checks
# the token cache train.py would read and writes a random checkpoint of the
# real size through train.py's writer); the GPU itself (the CUDA runtime
# finds no driver, so every GPU test skips and the benchmark fails: the
# rehearsal checks they ran and said why, not their numbers); the device's
# own Python 3.12 venv, glibc and CUDA toolkit (cuBLAS is loaded from it at
# run time); 16 cores (the chroot has this machine's).
#
# Environment: REHEARSE_DIR (default build-rehearse), CARRY (the prepared
# carry, default build-train/gpu-carry), REHEARSE_CORPUS=real (carry the
# prepared corpus itself instead of the toy one), MIRROR (default: apt's
# configured Debian mirror), TRAIN_S / SESSION_S (default 15 / 180).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
R=$(realpath -m "${REHEARSE_DIR:-$SRC/build-rehearse}")
CARRY=$(realpath -m "${CARRY:-$SRC/build-train/gpu-carry}")
BASE=$R/base
ROOT=$R/root
T0=$(date +%s)
say() { echo "[rehearse $(( $(date +%s) - T0 ))s] $*"; }
. "$SRC/tools/rehearse/chroot.sh"
rehearse_need gpu_rehearse
[ -f "$CARRY/bin.tar.xz" ] || { echo "gpu_rehearse: no $CARRY/bin.tar.xz: run tools/gpu_session.sh --prepare first" >&2; exit 2; }

# ---- the base system, once; a fresh root with the tree the device tool sends ----
rehearse_base "$BASE" "$R" || exit 1
rehearse_root "$BASE" "$ROOT" || exit 1
REPO=$ROOT/repo
TOY=$R/toy-input
rm -rf "$TOY" "$R/toy-carry"
mkdir -p "$TOY/corpus"
# The toy corpus: the real repositories' sources (a few MB), the real
# tokenizer when prepared (else the shipped model's).
TOKSRC=$SRC/build-train/gpu-input5/tokenizer.json
[ -f "$TOKSRC" ] || TOKSRC=$SRC/model/default/tokenizer.json
cp "$TOKSRC" "$TOY/tokenizer.json"
/usr/bin/python3 - "$SRC/tests/data/real" "$TOY/corpus" <<'EOF'
import hashlib, json, os, sys
src, out = sys.argv[1:]
recs = []
for dp, dns, fns in os.walk(src):
    dns.sort()
    for f in sorted(fns):
        if f.endswith((".py", ".c", ".h", ".ts", ".js", ".go")):
            p = os.path.join(dp, f)
            t = open(p, encoding="utf-8", errors="replace").read()
            recs.append({"path": p, "lang": "toy", "text": t})
d = hashlib.sha256()
with open(os.path.join(out, "train.jsonl"), "w") as ft, open(os.path.join(out, "heldout.jsonl"), "w") as fh:
    for i, r in enumerate(recs):
        line = json.dumps(r, ensure_ascii=False) + "\n"
        (fh if i % 20 == 0 else ft).write(line)
        d.update(line.encode())
# A few repository records (corpus.py's repo split: snippets, then a window).
with open(os.path.join(out, "repo.jsonl"), "w") as fr:
    for r in recs[:5]:
        head = "# a.py:1\ndef f():\n    pass\n"
        line = json.dumps(dict(r, text=head + r["text"].lstrip("\n"), prompt_chars=len(head)),
                          ensure_ascii=False) + "\n"
        fr.write(line)
        d.update(line.encode())
json.dump({"description": "gpu_rehearse toy corpus", "corpus_sha256": d.hexdigest(),
           "files": [[r["path"], "", ""] for r in recs]}, open(os.path.join(out, "manifest.json"), "w"))
print(f"toy corpus: {len(recs)} files")
EOF
CR=$REPO/build-train/gpu-carry
mkdir -p "$CR"
if [ "${REHEARSE_CORPUS:-toy}" = real ]; then
  # The whole prepared carry, its ~300 MB corpus included (a few minutes more).
  cp -r "$CARRY/." "$CR/"
else
  cp "$CARRY/bin.tar.xz" "$CR/"
  /usr/bin/python3 "$SRC/model/train/carry.py" pack "$TOY" "$CR" --shards 4 --level 6 \
    --sculpt "$SRC/build-carry/sculpt" | tail -3
fi
# The stand-ins (see the header): nvidia-smi, the torch stub, the trainer.
install -m 755 "$SRC/tools/rehearse/nvidia-smi" "$ROOT/usr/local/bin/nvidia-smi"
PYSITE=$(chroot "$ROOT" /usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$ROOT$PYSITE/torch"
cp "$SRC/tools/rehearse/torch/__init__.py" "$ROOT$PYSITE/torch/"
cp "$SRC/tools/rehearse/train_standin.py" "$REPO/model/train/train.py"

# ---- the conditions ----------------------------------------------------------
absent() { ! chroot "$ROOT" /bin/sh -c "$1" >/dev/null 2>&1; }
for x in gcc cc cmake nvcc; do
  absent "command -v $x"; check $? "no $x in the chroot"
done
# (libpcre2-8 is in any Debian or Ubuntu base system: grep needs it; Debian's
# numpy brings libgfortran5 and reference BLAS, which the GPU machine's pip
# numpy keeps inside its own package. The loader check after the run shows
# sculpt takes neither: every library it loads comes from the carry.)
absent 'ls /usr/lib/x86_64-linux-gnu/ | grep -E "^lib(jansson|ev|tree-sitter|utf8proc|openblas|curl|git2|http_parser)\.so"'
check $? "none of sculpt's other Debian libraries in the chroot"

# ---- the device call -------------------------------------------------------
say "the device's command in the chroot: tools/gpu_session.sh (no network)"
mkdir -p "$ROOT/out"
cat > "$ROOT/rehearse-inner.sh" <<'EOF'
python3 -c 'import socket; socket.create_connection(("deb.debian.org", 80), 3)' 2>/dev/null &&
  echo NETWORK-REACHABLE || echo no-network
cd /repo && timeout 600 bash tools/gpu_session.sh
echo "session-exit $?"
# Where the loader finds each library of the unpacked sculpt (with /proc,
# as on the machine: $ORIGIN needs it).
LD_TRACE_LOADED_OBJECTS=1 /repo/build-gpu/sculpt > /rehearse-ldd.txt 2>&1
EOF
S0=$(date +%s)
# A private mount namespace: /proc and /dev mounted for the chroot vanish
# with it.
unshare --mount --propagation private --net --fork /bin/bash -c '
  mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" &&
  exec chroot "$1" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    OUT=/out TMPDIR=/tmp TRAIN_S="$2" SESSION_S="$3" /bin/bash /rehearse-inner.sh' \
  inner "$ROOT" "${TRAIN_S:-15}" "${SESSION_S:-180}" > "$R/session.out" 2>&1
S1=$(date +%s)
cat "$R/session.out"
SRC_EXIT=$(sed -n 's/^session-exit //p' "$R/session.out")
say "the device call took $((S1 - S0)) s (exit ${SRC_EXIT:-?})"

# ---- what the GPU machine would have said ----------------------------------
grep -q "^no-network" "$R/session.out"; check $? "no network inside"
RES=$ROOT/out/gpu-results.md
grep -q "prebuilt elsewhere" "$RES" 2>/dev/null; check $? "the prebuilt binaries ran there (results: 'prebuilt elsewhere')"
grep -q "backends: cpu, cuda" "$RES" 2>/dev/null; check $? "sculpt --version there lists the CUDA backend"
! grep -q "building with cmake" "$RES" 2>/dev/null; check $? "no cmake build was attempted"
LOGS=$R/logs
rm -rf "$LOGS"; mkdir -p "$LOGS"
tar -xzf "$ROOT/out/logs.tar.gz" -C "$LOGS" 2>/dev/null
SL=$LOGS/logs/session.log
grep -q "sculpt tokenize: .* tokens" "$SL" 2>/dev/null; check $? "the corpus was tokenized by sculpt tokenize --jsonl"
grep -q "^\[carry .*\] train: .*(as packed)" "$SL" && grep -q "^\[carry .*\] heldout: .*(as packed)" "$SL" &&
  grep -q "^\[carry .*\] repo: .*(as packed)" "$SL"
check $? "the three splits' streams (train, heldout, repo) equal the ones made here"
grep -q "tokens from the cache" "$LOGS/logs/train.log" 2>/dev/null && ! grep -q "CACHE MISS" "$LOGS/logs/train.log"
check $? "the trainer found train.py's cache (no Python BPE pass)"
grep -q "## Training (model/train/train.py" "$RES" && grep -q "MFU" "$RES"
check $? "the results file has the training's section (MFU line)"
grep -q "## Machine inventory" "$RES" && grep -q "weight files over 10 MB" "$RES"
check $? "the results file has the machine's inventory"
grep -qE "Skipped|skipping" "$LOGS/logs/gpu-logs/ctest-gpu.log" 2>/dev/null
check $? "the GPU tests were replayed and skipped for want of a device"
grep -E "^[0-9]+/[0-9]+ Test" "$LOGS/logs/gpu-logs/ctest-gpu.log" 2>/dev/null | sed 's/^/       /'
N=$(find "$ROOT/out" -type f | wc -l)
BIG=$(find "$ROOT/out" -type f -size +16M | wc -l)
DEEP=$(find "$ROOT/out" -mindepth 2 | wc -l)
[ "$N" -le 8 ] && [ "$BIG" -eq 0 ] && [ "$DEEP" -eq 0 ]
check $? "OUT obeys the device limits: $N files, $BIG over 16 MiB, $DEEP nested"
ls -la "$ROOT/out" | sed 's/^/       /'
# Every library sculpt loaded there is carried, or glibc / the C++ runtime.
cp "$ROOT/rehearse-ldd.txt" "$R/ldd.txt" 2>/dev/null
grep -q "=>" "$R/ldd.txt" && ! grep -q "not found" "$R/ldd.txt" && ! awk '/=>/{print $1, $3}' "$R/ldd.txt" |
  grep -vE "^(libc|libm|libstdc\+\+|libgcc_s|libresolv|libdl|libpthread|librt)\.so|/repo/build-gpu/lib/"
check $? "every library sculpt loads there is carried (or glibc / the C++ runtime)"

# ---- here, after: --unpack ---------------------------------------------------
say "--unpack of what came back, here"
RESULT_DIR=$R/result GPU_RESULTS_DIR=$R/results bash "$SRC/tools/gpu_session.sh" --unpack "$ROOT/out"
check $? "--unpack exits 0"
"$SRC/build-carry/sculpt" model info --model "$R/result/checkpoint" > "$R/model-info.txt" 2>&1
check $? "sculpt model info loads the unpacked checkpoint"
sed 's/^/       /' "$R/model-info.txt" | head -12
ls "$R/results"/*.md >/dev/null 2>&1; check $? "the results file is filed (under build-rehearse/results)"
say "done: $FAILS failed check(s); logs in $R"
[ "$FAILS" -eq 0 ]

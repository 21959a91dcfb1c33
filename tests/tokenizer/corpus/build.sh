#!/bin/sh
set -eu
: "${CC:=cc}"
out=${1:-build}
mkdir -p "$out"
for f in src/*.c; do
    "$CC" -O2 -Wall -c "$f" -o "$out/$(basename "${f%.c}").o" || { echo "failed: $f" >&2; exit 1; }
done
echo "objects: $(ls "$out"/*.o | wc -l)"   

#!/usr/bin/env bash
# Seeds fuzz/corpus/script with the test recordings (golden cases, damaged
# fixtures and fuzz regressions). Run from anywhere.
set -euo pipefail
FUZZ=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$FUZZ/.." && pwd)
mkdir -p "$FUZZ/corpus/script"
for f in "$ROOT"/tests/golden/*/perf.data "$ROOT"/tests/damaged/*/perf.data "$ROOT"/tests/fuzz-regressions/*; do
    [ -f "$f" ] || continue
    cp "$f" "$FUZZ/corpus/script/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
done
# Big-endian copies too (pstitch-swap, built by `cargo build --release`).
SWAP=$ROOT/target/release/pstitch-swap
if [ -x "$SWAP" ]; then
    for c in c-threads two-events pipe compressed pipe-compressed deferred deferred-pipe; do
        "$SWAP" --decompress "$ROOT/tests/golden/$c/perf.data" "$FUZZ/corpus/script/seed-$c-be.data"
    done
fi
ls "$FUZZ/corpus/script" | wc -l

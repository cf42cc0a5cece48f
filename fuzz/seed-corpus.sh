#!/usr/bin/env bash
# Seeds fuzz/corpus/script with the test recordings (golden cases, damaged
# fixtures and fuzz regressions) and fuzz/corpus/demangle with symbol names.
# Run from anywhere.
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
# The crafted recordings of tests/hostile.rs (made by its generators).
PSTITCH_FUZZ_SEEDS="$FUZZ/corpus/script" cargo test --release --manifest-path "$ROOT/Cargo.toml" \
    --test hostile write_fuzz_seeds -- --ignored --exact >/dev/null
# Symbol names for the demangle target: a sample of the C++ conformance
# cases (tests/demangle/), one name per file.
mkdir -p "$FUZZ/corpus/demangle"
zstd -dc "$ROOT/tests/demangle/cases.tsv.zst" | cut -f1 | awk 'NR % 25 == 0' |
    while IFS= read -r name; do
        printf '%s' "$name" > "$FUZZ/corpus/demangle/$(printf '%s' "$name" | sha1sum | cut -c1-16)"
    done
ls "$FUZZ/corpus/script" | wc -l
ls "$FUZZ/corpus/demangle" | wc -l

#!/usr/bin/env bash
# CRAFTED case brstack-big-endian: tests/golden/brstack-callchain/perf.data byte-swapped
# into the form perf record on a big-endian machine writes (pstitch-swap, crate
# pstitch-fixtures): branch entries' flag words in the big-endian bit-field layout.
# perf 7.2's output on the result is the expectation (its flags print differently from
# the little-endian original's: perf and pstitch read the same big-endian bit fields).
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$CASE/../../..
cargo run --quiet --release --manifest-path "$ROOT/Cargo.toml" -p pstitch-fixtures --bin pstitch-swap -- \
  "$CASE/../brstack-callchain/perf.data" "$CASE/perf.data"

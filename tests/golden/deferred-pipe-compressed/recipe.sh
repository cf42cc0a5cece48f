#!/usr/bin/env bash
# DERIVED case deferred-pipe-compressed: a -z (compressed, pipe-mode) recording in deferred form; pstitch-defer compresses the kernel records again, in chunks of one zstd stream as perf record -z writes them.
# Made from tests/golden/pipe-compressed/perf.data by pstitch-defer, the project's fixture
# tool that rewrites a frame-pointer recording into the deferred user-callchain
# form a defer_callchain kernel writes (see src/fixture/defer.rs):
#     pstitch-defer (no options)
# Needs only cargo (no root, no perf). tests/fixtures/record-all.sh runs derived
# recipes after the recorded ones; expected outputs come from make-golden.sh.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$CASE/../../.." && pwd)
cargo run -q --release --manifest-path "$ROOT/Cargo.toml" --bin pstitch-defer -- \
     "$CASE/../pipe-compressed/perf.data" "$CASE/perf.data"

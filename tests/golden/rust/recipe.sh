#!/usr/bin/env bash
# Case rust: rustwork (Rust: dyn trait, generics, closures, iterator chain, named
#   thread "rw-hist"; legacy + v0 mangled symbols). cpu-clock at 500 Hz.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/rust
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 500 -g -o perf.data -- /tmp/pstitch-fixtures/bin/rustwork
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case compressed: cwork 40 (40% of the default work) recorded with -z (zstd
#   PERF_RECORD_COMPRESSED records, HEADER_COMPRESSED feature).
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/compressed
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -z -e cpu-clock -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 40
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case two-events: cwork 50 with two events: cpu-clock (1 kHz, has PERIOD) and page-
#   faults (period=1 term, no PERIOD), -d (ADDR, mmap_data): differing sample_types,
#   so samples carry IDENTIFIER.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/two-events
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -e page-faults/period=1/ -F 1000 -g -d -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 50
cp perf.data "$CASE"/perf.data

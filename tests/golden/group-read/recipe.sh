#!/usr/bin/env bash
# Case group-read: cwork 50 with a leader-sampled group '{cpu-clock,task-clock,
#   page-faults}:S' (PERF_SAMPLE_READ, PERF_FORMAT_GROUP|ID: each sample carries
#   the counts of every member; perf script prints one line per member whose
#   count moved), -g.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/group-read
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e '{cpu-clock,task-clock,page-faults}:S' -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 50
cp perf.data "$CASE"/perf.data

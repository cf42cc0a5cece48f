#!/usr/bin/env bash
# Case pipe: cwork 40 (40% of the default work) recorded in pipe mode (-o -): the raw
#   stream (PERFILE2 pipe header, HEADER_ATTR/FEATURE/... records) saved as perf.data.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/pipe
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 1000 -g -o - -- /tmp/pstitch-fixtures/bin/cwork 40 > perf.data
cp perf.data "$CASE"/perf.data

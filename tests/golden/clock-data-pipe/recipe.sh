#!/usr/bin/env bash
# Case clock-data-pipe: cwork 5 in pipe mode (-o -) recorded with -k CLOCK_MONOTONIC (use_clockid), so that
#   perf writes HEADER_CLOCK_DATA (the wall-clock time against the sampling clock):
#   the tod field. Goldens print it in UTC (make-golden.sh and the harness set TZ).
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/clock-data-pipe
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 1000 -g -k CLOCK_MONOTONIC -o - -- /tmp/pstitch-fixtures/bin/cwork 5 > "$CASE"/perf.data

#!/usr/bin/env bash
# Case offcpu-mixed: cwork 50 with two events, -e sched:sched_switch -e cpu-clock -g:
#   tracepoint samples (period 1, RAW) interleaved with cpu-clock samples (4 kHz
#   default frequency); the event column is padded to "sched:sched_switch".
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/offcpu-mixed
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e sched:sched_switch -e cpu-clock -g -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 50
cp perf.data "$CASE"/perf.data

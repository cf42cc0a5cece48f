#!/usr/bin/env bash
# Case metric-system-wide: -a for 0.2 s with cpu-clock (200 Hz), page-faults/period=50/,
#   context-switches/period=10/ and cpu-migrations/period=1/: THREAD_MAP holds -1 (any
#   thread), so every sample prints its `metric` lines, over cpu-clock (perf's
#   #target_cpu) and each hanging off its own event. Samples carry the CPU.
# Its variants print no ip: its kallsyms link (to another kernel's) does not matter.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root (-a). Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/metric-system-wide
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -a -e cpu-clock -F 200 -e page-faults/period=50/ -e context-switches/period=10/ -e cpu-migrations/period=1/ -o perf.data -- sleep 0.2
cp perf.data "$CASE"/perf.data

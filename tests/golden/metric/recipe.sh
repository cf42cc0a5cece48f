#!/usr/bin/env bash
# Case metric: cwork 30 (three threads) with the software events of perf's common
#   metrics (task-clock 1 kHz, page-faults/period=20/, context-switches/period=1/,
#   cpu-migrations/period=1/), per-task: the `metric` field prints nan lines for
#   page_faults_per_second, cs_per_second and migrations_per_second after samples of
#   the thread in THREAD_MAP and "Missing thread map entry" on stderr for the others.
#   No PERF_SAMPLE_CPU (perf 7.2 counts nothing then; see docs/metric.md).
# Its variants print no ip: its kallsyms link (to another kernel's) does not matter.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/metric
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e task-clock -F 1000 -e page-faults/period=20/ -e context-switches/period=1/ -e cpu-migrations/period=1/ -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 30
cp perf.data "$CASE"/perf.data

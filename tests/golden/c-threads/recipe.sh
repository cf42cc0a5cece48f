#!/usr/bin/env bash
# Case c-threads: cwork (main + 2 pthreads, one renamed "cw-sort"), cpu-clock at 1
#   kHz, fp callchains.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/c-threads
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/cwork
cp perf.data "$CASE"/perf.data

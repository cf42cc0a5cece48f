#!/usr/bin/env bash
# Case regs: cwork 30 sampled with the interrupted registers (--intr-regs) and the
#   user registers (--user-regs: every register perf 6.1 knows for x86_64), -g:
#   PERF_SAMPLE_REGS_INTR and PERF_SAMPLE_REGS_USER, printed by -F iregs,uregs.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/regs
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 1000 -g --intr-regs --user-regs -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 30
cp perf.data "$CASE"/perf.data

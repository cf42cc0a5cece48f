#!/usr/bin/env bash
# Case missing-dso: vanish is run from /tmp/pstitch-fixtures/gone/ and deleted
#   afterwards; it is never put into symfs, so its frames stay [unknown].
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/missing-dso
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
mkdir -p /tmp/pstitch-fixtures/gone
cp /tmp/pstitch-fixtures/bin/vanish /tmp/pstitch-fixtures/gone/vanish
perf record -N -e cpu-clock -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/gone/vanish
rm -f /tmp/pstitch-fixtures/gone/vanish
cp perf.data "$CASE"/perf.data

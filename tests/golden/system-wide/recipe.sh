#!/usr/bin/env bash
# Case system-wide: -a -g at 499 Hz for 0.3 s while cwork (started just before, so its
#   mmaps/comms are synthesized from /proc) runs: swapper, kernel threads, other
#   processes.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/system-wide
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
# Retries if an unrelated process happened to map a file under /work (checkout path).
for try in 1 2 3; do
    /tmp/pstitch-fixtures/bin/cwork 250 >/dev/null &
    cw=$!
    sleep 0.05
    perf record -N -a -g -e cpu-clock -F 499 -o perf.data -- sleep 0.3
    wait $cw
    [ "$(strings perf.data | grep -c /work || true)" = 0 ] && break
    echo "system-wide: perf.data mentions /work, recording again" >&2
    [ $try = 3 ] && { echo "system-wide: giving up" >&2; exit 1; }
done
cp perf.data "$CASE"/perf.data

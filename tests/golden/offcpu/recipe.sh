#!/usr/bin/env bash
# Case offcpu: off-CPU profile, system-wide: -e sched:sched_switch -a -g for 0.2 s
#   while cwork (started just before) runs: tracepoint samples with kernel+user
#   callchains from every task that switches out, swapper, kernel threads.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/offcpu
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
# Retries (waiting for a quieter moment) if an unrelated process happened to map a
# file under /work (checkout path).
for try in $(seq 1 20); do
    /tmp/pstitch-fixtures/bin/cwork 60 >/dev/null &
    cw=$!
    sleep 0.05
    perf record -N -e sched:sched_switch -a -g -o perf.data -- sleep 0.2
    wait $cw
    [ "$(strings perf.data | grep -c /work || true)" = 0 ] && break
    echo "offcpu: perf.data mentions /work, recording again" >&2
    [ "$try" = 20 ] && { echo "offcpu: giving up" >&2; exit 1; }
    sleep 5
done
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# DAMAGED case killed: a `perf record -g` killed with SIGKILL while recording, so
# the header was never updated: its data size is still 0 and the feature bits are
# set although no feature section was written. The records end cleanly (perf
# record writes whole records); small ring buffers (-m 4) make perf write often.
# Recorded with the host perf (6.1); needs root. The size (~50 KB) depends on luck;
# the committed file has 744 samples.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/killed
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -m 4 -e cpu-clock -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 3000 >/dev/null 2>&1 &
PERF=$!
sleep 0.6
CHILD=$(pgrep -P "$PERF" || true)
kill -9 "$PERF"
wait "$PERF" 2>/dev/null || true
[ -n "$CHILD" ] && kill "$CHILD" 2>/dev/null || true
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case jit-map: jitwork (code it copies into an anonymous mapping and runs, with
#   the /tmp/perf-PID.map a JIT writes for it), cpu-clock at 1 kHz, fp callchains.
#   perf names such a mapping /tmp/perf-PID.map, reads its symbols from that file
#   (outside the symfs, at that very path) and calls the DSO "[JIT] tid PID" in
#   source-line fallbacks.
# The map file is kept in tmp/ next to perf.data and removed from /tmp: the golden
# harness (tests/golden.rs) puts it back at /tmp/perf-PID.map while the case runs,
# make-golden.sh into perf-ref's chroot's /tmp.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/jit-map
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/jitwork
pid=$(perf script -i perf.data -F pid 2>/dev/null | head -1 | tr -d ' ')
cp perf.data "$CASE"/perf.data
rm -rf "$CASE"/tmp && mkdir "$CASE"/tmp
mv /tmp/perf-"$pid".map "$CASE"/tmp/

#!/usr/bin/env bash
# Case threads-dir: cwork 50 recorded with `perf record --threads` (one writer
#   thread per CPU): perf.data is a directory holding `data` (header, synthesized
#   records) and one `data.N` file per thread (their ring buffers' records, no
#   FINISHED_ROUND), which perf reads in turns and sorts by time. User space only
#   (cpu-clock:u): recorded on kernel 6.18.44-fc-v595, whose kallsyms the repository
#   does not carry; the v657 one it links to is never consulted.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/threads-dir
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N --threads -e cpu-clock:u -F 1000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 50
rm -rf "$CASE"/perf.data
cp -r perf.data "$CASE"/perf.data
chmod 755 "$CASE"/perf.data
chmod 644 "$CASE"/perf.data/*

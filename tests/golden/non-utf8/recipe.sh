#!/usr/bin/env bash
# Case non-utf8: bytework run as /tmp/pstitch-fixtures/bin/byte\xffwork\xe9 (a path that
#   is not UTF-8: its MMAP2 file name and its first comm are not either), renaming its
#   threads "main\xfe\xff" and "w\xe9-\xc3\xa9" with prctl(PR_SET_NAME); cpu-clock at
#   1 kHz, fp callchains. perf prints comms and paths as the bytes they are.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/non-utf8
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -F 1000 -g -o perf.data -- "$(printf '/tmp/pstitch-fixtures/bin/byte\xffwork\xe9')"
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case dwarf-pipe: dwarfwork 400 (the dwarf-c workload, half the work) recorded with
#   --call-graph dwarf in pipe mode (-o -): the raw stream saved as perf.data. DWARF
#   unwinding (issue 25) needs nothing from the header: the attrs, the build-ids of the
#   MMAP2 records and the features arrive as records.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/dwarf-pipe
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
# A clean environment, as for dwarf-c: the stack copies reach the environment strings.
env -i PATH=/usr/bin:/bin perf record -N -e cpu-clock -F 200 --call-graph dwarf -o - -- /tmp/pstitch-fixtures/bin/dwarfwork 400 > perf.data
cp perf.data "$CASE"/perf.data

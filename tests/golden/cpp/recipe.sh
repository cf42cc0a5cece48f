#!/usr/bin/env bash
# Case cpp: cppwork, cpu-clock every 1 ms (-c 1000000), (C++: templates, namespaces,
#   lambda, std::sort/std::map, .constprop/.isra clones). Fixed period (-c):
#   sample_type has no PERIOD.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/cpp
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e cpu-clock -c 1000000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/cppwork
cp perf.data "$CASE"/perf.data

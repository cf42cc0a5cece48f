#!/usr/bin/env bash
# Case inject-pipe: tests/golden/c-threads/perf.data turned into a pipe file by the
# host's `perf inject -o -` (perf 6.1). Such a pipe names its event only in a
# HEADER_EVENT_DESC feature record that comes after the HEADER_ATTR record; perf 7.2
# has named the event from its attr by then (it drops a default field the samples
# lack and names the event in that message), so it prints `cpu-clock:H`, not the
# name the feature gives. Needs the host perf; run from anywhere.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$CASE/.."
perf inject -i c-threads/perf.data -o - > "$CASE/perf.data"

#!/usr/bin/env bash
# DAMAGED case damaged-cpu: the sample at 0xb048 says CPU 7 in a 2-CPU recording; perf 7.2 clamps it to 0 ('sample CPU 7 >= nr_cpus_avail 2, clamping to 0').
# Made from tests/golden/system-wide/perf.data by patching bytes in place (offsets are
# those of that recording). perf 7.2 warns and goes on here, so its output is
# the expectation. Needs only bash and dd.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp "$CASE/../system-wide/perf.data" "$CASE/perf.data"
# patch OFFSET HEXBYTES: overwrite bytes of perf.data at OFFSET.
patch() { printf "$(echo "$2" | sed 's/../\\x&/g')" | dd of="$CASE/perf.data" bs=1 seek="$1" conv=notrunc status=none; }
patch 45168 07000000

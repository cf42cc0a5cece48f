#!/usr/bin/env bash
# DAMAGED case damaged-too-small: the COMM record at 0x278 claims 16 bytes (perf's minimum is 17); its other 24 bytes become a FINISHED_INIT record. perf skips the COMM ('too small').
# Made from tests/golden/c-threads/perf.data by patching bytes in place (offsets are
# those of that recording). perf 7.2 warns and goes on here, so its output is
# the expectation. Needs only bash and dd.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp "$CASE/../c-threads/perf.data" "$CASE/perf.data"
# patch OFFSET HEXBYTES: overwrite bytes of perf.data at OFFSET.
patch() { printf "$(echo "$2" | sed 's/../\\x&/g')" | dd of="$CASE/perf.data" bs=1 seek="$1" conv=notrunc status=none; }
patch 638 1000; patch 648 520000000000 ; patch 654 1800

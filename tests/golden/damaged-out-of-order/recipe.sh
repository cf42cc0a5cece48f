#!/usr/bin/env bash
# DAMAGED case damaged-out-of-order: records that come after the round they belong to
# was flushed (perf: "N out of order events recorded."). The SAMPLE at 0xa28 becomes
# a FINISHED_ROUND (type 68, its size kept), which flushes up to the newest time seen
# before the round at 0x590 (756350353818); the SAMPLE at 0xa88 then gets the time
# 756350000000, before that flush. perf 7.2 counts it, prints it in queue order and
# warns at the end, so its output is the expectation.
# Made from tests/golden/rust/perf.data by patching bytes in place (offsets are
# those of that recording). Needs only bash and dd.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp "$CASE/../rust/perf.data" "$CASE/perf.data"
# patch OFFSET HEXBYTES: overwrite bytes of perf.data at OFFSET.
patch() { printf "$(echo "$2" | sed 's/../\\x&/g')" | dd of="$CASE/perf.data" bs=1 seek="$1" conv=notrunc status=none; }
patch $((0xa28)) 44000000
patch $((0xaa0)) 801bf919b0000000

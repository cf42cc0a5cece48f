#!/usr/bin/env bash
# DAMAGED case damaged-lost-samples: the COMM record at 0x278 becomes a LOST_SAMPLES
# record (type 13) saying 100 samples were lost: with the recording's 444 samples, more
# than 5% (18.38%), so perf warns "Processed 544 samples and lost 18.38%!".
# Made from tests/golden/c-threads/perf.data by patching bytes in place (offsets are
# those of that recording). perf 7.2 warns and goes on here, so its output is
# the expectation. Needs only bash and dd.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp "$CASE/../c-threads/perf.data" "$CASE/perf.data"
# patch OFFSET HEXBYTES: overwrite bytes of perf.data at OFFSET.
patch() { printf "$(echo "$2" | sed 's/../\\x&/g')" | dd of="$CASE/perf.data" bs=1 seek="$1" conv=notrunc status=none; }
patch 632 0d000000
patch 640 6400000000000000

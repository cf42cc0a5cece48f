#!/usr/bin/env bash
# DAMAGED case damaged-unknown-type: the COMM record at 0x278 has type 90, a user record type perf 7.2 does not know ('Unsupported header type 90'); skipped.
# Made from tests/golden/c-threads/perf.data by patching bytes in place (offsets are
# those of that recording). perf 7.2 warns and goes on here, so its output is
# the expectation. Needs only bash and dd.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp "$CASE/../c-threads/perf.data" "$CASE/perf.data"
# patch OFFSET HEXBYTES: overwrite bytes of perf.data at OFFSET.
patch() { printf "$(echo "$2" | sed 's/../\\x&/g')" | dd of="$CASE/perf.data" bs=1 seek="$1" conv=notrunc status=none; }
patch 632 5a000000

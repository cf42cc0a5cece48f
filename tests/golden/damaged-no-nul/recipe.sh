#!/usr/bin/env bash
# DAMAGED case damaged-no-nul: the COMM record at 0x278 has no NUL before its end (every zero byte from its comm to the end of the record set to 'A'); perf skips it ('string not null-terminated').
# Made from tests/golden/c-threads/perf.data by patching bytes in place (offsets are
# those of that recording). perf 7.2 warns and goes on here, so its output is
# the expectation. Needs only bash and dd.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cp "$CASE/../c-threads/perf.data" "$CASE/perf.data"
# patch OFFSET HEXBYTES: overwrite bytes of perf.data at OFFSET.
patch() { printf "$(echo "$2" | sed 's/../\\x&/g')" | dd of="$CASE/perf.data" bs=1 seek="$1" conv=notrunc status=none; }
patch 655 41; patch 658 4141; patch 662 4141; patch 669 414141

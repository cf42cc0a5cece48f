#!/usr/bin/env bash
# CRAFTED case data-src: the data_src field decoded (|OP ..|LVL ..|SNP ..|TLB ..|LCK ..|BLK ..).
# Software events carry only the "N/A" encoding (0x1e05080021), so this copies
# tests/golden/two-events/perf.data (page-faults recorded with -d) and replaces every
# data_src word of that value, in file order, with values built from every field of
# union perf_mem_data_src (op, lvl, snoop, lock, dtlb, lvl_num, remote, snoopx, blk,
# hops), chosen by a fixed pseudo-random sequence. perf 7.2 decodes them; its output
# is the expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 - "$CASE/../two-events/perf.data" "$CASE/perf.data" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
na = struct.pack('<Q', 0x1e05080021)
seed = 12345
def rnd(n):
    global seed
    seed = (seed * 1103515245 + 12345) % (1 << 31)
    return (seed >> 8) % n
def value(i):
    if i % 7 == 0:
        return 0x1e05080021            # keep some N/A words
    op = rnd(1 << 5)
    lvl = rnd(1 << 14) if rnd(3) else (1 << rnd(14))
    snoop = rnd(1 << 5)
    lock = rnd(4)
    dtlb = rnd(1 << 7)
    lvl_num = rnd(16) if rnd(2) else 0
    remote = rnd(2)
    snoopx = rnd(4)
    blk = rnd(8)
    hops = rnd(5)                      # perf's table has 5 entries
    return (op | lvl << 5 | snoop << 19 | lock << 24 | dtlb << 26 | lvl_num << 33
            | remote << 37 | snoopx << 38 | blk << 40 | hops << 43)
i, at = 0, data.find(na)
while at >= 0:
    data[at:at + 8] = struct.pack('<Q', value(i))
    i += 1
    at = data.find(na, at + 8)
open(sys.argv[2], 'wb').write(data)
print(f"{i} data_src words replaced", file=sys.stderr)
PY

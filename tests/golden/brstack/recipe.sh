#!/usr/bin/env bash
# CRAFTED case brstack: branch stacks (PERF_SAMPLE_BRANCH_STACK with HW_INDEX) and
# weight structs (PERF_SAMPLE_WEIGHT_STRUCT: weight, ins_lat, retire_lat) on every
# sample. This host records neither (no LBR in the VM, no weight structs from software
# events), so this copies tests/golden/bpf-ksym/perf.data (cpu-clock -g, sample_type
# IP|TID|TIME|PERIOD|CALLCHAIN, the callchain last) and rewrites each sample's
# callchain bytes in place, without changing any size:
#   [nr][ips x nr]  ->  [bnr][hw_idx][{from,to,flags} x bnr][weight][zeros]
# with bnr = (nr - 2) / 3. from/to are the sample's own callchain addresses (kernel,
# BPF program, user; so they resolve), now and then moved by a few bytes or replaced by
# an address no map holds; flags set every bit field of struct perf_branch_entry
# (mispred, predicted, in_tx, abort, cycles, type, spec, new_type, priv) and the weight
# word every field of union perf_sample_weight, by a fixed pseudo-random sequence.
# sample_type becomes IP|TID|TIME|PERIOD|BRANCH_STACK|WEIGHT_STRUCT and
# branch_sample_type ANY|HW_INDEX, in the attrs section and in EVENT_DESC's copy.
# perf ignores the zeros left at the end of a sample. perf 7.2's output on the result is
# the expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 - "$CASE/../bpf-ksym/perf.data" "$CASE/perf.data" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
u64 = lambda o: struct.unpack_from('<Q', d, o)[0]
u32 = lambda o: struct.unpack_from('<I', d, o)[0]
IP, TID, TIME, CALLCHAIN, PERIOD = 1, 2, 4, 32, 256
BRANCH_STACK, WEIGHT_STRUCT = 1 << 11, 1 << 24
OLD = IP | TID | TIME | CALLCHAIN | PERIOD
NEW = IP | TID | TIME | PERIOD | BRANCH_STACK | WEIGHT_STRUCT
BRANCH_ANY, HW_INDEX = 1 << 3, 1 << 17
seed = 2718
def rnd(n):
    global seed
    seed = (seed * 1103515245 + 12345) % (1 << 31)
    return (seed >> 8) % n
def patch_attr(at):
    assert u64(at + 24) == OLD, hex(u64(at + 24))
    struct.pack_into('<Q', d, at + 24, NEW)
    struct.pack_into('<Q', d, at + 72, BRANCH_ANY | HW_INDEX)
attr_size, (attrs_off, attrs_size), (data_off, data_size) = u64(16), (u64(24), u64(32)), (u64(40), u64(48))
for at in range(attrs_off, attrs_off + attrs_size, attr_size):
    patch_attr(at)
# EVENT_DESC (feature 12): its offset is in the feature table after the data.
bits = int.from_bytes(d[72:104], 'little')
table = data_off + data_size
for n, bit in enumerate(b for b in range(256) if bits >> b & 1):
    if bit == 12:
        at = u64(table + 16 * n)
        nr, asz = u32(at), u32(at + 4)
        at += 8
        for _ in range(nr):
            patch_attr(at)
            at += asz
            nids = u32(at)
            at += 4 + 4 + u32(at + 4) + 8 * nids
def flags():
    mispred, predicted = rnd(2), rnd(2)
    in_tx, abort = rnd(2), (rnd(5) == 0)
    cycles = rnd(1 << 16) if rnd(3) == 0 else rnd(40)
    btype = rnd(16)
    spec, new_type, priv = rnd(4), rnd(8), rnd(8)
    return (mispred | predicted << 1 | in_tx << 2 | abort << 3 | cycles << 4 | btype << 20
            | spec << 24 | new_type << 26 | priv << 30 | rnd(4) << 33)
def addr(ips):
    a = ips[rnd(len(ips))]
    k = rnd(8)
    if k == 0:
        return 0x1000 + 8 * rnd(64)            # in no map
    if k == 1:
        return a + rnd(32)
    return a
pos, end, samples, entries = data_off, data_off + data_size, 0, 0
while pos < end:
    typ, size = u32(pos), struct.unpack_from('<H', d, pos + 6)[0]
    if typ == 9:
        chain = pos + 8 + 32                    # after IP, TID, TIME, PERIOD
        nr = u64(chain)
        ips = [u64(chain + 8 + 8 * i) for i in range(nr)]
        ips = [a for a in ips if a < (1 << 64) - 4095] or [u64(pos + 8)]
        assert chain + 8 + 8 * nr == pos + size
        bnr = max(nr - 2, 0) // 3
        out = struct.pack('<QQ', bnr, rnd(32))
        for _ in range(bnr):
            out += struct.pack('<QQQ', addr(ips), addr(ips), flags())
        weight = rnd(1 << 32) if rnd(4) == 0 else rnd(2000)
        out += struct.pack('<Q', weight | rnd(1 << 16) << 32 | rnd(1 << 16) << 48)
        room = 8 + 8 * nr
        assert len(out) <= room, (nr, len(out))
        out = (out + bytes(room))[:room]
        d[chain:chain + room] = out
        samples += 1
        entries += bnr
    pos += size
open(sys.argv[2], 'wb').write(d)
print(f"{samples} samples, {entries} branch entries", file=sys.stderr)
PY

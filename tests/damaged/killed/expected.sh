#!/usr/bin/env bash
# Makes fields.out, the expected output for the killed recording. perf 7.2 itself
# prints nothing for it ("data size field is 0 ... Was the 'perf record' command
# properly terminated?", exit 255), so perf-ref is run on a REPAIRED copy: data
# size set to the bytes after the data offset, feature bits cleared (no feature
# sections exist). pstitch must print on the killed file what perf-ref prints on
# the repaired one. Needs root (perf-ref).
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PERF_REF=${PERF_REF:-/work/shared/reference-perf/perf-ref}
REPAIRED=$(mktemp)
trap 'rm -f "$REPAIRED"' EXIT
cp "$CASE/perf.data" "$REPAIRED"
u64le() { local v=$1 s=""; for _ in 1 2 3 4 5 6 7 8; do s+=$(printf '\\x%02x' $((v & 255))); v=$((v >> 8)); done; printf "$s"; }
off=$(od -An -t u8 -j 40 -N 8 "$REPAIRED" | tr -d ' ')
size=$(( $(stat -c %s "$REPAIRED") - off ))
u64le "$size" | dd of="$REPAIRED" bs=1 seek=48 conv=notrunc status=none
head -c 32 /dev/zero | dd of="$REPAIRED" bs=1 seek=72 conv=notrunc status=none
cd "$CASE"
"$PERF_REF" script -i "$REPAIRED" --symfs=symfs --kallsyms=kallsyms --no-inline \
    -F comm,pid,tid,time,event,ip,period > fields.out

#!/bin/sh
# Regenerates cases.tsv.zst: each name with what abi::__cxa_demangle prints
# for it, run inside the perf-ref chroot so the answer comes from the same
# libstdc++ perf 7.2 uses there.
#
#   sudo tests/demangle/make-expected.sh [NAMES-FILE]
#
# Without NAMES-FILE the names already in cases.tsv.zst are reused (how they
# were chosen: README.md here); pstitch itself is never run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=${PERF_REF_ROOT:-/opt/perf-ref}
work=$(mktemp -d "$root/tmp/cxa.XXXXXX")
trap 'rm -rf "$work"' EXIT
g++ -O2 -o "$work/cxa" "$here/cxa.cpp"
if [ $# -gt 0 ]; then
    cp "$1" "$work/names"
else
    zstd -dc "$here/cases.tsv.zst" | cut -f1 > "$work/names"
fi
inside=${work#"$root"}
# Substitution bombs (README.md) make __cxa_demangle grow its output until
# realloc fails, and it then returns NULL: with 1 GiB of address space that
# happens after seconds instead of after all the machine's memory.
chroot "$root" sh -c "ulimit -v 1048576; \"$inside/cxa\" < \"$inside/names\"" > "$work/cases.tsv"
[ "$(wc -l < "$work/cases.tsv")" = "$(wc -l < "$work/names")" ]
zstd -q -19 -f "$work/cases.tsv" -o "$here/cases.tsv.zst"
echo "$(wc -l < "$work/cases.tsv") names -> $here/cases.tsv.zst"

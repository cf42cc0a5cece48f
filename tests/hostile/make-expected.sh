#!/bin/sh
# Regenerates tests/hostile/expected/*.out.zst: perf-ref's output for every
# crafted case of tests/hostile.rs. The cases are written by the test
# `write_cases` (their generators are in tests/hostile/gen.rs); pstitch is
# never run.
#
#   sudo tests/hostile/make-expected.sh          (root: perf-ref chroots)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
PERF_REF=${PERF_REF:-/work/shared/reference-perf/perf-ref}
work=$(mktemp -d /tmp/pstitch-hostile-expected.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && PSTITCH_HOSTILE_DIR="$work" cargo test --release --test hostile -- --ignored --exact write_cases >/dev/null)
mkdir -p "$here/expected"
for dir in "$work"/*/; do
    name=$(basename "$dir")
    # shellcheck disable=SC2046
    (cd "$dir" && timeout 600 "$PERF_REF" script -i perf.data --symfs=symfs \
        --kallsyms="$repo/tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms" $(cat args) > out 2> err) \
        || { echo "make-expected.sh: $name: perf-ref failed" >&2; cat "$dir/err" >&2; exit 1; }
    [ -s "$dir/err" ] && { echo "$name: perf-ref's stderr:"; sed 's/^/    /' "$dir/err"; }
    zstd -q -19 -f "$dir/out" -o "$here/expected/$name.out.zst"
    printf '%-28s %8d lines\n' "$name" "$(wc -l < "$dir/out")"
done

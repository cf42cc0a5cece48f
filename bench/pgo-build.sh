#!/usr/bin/env bash
# Builds the profile-guided release binary the benchmark measures:
#
#   bench/pgo-build.sh            -> prints the binary's path
#                                    (target/pgo/use/release/pstitch)
#
# 1. a release build instrumented to count branches and calls
#    (-Cprofile-generate);
# 2. that build run over the repository's own recordings: every golden case
#    (tests/golden/<case>/perf.data with each of its variants' arguments,
#    as the golden tests run them). Never the benchmark's recording;
# 3. the counts merged (llvm-profdata from rustup's llvm-tools component,
#    installed if missing) and the release build made again with them
#    (-Cprofile-use): hot paths laid out together, cold ones moved aside,
#    inlining decided by what runs.
#
# The source and the output are those of `cargo build --release`; only the
# code layout differs (the golden tests run against this binary too, see
# .ci/run). Without rustup, it says so and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/target/pgo

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  command -v rustup >/dev/null || { echo "pgo-build: llvm-profdata needs rustup's llvm-tools component" >&2; exit 1; }
  rustup component add llvm-tools >&2
fi

rm -rf "$dir/profiles"
RUSTFLAGS="-Cprofile-generate=$dir/profiles" cargo build --release --quiet --bins --target-dir "$dir/gen" >&2

# The training runs: the golden cases, from their directories.
trained=0
for case in "$root"/tests/golden/*/; do
  [ -f "$case/perf.data" ] || continue
  for a in "$case"*.args; do
    (cd "$case" && PERF_BUILDID_DIR=/nonexistent TZ=UTC "$dir/gen/release/pstitch" script -i perf.data \
      --symfs=symfs --kallsyms=kallsyms $(cat "$a") >/dev/null 2>&1) || true
    trained=$((trained + 1))
  done
done
[ "$trained" -gt 0 ] || { echo "pgo-build: no golden cases to train on" >&2; exit 1; }

"$profdata" merge -o "$dir/pstitch.profdata" "$dir/profiles"
RUSTFLAGS="-Cprofile-use=$dir/pstitch.profdata" cargo build --release --quiet --bins --target-dir "$dir/use" >&2
echo "$dir/use/release/pstitch"

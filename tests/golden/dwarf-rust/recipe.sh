#!/usr/bin/env bash
# Case dwarf-rust: rustdwarf (Rust, -C force-frame-pointers=no, dyn calls, recursion,
#   named thread), cpu-clock at 200 Hz, --call-graph dwarf.
# DWARF unwinding (issue 25): the workload has no frame pointers, so the user part of
# every callchain comes from unwinding the sample's user registers and stack copy.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/dwarf-rust
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
# A clean environment: the stack copies reach the environment strings at the top of
# the main thread's stack, which must not carry the caller's paths (PWD, OLDPWD, ...).
env -i PATH=/usr/bin:/bin perf record -N -e cpu-clock -F 200 --call-graph dwarf -o perf.data -- /tmp/pstitch-fixtures/bin/rustdwarf 4000
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case cgroups: cwork 30 recorded with --all-cgroups (PERF_SAMPLE_CGROUP and
#   PERF_RECORD_CGROUP records naming each cgroup id), -g, run inside a cgroup v2
#   group of its own (/pstitch-fixture, under the unified hierarchy): the cgroup
#   field and --show-cgroup-events.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/cgroups
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/pstitch-fixture
mkdir -p "$CG"
sh -c "echo \$\$ > $CG/cgroup.procs && exec perf record -N -e cpu-clock -F 1000 -g --all-cgroups -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 30"
rmdir "$CG"
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case side-band: forkexec running bpfload in its exec'ed child (fork, exec, exit,
#   a BPF program loaded and unloaded, sleeps), user-space cpu-clock at 1 kHz with
#   fp callchains, and the side-band records perf script has options for:
#   --switch-events (SWITCH), --namespaces (NAMESPACES), --all-cgroups (CGROUP
#   records for the cgroup tree, the cgroup of each sample), and the KSYMBOL and
#   BPF_EVENT records of the BPF program. User space only (cpu-clock:u), so that
#   no kernel symbol is printed: the kallsyms of the recording kernel is not needed.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root (BPF_PROG_LOAD). Records inside /tmp (relative -o) so no checkout path
# gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/side-band
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N --switch-events --namespaces --all-cgroups -e cpu-clock:u -F 1000 -g -o perf.data \
    -- /tmp/pstitch-fixtures/bin/forkexec /tmp/pstitch-fixtures/bin/bpfload
cp perf.data "$CASE"/perf.data

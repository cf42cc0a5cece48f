#!/usr/bin/env bash
# Case bpf-ksym: bpfrun loads a looping BPF program and runs it in the kernel
#   (BPF_PROG_TEST_RUN) while cpu-clock samples at 2 kHz with fp callchains, user
#   and kernel. Samples land in the JIT-compiled program, whose address only the
#   KSYMBOL record names: perf prints bpf_prog_<tag>_pstitch_loop+OFF
#   (bpf_prog_<tag>_pstitch_loop). Kernel frames need this kernel's kallsyms.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root (BPF_PROG_LOAD, kernel samples). Records inside /tmp (relative -o) so
# no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/bpf-ksym
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -e cpu-clock -F 2000 -g -o perf.data -- /tmp/pstitch-fixtures/bin/bpfrun
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# CRAFTED case brstack: branch stacks (PERF_SAMPLE_BRANCH_STACK with HW_INDEX) and
# weight structs (PERF_SAMPLE_WEIGHT_STRUCT: weight, ins_lat, retire_lat) on every
# sample. This host records neither (no LBR in the VM, no weight structs from software
# events), so tests/fixtures/craft-branches.py rewrites each sample's callchain of
# tests/golden/bpf-ksym/perf.data (kernel, BPF program and user addresses) in place
# into a branch stack and a weight word, sizes unchanged (see the script). perf 7.2's
# output on the result is the expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$CASE/../../fixtures/craft-branches.py" in-place "$CASE/../bpf-ksym/perf.data" "$CASE/perf.data"

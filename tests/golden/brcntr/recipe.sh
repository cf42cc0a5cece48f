#!/usr/bin/env bash
# CRAFTED case brcntr: branch stacks with branch counters (LBR event logging), as
# `perf record -e '{a,b,c}:S' -j any,counter` writes them: every event of a
# leader-sampled group has branch_sample_type ANY|COUNTERS, every sample a branch stack
# followed by one counters word per entry (2-bit occurrence counts of the group's
# events), and HEADER_CPU_PMU_CAPS gives the counters' width and number. This host
# cannot record branch stacks (no LBR in the VM), so tests/fixtures/craft-branches.py
# appends them to every sample of tests/golden/group-read/perf.data ('{cpu-clock,
# task-clock,page-faults}:S', -g, cwork 50) and adds the capabilities (see the
# script). perf 7.2's output on the result is the expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$CASE/../../fixtures/craft-branches.py" counters "$CASE/../group-read/perf.data" "$CASE/perf.data"

#!/usr/bin/env bash
# CRAFTED case lbr-stitch: samples as `perf record --call-graph lbr` writes them on a CPU
# whose LBR holds 8 calls (HEADER_CPU_PMU_CAPS branches=8), the call stacks of a thread
# deeper than that, so that `perf script --stitch-lbr` joins consecutive samples' stacks.
# This host cannot record branch stacks (no LBR in the VM), so
# tests/fixtures/craft-branches.py keeps the first 200 samples of
# tests/golden/c-threads/perf.data (cwork, three threads) and appends to each a call stack
# from a simulation of each thread's calls and of the LBR's ring of registers (see the
# script, mode `stitch`): stacks that share their base with the thread's previous
# sample, and stacks that do not (left entirely, grown by more than 8 calls, shrunk below
# the LBR's depth, empty, a wrong hw_idx), samples of other threads in between. perf 7.2's
# output on the result is the expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$CASE/../../fixtures/craft-branches.py" stitch "$CASE/../c-threads/perf.data" "$CASE/perf.data"

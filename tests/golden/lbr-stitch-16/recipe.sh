#!/usr/bin/env bash
# CRAFTED case lbr-stitch-16: tests/golden/lbr-stitch's samples (call stacks of an LBR
# of 8 registers), but the header claims an LBR of 16 (HEADER_CPU_PMU_CAPS branches=16):
# perf's register arithmetic then finds other bases shared, or none. The depth is a
# claim from the file; perf 7.2's output on the result is the expectation. Needs bash
# and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$CASE/../../fixtures/craft-branches.py" stitch "$CASE/../c-threads/perf.data" "$CASE/perf.data" 16

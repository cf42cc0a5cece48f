#!/usr/bin/env bash
# CRAFTED case lbr-callchain: samples as `perf record --call-graph lbr` writes them (an
# LBR call stack beside the frame-pointer callchain: branch_sample_type
# USER|CALL_STACK|NO_FLAGS|NO_CYCLES|HW_INDEX). This host cannot record branch stacks (no
# LBR in the VM), so tests/fixtures/craft-branches.py appends a call stack built from the
# user part of each callchain of tests/golden/c-threads/perf.data (cwork, three threads),
# its first entry's `to` now and then moved or in no map, some stacks shorter than the
# callchain or empty (see the script). perf 7.2 shows the user callchain from the call
# stack (first frame: the sample's ip). perf 7.2's output on the result is the
# expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$CASE/../../fixtures/craft-branches.py" lbr "$CASE/../c-threads/perf.data" "$CASE/perf.data"

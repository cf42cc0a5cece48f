#!/usr/bin/env bash
# CRAFTED case brstack-callchain: branch stacks beside frame-pointer callchains, in the
# layout without hw_idx (branch_sample_type ANY only). This host cannot record branch
# stacks (no LBR in the VM), so tests/fixtures/craft-branches.py appends a branch stack
# of 0 to 4 entries to every sample of tests/golden/c-threads/perf.data (cwork, three
# threads, user frames and inline functions), the callchain kept (see the script).
# perf 7.2's output on the result is the expectation. Needs bash and python3.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$CASE/../../fixtures/craft-branches.py" append "$CASE/../c-threads/perf.data" "$CASE/perf.data"

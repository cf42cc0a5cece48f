#!/usr/bin/env bash
# Case metric-cpu: a bash loop that moves itself between the two CPUs 30 times
#   (taskset -p on its own pid), per-task, with task-clock (period 1 ms),
#   cpu-migrations/period=1/ and context-switches/period=1/, the CPU in every sample
#   (--sample-cpu). perf 7.2 prints numbers for migrations_per_second here (mostly
#   not the ratio of the periods; see docs/metric.md); pstitch prints nan: the `deviations`
#   file declares it, the harness checks that nothing else differs.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh. Its variants print no ip: its kallsyms link (to another
# kernel's) does not matter. Needs root. Records inside /tmp (relative -o) so no
# checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/metric-cpu
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
cat > bounce.sh <<'SH'
for k in $(seq 1 30); do taskset -p -c $((k%2)) $$ >/dev/null; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; done
SH
perf record -N --sample-cpu -e task-clock/period=1000000/ -e cpu-migrations/period=1/ -e context-switches/period=1/ -o perf.data -- /bin/bash bounce.sh
cp perf.data "$CASE"/perf.data

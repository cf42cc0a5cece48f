#!/usr/bin/env bash
# Case tp-pipe: the tp-ksym events in pipe mode (-o -): the tracing data arrives as a
#   HEADER_TRACING_DATA record. perf script has no kernel-symbol resolver for trace
#   output then (it installs one only if the tracing data was known when the
#   session opened), so %pS/%ps print as 0x... addresses.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/tp-pipe
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e kmem:kmalloc -e kmem:kfree -e timer:hrtimer_start -e timer:hrtimer_expire_entry \
    -e timer:timer_start -e workqueue:workqueue_queue_work -e sched:sched_switch -g \
    -o - -- /tmp/pstitch-fixtures/bin/cwork 10 > perf.data
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case tp-ksym: cwork 10 with tracepoints whose print fmt names kernel code with
#   %pS/%ps (kmem kmalloc/kfree call_site, hrtimer/timer function, workqueue
#   function), plus sched_switch, -g. perf resolves those addresses with the
#   kernel symbols (--kallsyms), so this case needs the symbolizer.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/tp-ksym
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
perf record -N -e kmem:kmalloc -e kmem:kfree -e timer:hrtimer_start -e timer:hrtimer_expire_entry \
    -e timer:timer_start -e workqueue:workqueue_queue_work -e sched:sched_switch -g \
    -o perf.data -- /tmp/pstitch-fixtures/bin/cwork 10
cp perf.data "$CASE"/perf.data

#!/usr/bin/env bash
# Case tp-kinds: forkexec (fork, exec, exit, wait, threads, mmaps) with ~35 kinds of
#   tracepoints and no callchains: sched fork/exec/exit/wait/free/wakeup*/waking/
#   switch/migrate/stat_runtime, task newtask/rename, signal, syscalls enter/exit
#   (openat, execve, clone, wait4, mmap, close), raw_syscalls (filtered: no write,
#   no getpid, which cwork calls ~50000 times), irq/softirq, hrtimer, page
#   alloc/free (gfp_flags __print_flags, %p of a cast), vm_unmapped_area
#   (__builtin_expect, ternaries), block. Events that did not fire are still in
#   the tracing data.
# Records this directory's perf.data with the host perf (6.1). Called by
# tests/fixtures/record-all.sh, which first builds the workloads
# (tests/workloads/build.sh) and afterwards refreshes the shared symfs/kallsyms.
# Needs root. Records inside /tmp (relative -o) so no checkout path gets into perf.data.
set -euo pipefail
CASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=/tmp/pstitch-fixtures/rec/tp-kinds
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
events=(
    sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit
    sched:sched_process_wait sched:sched_process_free sched:sched_wakeup
    sched:sched_wakeup_new sched:sched_waking sched:sched_switch
    sched:sched_migrate_task sched:sched_stat_runtime task:task_newtask
    task:task_rename signal:signal_generate signal:signal_deliver
    syscalls:sys_enter_openat syscalls:sys_exit_openat syscalls:sys_enter_execve
    syscalls:sys_exit_execve syscalls:sys_enter_clone syscalls:sys_enter_wait4
    syscalls:sys_exit_wait4 syscalls:sys_enter_mmap syscalls:sys_exit_mmap
    syscalls:sys_enter_close syscalls:sys_exit_close
    irq:irq_handler_entry irq:irq_handler_exit irq:softirq_entry irq:softirq_exit
    irq:softirq_raise timer:hrtimer_cancel timer:hrtimer_expire_exit
    kmem:mm_page_alloc kmem:mm_page_free mmap:vm_unmapped_area
    block:block_rq_issue block:block_rq_complete
)
args=()
for e in "${events[@]}"; do
    [ -d "/sys/kernel/tracing/events/${e/://}" ] && args+=(-e "$e")
done
args+=(-e raw_syscalls:sys_enter --filter 'id != 1 && id != 39')
args+=(-e raw_syscalls:sys_exit --filter 'id != 1 && id != 39')
perf record -N "${args[@]}" -o perf.data -- /tmp/pstitch-fixtures/bin/forkexec
cp perf.data "$CASE"/perf.data

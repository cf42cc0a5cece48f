//! `pstitch`: the command line over the library (see `cli.rs`, and
//! `report_cli.rs` for the report commands), and the
//! tuning of the process it runs in.

mod cli;
mod report_cli;

fn main() -> std::process::ExitCode {
    tune_process();
    // `pstitch script report NAME` and `pstitch flamegraph` (report_cli.rs,
    // over cli.rs' perf script options); everything else.
    report_cli::main().unwrap_or_else(cli::main)
}

/// Allocator and scheduler settings for a batch job of a few threads.
fn tune_process() {
    // glibc gives threads arenas of their own up to 8 per core; pstitch's
    // four threads (reader, loader, formatter, copier) need one each: with
    // two, the formatter and the loader, both allocating while units are
    // decoded and tables loaded, waited for each other's arena lock
    // (~1,100 futex waits a run on the benchmark recording; 2-4% of the
    // wall time for ~5 MB of peak RSS).
    //
    // Blocks up to 32 MiB come from the arenas and freed memory stays there
    // (up to 256 MiB at the top of the heap) rather than going back to the
    // kernel: a symbol table's sort buffers, a decoded unit's rows, a
    // batch's text are allocated and freed again and again, and memory
    // given back is faulted in (and zeroed) anew the next time. glibc
    // adapts its threshold to what is freed, but only after the first
    // large block went back; fixed, the benchmark recording takes ~4,000
    // fewer page faults (of ~58,000) at the same peak RSS.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; no thread has
    // started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 4);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
    // pstitch is a batch job whose threads hand work to each other: a
    // thread woken by a handover need not take the core from one that is
    // busy (wakeup preemption: a switch and a colder cache each time). Its
    // share of the CPU stays what it was (SCHED_BATCH keeps the nice value
    // and asks for no privilege); the threads started later inherit it.
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler only reads the parameter it is given.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
    }
}

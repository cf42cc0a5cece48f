//! What pstitch asks of the C library and the kernel directly.

/// Broken-down local time (libc's `localtime_r`, so TZ and /etc/localtime
/// apply exactly as they do for perf).
pub struct Tm {
    pub year: i64,
    pub mon: usize,
    pub mday: i32,
    pub hour: i32,
    pub min: i32,
    pub sec: i32,
    pub wday: usize,
}

unsafe extern "C" {
    fn tzset();
}

/// `secs` since the epoch in local time; `None` where libc cannot say.
pub fn localtime(secs: i64) -> Option<Tm> {
    #[allow(clippy::useless_conversion)] // time_t is not i64 everywhere
    let t: libc::time_t = secs.try_into().ok()?;
    // SAFETY: tzset has no preconditions; localtime_r writes only into `tm`.
    let tm = unsafe {
        tzset();
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return None;
        }
        tm
    };
    Some(Tm {
        year: tm.tm_year as i64 + 1900,
        mon: tm.tm_mon.clamp(0, 11) as usize,
        mday: tm.tm_mday,
        hour: tm.tm_hour,
        min: tm.tm_min,
        sec: tm.tm_sec,
        wday: tm.tm_wday.clamp(0, 6) as usize,
    })
}

/// CPU time the calling thread has used.
pub fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Whether a read of `fd` would return at once (data, end of input or an
/// error are there), asked without waiting.
pub fn readable_now(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: poll reads and writes only the one pollfd it is given, and
    // a timeout of 0 returns at once.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n != 0
}

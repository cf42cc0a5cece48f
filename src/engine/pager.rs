//! The pages of a mapped perf.data, faulted in ahead of the reading side
//! by a thread of their own.
//!
//! Reading a mapped file costs a page fault every 16 pages (the kernel
//! maps that many around a fault), and one that waits for the disk where
//! the page cache let pages of the file go: a fifth of the reading side's
//! kernel time on a large recording, on the thread that sets the pace. A
//! pager thread keeps the next [`WINDOW`] bytes after the reading position
//! mapped instead (`MADV_POPULATE_READ`, or a read of each page where the
//! kernel lacks it), while the reading side drops what lies far enough
//! behind (see `release_behind`): the resident part of the file stays
//! bounded.
//!
//! ```text
//!   released  |  kept behind  | read | populated ahead   |  not mapped
//!   ----------+---------------+------+-------------------+------------
//!                                    ^ pos        pos + WINDOW
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

/// What the pager maps in: a file mapping's pages.
pub(super) trait Pages: Send + Sync + 'static {
    fn len(&self) -> usize;
    /// Faults in the pages of `range` (`MADV_POPULATE_READ`); false if the
    /// kernel refused (errno tells why).
    fn populate(&self, range: std::ops::Range<usize>) -> bool;
    /// Reads one byte at `at` so its page is mapped in.
    fn touch(&self, at: usize);
}

/// How far ahead of the reading position pages are kept mapped.
const WINDOW: usize = 4 << 20;
/// Pages mapped by one call.
const STEP: usize = 1 << 20;
const PAGE: usize = 4096;

struct Shared {
    /// Map up to this offset.
    want: AtomicUsize,
    stop: AtomicBool,
}

/// A running pager; dropping it stops the thread.
pub(super) struct Pager {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The last `want` given.
    asked: AtomicUsize,
}

impl Pager {
    /// Starts mapping `map` from offset `from` on, ahead of the reading.
    /// The thread holds the mapping too, so it cannot go while paged.
    pub(super) fn start(map: Arc<impl Pages>, from: usize) -> Option<Pager> {
        let asked = from.saturating_add(WINDOW);
        let shared = Arc::new(Shared { want: AtomicUsize::new(asked), stop: AtomicBool::new(false) });
        let pager = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pstitch-pager".into())
            .spawn(move || page_in(&pager, &*map, from & !(PAGE - 1)))
            .ok()?;
        Some(Pager { shared, thread: Some(thread), asked: AtomicUsize::new(asked) })
    }

    /// The reading side got to offset `pos`.
    #[inline]
    pub(super) fn at(&self, pos: usize) {
        let asked = self.asked.load(Ordering::Relaxed);
        if pos.saturating_add(WINDOW / 2) >= asked {
            let asked = pos.saturating_add(WINDOW);
            self.asked.store(asked, Ordering::Relaxed);
            self.shared.want.store(asked, Ordering::Release);
            if let Some(t) = &self.thread {
                t.thread().unpark();
            }
        }
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn page_in(shared: &Shared, map: &impl Pages, mut done: usize) {
    let mut populate = true;
    let len = map.len();
    while !shared.stop.load(Ordering::Acquire) {
        let want = shared.want.load(Ordering::Acquire).min(len);
        if done >= want {
            // An unpark between the load and here makes this return at once.
            std::thread::park();
            continue;
        }
        let upto = want.min(done + STEP);
        // MADV_POPULATE_READ only faults the pages in; reading a byte of
        // each does the same where the kernel does not know the advice
        // (EINVAL). Any other failure (a file cut short meanwhile) ends the
        // paging: the reading side meets it itself.
        if populate && !map.populate(done..upto) {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return;
            }
            populate = false;
        }
        if !populate {
            for page in (done..upto).step_by(PAGE) {
                map.touch(page);
            }
        }
        done = upto;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mapping::Mapping;

    /// How much of the mapping at `data` is mapped in (its `Rss` in
    /// /proc/self/smaps), in bytes.
    fn resident(data: &[u8]) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let start = format!("{:x}-", data.as_ptr() as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
        lines.next().expect("the mapping");
        let rss = lines.find_map(|l| l.strip_prefix("Rss:")).expect("its Rss");
        rss.trim().trim_end_matches("kB").trim().parse::<usize>().expect("kB") << 10
    }

    fn mapped_file(len: usize) -> (Arc<Mapping>, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("pstitch-pager-{}-{len}", std::process::id()));
        std::fs::write(&path, vec![7u8; len]).expect("write");
        let file = std::fs::File::open(&path).expect("open");
        (Arc::new(Mapping::map(&file).expect("map")), path)
    }

    fn settle(what: impl Fn() -> bool) -> bool {
        (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            what()
        })
    }

    /// The pager maps the window ahead of the reading position, follows
    /// it, and stops (parked or not) when dropped; nothing far ahead is
    /// mapped.
    #[test]
    fn the_window_ahead_of_the_reading_is_mapped() {
        let len = 24 << 20;
        let (data, path) = mapped_file(len);
        assert!(resident(&data) < STEP, "nothing mapped yet");
        let pager = Pager::start(data.clone(), 0).expect("pager");
        assert!(settle(|| resident(&data) >= WINDOW), "the first window: {} bytes", resident(&data));
        assert!(resident(&data) <= WINDOW + STEP, "no further: {} bytes", resident(&data));
        pager.at(WINDOW / 2);
        let far = WINDOW / 2 + WINDOW;
        assert!(settle(|| resident(&data) >= far), "the window moved: {} bytes", resident(&data));
        pager.at(len);
        assert!(settle(|| resident(&data) >= len - STEP), "to the end: {} bytes", resident(&data));
        drop(pager);
        let parked = Pager::start(data.clone(), len);
        drop(parked);
        let _ = std::fs::remove_file(path);
    }
}

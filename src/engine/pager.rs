//! The pages of a mapped perf.data, faulted in ahead of the reading side
//! by a thread of their own.
//!
//! Reading a mapped file costs a page fault every 16 pages (the kernel
//! maps that many around a fault), and one that waits for the disk where
//! the page cache let pages of the file go: a fifth of the reading side's
//! kernel time on a large recording, on the thread that sets the pace. A
//! pager thread keeps the next [`WINDOW`] bytes after the reading position
//! mapped instead (`MADV_POPULATE_READ`, or a read of each page where the
//! kernel lacks it), and gives back the pages the reading side no longer
//! needs (`MADV_DONTNEED` on the range it names, see
//! `MappedInput::reading_at`): the resident part of the file stays
//! bounded, and unmapping (a tenth of the reading thread's time on the
//! dwarf benchmark's 851 MB recording when it did it itself) is off the
//! thread that sets the pace too.
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
    /// Gives back the pages of `range` (`MADV_DONTNEED`).
    fn dont_need(&self, range: std::ops::Range<usize>);
}

/// How far ahead of the reading position pages are kept mapped: past
/// the records the session's look-ahead walk reads the headers of
/// (`session::UPCOMING_BYTES`, 16 MiB past the reading position), which
/// otherwise fault their pages in on the reading thread.
const WINDOW: usize = 20 << 20;
/// Pages mapped by one call.
const STEP: usize = 1 << 20;
const PAGE: usize = 4096;

struct Shared {
    /// Map up to this offset.
    want: AtomicUsize,
    /// Give back the pages below this offset (page-aligned; only grows).
    release: AtomicUsize,
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
        let shared = Arc::new(Shared { want: AtomicUsize::new(asked), release: AtomicUsize::new(0), stop: AtomicBool::new(false) });
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

    /// Asks for the pages below `upto` (page-aligned) to be given back,
    /// on the pager thread.
    pub(super) fn release_below(&self, upto: usize) {
        self.shared.release.store(upto, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
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
    let mut released = 0;
    let len = map.len();
    while !shared.stop.load(Ordering::Acquire) {
        let release = shared.release.load(Ordering::Acquire).min(len);
        if release > released {
            map.dont_need(released..release);
            released = release;
        }
        let want = shared.want.load(Ordering::Acquire).min(len);
        if done >= want {
            if shared.release.load(Ordering::Acquire) > released {
                continue;
            }
            // An unpark between the load and here makes this return at once.
            std::thread::park();
            continue;
        }
        // Page-aligned steps: MADV_POPULATE_READ refuses (EINVAL) a start
        // that is not, and the reading position `want` follows is any
        // record's offset. (Unaligned, every call after the first window
        // failed and the pages were touched one by one instead.)
        let upto = (want.min(done + STEP).saturating_add(PAGE - 1) & !(PAGE - 1)).min(len);
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

    /// Records the ranges asked for, refusing unaligned starts as the
    /// kernel does.
    struct Ranges {
        len: usize,
        asked: std::sync::Mutex<Vec<std::ops::Range<usize>>>,
        touched: AtomicUsize,
    }

    impl Pages for Ranges {
        fn len(&self) -> usize {
            self.len
        }
        fn populate(&self, range: std::ops::Range<usize>) -> bool {
            self.asked.lock().expect("lock").push(range.clone());
            range.start.is_multiple_of(PAGE)
        }
        fn touch(&self, _at: usize) {
            self.touched.fetch_add(1, Ordering::Relaxed);
        }
        fn dont_need(&self, _range: std::ops::Range<usize>) {}
    }

    /// Reading positions are record offsets, not page boundaries: the
    /// pager still asks for whole pages, end to end, and never falls back
    /// to touching them.
    #[test]
    fn unaligned_reading_positions_populate_whole_pages() {
        let len = 3 * WINDOW + 1234;
        let map = Arc::new(Ranges { len, asked: Default::default(), touched: AtomicUsize::new(0) });
        let pager = Pager::start(map.clone(), 8).expect("pager");
        for pos in [WINDOW / 2 + 8, WINDOW + 4104, 2 * WINDOW + 777, len] {
            pager.at(pos);
            assert!(settle(|| map.asked.lock().expect("lock").last().is_some_and(|r| r.end >= (pos + WINDOW).min(len))));
        }
        drop(pager);
        let asked = map.asked.lock().expect("lock");
        assert!(asked.iter().all(|r| r.start.is_multiple_of(PAGE)), "{asked:?}");
        assert!(asked.windows(2).all(|w| w[0].end == w[1].start), "{asked:?}");
        assert_eq!((asked[0].start, asked[asked.len() - 1].end), (0, len));
        assert_eq!(map.touched.load(Ordering::Relaxed), 0);
    }

    /// The pager maps the window ahead of the reading position, follows
    /// it, gives back what it is asked to, and stops (parked or not) when
    /// dropped; nothing far ahead is mapped.
    #[test]
    fn the_window_ahead_of_the_reading_is_mapped() {
        let len = 3 * WINDOW;
        let (data, path) = mapped_file(len);
        assert!(resident(&data) < STEP, "nothing mapped yet");
        let pager = Pager::start(data.clone(), 0).expect("pager");
        assert!(settle(|| resident(&data) >= WINDOW), "the first window: {} bytes", resident(&data));
        assert!(resident(&data) <= WINDOW + STEP, "no further: {} bytes", resident(&data));
        pager.at(WINDOW / 2);
        let far = WINDOW / 2 + WINDOW;
        assert!(settle(|| resident(&data) >= far), "the window moved: {} bytes", resident(&data));
        pager.release_below(WINDOW);
        assert!(settle(|| resident(&data) <= far - WINDOW + STEP), "the first window given back: {} bytes", resident(&data));
        pager.at(len);
        assert!(settle(|| resident(&data) >= len - WINDOW - STEP), "to the end: {} bytes", resident(&data));
        drop(pager);
        let parked = Pager::start(data.clone(), len);
        drop(parked);
        let _ = std::fs::remove_file(path);
    }
}

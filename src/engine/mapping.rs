//! Read-only file mappings: the input perf.data and the object files whose
//! symbols and DWARF are read.
//!
//! A [`Mapping`] owns its mapping, so the memory advice it gives
//! (`MADV_DONTNEED`, `MADV_POPULATE_READ`) can only ever apply to a
//! read-only private file mapping, never to memory someone else owns.
//! Giving pages back is harmless there: a page touched again is read
//! again from the page cache, with the same bytes.
//!
//! [`MappedInput`] is the input perf.data as the record reader sees it
//! (a [`perf_data::Backing`]): it keeps the pages around the reading
//! position and gives back those far behind; in threaded mode a pager
//! thread maps the ones ahead and does the giving back (see
//! [`super::pager`]).

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::pager::{Pager, Pages};

/// A read-only mapping of a whole file.
pub struct Mapping {
    map: memmap2::Mmap,
}

impl Mapping {
    /// Maps all of `file`.
    pub fn map(file: &File) -> std::io::Result<Mapping> {
        // SAFETY: the mapping is read-only and private. Like perf, pstitch
        // assumes that a perf.data or an object file is not truncated or
        // rewritten while it is read (a shrinking file would make reads of
        // the lost pages fault).
        let map = unsafe { memmap2::Mmap::map(file) }?;
        Ok(Mapping { map })
    }

    /// Gives back the pages of `range` (page-aligned start; the end is
    /// rounded up by the kernel): a later read takes them again from the
    /// page cache.
    fn give_back(&self, range: std::ops::Range<usize>) {
        if range.start >= range.end || range.end > self.map.len() || !range.start.is_multiple_of(PAGE) {
            return;
        }
        // SAFETY: the range lies inside this mapping (checked above), which
        // is a read-only private file mapping: MADV_DONTNEED only drops
        // cached copies of file pages, which read the same when touched
        // again; no Rust reference can observe a change.
        unsafe {
            libc::madvise(self.map.as_ptr().add(range.start) as *mut libc::c_void, range.end - range.start, libc::MADV_DONTNEED);
        }
    }

    /// Gives back every page (see [`perf_data::Backing::release`]).
    pub fn release(&self) {
        self.give_back(0..self.map.len());
    }

}

impl Pages for Mapping {
    fn len(&self) -> usize {
        self.map.len()
    }

    fn populate(&self, range: std::ops::Range<usize>) -> bool {
        if range.start >= range.end || range.end > self.map.len() {
            return true;
        }
        // SAFETY: the range lies inside this read-only mapping; the advice
        // only maps pages in.
        unsafe { libc::madvise(self.map.as_ptr().add(range.start) as *mut libc::c_void, range.end - range.start, libc::MADV_POPULATE_READ) == 0 }
    }

    fn touch(&self, at: usize) {
        if let Some(b) = self.map.get(at) {
            std::hint::black_box(*b);
        }
    }

    fn dont_need(&self, range: std::ops::Range<usize>) {
        self.give_back(range);
    }
}

impl std::ops::Deref for Mapping {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl perf_data::Backing for Mapping {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    fn release(&self) {
        Mapping::release(self);
    }
}

/// When a growing run lets mapped pages go: true if `n` growing by `len`
/// (bytes of new text, units decoded) crosses a multiple of the step,
/// which is `min` at first, then grows so that there are 8 releases for
/// each doubling of `n`, and is at most `max`. Often while the run is
/// young, so that a small run's peak stays small; seldom later, so that a
/// long run does not fault the same pages in again and again.
///
/// Why it pays on small runs: this machine's 6.18 kernel maps a whole
/// large page-cache folio at a fault in a mapped file, so a few dozen
/// lookups in an object's symbols or DWARF keep megabytes of it resident.
pub fn release_due(n: u64, len: u64, min: u64, max: u64) -> bool {
    let step = ((n + len).next_power_of_two() >> 4).clamp(min, max);
    n / step != (n + len) / step
}

const PAGE: usize = 4096;

/// How far behind the read position pages of the input are kept.
const KEEP_BEHIND: usize = 8 << 20;
/// Pages are given back this many bytes at a time.
const RELEASE_STEP: usize = 4 << 20;

/// The input perf.data, mapped (see the module doc).
pub struct MappedInput {
    map: Arc<Mapping>,
    /// Pages below this offset were given back.
    released: AtomicUsize,
    /// Records from this offset on wait to be read again (see
    /// [`perf_data::Backing::keep_from`]): their pages are kept.
    kept_from: AtomicUsize,
    pager: Option<Pager>,
}

impl MappedInput {
    /// `file` mapped, with a pager thread from offset `start` on if
    /// `pager` (see [`super::Threads`]).
    pub fn new(file: &File, start: usize, pager: bool) -> std::io::Result<MappedInput> {
        let map = Arc::new(Mapping::map(file)?);
        let pager = if pager { Pager::start(map.clone(), start) } else { None };
        Ok(MappedInput { map, released: AtomicUsize::new(0), kept_from: AtomicUsize::new(usize::MAX), pager })
    }
}

impl perf_data::Backing for MappedInput {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Reading a large file must not hold all of it in memory: pages more
    /// than [`KEEP_BEHIND`] bytes behind the reading go back, up to the
    /// first record still queued for sorting (its pages would only come
    /// back when it is delivered, faulted in again on the reading thread:
    /// with rounds 17 MB apart, as in the dwarf benchmark's recording,
    /// most of a flushed round). Touched again, a page given back is read
    /// in again from the file with the same bytes.
    #[inline]
    fn reading_at(&self, pos: usize) {
        let done = self.released.load(Ordering::Relaxed);
        let upto = pos.saturating_sub(KEEP_BEHIND).min(self.kept_from.load(Ordering::Relaxed)) & !(RELEASE_STEP - 1);
        if upto >= done + RELEASE_STEP {
            match &self.pager {
                Some(p) => p.release_below(upto),
                None => self.map.give_back(done..upto),
            }
            self.released.store(upto, Ordering::Relaxed);
        }
        if let Some(p) = &self.pager {
            p.at(pos);
        }
    }

    fn release(&self) {
        self.map.release();
    }

    fn keep_from(&self, pos: usize) {
        self.kept_from.store(pos, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_data::Backing;

    /// Pages given back read the same afterwards, and nothing outside the
    /// mapping is ever advised.
    #[test]
    fn released_pages_read_the_same() {
        let path = std::env::temp_dir().join(format!("pstitch-mapping-{}", std::process::id()));
        let data: Vec<u8> = (0..(20u32 << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let file = File::open(&path).expect("open");
        let input = MappedInput::new(&file, 0, false).expect("map");
        input.reading_at(data.len());
        assert!(input.released.load(Ordering::Relaxed) > 0, "pages far behind went back");
        assert!(input.bytes() == &data[..], "and read the same");
        input.map.give_back(3..data.len() + (1 << 20));
        input.release();
        assert!(input.bytes() == &data[..]);
        let _ = std::fs::remove_file(path);
    }

    /// Every step while young, then 8 for each doubling, at most every
    /// `max`.
    #[test]
    fn releases_thin_out_as_a_run_grows() {
        let count = |upto: u64, max: u64| (0..upto).filter(|&n| release_due(n, 1, 1, max)).count();
        assert_eq!(count(16, u64::MAX), 16, "at each of the first 16");
        assert_eq!(count(32, u64::MAX), 24, "then every second");
        assert_eq!(count(1 << 20, u64::MAX), 16 + 16 * 8, "8 for each of the 16 doublings after");
        assert_eq!(count(1 << 12, 64), count(1 << 10, 64) + (3 << 10) / 64, "at most every 64");
        assert!(release_due(8 << 10, 8 << 10, 8 << 10, 2 << 20) && !release_due(0, 100, 8 << 10, 2 << 20));
    }

    /// Pages of records still queued are not given back; once the queue
    /// moved on, the release catches up.
    #[test]
    fn queued_records_keep_their_pages() {
        let path = std::env::temp_dir().join(format!("pstitch-mapping-kept-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 32 << 20]).expect("write");
        let file = File::open(&path).expect("open");
        let input = MappedInput::new(&file, 0, false).expect("map");
        input.keep_from((5 << 20) + 100);
        input.reading_at(30 << 20);
        assert_eq!(input.released.load(Ordering::Relaxed), 4 << 20, "released up to the queued record's step");
        input.keep_from(usize::MAX);
        input.reading_at(31 << 20);
        assert_eq!(input.released.load(Ordering::Relaxed), 20 << 20, "then up to KEEP_BEHIND");
        let _ = std::fs::remove_file(path);
    }
}

//! Holding samples whose user callchain comes later.
//!
//! A sample whose callchain ends in `PERF_CONTEXT_USER_DEFERRED, cookie` is
//! held until a CALLCHAIN_DEFERRED record for its thread arrives. perf 7.2
//! then delivers *every* held sample of that thread, in arrival order: the
//! ones with the record's cookie merged with its user ips, the others
//! unmerged. What is left at the end of input goes out unmerged too, in
//! arrival order.
//!
//! perf keeps one list of all held samples and walks it for every deferred
//! record, which is quadratic when records lag behind their samples. Here
//! held samples are queued per thread, so a deferred record touches only
//! its own thread's samples; each is a compact copy of the record, freed on
//! delivery.

use std::collections::VecDeque;

use crate::fasthash::FastMap;
use crate::machine::Comm;

/// A held sample: the record's bytes and what perf would not know any more
/// when it is finally printed.
#[derive(Debug, Clone)]
pub struct HeldSample {
    /// Arrival order, for the end-of-input flush.
    pub seq: u64,
    pub offset: u64,
    pub evsel: u32,
    /// The whole record, header included.
    pub bytes: Box<[u8]>,
    /// The thread's comm when the sample was taken.
    pub comm: Comm,
    pub cookie: u64,
}

/// What became of the deferred data, for the end-of-run summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StitchStats {
    pub held: u64,
    pub merged: u64,
    /// Delivered when a record with another cookie arrived for the thread.
    pub unmerged: u64,
    /// Still held at the end of input.
    pub flushed: u64,
    pub deferred_records: u64,
    /// Deferred records whose cookie matched no held sample of the thread.
    pub unmatched_records: u64,
    /// Most samples held at once.
    pub peak_held: u64,
}

#[derive(Debug, Default)]
pub struct Stitcher {
    by_tid: FastMap<i32, VecDeque<HeldSample>>,
    next_seq: u64,
    held_now: u64,
    held_bytes: usize,
    pub stats: StitchStats,
}

impl Stitcher {
    /// Holds a sample; returns its number (arrival order, from 0).
    pub fn hold(&mut self, tid: i32, offset: u64, evsel: u32, bytes: &[u8], comm: Comm, cookie: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.held_now += 1;
        self.held_bytes += bytes.len();
        self.stats.held += 1;
        self.stats.peak_held = self.stats.peak_held.max(self.held_now);
        self.by_tid.entry(tid).or_default().push_back(HeldSample { seq, offset, evsel, bytes: bytes.into(), comm, cookie });
        seq
    }

    /// Takes all samples held for `tid`, oldest first, and accounts for a
    /// deferred record with `cookie` arriving for that thread.
    pub fn take_for_record(&mut self, tid: i32, cookie: u64) -> VecDeque<HeldSample> {
        self.stats.deferred_records += 1;
        let taken = self.by_tid.remove(&tid).unwrap_or_default();
        let mut matched = false;
        for h in &taken {
            if h.cookie == cookie {
                matched = true;
                self.stats.merged += 1;
            } else {
                self.stats.unmerged += 1;
            }
            self.release(h);
        }
        if !matched {
            self.stats.unmatched_records += 1;
        }
        taken
    }

    /// Everything still held, in arrival order.
    pub fn take_all(&mut self) -> Vec<HeldSample> {
        let mut all: Vec<HeldSample> = self.by_tid.drain().flat_map(|(_, q)| q).collect();
        all.sort_unstable_by_key(|h| h.seq);
        for h in &all {
            self.release(h);
        }
        self.stats.flushed += all.len() as u64;
        all
    }

    fn release(&mut self, h: &HeldSample) {
        self.held_now -= 1;
        self.held_bytes -= h.bytes.len();
    }

    /// Samples held right now, and the bytes they take.
    #[cfg(test)]
    pub fn held(&self) -> (u64, usize) {
        (self.held_now, self.held_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_a_threads_samples_in_order_and_leaves_others() {
        let mut s = Stitcher::default();
        let comm: Comm = b"w"[..].into();
        s.hold(1, 0, 0, b"a", comm.clone(), 10);
        s.hold(2, 1, 0, b"b", comm.clone(), 20);
        s.hold(1, 2, 0, b"c", comm.clone(), 11);
        let got: Vec<_> = s.take_for_record(1, 10).into_iter().map(|h| h.bytes[0]).collect();
        assert_eq!(got, b"ac");
        assert_eq!((s.stats.merged, s.stats.unmerged), (1, 1));
        assert_eq!(s.held(), (1, 1));
        assert!(s.take_for_record(1, 10).is_empty());
        assert_eq!(s.stats.unmatched_records, 1);
        s.hold(3, 3, 0, b"d", comm, 30);
        let rest: Vec<_> = s.take_all().into_iter().map(|h| h.bytes[0]).collect();
        assert_eq!(rest, b"bd");
        assert_eq!(s.held(), (0, 0));
        assert_eq!(s.stats.peak_held, 3);
    }
}

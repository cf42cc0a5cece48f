//! perf's ordered-events queue.
//!
//! The kernel writes each CPU's ring buffer in time order, but perf record
//! drains the buffers one after another, so the file interleaves them in
//! chunks. perf record writes a FINISHED_ROUND record after each pass over
//! all buffers. perf script then delivers events in timestamp order under
//! this rule:
//!
//! ```text
//! round N ends  ->  deliver every queued event with time <= T(N-1),
//!                   where T(N-1) = the largest time queued when round N-1 ended
//! end of input  ->  deliver everything left
//! ```
//! Events that share a timestamp keep their input order. An event older
//! than what was already delivered is not dropped: it goes out with the
//! next flush. Events without a timestamp bypass the queue (the session
//! delivers them at once).

use std::ops::Deref;

/// Record bytes held by the queue: borrowed from the mapped file, or owned
/// (pipe input, records decoded from compressed chunks).
#[derive(Debug, Clone)]
pub enum RecordBytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Box<[u8]>),
}

impl Deref for RecordBytes<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            RecordBytes::Borrowed(b) => b,
            RecordBytes::Owned(b) => b,
        }
    }
}

impl RecordBytes<'_> {
    /// Bytes held in memory for this record beyond the input's mapping.
    fn owned_len(&self) -> usize {
        match self {
            RecordBytes::Borrowed(_) => 0,
            RecordBytes::Owned(b) => b.len(),
        }
    }
}

/// A record waiting in the queue.
#[derive(Debug, Clone)]
pub struct Queued<'a> {
    pub time: u64,
    pub offset: u64,
    /// Position in the decompressed data of the chunk at `offset`, for
    /// records that came from a compressed chunk.
    pub inner: Option<u64>,
    pub evsel: u32,
    /// The file of a directory input the record is in (`RawRecord::part`).
    pub part: u32,
    pub bytes: RecordBytes<'a>,
}

#[derive(Debug, Default)]
pub struct OrderedEvents<'a> {
    items: Vec<Queued<'a>>,
    /// How far the next round flush may go.
    next_flush: u64,
    max_timestamp: u64,
    last_flush: u64,
    /// Events queued with a time already flushed past.
    pub nr_unordered: u64,
    /// Bytes of copied records queued (see [`RecordBytes::owned_len`]).
    owned: usize,
}

impl<'a> OrderedEvents<'a> {
    pub fn push(&mut self, q: Queued<'a>) {
        if q.time < self.last_flush {
            self.nr_unordered += 1;
        }
        self.max_timestamp = self.max_timestamp.max(q.time);
        self.owned += q.bytes.owned_len();
        self.items.push(q);
    }

    /// Bytes of copied (not memory-mapped) records in the queue.
    pub fn owned_bytes(&self) -> usize {
        self.owned
    }

    /// perf's OE_FLUSH__HALF: deliver everything up to the midpoint between
    /// the oldest and the newest queued time (used when the queue holds too
    /// much).
    pub fn flush_half<E>(&mut self, deliver: impl FnMut(Queued<'a>) -> Result<(), E>) -> Result<(), E> {
        let (Some(first), Some(last)) = (self.items.iter().map(|q| q.time).min(), self.items.iter().map(|q| q.time).max()) else {
            return Ok(());
        };
        self.flush_upto(first + (last - first) / 2, deliver)
    }

    /// The input offset of the first queued record whose bytes are in the
    /// input's memory (not copied).
    pub fn first_borrowed(&self) -> Option<u64> {
        self.items.iter().filter(|q| matches!(q.bytes, RecordBytes::Borrowed(_))).map(|q| q.offset).min()
    }

    /// The queued records, in no particular order.
    pub fn items(&self) -> impl Iterator<Item = &Queued<'a>> {
        self.items.iter()
    }

    /// FINISHED_ROUND: deliver up to the previous round's horizon, then
    /// move the horizon to the newest time seen.
    pub fn flush_round<E>(&mut self, deliver: impl FnMut(Queued<'a>) -> Result<(), E>) -> Result<(), E> {
        if self.items.is_empty() {
            return Ok(());
        }
        let limit = self.next_flush;
        self.flush_upto(limit, deliver)?;
        self.next_flush = self.max_timestamp;
        Ok(())
    }

    /// End of input: deliver everything.
    pub fn flush_all<E>(&mut self, deliver: impl FnMut(Queued<'a>) -> Result<(), E>) -> Result<(), E> {
        self.flush_upto(u64::MAX, deliver)
    }

    fn flush_upto<E>(&mut self, limit: u64, mut deliver: impl FnMut(Queued<'a>) -> Result<(), E>) -> Result<(), E> {
        if limit == 0 || self.items.is_empty() {
            return Ok(());
        }
        // Stable: equal times keep queue order. The queue is mostly sorted
        // runs, which the sort merges in about linear time.
        self.items.sort_by_key(|q| q.time);
        let n = self.items.partition_point(|q| q.time <= limit);
        // Delivery goes through the records in time order, not file order:
        // each record's bytes are asked for a few records ahead.
        let ahead: Vec<usize> = self.items[..n].iter().skip(PREFETCH).map(|q| q.bytes.as_ptr() as usize).collect();
        let mut ahead = ahead.into_iter();
        let mut drained = self.items.drain(..n);
        for q in drained.by_ref() {
            if let Some(p) = ahead.next() {
                crate::engine::fast::prefetch(p);
            }
            let t = q.time;
            self.owned -= q.bytes.owned_len();
            if let Err(e) = deliver(q) {
                // Keep what was not delivered so a caller may still flush it.
                let rest: Vec<_> = drained.collect();
                self.items.splice(0..0, rest);
                return Err(e);
            }
            self.last_flush = t;
        }
        Ok(())
    }
}

/// How many records ahead of delivery their bytes are asked for.
const PREFETCH: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn q(time: u64, offset: u64) -> Queued<'static> {
        Queued { time, offset, inner: None, evsel: 0, part: 0, bytes: RecordBytes::Borrowed(&[]) }
    }

    fn flush_round(oe: &mut OrderedEvents<'static>) -> Vec<u64> {
        let mut out = Vec::new();
        oe.flush_round::<()>(|e| {
            out.push(e.offset);
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn round_flushes_up_to_previous_rounds_max() {
        let mut oe = OrderedEvents::default();
        oe.push(q(10, 0));
        oe.push(q(5, 1));
        // First round: horizon 0, nothing goes out.
        assert!(flush_round(&mut oe).is_empty());
        oe.push(q(20, 2));
        oe.push(q(7, 3));
        // Second round: up to 10 (max of round one).
        assert_eq!(flush_round(&mut oe), vec![1, 3, 0]);
        oe.push(q(15, 4));
        assert_eq!(flush_round(&mut oe), vec![4, 2]);
    }

    #[test]
    fn ties_keep_input_order_and_late_events_still_go_out() {
        let mut oe = OrderedEvents::default();
        for (i, t) in [3, 1, 3, 1, 2].into_iter().enumerate() {
            oe.push(q(t, i as u64));
        }
        flush_round(&mut oe);
        oe.push(q(1, 9)); // older than nothing delivered yet
        assert_eq!(flush_round(&mut oe), vec![1, 3, 9, 4, 0, 2]);
        oe.push(q(2, 10)); // older than what was delivered
        assert_eq!(oe.nr_unordered, 1);
        let mut out = Vec::new();
        oe.flush_all::<()>(|e| {
            out.push(e.offset);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec![10]);
    }
}

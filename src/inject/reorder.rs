//! Putting held samples back where they were taken.
//!
//! The session delivers records in perf's order (time order within
//! rounds), except the samples it holds for their deferred user callchain:
//! those come when their CALLCHAIN_DEFERRED record comes, later in time,
//! or at the end of the input. An ordinary perf.data has every sample in
//! its time's place, so the output keeps a *hole* where a held sample
//! arrived and fills it when the sample is delivered. Records after the
//! first open hole wait; when more than a limit of them wait in memory, the
//! older ones move to an unnamed temporary file, so memory stays bounded
//! by the held samples (which the session keeps anyway) plus the limit,
//! however long a deferred record takes (an off-CPU sample's user stack
//! comes when the thread runs again, which may be never).
//!
//! ```text
//! stream position:  written | in the spill file | in memory |
//!                           ^ head              ^ mem_start  ^ tail
//! holes (position, seq), in order:  the first one stops the writing
//! ```
//! A hole filled while an earlier one is still open is kept until the
//! writing reaches it. Holes are numbered in the order they are made
//! (the session numbers held samples so), which makes finding one O(1).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// The output, with holes for samples that come later.
pub struct Reorder<W: Write> {
    out: W,
    /// Stream position of the first byte not written to `out`.
    head: u64,
    /// Bytes from `mem_start` on, waiting behind a hole.
    mem: Vec<u8>,
    mem_start: u64,
    /// Bytes `head..mem_start`, at file offset `position - spill_base`.
    spill: Option<File>,
    spill_base: u64,
    holes: VecDeque<Hole>,
    limit: usize,
    /// Most bytes that waited at once (in memory and in the file).
    pub peak_waiting: u64,
    /// Bytes that went through the spill file.
    pub spilled: u64,
}

/// A place for a record that comes later.
struct Hole {
    /// Stream position.
    pos: u64,
    seq: u64,
    /// The record, once it came (while an earlier hole is still open).
    filled: Option<Vec<u8>>,
}

/// Bytes copied from the spill file at a time.
const COPY_CHUNK: usize = 1 << 20;

impl<W: Write> Reorder<W> {
    /// Writes to `out`; at most `limit` bytes wait in memory.
    pub fn new(out: W, limit: usize) -> Reorder<W> {
        Reorder {
            out,
            head: 0,
            mem: Vec::new(),
            mem_start: 0,
            spill: None,
            spill_base: 0,
            holes: VecDeque::new(),
            limit: limit.max(1),
            peak_waiting: 0,
            spilled: 0,
        }
    }

    /// The writer (to finish it or to write around the stream).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    fn tail(&self) -> u64 {
        self.mem_start + self.mem.len() as u64
    }

    /// Appends a record.
    #[inline]
    pub fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.holes.is_empty() {
            self.head += bytes.len() as u64;
            self.mem_start = self.head;
            return self.out.write_all(bytes);
        }
        self.mem.extend_from_slice(bytes);
        self.peak_waiting = self.peak_waiting.max(self.tail() - self.head);
        if self.mem.len() > self.limit {
            self.spill_mem()?;
        }
        Ok(())
    }

    /// Leaves a hole for the record numbered `seq`, which comes later.
    /// Numbers must grow.
    pub fn hole(&mut self, seq: u64) {
        debug_assert!(self.holes.back().is_none_or(|h| h.seq < seq));
        self.holes.push_back(Hole { pos: self.tail(), seq, filled: None });
    }

    /// Where hole `seq` is in the queue: at `seq - first` when the numbers
    /// have no gaps, else found by a binary search.
    fn find(&self, seq: u64) -> Option<usize> {
        let first = self.holes.front()?.seq;
        let i = usize::try_from(seq.checked_sub(first)?).ok()?;
        match self.holes.get(i) {
            Some(h) if h.seq == seq => Some(i),
            _ => self.holes.binary_search_by_key(&seq, |h| h.seq).ok(),
        }
    }

    /// The record for hole `seq`. A number without a hole is appended.
    pub fn fill(&mut self, seq: u64, bytes: &[u8]) -> io::Result<()> {
        match self.find(seq) {
            Some(0) => {
                let pos = self.holes[0].pos;
                self.emit_to(pos)?;
                self.out.write_all(bytes)?;
                self.holes.pop_front();
                self.drain()
            }
            Some(i) => {
                self.holes[i].filled = Some(bytes.to_vec());
                Ok(())
            }
            None => self.push(bytes),
        }
    }

    /// Writes everything up to the first hole still open.
    fn drain(&mut self) -> io::Result<()> {
        while let Some(h) = self.holes.front_mut() {
            let Some(bytes) = h.filled.take() else { break };
            let pos = h.pos;
            self.emit_to(pos)?;
            self.out.write_all(&bytes)?;
            self.holes.pop_front();
        }
        if self.holes.is_empty() {
            self.emit_to(self.tail())?;
        }
        Ok(())
    }

    /// Writes the waiting bytes up to stream position `pos`.
    fn emit_to(&mut self, pos: u64) -> io::Result<()> {
        if self.head < self.mem_start {
            let upto = pos.min(self.mem_start);
            let file = self.spill.as_ref().expect("bytes before mem_start are in the spill file");
            let mut buf = vec![0u8; COPY_CHUNK.min((upto - self.head) as usize)];
            while self.head < upto {
                let n = buf.len().min((upto - self.head) as usize);
                file.read_exact_at(&mut buf[..n], self.head - self.spill_base)?;
                self.out.write_all(&buf[..n])?;
                self.head += n as u64;
            }
            if self.head == self.mem_start {
                // The file is empty again: start it over.
                file.set_len(0)?;
                self.spill_base = self.mem_start;
            }
        }
        if pos > self.head {
            let from = (self.head - self.mem_start) as usize;
            let to = (pos - self.mem_start) as usize;
            self.out.write_all(&self.mem[from..to])?;
            self.head = pos;
        }
        // Drop what was written; the copy is cheap next to the writing
        // when at least half of the buffer goes.
        let done = self.head.saturating_sub(self.mem_start) as usize;
        if done > 0 && (done == self.mem.len() || done >= self.mem.len() / 2) {
            self.mem.drain(..done);
            self.mem_start = self.head;
        }
        Ok(())
    }

    /// Moves the bytes waiting in memory to the end of the spill file.
    fn spill_mem(&mut self) -> io::Result<()> {
        if self.spill.is_none() {
            self.spill = Some(spill_file()?);
            self.spill_base = self.mem_start.min(self.head);
        }
        let file = self.spill.as_ref().expect("just made");
        // Bytes of `mem` already written (before `head`) are not kept.
        let skip = self.head.saturating_sub(self.mem_start) as usize;
        let at = self.mem_start + skip as u64;
        file.write_all_at(&self.mem[skip..], at - self.spill_base)?;
        self.spilled += (self.mem.len() - skip) as u64;
        self.mem_start = self.tail();
        self.mem.clear();
        Ok(())
    }

    /// Writes everything left. Holes still open (a held sample never
    /// delivered) are left out; returns how many.
    pub fn finish(&mut self) -> io::Result<usize> {
        let mut open = 0;
        while let Some(h) = self.holes.pop_front() {
            self.emit_to(h.pos)?;
            match h.filled {
                Some(bytes) => self.out.write_all(&bytes)?,
                None => open += 1,
            }
        }
        self.emit_to(self.tail())?;
        self.out.flush()?;
        Ok(open)
    }
}

/// An unnamed temporary file in `$TMPDIR` (else `/tmp`): made under a
/// fresh name and unlinked at once, so it goes away with the process.
fn spill_file() -> io::Result<File> {
    let dir = std::env::var_os("TMPDIR").map(std::path::PathBuf::from).unwrap_or_else(|| "/tmp".into());
    let pid = std::process::id();
    for n in 0u32.. {
        let path = dir.join(format!(".pstitch-inject-{pid}-{n}"));
        match std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("temporary file in {}: {e}", dir.display()))),
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records are numbered bytes; holes are filled in scrambled orders,
    /// with limits that do and do not spill: the output is always the
    /// records in their places.
    #[test]
    fn holes_are_filled_in_place_whatever_the_order_and_limit() {
        let mut rng = crate::testing::rng(7);
        for limit in [1usize, 5, 64, 1 << 20] {
            for _ in 0..50 {
                let n = 1 + rng(60) as usize;
                let held: Vec<bool> = (0..n).map(|_| rng(3) == 0).collect();
                let record = |i: usize| vec![i as u8; 1 + i % 7];
                let mut r = Reorder::new(Vec::new(), limit);
                let mut pending: Vec<(u64, usize)> = Vec::new();
                for (i, &h) in held.iter().enumerate() {
                    if h {
                        r.hole(i as u64);
                        pending.push((i as u64, i));
                    } else {
                        r.push(&record(i)).unwrap();
                    }
                    // Now and then a held record comes, not the oldest first.
                    if !pending.is_empty() && rng(4) == 0 {
                        let k = rng(pending.len() as u64) as usize;
                        let (seq, j) = pending.remove(k);
                        r.fill(seq, &record(j)).unwrap();
                    }
                }
                while !pending.is_empty() {
                    let k = rng(pending.len() as u64) as usize;
                    let (seq, j) = pending.remove(k);
                    r.fill(seq, &record(j)).unwrap();
                }
                assert_eq!(r.finish().unwrap(), 0);
                let want: Vec<u8> = (0..n).flat_map(record).collect();
                assert_eq!(r.out, want, "limit {limit}, held {held:?}");
                if limit == 1 << 20 {
                    assert_eq!(r.spilled, 0);
                }
            }
        }
    }

    #[test]
    fn memory_stays_within_the_limit_behind_an_open_hole() {
        let mut r = Reorder::new(Vec::new(), 1000);
        r.push(b"a").unwrap();
        r.hole(0);
        for _ in 0..10_000 {
            r.push(&[b'x'; 10]).unwrap();
            assert!(r.mem.len() <= 1010);
        }
        assert_eq!(r.out, b"a");
        r.fill(0, b"H").unwrap();
        assert_eq!(r.out.len(), 1 + 1 + 100_000);
        assert_eq!(&r.out[..3], b"aHx");
        assert!(r.spilled >= 99_000);
        // The file started over: new holes spill again from its start.
        r.hole(1);
        r.push(&[b'y'; 2000]).unwrap();
        r.fill(1, b"I").unwrap();
        assert_eq!(&r.out[100_002..100_003], b"I");
        assert_eq!(r.out.len(), 100_002 + 1 + 2000);
    }

    #[test]
    fn unknown_numbers_are_appended_and_open_holes_left_out() {
        let mut r = Reorder::new(Vec::new(), 1 << 10);
        r.fill(9, b"u").unwrap();
        r.hole(1);
        r.push(b"b").unwrap();
        r.hole(3);
        r.push(b"c").unwrap();
        r.fill(3, b"3").unwrap();
        assert_eq!(r.finish().unwrap(), 1);
        assert_eq!(r.out, b"ub3c");
    }
}

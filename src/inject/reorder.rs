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
//! writing reaches it (in one buffer, end to end, not an allocation per
//! record: the bytes of those written are dropped past the limit when they
//! are at least half the buffer); such records count as waiting too. Past the limit,
//! the waiting bytes go to the spill file with the filled holes among them
//! spliced in (only open holes stay listed), and records of holes further
//! back (already in the file) go to a second temporary file (read back in
//! hole order through a buffer). A sample held to the end of the input
//! (its thread never returned to user space) keeps the first hole open all
//! along, and behind it most records may be held samples filled in time:
//! without the splicing, their holes alone would grow with the file. Holes are numbered in the order they are made
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
    /// Records of filled holes that wait in memory, end to end in the
    /// order they came (with the bytes of those written since, until
    /// they are dropped: see `waited`).
    filled_buf: Vec<u8>,
    /// Records of filled holes that wait: in memory, and in all.
    filled_mem: usize,
    filled_waiting: u64,
    /// Filled records moved out of memory, and its length.
    filled_file: Option<File>,
    filled_file_len: u64,
    /// A piece of `filled_file` read back: its bytes from `read_at` on.
    read_buf: Vec<u8>,
    read_at: u64,
    /// A buffer for the spill file's bytes on their way out, and one for
    /// bytes on their way into a spill file.
    copy_buf: Vec<u8>,
    spill_buf: Vec<u8>,
    /// The size of those buffers (see [`COPY_CHUNK`]).
    chunk: usize,
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
    filled: Option<Filled>,
}

/// Where a filled hole's record waits.
enum Filled {
    /// In `filled_buf`.
    Mem { at: usize, len: usize },
    /// In `filled_file`.
    Spilled { at: u64, len: usize },
}

/// Bytes copied to and from a spill file at a time: at most this, and a
/// quarter of the limit (the buffers are memory held besides it).
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
            filled_buf: Vec::new(),
            filled_mem: 0,
            filled_waiting: 0,
            filled_file: None,
            filled_file_len: 0,
            read_buf: Vec::new(),
            read_at: 0,
            copy_buf: Vec::new(),
            spill_buf: Vec::new(),
            chunk: COPY_CHUNK.min(limit / 4).max(4096),
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
        self.waited()
    }

    /// Accounts for what waits; past the limit, drops the bytes of
    /// filled records written since they came if they are at least half
    /// of `filled_buf` (so each byte is moved at most once more on
    /// average), and spills if that was not enough.
    fn waited(&mut self) -> io::Result<()> {
        self.peak_waiting = self.peak_waiting.max(self.tail() - self.head + self.filled_waiting);
        if self.mem.len() + self.filled_buf.len() > self.limit {
            if self.filled_buf.len() >= 2 * self.filled_mem {
                self.compact_filled();
            }
            if self.mem.len() + self.filled_buf.len() > self.limit {
                if !self.mem.is_empty() {
                    self.spill_mem()?;
                }
                self.spill_filled()?;
            }
        }
        Ok(())
    }

    /// Moves the filled records waiting in memory down over the bytes of
    /// those written, in place, keeping their order.
    fn compact_filled(&mut self) {
        let mut live: Vec<(usize, usize)> =
            self.holes.iter().enumerate().filter_map(|(i, h)| if let Some(Filled::Mem { at, .. }) = h.filled { Some((at, i)) } else { None }).collect();
        live.sort_unstable();
        let mut to = 0;
        for (_, i) in live {
            if let Some(Filled::Mem { at, len }) = &mut self.holes[i].filled {
                self.filled_buf.copy_within(*at..*at + *len, to);
                *at = to;
                to += *len;
            }
        }
        self.filled_buf.truncate(to);
    }

    /// A filled record left memory.
    fn filled_gone(&mut self, len: usize) {
        self.filled_mem -= len;
        if self.filled_mem == 0 {
            self.filled_buf.clear();
        }
    }

    /// Leaves a hole for the record numbered `seq`, which comes later.
    /// Numbers must grow.
    pub fn hole(&mut self, seq: u64) {
        debug_assert!(self.holes.back().is_none_or(|h| h.seq < seq));
        self.holes.push_back(Hole { pos: self.tail(), seq, filled: None });
    }

    /// Where hole `seq` is in the queue: at `seq - first` when the numbers
    /// have no gaps, at as many places from the back as `seq` is below
    /// the last when the holes since a spill have none (only the open ones
    /// before them are left: a few, with gaps), else found by a binary
    /// search.
    fn find(&self, seq: u64) -> Option<usize> {
        let first = self.holes.front()?.seq;
        let i = usize::try_from(seq.checked_sub(first)?).ok()?;
        if let Some(h) = self.holes.get(i)
            && h.seq == seq
        {
            return Some(i);
        }
        let last = self.holes.back()?.seq;
        let from_back = usize::try_from(last.checked_sub(seq)?).ok()?;
        if let Some(j) = (self.holes.len() - 1).checked_sub(from_back)
            && self.holes[j].seq == seq
        {
            return Some(j);
        }
        self.holes.binary_search_by_key(&seq, |h| h.seq).ok()
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
                self.holes[i].filled = Some(Filled::Mem { at: self.filled_buf.len(), len: bytes.len() });
                self.filled_buf.extend_from_slice(bytes);
                self.filled_mem += bytes.len();
                self.filled_waiting += bytes.len() as u64;
                self.waited()
            }
            None => self.push(bytes),
        }
    }

    /// Writes everything up to the first hole still open.
    fn drain(&mut self) -> io::Result<()> {
        while let Some(h) = self.holes.front_mut() {
            let Some(filled) = h.filled.take() else { break };
            let pos = h.pos;
            self.emit_to(pos)?;
            self.write_filled(filled)?;
            self.holes.pop_front();
        }
        if self.holes.is_empty() {
            self.emit_to(self.tail())?;
            self.filled_file_empty()?;
        }
        Ok(())
    }

    /// Writes a filled hole's record.
    fn write_filled(&mut self, filled: Filled) -> io::Result<()> {
        match filled {
            Filled::Mem { at, len } => {
                self.filled_waiting -= len as u64;
                let r = self.out.write_all(&self.filled_buf[at..at + len]);
                self.filled_gone(len);
                r
            }
            Filled::Spilled { at, len } => {
                let end = at + len as u64;
                if at < self.read_at || end > self.read_at + self.read_buf.len() as u64 {
                    // Read on from here: the next records are mostly next.
                    let file = self.filled_file.as_ref().expect("spilled records are in the file");
                    let n = len.max(self.chunk).min((self.filled_file_len - at) as usize);
                    self.read_buf.resize(n, 0);
                    file.read_exact_at(&mut self.read_buf, at)?;
                    self.read_at = at;
                }
                self.filled_waiting -= len as u64;
                let from = (at - self.read_at) as usize;
                self.out.write_all(&self.read_buf[from..from + len])
            }
        }
    }

    /// No filled record waits any more: the file starts over.
    fn filled_file_empty(&mut self) -> io::Result<()> {
        if let Some(f) = &self.filled_file
            && self.filled_file_len > 0
        {
            f.set_len(0)?;
            self.filled_file_len = 0;
            self.read_buf.clear();
            self.read_at = 0;
        }
        Ok(())
    }

    /// Moves the filled records waiting in memory to the end of their file.
    fn spill_filled(&mut self) -> io::Result<()> {
        if self.filled_mem == 0 {
            return Ok(());
        }
        if self.filled_file.is_none() {
            self.filled_file = Some(spill_file()?);
        }
        let file = self.filled_file.as_ref().expect("just made");
        let start = self.filled_file_len;
        let mut out = Staged::new(file, start, &mut self.spill_buf, self.chunk);
        for h in self.holes.iter_mut() {
            if let Some(Filled::Mem { at: from, len }) = h.filled {
                h.filled = Some(Filled::Spilled { at: out.at(), len });
                out.put(&self.filled_buf[from..from + len]);
            }
        }
        let end = out.finish()?;
        self.filled_file_len = end;
        self.spilled += end - start;
        let all = self.filled_mem;
        self.filled_gone(all);
        Ok(())
    }

    /// Writes the waiting bytes up to stream position `pos`.
    fn emit_to(&mut self, pos: u64) -> io::Result<()> {
        if self.head < self.mem_start {
            let upto = pos.min(self.mem_start);
            let file = self.spill.as_ref().expect("bytes before mem_start are in the spill file");
            let buf = &mut self.copy_buf;
            buf.resize(self.chunk.min((upto - self.head) as usize).max(buf.len()), 0);
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

    /// Moves the bytes waiting in memory to the end of the spill file, with
    /// the records of the holes among them that were filled meanwhile
    /// spliced into their places: those holes are gone, and the positions
    /// of the open ones after them move on by the bytes put in. (So behind
    /// a hole open for long only the open holes stay listed, as many as
    /// samples are held.)
    fn spill_mem(&mut self) -> io::Result<()> {
        if self.spill.is_none() {
            self.spill = Some(spill_file()?);
            self.spill_base = self.mem_start.min(self.head);
        }
        // Bytes of `mem` already written (before `head`) are not kept.
        let skip = self.head.saturating_sub(self.mem_start) as usize;
        let start = self.mem_start + skip as u64;
        let file = self.spill.as_ref().expect("just made");
        let mut out = Staged::new(file, start - self.spill_base, &mut self.spill_buf, self.chunk);
        let (mem, mem_start, filled_buf) = (&self.mem, self.mem_start, &self.filled_buf);
        let (mut copied, mut inserted) = (skip, 0u64);
        self.holes.retain_mut(|h| {
            if h.pos < start {
                return true;
            }
            let upto = (h.pos - mem_start) as usize;
            out.put(&mem[copied..upto]);
            copied = upto;
            match h.filled {
                Some(Filled::Mem { at, len }) => {
                    out.put(&filled_buf[at..at + len]);
                    inserted += len as u64;
                    false
                }
                _ => {
                    h.pos += inserted;
                    true
                }
            }
        });
        out.put(&mem[copied..]);
        let written = out.finish();
        let len = (mem.len() - skip) as u64 + inserted;
        self.filled_gone(inserted as usize);
        self.filled_waiting -= inserted;
        self.spilled += len;
        self.mem_start = start + len;
        self.mem.clear();
        written.map(|_| ())
    }

    /// Writes everything left. Holes still open (a held sample never
    /// delivered) are left out; returns how many.
    pub fn finish(&mut self) -> io::Result<usize> {
        let mut open = 0;
        while let Some(h) = self.holes.pop_front() {
            self.emit_to(h.pos)?;
            match h.filled {
                Some(filled) => self.write_filled(filled)?,
                None => open += 1,
            }
        }
        self.emit_to(self.tail())?;
        self.out.flush()?;
        Ok(open)
    }
}

/// Bytes on their way to a spill file at a position, through a buffer of
/// `chunk` bytes (records are small: a write each would be many).
/// A write error is kept and returned by `finish`.
struct Staged<'a> {
    file: &'a File,
    /// File position of the buffer's first byte.
    at: u64,
    buf: &'a mut Vec<u8>,
    chunk: usize,
    error: Option<io::Error>,
}

impl<'a> Staged<'a> {
    fn new(file: &'a File, at: u64, buf: &'a mut Vec<u8>, chunk: usize) -> Staged<'a> {
        buf.clear();
        Staged { file, at, buf, chunk, error: None }
    }

    /// File position of the next byte put.
    fn at(&self) -> u64 {
        self.at + self.buf.len() as u64
    }

    fn put(&mut self, bytes: &[u8]) {
        if self.buf.len() + bytes.len() > self.chunk {
            self.flush();
        }
        if bytes.len() > self.chunk {
            if self.error.is_none() {
                self.error = self.file.write_all_at(bytes, self.at).err();
            }
            self.at += bytes.len() as u64;
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn flush(&mut self) {
        if self.error.is_none() {
            self.error = self.file.write_all_at(self.buf, self.at).err();
        }
        self.at += self.buf.len() as u64;
        self.buf.clear();
    }

    /// Writes what is left; the file position after the last byte.
    fn finish(mut self) -> io::Result<u64> {
        self.flush();
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.at),
        }
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

    /// Behind a hole open to the end, the records are mostly held samples
    /// filled in time: they wait within the limit too.
    #[test]
    fn filled_records_behind_an_open_hole_stay_within_the_limit() {
        let mut r = Reorder::new(Vec::new(), 1000);
        r.hole(0);
        let mut want = Vec::new();
        for i in 1..5000u64 {
            r.hole(i);
            r.push(b"s").unwrap();
            r.fill(i, &[b'a' + (i % 26) as u8; 9]).unwrap();
            want.extend_from_slice(&[b'a' + (i % 26) as u8; 9]);
            want.push(b's');
            assert!(r.mem.len() + r.filled_buf.len() <= 1010, "{} in memory", r.mem.len() + r.filled_buf.len());
        }
        assert!(r.out.is_empty());
        assert!(r.spilled >= 45_000);
        // Only the open hole is still listed (and the few filled since the
        // last spill).
        assert!(r.holes.len() < 200, "{} holes listed", r.holes.len());
        assert_eq!(r.peak_waiting, 4999 * 10);
        assert_eq!(r.finish().unwrap(), 1);
        assert_eq!(r.out, want);
        assert_eq!(r.filled_waiting, 0);
    }

    /// Filled records written while later ones still wait leave their
    /// bytes behind in memory: they are dropped past the limit, not
    /// spilled, and the output is the records in their places.
    #[test]
    fn written_filled_records_are_dropped_from_memory() {
        let mut r = Reorder::new(Vec::new(), 100);
        let mut want = Vec::new();
        // Open hole, filled hole, open hole, ...: filling an open one
        // writes it and the filled one after it, up to the next open one.
        r.hole(0);
        r.hole(1);
        r.fill(1, b"f0000000001").unwrap();
        for i in 1..2000u64 {
            let (open, filled) = (2 * i, 2 * i + 1);
            r.hole(open);
            r.hole(filled);
            r.fill(filled, format!("f{filled:010}").as_bytes()).unwrap();
            r.fill(open - 2, format!("o{:010}", open - 2).as_bytes()).unwrap();
            want.extend(format!("o{:010}f{:010}", open - 2, open - 1).bytes());
            assert!(r.filled_buf.len() <= 100 + 11, "{} bytes of filled records in memory", r.filled_buf.len());
        }
        r.fill(3998, b"o0000003998").unwrap();
        want.extend(b"o0000003998f0000003999");
        assert_eq!(r.finish().unwrap(), 0);
        assert_eq!(String::from_utf8_lossy(&r.out), String::from_utf8_lossy(&want));
        assert_eq!(r.spilled, 0);
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

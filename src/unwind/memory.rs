//! Reading the unwound process's memory: perf's `memory_read` callback
//! (`unwind-libdw.c`).
//!
//! The sample carries a copy of the user stack from the sampled stack
//! pointer up: `dyn_size` valid bytes. An 8-byte read that lies entirely
//! inside `[sp, sp + dyn_size)` comes from that copy; any other read
//! (also one that straddles the end of the copy) goes to the file mapped
//! at that address (`access_dso_mem`, the caller's
//! [`super::Process::read_file_word`]), and fails if there is none — for
//! the stack beyond the copy there never is (it is anonymous memory), so
//! an unwind that needs it stops there. Without a stack pointer in the
//! sample every read fails.
//!
//! Every read of an unwind that makes a trail is noted in a [`ReadLog`]:
//! its address, and the word read from the copy, if it came from there
//! (the other unwinds note nothing: only a trail's making reads the log).
//! A sample's trail (`trail.rs`) is taken by a later sample only where
//! that sample's copy holds the same words at those addresses, and not
//! the addresses read from the files (whose words are the same while the
//! maps are).

use std::cell::Cell;

use super::Process;

/// The addresses an unwind read, in order, with the word read there from
/// the stack copy, or `None` for a read that went to the files (or
/// failed), and the register of the caller the word went to. Cells,
/// because reads go through shared references (expression evaluation
/// reads too).
pub(crate) struct ReadLog {
    reads: Box<[Cell<Read>]>,
    /// Reads noted since [`ReadLog::clear`]; past the capacity only
    /// counted (the log is then incomplete, see [`ReadLog::complete`]).
    len: Cell<usize>,
}

/// One read, as noted.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Read {
    pub addr: u64,
    /// The word, if `in_copy`.
    pub word: u64,
    pub in_copy: bool,
    /// The register the word went to, or [`ANY`].
    pub reg: u8,
}

/// A read whose word may go anywhere (an expression's, the frame-pointer
/// fallback's), not just to one register of the caller.
pub(crate) const ANY: u8 = u8::MAX;

/// Reads noted per unwind: a deep stack reads three or four words a
/// frame (an unwind that reads more keeps no trail).
const LOG_READS: usize = 2048;

impl Default for ReadLog {
    fn default() -> ReadLog {
        ReadLog { reads: (0..LOG_READS).map(|_| Cell::new(Read::default())).collect(), len: Cell::new(0) }
    }
}

impl ReadLog {
    pub(crate) fn clear(&self) {
        self.len.set(0);
    }

    /// Reads so far.
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    /// Every read was noted.
    pub(crate) fn complete(&self) -> bool {
        self.len.get() <= LOG_READS
    }

    /// The reads noted in `range`.
    pub(crate) fn reads(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = Read> + '_ {
        let to = range.end.min(self.len.get()).min(LOG_READS);
        self.reads[range.start.min(to)..to].iter().map(Cell::get)
    }

    #[inline]
    fn note(&self, read: Read) {
        let n = self.len.get();
        if let Some(r) = self.reads.get(n) {
            r.set(read);
        }
        self.len.set(n + 1);
    }
}

pub(crate) struct Memory<'a> {
    stack: &'a [u8],
    sp: Option<u64>,
    /// How many offsets from `sp` an 8-byte read can start at inside the
    /// copy: none where the copy's end would pass 2^64 (perf's sum wraps
    /// there, and every read goes to the files).
    starts: u64,
    little_endian: bool,
    process: &'a dyn Process,
    /// Where reads are noted, if they are (for an unwind that makes a
    /// trail).
    log: Option<&'a ReadLog>,
}

impl<'a> Memory<'a> {
    pub(crate) fn new(stack: &'a [u8], sp: Option<u64>, little_endian: bool, process: &'a dyn Process, log: Option<&'a ReadLog>) -> Memory<'a> {
        let len = stack.len() as u64;
        let starts = if sp.is_some_and(|sp| sp.checked_add(len).is_some()) { len.saturating_sub(7) } else { 0 };
        Memory { stack, sp, starts, little_endian, process, log }
    }

    /// The word at `addr` if an 8-byte read there comes from the copy
    /// (`None` for one that would go to the files), without noting it.
    #[inline]
    pub(crate) fn in_copy(&self, addr: u64) -> Option<u64> {
        // One compare: `starts` is 0 without a stack pointer, and the
        // copy's end does not pass 2^64, so an address below the stack
        // pointer wraps to an offset past every start.
        let off = addr.wrapping_sub(self.sp.unwrap_or(0));
        if off < self.starts {
            let b: [u8; 8] = *self.stack.get(off as usize..)?.first_chunk()?;
            return Some(self.word(b));
        }
        None
    }

    /// Whether the copy holds `words[i]` at `addrs[i]` for every `i`
    /// (read as [`Memory::read`] would read them from the copy).
    pub(crate) fn holds(&self, addrs: &[u64], words: &[u64]) -> bool {
        addrs.iter().zip(words).all(|(&addr, &word)| self.in_copy(addr) == Some(word))
    }

    /// Whether no read at any of `addrs` would come from the copy.
    pub(crate) fn holds_none(&self, addrs: &[u64]) -> bool {
        addrs.iter().all(|&addr| self.in_copy(addr).is_none())
    }

    #[inline]
    fn word(&self, b: [u8; 8]) -> u64 {
        if self.little_endian { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) }
    }

    /// 8 bytes at `addr`. Nearly every read of an unwind is in the copy:
    /// one subtraction and one compare tell.
    #[inline]
    pub(crate) fn read(&self, addr: u64) -> Option<u64> {
        self.read_for(addr, ANY)
    }

    /// [`Memory::read`] of a word that goes to register `reg` of the
    /// caller (a trail checks it only where that register matters).
    #[inline]
    pub(crate) fn read_for(&self, addr: u64, reg: u8) -> Option<u64> {
        let word = self.in_copy(addr);
        if let Some(log) = self.log {
            log.note(Read { addr, word: word.unwrap_or(0), in_copy: word.is_some(), reg });
        }
        if word.is_some() {
            return word;
        }
        self.sp?;
        // An address whose 8 bytes would wrap around is refused outright.
        addr.checked_add(8)?;
        self.process.read_file_word(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::MapRef;

    struct NoFiles;
    impl Process for NoFiles {
        fn find_map(&self, _addr: u64) -> Option<MapRef> {
            None
        }
        fn stamp(&self) -> u64 {
            0
        }
    }

    struct OneWord;
    impl Process for OneWord {
        fn find_map(&self, _addr: u64) -> Option<MapRef> {
            None
        }
        fn stamp(&self) -> u64 {
            0
        }
        fn read_file_word(&self, addr: u64) -> Option<u64> {
            (addr == 0x5000).then_some(42)
        }
    }

    #[test]
    fn reads_inside_the_copy_only() {
        let log = ReadLog::default();
        let stack: Vec<u8> = (0u8..32).collect();
        let m = Memory::new(&stack, Some(0x1000), true, &NoFiles, Some(&log));
        assert_eq!(m.read(0x1000), Some(u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7])));
        assert_eq!(m.read(0x1018), Some(u64::from_le_bytes([24, 25, 26, 27, 28, 29, 30, 31])));
        assert_eq!(m.read(0x1003), Some(u64::from_le_bytes([3, 4, 5, 6, 7, 8, 9, 10])));
        // Straddling the end, past it, below the stack pointer.
        assert_eq!(m.read(0x1019), None);
        assert_eq!(m.read(0x1020), None);
        assert_eq!(m.read(0xff8), None);
        // Wrapping addresses.
        assert_eq!(m.read(u64::MAX - 3), None);
        assert_eq!(m.read(u64::MAX - 7), None);
        // Big-endian samples.
        let m = Memory::new(&stack, Some(0x1000), false, &NoFiles, Some(&log));
        assert_eq!(m.read(0x1000), Some(0x0001020304050607));
        // No stack pointer: nothing can be read, not even files.
        let m = Memory::new(&stack, None, true, &OneWord, Some(&log));
        assert_eq!(m.read(0x1000), None);
        assert_eq!(m.read(0x5000), None);
        // Every read so far was noted; without a log, the same words and
        // no note.
        assert_eq!(log.len(), 11);
        let m = Memory::new(&stack, Some(0x1000), true, &NoFiles, None);
        assert_eq!((m.read(0x1018), m.read(0x1019), m.read(0xff8)), (Some(u64::from_le_bytes([24, 25, 26, 27, 28, 29, 30, 31])), None, None));
        assert_eq!(log.len(), 11);
    }

    #[test]
    fn reads_outside_go_to_the_mapped_file() {
        let log = ReadLog::default();
        let stack = [0u8; 16];
        let m = Memory::new(&stack, Some(0x1000), true, &OneWord, Some(&log));
        assert_eq!(m.read(0x5000), Some(42));
        assert_eq!(m.read(0x5008), None);
        // A stack pointer near the top of the address space: the end wraps
        // (as perf's u64 sum does) and every read goes to the files.
        let m = Memory::new(&stack, Some(u64::MAX - 7), true, &OneWord, Some(&log));
        assert_eq!(m.read(u64::MAX - 7), None);
        let m = Memory::new(&stack, Some(0x4ff0), true, &OneWord, Some(&log));
        assert_eq!((m.read(0x4ff8), m.read(0x5000)), (Some(0), Some(42)), "the copy, then past it");
        let m = Memory::new(&stack, Some(u64::MAX - 0x100f), true, &OneWord, Some(&log));
        assert_eq!(m.read(u64::MAX - 0x100f), Some(0), "an end just below 2^64 is no wrap");
    }
}

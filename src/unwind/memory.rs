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

use super::Process;

pub(crate) struct Memory<'a> {
    stack: &'a [u8],
    sp: Option<u64>,
    /// How many offsets from `sp` an 8-byte read can start at inside the
    /// copy: none where the copy's end would pass 2^64 (perf's sum wraps
    /// there, and every read goes to the files).
    starts: u64,
    little_endian: bool,
    process: &'a dyn Process,
}

impl<'a> Memory<'a> {
    pub(crate) fn new(stack: &'a [u8], sp: Option<u64>, little_endian: bool, process: &'a dyn Process) -> Memory<'a> {
        let len = stack.len() as u64;
        let starts = if sp.is_some_and(|sp| sp.checked_add(len).is_some()) { len.saturating_sub(7) } else { 0 };
        Memory { stack, sp, starts, little_endian, process }
    }

    /// 8 bytes at `addr`. Nearly every read of an unwind is in the copy:
    /// one subtraction and one compare tell.
    #[inline]
    pub(crate) fn read(&self, addr: u64) -> Option<u64> {
        let start = self.sp?;
        let off = addr.wrapping_sub(start);
        if addr >= start && off < self.starts {
            let b: [u8; 8] = *self.stack.get(off as usize..)?.first_chunk()?;
            return Some(if self.little_endian { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) });
        }
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
        let stack: Vec<u8> = (0u8..32).collect();
        let m = Memory::new(&stack, Some(0x1000), true, &NoFiles);
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
        let m = Memory::new(&stack, Some(0x1000), false, &NoFiles);
        assert_eq!(m.read(0x1000), Some(0x0001020304050607));
        // No stack pointer: nothing can be read, not even files.
        let m = Memory::new(&stack, None, true, &OneWord);
        assert_eq!(m.read(0x1000), None);
        assert_eq!(m.read(0x5000), None);
    }

    #[test]
    fn reads_outside_go_to_the_mapped_file() {
        let stack = [0u8; 16];
        let m = Memory::new(&stack, Some(0x1000), true, &OneWord);
        assert_eq!(m.read(0x5000), Some(42));
        assert_eq!(m.read(0x5008), None);
        // A stack pointer near the top of the address space: the end wraps
        // (as perf's u64 sum does) and every read goes to the files.
        let m = Memory::new(&stack, Some(u64::MAX - 7), true, &OneWord);
        assert_eq!(m.read(u64::MAX - 7), None);
        let m = Memory::new(&stack, Some(0x4ff0), true, &OneWord);
        assert_eq!((m.read(0x4ff8), m.read(0x5000)), (Some(0), Some(42)), "the copy, then past it");
        let m = Memory::new(&stack, Some(u64::MAX - 0x100f), true, &OneWord);
        assert_eq!(m.read(u64::MAX - 0x100f), Some(0), "an end just below 2^64 is no wrap");
    }
}

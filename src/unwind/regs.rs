//! Registers: from a sample's `PERF_SAMPLE_REGS_USER` (perf's numbering,
//! selected by the attr's `sample_regs_user` mask) to the DWARF register
//! file libdw unwinds with.
//!
//! A sample carries `abi`, then one u64 per bit set in the mask, lowest bit
//! first. perf 7.2 hands them to libdw like this (`unwind-libdw.c`, the
//! generic `set_initial_registers`): every perf register of the mask that
//! has a DWARF number below the architecture's `frame_nregs` is stored
//! under that number; the DWARF registers from 0 up to the highest one
//! stored are *all* marked as set, those the mask did not provide with the
//! value 0; the IP register also becomes the frame's pc.
//!
//! ```text
//!  perf reg (x86_64)  AX BX CX DX SI DI BP SP IP FLAGS .. R8 .. R15
//!  perf number         0  1  2  3  4  5  6  7  8   9  ..  16 ..  23
//!  DWARF number        0  3  2  1  4  5  6  7 16   -  ..   8 ..  15
//! ```
//!
//! FLAGS and the segment registers have DWARF numbers (49..55) beyond
//! x86_64's 17 frame registers, so they never reach libdw, and neither do
//! the XMM registers (17..32, also not below 17). Another architecture is a
//! table away: its perf→DWARF numbers, `frame_nregs`, the return-address
//! column and the ABI's default rules (see `abi_rule`), and, if libdw's
//! backend has one, its frame-pointer fallback.

/// Room for every architecture libdw unwinds with fewer than 128 frame
/// registers (x86_64 17, aarch64 97).
pub const MAX_DWARF_REGS: usize = 128;

pub(crate) use perf_data::sample::Regs;

/// `PERF_SAMPLE_REGS_ABI_*`.
pub mod abi {
    pub const NONE: u64 = 0;
    pub const ABI_64: u64 = 2;
}

/// An architecture the unwinder knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    X86_64,
}

/// x86_64: perf register number → DWARF register number (-1: none below
/// `frame_nregs`). From perf's `dwarf-regs-x86.c` table restricted to what
/// libdw's x86_64 backend can hold.
const X86_64_PERF_TO_DWARF: [i8; 24] = [
    0,  // AX
    3,  // BX
    2,  // CX
    1,  // DX
    4,  // SI
    5,  // DI
    6,  // BP
    7,  // SP
    16, // IP (the return-address column: rip)
    -1, // FLAGS (49)
    -1, // CS (51)
    -1, // SS (52)
    -1, // DS (53)
    -1, // ES (50)
    -1, // FS (54)
    -1, // GS (55)
    8, 9, 10, 11, 12, 13, 14, 15, // R8..R15
];

/// A default rule of the ABI (libdw's `ebl_abi_cfi`), in force for a
/// register before any CIE instruction mentions it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AbiRule {
    /// "unspecified": libdw then treats the register as undefined.
    Unspecified,
    SameValue,
    /// `DW_CFA_val_offset r, 0`: the register's value is the CFA.
    IsCfa,
}

impl Arch {
    /// libdw's `ebl_frame_nregs`: how many DWARF registers a frame holds.
    pub(crate) fn frame_nregs(self) -> usize {
        match self {
            Arch::X86_64 => 17,
        }
    }

    /// perf's register number of the instruction pointer.
    pub fn perf_ip(self) -> u32 {
        match self {
            Arch::X86_64 => 8,
        }
    }

    /// perf's register number of the stack pointer.
    pub fn perf_sp(self) -> u32 {
        match self {
            Arch::X86_64 => 7,
        }
    }

    /// The DWARF number perf stores `perf_reg` under, if libdw keeps it.
    pub fn dwarf_for_perf(self, perf_reg: u32) -> Option<usize> {
        let table: &[i8] = match self {
            Arch::X86_64 => &X86_64_PERF_TO_DWARF,
        };
        let d = *table.get(perf_reg as usize)?;
        (d >= 0 && (d as usize) < self.frame_nregs()).then_some(d as usize)
    }

    /// The ABI's default rule for DWARF register `reg`. x86_64
    /// (`backends/x86_64_cfi.c`): same-value for 0, 6, 12..16 (its comment
    /// says "%rbx" for 0, but DWARF register 0 is %rax: libdw's table is
    /// what counts), and %rsp (7) is the CFA.
    pub(crate) fn abi_rule(self, reg: usize) -> AbiRule {
        match self {
            Arch::X86_64 => match reg {
                0 | 6 | 12..=16 => AbiRule::SameValue,
                7 => AbiRule::IsCfa,
                _ => AbiRule::Unspecified,
            },
        }
    }

    /// The DWARF number of the stack pointer.
    pub(crate) fn sp(self) -> u64 {
        match self {
            Arch::X86_64 => 7,
        }
    }

    /// DWARF numbers of the frame pointer and stack pointer for libdw's
    /// frame-pointer fallback (`ebl_unwind`), if the backend has one.
    pub(crate) fn fp_fallback(self) -> Option<(usize, usize)> {
        match self {
            Arch::X86_64 => Some((6, self.sp() as usize)),
        }
    }
}

/// Where the values of a sample's registers go in the first frame's
/// register file, worked out once for a mask (the samples of an event
/// share their attr's): following the mask's bits through the perf→DWARF
/// table for every sample cost about 400 instructions a sample.
#[derive(Clone)]
pub(crate) struct InitialLayout {
    pub mask: u64,
    nregs: usize,
    /// (the value's index in the sample, its DWARF register), in mask
    /// order (a later move wins, as a later store did).
    moves: [(u8, u8); 64],
    len: u8,
    /// The registers marked set: all from 0 up to the highest one moved.
    set: [u64; 2],
}

impl InitialLayout {
    pub(crate) fn new(arch: Arch, mask: u64) -> InitialLayout {
        let nregs = arch.frame_nregs().min(MAX_DWARF_REGS);
        let mut layout = InitialLayout { mask, nregs, moves: [(0, 0); 64], len: 0, set: [0; 2] };
        let mut max = 0;
        let mut bits = mask;
        let mut value = 0u8;
        while bits != 0 {
            let perf_reg = bits.trailing_zeros();
            bits &= bits - 1;
            if let Some(d) = arch.dwarf_for_perf(perf_reg) {
                max = max.max(d);
                layout.moves[layout.len as usize] = (value, d as u8);
                layout.len += 1;
            }
            value += 1;
        }
        layout.set = low_flags(max.min(nregs - 1) + 1);
        layout
    }

    fn moves(&self) -> &[(u8, u8)] {
        &self.moves[..self.len as usize]
    }
}

/// The DWARF registers of one frame with their "set" flags (libdw's
/// `Dwfl_Frame.regs` / `regs_set`). The value of a register that is not
/// set is unspecified: only [`RegFile::get`] reads values, and it asks
/// the flag first.
///
/// The flags are two 64-bit words rather than a `u128`: a `u128` shift by
/// a variable amount is several instructions and a branch, and setting a
/// flag was a third of the instructions spent applying CFI rows (callgrind,
/// dwarf benchmark).
#[derive(Clone)]
pub(crate) struct RegFile {
    vals: [u64; MAX_DWARF_REGS],
    /// Register `r` is set when bit `r % 64` of word `r / 64` is.
    set: [u64; 2],
    nregs: usize,
}

/// The flag words with registers `0..n` set.
fn low_flags(n: usize) -> [u64; 2] {
    match n {
        0..64 => [(1u64 << n) - 1, 0],
        64..128 => [u64::MAX, (1u64 << (n - 64)) - 1],
        _ => [u64::MAX; 2],
    }
}

/// A `u128` register mask as flag words.
fn flag_words(mask: u128) -> [u64; 2] {
    [mask as u64, (mask >> 64) as u64]
}

impl RegFile {
    pub(crate) fn empty(nregs: usize) -> RegFile {
        RegFile { vals: [0; MAX_DWARF_REGS], set: [0; 2], nregs: nregs.min(MAX_DWARF_REGS) }
    }

    /// No register set, for a frame of `nregs` registers (the values
    /// stay, unread: `get` answers only for set registers).
    pub(crate) fn clear(&mut self, nregs: usize) {
        self.set = [0; 2];
        self.nregs = nregs.min(MAX_DWARF_REGS);
    }

    /// [`RegFile::clear`], then the registers of `mask` that `from` has set
    /// take `from`'s values (libdw's same-value rule).
    pub(crate) fn clear_keeping(&mut self, nregs: usize, from: &RegFile, mask: u128) {
        self.clear(nregs);
        let n = self.nregs;
        // Every value below nregs is copied, set or not, where the values
        // of the registers left unset do not matter (see the type's doc),
        // in blocks of a fixed size that the compiler turns into a few
        // moves each (a copy of nregs values was a call to memcpy, a
        // tenth of the instructions of applying a row).
        const BLOCK: usize = 16;
        const _: () = assert!(MAX_DWARF_REGS.is_multiple_of(BLOCK));
        let mut at = 0;
        while at < n {
            // at <= MAX_DWARF_REGS - BLOCK: at is a multiple of BLOCK below n.
            self.vals[at..at + BLOCK].copy_from_slice(&from.vals[at..at + BLOCK]);
            at += BLOCK;
        }
        let (mask, frame) = (flag_words(mask), low_flags(n));
        self.set = [mask[0] & from.set[0] & frame[0], mask[1] & from.set[1] & frame[1]];
    }

    /// The first frame's registers from a sample's (see the module doc).
    #[cfg(test)]
    pub(crate) fn initial(arch: Arch, regs: &Regs<'_>) -> RegFile {
        let mut f = RegFile::empty(arch.frame_nregs());
        f.set_initial(arch, regs);
        f
    }

    /// Makes these the first frame's registers from a sample's (see the
    /// module doc), whatever they were before.
    #[cfg(test)]
    pub(crate) fn set_initial(&mut self, arch: Arch, regs: &Regs<'_>) {
        self.set_initial_by(&InitialLayout::new(arch, regs.mask), regs);
    }

    /// [`RegFile::set_initial`] with the layout of the sample's mask.
    pub(crate) fn set_initial_by(&mut self, layout: &InitialLayout, regs: &Regs<'_>) {
        debug_assert_eq!(layout.mask, regs.mask);
        self.clear(layout.nregs);
        // Registers below the highest one given that the sample lacks are
        // set, to 0.
        self.vals[..self.nregs].fill(0);
        for &(value, reg) in layout.moves() {
            self.vals[reg as usize] = regs.values.get(value as usize).unwrap_or(0);
        }
        self.set = layout.set;
    }

    /// What a trail keeps of a frame's registers: the values of registers
    /// `0..nregs` (set or not), the set flags, and `nregs`.
    pub(crate) fn kept(&self) -> (&[u64], [u64; 2], usize) {
        (&self.vals[..self.nregs], self.set, self.nregs)
    }

    /// libdw's `dwfl_frame_reg`: the value if `reg` is a frame register
    /// that is set.
    pub(crate) fn get(&self, reg: u64) -> Option<u64> {
        let r = usize::try_from(reg).ok().filter(|&r| r < self.nregs)?;
        (self.set[r / 64] >> (r % 64) & 1 != 0).then_some(self.vals[r])
    }

    /// libdw's `__libdwfl_frame_reg_set`; false if `reg` is not a frame
    /// register.
    pub(crate) fn set(&mut self, reg: usize, val: u64) -> bool {
        if reg >= self.nregs {
            return false;
        }
        self.vals[reg] = val;
        self.set[reg / 64] |= 1 << (reg % 64);
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use perf_data::bytes::{Endian, U64Array};

    /// Register values as a sample holds them (little-endian words).
    pub(crate) fn words(values: &[u64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A sample's registers over `bytes` (see [`words`]).
    pub(crate) fn user_regs(abi: u64, mask: u64, bytes: &[u8]) -> Regs<'_> {
        Regs { abi, mask, values: U64Array::new(bytes, Endian::Little) }
    }

    /// perf's x86_64 `--call-graph dwarf` mask: AX..SS and R8..R15.
    const FULL: u64 = 0xff0fff;

    #[test]
    fn x86_64_table_maps_perf_to_dwarf_numbers() {
        let a = Arch::X86_64;
        let want = [(0, 0), (1, 3), (2, 2), (3, 1), (4, 4), (5, 5), (6, 6), (7, 7), (8, 16), (16, 8), (23, 15)];
        for (perf, dwarf) in want {
            assert_eq!(a.dwarf_for_perf(perf), Some(dwarf), "perf reg {perf}");
        }
        for perf in 9..16 {
            assert_eq!(a.dwarf_for_perf(perf), None, "perf reg {perf} has no frame register");
        }
        // XMM0 (32) and anything past the table.
        assert_eq!(a.dwarf_for_perf(32), None);
        assert_eq!(a.dwarf_for_perf(u32::MAX), None);
    }

    #[test]
    fn initial_frame_sets_every_register_up_to_the_highest_mapped() {
        let vals: Vec<u64> = (0..20).map(|i| 100 + i).collect();
        let bytes = words(&vals);
        let f = RegFile::initial(Arch::X86_64, &user_regs(abi::ABI_64, FULL, &bytes));
        assert_eq!(f.get(0), Some(100)); // rax
        assert_eq!(f.get(1), Some(103)); // rdx
        assert_eq!(f.get(3), Some(101)); // rbx
        assert_eq!(f.get(7), Some(107)); // rsp
        assert_eq!(f.get(16), Some(108)); // rip
        assert_eq!(f.get(8), Some(112)); // r8
        assert_eq!(f.get(17), None); // beyond frame_nregs

        // Only IP and SP recorded: registers 0..=16 are all set, the
        // missing ones to 0 (perf allocates them zeroed).
        let bytes = words(&[0x1000, 0x7ff0]);
        let f = RegFile::initial(Arch::X86_64, &user_regs(abi::ABI_64, (1 << 7) | (1 << 8), &bytes));
        assert_eq!(f.get(7), Some(0x1000));
        assert_eq!(f.get(16), Some(0x7ff0));
        assert_eq!(f.get(6), Some(0));
        assert_eq!(f.get(3), Some(0));

        // Only SP: registers up to 7 are set, rip is not.
        let bytes = words(&[0x1000]);
        let f = RegFile::initial(Arch::X86_64, &user_regs(abi::ABI_64, 1 << 7, &bytes));
        assert_eq!(f.get(7), Some(0x1000));
        assert_eq!(f.get(0), Some(0));
        assert_eq!(f.get(8), None);
        assert_eq!(f.get(16), None);
    }

    #[test]
    fn flags_cover_both_words() {
        assert_eq!(low_flags(0), [0, 0]);
        assert_eq!(low_flags(17), [0x1ffff, 0]);
        assert_eq!(low_flags(64), [u64::MAX, 0]);
        assert_eq!(low_flags(97), [u64::MAX, 0x1_ffff_ffff]);
        assert_eq!(low_flags(128), [u64::MAX; 2]);
        let mut f = RegFile::empty(MAX_DWARF_REGS);
        for r in [0, 63, 64, 127] {
            assert_eq!(f.get(r as u64), None);
            assert!(f.set(r, r as u64 + 1));
            assert_eq!(f.get(r as u64), Some(r as u64 + 1));
        }
        assert_eq!(f.get(1), None);
        assert_eq!(f.get(65), None);
    }

    /// Same-value registers: those of the mask that the frame has set
    /// keep their values, below the caller's register count; no other
    /// register is set.
    #[test]
    fn clear_keeping_copies_only_set_registers_of_the_mask() {
        let mut from = RegFile::empty(MAX_DWARF_REGS);
        for r in [1, 5, 16, 70, 100] {
            from.set(r, 1000 + r as u64);
        }
        let mut to = RegFile::empty(17);
        to.set(2, 7);
        to.clear_keeping(MAX_DWARF_REGS, &from, (1 << 1) | (1 << 3) | (1 << 70) | (1 << 99));
        assert_eq!(to.get(1), Some(1001));
        assert_eq!(to.get(70), Some(1070));
        for r in [2, 3, 5, 16, 99, 100] {
            assert_eq!(to.get(r), None, "register {r}");
        }
        to.clear_keeping(17, &from, u128::MAX);
        assert_eq!((to.get(1), to.get(5), to.get(16)), (Some(1001), Some(1005), Some(1016)));
        assert_eq!(to.get(70), None);
    }

    /// An unwinder reuses its frames: the registers of the sample before
    /// leave nothing behind.
    #[test]
    fn set_initial_forgets_the_frame_before() {
        let only_sp = words(&[0x1000]);
        let regs = user_regs(abi::ABI_64, 1 << 7, &only_sp);
        let mut f = RegFile::empty(MAX_DWARF_REGS);
        for r in 0..MAX_DWARF_REGS {
            f.set(r, 99);
        }
        f.set_initial(Arch::X86_64, &regs);
        let fresh = RegFile::initial(Arch::X86_64, &regs);
        for r in 0..MAX_DWARF_REGS as u64 {
            assert_eq!(f.get(r), fresh.get(r), "register {r}");
        }
        assert_eq!((f.get(0), f.get(7), f.get(8), f.get(17)), (Some(0), Some(0x1000), None, None));
    }

    /// One layout serves every sample of its mask: a record holding fewer
    /// values than its mask says reads 0 for the rest, a mask of all 64
    /// bits fits, and a mask with no frame register still sets register 0.
    #[test]
    fn a_layout_serves_every_sample_of_its_mask() {
        let layout = InitialLayout::new(Arch::X86_64, FULL);
        let mut f = RegFile::empty(MAX_DWARF_REGS);
        for n in [20, 8, 0] {
            let vals: Vec<u64> = (0..n).map(|i| 500 + i).collect();
            let bytes = words(&vals);
            let regs = user_regs(abi::ABI_64, FULL, &bytes);
            f.set_initial_by(&layout, &regs);
            let fresh = RegFile::initial(Arch::X86_64, &regs);
            for r in 0..MAX_DWARF_REGS as u64 {
                assert_eq!(f.get(r), fresh.get(r), "{n} values, register {r}");
            }
            assert_eq!(f.get(16), Some(if n > 8 { 508 } else { 0 }), "{n} values: rip");
        }
        let all = InitialLayout::new(Arch::X86_64, u64::MAX);
        assert_eq!(all.moves().len(), 17);
        let none = InitialLayout::new(Arch::X86_64, 1 << 9);
        let regs = user_regs(abi::ABI_64, 1 << 9, &[0xff; 8]);
        f.set_initial_by(&none, &regs);
        assert_eq!((f.get(0), f.get(1)), (Some(0), None));
    }

    #[test]
    fn set_refuses_registers_beyond_the_frame() {
        let mut f = RegFile::empty(17);
        assert!(f.set(16, 5));
        assert!(!f.set(17, 5));
        assert!(!f.set(1000, 5));
        assert_eq!(f.get(16), Some(5));
        assert_eq!(f.get(u64::MAX), None);
    }
}

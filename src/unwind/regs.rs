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

    /// DWARF numbers of the frame pointer and stack pointer for libdw's
    /// frame-pointer fallback (`ebl_unwind`), if the backend has one.
    pub(crate) fn fp_fallback(self) -> Option<(usize, usize)> {
        match self {
            Arch::X86_64 => Some((6, 7)),
        }
    }
}

/// The DWARF registers of one frame with their "set" flags (libdw's
/// `Dwfl_Frame.regs` / `regs_set`).
#[derive(Clone)]
pub(crate) struct RegFile {
    vals: [u64; MAX_DWARF_REGS],
    set: u128,
    nregs: usize,
}

impl RegFile {
    pub(crate) fn empty(nregs: usize) -> RegFile {
        RegFile { vals: [0; MAX_DWARF_REGS], set: 0, nregs: nregs.min(MAX_DWARF_REGS) }
    }

    /// No register set, for a frame of `nregs` registers (the values
    /// stay, unread: `get` answers only for set registers).
    pub(crate) fn clear(&mut self, nregs: usize) {
        self.set = 0;
        self.nregs = nregs.min(MAX_DWARF_REGS);
    }

    /// The initial frame of a sample, as perf 7.2 sets it up.
    pub(crate) fn initial(arch: Arch, regs: &Regs<'_>) -> RegFile {
        let mut f = RegFile::empty(arch.frame_nregs());
        let mut max = 0;
        for (perf_reg, value) in regs.iter() {
            if let Some(d) = arch.dwarf_for_perf(perf_reg) {
                max = max.max(d);
                f.vals[d] = value;
            }
        }
        for d in 0..=max.min(f.nregs - 1) {
            f.set |= 1 << d;
        }
        f
    }

    /// libdw's `dwfl_frame_reg`: the value if `reg` is a frame register
    /// that is set.
    pub(crate) fn get(&self, reg: u64) -> Option<u64> {
        let r = usize::try_from(reg).ok().filter(|&r| r < self.nregs)?;
        (self.set & (1 << r) != 0).then_some(self.vals[r])
    }

    /// Copies the registers of `mask` that are set in `from` (the
    /// same-value rules of a row: `get` then `set` for each).
    pub(crate) fn copy_set(&mut self, from: &RegFile, mask: u128) {
        let mut bits = mask & from.set & self.frame_mask();
        while bits != 0 {
            let r = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            self.vals[r] = from.vals[r];
        }
        self.set |= mask & from.set & self.frame_mask();
    }

    /// The bits of the frame registers `0..nregs`.
    fn frame_mask(&self) -> u128 {
        if self.nregs >= 128 { u128::MAX } else { (1u128 << self.nregs) - 1 }
    }

    /// libdw's `__libdwfl_frame_reg_set`; false if `reg` is not a frame
    /// register.
    pub(crate) fn set(&mut self, reg: usize, val: u64) -> bool {
        if reg >= self.nregs {
            return false;
        }
        self.vals[reg] = val;
        self.set |= 1 << reg;
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
    fn set_refuses_registers_beyond_the_frame() {
        let mut f = RegFile::empty(17);
        assert!(f.set(16, 5));
        assert!(!f.set(17, 5));
        assert!(!f.set(1000, 5));
        assert_eq!(f.get(16), Some(5));
        assert_eq!(f.get(u64::MAX), None);
    }
}

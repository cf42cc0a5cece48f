//! Call frame information: finding the FDE that covers an address and
//! running its instructions to the row for that address, with libdw's
//! rules (elfutils 0.196: `libdw/dwarf_next_cfi.c`, `cie.c`, `fde.c`,
//! `cfi.c`, `dwarf_getcfi_elf.c`).
//!
//! ## Why not gimli's `UnwindContext`
//! gimli parses the same bytes, but the rows libdw computes differ from a
//! standard CFI evaluator in ways that change which frames perf prints:
//! - a register the CIE/FDE never mentions is not "undefined" but gets the
//!   ABI's default rule (x86_64: same-value for rax, rbp, r12..r15 and rip,
//!   rsp = CFA), while an explicit `DW_CFA_undefined rip` ends the stack;
//!   `DW_CFA_restore` returns to the CIE's state *including* those ABI rules;
//! - `DW_CFA_def_cfa_register`/`_offset` after a CFA expression leave an
//!   invalid CFA rule (registers that need the CFA fail, the others are
//!   still computed) instead of rejecting the row;
//! - operands read past the end of the instructions are `UINT64_MAX`, rule
//!   values are kept in 61-bit fields, `DW_CFA_GNU_window_save` is SPARC's
//!   register-window shorthand on every architecture but aarch64,
//!   `DW_CFA_MIPS_advance_loc8` is accepted, any other unknown opcode makes
//!   the whole lookup fail (then libdw tries `.debug_frame`, then the frame
//!   pointer);
//! - FDE lookup uses the `.eh_frame_hdr` table when there is one (no
//!   fallback to a scan if the table has no match), else the first FDE in
//!   section order that covers the address.
//!
//! So the bytes are read here, following libdw line by line where the
//! result depends on it.
//!
//! ## Layout
//! ```text
//! .eh_frame / .debug_frame:  entry*  (terminated by a zero length in .eh_frame)
//!   entry  = length u32 (0xffffffff: u64 follows) | id / CIE pointer | body
//!   CIE    = id 0 (.eh_frame) or ~0 (.debug_frame), version, augmentation "zRLPS..",
//!            code_align uleb, data_align sleb, return-address register,
//!            augmentation data, initial instructions
//!   FDE    = CIE pointer, pc_begin (FDE encoding), pc_range, [aug data], instructions
//! .eh_frame_hdr:  version 1, eh_frame_ptr_enc, fde_count_enc, table_enc,
//!            eh_frame_ptr, fde_count, { initial_location, fde_address }[fde_count]
//! ```

use std::ops::Range;
use std::cell::OnceCell;

use super::read::{Bases, Reader, encoded_size, pe, read_encoded};
use super::regs::{AbiRule, Arch};
use crate::symbols::elf::SectionBytes;

/// Register numbers at or above this are an error in a CFI program
/// (libdw's `enough_registers`: `INT32_MAX / sizeof (struct
/// dwarf_frame_register)`, 8 bytes).
const MAX_CFI_REG: u64 = (i32::MAX as u64) / 8;

/// `DW_CFA_remember_state` nesting kept before the program is treated as
/// invalid (libdw has no limit; this keeps a hostile FDE from using memory
/// in proportion to its length squared).
const MAX_REMEMBERED: usize = 1 << 12;

/// Which section a table was read from: their CIE ids and pointers differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    EhFrame,
    DebugFrame,
}

/// The `.eh_frame_hdr` binary search table.
#[derive(Debug)]
struct SearchTable {
    hdr: SectionBytes,
    /// Where the table starts in `hdr`.
    start: usize,
    /// Address of `hdr`'s first byte (the base of `datarel` values).
    vaddr: u64,
    encoding: u8,
    entries: usize,
}

/// One CFI section of an object, ready for lookups.
#[derive(Debug)]
pub(crate) struct CfiTable {
    data: SectionBytes,
    kind: Kind,
    bases: Bases,
    little_endian: bool,
    search: Option<SearchTable>,
    /// For tables without a search table: every usable FDE as
    /// (pc_begin, pc_end, entry offset), sorted, built on first use.
    index: OnceCell<Vec<(u64, u64, usize)>>,
}

/// A parsed CIE (`intern_new_cie`).
#[derive(Debug, Clone)]
pub(crate) struct Cie {
    code_align: u64,
    data_align: u64,
    pub ra_reg: u64,
    fde_encoding: u8,
    sized_augmentation: bool,
    pub signal_frame: bool,
    instructions: Range<usize>,
}

/// A parsed FDE (`intern_fde`).
#[derive(Debug, Clone)]
pub(crate) struct Fde {
    pub start: u64,
    pub end: u64,
    pub cie: Cie,
    instructions: Range<usize>,
}

/// The CFA rule of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CfaRule {
    /// No `DW_CFA_def_cfa*` yet.
    Undefined,
    /// register + offset (`DW_OP_bregx`).
    Offset { reg: u64, offset: u64 },
    /// A DWARF expression: `len` bytes at `pos` of the section.
    Expr { pos: usize, len: usize },
    /// `DW_CFA_def_cfa_register`/`_offset` without a register+offset rule.
    Invalid,
}

/// A register rule of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegRule {
    /// Not mentioned: libdw's default for x86_64 is "undefined".
    Unspecified,
    Undefined,
    SameValue,
    /// Saved at CFA + n.
    Offset(u64),
    /// Is CFA + n.
    ValOffset(u64),
    /// In another register.
    Register(u64),
    /// At the address an expression computes; `pos`: the block (its
    /// ULEB128 length first) in the section.
    Expression(usize),
    /// The value an expression computes.
    ValExpression(usize),
}

/// The state of a CFI program: the rules of one row.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    cfa: CfaRule,
    regs: Vec<RegRule>,
}

/// The row for one address, with what handle_cfi needs besides it.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub cfa: CfaRule,
    /// Rules of the frame registers `0..frame_nregs`.
    pub regs: Vec<RegRule>,
    pub ra_reg: u64,
    pub signal_frame: bool,
}

/// Why no row: libdw reports all of these as a failed
/// `dwarf_cfi_addrframe`, after which it tries the next CFI source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CfiError {
    NoFde,
    InvalidCie,
    InvalidProgram,
}

/// Keeps a rule value the way libdw's 61-bit signed bitfield does.
fn rule_value(v: u64) -> u64 {
    (((v << 3) as i64) >> 3) as u64
}

impl CfiTable {
    /// `.eh_frame` found by section headers (`getcfi_scn_eh_frame`):
    /// `hdr` is `.eh_frame_hdr` with its address, if the file has one.
    /// `None` where libdw gives up on the object's `.eh_frame` (a
    /// `.eh_frame_hdr` it cannot parse).
    pub(crate) fn eh_frame(
        data: SectionBytes,
        addr: u64,
        hdr: Option<(SectionBytes, u64)>,
        elf64: bool,
        little_endian: bool,
    ) -> Option<CfiTable> {
        let mut search = None;
        if let Some((hdr, hdr_addr)) = hdr {
            let parsed = parse_hdr(&hdr, hdr_addr, elf64, little_endian)?;
            if let Some((start, entries, encoding)) = parsed.table
                && parsed.eh_frame_ptr == addr
            {
                search = Some(SearchTable { hdr, start, vaddr: hdr_addr, encoding, entries });
            }
        }
        Some(CfiTable::new(data, Kind::EhFrame, addr, little_endian, elf64, search))
    }

    /// `.eh_frame` found through `PT_GNU_EH_FRAME` (`getcfi_gnu_eh_frame`),
    /// for files without section headers: `file` is the whole file,
    /// `hdr_range` the segment's file bytes, `hdr_vaddr` its address; the
    /// `.eh_frame` data runs from where the header points to the end of
    /// the file.
    pub(crate) fn eh_frame_from_segment(
        file: &SectionBytes,
        hdr: SectionBytes,
        hdr_offset: u64,
        hdr_vaddr: u64,
        elf64: bool,
        little_endian: bool,
    ) -> Option<CfiTable> {
        let parsed = parse_hdr(&hdr, hdr_vaddr, elf64, little_endian)?;
        let offset = parsed.eh_frame_ptr.wrapping_sub(hdr_vaddr).wrapping_add(hdr_offset);
        let offset = usize::try_from(offset).ok().filter(|&o| o <= file.len())?;
        let data = match file {
            SectionBytes::Mapped(f, start, end) => SectionBytes::Mapped(f.clone(), start + offset, *end),
            SectionBytes::Owned(v) => SectionBytes::Owned(std::sync::Arc::new(v[offset..].to_vec())),
        };
        let search = parsed
            .table
            .map(|(start, entries, encoding)| SearchTable { hdr, start, vaddr: hdr_vaddr, encoding, entries });
        Some(CfiTable::new(data, Kind::EhFrame, parsed.eh_frame_ptr, little_endian, elf64, search))
    }

    /// `.debug_frame` (`dwarf_getcfi`): no search table, addresses absolute.
    pub(crate) fn debug_frame(data: SectionBytes, elf64: bool, little_endian: bool) -> CfiTable {
        CfiTable::new(data, Kind::DebugFrame, 0, little_endian, elf64, None)
    }

    fn new(data: SectionBytes, kind: Kind, vaddr: u64, little_endian: bool, elf64: bool, search: Option<SearchTable>) -> CfiTable {
        CfiTable {
            data,
            kind,
            bases: Bases { vaddr, textrel: 0, datarel: 0, elf64 },
            little_endian,
            search,
            index: OnceCell::new(),
        }
    }

    fn reader(&self, pos: usize) -> Reader<'_> {
        Reader::new(&self.data, pos, self.little_endian)
    }

    /// The row for `addr` (an address in the file's own address space):
    /// `dwarf_cfi_addrframe`.
    pub(crate) fn row(&self, arch: Arch, addr: u64) -> Result<Row, CfiError> {
        let fde = self.find_fde(addr).ok_or(CfiError::NoFde)?;
        let initial = self.cie_initial_state(arch, &fde.cie)?;
        let mut state = initial.clone();
        let mut loc = fde.start;
        self.execute(arch, &fde.cie, &mut state, fde.instructions.clone(), Some(&initial), &mut loc, addr)?;
        Ok(Row { cfa: state.cfa, regs: state.regs, ra_reg: fde.cie.ra_reg, signal_frame: fde.cie.signal_frame })
    }

    /// The block of a rule expression at `pos` (its ULEB128 length, then
    /// the bytes), as `dwarf_frame_register` reads it.
    pub(crate) fn rule_block(&self, pos: usize) -> Option<&[u8]> {
        let mut r = self.reader(pos);
        if r.at_end() {
            return None;
        }
        let len = usize::try_from(r.uleb()).ok()?;
        self.data.get(r.pos..r.pos.checked_add(len)?)
    }

    /// The bytes of a CFA expression.
    pub(crate) fn block(&self, pos: usize, len: usize) -> Option<&[u8]> {
        self.data.get(pos..pos.checked_add(len)?)
    }

    pub(crate) fn little_endian(&self) -> bool {
        self.little_endian
    }

    // --- entries -----------------------------------------------------------

    /// `dwarf_next_cfi` at `off`.
    fn entry_at(&self, off: usize) -> Entry {
        let d: &[u8] = &self.data;
        if off.checked_add(4).is_none_or(|e| e >= d.len()) {
            return Entry::End;
        }
        let mut r = self.reader(off);
        let Some(mut length) = r.uint(4) else { return Entry::End };
        let mut offset_size = 4;
        if length == 0xffff_ffff {
            offset_size = 8;
            match r.uint(8) {
                Some(l) => length = l,
                None => return Entry::Invalid { next: None },
            }
        }
        if length == 0 {
            return Entry::End;
        }
        if (r.remaining() as u64) < length || length < offset_size as u64 + 1 {
            return Entry::Invalid { next: None };
        }
        let next = off + (2 * offset_size - 4) + length as usize;
        let invalid = Entry::Invalid { next: Some(next) };
        let limit = r.pos + length as usize;
        let id_pos = r.pos;
        let Some(mut id) = r.uint(offset_size) else { return invalid };
        if offset_size == 4 && self.kind == Kind::DebugFrame && id == 0xffff_ffff {
            id = u64::MAX;
        }
        if self.kind == Kind::EhFrame {
            if id == 0 {
                id = u64::MAX;
            } else {
                if id > id_pos as u64 || id_pos <= offset_size {
                    return invalid;
                }
                id = id_pos as u64 - id;
            }
        }
        if id != u64::MAX {
            return Entry::Fde { cie_pointer: id, body: r.pos..limit, next };
        }
        match self.parse_cie(&mut r, limit) {
            Some(cie) => Entry::Cie { cie, next },
            None => invalid,
        }
    }

    /// The CIE body after its id (`dwarf_next_cfi`, then `intern_new_cie`).
    fn parse_cie(&self, r: &mut Reader<'_>, limit: usize) -> Option<Cie> {
        let version = r.u8()?;
        if version != 1 && !(3..=4).contains(&version) {
            return None;
        }
        let aug_start = r.pos;
        let nul = self.data.get(aug_start..limit)?.iter().position(|&b| b == 0)?;
        let aug = &self.data[aug_start..aug_start + nul];
        r.pos = aug_start + nul + 1;
        let address_size = if self.bases.elf64 { 8 } else { 4 };
        if version >= 4 {
            if limit.saturating_sub(r.pos) < 5 || self.data[r.pos] != address_size as u8 || self.data[r.pos + 1] != 0 {
                return None;
            }
            r.pos += 2;
        }
        let mut ap = aug;
        if ap.starts_with(b"eh") {
            ap = &ap[2..];
            r.pos += address_size;
        }
        let bounded = |r: &Reader<'_>| r.pos < limit;
        let mut lim = *r;
        lim.data = &self.data[..limit.min(self.data.len())];
        if !bounded(&lim) {
            return None;
        }
        let code_align = lim.uleb();
        if !bounded(&lim) {
            return None;
        }
        let data_align = lim.sleb();
        if !bounded(&lim) {
            return None;
        }
        let ra_reg = if version >= 3 { lim.uleb() } else { lim.u8()? as u64 };
        let sized = ap.first() == Some(&b'z');
        let mut aug_data = lim.pos;
        let mut aug_len = 0usize;
        if sized {
            ap = &ap[1..];
            if !bounded(&lim) {
                return None;
            }
            let n = lim.uleb();
            if ((limit - lim.pos.min(limit)) as u64) < n {
                return None;
            }
            aug_len = n as usize;
            aug_data = lim.pos;
        }
        // dwarf_next_cfi's pass: how far the augmentation data goes.
        if sized {
            for &c in ap {
                match c {
                    b'L' => {
                        lim.u8()?;
                    }
                    b'R' => {
                        lim.u8()?;
                    }
                    b'P' => {
                        let enc = lim.u8()?;
                        lim.pos += encoded_size(enc, self.bases.elf64, Some(&lim));
                    }
                    b'S' => {}
                    _ => break,
                }
            }
            if lim.pos > aug_data + aug_len {
                return None;
            }
            lim.pos = aug_data + aug_len;
        }
        let instructions = lim.pos..limit;
        // intern_new_cie's pass: the encodings and flags.
        let mut fde_encoding = pe::ABSPTR;
        let mut signal_frame = false;
        let mut p = Reader::new(&self.data[..limit.min(self.data.len())], aug_data, self.little_endian);
        for &c in ap {
            match c {
                b'S' => signal_frame = true,
                b'L' => {
                    if sized {
                        p.u8()?;
                    }
                }
                b'R' => {
                    if sized {
                        fde_encoding = p.u8()?;
                    }
                }
                b'P' => {
                    if sized {
                        let enc = p.u8()?;
                        p.pos += encoded_size(enc, self.bases.elf64, Some(&p));
                    }
                }
                _ if sized => {}
                _ => break,
            }
        }
        if fde_encoding & 0x0f == pe::ABSPTR {
            fde_encoding |= if self.bases.elf64 { pe::UDATA8 } else { pe::UDATA4 };
        }
        Some(Cie { code_align, data_align, ra_reg, fde_encoding, sized_augmentation: sized, signal_frame, instructions })
    }

    /// `__libdw_find_cie`.
    fn cie_at(&self, off: u64) -> Option<Cie> {
        match self.entry_at(usize::try_from(off).ok()?) {
            Entry::Cie { cie, .. } => Some(cie),
            _ => None,
        }
    }

    /// `intern_fde`: `Err(true)` when libdw stops looking (bad data),
    /// `Err(false)` when it skips the FDE.
    fn fde(&self, cie_pointer: u64, body: Range<usize>) -> Result<Fde, bool> {
        let cie = self.cie_at(cie_pointer).ok_or(false)?;
        let mut r = self.reader(body.start);
        let start = read_encoded(&mut r, cie.fde_encoding, &self.bases).ok_or(true)?;
        let range = read_encoded(&mut r, cie.fde_encoding & 0x0f, &self.bases).ok_or(true)?;
        let end = start.wrapping_add(range);
        if start >= end {
            return Err(false);
        }
        let mut instr = r.pos;
        if cie.sized_augmentation {
            if instr >= body.end {
                return Err(true);
            }
            let mut lim = Reader::new(&self.data[..body.end], instr, self.little_endian);
            let len = lim.uleb();
            if ((body.end - lim.pos.min(body.end)) as u64) < len {
                return Err(true);
            }
            instr = lim.pos + len as usize;
        }
        // pc_begin/pc_range may run past the entry (they are read with the
        // section's bounds): then there are no instructions.
        Ok(Fde { start, end, cie, instructions: instr.min(body.end)..body.end })
    }

    // --- FDE lookup ----------------------------------------------------------

    /// `__libdw_find_fde`.
    pub(crate) fn find_fde(&self, addr: u64) -> Option<Fde> {
        if let Some(t) = &self.search {
            let off = self.binary_search(t, addr)?;
            let Entry::Fde { cie_pointer, body, .. } = self.entry_at(usize::try_from(off).ok()?) else {
                return None;
            };
            let fde = self.fde(cie_pointer, body).ok()?;
            return (addr >= fde.start && addr < fde.end).then_some(fde);
        }
        let index = self.index.get_or_init(|| self.build_index());
        let i = index.partition_point(|&(s, _, _)| s <= addr);
        let &(s, e, off) = index.get(i.checked_sub(1)?)?;
        if !(s <= addr && addr < e) {
            return None;
        }
        match self.entry_at(off) {
            Entry::Fde { cie_pointer, body, .. } => self.fde(cie_pointer, body).ok(),
            _ => None,
        }
    }

    /// `binary_search_fde`: the FDE offset the table gives for `addr`.
    fn binary_search(&self, t: &SearchTable, addr: u64) -> Option<u64> {
        let size = 2 * encoded_size(t.encoding, self.bases.elf64, None);
        if size == 0 {
            return None;
        }
        let table = t.hdr.get(t.start..)?;
        let bases = Bases { vaddr: t.vaddr, textrel: 0, datarel: t.vaddr, elf64: self.bases.elf64 };
        let (mut l, mut u) = (0usize, t.entries);
        while l < u {
            let idx = (l + u) / 2;
            let mut p = Reader::new(table, idx.checked_mul(size)?, self.little_endian);
            let start = read_encoded(&mut p, t.encoding, &bases)?;
            if addr < start {
                u = idx;
                continue;
            }
            l = idx + 1;
            let fde = read_encoded(&mut p, t.encoding, &bases)?;
            if l < t.entries {
                let end = read_encoded(&mut p, t.encoding, &bases)?;
                if addr >= end {
                    continue;
                }
            }
            return Some(fde.wrapping_sub(self.bases.vaddr));
        }
        None
    }

    /// All FDEs in section order, as libdw's scan interns them: an FDE
    /// whose range holds the start of one seen before is dropped (libdw
    /// keeps the first one it cached for a range). Sorted by start.
    fn build_index(&self) -> Vec<(u64, u64, usize)> {
        let mut kept: Vec<(u64, u64, usize)> = Vec::new();
        let mut starts = std::collections::BTreeSet::new();
        let mut off = 0usize;
        loop {
            match self.entry_at(off) {
                Entry::End | Entry::Invalid { next: None } => break,
                // libdw skips an entry it cannot read once it knows its length.
                Entry::Invalid { next: Some(next) } | Entry::Cie { next, .. } => off = next,
                Entry::Fde { cie_pointer, body, next } => {
                    match self.fde(cie_pointer, body) {
                        Ok(f) => {
                            if starts.range(f.start..f.end).next().is_none() {
                                starts.insert(f.start);
                                kept.push((f.start, f.end, off));
                            }
                        }
                        Err(true) => break,
                        Err(false) => {}
                    }
                    off = next;
                }
            }
        }
        kept.sort_unstable_by_key(|&(s, _, _)| s);
        kept
    }

    // --- running CFI programs --------------------------------------------------

    /// The state every FDE of `cie` starts from: the ABI's rules, then the
    /// CIE's initial instructions (`cie_cache_initial_state`).
    fn cie_initial_state(&self, arch: Arch, cie: &Cie) -> Result<State, CfiError> {
        let n = arch.frame_nregs();
        let mut state = State {
            cfa: CfaRule::Undefined,
            regs: (0..n)
                .map(|r| match arch.abi_rule(r) {
                    AbiRule::Unspecified => RegRule::Unspecified,
                    AbiRule::SameValue => RegRule::SameValue,
                    AbiRule::IsCfa => RegRule::ValOffset(0),
                })
                .collect(),
        };
        let mut loc = 0;
        self.execute(arch, cie, &mut state, cie.instructions.clone(), None, &mut loc, u64::MAX)
            .map_err(|_| CfiError::InvalidCie)?;
        Ok(state)
    }

    /// `execute_cfi`: runs `program` until it advances past `find_pc`.
    /// `initial` is the CIE's state (`None` while running the CIE itself,
    /// where `DW_CFA_restore` and advancing are errors).
    #[allow(clippy::too_many_arguments)]
    fn execute(
        &self,
        arch: Arch,
        cie: &Cie,
        state: &mut State,
        program: Range<usize>,
        initial: Option<&State>,
        loc: &mut u64,
        find_pc: u64,
    ) -> Result<(), CfiError> {
        let bad = CfiError::InvalidProgram;
        let end = program.end.min(self.data.len());
        let mut r = Reader::new(&self.data[..end], program.start, self.little_endian);
        let mut remembered: Vec<State> = Vec::new();
        let daf = cie.data_align;
        let n = state.regs.len();
        let set = |state: &mut State, reg: u64, rule: RegRule| -> Result<(), CfiError> {
            if reg >= MAX_CFI_REG {
                return Err(CfiError::InvalidProgram);
            }
            if (reg as usize) < n {
                state.regs[reg as usize] = rule;
            }
            Ok(())
        };
        while !r.at_end() {
            let opcode = r.u8().ok_or(bad)?;
            let operand = (opcode & 0x3f) as u64;
            let advance = match opcode {
                0x02 => {
                    // DW_CFA_advance_loc1
                    Some(r.u8().ok_or(bad)? as u64)
                }
                0x40..=0x7f => Some(operand),
                0x03 => Some(r.uint(2).ok_or(bad)?),
                0x04 => Some(r.uint(4).ok_or(bad)?),
                0x1d => Some(r.uint(8).ok_or(bad)?), // DW_CFA_MIPS_advance_loc8
                0x01 => {
                    // DW_CFA_set_loc: an absolute address, not an advance.
                    let mut full = Reader::new(&self.data, r.pos, self.little_endian);
                    *loc = read_encoded(&mut full, cie.fde_encoding, &self.bases).ok_or(bad)?;
                    r.pos = full.pos.min(end);
                    None
                }
                _ => {
                    self.rule_op(arch, opcode, &mut r, state, &mut remembered, initial, daf, &set)?;
                    continue;
                }
            };
            if let Some(delta) = advance {
                *loc = loc.wrapping_add(delta.wrapping_mul(cie.code_align));
            }
            // A row ends here.
            if initial.is_none() {
                return Err(bad);
            }
            if find_pc < *loc {
                break;
            }
        }
        Ok(())
    }

    /// The instructions that change the current row.
    #[allow(clippy::too_many_arguments)]
    fn rule_op(
        &self,
        arch: Arch,
        opcode: u8,
        r: &mut Reader<'_>,
        state: &mut State,
        remembered: &mut Vec<State>,
        initial: Option<&State>,
        daf: u64,
        set: &dyn Fn(&mut State, u64, RegRule) -> Result<(), CfiError>,
    ) -> Result<(), CfiError> {
        let bad = CfiError::InvalidProgram;
        let need = |r: &Reader<'_>| if r.at_end() { Err(bad) } else { Ok(()) };
        let operand = (opcode & 0x3f) as u64;
        match opcode {
            0x0c | 0x12 => {
                // DW_CFA_def_cfa, DW_CFA_def_cfa_sf
                let reg = r.uleb();
                need(r)?;
                let offset = if opcode == 0x0c { r.uleb() } else { r.sleb().wrapping_mul(daf) };
                state.cfa = CfaRule::Offset { reg, offset };
            }
            0x0d => {
                // DW_CFA_def_cfa_register
                let reg = r.uleb();
                state.cfa = match state.cfa {
                    CfaRule::Offset { offset, .. } => CfaRule::Offset { reg, offset },
                    _ => CfaRule::Invalid,
                };
            }
            0x0e | 0x13 => {
                // DW_CFA_def_cfa_offset, DW_CFA_def_cfa_offset_sf
                let offset = if opcode == 0x0e { r.uleb() } else { r.sleb().wrapping_mul(daf) };
                state.cfa = match state.cfa {
                    CfaRule::Offset { reg, .. } => CfaRule::Offset { reg, offset },
                    _ => CfaRule::Invalid,
                };
            }
            0x0f => {
                // DW_CFA_def_cfa_expression
                let len = r.uleb();
                if len > r.remaining() as u64 {
                    return Err(bad);
                }
                state.cfa = CfaRule::Expr { pos: r.pos, len: len as usize };
                r.pos += len as usize;
            }
            0x07 => set(state, r.uleb(), RegRule::Undefined)?,
            0x08 => set(state, r.uleb(), RegRule::SameValue)?,
            0x05 | 0x80..=0xbf => {
                // DW_CFA_offset_extended, DW_CFA_offset
                let reg = if opcode == 0x05 {
                    let reg = r.uleb();
                    need(r)?;
                    reg
                } else {
                    operand
                };
                let off = r.uleb().wrapping_mul(daf);
                set(state, reg, RegRule::Offset(rule_value(off)))?;
            }
            0x11 | 0x2f => {
                // DW_CFA_offset_extended_sf, DW_CFA_GNU_negative_offset_extended
                let reg = r.uleb();
                need(r)?;
                let sf = if opcode == 0x11 { r.sleb() } else { r.uleb().wrapping_neg() };
                set(state, reg, RegRule::Offset(rule_value(sf.wrapping_mul(daf))))?;
            }
            0x14 | 0x15 => {
                // DW_CFA_val_offset, DW_CFA_val_offset_sf
                let reg = r.uleb();
                need(r)?;
                let off = if opcode == 0x14 { r.uleb() } else { r.sleb() };
                set(state, reg, RegRule::ValOffset(rule_value(off.wrapping_mul(daf))))?;
            }
            0x09 => {
                // DW_CFA_register
                let reg = r.uleb();
                need(r)?;
                let other = r.uleb();
                set(state, reg, RegRule::Register(rule_value(other)))?;
            }
            0x10 | 0x16 => {
                // DW_CFA_expression, DW_CFA_val_expression
                let reg = r.uleb();
                let pos = r.pos;
                need(r)?;
                let len = r.uleb();
                if len > r.remaining() as u64 {
                    return Err(bad);
                }
                r.pos += len as usize;
                let rule = if opcode == 0x10 { RegRule::Expression(pos) } else { RegRule::ValExpression(pos) };
                set(state, reg, rule)?;
            }
            0x06 | 0xc0..=0xff => {
                // DW_CFA_restore_extended, DW_CFA_restore
                let reg = if opcode == 0x06 { r.uleb() } else { operand };
                let Some(init) = initial else { return Err(bad) };
                if reg >= MAX_CFI_REG {
                    return Err(bad);
                }
                if let Some(rule) = init.regs.get(reg as usize) {
                    state.regs[reg as usize] = *rule;
                }
            }
            0x0a => {
                // DW_CFA_remember_state
                if remembered.len() >= MAX_REMEMBERED {
                    return Err(bad);
                }
                remembered.push(state.clone());
            }
            0x0b => {
                // DW_CFA_restore_state
                *state = remembered.pop().ok_or(bad)?;
            }
            0x00 => {}
            0x2d => {
                // DW_CFA_GNU_window_save: on every architecture but aarch64,
                // libdw applies SPARC's register-window shorthand.
                let _ = arch;
                let address_size = if self.bases.elf64 { 8 } else { 4 };
                for reg in 8..16u64 {
                    set(state, reg, RegRule::Register(reg + 16))?;
                }
                for reg in 16..32u64 {
                    set(state, reg, RegRule::Offset((reg - 16) * address_size))?;
                }
            }
            0x2e => {
                // DW_CFA_GNU_args_size
                r.uleb();
            }
            _ => return Err(bad),
        }
        Ok(())
    }
}

/// One entry as `dwarf_next_cfi` returns it.
enum Entry {
    /// End of the section, or a zero-length terminator.
    End,
    /// `next`: where the following entry starts, if the length was read.
    Invalid { next: Option<usize> },
    Cie { cie: Cie, next: usize },
    Fde { cie_pointer: u64, body: Range<usize>, next: usize },
}

/// A parsed `.eh_frame_hdr`.
struct Hdr {
    eh_frame_ptr: u64,
    /// (table start, entries, encoding) when the table is usable.
    table: Option<(usize, usize, u8)>,
}

/// `parse_eh_frame_hdr` plus the size check of its callers; `None` where
/// libdw rejects the object's `.eh_frame` altogether.
fn parse_hdr(hdr: &[u8], vaddr: u64, elf64: bool, little_endian: bool) -> Option<Hdr> {
    if hdr.len() < 4 || hdr[0] != 1 {
        return None;
    }
    let (ptr_enc, count_enc, table_enc) = (hdr[1], hdr[2], hdr[3]);
    if ptr_enc == pe::OMIT {
        return None;
    }
    let bases = Bases { vaddr, textrel: 0, datarel: vaddr, elf64 };
    let mut r = Reader::new(hdr, 4, little_endian);
    let eh_frame_ptr = read_encoded(&mut r, ptr_enc, &bases)?;
    let mut table = None;
    if count_enc != pe::OMIT {
        let count = read_encoded(&mut r, count_enc, &bases)?;
        if count != 0 && table_enc != pe::OMIT && (table_enc & !pe::SIGNED) != pe::ULEB128 {
            let size = encoded_size(table_enc, elf64, None);
            let room = hdr.len() - r.pos.min(hdr.len());
            if size == 0 || count > ((room / size) / 2) as u64 {
                return None;
            }
            table = Some((r.pos, count as usize, table_enc));
        }
    }
    Some(Hdr { eh_frame_ptr, table })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Arc;

    pub(crate) fn bytes(v: Vec<u8>) -> SectionBytes {
        SectionBytes::Owned(Arc::new(v))
    }

    /// Appends a CFI entry: its length, then `body` padded to 8 bytes
    /// (with `DW_CFA_nop`s).
    pub(crate) fn entry(out: &mut Vec<u8>, mut body: Vec<u8>) {
        while !(body.len() + 4).is_multiple_of(8) {
            body.push(0);
        }
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
    }

    /// Builds `.eh_frame` contents: CIEs and FDEs appended in order.
    #[derive(Default)]
    pub(crate) struct EhBuilder {
        pub data: Vec<u8>,
        /// Address of the section.
        pub addr: u64,
        /// (pc_begin, entry offset) of each FDE.
        pub fdes: Vec<(u64, usize)>,
    }

    impl EhBuilder {
        pub(crate) fn new(addr: u64) -> EhBuilder {
            EhBuilder { addr, ..Default::default() }
        }

        /// A CIE with augmentation "zR" (or "zRS" for a signal frame),
        /// FDE encoding pcrel|sdata4, code align 1, data align -8, RA 16.
        pub(crate) fn cie(&mut self, signal: bool, instructions: &[u8]) -> usize {
            let off = self.data.len();
            let mut body = vec![0, 0, 0, 0, 1];
            body.extend_from_slice(if signal { b"zRS\0" } else { b"zR\0" });
            body.extend_from_slice(&[1, 0x78, 16, 1, pe::PCREL | pe::SDATA4]);
            body.extend_from_slice(instructions);
            entry(&mut self.data, body);
            off
        }

        /// An FDE for [start, start+len) with `instructions`.
        pub(crate) fn fde(&mut self, cie: usize, start: u64, len: u32, instructions: &[u8]) -> usize {
            let off = self.data.len();
            let mut body = Vec::new();
            let ptr_pos = off + 4;
            body.extend_from_slice(&((ptr_pos - cie) as u32).to_le_bytes());
            let pc_field = self.addr + (off + 8) as u64;
            body.extend_from_slice(&((start.wrapping_sub(pc_field)) as i32).to_le_bytes());
            body.extend_from_slice(&len.to_le_bytes());
            body.push(0); // augmentation data length
            body.extend_from_slice(instructions);
            entry(&mut self.data, body);
            self.fdes.push((start, off));
            off
        }

        /// `.eh_frame_hdr` for the FDEs so far, placed at `hdr_addr`.
        pub(crate) fn hdr(&self, hdr_addr: u64) -> Vec<u8> {
            let mut h = vec![1, pe::PCREL | pe::SDATA4, pe::UDATA4, pe::DATAREL | pe::SDATA4];
            let ptr = self.addr.wrapping_sub(hdr_addr + 4) as i32;
            h.extend_from_slice(&ptr.to_le_bytes());
            h.extend_from_slice(&(self.fdes.len() as u32).to_le_bytes());
            let mut sorted = self.fdes.clone();
            sorted.sort();
            for (start, off) in sorted {
                h.extend_from_slice(&(start.wrapping_sub(hdr_addr) as i32).to_le_bytes());
                h.extend_from_slice(&((self.addr + off as u64).wrapping_sub(hdr_addr) as i32).to_le_bytes());
            }
            h
        }

        pub(crate) fn table(&self, with_hdr: bool) -> CfiTable {
            let hdr_addr = self.addr + 0x10_0000;
            let hdr = with_hdr.then(|| (bytes(self.hdr(hdr_addr)), hdr_addr));
            CfiTable::eh_frame(bytes(self.data.clone()), self.addr, hdr, true, true).expect("table")
        }
    }

    /// gcc's usual CIE program: CFA = rsp+8, rip at CFA-8.
    pub(crate) const CIE_X86_FULL: [u8; 5] = [0x0c, 0x07, 0x08, 0x90, 0x01];

    fn row(t: &CfiTable, addr: u64) -> Result<Row, CfiError> {
        t.row(Arch::X86_64, addr)
    }

    #[test]
    fn rows_of_a_typical_function() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(false, &CIE_X86_FULL);
        // push rbx at +1: CFA=rsp+16, rbx at CFA-16; at +5 back to rsp+8.
        b.fde(cie, 0x1000, 0x20, &[0x41, 0x0e, 0x10, 0x83, 0x02, 0x44, 0x0e, 0x08]);
        for with_hdr in [false, true] {
            let t = b.table(with_hdr);
            let r0 = row(&t, 0x1000).unwrap();
            assert_eq!(r0.cfa, CfaRule::Offset { reg: 7, offset: 8 });
            assert_eq!(r0.regs[16], RegRule::Offset((-8i64) as u64));
            assert_eq!(r0.regs[3], RegRule::Unspecified);
            // The ABI rules show through where nothing else was said.
            assert_eq!(r0.regs[6], RegRule::SameValue);
            assert_eq!(r0.regs[0], RegRule::SameValue);
            assert_eq!(r0.regs[7], RegRule::ValOffset(0));
            assert_eq!(r0.ra_reg, 16);
            assert!(!r0.signal_frame);
            let r1 = row(&t, 0x1003).unwrap();
            assert_eq!(r1.cfa, CfaRule::Offset { reg: 7, offset: 16 });
            assert_eq!(r1.regs[3], RegRule::Offset((-16i64) as u64));
            let r2 = row(&t, 0x1005).unwrap();
            assert_eq!(r2.cfa, CfaRule::Offset { reg: 7, offset: 8 });
            assert_eq!(row(&t, 0x101f).unwrap().cfa, CfaRule::Offset { reg: 7, offset: 8 });
            assert_eq!(row(&t, 0x1020).unwrap_err(), CfiError::NoFde);
            assert_eq!(row(&t, 0xfff).unwrap_err(), CfiError::NoFde);
        }
    }

    #[test]
    fn lookup_with_and_without_the_hdr_table() {
        let mut b = EhBuilder::new(0x5000);
        let cie = b.cie(false, &CIE_X86_FULL);
        // Out of address order in the section; a gap at 0x1100..0x1200.
        b.fde(cie, 0x1200, 0x100, &[]);
        b.fde(cie, 0x1000, 0x100, &[]);
        b.fde(cie, 0x1300, 0x10, &[]);
        for with_hdr in [false, true] {
            let t = b.table(with_hdr);
            assert_eq!(t.find_fde(0x1000).map(|f| f.start), Some(0x1000));
            assert_eq!(t.find_fde(0x10ff).map(|f| f.start), Some(0x1000));
            assert_eq!(t.find_fde(0x1100).map(|f| f.start), None);
            assert_eq!(t.find_fde(0x1250).map(|f| f.start), Some(0x1200));
            assert_eq!(t.find_fde(0x130f).map(|f| f.start), Some(0x1300));
            assert_eq!(t.find_fde(0x1310).map(|f| f.start), None);
            assert_eq!(t.find_fde(0).map(|f| f.start), None);
            assert_eq!(t.find_fde(u64::MAX).map(|f| f.start), None);
        }
    }

    #[test]
    fn overlapping_fdes_first_one_wins_in_a_scan() {
        let mut b = EhBuilder::new(0x5000);
        let cie = b.cie(false, &CIE_X86_FULL);
        b.fde(cie, 0x1000, 0x100, &[0x0e, 0x20]);
        b.fde(cie, 0x1000, 0x200, &[0x0e, 0x30]);
        let t = b.table(false);
        assert_eq!(row(&t, 0x1010).unwrap().cfa, CfaRule::Offset { reg: 7, offset: 0x20 });
        assert!(t.find_fde(0x1150).is_none());
    }

    #[test]
    fn explicit_undefined_differs_from_unmentioned() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(false, &CIE_X86_FULL);
        // _start-like: DW_CFA_undefined rip.
        b.fde(cie, 0x1000, 0x10, &[0x07, 0x10]);
        // DW_CFA_restore rbp after saving it: back to the ABI's same-value.
        b.fde(cie, 0x2000, 0x10, &[0x86, 0x02, 0x41, 0xc6]);
        let t = b.table(true);
        assert_eq!(row(&t, 0x1000).unwrap().regs[16], RegRule::Undefined);
        assert_eq!(row(&t, 0x2000).unwrap().regs[6], RegRule::Offset((-16i64) as u64));
        assert_eq!(row(&t, 0x2001).unwrap().regs[6], RegRule::SameValue);
    }

    #[test]
    fn cfa_rules_and_their_invalid_forms() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(false, &CIE_X86_FULL);
        // def_cfa_expression (breg7 8), then def_cfa_register: invalid.
        b.fde(cie, 0x1000, 0x10, &[0x0f, 0x02, 0x77, 0x08, 0x41, 0x0d, 0x06]);
        // def_cfa_register after a def_cfa: only the register changes.
        b.fde(cie, 0x2000, 0x10, &[0x0d, 0x06]);
        // def_cfa_sf with data align -8: offset -16 (wrapping).
        b.fde(cie, 0x3000, 0x10, &[0x12, 0x06, 0x02]);
        let t = b.table(true);
        let r = row(&t, 0x1000).unwrap();
        let CfaRule::Expr { pos, len } = r.cfa else { panic!("{:?}", r.cfa) };
        assert_eq!(t.block(pos, len), Some(&[0x77u8, 0x08][..]));
        assert_eq!(row(&t, 0x1001).unwrap().cfa, CfaRule::Invalid);
        assert_eq!(row(&t, 0x2000).unwrap().cfa, CfaRule::Offset { reg: 6, offset: 8 });
        assert_eq!(row(&t, 0x3000).unwrap().cfa, CfaRule::Offset { reg: 6, offset: (-16i64) as u64 });
    }

    #[test]
    fn remember_restore_and_the_end_of_the_program() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(false, &CIE_X86_FULL);
        // +1: cfa 16, remember; +2: cfa 32; +3: restore -> 16.
        b.fde(cie, 0x1000, 0x10, &[0x41, 0x0e, 0x10, 0x0a, 0x41, 0x0e, 0x20, 0x41, 0x0b]);
        // restore_state with nothing remembered: the program is invalid.
        b.fde(cie, 0x2000, 0x10, &[0x0b]);
        let t = b.table(true);
        assert_eq!(row(&t, 0x1001).unwrap().cfa, CfaRule::Offset { reg: 7, offset: 16 });
        assert_eq!(row(&t, 0x1002).unwrap().cfa, CfaRule::Offset { reg: 7, offset: 32 });
        assert_eq!(row(&t, 0x1003).unwrap().cfa, CfaRule::Offset { reg: 7, offset: 16 });
        assert_eq!(row(&t, 0x2000).unwrap_err(), CfiError::InvalidProgram);
    }

    #[test]
    fn errors_in_programs_and_cies() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(false, &CIE_X86_FULL);
        // Unknown opcode 0x3c before the row: invalid; after it: not reached.
        b.fde(cie, 0x1000, 0x10, &[0x3c]);
        b.fde(cie, 0x2000, 0x10, &[0x41, 0x3c]);
        // A register number libdw refuses.
        b.fde(cie, 0x3000, 0x10, &[0x08, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        // An operand missing at the end: UINT64_MAX, a register too big
        // (7 bytes of program leave no padding after the opcode).
        b.fde(cie, 0x4000, 0x10, &[0, 0, 0, 0, 0, 0, 0x08]);
        // A register beyond the frame: fine, just not kept.
        b.fde(cie, 0x5000, 0x10, &[0x08, 0x40]);
        // A CIE that advances the location: every FDE using it fails.
        let bad_cie = b.cie(false, &[0x0c, 0x07, 0x08, 0x41]);
        b.fde(bad_cie, 0x6000, 0x10, &[]);
        // A CIE that uses DW_CFA_restore.
        let bad_cie2 = b.cie(false, &[0x0c, 0x07, 0x08, 0xc6]);
        b.fde(bad_cie2, 0x7000, 0x10, &[]);
        let t = b.table(true);
        assert_eq!(row(&t, 0x1000).unwrap_err(), CfiError::InvalidProgram);
        assert!(row(&t, 0x2000).is_ok());
        assert_eq!(row(&t, 0x2001).unwrap_err(), CfiError::InvalidProgram);
        assert_eq!(row(&t, 0x3000).unwrap_err(), CfiError::InvalidProgram);
        assert_eq!(row(&t, 0x4000).unwrap_err(), CfiError::InvalidProgram);
        assert!(row(&t, 0x5000).is_ok());
        assert_eq!(row(&t, 0x6000).unwrap_err(), CfiError::InvalidCie);
        assert_eq!(row(&t, 0x7000).unwrap_err(), CfiError::InvalidCie);
    }

    #[test]
    fn window_save_is_sparc_shorthand_and_signal_flag_comes_from_the_cie() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(true, &CIE_X86_FULL);
        b.fde(cie, 0x1000, 0x10, &[0x2d]);
        let t = b.table(false);
        let r = row(&t, 0x1000).unwrap();
        assert!(r.signal_frame);
        assert_eq!(r.regs[8], RegRule::Register(24));
        assert_eq!(r.regs[16], RegRule::Offset(0));
    }

    #[test]
    fn rule_values_are_61_bit() {
        assert_eq!(rule_value(8), 8);
        assert_eq!(rule_value((-8i64) as u64), (-8i64) as u64);
        assert_eq!(rule_value(1 << 60), (-(1i64 << 60)) as u64);
        assert_eq!(rule_value(u64::MAX), u64::MAX);
    }

    #[test]
    fn hostile_tables_do_not_panic() {
        // Random bytes as .eh_frame, with and without a random header.
        let mut rng = crate::testing::rng(0x9e37_79b9);
        for round in 0..300 {
            let n = 1 + rng(200) as usize;
            let mut data: Vec<u8> = (0..n).map(|_| rng(256) as u8).collect();
            if round % 3 == 0 && data.len() > 8 {
                // A plausible length so that parsing goes deeper.
                let l = (data.len() - 4) as u32;
                data[..4].copy_from_slice(&l.to_le_bytes());
                data[4..8].copy_from_slice(&[0, 0, 0, 0]);
            }
            let hdr: Vec<u8> = (0..(4 + rng(40) as usize)).map(|_| rng(256) as u8).collect();
            for t in [
                CfiTable::eh_frame(bytes(data.clone()), 0x1000, None, true, true),
                CfiTable::eh_frame(bytes(data.clone()), 0x1000, Some((bytes(hdr.clone()), 0x800)), true, true),
                Some(CfiTable::debug_frame(bytes(data.clone()), true, false)),
            ]
            .into_iter()
            .flatten()
            {
                for a in [0, 0x1000, 0x1010, rng(1 << 20), u64::MAX] {
                    let _ = t.row(Arch::X86_64, a);
                }
            }
        }
    }

    #[test]
    fn a_huge_remember_state_chain_is_refused() {
        let mut b = EhBuilder::new(0x2000);
        let cie = b.cie(false, &CIE_X86_FULL);
        let prog = vec![0x0a; MAX_REMEMBERED + 10];
        b.fde(cie, 0x1000, 0x10, &prog);
        assert_eq!(row(&b.table(true), 0x1000).unwrap_err(), CfiError::InvalidProgram);
    }
}

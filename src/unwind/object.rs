//! What the unwinder needs to know about one mapped file (a DSO): its
//! load layout and its CFI, as libdw reads them for a `Dwfl_Module`.
//!
//! - **Layout** (`__libdwfl_elf_address_range`): the first `PT_LOAD`'s
//!   `p_vaddr & -p_align` and `p_vaddr + p_memsz` (libdw's "address
//!   sync"), and the end of the last `PT_LOAD`. With the base perf reports
//!   (map start − pgoff) they give the module's address range and bias.
//! - **`.eh_frame`** of the file itself (`dwarf_getcfi_elf`): by section
//!   headers first (`.eh_frame`, with `.eh_frame_hdr`'s search table when
//!   it points at that `.eh_frame`); only for a file without a usable
//!   `.eh_frame` section through `PT_GNU_EH_FRAME`.
//! - **`.debug_frame`** of the module's DWARF file (`dwarf_getcfi`): the
//!   file itself if it has `.debug_info`, `.debug_line` or `.debug_frame`,
//!   else the separate debug file perf gives libdw (its `symsrc_filename`,
//!   the file the symbols were loaded from), if that one has them.
//!
//! libdw falls back from `.eh_frame` to `.debug_frame` per address (when
//! `.eh_frame` has no FDE for it, or its program is invalid), so both are
//! kept.

use super::cfi::CfiTable;
use crate::symbols::elf::{Elf, Phdr, SHT_NOBITS, Section, SectionBytes};

const PT_LOAD: u32 = 1;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const ET_EXEC: u16 = 2;
const ET_CORE: u16 = 4;

/// The unwind view of one object file. Immutable once built: share it
/// between samples (and processes) behind an `Rc`.
#[derive(Debug)]
pub(crate) struct Object {
    /// Given by whoever builds the objects, unique among them (the CFI
    /// rows cached for the object are keyed by it).
    id: u64,
    e_type: u16,
    /// `p_vaddr & -p_align` of the first `PT_LOAD`.
    first_vaddr: u64,
    /// `p_vaddr + p_memsz` of the first `PT_LOAD`.
    address_sync: u64,
    /// `p_vaddr + p_memsz` of the last `PT_LOAD` that ends above 0.
    load_end: u64,
    pub(crate) eh: Option<CfiTable>,
    /// `.debug_frame`, with its file's address sync.
    pub(crate) debug: Option<(CfiTable, u64)>,
}

/// The parts an [`Object`] is made of (for tests that build CFI by hand).
#[cfg(test)]
pub(crate) struct ObjectParts {
    pub e_type: u16,
    pub elf64: bool,
    pub little_endian: bool,
    pub segments: Vec<Phdr>,
    /// `.eh_frame`'s bytes and address.
    pub eh_frame: Option<(SectionBytes, u64)>,
    /// `.eh_frame_hdr`'s bytes and address.
    pub eh_frame_hdr: Option<(SectionBytes, u64)>,
    /// `.debug_frame`'s bytes and the address sync of the file it is from.
    pub debug_frame: Option<(SectionBytes, u64)>,
}

impl Object {
    /// Builds an object from parts; `None` when libdw could not report it
    /// as a module (no `PT_LOAD` ending above address 0).
    #[cfg(test)]
    pub(crate) fn from_parts(id: u64, p: ObjectParts) -> Option<Object> {
        let layout = Layout::of(&p.segments)?;
        let eh = match p.eh_frame {
            Some((data, addr)) => CfiTable::eh_frame(data, addr, p.eh_frame_hdr, p.elf64, p.little_endian),
            None => None,
        };
        let debug = p.debug_frame.map(|(d, sync)| (CfiTable::debug_frame(d, p.elf64, p.little_endian), sync));
        Some(Object::new(id, p.e_type, layout, eh, debug))
    }

    /// The object of `main`, the file perf reports to libdw (the DSO at
    /// its symfs path). `debug`: the separate file perf loaded the DSO's
    /// symbols from, when it is not `main` itself (libdw reads
    /// `.debug_frame` there if `main` has no DWARF of its own). `None`
    /// when libdw could not report `main` as a module.
    pub(crate) fn from_elf(id: u64, main: &Elf, debug: Option<&Elf>) -> Option<Object> {
        let layout = Layout::of(&main.phdrs)?;
        let eh = eh_frame_of(main);
        let dwarf_file = if has_dwarf(main) { Some(main) } else { debug.filter(|d| has_dwarf(d)) };
        let debug = dwarf_file.and_then(|f| {
            let (_, s) = section(f, ".debug_frame")?;
            let data = f.section_bytes(s)?;
            let sync = Layout::of(&f.phdrs).map_or(0, |l| l.address_sync);
            Some((CfiTable::debug_frame(data, f.is_64, f.little_endian), sync))
        });
        Some(Object::new(id, main.e_type, layout, eh, debug))
    }

    fn new(id: u64, e_type: u16, layout: Layout, eh: Option<CfiTable>, debug: Option<(CfiTable, u64)>) -> Object {
        Object {
            id,
            e_type,
            first_vaddr: layout.first_vaddr,
            address_sync: layout.address_sync,
            load_end: layout.load_end,
            eh,
            debug,
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether the object has any CFI at all.
    pub(crate) fn has_cfi(&self) -> bool {
        self.eh.is_some() || self.debug.is_some()
    }

    /// Whether libdw needs the file's DWARF from elsewhere: it has no
    /// `.debug_info`, `.debug_line` or `.debug_frame` of its own.
    pub(crate) fn needs_debug_file(main: &Elf) -> bool {
        !has_dwarf(main)
    }

    /// The module range and bias libdw gives this object reported at
    /// `base` (`__libdwfl_elf_address_range` with `add_p_vaddr` false):
    /// `(start, end, bias)`. Executables ignore the base.
    pub(crate) fn module_range(&self, base: u64) -> Option<(u64, u64, u64)> {
        let (start, bias) = match self.e_type {
            ET_EXEC | ET_CORE => (self.first_vaddr, 0),
            _ => (base, base.wrapping_sub(self.first_vaddr)),
        };
        let end = bias.wrapping_add(self.load_end);
        (end != 0).then_some((start, end, bias))
    }

    /// The bias of `.debug_frame` addresses for a module with main bias
    /// `bias` (`dwfl_adjusted_dwarf_addr`).
    pub(crate) fn debug_bias(&self, bias: u64) -> Option<u64> {
        let (_, sync) = self.debug.as_ref()?;
        Some(bias.wrapping_add(self.address_sync).wrapping_sub(*sync))
    }
}

/// The load layout facts libdw takes from the program headers.
struct Layout {
    first_vaddr: u64,
    address_sync: u64,
    load_end: u64,
}

impl Layout {
    fn of(segments: &[Phdr]) -> Option<Layout> {
        let first = segments.iter().find(|s| s.p_type == PT_LOAD);
        let (first_vaddr, address_sync) = first.map_or((0, 0), |s| {
            (s.p_vaddr & s.p_align.wrapping_neg(), s.p_vaddr.wrapping_add(s.p_memsz))
        });
        let load_end = segments
            .iter()
            .rev()
            .find(|s| s.p_type == PT_LOAD && s.p_vaddr.wrapping_add(s.p_memsz) > 0)
            .map_or(0, |s| s.p_vaddr.wrapping_add(s.p_memsz));
        (load_end != 0).then_some(Layout { first_vaddr, address_sync, load_end })
    }
}

/// The first section of this name that has file data (libdw skips
/// `SHT_NOBITS` ones, as in a separate debug file).
fn section<'a>(elf: &'a Elf, name: &str) -> Option<(usize, &'a Section)> {
    if !elf.names_ok {
        return None;
    }
    elf.sections.iter().enumerate().skip(1).find(|(_, s)| s.name == name.as_bytes() && s.sh_type != SHT_NOBITS)
}

/// libdw (`dwarf_begin_elf`) accepts a file as DWARF if it has one of
/// these.
fn has_dwarf(elf: &Elf) -> bool {
    [".debug_info", ".debug_line", ".debug_frame"].iter().any(|n| section(elf, n).is_some())
}

/// `dwarf_getcfi_elf`.
fn eh_frame_of(elf: &Elf) -> Option<CfiTable> {
    if let Some((_, eh)) = section(elf, ".eh_frame") {
        let data = elf.section_bytes(eh)?;
        let hdr = section(elf, ".eh_frame_hdr").and_then(|(_, h)| Some((elf.section_bytes(h)?, h.sh_addr)));
        return CfiTable::eh_frame(data, eh.sh_addr, hdr, elf.is_64, elf.little_endian);
    }
    // Without section headers: `.eh_frame` from where the header points
    // to the end of the file.
    let seg = elf.phdrs.iter().find(|s| s.p_type == PT_GNU_EH_FRAME)?;
    let file = elf.file_bytes();
    let start = usize::try_from(seg.p_offset).ok()?;
    let end = start.checked_add(usize::try_from(seg.p_filesz).ok()?)?;
    let hdr = match &file {
        SectionBytes::Mapped(f, s, e) if end <= e - s => SectionBytes::Mapped(f.clone(), s + start, s + end),
        _ => return None,
    };
    CfiTable::eh_frame_from_segment(&file, hdr, seg.p_offset, seg.p_vaddr, elf.is_64, elf.little_endian)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(p_vaddr: u64, p_memsz: u64, p_align: u64) -> Phdr {
        Phdr { p_type: PT_LOAD, p_offset: p_vaddr, p_vaddr, p_filesz: p_memsz, p_memsz, p_align }
    }

    fn obj(e_type: u16, segments: Vec<Phdr>) -> Option<Object> {
        Object::from_parts(1, ObjectParts {
            e_type,
            elf64: true,
            little_endian: true,
            segments,
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
        })
    }

    #[test]
    fn shared_object_range_and_bias_follow_the_base() {
        let o = obj(3, vec![seg(0, 0x1000, 0x1000), seg(0x1000, 0x5000, 0x1000), seg(0x7000, 0x100, 0x1000)]).unwrap();
        assert_eq!(o.module_range(0x7f00_0000_0000), Some((0x7f00_0000_0000, 0x7f00_0000_7100, 0x7f00_0000_0000)));
        // rust-lld's layout: text at p_vaddr 0x11b00 from file offset
        // 0x10b00; perf's base (map start - pgoff) is then 0x1000 too high,
        // and so is libdw's bias: lookups land 0x1000 below the code.
        let o = obj(3, vec![seg(0, 0x10b00, 0x1000), seg(0x11b00, 0x40620, 0x1000)]).unwrap();
        let real = 0x5500_0000_0000u64;
        let map_start = real + 0x11000;
        let base = map_start - 0x10000;
        let (start, _, bias) = o.module_range(base).unwrap();
        assert_eq!((start, bias), (real + 0x1000, real + 0x1000));
    }

    #[test]
    fn executable_ignores_the_base() {
        let o = obj(2, vec![seg(0x400000, 0x1000, 0x1000), seg(0x401000, 0x2000, 0x1000)]).unwrap();
        assert_eq!(o.module_range(0x1234), Some((0x400000, 0x403000, 0)));
        // p_align 0: libdw masks with -0 = 0.
        let o = obj(2, vec![seg(0x400123, 0x1000, 0)]).unwrap();
        assert_eq!(o.module_range(0).map(|r| r.0), Some(0));
    }

    #[test]
    fn no_load_segment_no_module() {
        assert!(obj(3, vec![]).is_none());
        assert!(obj(3, vec![Phdr { p_type: 6, ..seg(0, 0x100, 8) }]).is_none());
        // A segment ending at 0 does not count either.
        assert!(obj(3, vec![seg(0, 0, 0x1000)]).is_none());
    }

    #[test]
    fn real_libc_from_the_fixture_symfs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs");
        let libc = Elf::open(&dir.join("usr/lib/x86_64-linux-gnu/libc.so.6")).expect("libc in symfs");
        let o = Object::from_elf(1, &libc, None).expect("libc object");
        let eh = o.eh.as_ref().expect("libc has .eh_frame");
        // __write (0xf8340): CFA rsp+8 at entry, rsp+48 after the sub.
        let row = eh.row(super::super::regs::Arch::X86_64, 0xf8340).unwrap();
        assert_eq!(row.cfa, super::super::cfi::CfaRule::Offset { reg: 7, offset: 8 });
        let row = eh.row(super::super::regs::Arch::X86_64, 0xf838f).unwrap();
        assert_eq!(row.cfa, super::super::cfi::CfaRule::Offset { reg: 7, offset: 48 });
        assert!(o.debug.is_none(), "libc.so.6 has no DWARF and no debug file was given");
        // dwarfwork keeps .debug_frame in the binary itself.
        let dw = Elf::open(&dir.join("tmp/pstitch-fixtures/bin/dwarfwork")).expect("dwarfwork in symfs");
        let o = Object::from_elf(2, &dw, None).unwrap();
        assert!(o.eh.is_some() && o.debug.is_some());
        assert_eq!(o.debug_bias(0x1000), Some(0x1000));
    }
}

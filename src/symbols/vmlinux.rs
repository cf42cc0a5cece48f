//! Kernel symbols from a vmlinux (`-k/--vmlinux FILE`), as perf 7.2 loads
//! them (`dso__load_kernel_sym` → `dso__load_vmlinux` → `symsrc__init`,
//! `dso__load_sym`).
//!
//! Which file: `--kallsyms` wins over `-k` (perf looks at it first); a
//! relative `-k` path is joined to the symfs (while perf's check that the
//! file exists, before anything is read, takes it as given: the CLI does
//! that). The name given becomes the kernel DSO's long name, which
//! `--show-kernel-path` prints.
//!
//! When perf refuses the file (no symbols at all, then): it is not an ELF
//! file; the recording has a build-id for the kernel and the file has none
//! or another one; it has no `.symtab` (a stripped vmlinux). perf says
//! nothing of it (debug messages only) and prints `[unknown]` for kernel
//! frames; the kernel map stays as the recording had it.
//!
//! What perf takes from the file:
//!
//! ```text
//!   symbols: functions, objects, labels in text/data sections (as for
//!            any ELF file), minus absolute ones and those in sections
//!            that take no memory (no SHF_ALLOC)
//!   value:   st_value - (sh_addr - sh_offset)   (a file offset: vmlinux
//!            is ET_EXEC, so perf "adjusts" its symbols)
//!   map:     the first symbol in .text moves the kernel map to
//!            [.text sh_addr + reloc, + sh_size), translating to file
//!            offsets from .text's sh_offset
//!   reloc:   the recording's reference symbol address (the kernel MMAP's
//!            pgoff, `_text`) minus that symbol's value in the file: KASLR
//! ```
//!
//! Symbols of other sections (`.init.text`, ...) go to maps of their own
//! in perf (`[kernel.kallsyms].init.text`); pstitch does not make those
//! maps, so addresses there print as outside any map (see COMPATIBILITY).
//! Names are demangled only with `--demangle-kernel`, as perf's
//! `want_demangle` for the kernel.

use std::path::Path;

use super::elf::{self, Elf};
use super::load::{self, KernelText, Loaded, Search};
use super::symtab::Sym;

/// perf's `elf__needs_adjust_symbols`: linked images (an x86 vmlinux is
/// ET_EXEC, an arm64 one ET_DYN) and relocatable objects.
fn needs_adjust_symbols(e_type: u16) -> bool {
    const ET_REL: u16 = 1;
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    matches!(e_type, ET_REL | ET_EXEC | ET_DYN)
}

/// The kernel's symbols from the vmlinux at `path` (already joined to the
/// symfs). `build_id`: the recording's build-id for the kernel;
/// `ref_reloc`: its relocation reference symbol and that symbol's address
/// at run time. `None` when perf's `symsrc__init` refuses the file (not
/// ELF, build-id missing or different): the DSO keeps its name then. An
/// accepted file without `.symtab` gives no symbols.
pub fn load(path: &Path, build_id: Option<&[u8]>, ref_reloc: Option<(&str, u64)>, demangle: bool) -> Option<Loaded> {
    let elf = elf::is_regular_file(path).then(|| Elf::open(path)).flatten()?;
    if let Some(bid) = build_id
        && !elf.build_id().is_some_and(|file_bid| load::build_id_equal(bid, &file_bid))
    {
        return None;
    }
    let mut loaded = Loaded::default();
    let table = |name: &str, typ: u32| elf.section_by_name(name).filter(|(_, s)| s.sh_type == typ).map(|(i, _)| i);
    // A stripped vmlinux gives nothing: perf does not fall back for -k.
    let Some(symtab) = table(".symtab", elf::SHT_SYMTAB) else { return Some(loaded) };
    let search = Search { symfs: None, flat: false, buildid_dir: None, demangle };
    let mut reloc = Reloc { name: ref_reloc, unrelocated: 0 };
    for idx in [Some(symtab), table(".dynsym", elf::SHT_DYNSYM)].into_iter().flatten() {
        if read_table(&mut loaded, &elf, idx, &mut reloc, &search).is_err() {
            loaded.failed_midway = true;
            break;
        }
    }
    elf.release_pages();
    Some(loaded)
}

/// perf's `kmap->ref_reloc_sym`: found in the file once.
struct Reloc<'a> {
    name: Option<(&'a str, u64)>,
    /// The symbol's value in the file (0: not found yet).
    unrelocated: u64,
}

impl Reloc<'_> {
    /// perf's `ref_reloc`: how far the kernel was moved at boot.
    fn offset(&self) -> u64 {
        match self.name {
            Some((_, addr)) if self.unrelocated != 0 => addr.wrapping_sub(self.unrelocated),
            _ => 0,
        }
    }
}

/// perf's `dso__load_sym_internal` for the kernel, one table: the kernel
/// DSO's symbols (those in `.text`) inserted, the map moved. `Err` where
/// perf stops midway (a symbol in a section that does not exist).
fn read_table(loaded: &mut Loaded, elf: &Elf, sec_idx: usize, reloc: &mut Reloc<'_>, search: &Search<'_>) -> Result<(), ()> {
    let Some(sec) = elf.sections.get(sec_idx) else { return Ok(()) };
    if elf.raw_data(sec).is_none() || elf.sections.get(sec.sh_link as usize).is_none() || !elf.names_ok {
        return Ok(());
    }
    if reloc.unrelocated == 0
        && let Some((name, _)) = reloc.name
        && let Some(s) = elf.symbol_iter(sec_idx).find(|s| s.name() == name.as_bytes())
    {
        reloc.unrelocated = s.st_value;
    }
    let adjust = needs_adjust_symbols(elf.e_type) || reloc.offset() != 0;
    loaded.adjust_symbols = adjust;
    let strtab = elf.linked_strtab(sec_idx).and_then(|t| loaded.syms.use_strtab(t));
    let mut new = Vec::new();
    let mut nr = 0usize;
    let mut result = Ok(());
    for sym in elf.symbol_iter(sec_idx) {
        let Some(is_label) = load::kept_symbol(&sym) else { continue };
        let Some(shdr) = elf.sections.get(sym.st_shndx as usize) else {
            result = Err(());
            break;
        };
        if shdr.sh_flags & elf::SHF_ALLOC == 0 || (is_label && !load::label_section(shdr)) {
            continue;
        }
        let mut value = sym.st_value;
        if adjust {
            value = value.wrapping_sub(shdr.sh_addr.wrapping_sub(shdr.sh_offset));
        }
        nr += 1;
        if shdr.name != b".text" {
            continue; // perf's section maps: not made here (module doc)
        }
        if loaded.kernel_text.is_none() {
            let start = shdr.sh_addr.wrapping_add(reloc.offset());
            loaded.kernel_text = Some(KernelText { start, end: start.wrapping_add(shdr.sh_size), pgoff: shdr.sh_offset });
        }
        new.push(match strtab {
            Some(t) => Sym::in_strtab(value, sym.st_size, sym.bind(), sym.typ(), (t, sym.st_name), search.demangle),
            None => load::named_sym(value, sym.st_size, sym.bind(), sym.typ(), sym.name(), false, search),
        });
    }
    loaded.syms.insert_all(new);
    if result.is_ok() && nr > 0 {
        loaded.syms.fixup_end(false);
        loaded.syms.fixup_duplicate();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_images_have_their_symbols_adjusted() {
        assert!(needs_adjust_symbols(2));
        assert!(needs_adjust_symbols(3));
        assert!(!needs_adjust_symbols(4));
    }

    #[test]
    fn the_reference_symbol_gives_the_boot_relocation() {
        let mut r = Reloc { name: Some(("_text", 0xffffffff9a000000)), unrelocated: 0 };
        assert_eq!(r.offset(), 0, "not found in the file yet");
        r.unrelocated = 0xffffffff81000000;
        assert_eq!(r.offset(), 0x19000000);
        assert_eq!(Reloc { name: None, unrelocated: 5 }.offset(), 0);
    }

    #[test]
    fn files_perf_refuses_give_no_symbols() {
        let dir = std::env::temp_dir().join(format!("pstitch-vmlinux-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("not-elf");
        std::fs::write(&text, b"not an ELF file\n").unwrap();
        assert!(load(&text, None, None, false).is_none());
        assert!(load(&dir.join("missing"), None, None, false).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! The parts of BFD that `addr2line` uses besides DWARF: the allocated
//! sections (to find the one holding an address) and the symbol table, for
//! `_bfd_elf_find_function` (the function symbol and `STT_FILE` name for an
//! address when DWARF does not name one).

use std::collections::HashMap;
use std::sync::Arc;

use crate::symbols::elf::{self, Elf, SectionBytes};

#[derive(Debug, Clone, Copy)]
pub struct Section {
    pub index: usize,
    pub vma: u64,
    pub size: u64,
    pub code: bool,
}

/// A function-like symbol: its name is found only when a lookup returns
/// it (a large library has a hundred thousand).
#[derive(Debug, Clone, Copy)]
struct Cand {
    code_off: u64,
    size: u64,
    /// `st_name` in the symbol table's string table.
    name: u32,
    /// Index into [`BfdFile::files`] plus one (0: none).
    file: u32,
}

/// What `_bfd_elf_find_function` returns.
#[derive(Debug, Clone)]
pub struct FoundFn {
    pub name: Arc<str>,
    /// Absolute symbol value.
    pub value: u64,
    pub file: Option<Arc<str>>,
}

pub struct BfdFile {
    pub elf: Elf,
    pub sections: Vec<Section>,
    /// Function-like symbols per section index, by section offset
    /// (symbol table order among equal offsets).
    cands: HashMap<usize, Vec<Cand>>,
    /// The string table of the symbols.
    strtab: SectionBytes,
    /// `STT_FILE` names.
    files: Vec<Arc<str>>,
    /// The symbol binutils picks at an exact (section index, offset) of a
    /// non-code section: the first global one, else the last one (name,
    /// is a function).
    exact: HashMap<(usize, u64), (Arc<str>, bool, bool)>,
}

/// A symbol found at an exact address of a non-code section.
#[derive(Debug, Clone)]
pub struct ExactSym {
    pub name: Arc<str>,
    pub function: bool,
}

impl BfdFile {
    pub fn new(elf: Elf) -> BfdFile {
        let mut sections = Vec::new();
        for (i, s) in elf.sections.iter().enumerate().skip(1) {
            if s.sh_flags & elf::SHF_ALLOC != 0 {
                sections.push(Section { index: i, vma: s.sh_addr, size: s.sh_size, code: s.sh_flags & elf::SHF_EXECINSTR != 0 });
            }
        }
        // BFD's canonical symbol table: .symtab, else .dynsym.
        let symtab = elf.section_by_name(".symtab").filter(|(_, s)| s.sh_type == elf::SHT_SYMTAB).map(|(i, _)| i);
        let dynsym = elf.section_by_name(".dynsym").filter(|(_, s)| s.sh_type == elf::SHT_DYNSYM).map(|(i, _)| i);
        let mut table = symtab;
        let mut syms = symtab.map(|i| elf.symbols(i)).unwrap_or_default();
        if syms.len() <= 1 {
            table = dynsym;
            syms = dynsym.map(|i| elf.symbols(i)).unwrap_or_default();
        }
        let strtab = table.and_then(|i| elf.linked_strtab(i)).unwrap_or_else(SectionBytes::empty);
        let mut files: Vec<Arc<str>> = Vec::new();
        let relative = elf.e_type != elf::ET_REL;
        #[derive(PartialEq)]
        enum State {
            Nothing,
            Seen,
            FileAfter,
        }
        let mut state = State::Nothing;
        let mut file: u32 = 0;
        let mut cands: HashMap<usize, Vec<Cand>> = HashMap::new();
        let mut exact: HashMap<(usize, u64), (Arc<str>, bool, bool)> = HashMap::new();
        for s in syms.iter().skip(1) {
            let typ = s.typ();
            if typ == elf::STT_FILE {
                files.push(String::from_utf8_lossy(s.name()).into());
                file = files.len() as u32;
                if state == State::Seen {
                    state = State::FileAfter;
                }
                continue;
            }
            if state == State::Nothing {
                state = State::Seen;
            }
            let shndx = s.st_shndx as usize;
            if s.st_shndx == 0 || s.st_shndx >= 0xff00 {
                continue;
            }
            let Some(sec) = elf.sections.get(shndx) else { continue };
            let value = if relative { s.st_value.wrapping_sub(sec.sh_addr) } else { s.st_value };
            if typ != elf::STT_SECTION && sec.sh_flags & elf::SHF_EXECINSTR == 0 {
                let global = s.bind() == elf::STB_GLOBAL;
                let function = typ == elf::STT_FUNC || typ == elf::STT_GNU_IFUNC;
                let e = exact.entry((shndx, value));
                match e {
                    std::collections::hash_map::Entry::Occupied(mut o) => {
                        // Keep going after local symbols, stop at a global.
                        if !o.get().2 {
                            o.insert((String::from_utf8_lossy(s.name()).into(), function, global));
                        }
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert((String::from_utf8_lossy(s.name()).into(), function, global));
                    }
                }
            }
            if matches!(typ, elf::STT_SECTION | elf::STT_OBJECT | elf::STT_TLS | 5) {
                continue;
            }
            let size = s.st_size;
            if size == 0 && s.bind() == elf::STB_LOCAL && typ == elf::STT_NOTYPE && s.visibility() == elf::STV_HIDDEN {
                continue;
            }
            let f = if file != 0 && (s.bind() == elf::STB_LOCAL || state != State::FileAfter) { file } else { 0 };
            cands.entry(shndx).or_default().push(Cand { code_off: value, size: if size != 0 { size } else { 1 }, name: s.st_name, file: f });
        }
        for v in cands.values_mut() {
            v.sort_by_key(|c| c.code_off);
        }
        for v in cands.values_mut() {
            v.shrink_to_fit();
        }
        BfdFile { elf, sections, cands, strtab, files, exact }
    }

    /// `_bfd_elf_find_function` for `offset` in the section `sec`.
    pub fn find_function(&self, sec: &Section, offset: u64) -> Option<FoundFn> {
        let v = self.cands.get(&sec.index)?;
        let end = v.partition_point(|c| c.code_off <= offset);
        if end == 0 {
            return None;
        }
        let off = v[end - 1].code_off;
        let start = v[..end].partition_point(|c| c.code_off < off);
        let mut best = &v[start];
        for c in &v[start + 1..end] {
            let take = if best.code_off.saturating_add(best.size) <= offset {
                c.size > best.size
            } else if c.code_off.saturating_add(c.size) > offset {
                c.size < best.size
            } else {
                false
            };
            if take {
                best = c;
            }
        }
        Some(FoundFn {
            name: String::from_utf8_lossy(elf::cstr_at(&self.strtab, best.name as usize)).into(),
            value: best.code_off.wrapping_add(sec.vma),
            file: best.file.checked_sub(1).map(|i| self.files[i as usize].clone()),
        })
    }

    /// The symbol at exactly `offset` of `sec` (binutils then looks the
    /// address up as a symbol, for non-code sections).
    pub fn symbol_at(&self, sec: &Section, offset: u64) -> Option<ExactSym> {
        self.exact.get(&(sec.index, offset)).map(|(n, f, _)| ExactSym { name: n.clone(), function: *f })
    }
}

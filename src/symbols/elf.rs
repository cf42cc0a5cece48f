//! A small, forgiving ELF reader: section and program headers, symbol
//! tables, relocations, notes and (possibly `SHF_COMPRESSED`) section data.
//!
//! Headers are parsed with the `object` crate's raw structures and copied
//! into plain `u64` fields so that 32- and 64-bit files look the same to the
//! rest of the symbolizer. Anything malformed yields `None` or an empty
//! table, never a panic: a file pstitch cannot read simply has no symbols.

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader as _, SectionHeader as _};
use object::{Endianness, FileKind};

pub const SHT_SYMTAB: u32 = 2;
pub const SHT_RELA: u32 = 4;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_REL: u32 = 9;
pub const SHT_DYNSYM: u32 = 11;
pub const SHF_ALLOC: u64 = 2;
pub const SHF_EXECINSTR: u64 = 4;
pub const SHN_UNDEF: u16 = 0;
pub const SHN_ABS: u16 = 0xfff1;
pub const STT_NOTYPE: u8 = 0;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;
pub const STT_FILE: u8 = 4;
pub const STT_TLS: u8 = 6;
pub const STT_GNU_IFUNC: u8 = 10;
pub const STB_LOCAL: u8 = 0;
pub const STB_GLOBAL: u8 = 1;
pub const STB_WEAK: u8 = 2;
pub const STV_INTERNAL: u8 = 1;
pub const STV_HIDDEN: u8 = 2;
pub const PT_LOAD: u32 = 1;
pub const ET_REL: u16 = 1;
pub const EM_386: u16 = 3;
pub const EM_X86_64: u16 = 62;
pub const R_X86_64_IRELATIVE: u32 = 37;

/// The bytes of a file: a read-only memory map, or a copy when mapping
/// fails (the same type the perf.data reader uses).
pub use perf_data::FileBytes;

/// A section's bytes that outlive the [`Elf`] they came from.
#[derive(Clone)]
pub enum SectionBytes {
    /// `start..end` of the file.
    Mapped(Arc<FileBytes>, usize, usize),
    /// Decompressed (kept as the vector it was inflated into: a copy into
    /// an `Arc<[u8]>` would move megabytes into fresh pages).
    Owned(Arc<Vec<u8>>),
}

impl SectionBytes {
    /// See [`FileBytes::release_pages`] (the whole file's pages).
    pub fn release_pages(&self) {
        if let SectionBytes::Mapped(file, _, _) = self {
            file.release_pages();
        }
    }

    /// Both lie in the same mapped file.
    pub fn same_file(&self, other: &SectionBytes) -> bool {
        matches!((self, other), (SectionBytes::Mapped(a, ..), SectionBytes::Mapped(b, ..)) if Arc::ptr_eq(a, b))
    }

    pub fn empty() -> SectionBytes {
        SectionBytes::Owned(Arc::new(Vec::new()))
    }
}

impl std::fmt::Debug for SectionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SectionBytes({} bytes)", self.len())
    }
}

impl Default for SectionBytes {
    fn default() -> SectionBytes {
        SectionBytes::empty()
    }
}

impl std::ops::Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            SectionBytes::Mapped(file, start, end) => &file[*start..*end],
            SectionBytes::Owned(b) => b,
        }
    }
}

/// Opens `path` for reading if it is a regular file (following symbolic
/// links), `None` otherwise.
///
/// The open itself must not wait: opening a FIFO for reading blocks until
/// a writer comes, and a device may do anything. So the file is opened
/// with `O_NONBLOCK` (which changes nothing for a regular file's reads)
/// and its type checked on the open descriptor, not on the name (which
/// could be swapped in between). perf skips a candidate that is not a
/// regular file (`is_regular_file` in `dso__load`); so does pstitch, here
/// for every object file it opens.
pub fn open_regular(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// Maps `path` read-only; `None` if it is not a readable regular file.
pub fn map_file(path: &Path) -> Option<Arc<FileBytes>> {
    map_opened(&open_regular(path)?)
}

/// Maps an opened regular file read-only (a copy if mapping fails).
pub fn map_opened(file: &File) -> Option<Arc<FileBytes>> {
    let meta = file.metadata().ok()?;
    if meta.len() == 0 {
        return Some(Arc::new(FileBytes::Owned(Vec::new())));
    }
    match crate::engine::mapping::Mapping::map(file) {
        Ok(m) => Some(Arc::new(FileBytes::Shared(Arc::new(m)))),
        Err(_) => {
            let mut v = Vec::new();
            // From the start, wherever the file's offset is.
            std::io::Seek::seek(&mut &*file, std::io::SeekFrom::Start(0)).ok()?;
            std::io::Read::read_to_end(&mut &*file, &mut v).ok()?;
            Some(Arc::new(FileBytes::Owned(v)))
        }
    }
}

pub fn is_regular_file(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.is_file()).unwrap_or(false)
}

#[derive(Debug, Clone, Default)]
pub struct Section {
    pub name: Vec<u8>,
    pub sh_type: u32,
    pub sh_flags: u64,
    pub sh_addr: u64,
    pub sh_offset: u64,
    pub sh_size: u64,
    pub sh_link: u32,
    pub sh_addralign: u64,
    pub sh_entsize: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Phdr {
    pub p_type: u32,
    pub p_offset: u64,
    pub p_vaddr: u64,
    pub p_filesz: u64,
    pub p_memsz: u64,
    pub p_align: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct Sym<'a> {
    /// The linked string table (the name is found only when asked for:
    /// most symbols of a large library are never named).
    pub strtab: &'a [u8],
    pub st_name: u32,
    pub st_value: u64,
    pub st_size: u64,
    pub st_info: u8,
    pub st_other: u8,
    pub st_shndx: u16,
}

impl<'a> Sym<'a> {
    pub fn name(&self) -> &'a [u8] {
        cstr_at(self.strtab, self.st_name as usize)
    }
    pub fn typ(&self) -> u8 {
        self.st_info & 0xf
    }
    pub fn bind(&self) -> u8 {
        self.st_info >> 4
    }
    pub fn visibility(&self) -> u8 {
        self.st_other & 3
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Reloc {
    pub r_offset: u64,
    pub r_sym: u32,
    pub r_type: u32,
    pub r_addend: i64,
}

/// A parsed ELF file.
#[derive(Clone)]
pub struct Elf {
    bytes: Arc<FileBytes>,
    pub is_64: bool,
    pub little_endian: bool,
    pub e_type: u16,
    pub e_machine: u16,
    /// All section headers, index 0 included; empty if the table is
    /// missing or unreadable.
    pub sections: Vec<Section>,
    /// False when the section name table could not be read (perf then
    /// finds no section by name).
    pub names_ok: bool,
    pub phdrs: Vec<Phdr>,
}

/// A compressed section's header: `ch_type` (`ELFCOMPRESS_*`) and the
/// size it claims the section inflates to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    pub ch_type: u32,
    pub claim: u64,
}

/// `sh_flags`: the section's data is compressed (a header, then zlib or
/// zstd).
const SHF_COMPRESSED: u64 = 0x800;
/// `ch_type` of a compressed section's header.
const ELFCOMPRESS_ZLIB: u32 = 1;
const ELFCOMPRESS_ZSTD: u32 = 2;
/// No section inflates to more than this many times the size of the file
/// holding it (binutils' limit where it checks one).
const MAX_INFLATION: u64 = 10;

impl Elf {
    /// Parses the headers; `None` if this is not an ELF file at all.
    pub fn parse(bytes: Arc<FileBytes>) -> Option<Elf> {
        match FileKind::parse(&bytes[..]).ok()? {
            FileKind::Elf32 => Self::parse_as::<elf::FileHeader32<Endianness>>(bytes, false),
            FileKind::Elf64 => Self::parse_as::<elf::FileHeader64<Endianness>>(bytes, true),
            _ => None,
        }
    }

    pub fn open(path: &Path) -> Option<Elf> {
        Elf::parse(map_file(path)?)
    }

    fn parse_as<H: FileHeader<Endian = Endianness>>(bytes: Arc<FileBytes>, is_64: bool) -> Option<Elf> {
        let data: &[u8] = &bytes;
        let hdr = H::parse(data).ok()?;
        let endian = hdr.endian().ok()?;
        let mut sections = Vec::new();
        let mut names_ok = false;
        if let Ok(table) = hdr.sections(endian, data) {
            names_ok = !table.is_empty();
            for s in table.iter() {
                let name = match table.section_name(endian, s) {
                    Ok(n) => n.to_vec(),
                    Err(_) => {
                        names_ok = false;
                        Vec::new()
                    }
                };
                sections.push(Section {
                    name,
                    sh_type: s.sh_type(endian).0,
                    sh_flags: s.sh_flags(endian).0,
                    sh_addr: s.sh_addr(endian).into(),
                    sh_offset: s.sh_offset(endian).into(),
                    sh_size: s.sh_size(endian).into(),
                    sh_link: s.sh_link(endian),
                    sh_addralign: s.sh_addralign(endian).into(),
                    sh_entsize: s.sh_entsize(endian).into(),
                });
            }
        }
        let mut phdrs = Vec::new();
        if let Ok(ph) = hdr.program_headers(endian, data) {
            for p in ph {
                phdrs.push(Phdr {
                    p_type: p.p_type(endian).0,
                    p_offset: p.p_offset(endian).into(),
                    p_vaddr: p.p_vaddr(endian).into(),
                    p_filesz: p.p_filesz(endian).into(),
                    p_memsz: p.p_memsz(endian).into(),
                    p_align: p.p_align(endian).into(),
                });
            }
        }
        let e_type = hdr.e_type(endian).0;
        let e_machine = hdr.e_machine(endian).0;
        Some(Elf { little_endian: endian == Endianness::Little, bytes, is_64, e_type, e_machine, sections, names_ok, phdrs })
    }

    /// perf's `elf_section_by_name`: the first section (from index 1) with
    /// this name.
    pub fn section_by_name(&self, name: &str) -> Option<(usize, &Section)> {
        if !self.names_ok {
            return None;
        }
        self.sections.iter().enumerate().skip(1).find(|(_, s)| s.name == name.as_bytes())
    }

    /// The raw (possibly compressed) file bytes of a section; empty for
    /// NOBITS, `None` when out of bounds.
    pub fn raw_data(&self, s: &Section) -> Option<&[u8]> {
        if s.sh_type == SHT_NOBITS {
            return Some(&[]);
        }
        let start = usize::try_from(s.sh_offset).ok()?;
        let len = usize::try_from(s.sh_size).ok()?;
        self.bytes.get(start..start.checked_add(len)?)
    }

    /// [`Elf::data`] as a value that can be kept: a range of the mapped
    /// file (no copy) unless the section had to be decompressed.
    pub fn section_bytes(&self, s: &Section) -> Option<SectionBytes> {
        match self.data(s)? {
            Cow::Borrowed(b) => Some(self.keep(b)),
            Cow::Owned(v) => Some(SectionBytes::Owned(Arc::new(v))),
        }
    }

    /// The whole file, as a value that can be kept.
    pub fn file_bytes(&self) -> SectionBytes {
        self.keep(&self.bytes)
    }

    /// `b`, a part of this file's bytes, as a value that can be kept.
    fn keep(&self, b: &[u8]) -> SectionBytes {
        let start = b.as_ptr() as usize - self.bytes.as_ptr() as usize;
        SectionBytes::Mapped(self.bytes.clone(), start, start + b.len())
    }

    /// The contents of a section, decompressed if `SHF_COMPRESSED`, as
    /// binutils 2.47's addr2line reads them (`decompress_contents`, into a
    /// buffer of the size the compression header claims):
    ///
    /// - zlib must fill the claimed size exactly, else the section is not
    ///   read at all;
    /// - zstd is read if it fits in the claimed size; binutils leaves the
    ///   rest of its buffer as it was, here the section simply ends.
    ///
    /// The claim is not allocated: room grows with what really inflates
    /// (see [`inflate`]). And, as binutils does where it checks a size
    /// (`_bfd_section_size_insane`: "an arbitrary uncompressed size of 10x
    /// the file size"), nothing inflates to more than ten times the size
    /// of the file holding it: a section that would is not read.
    pub fn data(&self, s: &Section) -> Option<Cow<'_, [u8]>> {
        let raw = self.raw_data(s)?;
        let Some(c) = self.compression(s) else {
            return (s.sh_flags & SHF_COMPRESSED == 0).then_some(Cow::Borrowed(raw));
        };
        let body = raw.get(if self.is_64 { 24 } else { 12 }..)?;
        let out = match c.ch_type {
            ELFCOMPRESS_ZLIB if c.claim <= self.inflation_limit() => inflate::zlib(body, usize::try_from(c.claim).ok()?)?,
            ELFCOMPRESS_ZSTD => inflate::zstd(body, usize::try_from(c.claim.min(self.inflation_limit())).ok()?)?,
            _ => return None,
        };
        debug_assert!(self.inflated_len_ok(c, out.len() as u64));
        Some(Cow::Owned(out))
    }

    /// The compression header of an `SHF_COMPRESSED` section (`None`: not
    /// compressed, or no room for the header, which [`Elf::data`] does
    /// not read either).
    pub fn compression(&self, s: &Section) -> Option<Compression> {
        if s.sh_flags & SHF_COMPRESSED == 0 {
            return None;
        }
        let raw = self.raw_data(s)?;
        let (ch_type, claim) = if self.is_64 {
            (self.u32_at(raw, 0)?, self.u64_at(raw, 8)?)
        } else {
            (self.u32_at(raw, 0)?, self.u32_at(raw, 4)? as u64)
        };
        raw.get(if self.is_64 { 24 } else { 12 }..)?;
        Some(Compression { ch_type, claim })
    }

    /// `len` bytes can be what [`Elf::data`] inflates a section with
    /// header `c` to (zlib: the claim exactly; zstd: up to the claim and
    /// the limit; nothing for any other type).
    pub fn inflated_len_ok(&self, c: Compression, len: u64) -> bool {
        match c.ch_type {
            ELFCOMPRESS_ZLIB => len == c.claim && c.claim <= self.inflation_limit(),
            ELFCOMPRESS_ZSTD => len <= c.claim.min(self.inflation_limit()),
            _ => false,
        }
    }

    fn inflation_limit(&self) -> u64 {
        (self.bytes.len() as u64).saturating_mul(MAX_INFLATION)
    }

    pub fn u16_at(&self, d: &[u8], off: usize) -> Option<u16> {
        let b: [u8; 2] = d.get(off..off + 2)?.try_into().ok()?;
        Some(if self.little_endian { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    }
    pub fn u32_at(&self, d: &[u8], off: usize) -> Option<u32> {
        let b: [u8; 4] = d.get(off..off + 4)?.try_into().ok()?;
        Some(if self.little_endian { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    }
    pub fn u64_at(&self, d: &[u8], off: usize) -> Option<u64> {
        let b: [u8; 8] = d.get(off..off + 8)?.try_into().ok()?;
        Some(if self.little_endian { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) })
    }

    /// The symbols of a SYMTAB/DYNSYM section (index 0 included), with names
    /// from its linked string table. Empty if unreadable.
    pub fn symbols(&self, sec_idx: usize) -> Vec<Sym<'_>> {
        self.symbol_iter(sec_idx).collect()
    }

    /// The same, one at a time.
    pub fn symbol_iter(&self, sec_idx: usize) -> impl Iterator<Item = Sym<'_>> + '_ {
        let (data, strtab, n) = self.symbol_table(sec_idx).unwrap_or((&[], &[], 0));
        let entsize = if self.is_64 { 24 } else { 16 };
        data.chunks_exact(entsize).take(n).map(move |e| {
            let (st_name, st_info, st_other, st_shndx, st_value, st_size) = if self.is_64 {
                (
                    self.u32_at(e, 0).unwrap_or(0),
                    e[4],
                    e[5],
                    self.u16_at(e, 6).unwrap_or(0),
                    self.u64_at(e, 8).unwrap_or(0),
                    self.u64_at(e, 16).unwrap_or(0),
                )
            } else {
                (
                    self.u32_at(e, 0).unwrap_or(0),
                    e[12],
                    e[13],
                    self.u16_at(e, 14).unwrap_or(0),
                    self.u32_at(e, 4).unwrap_or(0) as u64,
                    self.u32_at(e, 8).unwrap_or(0) as u64,
                )
            };
            Sym { strtab, st_name, st_value, st_size, st_info, st_other, st_shndx }
        })
    }

    /// A symbol table's entries, its string table and its entry count.
    fn symbol_table(&self, sec_idx: usize) -> Option<(&[u8], &[u8], usize)> {
        let s = self.sections.get(sec_idx)?;
        let data = self.raw_data(s)?;
        let strtab = self.sections.get(s.sh_link as usize).and_then(|st| self.raw_data(st)).unwrap_or(&[]);
        let n = s.sh_size.checked_div(s.sh_entsize)?;
        Some((data, strtab, usize::try_from(n).unwrap_or(usize::MAX)))
    }

    /// See [`FileBytes::release_pages`].
    pub fn release_pages(&self) {
        self.bytes.release_pages();
    }

    /// `section` lies in this file as mapped (not a copy of it).
    pub fn holds(&self, section: &SectionBytes) -> bool {
        matches!(section, SectionBytes::Mapped(file, ..) if Arc::ptr_eq(file, &self.bytes))
    }

    /// The string table linked to section `sec_idx`, to keep.
    pub fn linked_strtab(&self, sec_idx: usize) -> Option<SectionBytes> {
        let s = self.sections.get(sec_idx)?;
        let b = self.raw_data(self.sections.get(s.sh_link as usize)?)?;
        Some(self.keep(b))
    }

    /// The entries of a REL/RELA section.
    pub fn relocations(&self, s: &Section) -> Vec<Reloc> {
        let mut out = Vec::new();
        let Some(data) = self.raw_data(s) else { return out };
        let is_rela = s.sh_type == SHT_RELA;
        let entsize = match (self.is_64, is_rela) {
            (true, true) => 24,
            (true, false) => 16,
            (false, true) => 12,
            (false, false) => 8,
        };
        let n = s.sh_size.checked_div(s.sh_entsize).unwrap_or(0) as usize;
        for i in 0..n {
            let off = i * entsize;
            if off + entsize > data.len() {
                break;
            }
            let r = if self.is_64 {
                let info = self.u64_at(data, off + 8).unwrap_or(0);
                Reloc {
                    r_offset: self.u64_at(data, off).unwrap_or(0),
                    r_sym: (info >> 32) as u32,
                    r_type: info as u32,
                    r_addend: if is_rela { self.u64_at(data, off + 16).unwrap_or(0) as i64 } else { 0 },
                }
            } else {
                let info = self.u32_at(data, off + 4).unwrap_or(0);
                Reloc {
                    r_offset: self.u32_at(data, off).unwrap_or(0) as u64,
                    r_sym: info >> 8,
                    r_type: info & 0xff,
                    r_addend: if is_rela { self.u32_at(data, off + 8).unwrap_or(0) as i32 as i64 } else { 0 },
                }
            };
            out.push(r);
        }
        out
    }

    /// perf's `elf_read_build_id`: the GNU build-id note of the first of
    /// `.note.gnu.build-id`, `.notes`, `.note` that exists.
    pub fn build_id(&self) -> Option<Vec<u8>> {
        let (_, sec) = self
            .section_by_name(".note.gnu.build-id")
            .or_else(|| self.section_by_name(".notes"))
            .or_else(|| self.section_by_name(".note"))?;
        let data = self.raw_data(sec)?;
        let mut off = 0usize;
        while off + 12 <= data.len() {
            let namesz = self.u32_at(data, off)? as usize;
            let descsz = self.u32_at(data, off + 4)? as usize;
            let ntype = self.u32_at(data, off + 8)?;
            let name_off = off + 12;
            let desc_off = name_off.checked_add(align4(namesz))?;
            if ntype == 3 && namesz == 4 && data.get(name_off..name_off + 4) == Some(b"GNU\0") {
                let n = align4(descsz).min(20);
                let mut id = data.get(desc_off..desc_off.checked_add(n)?)?.to_vec();
                id.truncate(n);
                return Some(id);
            }
            off = desc_off.checked_add(align4(descsz))?;
        }
        None
    }

    /// perf's `filename__read_debuglink`: the file name at the start of
    /// `.gnu_debuglink`.
    pub fn debuglink(&self) -> Option<Vec<u8>> {
        let (_, sec) = self.section_by_name(".gnu_debuglink")?;
        let data = self.raw_data(sec)?;
        Some(cstr_at(data, 0).to_vec())
    }

    /// perf's `elf_read_program_header`: the PT_LOAD segment containing
    /// `vaddr`.
    pub fn load_segment_for(&self, vaddr: u64) -> Option<&Phdr> {
        self.phdrs.iter().find(|p| {
            let sz = p.p_memsz.max(p.p_filesz);
            p.p_type == PT_LOAD && sz != 0 && vaddr >= p.p_vaddr && vaddr < p.p_vaddr.wrapping_add(sz)
        })
    }
}

/// Inflating a compressed section. The size its header claims bounds the
/// output but is not allocated up front: room grows (doubling) with what
/// the data really inflates to, so a header claiming gigabytes over a few
/// kilobytes of data costs kilobytes.
mod inflate {
    /// First room for the output: a few times the input (debug sections
    /// compress 3-5:1), at most the claim.
    fn first_room(input: usize, size: usize) -> usize {
        input.saturating_mul(4).max(4096).min(size)
    }

    /// A zlib stream (ELFCOMPRESS_ZLIB) that ends exactly at `size` bytes.
    pub fn zlib(body: &[u8], size: usize) -> Option<Vec<u8>> {
        // Few large calls: inflating into small pieces copies every piece's
        // tail into the sliding window.
        let mut out = Vec::new();
        let mut room = first_room(body.len(), size);
        let mut d = flate2::Decompress::new(true);
        loop {
            out.reserve_exact(room - out.len());
            let (in_before, out_before) = (d.total_in(), out.len());
            let rest = body.get(usize::try_from(in_before).ok()?..)?;
            let status = d.decompress_vec(rest, &mut out, flate2::FlushDecompress::Finish).ok()?;
            if status == flate2::Status::StreamEnd {
                return (out.len() == size).then_some(out);
            }
            if out.len() < room {
                // Room left but the stream stopped: the input ran out
                // (or nothing moved at all).
                if (d.total_in() == in_before && out.len() == out_before) || d.total_in() as usize >= body.len() {
                    return None;
                }
                continue;
            }
            if room == size {
                // Full to the claim and the stream goes on.
                return None;
            }
            room = room.saturating_mul(2).min(size);
        }
    }

    /// zstd frames (ELFCOMPRESS_ZSTD) that decode to at most `size` bytes.
    ///
    /// Decoded in one call into the output (as binutils does, so no window
    /// buffer of zstd's own); when the room is too small the call fails and
    /// is made again with twice the room, which at most doubles the work.
    pub fn zstd(body: &[u8], size: usize) -> Option<Vec<u8>> {
        let mut decoder = zstd::bulk::Decompressor::new().ok()?;
        let mut room = first_room(body.len(), size);
        loop {
            let mut out = Vec::with_capacity(room);
            match decoder.decompress_to_buffer(body, &mut out) {
                Ok(_) => return Some(out),
                // Too little room, or bad data: only more room tells.
                Err(_) if room < size => room = room.saturating_mul(2).min(size),
                Err(_) => return None,
            }
        }
    }
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The NUL-terminated string at `off` (empty if out of bounds).
pub fn cstr_at(d: &[u8], off: usize) -> &[u8] {
    let Some(rest) = d.get(off..) else { return &[] };
    // Names are short: a word-at-a-time search without an alignment
    // prologue (CStr's) is what pays.
    match perf_data::bytes::find_byte(rest, 0) {
        Some(n) => &rest[..n],
        None => rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(v: Vec<u8>) -> Arc<FileBytes> {
        Arc::new(FileBytes::Owned(v))
    }

    #[test]
    fn rejects_non_elf_and_truncated_headers() {
        assert!(Elf::parse(own(b"not an elf file at all".to_vec())).is_none());
        assert!(Elf::parse(own(Vec::new())).is_none());
        assert!(Elf::parse(own(b"\x7fELF\x02\x01\x01".to_vec())).is_none());
    }

    #[test]
    fn reads_own_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let elf = Elf::open(&exe).expect("test binary is ELF");
        assert!(elf.section_by_name(".text").is_some());
        // Truncations never panic, whatever they cut.
        let bytes = std::fs::read(&exe).unwrap();
        for cut in [16, 64, 100, 1000, bytes.len() / 3, bytes.len() - 1] {
            if let Some(e) = Elf::parse(own(bytes[..cut].to_vec())) {
                for (i, s) in e.sections.iter().enumerate() {
                    let _ = e.data(s);
                    let _ = e.symbols(i);
                    let _ = e.relocations(s);
                }
                let _ = e.build_id();
                let _ = e.debuglink();
            }
        }
    }

    /// The rustwork fixture (its debug sections are zlib-compressed).
    fn rustwork() -> (Vec<u8>, Elf) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/rustwork");
        let bytes = std::fs::read(path).expect("fixture");
        let elf = Elf::parse(own(bytes.clone())).expect("ELF");
        (bytes, elf)
    }

    /// A zlib-compressed section inflates to the size its header gives;
    /// the same section cut short, or with a header that claims another
    /// size, gives nothing.
    #[test]
    fn compressed_sections_inflate_whole_or_not_at_all() {
        let (bytes, elf) = rustwork();
        let (_, s) = elf.section_by_name(".debug_info").expect(".debug_info");
        assert_ne!(s.sh_flags & SHF_COMPRESSED, 0, "the fixture's debug sections are compressed");
        let raw = elf.raw_data(s).expect("raw");
        let size = u64::from_le_bytes(raw[8..16].try_into().unwrap()) as usize;
        let data = elf.data(s).expect("inflates");
        assert_eq!(data.len(), size);
        let c = elf.compression(s).expect("compressed");
        assert_eq!(c, Compression { ch_type: ELFCOMPRESS_ZLIB, claim: size as u64 });
        assert!(elf.inflated_len_ok(c, size as u64));
        assert!(!elf.inflated_len_ok(c, size as u64 - 1) && !elf.inflated_len_ok(c, size as u64 + 1));
        assert_eq!(elf.compression(elf.section_by_name(".symtab").expect(".symtab").1), None);
        // The unit header's length field covers the first unit.
        let unit = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
        assert!(unit + 4 <= size);
        let at = s.sh_offset as usize;
        let mut cut = bytes.clone();
        cut[at + raw.len() / 2..at + raw.len()].fill(0);
        let cut = Elf::parse(own(cut)).expect("ELF");
        assert!(cut.data(cut.section_by_name(".debug_info").unwrap().1).is_none());
        for claimed in [size - 1, size + 1, 2 * size, 3 << 30, 5 << 30] {
            let mut other = bytes.clone();
            other[at + 8..at + 16].copy_from_slice(&(claimed as u64).to_le_bytes());
            let other = Elf::parse(own(other)).expect("ELF");
            assert!(other.data(other.section_by_name(".debug_info").unwrap().1).is_none(), "{claimed}");
        }
    }

    /// The same section compressed with zstd (written over the zlib data
    /// in place): read whenever it fits in the claimed size, as binutils
    /// 2.47 reads it, up to ten times the file's size.
    #[test]
    fn zstd_sections_inflate_within_their_claim() {
        let (bytes, elf) = rustwork();
        let (idx, s) = elf.section_by_name(".debug_info").expect(".debug_info");
        let plain = elf.data(s).expect("inflates").into_owned();
        let packed = zstd::bulk::compress(&plain, 19).expect("zstd");
        assert!(24 + packed.len() <= s.sh_size as usize, "fits in place");
        let (at, shdr) = (s.sh_offset as usize, u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize + idx * 64);
        let with_claim = |claim: u64| {
            let mut v = bytes.clone();
            v[at..at + 4].copy_from_slice(&ELFCOMPRESS_ZSTD.to_le_bytes());
            v[at + 8..at + 16].copy_from_slice(&claim.to_le_bytes());
            v[at + 24..at + 24 + packed.len()].copy_from_slice(&packed);
            v[shdr + 32..shdr + 40].copy_from_slice(&(24 + packed.len() as u64).to_le_bytes());
            Elf::parse(own(v)).expect("ELF")
        };
        let size = plain.len() as u64;
        for claim in [size, size + 1, 2 * size, 3 << 30, 5 << 30] {
            let e = with_claim(claim);
            let data = e.data(e.section_by_name(".debug_info").unwrap().1);
            assert!(data.as_deref() == Some(&plain[..]), "claim {claim}");
            let c = e.compression(e.section_by_name(".debug_info").unwrap().1).expect("compressed");
            assert_eq!(c, Compression { ch_type: ELFCOMPRESS_ZSTD, claim });
            assert!(e.inflated_len_ok(c, size) && e.inflated_len_ok(c, size / 2));
            assert_eq!(e.inflated_len_ok(c, size + 1), claim > size);
        }
        let e = with_claim(size - 1);
        assert!(e.data(e.section_by_name(".debug_info").unwrap().1).is_none());
        // The bound (the claim, or ten times the file) is a hard one.
        assert!(inflate::zstd(&packed, plain.len() - 1).is_none());
        assert_eq!(inflate::zstd(&packed, plain.len()).as_deref(), Some(&plain[..]));
    }
}

//! Generators of the crafted inputs of tests/hostile.rs: small code that
//! writes each hostile file (an object file, a perf.data, a patch to a
//! fixture), so that no crafted blob is kept in the repository.

use pstitch::perf_data::attr::{flag, sample_type as st};
use pstitch::perf_data::bytes::Endian;
use pstitch::perf_data::record::kind;
use pstitch::perf_data::writer::{AttrEntry, FileWriter, Put, cpu_clock_attr, set_attr_flags};

const LE: Put = Put(Endian::Little);

fn pad8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
}

/// A section header: type, flags, address, offset, size, link, info,
/// alignment, entry size.
type Shdr = (u32, u64, u64, u64, u64, u32, u32, u64, u64);

/// Where the code of [`deep_inline_elf`] is, and the address sampled.
pub const TEXT: u64 = 0x1000;
pub const TEXT_SIZE: u64 = 0x1000;
pub const DEEP_PC: u64 = TEXT + 0x800;

/// A position-independent x86-64 executable with one function,
/// `deep_main` (all of `.text`), into which `levels` functions `level0` ...
/// are inlined, each into the one before: `level<i>` covers
/// `TEXT + 1 + i .. TEXT + TEXT_SIZE - 1 - i`, called from line `100 + i`
/// of deep.c. Every address is deep.c:1 in the line table. Written by
/// hand: ELF header, one PT_LOAD, `.text`, DWARF 4 `.debug_abbrev`,
/// `.debug_info` and `.debug_line`, `.symtab`.
///
/// (Not `f<i>`: perf 7.2 takes an inline record whose name has only `0`s
/// after its first two bytes, like `f10` or `f1000`, for addr2line's
/// `0x000...` end marker, and stops reading there.)
pub fn deep_inline_elf(levels: u32) -> Vec<u8> {
    assert!(u64::from(levels) < TEXT_SIZE / 2 - 2);
    assert_eq!(TEXT_SIZE, 0x1000, "the line program below advances by 0x1000");
    // Abbreviations: 1 compile unit, 2 abstract function, 3 deep_main,
    // 4 inlined call.
    let mut abbrev = Vec::new();
    for (code, tag, children, attrs) in [
        (1u8, 0x11u8, 1u8, &[(0x03u8, 0x08u8), (0x1b, 0x08), (0x13, 0x0b), (0x11, 0x01), (0x12, 0x07), (0x10, 0x17)][..]),
        (2, 0x2e, 0, &[(0x03, 0x08), (0x20, 0x0b)]),
        (3, 0x2e, 1, &[(0x3f, 0x19), (0x03, 0x08), (0x11, 0x01), (0x12, 0x07)]),
        (4, 0x1d, 1, &[(0x31, 0x13), (0x11, 0x01), (0x12, 0x07), (0x58, 0x0b), (0x59, 0x05)]),
    ] {
        abbrev.extend_from_slice(&[code, tag, children]);
        for &(a, f) in attrs {
            abbrev.extend_from_slice(&[a, f]);
        }
        abbrev.extend_from_slice(&[0, 0]);
    }
    abbrev.push(0);

    let mut info = Vec::new();
    info.extend_from_slice(&[0; 4]);
    info.extend_from_slice(&4u16.to_le_bytes());
    info.extend_from_slice(&0u32.to_le_bytes());
    info.push(8);
    info.push(1);
    info.extend_from_slice(b"deep.c\0/tmp\0");
    info.push(0x0c);
    info.extend_from_slice(&TEXT.to_le_bytes());
    info.extend_from_slice(&TEXT_SIZE.to_le_bytes());
    info.extend_from_slice(&0u32.to_le_bytes());
    let mut origin = Vec::new();
    for i in 0..levels {
        origin.push(info.len() as u32);
        info.push(2);
        info.extend_from_slice(format!("level{i}\0").as_bytes());
        info.push(3);
    }
    info.push(3);
    info.extend_from_slice(b"deep_main\0");
    info.extend_from_slice(&TEXT.to_le_bytes());
    info.extend_from_slice(&TEXT_SIZE.to_le_bytes());
    for (i, &o) in origin.iter().enumerate() {
        let (low, high) = (TEXT + 1 + i as u64, TEXT + TEXT_SIZE - 1 - i as u64);
        info.push(4);
        info.extend_from_slice(&o.to_le_bytes());
        info.extend_from_slice(&low.to_le_bytes());
        info.extend_from_slice(&(high - low).to_le_bytes());
        info.push(1);
        info.extend_from_slice(&((100 + i) as u16).to_le_bytes());
    }
    info.extend(std::iter::repeat_n(0u8, levels as usize + 2));
    let unit_len = (info.len() - 4) as u32;
    info[..4].copy_from_slice(&unit_len.to_le_bytes());

    // Line program: TEXT.. is deep.c:1.
    let mut head = vec![1, 1, 1, (-5i8) as u8, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];
    head.push(0); // no include directories
    head.extend_from_slice(b"deep.c\0\0\0\0");
    head.push(0);
    let mut prog = vec![0, 9, 2];
    prog.extend_from_slice(&TEXT.to_le_bytes());
    prog.push(1); // DW_LNS_copy
    prog.extend_from_slice(&[2, 0x80, 0x20]); // DW_LNS_advance_pc 0x1000 (ULEB128)
    prog.extend_from_slice(&[0, 1, 1]);
    let mut line = Vec::new();
    let body_len = 2 + 4 + head.len() + prog.len();
    line.extend_from_slice(&(body_len as u32).to_le_bytes());
    line.extend_from_slice(&4u16.to_le_bytes());
    line.extend_from_slice(&(head.len() as u32).to_le_bytes());
    line.extend(head);
    line.extend(prog);

    let strtab = b"\0deep_main\0".to_vec();
    let mut symtab = vec![0u8; 24];
    symtab.extend_from_slice(&1u32.to_le_bytes());
    symtab.push(0x12); // STB_GLOBAL, STT_FUNC
    symtab.push(0);
    symtab.extend_from_slice(&1u16.to_le_bytes());
    symtab.extend_from_slice(&TEXT.to_le_bytes());
    symtab.extend_from_slice(&TEXT_SIZE.to_le_bytes());

    let names = ["", ".text", ".debug_abbrev", ".debug_info", ".debug_line", ".symtab", ".strtab", ".shstrtab"];
    let mut shstrtab = Vec::new();
    let mut name_at = Vec::new();
    for n in names {
        name_at.push(shstrtab.len() as u32);
        shstrtab.extend_from_slice(n.as_bytes());
        shstrtab.push(0);
    }
    let mut out = vec![0u8; TEXT as usize];
    out.extend(std::iter::repeat_n(0x90u8, TEXT_SIZE as usize - 1));
    out.push(0xc3);
    let mut shdrs: Vec<Shdr> = vec![(0, 0, 0, 0, 0, 0, 0, 0, 0), (1, 6, TEXT, TEXT, TEXT_SIZE, 0, 0, 16, 0)];
    for (i, (data, ty)) in [(abbrev, 1u32), (info, 1), (line, 1), (symtab, 2), (strtab, 3), (shstrtab, 3)].into_iter().enumerate() {
        pad8(&mut out);
        let (link, inf, entsize) = if i == 3 { (6, 1, 24) } else { (0, 0, 0) };
        shdrs.push((ty, 0, 0, out.len() as u64, data.len() as u64, link, inf, 1, entsize));
        out.extend(data);
    }
    pad8(&mut out);
    let shoff = out.len() as u64;
    for (i, &(ty, flags, addr, off, size, link, inf, align, entsize)) in shdrs.iter().enumerate() {
        out.extend_from_slice(&name_at[i].to_le_bytes());
        out.extend_from_slice(&ty.to_le_bytes());
        for v in [flags, addr, off, size] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&inf.to_le_bytes());
        out.extend_from_slice(&align.to_le_bytes());
        out.extend_from_slice(&entsize.to_le_bytes());
    }
    let mut eh = Vec::new();
    eh.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    eh.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    eh.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    eh.extend_from_slice(&1u32.to_le_bytes());
    for v in [TEXT, 64, shoff] {
        eh.extend_from_slice(&v.to_le_bytes());
    }
    eh.extend_from_slice(&0u32.to_le_bytes());
    for v in [64u16, 56, 1, 64, shdrs.len() as u16, shdrs.len() as u16 - 1] {
        eh.extend_from_slice(&v.to_le_bytes());
    }
    // PT_LOAD, R+X, offset 0 at address 0, up to the end of .text.
    eh.extend_from_slice(&1u32.to_le_bytes());
    eh.extend_from_slice(&5u32.to_le_bytes());
    for v in [0, 0, 0, TEXT + TEXT_SIZE, TEXT + TEXT_SIZE, 0x1000] {
        eh.extend_from_slice(&v.to_le_bytes());
    }
    out[..eh.len()].copy_from_slice(&eh);
    out
}

/// Where [`samples_in_dsos`] maps its DSOs: the i-th at `MAP_BASE + i * MAP_STEP`.
pub const MAP_BASE: u64 = 0x5555_5555_0000;
pub const MAP_STEP: u64 = 0x10_0000;
const PID: u32 = 4242;

/// A file-mode perf.data of one process (`comm`, pid = tid = 4242) that
/// maps each of `dsos` (executable, file offset 0, 0x2000 bytes; no
/// build-ids) and has one cpu-clock sample per `(dso index, offset)` in
/// `samples`, with a one-frame user callchain at that offset.
pub fn samples_in_dsos(comm: &str, dsos: &[&str], samples: &[(usize, u64)]) -> Vec<u8> {
    let attr = cpu_clock_attr(Endian::Little, 1000, st::IP | st::TID | st::TIME | st::CALLCHAIN | st::PERIOD);
    let mut data = Vec::new();
    let time = std::cell::Cell::new(1_000_000_000u64);
    let record = |data: &mut Vec<u8>, ty: u32, misc: u16, body: &[u8], with_id: bool| {
        let mut b = body.to_vec();
        if with_id {
            LE.u32(&mut b, PID);
            LE.u32(&mut b, PID);
            LE.u64(&mut b, time.get());
        }
        LE.header(data, ty, misc, (8 + b.len()) as u16);
        data.extend(b);
        time.set(time.get() + 1000);
    };
    let mut body = Vec::new();
    LE.u32(&mut body, PID);
    LE.u32(&mut body, PID);
    body.extend_from_slice(comm.as_bytes());
    body.push(0);
    pad8(&mut body);
    record(&mut data, kind::COMM, 0, &body, true);
    for (i, path) in dsos.iter().enumerate() {
        let mut body = Vec::new();
        LE.u32(&mut body, PID);
        LE.u32(&mut body, PID);
        LE.u64(&mut body, MAP_BASE + i as u64 * MAP_STEP);
        LE.u64(&mut body, 0x2000);
        LE.u64(&mut body, 0);
        LE.u32(&mut body, 8);
        LE.u32(&mut body, 1);
        LE.u64(&mut body, 1000 + i as u64);
        LE.u64(&mut body, 0);
        LE.u32(&mut body, 5); // PROT_READ | PROT_EXEC
        LE.u32(&mut body, 2); // MAP_PRIVATE
        body.extend_from_slice(path.as_bytes());
        body.push(0);
        pad8(&mut body);
        record(&mut data, kind::MMAP2, 2, &body, true);
    }
    for &(dso, off) in samples {
        let ip = MAP_BASE + dso as u64 * MAP_STEP + off;
        let mut body = Vec::new();
        LE.u64(&mut body, ip);
        LE.u32(&mut body, PID);
        LE.u32(&mut body, PID);
        LE.u64(&mut body, time.get());
        LE.u64(&mut body, 1000);
        LE.u64(&mut body, 2);
        LE.u64(&mut body, 0xffff_ffff_ffff_fe00); // PERF_CONTEXT_USER
        LE.u64(&mut body, ip);
        record(&mut data, kind::SAMPLE, 2, &body, false);
    }
    FileWriter { endian: Endian::Little, attrs: vec![AttrEntry { raw: attr, ids: vec![1] }], data, features: vec![] }.to_bytes()
}

/// A copy of the ELF file `elf` whose compressed section `name` claims
/// `claim` bytes once inflated (64-bit compression header).
pub fn claim_compressed_size(elf: &[u8], name: &str, claim: u64) -> Vec<u8> {
    let at = section_header(elf, name).1 as usize;
    let mut out = elf.to_vec();
    out[at + 8..at + 16].copy_from_slice(&claim.to_le_bytes());
    out
}

/// (index, file offset, size) of section `name` of a 64-bit little-endian ELF file.
fn section_header(elf: &[u8], name: &str) -> (usize, u64, u64) {
    use object::read::elf::{ElfFile64, SectionHeader};
    let e = ElfFile64::<object::LittleEndian>::parse(elf).expect("ELF");
    let (i, s) = e.elf_section_table().section_by_name(object::LittleEndian, name.as_bytes()).expect("section");
    (i.0, s.sh_offset(object::LittleEndian), s.sh_size(object::LittleEndian))
}

/// The addresses of `.text` of an ELF file: [start, end).
pub fn text_range(elf: &[u8]) -> (u64, u64) {
    use object::{Object, ObjectSection};
    let e = object::File::parse(elf).expect("ELF");
    let t = e.section_by_name(".text").expect(".text");
    (t.address(), t.address() + t.size())
}

/// The plain bytes of the compressed section `name` of an ELF file.
fn inflated(elf: &[u8], name: &str) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let e = object::File::parse(elf).expect("ELF");
    e.section_by_name(name).expect("section").uncompressed_data().expect("inflates").into_owned()
}

/// A perf.data of tracepoint samples: `records` as (event id, raw data),
/// one event per id, the tracing data `tracing_data` (whose formats name
/// the ids).
pub fn tracepoint_samples(tracing_data: Vec<u8>, records: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut attrs = Vec::new();
    let mut data = Vec::new();
    for (n, (config, raw)) in records.iter().enumerate() {
        let mut attr = Vec::new();
        LE.u32(&mut attr, 2); // PERF_TYPE_TRACEPOINT
        LE.u32(&mut attr, 128);
        LE.u64(&mut attr, *config);
        LE.u64(&mut attr, 1);
        LE.u64(&mut attr, st::IP | st::TID | st::TIME | st::ID | st::PERIOD | st::RAW);
        attr.resize(128, 0);
        set_attr_flags(&mut attr, Endian::Little, flag::SAMPLE_ID_ALL | flag::EXCLUDE_GUEST);
        let id = 100 + n as u64;
        attrs.push(AttrEntry { raw: attr, ids: vec![id] });
        let mut body = Vec::new();
        LE.u64(&mut body, 0xffff_ffff_8100_0000);
        LE.u32(&mut body, PID);
        LE.u32(&mut body, PID);
        LE.u64(&mut body, 1_000_000_000 + n as u64);
        LE.u64(&mut body, id);
        LE.u64(&mut body, 1);
        LE.u32(&mut body, raw.len() as u32 + 4);
        body.extend_from_slice(raw);
        body.extend_from_slice(&[0; 4]);
        pad8(&mut body);
        LE.header(&mut data, kind::SAMPLE, 1, (8 + body.len()) as u16);
        data.extend(body);
    }
    // HEADER_TRACING_DATA is feature bit 1.
    FileWriter { endian: Endian::Little, attrs, data, features: vec![(1, tracing_data)] }.to_bytes()
}

/// A copy of `elf` whose section `name` (zlib-compressed) is compressed
/// with zstd instead: the new data is appended to the file and the section
/// header pointed at it.
pub fn recompress_with_zstd(elf: &[u8], name: &str) -> Vec<u8> {
    let (i, _, _) = section_header(elf, name);
    let plain = inflated(elf, name);
    let mut out = elf.to_vec();
    pad8(&mut out);
    let at = out.len() as u64;
    out.extend_from_slice(&2u32.to_le_bytes()); // ELFCOMPRESS_ZSTD
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(plain.len() as u64).to_le_bytes());
    out.extend_from_slice(&1u64.to_le_bytes());
    out.extend(zstd::bulk::compress(&plain, 3).expect("zstd"));
    let size = out.len() as u64 - at;
    let shoff = u64::from_le_bytes(elf[0x28..0x30].try_into().unwrap()) as usize;
    let sh = shoff + i * 64;
    out[sh + 24..sh + 32].copy_from_slice(&at.to_le_bytes());
    out[sh + 32..sh + 40].copy_from_slice(&size.to_le_bytes());
    out
}

/// Where the parts of the tracing data (the TRACING_DATA feature) of the
/// file-mode perf.data `data` are: the section, each event format file
/// (offset of its u64 size, in the section) and the kallsyms size.
struct TracingParts {
    section: std::ops::Range<usize>,
    events: Vec<usize>,
    kallsyms: usize,
}

fn tracing_parts(data: &[u8]) -> TracingParts {
    // The feature table follows the data section; TRACING_DATA (bit 1, the
    // lowest perf sets) has its first entry.
    let u64_le = |p: usize| u64::from_le_bytes(data[p..p + 8].try_into().unwrap()) as usize;
    assert_eq!(data[72] & 3, 2, "TRACING_DATA is the first feature");
    let table = u64_le(40) + u64_le(48);
    let (base, len) = (u64_le(table), u64_le(table + 8));
    let td = &data[base..base + len];
    let mut pos = 3 + 7;
    pos += td[pos..].iter().position(|&c| c == 0).unwrap() + 1;
    pos += 1 + 1 + 4;
    let u32_at = |p: usize| u32::from_le_bytes(td[p..p + 4].try_into().unwrap()) as usize;
    let u64_at = |p: usize| u64::from_le_bytes(td[p..p + 8].try_into().unwrap()) as usize;
    for tag in [&b"header_page\0"[..], b"header_event\0"] {
        assert_eq!(&td[pos..pos + tag.len()], tag);
        pos += tag.len();
        pos += 8 + u64_at(pos);
    }
    let mut events = Vec::new();
    let count = u32_at(pos);
    pos += 4;
    for _ in 0..count {
        pos += 8 + u64_at(pos);
    }
    let systems = u32_at(pos);
    pos += 4;
    for _ in 0..systems {
        pos += td[pos..].iter().position(|&c| c == 0).unwrap() + 1;
        let count = u32_at(pos);
        pos += 4;
        for _ in 0..count {
            events.push(pos);
            pos += 8 + u64_at(pos);
        }
    }
    TracingParts { section: base..base + len, events, kallsyms: pos }
}

/// A copy of the file-mode perf.data `data` whose tracing data says its
/// kallsyms text is `size` bytes long.
pub fn tracing_kallsyms_size(data: &[u8], size: u32) -> Vec<u8> {
    let parts = tracing_parts(data);
    let at = parts.section.start + parts.kallsyms;
    let mut out = data.to_vec();
    out[at..at + 4].copy_from_slice(&size.to_le_bytes());
    out
}

/// The tracing data of the file-mode perf.data `data`, with its first
/// two event formats replaced by `formats` (format file texts).
pub fn tracing_data_with(data: &[u8], formats: [&str; 2]) -> Vec<u8> {
    let parts = tracing_parts(data);
    let td = &data[parts.section.clone()];
    let size = |p: usize| u64::from_le_bytes(td[p..p + 8].try_into().unwrap()) as usize;
    let mut out = Vec::new();
    let mut from = 0;
    for (&at, text) in parts.events.iter().zip(formats) {
        out.extend_from_slice(&td[from..at]);
        out.extend_from_slice(&(text.len() as u64).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        from = at + 8 + size(at);
    }
    out.extend_from_slice(&td[from..]);
    out
}

/// `f(p<int, int>, T)` where T is `p<U, U>` for U the previous level,
/// `levels` deep: each level adds 8 bytes to the mangled name (a
/// substitution used twice) and doubles the demangled text.
pub fn substitution_bomb(levels: u32) -> String {
    fn seq(i: u32) -> String {
        const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let (mut i, mut s) = (i, Vec::new());
        loop {
            s.insert(0, DIGITS[(i % 36) as usize]);
            i /= 36;
            if i == 0 {
                return format!("S{}_", String::from_utf8(s).unwrap());
            }
        }
    }
    let mut t = "S0_".to_string();
    for k in 2..=levels {
        t = format!("S_I{t}{}E", seq(k - 2));
    }
    format!("_Z1f1pIiiE{t}")
}

/// A copy of the file-mode perf.data `data` (one event, sampling
/// `STACK_USER`) in which every sample's user stack copy is empty: its
/// `dyn_size` is 0, as the kernel writes it when it could copy nothing.
pub fn empty_user_stacks(data: &[u8]) -> Vec<u8> {
    use pstitch::perf_data::FileInfo;
    use pstitch::perf_data::record::RecordHeader;
    use pstitch::perf_data::sample::Sample;
    let info = FileInfo::parse(data).expect("perf.data");
    let attr = &info.evlist.evsels[0].attr;
    let mut out = data.to_vec();
    let mut pos = info.data.start;
    let mut patched = 0;
    while pos < info.data.end {
        let h = RecordHeader::parse(&data[pos..], Endian::Little).expect("record header");
        let record = &data[pos..pos + h.size as usize];
        if h.type_ == kind::SAMPLE {
            let s = Sample::parse(&record[8..], attr, Endian::Little).expect("sample");
            let stack = s.user_stack.expect("STACK_USER");
            // The copy starts after its u64 size; dyn_size follows the copy.
            let at = stack.as_ptr() as usize - data.as_ptr() as usize;
            let size = u64::from_le_bytes(data[at - 8..at].try_into().unwrap()) as usize;
            if size != 0 {
                out[at + size..at + size + 8].fill(0);
                patched += 1;
            }
        }
        pos += h.size as usize;
    }
    assert!(patched > 0, "no stack copies");
    out
}

/// A copy of the 64-bit little-endian ELF file `elf` in which libdw finds
/// no CFI: `.eh_frame`, `.eh_frame_hdr` and `.debug_frame` renamed
/// (`.xh_frame`, ...) and `PT_GNU_EH_FRAME` turned into `PT_NULL`.
pub fn without_cfi(elf: &[u8]) -> Vec<u8> {
    use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
    const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
    let le = object::LittleEndian;
    let e = ElfFile64::<object::LittleEndian>::parse(elf).expect("ELF");
    let table = e.elf_section_table();
    let strtab = table.section_by_name(le, b".shstrtab").expect("shstrtab").1.sh_offset(le) as usize;
    let mut out = elf.to_vec();
    let mut renamed = 0;
    for s in table.iter() {
        let name = table.section_name(le, s).unwrap_or_default();
        if [&b".eh_frame"[..], b".eh_frame_hdr", b".debug_frame"].contains(&name) {
            out[strtab + s.sh_name(le) as usize + 1] = b'x';
            renamed += 1;
        }
    }
    let h = e.elf_header();
    let (phoff, phentsize) = (h.e_phoff(le) as usize, h.e_phentsize(le) as usize);
    for i in 0..h.e_phnum(le) as usize {
        let at = phoff + i * phentsize;
        if u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) == PT_GNU_EH_FRAME {
            out[at..at + 4].fill(0);
        }
    }
    assert!(renamed >= 2, "no CFI sections found");
    out
}

/// Bytes of one filler record of [`compressed_chunks`]: the largest size a
/// record header can state, rounded down to 8.
const FILLER: usize = 65528;

/// A `perf record -z` style file: `samples` samples, each followed by
/// `filler_per_sample` bytes of user records of an unknown type (skipped
/// with one warning), all in COMPRESSED2 records of one zstd stream flushed
/// every `chunk_bytes` of records (at a record boundary), as perf writes a
/// chunk per ring-buffer read. HEADER_COMPRESSED claims a buffer of
/// `mmap_len` bytes: perf allows chunks of up to that size. No FINISHED_ROUND: every
/// sample stays queued to the end.
pub fn compressed_chunks(samples: usize, filler_per_sample: usize, chunk_bytes: usize, mmap_len: u32) -> Vec<u8> {
    let attr = cpu_clock_attr(Endian::Little, 1000, st::IP | st::TID | st::TIME | st::PERIOD);
    // Made as they are compressed: the records themselves would take
    // hundreds of megabytes.
    let records = (0..samples as u64).flat_map(|n| {
        let mut r = Vec::new();
        LE.header(&mut r, kind::SAMPLE, 2, 40);
        LE.u64(&mut r, MAP_BASE + n);
        LE.u32(&mut r, PID);
        LE.u32(&mut r, PID);
        LE.u64(&mut r, 1_000_000_000 + n * 1000);
        LE.u64(&mut r, 1000);
        std::iter::once(r).chain((0..filler_per_sample / FILLER).map(|_| {
            let mut f = Vec::with_capacity(FILLER);
            LE.header(&mut f, 120, 0, FILLER as u16);
            f.resize(FILLER, 0);
            f
        }))
    });
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    let mut encoder = zstd::stream::raw::Encoder::new(1).expect("zstd encoder");
    let mut buf = vec![0u8; 1 << 16];
    let mut data = Vec::new();
    // The compressed bytes of the chunk being made, and its decoded size.
    let mut payload = Vec::new();
    let mut in_chunk = 0usize;
    let end_chunk = |payload: &mut Vec<u8>, data: &mut Vec<u8>, encoder: &mut zstd::stream::raw::Encoder, buf: &mut [u8]| {
        loop {
            let mut out = OutBuffer::around(&mut buf[..]);
            let left = encoder.flush(&mut out).expect("zstd flush");
            payload.extend_from_slice(out.as_slice());
            if left == 0 {
                break;
            }
        }
        let size = 16 + payload.len().next_multiple_of(8);
        assert!(size <= 0xffff, "a chunk compressed to {size} bytes: make chunks smaller");
        LE.header(data, kind::COMPRESSED2, 0, size as u16);
        LE.u64(data, payload.len() as u64);
        data.append(payload);
        pad8(data);
    };
    for r in records {
        if in_chunk > 0 && in_chunk + r.len() > chunk_bytes {
            end_chunk(&mut payload, &mut data, &mut encoder, &mut buf);
            in_chunk = 0;
        }
        in_chunk += r.len();
        let mut input = InBuffer::around(&r[..]);
        while input.pos() < r.len() {
            let mut out = OutBuffer::around(&mut buf[..]);
            encoder.run(&mut input, &mut out).expect("zstd");
            payload.extend_from_slice(out.as_slice());
        }
    }
    end_chunk(&mut payload, &mut data, &mut encoder, &mut buf);
    // HEADER_COMPRESSED (feature bit 27): version, type (1: zstd), level,
    // ratio, mmap_len.
    let mut feature = Vec::new();
    for v in [2u32, 1, 1, 100, mmap_len] {
        LE.u32(&mut feature, v);
    }
    FileWriter { endian: Endian::Little, attrs: vec![AttrEntry { raw: attr, ids: vec![1] }], data, features: vec![(27, feature)] }.to_bytes()
}

/// A copy of the file-mode recording `data` whose HEADER_BUILD_ID entry for
/// the file named `name` says its build-id is all zeros (`empty`: of size
/// 0, with PERF_RECORD_MISC_BUILD_ID_SIZE set), as a recorder that could
/// not read one writes it.
pub fn undefined_build_id(data: &[u8], name: &str, empty: bool) -> Vec<u8> {
    let mut d = data.to_vec();
    let u64_at = |d: &[u8], at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
    // perf_file_header: magic, size, attr_size, attrs, data, event_types
    // (offset and size each), then the feature bitmap.
    let sections = (u64_at(&d, 40) + u64_at(&d, 48)) as usize;
    let features: Vec<u32> = (0..256).filter(|&b| u64_at(&d, 72 + (b / 64) as usize * 8) >> (b % 64) & 1 == 1).collect();
    // HEADER_BUILD_ID is feature bit 2: its section is the index of bit 2
    // among the bits set.
    let index = features.iter().position(|&b| b == 2).expect("a BUILD_ID table");
    let (start, size) = (u64_at(&d, sections + 16 * index) as usize, u64_at(&d, sections + 16 * index + 8) as usize);
    let mut at = start;
    while at < start + size {
        let rec = u16::from_le_bytes([d[at + 6], d[at + 7]]) as usize;
        // header, pid, build_id[20], size (u8) and padding, filename
        let named = d[at + 36..at + rec].split(|&b| b == 0).next() == Some(name.as_bytes());
        if named {
            d[at + 12..at + 32].fill(0);
            if empty {
                d[at + 32] = 0;
                let misc = u16::from_le_bytes([d[at + 4], d[at + 5]]) | 0x8000;
                d[at + 4..at + 6].copy_from_slice(&misc.to_le_bytes());
            }
            return d;
        }
        at += rec;
    }
    panic!("no BUILD_ID entry for {name}");
}

/// `len` bytes of seeded noise (xorshift64*), as the code of a DSO for the
/// `insn` field: perf-ref's decoder and pstitch's must agree on the length
/// at every offset. With `elf32`, the bytes start with the identification
/// of a 32-bit ELF file (`\x7fELF`, ELFCLASS32).
pub fn random_code(len: usize, mut seed: u64, elf32: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        out.extend_from_slice(&seed.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    if elf32 {
        out[..5].copy_from_slice(b"\x7fELF\x01");
    }
    out
}

/// A recording with branch counters (tests/golden/brcntr) whose
/// HEADER_CPU_PMU_CAPS claims `branch_counter_width=value` (the string's
/// place in the section keeps its size: `value` must fit the 64 bytes perf
/// padded the original to).
pub fn branch_counter_width(data: &[u8], value: &str) -> Vec<u8> {
    let name = b"branch_counter_width\0";
    let at = data.windows(name.len()).rposition(|w| w == name).expect("a branch_counter_width capability");
    let name_len = u32::from_le_bytes(data[at - 4..at].try_into().unwrap()) as usize;
    let len_at = at + name_len;
    let len = u32::from_le_bytes(data[len_at..len_at + 4].try_into().unwrap()) as usize;
    assert!(value.len() < len);
    let mut out = data.to_vec();
    let v = &mut out[len_at + 4..len_at + 4 + len];
    v.fill(0);
    v[..value.len()].copy_from_slice(value.as_bytes());
    out
}

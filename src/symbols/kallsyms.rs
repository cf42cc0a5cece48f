//! Kernel symbols from a kallsyms file, as perf loads them
//! (`dso__load_kallsyms`): `T`/`W`/`D`/`B` symbols in either case, each
//! zero-sized and extended to the next (modules end at the next page),
//! same-address aliases reduced to the last one listed, module symbols
//! dropped (pstitch creates no module maps), and addresses shifted by the
//! boot relocation found through the reference symbol (`_text`).
//!
//! How (a /proc/kallsyms is 120,000 lines, 5.4 MB, and a small run's
//! largest piece of work after the kernel's printing of it):
//!
//! - One pass over the text ([`Lines::scan`], perf's `kallsyms__parse`),
//!   each line made a symbol or dropped as it is read ([`Parser`]): no list
//!   of lines. An address of 16 hex digits and a space (nearly every line)
//!   is read a word at a time; a name is scanned a word at a time for its
//!   newline and for the bytes that make it odd (a tab: a module symbol;
//!   a `[`: a module part, which `symbols__fixup_end` compares; a NUL: the
//!   name perf keeps ends there), and only odd names are looked at again.
//! - The symbols name themselves by offsets into the text; at the load
//!   the names are moved down over the addresses and types and the rest of
//!   the text is given back ([`compact_names`]).
//! - The fixups run on one table in file order (usually sorted already:
//!   `SymTab` checks, and sorts only when not), and the kernel's symbols
//!   are split off in place as perf does (`SymTab::erase_and_shift`), not
//!   copied into a second table.


use super::elf::{STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_OBJECT};
use super::elf::SectionBytes;
use perf_data::bytes::find_byte;
use super::ktable::KernelTable;
use super::symtab::{ModuleParts, NOT_MODULE, Sym, SymTab};
use std::ops::ControlFlow;

/// One kallsyms line: address, type letter, name (with `\t[module]`).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub addr: u64,
    pub typ: u8,
    pub name: &'a [u8],
}

/// perf's `kallsyms__parse`, byte for byte: a line that does not start
/// with hex digits followed by a space is skipped (and, like perf, a line
/// whose very first byte is not a hex digit also swallows the line after
/// it when that byte was the newline).
#[cfg(test)]
pub fn parse(data: &[u8]) -> Vec<Entry<'_>> {
    let mut entries = Vec::new();
    Lines::default().scan(data, true, |addr, typ, at, len, _| {
        entries.push(Entry { addr, typ, name: &data[at..at + len] });
        std::ops::ControlFlow::Continue(())
    });
    entries
}

/// [`parse`] as the text arrives, each line made a symbol (or dropped) as
/// it is read: lines are parsed as soon as what comes after them cannot
/// change how (see [`Parser::parse`]), so that the parsing keeps up with a
/// slow reader of `/proc/kallsyms`. The lines themselves are not kept: a
/// kallsyms file is 120,000 of them, and the symbols are what the load
/// needs (the one other question, where the reference symbol is, is asked
/// of the text again: it is near its start).
#[derive(Default)]
pub struct Parser {
    lines: Lines,
    /// The symbols perf makes of the lines so far.
    kept: Kept,
}

/// Where the parsing of a text goes on (see [`Lines::scan`]).
#[derive(Default)]
struct Lines {
    pos: usize,
}

/// The symbols of the lines parsed so far, with what the load needs to
/// know of their names (each name is read once, as it arrives).
#[derive(Default)]
struct Kept {
    /// Whether the names are placed in the file's bytes (which must then
    /// be addressable with 32-bit offsets; a larger text is parsed again
    /// from its start with names of their own).
    owned_names: bool,
    syms: Vec<Sym>,
    /// Where the names placed in the file's bytes end (a newline each;
    /// see [`compact_names`]).
    ends: Vec<u32>,
    /// Per symbol, its name's module part (`[` on) as a number
    /// ([`NOT_MODULE`] for none) and the [`TAB`] and [`TRAMPOLINE`] bits.
    marks: Vec<u32>,
    /// The numbers given to module parts.
    modules: ModuleParts,
}

/// A mark's bit: the name has a tab (a module symbol, "name\t[module]").
const TAB: u32 = 1 << 31;
/// A mark's bit: the x86_64 entry trampoline, which perf drops.
const TRAMPOLINE: u32 = 1 << 30;
/// A mark's module number.
const MODULE: u32 = TRAMPOLINE - 1;

/// perf's longest kallsyms name, with its NUL (`KSYM_NAME_LEN` + 1).
const NAME_MAX: usize = 513;

impl Lines {
    /// perf's `kallsyms__parse` over `data` from where the last call
    /// stopped: `line(address, type, name's start, name's length, odd)`
    /// for each line read (`odd`: the name has a tab, a `[` or a NUL),
    /// until it breaks. Unless `last`, it stops before the last two lines:
    /// a line is read up to the end of the next one at most (perf's
    /// swallowing), and the next may be incomplete.
    fn scan(&mut self, data: &[u8], last: bool, mut line: impl FnMut(u64, u8, usize, usize, bool) -> ControlFlow<()>) {
        let n = data.len();
        let stop_at = if last {
            n
        } else {
            // Just after the second to last newline (not before where
            // parsing is: the lines before it are read already).
            let from = self.pos.min(n);
            let Some(l) = data[from..].iter().rposition(|&c| c == b'\n') else { return };
            match data[from..from + l].iter().rposition(|&c| c == b'\n') {
                Some(p) => from + p + 1,
                None => return,
            }
        };
        let mut i = self.pos;
        let read_to_eol = |i: &mut usize| {
            *i = find_byte(&data[(*i).min(n)..], b'\n').map_or(n, |p| *i + p + 1);
        };
        while i < stop_at {
            // io__get_hex: nearly every line starts with 16 digits and a
            // space, read a word at a time; the others digit by digit.
            let (addr, stop) = match address16(&data[i..]) {
                Some(addr) => {
                    i += 17;
                    (addr, Some(b' '))
                }
                None => {
                    let mut addr: u64 = 0;
                    let mut digits = 0;
                    let stop = loop {
                        let Some(&c) = data.get(i) else { break None };
                        i += 1;
                        match HEX[c as usize] {
                            NOT_HEX => break Some(c),
                            d => {
                                addr = addr << 4 | d as u64;
                                digits += 1;
                            }
                        }
                    };
                    if digits == 0 || stop != Some(b' ') {
                        if stop.is_none() {
                            break;
                        }
                        read_to_eol(&mut i);
                        continue;
                    }
                    (addr, stop)
                }
            };
            debug_assert_eq!(stop, Some(b' '));
            let Some(&typ) = data.get(i) else { break };
            i += 1;
            if data.get(i) != Some(&b' ') {
                if i >= n {
                    break;
                }
                i += 1;
                read_to_eol(&mut i);
                continue;
            }
            i += 1;
            let start = i;
            let (len, odd) = scan_name(&data[start..n.min(start + NAME_MAX)]);
            i = start + len;
            if i < n && data[i] == b'\n' {
                i += 1;
            }
            if line(addr, typ, start, len, odd).is_break() {
                break;
            }
        }
        self.pos = i;
    }
}

/// A line's address when it is the common one: 16 hex digits and a space.
/// Each half is checked and read as one word (the digits, in text order,
/// are the bytes from the lowest up).
#[inline]
fn address16(b: &[u8]) -> Option<u64> {
    let b: &[u8; 17] = b.get(..17)?.try_into().ok()?;
    if b[16] != b' ' {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    Some(u64::from(hex8(word(0))?) << 32 | u64::from(hex8(word(8))?))
}

/// Eight hex digits (the first in the lowest byte) as a number; `None`
/// unless every byte is one.
#[inline]
fn hex8(x: u64) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES << 7;
    // Every byte below 0x80: no sum below carries into the next byte.
    if x & HIGH != 0 {
        return None;
    }
    // A byte's high bit set by (byte + 0x80 - lo) iff byte >= lo, by
    // (byte + 0x7f - hi) iff byte > hi.
    let at_least = |lo: u64| x + ONES * (0x80 - lo);
    let above = |hi: u64| x + ONES * (0x7f - hi);
    let digit = at_least(0x30) & !above(0x39);
    let lower = x | (ONES * 0x20);
    let letter = (lower + ONES * (0x80 - 0x61)) & !(lower + ONES * (0x7f - 0x66));
    if (digit | letter) & HIGH != HIGH {
        return None;
    }
    // '0'-'9' are 0x30-0x39, 'a'-'f' and 'A'-'F' 0x61-0x66 and 0x41-0x46:
    // the low nibble, plus 9 for a letter (bit 6).
    let v = (x & (ONES * 0x0f)) + 9 * ((x & (ONES * 0x40)) >> 6);
    // Pairs of digits into bytes, pairs of bytes into 16 bits, then 32.
    let v = ((v << 4) | (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = ((v << 8) | (v >> 16)) & 0x0000_ffff_0000_ffff;
    Some((((v << 16) | (v >> 32)) & 0xffff_ffff) as u32)
}

/// The length of the name at the start of `b` (up to its newline or the
/// end of `b`), and whether it has a tab, a `[` or a NUL (odd names, whose
/// module part and shown length the classification works out). A word at
/// a time while no byte is below a space or is a `[`.
#[inline]
fn scan_name(b: &[u8]) -> (usize, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES << 7;
    let mut k = 0;
    while let Some(w) = b.get(k..k + 8) {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        // Some byte below 0x20 (newline, tab, NUL), or some '['.
        let low = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let y = x ^ (ONES * u64::from(b'['));
        let bracket = y.wrapping_sub(ONES) & !y & HIGH;
        if low | bracket != 0 {
            // The lowest bit of each is exact (a borrow can only mark bytes
            // above a true one): a newline before any other odd byte ends
            // a plain name here.
            let (first_low, first_bracket) = (low.trailing_zeros() as usize / 8, bracket.trailing_zeros() as usize / 8);
            if first_low < first_bracket && b[k + first_low] == b'\n' {
                return (k + first_low, false);
            }
            break;
        }
        k += 8;
    }
    let mut odd = false;
    for (j, &c) in b[k..].iter().enumerate() {
        match c {
            b'\n' => return (k + j, odd),
            b'\t' | b'[' | 0 => odd = true,
            _ => {}
        }
    }
    (b.len(), odd)
}

impl Parser {
    /// Parses `data` (the text so far: what was given before, and more)
    /// from where the last call stopped, making the symbols of the lines
    /// read (see [`load_parsed`]). Unless `last`, it stops before the last
    /// two lines (see [`Lines::scan`]).
    pub fn parse(&mut self, data: &[u8], last: bool) {
        let owned_names = u32::try_from(data.len()).is_err();
        if owned_names && !self.kept.owned_names {
            // Names past 4 GiB cannot be placed in the text: all of them
            // get names of their own (parsed again, from the start).
            *self = Parser { kept: Kept { owned_names, ..Kept::default() }, ..Parser::default() };
        }
        let kept = &mut self.kept;
        // Room for the lines to come (44 bytes a line on average in
        // /proc/kallsyms; shorter lines grow the vectors as usual): growing
        // would copy megabytes.
        let lines = data.len().saturating_sub(self.lines.pos) / 40;
        kept.syms.reserve(lines);
        kept.marks.reserve(lines);
        kept.ends.reserve(lines);
        self.lines.scan(data, last, |addr, typ, at, len, odd| {
            kept.add(data, addr, typ, at, len, odd);
            ControlFlow::Continue(())
        });
    }
}

impl Kept {
    /// The symbol perf makes of a line, if any.
    #[inline]
    fn add(&mut self, data: &[u8], addr: u64, typ: u8, at: usize, len: usize, odd: bool) {
        let name = &data[at..at + len];
        if !matches!(typ.to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') || name.first() == Some(&b'$') {
            return;
        }
        let binding = if typ == b'W' {
            STB_WEAK
        } else if typ.is_ascii_uppercase() {
            STB_GLOBAL
        } else {
            STB_LOCAL
        };
        let typ = if matches!(typ.to_ascii_lowercase(), b't' | b'w') { STT_FUNC } else { STT_OBJECT };
        let end = at + len;
        // A name cut at NAME_MAX or at the end of the file has no newline
        // to give up.
        let sym = if !self.owned_names && data.get(end) == Some(&b'\n') {
            self.ends.push(end as u32);
            Sym::in_strtab(addr, 0, binding, typ, (0, at as u32), false)
        } else {
            Sym::new(addr, 0, binding, typ, crate::symbols::symtab::shared_str(name))
        };
        let mark = if odd || sym.plain_name().is_some() {
            // Read back up to its first NUL (the one its newline becomes,
            // or one of its own); a name of its own as it is.
            let shown = sym.plain_name().map_or_else(|| &name[..find_byte(name, 0).unwrap_or(len)], |n| n.as_bytes());
            let module = match self.modules.number(shown) {
                NOT_MODULE => MODULE,
                n => n.min(MODULE - 1),
            };
            let tab = if find_byte(shown, b'\t').is_some() { TAB } else { 0 };
            module | tab | trampoline(shown)
        } else {
            MODULE | trampoline(name)
        };
        self.syms.push(sym);
        self.marks.push(mark);
    }
}

/// The [`TRAMPOLINE`] bit of a name.
#[inline]
fn trampoline(name: &[u8]) -> u32 {
    if name == b"__entry_SYSCALL_64_trampoline" { TRAMPOLINE } else { 0 }
}

/// Marks a byte that is not a hex digit in [`HEX`].
const NOT_HEX: u8 = u8::MAX;

/// Each byte's value as a hex digit, [`NOT_HEX`] if it is none.
const HEX: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// perf's `kallsyms__get_function_start`: the address of the first
/// `T`/`W`/`A` line with this name (the text parsed again from its start,
/// up to that line).
pub fn function_start(data: &[u8], name: &str) -> Option<u64> {
    let mut found = None;
    Lines::default().scan(data, true, |addr, typ, at, len, _| {
        if matches!(typ.to_ascii_uppercase(), b'T' | b'W' | b'A') && &data[at..at + len] == name.as_bytes() {
            found = Some(addr);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// Kernel symbols, and module symbols by module name (`[ext4]`, absolute
/// addresses, names without the module tag).
pub struct Kallsyms {
    pub kernel: KernelTable,
    pub modules: Modules,
}

/// The kernel's symbol table, or `None` where perf fails to load kallsyms
/// (the reference symbol is missing from the file).
#[cfg(test)]
pub fn load(data: &[u8], ref_reloc: Option<(&str, u64)>) -> Option<KernelTable> {
    load_all(data.to_vec(), ref_reloc).map(|k| k.kernel)
}

/// The kernel's table as [`load`] makes it before its layout is made
/// compact (the generic table, for tests to compare with), and the
/// relocation it was shifted by.
#[cfg(test)]
pub fn load_generic(data: &[u8], ref_reloc: Option<(&str, u64)>) -> (SymTab, u64) {
    let mut parser = Parser::default();
    parser.parse(data, true);
    let delta = ref_reloc.and_then(|(name, addr)| Some(function_start(data, name)?.wrapping_sub(addr))).unwrap_or(0);
    (split(data.to_vec(), &mut parser, ref_reloc, true).expect("loads").0, delta)
}

/// [`load`], keeping the module symbols perf moves to module maps
/// (`maps__split_kallsyms`).
#[cfg(test)]
pub fn load_all(data: Vec<u8>, ref_reloc: Option<(&str, u64)>) -> Option<Kallsyms> {
    let mut parser = Parser::default();
    parser.parse(&data, true);
    load_parsed(data, &mut parser, ref_reloc)
}

/// [`load_all`] for a text parsed already (`parser` parsed it to the end).
pub fn load_parsed(data: Vec<u8>, parser: &mut Parser, ref_reloc: Option<(&str, u64)>) -> Option<Kallsyms> {
    load_split(data, parser, ref_reloc, true)
}

/// [`load_parsed`]; `in_place`: the kernel's symbols stay in the table
/// they were fixed up in where they can (tests compare with a new table).
fn load_split(data: Vec<u8>, parser: &mut Parser, ref_reloc: Option<(&str, u64)>, in_place: bool) -> Option<Kallsyms> {
    let (kernel, modules) = split(data, parser, ref_reloc, in_place)?;
    // The generic table serves its fixups; lookups take the compact one.
    Some(Kallsyms { kernel: KernelTable::new(kernel), modules })
}

/// [`load_split`] up to the kernel's table as fixed up and split off.
fn split(mut data: Vec<u8>, parser: &mut Parser, ref_reloc: Option<(&str, u64)>, in_place: bool) -> Option<(SymTab, Modules)> {
    let delta = match ref_reloc {
        Some((name, addr)) => function_start(&data, name)?.wrapping_sub(addr),
        None => 0,
    };
    let Kept { mut syms, ends, marks, .. } = std::mem::take(&mut parser.kept);
    compact_names(&mut data, &mut syms, &ends);
    drop(ends);
    let names = SectionBytes::Owned(std::sync::Arc::new(data));
    let mut t = SymTab::default();
    // The first string table of a table is number 0.
    t.use_strtab(names.clone());
    // Ids are insertion order: a symbol's id is its place in `marks`.
    t.insert_all(syms);
    let module = |id: u32| match marks[id as usize] & MODULE {
        MODULE => NOT_MODULE,
        n => n,
    };
    t.fixup_end_by(module);
    t.fixup_duplicate();
    // maps__split_kallsyms: module symbols go to their module's map (kept
    // aside here), entry trampolines are dropped on x86_64, the kernel's own
    // symbols are shifted by the boot relocation; in place, as perf does.
    t.settle();
    let mut modules = Modules::new();
    for (id, s) in t.in_order() {
        if marks[id as usize] & TAB != 0 {
            let mut s = s.clone();
            let name = t.raw_name(id);
            let tab = find_byte(name, b'\t').unwrap_or(name.len());
            s.set_name(crate::symbols::symtab::shared_str(&name[..tab]));
            modules.entry(String::from_utf8_lossy(name.get(tab + 1..).unwrap_or_default()).into_owned()).or_default().push(s);
        }
    }
    let gone = |id: u32| marks[id as usize] & (TAB | TRAMPOLINE) != 0;
    let kernel = if in_place && t.erase_and_shift(gone, delta) { t } else { shifted_copy(t, gone, delta, names) };
    Some((kernel, modules))
}

/// Module symbols by module name.
type Modules = std::collections::HashMap<String, Vec<Sym>>;

/// The names stay in the file's bytes, one allocation rather than one per
/// symbol; but only the names, each ended by a NUL, moved down over what
/// lookups do not need (addresses, types, dropped lines: 19 bytes of a
/// /proc/kallsyms line's 44), and the rest given back. `ends`: where each
/// name placed in the text ends (its newline), in the order of the
/// symbols named in the text.
///
/// ```text
///  ffffffff81000000 T _stext\nffffffff81000000 T _text\n...   read
///  _stext\0_text\0...                                        kept
/// ```
fn compact_names(data: &mut Vec<u8>, syms: &mut [Sym], ends: &[u32]) {
    let mut ends = ends.iter();
    let mut to = 0;
    for s in syms {
        let Some(at) = s.strtab_offset() else { continue };
        let Some(&end) = ends.next() else { break };
        let (at, end) = (at as usize, end as usize);
        // A line has at least four bytes before its name (a digit, a
        // space, the type, a space), so names only move down.
        debug_assert!(to <= at && at <= end);
        data.copy_within(at..end, to);
        s.move_strtab_name(to as u32);
        to += end - at;
        data[to] = 0;
        to += 1;
    }
    data.truncate(to);
    data.shrink_to_fit();
}

/// The kernel's symbols of `t` (settled) in a new table, shifted down by
/// `delta`, where shifting them in place would change their order (an
/// address wraps around): inserted again, they are sorted by their new
/// addresses.
fn shifted_copy(t: SymTab, gone: impl Fn(u32) -> bool, delta: u64, names: SectionBytes) -> SymTab {
    let mut kernel = SymTab::default();
    kernel.use_strtab(names);
    let kept = t
        .in_order()
        .filter(|&(id, _)| !gone(id))
        .map(|(_, s)| {
            let mut s = s.clone();
            s.start = s.start.wrapping_sub(delta);
            s.end = s.end.wrapping_sub(delta);
            s
        })
        .collect();
    // The table in file order has served: not both at once.
    drop(t);
    kernel.insert_all(kept);
    kernel
}

/// perf's module name for a module map's file name (`kmod_path__parse`):
/// `[name]` from a `.ko` path (compression suffix allowed, `-` becomes `_`),
/// the name itself when it is already bracketed.
pub fn module_name(filename: &str) -> String {
    let base = filename.rsplit('/').next().unwrap_or(filename);
    if base.starts_with('[') {
        return base.to_string();
    }
    let mut stem = base;
    for ext in [".gz", ".xz", ".zst"] {
        if let Some(s) = stem.strip_suffix(ext) {
            stem = s;
            break;
        }
    }
    let stem = stem.strip_suffix(".ko").unwrap_or(stem);
    format!("[{}]", stem.replace('-', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"ffffffff81000000 T srso_alias_untrain_ret\n\
ffffffff81000000 T _stext\n\
ffffffff81000000 T _text\n\
ffffffff81000040 t helper\n\
ffffffff81000080 R some_rodata\n\
ffffffff81000100 W weak_fn\n\
ffffffff81000200 D data_sym\n\
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";

    #[test]
    fn parses_lines() {
        let e = parse(SAMPLE);
        assert_eq!(e.len(), 8);
        assert_eq!(e[3], Entry { addr: 0xffffffff81000040, typ: b't', name: b"helper" });
        assert_eq!(e[7].name, b"ftrace_trampoline\t[__builtin__ftrace]");
        // Garbage lines are skipped without losing the next good one.
        let e = parse(b"zz bad\nffff T ok\n1234Xbad\n10 t x\n");
        assert_eq!(e.iter().map(|e| e.name).collect::<Vec<_>>(), vec![&b"ok"[..], &b"x"[..]]);
    }

    /// Parsing the text as it arrives, in pieces of any size, finds what
    /// parsing it whole finds, perf's swallowed lines and cut names too.
    #[test]
    fn parsing_in_pieces_is_parsing_whole() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms");
        let long = format!("ffff t {}\nffff0 T after_long\n", "n".repeat(600));
        let texts: Vec<Vec<u8>> = vec![
            SAMPLE.to_vec(),
            b"zz bad\nffff T ok\n1234Xbad\n10 t x\n\n20 t swallowed\n30 t y\n40 \n50 t z\n60 Tq\n70 t w".to_vec(),
            long.into_bytes(),
            std::fs::read(fixture).expect("fixture kallsyms")[..200_000].to_vec(),
        ];
        for text in &texts {
            let whole: Vec<Entry<'_>> = parse(text);
            assert_eq!(whole, reference_parse(text));
            for piece in [1, 2, 3, 7, 64, 4096] {
                let mut lines = Lines::default();
                let mut found = Vec::new();
                let mut got = Vec::new();
                let mut add = |addr, typ, at, len, _| {
                    found.push((addr, typ, at, len));
                    ControlFlow::Continue(())
                };
                for chunk in text.chunks(piece) {
                    got.extend_from_slice(chunk);
                    lines.scan(&got, false, &mut add);
                }
                lines.scan(&got, true, &mut add);
                let entries: Vec<Entry<'_>> = found.iter().map(|&(addr, typ, at, len)| Entry { addr, typ, name: &got[at..at + len] }).collect();
                assert_eq!(entries, whole, "pieces of {piece}");
            }
        }
    }

    /// Eight digits read as a word are what reading them one by one gives,
    /// for every byte at every place: a digit's value, or no number.
    #[test]
    fn hex_words() {
        let one_by_one = |b: &[u8; 8]| -> Option<u32> {
            b.iter().try_fold(0u32, |v, &c| Some(v << 4 | (c as char).to_digit(16)?))
        };
        for place in 0..8 {
            for c in 0..=255u8 {
                let mut b = *b"0123cdEF";
                b[place] = c;
                assert_eq!(hex8(u64::from_le_bytes(b)), one_by_one(&b), "{b:?}");
            }
        }
        assert_eq!(address16(b"ffffffff81000000 T"), Some(0xffffffff81000000));
        assert_eq!(address16(b"FFFFFFFF8100000a "), Some(0xffffffff8100000a));
        assert_eq!(address16(b"ffffffff81000000\t"), None);
        assert_eq!(address16(b"ffffffff8100000 "), None);
    }

    /// perf's `kallsyms__parse` a byte at a time, as simply as it reads:
    /// what the word-at-a-time parse must find.
    fn reference_parse(data: &[u8]) -> Vec<Entry<'_>> {
        let n = data.len();
        let mut out = Vec::new();
        let mut i = 0;
        let to_eol = |i: &mut usize| {
            while *i < n {
                *i += 1;
                if data[*i - 1] == b'\n' {
                    break;
                }
            }
        };
        while i < n {
            let (mut addr, mut digits) = (0u64, 0);
            let mut stop = None;
            while i < n {
                let c = data[i];
                i += 1;
                match (c as char).to_digit(16) {
                    Some(d) => {
                        addr = addr << 4 | u64::from(d);
                        digits += 1;
                    }
                    None => {
                        stop = Some(c);
                        break;
                    }
                }
            }
            if digits == 0 || stop != Some(b' ') {
                if stop.is_none() {
                    break;
                }
                to_eol(&mut i);
                continue;
            }
            let Some(&typ) = data.get(i) else { break };
            i += 1;
            if data.get(i) != Some(&b' ') {
                if i >= n {
                    break;
                }
                i += 1;
                to_eol(&mut i);
                continue;
            }
            i += 1;
            let start = i;
            while i < n && i - start < NAME_MAX && data[i] != b'\n' {
                i += 1;
            }
            out.push(Entry { addr, typ, name: &data[start..i] });
            if i < n && data[i] == b'\n' {
                i += 1;
            }
        }
        out
    }

    /// Lines of every shape the fast paths must not misread: addresses of
    /// 1-20 digits (upper and lower case, a bad digit at each place),
    /// names with a tab, a `[`, a NUL or a byte >= 0x80 at every place
    /// around the 8-byte words, names cut at the longest perf reads,
    /// missing types and spaces, empty lines.
    #[test]
    fn odd_lines_parse_as_perf_reads_them() {
        let mut text = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..20_000 {
            let digits = [16, 16, 16, 8, 1 + next(20)][next(5) as usize];
            for _ in 0..digits {
                text.push(b"0123456789abcdefABCDEF"[next(22) as usize]);
            }
            if next(40) == 0 {
                let l = text.len();
                text[l - 1 - next(digits) as usize] = [b'g', b' ', b'\n', b'x'][next(4) as usize];
            }
            match next(30) {
                0 => {}
                1 => text.push(b'\t'),
                _ => text.push(b' '),
            }
            text.push(b"tTdDbBwWrRaA?"[next(13) as usize]);
            if next(30) != 0 {
                text.push(b' ');
            }
            let len = [next(30), next(30), next(600)][next(3) as usize];
            for _ in 0..len {
                text.push(match next(50) {
                    0 => b'\t',
                    1 => b'[',
                    2 => 0,
                    3 => 0xc3,
                    4 => b']',
                    _ => b'a' + next(26) as u8,
                });
            }
            if next(50) != 0 {
                text.push(b'\n');
            }
            if next(200) == 0 {
                text.push(b'\n');
            }
        }
        let whole = parse(&text);
        assert!(whole.len() > 10_000);
        assert_eq!(whole, reference_parse(&text));
        // Every name's oddness as the word-at-a-time scan says.
        for e in &whole {
            let odd = e.name.iter().any(|&c| matches!(c, b'\t' | b'[' | 0));
            assert_eq!(scan_name(e.name), (e.name.len(), odd));
        }
        for piece in [1, 5, 64, 4096] {
            let mut parser = Parser::default();
            let mut got = Vec::new();
            for chunk in text.chunks(piece) {
                got.extend_from_slice(chunk);
                parser.parse(&got, false);
            }
            let mut whole_parser = Parser::default();
            whole_parser.parse(&text, true);
            parser.parse(&got, true);
            let summary = |p: &Parser| (p.kept.syms.clone(), p.kept.marks.clone(), p.kept.ends.clone());
            assert!(summary(&parser) == summary(&whole_parser), "pieces of {piece}");
        }
    }

    /// Symbols made as the text arrives, piece by piece, load as those of
    /// the whole text do: kernel symbols (module parts, `[` in kernel
    /// names, the entry trampoline, names with a NUL, cut names) and module
    /// symbols alike.
    #[test]
    fn classifying_in_pieces_loads_what_the_whole_text_loads() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms");
        let mut odd = SAMPLE.to_vec();
        odd.extend_from_slice(b"ffffffffc0202000 t mod_fn\t[ext4]\nffffffffc0203000 T other_fn\t[kvm]\n");
        odd.extend_from_slice(b"ffffffffc0204000 t kvm_fn\t[kvm]\n");
        let mut kernel_odd = b"ffffffff81000000 T _text\nffffffff81000010 t a[1]\nffffffff81000020 T __entry_SYSCALL_64_trampoline\n".to_vec();
        kernel_odd.extend_from_slice(b"ffffffff81000030 t nul\0inside\nffffffff81000040 t $x\nffffffff81000050 T ");
        kernel_odd.extend_from_slice(&[b'n'; 600]);
        kernel_odd.extend_from_slice(b"\nffffffff81000060 t last");
        let texts: Vec<Vec<u8>> = vec![SAMPLE.to_vec(), odd, kernel_odd, std::fs::read(fixture).expect("fixture kallsyms")[..300_000].to_vec()];
        let summary = |k: Kallsyms| {
            let mut kernel = k.kernel;
            type Module = (String, Vec<(u64, u64, Option<String>)>);
            let mut modules: Vec<Module> =
                k.modules.into_iter().map(|(m, syms)| (m, syms.iter().map(|s| (s.start, s.end, s.plain_name().map(|n| n.to_string()))).collect())).collect();
            modules.sort();
            (kernel.listing(), modules)
        };
        for text in &texts {
            for reloc in [None, Some(("_text", 0xffffffff80000000))] {
                let whole = load_all(text.clone(), reloc).map(summary);
                assert!(whole.as_ref().is_some_and(|(k, _)| !k.is_empty()) || reloc.is_some());
                for piece in [1, 7, 64, 4096] {
                    let mut parser = Parser::default();
                    let mut got = Vec::new();
                    for chunk in text.chunks(piece) {
                        got.extend_from_slice(chunk);
                        parser.parse(&got, false);
                    }
                    parser.parse(&got, true);
                    assert_eq!(load_parsed(got, &mut parser, reloc).map(summary), whole, "pieces of {piece}");
                }
            }
        }
    }

    /// The kernel's symbols split off in place find what a new table of
    /// them finds, at every symbol's edges: perf's fixture kallsyms, odd
    /// lines, modules between kernel symbols, relocations both ways.
    #[test]
    fn split_in_place_finds_what_a_new_table_finds() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms");
        let mut odd = SAMPLE.to_vec();
        odd.extend_from_slice(b"ffffffffc0202000 t mod_fn\t[ext4]\nffffffffc0203000 T other_fn\t[kvm]\nffffffffc0203000 T kernel_too\n");
        odd.extend_from_slice(b"ffffffffc0203800 T __entry_SYSCALL_64_trampoline\nffffffffc0204000 t kvm_fn\t[kvm]\nffffffffc0204010 t after\n");
        let texts = [SAMPLE.to_vec(), odd, std::fs::read(fixture).expect("fixture kallsyms")];
        for text in &texts {
            for reloc in [None, Some(("_text", 0xffffffff80000000)), Some(("_text", 0xffffffff81200000))] {
                let load = |in_place| {
                    let mut parser = Parser::default();
                    parser.parse(text, true);
                    load_split(text.clone(), &mut parser, reloc, in_place).expect("loads")
                };
                let (mut a, mut b) = (load(true).kernel, load(false).kernel);
                let listing = a.listing();
                assert_eq!(listing, b.listing());
                for &(start, end, _) in &listing {
                    for ip in [start.wrapping_sub(1), start, start + 1, end.wrapping_sub(1), end] {
                        let (x, y) = (a.find(ip).map(|id| a.name(id)), b.find(ip).map(|id| b.name(id)));
                        assert_eq!(x, y, "{ip:#x}");
                    }
                }
            }
        }
    }

    /// A relocation that moves some addresses past the top and around to
    /// the bottom leaves the kernel's symbols in their new order.
    #[test]
    fn relocation_around_the_top() {
        // _text moves to 0xff..ffc0, helper past the top to 0.
        let mut t = load(SAMPLE, Some(("_text", 0xffff_ffff_ffff_ffc0))).unwrap();
        let v = t.listing();
        assert_eq!((v[0].0, v[0].2.as_ref()), (0, "helper"));
        assert_eq!((v[3].0, v[3].2.as_ref()), (0xffff_ffff_ffff_ffc0, "_text"));
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0), "{v:x?}");
    }

    /// Compacted, the text holds the kept names alone, each with its NUL,
    /// and every symbol reads the name it read before: dropped lines, a
    /// short address, a NUL inside a name, an empty name, a cut name
    /// (a name of its own, not in the text).
    #[test]
    fn names_compacted_read_as_before() {
        let text = b"ffffffff81000000 T _text\nffffffff81000008 r dropped\n10 t a\0b\nffffffff81000020 t \nffffffff81000030 t ok[1]\n20 t cut";
        let mut parser = Parser::default();
        parser.parse(text, true);
        let Kept { mut syms, ends, .. } = std::mem::take(&mut parser.kept);
        let read = |data: &[u8], s: &Sym| {
            s.strtab_offset().map(|at| data[at as usize..].iter().take_while(|&&c| c != 0 && c != b'\n').copied().collect::<Vec<u8>>())
        };
        let before: Vec<_> = syms.iter().map(|s| read(text, s)).collect();
        let mut data = text.to_vec();
        compact_names(&mut data, &mut syms, &ends);
        assert_eq!(data, b"_text\0a\0b\0\0ok[1]\0");
        let after: Vec<_> = syms.iter().map(|s| read(&data, s)).collect();
        assert_eq!(after, before);
        let names: Vec<Option<&[u8]>> = vec![Some(b"_text"), Some(b"a"), Some(b""), Some(b"ok[1]"), None];
        assert_eq!(after.iter().map(|n| n.as_deref()).collect::<Vec<_>>(), names);
        assert_eq!(syms[4].plain_name().map(|n| &**n), Some("cut"));
    }

    #[test]
    fn last_alias_wins_and_modules_go() {
        let mut t = load(SAMPLE, Some(("_text", 0xffffffff81000000))).unwrap();
        let v: Vec<_> = t.listing().into_iter().map(|(start, end, n)| (n.to_string(), start, end)).collect();
        assert_eq!(v[0], ("_text".to_string(), 0xffffffff81000000, 0xffffffff81000040));
        assert_eq!(v[1], ("helper".to_string(), 0xffffffff81000040, 0xffffffff81000100));
        assert_eq!(v[2].0, "weak_fn");
        // Last kernel symbol before a module symbol: end rounded up a page.
        assert_eq!(v[3], ("data_sym".to_string(), 0xffffffff81000200, 0xffffffff81002000));
        assert_eq!(v.len(), 4);
    }

    #[test]
    fn module_symbols_and_names() {
        let k = load_all(SAMPLE.to_vec(), None).unwrap();
        let m = &k.modules["[__builtin__ftrace]"];
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].plain_name().map(|n| &**n), Some("ftrace_trampoline"));
        assert_eq!(module_name("/lib/modules/6.1/kernel/fs/ext4/ext4.ko"), "[ext4]");
        assert_eq!(module_name("/lib/modules/x/snd-hda-codec.ko.xz"), "[snd_hda_codec]");
        assert_eq!(module_name("[kvm_intel]"), "[kvm_intel]");
    }

    #[test]
    fn relocation_and_missing_reference() {
        let mut t = load(SAMPLE, Some(("_text", 0xffffffff80000000))).unwrap();
        assert_eq!(t.span().unwrap().0, 0xffffffff80000000);
        assert!(load(SAMPLE, Some(("_nothere", 1))).is_none());
    }
}

//! Kernel symbols from a kallsyms file, as perf loads them
//! (`dso__load_kallsyms`): `T`/`W`/`D`/`B` symbols in either case, each
//! zero-sized and extended to the next (modules end at the next page),
//! same-address aliases reduced to the last one listed, module symbols
//! dropped (pstitch creates no module maps), and addresses shifted by the
//! boot relocation found through the reference symbol (`_text`).


use super::elf::{STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_OBJECT};
use super::elf::SectionBytes;
use perf_data::bytes::find_byte;
use super::symtab::{ModuleParts, NOT_MODULE, Sym, SymTab};

/// One kallsyms line: address, type letter, name (with `\t[module]`).
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
    let mut parser = Parser::default();
    parser.parse(data, true);
    parser.entries(data)
}

/// [`parse`] as the text arrives: lines are parsed as soon as what comes
/// after them cannot change how (see [`Parser::parse`]), so that the
/// parsing keeps up with a slow reader of `/proc/kallsyms`.
#[derive(Default)]
pub struct Parser {
    /// Where parsing goes on.
    pos: usize,
    /// (address, type, name's start and length) of each entry so far.
    found: Vec<(u64, u8, usize, usize)>,
    /// The symbols perf makes of the entries so far (see
    /// [`Parser::classify`]).
    kept: Kept,
}

/// The symbols of the entries classified so far, with what the load needs
/// to know of their names (each name is read once, as it arrives).
#[derive(Default)]
struct Kept {
    /// Entries of `found` classified.
    done: usize,
    /// Whether the names were placed in the file's bytes (which must then
    /// be addressable with 32-bit offsets).
    in_table: bool,
    syms: Vec<Sym>,
    /// Where the names placed in the file's bytes end (a newline each,
    /// turned into their NUL).
    ends: Vec<usize>,
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

impl Parser {
    /// Parses `data` (the text so far: what was given before, and more)
    /// from where the last call stopped. Unless `last`, it stops before the
    /// last two lines: a line is read up to the end of the next one at most
    /// (perf's swallowing), and the next may be incomplete.
    pub fn parse(&mut self, data: &[u8], last: bool) {
        const NAME_MAX: usize = 513;
        let n = data.len();
        let stop_at = if last {
            n
        } else {
            // Just after the second to last newline.
            let Some(l) = data.iter().rposition(|&c| c == b'\n') else { return };
            match data[..l].iter().rposition(|&c| c == b'\n') {
                Some(p) => p + 1,
                None => return,
            }
        };
        let mut i = self.pos;
        let read_to_eol = |i: &mut usize| {
            while *i < n {
                let c = data[*i];
                *i += 1;
                if c == b'\n' {
                    break;
                }
            }
        };
        while i < stop_at {
            // io__get_hex
            let mut addr: u64 = 0;
            let mut digits = 0;
            let stop;
            loop {
                if i >= n {
                    stop = None;
                    break;
                }
                let c = data[i];
                i += 1;
                match HEX[c as usize] {
                    NOT_HEX => {
                        stop = Some(c);
                        break;
                    }
                    d => {
                        addr = addr << 4 | d as u64;
                        digits += 1;
                    }
                }
            }
            if digits == 0 || stop != Some(b' ') {
                if stop.is_none() {
                    break;
                }
                read_to_eol(&mut i);
                continue;
            }
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
            let limit = n.min(start + NAME_MAX);
            // A kallsyms file is 120,000 lines: this is most of reading it.
            i = find_byte(&data[start..limit], b'\n').map_or(limit, |p| start + p);
            self.found.push((addr, typ, start, i - start));
            if i < n && data[i] == b'\n' {
                i += 1;
            }
        }
        self.pos = i;
    }

    /// Makes the symbols of the entries parsed since the last call (see
    /// [`load_parsed`]); call it as the text arrives, so that little is
    /// left for the load when the last of the text comes (it waits for the
    /// kernel to print every line).
    pub fn classify(&mut self, data: &[u8]) {
        let in_table = u32::try_from(data.len()).is_ok();
        let kept = &mut self.kept;
        if kept.done > 0 && kept.in_table != in_table {
            *kept = Kept::default();
        }
        kept.in_table = in_table;
        for &(addr, typ, at, len) in &self.found[kept.done..] {
            let name = &data[at..at + len];
            if !matches!(typ.to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') || name.first() == Some(&b'$') {
                continue;
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
            // A name cut at NAME_MAX or at the end of the file has no
            // newline to give up.
            let (sym, shown) = if in_table && data.get(end) == Some(&b'\n') {
                kept.ends.push(end);
                // Read back up to its first NUL (the one its newline
                // becomes, or one of its own).
                let shown = &name[..find_byte(name, 0).unwrap_or(len)];
                (Sym::in_strtab(addr, 0, binding, typ, (0, at as u32), false), shown)
            } else {
                let sym = Sym::new(addr, 0, binding, typ, crate::symbols::symtab::shared_str(name));
                (sym, &[][..])
            };
            let shown = sym.plain_name().map_or(shown, |n| n.as_bytes());
            let module = match kept.modules.number(shown) {
                NOT_MODULE => MODULE,
                n => n.min(MODULE - 1),
            };
            let tab = if find_byte(shown, b'\t').is_some() { TAB } else { 0 };
            let trampoline = if shown == b"__entry_SYSCALL_64_trampoline" { TRAMPOLINE } else { 0 };
            kept.syms.push(sym);
            kept.marks.push(module | tab | trampoline);
        }
        kept.done = self.found.len();
    }

    /// The entries found, their names in `data`.
    #[cfg(test)]
    pub fn entries<'a>(&self, data: &'a [u8]) -> Vec<Entry<'a>> {
        self.iter(data).collect()
    }

    fn iter<'a>(&self, data: &'a [u8]) -> impl Iterator<Item = Entry<'a>> + Clone {
        self.found.iter().map(|&(addr, typ, at, len)| Entry { addr, typ, name: &data[at..at + len] })
    }
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

/// perf's `kallsyms__get_function_start`: the first `T`/`W`/`A` symbol
/// with this name.
pub fn function_start<'a>(entries: impl IntoIterator<Item = Entry<'a>>, name: &str) -> Option<u64> {
    entries
        .into_iter()
        .find(|e| matches!(e.typ.to_ascii_uppercase(), b'T' | b'W' | b'A') && e.name == name.as_bytes())
        .map(|e| e.addr)
}

/// Kernel symbols, and module symbols by module name (`[ext4]`, absolute
/// addresses, names without the module tag).
pub struct Kallsyms {
    pub kernel: SymTab,
    pub modules: std::collections::HashMap<String, Vec<Sym>>,
}

/// The kernel's symbol table, or `None` where perf fails to load kallsyms
/// (the reference symbol is missing from the file).
#[cfg(test)]
pub fn load(data: &[u8], ref_reloc: Option<(&str, u64)>) -> Option<SymTab> {
    load_all(data.to_vec(), ref_reloc).map(|k| k.kernel)
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
pub fn load_parsed(mut data: Vec<u8>, parser: &mut Parser, ref_reloc: Option<(&str, u64)>) -> Option<Kallsyms> {
    parser.classify(&data);
    let delta = match ref_reloc {
        Some((name, addr)) => function_start(parser.iter(&data), name)?.wrapping_sub(addr),
        None => 0,
    };
    // The entries are symbols now: their list (32 bytes a line) need not
    // stay for the peak below.
    parser.found = Vec::new();
    let Kept { syms, ends, marks, .. } = std::mem::take(&mut parser.kept);
    // The names stay in the file's bytes, each ended by a NUL where its
    // newline was: one allocation rather than one per symbol.
    for end in ends {
        data[end] = 0;
    }
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
    // symbols are shifted by the boot relocation.
    let mut modules: std::collections::HashMap<String, Vec<Sym>> = std::collections::HashMap::new();
    let mut kernel = SymTab::default();
    kernel.use_strtab(names);
    // The kernel's symbols, shifted by the same delta, keep their order and
    // do not overlap after the fixups, so re-inserting them gives the same
    // lookups as perf's tree with the module symbols erased.
    let mut kept = Vec::with_capacity(marks.len());
    t.settle();
    for (id, s) in t.in_order() {
        let mark = marks[id as usize];
        let mut s = s.clone();
        if mark & TAB != 0 {
            let name = t.raw_name(id);
            let tab = find_byte(name, b'\t').unwrap_or(name.len());
            s.set_name(crate::symbols::symtab::shared_str(&name[..tab]));
            modules.entry(String::from_utf8_lossy(name.get(tab + 1..).unwrap_or_default()).into_owned()).or_default().push(s);
            continue;
        }
        if mark & TRAMPOLINE != 0 {
            continue;
        }
        s.start = s.start.wrapping_sub(delta);
        s.end = s.end.wrapping_sub(delta);
        kept.push(s);
    }
    // The table in file order has served: not both at once.
    drop(t);
    drop(marks);
    kernel.insert_all(kept);
    // Ready for lookups here, once: each copy handed out is too.
    kernel.prepare();
    Some(Kallsyms { kernel, modules })
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
            for piece in [1, 2, 3, 7, 64, 4096] {
                let mut parser = Parser::default();
                let mut got = Vec::new();
                for chunk in text.chunks(piece) {
                    got.extend_from_slice(chunk);
                    parser.parse(&got, false);
                }
                parser.parse(&got, true);
                assert_eq!(parser.entries(&got), whole, "pieces of {piece}");
            }
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
                        parser.classify(&got);
                    }
                    parser.parse(&got, true);
                    assert_eq!(load_parsed(got, &mut parser, reloc).map(summary), whole, "pieces of {piece}");
                }
            }
        }
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
        assert_eq!(t.first().unwrap().start, 0xffffffff80000000);
        assert!(load(SAMPLE, Some(("_nothere", 1))).is_none());
    }
}

//! The kernel's symbol table from kallsyms, in a compact read-only layout.
//!
//! A /proc/kallsyms is 120,000 symbols. Built with perf's rules in the
//! generic [`SymTab`] (its fixups, alias choices and overlap check, see
//! [`super::kallsyms`]), each costs 57 bytes there for the whole run: the
//! symbol (40), its place in address order and its start beside it (12),
//! the log of perf's tree (4), whether it is live (1). Lookups in a
//! finished table without overlapping symbols need none of that but the
//! starts: perf's tree walk finds what a search of the starts finds
//! ([`SymTab::find_id`]). So the kernel's table keeps, per symbol in
//! address order, 16 bytes:
//!
//! ```text
//!  starts [s0 s1 s2 ...]   u64, searched as SymTab searches its own
//!  lens   [l0 l1 l2 ...]   u32: end - start; LONG: the end is in `long_ends`
//!  names  [n0 n1 n2 ...]   u32: offset of the name (NUL-ended) in `text`;
//!                          OWN: the name is in `own_names`
//! ```
//!
//! and shares them between its copies (the reading side keeps one for
//! tracepoint text and `-S`; the printer has another). Names are shown as
//! they are (kallsyms names are not demangled) and read when printed.
//!
//! A table with overlapping symbols (perf's tree decides some lookups) or
//! names to demangle stays a [`SymTab`]: nothing else could answer as perf
//! does there.

use std::sync::Arc;

use super::elf::{SectionBytes, cstr_at};
use super::rbtree::NodeId;
use super::symtab::{Ordered, STRIDE, SymTab, holds, last_start_at_or_below, text};
use crate::fasthash::FastMap;

/// A `lens` entry: the symbol's end is in `long_ends`.
const LONG: u32 = u32::MAX;
/// A `names` entry: the symbol's name is in `own_names`.
const OWN: u32 = u32::MAX;

/// The kernel's symbols: lookups by address, each symbol named by its
/// index in address order.
#[derive(Debug, Clone)]
pub struct KernelTable {
    layout: Layout,
}

#[derive(Debug, Clone)]
enum Layout {
    Compact {
        core: Arc<Core>,
        /// Names shown so far, by index.
        shown: FastMap<NodeId, Arc<str>>,
    },
    /// Symbols that overlap, or names to demangle.
    Generic(Box<SymTab>),
}

/// See the module doc.
#[derive(Debug)]
struct Core {
    starts: Words<u64>,
    /// Every 64th start (see [`last_start_at_or_below`]).
    strides: Words<u64>,
    lens: Words<u32>,
    /// (index, end) of the symbols whose length is [`LONG`] or more (or
    /// that end before they start), by index.
    long_ends: Vec<(NodeId, u64)>,
    names: Words<u32>,
    /// (index, name) of the symbols with names of their own (or in a
    /// string table other than `text`), by index.
    own_names: Vec<(NodeId, Arc<str>)>,
    text: SectionBytes,
}

/// One of [`Core`]'s arrays: built in memory, or mapped from the kernel
/// symbol cache (`super::ksyms_cache`), where it lies 8-byte aligned in
/// this machine's byte order: only the pages lookups touch are read.
#[derive(Debug)]
enum Words<T> {
    Built(Vec<T>),
    /// Bytes that cast to `[T]` (checked by [`Words::mapped`]).
    Mapped(SectionBytes),
}

impl<T: bytemuck::Pod> Words<T> {
    /// `bytes` as an array of `T`, if they are aligned and a whole number
    /// of `T`s.
    fn mapped(bytes: SectionBytes) -> Option<Words<T>> {
        bytemuck::try_cast_slice::<u8, T>(&bytes).ok()?;
        Some(Words::Mapped(bytes))
    }
}

impl<T: bytemuck::Pod> std::ops::Deref for Words<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Words::Built(v) => v,
            Words::Mapped(b) => bytemuck::try_cast_slice(b).unwrap_or_default(),
        }
    }
}

/// A compact table's contents, as the kernel symbol cache writes them and
/// gives them back (see [`KernelTable::parts`], [`KernelTable::from_parts`]).
pub struct Parts<S, L, T> {
    pub starts: S,
    pub strides: S,
    pub lens: L,
    pub names: L,
    pub long_ends: Vec<(NodeId, u64)>,
    pub own_names: Vec<(NodeId, Arc<str>)>,
    pub text: T,
}

impl Default for KernelTable {
    fn default() -> KernelTable {
        KernelTable { layout: Layout::Generic(Box::default()) }
    }
}

impl KernelTable {
    /// The table `t` (fixed up) in the compact layout where it can be
    /// (see the module doc), ready for lookups.
    pub fn new(t: SymTab) -> KernelTable {
        match t.into_ordered() {
            Ok(ordered) => KernelTable { layout: Layout::Compact { core: Arc::new(Core::new(ordered)), shown: FastMap::default() } },
            Err(mut t) => {
                t.prepare();
                KernelTable { layout: Layout::Generic(t) }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        match &self.layout {
            Layout::Compact { core, .. } => core.starts.is_empty(),
            Layout::Generic(t) => t.is_empty(),
        }
    }

    /// The compact table's contents (`None`: the table is a generic one,
    /// which the cache does not store).
    pub fn parts(&self) -> Option<Parts<&[u64], &[u32], &[u8]>> {
        let Layout::Compact { core, .. } = &self.layout else { return None };
        Some(Parts {
            starts: &core.starts,
            strides: &core.strides,
            lens: &core.lens,
            names: &core.names,
            long_ends: core.long_ends.clone(),
            own_names: core.own_names.clone(),
            text: &core.text,
        })
    }

    /// A compact table from the contents [`KernelTable::parts`] gave, the
    /// arrays as mapped bytes; `None` unless they cast and agree in size
    /// (a start, a length and a name per symbol, a stride per 64, long
    /// ends and own names sorted by index). The rest is trusted to the
    /// file's checksum; lookups stay within the arrays whatever they hold.
    pub fn from_parts(p: Parts<SectionBytes, SectionBytes, SectionBytes>) -> Option<KernelTable> {
        let core = Core {
            starts: Words::mapped(p.starts)?,
            strides: Words::mapped(p.strides)?,
            lens: Words::mapped(p.lens)?,
            names: Words::mapped(p.names)?,
            long_ends: p.long_ends,
            own_names: p.own_names,
            text: p.text,
        };
        let n = core.starts.len();
        let by_index = |a: NodeId, b: NodeId| a < b && (b as usize) < n;
        let sound = core.lens.len() == n
            && core.names.len() == n
            && core.strides.len() == n.div_ceil(STRIDE)
            && core.long_ends.windows(2).all(|w| by_index(w[0].0, w[1].0))
            && core.long_ends.last().is_none_or(|l| (l.0 as usize) < n)
            && core.own_names.windows(2).all(|w| by_index(w[0].0, w[1].0))
            && core.own_names.last().is_none_or(|o| (o.0 as usize) < n);
        sound.then(|| KernelTable { layout: Layout::Compact { core: Arc::new(core), shown: FastMap::default() } })
    }

    /// The symbol perf's `symbols__find` finds for `ip`.
    pub fn find(&mut self, ip: u64) -> Option<NodeId> {
        match &mut self.layout {
            Layout::Compact { core, .. } => {
                let i = last_start_at_or_below(&core.starts, &core.strides, ip)?;
                let (start, end) = core.bounds(i);
                holds(start, end, ip).then_some(i as NodeId)
            }
            Layout::Generic(t) => t.find_id(ip),
        }
    }

    /// Symbol `i`'s start and (exclusive) end.
    pub fn bounds(&self, i: NodeId) -> (u64, u64) {
        match &self.layout {
            Layout::Compact { core, .. } => core.bounds(i as usize),
            Layout::Generic(t) => (t.get(i).start, t.get(i).end),
        }
    }

    /// The name perf prints for symbol `i`.
    pub fn name(&mut self, i: NodeId) -> Arc<str> {
        match &mut self.layout {
            Layout::Compact { core, shown } => shown
                .entry(i)
                .or_insert_with(|| match core.names[i as usize] {
                    OWN => core.own_names.binary_search_by_key(&i, |o| o.0).map_or_else(|_| "".into(), |at| core.own_names[at].1.clone()),
                    off => text(cstr_at(&core.text, off as usize)).into(),
                })
                .clone(),
            Layout::Generic(t) => t.name(i),
        }
    }

    /// The first symbol's start and the last one's end (address order).
    pub fn span(&mut self) -> Option<(u64, u64)> {
        match &mut self.layout {
            Layout::Compact { core, .. } => {
                let last = core.starts.len().checked_sub(1)?;
                Some((core.starts[0], core.bounds(last).1))
            }
            Layout::Generic(t) => Some((t.first()?.start, t.last()?.end)),
        }
    }

    /// (start, end, name) of every symbol in address order.
    #[cfg(test)]
    pub fn listing(&mut self) -> Vec<(u64, u64, Arc<str>)> {
        if let Layout::Generic(t) = &mut self.layout {
            return t.listing();
        }
        let n = match &self.layout {
            Layout::Compact { core, .. } => core.starts.len() as NodeId,
            Layout::Generic(_) => unreachable!(),
        };
        (0..n).map(|i| (self.bounds(i).0, self.bounds(i).1, self.name(i))).collect()
    }

    #[cfg(test)]
    fn is_compact(&self) -> bool {
        matches!(self.layout, Layout::Compact { .. })
    }
}

impl Core {
    /// The compact layout of `o`; `o`'s symbols go as their lengths and
    /// name offsets are taken (the starts stay as they are).
    fn new(o: Ordered) -> Core {
        let Ordered { starts, strides, order, syms, strtabs } = o;
        // One pass writing both arrays in place (zeroed pages from the
        // allocator, no pushes to check); the few exceptions go to the
        // side tables on the way, in order.
        let (mut lens, mut names) = (vec![0u32; order.len()], vec![0u32; order.len()]);
        let (mut long_ends, mut own_names) = (Vec::new(), Vec::new());
        for (i, ((len, name), &id)) in lens.iter_mut().zip(names.iter_mut()).zip(&order).enumerate() {
            let (i, s) = (i as NodeId, &syms[id as usize]);
            *len = match u32::try_from(s.end.wrapping_sub(s.start)) {
                Ok(l) if l != LONG && s.end >= s.start => l,
                _ => {
                    long_ends.push((i, s.end));
                    LONG
                }
            };
            *name = match s.as_is_strtab() {
                Some((0, off)) if off != OWN => off,
                Some((table, off)) => {
                    let name = strtabs.get(table as usize).map_or(&[][..], |t| cstr_at(t, off as usize));
                    own_names.push((i, text(name).into()));
                    OWN
                }
                None => {
                    // `into_ordered` lets through no other kind of name.
                    own_names.push((i, s.plain_name().cloned().unwrap_or_else(|| "".into())));
                    OWN
                }
            };
        }
        let text = strtabs.first().cloned().unwrap_or_default();
        Core { starts: Words::Built(starts), strides: Words::Built(strides), lens: Words::Built(lens), long_ends, names: Words::Built(names), own_names, text }
    }

    fn bounds(&self, i: usize) -> (u64, u64) {
        let start = self.starts[i];
        let end = match self.lens[i] {
            // A table from a cache file may lack the entry: no panic.
            LONG => self.long_ends.binary_search_by_key(&(i as NodeId), |l| l.0).map_or(start, |at| self.long_ends[at].1),
            len => start + u64::from(len),
        };
        (start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::elf::{STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_OBJECT};
    use crate::symbols::symtab::Sym;

    /// Every answer of `generic` (a settled table) and of the compact
    /// layout of a copy: the symbol found at and around every symbol's
    /// edges, `probes` and the ends of the address space, its bounds and
    /// name; the span; the listing.
    fn compare(mut generic: SymTab, probes: &[u64]) -> KernelTable {
        let mut compact = KernelTable::new(generic.clone());
        let listing = generic.listing();
        let mut ips: Vec<u64> = probes.to_vec();
        ips.extend([0, 1, u64::MAX - 1, u64::MAX]);
        for &(start, end, _) in &listing {
            for d in [0u64, 1, 2, 4095, 4096] {
                ips.extend([start.wrapping_sub(d), start.wrapping_add(d), end.wrapping_sub(d), end.wrapping_add(d)]);
            }
        }
        for ip in ips {
            let want = generic.find_id(ip).map(|id| (generic.get(id).start, generic.get(id).end, generic.name(id)));
            let got = compact.find(ip).map(|i| (compact.bounds(i).0, compact.bounds(i).1, compact.name(i)));
            assert_eq!(got, want, "{ip:#x}");
        }
        let span = (generic.first().map(|s| s.start), generic.last().map(|s| s.end));
        assert_eq!(compact.span(), span.0.zip(span.1));
        assert_eq!(compact.listing(), listing);
        assert_eq!(compact.is_empty(), listing.is_empty());
        compact
    }

    /// A kallsyms text of every kind perf's fixups treat apart, loaded
    /// the generic way and the compact way: aliases (the last listed
    /// wins), duplicates of one name, module symbols between kernel ones
    /// (the symbol before a module's ends at the next page), the entry
    /// trampoline, a name cut at perf's longest and one with a NUL, the
    /// last symbol (its end a page on), addresses past the end.
    #[test]
    fn kallsyms_lookups_answer_as_the_generic_table() {
        let mut text = b"ffffffff81000000 T srso_alias_untrain_ret\nffffffff81000000 T _stext\nffffffff81000000 T _text\n".to_vec();
        text.extend_from_slice(b"ffffffff81000040 t helper\nffffffff81000040 t helper\nffffffff81000080 R some_rodata\n");
        text.extend_from_slice(b"ffffffff81000100 W weak_fn\nffffffff81000100 T __weak_fn\nffffffff81000200 D data_sym\n");
        text.extend_from_slice(b"ffffffff81000400 t mod_fn\t[ext4]\nffffffff81000480 T other_fn\t[kvm]\nffffffff81003000 T kernel_after_modules\n");
        text.extend_from_slice(b"ffffffff81003600 T __entry_SYSCALL_64_trampoline\nffffffff81003700 t nul\0inside\nffffffff81003800 T ");
        text.extend_from_slice(&[b'n'; 600]);
        text.extend_from_slice(b"\nffffffff81004000 b bss_sym\nffffffff81004000 B bss_alias\nffffffff81004010 T last_one\n");
        text.extend_from_slice(b"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n");
        // A kernel symbol in the page after a module symbol's: the kernel
        // symbol before the module's reaches over it (perf's rounding to
        // the next page), so perf's tree decides.
        let mut tangled = text.clone();
        tangled.extend_from_slice(b"ffffffff81001000 T kernel_in_module_page\n");
        for (text, compact_layout) in [(&text, true), (&tangled, false)] {
            for reloc in [None, Some(("_text", 0xffffffff80000000))] {
                let generic = super::super::kallsyms::load_generic(text, reloc);
                let base = |a: u64| a.wrapping_sub(generic.1);
                let mut probes: Vec<u64> = (0..0x6000).step_by(8).map(|o| base(0xffffffff81000000 + o)).collect();
                probes.extend((0..0x3000).step_by(8).map(|o| base(0xffffffffc0200000 + o)));
                let mut compact = compare(generic.0, &probes);
                assert_eq!(compact.is_compact(), compact_layout);
                let names: Vec<String> = compact.listing().iter().map(|l| l.2.to_string()).collect();
                assert!(names.iter().any(|n| n.len() > 500 && n.bytes().all(|c| c == b'n')), "{names:?}");
                assert!(names.contains(&"nul".to_string()));
            }
        }
    }

    /// This machine's kind of kallsyms text: perf's fixture (tens of
    /// thousands of symbols, modules at the end).
    #[test]
    fn a_whole_kallsyms_answers_as_the_generic_table() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms");
        let text = std::fs::read(fixture).expect("fixture kallsyms");
        let (generic, _) = super::super::kallsyms::load_generic(&text, None);
        assert!(generic.len() > 10_000);
        let first = generic.clone().first().map(|s| s.start).unwrap();
        let mut rnd = crate::testing::rng(0x6a09_e667_f3bc_c908);
        let probes: Vec<u64> = (0..20_000).map(|_| first + rnd(1 << 26)).collect();
        assert!(compare(generic, &probes).is_compact());
    }

    fn sym(start: u64, len: u64, name: &str) -> Sym {
        Sym::new(start, len, STB_GLOBAL, STT_FUNC, name.into())
    }

    /// Tables built directly: zero-sized symbols (they hold their own
    /// address only), ends far past the start and before it, names of
    /// their own and in a string table, an empty table; the ones perf's
    /// tree decides (overlaps) or that demangle stay generic and answer
    /// the same.
    #[test]
    fn odd_tables_answer_as_the_generic_table() {
        let mut t = SymTab::default();
        t.insert_all(vec![sym(0x1000, 0, "zero"), sym(0x1010, 0x10, "sized"), sym(0x1020, 0, "zero2"), sym(0x2000, 1 << 40, "huge")]);
        let c = compare(t, &(0xff0..0x1100).collect::<Vec<_>>());
        assert!(c.is_compact());

        // An end before the start: perf's walk goes right at once, so
        // SymTab calls it an overlap.
        let mut t = SymTab::default();
        t.insert_all(vec![sym(0x1000, 0x10, "a"), sym(0x2000, 0x10, "b")]);
        let id = t.position(|s| s.start == 0x2000).unwrap();
        t.get_mut(id).end = 0x1800;
        assert!(!compare(t, &(0xff0..0x2100).collect::<Vec<_>>()).is_compact());

        // The last symbol reaching around the top of the address space.
        let mut t = SymTab::default();
        t.insert_all(vec![sym(0x1000, 0x10, "a"), sym(u64::MAX - 0x10, 0x20, "wraps")]);
        compare(t, &[u64::MAX - 0x11, u64::MAX - 0x10, 0x8]);

        let mut strtab = b"\0first\0second\0".to_vec();
        strtab.extend_from_slice(&[0xff, b'x', 0]);
        let mut t = SymTab::default();
        let table = t.use_strtab(SectionBytes::Owned(Arc::new(strtab))).unwrap();
        let other = t.use_strtab(SectionBytes::Owned(Arc::new(b"\0in_other\0".to_vec()))).unwrap();
        t.insert_all(vec![
            Sym::in_strtab(0x100, 8, STB_GLOBAL, STT_FUNC, (table, 1), false),
            Sym::in_strtab(0x108, 8, STB_LOCAL, STT_OBJECT, (table, 7), false),
            Sym::in_strtab(0x110, 8, STB_WEAK, STT_FUNC, (table, 14), false),
            Sym::in_strtab(0x118, 8, STB_GLOBAL, STT_FUNC, (other, 1), false),
            Sym::in_strtab(0x120, 8, STB_GLOBAL, STT_FUNC, (table, 1000), false),
            sym(0x128, 8, "own"),
        ]);
        assert!(compare(t, &(0xf0..0x140).collect::<Vec<_>>()).is_compact());

        // Overlapping symbols: the tree decides.
        let mut t = SymTab::default();
        t.insert_all(vec![sym(0x100, 0x100, "outer"), sym(0x140, 0x10, "inner"), sym(0x140, 0x20, "same_start")]);
        assert!(!compare(t, &(0xf0..0x220).collect::<Vec<_>>()).is_compact());

        // Names to demangle.
        let mut t = SymTab::default();
        t.insert_all(vec![Sym::mangled(0x100, 8, STB_GLOBAL, STT_FUNC, "_ZN3foo3barEv".into(), false)]);
        assert!(!compare(t, &[0x100, 0x104]).is_compact());

        let mut empty = compare(SymTab::default(), &[0, 5]);
        assert!(empty.is_compact() && empty.is_empty() && empty.span().is_none());
    }

    /// Random tables in the kallsyms manner (zero-sized symbols at few
    /// addresses, fixed up as kallsyms, aliases among them): every answer
    /// the same, nearly all compact.
    #[test]
    fn random_fixed_up_tables_answer_as_the_generic_table() {
        let mut rnd = crate::testing::rng(0xbb67_ae85_84ca_a73b);
        let mut compact = 0;
        for round in 0..150 {
            let mut t = SymTab::default();
            let syms: Vec<Sym> = (0..1 + rnd(200))
                .map(|i| {
                    // Modules pages above the kernel and each other, as in
                    // /proc/kallsyms; every fourth table has some among
                    // the kernel's symbols (perf's page rounding then
                    // reaches over symbols: the tree decides).
                    let module = (rnd(8) == 0).then(|| rnd(3));
                    let at = match module {
                        Some(m) if round % 4 != 0 => 0x10_0000 * (m + 1) + rnd(100) * 16,
                        _ => rnd(300) * 16,
                    };
                    let module = module.map_or_else(String::new, |m| format!("\t[m{m}]"));
                    let binding = [STB_GLOBAL, STB_WEAK, STB_LOCAL][rnd(3) as usize];
                    let name = format!("{}s{round}_{i}{}{module}", "_".repeat(rnd(3) as usize), "x".repeat(rnd(3) as usize));
                    Sym::new(0xffff_0000 + at, 0, binding, [STT_FUNC, STT_OBJECT][rnd(2) as usize], name.into())
                })
                .collect();
            t.insert_all(syms);
            t.fixup_end(true);
            t.fixup_duplicate();
            let probes: Vec<u64> = (0..600).map(|_| 0xffff_0000 + [rnd(300 * 16 + 8192), 0x10_0000 * (1 + rnd(3)) + rnd(100 * 16 + 8192)][rnd(2) as usize]).collect();
            compact += usize::from(compare(t, &probes).is_compact());
        }
        assert!(compact > 100, "{compact}");
    }

    /// Copies share the layout and answer alike, names shown in one or
    /// not.
    #[test]
    fn copies_share_the_layout() {
        let mut t = SymTab::default();
        t.insert_all(vec![sym(0x100, 8, "a"), sym(0x108, 8, "b")]);
        let mut k = KernelTable::new(t);
        let id = k.find(0x101).unwrap();
        assert_eq!(&*k.name(id), "a");
        let mut copy = k.clone();
        match (&k.layout, &copy.layout) {
            (Layout::Compact { core: a, .. }, Layout::Compact { core: b, .. }) => assert!(Arc::ptr_eq(a, b)),
            _ => panic!("compact"),
        }
        let id = copy.find(0x10f).unwrap();
        assert_eq!((&*copy.name(id), copy.bounds(id)), ("b", (0x108, 0x110)));
    }
}

//! A DSO's symbol table with perf's rules (`tools/perf/util/symbol.c`):
//! symbols in perf's red-black tree (equal addresses in insertion order),
//! zero-sized symbols extended to the next one (`symbols__fixup_end`),
//! same-address aliases reduced to one (`symbols__fixup_duplicate` /
//! `choose_best_symbol`), lookups walking the tree as perf's do.

use std::sync::Arc;

use super::demangle::{Shape, demangle, demangled_shape};
use super::elf::{STB_GLOBAL, STB_WEAK, STT_GNU_IFUNC, STT_NOTYPE, SectionBytes, cstr_at};
use crate::fasthash::FastMap;
use super::rbtree::{NodeId, RbTree};

/// `bytes` as text, invalid UTF-8 replaced. `from_utf8_lossy` alone walks
/// every name a byte at a time; valid text (nearly every name) is checked a
/// word at a time first.
pub fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.into(),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `bytes` as a shared string (invalid UTF-8 replaced, as perf's bytes
/// would print through a UTF-8 terminal).
pub fn shared_str(bytes: &[u8]) -> Arc<str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Arc::from(s),
        Err(_) => String::from_utf8_lossy(bytes).into(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sym {
    pub start: u64,
    /// Exclusive; equal to `start` for a zero-sized symbol.
    pub end: u64,
    raw: RawName,
    form: NameForm,
    pub binding: u8,
    pub typ: u8,
    /// An IFUNC symbol at the same address was dropped in its favour.
    pub ifunc_alias: bool,
}

/// A symbol's name as found. perf demangles every ELF symbol as it loads
/// it; pstitch leaves the name in the object file's string table and reads
/// (and demangles) it the first time it is needed — printing, or choosing
/// between aliases: most symbols of a large library are never named.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RawName {
    Owned(Arc<str>),
    /// NUL-terminated at offset `off` of the table's string table `table`
    /// ([`SymTab::use_strtab`]).
    Strtab { table: u8, off: u32 },
}

/// How the raw name becomes the name perf shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameForm {
    /// The raw name is the name.
    AsIs,
    /// The demangled raw name (or the raw name when it does not demangle).
    Demangled,
    /// The same followed by `@plt` (a PLT entry named after its target).
    DemangledPlt,
}

impl Sym {
    /// perf's `symbol__new`: `len` 0 gives `end == start`.
    pub fn new(start: u64, len: u64, binding: u8, typ: u8, name: Arc<str>) -> Sym {
        Sym::with_name(start, len, binding, typ, RawName::Owned(name), NameForm::AsIs)
    }

    /// A symbol whose name is shown demangled (`plt`: with `@plt` after it).
    pub fn mangled(start: u64, len: u64, binding: u8, typ: u8, raw: Arc<str>, plt: bool) -> Sym {
        let form = if plt { NameForm::DemangledPlt } else { NameForm::Demangled };
        Sym::with_name(start, len, binding, typ, RawName::Owned(raw), form)
    }

    /// A symbol named at offset `off` of string table `table` of the table
    /// it goes into (see [`SymTab::use_strtab`]), shown demangled or not.
    pub fn in_strtab(start: u64, len: u64, binding: u8, typ: u8, (table, off): (u8, u32), demangle: bool) -> Sym {
        let form = if demangle { NameForm::Demangled } else { NameForm::AsIs };
        Sym::with_name(start, len, binding, typ, RawName::Strtab { table, off }, form)
    }

    fn with_name(start: u64, len: u64, binding: u8, typ: u8, raw: RawName, form: NameForm) -> Sym {
        Sym { start, end: if len != 0 { start.wrapping_add(len) } else { start }, raw, form, binding, typ, ifunc_alias: false }
    }

    /// Renames the symbol (to a name shown as it is).
    pub fn set_name(&mut self, name: Arc<str>) {
        (self.raw, self.form) = (RawName::Owned(name), NameForm::AsIs);
    }

    /// Where the name of a symbol made with [`Sym::in_strtab`] starts in
    /// its string table; `None` for a name of its own.
    pub fn strtab_offset(&self) -> Option<u32> {
        match self.raw {
            RawName::Strtab { off, .. } => Some(off),
            RawName::Owned(_) => None,
        }
    }

    /// Moves a [`Sym::in_strtab`] name to offset `off` of the same table
    /// (the table's bytes were moved); a name of its own stays.
    pub fn move_strtab_name(&mut self, off: u32) {
        if let RawName::Strtab { off: o, .. } = &mut self.raw {
            *o = off;
        }
    }

    /// Where the name of a symbol made with [`Sym::in_strtab`] and shown as
    /// it is starts: (string table, offset).
    pub fn as_is_strtab(&self) -> Option<(u8, u32)> {
        match (&self.raw, self.form) {
            (RawName::Strtab { table, off }, NameForm::AsIs) => Some((*table, *off)),
            _ => None,
        }
    }

    /// The name of a symbol made with a name shown as it is ([`Sym::new`]);
    /// `None` for the others, whose names need their table.
    pub fn plain_name(&self) -> Option<&Arc<str>> {
        match (&self.raw, self.form) {
            (RawName::Owned(n), NameForm::AsIs) => Some(n),
            _ => None,
        }
    }
}

/// A DSO's symbols with perf's insertion, fixups and lookup.
///
/// perf keeps symbols in a red-black tree and looks an address up by
/// walking it from the root (`symbols__find`). The symbols in address order
/// are just a stable sort of the insertions (perf sends an equal address to
/// the right), and while the symbols do not overlap the walk finds exactly
/// what a binary search over that order finds, whatever the tree's shape.
/// So pstitch keeps the sorted order, and rebuilds perf's tree (replaying
/// every insertion and erasure, see [`super::rbtree`]) only for a table
/// with overlapping symbols, where the shape decides the answer.
///
/// ```text
///  syms   [s0 s1 s2 s3 s4]        arena, in insertion order (NodeId = index)
///  order  [s2 s0 s4 s1]           live ids by (start, insertion); s3 erased
///  log    [+0 +1 +2 +3 -3 +4]     for the tree, built only when needed
/// ```
#[derive(Debug, Default, Clone)]
pub struct SymTab {
    syms: Vec<Sym>,
    live: Vec<bool>,
    /// The live symbols in address order, and the search through them.
    index: Index,
    /// perf's tree, for tables whose symbols overlap.
    tree: Tree,
    /// Whether and where live symbols overlap.
    overlap: Overlap,
    /// Same-address alias choices put off until a lookup needs them.
    put_off: PutOff,
    /// Reading and showing names.
    names: Names,
    /// Tests: choose between aliases at once, as perf does.
    #[cfg(test)]
    eager_aliases: bool,
}

/// The live symbols in address order. Valid once [`SymTab::sync`] merged
/// the ids from `merged` on in; `starts` and `strides` are rebuilt with
/// `order`.
#[derive(Debug, Default, Clone)]
struct Index {
    /// Live ids in address order, once the ids from `merged` on are in.
    order: Vec<NodeId>,
    /// Ids are given in insertion order: those from here on were inserted
    /// since `order` was last brought up to date.
    merged: NodeId,
    /// The starts of `order`'s symbols, kept beside it: the passes over
    /// the table in address order read them in sequence rather than
    /// reaching into `syms` (a large library's symbols are megabytes, in
    /// file order) for each.
    starts: Vec<u64>,
    /// Every [`STRIDE`]th of `starts`: the search goes through these
    /// first (a few kilobytes, which stay in cache), then within one stride.
    strides: Vec<u64>,
}

/// perf's red-black tree, replayed from the log of insertions and
/// erasures only when the shape decides a lookup (overlapping symbols).
/// `walked` is valid while the tree and the symbols' ends stay as they are.
#[derive(Debug, Default, Clone)]
struct Tree {
    /// Insertions (`id`) and erasures (`id | ERASED`) in the order done.
    log: Vec<u32>,
    /// perf's tree, with the log replayed up to `replayed`.
    exact: Option<RbTree<()>>,
    replayed: usize,
    /// Walks over `exact` so far: by the lowest address of each, the
    /// highest and what they found (see [`walk`]).
    walked: std::collections::BTreeMap<u64, (u64, Option<NodeId>)>,
}

/// Whether live symbols overlap; `tangled` is valid while `overlaps` is
/// known (both are forgotten at every change).
#[derive(Debug, Default, Clone)]
struct Overlap {
    /// `None`: not known since the last change.
    overlaps: Option<bool>,
    /// Where symbols overlap, which of `order`'s symbols are tangled with
    /// another (see [`SymTab::find_id`]).
    tangled: Vec<bool>,
}

/// Same-address aliases whose choice waits for a lookup (see
/// [`SymTab::fixup_duplicate`]), and where the erasures their choices
/// make go in the tree's log once made.
#[derive(Debug, Default, Clone)]
struct PutOff {
    /// By the member standing for them in `order`.
    pending: FastMap<NodeId, Aliases>,
    /// Erasures of alias choices made late: where they go in `log`, in
    /// the order they would have been made (see [`SymTab::materialize`]).
    /// (place in `log`, order, range in `unlogged_ids`).
    unlogged: Vec<(usize, u64, std::ops::Range<u32>)>,
    unlogged_ids: Vec<u32>,
    /// The members of every group in `pending` (see [`Aliases`]).
    alias_members: Vec<NodeId>,
    /// Alias groups put off so far (their order among equal log positions).
    seq: u64,
}

/// Names: the string tables they are read from, and what was shown.
#[derive(Debug, Default, Clone)]
struct Names {
    /// The string tables of [`RawName::Strtab`] names.
    strtabs: Vec<SectionBytes>,
    /// Names shown so far, other than plain owned ones.
    shown: FastMap<NodeId, Arc<str>>,
    /// [`SymTab::shape`]s so far: the alias choice compares a symbol
    /// with each of the others at its address, in each table read.
    shapes: FastMap<NodeId, Shape>,
}

const ERASED: u32 = 1 << 31;

/// A table taken apart by [`SymTab::into_ordered`].
pub struct Ordered {
    /// The symbols' starts in address order, and [`strides_of`] them.
    pub starts: Vec<u64>,
    pub strides: Vec<u64>,
    /// The symbols' ids in the same order, and the symbols by id (erased
    /// ones too).
    pub order: Vec<NodeId>,
    pub syms: Vec<Sym>,
    /// The string tables the names are in ([`Sym::as_is_strtab`]).
    pub strtabs: Vec<SectionBytes>,
}

/// See [`SymTab::fixup_end_by`]: a kallsyms name without a module part
/// (every name of a table that is not kallsyms).
pub const NOT_MODULE: u32 = u32::MAX;

/// Numbers the module parts of kallsyms names ("name\t[module]": from the
/// `[` on, as perf's `symbols__fixup_end` compares them), equal parts
/// alike, in the order first seen.
#[derive(Default)]
pub struct ModuleParts(FastMap<Box<[u8]>, u32>);

impl ModuleParts {
    /// The number of `name`'s module part; [`NOT_MODULE`] if it has none.
    pub fn number(&mut self, name: &[u8]) -> u32 {
        let Some(p) = perf_data::bytes::find_byte(name, b'[') else { return NOT_MODULE };
        if let Some(&n) = self.0.get(&name[p..]) {
            return n;
        }
        let n = self.0.len() as u32;
        self.0.insert(name[p..].into(), n);
        n
    }
}

/// See [`SymTab::last_start_at_or_below`]: 64 starts are eight cache lines.
pub const STRIDE: usize = 64;

/// Symbols at one address with one end, the alias choice between them put
/// off (see [`SymTab::fixup_duplicate`]).
#[derive(Debug, Clone)]
struct Aliases {
    /// In perf's tree order (the first stands for them in `order`): a
    /// range of [`SymTab::alias_members`].
    members: std::ops::Range<u32>,
    /// Where in `log` the erasures go.
    at: usize,
    seq: u64,
    /// Symbols a later table added at the address, with the same end: the
    /// choice perf made in that table's pass, between the survivor of the
    /// ones before and these (members, `at`, `seq` as above), put off too.
    later: Vec<(std::ops::Range<u32>, usize, u64)>,
}

impl SymTab {
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        self.index.order.len() + self.unsorted().len()
    }

    /// Keeps `strtab` for [`Sym::in_strtab`] names and says which table it
    /// is; `None` if it is too large for 32-bit offsets (or there are too
    /// many): give the symbols names of their own then.
    /// Lets the kernel drop the pages of the mapped string tables (read
    /// again from the page cache when a name is next needed).
    pub fn release_pages(&self) {
        for t in &self.names.strtabs {
            t.release_pages();
        }
    }

    pub fn use_strtab(&mut self, strtab: SectionBytes) -> Option<u8> {
        u32::try_from(strtab.len()).ok()?;
        if let Some(i) = self.names.strtabs.iter().position(|t| t.as_ptr() == strtab.as_ptr() && t.len() == strtab.len()) {
            return u8::try_from(i).ok();
        }
        let i = u8::try_from(self.names.strtabs.len()).ok()?;
        self.names.strtabs.push(strtab);
        Some(i)
    }

    /// The symbol `id`.
    pub fn get(&self, id: NodeId) -> &Sym {
        &self.syms[id as usize]
    }

    /// The name of `s` in the object file.
    fn raw<'a>(&'a self, s: &'a Sym) -> &'a [u8] {
        match &s.raw {
            RawName::Owned(n) => n.as_bytes(),
            RawName::Strtab { table, off } => self.names.strtabs.get(*table as usize).map_or(&[][..], |t| cstr_at(t, *off as usize)),
        }
    }

    /// The name perf prints for symbol `id`.
    pub fn name(&mut self, id: NodeId) -> Arc<str> {
        let s = &self.syms[id as usize];
        if let Some(n) = s.plain_name() {
            return n.clone();
        }
        if let Some(n) = self.names.shown.get(&id) {
            return n.clone();
        }
        let raw = text(self.raw(s));
        let shown: Arc<str> = match s.form {
            NameForm::AsIs => raw.into(),
            NameForm::Demangled => demangle(&raw).map_or_else(|| raw.into(), Into::into),
            NameForm::DemangledPlt => format!("{}@plt", demangle(&raw).as_deref().unwrap_or(&raw)).into(),
        };
        self.names.shown.insert(id, shown.clone());
        shown
    }

    /// [`Shape`] of [`SymTab::name`], without keeping the name.
    fn shape(&mut self, id: NodeId) -> Shape {
        if let Some(shape) = self.names.shapes.get(&id) {
            return *shape;
        }
        let s = &self.syms[id as usize];
        let shape = if let Some(n) = s.plain_name().or_else(|| self.names.shown.get(&id)) {
            Shape::of(n)
        } else {
            let raw = text(self.raw(s));
            match s.form {
                NameForm::AsIs => Shape::of(&raw),
                NameForm::Demangled => demangled_shape(&raw).unwrap_or_else(|| Shape::of(&raw)),
                NameForm::DemangledPlt => Shape::of(&format!("{}@plt", demangle(&raw).as_deref().unwrap_or(&raw))),
            }
        };
        self.names.shapes.insert(id, shape);
        shape
    }

    /// (start, end, name) of every symbol in address order.
    #[cfg(test)]
    pub fn listing(&mut self) -> Vec<(u64, u64, Arc<str>)> {
        self.sync();
        self.choose_all();
        let order = self.index.order.clone();
        order.into_iter().map(|id| (self.syms[id as usize].start, self.syms[id as usize].end, self.name(id))).collect()
    }

    /// perf's `symbols__insert`: equal addresses end up after the ones
    /// present.
    pub fn insert(&mut self, sym: Sym) -> NodeId {
        let id = self.syms.len() as NodeId;
        self.syms.push(sym);
        self.live.push(true);
        self.tree.log.push(id);
        self.overlap.overlaps = None;
        id
    }

    /// Inserts symbols one after the other, in the order given (as
    /// [`SymTab::insert`] does each); the first table's vector becomes the
    /// table rather than being copied into it.
    pub fn insert_all(&mut self, new: Vec<Sym>) {
        let first = self.syms.len() as NodeId;
        if self.syms.is_empty() {
            self.syms = new;
        } else {
            self.syms.extend(new);
        }
        let end = self.syms.len() as NodeId;
        if end > first {
            self.live.resize(end as usize, true);
            self.tree.log.extend(first..end);
            self.overlap.overlaps = None;
        }
        self.sync();
    }

    /// The ids inserted since `order` was last brought up to date.
    fn unsorted(&self) -> std::ops::Range<NodeId> {
        self.index.merged..self.syms.len() as NodeId
    }

    /// Merges the recent insertions into `order`.
    fn sync(&mut self) {
        let new = self.unsorted();
        if new.is_empty() {
            return;
        }
        self.index.merged = new.end;
        let first = new.start;
        let added = &self.syms[new.start as usize..];
        let last = self.index.order.last().map(|&id| (*self.index.starts.last().expect("starts beside order"), id));
        // Tables often come in address order (kallsyms, a table rebuilt
        // from another), after what the table holds (the new ids are above
        // the table's, so an equal start is in order too): a pass tells,
        // and they are appended as they are (no pairs: for kallsyms they
        // would be 2 MB more at the load's peak).
        if last.is_none_or(|l| l.0 <= added[0].start) && added.windows(2).all(|w| w[0].start <= w[1].start) {
            self.index.order.extend(new);
            self.index.starts.extend(added.iter().map(|s| s.start));
            return;
        }
        // Sorted as (start, id) pairs side by side: far fewer cache misses
        // than reaching into the symbols for every comparison. Insertions
        // come in id order, so a stable sort by start is the sort by
        // (start, id).
        let mut pairs: Vec<(u64, NodeId)> = added.iter().zip(first..).map(|(s, id)| (s.start, id)).collect();
        if !pairs.windows(2).all(|w| w[0].0 <= w[1].0) {
            radix_sort_by_start(&mut pairs);
        }
        if last.is_none_or(|l| l < pairs[0]) {
            self.index.order.extend(pairs.iter().map(|&(_, id)| id));
            self.index.starts.extend(pairs.iter().map(|&(start, _)| start));
        } else {
            let (old, old_starts) = (std::mem::take(&mut self.index.order), std::mem::take(&mut self.index.starts));
            self.index.order.reserve(old.len() + pairs.len());
            self.index.starts.reserve(old.len() + pairs.len());
            merge_by_start((&old_starts, &old), &pairs, |start, id| {
                self.index.starts.push(start);
                self.index.order.push(id);
            });
        }
    }

    /// Brings the table to the state [`SymTab::in_order`] reads: every
    /// insertion in place, every alias choice made.
    pub fn settle(&mut self) {
        self.sync();
        self.choose_all();
    }

    /// The ids and symbols in address order, as [`SymTab::iter`] gives
    /// them; call [`SymTab::settle`] first.
    pub fn in_order(&self) -> impl Iterator<Item = (NodeId, &Sym)> + '_ {
        debug_assert!(self.unsorted().is_empty() && self.put_off.pending.is_empty(), "settled");
        self.index.order.iter().map(|&id| (id, &self.syms[id as usize]))
    }

    /// The table taken apart for a read-only layout of it (`ktable`),
    /// where lookups need no more than [`last_start_at_or_below`] and
    /// [`holds`]: every insertion and alias choice made, no symbols
    /// overlapping (the tree never decides a lookup), every name shown as
    /// it is (no demangling). The table as it was otherwise.
    pub fn into_ordered(mut self) -> Result<Ordered, Box<SymTab>> {
        self.settle();
        if self.has_overlaps() || self.syms.iter().any(|s| s.form != NameForm::AsIs) {
            return Err(Box::new(self));
        }
        // The log, the tree and the marks of erased symbols go here.
        let SymTab { syms, index, names, .. } = self;
        Ok(Ordered { strides: strides_of(&index.starts), starts: index.starts, order: index.order, syms, strtabs: names.strtabs })
    }

    /// Symbol `id`'s name in the object file.
    pub fn raw_name(&self, id: NodeId) -> &[u8] {
        self.raw(&self.syms[id as usize])
    }

    pub fn first(&mut self) -> Option<&Sym> {
        self.sync();
        self.choose_all();
        self.index.order.first().map(|&id| &self.syms[id as usize])
    }

    pub fn last(&mut self) -> Option<&Sym> {
        self.sync();
        self.choose_all();
        self.index.order.last().map(|&id| &self.syms[id as usize])
    }

    /// The symbol `id` (its start must not change: it is the tree's key).
    pub fn get_mut(&mut self, id: NodeId) -> &mut Sym {
        if self.put_off.pending.contains_key(&id) {
            self.choose_all();
        }
        self.overlap.overlaps = None;
        self.names.shown.remove(&id);
        self.names.shapes.remove(&id);
        &mut self.syms[id as usize]
    }

    /// The node of the first symbol (in address order) matching `f`.
    pub fn position(&mut self, mut f: impl FnMut(&Sym) -> bool) -> Option<NodeId> {
        self.sync();
        self.choose_all();
        self.index.order.iter().copied().find(|&id| f(&self.syms[id as usize]))
    }

    pub fn remove(&mut self, id: NodeId) {
        self.sync();
        self.choose_all();
        if let Some(i) = self.index.order.iter().position(|&x| x == id) {
            self.index.order.remove(i);
            self.index.starts.remove(i);
            self.erased(id);
        }
    }

    /// Records the erasure of `id` (already taken out of `order`).
    fn erased(&mut self, id: NodeId) {
        self.live[id as usize] = false;
        self.tree.log.push(id | ERASED);
        self.overlap.overlaps = None;
    }

    /// perf's `maps__split_kallsyms` in place, on a settled table: the
    /// symbols `gone` names are erased in address order (perf moves them
    /// to module maps or drops them), every symbol is shifted down by
    /// `delta`. `false`, and the table as it was, where the shift would
    /// change the symbols' order (an address wraps around) or perf's tree
    /// was built already: the caller makes a new table then.
    pub fn erase_and_shift(&mut self, gone: impl Fn(NodeId) -> bool, delta: u64) -> bool {
        debug_assert!(self.unsorted().is_empty() && self.put_off.pending.is_empty(), "settled");
        if self.tree.exact.is_some() || self.tree.replayed > 0 {
            return false;
        }
        // Every symbol, erased ones too (perf's tree is replayed with
        // them), keeps its place among the others: the shift is a rotation,
        // which keeps the order of an interval without its wrapping point.
        let lowest = self.syms.iter().map(|s| s.start).min();
        let highest = self.syms.iter().map(|s| s.start).max();
        if let (Some(lo), Some(hi)) = (lowest, highest)
            && hi.wrapping_sub(delta) < lo.wrapping_sub(delta)
        {
            return false;
        }
        if delta != 0 {
            for s in &mut self.syms {
                s.start = s.start.wrapping_sub(delta);
                s.end = s.end.wrapping_sub(delta);
            }
            for start in &mut self.index.starts {
                *start = start.wrapping_sub(delta);
            }
        }
        // The ones that stay are moved down in place.
        let (mut order, mut starts) = (std::mem::take(&mut self.index.order), std::mem::take(&mut self.index.starts));
        let mut kept = 0;
        for i in 0..order.len() {
            let id = order[i];
            if gone(id) {
                self.erased(id);
            } else {
                (order[kept], starts[kept]) = (id, starts[i]);
                kept += 1;
            }
        }
        order.truncate(kept);
        starts.truncate(kept);
        self.index.order = order;
        self.index.starts = starts;
        self.overlap.overlaps = None;
        self.tree.walked.clear();
        true
    }

    /// perf's `symbols__fixup_end`: a zero-sized symbol ends where the next
    /// one starts (kallsyms: not across the kernel/module boundary), the
    /// last one at the page after its start.
    pub fn fixup_end(&mut self, is_kallsyms: bool) {
        if !is_kallsyms {
            return self.fixup_end_by(|_| NOT_MODULE);
        }
        let mut parts = ModuleParts::default();
        let modules: Vec<u32> = (0..self.syms.len() as NodeId).map(|id| parts.number(self.raw(&self.syms[id as usize]))).collect();
        self.fixup_end_by(|id| modules[id as usize]);
    }

    /// [`SymTab::fixup_end`] for kallsyms with the module part of each
    /// symbol's name known: `module(id)` numbers it ([`NOT_MODULE`]: the
    /// name has none), equal parts by equal numbers.
    pub fn fixup_end_by(&mut self, module: impl Fn(NodeId) -> u32) {
        self.sync();
        self.overlap.overlaps = None;
        let Some(&last) = self.index.order.last() else { return };
        // In place: each symbol's new end depends on its own end and start
        // and its successor's start (from `starts`), and each symbol is
        // the predecessor once, so no end read was changed before.
        let (order, starts) = (&self.index.order, &self.index.starts);
        let mut curr_mod = module(order[0]);
        for i in 1..order.len() {
            let (p, c) = (order[i - 1], order[i]);
            let prev_mod = curr_mod;
            curr_mod = module(c);
            let prev = &mut self.syms[p as usize];
            if prev.end != prev.start {
                continue;
            }
            // Not across the kernel/module boundary or between modules.
            prev.end = if prev_mod != curr_mod { roundup_page(prev.end.wrapping_add(4096)) } else { starts[i] };
        }
        let l = &mut self.syms[last as usize];
        if l.end == l.start {
            l.end = roundup_page(l.start).wrapping_add(4096);
        }
    }

    /// perf's `symbols__fixup_duplicate`: of symbols at one address, keep
    /// the one `choose_best_symbol` prefers, erasing the others in the
    /// order perf does.
    pub fn fixup_duplicate(&mut self) {
        self.sync();
        // The survivors are moved down in place (`kept` of them so far):
        // a second order and starts would be 1.5 MB more for kallsyms.
        let (mut order, mut starts) = (std::mem::take(&mut self.index.order), std::mem::take(&mut self.index.starts));
        let mut kept = 0;
        let mut keep = |order: &mut Vec<NodeId>, starts: &mut Vec<u64>, id: NodeId, start: u64| {
            order[kept] = id;
            starts[kept] = start;
            kept += 1;
        };
        let mut run: Vec<NodeId> = Vec::new();
        let mut erased = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let start = starts[i];
            let mut j = i + 1;
            while j < order.len() && starts[j] == start {
                j += 1;
            }
            if j == i + 1 {
                let id = order[i];
                keep(&mut order, &mut starts, id, start);
                i = j;
                continue;
            }
            // A group put off before and joined by new symbols: its choice
            // first (perf made it in the pass that read the group).
            run.clear();
            run.extend_from_slice(&order[i..j]);
            // Aliases with one end (and a size) leave the same symbol at the
            // address whichever wins: what perf's tree finds there, and
            // whether symbols overlap, does not depend on the choice, which
            // demangles both names of most pairs. So it waits until a
            // lookup lands there (or perf's tree is needed). Erasures keep
            // their place in the log.
            let end = self.syms[run[0] as usize].end;
            let one_end = !self.eager_aliases() && end != start && run.iter().all(|&id| self.syms[id as usize].end == end);
            let joined = self.put_off.pending.contains_key(&run[0]);
            if one_end {
                self.put_off.seq += 1;
                let at = self.tree.log.len();
                let from = self.put_off.alias_members.len() as u32;
                // A group put off before and joined by new symbols: this
                // pass's choice is between its survivor and them.
                self.put_off.alias_members.extend_from_slice(&run[usize::from(joined)..]);
                let members = from..self.put_off.alias_members.len() as u32;
                match self.put_off.pending.get_mut(&run[0]) {
                    Some(group) => group.later.push((members, at, self.put_off.seq)),
                    None => _ = self.put_off.pending.insert(run[0], Aliases { members, at, seq: self.put_off.seq, later: Vec::new() }),
                }
                keep(&mut order, &mut starts, run[0], start);
                i = j;
                continue;
            }
            // A group put off before and joined by other new symbols: its
            // choice first (perf made it in the pass that read the group).
            if joined {
                run[0] = self.choose_now(run[0]);
            }
            erased.clear();
            let survivor = self.fold_aliases(&run, &mut erased);
            for &id in &erased {
                self.erased(id);
            }
            keep(&mut order, &mut starts, survivor, start);
            i = j;
        }
        order.truncate(kept);
        starts.truncate(kept);
        self.index.order = order;
        self.index.starts = starts;
    }

    fn eager_aliases(&self) -> bool {
        #[cfg(test)]
        return self.eager_aliases;
        #[cfg(not(test))]
        false
    }

    /// perf's choice among `run` (symbols at one address, in tree order):
    /// the survivor; the others go to `erased` in the order perf erases
    /// them.
    fn fold_aliases(&mut self, run: &[NodeId], erased: &mut Vec<NodeId>) -> NodeId {
        let mut curr = run[0];
        for &next in &run[1..] {
            let (c_ifunc, n_ifunc) = (self.syms[curr as usize].typ == STT_GNU_IFUNC, self.syms[next as usize].typ == STT_GNU_IFUNC);
            if self.choose_best(curr, next) {
                if n_ifunc {
                    self.syms[curr as usize].ifunc_alias = true;
                }
                // Compare the same symbol with its new successor.
                erased.push(next);
            } else {
                if c_ifunc {
                    self.syms[next as usize].ifunc_alias = true;
                }
                erased.push(curr);
                curr = next;
            }
        }
        curr
    }

    /// Makes the alias choice put off for the group `rep` stands for: the
    /// survivor, which the caller puts in `rep`'s place in `order`.
    fn choose_now(&mut self, rep: NodeId) -> NodeId {
        let Some(group) = self.put_off.pending.remove(&rep) else { return rep };
        let members = std::mem::take(&mut self.put_off.alias_members);
        let mut erased = std::mem::take(&mut self.put_off.unlogged_ids);
        let mut run = Vec::new();
        let mut survivor = None;
        for (range, at, seq) in std::iter::once((group.members, group.at, group.seq)).chain(group.later) {
            run.clear();
            run.extend(survivor);
            run.extend_from_slice(&members[range.start as usize..range.end as usize]);
            let from = erased.len();
            survivor = Some(self.fold_aliases(&run, &mut erased));
            for id in &mut erased[from..] {
                self.live[*id as usize] = false;
                *id |= ERASED;
            }
            self.put_off.unlogged.push((at, seq, from as u32..erased.len() as u32));
        }
        self.put_off.alias_members = members;
        self.put_off.unlogged_ids = erased;
        if self.put_off.pending.is_empty() {
            self.put_off.alias_members.clear();
        }
        survivor.unwrap_or(rep)
    }

    /// Makes every choice put off, in `order` too.
    fn choose_all(&mut self) {
        if self.put_off.pending.is_empty() {
            return;
        }
        self.sync();
        for i in 0..self.index.order.len() {
            let id = self.index.order[i];
            if self.put_off.pending.contains_key(&id) {
                self.index.order[i] = self.choose_now(id);
            }
        }
    }

    /// The log as perf's insertions and erasures came: every choice made,
    /// its erasures where they belong.
    fn materialize(&mut self) {
        self.choose_all();
        if self.put_off.unlogged.is_empty() {
            return;
        }
        let mut late = std::mem::take(&mut self.put_off.unlogged);
        let ids = std::mem::take(&mut self.put_off.unlogged_ids);
        late.sort_by_key(|&(at, seq, _)| (at, seq));
        debug_assert!(late[0].0 >= self.tree.replayed);
        let mut log = Vec::with_capacity(self.tree.log.len() + ids.len());
        let mut from = 0;
        for (at, _, range) in late {
            let at = at.min(self.tree.log.len());
            log.extend_from_slice(&self.tree.log[from..at]);
            log.extend_from_slice(&ids[range.start as usize..range.end as usize]);
            from = at;
        }
        log.extend_from_slice(&self.tree.log[from..]);
        self.tree.log = log;
    }

    /// perf's `symbols__find`: walk down from the root, left while the
    /// address is below a node's start, right while it is at or past its
    /// end; a zero-sized symbol matches its own address only. With
    /// overlapping symbols this is what perf finds, not necessarily the
    /// innermost or nearest symbol.
    ///
    /// The walk finds what a binary search finds whenever the last symbol
    /// starting at or below `ip` is tangled with no other (no symbol reaches
    /// into it, it reaches into none, its end is not before its start): no
    /// other symbol can hold `ip`, and every node on the way steers toward
    /// it. Only addresses whose candidate is tangled take the walk.
    pub fn find_id(&mut self, ip: u64) -> Option<NodeId> {
        self.sync();
        let overlaps = self.has_overlaps();
        // The last symbol starting at or below ip is the only candidate.
        let i = self.last_start_at_or_below(ip)?;
        if overlaps && self.overlap.tangled[i] {
            return self.exact_find(ip);
        }
        let mut id = self.index.order[i];
        if self.put_off.pending.contains_key(&id) {
            let survivor = self.choose_now(id);
            self.index.order[i] = survivor;
            id = survivor;
        }
        let s = &self.syms[id as usize];
        holds(s.start, s.end, ip).then_some(id)
    }

    /// The index in `order` of the last symbol starting at or below `ip`.
    fn last_start_at_or_below(&self, ip: u64) -> Option<usize> {
        last_start_at_or_below(&self.index.starts, &self.index.strides, ip)
    }

    #[cfg(test)]
    pub fn find(&mut self, ip: u64) -> Option<&Sym> {
        let id = self.find_id(ip)?;
        Some(&self.syms[id as usize])
    }

    /// Whether perf's walk could differ from a binary search: two symbols
    /// whose ranges meet or share a start, or one that ends before it
    /// starts (it still steers the walk).
    fn has_overlaps(&mut self) -> bool {
        if let Some(o) = self.overlap.overlaps {
            return o;
        }
        let bad = |s: &Sym| s.end < s.start;
        let o = self.index.order.iter().zip(self.index.starts.iter().skip(1).map(Some).chain([None])).any(|(&id, next)| {
            let a = &self.syms[id as usize];
            bad(a) || next.is_some_and(|&b| a.start >= b || a.end > b)
        });
        self.overlap.overlaps = Some(o);
        self.tree.walked.clear();
        self.index.strides = strides_of(&self.index.starts);
        self.overlap.tangled.clear();
        if o {
            // A symbol is tangled if an earlier one reaches its start (the
            // one reaching furthest is then tangled too: it holds both), or
            // if it ends before it starts.
            self.overlap.tangled.resize(self.index.order.len(), false);
            let mut reach: Option<(u64, usize)> = None;
            for (i, &id) in self.index.order.iter().enumerate() {
                let s = &self.syms[id as usize];
                if bad(s) {
                    self.overlap.tangled[i] = true;
                }
                if let Some((end, holder)) = reach
                    && end >= s.start
                {
                    self.overlap.tangled[i] = true;
                    self.overlap.tangled[holder] = true;
                }
                let end = s.end.max(s.start);
                if reach.is_none_or(|(e, _)| end > e) {
                    reach = Some((end, i));
                }
            }
        }
        o
    }

    /// The walk over perf's tree, brought up to date first.
    /// Does now what the first lookup would otherwise do: the order, the
    /// overlap check, and perf's tree where that decides lookups (so that
    /// the loader thread does it, not the printer).
    pub fn prepare(&mut self) {
        self.sync();
        if self.has_overlaps() {
            self.exact_find(0);
        }
    }

    fn exact_find(&mut self, ip: u64) -> Option<NodeId> {
        // A change since the last overlap check (`overlaps` unknown) may
        // have moved an end the walks went by.
        if self.overlap.overlaps.is_none() {
            self.tree.walked.clear();
        }
        self.materialize();
        let tree = self.tree.exact.get_or_insert_with(RbTree::default);
        if self.tree.replayed < self.tree.log.len() {
            self.tree.walked.clear();
        }
        if self.tree.replayed == 0 {
            // Every symbol by (start, id): the live ones are `order`, the
            // erased ones (a few aliases) are merged in.
            let mut erased: Vec<(u64, NodeId)> =
                (0..self.syms.len() as NodeId).filter(|&id| !self.live[id as usize]).map(|id| (self.syms[id as usize].start, id)).collect();
            erased.sort_unstable();
            let mut all = Vec::with_capacity(self.syms.len());
            merge_by_start((&self.index.starts, &self.index.order), &erased, |_, id| all.push(id));
            replay_by_order(tree, &self.syms, &all, &self.tree.log);
            self.tree.replayed = self.tree.log.len();
        }
        for &op in &self.tree.log[self.tree.replayed..] {
            if op & ERASED != 0 {
                tree.erase(op & !ERASED);
            } else {
                let id = tree.insert(self.syms[op as usize].start, ());
                debug_assert_eq!(id, op);
            }
        }
        self.tree.replayed = self.tree.log.len();
        if let Some((_, &(hi, found))) = self.tree.walked.range(..=ip).next_back()
            && ip <= hi
        {
            return found;
        }
        let (found, lo, hi) = walk(tree, &self.syms, ip);
        self.tree.walked.insert(lo, (hi, found));
        found
    }
}

/// Merges two runs of symbols, each by (start, id): `a` as starts and ids
/// side by side, `b` as pairs. `out` gets each (start, id) in turn.
fn merge_by_start((a_starts, a_ids): (&[u64], &[NodeId]), b: &[(u64, NodeId)], mut out: impl FnMut(u64, NodeId)) {
    let (mut i, mut j) = (0, 0);
    while i < a_ids.len() && j < b.len() {
        if (a_starts[i], a_ids[i]) < b[j] {
            out(a_starts[i], a_ids[i]);
            i += 1;
        } else {
            out(b[j].0, b[j].1);
            j += 1;
        }
    }
    for k in i..a_ids.len() {
        out(a_starts[k], a_ids[k]);
    }
    for &(start, id) in &b[j..] {
        out(start, id);
    }
}

/// Replays `log` into the empty `tree` as [`RbTree::insert`] and
/// [`RbTree::erase`] would, each insertion placed by its neighbours in
/// order rather than by a descent from the root.
///
/// The tree's order is by (start, id): a descent sends an equal start to
/// the right, and ids grow with insertions. So every symbol's place in
/// that order is known before the replay, from one sort, and a bitset over
/// those places tells which are in the tree at each step: the nearest set
/// bits around a new symbol's place are its neighbours.
///
/// `in_order`: every id of `syms`, by (start, id).
fn replay_by_order(tree: &mut RbTree<()>, syms: &[Sym], in_order: &[NodeId], log: &[u32]) {
    debug_assert_eq!(in_order.len(), syms.len());
    let mut place = vec![0u32; syms.len()];
    for (i, &id) in in_order.iter().enumerate() {
        place[id as usize] = i as u32;
    }
    let mut present = Places::new(syms.len());
    for &op in log {
        let id = op & !ERASED;
        let at = place[id as usize] as usize;
        if op & ERASED != 0 {
            tree.erase(id);
            present.clear(at);
        } else {
            let before = present.before(at).map(|i| in_order[i]);
            let after = present.after(at).map(|i| in_order[i]);
            let new = tree.insert_between(syms[id as usize].start, (), before, after);
            debug_assert_eq!(new, id);
            present.set(at);
        }
    }
}

/// A set of places `0..n`, with the nearest member below or above a place:
/// a bit per place and a bit per 64-place word that has any.
struct Places {
    words: Vec<u64>,
    summary: Vec<u64>,
}

impl Places {
    fn new(n: usize) -> Places {
        let words = n.div_ceil(64);
        Places { words: vec![0; words], summary: vec![0; words.div_ceil(64)] }
    }

    fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
        self.summary[i / 4096] |= 1 << (i / 64 % 64);
    }

    fn clear(&mut self, i: usize) {
        let w = &mut self.words[i / 64];
        *w &= !(1 << (i % 64));
        if *w == 0 {
            self.summary[i / 4096] &= !(1 << (i / 64 % 64));
        }
    }

    /// The highest member of `bits` (a word) below bit `i` (0..=64).
    fn highest_below(bits: u64, i: usize) -> Option<usize> {
        let m = if i >= 64 { bits } else { bits & ((1u64 << i) - 1) };
        (m != 0).then(|| 63 - m.leading_zeros() as usize)
    }

    /// The lowest member of `bits` (a word) at or above bit `i` (0..=64).
    fn lowest_from(bits: u64, i: usize) -> Option<usize> {
        let m = if i >= 64 { 0 } else { bits & (u64::MAX << i) };
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    /// The nearest member below `i`.
    fn before(&self, i: usize) -> Option<usize> {
        let w = i / 64;
        if let Some(b) = Self::highest_below(self.words[w], i % 64) {
            return Some(w * 64 + b);
        }
        let mut s = w / 64;
        let mut found = Self::highest_below(self.summary[s], w % 64);
        while found.is_none() {
            s = s.checked_sub(1)?;
            found = Self::highest_below(self.summary[s], 64);
        }
        let w = s * 64 + found?;
        Some(w * 64 + Self::highest_below(self.words[w], 64)?)
    }

    /// The nearest member above `i`.
    fn after(&self, i: usize) -> Option<usize> {
        let w = i / 64;
        if let Some(b) = Self::lowest_from(self.words[w], i % 64 + 1) {
            return Some(w * 64 + b);
        }
        let mut s = w / 64;
        let mut found = Self::lowest_from(self.summary[s], w % 64 + 1);
        while found.is_none() {
            s += 1;
            found = Self::lowest_from(*self.summary.get(s)?, 0);
        }
        let w = s * 64 + found?;
        Some(w * 64 + Self::lowest_from(self.words[w], 0)?)
    }
}

/// perf's `symbols__find` over `tree`: the symbol found for `ip`, and the
/// addresses `lo..=hi` around `ip` that take the same way down (every
/// comparison on the way comes out the same for them), so find the same.
/// A walk misses the cache at each of its ~20 levels in a large table;
/// the addresses of one function mostly share one way.
fn walk(tree: &RbTree<()>, syms: &[Sym], ip: u64) -> (Option<NodeId>, u64, u64) {
    let (mut lo, mut hi) = (0, u64::MAX);
    let mut n = tree.root();
    while let Some(id) = n {
        let s = &syms[id as usize];
        if ip < s.start {
            hi = hi.min(s.start - 1);
            n = tree.left(id);
            continue;
        }
        lo = lo.max(s.start);
        // From `start` on, the walk goes right from `past` on: from the
        // end of a sized symbol, past the start of a zero-sized one, and
        // always for one that ends before it starts.
        let past = match s.end.cmp(&s.start) {
            std::cmp::Ordering::Greater => Some(s.end),
            std::cmp::Ordering::Equal => s.start.checked_add(1),
            std::cmp::Ordering::Less => Some(s.start),
        };
        match past {
            Some(p) if ip >= p => {
                lo = lo.max(p);
                n = tree.right(id);
            }
            // Found: ip < p, and p > start.
            Some(p) => return (Some(id), lo, hi.min(p - 1)),
            // A zero-sized symbol at the top address.
            None => return (Some(id), lo, hi),
        }
    }
    (None, lo, hi)
}

/// Whether perf's walk stops at a symbol from `start` to `end` for `ip`.
pub fn holds(start: u64, end: u64, ip: u64) -> bool {
    start <= ip && (ip < end || ip == start)
}

/// Every [`STRIDE`]th of `starts` (sorted), for
/// [`last_start_at_or_below`].
pub fn strides_of(starts: &[u64]) -> Vec<u64> {
    starts.iter().step_by(STRIDE).copied().collect()
}

/// The index of the last of `starts` (sorted) at or below `ip`; `strides`
/// is [`strides_of`] them. (A binary search over a large table's starts
/// misses the cache at most of its levels; through `strides` it misses at
/// one or two.)
pub fn last_start_at_or_below(starts: &[u64], strides: &[u64], ip: u64) -> Option<usize> {
    let block = strides.partition_point(|&s| s <= ip).checked_sub(1)?;
    let from = block * STRIDE;
    let within = starts.get(from..starts.len().min(from + STRIDE))?;
    Some(from + within.partition_point(|&s| s <= ip).checked_sub(1)?)
}

fn roundup_page(x: u64) -> u64 {
    x.wrapping_add(4095) & !4095
}

/// Stable sort by the `u64`, a byte at a time from the lowest, skipping
/// the bytes all keys share (the high bytes of a DSO's addresses): a few
/// linear passes instead of a comparison sort's ~20 per element, for
/// tables of hundreds of thousands of symbols.
fn radix_sort_by_start(pairs: &mut Vec<(u64, NodeId)>) {
    if pairs.len() < 64 {
        pairs.sort_by_key(|p| p.0);
        return;
    }
    let (or, and) = pairs.iter().fold((0u64, u64::MAX), |(o, a), p| (o | p.0, a & p.0));
    let differ = or ^ and;
    let mut other = vec![(0u64, 0 as NodeId); pairs.len()];
    for shift in (0..64).step_by(8) {
        if (differ >> shift) & 0xff == 0 {
            continue;
        }
        let mut counts = [0usize; 256];
        for p in pairs.iter() {
            counts[((p.0 >> shift) & 0xff) as usize] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        for &p in pairs.iter() {
            let b = ((p.0 >> shift) & 0xff) as usize;
            other[counts[b]] = p;
            counts[b] += 1;
        }
        std::mem::swap(pairs, &mut other);
    }
}

impl SymTab {
    /// perf's `choose_best_symbol` for symbols `a` and `b` of this table:
    /// true to keep `a`, false to keep `b`.
    fn choose_best(&mut self, a: NodeId, b: NodeId) -> bool {
        let (sa, sb) = (&self.syms[a as usize], &self.syms[b as usize]);
        let la = sa.end.wrapping_sub(sa.start) as i64;
        let lb = sb.end.wrapping_sub(sb.start) as i64;
        if lb == 0 && la > 0 {
            return true;
        } else if la == 0 && lb > 0 {
            return false;
        }
        // Prefer a real symbol over a label at the same address.
        if sa.typ != sb.typ {
            if sa.typ == STT_NOTYPE {
                return false;
            }
            if sb.typ == STT_NOTYPE {
                return true;
            }
        }
        let (wa, wb) = (sa.binding == STB_WEAK, sb.binding == STB_WEAK);
        if wb && !wa {
            return true;
        }
        if wa && !wb {
            return false;
        }
        let (ga, gb) = (sa.binding == STB_GLOBAL, sb.binding == STB_GLOBAL);
        if ga && !gb {
            return true;
        }
        if gb && !ga {
            return false;
        }
        // The same name in .symtab and .dynsym: the demangled names tie too,
        // and a demangled name can only start with "SyS" if the raw one holds it.
        let (ra, rb) = (self.raw(sa), self.raw(sb));
        if ra == rb && sa.form == sb.form && !ra.windows(3).any(|w| w == b"SyS") {
            return true;
        }
        let (an, bn) = (self.shape(a), self.shape(b));
        let (ua, ub) = (an.underscores, bn.underscores);
        if ub > ua {
            return true;
        } else if ua > ub {
            return false;
        }
        let (na, nb) = (an.len, bn.len);
        if na > nb {
            return true;
        } else if na < nb {
            return false;
        }
        // arch__choose_best_symbol: avoid "SyS" syscall aliases.
        if an.starts_with("SyS") || an.starts_with("compat_SyS") {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::elf::{STB_LOCAL, STT_FUNC};

    fn s(start: u64, len: u64, bind: u8, name: &str) -> Sym {
        Sym::new(start, len, bind, STT_FUNC, name.into())
    }

    fn choose_best_symbol(a: &Sym, b: &Sym) -> bool {
        let mut t = SymTab::default();
        t.insert_all(vec![a.clone(), b.clone()]);
        t.choose_best(0, 1)
    }

    #[test]
    fn names_read_after_the_pages_go() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/rustwork");
        let file = crate::symbols::elf::map_file(&p).expect("maps");
        let len = file.len();
        let strtab = SectionBytes::Mapped(file, 0, len);
        let mut t = SymTab::default();
        let table = t.use_strtab(strtab.clone()).expect("a table");
        // Names at a few places of the file (whatever bytes are there).
        let offs: Vec<u32> = (0..len as u32).step_by(len / 40).collect();
        let ids: Vec<NodeId> =
            offs.iter().enumerate().map(|(i, &o)| t.insert(Sym::in_strtab(i as u64 * 16, 8, STB_GLOBAL, STT_FUNC, (table, o), false))).collect();
        let before: Vec<Arc<str>> = ids.iter().map(|&id| t.name(id)).collect();
        t.release_pages();
        let after: Vec<Arc<str>> = ids.iter().map(|&id| t.name(id)).collect();
        assert_eq!(before, after);
        assert_eq!(&*after[0], "\x7fELF\x02\x01\x01");
    }

    /// The search through every 64th start finds what a binary search over
    /// all of them finds, in tables of all sizes and at their edges.
    #[test]
    fn strided_search_finds_the_last_start_at_or_below() {
        let mut rnd = crate::testing::rng(0x1f83_d9ab_fb41_bd6b);
        for n in [1, 2, 63, 64, 65, 127, 128, 129, 1000, 5000] {
            let mut t = SymTab::default();
            t.insert_all((0..n).map(|_| s(rnd(50_000) * 2, 1, STB_GLOBAL, "f")).collect());
            t.has_overlaps();
            let mut probes: Vec<u64> = (0..2000).map(|_| rnd(100_200)).collect();
            probes.extend(t.index.starts.iter().flat_map(|&s| [s.wrapping_sub(1), s, s + 1]));
            probes.extend([0, u64::MAX]);
            for ip in probes {
                assert_eq!(t.last_start_at_or_below(ip), t.index.starts.partition_point(|&s| s <= ip).checked_sub(1), "n {n}, ip {ip}");
            }
        }
    }

    #[test]
    fn alias_choice_follows_perf() {
        // Non-weak beats weak, global beats local, fewer underscores, longer name.
        assert!(choose_best_symbol(&s(0, 8, STB_GLOBAL, "read"), &s(0, 8, STB_WEAK, "__read")));
        assert!(!choose_best_symbol(&s(0, 8, STB_WEAK, "read"), &s(0, 8, STB_GLOBAL, "__libc_read")));
        assert!(choose_best_symbol(&s(0, 8, STB_GLOBAL, "__libc_write"), &s(0, 8, STB_LOCAL, "__GI___libc_write")));
        assert!(choose_best_symbol(&s(0, 8, STB_LOCAL, "__GI___libc_write"), &s(0, 8, STB_LOCAL, "__libc_write")));
        assert!(choose_best_symbol(&s(0, 8, STB_GLOBAL, "mmap64"), &s(0, 8, STB_GLOBAL, "mmap")));
        // A function beats a label.
        let mut label = s(0, 8, STB_GLOBAL, "label");
        label.typ = STT_NOTYPE;
        assert!(!choose_best_symbol(&label, &s(0, 8, STB_LOCAL, "__f")));
        // Sized beats zero-sized.
        assert!(!choose_best_symbol(&s(0, 0, STB_GLOBAL, "a"), &s(0, 4, STB_LOCAL, "__b")));
        assert!(!choose_best_symbol(&s(0, 8, STB_GLOBAL, "SyS_read"), &s(0, 8, STB_GLOBAL, "sys_read")));
    }

    /// The radix sort orders as a stable comparison sort does, keys with
    /// few or many differing bytes, with repeats.
    #[test]
    fn radix_sort_matches_a_stable_sort() {
        let mut rnd = crate::testing::rng(0x51ed_270b_1f0c_4a57);
        for round in 0..40u64 {
            let n = rnd(3000) as usize;
            let spread = [0xff, 0xffff, 0xffff_ffff, u64::MAX][round as usize % 4];
            let base = 0x7f00_0000_0000u64 * (round % 2);
            let mut pairs: Vec<(u64, NodeId)> = (0..n).map(|i| (base.wrapping_add(rnd(spread.min(1 << 62)) & spread), i as NodeId)).collect();
            let mut want = pairs.clone();
            want.sort_by_key(|p| p.0);
            radix_sort_by_start(&mut pairs);
            assert_eq!(pairs, want, "round {round}");
        }
    }

    #[test]
    fn fixups() {
        let mut t = SymTab::default();
        t.insert_all(vec![s(0x100, 0, STB_GLOBAL, "a"), s(0x120, 0x10, STB_GLOBAL, "b"), s(0x120, 0x10, STB_WEAK, "c")]);
        let mut label = s(0x140, 0, STB_GLOBAL, "label");
        label.typ = STT_NOTYPE;
        t.insert(label);
        t.insert(s(0x2010, 0, STB_GLOBAL, "last"));
        t.fixup_end(false);
        t.fixup_duplicate();
        let v: Vec<_> = t.listing().into_iter().map(|(start, end, n)| (n.to_string(), start, end)).collect();
        let want = [("a", 0x100, 0x120), ("b", 0x120, 0x130), ("label", 0x140, 0x2010), ("last", 0x2010, 0x4000)];
        assert_eq!(v, want.map(|(n, s, e)| (n.to_string(), s, e)));
        assert_eq!(t.find(0x11f).unwrap().plain_name().unwrap().as_ref(), "a");
        assert_eq!(t.find(0x141).unwrap().plain_name().unwrap().as_ref(), "label");
        assert!(t.find(0x130).is_none());
        assert!(t.find(0xff).is_none());
    }

    #[test]
    fn kallsyms_style_ends() {
        let mut t = SymTab::default();
        let k = |start, name: &str| Sym::new(start, 0, STB_GLOBAL, STT_FUNC, name.into());
        t.insert_all(vec![k(0x1000, "x"), k(0x1000, "_text"), k(0x1100, "y"), k(0x5000, "m\t[mod]"), k(0x6000, "n\t[mod2]")]);
        t.fixup_end(true);
        t.fixup_duplicate();
        let v: Vec<_> = t.listing().into_iter().map(|(start, end, n)| (n.to_string(), start, end)).collect();
        assert_eq!(v[0], ("_text".to_string(), 0x1000, 0x1100));
        assert_eq!(v[1], ("y".to_string(), 0x1100, 0x3000));
        assert_eq!(v[2], ("m\t[mod]".to_string(), 0x5000, 0x6000));
        assert_eq!(v[3], ("n\t[mod2]".to_string(), 0x6000, 0x7000));
    }

    /// Alias choices put off until a lookup (or perf's tree) needs them
    /// leave what choosing at once leaves: lookups, the tree walk, the log
    /// and the listing.
    #[test]
    fn alias_choices_put_off_come_out_as_made_at_once() {
        let mut rnd = crate::testing::rng(0x9e3779b97f4a7c15);
        let mut put_off = 0;
        let mut joined = 0;
        for round in 0..200 {
            let mut lazy = SymTab::default();
            let mut eager = SymTab { eager_aliases: true, ..SymTab::default() };
            let batch = |rnd: &mut dyn FnMut(u64) -> u64, tag: &str| -> Vec<Sym> {
                (0..1 + rnd(80))
                    .map(|i| {
                        // Few addresses and ends: many aliases with one end.
                        let start = rnd(40) * 16;
                        let len = [0, 16, 16, 32][rnd(4) as usize];
                        let name = format!("{}{tag}{i}{}", "_".repeat(rnd(3) as usize), "x".repeat(rnd(4) as usize));
                        s(start, len, [STB_GLOBAL, STB_WEAK, STB_LOCAL][rnd(3) as usize], &name)
                    })
                    .collect()
            };
            let first = batch(&mut rnd, "a");
            // Every other second table repeats some of the first's symbols,
            // as .dynsym repeats .symtab's exported ones.
            let mut second = batch(&mut rnd, "b");
            if round % 4 == 2 {
                second.extend(first.iter().filter(|_| rnd(3) != 0).cloned());
                let by = rnd(second.len() as u64) as usize;
                second.rotate_left(by);
            }
            for t in [&mut lazy, &mut eager] {
                t.insert_all(first.clone());
                t.fixup_end(false);
                t.fixup_duplicate();
            }
            put_off += lazy.put_off.pending.len();
            // Some lookups before the second table (a group joined by new
            // symbols is decided in the second pass).
            for _ in 0..rnd(10) {
                let ip = rnd(700);
                assert_eq!(lazy.find_id(ip), eager.find_id(ip), "round {round}");
            }
            if round % 2 == 0 {
                for t in [&mut lazy, &mut eager] {
                    t.insert_all(second.clone());
                    t.fixup_end(false);
                    t.fixup_duplicate();
                }
                joined += lazy.put_off.pending.values().filter(|g| !g.later.is_empty()).count();
            }
            let mut ips: Vec<u64> = (0..700).collect();
            for i in (1..ips.len()).rev() {
                ips.swap(i, rnd(i as u64 + 1) as usize);
            }
            for ip in ips {
                assert_eq!(lazy.find_id(ip), eager.find_id(ip), "round {round}, ip {ip}");
            }
            for ip in 0..700 {
                assert_eq!(lazy.exact_find(ip), eager.exact_find(ip), "round {round}, ip {ip}");
            }
            assert_eq!(lazy.tree.log, eager.tree.log, "round {round}");
            assert_eq!(lazy.listing(), eager.listing(), "round {round}");
        }
        assert!(put_off > 500, "{put_off}");
        assert!(joined > 10, "{joined}");
    }

    /// The binary search over the sorted order answers what perf's tree
    /// walk answers, on random tables with and without overlaps, through
    /// insertions, fixups and erasures.
    #[test]
    fn lookups_match_perfs_tree_walk() {
        let mut rnd = crate::testing::rng(0x2545f4914f6cdd1d);
        let mut fast_rounds = 0;
        for round in 0..300 {
            let mut t = SymTab::default();
            let sized = round % 3 != 0;
            let batch = |t: &mut SymTab, rnd: &mut dyn FnMut(u64) -> u64| {
                let n = 1 + rnd(60);
                let v: Vec<Sym> = (0..n)
                    .map(|i| {
                        let start = rnd(400) * 4;
                        let len = if sized { rnd(3) * 4 * (1 + rnd(3)) } else { 0 };
                        s(start, len, [STB_GLOBAL, STB_WEAK, STB_LOCAL][rnd(3) as usize], &format!("s{round}_{i}"))
                    })
                    .collect();
                t.insert_all(v);
            };
            batch(&mut t, &mut rnd);
            if round % 2 == 0 {
                t.fixup_end(false);
                t.fixup_duplicate();
            }
            if round % 4 == 1 {
                for _ in 0..rnd(20) {
                    t.insert(s(rnd(400) * 4, rnd(2) * 8, STB_GLOBAL, "single"));
                }
            }
            if round % 5 == 0 {
                batch(&mut t, &mut rnd);
                t.fixup_end(false);
                t.fixup_duplicate();
            }
            if let Some(id) = t.position(|s| s.start % 3 == 0) {
                t.remove(id);
            }
            // A symbol that ends before it starts still steers the walk.
            if round % 7 == 3
                && let Some(id) = t.position(|s| s.start > 8 && s.end > s.start)
            {
                let start = t.get(id).start;
                t.get_mut(id).end = start - 8;
            }
            for ip in (0..1700).step_by(2) {
                let fast = t.find_id(ip);
                assert_eq!(fast, t.exact_find(ip), "round {round}, ip {ip:#x}");
            }
            fast_rounds += usize::from(!t.has_overlaps());
        }
        assert!(fast_rounds >= 50, "only {fast_rounds} tables without overlaps");
    }

    /// The set behind [`replay_by_order`] answers as a scan does: random
    /// sets, members added and taken out, every place asked.
    #[test]
    fn places_find_the_nearest_members() {
        let mut rnd = crate::testing::rng(0x9e3779b97f4a7c15);
        for n in [1usize, 63, 64, 65, 4095, 4096, 4097, 9000] {
            let mut p = Places::new(n);
            let mut set = vec![false; n];
            for step in 0..3 {
                for _ in 0..(n / 3 + 1) {
                    let i = rnd(n as u64) as usize;
                    if step == 1 {
                        p.clear(i);
                        set[i] = false;
                    } else {
                        p.set(i);
                        set[i] = true;
                    }
                }
                for i in 0..n {
                    assert_eq!(p.before(i), (0..i).rev().find(|&j| set[j]), "n {n} step {step} before {i}");
                    assert_eq!(p.after(i), (i + 1..n).find(|&j| set[j]), "n {n} step {step} after {i}");
                }
            }
        }
    }

    /// perf's tree replayed by order ([`replay_by_order`]) comes out node
    /// for node (links and colors) as the insertions and erasures done one
    /// by one from the root: random starts with many equal ones, in
    /// address order or not, with erasures between insertions.
    #[test]
    fn replay_by_order_builds_perfs_tree() {
        let mut rnd = crate::testing::rng(0x2545f4914f6cdd1d);
        for round in 0..40 {
            let n = 1 + rnd(if round % 4 == 0 { 6000 } else { 300 }) as usize;
            let spread = [4, 40, 4000, 1 << 40][round % 4];
            let mut starts: Vec<u64> = (0..n).map(|_| rnd(spread)).collect();
            if round % 5 == 1 {
                starts.sort_unstable();
            }
            let syms: Vec<Sym> = starts.iter().map(|&a| s(a, 0, STB_GLOBAL, "x")).collect();
            let mut log = Vec::new();
            let mut live = Vec::new();
            for id in 0..n as u32 {
                log.push(id);
                live.push(id);
                if rnd(4) == 0 {
                    let i = rnd(live.len() as u64) as usize;
                    log.push(live.swap_remove(i) | ERASED);
                }
            }
            let mut one_by_one = RbTree::default();
            for &op in &log {
                if op & ERASED != 0 {
                    one_by_one.erase(op & !ERASED);
                } else {
                    one_by_one.insert(syms[op as usize].start, ());
                }
            }
            let mut in_order: Vec<NodeId> = (0..n as NodeId).collect();
            in_order.sort_by_key(|&id| starts[id as usize]);
            let mut by_order = RbTree::default();
            replay_by_order(&mut by_order, &syms, &in_order, &log);
            assert_eq!(format!("{by_order:?}"), format!("{one_by_one:?}"), "round {round}");
        }
    }

    /// Lookups answered from earlier walks ([`walk`]'s ranges) find what a
    /// walk of their own finds: random tables with overlaps, addresses in
    /// random order, between insertions, erasures and moved ends.
    #[test]
    fn remembered_walks_answer_as_fresh_ones() {
        let mut rnd = crate::testing::rng(0x9e37_79b9_7f4a_7c15);
        let mut remembered = 0;
        for round in 0..200 {
            let mut t = SymTab::default();
            let syms: Vec<Sym> = (0..1 + rnd(80))
                .map(|i| s(rnd(300) * 4, rnd(4) * 4 * (1 + rnd(4)), STB_GLOBAL, &format!("s{round}_{i}")))
                .collect();
            t.insert_all(syms);
            if round % 2 == 0 {
                t.fixup_end(false);
                t.fixup_duplicate();
            }
            for step in 0..4 {
                let mut ips: Vec<u64> = (0..1300).collect();
                for i in (1..ips.len()).rev() {
                    ips.swap(i, rnd(i as u64 + 1) as usize);
                }
                for ip in ips {
                    let (had_tree, before) = (t.tree.exact.is_some(), t.tree.walked.len());
                    let found = t.exact_find(ip);
                    remembered += usize::from(had_tree && t.tree.walked.len() == before);
                    assert_eq!(found, walk(t.tree.exact.as_ref().unwrap(), &t.syms, ip).0, "round {round} step {step} ip {ip}");
                    assert_eq!(t.find_id(ip), found, "round {round} step {step} ip {ip}");
                }
                match step {
                    0 => {
                        t.insert(s(rnd(300) * 4, rnd(3) * 8, STB_GLOBAL, "late"));
                    }
                    1 => {
                        if let Some(id) = t.position(|s| s.start % 3 == 0) {
                            t.remove(id);
                        }
                    }
                    _ => {
                        if let Some(id) = t.position(|s| s.end > s.start + 4) {
                            let start = t.get(id).start;
                            t.get_mut(id).end = if round % 2 == 0 { start + 4 } else { start.wrapping_sub(4) };
                        }
                    }
                }
            }
        }
        assert!(remembered > 100_000, "{remembered}");
    }
}

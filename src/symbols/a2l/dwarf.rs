//! DWARF units and their function tables as binutils' `bfd/dwarf2.c` sees
//! them: `parse_comp_unit` (unit ranges, language, comp_dir),
//! `scan_unit_for_symbols` (one `funcinfo` per subprogram, entry point and
//! inlined subroutine, its caller, call site and address ranges, its name
//! from `find_abstract_instance`), `lookup_address_in_function_table` (the
//! smallest range containing the address) and the mutable "is this a
//! linkage name" state that `addr2line` keeps between queries.
//!
//! ## Units from a cache ([`super::cache`])
//!
//! Reading a unit's header and decoding a unit are functions of the
//! section bytes alone. What a decode does to *other* lookups is small: the
//! unit's ranges grow by its line sequences and its functions' cover (both go
//! into the range index), and its scan reads and decodes the units its
//! references name (`Trail`: `parsed`, `deps`). Its own tables (rows,
//! functions, variables) matter only to a lookup that lands in the unit.
//! So a unit decoded from a summary gets exactly those effects, in the
//! same order as a decode ([`Dwarf::replay_summary`], like the ahead
//! decoder's `replay`), and its tables are built at first need
//! ([`Dwarf::tables_of`], [`Dwarf::lines_of`]). The answers are the same
//! because:
//!
//! - the tables built later are the tables built then: the same bytes, and
//!   the units the scan refers to were read and decoded by the replay
//!   (their line tables are built for a `DW_AT_decl_file` if needed), so
//!   the scan reads and decodes nothing else;
//! - the state lookups change (a function's `is_linkage` and the name that
//!   sticks) lives in the tables and is changed only by lookups that
//!   landed in the unit, which built the tables first;
//! - building tables changes no answer, so `generation` is bumped by the
//!   replay (as by a decode), not by the building; abstract-instance memos
//!   repeat what reading the DIEs does (`abstract_instances_repeat_as_read`),
//!   whoever made them; built line tables are packed by `settle` like
//!   freshly decoded ones;
//! - a lookup that would have looked into a unit's tables without finding
//!   anything asks the summary first: no function range outside the cover,
//!   no row outside the sequences (`may_hold`), no variable where the unit
//!   has none.
//!
//! Only order-independent outcomes are summarized: a unit whose line
//! program fails fails alike in any order; a scan that fails (where the
//! outcome can depend on which unit was being decoded at the time) spoils
//! the reading for the cache, and nothing is stored. Summaries of units
//! decoded ahead on the decoder thread are taken from its `Ready`.

use std::sync::Arc;

use gimli::{AttributeValue, DebugInfo, EndianSlice, RunTimeEndian};

use super::abbrev;
use super::cache::{Decode, DecodeSummary, Key, Summary, UnitHeader};
use super::sections_cache::{Compressed, Place};
use crate::engine::board::Board;
use super::lines::{LineHit, LineTable, NameMemo, Rows, StrSections};
use super::ranges::{Coverage, RangeIndex};
use super::reader::Reader;
use crate::fasthash::FastMap;
use crate::symbols::elf::{Elf, SectionBytes};

type R<'a> = EndianSlice<'a, RunTimeEndian>;
/// A DIE's attributes as (name, raw value).
type RawAttrs<'a> = Vec<(u16, AttributeValue<R<'a>>)>;
/// A DIE's attributes, decoded: name, value, and the DIE it refers to.
type Attrs = Vec<(u16, Val, Option<Ref>)>;

/// The DIE an attribute value refers to, if it is a reference.
fn ref_of(raw: &AttributeValue<R<'_>>) -> Option<Ref> {
    match raw {
        AttributeValue::UnitRef(o) => Some(Ref::Local(o.0 as u64)),
        AttributeValue::DebugInfoRef(o) => Some(Ref::Global(o.0 as u64)),
        AttributeValue::DebugInfoRefSup(_) => Some(Ref::Alt),
        _ => None,
    }
}
/// String sections and the string offset base of a unit.
type StrSecs = (SectionBytes, SectionBytes, SectionBytes, u64, u8);
/// A variable DIE's attributes, classified, with references and blocks.
type VarAttrs = Vec<(u16, Val, Option<Ref>, Option<Vec<u8>>)>;

const NONE: u32 = u32::MAX;
pub const NO_FILE: u32 = u32::MAX;
pub const DW_TAG_ENTRY_POINT: u16 = 0x03;
pub const DW_TAG_INLINED_SUBROUTINE: u16 = 0x1d;
pub const DW_TAG_SUBPROGRAM: u16 = 0x2e;
const DW_TAG_COMPILE_UNIT: u16 = 0x11;

/// The debug sections, decompressed.
#[derive(Default, Clone)]
pub struct Sections {
    pub info: SectionBytes,
    pub abbrev: SectionBytes,
    pub line: SectionBytes,
    pub str: SectionBytes,
    pub line_str: SectionBytes,
    pub ranges: SectionBytes,
    pub rnglists: SectionBytes,
    pub addr: SectionBytes,
    pub str_offsets: SectionBytes,
    /// `.debug_ranges` / `.debug_rnglists` exist (binutils fails a range
    /// read when the section is missing).
    pub has_ranges: bool,
    pub has_rnglists: bool,
}

/// The debug sections read, in the order of [`Sections::cache_key`].
const SECTION_NAMES: [&str; 9] =
    [".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str", ".debug_ranges", ".debug_rnglists", ".debug_addr", ".debug_str_offsets"];

impl Sections {
    /// Lets the kernel drop the pages of the files the sections lie in
    /// (the object, or the cache's file of inflated sections: see
    /// [`crate::symbols::Symbolizer::release_pages`]), each file once, and
    /// not `released`'s file (its pages went already).
    pub fn release_pages(&self, released: Option<&Elf>) {
        let all = [&self.info, &self.abbrev, &self.line, &self.str, &self.line_str, &self.ranges, &self.rnglists, &self.addr, &self.str_offsets];
        for (i, s) in all.iter().enumerate() {
            let done = released.is_some_and(|elf| elf.holds(s)) || all[..i].iter().any(|earlier| earlier.same_file(s));
            if !done {
                s.release_pages();
            }
        }
    }

    /// A section addr2line reads: its header, unless it has no bytes.
    fn header<'e>(elf: &'e Elf, name: &str) -> Option<&'e crate::symbols::elf::Section> {
        let (_, s) = elf.section_by_name(name)?;
        (s.sh_type != crate::symbols::elf::SHT_NOBITS).then_some(s)
    }

    /// The file has DWARF to read (without inflating anything).
    pub fn present(elf: &Elf) -> bool {
        Sections::header(elf, ".debug_info").is_some()
    }

    /// The key of `elf`'s cache files (none without a build-id): with the
    /// size in the file of each debug section (`u64::MAX`: none).
    pub fn cache_key(elf: &Elf) -> Option<Key> {
        let sections = SECTION_NAMES.iter().map(|n| Sections::header(elf, n).map(|s| s.sh_size).unwrap_or(u64::MAX)).collect();
        Some(Key { build_id: elf.build_id()?, file_size: elf.file_bytes().len() as u64, sections })
    }

    /// The sections of `elf`, inflated where compressed; `None` without a
    /// readable `.debug_info`. With a `place` for its sections file
    /// ([`super::sections_cache`]), compressed sections come from a good
    /// file there instead, and a run that inflates any writes the file
    /// anew (nothing is opened for an object without compressed sections).
    pub fn load(elf: &Elf, place: Option<&Place>) -> Option<Sections> {
        let headers = SECTION_NAMES.map(|n| Sections::header(elf, n));
        let compressed: Vec<Compressed> = (0..headers.len())
            .filter_map(|i| Some(Compressed { section: i as u32, header: elf.compression(headers[i]?)? }))
            .collect();
        let place = place.filter(|_| !compressed.is_empty());
        let mapped = place.and_then(|p| p.open(elf, &compressed));
        let mut got = Vec::with_capacity(headers.len());
        let mut inflated = 0;
        for (i, h) in headers.iter().enumerate() {
            let cached = mapped.as_ref().and_then(|m| m.section(i as u32));
            let b = cached.or_else(|| {
                let b = elf.section_bytes((*h)?)?;
                inflated += usize::from(compressed.iter().any(|c| c.section == i as u32));
                Some(b)
            });
            if i == 0 && b.is_none() {
                return None;
            }
            got.push(b);
        }
        if let Some(p) = place.filter(|_| inflated > 0) {
            let keep: Vec<(Compressed, &[u8])> = compressed.iter().filter_map(|c| Some((*c, got[c.section as usize].as_deref()?))).collect();
            p.store(&keep, inflated);
            // The file just written, mapped, in place of the inflated
            // copies: those would stay for the run (megabytes of anonymous
            // memory), a mapping costs the pages lookups touch.
            if let Some(m) = p.open_written(elf, &compressed) {
                for c in &compressed {
                    if let Some(b) = m.section(c.section) {
                        got[c.section as usize] = Some(b);
                    }
                }
            }
        }
        let [info, abbrev, line, str, line_str, ranges, rnglists, addr, str_offsets]: [Option<SectionBytes>; 9] = got.try_into().ok()?;
        let or_empty = |b: Option<SectionBytes>| b.unwrap_or_default();
        Some(Sections {
            info: info?,
            abbrev: or_empty(abbrev),
            line: or_empty(line),
            str: or_empty(str),
            line_str: or_empty(line_str),
            has_ranges: ranges.is_some(),
            has_rnglists: rnglists.is_some(),
            ranges: or_empty(ranges),
            rnglists: or_empty(rnglists),
            addr: or_empty(addr),
            str_offsets: or_empty(str_offsets),
        })
    }
}

/// binutils' address range list (`struct arange`): the first range, then
/// ranges inserted right after it. Most functions have just the first, so
/// it is kept inline and the rest behind one pointer: a decoded unit keeps
/// one of these per function for the whole run (32 bytes, not 48).
#[derive(Debug, Default, Clone)]
pub struct Aranges {
    /// The first range, if `has_first`.
    first: (u64, u64),
    has_first: bool,
    /// One pointer (a `Vec` or a boxed slice would take two or three
    /// words in every record for what few functions have).
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<(u64, u64)>>>,
}

impl Aranges {
    /// binutils' `arange_add`.
    pub fn add(&mut self, low: u64, high: u64) {
        if low == high {
            return;
        }
        // binutils' empty first slot: none yet, or one whose high is 0.
        if !self.has_first || self.first.1 == 0 {
            self.first = (low, high);
            self.has_first = true;
            return;
        }
        let more = self.more.as_deref_mut().map(|m| m.iter_mut()).into_iter().flatten();
        for a in std::iter::once(&mut self.first).chain(more) {
            if low == a.1 {
                a.1 = high;
                return;
            }
            if high == a.0 {
                a.0 = low;
                return;
            }
        }
        self.more.get_or_insert_default().insert(0, (low, high));
    }

    /// The ranges in binutils' list order.
    pub fn iter(&self) -> impl Iterator<Item = &(u64, u64)> {
        let first = self.has_first.then_some(&self.first);
        first.into_iter().chain(self.more.as_deref().into_iter().flatten())
    }

    pub fn contains(&self, addr: u64) -> bool {
        self.iter().any(|&(l, h)| addr >= l && addr < h)
    }

    pub fn first_low(&self) -> u64 {
        if self.has_first { self.first.0 } else { 0 }
    }

    /// The lowest and highest address of the ranges ((0, 0): none).
    fn bounds(&self) -> (u64, u64) {
        let (mut low, mut high) = if self.has_first { self.first } else { (0, 0) };
        for &(l, h) in self.more.as_deref().into_iter().flatten() {
            low = low.min(l);
            high = high.max(h);
        }
        (low, high)
    }

    /// The list as [`Aranges::iter`] gave it.
    fn from_list(list: &[(u64, u64)]) -> Aranges {
        let rest = list.get(1..).unwrap_or_default();
        Aranges {
            first: list.first().copied().unwrap_or((0, 0)),
            has_first: !list.is_empty(),
            more: (!rest.is_empty()).then(|| Box::new(rest.to_vec())),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Func {
    pub tag: u16,
    pub caller: u32,
    /// The call site's file number in the unit's line table
    /// ([`NO_FILE`]: none).
    pub caller_file: u32,
    pub caller_line: u32,
    pub name: Name,
    pub is_linkage: bool,
    pub aranges: Aranges,
}

struct Lookup {
    func: u32,
    low: u64,
    high: u64,
}

/// A variable with a static address (binutils' `varinfo` with `stack`
/// false); only these can match a symbol lookup.
#[derive(Debug, Clone)]
pub struct Var {
    pub name: Name,
    pub file: Option<Arc<str>>,
    pub line: u32,
    pub addr: u64,
}

#[derive(Default)]
pub struct Decoded {
    pub lines: LineTable,
    pub funcs: Vec<Func>,
    /// In binutils' list order (last DIE first).
    pub vars: Vec<Var>,
    lookup: Option<Vec<Lookup>>,
}

/// What decoding a unit did to the reading state besides building its own
/// tables, so that a session can do the same with tables decoded on
/// another thread (see `a2l::ahead`).
#[derive(Debug, Default, Clone)]
pub struct Trail {
    pub unit: u32,
    /// The units its scan asked to be decoded, in order (whether or not
    /// they were decoded already).
    pub deps: Vec<u32>,
    /// How many units its references needed read.
    pub parsed: u32,
}

/// A unit decoded ahead, ready for a session to take.
pub struct Ready {
    /// The unit's offset in `.debug_info` (checks it is the same unit).
    offset: usize,
    decoded: Box<Decoded>,
    func_cover: Coverage,
    trail: Trail,
}

/// What decoding a unit did, for the cache: from its tables (`None`: it
/// has none), its functions' cover and its trail.
fn decode_summary(decoded: Option<&Decoded>, cover: &Coverage, trail: &Trail) -> Decode {
    let (seq_ranges, open, has_vars) = match decoded {
        Some(d) => (d.lines.seq_ranges.clone(), d.lines.open_range(), !d.vars.is_empty()),
        None => (Vec::new(), None, false),
    };
    Decode::Done(DecodeSummary {
        seq_ranges,
        open,
        func_ranges: cover.ranges().to_vec(),
        deps: trail.deps.clone(),
        parsed: trail.parsed,
        has_vars,
    })
}

/// Declaration coordinates collected by `find_abstract_instance`.
#[derive(Default)]
struct Decl {
    file: Option<Arc<str>>,
    line: u32,
}

/// One effect of `find_abstract_instance`, in the order it happens: what
/// a later call for the same DIE repeats instead of reading the DIE (and
/// the DIEs it refers to) again. Inlined calls of one function all refer to
/// its abstract instance, so most calls repeat an earlier one.
#[derive(Debug, Clone, Copy)]
enum AbstractOp {
    /// `DW_AT_name`, taken if no name is set yet (a linkage name then if
    /// the unit's language says so).
    NameIfNone(Name, bool),
    /// A linkage name.
    Linkage(Name),
    /// A reference into another unit: the units read to find it.
    Containing(u64),
    /// `DW_AT_decl_file`: the DIE's unit decoded, then the file named
    /// (if the value is a number).
    DeclFile(u32, Option<u64>),
    DeclLine(u32),
}

/// A finished `find_abstract_instance`: its effects (`start..start + len`
/// of [`Dwarf::abstract_ops`]), its result, and how many levels of
/// references it went through (the depth limit must not cut a repeat
/// shorter than the first call).
#[derive(Debug, Clone, Copy)]
struct AbstractMemo {
    start: u32,
    len: u32,
    height: u32,
    ok: bool,
}

pub struct Unit {
    offset: usize,
    end: usize,
    version: u16,
    addr_size: u8,
    offset_size: u8,
    /// Where the unit's abbreviations are in `.debug_abbrev`.
    abbrev_offset: u64,
    lang: u64,
    comp_dir: Option<Arc<str>>,
    stmt_list: Option<u64>,
    base_address: u64,
    addr_base: u64,
    str_offsets_base: u64,
    /// Ranges from the unit DIE.
    pub aranges: Aranges,
    first_child: Option<usize>,
    pub error: bool,
    /// Line table decoded (binutils' `line_table != NULL`).
    pub lines_ready: bool,
    pub decoded: Option<Box<Decoded>>,
    /// What the function ranges cover, once scanned.
    pub func_cover: Coverage,
    /// Decoded from a cache summary: the tables are built when first
    /// needed (`decoded`: the line table only, or nothing yet).
    lazy: Option<Box<Lazy>>,
}

/// What a lookup asks of a unit decoded from a summary before its tables
/// are built.
struct Lazy {
    /// Where a line lookup can find a row ([`super::lines::LineTable::may_hold`]).
    may_hold: Vec<(u64, u64)>,
    has_vars: bool,
}

impl Lazy {
    fn may_hold(&self, addr: u64) -> bool {
        self.may_hold.iter().any(|&(l, h)| addr >= l && addr < h)
    }
}

impl Unit {
    fn header(&self) -> UnitHeader {
        UnitHeader {
            offset: self.offset as u64,
            end: self.end as u64,
            version: self.version,
            addr_size: self.addr_size,
            offset_size: self.offset_size,
            abbrev_offset: self.abbrev_offset,
            lang: self.lang,
            comp_dir: self.comp_dir.clone(),
            stmt_list: self.stmt_list,
            base_address: self.base_address,
            addr_base: self.addr_base,
            str_offsets_base: self.str_offsets_base,
            aranges: self.aranges.iter().copied().collect(),
            first_child: self.first_child.map(|c| c as u64),
        }
    }

    /// A unit as read before; `None` if it does not fit this machine.
    fn from_header(h: &UnitHeader) -> Option<Unit> {
        Some(Unit {
            offset: usize::try_from(h.offset).ok()?,
            end: usize::try_from(h.end).ok()?,
            version: h.version,
            addr_size: h.addr_size,
            offset_size: h.offset_size,
            abbrev_offset: h.abbrev_offset,
            lang: h.lang,
            comp_dir: h.comp_dir.clone(),
            stmt_list: h.stmt_list,
            base_address: h.base_address,
            addr_base: h.addr_base,
            str_offsets_base: h.str_offsets_base,
            aranges: Aranges::from_list(&h.aranges),
            first_child: match h.first_child {
                Some(c) => Some(usize::try_from(c).ok()?),
                None => None,
            },
            error: false,
            lines_ready: false,
            decoded: None,
            func_cover: Coverage::default(),
            lazy: None,
        })
    }

    fn encoding(&self) -> gimli::Encoding {
        gimli::Encoding {
            format: if self.offset_size == 8 { gimli::Format::Dwarf64 } else { gimli::Format::Dwarf32 },
            version: self.version,
            address_size: self.addr_size,
        }
    }
}

pub struct Dwarf {
    le: bool,
    pub s: Sections,
    pub units: Vec<Unit>,
    /// The known ranges of parsed units (unit ranges, line sequences, and
    /// what the function ranges of decoded units cover).
    index: RangeIndex,
    /// Offset of the next unit binutils would read, `None` once it stopped.
    next_unit: Option<usize>,
    /// The abbreviation tables used last, most recent last: a unit needs
    /// its table while it is read or scanned, and again only when a later
    /// unit refers into it (parsed again then; a large program has
    /// thousands of tables).
    abbrev_cache: Vec<(u64, Arc<abbrev::Table>)>,
    /// Line table headers' names (see [`NameMemo`]).
    header_names: NameMemo,
    /// Decoding ahead: the decodes under way, innermost last (`None` in a
    /// session).
    recording: Option<Vec<Trail>>,
    /// Decodes finished while recording, in order.
    finished: Vec<Trail>,
    /// Some unit failed to decode.
    pub failed: bool,
    /// Units decoded ahead by another thread, for a session.
    ahead: Option<Arc<Board<Ready>>>,
    /// Names taken from the symbol table (see [`Name`]).
    owned: Vec<Arc<str>>,
    /// Units whose line table was decoded during the current lookup.
    fresh: Vec<u32>,
    /// Bumped whenever a unit is read or decoded: answers can change then.
    pub generation: u64,
    /// `find_abstract_instance` by the `.debug_info` offset of the DIE.
    abstract_memo: FastMap<u64, AbstractMemo>,
    /// The effects of the memos, end to end.
    abstract_ops: Vec<AbstractOp>,
    /// The effects of the calls under way.
    abstract_trail: Vec<AbstractOp>,
    /// The depth limit cut a call under way short.
    abstract_cut: bool,
    /// Calls answered from `abstract_memo` (`None`: none are, for tests).
    abstract_hits: Option<u64>,
    /// The file to read the sections from when first needed (`s` is
    /// empty until then), and where its inflated sections may be kept.
    loader: Option<(Elf, Option<Place>)>,
    /// What a cache says of the units (see [`super::cache`]).
    summary: Option<Arc<Summary>>,
    /// What this reading found out beyond `summary`, to store.
    learn: Option<Learn>,
    /// Decodes finished while recording go to `finished` (a decoder).
    hand_over: bool,
    /// Units scanned so far (see [`Dwarf::scanned`]).
    scans: u64,
}

/// What a reading found out for the cache.
#[derive(Default)]
pub struct Learn {
    /// Units read past those of the summary.
    headers: Vec<UnitHeader>,
    decodes: FastMap<u32, Decode>,
    /// No unit after the last one read.
    ended: bool,
    /// `ended` became true since [`Dwarf::take_reached_end`].
    end_news: bool,
    /// A decode whose effects may depend on the order (a unit that failed
    /// in its scan or its references): nothing is stored.
    spoiled: bool,
    /// Things learned since [`Dwarf::take_news`].
    news: usize,
}

impl Dwarf {
    /// This reading found the last unit since the last call.
    pub fn take_reached_end(&mut self) -> bool {
        self.learn.as_mut().is_some_and(|l| std::mem::take(&mut l.end_news))
    }
}

/// binutils' `mangle_style(lang) == 0`: a plain `DW_AT_name` is as good as
/// a linkage name in these languages.
fn name_is_linkage(lang: u64) -> bool {
    matches!(lang, 0x1 | 0x2 | 0x5 | 0x6 | 0x7 | 0x9 | 0xc | 0xf | 0x12 | 0x1d | 0x8001 | 0x8765 | 0x8004 | 0x8006 | 0x8007)
}

/// A DWARF string left where it is: which section (top three bits) and
/// the offset there, or a name taken from the symbol table (an index
/// into [`Dwarf::owned`]). Most functions' names are never printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Name(u64);

const IN_STR: u64 = 1;
const IN_LINE_STR: u64 = 2;
const IN_INFO: u64 = 3;
const OWNED: u64 = 4;

impl Name {
    pub const NONE: Name = Name(0);

    fn at(place: u64, offset: u64) -> Name {
        Name(place << 61 | (offset & ((1 << 61) - 1)))
    }

    pub fn is_none(self) -> bool {
        self == Name::NONE
    }
}

/// A raw attribute value as binutils classifies it (`is_int_form`,
/// `is_str_form`); `addr` tells DW_FORM_addr apart (for DW_AT_high_pc).
enum Val {
    Int { v: u64, addr: bool },
    Str(Name),
    Other,
}

fn int_of(v: &AttributeValue<R<'_>>) -> Option<u64> {
    Some(match *v {
        AttributeValue::Addr(a) => a,
        AttributeValue::Data1(x) => x as u64,
        AttributeValue::Data2(x) => x as u64,
        AttributeValue::Data4(x) => x as u64,
        AttributeValue::Data8(x) => x,
        AttributeValue::Sdata(x) => x as u64,
        AttributeValue::Udata(x) => x,
        AttributeValue::Flag(f) => f as u64,
        AttributeValue::SecOffset(o) => o as u64,
        AttributeValue::UnitRef(o) => o.0 as u64,
        AttributeValue::DebugInfoRef(o) => o.0 as u64,
        AttributeValue::DebugInfoRefSup(o) => o.0 as u64,
        AttributeValue::DebugTypesRef(s) => s.0,
        AttributeValue::DebugAddrIndex(i) => i.0 as u64,
        _ => return None,
    })
}

fn cstr_at(d: &[u8], off: u64) -> Option<&[u8]> {
    let rest = d.get(usize::try_from(off).ok()?..)?;
    let n = perf_data::bytes::find_byte(rest, 0)?;
    Some(&rest[..n])
}

fn to_str(b: &[u8]) -> Arc<str> {
    String::from_utf8_lossy(b).into()
}

/// What the scan needs to know about an attribute's reference.
enum Ref {
    Local(u64),
    Global(u64),
    Alt,
}

impl Dwarf {
    pub fn new(s: Sections, little_endian: bool) -> Dwarf {
        Dwarf {
            le: little_endian,
            s,
            units: Vec::new(),
            index: RangeIndex::default(),
            next_unit: Some(0),
            abbrev_cache: Vec::new(),
            header_names: NameMemo::default(),
            fresh: Vec::new(),
            recording: None,
            finished: Vec::new(),
            failed: false,
            ahead: None,
            owned: Vec::new(),
            generation: 0,
            abstract_memo: FastMap::default(),
            abstract_ops: Vec::new(),
            abstract_trail: Vec::new(),
            abstract_cut: false,
            abstract_hits: Some(0),
            loader: None,
            summary: None,
            learn: None,
            hand_over: false,
            scans: 0,
        }
    }

    /// A reading of `elf`'s DWARF that takes units from `summary` and
    /// inflates the sections only when bytes are needed.
    pub fn lazy(elf: Elf, summary: Arc<Summary>, place: Option<Place>) -> Dwarf {
        let le = elf.little_endian;
        let mut d = Dwarf::new(Sections::default(), le);
        d.loader = Some((elf, place));
        d.summary = Some(summary);
        d
    }

    /// Another reading of the same file from the start, for a decoder.
    pub fn twin(&self) -> Dwarf {
        let mut d = Dwarf::new(self.s.clone(), self.le);
        d.loader = self.loader.clone();
        d.summary = self.summary.clone();
        d
    }

    /// The sections, read now if they were not.
    fn load_sections(&mut self) {
        if let Some((elf, place)) = self.loader.take() {
            self.s = Sections::load(&elf, place.as_ref()).unwrap_or_default();
        }
    }

    /// Notes what is found out, for [`Dwarf::to_store`].
    pub fn learn(&mut self) {
        self.learn = Some(Learn::default());
        if self.recording.is_none() {
            self.recording = Some(Vec::new());
        }
    }

    /// Things learned since the last call (0 if nothing can be stored).
    pub fn take_news(&mut self) -> usize {
        match self.learn.as_mut() {
            Some(l) if !l.spoiled => std::mem::take(&mut l.news),
            _ => 0,
        }
    }

    /// The summary a cache should hold now: the one read, and what this
    /// reading found out; `None` if it must not be stored.
    pub fn to_store(&self) -> Option<Summary> {
        let l = self.learn.as_ref().filter(|l| !l.spoiled)?;
        let mut s = self.summary.as_deref().cloned().unwrap_or_default();
        s.units.extend(l.headers.iter().cloned());
        s.decodes.resize(s.units.len(), None);
        for (&ui, d) in &l.decodes {
            if let Some(slot) = s.decodes.get_mut(ui as usize) {
                *slot = Some(d.clone());
            }
        }
        s.ended |= l.ended;
        Some(s)
    }

    fn learned(&mut self, ui: usize, d: Decode) {
        if let Some(l) = self.learn.as_mut() {
            l.decodes.insert(ui as u32, d);
            l.news += 1;
        }
    }

    fn spoil(&mut self) {
        if let Some(l) = self.learn.as_mut() {
            l.spoiled = true;
        }
    }

    fn endian(&self) -> RunTimeEndian {
        if self.le { RunTimeEndian::Little } else { RunTimeEndian::Big }
    }

    fn str_sections(&self, unit: &Unit) -> StrSecs {
        (self.s.str.clone(), self.s.line_str.clone(), self.s.str_offsets.clone(), unit.str_offsets_base, unit.offset_size)
    }

    /// binutils' `read_indexed_string`.
    fn indexed_string(&self, unit: &Unit, idx: u64) -> Name {
        let off = || {
            if unit.str_offsets_base == 0 {
                return None;
            }
            let sz = unit.offset_size as u64;
            let at = unit.str_offsets_base.checked_add(idx.checked_mul(sz)?)?;
            let mut r = Reader::new(&self.s.str_offsets, self.le);
            if at.checked_add(sz)? > self.s.str_offsets.len() as u64 {
                return None;
            }
            r.seek(at as usize);
            Some(if sz == 4 { r.u32() as u64 } else { r.u64() })
        };
        // An empty string here still counts as a name (binutils reads it
        // without the emptiness check of the other forms).
        match off() {
            Some(o) if cstr_at(&self.s.str, o).is_some() => Name::at(IN_STR, o),
            _ => Name::NONE,
        }
    }

    /// The non-empty string at `offset` of a string section.
    fn name_in(&self, place: u64, offset: u64) -> Name {
        let sec = if place == IN_STR { &self.s.str } else { &self.s.line_str };
        match cstr_at(sec, offset) {
            Some(s) if !s.is_empty() => Name::at(place, offset),
            _ => Name::NONE,
        }
    }

    /// The bytes of a DWARF name (`None` for none, or one taken from the
    /// symbol table).
    pub fn name_bytes(&self, name: Name) -> Option<&[u8]> {
        let offset = name.0 & ((1 << 61) - 1);
        let sec = match name.0 >> 61 {
            IN_STR => &self.s.str,
            IN_LINE_STR => &self.s.line_str,
            IN_INFO => &self.s.info,
            _ => return None,
        };
        cstr_at(sec, offset)
    }

    /// A name as text.
    pub fn name(&self, name: Name) -> Option<Arc<str>> {
        if name.0 >> 61 == OWNED {
            return self.owned.get((name.0 & ((1 << 61) - 1)) as usize).cloned();
        }
        self.name_bytes(name).map(to_str)
    }

    /// Keeps a name from elsewhere (the symbol table) as a [`Name`].
    pub fn own(&mut self, name: Option<Arc<str>>) -> Name {
        match name {
            None => Name::NONE,
            Some(n) => {
                self.owned.push(n);
                Name::at(OWNED, self.owned.len() as u64 - 1)
            }
        }
    }

    /// binutils' `read_indexed_address`.
    fn indexed_address(&self, unit: &Unit, idx: u64) -> u64 {
        let sz = unit.addr_size as u64;
        let Some(at) = unit.addr_base.checked_add(idx.saturating_mul(sz)) else { return 0 };
        if at.saturating_add(sz) > self.s.addr.len() as u64 {
            return 0;
        }
        let mut r = Reader::new(&self.s.addr, self.le);
        r.seek(at as usize);
        r.addr(unit.addr_size)
    }

    fn classify(&self, unit: &Unit, raw: &AttributeValue<R<'_>>) -> Val {
        match *raw {
            AttributeValue::String(s) => {
                // The slice lies in `.debug_info` (every reader here reads
                // from the section's one copy).
                let info = self.s.info.as_ptr() as usize;
                let at = (s.slice().as_ptr() as usize).wrapping_sub(info);
                if s.is_empty() || at >= self.s.info.len() {
                    Val::Str(Name::NONE)
                } else {
                    Val::Str(Name::at(IN_INFO, at as u64))
                }
            }
            AttributeValue::DebugStrRef(o) => Val::Str(self.name_in(IN_STR, o.0 as u64)),
            AttributeValue::DebugLineStrRef(o) => Val::Str(self.name_in(IN_LINE_STR, o.0 as u64)),
            AttributeValue::DebugStrOffsetsIndex(i) => Val::Str(self.indexed_string(unit, i.0 as u64)),
            AttributeValue::DebugStrRefSup(_) => Val::Str(Name::NONE),
            AttributeValue::DebugAddrIndex(i) => {
                let v = if unit.addr_base != 0 { self.indexed_address(unit, i.0 as u64) } else { i.0 as u64 };
                Val::Int { v, addr: false }
            }
            AttributeValue::Addr(a) => Val::Int { v: a, addr: true },
            ref v => match int_of(v) {
                Some(v) => Val::Int { v, addr: false },
                None => Val::Other,
            },
        }
    }

    /// binutils' `stash_comp_unit`/`parse_comp_unit`: reads the next unit;
    /// `None` once there is none, or after a unit it cannot read (binutils
    /// then ignores the rest of `.debug_info`).
    pub fn parse_next(&mut self) -> Option<usize> {
        let parsed = self.parse_unit();
        if parsed.is_none()
            && let Some(a) = &self.ahead
        {
            // No unit past these: the decoder has nothing to find there.
            a.last_unit(self.units.len());
        }
        parsed
    }

    fn parse_unit(&mut self) -> Option<usize> {
        let off = self.next_unit?;
        self.next_unit = None;
        let n = self.units.len();
        if let Some(s) = &self.summary {
            if let Some(h) = s.units.get(n) {
                let unit = Unit::from_header(h).filter(|u| u.offset == off)?;
                return Some(self.push_unit(unit));
            }
            if s.ended {
                return None;
            }
        }
        self.load_sections();
        let read = self.read_unit(off);
        if read.is_none()
            && let Some(l) = self.learn.as_mut()
        {
            l.ended = true;
            l.end_news = true;
            l.news += 1;
        }
        read
    }

    /// Adds a unit read.
    fn push_unit(&mut self, unit: Unit) -> usize {
        self.index.add(self.units.len(), unit.aranges.iter().copied());
        self.next_unit = Some(unit.end);
        self.units.push(unit);
        self.generation += 1;
        self.units.len() - 1
    }

    /// [`Dwarf::parse_unit`] from the bytes.
    fn read_unit(&mut self, off: usize) -> Option<usize> {
        let endian = self.endian();
        let info_data = self.s.info.clone();
        let abbrev_data = self.s.abbrev.clone();
        if off >= info_data.len() {
            return None;
        }
        let info = DebugInfo::new(&info_data, endian);
        let h = info.header_from_offset(gimli::DebugInfoOffset(off)).ok()?;
        let enc = h.encoding();
        if !(2..=5).contains(&enc.version) || !matches!(enc.address_size, 2 | 4 | 8) {
            return None;
        }
        let aoff = h.debug_abbrev_offset().0 as u64;
        if aoff >= abbrev_data.len() as u64 {
            return None;
        }
        let end = off.saturating_add(h.length_including_self()).min(info_data.len());
        let root = h.header_size();
        let mut die = EndianSlice::new(info_data.get(off.checked_add(root)?..end)?, endian);
        let code = gimli::Reader::read_uleb128(&mut die).ok()?;
        let (tag, has_children, specs) = abbrev::find(&abbrev_data, aoff, code, endian)?;
        let mut unit = Unit {
            offset: off,
            end,
            version: enc.version,
            addr_size: enc.address_size,
            offset_size: enc.format.word_size(),
            abbrev_offset: aoff,
            lang: 0,
            comp_dir: None,
            stmt_list: None,
            base_address: 0,
            addr_base: 0,
            str_offsets_base: 0,
            aranges: Aranges::default(),
            first_child: None,
            error: false,
            lines_ready: false,
            decoded: None,
            func_cover: Coverage::default(),
            lazy: None,
        };
        let compunit = tag == DW_TAG_COMPILE_UNIT;
        let (mut low, mut high, mut high_rel) = (0u64, 0u64, false);
        let mut deferred = Vec::new();
        for spec in specs {
            let raw = abbrev::read(&mut die, spec, enc)?;
            let name = spec.name().0;
            let indexed = matches!(raw, AttributeValue::DebugStrOffsetsIndex(_)) && unit.str_offsets_base == 0
                || matches!(raw, AttributeValue::DebugAddrIndex(_)) && unit.addr_base == 0;
            if indexed {
                deferred.push((name, raw));
                continue;
            }
            match name {
                0x73 => unit.addr_base = int_of(&raw).unwrap_or(0),
                0x72 => unit.str_offsets_base = int_of(&raw).unwrap_or(0),
                _ => {}
            }
            let v = self.classify(&unit, &raw);
            self.unit_attr(&mut unit, name, v, compunit, &mut low, &mut high, &mut high_rel);
        }
        for (name, raw) in deferred {
            let v = self.classify(&unit, &raw);
            self.unit_attr(&mut unit, name, v, compunit, &mut low, &mut high, &mut high_rel);
        }
        if high_rel {
            high = high.wrapping_add(low);
        }
        if high != 0 {
            unit.aranges.add(low, high);
        }
        if has_children {
            // Unit-relative, as the DIE offsets that refer to it.
            unit.first_child = Some(end - off - die.len());
        }
        if let Some(l) = self.learn.as_mut() {
            l.headers.push(unit.header());
            l.news += 1;
        }
        Some(self.push_unit(unit))
    }

    /// The abbreviation table at `offset` in `.debug_abbrev`, for a unit
    /// of encoding `enc`.
    fn abbreviations(&mut self, offset: u64, enc: gimli::Encoding) -> Option<Arc<abbrev::Table>> {
        const KEEP: usize = 8;
        if let Some(i) = self.abbrev_cache.iter().rposition(|(o, t)| *o == offset && t.encoding == enc) {
            let hit = self.abbrev_cache.remove(i);
            self.abbrev_cache.push(hit);
        } else {
            let table = Arc::new(abbrev::Table::parse(&self.s.abbrev, offset, self.endian(), enc)?);
            if self.abbrev_cache.len() == KEEP {
                self.abbrev_cache.remove(0);
            }
            self.abbrev_cache.push((offset, table));
        }
        self.abbrev_cache.last().map(|(_, t)| t.clone())
    }

    #[allow(clippy::too_many_arguments)]
    fn unit_attr(&self, unit: &mut Unit, name: u16, v: Val, compunit: bool, low: &mut u64, high: &mut u64, high_rel: &mut bool) {
        match (name, v) {
            (0x10, Val::Int { v, .. }) => unit.stmt_list = Some(v),
            (0x11, Val::Int { v, .. }) => {
                *low = v;
                if compunit {
                    unit.base_address = v;
                }
            }
            (0x12, Val::Int { v, addr }) => {
                *high = v;
                *high_rel = !addr;
            }
            (0x55, Val::Int { v, .. }) => {
                let mut ar = std::mem::take(&mut unit.aranges);
                let _ = self.read_rangelist(unit, &mut ar, v);
                unit.aranges = ar;
            }
            (0x1b, Val::Str(s)) => {
                unit.comp_dir = self.name(s).map(|d| match d.find(':') {
                    Some(p) if p > 0 && d.as_bytes()[p - 1] == b'.' && d.as_bytes().get(p + 1) == Some(&b'/') => d[p + 1..].into(),
                    _ => d,
                });
            }
            (0x13, Val::Int { v, .. }) => unit.lang = v,
            _ => {}
        }
    }

    /// binutils' `read_rangelist` (`read_ranges` for DWARF <= 4,
    /// `read_rnglists` after); false on a read error.
    fn read_rangelist(&self, unit: &Unit, ar: &mut Aranges, offset: u64) -> bool {
        let base0 = unit.base_address;
        if unit.version <= 4 {
            if !self.s.has_ranges {
                return false;
            }
            let d = &self.s.ranges;
            if offset > d.len() as u64 {
                return false;
            }
            let mut r = Reader::new(d, self.le);
            r.seek(offset as usize);
            let mut base = base0;
            let sz = unit.addr_size as usize;
            loop {
                if 2 * sz > r.remaining() {
                    return false;
                }
                let low = r.addr(unit.addr_size);
                let high = r.addr(unit.addr_size);
                if low == 0 && high == 0 {
                    return true;
                }
                let all_ones = if sz == 8 { u64::MAX } else { (1u64 << (8 * sz)) - 1 };
                if low == all_ones && high != all_ones {
                    base = high;
                } else {
                    ar.add(base.wrapping_add(low), base.wrapping_add(high));
                }
            }
        } else {
            if !self.s.has_rnglists {
                return false;
            }
            let d = &self.s.rnglists;
            if offset >= d.len() as u64 {
                return false;
            }
            let mut r = Reader::new(d, self.le);
            r.seek(offset as usize);
            let mut base = base0;
            let sz = unit.addr_size as usize;
            loop {
                if r.remaining() == 0 {
                    return false;
                }
                let (low, high) = match r.u8() {
                    0 => return true,
                    5 => {
                        if sz > r.remaining() {
                            return false;
                        }
                        base = r.addr(unit.addr_size);
                        continue;
                    }
                    7 => {
                        if sz > r.remaining() {
                            return false;
                        }
                        let low = r.addr(unit.addr_size);
                        (low, low.wrapping_add(r.uleb()))
                    }
                    4 => {
                        let low = base.wrapping_add(r.uleb());
                        (low, base.wrapping_add(r.uleb()))
                    }
                    6 => {
                        if 2 * sz > r.remaining() {
                            return false;
                        }
                        (r.addr(unit.addr_size), r.addr(unit.addr_size))
                    }
                    _ => return false,
                };
                ar.add(low, high);
            }
        }
    }

    /// The units binutils' address trie would offer for `addr`: read units
    /// with a known range (unit ranges, line sequences, function ranges of
    /// decoded units) containing it, in reading order.
    pub fn trie_candidates(&mut self, addr: u64) -> Vec<usize> {
        let mut out = self.index.holding(addr);
        out.retain(|&u| self.units[u].aranges.contains(addr) || self.func_contains(u, addr));
        out
    }

    fn func_contains(&mut self, ui: usize, addr: u64) -> bool {
        self.units[ui].lines_ready && self.lookup_function(ui, addr).is_some()
    }

    /// binutils' `comp_unit_maybe_decode_line_info`: the line table, then
    /// the function table.
    pub fn maybe_decode(&mut self, ui: usize) -> bool {
        if let Some(t) = self.recording.as_mut().and_then(|r| r.last_mut()) {
            t.deps.push(ui as u32);
        }
        let u = &self.units[ui];
        if u.error {
            return false;
        }
        if u.lines_ready {
            return true;
        }
        if let Some(d) = self.summary.as_ref().and_then(|s| s.decodes.get(ui)?.clone()) {
            return self.replay_summary(ui, d);
        }
        if let Some(ready) = self.ahead.as_ref().and_then(|a| a.take(ui))
            && ready.offset == self.units[ui].offset
        {
            return self.replay(ui, ready);
        }
        if let Some(r) = self.recording.as_mut() {
            r.push(Trail { unit: ui as u32, ..Default::default() });
        }
        let ok = self.decode_unit(ui);
        let trail = self.recording.as_mut().and_then(|r| r.pop());
        if self.learn.is_some() {
            match (&trail, ok) {
                (Some(t), true) => {
                    let d = self.summary_of(ui, t);
                    self.learned(ui, d);
                }
                // The line program failed: nothing else happened.
                (_, false) if !self.units[ui].lines_ready => self.learned(ui, Decode::Failed),
                _ => self.spoil(),
            }
        }
        if let Some(t) = trail
            && ok
            && self.hand_over
        {
            self.finished.push(t);
        }
        ok
    }

    /// What decoding unit `ui` (just done, with `trail`) did, for the cache.
    fn summary_of(&self, ui: usize, trail: &Trail) -> Decode {
        let u = &self.units[ui];
        decode_summary(u.decoded.as_deref(), &u.func_cover, trail)
    }

    /// Does what decoding unit `ui` did when the summary was made, without
    /// building its tables: its ranges grow by its line sequences, the
    /// units its scan read and decoded are read and decoded, and what its
    /// functions cover is known. The tables wait for a lookup that needs
    /// them ([`Dwarf::tables_of`]).
    fn replay_summary(&mut self, ui: usize, d: Decode) -> bool {
        let Decode::Done(d) = d else {
            return self.fail(ui);
        };
        self.lines_decoded(ui, &d.seq_ranges);
        let u = &mut self.units[ui];
        let may_hold = d.seq_ranges.iter().chain(d.open.iter()).copied().collect();
        u.lazy = Some(Box::new(Lazy { may_hold, has_vars: d.has_vars }));
        if u.first_child.is_none() {
            return true;
        }
        if !self.replay_references(ui, d.parsed, &d.deps) {
            self.spoil();
            return self.fail(ui);
        }
        self.functions_covered(ui, Coverage::of(d.func_ranges.into_iter()));
        true
    }

    /// What decoding unit `ui`'s line program does to the reading state:
    /// the unit's ranges grow by its line sequences (an added range may
    /// extend one added before, so the index takes them all again) and
    /// lookups see a new generation.
    fn lines_decoded(&mut self, ui: usize, seq_ranges: &[(u64, u64)]) {
        self.generation += 1;
        let u = &mut self.units[ui];
        for &(l, h) in seq_ranges {
            u.aranges.add(l, h);
        }
        self.index.add(ui, u.aranges.iter().copied());
        u.lines_ready = true;
    }

    /// Unit `ui`'s scan found functions covering `cover`: the range index
    /// holds those ranges too.
    fn functions_covered(&mut self, ui: usize, cover: Coverage) {
        self.index.add(ui, cover.ranges().iter().copied());
        self.units[ui].func_cover = cover;
    }

    /// What a replayed decode of unit `ui` did through its references:
    /// the first `parsed` units read, `deps` decoded in order; false if
    /// one of them fails now.
    fn replay_references(&mut self, ui: usize, parsed: u32, deps: &[u32]) -> bool {
        // The units it decodes name it in their own trails only.
        if let Some(r) = self.recording.as_mut() {
            r.push(Trail { unit: ui as u32, ..Default::default() });
        }
        let mut ok = true;
        while ok && self.units.len() < parsed as usize {
            ok = self.parse_next().is_some();
        }
        for &d in deps {
            ok = ok && (d as usize) < self.units.len() && self.maybe_decode(d as usize);
        }
        if let Some(r) = self.recording.as_mut() {
            r.pop();
        }
        ok
    }

    /// The line table of unit `ui` (built now for a unit decoded from a
    /// summary); false if it has none. Its rows are kept if a lookup of
    /// `at` can land in them: that lookup comes next, and would otherwise
    /// run the same program again for the rows.
    fn lines_of(&mut self, ui: usize, at: Option<u64>) -> bool {
        let u = &self.units[ui];
        let Some(lazy) = u.lazy.as_ref().filter(|_| u.decoded.is_none()) else {
            return u.decoded.is_some();
        };
        let keep = match at {
            Some(addr) if lazy.may_hold(addr) => Rows::Keep,
            _ => Rows::Skip,
        };
        self.load_sections();
        match self.decode_lines(ui, keep) {
            Some(lines) => {
                self.units[ui].decoded = Some(Box::new(Decoded { lines, funcs: Vec::new(), vars: Vec::new(), lookup: None }));
                self.fresh.push(ui as u32);
                true
            }
            None => false,
        }
    }

    /// All tables of unit `ui`, built now for a unit decoded from a
    /// summary: the scan of its DIEs finds what it found when the summary
    /// was made (the same bytes; the units it refers to were read and
    /// decoded by [`Dwarf::replay_summary`], so it reads and decodes
    /// nothing more and changes no other state than the memos); for a
    /// lookup of `at`, if any (see [`Dwarf::lines_of`]).
    fn tables_of(&mut self, ui: usize, at: Option<u64>) -> bool {
        if self.units[ui].lazy.is_none() {
            return self.units[ui].decoded.is_some();
        }
        let lines = self.lines_of(ui, at);
        self.units[ui].lazy = None;
        if !lines {
            return false;
        }
        if self.units[ui].first_child.is_some() {
            let recording = self.recording.take();
            let scanned = self.scan(ui);
            self.recording = recording;
            if let (Some((funcs, vars)), Some(d)) = (scanned, self.units[ui].decoded.as_mut()) {
                d.funcs = funcs;
                d.vars = vars;
            }
            self.scanned();
        }
        true
    }

    /// A unit's scan touched pages of the mapped sections (its DIEs, their
    /// names, its abbreviations, the units it refers to) and what it found
    /// is in the tables now: the pages can go. On kernels that map a whole
    /// large page-cache folio per fault, the few units a small run decodes
    /// kept up to 8 MB of a file resident until the formatter's next
    /// release (`bench/small.py`'s py: peak 38.6 -> 34.2 MB). After each
    /// of the first 16 scans, then ever more seldom
    /// ([`crate::engine::mapping::release_due`]): a long run decoding
    /// thousands of units would fault the same pages in again and again.
    fn scanned(&mut self) {
        if crate::engine::mapping::release_due(self.scans, 1, 1, 1 << 10) {
            self.s.release_pages(None);
        }
        self.scans += 1;
    }

    fn fail(&mut self, ui: usize) -> bool {
        self.units[ui].error = true;
        self.failed = true;
        false
    }

    /// Does what decoding unit `ui` does, with its tables decoded ahead:
    /// the unit's ranges grow by its line sequences, the units its scan
    /// read and decoded are read and decoded (from their own tables), then
    /// its functions are in place.
    fn replay(&mut self, ui: usize, ready: Ready) -> bool {
        if self.learn.is_some() {
            let summary = decode_summary(Some(&ready.decoded), &ready.func_cover, &ready.trail);
            self.learned(ui, summary);
        }
        let Ready { decoded, func_cover, trail, .. } = ready;
        let Decoded { lines, funcs, vars, .. } = *decoded;
        self.fresh.push(ui as u32);
        self.lines_decoded(ui, &lines.seq_ranges);
        let u = &mut self.units[ui];
        let scans = u.first_child.is_some();
        u.decoded = Some(Box::new(Decoded { lines, funcs: Vec::new(), vars: Vec::new(), lookup: None }));
        if !scans {
            return true;
        }
        if !self.replay_references(ui, trail.parsed, &trail.deps) {
            self.spoil();
            return self.fail(ui);
        }
        self.functions_covered(ui, func_cover);
        if let Some(d) = self.units[ui].decoded.as_mut() {
            d.funcs = funcs;
            d.vars = vars;
        }
        true
    }

    /// Records what decodes do, to hand the tables to a session (see
    /// `a2l::ahead`).
    pub fn record(&mut self) {
        self.recording = Some(Vec::new());
        self.hand_over = true;
    }

    /// Takes units decoded ahead by another thread.
    pub fn take_ahead(&mut self, shared: Arc<Board<Ready>>) {
        self.ahead = Some(shared);
    }

    /// The units decoded since the last call, with what their decoding
    /// did; here their tables keep only the file names (later units may
    /// name their files).
    pub fn take_finished(&mut self) -> Vec<(usize, Ready)> {
        self.fresh.clear();
        let mut out = Vec::new();
        for t in std::mem::take(&mut self.finished) {
            let ui = t.unit as usize;
            let u = &mut self.units[ui];
            let Some(mut d) = u.decoded.take() else { continue };
            d.lines.pack();
            u.decoded = Some(Box::new(Decoded { lines: d.lines.file_names(), funcs: Vec::new(), vars: Vec::new(), lookup: None }));
            out.push((ui, Ready { offset: u.offset, decoded: d, func_cover: u.func_cover.clone(), trail: t }));
        }
        out
    }

    /// binutils' `comp_unit_maybe_decode_line_info` proper.
    fn decode_unit(&mut self, ui: usize) -> bool {
        if self.units[ui].stmt_list.is_none() {
            return self.fail(ui);
        }
        self.load_sections();
        let Some(lines) = self.decode_lines(ui, Rows::Skip) else {
            return self.fail(ui);
        };
        self.fresh.push(ui as u32);
        self.lines_decoded(ui, &lines.seq_ranges);
        let u = &mut self.units[ui];
        u.decoded = Some(Box::new(Decoded { lines, funcs: Vec::new(), vars: Vec::new(), lookup: None }));
        if u.first_child.is_some() {
            match self.scan(ui) {
                Some((funcs, vars)) => {
                    self.functions_covered(ui, Coverage::of(funcs.iter().flat_map(|f| f.aranges.iter().copied())));
                    if let Some(d) = self.units[ui].decoded.as_mut() {
                        d.funcs = funcs;
                        d.vars = vars;
                    }
                    self.scanned();
                }
                None => return self.fail(ui),
            }
        }
        true
    }

    /// The line program of unit `ui`, decoded.
    fn decode_lines(&self, ui: usize, keep: Rows) -> Option<LineTable> {
        let u = &self.units[ui];
        let (st, lst, so, so_base, osz) = self.str_sections(u);
        let strs = StrSections {
            debug_str: &st,
            debug_line_str: &lst,
            str_offsets: (so_base != 0).then_some((&so[..], so_base, osz)),
            memo: &self.header_names,
        };
        LineTable::decode(&self.s.line, u.stmt_list?, self.le, u.addr_size, u.comp_dir.clone(), &strs, keep)
    }

    /// Ends a lookup: the line tables decoded since the last one are
    /// packed. Most units of a large program are decoded only because
    /// binutils reads units in order until one holds the address, and
    /// never answer a lookup; their rows would be most of the memory.
    pub fn settle(&mut self) {
        for ui in std::mem::take(&mut self.fresh) {
            if let Some(d) = self.units[ui as usize].decoded.as_mut() {
                d.lines.pack();
            }
        }
    }

    /// The unit holding a `.debug_info` offset, reading further units until
    /// it is found (binutils' `find_abstract_instance` for DW_FORM_ref_addr).
    fn unit_containing(&mut self, global: u64) -> Option<usize> {
        let found = self.read_unit_containing(global)?;
        if let Some(t) = self.recording.as_mut().and_then(|r| r.last_mut()) {
            t.parsed = t.parsed.max(found as u32 + 1);
        }
        Some(found)
    }

    fn read_unit_containing(&mut self, global: u64) -> Option<usize> {
        if let Some(i) = self.units.partition_point(|u| u.offset as u64 <= global).checked_sub(1)
            && global < self.units[i].end as u64 {
                return Some(i);
            }
        loop {
            let u = self.parse_next()?;
            if (self.units[u].offset as u64..self.units[u].end as u64).contains(&global) {
                return Some(u);
            }
        }
    }

    fn unit_end(&self, ui: usize) -> usize {
        self.units[ui].end
    }

    /// The attributes of the DIE at `off` (unit-relative) in unit `ui`, or
    /// `None` for a null entry.
    fn die_attrs(&mut self, ui: usize, off: u64) -> Result<Option<Attrs>, ()> {
        let enc = self.units[ui].encoding();
        let table = self.abbreviations(self.units[ui].abbrev_offset, enc).ok_or(())?;
        let u = &self.units[ui];
        let start = u.offset.checked_add(usize::try_from(off).map_err(|_| ())?).ok_or(())?;
        let end = self.unit_end(ui);
        if start >= end {
            return Err(());
        }
        let mut input = EndianSlice::new(self.s.info.get(start..end).ok_or(())?, self.endian());
        let code = gimli::Reader::read_uleb128(&mut input).map_err(|_| ())?;
        if code == 0 {
            return Ok(None);
        }
        let abbrev = table.get(code).ok_or(())?;
        let attrs = table.attrs(abbrev);
        // Owned values, so that decoding another unit afterwards does not
        // clash with borrowed attribute data.
        let mut out = Vec::with_capacity(attrs.len());
        for attr in attrs {
            if !matches!(attr.name(), 0x03 | 0x47 | 0x6e | 0x2007 | 0x3a | 0x3b) {
                if table.skip(&mut input, attr).is_none() {
                    break;
                }
                continue;
            }
            let Some(raw) = table.read(&mut input, attr) else { break };
            let rf = ref_of(&raw);
            out.push((attr.name(), self.classify(u, &raw), rf));
        }
        Ok(Some(out))
    }

    /// binutils' `find_abstract_instance`: the name (and whether it is a
    /// linkage name) from the DIE an abstract_origin/specification refers to.
    fn find_abstract_instance(
        &mut self,
        ui: usize,
        r: Ref,
        depth: u32,
        name: &mut Name,
        is_linkage: &mut bool,
        decl: &mut Decl,
    ) -> bool {
        if depth == 0 {
            self.abstract_cut = false;
            self.abstract_trail.clear();
        }
        self.abstract_instance(ui, r, depth, name, is_linkage, decl).0
    }

    /// [`Dwarf::find_abstract_instance`], and the levels of references it
    /// went through.
    fn abstract_instance(&mut self, ui: usize, r: Ref, depth: u32, name: &mut Name, is_linkage: &mut bool, decl: &mut Decl) -> (bool, u32) {
        if depth == 100 {
            self.abstract_cut = true;
            return (false, 1);
        }
        let (ui, off) = match r {
            Ref::Alt => return (false, 1),
            Ref::Global(g) => {
                if g == 0 {
                    return (true, 1);
                }
                if g >= self.s.info.len() as u64 {
                    return (false, 1);
                }
                self.abstract_trail.push(AbstractOp::Containing(g));
                let Some(t) = self.unit_containing(g) else { return (false, 1) };
                (t, g - self.units[t].offset as u64)
            }
            Ref::Local(o) => {
                let total = (self.unit_end(ui) - self.units[ui].offset) as u64;
                if o == 0 || o >= total {
                    return (false, 1);
                }
                (ui, o)
            }
        };
        let key = self.units[ui].offset as u64 + off;
        if let Some(m) = self.abstract_memo.get(&key).copied()
            && depth + m.height <= 100
            && let Some(hits) = self.abstract_hits.as_mut()
        {
            *hits += 1;
            for i in m.start..m.start + m.len {
                let op = self.abstract_ops[i as usize];
                if !self.abstract_effect(op, name, is_linkage, decl) {
                    return (false, m.height);
                }
            }
            return (m.ok, m.height);
        }
        let from = self.abstract_trail.len();
        let (ok, height) = self.read_abstract_instance(ui, off, depth, name, is_linkage, decl);
        if !self.abstract_cut {
            let start = self.abstract_ops.len() as u32;
            self.abstract_ops.extend_from_slice(&self.abstract_trail[from..]);
            let len = self.abstract_ops.len() as u32 - start;
            self.abstract_memo.insert(key, AbstractMemo { start, len, height, ok });
        }
        (ok, height)
    }

    /// Reads the DIE at `off` of unit `ui` for [`Dwarf::abstract_instance`].
    fn read_abstract_instance(
        &mut self,
        ui: usize,
        off: u64,
        depth: u32,
        name: &mut Name,
        is_linkage: &mut bool,
        decl: &mut Decl,
    ) -> (bool, u32) {
        let attrs = match self.die_attrs(ui, off) {
            Ok(Some(a)) => a,
            Ok(None) => return (true, 1),
            Err(()) => return (false, 1),
        };
        let lang = self.units[ui].lang;
        let mut height = 1;
        for (n, v, rf) in attrs {
            let op = match (n, v) {
                (0x03, Val::Str(s)) => AbstractOp::NameIfNone(s, name_is_linkage(lang)),
                (0x47, Val::Int { v, .. }) => {
                    let rf = rf.unwrap_or(Ref::Local(v));
                    let (ok, h) = self.abstract_instance(ui, rf, depth + 1, name, is_linkage, decl);
                    height = height.max(h + 1);
                    if !ok {
                        return (false, height);
                    }
                    continue;
                }
                (0x6e | 0x2007, Val::Str(s)) => AbstractOp::Linkage(s),
                (0x3a, Val::Int { v, .. }) => AbstractOp::DeclFile(ui as u32, Some(v)),
                // A file that is not a number still needs the line table.
                (0x3a, _) => AbstractOp::DeclFile(ui as u32, None),
                (0x3b, Val::Int { v, .. }) => AbstractOp::DeclLine(v as u32),
                _ => continue,
            };
            if !self.abstract_effect(op, name, is_linkage, decl) {
                return (false, height);
            }
        }
        (true, height)
    }

    /// Does one effect of `find_abstract_instance` (and notes it for the
    /// calls under way); false if the DIE's unit failed to decode.
    fn abstract_effect(&mut self, op: AbstractOp, name: &mut Name, is_linkage: &mut bool, decl: &mut Decl) -> bool {
        self.abstract_trail.push(op);
        match op {
            AbstractOp::NameIfNone(s, linkage) => {
                if name.is_none() {
                    *name = s;
                    if linkage {
                        *is_linkage = true;
                    }
                }
            }
            AbstractOp::Linkage(s) => {
                *name = s;
                *is_linkage = true;
            }
            AbstractOp::Containing(g) => {
                self.unit_containing(g);
            }
            AbstractOp::DeclFile(ui, v) => {
                // Decoding may scan another unit: its calls are its own.
                let trail = std::mem::take(&mut self.abstract_trail);
                let cut = self.abstract_cut;
                let ok = self.maybe_decode(ui as usize);
                self.abstract_trail = trail;
                self.abstract_cut = cut;
                if !ok || !self.lines_of(ui as usize, None) {
                    return false;
                }
                if let Some(v) = v {
                    decl.file = self.units[ui as usize].decoded.as_ref().map(|d| d.lines.filename(v));
                }
            }
            AbstractOp::DeclLine(l) => decl.line = l,
        }
        true
    }

    /// binutils' `scan_unit_for_symbols`; `None` on an error.
    fn scan(&mut self, ui: usize) -> Option<(Vec<Func>, Vec<Var>)> {
        let info = self.s.info.clone();
        let u = &self.units[ui];
        let start = u.offset;
        let end = self.unit_end(ui);
        let first = u.first_child?;
        let enc = u.encoding();
        let table = self.abbreviations(u.abbrev_offset, enc)?;
        let lang = self.units[ui].lang;
        let mut input = EndianSlice::new(info.get(start + first..end)?, self.endian());
        let mut funcs: Vec<Func> = Vec::new();
        let mut vars: Vec<Var> = Vec::new();
        // nested_funcs[level]: the function DIE most recently seen at that
        // level, if the most recent DIE there is one.
        let mut nested: Vec<u32> = vec![NONE];
        let mut level: isize = 0;
        // Reused for every DIE: a unit has thousands.
        let mut attrs: RawAttrs<'_> = Vec::new();
        let mut vals: Attrs = Vec::new();
        while level >= 0 {
            if input.is_empty() {
                return None;
            }
            let code = gimli::Reader::read_uleb128(&mut input).ok()?;
            if code == 0 {
                level -= 1;
                continue;
            }
            let abbrev = table.get(code)?;
            let tag = abbrev.tag;
            let is_func = matches!(tag, DW_TAG_SUBPROGRAM | DW_TAG_ENTRY_POINT | DW_TAG_INLINED_SUBROUTINE);
            // Only a variable or member with DW_AT_external or a location
            // can be static (see `scan_var`): the others are stepped over.
            let is_var = matches!(tag, 0x34 | 0x0d) && (abbrev.has(0x3f) || abbrev.has(0x02));
            let lv = level as usize;
            if nested.len() <= lv {
                nested.resize(lv + 1, NONE);
            }
            attrs.clear();
            if is_func || is_var {
                // Only the attributes binutils looks at are decoded; the
                // others (types, frame bases, locations lists...) skipped.
                for attr in table.attrs(abbrev) {
                    let n = attr.name();
                    let wanted = if is_func {
                        matches!(n, 0x58 | 0x59 | 0x31 | 0x47 | 0x03 | 0x6e | 0x2007 | 0x11 | 0x12 | 0x55)
                    } else {
                        matches!(n, 0x3f | 0x02 | 0x47 | 0x03 | 0x3a | 0x3b)
                    };
                    if wanted {
                        attrs.push((n, table.read(&mut input, attr)?));
                    } else {
                        table.skip(&mut input, attr)?;
                    }
                }
            } else {
                table.skip_all(&mut input, abbrev)?;
            }
            if is_func {
                let fi = funcs.len() as u32;
                let mut caller = NONE;
                if tag == DW_TAG_INLINED_SUBROUTINE {
                    for i in (0..lv).rev() {
                        if nested[i] != NONE {
                            caller = nested[i];
                            break;
                        }
                    }
                }
                nested[lv] = fi;
                let mut f =
                    Func { tag, caller, caller_file: NO_FILE, caller_line: 0, name: Name::NONE, is_linkage: false, aranges: Aranges::default() };
                let (mut low, mut high, mut high_rel) = (0u64, 0u64, false);
                let unit = &self.units[ui];
                vals.clear();
                vals.extend(attrs.drain(..).map(|(n, raw)| {
                    let rf = ref_of(&raw);
                    (n, self.classify(unit, &raw), rf)
                }));
                for (n, v, rf) in vals.drain(..) {
                    match (n, v) {
                        (0x58, Val::Int { v, .. }) => {
                            // Named when printed (the unit is decoded here).
                            self.units[ui].decoded.as_ref()?;
                            f.caller_file = v.min(u64::from(NO_FILE - 1)) as u32;
                        }
                        (0x59, Val::Int { v, .. }) => f.caller_line = v as u32,
                        (0x31 | 0x47, Val::Int { v, .. }) => {
                            let rf = rf.unwrap_or(Ref::Local(v));
                            if !self.find_abstract_instance(ui, rf, 0, &mut f.name, &mut f.is_linkage, &mut Decl::default()) {
                                return None;
                            }
                        }
                        (0x03, Val::Str(s))
                            if f.name.is_none() => {
                                f.name = s;
                                if name_is_linkage(lang) {
                                    f.is_linkage = true;
                                }
                            }
                        (0x6e | 0x2007, Val::Str(s)) => {
                            f.name = s;
                            f.is_linkage = true;
                        }
                        (0x11, Val::Int { v, .. }) => low = v,
                        (0x12, Val::Int { v, addr }) => {
                            high = v;
                            high_rel = !addr;
                        }
                        (0x55, Val::Int { v, .. }) => {
                            let unit = &self.units[ui];
                            if !self.read_rangelist(unit, &mut f.aranges, v) {
                                return None;
                            }
                        }
                        _ => {}
                    }
                }
                if high_rel {
                    high = high.wrapping_add(low);
                }
                if high != 0 {
                    f.aranges.add(low, high);
                }
                funcs.push(f);
            } else {
                nested[lv] = NONE;
            }
            if is_var
                && let Some(v) = self.scan_var(ui, &mut attrs) {
                    vars.push(v);
                }
            if abbrev.has_children {
                level += 1;
                let lv = level as usize;
                if nested.len() <= lv {
                    nested.resize(lv + 1, NONE);
                }
                nested[lv] = NONE;
            }
        }
        vars.reverse();
        // Kept as long as the session: no room left from growing.
        funcs.shrink_to_fit();
        vars.shrink_to_fit();
        Some((funcs, vars))
    }

    /// The `varinfo` of a variable or member DIE, if it has a static
    /// address (binutils' `stack` false).
    fn scan_var(&mut self, ui: usize, attrs: &mut RawAttrs<'_>) -> Option<Var> {
        // Only variables with DW_AT_external or a DW_OP_addr location can
        // ever match; skip the others (most are locals) cheaply.
        let is_static = attrs.iter().any(|(n, raw)| match (*n, raw) {
            (0x3f, v) => int_of(v).is_some_and(|x| x != 0),
            (0x02, AttributeValue::Exprloc(e)) => e.0.slice().first() == Some(&0x03),
            (0x02, AttributeValue::Block(b)) => b.slice().first() == Some(&0x03),
            _ => false,
        });
        if !is_static {
            return None;
        }
        let unit = &self.units[ui];
        let addr_size = unit.addr_size;
        let vals: VarAttrs = attrs
            .drain(..)
            .map(|(n, raw)| {
                let rf = ref_of(&raw);
                let blk = match raw {
                    AttributeValue::Exprloc(e) => Some(e.0.slice().to_vec()),
                    AttributeValue::Block(b) => Some(b.slice().to_vec()),
                    _ => None,
                };
                (n, self.classify(unit, &raw), rf, blk)
            })
            .collect();
        let mut var = Var { name: Name::NONE, file: None, line: 0, addr: 0 };
        let mut stack = true;
        for (n, v, rf, blk) in vals {
            match (n, v) {
                (0x47, Val::Int { v, .. }) if v != 0 => {
                    let rf = rf.unwrap_or(Ref::Local(v));
                    let mut decl = Decl { file: var.file.clone(), line: var.line };
                    let mut linkage = false;
                    let mut name = var.name;
                    // Failure only loses what the specification would add.
                    if self.find_abstract_instance(ui, rf, 0, &mut name, &mut linkage, &mut decl) {
                        var.name = name;
                        var.file = decl.file;
                        var.line = decl.line;
                    }
                }
                (0x03, Val::Str(s)) => var.name = s,
                (0x3a, Val::Int { v, .. }) => {
                    var.file = self.units[ui].decoded.as_ref().map(|d| d.lines.filename(v));
                }
                (0x3b, Val::Int { v, .. }) => var.line = v as u32,
                (0x3f, Val::Int { v, .. }) if v != 0 => stack = false,
                (0x02, _) => {
                    if let Some(b) = blk
                        && b.first() == Some(&0x03) {
                            stack = false;
                            if b.len() == addr_size as usize + 1 {
                                let mut r = Reader::new(&b[1..], self.le);
                                var.addr = r.addr(addr_size);
                            }
                        }
                }
                _ => {}
            }
        }
        (!stack).then_some(var)
    }

    /// binutils' `lookup_symbol_in_variable_table`: the file and line of a
    /// static variable at `addr` whose name is part of `sym_name`.
    pub fn lookup_variable(&mut self, ui: usize, addr: u64, sym_name: &str) -> Option<(Option<Arc<str>>, u32)> {
        if let Some(lazy) = &self.units[ui].lazy
            && (!lazy.has_vars || !self.tables_of(ui, None))
        {
            return None;
        }
        let d = self.units[ui].decoded.as_ref()?;
        d.vars
            .iter()
            .find(|v| {
                v.addr == addr
                    && v.file.is_some()
                    && self.name_bytes(v.name).is_some_and(|n| sym_name.contains(&*String::from_utf8_lossy(n)))
            })
            .map(|v| (v.file.clone(), v.line))
    }

    /// binutils' `lookup_address_in_function_table`.
    pub fn lookup_function(&mut self, ui: usize, addr: u64) -> Option<u32> {
        // No range holds an address outside their cover: no need to build
        // the table (most units decoded never hold an address looked up).
        if !self.units[ui].func_cover.contains(addr) {
            return None;
        }
        if !self.tables_of(ui, Some(addr)) {
            return None;
        }
        let d = self.units[ui].decoded.as_mut()?;
        if d.funcs.is_empty() {
            return None;
        }
        if d.lookup.is_none() {
            let mut t: Vec<Lookup> = d
                .funcs
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let (low, high) = f.aranges.bounds();
                    Lookup { func: i as u32, low, high }
                })
                .collect();
            t.sort_by(|a, b| a.low.cmp(&b.low).then(a.high.cmp(&b.high)).then(a.func.cmp(&b.func)));
            let mut hw = t[0].high;
            for e in t.iter_mut().skip(1) {
                if e.high > hw {
                    hw = e.high;
                } else {
                    e.high = hw;
                }
            }
            d.lookup = Some(t);
        }
        let t = d.lookup.as_ref()?;
        if t[t.len() - 1].high < addr {
            return None;
        }
        let (mut low, mut high) = (0usize, t.len());
        let mut first = high;
        while low < high {
            let mid = (low + high) / 2;
            if addr < t[mid].low {
                high = mid;
            } else if addr >= t[mid].high {
                low = mid + 1;
            } else {
                high = mid;
                first = mid;
            }
        }
        let mut best: Option<u32> = None;
        let mut best_len = u64::MAX;
        while first < t.len() {
            if addr < t[first].low {
                break;
            }
            let fi = t[first].func;
            for &(l, h) in d.funcs[fi as usize].aranges.iter() {
                if addr < l || addr >= h {
                    continue;
                }
                let len = h.wrapping_sub(l);
                if len < best_len || (len == best_len && best.is_some_and(|b| fi > b)) {
                    best = Some(fi);
                    best_len = len;
                }
            }
            first += 1;
        }
        best
    }

    /// binutils' `lookup_address_in_line_info_table` in unit `ui`; the
    /// unit's rows are decoded by the first lookup that can land in them
    /// (see [`Rows`]).
    pub fn lookup_line(&mut self, ui: usize, addr: u64) -> Option<LineHit> {
        if let Some(lazy) = &self.units[ui].lazy
            && (!lazy.may_hold(addr) || !self.lines_of(ui, Some(addr)))
        {
            return None;
        }
        let lines = &self.units[ui].decoded.as_ref()?.lines;
        if lines.rows_skipped() {
            if !lines.may_hold(addr) {
                return None;
            }
            // The same program decoded the same way a moment ago: it cannot
            // fail now (if it did, there would be no rows to find).
            let full = self.decode_lines(ui, Rows::Keep)?;
            self.units[ui].decoded.as_mut()?.lines = full;
        }
        self.units[ui].decoded.as_mut()?.lines.lookup(addr)
    }

    pub fn func(&self, ui: usize, fi: u32) -> &Func {
        &self.units[ui].decoded.as_ref().expect("decoded").funcs[fi as usize]
    }

    /// The call site file of a function (see [`Func::caller_file`]).
    pub fn caller_file(&self, ui: usize, fi: u32) -> Option<Arc<str>> {
        let f = self.func(ui, fi).caller_file;
        (f != NO_FILE).then(|| self.units[ui].decoded.as_ref().map(|d| d.lines.filename(u64::from(f)))).flatten()
    }

    pub fn func_mut(&mut self, ui: usize, fi: u32) -> &mut Func {
        &mut self.units[ui].decoded.as_mut().expect("decoded").funcs[fi as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::elf::{Elf, FileBytes};

    fn dwarf(rel: &str) -> Dwarf {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs/tmp/pstitch-fixtures/bin").join(rel);
        let elf = Elf::parse(Arc::new(FileBytes::Owned(std::fs::read(p).expect("fixture")))).expect("elf");
        Dwarf::new(Sections::load(&elf, None).expect("dwarf"), elf.little_endian)
    }

    /// The sections a cache file gives are the bytes `Elf::data`
    /// inflates, whether the run wrote the file or mapped it; the
    /// compressed ones come from the file, the others from the object.
    #[test]
    fn sections_from_a_cache_file_are_the_inflated_bytes() {
        use crate::symbols::a2l::cache::Dir;
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/rustwork");
        let elf = Elf::parse(Arc::new(FileBytes::Owned(std::fs::read(p).expect("fixture")))).expect("elf");
        let key = Sections::cache_key(&elf).expect("build-id");
        let dir = std::env::temp_dir().join(format!("pstitch-sections-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let place = Place::new(&Dir::at(&dir), &key);
        let plain = Sections::load(&elf, None).expect("dwarf");
        let cold = Sections::load(&elf, Some(&place)).expect("dwarf");
        assert!(Dir::at(&dir).sections_file(&key).is_file(), "the cold load wrote the file");
        let warm = Sections::load(&elf, Some(&place)).expect("dwarf");
        let object = elf.file_bytes();
        let in_object = |b: &[u8]| object.as_ptr_range().contains(&b.as_ptr());
        let all = |s: &Sections| [s.info.clone(), s.abbrev.clone(), s.line.clone(), s.str.clone(), s.line_str.clone(), s.ranges.clone(), s.rnglists.clone(), s.addr.clone(), s.str_offsets.clone()];
        let mut from_file = 0;
        for (i, ((a, b), c)) in all(&plain).iter().zip(all(&cold)).zip(all(&warm)).enumerate() {
            assert!(a[..] == b[..] && a[..] == c[..], "section {}", SECTION_NAMES[i]);
            let compressed = Sections::header(&elf, SECTION_NAMES[i]).and_then(|h| elf.compression(h)).is_some();
            if compressed {
                assert!(!in_object(&c[..]), "{} mapped from the cache file", SECTION_NAMES[i]);
                from_file += 1;
            } else if !c.is_empty() {
                assert!(in_object(&c[..]), "{} from the object", SECTION_NAMES[i]);
            }
        }
        assert!(from_file > 0, "the fixture has compressed debug sections");
        assert_eq!((plain.has_ranges, plain.has_rnglists), (warm.has_ranges, warm.has_rnglists));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn packed_line_tables_answer_alike() {
        // Packed at the end of the lookup that decoded them, or by the
        // first lookup that lands in them: the same answers.
        for rel in ["cwork", "cppwork", "rustwork"] {
            let mut d = dwarf(rel);
            while d.parse_next().is_some() {}
            let mut checked = 0;
            for ui in 0..d.units.len() {
                if !d.maybe_decode(ui) {
                    continue;
                }
                let mut fresh = d.decode_lines(ui, Rows::Keep).expect("decodes again");
                let ranges = fresh.seq_ranges.clone();
                d.settle();
                for (lo, hi) in ranges {
                    for addr in (lo.saturating_sub(2)..hi + 2).step_by(3) {
                        let hit = fresh.lookup(addr);
                        assert_eq!(d.lookup_line(ui, addr), hit, "{rel} unit {ui} at {addr:#x}");
                        checked += usize::from(hit.is_some());
                    }
                }
            }
            assert!(checked > 100, "{rel}: {checked}");
        }
    }

    /// Repeating the effects of an earlier `find_abstract_instance` for
    /// the same DIE names every function as reading the DIEs again does.
    #[test]
    fn abstract_instances_repeat_as_read() {
        let decoded = |rel: &str, memo: bool| {
            let mut d = dwarf(rel);
            if !memo {
                d.abstract_hits = None;
            }
            while let Some(ui) = d.parse_next() {
                d.maybe_decode(ui);
            }
            let mut funcs = Vec::new();
            for u in &d.units {
                for f in u.decoded.iter().flat_map(|x| x.funcs.iter()) {
                    funcs.push((d.name(f.name), f.is_linkage, f.tag, f.caller, f.caller_line));
                }
            }
            (funcs, d.abstract_hits.unwrap_or(0))
        };
        let mut all = 0;
        for rel in ["cwork", "cppwork", "rustwork"] {
            let (read, none) = decoded(rel, false);
            let (repeated, hits) = decoded(rel, true);
            assert_eq!(none, 0);
            all += hits;
            assert!(read.iter().filter(|f| f.0.is_some()).count() > 10, "{rel}");
            assert_eq!(read, repeated, "{rel}");
        }
        assert!(all > 100, "{all} repeats");
    }

    #[test]
    fn function_lookup_outside_the_cover_builds_nothing() {
        let mut d = dwarf("cwork");
        let ui = d.parse_next().expect("a unit");
        assert!(d.maybe_decode(ui));
        let cover = d.units[ui].func_cover.ranges().to_vec();
        let (lo, hi) = (cover[0].0, cover[cover.len() - 1].1);
        assert_eq!(d.lookup_function(ui, hi), None);
        assert_eq!(d.lookup_function(ui, lo.wrapping_sub(1)), None);
        // Between two of its functions' ranges (main in .text.startup).
        assert!(cover.len() > 1, "{cover:x?}");
        assert_eq!(d.lookup_function(ui, cover[0].1), None);
        assert!(d.units[ui].decoded.as_ref().unwrap().lookup.is_none());
        assert!(d.lookup_function(ui, lo).is_some());
    }

    #[test]
    fn aranges_follow_binutils_list_order() {
        let mut a = Aranges::default();
        a.add(5, 5);
        assert_eq!(a.iter().count(), 0);
        a.add(10, 0);
        assert_eq!(a.first_low(), 10);
        a.add(10, 20); // replaces a first range ending at 0
        a.add(20, 30); // extends it
        a.add(40, 50);
        a.add(60, 70); // inserted right after the first
        a.add(35, 40); // extends 40..50 downwards
        let v: Vec<_> = a.iter().copied().collect();
        assert_eq!(v, [(10, 30), (60, 70), (35, 50)]);
        assert!(a.contains(35) && !a.contains(30) && !a.contains(55));
        assert_eq!(a.bounds(), (10, 70));
        let mut one = Aranges::default();
        one.add(10, 0);
        assert_eq!(one.iter().copied().collect::<Vec<_>>(), [(10, 0)], "a first range ending at 0 is listed");
        assert_eq!(Aranges::from_list(&v).iter().copied().collect::<Vec<_>>(), v);
        assert_eq!(Aranges::from_list(&[]).iter().count(), 0);
        // A decoded unit keeps one function record per DIE for the run.
        assert!(std::mem::size_of::<Func>() <= 56, "{}", std::mem::size_of::<Func>());
    }

    #[test]
    fn names_stay_in_their_sections() {
        let mut d = dwarf("cppwork");
        while let Some(ui) = d.parse_next() {
            d.maybe_decode(ui);
        }
        let mut named = 0;
        for u in &d.units {
            for f in u.decoded.iter().flat_map(|x| x.funcs.iter()) {
                if let Some(n) = d.name(f.name) {
                    assert!(!n.is_empty() && !n.contains('\0'));
                    named += 1;
                }
            }
        }
        assert!(named > 50, "{named}");
        let own = d.own(Some("from_symtab".into()));
        assert_eq!(d.name(own).as_deref(), Some("from_symtab"));
        assert_eq!(d.name(Name::NONE), None);
    }
}

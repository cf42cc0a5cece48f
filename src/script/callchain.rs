//! Callchain lines: perf's `thread__resolve_callchain_sample` followed by
//! `sample__fprintf_callchain`, with the text of each address cached.
//!
//! A callchain line is the address, then what the address resolves to:
//!
//! ```text
//! \t    7f3e1a2b3c4d  main+0x1d (/tmp/pstitch-fixtures/bin/cwork)
//!  \____ ip ______/ \___________ the same for every sample _________/
//! ```
//!
//! The work is split in three (see [`super::output`]): the reading side
//! walks the callchain and finds each address's map in the thread's
//! address space at that moment, and leaves a [`FrameJob`] in the output
//! where the line goes; the formatter, on its own thread, looks the symbol
//! up and formats the line ([`FrameFormatter`]); the copier, on another,
//! copies it into the output ([`FrameCopier`]).
//!
//! The part after the address depends only on the DSO, the address inside
//! it and the output fields, so it is formatted once and kept in a cache
//! keyed by (fields, DSO, DSO address). The formatter knows which keys
//! the copier keeps and formats a line only when the copier does not have
//! it; both make the same decision about keeping it, so the copier can take
//! the new texts in the order they come. An address with inline frames
//! prints several lines, each starting with the same address.
//!
//! Some text must not be cached: the `(cookie)` frame of a deferred
//! sample, `srcline` (binutils' answers depend on which compilation units
//! it has read so far), a symbol offset that perf computes from the map's
//! start (an address past its symbol's end), and the first lookup after a
//! symbol table failed to load half-way (perf reports the failure to that
//! lookup only).


use super::fields::IpOpts;
use crate::fasthash::FastMap;
use perf_data::bytes::find_byte;
use super::output::{LoadRequest, Other};
use super::{Script, context, format};
use crate::machine::maps::{DsoId, Map};
use crate::machine::{CpuMode, Dsos, Machine};
use crate::symbols::{Symbol, Symbolizer};

/// One address to print, as the reading side resolved it.
#[derive(Debug, Clone, Copy)]
pub struct FrameJob {
    pub ip: u64,
    /// The map `ip` fell in when the sample was printed.
    pub map: Option<Map>,
    pub opts: IpOpts,
    /// A callchain line (`\t` + address + symbol ... + `\n`), or the
    /// sample's own address on the sample line (no tab, no newline).
    pub style: LineStyle,
    /// Print `(cookie)` for the symbol (a deferred sample's cookie frame).
    pub cookie: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    Callchain,
    SampleIp,
}

impl Script {
    /// Prints the lines of a callchain (after the sample line's `\n`).
    /// Context markers switch the address space; an unknown marker makes
    /// perf discard what it resolved and print an empty callchain.
    /// `ty`: the output type whose `ip_opts` apply.
    pub(super) fn print_callchain(&mut self, machine: &mut Machine, tid: i32, chain: impl Iterator<Item = u64> + Clone, ty: usize, cookie: Option<u64>) {
        let max = self.opts.max_stack;
        // perf stops at max_stack entries: markers past them are not seen.
        let mut seen = 0;
        for ip in chain.clone() {
            if seen >= max {
                break;
            }
            if ip < context::MAX {
                seen += 1;
            } else if !matches!(ip, context::HV | context::KERNEL | context::USER | context::USER_DEFERRED) {
                return;
            }
        }
        let code = line_code(self.ip_opts[ty], LineStyle::Callchain, false);
        let mut mode = CpuMode::User;
        let mut seen = 0;
        let epoch = machine.epoch();
        let mut found = self.recent_maps.take(tid, epoch);
        // The mode whose front map the entry before was in.
        let mut last_front: Option<CpuMode> = None;
        for ip in chain {
            if seen >= max {
                break;
            }
            if ip >= context::MAX {
                mode = match ip {
                    context::HV => CpuMode::Hypervisor,
                    context::KERNEL => CpuMode::Kernel,
                    _ => CpuMode::User,
                };
                continue;
            }
            seen += 1;
            let code = if cookie == Some(ip) { code | CODE_COOKIE } else { code };
            // In the map of the entry before (the most recent one found in
            // this mode): its symbols went out, the printer has it.
            let same = found.front_has(mode, ip) && last_front == Some(mode);
            if same {
                self.out.frame_same_map(self.buf.len(), ip, code);
                continue;
            }
            let map = match found.get(mode, ip) {
                Some(known) => known,
                None => {
                    let m = self.find_map_or_gap(machine, tid, mode, ip);
                    found.add(mode, m)
                }
            };
            // get and add leave a map they return at the front.
            last_front = map.is_some().then_some(mode);
            self.frame_line(machine, ip, map, code);
        }
        // A kernel map resized on the way changed the epoch; `found`
        // already forgot what that could change.
        self.recent_maps.keep(tid, machine.epoch(), found);
    }

    /// Leaves a line for the printing side.
    pub(super) fn frame(&mut self, machine: &Machine, job: FrameJob) {
        self.frame_line(machine, job.ip, job.map.as_ref(), job.code());
    }

    /// [`Script::frame`] for a job in parts, after telling the printing
    /// side about DSOs that appeared or changed since the last one.
    #[inline]
    fn frame_line(&mut self, machine: &Machine, ip: u64, map: Option<&Map>, code: u8) {
        self.sync_dsos(machine);
        if let Some(m) = map {
            self.ship_symbols(machine, m);
        }
        self.out.frame(self.buf.len(), ip, map, code);
    }

    /// Loads the symbols of `map`'s DSO the first time a line needs them
    /// and hands them to the printer. The kernel's stay here too when
    /// tracepoint text resolves kernel addresses (`%pS`).
    fn ship_symbols(&mut self, machine: &Machine, map: &Map) {
        let i = map.dso as usize;
        if self.shipped.len() <= i {
            self.shipped.resize(i + 1, false);
        }
        if self.shipped[i] {
            return;
        }
        self.shipped[i] = true;
        let dso = machine.dsos.get(map.dso);
        if Symbolizer::loads_from_file(dso.kind) {
            self.out.load(self.buf.len(), map.dso, LoadRequest::of(dso));
            return;
        }
        let keep = self.trace_resolver && dso.kind == crate::machine::DsoKind::Kernel;
        let shipped = self.symbolizer.ship(&machine.dsos, map.dso, Some(map), keep);
        self.out.other(self.buf.len(), Other::Loaded(map.dso, Box::new(shipped)));
    }

    /// Tells the printing side about DSOs that appeared or changed.
    #[inline]
    pub(super) fn sync_dsos(&mut self, machine: &Machine) {
        let journal = machine.dsos.journal_len();
        if journal != self.dso_journal {
            for u in machine.dsos.updates_since(self.dso_journal) {
                self.out.other(self.buf.len(), Other::Dso(Box::new(u)));
            }
            self.dso_journal = journal;
        }
    }
}

/// What the lookups of the last few threads' callchains found, while
/// the machine stays at one epoch: samples of a thread come in runs
/// (or two runs interleaved, one per CPU), each through the same libraries.
#[derive(Default)]
pub(super) struct RecentMaps {
    /// (tid, epoch, last use, found); `found` is out while a callchain
    /// uses it.
    threads: [(i32, u64, u64, Option<Box<ChainMaps>>); 4],
    uses: u64,
}

impl RecentMaps {
    /// What callchains of `tid` found at `epoch` (nothing if none did);
    /// give it back with [`RecentMaps::keep`].
    fn take(&mut self, tid: i32, epoch: u64) -> Box<ChainMaps> {
        self.uses += 1;
        if let Some(t) = self.threads.iter_mut().find(|t| (t.0, t.1) == (tid, epoch) && t.3.is_some()) {
            t.2 = self.uses;
            return t.3.take().unwrap_or_default();
        }
        let lru = self.threads.iter_mut().min_by_key(|t| t.2).expect("four slots");
        let mut found = lru.3.take().unwrap_or_default();
        *found = ChainMaps::default();
        *lru = (tid, epoch, self.uses, None);
        found
    }

    fn keep(&mut self, tid: i32, epoch: u64, found: Box<ChainMaps>) {
        if let Some(t) = self.threads.iter_mut().find(|t| t.0 == tid && t.3.is_none()) {
            t.1 = epoch;
            t.3 = Some(found);
        }
    }
}

/// The maps and the gaps (ranges in no map) one callchain's lookups found.
/// Neighbouring entries are mostly in the same few libraries, and a
/// frame-pointer walk through code built without frame pointers goes
/// through a few heap and stack ranges (half the lines of a large
/// system-wide recording). Maps do not change within a sample, except that
/// finding a kernel map may resize it (see [`Script::find_map_or_gap`]).
/// Hypervisor addresses are always looked up.
pub(super) struct ChainMaps {
    /// Per mode (user, kernel), most recently found first: the maps'
    /// ranges (checked first) and the maps.
    ranges: [[(u64, u64); 4]; 2],
    maps: [[Map; 4]; 2],
    gaps: [[(u64, u64); 2]; 2],
}

/// A range nothing is in.
const NOWHERE: (u64, u64) = (1, 0);

impl Default for ChainMaps {
    fn default() -> ChainMaps {
        let none = Map { start: 1, end: 0, pgoff: 0, dso: 0, kind: crate::machine::MapKind::Dso, prot: 0, flags: 0 };
        ChainMaps { ranges: [[NOWHERE; 4]; 2], maps: [[none; 4]; 2], gaps: [[NOWHERE; 2]; 2] }
    }
}

fn within(r: (u64, u64), ip: u64) -> bool {
    r.0 <= ip && ip < r.1
}

impl ChainMaps {
    /// Whether `ip` is in the most recently found map of `mode`.
    #[inline]
    fn front_has(&self, mode: CpuMode, ip: u64) -> bool {
        match mode {
            CpuMode::User => within(self.ranges[0][0], ip),
            CpuMode::Kernel => within(self.ranges[1][0], ip),
            _ => false,
        }
    }

    /// `Some(map)` or `Some(None)` if known, `None` if `ip` needs a lookup.
    #[inline]
    fn get(&mut self, mode: CpuMode, ip: u64) -> Option<Option<&Map>> {
        let k = match mode {
            CpuMode::User => 0,
            CpuMode::Kernel => 1,
            _ => return None,
        };
        if within(self.ranges[k][0], ip) {
            return Some(Some(&self.maps[k][0]));
        }
        if within(self.gaps[k][0], ip) {
            return Some(None);
        }
        if let Some(i) = (1..4).find(|&i| within(self.ranges[k][i], ip)) {
            self.ranges[k].swap(0, i);
            self.maps[k].swap(0, i);
            return Some(Some(&self.maps[k][0]));
        }
        within(self.gaps[k][1], ip).then_some(None)
    }

    /// Remembers what a lookup in `mode` found.
    fn add(&mut self, mode: CpuMode, found: Result<Map, (u64, u64)>) -> Option<&Map> {
        let k = match mode {
            CpuMode::User => 0,
            CpuMode::Kernel => 1,
            // Other modes have no maps.
            _ => return None,
        };
        match found {
            Ok(m) => {
                if mode == CpuMode::Kernel {
                    // The lookup may have resized the map it found, and
                    // so trimmed others.
                    self.ranges[k] = [NOWHERE; 4];
                    self.gaps[k] = [NOWHERE; 2];
                }
                // The least recently used goes.
                self.ranges[k].rotate_right(1);
                self.maps[k].rotate_right(1);
                self.ranges[k][0] = (m.start, m.end);
                self.maps[k][0] = m;
                Some(&self.maps[k][0])
            }
            Err(gap) => {
                self.gaps[k][1] = self.gaps[k][0];
                self.gaps[k][0] = gap;
                None
            }
        }
    }
}

/// A frame job's fields, style and cookie flag in one byte: the six bits
/// of [`IpOpts::bits`], then these two.
const CODE_COOKIE: u8 = 1 << 6;
const CODE_SAMPLE_IP: u8 = 1 << 7;
/// [`IpOpts::bits`]' srcline bit.
const CODE_SRCLINE: u8 = 1 << 5;

impl FrameJob {
    /// Everything but the address and the map, in one byte.
    #[inline]
    pub fn code(&self) -> u8 {
        line_code(self.opts, self.style, self.cookie)
    }

    pub fn from_code(code: u8, ip: u64, map: Option<Map>) -> FrameJob {
        FrameJob { ip, map, opts: IpOpts::from_bits(code & !(CODE_SAMPLE_IP | CODE_COOKIE)), style: code_style(code), cookie: code & CODE_COOKIE != 0 }
    }
}

/// [`FrameJob::code`] from its parts.
#[inline]
fn line_code(opts: IpOpts, style: LineStyle, cookie: bool) -> u8 {
    opts.bits() | if style == LineStyle::SampleIp { CODE_SAMPLE_IP } else { 0 } | if cookie { CODE_COOKIE } else { 0 }
}

/// [`IpOpts::bits`]' ip bit.
const CODE_IP: u8 = 1;

/// Whether a job's code shows the address.
#[inline]
pub fn code_shows_ip(code: u8) -> bool {
    code & CODE_IP != 0
}

/// A job's line style from its code.
#[inline]
pub fn code_style(code: u8) -> LineStyle {
    if code & CODE_SAMPLE_IP != 0 { LineStyle::SampleIp } else { LineStyle::Callchain }
}

/// (fields and line style, DSO or `NO_DSO`, address in the DSO).
type FrameKey = (u8, DsoId, u64);
const NO_DSO: DsoId = DsoId::MAX;

/// The cache key of a frame line, and whether its text may be kept at all.
#[inline]
fn frame_key(code: u8, map: Option<&Map>, ip: u64) -> (FrameKey, bool) {
    let fields = code & !CODE_COOKIE;
    let key = match map {
        Some(m) => (fields, m.dso, m.map_ip(ip)),
        None => (fields, NO_DSO, 0),
    };
    (key, code & (CODE_COOKIE | CODE_SRCLINE) == 0)
}

/// The formatting side: symbols, DSO names, inline frames, and the cache
/// of formatted lines. It formats the text of a line the first time its
/// key comes (and every time for text that is not kept) and tells the
/// [`FrameCopier`] for each line where its text is: in the copier's store
/// of kept texts, whose layout the formatter knows since the copier stores
/// them in the order it is given them, or new.
pub struct FrameFormatter {
    symbolizer: Symbolizer,
    /// A copy of the reading side's DSO table, kept current by
    /// [`Other::Dso`] entries.
    dsos: Dsos,
    /// Kept lines by key, as places in the copier's store.
    cache: FastMap<FrameKey, Text>,
    /// Size of the copier's store.
    kept_bytes: u64,
    /// A small direct-mapped copy of recently used `cache` entries: the
    /// hot addresses of a recording (kernel entry paths, a program's main
    /// loop) are looked up without touching the large table.
    front: Box<[(FrameKey, Text)]>,
    text: Vec<u8>,
    /// DSO names in `text` that its encoding refers to instead of holding.
    refs: Vec<NameRef>,
    /// DSO names shared with the copier by number ([`DsoNames`]).
    names: DsoNames,
}

/// A DSO name at `at` in a text being formatted: name number `id`.
#[derive(Debug, Clone, Copy)]
struct NameRef {
    at: usize,
    len: usize,
    id: u32,
}

/// DSO names by number. The formatter numbers each name the first time a
/// text shows it and hands the new ones to the copier with the batch
/// ([`FrameFormatter::take_names`], [`FrameCopier::add_names`]): a kept
/// text then holds a 4-byte number instead of a path that may be 100
/// bytes long, for every address of the DSO (kept texts are pstitch's
/// largest table). The table holds each name as the copier prints it, with
/// the [`NAME_END`] of the line.
#[derive(Default)]
struct DsoNames {
    names: Vec<Box<[u8]>>,
    by_name: FastMap<Box<[u8]>, u32>,
    /// The number of each DSO's name as last seen ([`NO_NAME`]: none).
    by_dso: Vec<u32>,
    /// Names numbered since the last batch: each its length (4 bytes) and
    /// bytes.
    new: Vec<u8>,
}

const NO_NAME: u32 = u32::MAX;
/// Names shorter than this stay in the text (a reference takes 4 bytes).
const SHORTEST_REF: usize = 12;
/// Names numbered at most (a bound on a hostile input's table).
const MAX_NAMES: usize = 1 << 24;

impl DsoNames {
    /// The number of `dso`'s name, `name` (numbered now if new).
    fn id(&mut self, dso: DsoId, name: &[u8]) -> Option<u32> {
        let slot = dso as usize;
        if let Some(&id) = self.by_dso.get(slot)
            && id != NO_NAME
            && self.names[id as usize].strip_suffix(NAME_END) == Some(name)
        {
            return Some(id);
        }
        let id = match self.by_name.get(name) {
            Some(&id) => id,
            None => {
                if self.names.len() >= MAX_NAMES {
                    return None;
                }
                let id = self.names.len() as u32;
                let shown = [name, NAME_END].concat();
                self.new.extend_from_slice(&(shown.len() as u32).to_le_bytes());
                self.new.extend_from_slice(&shown);
                self.names.push(shown.into());
                self.by_name.insert(name.into(), id);
                id
            }
        };
        if self.by_dso.len() <= slot {
            self.by_dso.resize(slot + 1, NO_NAME);
        }
        self.by_dso[slot] = id;
        Some(id)
    }
}

/// Where the copier finds the text of a line: in its store, at an offset
/// below 2^31; or next in the batch's new texts, to be stored or not.
/// Four bytes, one per callchain line: the formatter writes them and the
/// copier on another core reads them, so their cache lines change hands
/// once per batch, and the fewer the better.
///
/// ```text
///   0 | offset (31 bits)          kept: the store at `offset`
///   1 | 0 ... 0 | keep (1 bit)    new: next in the batch
/// ```
///
/// A text, stored or new, is its length (4 bytes) and its [`encode`]d
/// lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameText(u32);

const NEW: u32 = 1 << 31;

impl FrameText {
    pub(super) fn stored(off: Text) -> FrameText {
        debug_assert!(off < NEW);
        FrameText(off)
    }

    fn new(keep: bool) -> FrameText {
        FrameText(NEW | u32::from(keep))
    }

    /// The offset of a stored text.
    pub(super) fn offset(self) -> Option<Text> {
        (self.0 & NEW == 0).then_some(self.0)
    }

    /// Whether the copier has (or keeps) this text, so that the same line
    /// again is the same text.
    pub fn kept(self) -> bool {
        self.0 & NEW == 0 || self.0 & 1 != 0
    }

    /// Next in the batch's new texts.
    pub fn is_new(self) -> bool {
        self.0 & NEW != 0
    }

    /// A new text, to be stored.
    pub(super) fn keeps(self) -> bool {
        self.0 == NEW | 1
    }
}

/// The copying side: the kept texts, and the lines of the output.
#[derive(Default)]
pub struct FrameCopier {
    /// Every kept text, end to end ([`encode`]d): neighbours in time are
    /// neighbours in memory, and there is no allocation per text.
    texts: Vec<u8>,
    /// The DSO names the texts refer to, by number, each with the
    /// [`NAME_END`] of its line.
    names: Vec<Box<[u8]>>,
}

/// Where a kept text is in [`FrameCopier::texts`].
pub type Text = u32;

/// The formatter lets the object files' pages go each time this power of
/// two of kept text bytes is crossed (see `Symbolizer::release_pages`).
const RELEASE_SHIFT: u32 = 21;

/// Entries in [`FrameFormatter::front`] (a power of two; 384 KiB).
const FRONT: usize = 16384;
const NO_KEY: FrameKey = (u8::MAX, NO_DSO, u64::MAX);

fn front_slot(k: &FrameKey) -> usize {
    let h = (k.2 ^ (u64::from(k.1) << 40) ^ (u64::from(k.0) << 56)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - FRONT.trailing_zeros())) as usize
}

/// Marks where a line starts (and the address is printed) in text being
/// formatted; no symbol, file or DSO name can contain it.
const LINE: u8 = 0;

impl FrameCopier {
    pub fn new() -> FrameCopier {
        FrameCopier::default()
    }

    /// Takes the names numbered since the last batch
    /// ([`FrameFormatter::take_names`]).
    pub fn add_names(&mut self, mut new: &[u8]) {
        while let Some((len, rest)) = new.split_first_chunk::<4>() {
            let (name, rest) = rest.split_at(u32::from_le_bytes(*len) as usize);
            self.names.push(name.into());
            new = rest;
        }
    }

    /// Where the next text kept goes in the store.
    pub fn kept_len(&self) -> Text {
        self.texts.len() as Text
    }

    /// Appends the line(s) of a frame at `ip` to `out`; `new` has the
    /// text (its length first) when `at` says it is new.
    #[inline]
    pub fn print(&mut self, out: &mut Vec<u8>, ip: u64, show_ip: bool, style: LineStyle, at: FrameText, new: &[u8]) {
        match at.offset() {
            Some(off) => expand(out, lines(self.texts.get(off as usize..).unwrap_or_default()), &self.names, ip, show_ip, style),
            None => {
                if at.keeps() {
                    self.texts.extend_from_slice(new);
                }
                expand(out, lines(new), &self.names, ip, show_ip, style);
            }
        }
    }
}

impl FrameFormatter {
    pub fn new(symbolizer: Symbolizer) -> FrameFormatter {
        FrameFormatter {
            symbolizer,
            dsos: Dsos::default(),
            cache: Default::default(),
            kept_bytes: 0,
            front: vec![(NO_KEY, 0); FRONT].into_boxed_slice(),
            text: Vec::new(),
            refs: Vec::new(),
            names: DsoNames::default(),
        }
    }

    /// Moves the DSO names numbered since the last call to `out` (for
    /// [`FrameCopier::add_names`]).
    pub fn take_names(&mut self, out: &mut Vec<u8>) {
        out.clear();
        std::mem::swap(out, &mut self.names.new);
    }

    pub fn update_dso(&mut self, u: crate::machine::dsos::DsoUpdate) {
        self.dsos.apply(u);
    }

    /// Takes the symbols of `dso` the reading side loaded.
    pub fn install(&mut self, dso: DsoId, shipped: crate::symbols::ShippedDso) {
        self.symbolizer.install(dso, shipped);
    }

    /// Where the text of `job`'s line is; a new text is [`encode`]d onto
    /// `out`.
    #[inline]
    pub fn format_job(&mut self, out: &mut Vec<u8>, code: u8, map: Option<&Map>, ip: u64) -> FrameText {
        let (key, cacheable) = frame_key(code, map, ip);
        let slot = front_slot(&key);
        if cacheable {
            let (k, t) = self.front[slot];
            if k == key {
                return FrameText::stored(t);
            }
        }
        self.format_slow(out, &FrameJob::from_code(code, ip, map.copied()), key, cacheable, slot)
    }

    #[inline(never)]
    fn format_slow(&mut self, out: &mut Vec<u8>, job: &FrameJob, key: FrameKey, cacheable: bool, slot: usize) -> FrameText {
        if cacheable && let Some(&t) = self.cache.get(&key) {
            self.front[slot] = (key, t);
            return FrameText::stored(t);
        }
        let FrameJob { ip, map, opts, style, cookie } = *job;
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        self.refs.clear();
        let stable = self.format(&mut text, map.as_ref(), ip, opts, style, cookie);
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        encode(out, &text, &self.refs);
        self.text = text;
        // Texts larger than 4 GiB do not fit their length: an empty line
        // then (nothing that large can be printed anyway).
        let Ok(body) = u32::try_from(out.len() - start - 4) else {
            out.truncate(start);
            out.extend_from_slice(&[0; 4]);
            return FrameText::new(false);
        };
        out[start..start + 4].copy_from_slice(&body.to_le_bytes());
        let len = u64::from(body) + 4;
        // Offsets are 31-bit: past 2 GiB of text, lines are made each time.
        let off = self.kept_bytes;
        let keep = cacheable && stable && off + len < u64::from(NEW);
        if keep {
            // Every 2 MiB of new text (some 10,000 new frames).
            if (self.kept_bytes ^ (self.kept_bytes + len)) >> RELEASE_SHIFT != 0 {
                self.symbolizer.release_pages();
            }
            self.kept_bytes += len;
            self.cache.insert(key, off as Text);
            self.front[slot] = (key, off as Text);
        }
        FrameText::new(keep)
    }

    /// Formats the lines of `ip` into `out`, each starting with [`LINE`];
    /// false if the text may differ next time (see the module doc).
    fn format(&mut self, out: &mut Vec<u8>, map: Option<&Map>, ip: u64, opts: IpOpts, style: LineStyle, cookie: bool) -> bool {
        let sym = map.and_then(|m| self.symbolizer.find_symbol(&self.dsos, m, ip));
        let mut stable = !self.symbolizer.last_lookup_transient();
        if style == LineStyle::SampleIp {
            // perf's `sample__fprintf_sym` for a sample without callchain.
            let addr = map.map(|m| m.map_ip(ip)).unwrap_or(ip);
            out.push(LINE);
            if opts.sym {
                out.push(b' ');
                stable &= symname(out, sym.as_ref(), map, addr, opts.symoff);
            }
            if opts.dso {
                self.dsoname(out, map, opts.dsoff, addr);
            }
            if opts.srcline {
                self.srcline(out, map, ip, sym.as_ref());
            }
            return stable;
        }
        let addr = map.map(|m| m.map_ip(ip)).unwrap_or(0);
        if self.symbolizer.config.inline
            && let (Some(m), Some(s)) = (map, sym.as_ref())
        {
            let inlines = self.symbolizer.inlines(&self.dsos, m, ip, s);
            if !inlines.is_empty() {
                for e in inlines.iter() {
                    out.push(LINE);
                    if opts.sym {
                        let sym = Symbol { name: e.name.clone(), start: s.start, end: s.end };
                        stable &= sym_field(out, cookie, Some(&sym), map, addr, opts.symoff);
                    }
                    if opts.dso && !e.inlined {
                        self.dsoname(out, map, opts.dsoff, addr);
                    }
                    if opts.srcline {
                        out.extend_from_slice(b"\n  ");
                        out.extend_from_slice(e.srcline.as_bytes());
                    }
                    if e.inlined {
                        out.extend_from_slice(b" (inlined)");
                    }
                    out.push(b'\n');
                }
                return stable;
            }
        }
        out.push(LINE);
        if opts.sym {
            stable &= sym_field(out, cookie, sym.as_ref(), map, addr, opts.symoff);
        }
        if opts.dso {
            self.dsoname(out, map, opts.dsoff, addr);
        }
        if opts.srcline {
            self.srcline(out, map, ip, None);
        }
        out.push(b'\n');
        stable
    }

    /// perf's `map__fprintf_dsoname_dsoff`: ` (name)` or ` (name+0xoff)`.
    fn dsoname(&mut self, out: &mut Vec<u8>, map: Option<&Map>, dsoff: bool, addr: u64) {
        out.extend_from_slice(b" (");
        match map {
            Some(m) => {
                let dso = self.dsos.get(m.dso);
                let name = dso.name.as_bytes();
                if name.len() >= SHORTEST_REF
                    && let Some(id) = self.names.id(m.dso, name)
                {
                    self.refs.push(NameRef { at: out.len(), len: name.len(), id });
                }
                out.extend_from_slice(name);
                if dsoff && self.symbolizer.is_object_file(&self.dsos, m.dso) {
                    out.extend_from_slice(b"+0x");
                    format::hex(out, addr, 0);
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
        out.push(b')');
    }

    /// perf's `map__fprintf_srcline` with the `"\n  "` prefix.
    fn srcline(&mut self, out: &mut Vec<u8>, map: Option<&Map>, ip: u64, sym: Option<&Symbol>) {
        if let Some(m) = map
            && let Some(line) = self.symbolizer.srcline(&self.dsos, m, ip, sym)
        {
            out.extend_from_slice(b"\n  ");
            out.extend_from_slice(line.as_bytes());
        }
    }
}

/// The sym field of a callchain line: ` name+0xoff`, or ` (cookie)` for
/// the deferred marker's cookie entry.
fn sym_field(out: &mut Vec<u8>, cookie: bool, sym: Option<&Symbol>, map: Option<&Map>, addr: u64, offsets: bool) -> bool {
    out.push(b' ');
    if cookie {
        out.extend_from_slice(b"(cookie)");
        return true;
    }
    symname(out, sym, map, addr, offsets)
}

/// perf's `__symbol__fprintf_symname_offs`; false if the offset was taken
/// from the map's start (so the text belongs to this map only).
fn symname(out: &mut Vec<u8>, sym: Option<&Symbol>, map: Option<&Map>, addr: u64, offsets: bool) -> bool {
    match sym {
        Some(s) => {
            out.extend_from_slice(s.name.as_bytes());
            if offsets {
                let off = if addr < s.end {
                    addr.wrapping_sub(s.start)
                } else {
                    addr.wrapping_sub(map.map(|m| m.start).unwrap_or(0)).wrapping_sub(s.start)
                };
                out.extend_from_slice(b"+0x");
                format::hex(out, off, 0);
                return addr < s.end;
            }
            true
        }
        None => {
            out.extend_from_slice(b"[unknown]");
            true
        }
    }
}

/// Cached form of frame text: each line as a 4-byte length and its bytes,
/// so that copying it out needs no search. A line that ends in a DSO name
/// of `refs` and `)` + newline (most callchain lines) holds the name's
/// number instead, and the copier's table holds the name with that end:
///
/// ```text
///   plain:     | len (u32)                 | bytes ...
///   with name: | REF | len before the name | bytes before | id (u32)
/// ```
fn encode(out: &mut Vec<u8>, text: &[u8], refs: &[NameRef]) {
    let Some(first) = find_byte(text, LINE) else { return };
    let mut at = first + 1;
    let mut refs = refs.iter().peekable();
    loop {
        let end = find_byte(&text[at..], LINE).map(|e| at + e);
        let line_end = end.unwrap_or(text.len());
        while refs.next_if(|r| r.at < at).is_some() {}
        match refs.next_if(|r| r.at + r.len <= line_end) {
            Some(r) if text[r.at + r.len..line_end] == *NAME_END => {
                out.extend_from_slice(&(REF | (r.at - at) as u32).to_le_bytes());
                out.extend_from_slice(&text[at..r.at]);
                out.extend_from_slice(&r.id.to_le_bytes());
            }
            _ => {
                out.extend_from_slice(&((line_end - at) as u32).to_le_bytes());
                out.extend_from_slice(&text[at..line_end]);
            }
        }
        match end {
            Some(e) => at = e + 1,
            None => return,
        }
    }
}

/// Marks an encoded line that refers to a DSO name (see [`encode`]).
const REF: u32 = 1 << 31;
/// What follows a DSO name at the end of a callchain line.
const NAME_END: &[u8] = b")\n";

/// The next encoded line of `text`: its bytes, or the bytes before a DSO
/// name and the name's number; and the rest.
#[inline]
fn next_line(text: &[u8]) -> Option<(&[u8], Option<u32>, &[u8])> {
    let (head, rest) = text.split_first_chunk::<4>()?;
    let head = u32::from_le_bytes(*head);
    let (line, rest) = rest.split_at((head & !REF) as usize);
    if head & REF == 0 {
        return Some((line, None, rest));
    }
    let (id, rest) = rest.split_first_chunk::<4>()?;
    Some((line, Some(u32::from_le_bytes(*id)), rest))
}

/// Appends an encoded line (see [`next_line`]); `names` end in
/// [`NAME_END`].
#[inline]
fn put_line(out: &mut Vec<u8>, names: &[Box<[u8]>], line: &[u8], name: Option<u32>) {
    out.extend_from_slice(line);
    if let Some(id) = name {
        out.extend_from_slice(names.get(id as usize).map_or(&[][..], |n| n));
    }
}

/// The encoded lines of the text (its length first) at the start of `at`.
fn lines(at: &[u8]) -> &[u8] {
    let Some((len, rest)) = at.split_first_chunk::<4>() else { return &[] };
    rest.get(..u32::from_le_bytes(*len) as usize).unwrap_or_default()
}

/// Copies encoded frame text to `out`, each line after the address when
/// the `ip` field is shown (`\t` first on callchain lines).
#[inline]
fn expand(out: &mut Vec<u8>, mut text: &[u8], names: &[Box<[u8]>], ip: u64, show_ip: bool, style: LineStyle) {
    if show_ip && style == LineStyle::Callchain {
        // Most lines: the tab and the address's two words stored straight
        // into the output, without a copy through the stack.
        let [hi, lo] = format::hex16_words(ip);
        while let Some((line, name, rest)) = next_line(text) {
            let name = name.map_or(&[][..], |id| names.get(id as usize).map_or(&[][..], |n| n));
            let n = 17 + line.len() + name.len();
            out.reserve(n);
            // SAFETY: `reserve` made room for the `n` bytes written past
            // the length, which then covers exactly them.
            unsafe {
                let len = out.len();
                let at = out.as_mut_ptr().add(len);
                at.write(b'\t');
                at.add(1).cast::<[u8; 8]>().write_unaligned(hi);
                at.add(9).cast::<[u8; 8]>().write_unaligned(lo);
                format::copy_short(line, at.add(17));
                format::copy_short(name, at.add(17 + line.len()));
                out.set_len(len + n);
            }
            text = rest;
        }
        return;
    }
    let mut prefix = [b'\t'; 17];
    if show_ip {
        format::hex16(&mut prefix[1..], ip);
    }
    let prefix = match (show_ip, style) {
        (false, _) => &[][..],
        (true, LineStyle::Callchain) => &prefix[..],
        (true, LineStyle::SampleIp) => &prefix[1..],
    };
    while let Some((line, name, rest)) = next_line(text) {
        out.extend_from_slice(prefix);
        put_line(out, names, line, name);
        text = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{MapKind, Maps};

    /// A place says what it was made to say, and a text's lines come back
    /// from behind its length.
    #[test]
    fn frame_texts_pack_into_four_bytes() {
        assert_eq!(std::mem::size_of::<FrameText>(), 4);
        for off in [0, 1, 4096, NEW - 1] {
            let t = FrameText::stored(off);
            assert_eq!((t.offset(), t.kept(), t.is_new(), t.keeps()), (Some(off), true, false, false));
        }
        for keep in [false, true] {
            let t = FrameText::new(keep);
            assert_eq!((t.offset(), t.kept(), t.is_new(), t.keeps()), (None, keep, true, keep));
        }
        let mut body = Vec::new();
        encode(&mut body, b"\0 main (x)\0 f (inlined)", &[]);
        let mut text = (body.len() as u32).to_le_bytes().to_vec();
        text.extend_from_slice(&body);
        text.extend_from_slice(b"next");
        assert_eq!(lines(&text), &body[..]);
        assert_eq!(lines(&text[..6]), b"");
        assert_eq!(lines(b"ab"), b"");
    }

    /// Encoding finds the lines as splitting at LINE does.
    #[test]
    fn encode_splits_at_line_marks() {
        let by_split = |text: &[u8]| {
            let mut out = Vec::new();
            for line in text.split(|&b| b == LINE).skip(1) {
                out.extend_from_slice(&(line.len() as u32).to_le_bytes());
                out.extend_from_slice(line);
            }
            out
        };
        let texts: [&[u8]; 6] = [b"", b"\0 main+0x1 (/bin/x)\n", b"\0a\n\0b (inlined)\n\0c\n", b"junk\0a", b"\0\0", b"\0 a very long name that takes more than eight bytes\0x"];
        for text in texts {
            let mut out = Vec::new();
            encode(&mut out, text, &[]);
            assert_eq!(out, by_split(text), "{text:?}");
        }
    }

    /// A text that refers to DSO names prints as the text holding them,
    /// whatever the lines around the names are.
    #[test]
    fn dso_name_references_print_the_names() {
        let long_tail = format!(")\n  {}\n", "x".repeat(300));
        let mut names = DsoNames::default();
        let mut copier = FrameCopier::new();
        let lines: Vec<(String, Option<&str>, String)> = vec![
            (" main+0x1d (".into(), Some("/tmp/pstitch-fixtures/bin/cwork"), ")\n".into()),
            (" f (inlined)\n".into(), None, String::new()),
            (" g+0x2 (".into(), Some("/usr/lib/x86_64-linux-gnu/libc.so.6"), "+0x1234)\n".into()),
            (" h (".into(), Some("/usr/lib/x86_64-linux-gnu/libc.so.6"), long_tail),
            (" [unknown] (".into(), Some("[unknown]"), ")\n".into()),
            (String::new(), Some("/a/dso/name/with/nothing/before"), String::new()),
        ];
        for n in 1..=lines.len() {
            for first in 0..lines.len() {
                let mut text = Vec::new();
                let mut refs = Vec::new();
                for (i, (before, name, after)) in lines.iter().cycle().skip(first).take(n).enumerate() {
                    text.push(LINE);
                    text.extend_from_slice(before.as_bytes());
                    if let Some(name) = name {
                        if name.len() >= SHORTEST_REF {
                            let id = names.id(i as DsoId, name.as_bytes()).unwrap();
                            refs.push(NameRef { at: text.len(), len: name.len(), id });
                        }
                        text.extend_from_slice(name.as_bytes());
                    }
                    text.extend_from_slice(after.as_bytes());
                }
                let (mut with, mut without) = (Vec::new(), Vec::new());
                encode(&mut with, &text, &refs);
                encode(&mut without, &text, &[]);
                if !refs.is_empty() && n == 1 && first == 0 {
                    assert!(with.len() < without.len(), "a reference saves the name");
                }
                // As a batch brings them.
                copier.add_names(&std::mem::take(&mut names.new));
                for (ip, show, style) in [(0x7f00_1234, true, LineStyle::Callchain), (0x55, true, LineStyle::SampleIp), (0, false, LineStyle::Callchain)] {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    expand(&mut a, &with, &copier.names, ip, show, style);
                    expand(&mut b, &without, &[], ip, show, style);
                    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b), "{n} lines from {first}");
                }
            }
        }
        // Names come to the copier as the formatter numbered them.
        let mut f = DsoNames::default();
        assert_eq!(f.id(3, b"/x/one/long/name"), Some(0));
        assert_eq!(f.id(4, b"/x/two/long/name"), Some(1));
        assert_eq!(f.id(3, b"/x/one/long/name"), Some(0));
        assert_eq!(f.id(3, b"/x/renamed/dso/name"), Some(2), "a DSO renamed gets its new name");
        assert_eq!(f.id(5, b"/x/two/long/name"), Some(1), "equal names share a number");
        let mut copier = FrameCopier::new();
        copier.add_names(&f.new);
        assert_eq!(copier.names, f.names);
    }

    /// What the per-callchain cache answers is what a lookup answers, for
    /// addresses in and between maps, in both modes, in random order.
    #[test]
    fn chain_maps_answer_as_lookups_do() {
        let mut rnd = crate::testing::rng(0x2545_f491_4f6c_dd1d);
        for round in 0..50u32 {
            let mut spaces = [Maps::default(), Maps::default()];
            for (k, maps) in spaces.iter_mut().enumerate() {
                for i in 0..rnd(12) {
                    let start = rnd(256) * 0x1000;
                    let dso = round * 100 + k as u32 * 50 + i as u32;
                    maps.insert(Map { start, end: start + (1 + rnd(8)) * 0x1000, pgoff: 0, dso, kind: MapKind::Dso, prot: 0, flags: 0 });
                }
            }
            let mut found = ChainMaps::default();
            let mut cached = 0;
            for _ in 0..300 {
                let k = rnd(2) as usize;
                let mode = if k == 1 { CpuMode::Kernel } else { CpuMode::User };
                let ip = rnd(270 * 0x1000);
                let want = spaces[k].find(ip).copied();
                let got = match found.get(mode, ip) {
                    Some(known) => {
                        cached += 1;
                        known.copied()
                    }
                    None => found.add(mode, spaces[k].find_or_gap(ip).copied()).copied(),
                };
                assert_eq!(got, want, "round {round}, {mode:?} {ip:#x}");
            }
            assert!(cached > 0, "round {round}: nothing came from the cache");
            assert!(found.get(CpuMode::Hypervisor, 0x1000).is_none(), "hypervisor addresses are looked up");
        }
    }
}

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
//! A sample's `srccode` line (see [`super::srccode`]) goes the same way,
//! as a job after the sample's text with the thread it belongs to (an
//! [`Other::Srccode`] job before it): the formatter owns the addr2line
//! sessions it needs and the threads' last lines.
//!
//! Some text must not be cached: the `(cookie)` frame of a deferred
//! sample, a srccode line, `srcline` (binutils' answers depend on which compilation units
//! it has read so far), a symbol offset that perf computes from the map's
//! start (an address past its symbol's end), and the first lookup after a
//! symbol table failed to load half-way (perf reports the failure to that
//! lookup only).


use super::fields::IpOpts;
use super::srccode::Srccode;
use super::{Script, format};
use crate::engine::kept::{FrameText, KeptIndex, LINE, LineKey, NO_OBJECT};
use crate::engine::Threads;
use crate::engine::printer::{CODE_SAMPLE_IP, CODE_SHOWS_IP, Format, Printer};
use crate::machine::dsos::DsoUpdate;
use crate::machine::maps::{DsoId, Map};
use crate::machine::{CpuMode, Dsos, Machine};
use crate::symbols::loader::{LoadRequest, Loader};
use crate::symbols::{ShippedDso, Symbol, SymbolConfig, Symbolizer};

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
    /// The sample's `srccode` line (see [`super::srccode`]): the thread is
    /// the one the [`Other::Srccode`] job before it named.
    Srccode,
    /// A `srcline` inside brstackinsn's dump (perf's `map__fprintf_srcline`
    /// with a prefix): nothing, or the prefix and the line.
    InsnSrcline(SrclinePrefix),
}

/// Where brstackinsn prints a `srcline` (see [`super::brstackinsn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrclinePrefix {
    /// After a symbol line's `name+off:`: a tab.
    Symbol,
    /// After a jump's instruction: ` srcline: `.
    Jump,
}

impl SrclinePrefix {
    fn text(self) -> &'static [u8] {
        match self {
            SrclinePrefix::Symbol => b"\t",
            SrclinePrefix::Jump => b" srcline: ",
        }
    }
}

impl Script {
    /// Prints the lines of a callchain (after the sample line's `\n`).
    /// Context markers switch the address space; an unknown marker makes
    /// perf discard what it resolved and print an empty callchain.
    /// `ty`: the output type whose `ip_opts` apply.
    /// `max`: how many addresses to print at most (`--max-stack`, or no
    /// limit for user frames the session already cut where perf does).
    pub(super) fn print_callchain(&mut self, machine: &mut Machine, tid: i32, chain: impl Iterator<Item = u64> + Clone, max: usize, ty: usize, cookie: Option<u64>) {
        let Some(entries) = crate::machine::callchain_entries(chain, max) else { return };
        self.print_entries(machine, tid, entries, ty, cookie);
    }

    /// [`Script::print_callchain`] of user frames the session unwound
    /// (`Callchain::Split`'s `user`): addresses without context markers,
    /// all printed (the session cut them where perf does).
    pub(super) fn print_user_frames(&mut self, machine: &mut Machine, tid: i32, user: &[u64], ty: usize) {
        if user.iter().any(|&ip| ip >= perf_data::sample::context::MAX) {
            // Not from an unwinder: taken as perf takes a chain.
            let chain = std::iter::once(perf_data::sample::context::USER).chain(user.iter().copied());
            return self.print_callchain(machine, tid, chain, usize::MAX, ty, None);
        }
        self.print_entries(machine, tid, user.iter().map(|&ip| (CpuMode::User, ip)), ty, None);
    }

    /// The lines of a callchain's entries, each with its CPU mode.
    fn print_entries(&mut self, machine: &mut Machine, tid: i32, entries: impl Iterator<Item = (CpuMode, u64)>, ty: usize, cookie: Option<u64>) {
        let code = line_code(self.ip_opts[ty], LineStyle::Callchain, false);
        let epoch = machine.epoch();
        let mut found = self.recent_maps.take(tid, epoch);
        // The mode whose front map the entry before was in.
        let mut last_front: Option<CpuMode> = None;
        let stop_bt = !self.symbolizer.config.bt_stop.is_empty();
        for (mode, ip) in entries {
            let code = if cookie == Some(ip) { code | CODE_COOKIE } else { code };
            // In the map of the entry before (the most recent one found in
            // this mode): its symbols went out, the printer has it.
            let same = !stop_bt && found.front_has(mode, ip) && last_front == Some(mode);
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
            let map = map.copied();
            self.mark_loaded(map.as_ref());
            self.frame_line(machine, ip, map.as_ref(), code);
            if stop_bt && code & CODE_COOKIE == 0 && self.stops_backtrace(machine, ip, map.as_ref()) {
                break;
            }
        }
        // A kernel map resized on the way changed the epoch; `found`
        // already forgot what that could change.
        self.recent_maps.keep(tid, machine.epoch(), found);
    }

    /// perf's `--stop-bt` test for a callchain entry: its symbol, or one of
    /// the inline functions printed for it, is in the stop list (the
    /// formatter ends the entry's inline lines at that one).
    fn stops_backtrace(&mut self, machine: &Machine, ip: u64, map: Option<&Map>) -> bool {
        let Some(m) = map else { return false };
        let Some(sym) = self.symbolizer.find_symbol(&machine.dsos, m, ip) else { return false };
        let inlines = if self.symbolizer.config.inline { self.symbolizer.inlines(&machine.dsos, m, ip, &sym) } else { Default::default() };
        let stops = |name: &str| self.symbolizer.config.bt_stop.iter().any(|s| s == name);
        if !inlines.is_empty() {
            return inlines.iter().any(|e| stops(&e.name));
        }
        stops(&sym.name)
    }

    /// perf has loaded the DSO of a map a line is resolved in (`map__load`),
    /// which `brstackoff` needs to know (see `Script::loaded_dsos`).
    pub(super) fn mark_loaded(&mut self, map: Option<&Map>) {
        if self.track_loads
            && let Some(m) = map
        {
            self.loaded_dsos.mark(m.dso);
        }
    }

    /// Leaves a line for the printing side.
    pub(super) fn frame(&mut self, machine: &Machine, job: FrameJob) {
        self.frame_line(machine, job.ip, job.map.as_ref(), job.code());
    }

    /// [`Script::frame`] for a job in parts, after telling the printing
    /// side about DSOs that appeared or changed since the last one.
    #[inline]
    pub(super) fn frame_line(&mut self, machine: &Machine, ip: u64, map: Option<&Map>, code: u8) {
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
        // The reading side keeps a copy of these symbols (the kernel's,
        // modules', KSYMBOL text) when it resolves kernel addresses
        // itself: tracepoint text (`%pS`), `--stop-bt` and the `-S`
        // filter, which looks at every sample's ip, and branch stacks.
        let keep = self.trace_resolver || !self.symbolizer.config.bt_stop.is_empty() || self.opts.symbols.is_some() || self.branch_lookups;
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
/// of [`IpOpts::bits`] (the printer's [`CODE_SHOWS_IP`] among them), then
/// the cookie flag and the printer's [`CODE_SAMPLE_IP`].
const CODE_COOKIE: u8 = 1 << 6;
/// [`IpOpts::bits`]' srcline bit.
const CODE_SRCLINE: u8 = 1 << 5;
/// A srccode line: no fields, the sample line's style and the cookie flag,
/// a pair no other line has (cookies are callchain entries). The copier
/// prints it as a sample line's text with the address not shown; it is
/// never kept (the cookie flag).
const CODE_SRCCODE: u8 = CODE_SAMPLE_IP | CODE_COOKIE;
/// brstackinsn's srclines: a srccode line's code with the srcline bit (and
/// the sym bit for a jump's), never kept either; no address shown.
const CODE_SYMBOL_SRCLINE: u8 = CODE_SRCCODE | CODE_SRCLINE;
const CODE_JUMP_SRCLINE: u8 = CODE_SYMBOL_SRCLINE | 1 << 1;
const _: () = assert!(IpOpts { ip: true, sym: false, dso: false, symoff: false, dsoff: false, srcline: false }.bits() == CODE_SHOWS_IP);

impl FrameJob {
    /// Everything but the address and the map, in one byte.
    #[inline]
    pub fn code(&self) -> u8 {
        line_code(self.opts, self.style, self.cookie)
    }

    pub fn from_code(code: u8, ip: u64, map: Option<Map>) -> FrameJob {
        let special = match code {
            CODE_SRCCODE => Some(LineStyle::Srccode),
            CODE_SYMBOL_SRCLINE => Some(LineStyle::InsnSrcline(SrclinePrefix::Symbol)),
            CODE_JUMP_SRCLINE => Some(LineStyle::InsnSrcline(SrclinePrefix::Jump)),
            _ => None,
        };
        if let Some(style) = special {
            return FrameJob { ip, map, opts: IpOpts::default(), style, cookie: false };
        }
        let style = if code & CODE_SAMPLE_IP != 0 { LineStyle::SampleIp } else { LineStyle::Callchain };
        FrameJob { ip, map, opts: IpOpts::from_bits(code & !(CODE_SAMPLE_IP | CODE_COOKIE)), style, cookie: code & CODE_COOKIE != 0 }
    }
}

/// [`FrameJob::code`] from its parts.
#[inline]
pub(super) fn line_code(opts: IpOpts, style: LineStyle, cookie: bool) -> u8 {
    match style {
        LineStyle::Srccode => return CODE_SRCCODE,
        LineStyle::InsnSrcline(SrclinePrefix::Symbol) => return CODE_SYMBOL_SRCLINE,
        LineStyle::InsnSrcline(SrclinePrefix::Jump) => return CODE_JUMP_SRCLINE,
        _ => {}
    }
    opts.bits() | if style == LineStyle::SampleIp { CODE_SAMPLE_IP } else { 0 } | if cookie { CODE_COOKIE } else { 0 }
}

/// The cache key of a frame line, and whether its text may be kept at all.
#[inline]
fn frame_key(code: u8, map: Option<&Map>, ip: u64) -> (LineKey, bool) {
    let fields = code & !CODE_COOKIE;
    let key = match map {
        Some(m) => (fields, m.dso, m.map_ip(ip)),
        None => (fields, NO_OBJECT, 0),
    };
    (key, code & (CODE_COOKIE | CODE_SRCLINE) == 0)
}

/// The rare jobs the reading side leaves for the formatter.
pub enum Other {
    Dso(Box<DsoUpdate>),
    /// A DSO's symbols, loaded by the reading side when a line first needed
    /// them (the reading side has time to spare, the printer has not).
    Loaded(DsoId, Box<ShippedDso>),
    /// The thread ([`crate::machine::Thread::serial`]) of the srccode line
    /// that comes next.
    Srccode(u64),
    /// The next frame prints only this one of its inline lines (a node
    /// `--stitch-lbr` copied, see [`super::stitch`]); not kept.
    InlineLine(u32),
}

/// The formatting side: symbols, DSO names, inline frames. It formats the
/// text of a line the first time its key comes (and every time for text
/// that may not be kept), and knows through [`KeptIndex`] where the
/// copier keeps the others.
pub struct FrameFormatter {
    symbolizer: Symbolizer,
    /// A copy of the reading side's DSO table, kept current by
    /// [`Other::Dso`] entries.
    dsos: Dsos,
    kept: KeptIndex,
    text: Vec<u8>,
    /// Source files and each thread's last srccode line.
    srccode: Srccode,
    /// The thread of the next srccode line ([`Other::Srccode`]).
    srccode_thread: u64,
    /// The inline line the next frame prints alone ([`Other::InlineLine`]).
    inline_line: Option<u32>,
}

impl FrameFormatter {
    pub fn new(symbolizer: Symbolizer) -> FrameFormatter {
        FrameFormatter { symbolizer, dsos: Dsos::default(), kept: KeptIndex::default(), text: Vec::new(), srccode: Srccode::default(), srccode_thread: 0, inline_line: None }
    }

    #[inline(never)]
    fn format_slow(&mut self, out: &mut Vec<u8>, job: &FrameJob, key: LineKey, cacheable: bool) -> FrameText {
        if cacheable && let Some(t) = self.kept.get(&key) {
            return t;
        }
        let FrameJob { ip, map, opts, style, cookie } = *job;
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        self.kept.begin();
        let stable = self.format(&mut text, map.as_ref(), ip, opts, style, cookie);
        let (place, crossed) = self.kept.add(out, &text, key, cacheable && stable);
        self.text = text;
        // Often while the kept text is small, then less often (see
        // `engine::kept`).
        if crossed {
            self.symbolizer.release_pages();
        }
        place
    }

    /// Inline line `line` of `ip`'s lines alone (never kept): formatted
    /// whole, then cut (its DSO name written out, not referred to).
    #[inline(never)]
    fn format_inline_line(&mut self, out: &mut Vec<u8>, code: u8, map: Option<&Map>, ip: u64, line: u32) -> FrameText {
        let FrameJob { ip, map, opts, style, cookie } = FrameJob::from_code(code, ip, map.copied());
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        self.kept.begin();
        self.format(&mut text, map.as_ref(), ip, opts, style, cookie);
        self.kept.begin();
        let starts: Vec<usize> = text.iter().enumerate().filter(|&(_, &b)| b == LINE).map(|(i, _)| i).collect();
        let from = starts.get(line as usize).copied().unwrap_or(text.len());
        let to = starts.get(line as usize + 1).copied().unwrap_or(text.len());
        let (key, _) = frame_key(code, map.as_ref(), ip);
        let (place, _) = self.kept.add(out, &text[from..to], key, false);
        self.text = text;
        place
    }

    /// Formats the lines of `ip` into `out`, each starting with [`LINE`];
    /// false if the text may differ next time (see the module doc).
    fn format(&mut self, out: &mut Vec<u8>, map: Option<&Map>, ip: u64, opts: IpOpts, style: LineStyle, cookie: bool) -> bool {
        match style {
            LineStyle::Srccode => {
                self.srccode(out, map, ip);
                return false;
            }
            LineStyle::InsnSrcline(prefix) => {
                if let Some(m) = map
                    && let Some(line) = self.symbolizer.srcline(&self.dsos, m, ip, None)
                {
                    out.push(LINE);
                    out.extend_from_slice(prefix.text());
                    out.extend_from_slice(&line);
                }
                return false;
            }
            _ => {}
        }
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
                    if self.symbolizer.config.bt_stop.iter().any(|s| **s == *e.name) {
                        break;
                    }
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
                let off = dsoff && self.symbolizer.is_object_file(&self.dsos, m.dso);
                let dso = self.dsos.get(m.dso);
                let name = self.symbolizer.shown_kernel_name(m.dso, off).unwrap_or(&dso.name);
                self.kept.name_at(out.len(), m.dso, name);
                out.extend_from_slice(name);
                if off {
                    out.extend_from_slice(b"+0x");
                    format::hex(out, addr, 0);
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
        out.push(b')');
    }

    /// perf's `map__fprintf_srccode` for the sample at `ip` and the
    /// newline after it, as one line (nothing if it prints nothing).
    fn srccode(&mut self, out: &mut Vec<u8>, map: Option<&Map>, ip: u64) {
        let Some(m) = map else { return };
        let Some((file, line)) = self.symbolizer.srcline_split(&self.dsos, m, ip) else { return };
        out.push(LINE);
        let at = out.len();
        self.srccode.print(out, self.srccode_thread, &file, line);
        if out.len() == at {
            out.pop();
        }
    }

    /// perf's `map__fprintf_srcline` with the `"\n  "` prefix.
    fn srcline(&mut self, out: &mut Vec<u8>, map: Option<&Map>, ip: u64, sym: Option<&Symbol>) {
        if let Some(m) = map
            && let Some(line) = self.symbolizer.srcline(&self.dsos, m, ip, sym)
        {
            out.extend_from_slice(b"\n  ");
            out.extend_from_slice(&line);
        }
    }
}

impl Format for FrameFormatter {
    type Map = Map;
    type Other = Other;
    type Loaded = ShippedDso;

    #[inline]
    fn slot(m: &Map) -> u8 {
        ((m.start >> 12).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as u8
    }

    /// Where the text of the line is; a new text goes onto `out`.
    #[inline]
    fn format(&mut self, out: &mut Vec<u8>, code: u8, map: Option<&Map>, ip: u64) -> FrameText {
        if let Some(line) = self.inline_line.take() {
            return self.format_inline_line(out, code, map, ip, line);
        }
        let (key, cacheable) = frame_key(code, map, ip);
        if cacheable && let Some(t) = self.kept.front(&key) {
            return t;
        }
        self.format_slow(out, &FrameJob::from_code(code, ip, map.copied()), key, cacheable)
    }

    fn other(&mut self, other: Other) {
        match other {
            Other::Dso(u) => self.dsos.apply(*u),
            Other::Loaded(dso, shipped) => self.symbolizer.install(dso, *shipped),
            Other::Srccode(thread) => self.srccode_thread = thread,
            Other::InlineLine(line) => self.inline_line = Some(line),
        }
    }

    fn loaded(&mut self, dso: u32, shipped: ShippedDso) {
        self.symbolizer.install(dso, shipped);
    }

    fn flushed(&mut self) {
        self.symbolizer.save_caches();
    }

    fn take_names(&mut self, out: &mut Vec<u8>) {
        self.kept.take_names(out);
    }
}

/// The printer for lines formatted by a [`FrameFormatter`] with a
/// symbolizer of its own (made from `config` and `build_ids` on the
/// formatter's thread), symbol tables loaded by a [`Loader`].
pub(super) fn printer<W: std::io::Write + Send + 'static>(
    out: W,
    threads: Threads,
    config: SymbolConfig,
    build_ids: Vec<(Vec<u8>, Vec<u8>)>,
) -> Printer<FrameFormatter, Loader> {
    let (loader_config, loader_ids) = (config.clone(), build_ids.clone());
    Printer::start(
        out,
        threads,
        move || {
            let mut symbolizer = Symbolizer::new(config);
            symbolizer.set_build_id_pairs(build_ids);
            let mut f = FrameFormatter::new(symbolizer);
            if threads == Threads::Single {
                f.kept.small_input();
            }
            f
        },
        move || Loader::new(loader_config, loader_ids),
    )
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
pub(super) fn symname(out: &mut Vec<u8>, sym: Option<&Symbol>, map: Option<&Map>, addr: u64, offsets: bool) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("unpoisoned").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Requests made so far: the next load's number.
    fn requests(p: &Printer<FrameFormatter, Loader>) -> u64 {
        p.requests_made()
    }

    /// A request made ahead is used by the load that asks the same, once;
    /// a different one goes out on its own, and the printer takes each
    /// answer for its own request whatever the order they come in.
    #[test]
    fn prefetched_requests_are_used_once() {
        let mut out = printer(std::io::sink(), Threads::Parallel, SymbolConfig::default(), Vec::new());
        let request = |name: &str| LoadRequest { long_name: name.as_bytes().into(), kind: crate::machine::DsoKind::File, build_id: None };
        out.prefetch(request("/nonexistent/a"));
        out.prefetch(request("/nonexistent/a"));
        assert_eq!(requests(&out), 1, "asked once");
        out.load(0, 1, request("/nonexistent/b"));
        assert!(out.is_prefetched(&request("/nonexistent/a")));
        out.load(0, 2, request("/nonexistent/a"));
        assert!(!out.is_prefetched(&request("/nonexistent/a")));
        assert_eq!(requests(&out), 2);
        out.load(0, 3, request("/nonexistent/a"));
        assert_eq!(requests(&out), 3, "a used request is not used again");
        // The printer installs all three (b's answer waits behind a's).
        out.flush(&mut Vec::new()).expect("written");
    }

    /// Frames in no map print as each would alone, whether the formatter
    /// saw them (the first per fields, and those whose text is not kept)
    /// or let them by (see [`Unmapped`]), across batches and fields.
    #[test]
    fn frames_in_no_map_print_as_alone() {
        let opts = [
            IpOpts { ip: true, sym: true, dso: true, ..IpOpts::default() },
            IpOpts { ip: true, sym: true, dso: true, srcline: true, ..IpOpts::default() },
            IpOpts { ip: true, sym: true, ..IpOpts::default() },
            IpOpts { ip: true, dso: true, symoff: true, ..IpOpts::default() },
        ];
        let code = |i: usize, ip| FrameJob { ip, map: None, opts: opts[i % opts.len()], style: LineStyle::Callchain, cookie: false }.code();
        let run = |frames: &[(usize, u64)], batch: usize, threads: Threads| {
            let written = Arc::new(Mutex::new(Vec::new()));
            let mut out = printer(Shared(written.clone()), threads, SymbolConfig::default(), Vec::new());
            let mut text = Vec::new();
            for (n, &(i, ip)) in frames.iter().enumerate() {
                text.extend_from_slice(format!("sample {n}\n").as_bytes());
                out.frame(text.len(), ip, None, code(i, ip));
                out.frame(text.len(), ip, None, code(i, ip));
                if n % batch == batch - 1 {
                    out.send(&mut text);
                }
            }
            out.flush(&mut text).expect("written");
            written.lock().expect("unpoisoned").clone()
        };
        let frames: Vec<(usize, u64)> = (0..40).map(|n| (n * 7 % 5, 0x1000 + (n as u64 % 3) * 0x10)).collect();
        let alone: Vec<u8> = frames.iter().enumerate().flat_map(|(n, &f)| {
            let mut one = run(&[f], 1, Threads::Single);
            let head = format!("sample {n}\n");
            one.splice(..b"sample 0\n".len(), head.bytes());
            one
        }).collect();
        for batch in [1, 3, 40] {
            for threads in [Threads::Parallel, Threads::Single] {
                assert_eq!(String::from_utf8_lossy(&run(&frames, batch, threads)), String::from_utf8_lossy(&alone), "batches of {batch}, {threads:?}");
            }
        }
    }

    /// A line that comes many times in a row travels once, and prints as
    /// often as it came: kept text is copied again, text that is not kept
    /// (srcline fields) is made again each time.
    #[test]
    fn repeated_lines_print_each_time() {
        for (srcline, threads) in [(false, Threads::Parallel), (true, Threads::Parallel), (false, Threads::Single), (true, Threads::Single)] {
            let written = Arc::new(Mutex::new(Vec::new()));
            let mut out = printer(Shared(written.clone()), threads, SymbolConfig::default(), Vec::new());
            let opts = IpOpts { ip: true, sym: true, dso: true, srcline, ..IpOpts::default() };
            let job = |ip| FrameJob { ip, map: None, opts, style: LineStyle::Callchain, cookie: false };
            let mut text = b"head\n".to_vec();
            let ips = [[0x20u64; 300].as_slice(), &[0x30, 0x20, 0x20]].concat();
            for &ip in &ips {
                out.frame(text.len(), ip, None, job(ip).code());
            }
            assert!(out.jobs_queued() < 10, "{} jobs for {} lines", out.jobs_queued(), ips.len());
            text.extend_from_slice(b"tail\n");
            out.flush(&mut text).expect("written");
            let line = |ip| format!("\t{ip:16x} [unknown] ([unknown])\n");
            let want = format!("head\n{}tail\n", ips.iter().map(|&ip| line(ip)).collect::<String>());
            assert_eq!(String::from_utf8_lossy(&written.lock().expect("unpoisoned")), want, "srcline {srcline}, {threads:?}");
        }
    }

    use crate::machine::{MapKind, Maps};

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

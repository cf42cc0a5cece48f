//! `perf script` output: the per-sample line and its callchain, printed
//! exactly as perf 7.2 prints them.
//!
//! ```text
//! comm  pid/tid [cpu] time: period event: ip sym+off (dso)        <- no callchain
//! comm  pid/tid [cpu] time: period event:                         <- with callchain
//! \t<ip> sym+off (dso)                                             one line per frame
//! \t<ip> inlined_fn+off (inlined)                                  (inline levels first)
//! <blank line>
//! ```

mod callchain;
mod events;
mod heads;
mod output;
mod prefetch;
pub use output::thread_cpu;
pub mod fields;
pub mod filter;
pub mod format;
pub mod header;

use std::io::Write;
use std::rc::Rc;

use crate::machine::{Comm, CpuMode, Machine, Map};
use perf_data::attr::{Attr, event_type, sample_type as st};
use perf_data::bytes::U64Array;
use perf_data::evlist::Evlist;
use perf_data::attr::flag;
use perf_data::record::{CommRecord, DeferredCallchainRecord, MmapRecord, TaskRecord, kind};
use perf_data::sample::{Sample, SampleId};
use crate::error::{Error, Result};
use perf_data::Error as Damaged;
use crate::session::deferred::{StitchStats, Stitcher};
use crate::session::{Context, Event, Tool};
use crate::symbols::Symbolizer;
use crate::tracepoint::TracingData;

use fields::{IpOpts, OutputFields, f, output_type};

pub use perf_data::sample::context;

/// perf's default `--max-stack` (`kernel.perf_event_max_stack`).
pub const DEFAULT_MAX_STACK: usize = 127;

/// Options that shape the output.
#[derive(Debug, Clone)]
pub struct ScriptOptions {
    pub fields: OutputFields,
    pub nanosecs: bool,
    /// `-G` turns callchains off.
    pub hide_call_graph: bool,
    pub max_stack: usize,
    /// Merge deferred user callchains into their samples (perf's default);
    /// otherwise print them as DEFERRED CALLCHAIN blocks.
    pub merge_callchains: bool,
    pub filters: filter::Filters,
    /// `--show-task-events`: print COMM, FORK and EXIT records.
    pub show_task_events: bool,
    /// `--show-mmap-events`: print MMAP and MMAP2 records.
    pub show_mmap_events: bool,
    /// `--show-lost-events`: print PERF_RECORD_LOST records.
    pub show_lost_events: bool,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        ScriptOptions {
            fields: OutputFields::default(),
            nanosecs: false,
            hide_call_graph: false,
            max_stack: DEFAULT_MAX_STACK,
            merge_callchains: true,
            filters: filter::Filters::default(),
            show_task_events: false,
            show_mmap_events: false,
            show_lost_events: false,
        }
    }
}

/// Where a printed sample's callchain comes from.
#[derive(Clone, Copy)]
enum Chain<'c> {
    /// The sample's own.
    Sample,
    /// A merged one (kernel part + deferred user ips).
    Merged(&'c [u64]),
}

/// The comm and deferred state a sample is printed with.
#[derive(Clone)]
struct PrintAs {
    /// The comm to print instead of the thread's current one.
    comm: Option<Comm>,
    /// perf's `deferred_cookie` while `deferred_callchain` is set: frames
    /// with this ip print as `(cookie)`.
    cookie: Option<u64>,
}

/// The `perf script` tool: keeps the machine current and prints samples.
pub struct Script {
    opts: ScriptOptions,
    pub machine: Machine,
    pub symbolizer: Symbolizer,
    /// DSOs whose symbols went to the printer (by DSO id).
    shipped: Vec<bool>,
    /// What the last callchains' lookups found (see [`callchain::RecentMaps`]).
    recent_maps: callchain::RecentMaps,
    /// Samples [`prefetch`] may still look at.
    lookahead_left: u32,
    /// The printer thread; `buf` is the text for it.
    out: output::Output,
    buf: Vec<u8>,
    use_callchain: bool,
    /// Per output type: fields were checked against an event of that type.
    checked: [bool; fields::NR_TYPES],
    ip_opts: [IpOpts; fields::NR_TYPES],
    name_width: Option<usize>,
    heads: heads::Heads,
    stitcher: Stitcher,
    merged: Vec<u64>,
    endian: perf_data::bytes::Endian,
    filters: filter::Filters,
    /// Event formats from the tracing data, for tracepoint samples.
    tracing: Option<TracingData>,
    /// perf resolves `%pS` in trace output only when the tracing data was
    /// known before processing began (file mode), not from a pipe.
    trace_resolver: bool,
    /// Pipe mode: attr types seen, and the sample_types of all attrs so
    /// far (kept up to date so each HEADER_ATTR costs O(1)).
    attr_types_seen: std::collections::HashSet<u32>,
    combined_sample_type: u64,
}

impl Script {
    /// Starts the printer thread (see [`output`]) writing to `out`.
    pub fn new<W: Write + Send + 'static>(opts: ScriptOptions, symbolizer: Symbolizer, out: W) -> Script {
        let use_callchain = !opts.hide_call_graph;
        let filters = opts.filters.clone();
        Script {
            opts,
            machine: Machine::new(),
            shipped: Vec::new(),
            recent_maps: Default::default(),
            lookahead_left: prefetch::LOOKAHEAD_SAMPLES,
            out: output::Output::start(out, symbolizer.config.clone(), symbolizer.build_id_pairs()),
            symbolizer,
            buf: Vec::new(),
            use_callchain,
            checked: [false; fields::NR_TYPES],
            ip_opts: [IpOpts::default(); fields::NR_TYPES],
            name_width: None,
            heads: heads::Heads::default(),
            stitcher: Stitcher::default(),
            merged: Vec::new(),
            endian: perf_data::bytes::Endian::NATIVE,
            filters,
            tracing: None,
            trace_resolver: false,
            attr_types_seen: Default::default(),
            combined_sample_type: 0,
        }
    }

    /// Takes the tracing data (TRACING_DATA feature section in file mode,
    /// HEADER_TRACING_DATA payload in pipe mode).
    pub fn load_tracing_data(&mut self, bytes: &[u8], pipe: bool) -> std::result::Result<(), crate::tracepoint::TracingDataError> {
        let td = TracingData::parse(bytes)?;
        self.tracing = Some(td);
        self.trace_resolver = !pipe;
        self.name_width = None;
        Ok(())
    }

    /// perf's `evlist__prepare_tracepoint_events` when reading a file header:
    /// every tracepoint event needs its format in the tracing data, else
    /// perf refuses the file.
    pub fn check_tracepoint_formats(&self, evlist: &Evlist) -> std::result::Result<(), String> {
        for ev in evlist.evsels.iter().filter(|e| e.attr.type_ == event_type::TRACEPOINT) {
            if self.tracing.as_ref().and_then(|t| t.event_for_config(ev.attr.config)).is_none() {
                return Err("incompatible file format (rerun with -v to learn more)".to_string());
            }
        }
        Ok(())
    }

    /// The event name perf prints: tracepoint events not named by the file
    /// are `system:name` from the tracing data.
    fn event_name<'a>(&self, ev: &'a perf_data::evlist::Evsel) -> std::borrow::Cow<'a, str> {
        if let Some(n) = &ev.name {
            return n.as_str().into();
        }
        if ev.attr.type_ == event_type::TRACEPOINT
            && let Some(n) = self.tracing.as_ref().and_then(|t| t.event_name(ev.attr.config)) {
                return n.into();
            }
        ev.name().into()
    }

    /// perf's `perf_session__check_output_opt`, for file mode: check each
    /// output type's fields against its first (non-dummy) event.
    pub fn check_output(&mut self, evlist: &Evlist) -> std::result::Result<(), fields::FieldError> {
        for ty in 0..fields::NR_TYPES {
            let first = evlist.evsels.iter().find(|e| !is_dummy(&e.attr) && output_type(&e.attr) == ty);
            let t = self.opts.fields.types[ty];
            let Some(ev) = first else {
                if t.user_set && !t.wildcard_set && ty != fields::TYPE_SYNTH {
                    return Err(fields::FieldError(format!(
                        "{} events do not exist. Remove corresponding -F option to proceed.",
                        fields::type_name(ty)
                    )));
                }
                continue;
            };
            if t.fields != 0 {
                let name = self.event_name(ev);
                self.opts.fields.check_attr(&ev.attr, &name, false)?;
            }
            let t = &mut self.opts.fields.types[ty];
            if t.fields & f::DSOFF != 0 {
                t.fields |= f::DSO;
            }
            self.ip_opts[ty] = IpOpts::from_fields(t.fields);
            self.checked[ty] = true;
        }
        if !self.opts.hide_call_graph && !evlist.is_empty() {
            self.use_callchain = evlist.evsels.iter().any(|e| e.attr.samples(st::CALLCHAIN));
        }
        // Tracepoints with callchains print symbols unless -F said otherwise.
        if self.use_callchain && !self.opts.fields.types[fields::TYPE_TRACE].user_set {
            let has = evlist.evsels.iter().any(|e| e.attr.type_ == event_type::TRACEPOINT && e.attr.samples(st::CALLCHAIN));
            if has {
                let t = &mut self.opts.fields.types[fields::TYPE_TRACE];
                t.fields |= f::IP | f::SYM | f::SYMOFFSET | f::DSO;
                self.ip_opts[fields::TYPE_TRACE] = IpOpts::from_fields(t.fields);
            }
        }
        Ok(())
    }

    /// Writes out what is buffered, then `text`, and flushes: for text
    /// printed from outside (pipe-mode header features).
    pub fn write_through(&mut self, text: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(text);
        self.flush()
    }

    /// CPU time of the printer thread so far (see [`output`]).
    pub fn printer_cpu(&self) -> std::time::Duration {
        self.out.printer_cpu()
    }

    /// Writes out everything printed so far.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush(&mut self.buf)
    }

    /// Hands a full batch to the printer; stops everything once writing
    /// failed (a closed pipe).
    fn maybe_flush(&mut self) -> Result<()> {
        if self.out.full(&self.buf) {
            self.out.send(&mut self.buf);
        }
        if self.out.failed() {
            self.flush().map_err(Error::Output)?;
        }
        Ok(())
    }

    fn name_width(&mut self, evlist: &Evlist) -> usize {
        if self.name_width.is_none() {
            self.name_width = Some(evlist.evsels.iter().map(|e| self.event_name(e).len()).max().unwrap_or(0));
        }
        self.name_width.unwrap_or(0)
    }

    /// Prints one sample.
    fn print_sample(&mut self, evlist: &Evlist, evsel: usize, misc: u16, s: &Sample<'_>, chain: Chain<'_>, how: &PrintAs) -> Result<()> {
        let ev = &evlist.evsels[evsel];
        let attr = &ev.attr;
        let ty = output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        if fields == 0 {
            return Ok(());
        }
        let ip_opts = self.ip_opts[ty];
        if self.filters.skip_time(s.time) || self.filters.skip_cpu(s.cpu) {
            return Ok(());
        }
        // perf resolves the thread at printing time (creating it if needed).
        let (current, pid) = {
            let t = self.machine.findnew_thread(s.pid, s.tid);
            (t.comm(), t.pid)
        };
        let comm = how.comm.clone().unwrap_or(current);
        if self.filters.skip_thread(&comm, pid, s.tid) {
            return Ok(());
        }
        let with_callchain = self.use_callchain && attr.samples(st::CALLCHAIN);
        self.print_start(fields, &comm, s.pid, s.tid, s.cpu, s.time, misc, kind::SAMPLE, with_callchain && fields & f::IP != 0);

        if fields & (f::PERIOD | f::EVNAME) != 0 && !self.heads.tail(&mut self.buf, fields, s.period, evsel) {
            let from = self.buf.len();
            if fields & f::PERIOD != 0 {
                format::uint(&mut self.buf, s.period, 10);
                self.buf.push(b' ');
            }
            if fields & f::EVNAME != 0 {
                let width = self.name_width(evlist);
                let name = self.event_name(ev);
                format::pad_left(&mut self.buf, name.as_bytes(), width);
                self.buf.extend_from_slice(b": ");
            }
            self.heads.keep_tail(fields, s.period, evsel, &self.buf[from..]);
        }
        if fields & f::TRACE != 0
            && let Some(raw) = s.raw {
                self.print_trace(attr, raw);
            }
        if fields & f::ADDR != 0 {
            format::hex(&mut self.buf, s.addr, 16);
        }
        if fields & f::WEIGHT != 0 {
            format::uint(&mut self.buf, s.weight, 16);
        }
        if fields & f::IP != 0 {
            match (with_callchain, chain, s.callchain) {
                (true, Chain::Merged(ips), _) => {
                    self.buf.push(b'\n');
                    self.print_callchain(s.tid, ips.iter().copied(), ty, how.cookie);
                }
                (true, Chain::Sample, Some(c)) => {
                    self.buf.push(b'\n');
                    self.print_callchain(s.tid, c.iter(), ty, how.cookie);
                }
                _ => {
                    self.buf.push(b' ');
                    self.print_ip_line(s.tid, CpuMode::from_misc(misc), s.ip, ip_opts);
                }
            }
        }
        if fields & f::PHYS_ADDR != 0 {
            format::hex(&mut self.buf, s.phys_addr, 16);
        }
        if fields & f::DATA_PAGE_SIZE != 0 {
            self.buf.push(b' ');
            self.buf.extend_from_slice(page_size_name(s.data_page_size).as_bytes());
        }
        if fields & f::CODE_PAGE_SIZE != 0 {
            self.buf.push(b' ');
            self.buf.extend_from_slice(page_size_name(s.code_page_size).as_bytes());
        }
        self.buf.push(b'\n');
        self.maybe_flush()
    }

    /// perf's `process_deferred_sample_event` (--no-merge-callchains): the
    /// record's own comm/tid/cpu/time, then its user frames.
    fn print_deferred_record(&mut self, evlist: &Evlist, evsel: usize, misc: u16, id: &SampleId, d: &DeferredCallchainRecord<'_>) -> Result<()> {
        let attr = &evlist.evsels[evsel].attr;
        let ty = output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        if fields == 0 {
            return Ok(());
        }
        if self.filters.skip_time(id.time) || self.filters.skip_cpu(id.cpu) {
            return Ok(());
        }
        let (comm, pid) = {
            let t = self.machine.findnew_thread(id.pid, id.tid);
            (t.comm(), t.pid)
        };
        if self.filters.skip_thread(&comm, pid, id.tid) {
            return Ok(());
        }
        let with_callchain = self.use_callchain && attr.samples(st::CALLCHAIN);
        self.print_start(fields, &comm, id.pid, id.tid, id.cpu, id.time, misc, kind::CALLCHAIN_DEFERRED, with_callchain && fields & f::IP != 0);
        self.buf.extend_from_slice(b"DEFERRED CALLCHAIN [cookie: ");
        format::hex(&mut self.buf, d.cookie, 0);
        self.buf.push(b']');
        if fields & f::IP != 0 {
            if self.use_callchain {
                self.buf.push(b'\n');
                self.print_callchain(id.tid, d.ips.iter(), ty, None);
            } else {
                self.buf.push(b' ');
                self.print_ip_line(id.tid, CpuMode::from_misc(misc), 0, self.ip_opts[ty]);
            }
        }
        self.buf.push(b'\n');
        self.maybe_flush()
    }

    /// A held sample, delivered now: merged with `ips` when its cookie is
    /// the deferred record's, else as it is.
    fn print_held(&mut self, evlist: &Evlist, h: &crate::session::deferred::HeldSample, merge_with: Option<U64Array<'_>>) -> Result<()> {
        let evsel = h.evsel as usize;
        let attr = &evlist.evsels[evsel].attr;
        let e = self.endian;
        let header = perf_data::record::RecordHeader::parse(&h.bytes, e).expect("held records are whole");
        let s = Sample::parse(&h.bytes[8..], attr, e).map_err(|err| Damaged::in_record(h.offset, kind::SAMPLE, err.to_string()))?;
        let how_unmerged = PrintAs { comm: Some(h.comm.clone()), cookie: None };
        match (merge_with, s.callchain) {
            (Some(ips), Some(chain)) => {
                // The original entries up to and including the marker (the
                // cookie dropped), then the user ips. perf keeps the sample
                // flagged as deferred, so its cookie still names frames.
                let mut merged = std::mem::take(&mut self.merged);
                merged.clear();
                merged.extend(chain.iter().take(chain.len() - 1));
                merged.extend(ips.iter());
                let how = PrintAs { comm: Some(h.comm.clone()), cookie: Some(h.cookie) };
                let r = self.print_sample(evlist, evsel, header.misc, &s, Chain::Merged(&merged), &how);
                self.merged = merged;
                r
            }
            _ => self.print_sample(evlist, evsel, header.misc, &s, Chain::Sample, &how_unmerged),
        }
    }

    /// End of input: what is still held goes out unmerged, in arrival
    /// order, with its cookie frame.
    pub fn finish(&mut self, evlist: &Evlist) -> Result<()> {
        for h in self.stitcher.take_all() {
            let how = PrintAs { comm: Some(h.comm.clone()), cookie: Some(h.cookie) };
            let attr = &evlist.evsels[h.evsel as usize].attr;
            let header = perf_data::record::RecordHeader::parse(&h.bytes, self.endian).expect("whole record");
            let s = Sample::parse(&h.bytes[8..], attr, self.endian).map_err(|err| Damaged::in_record(h.offset, kind::SAMPLE, err.to_string()))?;
            self.print_sample(evlist, h.evsel as usize, header.misc, &s, Chain::Sample, &how)?;
        }
        Ok(())
    }

    /// What happened to deferred callchains.
    pub fn stitch_stats(&self) -> StitchStats {
        self.stitcher.stats
    }

    /// perf's `event_format__fprintf` for a tracepoint sample's raw data.
    fn print_trace(&mut self, attr: &Attr, raw: &[u8]) {
        if attr.type_ != event_type::TRACEPOINT {
            return;
        }
        let Script { tracing, machine, symbolizer, buf, trace_resolver, .. } = self;
        let Some(td) = tracing.as_mut() else { return };
        if td.event_for_config(attr.config).is_none() {
            return;
        }
        // perf's machine__resolve_kernel_addr: the kernel symbol and its start.
        let mut resolve = |addr: u64| {
            let map = machine.kernel_maps().find(addr).copied()?;
            let sym = symbolizer.find_symbol(&machine.dsos, &map, addr)?;
            Some((sym.name.clone(), map.unmap_ip(sym.start)))
        };
        let resolver: Option<crate::tracepoint::Resolver<'_>> = if *trace_resolver { Some(&mut resolve) } else { None };
        td.print(buf, raw, resolver);
    }

    /// perf's `perf_sample__fprintf_start`: comm, pid/tid, cpu, misc, time.
    #[allow(clippy::too_many_arguments)]
    fn print_start(&mut self, fields: u64, comm: &str, pid: i32, tid: i32, cpu: u32, time: u64, misc: u16, record_type: u32, comm_unpadded: bool) {
        let out = &mut self.buf;
        self.heads.head(out, fields, comm, pid, tid, cpu, comm_unpadded);
        if fields & f::MISC != 0 {
            let mut n = 0;
            let mode = misc & perf_data::record::misc::CPUMODE_MASK;
            for (m, c) in [(1u16, b'K'), (2, b'U'), (3, b'H'), (4, b'G'), (5, b'g')] {
                // perf tests `(misc & M) == M`, so e.g. HYPERVISOR (3) also
                // matches KERNEL (1) and USER (2).
                if mode & m == m {
                    out.push(c);
                    n += 1;
                }
            }
            use perf_data::record::misc as m;
            let extra = match record_type {
                kind::MMAP | kind::MMAP2 if misc & m::MMAP_DATA != 0 => Some(b'M'),
                kind::COMM if misc & m::COMM_EXEC != 0 => Some(b'E'),
                _ => None,
            };
            if let Some(c) = extra {
                out.push(c);
                n += 1;
            }
            for _ in n..6 {
                out.push(b' ');
            }
        }
        if fields & f::TIME != 0 {
            if self.opts.nanosecs {
                format::uint(out, time / 1_000_000_000, 5);
                out.push(b'.');
                format::uint_zero(out, time % 1_000_000_000, 9);
                out.extend_from_slice(b": ");
            } else {
                heads::time_usecs(out, time);
            }
        }
    }

    /// perf's `thread__find_map`: a kernel map is loaded when first used,
    /// which resizes it to its symbols.
    fn find_map(&mut self, tid: i32, mode: CpuMode, ip: u64) -> Option<Map> {
        self.find_map_or_gap(tid, mode, ip).ok()
    }

    /// [`Script::find_map`], or the gap around `ip` (valid until a lookup
    /// finds a map: loading a kernel map resizes it).
    fn find_map_or_gap(&mut self, tid: i32, mode: CpuMode, ip: u64) -> std::result::Result<Map, (u64, u64)> {
        let map = self.machine.find_map_or_gap(tid, mode, ip)?;
        if self.machine.kernel_map_unloaded(&map) {
            let range = self.symbolizer.kernel_map_range(&self.machine.dsos, map.dso);
            return Ok(self.machine.fixup_kernel_map(&map, range));
        }
        Ok(map)
    }

    /// perf's `sample__fprintf_sym` without a callchain: the sample ip.
    fn print_ip_line(&mut self, tid: i32, mode: CpuMode, ip: u64, opts: IpOpts) {
        let map = self.find_map(tid, mode, ip);
        self.frame(callchain::FrameJob { ip, map, opts, style: callchain::LineStyle::SampleIp, cookie: false });
    }
}

/// The cookie of a sample whose user callchain was deferred: the event has
/// `defer_callchain` and the callchain ends in `USER_DEFERRED, cookie`.
fn deferred_cookie(attr: &Attr, s: &Sample<'_>) -> Option<u64> {
    let chain = s.callchain?;
    let n = chain.len();
    (attr.has(flag::DEFER_CALLCHAIN) && n >= 2 && chain.get(n - 2) == Some(context::USER_DEFERRED)).then(|| chain.get(n - 1)).flatten()
}

/// perf's `get_page_size_name`.
fn page_size_name(size: u64) -> String {
    if size == 0 {
        return "N/A".to_string();
    }
    let units = ["B", "K", "M", "G", "T", "P", "E"];
    let mut s = size;
    let mut i = 0;
    while s >= 1024 && s.is_multiple_of(1024) && i + 1 < units.len() {
        s /= 1024;
        i += 1;
    }
    format!("{s}{}", units[i])
}

/// perf's `evsel__is_dummy_event`.
fn is_dummy(attr: &Attr) -> bool {
    attr.type_ == event_type::SOFTWARE && attr.config == 9
}

impl Tool for Script {
    fn lookahead(&mut self, ctx: &Context<'_>, records: &mut dyn Iterator<Item = (usize, &[u8])>) {
        self.prefetch_symbols(ctx, records);
    }

    fn event(&mut self, ctx: &Context<'_>, ev: &Event<'_>) -> Result<()> {
        let rec = &ev.record;
        let trailer = ctx.evlist.evsels[ev.evsel].attr.id_hdr_size();
        let bad = |what: &str| Damaged::in_record(ev.offset, rec.header.type_, format!("{what} record truncated"));
        self.endian = ctx.endian;
        match rec.header.type_ {
            kind::SAMPLE => {
                if let Some(s) = ev.sample {
                    let attr = &ctx.evlist.evsels[ev.evsel].attr;
                    let cookie = deferred_cookie(attr, s);
                    match cookie {
                        Some(c) if self.opts.merge_callchains => {
                            let comm = match self.machine.thread(s.tid) {
                                Some(t) => t.comm(),
                                None => format!(":{}", s.tid).into(),
                            };
                            self.stitcher.hold(s.tid, ev.offset, ev.evsel as u32, rec.bytes, comm, c);
                        }
                        _ => {
                            let how = PrintAs { comm: None, cookie };
                            self.print_sample(ctx.evlist, ev.evsel, rec.header.misc, s, Chain::Sample, &how)?;
                        }
                    }
                }
            }
            kind::CALLCHAIN_DEFERRED => {
                let d = DeferredCallchainRecord::parse(rec, trailer).ok_or_else(|| bad("CALLCHAIN_DEFERRED"))?;
                if self.opts.merge_callchains {
                    for h in self.stitcher.take_for_record(ev.id.tid, d.cookie) {
                        let with = (h.cookie == d.cookie).then_some(d.ips);
                        self.print_held(ctx.evlist, &h, with)?;
                    }
                } else {
                    self.print_deferred_record(ctx.evlist, ev.evsel, rec.header.misc, &ev.id, &d)?;
                }
            }
            kind::MMAP | kind::MMAP2 => {
                let m = MmapRecord::parse(rec, trailer).ok_or_else(|| bad("MMAP"))?;
                self.machine.process_mmap(&m, rec.header.type_, rec.header.misc);
                if self.opts.show_mmap_events {
                    self.print_side_band(ctx.evlist, ev.evsel, rec, &ev.id, m.pid, m.tid, 0, trailer);
                }
            }
            kind::COMM => {
                let c = CommRecord::parse(rec, trailer).ok_or_else(|| bad("COMM"))?;
                self.machine.process_comm(&c);
                if self.opts.show_task_events {
                    self.print_side_band(ctx.evlist, ev.evsel, rec, &ev.id, c.pid, c.tid, 0, trailer);
                }
            }
            kind::FORK => {
                let t = TaskRecord::parse(rec).ok_or_else(|| bad("FORK"))?;
                self.machine.process_fork(&t, rec.header.misc);
                if self.opts.show_task_events {
                    self.print_side_band(ctx.evlist, ev.evsel, rec, &ev.id, t.pid, t.tid, t.time, trailer);
                }
            }
            kind::EXIT => {
                let t = TaskRecord::parse(rec).ok_or_else(|| bad("EXIT"))?;
                // perf prints before the exit forgets the thread.
                if self.opts.show_task_events {
                    self.print_side_band(ctx.evlist, ev.evsel, rec, &ev.id, t.pid, t.tid, t.time, trailer);
                }
                self.machine.process_exit(&t);
            }
            kind::LOST if self.opts.show_lost_events => {
                // perf script's process_lost_event: the thread of the
                // sample_id, none without sample_id_all.
                let (pid, tid) = if ctx.evlist.evsels[ev.evsel].attr.sample_id_all() { (ev.id.pid, ev.id.tid) } else { (-1, -1) };
                self.print_side_band(ctx.evlist, ev.evsel, rec, &ev.id, pid, tid, 0, trailer);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, ctx: &Context<'_>) -> Result<()> {
        Script::finish(self, ctx.evlist)
    }

    /// perf script's `process_attr` (pipe mode): check the first event of
    /// each output type, and turn on ip and sym for callchains.
    fn attr_added(&mut self, evlist: &Evlist, idx: usize) -> Result<()> {
        let Some(ev) = evlist.evsels.get(idx) else { return Ok(()) };
        let ty = output_type(&ev.attr);
        self.combined_sample_type |= ev.attr.sample_type;
        if !self.attr_types_seen.insert(ev.attr.type_) {
            return Ok(());
        }
        self.name_width = None;
        if ev.attr.sample_type != 0 {
            self.opts
                .fields
                .check_attr(&ev.attr, &ev.name(), is_dummy(&ev.attr))
                .map_err(|e| Error::Options(e.0))?;
        }
        let combined = self.combined_sample_type;
        if self.use_callchain
            && (combined & st::CALLCHAIN != 0
                || combined & st::BRANCH_STACK != 0
                || (combined & st::REGS_USER != 0 && combined & st::STACK_USER != 0))
        {
            let t = &mut self.opts.fields.types[ty];
            if t.user_unset_fields & f::IP == 0 {
                t.fields |= f::IP;
            }
            if t.user_unset_fields & f::SYM == 0 {
                t.fields |= f::SYM;
            }
        }
        self.ip_opts[ty] = IpOpts::from_fields(self.opts.fields.types[ty].fields);
        self.checked[ty] = true;
        Ok(())
    }

    /// perf's `perf_event__process_tracing_data` (pipe mode).
    fn tracing_data(&mut self, data: &[u8]) {
        if let Err(e) = self.load_tracing_data(data, true) {
            eprintln!("pstitch: tracing data: {e}");
        }
    }
}

impl Script {
    pub fn comm_of(&self, tid: i32) -> Option<Rc<str>> {
        self.machine.thread(tid).map(|t| t.comm())
    }
}

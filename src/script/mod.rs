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

mod branch;
mod brcntr;
mod brstackinsn;
mod callchain;
mod data_src;
mod dump;
mod events;
mod fields;
mod format;
mod header;
mod heads;
mod insn;
mod metric;
mod prefetch;
mod regs;
mod run;
mod srccode;
mod stitch;

pub use fields::{FieldError, OutputFields};
pub use run::{HeaderMode, Outcome, Report, ScriptConfig, Source, run};
pub(crate) use run::{FilterLists, apply_filters, session_messages, symbolizer, user_callchains_where_shown};

use std::io::Write;

use crate::machine::{CpuMode, Machine, Map};
use perf_data::attr::{Attr, event_type, sample_type as st};
use perf_data::evlist::Evlist;
use perf_data::record::kind;
use crate::error::{Error, Result};
use crate::session::{Callchain, Consumed, Context, DeferredEvent, Event, RawEvent, SampleEvent, SideBand, Tool};
use crate::engine::Threads;
use crate::engine::printer::Printer;
use crate::symbols::Symbolizer;
use crate::symbols::loader::Loader;
use crate::tracepoint::TracingData;

use fields::{IpOpts, f, output_type};

use perf_data::sample::context;

/// perf's default `--max-stack` (`kernel.perf_event_max_stack`).
pub const DEFAULT_MAX_STACK: usize = 127;

/// Options that shape the output.
#[derive(Debug, Clone)]
pub struct ScriptOptions {
    /// `--per-event-dump`: what this pass prints.
    pub per_event: PerEvent,
    pub fields: OutputFields,
    pub nanosecs: bool,
    /// `-G` turns callchains off.
    pub hide_call_graph: bool,
    pub max_stack: usize,
    /// `--max-blocks`: the most blocks `brstackinsn` prints (0: all).
    pub max_blocks: u32,
    /// `--show-task-events`: print COMM, FORK and EXIT records.
    pub show_task_events: bool,
    /// `--show-mmap-events`: print MMAP and MMAP2 records.
    pub show_mmap_events: bool,
    /// `--show-lost-events`: print PERF_RECORD_LOST records.
    pub show_lost_events: bool,
    /// `--show-switch-events`: SWITCH and SWITCH_CPU_WIDE records.
    pub show_switch_events: bool,
    /// `--show-namespace-events`: NAMESPACES records.
    pub show_namespace_events: bool,
    /// `--show-cgroup-events`: CGROUP records.
    pub show_cgroup_events: bool,
    /// `--show-round-events`: FINISHED_ROUND records (perf then delivers
    /// records in file order, unsorted).
    pub show_round_events: bool,
    /// `--show-bpf-events`: KSYMBOL and BPF_EVENT records.
    pub show_bpf_events: bool,
    /// `--show-text-poke-events`: TEXT_POKE and KSYMBOL records.
    pub show_text_poke_events: bool,
    /// `--show-on-off-events`: the samples of `--switch-on`/`--switch-off`
    /// events themselves.
    pub show_on_off_events: bool,
    /// `--reltime`: times relative to the first event printed.
    pub reltime: bool,
    /// `--deltatime`: times relative to the previous event printed.
    pub deltatime: bool,
    /// `-L`: perf's latency layout of the line start (`%8.8s` comm, `%3d`
    /// cpu).
    pub latency: bool,
    /// `--unwind-style`: which unwinders perf would use for
    /// `--call-graph dwarf` samples.
    pub unwind_styles: crate::unwind::UnwindStyles,
    /// `-d`: check sample order instead of printing samples.
    pub debug_mode: bool,
    /// `--dsos`: only samples whose ip is in one of these DSOs (by short or
    /// long name, compared as bytes: a recorded path need not be UTF-8).
    pub dsos: Option<Vec<Vec<u8>>>,
    /// `-S`: only samples whose ip is in one of these symbols.
    pub symbols: Option<Vec<String>>,
    /// `--addr-range`: with `-S` addresses, how many bytes after each
    /// pass too.
    pub addr_range: i32,
}

/// `--per-event-dump`, done in passes over the input: which of the
/// delivered events a pass prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PerEvent {
    /// Everything (no `--per-event-dump`).
    #[default]
    All,
    /// The samples of this event only (to its dump file).
    Samples(usize),
    /// Everything but the samples (perf prints the other records to
    /// standard output), then `trailer` (perf's summary of the files).
    Others { trailer: String },
}

impl Default for ScriptOptions {
    fn default() -> Self {
        ScriptOptions {
            per_event: PerEvent::All,
            fields: OutputFields::default(),
            nanosecs: false,
            hide_call_graph: false,
            max_stack: DEFAULT_MAX_STACK,
            max_blocks: 0,
            show_task_events: false,
            show_mmap_events: false,
            show_lost_events: false,
            show_switch_events: false,
            show_namespace_events: false,
            show_cgroup_events: false,
            show_round_events: false,
            show_bpf_events: false,
            show_text_poke_events: false,
            show_on_off_events: false,
            reltime: false,
            deltatime: false,
            latency: false,
            unwind_styles: crate::unwind::UnwindStyles::default(),
            debug_mode: false,
            dsos: None,
            symbols: None,
            addr_range: 0,
        }
    }
}

/// A comma-separated list (perf's strlist: entries trimmed, empty ones
/// dropped), as `-S` and `--stop-bt` take them.
pub fn parse_list(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty()).map(str::to_string).collect()
}

/// [`parse_list`] of bytes (`--dsos`: DSO names need not be UTF-8).
pub fn parse_byte_list(s: &[u8]) -> Vec<Vec<u8>> {
    crate::session::filter::list_entries(s).map(<[u8]>::to_vec).collect()
}

/// `--symfs DIR[,LAYOUT]` as perf's `symbol__config_symfs` reads it: the
/// directory up to the last comma, and whether files are looked up by
/// their base name (`flat`) rather than their whole path (`hierarchy`, the
/// default). `Err`: perf's message for another layout.
pub fn parse_symfs(arg: &str) -> std::result::Result<(std::path::PathBuf, bool), String> {
    match arg.rsplit_once(',') {
        None => Ok((arg.into(), false)),
        Some((dir, "flat")) => Ok((dir.into(), true)),
        Some((dir, "hierarchy")) => Ok((dir.into(), false)),
        Some((_, layout)) => Err(format!("Invalid layout: '{layout}', use 'hierarchy' or 'flat'")),
    }
}

/// `-D` / `--dump-unsorted-raw-trace`: perf's record-by-record dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dump {
    #[default]
    None,
    /// `-D`: records dumped as they are delivered (in time order).
    Sorted,
    /// `--dump-unsorted-raw-trace`: in file order.
    Unsorted,
}

/// The `perf script` tool: prints what the session delivers.
pub(crate) struct Script {
    opts: ScriptOptions,
    pub symbolizer: Symbolizer,
    /// How much of the machine's DSO journal the printing side has seen.
    dso_journal: usize,
    /// DSOs whose symbols went to the printer (by DSO id).
    shipped: Vec<bool>,
    /// What the last callchains' lookups found (see [`callchain::RecentMaps`]).
    recent_maps: callchain::RecentMaps,
    /// `--stitch-lbr` on a recording that says its LBR depth.
    stitching: Option<stitch::LbrStitching>,
    /// Samples [`prefetch`] may still look at.
    lookahead_left: u32,
    /// The printing side (see [`crate::engine::printer`]); `buf` is the
    /// text for it.
    out: Printer<callchain::FrameFormatter, Loader>,
    buf: Vec<u8>,
    use_callchain: bool,
    /// Per output type: fields were checked against an event of that type.
    checked: [bool; fields::NR_TYPES],
    ip_opts: [IpOpts; fields::NR_TYPES],
    name_width: Option<usize>,
    heads: heads::Heads,
    endian: perf_data::bytes::Endian,
    /// Event formats from the tracing data, for tracepoint samples.
    tracing: Option<TracingData>,
    /// perf resolves `%pS` in trace output only when the tracing data was
    /// known before processing began (file mode), not from a pipe.
    trace_resolver: bool,
    /// Pipe mode: attr types seen, and the sample_types of all attrs so
    /// far (kept up to date so each HEADER_ATTR costs O(1)).
    attr_types_seen: std::collections::HashSet<u32>,
    combined_sample_type: u64,
    /// Pipe mode with `--header`/`-I`: features are printed as they
    /// arrive.
    features: Option<header::FeatureStream>,
    /// What to say afterwards: features that could not be printed,
    /// tracing data that was skipped in part.
    pub warnings: Vec<String>,
    /// What perf itself says on stderr, word for word (`-d`).
    pub said: Vec<String>,
    /// `-D` on a pipe: its FEATURE records, printed as they come (and the
    /// PMU names its ATTR records print).
    dump_features: Option<header::FeatureStream>,
    /// The longest `data_src` text printed so far (perf pads to it).
    data_src_width: usize,
    /// The `metric` field: the recording's thread map and the metrics found.
    metrics: metric::Metrics,
    /// The DSOs perf would have loaded by now, when `brstackoff` needs
    /// them (`track_loads`).
    loaded_dsos: branch::LoadedDsos,
    track_loads: bool,
    /// Some output type prints branch stacks: the reading side resolves
    /// their addresses, so it keeps its copy of kernel symbols.
    branch_lookups: bool,
    /// HEADER_CLOCK_DATA (for `tod`), once known: in file mode from the
    /// start, in pipe mode from its FEATURE record (before the samples).
    clock: Option<perf_data::env::ClockData>,
    /// `tod`'s last second and its `%Y-%m-%d %H:%M:%S` (local time; `None`
    /// where libc could not convert it), so
    /// that libc's localtime runs once per second of samples, not per sample.
    tod_second: Option<(i64, Option<Vec<u8>>)>,
    /// The recording is of x86 (register names for `iregs`/`uregs`); known
    /// at the first sample (in pipe mode the features come before it).
    x86: Option<bool>,
    /// `--reltime`, `--deltatime`: the first and the previous time shown.
    initial_time: u64,
    previous_time: u64,
    /// `-d`: the last sample time seen, and how many went backwards.
    last_timestamp: u64,
    nr_unordered: u64,
    /// `--switch-on`/`--switch-off` (perf's `evswitch`).
    evswitch: EvSwitch,
    /// `-D`, `--dump-unsorted-raw-trace`: how the dump names the input
    /// (`perf.data`, `pipe`), by the file of a directory input the record
    /// is in (`RawEvent::part`).
    pub dump: Option<Vec<std::rc::Rc<str>>>,
    /// `--dump-unsorted-raw-trace`: records are shown in file order.
    pub dump_unordered: bool,
    /// Samples printed (perf's count for `--per-event-dump`).
    pub samples_printed: u64,
    /// `insn`, `insnlen`: the DSOs' files the bytes are read from.
    insn: insn::InsnReader,
    /// The branch counters' events and width (see [`brcntr`]), known
    /// from the first sample with a branch stack on, as perf knows them.
    brcntr: Option<brcntr::BranchCounters>,
}

/// perf's `struct evswitch`: samples are shown from an occurrence of the
/// `on` event, and no more after the `off` event.
#[derive(Debug, Default)]
pub(crate) struct EvSwitch {
    pub on: Option<usize>,
    pub off: Option<usize>,
    pub show_on_off_events: bool,
    discarding: bool,
}

impl EvSwitch {
    pub fn new(on: Option<usize>, off: Option<usize>, show_on_off_events: bool) -> EvSwitch {
        EvSwitch { on, off, show_on_off_events, discarding: on.is_some() }
    }

    /// perf's `evswitch__discard`, quirks included: with `--switch-off`
    /// alone only the off event's own samples are hidden.
    fn discard(&mut self, evsel: usize) -> bool {
        if let Some(on) = self.on
            && self.discarding
        {
            if on != evsel {
                return true;
            }
            self.discarding = false;
            return !self.show_on_off_events;
        }
        if let Some(off) = self.off
            && !self.discarding
        {
            if off != evsel {
                return false;
            }
            self.discarding = true;
            return !self.show_on_off_events;
        }
        false
    }
}

impl Script {
    /// Starts the printer thread (see [`output`]) writing to `out`.
    pub fn new<W: Write + Send + 'static>(opts: ScriptOptions, symbolizer: Symbolizer, out: W, threads: Threads) -> Script {
        let use_callchain = !opts.hide_call_graph;
        let latency = opts.latency;
        Script {
            opts,
            dso_journal: 0,
            shipped: Vec::new(),
            recent_maps: Default::default(),
            stitching: None,
            lookahead_left: prefetch::LOOKAHEAD_SAMPLES,
            out: callchain::printer(out, threads, symbolizer.config.clone(), symbolizer.build_id_pairs()),
            symbolizer,
            buf: Vec::new(),
            use_callchain,
            checked: [false; fields::NR_TYPES],
            ip_opts: [IpOpts::default(); fields::NR_TYPES],
            name_width: None,
            heads: heads::Heads::new(latency),
            endian: perf_data::bytes::Endian::NATIVE,
            tracing: None,
            trace_resolver: false,
            attr_types_seen: Default::default(),
            combined_sample_type: 0,
            features: None,
            x86: None,
            clock: None,
            data_src_width: 0,
            metrics: metric::Metrics::default(),
            loaded_dsos: branch::LoadedDsos::default(),
            track_loads: false,
            branch_lookups: false,
            dump_features: None,
            tod_second: None,
            warnings: Vec::new(),
            said: Vec::new(),
            initial_time: 0,
            previous_time: 0,
            last_timestamp: 0,
            nr_unordered: 0,
            evswitch: EvSwitch::default(),
            dump: None,
            dump_unordered: false,
            samples_printed: 0,
            insn: insn::InsnReader::default(),
            brcntr: None,
        }
    }

    /// `--switch-on`/`--switch-off`, resolved to events.
    pub fn set_evswitch(&mut self, evswitch: EvSwitch) {
        self.evswitch = evswitch;
    }

    /// Takes the tracing data (TRACING_DATA feature section in file mode,
    /// HEADER_TRACING_DATA payload in pipe mode).
    /// A damaged part that was skipped is said among the warnings.
    pub fn load_tracing_data(&mut self, bytes: &[u8], pipe: bool) -> std::result::Result<(), crate::tracepoint::TracingDataError> {
        let td = TracingData::parse(bytes)?;
        if let Some(d) = &td.damage {
            self.warnings.push(format!("tracing data: {d}"));
        }
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
    /// output type's fields against its first (non-dummy) event; takes in
    /// HEADER_CLOCK_DATA (for `tod`) from `features` first.
    pub fn check_output(&mut self, evlist: &Evlist, features: &perf_data::features::Features) -> std::result::Result<(), fields::FieldError> {
        if let Some(clock) = features.get(perf_data::features::feat::CLOCK_DATA) {
            self.set_clock_data(clock, features.endian(), evlist);
        }
        let has_clock_data = self.clock.is_some();
        self.opts.fields.combined_branch_type = evlist.evsels.iter().fold(0, |b, e| b | e.attr.branch_sample_type);
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
        self.branch_fields_checked();
        if self.opts.fields.types.iter().any(|t| t.fields & f::BRCNTR != 0) {
            brcntr::BranchCounters::new(evlist, features, |i| self.event_name(&evlist.evsels[i]).into_owned()).check().map_err(fields::FieldError)?;
        }
        if !self.opts.hide_call_graph && !evlist.is_empty() {
            self.use_callchain = evlist.evsels.iter().any(|e| e.attr.samples(st::CALLCHAIN));
        }
        let tod = self.opts.fields.types.iter().any(|t| t.fields & f::TOD != 0);
        // Tracepoints with callchains print symbols unless -F said otherwise
        // (and perf skips its 'tod' check then).
        if self.use_callchain && !self.opts.fields.types[fields::TYPE_TRACE].user_set {
            let has = evlist.evsels.iter().any(|e| e.attr.type_ == event_type::TRACEPOINT && e.attr.samples(st::CALLCHAIN));
            if has {
                let t = &mut self.opts.fields.types[fields::TYPE_TRACE];
                t.fields |= f::IP | f::SYM | f::SYMOFFSET | f::DSO;
                self.ip_opts[fields::TYPE_TRACE] = IpOpts::from_fields(t.fields);
                return Ok(());
            }
        }
        if tod && !has_clock_data {
            return Err(fields::FieldError("Can't provide 'tod' time, missing clock data. Please record with -k/--clockid option.".into()));
        }
        Ok(())
    }

    /// What the branch-stack fields left after the checks need of the
    /// reading side (see [`branch`]).
    fn branch_fields_checked(&mut self) {
        let any = |bits: fields::Field| self.opts.fields.types.iter().any(|t| t.fields & bits != 0);
        self.track_loads = any(f::BRSTACKOFF);
        self.branch_lookups = any(f::BRSTACK | f::BRSTACKSYM | f::BRSTACKOFF | fields::INSN_BLOCKS);
    }

    /// Prints pipe-mode features as they arrive (see [`header::FeatureStream`]).
    pub fn print_features(&mut self, stream: header::FeatureStream) {
        self.features = Some(stream);
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
        self.symbolizer.save_caches();
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
    fn print_sample(&mut self, machine: &mut Machine, evlist: &Evlist, ev: &SampleEvent<'_>) -> Result<()> {
        let (evsel, misc, s) = (ev.evsel, ev.record.header.misc, ev.sample);
        let event = &evlist.evsels[evsel];
        let attr = &event.attr;
        let ty = output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        if self.track_loads
            && let Some(m) = self.find_map(machine, s.tid, CpuMode::from_misc(misc), s.ip)
        {
            // perf's machine__resolve looks the sample's symbol up.
            self.loaded_dsos.mark(m.dso);
        }
        if fields == 0 {
            return Ok(());
        }
        self.samples_printed += 1;
        let ip_opts = self.ip_opts[ty];
        let with_callchain = self.use_callchain && attr.samples(st::CALLCHAIN);
        self.print_start(fields, ev.comm, s.pid, s.tid, s.cpu, s.time, misc, kind::SAMPLE, with_callchain && fields & f::IP != 0);

        if fields & (f::PERIOD | f::EVNAME) != 0 && !self.heads.tail(&mut self.buf, fields, s.period, evsel) {
            let from = self.buf.len();
            if fields & f::PERIOD != 0 {
                format::uint(&mut self.buf, s.period, 10);
                self.buf.push(b' ');
            }
            if fields & f::EVNAME != 0 {
                let width = self.name_width(evlist);
                let name = self.event_name(event);
                format::pad_left(&mut self.buf, name.as_bytes(), width);
                self.buf.extend_from_slice(b": ");
            }
            self.heads.keep_tail(fields, s.period, evsel, &self.buf[from..]);
        }
        if self.opts.fields.print_flags {
            // perf's `"  %-*s "` of the branch-flags string, at least 21
            // wide: empty for samples of ordinary recordings (only hardware
            // tracing sets sample flags).
            self.buf.extend_from_slice(&[b' '; 24]);
        }
        if fields & f::TRACE != 0
            && let Some(raw) = s.raw {
                self.print_trace(machine, attr, raw);
            }
        if fields & f::ADDR != 0 {
            format::hex(&mut self.buf, s.addr, 16);
            // perf's `perf_sample__fprintf_addr`: the data address of a
            // page fault is resolved like an ip (symbols of every kind, the
            // map's DSO), without srcline or inline frames.
            if fields & (f::SYM | f::DSO) != 0 && addr_correlates_sym(attr) {
                let opts = IpOpts { ip: false, srcline: false, ..IpOpts::from_fields(fields) };
                let map = self.find_map_fb(machine, s.tid, CpuMode::from_misc(misc), s.addr);
                self.mark_loaded(map.as_ref());
                self.frame(machine, callchain::FrameJob { ip: s.addr, map, opts, style: callchain::LineStyle::SampleIp, cookie: false });
            }
        }
        if fields & f::DATA_SRC != 0 {
            data_src::print(&mut self.buf, s.data_src, &mut self.data_src_width);
        }
        if fields & f::WEIGHT != 0 {
            format::uint(&mut self.buf, s.weight, 16);
        }
        if fields & f::INS_LAT != 0 {
            format::uint(&mut self.buf, s.ins_lat.into(), 16);
        }
        if fields & f::RETIRE_LAT != 0 {
            format::uint(&mut self.buf, s.retire_lat.into(), 16);
        }
        // perf prints the cgroup before the ip (and callchain).
        if fields & f::CGROUP != 0 {
            self.buf.push(b' ');
            self.buf.extend_from_slice(machine.cgroup(s.cgroup).unwrap_or(b"unknown"));
        }
        if fields & f::IP != 0 {
            match (with_callchain, ev.callchain) {
                (true, Some(Callchain::Merged(ips))) => {
                    self.buf.push(b'\n');
                    self.print_callchain(machine, s.tid, ips.iter().copied(), self.opts.max_stack, ty, ev.cookie);
                }
                (true, Some(Callchain::Recorded(c))) => {
                    self.buf.push(b'\n');
                    self.print_callchain(machine, s.tid, c.iter(), self.opts.max_stack, ty, ev.cookie);
                }
                (true, Some(Callchain::Split { recorded, user, lbr: true })) => {
                    self.buf.push(b'\n');
                    self.print_lbr_callchain(machine, s, recorded, user, ty);
                }
                (true, Some(Callchain::Split { recorded, user, lbr: false })) => {
                    // The user part is cut where perf cuts it already.
                    self.buf.push(b'\n');
                    self.print_callchain(machine, s.tid, recorded.iter(), self.opts.max_stack, ty, None);
                    self.print_user_frames(machine, s.tid, user, ty);
                }
                _ => {
                    self.buf.push(b' ');
                    self.print_ip_line(machine, s.tid, CpuMode::from_misc(misc), s.ip, ip_opts);
                }
            }
        }
        if fields & (f::IREGS | f::UREGS) != 0 {
            for (field, regs) in [(f::IREGS, &s.intr_regs), (f::UREGS, &s.user_regs)] {
                if fields & field != 0
                    && let Some(r) = regs
                {
                    regs::print(&mut self.buf, r, self.x86.unwrap_or(true));
                }
            }
        }
        if fields & (f::BRSTACK | f::BRSTACKSYM | f::BRSTACKOFF) != 0
            && let Some(stack) = &s.branch_stack
        {
            self.print_branch_stack(machine, fields, s.tid, CpuMode::from_misc(misc), stack);
        }
        if fields & (f::INSN | f::INSNLEN) != 0 {
            self.insn.print(&mut self.buf, &mut self.symbolizer, machine, s.tid, s.ip, fields);
        }
        if fields & fields::INSN_BLOCKS != 0
            && let Some(stack) = &s.branch_stack
        {
            self.print_brstackinsn(machine, fields, s, evsel, attr.branch_sample_type, stack);
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
        if fields & f::SRCCODE != 0 && self.opts.per_event == PerEvent::All {
            self.print_srccode(machine, s.tid, CpuMode::from_misc(misc), s.ip);
        }
        if fields & f::METRIC != 0 {
            for metric in self.metrics.sample(evlist, s.tid).into_iter().flatten().flatten() {
                self.print_start(fields, ev.comm, s.pid, s.tid, s.cpu, s.time, misc, kind::SAMPLE, with_callchain && fields & f::IP != 0);
                metric::print_line(&mut self.buf, metric);
            }
            if let Some(w) = self.metrics.left_out.take() {
                self.warnings.push(w);
            }
        }
        self.maybe_flush()
    }

    /// Leaves the sample's srccode line (after the sample and its
    /// callchain) for the printing side, with the thread whose last line
    /// it checks (see [`srccode`]); nothing for an ip in no map.
    fn print_srccode(&mut self, machine: &mut Machine, tid: i32, mode: CpuMode, ip: u64) {
        let Some(map) = self.find_map(machine, tid, mode, ip) else { return };
        let thread = machine.thread(tid).map_or(0, |t| t.serial());
        self.out.other(self.buf.len(), callchain::Other::Srccode(thread));
        self.frame(machine, callchain::FrameJob { ip, map: Some(map), opts: IpOpts::default(), style: callchain::LineStyle::Srccode, cookie: false });
    }

    /// perf's `process_deferred_sample_event` (--no-merge-callchains): the
    /// record's own comm/tid/cpu/time, then its user frames.
    fn print_deferred_record(&mut self, machine: &mut Machine, evlist: &Evlist, ev: &DeferredEvent<'_>) -> Result<()> {
        let (id, misc) = (&ev.id, ev.record.header.misc);
        let attr = &evlist.evsels[ev.evsel].attr;
        let ty = output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        if fields == 0 {
            return Ok(());
        }
        let with_callchain = self.use_callchain && attr.samples(st::CALLCHAIN);
        self.print_start(fields, ev.comm, id.pid, id.tid, id.cpu, id.time, misc, kind::CALLCHAIN_DEFERRED, with_callchain && fields & f::IP != 0);
        self.buf.extend_from_slice(b"DEFERRED CALLCHAIN [cookie: ");
        format::hex(&mut self.buf, ev.deferred.cookie, 0);
        self.buf.push(b']');
        if fields & f::IP != 0 {
            if self.use_callchain {
                self.buf.push(b'\n');
                self.print_callchain(machine, id.tid, ev.deferred.ips.iter(), self.opts.max_stack, ty, None);
            } else {
                self.buf.push(b' ');
                self.print_ip_line(machine, id.tid, CpuMode::from_misc(misc), 0, self.ip_opts[ty]);
            }
        }
        self.buf.push(b'\n');
        self.maybe_flush()
    }

    /// perf's `event_format__fprintf` for a tracepoint sample's raw data.
    fn print_trace(&mut self, machine: &Machine, attr: &Attr, raw: &[u8]) {
        if attr.type_ != event_type::TRACEPOINT {
            return;
        }
        let Script { tracing, symbolizer, buf, trace_resolver, .. } = self;
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

    /// brcntr's abbreviation list, which perf prints before every line
    /// of standard output once it knows the counted events.
    fn print_brcntr_list(&mut self, fields: u64) {
        if fields & f::BRCNTR != 0
            && let Some(c) = &self.brcntr
        {
            self.buf.extend_from_slice(&c.list);
        }
    }

    /// perf's `perf_sample__fprintf_start`: comm, pid/tid, cpu, misc, time.
    #[allow(clippy::too_many_arguments)]
    fn print_start(&mut self, fields: u64, comm: &[u8], pid: i32, tid: i32, cpu: u32, time: u64, misc: u16, record_type: u32, comm_unpadded: bool) {
        // Standard output's lines only, not an event's dump file's.
        if !matches!(self.opts.per_event, PerEvent::Samples(_)) {
            self.print_brcntr_list(fields);
        }
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
            let extra: &[u8] = match record_type {
                kind::MMAP | kind::MMAP2 if misc & m::MMAP_DATA != 0 => b"M",
                kind::COMM if misc & m::COMM_EXEC != 0 => b"E",
                kind::SWITCH | kind::SWITCH_CPU_WIDE if misc & m::SWITCH_OUT != 0 => {
                    if misc & m::SWITCH_OUT_PREEMPT != 0 { b"Sp" } else { b"S" }
                }
                _ => b"",
            };
            out.extend_from_slice(extra);
            n += extra.len();
            for _ in n..6 {
                out.push(b' ');
            }
        }
        if fields & f::TOD != 0 {
            self.print_tod(time);
        }
        if fields & f::TIME != 0 {
            let time = self.shown_time(time);
            let out = &mut self.buf;
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

    /// Whether the recording is of x86 (HEADER_ARCH), found once.
    fn is_x86(&mut self, features: &perf_data::features::Features) -> bool {
        *self.x86.get_or_insert_with(|| regs::is_x86(features.string(perf_data::features::feat::ARCH).as_deref()))
    }

    /// perf's `tod_scnprintf`: the sample's time as wall-clock time (local
    /// time, microseconds or with `--ns` nanoseconds), from HEADER_CLOCK_DATA's
    /// pair of the same instant on both clocks; `disabled` without it.
    fn print_tod(&mut self, time: u64) {
        let Some(clock) = self.clock else {
            self.buf.extend_from_slice(b"disabled ");
            return;
        };
        let tod_ns = if time > clock.clockid_ns {
            clock.tod_ns.wrapping_add(time - clock.clockid_ns)
        } else {
            clock.tod_ns.wrapping_sub(clock.clockid_ns - time)
        };
        // time_t is signed: perf's cast of the u64.
        let sec = (tod_ns / 1_000_000_000) as i64;
        let nsec = tod_ns % 1_000_000_000;
        if self.tod_second.as_ref().is_none_or(|(s, _)| *s != sec) {
            self.tod_second = Some((sec, header::date_time(sec).map(String::into_bytes)));
        }
        match self.tod_second.as_ref().and_then(|(_, d)| d.as_ref()) {
            Some(date) => {
                self.buf.extend_from_slice(date);
                self.buf.push(b'.');
                if self.opts.nanosecs {
                    format::uint_zero(&mut self.buf, nsec, 9);
                } else {
                    format::uint_zero(&mut self.buf, nsec / 1000, 6);
                }
            }
            // localtime_r failed.
            None => self.buf.extend_from_slice(b"failed"),
        }
        self.buf.push(b' ');
    }

    /// A sample of event `evsel` was read (delivered, before the filters):
    /// perf numbers the events its branch counters count when it first
    /// reads one with a branch stack (`evsel__has_branch_counters`).
    fn read_branch_stack(&mut self, evlist: &Evlist, features: &perf_data::features::Features, evsel: usize) {
        if self.brcntr.is_none() && evlist.evsels.get(evsel).is_some_and(|e| e.attr.samples(st::BRANCH_STACK)) {
            self.brcntr = Some(brcntr::BranchCounters::new(evlist, features, |i| self.event_name(&evlist.evsels[i]).into_owned()));
        }
    }

    /// HEADER_CLOCK_DATA's payload (perf's `process_clock_data`; a version
    /// other than 1 leaves `tod` disabled).
    fn set_clock_data(&mut self, payload: &[u8], endian: perf_data::bytes::Endian, evlist: &Evlist) {
        let mut env = perf_data::env::Env::default();
        if env.process(perf_data::features::feat::CLOCK_DATA, payload, endian, evlist).is_ok() {
            self.clock = env.clock;
        }
    }

    /// The time a line shows: `--reltime` from the first event shown,
    /// `--deltatime` from the previous one (perf's
    /// `perf_sample__fprintf_start`; a time of 0 does not start the clock).
    fn shown_time(&mut self, time: u64) -> u64 {
        if self.opts.reltime {
            if self.initial_time == 0 {
                self.initial_time = time;
            }
            time.wrapping_sub(self.initial_time)
        } else if self.opts.deltatime {
            let t = if self.previous_time != 0 { time.wrapping_sub(self.previous_time) } else { 0 };
            self.previous_time = time;
            t
        } else {
            time
        }
    }

    /// perf's `thread__find_map`: a kernel map is loaded when first used,
    /// which resizes it to its symbols.
    fn find_map(&mut self, machine: &mut Machine, tid: i32, mode: CpuMode, ip: u64) -> Option<Map> {
        self.find_map_or_gap(machine, tid, mode, ip).ok()
    }

    /// [`Script::find_map`], or the gap around `ip` (valid until a lookup
    /// finds a map: loading a kernel map resizes it).
    fn find_map_or_gap(&mut self, machine: &mut Machine, tid: i32, mode: CpuMode, ip: u64) -> std::result::Result<Map, (u64, u64)> {
        self.symbolizer.find_map(machine, tid, mode, ip)
    }

    /// perf's `thread__find_map_fb`: where `addr` is not mapped in `mode`,
    /// the address space its value belongs to (perf's
    /// `machine__addr_cpumode`: x86 is a "single address space" machine
    /// there, kernel addresses from 2^63 up), e.g. the user-space data
    /// address of a page fault taken in kernel mode.
    fn find_map_fb(&mut self, machine: &mut Machine, tid: i32, mode: CpuMode, addr: u64) -> Option<Map> {
        let map = self.find_map(machine, tid, mode, addr);
        let kernel = addr >= 1 << 63;
        let addr_mode = match mode {
            CpuMode::Kernel | CpuMode::User if kernel => CpuMode::Kernel,
            CpuMode::Kernel | CpuMode::User => CpuMode::User,
            CpuMode::GuestKernel | CpuMode::GuestUser if kernel => CpuMode::GuestKernel,
            CpuMode::GuestKernel | CpuMode::GuestUser => CpuMode::GuestUser,
            m => m,
        };
        if map.is_some() || addr_mode == mode {
            return map;
        }
        self.find_map(machine, tid, addr_mode, addr)
    }

    /// perf's `machine__resolve` filters for `--dsos` and `-S`: the sample
    /// ip must be in one of the DSOs (short or long name), and in one of
    /// the symbols (by name, by the `0x` address of its start, or, for
    /// entries that read as hex numbers, at that very address or within
    /// `--addr-range` bytes after it).
    fn filtered(&mut self, machine: &mut Machine, ev: &SampleEvent<'_>) -> bool {
        let s = ev.sample;
        let map = self.find_map(machine, s.tid, CpuMode::from_misc(ev.record.header.misc), s.ip);
        if let Some(list) = &self.opts.dsos {
            let Some(m) = &map else { return true };
            let dso = machine.dsos.get(m.dso);
            let long: &[u8] = &dso.name;
            let short = crate::machine::dsos::short_name(long, dso.kind);
            if !list.iter().any(|d| d[..] == *short || (*short != *long && d[..] == *long)) {
                return true;
            }
        }
        let Some(symbols) = &self.opts.symbols else { return false };
        let (names, addrs) = symbol_filter(symbols);
        let sym = map.as_ref().and_then(|m| self.symbolizer.find_symbol(&machine.dsos, m, s.ip).map(|sym| (m, sym)));
        let mut pass = false;
        if let Some((m, sym)) = &sym {
            pass = names.iter().any(|n| **n == *sym.name) || names.iter().any(|n| **n == format!("{:#x}", m.unmap_ip(sym.start)));
        }
        if !pass && !addrs.is_empty() && map.is_some() {
            let range = self.opts.addr_range;
            pass = addrs.contains(&s.ip) || (range != 0 && addrs.iter().any(|&a| s.ip >= a && s.ip < a.wrapping_add(range as i64 as u64)));
        }
        !pass
    }

    /// perf's `sample__fprintf_sym` without a callchain: the sample ip.
    fn print_ip_line(&mut self, machine: &mut Machine, tid: i32, mode: CpuMode, ip: u64, opts: IpOpts) {
        let map = self.find_map(machine, tid, mode, ip);
        self.frame(machine, callchain::FrameJob { ip, map, opts, style: callchain::LineStyle::SampleIp, cookie: false });
    }
}

/// perf's `setup_addrlist`: `-S` entries that read whole as hex numbers
/// (C's `strtoul(s, &end, 16)`, trailing blanks allowed) are addresses,
/// the others symbol names.
fn symbol_filter(list: &[String]) -> (Vec<&String>, Vec<u64>) {
    let mut names = Vec::new();
    let mut addrs = Vec::new();
    for e in list {
        let t = e.trim_start();
        let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).filter(|r| r.starts_with(|c: char| c.is_ascii_hexdigit())).unwrap_or(t);
        let end = t.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(t.len());
        match u64::from_str_radix(&t[..end], 16) {
            Ok(v) if end > 0 && t[end..].trim_end().is_empty() => addrs.push(v),
            _ => names.push(e),
        }
    }
    (names, addrs)
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

/// perf's `sample_addr_correlates_sym`: the sample's `addr` is an address
/// in the thread's maps (software page-fault events; BTS, which pstitch
/// does not read, too).
fn addr_correlates_sym(attr: &Attr) -> bool {
    // PERF_COUNT_SW_PAGE_FAULTS, _MIN and _MAJ.
    attr.type_ == event_type::SOFTWARE && matches!(attr.config, 2 | 5 | 6)
}

/// perf's `evsel__is_dummy_event`.
fn is_dummy(attr: &Attr) -> bool {
    attr.type_ == event_type::SOFTWARE && attr.config == 9
}

impl Tool for Script {
    /// perf's `process_event` resolves the callchain (unwinding a
    /// `--call-graph dwarf` stack) only where it prints the ip, of a
    /// sample that has one (`use_callchain && sample->callchain`).
    fn shows_callchain(&self, attr: &Attr) -> bool {
        self.use_callchain && attr.samples(st::CALLCHAIN) && self.opts.fields.types[output_type(attr)].fields & f::IP != 0
    }

    fn lookahead(&mut self, cx: &mut Context<'_>, records: &mut dyn Iterator<Item = (usize, &[u8])>) {
        self.prefetch_symbols(cx, records);
    }

    fn sample(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        self.endian = cx.endian;
        self.is_x86(cx.features);
        // perf prints srccode lines and brcntr's list to standard output,
        // not to the event's dump file: with --per-event-dump they come in
        // the pass of the other records.
        let stdout_only = match self.opts.per_event {
            PerEvent::All => false,
            PerEvent::Samples(i) if i == ev.evsel => false,
            PerEvent::Others { .. } if !self.opts.debug_mode => true,
            _ => return Ok(()),
        };
        if self.opts.debug_mode {
            // perf's `-d`: check the order, print nothing.
            let t = ev.sample.time;
            if t < self.last_timestamp {
                self.said.push(format!("Samples misordered, previous: {} this: {t}", self.last_timestamp));
                self.nr_unordered += 1;
            }
            self.last_timestamp = t;
            return Ok(());
        }
        if (self.opts.dsos.is_some() || self.opts.symbols.is_some()) && self.filtered(cx.machine, ev) {
            return Ok(());
        }
        if self.evswitch.discard(ev.evsel) {
            return Ok(());
        }
        if stdout_only {
            // What perf prints of a sample to standard output with
            // --per-event-dump: brcntr's list, srccode lines.
            let attr = &cx.evlist.evsels[ev.evsel].attr;
            let fields = self.opts.fields.types[output_type(attr)].fields;
            self.print_brcntr_list(fields);
            if fields & f::SRCCODE != 0 {
                let s = ev.sample;
                if fields & fields::INSN_BLOCKS != 0
                    && let Some(stack) = &s.branch_stack
                {
                    self.print_brstackinsn_srccode(cx.machine, fields, s, ev.evsel, attr.branch_sample_type, stack);
                }
                self.print_srccode(cx.machine, s.tid, CpuMode::from_misc(ev.record.header.misc), s.ip);
            }
            return self.maybe_flush();
        }
        self.print_sample(cx.machine, cx.evlist, ev)
    }

    fn finish(&mut self, _cx: &mut Context<'_>) -> Result<()> {
        if let PerEvent::Others { trailer } = &self.opts.per_event {
            self.buf.extend_from_slice(trailer.as_bytes());
        }
        if self.opts.debug_mode {
            self.said.push(format!("Misordered timestamps: {}", self.nr_unordered));
        }
        Ok(())
    }

    fn deferred_callchain(&mut self, cx: &mut Context<'_>, ev: &DeferredEvent<'_>) -> Result<()> {
        self.endian = cx.endian;
        self.print_deferred_record(cx.machine, cx.evlist, ev)
    }

    fn record(&mut self, cx: &mut Context<'_>, ev: &Event<'_>) -> Result<()> {
        self.endian = cx.endian;
        if matches!(self.opts.per_event, PerEvent::Samples(_)) {
            return Ok(());
        }
        let o = &self.opts;
        // perf script's process_*_event: the thread of the sample_id (none
        // without sample_id_all), or the one the record names.
        let id_thread = if cx.evlist.evsels[ev.evsel].attr.sample_id_all() { (ev.id.pid, ev.id.tid, 0) } else { (-1, -1, 0) };
        let (pid, tid, time) = match (ev.record.header.type_, ev.side_band) {
            (_, SideBand::Mmap(m)) if o.show_mmap_events => (m.pid, m.tid, 0),
            (_, SideBand::Comm(c)) if o.show_task_events => (c.pid, c.tid, 0),
            (_, SideBand::Fork(t) | SideBand::Exit(t)) if o.show_task_events => (t.pid, t.tid, t.time),
            (_, SideBand::Lost(_)) if o.show_lost_events => id_thread,
            (kind::SWITCH | kind::SWITCH_CPU_WIDE, _) if o.show_switch_events => id_thread,
            (kind::NAMESPACES, _) if o.show_namespace_events => {
                let b = ev.record.body();
                (cx.endian.read_u32(b, 0).unwrap_or(0) as i32, cx.endian.read_u32(b, 4).unwrap_or(0) as i32, 0)
            }
            (kind::CGROUP, _) if o.show_cgroup_events => id_thread,
            (kind::KSYMBOL, _) if o.show_bpf_events || o.show_text_poke_events => id_thread,
            (kind::BPF_EVENT, _) if o.show_bpf_events => id_thread,
            (kind::TEXT_POKE, _) if o.show_text_poke_events => id_thread,
            _ => return Ok(()),
        };
        self.print_side_band(cx, ev, pid, tid, time);
        Ok(())
    }

    fn consumed(&mut self, cx: &mut Context<'_>, ev: &Consumed<'_>) -> Result<()> {
        // The maps the `metric` field counts by (see [`metric`]).
        let (Some(ty), Some(body)) = (cx.endian.read_u32(ev.bytes, 0), ev.bytes.get(8..)) else { return Ok(()) };
        match ty {
            kind::THREAD_MAP => self.metrics.thread_map(perf_data::record::thread_map_pids(body, cx.endian)),
            // perf's process_cpu_map_event keeps any map it can read.
            kind::CPU_MAP if perf_data::record::cpu_map_cpus(body, cx.endian).is_some() => self.metrics.cpu_map(),
            _ => {}
        }
        Ok(())
    }

    fn resolved(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) {
        if !self.opts.debug_mode {
            self.dump_resolved(cx.machine, ev);
        }
    }

    fn dump(&mut self, cx: &mut Context<'_>, ev: &RawEvent<'_>) -> Result<()> {
        // Every sample is read here, before any filter, as perf reads it.
        if self.brcntr.is_none()
            && ev.record.header.type_ == kind::SAMPLE
            && let Some(evsel) = ev.evsel
        {
            self.read_branch_stack(cx.evlist, cx.features, evsel);
        }
        if self.dump.is_some() {
            self.endian = cx.endian;
            self.dump_record(cx, ev);
            self.maybe_flush()?;
        }
        Ok(())
    }

    fn round(&mut self, _cx: &mut Context<'_>) -> Result<()> {
        if self.opts.show_round_events {
            self.buf.extend_from_slice(b"PERF_RECORD_FINISHED_ROUND\n");
            self.maybe_flush()?;
        }
        Ok(())
    }

    /// perf script's `process_attr` (pipe mode): check the first event of
    /// each output type, and turn on ip and sym for callchains.
    fn attr_added(&mut self, evlist: &Evlist, idx: usize) -> Result<bool> {
        let Some(ev) = evlist.evsels.get(idx) else { return Ok(false) };
        let ty = output_type(&ev.attr);
        self.combined_sample_type |= ev.attr.sample_type;
        if !self.attr_types_seen.insert(ev.attr.type_) {
            return Ok(false);
        }
        self.name_width = None;
        self.opts.fields.combined_branch_type |= ev.attr.branch_sample_type;
        let named = ev.attr.sample_type != 0
            && self.opts.fields.check_attr(&ev.attr, &ev.name(), is_dummy(&ev.attr)).map_err(|e| Error::Options(e.0))?;
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
        self.branch_fields_checked();
        Ok(named)
    }

    /// Pipe mode: perf prints the features as they arrive (with
    /// `--header` or `-I`).
    fn feature(&mut self, cx: &mut Context<'_>, bit: u64, payload: &[u8]) -> Result<()> {
        // A pipe's clock data comes before its samples: 'tod' prints
        // "disabled" only for samples before it, as in perf.
        if bit == u64::from(perf_data::features::feat::CLOCK_DATA) {
            self.set_clock_data(payload, cx.endian, cx.evlist);
        }
        let Some(stream) = self.features.as_mut() else { return Ok(()) };
        let mut text = Vec::new();
        // The session says in perf's words why it rejects CPU_DOMAIN_INFO.
        if let Err(w) = stream.feature(&mut text, bit, payload, cx.endian, cx.evlist)
            && bit != u64::from(perf_data::features::feat::CPU_DOMAIN_INFO)
        {
            self.warnings.push(w);
        }
        if !text.is_empty() {
            self.write_through(&text).map_err(Error::Output)?;
        }
        Ok(())
    }

    /// The input pauses: what was printed so far goes out.
    fn idle(&mut self, _cx: &mut Context<'_>) -> Result<()> {
        self.flush().map_err(Error::Output)
    }

    /// perf's `perf_event__process_tracing_data` (pipe mode).
    fn tracing_data(&mut self, data: &[u8]) {
        if let Err(e) = self.load_tracing_data(data, true) {
            self.warnings.push(format!("tracing data: {e}"));
        }
    }
}

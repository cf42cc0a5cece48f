//! The session: reads records from a [`RecordSource`], keeps the event list
//! and feature data current (pipe mode sends them as records), decompresses
//! `-z` chunks, orders kernel records by time like perf, keeps the machine
//! (threads, comms, maps) current, stitches deferred user callchains to
//! their samples, filters samples, and hands each event to a [`Tool`] in
//! perf's delivery order.
//!
//! ```text
//! RecordSource ──> process_record ──┬─ user records (>= 64): attrs, features,
//!                                   │   FINISHED_ROUND (flush), COMPRESSED (recurse)
//!                                   └─ kernel records: timestamp? ──yes──> OrderedEvents ──┐
//!                                                          └──no───────────────────────────┤
//!   deliver <──────────────────────────────────────────────────────────────────────────────┘
//!     ├─ COMM, FORK, MMAP: Machine takes it in ──> Tool::record     (EXIT: after the tool)
//!     ├─ SAMPLE with a deferred user callchain: held (Stitcher) ──┐
//!     ├─ CALLCHAIN_DEFERRED: the thread's held samples, merged ──┴──> filters ──> Tool::sample
//!     └─ SAMPLE ─────────────────────────────────────────────────────> filters ──> Tool::sample
//! ```

mod deferred;
pub mod filter;
pub(crate) mod lbr;
mod ordered;
mod tool;


use crate::error::{Error, Result};
use crate::fasthash::FastMap;
use crate::machine::{Comm, Machine};
use crate::unwind::{UnwindOptions, UserUnwinder};
use perf_data::Error as Damaged;
use perf_data::attr::{Attr, branch_sample_type, flag, sample_type};
use perf_data::bytes::Endian;
use perf_data::compressed::{self, Decompressor};
use perf_data::error::Warnings;
use perf_data::evlist::{Evlist, Evsel, ids_after_attr};
use perf_data::features::{Features, feat};
use perf_data::record::{self, CommRecord, DeferredCallchainRecord, HEADER_SIZE, KsymbolRecord, LostRecord, MmapRecord, Record, RecordHeader, TaskRecord, kind};
use perf_data::sample::{Sample, SampleId, context};
use perf_data::{RawRecord, RecordSource};

pub use crate::unwind::UnwindStats;
pub use deferred::StitchStats;
pub use filter::SampleFilter;
pub use tool::{Callchain, Consumed, Context, DeferredEvent, Event, HeldEvent, RawEvent, SampleEvent, SideBand, Tool, Why};

use deferred::{HeldSample, Stitcher};
use ordered::{OrderedEvents, Queued, RecordBytes};

/// The [`Context`] of a session `$s`, borrowing only the fields it names
/// (so that others, such as the record source, stay free to borrow).
macro_rules! context {
    ($s:expr) => {
        Context { evlist: &$s.evlist, features: &$s.features, pipe: $s.pipe, endian: $s.endian, machine: &mut $s.machine, filter: &$s.filter }
    };
}

/// How many records after the queue [`Tool::lookahead`] may see.
pub(crate) const UPCOMING_MAX: usize = 1 << 16;
/// How many bytes past the reading position those records may reach:
/// the walk reads each record's header on the reading thread, before the
/// pager has mapped those pages in (65,536 samples with 8 KiB stack
/// copies lie 560 MB ahead; 65,536 frame-pointer samples about 10 MB).
pub(crate) const UPCOMING_BYTES: u64 = 16 << 20;

/// Records counted by type: one add per record read, so the types perf
/// knows (all below 128) have a slot each.
#[derive(Debug, Clone)]
pub struct TypeCounts {
    known: [u64; 128],
    others: std::collections::BTreeMap<u32, u64>,
}

impl Default for TypeCounts {
    fn default() -> TypeCounts {
        TypeCounts { known: [0; 128], others: Default::default() }
    }
}

impl TypeCounts {
    #[inline]
    pub fn add(&mut self, t: u32) {
        match self.known.get_mut(t as usize) {
            Some(n) => *n += 1,
            None => *self.others.entry(t).or_default() += 1,
        }
    }

    /// How many records of type `t` were read.
    pub fn count(&self, t: u32) -> u64 {
        self.known.get(t as usize).copied().unwrap_or_else(|| self.others.get(&t).copied().unwrap_or(0))
    }

    /// The types seen and their counts, by type.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let known = self.known.iter().enumerate().filter(|(_, n)| **n != 0).map(|(t, n)| (t as u32, *n));
        known.chain(self.others.iter().map(|(t, n)| (*t, *n)))
    }
}

/// Counters kept while reading (perf's `events_stats`).
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Records read, by type (skipped ones included).
    pub by_type: TypeCounts,
    pub nr_unknown_id: u64,
    pub nr_unknown_type: u64,
    /// Records skipped because they were malformed (too small, string
    /// without NUL, sample fields past the end, ...).
    pub nr_skipped: u64,
    pub nr_unordered: u64,
    /// PERF_RECORD_LOST records, and the events they say were lost.
    pub nr_lost_records: u64,
    pub lost_events: u64,
    /// Sum of PERF_RECORD_LOST_SAMPLES counts.
    pub lost_samples: u64,
    /// Samples whose CPU was clamped to 0 (perf 7.2 does the same).
    pub nr_cpu_clamped: u64,
}

impl Stats {
    /// perf's `nr_events[0]`: the records it processed, of every known type
    /// (a type past PERF_RECORD_HEADER_MAX stops perf before it is counted).
    pub fn nr_processed(&self) -> u64 {
        self.by_type.iter().filter(|&(t, _)| t < kind::HEADER_MAX).map(|(_, n)| n).sum()
    }
}

/// Bounds on the memory one input may make the session use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most bytes one compressed chunk may decompress to when the file
    /// does not say (HEADER_COMPRESSED's mmap_len); also the ceiling for
    /// what it may say.
    pub max_chunk_output: usize,
    /// Most bytes of copied records (pipe input, decompressed data) the
    /// ordered queue may hold before it is half flushed early.
    pub max_queued_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_chunk_output: 256 << 20, max_queued_bytes: 2 << 30 }
    }
}

/// perf's MAX_NR_CPUS: the CPU bound when the file does not give one.
const MAX_NR_CPUS: u32 = 4096;

/// How a session delivers.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Deliver deferred user callchains as separate events instead of
    /// merging them into their samples (`--no-merge-callchains`).
    pub no_merge_callchains: bool,
    /// Deliver a PERF_SAMPLE_READ sample once, as recorded, instead of one
    /// sample per counter that moved (perf's way, which `pstitch script`
    /// follows): for a tool that writes each record back (inject).
    pub whole_read_samples: bool,
    /// Deliver records in the order they are read, not sorted by time
    /// (perf with `ordered_events` off: `--show-round-events`,
    /// `--dump-unsorted-raw-trace`); FINISHED_ROUND records go to
    /// [`Tool::round`].
    pub unordered: bool,
    pub filter: SampleFilter,
    pub limits: Limits,
    /// Unwind the user stacks of `--call-graph dwarf` samples (delivered
    /// as [`Callchain::Split`]); `None`: deliver their recorded
    /// callchain as it is.
    pub unwind: Option<UnwindOptions>,
    /// Show the user callchains of samples with an LBR call stack from
    /// that stack, as perf does, with this `--max-stack` (delivered as
    /// [`Callchain::Split`]); `None`: deliver their recorded callchain.
    pub lbr_max_stack: Option<usize>,
}

/// Reads one input to the end.
pub struct Session<'a> {
    pub evlist: Evlist,
    pub features: Features,
    pub pipe: bool,
    pub stats: Stats,
    /// Warnings, each said once (printed by the caller).
    pub warnings: Warnings,
    /// What perf says while reading, in its words (printed as they are),
    /// at most [`MAX_PERF_SAYS`] of them; `perf_says_dropped` counts the rest.
    pub perf_says: Vec<String>,
    pub perf_says_dropped: u64,
    /// Threads, comms and maps, as the records so far made them.
    pub machine: Machine,
    limits: Limits,
    merge_callchains: bool,
    unordered: bool,
    filter: SampleFilter,
    /// Samples waiting for their deferred user callchain.
    stitcher: Stitcher,
    /// A merged callchain being delivered (its buffer reused).
    merged: Vec<u64>,
    /// Unwinds `--call-graph dwarf` samples, if asked to.
    unwinder: Option<UserUnwinder>,
    /// `--max-stack` for user callchains from LBR call stacks, if shown so.
    lbr_max_stack: Option<usize>,
    /// Counter values of PERF_SAMPLE_READ samples as last delivered.
    read_values: ReadValuesSeen,
    endian: Endian,
    source: RecordSource<'a>,
    queue: OrderedEvents<'a>,
    /// The input offset of the first queued record read in place (what
    /// the source was last told to keep, see `keep_queued`).
    kept_from: u64,
    /// The directory input's file of the record being processed or
    /// delivered (`RawRecord::part`).
    part: u32,
    decompressor: Option<Decompressor>,
    progress: Option<Box<dyn FnMut(Progress) + 'a>>,
    /// perf's `nr_cpus_avail` (HEADER_NRCPUS), for the CPU check.
    nr_cpus: u32,
    /// The file offset up to which [`Tool::lookahead`] was shown records
    /// beyond the queue.
    upcoming_seen: std::cell::Cell<u64>,
    /// HEADER_BPF_PROG_INFO's programs, for BPF_EVENT records.
    bpf_progs: std::collections::BTreeMap<u32, perf_data::bpf::BpfProg>,
}

/// `PERF_BPF_EVENT_PROG_LOAD`.
const BPF_EVENT_PROG_LOAD: u16 = 1;

/// The programs of a HEADER_BPF_PROG_INFO payload (none if perf would
/// refuse it).
fn bpf_progs(payload: &[u8], endian: Endian, evlist: &Evlist) -> std::collections::BTreeMap<u32, perf_data::bpf::BpfProg> {
    let mut env = perf_data::env::Env::default();
    match env.process(feat::BPF_PROG_INFO, payload, endian, evlist) {
        Ok(()) => env.bpf_progs,
        Err(_) => Default::default(),
    }
}

/// Most of perf's own messages kept from one input.
pub const MAX_PERF_SAYS: usize = 100;

/// How far reading has got (for a progress display).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub records: u64,
    pub position: u64,
    /// Input size, when known.
    pub total: Option<u64>,
    /// Reading is over.
    pub done: bool,
}

/// Records between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

impl<'a> Session<'a> {
    /// A session over the records of an input whose header gave `evlist`
    /// and `features` (empty in pipe mode: they come as records).
    pub fn new(source: RecordSource<'a>, evlist: Evlist, features: Features, pipe: bool, options: SessionOptions) -> Session<'a> {
        let endian = source.endian();
        let nr_cpus = nr_cpus_avail(&features);
        let unwinder = options.unwind.as_ref().map(|u| UserUnwinder::new(u, features.build_ids()));
        let bpf_progs = features.get(feat::BPF_PROG_INFO).map(|p| bpf_progs(p, endian, &evlist)).unwrap_or_default();
        let mut session = Session {
            evlist,
            features,
            pipe,
            stats: Stats::default(),
            warnings: Warnings::default(),
            perf_says: Vec::new(),
            perf_says_dropped: 0,
            machine: Machine::new(),
            limits: options.limits,
            merge_callchains: !options.no_merge_callchains,
            unordered: options.unordered,
            filter: options.filter,
            stitcher: Stitcher::default(),
            merged: Vec::new(),
            unwinder,
            lbr_max_stack: options.lbr_max_stack,
            read_values: ReadValuesSeen { whole: options.whole_read_samples, ..Default::default() },
            endian,
            source,
            queue: OrderedEvents::default(),
            kept_from: u64::MAX,
            part: 0,
            decompressor: None,
            progress: None,
            nr_cpus,
            upcoming_seen: std::cell::Cell::new(0),
            bpf_progs,
        };
        let bits: Vec<u32> = session.features.bits().collect();
        for bit in bits {
            session.refuse_cross_endian(bit);
        }
        session
    }

    /// perf 7.2 does not decode BPF program data of the other byte order:
    /// it says so for each of the two features and leaves them out (see
    /// `Env::process`).
    fn refuse_cross_endian(&mut self, bit: u32) {
        let what = match bit {
            feat::BPF_PROG_INFO => "bpf_prog_info",
            feat::BPF_BTF => "btf",
            _ => return,
        };
        if self.endian != Endian::NATIVE {
            self.perf_say(|| format!("interpreting {what} from systems with endianness is not yet supported"));
        }
    }

    /// Calls `f` every few thousand records and once at the end.
    pub fn set_progress(&mut self, f: impl FnMut(Progress) + 'a) {
        self.progress = Some(Box::new(f));
    }

    fn report(&mut self, records: u64, done: bool) {
        let (position, total) = (self.source.position(), self.source.total());
        if let Some(f) = self.progress.as_mut() {
            f(Progress { records, position, total, done });
        }
    }

    /// Processes every record and flushes the queue. On a damaged record the
    /// events read before it are still delivered (the queue is flushed, and
    /// the tool's `finish` runs: held deferred samples go out as at the end
    /// of input), then the error is returned. A broken output pipe stops
    /// everything at once.
    pub fn run(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let result = self.read_all(tool);
        if result.as_ref().is_err_and(|e| e.is_broken_pipe()) {
            return result;
        }
        let flushed = self.flush_all(tool);
        self.report(0, true);
        self.stats.nr_unordered = self.queue.nr_unordered;
        self.stats.nr_unknown_id += std::mem::take(&mut self.read_values.unknown_id);
        if flushed.as_ref().is_err_and(|e| e.is_broken_pipe()) {
            return flushed;
        }
        let finished = self.finish(tool);
        result.and(flushed).and(finished)
    }

    /// What became of deferred callchains so far.
    pub fn stitch_stats(&self) -> StitchStats {
        self.stitcher.stats
    }

    /// What became of the `--call-graph dwarf` samples so far (nothing
    /// unless [`SessionOptions::unwind`] asked for unwinding).
    pub fn unwind_stats(&self) -> UnwindStats {
        self.unwinder.as_ref().map(|u| u.stats.clone()).unwrap_or_default()
    }

    /// End of input: samples still held go out unmerged, in arrival order,
    /// with their cookie frame; then the tool finishes.
    fn finish(&mut self, tool: &mut dyn Tool) -> Result<()> {
        for h in self.stitcher.take_all() {
            let cookie = h.cookie;
            self.deliver_held(tool, &h, None, Some(cookie))?;
        }
        let mut cx = self.parts().cx;
        tool.finish(&mut cx)
    }

    /// The context a tool sees, and the session's own delivery state.
    fn parts(&mut self) -> Delivery<'_> {
        Delivery { cx: context!(self), merged: &mut self.merged, read_values: &mut self.read_values, unwinder: self.unwinder.as_mut(), lbr_max_stack: self.lbr_max_stack }
    }

    fn read_all(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut records = 0u64;
        loop {
            // A pipe whose writer pauses: what was delivered is final
            // (perf prints it too), the queue's order is not.
            if self.source.would_wait() {
                let mut cx = context!(self);
                tool.idle(&mut cx)?;
            }
            let Some(raw) = self.source.next_record()? else { break };
            records += 1;
            if records.is_multiple_of(PROGRESS_EVERY) {
                self.report(records, false);
            }
            let RawRecord { offset, part, header, bytes } = raw;
            self.part = part;
            let bytes = match bytes {
                std::borrow::Cow::Borrowed(b) => RecordBytes::Borrowed(b),
                std::borrow::Cow::Owned(v) => RecordBytes::Owned(v.into_boxed_slice()),
            };
            self.process_record(tool, offset, header, bytes, None)?;
        }
        if let Some(d) = &self.decompressor
            && d.leftover() > 0
        {
            let n = d.leftover();
            self.warnings.warn("decomp-tail", || format!("{n} bytes of an incomplete record at the end of the compressed data were ignored"));
        }
        Ok(())
    }

    /// Keeps a message perf prints while reading, in its words; past
    /// [`MAX_PERF_SAYS`] of them only counts it (hostile input must not
    /// make stderr or memory grow without bound).
    fn perf_say(&mut self, msg: impl FnOnce() -> String) {
        if self.perf_says.len() < MAX_PERF_SAYS {
            self.perf_says.push(msg());
        } else {
            self.perf_says_dropped += 1;
        }
    }

    /// Skips a record with a warning (said once per kind, counted).
    fn skip(&mut self, key: String, msg: impl FnOnce() -> String) {
        self.stats.nr_skipped += 1;
        self.warnings.warn(key, msg);
    }

    /// `inner`: the record's position in the decompressed data of the chunk
    /// at `offset`, for records that came from one.
    fn process_record(
        &mut self,
        tool: &mut dyn Tool,
        offset: u64,
        header: RecordHeader,
        bytes: RecordBytes<'a>,
        inner: Option<u64>,
    ) -> Result<()> {
        let t = header.type_;
        self.stats.by_type.add(t);
        let at = Where(offset, inner);
        // The checks perf 7.2 makes before queueing (the others are made at
        // delivery, as in perf, so that skipped records still count for the
        // FINISHED_ROUND horizon exactly as they do in perf).
        if t >= kind::HEADER_MAX {
            self.stats.nr_unknown_type += 1;
            // perf 7.2 warns for every such record (a newer perf's type).
            self.perf_say(|| format!("Warning:\nUnsupported header type {t}, please consider updating perf."));
            return self.consumed(tool, offset, &bytes, Why::Skipped);
        }
        let min = record::min_size(t);
        if (header.size as usize) < min {
            let size = header.size;
            self.skip(format!("too-small-{t}"), || {
                format!("{at}: {} record (type {t}) of {size} bytes is too small (at least {min}); skipping it", kind::name(t))
            });
            return self.consumed(tool, offset, &bytes, Why::Skipped);
        }
        if t >= kind::USER_TYPE_START {
            if !record::string_is_terminated(t, &bytes) {
                self.skip(format!("no-nul-{t}"), || {
                    format!("{at}: {} record (type {t}): string not null-terminated; skipping it", kind::name(t))
                });
                return self.consumed(tool, offset, &bytes, Why::Skipped);
            }
            return self.process_user_record(tool, offset, header, &bytes, inner);
        }
        if self.evlist.is_empty() {
            return Err(at.error(t, "record before any event attribute"));
        }
        let rec = Record { header, bytes: &bytes, endian: self.endian };
        let Some(evsel) = self.evlist.evsel_for(&rec) else {
            self.stats.nr_unknown_id += 1;
            self.warnings.warn("unknown-id", || format!("{at}: skipping records whose event id is not in the header"));
            return self.consumed(tool, offset, &bytes, Why::Skipped);
        };
        let attr = &self.evlist.evsels[evsel].attr;
        let time = if !self.evlist.sample_id_all() {
            None
        } else if t == kind::SAMPLE {
            Sample::parse_time(rec.body(), attr, self.endian)
        } else if attr.sample_id_all() {
            Some(SampleId::parse_trailer(rec.body(), attr, self.endian).time)
        } else {
            None
        };
        match time {
            // perf delivers records without a usable time at once.
            Some(t) if t != 0 && t != u64::MAX && !self.unordered => {
                if self.kept_from == u64::MAX && matches!(bytes, RecordBytes::Borrowed(_)) {
                    self.kept_from = offset;
                    self.source.keep_from(offset);
                }
                self.queue.push(Queued { time: t, offset, inner, evsel: evsel as u32, part: self.part, bytes });
                if self.queue.owned_bytes() > self.limits.max_queued_bytes {
                    let max = self.limits.max_queued_bytes >> 20;
                    self.warnings.warn("queue-full", || {
                        format!(
                            "{at}: more than {max} MiB of records waiting to be sorted by time; \
                             delivering the older half early (the order of the output may differ from perf's)"
                        )
                    });
                    self.flush_half(tool)?;
                }
                Ok(())
            }
            _ => self.deliver(tool, offset, inner, evsel, &bytes),
        }
    }

    fn deliver(&mut self, tool: &mut dyn Tool, offset: u64, inner: Option<u64>, evsel: usize, bytes: &[u8]) -> Result<()> {
        let delivered = self.deliver_record(tool, offset, inner, evsel, bytes);
        // What the unwinder of the samples just delivered has to say (in
        // perf's order: when the first sample was unwound).
        if let Some(said) = self.unwinder.as_mut().and_then(UserUnwinder::take_said) {
            self.perf_say(|| said.to_string());
        }
        delivered
    }

    fn deliver_record(&mut self, tool: &mut dyn Tool, offset: u64, inner: Option<u64>, evsel: usize, bytes: &[u8]) -> Result<()> {
        let at = Where(offset, inner);
        let header = RecordHeader::parse(bytes, self.endian).ok_or_else(|| at.error(0, "record header truncated"))?;
        let t = header.type_;
        if t == 0 || (t > kind::CALLCHAIN_DEFERRED && t < kind::USER_TYPE_START) {
            // perf 7.2 stops at unknown kernel record types (and loses what
            // its queue held); pstitch skips them.
            self.stats.nr_unknown_type += 1;
            self.warnings.warn(format!("unknown-type-{t}"), || format!("{at}: skipping records of unknown type {t}"));
            return self.consumed(tool, offset, bytes, Why::Skipped);
        }
        if !record::string_is_terminated(t, bytes) {
            self.skip(format!("no-nul-{t}"), || {
                format!("{at}: {} record (type {t}): string not null-terminated; skipping it", kind::name(t))
            });
            return self.consumed(tool, offset, bytes, Why::Skipped);
        }
        let record = Record { header, bytes: bytes.get(..header.size as usize).unwrap_or(bytes), endian: self.endian };
        let Some(attr) = self.evlist.evsels.get(evsel).map(|e| &e.attr) else {
            return Err(at.error(t, "record of an unknown event"));
        };
        let cpu_checked = attr.samples(perf_data::attr::sample_type::CPU) && (t == kind::SAMPLE || attr.sample_id_all());
        let trailer = attr.id_hdr_size();
        // The sample stays where it was decoded (it is referred to, not
        // moved: moving 170 bytes just written stalls on the stores).
        let mut parsed = (t == kind::SAMPLE).then(|| Sample::parse(record.body(), attr, self.endian));
        let (mut sample, mut id) = match parsed.as_mut() {
            Some(Ok(s)) => {
                let id = SampleId { pid: s.pid, tid: s.tid, time: s.time, id: s.id, stream_id: s.stream_id, cpu: s.cpu };
                (Some(s), id)
            }
            Some(Err(e)) => {
                let e = *e;
                self.skip(format!("bad-sample-{}", e.field()), || format!("{at}: SAMPLE record (type 9): {e}; skipping it"));
                return self.consumed(tool, offset, bytes, Why::Skipped);
            }
            None => (None, SampleId::parse_trailer(record.body(), attr, self.endian)),
        };
        if t == kind::CALLCHAIN_DEFERRED && DeferredCallchainRecord::parse(&record, trailer).is_none() {
            self.skip("bad-deferred".into(), || {
                format!("{at}: CALLCHAIN_DEFERRED record (type 22): its callchain runs past the end of the record; skipping it")
            });
            return self.consumed(tool, offset, bytes, Why::Skipped);
        }
        // perf 7.2 clamps impossible CPU numbers to 0 (with a warning)
        // before anything uses them.
        if cpu_checked && id.cpu != u32::MAX && id.cpu >= self.nr_cpus {
            let (cpu, nr) = (id.cpu, self.nr_cpus);
            self.stats.nr_cpu_clamped += 1;
            self.warnings.warn("cpu-clamp", || format!("{at}: CPU {cpu} is not below the {nr} CPUs of the recording; using CPU 0 as perf does"));
            id.cpu = 0;
            if let Some(s) = sample.as_mut() {
                s.cpu = 0;
            }
        }
        {
            let part = self.part;
            let mut cx = self.parts().cx;
            tool.dump(&mut cx, &RawEvent { offset, part, record, evsel: Some(evsel), id, sample: sample.as_deref() })?;
        }
        let delivered = match (t, sample) {
            (kind::SAMPLE, Some(s)) => self.deliver_sample(tool, offset, evsel, record, s),
            (kind::CALLCHAIN_DEFERRED, _) => self.deliver_deferred(tool, offset, evsel, record, id, trailer),
            _ => self.deliver_side_band(tool, offset, evsel, record, id, trailer),
        };
        delivered.map_err(|e| match (e, inner) {
            // A complaint about the record names its chunk only.
            (Error::Input(perf_data::Error::Format(d)), Some(i)) if d.offset == offset && d.inner.is_none() => {
                Error::Input(perf_data::Error::Format(d).decompressed_at(i))
            }
            (e, _) => e,
        })
    }

    /// A sample: held if its user callchain comes later and callchains are
    /// merged, else delivered as it is.
    fn deliver_sample(&mut self, tool: &mut dyn Tool, offset: u64, evsel: usize, record: Record<'_>, s: &Sample<'_>) -> Result<()> {
        let cookie = deferred_cookie(&self.evlist.evsels[evsel].attr, s);
        if let Some(c) = cookie
            && self.merge_callchains
        {
            // perf prints the comm the thread has when the sample finally
            // goes out; pstitch keeps the one it had when it was taken.
            let comm = match self.machine.thread(s.tid) {
                Some(t) => t.comm(),
                None => crate::machine::tid_comm(s.tid),
            };
            let seq = self.stitcher.hold(s.tid, offset, evsel as u32, record.bytes, comm, c);
            let mut cx = self.parts().cx;
            return tool.sample_held(&mut cx, &HeldEvent { seq, offset, evsel, record, sample: s });
        }
        let callchain = s.callchain.map(Callchain::Recorded);
        let out = Outgoing { offset, evsel, record, sample: s, callchain, held_comm: None, cookie, held: None };
        deliver_filtered(tool, self.parts(), out)
    }

    /// A CALLCHAIN_DEFERRED record: the held samples of its thread go out,
    /// merged with it if they carry its cookie (perf 7.2's rule); or, not
    /// merging, the record itself.
    fn deliver_deferred(&mut self, tool: &mut dyn Tool, offset: u64, evsel: usize, record: Record<'_>, id: SampleId, trailer: usize) -> Result<()> {
        let bad = || Damaged::in_record(offset, record.header.type_, "CALLCHAIN_DEFERRED record truncated");
        let d = DeferredCallchainRecord::parse(&record, trailer).ok_or_else(bad)?;
        if !self.merge_callchains {
            let mut cx = self.parts().cx;
            if cx.filter.skip_time(id.time) || cx.filter.skip_cpu(id.cpu) {
                return Ok(());
            }
            let (comm, pid) = {
                let t = cx.machine.findnew_thread(id.pid, id.tid);
                (t.comm(), t.pid)
            };
            if cx.filter.skip_thread(&comm, pid, id.tid) {
                return Ok(());
            }
            return tool.deferred_callchain(&mut cx, &DeferredEvent { offset, evsel, record, id, deferred: d, comm: &comm });
        }
        for h in self.stitcher.take_for_record(id.tid, d.cookie) {
            if h.cookie == d.cookie {
                self.deliver_held(tool, &h, Some(d), Some(h.cookie))?;
            } else {
                // Another cookie: unmerged, and its cookie entry is an
                // unknown address rather than `(cookie)`.
                self.deliver_held(tool, &h, None, None)?;
            }
        }
        self.consumed(tool, offset, record.bytes, Why::DeferredMerged)
    }

    /// A held sample, delivered now: merged with `d`'s user ips, or as it
    /// is, with the comm it had when it was taken.
    fn deliver_held(&mut self, tool: &mut dyn Tool, h: &HeldSample, d: Option<DeferredCallchainRecord<'_>>, cookie: Option<u64>) -> Result<()> {
        let evsel = h.evsel as usize;
        let e = self.endian;
        let Delivery { cx, merged, read_values, unwinder, lbr_max_stack } = self.parts();
        let attr = &cx.evlist.evsels[evsel].attr;
        let record = Record { header: RecordHeader::parse(&h.bytes, e).ok_or_else(|| Damaged::in_record(h.offset, kind::SAMPLE, "held record truncated"))?, bytes: &h.bytes, endian: e };
        let s = Sample::parse(record.body(), attr, e).map_err(|err| Damaged::in_record(h.offset, kind::SAMPLE, err.to_string()))?;
        let callchain = match (d, s.callchain) {
            (Some(d), Some(chain)) => {
                // The original entries up to and including the marker (the
                // cookie dropped), then the user ips.
                merged.clear();
                merged.extend(chain.iter().take(chain.len() - 1));
                merged.extend(d.ips.iter());
                Some(Callchain::Merged(merged))
            }
            (_, chain) => chain.map(Callchain::Recorded),
        };
        let out = Outgoing { offset: h.offset, evsel, record, sample: &s, callchain, held_comm: Some(&h.comm), cookie, held: Some(h.seq) };
        deliver_filtered(tool, Delivery { cx, merged: &mut Vec::new(), read_values, unwinder, lbr_max_stack }, out)
    }

    /// perf's last word when a tool refuses a record of a pipe
    /// (`__perf_session__process_pipe_events`): the record's position in
    /// the stream after the pipe header, its size and type, on the line
    /// after the tool's own message.
    fn piped_event_failed(&self, e: Error, offset: u64, header: RecordHeader) -> Error {
        match e {
            Error::Options(m) if self.pipe => {
                let head = perf_data::bytes::alt_hex(offset.saturating_sub(perf_data::header::PIPE_HEADER_SIZE as u64));
                let name = kind::name(header.type_);
                Error::Options(format!("{m}\n{head} [{:#x}]: piped event processing failed for event of type: {name} ({})", header.size, header.type_))
            }
            e => e,
        }
    }

    /// Any other kernel record: the machine takes it in, the tool sees it.
    fn deliver_side_band(&mut self, tool: &mut dyn Tool, offset: u64, evsel: usize, record: Record<'_>, id: SampleId, trailer: usize) -> Result<()> {
        let t = record.header.type_;
        let bad = |what: &str| Damaged::in_record(offset, t, format!("{what} record truncated"));
        let misc = record.header.misc;
        let side_band = match t {
            kind::MMAP | kind::MMAP2 => {
                let m = MmapRecord::parse(&record, trailer).ok_or_else(|| bad("MMAP"))?;
                self.machine.process_mmap(&m, t, misc);
                SideBand::Mmap(m)
            }
            kind::COMM => {
                let c = CommRecord::parse(&record, trailer).ok_or_else(|| bad("COMM"))?;
                self.machine.process_comm(&c);
                SideBand::Comm(c)
            }
            kind::FORK => {
                let f = TaskRecord::parse(&record).ok_or_else(|| bad("FORK"))?;
                self.machine.process_fork(&f, misc);
                SideBand::Fork(f)
            }
            // perf's tools see the thread before the exit forgets it.
            kind::EXIT => SideBand::Exit(TaskRecord::parse(&record).ok_or_else(|| bad("EXIT"))?),
            kind::LOST => match LostRecord::parse(&record) {
                Some(l) => {
                    self.stats.nr_lost_records += 1;
                    self.stats.lost_events = self.stats.lost_events.saturating_add(l.lost);
                    SideBand::Lost(l)
                }
                None => SideBand::Other,
            },
            kind::CGROUP => {
                // { u64 id; char path[] } (NUL-terminated; checked before
                // delivery), then the sample_id trailer.
                let body = record.body();
                let id = record.endian.read_u64(body, 0).ok_or_else(|| bad("CGROUP"))?;
                let path = body.get(8..body.len().saturating_sub(trailer)).unwrap_or(&[]);
                self.machine.process_cgroup(id, perf_data::bytes::until_nul(path));
                SideBand::Other
            }
            kind::KSYMBOL => {
                let k = KsymbolRecord::parse(&record, trailer).ok_or_else(|| bad("KSYMBOL"))?;
                self.machine.process_ksymbol(&k);
                SideBand::Other
            }
            kind::BPF_EVENT => {
                // { u16 type; u16 flags; u32 id; u8 tag[8] }: a program
                // loaded (type 1) that the header describes.
                let body = record.body();
                let (ty, id) = (record.endian.read_u16(body, 0), record.endian.read_u32(body, 4));
                if ty == Some(BPF_EVENT_PROG_LOAD)
                    && let Some(prog) = id.and_then(|id| self.bpf_progs.get(&id))
                {
                    self.machine.process_bpf_prog_load(prog);
                }
                SideBand::Other
            }
            kind::LOST_SAMPLES => {
                if let Some(l) = LostRecord::parse(&record) {
                    self.stats.lost_samples = self.stats.lost_samples.saturating_add(l.lost);
                }
                SideBand::Other
            }
            _ => SideBand::Other,
        };
        let mut cx = self.parts().cx;
        tool.record(&mut cx, &Event { offset, evsel, record, id, side_band })?;
        if let SideBand::Exit(e) = side_band {
            self.machine.process_exit(&e);
        }
        Ok(())
    }

    fn deliver_queued(&mut self, tool: &mut dyn Tool, q: &Queued<'_>) -> Result<()> {
        self.part = q.part;
        self.deliver(tool, q.offset, q.inner, q.evsel as usize, &q.bytes)
    }

    /// Shows the queue, and the records after it in a mapped file, to the
    /// tool before a flush (see [`Tool::lookahead`]). The first rounds of a
    /// recording are small; the file shows what comes before the tool
    /// spends time on their records. A record of the file is shown once
    /// (the walk goes on where the last one stopped): looking ahead costs
    /// one pass over the file at most, however many flushes there are.
    fn lookahead(&mut self, tool: &mut dyn Tool, queue: &OrderedEvents<'_>) {
        let source = &self.source;
        let mut cx = context!(self);
        let (evlist, endian) = (cx.evlist, cx.endian);
        let seen = &self.upcoming_seen;
        let reach = source.position().saturating_add(UPCOMING_BYTES);
        let upcoming = source.upcoming(seen.get()).take(UPCOMING_MAX).take_while(|&(after, _)| after <= reach).filter_map(|(after, bytes)| {
            seen.set(after);
            let header = RecordHeader::parse(bytes, endian)?;
            if header.type_ >= kind::USER_TYPE_START {
                return None;
            }
            let evsel = evlist.evsel_for(&Record { header, bytes, endian })?;
            Some((evsel, bytes))
        });
        tool.lookahead(&mut cx, &mut queue.items().map(|q| (q.evsel as usize, &*q.bytes)).chain(upcoming));
    }

    fn flush_round(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut queue = std::mem::take(&mut self.queue);
        self.lookahead(tool, &queue);
        let r = queue.flush_round(|q| self.deliver_queued(tool, &q));
        self.queue = queue;
        self.keep_queued();
        r
    }

    /// Tells the source where the first record still queued lies: the
    /// input's pages from there on are kept in memory until it goes out.
    fn keep_queued(&mut self) {
        let first = self.queue.first_borrowed().unwrap_or(u64::MAX);
        if first != self.kept_from {
            self.kept_from = first;
            self.source.keep_from(first);
        }
    }

    fn flush_half(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut queue = std::mem::take(&mut self.queue);
        self.lookahead(tool, &queue);
        let r = queue.flush_half(|q| self.deliver_queued(tool, &q));
        self.queue = queue;
        self.keep_queued();
        r
    }

    fn flush_all(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut queue = std::mem::take(&mut self.queue);
        self.lookahead(tool, &queue);
        let r = queue.flush_all(|q| self.deliver_queued(tool, &q));
        self.queue = queue;
        self.keep_queued();
        r
    }

    fn process_user_record(
        &mut self,
        tool: &mut dyn Tool,
        offset: u64,
        header: RecordHeader,
        bytes: &[u8],
        inner: Option<u64>,
    ) -> Result<()> {
        let e = self.endian;
        let at = Where(offset, inner);
        let body = bytes.get(HEADER_SIZE..(header.size as usize).min(bytes.len())).unwrap_or(&[]);
        let mut why = Why::UserRecord;
        if !matches!(header.type_, kind::COMPRESSED | kind::COMPRESSED2) {
            let record = Record { header, bytes: bytes.get(..header.size as usize).unwrap_or(bytes), endian: e };
            let part = self.part;
            let mut cx = self.parts().cx;
            tool.dump(&mut cx, &RawEvent { offset, part, record, evsel: None, id: SampleId { time: 0, cpu: 0, pid: 0, tid: 0, id: None, stream_id: 0 }, sample: None })?;
        }
        match header.type_ {
            kind::FINISHED_ROUND if self.unordered => {
                let mut cx = self.parts().cx;
                tool.round(&mut cx)?;
            }
            kind::FINISHED_ROUND => self.flush_round(tool)?,
            kind::HEADER_ATTR => {
                let Some(attr) = Attr::parse(body, e) else {
                    self.skip("bad-attr".into(), || format!("{at}: ATTR record (type 64): malformed attr; skipping it"));
                    return self.consumed(tool, offset, bytes, Why::Skipped);
                };
                let ids = ids_after_attr(body, attr.disk_size(), e);
                let idx = self.evlist.push(Evsel { attr, name: None, ids });
                match tool.attr_added(&self.evlist, idx) {
                    Err(e) => return Err(self.piped_event_failed(e, offset, header)),
                    Ok(true) => {
                        let name = self.evlist.evsels[idx].name();
                        self.evlist.name_if_unset(idx, name);
                    }
                    Ok(false) => {}
                }
            }
            kind::EVENT_UPDATE => self.event_update(body),
            kind::HEADER_FEATURE => {
                let Some(feat) = e.read_u64(body, 0) else { return self.consumed(tool, offset, bytes, Why::Skipped) };
                let payload = body.get(8..).unwrap_or(&[]);
                if let Ok(bit) = u32::try_from(feat) {
                    self.refuse_cross_endian(bit);
                    self.features.insert(bit, payload.to_vec());
                    match bit {
                        feat::EVENT_DESC => {
                            for (i, desc) in self.features.event_desc().into_iter().enumerate() {
                                self.evlist.name_if_unset(i, desc.name);
                            }
                        }
                        feat::NRCPUS => self.nr_cpus = nr_cpus_avail(&self.features),
                        feat::BPF_PROG_INFO => self.bpf_progs = bpf_progs(payload, e, &self.evlist),
                        // perf 7.2 checks it as it arrives (pipe files of
                        // perf 6.1 end with an empty one), says why it
                        // rejects it and goes on.
                        feat::CPU_DOMAIN_INFO => {
                            let mut env = perf_data::env::Env::default();
                            if let Some((avail, online)) = self.features.nr_cpus() {
                                (env.nr_cpus_avail, env.nr_cpus_online) = (avail, online);
                            }
                            if let Err(why) = env.process(bit, payload, e, &self.evlist) {
                                self.perf_say(|| why);
                            }
                        }
                        _ => {}
                    }
                }
                let mut cx = self.parts().cx;
                tool.feature(&mut cx, feat, payload)?;
            }
            kind::HEADER_TRACING_DATA => {
                let payload = bytes.get(header.size as usize..).unwrap_or(&[]);
                tool.tracing_data(payload);
            }
            kind::ID_INDEX => self.id_index(body),
            kind::COMPRESSED | kind::COMPRESSED2 => {
                if inner.is_some() {
                    self.skip("nested-compressed".into(), || {
                        format!("{at}: compressed record inside compressed data; skipping it")
                    });
                    why = Why::Skipped;
                } else {
                    self.decompress(tool, offset, header, body)?
                }
            }
            // Known, and nothing pstitch needs from them.
            _ => {}
        }
        self.consumed(tool, offset, bytes, why)
    }

    /// Hands a record the session used up or skipped to the tool.
    fn consumed(&mut self, tool: &mut dyn Tool, offset: u64, bytes: &[u8], why: Why) -> Result<()> {
        let mut cx = self.parts().cx;
        tool.consumed(&mut cx, &Consumed { offset, bytes, why })
    }

    /// EVENT_UPDATE: `{ u64 type; u64 id; payload }`; type 2 names the event.
    fn event_update(&mut self, body: &[u8]) {
        const NAME: u64 = 2;
        let e = self.endian;
        let (Some(t), Some(id)) = (e.read_u64(body, 0), e.read_u64(body, 8)) else { return };
        if t != NAME {
            return;
        }
        let name = perf_data::bytes::until_nul(body.get(16..).unwrap_or(&[]));
        if let Some(idx) = self.evlist.by_id(id) {
            self.evlist.set_name(idx, String::from_utf8_lossy(name).into_owned());
        }
    }

    /// ID_INDEX: `{ u64 nr; { u64 id, idx, cpu, tid }[nr] }` — ids of events
    /// by position, for ids the attrs did not list.
    fn id_index(&mut self, body: &[u8]) {
        let e = self.endian;
        let Some(nr) = e.read_u64(body, 0) else { return };
        let entries = body.len().saturating_sub(8) / 32;
        for i in 0..usize::try_from(nr).unwrap_or(usize::MAX).min(entries) {
            let at = 8 + i * 32;
            let (Some(id), Some(idx)) = (e.read_u64(body, at), e.read_u64(body, at + 8)) else { break };
            if self.evlist.by_id(id).is_none() && idx < self.evlist.len() as u64 {
                self.evlist.add_ids(idx as usize, &[id]);
            }
        }
    }

    /// The most one chunk may decompress to: what perf allows
    /// (HEADER_COMPRESSED's mmap_len), within the session's limit. perf
    /// refuses compressed data without HEADER_COMPRESSED; pstitch reads it
    /// with a smaller bound (32 MiB).
    fn chunk_limit(&self) -> usize {
        compressed::chunk_limit(self.features.compressed().map(|c| c.mmap_len), self.limits.max_chunk_output)
    }

    fn decompress(&mut self, tool: &mut dyn Tool, offset: u64, header: RecordHeader, body: &[u8]) -> Result<()> {
        let payload = compressed::payload(header.type_, body, self.endian)
            .ok_or_else(|| Damaged::in_record(offset, header.type_, "compressed payload size exceeds the record"))?;
        if self.decompressor.is_none() {
            let d = Decompressor::new(self.chunk_limit()).map_err(|e| Damaged::in_record(offset, header.type_, e.0))?;
            self.decompressor = Some(d);
        }
        let Some(mut d) = self.decompressor.take() else { return Ok(()) };
        // Records come in blocks of a few MiB as they are decoded; those
        // that wait in the queue are copied out of the block, so that a
        // chunk decoding to hundreds of megabytes with one sample kept is
        // never held whole (the queue accounts for the copies).
        let endian = self.endian;
        let decoded = d.decompress_blocks(payload, endian, |block, at| -> Result<()> {
            let mut pos = 0usize;
            while pos < block.len() {
                let inner = at + pos as u64;
                let h = RecordHeader::parse(&block[pos..], endian)
                    .ok_or_else(|| Damaged::in_record(offset, header.type_, "decompressed record header truncated").decompressed_at(inner))?;
                perf_data::check_size(offset, &h).map_err(|e| e.decompressed_at(inner))?;
                let size = h.size as usize;
                if pos + size > block.len() {
                    return Err(Damaged::in_record(offset, h.type_, format!("record of {size} bytes runs past the end of the decompressed data"))
                        .decompressed_at(inner)
                        .into());
                }
                let bytes = RecordBytes::Owned(block[pos..pos + size].into());
                self.process_record(tool, offset, h, bytes, Some(inner))?;
                pos += size;
            }
            Ok(())
        });
        self.decompressor = Some(d);
        decoded.map_err(|e| Damaged::in_record(offset, header.type_, format!("zstd: {}", e.0)))?
    }
}

/// What delivering an event works with: the tool's context and the
/// session's own buffers.
struct Delivery<'s> {
    cx: Context<'s>,
    /// A merged deferred callchain being delivered.
    merged: &'s mut Vec<u64>,
    /// PERF_SAMPLE_READ counters as last delivered.
    read_values: &'s mut ReadValuesSeen,
    unwinder: Option<&'s mut UserUnwinder>,
    lbr_max_stack: Option<usize>,
}

/// perf's period storage of PERF_SAMPLE_READ counters: the value each
/// counter (by id; and by thread for inherited counters) had when last
/// delivered.
#[derive(Debug, Default)]
struct ReadValuesSeen {
    last: FastMap<(u64, i32), u64>,
    /// Counters whose id is not in the header (their samples are not
    /// delivered, as in perf; added to [`Stats::nr_unknown_id`]).
    unknown_id: u64,
    /// Deliver such samples whole ([`SessionOptions::whole_read_samples`]).
    whole: bool,
}

/// A sample on its way to the tool: what its [`SampleEvent`] will hold but
/// the comm, which is the thread's at delivery unless the sample was held
/// (`held_comm`).
#[derive(Clone, Copy)]
struct Outgoing<'r> {
    offset: u64,
    evsel: usize,
    record: Record<'r>,
    sample: &'r Sample<'r>,
    callchain: Option<Callchain<'r>>,
    held_comm: Option<&'r Comm>,
    cookie: Option<u64>,
    held: Option<u64>,
}

/// Delivers a sample: a PERF_SAMPLE_READ sample is split into one sample
/// per counter as perf's `evlist__deliver_sample` splits it: the counter's
/// event, its id, and as period the counter's change since the last sample
/// (none for a counter that did not change).
fn deliver_filtered(tool: &mut dyn Tool, Delivery { mut cx, read_values: seen, mut unwinder, lbr_max_stack, .. }: Delivery<'_>, out: Outgoing<'_>) -> Result<()> {
    let (s, evsel) = (out.sample, out.evsel);
    let attr = &cx.evlist.evsels[evsel].attr;
    let Some(read) = s.read.filter(|_| attr.samples(sample_type::READ) && !seen.whole) else {
        return deliver_one(tool, &mut cx, unwinder, lbr_max_stack, out);
    };
    // perf_evsel__attr_has_per_thread_sample_period.
    let per_thread = attr.samples(sample_type::TID) && attr.has(flag::INHERIT);
    for (id, value) in read.iter() {
        let id = id.unwrap_or(0);
        let Some(member) = cx.evlist.by_id(id) else {
            seen.unknown_id += 1;
            continue;
        };
        let last = seen.last.entry((id, if per_thread { s.tid } else { -1 })).or_insert(0);
        let period = value.wrapping_sub(*last);
        *last = value;
        if period != 0 {
            let one = Sample { id: Some(id), period, ..*s };
            deliver_one(tool, &mut cx, unwinder.as_deref_mut(), lbr_max_stack, Outgoing { evsel: member, sample: &one, ..out })?;
        }
    }
    Ok(())
}

/// Delivers a sample that passes the filters, with its thread resolved
/// as perf's `machine__resolve` does (creating it if needed), and its user
/// stack unwound if it has one to unwind and the tool shows it (perf's
/// `thread__resolve_callchain_unwind`) or taken from its LBR call stack
/// (`lbr_max_stack`: see [`lbr`]). `held_comm`: the comm of a sample that
/// was held for its deferred callchain.
fn deliver_one(tool: &mut dyn Tool, cx: &mut Context<'_>, unwinder: Option<&mut UserUnwinder>, lbr_max_stack: Option<usize>, out: Outgoing<'_>) -> Result<()> {
    let Outgoing { offset, evsel, record, sample: s, callchain, held_comm, cookie, held } = out;
    if cx.filter.skip_time(s.time) || cx.filter.skip_cpu(s.cpu) {
        return Ok(());
    }
    let (current, pid) = {
        let t = cx.machine.findnew_thread(s.pid, s.tid);
        (t.comm(), t.pid)
    };
    let comm = held_comm.unwrap_or(&current);
    let ev = SampleEvent { offset, evsel, record, sample: s, callchain, comm, cookie, held };
    tool.resolved(cx, &ev);
    if cx.filter.skip_thread(comm, pid, s.tid) {
        return Ok(());
    }
    let attr = &cx.evlist.evsels[evsel].attr;
    let mut lbr_user = Vec::new();
    let callchain = match (callchain, unwinder) {
        (c, _) if !tool.shows_callchain(attr) => c,
        (Some(Callchain::Recorded(recorded)), Some(u)) if UserUnwinder::applies(attr.sample_type) => {
            let features = cx.features;
            let user = u.unwind(cx.machine, s, cx.endian, || features.string(feat::ARCH));
            Some(Callchain::Split { recorded, user, lbr: false })
        }
        (Some(Callchain::Recorded(chain)), _)
            if attr.branch_sample_type & branch_sample_type::CALL_STACK != 0
                && let (Some(max), Some(stack)) = (lbr_max_stack, &s.branch_stack)
                && let Some(recorded) = lbr::user_frames(chain, s.ip, stack, max, &mut lbr_user) =>
        {
            Some(Callchain::Split { recorded, user: &lbr_user, lbr: true })
        }
        (c, _) => c,
    };
    tool.sample(cx, &SampleEvent { callchain, ..ev })
}

/// The cookie of a sample whose user callchain was deferred: the event has
/// `defer_callchain` and the callchain ends in `USER_DEFERRED, cookie`.
fn deferred_cookie(attr: &Attr, s: &Sample<'_>) -> Option<u64> {
    let chain = s.callchain?;
    let n = chain.len();
    (attr.has(flag::DEFER_CALLCHAIN) && n >= 2 && chain.get(n - 2) == Some(context::USER_DEFERRED)).then(|| chain.get(n - 1)).flatten()
}

/// A record's place in the input, for messages: its offset, and for a
/// record from a compressed chunk, its place in the decompressed data.
#[derive(Clone, Copy)]
struct Where(u64, Option<u64>);

impl Where {
    fn error(self, t: u32, msg: impl Into<String>) -> Error {
        let e = Damaged::in_record(self.0, t, msg);
        Error::Input(match self.1 {
            Some(i) => e.decompressed_at(i),
            None => e,
        })
    }
}

impl std::fmt::Display for Where {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {:#x}", self.0)?;
        if let Some(i) = self.1 {
            write!(f, " (+{i:#x} in its decompressed data)")?;
        }
        Ok(())
    }
}

/// perf's CPU bound: HEADER_NRCPUS' available count, else MAX_NR_CPUS,
/// never more than MAX_NR_CPUS.
fn nr_cpus_avail(features: &Features) -> u32 {
    match features.nr_cpus() {
        Some((_, avail)) if avail > 0 => avail.min(MAX_NR_CPUS),
        _ => MAX_NR_CPUS,
    }
}

#[cfg(test)]
mod tests {
    use super::TypeCounts;

    /// Counts come back by type, those past the slots too, and only for
    /// types seen.
    #[test]
    fn record_types_are_counted_in_order() {
        let mut c = TypeCounts::default();
        for t in [9, 9, 3, 200, 127, 128, 9, u32::MAX, 68] {
            c.add(t);
        }
        let seen: Vec<(u32, u64)> = c.iter().collect();
        assert_eq!(seen, [(3, 1), (9, 3), (68, 1), (127, 1), (128, 1), (200, 1), (u32::MAX, 1)]);
    }
}

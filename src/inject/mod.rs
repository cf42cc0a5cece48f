//! `pstitch inject`: a recording with deferred user callchains rewritten
//! as an ordinary perf.data, which every reader of perf.data understands.
//!
//! The session does the stitching (the same code `pstitch script` uses);
//! this tool only writes what it is given:
//!
//! ```text
//! session event                       written
//! side-band record, ordinary sample   as it is, in delivery order (time order within rounds)
//! sample held for its user callchain  in the place it arrived (reorder.rs), merged:
//!                                       [KERNEL, k.., USER, u..]; unmerged: [KERNEL, k..] (stitch.rs)
//! CALLCHAIN_DEFERRED (merged)         left out (kept with `keep_deferred`)
//! FINISHED_ROUND                      after the records of its round
//! attrs (file header, HEADER_ATTR,    defer_callchain / defer_output cleared
//!   EVENT_DESC's copies)
//! COMPRESSED chunks                   their records, decompressed; HEADER_COMPRESSED left out
//! anything else                       byte for byte
//! ```
//! File and pipe mode may differ between input and output (output.rs).
//! Memory is bounded by the samples held and the records waiting behind
//! the oldest of them (spilled to a temporary file past a limit).
//!
//! The tool itself only decides what goes where: it hands the records,
//! holes and fills in batches (ops.rs) to the writing side, which puts
//! held samples in place and writes, on a thread of its own beside the
//! reading (`engine::worker`), or at each batch on the reading thread
//! ([`InjectConfig::threads`], `PSTITCH_THREADS=1`): the same bytes.

mod ops;
mod output;
mod reorder;
mod stitch;

use std::io::Write;

use perf_data::Input;
use perf_data::attr::{Attr, flag};
use perf_data::bytes::Endian;
use perf_data::evlist::{Evlist, ids_after_attr};
use perf_data::features::{Features, event_desc_entries, feat};
use perf_data::record::{HEADER_SIZE, RecordHeader, kind};
use perf_data::writer::{AttrEntry, clear_attr_flags};

use crate::engine::Threads;
use crate::engine::worker::Worker;
use crate::error::{Error, Result};
use crate::session::{Consumed, Context, Event, HeldEvent, Limits, SampleEvent, Session, SessionOptions, Stats, StitchStats, Tool, Why};
use ops::{HeaderOp, Ops, Writing};
use output::{FileOut, Sink};
use reorder::Reorder;
use stitch::Stitched;

/// What `pstitch inject` is asked.
#[derive(Debug, Clone)]
pub struct InjectConfig {
    /// Keep the CALLCHAIN_DEFERRED records (and the attrs' defer bits),
    /// for readers that understand them.
    pub keep_deferred: bool,
    /// Most bytes of records that wait in memory behind a held sample
    /// before they go to a temporary file (16 MiB: spilling costs little
    /// next to the writing, and a sample held to the end of the input keeps
    /// nearly everything waiting).
    pub max_waiting: usize,
    pub limits: Limits,
    /// Whether the writing runs on a thread of its own beside the reading
    /// (the default), or everything on the calling thread.
    pub threads: Threads,
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig { keep_deferred: false, max_waiting: 16 << 20, limits: Limits::default(), threads: Threads::Parallel }
    }
}

/// Where the output goes.
pub enum Output {
    /// A file-mode perf.data in this (seekable) file.
    File(std::fs::File),
    /// A pipe-mode stream.
    Pipe(Box<dyn Write + Send>),
}

/// What an inject run did.
#[derive(Debug, Default)]
pub struct InjectReport {
    /// The output was written completely.
    pub ok: bool,
    /// What to say on stderr, one line each.
    pub messages: Vec<String>,
    pub stats: Stats,
    pub stitch: StitchStats,
    pub counts: Counts,
}

/// What became of the deferred data.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Held samples written with their user callchain.
    pub merged: u64,
    /// Held samples written with the kernel part only (no user
    /// callchain came for them).
    pub kernel_only: u64,
    /// Merged samples whose user part was cut to fit a record.
    pub truncated: u64,
    /// CALLCHAIN_DEFERRED records left out.
    pub deferred_dropped: u64,
    /// Bytes of records that waited behind held samples, at most at once,
    /// and in all that went through the temporary file.
    pub peak_waiting: u64,
    pub spilled: u64,
}

/// The tool: hands what the session delivers to the writing side
/// (ops.rs), in batches.
struct Inject {
    ops: Ops,
    writer: Worker<Writing, Ops>,
    /// The output is a file (else a stream).
    file_out: bool,
    endian: Endian,
    keep_deferred: bool,
    /// The attr flags to clear.
    clear: u64,
    counts: Counts,
}

/// An attr (raw, as written) with the flags `clear` cleared.
fn attr_entry(raw: &[u8], ids: Vec<u64>, endian: Endian, clear: u64) -> AttrEntry {
    let mut raw = raw.to_vec();
    clear_attr_flags(&mut raw, endian, clear);
    AttrEntry { raw, ids }
}

/// A feature payload as written: EVENT_DESC's attrs with the flags
/// `clear` cleared.
fn feature_payload(bit: u64, payload: &[u8], endian: Endian, clear: u64) -> Vec<u8> {
    let mut p = payload.to_vec();
    if bit == feat::EVENT_DESC as u64 && clear != 0 {
        for (_, at) in event_desc_entries(payload, endian) {
            clear_attr_flags(&mut p[at], endian, clear);
        }
    }
    p
}

/// The start of the output: a file-mode input's header goes into the
/// output file's header, or becomes records at the start of a stream; a
/// stream's header records come later, as records.
fn start(sink: &mut Sink, input: &Input, evlist: &Evlist, features: &Features, clear: u64, messages: &mut Vec<String>, name: &str) -> std::io::Result<()> {
    let endian = input.endian;
    let Some(info) = input.info.as_ref() else {
        return match sink {
            Sink::File(_) => Ok(()),
            Sink::Pipe(_) => sink.write_all(&perf_data::writer::pipe_header(endian)),
        };
    };
    let bytes = input.bytes().map(|b| &b[..]).unwrap_or(&[]);
    let attrs: Vec<AttrEntry> =
        info.attr_ranges.iter().zip(&evlist.evsels).map(|(r, ev)| attr_entry(bytes.get(r.clone()).unwrap_or(&[]), ev.ids.clone(), endian, clear)).collect();
    let feats: Vec<(u32, Vec<u8>)> = features
        .bits()
        .filter(|&b| b != feat::COMPRESSED)
        .map(|b| (b, feature_payload(b as u64, features.get(b).unwrap_or(&[]), endian, clear)))
        .collect();
    match sink {
        Sink::File(f) => {
            attrs.into_iter().for_each(|a| f.add_attr(a));
            feats.into_iter().for_each(|(b, p)| f.set_feature(b, p));
            Ok(())
        }
        Sink::Pipe(w) => {
            let names: Vec<(u64, String)> = features
                .event_desc()
                .into_iter()
                .zip(&evlist.evsels)
                .filter_map(|(d, ev)| Some((*ev.ids.first().or(d.ids.first())?, d.name)))
                .collect();
            let (records, left_out) = output::header_records(endian, &attrs, &names, &feats);
            for what in left_out {
                messages.push(format!("pstitch: {name}: warning: {what} does not fit a pipe-mode record; left out"));
            }
            w.write_all(&records)
        }
    }
}

impl Inject {
    /// Appends a record to the stream.
    #[inline]
    fn push(&mut self, bytes: &[u8]) -> Result<()> {
        self.ops.push(bytes);
        self.sent_if_full()
    }

    /// Hands the batch over once it is full.
    #[inline]
    fn sent_if_full(&mut self) -> Result<()> {
        if self.ops.full() {
            self.writer.send(&mut self.ops)?;
        }
        Ok(())
    }

    /// A record perf writes itself, as the session consumed it.
    fn user_record(&mut self, bytes: &[u8]) -> Result<()> {
        let e = self.endian;
        let Some(h) = RecordHeader::parse(bytes, e) else { return self.push(bytes) };
        let size = (h.size as usize).min(bytes.len());
        let body = &bytes[HEADER_SIZE..size];
        match h.type_ {
            // Their records were delivered one by one.
            kind::COMPRESSED | kind::COMPRESSED2 => {}
            kind::HEADER_ATTR => {
                let sz = Attr::parse(body, e).map(|a| a.disk_size()).unwrap_or(body.len()).min(body.len());
                let entry = attr_entry(&body[..sz], ids_after_attr(body, sz, e), e, self.clear);
                if self.file_out {
                    self.ops.header(HeaderOp::Attr(entry));
                } else {
                    let mut rec = bytes.to_vec();
                    rec[HEADER_SIZE..HEADER_SIZE + sz].copy_from_slice(&entry.raw);
                    self.push(&rec)?;
                }
            }
            kind::HEADER_FEATURE => {
                let bit = e.read_u64(body, 0).unwrap_or(u64::MAX);
                if bit == feat::COMPRESSED as u64 {
                    // The output is not compressed.
                    return Ok(());
                }
                let payload = feature_payload(bit, &body[8.min(body.len())..], e, self.clear);
                if self.file_out {
                    // The end mark (no payload) is no section.
                    if bit < 256 && !payload.is_empty() {
                        self.ops.header(HeaderOp::Feature(bit as u32, payload));
                    }
                } else {
                    let mut rec = bytes.to_vec();
                    rec[HEADER_SIZE + 8..size].copy_from_slice(&payload);
                    self.push(&rec)?;
                }
            }
            kind::HEADER_TRACING_DATA if self.file_out => self.ops.header(HeaderOp::Feature(feat::TRACING_DATA, bytes[size..].to_vec())),
            kind::HEADER_BUILD_ID if self.file_out => self.ops.header(HeaderOp::BuildId(bytes[..size].to_vec())),
            _ => self.push(bytes)?,
        }
        self.sent_if_full()
    }
}

impl Tool for Inject {
    fn sample(&mut self, _cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        let Some(seq) = ev.held else { return self.push(ev.record.bytes) };
        let endian = self.endian;
        // Written into the batch in place.
        let how = self.ops.fill_with(seq, |out| {
            let how = stitch::held_sample(ev, endian, out);
            if how.is_none() {
                out.extend_from_slice(ev.record.bytes);
            }
            how
        });
        match how {
            Some(Stitched::Merged) => self.counts.merged += 1,
            Some(Stitched::KernelOnly) => self.counts.kernel_only += 1,
            Some(Stitched::Truncated) => {
                self.counts.merged += 1;
                self.counts.truncated += 1;
            }
            None => {}
        }
        self.sent_if_full()
    }

    fn sample_held(&mut self, _cx: &mut Context<'_>, ev: &HeldEvent<'_>) -> Result<()> {
        self.ops.hole(ev.seq);
        self.sent_if_full()
    }

    fn record(&mut self, _cx: &mut Context<'_>, ev: &Event<'_>) -> Result<()> {
        self.push(ev.record.bytes)
    }

    fn consumed(&mut self, _cx: &mut Context<'_>, ev: &Consumed<'_>) -> Result<()> {
        match ev.why {
            Why::UserRecord => self.user_record(ev.bytes),
            Why::DeferredMerged if !self.keep_deferred => {
                self.counts.deferred_dropped += 1;
                Ok(())
            }
            Why::DeferredMerged | Why::Skipped => self.push(ev.bytes),
        }
    }
}

/// Writes `input` with its deferred callchains stitched to `output`.
/// `name` is how messages call the input. Never panics on any input.
pub fn run(mut input: Input, name: &str, config: InjectConfig, output: Output) -> InjectReport {
    let mut report = InjectReport::default();
    let endian = input.endian;
    let (evlist, features, warnings) = input.take_header();
    for w in &warnings {
        report.messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    let clear = if config.keep_deferred { 0 } else { flag::DEFER_CALLCHAIN | flag::DEFER_OUTPUT };
    let mut sink = match output {
        Output::File(f) => Sink::File(Box::new(FileOut::new(f, endian))),
        Output::Pipe(w) => Sink::pipe(w),
    };
    if let Err(e) = start(&mut sink, &input, &evlist, &features, clear, &mut report.messages, name) {
        report.messages.push(format!("pstitch: writing output: {e}"));
        return report;
    }
    let file_out = matches!(sink, Sink::File(_));
    let writing = Writing { out: Reorder::new(sink, config.max_waiting) };
    let writer = Worker::start(writing, Writing::apply, config.threads, "pstitch-writer");
    let mut tool = Inject { ops: Ops::default(), writer, file_out, endian, keep_deferred: config.keep_deferred, clear, counts: Counts::default() };

    let pipe = input.pipe;
    // Every record once, as it was (a PERF_SAMPLE_READ sample is not split
    // into its counters).
    let options = SessionOptions { limits: config.limits, whole_read_samples: true, ..Default::default() };
    let mut session = Session::new(input.records(), evlist, features, pipe, options);
    let result = session.run(&mut tool);
    report.stats = session.stats.clone();
    report.stitch = session.stitch_stats();
    for w in session.warnings.messages() {
        report.messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    // What was delivered is written, even after an error.
    let Inject { mut ops, writer, mut counts, .. } = tool;
    let finished = writer.finish(&mut ops).and_then(|mut w| {
        let open = w.out.finish()?;
        w.out.get_mut().finish()?;
        counts.peak_waiting = w.out.peak_waiting;
        counts.spilled = w.out.spilled;
        Ok(open)
    });
    report.counts = counts;
    let c = &report.counts;
    if c.kernel_only > 0 {
        report.messages.push(format!(
            "pstitch: {name}: {} of {} samples with deferred callchains got no user callchain (their deferred record never came): written with the kernel part only",
            c.kernel_only,
            c.kernel_only + c.merged
        ));
    }
    if c.truncated > 0 {
        report.messages.push(format!("pstitch: {name}: warning: {} merged callchains were cut to fit a record's 64 KiB", c.truncated));
    }
    if report.stitch.unmatched_records > 0 {
        report.messages.push(format!(
            "pstitch: {name}: {} deferred records matched no held sample{}",
            report.stitch.unmatched_records,
            if config.keep_deferred { "" } else { " (left out)" }
        ));
    }
    match (result, finished) {
        (Err(e @ Error::Output(_)), _) => report.messages.push(format!("pstitch: {e}")),
        (Err(e), _) => report.messages.push(format!("pstitch: {name}: {e}")),
        (Ok(()), Err(e)) => report.messages.push(format!("pstitch: writing output: {e}")),
        (Ok(()), Ok(open)) => {
            if open > 0 {
                report.messages.push(format!("pstitch: {name}: warning: {open} held samples were never delivered; left out"));
            }
            report.ok = true;
        }
    }
    report
}

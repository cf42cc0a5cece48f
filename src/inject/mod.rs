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

use crate::error::{Error, Result};
use crate::session::{Consumed, Context, Event, HeldEvent, Limits, SampleEvent, Session, SessionOptions, Stats, StitchStats, Tool, Why};
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
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig { keep_deferred: false, max_waiting: 16 << 20, limits: Limits::default() }
    }
}

/// Where the output goes.
pub enum Output {
    /// A file-mode perf.data in this (seekable) file.
    File(std::fs::File),
    /// A pipe-mode stream.
    Pipe(Box<dyn Write>),
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

/// The tool: writes what the session delivers.
struct Inject {
    out: Reorder<Sink>,
    endian: Endian,
    keep_deferred: bool,
    /// The attr flags to clear.
    clear: u64,
    counts: Counts,
    /// A stitched sample's record, the buffer reused.
    scratch: Vec<u8>,
}

impl Inject {
    fn file(&mut self) -> Option<&mut FileOut> {
        match self.out.get_mut() {
            Sink::File(f) => Some(f),
            Sink::Pipe(_) => None,
        }
    }

    /// An attr (raw, as written) with the defer flags cleared.
    fn attr_entry(&self, raw: &[u8], ids: Vec<u64>) -> AttrEntry {
        let mut raw = raw.to_vec();
        clear_attr_flags(&mut raw, self.endian, self.clear);
        AttrEntry { raw, ids }
    }

    /// A feature payload as written: EVENT_DESC's attrs with the defer
    /// flags cleared.
    fn feature_payload(&self, bit: u64, payload: &[u8]) -> Vec<u8> {
        let mut p = payload.to_vec();
        if bit == feat::EVENT_DESC as u64 && self.clear != 0 {
            for (_, at) in event_desc_entries(payload, self.endian) {
                clear_attr_flags(&mut p[at], self.endian, self.clear);
            }
        }
        p
    }

    /// The start of the output: a file-mode input's header goes into the
    /// output file's header, or becomes records at the start of a stream; a
    /// stream's header records come later, as records.
    fn start(&mut self, input: &Input, evlist: &Evlist, features: &Features, messages: &mut Vec<String>, name: &str) -> std::io::Result<()> {
        let Some(info) = input.info.as_ref() else {
            return match self.out.get_mut() {
                Sink::File(_) => Ok(()),
                Sink::Pipe(_) => self.out.push(&perf_data::writer::pipe_header(self.endian)),
            };
        };
        let bytes = input.bytes().map(|b| &b[..]).unwrap_or(&[]);
        let attrs: Vec<AttrEntry> =
            info.attr_ranges.iter().zip(&evlist.evsels).map(|(r, ev)| self.attr_entry(bytes.get(r.clone()).unwrap_or(&[]), ev.ids.clone())).collect();
        let feats: Vec<(u32, Vec<u8>)> = features
            .bits()
            .filter(|&b| b != feat::COMPRESSED)
            .map(|b| (b, self.feature_payload(b as u64, features.get(b).unwrap_or(&[]))))
            .collect();
        match self.out.get_mut() {
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
                let (records, left_out) = output::header_records(self.endian, &attrs, &names, &feats);
                for what in left_out {
                    messages.push(format!("pstitch: {name}: warning: {what} does not fit a pipe-mode record; left out"));
                }
                w.write_all(&records)
            }
        }
    }

    /// A record perf writes itself, as the session consumed it.
    fn user_record(&mut self, bytes: &[u8]) -> Result<()> {
        let e = self.endian;
        let Some(h) = RecordHeader::parse(bytes, e) else { return Ok(self.out.push(bytes)?) };
        let size = (h.size as usize).min(bytes.len());
        let body = &bytes[HEADER_SIZE..size];
        match h.type_ {
            // Their records were delivered one by one.
            kind::COMPRESSED | kind::COMPRESSED2 => {}
            kind::HEADER_ATTR => {
                let sz = Attr::parse(body, e).map(|a| a.disk_size()).unwrap_or(body.len()).min(body.len());
                let entry = self.attr_entry(&body[..sz], ids_after_attr(body, sz, e));
                match self.file() {
                    Some(f) => f.add_attr(entry),
                    None => {
                        let mut rec = bytes.to_vec();
                        rec[HEADER_SIZE..HEADER_SIZE + sz].copy_from_slice(&entry.raw);
                        self.out.push(&rec)?;
                    }
                }
            }
            kind::HEADER_FEATURE => {
                let bit = e.read_u64(body, 0).unwrap_or(u64::MAX);
                if bit == feat::COMPRESSED as u64 {
                    // The output is not compressed.
                    return Ok(());
                }
                let payload = self.feature_payload(bit, &body[8.min(body.len())..]);
                match self.file() {
                    // The end mark (no payload) is no section.
                    Some(f) => {
                        if bit < 256 && !payload.is_empty() {
                            f.set_feature(bit as u32, payload);
                        }
                    }
                    None => {
                        let mut rec = bytes.to_vec();
                        rec[HEADER_SIZE + 8..size].copy_from_slice(&payload);
                        self.out.push(&rec)?;
                    }
                }
            }
            kind::HEADER_TRACING_DATA => match self.file() {
                Some(f) => f.set_feature(feat::TRACING_DATA, bytes[size..].to_vec()),
                None => self.out.push(bytes)?,
            },
            kind::HEADER_BUILD_ID => match self.file() {
                Some(f) => f.add_build_id(&bytes[..size]),
                None => self.out.push(bytes)?,
            },
            _ => self.out.push(bytes)?,
        }
        Ok(())
    }
}

impl Tool for Inject {
    fn sample(&mut self, _cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        let Some(seq) = ev.held else { return Ok(self.out.push(ev.record.bytes)?) };
        match stitch::held_sample(ev, self.endian, &mut self.scratch) {
            Some(how) => {
                match how {
                    Stitched::Merged => self.counts.merged += 1,
                    Stitched::KernelOnly => self.counts.kernel_only += 1,
                    Stitched::Truncated => {
                        self.counts.merged += 1;
                        self.counts.truncated += 1;
                    }
                }
                self.out.fill(seq, &self.scratch)?;
            }
            None => self.out.fill(seq, ev.record.bytes)?,
        }
        Ok(())
    }

    fn sample_held(&mut self, _cx: &mut Context<'_>, ev: &HeldEvent<'_>) -> Result<()> {
        self.out.hole(ev.seq);
        Ok(())
    }

    fn record(&mut self, _cx: &mut Context<'_>, ev: &Event<'_>) -> Result<()> {
        Ok(self.out.push(ev.record.bytes)?)
    }

    fn consumed(&mut self, _cx: &mut Context<'_>, ev: &Consumed<'_>) -> Result<()> {
        match ev.why {
            Why::UserRecord => self.user_record(ev.bytes),
            Why::DeferredMerged if !self.keep_deferred => {
                self.counts.deferred_dropped += 1;
                Ok(())
            }
            Why::DeferredMerged | Why::Skipped => Ok(self.out.push(ev.bytes)?),
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
    let sink = match output {
        Output::File(f) => Sink::File(Box::new(FileOut::new(f, endian))),
        Output::Pipe(w) => Sink::pipe(w),
    };
    let mut tool = Inject { out: Reorder::new(sink, config.max_waiting), endian, keep_deferred: config.keep_deferred, clear, counts: Counts::default(), scratch: Vec::new() };

    if let Err(e) = tool.start(&input, &evlist, &features, &mut report.messages, name) {
        report.messages.push(format!("pstitch: writing output: {e}"));
        return report;
    }

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
    let finished = tool.out.finish().and_then(|open| {
        tool.out.get_mut().finish()?;
        Ok(open)
    });
    tool.counts.peak_waiting = tool.out.peak_waiting;
    tool.counts.spilled = tool.out.spilled;
    report.counts = tool.counts;
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

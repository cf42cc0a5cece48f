//! The session: reads records from a [`RecordSource`], keeps the event list
//! and feature data current (pipe mode sends them as records), decompresses
//! `-z` chunks, orders kernel records by time like perf, and hands each one
//! to a [`Tool`] in perf's delivery order.
//!
//! ```text
//! RecordSource ──> process_record ──┬─ user records (>= 64): attrs, features,
//!                                   │   FINISHED_ROUND (flush), COMPRESSED (recurse)
//!                                   └─ kernel records: timestamp? ──yes──> OrderedEvents ──┐
//!                                                          └──no───────────────────────────┴─> Tool::event
//! ```

pub mod deferred;
pub mod ordered;

use std::rc::Rc;

use crate::perf_data::attr::Attr;
use crate::perf_data::bytes::Endian;
use crate::perf_data::compressed::{self, Decompressor};
use crate::perf_data::evlist::{Evlist, Evsel, ids_after_attr};
use crate::perf_data::features::Features;
use crate::perf_data::record::{HEADER_SIZE, Record, RecordHeader, kind};
use crate::perf_data::sample::{Sample, SampleId};
use crate::perf_data::{Error, RawRecord, RecordSource, Result};

use ordered::{OrderedEvents, Queued, RecordBytes};

/// A record delivered to a [`Tool`], with the event that wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Event<'r> {
    /// Input offset of the record (of the compressed chunk it came from, for
    /// records decoded from one).
    pub offset: u64,
    pub record: Record<'r>,
    pub evsel: usize,
    /// The decoded sample, for PERF_RECORD_SAMPLE.
    pub sample: Option<Sample<'r>>,
    /// The `sample_id` trailer, for other kernel records.
    pub id: SampleId,
}

/// What the session knows while delivering.
pub struct Context<'s> {
    pub evlist: &'s Evlist,
    pub features: &'s Features,
    pub pipe: bool,
    pub endian: Endian,
}

/// The consumer of ordered events (perf's `struct perf_tool`).
pub trait Tool {
    /// A kernel record, in delivery order.
    fn event(&mut self, ctx: &Context<'_>, ev: &Event<'_>) -> Result<()>;

    /// An event was added by a HEADER_ATTR record (pipe mode).
    fn attr_added(&mut self, _evlist: &Evlist, _idx: usize) -> Result<()> {
        Ok(())
    }

    /// Tracing data (HEADER_TRACING_DATA payload) arrived in the stream.
    fn tracing_data(&mut self, _data: &[u8]) {}

    /// A HEADER_FEATURE record (pipe mode) arrived, after the session
    /// stored its payload: feature id `bit` and its payload.
    fn feature(&mut self, _ctx: &Context<'_>, _bit: u64, _payload: &[u8]) -> Result<()> {
        Ok(())
    }

    /// All records were delivered (the queue is flushed).
    fn finish(&mut self, _ctx: &Context<'_>) -> Result<()> {
        Ok(())
    }
}

/// Counters kept while reading (perf's `events_stats`).
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub by_type: std::collections::BTreeMap<u32, u64>,
    pub nr_unknown_id: u64,
    pub nr_unknown_type: u64,
    pub nr_unparsable: u64,
    pub nr_unordered: u64,
    pub lost_events: u64,
    pub lost_samples: u64,
}

/// Reads one input to the end.
pub struct Session<'a> {
    pub evlist: Evlist,
    pub features: Features,
    pub pipe: bool,
    pub stats: Stats,
    /// Warnings said once each (printed by the caller).
    pub warnings: Vec<String>,
    endian: Endian,
    source: RecordSource<'a>,
    queue: OrderedEvents<'a>,
    decompressor: Option<Decompressor>,
    warned: std::collections::HashSet<&'static str>,
    progress: Option<Box<dyn FnMut(Progress) + 'a>>,
}

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
    pub fn new(source: RecordSource<'a>, evlist: Evlist, features: Features, pipe: bool) -> Session<'a> {
        let endian = source.endian();
        Session {
            evlist,
            features,
            pipe,
            stats: Stats::default(),
            warnings: Vec::new(),
            endian,
            source,
            queue: OrderedEvents::default(),
            decompressor: None,
            warned: Default::default(),
            progress: None,
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

    fn warn_once(&mut self, key: &'static str, msg: String) {
        if self.warned.insert(key) {
            self.warnings.push(msg);
        }
    }

    /// Processes every record and flushes the queue. On a damaged record the
    /// events read before it are still delivered, then the error returned.
    pub fn run(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let result = self.read_all(tool);
        let flushed = self.flush_all(tool);
        self.report(0, true);
        self.stats.nr_unordered = self.queue.nr_unordered;
        let ctx = Context { evlist: &self.evlist, features: &self.features, pipe: self.pipe, endian: self.endian };
        let finished = tool.finish(&ctx);
        result.and(flushed).and(finished)
    }

    fn read_all(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut records = 0u64;
        while let Some(raw) = self.source.next_record()? {
            records += 1;
            if records % PROGRESS_EVERY == 0 {
                self.report(records, false);
            }
            let RawRecord { offset, header, bytes } = raw;
            let bytes = match bytes {
                std::borrow::Cow::Borrowed(b) => RecordBytes::Borrowed(b),
                std::borrow::Cow::Owned(v) => RecordBytes::Owned(v.into_boxed_slice()),
            };
            self.process_record(tool, offset, header, bytes)?;
        }
        if let Some(d) = &self.decompressor {
            if d.leftover() > 0 {
                let n = d.leftover();
                self.warn_once("decomp-tail", format!("{n} bytes of an incomplete record at the end of the compressed data were ignored"));
            }
        }
        Ok(())
    }

    fn process_record(&mut self, tool: &mut dyn Tool, offset: u64, header: RecordHeader, bytes: RecordBytes<'a>) -> Result<()> {
        *self.stats.by_type.entry(header.type_).or_default() += 1;
        if header.type_ >= kind::USER_TYPE_START {
            return self.process_user_record(tool, offset, header, &bytes);
        }
        if self.evlist.is_empty() {
            return Err(Error::in_record(offset, header.type_, "record before any event attribute"));
        }
        let rec = Record { header, bytes: &bytes, endian: self.endian };
        let Some(evsel) = self.evlist.evsel_for(&rec) else {
            self.stats.nr_unknown_id += 1;
            self.warn_once("unknown-id", format!("skipping records with an unknown event id (first at offset {offset:#x})"));
            return Ok(());
        };
        let attr = &self.evlist.evsels[evsel].attr;
        let time = if !self.evlist.sample_id_all() {
            None
        } else if header.type_ == kind::SAMPLE {
            Sample::parse_time(rec.body(), attr, self.endian)
        } else if attr.sample_id_all() {
            Some(SampleId::parse_trailer(rec.body(), attr, self.endian).time)
        } else {
            None
        };
        match time {
            // perf delivers records without a usable time at once.
            Some(t) if t != 0 && t != u64::MAX => {
                self.queue.push(Queued { time: t, offset, evsel: evsel as u32, bytes });
                Ok(())
            }
            _ => self.deliver(tool, offset, evsel, &bytes),
        }
    }

    fn deliver(&mut self, tool: &mut dyn Tool, offset: u64, evsel: usize, bytes: &[u8]) -> Result<()> {
        let header = RecordHeader::parse(bytes, self.endian).ok_or_else(|| Error::at(offset, "record header truncated"))?;
        let record = Record { header, bytes: &bytes[..(header.size as usize).min(bytes.len())], endian: self.endian };
        let attr: &Attr = &self.evlist.evsels[evsel].attr;
        let (sample, id) = if header.type_ == kind::SAMPLE {
            match Sample::parse(record.body(), attr, self.endian) {
                Ok(s) => {
                    let id = SampleId { pid: s.pid, tid: s.tid, time: s.time, id: s.id, stream_id: s.stream_id, cpu: s.cpu };
                    (Some(s), id)
                }
                Err(e) => return Err(Error::in_record(offset, header.type_, e.to_string())),
            }
        } else {
            (None, SampleId::parse_trailer(record.body(), attr, self.endian))
        };
        match header.type_ {
            kind::LOST => {
                if let Some(l) = crate::perf_data::record::LostRecord::parse(&record) {
                    self.stats.lost_events += l.lost;
                }
            }
            kind::LOST_SAMPLES => {
                if let Some(l) = crate::perf_data::record::LostRecord::parse(&record) {
                    self.stats.lost_samples += l.lost;
                }
            }
            t if t > kind::CALLCHAIN_DEFERRED => {
                self.stats.nr_unknown_type += 1;
                self.warn_once("unknown-type", format!("skipping records of unknown type {t} (first at offset {offset:#x})"));
                return Ok(());
            }
            _ => {}
        }
        let ev = Event { offset, record, evsel, sample, id };
        let ctx = Context { evlist: &self.evlist, features: &self.features, pipe: self.pipe, endian: self.endian };
        tool.event(&ctx, &ev)
    }

    fn deliver_queued(&mut self, tool: &mut dyn Tool, q: &Queued<'_>) -> Result<()> {
        self.deliver(tool, q.offset, q.evsel as usize, &q.bytes)
    }

    fn flush_round(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut queue = std::mem::take(&mut self.queue);
        let r = queue.flush_round(|q| self.deliver_queued(tool, &q));
        self.queue = queue;
        r
    }

    fn flush_all(&mut self, tool: &mut dyn Tool) -> Result<()> {
        let mut queue = std::mem::take(&mut self.queue);
        let r = queue.flush_all(|q| self.deliver_queued(tool, &q));
        self.queue = queue;
        r
    }

    fn process_user_record(&mut self, tool: &mut dyn Tool, offset: u64, header: RecordHeader, bytes: &[u8]) -> Result<()> {
        let e = self.endian;
        let body = &bytes[HEADER_SIZE..(header.size as usize).min(bytes.len())];
        match header.type_ {
            kind::FINISHED_ROUND => self.flush_round(tool)?,
            kind::HEADER_ATTR => {
                let attr = Attr::parse(body, e).ok_or_else(|| Error::in_record(offset, header.type_, "attr truncated"))?;
                let ids = ids_after_attr(body, attr.disk_size(), e);
                let idx = self.evlist.push(Evsel { attr, name: None, ids });
                tool.attr_added(&self.evlist, idx)?;
            }
            kind::EVENT_UPDATE => self.event_update(body),
            kind::HEADER_FEATURE => {
                let Some(feat) = e.read_u64(body, 0) else {
                    self.warn_once("feature", format!("truncated feature record at offset {offset:#x}"));
                    return Ok(());
                };
                let payload = &body[8..];
                if let Ok(bit) = u32::try_from(feat) {
                    self.features.insert(bit, payload.to_vec());
                    if bit == crate::perf_data::features::feat::EVENT_DESC {
                        for (i, desc) in self.features.event_desc().into_iter().enumerate() {
                            if let Some(ev) = self.evlist.evsels.get_mut(i) {
                                ev.name.get_or_insert(desc.name);
                            }
                        }
                    }
                }
                let ctx = Context { evlist: &self.evlist, features: &self.features, pipe: self.pipe, endian: e };
                tool.feature(&ctx, feat, payload)?;
            }
            kind::HEADER_TRACING_DATA => {
                let payload = bytes.get(header.size as usize..).unwrap_or(&[]);
                tool.tracing_data(payload);
            }
            kind::ID_INDEX => self.id_index(body),
            kind::COMPRESSED | kind::COMPRESSED2 => self.decompress(tool, offset, header, body)?,
            kind::HEADER_EVENT_TYPE
            | kind::HEADER_BUILD_ID
            | kind::AUXTRACE_INFO
            | kind::AUXTRACE
            | kind::AUXTRACE_ERROR
            | kind::THREAD_MAP
            | kind::CPU_MAP
            | kind::STAT_CONFIG
            | kind::STAT
            | kind::STAT_ROUND
            | kind::TIME_CONV
            | kind::FINISHED_INIT
            | kind::BPF_METADATA => {}
            t => {
                self.stats.nr_unknown_type += 1;
                self.warn_once("unknown-user-type", format!("skipping records of unknown type {t} (first at offset {offset:#x})"));
            }
        }
        Ok(())
    }

    /// EVENT_UPDATE: `{ u64 type; u64 id; payload }`; type 2 names the event.
    fn event_update(&mut self, body: &[u8]) {
        const NAME: u64 = 2;
        let e = self.endian;
        let (Some(t), Some(id)) = (e.read_u64(body, 0), e.read_u64(body, 8)) else { return };
        if t != NAME {
            return;
        }
        let name = crate::perf_data::bytes::until_nul(&body[16..]);
        if let Some(idx) = self.evlist.by_id(id) {
            self.evlist.evsels[idx].name = Some(String::from_utf8_lossy(name).into_owned());
        }
    }

    /// ID_INDEX: `{ u64 nr; { u64 id, idx, cpu, tid }[nr] }` — ids of events
    /// by position, for ids the attrs did not list.
    fn id_index(&mut self, body: &[u8]) {
        let e = self.endian;
        let Some(nr) = e.read_u64(body, 0) else { return };
        let entries = body.len().saturating_sub(8) / 32;
        for i in 0..(nr as usize).min(entries) {
            let at = 8 + i * 32;
            let (Some(id), Some(idx)) = (e.read_u64(body, at), e.read_u64(body, at + 8)) else { break };
            if self.evlist.by_id(id).is_none() && (idx as usize) < self.evlist.len() {
                self.evlist.add_ids(idx as usize, &[id]);
            }
        }
    }

    fn decompress(&mut self, tool: &mut dyn Tool, offset: u64, header: RecordHeader, body: &[u8]) -> Result<()> {
        let payload = compressed::payload(header.type_, body, self.endian)
            .ok_or_else(|| Error::in_record(offset, header.type_, "compressed payload size exceeds the record"))?;
        if self.decompressor.is_none() {
            self.decompressor = Some(Decompressor::new().map_err(|e| Error::in_record(offset, header.type_, e.0))?);
        }
        let out = self
            .decompressor
            .as_mut()
            .expect("set above")
            .decompress(payload, self.endian)
            .map_err(|e| Error::in_record(offset, header.type_, format!("zstd: {}", e.0)))?;
        let shared: Rc<[u8]> = out.into();
        let mut pos = 0usize;
        while pos < shared.len() {
            let h = RecordHeader::parse(&shared[pos..], self.endian)
                .ok_or_else(|| Error::in_record(offset, header.type_, "decompressed record header truncated"))?;
            let size = h.size as usize;
            if size < HEADER_SIZE || pos + size > shared.len() {
                return Err(Error::in_record(
                    offset,
                    header.type_,
                    format!("decompressed record at +{pos:#x} has bad size {size}"),
                ));
            }
            let bytes = RecordBytes::Shared(shared.clone(), pos as u32, size as u32);
            self.process_record(tool, offset, h, bytes)?;
            pos += size;
        }
        Ok(())
    }
}

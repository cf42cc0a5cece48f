//! What a tool sees: the [`Tool`] trait (perf's `struct perf_tool`) and
//! the events the session delivers to it.
//!
//! By the time a tool sees an event the session has done perf's part:
//! records are in perf's delivery order, the machine has taken in the
//! side-band records (threads, comms, maps), samples have passed the
//! filters and, with deferred user callchains, carry their merged
//! callchain. A tool only consumes.

use perf_data::attr::Attr;
use perf_data::bytes::{Endian, U64Array};
use perf_data::evlist::Evlist;
use perf_data::features::Features;
use perf_data::record::{CommRecord, DeferredCallchainRecord, LostRecord, MmapRecord, Record, TaskRecord};
use perf_data::sample::{Sample, SampleId};

use super::filter::SampleFilter;
use crate::error::Result;
use crate::machine::{Comm, Machine};

/// What the session knows while delivering.
pub struct Context<'s> {
    pub evlist: &'s Evlist,
    pub features: &'s Features,
    pub pipe: bool,
    pub endian: Endian,
    /// Threads, comms and maps as of this event. A tool resolves through
    /// it (finding a thread may create it, as perf's `machine__resolve`
    /// does) but never applies records to it: the session does.
    pub machine: &'s mut Machine,
    /// The sample filters; samples and deferred callchains arrive
    /// filtered, side-band records do not (perf filters their printing by
    /// CPU only).
    pub filter: &'s SampleFilter,
}

/// A sample, as a tool should show it.
#[derive(Debug, Clone, Copy)]
pub struct SampleEvent<'r> {
    /// Input offset of the record (of its compressed chunk, for a record
    /// decoded from one).
    pub offset: u64,
    pub evsel: usize,
    /// The record (its header's `misc` holds the CPU mode).
    pub record: Record<'r>,
    pub sample: &'r Sample<'r>,
    /// The callchain to show: the sample's own, or, for a sample whose
    /// user part was deferred, the kernel part merged with the user ips of
    /// its CALLCHAIN_DEFERRED record. `None` if the sample has none.
    pub callchain: Option<Callchain<'r>>,
    /// The comm of the sample's thread: the current one, or for a sample
    /// held for its deferred callchain the one it had when it was taken.
    pub comm: &'r Comm,
    /// For a sample whose user callchain was deferred: the cookie, which
    /// perf shows as `(cookie)` where it appears among the entries.
    pub cookie: Option<u64>,
    /// For a sample that was held for its deferred user callchain: the
    /// number [`Tool::sample_held`] announced it with when it arrived.
    pub held: Option<u64>,
}

/// A sample held for its deferred user callchain, as it arrives: it is
/// delivered later (merged or not) as a [`SampleEvent`] whose `held` is
/// `seq`. A tool that keeps events in input order reserves its place here.
#[derive(Debug, Clone, Copy)]
pub struct HeldEvent<'r> {
    /// Numbers count up from 0 in arrival order.
    pub seq: u64,
    pub offset: u64,
    pub evsel: usize,
    pub record: Record<'r>,
    pub sample: &'r Sample<'r>,
}

/// A record the session took in without delivering it as an event.
#[derive(Debug, Clone, Copy)]
pub struct Consumed<'r> {
    /// Input offset of the record (of its compressed chunk, for a record
    /// decoded from one).
    pub offset: u64,
    /// The record, header included, and for HEADER_TRACING_DATA and
    /// AUXTRACE the payload that follows it.
    pub bytes: &'r [u8],
    pub why: Why,
}

/// Why a record was consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A record perf writes itself (type 64 and up: attrs, features,
    /// tracing data, FINISHED_ROUND, compressed chunks, ...), after the
    /// session used it: a FINISHED_ROUND after the records its round
    /// delivered, a compressed chunk after the records it held.
    UserRecord,
    /// A CALLCHAIN_DEFERRED record, after the held samples of its thread
    /// were delivered (merged into those with its cookie).
    DeferredMerged,
    /// A record the session skipped (with a warning): unknown type or
    /// event, malformed.
    Skipped,
}

/// A callchain to show.
#[derive(Debug, Clone, Copy)]
pub enum Callchain<'r> {
    /// As recorded in the sample.
    Recorded(U64Array<'r>),
    /// The kernel part up to and including `PERF_CONTEXT_USER_DEFERRED`,
    /// then the deferred user ips.
    Merged(&'r [u64]),
    /// The recorded part (the kernel's entries), then user frames found
    /// another way, leaf first, shown without a further cut at
    /// `--max-stack`: unwound from a `--call-graph dwarf` sample's
    /// registers and stack copy (at most `--max-stack` of them: perf cuts
    /// each part on its own), or taken from an LBR call stack
    /// (`--call-graph lbr`, every entry: see `session::lbr`; `lbr` says
    /// which).
    Split { recorded: U64Array<'r>, user: &'r [u64], lbr: bool },
}

impl Callchain<'_> {
    /// How many entries [`Callchain::to_vec`] gives.
    pub fn len(&self) -> usize {
        match self {
            Callchain::Recorded(a) => a.len(),
            Callchain::Merged(m) => m.len(),
            Callchain::Split { recorded, user, .. } => recorded.len() + if user.is_empty() { 0 } else { 1 + user.len() },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries, context markers included (unwound user frames come
    /// after a `PERF_CONTEXT_USER` marker).
    pub fn to_vec(&self) -> Vec<u64> {
        match self {
            Callchain::Recorded(a) => a.iter().collect(),
            Callchain::Merged(m) => m.to_vec(),
            Callchain::Split { recorded, user, .. } => {
                let mut v: Vec<u64> = recorded.iter().collect();
                if !user.is_empty() {
                    v.push(perf_data::sample::context::USER);
                    v.extend_from_slice(user);
                }
                v
            }
        }
    }
}

/// A CALLCHAIN_DEFERRED record, delivered as such when callchains are not
/// merged (`--no-merge-callchains`).
#[derive(Debug, Clone, Copy)]
pub struct DeferredEvent<'r> {
    pub offset: u64,
    pub evsel: usize,
    pub record: Record<'r>,
    /// The record's `sample_id`.
    pub id: SampleId,
    pub deferred: DeferredCallchainRecord<'r>,
    /// The comm of the record's thread.
    pub comm: &'r Comm,
}

/// Any other kernel record, in delivery order.
#[derive(Debug, Clone, Copy)]
pub struct Event<'r> {
    pub offset: u64,
    pub evsel: usize,
    pub record: Record<'r>,
    /// The record's `sample_id` trailer.
    pub id: SampleId,
    /// The record decoded, for the kinds the machine takes in.
    pub side_band: SideBand<'r>,
}

/// A record as perf's `-D` (`--dump-raw-trace`) shows it, at the moment
/// perf shows it: a user record (type 64 and up) as it is read, a kernel
/// record when it is delivered, before any filter (see [`Tool::dump`]).
#[derive(Debug, Clone, Copy)]
pub struct RawEvent<'r> {
    pub offset: u64,
    /// The file of a directory input the record is in (`offset` is within
    /// it): 0 for `data` and for any other input, then the `data.N` files
    /// in order.
    pub part: u32,
    /// The record, its trailing payload (tracing data) left out.
    pub record: Record<'r>,
    /// The event of a kernel record; `None` for a user record.
    pub evsel: Option<usize>,
    /// The sample's fields or the record's `sample_id`; for a user record
    /// all zero (perf shows a zeroed sample there).
    pub id: SampleId,
    pub sample: Option<&'r Sample<'r>>,
}

/// Side-band records, decoded.
#[derive(Debug, Clone, Copy)]
pub enum SideBand<'r> {
    Mmap(MmapRecord<'r>),
    Comm(CommRecord<'r>),
    Fork(TaskRecord),
    Exit(TaskRecord),
    Lost(LostRecord),
    /// A kind the session does not decode.
    Other,
}

/// The consumer of delivered events (perf's `struct perf_tool`).
pub trait Tool {
    /// A sample, filtered, with its callchain to show.
    fn sample(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()>;

    /// Whether the tool shows (or uses) the callchains of `attr`'s
    /// samples. Where it does not, the session leaves their user stacks as
    /// recorded: no DWARF unwinding, no LBR call stack (perf resolves a
    /// sample's callchain only where it prints the sample's ip).
    fn shows_callchain(&self, _attr: &Attr) -> bool {
        true
    }

    /// A sample was held for its deferred user callchain (callchains
    /// merged); it is delivered later with [`SampleEvent::held`] set. Held
    /// samples are not filtered yet.
    fn sample_held(&mut self, _cx: &mut Context<'_>, _ev: &HeldEvent<'_>) -> Result<()> {
        Ok(())
    }

    /// A record the session used up or skipped without delivering it as
    /// an event (see [`Why`]), in the order it did so.
    fn consumed(&mut self, _cx: &mut Context<'_>, _ev: &Consumed<'_>) -> Result<()> {
        Ok(())
    }

    /// A sample got as far as perf's `machine__resolve`: past the time and
    /// CPU filters, not yet past the comm, pid and tid filters (`-D` shows
    /// its thread and DSO there).
    fn resolved(&mut self, _cx: &mut Context<'_>, _ev: &SampleEvent<'_>) {}

    /// A deferred callchain record, when callchains are not merged
    /// (merged ones arrive inside their samples).
    fn deferred_callchain(&mut self, _cx: &mut Context<'_>, _ev: &DeferredEvent<'_>) -> Result<()> {
        Ok(())
    }

    /// Any other kernel record. The machine took it in before (an EXIT:
    /// after, so that the tool still sees the thread).
    fn record(&mut self, _cx: &mut Context<'_>, _ev: &Event<'_>) -> Result<()> {
        Ok(())
    }

    /// Every record, as `-D` shows it (see [`RawEvent`]): before the
    /// record is processed (a FINISHED_ROUND: before its round is
    /// delivered). Compressed records are not shown, the records in them
    /// are (with the compressed record's offset).
    fn dump(&mut self, _cx: &mut Context<'_>, _ev: &RawEvent<'_>) -> Result<()> {
        Ok(())
    }

    /// A FINISHED_ROUND record, when the session delivers records as they
    /// come (see `SessionOptions::unordered`).
    fn round(&mut self, _cx: &mut Context<'_>) -> Result<()> {
        Ok(())
    }

    /// An event was added by a HEADER_ATTR record (pipe mode). `Ok(true)`:
    /// the tool read the event's name as it stands, the one perf derives
    /// from the attr, which perf then keeps (`evsel__name` caches it): a
    /// HEADER_EVENT_DESC later in the pipe does not rename the event.
    fn attr_added(&mut self, _evlist: &Evlist, _idx: usize) -> Result<bool> {
        Ok(false)
    }

    /// Tracing data (HEADER_TRACING_DATA payload) arrived in the stream.
    fn tracing_data(&mut self, _data: &[u8]) {}

    /// A HEADER_FEATURE record (pipe mode) arrived, after the session
    /// stored its payload: feature id `bit` and its payload.
    fn feature(&mut self, _cx: &mut Context<'_>, _bit: u64, _payload: &[u8]) -> Result<()> {
        Ok(())
    }

    /// All records were delivered.
    fn finish(&mut self, _cx: &mut Context<'_>) -> Result<()> {
        Ok(())
    }

    /// The input has nothing more right now (a pipe whose writer pauses):
    /// what the tool has made of the events so far may go out.
    fn idle(&mut self, _cx: &mut Context<'_>) -> Result<()> {
        Ok(())
    }

    /// The records about to be delivered (queued, not yet in order; then,
    /// for input in memory, up to 65,536 records after
    /// them not shown before), as (event index, record bytes): a tool may
    /// prepare for them, but what it prints must not depend on it. The
    /// iterator is lazy: a tool that does not look costs nothing.
    fn lookahead(&mut self, _cx: &mut Context<'_>, _records: &mut dyn Iterator<Item = (usize, &[u8])>) {}
}

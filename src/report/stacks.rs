//! Samples as perf's scripting engine hands them to a Python script: the
//! callchain resolved into frames, the thread's comm, pid, tid, time and
//! event name.
//!
//! perf's `python_process_callchain` walks the callchain with
//! `thread__resolve_callchain` (the same walk `perf script` prints), so each
//! address becomes its inline frames, innermost first, then its symbol; a
//! frame has a symbol name only if the address resolved to one, and a DSO
//! name only if it fell in a map:
//!
//! ```text
//! callchain (leaf first)        frames handed on (leaf first)
//! PERF_CONTEXT_KERNEL           (a marker: the addresses after it are kernel ones)
//! ffffffff821ed4e6          ->  do_syscall_64           [kernel.kallsyms]
//! PERF_CONTEXT_USER
//! 401136                    ->  rotl (inlined)          /bin/cwork
//!                               mix64 (inlined)         /bin/cwork
//!                               fill_random             /bin/cwork
//! 7f0000001234              ->  (no symbol)             (no map)
//! ```
//!
//! The frames of an address depend only on its DSO and its address inside
//! the DSO, so they are resolved once per (DSO, address) and kept as
//! numbers into a [`FrameTable`]. Tracepoint samples are not handed on:
//! perf calls a script's `process_event` only for other events, and the
//! scripts here have no tracepoint handlers. With `--no-merge-callchains`
//! perf prints the deferred callchain records itself, as `perf script`
//! does, while the script runs: they go to perf script's printer.

use std::rc::Rc;
use std::sync::Arc;

use crate::error::Result;
use crate::fasthash::FastMap;
use crate::machine::{CpuMode, Dsos, Machine, Map};
use super::printed::Flush;
use crate::script::Script;
use perf_data::sample::context;
use crate::session::{Callchain, Context, DeferredEvent, SampleEvent, Tool};
use crate::symbols::Symbolizer;
use perf_data::attr::{event_type, sample_type};
use perf_data::evlist::Evlist;

/// A frame's number in its [`FrameTable`].
pub type FrameId = u32;

/// A frame: its symbol name (or none) and DSO name (or none, outside
/// every map).
type Frame = (Option<Arc<str>>, Option<Rc<str>>);

/// The distinct frames seen so far.
#[derive(Default)]
pub struct FrameTable {
    frames: Vec<Frame>,
    index: std::collections::HashMap<Frame, FrameId, foldhash::fast::RandomState>,
}

impl FrameTable {
    fn intern(&mut self, name: Option<Arc<str>>, dso: Option<Rc<str>>) -> FrameId {
        let next = self.frames.len() as FrameId;
        *self.index.entry((name.clone(), dso.clone())).or_insert_with(|| {
            self.frames.push((name, dso));
            next
        })
    }

    /// The symbol name (perf's `sym.name`), if the address resolved to one.
    pub fn name(&self, id: FrameId) -> Option<&str> {
        self.frames[id as usize].0.as_deref()
    }

    /// The DSO name (perf's `dso`), if the address was in a map.
    pub fn dso(&self, id: FrameId) -> Option<&str> {
        self.frames[id as usize].1.as_deref()
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

/// One sample as a script sees it.
#[derive(Debug, Clone, Copy)]
pub struct StackSample<'a> {
    /// `thread__comm_str` of the sample's thread.
    pub comm: &'a str,
    /// The sample's pid and tid as perf's Python engine hands them to a
    /// script: unsigned (`sample->pid` is a `u32`), so an idle CPU's -1 is
    /// 4294967295 (the comm, `:-1`, keeps the sign).
    pub pid: u32,
    pub tid: u32,
    /// Nanoseconds.
    pub time: u64,
    /// `evsel__name`.
    pub event: &'a str,
    /// perf's `callchain` list, leaf first; empty without a callchain.
    pub callchain: &'a [FrameId],
    /// The sample's own address resolved (perf's `symbol` and `dso`),
    /// when the consumer asked for it ([`StackSink::wants_ip_frame`]).
    pub ip_frame: Option<FrameId>,
}

/// A consumer of samples (a report).
pub trait StackSink {
    fn sample(&mut self, frames: &FrameTable, sample: &StackSample<'_>);

    /// Whether [`StackSample::ip_frame`] is needed (perf's `symbol` and
    /// `dso` keys: gecko uses them for samples without a callchain).
    fn wants_ip_frame(&self) -> bool {
        false
    }
}

/// The session tool that resolves samples into frames for a sink.
pub(super) struct Collector<'s> {
    pub symbolizer: Symbolizer,
    pub frames: FrameTable,
    sink: &'s mut dyn StackSink,
    max_stack: usize,
    hide_call_graph: bool,
    /// Frames of (DSO, DSO-relative address).
    resolved: FastMap<(u32, u64), Rc<[FrameId]>>,
    /// The frame of an address in no map.
    unmapped: Option<FrameId>,
    /// DSO names as the scripts see them, by DSO id (see
    /// [`Collector::dso_name`]).
    dso_names: Vec<Option<Rc<str>>>,
    chain: Vec<FrameId>,
    /// Event names by event index (pipe mode adds events as it goes).
    names: Vec<Rc<str>>,
    /// With `--no-merge-callchains`: perf script's printer, for the
    /// deferred callchain records perf prints while the script runs.
    pub printer: Option<Script>,
    /// Records given to the printer, and when perf's output was flushed
    /// (see [`super::printed`]).
    records: usize,
    pub flushes: Vec<Flush>,
}

impl<'s> Collector<'s> {
    pub fn new(symbolizer: Symbolizer, sink: &'s mut dyn StackSink, max_stack: usize, hide_call_graph: bool, printer: Option<Script>) -> Collector<'s> {
        Collector {
            symbolizer,
            frames: FrameTable::default(),
            sink,
            max_stack,
            hide_call_graph,
            resolved: FastMap::default(),
            unmapped: None,
            dso_names: Vec::new(),
            chain: Vec::new(),
            names: Vec::new(),
            printer,
            records: 0,
            flushes: Vec::new(),
        }
    }

    /// A DSO's name as perf's Python scripts take it: a string. perf 7.2
    /// crashes (SIGSEGV) running its report scripts on a recording whose
    /// DSO paths and comms are not UTF-8 (tests/golden/non-utf8), so there
    /// is no output of perf's to follow; pstitch shows such a name with
    /// U+FFFD, as it does the comm. Converted once per DSO.
    fn dso_name(&mut self, dsos: &Dsos, id: crate::machine::DsoId) -> Rc<str> {
        let i = id as usize;
        if self.dso_names.len() <= i {
            self.dso_names.resize(i + 1, None);
        }
        self.dso_names[i].get_or_insert_with(|| String::from_utf8_lossy(&dsos.get(id).name).into()).clone()
    }

    /// The frames of `ip` (resolved in `map`, or in no map).
    fn frames_of(&mut self, dsos: &Dsos, map: Option<&Map>, ip: u64, inline: bool) -> Rc<[FrameId]> {
        let Some(m) = map else {
            let id = *self.unmapped.get_or_insert_with(|| self.frames.intern(None, None));
            return Rc::from([id]);
        };
        let key = (m.dso, m.map_ip(ip));
        if let Some(f) = self.resolved.get(&key) {
            return f.clone();
        }
        let dso_name = self.dso_name(dsos, m.dso);
        let sym = self.symbolizer.find_symbol(dsos, m, ip);
        // The first lookup after a load that failed half-way answers for
        // itself only (see `Symbolizer::find_symbol`).
        let keep = !self.symbolizer.last_lookup_transient();
        let mut ids = Vec::new();
        if let Some(s) = &sym {
            if inline {
                for e in self.symbolizer.inlines(dsos, m, ip, s).iter() {
                    ids.push(self.frames.intern(Some(e.name.clone()), Some(dso_name.clone())));
                }
            }
            if ids.is_empty() {
                ids.push(self.frames.intern(Some(s.name.clone()), Some(dso_name)));
            }
        } else {
            ids.push(self.frames.intern(None, Some(dso_name)));
        }
        let ids: Rc<[FrameId]> = ids.into();
        if keep {
            self.resolved.insert(key, ids.clone());
        }
        ids
    }

    /// perf's `thread__resolve_callchain` as the scripting engine calls it:
    /// context markers switch the address space, at most `max` addresses
    /// are taken, and an unknown marker empties the chain.
    fn resolve_chain(&mut self, machine: &mut Machine, tid: i32, chain: impl Iterator<Item = u64> + Clone, max: usize) {
        self.chain.clear();
        let Some(entries) = crate::machine::callchain_entries(chain, max) else { return };
        let inline = self.symbolizer.config.inline;
        let mut last: Option<(CpuMode, Map)> = None;
        for (mode, ip) in entries {
            // Neighbouring addresses are mostly in the same map; a kernel
            // lookup may resize maps, so only user maps are reused.
            let map = match last {
                Some((CpuMode::User, m)) if mode == CpuMode::User && m.start <= ip && ip < m.end => Some(m),
                _ => self.symbolizer.find_map(machine, tid, mode, ip).ok(),
            };
            last = map.map(|m| (mode, m));
            let ids = self.frames_of(&machine.dsos, map.as_ref(), ip, inline);
            self.chain.extend_from_slice(&ids);
        }
    }

    fn event_name(&mut self, evlist: &perf_data::evlist::Evlist, evsel: usize) -> Rc<str> {
        while self.names.len() < evlist.evsels.len() {
            let i = self.names.len();
            self.names.push(evlist.evsels[i].name().into());
        }
        self.names.get(evsel).cloned().unwrap_or_else(|| "".into())
    }
}

impl Tool for Collector<'_> {
    fn deferred_callchain(&mut self, cx: &mut Context<'_>, ev: &DeferredEvent<'_>) -> Result<()> {
        if self.printer.is_none() {
            return Ok(());
        }
        // perf resolves the record's callchain to print it, which may
        // start an addr2line.
        if !self.hide_call_graph {
            let started = self.symbolizer.a2l_started();
            self.resolve_chain(cx.machine, ev.id.tid, ev.deferred.ips.iter(), self.max_stack);
            if self.symbolizer.a2l_started() != started {
                self.flushes.push(Flush::Inside(self.records));
            }
        }
        self.records += 1;
        match self.printer.as_mut() {
            Some(p) => p.deferred_callchain(cx, ev),
            None => Ok(()),
        }
    }

    fn attr_added(&mut self, evlist: &Evlist, idx: usize) -> Result<bool> {
        match self.printer.as_mut() {
            Some(p) => p.attr_added(evlist, idx),
            None => Ok(false),
        }
    }

    fn tracing_data(&mut self, data: &[u8]) {
        if let Some(p) = self.printer.as_mut() {
            p.tracing_data(data);
        }
    }

    fn sample(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        let attr = &cx.evlist.evsels[ev.evsel].attr;
        if attr.type_ == event_type::TRACEPOINT {
            return Ok(());
        }
        let with_callchain = !self.hide_call_graph && attr.samples(sample_type::CALLCHAIN);
        let s = ev.sample;
        let started = self.symbolizer.a2l_started();
        match ev.callchain {
            Some(Callchain::Merged(ips)) if with_callchain => self.resolve_chain(cx.machine, s.tid, ips.iter().copied(), self.max_stack),
            Some(Callchain::Recorded(c)) if with_callchain => self.resolve_chain(cx.machine, s.tid, c.iter(), self.max_stack),
            Some(Callchain::Split { recorded, user, .. }) if with_callchain => {
                // The kernel part cut at --max-stack, then the user frames,
                // cut already where perf cuts them.
                self.resolve_chain(cx.machine, s.tid, recorded.iter(), self.max_stack);
                let mut chain = std::mem::take(&mut self.chain);
                self.resolve_chain(cx.machine, s.tid, std::iter::once(context::USER).chain(user.iter().copied()), usize::MAX);
                chain.extend_from_slice(&self.chain);
                self.chain = chain;
            }
            _ => self.chain.clear(),
        }
        if self.printer.is_some() && self.symbolizer.a2l_started() != started {
            self.flushes.push(Flush::After(self.records));
        }
        let ip_frame = if self.sink.wants_ip_frame() {
            let mode = CpuMode::from_misc(ev.record.header.misc);
            let map = self.symbolizer.find_map(cx.machine, s.tid, mode, s.ip).ok();
            let (name, dso) = match map {
                Some(m) => {
                    let sym = self.symbolizer.find_symbol(&cx.machine.dsos, &m, s.ip);
                    (sym.map(|s| s.name), Some(self.dso_name(&cx.machine.dsos, m.dso)))
                }
                None => (None, None),
            };
            Some(self.frames.intern(name, dso))
        } else {
            None
        };
        let event = self.event_name(cx.evlist, ev.evsel);
        // perf's scripts take the comm as a Python string; one that is not
        // UTF-8 is shown with U+FFFD here.
        let comm = String::from_utf8_lossy(ev.comm);
        let sample = StackSample { comm: &comm, pid: s.pid.cast_unsigned(), tid: s.tid.cast_unsigned(), time: s.time, event: &event, callchain: &self.chain, ip_frame };
        self.sink.sample(&self.frames, &sample);
        Ok(())
    }
}

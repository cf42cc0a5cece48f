//! `pstitch script` as a library call: an opened input, the options as
//! values, an output; what happened comes back as a [`Report`].

use std::io::Write;

use super::{Script, ScriptOptions, header};
use crate::engine::Threads;
use crate::error::Error;
use crate::session::{Progress, Session, SessionOptions, Stats, StitchStats, UnwindStats};
use crate::unwind::UnwindOptions;
use crate::symbols::{SymbolConfig, Symbolizer};
use perf_data::Input;
use perf_data::attr::{flag, sample_type};
use perf_data::evlist::Evlist;
use perf_data::features::{Features, feat};

/// What `pstitch script` is asked, as values.
#[derive(Debug, Clone, Default)]
pub struct ScriptConfig {
    /// What to print of each event.
    pub output: ScriptOptions,
    /// Merging of deferred callchains, sample filters, memory bounds.
    pub session: SessionOptions,
    /// Where symbols come from and how they are shown.
    pub symbols: SymbolConfig,
    /// `--header`, `--header-only`.
    pub header: HeaderMode,
    /// `-I`: the features perf shows only in full.
    pub show_info: bool,
    /// `--time` as perf takes it (percentages are of the recording's
    /// span, which the input's header says).
    pub time: Option<String>,
    pub threads: Threads,
}

/// Whether the perf.data header is printed before the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeaderMode {
    #[default]
    None,
    /// `--header`: the header, then the samples.
    With,
    /// `--header-only`.
    Only,
}

/// Where the input came from, for messages and the header.
pub struct Source<'a> {
    /// How messages call the input.
    pub name: &'a str,
    /// The input's modification time (`--header` prints it).
    pub mtime: Option<i64>,
    /// Called every few thousand records and at the end.
    pub progress: Option<Box<dyn FnMut(Progress) + 'a>>,
    /// The process ends right after the run: what the run built (symbol
    /// tables, inline-frame state, caches: hundreds of thousands of
    /// allocations) is left to the exit instead of being freed one by one.
    pub process_exits: bool,
}

impl<'a> Source<'a> {
    pub fn named(name: &'a str) -> Source<'a> {
        Source { name, mtime: None, progress: None, process_exits: false }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything was read and printed (warnings may have been said), or
    /// the reader of the output went away (`| head`).
    Printed,
    /// An option's value is wrong for this input (a `-F` field its events
    /// lack, a `--time` perf rejects).
    Usage,
    /// The input could not be read completely: unreadable, refused as perf
    /// refuses it, or damaged (what came before the damage was printed);
    /// or the output could not be written.
    Failed,
}

/// What a run did and has to say.
#[derive(Debug)]
pub struct Report {
    pub outcome: Outcome,
    /// What pstitch says on stderr, in order, one line each.
    pub messages: Vec<String>,
    /// Records read, by kind.
    pub stats: Stats,
    /// What became of deferred callchains.
    pub stitch: StitchStats,
    /// What became of `--call-graph dwarf` samples.
    pub unwind: UnwindStats,
    /// CPU time of the reading side, and of the printing threads.
    pub reading_cpu: std::time::Duration,
    pub printing_cpu: std::time::Duration,
}

impl Report {
    pub(crate) fn stop(outcome: Outcome, messages: Vec<String>) -> Report {
        Report {
            outcome,
            messages,
            stats: Stats::default(),
            stitch: StitchStats::default(),
            unwind: UnwindStats::default(),
            reading_cpu: Default::default(),
            printing_cpu: Default::default(),
        }
    }
}

/// A value freed when it goes out of scope, unless the process is about
/// to exit: then the exit takes it back whole. (A script's threads wait for
/// input that will not come; the exit ends them.)
struct KeepAtExit<T> {
    value: Option<T>,
    exiting: bool,
}

impl<T> Drop for KeepAtExit<T> {
    fn drop(&mut self) {
        if self.exiting {
            std::mem::forget(self.value.take());
        }
    }
}

impl<T> std::ops::Deref for KeepAtExit<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("taken only when dropped")
    }
}

impl<T> std::ops::DerefMut for KeepAtExit<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("taken only when dropped")
    }
}

/// Prints `input` as `perf script` does, to `out`. Never panics on any
/// input.
pub fn run<W: Write + Send + 'static>(mut input: Input, source: Source<'_>, config: ScriptConfig, mut out: W) -> Report {
    let ScriptConfig { output, session: mut session_opts, symbols, header: header_mode, show_info, time, threads } = config;
    let name = source.name;
    let mut messages = Vec::new();
    let (evlist, features, warnings) = input.take_header();
    if header_mode != HeaderMode::None {
        let mut text = Vec::new();
        match input.info.as_ref() {
            Some(info) => {
                let pmus = header::Pmus::system();
                for w in header::print_file_info(&mut text, source.mtime, &info.header, &features, &evlist, show_info, &pmus) {
                    messages.push(format!("pstitch: {name}: warning: {w}"));
                }
            }
            None => header::print_pipe_info(&mut text, source.mtime),
        }
        match out.write_all(&text).and_then(|_| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Report::stop(Outcome::Printed, messages),
            Err(e) => {
                messages.push(format!("pstitch: writing output: {e}"));
                return Report::stop(Outcome::Failed, messages);
            }
        }
        if header_mode == HeaderMode::Only {
            return Report::stop(Outcome::Printed, messages);
        }
    }
    if let Err((outcome, m)) = check_filters(time.as_deref(), &input, &features, &evlist, &mut session_opts) {
        messages.push(m);
        return Report::stop(outcome, messages);
    }
    for w in &warnings {
        messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    // perf unwinds --call-graph dwarf samples when it prints their
    // callchain.
    if session_opts.unwind.is_none() && !output.hide_call_graph {
        session_opts.unwind = Some(UnwindOptions { max_stack: output.max_stack, files: symbols.clone() });
    }
    let mut symbolizer = Symbolizer::new(symbols);
    symbolizer.set_build_ids(features.build_ids());
    if threads == Threads::Parallel && evlist.evsels.iter().any(|e| !e.attr.has(flag::EXCLUDE_KERNEL)) {
        symbolizer.read_kallsyms_ahead();
    }
    let mut script = KeepAtExit { value: Some(Script::new(output, symbolizer, out, threads)), exiting: source.process_exits };
    let pipe = input.pipe;
    if !pipe {
        if let Some(td) = features.get(feat::TRACING_DATA)
            && let Err(e) = script.load_tracing_data(td, false)
        {
            messages.push(format!("pstitch: {name}: tracing data: {e}"));
        }
        if let Err(e) = script.check_tracepoint_formats(&evlist) {
            messages.push(e);
            return Report::stop(Outcome::Failed, messages);
        }
        if let Err(e) = script.check_output(&evlist, features.get(feat::CLOCK_DATA).is_some()) {
            messages.push(e.0);
            return Report::stop(Outcome::Usage, messages);
        }
    }
    if pipe && (header_mode != HeaderMode::None || show_info) {
        // perf prints pipe-mode features as they arrive.
        script.print_features(header::FeatureStream::new(show_info, header::Pmus::system()));
    }
    let mut session = Session::new(input.records(), evlist, features, pipe, session_opts);
    if let Some(p) = source.progress {
        session.set_progress(p);
    }
    let result = session.run(&mut *script);
    let flushed = script.flush();
    let stats = session.stats.clone();
    let stitch = session.stitch_stats();
    let unwind = session.unwind_stats();
    let (reading_cpu, printing_cpu) = (crate::engine::thread_cpu(), script.printer_cpu());
    let report = |outcome, messages| Report { outcome, messages, stats, stitch, unwind, reading_cpu, printing_cpu };
    // `pstitch script ... | head`: the reader has gone, so has our audience.
    if result.as_ref().is_err_and(Error::is_broken_pipe) || flushed.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        return report(Outcome::Printed, messages);
    }
    session_messages(name, &session, std::mem::take(&mut script.warnings), &mut messages);
    let mut outcome = Outcome::Printed;
    if let Err(e) = flushed {
        messages.push(format!("pstitch: writing output: {e}"));
        outcome = Outcome::Failed;
    } else if let Err(e) = result {
        messages.push(format!("pstitch: {name}: {e}"));
        outcome = Outcome::Failed;
    }
    report(outcome, messages)
}

/// perf's checks of the sample filters against the input before reading:
/// `--time` (percentages need the span the recording stored) and `-C`
/// (every event type needs CPU in its samples). Sets the time ranges in
/// `opts`; `Err` with how the run ends and what to say.
pub(crate) fn check_filters(time: Option<&str>, input: &Input, features: &Features, evlist: &Evlist, opts: &mut SessionOptions) -> std::result::Result<(), (Outcome, String)> {
    if let Some(t) = time {
        // Percentages are of the span perf record stored in SAMPLE_TIME.
        let (first, last) = features
            .get(feat::SAMPLE_TIME)
            .and_then(|b| Some((input.endian.read_u64(b, 0)?, input.endian.read_u64(b, 8)?)))
            .unwrap_or((0, 0));
        if t.contains('%') && first == 0 && last == 0 {
            return Err((Outcome::Usage, "HINT: no first/last sample time found in perf data.".to_string()));
        }
        opts.filter.time = crate::session::filter::parse_time(t, first, last).map_err(|e| (Outcome::Usage, e))?;
    }
    if opts.filter.cpus.is_some() {
        // perf requires CPU in the first event of every type.
        let mut seen = std::collections::BTreeSet::new();
        let lacking = evlist.evsels.iter().filter(|e| seen.insert(e.attr.type_)).any(|e| !e.attr.samples(sample_type::CPU));
        if lacking {
            return Err((Outcome::Failed, "File does not contain CPU events. Remove -C option to proceed.".to_string()));
        }
    }
    Ok(())
}

/// What a finished session has to say: the tool's warnings and the
/// session's, lost events, forks without maps, deferred callchains left
/// unmerged.
pub(crate) fn session_messages(name: &str, session: &Session<'_>, tool_warnings: Vec<String>, messages: &mut Vec<String>) {
    let stitch = session.stitch_stats();
    for w in tool_warnings.into_iter().chain(session.warnings.messages()) {
        messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    let st = &session.stats;
    if st.nr_lost_records > 0 {
        messages.push(format!(
            "pstitch: {name}: warning: {} PERF_RECORD_LOST records: {} events were lost (the ring buffer overflowed; check IO/CPU overload)",
            st.nr_lost_records, st.lost_events
        ));
    }
    if st.lost_samples > 0 {
        messages.push(format!("pstitch: {name}: warning: {} samples were lost (PERF_RECORD_LOST_SAMPLES)", st.lost_samples));
    }
    let m = &session.machine;
    if m.forks_without_maps > 0 {
        messages.push(format!(
            "pstitch: {name}: warning: {} forked processes did not inherit their parent's maps: {} map entries had been copied already (the limit)",
            m.forks_without_maps, m.fork_maps_copied
        ));
    }
    if stitch.flushed + stitch.unmerged + stitch.unmatched_records > 0 {
        messages.push(format!(
            "pstitch: {name}: deferred callchains: {} of {} held samples merged, {} delivered unmerged (another cookie came first), {} unstitched at end of input; {} of {} deferred records matched no sample",
            stitch.merged, stitch.held, stitch.unmerged, stitch.flushed, stitch.unmatched_records, stitch.deferred_records
        ));
    }
    if let Some(m) = unwind_message(&session.unwind_stats()) {
        messages.push(format!("pstitch: {name}: warning: {m}"));
    }
}

/// What pstitch says about `--call-graph dwarf` samples it could not
/// unwind, or not completely (perf prints them the same way, silently).
fn unwind_message(u: &UnwindStats) -> Option<String> {
    let names = |set: &std::collections::BTreeSet<String>| {
        let list: Vec<&str> = set.iter().map(String::as_str).collect();
        list.join(", ")
    };
    let mut parts = Vec::new();
    let none = u.without_user_frames();
    if none > 0 {
        let mut why = Vec::new();
        if u.empty_stack > 0 {
            why.push(format!("{} with an empty user stack copy", u.empty_stack));
        }
        if u.no_object > 0 {
            why.push(format!("{} taken in a map without an object file to read CFI from", u.no_object));
        }
        if u.unsupported > 0 {
            why.push(format!("{} of an architecture or register ABI pstitch does not unwind", u.unsupported));
        }
        parts.push(format!("{none} of {} samples have no user frames ({})", u.samples, why.join(", ")));
    }
    if u.cut_at_no_object > 0 {
        parts.push(format!("{} samples' user frames stop at a return address into a map without an object file", u.cut_at_no_object));
    }
    if !u.missing_objects.is_empty() {
        parts.push(format!("maps without an object file: {}", names(&u.missing_objects)));
    }
    if u.through_no_cfi > 0 {
        parts.push(format!(
            "{} samples were unwound through objects without CFI (.eh_frame, .debug_frame), by frame pointers: {}",
            u.through_no_cfi,
            names(&u.objects_without_cfi)
        ));
    }
    (!parts.is_empty()).then(|| format!("--call-graph dwarf: {}", parts.join("; ")))
}

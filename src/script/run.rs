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
    /// `-C`, `--pid`, `--tid`, `--comms` as given: perf reads them once
    /// the input is open (a CPU list is checked against the recording's
    /// CPUs). They add to `session.filter`.
    pub cpu_list: Option<String>,
    pub pid_list: Option<String>,
    pub tid_list: Option<String>,
    /// `--comms` as bytes (a comm need not be UTF-8).
    pub comm_list: Option<Vec<u8>>,
    /// `--switch-on`, `--switch-off`: event names.
    pub switch_on: Option<String>,
    pub switch_off: Option<String>,
    /// `--stitch-lbr` (perf warns when the recording has no LBR callchains).
    pub stitch_lbr: bool,
    /// `-D`, `--dump-unsorted-raw-trace`.
    pub dump: super::Dump,
    /// `--per-event-dump`: each event's lines go to `<input>.<event>.dump`.
    pub per_event_dump: bool,
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
    /// The input's path (`--per-event-dump` names its files after it).
    pub path: Option<&'a std::path::Path>,
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
        Source { name, path: None, mtime: None, progress: None, process_exits: false }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything was read and printed (warnings may have been said), or
    /// the reader of the output went away (`| head`).
    Printed,
    /// perf's -EINVAL: an option's value does not fit this input (a
    /// `--time` perf rejects).
    Invalid,
    /// perf's -1: the input could not be read completely (unreadable,
    /// refused as perf refuses it, or damaged: what came before the damage
    /// was printed), an option does not fit it (a `-F` field its events
    /// lack, a CPU it does not have), or the output could not be written.
    Failed,
    /// perf's -ENOENT: an event named by `--switch-on`/`--switch-off` is
    /// not in the recording.
    NotFound,
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
    /// What became of `--call-graph dwarf` user stacks.
    pub unwind: UnwindStats,
    /// CPU time of the reading side, and of the printing threads.
    pub reading_cpu: std::time::Duration,
    pub printing_cpu: std::time::Duration,
    /// Samples printed.
    pub samples: u64,
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
            samples: 0,
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
pub fn run<W: Write + Send + 'static>(mut input: Input, source: Source<'_>, config: ScriptConfig, out: W) -> Report {
    match source.path {
        Some(path) if config.per_event_dump && input.pipe && config.header != HeaderMode::Only => {
            per_event_dump_pipe(input, path, source, config, out)
        }
        Some(path) if config.per_event_dump && config.header != HeaderMode::Only => {
            let (evlist, features, _) = input.take_header();
            let names = evlist.evsels.iter().map(|ev| ev.name.clone().unwrap_or_else(|| ev.name())).collect();
            if let Some(info) = input.info.as_mut() {
                info.evlist = evlist;
                info.features = features;
            }
            let files = DumpFiles { read: path, named: path.display().to_string(), names };
            per_event_dump(Some(input), files, source, config, out)
        }
        _ => run_once(input, source, config, out),
    }
}

/// What `--per-event-dump` reads and names its files after.
struct DumpFiles<'a> {
    /// The input to read once per event (and once more for the rest if
    /// the caller's input is not given).
    read: &'a std::path::Path,
    /// The input's name in the files' names (perf's `data->file.path`).
    named: String,
    /// The events' names, in the session's order.
    names: Vec<String>,
}

/// `--per-event-dump` on a pipe-mode input: perf creates each event's file
/// as its ATTR record arrives, named after the event's name at that point
/// (the name its attr gives: an EVENT_UPDATE comes later) and after the
/// input's path, `(null)` for standard input. A stream (standard input, a
/// FIFO) is copied to a temporary file first, removed at the end, so that
/// it can be read once per event as a file is.
fn per_event_dump_pipe<W: Write + Send + 'static>(mut input: Input, path: &std::path::Path, source: Source<'_>, config: ScriptConfig, out: W) -> Report {
    let fail = |e: String| Report::stop(Outcome::Failed, vec![format!("pstitch: {}: {e}", source.name)]);
    let named = if path == std::path::Path::new("-") { "(null)".to_string() } else { path.display().to_string() };
    let spool = match Spool::new() {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot make a temporary copy of the input: {e}")),
    };
    let copied = std::fs::OpenOptions::new().write(true).open(&spool.0).map_err(perf_data::Error::Io).and_then(|mut f| input.spool(&mut f));
    let read = match copied {
        Ok(0) => path,
        Ok(_) => spool.0.as_path(),
        Err(e) => return fail(e.to_string()),
    };
    let names = match pipe_event_names(read, config.threads) {
        Ok(n) => n,
        Err(e) => return fail(e.to_string()),
    };
    let rest = (read == path).then_some(input);
    per_event_dump(rest, DumpFiles { read, named, names }, source, config, out)
}

/// A temporary file, removed when dropped.
struct Spool(std::path::PathBuf);

impl Spool {
    fn new() -> std::io::Result<Spool> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!("pstitch-per-event-{}-{nanos}.data", std::process::id()));
        std::fs::OpenOptions::new().write(true).create_new(true).open(&p)?;
        Ok(Spool(p))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The names a pipe-mode input's events have when their ATTR records
/// arrive (perf's `evsel__name` of an attr without a name), in order. A
/// record that cannot be read ends the list (the passes report it).
fn pipe_event_names(path: &std::path::Path, threads: crate::engine::Threads) -> perf_data::Result<Vec<String>> {
    let mut input = crate::engine::open_input(path, threads)?;
    let endian = input.endian;
    let mut records = input.records();
    let mut names = Vec::new();
    while let Ok(Some(r)) = records.next_record() {
        if r.header.type_ == perf_data::record::kind::HEADER_ATTR
            && let Some(attr) = r.bytes.get(perf_data::record::HEADER_SIZE..).and_then(|b| perf_data::attr::Attr::parse(b, endian))
        {
            names.push(perf_data::evlist::default_name(&attr));
        }
    }
    Ok(names)
}

/// `--per-event-dump`: perf writes each event's samples to
/// `<input>.<event>.dump` (all files are created first; one that cannot be
/// ends the run) and everything else to `out`, followed by a line per file
/// (`[ perf script: Wrote 0.059 MB perf.data.cpu-clock:u.dump (273 samples) ]`).
/// pstitch reads the input once per event, then once for the rest.
/// `input`: the input for the last pass (`None`: `files.read` is read
/// again).
fn per_event_dump<W: Write + Send + 'static>(input: Option<Input>, files: DumpFiles<'_>, source: Source<'_>, config: ScriptConfig, out: W) -> Report {
    let DumpFiles { read: path, named, names } = files;
    let mut files = Vec::new();
    for name in names {
        let file_name = format!("{named}.{name}.dump");
        match std::fs::File::create(&file_name) {
            Ok(f) => files.push((file_name, f)),
            Err(_) => return Report::stop(Outcome::Failed, vec!["Couldn't create the per event dump files".into()]),
        }
    }
    let mut trailer = String::new();
    for (i, (file_name, file)) in files.into_iter().enumerate() {
        let pass_input = match crate::engine::open_input(path, config.threads) {
            Ok(i) => i,
            Err(e) => return Report::stop(Outcome::Failed, vec![format!("pstitch: {}: {e}", source.name)]),
        };
        let mut pass = config.clone();
        pass.per_event_dump = false;
        pass.output.per_event = super::PerEvent::Samples(i);
        let src = Source { name: source.name, path: Some(path), mtime: source.mtime, progress: None, process_exits: false };
        let written = run_once(pass_input, src, pass, file);
        if written.outcome != Outcome::Printed {
            return written;
        }
        // perf fstat()s the file before its stdio buffer (of st_blksize
        // bytes) is flushed: what the last buffer holds is not counted.
        let size = std::fs::metadata(&file_name).map_or(0, |m| {
            use std::os::unix::fs::MetadataExt;
            let block = if m.blksize() > 0 { m.blksize() } else { 8192 };
            m.len() / block * block
        });
        trailer += &format!("[ perf script: Wrote {:.3} MB {file_name} ({} samples) ]\n", size as f64 / 1024.0 / 1024.0, written.samples);
    }
    let mut rest = config;
    rest.per_event_dump = false;
    rest.output.per_event = super::PerEvent::Others { trailer };
    let input = match input {
        Some(i) => i,
        None => match crate::engine::open_input(path, rest.threads) {
            Ok(i) => i,
            Err(e) => return Report::stop(Outcome::Failed, vec![format!("pstitch: {}: {e}", source.name)]),
        },
    };
    run_once(input, source, rest, out)
}

fn run_once<W: Write + Send + 'static>(mut input: Input, source: Source<'_>, config: ScriptConfig, mut out: W) -> Report {
    let ScriptConfig {
        output,
        session: mut session_opts,
        symbols,
        header: header_mode,
        show_info,
        time,
        cpu_list,
        pid_list,
        tid_list,
        comm_list,
        switch_on,
        switch_off,
        stitch_lbr,
        dump,
        per_event_dump: _,
        threads,
    } = config;
    let name = source.name;
    let show_on_off = output.show_on_off_events;
    let show_lost_events = output.show_lost_events;
    let mut messages = Vec::new();
    let (evlist, features, warnings) = input.take_header();
    if header_mode != HeaderMode::None {
        let mut text = Vec::new();
        match input.info.as_ref() {
            Some(info) => {
                let pmus = header::Pmus::system();
                for w in header::print_file_info(&mut text, source.mtime, &info.header, &features, &evlist, show_info, &pmus, input.is_dir()) {
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
    for w in &warnings {
        messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    let lbr_recorded = evlist.evsels.iter().any(|e| e.attr.samples(sample_type::BRANCH_STACK));
    if stitch_lbr && !lbr_recorded {
        messages.push("Can't find LBR callchain. Switch off --stitch-lbr.".to_string());
        messages.push("Please apply --call-graph lbr when recording.".to_string());
    }
    let lists = FilterLists { time: None, cpu: cpu_list.as_deref(), pid: pid_list.as_deref(), tid: tid_list.as_deref(), comm: comm_list.as_deref() };
    if let Err(outcome) = list_filters(&lists, &evlist, &features, &mut session_opts, &mut messages) {
        return Report::stop(outcome, messages);
    }
    user_callchains_where_shown(&mut session_opts, &output, &symbols);
    let symbolizer = symbolizer(symbols, &features, &evlist, threads);
    let mut script = KeepAtExit { value: Some(Script::new(output, symbolizer, out, threads)), exiting: source.process_exits };
    if stitch_lbr && lbr_recorded {
        script.stitching = super::stitch::LbrStitching::new(super::brcntr::max_branches(&evlist, &features));
    }
    let pipe = input.pipe;
    if dump != super::Dump::None {
        // perf names a pipe's records `pipe`, whatever the input's name.
        // A directory's records are named by their file (`perf.data/data.1`).
        script.dump = Some(match input.part_names() {
            _ if pipe => vec!["pipe".into()],
            [] => vec![name.into()],
            parts => parts.iter().map(|p| format!("{name}/{p}").into()).collect(),
        });
        script.dump_unordered = dump == super::Dump::Unsorted;
    }
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
        if let Err(e) = script.check_output(&evlist, &features) {
            messages.push(e.0);
            return Report::stop(Outcome::Failed, messages);
        }
    }
    if let Some(t) = &time
        && let Err(outcome) = time_filter(t, &input, &features, &mut session_opts, &mut messages)
    {
        return Report::stop(outcome, messages);
    }
    if pipe && (header_mode != HeaderMode::None || show_info) {
        // perf prints pipe-mode features as they arrive.
        script.print_features(header::FeatureStream::new(show_info, header::Pmus::system()));
    }
    if switch_on.is_some() || switch_off.is_some() {
        // perf's evswitch__init: the events are found by name.
        let find = |which: &str, name: &Option<String>, messages: &mut Vec<String>| -> Result<Option<usize>, ()> {
            let Some(name) = name else { return Ok(None) };
            match evlist.evsels.iter().position(|e| script.event_name(e) == *name) {
                Some(i) => Ok(Some(i)),
                None => {
                    messages.push(format!("ERROR: switch-{which} event not found ({name})"));
                    messages.push("HINT:  use 'perf evlist' to see the available event names".to_string());
                    Err(())
                }
            }
        };
        let on = find("on", &switch_on, &mut messages);
        let off = if on.is_ok() { find("off", &switch_off, &mut messages) } else { Ok(None) };
        match (on, off) {
            (Ok(on), Ok(off)) => script.set_evswitch(super::EvSwitch::new(on, off, show_on_off)),
            _ => return Report::stop(Outcome::NotFound, messages),
        }
    }
    let mut session = Session::new(input.records(), evlist, features, pipe, session_opts);
    if let Some(p) = source.progress {
        session.set_progress(p);
    }
    let result = session.run(&mut *script);
    let flushed = script.flush();
    let stats = session.stats.clone();
    let stitch = session.stitch_stats();
    let (reading_cpu, printing_cpu) = (crate::engine::thread_cpu(), script.printer_cpu());
    let unwind = session.unwind_stats();
    let samples = script.samples_printed;
    let report = |outcome, messages| Report { outcome, messages, stats, stitch, unwind, reading_cpu, printing_cpu, samples };
    // `pstitch script ... | head`: the reader has gone, so has our audience.
    if result.as_ref().is_err_and(Error::is_broken_pipe) || flushed.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        return report(Outcome::Printed, messages);
    }
    messages.append(&mut script.said);
    session_messages(name, &session, std::mem::take(&mut script.warnings), show_lost_events, &mut messages);
    let mut outcome = Outcome::Printed;
    if let Err(e) = flushed {
        messages.push(format!("pstitch: writing output: {e}"));
        outcome = Outcome::Failed;
    } else if let Err(e) = result {
        // Options that do not fit an event announced in a pipe: perf's
        // words, and its status (-EINVAL).
        if let Error::Options(m) = e {
            messages.push(m);
            outcome = Outcome::Invalid;
        } else {
            messages.push(format!("pstitch: {name}: {e}"));
            outcome = Outcome::Failed;
        }
    }
    report(outcome, messages)
}

/// perf finds the user callchains of `--call-graph dwarf` and
/// `--call-graph lbr` samples wherever it shows their callchain (printed,
/// or handed to its scripts): unwound with the files symbols come from, or
/// taken from the LBR call stack; with `--max-stack`.
pub(crate) fn user_callchains_where_shown(opts: &mut SessionOptions, output: &ScriptOptions, symbols: &SymbolConfig) {
    if output.hide_call_graph {
        return;
    }
    if opts.unwind.is_none() {
        opts.unwind = Some(UnwindOptions { max_stack: output.max_stack, files: symbols.clone(), styles: output.unwind_styles });
    }
    opts.lbr_max_stack.get_or_insert(output.max_stack);
}

/// The symbolizer of a run: the input's build-ids, and kallsyms read ahead
/// on another thread when kernel samples will need it.
pub(crate) fn symbolizer(symbols: SymbolConfig, features: &Features, evlist: &Evlist, threads: Threads) -> Symbolizer {
    let mut symbolizer = Symbolizer::new(symbols);
    symbolizer.set_build_ids(features.build_ids());
    if threads == Threads::Parallel && evlist.evsels.iter().any(|e| !e.attr.has(flag::EXCLUDE_KERNEL)) {
        symbolizer.read_kallsyms_ahead();
    }
    symbolizer
}

/// perf's MAX_NR_CPUS.
const MAX_NR_CPUS: u32 = 4096;

/// perf's `perf_session__cpu_bitmap`: `-C` needs CPU in the samples of the
/// first event of every kernel event type, a valid list (libperf's
/// `perf_cpu_map__new`), and CPUs the recording had. `None` once the
/// reason was said.
fn cpu_bitmap(evlist: &Evlist, features: &Features, list: &str, messages: &mut Vec<String>) -> Option<std::collections::BTreeSet<u32>> {
    const PERF_TYPE_MAX: u32 = 6;
    let mut seen = std::collections::BTreeSet::new();
    let lacking = evlist.evsels.iter().filter(|e| e.attr.type_ < PERF_TYPE_MAX && seen.insert(e.attr.type_)).any(|e| !e.attr.samples(sample_type::CPU));
    if lacking {
        messages.push("File does not contain CPU events. Remove -C option to proceed.".to_string());
        return None;
    }
    let cpus = match crate::session::filter::parse_cpu_map(list) {
        Ok(c) => c,
        Err(warning) => {
            messages.extend(warning);
            messages.push("Invalid cpu_list".to_string());
            return None;
        }
    };
    let nr_cpus = features.nr_cpus().map_or(0, |(_, avail)| avail).min(MAX_NR_CPUS);
    if cpus.warned {
        messages.push(format!("Perf can support {MAX_NR_CPUS} CPUs. Consider raising MAX_NR_CPUS"));
    }
    if let Some(&too_large) = cpus.cpus.iter().find(|&&c| c >= nr_cpus) {
        messages.push(format!("Requested CPU {too_large} too large. Consider raising MAX_NR_CPUS"));
        return None;
    }
    Some(cpus.cpus.into_iter().collect())
}

/// What a finished session has to say: the tool's warnings and the
/// session's, lost events, forks without maps, deferred callchains left
/// unmerged.
///
/// `show_lost_events`: the LOST records were printed (`--show-lost-events`),
/// so perf's warning about them is not given.
pub(crate) fn session_messages(
    name: &str,
    session: &Session<'_>,
    tool_warnings: Vec<String>,
    show_lost_events: bool,
    messages: &mut Vec<String>,
) {
    let stitch = session.stitch_stats();
    for w in tool_warnings.into_iter().chain(session.warnings.messages()) {
        messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    messages.extend(session.perf_says.iter().cloned());
    if session.perf_says_dropped > 0 {
        messages.push(format!("pstitch: {name}: warning: {} more of perf's warnings (as above) not shown", session.perf_says_dropped));
    }
    let st = &session.stats;
    if st.nr_lost_records > 0 && !show_lost_events {
        // perf's words (perf_session__warn_about_errors): every record it
        // processed, user records and compressed chunks' contents included,
        // and the PERF_RECORD_LOST records among them ("chunks").
        messages.push(format!(
            "Warning:\nProcessed {} events and lost {} chunks!\n\nCheck IO/CPU overload!\n",
            st.nr_processed(),
            st.nr_lost_records
        ));
    }
    if let Some(w) = lost_samples_warning(st.by_type.count(perf_data::record::kind::SAMPLE), st.lost_samples) {
        messages.push(w);
    }
    // perf_session__warn_order: not for backward ring buffers, whose
    // records come out of order by design.
    let backward = session.evlist.evsels.iter().any(|e| e.attr.has(perf_data::attr::flag::WRITE_BACKWARD));
    if st.nr_unordered > 0 && !backward {
        messages.push(format!("Warning:\n{} out of order events recorded.", st.nr_unordered));
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

/// perf's warning about PERF_RECORD_LOST_SAMPLES (perf_session__warn_about_errors):
/// given when more than 5% of the samples (those read and those the records
/// say were lost) were lost; perf says nothing below that.
fn lost_samples_warning(samples: u64, lost: u64) -> Option<String> {
    let all = samples.saturating_add(lost);
    let rate = lost as f64 / all as f64;
    (lost > 0 && rate > 0.05).then(|| format!("Warning:\nProcessed {all} samples and lost {:3.2}%!\n", rate * 100.0))
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

/// The sample filters' lists as given (`--time`, `-C`, `--pid`, `--tid`,
/// `--comms`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FilterLists<'c> {
    pub time: Option<&'c str>,
    pub cpu: Option<&'c str>,
    pub pid: Option<&'c str>,
    pub tid: Option<&'c str>,
    pub comm: Option<&'c [u8]>,
}

/// perf's checks and settings of the sample filters before reading, for
/// the report commands as for `pstitch script`; `Err` with how the run
/// ends (`messages` says why).
pub(crate) fn apply_filters(
    lists: &FilterLists<'_>,
    input: &Input,
    features: &Features,
    evlist: &Evlist,
    opts: &mut SessionOptions,
    messages: &mut Vec<String>,
) -> std::result::Result<(), Outcome> {
    list_filters(lists, evlist, features, opts, messages)?;
    match lists.time {
        Some(t) => time_filter(t, input, features, opts, messages),
        None => Ok(()),
    }
}

/// perf's symbol__init: the thread lists (a bad one ends the run quietly,
/// successfully, with nothing printed), the comm list, and the CPU list
/// against the recording.
fn list_filters(lists: &FilterLists<'_>, evlist: &Evlist, features: &Features, opts: &mut SessionOptions, messages: &mut Vec<String>) -> std::result::Result<(), Outcome> {
    let filter = &mut opts.filter;
    for (list, what, set) in [(lists.pid, "pid", &mut filter.pids), (lists.tid, "tid", &mut filter.tids)] {
        if let Some(l) = list {
            match crate::session::filter::parse_int_list(l) {
                Ok(ids) => *set = Some(ids),
                Err(_) => {
                    messages.push(format!("problems parsing {what} list"));
                    return Err(Outcome::Printed);
                }
            }
        }
    }
    if let Some(c) = lists.comm {
        filter.comms = Some(crate::session::filter::parse_list(c));
    }
    if let Some(list) = lists.cpu {
        match cpu_bitmap(evlist, features, list, messages) {
            Some(cpus) => opts.filter.cpus = Some(cpus),
            None => return Err(Outcome::Failed),
        }
    }
    Ok(())
}

/// `--time`: percentages are of the span perf record stored in SAMPLE_TIME.
fn time_filter(t: &str, input: &Input, features: &Features, opts: &mut SessionOptions, messages: &mut Vec<String>) -> std::result::Result<(), Outcome> {
    let (first, last) = features
        .get(feat::SAMPLE_TIME)
        .and_then(|b| Some((input.endian.read_u64(b, 0)?, input.endian.read_u64(b, 8)?)))
        .unwrap_or((0, 0));
    if t.contains('%') && first == 0 && last == 0 {
        messages.push("HINT: no first/last sample time found in perf data.".to_string());
        messages.push("Please use latest perf binary to execute 'perf record'".to_string());
        messages.push("(if '--buildid-all' is enabled, please set '--timestamp-boundary').".to_string());
        return Err(Outcome::Invalid);
    }
    match crate::session::filter::parse_time(t, first, last) {
        Ok(r) => {
            opts.filter.time = r;
            Ok(())
        }
        Err(e) => {
            messages.push(e);
            Err(Outcome::Invalid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_samples_are_warned_about_past_five_percent_as_perf_does() {
        assert_eq!(lost_samples_warning(444, 100).as_deref(), Some("Warning:\nProcessed 544 samples and lost 18.38%!\n"));
        assert_eq!(lost_samples_warning(950, 50), None);
        assert_eq!(lost_samples_warning(0, 0), None);
    }
}

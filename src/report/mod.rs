//! perf's report scripts without Python, and flame graphs: tools that take
//! the samples of a session, symbolized as `pstitch script` shows them,
//! and make a picture of where the time went.
//!
//! ```text
//! session --samples--> Collector (stacks.rs): callchain -> frames, cached per (DSO, address)
//!                         |  StackSample: comm, pid, tid, time, event, frames
//!                         v
//!          one StackSink:  Folded   (folded.rs)  perf's stackcollapse.py; inferno's SVG (svg.rs)
//!                          D3Tree   (d3.rs)      perf's flamegraph.py (stacks.json, HTML)
//!                          Gecko    (gecko.rs)   perf's gecko.py (Firefox Profiler JSON)
//! ```
//!
//! The scripts see what perf's Python engine hands them
//! (`python_process_callchain`): the same callchain walk `perf script`
//! prints, inline frames included, with a symbol name only where one was
//! found. Their outputs are reproduced exactly: line for line (folded
//! stacks) or byte for byte as Python's `json` writes them.

mod d3;
mod folded;
mod gecko;
mod json;
mod printed;
mod stacks;
mod svg;

pub use d3::{D3Tree, DEFAULT_TEMPLATE, MINIMAL_HTML};
pub use folded::{FoldOptions, Folded};
pub use gecko::{COLORS as GECKO_COLORS, Gecko, GeckoOptions};
pub use printed::Printed;
pub use stacks::{FrameId, FrameTable, StackSample, StackSink};
pub use svg::{SvgOptions, write_svg};

use crate::engine::Threads;
use crate::error::Error;
use crate::script::{Outcome, Report, Script, ScriptConfig, ScriptOptions, Source};
use crate::session::{Session, SessionOptions};
use crate::symbols::{SymbolConfig, Symbolizer};
use std::io::Write;

use perf_data::Input;
use perf_data::attr::event_type;
use perf_data::features::feat;

/// What the report tools are asked: the perf script options that shape
/// the samples they see.
#[derive(Debug, Clone, Default)]
pub struct StacksConfig {
    /// Merging of deferred callchains, sample filters, memory bounds.
    pub session: SessionOptions,
    pub symbols: SymbolConfig,
    /// perf script's output options: `--max-stack` (perf's
    /// `scripting_max_stack`) and `-G` (no callchains) shape what scripts
    /// see; with `--no-merge-callchains` perf still prints the deferred
    /// callchain records itself, with these fields.
    pub output: ScriptOptions,
    /// `--time`, `-C`, `--pid`, `--tid`, `--comms` as given.
    pub time: Option<String>,
    pub cpu_list: Option<String>,
    pub pid_list: Option<String>,
    pub tid_list: Option<String>,
    pub comm_list: Option<Vec<u8>>,
    pub threads: Threads,
    /// perf's output goes to a terminal, where it is line-buffered (see
    /// [`Printed`]).
    pub terminal: bool,
}

impl StacksConfig {
    /// The options of a `pstitch script` run that matter to scripts.
    pub fn from_script(c: &ScriptConfig) -> StacksConfig {
        StacksConfig {
            session: c.session.clone(),
            symbols: c.symbols.clone(),
            output: c.output.clone(),
            time: c.time.clone(),
            cpu_list: c.cpu_list.clone(),
            pid_list: c.pid_list.clone(),
            tid_list: c.tid_list.clone(),
            comm_list: c.comm_list.clone(),
            threads: c.threads,
            terminal: false,
        }
    }
}

/// Reads `input` and hands every sample a script would see to `sink`.
/// Also returns what perf prints itself while a script runs: with
/// `--no-merge-callchains`, the deferred callchain records as `perf
/// script` prints them, and where the script's output lands in them.
/// Never panics on any input.
pub fn collect(input: Input, source: Source<'_>, config: StacksConfig, sink: &mut dyn StackSink) -> (Report, Printed) {
    let terminal = config.terminal;
    let captured = crate::engine::Captured::default();
    let (report, flushes) = run(input, source, config, sink, captured.clone());
    (report, Printed::new(captured.take(), &flushes, terminal))
}

fn run<W: Write + Send + 'static>(mut input: Input, source: Source<'_>, config: StacksConfig, sink: &mut dyn StackSink, printed: W) -> (Report, Vec<printed::Flush>) {
    let StacksConfig { session: mut session_opts, symbols, output, time, cpu_list, pid_list, tid_list, comm_list, threads, .. } = config;
    let (max_stack, hide_call_graph) = (output.max_stack, output.hide_call_graph);
    let name = source.name;
    let mut messages = Vec::new();
    let (evlist, features, warnings) = input.take_header();
    let lists = crate::script::FilterLists {
        time: time.as_deref(),
        cpu: cpu_list.as_deref(),
        pid: pid_list.as_deref(),
        tid: tid_list.as_deref(),
        comm: comm_list.as_deref(),
    };
    if let Err(outcome) = crate::script::apply_filters(&lists, &input, &features, &evlist, &mut session_opts, &mut messages) {
        return (Report::stop(outcome, messages), Vec::new());
    }
    for w in &warnings {
        messages.push(format!("pstitch: {name}: warning: {w}"));
    }
    let mut tool_warnings = Vec::new();
    if !input.pipe {
        // perf refuses a file whose tracepoint events have no format in
        // its tracing data, scripts or not.
        let tracing = features.get(feat::TRACING_DATA).and_then(|td| match crate::tracepoint::TracingData::parse(td) {
            Ok(t) => Some(t),
            Err(e) => {
                tool_warnings.push(format!("tracing data: {e}"));
                None
            }
        });
        let known = |config| tracing.as_ref().is_some_and(|t| t.event_for_config(config).is_some());
        if evlist.evsels.iter().any(|e| e.attr.type_ == event_type::TRACEPOINT && !known(e.attr.config)) {
            messages.push("incompatible file format (rerun with -v to learn more)".to_string());
            return (Report::stop(Outcome::Failed, messages), Vec::new());
        }
    }
    // perf unwinds --call-graph dwarf samples for its scripts too.
    crate::script::user_callchains_where_shown(&mut session_opts, &output, &symbols);
    let symbolizer = crate::script::symbolizer(symbols.clone(), &features, &evlist, threads);
    let printer = if session_opts.no_merge_callchains {
        let mut own = Symbolizer::new(symbols);
        own.set_build_ids(features.build_ids());
        let mut script = Script::new(output, own, printed, threads);
        if !input.pipe {
            if let Some(td) = features.get(feat::TRACING_DATA) {
                let _ = script.load_tracing_data(td, false);
            }
            if let Err(e) = script.check_output(&evlist, &features) {
                messages.push(e.0);
                return (Report::stop(Outcome::Failed, messages), Vec::new());
            }
        }
        Some(script)
    } else {
        None
    };
    let mut collector = stacks::Collector::new(symbolizer, sink, max_stack, hide_call_graph, printer);
    let pipe = input.pipe;
    let mut session = Session::new(input.records(), evlist, features, pipe, session_opts);
    if let Some(p) = source.progress {
        session.set_progress(p);
    }
    let mut result = session.run(&mut collector);
    if let Some(Err(e)) = collector.printer.as_mut().map(Script::flush) {
        result = result.and(Err(Error::Output(e)));
    }
    let flushes = std::mem::take(&mut collector.flushes);
    drop(collector.printer.take());
    if source.process_exits {
        // Symbol tables and caches go with the process.
        std::mem::forget(collector);
    }
    crate::script::session_messages(name, &session, tool_warnings, false, &mut messages);
    let mut outcome = Outcome::Printed;
    if let Err(e) = result {
        messages.push(format!("pstitch: {name}: {e}"));
        outcome = Outcome::Failed;
    }
    let report = Report {
        outcome,
        messages,
        stats: session.stats.clone(),
        stitch: session.stitch_stats(),
        unwind: session.unwind_stats(),
        reading_cpu: crate::engine::thread_cpu(),
        samples: 0,
        printing_cpu: Default::default(),
    };
    (report, flushes)
}

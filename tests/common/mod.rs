//! Running the whole pipeline in-process on bytes held in memory, output
//! thrown away: what the fuzz target (fuzz/) and the damage tests do.
#![allow(dead_code)] // each test uses a part

use pstitch::perf_data::{FileBytes, Input};
use pstitch::script::{self, Outcome, Report, ScriptConfig, ScriptOptions, Source};
use pstitch::{Limits, SessionOptions, SymbolConfig, Threads};

/// Bounds small enough for a test, large enough for the recordings.
pub const LIMITS: Limits = Limits { max_chunk_output: 8 << 20, max_queued_bytes: 64 << 20 };

/// Options that read nothing outside the input.
pub fn offline(output: ScriptOptions, session: SessionOptions) -> ScriptConfig {
    let symbols = SymbolConfig {
        symfs: Some("/nonexistent/pstitch-symfs".into()),
        kallsyms: Some("/nonexistent/pstitch-kallsyms".into()),
        ..SymbolConfig::perf()
    };
    ScriptConfig { output, session: SessionOptions { limits: LIMITS, ..session }, symbols, ..Default::default() }
}

/// Runs `config` on `data`, read from memory or (`stream`) as a stream;
/// an input that cannot be opened fails as the command line says it.
pub fn run(data: &[u8], stream: bool, config: ScriptConfig) -> Report {
    let input = if stream { Input::from_reader(Box::new(std::io::Cursor::new(data.to_vec()))) } else { Input::from_bytes(FileBytes::Owned(data.to_vec())) };
    match input {
        Ok(i) => script::run(i, Source::named("memory"), config, std::io::sink()),
        Err(e) => Report {
            outcome: Outcome::Failed,
            messages: vec![format!("pstitch: memory: {e}")],
            stats: Default::default(),
            stitch: Default::default(),
            reading_cpu: Default::default(),
            printing_cpu: Default::default(),
            samples: 0,
        },
    }
}

/// One run of the whole pipeline on `data`: the last byte picks some
/// options so that more printing paths are covered, and pipe-mode data
/// also goes through the streaming reader. The worst outcome.
pub fn script_bytes(data: &[u8]) -> Outcome {
    let pick = data.last().copied().unwrap_or(0);
    let output = ScriptOptions {
        nanosecs: pick & 1 != 0,
        hide_call_graph: pick & 2 != 0,
        show_lost_events: pick & 8 == 0,
        max_stack: if pick & 16 != 0 { 3 } else { script::DEFAULT_MAX_STACK },
        ..Default::default()
    };
    let session = SessionOptions { no_merge_callchains: pick & 4 != 0, ..Default::default() };
    let threads = if pick & 32 != 0 { Threads::Single } else { Threads::Parallel };
    let config = || ScriptConfig { threads, ..offline(output.clone(), session.clone()) };
    let mut outcome = run(data, false, config()).outcome;
    if pstitch::perf_data::header::is_pipe_header(data).is_some() {
        let streamed = run(data, true, config()).outcome;
        if streamed != Outcome::Printed {
            outcome = streamed;
        }
    }
    outcome
}

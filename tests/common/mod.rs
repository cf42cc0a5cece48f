//! Running the whole pipeline in-process on bytes held in memory, output
//! thrown away: what the fuzz target (fuzz/) and the damage tests do.
#![allow(dead_code)] // each test uses a part

use pstitch::perf_data::{FileBytes, Input};
use pstitch::script::{self, Outcome, Report, ScriptConfig, ScriptOptions, Source};
use pstitch::{Limits, SessionOptions, SymbolConfig, Threads};

/// Bounds small enough for a test, large enough for the recordings.
pub const LIMITS: Limits = Limits { max_chunk_output: 8 << 20, max_queued_bytes: 64 << 20 };

/// Options that read nothing outside the input, in the threads mode the
/// environment asks for (`PSTITCH_THREADS=1`: single-threaded).
pub fn offline(output: ScriptOptions, session: SessionOptions) -> ScriptConfig {
    let symbols = SymbolConfig {
        symfs: Some("/nonexistent/pstitch-symfs".into()),
        kallsyms: Some("/nonexistent/pstitch-kallsyms".into()),
        ..SymbolConfig::perf()
    };
    ScriptConfig { output, session: SessionOptions { limits: LIMITS, ..session }, symbols, threads: Threads::from_env(), ..Default::default() }
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
            unwind: Default::default(),
            reading_cpu: Default::default(),
            printing_cpu: Default::default(),
            samples: 0,
        },
    }
}

/// Runs of the whole pipeline on `data`, threaded and single-threaded: the
/// last byte picks some options so that more printing paths are covered,
/// and pipe-mode data also goes through the streaming reader. The worst
/// outcome.
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
    let mut outcome = Outcome::Printed;
    for threads in [Threads::Parallel, Threads::Single] {
        let config = || ScriptConfig { threads, ..offline(output.clone(), session.clone()) };
        let mut runs = vec![run(data, false, config()).outcome];
        if pstitch::perf_data::header::is_pipe_header(data).is_some() {
            runs.push(run(data, true, config()).outcome);
        }
        for o in runs {
            if o != Outcome::Printed {
                outcome = o;
            }
        }
    }
    outcome
}

/// Runs `tool` over the recording at `path` with deferred callchains not
/// merged (each CALLCHAIN_DEFERRED its own event); the session's counts.
pub fn read_unmerged(path: &std::path::Path, tool: &mut dyn pstitch::Tool) -> pstitch::Stats {
    let mut input = Input::open(path).expect("open");
    let (evlist, features, _) = input.take_header();
    let pipe = input.pipe;
    let options = SessionOptions { no_merge_callchains: true, ..Default::default() };
    let mut session = pstitch::Session::new(input.records(), evlist, features, pipe, options);
    session.run(tool).expect("read");
    session.stats.clone()
}

/// The samples of a perf script output made with `-F
/// comm,pid,tid[,cpu],time,event,ip,...`: (tid, time as printed, the
/// addresses of the callchain lines, or the sample line's own address when
/// there is no callchain).
pub fn printed_samples(text: &str) -> Vec<(i64, String, Vec<u64>)> {
    let mut out: Vec<(i64, String, Vec<u64>)> = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(frame) = line.strip_prefix('\t') {
            // Pipe-mode output names the symbol after the address.
            let ip = u64::from_str_radix(frame.split_whitespace().next().expect("address"), 16).expect("hex address");
            out.last_mut().expect("a frame after its sample").2.push(ip);
            continue;
        }
        // Comms may contain spaces: the pid/tid word ends them.
        let words: Vec<&str> = line.split_whitespace().collect();
        let pidtid = words
            .iter()
            .find(|w| w.split_once('/').is_some_and(|(a, b)| a.parse::<i64>().is_ok() && b.parse::<i64>().is_ok()))
            .expect("pid/tid");
        let tid = pidtid.rsplit('/').next().unwrap().parse().expect("tid");
        let time = words.iter().find(|w| w.ends_with(':') && w.contains('.')).expect("time").trim_end_matches(':');
        // Without a callchain the address follows the event name.
        let ip = words.iter().skip_while(|w| !w.ends_with(':') || w.contains('.')).skip(1).find_map(|w| u64::from_str_radix(w, 16).ok());
        out.push((tid, time.to_string(), ip.into_iter().collect()));
    }
    out
}

/// The pstitch binary run on a golden case's recording as the golden
/// harness runs it (the case's symfs and kallsyms, no build-id cache),
/// with `args` (whitespace-separated bytes: a word need not be UTF-8) after.
/// (Not in the fuzz targets, which share this module but are not built
/// with the binary.)
#[cfg(not(fuzzing))]
pub fn script_in_case(case: &std::path::Path, args: &[u8]) -> std::io::Result<std::process::Output> {
    use std::os::unix::ffi::OsStrExt;
    std::process::Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(case)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"])
        .args(args.split(u8::is_ascii_whitespace).filter(|a| !a.is_empty()).map(std::ffi::OsStr::from_bytes))
        .output()
}

//! Command line: perf's option names, parsed with clap, driving the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::input::Input;
use crate::script::{DEFAULT_MAX_STACK, Script, ScriptOptions};
use crate::session::{Limits, Session};
use crate::symbols::{SymbolConfig, Symbolizer};

#[derive(Parser, Debug)]
#[command(name = "pstitch", version, about = "A fast, exact `perf script` with deferred user callchains")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the samples of a perf.data file as `perf script` does.
    Script(ScriptArgs),
}

/// `pstitch script` options (perf's names).
#[derive(Args, Debug, Default)]
pub struct ScriptArgs {
    /// Input file; `-` reads a pipe. Default: standard input if it is a
    /// pipe, else ./perf.data.
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Output fields, optionally per event type (`sw:comm,tid`), or
    /// `+field`/`-field` to adjust the defaults. May be given more than once.
    #[arg(short = 'F', long = "fields", value_name = "FIELDS", allow_hyphen_values = true)]
    pub fields: Vec<String>,

    /// Print times with nanoseconds.
    #[arg(long = "ns")]
    pub ns: bool,

    /// Do not print callchains.
    #[arg(short = 'G', long = "hide-call-graph")]
    pub hide_call_graph: bool,

    /// Print at most this many callchain entries per sample.
    #[arg(long = "max-stack", value_name = "N", default_value_t = DEFAULT_MAX_STACK)]
    pub max_stack: usize,

    /// Show inline functions in callchains (default).
    #[arg(long = "inline", overrides_with = "no_inline")]
    pub inline: bool,
    /// Do not show inline functions.
    #[arg(long = "no-inline", overrides_with = "inline")]
    pub no_inline: bool,

    /// Demangle C++ and Rust symbols (default).
    #[arg(long = "demangle", overrides_with = "no_demangle")]
    pub demangle: bool,
    /// Print symbols as they are in the object file.
    #[arg(long = "no-demangle", overrides_with = "demangle")]
    pub no_demangle: bool,

    /// Demangle kernel symbols too.
    #[arg(long = "demangle-kernel")]
    pub demangle_kernel: bool,

    /// Look for object files below this directory.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,

    /// Kernel symbols from this file instead of /proc/kallsyms.
    #[arg(long = "kallsyms", value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,

    /// Show full source file paths in srcline.
    #[arg(long = "full-source-path")]
    pub full_source_path: bool,

    /// Merge deferred user callchains into their samples (default).
    #[arg(long = "merge-callchains", overrides_with = "no_merge_callchains")]
    pub merge_callchains: bool,
    /// Print deferred callchains as separate DEFERRED CALLCHAIN blocks.
    #[arg(long = "no-merge-callchains", overrides_with = "merge_callchains")]
    pub no_merge_callchains: bool,

    /// Print PERF_RECORD_LOST records (`... PERF_RECORD_LOST lost N`).
    #[arg(long = "show-lost-events")]
    pub show_lost_events: bool,

    /// Say more on standard error.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Exit codes: everything was read (warnings may have been printed).
pub const EXIT_OK: u8 = 0;
/// The input could not be read completely: it could not be opened, its
/// header is unusable, or reading stopped at damage (everything before the
/// damage was printed), or the output could not be written.
pub const EXIT_DAMAGED: u8 = 1;
/// Bad options (also clap's code for command-line errors).
pub const EXIT_USAGE: u8 = 2;

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Script(args) => {
            let stdout = std::io::stdout();
            ExitCode::from(run_script(&args, stdout.lock(), &mut std::io::stderr()))
        }
    }
}

fn default_input() -> PathBuf {
    use std::os::unix::fs::FileTypeExt;
    let stdin_is_fifo = std::fs::metadata("/dev/stdin").map(|m| m.file_type().is_fifo()).unwrap_or(false);
    PathBuf::from(if stdin_is_fifo { "-" } else { "perf.data" })
}

fn buildid_dir() -> Option<PathBuf> {
    match std::env::var_os("PERF_BUILDID_DIR") {
        Some(d) => Some(PathBuf::from(d)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")),
    }
}

/// Writes one line to stderr; a closed stderr is not worth dying for.
fn say(err: &mut dyn Write, args: std::fmt::Arguments<'_>) {
    let _ = err.write_fmt(args);
    let _ = err.write_all(b"\n");
}

/// `pstitch script`: opens the input and prints it to `out`; messages go
/// to `err`. Returns the exit code.
pub fn run_script<W: Write>(args: &ScriptArgs, out: W, err: &mut dyn Write) -> u8 {
    let path = args.input.clone().unwrap_or_else(default_input);
    let name = path.display().to_string();
    let input = match Input::open(&path) {
        Ok(i) => i,
        Err(e) => {
            say(err, format_args!("pstitch: {name}: {e}"));
            return EXIT_DAMAGED;
        }
    };
    run_input(args, &name, input, Limits::default(), out, err)
}

/// `pstitch script` on an opened input (`name` is how messages call it),
/// within `limits`. Never panics on any input; returns the exit code.
pub fn run_input<W: Write>(args: &ScriptArgs, name: &str, mut input: Input, limits: Limits, out: W, err: &mut dyn Write) -> u8 {
    let mut opts = ScriptOptions {
        nanosecs: args.ns,
        hide_call_graph: args.hide_call_graph,
        max_stack: args.max_stack,
        merge_callchains: !args.no_merge_callchains,
        show_lost_events: args.show_lost_events,
        ..Default::default()
    };
    for spec in &args.fields {
        match opts.fields.parse(spec) {
            Ok(warnings) => warnings.iter().for_each(|w| say(err, format_args!("{w}"))),
            Err(e) => {
                say(err, format_args!("{}", e.0));
                return EXIT_USAGE;
            }
        }
    }
    let config = SymbolConfig {
        symfs: args.symfs.clone(),
        kallsyms: args.kallsyms.clone(),
        buildid_dir: buildid_dir(),
        demangle: !args.no_demangle,
        demangle_kernel: args.demangle_kernel,
        inline: !args.no_inline,
        full_source_path: args.full_source_path,
    };

    let (evlist, features, warnings) = input.take_header();
    for w in &warnings {
        say(err, format_args!("pstitch: {name}: warning: {w}"));
    }
    let mut symbolizer = Symbolizer::new(config);
    symbolizer.set_build_ids(features.build_ids());
    let mut script = Script::new(opts, symbolizer, out);
    let pipe = input.pipe;
    if !pipe && let Err(e) = script.check_output(&evlist) {
        say(err, format_args!("{}", e.0));
        return EXIT_USAGE;
    }
    let mut session = Session::new(input.records(), evlist, features, pipe);
    session.limits = limits;
    let result = session.run(&mut script);
    let flushed = script.flush();
    // `pstitch script ... | head`: the reader has gone, so has our audience.
    if result.as_ref().is_err_and(|e| e.is_broken_pipe()) || flushed.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        return EXIT_OK;
    }
    for w in session.warnings.messages() {
        say(err, format_args!("pstitch: {name}: warning: {w}"));
    }
    let stats = &session.stats;
    if stats.nr_lost_records > 0 {
        say(
            err,
            format_args!(
                "pstitch: {name}: warning: {} PERF_RECORD_LOST records: {} events were lost (the ring buffer overflowed; check IO/CPU overload)",
                stats.nr_lost_records, stats.lost_events
            ),
        );
    }
    if stats.lost_samples > 0 {
        say(err, format_args!("pstitch: {name}: warning: {} samples were lost (PERF_RECORD_LOST_SAMPLES)", stats.lost_samples));
    }
    if script.machine.forks_without_maps > 0 {
        say(
            err,
            format_args!(
                "pstitch: {name}: warning: {} forked processes did not inherit their parent's maps: {} map entries had been copied already (the limit)",
                script.machine.forks_without_maps, script.machine.fork_maps_copied
            ),
        );
    }
    let st = script.stitch_stats();
    if st.flushed + st.unmerged + st.unmatched_records > 0 {
        say(
            err,
            format_args!(
                "pstitch: {name}: deferred callchains: {} of {} held samples merged, {} delivered unmerged (another cookie came first), {} unstitched at end of input; {} of {} deferred records matched no sample",
                st.merged, st.held, st.unmerged, st.flushed, st.unmatched_records, st.deferred_records
            ),
        );
    }
    if let Err(e) = flushed {
        say(err, format_args!("pstitch: writing output: {e}"));
        return EXIT_DAMAGED;
    }
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            say(err, format_args!("pstitch: {name}: {e}"));
            EXIT_DAMAGED
        }
    }
}

/// One run of the whole pipeline on `data` held in memory, output thrown
/// away: what the fuzz target (`fuzz/`) and the mutation tests call. The
/// last byte picks some options so that more printing paths are covered.
/// Returns the exit code.
pub fn script_bytes(data: &[u8]) -> u8 {
    let pick = data.last().copied().unwrap_or(0);
    let args = ScriptArgs {
        ns: pick & 1 != 0,
        hide_call_graph: pick & 2 != 0,
        no_merge_callchains: pick & 4 != 0,
        show_lost_events: pick & 8 == 0,
        max_stack: if pick & 16 != 0 { 3 } else { DEFAULT_MAX_STACK },
        // Nothing outside the input may be read.
        symfs: Some(PathBuf::from("/nonexistent/pstitch-symfs")),
        kallsyms: Some(PathBuf::from("/nonexistent/pstitch-kallsyms")),
        ..Default::default()
    };
    let limits = Limits { max_chunk_output: 8 << 20, max_queued_bytes: 64 << 20 };
    let mut err = std::io::sink();
    let mut code = match crate::input::Input::from_bytes(crate::perf_data::FileBytes::Owned(data.to_vec())) {
        Ok(input) => run_input(&args, "fuzz", input, limits, std::io::sink(), &mut err),
        Err(_) => EXIT_DAMAGED,
    };
    // Pipe-mode data also goes through the streaming reader.
    if crate::perf_data::header::is_pipe_header(data).is_some() {
        let reader = Box::new(std::io::Cursor::new(data.to_vec()));
        code = code.max(match crate::input::Input::from_reader(reader) {
            Ok(input) => run_input(&args, "fuzz", input, limits, std::io::sink(), &mut err),
            Err(_) => EXIT_DAMAGED,
        });
    }
    code
}

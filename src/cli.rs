//! Command line: perf's option names, parsed with clap, driving the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::input::Input;
use crate::script::{DEFAULT_MAX_STACK, Script, ScriptOptions};
use crate::session::Session;
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

    /// Say more on standard error.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Script(args) => run_script(&args),
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

/// `pstitch script`.
pub fn run_script(args: &ScriptArgs) -> ExitCode {
    let path = args.input.clone().unwrap_or_else(default_input);
    let name = path.display().to_string();
    let mut opts = ScriptOptions { nanosecs: args.ns, hide_call_graph: args.hide_call_graph, max_stack: args.max_stack, ..Default::default() };
    for spec in &args.fields {
        match opts.fields.parse(spec) {
            Ok(warnings) => warnings.iter().for_each(|w| eprintln!("{w}")),
            Err(e) => {
                eprintln!("{}", e.0);
                return ExitCode::from(2);
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

    let mut input = match Input::open(&path) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("pstitch: {name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (evlist, features, warnings) = input.take_header();
    for w in &warnings {
        eprintln!("pstitch: {name}: warning: {w}");
    }
    let mut symbolizer = Symbolizer::new(config);
    symbolizer.set_build_ids(features.build_ids());
    let stdout = std::io::stdout();
    let mut script = Script::new(opts, symbolizer, stdout.lock());
    let pipe = input.pipe;
    if !pipe {
        if let Some(td) = features.get(crate::perf_data::features::feat::TRACING_DATA) {
            if let Err(e) = script.load_tracing_data(td, false) {
                eprintln!("pstitch: {name}: tracing data: {e}");
            }
        }
        if let Err(e) = script.check_tracepoint_formats(&evlist) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
        if let Err(e) = script.check_output(&evlist) {
            eprintln!("{}", e.0);
            return ExitCode::FAILURE;
        }
    }
    let mut session = Session::new(input.records(), evlist, features, pipe);
    let result = session.run(&mut script);
    let flushed = script.flush();
    for w in &session.warnings {
        eprintln!("pstitch: {name}: warning: {w}");
    }
    if let Err(e) = flushed {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return ExitCode::SUCCESS;
        }
        eprintln!("pstitch: writing output: {e}");
        return ExitCode::FAILURE;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::stderr().flush();
            eprintln!("pstitch: {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

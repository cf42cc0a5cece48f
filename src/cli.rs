//! Command line: perf's option names, parsed with clap, mapped onto the
//! library's options; the library's report mapped onto messages and exit
//! codes.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Writes one line to stderr; a closed stderr is not worth dying for
/// (`eprintln!` would panic).
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// Writes to stderr without a newline (the progress line).
fn say_inline(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().write_fmt(args);
}

use pstitch::script::{self, HeaderMode, Outcome, Report, ScriptConfig, ScriptOptions, Source};
use pstitch::{Progress, SampleFilter, SessionOptions, SymbolConfig, Threads};

#[derive(Parser, Debug)]
#[command(name = "pstitch", version, about = "A fast, exact `perf script` with deferred user callchains")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the samples of a perf.data file as `perf script` does.
    Script(Box<ScriptArgs>),
    /// Write a recording with deferred user callchains as an ordinary
    /// perf.data: each sample with its whole callchain.
    Inject(InjectArgs),
    /// Print a shell completion script (bash, zsh or fish) to standard output.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// Shells pstitch writes completions for.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
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
    #[arg(long = "max-stack", value_name = "N", default_value_t = script::DEFAULT_MAX_STACK)]
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

    /// Only samples of threads with these comms (comma-separated).
    #[arg(short = 'c', long = "comms", value_name = "COMMS")]
    pub comms: Option<String>,

    /// Only samples of these process ids (comma-separated).
    #[arg(long = "pid", value_name = "PIDS")]
    pub pid: Option<String>,

    /// Only samples of these thread ids (comma-separated).
    #[arg(long = "tid", value_name = "TIDS")]
    pub tid: Option<String>,

    /// Only events of these CPUs (`0,2-3`).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<String>,

    /// Only samples in these time ranges: `start,stop` pairs (seconds;
    /// either end may be empty) separated by spaces, or percentages of the
    /// recording (`10%/2`, `0%-10%`, ...).
    #[arg(long = "time", value_name = "RANGES", allow_hyphen_values = true)]
    pub time: Option<String>,

    /// Print COMM, FORK and EXIT records.
    #[arg(long = "show-task-events")]
    pub show_task_events: bool,

    /// Print MMAP and MMAP2 records.
    #[arg(long = "show-mmap-events")]
    pub show_mmap_events: bool,

    /// Print the perf.data header information before the samples.
    #[arg(long = "header")]
    pub header: bool,

    /// Print only the perf.data header information.
    #[arg(long = "header-only")]
    pub header_only: bool,

    /// With --header: also print the features perf shows only in full
    /// (CPU/NUMA/memory topology, caches, ...).
    #[arg(short = 'I', long = "show-info")]
    pub show_info: bool,

    /// Print PERF_RECORD_LOST records (`... PERF_RECORD_LOST lost N`).
    #[arg(long = "show-lost-events")]
    pub show_lost_events: bool,

    /// Most MiB of copied records (pipe input, compressed chunks) waiting
    /// to be sorted by time; beyond it the older half is printed early,
    /// with a warning (default 2048).
    #[arg(long = "queue-limit", value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub queue_limit: Option<u64>,

    /// Say more on standard error.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// `pstitch inject` options.
#[derive(Args, Debug, Default)]
pub struct InjectArgs {
    /// Input file; `-` reads a pipe. Default: standard input if it is a
    /// pipe, else ./perf.data.
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Output file (file mode); `-` writes a pipe-mode stream to standard
    /// output (the default).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    pub output: PathBuf,

    /// Keep the CALLCHAIN_DEFERRED records (and the events'
    /// defer_callchain/defer_output bits), for readers that understand
    /// them.
    #[arg(long = "keep-deferred")]
    pub keep_deferred: bool,

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
        Command::Script(args) => ExitCode::from(run_script(&args)),
        Command::Inject(args) => ExitCode::from(run_inject(&args)),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            let shell = match shell {
                Shell::Bash => clap_complete::Shell::Bash,
                Shell::Zsh => clap_complete::Shell::Zsh,
                Shell::Fish => clap_complete::Shell::Fish,
            };
            clap_complete::generate(shell, &mut cmd, "pstitch", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

pub fn default_input() -> PathBuf {
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

/// A progress line on stderr for long runs: only when stderr is a terminal
/// and stdout is not (output goes to a file or pipe), after the first
/// second (`PSTITCH_PROGRESS_DELAY_MS` overrides that), at most 5 times a
/// second; erased when reading ends.
struct ProgressLine {
    name: String,
    start: std::time::Instant,
    delay: std::time::Duration,
    last: Option<std::time::Instant>,
}

impl ProgressLine {
    fn for_terminal(name: &str) -> Option<ProgressLine> {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() || std::io::stdout().is_terminal() {
            return None;
        }
        let delay = std::env::var("PSTITCH_PROGRESS_DELAY_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
        Some(ProgressLine { name: name.to_string(), start: std::time::Instant::now(), delay: std::time::Duration::from_millis(delay), last: None })
    }

    fn update(&mut self, p: Progress) {
        let now = std::time::Instant::now();
        if p.done {
            if self.last.is_some() {
                say_inline(format_args!("\r\x1b[K"));
            }
            return;
        }
        let elapsed = now - self.start;
        if elapsed < self.delay || self.last.is_some_and(|l| now - l < std::time::Duration::from_millis(200)) {
            return;
        }
        self.last = Some(now);
        let rate = p.records as f64 / elapsed.as_secs_f64().max(1e-3);
        let pct = p.total.filter(|&t| t > 0).map(|t| format!("{:.0}% of ", p.position as f64 * 100.0 / t as f64)).unwrap_or_default();
        say_inline(format_args!("\r\x1b[K[ pstitch: {pct}{} | {} records | {} records/s ]", self.name, human(p.records as f64), human(rate)));
    }
}

/// 1234567 -> "1.2M".
fn human(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1}G", v / 1e9),
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// `-v`: what was read, on stderr (perf's `perf report -D`-style counts).
fn print_stats(name: &str, report: &Report) {
    use pstitch::perf_data::record::kind;
    let (st, stitch) = (&report.stats, &report.stitch);
    let total: u64 = st.by_type.iter().map(|(_, n)| n).sum();
    say!("pstitch: {name}: {total} records");
    for (t, n) in st.by_type.iter() {
        say!("  {:>20}: {n}", kind::name(t));
    }
    let extra = [
        ("records for unknown event ids", st.nr_unknown_id),
        ("records of unknown types", st.nr_unknown_type),
        ("records queued after their round was flushed", st.nr_unordered),
        ("events lost (PERF_RECORD_LOST)", st.lost_events),
        ("samples lost (PERF_RECORD_LOST_SAMPLES)", st.lost_samples),
    ];
    for (what, n) in extra.iter().filter(|(_, n)| *n > 0) {
        say!("  {what}: {n}");
    }
    if stitch.held > 0 || stitch.deferred_records > 0 {
        say!(
            "  deferred callchains: {} samples held (at most {} at once), {} merged, {} unmerged, {} unstitched; {} deferred records, {} matched nothing",
            stitch.held, stitch.peak_held, stitch.merged, stitch.unmerged, stitch.flushed, stitch.deferred_records, stitch.unmatched_records
        );
    }
    say!("  CPU time: {:.2} s reading, {:.2} s printing", report.reading_cpu.as_secs_f64(), report.printing_cpu.as_secs_f64());
}

/// The filters that need no knowledge of the input.
fn parse_filters(args: &ScriptArgs, f: &mut SampleFilter) -> Result<(), String> {
    if let Some(c) = &args.comms {
        f.comms = Some(SampleFilter::parse_list(c));
    }
    if let Some(p) = &args.pid {
        f.pids = Some(SampleFilter::parse_int_list(p)?);
    }
    if let Some(t) = &args.tid {
        f.tids = Some(SampleFilter::parse_int_list(t)?);
    }
    if let Some(c) = &args.cpu {
        f.cpus = Some(SampleFilter::parse_cpu_list(c)?);
    }
    Ok(())
}



/// The options as the library takes them; `Err` with the exit code once
/// the reason was said.
pub fn config(args: &ScriptArgs) -> Result<ScriptConfig, u8> {
    let mut output = ScriptOptions {
        nanosecs: args.ns,
        hide_call_graph: args.hide_call_graph,
        max_stack: args.max_stack,
        show_task_events: args.show_task_events,
        show_mmap_events: args.show_mmap_events,
        show_lost_events: args.show_lost_events,
        ..Default::default()
    };
    let mut session = SessionOptions { no_merge_callchains: args.no_merge_callchains, ..Default::default() };
    if let Some(mib) = args.queue_limit {
        session.limits.max_queued_bytes = usize::try_from(mib << 20).unwrap_or(usize::MAX);
    }
    if let Err(e) = parse_filters(args, &mut session.filter) {
        say!("{e}");
        return Err(EXIT_USAGE);
    }
    for spec in &args.fields {
        match output.fields.parse(spec) {
            Ok(warnings) => warnings.iter().for_each(|w| say!("{w}")),
            Err(e) => {
                say!("{}", e.0);
                return Err(EXIT_USAGE);
            }
        }
    }
    let symbols = SymbolConfig {
        symfs: args.symfs.clone(),
        kallsyms: args.kallsyms.clone(),
        buildid_dir: buildid_dir(),
        demangle: !args.no_demangle,
        demangle_kernel: args.demangle_kernel,
        inline: !args.no_inline,
        full_source_path: args.full_source_path,
    };
    let header = match (args.header_only, args.header) {
        (true, _) => HeaderMode::Only,
        (false, true) => HeaderMode::With,
        (false, false) => HeaderMode::None,
    };
    Ok(ScriptConfig { output, session, symbols, header, show_info: args.show_info, time: args.time.clone(), threads: Threads::from_env() })
}

/// `pstitch script`: opens the input and prints it to standard output;
/// messages go to standard error. Returns the exit code.
fn run_script(args: &ScriptArgs) -> u8 {
    let config = match config(args) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let path = args.input.clone().unwrap_or_else(default_input);
    let name = path.display().to_string();
    let input = match pstitch::open(&path, config.threads) {
        Ok(i) => i,
        Err(e) => {
            say!("pstitch: {name}: {e}");
            return EXIT_DAMAGED;
        }
    };
    // perf prints the input's mtime in --header (fstat of the open file;
    // stdin for "-").
    let meta = if path == std::path::Path::new("-") { std::fs::metadata("/proc/self/fd/0") } else { std::fs::metadata(&path) };
    let mtime = meta.ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.mtime()
    });
    let progress = ProgressLine::for_terminal(&name).map(|mut p| Box::new(move |pr: Progress| p.update(pr)) as Box<dyn FnMut(Progress)>);
    let source = Source { name: &name, mtime, progress, process_exits: true };
    let report = script::run(input, source, config, std::io::stdout());
    // A closed stderr is not worth dying for.
    let mut err = std::io::stderr().lock();
    for m in &report.messages {
        let _ = writeln!(err, "{m}");
    }
    drop(err);
    if args.verbose > 0 {
        print_stats(&name, &report);
    }
    match report.outcome {
        Outcome::Printed => EXIT_OK,
        Outcome::Usage => EXIT_USAGE,
        Outcome::Failed => EXIT_DAMAGED,
    }
}

/// `pstitch inject`: reads the input, writes the output; messages go to
/// standard error. Returns the exit code.
fn run_inject(args: &InjectArgs) -> u8 {
    use pstitch::inject::{self, InjectConfig, Output};
    use std::io::IsTerminal;
    let path = args.input.clone().unwrap_or_else(default_input);
    let name = path.display().to_string();
    let output = if args.output == std::path::Path::new("-") {
        if std::io::stdout().is_terminal() {
            say!("pstitch inject: standard output is a terminal; name an output file with -o FILE or redirect it");
            return EXIT_USAGE;
        }
        Output::Pipe(Box::new(std::io::stdout()))
    } else {
        if std::fs::canonicalize(&args.output).ok().is_some_and(|o| std::fs::canonicalize(&path).ok() == Some(o)) {
            say!("pstitch inject: the output {} is the input", args.output.display());
            return EXIT_USAGE;
        }
        match std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&args.output) {
            Ok(f) => Output::File(f),
            Err(e) => {
                say!("pstitch: {}: {e}", args.output.display());
                return EXIT_DAMAGED;
            }
        }
    };
    let input = match pstitch::open(&path, Threads::from_env()) {
        Ok(i) => i,
        Err(e) => {
            say!("pstitch: {name}: {e}");
            return EXIT_DAMAGED;
        }
    };
    let config = InjectConfig { keep_deferred: args.keep_deferred, ..Default::default() };
    let report = inject::run(input, &name, config, output);
    for m in &report.messages {
        say!("{m}");
    }
    if args.verbose > 0 {
        let (c, st) = (&report.counts, &report.stitch);
        say!(
            "pstitch: {name}: {} samples held, {} merged, {} kernel part only; {} deferred records ({} left out); at most {} bytes waited behind held samples, {} went through a temporary file",
            st.held, c.merged, c.kernel_only, st.deferred_records, c.deferred_dropped, c.peak_waiting, c.spilled
        );
    }
    if report.ok { EXIT_OK } else { EXIT_DAMAGED }
}


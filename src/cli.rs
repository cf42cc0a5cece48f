//! Command line: perf's option names, parsed with clap, driving the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use perf_data::Input;
use crate::session::filter::{self, SampleFilter};
use crate::script::header;
use crate::script::{DEFAULT_MAX_STACK, Script, ScriptOptions};
use crate::session::{Limits, Session, SessionOptions};
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
    Script(Box<ScriptArgs>),
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
    // glibc gives threads arenas of their own up to 8 per core; pstitch's
    // four threads (reader, loader, formatter, copier) need one each: with
    // two, the formatter and the loader, both allocating while units are
    // decoded and tables loaded, waited for each other's arena lock
    // (~1,100 futex waits a run on the benchmark recording; 2-4% of the
    // wall time for ~5 MB of peak RSS).
    //
    // Blocks up to 32 MiB come from the arenas and freed memory stays there
    // (up to 256 MiB at the top of the heap) rather than going back to the
    // kernel: a symbol table's sort buffers, a decoded unit's rows, a
    // batch's text are allocated and freed again and again, and memory
    // given back is faulted in (and zeroed) anew the next time. glibc
    // adapts its threshold to what is freed, but only after the first
    // large block went back; fixed, the benchmark recording takes ~4,000
    // fewer page faults (of ~58,000) at the same peak RSS.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; no thread has
    // started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 4);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
    // pstitch is a batch job whose threads hand work to each other: a
    // thread woken by a handover need not take the core from one that is
    // busy (wakeup preemption: a switch and a colder cache each time). Its
    // share of the CPU stays what it was (SCHED_BATCH keeps the nice value
    // and asks for no privilege); the threads started later inherit it.
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler only reads the parameter it is given.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Script(args) => {
            let stdout = std::io::stdout();
            ExitCode::from(run_script(&args, stdout, &mut std::io::stderr(), true))
        }
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

    fn update(&mut self, p: crate::session::Progress) {
        let now = std::time::Instant::now();
        if p.done {
            if self.last.is_some() {
                eprint!("\r\x1b[K");
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
        eprint!("\r\x1b[K[ pstitch: {pct}{} | {} records | {} records/s ]", self.name, human(p.records as f64), human(rate));
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
fn print_stats(name: &str, st: &crate::session::Stats, stitch: &crate::session::StitchStats) {
    use perf_data::record::kind;
    let total: u64 = st.by_type.iter().map(|(_, n)| n).sum();
    eprintln!("pstitch: {name}: {total} records");
    for (t, n) in st.by_type.iter() {
        eprintln!("  {:>20}: {n}", kind::name(t));
    }
    let extra = [
        ("records for unknown event ids", st.nr_unknown_id),
        ("records of unknown types", st.nr_unknown_type),
        ("records queued after their round was flushed", st.nr_unordered),
        ("events lost (PERF_RECORD_LOST)", st.lost_events),
        ("samples lost (PERF_RECORD_LOST_SAMPLES)", st.lost_samples),
    ];
    for (what, n) in extra.iter().filter(|(_, n)| *n > 0) {
        eprintln!("  {what}: {n}");
    }
    if stitch.held > 0 || stitch.deferred_records > 0 {
        eprintln!(
            "  deferred callchains: {} samples held (at most {} at once), {} merged, {} unmerged, {} unstitched; {} deferred records, {} matched nothing",
            stitch.held, stitch.peak_held, stitch.merged, stitch.unmerged, stitch.flushed, stitch.deferred_records, stitch.unmatched_records
        );
    }
}

/// The filters that need no knowledge of the input.
fn parse_filters(args: &ScriptArgs, f: &mut SampleFilter) -> Result<(), String> {
    if let Some(c) = &args.comms {
        f.comms = Some(filter::parse_list(c));
    }
    if let Some(p) = &args.pid {
        f.pids = Some(filter::parse_int_list(p)?);
    }
    if let Some(t) = &args.tid {
        f.tids = Some(filter::parse_int_list(t)?);
    }
    if let Some(c) = &args.cpu {
        f.cpus = Some(filter::parse_cpu_list(c)?);
    }
    Ok(())
}

/// Writes one line to stderr; a closed stderr is not worth dying for.
fn say(err: &mut dyn Write, args: std::fmt::Arguments<'_>) {
    let _ = err.write_fmt(args);
    let _ = err.write_all(b"\n");
}

/// What the options say, checked before the input is opened.
struct Prepared {
    opts: ScriptOptions,
    session: SessionOptions,
    config: SymbolConfig,
}

fn prepare(args: &ScriptArgs, err: &mut dyn Write) -> Result<Prepared, u8> {
    let mut opts = ScriptOptions {
        nanosecs: args.ns,
        hide_call_graph: args.hide_call_graph,
        max_stack: args.max_stack,
        show_task_events: args.show_task_events,
        show_mmap_events: args.show_mmap_events,
        show_lost_events: args.show_lost_events,
        ..Default::default()
    };
    let mut session = SessionOptions { no_merge_callchains: args.no_merge_callchains, ..Default::default() };
    if let Err(e) = parse_filters(args, &mut session.filter) {
        say(err, format_args!("{e}"));
        return Err(EXIT_USAGE);
    }
    for spec in &args.fields {
        match opts.fields.parse(spec) {
            Ok(warnings) => warnings.iter().for_each(|w| say(err, format_args!("{w}"))),
            Err(e) => {
                say(err, format_args!("{}", e.0));
                return Err(EXIT_USAGE);
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
    Ok(Prepared { opts, session, config })
}

/// `pstitch script`: opens the input and prints it to `out`; messages go
/// to `err`. `progress`: show a progress line when stderr is a terminal
/// and stdout is not. Returns the exit code.
pub fn run_script<W: Write + Send + 'static>(args: &ScriptArgs, out: W, err: &mut dyn Write, progress: bool) -> u8 {
    let prepared = match prepare(args, err) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let path = args.input.clone().unwrap_or_else(default_input);
    let name = path.display().to_string();
    let input = match crate::engine::open_input(&path, crate::engine::Threads::from_env()) {
        Ok(i) => i,
        Err(e) => {
            say(err, format_args!("pstitch: {name}: {e}"));
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
    let progress = if progress { ProgressLine::for_terminal(&name) } else { None };
    let source = Source { name: &name, mtime, limits: Limits::default(), progress, process_exits: true };
    run_prepared(args, prepared, source, input, out, err)
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

/// Where the input came from, and how to read it.
struct Source<'n> {
    /// How messages call the input.
    name: &'n str,
    mtime: Option<i64>,
    limits: Limits,
    progress: Option<ProgressLine>,
    /// The process ends after this run (the command line's run): what the
    /// run built (symbol tables, inline-frame state, caches: hundreds of
    /// thousands of allocations) is left to the exit instead of being
    /// freed one by one.
    process_exits: bool,
}

/// `pstitch script` on an opened input (`name` is how messages call it),
/// within `limits`. Never panics on any input; returns the exit code.
pub fn run_input<W: Write + Send + 'static>(args: &ScriptArgs, name: &str, input: Input, limits: Limits, out: W, err: &mut dyn Write) -> u8 {
    match prepare(args, err) {
        Ok(p) => run_prepared(args, p, Source { name, mtime: None, limits, progress: None, process_exits: false }, input, out, err),
        Err(code) => code,
    }
}

fn run_prepared<W: Write + Send + 'static>(args: &ScriptArgs, prepared: Prepared, source: Source<'_>, mut input: Input, mut out: W, err: &mut dyn Write) -> u8 {
    let Prepared { opts, session: mut session_opts, config } = prepared;
    let name = source.name;
    let (evlist, features, warnings) = input.take_header();
    if args.header || args.header_only {
        let mut text = Vec::new();
        match input.info.as_ref() {
            Some(info) => {
                let pmus = header::Pmus::system();
                let warnings = header::print_file_info(&mut text, source.mtime, &info.header, &features, &evlist, args.show_info, &pmus);
                for w in warnings {
                    say(err, format_args!("pstitch: {name}: warning: {w}"));
                }
            }
            None => header::print_pipe_info(&mut text, source.mtime),
        }
        match out.write_all(&text).and_then(|_| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return EXIT_OK,
            Err(e) => {
                say(err, format_args!("pstitch: writing output: {e}"));
                return EXIT_DAMAGED;
            }
        }
        if args.header_only {
            return EXIT_OK;
        }
    }
    if let Some(t) = &args.time {
        // Percentages are of the span perf record stored in SAMPLE_TIME.
        let (first, last) = features
            .get(perf_data::features::feat::SAMPLE_TIME)
            .and_then(|b| Some((input.endian.read_u64(b, 0)?, input.endian.read_u64(b, 8)?)))
            .unwrap_or((0, 0));
        if t.contains('%') && first == 0 && last == 0 {
            say(err, format_args!("HINT: no first/last sample time found in perf data."));
            return EXIT_USAGE;
        }
        match filter::parse_time(t, first, last) {
            Ok(r) => session_opts.filter.time = r,
            Err(e) => {
                say(err, format_args!("{e}"));
                return EXIT_USAGE;
            }
        }
    }
    for w in &warnings {
        say(err, format_args!("pstitch: {name}: warning: {w}"));
    }
    let threads = crate::engine::Threads::from_env();
    let mut symbolizer = Symbolizer::new(config);
    symbolizer.set_build_ids(features.build_ids());
    if threads == crate::engine::Threads::Parallel && evlist.evsels.iter().any(|e| !e.attr.has(perf_data::attr::flag::EXCLUDE_KERNEL)) {
        symbolizer.read_kallsyms_ahead();
    }
    if session_opts.filter.cpus.is_some() {
        // perf requires CPU in the first event of every type.
        let mut seen = std::collections::BTreeSet::new();
        let lacking = evlist
            .evsels
            .iter()
            .filter(|e| seen.insert(e.attr.type_))
            .any(|e| !e.attr.samples(perf_data::attr::sample_type::CPU));
        if lacking {
            say(err, format_args!("File does not contain CPU events. Remove -C option to proceed."));
            return EXIT_DAMAGED;
        }
    }
    let mut script = KeepAtExit { value: Some(Script::new(opts, symbolizer, out, threads)), exiting: source.process_exits };
    let pipe = input.pipe;
    if !pipe {
        if let Some(td) = features.get(perf_data::features::feat::TRACING_DATA)
            && let Err(e) = script.load_tracing_data(td, false)
        {
            say(err, format_args!("pstitch: {name}: tracing data: {e}"));
        }
        if let Err(e) = script.check_tracepoint_formats(&evlist) {
            say(err, format_args!("{e}"));
            return EXIT_DAMAGED;
        }
        if let Err(e) = script.check_output(&evlist) {
            say(err, format_args!("{}", e.0));
            return EXIT_USAGE;
        }
    }
    session_opts.limits = source.limits;
    let mut session = Session::new(input.records(), evlist, features, pipe, session_opts);
    if let Some(mut p) = source.progress {
        session.set_progress(move |pr| p.update(pr));
    }
    if pipe && (args.header || args.show_info) {
        // perf prints pipe-mode features as they arrive.
        script.print_features(header::FeatureStream::new(args.show_info, header::Pmus::system()));
    }
    let result = session.run(&mut *script);
    let flushed = script.flush();
    // `pstitch script ... | head`: the reader has gone, so has our audience.
    if result.as_ref().is_err_and(|e| e.is_broken_pipe()) || flushed.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        return EXIT_OK;
    }
    for w in std::mem::take(&mut script.feature_warnings).into_iter().chain(session.warnings.messages()) {
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
    if session.machine.forks_without_maps > 0 {
        say(
            err,
            format_args!(
                "pstitch: {name}: warning: {} forked processes did not inherit their parent's maps: {} map entries had been copied already (the limit)",
                session.machine.forks_without_maps, session.machine.fork_maps_copied
            ),
        );
    }
    if args.verbose > 0 {
        print_stats(name, &session.stats, &session.stitch_stats());
        let reading = crate::engine::thread_cpu();
        say(err, format_args!("  CPU time: {:.2} s reading, {:.2} s printing", reading.as_secs_f64(), script.printer_cpu().as_secs_f64()));
    }
    let st = session.stitch_stats();
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
    let mut code = match perf_data::Input::from_bytes(perf_data::FileBytes::Owned(data.to_vec())) {
        Ok(input) => run_input(&args, "fuzz", input, limits, std::io::sink(), &mut err),
        Err(_) => EXIT_DAMAGED,
    };
    // Pipe-mode data also goes through the streaming reader.
    if perf_data::header::is_pipe_header(data).is_some() {
        let reader = Box::new(std::io::Cursor::new(data.to_vec()));
        code = code.max(match perf_data::Input::from_reader(reader) {
            Ok(input) => run_input(&args, "fuzz", input, limits, std::io::sink(), &mut err),
            Err(_) => EXIT_DAMAGED,
        });
    }
    code
}

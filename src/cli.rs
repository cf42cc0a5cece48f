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

pub mod options;
mod pager;
pub mod script_args;

use pstitch::script::{self, HeaderMode, Outcome, Report, ScriptConfig, ScriptOptions, Source};
use pstitch::{Progress, SessionOptions, SymbolConfig, Threads};
pub use script_args::ScriptArgs;

#[derive(Parser, Debug)]
#[command(name = "pstitch", version, about = "A fast, exact `perf script` with deferred user callchains")]
pub struct Cli {
    /// Do not page `pstitch script`'s output in a terminal (perf's
    /// `--no-pager`; PERF_PAGER or PAGER set to "" or "cat" does the same).
    #[arg(long = "no-pager")]
    pub no_pager: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the samples of a perf.data file as `perf script` does. Takes
    /// perf script's options, parsed as perf parses them (`pstitch script
    /// -h` lists them).
    #[command(disable_help_flag = true)]
    Script(ScriptWords),
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

/// `pstitch script`'s words, parsed by perf's rules (`cli/script_args.rs`),
/// not clap's.
#[derive(Args, Debug, Default)]
pub struct ScriptWords {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "OPTIONS")]
    pub words: Vec<std::ffi::OsString>,
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

/// Exit statuses of pstitch's own commands (inject, the reports): the
/// input could not be read completely.
pub const EXIT_DAMAGED: u8 = 1;
/// pstitch's own commands: a usage error (clap's status).
pub const EXIT_USAGE: u8 = 2;

/// Exit statuses, perf's: everything was read (warnings may have been
/// printed).
pub const EXIT_OK: u8 = 0;
/// perf's -EINVAL: an option's value does not fit the input (`--time`).
pub const EXIT_INVALID: u8 = 234;
/// perf's -ENOENT: an event named in an option is not in the recording.
pub const EXIT_NOT_FOUND: u8 = 254;
/// perf's -1: the input could not be read (or not completely: pstitch
/// prints what came before damage first), an option does not fit the
/// recording, or the output could not be written.
pub const EXIT_FAILED: u8 = 255;

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Script(w) => {
            ExitCode::from(run_script(&w.words, cli.no_pager))
        }
        Command::Inject(args) => ExitCode::from(run_inject(&args)),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command().mut_subcommand("script", script_completions);
            let shell = match shell {
                Shell::Bash => clap_complete::Shell::Bash,
                Shell::Zsh => clap_complete::Shell::Zsh,
                Shell::Fish => clap_complete::Shell::Fish,
            };
            // clap_complete panics when its output fails (`| head`): write
            // it here instead, quietly.
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut cmd, "pstitch", &mut text);
            let _ = std::io::stdout().write_all(&text);
            ExitCode::SUCCESS
        }
    }
}

/// perf script's options as clap arguments, for completions only (the
/// parsing is perf's, see `cli/options.rs`).
fn script_completions(cmd: clap::Command) -> clap::Command {
    use clap::{Arg, ArgAction};
    use options::Kind;
    let cmd = cmd.mut_arg("words", |a| a.hide(true));
    script_args::OPTIONS.iter().fold(cmd, |cmd, o| {
        let help = o.help.lines().next().unwrap_or("").to_string();
        let mut arg = Arg::new(o.long).long(o.long).help(help);
        if let Some(c) = o.short {
            arg = arg.short(c as char);
        }
        arg = match o.kind {
            Kind::Boolean | Kind::CallbackNoArg => arg.action(ArgAction::SetTrue),
            Kind::Incr => arg.action(ArgAction::Count),
            Kind::CallbackOptArg => arg.num_args(0..=1).require_equals(true),
            _ => arg.value_name(o.argh.unwrap_or("n")),
        };
        cmd.arg(arg)
    })
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

/// `-v`: what was read, for stderr (perf's `perf report -D`-style counts).
fn stats(name: &str, report: &Report) -> Vec<String> {
    use pstitch::perf_data::record::kind;
    let (st, stitch) = (&report.stats, &report.stitch);
    let total: u64 = st.by_type.iter().map(|(_, n)| n).sum();
    let mut out = vec![format!("pstitch: {name}: {total} records")];
    for (t, n) in st.by_type.iter() {
        out.push(format!("  {:>20}: {n}", kind::name(t)));
    }
    let extra = [
        ("records for unknown event ids", st.nr_unknown_id),
        ("records of unknown types", st.nr_unknown_type),
        ("records queued after their round was flushed", st.nr_unordered),
        ("events lost (PERF_RECORD_LOST)", st.lost_events),
        ("samples lost (PERF_RECORD_LOST_SAMPLES)", st.lost_samples),
    ];
    for (what, n) in extra.iter().filter(|(_, n)| *n > 0) {
        out.push(format!("  {what}: {n}"));
    }
    if stitch.held > 0 || stitch.deferred_records > 0 {
        out.push(format!(
            "  deferred callchains: {} samples held (at most {} at once), {} merged, {} unmerged, {} unstitched; {} deferred records, {} matched nothing",
            stitch.held, stitch.peak_held, stitch.merged, stitch.unmerged, stitch.flushed, stitch.deferred_records, stitch.unmatched_records
        ));
    }
    out.push(format!("  CPU time: {:.2} s reading, {:.2} s printing", report.reading_cpu.as_secs_f64(), report.printing_cpu.as_secs_f64()));
    out
}

/// The options as the library takes them.
pub fn config(args: &ScriptArgs) -> ScriptConfig {
    let output = ScriptOptions {
        per_event: script::PerEvent::All,
        fields: args.fields.clone(),
        nanosecs: args.ns,
        hide_call_graph: args.hide_call_graph,
        max_stack: args.max_stack as usize,
        max_blocks: args.max_blocks,
        show_task_events: args.show_task_events,
        show_mmap_events: args.show_mmap_events,
        show_lost_events: args.show_lost_events,
        show_switch_events: args.show_switch_events,
        show_namespace_events: args.show_namespace_events,
        show_cgroup_events: args.show_cgroup_events,
        show_round_events: args.show_round_events,
        show_bpf_events: args.show_bpf_events,
        show_text_poke_events: args.show_text_poke_events,
        show_on_off_events: args.show_on_off_events,
        reltime: args.reltime,
        deltatime: args.deltatime,
        latency: args.latency,
        unwind_styles: args.unwind_styles.map_or_else(Default::default, |(libdw, libunwind)| pstitch::UnwindStyles { libdw, libunwind }),
        debug_mode: args.debug_mode,
        dsos: args.dsos.as_deref().map(script::parse_byte_list),
        symbols: args.symbols.as_deref().map(script::parse_list),
        addr_range: args.addr_range,
    };
    let mut session = SessionOptions {
        no_merge_callchains: !args.merge_callchains,
        // perf turns time ordering off to show the rounds as they come.
        unordered: args.show_round_events || args.dump_unsorted_raw_trace,
        ..Default::default()
    };
    if let Some(mib) = args.queue_limit {
        session.limits.max_queued_bytes = usize::try_from(mib << 20).unwrap_or(usize::MAX);
    }
    // (Checked while parsing.)
    let (symfs, symfs_flat) = match args.symfs.as_deref().map(script::parse_symfs) {
        Some(Ok((dir, flat))) => (Some(dir), flat),
        _ => (None, false),
    };
    let symbols = SymbolConfig {
        symfs,
        symfs_flat,
        kallsyms: args.kallsyms.clone(),
        vmlinux: args.vmlinux.clone(),
        show_kernel_path: args.show_kernel_path,
        buildid_dir: buildid_dir(),
        demangle: args.demangle,
        demangle_kernel: args.demangle_kernel,
        inline: args.inline,
        full_source_path: args.full_source_path,
        bt_stop: args.stop_bt.as_deref().map(script::parse_list).unwrap_or_default(),
    };
    let header = match (args.header_only, args.header) {
        (true, _) => HeaderMode::Only,
        (false, true) => HeaderMode::With,
        (false, false) => HeaderMode::None,
    };
    let dump = match (args.dump_unsorted_raw_trace, args.dump_raw_trace) {
        (true, _) => script::Dump::Unsorted,
        (false, true) => script::Dump::Sorted,
        (false, false) => script::Dump::None,
    };
    ScriptConfig {
        output,
        session,
        symbols,
        header,
        show_info: args.show_info,
        time: args.time.clone(),
        cpu_list: args.cpu.clone(),
        pid_list: args.pid.clone(),
        tid_list: args.tid.clone(),
        comm_list: args.comms.clone(),
        switch_on: args.switch_on.clone(),
        switch_off: args.switch_off.clone(),
        stitch_lbr: args.stitch_lbr,
        dump,
        per_event_dump: args.per_event_dump,
        threads: Threads::for_input(&args.input.clone().unwrap_or_else(default_input)),
    }
}

/// Prints what option parsing said; its exit status.
pub fn stopped(stop: &options::Stop) -> u8 {
    let _ = std::io::stdout().write_all(stop.stdout.as_bytes());
    let _ = std::io::stderr().write_all(stop.stderr.as_bytes());
    stop.status
}

/// perf's `symbol__validate_sym_arguments`: the kernel symbol files named
/// must be readable.
fn check_symbol_files(args: &ScriptArgs) -> Result<(), String> {
    for f in [&args.vmlinux, &args.kallsyms].into_iter().flatten() {
        if std::fs::File::open(f).is_err() {
            return Err(format!("Invalid file: {}", f.display()));
        }
    }
    Ok(())
}

/// perf's checks when it opens a file (`open_file_read`): it exists, is
/// owned by the user (or root; `-f` overrides) and is not empty. Pipes
/// are let through; of a directory (`perf record --threads`), its `data`
/// file is checked.
fn check_input(path: &std::path::Path, force: bool) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if path == std::path::Path::new("-") {
        return Ok(());
    }
    let name = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            let errno = strerror(&e);
            let hint = if e.kind() == std::io::ErrorKind::NotFound && path == std::path::Path::new("perf.data") { "  (try 'perf record' first)" } else { "" };
            return Err(format!("failed to open {name}: {errno}{hint}"));
        }
    };
    if meta.is_dir() {
        // perf opens a directory's `data` file the same way.
        return check_input(&path.join("data"), force);
    }
    if !meta.is_file() {
        return Ok(());
    }
    if !force && meta.uid() != 0 && meta.uid() != effective_uid() {
        return Err(format!("File {name} not owned by current user or root (use -f to override)"));
    }
    if meta.len() == 0 {
        return Err(format!("zero-sized data ({name}), nothing to do!"));
    }
    Ok(())
}

/// C's `strerror` text of an I/O error (Rust adds " (os error N)").
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}

/// The process's effective user id (from /proc: no libc call, no unsafe).
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|id| id.parse().ok())
        .unwrap_or(0)
}

/// `pstitch script`: parses perf's options, opens the input and prints it
/// to standard output (through a pager in a terminal); messages go to
/// standard error. Returns the exit status.
fn run_script(words: &[std::ffi::OsString], no_pager: bool) -> u8 {
    if words.first().is_some_and(|w| w == "--help") {
        // perf shows its man page here; pstitch prints the option list.
        let usage = script_args::parser().full_usage();
        let _ = std::io::stdout().write_all(usage.as_bytes());
        return EXIT_OK;
    }
    let args = match script_args::parse_os(words) {
        Ok(a) => a,
        Err(stop) => return stopped(&stop),
    };
    for s in &args.said {
        say!("{s}");
    }
    if let Err(e) = check_symbol_files(&args) {
        say!("{e}");
        return EXIT_FAILED;
    }
    if !args.rest.is_empty() {
        return stopped(&script_args::refuse_scripts(&args.rest));
    }
    if args.reltime && args.deltatime {
        say!("reltime and deltatime - the two don't get along well. Please limit to --reltime or --deltatime.");
        return EXIT_FAILED;
    }
    let config = config(&args);
    let path = args.input.clone().unwrap_or_else(default_input);
    let name = path.display().to_string();
    // perf pages its output in a terminal from here on.
    let pager = pager::Pager::start(no_pager);
    let (status, messages) = run_input(&args, config, &path, &name, pager.as_ref().and_then(|p| p.output()));
    // A closed stderr (or pager) is not worth dying for.
    match pager.as_ref().and_then(|p| p.messages()) {
        Some(mut to) => {
            let _ = messages.iter().try_for_each(|m| writeln!(to, "{m}"));
        }
        None => {
            let mut err = std::io::stderr().lock();
            let _ = messages.iter().try_for_each(|m| writeln!(err, "{m}"));
        }
    }
    if let Some(p) = pager {
        p.finish();
    }
    status
}

/// Opens `path` and prints it to the pager's pipe, or standard output;
/// the exit status and the messages to show.
fn run_input(args: &ScriptArgs, config: ScriptConfig, path: &std::path::Path, name: &str, paged: Option<std::fs::File>) -> (u8, Vec<String>) {
    if let Err(e) = check_input(path, args.force) {
        return (EXIT_FAILED, vec![e]);
    }
    let input = match pstitch::open(path, config.threads) {
        Ok(i) => i,
        Err(e) => {
            let mut m = vec!["incompatible file format (rerun with -v to learn more)".to_string()];
            if args.verbose > 0 {
                m.push(format!("pstitch: {name}: {e}"));
            }
            return (EXIT_FAILED, m);
        }
    };
    // perf prints the input's mtime in --header (fstat of the open file;
    // stdin for "-").
    // Of a directory (perf record --threads), its data file's.
    let meta = if path == std::path::Path::new("-") {
        std::fs::metadata("/proc/self/fd/0")
    } else if path.is_dir() {
        std::fs::metadata(path.join("data"))
    } else {
        std::fs::metadata(path)
    };
    let mtime = meta.ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.mtime()
    });
    let progress = match paged {
        Some(_) => None,
        None => ProgressLine::for_terminal(name).map(|mut p| Box::new(move |pr: Progress| p.update(pr)) as Box<dyn FnMut(Progress)>),
    };
    let source = Source { name, path: Some(path), mtime, progress, process_exits: true };
    let report = match paged {
        Some(out) => script::run(input, source, config, out),
        None => script::run(input, source, config, std::io::stdout()),
    };
    let status = match report.outcome {
        Outcome::Printed => EXIT_OK,
        Outcome::Invalid => EXIT_INVALID,
        Outcome::Failed => EXIT_FAILED,
        Outcome::NotFound => EXIT_NOT_FOUND,
    };
    let mut messages = report.messages.clone();
    if args.verbose > 0 {
        messages.extend(stats(name, &report));
    }
    (status, messages)
}

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
    let input = match pstitch::open(&path, Threads::for_input(&path)) {
        Ok(i) => i,
        Err(e) => {
            say!("pstitch: {name}: {e}");
            return EXIT_DAMAGED;
        }
    };
    let config = InjectConfig { keep_deferred: args.keep_deferred, threads: Threads::from_env(), ..Default::default() };
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

//! The report commands on the command line: `pstitch script report NAME`
//! (perf's `perf script report NAME` for its stackcollapse, flamegraph
//! and gecko scripts, done natively) and `pstitch flamegraph` (an SVG).
//!
//! As with perf, `script report NAME` takes perf script options, then the
//! script's own options after `--`; `report gecko` takes its options
//! directly (perf hands it every argument). perf also accepts `rep`,
//! `repo` and `repor` for `report`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser};

use crate::cli::{self, EXIT_DAMAGED, EXIT_OK, EXIT_USAGE, ScriptArgs};
use pstitch::report::{self, D3Tree, FoldOptions, Folded, Gecko, GeckoOptions, Printed, StackSink, StacksConfig, SvgOptions};
use pstitch::script::{HeaderMode, Outcome, Source};

/// Writes one line to stderr (a closed stderr is not worth dying for).
fn say(m: &str) {
    let _ = writeln!(std::io::stderr(), "{m}");
}

/// The command line, if it is a report command; then its exit code.
pub fn main() -> Option<ExitCode> {
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    match args.first().map(String::as_str) {
        Some("flamegraph") => Some(ExitCode::from(flamegraph(&args[1..]))),
        Some("script") if args.get(1).is_some_and(|a| is_report(a)) => {
            let code = match args.get(2).map(String::as_str) {
                Some("stackcollapse") => stackcollapse(&args[3..]),
                Some("flamegraph") => d3(&args[3..]),
                Some("gecko") => gecko(&args[3..]),
                Some(other) => {
                    say(&format!("pstitch: script report: no report named '{other}' (stackcollapse, flamegraph, gecko)"));
                    EXIT_USAGE
                }
                None => {
                    say("pstitch: script report: which report? (stackcollapse, flamegraph, gecko)");
                    EXIT_USAGE
                }
            };
            Some(ExitCode::from(code))
        }
        _ => None,
    }
}

/// perf's test for `report`: a prefix of it, longer than two letters.
fn is_report(a: &str) -> bool {
    a.len() > 2 && "report".starts_with(a)
}

/// `script report NAME` arguments: perf script options (parsed as perf
/// parses them), then the script's own after `--`.
struct ReportCommand {
    script: ScriptArgs,
    /// The report's own options.
    script_args: Vec<String>,
}

impl ReportCommand {
    fn parse(args: &[String]) -> Result<ReportCommand, u8> {
        let (words, own) = match args.iter().position(|a| a == "--") {
            Some(i) => (&args[..i], args[i + 1..].to_vec()),
            None => (args, Vec::new()),
        };
        Ok(ReportCommand { script: script_options(words)?, script_args: own })
    }
}

/// perf script's options among a report command's words (perf's parser:
/// its messages and exit statuses).
fn script_options(words: &[String]) -> Result<ScriptArgs, u8> {
    let args = cli::script_args::parse(words).map_err(|stop| cli::stopped(&stop))?;
    for s in &args.said {
        say(s);
    }
    if let Some(w) = args.rest.first() {
        say(&format!("pstitch: unexpected argument '{w}'"));
        return Err(EXIT_USAGE);
    }
    Ok(args)
}

/// Splits `args` into the words of a command's own options (long names,
/// those in `with_value` taking a value, as `--name value` or
/// `--name=value`; `-o` too for `--output`) and the others (perf script's).
fn split_own(args: &[String], with_value: &[&str], flags: &[&str]) -> (Vec<String>, Vec<String>) {
    let (mut own, mut rest) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        let long = name.strip_prefix("--").unwrap_or("");
        if a == "--" {
            rest.extend_from_slice(&args[i..]);
            break;
        } else if flags.contains(&long) {
            own.push(a.clone());
        } else if with_value.contains(&long) || (name == "-o" && with_value.contains(&"output")) {
            own.push(a.clone());
            if !a.contains('=') && i + 1 < args.len() {
                i += 1;
                own.push(args[i].clone());
            }
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    (own, rest)
}

/// Parses with clap; `Err` with the exit code once clap said why.
fn parse<T: Parser>(name: &str, args: &[String]) -> Result<T, u8> {
    T::try_parse_from(std::iter::once(name.to_string()).chain(args.iter().cloned())).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() { EXIT_USAGE } else { EXIT_OK }
    })
}

/// `stackcollapse.py`'s options.
#[derive(Parser, Debug)]
#[command(name = "stackcollapse")]
struct StackcollapseArgs {
    /// Include the thread id in the stack's root.
    #[arg(long = "include-tid")]
    include_tid: bool,
    /// Include the process id in the stack's root.
    #[arg(long = "include-pid")]
    include_pid: bool,
    /// Do not separate stacks by comm.
    #[arg(long = "no-comm")]
    no_comm: bool,
    /// Beautify Java signatures.
    #[arg(long = "tidy-java")]
    tidy_java: bool,
    /// Annotate kernel functions with `_[k]`.
    #[arg(long = "kernel")]
    kernel: bool,
}

impl StackcollapseArgs {
    fn options(&self) -> FoldOptions {
        FoldOptions {
            include_tid: self.include_tid,
            include_pid: self.include_pid,
            include_comm: !self.no_comm,
            tidy_java: self.tidy_java,
            annotate_kernel: self.kernel,
        }
    }
}

/// Opens the input and runs the report's sink over it; `Err` with the exit
/// code once the reason was said. What perf would print itself comes back
/// (see [`Printed`]): the perf reports write its head before their own
/// standard output, its tail after.
fn collect(script: &ScriptArgs, sink: &mut dyn StackSink) -> Result<Printed, u8> {
    let config = cli::config(script);
    let path = script.input.clone().unwrap_or_else(cli::default_input);
    let name = path.display().to_string();
    let input = pstitch::open(&path, config.threads).map_err(|e| {
        say(&format!("pstitch: {name}: {e}"));
        EXIT_DAMAGED
    })?;
    let source = Source { name: &name, path: None, mtime: None, progress: None, process_exits: true };
    let stacks = StacksConfig { terminal: std::io::stdout().is_terminal(), ..StacksConfig::from_script(&config) };
    let (report, printed) = report::collect(input, source, stacks, sink);
    report.messages.iter().for_each(|m| say(m));
    match report.outcome {
        Outcome::Printed => Ok(printed),
        _ => Err(EXIT_DAMAGED),
    }
}

/// Writes to standard output; a reader gone away is no failure.
fn stdout(b: &[u8]) -> Result<(), u8> {
    let mut out = std::io::stdout().lock();
    match out.write_all(b).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            say(&format!("pstitch: writing output: {e}"));
            Err(EXIT_DAMAGED)
        }
        _ => Ok(()),
    }
}

/// `pstitch script report stackcollapse`: folded stacks on stdout.
fn stackcollapse(args: &[String]) -> u8 {
    let run = || -> Result<(), u8> {
        let cmd = ReportCommand::parse(args)?;
        let opts = parse::<StackcollapseArgs>("stackcollapse", &cmd.script_args)?.options();
        if let Err(e) = opts.check() {
            say(&format!("stackcollapse: error: {e}"));
            return Err(EXIT_USAGE);
        }
        let mut folded = Folded::new(opts);
        let printed = collect(&cmd.script, &mut folded)?;
        stdout(printed.head())?;
        let mut text = Vec::new();
        folded.write(&mut text).map_err(|_| EXIT_DAMAGED)?;
        stdout(&text)?;
        stdout(printed.tail())
    };
    run().err().unwrap_or(EXIT_OK)
}

/// `flamegraph.py`'s options.
#[derive(Parser, Debug)]
#[command(name = "flamegraph", about = "Create flame graphs.")]
struct FlamegraphScriptArgs {
    /// Output file format.
    #[arg(short = 'f', long = "format", default_value = "html", value_parser = ["json", "html"])]
    format: String,
    /// Output file name (`-`: standard output); default flamegraph.html
    /// or stacks.json.
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// Path to the flame graph HTML template.
    #[arg(long = "template", default_value = report::DEFAULT_TEMPLATE)]
    template: PathBuf,
    /// Flame graph color scheme.
    #[arg(long = "colorscheme", default_value = "blue-green", value_parser = ["blue-green", "orange"])]
    colorscheme: String,
    #[arg(short = 'i', long = "input", hide = true)]
    input: Option<PathBuf>,
    /// Allow downloading the HTML template (pstitch never downloads: it
    /// writes a page that loads d3-flame-graph from its CDN instead).
    #[arg(long = "allow-download")]
    allow_download: bool,
    /// Only samples of this event.
    #[arg(short = 'e', long = "event", default_value = "")]
    event: String,
}

/// perf's warning when the template is missing, word for word.
fn template_warning(template: &Path) -> String {
    format!(
        "Warning: Flame Graph template '{}'\ndoes not exist. To avoid this please install a package such as the\njs-d3-flame-graph or libjs-d3-flame-graph, specify an existing flame\ngraph template (--template PATH) or use another output format (--format\nFORMAT).",
        template.display()
    )
}

/// perf's exit code when it has no template and may not download one: its
/// script asks on standard input, which perf does not give it, and the
/// Python error aborts perf (SIGABRT: 128 + 6 as a shell sees it).
const EXIT_NO_TEMPLATE: u8 = 134;

/// `pstitch script report flamegraph`: `stacks.json` or the HTML page.
fn d3(args: &[String]) -> u8 {
    let run = || -> Result<(), u8> {
        let cmd = ReportCommand::parse(args)?;
        let fg = parse::<FlamegraphScriptArgs>("flamegraph", &cmd.script_args)?;
        let mut tree = D3Tree::new(Some(fg.event.clone()));
        let printed = collect(&cmd.script, &mut tree)?;
        stdout(printed.head())?;
        let (text, default_name) = if fg.format == "html" {
            let template = if fg.template.is_file() {
                std::fs::read_to_string(&fg.template).unwrap_or_else(|e| {
                    say(&format!("Error reading template file://{}: {e}\na minimal flame graph will be generated", fg.template.display()));
                    report::MINIMAL_HTML.to_string()
                })
            } else {
                say(&template_warning(&fg.template));
                if !fg.allow_download {
                    say("pstitch: no template and no --allow-download: install libjs-d3-flame-graph, give --template PATH, or use --format json");
                    return Err(EXIT_NO_TEMPLATE);
                }
                say("pstitch: not downloading the template: a minimal flame graph will be generated (it loads d3-flame-graph from cdn.jsdelivr.net when opened)");
                report::MINIMAL_HTML.to_string()
            };
            let mut context = header_text(&cmd.script, fg.input.as_deref());
            if !fg.event.is_empty() {
                context.push_str(&format!("\nFocused event: {}", fg.event));
            }
            let page = tree.fill_template(&template, &fg.colorscheme, &context).map_err(|_| EXIT_DAMAGED)?;
            (page.into_bytes(), "flamegraph.html")
        } else {
            let mut json = Vec::new();
            tree.write_json(&mut json).map_err(|_| EXIT_DAMAGED)?;
            (json, "stacks.json")
        };
        write_output(fg.output.as_deref().unwrap_or(default_name), &text)?;
        stdout(printed.tail())
    };
    run().err().unwrap_or(EXIT_OK)
}

/// Writes a report's file as the scripts do: `-` is standard output,
/// else the file, said on standard output first.
fn write_output(name: &str, text: &[u8]) -> Result<(), u8> {
    if name == "-" {
        return stdout(text);
    }
    stdout(format!("dumping data to {name}\n").as_bytes())?;
    std::fs::write(name, text).map_err(|e| {
        say(&format!("Error writing output file: {e}"));
        EXIT_DAMAGED
    })
}

/// What `perf report --header-only` prints for the input: the page shows
/// it as its context. Empty when the header cannot be read.
fn header_text(script: &ScriptArgs, input: Option<&Path>) -> String {
    let path = input.map(Path::to_path_buf).or_else(|| script.input.clone()).unwrap_or_else(cli::default_input);
    if path == Path::new("-") {
        return String::new();
    }
    let mut config = cli::config(script);
    config.header = HeaderMode::Only;
    let Ok(opened) = pstitch::open(&path, config.threads) else { return String::new() };
    let name = path.display().to_string();
    let mtime = std::fs::metadata(&path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.mtime()
    });
    let text = SharedBuf::default();
    let report = pstitch::script::run(opened, Source { name: &name, path: None, mtime, progress: None, process_exits: false }, config, text.clone());
    if report.outcome != Outcome::Printed {
        return String::new();
    }
    String::from_utf8_lossy(&text.0.lock().map(|b| b.clone()).unwrap_or_default()).into_owned()
}

/// An output that can be read after the run (the script writer must be
/// `Send + 'static`).
#[derive(Default, Clone)]
struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `gecko.py`'s options.
#[derive(Args, Debug)]
struct GeckoScriptArgs {
    /// Color of the user category.
    #[arg(long = "user-color", default_value = "yellow", value_parser = report::GECKO_COLORS)]
    user_color: String,
    /// Color of the kernel category.
    #[arg(long = "kernel-color", default_value = "orange", value_parser = report::GECKO_COLORS)]
    kernel_color: String,
    /// Save the profile to this file (else gecko_profile.json, and how to
    /// open it in the Firefox Profiler is said).
    #[arg(long = "save-only", value_name = "FILE")]
    save_only: Option<String>,
}

/// `script report gecko`: the script's options and perf script's, directly
/// or after `--`.
#[derive(Parser, Debug)]
#[command(name = "pstitch script report gecko")]
struct GeckoCommand {
    #[command(flatten)]
    gecko: GeckoScriptArgs,
}

/// gecko.py's options that take a value.
const GECKO_OPTIONS: &[&str] = &["user-color", "kernel-color", "save-only"];

#[derive(Parser, Debug)]
#[command(name = "gecko")]
struct GeckoAfterDashes {
    #[command(flatten)]
    gecko: GeckoScriptArgs,
}

/// `uname -op`, as the script reads it for the profile's `product`.
fn product() -> String {
    std::process::Command::new("uname")
        .arg("-op")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// `pstitch script report gecko`.
fn gecko(args: &[String]) -> u8 {
    let run = || -> Result<(), u8> {
        let (own, words) = split_own(args, GECKO_OPTIONS, &[]);
        let cmd = ReportCommand::parse(&words)?;
        let g = if cmd.script_args.is_empty() {
            parse::<GeckoCommand>("pstitch script report gecko", &own)?.gecko
        } else {
            parse::<GeckoAfterDashes>("gecko", &[own, cmd.script_args.clone()].concat())?.gecko
        };
        let opts = GeckoOptions { user_color: g.user_color, kernel_color: g.kernel_color, product: product() };
        let mut profile = Gecko::new(opts);
        let printed = collect(&cmd.script, &mut profile)?;
        stdout(printed.head())?;
        let (file, save_only) = match &g.save_only {
            Some(f) => (f.clone(), true),
            None => ("gecko_profile.json".to_string(), false),
        };
        let captured = format!("[ perf gecko: Captured and wrote into {file} ]\n");
        if save_only {
            stdout(captured.as_bytes())?;
        }
        let written = std::fs::File::create(&file).and_then(|f| profile.write(f));
        if let Err(e) = written {
            say(&format!("pstitch: {file}: {e}"));
            return Err(EXIT_DAMAGED);
        }
        if !save_only {
            stdout(captured.as_bytes())?;
            // perf serves the file on port 8000 for a second and asks a
            // browser to open the profiler with its address; pstitch
            // leaves the loading to you.
            say(&format!(
                "To view it, open https://profiler.firefox.com/ and load {file} (\"Load a profile from file\"), or run `pstitch script report gecko --save-only FILE` to name the file."
            ));
        }
        stdout(printed.tail())
    };
    run().err().unwrap_or(EXIT_OK)
}

/// `pstitch flamegraph` options: perf script's, then the drawing's.
#[derive(Parser, Debug)]
#[command(name = "pstitch flamegraph", about = "Write an interactive SVG flame graph of a perf.data file")]
struct FlamegraphCommand {
    /// The SVG file (`-`: standard output).
    #[arg(short = 'o', long = "output", default_value = "flame.svg")]
    output: String,
    /// The title at the top (default "Flame Graph", or "Icicle Graph"
    /// with --inverted, as inferno-flamegraph does).
    #[arg(long = "title")]
    title: Option<String>,
    /// A second title line.
    #[arg(long = "subtitle")]
    subtitle: Option<String>,
    /// The palette: hot, mem, io, red, green, blue, aqua, yellow, purple,
    /// orange, wakeup, java, js, perl, python, rust.
    #[arg(long = "colors", default_value = "hot")]
    colors: String,
    /// Colors by function name (the same function, the same color).
    #[arg(long = "hash")]
    hash: bool,
    /// Merge stacks from the leaf: a reversed flame graph.
    #[arg(long = "reverse")]
    reverse: bool,
    /// An icicle graph: stacks grow down from the top.
    #[arg(long = "inverted")]
    inverted: bool,
    /// Leave out frames narrower than this (pixels).
    #[arg(long = "min-width", default_value_t = 0.1)]
    min_width: f64,
    /// Image width in pixels.
    #[arg(long = "width")]
    width: Option<usize>,
    /// Stacks by process id too (the root frame is `comm-pid`).
    #[arg(long = "include-pid")]
    include_pid: bool,
    /// Mark kernel frames with `_[k]` (the java, js and perl palettes
    /// color them apart).
    #[arg(long = "kernel")]
    kernel: bool,
}

/// `pstitch flamegraph`'s own options that take a value, and its flags;
/// the other words are perf script's.
const FLAMEGRAPH_OPTIONS: &[&str] = &["output", "title", "subtitle", "colors", "min-width", "width"];
const FLAMEGRAPH_FLAGS: &[&str] = &["hash", "reverse", "inverted", "include-pid", "kernel", "help"];

/// `pstitch flamegraph`: the samples' folded stacks drawn by inferno.
fn flamegraph(args: &[String]) -> u8 {
    let run = || -> Result<(), u8> {
        let (own, words) = split_own(args, FLAMEGRAPH_OPTIONS, FLAMEGRAPH_FLAGS);
        let cmd: FlamegraphCommand = parse("pstitch flamegraph", &own)?;
        let script = script_options(&words)?;
        let svg = SvgOptions {
            title: cmd.title.clone().unwrap_or_else(|| if cmd.inverted { "Icicle Graph" } else { "Flame Graph" }.to_string()),
            subtitle: cmd.subtitle.clone(),
            colors: cmd.colors.clone(),
            hash: cmd.hash,
            reverse: cmd.reverse,
            inverted: cmd.inverted,
            min_width: cmd.min_width,
            width: cmd.width,
        };
        if let Err(e) = svg.palette() {
            say(&format!("pstitch flamegraph: {e}"));
            return Err(EXIT_USAGE);
        }
        let mut folded = Folded::new(FoldOptions { include_pid: cmd.include_pid, annotate_kernel: cmd.kernel, ..FoldOptions::default() });
        // Not perf: the deferred records perf would print are left out.
        collect(&script, &mut folded)?;
        let written = if cmd.output == "-" {
            report::write_svg(&folded, &svg, std::io::stdout().lock())
        } else {
            std::fs::File::create(&cmd.output).and_then(|f| report::write_svg(&folded, &svg, f))
        };
        match written {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Err(e) => {
                say(&format!("pstitch flamegraph: {}: {e}", cmd.output));
                Err(EXIT_DAMAGED)
            }
        }
    };
    run().err().unwrap_or(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_spellings() {
        for a in ["rep", "repo", "repor", "report"] {
            assert!(is_report(a), "{a}");
        }
        for a in ["re", "reports", "record", "r"] {
            assert!(!is_report(a), "{a}");
        }
    }

    /// perf script's words and a command's own are told apart.
    #[test]
    fn own_options_are_split_from_perf_scripts() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (own, rest) = split_own(&w(&["-i", "x.data", "--title", "T", "--inverted", "-o=f.svg", "--max-stack", "3", "--", "--kernel"]), FLAMEGRAPH_OPTIONS, FLAMEGRAPH_FLAGS);
        assert_eq!(own, w(&["--title", "T", "--inverted", "-o=f.svg"]));
        assert_eq!(rest, w(&["-i", "x.data", "--max-stack", "3", "--", "--kernel"]));
    }

    /// Clap accepts every command's own options.
    #[test]
    fn commands_are_well_formed() {
        use clap::CommandFactory;
        StackcollapseArgs::command().debug_assert();
        FlamegraphScriptArgs::command().debug_assert();
        GeckoCommand::command().debug_assert();
        GeckoAfterDashes::command().debug_assert();
        FlamegraphCommand::command().debug_assert();
    }
}

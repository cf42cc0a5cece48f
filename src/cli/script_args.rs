//! `pstitch script`'s options: perf script 7.2's option table (names,
//! value names and help text, as perf's usage prints them, in perf's
//! order, which decides what an abbreviation means), parsed with perf's
//! rules (see [`super::options`]) into [`ScriptArgs`].
//!
//! Every option perf script has is here. What pstitch does with each is in
//! the man page (`man/pstitch-script.1`, OPTIONS); the ones that run
//! perf's scripts or filters, or need hardware trace data, are refused
//! with one line and exit status 129.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use super::options::{Handled, Kind, Opt, Parser, Stop, USAGE_STATUS, Value};
use pstitch::script::{self, OutputFields};

const fn opt(short: Option<u8>, long: &'static str, kind: Kind, argh: Option<&'static str>, help: &'static str) -> Opt {
    Opt { short, long, kind, argh, help }
}

/// perf script's `Usage:` lines.
pub const USAGE: &[&str] = &[
    "perf script [<options>]",
    "perf script [<options>] record <script> [<record-options>] <command>",
    "perf script [<options>] report <script> [script-args]",
    "perf script [<options>] <script> [<record-options>] <command>",
    "perf script [<options>] <top-script> [script-args]",
];

/// pstitch's own options (not perf's: not in its usage text).
pub static OWN_OPTIONS: &[Opt] = &[opt(
    None,
    "queue-limit",
    Kind::UInteger,
    Some("MIB"),
    "Most MiB of copied records (pipe input, compressed chunks) waiting to be sorted by time (default 2048)",
)];

/// perf script 7.2's options, in its order.
pub static OPTIONS: &[Opt] = &[
    opt(Some(b'D'), "dump-raw-trace", Kind::Boolean, None, "dump raw trace in ASCII"),
    opt(None, "dump-unsorted-raw-trace", Kind::Boolean, None, "dump unsorted raw trace in ASCII"),
    opt(Some(b'v'), "verbose", Kind::Incr, None, "be more verbose (show symbol address, etc)"),
    opt(Some(b'L'), "Latency", Kind::Boolean, None, "show latency attributes (irqs/preemption disabled, etc)"),
    opt(Some(b'l'), "list", Kind::CallbackNoArg, None, "list available scripts"),
    opt(None, "list-dlfilters", Kind::CallbackNoArg, None, "list available dlfilters"),
    opt(Some(b's'), "script", Kind::Callback, Some("name"), "script file name (lang:script name, script name, or *)"),
    opt(Some(b'g'), "gen-script", Kind::String, Some("lang"), "generate perf-script.xx script in specified language"),
    opt(None, "dlfilter", Kind::String, Some("file"), "filter .so file name"),
    opt(None, "dlarg", Kind::Callback, Some("argument"), "filter argument"),
    opt(Some(b'i'), "input", Kind::String, Some("file"), "input file name"),
    opt(Some(b'd'), "debug-mode", Kind::Boolean, None, "do various checks like samples ordering and lost events"),
    opt(None, "header", Kind::Boolean, None, "Show data header."),
    opt(None, "header-only", Kind::Boolean, None, "Show only data header."),
    opt(Some(b'k'), "vmlinux", Kind::String, Some("file"), "vmlinux pathname"),
    opt(None, "kallsyms", Kind::String, Some("file"), "kallsyms pathname"),
    opt(Some(b'G'), "hide-call-graph", Kind::Boolean, None, "When printing symbols do not display call chain"),
    opt(None, "symfs", Kind::Callback, Some("directory[,layout]"), "setup root directory which contains debug files:\n\t\t\t\tdirectory:\tLook for files with symbols relative to this directory.\n\t\t\t\tlayout:   \tLayout of files, 'hierarchy' matches full path (default), 'flat' only matches base name.\n"),
    opt(Some(b'F'), "fields", Kind::Callback, Some("str"), "comma separated output fields prepend with 'type:'. +field to add and -field to remove.Valid types: hw,sw,trace,raw,synth. Fields: comm,tid,pid,time,cpu,event,trace,ip,sym,dso,dsoff,addr,symoff,srcline,period,iregs,uregs,brstack,brstacksym,flags,data_src,weight,bpf-output,brstackinsn,brstackinsnlen,brstackdisasm,brstackoff,callindent,insn,disasm,insnlen,synth,phys_addr,metric,misc,srccode,ipc,tod,data_page_size,code_page_size,ins_lat,machine_pid,vcpu,cgroup,retire_lat,brcntr"),
    opt(Some(b'a'), "all-cpus", Kind::Boolean, None, "system-wide collection from all CPUs"),
    opt(None, "dsos", Kind::String, Some("dso[,dso...]"), "only consider symbols in these DSOs"),
    opt(Some(b'S'), "symbols", Kind::String, Some("symbol[,symbol...]"), "only consider these symbols"),
    opt(None, "addr-range", Kind::Integer, None, "Use with -S to list traced records within address range"),
    opt(None, "insn-trace", Kind::CallbackOptArg, Some("raw|disasm"), "Decode instructions from itrace"),
    opt(None, "xed", Kind::CallbackOptArg, None, "Run xed disassembler on output"),
    opt(None, "call-trace", Kind::CallbackOptArg, None, "Decode calls from itrace"),
    opt(None, "call-ret-trace", Kind::CallbackOptArg, None, "Decode calls and returns from itrace"),
    opt(None, "graph-function", Kind::String, Some("symbol[,symbol...]"), "Only print symbols and callees with --call-trace/--call-ret-trace"),
    opt(None, "stop-bt", Kind::String, Some("symbol[,symbol...]"), "Stop display of callgraph at these symbols"),
    opt(Some(b'C'), "cpu", Kind::String, Some("cpu"), "list of cpus to profile"),
    opt(Some(b'c'), "comms", Kind::String, Some("comm[,comm...]"), "only display events for these comms"),
    opt(None, "pid", Kind::String, Some("pid[,pid...]"), "only consider symbols in these pids"),
    opt(None, "tid", Kind::String, Some("tid[,tid...]"), "only consider symbols in these tids"),
    opt(None, "max-stack", Kind::UInteger, None, "Set the maximum stack depth when parsing the callchain, anything beyond the specified depth will be ignored. Default: kernel.perf_event_max_stack or 127"),
    opt(None, "reltime", Kind::Boolean, None, "Show time stamps relative to start"),
    opt(None, "deltatime", Kind::Boolean, None, "Show time stamps relative to previous event"),
    opt(Some(b'I'), "show-info", Kind::Boolean, None, "display extended information from perf.data file"),
    opt(None, "show-kernel-path", Kind::Boolean, None, "Show the path of [kernel.kallsyms]"),
    opt(None, "show-task-events", Kind::Boolean, None, "Show the fork/comm/exit events"),
    opt(None, "show-mmap-events", Kind::Boolean, None, "Show the mmap events"),
    opt(None, "show-switch-events", Kind::Boolean, None, "Show context switch events (if recorded)"),
    opt(None, "show-namespace-events", Kind::Boolean, None, "Show namespace events (if recorded)"),
    opt(None, "show-cgroup-events", Kind::Boolean, None, "Show cgroup events (if recorded)"),
    opt(None, "show-lost-events", Kind::Boolean, None, "Show lost events (if recorded)"),
    opt(None, "show-round-events", Kind::Boolean, None, "Show round events (if recorded)"),
    opt(None, "show-bpf-events", Kind::Boolean, None, "Show bpf related events (if recorded)"),
    opt(None, "show-text-poke-events", Kind::Boolean, None, "Show text poke related events (if recorded)"),
    opt(None, "per-event-dump", Kind::Boolean, None, "Dump trace output to files named by the monitored events"),
    opt(Some(b'f'), "force", Kind::Boolean, None, "don't complain, do it"),
    opt(None, "max-blocks", Kind::Integer, None, "Maximum number of code blocks to dump with brstackinsn"),
    opt(None, "ns", Kind::Boolean, None, "Use 9 decimal places when displaying time"),
    opt(None, "itrace", Kind::CallbackOptArg, Some("opts"), "Instruction Tracing options\n\t\t\t\ti[period]:    \t\tsynthesize instructions events\n\t\t\t\ty[period]:    \t\tsynthesize cycles events (same period as i)\n\t\t\t\tb:\t    \t\tsynthesize branches events\n\t\t\t\tc:\t    \t\tsynthesize branches events (calls only)\n\t\t\t\tr:\t    \t\tsynthesize branches events (returns only)\n\t\t\t\tx:\t    \t\tsynthesize transactions events\n\t\t\t\tw:\t    \t\tsynthesize ptwrite events\n\t\t\t\tp:\t    \t\tsynthesize power events\n\t\t\t\to:\t\t\tsynthesize other events recorded due to the use\n\t\t\t\t\t\t\tof aux-output (refer to perf record)\n\t\t\t\tI:\t\t\tsynthesize interrupt or similar (asynchronous) events\n\t\t\t\t\t\t\t(e.g. Intel PT Event Trace)\n\t\t\t\te[flags]:\t\tsynthesize error events\n\t\t\t\t\t\t\teach flag must be preceded by + or -\n\t\t\t\t\t\t\terror flags are: o (overflow)\n\t\t\t\t\t\t\t\t\t l (data lost)\n\t\t\t\td[flags]:\t\tcreate a debug log\n\t\t\t\t\t\t\teach flag must be preceded by + or -\n\t\t\t\t\t\t\tlog flags are: a (all perf events)\n\t\t\t\t\t\t\t               o (output to stdout)\n\t\t\t\tf:\t    \t\tsynthesize first level cache events\n\t\t\t\tm:\t    \t\tsynthesize last level cache events\n\t\t\t\tt:\t    \t\tsynthesize TLB events\n\t\t\t\ta:\t    \t\tsynthesize remote access events\n\t\t\t\tg[len]:     \t\tsynthesize a call chain (use with i or x)\n\t\t\t\tG[len]:\t\t\tsynthesize a call chain on existing event records\n\t\t\t\tl[len]:     \t\tsynthesize last branch entries (use with i or x)\n\t\t\t\tL[len]:\t\t\tsynthesize last branch entries on existing event records\n\t\t\t\tsNUMBER:    \t\tskip initial number of events\n\t\t\t\tq:\t\t\tquicker (less detailed) decoding\n\t\t\t\tA:\t\t\tapproximate IPC\n\t\t\t\tZ:\t\t\tprefer to ignore timestamps (so-called \"timeless\" decoding)\n\t\t\t\tT:\t\t\tuse the timestamp trace as kernel time\n\t\t\t\tPERIOD[ns|us|ms|i|t]:   specify period to sample stream\n\t\t\t\tconcatenate multiple options. Default is iybxwpe or cewp\n"),
    opt(None, "full-source-path", Kind::Boolean, None, "Show full source file name path for source lines"),
    opt(None, "demangle", Kind::Boolean, None, "Enable symbol demangling"),
    opt(None, "demangle-kernel", Kind::Boolean, None, "Enable kernel symbol demangling"),
    opt(None, "unwind-style", Kind::String, Some("unwind style"), "unwind styles (libdw,libunwind)"),
    opt(None, "addr2line", Kind::String, Some("path"), "addr2line binary to use for line numbers"),
    opt(None, "time", Kind::String, Some("str"), "Time span of interest (start,stop)"),
    opt(None, "inline", Kind::Boolean, None, "Show inline function"),
    opt(None, "guestmount", Kind::String, Some("directory"), "guest mount directory under which every guest os instance has a subdir"),
    opt(None, "guestvmlinux", Kind::String, Some("file"), "file saving guest os vmlinux"),
    opt(None, "guestkallsyms", Kind::String, Some("file"), "file saving guest os /proc/kallsyms"),
    opt(None, "guestmodules", Kind::String, Some("file"), "file saving guest os /proc/modules"),
    opt(None, "guest-code", Kind::Boolean, None, "Guest code can be found in hypervisor process"),
    opt(None, "stitch-lbr", Kind::Boolean, None, "Enable LBR callgraph stitching approach"),
    opt(None, "merge-callchains", Kind::Boolean, None, "Enable merge deferred user callchains"),
    opt(None, "switch-on", Kind::String, Some("event"), "Consider events after the occurrence of this event"),
    opt(None, "switch-off", Kind::String, Some("event"), "Stop considering events after the occurrence of this event"),
    opt(None, "show-on-off-events", Kind::Boolean, None, "Show the on/off switch events, used with --switch-on and --switch-off"),
];

/// The parser for `pstitch script`.
pub fn parser() -> Parser<'static> {
    Parser { options: OPTIONS, own: OWN_OPTIONS, usage: USAGE }
}

/// The options of `pstitch script`, as given.
#[derive(Debug)]
pub struct ScriptArgs {
    pub input: Option<PathBuf>,
    /// `-F`, applied in order as perf applies them.
    pub fields: OutputFields,
    pub ns: bool,
    pub hide_call_graph: bool,
    pub max_stack: u32,
    pub max_blocks: u32,
    pub inline: bool,
    pub demangle: bool,
    pub demangle_kernel: bool,
    /// `--symfs DIR[,flat|hierarchy]`, as given.
    pub symfs: Option<String>,
    pub kallsyms: Option<PathBuf>,
    pub vmlinux: Option<PathBuf>,
    pub full_source_path: bool,
    pub merge_callchains: bool,
    /// `--comms`, as given: comms are compared as bytes.
    pub comms: Option<Vec<u8>>,
    pub pid: Option<String>,
    pub tid: Option<String>,
    pub cpu: Option<String>,
    pub time: Option<String>,
    /// `--dsos`, as given: DSO names are compared as bytes.
    pub dsos: Option<Vec<u8>>,
    pub symbols: Option<String>,
    pub stop_bt: Option<String>,
    pub addr_range: i32,
    pub show_task_events: bool,
    pub show_mmap_events: bool,
    pub show_switch_events: bool,
    pub show_namespace_events: bool,
    pub show_cgroup_events: bool,
    pub show_lost_events: bool,
    pub show_round_events: bool,
    pub show_bpf_events: bool,
    pub show_text_poke_events: bool,
    pub show_on_off_events: bool,
    /// `--queue-limit MIB` (pstitch's own).
    pub queue_limit: Option<u64>,
    pub switch_on: Option<String>,
    pub switch_off: Option<String>,
    pub show_kernel_path: bool,
    /// `--unwind-style`: (libdw, libunwind) of the last list with a known
    /// name.
    pub unwind_styles: Option<(bool, bool)>,
    pub header: bool,
    pub header_only: bool,
    pub show_info: bool,
    pub verbose: u32,
    pub dump_raw_trace: bool,
    pub dump_unsorted_raw_trace: bool,
    pub latency: bool,
    pub debug_mode: bool,
    pub reltime: bool,
    pub deltatime: bool,
    pub per_event_dump: bool,
    pub force: bool,
    pub stitch_lbr: bool,
    /// What perf says while it parses (`-F` warnings, `--unwind-style`).
    pub said: Vec<String>,
    /// Words after the options (perf's script names and `record`/`report`).
    pub rest: Vec<String>,
}

impl Default for ScriptArgs {
    fn default() -> ScriptArgs {
        ScriptArgs {
            input: None,
            fields: OutputFields::default(),
            ns: false,
            hide_call_graph: false,
            max_stack: script::DEFAULT_MAX_STACK as u32,
            max_blocks: 0,
            inline: true,
            demangle: true,
            demangle_kernel: false,
            symfs: None,
            kallsyms: None,
            vmlinux: None,
            full_source_path: false,
            merge_callchains: true,
            comms: None,
            pid: None,
            tid: None,
            cpu: None,
            time: None,
            dsos: None,
            symbols: None,
            stop_bt: None,
            addr_range: 0,
            show_task_events: false,
            show_mmap_events: false,
            show_switch_events: false,
            show_namespace_events: false,
            show_cgroup_events: false,
            show_lost_events: false,
            show_round_events: false,
            show_bpf_events: false,
            show_text_poke_events: false,
            show_on_off_events: false,
            queue_limit: None,
            switch_on: None,
            switch_off: None,
            show_kernel_path: false,
            unwind_styles: None,
            header: false,
            header_only: false,
            show_info: false,
            verbose: 0,
            dump_raw_trace: false,
            dump_unsorted_raw_trace: false,
            latency: false,
            debug_mode: false,
            reltime: false,
            deltatime: false,
            per_event_dump: false,
            force: false,
            stitch_lbr: false,
            said: Vec::new(),
            rest: Vec::new(),
        }
    }
}

/// Why pstitch refuses an option perf has.
fn refused(option: &str, why: &str) -> Stop {
    Stop { status: USAGE_STATUS, stdout: String::new(), stderr: format!("pstitch: {option}: {why}\n") }
}

const NO_SCRIPTS: &str = "pstitch does not run perf scripts or filters";
const NO_TRACE: &str = "needs hardware trace data (Intel PT, BTS, CoreSight), which pstitch does not decode";

/// A string option's value (`--no-` clears it).
fn string(v: Value) -> Option<String> {
    match v {
        Value::Arg(s) => Some(s),
        _ => None,
    }
}

/// A string option's value as the bytes given (`--no-` clears it).
fn bytes(v: &Value, raw: Option<&[u8]>) -> Option<Vec<u8>> {
    match v {
        Value::Arg(s) => Some(raw.unwrap_or(s.as_bytes()).to_vec()),
        _ => None,
    }
}

/// A path option's value as the bytes given (Unix paths need not be UTF-8).
fn path(v: &Value, raw: Option<&[u8]>) -> Option<PathBuf> {
    bytes(v, raw).map(|b| PathBuf::from(std::ffi::OsString::from_vec(b)))
}

/// What went wrong: a value perf's callback refuses (then the usage), or
/// an option pstitch refuses.
enum Refusal {
    Usage(String),
    Stop(Stop),
}

/// Parses `pstitch script`'s words (after `script`).
pub fn parse(words: &[String]) -> Result<ScriptArgs, Stop> {
    parse_raw(words, &[])
}

/// [`parse`] for the words as the command line gave them: `--dsos`, `-i`,
/// `-k` and `--kallsyms` take their values' bytes, whether UTF-8 or not.
pub fn parse_os(words: &[std::ffi::OsString]) -> Result<ScriptArgs, Stop> {
    let raw: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
    let text: Vec<String> = words.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    parse_raw(&text, &raw)
}

fn parse_raw(words: &[String], raw: &[Vec<u8>]) -> Result<ScriptArgs, Stop> {
    let mut a = ScriptArgs::default();
    let mut stop = None;
    let parsed = parser().parse(words, raw, |o, v, bytes| -> Handled {
        match apply(&mut a, o, v, bytes) {
            Ok(()) => Ok(()),
            Err(Refusal::Usage(msg)) => Err(msg),
            Err(Refusal::Stop(s)) => {
                stop = Some(s);
                // Stops the parser; the refusal replaces its usage text.
                Err(String::new())
            }
        }
    });
    let said: String = a.said.iter().map(|s| format!("{s}\n")).collect();
    match (parsed, stop) {
        (_, Some(mut s)) | (Err(mut s), None) => {
            s.stderr.insert_str(0, &said);
            Err(s)
        }
        (Ok(rest), None) => {
            a.rest = rest;
            Ok(a)
        }
    }
}

/// One occurrence of an option, applied as perf applies it.
fn apply(a: &mut ScriptArgs, o: &Opt, v: Value, raw: Option<&[u8]>) -> Result<(), Refusal> {
    let on = v == Value::On;
    match o.long {
        "dump-raw-trace" => a.dump_raw_trace = on,
        "dump-unsorted-raw-trace" => a.dump_unsorted_raw_trace = on,
        "verbose" => a.verbose = if on { a.verbose + 1 } else { 0 },
        "Latency" => a.latency = on,
        "list" | "list-dlfilters" | "script" | "gen-script" | "dlfilter" | "dlarg" => {
            return Err(Refusal::Stop(refused(&format!("--{}", o.long), NO_SCRIPTS)));
        }
        "insn-trace" | "xed" | "call-trace" | "call-ret-trace" | "graph-function" => {
            return Err(Refusal::Stop(refused(&format!("--{}", o.long), NO_TRACE)));
        }
        "input" => a.input = path(&v, raw),
        "debug-mode" => a.debug_mode = on,
        "header" => a.header = on,
        "header-only" => a.header_only = on,
        "vmlinux" => a.vmlinux = path(&v, raw),
        "kallsyms" => a.kallsyms = path(&v, raw),
        "hide-call-graph" => a.hide_call_graph = on,
        // perf 7.2 crashes on --no-symfs and --no-fields; pstitch goes
        // back to the defaults.
        "symfs" => match v {
            Value::Arg(s) => match script::parse_symfs(&s) {
                Ok(_) => a.symfs = Some(s),
                Err(e) => return Err(Refusal::Usage(format!("{e}\n"))),
            },
            _ => a.symfs = None,
        },
        "fields" => match v {
            Value::Arg(spec) => match a.fields.parse(&spec) {
                Ok(warnings) => a.said.extend(warnings),
                Err(e) => return Err(Refusal::Usage(format!("{}\n", e.0))),
            },
            _ => a.fields = OutputFields::default(),
        },
        "all-cpus" => {}
        "dsos" => a.dsos = bytes(&v, raw),
        "symbols" => a.symbols = string(v),
        "addr-range" => {
            if let Value::Int(n) = v {
                a.addr_range = n as i32;
            }
        }
        "stop-bt" => a.stop_bt = string(v),
        "cpu" => a.cpu = string(v),
        "comms" => a.comms = bytes(&v, raw),
        "pid" => a.pid = string(v),
        "tid" => a.tid = string(v),
        "max-stack" => {
            if let Value::Int(n) = v {
                a.max_stack = n as u32;
            }
        }
        "reltime" => a.reltime = on,
        "deltatime" => a.deltatime = on,
        "show-info" => a.show_info = on,
        "show-kernel-path" => a.show_kernel_path = on,
        "show-task-events" => a.show_task_events = on,
        "show-mmap-events" => a.show_mmap_events = on,
        "show-switch-events" => a.show_switch_events = on,
        "show-namespace-events" => a.show_namespace_events = on,
        "show-cgroup-events" => a.show_cgroup_events = on,
        "show-lost-events" => a.show_lost_events = on,
        "show-round-events" => a.show_round_events = on,
        "show-bpf-events" => a.show_bpf_events = on,
        "show-text-poke-events" => a.show_text_poke_events = on,
        "per-event-dump" => a.per_event_dump = on,
        "force" => a.force = on,
        "max-blocks" => {
            if let Value::Int(n) = v {
                a.max_blocks = n as u32;
            }
        }
        "ns" => a.ns = on,
        // Instruction tracing options: nothing to decode without AUX data.
        "itrace" => {}
        "full-source-path" => a.full_source_path = on,
        "demangle" => a.demangle = on,
        "demangle-kernel" => a.demangle_kernel = on,
        "unwind-style" => match v {
            Value::Arg(style) => {
                // The last list given counts; one naming no known unwinder
                // leaves perf's default (libdw).
                let (mut libdw, mut libunwind) = (false, false);
                for s in style.split(',') {
                    match s {
                        "libdw" => libdw = true,
                        "libunwind" => libunwind = true,
                        _ => a.said.push(format!("Unknown unwind style: {s}")),
                    }
                }
                a.unwind_styles = (libdw || libunwind).then_some((libdw, libunwind));
            }
            _ => return Err(Refusal::Usage(String::new())),
        },
        // pstitch emulates binutils' addr2line; it runs no other program.
        "addr2line" => {}
        "time" => a.time = string(v),
        "inline" => a.inline = on,
        // Guest machines: pstitch reads the host's samples only.
        "guestmount" | "guestvmlinux" | "guestkallsyms" | "guestmodules" | "guest-code" => {}
        "stitch-lbr" => a.stitch_lbr = on,
        "merge-callchains" => a.merge_callchains = on,
        "switch-on" => a.switch_on = string(v),
        "switch-off" => a.switch_off = string(v),
        "show-on-off-events" => a.show_on_off_events = on,
        "queue-limit" => match v {
            Value::Int(n) if (1..=1 << 20).contains(&n) => a.queue_limit = Some(n as u64),
            Value::Off => a.queue_limit = None,
            _ => return Err(Refusal::Usage("  Error: option `queue-limit' expects a number of MiB from 1 to 1048576\n".into())),
        },
        other => unreachable!("option --{other} is in the table but not handled"),
    }
    Ok(())
}

/// perf's script-name words (`record`, `report`, a script): pstitch runs
/// no scripts.
pub fn refuse_scripts(rest: &[String]) -> Stop {
    let what = match rest.first().map(String::as_str) {
        Some(w) if w.len() > 2 && ("record".starts_with(w) || "report".starts_with(w)) && rest.len() > 1 => {
            format!("{w} {}", rest[1])
        }
        Some(w) => w.to_string(),
        None => String::new(),
    };
    refused(&what, NO_SCRIPTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn every_option_is_handled() {
        for o in OPTIONS {
            let v = match o.kind {
                Kind::Boolean | Kind::Incr | Kind::CallbackNoArg => Value::On,
                Kind::Integer | Kind::UInteger => Value::Int(1),
                Kind::String | Kind::Callback | Kind::CallbackOptArg => Value::Arg("libdw".into()),
            };
            let _ = apply(&mut ScriptArgs::default(), o, v, None);
        }
    }

    #[test]
    fn repeats_and_negations() {
        let a = parse(&words("-i a -i b --no-inline --inline --time 1,2 --no-time -vv --max-stack 3 --max-stack=4")).unwrap();
        assert_eq!(a.input, Some(PathBuf::from("b")));
        assert!(a.inline);
        assert_eq!(a.time, None);
        assert_eq!(a.verbose, 2);
        assert_eq!(a.max_stack, 4);
        let a = parse(&words("--hide-call --show-task --no-merge --no-demangle")).unwrap();
        assert!(a.hide_call_graph && a.show_task_events && !a.merge_callchains && !a.demangle);
    }

    #[test]
    fn refusals() {
        let e = parse(&words("-F comm --call-trace")).unwrap_err();
        assert_eq!(e.status, 129);
        assert_eq!(e.stderr, format!("pstitch: --call-trace: {NO_TRACE}\n"));
        let e = parse(&words("-s x.py")).unwrap_err();
        assert_eq!(e.stderr, format!("pstitch: --script: {NO_SCRIPTS}\n"));
        let a = parse(&words("-i x report flamegraph")).unwrap();
        assert_eq!(a.rest, ["report", "flamegraph"]);
        assert_eq!(refuse_scripts(&a.rest).stderr, format!("pstitch: report flamegraph: {NO_SCRIPTS}\n"));
        let e = parse(&words("-F bogus")).unwrap_err();
        assert!(e.stderr.starts_with("Invalid field requested.\n\n Usage: perf script [<options>]\n"), "{}", e.stderr);
        assert!(e.stderr.ends_with("brcntr\n"), "{}", e.stderr);
    }
}

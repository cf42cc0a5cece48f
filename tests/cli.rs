//! Command-line behaviour: completions, option errors, the progress line.

use std::process::{Command, Stdio};

use pstitch::perf_data::attr::sample_type as st;
use pstitch::perf_data::bytes::Endian;
use pstitch::perf_data::record::kind;
use pstitch::perf_data::writer::{AttrEntry, FileWriter, Put, cpu_clock_attr};

mod golden_common;

fn pstitch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pstitch"))
}

/// A file-mode perf.data with `n` samples (IP|TID|TIME|PERIOD) of one
/// cpu-clock event.
fn synthetic(n: usize) -> Vec<u8> {
    let p = Put(Endian::Little);
    let attr = cpu_clock_attr(Endian::Little, 1000, st::IP | st::TID | st::TIME | st::PERIOD);
    let mut data = Vec::new();
    for i in 0..n as u64 {
        p.header(&mut data, kind::SAMPLE, 2, 40);
        p.u64(&mut data, 0x400000 + i);
        p.u32(&mut data, 7);
        p.u32(&mut data, 7);
        p.u64(&mut data, 1_000_000_000 + i * 1000);
        p.u64(&mut data, 1000);
    }
    FileWriter { endian: Endian::Little, attrs: vec![AttrEntry { raw: attr, ids: vec![1] }], data, features: vec![] }.to_bytes()
}

#[test]
fn completions_cover_the_options() {
    for (shell, needle) in [("bash", "--merge-callchains"), ("zsh", "--show-task-events"), ("fish", "dump-raw-trace")] {
        let out = pstitch().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(needle), "{shell} completions lack {needle}");
    }
}

/// `pstitch completions fish | head -1`: the reader goes away; pstitch
/// stops quietly (it used to panic on the broken pipe, status 101).
#[test]
fn completions_into_a_closed_pipe() {
    for shell in ["bash", "zsh", "fish"] {
        let mut child = pstitch().args(["completions", shell]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn bad_options_are_usage_errors() {
    // As perf: status 129, the message, then the usage.
    let out = pstitch().args(["script", "--no-such-option"]).output().unwrap();
    assert_eq!(out.status.code(), Some(129));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("  Error: unknown option `no-such-option'\n\n Usage: perf script [<options>]\n"));
    let out = pstitch().args(["script", "--max-stack", "many"]).output().unwrap();
    assert_eq!(out.status.code(), Some(129));
    let out = pstitch().args(["script", "-F", "bogus", "-i", "/nonexistent"]).output().unwrap();
    assert_eq!(out.status.code(), Some(129));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("Invalid field requested.\n\n Usage:"));
    let out = pstitch().args(["script", "-i", "/nonexistent/perf.data"]).output().unwrap();
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "failed to open /nonexistent/perf.data: No such file or directory\n");
    // What pstitch does not do: one line, status 129.
    for (args, line) in [
        (&["-s", "x.py"][..], "pstitch: --script: pstitch does not run perf scripts or filters\n"),
        (&["--dlfilter", "x.so"][..], "pstitch: --dlfilter: pstitch does not run perf scripts or filters\n"),
        (&["--call-trace"][..], "pstitch: --call-trace: needs hardware trace data (Intel PT, BTS, CoreSight), which pstitch does not decode\n"),
    ] {
        let out = pstitch().arg("script").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(129), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), line, "{args:?}");
    }
}

#[test]
fn synthetic_file_prints_every_sample() {
    let dir = std::env::temp_dir().join(format!("pstitch-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("many.data");
    std::fs::write(&file, synthetic(1000)).unwrap();
    let out = pstitch().args(["script", "-F", "tid,time,ip", "-i"]).arg(&file).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1000);
    assert_eq!(text.lines().next().unwrap(), "      7     1.000000:            400000");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn progress_only_when_stderr_is_a_terminal_and_stdout_is_not() {
    let dir = std::env::temp_dir().join(format!("pstitch-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.data");
    std::fs::write(&file, synthetic(40_000)).unwrap();

    // stderr a pipe: never a progress line.
    let out = pstitch()
        .env("PSTITCH_PROGRESS_DELAY_MS", "0")
        .args(["script", "-F", "tid,ip", "-i"])
        .arg(&file)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    // stderr a terminal (script(1) gives the command a pty), stdout a file.
    let cmd = format!("{} script -F tid,ip -i {} > {}", env!("CARGO_BIN_EXE_pstitch"), file.display(), dir.join("out").display());
    let pty = Command::new("script").args(["-q", "-e", "-c", &cmd, "/dev/null"]).env("PSTITCH_PROGRESS_DELAY_MS", "0").output();
    let pty = pty.expect("script(1) from util-linux is needed for this test");
    assert!(pty.status.success());
    let shown = String::from_utf8_lossy(&pty.stdout);
    assert!(shown.contains("[ pstitch: "), "no progress line on the terminal: {shown:?}");
    assert!(shown.contains("% of "), "{shown:?}");
    assert!(shown.contains("records/s ]"), "{shown:?}");
    assert!(shown.ends_with("\r\x1b[K"), "progress line not erased at the end: {shown:?}");
    assert_eq!(std::fs::read_to_string(dir.join("out")).unwrap().lines().count(), 40_000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn man_pages_render_and_document_every_option() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for page in ["man/pstitch.1", "man/pstitch-script.1", "man/pstitch-inject.1"] {
        let out = Command::new("man")
            .args(["-l", "--warnings"])
            .arg(root.join(page))
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "0")
            .output()
            .expect("man(1) is needed for this test (.ci/run installs man-db)");
        assert!(out.status.success(), "{page}: man failed");
        assert!(out.stdout.len() > 1000, "{page}: rendered nearly nothing");
        assert!(out.stderr.is_empty(), "{page}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Every long option of each command is in its man page.
    for (command, least) in [("script", 15), ("inject", 4)] {
        let help = String::from_utf8(pstitch().args([command, "--help"]).output().unwrap().stdout).unwrap();
        let page = std::fs::read_to_string(root.join(format!("man/pstitch-{command}.1"))).unwrap().replace("\\-", "-");
        let options: Vec<&str> = help
            .split_whitespace()
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches([',', '.', ':', ')']).split(['=', '<', '[', '/']).next().unwrap())
            .collect();
        assert!(options.len() >= least, "{command}: {options:?}");
        for o in options {
            if o == "--help" {
                continue;
            }
            assert!(page.contains(o), "{o} is not documented in man/pstitch-{command}.1");
        }
    }
}

/// A cpu-clock recording with callchains, built by hand: `chains` become the
/// samples' callchains (tid 7, 1 ms apart).
pub fn with_callchains(chains: &[&[u64]]) -> Vec<u8> {
    let p = Put(Endian::Little);
    let attr = cpu_clock_attr(Endian::Little, 1000, st::IP | st::TID | st::TIME | st::CALLCHAIN | st::PERIOD);
    let mut data = Vec::new();
    for (i, chain) in chains.iter().enumerate() {
        p.header(&mut data, kind::SAMPLE, 1, (8 + 40 + 8 * chain.len()) as u16);
        p.u64(&mut data, 0xffffffff81000000 + i as u64);
        p.u32(&mut data, 7);
        p.u32(&mut data, 7);
        p.u64(&mut data, 1_000_000_000 + i as u64 * 1_000_000);
        p.u64(&mut data, 1000); // PERIOD comes before CALLCHAIN
        p.u64(&mut data, chain.len() as u64);
        for ip in chain.iter() {
            p.u64(&mut data, *ip);
        }
    }
    FileWriter { endian: Endian::Little, attrs: vec![AttrEntry { raw: attr, ids: vec![1] }], data, features: vec![] }.to_bytes()
}

#[test]
fn unknown_context_markers_empty_the_callchain() {
    // perf resets the callchain at a context marker it does not know (here
    // PERF_CONTEXT_GUEST) and prints the sample with an empty callchain;
    // the expected text is perf-ref's output for this file.
    const KERNEL: u64 = -128i64 as u64;
    const GUEST: u64 = -2048i64 as u64;
    let dir = std::env::temp_dir().join(format!("pstitch-ctx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ctx.data");
    std::fs::write(&file, with_callchains(&[&[KERNEL, 0xffffffff81000010, GUEST, 0x400000], &[KERNEL, 0xffffffff81000020]])).unwrap();
    let out = pstitch().args(["script", "-F", "tid,time,ip", "-i"]).arg(&file).output().unwrap();
    if std::env::var_os("PSTITCH_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "      7     1.000000: \n\n      7     1.001000: \n\tffffffff81000020\n\n"
    );
}

#[test]
fn field_errors_say_what_perf_says() {
    // Messages as perf-ref (perf 7.2) prints them for tests/golden/c-threads.
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/c-threads");
    for (fields, message) in [
        ("cpu", "Samples for 'cpu-clock' event do not have CPU attribute set. Cannot print 'cpu' field."),
        ("comm,+tid", "Cannot mix +-field with overridden fields"),
        ("symoff", "Display of offsets requested but symbol is notselected."),
        ("sw:trace", "'trace' not valid for software events."),
        ("srcline", "Display of source line number requested but sample IP is not\nselected. Hence, no address to lookup the source line number."),
    ] {
        let out = pstitch().current_dir(&case).args(["script", "-i", "perf.data", "-F", fields]).output().unwrap();
        assert_eq!(out.status.code(), Some(if fields == "comm,+tid" || fields == "sw:trace" { 129 } else { 255 }), "-F {fields}");
        assert!(out.stdout.is_empty(), "-F {fields}");
        // Errors in -F itself come with the usage, as in perf.
        assert!(String::from_utf8_lossy(&out.stderr).starts_with(&format!("{message}\n")), "-F {fields}");
    }
}

/// perf refuses a file that is neither the user's nor root's unless `-f`
/// is given (perf-ref's message and status, checked by hand: a copy of
/// c-threads/perf.data owned by uid 65534, read as root).
#[test]
fn files_of_other_users_need_force() {
    use std::os::unix::fs::MetadataExt;
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/c-threads");
    let dir = std::env::temp_dir().join(format!("pstitch-owner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(case.join("perf.data"), dir.join("perf.data")).unwrap();
    let run = |extra: &[&str]| {
        pstitch()
            .current_dir(&dir)
            .args(["script", "-i", "perf.data", "--no-inline"])
            .arg(format!("--symfs={}", case.join("symfs").display()))
            .arg(format!("--kallsyms={}", case.join("kallsyms").display()))
            .args(extra)
            .output()
            .unwrap()
    };
    let own = run(&[]);
    assert_eq!(own.status.code(), Some(0), "{}", String::from_utf8_lossy(&own.stderr));
    let me = std::fs::metadata(dir.join("perf.data")).unwrap().uid();
    if me == 0 {
        std::os::unix::fs::chown(dir.join("perf.data"), Some(65534), None).unwrap();
        let refused = run(&[]);
        assert_eq!(refused.status.code(), Some(255));
        assert!(refused.stdout.is_empty());
        assert_eq!(String::from_utf8_lossy(&refused.stderr), "File perf.data not owned by current user or root (use -f to override)\n");
        let forced = run(&["-f"]);
        assert_eq!(forced.status.code(), Some(0));
        assert_eq!(forced.stdout, own.stdout);
    } else {
        // Only root can give a file away: the refusal itself is not tested.
        eprintln!("files_of_other_users_need_force: not root, only -f's acceptance is checked");
        assert_eq!(run(&["-f"]).stdout, own.stdout);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--per-event-dump` writes each event's samples to
/// `<input>.<event>.dump` and a line per file to stdout. Expected values are
/// perf-ref's, checked by hand on a copy of side-band/perf.data: its stdout
/// is the line below (perf counts the file's size before the last stdio
/// buffer is flushed), its file is byte for byte side-band/default.out (also
/// perf-ref's). An event name with a '/' cannot be a file name:
/// two-events' `page-faults/period=1/` makes perf fail before printing,
/// leaving the files created so far empty.
#[test]
fn per_event_dump_writes_a_file_per_event() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let dir = std::env::temp_dir().join(format!("pstitch-per-event-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |case: &str| {
        let case = root.join(case);
        std::fs::copy(case.join("perf.data"), dir.join("perf.data")).unwrap();
        pstitch()
            .current_dir(&dir)
            .env("PERF_BUILDID_DIR", "/nonexistent")
            .args(["script", "-i", "perf.data", "--per-event-dump"])
            .arg(format!("--symfs={}", case.join("symfs").display()))
            .arg(format!("--kallsyms={}", case.join("kallsyms").display()))
            .output()
            .unwrap()
    };
    let out = run("side-band");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[ perf script: Wrote 0.059 MB perf.data.cpu-clock:u.dump (273 samples) ]\n");
    let want = std::fs::read(root.join("side-band/default.out")).unwrap();
    assert!(std::fs::read(dir.join("perf.data.cpu-clock:u.dump")).unwrap() == want, "the dump file differs from perf's output");

    let out = run("two-events");
    assert_eq!(out.status.code(), Some(255));
    assert!(out.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "Couldn't create the per event dump files\n");
    assert_eq!(std::fs::metadata(dir.join("perf.data.cpu-clock.dump")).unwrap().len(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `pstitch script --per-event-dump ARGS` on a copy of the golden `case`'s
/// perf.data in a directory of its own (named by `tag`), with the case's
/// symfs and kallsyms: the directory (for the dump files) and the output,
/// whose exit status must be 0.
fn per_event_dump_of(case: &std::path::Path, tag: &str, args: &[&str]) -> (std::path::PathBuf, std::process::Output) {
    let dir = std::env::temp_dir().join(format!("pstitch-per-event-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(case.join("perf.data"), dir.join("perf.data")).unwrap();
    let out = pstitch()
        .current_dir(&dir)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "-i", "perf.data", "--per-event-dump"])
        .args(args)
        .arg(format!("--symfs={}", case.join("symfs").display()))
        .arg(format!("--kallsyms={}", case.join("kallsyms").display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, out)
}

/// `--per-event-dump` with the `brcntr` field: perf prints the branch
/// counters' abbreviation list to standard output (once per sample line),
/// not to the events' files (checked by hand with perf-ref on a copy of
/// brcntr/perf.data): each file holds the lines of its event of
/// brcntr/brcntr-plus.out (perf-ref's) without the lists, standard output
/// the lists, then a line per file.
#[test]
fn per_event_dump_prints_the_branch_counter_list_to_stdout() {
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/brcntr");
    let (dir, out) = per_event_dump_of(&case, "brcntr", &["-F", "+brcntr"]);
    let golden = std::fs::read(case.join("brcntr-plus.out")).unwrap();
    let (mut lists, mut files) = (Vec::new(), std::collections::BTreeMap::<&str, Vec<u8>>::new());
    let mut event = "";
    for line in golden.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"# ") {
            lists.extend_from_slice(line);
            continue;
        }
        let text = String::from_utf8_lossy(line);
        if let Some(e) = ["cpu-clock", "task-clock", "page-faults"].into_iter().find(|e| text.contains(&format!(" {e}: "))) {
            event = e;
        }
        files.entry(event).or_default().extend_from_slice(line);
    }
    assert_eq!(lists.iter().filter(|&&b| b == b'\n').count(), 6 * 136, "a list per sample line");
    for (event, want) in &files {
        assert!(std::fs::read(dir.join(format!("perf.data.{event}.dump"))).unwrap() == *want, "{event}: the dump file differs from perf's");
    }
    let (listed, trailer) = out.stdout.split_at(lists.len().min(out.stdout.len()));
    assert!(listed == lists, "standard output does not start with perf's lists");
    let trailer = String::from_utf8_lossy(trailer);
    assert_eq!(trailer.lines().count(), 3, "{trailer}");
    assert!(trailer.lines().all(|l| l.starts_with("[ perf script: Wrote ")), "{trailer}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--per-event-dump` with the `srccode` field: perf prints the srccode
/// lines to standard output, not to the event's file (checked by hand with
/// perf-ref on a copy of c-threads/perf.data, also with
/// `--show-mmap-events`): the file holds c-threads/srccode.out (perf-ref's)
/// without them, standard output holds them, then the line about the file.
#[test]
fn per_event_dump_prints_srccode_lines_to_stdout() {
    srccode_lines_on_stdout("c-threads", "srccode", &["-F", "comm,tid,ip,sym,srccode"], 444);
}

/// The same for the srccode lines of brstackinsn's dump (checked by hand
/// with perf-ref on a copy of brstack-callchain/perf.data): they go to
/// standard output too, in their order among the sample's own.
#[test]
fn per_event_dump_prints_brstackinsn_srccode_lines_to_stdout() {
    srccode_lines_on_stdout("brstack-callchain", "brstackinsn-srccode", &["-F", "ip,brstackinsn,srccode", "--time", ",748.253150"], 416);
}

/// `--per-event-dump ARGS` on golden case `case`, whose `variant` is the
/// same without --per-event-dump: the dump file (one event) must hold that
/// output without the srccode lines, standard output those lines, then the
/// line about the file (`samples` in it).
fn srccode_lines_on_stdout(case: &str, variant: &str, args: &[&str], samples: usize) {
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(case);
    golden_common::install_sources(&case).unwrap();
    let (dir, out) = per_event_dump_of(&case, variant, args);
    let golden = std::fs::read(case.join(format!("{variant}.out"))).unwrap();
    let (code, rest): (Vec<&[u8]>, Vec<&[u8]>) = golden.split_inclusive(|&b| b == b'\n').partition(|l| l.starts_with(b"|"));
    assert!(code.len() > 10, "the golden output has srccode lines");
    assert!(std::fs::read(dir.join("perf.data.cpu-clock.dump")).unwrap() == rest.concat(), "the dump file differs from perf's");
    let stdout = out.stdout.split_inclusive(|&b| b == b'\n').collect::<Vec<_>>();
    let (trailer, lines) = stdout.split_last().unwrap();
    assert!(lines.concat() == code.concat(), "standard output is not perf's srccode lines");
    let trailer = String::from_utf8_lossy(trailer);
    assert!(trailer.starts_with("[ perf script: Wrote ") && trailer.ends_with(&format!(" MB perf.data.cpu-clock.dump ({samples} samples) ]\n")), "{trailer}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--per-event-dump` on pipe-mode input (a pipe recording read from a
/// file, and the same from standard input). Expected values are perf-ref's,
/// checked by hand: it names the files after the input's path, `(null)` for
/// standard input, and after each event's name as its ATTR record gives it
/// (`unknown tracepoint id=0x…` for a tracepoint, whose format comes later);
/// each file holds, byte for byte, what perf-ref prints of that recording
/// with the same options (`pipe/no-inline.out`). `--no-inline`: perf starts
/// addr2line for inline frames, flushing every stdio stream first, which
/// moves the size perf reports (the man page says so under --per-event-dump).
#[test]
fn per_event_dump_of_pipe_input() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let dir = std::env::temp_dir().join(format!("pstitch-per-event-pipe-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("stdin")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let run = |case: &str, stdin: bool| {
        let case = root.join(case);
        std::fs::copy(case.join("perf.data"), dir.join("perf.data")).unwrap();
        let mut cmd = pstitch();
        // Where the copy of standard input goes (and must not stay).
        cmd.env("PERF_BUILDID_DIR", "/nonexistent").env("TMPDIR", dir.join("tmp")).arg("script");
        if stdin {
            cmd.current_dir(dir.join("stdin")).args(["-i", "-"]).stdin(std::fs::File::open(dir.join("perf.data")).unwrap());
        } else {
            cmd.current_dir(&dir).args(["-i", "perf.data"]);
        }
        cmd.args(["--per-event-dump", "--no-inline"])
            .arg(format!("--symfs={}", case.join("symfs").display()))
            .arg(format!("--kallsyms={}", case.join("kallsyms").display()))
            .output()
            .unwrap()
    };
    let want = std::fs::read(root.join("pipe/no-inline.out")).unwrap();
    let out = run("pipe", false);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[ perf script: Wrote 0.043 MB perf.data.cpu-clock:H.dump (167 samples) ]\n");
    assert!(std::fs::read(dir.join("perf.data.cpu-clock:H.dump")).unwrap() == want, "the dump file differs from perf's output");
    let out = run("pipe", true);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[ perf script: Wrote 0.043 MB (null).cpu-clock:H.dump (167 samples) ]\n");
    assert!(std::fs::read(dir.join("stdin/(null).cpu-clock:H.dump")).unwrap() == want, "the dump file differs from perf's output");

    let out = run("tp-pipe", true);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let perf = [
        "0.125 MB (null).unknown tracepoint id=0x292.dump (49 samples)",
        "0.121 MB (null).unknown tracepoint id=0x291.dump (83 samples)",
        "0.004 MB (null).unknown tracepoint id=0x1cc.dump (10 samples)",
        "0.004 MB (null).unknown tracepoint id=0x1cb.dump (11 samples)",
        "0.000 MB (null).unknown tracepoint id=0x1d2.dump (1 samples)",
        "0.000 MB (null).unknown tracepoint id=0x151.dump (1 samples)",
        "0.008 MB (null).unknown tracepoint id=0x174.dump (12 samples)",
    ];
    let want: String = perf.iter().map(|l| format!("[ perf script: Wrote {l} ]\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0, "the copy of standard input is removed");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `tests/golden/pipe`'s recording with a FINISHED_ROUND after every
/// `every` records (a live recording has one per pass over the buffers),
/// and the offsets where records end.
fn pipe_with_rounds(every: usize) -> (Vec<u8>, Vec<usize>) {
    let d = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/pipe/perf.data")).expect("pipe recording");
    let (mut out, mut ends) = (d[..16].to_vec(), Vec::new());
    let (mut pos, mut n) = (16, 0);
    while pos + 8 <= d.len() {
        let size = u16::from_le_bytes([d[pos + 6], d[pos + 7]]) as usize;
        out.extend_from_slice(&d[pos..pos + size]);
        pos += size;
        n += 1;
        if n % every == 0 {
            Put(Endian::Little).header(&mut out, kind::FINISHED_ROUND, 0, 8);
        }
        ends.push(out.len());
    }
    (out, ends)
}

/// `perf record -o - | pstitch script`: while the writer pauses, what is
/// ordered and final is printed, not held back until more comes; and the
/// pauses change nothing in the output.
#[test]
fn a_pausing_pipe_shows_what_is_final() {
    use std::io::{Read, Write};
    let (data, ends) = pipe_with_rounds(16);
    let args = ["script", "-i", "-", "--no-inline", "-F", "comm,pid,tid,time,event,ip,period"];
    let path = std::env::temp_dir().join(format!("pstitch-pause-{}.data", std::process::id()));
    std::fs::write(&path, &data).expect("write");
    let whole = pstitch().args(["script", "-i"]).arg(&path).args(&args[3..]).output().expect("run");
    std::fs::remove_file(&path).ok();
    assert!(whole.status.success() && !whole.stdout.is_empty());

    let mut child = pstitch().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    // Two thirds of the records, then a pause.
    let half = ends[ends.len() * 2 / 3];
    stdin.write_all(&data[..half]).expect("first part");
    stdin.flush().expect("flush");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let during_pause = seen.lock().unwrap().len();
    stdin.write_all(&data[half..]).expect("rest");
    drop(stdin);
    assert!(child.wait().expect("exit").success());
    reader.join().unwrap();
    assert!(during_pause > 0, "nothing was printed while the writer paused");
    assert!(during_pause < whole.stdout.len(), "the queue's records wait for their round");
    assert_eq!(String::from_utf8_lossy(&seen.lock().unwrap()), String::from_utf8_lossy(&whole.stdout));
}

/// A pipe-mode recording of `n` cpu-clock samples and no FINISHED_ROUND:
/// everything waits in the ordering queue until the end.
fn synthetic_pipe(n: usize) -> Vec<u8> {
    let p = Put(Endian::Little);
    let file = synthetic(0);
    // The attr as the file-mode header holds it (its section's offset is
    // at byte 24 of the header).
    let at = u64::from_le_bytes(file[24..32].try_into().unwrap()) as usize;
    let attr = &file[at..at + 128];
    let mut data = pstitch::perf_data::writer::pipe_header(Endian::Little);
    p.header(&mut data, kind::HEADER_ATTR, 0, (8 + attr.len() + 8) as u16);
    data.extend_from_slice(attr);
    p.u64(&mut data, 1);
    for i in 0..n as u64 {
        p.header(&mut data, kind::SAMPLE, 2, 40);
        p.u64(&mut data, 0x400000 + i);
        p.u32(&mut data, 7);
        p.u32(&mut data, 7);
        // Out of order in pairs, so that early delivery shows.
        p.u64(&mut data, 1_000_000_000 + (i ^ 1) * 1000);
        p.u64(&mut data, 1000);
    }
    data
}

/// The ordering queue is bounded (--queue-limit, in MiB): past it the
/// older half goes out early and a warning says the order may differ;
/// every sample is still printed.
#[test]
fn the_ordering_queue_limit_is_an_option_and_said() {
    use std::io::Write;
    let data = synthetic_pipe(60_000);
    let run = |limit: Option<&str>| {
        let mut cmd = pstitch();
        cmd.args(["script", "-i", "-", "-F", "time,ip"]);
        if let Some(l) = limit {
            cmd.args(["--queue-limit", l]);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let d = data.clone();
        let w = std::thread::spawn(move || stdin.write_all(&d));
        let out = child.wait_with_output().unwrap();
        w.join().unwrap().unwrap();
        assert!(out.status.success());
        (String::from_utf8_lossy(&out.stdout).lines().count(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (lines, err) = run(None);
    assert_eq!(lines, 60_000);
    assert!(!err.contains("waiting to be sorted"), "{err}");
    let (lines, err) = run(Some("1"));
    assert_eq!(lines, 60_000, "every sample printed");
    assert!(err.contains("more than 1 MiB of records waiting to be sorted by time"), "{err}");
    // (A usage error, with perf's status.)
    let out = pstitch().args(["script", "--queue-limit", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(129));
}

/// perf unwinds a `--call-graph dwarf` sample only where it prints the
/// sample's ip (`process_event` resolves the callchain there): with a
/// field list without the ip, pstitch unwinds nothing either, so it has
/// nothing to say about samples without user frames (dwarf-c has some, in
/// `[vdso]`), and its output is still perf's (the golden variant `no-ip`).
/// In both thread modes.
#[test]
fn dwarf_stacks_are_unwound_only_where_the_ip_is_shown() {
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/dwarf-c");
    let cache = std::env::temp_dir().join(format!("pstitch-no-ip-cache-{}", std::process::id()));
    for threads in ["1", "2"] {
        let run = |fields: &[&str]| {
            let out = pstitch()
                .current_dir(&case)
                .env("PERF_BUILDID_DIR", "/nonexistent")
                .env("XDG_CACHE_HOME", &cache)
                .env("PSTITCH_THREADS", threads)
                .args(["script", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"])
                .args(fields)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0));
            let said = String::from_utf8_lossy(&out.stderr).contains("--call-graph dwarf");
            (out.stdout, said)
        };
        let (_, said) = run(&[]);
        assert!(said, "the default output unwinds, and says which samples have no user frames");
        let (_, said) = run(&["-F", "comm,tid,ip,sym"]);
        assert!(said, "the ip is shown: unwound");
        let (out, said) = run(&["-F", "comm,pid,tid,time,event,period"]);
        assert!(!said, "no ip shown: nothing unwound ({threads} threads)");
        assert!(out == std::fs::read(case.join("no-ip.out")).unwrap(), "output differs from perf's");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

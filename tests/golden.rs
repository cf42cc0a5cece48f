//! Golden tests: every `tests/golden/<case>/<variant>.args` is run through
//! `pstitch script` inside the case directory and its stdout compared byte
//! for byte with `<variant>.out`, which perf-ref (perf 7.2) produced from the
//! same perf.data with the same options (see tests/fixtures/make-golden.sh).
//! The exit status must be perf-ref's (`<variant>.status`), and where perf
//! failed, printed nothing on stdout or said more on stderr than the lines
//! make-golden.sh knows as incidental, its stderr (`<variant>.err`) is part
//! of the expectation too, byte for byte, but for pstitch's own summary
//! lines (deferred callchains left unmerged, dwarf samples not unwound),
//! which the man page lists under COMPATIBILITY.
//!
//! `tests/golden/pending.txt` lists variants known not to match yet, each
//! with the issue that will fix it. They are reported as PENDING, never as
//! passing, and one that starts to match fails the run until it is removed
//! from the list.
//!
//! Deliberate differences from perf (listed in the man page under
//! COMPATIBILITY) are declared per case in a `deviations` file. One is
//! `comm-at-sample-time original=<case>`: a deferred sample held until its
//! user callchain arrives is printed with the comm its thread had
//! when the sample was taken, where perf prints the comm at printing time
//! (`:TID` once the thread has exited). The harness then accepts a line that
//! differs from perf's ONLY in the comm, and only if that comm is the one
//! perf-ref printed for the same thread at the same time in the original,
//! non-deferred recording (`<case>/fields-ns.out`); with `-D`, the dump's
//! ` ... thread: comm:tid` line above such a sample line may differ the
//! same way. The other is `metric-value-nan`: where perf 7.2 prints a
//! number on a `metric:` line, pstitch prints `nan` (see docs/metric.md);
//! the harness accepts such lines if they are otherwise perf's and every
//! other line is too.
//!
//! Variants with `--header`/`--header-only` print perf.data's mtime: the
//! harness pins it (HEADER_MTIME). Every variant runs with TZ=UTC (local
//! times: captured on, the tod field), as make-golden.sh runs perf-ref.
//!
//! Every variant runs twice: with pstitch's threads (`PSTITCH_THREADS=2`:
//! small inputs would otherwise run on one thread) and single-threaded
//! (`PSTITCH_THREADS=1`); both must match.
//!
//! A case's `tmp/` directory holds files the recorded process left in /tmp
//! that perf reads at that very path, outside the symfs (a JIT's
//! `/tmp/perf-PID.map`): they are put in /tmp while the case's variants run
//! (make-golden.sh does the same in perf-ref's chroot) and removed again if
//! they were not there before.
//!
//! A case's `sources` file names workload sources (tests/workloads) its
//! `srccode` variants read: perf opens them at the path the DWARF names,
//! /tmp/pstitch-fixtures/src/NAME, where build.sh compiled them. They are
//! put there before the case's variants run, if they still are the bytes
//! the binaries were compiled from (tests/workloads/compiled.txt), and
//! left there (see `golden_common::install_sources`).
//!
//! Usage: `cargo test --test golden [-- FILTER]` (FILTER: substring of
//! `case/variant`). On a mismatch the first differing lines are shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod golden_common;

use golden_common::{Tally, binary};

/// All `(case dir, variant)` pairs.
fn variants() -> Vec<(PathBuf, String)> {
    golden_common::variants(|c| c.join("perf.data").exists(), Path::to_path_buf)
}

/// Sample-line keys `(tid, time)` -> comm, from a perf-ref output made with
/// `-F comm,pid,tid,time,... --ns` (comm, pid/tid, time).
fn comms_at_sample_time(original: &Path) -> Result<BTreeMap<(String, String), String>, String> {
    let text = std::fs::read_to_string(original.join("fields-ns.out")).map_err(|e| format!("{}: {e}", original.display()))?;
    let mut m = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('\t') && !l.is_empty()) {
        if let Some((comm, _, tid, time)) = split_sample_line(line) {
            m.insert((tid, time), comm.to_string());
        }
    }
    Ok(m)
}

/// `(comm, rest, tid, time)` of a sample line whose comm is known to end
/// where `rest` begins: the tid is the first word of the rest (`tid` or
/// `pid/tid`), the time the first `secs.frac:` word.
fn split_at_rest(line: &str, rest_len: usize) -> Option<(&str, &str, String, String)> {
    let cut = line.len().checked_sub(rest_len)?;
    let (comm, rest) = line.split_at(cut);
    let first = rest.split_whitespace().next()?;
    let tid = first.rsplit('/').next()?.to_string();
    tid.parse::<i64>().ok()?;
    let time = rest.split_whitespace().find(|w| w.ends_with(':') && w.contains('.'))?.trim_end_matches(':').to_string();
    Some((comm.trim(), rest, tid, time))
}

/// A sample line of a `comm pid/tid ... time:` output (comms may contain
/// spaces, so the `pid/tid` word marks where the comm ends).
fn split_sample_line(line: &str) -> Option<(&str, &str, String, String)> {
    let at = line.match_indices(char::is_whitespace).map(|(i, _)| i + 1).find(|&i| {
        let w = line[i..].split_whitespace().next().unwrap_or("");
        w.split_once('/').is_some_and(|(a, b)| a.parse::<i64>().is_ok() && b.parse::<i64>().is_ok())
    })?;
    split_at_rest(line, line.len() - at)
}

/// Length of the longest common suffix of two lines that starts with
/// whitespace (the part after the comm).
fn common_rest(x: &str, y: &str) -> usize {
    let n = x.bytes().rev().zip(y.bytes().rev()).take_while(|(a, b)| a == b).count();
    let tail = &x[x.len() - n..];
    // Back off to the last whitespace so the rest starts at a separator.
    match tail.find(char::is_whitespace) {
        Some(i) => n - i,
        None => 0,
    }
}

/// How `-D` starts the line naming a sample's thread (perf's dump of it).
const DUMP_THREAD: &str = " ... thread: ";

/// Checks that `actual` differs from `expected` only by the declared
/// comm-at-sample-time deviation. Returns how many lines differ.
fn check_comm_deviation(expected: &str, actual: &str, original: &Path) -> Result<usize, String> {
    let comms = comms_at_sample_time(original)?;
    let Lines { expected: e, actual: a, differing } = differing_lines(expected, actual)?;
    for &i in &differing {
        let (x, y) = (e[i], a[i]);
        let bad = |why: &str| format!("line {}: {why}\n - {x}\n + {y}", i + 1);
        if let (Some(tx), Some(ty)) = (x.strip_prefix(DUMP_THREAD), y.strip_prefix(DUMP_THREAD)) {
            // -D's thread line (` ... thread: comm:tid`) of a sample: the
            // same comm as the sample's own line below it, checked there.
            let (Some((cx, tidx)), Some((cy, tidy))) = (tx.rsplit_once(':'), ty.rsplit_once(':')) else {
                return Err(bad("a dump's thread line without comm:tid"));
            };
            let sample_comms = (i + 1..(i + 4).min(e.len())).find_map(|j| {
                let rest = common_rest(e[j], a[j]);
                Some((split_at_rest(e[j], rest)?.0, split_at_rest(a[j], rest)?.0))
            });
            if tidx != tidy || sample_comms != Some((cx, cy)) {
                return Err(bad("a dump's thread line that differs from its sample line's comm"));
            }
            continue;
        }
        let rest = common_rest(x, y);
        let (Some((_, _, tid, time)), Some((comm_y, _, _, _))) = (split_at_rest(x, rest), split_at_rest(y, rest)) else {
            return Err(bad("differs in more than the comm of a sample line"));
        };
        let at_sample_time = comms.iter().find(|((t, ns), _)| *t == tid && ns.starts_with(&time)).map(|(_, c)| c.as_str());
        if at_sample_time != Some(comm_y) {
            return Err(bad(&format!("comm is not the one the thread had at sample time ({at_sample_time:?})")));
        }
    }
    Ok(differing.len())
}

/// Checks that `actual` differs from `expected` only by the declared
/// metric-value-nan deviation: `metric:` lines where perf printed a number
/// and pstitch `nan`, everything else (the line's start, the unit, the
/// metric's name, every other line) the same. Returns how many lines differ.
fn check_metric_deviation(expected: &str, actual: &str) -> Result<usize, String> {
    const METRIC: &str = "\tmetric: ";
    let Lines { expected: e, actual: a, differing } = differing_lines(expected, actual)?;
    for &i in &differing {
        let (x, y) = (e[i], a[i]);
        let bad = || format!("line {}: differs in more than a metric's value\n - {x}\n + {y}", i + 1);
        let (Some((head_x, tail_x)), Some((head_y, tail_y))) = (x.rsplit_once(METRIC), y.rsplit_once(METRIC)) else { return Err(bad()) };
        // perf's "%8.1f unit  name".
        let (Some((value_x, rest_x)), Some((value_y, rest_y))) = (tail_x.get(..8).zip(tail_x.get(8..)), tail_y.get(..8).zip(tail_y.get(8..))) else {
            return Err(bad());
        };
        let perf_number = value_x.trim().parse::<f64>().is_ok_and(f64::is_finite);
        if head_x != head_y || rest_x != rest_y || value_y != "     nan" || !perf_number {
            return Err(bad());
        }
    }
    Ok(differing.len())
}

/// Both texts' lines and the indexes where they differ.
struct Lines<'t> {
    expected: Vec<&'t str>,
    actual: Vec<&'t str>,
    differing: Vec<usize>,
}

/// [`Lines`] of two texts; an error if their numbers of lines differ.
fn differing_lines<'t>(expected: &'t str, actual: &'t str) -> Result<Lines<'t>, String> {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    if e.len() != a.len() {
        return Err(format!("{} lines expected, {} printed", e.len(), a.len()));
    }
    let differing = (0..e.len()).filter(|&i| e[i] != a[i]).collect();
    Ok(Lines { expected: e, actual: a, differing })
}

/// Runs one variant, multi-threaded and single-threaded
/// (`PSTITCH_THREADS=1`): both must print the expected bytes.
fn run(case: &Path, variant: &str) -> Result<usize, String> {
    let _tmp = golden_common::TmpFiles::install(case)?;
    golden_common::install_sources(case)?;
    let n = run_with(case, variant, Some("2"))?;
    run_with(case, variant, Some("1")).map_err(|why| format!("single-threaded (PSTITCH_THREADS=1): {why}"))?;
    Ok(n)
}

/// Runs one variant; `Ok(n)` if stdout matches (`n` lines differing only by
/// a declared deviation), else a description.
fn run_with(case: &Path, variant: &str, threads: Option<&str>) -> Result<usize, String> {
    // Bytes: an argument may be a path that is not UTF-8 (`--dsos` in
    // tests/golden/non-utf8), passed on as it is, as make-golden.sh does.
    let args = std::fs::read(case.join(format!("{variant}.args"))).map_err(|e| e.to_string())?;
    let args: Vec<&std::ffi::OsStr> = args.split(u8::is_ascii_whitespace).filter(|a| !a.is_empty()).map(std::os::unix::ffi::OsStrExt::from_bytes).collect();
    let expected = std::fs::read(case.join(format!("{variant}.out"))).map_err(|e| e.to_string())?;
    let status = std::fs::read_to_string(case.join(format!("{variant}.status")))
        .map_err(|e| format!("{variant}.status: {e} (tests/fixtures/make-golden.sh writes it)"))?;
    let status: i32 = status.trim().parse().map_err(|_| format!("{variant}.status: not a number: {status:?}"))?;
    let expected_err = std::fs::read(case.join(format!("{variant}.err"))).ok();
    let mut cmd = Command::new(binary());
    match threads {
        Some(t) => cmd.env("PSTITCH_THREADS", t),
        None => cmd.env_remove("PSTITCH_THREADS"),
    };
    if args.iter().any(|a| *a == "--header" || *a == "--header-only") {
        // A directory (perf record --threads): perf shows its data file's.
        let data = case.join("perf.data");
        pin_mtime(&if data.is_dir() { data.join("data") } else { data })?;
    }
    // Local times (captured on, the tod field) in UTC, as make-golden.sh has them.
    cmd.env("TZ", "UTC");
    // Never the user's addr2line cache (tests/a2l_cache.rs tests it).
    cmd.env("PSTITCH_CACHE", "off");
    let output = cmd
        .current_dir(case)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"])
        .args(&args)
        .output()
        .map_err(|e| format!("cannot run pstitch: {e}"))?;
    if output.status.code() != Some(status) {
        return Err(format!(
            "exit status {} where perf's is {status}; stderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if let Some(e) = &expected_err {
        let got = without_own_summaries(&output.stderr);
        if got != *e {
            return Err(format!("stderr differs from perf's:\n{}", first_difference(&String::from_utf8_lossy(e), &String::from_utf8_lossy(&got))));
        }
    }
    if output.stdout == expected {
        return Ok(0);
    }
    let deviations = std::fs::read_to_string(case.join("deviations")).unwrap_or_default();
    if let Some(orig) = deviations.lines().find_map(|l| l.trim().strip_prefix("comm-at-sample-time original=")) {
        let (e, a) = (String::from_utf8_lossy(&expected), String::from_utf8_lossy(&output.stdout));
        return check_comm_deviation(&e, &a, &case.join("..").join(orig.trim()))
            .map_err(|why| format!("differs beyond the declared comm-at-sample-time deviation: {why}"));
    }
    if deviations.lines().any(|l| l.trim() == "metric-value-nan") {
        let (e, a) = (String::from_utf8_lossy(&expected), String::from_utf8_lossy(&output.stdout));
        return check_metric_deviation(&e, &a).map_err(|why| format!("differs beyond the declared metric-value-nan deviation: {why}"));
    }
    let mut msg = String::new();
    if !output.status.success() {
        msg += &format!("exit status {}; stderr:\n{}\n", output.status, String::from_utf8_lossy(&output.stderr));
    }
    msg += &first_difference(&String::from_utf8_lossy(&expected), &String::from_utf8_lossy(&output.stdout));
    Err(msg)
}

/// stderr without the summaries that are pstitch's own (man page,
/// COMPATIBILITY: perf says nothing there): the line about deferred
/// callchains left unmerged and the one about `--call-graph dwarf` samples
/// not unwound. Everything else pstitch says must be perf's words.
fn without_own_summaries(stderr: &[u8]) -> Vec<u8> {
    let own = |line: &[u8]| {
        let line = String::from_utf8_lossy(line);
        line.starts_with("pstitch: ") && (line.contains(": deferred callchains: ") || line.contains(": warning: --call-graph dwarf: "))
    };
    stderr.split_inclusive(|&b| b == b'\n').filter(|l| !own(l)).flatten().copied().collect()
}

/// The instant `--header` variants see as perf.data's modification time
/// ("captured on", printed in local time; run with TZ=UTC), as
/// tests/fixtures/make-golden.sh sets it for perf-ref: 2026-01-01 00:00:00 UTC.
const HEADER_MTIME: u64 = 1_767_225_600;

fn pin_mtime(path: &Path) -> Result<(), String> {
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(HEADER_MTIME);
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .or_else(|_| std::fs::File::open(path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_modified(when).map_err(|e| format!("cannot set the mtime of {}: {e}", path.display()))
}

/// A short report of where two texts first differ.
fn first_difference(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.split_inclusive('\n').collect();
    let a: Vec<&str> = actual.split_inclusive('\n').collect();
    let differing = e.iter().zip(&a).filter(|(x, y)| x != y).count() + e.len().abs_diff(a.len());
    let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
    let mut s = format!(
        "{differing} differing lines ({} expected, {} actual); first at line {}:\n",
        e.len(),
        a.len(),
        first + 1
    );
    let from = first.saturating_sub(2);
    for i in from..(first + 4) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => s += &format!("   {}", x),
            (x, y) => {
                if let Some(x) = x {
                    s += &format!(" - {}", x);
                }
                if let Some(y) = y {
                    s += &format!(" + {}", y);
                }
            }
        }
    }
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let all = variants();
    assert!(!all.is_empty(), "no golden cases found");
    golden_common::make_vmlinux_fixtures();
    println!("golden: testing {}", binary().display());
    let mut tally = Tally::new("lines differ only by a declared deviation");
    for (case, variant) in &all {
        let name = format!("{}/{}", case.file_name().unwrap().to_string_lossy(), variant);
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        tally.record(&name, run(case, variant));
    }
    tally.finish("golden");
}

//! Golden tests of the report scripts: every
//! `tests/golden/<case>/reports/<variant>.args` (`<report> [perf script
//! options] [-- script options]`) is run through `pstitch script report`
//! inside the case directory and compared with what perf-ref (perf 7.2
//! running its Python script) wrote for the same recording and options
//! (tests/fixtures/make-golden-reports.sh):
//!
//! - stackcollapse: standard output, byte for byte (`<variant>.out.gz`);
//! - flamegraph `--format=json`: the file, as parsed JSON (`<variant>.json`);
//! - gecko `--save-only`: the file, as parsed JSON (`<variant>.json.gz`),
//!   with `meta.product` being what `uname -op` prints here (the script
//!   asks the machine it runs on).
//!
//! Cases that declare the comm-at-sample-time deviation (see tests/golden.rs
//! and the man page's COMPATIBILITY) may differ from perf only in the name
//! of a thread perf shows as `:TID` (it had exited when perf printed its
//! held sample): the stacks below that name must be the same, and the name
//! pstitch gives must be a comm perf-ref printed for the original,
//! non-deferred recording.
//!
//! Every variant runs with pstitch's threads (`PSTITCH_THREADS=2`) and
//! single-threaded (`PSTITCH_THREADS=1`). `tests/golden/pending.txt` lists variants known
//! not to match (`case/reports/variant`), as tests/golden.rs does.
//!
//! Usage: `cargo test --test golden_reports [-- FILTER]`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod golden_common;

use golden_common::{Tally, binary};

/// All `(case dir, variant)` pairs.
fn variants() -> Vec<(PathBuf, String)> {
    golden_common::variants(|c| c.join("reports").is_dir(), |c| c.join("reports"))
}

/// One variant's arguments: the report, perf script options, the
/// script's options.
struct Spec {
    report: String,
    perf: Vec<String>,
    script: Vec<String>,
}

fn spec(line: &str) -> Spec {
    let mut words = line.split_whitespace();
    let report = words.next().unwrap_or_default().to_string();
    let rest: Vec<String> = words.map(str::to_string).collect();
    let (perf, script) = match rest.iter().position(|w| w == "--") {
        Some(i) => (rest[..i].to_vec(), rest[i + 1..].to_vec()),
        None => (rest, Vec::new()),
    };
    Spec { report, perf, script }
}

/// A file name for one run's output.
fn scratch(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("pstitch-golden-reports-{}-{n}-{tag}", std::process::id()))
}

/// Runs pstitch for a variant; `(stdout, the file it wrote)`.
fn run_pstitch(case: &Path, s: &Spec, threads: Option<&str>) -> Result<(Vec<u8>, Option<Vec<u8>>), String> {
    let mut cmd = Command::new(binary());
    // Never the user's addr2line cache.
    cmd.env("PSTITCH_CACHE", "off");
    match threads {
        Some(t) => cmd.env("PSTITCH_THREADS", t),
        None => cmd.env_remove("PSTITCH_THREADS"),
    };
    cmd.current_dir(case).env("PERF_BUILDID_DIR", "/nonexistent");
    cmd.args(["script", "report", &s.report, "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"]).args(&s.perf);
    let file = scratch(&s.report);
    match s.report.as_str() {
        "stackcollapse" => {
            if !s.script.is_empty() {
                cmd.arg("--").args(&s.script);
            }
        }
        "flamegraph" => {
            cmd.arg("--").args(&s.script).arg("--format=json").arg(format!("--output={}", file.display()));
        }
        "gecko" => {
            cmd.arg("--").args(&s.script).arg("--save-only").arg(&file);
        }
        other => return Err(format!("unknown report {other}")),
    }
    let out = cmd.output().map_err(|e| format!("cannot run pstitch: {e}"))?;
    if !out.status.success() {
        return Err(format!("exit status {}; stderr:\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let written = std::fs::read(&file).ok();
    let _ = std::fs::remove_file(&file);
    Ok((out.stdout, written))
}

fn uname_op() -> String {
    let out = Command::new("uname").arg("-op").output().expect("uname");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The comms perf-ref printed for the original recording of a deviating
/// case, spaces as `_` (as stackcollapse writes them).
fn original_comms(case: &Path) -> Result<Option<BTreeSet<String>>, String> {
    let deviations = std::fs::read_to_string(case.join("deviations")).unwrap_or_default();
    let Some(orig) = deviations.lines().find_map(|l| l.trim().strip_prefix("comm-at-sample-time original=")) else { return Ok(None) };
    let path = case.join("..").join(orig.trim()).join("fields-ns.out");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut comms = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with('\t') && !l.is_empty()) {
        // `comm  pid/tid ...`: the comm ends where the pid/tid word starts.
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words.iter().position(|w| w.split_once('/').is_some_and(|(a, b)| a.parse::<i64>().is_ok() && b.parse::<i64>().is_ok())) {
            comms.insert(words[..i].join("_"));
        }
    }
    Ok(Some(comms))
}

/// Checks stacks keyed `root;rest` that may differ only in roots perf
/// names `:TID...`, which pstitch names with a comm of the original.
fn check_roots(expected: &BTreeMap<String, u64>, actual: &BTreeMap<String, u64>, comms: &BTreeSet<String>) -> Result<usize, String> {
    let split = |k: &str| -> (String, String) {
        match k.split_once(';') {
            Some((r, rest)) => (r.to_string(), rest.to_string()),
            None => (k.to_string(), String::new()),
        }
    };
    let rests = |m: &BTreeMap<String, u64>| {
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        for (k, n) in m {
            *out.entry(split(k).1).or_default() += n;
        }
        out
    };
    if rests(expected) != rests(actual) {
        return Err("the stacks below the thread names differ".into());
    }
    let roots = |m: &BTreeMap<String, u64>| m.keys().map(|k| split(k).0).collect::<BTreeSet<_>>();
    let (e, a) = (roots(expected), roots(actual));
    for r in e.difference(&a) {
        if !r.starts_with(':') {
            return Err(format!("perf's root {r:?} is missing, and is not an exited thread's :TID"));
        }
    }
    let mut differing = 0;
    for r in a.difference(&e) {
        if !comms.iter().any(|c| r.starts_with(c.as_str())) {
            return Err(format!("pstitch's root {r:?} is no comm of the original recording"));
        }
        differing += 1;
    }
    if e == a && expected != actual {
        return Err("same roots, different counts".into());
    }
    Ok(differing)
}

/// Folded lines `stack count` as a map.
fn folded(text: &[u8]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(text).lines() {
        if let Some((s, n)) = l.rsplit_once(' ') {
            *m.entry(s.to_string()).or_default() += n.parse::<u64>().unwrap_or(0);
        }
    }
    m
}

/// A d3 tree as folded stacks below its root (names joined by `;`).
fn tree_paths(v: &Value) -> BTreeMap<String, u64> {
    fn walk(v: &Value, path: &str, out: &mut BTreeMap<String, u64>) {
        let name = v["n"].as_str().unwrap_or_default();
        let here = if path.is_empty() { name.to_string() } else { format!("{path};{name}") };
        let n = v["v"].as_u64().unwrap_or(0);
        if n > 0 {
            *out.entry(here.clone()).or_default() += n;
        }
        for c in v["c"].as_array().into_iter().flatten() {
            walk(c, &here, out);
        }
    }
    let mut out = BTreeMap::new();
    for c in v["c"].as_array().into_iter().flatten() {
        walk(c, "", &mut out);
    }
    out
}

/// A file perf-ref's output was kept in, compressed (`gzip -n`).
fn gunzip(path: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(out)
}

/// Parses JSON of any depth (a flame graph's tree is as deep as its
/// deepest stack).
fn json(bytes: &[u8], what: &str) -> Result<Value, String> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).map_err(|e| format!("{what}: not JSON: {e}"))
}

/// Runs one variant in one thread mode; `Ok(n)`: matches, `n` names
/// differing by the declared deviation.
fn check(case: &Path, variant: &str, threads: Option<&str>) -> Result<usize, String> {
    let dir = case.join("reports");
    let s = spec(&std::fs::read_to_string(dir.join(format!("{variant}.args"))).map_err(|e| e.to_string())?);
    let comms = original_comms(case)?;
    let (stdout, file) = run_pstitch(case, &s, threads)?;
    match s.report.as_str() {
        "stackcollapse" => {
            let expected = gunzip(&dir.join(format!("{variant}.out.gz")))?;
            if stdout == expected {
                return Ok(0);
            }
            match &comms {
                Some(c) if !s.script.iter().any(|o| o == "--no-comm") => check_roots(&folded(&expected), &folded(&stdout), c),
                _ => Err(first_difference(&expected, &stdout)),
            }
        }
        "flamegraph" => {
            let expected = json(&std::fs::read(dir.join(format!("{variant}.json"))).map_err(|e| e.to_string())?, "perf-ref's")?;
            let actual = json(&file.ok_or("pstitch wrote no file")?, "pstitch's")?;
            if expected == actual {
                return Ok(0);
            }
            let (e, a) = (tree_paths(&expected), tree_paths(&actual));
            match &comms {
                // The process node is "comm (pid)".
                Some(c) => check_roots(&e, &a, c),
                None => Err(format!("the trees differ:\n{}", first_difference(debug(&e).as_bytes(), debug(&a).as_bytes()))),
            }
        }
        "gecko" => {
            let mut expected = json(&gunzip(&dir.join(format!("{variant}.json.gz")))?, "perf-ref's")?;
            expected["meta"]["product"] = Value::String(uname_op());
            let mut actual = json(&file.ok_or("pstitch wrote no file")?, "pstitch's")?;
            if expected == actual {
                return Ok(0);
            }
            let Some(c) = &comms else { return Err(json_difference(&expected, &actual)) };
            // Thread names may differ by the deviation only.
            let mut n = 0;
            let (et, at) = (expected["threads"].as_array().cloned().unwrap_or_default(), actual["threads"].as_array_mut());
            for (i, t) in at.into_iter().flatten().enumerate() {
                let (en, an) = (et.get(i).and_then(|e| e["name"].as_str()).unwrap_or(""), t["name"].as_str().unwrap_or(""));
                if en != an && en.starts_with(':') && c.contains(&an.replace(' ', "_")) {
                    t["name"] = Value::String(en.to_string());
                    n += 1;
                }
            }
            if expected == actual { Ok(n) } else { Err(json_difference(&expected, &actual)) }
        }
        other => Err(format!("unknown report {other}")),
    }
}

fn debug(m: &BTreeMap<String, u64>) -> String {
    m.iter().map(|(k, v)| format!("{k} {v}\n")).collect()
}

/// Where two JSON values first differ (a path and both sides, shortened).
fn json_difference(e: &Value, a: &Value) -> String {
    fn walk(e: &Value, a: &Value, path: String) -> Option<String> {
        match (e, a) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys()) {
                    let (xv, yv) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                    if let Some(d) = walk(xv, yv, format!("{path}.{k}")) {
                        return Some(d);
                    }
                }
                None
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    let (xv, yv) = (x.get(i).unwrap_or(&Value::Null), y.get(i).unwrap_or(&Value::Null));
                    if let Some(d) = walk(xv, yv, format!("{path}[{i}]")) {
                        return Some(d);
                    }
                }
                None
            }
            _ if e == a => None,
            _ => {
                let short = |v: &Value| v.to_string().chars().take(200).collect::<String>();
                Some(format!("at {path}: perf-ref {} , pstitch {}", short(e), short(a)))
            }
        }
    }
    walk(e, a, String::new()).unwrap_or_else(|| "values differ".into())
}

/// A short report of where two texts first differ.
fn first_difference(expected: &[u8], actual: &[u8]) -> String {
    let (e, a) = (String::from_utf8_lossy(expected), String::from_utf8_lossy(actual));
    let (e, a): (Vec<&str>, Vec<&str>) = (e.lines().collect(), a.lines().collect());
    let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
    let mut s = format!("{} lines expected, {} printed; first difference at line {}:\n", e.len(), a.len(), first + 1);
    for i in first..(first + 3) {
        if let Some(x) = e.get(i) {
            s += &format!(" - {x}\n");
        }
        if let Some(y) = a.get(i) {
            s += &format!(" + {y}\n");
        }
    }
    s
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let all = variants();
    assert!(!all.is_empty(), "no report variants found (tests/golden/*/reports)");
    println!("golden reports: testing {}", binary().display());
    let mut tally = Tally::new("thread names differ only by the declared comm-at-sample-time deviation");
    for (case, variant) in &all {
        let name = format!("{}/reports/{variant}", case.file_name().unwrap().to_string_lossy());
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let result = check(case, variant, Some("2"))
            .and_then(|n| check(case, variant, Some("1")).map(|_| n).map_err(|e| format!("single-threaded (PSTITCH_THREADS=1): {e}")));
        tally.record(&name, result);
    }
    tally.finish("golden reports");
}

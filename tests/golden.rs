//! Golden tests: every `tests/golden/<case>/<variant>.args` is run through
//! `pstitch script` inside the case directory and its stdout compared byte
//! for byte with `<variant>.out`, which perf-ref (perf 7.2) produced from the
//! same perf.data with the same options (see tests/fixtures/make-golden.sh).
//!
//! `tests/golden/pending.txt` lists variants known not to match yet, each
//! with the issue that will fix it. They are reported as PENDING, never as
//! passing, and one that starts to match fails the run until it is removed
//! from the list.
//!
//! Usage: `cargo test --test golden [-- FILTER]` (FILTER: substring of
//! `case/variant`). On a mismatch the first differing lines are shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// `case/variant` -> reason.
fn pending() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(golden_dir().join("pending.txt")).unwrap_or_default();
    text.lines()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((k, why)) => (k.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

/// All `(case dir, variant)` pairs.
fn variants() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut cases: Vec<_> = std::fs::read_dir(golden_dir()).expect("tests/golden").flatten().map(|e| e.path()).collect();
    cases.sort();
    for case in cases.into_iter().filter(|p| p.join("perf.data").exists()) {
        let mut names: Vec<String> = std::fs::read_dir(&case)
            .expect("case dir")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".args").map(str::to_string))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| (case.clone(), n)));
    }
    out
}

/// Runs one variant; `Ok(())` if stdout matches, else a description.
fn run(case: &Path, variant: &str) -> Result<(), String> {
    let args = std::fs::read_to_string(case.join(format!("{variant}.args"))).map_err(|e| e.to_string())?;
    let expected = std::fs::read(case.join(format!("{variant}.out"))).map_err(|e| e.to_string())?;
    let output = Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(case)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"])
        .args(args.split_whitespace())
        .output()
        .map_err(|e| format!("cannot run pstitch: {e}"))?;
    if output.stdout == expected {
        return Ok(());
    }
    let mut msg = String::new();
    if !output.status.success() {
        msg += &format!("exit status {}; stderr:\n{}\n", output.status, String::from_utf8_lossy(&output.stderr));
    }
    msg += &first_difference(&String::from_utf8_lossy(&expected), &String::from_utf8_lossy(&output.stdout));
    Err(msg)
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
    let pending = pending();
    let (mut passed, mut failed, mut still_pending) = (0, Vec::new(), 0);
    let all = variants();
    assert!(!all.is_empty(), "no golden cases found");
    for (case, variant) in &all {
        let name = format!("{}/{}", case.file_name().unwrap().to_string_lossy(), variant);
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let result = run(case, variant);
        match (pending.get(&name), result) {
            (None, Ok(())) => {
                passed += 1;
                println!("golden {name} ... ok");
            }
            (None, Err(why)) => {
                println!("golden {name} ... FAILED");
                failed.push((name, why));
            }
            (Some(reason), Err(_)) => {
                still_pending += 1;
                println!("golden {name} ... PENDING ({reason})");
            }
            (Some(_), Ok(())) => {
                println!("golden {name} ... FAILED (matches now: remove it from tests/golden/pending.txt)");
                failed.push((name, "listed as pending but matches perf's output".into()));
            }
        }
    }
    for (name, why) in &failed {
        println!("\n---- {name} ----\n{why}");
    }
    println!(
        "\ngolden result: {} passed; {} failed; {} pending (known, listed in tests/golden/pending.txt)",
        passed,
        failed.len(),
        still_pending
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

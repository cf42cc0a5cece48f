//! What the golden harnesses (tests/golden.rs, tests/golden_reports.rs)
//! share: where the cases are, the binary under test, the pending list and
//! the tally of results.
#![allow(dead_code)] // each harness uses a part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The pstitch to test: this build's, or the one `PSTITCH_BIN` names
/// (the profile-guided build, see bench/pgo-build.sh).
pub fn binary() -> PathBuf {
    let bin = std::env::var_os("PSTITCH_BIN").map_or_else(|| env!("CARGO_BIN_EXE_pstitch").into(), PathBuf::from);
    // Run from each case's directory: a relative path would not be found.
    std::path::absolute(&bin).unwrap_or(bin)
}

/// Makes the vmlinux-like files the `-k` variants name
/// (`tests/fixtures/vmlinux/specs`: generated, too big to commit).
pub fn make_vmlinux_fixtures() {
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmlinux/specs");
    if let Err(e) = pstitch_fixtures::vmlinux::make_all(&specs) {
        panic!("{}: {e}", specs.display());
    }
}

/// Every `(case dir, variant)` of the golden cases `has` accepts: the
/// variants are the `<variant>.args` files in `dir(case)`, in name order.
pub fn variants(has: impl Fn(&Path) -> bool, dir: impl Fn(&Path) -> PathBuf) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(golden_dir()).expect("tests/golden").flatten().map(|e| e.path()).collect();
    cases.sort();
    for case in cases.into_iter().filter(|c| has(c)) {
        let mut names: Vec<String> = std::fs::read_dir(dir(&case))
            .expect("variants dir")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".args").map(str::to_string))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| (case.clone(), n)));
    }
    out
}

/// `tests/golden/pending.txt`: variant name -> the reason (the issue that
/// will fix it).
pub fn pending() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(golden_dir().join("pending.txt")).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((k, why)) => (k.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

/// The results of a harness run, printed as they come.
pub struct Tally {
    pending: BTreeMap<String, String>,
    passed: usize,
    still_pending: usize,
    failed: Vec<(String, String)>,
    /// What `Ok(n)` with n > 0 means, e.g. "lines differ only by ...".
    deviation: &'static str,
}

impl Tally {
    pub fn new(deviation: &'static str) -> Tally {
        Tally { pending: pending(), passed: 0, still_pending: 0, failed: Vec::new(), deviation }
    }

    /// One variant's result: `Ok(n)` matched, `n` items differing only by a
    /// declared deviation. A pending variant must still fail.
    pub fn record(&mut self, name: &str, result: Result<usize, String>) {
        match (self.pending.get(name), result) {
            (None, Ok(0)) => {
                self.passed += 1;
                println!("golden {name} ... ok");
            }
            (None, Ok(n)) => {
                self.passed += 1;
                println!("golden {name} ... ok ({n} {})", self.deviation);
            }
            (None, Err(why)) => {
                println!("golden {name} ... FAILED");
                self.failed.push((name.to_string(), why));
            }
            (Some(reason), Err(_)) => {
                self.still_pending += 1;
                println!("golden {name} ... PENDING ({reason})");
            }
            (Some(_), Ok(_)) => {
                println!("golden {name} ... FAILED (matches now: remove it from tests/golden/pending.txt)");
                self.failed.push((name.to_string(), "listed as pending but matches perf's output".into()));
            }
        }
    }

    /// Prints the failures and the totals; exits 1 if anything failed.
    pub fn finish(self, what: &str) {
        for (name, why) in &self.failed {
            println!("\n---- {name} ----\n{why}");
        }
        println!(
            "\n{what} result: {} passed; {} failed; {} pending (known, listed in tests/golden/pending.txt)",
            self.passed,
            self.failed.len(),
            self.still_pending
        );
        if !self.failed.is_empty() {
            std::process::exit(1);
        }
    }
}

/// The files of a case's `tmp/` directory (what the recorded process left
/// in /tmp that perf reads at that very path, outside the symfs: a JIT's
/// `/tmp/perf-PID.map`), put in /tmp for as long as this lives, as
/// make-golden.sh puts them in perf-ref's chroot; those that were not
/// there before are removed when it is dropped.
pub struct TmpFiles(Vec<PathBuf>);

impl TmpFiles {
    pub fn install(case: &Path) -> Result<TmpFiles, String> {
        let mut made = TmpFiles(Vec::new());
        let Ok(dir) = std::fs::read_dir(case.join("tmp")) else { return Ok(made) };
        for entry in dir.flatten() {
            let text = std::fs::read(entry.path()).map_err(|e| format!("{}: {e}", entry.path().display()))?;
            let at = Path::new("/tmp").join(entry.file_name());
            match std::fs::read(&at) {
                Ok(there) if there == text => continue,
                Ok(_) => return Err(format!("{} exists with other contents: the case needs its own", at.display())),
                Err(_) => {}
            }
            // Written whole under another name first: a reader never sees half of it.
            let part = Path::new("/tmp").join(format!(".{}.{}", entry.file_name().to_string_lossy(), std::process::id()));
            std::fs::write(&part, &text).and_then(|()| std::fs::rename(&part, &at)).map_err(|e| format!("{}: {e}", at.display()))?;
            made.0.push(at);
        }
        Ok(made)
    }
}

impl Drop for TmpFiles {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Where build.sh compiled the workloads: the path their DWARF names, at
/// which perf opens a source file for the `srccode` field (as is, no
/// symfs).
pub const WORKLOAD_SRC: &str = "/tmp/pstitch-fixtures/src";

/// Puts the workload sources a case's `sources` file names (one name of
/// tests/workloads a line) at [`WORKLOAD_SRC`]`/NAME`, as make-golden.sh
/// puts them in perf-ref's chroot, so that the srccode variants read the
/// lines perf read. Each must still be the bytes its binary was compiled
/// from (tests/workloads/compiled.txt: size and CRC-32), else the lines
/// would differ: that is an error. A file already there with those bytes
/// is left alone; others are replaced (the directory is build.sh's copy of
/// the sources: it writes the same bytes there). Nothing is removed
/// afterwards: runs of the harness at the same time use the same files.
pub fn install_sources(case: &Path) -> Result<(), String> {
    let Ok(list) = std::fs::read_to_string(case.join("sources")) else { return Ok(()) };
    let workloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads");
    let compiled = std::fs::read_to_string(workloads.join("compiled.txt")).map_err(|e| format!("tests/workloads/compiled.txt: {e}"))?;
    for name in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let bytes = std::fs::read(workloads.join(name)).map_err(|e| format!("tests/workloads/{name}: {e}"))?;
        let mut crc = flate2::Crc::new();
        crc.update(&bytes);
        let have = format!("{name} {} {:08x}", bytes.len(), crc.sum());
        if !compiled.lines().any(|l| l.trim() == have) {
            return Err(format!(
                "tests/workloads/{name} is not the source its binary was compiled from ({have}; see tests/workloads/compiled.txt): \
                 the srccode variants of {} would print other lines",
                case.display()
            ));
        }
        let at = Path::new(WORKLOAD_SRC).join(name);
        if std::fs::read(&at).is_ok_and(|there| there == bytes) {
            continue;
        }
        std::fs::create_dir_all(WORKLOAD_SRC).map_err(|e| format!("{WORKLOAD_SRC}: {e}"))?;
        // Written whole under another name first: a reader never sees half of it.
        let part = Path::new(WORKLOAD_SRC).join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&part, &bytes).and_then(|()| std::fs::rename(&part, &at)).map_err(|e| format!("{}: {e}", at.display()))?;
    }
    Ok(())
}

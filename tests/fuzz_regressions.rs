//! Inputs the fuzzer (fuzz/, `cargo fuzz run script`) found crashing, kept
//! as regression tests: each must go through the whole pipeline without a
//! panic. Files live in tests/fuzz-regressions/; the name says what broke.
//! (Overflow panics only show in builds with overflow checks, e.g.
//! `cargo test` without --release; the unit tests next to the fixed code
//! check the values in every build.)

mod common;

#[test]
fn fuzz_findings_no_longer_crash() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    assert!(!files.is_empty());
    let mut failed = Vec::new();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        if std::panic::catch_unwind(|| common::script_bytes(&data)).is_err() {
            failed.push(f.display().to_string());
        }
    }
    assert!(failed.is_empty(), "panicked on: {failed:?}");
}

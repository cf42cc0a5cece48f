//! Flamegraph pipes: `pstitch script | inferno-collapse-perf` must fold to
//! the same stacks as `perf script | inferno-collapse-perf`.
//!
//! For every golden variant that is not pending, the perf-ref output
//! (`<variant>.out`) and pstitch's output for the same options are both run
//! through inferno's perf collapser (the one behind `inferno-collapse-perf`)
//! and the folded stacks compared. In cases that declare the
//! comm-at-sample-time deviation the root frame of a stack is the comm, so
//! there the stacks are compared without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use inferno::collapse::Collapse;
use inferno::collapse::perf::Folder;

mod common;
mod golden_common;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The folded stacks, or `None` if inferno cannot read the text (it asserts
/// on outputs without event names, such as `-F dso`).
fn fold(text: &[u8]) -> Option<BTreeMap<String, u64>> {
    let text = text.to_vec();
    let out = std::panic::catch_unwind(move || {
        let mut out = Vec::new();
        Folder::default().collapse(&text[..], &mut out).expect("collapse");
        out
    })
    .ok()?;
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out).lines() {
        let (stack, n) = line.rsplit_once(' ').expect("folded line");
        *m.entry(stack.to_string()).or_default() += n.parse::<u64>().expect("count");
    }
    Some(m)
}

fn without_root(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (stack, n) in m {
        let rest = stack.split_once(';').map(|(_, r)| r).unwrap_or("");
        *out.entry(rest.to_string()).or_default() += n;
    }
    out
}

/// Folds perf-ref's output of `case/variant` and pstitch's for the same
/// options: `Ok(Some(stacks))` if they fold to the same stacks,
/// `Ok(None)` if inferno cannot read perf's output either.
fn compare(case: &Path, variant: &str) -> Result<Option<BTreeMap<String, u64>>, String> {
    let args = std::fs::read(case.join(format!("{variant}.args"))).unwrap();
    let expected = std::fs::read(case.join(format!("{variant}.out"))).unwrap();
    let _tmp = golden_common::TmpFiles::install(case)?;
    let out = common::script_in_case(case, &args).unwrap();
    let Some(mut e) = fold(&expected) else { return Ok(None) };
    let Some(mut a) = fold(&out.stdout) else {
        return Err("inferno cannot read pstitch's output but reads perf's".to_string());
    };
    if case.join("deviations").exists() {
        e = without_root(&e);
        a = without_root(&a);
    }
    if e != a {
        let missing = e.keys().find(|k| a.get(*k) != e.get(*k));
        return Err(format!("folded stacks differ, e.g. {missing:?}"));
    }
    Ok(Some(e))
}

#[test]
fn folded_stacks_match_perfs() {
    // inferno reports its own assertion failures through the panic hook.
    std::panic::set_hook(Box::new(|_| {}));
    let pending: Vec<String> = std::fs::read_to_string(golden().join("pending.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let mut cases: Vec<PathBuf> =
        std::fs::read_dir(golden()).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("perf.data").exists()).collect();
    cases.sort();
    let (mut compared, mut stacks, mut failures) = (0, 0, Vec::new());
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let mut variants: Vec<String> = std::fs::read_dir(case)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".args").map(str::to_string))
            .collect();
        variants.sort();
        for v in variants {
            let id = format!("{name}/{v}");
            if pending.contains(&id) {
                continue;
            }
            let args = std::fs::read(case.join(format!("{v}.args"))).unwrap();
            if args.windows(8).any(|w| w == b"--header") {
                continue;
            }
            match compare(case, &v) {
                Ok(Some(folded)) => {
                    compared += 1;
                    stacks += folded.len();
                }
                Ok(None) => {}
                Err(why) => failures.push(format!("{id}: {why}")),
            }
        }
    }
    // Messages of the assertions below should be seen again.
    let _ = std::panic::take_hook();
    println!("{compared} variants folded, {stacks} distinct stacks compared");
    assert!(compared > 20, "too few variants to compare");
    // Bare-address output folds to nothing; the symbolized default variants
    // carry the stacks. Comparing none is only acceptable while they are
    // still pending.
    assert!(stacks > 0 || pending.iter().any(|p| p.ends_with("/default")), "no stacks were compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--call-graph dwarf` recordings (issue 25): a flamegraph of one is made
/// of the unwound user frames. Each case's symbolized variants fold to
/// perf's stacks, which run through several user functions: without
/// unwinding the user part, a stack would be the comm and the sampled
/// function alone (dwarf-c: one distinct stack where perf gives dozens).
#[test]
fn dwarf_recordings_fold_like_perf() {
    std::panic::set_hook(Box::new(|_| {}));
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for case in ["dwarf-c", "dwarf-c-1024", "dwarf-cpp", "dwarf-libc", "dwarf-python", "dwarf-rust", "dwarf-pipe"] {
        for v in ["default", "no-inline", "syms"] {
            match compare(&golden().join(case), v) {
                Ok(Some(folded)) => {
                    let deepest = folded.keys().map(|k| k.matches(';').count() + 1).max().unwrap_or(0);
                    report.push(format!("{case}/{v}: {} stacks, the deepest of {deepest} frames", folded.len()));
                    if folded.len() < 5 || deepest < 5 {
                        failures.push(format!("{case}/{v}: only {} distinct stacks, the deepest of {deepest} frames", folded.len()));
                    }
                }
                Ok(None) => failures.push(format!("{case}/{v}: inferno cannot read perf's output")),
                Err(why) => failures.push(format!("{case}/{v}: {why}")),
            }
        }
    }
    let _ = std::panic::take_hook();
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! Ground truth for deferred callchains.
//!
//! Every `tests/golden/deferred*` case was made by `pstitch-defer` from an
//! ordinary frame-pointer recording (named in its `deviations` file). For
//! each, pstitch's merged output must agree with what perf-ref printed for
//! the ORIGINAL recording (`<original>/fields-ns.out`):
//!
//! - the same samples, none lost, none duplicated (by thread and time);
//! - a merged sample has exactly the original callchain;
//! - an unstitched sample has the original's kernel part followed by its
//!   cookie (read back from the deferred perf.data);
//! - samples whose cookie has no deferred record in the file are unstitched,
//!   and in the undisturbed variant (`deferred`) they are the only ones.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pstitch::Result;
use pstitch::{Context, DeferredEvent, SampleEvent, Tool};

type Key = (i64, String);

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Samples of a `-F comm,pid,tid,[cpu,]time,event,ip,period --ns` output:
/// (tid, ns time) -> callchain ips.
fn parse_output(text: &str) -> Vec<(Key, Vec<u64>)> {
    common::printed_samples(text).into_iter().map(|(tid, time, ips)| ((tid, time), ips)).collect()
}

/// Reads the deferred perf.data: each sample's cookie, and the cookies that
/// have a deferred record.
#[derive(Default)]
struct Cookies {
    of_sample: BTreeMap<Key, u64>,
    with_record: BTreeSet<u64>,
}

impl Tool for Cookies {
    fn sample(&mut self, _cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        let s = ev.sample;
        let chain = ev.callchain.expect("callchain").to_vec();
        if chain.len() >= 2 && chain[chain.len() - 2] == (-640i64) as u64 {
            let time = format!("{}.{:09}", s.time / 1_000_000_000, s.time % 1_000_000_000);
            self.of_sample.insert((s.tid as i64, time), chain[chain.len() - 1]);
        }
        Ok(())
    }

    fn deferred_callchain(&mut self, _cx: &mut Context<'_>, ev: &DeferredEvent<'_>) -> Result<()> {
        self.with_record.insert(ev.deferred.cookie);
        Ok(())
    }
}

fn cookies(perf_data: &Path) -> Cookies {
    let mut c = Cookies::default();
    common::read_unmerged(perf_data, &mut c);
    c
}

fn is_kernel(ip: u64) -> bool {
    ip >= 0xffff_8000_0000_0000
}

struct Verdict {
    samples: usize,
    merged: usize,
    unstitched: usize,
}

fn check_case(case: &Path) -> std::result::Result<Verdict, String> {
    let deviations = std::fs::read_to_string(case.join("deviations")).map_err(|e| e.to_string())?;
    let original = deviations
        .lines()
        .find_map(|l| l.trim().strip_prefix("comm-at-sample-time original="))
        .ok_or("no original named in deviations")?;
    let original = golden().join(original.trim());
    let args = std::fs::read_to_string(case.join("fields.args")).map_err(|e| e.to_string())?;
    let out = common::script_in_case(case, args.as_bytes()).map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("pstitch failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let ours = parse_output(&String::from_utf8_lossy(&out.stdout));
    let truth = parse_output(&std::fs::read_to_string(original.join("fields-ns.out")).map_err(|e| e.to_string())?);
    let cookies = cookies(&case.join("perf.data"));

    let mut truth_by_key: BTreeMap<Key, Vec<Vec<u64>>> = BTreeMap::new();
    for (k, ips) in &truth {
        truth_by_key.entry(k.clone()).or_default().push(ips.clone());
    }
    let mut seen: BTreeMap<Key, usize> = BTreeMap::new();
    let (mut merged, mut unstitched) = (0, 0);
    for (k, ips) in &ours {
        let n = seen.entry(k.clone()).or_default();
        let originals = truth_by_key.get(k).ok_or_else(|| format!("sample {k:?} is not in the original"))?;
        let orig = originals.get(*n).ok_or_else(|| format!("sample {k:?} printed more often than in the original"))?;
        *n += 1;
        let cookie = cookies.of_sample.get(k).copied();
        if ips == orig {
            merged += 1;
            if cookie.is_some_and(|c| !cookies.with_record.contains(&c)) {
                return Err(format!("sample {k:?} merged although its cookie has no deferred record"));
            }
            continue;
        }
        let cookie = cookie.ok_or_else(|| format!("sample {k:?} differs from the original but was not deferred"))?;
        let kernel: Vec<u64> = orig.iter().copied().take_while(|&ip| is_kernel(ip)).collect();
        let mut expect = kernel;
        expect.push(cookie);
        if *ips != expect {
            return Err(format!("unstitched sample {k:?}: {ips:x?}, expected kernel part + cookie {expect:x?}"));
        }
        unstitched += 1;
    }
    let total_truth: usize = truth_by_key.values().map(Vec::len).sum();
    if ours.len() != total_truth {
        return Err(format!("{} samples printed, the original has {total_truth}", ours.len()));
    }
    // Samples whose cookie never got a record cannot have been merged; in
    // the undisturbed variant they are the only unstitched ones.
    let orphaned = cookies.of_sample.values().filter(|c| !cookies.with_record.contains(c)).count();
    if case.file_name().is_some_and(|n| n == "deferred") && unstitched != orphaned {
        return Err(format!("{unstitched} unstitched samples, but only {orphaned} lack a deferred record"));
    }
    Ok(Verdict { samples: ours.len(), merged, unstitched })
}

#[test]
fn deferred_variants_match_the_original_recordings() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(golden())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("deferred")))
        .filter(|p| p.join("fields.args").exists())
        .collect();
    cases.sort();
    assert!(cases.len() >= 6, "deferred golden cases are missing");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        match check_case(case) {
            Ok(v) => println!("{name}: {} samples, {} merged, {} unstitched — all as in the original", v.samples, v.merged, v.unstitched),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

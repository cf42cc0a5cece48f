//! The session, driven by a tool that prints nothing, delivers the same
//! samples as perf prints: in the same order, each with the callchain perf
//! shows (deferred user callchains merged by the session, not the printer).
//!
//! The expected samples come from every golden variant made by perf-ref
//! with exactly `--no-inline -F comm,pid,tid[,cpu],time,event,ip,period
//! --ns`: each sample line gives the thread and the time, the lines under
//! it the callchain's addresses. `--call-graph dwarf` samples are unwound
//! by the session (asked to, as `pstitch script` does).

mod common;

use std::path::{Path, PathBuf};

use pstitch::Result;
use pstitch::perf_data::sample::context;
use pstitch::{Context, SampleEvent, Session, SessionOptions, SymbolConfig, Tool, UnwindOptions};

/// (tid, time in ns, addresses shown).
type Shown = (i32, u64, Vec<u64>);

/// Collects what `-F ...,ip` would show of each sample.
#[derive(Default)]
struct Collect {
    samples: Vec<Shown>,
}

impl Tool for Collect {
    fn sample(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        let s = ev.sample;
        let attr = &cx.evlist.evsels[ev.evsel].attr;
        let ips = match ev.callchain {
            Some(chain) if attr.samples(pstitch::perf_data::attr::sample_type::CALLCHAIN) => shown_entries(&chain.to_vec()),
            _ => vec![s.ip],
        };
        self.samples.push((s.tid, s.time, ips));
        Ok(())
    }
}

/// The entries perf prints of a callchain: the addresses among the first
/// 127 (its default --max-stack), none at all if an unknown context marker
/// comes before that.
fn shown_entries(chain: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for &ip in chain {
        if out.len() == 127 {
            break;
        }
        if ip < context::MAX {
            out.push(ip);
        } else if ![context::HV, context::KERNEL, context::USER, context::USER_DEFERRED].contains(&ip) {
            return Vec::new();
        }
    }
    out
}

/// The samples of a perf-ref output made with the fields above.
fn parse(text: &str) -> Vec<Shown> {
    // Nanoseconds (--ns) or microseconds.
    let ns = |t: &str| {
        let (secs, frac) = t.split_once('.').expect("secs.frac");
        let scale = 10u64.pow(9 - frac.len() as u32);
        secs.parse::<u64>().expect("secs") * 1_000_000_000 + frac.parse::<u64>().expect("fraction") * scale
    };
    common::printed_samples(text).into_iter().map(|(tid, time, ips)| (tid as i32, ns(&time), ips)).collect()
}

/// The samples of a case's recording as the session delivers them,
/// `--call-graph dwarf` samples unwound with the case's symfs (as perf
/// does for `perf script`).
fn run(perf_data: &Path) -> Vec<Shown> {
    let dir = perf_data.parent().expect("case dir");
    let files = SymbolConfig { symfs: Some(dir.join("symfs")), buildid_dir: Some("/nonexistent".into()), ..SymbolConfig::perf() };
    run_with(perf_data, SessionOptions { unwind: Some(UnwindOptions { max_stack: 127, files, styles: Default::default() }), ..Default::default() })
}

fn run_with(perf_data: &Path, options: SessionOptions) -> Vec<Shown> {
    let mut input = pstitch::open(perf_data, pstitch::Threads::Single).expect("open");
    let (evlist, features, _) = input.take_header();
    let pipe = input.pipe;
    let mut session = Session::new(input.records(), evlist, features, pipe, options);
    let mut tool = Collect::default();
    session.run(&mut tool).expect("read");
    tool.samples
}

/// The golden variants with exactly the fields above.
fn variants() -> Vec<(PathBuf, PathBuf)> {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let wanted = ["--no-inline -F comm,pid,tid,time,event,ip,period --ns", "--no-inline -F comm,pid,tid,cpu,time,event,ip,period --ns"];
    let mut out = Vec::new();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&golden).expect("golden").flatten().map(|e| e.path()).collect();
    cases.sort();
    for case in cases.into_iter().filter(|c| c.join("perf.data").exists()) {
        let mut args: Vec<PathBuf> = std::fs::read_dir(&case).expect("case").flatten().map(|e| e.path()).collect();
        args.sort();
        for a in args.into_iter().filter(|p| p.extension().is_some_and(|e| e == "args")) {
            // (Bytes: an argument may be a path that is not UTF-8.)
            let text = std::fs::read(&a).expect("args");
            if wanted.iter().any(|w| w.as_bytes() == text.trim_ascii()) {
                out.push((case.join("perf.data"), a.with_extension("out")));
            }
        }
    }
    out
}

#[test]
fn a_tool_that_prints_nothing_gets_the_samples_perf_prints() {
    let variants = variants();
    let deferred = variants.iter().filter(|(d, _)| d.to_string_lossy().contains("/deferred")).count();
    assert!(deferred >= 8, "the deferred cases are among them ({deferred} of {})", variants.len());
    for (data, out) in &variants {
        let want = parse(&std::fs::read_to_string(out).expect("golden output"));
        let got = run(data);
        assert!(!want.is_empty(), "{}: no samples in the golden output", out.display());
        assert_eq!(got.len(), want.len(), "{}: samples delivered", out.display());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{}: sample {i} (tid, time, callchain)", out.display());
        }
    }
}

/// `--call-graph dwarf` recordings: with unwinding asked for, the session
/// delivers each sample with the user frames perf prints (`fields.out`:
/// `--no-inline -F comm,pid,tid,time,event,ip,period`, times in
/// microseconds), the objects found under the case's symfs.
#[test]
fn a_tool_gets_the_callchains_perf_unwinds() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut frames = 0;
    for case in ["dwarf-c", "dwarf-c-1024", "dwarf-cpp", "dwarf-libc", "dwarf-python", "dwarf-rust"] {
        let dir = golden.join(case);
        let got = run(&dir.join("perf.data"));
        let want = parse(&std::fs::read_to_string(dir.join("fields.out")).expect("golden output"));
        assert_eq!(got.len(), want.len(), "{case}: samples delivered");
        for (i, ((tid, time, ips), w)) in got.into_iter().zip(&want).enumerate() {
            let shown = (tid, time / 1000 * 1000, ips);
            assert_eq!(&shown, w, "{case}: sample {i} (tid, time, callchain)");
            frames += shown.2.len();
        }
    }
    assert!(frames > 10_000, "{frames} frames");
}

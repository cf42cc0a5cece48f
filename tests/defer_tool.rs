//! Tests of the deferred-callchain fixture tool (`pstitch-defer`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pstitch_fixtures::defer::{DeferOptions, convert};
use pstitch::perf_data::Input;
use pstitch::perf_data::attr::{flag, sample_type};
use pstitch::perf_data::record::kind;
use pstitch::perf_data::FileBytes;
use pstitch::Result;
use pstitch::{Context, DeferredEvent, Event, SampleEvent, Session, SessionOptions, Tool};

const USER: u64 = (-512i64) as u64;
const KERNEL: u64 = (-128i64) as u64;
const USER_DEFERRED: u64 = (-640i64) as u64;

fn golden(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(case)
}

/// Everything the tests look at in a recording.
#[derive(Default)]
struct Seen {
    /// (tid, time) -> callchain
    samples: BTreeMap<(i32, u64), Vec<u64>>,
    /// cookie -> (tid, time, user ips)
    deferred: BTreeMap<u64, (i32, u64, Vec<u64>)>,
    lost: usize,
    defer_callchain: Vec<bool>,
    defer_output: Vec<bool>,
}

impl Seen {
    fn attrs(&mut self, cx: &Context<'_>) {
        if self.defer_callchain.is_empty() {
            for e in &cx.evlist.evsels {
                self.defer_callchain.push(e.attr.has(flag::DEFER_CALLCHAIN));
                self.defer_output.push(e.attr.has(flag::DEFER_OUTPUT));
            }
        }
    }
}

impl Tool for Seen {
    fn sample(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        self.attrs(cx);
        let s = ev.sample;
        self.samples.insert((s.tid, s.time), ev.callchain.map(|c| c.to_vec()).unwrap_or_default());
        Ok(())
    }

    fn deferred_callchain(&mut self, cx: &mut Context<'_>, ev: &DeferredEvent<'_>) -> Result<()> {
        self.attrs(cx);
        let d = &ev.deferred;
        let prev = self.deferred.insert(d.cookie, (ev.id.tid, ev.id.time, d.ips.iter().collect()));
        assert!(prev.is_none(), "cookie {:#x} used by two deferred records", d.cookie);
        Ok(())
    }

    fn record(&mut self, cx: &mut Context<'_>, ev: &Event<'_>) -> Result<()> {
        self.attrs(cx);
        if ev.record.header.type_ == kind::LOST {
            self.lost += 1;
        }
        Ok(())
    }
}

fn read(bytes: Vec<u8>) -> Seen {
    let mut input = Input::from_bytes(FileBytes::Owned(bytes)).unwrap();
    let (evlist, features, _) = input.take_header();
    let pipe = input.pipe;
    // Unmerged: the samples and the deferred records as the file has them.
    let options = SessionOptions { no_merge_callchains: true, ..Default::default() };
    let mut session = Session::new(input.records(), evlist, features, pipe, options);
    let mut seen = Seen::default();
    session.run(&mut seen).unwrap();
    seen
}

fn user_part(chain: &[u64]) -> Option<&[u64]> {
    let at = chain.iter().position(|&x| x == USER)?;
    Some(&chain[at + 1..])
}

#[test]
fn committed_fixtures_are_what_the_recipes_make() {
    // Each derived case's recipe runs pstitch-defer with these options on
    // its source; the output must be byte-identical to what is committed.
    let cases: [(&str, &str, DeferOptions); 7] = [
        ("deferred", "c-threads", DeferOptions::default()),
        ("deferred-delayed", "c-threads", DeferOptions { delay_records: 40, ..Default::default() }),
        ("deferred-lost", "c-threads", DeferOptions { lose_every: 4, ..Default::default() }),
        ("deferred-orphans", "c-threads", DeferOptions { orphans: 25, seed: 1, ..Default::default() }),
        ("deferred-cross-cpu", "system-wide", DeferOptions { cross_cpu: true, ..Default::default() }),
        ("deferred-exec", "forkexec", DeferOptions::default()),
        ("deferred-pipe", "pipe", DeferOptions::default()),
    ];
    for (case, source, opts) in cases {
        let recipe = std::fs::read_to_string(golden(case).join("recipe.sh")).unwrap();
        assert!(recipe.contains(&format!("/../{source}/perf.data")), "{case}: recipe does not derive from {source}");
        let input = std::fs::read(golden(source).join("perf.data")).unwrap();
        let (out, _) = convert(&input, &opts).unwrap();
        let committed = std::fs::read(golden(case).join("perf.data")).unwrap();
        assert!(out == committed, "{case}: pstitch-defer output differs from the committed perf.data");
        let (again, _) = convert(&input, &opts).unwrap();
        assert!(out == again, "{case}: conversion is not deterministic");
    }
}

#[test]
fn conversion_keeps_kernel_parts_and_moves_user_parts_to_deferred_records() {
    let original_bytes = std::fs::read(golden("c-threads").join("perf.data")).unwrap();
    let original = read(original_bytes.clone());
    let (out, report) = convert(&original_bytes, &DeferOptions::default()).unwrap();
    let converted = read(out);

    assert_eq!(converted.defer_callchain, vec![true]);
    assert_eq!(converted.defer_output, vec![true]);
    assert_eq!(converted.samples.len(), original.samples.len());
    assert_eq!(report.samples, original.samples.len());
    assert_eq!(report.deferred_records, converted.deferred.len());

    let mut cookies_per_record: BTreeMap<u64, usize> = BTreeMap::new();
    for (key, chain) in &converted.samples {
        let orig = &original.samples[key];
        let n = chain.len();
        assert!(n >= 2 && chain[n - 2] == USER_DEFERRED, "{key:?} not deferred: {chain:x?}");
        let cookie = chain[n - 1];
        assert_eq!(cookie & 0xffff_ffff, 0, "cookie {cookie:#x}: low 32 bits are the CPU (no CPU sampled: 0)");
        // Kernel part unchanged, user part gone.
        let at = orig.iter().position(|&x| x == USER).unwrap();
        assert_eq!(&chain[..n - 2], &orig[..at], "{key:?}");
        if orig[0] == KERNEL {
            assert!(at > 0);
        }
        if let Some((tid, time, ips)) = converted.deferred.get(&cookie) {
            assert_eq!(*tid, key.0);
            assert!(*time > key.1, "deferred record must come after its sample");
            assert_eq!(ips.as_slice(), user_part(orig).unwrap(), "{key:?}");
            *cookies_per_record.entry(cookie).or_default() += 1;
        }
    }
    // Kernel entries share a cookie; every record serves at least one sample.
    assert_eq!(cookies_per_record.len(), converted.deferred.len());
    let shared = cookies_per_record.values().filter(|&&n| n > 1).count();
    assert!(shared > 0, "no kernel entry had more than one sample");
    assert_eq!(report.kernel_entries + report.user_samples, report.deferred_records + report.never_returned);
}

#[test]
fn variants_lose_orphan_and_delay() {
    let input = std::fs::read(golden("c-threads").join("perf.data")).unwrap();
    let base = read(convert(&input, &DeferOptions::default()).unwrap().0);

    let (lost_bytes, lost_report) = convert(&input, &DeferOptions { lose_every: 3, ..Default::default() }).unwrap();
    let lost = read(lost_bytes);
    assert_eq!(lost.lost, lost_report.lost);
    assert_eq!(lost.deferred.len() + lost.lost, base.deferred.len());

    let (orph_bytes, orph_report) = convert(&input, &DeferOptions { orphans: 7, seed: 9, ..Default::default() }).unwrap();
    let orph = read(orph_bytes);
    assert_eq!(orph_report.orphans, 7);
    let unknown: Vec<_> = orph.deferred.keys().filter(|c| !base.deferred.contains_key(c)).collect();
    assert_eq!(unknown.len(), 7);
    assert!(unknown.iter().all(|c| (*c >> 32) >= 0xdead_0000), "orphan cookies are marked");

    let delayed = read(convert(&input, &DeferOptions { delay_records: 25, ..Default::default() }).unwrap().0);
    assert_eq!(delayed.deferred.len(), base.deferred.len());
    let later = delayed.deferred.iter().filter(|(c, (_, t, _))| *t > base.deferred[c].1).count();
    assert!(later > base.deferred.len() / 2, "delayed records should carry later times");
}

#[test]
fn recordings_without_callchains_or_sample_id_all_are_refused_or_kept() {
    // A file-mode recording of two events converts; the callchain-less
    // attribute bits are not touched.
    let input = std::fs::read(golden("two-events").join("perf.data")).unwrap();
    let (out, _) = convert(&input, &DeferOptions::default()).unwrap();
    let mut i = Input::from_bytes(FileBytes::Owned(out)).unwrap();
    let (evlist, _, _) = i.take_header();
    for e in &evlist.evsels {
        assert_eq!(e.attr.has(flag::DEFER_CALLCHAIN), e.attr.samples(sample_type::CALLCHAIN));
    }
    assert_eq!(evlist.evsels.iter().filter(|e| e.attr.has(flag::DEFER_OUTPUT)).count(), 1);
    // Garbage is an error, not a panic.
    assert!(convert(b"PERFILE2garbage", &DeferOptions::default()).is_err());
}

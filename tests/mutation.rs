//! Deterministic mutation test: hundreds of truncated, bit-flipped and
//! size-corrupted copies of several recordings go through the whole
//! pipeline in-process (reader, session, printer; pipe data also through
//! the streaming reader). None may panic; every run must end within a time
//! budget; every failure (exit code 1) must come with a message on stderr
//! naming the input. The mutations come from a fixed seed, so a failure
//! reproduces; the failing mutation is written to the temp directory.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;

use pstitch::perf_data::header::is_pipe_header;
use pstitch::perf_data::{FileInfo, RecordSource};
use pstitch::script::{Outcome, ScriptOptions};

/// xorshift64*: small, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Record start offsets of a recording (file or pipe mode).
fn records(bytes: &[u8]) -> Vec<(usize, u32, usize)> {
    let (endian, start, end) = match is_pipe_header(bytes) {
        Some(e) => (e, 16, bytes.len()),
        None => {
            let info = FileInfo::parse(bytes).unwrap();
            (info.header.endian, info.data.start, info.data.end)
        }
    };
    let mut src = RecordSource::from_slice(bytes, start, end, endian);
    let mut v = Vec::new();
    while let Ok(Some(r)) = src.next_record() {
        v.push((r.offset as usize, r.header.type_, r.header.size as usize));
    }
    v
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if at + v.len() <= b.len() {
        b[at..at + v.len()].copy_from_slice(v);
    }
}

/// The mutations of one recording: (description, bytes).
fn mutations(name: &str, orig: &[u8], rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let recs = records(orig);
    let pipe = is_pipe_header(orig).is_some();
    let mut out = Vec::new();
    let n = orig.len();
    // Truncations: anywhere, and just inside records.
    for _ in 0..15 {
        let cut = rng.below(n);
        out.push((format!("{name}: cut at {cut}"), orig[..cut].to_vec()));
    }
    for _ in 0..10 {
        let (off, _, size) = recs[rng.below(recs.len())];
        let cut = off + 1 + rng.below(size);
        out.push((format!("{name}: cut inside the record at {off:#x}"), orig[..cut.min(n)].to_vec()));
    }
    // Bit flips: anywhere, and in the first KiB (header, attrs).
    for i in 0..30 {
        let mut v = orig.to_vec();
        let flips = 1 << (i % 4);
        let mut at = Vec::new();
        for _ in 0..flips {
            let pos = if i % 2 == 0 { rng.below(n) } else { rng.below(n.min(1024)) };
            v[pos] ^= 1 << rng.below(8);
            at.push(pos);
        }
        out.push((format!("{name}: bits flipped at {at:?}"), v));
    }
    // Record sizes.
    for _ in 0..15 {
        let (off, t, size) = recs[rng.below(recs.len())];
        let new = [0u16, 4, 8, 12, (size as u16).wrapping_sub(8), size as u16 + 8, 0xfff8, 0xffff][rng.below(8)];
        let mut v = orig.to_vec();
        put(&mut v, off + 6, &new.to_le_bytes());
        out.push((format!("{name}: record at {off:#x} (type {t}) size {size} -> {new}"), v));
    }
    // Counts inside records: the u64 words of a sample or a deferred
    // callchain (callchain nr, ...) and the u32 of strings' lengths.
    for _ in 0..15 {
        let (off, t, size) = recs[rng.below(recs.len())];
        if size < 16 {
            continue;
        }
        let word = 8 + 8 * rng.below((size - 8) / 8);
        let val = [u64::MAX, 1 << 61, 0x1_0000, (size / 8) as u64, 0, 0xffff_ffff][rng.below(6)];
        let mut v = orig.to_vec();
        put(&mut v, off + word, &val.to_le_bytes());
        out.push((format!("{name}: record at {off:#x} (type {t}) word at +{word} = {val:#x}"), v));
    }
    // Header fields (file mode): sizes, offsets, feature table entries.
    if !pipe {
        let info = FileInfo::parse(orig).unwrap();
        let table = info.data.end;
        for _ in 0..15 {
            let field = if rng.below(3) == 0 { table + 8 * rng.below(40) } else { 16 + 8 * rng.below(7) };
            let val = [0u64, 1, 8, u64::MAX, n as u64, n as u64 + 1, (n / 2) as u64, 1 << 40][rng.below(8)];
            let mut v = orig.to_vec();
            put(&mut v, field, &val.to_le_bytes());
            out.push((format!("{name}: header/feature word at {field} = {val:#x}"), v));
        }
    }
    // Strings without their NUL.
    for &(off, t, size) in recs.iter().filter(|r| r.1 == 3 || r.1 == 10).take(3) {
        let mut v = orig.to_vec();
        for b in &mut v[off + 16..off + size] {
            if *b == 0 {
                *b = b'x';
            }
        }
        out.push((format!("{name}: record at {off:#x} (type {t}) without NUL"), v));
    }
    out
}

/// One run; returns (outcome, stderr).
fn run_one(data: &[u8], stream: bool) -> (Outcome, String) {
    let output = ScriptOptions { show_lost_events: true, ..Default::default() };
    let report = common::run(data, stream, common::offline(output, Default::default()));
    (report.outcome, report.messages.join("\n"))
}

#[test]
fn mutated_recordings_never_crash() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut inputs: Vec<(String, Vec<u8>)> = [
        "c-threads",
        "two-events",
        "system-wide",
        "pipe",
        "compressed",
        "pipe-compressed",
        "deferred-delayed",
        "deferred-lost",
    ]
    .iter()
    .map(|c| (c.to_string(), std::fs::read(root.join("tests/golden").join(c).join("perf.data")).unwrap()))
    .collect();
    inputs.push(("killed".into(), std::fs::read(root.join("tests/damaged/killed/perf.data")).unwrap()));
    let c = &inputs[0].1;
    inputs.push(("c-threads-be".into(), pstitch_fixtures::swap::swap(c).unwrap().bytes));

    let mut rng = Rng(0x5eed_0f57_17c4);
    let mut cases = Vec::new();
    for (name, bytes) in &inputs {
        cases.extend(mutations(name, bytes, &mut rng));
    }
    let total = cases.len();
    assert!(total >= 500, "only {total} mutations");

    // Run in a thread so that a hang fails the test instead of stalling it.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let mut stats = (0usize, 0usize, Duration::ZERO, String::new());
        for (what, data) in &cases {
            let stream = is_pipe_header(data).is_some();
            for s in [false, stream].into_iter().take(1 + stream as usize) {
                let t = Instant::now();
                let r = std::panic::catch_unwind(|| run_one(data, s));
                let dt = t.elapsed();
                if dt > stats.2 {
                    stats.2 = dt;
                    stats.3 = what.clone();
                }
                let failure = match r {
                    Err(_) => Some("panicked".to_string()),
                    Ok((outcome, err)) => {
                        if outcome == Outcome::Printed {
                            stats.0 += 1;
                            None
                        } else if outcome == Outcome::Failed
                            && err.lines().last().is_some_and(|l| l.starts_with("pstitch: memory: ") || l.starts_with("pstitch: writing"))
                        {
                            stats.1 += 1;
                            None
                        } else if outcome != Outcome::Printed && err.lines().last().is_some_and(|l| !l.trim().is_empty() && !l.starts_with("pstitch:")) {
                            // A damaged sample_type can make the default
                            // fields impossible: perf's own message, last
                            // (after pstitch's warnings about the header).
                            stats.1 += 1;
                            None
                        } else {
                            Some(format!("{outcome:?} without a final message naming the input; stderr: {err:?}"))
                        }
                    }
                };
                if let Some(f) = failure {
                    let p = std::env::temp_dir().join("pstitch-mutation-failure.data");
                    let _ = std::fs::write(&p, data);
                    std::panic::set_hook(hook);
                    let _ = tx.send(Err(format!("{what} (stream: {s}): {f}; input written to {}", p.display())));
                    return;
                }
            }
        }
        std::panic::set_hook(hook);
        let _ = tx.send(Ok(stats));
    });
    let budget = if cfg!(debug_assertions) { Duration::from_secs(600) } else { Duration::from_secs(60) };
    match rx.recv_timeout(budget) {
        Ok(Ok((ok, damaged, slowest, which))) => {
            eprintln!(
                "{total} mutations: {ok} runs read everything (exit 0), {damaged} stopped at damage (exit 1 or 2, message given); slowest run {slowest:?} ({which})"
            );
            assert!(slowest < budget / 4, "a single run took {slowest:?}: {which}");
        }
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("mutation runs did not finish within {budget:?} (a hang?)"),
    }
}


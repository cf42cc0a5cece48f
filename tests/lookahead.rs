//! What a tool's lookahead is shown (`Tool::lookahead`): in a mapped file,
//! the records after the queue too, so that a tool sees the first samples
//! before it spends time on the first records; each such record once; and
//! only records the session then delivers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pstitch::perf_data::Input;
use pstitch::Result;
use pstitch::perf_data::record::kind;
use pstitch::{Context, Event, SampleEvent, Session, Tool};

#[derive(Default)]
struct Watch {
    /// Record bytes (by address: file records are borrowed from the map)
    /// -> (times shown by lookahead, delivered).
    seen: HashMap<usize, (u32, bool)>,
    /// Samples shown by the first lookahead, and samples delivered before it.
    first_look: Option<(usize, usize)>,
    delivered_samples: usize,
    calls: usize,
}

impl Tool for Watch {
    fn lookahead(&mut self, _cx: &mut Context<'_>, records: &mut dyn Iterator<Item = (usize, &[u8])>) {
        self.calls += 1;
        let mut samples = 0;
        for (_, bytes) in records {
            if u32::from_le_bytes(bytes[..4].try_into().expect("header")) == kind::SAMPLE {
                samples += 1;
            }
            self.seen.entry(bytes.as_ptr() as usize).or_default().0 += 1;
        }
        self.first_look.get_or_insert((samples, self.delivered_samples));
    }

    fn sample(&mut self, _cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> Result<()> {
        self.delivered_samples += 1;
        self.seen.entry(ev.record.bytes.as_ptr() as usize).or_default().1 = true;
        Ok(())
    }

    fn record(&mut self, _cx: &mut Context<'_>, ev: &Event<'_>) -> Result<()> {
        self.seen.entry(ev.record.bytes.as_ptr() as usize).or_default().1 = true;
        Ok(())
    }
}

fn recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name).join("perf.data")
}

fn watch(path: &Path) -> Watch {
    let mut input = Input::open(path).expect("open");
    let (evlist, features, _) = input.take_header();
    let pipe = input.pipe;
    let mut session = Session::new(input.records(), evlist, features, pipe, Default::default());
    let mut w = Watch::default();
    session.run(&mut w).expect("read");
    w
}

/// `name`'s recording with a FINISHED_ROUND after every `every` records
/// (a real recording of this size has a handful of rounds; a large one,
/// thousands), in a temporary file.
fn with_many_rounds(name: &str, every: usize) -> PathBuf {
    let bytes = std::fs::read(recording(name)).expect("read");
    let u64_at = |b: &[u8], off: usize| u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"));
    // perf_file_header: magic, size, attr_size, attrs {offset, size},
    // data {offset, size}, event_types {offset, size}, features bitmap.
    let (data_off, data_size) = (u64_at(&bytes, 40) as usize, u64_at(&bytes, 48) as usize);
    let mut data = Vec::new();
    let mut pos = data_off;
    let mut n = 0;
    while pos < data_off + data_size {
        let size = u16::from_le_bytes([bytes[pos + 6], bytes[pos + 7]]) as usize;
        data.extend_from_slice(&bytes[pos..pos + size]);
        pos += size;
        n += 1;
        if n % every == 0 {
            data.extend(kind::FINISHED_ROUND.to_le_bytes());
            data.extend(0u16.to_le_bytes());
            data.extend(8u16.to_le_bytes());
        }
    }
    let delta = (data.len() - data_size) as u64;
    let mut out = bytes[..data_off].to_vec();
    out[48..56].copy_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(&data);
    // The feature sections' table follows the data; its offsets move.
    let mut rest = bytes[data_off + data_size..].to_vec();
    let features: u32 = (0..4).map(|i| u64_at(&bytes, 72 + 8 * i).count_ones()).sum();
    for i in 0..features as usize {
        let off = u64_at(&rest, i * 16) + delta;
        rest[i * 16..i * 16 + 8].copy_from_slice(&off.to_le_bytes());
    }
    out.extend_from_slice(&rest);
    let path = std::env::temp_dir().join(format!("pstitch-lookahead-{}-{name}.data", std::process::id()));
    std::fs::write(&path, out).expect("write");
    path
}

#[test]
fn file_mode_shows_records_ahead_of_the_queue_once() {
    let path = with_many_rounds("system-wide", 16);
    let w = watch(&path);
    std::fs::remove_file(&path).ok();
    let (first_samples, delivered_before) = w.first_look.expect("looked ahead");
    assert_eq!(delivered_before, 0, "the first look comes before any sample goes out");
    assert_eq!(first_samples, w.delivered_samples, "a small file is seen whole at the first look");
    assert!(w.calls > 30, "a look at each of the many flushes ({})", w.calls);
    // Once ahead of the queue, then twice at most in it (a round's records
    // wait for the next round's flush): not once per flush.
    let most = w.seen.values().map(|v| v.0).max().unwrap_or(0);
    assert!(most <= 3, "a record shown {most} times");
    for (shown, delivered) in w.seen.values() {
        assert!(*delivered || *shown == 0, "every record shown is then delivered");
    }
}

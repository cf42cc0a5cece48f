//! Damaged and interrupted perf.data files, through the `pstitch` binary:
//! what is printed, what is said on stderr, and the exit code.
//!
//! The central property: on a file damaged at some point, pstitch prints
//! exactly what it prints for the undamaged part alone (the same file cut
//! cleanly at the last whole record before the damage) — nothing read before
//! the damage is lost, deferred samples held for their user callchain
//! included — then names the file, offset and record type on stderr and
//! exits 1.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pstitch::perf_data::Input;
use pstitch::perf_data::{FileBytes, FileInfo};

const FIELDS: &[&str] = &["--no-inline", "-F", "comm,pid,tid,time,event,ip,period", "--ns"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn golden(case: &str) -> PathBuf {
    root().join("tests/golden").join(case).join("perf.data")
}

fn pstitch(input: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "-i"])
        .arg(input)
        .args(args)
        .output()
        .expect("run pstitch")
}

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pstitch-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Offsets of the records of a file-mode perf.data (start of each record,
/// plus the end of the last one).
fn record_bounds(bytes: &[u8]) -> Vec<usize> {
    let info = FileInfo::parse(bytes).unwrap();
    let mut input = Input::from_bytes(FileBytes::Owned(bytes.to_vec())).unwrap();
    let mut src = input.records();
    let mut v = Vec::new();
    while let Some(r) = src.next_record().unwrap() {
        v.push(r.offset as usize);
    }
    v.push(info.data.end);
    v
}

/// The clean form of the first `end` bytes of a file whose records start
/// at `data_start`: data size set to what is left, no feature sections.
fn clean_prefix(bytes: &[u8], end: usize) -> Vec<u8> {
    let mut v = bytes[..end].to_vec();
    let data_off = u64::from_le_bytes(v[40..48].try_into().unwrap()) as usize;
    v[48..56].copy_from_slice(&((end - data_off) as u64).to_le_bytes());
    v[72..104].fill(0);
    v
}

#[test]
fn killed_recording_is_read_to_the_end() {
    // A real `perf record -g` killed with SIGKILL: its header still says
    // data size 0. perf-ref prints nothing for it (exit 255); the expected
    // output is perf-ref's on a repaired copy (tests/damaged/killed/recipe.sh).
    let dir = root().join("tests/damaged/killed");
    let o = pstitch(&dir.join("perf.data"), &["--no-inline", "-F", "comm,pid,tid,time,event,ip,period"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let expected = std::fs::read(dir.join("fields.out")).unwrap();
    assert!(o.stdout == expected, "output differs from perf-ref's on the repaired copy");
    let e = stderr(&o);
    assert!(e.contains("data size is 0") && e.contains("reading records up to the end of the file"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn truncated_files_print_everything_before_the_cut() {
    for case in ["c-threads", "two-events", "deferred", "deferred-delayed", "compressed"] {
        let bytes = std::fs::read(golden(case)).unwrap();
        let bounds = record_bounds(&bytes);
        let n = bounds.len();
        // Cuts inside records spread over the data, and at record starts.
        for (i, k) in [n / 7, n / 3, n / 2, 2 * n / 3, n - 3].into_iter().enumerate() {
            let (start, next) = (bounds[k], bounds[k + 1]);
            for (j, cut) in [start + 5, (start + next) / 2, start].into_iter().enumerate() {
                let damaged = tmp(&format!("{case}-cut-{i}-{j}"), &bytes[..cut]);
                let clean = tmp(&format!("{case}-clean-{i}-{j}"), &clean_prefix(&bytes, start));
                let d = pstitch(&damaged, FIELDS);
                let c = pstitch(&clean, FIELDS);
                assert_eq!(c.status.code(), Some(0), "{case}: clean prefix: {}", stderr(&c));
                assert_eq!(d.status.code(), Some(255), "{case} cut at {cut:#x}: {}", stderr(&d));
                assert!(d.stdout == c.stdout, "{case} cut at {cut:#x}: output differs from the clean prefix's");
                let e = stderr(&d);
                let last = e.lines().last().unwrap_or("");
                assert!(last.starts_with(&format!("pstitch: {}: offset 0x", damaged.display())), "{case}: {e}");
                if cut > start {
                    // The record's header is there (else the message says
                    // the header is truncated).
                    assert!(last.contains(&format!("offset {start:#x}")), "{case}: {last}");
                    if cut >= start + 8 {
                        assert!(last.contains(" record (type "), "{case}: {last}");
                    }
                } else {
                    assert!(last.contains("bytes before the end of the data section"), "{case}: {last}");
                }
            }
        }
    }
}

#[test]
fn held_deferred_samples_are_printed_when_reading_stops() {
    // In `deferred-delayed` user callchains come late, so at any cut some
    // samples are held waiting for theirs. On damage they go out as at the
    // end of input: unmerged, in arrival order, with their (cookie) frame.
    let bytes = std::fs::read(golden("deferred")).unwrap();
    let bounds = record_bounds(&bytes);
    let args = ["--no-inline", "-F", "comm,pid,tid,time,event,ip,sym,period", "--ns"];
    let mut tried = 0;
    for k in (bounds.len() / 2..bounds.len() - 1).step_by(7) {
        let (start, next) = (bounds[k], bounds[k + 1]);
        let damaged = tmp("deferred-held", &bytes[..(start + next) / 2]);
        let d = pstitch(&damaged, &args);
        let e = stderr(&d);
        let Some(summary) = e.lines().find(|l| l.contains("deferred callchains:")) else { continue };
        if summary.contains(" 0 unstitched at end of input") {
            continue;
        }
        let c = pstitch(&tmp("deferred-held-clean", &clean_prefix(&bytes, start)), &args);
        assert_eq!(d.status.code(), Some(255));
        assert!(d.stdout == c.stdout, "cut in the record at {start:#x}");
        assert!(String::from_utf8_lossy(&d.stdout).contains("(cookie)"));
        tried += 1;
        if tried == 3 {
            return;
        }
    }
    panic!("no cut with held samples found");
}

#[test]
fn framing_damage_names_file_offset_and_type() {
    // An unaligned record size: everything before it is printed, then the
    // error (perf 7.2 prints nothing at all here).
    let bytes = std::fs::read(golden("c-threads")).unwrap();
    let bounds = record_bounds(&bytes);
    let at = bounds[20];
    // (Without feature sections on both sides, so that the damage is the
    // only difference.)
    let mut v = clean_prefix(&bytes, bounds[30]);
    let size = u16::from_le_bytes([v[at + 6], v[at + 7]]);
    v[at + 6..at + 8].copy_from_slice(&(size - 4).to_le_bytes());
    let p = tmp("unaligned", &v);
    let o = pstitch(&p, FIELDS);
    assert_eq!(o.status.code(), Some(255));
    let e = stderr(&o);
    assert_eq!(
        e.lines().last().unwrap(),
        format!("pstitch: {}: offset {at:#x}: SAMPLE record (type 9): record size {} is not a multiple of 8", p.display(), size - 4)
    );
    let clean = pstitch(&tmp("unaligned-clean", &clean_prefix(&bytes, at)), FIELDS);
    assert!(o.stdout == clean.stdout);
    assert!(!o.stdout.is_empty());
}

#[test]
fn unknown_ids_and_types_are_skipped_with_one_warning() {
    let bytes = std::fs::read(golden("two-events")).unwrap();
    let bounds = record_bounds(&bytes);
    let mut v = bytes.clone();
    // Give three samples an id no attr has (two-events samples start with
    // IDENTIFIER), and make one record an unknown kernel type.
    let of_type = |t: u8| -> Vec<usize> { bounds.iter().copied().filter(|&o| o + 8 <= v.len() && v[o] == t && v[o + 1] == 0).collect() };
    let (samples, mmaps) = (of_type(9), of_type(10));
    for &o in &samples[10..13] {
        v[o + 8..o + 16].copy_from_slice(&0xdead_beef_u64.to_le_bytes());
    }
    let first = samples[10];
    let unknown = *mmaps.last().unwrap();
    v[unknown..unknown + 4].copy_from_slice(&30u32.to_le_bytes());
    let o = pstitch(&tmp("unknown-ids", &v), FIELDS);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&format!("offset {:#x}: skipping records whose event id is not in the header (3 times in all)", first)), "{e}");
    assert!(e.contains(&format!("offset {unknown:#x}: skipping records of unknown type 30")), "{e}");
    let orig = pstitch(&golden("two-events"), FIELDS);
    let lines = |b: &[u8]| String::from_utf8_lossy(b).lines().filter(|l| !l.starts_with('\t') && !l.is_empty()).count();
    assert_eq!(lines(&o.stdout) + 3, lines(&orig.stdout));
}

#[test]
fn records_of_a_newer_perf_are_warned_about_as_perf_does_but_boundedly() {
    // Every sample becomes a type past perf 7.2's PERF_RECORD_HEADER_MAX:
    // perf warns for each; pstitch says it in perf's words for the first
    // 100 and counts the rest.
    let bytes = std::fs::read(golden("two-events")).unwrap();
    let mut v = bytes.clone();
    let samples: Vec<usize> = record_bounds(&bytes).into_iter().filter(|&o| o + 8 <= v.len() && v[o] == 9 && v[o + 1] == 0).collect();
    assert!(samples.len() > 150, "{} samples", samples.len());
    for &o in &samples {
        v[o..o + 4].copy_from_slice(&90u32.to_le_bytes());
    }
    let o = pstitch(&tmp("newer-types", &v), FIELDS);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    let said = "Warning:\nUnsupported header type 90, please consider updating perf.\n";
    assert!(e.starts_with(&said.repeat(100)), "{e}");
    assert_eq!(e.matches(said).count(), 100, "{e}");
    assert!(e.contains(&format!(": warning: {} more of perf's warnings (as above) not shown", samples.len() - 100)), "{e}");
}

#[test]
fn lost_events_are_counted() {
    let o = pstitch(&golden("deferred-lost"), FIELDS);
    assert_eq!(o.status.code(), Some(0));
    let e = stderr(&o);
    // perf's words: every record processed, the LOST records among them.
    assert!(e.starts_with("Warning:\nProcessed 896 events and lost 108 chunks!\n\nCheck IO/CPU overload!\n\n"), "{e}");
    let shown = pstitch(&golden("deferred-lost"), &[FIELDS, &["--show-lost-events"]].concat());
    assert!(!stderr(&shown).contains("Warning:"), "perf does not warn about lost events it shows");
}

#[test]
fn exit_codes() {
    // perf-ref's messages and statuses for the same cases (its paths are
    // the ones given).
    let o = pstitch(Path::new("/nonexistent/perf.data"), &[]);
    assert_eq!(o.status.code(), Some(255));
    assert_eq!(stderr(&o), "failed to open /nonexistent/perf.data: No such file or directory\n");
    let o = pstitch(&golden("c-threads"), &["-F", "comm,nosuchfield"]);
    assert_eq!(o.status.code(), Some(129));
    let empty = tmp("empty", b"");
    let o = pstitch(&empty, &[]);
    assert_eq!(o.status.code(), Some(255));
    assert_eq!(stderr(&o), format!("zero-sized data ({}), nothing to do!\n", empty.display()));
    let garbage = tmp("garbage", &[0x55; 200]);
    let o = pstitch(&garbage, &[]);
    assert_eq!(o.status.code(), Some(255));
    assert_eq!(stderr(&o), "incompatible file format (rerun with -v to learn more)\n");
    // -v says why.
    let o = pstitch(&garbage, &["-v"]);
    assert!(stderr(&o).contains("not a perf.data file"), "{}", stderr(&o));
}

#[test]
fn closed_output_pipe_is_not_an_error() {
    // The reader goes away before reading anything: the first write fails
    // with EPIPE. pstitch stops, quietly, with exit code 0.
    for case in ["c-threads", "pipe", "deferred-delayed"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pstitch"))
            .args(["script", "-i"])
            .arg(golden(case))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{case}: {err}");
        assert!(!err.contains("panicked") && !err.to_lowercase().contains("broken pipe"), "{case}: {err}");
        assert!(err.lines().all(|l| l.contains("Invalid HEADER_CPU_DOMAIN_INFO") || l.is_empty()), "{case}: {err}");
    }
}

#[test]
fn pstitch_piped_into_head() {
    // The everyday form, through a shell: `pstitch script ... | head`.
    let cmd = format!(
        "'{}' script -i '{}' --ns -F comm,tid,time,ip,period 2>err.txt | head -n 3 >/dev/null; echo ${{PIPESTATUS[0]}}",
        env!("CARGO_BIN_EXE_pstitch"),
        golden("system-wide").display()
    );
    let dir = std::env::temp_dir().join(format!("pstitch-head-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new("bash").arg("-c").arg(&cmd).current_dir(&dir).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "0");
    let err = std::fs::read_to_string(dir.join("err.txt")).unwrap();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn inputs_that_crash_perf() {
    // Bit-flipped deferred recordings on which perf 7.2 dies of SIGSEGV or
    // SIGBUS (tests/damaged/perf-crashes/README.md): pstitch skips the bad
    // records with a warning and reads the rest.
    let dir = root().join("tests/damaged/perf-crashes");
    for (file, offset) in [("sigsegv-deferred-nr.data", 0x1230), ("sigsegv-sample-callchain.data", 0xba98), ("sigbus-deferred-nr.data", 0xd588)] {
        let o = pstitch(&dir.join(file), &["--no-inline", "-F", "comm,tid,time,ip,sym"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{file}: {e}");
        assert!(e.contains(&format!("offset {offset:#x}: ")) && e.contains("runs past the end of the record; skipping it"), "{file}: {e}");
        assert!(String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.starts_with('\t') && !l.is_empty()).count() > 400, "{file}");
    }
}

#[test]
fn damage_inside_compressed_data_names_both_offsets() {
    // A pipe recording whose records after the first sample are replaced by
    // one COMPRESSED2 chunk holding a good sample and a record with an
    // unaligned size: the error names the chunk's offset and the record's
    // place in the decompressed data.
    let bytes = std::fs::read(golden("pipe")).unwrap();
    let mut input = Input::from_bytes(FileBytes::Owned(bytes.clone())).unwrap();
    let mut src = input.records();
    let mut sample = None;
    while let Some(r) = src.next_record().unwrap() {
        if r.header.type_ == 9 {
            sample = Some((r.offset as usize, r.header.size as usize));
            break;
        }
    }
    let (at, size) = sample.unwrap();
    let good = &bytes[at..at + size];
    let mut plain = good.to_vec();
    plain.extend_from_slice(&[9, 0, 0, 0, 2, 0, 12, 0, 0, 0, 0, 0]);
    let packed = zstd::bulk::compress(&plain, 1).unwrap();
    let padded = packed.len().div_ceil(8) * 8;
    let mut v = bytes[..at + size].to_vec();
    let chunk_at = v.len();
    v.extend_from_slice(&83u32.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&((16 + padded) as u16).to_le_bytes());
    v.extend_from_slice(&(packed.len() as u64).to_le_bytes());
    v.extend_from_slice(&packed);
    v.resize(chunk_at + 16 + padded, 0);
    let p = tmp("compressed-damage", &v);
    let o = pstitch(&p, &["--no-inline", "-F", "comm,tid,time,ip"]);
    assert_eq!(o.status.code(), Some(255));
    let e = stderr(&o);
    assert!(
        e.lines().last().unwrap().ends_with(&format!(
            "offset {chunk_at:#x} (+{size:#x} in its decompressed data): SAMPLE record (type 9): record size 12 is not a multiple of 8"
        )),
        "{e}"
    );
    // Both samples before the damage are printed (the one in the chunk too).
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().filter(|l| !l.starts_with('\t') && !l.is_empty()).count(), 2, "{out}");
}

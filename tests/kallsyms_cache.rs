//! The kernel symbol cache (`src/symbols/ksyms_cache.rs`) on this
//! machine's own `/proc/kallsyms`: a recording made to look like one of
//! this boot (its kernel addresses and reference symbol moved to where
//! `/proc/kallsyms` has `_text`), printed with the cache off, cold (the
//! file is written), warm (mapped), damaged, truncated, in a directory
//! that cannot be written, and for a recording of another relocation (the
//! file is neither used nor replaced; its kernel frames name the same
//! symbols), in both thread modes. Every run prints what the run with the
//! cache off prints, whose kernel frames are the ones the host's perf
//! prints from the same `/proc/kallsyms` (perf 6.1 formats other fields in
//! its own way; its kernel frame lines are perf 7.2's).
//!
//! Needs `/proc/kallsyms` with addresses (root) and `/usr/bin/perf`, as CI
//! has them; without them the test fails and says why.

mod golden_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The live address of `_text`.
fn live_text() -> u64 {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("this test reads /proc/kallsyms");
    let line = text.lines().find(|l| l.split_whitespace().nth(2) == Some("_text")).expect("_text in /proc/kallsyms");
    let addr = u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
    assert!(addr != 0, "/proc/kallsyms hides its addresses here: run this test as root");
    addr
}

/// c-threads' recording as if made on this boot with the kernel's
/// reference symbol (`_text`) at `text`: the kernel map and every address
/// in it (sample ips, callchain entries) moved by the difference (on a
/// machine whose kernel is placed elsewhere: KASLR), the map's reference
/// set to `text`.
fn recording(dir: &Path, name: &str, text: u64) -> PathBuf {
    let mut data = std::fs::read(golden_common::golden_dir().join("c-threads/perf.data")).unwrap();
    let word = |d: &[u8], at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
    let name_at = data.windows(22).position(|w| w == b"[kernel.kallsyms]_text").expect("the kernel's MMAP");
    // MMAP: header, pid, tid, start, len, pgoff, filename.
    let (start, len, pgoff) = (word(&data, name_at - 24), word(&data, name_at - 16), word(&data, name_at - 8));
    let shift = text.wrapping_sub(pgoff);
    if shift != 0 {
        // The data section's records are 8-byte aligned, their fields too.
        let (offset, size) = (word(&data, 40) as usize, word(&data, 48) as usize);
        for at in (offset..offset + size).step_by(8) {
            let v = word(&data, at);
            if (start..start + len).contains(&v) {
                data[at..at + 8].copy_from_slice(&v.wrapping_add(shift).to_le_bytes());
            }
        }
    }
    data[name_at - 8..name_at].copy_from_slice(&text.to_le_bytes());
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn pstitch(data: &Path, cache_home: &Path, off: bool, threads: &str) -> Output {
    let mut cmd = Command::new(golden_common::binary());
    cmd.current_dir(golden_common::golden_dir().join("c-threads"))
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .env("TZ", "UTC")
        .env("PSTITCH_THREADS", threads)
        .env("XDG_CACHE_HOME", cache_home)
        .env("PSTITCH_CACHE_STATS", "1")
        .args(["script", "-i"])
        .arg(data)
        .args(["--symfs=symfs", "--kallsyms=/proc/kallsyms"]);
    if off {
        cmd.env("PSTITCH_CACHE", "off");
    } else {
        cmd.env_remove("PSTITCH_CACHE");
    }
    cmd.output().expect("runs pstitch")
}

/// The lines of the kernel's frames.
fn kernel_frames(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout).lines().filter(|l| l.ends_with("([kernel.kallsyms])")).map(|l| l.trim().to_string()).collect()
}

/// What the kernel symbol cache said on stderr.
fn said(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().filter_map(|l| l.strip_prefix("pstitch: kallsyms cache: ")).map(|l| l.split_once(": ").map_or(l, |p| p.1).to_string()).collect()
}

/// stderr without the caches' statistics.
fn messages(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).lines().filter(|l| !l.starts_with("pstitch: kallsyms cache: ") && !l.starts_with("pstitch: a2l")).collect::<Vec<_>>().join("\n")
}

#[test]
fn kallsyms_cache_runs_print_what_the_file_gives() {
    let tmp = std::env::temp_dir().join(format!("pstitch-kallsyms-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let text = live_text();
    let this_boot = recording(&tmp, "this-boot.data", text);
    let moved = recording(&tmp, "moved.data", text.wrapping_add(0x20_0000));

    let home = tmp.join("home");
    let off = pstitch(&this_boot, &home, true, "1");
    assert!(off.status.success(), "{}", messages(&off));
    let frames = kernel_frames(&off.stdout);
    assert!(frames.len() > 100, "kernel frames: {}", frames.len());
    assert!(Path::new("/usr/bin/perf").exists(), "host perf is missing: install Debian's linux-perf (.ci/run does)");
    let perf = Command::new("/usr/bin/perf")
        .current_dir(golden_common::golden_dir().join("c-threads"))
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "--no-inline", "-i"])
        .arg(&this_boot)
        .args(["--symfs=symfs", "--kallsyms=/proc/kallsyms"])
        .output()
        .expect("this test runs the host's perf (/usr/bin/perf)");
    assert_eq!(kernel_frames(&perf.stdout), frames, "the kernel's frames as perf prints them from /proc/kallsyms");
    assert!(said(&off).is_empty());

    let cache = home.join("pstitch/kallsyms");
    let same = |out: &Output, what: &str, says: &[&str]| {
        assert!(out.stdout == off.stdout, "{what}: stdout differs from the run without the cache");
        assert_eq!(messages(out), messages(&off), "{what}: stderr");
        assert_eq!(out.status.code(), off.status.code(), "{what}: status");
        assert_eq!(said(out), says, "{what}: what the cache said");
    };
    for threads in ["1", "2"] {
        let _ = std::fs::remove_dir_all(&home);
        let cold = pstitch(&this_boot, &home, false, threads);
        let wrote = said(&cold).get(1).cloned().unwrap_or_default();
        assert!(wrote.starts_with("wrote the kernel's table ("), "cold: {wrote}");
        same(&cold, "cold", &["none yet", &wrote]);
        let mapped = wrote.replacen("wrote", "mapped", 1);
        same(&pstitch(&this_boot, &home, false, threads), "warm", &[&mapped]);

        // Damaged: one byte flipped; then a file cut short. Each is
        // ignored, and replaced by a good one.
        let good = std::fs::read(&cache).unwrap();
        let mut bad = good.clone();
        bad[good.len() / 2] ^= 0x10;
        std::fs::write(&cache, &bad).unwrap();
        same(&pstitch(&this_boot, &home, false, threads), "damaged", &["ignored: checksum mismatch", &wrote]);
        same(&pstitch(&this_boot, &home, false, threads), "after a damaged file", &[&mapped]);
        std::fs::write(&cache, &good[..good.len() - 1000]).unwrap();
        same(&pstitch(&this_boot, &home, false, threads), "truncated", &["ignored: checksum mismatch", &wrote]);
        assert_eq!(std::fs::read(&cache).unwrap(), good, "rewritten whole");

        // Another relocation: the same output as without a cache, and the
        // file left as it is.
        let moved_off = pstitch(&moved, &home, true, threads);
        let moved_on = pstitch(&moved, &home, false, threads);
        assert!(moved_on.stdout == moved_off.stdout, "another relocation: stdout");
        assert_eq!(messages(&moved_on), messages(&moved_off));
        assert_eq!(said(&moved_on), ["ignored: made for other contents (stale key)"]);
        assert_eq!(std::fs::read(&cache).unwrap(), good, "not replaced");
        // Relocated, its kernel frames name the same symbols.
        let symbols = |out: &Output| kernel_frames(&out.stdout).iter().map(|l| l.split_once(' ').map_or("", |p| p.1).to_string()).collect::<Vec<_>>();
        assert_eq!(symbols(&moved_on), symbols(&off));
    }

    // A cache directory that cannot be made: a file where it would be.
    let blocked = tmp.join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let out = pstitch(&this_boot, &blocked, false, "1");
    assert!(out.stdout == off.stdout);
    let s = said(&out);
    assert_eq!(s.len(), 2);
    assert!(s[1].starts_with("not written: "), "{s:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}

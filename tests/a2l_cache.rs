//! The addr2line cache (`src/symbols/a2l/cache.rs`, and the inflated
//! debug sections beside it, `sections_cache.rs`) against perf's own
//! output: golden variants with inline frames and source lines, run with
//! one fresh cache directory cold (the cache is written), warm (read, the
//! sections mapped and nothing inflated), with a stale key, with damaged
//! files and with a cache directory that cannot be written. Every run must
//! print the perf-ref golden `.out`.

mod golden_common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Golden variants whose output has inline frames or source lines.
const VARIANTS: &[(&str, &str)] = &[
    ("c-threads", "default"),
    ("c-threads", "srcline"),
    ("cpp", "default"),
    ("rust", "srcline"),
    ("dwarf-libc", "default"),
    ("dwarf-libc", "srcline"),
    ("dwarf-python", "default"),
];

struct Run {
    stderr: String,
}

/// Runs a variant with `cache_home` as `XDG_CACHE_HOME` and cache stats
/// on; panics unless stdout is the golden `.out`.
fn run(case: &str, variant: &str, cache_home: &Path, threads: &str, what: &str) -> Run {
    let dir = golden_common::golden_dir().join(case);
    let args = std::fs::read_to_string(dir.join(format!("{variant}.args"))).unwrap();
    let expected = std::fs::read(dir.join(format!("{variant}.out"))).unwrap();
    let out = Command::new(golden_common::binary())
        .current_dir(&dir)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .env("TZ", "UTC")
        .env("PSTITCH_THREADS", threads)
        .env_remove("PSTITCH_CACHE")
        .env("XDG_CACHE_HOME", cache_home)
        .env("PSTITCH_CACHE_STATS", "1")
        .args(["script", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"])
        .args(args.split_whitespace())
        .output()
        .expect("runs pstitch");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.stdout == expected, "{case}/{variant} {what} (threads {threads}): stdout differs from perf's; stderr:\n{stderr}");
    Run { stderr }
}

/// A way to damage a cache file's bytes.
type Damage = Box<dyn Fn(&[u8]) -> Vec<u8>>;

/// The summary files (`sections: false`) or the sections files.
fn files_of(home: &Path, sections: bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(home.join("pstitch"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("a2l-") && n.ends_with(".sec") == sections
                }))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn cache_files(home: &Path) -> Vec<PathBuf> {
    files_of(home, false)
}

fn section_files(home: &Path) -> Vec<PathBuf> {
    files_of(home, true)
}

/// The cache file's own checksum (FNV-1a of all before it), so that a
/// damaged file gets past it and the checks behind it are what reject it.
fn resign(body: &[u8]) -> Vec<u8> {
    let mut h = 0xcbf29ce484222325u64;
    for &b in body {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let mut v = body.to_vec();
    v.extend_from_slice(&h.to_le_bytes());
    v
}

/// Where the file size of the key is: after the magic (12), the version
/// (4) and the build-id (u32 length, then the bytes).
fn file_size_at(bytes: &[u8]) -> usize {
    let n = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    20 + n
}

/// The sections files a run says it did `what` with (`mapped`,
/// `inflated`, `ignored`, ...), by name.
fn sections_said(r: &Run, what: &str) -> Vec<String> {
    let mut v: Vec<String> = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("pstitch: a2l sections: "))
        .filter_map(|l| l.split_once(": "))
        .filter(|(_, said)| said.starts_with(what))
        .map(|(path, _)| path.to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn names(files: &[PathBuf]) -> Vec<String> {
    files.iter().map(|f| f.display().to_string()).collect()
}

/// A sections file with its checksum (CRC-32 of all before it) made good
/// again, so that the checks behind it are what reject it.
fn resign_sections(body: &[u8]) -> Vec<u8> {
    let mut v = body.to_vec();
    v.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    v
}

/// Every sections file damaged in each way in turn: each run prints
/// perf's output, ignores every file (saying so), inflates, and writes
/// good files again (the next run maps them and inflates nothing).
fn damaged_sections_files(case: &str, variant: &str, home: &Path, threads: &str) {
    let label = format!("{case}/{variant}");
    let files = section_files(home);
    let good: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let damages: Vec<(&str, Damage)> = vec![
        ("a payload byte flipped", Box::new(|b: &[u8]| {
            let mut v = b.to_vec();
            v[b.len() / 2] ^= 0x20;
            v
        })),
        ("truncated", Box::new(|b: &[u8]| b[..b.len() - 4096].to_vec())),
        ("zero length", Box::new(|_: &[u8]| Vec::new())),
        ("wrong magic (signed)", Box::new(|b: &[u8]| {
            let mut body = b[..b.len() - 4].to_vec();
            body[3] ^= 1;
            resign_sections(&body)
        })),
        ("huge section count (signed)", Box::new(|b: &[u8]| {
            let mut body = b[..b.len() - 4].to_vec();
            let at = file_size_at(&body) + 8;
            let k = u32::from_le_bytes(body[at..at + 4].try_into().unwrap()) as usize;
            let m = at + 4 + 8 * k;
            body[m..m + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            resign_sections(&body)
        })),
        ("stale key (signed)", Box::new(|b: &[u8]| {
            let mut body = b[..b.len() - 4].to_vec();
            let at = file_size_at(&body);
            body[at] ^= 1;
            resign_sections(&body)
        })),
    ];
    for (what, damage) in &damages {
        for (f, g) in files.iter().zip(&good) {
            std::fs::write(f, damage(g)).unwrap();
        }
        let r = run(case, variant, home, threads, what);
        assert_eq!(sections_said(&r, "ignored"), names(&files), "{label}: {what}: not every damaged sections file ignored:\n{}", r.stderr);
        // (With threads, the decoder's reading of the same object may
        // come after the session wrote the file anew, and map that.)
        if threads == "1" {
            assert!(sections_said(&r, "mapped").is_empty(), "{label}: {what}: a damaged sections file mapped:\n{}", r.stderr);
        }
        for (f, g) in files.iter().zip(&good) {
            assert!(std::fs::read(f).unwrap() == *g, "{label}: {what}: {} not written anew", f.display());
        }
    }
    // A directory where the file should be: ignored, and not replaced.
    for f in &files {
        std::fs::remove_file(f).unwrap();
        std::fs::create_dir(f).unwrap();
    }
    let r = run(case, variant, home, threads, "a directory at the sections file's name");
    assert_eq!(sections_said(&r, "ignored"), names(&files), "{label}: {}", r.stderr);
    assert_eq!(sections_said(&r, "inflated"), names(&files), "{label}: {}", r.stderr);
    for f in &files {
        std::fs::remove_dir(f).unwrap();
    }
    // No file (deleted): inflated and written again.
    let r = run(case, variant, home, threads, "sections files deleted");
    assert_eq!(sections_said(&r, "none yet"), names(&files), "{label}: {}", r.stderr);
    assert_eq!(section_files(home), files, "{label}: sections files not written again");
    let r = run(case, variant, home, threads, "sections files written again");
    assert!(sections_said(&r, "inflated").is_empty(), "{label}: {}", r.stderr);
}

fn reads(r: &Run) -> usize {
    r.stderr.lines().filter(|l| l.starts_with("pstitch: a2l cache: ") && l.contains(": read ")).count()
}

fn nothing_read(r: &Run) -> usize {
    r.stderr.lines().filter(|l| l.starts_with("pstitch: a2l cache: ") && l.ends_with(": nothing to read")).count()
}

fn variant_through_every_cache_state(case: &str, variant: &str, threads: &str) {
    let home = std::env::temp_dir().join(format!("pstitch-a2l-cache-it-{}-{case}-{variant}-{threads}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let _tmp = golden_common::TmpFiles::install(&golden_common::golden_dir().join(case)).unwrap();
    let label = format!("{case}/{variant}");

    let cold = run(case, variant, &home, threads, "cold");
    assert!(nothing_read(&cold) > 0, "{label}: cold run read a cache:\n{}", cold.stderr);
    let files = cache_files(&home);
    assert!(!files.is_empty(), "{label}: cold run wrote no cache:\n{}", cold.stderr);

    // Every object these variants read inline frames of keeps its debug
    // sections compressed (Debian's .debug files): a sections file each.
    let sections = section_files(&home);
    assert!(!sections.is_empty(), "{label}: cold run wrote no sections file:\n{}", cold.stderr);
    assert_eq!(sections_said(&cold, "inflated"), names(&sections), "{label}: cold:\n{}", cold.stderr);

    let warm = run(case, variant, &home, threads, "warm");
    assert_eq!(reads(&warm), files.len(), "{label}: warm run did not read every cache file:\n{}", warm.stderr);
    assert_eq!(nothing_read(&warm), 0, "{label}: warm:\n{}", warm.stderr);
    assert_eq!(sections_said(&warm, "mapped"), names(&sections), "{label}: warm run did not map every sections file:\n{}", warm.stderr);
    assert!(sections_said(&warm, "inflated").is_empty(), "{label}: warm run inflated:\n{}", warm.stderr);

    // Without the summaries (deleted), the sections file still serves.
    for f in &files {
        std::fs::remove_file(f).unwrap();
    }
    let r = run(case, variant, &home, threads, "summaries deleted");
    assert_eq!(sections_said(&r, "mapped"), names(&sections), "{label}: summaries deleted:\n{}", r.stderr);
    assert!(sections_said(&r, "inflated").is_empty(), "{label}: summaries deleted:\n{}", r.stderr);
    assert_eq!(cache_files(&home), files, "{label}: summaries not written again");

    damaged_sections_files(case, variant, &home, threads);

    // Stale: another file size in the key (checksum made good again).
    for f in &files {
        let b = std::fs::read(f).unwrap();
        let mut body = b[..b.len() - 8].to_vec();
        let at = file_size_at(&body);
        body[at] ^= 1;
        std::fs::write(f, resign(&body)).unwrap();
    }
    let stale = run(case, variant, &home, threads, "stale key");
    assert_eq!(reads(&stale), 0, "{label}: a stale cache was read:\n{}", stale.stderr);
    assert!(sections_said(&stale, "inflated").is_empty(), "{label}: stale summaries:\n{}", stale.stderr);
    // It was written anew, for the file as it is.
    assert_eq!(reads(&run(case, variant, &home, threads, "after stale")), files.len(), "{label}");

    // Damaged files: truncated, random bytes, huge claims, oversized.
    let good: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let damages: Vec<(&str, Damage)> = vec![
        ("truncated", Box::new(|b: &[u8]| b[..b.len() / 2].to_vec())),
        ("empty", Box::new(|_: &[u8]| Vec::new())),
        ("random bytes", Box::new(|b: &[u8]| {
            let mut x = 0x243f6a8885a308d3u64;
            (0..b.len()).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            }).collect()
        })),
        ("huge unit count", Box::new(|b: &[u8]| {
            let mut body = b[..b.len() - 8].to_vec();
            // After the key: u32 count, u64 per section size, u8 ended.
            let at = file_size_at(&body) + 8;
            let k = u32::from_le_bytes(body[at..at + 4].try_into().unwrap()) as usize;
            let units = at + 4 + 8 * k + 1;
            body[units..units + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            resign(&body)
        })),
        ("huge build-id length", Box::new(|b: &[u8]| {
            let mut body = b[..b.len() - 8].to_vec();
            body[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
            resign(&body)
        })),
    ];
    for (what, damage) in &damages {
        for (f, g) in files.iter().zip(&good) {
            std::fs::write(f, damage(g)).unwrap();
        }
        let r = run(case, variant, &home, threads, what);
        assert_eq!(reads(&r), 0, "{label}: {what} cache read:\n{}", r.stderr);
    }
    // A file far larger than any cache (sparse): not read.
    for f in &files {
        let file = std::fs::File::create(f).unwrap();
        file.set_len(1 << 30).unwrap();
    }
    let r = run(case, variant, &home, threads, "oversized");
    assert_eq!(reads(&r), 0, "{label}: oversized cache read:\n{}", r.stderr);

    // A cache directory that cannot be written: a regular file where the
    // directory should be (root ignores permission bits).
    let blocked = home.join("blocked");
    std::fs::write(&blocked, b"not a directory").unwrap();
    let r = run(case, variant, &blocked, threads, "unwritable cache directory");
    assert!(r.stderr.contains("not written"), "{label}: {}", r.stderr);
    // And one without write permission (effective for users other than root).
    let ro = home.join("ro");
    std::fs::create_dir_all(ro.join("pstitch")).unwrap();
    let mut perm = std::fs::metadata(ro.join("pstitch")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o555);
    std::fs::set_permissions(ro.join("pstitch"), perm).unwrap();
    run(case, variant, &ro, threads, "read-only cache directory");
    let mut perm = std::fs::metadata(ro.join("pstitch")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(ro.join("pstitch"), perm).unwrap();
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn golden_output_through_every_cache_state() {
    for &(case, variant) in VARIANTS {
        variant_through_every_cache_state(case, variant, "1");
    }
    // The decoder thread with a cache (and the cold run's decodes).
    for &(case, variant) in &VARIANTS[..1] {
        variant_through_every_cache_state(case, variant, "2");
    }
    variant_through_every_cache_state("dwarf-libc", "default", "2");
}

#[test]
fn off_means_no_file() {
    let home = std::env::temp_dir().join(format!("pstitch-a2l-cache-off-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let dir = golden_common::golden_dir().join("cpp");
    let expected = std::fs::read(dir.join("default.out")).unwrap();
    let out = Command::new(golden_common::binary())
        .current_dir(&dir)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .env("TZ", "UTC")
        .env("PSTITCH_CACHE", "off")
        .env("XDG_CACHE_HOME", &home)
        .args(["script", "-i", "perf.data", "--symfs=symfs", "--kallsyms=kallsyms"])
        .output()
        .unwrap();
    assert!(out.stdout == expected);
    assert!(!home.join("pstitch").exists(), "PSTITCH_CACHE=off wrote a cache");
    let _ = std::fs::remove_dir_all(&home);
}

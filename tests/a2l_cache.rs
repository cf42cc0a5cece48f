//! The addr2line cache (`src/symbols/a2l/cache.rs`) against perf's own
//! output: golden variants with inline frames and source lines, run with
//! one fresh cache directory cold (the cache is written), warm (read),
//! with a stale key, with damaged files and with a cache directory that
//! cannot be written. Every run must print the perf-ref golden `.out`.

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

fn cache_files(home: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(home.join("pstitch"))
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("a2l-"))).collect())
        .unwrap_or_default();
    v.sort();
    v
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

    let warm = run(case, variant, &home, threads, "warm");
    assert_eq!(reads(&warm), files.len(), "{label}: warm run did not read every cache file:\n{}", warm.stderr);
    assert_eq!(nothing_read(&warm), 0, "{label}: warm:\n{}", warm.stderr);

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

//! Cross-endian input: golden recordings byte-swapped into the form perf
//! record on a big-endian machine writes (`pstitch::perf_data::swap`) must
//! print exactly what the little-endian originals print, for every variant
//! of the case (so the symbolizing variants are covered as soon as they
//! match perf). Compressed recordings are swapped in their decompressed
//! form, since compressed data cannot be swapped in place.
//!
//! perf 7.2 reads these big-endian file-mode copies and prints the same as
//! for the originals (checked by hand with perf-ref, see tests/damaged/NOTES.md);
//! that is what makes the swapper trustworthy, and this test then holds
//! pstitch to it.

use std::path::{Path, PathBuf};
use std::process::Command;

use pstitch::perf_data::header::detect_magic;
use pstitch::perf_data::bytes::Endian;
use pstitch_fixtures::swap;

const CASES: &[&str] = &[
    "c-threads",
    "two-events",
    "system-wide",
    "pipe",
    "compressed",
    "pipe-compressed",
    "deferred",
    "deferred-pipe",
    "deferred-lost",
];

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(case)
}

fn run(dir: &Path, input: &Path, args: &str) -> (Option<i32>, Vec<u8>) {
    let o = Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(dir)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        // --header prints the file's mtime in local time.
        .env("TZ", "UTC")
        .args(["script", "-i"])
        .arg(input)
        .args(["--symfs=symfs", "--kallsyms=kallsyms"])
        .args(args.split_whitespace())
        .output()
        .unwrap();
    (o.status.code(), o.stdout)
}

#[test]
fn big_endian_copies_print_like_the_originals() {
    let tmp = std::env::temp_dir().join(format!("pstitch-be-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // The -k variants' vmlinux files (generated, see tests/fixtures/vmlinux/specs).
    pstitch_fixtures::vmlinux::make_all(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmlinux/specs")).unwrap();
    let mut compared = 0;
    for case in CASES {
        let dir = case_dir(case);
        let le = std::fs::read(dir.join("perf.data")).unwrap();
        let plain = swap::decompress(&le).unwrap();
        let be = swap::swap(&plain).unwrap();
        assert!(be.untouched.is_empty(), "{case}: left unswapped: {:?}", be.untouched);
        assert_eq!(detect_magic(&be.bytes), Some(Endian::Big), "{case}");
        // The swap is its own inverse.
        assert!(swap::swap(&be.bytes).unwrap().bytes == plain, "{case}: swapping twice does not give the input back");
        let be_path = tmp.join(format!("{case}.be.data"));
        let plain_path = tmp.join(format!("{case}.plain.data"));
        std::fs::write(&be_path, &be.bytes).unwrap();
        std::fs::write(&plain_path, &plain).unwrap();
        // ... and the same mtime, which --header prints.
        let mtime = std::fs::metadata(dir.join("perf.data")).unwrap().modified().unwrap();
        for p in [&be_path, &plain_path] {
            std::fs::File::options().write(true).open(p).unwrap().set_modified(mtime).unwrap();
        }

        let mut variants: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".args").map(str::to_string))
            .collect();
        variants.sort();
        for v in variants {
            let args = std::fs::read_to_string(dir.join(format!("{v}.args"))).unwrap();
            // -D shows the file's own bytes and name: not the same for a copy.
            if args.split_whitespace().any(|a| a == "-D" || a.starts_with("--dump")) {
                continue;
            }
            let (code_le, out_le) = run(&dir, Path::new("perf.data"), &args);
            let (code_be, out_be) = run(&dir, &be_path, &args);
            // (Variants of features not there yet fail alike.)
            assert_eq!(code_be, code_le, "{case}/{v}: exit codes differ");
            if plain == le {
                assert!(out_be == out_le, "{case}/{v}: the big-endian copy prints differently");
            } else {
                let (_, out_plain) = run(&dir, &plain_path, &args);
                assert!(out_be == out_plain, "{case}/{v}: the big-endian copy prints differently from the decompressed one");
                // The decompressed form prints like the compressed original,
                // except for the header, which describes the file itself.
                if !args.contains("--header") {
                    assert!(out_plain == out_le, "{case}/{v}: the decompressed copy prints differently");
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 50, "only {compared} variants compared");
}

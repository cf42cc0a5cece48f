//! Crafted hostile inputs (issue 29): files whose sizes, counts and shapes
//! are built to make a reader allocate, print or wait without bound. Each
//! is made by a generator (tests/hostile/gen.rs) and checked two ways:
//!
//! - the output is perf's: perf-ref's output for the same input is kept in
//!   tests/hostile/expected/ (made by tests/hostile/make-expected.sh, never
//!   by pstitch);
//! - the memory is bounded: the peak of what the library allocates for the
//!   crafted input stays within twice that for the undamaged original,
//!   measured by a counting allocator in a child process per measurement
//!   (tests run in parallel threads; a fresh process has a peak of its own).

#[path = "hostile/gen.rs"]
mod generate;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture_symfs() -> PathBuf {
    root().join("tests/fixtures/symfs")
}

fn kallsyms() -> PathBuf {
    root().join("tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms")
}

/// What a path in a case's symfs holds.
enum Entry {
    File(Vec<u8>),
    Fifo,
}

/// One crafted recording: its perf.data, what replaces or adds to the
/// fixtures' symfs, and the `perf script` options.
struct Case {
    name: &'static str,
    perf_data: Vec<u8>,
    symfs: Vec<(&'static str, Entry)>,
    args: &'static str,
}

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(root().join(rel)).expect(rel)
}

fn cases() -> Vec<Case> {
    let rustwork = fixture("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/rustwork");
    let deep = ["/tmp/pstitch-hostile/deep1024", "/tmp/pstitch-hostile/deep1025", "/tmp/pstitch-hostile/deep1100"];
    let c_threads = fixture("tests/golden/c-threads/perf.data");
    let brcntr = fixture("tests/golden/brcntr/perf.data");
    vec![
        // Issue 27: branch counters of 0 and of 1 bit (the capability is a
        // claim: the words are read with whatever width it gives).
        Case {
            name: "brcntr-width-0",
            perf_data: generate::branch_counter_width(&brcntr, "0"),
            symfs: vec![],
            args: "-F tid,ip,sym,brstackinsn,brcntr",
        },
        Case {
            name: "brcntr-width-1",
            perf_data: generate::branch_counter_width(&brcntr, "1"),
            symfs: vec![],
            args: "-F tid,ip,sym,brstackinsn,brcntr",
        },
        // Issue 27: a BUILD_ID entry of zeros, and one of size 0, are no
        // build-id (perf finds the file by its path).
        Case {
            name: "build-id-zeros",
            perf_data: generate::undefined_build_id(&c_threads, "/tmp/pstitch-fixtures/bin/cwork", false),
            symfs: vec![],
            args: "",
        },
        Case {
            name: "build-id-empty",
            perf_data: generate::undefined_build_id(&c_threads, "/usr/lib/x86_64-linux-gnu/libc.so.6", true),
            symfs: vec![],
            args: "",
        },
        // Item 1: `.debug_info` (zlib) claiming 3 GiB in a 1 MB file.
        Case {
            name: "compressed-claim-zlib",
            perf_data: fixture("tests/golden/rust/perf.data"),
            symfs: vec![("tmp/pstitch-fixtures/bin/rustwork", Entry::File(generate::claim_compressed_size(&rustwork, ".debug_info", 3 << 30)))],
            args: "",
        },
        // The same with zstd.
        Case {
            name: "compressed-claim-zstd",
            perf_data: fixture("tests/golden/rust/perf.data"),
            symfs: vec![(
                "tmp/pstitch-fixtures/bin/rustwork",
                Entry::File(generate::claim_compressed_size(&generate::recompress_with_zstd(&rustwork, ".debug_info"), ".debug_info", 3 << 30)),
            )],
            args: "",
        },
        // The zstd copy with its true size: read like the zlib original.
        Case {
            name: "compressed-zstd",
            perf_data: fixture("tests/golden/rust/perf.data"),
            symfs: vec![("tmp/pstitch-fixtures/bin/rustwork", Entry::File(generate::recompress_with_zstd(&rustwork, ".debug_info")))],
            args: "",
        },
        // Item 6: 1,024, 1,025 and 1,100 nested inlined calls.
        Case {
            name: "deep-inline",
            perf_data: generate::samples_in_dsos("deep", &deep, &[(0, generate::DEEP_PC), (1, generate::DEEP_PC), (2, generate::DEEP_PC)]),
            symfs: vec![
                ("tmp/pstitch-hostile/deep1024", Entry::File(generate::deep_inline_elf(1024))),
                ("tmp/pstitch-hostile/deep1025", Entry::File(generate::deep_inline_elf(1025))),
                ("tmp/pstitch-hostile/deep1100", Entry::File(generate::deep_inline_elf(1100))),
            ],
            args: "-F comm,tid,ip,sym,dso",
        },
        // Item 8: a FIFO where the DSO's file would be.
        Case {
            name: "fifo-dso",
            perf_data: generate::samples_in_dsos("fifo", &[FIFO_DSO], &[(0, 0x1010)]),
            symfs: vec![(&FIFO_DSO[1..], Entry::Fifo)],
            args: "-F comm,tid,ip,sym,dso",
        },
        // Issue 25: --call-graph dwarf samples that cannot be unwound. Every
        // stack copy empty (dyn_size 0): no user frames at all.
        Case {
            name: "dwarf-empty-stacks",
            perf_data: generate::empty_user_stacks(&fixture("tests/golden/dwarf-c/perf.data")),
            symfs: vec![],
            args: "--no-inline",
        },
        // The program's CFI hidden from libdw: its frames are unwound by
        // the frame-pointer fallback (the program has no frame pointers).
        Case {
            name: "dwarf-no-cfi",
            perf_data: fixture("tests/golden/dwarf-c/perf.data"),
            symfs: vec![(
                "tmp/pstitch-fixtures/bin/dwarfwork",
                Entry::File(generate::without_cfi(&fixture("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/dwarfwork"))),
            )],
            args: "--no-inline",
        },
        // Issue 27: `insnlen` at every offset of two DSOs of random bytes
        // (the second starting as a 32-bit ELF file), the last 15 offsets
        // of each with less than 16 bytes left: the x86 decoder's lengths
        // are perf's.
        Case {
            name: "insn-random",
            perf_data: generate::samples_in_dsos("insn", &RANDOM_CODE, &(0..2).flat_map(|d| (0..0x2000).map(move |o| (d, o))).collect::<Vec<_>>()),
            symfs: vec![
                (&RANDOM_CODE[0][1..], Entry::File(generate::random_code(0x2000, 27, false))),
                (&RANDOM_CODE[1][1..], Entry::File(generate::random_code(0x2000, 2027, true))),
            ],
            args: "-G -F ip,insnlen",
        },
        // Item 11: tracing data whose kallsyms size runs 4 GiB past its end.
        Case {
            name: "tracing-kallsyms-size",
            perf_data: generate::tracing_kallsyms_size(&fixture("tests/golden/tp-kinds/perf.data"), u32::MAX),
            symfs: vec![],
            args: "",
        },
    ]
}

/// The DSOs of the insn-random case.
const RANDOM_CODE: [&str; 2] = ["/tmp/pstitch-hostile/random-code", "/tmp/pstitch-hostile/random-code32"];

/// The DSO of the fifo-dso case; the test also puts a regular file there
/// outside the symfs, where pstitch (like perf) reads a build-id from.
const FIFO_DSO: &str = "/tmp/pstitch-hostile/fifo-dso";

/// Makes `dir/symfs`: the fixtures' symfs (symbolic links, or copies when
/// `copy`: perf-ref reads it from a chroot) with the case's entries.
fn make_symfs(dir: &Path, entries: &[(&str, Entry)], copy: bool) {
    fn walk(from: &Path, to: &Path, copy: bool) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let (src, dst) = (e.path(), to.join(e.file_name()));
            if src.is_dir() {
                walk(&src, &dst, copy);
            } else if copy {
                std::fs::copy(&src, &dst).unwrap();
            } else {
                std::os::unix::fs::symlink(&src, &dst).unwrap();
            }
        }
    }
    let symfs = dir.join("symfs");
    walk(&fixture_symfs(), &symfs, copy);
    for (rel, entry) in entries {
        let p = symfs.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&p);
        match entry {
            Entry::File(bytes) => std::fs::write(&p, bytes).unwrap(),
            Entry::Fifo => {
                let ok = Command::new("mkfifo").arg(&p).status().expect("mkfifo").success();
                assert!(ok, "mkfifo {}", p.display());
            }
        }
    }
}

fn write_case(case: &Case, dir: &Path, copy: bool) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("perf.data"), &case.perf_data).unwrap();
    std::fs::write(dir.join("args"), case.args).unwrap();
    make_symfs(dir, &case.symfs, copy);
}

/// Writes every case to `$PSTITCH_HOSTILE_DIR/<name>/` for
/// tests/hostile/make-expected.sh (symfs copied, not linked).
#[test]
#[ignore]
fn write_cases() {
    let dir = PathBuf::from(std::env::var("PSTITCH_HOSTILE_DIR").expect("PSTITCH_HOSTILE_DIR"));
    for case in cases() {
        write_case(&case, &dir.join(case.name), true);
    }
}

/// Writes the crafted recordings of this file to `$PSTITCH_FUZZ_SEEDS/`
/// for fuzz/seed-corpus.sh (small forms of each: libFuzzer reads at most
/// its max_len of a seed).
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let dir = PathBuf::from(std::env::var("PSTITCH_FUZZ_SEEDS").expect("PSTITCH_FUZZ_SEEDS"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seeds: Vec<(String, Vec<u8>)> = cases().into_iter().map(|c| (c.name.to_string(), c.perf_data)).collect();
    seeds.push(("tracepoint-arrays".into(), tracepoint_bomb("4096")));
    seeds.push(("compressed-chunks".into(), generate::compressed_chunks(3, 1 << 20, 256 << 10, 1 << 20)));
    seeds.push(("compressed-chunk-over".into(), generate::compressed_chunks(1, 4 << 20, 4 << 20, 1 << 20)));
    let mut kept = std::collections::HashSet::new();
    for (name, bytes) in seeds {
        if kept.insert(bytes.clone()) {
            std::fs::write(dir.join(format!("hostile-{name}.data")), bytes).unwrap();
        }
    }
}

/// Runs pstitch in `dir` as perf-ref was run there; a run that does not end
/// within two minutes has hung (the guard is against a hang, not a speed
/// target: the cases take well under a second).
fn run_pstitch(dir: &Path, args: &str) -> (Vec<u8>, String, Option<i32>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pstitch"))
        .current_dir(dir)
        .env("PERF_BUILDID_DIR", "/nonexistent")
        .args(["script", "-i", "perf.data", "--symfs=symfs"])
        .arg(format!("--kallsyms={}", kallsyms().display()))
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pstitch");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("pstitch hung in {}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (reader.join().unwrap(), err_reader.join().unwrap(), status.code())
}

fn expected(name: &str) -> Option<Vec<u8>> {
    let p = root().join("tests/hostile/expected").join(format!("{name}.out.zst"));
    let f = std::fs::File::open(p).ok()?;
    let mut v = Vec::new();
    zstd::stream::read::Decoder::new(f).unwrap().read_to_end(&mut v).unwrap();
    Some(v)
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  pstitch:  {x}\n  perf-ref: {y}", i + 1);
        }
    }
    format!("{} lines against {}", a.lines().count(), b.lines().count())
}

/// Runs a case, checks its output against perf-ref's; pstitch's stderr.
fn check_case(name: &str) -> String {
    let case = cases().into_iter().find(|c| c.name == name).expect("case");
    let dir = std::env::temp_dir().join(format!("pstitch-hostile-{}", std::process::id())).join(name);
    write_case(&case, &dir, false);
    let want = expected(name).unwrap_or_else(|| panic!("no expected output for {name}: run tests/hostile/make-expected.sh"));
    let (out, err, code) = run_pstitch(&dir, case.args);
    assert_eq!(code, Some(0), "{name}: {err}");
    assert!(out == want, "{name}: output differs from perf-ref's: {}", first_difference(&out, &want));
    let _ = std::fs::remove_dir_all(&dir);
    err
}

#[test]
fn branch_counters_are_read_with_the_width_the_capabilities_claim() {
    check_case("brcntr-width-0");
    check_case("brcntr-width-1");
    // Wider than 16 bits perf would print up to 2^32 letters per event and
    // branch: pstitch refuses the field, and says why.
    let dir = std::env::temp_dir().join(format!("pstitch-hostile-{}", std::process::id())).join("brcntr-width-33");
    let case = Case {
        name: "brcntr-width-33",
        perf_data: generate::branch_counter_width(&fixture("tests/golden/brcntr/perf.data"), "33"),
        symfs: vec![],
        args: "",
    };
    write_case(&case, &dir, false);
    let (out, err, code) = run_pstitch(&dir, "-F tid,ip,sym,brstackinsn,brcntr");
    assert!(out.is_empty() && code != Some(0), "{code:?}");
    assert!(err.contains("'brcntr' field with a branch_counter_width of 33"), "{err}");
    // Without brcntr the counters are not looked at.
    let (out, _, code) = run_pstitch(&dir, "-F tid,ip,sym,brstack");
    assert!(!out.is_empty() && code == Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compressed_sections_claiming_gigabytes_read_as_binutils_reads_them() {
    check_case("compressed-claim-zlib");
    check_case("compressed-claim-zstd");
    check_case("compressed-zstd");
}

#[test]
fn build_ids_of_zeros_or_no_bytes_are_no_build_ids() {
    check_case("build-id-zeros");
    check_case("build-id-empty");
}

/// Every offset of 16 KiB of random bytes: pstitch's x86 lengths are
/// perf-ref's, but where perf's decoder gives a length to bytes that are
/// no valid x86-64 instruction (opcodes invalid in 64-bit mode, malformed
/// VEX/EVEX, APX prefixes, ...: 572 offsets here, 2,083 before the
/// fallback of `insn::undefined_len`), pstitch prints
/// `ilen: 0`, and at two offsets its length differs (`0f 19` with a memory
/// operand, `mov %dr, ..` with one): the man page's COMPATIBILITY. Any
/// other difference fails.
#[test]
fn instruction_lengths_are_perfs_on_random_bytes() {
    let case = cases().into_iter().find(|c| c.name == "insn-random").unwrap();
    let dir = std::env::temp_dir().join(format!("pstitch-hostile-{}", std::process::id())).join(case.name);
    write_case(&case, &dir, false);
    let want = expected(case.name).expect("run tests/hostile/make-expected.sh");
    let (out, err, code) = run_pstitch(&dir, case.args);
    assert_eq!(code, Some(0), "{err}");
    let (want, out) = (String::from_utf8(want).unwrap(), String::from_utf8(out).unwrap());
    assert_eq!(want.lines().count(), 2 * 0x2000);
    assert_eq!(out.lines().count(), want.lines().count());
    let ilen = |l: &str| -> (u64, u32) {
        let (ip, len) = l.trim().split_once(" ilen: ").unwrap();
        (u64::from_str_radix(ip, 16).unwrap(), len.parse().unwrap())
    };
    let (mut undecoded, mut other) = (0, Vec::new());
    for (w, o) in want.lines().zip(out.lines()) {
        let ((ip, perf), (ip2, ours)) = (ilen(w), ilen(o));
        assert_eq!(ip, ip2);
        match (perf, ours) {
            (p, o) if p == o => {}
            (_, 0) => undecoded += 1,
            _ => other.push((ip - generate::MAP_BASE, perf, ours)),
        }
    }
    assert_eq!(undecoded, 572, "offsets perf decodes and pstitch does not");
    assert_eq!(other, [(generate::MAP_STEP + 1858, 2, 4), (generate::MAP_STEP + 4620, 7, 3)]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inline_chains_stop_at_perfs_limit() {
    check_case("deep-inline");
}

#[test]
fn a_fifo_in_the_symfs_is_skipped_without_waiting() {
    // The DSO's own path outside the symfs holds a regular file (pstitch,
    // like perf, reads a missing build-id from the symfs copy then).
    let host = Path::new(FIFO_DSO);
    std::fs::create_dir_all(host.parent().unwrap()).unwrap();
    std::fs::write(host, b"not an ELF file").unwrap();
    check_case("fifo-dso");
}


/// perf prints `--call-graph dwarf` samples it cannot unwind without user
/// frames, silently; pstitch prints the same and says so once, with the
/// counts.
#[test]
fn dwarf_samples_that_cannot_be_unwound_are_said_once() {
    let err = check_case("dwarf-empty-stacks");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("--call-graph dwarf")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("199 of 199 samples have no user frames (199 with an empty user stack copy)"), "{err}");
    let err = check_case("dwarf-no-cfi");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("--call-graph dwarf")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("31 of 199 samples have no user frames (31 taken in a map without an object file"), "{err}");
    assert!(lines[0].contains("unwound through objects without CFI (.eh_frame, .debug_frame), by frame pointers: /tmp/pstitch-fixtures/bin/dwarfwork"), "{err}");
}

#[test]
fn tracing_data_with_a_bad_kallsyms_size_keeps_its_events() {
    check_case("tracing-kallsyms-size");
}

// --- Memory: the peak of the library's allocations, crafted against original.

/// Runs `measure_child` in a fresh process of this test binary for the
/// operation `op` and returns the peak of what it allocated (bytes).
fn peak_of(op: &str) -> usize {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "measure_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("PSTITCH_HOSTILE_MEASURE", op)
        .output()
        .expect("run the measuring child");
    let text = String::from_utf8_lossy(&out.stdout);
    let peak = text.split("PEAK ").nth(1).and_then(|n| n.split_whitespace().next()?.parse().ok());
    peak.unwrap_or_else(|| panic!("{op}: the measuring child failed ({:?}):\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr)))
}

/// `crafted` peaks within twice `original`.
fn within_twice(crafted: &str, original: &str) {
    let (c, o) = (peak_of(crafted), peak_of(original));
    eprintln!("peak: {crafted}: {c} bytes; {original}: {o} bytes");
    assert!(c <= 2 * o, "{crafted} peaked at {c} bytes, over twice the {o} of {original}");
}

/// A recording with a sample of each of two tracepoint events whose arrays
/// claim `arg` bytes (a raw field, `__print_array`, `__print_hex`).
fn tracepoint_bomb(arg: &str) -> Vec<u8> {
    let claim: u64 = arg.parse().unwrap();
    let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
    let raw = format!("name: big\nID: 1\nformat:\n{common}\tfield:char big[{claim}];\toffset:8;\tsize:{claim};\tsigned:0;\n\nprint fmt: \"x\", frob(REC->big)\n");
    let args = "__print_array(REC->vals, CLAIM, 8), __print_hex(REC->vals, CLAIM), ".replace("CLAIM", arg).repeat(150);
    let arr = format!(
        "name: arr\nID: 2\nformat:\n{common}\tfield:unsigned long vals[2];\toffset:8;\tsize:16;\tsigned:0;\n\nprint fmt: \"{}\", {}\n",
        "%s ".repeat(300),
        args.trim_end_matches(", ")
    );
    let td = generate::tracing_data_with(&fixture("tests/golden/tp-kinds/perf.data"), [&raw, &arr]);
    let records: Vec<(u64, Vec<u8>)> = [1u16, 2]
        .iter()
        .map(|&id| {
            let mut r = vec![0x5au8; 4096];
            r[0..2].copy_from_slice(&id.to_le_bytes());
            (u64::from(id), r)
        })
        .collect();
    generate::tracepoint_samples(td, &records)
}

/// One measured operation (in the child).
fn operation(op: &str) {
    let (what, arg) = op.split_once(':').expect("what:arg");
    match what {
        // addr2line's answers for every 16th address of .text of an
        // object file (written by the parent).
        "a2l" => {
            let (lo, hi) = generate::text_range(&std::fs::read(arg).expect("ELF"));
            let mut s = pstitch::Addr2line::open(Path::new(arg)).expect("ELF");
            for a in (lo..hi).step_by(16) {
                std::hint::black_box(s.query(a));
            }
        }
        // Printing a record of each of two tracepoint events whose arrays
        // claim `arg` bytes (a raw field, `__print_array`, `__print_hex`).
        "tracepoint" => {
            let data = tracepoint_bomb(arg);
            let input = pstitch::perf_data::Input::from_bytes(pstitch::perf_data::FileBytes::Owned(data)).expect("perf.data");
            let report = pstitch::script::run(input, pstitch::script::Source::named("tracepoint"), Default::default(), std::io::sink());
            assert_eq!(report.outcome, pstitch::script::Outcome::Printed, "{:?}", report.messages);
        }
        // Printing every sample of a compressed recording whose samples
        // each wait in the queue while 64 MiB of records follow them, in
        // chunks of `arg` MiB (decoded).
        "chunks" => {
            let mib: usize = arg.parse().unwrap();
            let data = generate::compressed_chunks(4, 64 << 20, mib << 20, 256 << 20);
            let input = pstitch::perf_data::Input::from_bytes(pstitch::perf_data::FileBytes::Owned(data)).expect("perf.data");
            let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let report = pstitch::script::run(input, pstitch::script::Source::named("chunks"), Default::default(), SharedOut(out.clone()));
            assert_eq!(report.outcome, pstitch::script::Outcome::Printed, "{:?}", report.messages);
            let out = out.lock().unwrap();
            assert_eq!(out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(), 4, "{}", String::from_utf8_lossy(&out));
        }
        "demangle" => {
            std::hint::black_box(pstitch::demangle(&generate::substitution_bomb(arg.parse().unwrap())));
        }
        _ => panic!("no operation {what}"),
    }
}

#[test]
fn a_chunk_larger_than_the_recordings_buffer_is_an_error() {
    // perf decodes a chunk into a buffer of HEADER_COMPRESSED's mmap_len:
    // a chunk that decodes to more (64 MiB into 16 MiB) is damage.
    let dir = std::env::temp_dir().join(format!("pstitch-hostile-{}", std::process::id())).join("chunk-over-mmap-len");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("perf.data"), generate::compressed_chunks(1, 64 << 20, 64 << 20, 16 << 20)).unwrap();
    let (out, err, code) = run_pstitch(&dir, "");
    assert_ne!(code, Some(0), "{err}");
    // The records decoded before the buffer ran over are kept.
    assert_eq!(out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(), 1, "{}", String::from_utf8_lossy(&out));
    assert!(err.contains("offset 0x") && err.contains("chunk decompresses to more than"), "{err}");
    eprintln!("{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_fixture_tools_refuse_chunk_bombs_instead_of_aborting() {
    // Issue 29 item 14: pstitch-swap --decompress within perf's chunk
    // limit, and within a budget for the whole copy.
    let over_mmap_len = generate::compressed_chunks(1, 64 << 20, 64 << 20, 16 << 20);
    let e = pstitch_fixtures::swap::decompress(&over_mmap_len).unwrap_err().to_string();
    assert!(e.contains("chunk decompresses to more than"), "{e}");
    // pstitch-defer too.
    let e = pstitch_fixtures::defer::convert(&over_mmap_len, &Default::default()).unwrap_err().to_string();
    assert!(e.contains("chunk decompresses to more than"), "{e}");
    let big = generate::compressed_chunks(4, 8 << 20, 8 << 20, 16 << 20);
    let e = pstitch_fixtures::swap::decompress_within(&big, 16 << 20).unwrap_err().to_string();
    assert!(e.contains("would take more than"), "{e}");
    assert!(pstitch_fixtures::swap::decompress_within(&big, 64 << 20).unwrap().len() > 32_000_000);
}

/// Output kept where the test can read it after `script::run` took the writer.
struct SharedOut(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedOut {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn compressed_chunks_are_decoded_in_blocks_not_held_whole() {
    // Each 64 MiB chunk keeps one sample queued to the end: holding the
    // chunks whole would peak at 256 MiB. Decoded in blocks of a few MiB
    // with the queued samples copied out, the peak is that of 1 MiB chunks
    // plus a few blocks.
    let (c, o) = (peak_of("chunks:64"), peak_of("chunks:1"));
    eprintln!("peak: 64 MiB chunks: {c} bytes; 1 MiB chunks: {o} bytes");
    assert!(c <= o + (16 << 20), "64 MiB chunks peaked at {c} bytes; 1 MiB chunks at {o}");
}

#[test]
#[ignore]
fn measure_child() {
    let Ok(op) = std::env::var("PSTITCH_HOSTILE_MEASURE") else { return };
    let base = ALLOC.allocated();
    operation(&op);
    println!("PEAK {}", ALLOC.max_allocated().saturating_sub(base));
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pstitch-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn compressed_sections_claiming_gigabytes_take_what_their_data_takes() {
    let rustwork = fixture("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/rustwork");
    let zstd = generate::recompress_with_zstd(&rustwork, ".debug_info");
    let orig = temp_file("rustwork", &rustwork);
    let zlib_claim = temp_file("rustwork-zlib-claim", &generate::claim_compressed_size(&rustwork, ".debug_info", 3 << 30));
    let zstd_orig = temp_file("rustwork-zstd", &zstd);
    let zstd_claim = temp_file("rustwork-zstd-claim", &generate::claim_compressed_size(&zstd, ".debug_info", 3 << 30));
    within_twice(&format!("a2l:{}", zlib_claim.display()), &format!("a2l:{}", orig.display()));
    within_twice(&format!("a2l:{}", zstd_claim.display()), &format!("a2l:{}", zstd_orig.display()));
}

#[test]
fn tracepoint_arrays_claiming_gigabytes_take_what_their_record_takes() {
    // 4 GiB - 16 and 0x7fffffff against the record's own 4 KiB.
    within_twice("tracepoint:4294967280", "tracepoint:4096");
    within_twice("tracepoint:2147483647", "tracepoint:4096");
}

/// libiberty prints the substitution bombs until memory runs out (then
/// returns NULL); pstitch stops at 64 KiB of text and prints the mangled
/// name (tests/demangle has `__cxa_demangle`'s answer for 32 levels).
#[test]
fn substitution_bombs_fail_at_the_output_limit() {
    use pstitch::demangle_cxx as cxx;
    assert_eq!(generate::substitution_bomb(2), "_Z1f1pIiiES_IS0_S0_E");
    assert_eq!(cxx(&generate::substitution_bomb(2)).as_deref(), Some("f(p<int, int>, p<p<int, int>, p<int, int> >)"));
    // 12 levels print 34,826 bytes; 13 would print about 70,000, more
    // than the limit. 32 levels would print 36 GB, 60 levels 4*10^19.
    assert_eq!(cxx(&generate::substitution_bomb(12)).map(|d| d.len()), Some(34_826));
    for levels in [13, 32, 60] {
        assert!(cxx(&generate::substitution_bomb(levels)).is_none(), "{levels}");
    }
}

#[test]
fn demangling_a_substitution_bomb_takes_what_a_long_name_takes() {
    // 32 nested substitutions (36 GB of text) against 12 (34,826 bytes,
    // the longest this grammar gets within the output limit).
    within_twice("demangle:32", "demangle:12");
}

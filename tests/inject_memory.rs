//! `pstitch inject` streams: its memory is bounded by the samples it holds
//! for their user callchains, not by the size of the file (issue 28).
//!
//! Two recordings are generated that differ only in length (the second has
//! eight times the samples of the first, in the same pattern: the same
//! number held at any time), converted to their deferred form by
//! `pstitch-defer`'s code, and injected, each in a fresh child process of
//! this test binary (tests run in parallel threads; a fresh process has a
//! peak of its own) that reports:
//!
//! - the peak of what the library allocated (a counting allocator), for a
//!   file-mode input (mapped: the file itself is never on the heap) and a
//!   pipe-mode input read from a pipe;
//! - the process's peak resident set (`VmHWM`) for the pipe-mode input,
//!   where every byte read passes through memory the process owns. (A
//!   mapped file's pages count as resident once touched, so for file-mode
//!   input `VmHWM` follows the file size whatever the program keeps: page
//!   cache, not memory the program holds.)
//!
//! Both must stay within a quarter above the short recording's while the
//! long one is eight times its size; and a variant whose deferred records
//! come 3000 records after their samples (more samples held at once) must
//! take more than the prompt one: the memory follows the held samples.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use pstitch::perf_data::Input;
use pstitch::perf_data::attr::sample_type as st;
use pstitch::perf_data::bytes::Endian;
use pstitch::perf_data::record::kind;
use pstitch::perf_data::sample::context;
use pstitch::perf_data::writer::{self, AttrEntry, FileWriter, Put, cpu_clock_attr};
use pstitch_fixtures::defer::{DeferOptions, convert};

#[global_allocator]
static ALLOC: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

const LE: Put = Put(Endian::Little);
const PID: u32 = 4242;
const THREADS: u32 = 4;
const MAP_BASE: u64 = 0x40_0000;
const KERNEL_BASE: u64 = 0xffff_ffff_8100_0000;
/// Most bytes that wait in memory behind held samples (InjectConfig's
/// `max_waiting`): small, so that both recordings go past it.
const LIMIT: usize = 1 << 20;

fn pad8(v: &mut Vec<u8>) {
    v.resize(v.len().div_ceil(8) * 8, 0);
}

/// A frame-pointer recording of one process with `THREADS` threads on two
/// CPUs and `samples` cpu-clock samples, taken in turn by the threads,
/// alternately in kernel mode (`[KERNEL, k, k, USER, u..]`) and in user
/// mode (`[USER, u..]`), a FINISHED_ROUND every 64 samples, after one
/// sample of a thread that exits in the kernel at the start (held to the
/// end: everything after it waits); in file mode or (`pipe`) as a stream.
fn recording(samples: usize, pipe: bool) -> Vec<u8> {
    let attr = cpu_clock_attr(Endian::Little, 1000, st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::CALLCHAIN);

    let mut data = Vec::new();
    let mut time = 1_000_000_000u64;
    let mut records = 0usize;
    // A side-band record with its sample_id (pid, tid, time, cpu).
    let side_band = |data: &mut Vec<u8>, ty: u32, misc: u16, mut body: Vec<u8>, tid: u32, time: u64| {
        LE.u32(&mut body, PID);
        LE.u32(&mut body, tid);
        LE.u64(&mut body, time);
        LE.u32(&mut body, tid % 2);
        LE.u32(&mut body, 0);
        LE.header(data, ty, misc, (8 + body.len()) as u16);
        data.extend(body);
    };
    for t in 0..THREADS {
        let mut body = Vec::new();
        LE.u32(&mut body, PID);
        LE.u32(&mut body, PID + t);
        body.extend_from_slice(b"memwork\0");
        pad8(&mut body);
        side_band(&mut data, kind::COMM, 0, body, PID + t, time);
        time += 1000;
    }
    let mut body = Vec::new();
    LE.u32(&mut body, PID);
    LE.u32(&mut body, PID);
    LE.u64(&mut body, MAP_BASE);
    LE.u64(&mut body, 0x10_0000);
    LE.u64(&mut body, 0);
    LE.u32(&mut body, 8);
    LE.u32(&mut body, 1);
    LE.u64(&mut body, 1000);
    LE.u64(&mut body, 0);
    LE.u32(&mut body, 5); // PROT_READ | PROT_EXEC
    LE.u32(&mut body, 2); // MAP_PRIVATE
    body.extend_from_slice(b"/tmp/pstitch-fixtures/bin/memwork\0");
    pad8(&mut body);
    side_band(&mut data, kind::MMAP2, 2, body, PID, time);
    time += 1000;
    // A thread that exits in the kernel right after its first sample: its
    // user stack never comes, and the sample is held to the end.
    let gone = PID + THREADS;
    let mut body = Vec::new();
    LE.u32(&mut body, PID);
    LE.u32(&mut body, gone);
    body.extend_from_slice(b"memgone\0");
    side_band(&mut data, kind::COMM, 0, body, gone, time);
    time += 1000;
    let mut body = Vec::new();
    for v in [MAP_BASE + 0x1000, u64::from(PID) | u64::from(gone) << 32, time, 0, 1000, 5, context::KERNEL, KERNEL_BASE + 0x100, context::USER, MAP_BASE + 0x1000, MAP_BASE + 0x2000] {
        LE.u64(&mut body, v);
    }
    LE.header(&mut data, kind::SAMPLE, 1, (8 + body.len()) as u16);
    data.extend(body);
    time += 1000;
    let mut body = Vec::new();
    for v in [PID, PID, gone, PID] {
        LE.u32(&mut body, v);
    }
    LE.u64(&mut body, time);
    side_band(&mut data, kind::EXIT, 0, body, gone, time);
    time += 1000;

    for i in 0..samples {
        let tid = PID + (i as u32 % THREADS);
        let kernel = (i / THREADS as usize).is_multiple_of(2);
        let user: Vec<u64> = (0..3 + (i % 5) as u64).map(|d| MAP_BASE + 0x1000 + ((i as u64 * 7 + d * 64) % 0x8000)).collect();
        let mut chain = Vec::new();
        if kernel {
            chain.extend([context::KERNEL, KERNEL_BASE + 0x100 + (i as u64 % 97) * 16, KERNEL_BASE + 0x4000]);
        }
        chain.push(context::USER);
        chain.extend(&user);
        let mut body = Vec::new();
        LE.u64(&mut body, chain[1]);
        LE.u32(&mut body, PID);
        LE.u32(&mut body, tid);
        LE.u64(&mut body, time);
        LE.u32(&mut body, tid % 2);
        LE.u32(&mut body, 0);
        LE.u64(&mut body, 1000);
        LE.u64(&mut body, chain.len() as u64);
        chain.iter().for_each(|&ip| LE.u64(&mut body, ip));
        LE.header(&mut data, kind::SAMPLE, if kernel { 1 } else { 2 }, (8 + body.len()) as u16);
        data.extend(body);
        time += 1000;
        records += 1;
        if records.is_multiple_of(64) {
            LE.header(&mut data, kind::FINISHED_ROUND, 0, 8);
        }
    }
    if pipe {
        let mut stream = writer::pipe_header(Endian::Little);
        stream.extend(writer::attr_record(Endian::Little, &attr, &[1]).expect("one id"));
        stream.extend(data);
        return stream;
    }
    FileWriter { endian: Endian::Little, attrs: vec![AttrEntry { raw: attr, ids: vec![1] }], data, features: vec![] }.to_bytes()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pstitch-inject-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The deferred form of a recording of `samples` samples, in file mode
/// and in pipe mode.
fn deferred(samples: usize, delay_records: usize) -> (PathBuf, PathBuf) {
    let opts = DeferOptions { delay_records, ..Default::default() };
    let paths = [(false, "data"), (true, "pipe")].map(|(pipe, ext)| {
        let (bytes, report) = convert(&recording(samples, pipe), &opts).expect("defer");
        assert!(report.deferred_records > samples / 4, "{report:?}");
        let path = temp(&format!("deferred-{samples}-{delay_records}.{ext}"));
        std::fs::write(&path, &bytes).unwrap();
        path
    });
    let [file, pipe] = paths;
    (file, pipe)
}

/// What a child measured.
#[derive(Debug, Clone, Copy)]
struct Peak {
    heap: usize,
    /// VmHWM, bytes.
    rss: usize,
    held: u64,
}

/// Runs `measure_child` in a fresh process for `op` (`file:PATH` or
/// `pipe:PATH`), with the writing on a thread of its own as `pstitch
/// inject` runs it.
fn peak_of(op: &str) -> Peak {
    peak_threads(op, pstitch::Threads::Parallel)
}

/// [`peak_of`] with the threads given: single-threaded, the peak does not
/// depend on how the threads ran.
fn peak_threads(op: &str, threads: pstitch::Threads) -> Peak {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "measure_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("PSTITCH_INJECT_MEASURE", op)
        .env("PSTITCH_THREADS", if threads == pstitch::Threads::Single { "1" } else { "" })
        .output()
        .expect("run the measuring child");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| text.split(&format!("{name} ")).nth(1).and_then(|n| n.split_whitespace().next()?.parse::<u64>().ok());
    match (field("HEAP"), field("RSS"), field("HELD")) {
        (Some(heap), Some(rss), Some(held)) => Peak { heap: heap as usize, rss: rss as usize, held },
        _ => panic!("{op}: the measuring child failed ({:?}):\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr)),
    }
}

fn vm_hwm() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: usize = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).expect("VmHWM");
    kb * 1024
}

#[test]
#[ignore]
fn measure_child() {
    let Ok(op) = std::env::var("PSTITCH_INJECT_MEASURE") else { return };
    let (mode, path) = op.split_once(':').expect("mode:path");
    let base = ALLOC.allocated();
    let input = match mode {
        // As `pstitch inject` opens it: mapped.
        "file" => pstitch::open(Path::new(path), pstitch::Threads::Parallel).expect("open"),
        "pipe" => Input::from_reader(Box::new(std::fs::File::open(path).expect("open"))).expect("stream"),
        _ => panic!("mode {mode}"),
    };
    let out = Path::new(path).with_extension("out");
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&out).unwrap();
    let config = pstitch::inject::InjectConfig { max_waiting: LIMIT, threads: pstitch::Threads::from_env(), ..Default::default() };
    let report = pstitch::inject::run(input, "measured", config, pstitch::inject::Output::File(file));
    assert!(report.ok, "{:?}", report.messages);
    assert!(report.counts.merged > 0 && report.counts.kernel_only >= 1, "{:?}", report.counts);
    let _ = std::fs::remove_file(&out);
    println!("HEAP {} RSS {} HELD {}", ALLOC.max_allocated().saturating_sub(base), vm_hwm(), report.stitch.held);
    std::io::stdout().flush().unwrap();
}

/// `long` (eight times the size of `short`) peaks within a quarter above it.
fn within_a_quarter(what: &str, short: usize, long: usize) {
    eprintln!("{what}: {short} bytes for the short recording, {long} for the one eight times longer");
    assert!(long <= short + short / 4, "{what} grew with the file: {long} bytes against {short}");
}

#[test]
fn memory_does_not_grow_with_the_file() {
    const SHORT: usize = 25_000;
    let mut by_delay = Vec::new();
    for delay in [0, 3000] {
        let (short_file, short_pipe) = deferred(SHORT, delay);
        let (long_file, long_pipe) = deferred(8 * SHORT, delay);
        let size = |p: &Path| std::fs::metadata(p).unwrap().len() as usize;
        assert!(size(&long_file) > 7 * size(&short_file));
        eprintln!("delay {delay}: {} and {} bytes of deferred recording", size(&short_file), size(&long_file));

        let (short, long) = (peak_of(&format!("file:{}", short_file.display())), peak_of(&format!("file:{}", long_file.display())));
        assert_eq!(long.held - 1, 8 * (short.held - 1), "held samples (and the one of the thread that exits)");
        within_a_quarter(&format!("delay {delay}, file-mode input: heap peak"), short.heap, long.heap);
        // The long recording does not fit the peak: the file is not on the heap.
        assert!(long.heap < size(&long_file) / 2, "heap peak {} for a file of {}", long.heap, size(&long_file));
        // Compared single-threaded: the batches on their way to the
        // writing thread add a little that depends on the timing.
        by_delay.push(peak_threads(&format!("file:{}", long_file.display()), pstitch::Threads::Single).heap);

        let (short, long) = (peak_of(&format!("pipe:{}", short_pipe.display())), peak_of(&format!("pipe:{}", long_pipe.display())));
        within_a_quarter(&format!("delay {delay}, pipe-mode input: heap peak"), short.heap, long.heap);
        within_a_quarter(&format!("delay {delay}, pipe-mode input: peak RSS"), short.rss, long.rss);
        assert!(long.heap < size(&long_pipe) / 2, "heap peak {} for a stream of {}", long.heap, size(&long_pipe));
    }
    // What the memory follows: samples held longer (their deferred records
    // 3000 records later) take more.
    assert!(by_delay[1] > by_delay[0], "heap peaks {by_delay:?} (single-threaded): holding samples longer cost nothing?");
    let _ = std::fs::remove_dir_all(temp("x").parent().unwrap());
}

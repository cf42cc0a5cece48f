//! `--header`, `--header-only` and `-I`/`--show-info`: the perf.data header
//! information perf script prints before (or instead of) the samples.
//!
//! ```text
//! # ========
//! # captured on    : <mtime of the input, ctime(3) in local time>
//! # header version : 1
//! # data offset    : ...                 (0 in pipe mode)
//! # data size      : ...
//! # feat offset    : ...
//! <one block per feature section, in bit order>   (file mode only)
//! # missing features: <names of the clear bits> (file mode only)
//! # ========
//! #
//! ```
//!
//! In pipe mode the features arrive later as HEADER_FEATURE records; perf
//! prints each one as it arrives when `--header` or `-I` is given
//! ([`FeatureStream`], fed by the script tool's `feature` hook).
//!
//! Every feature is first *processed* into an environment
//! (`perf_data::env::Env`, perf's `perf_env`), reading only inside its
//! section as perf 7.2 does, then *printed* from that environment
//! (`perf_event_attr`s by [`attr`]). Features marked "full only" (CPU and
//! NUMA topology, caches, memory topology, hybrid topology, sched domains)
//! print a one-line hint unless `-I` is given.
//!
//! Damaged sections: perf 7.2 refuses a whole file whose feature section
//! fails to process ("incompatible file format"), and in pipe mode skips
//! the failing feature record. pstitch does the latter in both modes: the
//! failing feature prints nothing, a warning says why, the rest is printed.

use std::collections::BTreeSet;
use std::io::Write;

use perf_data::bytes::Endian;
use perf_data::env::Env;
use perf_data::evlist::Evlist;
use perf_data::features::Features;
use perf_data::header::FileHeader;

mod attr;

pub use attr::Pmus;
pub use attr::attr_fprintf;

/// perf 7.2's `HEADER_LAST_FEATURE`: feature bits at or above it are unknown.
pub const LAST_FEATURE: u32 = 35;


/// One entry of perf's `feat_ops` table.
struct FeatOp {
    name: &'static str,
    /// Has a print function (TRACING_DATA and BUILD_ID have none).
    print: bool,
    /// Printed only with `-I`; otherwise a hint line.
    full_only: bool,
}

const fn op(name: &'static str, print: bool, full_only: bool) -> FeatOp {
    FeatOp { name, print, full_only }
}

/// perf 7.2's feature table, indexed by bit (bit 0 is reserved).
const FEAT_OPS: [FeatOp; LAST_FEATURE as usize] = [
    op("", false, false),
    op("TRACING_DATA", false, false),
    op("BUILD_ID", false, false),
    op("HOSTNAME", true, false),
    op("OSRELEASE", true, false),
    op("VERSION", true, false),
    op("ARCH", true, false),
    op("NRCPUS", true, false),
    op("CPUDESC", true, false),
    op("CPUID", true, false),
    op("TOTAL_MEM", true, false),
    op("CMDLINE", true, false),
    op("EVENT_DESC", true, false),
    op("CPU_TOPOLOGY", true, true),
    op("NUMA_TOPOLOGY", true, true),
    op("BRANCH_STACK", true, false),
    op("PMU_MAPPINGS", true, false),
    op("GROUP_DESC", true, false),
    op("AUXTRACE", true, false),
    op("STAT", true, false),
    op("CACHE", true, true),
    op("SAMPLE_TIME", true, false),
    op("MEM_TOPOLOGY", true, true),
    op("CLOCKID", true, false),
    op("DIR_FORMAT", true, false),
    op("BPF_PROG_INFO", true, false),
    op("BPF_BTF", true, false),
    op("COMPRESSED", true, false),
    op("CPU_PMU_CAPS", true, false),
    op("CLOCK_DATA", true, false),
    op("HYBRID_TOPOLOGY", true, true),
    op("PMU_CAPS", true, false),
    op("CPU_DOMAIN_INFO", true, true),
    op("E_MACHINE", true, false),
    op("CLN_SIZE", true, false),
];

/// perf's name for a feature bit (`""` for bit 0 and unknown bits).
pub fn feature_name(bit: u32) -> &'static str {
    FEAT_OPS.get(bit as usize).map_or("", |o| o.name)
}

// ---------------------------------------------------------------------------
// Printing.

/// perf's `cpu_map__snprint`: consecutive CPUs as ranges.
fn cpu_list(cpus: &[i32]) -> String {
    let mut out = String::new();
    let mut start = 0;
    for i in 1..=cpus.len() {
        if i == cpus.len() || cpus[i] != cpus[i - 1] + 1 {
            if !out.is_empty() {
                out.push(',');
            }
            if start == i - 1 {
                out.push_str(&cpus[start].to_string());
            } else {
                out.push_str(&format!("{}-{}", cpus[start], cpus[i - 1]));
            }
            start = i;
        }
    }
    out
}

/// perf's `bitmap_scnprintf` into a 100-byte buffer (at most 99 characters).
fn bitmap_list(set: &[u64], nbits: u64) -> String {
    let test = |b: u64| set.get((b / 64) as usize).is_some_and(|w| w >> (b % 64) & 1 != 0);
    let mut out = String::new();
    let mut b = 0;
    while b < nbits {
        if !test(b) {
            b += 1;
            continue;
        }
        let start = b;
        while b + 1 < nbits && test(b + 1) {
            b += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == b {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{b}"));
        }
        b += 1;
    }
    out.truncate(99);
    out
}

/// perf's `unit_number__scnprintf`.
fn unit_number(mut n: u64) -> String {
    let units = [b'B', b'K', b'M', b'G'];
    let mut i = 0;
    while n / 1024 > 1 && i < 3 {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", units[i] as char)
}

use crate::engine::sys::{Tm, localtime};

/// `ctime(3)`: `"Sat Nov 21 22:50:36 2026\n"`; glibc's `(null)` when the
/// time cannot be converted.
pub fn ctime(secs: i64) -> String {
    match localtime(secs) {
        Some(t) => format_ctime(&t),
        None => "(null)".to_string(),
    }
}

/// asctime(3)'s `"%.3s %.3s%3d %.2d:%.2d:%.2d %d\n"`.
fn format_ctime(t: &Tm) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!("{} {}{:3} {:02}:{:02}:{:02} {}\n", DAYS[t.wday], MONTHS[t.mon], t.mday, t.hour, t.min, t.sec, t.year)
}

/// `strftime("%F %T")` of a local time.
pub fn date_time(secs: i64) -> Option<String> {
    let t = localtime(secs)?;
    Some(format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", t.year, t.mon + 1, t.mday, t.hour, t.min, t.sec))
}

/// perf's `clockid_name`.
fn clockid_name(id: u32) -> &'static str {
    match id {
        1 => "monotonic",
        4 => "monotonic_raw",
        0 => "realtime",
        7 => "boottime",
        11 => "tai",
        _ => "(not found)",
    }
}

/// `%s` of a string perf may not have (glibc prints `(null)`).
fn s_or_null(s: &Option<Vec<u8>>) -> &[u8] {
    s.as_deref().unwrap_or(b"(null)")
}

/// Processes features and prints them from the resulting environment.
struct Printer<'p> {
    env: Env,
    endian: Endian,
    full: bool,
    pmus: &'p Pmus,
}

impl Printer<'_> {
    /// perf's print function for `bit` (which has one).
    fn print(&self, out: &mut Vec<u8>, bit: u32, evlist: &Evlist) {
        let env = &self.env;
        let line = |out: &mut Vec<u8>, label: &str, v: &[u8]| {
            out.extend_from_slice(label.as_bytes());
            out.extend_from_slice(v);
            out.push(b'\n');
        };
        match bit {
            3 => line(out, "# hostname : ", s_or_null(&env.hostname)),
            4 => line(out, "# os release : ", s_or_null(&env.os_release)),
            5 => line(out, "# perf version : ", s_or_null(&env.version)),
            6 => line(out, "# arch : ", s_or_null(&env.arch)),
            7 => {
                let _ = writeln!(out, "# nrcpus online : {}", env.nr_cpus_online);
                let _ = writeln!(out, "# nrcpus avail : {}", env.nr_cpus_avail);
            }
            8 => line(out, "# cpudesc : ", s_or_null(&env.cpu_desc)),
            9 => line(out, "# cpuid : ", s_or_null(&env.cpuid)),
            10 => {
                let _ = writeln!(out, "# total memory : {} kB", env.total_mem);
            }
            11 => {
                out.extend_from_slice(b"# cmdline : ");
                for arg in &env.cmdline {
                    let mut parts = arg.split(|&c| c == b'\'').peekable();
                    while let Some(p) = parts.next() {
                        out.extend_from_slice(p);
                        if parts.peek().is_some() {
                            out.extend_from_slice(b"\\'");
                        }
                    }
                    out.push(b' ');
                }
                out.push(b'\n');
            }
            12 => match &env.events {
                None => out.extend_from_slice(b"# event desc: not available or unable to read\n"),
                Some(events) => {
                    for ev in events {
                        out.extend_from_slice(b"# event : name = ");
                        out.extend_from_slice(&ev.name);
                        out.extend_from_slice(b", ");
                        if !ev.ids.is_empty() {
                            out.extend_from_slice(b", id = {");
                            for (j, id) in ev.ids.iter().enumerate() {
                                if j > 0 {
                                    out.push(b',');
                                }
                                let _ = write!(out, " {id}");
                            }
                            out.extend_from_slice(b" }");
                        }
                        attr_fprintf(out, &ev.attr, self.pmus);
                        out.push(b'\n');
                    }
                }
            },
            13 => self.print_cpu_topology(out),
            14 => {
                for n in &env.numa {
                    let _ = writeln!(out, "# node{} meminfo  : total = {} kB, free = {} kB", n.node, n.mem_total, n.mem_free);
                    let _ = writeln!(out, "# node{} cpu list : {}", n.node, cpu_list(&n.cpus));
                }
            }
            15 => out.extend_from_slice(b"# contains samples with branch stack\n"),
            16 => {
                if env.pmu_mappings.is_empty() {
                    out.extend_from_slice(b"# pmu mappings: not available\n");
                } else {
                    let mut delim: &[u8] = b"# pmu mappings: ";
                    for (t, name) in &env.pmu_mappings {
                        out.extend_from_slice(delim);
                        out.extend_from_slice(name);
                        let _ = write!(out, " = {t}");
                        delim = b", ";
                    }
                    out.push(b'\n');
                }
            }
            17 => {
                let Some(groups) = &env.groups else { return };
                let mut nr = 0u32;
                for (i, g) in groups.iter().enumerate() {
                    let name = evlist.evsels.get(i).map(|e| e.name()).unwrap_or_default();
                    if g.leader == i && g.nr_members > 1 {
                        out.extend_from_slice(b"# group: ");
                        out.extend_from_slice(g.name.as_deref().unwrap_or(b""));
                        let _ = write!(out, "{{{name}");
                        nr = g.nr_members - 1;
                    } else if nr > 0 {
                        let _ = write!(out, ",{name}");
                        nr -= 1;
                        if nr == 0 {
                            out.extend_from_slice(b"}\n");
                        }
                    }
                }
            }
            18 => out.extend_from_slice(b"# contains AUX area data (e.g. instruction trace)\n"),
            19 => out.extend_from_slice(b"# contains stat data\n"),
            20 => {
                out.extend_from_slice(b"# CPU cache info:\n");
                for c in &env.caches {
                    out.extend_from_slice(b"#  ");
                    let _ = write!(out, "L{} ", c.level as i32);
                    pad_right(out, &c.kind, 15);
                    out.push(b' ');
                    pad_left(out, &c.size, 8);
                    out.extend_from_slice(b" [");
                    out.extend_from_slice(&c.map);
                    out.extend_from_slice(b"]\n");
                }
            }
            21 => {
                let usec = |t: u64| format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1000);
                let _ = writeln!(out, "# time of first sample : {}", usec(env.first_sample_time));
                let _ = writeln!(out, "# time of last sample : {}", usec(env.last_sample_time));
                let d = env.last_sample_time.wrapping_sub(env.first_sample_time) as f64 / 1e6;
                let _ = writeln!(out, "# sample duration : {d:10.3} ms");
            }
            22 => {
                let _ = writeln!(
                    out,
                    "# memory nodes (nr {}, block size {:#x}):",
                    env.memory_nodes.len() as i32,
                    env.memory_bsize
                );
                // perf formats the map into a stack buffer it does not
                // clear: an empty map leaves the previous node's text.
                let mut map = String::new();
                for n in &env.memory_nodes {
                    let weight: u64 = (0..n.size)
                        .filter(|&b| n.set.get((b / 64) as usize).is_some_and(|w| w >> (b % 64) & 1 != 0))
                        .count() as u64;
                    let size = unit_number(env.memory_bsize.wrapping_mul(weight));
                    let m = bitmap_list(&n.set, n.size);
                    if !m.is_empty() {
                        map = m;
                    }
                    let _ = writeln!(out, "#  {:3} [{size}]: {map}", n.node);
                }
            }
            23 => {
                let _ = writeln!(out, "# clockid frequency: {} MHz", env.clockid_res_ns.wrapping_mul(1000));
            }
            24 => {
                let _ = writeln!(out, "# directory data version : {}", env.dir_version);
            }
            25 => print_bpf_prog_info(out, env),
            26 => {
                if env.btfs.is_empty() {
                    out.extend_from_slice(b"# btf info empty\n");
                }
                for id in env.btfs.keys() {
                    let _ = writeln!(out, "# btf info of id {id}");
                }
            }
            27 => {
                let kind = if env.comp_type == 1 { "Zstd" } else { "Unknown" };
                let _ = writeln!(
                    out,
                    "# compressed : {kind}, level = {}, ratio = {}",
                    env.comp_level as i32, env.comp_ratio as i32
                );
            }
            28 => print_pmu_caps(out, &env.cpu_pmu_caps, b"cpu"),
            29 => self.print_clock_data(out),
            30 => {
                out.extend_from_slice(b"# hybrid cpu system:\n");
                for (pmu, cpus) in &env.hybrid {
                    out.extend_from_slice(b"# ");
                    out.extend_from_slice(pmu);
                    out.extend_from_slice(b" cpu list : ");
                    out.extend_from_slice(cpus);
                    out.push(b'\n');
                }
            }
            31 => {
                for (name, caps) in &env.pmu_caps {
                    print_pmu_caps(out, caps, name);
                }
                let x86 = matches!(env.arch.as_deref(), Some(b"x86_64" | b"i386" | b"i686" | b"x86"));
                let ibs = env.pmu_mappings.iter().any(|(_, n)| n == b"ibs_op");
                if x86 && ibs {
                    let max_precise = env.cpu_pmu_caps.iter().find_map(|c| c.strip_prefix(b"max_precise="));
                    if max_precise.is_some_and(|v| atoi(v) == 0) {
                        out.extend_from_slice(b"# AMD systems uses ibs_op// PMU for some precise events, e.g.: cycles:p, see the 'perf list' man page for further details.\n");
                    }
                }
            }
            32 => self.print_cpu_domain_info(out),
            33 => {
                let _ = writeln!(out, "# e_machine : {}", env.e_machine);
                let _ = writeln!(out, "#   e_flags : {}", env.e_flags);
            }
            34 => {
                let _ = writeln!(out, "# cacheline size: {}", env.cln_size);
            }
            _ => {}
        }
    }

    fn print_cpu_topology(&self, out: &mut Vec<u8>) {
        let env = &self.env;
        let list = |out: &mut Vec<u8>, label: &str, v: &[Vec<u8>]| {
            for s in v {
                out.extend_from_slice(label.as_bytes());
                out.extend_from_slice(s);
                out.push(b'\n');
            }
        };
        list(out, "# sibling sockets : ", &env.sibling_cores);
        list(out, "# sibling dies    : ", &env.sibling_dies);
        list(out, "# sibling threads : ", &env.sibling_threads);
        let dies = !env.sibling_dies.is_empty();
        match (&env.cpu, dies) {
            (Some(cpus), true) => {
                for (i, c) in cpus.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "# CPU {i}: Core ID {}, Die ID {}, Socket ID {}",
                        c.core_id as i32, c.die_id as i32, c.socket_id as i32
                    );
                }
            }
            (None, true) => out.extend_from_slice(b"# Core ID, Die ID and Socket ID information is not available\n"),
            (Some(cpus), false) => {
                for (i, c) in cpus.iter().enumerate() {
                    let _ = writeln!(out, "# CPU {i}: Core ID {}, Socket ID {}", c.core_id as i32, c.socket_id as i32);
                }
            }
            (None, false) => out.extend_from_slice(b"# Core ID and Socket ID information is not available\n"),
        }
    }

    fn print_clock_data(&self, out: &mut Vec<u8>) {
        let Some(c) = self.env.clock else {
            out.extend_from_slice(b"# reference time disabled\n");
            return;
        };
        let tod_sec = c.tod_ns / 1_000_000_000;
        let tod_usec = (c.tod_ns % 1_000_000_000) / 1000;
        let (clk_sec, clk_nsec) = (c.clockid_ns / 1_000_000_000, c.clockid_ns % 1_000_000_000);
        let tstr = match date_time(tod_sec as i64) {
            Some(d) => format!("{d}.{:06}", tod_usec as i32),
            None => "<error>".to_string(),
        };
        let name = clockid_name(c.clockid);
        let _ = writeln!(out, "# clockid: {name} ({})", c.clockid);
        let _ = writeln!(
            out,
            "# reference time: {tstr} = {}.{:06} (TOD) = {}.{:09} ({name})",
            tod_sec as i64, tod_usec as i32, clk_sec as i64, clk_nsec as i64
        );
    }

    fn print_cpu_domain_info(&self, out: &mut Vec<u8>) {
        let env = &self.env;
        let _ = writeln!(out, "# schedstat version\t: {}", env.schedstat_version);
        let _ = writeln!(out, "# Maximum sched domains\t: {}", env.max_sched_domains);
        for cd in env.cpu_domain.iter().take(env.nr_cpus_avail as usize).flatten() {
            let _ = writeln!(out, "# cpu\t\t: {}", cd.cpu);
            let _ = writeln!(out, "# nr_domains\t: {}", cd.nr_domains);
            for d in cd.domains.iter().take(cd.nr_domains as usize).flatten() {
                let _ = writeln!(out, "# Domain\t\t: {}", d.domain);
                if env.schedstat_version >= 17 {
                    out.extend_from_slice(b"# Domain name      : ");
                    out.extend_from_slice(&d.name);
                    out.push(b'\n');
                }
                out.extend_from_slice(b"# Domain cpu map   : ");
                out.extend_from_slice(&d.cpumask);
                out.extend_from_slice(b"\n# Domain cpu list  : ");
                out.extend_from_slice(&d.cpulist);
                out.push(b'\n');
            }
        }
    }
}

/// perf's `print_bpf_prog_info`: each program by id, one line for a
/// single function, else a line per function (`__bpf_event__print_bpf_prog_info`).
fn print_bpf_prog_info(out: &mut Vec<u8>, env: &Env) {
    if env.bpf_progs.is_empty() {
        out.extend_from_slice(b"# bpf_prog_info empty\n");
    }
    for p in env.bpf_progs.values() {
        let blob = env.btfs.get(&p.btf_id).filter(|_| p.btf_id != 0);
        let btf = blob.and_then(|b| perf_data::bpf::Btf::parse(b, perf_data::bytes::Endian::NATIVE));
        match p.funcs.len() {
            0 => {}
            1 => {
                let f = &p.funcs[0];
                let _ = writeln!(out, "# bpf_prog_info {}: {} addr {:#x} size {}", p.id, p.func_name(0, btf.as_ref()), f.addr, f.len);
            }
            _ => {
                let _ = writeln!(out, "# bpf_prog_info {}:", p.id);
                for (i, f) in p.funcs.iter().enumerate() {
                    let _ = writeln!(out, "# \tsub_prog {i}: {} addr {:#x} size {}", p.func_name(i, btf.as_ref()), f.addr, f.len);
                }
            }
        }
    }
}

fn print_pmu_caps(out: &mut Vec<u8>, caps: &[Vec<u8>], pmu: &[u8]) {
    out.extend_from_slice(b"# ");
    out.extend_from_slice(pmu);
    if caps.is_empty() {
        out.extend_from_slice(b" pmu capabilities: not available\n");
        return;
    }
    out.extend_from_slice(b" pmu capabilities: ");
    for (i, c) in caps.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(c);
    }
    out.push(b'\n');
}

/// C's `atoi`.
fn atoi(s: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(s);
    let t = s.trim_start();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let n: i64 = digits.chars().take_while(char::is_ascii_digit).fold(0i64, |a, c| a.wrapping_mul(10).wrapping_add(c as i64 - '0' as i64));
    if neg { -n } else { n }
}

/// `%-Ns`.
fn pad_right(out: &mut Vec<u8>, s: &[u8], width: usize) {
    out.extend_from_slice(s);
    out.extend(std::iter::repeat_n(b' ', width.saturating_sub(s.len())));
}

/// `%Ns`.
fn pad_left(out: &mut Vec<u8>, s: &[u8], width: usize) {
    out.extend(std::iter::repeat_n(b' ', width.saturating_sub(s.len())));
    out.extend_from_slice(s);
}

// ---------------------------------------------------------------------------
// Entry points.

/// The first lines, common to both modes.
fn print_preamble(out: &mut Vec<u8>, mtime: Option<i64>, data_offset: u64, data_size: u64, feat_offset: u64) {
    out.extend_from_slice(b"# captured on    : ");
    out.extend_from_slice(match mtime {
        Some(t) => ctime(t),
        None => "(null)".to_string(),
    }.as_bytes());
    out.extend_from_slice(b"# header version : 1\n");
    let _ = writeln!(out, "# data offset    : {data_offset}");
    let _ = writeln!(out, "# data size      : {data_size}");
    let _ = writeln!(out, "# feat offset    : {feat_offset}");
}

/// What `--header` prints for a file-mode perf.data: perf's
/// `perf_session__fprintf_info`. `mtime` is the input's modification time
/// (seconds since the epoch). Returns warnings about features that could
/// not be processed (they print nothing).
#[allow(clippy::too_many_arguments)]
pub fn print_file_info(
    out: &mut Vec<u8>,
    mtime: Option<i64>,
    header: &FileHeader,
    features: &Features,
    evlist: &Evlist,
    full: bool,
    pmus: &Pmus,
    dir: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut printer = Printer { env: Env { is_dir: dir, ..Env::default() }, endian: header.endian, full, pmus };
    let set: Vec<u32> = header.feature_bits().filter(|&b| b < LAST_FEATURE).collect();
    // perf processes every section when it opens the file ...
    let mut ok = BTreeSet::new();
    for &bit in &set {
        let Some(data) = features.get(bit) else {
            warnings.push(format!("feature {} ({bit}): section lies outside the file, not printed", feature_name(bit)));
            continue;
        };
        match printer.env.process(bit, data, printer.endian, evlist) {
            Ok(()) => {
                ok.insert(bit);
            }
            Err(e) => warnings.push(format!("feature {} ({bit}): {e}; not printed", feature_name(bit))),
        }
    }
    // ... and prints them afterwards.
    out.extend_from_slice(b"# ========\n");
    let feat_offset = header.data.offset.wrapping_add(header.data.size);
    print_preamble(out, mtime, header.data.offset, header.data.size, feat_offset);
    for &bit in &set {
        let op = &FEAT_OPS[bit as usize];
        if !op.print || !ok.contains(&bit) {
            continue;
        }
        if op.full_only && !printer.full {
            let _ = writeln!(out, "# {} info available, use -I to display", op.name);
        } else {
            printer.print(out, bit, evlist);
        }
    }
    out.extend_from_slice(b"# missing features: ");
    for bit in 1..LAST_FEATURE {
        if !header.has_feature(bit) {
            out.extend_from_slice(FEAT_OPS[bit as usize].name.as_bytes());
            out.push(b' ');
        }
    }
    out.push(b'\n');
    out.extend_from_slice(b"# ========\n#\n");
    warnings
}

/// What `--header` prints first for pipe-mode data (the features follow as
/// they arrive, see [`FeatureStream`]).
pub fn print_pipe_info(out: &mut Vec<u8>, mtime: Option<i64>) {
    out.extend_from_slice(b"# ========\n");
    print_preamble(out, mtime, 0, 0, 0);
    out.extend_from_slice(b"# ========\n#\n");
}

/// Pipe mode: processes and prints HEADER_FEATURE records as they arrive
/// (perf's `perf_event__process_feature` with `show_feat_hdr` set).
pub struct FeatureStream {
    env: Env,
    full: bool,
    pmus: Pmus,
}

impl FeatureStream {
    pub fn new(full: bool, pmus: Pmus) -> FeatureStream {
        FeatureStream { env: Env::default(), full, pmus }
    }

    /// The PMUs type numbers are named by.
    pub fn pmus(&self) -> &Pmus {
        &self.pmus
    }

    /// Processes feature `bit` and appends what perf prints for it. A
    /// feature perf rejects prints nothing; the error is returned.
    pub fn feature(&mut self, out: &mut Vec<u8>, bit: u64, payload: &[u8], endian: Endian, evlist: &Evlist) -> std::result::Result<(), String> {
        if bit == 0 || bit >= LAST_FEATURE as u64 {
            return Err(format!("invalid feature id {bit} in pipe-mode"));
        }
        let bit = bit as u32;
        self.env
            .process(bit, payload, endian, evlist)
            .map_err(|e| format!("feature {} ({bit}): {e}; not printed", feature_name(bit)))?;
        let op = &FEAT_OPS[bit as usize];
        if op.full_only && !self.full {
            let _ = writeln!(out, "# {} info available, use -I to display", op.name);
        } else if op.print {
            let printer = Printer { env: std::mem::take(&mut self.env), endian, full: self.full, pmus: &self.pmus };
            printer.print(out, bit, evlist);
            self.env = printer.env;
        } else {
            // perf prints the bare name, without a newline.
            let _ = write!(out, "# {}", op.name);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Expected texts are what perf-ref (perf 7.2) printed for the same
    //! payloads, spliced into a copy of tests/golden/c-threads/perf.data.
    use super::*;
    use perf_data::attr::Attr;
    use perf_data::env::parse_cpu_list;
    use perf_data::header::Section;

    type PResult<T> = std::result::Result<T, String>;

    fn pstr(s: &[u8]) -> Vec<u8> {
        let n = (s.len() + 1).div_ceil(64) * 64;
        let mut v = (n as u32).to_le_bytes().to_vec();
        v.extend_from_slice(s);
        v.resize(4 + n, 0);
        v
    }

    fn u32s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn u64s(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// An env that went through NRCPUS (2 CPUs), as most files have.
    fn env2() -> Env {
        Env { nr_cpus_avail: 2, nr_cpus_online: 2, ..Env::default() }
    }

    /// Processes then prints one feature (with `-I`).
    fn run(env: &mut Env, bit: u32, payload: &[u8]) -> PResult<String> {
        let evlist = Evlist::default();
        env.process(bit, payload, Endian::Little, &evlist)?;
        let pmus = Pmus::none();
        let p = Printer { env: std::mem::take(env), endian: Endian::Little, full: true, pmus: &pmus };
        let mut out = Vec::new();
        p.print(&mut out, bit, &evlist);
        *env = p.env;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn raw_attr(type_: u32, size: u32, config: u64, period: u64, st: u64, rf: u64, flags: u64) -> Vec<u8> {
        let mut a = vec![0u8; 128];
        a[0..4].copy_from_slice(&type_.to_le_bytes());
        a[4..8].copy_from_slice(&size.to_le_bytes());
        for (off, v) in [(8, config), (16, period), (24, st), (32, rf), (40, flags)] {
            a[off..off + 8].copy_from_slice(&v.to_le_bytes());
        }
        a
    }

    fn dump(raw: &[u8], pmus: &Pmus) -> String {
        let mut out = Vec::new();
        attr_fprintf(&mut out, &Attr::decode(raw, Endian::Little), pmus);
        String::from_utf8(out).unwrap()
    }

    const CPU_CLOCK: &str = ", type = 1 (PERF_TYPE_SOFTWARE), size = 128, config = 0 (PERF_COUNT_SW_CPU_CLOCK), \
        { sample_period, sample_freq } = 1000, sample_type = IP|TID|TIME|CALLCHAIN|PERIOD, read_format = ID|LOST, \
        disabled = 1, inherit = 1, mmap = 1, comm = 1, freq = 1, enable_on_exec = 1, task = 1, sample_id_all = 1, \
        exclude_guest = 1, mmap2 = 1, comm_exec = 1, ksymbol = 1, bpf_event = 1";

    #[test]
    fn attr_dump_of_a_recorded_event() {
        // c-threads' cpu-clock, as perf 6.1 wrote it.
        let raw = raw_attr(1, 128, 0, 1000, 0x127, 0x14, 0x6194_3703);
        assert_eq!(dump(&raw, &Pmus::none()), CPU_CLOCK);
        // The deferred recordings add the two defer bits at the end.
        let raw = raw_attr(1, 128, 0, 1000, 0x127, 0x14, 0x6194_3703 | 3 << 38);
        assert_eq!(dump(&raw, &Pmus::none()), format!("{CPU_CLOCK}, defer_callchain = 1, defer_output = 1"));
    }

    #[test]
    fn attr_dump_big_endian_equals_little_endian() {
        let le = raw_attr(1, 128, 2, 1, 0x10127, 0x1f, 0x6194_3703 | 1 << 38);
        let mut be = le.clone();
        for (off, len) in [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8)] {
            be[off..off + len].reverse();
        }
        for b in &mut be[40..48] {
            *b = b.reverse_bits();
        }
        assert_eq!(Attr::decode(&le, Endian::Little), Attr::decode(&be, Endian::Big));
    }

    #[test]
    fn attr_dump_quirks() {
        let none = Pmus::none();
        // A mask with no known bit keeps the previous value in perf's buffer.
        let mut raw = raw_attr(1, 128, 5, 0, 1 << 17, 0, 2 << 15);
        raw[92..96].copy_from_slice(&(-3i32).to_le_bytes());
        raw[108..110].copy_from_slice(&7u16.to_le_bytes());
        assert_eq!(
            dump(&raw, &none),
            ", type = 1 (PERF_TYPE_SOFTWARE), size = 128, config = 0x5 (PERF_COUNT_SW_PAGE_FAULTS_MIN), \
             sample_type = 0x5 (PERF_COUNT_SW_PAGE_FAULTS_MIN), precise_ip = 2, clockid = -3, sample_max_stack = 7"
        );
        // Fields past attr.size are not printed.
        let mut raw = raw_attr(1, 64, 0, 1000, 1, 0, 1);
        raw[72..80].copy_from_slice(&3u64.to_le_bytes());
        raw[80..88].copy_from_slice(&0xffu64.to_le_bytes());
        assert_eq!(
            dump(&raw, &none),
            ", type = 1 (PERF_TYPE_SOFTWARE), size = 64, config = 0 (PERF_COUNT_SW_CPU_CLOCK), \
             { sample_period, sample_freq } = 1000, sample_type = IP, disabled = 1"
        );
        let mut raw = raw_attr(1, 116, 0, 0, 0, 0, 3);
        raw[112..116].copy_from_slice(&1u32.to_le_bytes());
        raw[116..120].copy_from_slice(&1u32.to_le_bytes());
        assert!(dump(&raw, &none).ends_with("inherit = 1, aux_sample_size = 1"));
        raw[4..8].copy_from_slice(&120u32.to_le_bytes());
        assert!(dump(&raw, &none).ends_with("aux_sample_size = 1, aux_start_paused = 1"));
    }

    #[test]
    fn attr_dump_type_and_config_names() {
        let pmus = Pmus::from_list(&[(1, "software"), (4, "cpu"), (8, "uprobe"), (9, "power")]);
        let cases: [(u32, u64, &str); 8] = [
            (2, 0x123, ", type = 2 (PERF_TYPE_TRACEPOINT), size = 128, config = 0x123"),
            (
                3,
                0x10000,
                ", type = 3 (PERF_TYPE_HW_CACHE), size = 128, config = 0x10000 \
                 (PERF_COUNT_HW_CACHE_RESULT_MISS | PERF_COUNT_HW_CACHE_OP_READ | PERF_COUNT_HW_CACHE_L1D)",
            ),
            (3, 0x10009, ", type = 3 (PERF_TYPE_HW_CACHE), size = 128, config = 0x10009"),
            (4, 0x1c4, ", type = 4 (cpu), size = 128, config = 0x1c4"),
            (9, 0, ", type = 9 (power), size = 128, config = 0"),
            (
                0,
                8 << 32 | 1,
                ", type = 0 (PERF_TYPE_HARDWARE), size = 128, config = 0x800000001 (uprobe/PERF_COUNT_HW_INSTRUCTIONS/)",
            ),
            (0, 10, ", type = 0 (PERF_TYPE_HARDWARE), size = 128, config = 0xa"),
            (u32::MAX, 0, ", type = 4294967295, size = 128, config = 0"),
        ];
        for (t, config, want) in cases {
            assert_eq!(dump(&raw_attr(t, 128, config, 0, 0, 0, 0), &pmus), want, "type {t} config {config:#x}");
        }
        assert_eq!(dump(&raw_attr(4, 128, 0x1c4, 0, 0, 0, 0), &Pmus::none()), ", type = 4 (PERF_TYPE_RAW), size = 128, config = 0x1c4");
        // Every other field, on a breakpoint.
        let mut raw = raw_attr(5, 128, 0, 0, 0, 0x1f, 0);
        for (off, v) in [(48, 5u32), (52, 3), (88, 8192), (104, 4096), (112, 64), (116, 7)] {
            raw[off..off + 4].copy_from_slice(&v.to_le_bytes());
        }
        for (off, v) in [(56, 0x1000u64), (64, 8), (96, 1), (120, 42)] {
            raw[off..off + 8].copy_from_slice(&v.to_le_bytes());
        }
        assert_eq!(
            dump(&raw, &pmus),
            ", type = 5 (PERF_TYPE_BREAKPOINT), size = 128, config = 0, \
             read_format = TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|GROUP|LOST, { wakeup_events, wakeup_watermark } = 5, \
             bp_type = 3, { bp_addr, config1 } = 0x1000, { bp_len, config2 } = 0x8, sample_stack_user = 8192, \
             sample_regs_intr = 0x1, aux_watermark = 4096, aux_sample_size = 64, sig_data = 42, aux_start_paused = 1, \
             aux_pause = 1, aux_resume = 1"
        );
    }

    fn event_desc(sz: u32, events: &[(Vec<u8>, &[u8], &[u64])]) -> Vec<u8> {
        let mut out = u32s(&[events.len() as u32, sz]);
        for (attr, name, ids) in events {
            let mut a = attr.clone();
            a.resize(sz as usize, 0);
            out.extend(a);
            out.extend(u32s(&[ids.len() as u32]));
            out.extend(pstr(name));
            out.extend(u64s(ids));
        }
        out
    }

    #[test]
    fn event_desc_lines_and_its_checks() {
        let attr = raw_attr(1, 128, 0, 1000, 0x127, 0x14, 0x6194_3703);
        let ok = event_desc(128, &[(attr.clone(), b"cpu-clock", &[313, 314])]);
        assert_eq!(run(&mut env2(), 12, &ok).unwrap(), format!("# event : name = cpu-clock, , id = {{ 313, 314 }}{CPU_CLOCK}\n"));
        let no_ids = event_desc(128, &[(raw_attr(1, 0, 0, 0, 0, 0, 3), b"x", &[])]);
        assert_eq!(
            run(&mut env2(), 12, &no_ids).unwrap(),
            "# event : name = x, , type = 1 (PERF_TYPE_SOFTWARE), size = 64, config = 0 (PERF_COUNT_SW_CPU_CLOCK), \
             disabled = 1, inherit = 1\n"
        );
        // Unreadable descriptions are not an error for perf, just "not available".
        let bad = [
            event_desc(60, &[(attr.clone(), b"x", &[])]),
            event_desc(128, &[(raw_attr(1, 136, 0, 0, 0, 0, 0), b"x", &[])]),
            event_desc(128, &[(raw_attr(1, 128, 0, 0, 0, 0x20, 0), b"x", &[])]),
            event_desc(128, &[(raw_attr(1, 128, 0, 0, 1 << 25, 0, 0), b"x", &[])]),
            event_desc(128, &[(raw_attr(1, 128, 0, 0, 0, 0, 1 << 40), b"x", &[])]),
            ok[..ok.len() - 1].to_vec(),
        ];
        for b in bad {
            assert_eq!(run(&mut env2(), 12, &b).unwrap(), "# event desc: not available or unable to read\n");
        }
    }

    #[test]
    fn simple_feature_printers() {
        let mut env = env2();
        assert_eq!(run(&mut env, 3, &pstr(b"vm")).unwrap(), "# hostname : vm\n");
        assert_eq!(run(&mut env, 7, &u32s(&[2, 2])).unwrap(), "# nrcpus online : 2\n# nrcpus avail : 2\n");
        assert_eq!(run(&mut env, 10, &u64s(&[24684092])).unwrap(), "# total memory : 24684092 kB\n");
        let cmdline = cat(&[&u32s(&[3]), &pstr(b"perf"), &pstr(b"it's 'q'"), &pstr(b"")]);
        assert_eq!(run(&mut env, 11, &cmdline).unwrap(), "# cmdline : perf it\\'s \\'q\\'  \n");
        assert_eq!(
            run(&mut env, 21, &u64s(&[1000, 2_500_999_999])).unwrap(),
            "# time of first sample : 0.000001\n# time of last sample : 2.500999\n# sample duration :   2500.999 ms\n"
        );
        let pmus = cat(&[&u32s(&[2, 1]), &pstr(b"software"), &u32s(&[9]), &pstr(b"power")]);
        assert_eq!(run(&mut env, 16, &pmus).unwrap(), "# pmu mappings: software = 1, power = 9\n");
        assert_eq!(run(&mut env, 16, &u32s(&[0])).unwrap(), "# pmu mappings: not available\n");
        assert_eq!(run(&mut env, 27, &u32s(&[1, 1, 1, 6, 528384])).unwrap(), "# compressed : Zstd, level = 1, ratio = 6\n");
        assert_eq!(run(&mut env, 27, &u32s(&[1, 2, 3, 4, 8192])).unwrap(), "# compressed : Unknown, level = 3, ratio = 4\n");
        assert_eq!(run(&mut env, 23, &u64s(&[1])).unwrap(), "# clockid frequency: 1000 MHz\n");
        assert_eq!(run(&mut env, 33, &u32s(&[62, 7])).unwrap(), "# e_machine : 62\n#   e_flags : 7\n");
        assert_eq!(run(&mut env, 34, &u64s(&[0x1234_5678_0000_0040])).unwrap(), "# cacheline size: 64\n");
        assert_eq!(run(&mut env, 25, &u32s(&[0])).unwrap(), "# bpf_prog_info empty\n");
        assert_eq!(run(&mut env, 26, &u32s(&[0])).unwrap(), "# btf info empty\n");
        let btf = cat(&[&u32s(&[2, 9, 1]), b"x", &u32s(&[3, 0])]);
        assert_eq!(run(&mut env, 26, &btf).unwrap(), "# btf info of id 3\n# btf info of id 9\n");
        let caps = cat(&[&u32s(&[2]), &pstr(b"branches"), &pstr(b"32"), &pstr(b"max_precise"), &pstr(b"3")]);
        assert_eq!(run(&mut env, 28, &caps).unwrap(), "# cpu pmu capabilities: branches=32, max_precise=3\n");
        assert_eq!(run(&mut env, 28, &u32s(&[0])).unwrap(), "# cpu pmu capabilities: not available\n");
        let caps = cat(&[&u32s(&[2, 1]), &pstr(b"a"), &pstr(b"b"), &pstr(b"pmuA"), &u32s(&[0]), &pstr(b"pmuB")]);
        assert_eq!(
            run(&mut env, 31, &caps).unwrap(),
            "# pmuA pmu capabilities: a=b\n# pmuB pmu capabilities: not available\n"
        );
        let hybrid = cat(&[&u32s(&[1]), &pstr(b"cpu_core"), &pstr(b"0-3")]);
        assert_eq!(run(&mut env, 30, &hybrid).unwrap(), "# hybrid cpu system:\n# cpu_core cpu list : 0-3\n");
        assert_eq!(run(&mut env, 15, b"").unwrap(), "# contains samples with branch stack\n");
        assert_eq!(run(&mut env, 19, b"").unwrap(), "# contains stat data\n");
        assert_eq!(run(&mut env, 18, &u64s(&[0])).unwrap(), "# contains AUX area data (e.g. instruction trace)\n");
        let clock = cat(&[&u32s(&[1, 9]), &u64s(&[5, 7])]);
        let text = run(&mut env, 29, &clock).unwrap();
        assert!(text.starts_with("# clockid: (not found) (9)\n# reference time: "), "{text}");
        assert!(text.ends_with(".000000 = 0.000000 (TOD) = 0.000000007 ((not found))\n"), "{text}");
    }

    #[test]
    fn topology_printers() {
        // c-threads' CPU_TOPOLOGY: 1 socket list, 2 thread lists, ids, dies.
        let topo = cat(&[
            &u32s(&[1]),
            &pstr(b"0-1"),
            &u32s(&[2]),
            &pstr(b"0"),
            &pstr(b"1"),
            &u32s(&[0, 0, 1, 0]),
            &u32s(&[1]),
            &pstr(b"0-1"),
            &u32s(&[0, 0]),
        ]);
        assert_eq!(
            run(&mut env2(), 13, &topo).unwrap(),
            "# sibling sockets : 0-1\n# sibling dies    : 0-1\n# sibling threads : 0\n# sibling threads : 1\n\
             # CPU 0: Core ID 0, Die ID 0, Socket ID 0\n# CPU 1: Core ID 1, Die ID 0, Socket ID 0\n"
        );
        let old = cat(&[&u32s(&[1]), &pstr(b"0-1"), &u32s(&[2]), &pstr(b"0"), &pstr(b"1")]);
        assert_eq!(
            run(&mut env2(), 13, &old).unwrap(),
            "# sibling sockets : 0-1\n# sibling threads : 0\n# sibling threads : 1\n\
             # Core ID and Socket ID information is not available\n"
        );
        let no_dies = cat(&[&old, &u32s(&[0, 0, 1, 0, 0, 5, 6])]);
        assert!(run(&mut env2(), 13, &no_dies).unwrap().ends_with("# CPU 0: Core ID 0, Socket ID 0\n# CPU 1: Core ID 1, Socket ID 0\n"));
        assert!(run(&mut Env::default(), 13, &topo).unwrap_err().contains("missing HEADER_NRCPUS"));

        let numa = cat(&[&u32s(&[1, 0]), &u64s(&[4286676, 3335604]), &pstr(b"0-1")]);
        assert_eq!(
            run(&mut env2(), 14, &numa).unwrap(),
            "# node0 meminfo  : total = 4286676 kB, free = 3335604 kB\n# node0 cpu list : 0-1\n"
        );

        let mut words = [0u64; 4];
        for b in (0..24).chain(32..200) {
            words[b / 64] |= 1 << (b % 64);
        }
        let mem = cat(&[&u64s(&[1, 0x800_0000, 1, 0, 200, 200]), &u64s(&words)]);
        assert_eq!(
            run(&mut env2(), 22, &mem).unwrap(),
            "# memory nodes (nr 1, block size 0x8000000):\n#    0 [24G]: 0-23,32-199\n"
        );
        // A long map is cut at 99 characters; an empty one repeats the last.
        let odd = [0xAAAA_AAAA_AAAA_AAAAu64; 4];
        let mem = cat(&[&u64s(&[1, 0x800_0000, 2, 3, 999, 256]), &u64s(&odd), &u64s(&[1, 0, 0])]);
        let map = "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,41,43,45,47,49,51,53,55,57,59,61,63,65,67,69";
        assert_eq!(
            run(&mut env2(), 22, &mem).unwrap(),
            format!("# memory nodes (nr 2, block size 0x8000000):\n#    3 [16G]: {map}\n#    1 [0B]: {map}\n")
        );

        let cache = cat(&[
            &u32s(&[1, 2, 1, 64, 64, 12]),
            &pstr(b"VeryLongCacheTypeName"),
            &pstr(b"123456789K"),
            &pstr(b"0-1"),
            &u32s(&[3, 64, 64, 12]),
            &pstr(b""),
            &pstr(b""),
            &pstr(b""),
        ]);
        assert_eq!(
            run(&mut env2(), 20, &cache).unwrap(),
            "# CPU cache info:\n#  L1 VeryLongCacheTypeName 123456789K [0-1]\n#  L3                          []\n"
        );

        let mut dom = u32s(&[17, 2]);
        for cpu in [1, 0] {
            dom.extend(u32s(&[cpu, 2]));
            for (d, name) in [(0, b"SMT"), (1, b"PKG")] {
                dom.extend(cat(&[&u32s(&[d]), &pstr(name), &pstr(b"00000003"), &pstr(b"0-1")]));
            }
        }
        let one_cpu = "# nr_domains\t: 2\n\
                       # Domain\t\t: 0\n# Domain name      : SMT\n# Domain cpu map   : 00000003\n# Domain cpu list  : 0-1\n\
                       # Domain\t\t: 1\n# Domain name      : PKG\n# Domain cpu map   : 00000003\n# Domain cpu list  : 0-1\n";
        assert_eq!(
            run(&mut env2(), 32, &dom).unwrap(),
            format!("# schedstat version\t: 17\n# Maximum sched domains\t: 2\n# cpu\t\t: 0\n{one_cpu}# cpu\t\t: 1\n{one_cpu}")
        );
        // perf 6.1's pipe streams end with an empty feature 32.
        assert!(run(&mut env2(), 32, b"").unwrap_err().contains("section too small (0) for 2 CPUs"));
    }

    #[test]
    fn cpu_lists_like_libperf() {
        let cases: [(&[u8], Option<&str>); 17] = [
            (b"0-1", Some("0-1")),
            (b"1,0", Some("0-1")),
            (b"0-1,7", Some("0-1,7")),
            (b"1", Some("1")),
            (b"", Some("-1")),
            (b"010", Some("8")),
            (b"0x3", Some("3")),
            (b"1\n", Some("1")),
            (b"0,,1", Some("0")),
            (b"0-1,", Some("0-1")),
            (b"32766", Some("32766")),
            (b"32767", None),
            (b"0,1,1", None),
            (b"0-1,0", None),
            (b"1-0", None),
            (b" 1", None),
            (b"abc", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_cpu_list(s).map(|c| cpu_list(&c)).as_deref(), want, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn group_desc() {
        let mut evlist = Evlist::default();
        for name in ["cpu-clock", "page-faults/period=1/"] {
            evlist.push(perf_data::evlist::Evsel { attr: Default::default(), name: Some(name.into()), ids: vec![] });
        }
        let print = |payload: &[u8]| -> PResult<String> {
            let mut env = env2();
            env.process(17, payload, Endian::Little, &evlist)?;
            let pmus = Pmus::none();
            let p = Printer { env, endian: Endian::Little, full: false, pmus: &pmus };
            let mut out = Vec::new();
            p.print(&mut out, 17, &evlist);
            Ok(String::from_utf8(out).unwrap())
        };
        let anon = cat(&[&u32s(&[1]), &pstr(b"{anon_group}"), &u32s(&[0, 2])]);
        assert_eq!(print(&anon).unwrap(), "# group: {cpu-clock,page-faults/period=1/}\n");
        let named = cat(&[&u32s(&[1]), &pstr(b"mygrp"), &u32s(&[0, 2])]);
        assert_eq!(print(&named).unwrap(), "# group: mygrp{cpu-clock,page-faults/period=1/}\n");
        let too_many = cat(&[&u32s(&[1]), &pstr(b"mygrp"), &u32s(&[0, 3])]);
        assert_eq!(print(&too_many).unwrap_err(), "invalid group desc");
    }

    #[test]
    fn strings_are_bounded_like_perf() {
        let mut env = env2();
        // No NUL: perf cuts the last byte.
        assert_eq!(run(&mut env, 3, &cat(&[&u32s(&[4]), b"abcd"])).unwrap(), "# hostname : abc\n");
        assert!(run(&mut env, 3, &u32s(&[0])).unwrap_err().contains("invalid length 0"));
        assert_eq!(
            run(&mut env, 3, &cat(&[&u32s(&[1000]), b"vm\0\0"])).unwrap_err(),
            "do_read_string: invalid length 1000 (remaining 4)"
        );
        assert!(run(&mut env, 7, &u32s(&[2, 3])).unwrap_err().contains("nr_cpus_online (3) > nr_cpus_avail (2)"));
        assert!(run(&mut env, 27, &u32s(&[1, 1, 1, 6, 100])).unwrap_err().contains("comp_mmap_len (100)"));
        assert!(run(&mut env, 24, &u64s(&[1])).is_err());
    }

    /// Every feature, fed every prefix of a valid payload and some garbage,
    /// fails or prints without panicking.
    #[test]
    fn damaged_payloads_do_not_panic() {
        let valid: Vec<(u32, Vec<u8>)> = vec![
            (3, pstr(b"vm")),
            (7, u32s(&[2, 2])),
            (11, cat(&[&u32s(&[2]), &pstr(b"a"), &pstr(b"b")])),
            (12, event_desc(128, &[(raw_attr(1, 128, 0, 1, 1, 0, 1), b"x", &[1, 2])])),
            (13, cat(&[&u32s(&[1]), &pstr(b"0-1"), &u32s(&[1]), &pstr(b"0"), &u32s(&[0, 0, 1, 0, 1]), &pstr(b"0-1"), &u32s(&[0, 0])])),
            (14, cat(&[&u32s(&[1, 0]), &u64s(&[1, 2]), &pstr(b"0-1")])),
            (16, cat(&[&u32s(&[1, 1]), &pstr(b"software")])),
            (17, cat(&[&u32s(&[1]), &pstr(b"g"), &u32s(&[0, 1])])),
            (18, u64s(&[1, 2, 3])),
            (20, cat(&[&u32s(&[1, 1, 1, 64, 64, 12]), &pstr(b"Data"), &pstr(b"48K"), &pstr(b"0")])),
            (21, u64s(&[1, 2])),
            (22, u64s(&[1, 4096, 1, 0, 64, 64, 0xff])),
            (25, cat(&[&u32s(&[1, 8, 4]), &u64s(&[0]), &[0; 12]])),
            (26, cat(&[&u32s(&[1, 1, 2]), b"xy"])),
            (27, u32s(&[1, 1, 1, 1, 4096])),
            (28, cat(&[&u32s(&[1]), &pstr(b"a"), &pstr(b"b")])),
            (29, cat(&[&u32s(&[1, 1]), &u64s(&[1, 2])])),
            (30, cat(&[&u32s(&[1]), &pstr(b"cpu_core"), &pstr(b"0-1")])),
            (31, cat(&[&u32s(&[1, 1]), &pstr(b"a"), &pstr(b"b"), &pstr(b"p")])),
            (32, cat(&[&u32s(&[17, 1, 0, 1, 0]), &pstr(b"SMT"), &pstr(b"3"), &pstr(b"0-1"), &u32s(&[1, 0])])),
            (33, u32s(&[62, 0])),
            (34, u32s(&[64])),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (bit, payload) in &valid {
            // (GROUP_DESC needs events to group; there are none here.)
            assert!(*bit == 17 || run(&mut env2(), *bit, payload).is_ok(), "valid payload of feature {bit} rejected");
            for n in 0..payload.len() {
                let _ = run(&mut env2(), *bit, &payload[..n]);
            }
            for _ in 0..64 {
                let mut p = payload.clone();
                let i = (rand() as usize) % p.len();
                p[i] = rand() as u8;
                let _ = run(&mut env2(), *bit, &p);
                let i = (rand() as usize) % p.len() / 4 * 4;
                if i + 4 <= p.len() {
                    p[i..i + 4].copy_from_slice(&u32::MAX.to_le_bytes());
                }
                let _ = run(&mut env2(), *bit, &p);
            }
        }
        for bit in 0..64 {
            let _ = run(&mut env2(), bit, &[0xff; 40]);
            let _ = run(&mut env2(), bit, &[]);
        }
    }

    fn file_header(bits: &[u32], data: Section) -> FileHeader {
        let mut features = [0u64; 4];
        for &b in bits {
            features[(b / 64) as usize] |= 1 << (b % 64);
        }
        FileHeader {
            endian: Endian::Little,
            header_size: 104,
            attr_size: 144,
            attrs: Section { offset: 104, size: 144 },
            data,
            event_types: Section::default(),
            features,
        }
    }

    #[test]
    fn file_mode_layout_and_a_bad_section() {
        let mut features = Features::new(Endian::Little);
        features.insert(2, Vec::new());
        features.insert(3, cat(&[&u32s(&[1000]), b"vm\0\0"]));
        features.insert(7, u32s(&[2, 2]));
        features.insert(13, cat(&[&u32s(&[1]), &pstr(b"0-1"), &u32s(&[1]), &pstr(b"0")]));
        features.insert(40, b"unknown".to_vec());
        let header = file_header(&[2, 3, 7, 13, 21, 40], Section { offset: 264, size: 36664 });
        let mut out = Vec::new();
        let warnings = print_file_info(&mut out, None, &header, &features, &Evlist::default(), false, &Pmus::none(), false);
        let want = "# ========\n\
            # captured on    : (null)\
            # header version : 1\n\
            # data offset    : 264\n\
            # data size      : 36664\n\
            # feat offset    : 36928\n\
            # nrcpus online : 2\n\
            # nrcpus avail : 2\n\
            # CPU_TOPOLOGY info available, use -I to display\n\
            # missing features: TRACING_DATA OSRELEASE VERSION ARCH CPUDESC CPUID TOTAL_MEM CMDLINE EVENT_DESC \
            NUMA_TOPOLOGY BRANCH_STACK PMU_MAPPINGS GROUP_DESC AUXTRACE STAT CACHE MEM_TOPOLOGY CLOCKID DIR_FORMAT \
            BPF_PROG_INFO BPF_BTF COMPRESSED CPU_PMU_CAPS CLOCK_DATA HYBRID_TOPOLOGY PMU_CAPS CPU_DOMAIN_INFO \
            E_MACHINE CLN_SIZE \n\
            # ========\n#\n";
        assert_eq!(String::from_utf8(out).unwrap(), want);
        // HOSTNAME is damaged, SAMPLE_TIME lies outside the file: perf
        // refuses such a file; pstitch prints the rest and says why.
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("HOSTNAME (3): do_read_string: invalid length 1000"));
        assert!(warnings[1].contains("SAMPLE_TIME (21): section lies outside the file"));

        let mut out = Vec::new();
        print_file_info(&mut out, None, &header, &features, &Evlist::default(), true, &Pmus::none(), false);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("# sibling threads : 0\n# Core ID and Socket ID information is not available\n# missing"));
    }

    #[test]
    fn pipe_mode_stream() {
        let mut out = Vec::new();
        print_pipe_info(&mut out, None);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# ========\n# captured on    : (null)# header version : 1\n# data offset    : 0\n# data size      : 0\n\
             # feat offset    : 0\n# ========\n#\n"
        );
        let evlist = Evlist::default();
        let mut s = FeatureStream::new(false, Pmus::none());
        let mut out = Vec::new();
        s.feature(&mut out, 3, &pstr(b"vm"), Endian::Little, &evlist).unwrap();
        s.feature(&mut out, 7, &u32s(&[2, 2]), Endian::Little, &evlist).unwrap();
        s.feature(&mut out, 14, &cat(&[&u32s(&[1, 0]), &u64s(&[1, 2]), &pstr(b"0-1")]), Endian::Little, &evlist).unwrap();
        assert!(s.feature(&mut out, 32, b"", Endian::Little, &evlist).is_err());
        assert!(s.feature(&mut out, 35, b"", Endian::Little, &evlist).is_err());
        assert!(s.feature(&mut out, 0, b"", Endian::Little, &evlist).is_err());
        s.feature(&mut out, 2, b"", Endian::Little, &evlist).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# hostname : vm\n# nrcpus online : 2\n# nrcpus avail : 2\n# NUMA_TOPOLOGY info available, use -I to display\n# BUILD_ID"
        );
        let mut s = FeatureStream::new(true, Pmus::none());
        let mut out = Vec::new();
        s.feature(&mut out, 7, &u32s(&[2, 2]), Endian::Little, &evlist).unwrap();
        s.feature(&mut out, 14, &cat(&[&u32s(&[1, 0]), &u64s(&[1, 2]), &pstr(b"0-1")]), Endian::Little, &evlist).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("# node0 meminfo  : total = 1 kB, free = 2 kB\n# node0 cpu list : 0-1\n"));
    }

    #[test]
    fn time_formats() {
        let t = Tm { year: 2026, mon: 0, mday: 1, hour: 0, min: 0, sec: 0, wday: 4 };
        assert_eq!(format_ctime(&t), "Thu Jan  1 00:00:00 2026\n");
        let t = Tm { year: 2026, mon: 10, mday: 21, hour: 22, min: 50, sec: 36, wday: 6 };
        assert_eq!(format_ctime(&t), "Sat Nov 21 22:50:36 2026\n");
        assert_eq!(unit_number(24 << 30), "24G");
        assert_eq!(unit_number(2047), "2047B");
        assert_eq!(unit_number(2048), "2K");
        assert_eq!(unit_number(1 << 50), "1048576G");
    }
}

//! `perf_event_attr` as perf's `perf_event_attr__fprintf` prints it
//! (`--header` event lines), with the PMU names perf finds in sysfs.

use std::collections::BTreeMap;
use std::io::Write;

use perf_data::attr::{ATTR_SIZE_MAX, ATTR_SIZE_VER0, Attr};
use perf_data::bytes::alt_hex as hex;

/// The PMUs perf knows by type number (`perf_pmus__find_by_type`), read from
/// sysfs like perf does. perf adds a placeholder core PMU `cpu` (type 4)
/// when sysfs has no core PMU.
#[derive(Debug, Clone, Default)]
pub struct Pmus {
    by_type: BTreeMap<u32, String>,
}

impl Pmus {
    /// No PMU at all.
    #[cfg(test)]
    pub fn none() -> Pmus {
        Pmus::default()
    }

    /// The PMUs of this machine (`/sys/bus/event_source/devices/*/type`).
    pub fn system() -> Pmus {
        let mut by_type = BTreeMap::new();
        if let Ok(dir) = std::fs::read_dir("/sys/bus/event_source/devices") {
            for e in dir.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Ok(t) = std::fs::read_to_string(e.path().join("type")) else { continue };
                if let Ok(t) = t.trim().parse::<u32>() {
                    by_type.entry(t).or_insert(name);
                }
            }
        }
        by_type.entry(4).or_insert_with(|| "cpu".to_string());
        Pmus { by_type }
    }

    /// A fixed set (tests).
    #[cfg(test)]
    pub fn from_list(list: &[(u32, &str)]) -> Pmus {
        Pmus { by_type: list.iter().map(|&(t, n)| (t, n.to_string())).collect() }
    }

    fn find(&self, t: u32) -> Option<&str> {
        self.by_type.get(&t).map(String::as_str)
    }
}

const HW_IDS: [&str; 10] = [
    "PERF_COUNT_HW_CPU_CYCLES",
    "PERF_COUNT_HW_INSTRUCTIONS",
    "PERF_COUNT_HW_CACHE_REFERENCES",
    "PERF_COUNT_HW_CACHE_MISSES",
    "PERF_COUNT_HW_BRANCH_INSTRUCTIONS",
    "PERF_COUNT_HW_BRANCH_MISSES",
    "PERF_COUNT_HW_BUS_CYCLES",
    "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
    "PERF_COUNT_HW_STALLED_CYCLES_BACKEND",
    "PERF_COUNT_HW_REF_CPU_CYCLES",
];

const SW_IDS: [&str; 12] = [
    "PERF_COUNT_SW_CPU_CLOCK",
    "PERF_COUNT_SW_TASK_CLOCK",
    "PERF_COUNT_SW_PAGE_FAULTS",
    "PERF_COUNT_SW_CONTEXT_SWITCHES",
    "PERF_COUNT_SW_CPU_MIGRATIONS",
    "PERF_COUNT_SW_PAGE_FAULTS_MIN",
    "PERF_COUNT_SW_PAGE_FAULTS_MAJ",
    "PERF_COUNT_SW_ALIGNMENT_FAULTS",
    "PERF_COUNT_SW_EMULATION_FAULTS",
    "PERF_COUNT_SW_DUMMY",
    "PERF_COUNT_SW_BPF_OUTPUT",
    "PERF_COUNT_SW_CGROUP_SWITCHES",
];

const HW_CACHE_IDS: [&str; 7] = [
    "PERF_COUNT_HW_CACHE_L1D",
    "PERF_COUNT_HW_CACHE_L1I",
    "PERF_COUNT_HW_CACHE_LL",
    "PERF_COUNT_HW_CACHE_DTLB",
    "PERF_COUNT_HW_CACHE_ITLB",
    "PERF_COUNT_HW_CACHE_BPU",
    "PERF_COUNT_HW_CACHE_NODE",
];

const HW_CACHE_OPS: [&str; 3] = ["PERF_COUNT_HW_CACHE_OP_READ", "PERF_COUNT_HW_CACHE_OP_WRITE", "PERF_COUNT_HW_CACHE_OP_PREFETCH"];

const HW_CACHE_RESULTS: [&str; 2] = ["PERF_COUNT_HW_CACHE_RESULT_ACCESS", "PERF_COUNT_HW_CACHE_RESULT_MISS"];

/// `sample_type` names, in perf's printing order (TRANSACTION has none).
const SAMPLE_TYPE_BITS: [(u32, &str); 24] = [
    (0, "IP"),
    (1, "TID"),
    (2, "TIME"),
    (3, "ADDR"),
    (4, "READ"),
    (5, "CALLCHAIN"),
    (6, "ID"),
    (7, "CPU"),
    (8, "PERIOD"),
    (9, "STREAM_ID"),
    (10, "RAW"),
    (11, "BRANCH_STACK"),
    (12, "REGS_USER"),
    (13, "STACK_USER"),
    (16, "IDENTIFIER"),
    (18, "REGS_INTR"),
    (15, "DATA_SRC"),
    (14, "WEIGHT"),
    (19, "PHYS_ADDR"),
    (20, "AUX"),
    (21, "CGROUP"),
    (22, "DATA_PAGE_SIZE"),
    (23, "CODE_PAGE_SIZE"),
    (24, "WEIGHT_STRUCT"),
];

const BRANCH_TYPE_NAMES: [&str; 20] = [
    "USER", "KERNEL", "HV", "ANY", "ANY_CALL", "ANY_RETURN", "IND_CALL", "ABORT_TX", "IN_TX", "NO_TX", "COND",
    "CALL_STACK", "IND_JUMP", "CALL", "NO_FLAGS", "NO_CYCLES", "TYPE_SAVE", "HW_INDEX", "PRIV_SAVE", "COUNTERS",
];

const READ_FORMAT_NAMES: [&str; 5] = ["TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING", "ID", "GROUP", "LOST"];

/// The flag bitfields in perf's printing order: (name, first bit, width).
const FLAG_FIELDS: [(&str, u32, u32); 39] = [
    ("disabled", 0, 1),
    ("inherit", 1, 1),
    ("pinned", 2, 1),
    ("exclusive", 3, 1),
    ("exclude_user", 4, 1),
    ("exclude_kernel", 5, 1),
    ("exclude_hv", 6, 1),
    ("exclude_idle", 7, 1),
    ("mmap", 8, 1),
    ("comm", 9, 1),
    ("freq", 10, 1),
    ("inherit_stat", 11, 1),
    ("enable_on_exec", 12, 1),
    ("task", 13, 1),
    ("watermark", 14, 1),
    ("precise_ip", 15, 2),
    ("mmap_data", 17, 1),
    ("sample_id_all", 18, 1),
    ("exclude_host", 19, 1),
    ("exclude_guest", 20, 1),
    ("exclude_callchain_kernel", 21, 1),
    ("exclude_callchain_user", 22, 1),
    ("mmap2", 23, 1),
    ("comm_exec", 24, 1),
    ("use_clockid", 25, 1),
    ("context_switch", 26, 1),
    ("write_backward", 27, 1),
    ("namespaces", 28, 1),
    ("ksymbol", 29, 1),
    ("bpf_event", 30, 1),
    ("aux_output", 31, 1),
    ("cgroup", 32, 1),
    ("text_poke", 33, 1),
    ("build_id", 34, 1),
    ("inherit_thread", 35, 1),
    ("remove_on_exec", 36, 1),
    ("sigtrap", 37, 1),
    ("defer_callchain", 38, 1),
    ("defer_output", 39, 1),
];

/// perf_event_attr__fprintf with perf's `, name = value` printer. Like
/// perf, it formats every value into one buffer, and a bit mask with no
/// known bit set leaves the previous value there.
pub fn attr_fprintf(out: &mut Vec<u8>, a: &Attr, pmus: &Pmus) {
    let attr_size = (if a.size == 0 { ATTR_SIZE_VER0 } else { a.size as usize }).min(ATTR_SIZE_MAX);
    let mut buf: String;
    let emit = |out: &mut Vec<u8>, name: &str, buf: &str| {
        let _ = write!(out, ", {name} = {buf}");
    };
    let fits = |off: usize, len: usize| attr_size >= off + len;
    let bits = |buf: &mut String, v: u64, names: &mut dyn Iterator<Item = (u32, &'static str)>| {
        let mut first = true;
        let mut s = String::new();
        for (bit, name) in names {
            if v & (1u64 << bit) != 0 {
                if !first {
                    s.push('|');
                }
                s.push_str(name);
                first = false;
            }
        }
        if !first {
            *buf = s;
        }
    };

    let mut pmu = pmus.find(a.type_);
    if pmu.is_none() && fits(8, 8) && (a.type_ == 0 || a.type_ == 3) && a.config >> 32 != 0 {
        pmu = pmus.find((a.config >> 32) as u32);
    }

    // type (always)
    let type_name = match a.type_ {
        0 => Some("PERF_TYPE_HARDWARE"),
        1 => Some("PERF_TYPE_SOFTWARE"),
        2 => Some("PERF_TYPE_TRACEPOINT"),
        3 => Some("PERF_TYPE_HW_CACHE"),
        4 => Some(pmu.unwrap_or("PERF_TYPE_RAW")),
        5 => Some("PERF_TYPE_BREAKPOINT"),
        _ => pmu,
    };
    buf = match type_name {
        Some(n) => format!("{} ({n})", a.type_),
        None => a.type_.to_string(),
    };
    emit(out, "type", &buf);
    if a.size != 0 {
        buf = a.size.to_string();
        emit(out, "size", &buf);
    }
    // config (always)
    let c = a.config;
    buf = match a.type_ {
        0 => match (HW_IDS.get((c & 0xffff_ffff) as usize), pmu) {
            (None, None) => hex(c),
            (None, Some(p)) => format!("{} ({p}/config={}/)", hex(c), hex(c)),
            (Some(n), None) => format!("{} ({n})", hex(c)),
            (Some(n), Some(p)) => format!("{} ({p}/{n}/)", hex(c)),
        },
        1 => match SW_IDS.get(c as usize) {
            Some(n) => format!("{} ({n})", hex(c)),
            None => hex(c),
        },
        3 => {
            let names = (
                HW_CACHE_IDS.get((c & 0xff) as usize),
                HW_CACHE_OPS.get(((c >> 8) & 0xff) as usize),
                HW_CACHE_RESULTS.get(((c >> 16) & 0xff) as usize),
            );
            match (names, pmu) {
                ((Some(cache), Some(op), Some(res)), None) => format!("{} ({res} | {op} | {cache})", hex(c)),
                ((Some(cache), Some(op), Some(res)), Some(p)) => format!("{} ({p}/{res} | {op} | {cache}/)", hex(c)),
                (_, None) => hex(c),
                (_, Some(p)) => format!("{} ({p}/config={}/)", hex(c), hex(c)),
            }
        }
        // Tracepoint names come from tracefs and event aliases from the
        // PMU's event tables; the reference perf sees neither.
        _ => hex(c),
    };
    emit(out, "config", &buf);
    if fits(16, 8) && a.sample_period != 0 {
        buf = a.sample_period.to_string();
        emit(out, "{ sample_period, sample_freq }", &buf);
    }
    if fits(24, 8) && a.sample_type != 0 {
        bits(&mut buf, a.sample_type, &mut SAMPLE_TYPE_BITS.iter().copied());
        emit(out, "sample_type", &buf);
    }
    if fits(32, 8) && a.read_format != 0 {
        bits(&mut buf, a.read_format, &mut READ_FORMAT_NAMES.iter().enumerate().map(|(i, n)| (i as u32, *n)));
        emit(out, "read_format", &buf);
    }
    if attr_size >= 48 {
        for (name, shift, width) in FLAG_FIELDS {
            let v = (a.flags >> shift) & ((1 << width) - 1);
            if v != 0 {
                buf = v.to_string();
                emit(out, name, &buf);
            }
        }
    }
    let unsigned = |out: &mut Vec<u8>, buf: &mut String, name: &str, off: usize, len: usize, v: u64| {
        if fits(off, len) && v != 0 {
            *buf = v.to_string();
            emit(out, name, buf);
        }
    };
    unsigned(out, &mut buf, "{ wakeup_events, wakeup_watermark }", 48, 4, a.wakeup_events as u64);
    unsigned(out, &mut buf, "bp_type", 52, 4, a.bp_type as u64);
    if fits(56, 8) && a.config1 != 0 {
        buf = hex(a.config1);
        emit(out, "{ bp_addr, config1 }", &buf);
    }
    if fits(64, 8) && a.config2 != 0 {
        buf = hex(a.config2);
        emit(out, "{ bp_len, config2 }", &buf);
    }
    if fits(72, 8) && a.branch_sample_type != 0 {
        bits(&mut buf, a.branch_sample_type, &mut BRANCH_TYPE_NAMES.iter().enumerate().map(|(i, n)| (i as u32, *n)));
        emit(out, "branch_sample_type", &buf);
    }
    if fits(80, 8) && a.sample_regs_user != 0 {
        buf = hex(a.sample_regs_user);
        emit(out, "sample_regs_user", &buf);
    }
    let unsigned = |out: &mut Vec<u8>, buf: &mut String, name: &str, off: usize, len: usize, v: u64| {
        if fits(off, len) && v != 0 {
            *buf = v.to_string();
            emit(out, name, buf);
        }
    };
    unsigned(out, &mut buf, "sample_stack_user", 88, 4, a.sample_stack_user as u64);
    if fits(92, 4) && a.clockid != 0 {
        buf = a.clockid.to_string();
        emit(out, "clockid", &buf);
    }
    if fits(96, 8) && a.sample_regs_intr != 0 {
        buf = hex(a.sample_regs_intr);
        emit(out, "sample_regs_intr", &buf);
    }
    unsigned(out, &mut buf, "aux_watermark", 104, 4, a.aux_watermark as u64);
    unsigned(out, &mut buf, "sample_max_stack", 108, 2, a.sample_max_stack as u64);
    unsigned(out, &mut buf, "aux_sample_size", 112, 4, a.aux_sample_size as u64);
    unsigned(out, &mut buf, "sig_data", 120, 8, a.sig_data);
    if attr_size >= 120 {
        for (i, name) in ["aux_start_paused", "aux_pause", "aux_resume"].into_iter().enumerate() {
            if a.aux_action >> i & 1 != 0 {
                emit(out, name, "1");
            }
        }
    }
}

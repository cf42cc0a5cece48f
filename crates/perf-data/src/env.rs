//! What perf.data's header features say, decoded as perf 7.2 decodes them
//! into its `perf_env`: hostname, CPU and NUMA topology, caches, event
//! descriptions, groups, sched domains, ... Each section is read only
//! inside itself; a section perf would refuse gives perf's message.

use std::collections::BTreeMap;

use crate::attr::{ATTR_SIZE_VER0, Attr};
use crate::bpf::BpfProg;
use crate::bytes::{Endian, until_nul};
use crate::evlist::Evlist;

/// perf's `MAX_NR_CPUS`.
pub const MAX_NR_CPUS: u32 = 4096;
/// perf 7.2's bound on HEADER_CPU_DOMAIN_INFO's `max_sched_domains`.
pub const MAX_SCHED_DOMAINS: u32 = 64;

// Reading a section the way perf 7.2 does: never past the section's end.

/// A cursor over one feature section (perf's `struct feat_fd`).
struct Ff<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
}

/// A section perf refuses, with its message.
pub type PResult<T> = std::result::Result<T, String>;

impl<'a> Ff<'a> {
    fn new(data: &'a [u8], endian: Endian) -> Ff<'a> {
        Ff { data, pos: 0, endian }
    }

    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn bytes(&mut self, n: usize) -> PResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(format!("read of {n} bytes past the end of the section ({} left)", self.remaining()));
        }
        let b = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    fn u32(&mut self) -> PResult<u32> {
        let b = self.bytes(4)?;
        Ok(self.endian.u32(b.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> PResult<u64> {
        let b = self.bytes(8)?;
        Ok(self.endian.u64(b.try_into().expect("8 bytes")))
    }

    /// perf's `do_read_string`: `u32 len` then `len` bytes, NUL-padded.
    fn string(&mut self) -> PResult<Vec<u8>> {
        let len = self.u32()?;
        if len == 0 || len as usize > self.remaining() {
            return Err(format!("do_read_string: invalid length {len} (remaining {})", self.remaining()));
        }
        // perf terminates the string at its last byte, whatever is there.
        let b = self.bytes(len as usize)?;
        Ok(until_nul(&b[..b.len() - 1]).to_vec())
    }

    /// A count of entries of at least `min_size` bytes each, checked against
    /// what is left of the section (perf's "section too small" checks).
    fn count_fits(&self, what: &str, nr: u64, min_size: u64, noun: &str) -> PResult<()> {
        if nr.saturating_mul(min_size) > self.remaining() as u64 {
            return Err(format!("Invalid HEADER_{what}: section too small ({}) for {nr} {noun}", self.data.len()));
        }
        Ok(())
    }
}

/// `PERF_ALIGN(strlen(s) + 1, 64) + sizeof(u32)`: the size perf assumes a
/// string took in the file.
fn string_size(s: &[u8]) -> usize {
    (s.len() + 1).div_ceil(64) * 64 + 4
}

// ---------------------------------------------------------------------------
// The environment the features are processed into.

#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTopo {
    pub core_id: u32,
    pub socket_id: u32,
    pub die_id: u32,
}

#[derive(Debug, Clone)]
pub struct NumaNode {
    pub node: u32,
    pub mem_total: u64,
    pub mem_free: u64,
    /// Sorted; `[-1]` for perf's "any CPU" map (an empty list).
    pub cpus: Vec<i32>,
}

#[derive(Debug, Clone)]
pub struct Cache {
    pub level: u32,
    pub kind: Vec<u8>,
    pub size: Vec<u8>,
    pub map: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct MemNode {
    pub node: u64,
    /// Bits in `set`.
    pub size: u64,
    pub set: Vec<u64>,
}

#[derive(Debug, Clone, Copy)]
pub struct ClockData {
    pub clockid: u32,
    pub tod_ns: u64,
    pub clockid_ns: u64,
}

#[derive(Debug, Clone)]
pub struct Domain {
    pub domain: u32,
    pub name: Vec<u8>,
    pub cpumask: Vec<u8>,
    pub cpulist: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct CpuDomains {
    pub cpu: u32,
    pub nr_domains: u32,
    /// Indexed by domain number.
    pub domains: Vec<Option<Domain>>,
}

/// Group membership perf rebuilds from GROUP_DESC (per event, by index).
#[derive(Debug, Clone, Default)]
pub struct GroupInfo {
    pub leader: usize,
    pub name: Option<Vec<u8>>,
    pub nr_members: u32,
}

/// One event of EVENT_DESC.
#[derive(Debug, Clone)]
pub struct DescEvent {
    pub attr: Attr,
    pub name: Vec<u8>,
    pub ids: Vec<u64>,
}

/// What perf keeps from the features (its `perf_env` and a few session
/// fields), as far as printing needs it.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub hostname: Option<Vec<u8>>,
    pub os_release: Option<Vec<u8>>,
    pub version: Option<Vec<u8>>,
    pub arch: Option<Vec<u8>>,
    pub cpu_desc: Option<Vec<u8>>,
    pub cpuid: Option<Vec<u8>>,
    pub nr_cpus_avail: u32,
    pub nr_cpus_online: u32,
    pub total_mem: u64,
    pub cmdline: Vec<Vec<u8>>,
    pub events: Option<Vec<DescEvent>>,
    pub sibling_cores: Vec<Vec<u8>>,
    pub sibling_threads: Vec<Vec<u8>>,
    pub sibling_dies: Vec<Vec<u8>>,
    pub cpu: Option<Vec<CpuTopo>>,
    pub numa: Vec<NumaNode>,
    pub pmu_mappings: Vec<(u32, Vec<u8>)>,
    pub groups: Option<Vec<GroupInfo>>,
    pub caches: Vec<Cache>,
    pub first_sample_time: u64,
    pub last_sample_time: u64,
    pub memory_bsize: u64,
    pub memory_nodes: Vec<MemNode>,
    pub clockid_res_ns: u64,
    /// The data is a directory (`perf record --threads`): HEADER_DIR_FORMAT
    /// is valid, and gives `dir_version`.
    pub is_dir: bool,
    pub dir_version: u64,
    pub clock: Option<ClockData>,
    /// HEADER_BPF_PROG_INFO by program id (the first entry of an id).
    pub bpf_progs: BTreeMap<u32, BpfProg>,
    /// HEADER_BPF_BTF: BTF blobs by id (the first entry of an id).
    pub btfs: BTreeMap<u32, Vec<u8>>,
    pub comp_type: u32,
    pub comp_level: u32,
    pub comp_ratio: u32,
    pub cpu_pmu_caps: Vec<Vec<u8>>,
    pub pmu_caps: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
    pub hybrid: Vec<(Vec<u8>, Vec<u8>)>,
    pub schedstat_version: u32,
    pub max_sched_domains: u32,
    pub cpu_domain: Vec<Option<CpuDomains>>,
    pub e_machine: u32,
    pub e_flags: u32,
    pub cln_size: u32,
}

impl Env {
    /// perf's `process_*` for feature `bit`. `Err` is perf's failure (the
    /// message is the one perf prints, where it prints one).
    pub fn process(&mut self, bit: u32, data: &[u8], endian: Endian, evlist: &Evlist) -> PResult<()> {
        let mut ff = Ff::new(data, endian);
        let ff = &mut ff;
        match bit {
            3 => self.hostname = Some(ff.string()?),
            4 => self.os_release = Some(ff.string()?),
            5 => self.version = Some(ff.string()?),
            6 => self.arch = Some(ff.string()?),
            8 => self.cpu_desc = Some(ff.string()?),
            9 => self.cpuid = Some(ff.string()?),
            7 => {
                let avail = ff.u32()?;
                let online = ff.u32()?;
                if avail > MAX_NR_CPUS {
                    return Err(format!("Invalid HEADER_NRCPUS: nr_cpus_avail ({avail}) exceeds maximum ({MAX_NR_CPUS})"));
                }
                if online > avail {
                    return Err(format!("Invalid HEADER_NRCPUS: nr_cpus_online ({online}) > nr_cpus_avail ({avail})"));
                }
                self.nr_cpus_avail = avail;
                self.nr_cpus_online = online;
            }
            10 => self.total_mem = ff.u64()?,
            11 => {
                let nr = ff.u32()?;
                ff.count_fits("CMDLINE", nr as u64, 4, "strings")?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    v.push(ff.string()?);
                }
                self.cmdline = v;
            }
            12 => {
                // perf does not fail the file for an unreadable EVENT_DESC;
                // it prints "not available" instead.
                self.events = read_event_desc(ff).ok();
            }
            13 => self.process_cpu_topology(ff)?,
            14 => {
                let nr = ff.u32()?;
                ff.count_fits("NUMA_TOPOLOGY", nr as u64, 24, "nodes")?;
                let mut nodes = Vec::new();
                for _ in 0..nr {
                    let node = ff.u32()?;
                    let mem_total = ff.u64()?;
                    let mem_free = ff.u64()?;
                    let cpus = ff.string()?;
                    let cpus = parse_cpu_list(&cpus).ok_or_else(|| {
                        format!("NUMA node {node}: invalid cpu list '{}'", String::from_utf8_lossy(&cpus))
                    })?;
                    nodes.push(NumaNode { node, mem_total, mem_free, cpus });
                }
                self.numa = nodes;
            }
            16 => {
                let nr = ff.u32()?;
                ff.count_fits("PMU_MAPPINGS", nr as u64, 8, "PMUs")?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    let t = ff.u32()?;
                    v.push((t, ff.string()?));
                }
                self.pmu_mappings = v;
            }
            17 => self.process_group_desc(ff, evlist)?,
            18 => {
                // auxtrace_index__process: u64 nr, then nr 16-byte entries.
                let nr = ff.u64()?;
                if nr.saturating_mul(16).saturating_add(8) > data.len() as u64 {
                    return Err("Failed to process auxtrace index".into());
                }
            }
            20 => {
                let version = ff.u32()?;
                if version != 1 {
                    return Err(format!("unsupported HEADER_CACHE version {version}"));
                }
                let cnt = ff.u32()?;
                ff.count_fits("CACHE", cnt as u64, 28, "entries")?;
                let mut v = Vec::new();
                for _ in 0..cnt {
                    let level = ff.u32()?;
                    let _line_size = ff.u32()?;
                    let _sets = ff.u32()?;
                    let _ways = ff.u32()?;
                    let kind = ff.string()?;
                    let size = ff.string()?;
                    let map = ff.string()?;
                    v.push(Cache { level, kind, size, map });
                }
                self.caches = v;
            }
            21 => {
                let first = ff.u64()?;
                let last = ff.u64()?;
                self.first_sample_time = first;
                self.last_sample_time = last;
            }
            22 => {
                let version = ff.u64()?;
                if version != 1 {
                    return Err(format!("unsupported HEADER_MEM_TOPOLOGY version {version}"));
                }
                let bsize = ff.u64()?;
                let nr = ff.u64()?;
                ff.count_fits("MEM_TOPOLOGY", nr, 24, "nodes")?;
                let mut nodes = Vec::new();
                for _ in 0..nr {
                    let node = ff.u64()?;
                    let _size = ff.u64()?;
                    // The bitmap's own size replaces the one before it.
                    let size = ff.u64()?;
                    let words = size.div_ceil(64);
                    if words.saturating_mul(8) > ff.remaining() as u64 {
                        return Err(format!("do_read_bitmap: size {size} exceeds section bounds"));
                    }
                    let set = (0..words).map(|_| ff.u64()).collect::<PResult<Vec<_>>>()?;
                    nodes.push(MemNode { node, size, set });
                }
                self.memory_bsize = bsize;
                self.memory_nodes = nodes;
            }
            23 => self.clockid_res_ns = ff.u64()?,
            24 => {
                // Only directory-format data (perf record --threads) may
                // carry it; perf fails it for a single file or a pipe.
                if !self.is_dir {
                    return Err("HEADER_DIR_FORMAT in data that is not a directory".into());
                }
                self.dir_version = ff.u64()?;
            }
            25 => {
                if endian != Endian::NATIVE {
                    return Ok(());
                }
                let count = ff.u32()?;
                ff.count_fits("BPF_PROG_INFO", count as u64, 16, "entries")?;
                for _ in 0..count {
                    let info_len = ff.u32()?;
                    let data_len = ff.u32()?;
                    let arrays = ff.u64()?;
                    let info = ff.bytes(info_len as usize)?;
                    let data = ff.bytes(data_len as usize)?;
                    let prog = BpfProg::parse(info, data, arrays, endian).ok_or("detected invalid bpf_prog_info")?;
                    self.bpf_progs.entry(prog.id).or_insert(prog);
                }
            }
            26 => {
                if endian != Endian::NATIVE {
                    return Ok(());
                }
                let count = ff.u32()?;
                ff.count_fits("BPF_BTF", count as u64, 8, "entries")?;
                for _ in 0..count {
                    let id = ff.u32()?;
                    let size = ff.u32()?;
                    let blob = ff.bytes(size as usize)?;
                    self.btfs.entry(id).or_insert_with(|| blob.to_vec());
                }
            }
            27 => {
                let _ver = ff.u32()?;
                let ty = ff.u32()?;
                let level = ff.u32()?;
                let ratio = ff.u32()?;
                let mmap_len = ff.u32()?;
                if mmap_len < 4096 || mmap_len % 4096 != 0 {
                    return Err(format!(
                        "Invalid HEADER_COMPRESSED: comp_mmap_len ({mmap_len}) must be a 4K-aligned value >= 4096"
                    ));
                }
                self.comp_type = ty;
                self.comp_level = level;
                self.comp_ratio = ratio;
            }
            28 => self.cpu_pmu_caps = read_pmu_caps(ff)?,
            29 => {
                let version = ff.u32()?;
                if version != 1 {
                    return Err(format!("unsupported HEADER_CLOCK_DATA version {version}"));
                }
                let clockid = ff.u32()?;
                let tod_ns = ff.u64()?;
                let clockid_ns = ff.u64()?;
                self.clock = Some(ClockData { clockid, tod_ns, clockid_ns });
            }
            30 => {
                let nr = ff.u32()?;
                ff.count_fits("HYBRID_TOPOLOGY", nr as u64, 8, "nodes")?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    let pmu = ff.string()?;
                    v.push((pmu, ff.string()?));
                }
                self.hybrid = v;
            }
            31 => {
                let nr = ff.u32()?;
                ff.count_fits("PMU_CAPS", nr as u64, 8, "PMUs")?;
                let mut v = Vec::new();
                for _ in 0..nr {
                    let caps = read_pmu_caps(ff)?;
                    v.push((ff.string()?, caps));
                }
                self.pmu_caps = v;
            }
            32 => self.process_cpu_domain_info(ff)?,
            33 => {
                self.e_machine = ff.u32()?;
                self.e_flags = ff.u32()?;
            }
            34 => self.cln_size = ff.u32()?,
            // TRACING_DATA (parsed by the tracepoint code), BUILD_ID (read
            // by the symbolizer), BRANCH_STACK and STAT have nothing to keep.
            _ => {}
        }
        Ok(())
    }

    fn process_cpu_topology(&mut self, ff: &mut Ff<'_>) -> PResult<()> {
        let cpu_nr = self.nr_cpus_avail;
        if cpu_nr == 0 {
            return Err("Invalid HEADER_CPU_TOPOLOGY: missing HEADER_NRCPUS".into());
        }
        let mut size = 0usize;
        let mut read_list = |ff: &mut Ff<'_>, what: &str| -> PResult<Vec<Vec<u8>>> {
            let nr = ff.u32()?;
            if nr > cpu_nr {
                return Err(format!("Invalid HEADER_CPU_TOPOLOGY: nr_sibling_{what} ({nr}) > nr_cpus_avail ({cpu_nr})"));
            }
            size += 4;
            let mut v = Vec::new();
            for _ in 0..nr {
                let s = ff.string()?;
                size += string_size(&s);
                v.push(s);
            }
            Ok(v)
        };
        let cores = read_list(ff, "cores")?;
        let threads = read_list(ff, "threads")?;
        self.sibling_cores = cores;
        self.sibling_threads = threads;
        self.sibling_dies.clear();
        self.cpu = None;
        // Files from old perf stop here.
        if ff.data.len() <= size {
            return Ok(());
        }
        let mut cpus = vec![CpuTopo::default(); cpu_nr as usize];
        for c in cpus.iter_mut() {
            c.core_id = ff.u32()?;
            c.socket_id = ff.u32()?;
            size += 8;
        }
        if ff.data.len() <= size {
            self.cpu = Some(cpus);
            return Ok(());
        }
        let mut size2 = size;
        let dies = {
            let nr = ff.u32()?;
            if nr > cpu_nr {
                return Err(format!("Invalid HEADER_CPU_TOPOLOGY: nr_sibling_dies ({nr}) > nr_cpus_avail ({cpu_nr})"));
            }
            size2 += 4;
            let mut v = Vec::new();
            for _ in 0..nr {
                let s = ff.string()?;
                size2 += string_size(&s);
                v.push(s);
            }
            v
        };
        let _ = size2;
        for c in cpus.iter_mut() {
            c.die_id = ff.u32()?;
        }
        self.sibling_dies = dies;
        self.cpu = Some(cpus);
        Ok(())
    }

    fn process_group_desc(&mut self, ff: &mut Ff<'_>, evlist: &Evlist) -> PResult<()> {
        let nr_groups = ff.u32()?;
        if nr_groups == 0 {
            return Ok(());
        }
        ff.count_fits("GROUP_DESC", nr_groups as u64, 12, "groups")?;
        let mut desc = Vec::new();
        for _ in 0..nr_groups {
            let name = ff.string()?;
            let leader_idx = ff.u32()?;
            let nr_members = ff.u32()?;
            desc.push((name, leader_idx, nr_members));
        }
        let mut groups: Vec<GroupInfo> = (0..evlist.len()).map(|i| GroupInfo { leader: i, ..Default::default() }).collect();
        let (mut i, mut nr, mut leader) = (0usize, 0u32, 0usize);
        for (idx, g) in groups.iter_mut().enumerate() {
            if i < desc.len() && idx as u64 == desc[i].1 as u64 {
                g.leader = idx;
                if desc[i].0 != b"{anon_group}" {
                    g.name = Some(desc[i].0.clone());
                }
                g.nr_members = desc[i].2;
                if nr > 0 {
                    return Err("invalid group desc".into());
                }
                leader = idx;
                nr = desc[i].2.wrapping_sub(1);
                i += 1;
            } else if nr > 0 {
                g.leader = leader;
                nr -= 1;
            }
        }
        if i != desc.len() || nr != 0 {
            return Err("invalid group desc".into());
        }
        self.groups = Some(groups);
        Ok(())
    }

    fn process_cpu_domain_info(&mut self, ff: &mut Ff<'_>) -> PResult<()> {
        let (nra, nr) = (self.nr_cpus_avail, self.nr_cpus_online);
        if nra == 0 {
            return Err("Invalid HEADER_CPU_DOMAIN_INFO: missing HEADER_NRCPUS".into());
        }
        if (ff.data.len() as u64) < 8 + 8 * nr as u64 {
            return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: section too small ({}) for {nr} CPUs", ff.data.len()));
        }
        let version = ff.u32()?;
        let max = ff.u32()?;
        // Checked before anything is allocated: every CPU gets a table of
        // `max` domains.
        if max > MAX_SCHED_DOMAINS {
            return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: max_sched_domains {max} > {MAX_SCHED_DOMAINS}"));
        }
        let mut map: Vec<Option<CpuDomains>> = vec![None; nra as usize];
        for _ in 0..nr {
            let cpu = ff.u32()?;
            if cpu >= nra {
                return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: cpu {cpu} >= nr_cpus_avail ({nra})"));
            }
            if map[cpu as usize].is_some() {
                return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: duplicate cpu {cpu}"));
            }
            let nr_domains = ff.u32()?;
            if nr_domains > max {
                return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: nr_domains {nr_domains} > max_sched_domains ({max})"));
            }
            let mut domains: Vec<Option<Domain>> = vec![None; max as usize];
            for _ in 0..nr_domains {
                let domain = ff.u32()?;
                if domain >= max {
                    return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: domain {domain} >= max_sched_domains ({max})"));
                }
                if domains[domain as usize].is_some() {
                    return Err(format!("Invalid HEADER_CPU_DOMAIN_INFO: duplicate domain {domain} for cpu {cpu}"));
                }
                let name = if version >= 17 { ff.string()? } else { Vec::new() };
                let cpumask = ff.string()?;
                let cpulist = ff.string()?;
                domains[domain as usize] = Some(Domain { domain, name, cpumask, cpulist });
            }
            map[cpu as usize] = Some(CpuDomains { cpu, nr_domains, domains });
        }
        self.schedstat_version = version;
        self.max_sched_domains = max;
        self.cpu_domain = map;
        Ok(())
    }
}

/// `__process_pmu_caps`: `u32 nr`, then `nr` name/value string pairs,
/// kept as `name=value`.
fn read_pmu_caps(ff: &mut Ff<'_>) -> PResult<Vec<Vec<u8>>> {
    let nr = ff.u32()?;
    if nr as u64 * 8 > ff.remaining() as u64 {
        return Err(format!("Invalid pmu caps: nr_pmu_caps ({nr}) > {}", ff.remaining() / 8));
    }
    let mut v = Vec::new();
    for _ in 0..nr {
        let mut cap = ff.string()?;
        let value = ff.string()?;
        cap.push(b'=');
        cap.extend_from_slice(&value);
        v.push(cap);
    }
    Ok(v)
}

/// perf 7.2's `read_event_desc`, with its checks.
fn read_event_desc(ff: &mut Ff<'_>) -> PResult<Vec<DescEvent>> {
    let nre = ff.u32()?;
    let sz = ff.u32()?;
    if (sz as usize) < ATTR_SIZE_VER0 {
        return Err(format!("Invalid HEADER_EVENT_DESC: nre={nre} sz={sz} (min {ATTR_SIZE_VER0})"));
    }
    ff.count_fits("EVENT_DESC", nre as u64, sz as u64 + 8, "events")?;
    let mut out = Vec::new();
    for i in 0..nre {
        let raw = ff.bytes(sz as usize)?;
        let mut attr = Attr::decode(raw, ff.endian);
        if attr.size == 0 {
            attr.size = ATTR_SIZE_VER0 as u32;
        }
        if (attr.size as usize) < ATTR_SIZE_VER0 || attr.size > sz {
            return Err(format!("Event {i} attr.size ({}) invalid (min: {ATTR_SIZE_VER0}, max: {sz})", attr.size));
        }
        attr.check()?;
        let nr = ff.u32()?;
        let name = ff.string()?;
        if nr as u64 * 8 > ff.remaining() as u64 {
            return Err(format!("Event {i}: id count {nr} exceeds remaining section"));
        }
        let ids = (0..nr).map(|_| ff.u64()).collect::<PResult<Vec<_>>>()?;
        out.push(DescEvent { attr, name, ids });
    }
    Ok(out)
}

/// C's `strtoul(s, &end, 0)`: leading blanks, an optional sign, a `0x`
/// (hex) or `0` (octal) prefix. Returns the value and where parsing
/// stopped (`from` itself when there are no digits).
fn strtoul0(s: &[u8], from: usize) -> (u64, usize) {
    let mut i = from;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let hex_prefix = i + 2 < s.len() + 1 && s.get(i) == Some(&b'0') && matches!(s.get(i + 1), Some(b'x' | b'X'));
    let (base, start) = if hex_prefix && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
        (16, i + 2)
    } else if s.get(i) == Some(&b'0') {
        (8, i)
    } else {
        (10, i)
    };
    let mut v: u64 = 0;
    let mut j = start;
    while let Some(d) = s.get(j).and_then(|&c| (c as char).to_digit(base)) {
        v = v.saturating_mul(base as u64).saturating_add(d as u64);
        j += 1;
    }
    if j == start {
        return (0, from);
    }
    (if neg { v.wrapping_neg() } else { v }, j)
}

/// libperf's `perf_cpu_map__new` on a CPU list such as `0-3,8`: `None`
/// where perf rejects it (reversed range, duplicate CPU, stray characters,
/// CPU numbers from 32767 on); an empty list is the "any CPU" map `[-1]`.
pub fn parse_cpu_list(s: &[u8]) -> Option<Vec<i32>> {
    const LIMIT: u64 = i16::MAX as u64;
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut cpus: Vec<i32> = Vec::new();
    let mut pos = 0;
    while at(pos).is_ascii_digit() {
        let (first, mut p) = strtoul0(s, pos);
        if first >= LIMIT || !matches!(at(p), 0 | b',' | b'-' | b'\n') {
            return None;
        }
        let last = if at(p) == b'-' {
            let (last, q) = strtoul0(s, p + 1);
            p = q;
            if last >= LIMIT || !matches!(at(p), 0 | b',' | b'\n') || last < first {
                return None;
            }
            last
        } else {
            first
        };
        for cpu in first..=last {
            if cpus.contains(&(cpu as i32)) {
                return None;
            }
            cpus.push(cpu as i32);
        }
        if p < s.len() {
            p += 1;
        }
        pos = p;
    }
    if !cpus.is_empty() {
        cpus.sort_unstable();
        Some(cpus)
    } else if pos < s.len() {
        None
    } else {
        Some(vec![-1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pstr(s: &str) -> Vec<u8> {
        let n = (s.len() + 1).div_ceil(64) * 64;
        let mut v = (n as u32).to_le_bytes().to_vec();
        v.extend_from_slice(s.as_bytes());
        v.resize(4 + n, 0);
        v
    }

    /// HEADER_CPU_DOMAIN_INFO of `cpus` CPUs, one domain each, claiming
    /// `max` domains per CPU.
    fn cpu_domains(max: u32, cpus: u32) -> Vec<u8> {
        let mut p = [16u32.to_le_bytes(), max.to_le_bytes()].concat();
        for c in 0..cpus {
            p.extend([c.to_le_bytes(), 1u32.to_le_bytes(), 0u32.to_le_bytes()].concat());
            p.extend(pstr("3"));
            p.extend(pstr("0-1"));
        }
        p
    }

    /// perf 7.2 refuses more than 64 sched domains (perf-ref printed
    /// `max_sched_domains 65 > 64` for such a section), before a table per
    /// CPU is made: 4,096 CPUs claiming 4,096 domains each took 1.3 GB.
    #[test]
    fn sched_domains_are_bounded_as_perf_bounds_them() {
        let mut env = Env { nr_cpus_avail: 4096, nr_cpus_online: 4096, ..Env::default() };
        let evlist = Evlist::default();
        assert_eq!(
            env.process(32, &cpu_domains(4096, 4096), Endian::Little, &evlist),
            Err("Invalid HEADER_CPU_DOMAIN_INFO: max_sched_domains 4096 > 64".to_string())
        );
        let mut env = Env { nr_cpus_avail: 2, nr_cpus_online: 2, ..Env::default() };
        assert_eq!(
            env.process(32, &cpu_domains(65, 2), Endian::Little, &evlist),
            Err("Invalid HEADER_CPU_DOMAIN_INFO: max_sched_domains 65 > 64".to_string())
        );
        assert_eq!(env.process(32, &cpu_domains(64, 2), Endian::Little, &evlist), Ok(()));
        assert_eq!((env.max_sched_domains, env.cpu_domain.iter().flatten().count()), (64, 2));
    }
}

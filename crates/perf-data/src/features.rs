//! Feature sections: metadata perf record stores after the data (file mode)
//! or in HEADER_FEATURE records (pipe mode), in the same encoding.
//!
//! Strings are `u32 len` + `len` bytes (NUL-padded). The ones pstitch reads:
//!
//! ```text
//! EVENT_DESC  u32 nr, u32 attr_size,
//!             nr x { attr[attr_size], u32 nr_ids, string name, u64 ids[nr_ids] }
//! BUILD_ID    a sequence of { header(type,misc,size), i32 pid,
//!                             u8 build_id[20], u8 size, u8 pad[3], char filename[] }
//! HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID: one string
//! NRCPUS      u32 online, u32 available
//! CMDLINE     u32 nr, nr x string
//! ```

use std::collections::BTreeMap;

use super::attr::Attr;
use super::bytes::{Cursor, Endian, until_nul};
use super::record::misc;

/// Feature bit numbers (`HEADER_*`).
pub mod feat {
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
    /// perf 7.2's scheduler domains; perf 6.1 wrote its HEADER_LAST_FEATURE
    /// mark with this id, empty, at the end of a pipe's features.
    pub const CPU_DOMAIN_INFO: u32 = 32;
}

/// One event described by EVENT_DESC.
#[derive(Debug, Clone)]
pub struct EventDesc {
    pub attr: Attr,
    pub name: String,
    pub ids: Vec<u64>,
}

/// HEADER_COMPRESSED: `{ u32 version, type, level, ratio, mmap_len }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedInfo {
    pub version: u32,
    pub type_: u32,
    pub level: u32,
    pub ratio: u32,
    /// Size of perf record's ring buffers: no chunk decompresses to more.
    pub mmap_len: u32,
}

/// A BUILD_ID table entry: which build-id the file at `filename` had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    pub pid: i32,
    pub cpumode: u16,
    pub build_id: Vec<u8>,
    pub filename: Vec<u8>,
}

/// perf's `build_id__is_defined`: a build-id of no bytes, or of zeros only
/// (a recorder that could not read one), is no build-id: the file is then
/// found by its path, never rejected for not matching it.
pub fn build_id_is_defined(build_id: &[u8]) -> bool {
    build_id.iter().any(|&b| b != 0)
}

/// All feature payloads of a file, kept as raw bytes (so `--header` can
/// print them) with decoders for the ones pstitch uses.
#[derive(Debug, Clone, Default)]
pub struct Features {
    pub endian: Option<Endian>,
    sections: BTreeMap<u32, Vec<u8>>,
}

impl Features {
    pub fn new(endian: Endian) -> Features {
        Features { endian: Some(endian), sections: BTreeMap::new() }
    }

    pub fn insert(&mut self, bit: u32, payload: Vec<u8>) {
        self.sections.insert(bit, payload);
    }

    pub fn get(&self, bit: u32) -> Option<&[u8]> {
        self.sections.get(&bit).map(|v| v.as_slice())
    }

    pub fn bits(&self) -> impl Iterator<Item = u32> + '_ {
        self.sections.keys().copied()
    }

    pub fn endian(&self) -> Endian {
        self.endian.unwrap_or(Endian::NATIVE)
    }

    /// A single-string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID).
    pub fn string(&self, bit: u32) -> Option<String> {
        let mut c = Cursor::new(self.get(bit)?, self.endian());
        Some(String::from_utf8_lossy(c.perf_string().ok()?).into_owned())
    }

    /// CMDLINE: the perf record command line, one string per argument.
    pub fn cmdline(&self) -> Option<Vec<String>> {
        let mut c = Cursor::new(self.get(feat::CMDLINE)?, self.endian());
        let nr = c.u32().ok()?;
        let mut v = Vec::new();
        for _ in 0..nr {
            v.push(String::from_utf8_lossy(c.perf_string().ok()?).into_owned());
        }
        Some(v)
    }

    /// NRCPUS: (online, available).
    pub fn nr_cpus(&self) -> Option<(u32, u32)> {
        let mut c = Cursor::new(self.get(feat::NRCPUS)?, self.endian());
        Some((c.u32().ok()?, c.u32().ok()?))
    }

    /// HEADER_COMPRESSED: how `perf record -z` compressed the data.
    pub fn compressed(&self) -> Option<CompressedInfo> {
        let mut c = Cursor::new(self.get(feat::COMPRESSED)?, self.endian());
        Some(CompressedInfo {
            version: c.u32().ok()?,
            type_: c.u32().ok()?,
            level: c.u32().ok()?,
            ratio: c.u32().ok()?,
            mmap_len: c.u32().ok()?,
        })
    }

    /// EVENT_DESC entries in file order. Stops (keeping what it read) at
    /// the first malformed entry.
    pub fn event_desc(&self) -> Vec<EventDesc> {
        self.get(feat::EVENT_DESC).map(|d| event_desc_entries(d, self.endian()).into_iter().map(|(d, _)| d).collect()).unwrap_or_default()
    }

    /// BUILD_ID table entries. Stops at the first malformed entry.
    pub fn build_ids(&self) -> Vec<BuildIdEntry> {
        let mut out = Vec::new();
        let Some(data) = self.get(feat::BUILD_ID) else { return out };
        let e = self.endian();
        let mut off = 0usize;
        while off + 8 <= data.len() {
            let (Some(misc_bits), Some(size)) = (e.read_u16(data, off + 4), e.read_u16(data, off + 6)) else { break };
            let size = size as usize;
            if size < 36 || off + size > data.len() {
                break;
            }
            let rec = &data[off..off + size];
            let pid = e.read_u32(rec, 8).unwrap_or(0) as i32;
            let id_area = &rec[12..36];
            let n = if misc_bits & misc::BUILD_ID_SIZE != 0 { (id_area[20] as usize).min(20) } else { 20 };
            out.push(BuildIdEntry {
                pid,
                cpumode: misc_bits & misc::CPUMODE_MASK,
                build_id: id_area[..n].to_vec(),
                filename: until_nul(&rec[36..]).to_vec(),
            });
            off += size;
        }
        out
    }
}

/// The entries of an EVENT_DESC payload, each with where its attr lies in
/// the payload (pstitch-inject clears flags there). Stops (keeping what it
/// read) at the first malformed entry.
pub fn event_desc_entries(data: &[u8], endian: Endian) -> Vec<(EventDesc, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut c = Cursor::new(data, endian);
    let (Ok(nr), Ok(attr_size)) = (c.u32(), c.u32()) else { return out };
    for _ in 0..nr {
        let Some(entry) = (|| {
            let at = c.pos();
            let raw = c.bytes(attr_size as usize).ok()?;
            let attr = Attr::parse(raw, endian)?;
            let nr_ids = c.u32().ok()?;
            let name = String::from_utf8_lossy(c.perf_string().ok()?).into_owned();
            let ids = c.u64_array(nr_ids as u64).ok()?.iter().collect();
            Some((EventDesc { attr, name, ids }, at..at + attr_size as usize))
        })() else {
            break;
        };
        out.push(entry);
    }
    out
}

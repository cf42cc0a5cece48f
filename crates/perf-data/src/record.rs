//! Records: the 8-byte header and borrowed views of the bodies pstitch reads.
//!
//! ```text
//! struct perf_event_header { u32 type; u16 misc; u16 size; }   // size includes the header
//! ```
//! Types below 64 come from the kernel's ring buffer; 64 and up are written
//! by perf itself (attrs, feature data, round markers, compressed chunks).
//! Kernel records other than samples end with a `sample_id` trailer when the
//! event has `sample_id_all` (see [`super::sample::SampleId`]).

use super::bytes::{Cursor, Endian, U64Array, until_nul};

/// Record type numbers (`PERF_RECORD_*`).
pub mod kind {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    pub const CALLCHAIN_DEFERRED: u32 = 22;

    /// First type perf writes itself.
    pub const USER_TYPE_START: u32 = 64;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_EVENT_TYPE: u32 = 65;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const AUXTRACE_INFO: u32 = 70;
    pub const AUXTRACE: u32 = 71;
    pub const AUXTRACE_ERROR: u32 = 72;
    pub const THREAD_MAP: u32 = 73;
    pub const CPU_MAP: u32 = 74;
    pub const STAT_CONFIG: u32 = 75;
    pub const STAT: u32 = 76;
    pub const STAT_ROUND: u32 = 77;
    pub const EVENT_UPDATE: u32 = 78;
    pub const TIME_CONV: u32 = 79;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const FINISHED_INIT: u32 = 82;
    pub const COMPRESSED2: u32 = 83;
    pub const BPF_METADATA: u32 = 84;
    pub const SCHEDSTAT_CPU: u32 = 85;
    pub const SCHEDSTAT_DOMAIN: u32 = 86;
    /// First type perf 7.2 does not know (`PERF_RECORD_HEADER_MAX`).
    pub const HEADER_MAX: u32 = 87;

    /// perf's name for a record type, as `perf report -D` prints it.
    pub fn name(t: u32) -> &'static str {
        match t {
            MMAP => "MMAP",
            LOST => "LOST",
            COMM => "COMM",
            EXIT => "EXIT",
            THROTTLE => "THROTTLE",
            UNTHROTTLE => "UNTHROTTLE",
            FORK => "FORK",
            READ => "READ",
            SAMPLE => "SAMPLE",
            MMAP2 => "MMAP2",
            AUX => "AUX",
            ITRACE_START => "ITRACE_START",
            LOST_SAMPLES => "LOST_SAMPLES",
            SWITCH => "SWITCH",
            SWITCH_CPU_WIDE => "SWITCH_CPU_WIDE",
            NAMESPACES => "NAMESPACES",
            KSYMBOL => "KSYMBOL",
            BPF_EVENT => "BPF_EVENT",
            CGROUP => "CGROUP",
            TEXT_POKE => "TEXT_POKE",
            AUX_OUTPUT_HW_ID => "AUX_OUTPUT_HW_ID",
            CALLCHAIN_DEFERRED => "CALLCHAIN_DEFERRED",
            HEADER_ATTR => "ATTR",
            HEADER_EVENT_TYPE => "EVENT_TYPE",
            HEADER_TRACING_DATA => "TRACING_DATA",
            HEADER_BUILD_ID => "BUILD_ID",
            FINISHED_ROUND => "FINISHED_ROUND",
            ID_INDEX => "ID_INDEX",
            AUXTRACE_INFO => "AUXTRACE_INFO",
            AUXTRACE => "AUXTRACE",
            AUXTRACE_ERROR => "AUXTRACE_ERROR",
            THREAD_MAP => "THREAD_MAP",
            CPU_MAP => "CPU_MAP",
            STAT_CONFIG => "STAT_CONFIG",
            STAT => "STAT",
            STAT_ROUND => "STAT_ROUND",
            EVENT_UPDATE => "EVENT_UPDATE",
            TIME_CONV => "TIME_CONV",
            HEADER_FEATURE => "FEATURE",
            COMPRESSED => "COMPRESSED",
            FINISHED_INIT => "FINISHED_INIT",
            COMPRESSED2 => "COMPRESSED2",
            BPF_METADATA => "BPF_METADATA",
            SCHEDSTAT_CPU => "SCHEDSTAT_CPU",
            SCHEDSTAT_DOMAIN => "SCHEDSTAT_DOMAIN",
            _ => "UNKNOWN",
        }
    }
}

/// `header.misc` bits.
pub mod misc {
    pub const CPUMODE_MASK: u16 = 7;
    pub const CPUMODE_UNKNOWN: u16 = 0;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    /// COMM: the comm changed because of an exec.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// MMAP/MMAP2: a data (non-executable) mapping.
    pub const MMAP_DATA: u16 = 1 << 13;
    /// MMAP2: the record carries a build-id instead of device/inode.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// SWITCH, SWITCH_CPU_WIDE: the task was switched out (else in).
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// SWITCH, SWITCH_CPU_WIDE: switched out while runnable (preempted).
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
    /// HEADER_BUILD_ID: the build-id size is in the record.
    pub const BUILD_ID_SIZE: u16 = 1 << 15;
}

pub const HEADER_SIZE: usize = 8;

/// The smallest size (header included) a record of type `t` may have, as
/// perf 7.2 checks it (`perf_event__min_size[]`; 0 = no minimum beyond the
/// header). Smaller records are skipped. The values were read off perf-ref's
/// own warnings ("event size 8 too small (min N)") for every type.
#[inline]
pub fn min_size(t: u32) -> usize {
    use kind::*;
    match t {
        MMAP => 41,
        LOST => 24,
        COMM => 17,
        EXIT | FORK | THROTTLE | UNTHROTTLE | AUX => 32,
        READ => 24,
        MMAP2 => 73,
        ITRACE_START | LOST_SAMPLES | SWITCH_CPU_WIDE | AUX_OUTPUT_HW_ID | CALLCHAIN_DEFERRED => 16,
        NAMESPACES | BPF_EVENT | TEXT_POKE => 24,
        KSYMBOL => 25,
        CGROUP => 17,
        HEADER_ATTR => 72,
        HEADER_EVENT_TYPE => 80,
        HEADER_TRACING_DATA => 12,
        HEADER_BUILD_ID => 36,
        ID_INDEX | AUXTRACE_INFO | THREAD_MAP | CPU_MAP | STAT_CONFIG | HEADER_FEATURE | COMPRESSED2 => 16,
        AUXTRACE | STAT => 48,
        AUXTRACE_ERROR => 49,
        STAT_ROUND | EVENT_UPDATE | SCHEDSTAT_CPU | SCHEDSTAT_DOMAIN => 24,
        TIME_CONV => 32,
        BPF_METADATA => 528,
        _ => 0,
    }
}

/// Where (from the start of the record) the NUL-terminated string of a
/// record type begins, for the types perf checks with
/// `perf_event__check_nul` (the string must end before the record does,
/// `sample_id` trailer included).
#[inline]
pub fn string_offset(t: u32) -> Option<usize> {
    use kind::*;
    match t {
        MMAP => Some(40),
        MMAP2 => Some(72),
        COMM | CGROUP => Some(16),
        KSYMBOL => Some(24),
        HEADER_BUILD_ID => Some(36),
        _ => None,
    }
}

/// perf's `perf_event__check_nul`: does the string of a record end (with a
/// NUL) inside the record? True for types without such a string.
#[inline]
pub fn string_is_terminated(t: u32, record: &[u8]) -> bool {
    match string_offset(t) {
        Some(off) => record.get(off..).is_some_and(|s| s.contains(&0)),
        None => true,
    }
}

/// Record sizes must be multiples of 8, except for three legacy user
/// records (perf 7.2 aborts on any other unaligned record).
#[inline]
pub fn size_may_be_unaligned(t: u32) -> bool {
    matches!(t, kind::HEADER_TRACING_DATA | kind::COMPRESSED | kind::HEADER_FEATURE)
}

/// A record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub type_: u32,
    pub misc: u16,
    pub size: u16,
}

impl RecordHeader {
    #[inline]
    pub fn parse(b: &[u8], endian: Endian) -> Option<RecordHeader> {
        Some(RecordHeader {
            type_: endian.read_u32(b, 0)?,
            misc: endian.read_u16(b, 4)?,
            size: endian.read_u16(b, 6)?,
        })
    }

    #[inline]
    pub fn cpumode(&self) -> u16 {
        self.misc & misc::CPUMODE_MASK
    }
}

/// One whole record (header included), borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub header: RecordHeader,
    /// The record's bytes, header included.
    pub bytes: &'a [u8],
    pub endian: Endian,
}

impl<'a> Record<'a> {
    /// The bytes after the header.
    #[inline]
    pub fn body(&self) -> &'a [u8] {
        &self.bytes[HEADER_SIZE.min(self.bytes.len())..]
    }

    /// The body without a `sample_id` trailer of `trailer` bytes.
    #[inline]
    fn payload(&self, trailer: usize) -> &'a [u8] {
        let b = self.body();
        &b[..b.len().saturating_sub(trailer)]
    }
}

/// PERF_RECORD_MMAP / PERF_RECORD_MMAP2.
#[derive(Debug, Clone, Copy)]
pub struct MmapRecord<'a> {
    pub pid: i32,
    pub tid: i32,
    pub start: u64,
    pub len: u64,
    pub pgoff: u64,
    /// MMAP2 only.
    pub prot: u32,
    pub flags: u32,
    /// MMAP2 with `MMAP_BUILD_ID`.
    pub build_id: Option<&'a [u8]>,
    pub filename: &'a [u8],
}

impl<'a> MmapRecord<'a> {
    /// The fixed fields are read from the record body and the file name up
    /// to its NUL as perf reads them (a name whose NUL lies in the
    /// `sample_id` trailer runs into it, as in perf); `_trailer` is not
    /// needed for that.
    pub fn parse(r: &Record<'a>, _trailer: usize) -> Option<MmapRecord<'a>> {
        let mut c = Cursor::new(r.body(), r.endian);
        let pid = c.u32().ok()? as i32;
        let tid = c.u32().ok()? as i32;
        let start = c.u64().ok()?;
        let len = c.u64().ok()?;
        let pgoff = c.u64().ok()?;
        let (mut prot, mut flags, mut build_id) = (0, 0, None);
        if r.header.type_ == kind::MMAP2 {
            let id_area = c.bytes(24).ok()?;
            if r.header.misc & misc::MMAP_BUILD_ID != 0 {
                let n = (id_area[0] as usize).min(20);
                build_id = Some(&id_area[4..4 + n]);
            }
            prot = c.u32().ok()?;
            flags = c.u32().ok()?;
        }
        let rest = c.bytes(c.remaining()).ok()?;
        Some(MmapRecord { pid, tid, start, len, pgoff, prot, flags, build_id, filename: until_nul(rest) })
    }
}

/// PERF_RECORD_COMM.
#[derive(Debug, Clone, Copy)]
pub struct CommRecord<'a> {
    pub pid: i32,
    pub tid: i32,
    pub comm: &'a [u8],
    pub exec: bool,
}

impl<'a> CommRecord<'a> {
    /// Read as perf reads it: the comm up to its NUL (see [`MmapRecord::parse`]).
    pub fn parse(r: &Record<'a>, _trailer: usize) -> Option<CommRecord<'a>> {
        let mut c = Cursor::new(r.body(), r.endian);
        let pid = c.u32().ok()? as i32;
        let tid = c.u32().ok()? as i32;
        let rest = c.bytes(c.remaining()).ok()?;
        Some(CommRecord { pid, tid, comm: until_nul(rest), exec: r.header.misc & misc::COMM_EXEC != 0 })
    }
}

/// PERF_RECORD_FORK / PERF_RECORD_EXIT.
#[derive(Debug, Clone, Copy)]
pub struct TaskRecord {
    pub pid: i32,
    pub ppid: i32,
    pub tid: i32,
    pub ptid: i32,
    pub time: u64,
}

impl TaskRecord {
    pub fn parse(r: &Record<'_>) -> Option<TaskRecord> {
        let mut c = Cursor::new(r.body(), r.endian);
        Some(TaskRecord {
            pid: c.u32().ok()? as i32,
            ppid: c.u32().ok()? as i32,
            tid: c.u32().ok()? as i32,
            ptid: c.u32().ok()? as i32,
            time: c.u64().ok()?,
        })
    }
}

/// PERF_RECORD_LOST (`id`, `lost`) and PERF_RECORD_LOST_SAMPLES (`lost` only).
#[derive(Debug, Clone, Copy)]
pub struct LostRecord {
    pub id: u64,
    pub lost: u64,
}

impl LostRecord {
    pub fn parse(r: &Record<'_>) -> Option<LostRecord> {
        let mut c = Cursor::new(r.body(), r.endian);
        if r.header.type_ == kind::LOST_SAMPLES {
            Some(LostRecord { id: 0, lost: c.u64().ok()? })
        } else {
            Some(LostRecord { id: c.u64().ok()?, lost: c.u64().ok()? })
        }
    }
}

/// PERF_RECORD_CALLCHAIN_DEFERRED: the user part of callchains whose samples
/// ended in `PERF_CONTEXT_USER_DEFERRED, cookie`.
///
/// ```text
/// struct { header; u64 cookie; u64 nr; u64 ips[nr]; struct sample_id; }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DeferredCallchainRecord<'a> {
    pub cookie: u64,
    pub ips: U64Array<'a>,
}

impl<'a> DeferredCallchainRecord<'a> {
    #[inline]
    pub fn parse(r: &Record<'a>, trailer: usize) -> Option<DeferredCallchainRecord<'a>> {
        let mut c = Cursor::new(r.payload(trailer), r.endian);
        let cookie = c.u64().ok()?;
        let nr = c.u64().ok()?;
        let ips = c.u64_array(nr).ok()?;
        Some(DeferredCallchainRecord { cookie, ips })
    }
}

/// PERF_RECORD_KSYMBOL: a kernel symbol (BPF program, trampoline) appeared
/// or went away.
#[derive(Debug, Clone, Copy)]
pub struct KsymbolRecord<'a> {
    pub addr: u64,
    pub len: u32,
    pub ksym_type: u16,
    pub flags: u16,
    pub name: &'a [u8],
}

impl<'a> KsymbolRecord<'a> {
    pub const FLAG_UNREGISTER: u16 = 1;

    /// Read as perf reads it: the name up to its NUL (see [`MmapRecord::parse`]).
    pub fn parse(r: &Record<'a>, _trailer: usize) -> Option<KsymbolRecord<'a>> {
        let mut c = Cursor::new(r.body(), r.endian);
        let addr = c.u64().ok()?;
        let len = c.u32().ok()?;
        let ksym_type = c.u16().ok()?;
        let flags = c.u16().ok()?;
        let rest = c.bytes(c.remaining()).ok()?;
        Some(KsymbolRecord { addr, len, ksym_type, flags, name: until_nul(rest) })
    }
}

/// PERF_RECORD_THREAD_MAP (73), which `perf record` writes before the
/// samples: the threads it opened its events for.
///
/// ```text
/// { u64 nr; { u64 pid; char comm[16]; } entries[nr]; }
/// ```
/// A pid of -1 stands for any thread (system-wide recordings). Returns the
/// pids of the entries the body really holds, whatever `nr` claims.
pub fn thread_map_pids(body: &[u8], e: Endian) -> Vec<i32> {
    const ENTRY: usize = 24;
    let claimed = e.read_u64(body, 0).unwrap_or(0);
    let held = body.len().saturating_sub(8) / ENTRY;
    let nr = usize::try_from(claimed).map_or(held, |n| n.min(held));
    (0..nr).filter_map(|i| e.read_u64(body, 8 + i * ENTRY)).map(|pid| pid as i32).collect()
}

/// The CPUs of a `perf_record_cpu_map_data`, the body of
/// PERF_RECORD_CPU_MAP (74) and of EVENT_UPDATE's cpus payload, in the
/// order the record lists them; -1 stands for any CPU. `None` for an
/// encoding perf does not know.
///
/// ```text
/// u16 type;
/// 0 CPUS:  u16 nr; u16 cpu[nr];                  (65535: any CPU)
/// 1 MASK:  u16 nr; u16 long_size; then nr words of long_size bytes
///          (4: right after long_size; 8: after 4 bytes of padding)
/// 2 RANGE: u8 any_cpu; u8 pad; u16 start_cpu; u16 end_cpu;
/// ```
pub fn cpu_map_cpus(data: &[u8], e: Endian) -> Option<Vec<i64>> {
    const CPUS: u16 = 0;
    const MASK: u16 = 1;
    const RANGE: u16 = 2;
    let mut cpus: Vec<i64> = Vec::new();
    match e.read_u16(data, 0)? {
        CPUS => {
            let nr = e.read_u16(data, 2).unwrap_or(0) as usize;
            for i in 0..nr {
                let Some(c) = e.read_u16(data, 4 + i * 2) else { break };
                cpus.push(if c == u16::MAX { -1 } else { c as i64 });
            }
        }
        MASK => {
            let (nr, long) = (e.read_u16(data, 2).unwrap_or(0) as usize, e.read_u16(data, 4).unwrap_or(0) as usize);
            let at = if long == 4 { 6 } else { 10 };
            for i in 0..nr {
                let word = if long == 4 { e.read_u32(data, at + i * 4).map(u64::from) } else { e.read_u64(data, at + i * 8) };
                let Some(word) = word else { break };
                let bits = long * 8;
                for bit in 0..bits {
                    if word >> bit & 1 != 0 {
                        cpus.push((i * bits + bit) as i64);
                    }
                }
            }
        }
        RANGE => {
            let any = data.get(2).copied().unwrap_or(0) != 0;
            let (start, end) = (e.read_u16(data, 4).unwrap_or(0) as i64, e.read_u16(data, 6).unwrap_or(0) as i64);
            if any {
                cpus.push(-1);
            }
            cpus.extend(start..=end.max(start - 1));
        }
        _ => return None,
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::tests::le as words;

    #[test]
    fn thread_map_reads_only_the_entries_the_body_holds() {
        // nr claims 1,000,000 entries; the body holds two (pid, comm[16]).
        let body = words(&[1_000_000, 13794, 0, 0, u64::MAX, 0, 0]);
        assert_eq!(thread_map_pids(&body, Endian::Little), vec![13794, -1]);
        assert_eq!(thread_map_pids(&words(&[1, 7]), Endian::Little), Vec::<i32>::new());
        assert_eq!(thread_map_pids(&[], Endian::Little), Vec::<i32>::new());
    }

    #[test]
    fn cpu_map_encodings() {
        // CPUS: nr 3, cpus 0, 65535 (any), 5
        let cpus = [0u16, 3, 0, 0xffff, 5].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(cpu_map_cpus(&cpus, Endian::Little), Some(vec![0, -1, 5]));
        // MASK with 8-byte words: type, nr 1, long_size 8, 4 bytes of padding, word 0b1011
        let mut mask = [1u16, 1, 8, 0, 0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        mask.extend_from_slice(&0b1011u64.to_le_bytes());
        assert_eq!(cpu_map_cpus(&mask, Endian::Little), Some(vec![0, 1, 3]));
        // RANGE: any_cpu set, CPUs 2-4
        let range = [2u8, 0, 1, 0, 2, 0, 4, 0];
        assert_eq!(cpu_map_cpus(&range, Endian::Little), Some(vec![-1, 2, 3, 4]));
        // A MASK whose nr claims more words than there are stops at the end.
        let short = [1u16, 60000, 4].iter().flat_map(|v| v.to_le_bytes()).chain(5u32.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(cpu_map_cpus(&short, Endian::Little), Some(vec![0, 2]));
        assert_eq!(cpu_map_cpus(&[9, 0], Endian::Little), None);
    }
}

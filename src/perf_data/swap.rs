//! Byte-swapping whole perf.data files: the big-endian form of a
//! little-endian recording (and back), as perf record on a machine of the
//! other byte order would have written it. Used to test cross-endian
//! reading; also handy to produce cross-endian files for other tools.
//!
//! Every multi-byte field is swapped at its natural width — a pair of `u32`
//! stays a pair of `u32`s (pid/tid, cpu/res) — following the kernel's and
//! perf's struct layouts, the ones perf's `perf_event__*_swap()` functions
//! undo. Three things are not plain swaps:
//!
//! - the attr's flags word (offset 40) and `aux_action` (offset 116) are C
//!   bitfields; a big-endian compiler allocates bitfields from the most
//!   significant bit of each byte, so the bits of every byte are reversed
//!   and the bytes stay in place (perf's `swap_bitfield`), and the same
//!   holds for a branch entry's flags word;
//! - strings and byte arrays (comms, file names, build-ids, zstd data,
//!   tracing data, user stacks, AUX data) are not touched;
//! - RAW sample data is left as it is: its layout is given by tracepoint
//!   formats, not by perf.data (the `u32` size before it is swapped).
//!
//! The swap is its own inverse: applied twice it gives the input back, byte
//! for byte. Compressed data cannot be swapped in place (it would have to
//! be recompressed); [`decompress`] first turns a `-z` recording into the
//! same recording with its records inline.
//!
//! Feature sections whose layout is not known here are copied unswapped and
//! listed in [`Swapped::untouched`].

use super::attr::{Attr, branch_sample_type, sample_type as st};
use super::bytes::Endian;
use super::compressed::{self, Decompressor};
use super::evlist::{Evlist, Evsel};
use super::features::feat;
use super::header::{FILE_HEADER_SIZE, FileHeader, PIPE_HEADER_SIZE, is_pipe_header};
use super::record::{HEADER_SIZE, Record, RecordHeader, kind, misc};
use super::{Error, FileInfo, RecordSource, Result};

/// A swapped file and what was copied without swapping.
#[derive(Debug, Clone)]
pub struct Swapped {
    pub bytes: Vec<u8>,
    /// Feature sections and records whose layout is not known here, copied
    /// as they were (`"feature 25"`, `"record type 72"`, ...).
    pub untouched: Vec<String>,
}

/// In-place swapping of fields of `buf`, whose values are read in `from`
/// (the input's byte order) before they are swapped.
struct Sw<'b> {
    buf: &'b mut [u8],
    from: Endian,
    base: usize,
}

type Res<T> = std::result::Result<T, String>;

impl Sw<'_> {
    fn range(&self, off: usize, n: usize) -> Res<std::ops::Range<usize>> {
        let start = self.base.checked_add(off).ok_or("offset overflow")?;
        let end = start.checked_add(n).ok_or("offset overflow")?;
        if end > self.buf.len() {
            return Err(format!("field at {start:#x} runs past the end ({:#x})", self.buf.len()));
        }
        Ok(start..end)
    }

    fn u16(&mut self, off: usize) -> Res<u16> {
        let r = self.range(off, 2)?;
        let v = self.from.u16(self.buf[r.clone()].try_into().map_err(|_| "u16")?);
        self.buf[r].reverse();
        Ok(v)
    }

    fn u32(&mut self, off: usize) -> Res<u32> {
        let r = self.range(off, 4)?;
        let v = self.from.u32(self.buf[r.clone()].try_into().map_err(|_| "u32")?);
        self.buf[r].reverse();
        Ok(v)
    }

    fn u64(&mut self, off: usize) -> Res<u64> {
        let r = self.range(off, 8)?;
        let v = self.from.u64(self.buf[r.clone()].try_into().map_err(|_| "u64")?);
        self.buf[r].reverse();
        Ok(v)
    }

    /// `n` consecutive `u64`s.
    fn u64s(&mut self, off: usize, n: usize) -> Res<()> {
        let r = self.range(off, n.checked_mul(8).ok_or("count overflow")?)?;
        for c in self.buf[r].chunks_exact_mut(8) {
            c.reverse();
        }
        Ok(())
    }

    /// A C bitfield word of `n` bytes: bits reversed in each byte.
    fn bitfield(&mut self, off: usize, n: usize) -> Res<()> {
        let r = self.range(off, n)?;
        for b in &mut self.buf[r] {
            *b = b.reverse_bits();
        }
        Ok(())
    }

    /// A perf header string (`u32 len`, then `len` bytes); returns the
    /// offset after it.
    fn string(&mut self, off: usize) -> Res<usize> {
        let len = self.u32(off)? as usize;
        let end = off.checked_add(4 + len).ok_or("string length overflow")?;
        self.range(off, 4 + len)?;
        Ok(end)
    }
}

/// Swaps a `perf_event_attr` of `avail` bytes at `off` (its own `size`
/// field says how much of it there is; 0 means the first version, 64
/// bytes). Returns the attr's size on disk.
fn swap_attr(sw: &mut Sw<'_>, off: usize, avail: usize) -> Res<usize> {
    sw.u32(off)?;
    let size = match sw.u32(off + 4)? as usize {
        0 => 64,
        s => s,
    };
    if size < 64 || size > avail {
        return Err(format!("attr size {size} does not fit ({avail} bytes)"));
    }
    // (offset, width): the fields of struct perf_event_attr in order; 0
    // marks a bitfield word of 8 (flags) or 4 (aux_action) bytes.
    const FIELDS: &[(usize, usize)] = &[
        (8, 8),   // config
        (16, 8),  // sample_period / sample_freq
        (24, 8),  // sample_type
        (32, 8),  // read_format
        (48, 4),  // wakeup_events / wakeup_watermark
        (52, 4),  // bp_type
        (56, 8),  // config1 / bp_addr
        (64, 8),  // config2 / bp_len
        (72, 8),  // branch_sample_type
        (80, 8),  // sample_regs_user
        (88, 4),  // sample_stack_user
        (92, 4),  // clockid
        (96, 8),  // sample_regs_intr
        (104, 4), // aux_watermark
        (108, 2), // sample_max_stack
        (110, 2), // __reserved_2
        (112, 4), // aux_sample_size
        (120, 8), // sig_data
        (128, 8), // config3
        (136, 8), // config4
    ];
    for &(f, w) in FIELDS {
        if f + w > size {
            break;
        }
        match w {
            2 => { sw.u16(off + f)?; },
            4 => { sw.u32(off + f)?; },
            _ => { sw.u64(off + f)?; },
        }
    }
    sw.bitfield(off + 40, 8)?;
    if size >= 120 {
        sw.bitfield(off + 116, 4)?; // aux_action bits
    }
    // Anything newer than this list: u64s.
    if size > 144 {
        sw.u64s(off + 144, (size - 144) / 8)?;
    }
    Ok(size)
}

/// Swaps the `sample_id` trailer of a non-sample record (`len` bytes from
/// the record start).
fn swap_trailer(sw: &mut Sw<'_>, len: usize, attr: &Attr) -> Res<()> {
    let n = attr.id_hdr_size();
    if n == 0 || n + HEADER_SIZE > len {
        return Ok(());
    }
    let mut p = len - n;
    let s = attr.sample_type;
    if s & st::TID != 0 {
        sw.u32(p)?;
        sw.u32(p + 4)?;
        p += 8;
    }
    for bit in [st::TIME, st::ID, st::STREAM_ID] {
        if s & bit != 0 {
            sw.u64(p)?;
            p += 8;
        }
    }
    if s & st::CPU != 0 {
        sw.u32(p)?;
        sw.u32(p + 4)?;
        p += 8;
    }
    if s & st::IDENTIFIER != 0 {
        sw.u64(p)?;
    }
    Ok(())
}

/// Swaps a sample body (from offset 8 of the record) as laid out by
/// `attr.sample_type`.
fn swap_sample(sw: &mut Sw<'_>, len: usize, attr: &Attr) -> Res<()> {
    let s = attr.sample_type;
    let mut p = HEADER_SIZE;
    let u64f = |sw: &mut Sw<'_>, p: &mut usize| -> Res<u64> {
        let v = sw.u64(*p)?;
        *p += 8;
        Ok(v)
    };
    if s & st::IDENTIFIER != 0 {
        u64f(sw, &mut p)?;
    }
    if s & st::IP != 0 {
        u64f(sw, &mut p)?;
    }
    if s & st::TID != 0 {
        sw.u32(p)?;
        sw.u32(p + 4)?;
        p += 8;
    }
    for bit in [st::TIME, st::ADDR, st::ID, st::STREAM_ID] {
        if s & bit != 0 {
            u64f(sw, &mut p)?;
        }
    }
    if s & st::CPU != 0 {
        sw.u32(p)?;
        sw.u32(p + 4)?;
        p += 8;
    }
    if s & st::PERIOD != 0 {
        u64f(sw, &mut p)?;
    }
    if s & st::READ != 0 {
        use super::attr::read_format as rf;
        let f = attr.read_format;
        let times = (f & rf::TOTAL_TIME_ENABLED != 0) as usize + (f & rf::TOTAL_TIME_RUNNING != 0) as usize;
        let per = 1 + (f & rf::ID != 0) as usize + (f & rf::LOST != 0) as usize;
        if f & rf::GROUP != 0 {
            let nr = usize::try_from(u64f(sw, &mut p)?).map_err(|_| "READ nr")?;
            let n = nr.checked_mul(per).and_then(|x| x.checked_add(times)).ok_or("READ nr")?;
            sw.u64s(p, n)?;
            p += n * 8;
        } else {
            sw.u64s(p, per + times)?;
            p += (per + times) * 8;
        }
    }
    if s & st::CALLCHAIN != 0 {
        let nr = usize::try_from(u64f(sw, &mut p)?).map_err(|_| "callchain nr")?;
        sw.u64s(p, nr)?;
        p += nr * 8;
    }
    if s & st::RAW != 0 {
        let size = sw.u32(p)? as usize;
        p += 4 + size;
        p += (8 - p % 8) % 8;
    }
    if s & st::BRANCH_STACK != 0 {
        let nr = usize::try_from(u64f(sw, &mut p)?).map_err(|_| "branch nr")?;
        if attr.branch_sample_type & branch_sample_type::HW_INDEX != 0 {
            u64f(sw, &mut p)?;
        }
        for _ in 0..nr {
            sw.u64s(p, 2)?; // from, to
            sw.bitfield(p + 16, 8)?; // struct perf_branch_entry's flag bits
            p += 24;
        }
        if attr.branch_sample_type & branch_sample_type::COUNTERS != 0 {
            sw.u64s(p, nr)?;
            p += nr * 8;
        }
    }
    let regs = |sw: &mut Sw<'_>, p: &mut usize, mask: u64| -> Res<()> {
        let abi = sw.u64(*p)?;
        *p += 8;
        if abi != 0 {
            let n = mask.count_ones() as usize;
            sw.u64s(*p, n)?;
            *p += n * 8;
        }
        Ok(())
    };
    if s & st::REGS_USER != 0 {
        regs(sw, &mut p, attr.sample_regs_user)?;
    }
    if s & st::STACK_USER != 0 {
        let size = usize::try_from(u64f(sw, &mut p)?).map_err(|_| "stack size")?;
        p = p.checked_add(size).ok_or("stack size")?;
        if size != 0 {
            u64f(sw, &mut p)?; // dyn_size
        }
    }
    for bit in [st::WEIGHT | st::WEIGHT_STRUCT, st::DATA_SRC, st::TRANSACTION] {
        if s & bit != 0 {
            u64f(sw, &mut p)?;
        }
    }
    if s & st::REGS_INTR != 0 {
        regs(sw, &mut p, attr.sample_regs_intr)?;
    }
    for bit in [st::PHYS_ADDR, st::CGROUP, st::DATA_PAGE_SIZE, st::CODE_PAGE_SIZE] {
        if s & bit != 0 {
            u64f(sw, &mut p)?;
        }
    }
    if s & st::AUX != 0 {
        let size = usize::try_from(u64f(sw, &mut p)?).map_err(|_| "aux size")?;
        p = p.checked_add(size).ok_or("aux size")?;
    }
    if p > len {
        return Err(format!("sample fields run to {p}, past the record's {len} bytes"));
    }
    Ok(())
}

/// The CPU map data of CPU_MAP and EVENT_UPDATE(CPUS) records (packed:
/// `u16 type`, then per type).
fn swap_cpu_map(sw: &mut Sw<'_>, off: usize) -> Res<()> {
    match sw.u16(off)? {
        0 => {
            let nr = sw.u16(off + 2)? as usize;
            for i in 0..nr {
                sw.u16(off + 4 + 2 * i)?;
            }
        }
        1 => {
            let nr = sw.u16(off + 2)? as usize;
            match sw.u16(off + 4)? {
                4 => {
                    for i in 0..nr {
                        sw.u32(off + 6 + 4 * i)?;
                    }
                }
                8 => sw.u64s(off + 10, nr)?,
                n => return Err(format!("cpu map long_size {n}")),
            }
        }
        2 => {
            sw.u16(off + 4)?;
            sw.u16(off + 6)?;
        }
        t => return Err(format!("cpu map type {t}")),
    }
    Ok(())
}

/// Swaps one record at `sw.base`; `evlist` tells the layouts of samples and
/// trailers and learns HEADER_ATTR records. Returns the bytes after the
/// record that belong to it (TRACING_DATA and AUXTRACE payloads).
fn swap_record(sw: &mut Sw<'_>, evlist: &mut Evlist, untouched: &mut Vec<String>) -> Res<()> {
    let from = sw.from;
    let start = sw.base;
    let hdr = RecordHeader::parse(sw.buf.get(start..).unwrap_or(&[]), from).ok_or("record header truncated")?;
    let len = hdr.size as usize;
    let t = hdr.type_;
    // The evsel, read before anything is swapped.
    let evsel = if t < kind::USER_TYPE_START {
        let rec = Record { header: hdr, bytes: sw.buf.get(start..start + len).ok_or("record truncated")?, endian: from };
        evlist.evsel_for(&rec).and_then(|i| evlist.evsels.get(i)).map(|e| e.attr.clone())
    } else {
        None
    };
    sw.u32(0)?;
    sw.u16(4)?;
    sw.u16(6)?;
    let trailer = |sw: &mut Sw<'_>| match &evsel {
        Some(a) => swap_trailer(sw, len, a),
        None => Ok(()),
    };
    match t {
        kind::SAMPLE => {
            let a = evsel.ok_or("sample of an unknown event")?;
            swap_sample(sw, len, &a)?;
        }
        kind::MMAP | kind::MMAP2 => {
            sw.u32(8)?;
            sw.u32(12)?;
            sw.u64s(16, 3)?;
            if t == kind::MMAP2 {
                if hdr.misc & misc::MMAP_BUILD_ID == 0 {
                    sw.u32(40)?;
                    sw.u32(44)?;
                    sw.u64s(48, 2)?;
                }
                sw.u32(64)?;
                sw.u32(68)?;
            }
            trailer(sw)?;
        }
        kind::LOST => {
            sw.u64s(8, 2)?;
            trailer(sw)?;
        }
        kind::COMM | kind::ITRACE_START | kind::SWITCH_CPU_WIDE => {
            sw.u32(8)?;
            sw.u32(12)?;
            trailer(sw)?;
        }
        kind::FORK | kind::EXIT => {
            for i in 0..4 {
                sw.u32(8 + 4 * i)?;
            }
            sw.u64(24)?;
            trailer(sw)?;
        }
        kind::THROTTLE | kind::UNTHROTTLE | kind::AUX => {
            sw.u64s(8, 3)?;
            trailer(sw)?;
        }
        kind::READ => {
            sw.u32(8)?;
            sw.u32(12)?;
            let n = evsel.as_ref().map(|a| a.id_hdr_size()).unwrap_or(0);
            sw.u64s(16, len.saturating_sub(16 + n) / 8)?;
            trailer(sw)?;
        }
        kind::LOST_SAMPLES | kind::AUX_OUTPUT_HW_ID => {
            sw.u64(8)?;
            trailer(sw)?;
        }
        kind::SWITCH => trailer(sw)?,
        kind::NAMESPACES => {
            sw.u32(8)?;
            sw.u32(12)?;
            let nr = usize::try_from(sw.u64(16)?).map_err(|_| "namespaces nr")?;
            sw.u64s(24, nr.checked_mul(2).ok_or("namespaces nr")?)?;
            trailer(sw)?;
        }
        kind::KSYMBOL => {
            sw.u64(8)?;
            sw.u32(16)?;
            sw.u16(20)?;
            sw.u16(22)?;
            trailer(sw)?;
        }
        kind::BPF_EVENT => {
            sw.u16(8)?;
            sw.u16(10)?;
            sw.u32(12)?;
            trailer(sw)?;
        }
        kind::CGROUP => {
            sw.u64(8)?;
            trailer(sw)?;
        }
        kind::TEXT_POKE => {
            sw.u64(8)?;
            sw.u16(16)?;
            sw.u16(18)?;
            trailer(sw)?;
        }
        kind::CALLCHAIN_DEFERRED => {
            sw.u64(8)?;
            let nr = usize::try_from(sw.u64(16)?).map_err(|_| "callchain nr")?;
            sw.u64s(24, nr)?;
            trailer(sw)?;
        }
        kind::HEADER_ATTR => {
            let body = sw.buf.get(start + HEADER_SIZE..start + len).ok_or("attr record truncated")?;
            let attr = Attr::parse(body, from).ok_or("malformed attr")?;
            let ids = super::evlist::ids_after_attr(body, attr.disk_size(), from);
            let size = swap_attr(sw, HEADER_SIZE, len - HEADER_SIZE)?;
            sw.u64s(HEADER_SIZE + size, (len - HEADER_SIZE - size) / 8)?;
            evlist.push(Evsel { attr, name: None, ids });
        }
        kind::HEADER_EVENT_TYPE => { sw.u64(8)?; },
        kind::HEADER_TRACING_DATA => {
            sw.u32(8)?;
            if len >= 16 {
                sw.u32(12)?;
            }
        }
        kind::HEADER_BUILD_ID => { sw.u32(8)?; },
        kind::FINISHED_ROUND | kind::FINISHED_INIT => {}
        kind::ID_INDEX => sw.u64s(8, (len - 8) / 8)?,
        kind::AUXTRACE_INFO => {
            sw.u32(8)?;
            sw.u32(12)?;
            sw.u64s(16, (len - 16) / 8)?;
        }
        kind::AUXTRACE => {
            sw.u64s(8, 3)?;
            for i in 0..4 {
                sw.u32(32 + 4 * i)?;
            }
        }
        kind::THREAD_MAP => {
            let nr = usize::try_from(sw.u64(8)?).map_err(|_| "thread map nr")?;
            for i in 0..nr {
                sw.u64(16 + 24 * i)?;
            }
        }
        kind::CPU_MAP => swap_cpu_map(sw, 8)?,
        kind::STAT_CONFIG => {
            let nr = usize::try_from(sw.u64(8)?).map_err(|_| "stat config nr")?;
            sw.u64s(16, nr.checked_mul(2).ok_or("stat config nr")?)?;
        }
        kind::STAT => {
            sw.u64(8)?;
            sw.u32(16)?;
            sw.u32(20)?;
            sw.u64s(24, 3)?;
        }
        kind::STAT_ROUND => sw.u64s(8, 2)?,
        kind::EVENT_UPDATE => {
            let ty = sw.u64(8)?;
            sw.u64(16)?;
            match ty {
                1 => { sw.u64(24)?; }, // SCALE: a double
                3 => swap_cpu_map(sw, 24)?,
                _ => {} // UNIT, NAME: strings
            }
        }
        kind::TIME_CONV => sw.u64s(8, (len.min(48) - 8) / 8)?,
        kind::HEADER_FEATURE => {
            let bit = sw.u64(8)?;
            let payload = start + 16..start + len;
            let mut fsw = Sw { buf: &mut sw.buf[payload], from, base: 0 };
            if let Err(e) = swap_feature(&mut fsw, bit as u32) {
                untouched.push(format!("feature record {bit} ({e})"));
            }
        }
        kind::BPF_METADATA => { sw.u64(520)?; },
        kind::COMPRESSED | kind::COMPRESSED2 => {
            return Err("compressed data cannot be swapped in place (decompress it first)".into());
        }
        _ => untouched.push(format!("record type {t}")),
    }
    Ok(())
}

/// Swaps a feature section (the whole of `sw.buf`).
fn swap_feature(sw: &mut Sw<'_>, bit: u32) -> Res<()> {
    let n = sw.buf.len();
    let nstrings = |sw: &mut Sw<'_>, mut p: usize, count: usize| -> Res<usize> {
        for _ in 0..count {
            p = sw.string(p)?;
        }
        Ok(p)
    };
    let end = match bit {
        feat::TRACING_DATA => return Err("tracing data is kept as it is".into()),
        feat::BUILD_ID => {
            let mut p = 0;
            while p + 8 <= n {
                let size = sw.buf.get(p + 6..p + 8).map(|b| sw.from.u16([b[0], b[1]])).ok_or("build id")? as usize;
                if size < 12 {
                    return Err(format!("build-id entry of {size} bytes"));
                }
                sw.u32(p)?;
                sw.u16(p + 4)?;
                sw.u16(p + 6)?;
                sw.u32(p + 8)?;
                p += size;
            }
            p
        }
        feat::HOSTNAME | feat::OSRELEASE | feat::VERSION | feat::ARCH | feat::CPUDESC | feat::CPUID => sw.string(0)?,
        feat::NRCPUS => {
            sw.u32(0)?;
            sw.u32(4)?;
            8
        }
        feat::TOTAL_MEM | feat::CLOCKID | feat::DIR_FORMAT => {
            sw.u64(0)?;
            8
        }
        feat::CMDLINE => {
            let nr = sw.u32(0)? as usize;
            nstrings(sw, 4, nr)?
        }
        feat::EVENT_DESC => {
            let nr = sw.u32(0)? as usize;
            let attr_size = sw.u32(4)? as usize;
            let mut p = 8;
            for _ in 0..nr {
                swap_attr(sw, p, attr_size)?;
                p += attr_size;
                let nr_ids = sw.u32(p)? as usize;
                p = sw.string(p + 4)?;
                sw.u64s(p, nr_ids)?;
                p += nr_ids * 8;
            }
            p
        }
        feat::CPU_TOPOLOGY => {
            // core siblings, thread siblings, then per CPU {core_id,
            // socket_id}, then die siblings and per CPU die_id; the CPU
            // count is what is left divided by the entry size.
            let nr = sw.u32(0)? as usize;
            let mut p = nstrings(sw, 4, nr)?;
            let nr = sw.u32(p)? as usize;
            p = nstrings(sw, p + 4, nr)?;
            // Without the NRCPUS feature at hand: the per-CPU ids are u32s
            // up to the die part, which starts with a count of strings; try
            // every split and keep the one that ends exactly at the end.
            let rest = n.checked_sub(p).ok_or("cpu topology")?;
            let mut done = None;
            for cpus in 1..=rest / 8 {
                let q = p + cpus * 8;
                if q == n {
                    done = Some((cpus, false));
                    break;
                }
                // die part: u32 nr, strings, cpus x u32
                let from = sw.from;
                let Some(nr_dies) = from.read_u32(sw.buf, q) else { continue };
                let mut r = q + 4;
                let mut ok = true;
                for _ in 0..nr_dies.min(4096) {
                    match from.read_u32(sw.buf, r) {
                        Some(l) => r += 4 + l as usize,
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                if ok && r + cpus * 4 == n {
                    done = Some((cpus, true));
                    break;
                }
            }
            let (cpus, dies) = done.ok_or("cpu topology layout not recognised")?;
            for i in 0..cpus * 2 {
                sw.u32(p + 4 * i)?;
            }
            p += cpus * 8;
            if dies {
                let nr = sw.u32(p)? as usize;
                p = nstrings(sw, p + 4, nr)?;
                for i in 0..cpus {
                    sw.u32(p + 4 * i)?;
                }
                p += cpus * 4;
            }
            p
        }
        feat::NUMA_TOPOLOGY => {
            let nr = sw.u32(0)? as usize;
            let mut p = 4;
            for _ in 0..nr {
                sw.u32(p)?;
                sw.u64s(p + 4, 2)?;
                p = sw.string(p + 20)?;
            }
            p
        }
        feat::BRANCH_STACK | feat::STAT => 0,
        feat::PMU_MAPPINGS => {
            let nr = sw.u32(0)? as usize;
            let mut p = 4;
            for _ in 0..nr {
                sw.u32(p)?;
                p = sw.string(p + 4)?;
            }
            p
        }
        feat::GROUP_DESC => {
            let nr = sw.u32(0)? as usize;
            let mut p = 4;
            for _ in 0..nr {
                p = sw.string(p)?;
                sw.u32(p)?;
                sw.u32(p + 4)?;
                p += 8;
            }
            p
        }
        feat::AUXTRACE => {
            sw.u64s(0, n / 8)?;
            n / 8 * 8
        }
        feat::CACHE => {
            sw.u32(0)?;
            let cnt = sw.u32(4)? as usize;
            let mut p = 8;
            for _ in 0..cnt {
                for i in 0..4 {
                    sw.u32(p + 4 * i)?;
                }
                p = nstrings(sw, p + 16, 3)?;
            }
            p
        }
        feat::SAMPLE_TIME => {
            sw.u64s(0, 2)?;
            16
        }
        feat::MEM_TOPOLOGY => {
            sw.u64(0)?;
            sw.u64(8)?;
            let nr = usize::try_from(sw.u64(16)?).map_err(|_| "mem topology nr")?;
            let mut p = 24;
            for _ in 0..nr {
                sw.u64s(p, 2)?;
                let bits = usize::try_from(sw.u64(p + 16)?).map_err(|_| "bitmap")?;
                let words = bits.div_ceil(64);
                sw.u64s(p + 24, words)?;
                p += 24 + words * 8;
            }
            p
        }
        feat::BPF_PROG_INFO | feat::BPF_BTF => {
            if sw.u32(0)? != 0 {
                return Err("BPF program data is not swapped".into());
            }
            4
        }
        feat::COMPRESSED => {
            for i in 0..5 {
                sw.u32(4 * i)?;
            }
            20
        }
        feat::CPU_PMU_CAPS => {
            let nr = sw.u32(0)? as usize;
            nstrings(sw, 4, nr.checked_mul(2).ok_or("caps")?)?
        }
        feat::CLOCK_DATA => {
            sw.u32(0)?;
            sw.u32(4)?;
            sw.u64s(8, 2)?;
            24
        }
        feat::HYBRID_TOPOLOGY => {
            let nr = sw.u32(0)? as usize;
            nstrings(sw, 4, nr.checked_mul(2).ok_or("hybrid")?)?
        }
        feat::PMU_CAPS => {
            let nr_pmu = sw.u32(0)? as usize;
            let mut p = 4;
            for _ in 0..nr_pmu {
                let nr_caps = sw.u32(p)? as usize;
                p = nstrings(sw, p + 4, nr_caps.checked_mul(2).ok_or("caps")?)?;
                p = sw.string(p)?;
            }
            p
        }
        _ if n == 0 => 0,
        _ => return Err("layout not known".into()),
    };
    if end != n {
        return Err(format!("layout ends at {end} of {n} bytes"));
    }
    Ok(())
}

fn err(e: String) -> Error {
    Error::msg(format!("swap: {e}"))
}

/// The byte-swapped form of a perf.data file (file or pipe mode, either
/// byte order). Compressed records make it fail: see [`decompress`].
pub fn swap(input: &[u8]) -> Result<Swapped> {
    let mut out = input.to_vec();
    let mut untouched = Vec::new();
    if let Some(from) = is_pipe_header(input) {
        let mut sw = Sw { buf: &mut out, from, base: 0 };
        sw.u64s(0, 2).map_err(err)?;
        let mut evlist = Evlist::default();
        swap_records(&mut out, input, from, PIPE_HEADER_SIZE, input.len(), &mut evlist, &mut untouched)?;
        return Ok(Swapped { bytes: out, untouched });
    }
    let info = FileInfo::parse(input)?;
    let from = info.header.endian;
    let h: &FileHeader = &info.header;
    {
        let mut sw = Sw { buf: &mut out, from, base: 0 };
        // magic, size, attr_size, 3 sections, 4 feature words: all u64.
        sw.u64s(0, FILE_HEADER_SIZE / 8).map_err(err)?;
    }
    // attrs and their id arrays
    let mut off = h.attrs.offset as usize;
    for ev in &info.evlist.evsels {
        let size = ev.attr.disk_size();
        let mut sw = Sw { buf: &mut out, from, base: off };
        swap_attr(&mut sw, 0, size).map_err(err)?;
        let ids_off = sw.u64(size).map_err(err)? as usize;
        let ids_size = sw.u64(size + 8).map_err(err)? as usize;
        let mut isw = Sw { buf: &mut out, from, base: ids_off };
        isw.u64s(0, ids_size / 8).map_err(err)?;
        off += size + 16;
    }
    let mut evlist = info.evlist.clone();
    swap_records(&mut out, input, from, info.data.start, info.data.end, &mut evlist, &mut untouched)?;
    // feature table and sections
    if h.data.size > 0 {
        let table = info.data.end;
        for (i, bit) in h.feature_bits().enumerate() {
            let mut sw = Sw { buf: &mut out, from, base: table + i * 16 };
            let foff = sw.u64(0).map_err(err)? as usize;
            let fsize = sw.u64(8).map_err(err)? as usize;
            let Some(section) = out.get_mut(foff..foff.saturating_add(fsize)) else {
                return Err(err(format!("feature {bit} lies outside the file")));
            };
            let mut fsw = Sw { buf: section, from, base: 0 };
            if let Err(e) = swap_feature(&mut fsw, bit) {
                // Leave the section as it was.
                out[foff..foff + fsize].copy_from_slice(&input[foff..foff + fsize]);
                untouched.push(format!("feature {bit} ({e})"));
            }
        }
    }
    Ok(Swapped { bytes: out, untouched })
}

fn swap_records(
    out: &mut [u8],
    input: &[u8],
    from: Endian,
    start: usize,
    end: usize,
    evlist: &mut Evlist,
    untouched: &mut Vec<String>,
) -> Result<()> {
    let mut src = RecordSource::Slice { data: input, pos: start, end, endian: from, missing: 0, drop_behind: None, pager: None };
    while let Some(raw) = src.next_record()? {
        let off = raw.offset as usize;
        let size = raw.header.size as usize;
        let mut sw = Sw { buf: &mut out[..off + size], from, base: off };
        swap_record(&mut sw, evlist, untouched).map_err(|e| Error::in_record(raw.offset, raw.header.type_, format!("swap: {e}")))?;
    }
    Ok(())
}

/// The same recording with its compressed records (`perf record -z`)
/// replaced by the records they hold, in the same byte order; the data
/// section grows and the feature sections move along. Files without
/// compressed records come back unchanged.
pub fn decompress(input: &[u8]) -> Result<Vec<u8>> {
    let pipe = is_pipe_header(input);
    let (from, start, end, info) = match pipe {
        Some(e) => (e, PIPE_HEADER_SIZE, input.len(), None),
        None => {
            let info = FileInfo::parse(input)?;
            (info.header.endian, info.data.start, info.data.end, Some(info))
        }
    };
    let mut data = Vec::with_capacity(end - start);
    let mut dec: Option<Decompressor> = None;
    let mut src = RecordSource::Slice { data: input, pos: start, end, endian: from, missing: 0, drop_behind: None, pager: None };
    while let Some(raw) = src.next_record()? {
        let t = raw.header.type_;
        if t == kind::COMPRESSED || t == kind::COMPRESSED2 {
            let body = raw.bytes.get(HEADER_SIZE..raw.header.size as usize).unwrap_or(&[]);
            let payload = compressed::payload(t, body, from).ok_or_else(|| Error::in_record(raw.offset, t, "bad compressed payload"))?;
            if dec.is_none() {
                dec = Some(Decompressor::new(1 << 30).map_err(|e| Error::msg(e.0))?);
            }
            let d = dec.as_mut().ok_or_else(|| Error::msg("decompressor"))?;
            data.extend(d.decompress(payload, from).map_err(|e| Error::in_record(raw.offset, t, e.0))?);
        } else {
            data.extend_from_slice(&raw.bytes);
        }
    }
    let Some(info) = info else {
        let mut out = input[..PIPE_HEADER_SIZE].to_vec();
        out.extend(data);
        return Ok(out);
    };
    let h = &info.header;
    let delta = data.len() as i64 - (end - start) as i64;
    let mut out = input[..start].to_vec();
    out.extend(&data);
    out.extend_from_slice(&input[end..]);
    let put = |out: &mut Vec<u8>, at: usize, v: u64| {
        let b = match from {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        out[at..at + 8].copy_from_slice(&b);
    };
    put(&mut out, 48, data.len() as u64);
    if h.data.size > 0 {
        let table = start + data.len();
        for i in 0..h.feature_bits().count() {
            let at = table + i * 16;
            let foff = from.read_u64(&out, at).ok_or_else(|| Error::msg("feature table"))?;
            if foff >= end as u64 {
                put(&mut out, at, (foff as i64 + delta) as u64);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf_data::writer::{AttrEntry, FileWriter, Put, set_attr_flags};

    fn file(e: Endian) -> Vec<u8> {
        let p = Put(e);
        let mut raw = Vec::new();
        p.u32(&mut raw, 1);
        p.u32(&mut raw, 136);
        raw.resize(24, 0);
        p.u64(&mut raw, st::IP | st::TID | st::TIME | st::CPU | st::CALLCHAIN);
        raw.resize(136, 0);
        set_attr_flags(&mut raw, e, crate::perf_data::attr::flag::SAMPLE_ID_ALL);
        let mut data = Vec::new();
        // A sample: ip, pid/tid, time, cpu/res, callchain of 2.
        p.header(&mut data, kind::SAMPLE, 2, 8 + 8 * 7);
        p.u64(&mut data, 0x1234);
        p.u32(&mut data, 10);
        p.u32(&mut data, 11);
        p.u64(&mut data, 99);
        p.u32(&mut data, 1);
        p.u32(&mut data, 0);
        p.u64(&mut data, 2);
        p.u64(&mut data, 0xffff_ffff_ffff_ff80);
        p.u64(&mut data, 0x5678);
        // A COMM with its trailer (tid, time, cpu).
        p.header(&mut data, kind::COMM, 0, 8 + 8 + 8 + 24);
        p.u32(&mut data, 10);
        p.u32(&mut data, 11);
        data.extend(b"work\0\0\0\0");
        p.u32(&mut data, 10);
        p.u32(&mut data, 11);
        p.u64(&mut data, 98);
        p.u32(&mut data, 1);
        p.u32(&mut data, 0);
        let mut nrcpus = Vec::new();
        p.u32(&mut nrcpus, 2);
        p.u32(&mut nrcpus, 4);
        FileWriter { endian: e, attrs: vec![AttrEntry { raw, ids: vec![5] }], data, features: vec![(feat::NRCPUS, nrcpus)] }.to_bytes()
    }

    #[test]
    fn swaps_a_small_file_to_what_the_other_order_writes() {
        let le = file(Endian::Little);
        let be = file(Endian::Big);
        let s = swap(&le).unwrap();
        assert!(s.untouched.is_empty(), "{:?}", s.untouched);
        assert!(s.bytes == be, "LE file swapped is not the BE file");
        assert!(swap(&be).unwrap().bytes == le);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut le = file(Endian::Little);
        let n = le.len();
        le[n / 2] ^= 0xff;
        let _ = swap(&le);
        assert!(swap(&le[..100]).is_err());
        assert!(swap(&[0u8; 16]).is_err());
    }
}

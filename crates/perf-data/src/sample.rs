//! `PERF_RECORD_SAMPLE` bodies and the `sample_id` trailer of other records.
//!
//! A sample body is a sequence of optional fields; which ones are present
//! is given by the event's `sample_type`, always in this order:
//!
//! ```text
//! IDENTIFIER u64 | IP u64 | TID u32 pid,u32 tid | TIME u64 | ADDR u64 | ID u64
//! STREAM_ID u64 | CPU u32 cpu,u32 res | PERIOD u64 | READ (read_format)
//! CALLCHAIN u64 nr, u64 ips[nr] | RAW u32 size, u8 data[size] (padded to 8)
//! BRANCH_STACK u64 nr, [u64 hw_idx], {u64 from,to,flags}[nr], [u64 counters[nr]]
//! REGS_USER u64 abi, u64 regs[popcount(mask)] if abi != 0
//! STACK_USER u64 size, u8 data[size], u64 dyn_size if size != 0
//! WEIGHT|WEIGHT_STRUCT u64 | DATA_SRC u64 | TRANSACTION u64
//! REGS_INTR u64 abi, u64 regs[..] | PHYS_ADDR u64 | CGROUP u64
//! DATA_PAGE_SIZE u64 | CODE_PAGE_SIZE u64 | AUX u64 size, u8 data[size]
//! ```
//!
//! Non-sample records of an event with `sample_id_all` end with a trailer of
//! `TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER` (each when sampled), read here
//! by [`SampleId::parse_trailer`].

use super::attr::{Attr, branch_sample_type, read_format, sample_type::*};
use super::bytes::{Cursor, Endian, Truncated, U64Array};

/// Callchain context markers (`PERF_CONTEXT_*`): entries at or above
/// [`context::MAX`] are not addresses but switch the address space of the
/// entries after them.
pub mod context {
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    /// The user part of the callchain comes later, in a CALLCHAIN_DEFERRED
    /// record; the next (last) entry is the cookie that names it.
    pub const USER_DEFERRED: u64 = -640i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    /// Values at or above this are markers, not addresses.
    pub const MAX: u64 = -4095i64 as u64;
}

/// A decoded sample. Variable-length parts borrow from the record.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample<'a> {
    pub id: Option<u64>,
    pub ip: u64,
    pub pid: i32,
    pub tid: i32,
    pub time: u64,
    pub addr: u64,
    pub stream_id: u64,
    pub cpu: u32,
    pub period: u64,
    pub callchain: Option<U64Array<'a>>,
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_BRANCH_STACK`, if sampled.
    pub branch_stack: Option<BranchStack<'a>>,
    /// The whole WEIGHT word, or WEIGHT_STRUCT's `var1_dw` (low 32 bits).
    pub weight: u64,
    /// WEIGHT_STRUCT's `var2_w` (bits 32..48): the instruction latency.
    pub ins_lat: u16,
    /// WEIGHT_STRUCT's `var3_w` (bits 48..64): retire latency (Intel) or
    /// pipeline stage cycles (POWER); perf prints it as `retire_lat`.
    pub retire_lat: u16,
    pub data_src: u64,
    pub transaction: u64,
    pub phys_addr: u64,
    pub cgroup: u64,
    pub data_page_size: u64,
    pub code_page_size: u64,
    /// `PERF_SAMPLE_REGS_USER`, if sampled.
    pub user_regs: Option<Regs<'a>>,
    /// `PERF_SAMPLE_REGS_INTR`, if sampled: the registers at the
    /// interrupt (`sample_regs_intr` gives the mask), same layout.
    pub intr_regs: Option<Regs<'a>>,
    /// `PERF_SAMPLE_STACK_USER`, if sampled: the valid part of the copy
    /// (`dyn_size` bytes from the sampled stack pointer up; empty when the
    /// kernel copied nothing).
    pub user_stack: Option<&'a [u8]>,
    /// Where STACK_USER's size word lies in the sample's body (perf's
    /// `user_stack.offset` is this plus the 8-byte record header).
    pub user_stack_at: usize,
    /// PERF_SAMPLE_READ's counter values.
    pub read: Option<ReadValues<'a>>,
}

/// A sample's registers (`PERF_SAMPLE_REGS_USER`, `PERF_SAMPLE_REGS_INTR`):
/// the ABI word (`PERF_SAMPLE_REGS_ABI_*`; 0, "none", for a task without
/// user state, a kernel thread) and, unless it is 0, one value per bit of
/// the event's `sample_regs_user` (`sample_regs_intr`) mask, lowest bit
/// first.
#[derive(Debug, Clone, Copy)]
pub struct Regs<'a> {
    pub abi: u64,
    /// The event's register mask (0 when `abi` is 0: no values).
    pub mask: u64,
    pub values: U64Array<'a>,
}

impl Regs<'_> {
    /// perf's `perf_reg_value`: the value of register `id` (perf's
    /// numbering for the recording's architecture), if the mask has it.
    pub fn get(&self, id: u32) -> Option<u64> {
        if id >= 64 || self.mask & (1 << id) == 0 {
            return None;
        }
        self.values.get((self.mask & ((1u64 << id) - 1)).count_ones() as usize)
    }

    /// Every register of the mask with its value, lowest id first (0 for
    /// a value the record does not hold).
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let mut bits = self.mask;
        (0..).map_while(move |i| {
            let id = (bits != 0).then(|| bits.trailing_zeros())?;
            bits &= bits - 1;
            Some((id, self.values.get(i).unwrap_or(0)))
        })
    }
}

/// A sample's branch stack (`PERF_SAMPLE_BRANCH_STACK`): the last branches
/// taken, most recent first, as the hardware (LBR, BRBE) recorded them.
///
/// ```text
/// u64 nr | [u64 hw_idx] | { u64 from; u64 to; u64 flags } entries[nr] | [u64 counters[nr]]
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BranchStack<'a> {
    /// The hardware's index of the most recent entry (`PERF_SAMPLE_BRANCH_HW_INDEX`).
    pub hw_idx: Option<u64>,
    /// `from, to, flags` of each entry.
    entries: U64Array<'a>,
    /// One occurrence counter word per entry (`PERF_SAMPLE_BRANCH_COUNTERS`).
    pub counters: Option<U64Array<'a>>,
    /// The flags words are in a big-endian file's bit-field layout.
    big_endian: bool,
}

impl<'a> BranchStack<'a> {
    pub fn len(&self) -> usize {
        self.entries.len() / 3
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries, most recent first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = BranchEntry> + 'a {
        let (e, big) = (self.entries, self.big_endian);
        (0..e.len() / 3).map(move |i| {
            let word = |k: usize| e.get(3 * i + k).unwrap_or(0);
            let flags = if big { BranchFlags::from_big_endian(word(2)) } else { BranchFlags(word(2)) };
            BranchEntry { from: word(0), to: word(1), flags }
        })
    }
}

/// One branch: where it jumped from and to, and what the hardware says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchEntry {
    pub from: u64,
    pub to: u64,
    pub flags: BranchFlags,
}

/// The flags word of a branch entry (`struct perf_branch_entry`'s bit
/// fields, in the little-endian layout, lowest bit first):
///
/// ```text
/// bit  0 mispred   1 predicted   2 in_tx   3 abort   4..20 cycles
///     20..24 type  24..26 spec  26..30 new_type  30..33 priv  33 not_taken
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BranchFlags(pub u64);

impl BranchFlags {
    /// The bit fields (position, width) of the little-endian layout; a
    /// big-endian kernel allocates them from the top bit down.
    const FIELDS: [(u32, u32); 10] = [(0, 1), (1, 1), (2, 1), (3, 1), (4, 16), (20, 4), (24, 2), (26, 4), (30, 3), (33, 31)];

    /// perf's `evsel__bitfield_swap_branch_flags`: each field moved from
    /// its big-endian place (counted from the top) to its little-endian one.
    pub fn from_big_endian(v: u64) -> BranchFlags {
        let mut out = 0;
        for (pos, size) in Self::FIELDS {
            let mask = if size == 64 { u64::MAX } else { (1u64 << size) - 1 };
            out |= ((v >> (64 - pos - size)) & mask) << pos;
        }
        BranchFlags(out)
    }

    fn bits(self, pos: u32, size: u32) -> u64 {
        (self.0 >> pos) & ((1 << size) - 1)
    }

    pub fn mispred(self) -> bool {
        self.bits(0, 1) != 0
    }

    pub fn predicted(self) -> bool {
        self.bits(1, 1) != 0
    }

    pub fn in_tx(self) -> bool {
        self.bits(2, 1) != 0
    }

    pub fn abort(self) -> bool {
        self.bits(3, 1) != 0
    }

    /// Cycles since the previous branch (0: not known).
    pub fn cycles(self) -> u16 {
        self.bits(4, 16) as u16
    }

    /// `PERF_BR_*` (15, `PERF_BR_EXTEND_ABI`: see [`BranchFlags::new_type`]).
    pub fn branch_type(self) -> u8 {
        self.bits(20, 4) as u8
    }

    /// `PERF_BR_SPEC_*`: speculation outcome.
    pub fn spec(self) -> u8 {
        self.bits(24, 2) as u8
    }

    /// `PERF_BR_NEW_*`, the type when [`BranchFlags::branch_type`] is 15.
    pub fn new_type(self) -> u8 {
        self.bits(26, 4) as u8
    }

    /// `PERF_BR_PRIV_*`: privilege level of the target.
    pub fn privilege(self) -> u8 {
        self.bits(30, 3) as u8
    }

    /// The conditional branch was not taken (ARM BRBE).
    pub fn not_taken(self) -> bool {
        self.bits(33, 1) != 0
    }
}

/// The counters of PERF_SAMPLE_READ (layout by the attr's `read_format`):
///
/// ```text
/// one counter:          { value; [time_enabled]; [time_running]; [id]; [lost] }
/// PERF_FORMAT_GROUP:    { nr; [time_enabled]; [time_running];
///                         { value; [id]; [lost] } values[nr] }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ReadValues<'a> {
    /// One entry per counter, `stride` words each, the value first.
    entries: U64Array<'a>,
    stride: usize,
    /// Where the id is in an entry (PERF_FORMAT_ID).
    id_at: Option<usize>,
    /// Where the lost count is in an entry (PERF_FORMAT_LOST).
    lost_at: Option<usize>,
    /// PERF_FORMAT_GROUP.
    pub group: bool,
    /// PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING.
    pub time_enabled: Option<u64>,
    pub time_running: Option<u64>,
}

impl<'a> ReadValues<'a> {
    /// `(id, value)` of each counter (id `None` without PERF_FORMAT_ID).
    pub fn iter(&self) -> impl Iterator<Item = (Option<u64>, u64)> + 'a {
        let (entries, stride, id_at) = (self.entries, self.stride, self.id_at);
        (0..entries.len() / stride).map(move |i| {
            let at = i * stride;
            (id_at.and_then(|k| entries.get(at + k)), entries.get(at).unwrap_or(0))
        })
    }

    /// The lost count of each counter (`None` without PERF_FORMAT_LOST),
    /// in the order of [`ReadValues::iter`].
    pub fn lost(&self) -> impl Iterator<Item = Option<u64>> + 'a {
        let (entries, stride, lost_at) = (self.entries, self.stride, self.lost_at);
        (0..entries.len() / stride).map(move |i| lost_at.and_then(|k| entries.get(i * stride + k)))
    }
}

/// Why a sample body could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleError {
    /// A field ran past the end of the record.
    Truncated(&'static str),
    /// `STACK_USER`'s `dyn_size` claims more bytes than the copy holds
    /// (perf: "user stack dump failure", and the sample is refused).
    StackDumpFailure { size: u64, dyn_size: u64 },
}

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleError::Truncated(field) => write!(f, "sample field {field} runs past the end of the record"),
            SampleError::StackDumpFailure { size, dyn_size } => {
                write!(f, "user stack dump failure: STACK_USER's dyn_size {dyn_size} exceeds its {size}-byte copy")
            }
        }
    }
}

impl SampleError {
    /// The field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            SampleError::Truncated(field) => field,
            SampleError::StackDumpFailure { .. } => "STACK_USER",
        }
    }
}

fn trunc(what: &'static str) -> impl FnOnce(Truncated) -> SampleError {
    move |_| SampleError::Truncated(what)
}

impl<'a> Sample<'a> {
    /// Decodes a sample body (the record without its 8-byte header).
    pub fn parse(body: &'a [u8], attr: &Attr, endian: Endian) -> Result<Sample<'a>, SampleError> {
        match Sample::parse_fixed(body, attr, endian) {
            Some(s) => Ok(s),
            None => Sample::parse_fields(body, attr, endian),
        }
    }

    /// [`Sample::parse`] field by field, for any layout.
    fn parse_fields(body: &'a [u8], attr: &Attr, endian: Endian) -> Result<Sample<'a>, SampleError> {
        let st = attr.sample_type;
        let mut c = Cursor::new(body, endian);
        // Without PERIOD every sample stands for the fixed sample_period
        // (`perf record -c N`), which perf prints as the period.
        let mut s = Sample { pid: -1, tid: -1, cpu: u32::MAX, time: u64::MAX, period: attr.sample_period, ..Sample::default() };
        macro_rules! u64f {
            ($name:literal) => {
                c.u64().map_err(trunc($name))?
            };
        }
        if st & IDENTIFIER != 0 {
            s.id = Some(u64f!("IDENTIFIER"));
        }
        if st & IP != 0 {
            s.ip = u64f!("IP");
        }
        if st & TID != 0 {
            s.pid = c.u32().map_err(trunc("TID"))? as i32;
            s.tid = c.u32().map_err(trunc("TID"))? as i32;
        }
        if st & TIME != 0 {
            s.time = u64f!("TIME");
        }
        if st & ADDR != 0 {
            s.addr = u64f!("ADDR");
        }
        if st & ID != 0 {
            s.id = Some(u64f!("ID"));
        }
        if st & STREAM_ID != 0 {
            s.stream_id = u64f!("STREAM_ID");
        }
        if st & CPU != 0 {
            s.cpu = c.u32().map_err(trunc("CPU"))?;
            c.skip(4).map_err(trunc("CPU"))?;
        }
        if st & PERIOD != 0 {
            s.period = u64f!("PERIOD");
        }
        if st & READ != 0 {
            s.read = Some(read_values(&mut c, attr.read_format).map_err(trunc("READ"))?);
        }
        if st & CALLCHAIN != 0 {
            let nr = u64f!("CALLCHAIN");
            s.callchain = Some(c.u64_array(nr).map_err(trunc("CALLCHAIN"))?);
        }
        if st & RAW != 0 {
            // u32 size + data, the pair padded to a multiple of 8 by the kernel.
            let size = c.u32().map_err(trunc("RAW"))? as usize;
            s.raw = Some(c.bytes(size).map_err(trunc("RAW"))?);
            let pad = (8 - (4 + size) % 8) % 8;
            // perf tolerates a missing pad at the very end; so do we.
            let _ = c.skip(pad.min(c.remaining()));
        }
        if st & BRANCH_STACK != 0 {
            s.branch_stack = Some(branch_stack(&mut c, attr.branch_sample_type).map_err(trunc("BRANCH_STACK"))?);
        }
        if st & REGS_USER != 0 {
            s.user_regs = Some(regs(&mut c, attr.sample_regs_user).map_err(trunc("REGS_USER"))?);
        }
        if st & STACK_USER != 0 {
            s.user_stack_at = c.pos();
            let size = u64f!("STACK_USER");
            let n = usize::try_from(size).map_err(|_| SampleError::Truncated("STACK_USER"))?;
            let data = c.bytes(n).map_err(trunc("STACK_USER"))?;
            let mut valid: &[u8] = &[];
            if size != 0 {
                let dyn_size = u64f!("STACK_USER");
                if dyn_size > size {
                    return Err(SampleError::StackDumpFailure { size, dyn_size });
                }
                valid = &data[..dyn_size as usize];
            }
            s.user_stack = Some(valid);
        }
        if st & (WEIGHT | WEIGHT_STRUCT) != 0 {
            let w = u64f!("WEIGHT");
            if st & WEIGHT_STRUCT != 0 {
                s.weight = w & 0xffff_ffff;
                s.ins_lat = (w >> 32) as u16;
                s.retire_lat = (w >> 48) as u16;
            } else {
                s.weight = w;
            }
        }
        if st & DATA_SRC != 0 {
            s.data_src = u64f!("DATA_SRC");
        }
        if st & TRANSACTION != 0 {
            s.transaction = u64f!("TRANSACTION");
        }
        if st & REGS_INTR != 0 {
            s.intr_regs = Some(regs(&mut c, attr.sample_regs_intr).map_err(trunc("REGS_INTR"))?);
        }
        if st & PHYS_ADDR != 0 {
            s.phys_addr = u64f!("PHYS_ADDR");
        }
        if st & CGROUP != 0 {
            s.cgroup = u64f!("CGROUP");
        }
        if st & DATA_PAGE_SIZE != 0 {
            s.data_page_size = u64f!("DATA_PAGE_SIZE");
        }
        if st & CODE_PAGE_SIZE != 0 {
            s.code_page_size = u64f!("CODE_PAGE_SIZE");
        }
        if st & AUX != 0 {
            let size = u64f!("AUX");
            let n = usize::try_from(size).map_err(|_| SampleError::Truncated("AUX"))?;
            c.skip(n).map_err(trunc("AUX"))?;
        }
        Ok(s)
    }

    /// [`Sample::parse`] for the common layouts, little-endian: fields of
    /// one word each, then the callchain, then the user registers and
    /// stack (`--call-graph dwarf`), then fields of one word each again:
    ///
    /// ```text
    /// [IDENTIFIER] [IP] [pid,tid] [TIME] [ADDR] [ID] [STREAM_ID] [cpu,res] [PERIOD]
    /// [nr, ips[nr]] [abi, regs[popcount(mask)] (none if abi is 0)]
    /// [size, data[size], dyn_size (absent if size is 0)]
    /// [WEIGHT or WEIGHT_STRUCT] [DATA_SRC] [TRANSACTION] [PHYS_ADDR] [CGROUP]
    /// [DATA_PAGE_SIZE] [CODE_PAGE_SIZE]
    /// ```
    ///
    /// `None` for any other layout, or for a body too short for it or
    /// otherwise wrong (the general decoding then names the field that
    /// runs past the end, or refuses the stack copy).
    #[inline]
    fn parse_fixed(body: &'a [u8], attr: &Attr, endian: Endian) -> Option<Sample<'a>> {
        const WORDS: u64 = IDENTIFIER | IP | TID | TIME | ADDR | ID | STREAM_ID | CPU | PERIOD;
        const LAST_WORDS: u64 = WEIGHT | WEIGHT_STRUCT | DATA_SRC | TRANSACTION | PHYS_ADDR | CGROUP | DATA_PAGE_SIZE | CODE_PAGE_SIZE;
        let st = attr.sample_type;
        if st & !(WORDS | CALLCHAIN | REGS_USER | STACK_USER | LAST_WORDS) != 0 || endian != Endian::Little {
            return None;
        }
        let n = (st & WORDS).count_ones() as usize;
        let (words, rest) = body.split_at_checked(n * 8)?;
        let mut words = U64Array::new(words, endian).iter();
        let mut s = Sample { pid: -1, tid: -1, cpu: u32::MAX, time: u64::MAX, period: attr.sample_period, ..Sample::default() };
        let mut word = |bit: u64| if st & bit != 0 { words.next() } else { None };
        if let Some(v) = word(IDENTIFIER) {
            s.id = Some(v);
        }
        if let Some(v) = word(IP) {
            s.ip = v;
        }
        if let Some(v) = word(TID) {
            s.pid = v as u32 as i32;
            s.tid = (v >> 32) as u32 as i32;
        }
        if let Some(v) = word(TIME) {
            s.time = v;
        }
        if let Some(v) = word(ADDR) {
            s.addr = v;
        }
        if let Some(v) = word(ID) {
            s.id = Some(v);
        }
        if let Some(v) = word(STREAM_ID) {
            s.stream_id = v;
        }
        if let Some(v) = word(CPU) {
            s.cpu = v as u32;
        }
        if let Some(v) = word(PERIOD) {
            s.period = v;
        }
        let word = |b: &[u8; 8]| u64::from_le_bytes(*b);
        let mut rest = rest;
        if st & CALLCHAIN != 0 {
            let (nr, ips) = rest.split_first_chunk::<8>()?;
            let len = usize::try_from(word(nr)).ok()?.checked_mul(8)?;
            s.callchain = Some(U64Array::new(ips.get(..len)?, endian));
            rest = &ips[len..];
        }
        if st & REGS_USER != 0 {
            let (abi, values) = rest.split_first_chunk::<8>()?;
            let abi = word(abi);
            // (As the field-by-field reading: no values for ABI 0.)
            let (mask, len) = if abi == 0 { (0, 0) } else { (attr.sample_regs_user, attr.sample_regs_user.count_ones() as usize * 8) };
            s.user_regs = Some(Regs { abi, mask, values: if abi == 0 { U64Array::EMPTY } else { U64Array::new(values.get(..len)?, endian) } });
            rest = &values[len..];
        }
        if st & STACK_USER != 0 {
            s.user_stack_at = body.len() - rest.len();
            let (size, data) = rest.split_first_chunk::<8>()?;
            let size = word(size);
            let data = data.get(..usize::try_from(size).ok()?)?;
            let mut valid: &[u8] = &[];
            if size != 0 {
                let dyn_size = word(rest.get(8 + data.len()..)?.first_chunk::<8>()?);
                if dyn_size > size {
                    return None;
                }
                valid = &data[..dyn_size as usize];
                rest = &rest[8 + data.len() + 8..];
            } else {
                rest = &rest[8..];
            }
            s.user_stack = Some(valid);
        }
        if st & LAST_WORDS != 0 {
            // WEIGHT and WEIGHT_STRUCT share one word.
            const OTHERS: [u64; 6] = [DATA_SRC, TRANSACTION, PHYS_ADDR, CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE];
            let weight = st & (WEIGHT | WEIGHT_STRUCT) != 0;
            let n = usize::from(weight) + OTHERS.iter().filter(|&&b| st & b != 0).count();
            let mut words = U64Array::new(rest.get(..n * 8)?, endian).iter();
            if weight {
                let w = words.next()?;
                (s.weight, s.ins_lat, s.retire_lat) = if st & WEIGHT_STRUCT != 0 { (w & 0xffff_ffff, (w >> 32) as u16, (w >> 48) as u16) } else { (w, 0, 0) };
            }
            for (bit, field) in OTHERS.into_iter().zip([&mut s.data_src, &mut s.transaction, &mut s.phys_addr, &mut s.cgroup, &mut s.data_page_size, &mut s.code_page_size]) {
                if st & bit != 0 {
                    *field = words.next()?;
                }
            }
        }
        Some(s)
    }

    /// Only the timestamp of a sample body (perf orders events by it before
    /// decoding anything else).
    pub fn parse_time(body: &[u8], attr: &Attr, endian: Endian) -> Option<u64> {
        if attr.sample_type & TIME == 0 {
            return None;
        }
        let mut words = 0;
        for bit in [IDENTIFIER, IP, TID] {
            if attr.sample_type & bit != 0 {
                words += 1;
            }
        }
        endian.read_u64(body, words * 8)
    }
}

/// `{ u64 nr; [u64 hw_idx]; {u64 from, to, flags}[nr]; [u64 counters[nr]] }`
/// (hw_idx with `PERF_SAMPLE_BRANCH_HW_INDEX`, the counters with
/// `PERF_SAMPLE_BRANCH_COUNTERS`).
fn branch_stack<'a>(c: &mut Cursor<'a>, branch_type: u64) -> Result<BranchStack<'a>, Truncated> {
    let nr = c.u64()?;
    let hw_idx = if branch_type & branch_sample_type::HW_INDEX != 0 { Some(c.u64()?) } else { None };
    let entries = c.u64_array(nr.checked_mul(3).ok_or(Truncated)?)?;
    let counters = if branch_type & branch_sample_type::COUNTERS != 0 { Some(c.u64_array(nr)?) } else { None };
    Ok(BranchStack { hw_idx, entries, counters, big_endian: c.endian() == Endian::Big })
}

fn read_values<'a>(c: &mut Cursor<'a>, rf: u64) -> Result<ReadValues<'a>, Truncated> {
    let times = (rf & read_format::TOTAL_TIME_ENABLED != 0) as usize + (rf & read_format::TOTAL_TIME_RUNNING != 0) as usize;
    let has_id = rf & read_format::ID != 0;
    let has_lost = rf & read_format::LOST != 0;
    let per_value = 1 + has_id as usize + has_lost as usize;
    // The times, when read, are in this order.
    let time = |t: &[u64], bit: u64| {
        let k = (bit == read_format::TOTAL_TIME_RUNNING && rf & read_format::TOTAL_TIME_ENABLED != 0) as usize;
        (rf & bit != 0).then(|| t[k])
    };
    if rf & read_format::GROUP != 0 {
        let nr = c.u64()?;
        let mut t = [0u64; 2];
        for v in t.iter_mut().take(times) {
            *v = c.u64()?;
        }
        let words = nr.checked_mul(per_value as u64).ok_or(Truncated)?;
        let entries = c.u64_array(words)?;
        Ok(ReadValues {
            entries,
            stride: per_value,
            id_at: has_id.then_some(1),
            lost_at: has_lost.then_some(1 + has_id as usize),
            group: true,
            time_enabled: time(&t, read_format::TOTAL_TIME_ENABLED),
            time_running: time(&t, read_format::TOTAL_TIME_RUNNING),
        })
    } else {
        let entries = c.u64_array((times + per_value) as u64)?;
        let t = [entries.get(1).unwrap_or(0), entries.get(2).unwrap_or(0)];
        Ok(ReadValues {
            entries,
            stride: times + per_value,
            id_at: has_id.then_some(1 + times),
            lost_at: has_lost.then_some(1 + times + has_id as usize),
            group: false,
            time_enabled: time(&t, read_format::TOTAL_TIME_ENABLED),
            time_running: time(&t, read_format::TOTAL_TIME_RUNNING),
        })
    }
}

/// `{ u64 abi; u64 regs[popcount(mask)] }`, the values only when the ABI
/// is not 0 ("none": a kernel thread has no user registers).
fn regs<'a>(c: &mut Cursor<'a>, mask: u64) -> Result<Regs<'a>, Truncated> {
    let abi = c.u64()?;
    if abi == 0 {
        return Ok(Regs { abi, mask: 0, values: U64Array::EMPTY });
    }
    Ok(Regs { abi, mask, values: c.u64_array(mask.count_ones().into())? })
}

/// The `sample_id` fields that trail non-sample records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleId {
    pub pid: i32,
    pub tid: i32,
    /// `u64::MAX` when the event does not sample time.
    pub time: u64,
    pub id: Option<u64>,
    pub stream_id: u64,
    pub cpu: u32,
}

impl Default for SampleId {
    fn default() -> Self {
        SampleId { pid: -1, tid: -1, time: u64::MAX, id: None, stream_id: 0, cpu: u32::MAX }
    }
}

impl SampleId {
    /// Reads the trailer at the end of `body` (a record without its header).
    /// Returns the default (nothing known) if the event has no trailer or
    /// the record is too short to hold one.
    pub fn parse_trailer(body: &[u8], attr: &Attr, endian: Endian) -> SampleId {
        let mut s = SampleId::default();
        let size = attr.id_hdr_size();
        if size == 0 || size > body.len() {
            return s;
        }
        let st = attr.sample_type;
        let mut c = Cursor::new(&body[body.len() - size..], endian);
        // The trailer was sized from the same bits, so these reads cannot fail.
        if st & TID != 0 {
            s.pid = c.u32().unwrap_or(u32::MAX) as i32;
            s.tid = c.u32().unwrap_or(u32::MAX) as i32;
        }
        if st & TIME != 0 {
            s.time = c.u64().unwrap_or(u64::MAX);
        }
        if st & ID != 0 {
            s.id = c.u64().ok();
        }
        if st & STREAM_ID != 0 {
            s.stream_id = c.u64().unwrap_or(0);
        }
        if st & CPU != 0 {
            s.cpu = c.u32().unwrap_or(u32::MAX);
        }
        let _ = c.skip(4.min(c.remaining()));
        if st & IDENTIFIER != 0 {
            s.id = c.u64().ok();
        }
        s
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::attr::flag;

    /// Little-endian bytes of 64-bit words.
    pub(crate) fn le(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn read_values_of_one_counter_and_of_a_group() {
        use read_format::{GROUP, ID, LOST, TOTAL_TIME_ENABLED, TOTAL_TIME_RUNNING};
        let one = Attr { sample_type: READ, read_format: TOTAL_TIME_ENABLED | ID | LOST, ..Attr::default() };
        let b = le(&[42, 1000, 7, 0]);
        let s = Sample::parse(&b, &one, Endian::Little).unwrap();
        let r = s.read.unwrap();
        assert!(!r.group);
        assert_eq!(r.iter().collect::<Vec<_>>(), [(Some(7), 42)]);
        assert_eq!((r.time_enabled, r.time_running, r.lost().collect::<Vec<_>>()), (Some(1000), None, vec![Some(0)]));
        let both = Attr { sample_type: READ, read_format: GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID | LOST, ..Attr::default() };
        let b = le(&[1, 50, 40, 9, 901, 3]);
        let s = Sample::parse(&b, &both, Endian::Little).unwrap();
        let r = s.read.unwrap();
        assert_eq!((r.time_enabled, r.time_running), (Some(50), Some(40)));
        assert_eq!((r.iter().collect::<Vec<_>>(), r.lost().collect::<Vec<_>>()), (vec![(Some(901), 9)], vec![Some(3)]));
        let group = Attr { sample_type: READ | IP, read_format: GROUP | ID, ..Attr::default() };
        let b = le(&[0x99, 3, 10, 101, 20, 102, 30, 103]);
        let s = Sample::parse(&b, &group, Endian::Little).unwrap();
        assert_eq!(s.read.unwrap().iter().collect::<Vec<_>>(), [(Some(101), 10), (Some(102), 20), (Some(103), 30)]);
        // A count of members the record cannot hold is a truncation.
        assert!(Sample::parse(&le(&[0x99, u64::MAX / 2, 10, 101]), &group, Endian::Little).is_err());
        let no_ids = Attr { sample_type: READ, read_format: GROUP, ..Attr::default() };
        let b = le(&[2, 5, 6]);
        let s = Sample::parse(&b, &no_ids, Endian::Little).unwrap();
        assert_eq!(s.read.unwrap().iter().collect::<Vec<_>>(), [(None, 5), (None, 6)]);
    }

    #[test]
    fn branch_stacks_and_weight_structs() {
        use branch_sample_type::{COUNTERS, HW_INDEX};
        let attr = Attr { sample_type: IP | BRANCH_STACK | WEIGHT_STRUCT, branch_sample_type: HW_INDEX, ..Attr::default() };
        let flags = 1 | 1 << 2 | 37 << 4 | 15 << 20 | 2 << 24 | 5 << 26 | 1 << 33;
        let body = le(&[0x10, 2, 7, 0xa, 0xb, flags, 0xc, 0xd, 0, 0x2222_1111_0000_0064]);
        let s = Sample::parse(&body, &attr, Endian::Little).unwrap();
        let b = s.branch_stack.unwrap();
        assert_eq!((b.len(), b.hw_idx, b.counters.is_none()), (2, Some(7), true));
        let e: Vec<BranchEntry> = b.iter().collect();
        assert_eq!((e[0].from, e[0].to, e[1].from, e[1].to, e[1].flags), (0xa, 0xb, 0xc, 0xd, BranchFlags(0)));
        let f = e[0].flags;
        assert!(f.mispred() && !f.predicted() && f.in_tx() && !f.abort() && f.not_taken());
        assert_eq!((f.cycles(), f.branch_type(), f.spec(), f.new_type(), f.privilege()), (37, 15, 2, 5, 0));
        assert_eq!((s.weight, s.ins_lat, s.retire_lat), (100, 0x1111, 0x2222));
        // Without HW_INDEX, with counters; a plain WEIGHT word is the weight.
        let attr = Attr { sample_type: BRANCH_STACK | WEIGHT, branch_sample_type: COUNTERS, ..Attr::default() };
        let body = le(&[1, 0xa, 0xb, 0, 9, 1 << 40]);
        let s = Sample::parse(&body, &attr, Endian::Little).unwrap();
        let b = s.branch_stack.unwrap();
        assert_eq!((b.len(), b.hw_idx, b.counters.map(|c| c.get(0))), (1, None, Some(Some(9))));
        assert_eq!((s.weight, s.ins_lat), (1 << 40, 0));
        // An entry count the record cannot hold is a truncation.
        assert_eq!(Sample::parse(&le(&[u64::MAX / 2, 0xa]), &attr, Endian::Little).unwrap_err(), SampleError::Truncated("BRANCH_STACK"));
    }

    #[test]
    fn big_endian_branch_flags_move_to_the_little_endian_layout() {
        // A big-endian kernel allocates bit fields from the top: mispred
        // is bit 63, cycles bits 44..60, type 40..44.
        let be = 1u64 << 63 | 37 << 44 | 6 << 40;
        let f = BranchFlags::from_big_endian(be);
        assert!(f.mispred() && !f.predicted());
        assert_eq!((f.cycles(), f.branch_type()), (37, 6));
        let body: Vec<u8> = [1u64, 0xa, 0xb, be].iter().flat_map(|w| w.to_be_bytes()).collect();
        let attr = Attr { sample_type: BRANCH_STACK, ..Attr::default() };
        let s = Sample::parse(&body, &attr, Endian::Big).unwrap();
        assert_eq!(s.branch_stack.unwrap().iter().next().unwrap().flags, f);
    }

    #[test]
    fn parses_common_layout() {
        let attr = Attr { sample_type: IP | TID | TIME | CPU | PERIOD | CALLCHAIN, ..Attr::default() };
        let body = le(&[0x1234, (7u64 << 32) | 5, 99, 3, 250000, 2, 0xffff_ffff_ffff_ff80, 0x55]);
        let s = Sample::parse(&body, &attr, Endian::Little).unwrap();
        assert_eq!((s.ip, s.pid, s.tid, s.time, s.cpu, s.period), (0x1234, 5, 7, 99, 3, 250000));
        let cc: Vec<u64> = s.callchain.unwrap().iter().collect();
        assert_eq!(cc, vec![0xffff_ffff_ffff_ff80, 0x55]);
        assert_eq!(Sample::parse_time(&body, &attr, Endian::Little), Some(99));
    }

    /// Every layout the fixed reading takes, on bodies of every length
    /// around the callchain's end: it answers as the reading field by
    /// field does, or leaves the body to it.
    #[test]
    fn the_fixed_layout_reads_as_field_by_field() {
        let bits = [IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, CALLCHAIN, REGS_USER, STACK_USER];
        // The one-word fields after the stack, in some combinations.
        let lasts = [0, DATA_SRC, WEIGHT, WEIGHT_STRUCT | DATA_SRC, WEIGHT | WEIGHT_STRUCT | PHYS_ADDR, TRANSACTION | CGROUP | DATA_PAGE_SIZE | CODE_PAGE_SIZE];
        // The user registers and stack: ABI, values (mask 0b1011: three),
        // then size, the copy, dyn_size; an ABI of 0 (no values), an empty
        // copy (no dyn_size), and a dyn_size past the copy (refused).
        let users: [(&[u64], &[u64]); 3] = [(&[2, 0x11, 0x22, 0x33], &[16, 0xaa, 0xbb, 8]), (&[0], &[0]), (&[2, 1, 2, 3], &[8, 0xcc, 9])];
        let (mut fixed, mut checked) = (0, 0);
        for (mask, last) in (0..1u32 << bits.len()).flat_map(|m| lasts.map(|l| (m, l))) {
            let st = bits.iter().enumerate().filter(|(i, _)| mask & 1 << i != 0).fold(last, |a, (_, b)| a | b);
            let attr = Attr { sample_type: st, sample_period: 4000, sample_regs_user: 0b1011, ..Attr::default() };
            let n = (mask & 0x1ff).count_ones() as u64;
            let last_words = (last & !WEIGHT_STRUCT).count_ones() as u64 + u64::from(last & (WEIGHT | WEIGHT_STRUCT) == WEIGHT_STRUCT);
            for (regs, stack) in users {
                let mut words: Vec<u64> = (1..=n).map(|i| i * 0x0101_0101_0101_0101 + (i << 32)).collect();
                if st & CALLCHAIN != 0 {
                    words.extend([3, 0xffff_ffff_ffff_ff80, 0x55, 0x66]);
                }
                if st & REGS_USER != 0 {
                    words.extend(regs);
                }
                if st & STACK_USER != 0 {
                    words.extend(stack);
                }
                words.extend((0..last_words).map(|i| 0x1234_5678_9abc_def0 + i));
                words.push(0x77);
                let full = le(&words);
                for len in 0..=full.len() {
                    let body = &full[..len];
                    let general = Sample::parse_fields(body, &attr, Endian::Little);
                    match Sample::parse_fixed(body, &attr, Endian::Little) {
                        Some(s) => {
                            fixed += 1;
                            let g = general.expect("the fields decode too");
                            assert_eq!(format!("{s:?}"), format!("{g:?}"), "sample_type {st:#x}, {len} bytes");
                        }
                        None => assert!(general.is_err(), "sample_type {st:#x}, {len} bytes: the fields decode, the fixed reading does not"),
                    }
                    checked += 1;
                }
                assert!(Sample::parse_fixed(&full, &attr, Endian::Big).is_none());
            }
        }
        assert!(fixed > 10000 && checked > fixed, "{fixed} of {checked}");
    }

    #[test]
    fn hostile_callchain_count_is_an_error() {
        let attr = Attr { sample_type: CALLCHAIN, ..Attr::default() };
        let body = le(&[u64::MAX, 1]);
        assert!(Sample::parse(&body, &attr, Endian::Little).is_err());
        let body = le(&[1 << 61, 1]);
        assert!(Sample::parse(&body, &attr, Endian::Little).is_err());
    }

    /// REGS_USER: one value per mask bit unless the ABI is 0; STACK_USER:
    /// the valid `dyn_size` bytes of the copy, and perf's refusal of a
    /// `dyn_size` larger than the copy.
    #[test]
    fn user_registers_and_stack() {
        let attr = Attr { sample_type: IP | REGS_USER | STACK_USER | PERIOD, sample_regs_user: 0b1_0000_0101, ..Attr::default() };
        let mut body = le(&[0x1234, 77, 2, 10, 20, 30, 16]);
        body.extend(0u8..16);
        body.extend(le(&[12]));
        let s = Sample::parse(&body, &attr, Endian::Little).unwrap();
        let r = s.user_regs.unwrap();
        assert_eq!((r.abi, r.mask, r.get(0), r.get(2), r.get(8), r.get(1), r.get(64)), (2, 0b1_0000_0101, Some(10), Some(20), Some(30), None, None));
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(0, 10), (2, 20), (8, 30)]);
        assert_eq!(s.user_stack, Some(&(0u8..12).collect::<Vec<_>>()[..]));
        assert_eq!(s.period, 77);
        // ABI 0 (a kernel thread): no values; size 0: no dyn_size word.
        let body = le(&[0x1234, 77, 0, 0]);
        let s = Sample::parse(&body, &attr, Endian::Little).unwrap();
        assert_eq!((s.user_regs.unwrap().abi, s.user_regs.unwrap().values.len(), s.user_stack, s.period), (0, 0, Some(&[][..]), 77));
        // dyn_size beyond the copy.
        let mut body = le(&[0x1234, 77, 0, 8]);
        body.extend([0u8; 8]);
        body.extend(le(&[9]));
        let e = Sample::parse(&body, &attr, Endian::Little).unwrap_err();
        assert_eq!(e, SampleError::StackDumpFailure { size: 8, dyn_size: 9 });
        assert_eq!(e.field(), "STACK_USER");
        // A stack size that runs past the record, and a truncated register.
        assert!(Sample::parse(&le(&[0x1234, 77, 0, 1 << 40]), &attr, Endian::Little).is_err());
        assert_eq!(Sample::parse(&le(&[0x1234, 77, 2, 10]), &attr, Endian::Little).unwrap_err(), SampleError::Truncated("REGS_USER"));
    }

    #[test]
    fn reads_trailer() {
        let attr = Attr { sample_type: IP | TID | TIME | ID | CPU, flags: flag::SAMPLE_ID_ALL, ..Attr::default() };
        let mut body = vec![0xaa; 12];
        body.extend(le(&[(9u64 << 32) | 8, 1000, 42, 1]));
        let id = SampleId::parse_trailer(&body, &attr, Endian::Little);
        assert_eq!((id.pid, id.tid, id.time, id.id, id.cpu), (8, 9, 1000, Some(42), 1));
    }
}

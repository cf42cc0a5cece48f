//! `struct perf_event_attr`: what an event samples and how its records look.
//!
//! ```text
//!   0  u32 type            8  u64 config         16 u64 sample_period|freq
//!   4  u32 size           24  u64 sample_type    32 u64 read_format
//!  40  u64 flags (bitfield: disabled, inherit, ..., sample_id_all (18), ...,
//!                 defer_callchain (38), defer_output (39))
//!  48  u32 wakeup_events  52  u32 bp_type        56 u64 config1|bp_addr
//!  64  u64 config2|bp_len 72  u64 branch_sample_type
//!  80  u64 sample_regs_user                      88 u32 sample_stack_user
//!  92  s32 clockid        96  u64 sample_regs_intr
//! 104  u32 aux_watermark 108  u16 sample_max_stack ...
//! ```
//! `size` says how much of this the writer knew; fields past it read as 0.
//! The layout of every sample record follows from `sample_type`
//! (see [`super::sample`]).

use super::bytes::Endian;

/// `perf_event_attr.type` values.
pub mod event_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
    pub const HW_CACHE: u32 = 3;
    pub const RAW: u32 = 4;
    pub const BREAKPOINT: u32 = 5;
}

/// `sample_type` bits (`PERF_SAMPLE_*`).
pub mod sample_type {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `read_format` bits (`PERF_FORMAT_*`).
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `branch_sample_type` bits that change the sample layout, and
/// `CALL_STACK` (the branch stack is an LBR call stack: perf takes a
/// sample's user callchain from it).
pub mod branch_sample_type {
    pub const CALL_STACK: u64 = 1 << 11;
    pub const HW_INDEX: u64 = 1 << 17;
    pub const COUNTERS: u64 = 1 << 19;
}

/// Bits of the flags word at offset 40.
pub mod flag {
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const INHERIT: u64 = 1 << 1;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const FREQ: u64 = 1 << 10;
    pub const PRECISE_IP_SHIFT: u32 = 15;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    /// The ring buffer is written backward (overwrite mode): its records
    /// come out of time order by design.
    pub const WRITE_BACKWARD: u64 = 1 << 27;
    pub const DEFER_CALLCHAIN: u64 = 1 << 38;
    pub const DEFER_OUTPUT: u64 = 1 << 39;
}

/// The first version of the struct; anything shorter is malformed.
pub const ATTR_SIZE_VER0: usize = 64;

/// `sizeof(struct perf_event_attr)` in perf 7.2 (PERF_ATTR_SIZE_VER8).
pub const ATTR_SIZE_MAX: usize = 136;

/// `perf_event_attr`, decoded to native order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attr {
    pub type_: u32,
    /// `attr.size` as written (0 means [`ATTR_SIZE_VER0`]).
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield word (`disabled`, `inherit`, ... `defer_output`).
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    /// The `aux_action` bitfield word.
    pub aux_action: u32,
    pub sig_data: u64,
}

impl Attr {
    /// Decodes an attr from `data` (at least [`ATTR_SIZE_VER0`] bytes; longer
    /// data is read up to `attr.size`). Returns `None` if it is too short or
    /// if `attr.size` is below [`ATTR_SIZE_VER0`] without being 0 (perf
    /// cannot read such an attr either).
    pub fn parse(data: &[u8], endian: Endian) -> Option<Attr> {
        if data.len() < ATTR_SIZE_VER0 {
            return None;
        }
        let size = endian.read_u32(data, 4)?;
        if size != 0 && (size as usize) < ATTR_SIZE_VER0 {
            return None;
        }
        let limit = if size == 0 { ATTR_SIZE_VER0 } else { (size as usize).min(data.len()) };
        Some(Attr::decode(data.get(..limit)?, endian))
    }

    /// Decodes the first `min(raw.len(), sizeof(attr))` bytes of `raw`,
    /// the rest zero, as after perf's `memcpy` of an attr of unknown size.
    ///
    /// For a cross-endian file perf swaps each field and, for the
    /// bitfields, reverses the bits of every byte: C compilers on
    /// big-endian machines allocate bitfields from the most significant
    /// bit of each byte.
    pub fn decode(raw: &[u8], endian: Endian) -> Attr {
        let mut b = [0u8; ATTR_SIZE_MAX];
        let n = raw.len().min(ATTR_SIZE_MAX);
        b[..n].copy_from_slice(&raw[..n]);
        let u16_at = |o: usize| endian.read_u16(&b, o).unwrap_or(0);
        let u32_at = |o: usize| endian.read_u32(&b, o).unwrap_or(0);
        let u64_at = |o: usize| endian.read_u64(&b, o).unwrap_or(0);
        let bits = |o: usize, len: usize| {
            let mut v = 0u64;
            for (i, &byte) in b[o..o + len].iter().enumerate() {
                let byte = if endian == Endian::Big { byte.reverse_bits() } else { byte };
                v |= (byte as u64) << (8 * i);
            }
            v
        };
        Attr {
            type_: u32_at(0),
            size: u32_at(4),
            config: u64_at(8),
            sample_period: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            flags: bits(40, 8),
            wakeup_events: u32_at(48),
            bp_type: u32_at(52),
            config1: u64_at(56),
            config2: u64_at(64),
            branch_sample_type: u64_at(72),
            sample_regs_user: u64_at(80),
            sample_stack_user: u32_at(88),
            clockid: u32_at(92) as i32,
            sample_regs_intr: u64_at(96),
            aux_watermark: u32_at(104),
            sample_max_stack: u16_at(108),
            reserved_2: u16_at(110),
            aux_sample_size: u32_at(112),
            aux_action: bits(116, 4) as u32,
            sig_data: u64_at(120),
        }
    }

    /// perf's `perf_attr_check`: bits perf 7.2 does not know make the
    /// event list unreadable (the message is perf's).
    pub fn check(&self) -> Result<(), String> {
        const SAMPLE_MAX: u64 = 1 << 25;
        const FORMAT_MAX: u64 = 1 << 5;
        const BRANCH_MAX: u64 = 1 << 20;
        const BRANCH_STACK: u64 = 1 << 11;
        if self.flags >> 40 != 0 || self.reserved_2 != 0 || self.aux_action >> 3 != 0 {
            return Err("Reserved bits are set unexpectedly. Please update perf tool.".into());
        }
        if self.sample_type & !(SAMPLE_MAX - 1) != 0 {
            return Err(format!("Unknown sample type ({:#x}) is detected. Please update perf tool.", self.sample_type));
        }
        if self.read_format & !(FORMAT_MAX - 1) != 0 {
            return Err(format!("Unknown read format ({:#x}) is detected. Please update perf tool.", self.read_format));
        }
        if self.sample_type & BRANCH_STACK != 0 && self.branch_sample_type & !(BRANCH_MAX - 1) != 0 {
            return Err(format!("Unknown branch sample type ({:#x}) is detected. Please update perf tool.", self.branch_sample_type));
        }
        Ok(())
    }

    /// Bytes the attr occupies on disk (`size`, or the v0 size when 0).
    #[inline]
    pub fn disk_size(&self) -> usize {
        if self.size == 0 { ATTR_SIZE_VER0 } else { self.size as usize }
    }

    #[inline]
    pub fn has(&self, flag: u64) -> bool {
        self.flags & flag != 0
    }

    #[inline]
    pub fn samples(&self, bits: u64) -> bool {
        self.sample_type & bits != 0
    }

    #[inline]
    pub fn sample_id_all(&self) -> bool {
        self.has(flag::SAMPLE_ID_ALL)
    }

    pub fn precise_ip(&self) -> u64 {
        (self.flags >> flag::PRECISE_IP_SHIFT) & 3
    }

    /// Size of the `sample_id` trailer on non-sample records.
    #[inline]
    pub fn id_hdr_size(&self) -> usize {
        use sample_type::*;
        if !self.sample_id_all() {
            return 0;
        }
        8 * (self.sample_type & (TID | TIME | ID | STREAM_ID | CPU | IDENTIFIER)).count_ones() as usize
    }

    /// Index (in u64 words from the start of a sample body) of the event id,
    /// or `None` if samples carry no id. Mirrors perf's `id_pos`.
    #[inline]
    pub fn sample_id_pos(&self) -> Option<usize> {
        use sample_type::*;
        if self.samples(IDENTIFIER) {
            return Some(0);
        }
        if !self.samples(ID) {
            return None;
        }
        Some((self.sample_type & (IP | TID | TIME | ADDR)).count_ones() as usize)
    }

    /// Position of the event id counted back from the end of a non-sample
    /// record (1 = last word). Mirrors perf's `is_pos`.
    #[inline]
    pub fn trailer_id_pos(&self) -> Option<usize> {
        use sample_type::*;
        if self.samples(IDENTIFIER) {
            return Some(1);
        }
        if !self.samples(ID) {
            return None;
        }
        Some(1 + (self.sample_type & (CPU | STREAM_ID)).count_ones() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr_bytes(endian: Endian) -> Vec<u8> {
        let mut v = vec![0u8; 136];
        let put32 = |v: &mut Vec<u8>, off: usize, x: u32| {
            let b = if endian == Endian::Little { x.to_le_bytes() } else { x.to_be_bytes() };
            v[off..off + 4].copy_from_slice(&b);
        };
        let put64 = |v: &mut Vec<u8>, off: usize, x: u64| {
            let b = if endian == Endian::Little { x.to_le_bytes() } else { x.to_be_bytes() };
            v[off..off + 8].copy_from_slice(&b);
        };
        put32(&mut v, 0, 1);
        put32(&mut v, 4, 136);
        put64(&mut v, 24, sample_type::IP | sample_type::TID | sample_type::CALLCHAIN);
        // sample_id_all (bit 18 = byte 2, bit 2) and defer_callchain (bit 38 = byte 4, bit 6)
        if endian == Endian::Little {
            v[42] = 1 << 2;
            v[44] = 1 << 6;
        } else {
            v[42] = 1 << 5;
            v[44] = 1 << 1;
        }
        v
    }

    #[test]
    fn parses_both_byte_orders_alike() {
        let le = Attr::parse(&attr_bytes(Endian::Little), Endian::Little).unwrap();
        let be = Attr::parse(&attr_bytes(Endian::Big), Endian::Big).unwrap();
        assert_eq!(le, be);
        assert!(le.sample_id_all());
        assert!(le.has(flag::DEFER_CALLCHAIN));
        assert!(!le.has(flag::DEFER_OUTPUT));
        assert_eq!(le.type_, event_type::SOFTWARE);
    }

    #[test]
    fn short_attr_is_rejected() {
        assert!(Attr::parse(&[0u8; 63], Endian::Little).is_none());
        // attr.size between 1 and 63 cannot be read (perf fails on it too).
        let mut v = attr_bytes(Endian::Little);
        v[4..8].copy_from_slice(&8u32.to_le_bytes());
        assert!(Attr::parse(&v, Endian::Little).is_none());
        v[4..8].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(Attr::parse(&v, Endian::Little).unwrap().disk_size(), ATTR_SIZE_VER0);
    }

    #[test]
    fn id_positions() {
        use sample_type::*;
        let mut a = Attr { sample_type: IP | TID | TIME | ID | CPU | PERIOD, ..Attr::default() };
        a.flags = flag::SAMPLE_ID_ALL;
        assert_eq!(a.sample_id_pos(), Some(3));
        assert_eq!(a.trailer_id_pos(), Some(2));
        assert_eq!(a.id_hdr_size(), 32);
        a.sample_type |= IDENTIFIER;
        assert_eq!(a.sample_id_pos(), Some(0));
        assert_eq!(a.trailer_id_pos(), Some(1));
    }
}

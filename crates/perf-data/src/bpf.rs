//! BPF programs as HEADER_BPF_PROG_INFO and HEADER_BPF_BTF describe them,
//! to name their JIT-compiled functions as perf 7.2 does in `--header`
//! (`# bpf_prog_info 99: bpf_prog_<tag>_<name> addr 0x... size 42`).
//!
//! A HEADER_BPF_PROG_INFO entry is perf's `struct perf_bpil`: the kernel's
//! `struct bpf_prog_info` (its first `info_len` bytes), then a data area.
//! The info's array fields (jited_ksyms, jited_func_lens, func_info,
//! prog_tags, ...) hold offsets into that data area, for the arrays whose
//! bit is set in `arrays`:
//!
//! ```text
//! u32 info_len | u32 data_len | u64 arrays | info (info_len) | data (data_len)
//!                                             .jited_ksyms = 48 ---> data[48..]: u64 addr per function
//!                                             .jited_func_lens = 56 -> data[56..]: u32 len per function
//!                                             .prog_tags = 64 -----> data[64..]: 8-byte tag per function
//! ```
//!
//! A HEADER_BPF_BTF entry is `u32 id, u32 size, size bytes of BTF`; a
//! program whose `btf_id` has BTF is named after the BTF type of each
//! function (its `func_info`), as libbpf's `btf__type_by_id` finds it.

use crate::bytes::{Endian, until_nul};

/// Byte offsets of `struct bpf_prog_info` fields (linux/bpf.h).
mod info {
    pub const ID: usize = 4;
    pub const JITED_PROG_LEN: usize = 16;
    pub const JITED_PROG_INSNS: usize = 24;
    pub const NAME: usize = 64;
    pub const NAME_LEN: usize = 16;
    pub const NR_JITED_KSYMS: usize = 104;
    pub const NR_JITED_FUNC_LENS: usize = 108;
    pub const JITED_KSYMS: usize = 112;
    pub const JITED_FUNC_LENS: usize = 120;
    pub const BTF_ID: usize = 128;
    pub const FUNC_INFO_REC_SIZE: usize = 132;
    pub const FUNC_INFO: usize = 136;
    pub const NR_FUNC_INFO: usize = 144;
    pub const PROG_TAGS: usize = 184;
    /// perf refuses an info longer than the `struct bpf_prog_info` it knows.
    pub const MAX_LEN: usize = 256;
}

/// Bits of `arrays` (perf's `enum bpil_array_desc`).
mod array {
    pub const JITED_INSNS: u32 = 0;
    pub const JITED_KSYMS: u32 = 3;
    pub const JITED_FUNC_LENS: u32 = 4;
    pub const FUNC_INFO: u32 = 5;
    pub const PROG_TAGS: u32 = 8;
}

const TAG_SIZE: usize = 8;

/// One JIT-compiled function of a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfFunc {
    pub addr: u64,
    pub len: u32,
    pub tag: [u8; TAG_SIZE],
    /// Its BTF type (`func_info[i].type_id`), if the program has func info.
    pub btf_type: Option<u32>,
}

/// A program of HEADER_BPF_PROG_INFO, as far as perf prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfProg {
    pub id: u32,
    /// `bpf_prog_info.name` up to its NUL.
    pub name: Vec<u8>,
    pub btf_id: u32,
    /// Empty when perf prints nothing for the program: the counts of
    /// addresses and lengths differ, either array is absent, or (where
    /// perf would read past the entry) an array does not fit its data.
    pub funcs: Vec<BpfFunc>,
    /// The JIT-compiled code of all its functions (`jited_prog_insns`),
    /// empty if the entry does not hold it whole.
    pub jited: Vec<u8>,
}

impl BpfProg {
    /// Decodes one entry's `info` and `data` (`arrays` says which array
    /// fields are offsets into `data`). `None` if perf would refuse it.
    pub fn parse(info: &[u8], data: &[u8], arrays: u64, endian: Endian) -> Option<BpfProg> {
        if info.len() > info::MAX_LEN {
            return None;
        }
        // Fields past `info_len` are zero (perf reads the info into a
        // zeroed struct).
        let u32_at = |o: usize| endian.read_u32(info, o).unwrap_or(0);
        let u64_at = |o: usize| endian.read_u64(info, o).unwrap_or(0);
        let name = info.get(info::NAME..info::NAME + info::NAME_LEN).map(|n| until_nul(n).to_vec()).unwrap_or_default();
        let mut prog = BpfProg { id: u32_at(info::ID), name, btf_id: u32_at(info::BTF_ID), funcs: Vec::new(), jited: Vec::new() };
        let has = |bit: u32| arrays & (1 << bit) != 0;
        let slice = |off: u64, len: usize| -> Option<&[u8]> {
            let start = usize::try_from(off).ok()?;
            data.get(start..start.checked_add(len)?)
        };
        if has(array::JITED_INSNS)
            && let Some(code) = slice(u64_at(info::JITED_PROG_INSNS), u32_at(info::JITED_PROG_LEN) as usize)
        {
            prog.jited = code.to_vec();
        }
        let n = u32_at(info::NR_JITED_KSYMS) as usize;
        if n != u32_at(info::NR_JITED_FUNC_LENS) as usize || !has(array::JITED_KSYMS) || !has(array::JITED_FUNC_LENS) {
            return Some(prog);
        }
        let (Some(addrs), Some(lens)) = (slice(u64_at(info::JITED_KSYMS), n.saturating_mul(8)), slice(u64_at(info::JITED_FUNC_LENS), n.saturating_mul(4))) else {
            return Some(prog);
        };
        let Some(tags) = has(array::PROG_TAGS).then(|| slice(u64_at(info::PROG_TAGS), n.saturating_mul(TAG_SIZE))).flatten() else {
            return Some(prog);
        };
        let rec = u32_at(info::FUNC_INFO_REC_SIZE) as usize;
        let func_info = (has(array::FUNC_INFO) && rec >= 8 && u32_at(info::NR_FUNC_INFO) as usize >= n)
            .then(|| slice(u64_at(info::FUNC_INFO), n.saturating_mul(rec)))
            .flatten();
        prog.funcs = (0..n)
            .map(|i| BpfFunc {
                addr: endian.read_u64(addrs, i * 8).unwrap_or(0),
                len: endian.read_u32(lens, i * 4).unwrap_or(0),
                tag: tags[i * TAG_SIZE..(i + 1) * TAG_SIZE].try_into().unwrap_or([0; TAG_SIZE]),
                // struct bpf_func_info { u32 insn_off; u32 type_id; }
                btf_type: func_info.and_then(|f| endian.read_u32(f, i * rec + 4)),
            })
            .collect();
        Some(prog)
    }

    /// perf's `synthesize_bpf_prog_name` for function `i`:
    /// `bpf_prog_<tag>` and `_<name>`: the function's BTF name when the
    /// program has BTF, the program's name when it is one function, else
    /// `F`.
    pub fn func_name(&self, i: usize, btf: Option<&Btf<'_>>) -> String {
        let f = &self.funcs[i];
        let mut s = String::from("bpf_prog_");
        for b in f.tag {
            s.push_str(&format!("{b:02x}"));
        }
        let short: Option<Vec<u8>> = match btf {
            Some(btf) => f.btf_type.and_then(|t| btf.type_name(t)).map(<[u8]>::to_vec),
            None if self.funcs.len() == 1 => (!self.name.is_empty()).then(|| self.name.clone()),
            None => Some(b"F".to_vec()),
        };
        if let Some(n) = short {
            s.push('_');
            s.push_str(&String::from_utf8_lossy(&n));
        }
        s
    }
}

/// A BTF blob, enough to find a type's name by id.
#[derive(Debug, Clone)]
pub struct Btf<'a> {
    /// Offset of each type record by id (id 0, `void`, has none).
    types: Vec<usize>,
    bytes: &'a [u8],
    strings: &'a [u8],
    endian: Endian,
}

impl<'a> Btf<'a> {
    const MAGIC: u16 = 0xeb9f;

    /// Parses the header and walks the type records, as libbpf's
    /// `btf__new` does; `None` where libbpf would fail (bad magic, a
    /// section out of bounds, a type kind it does not know).
    pub fn parse(bytes: &'a [u8], endian: Endian) -> Option<Btf<'a>> {
        if endian.read_u16(bytes, 0)? != Self::MAGIC {
            return None;
        }
        let hdr_len = endian.read_u32(bytes, 4)? as usize;
        let field = |o: usize| endian.read_u32(bytes, 8 + o).map(|v| v as usize);
        let (type_off, type_len, str_off, str_len) = (field(0)?, field(4)?, field(8)?, field(12)?);
        let section = |off: usize, len: usize| {
            let start = hdr_len.checked_add(off)?;
            bytes.get(start..start.checked_add(len)?).map(|s| (start, s))
        };
        let (types_start, type_bytes) = section(type_off, type_len)?;
        let (_, strings) = section(str_off, str_len)?;
        let mut types = vec![0];
        let mut at = 0;
        while at < type_bytes.len() {
            let info = endian.read_u32(type_bytes, at + 4)?;
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let extra = match kind {
                1 | 14 | 17 => 4,
                2 | 7..=12 | 16 | 18 => 0,
                3 => 12,
                4 | 5 | 15 | 19 => vlen * 12,
                6 | 13 => vlen * 8,
                _ => return None,
            };
            let len = 12 + extra;
            type_bytes.get(at..at + len)?;
            types.push(types_start + at);
            at += len;
        }
        Some(Btf { types, bytes, strings, endian })
    }

    /// The name of type `id` (`btf__name_by_offset(btf__type_by_id(id)->name_off)`).
    pub fn type_name(&self, id: u32) -> Option<&'a [u8]> {
        let at = *self.types.get(id as usize).filter(|_| id != 0)?;
        let name_off = self.endian.read_u32(self.bytes, at)? as usize;
        self.strings.get(name_off..).map(until_nul)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LE: Endian = Endian::Little;

    fn info(id: u32, name: &[u8], nr: u32, btf_id: u32) -> Vec<u8> {
        let mut i = vec![0u8; 232];
        i[4..8].copy_from_slice(&id.to_le_bytes());
        i[64..64 + name.len()].copy_from_slice(name);
        i[104..108].copy_from_slice(&nr.to_le_bytes());
        i[108..112].copy_from_slice(&nr.to_le_bytes());
        i[112..120].copy_from_slice(&0u64.to_le_bytes());
        i[120..128].copy_from_slice(&(8 * nr as u64).to_le_bytes());
        i[128..132].copy_from_slice(&btf_id.to_le_bytes());
        i[132..136].copy_from_slice(&8u32.to_le_bytes());
        i[136..144].copy_from_slice(&(20 * nr as u64).to_le_bytes());
        i[144..148].copy_from_slice(&nr.to_le_bytes());
        i[184..192].copy_from_slice(&(12 * nr as u64).to_le_bytes());
        i
    }

    /// addrs (8 each), lens (4 each), tags (8 each), func_info (8 each).
    fn data(nr: u32) -> Vec<u8> {
        let mut d = Vec::new();
        for k in 0..nr {
            d.extend_from_slice(&(0xffff_ffff_c000_0000u64 + 0x100 * k as u64).to_le_bytes());
        }
        for k in 0..nr {
            d.extend_from_slice(&(40 + k).to_le_bytes());
        }
        for k in 0..nr {
            d.extend_from_slice(&[0xab, 0xcd, 0, 0, 0, 0, 0, k as u8]);
        }
        for k in 0..nr {
            d.extend_from_slice(&0u32.to_le_bytes());
            d.extend_from_slice(&(1 + k).to_le_bytes());
        }
        d
    }

    const ALL: u64 = 0b1_0011_1000;

    #[test]
    fn one_function_is_named_after_the_program() {
        let p = BpfProg::parse(&info(7, b"probe", 1, 0), &data(1), ALL, LE).unwrap();
        assert_eq!((p.id, p.funcs.len(), p.funcs[0].addr, p.funcs[0].len), (7, 1, 0xffff_ffff_c000_0000, 40));
        assert_eq!(p.func_name(0, None), "bpf_prog_abcd000000000000_probe");
        // Several functions without BTF are "F"; an unnamed program has no suffix.
        let p = BpfProg::parse(&info(8, b"", 2, 0), &data(2), ALL, LE).unwrap();
        assert_eq!(p.func_name(1, None), "bpf_prog_abcd000000000001_F");
        let p = BpfProg::parse(&info(9, b"", 1, 0), &data(1), ALL, LE).unwrap();
        assert_eq!(p.func_name(0, None), "bpf_prog_abcd000000000000");
    }

    #[test]
    fn missing_or_short_arrays_print_nothing() {
        assert!(BpfProg::parse(&info(7, b"p", 1, 0), &data(1), ALL & !(1 << 3), LE).unwrap().funcs.is_empty());
        assert!(BpfProg::parse(&info(7, b"p", 3, 0), &data(1), ALL, LE).unwrap().funcs.is_empty());
        let mut i = info(7, b"p", 1, 0);
        i[108..112].copy_from_slice(&2u32.to_le_bytes());
        assert!(BpfProg::parse(&i, &data(1), ALL, LE).unwrap().funcs.is_empty());
        assert!(BpfProg::parse(&[0u8; 300], &[], ALL, LE).is_none());
        // A short info reads as zeros past its end.
        assert_eq!(BpfProg::parse(&info(7, b"p", 1, 0)[..16], &[], ALL, LE).unwrap().id, 7);
    }

    #[test]
    fn jited_code_is_kept_when_it_fits() {
        let mut i = info(7, b"p", 1, 0);
        i[16..20].copy_from_slice(&6u32.to_le_bytes());
        i[24..32].copy_from_slice(&8u64.to_le_bytes());
        let d = data(1);
        let p = BpfProg::parse(&i, &d, ALL | 1, LE).unwrap();
        assert_eq!(p.jited, d[8..14].to_vec());
        // Not flagged, or past the data: none.
        assert!(BpfProg::parse(&i, &d, ALL, LE).unwrap().jited.is_empty());
        i[16..20].copy_from_slice(&600u32.to_le_bytes());
        assert!(BpfProg::parse(&i, &d, ALL | 1, LE).unwrap().jited.is_empty());
    }

    fn btf(names: &[&str]) -> Vec<u8> {
        let mut strings = vec![0u8];
        let mut types = Vec::new();
        // An INT (4 extra bytes) first, then one FUNC per name.
        types.extend_from_slice(&0u32.to_le_bytes());
        types.extend_from_slice(&(1u32 << 24).to_le_bytes());
        types.extend_from_slice(&4u32.to_le_bytes());
        types.extend_from_slice(&0u32.to_le_bytes());
        for n in names {
            types.extend_from_slice(&(strings.len() as u32).to_le_bytes());
            types.extend_from_slice(&(12u32 << 24).to_le_bytes());
            types.extend_from_slice(&0u32.to_le_bytes());
            strings.extend_from_slice(n.as_bytes());
            strings.push(0);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&0xeb9fu16.to_le_bytes());
        b.extend_from_slice(&[1, 0]);
        b.extend_from_slice(&24u32.to_le_bytes());
        for v in [0, types.len() as u32, types.len() as u32, strings.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&types);
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn btf_names_functions() {
        let blob = btf(&["main_fn", "helper"]);
        let b = Btf::parse(&blob, LE).unwrap();
        assert_eq!((b.type_name(2), b.type_name(3), b.type_name(0), b.type_name(4)), (Some(&b"main_fn"[..]), Some(&b"helper"[..]), None, None));
        // func_info type ids are 1 + k: the INT (no name), then main_fn.
        let p = BpfProg::parse(&info(3, b"x", 2, 5), &data(2), ALL, LE).unwrap();
        assert_eq!(p.func_name(0, Some(&b)), "bpf_prog_abcd000000000000_");
        assert_eq!(p.func_name(1, Some(&b)), "bpf_prog_abcd000000000001_main_fn");
        // Bad magic, a section out of bounds, an unknown kind.
        let mut bad = blob.clone();
        bad[0] = 0;
        assert!(Btf::parse(&bad, LE).is_none());
        assert!(Btf::parse(&blob[..blob.len() - 1], LE).is_none());
        let mut unknown = blob.clone();
        unknown[24 + 7] = 30;
        assert!(Btf::parse(&unknown, LE).is_none());
    }
}

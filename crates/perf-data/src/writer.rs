//! Writing perf.data files (used by the fixture tools, not by `script`).
//!
//! File mode is laid out the way perf record lays it out: the 104-byte
//! header, the attr section (`{attr, ids section}` per event), the id
//! arrays, the records, then the feature table and feature payloads. Pipe
//! mode is the 16-byte header followed by records. Values are written in
//! the byte order given, so cross-endian files can be produced too.

use super::attr::ATTR_SIZE_VER0;
use super::bytes::Endian;
use super::header::{FILE_HEADER_SIZE, MAGIC, PIPE_HEADER_SIZE};

/// Appends integers in a fixed byte order.
#[derive(Debug, Clone, Copy)]
pub struct Put(pub Endian);

impl Put {
    pub fn u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }
    pub fn u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }
    pub fn u64(self, out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }
    /// Overwrites a `u64` at `off`.
    pub fn set_u64(self, out: &mut [u8], off: usize, v: u64) {
        let b = match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        out[off..off + 8].copy_from_slice(&b);
    }
    /// A record header.
    pub fn header(self, out: &mut Vec<u8>, type_: u32, misc: u16, size: u16) {
        self.u32(out, type_);
        self.u16(out, misc);
        self.u16(out, size);
    }
}

/// Sets bits of the attr flags word (offset 40) in raw attr bytes, honouring
/// the big-endian bitfield layout (see [`super::attr::Attr::parse`]).
pub fn set_attr_flags(raw_attr: &mut [u8], endian: Endian, mask: u64) {
    if raw_attr.len() < ATTR_SIZE_VER0 {
        return;
    }
    for bit in 0..64 {
        if mask & (1 << bit) == 0 {
            continue;
        }
        let byte = 40 + bit / 8;
        let b = bit % 8;
        raw_attr[byte] |= match endian {
            Endian::Little => 1 << b,
            Endian::Big => 0x80 >> b,
        };
    }
}

/// One event for the attr section.
#[derive(Debug, Clone)]
pub struct AttrEntry {
    /// The raw attr, `attr.size` bytes, already in the output byte order.
    pub raw: Vec<u8>,
    pub ids: Vec<u64>,
}

/// A file-mode perf.data assembled from its parts.
pub struct FileWriter {
    pub endian: Endian,
    pub attrs: Vec<AttrEntry>,
    /// The records, concatenated.
    pub data: Vec<u8>,
    /// Feature payloads by bit, written in bit order.
    pub features: Vec<(u32, Vec<u8>)>,
}

impl FileWriter {
    pub fn to_bytes(&self) -> Vec<u8> {
        let p = Put(self.endian);
        let mut out = vec![0u8; FILE_HEADER_SIZE];
        let attr_size = self.attrs.first().map(|a| a.raw.len() + 16).unwrap_or(ATTR_SIZE_VER0 + 16);

        // Id arrays first (right after the header), then the attr section
        // pointing at them, as perf record does.
        let mut id_offsets = Vec::new();
        for a in &self.attrs {
            id_offsets.push(out.len() as u64);
            for &id in &a.ids {
                p.u64(&mut out, id);
            }
        }
        let attrs_off = out.len() as u64;
        for (a, &off) in self.attrs.iter().zip(&id_offsets) {
            out.extend_from_slice(&a.raw);
            p.u64(&mut out, off);
            p.u64(&mut out, (a.ids.len() * 8) as u64);
        }
        let attrs_size = out.len() as u64 - attrs_off;
        let data_off = out.len() as u64;
        out.extend_from_slice(&self.data);
        let data_size = self.data.len() as u64;

        let mut feats = self.features.clone();
        feats.sort_by_key(|(b, _)| *b);
        let table_off = out.len();
        out.resize(table_off + feats.len() * 16, 0);
        let mut bitmap = [0u64; 4];
        for (i, (bit, payload)) in feats.iter().enumerate() {
            bitmap[(*bit / 64) as usize] |= 1 << (bit % 64);
            let off = out.len() as u64;
            out.extend_from_slice(payload);
            p.set_u64(&mut out, table_off + i * 16, off);
            p.set_u64(&mut out, table_off + i * 16 + 8, payload.len() as u64);
        }

        let mut h = Vec::with_capacity(FILE_HEADER_SIZE);
        h.extend_from_slice(&match self.endian {
            Endian::Little => MAGIC.to_le_bytes(),
            Endian::Big => MAGIC.to_be_bytes(),
        });
        p.u64(&mut h, FILE_HEADER_SIZE as u64);
        p.u64(&mut h, attr_size as u64);
        p.u64(&mut h, attrs_off);
        p.u64(&mut h, attrs_size);
        p.u64(&mut h, data_off);
        p.u64(&mut h, data_size);
        p.u64(&mut h, 0);
        p.u64(&mut h, 0);
        for w in bitmap {
            p.u64(&mut h, w);
        }
        out[..FILE_HEADER_SIZE].copy_from_slice(&h);
        out
    }
}

/// The 16-byte pipe-mode header.
pub fn pipe_header(endian: Endian) -> Vec<u8> {
    let mut h = Vec::with_capacity(PIPE_HEADER_SIZE);
    h.extend_from_slice(&match endian {
        Endian::Little => MAGIC.to_le_bytes(),
        Endian::Big => MAGIC.to_be_bytes(),
    });
    Put(endian).u64(&mut h, PIPE_HEADER_SIZE as u64);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileInfo;
    use crate::attr::{Attr, flag};

    fn raw_attr(endian: Endian) -> Vec<u8> {
        let p = Put(endian);
        let mut v = Vec::new();
        p.u32(&mut v, 1);
        p.u32(&mut v, 136);
        v.resize(136, 0);
        v
    }

    #[test]
    fn flag_bits_round_trip_in_both_orders() {
        for e in [Endian::Little, Endian::Big] {
            let mut raw = raw_attr(e);
            set_attr_flags(&mut raw, e, flag::DEFER_CALLCHAIN | flag::SAMPLE_ID_ALL);
            let a = Attr::parse(&raw, e).unwrap();
            assert_eq!(a.flags, flag::DEFER_CALLCHAIN | flag::SAMPLE_ID_ALL, "{e:?}");
        }
    }

    #[test]
    fn written_file_reads_back() {
        for e in [Endian::Little, Endian::Big] {
            let mut data = Vec::new();
            Put(e).header(&mut data, 68, 0, 8);
            let w = FileWriter {
                endian: e,
                attrs: vec![AttrEntry { raw: raw_attr(e), ids: vec![7, 8] }],
                data: data.clone(),
                features: vec![(3, vec![4, 0, 0, 0, b'h', b'o', b's', 0])],
            };
            let bytes = w.to_bytes();
            let info = FileInfo::parse(&bytes).unwrap();
            assert_eq!(info.evlist.evsels[0].ids, vec![7, 8]);
            assert_eq!(&bytes[info.data.clone()], &data[..]);
            assert!(info.features.get(3).is_some());
        }
    }
}

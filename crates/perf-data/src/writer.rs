//! Writing perf.data files (`pstitch inject` and the fixture tools).
//!
//! File mode is laid out the way perf record lays it out: the 104-byte
//! header, the id arrays, the attr section (`{attr, ids section}` per
//! event), the records, then the feature table and feature payloads.
//! [`FileSink`] writes it as the records come (the header last, once the
//! sizes are known); [`FileWriter`] assembles one in memory. Pipe mode is
//! the 16-byte header followed by records; what file mode keeps in the
//! header comes as records ([`attr_record`], [`feature_record`],
//! [`tracing_data_record`]). Values are written in the byte order given,
//! so cross-endian files can be produced too.
//!
//! ```text
//! file:  header | ids | attrs | data (records) | feature table | payloads [| ids | attrs]
//!                                                  ^ at data.offset + data.size, where perf looks
//! ```
//! The attrs go at the end only when they were not all known when the
//! data began (a pipe whose attrs keep coming).

use std::io::{Seek, SeekFrom, Write};

use super::attr::ATTR_SIZE_VER0;
use super::bytes::Endian;
use super::header::{FILE_HEADER_SIZE, MAGIC, PIPE_HEADER_SIZE};
use super::record::{HEADER_SIZE, kind};

/// Appends integers in a fixed byte order.
#[derive(Debug, Clone, Copy)]
pub struct Put(pub Endian);

impl Put {
    #[inline]
    fn b16(self, v: u16) -> [u8; 2] {
        match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
    #[inline]
    fn b32(self, v: u32) -> [u8; 4] {
        match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
    #[inline]
    fn b64(self, v: u64) -> [u8; 8] {
        match self.0 {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
    #[inline]
    pub fn u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&self.b16(v));
    }
    #[inline]
    pub fn u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&self.b32(v));
    }
    #[inline]
    pub fn u64(self, out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&self.b64(v));
    }
    /// Appends each of `vs`, into room made at once.
    #[inline]
    pub fn u64s(self, out: &mut Vec<u8>, vs: &[u64]) {
        let start = out.len();
        out.resize(start + vs.len() * 8, 0);
        for (to, &v) in out[start..].chunks_exact_mut(8).zip(vs) {
            to.copy_from_slice(&self.b64(v));
        }
    }
    /// Overwrites a `u16` at `off`.
    #[inline]
    pub fn set_u16(self, out: &mut [u8], off: usize, v: u16) {
        out[off..off + 2].copy_from_slice(&self.b16(v));
    }
    /// Overwrites a `u64` at `off`.
    #[inline]
    pub fn set_u64(self, out: &mut [u8], off: usize, v: u64) {
        out[off..off + 8].copy_from_slice(&self.b64(v));
    }
    /// A record header.
    #[inline]
    pub fn header(self, out: &mut Vec<u8>, type_: u32, misc: u16, size: u16) {
        self.u32(out, type_);
        self.u16(out, misc);
        self.u16(out, size);
    }
}

/// Sets bits of the attr flags word (offset 40) in raw attr bytes, honouring
/// the big-endian bitfield layout (see [`super::attr::Attr::parse`]).
pub fn set_attr_flags(raw_attr: &mut [u8], endian: Endian, mask: u64) {
    for_flag_bits(raw_attr, endian, mask, |byte, bit| *byte |= bit);
}

/// A cpu-clock attr (`PERF_ATTR_SIZE_VER5`, 128 bytes) sampling every
/// `period` with `sample_type`, `sample_id_all` and `exclude_guest` set,
/// as `perf record -e cpu-clock -c PERIOD` writes it: for recordings written
/// by hand (tests, fixtures).
pub fn cpu_clock_attr(endian: Endian, period: u64, sample_type: u64) -> Vec<u8> {
    let p = Put(endian);
    let mut attr = Vec::new();
    p.u32(&mut attr, 1); // PERF_TYPE_SOFTWARE
    p.u32(&mut attr, 128);
    p.u64(&mut attr, 0); // PERF_COUNT_SW_CPU_CLOCK
    p.u64(&mut attr, period);
    p.u64(&mut attr, sample_type);
    attr.resize(128, 0);
    set_attr_flags(&mut attr, endian, super::attr::flag::SAMPLE_ID_ALL | super::attr::flag::EXCLUDE_GUEST);
    attr
}

/// Clears bits of the attr flags word (see [`set_attr_flags`]).
pub fn clear_attr_flags(raw_attr: &mut [u8], endian: Endian, mask: u64) {
    for_flag_bits(raw_attr, endian, mask, |byte, bit| *byte &= !bit);
}

/// Calls `f` with the byte and the bit in it of every flag in `mask`.
fn for_flag_bits(raw_attr: &mut [u8], endian: Endian, mask: u64, mut f: impl FnMut(&mut u8, u8)) {
    if raw_attr.len() < ATTR_SIZE_VER0 {
        return;
    }
    for bit in 0..64 {
        if mask & (1 << bit) == 0 {
            continue;
        }
        let b = bit % 8;
        f(
            &mut raw_attr[40 + bit / 8],
            match endian {
                Endian::Little => 1 << b,
                Endian::Big => 0x80 >> b,
            },
        );
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
        let run = || -> std::io::Result<Vec<u8>> {
            let mut sink = FileSink::begin(std::io::Cursor::new(Vec::new()), self.endian, Some(&self.attrs))?;
            sink.write_data(&self.data)?;
            Ok(sink.finish(None, &self.features)?.into_inner())
        };
        run().expect("writing to memory does not fail")
    }
}

/// Where a section lies: `{u64 offset, u64 size}`.
#[derive(Debug, Clone, Copy, Default)]
struct Placed {
    offset: u64,
    size: u64,
}

/// A file-mode perf.data written as it goes: room for the header, the
/// attrs if known, the records as they come, and at the end the features
/// (and the attrs if they were not known at the start), then the header.
pub struct FileSink<W: Write + Seek> {
    w: W,
    endian: Endian,
    /// The attr section, when written before the data: where, and the
    /// size of one entry.
    attrs: Option<(Placed, u64)>,
    data: Placed,
}

impl<W: Write + Seek> FileSink<W> {
    /// Starts a file at the current position of `w` (its start): the
    /// header's room, then `attrs` with their ids if they are known.
    pub fn begin(mut w: W, endian: Endian, attrs: Option<&[AttrEntry]>) -> std::io::Result<FileSink<W>> {
        w.write_all(&[0u8; FILE_HEADER_SIZE])?;
        let mut at = FILE_HEADER_SIZE as u64;
        let attrs = match attrs {
            Some(a) => {
                let (bytes, placed, entry) = attr_section(endian, a, at);
                w.write_all(&bytes)?;
                at += bytes.len() as u64;
                Some((placed, entry))
            }
            None => None,
        };
        Ok(FileSink { w, endian, attrs, data: Placed { offset: at, size: 0 } })
    }

    /// Appends records (or any bytes) to the data section.
    pub fn write_data(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.data.size += bytes.len() as u64;
        self.w.write_all(bytes)
    }

    /// Writes the feature table and payloads (in bit order) after the
    /// data, the attrs after them if `late_attrs` is given (they replace
    /// those written at the start, if any), then the header. Returns the
    /// writer, positioned at the header's end.
    pub fn finish(mut self, late_attrs: Option<&[AttrEntry]>, features: &[(u32, Vec<u8>)]) -> std::io::Result<W> {
        let p = Put(self.endian);
        let mut feats: Vec<&(u32, Vec<u8>)> = features.iter().filter(|(bit, _)| *bit < 256).collect();
        feats.sort_by_key(|(b, _)| *b);
        feats.dedup_by_key(|(b, _)| *b);
        let table_off = self.data.offset + self.data.size;
        let mut table = Vec::with_capacity(feats.len() * 16);
        let mut bitmap = [0u64; 4];
        let mut off = table_off + (feats.len() * 16) as u64;
        for (bit, payload) in &feats {
            bitmap[(*bit / 64) as usize] |= 1 << (bit % 64);
            p.u64(&mut table, off);
            p.u64(&mut table, payload.len() as u64);
            off += payload.len() as u64;
        }
        self.w.write_all(&table)?;
        for (_, payload) in &feats {
            self.w.write_all(payload)?;
        }
        if let Some(a) = late_attrs {
            let (bytes, placed, entry) = attr_section(self.endian, a, off);
            self.w.write_all(&bytes)?;
            self.attrs = Some((placed, entry));
        }
        let (attrs, attr_size) = self.attrs.unwrap_or((Placed::default(), (ATTR_SIZE_VER0 + 16) as u64));
        let mut h = Vec::with_capacity(FILE_HEADER_SIZE);
        h.extend_from_slice(&match self.endian {
            Endian::Little => MAGIC.to_le_bytes(),
            Endian::Big => MAGIC.to_be_bytes(),
        });
        for v in [FILE_HEADER_SIZE as u64, attr_size, attrs.offset, attrs.size, self.data.offset, self.data.size, 0, 0] {
            p.u64(&mut h, v);
        }
        for w in bitmap {
            p.u64(&mut h, w);
        }
        self.w.flush()?;
        self.w.seek(SeekFrom::Start(0))?;
        self.w.write_all(&h)?;
        self.w.flush()?;
        Ok(self.w)
    }
}

/// The id arrays and then the attr section for attrs starting at file
/// offset `at`: the bytes, where the attr section lies, and the size of
/// one of its entries. Entries are as long as the longest attr (shorter
/// ones are padded with zeros, which perf reads as fields not set).
fn attr_section(endian: Endian, attrs: &[AttrEntry], at: u64) -> (Vec<u8>, Placed, u64) {
    let p = Put(endian);
    let attr_len = attrs.iter().map(|a| a.raw.len()).max().unwrap_or(ATTR_SIZE_VER0);
    let mut out = Vec::new();
    let mut id_offsets = Vec::new();
    for a in attrs {
        id_offsets.push(at + out.len() as u64);
        for &id in &a.ids {
            p.u64(&mut out, id);
        }
    }
    let attrs_off = at + out.len() as u64;
    for (a, &off) in attrs.iter().zip(&id_offsets) {
        let start = out.len();
        out.extend_from_slice(&a.raw);
        out.resize(start + attr_len, 0);
        p.u64(&mut out, off);
        p.u64(&mut out, (a.ids.len() * 8) as u64);
    }
    let size = at + out.len() as u64 - attrs_off;
    (out, Placed { offset: attrs_off, size }, (attr_len + 16) as u64)
}

/// A record of `type_` with `body` after its header, or `None` when it
/// would not fit the header's 16-bit size.
fn user_record(endian: Endian, type_: u32, parts: &[&[u8]]) -> Option<Vec<u8>> {
    let len = HEADER_SIZE + parts.iter().map(|p| p.len()).sum::<usize>();
    let size = u16::try_from(len).ok()?;
    let mut v = Vec::with_capacity(len);
    Put(endian).header(&mut v, type_, 0, size);
    for p in parts {
        v.extend_from_slice(p);
    }
    Some(v)
}

/// HEADER_ATTR (pipe mode): `{ header, attr, u64 ids[] }`; `None` when
/// there are too many ids for one record.
pub fn attr_record(endian: Endian, raw_attr: &[u8], ids: &[u64]) -> Option<Vec<u8>> {
    let mut id_bytes = Vec::with_capacity(ids.len() * 8);
    for &id in ids {
        Put(endian).u64(&mut id_bytes, id);
    }
    user_record(endian, kind::HEADER_ATTR, &[raw_attr, &id_bytes])
}

/// HEADER_FEATURE (pipe mode): `{ header, u64 feat_id, payload }` — the
/// payload in its file-mode encoding; `None` when it does not fit a record.
pub fn feature_record(endian: Endian, bit: u64, payload: &[u8]) -> Option<Vec<u8>> {
    let mut id = Vec::with_capacity(8);
    Put(endian).u64(&mut id, bit);
    user_record(endian, kind::HEADER_FEATURE, &[&id, payload])
}

/// EVENT_UPDATE naming an event (how a stream names its events):
/// `{ header, u64 type = 2 (NAME), u64 id, char name[] }`, the name
/// NUL-terminated and padded to 8 bytes.
pub fn event_name_record(endian: Endian, id: u64, name: &[u8]) -> Option<Vec<u8>> {
    const NAME: u64 = 2;
    let mut head = Vec::with_capacity(16);
    Put(endian).u64(&mut head, NAME);
    Put(endian).u64(&mut head, id);
    let mut padded = name.to_vec();
    padded.resize((name.len() + 1).next_multiple_of(8), 0);
    user_record(endian, kind::EVENT_UPDATE, &[&head, &padded])
}

/// HEADER_TRACING_DATA (pipe mode): `{ header, u32 size, u32 pad }`
/// followed by the tracing data (outside the record's size), padded to 8
/// bytes; `size` counts the padding, as perf writes it.
pub fn tracing_data_record(endian: Endian, data: &[u8]) -> Vec<u8> {
    let aligned = data.len().next_multiple_of(8);
    let mut v = Vec::with_capacity(16 + aligned);
    let p = Put(endian);
    p.header(&mut v, kind::HEADER_TRACING_DATA, 0, 16);
    p.u32(&mut v, aligned as u32);
    p.u32(&mut v, 0);
    v.extend_from_slice(data);
    v.resize(16 + aligned, 0);
    v
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

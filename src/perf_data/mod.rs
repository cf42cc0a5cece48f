//! Reading perf.data: the header, the event list, feature sections, and the
//! stream of records — zero-copy over a memory map for files, streaming
//! for pipes.
//!
//! Nothing here orders or interprets records beyond what is needed to split
//! them; that is [`crate::session`]'s job.

pub mod attr;
pub mod bytes;
pub mod compressed;
pub mod error;
pub mod evlist;
pub mod features;
pub mod header;
pub mod record;
pub mod sample;
pub mod writer;

use std::borrow::Cow;
use std::io::Read;

pub use error::{Error, Result};

use attr::Attr;
use bytes::Endian;
use evlist::{Evlist, Evsel};
use features::Features;
use header::{FileHeader, Section};
use record::{HEADER_SIZE, RecordHeader, kind};

/// One record as read from the input: its bytes (header included) and where
/// it started. Records of type HEADER_TRACING_DATA and AUXTRACE are followed
/// in the stream by a payload that is not counted in `header.size`; it is
/// included in `bytes`.
#[derive(Debug, Clone)]
pub struct RawRecord<'a> {
    pub offset: u64,
    pub header: RecordHeader,
    pub bytes: Cow<'a, [u8]>,
}

/// Size of the out-of-record payload that follows some user records.
fn trailing_payload(header: &RecordHeader, record: &[u8], endian: Endian) -> std::result::Result<usize, ()> {
    let n = match header.type_ {
        // struct { header; u32 size; u32 pad } then `size` bytes, 8-aligned.
        kind::HEADER_TRACING_DATA => endian.read_u32(record, HEADER_SIZE).ok_or(())? as u64,
        // struct { header; u64 size; ... } then `size` bytes.
        kind::AUXTRACE => endian.read_u64(record, HEADER_SIZE).ok_or(())?,
        _ => return Ok(0),
    };
    let n = usize::try_from(n).map_err(|_| ())?;
    n.checked_add(7).map(|n| n & !7).ok_or(())
}

/// Where records come from.
pub enum RecordSource<'a> {
    /// A range of a mapped file.
    Slice { data: &'a [u8], pos: usize, end: usize, endian: Endian },
    /// A pipe or other non-seekable input.
    Stream { reader: Box<dyn Read + 'a>, pos: u64, endian: Endian },
}

impl<'a> RecordSource<'a> {
    pub fn endian(&self) -> Endian {
        match self {
            RecordSource::Slice { endian, .. } | RecordSource::Stream { endian, .. } => *endian,
        }
    }

    /// Bytes of input consumed so far (the file offset in file mode).
    pub fn position(&self) -> u64 {
        match self {
            RecordSource::Slice { pos, .. } => *pos as u64,
            RecordSource::Stream { pos, .. } => *pos,
        }
    }

    /// Total input size, when known (not for pipes).
    pub fn total(&self) -> Option<u64> {
        match self {
            RecordSource::Slice { end, .. } => Some(*end as u64),
            RecordSource::Stream { .. } => None,
        }
    }

    /// The next record, `None` at a clean end of input.
    pub fn next_record(&mut self) -> Result<Option<RawRecord<'a>>> {
        match self {
            RecordSource::Slice { data, pos, end, endian } => {
                if *pos >= *end {
                    return Ok(None);
                }
                let off = *pos as u64;
                let avail = &data[*pos..*end];
                let header = RecordHeader::parse(avail, *endian).ok_or_else(|| {
                    Error::at(off, format!("record header truncated ({} bytes left)", avail.len()))
                })?;
                let size = header.size as usize;
                if size < HEADER_SIZE {
                    return Err(Error::in_record(off, header.type_, format!("record size {size} is smaller than its header")));
                }
                if size > avail.len() {
                    return Err(Error::in_record(
                        off,
                        header.type_,
                        format!("record of {size} bytes runs past the end of the data ({} bytes left)", avail.len()),
                    ));
                }
                let extra = trailing_payload(&header, &avail[..size], *endian)
                    .map_err(|_| Error::in_record(off, header.type_, "bad payload size"))?;
                let total = size.checked_add(extra).filter(|&t| t <= avail.len()).ok_or_else(|| {
                    Error::in_record(off, header.type_, format!("payload of {extra} bytes runs past the end of the data"))
                })?;
                *pos += total;
                Ok(Some(RawRecord { offset: off, header, bytes: Cow::Borrowed(&avail[..total]) }))
            }
            RecordSource::Stream { reader, pos, endian } => {
                let off = *pos;
                let mut hdr = [0u8; HEADER_SIZE];
                let got = read_full(reader.as_mut(), &mut hdr).map_err(Error::io)?;
                if got == 0 {
                    return Ok(None);
                }
                if got < HEADER_SIZE {
                    return Err(Error::at(off, format!("record header truncated ({got} bytes left)")));
                }
                let header = RecordHeader::parse(&hdr, *endian).expect("8 bytes");
                let size = header.size as usize;
                if size < HEADER_SIZE {
                    return Err(Error::in_record(off, header.type_, format!("record size {size} is smaller than its header")));
                }
                let mut buf = Vec::with_capacity(size);
                buf.extend_from_slice(&hdr);
                buf.resize(size, 0);
                let got = read_full(reader.as_mut(), &mut buf[HEADER_SIZE..]).map_err(Error::io)?;
                if got < size - HEADER_SIZE {
                    return Err(Error::in_record(off, header.type_, format!("record of {size} bytes truncated by end of input")));
                }
                let extra = trailing_payload(&header, &buf, *endian)
                    .map_err(|_| Error::in_record(off, header.type_, "bad payload size"))?;
                if extra > 0 {
                    // Read in steps so a lying size cannot make us allocate
                    // more than the input actually holds.
                    let mut left = extra;
                    let mut chunk = vec![0u8; 64 * 1024];
                    while left > 0 {
                        let want = left.min(chunk.len());
                        let got = read_full(reader.as_mut(), &mut chunk[..want]).map_err(Error::io)?;
                        buf.extend_from_slice(&chunk[..got]);
                        if got < want {
                            return Err(Error::in_record(off, header.type_, "payload truncated by end of input"));
                        }
                        left -= got;
                    }
                }
                *pos += buf.len() as u64;
                Ok(Some(RawRecord { offset: off, header, bytes: Cow::Owned(buf) }))
            }
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The input bytes of a file-mode perf.data.
pub enum FileBytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
        }
    }
}

/// What the header of a file-mode perf.data says, decoded.
pub struct FileInfo {
    pub header: FileHeader,
    pub evlist: Evlist,
    pub features: Features,
    /// Byte range of the records.
    pub data: std::ops::Range<usize>,
    /// Problems that did not stop reading (printed once by the caller).
    pub warnings: Vec<String>,
}

impl FileInfo {
    /// Decodes the header, the attrs with their ids, and the feature
    /// sections of a file-mode perf.data held in `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<FileInfo> {
        let header = FileHeader::parse(bytes)?;
        let endian = header.endian;
        let mut warnings = Vec::new();

        let data = match header.data.range(bytes.len()) {
            Some(r) if header.data.size > 0 => r,
            _ => {
                let start = usize::try_from(header.data.offset).ok().filter(|&s| s <= bytes.len()).ok_or_else(|| {
                    Error::at(40, format!("data section offset {:#x} is past the end of the file", header.data.offset))
                })?;
                if header.data.size == 0 {
                    warnings.push(
                        "the data size field is 0, which is unexpected; was 'perf record' properly terminated? \
                         reading records up to the end of the file"
                            .to_string(),
                    );
                } else {
                    warnings.push(format!(
                        "the data section ({:#x} bytes at {:#x}) runs past the end of the file; reading what is there",
                        header.data.size, header.data.offset
                    ));
                }
                start..bytes.len()
            }
        };

        let evlist = read_attrs(bytes, &header)?;
        let mut features = Features::new(endian);
        if header.data.size > 0 && data.end == (header.data.offset + header.data.size) as usize {
            read_features(bytes, &header, &mut features, &mut warnings);
        }
        let mut info = FileInfo { header, evlist, features, data, warnings };
        info.apply_event_desc();
        Ok(info)
    }

    /// Names events from EVENT_DESC, matched by position as perf does.
    fn apply_event_desc(&mut self) {
        for (i, desc) in self.features.event_desc().into_iter().enumerate() {
            if let Some(ev) = self.evlist.evsels.get_mut(i) {
                if ev.name.is_none() {
                    ev.name = Some(desc.name);
                }
            }
        }
    }
}

/// The attr section: `{ attr (attr.size bytes), ids {offset, size} }` entries
/// read back to back, as perf reads them.
fn read_attrs(bytes: &[u8], header: &FileHeader) -> Result<Evlist> {
    let endian = header.endian;
    let mut evlist = Evlist::default();
    if header.attr_size == 0 {
        return Ok(evlist);
    }
    let range = header
        .attrs
        .range(bytes.len())
        .ok_or_else(|| Error::at(24, "attr section lies outside the file"))?;
    let nr = header.attrs.size / header.attr_size;
    let mut off = range.start;
    for i in 0..nr {
        let entry = &bytes[off..range.end];
        let attr = Attr::parse(entry, endian)
            .ok_or_else(|| Error::at(off as u64, format!("attr {i} truncated")))?;
        let sz = attr.disk_size();
        let ids_sec = entry
            .get(sz..sz + 16)
            .and_then(|b| Section::read(&mut bytes::Cursor::new(b, endian)))
            .ok_or_else(|| Error::at(off as u64, format!("attr {i} truncated")))?;
        let ids_range = ids_sec
            .range(bytes.len())
            .ok_or_else(|| Error::at((off + sz) as u64, format!("ids of attr {i} lie outside the file")))?;
        let ids = bytes[ids_range].chunks_exact(8).map(|c| endian.u64(c.try_into().expect("8 bytes"))).collect();
        evlist.push(Evsel { attr, name: None, ids });
        off += sz + 16;
    }
    Ok(evlist)
}

/// The feature table sits right after the data: one `{offset, size}` per set
/// bit, in bit order.
fn read_features(bytes: &[u8], header: &FileHeader, features: &mut Features, warnings: &mut Vec<String>) {
    let endian = header.endian;
    let table = (header.data.offset + header.data.size) as usize;
    for (i, bit) in header.feature_bits().enumerate() {
        let at = table + i * 16;
        let Some(sec) = bytes.get(at..at + 16).and_then(|b| Section::read(&mut bytes::Cursor::new(b, endian))) else {
            warnings.push(format!("feature table truncated at offset {at:#x}"));
            return;
        };
        match sec.range(bytes.len()) {
            Some(r) => features.insert(bit, bytes[r].to_vec()),
            None => warnings.push(format!("feature {bit} section lies outside the file (offset {at:#x})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_source_rejects_bad_sizes() {
        let mut rec = Vec::new();
        rec.extend(9u32.to_le_bytes());
        rec.extend(0u16.to_le_bytes());
        rec.extend(4u16.to_le_bytes());
        {
            let mut s = RecordSource::Slice { data: &rec, pos: 0, end: rec.len(), endian: Endian::Little };
            let e = s.next_record().unwrap_err();
            assert_eq!(e.offset, Some(0));
        }
        rec[6] = 64;
        let mut s = RecordSource::Slice { data: &rec, pos: 0, end: rec.len(), endian: Endian::Little };
        assert!(s.next_record().unwrap_err().message.contains("runs past"));
    }

    #[test]
    fn stream_source_reads_tracing_payload() {
        let mut rec = Vec::new();
        rec.extend(kind::HEADER_TRACING_DATA.to_le_bytes());
        rec.extend(0u16.to_le_bytes());
        rec.extend(16u16.to_le_bytes());
        rec.extend(5u32.to_le_bytes());
        rec.extend(0u32.to_le_bytes());
        rec.extend([1, 2, 3, 4, 5, 0, 0, 0]);
        let n = rec.len();
        let mut s = RecordSource::Stream { reader: Box::new(&rec[..]), pos: 0, endian: Endian::Little };
        let r = s.next_record().unwrap().unwrap();
        assert_eq!(r.bytes.len(), n);
        assert!(s.next_record().unwrap().is_none());
    }
}

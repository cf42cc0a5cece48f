//! Reading and writing perf.data, the file `perf record` writes: the
//! header, the event list (attrs), the feature sections, and the stream of
//! records, zero-copy over bytes held in memory for files and streaming
//! for pipes.
//!
//! ```text
//! file mode (perf record -o file)         pipe mode (perf record -o -)
//! +------------------------+               +-------------+
//! | header                 | header.rs     | pipe header |
//! | attrs + their ids      | attr, evlist  | records ... |  HEADER_ATTR, HEADER_FEATURE,
//! | data: records ...      | record,sample |             |  HEADER_TRACING_DATA come
//! | feature sections       | features      |             |  as records
//! +------------------------+               +-------------+
//! ```
//!
//! Nothing here orders or interprets records beyond what is needed to split
//! them: pstitch's session does that. The crate holds no `unsafe` code;
//! memory-mapping a file is the caller's choice ([`Backing`]).
//!
//! # Example
//!
//! Count the samples of a recording:
//!
//! ```no_run
//! use perf_data::{Input, record::kind};
//!
//! let mut input = Input::open(std::path::Path::new("perf.data"))?;
//! let mut records = input.records();
//! let mut samples = 0;
//! while let Some(r) = records.next_record()? {
//!     if r.header.type_ == kind::SAMPLE {
//!         samples += 1;
//!     }
//! }
//! println!("{samples} samples");
//! # Ok::<(), perf_data::Error>(())
//! ```

#![forbid(unsafe_code)]

pub mod attr;
pub mod bpf;
pub mod bytes;
pub mod compressed;
pub mod env;
pub mod error;
pub mod evlist;
pub mod features;
pub mod header;
mod input;
pub mod record;
pub mod sample;
pub mod writer;

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

pub use error::{Damage, Error, Result};
pub use input::Input;

use attr::Attr;
use bytes::Endian;
use evlist::{Evlist, Evsel};
use features::Features;
use header::{FILE_HEADER_SIZE, FileHeader, Section};
use record::{HEADER_SIZE, RecordHeader, kind};

/// One record as read from the input: its bytes (header included) and where
/// it started. Records of type HEADER_TRACING_DATA and AUXTRACE are followed
/// in the stream by a payload that is not counted in `header.size`; it is
/// included in `bytes`, except an AUXTRACE record's read from a stream
/// (hardware trace data, read past without being kept).
#[derive(Debug, Clone)]
pub struct RawRecord<'a> {
    pub offset: u64,
    /// Which file of a directory input the record is in (`offset` is
    /// within that file): 0 for `data` (and for any other input), then the
    /// `data.N` files in order (see `Input::part_names`).
    pub part: u32,
    pub header: RecordHeader,
    pub bytes: Cow<'a, [u8]>,
}

/// Size of the out-of-record payload that follows some user records.
#[inline]
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

/// The record at the start of `avail` (file offset `off`): its header and
/// its size with the payload that follows it, checked against what is left.
#[inline]
fn record_at(avail: &[u8], off: u64, endian: Endian) -> Result<(RecordHeader, usize)> {
    let header = RecordHeader::parse(avail, endian)
        .ok_or_else(|| Error::at(off, format!("record header truncated ({} bytes left)", avail.len())))?;
    let size = header.size as usize;
    check_size(off, &header)?;
    if size > avail.len() {
        return Err(Error::in_record(
            off,
            header.type_,
            format!("record of {size} bytes runs past the end of the data ({} bytes left)", avail.len()),
        ));
    }
    let extra = trailing_payload(&header, &avail[..size], endian).map_err(|_| Error::in_record(off, header.type_, "bad payload size"))?;
    let total = size
        .checked_add(extra)
        .filter(|&t| t <= avail.len())
        .ok_or_else(|| Error::in_record(off, header.type_, format!("payload of {extra} bytes runs past the end of the data")))?;
    Ok((header, total))
}

/// Memory that holds a whole input (a file mapping, say), shared by
/// whoever keeps a part of it.
pub trait Backing: Send + Sync {
    fn bytes(&self) -> &[u8];

    /// Records are read front to back and the reader got to offset `pos`:
    /// a backing may prepare the bytes ahead and give back those far
    /// behind (they must read the same if touched again).
    fn reading_at(&self, _pos: usize) {}

    /// The bytes will not be needed for a while: a backing may give their
    /// memory back (they must read the same if touched again).
    fn release(&self) {}

    /// Records from offset `pos` on are still to be read again (they wait
    /// to be sorted by time): a backing that gives back the bytes behind
    /// the reading should keep those (`usize::MAX`: none waits). Giving
    /// them back would only make them come in again, on the reading
    /// side's time.
    fn keep_from(&self, _pos: usize) {}
}

/// The bytes of a whole input: a buffer of its own, or a shared
/// [`Backing`].
#[derive(Clone)]
pub enum FileBytes {
    Owned(Vec<u8>),
    Shared(Arc<dyn Backing>),
}

impl FileBytes {
    /// See [`Backing::release`].
    pub fn release_pages(&self) {
        if let FileBytes::Shared(b) = self {
            b.release();
        }
    }

    fn backing(&self) -> Option<&dyn Backing> {
        match self {
            FileBytes::Shared(b) => Some(&**b),
            FileBytes::Owned(_) => None,
        }
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Owned(v) => v,
            FileBytes::Shared(b) => b.bytes(),
        }
    }
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if matches!(self, FileBytes::Owned(_)) { "Owned" } else { "Shared" };
        write!(f, "FileBytes::{kind}({} bytes)", self.len())
    }
}

/// The most bytes of payload after a record (tracing data) a stream's
/// reader keeps in memory.
const MAX_STREAMED_PAYLOAD: usize = 256 << 20;

/// A stream's buffer.
const STREAM_BUFFER: usize = 64 << 10;

/// An input read as a stream (a pipe), which may also tell whether a read
/// would return at once.
pub trait Stream: Read {
    /// Whether a read would return at once (with data, or at the end of
    /// the input); `true` where the stream cannot tell.
    fn ready(&self) -> bool {
        true
    }
}

/// A reader that cannot tell.
struct Plain<'a>(Box<dyn Read + 'a>);

impl Read for Plain<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Stream for Plain<'_> {}

/// How often a [`Backing`] hears where the reading is, in bytes.
const TELL_EVERY: usize = 64 << 10;

/// Where records come from: a range of bytes in memory, or a stream.
pub struct RecordSource<'a> {
    inner: Source<'a>,
}

enum Source<'a> {
    /// `missing` is how many bytes of the data section the header promised
    /// beyond `end` (a truncated file): the source reports them as an
    /// error once the records present are read. The backing hears of the
    /// reading position when it passes `tell_at` (every [`TELL_EVERY`]
    /// bytes).
    Slice { data: &'a [u8], backing: Option<&'a dyn Backing>, pos: usize, end: usize, endian: Endian, missing: u64, tell_at: usize },
    /// A pipe or other non-seekable input, read through a buffer of its
    /// own (so that an empty buffer says when the next read may wait).
    Stream { reader: std::io::BufReader<Box<dyn Stream + 'a>>, pos: u64, endian: Endian },
    /// A `perf record --threads` directory: the data section of its `data`
    /// file, then each `data.N` file, read in turns of [`DIR_TURN`] bytes
    /// (perf's `__perf_session__process_dir_events`). Offsets are within
    /// each part; `read` counts the bytes read from all of them.
    Dir { parts: Vec<Part<'a>>, turn: usize, used: usize, read: u64, endian: Endian },
}

/// One file of a directory input.
struct Part<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
}

/// perf's READER_MAX_SIZE: how many bytes of one file of a directory input
/// are read before the next file's turn.
pub const DIR_TURN: usize = 2 << 20;

impl<'a> RecordSource<'a> {
    /// The records of `data[start..end]` (offsets are positions in `data`).
    pub fn from_slice(data: &'a [u8], start: usize, end: usize, endian: Endian) -> RecordSource<'a> {
        RecordSource { inner: Source::Slice { data, backing: None, pos: start, end: end.min(data.len()), endian, missing: 0, tell_at: usize::MAX } }
    }

    /// The records a stream holds from its current position on, which is
    /// input offset `pos`.
    pub fn from_reader(reader: Box<dyn Read + 'a>, pos: u64, endian: Endian) -> RecordSource<'a> {
        RecordSource::from_stream(Box::new(Plain(reader)), pos, endian)
    }

    /// [`RecordSource::from_reader`] for a stream that can tell whether a
    /// read would wait.
    pub fn from_stream(stream: Box<dyn Stream + 'a>, pos: u64, endian: Endian) -> RecordSource<'a> {
        RecordSource { inner: Source::Stream { reader: std::io::BufReader::with_capacity(STREAM_BUFFER, stream), pos, endian } }
    }

    /// See [`Backing::keep_from`]: records from input offset `pos` on
    /// (`u64::MAX`: none) will be read again.
    pub fn keep_from(&self, pos: u64) {
        if let Source::Slice { backing: Some(b), .. } = &self.inner {
            b.keep_from(usize::try_from(pos).unwrap_or(usize::MAX));
        }
    }

    /// Whether reading the next record may have to wait for the input (a
    /// pipe whose writer has nothing to say right now): the moment to
    /// write out what is final. Input in memory never waits.
    pub fn would_wait(&self) -> bool {
        match &self.inner {
            Source::Stream { reader, .. } => reader.buffer().is_empty() && !reader.get_ref().ready(),
            Source::Slice { .. } | Source::Dir { .. } => false,
        }
    }

    /// The records of a directory input: `parts` are (bytes, start, end),
    /// the `data` file's data section first, then the `data.N` files.
    pub fn from_parts(parts: Vec<(&'a [u8], usize, usize)>, endian: Endian) -> RecordSource<'a> {
        let parts = parts.into_iter().map(|(data, pos, end)| Part { data, pos, end: end.min(data.len()) }).collect();
        RecordSource { inner: Source::Dir { parts, turn: 0, used: 0, read: 0, endian } }
    }

    pub fn endian(&self) -> Endian {
        match &self.inner {
            Source::Slice { endian, .. } | Source::Stream { endian, .. } | Source::Dir { endian, .. } => *endian,
        }
    }

    /// Bytes of input consumed so far (the file offset in file mode).
    pub fn position(&self) -> u64 {
        match &self.inner {
            Source::Slice { pos, .. } => *pos as u64,
            Source::Stream { pos, .. } => *pos,
            Source::Dir { read, .. } => *read,
        }
    }

    /// Total input size, when known (not for pipes).
    pub fn total(&self) -> Option<u64> {
        match &self.inner {
            Source::Slice { end, .. } => Some(*end as u64),
            Source::Stream { .. } => None,
            Source::Dir { parts, .. } => Some(parts.iter().map(|p| p.end.saturating_sub(p.pos) as u64).sum()),
        }
    }

    /// The records after the read position, or after offset `from` if
    /// that is further, without reading them, each with the offset after
    /// it: only input in memory can show them (a stream shows none). The
    /// walk stops quietly where a record would be an error for
    /// [`RecordSource::next_record`]; that one reports it when it gets there.
    pub fn upcoming(&self, from: u64) -> impl Iterator<Item = (u64, &'a [u8])> + use<'a> {
        let (data, mut pos, end, endian) = match &self.inner {
            Source::Slice { data, pos, end, endian, .. } => (*data, (*pos).max(from as usize), *end, *endian),
            // (The offsets of a directory's files overlap: none shown.)
            Source::Stream { endian, .. } | Source::Dir { endian, .. } => (&[][..], 0, 0, *endian),
        };
        std::iter::from_fn(move || {
            let avail = data.get(pos..end)?;
            let (header, total) = record_at(avail, pos as u64, endian).ok()?;
            pos += total;
            Some((pos as u64, &avail[..header.size as usize]))
        })
    }

    /// The next record, `None` at a clean end of input.
    pub fn next_record(&mut self) -> Result<Option<RawRecord<'a>>> {
        match &mut self.inner {
            Source::Dir { parts, turn, used, read, endian } => {
                // perf's round robin: a file reads until its turn's bytes
                // are used up or it ends, then the next file reads.
                let n = parts.len();
                for _ in 0..=n {
                    let Some(part) = parts.get_mut(*turn) else { return Ok(None) };
                    if part.pos >= part.end {
                        *turn = (*turn + 1) % n;
                        *used = 0;
                        continue;
                    }
                    let off = part.pos as u64;
                    let number = *turn as u32;
                    let avail = part.data.get(part.pos..part.end).unwrap_or(&[]);
                    let (header, total) = record_at(avail, off, *endian)?;
                    part.pos += total;
                    *read += total as u64;
                    *used += total;
                    if *used >= DIR_TURN {
                        *turn = (*turn + 1) % n;
                        *used = 0;
                    }
                    return Ok(Some(RawRecord { offset: off, part: number, header, bytes: Cow::Borrowed(&avail[..total]) }));
                }
                Ok(None)
            }
            Source::Slice { data, backing, pos, end, endian, missing, tell_at } => {
                if *pos >= *end {
                    if *missing > 0 {
                        let m = std::mem::take(missing);
                        return Err(Error::at(
                            *end as u64,
                            format!("the file ends here, {m} bytes before the end of the data section its header announces"),
                        ));
                    }
                    return Ok(None);
                }
                let off = *pos as u64;
                let avail = data.get(*pos..*end).unwrap_or(&[]);
                let (header, total) = record_at(avail, off, *endian)?;
                *pos += total;
                if *pos >= *tell_at
                    && let Some(b) = backing
                {
                    b.reading_at(*pos);
                    *tell_at = pos.saturating_add(TELL_EVERY);
                }
                Ok(Some(RawRecord { offset: off, part: 0, header, bytes: Cow::Borrowed(&avail[..total]) }))
            }
            Source::Stream { reader, pos, endian } => {
                let off = *pos;
                let mut hdr = [0u8; HEADER_SIZE];
                let got = read_full(reader, &mut hdr)?;
                if got == 0 {
                    return Ok(None);
                }
                if got < HEADER_SIZE {
                    return Err(Error::at(off, format!("record header truncated ({got} bytes left)")));
                }
                let header = RecordHeader::parse(&hdr, *endian)
                    .ok_or_else(|| Error::at(off, "record header truncated"))?;
                let size = header.size as usize;
                check_size(off, &header)?;
                let mut buf = Vec::with_capacity(size);
                buf.extend_from_slice(&hdr);
                buf.resize(size, 0);
                let got = read_full(reader, &mut buf[HEADER_SIZE..])?;
                if got < size - HEADER_SIZE {
                    return Err(Error::in_record(off, header.type_, format!("record of {size} bytes truncated by end of input")));
                }
                let extra = trailing_payload(&header, &buf, *endian)
                    .map_err(|_| Error::in_record(off, header.type_, "bad payload size"))?;
                let mut consumed = buf.len() as u64;
                if extra > 0 {
                    // Read in steps so a lying size cannot make us allocate
                    // more than the input actually holds. AUX data (hardware
                    // traces, which nothing here decodes) is read past, not
                    // kept: a pipe may send gigabytes of it.
                    let keep = header.type_ != kind::AUXTRACE;
                    if keep && extra > MAX_STREAMED_PAYLOAD {
                        return Err(Error::in_record(
                            off,
                            header.type_,
                            format!("payload of {extra} bytes is larger than a stream's {} MiB", MAX_STREAMED_PAYLOAD >> 20),
                        ));
                    }
                    let mut left = extra;
                    let mut chunk = vec![0u8; 64 * 1024];
                    while left > 0 {
                        let want = left.min(chunk.len());
                        let got = read_full(reader, &mut chunk[..want])?;
                        if keep {
                            buf.extend_from_slice(&chunk[..got]);
                        }
                        consumed += got as u64;
                        if got < want {
                            return Err(Error::in_record(off, header.type_, "payload truncated by end of input"));
                        }
                        left -= got;
                    }
                }
                *pos += consumed;
                Ok(Some(RawRecord { offset: off, part: 0, header, bytes: Cow::Owned(buf) }))
            }
        }
    }
}

/// The framing checks every record gets before its size is trusted: at
/// least a header, and a multiple of 8 (else every later record would be
/// read misaligned; perf 7.2 aborts there too).
#[inline]
pub fn check_size(off: u64, header: &RecordHeader) -> Result<()> {
    let size = header.size as usize;
    if size < HEADER_SIZE {
        return Err(Error::in_record(off, header.type_, format!("record size {size} is smaller than its header")));
    }
    if !size.is_multiple_of(8) && !record::size_may_be_unaligned(header.type_) {
        return Err(Error::in_record(off, header.type_, format!("record size {size} is not a multiple of 8")));
    }
    Ok(())
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

/// What the header of a file-mode perf.data says, decoded.
pub struct FileInfo {
    pub header: FileHeader,
    pub evlist: Evlist,
    /// Where each event's attr lies in the file (`attr.size` bytes, as
    /// written), in event order.
    pub attr_ranges: Vec<std::ops::Range<usize>>,
    pub features: Features,
    /// Byte range of the records.
    pub data: std::ops::Range<usize>,
    /// Bytes of the data section the header announces beyond the end of
    /// the file (a truncated copy).
    pub data_missing: u64,
    /// Problems that did not stop reading (printed once by the caller).
    pub warnings: Vec<String>,
}

impl FileInfo {
    /// Decodes the header, the attrs with their ids, and the feature
    /// sections of a file-mode perf.data held in `bytes`.
    ///
    /// A data size of 0 (a `perf record` that was killed before it could
    /// update the header) means "records up to the end of the file", with a
    /// warning; the feature sections are not read then (the header's feature
    /// bits are set, but the table was never written). A data section that
    /// runs past the end of the file is read as far as it goes.
    pub fn parse(bytes: &[u8]) -> Result<FileInfo> {
        let header = FileHeader::parse(bytes)?;
        let endian = header.endian;
        let mut warnings = Vec::new();

        let start = usize::try_from(header.data.offset)
            .ok()
            .filter(|&s| s <= bytes.len() && s >= FILE_HEADER_SIZE.min(bytes.len()))
            .ok_or_else(|| {
                Error::at(40, format!("data section offset {:#x} lies outside the file ({} bytes)", header.data.offset, bytes.len()))
            })?;
        let mut data_missing = 0;
        let data = if header.data.size == 0 {
            warnings.push(
                "the header's data size is 0: 'perf record' was not properly terminated \
                 (killed?); reading records up to the end of the file"
                    .to_string(),
            );
            start..bytes.len()
        } else {
            match header.data.range(bytes.len()) {
                Some(r) => r,
                None => {
                    let have = (bytes.len() - start) as u64;
                    data_missing = header.data.size.saturating_sub(have);
                    warnings.push(format!(
                        "the data section ({:#x} bytes at {:#x}) runs {data_missing} bytes past the end of the file \
                         (truncated copy?); reading what is there",
                        header.data.size, header.data.offset
                    ));
                    start..bytes.len()
                }
            }
        };

        let (evlist, attr_ranges) = read_attrs(bytes, &header, &mut warnings)?;
        let mut features = Features::new(endian);
        if header.data.size > 0 && data_missing == 0 {
            read_features(bytes, &header, &mut features, &mut warnings);
        }
        let mut info = FileInfo { header, evlist, attr_ranges, features, data, data_missing, warnings };
        info.apply_event_desc();
        Ok(info)
    }

    /// Names events from EVENT_DESC, matched by position as perf does.
    fn apply_event_desc(&mut self) {
        for (i, desc) in self.features.event_desc().into_iter().enumerate() {
            self.evlist.name_if_unset(i, desc.name);
        }
    }
}

/// The attr section: `{ attr (attr.size bytes), ids {offset, size} }` entries
/// read back to back, as perf reads them (`attrs.size / attr_size` of them).
/// An entry that cannot be read ends the list with a warning, unless it is
/// the first (a file without events cannot be read at all).
fn read_attrs(bytes: &[u8], header: &FileHeader, warnings: &mut Vec<String>) -> Result<(Evlist, Vec<std::ops::Range<usize>>)> {
    let endian = header.endian;
    let mut evlist = Evlist::default();
    let mut ranges = Vec::new();
    if header.attr_size == 0 {
        return Err(Error::at(16, "the header's attr size is 0 (was 'perf record' properly terminated?)"));
    }
    let range = header
        .attrs
        .range(bytes.len())
        .ok_or_else(|| Error::at(24, format!("attr section ({:#x} bytes at {:#x}) lies outside the file", header.attrs.size, header.attrs.offset)))?;
    let nr = header.attrs.size / header.attr_size;
    let mut off = range.start;
    // Every id takes 8 bytes of the file; more in total means id sections
    // that overlap (a hostile file could otherwise make the ids of every
    // attr the whole file).
    let mut id_budget = bytes.len() / 8;
    for i in 0..nr {
        let bad = |warnings: &mut Vec<String>, what: String| -> Result<()> {
            if i == 0 {
                Err(Error::at(off as u64, format!("attr 0: {what}")))
            } else {
                warnings.push(format!("attr {i} at offset {off:#x}: {what}; using the {i} attrs before it"));
                Ok(())
            }
        };
        let entry = bytes.get(off..range.end).unwrap_or(&[]);
        let Some(attr) = Attr::parse(entry, endian) else {
            bad(warnings, match endian.read_u32(entry, 4) {
                Some(sz) if sz != 0 && (sz as usize) < attr::ATTR_SIZE_VER0 => format!("attr.size {sz} is smaller than the first version's 64 bytes"),
                _ => format!("truncated ({} bytes left in the attr section)", entry.len()),
            })?;
            break;
        };
        let sz = attr.disk_size();
        let Some(ids_sec) = entry
            .get(sz..sz.saturating_add(16))
            .and_then(|b| Section::read(&mut bytes::Cursor::new(b, endian)))
        else {
            bad(warnings, format!("attr.size {sz} leaves no room for its id section"))?;
            break;
        };
        let ids = match ids_sec.range(bytes.len()) {
            Some(r) if r.len() / 8 <= id_budget => {
                id_budget -= r.len() / 8;
                bytes[r].chunks_exact(8).map(|c| endian.u64(c.try_into().unwrap_or([0; 8]))).collect()
            }
            Some(_) => {
                warnings.push(format!("ids of attr {i} overlap those of other attrs; ignoring them"));
                Vec::new()
            }
            None => {
                warnings.push(format!(
                    "ids of attr {i} ({:#x} bytes at {:#x}) lie outside the file; ignoring them",
                    ids_sec.size, ids_sec.offset
                ));
                Vec::new()
            }
        };
        evlist.push(Evsel { attr, name: None, ids });
        ranges.push(off..off + sz);
        off = off.saturating_add(sz + 16);
    }
    if evlist.is_empty() {
        return Err(Error::at(24, format!("the attr section ({} bytes, attr size {}) holds no event", header.attrs.size, header.attr_size)));
    }
    Ok((evlist, ranges))
}

/// The feature table sits right after the data: one `{offset, size}` per set
/// bit, in bit order. Sections that lie outside the file, or that would
/// make the features take more bytes than the file has (overlapping
/// sections), are skipped with a warning.
fn read_features(bytes: &[u8], header: &FileHeader, features: &mut Features, warnings: &mut Vec<String>) {
    let endian = header.endian;
    let Some(table) = header.data.offset.checked_add(header.data.size).and_then(|t| usize::try_from(t).ok()) else {
        return;
    };
    let mut budget = bytes.len();
    for (i, bit) in header.feature_bits().enumerate() {
        let Some(at) = table.checked_add(i * 16) else { return };
        let Some(sec) = bytes.get(at..at.saturating_add(16)).and_then(|b| Section::read(&mut bytes::Cursor::new(b, endian))) else {
            warnings.push(format!("feature table truncated at offset {at:#x}; features from bit {bit} on are ignored"));
            return;
        };
        match sec.range(bytes.len()) {
            Some(r) if r.len() <= budget => {
                budget -= r.len();
                features.insert(bit, bytes[r].to_vec());
            }
            Some(_) => warnings.push(format!("feature {bit} section overlaps the others (table entry at {at:#x}); ignored")),
            None => warnings.push(format!(
                "feature {bit} section ({:#x} bytes at {:#x}) lies outside the file (table entry at {at:#x}); ignored",
                sec.size, sec.offset
            )),
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
            let mut s = RecordSource::from_slice(&rec, 0, rec.len(), Endian::Little);
            let e = s.next_record().unwrap_err();
            assert_eq!(e.offset(), Some(0));
        }
        rec[6] = 64;
        {
            let mut s = RecordSource::from_slice(&rec, 0, rec.len(), Endian::Little);
            assert!(s.next_record().unwrap_err().to_string().contains("runs past"));
        }
        rec[6] = 12;
        let mut s = RecordSource::from_slice(&rec, 0, rec.len(), Endian::Little);
        assert!(s.next_record().unwrap_err().to_string().contains("multiple of 8"));
    }

    /// A directory input's files are read in turns: one file until
    /// [`DIR_TURN`] bytes of it were read (or it ends), then the next.
    #[test]
    fn dir_source_reads_files_in_turns() {
        let rec = |misc: u16, size: u16| {
            let mut r = Vec::new();
            r.extend(9u32.to_le_bytes());
            r.extend(misc.to_le_bytes());
            r.extend(size.to_le_bytes());
            r.resize(size as usize, 0);
            r
        };
        // File 0: 40 records of 65528 bytes (33 of them pass DIR_TURN);
        // file 1: 2 small ones; file 2: empty.
        let big: Vec<u8> = (0..40).flat_map(|_| rec(0, 65528)).collect();
        let small: Vec<u8> = (0..2).flat_map(|_| rec(1, 8)).collect();
        let mut s = RecordSource::from_parts(vec![(&big, 0, big.len()), (&small, 0, small.len()), (&[], 0, 0)], Endian::Little);
        assert_eq!(s.total(), Some((big.len() + small.len()) as u64));
        let mut order = Vec::new();
        while let Some(r) = s.next_record().unwrap() {
            order.push((r.header.misc, r.offset));
        }
        let mut want: Vec<(u16, u64)> = (0..33).map(|i| (0, i * 65528)).collect();
        want.extend([(1, 0), (1, 8)]);
        want.extend((33..40).map(|i| (0, i * 65528)));
        assert_eq!(order, want);
        assert_eq!(s.position(), (big.len() + small.len()) as u64);
    }

    /// `upcoming` walks the records `next_record` will return, from the
    /// read position or further, and stops quietly at a bad one.
    #[test]
    fn upcoming_shows_what_next_record_reads() {
        let e = Endian::Little;
        let put = writer::Put(e);
        let mut data = Vec::new();
        let record = |data: &mut Vec<u8>, type_: u32, size: u16| {
            put.header(data, type_, 0, size);
            data.resize(data.len() + size as usize - HEADER_SIZE, 0xab);
        };
        record(&mut data, kind::SAMPLE, 24);
        // A tracing-data record and its payload, which is not a record.
        put.header(&mut data, kind::HEADER_TRACING_DATA, 0, 16);
        put.u32(&mut data, 9);
        put.u32(&mut data, 0);
        data.extend([0x09; 16]);
        record(&mut data, kind::MMAP, 32);
        let good = data.len();
        record(&mut data, kind::SAMPLE, 12);
        let source = |pos| RecordSource::from_slice(&data, pos, data.len(), e);

        let shown: Vec<(u64, usize)> = source(0).upcoming(0).map(|(after, b)| (after, b.len())).collect();
        assert_eq!(shown, [(24, 24), (56, 16), (good as u64, 32)]);
        let mut s = source(0);
        for &(after, len) in &shown {
            let r = s.next_record().expect("good record").expect("a record");
            assert_eq!((s.position(), r.header.size as usize), (after, len));
        }
        assert!(s.next_record().is_err(), "the record upcoming stopped at is bad");

        let mut s = source(0);
        s.next_record().expect("first");
        assert_eq!(s.upcoming(0).count(), 2, "from the read position");
        assert_eq!(s.upcoming(56).map(|(after, _)| after).collect::<Vec<_>>(), [good as u64], "from further on");
        assert_eq!(s.upcoming(good as u64).count(), 0);
        let stream = RecordSource::from_reader(Box::new(&data[..]), 0, e);
        assert_eq!(stream.upcoming(0).count(), 0, "a stream shows nothing ahead");
    }

    /// A stream's AUX data is read past, not kept: a pipe may send
    /// gigabytes of it (the record claiming 2^40 bytes is reported when
    /// the data ends short, having kept nothing).
    #[test]
    fn stream_source_does_not_keep_aux_data() {
        let put = writer::Put(Endian::Little);
        let aux = |payload: u64| {
            let mut rec = Vec::new();
            put.header(&mut rec, kind::AUXTRACE, 0, 48);
            for v in [payload, 0, 0] {
                put.u64(&mut rec, v);
            }
            rec.resize(48, 0);
            rec
        };
        let mut data = aux(8 << 20);
        data.resize(data.len() + (8 << 20), 0xab);
        put.header(&mut data, kind::FINISHED_ROUND, 0, 8);
        let mut s = RecordSource::from_reader(Box::new(&data[..]), 16, Endian::Little);
        let r = s.next_record().unwrap().unwrap();
        assert_eq!((r.header.type_, r.bytes.len()), (kind::AUXTRACE, 48), "the payload is not kept");
        assert_eq!(s.position(), 16 + 48 + (8 << 20), "but read past");
        assert_eq!(s.next_record().unwrap().unwrap().header.type_, kind::FINISHED_ROUND);
        let mut endless = aux(1 << 40);
        endless.resize(endless.len() + (1 << 20), 0xab);
        let mut s = RecordSource::from_reader(Box::new(&endless[..]), 16, Endian::Little);
        assert!(s.next_record().unwrap_err().to_string().contains("payload truncated"));
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
        let mut s = RecordSource::from_reader(Box::new(&rec[..]), 0, Endian::Little);
        let r = s.next_record().unwrap().unwrap();
        assert_eq!(r.bytes.len(), n);
        assert!(s.next_record().unwrap().is_none());
    }
}

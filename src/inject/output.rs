//! Where the injected records go: a file-mode perf.data (a seekable file)
//! or a pipe-mode stream.
//!
//! A file keeps in its header what a stream sends as records, so the
//! header records of a pipe-mode input (HEADER_ATTR, HEADER_FEATURE,
//! HEADER_TRACING_DATA) become the file's attr section and feature
//! sections, and a file-mode input's header becomes records at the start
//! of a stream, in the order perf record sends them:
//!
//! ```text
//! pipe header | HEADER_ATTR per event | EVENT_UPDATE (name) per event | HEADER_FEATURE per feature
//!             | HEADER_TRACING_DATA | HEADER_BUILD_ID per build-id entry | the records ...
//! ```
//! A stream names its events with EVENT_UPDATE records (perf reads the
//! names from EVENT_DESC only in file mode); they are made from
//! EVENT_DESC's names.
//! Tracing data and build ids are not features in a stream; perf's end
//! mark (a HEADER_FEATURE record with the writer's HEADER_LAST_FEATURE
//! number) is left out, as the number differs between perf versions.
//!
//! A file-mode output starts its data section at the first record, with
//! the attrs known by then (a pipe sends them first); an attr that comes
//! later moves the attr section behind the features.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

use perf_data::bytes::Endian;
use perf_data::features::feat;
use perf_data::record::{HEADER_SIZE, RecordHeader, kind};
use perf_data::writer::{self, AttrEntry, FileSink, Put};

/// Output buffer size.
const BUF: usize = 1 << 20;

/// A file-mode output being written.
pub struct FileOut {
    endian: Endian,
    file: Option<File>,
    sink: Option<FileSink<BufWriter<File>>>,
    attrs: Vec<AttrEntry>,
    /// Attrs that came after the data began.
    late: bool,
    features: BTreeMap<u32, Vec<u8>>,
}

impl FileOut {
    pub fn new(file: File, endian: Endian) -> FileOut {
        FileOut { endian, file: Some(file), sink: None, attrs: Vec::new(), late: false, features: BTreeMap::new() }
    }

    pub fn add_attr(&mut self, a: AttrEntry) {
        self.late |= self.sink.is_some();
        self.attrs.push(a);
    }

    /// Sets a feature section (the last payload for a bit wins).
    pub fn set_feature(&mut self, bit: u32, payload: Vec<u8>) {
        self.features.insert(bit, payload);
    }

    /// Appends a build-id entry to the BUILD_ID section.
    pub fn add_build_id(&mut self, entry: &[u8]) {
        self.features.entry(feat::BUILD_ID).or_default().extend_from_slice(entry);
    }

    fn sink(&mut self) -> io::Result<&mut FileSink<BufWriter<File>>> {
        if self.sink.is_none() {
            let file = self.file.take().ok_or_else(|| io::Error::other("output already finished"))?;
            let attrs = (!self.attrs.is_empty()).then_some(&self.attrs[..]);
            self.late = attrs.is_none();
            self.sink = Some(FileSink::begin(BufWriter::with_capacity(BUF, file), self.endian, attrs)?);
        }
        Ok(self.sink.as_mut().expect("just begun"))
    }

    /// The feature sections and the header.
    pub fn finish(&mut self) -> io::Result<()> {
        self.sink()?;
        let sink = self.sink.take().expect("begun");
        let features: Vec<(u32, Vec<u8>)> = std::mem::take(&mut self.features).into_iter().collect();
        let late = self.late.then_some(&self.attrs[..]);
        sink.finish(late, &features)?.flush()
    }
}

impl Write for FileOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink()?.write_data(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The output: records go to the data section of a file, or down a stream.
pub enum Sink {
    File(Box<FileOut>),
    Pipe(BufWriter<Box<dyn Write + Send>>),
}

impl Sink {
    pub fn pipe(out: Box<dyn Write + Send>) -> Sink {
        Sink::Pipe(BufWriter::with_capacity(BUF, out))
    }

    /// Finishes a file (features, header); flushes a stream.
    pub fn finish(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.finish(),
            Sink::Pipe(w) => w.flush(),
        }
    }
}

impl Write for Sink {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(f) => f.write(buf),
            Sink::Pipe(w) => w.write(buf),
        }
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::File(f) => f.write_all(buf),
            Sink::Pipe(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Pipe(w) => w.flush(),
        }
    }
}

/// The records a stream starts with for a file-mode input's header:
/// attrs, event names (`names`: each event's first id and name), features
/// (tracing data and build ids as their own records), as perf record
/// sends them. Returns the records and what did not fit a record (a
/// record's size is 16 bits).
pub fn header_records(endian: Endian, attrs: &[AttrEntry], names: &[(u64, String)], features: &[(u32, Vec<u8>)]) -> (Vec<u8>, Vec<String>) {
    let mut out = writer::pipe_header(endian);
    let mut left_out = Vec::new();
    for (i, a) in attrs.iter().enumerate() {
        match writer::attr_record(endian, &a.raw, &a.ids) {
            Some(r) => out.extend(r),
            None => left_out.push(format!("event {i} ({} ids)", a.ids.len())),
        }
    }
    for (id, name) in names {
        match writer::event_name_record(endian, *id, name.as_bytes()) {
            Some(r) => out.extend(r),
            None => left_out.push(format!("the name of event id {id}")),
        }
    }
    for (bit, payload) in features {
        if matches!(*bit, feat::TRACING_DATA | feat::BUILD_ID) {
            continue;
        }
        match writer::feature_record(endian, *bit as u64, payload) {
            Some(r) => out.extend(r),
            None => left_out.push(format!("feature {bit} ({} bytes)", payload.len())),
        }
    }
    if let Some((_, td)) = features.iter().find(|(b, _)| *b == feat::TRACING_DATA) {
        out.extend(writer::tracing_data_record(endian, td));
    }
    if let Some((_, ids)) = features.iter().find(|(b, _)| *b == feat::BUILD_ID) {
        out.extend(build_id_records(endian, ids));
    }
    (out, left_out)
}

/// A BUILD_ID section's entries as HEADER_BUILD_ID records: typed (perf
/// leaves the type 0 in files), and as long as the name needs, to 8 bytes
/// (file entries pad the name to 64 bytes, which a stream's reader
/// refuses when the total is not a multiple of 8).
fn build_id_records(endian: Endian, section: &[u8]) -> Vec<u8> {
    /// header, pid, build_id[20], size, pad[3]
    const FIXED: usize = 36;
    let mut out = Vec::with_capacity(section.len());
    let mut at = 0;
    while let Some(h) = section.get(at..).and_then(|b| RecordHeader::parse(b, endian)) {
        let size = h.size as usize;
        if size < FIXED || at + size > section.len() {
            break;
        }
        let entry = &section[at..at + size];
        let name = perf_data::bytes::until_nul(&entry[FIXED..]);
        let len = (FIXED + name.len() + 1).next_multiple_of(8);
        let p = Put(endian);
        p.header(&mut out, kind::HEADER_BUILD_ID, h.misc, len as u16);
        out.extend_from_slice(&entry[HEADER_SIZE..FIXED]);
        out.extend_from_slice(name);
        out.resize(out.len() + len - FIXED - name.len(), 0);
        at += size;
    }
    out
}

//! Opening an input: a file-mode perf.data, a pipe-mode stream saved to a
//! file, or a stream (standard input).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::bytes::Endian;
use crate::evlist::Evlist;
use crate::features::Features;
use crate::header::{self, FILE_HEADER_SIZE, PIPE_HEADER_SIZE};
use crate::{Error, FileBytes, FileInfo, RecordSource, Result, Source, Stream};

/// An opened input, before reading records.
pub struct Input {
    bytes: Option<FileBytes>,
    /// A `perf record --threads` directory's `data.N` files (the header
    /// and the first records are in its `data` file, `bytes`).
    dir_files: Vec<FileBytes>,
    /// The names of a directory's files that hold records (`data` first,
    /// then the `data.N` files read), by part number (see
    /// [`crate::RawRecord::part`]).
    dir_names: Vec<String>,
    dir: bool,
    stdin: Option<Box<dyn Stream>>,
    pub pipe: bool,
    pub endian: Endian,
    pub info: Option<FileInfo>,
}

impl Input {
    /// Opens `path` (read into memory), or standard input for `-`. A
    /// file that is not a regular file (a FIFO, a device) is read as a
    /// stream.
    pub fn open(path: &Path) -> Result<Input> {
        if path == Path::new("-") {
            return Input::from_reader(Box::new(std::io::stdin()));
        }
        let mut file = File::open(path)?;
        if !file.metadata()?.is_file() {
            return Input::from_reader(Box::new(file));
        }
        let mut v = Vec::new();
        file.read_to_end(&mut v)?;
        Input::from_bytes(FileBytes::Owned(v))
    }

    /// A whole input in memory.
    pub fn from_bytes(bytes: FileBytes) -> Result<Input> {
        if bytes.is_empty() {
            return Err(Error::at(0, "empty file"));
        }
        if let Some(endian) = header::is_pipe_header(&bytes) {
            return Ok(Input { bytes: Some(bytes), dir_files: Vec::new(), dir_names: Vec::new(), dir: false, stdin: None, pipe: true, endian, info: None });
        }
        let info = FileInfo::parse(&bytes)?;
        let endian = info.header.endian;
        Ok(Input { bytes: Some(bytes), dir_files: Vec::new(), dir_names: Vec::new(), dir: false, stdin: None, pipe: false, endian, info: Some(info) })
    }

    /// A stream: pipe mode, or a file-mode perf.data that arrives on a pipe
    /// (read whole, then treated as a file).
    pub fn from_reader(r: Box<dyn Read>) -> Result<Input> {
        Input::from_stream(Box::new(crate::Plain(r)))
    }

    /// A stream that can tell whether a read would wait (see
    /// [`RecordSource::would_wait`]).
    pub fn from_stream(mut r: Box<dyn Stream>) -> Result<Input> {
        let mut head = [0u8; PIPE_HEADER_SIZE];
        let mut got = 0;
        while got < head.len() {
            match r.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::Io(e)),
            }
        }
        if got < PIPE_HEADER_SIZE {
            return Err(Error::at(0, format!("input too short for a perf.data header ({got} bytes)")));
        }
        if let Some(endian) = header::is_pipe_header(&head) {
            return Ok(Input { bytes: None, dir_files: Vec::new(), dir_names: Vec::new(), dir: false, stdin: Some(r), pipe: true, endian, info: None });
        }
        if header::detect_magic(&head).is_none() {
            return Err(Error::at(0, "not a perf.data file (bad magic)"));
        }
        let mut all = head.to_vec();
        r.read_to_end(&mut all)?;
        if all.len() < FILE_HEADER_SIZE {
            return Err(Error::at(0, "file header truncated"));
        }
        Input::from_bytes(FileBytes::Owned(all))
    }

    /// A `perf record --threads` (or `--data`) directory: `data` is its
    /// `data` file, `files` its `data.N` files in the order to read them.
    /// A directory input: its `data` file and its `data.N` files, each
    /// with its name (empty files hold no records and are left out).
    pub fn from_dir(data: FileBytes, files: Vec<(String, FileBytes)>) -> Result<Input> {
        let mut input = Input::from_bytes(data)?;
        if input.pipe {
            return Err(Error::at(0, "the data file of a directory input is in pipe format"));
        }
        let files: Vec<_> = files.into_iter().filter(|(_, f)| !f.is_empty()).collect();
        input.dir_names = std::iter::once("data".to_string()).chain(files.iter().map(|(n, _)| n.clone())).collect();
        input.dir_files = files.into_iter().map(|(_, f)| f).collect();
        input.dir = true;
        Ok(input)
    }

    /// Whether the input is a directory (`perf record --threads`).
    /// A pipe-mode input read from a stream (standard input, a FIFO),
    /// copied whole to `to`: its header (as it was read: the magic and the
    /// header size in the input's byte order) and everything the stream
    /// still holds. The input has no records left afterwards. Returns the
    /// bytes copied; `Ok(0)` for any other input (nothing is copied).
    pub fn spool(&mut self, to: &mut dyn std::io::Write) -> Result<u64> {
        let Some(mut r) = self.stdin.take() else { return Ok(0) };
        let bytes = |v: u64| match self.endian {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        let head = [bytes(header::MAGIC), bytes(PIPE_HEADER_SIZE as u64)].concat();
        to.write_all(&head)?;
        Ok(head.len() as u64 + std::io::copy(&mut r, to)?)
    }

    /// The names of the files a directory input's records come from, by
    /// [`crate::RawRecord::part`] (empty for any other input).
    pub fn part_names(&self) -> &[String] {
        if self.dir_files.is_empty() { &[] } else { &self.dir_names }
    }

    pub fn is_dir(&self) -> bool {
        self.dir
    }

    /// The event list and features known before reading records (empty in
    /// pipe mode), plus warnings about the header.
    pub fn take_header(&mut self) -> (Evlist, Features, Vec<String>) {
        match self.info.as_mut() {
            Some(info) => (
                std::mem::take(&mut info.evlist),
                std::mem::take(&mut info.features),
                std::mem::take(&mut info.warnings),
            ),
            None => (Evlist::default(), Features::new(self.endian), Vec::new()),
        }
    }

    /// The record source.
    pub fn records(&mut self) -> RecordSource<'_> {
        let endian = self.endian;
        if let Some(r) = self.stdin.take() {
            return RecordSource::from_stream(r, PIPE_HEADER_SIZE as u64, endian);
        }
        let Some(bytes) = self.bytes.as_ref() else { return RecordSource::from_slice(&[], 0, 0, endian) };
        let (pos, end, missing) = match &self.info {
            Some(info) => (info.data.start, info.data.end, info.data_missing),
            None => (PIPE_HEADER_SIZE, bytes.len(), 0),
        };
        if !self.dir_files.is_empty() {
            let mut parts = vec![(&bytes[..], pos, end)];
            parts.extend(self.dir_files.iter().map(|f| (&f[..], 0, f.len())));
            return RecordSource::from_parts(parts, endian);
        }
        RecordSource { inner: Source::Slice { data: bytes, backing: bytes.backing(), pos, end, endian, missing, tell_at: pos } }
    }

    /// The input's bytes, for an input held in memory (not a stream).
    pub fn bytes(&self) -> Option<&FileBytes> {
        self.bytes.as_ref()
    }
}

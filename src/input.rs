//! Opening an input: a file-mode perf.data (memory-mapped), a pipe-mode
//! stream saved to a file (also mapped), or standard input.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::perf_data::bytes::Endian;
use crate::perf_data::evlist::Evlist;
use crate::perf_data::features::Features;
use crate::perf_data::header::{self, FILE_HEADER_SIZE, PIPE_HEADER_SIZE};
use crate::perf_data::pager::Pager;
use crate::perf_data::{Error, FileBytes, FileInfo, RecordSource, Result};

/// An opened input, before reading records.
pub struct Input {
    bytes: Option<FileBytes>,
    stdin: Option<Box<dyn Read>>,
    pub pipe: bool,
    pub endian: Endian,
    pub info: Option<FileInfo>,
}

impl Input {
    /// Opens `path`, or standard input for `-`.
    pub fn open(path: &Path) -> Result<Input> {
        if path == Path::new("-") {
            return Input::from_reader(Box::new(std::io::stdin()));
        }
        let file = File::open(path).map_err(Error::io)?;
        let meta = file.metadata().map_err(Error::io)?;
        if !meta.is_file() {
            return Input::from_reader(Box::new(file));
        }
        // SAFETY: the map is read-only; perf.data files are not modified
        // while being read (same assumption perf makes).
        let map = unsafe { memmap2::Mmap::map(&file) };
        let bytes = match map {
            Ok(m) => FileBytes::Mapped(m),
            Err(_) => {
                let mut v = Vec::new();
                File::open(path).and_then(|mut f| f.read_to_end(&mut v)).map_err(Error::io)?;
                FileBytes::Owned(v)
            }
        };
        Input::from_bytes(bytes)
    }

    pub fn from_bytes(bytes: FileBytes) -> Result<Input> {
        if bytes.is_empty() {
            return Err(Error::at(0, "empty file"));
        }
        if let Some(endian) = header::is_pipe_header(&bytes) {
            return Ok(Input { bytes: Some(bytes), stdin: None, pipe: true, endian, info: None });
        }
        let info = FileInfo::parse(&bytes)?;
        let endian = info.header.endian;
        Ok(Input { bytes: Some(bytes), stdin: None, pipe: false, endian, info: Some(info) })
    }

    /// A stream: pipe mode, or a file-mode perf.data that arrives on a pipe
    /// (read whole, then treated as a file).
    pub fn from_reader(mut r: Box<dyn Read>) -> Result<Input> {
        let mut head = [0u8; PIPE_HEADER_SIZE];
        let mut got = 0;
        while got < head.len() {
            match r.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(e)),
            }
        }
        if got < PIPE_HEADER_SIZE {
            return Err(Error::at(0, format!("input too short for a perf.data header ({got} bytes)")));
        }
        if let Some(endian) = header::is_pipe_header(&head) {
            return Ok(Input { bytes: None, stdin: Some(r), pipe: true, endian, info: None });
        }
        if header::detect_magic(&head).is_none() {
            return Err(Error::at(0, "not a perf.data file (bad magic)"));
        }
        let mut all = head.to_vec();
        r.read_to_end(&mut all).map_err(Error::io)?;
        if all.len() < FILE_HEADER_SIZE {
            return Err(Error::at(0, "file header truncated"));
        }
        Input::from_bytes(FileBytes::Owned(all))
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
            return RecordSource::Stream { reader: r, pos: PIPE_HEADER_SIZE as u64, endian };
        }
        let mapped = matches!(self.bytes, Some(FileBytes::Mapped(_)));
        let bytes: &[u8] = self.bytes.as_deref().unwrap_or(&[]);
        let drop_behind = mapped.then_some(0);
        let start = self.info.as_ref().map_or(PIPE_HEADER_SIZE, |info| info.data.start);
        let pager = if mapped { Pager::start(bytes, start) } else { None };
        match &self.info {
            Some(info) => RecordSource::Slice {
                data: bytes,
                pos: info.data.start,
                end: info.data.end,
                endian,
                missing: info.data_missing,
                drop_behind,
                pager,
            },
            None => RecordSource::Slice { data: bytes, pos: PIPE_HEADER_SIZE, end: bytes.len(), endian, missing: 0, drop_behind, pager },
        }
    }
}

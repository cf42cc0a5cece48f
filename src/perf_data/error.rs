//! Errors that name where in the file things went wrong.

use std::fmt;

/// A damaged or unreadable perf.data file.
#[derive(Debug)]
pub struct Error {
    /// Byte offset in the input (for records inside a compressed chunk: the
    /// offset of that chunk).
    pub offset: Option<u64>,
    /// The record type being read, if any.
    pub record_type: Option<u32>,
    pub message: String,
    /// Set for I/O failures (reading the input or writing the output).
    pub io_kind: Option<std::io::ErrorKind>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn at(offset: u64, message: impl Into<String>) -> Error {
        Error { offset: Some(offset), record_type: None, message: message.into(), io_kind: None }
    }

    pub fn in_record(offset: u64, record_type: u32, message: impl Into<String>) -> Error {
        Error { offset: Some(offset), record_type: Some(record_type), message: message.into(), io_kind: None }
    }

    pub fn io(err: std::io::Error) -> Error {
        Error { offset: None, record_type: None, message: err.to_string(), io_kind: Some(err.kind()) }
    }

    pub fn msg(message: impl Into<String>) -> Error {
        Error { offset: None, record_type: None, message: message.into(), io_kind: None }
    }
}

impl Error {
    pub fn is_broken_pipe(&self) -> bool {
        self.io_kind == Some(std::io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(off) = self.offset {
            write!(f, "offset {off:#x}: ")?;
        }
        if let Some(t) = self.record_type {
            write!(f, "{} record (type {t}): ", super::record::kind::name(t))?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

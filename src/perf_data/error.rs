//! Errors that name where in the file things went wrong, and warnings that
//! are said once.

use std::collections::HashMap;
use std::fmt;

/// A damaged or unreadable perf.data file.
#[derive(Debug)]
pub struct Error {
    /// Byte offset in the input (for records inside a compressed chunk: the
    /// offset of that chunk).
    pub offset: Option<u64>,
    /// For records decoded from a compressed chunk: where in the chunk's
    /// decompressed bytes the record starts.
    pub inner: Option<u64>,
    /// The record type being read, if any.
    pub record_type: Option<u32>,
    pub message: String,
    /// Set for I/O failures (reading the input or writing the output).
    pub io_kind: Option<std::io::ErrorKind>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn at(offset: u64, message: impl Into<String>) -> Error {
        Error { offset: Some(offset), inner: None, record_type: None, message: message.into(), io_kind: None }
    }

    pub fn in_record(offset: u64, record_type: u32, message: impl Into<String>) -> Error {
        Error { offset: Some(offset), inner: None, record_type: Some(record_type), message: message.into(), io_kind: None }
    }

    pub fn io(err: std::io::Error) -> Error {
        Error { offset: None, inner: None, record_type: None, message: err.to_string(), io_kind: Some(err.kind()) }
    }

    pub fn msg(message: impl Into<String>) -> Error {
        Error { offset: None, inner: None, record_type: None, message: message.into(), io_kind: None }
    }

    /// Marks the error as being about a record at `pos` in the data
    /// decompressed from the chunk at `self.offset`.
    pub fn decompressed_at(mut self, pos: u64) -> Error {
        self.inner = Some(pos);
        self
    }

    pub fn is_broken_pipe(&self) -> bool {
        self.io_kind == Some(std::io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(off) = self.offset {
            write!(f, "offset {off:#x}")?;
            if let Some(inner) = self.inner {
                write!(f, " (+{inner:#x} in its decompressed data)")?;
            }
            f.write_str(": ")?;
        }
        if let Some(t) = self.record_type {
            write!(f, "{} record (type {t}): ", super::record::kind::name(t))?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Warnings about the input, each said once: the first occurrence is kept
/// with its text, later ones with the same key are only counted.
#[derive(Debug, Default, Clone)]
pub struct Warnings {
    list: Vec<(String, u64)>,
    by_key: HashMap<String, usize>,
}

impl Warnings {
    /// Records a warning of kind `key`; `msg` is only built the first time.
    pub fn warn(&mut self, key: impl AsRef<str>, msg: impl FnOnce() -> String) {
        match self.by_key.get(key.as_ref()) {
            Some(&i) => self.list[i].1 += 1,
            None => {
                self.by_key.insert(key.as_ref().to_string(), self.list.len());
                self.list.push((msg(), 1));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How often a warning of kind `key` was given.
    pub fn count(&self, key: &str) -> u64 {
        self.by_key.get(key).map(|&i| self.list[i].1).unwrap_or(0)
    }

    /// One line per kind, in the order first seen: the first message, plus
    /// how many times it happened when more than once.
    pub fn messages(&self) -> Vec<String> {
        self.list
            .iter()
            .map(|(m, n)| if *n > 1 { format!("{m} ({n} times in all)") } else { m.clone() })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_said_once_and_counted() {
        let mut w = Warnings::default();
        for i in 0..3 {
            w.warn("a", || format!("first a at {i}"));
        }
        w.warn("b", || "b".to_string());
        assert_eq!(w.messages(), vec!["first a at 0 (3 times in all)".to_string(), "b".to_string()]);
        assert_eq!(w.count("a"), 3);
    }

    #[test]
    fn display_names_offset_and_type() {
        let e = Error::in_record(0x40, 9, "bad").decompressed_at(0x10);
        assert_eq!(e.to_string(), "offset 0x40 (+0x10 in its decompressed data): SAMPLE record (type 9): bad");
    }
}

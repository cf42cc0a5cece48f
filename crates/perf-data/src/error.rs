//! Errors that say where in the input things went wrong, and warnings that
//! are said once.

use std::collections::HashMap;
use std::fmt;

/// Why an input could not be read (completely).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Reading the input failed (the operating system's error).
    Io(std::io::Error),
    /// The input is damaged, or is not perf.data: what is wrong, and where.
    Format(Damage),
}

/// A damaged place in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset in the input (for records inside a compressed chunk:
    /// the offset of that chunk).
    pub offset: u64,
    /// For records decoded from a compressed chunk: where in the chunk's
    /// decompressed bytes the record starts.
    pub inner: Option<u64>,
    /// The type of the record being read, if any.
    pub record_type: Option<u32>,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Damage at `offset`, not inside a record.
    pub fn at(offset: u64, message: impl Into<String>) -> Error {
        Error::Format(Damage { offset, inner: None, record_type: None, message: message.into() })
    }

    /// Damage in the record of type `record_type` at `offset`.
    pub fn in_record(offset: u64, record_type: u32, message: impl Into<String>) -> Error {
        Error::Format(Damage { offset, inner: None, record_type: Some(record_type), message: message.into() })
    }

    /// Marks damage as being in a record at `pos` in the data decompressed
    /// from the chunk at the error's offset (an I/O error stays as it is).
    pub fn decompressed_at(mut self, pos: u64) -> Error {
        if let Error::Format(d) = &mut self {
            d.inner = Some(pos);
        }
        self
    }

    /// The input offset the error names, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Format(d) => Some(d.offset),
            Error::Io(_) => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {:#x}", self.offset)?;
        if let Some(inner) = self.inner {
            write!(f, " (+{inner:#x} in its decompressed data)")?;
        }
        f.write_str(": ")?;
        if let Some(t) = self.record_type {
            write!(f, "{} record (type {t}): ", super::record::kind::name(t))?;
        }
        f.write_str(&self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => e.fmt(f),
            Error::Format(d) => d.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Format(_) => None,
        }
    }
}

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
        assert_eq!(e.offset(), Some(0x40));
    }

    /// An I/O error keeps the operating system's error as its source.
    #[test]
    fn io_errors_keep_their_source() {
        use std::error::Error as _;
        let e = Error::from(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).map(|s| s.kind());
        assert_eq!(source, Some(std::io::ErrorKind::UnexpectedEof));
        assert_eq!(e.offset(), None);
        assert_eq!(e.decompressed_at(3).offset(), None);
    }
}

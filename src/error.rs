//! What can stop a run: the input (unreadable or damaged, with the offset),
//! the output (a write failed, a closed pipe included), or options that do
//! not fit the recording.

use std::fmt;

/// Why a run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The input could not be read, or is damaged (the error names the
    /// offset).
    Input(perf_data::Error),
    /// Writing the output failed.
    Output(std::io::Error),
    /// The options cannot apply to this input; the text is perf's.
    Options(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The output is a pipe whose reader has gone (`pstitch script | head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// A tool's writes fail as output errors.
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Output(e)
    }
}

impl From<perf_data::Error> for Error {
    fn from(e: perf_data::Error) -> Error {
        Error::Input(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(e) => e.fmt(f),
            Error::Output(e) => write!(f, "writing output: {e}"),
            Error::Options(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Input(e) => Some(e),
            Error::Output(e) => Some(e),
            Error::Options(_) => None,
        }
    }
}

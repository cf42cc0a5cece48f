//! The engine room: every thread pstitch starts, every hand-off between
//! threads, and every `unsafe` block live here. The other modules are
//! single-threaded, safe Rust; they reach the machinery below through
//! small typed interfaces.
//!
//! (The threads and their invariants are described as they move here.)

pub mod board;
pub mod fast;
pub mod kept;
pub mod mapping;
mod pager;
pub mod pieces;
pub mod printer;
pub mod sys;
pub mod worker;

pub use sys::thread_cpu;

use std::path::Path;

/// Whether pstitch may start helper threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threads {
    /// Reading, formatting, copying and loading on threads of their own
    /// (the default).
    #[default]
    Parallel,
    /// Everything on the calling thread: the same output, for small
    /// inputs, debugging, and the tests that check both give the same.
    Single,
}

/// Inputs below this size run on the calling thread unless the
/// environment asks for threads: on the small recordings of
/// `bench/small.py` (0.5-1 MB, 4k-10k samples) the helper threads cost
/// more to start and keep in step than they save (paired runs: about 8%
/// more wall time, 4-5 MB more memory; the loader's decoding ahead reads
/// DWARF units no sample needs), while on the large recording of
/// `bench/run.py` they are what makes pstitch fast. See
/// `docs/performance.md`, "Small recordings".
pub const SMALL_INPUT: u64 = 4 << 20;

impl Threads {
    /// `PSTITCH_THREADS=1` asks for [`Threads::Single`].
    pub fn from_env() -> Threads {
        match std::env::var("PSTITCH_THREADS") {
            Ok(v) if v.trim() == "1" => Threads::Single,
            _ => Threads::Parallel,
        }
    }

    /// The mode for reading `path`: what `PSTITCH_THREADS` asks for when it
    /// is set (`1`: single-threaded, any other value: threads), else
    /// single-threaded for a regular file smaller than [`SMALL_INPUT`]
    /// and threads for anything else (a larger file, a directory, a pipe).
    pub fn for_input(path: &Path) -> Threads {
        Threads::choose(std::env::var("PSTITCH_THREADS").ok().as_deref(), std::fs::metadata(path).ok())
    }

    fn choose(env: Option<&str>, meta: Option<std::fs::Metadata>) -> Threads {
        match env {
            Some(v) if v.trim() == "1" => Threads::Single,
            Some(_) => Threads::Parallel,
            None => match meta {
                Some(m) if m.is_file() && m.len() < SMALL_INPUT => Threads::Single,
                _ => Threads::Parallel,
            },
        }
    }
}

/// A regular file, mapped (or read, where it cannot be mapped).
fn map_file(path: &Path, threads: Threads) -> perf_data::Result<perf_data::FileBytes> {
    map_opened(&std::fs::File::open(path)?, path, threads)
}

/// [`map_file`] of a file already open (a pager thread maps ahead of the
/// reading when `threads` allows).
fn map_opened(file: &std::fs::File, path: &Path, threads: Threads) -> perf_data::Result<perf_data::FileBytes> {
    use std::io::Read;
    match mapping::MappedInput::new(file, 0, threads == Threads::Parallel) {
        Ok(m) => Ok(perf_data::FileBytes::Shared(std::sync::Arc::new(m))),
        Err(_) => {
            let mut v = Vec::new();
            std::fs::File::open(path)?.read_to_end(&mut v)?;
            Ok(perf_data::FileBytes::Owned(v))
        }
    }
}

/// A `perf record --threads` directory: its `data` file (header and first
/// records), then its `data.N` files by number (perf takes them in
/// directory order, which decides only between records of equal time).
fn open_dir(path: &Path, threads: Threads) -> perf_data::Result<perf_data::Input> {
    let data = map_file(&path.join("data"), threads)?;
    let mut numbered: Vec<(u64, std::path::PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(n) = name.to_str().and_then(|n| n.strip_prefix("data.")).and_then(|n| n.parse().ok()) else { continue };
        if entry.file_type()?.is_file() {
            numbered.push((n, entry.path()));
        }
    }
    numbered.sort();
    let name = |p: &Path| p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let files = numbered.iter().map(|(_, p)| Ok((name(p), map_file(p, Threads::Single)?))).collect::<perf_data::Result<Vec<_>>>()?;
    perf_data::Input::from_dir(data, files)
}

/// A pipe (standard input, a FIFO): read, and asked whether a read would
/// wait (the session writes out what is final then).
struct Pipe<R> {
    reader: R,
    fd: std::os::fd::RawFd,
}

impl<R: std::io::Read> std::io::Read for Pipe<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reader.read(buf)
    }
}

impl<R: std::io::Read> perf_data::Stream for Pipe<R> {
    fn ready(&self) -> bool {
        sys::readable_now(self.fd)
    }
}

/// Opens an input: `-` is standard input; a regular file is mapped (with
/// a pager thread ahead of the reading when `threads` allows); a directory
/// is a `perf record --threads` recording; anything else is read as a
/// stream.
pub fn open_input(path: &Path, threads: Threads) -> perf_data::Result<perf_data::Input> {
    use std::os::fd::AsRawFd;
    if path == Path::new("-") {
        let stdin = std::io::stdin();
        let fd = stdin.as_raw_fd();
        return perf_data::Input::from_stream(Box::new(Pipe { reader: stdin, fd }));
    }
    if path.is_dir() {
        return open_dir(path, threads);
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        let fd = file.as_raw_fd();
        return perf_data::Input::from_stream(Box::new(Pipe { reader: file, fd }));
    }
    // The pager starts at the data section, which the header names; the
    // first pages are the header's anyway.
    perf_data::Input::from_bytes(map_opened(&file, path, threads)?)
}

/// An output kept in memory that a printer on another thread writes and
/// the caller reads once the printer is done (`script::Script` wants an
/// owned `Send` writer).
#[derive(Debug, Default, Clone)]
pub struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    /// What was written so far, taken out.
    pub fn take(&self) -> Vec<u8> {
        self.0.lock().map(|mut b| std::mem::take(&mut *b)).unwrap_or_default()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("a printer thread panicked"))?.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_run_on_one_thread_unless_asked() {
        let dir = std::env::temp_dir().join(format!("pstitch-threads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let small = dir.join("small.data");
        std::fs::write(&small, [0u8; 100]).expect("write");
        let large = dir.join("large.data");
        let f = std::fs::File::create(&large).expect("create");
        f.set_len(SMALL_INPUT).expect("sparse");
        let meta = |p: &Path| std::fs::metadata(p).ok();
        assert_eq!(Threads::choose(None, meta(&small)), Threads::Single);
        assert_eq!(Threads::choose(None, meta(&large)), Threads::Parallel);
        assert_eq!(Threads::choose(None, meta(&dir)), Threads::Parallel, "a directory (perf record --threads)");
        assert_eq!(Threads::choose(None, None), Threads::Parallel, "a pipe or a missing file");
        assert_eq!(Threads::choose(Some("1"), meta(&large)), Threads::Single);
        assert_eq!(Threads::choose(Some("2"), meta(&small)), Threads::Parallel, "asked for threads");
        assert_eq!(Threads::choose(Some(""), meta(&small)), Threads::Parallel);
        let _ = std::fs::remove_dir_all(dir);
    }
}

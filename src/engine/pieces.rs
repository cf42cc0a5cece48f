//! A file read in pieces on a thread of its own, for a reader that can
//! use each piece as it arrives: `/proc/kallsyms` takes the kernel tens of
//! milliseconds to print, time in which the reading side does other work
//! and the symbols are parsed piece by piece.
//!
//! Invariant: the pieces arrive in file order; an `Err` ends them (the
//! reader then falls back to reading the file itself), and so does the
//! end of the file. The thread ends when the file ends or the reader goes.

use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};

/// The pieces of a file being read.
pub struct Pieces {
    arrive: Receiver<std::io::Result<Vec<u8>>>,
}

impl Pieces {
    /// Starts reading `path` in pieces of `piece` bytes; `None` if no
    /// thread could be started.
    pub fn start(path: PathBuf, piece: usize) -> Option<Pieces> {
        let (pieces, arrive) = channel();
        let read = move || {
            let mut file = match std::fs::File::open(path) {
                Ok(f) => f,
                Err(e) => return pieces.send(Err(e)),
            };
            loop {
                let mut buf = Vec::with_capacity(piece);
                match (&mut file).take(piece as u64).read_to_end(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(_) => pieces.send(Ok(buf))?,
                    Err(e) => return pieces.send(Err(e)),
                }
            }
        };
        std::thread::Builder::new().name("pstitch-ksyms".into()).spawn(read).ok()?;
        Some(Pieces { arrive })
    }
}

impl Iterator for Pieces {
    type Item = std::io::Result<Vec<u8>>;

    /// The next piece, waiting for it; `None` at the end of the file.
    fn next(&mut self) -> Option<Self::Item> {
        self.arrive.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_make_the_file() {
        let path = std::env::temp_dir().join(format!("pstitch-pieces-{}", std::process::id()));
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let got: Vec<u8> = Pieces::start(path.clone(), 4096).expect("thread").flat_map(|p| p.expect("read")).collect();
        assert_eq!(got, data);
        let missing = Pieces::start(path.with_extension("missing"), 4096).expect("thread").next();
        assert!(matches!(missing, Some(Err(_))), "a file that cannot be opened says so");
        let _ = std::fs::remove_file(path);
    }
}

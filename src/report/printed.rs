//! What perf prints itself while a script runs, and where the script's own
//! output lands in it.
//!
//! With `--no-merge-callchains` perf prints each deferred callchain record
//! (as `perf script` would) through C's buffered standard output, while the
//! script writes its output through Python's, unbuffered, at the end. To a
//! file or a pipe, C's buffer (4 KiB) goes out only when it is full, when
//! perf starts an `addr2line` process (it flushes its output before it
//! forks: once per DSO, at the DSO's first inline lookup, whether for a
//! record it prints or a sample it hands to the script), and at exit, after
//! the script's output. So the script's text lands inside perf's, at the
//! last point the buffer went out:
//!
//! ```text
//! perf's text:  |--66--|--124--|---355---|--4096--|--4096--| ... |--4096--|-- rest --|
//!                      ^ addr2line started (flush)               ^ full  ^ last flush
//! stdout:       perf's text up to the last flush, the script's output, the rest
//! ```
//!
//! On a terminal C's output is line-buffered: the script's text comes after
//! all of perf's.

/// Where perf's output buffer was flushed because an addr2line process
/// started, counted in deferred records printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flush {
    /// While a sample was handed on, after this many records.
    After(usize),
    /// While record `n` (from 0) was resolved: after its first line.
    Inside(usize),
}

/// perf's own text (the deferred callchain records) and where the script's
/// output goes in it.
#[derive(Debug, Default, Clone)]
pub struct Printed {
    pub text: Vec<u8>,
    /// The script's output goes before `text[split..]`.
    pub split: usize,
}

/// The marker of a deferred callchain record's first line.
const RECORD: &[u8] = b"DEFERRED CALLCHAIN [cookie: ";

/// perf's stdio buffer for a file or pipe (`st_blksize`).
const BUFFER: usize = 4096;

impl Printed {
    /// Where the script's output lands in `text`, given the flushes.
    pub(super) fn new(text: Vec<u8>, flushes: &[Flush], line_buffered: bool) -> Printed {
        if line_buffered || text.is_empty() {
            return Printed { split: text.len(), text };
        }
        // Each record's first line: where it starts, where it ends.
        let mut lines = Vec::new();
        let mut from = 0;
        while let Some(i) = find(&text[from..], RECORD) {
            let at = from + i;
            let start = text[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let end = text[at..].iter().position(|&b| b == b'\n').map_or(text.len(), |p| at + p);
            lines.push((start, end));
            from = end;
        }
        let position = |f: &Flush| match *f {
            Flush::After(n) => lines.get(n).map_or(text.len(), |l| l.0),
            Flush::Inside(n) => lines.get(n).map_or(text.len(), |l| l.1),
        };
        let last = flushes.iter().map(position).max().unwrap_or(0).min(text.len());
        // Full buffers went out after it; a buffer just full waits for more.
        let rest = text.len() - last;
        let split = last + rest.saturating_sub(1) / BUFFER * BUFFER;
        Printed { split, text }
    }

    pub fn head(&self) -> &[u8] {
        &self.text[..self.split]
    }

    pub fn tail(&self) -> &[u8] {
        &self.text[self.split..]
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(n: usize) -> Vec<u8> {
        (0..n).flat_map(|i| format!("cwork  1  1.0{i:05}: DEFERRED CALLCHAIN [cookie: {i:04x}]\n\t    1000 f+0x0 (/bin/x)\n\n").into_bytes()).collect()
    }

    /// The script's output lands after the last flush and the full 4 KiB
    /// buffers after it (records of equal length here, so that record `n`
    /// starts at `n` times the length).
    #[test]
    fn split_after_the_last_flush_and_full_buffers() {
        let text = records(2000);
        let first_line = text.iter().position(|&b| b == b'\n').unwrap();
        let p = Printed::new(text.clone(), &[Flush::Inside(0)], false);
        assert_eq!(p.split, first_line + (text.len() - first_line - 1) / 4096 * 4096);
        assert_eq!([p.head(), p.tail()].concat(), text);
        let rec = text.len() / 2000;
        let p = Printed::new(text.clone(), &[Flush::Inside(0), Flush::After(3)], false);
        assert_eq!(p.split, 3 * rec + (text.len() - 3 * rec - 1) / 4096 * 4096);
        // A buffer exactly full is not written until more comes.
        let exact = records(2000)[..4096].to_vec();
        assert_eq!(Printed::new(exact, &[], false).split, 0);
        // Line-buffered (a terminal): everything first.
        assert_eq!(Printed::new(text.clone(), &[Flush::Inside(0)], true).split, text.len());
        // A flush after the last record: all of it went out.
        assert_eq!(Printed::new(text.clone(), &[Flush::After(2000)], false).split, text.len());
    }
}

//! Development aid: demangles the names on standard input, one per line, as
//! pstitch shows them (compare with `c++filt`).
use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        let line = line.expect("reading standard input");
        let shown = pstitch::symbols::demangle::demangle(&line).unwrap_or_else(|| line.clone());
        writeln!(out, "{shown}").expect("writing");
    }
}
